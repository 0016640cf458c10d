//! `git receipt report main..feature` over a 1,000-commit range with 10 checks,
//! against `git log --oneline main..feature` in the same run.
//!
//! Builds `main` (one commit declaring 10 checks, `c0`..`c9`, each with inputs
//! `m<j>/`) and `feature`, 1,000 commits on top, commit i changing `m<i % 10>/f`.
//! Receipts as CI writes them: every check on every commit, by 2 writers, except
//! on one commit in 20 (whose checks are then present through identical inputs,
//! or stale); one receipt in 50 failed. Through the library's append path, then
//! `git gc` and a commit-graph. Times both as whole processes (and `git receipt
//! status main..feature`, the same states as text), prints medians,
//! the ratio and the page's size against the targets (1 s, 5 MB); asserts nothing
//! but that the page was written.
//!
//! Usage: cargo bench --bench report [-- COMMITS ITERATIONS]; with
//! `GIT_RECEIPT_BENCH_KEEP=1` the repository is kept and its path printed.

mod support;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Command;
use std::time::Instant;

use git_receipt::receipt::{
    Body, Chain, Check, Kind, Mode, Outcome, Runner, SCHEMA_V2, Subject, definition_digest,
    format_timestamp, writer_id,
};
use git_receipt::sign::SigningKey;
use git_receipt::store::Store;
use support::{fast_import, git, marks, median_ms};

const CHECKS: usize = 10;
const WRITERS: usize = 2;

/// CPU seconds (user + system) that finished child processes have used so far.
fn children_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let commits = args.first().copied().unwrap_or(1000);
    let iterations = args.get(1).copied().unwrap_or(7);

    let tmp = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("GIT_RECEIPT_BENCH_KEEP").is_some();
    support::sealed_home(tmp.path());
    let repo = tmp.path().join("repo");
    git(
        tmp.path(),
        &["init", "-q", "-b", "main", repo.to_str().unwrap()],
    );
    let keys: Vec<SigningKey> = (0..WRITERS)
        .map(|i| SigningKey::from_seed(&[i as u8 + 7; 32]))
        .collect();

    // 1. history: main = 1 commit with the contract; feature = `commits` more.
    let t = Instant::now();
    let mut contract = String::new();
    for j in 0..CHECKS {
        contract.push_str(&format!(
            "[check \"c{j}\"]\n\trun = make check-{j}\n\tpath = m{j}\n{}",
            if j < 3 { "\trequired = true\n" } else { "" }
        ));
    }
    for (i, k) in keys.iter().enumerate() {
        contract.push_str(&format!(
            "[signer \"ci{i}\"]\n\tkey = {}\n",
            k.public().to_openssh()
        ));
    }
    let mut stream = Vec::new();
    let total = commits + 1;
    for i in 0..total {
        let ts = 1_700_000_000 + i as u64;
        let branch = if i == 0 { "main" } else { "feature" };
        let subject = format!("change {} (commit {i})", i % CHECKS);
        write!(
            stream,
            "commit refs/heads/{branch}\nmark :{}\ncommitter Bench <b@example.org> {ts} +0000\ndata {}\n{subject}\n",
            i + 1,
            subject.len()
        )
        .unwrap();
        if i > 0 {
            writeln!(stream, "from :{i}").unwrap();
        } else {
            writeln!(
                stream,
                "M 100644 inline .gitreceipts\ndata {}\n{contract}",
                contract.len()
            )
            .unwrap();
            for j in 0..CHECKS {
                writeln!(stream, "M 100644 inline m{j}/f\ndata 2\n0").unwrap();
            }
        }
        let body = format!("{i}\n");
        writeln!(
            stream,
            "M 100644 inline m{}/f\ndata {}\n{body}",
            i % CHECKS,
            body.len()
        )
        .unwrap();
    }
    fast_import(&repo, &stream);
    git(&repo, &["reset", "-q", "--hard", "main"]);
    let ids = marks(&repo, total);
    eprintln!(
        "history: {commits} commits in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    // 2. receipts: every check on every commit but one in 20, by 2 writers.
    let t = Instant::now();
    let store = Store::open(&repo).unwrap();
    let mut written = 0u64;
    for (i, id) in ids.iter().enumerate() {
        if i % 20 == 19 {
            continue;
        }
        let commit = gix::ObjectId::from_hex(id.as_bytes()).unwrap();
        let tree = store.commit_tree(commit).unwrap();
        for j in 0..CHECKS {
            let argv = vec!["sh".to_owned(), "-c".to_owned(), format!("make check-{j}")];
            let paths = vec![format!("m{j}")];
            let definition = definition_digest(&argv, &paths, &[]);
            let inputs = store.inputs_tree(tree, &paths, true).unwrap();
            let key = &keys[(i + j) % WRITERS];
            let writer = writer_id(key.public(), "bench");
            let passed = written % 50 != 49;
            store
                .append(&writer, key, &[], |index, prev| Body {
                    schema: SCHEMA_V2.into(),
                    kind: Kind::Check,
                    chain: Chain {
                        writer: writer.clone(),
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
                        name: format!("c{j}"),
                        argv: argv.clone(),
                        definition: definition.clone(),
                        paths: paths.clone(),
                        env: BTreeMap::new(),
                    },
                    result: Outcome {
                        mode: Mode::Run,
                        exit_code: if passed { 0 } else { 2 },
                        passed,
                        started_at: format_timestamp(1_700_000_000_000 + written * 1000),
                        duration_ms: 800 + (written * 37) % 900,
                        stdout_tail: format!("check {j} on commit {i}: ok\n"),
                        stderr_tail: String::new(),
                        log: None,
                        output_bytes: 20,
                        log_truncated: false,
                        log_bytes: Some(0),
                        log_sha256: Some(None),
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
                        os: "linux".into(),
                    },
                    supersedes: None,
                    acceptance: None,
                    review: None,
                })
                .unwrap();
            written += 1;
        }
    }
    eprintln!(
        "receipts: {written} from {WRITERS} writers in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    git(&repo, &["gc", "--quiet"]);
    git(&repo, &["commit-graph", "write", "--reachable"]);
    eprintln!("git gc + commit-graph: {:.1}s", t.elapsed().as_secs_f64());

    // 3. timings, both as whole processes.
    let bin = env!("CARGO_BIN_EXE_git-receipt");
    let out = tmp.path().join("receipts.html");
    let report = || {
        let r = Command::new(bin)
            .current_dir(&repo)
            .args(["report", "main..feature", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            r.status.success(),
            "report: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    };
    report(); // the first run builds the receipt index
    let log = median_ms(iterations, || {
        Command::new("git")
            .current_dir(&repo)
            .args(["log", "--oneline", "main..feature"])
            .output()
            .unwrap();
    });
    // the same states as text, one commit after the other: what the page adds to it
    let status = median_ms(iterations, || {
        Command::new(bin)
            .current_dir(&repo)
            .args(["status", "main..feature"])
            .output()
            .unwrap();
    });
    let cpu_before = children_cpu_s();
    let page = median_ms(iterations, report);
    let cpu_ms = (children_cpu_s() - cpu_before) * 1000.0 / iterations as f64;
    let size = std::fs::metadata(&out).unwrap().len();
    let html = std::fs::read_to_string(&out).unwrap();
    println!(
        "repository: {commits}-commit range, {CHECKS} checks, {written} receipts, {WRITERS} writers (packed, commit-graph)"
    );
    println!("iterations per figure: {iterations} (medians, whole processes)");
    println!(
        "{:<48} {:>9.2} ms",
        "git log --oneline main..feature (baseline)", log
    );
    println!(
        "{:<48} {:>9.2} ms",
        "git receipt status main..feature (same states)", status
    );
    println!(
        "{:<48} {:>9.2} ms   (target < 1000 ms)",
        "git receipt report main..feature -o FILE", page
    );
    println!(
        "{:<48} {:>9.2} ms   (mean CPU, user + system, all threads)",
        "git receipt report, CPU time", cpu_ms
    );
    println!(
        "{:<48} {:>9.1}x",
        "ratio report / git log --oneline",
        page / log
    );
    println!(
        "{:<48} {:>9.2}x",
        "ratio report / status of the same range",
        page / status
    );
    println!(
        "{:<48} {:>9.2} MB   (target < 5 MB)",
        "page size",
        size as f64 / 1e6
    );
    println!(
        "{:<48} {:>9} rows, {} evidence entries",
        "page content",
        html.matches("<th class=\"c\" scope=\"row\">").count(),
        html.matches("<article class=\"ev\"").count()
    );
    if keep {
        eprintln!("kept: {}", tmp.keep().display());
    }
}
