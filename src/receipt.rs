//! The receipt: its body, the signed envelope, and its id.
//!
//! This module owns formats v1, v2 and v3 (see `docs/format.md`; v2 adds the
//! stored log's size and SHA-256, so a log kept outside the chain is checked on
//! arrival; v3 adds a check's environment assertions and dependencies; v4 adds
//! the per-test results a check declares, `result.tests`). A receipt is stored as the
//! RFC 8785 bytes of an envelope `{"receipt": body, "signature": {...}}`; the id is
//! the SHA-256 of the canonical body. Parsing yields a [`Receipt<Unverified>`]; only
//! [`Receipt::verify`] against a public key turns it into a [`Receipt<Verified>`], so
//! code that takes decisions can ask for the verified type and unverified data can
//! never reach it by accident.

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::canon::{self, CanonError};
use crate::sign::{self, PublicKey, SigningKey};

/// The value of `schema` in every v1 body (still read and verified; no longer written).
pub const SCHEMA: &str = "git-receipt/v1";
/// The value of `schema` in v2 bodies, the ones written now: v1 plus
/// `result.log_bytes` and `result.log_sha256`.
pub const SCHEMA_V2: &str = "git-receipt/v2";
/// The value of `schema` in v3 bodies: v2 plus the decision kinds `acceptance` and
/// `review` (which exist only in v3) and, for a check that declares them,
/// `subject.dependencies` and `result.assertions`. A check that declares neither
/// is still written as v2, so earlier releases keep reading its receipts.
pub const SCHEMA_V3: &str = "git-receipt/v3";
/// The value of `schema` in v4 bodies: v3 plus `result.tests`, the per-test
/// results of a check that declares where its runner writes them
/// (`results = junit:PATH`). Written only for such a check, and then always
/// with `result.tests`; every other receipt is written as before.
pub const SCHEMA_V4: &str = "git-receipt/v4";
/// The value of `schema` in v5 check bodies: v4 plus `result.artifacts`, the
/// files a check produced (`artifact = GLOB`), and `result.idempotency_key`.
/// Written only for a check that declares artifacts or a result recorded with
/// an idempotency key, then with whichever of the two it has; `result.tests`
/// is present exactly when the check declares results. Decisions are never v5.
pub const SCHEMA_V5: &str = "git-receipt/v5";
/// v5: the most artifacts one receipt records (a run whose globs match more
/// fails, saying so: narrow the globs).
pub const MAX_ARTIFACTS: usize = 256;
/// v5: the longest artifact path, in bytes.
pub const MAX_ARTIFACT_PATH_BYTES: usize = 512;
/// v5: the longest idempotency key, in bytes.
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 128;
/// v4: the most tests one receipt records (more is refused when reading results).
pub const MAX_TESTS: u64 = 100_000;
/// v4: the longest test name kept, in bytes (a longer one is cut at a character
/// boundary and ends in `...`).
pub const MAX_TEST_NAME_BYTES: usize = 512;
/// v4: a test list is kept inline in the receipt when it has at most this many tests
/// and its canonical bytes are at most [`INLINE_LIST_BYTES`]; else it is a blob
/// beside the log and the receipt signs its size and SHA-256.
pub const INLINE_TESTS: u64 = 1_000;
/// v4: the most canonical bytes of an inline test list.
pub const INLINE_LIST_BYTES: u64 = 64 * 1024;
/// v4: the most canonical bytes of a test list kept beside the log.
pub const MAX_LIST_BYTES: u64 = 64 << 20;
/// v4: the longest `result.tests.error`, in bytes.
pub const MAX_TESTS_ERROR_BYTES: usize = 1024;
/// The most bytes of an assertion's `actual` value (its first output line) kept.
pub const MAX_ACTUAL_BYTES: usize = 512;
/// The largest stored receipt we accept (bytes of `receipt.json`). Tails are capped
/// far below this; anything larger is hostile or corrupt.
pub const MAX_RECEIPT_BYTES: usize = 256 * 1024;

/// What a receipt records. Only `check` exists in v1 and v2; v3 adds the two
/// decisions, which carry `acceptance` or `review` instead of `check` and `result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A check (a declared or ad hoc command) ran, or its result was recorded.
    Check,
    /// A signed gate decision citing the receipts it rests on (`gate --record`).
    Acceptance,
    /// A person's verdict on a revision's reviewed paths (`git receipt review`).
    Review,
}

/// Where the receipt sits in its writer's chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chain {
    /// The writer id: `<chain name>-<32 hex digits of the key fingerprint>`.
    pub writer: String,
    /// Position in the chain, from 0 without gaps.
    pub index: u64,
    /// Id of the previous receipt of this writer, `None` for index 0.
    pub prev: Option<String>,
}

/// What the receipt is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    /// The commit HEAD named when the check ran (hex object id).
    pub commit: String,
    /// The tree that was actually checked: the working tree as if fully staged.
    pub tree: String,
    /// The tree holding only the check's declared paths (the whole tree without paths).
    pub inputs: String,
    /// Whether `tree` differs from the tree of `commit`.
    pub dirty: bool,
    /// v3 only: each declared dependency as it was when the check ran, sorted by
    /// name. Absent (empty) when the check declares none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<DependencyState>,
}

/// v3: a sibling repository the check depends on, as it was resolved when it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DependencyState {
    /// The name in `[dependency "name"]`.
    pub name: String,
    /// The commit its `ref` named in the local clone (hex object id).
    pub commit: String,
    /// The tree of its declared `paths` in that commit (the whole tree without
    /// paths), built as `subject.inputs` is.
    pub tree: String,
}

/// v3: what an environment assertion expected of its output's first line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Expectation {
    /// A git wildmatch pattern (`*` `?` `[...]`, `*` also matches `/`).
    Glob(String),
    /// A regular expression (Rust `regex` syntax), unanchored.
    Regex(String),
}

/// v3: one environment assertion that ran before the check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssertionResult {
    /// The name in `[assert "name"]`.
    pub name: String,
    /// The exact argv that was executed (after substitutions).
    pub argv: Vec<String>,
    /// The expectation after substitutions, or `None` for a record-only assertion.
    pub expected: Option<Expectation>,
    /// The first line of its standard output, at most [`MAX_ACTUAL_BYTES`] bytes.
    pub actual: String,
    /// True only when it exited 0, its output met the expectation and `detail` is empty.
    pub passed: bool,
    /// Why it did not pass, empty when it did.
    pub detail: String,
}

/// A member that may be absent (`None`), `null` (`Some(None)`) or a string.
fn present_nullable<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// Which check ran, and how it was defined. In a decision receipt (no `check`
/// member) it is the empty default, which names no check.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// The check's name, as in `.gitreceipts` or given on the command line.
    pub name: String,
    /// The exact argv that was executed.
    pub argv: Vec<String>,
    /// `sha256:<hex>` of the canonical definition; see [`definition_digest`].
    pub definition: String,
    /// The declared input paths, sorted; empty means the whole tree.
    pub paths: Vec<String>,
    /// Values of the environment variables the check allow-lists, by name.
    pub env: std::collections::BTreeMap<String, String>,
}

/// How the result reached the receipt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// `git receipt run` executed the command and observed it.
    #[default]
    Run,
    /// `git receipt record` took a result produced elsewhere.
    Record,
}

/// What happened. In a decision receipt (no `result` member) it is the empty
/// default, which never passed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// How the result was obtained.
    pub mode: Mode,
    /// The exit code (128 + signal number when killed by a signal, 127 when it could not start).
    pub exit_code: i64,
    /// True only when `exit_code` is 0 and `detail` is empty.
    pub passed: bool,
    /// When the command started, RFC 3339 UTC with milliseconds.
    pub started_at: String,
    /// Wall-clock duration in milliseconds.
    pub duration_ms: u64,
    /// The last bytes of standard output (lossy UTF-8).
    pub stdout_tail: String,
    /// The last bytes of standard error (lossy UTF-8).
    pub stderr_tail: String,
    /// Blob id of the full combined output, or `None`.
    pub log: Option<String>,
    /// Total bytes of output the command produced.
    pub output_bytes: u64,
    /// True when the stored log was cut at the configured limit.
    pub log_truncated: bool,
    /// v2 only: the stored log's size in bytes (0 without a log). Absent in v1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<u64>,
    /// v2 only: `sha256:<hex>` of the stored log, or `null` without a log (then
    /// `Some(None)`). Absent in v1 (then `None`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_nullable"
    )]
    pub log_sha256: Option<Option<String>>,
    /// Why the result is not a plain exit code (signal, could not start, timeout,
    /// a failed assertion); empty otherwise.
    pub detail: String,
    /// v3 only: the environment assertions that ran before the check, in declared
    /// order, up to and including the first that failed. Absent (empty) when the
    /// check declares none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assertions: Vec<AssertionResult>,
    /// v4 only: the per-test results the check declares (`results =`). Absent
    /// before v4; always present in v4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<Tests>,
    /// v4 only: the metrics the check declares (`metric =`), sorted by name.
    /// Absent (empty) when it declares none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<Metric>,
    /// v5 only: the files the check's `artifact =` globs matched after the run,
    /// sorted by path; absent when it declares none (an empty list: none matched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    /// v5 only: the key a retried upload of the same result carries
    /// (`record --idempotency-key`); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// v5: one file a check produced, as it was when the run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    /// Its path, relative to the top of the work tree (normalized, `/`-separated).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// `sha256:<hex>` of its bytes.
    pub sha256: String,
}

/// v4: the most metrics one receipt records (more is a contract error).
pub const MAX_METRICS: usize = 100;
/// v4: the longest metric value, in bytes.
pub const MAX_METRIC_VALUE_BYTES: usize = 64;
/// v4: the longest metric unit, in bytes.
pub const MAX_METRIC_UNIT_BYTES: usize = 32;

/// v4: which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Lower is better (a time, a size).
    Lower,
    /// Higher is better (a rate, a score).
    Higher,
}

impl Better {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }
}

/// v4: one metric a check reported (`result.metrics`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    /// Its declared name.
    pub name: String,
    /// Its declared unit.
    pub unit: String,
    /// Which way it improves.
    pub better: Better,
    /// The value as the check printed it (a decimal number), or `null` when it
    /// could not be read (then `error` says why).
    #[serde(deserialize_with = "required_nullable_string")]
    pub value: Option<String>,
    /// Why the value could not be read; empty when it was.
    pub error: String,
}

/// Whether `s` is a decimal number as a metric value spells it: an optional
/// `-`, digits, an optional fraction, an optional exponent; finite; at most
/// [`MAX_METRIC_VALUE_BYTES`] bytes.
pub fn is_metric_value(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > MAX_METRIC_VALUE_BYTES {
        return false;
    }
    let mut i = usize::from(b[0] == b'-');
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > start
    };
    if !digits(&mut i) {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        i += 1;
        if i < b.len() && matches!(b[i], b'+' | b'-') {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == b.len() && s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// v4: the format a check's runner writes its per-test results in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResultsFormat {
    /// JUnit XML (`<testsuites>`, `<testsuite>`, `<testcase>`).
    Junit,
    /// The Test Anything Protocol, version 12 or 13.
    Tap,
    /// The JSON lines of libtest's `--format json` (cargo test, cargo-nextest).
    LibtestJson,
}

impl ResultsFormat {
    /// The name as `.gitreceipts` and the receipt spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultsFormat::Junit => "junit",
            ResultsFormat::Tap => "tap",
            ResultsFormat::LibtestJson => "libtest-json",
        }
    }
}

/// v4: how one test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestStatus {
    /// It passed (a TAP `ok`, also one marked `# TODO`).
    Passed,
    /// It failed or errored (a JUnit `<failure>` or `<error>`, a TAP `not ok`).
    Failed,
    /// It did not run or does not count: skipped, ignored, or a TAP `not ok # TODO`.
    Skipped,
}

impl TestStatus {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            TestStatus::Passed => "passed",
            TestStatus::Failed => "failed",
            TestStatus::Skipped => "skipped",
        }
    }
}

/// A nullable member that must be present (`null` or a number, never left out).
fn required_nullable_u64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Option::<u64>::deserialize(d)
}

/// v4: one test as its runner reported it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestCase {
    /// Its name, as the runner gives it (JUnit: `classname::name`).
    pub name: String,
    /// How it ended.
    pub status: TestStatus,
    /// How long it took, in milliseconds, when the format says (`null` for TAP).
    #[serde(deserialize_with = "required_nullable_u64")]
    pub duration_ms: Option<u64>,
}

/// v4: the per-test results of a check (`result.tests`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tests {
    /// The declared format.
    pub format: ResultsFormat,
    /// The declared path, relative to the top of the work tree, or `-` for the
    /// check's own output.
    pub path: String,
    /// Why the results could not be read, empty when they were (then every count
    /// is 0 and the list is empty).
    pub error: String,
    /// Tests that passed.
    pub passed: u64,
    /// Tests that failed.
    pub failed: u64,
    /// Tests that were skipped.
    pub skipped: u64,
    /// All of them: `passed + failed + skipped`.
    pub total: u64,
    /// The list, sorted, when it is small enough to be inline; `None` when it is
    /// kept beside the log (`list_blob`).
    #[serde(deserialize_with = "required_nullable_list")]
    pub list: Option<Vec<TestCase>>,
    /// The blob id of the list kept beside the log, or `None` when it is inline.
    #[serde(deserialize_with = "required_nullable_string")]
    pub list_blob: Option<String>,
    /// The size of the canonical list, inline or not.
    pub list_bytes: u64,
    /// `sha256:<hex>` of the canonical list, inline or not.
    pub list_sha256: String,
}

fn required_nullable_list<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<TestCase>>, D::Error> {
    Option::<Vec<TestCase>>::deserialize(d)
}

fn required_nullable_string<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d)
}

impl Tests {
    /// The list's stored bytes (a blob beside the log) checked against what this
    /// receipt signed: size, SHA-256, canonical form, and the counts. Returns the list.
    pub fn check_list_bytes(&self, bytes: &[u8]) -> Result<Vec<TestCase>, String> {
        if bytes.len() as u64 != self.list_bytes {
            return Err(format!(
                "the test list has {} bytes, but the receipt signed {}",
                bytes.len(),
                self.list_bytes
            ));
        }
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(bytes)));
        if digest != self.list_sha256 {
            return Err(format!(
                "the test list's SHA-256 is {digest}, but the receipt signed {}",
                self.list_sha256
            ));
        }
        let list: Vec<TestCase> = canon::from_canonical(bytes)
            .map_err(|e| format!("the test list is not canonical JSON: {e}"))?;
        check_list_entries(self, &list).map_err(|e| format!("the test list: {e}"))?;
        Ok(list)
    }
}

/// The canonical bytes of a test list: what `list_bytes` and `list_sha256` sign,
/// and what a list kept beside the log holds.
pub fn canonical_list(list: &[TestCase]) -> Vec<u8> {
    canon::to_canonical(&list).expect("durations are bounded: always canonicalizable")
}

/// A list's entries agree with the counts: sorted, names bounded, statuses counted.
fn check_list_entries(tests: &Tests, list: &[TestCase]) -> Result<(), String> {
    if list.len() as u64 != tests.total {
        return Err(format!(
            "{} entries, but total is {}",
            list.len(),
            tests.total
        ));
    }
    if !list.windows(2).all(|w| w[0] <= w[1]) {
        return Err("not sorted by name, status and duration".into());
    }
    let mut counts = [0u64; 3];
    for t in list {
        if t.name.is_empty() || t.name.len() > MAX_TEST_NAME_BYTES {
            return Err(format!(
                "a test name is empty or over {MAX_TEST_NAME_BYTES} bytes"
            ));
        }
        counts[t.status as usize] += 1;
    }
    if counts != [tests.passed, tests.failed, tests.skipped] {
        return Err("the counts do not match the statuses in the list".into());
    }
    Ok(())
}

/// Who wrote the receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runner {
    /// `git-receipt <version>`.
    pub tool: String,
    /// The host name.
    pub host: String,
    /// `<os>-<arch>`, e.g. `linux-x86_64`.
    pub os: String,
}

impl Check {
    /// True for the empty default of a decision receipt (a real check has a name).
    fn is_absent(&self) -> bool {
        *self == Check::default()
    }
}

impl Outcome {
    /// True for the empty default of a decision receipt (a real result has a start time).
    fn is_absent(&self) -> bool {
        *self == Outcome::default()
    }
}

/// An acceptance's overall verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every required check and review was present.
    Accepted,
    /// At least one was not; the `unresolved` list says which.
    Rejected,
}

/// What a criterion of an acceptance is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CriterionKind {
    /// A required check: its evidence is check receipts.
    Check,
    /// A required review: its evidence is the approving review receipts.
    Review,
}

/// The state of one check at one revision: the format owns it, because acceptances
/// serialize it (`freshness` computes it and re-exports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// A trusted passing receipt covers exactly these inputs.
    Present,
    /// The most recent trusted receipt for these inputs failed.
    Failed,
    /// An ancestor was checked, but the inputs or the definition changed since.
    Stale,
    /// No trusted receipt for these inputs or any ancestor within the bound.
    Missing,
}

impl State {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Present => "present",
            State::Failed => "failed",
            State::Stale => "stale",
            State::Missing => "missing",
        }
    }
}

/// One required check or review as an acceptance decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// Check or review.
    pub kind: CriterionKind,
    /// Its name in `.gitreceipts`.
    pub name: String,
    /// Its state at the decided revision.
    pub state: State,
    /// The inputs tree of its declared paths at the decided revision.
    pub inputs: String,
    /// Ids of the receipts that decided the state (sorted, unique; empty when missing).
    pub evidence: Vec<String>,
}

/// A criterion that was not present, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unresolved {
    /// Check or review.
    pub kind: CriterionKind,
    /// Its name.
    pub name: String,
    /// Missing, failed or stale.
    pub state: State,
    /// The reason in words, as `status` gives it.
    pub reason: String,
}

/// The body of an acceptance receipt (`kind: "acceptance"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Acceptance {
    /// Accepted exactly when `unresolved` is empty.
    pub status: Status,
    /// The commit the rules (required checks, trusted signers) were read from.
    pub trusted: String,
    /// When the decision was taken, RFC 3339 UTC with milliseconds.
    pub decided_at: String,
    /// Every required check and review, sorted by kind then name.
    pub criteria: Vec<Criterion>,
    /// The criteria that were not present, in the same order.
    pub unresolved: Vec<Unresolved>,
}

/// A reviewer's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The reviewer approves these inputs.
    Approve,
    /// The reviewer rejects them.
    Reject,
}

/// The body of a review receipt (`kind: "review"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Review {
    /// The `[review "NAME"]` it answers.
    pub name: String,
    /// The review's declared paths, sorted; empty means the whole tree.
    pub paths: Vec<String>,
    /// Approve or reject.
    pub verdict: Verdict,
    /// The reviewer's message (may be empty).
    pub message: String,
    /// When the verdict was given, RFC 3339 UTC with milliseconds.
    pub decided_at: String,
    /// An accepted regression (v4 only, where a review always holds one): the
    /// new failures and regressed metrics of a differential check that this
    /// approval accepts for exactly these inputs and this definition. `name`
    /// is then the check's name and `paths` its paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepts: Option<Accepts>,
}

/// What an accepted regression accepts (`git receipt accept-regression`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accepts {
    /// The check's definition digest, as its receipts record it: a redefined
    /// check is another check, and the acceptance no longer counts.
    pub definition: String,
    /// Test names that may fail here though they passed at the baseline,
    /// sorted and unique.
    pub tests: Vec<String>,
    /// Metric names that may regress past `max-regression`, sorted and unique.
    pub metrics: Vec<String>,
}

/// The most test names one accepted regression may list.
pub const MAX_ACCEPTED_TESTS: usize = 1000;

/// The longest review message or unresolved reason a receipt holds, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// The signed part of a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Body {
    /// [`SCHEMA`], [`SCHEMA_V2`] or [`SCHEMA_V3`].
    pub schema: String,
    /// What the receipt records.
    pub kind: Kind,
    /// Position in the writer's chain.
    pub chain: Chain,
    /// What was checked or decided: for an acceptance the revision, with `inputs`
    /// its whole tree; for a review the revision and the inputs of its paths.
    pub subject: Subject,
    /// Which check (kind `check` only; the empty default otherwise).
    #[serde(default, skip_serializing_if = "Check::is_absent")]
    pub check: Check,
    /// The outcome (kind `check` only; the empty default otherwise).
    #[serde(default, skip_serializing_if = "Outcome::is_absent")]
    pub result: Outcome,
    /// The decision (kind `acceptance` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<Acceptance>,
    /// The verdict (kind `review` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Review>,
    /// The tool and machine.
    pub runner: Runner,
    /// Id of a receipt this one explicitly replaces, or `None`.
    pub supersedes: Option<String>,
}

impl Body {
    /// When it happened: `result.started_at` for a check, `decided_at` for a decision.
    pub fn time(&self) -> &str {
        match (&self.acceptance, &self.review) {
            (Some(a), _) => &a.decided_at,
            (_, Some(r)) => &r.decided_at,
            _ => &self.result.started_at,
        }
    }

    /// What the receipt says in a few words: `test passed`, `acceptance rejected`,
    /// `review code approve` (names unescaped: escape before printing).
    pub fn headline(&self) -> String {
        match (&self.acceptance, &self.review) {
            (Some(a), _) => format!(
                "acceptance {}",
                match a.status {
                    Status::Accepted => "accepted",
                    Status::Rejected => "rejected",
                }
            ),
            (_, Some(r)) if r.accepts.is_some() => {
                format!("accepted regression of check {}", r.name)
            }
            (_, Some(r)) => format!(
                "review {} {}",
                r.name,
                match r.verdict {
                    Verdict::Approve => "approve",
                    Verdict::Reject => "reject",
                }
            ),
            _ => format!(
                "{} {}",
                self.check.name,
                if self.result.passed {
                    "passed"
                } else {
                    "failed"
                }
            ),
        }
    }
}

/// The signature member of the envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignatureInfo {
    /// Always `ed25519`.
    pub alg: String,
    /// OpenSSH SHA256 fingerprint of the signing key.
    pub key: String,
    /// Base64 (standard, padded) of the raw 64-byte Ed25519 SSHSIG signature.
    pub sig: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    receipt: Body,
    signature: SignatureInfo,
}

/// Why stored bytes are not a valid receipt.
#[derive(Debug, thiserror::Error)]
pub enum ReceiptError {
    /// The bytes are larger than [`MAX_RECEIPT_BYTES`].
    #[error("receipt is {size} bytes, over the {max} byte limit")]
    Oversized {
        /// Actual size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Not JSON, or not its canonical form (duplicate member, integer out of range,
    /// any other byte that differs from RFC 8785).
    #[error("{}", describe_format(.0))]
    Format(CanonError),
    /// Not the closed v1 schema: an unknown or missing member, a value of the wrong
    /// type, an unknown enum value.
    #[error("not a v1 receipt: {0}")]
    Schema(String),
    /// A member has a value the schema does not allow.
    #[error("{member}: {reason}")]
    Invalid {
        /// JSON pointer of the member.
        member: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The key could not sign: it is held by ssh-agent, and the agent failed.
    #[error(transparent)]
    Signing(#[from] crate::agent::AgentError),
    /// The signature does not verify.
    #[error("signature does not verify against key {key}: {reason}")]
    BadSignature {
        /// Fingerprint of the key it was checked against.
        key: String,
        /// What failed.
        reason: String,
    },
    /// The envelope names another key than the one offered to verify it.
    #[error("receipt is signed by {claimed}, not by {offered}")]
    WrongKey {
        /// The fingerprint in the envelope.
        claimed: String,
        /// The fingerprint of the key offered.
        offered: String,
    },
}

impl From<CanonError> for ReceiptError {
    fn from(e: CanonError) -> Self {
        ReceiptError::Format(e)
    }
}

/// The canon errors, worded for someone reading a stored receipt: the canon module
/// speaks to whoever writes JSON, and its hints ("store larger numbers as strings")
/// make no sense for a receipt that is already signed.
fn describe_format(e: &CanonError) -> String {
    let at = |path: &str| {
        if path.is_empty() {
            "the envelope".to_owned()
        } else {
            format!("{path:?}")
        }
    };
    match e {
        CanonError::NotCanonical { offset } => format!(
            "not in RFC 8785 canonical form (first difference at byte {offset}): \
             the stored bytes were changed after the receipt was written"
        ),
        CanonError::DuplicateMember { path, name } => {
            format!(
                "member {name:?} appears twice in the object at {}",
                at(path)
            )
        }
        CanonError::IntegerOutOfRange { path, value } => format!(
            "integer {value} at {} is outside the range a receipt can hold exactly, \
             ±(2^53-1)",
            at(path)
        ),
        CanonError::NonFiniteNumber { path } => {
            format!("number at {} is NaN or infinite", at(path))
        }
        CanonError::Json(e) => format!("not JSON: {e}"),
    }
}

/// The members of every object in format v1, by JSON pointer. All are required
/// (optional values are `null`, never absent); `/receipt/check/env` is a map of
/// variable names and is not listed. A unit test keeps this in step with the types.
/// Members that one schema version requires and another forbids; `validate` says
/// which, by `schema`.
const VERSIONED: &[(&str, &str)] = &[
    ("/receipt/result", "log_bytes"),
    ("/receipt/result", "log_sha256"),
    ("/receipt/result", "assertions"),
    ("/receipt/result", "tests"),
    ("/receipt/result", "metrics"),
    ("/receipt/result", "artifacts"),
    ("/receipt/result", "idempotency_key"),
    ("/receipt/subject", "dependencies"),
    ("/receipt", "check"),
    ("/receipt", "result"),
    ("/receipt", "acceptance"),
    ("/receipt", "review"),
];

const MEMBERS: &[(&str, &[&str])] = &[
    ("", &["receipt", "signature"]),
    (
        "/receipt",
        &[
            "acceptance",
            "chain",
            "check",
            "kind",
            "result",
            "review",
            "runner",
            "schema",
            "subject",
            "supersedes",
        ],
    ),
    (
        "/receipt/acceptance",
        &["criteria", "decided_at", "status", "trusted", "unresolved"],
    ),
    (
        "/receipt/review",
        &["decided_at", "message", "name", "paths", "verdict"],
    ),
    ("/receipt/chain", &["index", "prev", "writer"]),
    (
        "/receipt/subject",
        &["commit", "dependencies", "dirty", "inputs", "tree"],
    ),
    (
        "/receipt/check",
        &["argv", "definition", "env", "name", "paths"],
    ),
    (
        "/receipt/result",
        &[
            "artifacts",
            "assertions",
            "detail",
            "duration_ms",
            "exit_code",
            "idempotency_key",
            "log",
            "log_bytes",
            "log_sha256",
            "log_truncated",
            "metrics",
            "mode",
            "output_bytes",
            "passed",
            "started_at",
            "stderr_tail",
            "stdout_tail",
            "tests",
        ],
    ),
    (
        "/receipt/result/tests",
        &[
            "error",
            "failed",
            "format",
            "list",
            "list_blob",
            "list_bytes",
            "list_sha256",
            "passed",
            "path",
            "skipped",
            "total",
        ],
    ),
    ("/receipt/runner", &["host", "os", "tool"]),
    ("/signature", &["alg", "key", "sig"]),
];

/// The closed schema, member by member, so the error can say where: serde alone
/// would accept a missing `null` member as `None` and name no object.
fn check_members(value: &serde_json::Value) -> Result<(), ReceiptError> {
    for (pointer, members) in MEMBERS {
        let Some(object) = value.pointer(pointer).and_then(|v| v.as_object()) else {
            // not an object (or its parent is not): serde names the type error
            continue;
        };
        let place = if pointer.is_empty() {
            "the envelope".to_owned()
        } else {
            format!("{pointer:?}")
        };
        if let Some(name) = object.keys().find(|k| !members.contains(&k.as_str())) {
            return Err(ReceiptError::Schema(format!(
                "unknown member {name:?} in {place}"
            )));
        }
        if let Some(name) = members
            .iter()
            .filter(|m| !VERSIONED.contains(&(pointer, **m)))
            .find(|m| !object.contains_key(**m))
        {
            return Err(ReceiptError::Schema(format!(
                "missing member {name:?} in {place}"
            )));
        }
    }
    Ok(())
}

/// Type-state marker: bytes parsed and well-formed, signature not yet checked.
#[derive(Debug, Clone)]
pub struct Unverified;
/// Type-state marker: the signature verified against a specific public key.
#[derive(Debug, Clone)]
pub struct Verified;

/// A parsed receipt, carrying the exact stored bytes it came from.
#[derive(Debug, Clone)]
pub struct Receipt<State> {
    body: Body,
    signature: SignatureInfo,
    /// Where the canonical body sits in `bytes` (JCS is compositional: the
    /// canonical envelope holds the canonical body whole).
    body_at: std::ops::Range<usize>,
    bytes: Vec<u8>,
    id: String,
    state: PhantomData<State>,
}

impl<S> Receipt<S> {
    /// The body.
    pub fn body(&self) -> &Body {
        &self.body
    }
    /// The body, the rest dropped.
    pub fn into_body(self) -> Body {
        self.body
    }
    /// The signature member.
    pub fn signature(&self) -> &SignatureInfo {
        &self.signature
    }
    /// `sha256:<hex>` of the canonical body.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// The exact stored bytes (the envelope).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
    /// The exact signed message: the canonical body.
    pub fn body_bytes(&self) -> &[u8] {
        &self.bytes[self.body_at.clone()]
    }
    /// The raw 64-byte signature.
    pub fn raw_signature(&self) -> [u8; 64] {
        decode_signature(&self.signature.sig).expect("checked when parsed")
    }
}

impl Receipt<Unverified> {
    /// Parse stored bytes, failing closed: size limit, canonical bytes, closed schema,
    /// safe integers, and every value rule of format v1.
    pub fn parse(bytes: &[u8]) -> Result<Self, ReceiptError> {
        Self::parse_owned(bytes.to_vec())
    }

    /// [`Receipt::parse`], keeping `bytes` as the stored form instead of a copy.
    pub fn parse_owned(bytes: Vec<u8>) -> Result<Self, ReceiptError> {
        if bytes.len() > MAX_RECEIPT_BYTES {
            return Err(ReceiptError::Oversized {
                size: bytes.len(),
                max: MAX_RECEIPT_BYTES,
            });
        }
        // Fast path, the common case: the typed envelope re-encodes to exactly the
        // stored bytes. That alone proves canonical form and rules out duplicate,
        // unknown and missing members and unsafe integers; only value rules remain.
        // Anything else takes the slow path below, which says precisely what is wrong.
        if let Ok(envelope) = serde_json::from_slice::<Envelope>(&bytes)
            && let Some(body_at) = canonical_body_at(&bytes, &envelope)
        {
            validate(&envelope.receipt, &envelope.signature)?;
            debug_assert_eq!(bytes, canon::to_canonical(&envelope)?);
            return Ok(Receipt {
                id: id_of(&bytes[body_at.clone()]),
                body: envelope.receipt,
                signature: envelope.signature,
                body_at,
                bytes,
                state: PhantomData,
            });
        }
        // canonical bytes (which rules out duplicates and unsafe integers), then the
        // closed schema with JSON pointers, then types and values
        let value: serde_json::Value = canon::from_canonical(&bytes)?;
        check_members(&value)?;
        let envelope: Envelope =
            serde_json::from_slice(&bytes).map_err(|e| ReceiptError::Schema(e.to_string()))?;
        validate(&envelope.receipt, &envelope.signature)?;
        // What the id and the signature cover must be exactly what is stored.
        if canon::to_canonical(&envelope)? != bytes {
            return Err(ReceiptError::Schema(
                "the stored bytes are not the encoding of the receipt they hold".into(),
            ));
        }
        let body_at = body_in_envelope(&bytes, &canon::to_canonical(&envelope.receipt)?)?;
        Ok(Receipt {
            id: id_of(&bytes[body_at.clone()]),
            body: envelope.receipt,
            signature: envelope.signature,
            body_at,
            bytes,
            state: PhantomData,
        })
    }

    /// Check the signature against `key`; the envelope must name that key.
    pub fn verify(self, key: &PublicKey) -> Result<Receipt<Verified>, ReceiptError> {
        self.check_signature(key)?;
        Ok(Receipt {
            body: self.body,
            signature: self.signature,
            body_at: self.body_at,
            bytes: self.bytes,
            id: self.id,
            state: PhantomData,
        })
    }

    /// What [`Receipt::verify`] checks, leaving the receipt as it is: the envelope
    /// names `key`, and the strict Ed25519 signature of the body verifies under it.
    pub fn check_signature(&self, key: &PublicKey) -> Result<(), ReceiptError> {
        self.names(key)?;
        let signature = self.raw_signature();
        let memo = verified_memo_key(key, &self.id, &signature);
        if !verified_before(&memo) {
            sign::verify(key, self.body_bytes(), &signature).map_err(|e| bad_signature(key, e))?;
            remember_verified(memo);
        }
        Ok(())
    }

    /// [`Receipt::check_signature`] for many receipts, each against its key, with
    /// the same answer for each: the signatures are checked together
    /// ([`sign::verify_many`]).
    pub fn check_signatures(items: &[(&Self, &PublicKey)]) -> Vec<Result<(), ReceiptError>> {
        let named: Vec<Result<(), ReceiptError>> =
            items.iter().map(|(r, key)| r.names(key)).collect();
        let signatures: Vec<[u8; 64]> = items.iter().map(|(r, _)| r.raw_signature()).collect();
        let (which, to_verify): (Vec<usize>, Vec<sign::ToVerify<'_>>) = items
            .iter()
            .zip(&signatures)
            .zip(&named)
            .enumerate()
            .filter(|(_, (_, named))| named.is_ok())
            .map(|(i, (((r, key), signature), _))| {
                (
                    i,
                    sign::ToVerify {
                        key,
                        message: r.body_bytes(),
                        signature,
                    },
                )
            })
            .unzip();
        let mut out = named;
        for (i, verified) in which.into_iter().zip(sign::verify_many(&to_verify)) {
            let (r, key) = items[i];
            out[i] = verified.map_err(|e| bad_signature(key, e));
            if out[i].is_ok() {
                // as `check_signature` does: a later check in this process is free
                remember_verified(verified_memo_key(key, &r.id, &signatures[i]));
            }
        }
        out
    }

    /// The envelope must name `key`.
    fn names(&self, key: &PublicKey) -> Result<(), ReceiptError> {
        if names_key(&self.signature.key, key) {
            Ok(())
        } else {
            Err(ReceiptError::WrongKey {
                claimed: self.signature.key.clone(),
                offered: key.fingerprint(),
            })
        }
    }
}

fn bad_signature(key: &PublicKey, e: sign::SignatureError) -> ReceiptError {
    ReceiptError::BadSignature {
        key: key.fingerprint(),
        reason: e.to_string(),
    }
}

impl Receipt<Verified> {
    /// Sign `body` with `key`, producing the stored form.
    pub fn sign(body: Body, key: &SigningKey) -> Result<Self, ReceiptError> {
        let signature = SignatureInfo {
            alg: "ed25519".into(),
            key: key.public().fingerprint(),
            sig: String::new(),
        };
        validate(&body, &signature).or_else(|e| match e {
            // the placeholder signature is not valid yet; everything else must be
            ReceiptError::Invalid {
                member: "/signature/sig",
                ..
            } => Ok(()),
            e => Err(e),
        })?;
        let body_bytes = canon::to_canonical(&body)?;
        let raw = key.sign(&body_bytes)?;
        let signature = SignatureInfo {
            sig: base64_encode(&raw),
            ..signature
        };
        let envelope = Envelope {
            receipt: body,
            signature,
        };
        let bytes = canon::to_canonical(&envelope)?;
        if bytes.len() > MAX_RECEIPT_BYTES {
            return Err(ReceiptError::Oversized {
                size: bytes.len(),
                max: MAX_RECEIPT_BYTES,
            });
        }
        Ok(Receipt {
            id: id_of(&body_bytes),
            body: envelope.receipt,
            signature: envelope.signature,
            body_at: body_in_envelope(&bytes, &body_bytes)?,
            bytes,
            state: PhantomData,
        })
    }
}

/// Signatures this process has already checked strictly and found good, by
/// SHA-256 of (public key, receipt id, signature). A report or a range `status`
/// meets the same receipt on many commits (identical inputs decide them all);
/// each is checked once. Memory only, filled only after a strict check passed,
/// and keyed by the signature too, so a forged copy of a good receipt (same body,
/// another signature) is checked on its own. Bounded: past the cap, nothing more
/// is remembered and every check is made in full.
static VERIFIED: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<[u8; 32]>>> =
    std::sync::OnceLock::new();
const VERIFIED_CAP: usize = 1 << 19;

fn verified_memo_key(key: &PublicKey, id: &str, signature: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(key.as_bytes());
    h.update((id.len() as u64).to_le_bytes());
    h.update(id.as_bytes());
    h.update(signature);
    h.finalize().into()
}

fn verified_before(memo: &[u8; 32]) -> bool {
    VERIFIED
        .get()
        .and_then(|m| m.lock().ok().map(|set| set.contains(memo)))
        .unwrap_or(false)
}

fn remember_verified(memo: [u8; 32]) {
    let set = VERIFIED.get_or_init(Default::default);
    if let Ok(mut set) = set.lock()
        && set.len() < VERIFIED_CAP
    {
        set.insert(memo);
    }
}

/// Whether `fingerprint` (`SHA256:<base64>`) is `key`'s, without allocating.
fn names_key(fingerprint: &str, key: &PublicKey) -> bool {
    sign::fingerprint_digest_of(fingerprint) == Some(key.fingerprint_digest())
}

/// Whether `bytes` is exactly `{"receipt":BODY,"signature":SIG}`.
/// The canonical envelope is `{"receipt":` body `,"signature":` signature `}`:
/// JCS is compositional, and "receipt" sorts before "signature".
const ENVELOPE_HEAD: &[u8] = br#"{"receipt":"#;
const ENVELOPE_MID: &[u8] = br#","signature":"#;

/// Where the body sits in `bytes`, when they are exactly the canonical
/// envelope of `envelope` as the fast canonical writer writes it: the head,
/// the body, the middle, the signature member, `}`, and nothing else. `None`
/// for anything else (then the slow path decides).
fn canonical_body_at(bytes: &[u8], envelope: &Envelope) -> Option<std::ops::Range<usize>> {
    let rest = bytes.strip_prefix(ENVELOPE_HEAD)?;
    let body = canon::canonical_prefix_len(&envelope.receipt, rest)?;
    let rest = rest[body..].strip_prefix(ENVELOPE_MID)?;
    let signature = canon::canonical_prefix_len(&envelope.signature, rest)?;
    (&rest[signature..] == b"}").then_some(ENVELOPE_HEAD.len()..ENVELOPE_HEAD.len() + body)
}

/// Where `body`, the canonical body, sits in `bytes`, its canonical envelope.
fn body_in_envelope(bytes: &[u8], body: &[u8]) -> Result<std::ops::Range<usize>, ReceiptError> {
    let at = ENVELOPE_HEAD.len()..ENVELOPE_HEAD.len() + body.len();
    if bytes.starts_with(ENVELOPE_HEAD) && bytes.get(at.clone()) == Some(body) {
        Ok(at)
    } else {
        Err(ReceiptError::Schema(
            "the canonical envelope does not hold the canonical body".into(),
        ))
    }
}

/// `sha256:<hex>` of canonical body bytes.
pub fn id_of(body_bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // one allocation of exactly its size (verify makes one a receipt)
    let mut id = String::with_capacity("sha256:".len() + 64);
    id.push_str("sha256:");
    for b in Sha256::digest(body_bytes) {
        id.push(char::from(HEX[usize::from(b >> 4)]));
        id.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    id
}

/// The digest that identifies a check's definition: `sha256:<hex>` of the canonical
/// JSON `{"argv": [...], "env": [names...], "paths": [...]}`. Editing the command,
/// its inputs or its recorded environment changes it, which makes old receipts stale.
pub fn definition_digest(argv: &[String], paths: &[String], env_names: &[String]) -> String {
    digest_of(&serde_json::json!({ "argv": argv, "env": env_names, "paths": paths }))
}

/// `sha256:<hex>` of the RFC 8785 bytes of a definition made of strings, arrays,
/// objects and `null` (never a number, so always canonicalizable).
pub fn digest_of(definition: &serde_json::Value) -> String {
    let bytes = canon::to_canonical(definition).expect("no numbers: always canonicalizable");
    format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn decode_signature(text: &str) -> Option<[u8; 64]> {
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()?;
    // Re-encoding must give the same text: one signature, one spelling.
    if base64_encode(&raw) != text {
        return None;
    }
    raw.try_into().ok()
}

/// Decode `hex`, lowercase hex digits only (as the format spells object ids
/// and writer ids, and git writes refs), into exactly `out`; `false` for any
/// other length or character. Asked of every candidate receipt's writer and
/// every packed writer ref, ten thousand times in a gate with ten thousand
/// writers: no allocation, no validation pass apart from the decoding.
pub(crate) fn decode_lower_hex(hex: &[u8], out: &mut [u8]) -> bool {
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    hex.len() == 2 * out.len()
        && out.iter_mut().zip(hex.chunks_exact(2)).all(|(o, h)| {
            match (nibble(h[0]), nibble(h[1])) {
                // mutants: `^` for `|` is equivalent: the two nibbles share no bit
                (Some(hi), Some(lo)) => {
                    *o = hi << 4 | lo;
                    true
                }
                _ => false,
            }
        })
}

/// A git object id as git spells it: 40 lowercase hex digits (SHA-1), or 64
/// (a SHA-256 repository, `git init --object-format=sha256`).
pub(crate) fn is_hex_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && is_lower_hex(s)
}

/// Whether `s` is lowercase hex digits only.
fn is_lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// What an object id member that is none says.
const NOT_AN_OID: &str =
    "not an object id (40 lowercase hex digits, or 64 in a SHA-256 repository)";

/// Whether `s` is a receipt id as receipts spell them: `sha256:` and 64
/// lowercase hex digits.
pub(crate) fn is_receipt_id(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && is_lower_hex(h))
}

/// Whether `name` may name a check: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with `.` or `-`.
pub fn is_valid_check_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['.', '-'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Whether `writer` is a well-formed writer id: `<chain name>-<32 lowercase hex>`.
pub fn is_valid_writer_id(writer: &str) -> bool {
    // `<name>-<32 hex>`: the hash holds no `-`, so its `-` is the last one. Read
    // by position, not searched for: every `gate` checks a thousand writers' refs.
    let Some(split) = writer.len().checked_sub(33) else {
        return false;
    };
    let (name, dash_hash) = writer.as_bytes().split_at(split);
    // branch-free over the 32 digits: the compiler makes it a few vector steps
    let not_hex = dash_hash[1..].iter().fold(false, |bad, &b| {
        bad | !(b.is_ascii_digit() | (b'a'..=b'f').contains(&b))
    });
    dash_hash[0] == b'-' && !not_hex && is_valid_chain_name_bytes(name)
}

/// [`is_valid_chain_name`] of bytes (which, passing, are ASCII).
fn is_valid_chain_name_bytes(name: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && !matches!(name[0], b'-' | b'_')
        && !name.iter().fold(false, |bad, &b| {
            bad | !(b.is_ascii_lowercase() | b.is_ascii_digit() | (b == b'_') | (b == b'-'))
        })
}

/// Whether `name` may name a chain: 1 to 32 of `a-z 0-9 _ -`, starting with a letter or digit.
pub fn is_valid_chain_name(name: &str) -> bool {
    is_valid_chain_name_bytes(name.as_bytes())
}

/// The writer id for a key and chain name.
pub fn writer_id(key: &PublicKey, chain_name: &str) -> String {
    format!(
        "{chain_name}-{}",
        hex::encode(&key.fingerprint_digest()[..16])
    )
}

/// Whether writer id `writer` is derived from the key with OpenSSH fingerprint `fp` (as
/// [`writer_id`] derives it: the first 16 bytes of the SHA-256 digest, in hex).
pub fn writer_matches_key(writer: &str, fp: &str) -> bool {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    sign::fingerprint_digest_of(fp).is_some_and(|digest| {
        writer.rsplit_once('-').is_some_and(|(_, h)| {
            // compared with the lowercase hex in place (every receipt is)
            h.len() == 32
                && h.as_bytes()
                    .chunks(2)
                    .zip(&digest[..16])
                    .all(|(pair, &b)| pair == [HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]])
        })
    })
}

fn invalid(member: &'static str, reason: impl Into<String>) -> ReceiptError {
    ReceiptError::Invalid {
        member,
        reason: reason.into(),
    }
}

/// Value rules that the types alone do not enforce.
fn validate(body: &Body, signature: &SignatureInfo) -> Result<(), ReceiptError> {
    let (v2, v3, v4, v5) = match body.schema.as_str() {
        SCHEMA => (false, false, false, false),
        SCHEMA_V2 => (true, false, false, false),
        SCHEMA_V3 => (true, true, false, false),
        SCHEMA_V4 => (true, true, true, false),
        SCHEMA_V5 => (true, true, true, true),
        other => {
            return Err(invalid(
                "/receipt/schema",
                format!(
                    "unknown schema {other:?}, expected {SCHEMA_V5:?}, {SCHEMA_V4:?}, {SCHEMA_V3:?}, {SCHEMA_V2:?} or {SCHEMA:?}"
                ),
            ));
        }
    };
    let missing =
        |name: &str| ReceiptError::Schema(format!("missing member {name:?} in \"/receipt\""));
    let foreign = |member: &'static str, kind: &str| {
        invalid(member, format!("not a member of a {kind} receipt"))
    };
    match body.kind {
        Kind::Check => {
            if body.acceptance.is_some() {
                return Err(foreign("/receipt/acceptance", "check"));
            }
            if body.review.is_some() {
                return Err(foreign("/receipt/review", "check"));
            }
            if body.check.is_absent() {
                return Err(missing("check"));
            }
            if body.result.is_absent() {
                return Err(missing("result"));
            }
            validate_environment(body, v3)?;
            validate_check(body, v2)?;
            validate_tests(body, v4, v5)?;
            validate_metrics(body, v4)?;
            validate_v5(body, v5)?;
        }
        Kind::Acceptance | Kind::Review => {
            let kind = if body.kind == Kind::Acceptance {
                "acceptance"
            } else {
                "review"
            };
            // v4 adds one decision: a review that accepts a regression
            let accepting = body.review.as_ref().is_some_and(|r| r.accepts.is_some());
            if v5 {
                return Err(invalid(
                    "/receipt/schema",
                    format!("{kind} receipts are never {SCHEMA_V5:?}"),
                ));
            }
            if !v3 || (v4 && body.kind == Kind::Acceptance) {
                return Err(invalid(
                    "/receipt/kind",
                    format!("{kind} receipts exist only in {SCHEMA_V3:?}"),
                ));
            }
            if v4 != accepting && body.kind == Kind::Review {
                return Err(invalid(
                    "/receipt/review/accepts",
                    format!(
                        "an accepted regression is a review of {SCHEMA_V4:?}, and a {SCHEMA_V4:?} review always is one"
                    ),
                ));
            }
            if !body.check.is_absent() {
                return Err(foreign("/receipt/check", kind));
            }
            if !body.result.is_absent() {
                return Err(foreign("/receipt/result", kind));
            }
            if !body.subject.dependencies.is_empty() {
                return Err(foreign("/receipt/subject/dependencies", kind));
            }
            match (&body.acceptance, &body.review, body.kind) {
                (Some(a), None, Kind::Acceptance) => validate_acceptance(a)?,
                (None, Some(r), Kind::Review) => validate_review(r)?,
                (Some(_), _, Kind::Review) => {
                    return Err(foreign("/receipt/acceptance", kind));
                }
                (_, Some(_), _) => return Err(foreign("/receipt/review", kind)),
                _ => return Err(missing(kind)),
            }
        }
    }
    if body.kind != Kind::Check && body.subject.dirty {
        return Err(invalid(
            "/receipt/subject/dirty",
            "a decision is about a commit, never uncommitted changes",
        ));
    }
    validate_common(body, signature)
}

fn validate_acceptance(a: &Acceptance) -> Result<(), ReceiptError> {
    if !is_hex_oid(&a.trusted) {
        return Err(invalid("/receipt/acceptance/trusted", NOT_AN_OID));
    }
    if !is_timestamp(&a.decided_at) {
        return Err(invalid(
            "/receipt/acceptance/decided_at",
            "not an RFC 3339 UTC timestamp like 2026-11-29T23:04:44.123Z",
        ));
    }
    let key = |kind: CriterionKind, name: &str| (kind == CriterionKind::Review, name.to_owned());
    if !a
        .criteria
        .windows(2)
        .all(|w| key(w[0].kind, &w[0].name) < key(w[1].kind, &w[1].name))
    {
        return Err(invalid(
            "/receipt/acceptance/criteria",
            "not sorted by kind and name, or a criterion appears twice",
        ));
    }
    for c in &a.criteria {
        if !is_valid_check_name(&c.name) {
            return Err(invalid("/receipt/acceptance/criteria", "not a valid name"));
        }
        if !is_hex_oid(&c.inputs) {
            return Err(invalid(
                "/receipt/acceptance/criteria",
                "inputs is not an object id (40 or 64 lowercase hex digits)",
            ));
        }
        if !c.evidence.iter().all(|e| is_receipt_id(e))
            || !c.evidence.windows(2).all(|w| w[0] < w[1])
        {
            return Err(invalid(
                "/receipt/acceptance/criteria",
                "evidence is not a sorted list of distinct sha256: receipt ids",
            ));
        }
        if c.evidence.len() > 1024 {
            return Err(invalid(
                "/receipt/acceptance/criteria",
                "more than 1024 evidence ids",
            ));
        }
    }
    // unresolved is exactly the criteria that are not present, in order
    let not_present: Vec<_> = a
        .criteria
        .iter()
        .filter(|c| c.state != State::Present)
        .map(|c| (c.kind, c.name.as_str(), c.state))
        .collect();
    let unresolved: Vec<_> = a
        .unresolved
        .iter()
        .map(|u| (u.kind, u.name.as_str(), u.state))
        .collect();
    if not_present != unresolved {
        return Err(invalid(
            "/receipt/acceptance/unresolved",
            "must list exactly the criteria that are not present, with their states",
        ));
    }
    if a.unresolved
        .iter()
        .any(|u| u.reason.len() > MAX_MESSAGE_BYTES)
    {
        return Err(invalid(
            "/receipt/acceptance/unresolved",
            format!("a reason is over {MAX_MESSAGE_BYTES} bytes"),
        ));
    }
    if (a.status == Status::Accepted) != a.unresolved.is_empty() {
        return Err(invalid(
            "/receipt/acceptance/status",
            "must be accepted exactly when nothing is unresolved",
        ));
    }
    Ok(())
}

fn validate_review(r: &Review) -> Result<(), ReceiptError> {
    if !is_valid_check_name(&r.name) {
        return Err(invalid("/receipt/review/name", "not a valid review name"));
    }
    if !r.paths.windows(2).all(|w| w[0] < w[1]) {
        return Err(invalid("/receipt/review/paths", "not sorted and unique"));
    }
    if r.message.len() > MAX_MESSAGE_BYTES {
        return Err(invalid(
            "/receipt/review/message",
            format!("over {MAX_MESSAGE_BYTES} bytes"),
        ));
    }
    if !is_timestamp(&r.decided_at) {
        return Err(invalid(
            "/receipt/review/decided_at",
            "not an RFC 3339 UTC timestamp like 2026-11-29T23:04:44.123Z",
        ));
    }
    if let Some(a) = &r.accepts {
        validate_accepts(r, a)?;
    }
    Ok(())
}

/// An accepted regression: an approval of a known definition, naming at least
/// one test or metric, each list sorted, unique and bounded.
fn validate_accepts(r: &Review, a: &Accepts) -> Result<(), ReceiptError> {
    const AT: &str = "/receipt/review/accepts";
    if r.verdict != Verdict::Approve {
        return Err(invalid(
            "/receipt/review/verdict",
            "an accepted regression is an approval",
        ));
    }
    if !is_receipt_id(&a.definition) {
        return Err(invalid(AT, "definition is not a sha256: digest"));
    }
    if a.tests.is_empty() && a.metrics.is_empty() {
        return Err(invalid(AT, "names no test and no metric"));
    }
    if a.tests.len() > MAX_ACCEPTED_TESTS {
        return Err(invalid(AT, format!("more than {MAX_ACCEPTED_TESTS} tests")));
    }
    if !a.tests.windows(2).all(|w| w[0] < w[1]) || !a.metrics.windows(2).all(|w| w[0] < w[1]) {
        return Err(invalid(AT, "tests and metrics must be sorted and unique"));
    }
    if let Some(t) = a
        .tests
        .iter()
        .find(|t| t.is_empty() || t.len() > MAX_TEST_NAME_BYTES)
    {
        return Err(invalid(
            AT,
            format!(
                "a test name of {} bytes (1 to {MAX_TEST_NAME_BYTES})",
                t.len()
            ),
        ));
    }
    if a.metrics.len() > MAX_METRICS {
        return Err(invalid(AT, format!("more than {MAX_METRICS} metrics")));
    }
    if let Some(m) = a.metrics.iter().find(|m| !is_valid_check_name(m)) {
        return Err(invalid(AT, format!("{m:?} is not a metric name")));
    }
    Ok(())
}

/// The rules of a check receipt's `check` and `result`.
fn validate_check(body: &Body, v2: bool) -> Result<(), ReceiptError> {
    let r = &body.result;
    match (v2, r.log_bytes, &r.log_sha256) {
        (false, None, None) => {}
        (false, _, _) => {
            return Err(invalid(
                "/receipt/result/log_sha256",
                "log_bytes and log_sha256 are members of git-receipt/v2, not v1",
            ));
        }
        (true, None, _) => {
            return Err(ReceiptError::Schema(
                "missing member \"log_bytes\" in \"/receipt/result\"".into(),
            ));
        }
        (true, _, None) => {
            return Err(ReceiptError::Schema(
                "missing member \"log_sha256\" in \"/receipt/result\"".into(),
            ));
        }
        (true, Some(bytes), Some(sha)) => match (&r.log, sha) {
            (None, None) if bytes == 0 => {}
            (None, _) => {
                return Err(invalid(
                    "/receipt/result/log_sha256",
                    "must be null, and log_bytes 0, when log is null",
                ));
            }
            (Some(_), Some(d)) if is_receipt_id(d) => {}
            (Some(_), _) => {
                return Err(invalid(
                    "/receipt/result/log_sha256",
                    "not a sha256: digest of the log",
                ));
            }
        },
    }
    if !is_valid_check_name(&body.check.name) {
        return Err(invalid("/receipt/check/name", "not a valid check name"));
    }
    if body.check.argv.is_empty() {
        return Err(invalid("/receipt/check/argv", "empty"));
    }
    if !is_receipt_id(&body.check.definition) {
        return Err(invalid("/receipt/check/definition", "not a sha256: digest"));
    }
    if !body.check.paths.windows(2).all(|w| w[0] < w[1]) {
        return Err(invalid("/receipt/check/paths", "not sorted and unique"));
    }
    let r = &body.result;
    if r.passed != (r.exit_code == 0 && r.detail.is_empty()) {
        return Err(invalid(
            "/receipt/result/passed",
            "must be true exactly when exit_code is 0 and detail is empty",
        ));
    }
    if !is_timestamp(&r.started_at) {
        return Err(invalid(
            "/receipt/result/started_at",
            "not an RFC 3339 UTC timestamp like 2026-11-29T23:04:44.123Z",
        ));
    }
    if let Some(log) = &r.log
        && !(is_hex_oid(log) && log.len() == body.subject.commit.len())
    {
        return Err(invalid(
            "/receipt/result/log",
            "not a blob id in the object format of subject/commit",
        ));
    }
    Ok(())
}

/// The rules every kind shares: chain position, subject, supersedes, signature.
fn validate_common(body: &Body, signature: &SignatureInfo) -> Result<(), ReceiptError> {
    if !is_valid_writer_id(&body.chain.writer) {
        return Err(invalid(
            "/receipt/chain/writer",
            format!("{:?} is not a writer id", body.chain.writer),
        ));
    }
    match (&body.chain.prev, body.chain.index) {
        (None, 0) => {}
        (None, _) => return Err(invalid("/receipt/chain/prev", "null but index is not 0")),
        (Some(_), 0) => return Err(invalid("/receipt/chain/prev", "set but index is 0")),
        (Some(prev), _) if !is_receipt_id(prev) => {
            return Err(invalid("/receipt/chain/prev", "not a sha256: receipt id"));
        }
        _ => {}
    }
    for (member, oid) in [
        ("/receipt/subject/commit", &body.subject.commit),
        ("/receipt/subject/tree", &body.subject.tree),
        ("/receipt/subject/inputs", &body.subject.inputs),
    ] {
        if !is_hex_oid(oid) {
            return Err(invalid(member, NOT_AN_OID));
        }
        // one repository's objects, in its one object format
        if oid.len() != body.subject.commit.len() {
            return Err(invalid(
                member,
                "an object id of another object format than subject/commit (SHA-1 and SHA-256 mixed)",
            ));
        }
    }
    if let Some(s) = &body.supersedes
        && !is_receipt_id(s)
    {
        return Err(invalid("/receipt/supersedes", "not a sha256: receipt id"));
    }
    if signature.alg != "ed25519" {
        return Err(invalid(
            "/signature/alg",
            format!("unknown algorithm {:?}", signature.alg),
        ));
    }
    if !is_fingerprint(&signature.key) {
        return Err(invalid(
            "/signature/key",
            "not an OpenSSH SHA256 fingerprint",
        ));
    }
    if decode_signature(&signature.sig).is_none() {
        return Err(invalid(
            "/signature/sig",
            "not the base64 of a 64-byte signature",
        ));
    }
    Ok(())
}

/// The v3 members: absent before v3; in v3, well-formed, and a receipt with a
/// failed assertion never passes.
fn validate_environment(body: &Body, v3: bool) -> Result<(), ReceiptError> {
    let assertions = &body.result.assertions;
    let dependencies = &body.subject.dependencies;
    if !v3 {
        if !assertions.is_empty() {
            return Err(invalid(
                "/receipt/result/assertions",
                "a member of git-receipt/v3, not of this schema",
            ));
        }
        if !dependencies.is_empty() {
            return Err(invalid(
                "/receipt/subject/dependencies",
                "a member of git-receipt/v3, not of this schema",
            ));
        }
        return Ok(());
    }
    for a in assertions {
        if !is_valid_check_name(&a.name) {
            return Err(invalid(
                "/receipt/result/assertions",
                format!("{:?} is not a valid assertion name", a.name),
            ));
        }
        if a.argv.is_empty() {
            return Err(invalid("/receipt/result/assertions", "an empty argv"));
        }
        if a.actual.len() > MAX_ACTUAL_BYTES || a.actual.contains('\n') {
            return Err(invalid(
                "/receipt/result/assertions",
                format!(
                    "actual of {:?} is not one line of at most {MAX_ACTUAL_BYTES} bytes",
                    a.name
                ),
            ));
        }
        if a.passed != a.detail.is_empty() {
            return Err(invalid(
                "/receipt/result/assertions",
                format!(
                    "passed of {:?} must be true exactly when its detail is empty",
                    a.name
                ),
            ));
        }
    }
    let mut names: Vec<&str> = assertions.iter().map(|a| a.name.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err(invalid(
            "/receipt/result/assertions",
            "a name appears twice",
        ));
    }
    if body.result.passed && assertions.iter().any(|a| !a.passed) {
        return Err(invalid(
            "/receipt/result/passed",
            "true, but an assertion failed",
        ));
    }
    if !dependencies.windows(2).all(|w| w[0].name < w[1].name) {
        return Err(invalid(
            "/receipt/subject/dependencies",
            "not sorted by name and unique",
        ));
    }
    for d in dependencies {
        if !is_valid_check_name(&d.name) {
            return Err(invalid(
                "/receipt/subject/dependencies",
                format!("{:?} is not a valid dependency name", d.name),
            ));
        }
        if !is_hex_oid(&d.commit) || !is_hex_oid(&d.tree) || d.commit.len() != d.tree.len() {
            return Err(invalid(
                "/receipt/subject/dependencies",
                "commit and tree must be object ids of one object format (40 or 64 lowercase hex digits)",
            ));
        }
    }
    Ok(())
}

/// The v4 member `result.metrics`: only in v4; sorted by name, unique, bounded;
/// a value is a decimal number exactly when `error` is empty.
fn validate_metrics(body: &Body, v4: bool) -> Result<(), ReceiptError> {
    const AT: &str = "/receipt/result/metrics";
    let m = &body.result.metrics;
    if m.is_empty() {
        return Ok(());
    }
    if !v4 {
        return Err(invalid(
            AT,
            format!("a member of {SCHEMA_V4:?}, not of this schema"),
        ));
    }
    if m.len() > MAX_METRICS {
        return Err(invalid(AT, format!("more than {MAX_METRICS} metrics")));
    }
    if !m.windows(2).all(|w| w[0].name < w[1].name) {
        return Err(invalid(AT, "not sorted by name and unique"));
    }
    for x in m {
        if !is_valid_check_name(&x.name) {
            return Err(invalid(AT, format!("{:?} is not a metric name", x.name)));
        }
        if x.unit.is_empty()
            || x.unit.len() > MAX_METRIC_UNIT_BYTES
            || x.unit.chars().any(|c| c.is_control() || c.is_whitespace())
        {
            return Err(invalid(
                AT,
                format!(
                    "metric {:?}: unit is empty, over {MAX_METRIC_UNIT_BYTES} bytes, or holds spaces or controls",
                    x.name
                ),
            ));
        }
        if x.error.len() > MAX_TESTS_ERROR_BYTES {
            return Err(invalid(
                AT,
                format!(
                    "metric {:?}: error is over {MAX_TESTS_ERROR_BYTES} bytes",
                    x.name
                ),
            ));
        }
        match (&x.value, x.error.is_empty()) {
            (Some(v), true) if is_metric_value(v) => {}
            (None, false) => {}
            _ => {
                return Err(invalid(
                    AT,
                    format!(
                        "metric {:?}: value must be a decimal number exactly when error is empty",
                        x.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The v5 members `result.artifacts` and `result.idempotency_key`: only in
/// v5, which has at least one of them; artifacts sorted by path, unique, each a
/// normalized relative path with a size and a SHA-256; a key of printable
/// ASCII without spaces; both bounded.
fn validate_v5(body: &Body, v5: bool) -> Result<(), ReceiptError> {
    let r = &body.result;
    if !v5 {
        for (member, present) in [
            ("/receipt/result/artifacts", r.artifacts.is_some()),
            (
                "/receipt/result/idempotency_key",
                r.idempotency_key.is_some(),
            ),
        ] {
            if present {
                return Err(invalid(
                    member,
                    format!("a member of {SCHEMA_V5:?}, not of this schema"),
                ));
            }
        }
        return Ok(());
    }
    if r.artifacts.is_none() && r.idempotency_key.is_none() {
        return Err(ReceiptError::Schema(
            "missing member \"artifacts\" (or \"idempotency_key\") in \"/receipt/result\"".into(),
        ));
    }
    if let Some(k) = &r.idempotency_key
        && !is_idempotency_key(k)
    {
        return Err(invalid(
            "/receipt/result/idempotency_key",
            format!("not 1 to {MAX_IDEMPOTENCY_KEY_BYTES} bytes of printable ASCII without spaces"),
        ));
    }
    const AT: &str = "/receipt/result/artifacts";
    let Some(list) = &r.artifacts else {
        return Ok(());
    };
    if list.len() > MAX_ARTIFACTS {
        return Err(invalid(AT, format!("more than {MAX_ARTIFACTS} artifacts")));
    }
    if !list.windows(2).all(|w| w[0].path < w[1].path) {
        return Err(invalid(AT, "not sorted by path and unique"));
    }
    for a in list {
        if !is_artifact_path(&a.path) {
            return Err(invalid(
                AT,
                format!(
                    "path {:?} is not a normalized relative path of at most {MAX_ARTIFACT_PATH_BYTES} bytes without control characters",
                    a.path
                ),
            ));
        }
        if !is_receipt_id(&a.sha256) {
            return Err(invalid(
                AT,
                format!("artifact {:?}: sha256 is not a sha256: digest", a.path),
            ));
        }
    }
    Ok(())
}

/// Whether `k` is an idempotency key: 1 to [`MAX_IDEMPOTENCY_KEY_BYTES`] bytes
/// of printable ASCII, no space.
pub fn is_idempotency_key(k: &str) -> bool {
    !k.is_empty() && k.len() <= MAX_IDEMPOTENCY_KEY_BYTES && k.bytes().all(|b| b.is_ascii_graphic())
}

/// Whether `p` is an artifact path as a receipt records it: normalized,
/// relative, at most [`MAX_ARTIFACT_PATH_BYTES`] bytes, no control characters.
pub fn is_artifact_path(p: &str) -> bool {
    p.len() <= MAX_ARTIFACT_PATH_BYTES
        && !p.chars().any(char::is_control)
        && normalize_path(p).as_deref() == Some(p)
}

/// The v4 member `result.tests`: present exactly in v4 (in v5: optional), and
/// consistent.
fn validate_tests(body: &Body, v4: bool, v5: bool) -> Result<(), ReceiptError> {
    const AT: &str = "/receipt/result/tests";
    let tests = match (&body.result.tests, v4) {
        (None, false) => return Ok(()),
        (Some(_), false) => {
            return Err(invalid(
                AT,
                format!("a member of {SCHEMA_V4:?}, not of this schema"),
            ));
        }
        // a v4 receipt of a check that declares metrics but no results, or v5
        (None, true) if !body.result.metrics.is_empty() || v5 => return Ok(()),
        (None, true) => {
            return Err(ReceiptError::Schema(
                "missing member \"tests\" (or \"metrics\") in \"/receipt/result\"".into(),
            ));
        }
        (Some(t), true) => t,
    };
    let path_ok = if tests.path == "-" {
        tests.format == ResultsFormat::Tap
    } else {
        is_results_path(&tests.path)
    };
    if !path_ok {
        return Err(invalid(
            AT,
            format!(
                "path {:?} is not a relative path inside the work tree (or `-` for TAP)",
                tests.path
            ),
        ));
    }
    if tests.error.len() > MAX_TESTS_ERROR_BYTES {
        return Err(invalid(
            AT,
            format!("error is over {MAX_TESTS_ERROR_BYTES} bytes"),
        ));
    }
    let sum = tests
        .passed
        .checked_add(tests.failed)
        .and_then(|n| n.checked_add(tests.skipped));
    if sum != Some(tests.total) || tests.total > MAX_TESTS {
        return Err(invalid(
            AT,
            format!("total must be passed + failed + skipped, at most {MAX_TESTS}"),
        ));
    }
    if !is_receipt_id(&tests.list_sha256) {
        return Err(invalid(AT, "list_sha256 is not a sha256: digest"));
    }
    match (&tests.list, &tests.list_blob) {
        (Some(list), None) => {
            if !tests.error.is_empty() && !list.is_empty() {
                return Err(invalid(
                    AT,
                    "results that could not be read have an empty list",
                ));
            }
            check_list_entries(tests, list).map_err(|e| invalid(AT, format!("list: {e}")))?;
            let bytes = canonical_list(list);
            if bytes.len() as u64 != tests.list_bytes
                || format!("sha256:{}", hex::encode(Sha256::digest(&bytes))) != tests.list_sha256
            {
                return Err(invalid(
                    AT,
                    "list_bytes and list_sha256 must be the size and SHA-256 of the canonical list",
                ));
            }
            if tests.total > INLINE_TESTS || tests.list_bytes > INLINE_LIST_BYTES {
                return Err(invalid(
                    AT,
                    format!(
                        "a list of more than {INLINE_TESTS} tests or {INLINE_LIST_BYTES} bytes is kept beside the log (list_blob), not inline"
                    ),
                ));
            }
        }
        (None, Some(blob)) => {
            if !is_hex_oid(blob) || blob.len() != body.subject.commit.len() {
                return Err(invalid(
                    AT,
                    "list_blob is not a blob id in the object format of subject/commit",
                ));
            }
            if !tests.error.is_empty() {
                return Err(invalid(
                    AT,
                    "results that could not be read have an empty inline list",
                ));
            }
            if tests.total <= INLINE_TESTS && tests.list_bytes <= INLINE_LIST_BYTES {
                return Err(invalid(
                    AT,
                    "a list this small is inline (list), not a blob",
                ));
            }
            if tests.list_bytes > MAX_LIST_BYTES {
                return Err(invalid(AT, format!("list_bytes is over {MAX_LIST_BYTES}")));
            }
        }
        _ => {
            return Err(invalid(AT, "exactly one of list and list_blob is null"));
        }
    }
    Ok(())
}

/// Normalize one declared path: relative, `/`-separated, no `.`/`..`, no trailing slash.
pub fn normalize_path(path: &str) -> Option<String> {
    let mut parts = Vec::new();
    if path.starts_with('/') {
        return None;
    }
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Whether `path` spells the top of the work tree (`.`, `./`, `./.`): not a
/// path [`normalize_path`] takes, but what a contract means by leaving its
/// `path` out, so an error can say so.
pub fn spells_whole_tree(path: &str) -> bool {
    !path.is_empty() && !path.starts_with('/') && path.split('/').all(|p| matches!(p, "" | "."))
}

/// A results path as `.gitreceipts` normalizes it: relative, `/`-separated,
/// without empty, `.` or `..` segments, at most 4096 bytes.
pub fn is_results_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 4096
        && !path.contains('\0')
        && path.split('/').all(|seg| !matches!(seg, "" | "." | ".."))
}

/// `SHA256:` + the unpadded base64 of 32 bytes, in its one canonical spelling.
fn is_fingerprint(s: &str) -> bool {
    sign::fingerprint_digest_of(s).is_some()
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, the one spelling we write.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// Format milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_timestamp(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm), valid for the proleptic Gregorian calendar.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_suffixes_decode_from_lowercase_hex_only() {
        let mut out = [0u8; 4];
        assert!(decode_lower_hex(b"09af90fa", &mut out));
        assert_eq!(out, [0x09, 0xaf, 0x90, 0xfa]);
        for bad in [
            &b"09AF90FA"[..],
            b"09af90f",
            b"09af90fa0",
            b"09ag90fa",
            b"09af90f/",
            b"09af90f:",
        ] {
            assert!(
                !decode_lower_hex(bad, &mut out),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let mut none = [0u8; 0];
        assert!(decode_lower_hex(b"", &mut none));
    }

    #[test]
    fn timestamps_match_known_dates() {
        assert_eq!(format_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_timestamp(951_782_400_000),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            format_timestamp(1_796_425_484_123),
            "2026-12-04T23:04:44.123Z"
        );
        assert!(is_timestamp(&format_timestamp(1_796_425_484_123)));
    }

    fn sample_body() -> Body {
        let oid = "0123456789abcdef0123456789abcdef01234567".to_owned();
        let id = format!("sha256:{}", "ab".repeat(32));
        Body {
            schema: SCHEMA_V2.into(),
            kind: Kind::Check,
            chain: Chain {
                writer: "default-0123456789abcdef0123456789abcdef".into(),
                index: 1,
                prev: Some(id.clone()),
            },
            subject: Subject {
                commit: oid.clone(),
                tree: oid.clone(),
                inputs: oid.clone(),
                dirty: false,
                dependencies: Vec::new(),
            },
            check: Check {
                name: "test".into(),
                argv: vec!["true".into()],
                definition: id.clone(),
                paths: vec!["src".into()],
                env: [("CI".to_owned(), "1".to_owned())].into(),
            },
            result: Outcome {
                mode: Mode::Run,
                exit_code: 0,
                passed: true,
                started_at: format_timestamp(0),
                duration_ms: 1,
                stdout_tail: String::new(),
                stderr_tail: String::new(),
                log: Some(oid),
                output_bytes: 0,
                log_truncated: false,
                log_bytes: Some(3),
                log_sha256: Some(Some(format!("sha256:{}", "cd".repeat(32)))),
                detail: String::new(),
                assertions: Vec::new(),
                tests: None,
                metrics: Vec::new(),
                artifacts: None,
                idempotency_key: None,
            },
            runner: Runner {
                tool: "git-receipt 0".into(),
                host: "h".into(),
                os: "linux-x86_64".into(),
            },
            acceptance: None,
            review: None,
            supersedes: Some(id),
        }
    }

    /// A SHA-256 repository's receipt names its objects by 64 hex digits; one
    /// receipt's own objects (subject, log, test list) come in one format, and
    /// a dependency (another repository) in its own.
    #[test]
    fn object_ids_are_sha1_or_sha256_and_one_receipts_are_one_format() {
        let key = crate::sign::SigningKey::from_seed(&[3; 32]);
        let wide = "0123456789abcdef".repeat(4);
        let sha256 = |mut b: Body| {
            b.subject.commit = wide.clone();
            b.subject.tree = wide.clone();
            b.subject.inputs = wide.clone();
            b.result.log = Some(wide.clone());
            b
        };
        let signed = Receipt::sign(sha256(sample_body()), &key).unwrap();
        let parsed = Receipt::parse(signed.bytes()).unwrap();
        assert_eq!(parsed.body().subject.commit.len(), 64);
        // a dependency is another repository: SHA-1 beside a SHA-256 subject
        let mut b = sha256(sample_v3_body());
        assert_eq!(b.subject.dependencies[0].commit.len(), 40);
        Receipt::sign(b.clone(), &key).expect("a SHA-1 dependency of a SHA-256 repository");
        b.subject.dependencies[0].tree = wide.clone();
        let e = Receipt::sign(b, &key).unwrap_err().to_string();
        assert!(e.contains("one object format"), "{e}");

        let refused = |edit: &dyn Fn(&mut Body), why: &str| {
            let mut b = sha256(sample_body());
            edit(&mut b);
            let e = Receipt::sign(b, &key).unwrap_err().to_string();
            assert!(e.contains(why), "{why}: {e}");
        };
        refused(&|b| b.subject.tree.truncate(40), "another object format");
        refused(&|b| b.subject.inputs.truncate(40), "another object format");
        refused(&|b| b.subject.commit.truncate(40), "object format");
        refused(
            &|b| b.result.log.as_mut().unwrap().truncate(40),
            "object format of subject/commit",
        );
        for bad in [63, 41, 39, 65] {
            refused(
                &|b| b.subject.tree = "a".repeat(bad),
                "40 lowercase hex digits, or 64",
            );
        }
        refused(
            &|b| b.subject.tree = "A".repeat(64),
            "40 lowercase hex digits, or 64",
        );
    }

    /// A v3 body: the sample plus one assertion and one dependency.
    fn sample_v3_body() -> Body {
        let mut b = sample_body();
        b.schema = SCHEMA_V3.into();
        b.result.assertions = vec![AssertionResult {
            name: "rust".into(),
            argv: vec!["sh".into(), "-c".into(), "rustc --version".into()],
            expected: Some(Expectation::Glob("rustc 1.*".into())),
            actual: "rustc 1.90.0".into(),
            passed: true,
            detail: String::new(),
        }];
        b.subject.dependencies = vec![DependencyState {
            name: "proto".into(),
            commit: "89abcdef0123456789abcdef0123456789abcdef".into(),
            tree: "0123456789abcdef0123456789abcdef01234567".into(),
        }];
        b
    }

    /// A v4 body: the v3 sample plus an inline test list of three tests.
    fn sample_v4_body() -> Body {
        let mut b = sample_v3_body();
        b.schema = SCHEMA_V4.into();
        let list = vec![
            TestCase {
                name: "a::fails".into(),
                status: TestStatus::Failed,
                duration_ms: Some(3),
            },
            TestCase {
                name: "a::passes".into(),
                status: TestStatus::Passed,
                duration_ms: None,
            },
            TestCase {
                name: "b::ignored".into(),
                status: TestStatus::Skipped,
                duration_ms: Some(0),
            },
        ];
        let bytes = canonical_list(&list);
        b.result.tests = Some(Tests {
            format: ResultsFormat::Junit,
            path: "target/junit.xml".into(),
            error: String::new(),
            passed: 1,
            failed: 1,
            skipped: 1,
            total: 3,
            list_bytes: bytes.len() as u64,
            list_sha256: format!("sha256:{}", hex::encode(Sha256::digest(&bytes))),
            list: Some(list),
            list_blob: None,
        });
        b
    }

    fn artifact(path: &str) -> Artifact {
        Artifact {
            path: path.into(),
            size: 7,
            sha256: format!("sha256:{}", "ab".repeat(32)),
        }
    }

    fn sample_v5_body() -> Body {
        let mut b = sample_v4_body();
        b.schema = SCHEMA_V5.into();
        b.result.artifacts = Some(vec![artifact("dist/a.tar.gz"), artifact("dist/b")]);
        b.result.idempotency_key = Some("ci-run-1234/attempt-1".into());
        b
    }

    /// v5 adds `result.artifacts` and `result.idempotency_key`, at least one of
    /// them, each bounded and well-formed; never before v5, never on a decision;
    /// `result.tests` becomes optional.
    #[test]
    fn v5_artifacts_and_idempotency_keys_are_closed_and_bounded() {
        let key = SigningKey::from_seed(&[5; 32]);
        let full = sample_v5_body();
        let parsed = Receipt::parse(Receipt::sign(full.clone(), &key).unwrap().bytes()).unwrap();
        assert_eq!(parsed.body(), &full);
        let accepted = |b: Body, what: &str| {
            let signed = Receipt::sign(b, &key).unwrap_or_else(|e| panic!("{what}: {e}"));
            Receipt::parse(signed.bytes()).unwrap_or_else(|e| panic!("{what}: {e}"));
        };
        let refused = |b: Body, what: &str, why: &str| match Receipt::sign(b, &key) {
            Ok(_) => panic!("{what} must be refused"),
            Err(e) => assert!(e.to_string().contains(why), "{what}: {e}"),
        };
        // each member alone, an empty list, no tests: still v5
        let mut b = full.clone();
        b.result.idempotency_key = None;
        b.result.tests = None;
        accepted(b, "artifacts alone, no tests");
        let mut b = full.clone();
        b.result.artifacts = None;
        accepted(b, "a key alone");
        let mut b = full.clone();
        b.result.artifacts = Some(Vec::new());
        b.result.idempotency_key = None;
        accepted(b, "an empty artifact list");
        let mut b = full.clone();
        b.result.artifacts = Some(
            (0..MAX_ARTIFACTS)
                .map(|i| artifact(&format!("o/{i:03}")))
                .collect(),
        );
        accepted(b, "the most artifacts");
        let mut b = full.clone();
        b.result.idempotency_key = Some("k".repeat(MAX_IDEMPOTENCY_KEY_BYTES));
        accepted(b, "the longest key");
        // neither; before v5; on a decision
        let mut b = full.clone();
        b.result.artifacts = None;
        b.result.idempotency_key = None;
        refused(b, "v5 with neither", "missing member \"artifacts\"");
        for (schema, strip) in [(SCHEMA_V4, true), (SCHEMA_V4, false)] {
            let mut b = full.clone();
            b.schema = schema.into();
            if strip {
                b.result.artifacts = None;
            } else {
                b.result.idempotency_key = None;
            }
            refused(b, "a v5 member in v4", "not of this schema");
        }
        let mut b = full.clone();
        b.schema = SCHEMA_V4.into();
        b.result.artifacts = None;
        b.result.idempotency_key = None;
        b.result.tests = None;
        refused(b, "v4 without tests still", "missing member \"tests\"");
        let mut d = accepted_regression_body();
        d.schema = SCHEMA_V5.into();
        refused(d, "a v5 review", "never \"git-receipt/v5\"");
        // bad lists
        let mut b = full.clone();
        b.result.artifacts.as_mut().unwrap().reverse();
        refused(b, "unsorted artifacts", "not sorted by path and unique");
        let mut b = full.clone();
        b.result.artifacts = Some(vec![artifact("a"), artifact("a")]);
        refused(b, "an artifact twice", "not sorted by path and unique");
        let mut b = full.clone();
        b.result.artifacts = Some(
            (0..=MAX_ARTIFACTS)
                .map(|i| artifact(&format!("o/{i:03}")))
                .collect(),
        );
        refused(b, "too many artifacts", "more than 256 artifacts");
        for bad in [
            "/etc/passwd",
            "../up",
            "a/../b",
            "a//b",
            "./a",
            "a/",
            "",
            "tab\there",
            &"p".repeat(MAX_ARTIFACT_PATH_BYTES + 1),
        ] {
            let mut b = full.clone();
            b.result.artifacts = Some(vec![artifact(bad)]);
            refused(
                b,
                &format!("artifact path {bad:?}"),
                "is not a normalized relative path",
            );
        }
        let mut b = full.clone();
        b.result.artifacts.as_mut().unwrap()[0].sha256 = "sha256:abc".into();
        refused(b, "a short digest", "sha256 is not a sha256: digest");
        for bad in [
            String::new(),
            "has space".into(),
            "tab\t".into(),
            "ünïcode".into(),
            "k".repeat(MAX_IDEMPOTENCY_KEY_BYTES + 1),
        ] {
            let mut b = full.clone();
            b.result.idempotency_key = Some(bad.clone());
            refused(b, &format!("key {bad:?}"), "printable ASCII without spaces");
        }
    }

    /// v4 may carry `result.metrics` (with or without tests): sorted, unique,
    /// bounded, a decimal value exactly when there is no error; never before v4.
    #[test]
    fn v4_metrics_are_closed_and_consistent() {
        let key = SigningKey::from_seed(&[4; 32]);
        let metric = |name: &str, value: Option<&str>, error: &str| Metric {
            name: name.into(),
            unit: "ms".into(),
            better: Better::Lower,
            value: value.map(str::to_owned),
            error: error.into(),
        };
        let mut only = sample_v4_body();
        only.result.tests = None;
        only.result.metrics = vec![
            metric("a", Some("1.5e3"), ""),
            metric("b", None, "not found"),
        ];
        let signed = Receipt::sign(only.clone(), &key).expect("metrics alone make a v4 receipt");
        let parsed = Receipt::parse(signed.bytes()).unwrap();
        assert_eq!(parsed.body().result.metrics, only.result.metrics);
        let refused = |b: Body, what: &str| {
            assert!(Receipt::sign(b, &key).is_err(), "{what} must be refused");
        };
        let mut b = only.clone();
        b.schema = SCHEMA_V3.into();
        refused(b, "metrics in v3");
        let mut b = only.clone();
        b.result.metrics.swap(0, 1);
        refused(b, "unsorted metrics");
        let mut b = only.clone();
        b.result.metrics[1].name = "a".into();
        refused(b, "a name twice");
        for (value, error) in [
            (Some("1.5.3"), ""),
            (Some("NaN"), ""),
            (Some("1e999"), ""),
            (None, ""),
            (Some("1"), "also an error"),
        ] {
            let mut b = only.clone();
            b.result.metrics[0] = metric("a", value, error);
            refused(b, &format!("value {value:?} with error {error:?}"));
        }
        let mut b = only.clone();
        b.result.metrics[0].unit = "m s".into();
        refused(b, "a unit with a space");
        let mut b = only;
        b.result.metrics.clear();
        refused(b, "v4 with neither tests nor metrics");
        for good in ["0", "-1", "12.50", "3e-7", "1E+3"] {
            assert!(is_metric_value(good), "{good}");
        }
        for bad in ["", "-", "1.", ".5", "+1", "1e", "0x10", "inf", " 1"] {
            assert!(!is_metric_value(bad), "{bad:?}");
        }
    }

    /// v4 adds `result.tests`, required in v4 and refused before it; the counts,
    /// order, digest and inline/blob choice must agree, and a blob list is checked
    /// against what the receipt signed.
    #[test]
    fn v4_tests_are_closed_and_consistent() {
        let key = SigningKey::from_seed(&[4; 32]);
        let good = Receipt::sign(sample_v4_body(), &key).unwrap();
        let parsed = Receipt::parse(good.bytes()).expect("a v4 receipt parses");
        assert_eq!(parsed.body().result.tests, sample_v4_body().result.tests);
        let refused = |b: Body, what: &str| {
            assert!(Receipt::sign(b, &key).is_err(), "{what} must be refused");
        };
        let mut b = sample_v4_body();
        b.schema = SCHEMA_V3.into();
        refused(b, "tests in v3");
        let mut b = sample_v4_body();
        b.result.tests = None;
        refused(b, "v4 without tests");
        let mut b = sample_v4_body();
        b.result.tests.as_mut().unwrap().passed = 2;
        refused(b, "counts that do not add up");
        let mut b = sample_v4_body();
        b.result
            .tests
            .as_mut()
            .unwrap()
            .list
            .as_mut()
            .unwrap()
            .swap(0, 1);
        refused(b, "an unsorted list");
        let mut b = sample_v4_body();
        b.result.tests.as_mut().unwrap().list_sha256 = format!("sha256:{}", "0".repeat(64));
        refused(b, "a digest of another list");
        let mut b = sample_v4_body();
        b.result.tests.as_mut().unwrap().path = "../outside.xml".into();
        refused(b, "a path outside the work tree");
        let mut b = sample_v4_body();
        b.result.tests.as_mut().unwrap().path = "-".into();
        refused(b, "`-` for a format other than TAP");
        let mut b = sample_v4_body();
        let t = b.result.tests.as_mut().unwrap();
        t.list = None;
        t.list_blob = Some("ab".repeat(20));
        refused(b, "a small list kept as a blob");
        let mut b = sample_v3_body();
        b.schema = SCHEMA_V4.into();
        b.kind = Kind::Check;
        refused(b, "v4 check without tests");
        // a missing nullable member is an error, not null
        let text = String::from_utf8(good.bytes().to_vec()).unwrap();
        let without = text.replace(r#""duration_ms":null,"#, "");
        assert_ne!(without, text);
        assert!(Receipt::parse(without.as_bytes()).is_err());
        // a blob list: checked by size, digest, canonical form and counts
        let t = sample_v4_body().result.tests.unwrap();
        let bytes = canonical_list(t.list.as_ref().unwrap());
        assert_eq!(t.check_list_bytes(&bytes).unwrap(), t.list.clone().unwrap());
        let mut forged = bytes.clone();
        let at = forged.iter().position(|&c| c == b'f').unwrap();
        forged[at] = b'g';
        let why = t.check_list_bytes(&forged).unwrap_err();
        assert!(why.contains("SHA-256"), "{why}");
        assert!(
            t.check_list_bytes(&bytes[1..])
                .unwrap_err()
                .contains("bytes")
        );
    }

    /// The in-process memo of good signatures never vouches for a forged copy: the
    /// same body under another signature is checked on its own, after the genuine
    /// one was verified (and remembered).
    #[test]
    fn a_forged_copy_of_a_verified_receipt_is_still_refused() {
        let key = SigningKey::from_seed(&[7; 32]);
        let genuine = Receipt::sign(sample_body(), &key).unwrap();
        let mut other = sample_body();
        other.result.duration_ms += 1;
        let other = Receipt::sign(other, &key).unwrap();
        for _ in 0..2 {
            Receipt::parse(genuine.bytes())
                .unwrap()
                .verify(key.public())
                .expect("the genuine receipt verifies, twice");
        }
        // the genuine body, with the signature of another body by the same key
        let text = String::from_utf8(genuine.bytes().to_vec()).unwrap();
        let forged = text.replace(&genuine.signature().sig, &other.signature().sig);
        assert_ne!(forged, text);
        let forged = Receipt::parse(forged.as_bytes()).expect("well-formed");
        assert_eq!(forged.id(), genuine.id(), "the same body, so the same id");
        assert!(matches!(
            forged.verify(key.public()),
            Err(ReceiptError::BadSignature { .. })
        ));
    }

    /// A writer id names a key when what follows its last `-` is the first 16
    /// bytes of the key's fingerprint digest in lowercase hex, exactly.
    #[test]
    fn a_writer_id_names_a_key_by_its_lowercase_digest_exactly() {
        let key = SigningKey::from_seed(&[7; 32]);
        let fp = key.public().fingerprint();
        let writer = writer_id(key.public(), "ci");
        assert!(writer_matches_key(&writer, &fp));
        assert!(writer_matches_key(&format!("a-b-{}", &writer[3..]), &fp));
        let (name, hex) = writer.rsplit_once('-').unwrap();
        let other = SigningKey::from_seed(&[8; 32]).public().fingerprint();
        let mut flipped = hex.as_bytes().to_vec();
        flipped[31] = if flipped[31] == b'0' { b'1' } else { b'0' };
        for (w, f) in [
            (writer.clone(), other),
            (format!("{name}-{}", hex.to_uppercase()), fp.clone()),
            (
                format!("{name}-{}", String::from_utf8(flipped).unwrap()),
                fp.clone(),
            ),
            (format!("{name}-{}", &hex[..31]), fp.clone()),
            (format!("{name}-{hex}0"), fp.clone()),
            (hex.to_owned(), fp.clone()),
            (writer.clone(), fp.replace("SHA256:", "sha256:")),
            (format!("{name}-{}\u{e9}", &hex[..30]), fp.clone()),
        ] {
            assert!(!writer_matches_key(&w, &f), "{w} {f}");
        }
    }

    /// The signed message is the stored bytes' own body, not a copy made by
    /// writing the body again: signed or parsed, `body_bytes` is the slice of
    /// `bytes` after `{"receipt":`, exactly the canonical body. Stored bytes
    /// that are the canonical envelope with anything around it, or with the
    /// body or signature member written otherwise, are refused.
    #[test]
    fn the_signed_body_is_the_stored_envelope_s_own_and_nothing_around_it_passes() {
        let key = SigningKey::from_seed(&[7; 32]);
        let signed = Receipt::sign(sample_body(), &key).unwrap();
        let parsed = Receipt::parse(signed.bytes()).unwrap();
        fn holds_its_own_body<S>(r: &Receipt<S>) {
            let body = canon::to_canonical(r.body()).unwrap();
            assert_eq!(r.body_bytes(), body.as_slice());
            let at = ENVELOPE_HEAD.len()..ENVELOPE_HEAD.len() + body.len();
            assert!(
                std::ptr::eq(r.body_bytes(), &r.bytes()[at]),
                "a slice of the stored bytes"
            );
            let digest = hex::encode(Sha256::digest(&body));
            assert_eq!(r.id(), format!("sha256:{digest}"));
        }
        holds_its_own_body(&signed);
        holds_its_own_body(&parsed);
        let verified = parsed.verify(key.public()).unwrap();
        assert_eq!(verified.body_bytes(), signed.body_bytes());
        let text = String::from_utf8(signed.bytes().to_vec()).unwrap();
        let body = String::from_utf8(signed.body_bytes().to_vec()).unwrap();
        let signature =
            String::from_utf8(canon::to_canonical(signed.signature()).unwrap()).unwrap();
        for forged in [
            format!("{text} "),
            format!("{text}\n"),
            format!(" {text}"),
            format!("{{\"receipt\": {body},\"signature\":{signature}}}"),
            format!("{{\"receipt\":{body} ,\"signature\":{signature}}}"),
            format!("{{\"receipt\":{body},\"signature\": {signature}}}"),
            format!("{{\"receipt\":{body},\"signature\":{signature} }}"),
            text.replacen("{\"alg\":", "{ \"alg\":", 1),
        ] {
            assert_ne!(forged, text);
            assert!(
                matches!(
                    Receipt::parse(forged.as_bytes()),
                    Err(ReceiptError::Format(canon::CanonError::NotCanonical { .. }))
                ),
                "{forged}"
            );
        }
    }

    /// The v3 members are refused before v3, and in v3 a failed assertion never
    /// passes and dependencies are sorted and unique.
    #[test]
    fn v3_members_belong_to_v3_only() {
        let key = SigningKey::from_seed(&[1; 32]);
        let v3 = sample_v3_body();
        let signed = Receipt::sign(v3.clone(), &key).unwrap();
        let text = String::from_utf8_lossy(signed.bytes()).into_owned();
        assert!(
            text.contains(r#""expected":{"glob":"rustc 1.*"}"#),
            "{text}"
        );
        Receipt::parse(signed.bytes()).expect("a v3 receipt parses");
        let mut v2 = v3.clone();
        v2.schema = SCHEMA_V2.into();
        assert!(Receipt::sign(v2, &key).is_err(), "assertions in v2");
        let mut v2 = v3.clone();
        v2.schema = SCHEMA_V2.into();
        v2.result.assertions.clear();
        assert!(Receipt::sign(v2, &key).is_err(), "dependencies in v2");
        let mut lying = v3.clone();
        lying.result.assertions[0].passed = false;
        lying.result.assertions[0].detail = "exit 1".into();
        assert!(
            Receipt::sign(lying, &key).is_err(),
            "a passed receipt with a failed assertion"
        );
        let mut twice = v3.clone();
        twice
            .subject
            .dependencies
            .push(twice.subject.dependencies[0].clone());
        assert!(Receipt::sign(twice, &key).is_err(), "a dependency twice");
        let mut plain = v3;
        plain.result.assertions.clear();
        plain.subject.dependencies.clear();
        let signed = Receipt::sign(plain, &key).unwrap();
        assert!(!String::from_utf8_lossy(signed.bytes()).contains("assertions"));
        // an empty array is not the one spelling of "none"
        let mut value: serde_json::Value = serde_json::from_slice(signed.bytes()).unwrap();
        value["receipt"]["result"]["assertions"] = serde_json::json!([]);
        let bytes = canon::to_canonical(&value).unwrap();
        assert!(Receipt::parse(&bytes).is_err(), "assertions: [] is refused");
    }

    /// Every object of a real receipt (but the env map) is in MEMBERS, with exactly
    /// the members the types write.
    #[test]
    fn member_table_matches_the_types() {
        let key = SigningKey::from_seed(&[1; 32]);
        // every optional member present: v5 with tests, metrics, artifacts and a key
        let mut body = sample_v5_body();
        body.result.metrics = vec![Metric {
            name: "p99".into(),
            unit: "ms".into(),
            better: Better::Lower,
            value: Some("12.5".into()),
            error: String::new(),
        }];
        let signed = Receipt::sign(body, &key).unwrap();
        let value: serde_json::Value = serde_json::from_slice(signed.bytes()).unwrap();
        fn objects(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
            if let Some(o) = v.as_object() {
                for (k, child) in o {
                    objects(child, format!("{at}/{k}"), out);
                }
                out.push(at);
            }
        }
        let mut found = Vec::new();
        objects(&value, String::new(), &mut found);
        found.retain(|p| p != "/receipt/check/env");
        found.sort();
        let decisions = ["/receipt/acceptance", "/receipt/review"];
        let mut listed: Vec<String> = MEMBERS
            .iter()
            .map(|(p, _)| (*p).to_owned())
            .filter(|p| !decisions.contains(&p.as_str()))
            .collect();
        listed.sort();
        assert_eq!(found, listed);
        for (pointer, members) in MEMBERS {
            if decisions.contains(pointer) {
                continue;
            }
            let members: Vec<&str> = members
                .iter()
                .copied()
                .filter(|m| *pointer != "/receipt" || !["acceptance", "review"].contains(m))
                .collect();
            let mut keys: Vec<&str> = value
                .pointer(pointer)
                .unwrap()
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            assert_eq!(keys, members, "{pointer}");
        }
        Receipt::parse(signed.bytes()).expect("a signed receipt parses");
    }

    /// v1 receipts (no log size or digest) still parse; the v2 members are refused
    /// in v1 and required in v2, and must agree with `log`.
    #[test]
    fn v1_and_v2_each_have_their_own_log_members() {
        let key = SigningKey::from_seed(&[1; 32]);
        let mut v1 = sample_body();
        v1.schema = SCHEMA.into();
        v1.result.log_bytes = None;
        v1.result.log_sha256 = None;
        let signed = Receipt::sign(v1.clone(), &key).unwrap();
        assert!(!String::from_utf8_lossy(signed.bytes()).contains("log_sha256"));
        Receipt::parse(signed.bytes()).expect("a v1 receipt parses");
        let mut mixed = v1.clone();
        mixed.result.log_bytes = Some(3);
        assert!(
            Receipt::sign(mixed, &key).is_err(),
            "log_bytes is not a v1 member"
        );
        let mut v2 = sample_body();
        v2.result.log_sha256 = None;
        assert!(
            Receipt::sign(v2, &key).is_err(),
            "log_sha256 is required in v2"
        );
        let mut v2 = sample_body();
        v2.result.log = None;
        assert!(
            Receipt::sign(v2.clone(), &key).is_err(),
            "a digest without a log"
        );
        v2.result.log_sha256 = Some(None);
        v2.result.log_bytes = Some(0);
        let signed = Receipt::sign(v2, &key).unwrap();
        assert!(String::from_utf8_lossy(signed.bytes()).contains(r#""log_sha256":null"#));
        Receipt::parse(signed.bytes()).expect("a v2 receipt without a log parses");
    }

    fn acceptance_body() -> Body {
        let mut body = sample_body();
        body.schema = SCHEMA_V3.into();
        body.kind = Kind::Acceptance;
        body.check = Check::default();
        body.result = Outcome::default();
        body.supersedes = None;
        body.acceptance = Some(Acceptance {
            status: Status::Rejected,
            trusted: body.subject.commit.clone(),
            decided_at: format_timestamp(0),
            criteria: vec![Criterion {
                kind: CriterionKind::Check,
                name: "test".into(),
                state: State::Failed,
                inputs: body.subject.inputs.clone(),
                evidence: vec![format!("sha256:{}", "ab".repeat(32))],
            }],
            unresolved: vec![Unresolved {
                kind: CriterionKind::Check,
                name: "test".into(),
                state: State::Failed,
                reason: "failed: exit 1".into(),
            }],
        });
        body
    }

    /// A decision body holds its own member instead of `check` and `result`,
    /// exists only in v3, and its status, criteria and unresolved agree.
    #[test]
    fn decision_kinds_are_v3_only_and_self_consistent() {
        let key = SigningKey::from_seed(&[1; 32]);
        let signed = Receipt::sign(acceptance_body(), &key).unwrap();
        let text = String::from_utf8_lossy(signed.bytes()).into_owned();
        assert!(text.contains(r#""kind":"acceptance""#), "{text}");
        assert!(
            !text.contains(r#""check":"#) && !text.contains(r#""result":"#),
            "{text}"
        );
        let parsed = Receipt::parse(signed.bytes()).expect("an acceptance parses");
        assert_eq!(parsed.body().time(), format_timestamp(0));
        assert_eq!(parsed.body().headline(), "acceptance rejected");

        let refused = |edit: fn(&mut Body), why: &str| {
            let mut body = acceptance_body();
            edit(&mut body);
            let err = Receipt::sign(body, &key).expect_err(why).to_string();
            assert!(!err.is_empty(), "{why}");
        };
        refused(
            |b| b.schema = SCHEMA_V2.into(),
            "decisions exist only in v3",
        );
        refused(
            |b| b.acceptance.as_mut().unwrap().status = Status::Accepted,
            "accepted with something unresolved",
        );
        refused(
            |b| b.acceptance.as_mut().unwrap().unresolved.clear(),
            "a failed criterion left out of unresolved",
        );
        refused(
            |b| b.check = sample_body().check,
            "a check member in an acceptance",
        );
        refused(
            |b| b.kind = Kind::Review,
            "a review kind holding an acceptance",
        );
        refused(
            |b| b.subject.dirty = true,
            "a decision about uncommitted changes",
        );
        refused(
            |b| {
                let c = &mut b.acceptance.as_mut().unwrap().criteria[0];
                c.evidence.push(c.evidence[0].clone());
            },
            "evidence cited twice",
        );
        // a check receipt may not carry a decision
        let mut check = sample_body();
        check.review = Some(Review {
            name: "code".into(),
            paths: vec![],
            verdict: Verdict::Approve,
            message: String::new(),
            decided_at: format_timestamp(0),
            accepts: None,
        });
        assert!(Receipt::sign(check, &key).is_err());
        // a v3 check receipt has exactly v2's members
        let mut v3 = sample_body();
        v3.schema = SCHEMA_V3.into();
        Receipt::parse(Receipt::sign(v3, &key).unwrap().bytes()).expect("a v3 check parses");
    }

    /// A v4 review: an accepted regression of check `test`.
    fn accepted_regression_body() -> Body {
        let mut body = acceptance_body();
        body.schema = SCHEMA_V4.into();
        body.kind = Kind::Review;
        body.acceptance = None;
        body.review = Some(Review {
            name: "test".into(),
            paths: vec!["src".into()],
            verdict: Verdict::Approve,
            message: "retired".into(),
            decided_at: format_timestamp(0),
            accepts: Some(Accepts {
                definition: format!("sha256:{}", "cd".repeat(32)),
                tests: vec!["a::one".into(), "b::two".into()],
                metrics: vec!["p99".into()],
            }),
        });
        body
    }

    fn accepts(b: &mut Body) -> &mut Accepts {
        b.review.as_mut().unwrap().accepts.as_mut().unwrap()
    }

    /// An accepted regression is the one v4 decision: an approval naming a
    /// definition and at least one test or metric, each list sorted, unique
    /// and bounded; a v3 review never holds one.
    #[test]
    fn an_accepted_regression_is_a_v4_review_and_only_that() {
        let key = SigningKey::from_seed(&[1; 32]);
        let signed = Receipt::sign(accepted_regression_body(), &key).unwrap();
        let parsed = Receipt::parse(signed.bytes()).expect("it parses back");
        assert_eq!(
            parsed.body().headline(),
            "accepted regression of check test"
        );
        let refused = |edit: &dyn Fn(&mut Body), why: &str| {
            let mut body = accepted_regression_body();
            edit(&mut body);
            let err = Receipt::sign(body, &key).expect_err(why).to_string();
            assert!(err.contains("/receipt/"), "{why}: {err}");
        };
        refused(
            &|b| b.schema = SCHEMA_V3.into(),
            "a v3 review accepts nothing",
        );
        refused(
            &|b| b.review.as_mut().unwrap().accepts = None,
            "a v4 review is an accepted regression",
        );
        refused(
            &|b| b.review.as_mut().unwrap().verdict = Verdict::Reject,
            "a rejection accepts nothing",
        );
        refused(
            &|b| accepts(b).definition = "cd".repeat(32),
            "the definition is a digest",
        );
        refused(
            &|b| {
                accepts(b).tests.clear();
                accepts(b).metrics.clear();
            },
            "it names something",
        );
        refused(&|b| accepts(b).tests.reverse(), "tests sorted");
        refused(&|b| accepts(b).tests.push("b::two".into()), "tests unique");
        refused(
            &|b| accepts(b).tests = vec![String::new()],
            "an empty test name",
        );
        refused(
            &|b| accepts(b).tests = vec!["x".repeat(MAX_TEST_NAME_BYTES + 1)],
            "a test name too long",
        );
        refused(
            &|b| {
                accepts(b).tests = (0..=MAX_ACCEPTED_TESTS)
                    .map(|i| format!("t{i:05}"))
                    .collect()
            },
            "too many tests",
        );
        refused(
            &|b| accepts(b).metrics = vec!["not a name".into()],
            "a metric name",
        );
        refused(
            &|b| accepts(b).metrics = (0..=MAX_METRICS).map(|i| format!("m{i:04}")).collect(),
            "too many metrics",
        );
        refused(
            &|b| accepts(b).metrics = vec!["b".into(), "a".into()],
            "metrics sorted",
        );
        // at the bounds, and with tests only or metrics only, it signs
        for edit in [
            &(|b: &mut Body| accepts(b).tests.clear()) as &dyn Fn(&mut Body),
            &|b: &mut Body| accepts(b).metrics.clear(),
            &|b: &mut Body| {
                accepts(b).tests = (0..MAX_ACCEPTED_TESTS)
                    .map(|i| format!("t{i:05}"))
                    .collect();
                accepts(b).metrics = (0..MAX_METRICS).map(|i| format!("m{i:04}")).collect();
            },
        ] {
            let mut body = accepted_regression_body();
            edit(&mut body);
            Receipt::sign(body, &key).expect("within the bounds");
        }
        // an acceptance is still v3 only
        let mut v4 = acceptance_body();
        v4.schema = SCHEMA_V4.into();
        assert!(Receipt::sign(v4, &key).is_err());
    }

    #[test]
    fn a_missing_null_member_is_an_error_not_none() {
        let key = SigningKey::from_seed(&[1; 32]);
        let mut body = sample_body();
        body.supersedes = None;
        let signed = Receipt::sign(body, &key).unwrap();
        let mut value: serde_json::Value = serde_json::from_slice(signed.bytes()).unwrap();
        value["receipt"]
            .as_object_mut()
            .unwrap()
            .remove("supersedes");
        let bytes = canon::to_canonical(&value).unwrap();
        let err = Receipt::parse(&bytes).unwrap_err();
        assert_eq!(
            err.to_string(),
            "not a v1 receipt: missing member \"supersedes\" in \"/receipt\""
        );
    }

    #[test]
    fn names_are_refname_safe() {
        assert!(is_valid_writer_id(
            "default-0123456789abcdef0123456789abcdef"
        ));
        assert!(!is_valid_writer_id("../x-0123456789abcdef0123456789abcdef"));
        assert!(!is_valid_writer_id("default-0123"));
        let hash = "0123456789abcdef0123456789abcdef";
        assert!(is_valid_writer_id(&format!("ci-2-{hash}")));
        for bad in [
            format!("-{hash}"),
            hash.to_owned(),
            format!("x{hash}"),
            format!("x-{}", hash.to_uppercase()),
            format!("x-{hash}0"),
            format!("x-{}", &hash[1..]),
            format!("x-{}-0", &hash[2..]),
            format!("é-{hash}"),
            format!("{}-{hash}", "a".repeat(33)),
        ] {
            assert!(!is_valid_writer_id(&bad), "{bad:?}");
        }
        assert!(is_valid_check_name("unit-tests.v2"));
        assert!(!is_valid_check_name("a b"));
        assert!(!is_valid_check_name("-x"));
    }
}
