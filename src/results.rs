//! Per-test results (format v4): where a check's runner writes them, reading them
//! after the run, and the `result.tests` member built from them.
//!
//! A check declares `results = FORMAT:PATH` in `.gitreceipts` (`junit`, `tap`,
//! `libtest-json`; `tap:-` reads the check's own output). The file is read after
//! the run with every size bounded ([`MAX_RESULTS_FILE_BYTES`], and the limits of
//! [`crate::receipt`]); a file that is missing, left from an earlier run or not
//! parsable never costs the receipt: the receipt records why in
//! `result.tests.error` and the check's outcome stands. Test names are data from
//! the runner: they are kept as they are and escaped by whoever prints them.

use sha2::{Digest as _, Sha256};

use crate::receipt::{
    INLINE_LIST_BYTES, INLINE_TESTS, MAX_LIST_BYTES, MAX_TEST_NAME_BYTES, MAX_TESTS,
    MAX_TESTS_ERROR_BYTES, ResultsFormat, TestCase, TestStatus, Tests, canonical_list,
};

mod junit;
mod libtest;
mod tap;

/// The largest results file read, in bytes (larger is refused unread).
pub const MAX_RESULTS_FILE_BYTES: u64 = 64 << 20;

/// Where a check's runner writes its results: `results = FORMAT:PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultsDecl {
    /// The format.
    pub format: ResultsFormat,
    /// The path relative to the top of the work tree (normalized), or `-` for the
    /// check's own output (TAP only).
    pub path: String,
}

/// Why a `results =` value is not a declaration: what is wrong, and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclError {
    /// What is wrong.
    pub message: String,
    /// What to write instead.
    pub hint: String,
}

/// Parse the value of `results =`.
pub fn parse_declaration(value: &str) -> Result<ResultsDecl, DeclError> {
    let fail = |message: String, hint: &str| DeclError {
        message,
        hint: hint.to_owned(),
    };
    let Some((format, path)) = value.split_once(':') else {
        return Err(fail(
            format!("results = {value:?} names no format"),
            "write FORMAT:PATH, e.g. results = junit:target/nextest/default/junit.xml (formats: junit, tap, libtest-json)",
        ));
    };
    let format = match format.trim() {
        "junit" => ResultsFormat::Junit,
        "tap" => ResultsFormat::Tap,
        "libtest-json" => ResultsFormat::LibtestJson,
        other => {
            return Err(fail(
                format!("results format {other:?} is not known"),
                "use junit, tap or libtest-json, e.g. results = junit:report.xml",
            ));
        }
    };
    let path = path.trim();
    if path == "-" {
        if format != ResultsFormat::Tap {
            return Err(fail(
                format!("results = {value:?}: `-` (the check's own output) is for TAP only"),
                "write results = tap:- for a TAP producer that prints to stdout, or give the file the runner writes",
            ));
        }
        return Ok(ResultsDecl {
            format,
            path: "-".into(),
        });
    }
    match crate::receipt::normalize_path(path) {
        Some(p) if crate::receipt::is_results_path(&p) => Ok(ResultsDecl { format, path: p }),
        _ => Err(fail(
            format!("results path {path:?} is not a relative path inside the work tree"),
            "write the path relative to the top of the work tree, without '..', e.g. results = junit:target/junit.xml",
        )),
    }
}

/// Why a results file could not be read into a list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// Parse results in `format` into a sorted list, every bound applied.
pub fn parse(format: ResultsFormat, bytes: &[u8]) -> Result<Vec<TestCase>, ParseError> {
    if bytes.len() as u64 > MAX_RESULTS_FILE_BYTES {
        return Err(ParseError(format!(
            "{} bytes, over the {MAX_RESULTS_FILE_BYTES}-byte limit",
            bytes.len()
        )));
    }
    let mut list = match format {
        ResultsFormat::Junit => junit::parse(bytes)?,
        ResultsFormat::Tap => tap::parse(bytes)?,
        ResultsFormat::LibtestJson => libtest::parse(bytes)?,
    };
    list.sort();
    Ok(list)
}

/// Collects tests while parsing, refusing more than [`MAX_TESTS`].
#[derive(Debug, Default)]
struct Collector {
    list: Vec<TestCase>,
}

impl Collector {
    fn push(
        &mut self,
        name: &str,
        status: TestStatus,
        duration_ms: Option<u64>,
    ) -> Result<(), ParseError> {
        if self.list.len() as u64 >= MAX_TESTS {
            return Err(ParseError(format!("more than {MAX_TESTS} tests")));
        }
        self.list.push(TestCase {
            name: bounded_name(name),
            status,
            duration_ms: duration_ms.map(|d| d.min((1 << 53) - 1)),
        });
        Ok(())
    }
}

/// A test name as kept: control-free is not required (names are escaped on
/// output), but it is non-empty and at most [`MAX_TEST_NAME_BYTES`] bytes, cut at a
/// character boundary and ending in `...` when longer.
fn bounded_name(name: &str) -> String {
    if name.is_empty() {
        return "(unnamed)".into();
    }
    if name.len() <= MAX_TEST_NAME_BYTES {
        return name.to_owned();
    }
    let mut end = MAX_TEST_NAME_BYTES - 3;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &name[..end])
}

/// `result.tests` for results read as `list` (sorted), and the blob to keep
/// beside the log when the list is too large to be inline.
pub fn tests_of(decl: &ResultsDecl, list: Vec<TestCase>) -> (Tests, Option<Vec<u8>>) {
    let bytes = canonical_list(&list);
    if bytes.len() as u64 > MAX_LIST_BYTES {
        return (
            unreadable(
                decl,
                &format!("the test list is over {MAX_LIST_BYTES} bytes"),
            ),
            None,
        );
    }
    let mut counts = [0u64; 3];
    for t in &list {
        counts[t.status as usize] += 1;
    }
    let total = list.len() as u64;
    let inline = total <= INLINE_TESTS && bytes.len() as u64 <= INLINE_LIST_BYTES;
    let tests = Tests {
        format: decl.format,
        path: decl.path.clone(),
        error: String::new(),
        passed: counts[0],
        failed: counts[1],
        skipped: counts[2],
        total,
        list: inline.then_some(list),
        list_blob: None, // set by the recorder once the blob is written
        list_bytes: bytes.len() as u64,
        list_sha256: format!("sha256:{}", hex::encode(Sha256::digest(&bytes))),
    };
    (tests, (!inline).then_some(bytes))
}

/// `why`, at most [`MAX_TESTS_ERROR_BYTES`] bytes: cut at a character boundary
/// and ending in `...` when longer (a receipt's `error` members).
pub(crate) fn bounded_error(why: &str) -> String {
    let mut error = why.to_owned();
    if error.len() > MAX_TESTS_ERROR_BYTES {
        let mut end = MAX_TESTS_ERROR_BYTES - 3;
        while !error.is_char_boundary(end) {
            end -= 1;
        }
        error.truncate(end);
        error.push_str("...");
    }
    error
}

/// `result.tests` for results that could not be read, saying why.
pub fn unreadable(decl: &ResultsDecl, why: &str) -> Tests {
    let error = bounded_error(why);
    let (empty, _) = tests_of(decl, Vec::new());
    Tests { error, ..empty }
}

/// What a results file looked like before the run (size, modification time,
/// inode), so a file the run did not write is not taken for its results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp(u64, Option<std::time::SystemTime>, u64);

pub(crate) fn stamp_of(meta: &std::fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    Stamp(meta.len(), meta.modified().ok(), meta.ino())
}

/// The stamp of the declared file before the run (`None`: absent, or `tap:-`).
pub fn stamp_before(decl: &ResultsDecl, workdir: &std::path::Path) -> Option<Stamp> {
    (decl.path != "-")
        .then(|| std::fs::metadata(workdir.join(&decl.path)).ok())
        .flatten()
        .map(|m| stamp_of(&m))
}

/// The bytes of `rel` under `workdir`, which must stay inside it (symbolic links
/// resolved), be a file of at most `max` bytes, and have been written since
/// `before` was stamped. `Err` says why, in words naming `rel`.
pub(crate) fn read_inside(
    workdir: &std::path::Path,
    rel: &str,
    before: Option<&Stamp>,
    max: u64,
) -> Result<Vec<u8>, String> {
    let path = workdir.join(rel);
    let top = workdir
        .canonicalize()
        .map_err(|e| format!("cannot resolve the work tree: {e}"))?;
    let real = match path.canonicalize() {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{} was not written by the run", rel));
        }
        Err(e) => return Err(format!("cannot read {}: {e}", rel)),
    };
    if !real.starts_with(&top) {
        return Err(format!(
            "{} leads outside the work tree (a symbolic link), so it is not read",
            rel
        ));
    }
    let meta = std::fs::metadata(&real).map_err(|e| format!("cannot read {}: {e}", rel))?;
    if !meta.is_file() {
        return Err(format!("{} is not a file", rel));
    }
    if before == Some(&stamp_of(&meta)) {
        return Err(format!(
            "{} is left from before: the run did not write it",
            rel
        ));
    }
    if meta.len() > max {
        return Err(format!(
            "{} is {} bytes, over the {max}-byte limit",
            rel,
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    {
        use std::io::Read as _;
        std::fs::File::open(&real)
            .and_then(|f| f.take(max + 1).read_to_end(&mut bytes))
            .map_err(|e| format!("cannot read {}: {e}", rel))?;
    }
    Ok(bytes)
}

/// Read the declared results after the run: the file under `workdir` (which must
/// stay inside it, symbolic links resolved, and be written by this run), or the
/// check's own output `log` for `tap:-`. `Err` says why, for `result.tests.error`.
pub fn read_after_run(
    decl: &ResultsDecl,
    workdir: &std::path::Path,
    log: &[u8],
    log_truncated: bool,
    before: Option<&Stamp>,
) -> Result<Vec<TestCase>, String> {
    let format = decl.format.as_str();
    if decl.path == "-" {
        if log_truncated {
            return Err(
                "the output was cut at receipt.logLimit, so its TAP cannot be read whole".into(),
            );
        }
        return parse(decl.format, log).map_err(|e| format!("the output is not {format}: {e}"));
    }
    let bytes = read_inside(workdir, &decl.path, before, MAX_RESULTS_FILE_BYTES)?;
    parse(decl.format, &bytes).map_err(|e| format!("{} is not {format}: {e}", decl.path))
}

/// The test list a receipt's `result.tests` signs: inline, or read from the blob
/// beside the log and checked against the signed size and SHA-256 (and the blob
/// id). `Err` says why it cannot be shown: absent from this clone, or not the
/// list that was signed.
pub fn load_list(store: &crate::store::Store, tests: &Tests) -> Result<Vec<TestCase>, String> {
    if let Some(list) = &tests.list {
        return Ok(list.clone());
    }
    let Some(blob) = tests
        .list_blob
        .as_deref()
        .and_then(|h| gix::ObjectId::from_hex(h.as_bytes()).ok())
    else {
        return Err("the receipt names no test list".into());
    };
    match store.log_size(blob) {
        None => {
            return Err(format!(
                "the test list (blob {blob}) is not in this clone; fetch the logs: git receipt fetch"
            ));
        }
        Some(size) if size != tests.list_bytes => {
            return Err(format!(
                "the test list (blob {blob}) has {size} bytes, but the receipt signed {}",
                tests.list_bytes
            ));
        }
        Some(_) => {}
    }
    let bytes = store
        .log_bytes(blob)
        .map_err(|e| format!("cannot read the test list (blob {blob}): {e}"))?
        .unwrap_or_default();
    let id = gix::objs::compute_hash(blob.kind(), gix::objs::Kind::Blob, &bytes).ok();
    if id != Some(blob) {
        return Err(format!(
            "the test list's bytes do not hash to blob {blob}: the object store was tampered with"
        ));
    }
    tests.check_list_bytes(&bytes)
}

/// `result.tests` for a run of a check that declares `decl`, and the list's bytes
/// when they go beside the log.
pub fn record(decl: &ResultsDecl, read: Result<Vec<TestCase>, String>) -> (Tests, Option<Vec<u8>>) {
    match read {
        Ok(list) => tests_of(decl, list),
        Err(why) => (unreadable(decl, &why), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_parse_and_bad_ones_name_the_fix() {
        assert_eq!(
            parse_declaration("junit:./target//junit.xml").unwrap(),
            ResultsDecl {
                format: ResultsFormat::Junit,
                path: "target/junit.xml".into()
            }
        );
        assert_eq!(parse_declaration("tap:-").unwrap().path, "-");
        assert_eq!(
            parse_declaration("libtest-json:out.jsonl").unwrap().format,
            ResultsFormat::LibtestJson
        );
        for (bad, says) in [
            ("xunit:a.xml", "not known"),
            ("junit.xml", "names no format"),
            ("junit:../a.xml", "inside the work tree"),
            ("junit:/etc/passwd", "inside the work tree"),
            ("junit:-", "TAP only"),
            ("junit:", "inside the work tree"),
        ] {
            let e = parse_declaration(bad).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {e:?}");
            assert!(!e.hint.is_empty());
        }
    }

    #[test]
    fn long_names_are_cut_at_a_character_boundary() {
        let name = "é".repeat(MAX_TEST_NAME_BYTES);
        let kept = bounded_name(&name);
        assert!(kept.len() <= MAX_TEST_NAME_BYTES && kept.ends_with("..."));
        assert_eq!(bounded_name(""), "(unnamed)");
    }

    #[test]
    fn large_lists_go_beside_the_log_small_ones_inline() {
        let decl = parse_declaration("tap:-").unwrap();
        let many: Vec<TestCase> = (0..=INLINE_TESTS)
            .map(|i| TestCase {
                name: format!("t{i:05}"),
                status: TestStatus::Passed,
                duration_ms: None,
            })
            .collect();
        let (t, blob) = tests_of(&decl, many[..3].to_vec());
        assert!(t.list.is_some() && blob.is_none());
        let (t, blob) = tests_of(&decl, many);
        assert!(t.list.is_none());
        let blob = blob.expect("a blob");
        assert_eq!(t.check_list_bytes(&blob).unwrap().len() as u64, t.total);
        let t = unreadable(&decl, &"x".repeat(5000));
        assert!(t.error.len() <= MAX_TESTS_ERROR_BYTES && t.total == 0);
    }
}
