//! The contract file `.gitreceipts`: which checks exist and who may sign.
//!
//! The syntax is git-config (like `.gitmodules`), parsed with gix's config parser so
//! that `git config -f .gitreceipts --list` and this module always agree on what
//! the file says; a plainly written file is read by a faster reader of a strict
//! subset of that syntax, tested to read what gix and git read (`syntax`).
//! Unlike git config, the schema is closed: an unknown section or key is an error
//! with its line number, because a typo such as `requried = true` must never
//! silently turn a required check into an optional one.

use std::path::{Path, PathBuf};
use std::time::Duration;

mod syntax;

use syntax::RawEntry;
#[doc(hidden)]
pub use syntax::disagreement as syntax_disagreement;

use crate::receipt::is_valid_check_name;
use crate::sign::PublicKey;

/// The file name, at the top of the work tree.
pub const FILE_NAME: &str = ".gitreceipts";

pub use crate::store::MAX_CONTRACT_BYTES;

/// One declared check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckDef {
    /// The name in `[check "name"]`.
    pub name: String,
    /// The shell command (`sh -c <run>`).
    pub run: String,
    /// Declared input paths, normalized, sorted, without paths covered by another.
    pub paths: Vec<String>,
    /// Whether `gate` requires it by default.
    pub required: bool,
    /// Names of environment variables whose values are recorded.
    pub env: Vec<String>,
    /// Kill the command after this long.
    pub timeout: Option<Duration>,
    /// Which receipts count for this check: `accept = run` counts only those of
    /// commands `git receipt run` observed, never a `record`ed result;
    /// `accept = run-by:NAMES` only those observed by a signer declared
    /// `observer = true` of one of those names.
    pub accept: Accept,
    /// `accept-protected`: which receipts count when the revision is judged for
    /// a protected branch (the server's pre-receive hook, a push to one, `gate
    /// --protected`); `None`: the same as [`CheckDef::accept`].
    pub accept_protected: Option<Accept>,
    /// Names of the `[assert]` sections to run before it, in declared order.
    pub assertions: Vec<String>,
    /// Names of the `[dependency]` sections it depends on, sorted.
    pub depends: Vec<String>,
    /// Where its runner writes per-test results (`results = FORMAT:PATH`); not
    /// part of the definition digest: it says how to read a run, not what runs.
    pub results: Option<crate::results::ResultsDecl>,
    /// How a failure is judged (`parity`): on its own, or against the trusted
    /// baseline's receipt of the same check (`policy::parity`). Not part of the
    /// definition digest: it says how to judge a run, not what runs.
    pub parity: Parity,
    /// `allow-new-failures`: how many tests may fail here that did not fail at
    /// the baseline while a differential check still reads present (default 0).
    pub allow_new_failures: u32,
    /// The metrics it reports (`metric = NAME UNIT lower|higher [file:PATH] REGEX`),
    /// in declared order; not part of the definition digest.
    pub metrics: Vec<MetricDecl>,
    /// `max-regression = N%`: how far a metric of a differential check may move
    /// the wrong way from the baseline's value, in hundredths of a percent.
    pub max_regression_bp: Option<u32>,
    /// `artifact = GLOB` (repeatable): the files the check produces, recorded
    /// with their sizes and SHA-256s after each run (format v5), in declared
    /// order; not part of the definition digest.
    pub artifacts: Vec<String>,
    /// `self-accept`: whether a regression of this check may be accepted
    /// (`git receipt accept-regression`) by the key that signed the receipt
    /// that regressed (default false: another trusted signer must).
    pub self_accept: bool,
}

/// The most `artifact =` globs one check declares.
pub const MAX_ARTIFACT_GLOBS: usize = 32;

/// One metric a check reports: `metric = NAME UNIT lower|higher [file:PATH] REGEX`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricDecl {
    /// Its name (as a check name is spelled).
    pub name: String,
    /// Its unit (no spaces, e.g. `ms`, `ops/s`, `bytes`).
    pub unit: String,
    /// Which way it improves.
    pub better: crate::receipt::Better,
    /// The file the value is read from (normalized, inside the work tree);
    /// `None`: the check's own output.
    pub file: Option<String>,
    /// The regular expression whose first match (on one line) gives the value:
    /// its first capture group, or the whole match without one.
    pub pattern: String,
}

/// How a check's failure is judged (`parity` in `.gitreceipts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Parity {
    /// A failed receipt fails the check (the default).
    #[default]
    Absolute,
    /// A failed receipt fails the check only when a test fails here that did
    /// not fail in the trusted baseline's receipt of the same check: failures
    /// this change did not introduce do not block it.
    Differential,
}

/// One declared environment assertion: `[assert "name"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssertDef {
    /// The name in `[assert "name"]`.
    pub name: String,
    /// The shell command, before substitutions (`sh -c <run>`).
    pub run: String,
    /// `expect = <glob>` or `match = <regex>`, before substitutions; `None`
    /// records the output without judging it.
    pub expect: Option<crate::receipt::Expectation>,
}

/// One declared sibling repository: `[dependency "name"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependencyDef {
    /// The name in `[dependency "name"]`.
    pub name: String,
    /// Where its local clone is, relative to the top of the work tree.
    pub path: String,
    /// The revision that counts in it (`None`: its HEAD).
    pub rev: Option<String>,
    /// Only these paths of it count (normalized, minimal); empty: all of it.
    pub paths: Vec<String>,
}

/// Which receipts count for a check (`accept` and `accept-protected` in
/// `.gitreceipts`), from the loosest to the strictest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Accept {
    /// Receipts of `run` and of `record` (the default).
    #[default]
    Any,
    /// Only receipts of `run`: a result recorded from elsewhere counts for nothing.
    Run,
    /// Only receipts of `run` signed by the key of a signer of one of these
    /// names that is declared `observer = true` (`run-by:ci,nightly`), sorted and
    /// without repeats. Which keys those are is read from the trusted rules,
    /// never from the revision judged (`TrustSet::observer_keys`). Empty only
    /// when two rules that each name observers share none ([`Accept::meet`]):
    /// then nothing counts.
    RunBy(Vec<String>),
}

/// The prefix of `accept = run-by:NAMES`.
pub const RUN_BY: &str = "run-by:";

impl Accept {
    /// Read an `accept` value: `any`, `run` or `run-by:NAME[,NAME...]`; `None`
    /// for anything else, including `run-by:` naming nobody.
    pub fn parse(value: &str) -> Option<Accept> {
        match value {
            "any" => Some(Accept::Any),
            "run" => Some(Accept::Run),
            _ => {
                let names = value.strip_prefix(RUN_BY)?;
                let mut names: Vec<String> = names
                    .split(',')
                    .map(|n| n.trim().to_owned())
                    .collect::<Vec<_>>();
                if names.iter().any(String::is_empty) {
                    return None;
                }
                names.sort();
                names.dedup();
                Some(Accept::RunBy(names))
            }
        }
    }

    /// What counts under both `self` and `other`: the stricter of the two, and
    /// for two lists of observers the names in both (a receipt must satisfy each
    /// rule). A revision judged against a trusted one is held to this.
    pub fn meet(&self, other: &Accept) -> Accept {
        match (self, other) {
            (Accept::Any, x) | (x, Accept::Any) => x.clone(),
            (Accept::Run, x) | (x, Accept::Run) => x.clone(),
            (Accept::RunBy(a), Accept::RunBy(b)) => {
                Accept::RunBy(a.iter().filter(|n| b.contains(n)).cloned().collect())
            }
        }
    }

    /// Whether a receipt obtained in `mode` can count, before its signer is
    /// asked about ([`Accept::RunBy`] also needs an observer's key).
    pub fn counts_mode(&self, mode: crate::receipt::Mode) -> bool {
        *self == Accept::Any || mode == crate::receipt::Mode::Run
    }

    /// The observers it names: empty for `any` and `run`.
    pub fn observers(&self) -> &[String] {
        match self {
            Accept::RunBy(names) => names,
            _ => &[],
        }
    }
}

impl std::fmt::Display for Accept {
    /// As `.gitreceipts` spells it: `any`, `run`, `run-by:ci,nightly`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Accept::Any => f.write_str("any"),
            Accept::Run => f.write_str("run"),
            Accept::RunBy(names) => write!(f, "{RUN_BY}{}", names.join(",")),
        }
    }
}

impl CheckDef {
    /// The argv that runs this check.
    pub fn argv(&self) -> Vec<String> {
        vec!["sh".into(), "-c".into(), self.run.clone()]
    }

    /// Which receipts count when judging for a protected branch (`protected`:
    /// `accept-protected`, else `accept`) or for any other (`accept`).
    pub fn accept_for(&self, protected: bool) -> &Accept {
        match &self.accept_protected {
            Some(a) if protected => a,
            _ => &self.accept,
        }
    }
}

/// One trusted signer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerDef {
    /// The name in `[signer "name"]`.
    pub name: String,
    /// Its public key.
    pub key: PublicKey,
    /// Receipts started before this time (Unix ms) are not accepted from it.
    pub valid_after: Option<u64>,
    /// Receipts started at or after this time (Unix ms) are not accepted from it.
    pub valid_before: Option<u64>,
    /// The key is revoked: none of its receipts are accepted.
    pub revoked: bool,
    /// `observer = true`: its runs may satisfy `accept = run-by:NAME` (the key
    /// belongs to a runner whose runs the team relies on, such as CI's).
    pub observer: bool,
}

/// One declared review: `[review "name"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewDef {
    /// The name in `[review "name"]`.
    pub name: String,
    /// The paths an approval covers, normalized and minimal; empty for the whole tree.
    pub paths: Vec<String>,
    /// Distinct trusted approvers needed (`required = N`, default 1); 0 means
    /// `gate` does not require the review, `status` still shows it.
    pub required: u32,
    /// Whether the revision's author may approve it (`self-approve`, default false).
    pub self_approve: bool,
}

/// One quarantined test: `[quarantine "name"]`. A failure of exactly this test
/// in a receipt of `check` does not fail the check until the quarantine
/// expires; the test still runs and its failure is still recorded. Read from the
/// contract a revision is judged by (the trusted revision's, when there is one:
/// see `policy::quarantine`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantineDef {
    /// The name in `[quarantine "name"]`.
    pub name: String,
    /// The check whose receipts it applies to.
    pub check: String,
    /// The test's name exactly as receipts record it (`result.tests.list[].name`).
    pub test: String,
    /// Who owns the debt (free text, e.g. an email address).
    pub owner: String,
    /// The first moment it no longer applies, Unix ms (UTC): `expires =
    /// 2027-01-31` means through the end of 2027-01-30, UTC.
    pub expires_ms: u64,
    /// The date as written, normalized to `YYYY-MM-DD` or a UTC time.
    pub expires: String,
    /// Why (free text, optional).
    pub reason: String,
}

/// The longest a test name in `[quarantine] test =` may be, as a receipt's list
/// bounds it (`receipt::MAX_TEST_NAME_BYTES`).
pub const MAX_QUARANTINE_TEXT_BYTES: usize = crate::receipt::MAX_TEST_NAME_BYTES;

/// A parsed `.gitreceipts`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contract {
    /// Checks in file order.
    pub checks: Vec<CheckDef>,
    /// Signers in file order.
    pub signers: Vec<SignerDef>,
    /// Environment assertions in file order.
    pub assertions: Vec<AssertDef>,
    /// Sibling repositories in file order.
    pub dependencies: Vec<DependencyDef>,
    /// Reviews in file order.
    pub reviews: Vec<ReviewDef>,
    /// Quarantined tests in file order.
    pub quarantines: Vec<QuarantineDef>,
}

/// The git command that shows the syntax error in `file`: `git config -f FILE
/// --list` for a file on disk; for a committed one (named `.gitreceipts at REV`,
/// which is no path) `git config --blob REV:.gitreceipts --list`.
pub fn syntax_check_command(file: &Path) -> String {
    let name = file.to_string_lossy();
    match name.strip_prefix(&format!("{FILE_NAME} at ")) {
        Some(rev) if !rev.is_empty() && !rev.contains(char::is_whitespace) => {
            format!("git config --blob {rev}:{FILE_NAME} --list")
        }
        Some(_) => format!("git config --blob <commit>:{FILE_NAME} --list"),
        None => format!("git config -f {name} --list"),
    }
}

/// Why a contract file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// Not git-config syntax.
    #[error("{file}:{line}: not valid git-config syntax: {message}")]
    Syntax {
        /// The file.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// A section, key or value the schema does not allow.
    #[error("{file}:{line}: {message}")]
    Invalid {
        /// The file.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
        /// How to fix it, in words (the CLI shows it as a hint).
        hint: String,
    },
    /// The contract is not a regular file (a symlink, directory, fifo, ...).
    #[error("{file} is {kind}, not a regular file; git-receipt reads only a regular .gitreceipts")]
    NotAFile {
        /// The file.
        file: PathBuf,
        /// What it is instead, e.g. `a symbolic link`.
        kind: String,
    },
    /// The file is larger than [`MAX_CONTRACT_BYTES`] (refused unread).
    #[error(
        "{file} is {size} bytes, over the {MAX_CONTRACT_BYTES}-byte (4 MiB) limit for a contract, so it is not read"
    )]
    TooLarge {
        /// The file.
        file: PathBuf,
        /// Its size in bytes.
        size: u64,
    },
    /// The file could not be read.
    #[error("cannot read {file}: {source}")]
    Io {
        /// The file.
        file: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl Contract {
    /// Read `.gitreceipts` from a work tree; a missing file is an empty contract.
    ///
    /// Only a regular file is read: a symlink (which could point anywhere, such as
    /// `/etc/shadow`, while `status` reads the committed link itself), a directory
    /// or a fifo is refused, so what `run` reads is what git commits.
    pub fn load(workdir: &Path) -> Result<Contract, ContractError> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let file = workdir.join(FILE_NAME);
        let not_regular = |kind: &str| ContractError::NotAFile {
            file: file.clone(),
            kind: kind.to_owned(),
        };
        // O_NOFOLLOW refuses a symlink at open; O_NONBLOCK keeps a fifo from
        // blocking the open, and the fstat below refuses it.
        let f = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&file)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Contract::default()),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(not_regular("a symbolic link"));
            }
            Err(source) => return Err(ContractError::Io { file, source }),
        };
        let meta = f.metadata().map_err(|source| ContractError::Io {
            file: file.clone(),
            source,
        })?;
        if !meta.is_file() {
            use std::os::unix::fs::FileTypeExt;
            let t = meta.file_type();
            return Err(not_regular(if t.is_dir() {
                "a directory"
            } else if t.is_fifo() {
                "a fifo"
            } else if t.is_socket() {
                "a socket"
            } else {
                "a device"
            }));
        }
        if meta.len() > MAX_CONTRACT_BYTES {
            return Err(ContractError::TooLarge {
                file,
                size: meta.len(),
            });
        }
        // bounded even if the file grows between the fstat and the read
        let mut bytes = Vec::new();
        f.take(MAX_CONTRACT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| ContractError::Io {
                file: file.clone(),
                source,
            })?;
        if bytes.len() as u64 > MAX_CONTRACT_BYTES {
            return Err(ContractError::TooLarge {
                file,
                size: bytes.len() as u64,
            });
        }
        Contract::parse(&bytes, Path::new(FILE_NAME))
    }

    /// Find a check by name.
    pub fn check(&self, name: &str) -> Option<&CheckDef> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// The assertions `check` declares, in its order.
    pub fn assertions_of(&self, check: &CheckDef) -> Vec<AssertDef> {
        check
            .assertions
            .iter()
            .filter_map(|n| self.assertions.iter().find(|a| &a.name == n).cloned())
            .collect()
    }

    /// The dependencies `check` declares, sorted by name.
    pub fn dependencies_of(&self, check: &CheckDef) -> Vec<DependencyDef> {
        check
            .depends
            .iter()
            .filter_map(|n| self.dependencies.iter().find(|d| &d.name == n).cloned())
            .collect()
    }

    /// Parse the bytes of a contract; `file` only labels errors. A command often
    /// reads the same `.gitreceipts` twice (the revision and its trust root are one
    /// commit on the default branch), and turning a thousand signers' keys into
    /// curve points is most of a gate's time, so a successful parse is remembered
    /// for the life of the process, by content.
    pub fn parse(bytes: &[u8], file: &Path) -> Result<Contract, ContractError> {
        type Memo = std::collections::HashMap<Vec<u8>, Contract>;
        static PARSED: std::sync::Mutex<Option<Memo>> = std::sync::Mutex::new(None);
        if let Some(c) = PARSED
            .lock()
            .ok()
            .and_then(|m| m.as_ref().and_then(|m| m.get(bytes).cloned()))
        {
            return Ok(c);
        }
        let contract = Contract::parse_uncached(bytes, file)?;
        if let Ok(mut memo) = PARSED.lock() {
            memo.get_or_insert_with(Default::default)
                .insert(bytes.to_vec(), contract.clone());
        }
        Ok(contract)
    }

    /// [`Contract::parse`] of git blob `id`, whose bytes `read` returns, remembered
    /// by the id for the life of the process: a blob id names its bytes, so a
    /// contract met again (the revision, its trust root and the default branch's
    /// tip are often one blob) is neither read, nor hashed, nor copied again.
    pub fn parse_blob<E: From<ContractError>>(
        id: gix::ObjectId,
        file: &Path,
        read: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<std::sync::Arc<Contract>, E> {
        type Memo = std::collections::HashMap<gix::ObjectId, std::sync::Arc<Contract>>;
        static PARSED: std::sync::Mutex<Option<Memo>> = std::sync::Mutex::new(None);
        if let Some(c) = PARSED
            .lock()
            .ok()
            .and_then(|m| m.as_ref().and_then(|m| m.get(&id).cloned()))
        {
            return Ok(c);
        }
        let contract = std::sync::Arc::new(Contract::parse_uncached(&read()?, file)?);
        if let Ok(mut memo) = PARSED.lock() {
            memo.get_or_insert_with(Default::default)
                .insert(id, contract.clone());
        }
        Ok(contract)
    }

    fn parse_uncached(bytes: &[u8], file: &Path) -> Result<Contract, ContractError> {
        // A value converted lossily (`path = src\xff`) would name something else
        // than what was written, so the contract is UTF-8 throughout.
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let at = e.valid_up_to();
                return Err(ContractError::Invalid {
                file: file.to_owned(),
                line: 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count(),
                message: format!(
                    "not UTF-8 (byte {} of the line)",
                    1 + at - bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
                ),
                hint: "write .gitreceipts in UTF-8 (names, paths and commands as they are in the repository)".into(),
            });
            }
        };
        build(syntax::entries(text, file)?, file)
    }
}

fn parse_bool(value: Option<&str>) -> Option<bool> {
    match value.map(|v| v.to_ascii_lowercase()) {
        None => Some(true),
        Some(v) => match v.as_str() {
            "true" | "yes" | "on" | "1" => Some(true),
            "false" | "no" | "off" | "0" | "" => Some(false),
            _ => None,
        },
    }
}

/// The longest `timeout` accepted: 7 days. A check is killed after it; a longer
/// value is a mistake (or an attempt to overflow the clock), not a plan.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

/// `90`, `90s`, `10m`, `1h`, up to [`MAX_TIMEOUT`].
fn parse_duration(value: &str) -> Option<Duration> {
    let v = value.trim();
    let (digits, unit) = match v.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => v.split_at(i),
        None => (v, "s"),
    };
    let n: u64 = digits.parse().ok()?;
    let secs = match unit {
        "s" => n,
        "m" => n.checked_mul(60)?,
        "h" => n.checked_mul(3600)?,
        _ => return None,
    };
    (secs > 0 && secs <= MAX_TIMEOUT.as_secs()).then(|| Duration::from_secs(secs))
}

pub use crate::receipt::normalize_path;

/// `NAME UNIT lower|higher [file:PATH] REGEX` of `metric =`.
fn parse_metric(v: &str) -> Result<MetricDecl, String> {
    let mut rest = v.trim_start();
    let mut word = || -> Option<&str> {
        let end = rest.find(char::is_whitespace)?;
        let (w, r) = rest.split_at(end);
        rest = r.trim_start();
        Some(w)
    };
    let (Some(name), Some(unit), Some(better)) = (word(), word(), word()) else {
        return Err("it needs a name, a unit, lower or higher, and a regex".into());
    };
    if !is_valid_check_name(name) {
        return Err(format!(
            "{name:?} is not a metric name (letters, digits, '.', '_', '-')"
        ));
    }
    if unit.len() > crate::receipt::MAX_METRIC_UNIT_BYTES || unit.chars().any(char::is_control) {
        return Err(format!(
            "unit {unit:?} is over {} bytes or holds control characters",
            crate::receipt::MAX_METRIC_UNIT_BYTES
        ));
    }
    let better = match better {
        "lower" => crate::receipt::Better::Lower,
        "higher" => crate::receipt::Better::Higher,
        other => {
            return Err(format!(
                "{other:?} is not `lower` or `higher` (which way is better)"
            ));
        }
    };
    let mut file = None;
    if let Some(after) = rest.strip_prefix("file:") {
        let end = after.find(char::is_whitespace).unwrap_or(after.len());
        let Some(p) = normalize_path(&after[..end]) else {
            return Err(format!(
                "file:{} is not a path inside the work tree",
                &after[..end]
            ));
        };
        file = Some(p);
        rest = after[end..].trim_start();
    }
    let pattern = rest.trim_end();
    if pattern.is_empty() {
        return Err("it has no regex to find the value with".into());
    }
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("{pattern:?} is not a regular expression: {e}"))?;
    if re.captures_len() > 2 {
        return Err(format!(
            "{pattern:?} has more than one capture group; the value is the first, so make the others (?:...)"
        ));
    }
    Ok(MetricDecl {
        name: name.to_owned(),
        unit: unit.to_owned(),
        better,
        file,
        pattern: pattern.to_owned(),
    })
}

/// `5%`, `0.5%`, `12.25%` as hundredths of a percent, 0 to 1000%.
fn parse_percent(v: &str) -> Option<u32> {
    let n = v.trim().strip_suffix('%')?.trim();
    let (whole, frac) = n.split_once('.').unwrap_or((n, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 2 {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) || (n.contains('.') && frac.is_empty()) {
        return None;
    }
    let whole: u32 = whole.parse().ok()?;
    let frac: u32 = format!("{frac:0<2}").parse().ok()?;
    let bp = whole.checked_mul(100)?.checked_add(frac)?;
    (bp <= 100_000).then_some(bp)
}

/// Sort, dedupe, and drop paths inside another declared path.
pub fn minimal_paths(mut paths: Vec<String>) -> Vec<String> {
    paths.sort();
    paths.dedup();
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        let covered = out.iter().any(|q| {
            p.strip_prefix(q.as_str())
                .is_some_and(|r| r.starts_with('/'))
        });
        if !covered {
            out.push(p);
        }
    }
    out
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn build(entries: Vec<RawEntry<'_>>, file: &Path) -> Result<Contract, ContractError> {
    let err = |line: usize, message: String, hint: &str| ContractError::Invalid {
        file: file.to_owned(),
        line,
        message,
        hint: hint.to_owned(),
    };
    let mut contract = Contract::default();
    // (check, key, referenced section, line) of every `assert =` and `depends =`
    let mut references: Vec<(String, String, String, usize)> = Vec::new();
    let mut assertions: Vec<(AssertDef, usize)> = Vec::new();
    let mut dependencies: Vec<(DependencyDef, usize)> = Vec::new();
    let mut quarantines: Vec<(QuarantineDef, usize)> = Vec::new();
    // (name, section line, run, paths, required, env, timeout)
    let mut checks: Vec<(CheckDef, usize, bool)> = Vec::new();
    // (name, section line, key, valid-after, valid-before, revoked, observer)
    #[allow(clippy::type_complexity)]
    let mut signers: Vec<(
        &str,
        usize,
        Option<PublicKey>,
        Option<u64>,
        Option<u64>,
        bool,
        bool,
    )> = Vec::new();
    // (check, line, names) of every `accept = run-by:` and `accept-protected =
    // run-by:`: each name must be a signer of this file declared an observer
    let mut observers_named: Vec<(String, usize, Vec<String>)> = Vec::new();
    // by name, borrowed from the entries: a team's contract may list a thousand
    let mut signer_at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    // one `key` per signer (two are refused, none is an error below): reserved
    // once, not grown by copying
    let keys = entries
        .iter()
        .filter(|e| &*e.head.name == "signer" && &*e.key == "key")
        .count();
    signers.reserve(keys);
    signer_at.reserve(keys);
    for e in &entries {
        let sub: &str = e.head.sub.as_deref().unwrap_or_default();
        match &*e.head.name {
            "check" => {
                let (check, _, has_run) = named_section(
                    &mut checks,
                    |(c, _, _)| &c.name,
                    ("check", "check"),
                    e,
                    &err,
                    || {
                        (
                            CheckDef {
                                name: sub.to_owned(),
                                run: String::new(),
                                paths: Vec::new(),
                                required: false,
                                env: Vec::new(),
                                timeout: None,
                                accept: Accept::Any,
                                accept_protected: None,
                                assertions: Vec::new(),
                                depends: Vec::new(),
                                results: None,
                                parity: Parity::Absolute,
                                allow_new_failures: 0,
                                metrics: Vec::new(),
                                max_regression_bp: None,
                                artifacts: Vec::new(),
                                self_accept: false,
                            },
                            e.head.line,
                            false,
                        )
                    },
                )?;
                let value = e.value.as_deref().map(str::to_owned);
                match &*e.key {
                    "run" => {
                        let v = value.unwrap_or_default();
                        if e.trailing_comment {
                            return Err(err(
                                e.line,
                                format!(
                                    "check {sub:?}: `run` is cut at a `;` or `#`, which start a comment in git-config; the command would be {v:?}"
                                ),
                                "quote the whole command: run = \"a; b\"",
                            ));
                        }
                        if v.trim().is_empty() {
                            return Err(err(
                                e.line,
                                format!("check {sub:?}: `run` is empty"),
                                "give the command, e.g. run = cargo test",
                            ));
                        }
                        check.run = v;
                        *has_run = true;
                    }
                    "path" => {
                        let v = value.unwrap_or_default();
                        let p = declared_path("check", sub, &v, e.line, &err)?;
                        check.paths.push(p);
                    }
                    "required" => {
                        check.required = parse_bool(value.as_deref()).ok_or_else(|| {
                            err(
                                e.line,
                                format!(
                                    "check {sub:?}: required = {:?} is not a boolean",
                                    value.unwrap_or_default()
                                ),
                                "write required = true or required = false",
                            )
                        })?;
                    }
                    "env" => {
                        let v = value.unwrap_or_default();
                        if !is_env_name(&v) {
                            return Err(err(
                                e.line,
                                format!(
                                    "check {sub:?}: env {v:?} is not an environment variable name"
                                ),
                                "write one name per line, e.g. env = RUSTFLAGS",
                            ));
                        }
                        if !check.env.contains(&v) {
                            check.env.push(v);
                        }
                    }
                    "timeout" => {
                        let v = value.unwrap_or_default();
                        check.timeout = Some(parse_duration(&v).ok_or_else(|| {
                            err(
                                e.line,
                                format!(
                                    "check {sub:?}: timeout {v:?} is not a duration from 1s to 7 days"
                                ),
                                "write seconds or a number with s, m or h, e.g. timeout = 10m (at most 168h)",
                            )
                        })?);
                    }
                    "accept" | "accept-protected" => {
                        let v = value.unwrap_or_default();
                        let Some(accept) = Accept::parse(v.trim()) else {
                            return Err(err(
                                e.line,
                                format!(
                                    "check {sub:?}: {} = {:?} is not `any`, `run` or `run-by:NAMES`",
                                    e.key,
                                    crate::text::escape(&v)
                                ),
                                &format!(
                                    "write {} = run to count only results `git receipt run` observed, or {} = run-by:ci to count only runs by signers declared observer = true (comma-separated names)",
                                    e.key, e.key
                                ),
                            ));
                        };
                        if let Accept::RunBy(names) = &accept {
                            observers_named.push((sub.to_owned(), e.line, names.clone()));
                        }
                        if e.key == "accept" {
                            check.accept = accept;
                        } else {
                            check.accept_protected = Some(accept);
                        }
                    }
                    "metric" => {
                        let v = value.unwrap_or_default();
                        let m = parse_metric(&v).map_err(|why| {
                            err(
                                e.line,
                                format!("check {sub:?}: metric = {:?}: {why}", crate::text::escape(&v)),
                                "write metric = NAME UNIT lower|higher [file:PATH] REGEX, e.g. metric = p99 ms lower ^p99: ([0-9.]+) ms",
                            )
                        })?;
                        if check.metrics.iter().any(|x| x.name == m.name) {
                            return Err(err(
                                e.line,
                                format!("check {sub:?} declares metric {:?} twice", m.name),
                                "give each metric of a check its own name",
                            ));
                        }
                        if check.metrics.len() >= crate::receipt::MAX_METRICS {
                            return Err(err(
                                e.line,
                                format!(
                                    "check {sub:?} declares more than {} metrics",
                                    crate::receipt::MAX_METRICS
                                ),
                                "keep the metrics that decide something",
                            ));
                        }
                        check.metrics.push(m);
                    }
                    "max-regression" => {
                        let v = value.unwrap_or_default();
                        check.max_regression_bp = Some(parse_percent(&v).ok_or_else(|| {
                            err(
                                e.line,
                                format!("check {sub:?}: max-regression = {v:?} is not a percentage from 0% to 1000%"),
                                "write max-regression = 5% (a metric may move 5% the wrong way from the baseline)",
                            )
                        })?);
                    }
                    "parity" => {
                        let v = value.unwrap_or_default();
                        check.parity = match v.as_str() {
                            "absolute" => Parity::Absolute,
                            "differential" => Parity::Differential,
                            _ => {
                                return Err(err(
                                    e.line,
                                    format!(
                                        "check {sub:?}: parity = {v:?} is not `absolute` or `differential`"
                                    ),
                                    "write parity = differential to block only failures that are not failing on the trusted branch",
                                ));
                            }
                        };
                    }
                    "self-accept" => {
                        check.self_accept = parse_bool(value.as_deref()).ok_or_else(|| {
                            err(
                                e.line,
                                format!(
                                    "check {sub:?}: self-accept = {:?} is not a boolean",
                                    value.unwrap_or_default()
                                ),
                                "write self-accept = true to let whoever ran a regression accept it, or leave it out",
                            )
                        })?;
                    }
                    "allow-new-failures" => {
                        let v = value.unwrap_or_default();
                        check.allow_new_failures = match v.trim().parse::<u32>() {
                            Ok(n) if n <= 100_000 => n,
                            _ => {
                                return Err(err(
                                    e.line,
                                    format!(
                                        "check {sub:?}: allow-new-failures = {v:?} is not a number of tests from 0 to 100000"
                                    ),
                                    "write allow-new-failures = 0 (the default) to block every new failure",
                                ));
                            }
                        };
                    }
                    "artifact" => {
                        let v = value.unwrap_or_default();
                        let glob = crate::receipt::normalize_path(v.trim()).filter(|g| {
                            g.len() <= crate::receipt::MAX_ARTIFACT_PATH_BYTES
                                && !g.chars().any(char::is_control)
                                && g != ".git"
                                && !g.starts_with(".git/")
                        });
                        let Some(glob) = glob else {
                            return Err(err(
                                e.line,
                                format!(
                                    "check {sub:?}: artifact = {:?} is not a relative path or glob inside the work tree",
                                    crate::text::escape(&v)
                                ),
                                "write artifact = GLOB relative to the top of the work tree, e.g. artifact = target/release/app or artifact = dist/*.tar.gz",
                            ));
                        };
                        if check.artifacts.len() >= MAX_ARTIFACT_GLOBS {
                            return Err(err(
                                e.line,
                                format!(
                                    "check {sub:?} declares more than {MAX_ARTIFACT_GLOBS} artifact globs"
                                ),
                                "match several files with one glob, e.g. artifact = dist/*",
                            ));
                        }
                        if !check.artifacts.contains(&glob) {
                            check.artifacts.push(glob);
                        }
                    }
                    "results" => {
                        let v = value.unwrap_or_default();
                        if check.results.is_some() {
                            return Err(err(
                                e.line,
                                format!("check {sub:?} declares `results` twice"),
                                "keep one results = FORMAT:PATH line per check",
                            ));
                        }
                        let decl = crate::results::parse_declaration(&v).map_err(|d| {
                            err(e.line, format!("check {sub:?}: {}", d.message), &d.hint)
                        })?;
                        check.results = Some(decl);
                    }
                    "assert" | "depends" => {
                        let v = value.unwrap_or_default();
                        let names: Vec<&str> = v.split_whitespace().collect();
                        if names.is_empty() {
                            return Err(err(
                                e.line,
                                format!("check {sub:?}: `{}` names nothing", e.key),
                                "name one or more sections, e.g. assert = rust python",
                            ));
                        }
                        for n in names {
                            references.push((
                                sub.to_owned(),
                                e.key.to_string(),
                                n.to_owned(),
                                e.line,
                            ));
                            let list = if e.key == "assert" {
                                &mut check.assertions
                            } else {
                                &mut check.depends
                            };
                            if !list.iter().any(|x| x == n) {
                                list.push(n.to_owned());
                            }
                        }
                    }
                    other => {
                        return Err(err(
                            e.line,
                            format!("check {sub:?}: unknown key {other:?}"),
                            "a check takes run, path, required, env, timeout, accept, accept-protected, assert, depends, results, parity, allow-new-failures, metric, max-regression, self-accept and artifact",
                        ));
                    }
                }
            }
            "signer" => {
                if sub.is_empty() {
                    return Err(err(
                        e.head.line,
                        "a signer section needs a name".into(),
                        "write [signer \"name\"]",
                    ));
                }
                // by name through a map: a team's contract may list a thousand
                let idx = match signer_at.get(sub) {
                    Some(&i) => i,
                    None => {
                        signers.push((sub, e.head.line, None, None, None, false, false));
                        signer_at.insert(sub, signers.len() - 1);
                        signers.len() - 1
                    }
                };
                let v = e.value.as_deref().unwrap_or_default();
                let entry = &mut signers[idx];
                match &*e.key {
                    "key" => {
                        if entry.2.is_some() {
                            return Err(err(
                                e.line,
                                format!("signer {sub:?} is given two keys"),
                                "give each signer one key; use another name for another key",
                            ));
                        }
                        // The point is decoded when the key first checks a
                        // signature: a decision reads one or two of maybe a
                        // thousand signers (`verify --trust` names unusable ones).
                        let key = PublicKey::from_openssh_deferred(v).map_err(|why| {
                            err(
                                e.line,
                                format!("signer {sub:?}: {why}"),
                                "paste the public key line, e.g. the output of `git receipt key show`",
                            )
                        })?;
                        entry.2 = Some(key);
                    }
                    "valid-after" | "valid-before" => {
                        let t = crate::clock::parse_signer_time(v).ok_or_else(|| {
                            err(
                                e.line,
                                format!("signer {sub:?}: {} {v:?} is not a time", e.key),
                                "write a UTC date or time: 2026-01-31, 2026-01-31T12:00:00Z or 20260131",
                            )
                        })?;
                        if e.key == "valid-after" {
                            entry.3 = Some(t);
                        } else {
                            entry.4 = Some(t);
                        }
                    }
                    "revoked" => {
                        entry.5 = parse_bool(e.value.as_deref()).ok_or_else(|| {
                            err(
                                e.line,
                                format!("signer {sub:?}: revoked = {v:?} is not a boolean"),
                                "write revoked = true",
                            )
                        })?;
                    }
                    "observer" => {
                        entry.6 = parse_bool(e.value.as_deref()).ok_or_else(|| {
                            err(
                                e.line,
                                format!(
                                    "signer {sub:?}: observer = {:?} is not a boolean",
                                    crate::text::escape(v)
                                ),
                                "write observer = true (its runs satisfy accept = run-by:NAME) or observer = false",
                            )
                        })?;
                    }
                    other => {
                        return Err(err(
                            e.line,
                            format!("signer {sub:?}: unknown key {other:?}"),
                            "a signer takes key, valid-after, valid-before, revoked and observer",
                        ));
                    }
                }
            }
            "assert" => build_assert(&mut assertions, e, sub, &err)?,
            "dependency" => build_dependency(&mut dependencies, e, sub, &err)?,
            "review" => {
                let review = named_section(
                    &mut contract.reviews,
                    |r| &r.name,
                    ("review", "review"),
                    e,
                    &err,
                    || ReviewDef {
                        name: sub.to_owned(),
                        paths: Vec::new(),
                        required: 1,
                        self_approve: false,
                    },
                )?;
                let v = e.value.as_deref().map(str::to_owned).unwrap_or_default();
                match &*e.key {
                    "path" => {
                        let p = declared_path("review", sub, &v, e.line, &err)?;
                        review.paths.push(p);
                    }
                    "required" => {
                        review.required = match v.trim().parse::<u32>() {
                            Ok(n) if n <= 100 => n,
                            _ => {
                                return Err(err(
                                    e.line,
                                    format!(
                                        "review {sub:?}: required = {v:?} is not a number of approvals from 0 to 100"
                                    ),
                                    "write required = 2 for two distinct trusted approvers",
                                ));
                            }
                        };
                    }
                    "self-approve" => {
                        review.self_approve = parse_bool(e.value.as_deref()).ok_or_else(|| {
                            err(
                                e.line,
                                format!("review {sub:?}: self-approve = {v:?} is not a boolean"),
                                "write self-approve = true or self-approve = false",
                            )
                        })?;
                    }
                    other => {
                        return Err(err(
                            e.line,
                            format!("review {sub:?}: unknown key {other:?}"),
                            "a review takes path, required and self-approve",
                        ));
                    }
                }
            }
            "quarantine" => {
                let q = named_section(
                    &mut quarantines,
                    |(q, _)| &q.name,
                    ("quarantine", "quarantine"),
                    e,
                    &err,
                    || {
                        (
                            QuarantineDef {
                                name: sub.to_owned(),
                                check: String::new(),
                                test: String::new(),
                                owner: String::new(),
                                expires_ms: 0,
                                expires: String::new(),
                                reason: String::new(),
                            },
                            e.head.line,
                        )
                    },
                )?;
                let q = &mut q.0;
                let v = e.value.as_deref().unwrap_or_default();
                let text = |what: &str| -> Result<String, ContractError> {
                    if v.is_empty() || v.len() > MAX_QUARANTINE_TEXT_BYTES || v.contains('\0') {
                        return Err(err(
                            e.line,
                            format!(
                                "quarantine {sub:?}: {what} = {:?} must be 1 to {MAX_QUARANTINE_TEXT_BYTES} bytes",
                                crate::text::escape(v)
                            ),
                            "write the value on one line, e.g. owner = ada@example.com",
                        ));
                    }
                    Ok(v.to_owned())
                };
                match &*e.key {
                    "check" => {
                        if !is_valid_check_name(v) {
                            return Err(err(
                                e.line,
                                format!("quarantine {sub:?}: check = {v:?} is not a check name"),
                                "name the check whose receipts record the test, e.g. check = test",
                            ));
                        }
                        q.check = v.to_owned();
                    }
                    "test" => q.test = text("test")?,
                    "owner" => q.owner = text("owner")?,
                    "reason" => q.reason = text("reason")?,
                    "expires" => {
                        let t = v.trim();
                        let ms = (t.len() >= 10)
                            .then(|| crate::clock::parse_signer_time(t))
                            .flatten();
                        let Some(ms) = ms else {
                            return Err(err(
                                e.line,
                                format!("quarantine {sub:?}: expires = {v:?} is not a date"),
                                "write expires = 2027-01-31 (the quarantine ends at the start of that day, UTC)",
                            ));
                        };
                        q.expires_ms = ms;
                        q.expires = t.to_owned();
                    }
                    other => {
                        return Err(err(
                            e.line,
                            format!("quarantine {sub:?}: unknown key {other:?}"),
                            "a quarantine takes check, test, owner, expires and reason",
                        ));
                    }
                }
            }
            "" => {
                return Err(err(
                    e.line,
                    format!("key {:?} outside any section", e.key),
                    "put keys under [check \"name\"] or [signer \"name\"]",
                ));
            }
            other => {
                return Err(err(
                    e.head.line,
                    format!("unknown section [{other}]"),
                    "the sections are [check \"name\"], [signer \"name\"], [assert \"name\"], [dependency \"name\"], [review \"name\"] and [quarantine \"name\"]",
                ));
            }
        }
    }
    // collected in place: the thousand signers' buffer becomes the contract's
    contract.signers = signers
        .into_iter()
        .map(
            |(name, line, key, valid_after, valid_before, revoked, observer)| {
                let Some(key) = key else {
                    return Err(err(
                        line,
                        format!("signer {name:?} has no `key`"),
                        "add key = ssh-ed25519 AAAA... (the output of `git receipt key show`)",
                    ));
                };
                Ok(SignerDef {
                    name: name.to_owned(),
                    key,
                    valid_after,
                    valid_before,
                    revoked,
                    observer,
                })
            },
        )
        .collect::<Result<_, _>>()?;
    for (check, line, names) in observers_named {
        for name in names {
            let declared = contract.signers.iter().filter(|s| s.name == name);
            if declared.clone().any(|s| s.observer) {
                continue;
            }
            let name = crate::text::escape(&name);
            let (message, hint) = if declared.count() == 0 {
                (
                    format!(
                        "check {check:?}: run-by names {name:?}, which is no [signer] of this file"
                    ),
                    format!(
                        "declare the signer whose runs count, with observer = true:\n    [signer \"{name}\"]\n        key = ssh-ed25519 AAAA...\n        observer = true"
                    ),
                )
            } else {
                (
                    format!(
                        "check {check:?}: run-by names signer {name:?}, which is not declared observer = true"
                    ),
                    format!(
                        "add observer = true under [signer \"{name}\"] if its runs are to count (a key that runs what it signs, such as CI's)"
                    ),
                )
            };
            return Err(err(line, message, &hint));
        }
    }
    for (mut check, line, has_run) in checks {
        if !has_run {
            return Err(err(
                line,
                format!("check {:?} has no `run`", check.name),
                "add run = <command> to the section",
            ));
        }
        if check.max_regression_bp.is_some()
            && (check.metrics.is_empty() || check.parity != Parity::Differential)
        {
            return Err(err(
                line,
                format!(
                    "check {:?} sets max-regression, which needs `parity = differential` and at least one `metric`",
                    check.name
                ),
                "max-regression bounds how far a metric may move from the baseline's: declare metric = ... and parity = differential",
            ));
        }
        if check.parity == Parity::Differential
            && check.results.is_none()
            && check.max_regression_bp.is_none()
        {
            return Err(err(
                line,
                format!(
                    "check {:?} is `parity = differential` but declares no `results` (nor metrics with a max-regression)",
                    check.name
                ),
                "a differential check compares per-test results: add results = FORMAT:PATH, e.g. results = junit:target/junit.xml",
            ));
        }
        check.paths = minimal_paths(std::mem::take(&mut check.paths));
        check.env.sort();
        check.depends.sort();
        contract.checks.push(check);
    }
    for (a, line) in assertions {
        if a.run.is_empty() {
            return Err(err(
                line,
                format!("assert {:?} has no `run`", a.name),
                "add run = <command>, e.g. run = rustc --version",
            ));
        }
        contract.assertions.push(a);
    }
    for (d, line) in dependencies {
        if d.path.is_empty() {
            return Err(err(
                line,
                format!("dependency {:?} has no `path`", d.name),
                "add path = <its local clone, relative to the work tree>, e.g. path = ../proto",
            ));
        }
        contract.dependencies.push(d);
    }
    for (check, key, name, line) in references {
        let (known, section) = if key == "assert" {
            (contract.assertions.iter().any(|a| a.name == name), "assert")
        } else {
            (
                contract.dependencies.iter().any(|d| d.name == name),
                "dependency",
            )
        };
        if !known {
            return Err(err(
                line,
                format!("check {check:?}: {key} = {name:?} names no [{section} {name:?}] section"),
                &format!("declare it:\n    [{section} \"{name}\"]\n        ..."),
            ));
        }
    }
    for review in contract.reviews.iter_mut() {
        review.paths = minimal_paths(std::mem::take(&mut review.paths));
    }
    for (q, line) in quarantines {
        let lacks = [
            ("check", q.check.is_empty()),
            ("test", q.test.is_empty()),
            ("owner", q.owner.is_empty()),
            ("expires", q.expires.is_empty()),
        ];
        if let Some((key, _)) = lacks.iter().find(|(_, empty)| *empty) {
            return Err(err(
                line,
                format!("quarantine {:?} has no `{key}`", q.name),
                "a quarantine needs check, test, owner and expires, e.g.\n    check = test\n    test = tests::login::times_out\n    owner = ada@example.com\n    expires = 2027-01-31",
            ));
        }
        if contract.check(&q.check).is_none() {
            return Err(err(
                line,
                format!(
                    "quarantine {:?}: check = {:?} names no [check {:?}] section",
                    q.name, q.check, q.check
                ),
                "name a check declared in this file",
            ));
        }
        contract.quarantines.push(q);
    }
    Ok(contract)
}

/// The definition `[kind "name"]` (`e`'s section) builds: found by its name in
/// `list`, or made by `make` and added the first time the name is met. A name
/// that is no valid check name is an error on the section's line, calling the
/// definition `noun`.
fn named_section<'l, T>(
    list: &'l mut Vec<T>,
    name_of: impl Fn(&T) -> &String,
    (kind, noun): (&str, &str),
    e: &RawEntry<'_>,
    err: &impl Fn(usize, String, &str) -> ContractError,
    make: impl FnOnce() -> T,
) -> Result<&'l mut T, ContractError> {
    let sub: &str = e.head.sub.as_deref().unwrap_or_default();
    if !is_valid_check_name(sub) {
        return Err(err(
            e.head.line,
            format!("{sub:?} is not a valid {noun} name"),
            &format!("write [{kind} \"name\"] with letters, digits, '.', '_' or '-'"),
        ));
    }
    let idx = match list.iter().position(|x| name_of(x) == sub) {
        Some(i) => i,
        None => {
            list.push(make());
            list.len() - 1
        }
    };
    Ok(&mut list[idx])
}

/// One key of an `[assert "name"]` section.
fn build_assert(
    assertions: &mut Vec<(AssertDef, usize)>,
    e: &RawEntry<'_>,
    sub: &str,
    err: &impl Fn(usize, String, &str) -> ContractError,
) -> Result<(), ContractError> {
    use crate::receipt::Expectation;
    let (a, _) = named_section(
        assertions,
        |(a, _)| &a.name,
        ("assert", "assertion"),
        e,
        err,
        || {
            (
                AssertDef {
                    name: sub.to_owned(),
                    run: String::new(),
                    expect: None,
                },
                e.head.line,
            )
        },
    )?;
    let v = e.value.as_deref().map(str::to_owned).unwrap_or_default();
    let substituted = |v: &str| {
        substitute(v, &|_| Some(String::new())).map_err(|why| {
            err(
                e.line,
                format!("assert {sub:?}: {why}"),
                &format!(
                    "the substitutions are {}; write $${{ for a literal ${{ (a shell variable can be written $NAME)",
                    SUBSTITUTIONS
                        .iter()
                        .map(|s| format!("${{{s}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
    };
    match &*e.key {
        "run" => {
            if e.trailing_comment {
                return Err(err(
                    e.line,
                    format!(
                        "assert {sub:?}: `run` is cut at a `;` or `#`, which start a comment in git-config; the command would be {v:?}"
                    ),
                    "quote the whole command: run = \"a; b\"",
                ));
            }
            if v.trim().is_empty() {
                return Err(err(
                    e.line,
                    format!("assert {sub:?}: `run` is empty"),
                    "give the command, e.g. run = rustc --version",
                ));
            }
            substituted(&v)?;
            a.run = v;
        }
        "expect" | "match" => {
            if a.expect.is_some() {
                return Err(err(
                    e.line,
                    format!("assert {sub:?}: more than one `expect` or `match`"),
                    "give one expectation: expect = <glob> or match = <regex>",
                ));
            }
            let plain = substituted(&v)?;
            a.expect = Some(if e.key == "expect" {
                Expectation::Glob(v)
            } else {
                if let Err(why) = regex::Regex::new(&plain) {
                    return Err(err(
                        e.line,
                        format!(
                            "assert {sub:?}: match = {v:?} is not a regular expression: {}",
                            why.to_string().lines().last().unwrap_or_default()
                        ),
                        "write a regular expression in Rust regex syntax, e.g. match = ^Python 3\\.1[0-9]",
                    ));
                }
                Expectation::Regex(v)
            });
        }
        other => {
            return Err(err(
                e.line,
                format!("assert {sub:?}: unknown key {other:?}"),
                "an assert takes run and one of expect (a glob) or match (a regex)",
            ));
        }
    }
    Ok(())
}

/// One key of a `[dependency "name"]` section.
fn build_dependency(
    dependencies: &mut Vec<(DependencyDef, usize)>,
    e: &RawEntry<'_>,
    sub: &str,
    err: &impl Fn(usize, String, &str) -> ContractError,
) -> Result<(), ContractError> {
    let (d, _) = named_section(
        dependencies,
        |(d, _)| &d.name,
        ("dependency", "dependency"),
        e,
        err,
        || {
            (
                DependencyDef {
                    name: sub.to_owned(),
                    path: String::new(),
                    rev: None,
                    paths: Vec::new(),
                },
                e.head.line,
            )
        },
    )?;
    let v = e.value.as_deref().map(str::to_owned).unwrap_or_default();
    match &*e.key {
        "path" => {
            if v.trim().is_empty() || v.starts_with('/') || v.contains('\0') {
                return Err(err(
                    e.line,
                    format!(
                        "dependency {sub:?}: path {v:?} is not a path relative to the work tree"
                    ),
                    "write where its local clone is, relative to the top of the work tree, e.g. path = ../proto",
                ));
            }
            d.path = v;
        }
        "ref" => {
            if v.trim().is_empty() || v.starts_with('-') || v.contains(char::is_whitespace) {
                return Err(err(
                    e.line,
                    format!("dependency {sub:?}: ref {v:?} is not a revision"),
                    "write a branch, tag or commit of the clone, e.g. ref = main",
                ));
            }
            d.rev = Some(v);
        }
        "paths" => {
            let Some(p) = normalize_path(&v) else {
                return Err(err(
                    e.line,
                    format!(
                        "dependency {sub:?}: paths {v:?} is not a relative path inside that repository"
                    ),
                    "write paths relative to the top of the dependency, without '..', e.g. paths = schema",
                ));
            };
            d.paths.push(p);
            d.paths = minimal_paths(std::mem::take(&mut d.paths));
        }
        other => {
            return Err(err(
                e.line,
                format!("dependency {sub:?}: unknown key {other:?}"),
                "a dependency takes path, ref and paths",
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// `${name}` substitutions in assertion and dependency values
// ---------------------------------------------------------------------------------------

/// The substitution names: `${worktree}` (the top of the work tree), `${gitdir}`
/// (the repository's git directory) and `${home}` (`$HOME`), all absolute paths.
pub const SUBSTITUTIONS: &[&str] = &["worktree", "gitdir", "home"];

/// Replace each `${name}` in `text` with `value(name)`; `$${` is a literal `${`.
/// An unknown or unterminated substitution is an error naming it.
pub fn substitute(text: &str, value: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        if let Some(tail) = after.strip_prefix("$${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("${") {
            let Some(end) = tail.find('}') else {
                return Err(format!("`${{` without its closing `}}` in {text:?}"));
            };
            let name = &tail[..end];
            if !SUBSTITUTIONS.contains(&name) {
                return Err(format!("unknown substitution {:?}", format!("${{{name}}}")));
            }
            match value(name) {
                Some(v) => out.push_str(&v),
                None => return Err(format!("${{{name}}} has no value here")),
            }
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The `path` value `v` on line `line` of a `kind` section (`check`,
/// `review`) named `sub`, normalized; or the error `err` makes of what is
/// wrong with it: a path that spells the whole tree (`.`) says that no path
/// means that, any other that is not inside the repository says how paths are
/// written.
fn declared_path(
    kind: &str,
    sub: &str,
    v: &str,
    line: usize,
    err: &impl Fn(usize, String, &str) -> ContractError,
) -> Result<String, ContractError> {
    if let Some(p) = normalize_path(v) {
        return Ok(p);
    }
    Err(if crate::receipt::spells_whole_tree(v) {
        err(
            line,
            format!(
                "{kind} {sub:?}: path {v:?} names the whole tree, which is what a {kind} with no path covers"
            ),
            &format!(
                "remove this path line (and any other of this {kind}'s: the whole tree holds them)"
            ),
        )
    } else {
        err(
            line,
            format!("{kind} {sub:?}: path {v:?} is not a relative path inside the repository"),
            "write paths relative to the top of the work tree, without '..', e.g. path = src",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Contract, ContractError> {
        Contract::parse(text.as_bytes(), Path::new(".gitreceipts"))
    }

    #[test]
    fn reads_a_full_check() {
        let c = parse(
            "# comment\n[check \"test\"]\n\trun = cargo test --all\n\tpath = src/\n\tpath = ./Cargo.toml\n\tpath = src/lib.rs\n\trequired\n\tenv = RUSTFLAGS\n\ttimeout = 10m\n",
        )
        .unwrap();
        let t = c.check("test").unwrap();
        assert_eq!(t.run, "cargo test --all");
        assert_eq!(t.paths, vec!["Cargo.toml", "src"]);
        assert!(t.required);
        assert_eq!(t.env, vec!["RUSTFLAGS"]);
        assert_eq!(t.timeout, Some(Duration::from_secs(600)));
    }

    #[test]
    fn quoted_values_and_continuations_are_unescaped() {
        let c = parse("[check \"x\"]\n\trun = \"echo \\\"hi\\\"\" \\\n && true\n").unwrap();
        assert_eq!(c.check("x").unwrap().run, "echo \"hi\"  && true");
    }

    #[test]
    fn unknown_key_names_its_line() {
        let e = parse("[check \"test\"]\n\trun = x\n\trequried = true\n").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with(".gitreceipts:3: "), "{msg}");
        assert!(msg.contains("unknown key \"requried\""), "{msg}");
    }

    #[test]
    fn a_command_cut_by_a_comment_character_is_refused() {
        let e = parse("[check \"t\"]\n\trun = cargo fmt --check; cargo test\n").unwrap_err();
        assert!(
            e.to_string().contains("`run` is cut at a `;` or `#`"),
            "{e}"
        );
        let ok = parse(
            "[check \"t\"]\n\trun = \"cargo fmt --check; cargo test\"\n\tpath = src # inputs\n",
        )
        .unwrap();
        assert_eq!(ok.check("t").unwrap().run, "cargo fmt --check; cargo test");
    }

    #[test]
    fn check_without_run_is_an_error() {
        let e = parse("\n[check \"lint\"]\n\tpath = src\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with(".gitreceipts:2: check \"lint\" has no `run`"),
            "{e}"
        );
    }

    #[test]
    fn escaping_paths_are_refused() {
        assert!(parse("[check \"a\"]\nrun = x\npath = ../etc\n").is_err());
        assert!(parse("[check \"a\"]\nrun = x\npath = /etc\n").is_err());
    }

    #[test]
    fn a_path_that_spells_the_whole_tree_is_refused_with_the_way_to_say_it() {
        let whole = |text: &str| match parse(text) {
            Err(ContractError::Invalid {
                line,
                message,
                hint,
                ..
            }) => (line, message, hint),
            other => panic!("{text:?}: {other:?}"),
        };
        for spelling in [".", "./", "./."] {
            let (line, message, hint) =
                whole(&format!("[check \"a\"]\nrun = x\npath = {spelling}\n"));
            assert_eq!(line, 3);
            assert_eq!(
                message,
                format!(
                    "check \"a\": path {spelling:?} names the whole tree, which is what a check with no path covers"
                )
            );
            assert_eq!(
                hint,
                "remove this path line (and any other of this check's: the whole tree holds them)"
            );
            let (_, message, hint) = whole(&format!("[review \"r\"]\n\tpath = {spelling}\n"));
            assert!(message.starts_with("review \"r\": path"), "{message}");
            assert!(
                message.ends_with("what a review with no path covers"),
                "{message}"
            );
            assert!(hint.contains("this review's"), "{hint}");
        }
        // an escaping path keeps its own words
        let (_, message, _) = whole("[check \"a\"]\nrun = x\npath = ./..\n");
        assert!(
            message.ends_with("is not a relative path inside the repository"),
            "{message}"
        );
        assert!(!crate::receipt::spells_whole_tree(""));
        assert!(!crate::receipt::spells_whole_tree("/"));
        assert!(!crate::receipt::spells_whole_tree("./src"));
    }

    #[test]
    fn assertions_and_dependencies_are_declared_and_referenced() {
        let c = parse(
            "[assert \"py\"]\n\trun = python3 --version\n\tmatch = ^Python 3\n[assert \"rec\"]\n\trun = uname\n[dependency \"proto\"]\n\tpath = ../proto\n\tpaths = schema/\n\tpaths = schema/v1\n[check \"t\"]\n\trun = x\n\tassert = rec py\n\tdepends = proto\n",
        )
        .unwrap();
        let t = c.check("t").unwrap();
        assert_eq!(t.assertions, ["rec", "py"], "in declared order");
        let a = c.assertions_of(t);
        assert_eq!(a[0].expect, None, "neither: recorded only");
        assert_eq!(
            a[1].expect,
            Some(crate::receipt::Expectation::Regex("^Python 3".into()))
        );
        let d = &c.dependencies_of(t)[0];
        assert_eq!((d.path.as_str(), d.rev.as_deref()), ("../proto", None));
        assert_eq!(d.paths, ["schema"], "normalized and minimal");
    }

    #[test]
    fn quarantines_are_read_and_a_bad_one_names_its_line_and_the_fix() {
        let c = parse(
            "[check \"t\"]\n\trun = x\n[quarantine \"q\"]\n\tcheck = t\n\ttest = \"mod::a b\"\n\towner = ada@example.com\n\texpires = 2027-01-31\n\treason = issue 12\n",
        )
        .unwrap();
        let q = &c.quarantines[0];
        assert_eq!(
            (
                q.name.as_str(),
                q.check.as_str(),
                q.test.as_str(),
                q.owner.as_str()
            ),
            ("q", "t", "mod::a b", "ada@example.com")
        );
        assert_eq!(
            (q.expires.as_str(), q.expires_ms),
            ("2027-01-31", 1_801_353_600_000)
        );
        assert_eq!(q.reason, "issue 12");
        let base =
            "[check \"t\"]\n\trun = x\n[quarantine \"q\"]\n\tcheck = t\n\ttest = a\n\towner = o\n";
        for (text, line, says) in [
            (base.to_owned(), 3, "quarantine \"q\" has no `expires`"),
            (format!("{base}\texpires = soon\n"), 7, "expires = \"soon\" is not a date"),
            (format!("{base}\texpires = 2027\n"), 7, "is not a date"),
            (format!("{base}\texpires = 2027-13-01\n"), 7, "is not a date"),
            (format!("{base}\texpires = 2027-01-31\n\tcolor = red\n"), 8, "unknown key \"color\""),
            (
                "[check \"t\"]\n\trun = x\n[quarantine \"q\"]\n\tcheck = u\n\ttest = a\n\towner = o\n\texpires = 2027-01-31\n".into(),
                3,
                "check = \"u\" names no [check \"u\"] section",
            ),
            (
                "[check \"t\"]\n\trun = x\n[quarantine \"q\"]\n\tcheck = t\n\towner = o\n\texpires = 2027-01-31\n".into(),
                3,
                "has no `test`",
            ),
            (format!("{base}\ttest = {}\n", "x".repeat(513)), 7, "must be 1 to 512 bytes"),
            ("[quarantine \"a b\"]\n\tcheck = t\n".into(), 1, "is not a valid quarantine name"),
        ] {
            let e = parse(&text).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(".gitreceipts:{line}: ")),
                "{text:?}: {e}"
            );
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn metrics_and_their_bound_are_read_and_a_bad_one_names_the_fix() {
        let c = parse(
            "[check \"b\"]\n\trun = x\n\tresults = tap:-\n\tparity = differential\n\tmax-regression = 2.5%\n\tmetric = p99 ms lower ^p99: ([0-9.]+) ms$\n\tmetric = ops ops/s higher file:./out//bench.txt ^ops=([0-9]+)\n",
        )
        .unwrap();
        let b = c.check("b").unwrap();
        assert_eq!(b.max_regression_bp, Some(250));
        assert_eq!(
            b.metrics,
            [
                MetricDecl {
                    name: "p99".into(),
                    unit: "ms".into(),
                    better: crate::receipt::Better::Lower,
                    file: None,
                    pattern: "^p99: ([0-9.]+) ms$".into(),
                },
                MetricDecl {
                    name: "ops".into(),
                    unit: "ops/s".into(),
                    better: crate::receipt::Better::Higher,
                    file: Some("out/bench.txt".into()),
                    pattern: "^ops=([0-9]+)".into(),
                },
            ]
        );
        for (pct, bp) in [
            ("5%", Some(500)),
            ("0.5%", Some(50)),
            ("12.25 %", Some(1225)),
            ("1000%", Some(100_000)),
        ] {
            assert_eq!(parse_percent(pct), bp, "{pct}");
        }
        for bad in ["5", "%", "-1%", "1.%", "1.234%", "1001%", "x%", ".5%"] {
            assert_eq!(parse_percent(bad), None, "{bad}");
        }
        let check = "[check \"b\"]\n\trun = x\n";
        for (text, says) in [
            (
                format!("{check}\tmetric = p99 ms\n"),
                "needs a name, a unit",
            ),
            (
                format!("{check}\tmetric = p99 ms sideways ^x\n"),
                "is not `lower` or `higher`",
            ),
            (
                format!("{check}\tmetric = p 9 ms lower ^x\n"),
                "is not `lower` or `higher`",
            ),
            (
                format!("{check}\tmetric = p99 ms lower (\n"),
                "is not a regular expression",
            ),
            (
                format!("{check}\tmetric = p99 ms lower (a)(b)\n"),
                "more than one capture group",
            ),
            (
                format!("{check}\tmetric = p99 ms lower file:../x ^x\n"),
                "not a path inside the work tree",
            ),
            (
                format!("{check}\tmetric = p99 ms lower file:x\n"),
                "no regex",
            ),
            (
                format!("{check}\tmetric = p99 ms lower a\n\tmetric = p99 s lower b\n"),
                "declares metric \"p99\" twice",
            ),
            (
                format!("{check}\tmax-regression = 5\n"),
                "is not a percentage",
            ),
            (
                format!("{check}\tmetric = p99 ms lower a\n\tmax-regression = 5%\n"),
                "needs `parity = differential`",
            ),
            (
                format!("{check}\tparity = differential\n\tmax-regression = 5%\n"),
                "at least one `metric`",
            ),
            (
                format!("{check}\tparity = sometimes\n"),
                "is not `absolute` or `differential`",
            ),
            (
                format!("{check}\tparity = differential\n"),
                "declares no `results`",
            ),
            (
                format!("{check}\tallow-new-failures = many\n"),
                "is not a number of tests",
            ),
        ] {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_bad_assertion_or_dependency_names_its_line() {
        for (text, line, says) in [
            (
                "[check \"t\"]\n\trun = x\n\tassert = nope\n",
                3,
                "names no [assert \"nope\"] section",
            ),
            (
                "[check \"t\"]\n\trun = x\n\tdepends = nope\n",
                3,
                "names no [dependency \"nope\"] section",
            ),
            (
                "[assert \"a\"]\n\trun = x\n\texpect = 1\n\tmatch = 1\n",
                4,
                "more than one `expect` or `match`",
            ),
            (
                "[assert \"a\"]\n\trun = x\n\tmatch = (\n",
                3,
                "is not a regular expression",
            ),
            (
                "[assert \"a\"]\n\trun = echo ${HOME}\n",
                2,
                "unknown substitution \"${HOME}\"",
            ),
            (
                "[assert \"a\"]\n\texpect = x\n",
                1,
                "assert \"a\" has no `run`",
            ),
            (
                "[dependency \"d\"]\n\tpath = /abs\n",
                2,
                "is not a path relative to the work tree",
            ),
            (
                "[dependency \"d\"]\n\tref = main\n",
                1,
                "dependency \"d\" has no `path`",
            ),
            (
                "[dependency \"d\"]\n\tpath = ../d\n\tref = --upload-pack=x\n",
                3,
                "is not a revision",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(".gitreceipts:{line}: ")),
                "{text:?}: {e}"
            );
            assert!(e.contains(says), "{text:?}: {e}");
        }
        // $${ is a literal ${ for the shell
        let c = parse("[assert \"a\"]\n\trun = echo $${HOME}\n").unwrap();
        assert_eq!(c.assertions[0].run, "echo $${HOME}");
    }

    const CI_KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKPS5cKmAbrXsEYMX4rbPyw8wFpe7c5V3ux0XJAy6MzO ci";

    /// `[signer "ci"]` with `extra` lines, and check `t` with `accept` lines.
    fn with_signer(extra: &str, accept: &str) -> String {
        format!("[signer \"ci\"]\n\tkey = {CI_KEY}\n{extra}[check \"t\"]\n\trun = x\n{accept}")
    }

    #[test]
    fn observers_run_by_and_accept_protected_are_read() {
        let c = parse(&with_signer(
            "\tobserver = true\n",
            "\taccept = run\n\taccept-protected = run-by: ci , ci\n",
        ))
        .unwrap();
        assert!(c.signers[0].observer);
        let t = c.check("t").unwrap();
        assert_eq!(t.accept, Accept::Run);
        assert_eq!(t.accept_protected, Some(Accept::RunBy(vec!["ci".into()])));
        assert_eq!(t.accept_for(false), &Accept::Run);
        assert_eq!(t.accept_for(true).to_string(), "run-by:ci");
        // observer defaults to false, accept-protected to accept
        let c = parse(&with_signer("", "\taccept = run\n")).unwrap();
        assert!(!c.signers[0].observer);
        assert_eq!(c.check("t").unwrap().accept_for(true), &Accept::Run);
        let c = parse(&with_signer("\tobserver = false\n", "")).unwrap();
        assert!(!c.signers[0].observer);
        assert_eq!(
            Accept::parse("run-by:nightly,ci"),
            Some(Accept::RunBy(vec!["ci".into(), "nightly".into()]))
        );
    }

    #[test]
    fn a_bad_observer_or_run_by_names_its_line_and_the_fix() {
        for (text, line, says, fix) in [
            (
                with_signer("\tobserver = maybe\n", ""),
                3,
                "signer \"ci\": observer = \"maybe\" is not a boolean",
                "write observer = true",
            ),
            (
                with_signer("\tobserver = true\n", "\taccept = run-by\n"),
                6,
                "accept = \"run-by\" is not `any`, `run` or `run-by:NAMES`",
                "accept = run-by:ci",
            ),
            (
                with_signer("\tobserver = true\n", "\taccept-protected = run-by:\n"),
                6,
                "accept-protected = \"run-by:\" is not",
                "accept-protected = run-by:ci",
            ),
            (
                with_signer("\tobserver = true\n", "\taccept = run-by:ci,,x\n"),
                6,
                "is not `any`, `run` or `run-by:NAMES`",
                "comma-separated names",
            ),
            (
                with_signer("\tobserver = true\n", "\taccept = run-by:nightly\n"),
                6,
                "check \"t\": run-by names \"nightly\", which is no [signer] of this file",
                "[signer \"nightly\"]",
            ),
            (
                with_signer("", "\taccept-protected = run-by:ci\n"),
                5,
                "run-by names signer \"ci\", which is not declared observer = true",
                "add observer = true under [signer \"ci\"]",
            ),
            (
                with_signer("\tobserver = false\n", "\taccept = run-by:ci\n"),
                6,
                "which is not declared observer = true",
                "observer = true",
            ),
        ] {
            let e = parse(&text).unwrap_err();
            let ContractError::Invalid {
                line: at,
                message,
                hint,
                ..
            } = &e
            else {
                panic!("{text:?}: {e:?}");
            };
            assert_eq!(*at, line, "{text:?}: {e}");
            assert!(message.contains(says), "{text:?}: {message}");
            assert!(hint.contains(fix), "{text:?}: {hint}");
        }
    }

    #[test]
    fn accept_meets_the_stricter_of_two_rules() {
        let by = |names: &[&str]| Accept::RunBy(names.iter().map(|n| n.to_string()).collect());
        assert_eq!(Accept::Any.meet(&Accept::Run), Accept::Run);
        assert_eq!(Accept::Run.meet(&Accept::Any), Accept::Run);
        assert_eq!(Accept::Any.meet(&by(&["ci"])), by(&["ci"]));
        assert_eq!(by(&["ci"]).meet(&Accept::Run), by(&["ci"]));
        assert_eq!(by(&["ci", "nightly"]).meet(&by(&["ci"])), by(&["ci"]));
        assert_eq!(by(&["dev"]).meet(&by(&["ci"])), by(&[]));
        assert_eq!(Accept::Any.meet(&Accept::Any), Accept::Any);
        use crate::receipt::Mode;
        assert!(Accept::Any.counts_mode(Mode::Record));
        assert!(!Accept::Run.counts_mode(Mode::Record));
        assert!(!by(&["ci"]).counts_mode(Mode::Record));
        assert!(by(&["ci"]).counts_mode(Mode::Run));
    }

    #[test]
    fn syntax_error_has_a_line() {
        let e = parse("[check \"a\"]\nrun = x\n[broken\n").unwrap_err();
        assert!(matches!(e, ContractError::Syntax { line: 3, .. }), "{e:?}");
    }
}
