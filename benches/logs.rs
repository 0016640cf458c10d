//! What fetching receipts transfers, before and after logs moved out of the chains
//! (issue 9), measured in the same run.
//!
//! A developer clone records N receipts of a check whose output is ~500 KB of
//! `cargo test`-like lines with timings (one in ten fails), with the real binary,
//! and pushes them to a bare repository (`receipt.pushLogs` at its default,
//! `failed`). The baseline is the same receipts with each log inside its chain
//! commit, as every receipt was stored before (a copy of the chain whose trees hold
//! `output.log` too, pushed to a second bare repository). For each, a fresh clone
//! (`git clone --no-local`, a real pack transfer) then `git receipt fetch`; the
//! figure is the growth of the clone's objects directory during the fetch. Then
//! `git receipt show --log` of one failed receipt in the new clone, against that
//! log's packed size on the server. Prints a table; asserts nothing.
//!
//! Usage: cargo bench --bench logs [-- RECEIPTS]   (default 1000)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_git-receipt"))
}

fn run(dir: &Path, program: &Path, args: &[&str]) -> String {
    let out = Command::new(program)
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn git(dir: &Path, args: &[&str]) -> String {
    run(dir, Path::new("git"), args)
}

fn receipt(dir: &Path, args: &[&str]) -> String {
    run(dir, &bin(), args)
}

/// Bytes under a directory (files only).
fn du(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.len();
            }
        }
    }
    total
}

/// ~500 KB of test output: lines with timings that differ from run to run.
fn test_output(run: usize, failed: bool) -> Vec<u8> {
    let mut out = String::with_capacity(520_000);
    let mut i = 0;
    while out.len() < 500_000 {
        let t = (run * 7919 + i * 104_729) % 100_000;
        out.push_str(&format!(
            "test store::module_{}::case_{i:05} ... ok <{}.{:03}s>\n",
            i % 97,
            t / 1000,
            t % 1000
        ));
        i += 1;
    }
    if failed {
        out.push_str(&format!(
            "test store::flaky ... FAILED\n\nfailures:\n    store::flaky (run {run})\n\ntest result: FAILED\n"
        ));
    }
    out.into_bytes()
}

fn mib(b: u64) -> String {
    format!("{:.2} MiB", b as f64 / (1024.0 * 1024.0))
}

/// Fresh clone of `url`, then `git receipt fetch`: bytes the fetch added.
fn clone_and_fetch(work: &Path, url: &Path, name: &str) -> (PathBuf, u64) {
    let dir = work.join(name);
    git(
        work,
        &[
            "clone",
            "-q",
            "--no-local",
            url.to_str().unwrap(),
            dir.to_str().unwrap(),
        ],
    );
    let before = du(&dir.join(".git/objects"));
    receipt(&dir, &["fetch"]);
    (dir.clone(), du(&dir.join(".git/objects")) - before)
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1000);
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let home = work.join("home");
    std::fs::create_dir_all(&home).unwrap();
    // a sealed environment for every child
    unsafe_env(&home);

    let dev = work.join("dev");
    git(work, &["init", "-q", "-b", "main", dev.to_str().unwrap()]);
    std::fs::create_dir_all(dev.join("src")).unwrap();
    std::fs::write(dev.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(
        dev.join(".gitreceipts"),
        "[check \"test\"]\n\trun = cargo test\n\tpath = src\n",
    )
    .unwrap();
    git(&dev, &["add", "-A"]);
    git(&dev, &["commit", "-qm", "init"]);
    let after_bare = work.join("after.git");
    git(
        work,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            after_bare.to_str().unwrap(),
        ],
    );
    git(
        &dev,
        &["remote", "add", "origin", after_bare.to_str().unwrap()],
    );
    git(&dev, &["push", "-q", "origin", "main"]);

    let t = Instant::now();
    let log_file = work.join("out.txt");
    let mut failed_ids = Vec::new();
    for i in 0..n {
        let failed = i % 10 == 3;
        std::fs::write(&log_file, test_output(i, failed)).unwrap();
        let code = if failed { "101" } else { "0" };
        let _ = receipt(
            &dev,
            &[
                "record",
                "test",
                "--exit-code",
                code,
                "--log",
                log_file.to_str().unwrap(),
            ],
        );
        if failed {
            failed_ids.push(i);
        }
    }
    eprintln!("recorded {n} receipts in {:.1}s", t.elapsed().as_secs_f64());
    receipt(&dev, &["push"]);
    let writer = git(
        &dev,
        &[
            "for-each-ref",
            "--format=%(refname:lstrip=2)",
            "refs/receipts/",
        ],
    );
    let chain = format!("refs/receipts/{writer}");

    // The baseline: the same receipts, each chain commit also holding its log.
    let before_bare = work.join("before.git");
    git(
        work,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            before_bare.to_str().unwrap(),
        ],
    );
    git(&dev, &["push", "-q", before_bare.to_str().unwrap(), "main"]);
    let commits: Vec<String> = git(&dev, &["rev-list", "--reverse", &chain])
        .lines()
        .map(str::to_owned)
        .collect();
    let mut parent: Option<String> = None;
    for c in &commits {
        let bytes = git(&dev, &["cat-file", "blob", &format!("{c}:receipt.json")]);
        let v: serde_json::Value = serde_json::from_str(&bytes).unwrap();
        let log = v["receipt"]["result"]["log"].as_str().unwrap().to_owned();
        let receipt_blob = git(&dev, &["rev-parse", &format!("{c}:receipt.json")]);
        let tree = mktree(&dev, &log, &receipt_blob);
        let mut args = vec![
            "commit-tree".to_owned(),
            tree,
            "-m".into(),
            "receipt".into(),
        ];
        if let Some(p) = &parent {
            args.push("-p".into());
            args.push(p.clone());
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        parent = Some(git(&dev, &argv));
    }
    let old_layout = parent.unwrap();
    git(&dev, &["update-ref", "refs/old-layout", &old_layout]);
    git(
        &dev,
        &[
            "push",
            "-q",
            before_bare.to_str().unwrap(),
            &format!("refs/old-layout:{chain}"),
        ],
    );
    for bare in [&after_bare, &before_bare] {
        git(bare, &["gc", "-q"]);
    }

    let (_, before) = clone_and_fetch(work, &before_bare, "clone-before");
    let (after_dir, after) = clone_and_fetch(work, &after_bare, "clone-after");

    // show --log of one failed receipt in the new clone
    let failed_commit = &commits[failed_ids[0]];
    let bytes = git(
        &dev,
        &["cat-file", "blob", &format!("{failed_commit}:receipt.json")],
    );
    let v: serde_json::Value = serde_json::from_str(&bytes).unwrap();
    let log = v["receipt"]["result"]["log"].as_str().unwrap().to_owned();
    let id_out = receipt(&dev, &["log", "--json"]);
    let all: Vec<serde_json::Value> = serde_json::from_str(&id_out).unwrap();
    let failed_id = all
        .iter()
        .find(|r| r["chain_commit"] == failed_commit.as_str())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let log_disk: u64 = {
        let out = Command::new("git")
            .current_dir(&after_bare)
            .args(["cat-file", "--batch-check=%(objectsize:disk)"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        let mut out = out;
        out.stdin
            .take()
            .unwrap()
            .write_all(format!("{log}\n").as_bytes())
            .unwrap();
        let o = out.wait_with_output().unwrap();
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    let before_show = du(&after_dir.join(".git/objects"));
    let shown = Command::new(bin())
        .current_dir(&after_dir)
        .args(["show", "--log", &failed_id])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(shown.status.success());
    let show_fetch = du(&after_dir.join(".git/objects")) - before_show;

    println!(
        "\n## Receipts on the wire (issue 9), {n} receipts of ~500 KB output, one in ten failed\n"
    );
    println!("| measurement | bytes | ratio | target |");
    println!("|---|---|---|---|");
    println!(
        "| fresh clone + `git receipt fetch`, logs in the chain (before, baseline) | {} | 1.00 | |",
        mib(before)
    );
    println!(
        "| fresh clone + `git receipt fetch`, logs beside the chain (now) | {} | {:.4} | < 0.02 |",
        mib(after),
        after as f64 / before as f64
    );
    println!(
        "| one failed log, packed on the server (baseline) | {} | 1.00 | |",
        mib(log_disk)
    );
    println!(
        "| `git receipt show --log` of that receipt: fetched | {} | {:.2} | < 2 |",
        mib(show_fetch),
        show_fetch as f64 / log_disk as f64
    );
    // what the new fetch carried, by kind (after the show --log, minus that log)
    let listing = git(
        &after_dir,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objecttype) %(objectsize) %(objectsize:disk)",
        ],
    );
    let mut kinds: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
    for l in listing.lines() {
        let mut f = l.split(' ');
        let (k, raw, disk) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        let e = kinds.entry(k.to_owned()).or_default();
        e.0 += 1;
        e.1 += raw.parse::<u64>().unwrap();
        e.2 += disk.parse::<u64>().unwrap();
    }
    println!(
        "\nobjects in the new clone after the fetch and one show --log (count, raw, on disk):"
    );
    for (k, (count, raw, disk)) in &kinds {
        println!("  {k:<6} {count:>6}  {:>12}  {:>12}", mib(*raw), mib(*disk));
    }
    println!(
        "\nshown log: {} bytes, exactly the recorded output: {}",
        shown.stdout.len(),
        shown.stdout == test_output(failed_ids[0], true)
    );
}

fn mktree(dir: &Path, log: &str, receipt_blob: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("git")
        .current_dir(dir)
        .args(["mktree"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            format!("100644 blob {log}\toutput.log\n100644 blob {receipt_blob}\treceipt.json\n")
                .as_bytes(),
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Seal the children's environment: a throwaway HOME, no system config, an identity.
fn unsafe_env(home: &Path) {
    // SAFETY: called at the start of main, before any thread is spawned.
    unsafe {
        std::env::set_var("HOME", home);
        std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        std::env::set_var("GIT_AUTHOR_NAME", "Bench");
        std::env::set_var("GIT_AUTHOR_EMAIL", "bench@example.org");
        std::env::set_var("GIT_COMMITTER_NAME", "Bench");
        std::env::set_var("GIT_COMMITTER_EMAIL", "bench@example.org");
        std::env::remove_var("GIT_RECEIPT_SIGNING_KEY");
    }
}
