//! What the benchmarks share: git as a child process, `git fast-import` with its
//! marks, signed chain entries written as fast-import commands, and timing. Each
//! bench includes it with `mod support;`.
#![allow(dead_code)] // each bench uses what it needs

use std::collections::BTreeMap;
use std::fmt::Display;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use git_receipt::receipt::{
    Body, Chain, Check, Kind, Mode, Outcome, Receipt, Runner, SCHEMA, Subject, Verified,
    definition_digest, format_timestamp,
};
use git_receipt::sign::{PublicKey, SigningKey};

/// The command of the check `test` that generated receipts are for (inputs `src`).
pub const CHECK_RUN: &str = "cargo test";

/// A HOME of its own under `tmp` for this process and every child it runs:
/// no system git config, no XDG config, no signing key named from outside.
/// Call it at the start of `main`, before any thread is spawned.
pub fn sealed_home(tmp: &Path) -> std::path::PathBuf {
    let home = tmp.join("home");
    std::fs::create_dir_all(&home).unwrap();
    // SAFETY: single-threaded at this point (see above); the variables seal the
    // child processes.
    unsafe {
        std::env::set_var("HOME", &home);
        std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        std::env::remove_var("XDG_CONFIG_HOME");
        std::env::remove_var("GIT_RECEIPT_SIGNING_KEY");
    }
    home
}

/// `git args` in `dir`, which must succeed; its stdout, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The size and line count of the stdout of `git args` in `repo` fed `input`,
/// which must succeed. Streamed: a pack of a million receipts is never held.
pub fn git_fed(repo: &Path, args: &[&str], input: &str) -> (u64, u64) {
    let mut child = Command::new("git")
        .current_dir(repo)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_owned();
    let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let mut stdout = child.stdout.take().unwrap();
    let (mut bytes, mut lines) = (0u64, 0u64);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = std::io::Read::read(&mut stdout, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        bytes += n as u64;
        lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
    }
    feeder.join().unwrap();
    assert!(child.wait().unwrap().success(), "git {args:?}");
    (bytes, lines)
}

/// Objects and packed bytes of what `revs` (lines for `git rev-list --stdin`)
/// reach in `repo`: a fetch's pack of them.
pub fn pack_of(repo: &Path, revs: &str) -> (u64, u64) {
    let (_, objects) = git_fed(repo, &["rev-list", "--objects", "--stdin"], revs);
    let (pack, _) = git_fed(repo, &["pack-objects", "--revs", "--stdout", "-q"], revs);
    (objects, pack)
}

/// Feed `stream` to `git fast-import` in `repo`, keeping its marks in `.git/marks`
/// (read back first, so one stream may name what an earlier one wrote).
pub fn fast_import(repo: &Path, stream: &[u8]) {
    fast_import_marks(
        repo,
        stream,
        &[
            "--export-marks=.git/marks",
            "--import-marks-if-exists=.git/marks",
        ],
    );
}

/// Feed `stream` to `git fast-import` in `repo` (bare or not) with no marks kept.
pub fn fast_import_bare(repo: &Path, stream: &[u8]) {
    fast_import_marks(repo, stream, &[]);
}

fn fast_import_marks(repo: &Path, stream: &[u8], marks: &[&str]) {
    let mut fi = Command::new("git")
        .current_dir(repo)
        .args(["fast-import", "--quiet"])
        .args(marks)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    fi.stdin.take().unwrap().write_all(stream).unwrap();
    assert!(fi.wait().unwrap().success());
}

/// `n` distinct keys from fixed seeds (key `i` the same in every run).
pub fn seeded_keys(n: usize) -> Vec<SigningKey> {
    (0..n)
        .map(|i| {
            let mut seed = [7u8; 32];
            seed[..8].copy_from_slice(&(i as u64).to_le_bytes());
            SigningKey::from_seed(&seed)
        })
        .collect()
}

/// The body of a passing receipt of check `test` ([`CHECK_RUN`], inputs `src`) at
/// position `index` of `writer`'s chain, after the receipt with id `prev`.
/// `serial` orders the start times.
pub fn check_body(
    writer: &str,
    index: u64,
    prev: Option<String>,
    commit: impl Display,
    tree: impl Display,
    inputs: impl Display,
    serial: u64,
) -> Body {
    let argv = vec!["sh".to_owned(), "-c".to_owned(), CHECK_RUN.to_owned()];
    let paths = vec!["src".to_owned()];
    Body {
        schema: SCHEMA.into(),
        kind: Kind::Check,
        chain: Chain {
            writer: writer.to_owned(),
            index,
            prev,
        },
        subject: Subject {
            commit: commit.to_string(),
            tree: tree.to_string(),
            inputs: inputs.to_string(),
            dirty: false,
            dependencies: Vec::new(),
        },
        check: Check {
            name: "test".into(),
            definition: definition_digest(&argv, &paths, &[]),
            argv,
            paths,
            env: BTreeMap::new(),
        },
        result: Outcome {
            mode: Mode::Run,
            exit_code: 0,
            passed: true,
            started_at: format_timestamp(1_700_000_000_000 + serial * 1000),
            duration_ms: 1000,
            stdout_tail: "test result: ok. 42 passed; 0 failed".into(),
            stderr_tail: String::new(),
            log: None,
            output_bytes: 36,
            log_truncated: false,
            log_bytes: None,
            log_sha256: None,
            detail: String::new(),
            assertions: Vec::new(),
            tests: None,
            metrics: Vec::new(),
            artifacts: None,
            idempotency_key: None,
        },
        runner: Runner {
            tool: "bench".into(),
            host: "bench".into(),
            os: "linux-x86_64".into(),
        },
        acceptance: None,
        review: None,
        supersedes: None,
    }
}

/// The fast-import commands of one chain entry, as the store writes it: a commit
/// on `refs/receipts/<writer>` whose tree holds `receipt.json` (the receipt's
/// bytes) and `signer.pub` (the signer's OpenSSH public key line, no comment),
/// with the store's message. `from` names the parent when this stream did not
/// write it (the entry continues a chain already in the repository); otherwise
/// the entry follows the last one this stream wrote on the ref (none: a root).
/// `mark` marks the commit, for [`marks`]. `serial` orders the commit times.
pub fn chain_entry(
    stream: &mut Vec<u8>,
    receipt: &Receipt<Verified>,
    signer: &PublicKey,
    from: Option<&str>,
    mark: Option<usize>,
    serial: u64,
) {
    let b = receipt.body();
    // as `Store::write_chain_commit` writes them (docs/format.md, "Chains")
    let message = format!("receipt: {} #{}\n", b.headline(), b.chain.index);
    writeln!(stream, "commit refs/receipts/{}", b.chain.writer).unwrap();
    if let Some(mark) = mark {
        writeln!(stream, "mark :{mark}").unwrap();
    }
    write!(
        stream,
        "committer git-receipt <> {} +0000\ndata {}\n{message}\n",
        1_700_000_000 + serial,
        message.len()
    )
    .unwrap();
    if let Some(from) = from {
        writeln!(stream, "from {from}").unwrap();
    }
    let line = signer.to_openssh();
    write!(
        stream,
        "M 100644 inline signer.pub\ndata {}\n{line}\n\nM 100644 inline receipt.json\ndata {}\n",
        line.len() + 1,
        receipt.bytes().len()
    )
    .unwrap();
    stream.extend_from_slice(receipt.bytes());
    stream.push(b'\n');
}

/// The object ids of marks `:1` to `:n` in `repo`'s `.git/marks`, in mark order
/// (marks above `n` are left out).
pub fn marks(repo: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(repo.join(".git/marks")).unwrap();
    let mut ids = vec![String::new(); n];
    for line in text.lines() {
        let (m, id) = line.split_once(' ').unwrap();
        let m: usize = m[1..].parse().unwrap();
        if (1..=n).contains(&m) {
            ids[m - 1] = id.to_owned();
        }
    }
    ids
}

/// The median of `v` (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The wall time of one run of `f`, in milliseconds.
pub fn timed_ms(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1000.0
}

/// The real `git-receipt` built for this bench.
pub const BIN: &str = env!("CARGO_BIN_EXE_git-receipt");

/// `git receipt args` in `dir` as the user whose home is `home`, to run.
pub fn receipt_command(dir: &Path, home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .args(args);
    cmd
}

/// [`receipt_command`]'s output, succeeding or not.
pub fn receipt_output(dir: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    receipt_command(dir, home, args)
        .output()
        .expect("git-receipt")
}

/// The median wall time of `iterations` runs of `f`, in milliseconds.
pub fn median_ms(iterations: usize, mut f: impl FnMut()) -> f64 {
    let mut samples: Vec<f64> = (0..iterations)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    samples[samples.len() / 2]
}
