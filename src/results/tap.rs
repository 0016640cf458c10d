//! The Test Anything Protocol, versions 12 and 13: a plan (`1..N`), one line per
//! test (`ok` / `not ok`, a number, a description, a `# SKIP` or `# TODO`
//! directive), `Bail out!`. Indented lines (subtests, YAML diagnostics) and
//! anything else are not test lines and are passed over, as TAP consumers do.

use super::{Collector, ParseError};
use crate::receipt::{TestCase, TestStatus};

/// Parse TAP output. A `not ok # TODO` test is an expected failure: skipped (it does
/// not count as a failure); an `ok # TODO` passed. A bail-out, no plan, or a plan
/// that disagrees with the tests seen is an error.
pub(super) fn parse(bytes: &[u8]) -> Result<Vec<TestCase>, ParseError> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Collector::default();
    let mut plan: Option<u64> = None;
    let mut seen: u64 = 0;
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(rest) = line.strip_prefix("Bail out!") {
            return Err(ParseError(format!(
                "the TAP producer bailed out after {seen} tests:{}",
                if rest.trim().is_empty() { "" } else { " " }.to_owned() + rest.trim()
            )));
        }
        if let Some(n) = plan_of(line) {
            if plan.is_some() {
                return Err(ParseError("the TAP output has two plans".into()));
            }
            plan = Some(n);
            continue;
        }
        let (ok, rest) = if let Some(r) = line.strip_prefix("not ok") {
            (false, r)
        } else if let Some(r) = line.strip_prefix("ok") {
            (true, r)
        } else {
            continue;
        };
        if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
            continue; // `okay`, not a test line
        }
        seen += 1;
        let rest = rest.trim_start();
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (number, rest) = rest.split_at(digits);
        let (description, directive) = split_directive(rest);
        let description = description.trim().trim_start_matches('-').trim();
        let name = if description.is_empty() {
            format!(
                "test {}",
                if number.is_empty() {
                    seen.to_string()
                } else {
                    number.to_owned()
                }
            )
        } else {
            description.replace("\\#", "#")
        };
        let directive = directive.trim().to_ascii_lowercase();
        let status = if directive.starts_with("skip") {
            TestStatus::Skipped
        } else if directive.starts_with("todo") {
            if ok {
                TestStatus::Passed
            } else {
                TestStatus::Skipped
            }
        } else if ok {
            TestStatus::Passed
        } else {
            TestStatus::Failed
        };
        out.push(&name, status, None)?;
    }
    match plan {
        None => Err(ParseError(format!(
            "the TAP output has no plan (a `1..N` line) after {seen} tests"
        ))),
        Some(n) if n != seen => Err(ParseError(format!(
            "the TAP plan says {n} tests, but {seen} ran"
        ))),
        Some(_) => Ok(out.list),
    }
}

/// `1..N` (with an optional `# skip reason`): N.
fn plan_of(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("1..")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let tail = rest[digits..].trim_start();
    if digits == 0 || !(tail.is_empty() || tail.starts_with('#')) {
        return None;
    }
    rest[..digits].parse().ok()
}

/// Split at the first `#` that is not escaped as `\#`.
fn split_directive(s: &str) -> (&str, &str) {
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'#' && (i == 0 || bytes[i - 1] != b'\\') {
            return (&s[..i], &s[i + 1..]);
        }
    }
    (s, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statuses(text: &str) -> Vec<(String, TestStatus)> {
        let mut l = parse(text.as_bytes()).unwrap();
        l.sort();
        l.into_iter().map(|t| (t.name, t.status)).collect()
    }

    #[test]
    fn ok_not_ok_skip_and_todo() {
        let got = statuses(
            "TAP version 13\n1..5\nok 1 - adds\nnot ok 2 - subtracts\n  ---\n  at: x\n  ...\nok 3 # SKIP no network\nnot ok 4 - later # TODO not written\nok 5 hash \\# kept\n",
        );
        assert_eq!(
            got,
            vec![
                ("adds".into(), TestStatus::Passed),
                ("hash # kept".into(), TestStatus::Passed),
                ("later".into(), TestStatus::Skipped),
                ("subtracts".into(), TestStatus::Failed),
                ("test 3".into(), TestStatus::Skipped),
            ]
        );
        // the plan may come last (TAP 12)
        assert_eq!(statuses("ok 1 a\n1..1\n").len(), 1);
        assert!(statuses("1..0 # skip all\n").is_empty());
    }

    #[test]
    fn malformed_tap_is_a_clear_error() {
        for (text, says) in [
            ("ok 1\nok 2\n", "no plan"),
            ("1..3\nok 1\n", "says 3 tests, but 1 ran"),
            (
                "1..2\nok 1\nBail out! database down\n",
                "bailed out after 1 tests: database down",
            ),
            ("1..1\n1..1\nok\n", "two plans"),
            ("\u{0}\u{ff}garbage", "no plan"),
        ] {
            let e = parse(text.as_bytes()).unwrap_err();
            assert!(e.0.contains(says), "{text:?}: {e}");
        }
    }
}
