//! libtest's JSON lines (`cargo test -- -Z unstable-options --format json`, and
//! cargo-nextest's `--message-format libtest-json`): one object a line; the
//! `{"type":"test","event":"ok"|"failed"|"ignored"|"timeout", "name", "exec_time"}`
//! lines are the tests, everything else (suite events, `started`, cargo's own
//! messages, lines that are not JSON) is passed over.

use super::{Collector, ParseError};
use crate::receipt::{TestCase, TestStatus};

/// The most bytes of one line looked at (a longer line is not a test event).
const MAX_LINE_BYTES: usize = 1 << 20;

pub(super) fn parse(bytes: &[u8]) -> Result<Vec<TestCase>, ParseError> {
    let mut out = Collector::default();
    let mut events = 0u64;
    for line in bytes.split(|&b| b == b'\n') {
        if line.len() > MAX_LINE_BYTES || !line.trim_ascii_start().starts_with(b"{") {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        if v.get("type").and_then(|t| t.as_str()) == Some("suite") {
            events += 1;
        }
        if v.get("type").and_then(|t| t.as_str()) != Some("test") {
            continue;
        }
        let status = match v.get("event").and_then(|e| e.as_str()) {
            Some("ok") => TestStatus::Passed,
            Some("failed" | "timeout") => TestStatus::Failed,
            Some("ignored") => TestStatus::Skipped,
            _ => continue, // "started"
        };
        let Some(name) = v.get("name").and_then(|n| n.as_str()) else {
            return Err(ParseError("a test event has no name".into()));
        };
        let duration = v
            .get("exec_time")
            .and_then(|t| t.as_f64())
            .filter(|t| t.is_finite() && *t >= 0.0)
            .map(|t| (t * 1000.0).round() as u64);
        events += 1;
        out.push(name, status, duration)?;
    }
    if events == 0 {
        return Err(ParseError(
            "no libtest JSON events (no {\"type\":\"suite\"} or {\"type\":\"test\"} line)".into(),
        ));
    }
    Ok(out.list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_events_become_tests() {
        let text = r#"{ "type": "suite", "event": "started", "test_count": 3 }
{ "type": "test", "event": "started", "name": "a::ok" }
{ "type": "test", "name": "a::ok", "event": "ok", "exec_time": 0.0125 }
{ "type": "test", "name": "a::bad", "event": "failed", "stdout": "boom" }
{ "type": "test", "name": "a::later", "event": "ignored" }
not json at all
{ "type": "suite", "event": "failed", "passed": 1, "failed": 1, "ignored": 1 }
"#;
        let mut l = parse(text.as_bytes()).unwrap();
        l.sort();
        let got: Vec<_> = l
            .iter()
            .map(|t| (t.name.as_str(), t.status, t.duration_ms))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a::bad", TestStatus::Failed, None),
                ("a::later", TestStatus::Skipped, None),
                ("a::ok", TestStatus::Passed, Some(13)),
            ]
        );
    }

    #[test]
    fn garbage_is_a_clear_error() {
        let e = parse(b"\xff\xfe{{{{ not json\n").unwrap_err();
        assert!(e.0.contains("no libtest JSON events"), "{e}");
        let e = parse(br#"{"type":"test","event":"ok"}"#).unwrap_err();
        assert!(e.0.contains("no name"), "{e}");
    }
}
