//! Metrics a check reports (`metric = NAME UNIT lower|higher [file:PATH] REGEX`
//! in `.gitreceipts`): read after the run from the check's output or a file it
//! wrote, into format v4's `result.metrics`. How they are judged against a
//! baseline is [`crate::parity`]'s.

use crate::contract::MetricDecl;
use crate::results::Stamp;

/// The largest file a metric is read from, in bytes.
pub const MAX_METRIC_FILE_BYTES: u64 = 1 << 20;

/// The stamps of the files `metrics` read, before the run (see [`crate::results::stamp_before`]).
pub fn metric_stamps(metrics: &[MetricDecl], workdir: &std::path::Path) -> Vec<Option<Stamp>> {
    metrics
        .iter()
        .map(|m| {
            m.file
                .as_ref()
                .and_then(|f| std::fs::metadata(workdir.join(f)).ok())
                .map(|meta| crate::results::stamp_of(&meta))
        })
        .collect()
}

/// Each declared metric's value after the run: the first line of its source (the
/// file, inside `workdir` and written by this run, or the check's output `log`)
/// that its regex matches, the first capture group (or the whole match), which
/// must be a decimal number. A value that cannot be read is recorded with why
/// (`did_not_run`: the check never ran, and says why).
pub fn read_metrics(
    metrics: &[MetricDecl],
    workdir: &std::path::Path,
    log: &[u8],
    log_truncated: bool,
    before: &[Option<Stamp>],
    did_not_run: Option<&str>,
) -> Vec<crate::receipt::Metric> {
    metrics
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let value = match did_not_run {
                Some(why) => Err(format!("the check did not run: {why}")),
                None => metric_value(
                    m,
                    workdir,
                    log,
                    log_truncated,
                    before.get(i).and_then(Option::as_ref),
                ),
            };
            let (value, error) = match value {
                Ok(v) => (Some(v), String::new()),
                Err(e) => (None, crate::results::bounded_error(&e)),
            };
            crate::receipt::Metric {
                name: m.name.clone(),
                unit: m.unit.clone(),
                better: m.better,
                value,
                error,
            }
        })
        .collect()
}

fn metric_value(
    m: &MetricDecl,
    workdir: &std::path::Path,
    log: &[u8],
    log_truncated: bool,
    before: Option<&Stamp>,
) -> Result<String, String> {
    let (bytes, source) = match &m.file {
        Some(f) => (
            crate::results::read_inside(workdir, f, before, MAX_METRIC_FILE_BYTES)?,
            f.as_str(),
        ),
        None => (log.to_vec(), "the output"),
    };
    let text = String::from_utf8_lossy(&bytes);
    let re = regex::RegexBuilder::new(&m.pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("the regex does not compile: {e}"))?;
    for line in text.lines() {
        if let Some(c) = re.captures(line) {
            let v = c
                .get(1)
                .or_else(|| c.get(0))
                .map_or("", |g| g.as_str())
                .trim();
            return if crate::receipt::is_metric_value(v) {
                Ok(v.to_owned())
            } else {
                Err(format!(
                    "{source} matched, but {:?} is not a decimal number",
                    crate::text::escape(&v.chars().take(64).collect::<String>())
                ))
            };
        }
    }
    Err(format!(
        "no line of {source} matches {:?}{}",
        m.pattern,
        if log_truncated && m.file.is_none() {
            " (the output was cut at receipt.logLimit)"
        } else {
            ""
        }
    ))
}
