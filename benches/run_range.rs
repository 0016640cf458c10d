//! `git receipt run test A..B` over a branch, against git-test's `git test run
//! A..B` (Michael Haggerty's git-test, the tool the range run answers; issue 27)
//! and against the loop a user writes without either, measured in the same run.
//!
//! The repository is built here with plain git commands: a commit `base` that
//! declares the check `test` (`sleep 0.05; test -f src/lib.rs`, inputs `path =
//! src`) in `.gitreceipts`, then COMMITS commits on `main` that change, in turn,
//! `src/lib.rs` (the check's inputs) and `docs/index.md` (outside them). Refs are
//! loose, objects loose, no commit-graph, nothing packed: the state a user is in.
//! git-test's test is the same command (`git test add`, in the template), so
//! both tools run the same thing over the same commits; git-test keys its results
//! by tree, so it runs every commit, where git-receipt's receipt for the inputs
//! `src` already covers the next commit that changed only docs.
//!
//! Each round copies the prepared template (`cp -a`) three times, one copy per
//! tool, and times, in an order that turns from round to round:
//!
//! - `git test run base..main` fresh (no results yet), then again (all cached);
//! - `git receipt run --json test base..main` fresh (no receipts), then again;
//! - `for c in $(git rev-list --reverse base..main); do git checkout -q $c; git
//!   receipt run test; done`, the loop without a range run (every commit runs);
//! - the floor: the check's command alone, `sh -c` once per commit git-receipt
//!   has to run it for.
//!
//! Prints medians of the rounds (wall and the CPU of the child processes) and
//! each ratio to git-test as a markdown table; asserts nothing about time. It
//! does assert the answers, so it never times a wrong result: git-test reports
//! every commit good, then every one known-good; git-receipt's first run passes
//! exactly the commits that changed `src` and counts the rest cached, writes one
//! receipt for each of them (`git receipt log --json`), and its second run runs
//! nothing; the loop writes one receipt per commit. git-test must be installed:
//! the bench panics, with how to install it, rather than skip.
//! `GIT_RECEIPT_BENCH_BEFORE=<binary>` times another build of git-receipt on the
//! range rows too (a before/after).
//!
//! Usage: cargo bench --bench run_range [-- RUNS] [-- --quick]   (default 5
//! rounds of 100 commits; `--quick`: 20 commits)

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use serde_json::Value;
use support::{git, median};

const BIN: &str = env!("CARGO_BIN_EXE_git-receipt");

/// The check both tools run at each commit: cheap, but a real process that
/// reads the checkout.
const CHECK: &str = "sleep 0.05; test -f src/lib.rs";

/// CPU seconds (user + system) that finished child processes have used so far.
fn children_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

/// Run `cmd` in `dir` to its end: its output, wall and child CPU milliseconds.
/// Panics unless it exits 0.
fn timed(dir: &Path, cmd: &mut Command) -> (Output, f64, f64) {
    let c0 = children_cpu_s();
    let t = Instant::now();
    let out = cmd.current_dir(dir).output().expect("runs");
    let wall = t.elapsed().as_secs_f64() * 1000.0;
    let cpu = (children_cpu_s() - c0) * 1000.0;
    assert!(
        out.status.success(),
        "{cmd:?} in {}: {}\n{}",
        dir.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (out, wall, cpu)
}

/// Panic, saying how to install it, unless `git test` is Michael Haggerty's
/// git-test (a `git test` subcommand with `add` and `run RANGE`).
fn require_git_test() {
    let hint = "git-test is not installed: this bench times `git test run A..B` against `git receipt run A..B`.\n\
        hint: install Michael Haggerty's git-test, a single Python 3 script: copy bin/git-test of \
        github.com/mhagger/git-test onto PATH (e.g. /usr/local/bin/git-test, chmod +x). \
        The PyPI package git-test 0.1.0 is not it: it installs no script at all.";
    let out = Command::new("git").args(["test", "help"]).output();
    let text = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => panic!(
            "{hint}\n(`git test help`: {})",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!("{hint}\n(git: {e})"),
    };
    assert!(
        text.contains("remember the test results") && text.contains("add,run"),
        "{hint}\n(`git test help` printed something else:)\n{text}"
    );
}

/// The template: `base`, then `commits` commits alternating between the check's
/// inputs (`src`, the odd ones, the first included) and `docs`.
fn template(tmp: &Path, commits: usize) -> PathBuf {
    let repo = tmp.join("template");
    git(tmp, &["init", "-q", "-b", "main", repo.to_str().unwrap()]);
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::create_dir_all(repo.join("docs")).unwrap();
    std::fs::write(repo.join("src/lib.rs"), "pub const N: u32 = 0;\n").unwrap();
    std::fs::write(repo.join("docs/index.md"), "# docs 0\n").unwrap();
    std::fs::write(
        repo.join(".gitreceipts"),
        format!("[check \"test\"]\n\trun = \"{CHECK}\"\n\tpath = src\n\trequired = true\n"),
    )
    .unwrap();
    let commit = |message: &str, serial: usize| {
        let date = format!("{} +0000", 1_780_000_000 + serial * 60);
        let st = Command::new("git")
            .args(["commit", "-q", "-m", message])
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(st.success());
    };
    git(&repo, &["add", "-A"]);
    commit("base", 0);
    git(&repo, &["tag", "base"]);
    for i in 1..=commits {
        if i % 2 == 1 {
            std::fs::write(
                repo.join("src/lib.rs"),
                format!("pub const N: u32 = {i};\n"),
            )
            .unwrap();
            git(&repo, &["add", "src/lib.rs"]);
            commit(&format!("lib {i}"), i);
        } else {
            std::fs::write(repo.join("docs/index.md"), format!("# docs {i}\n")).unwrap();
            git(&repo, &["add", "docs/index.md"]);
            commit(&format!("docs {i}"), i);
        }
    }
    // git-test's definition of the same check (config and an empty notes ref)
    git(&repo, &["test", "add", CHECK]);
    // the state a user is in: nothing packed, no commit-graph
    assert!(!repo.join(".git/packed-refs").exists(), "refs are loose");
    assert!(
        !repo.join(".git/objects/info/commit-graph").exists()
            && !repo.join(".git/objects/info/commit-graphs").exists(),
        "no commit-graph"
    );
    let packs = std::fs::read_dir(repo.join(".git/objects/pack"))
        .unwrap()
        .count();
    assert_eq!(packs, 0, "objects are loose");
    repo
}

/// A fresh copy of the template, as `cp -a` makes it.
fn copy(template: &Path, to: &Path) -> PathBuf {
    let st = Command::new("cp")
        .arg("-a")
        .arg(template)
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success());
    to.to_owned()
}

/// How many receipts `git receipt log --json` lists in `repo`.
fn receipts_in(bin: &str, repo: &Path) -> usize {
    let (out, _, _) = timed(repo, Command::new(bin).args(["log", "--json"]));
    let v: Value = serde_json::from_slice(&out.stdout).expect("log --json is JSON");
    v.as_array().expect("log --json is an array").len()
}

/// What became of check `test` at each commit of a range run's `--json`.
fn results(v: &Value) -> Vec<String> {
    v["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .map(|c| {
            c["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|k| k["name"] == "test")
                .and_then(|k| k["result"].as_str())
                .unwrap_or("-")
                .to_owned()
        })
        .collect()
}

/// Wall and CPU samples of one row.
#[derive(Default)]
struct Samples {
    wall: Vec<f64>,
    cpu: Vec<f64>,
}

impl Samples {
    fn push(&mut self, (wall, cpu): (f64, f64)) {
        self.wall.push(wall);
        self.cpu.push(cpu);
    }
    fn medians(&self) -> (f64, f64) {
        (median(self.wall.clone()), median(self.cpu.clone()))
    }
}

/// One round of git-test in a fresh copy: fresh, then cached.
fn git_test_round(repo: &Path, commits: usize) -> [(f64, f64); 2] {
    let range = || {
        let mut c = Command::new("git");
        c.args(["test", "run", "--no-color", "base..main"]);
        c
    };
    let (out, w1, c1) = timed(repo, &mut range());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let good = stdout
        .lines()
        .filter(|l| l.ends_with("(default:good)"))
        .count();
    assert_eq!(good, commits, "git test ran every commit, good:\n{stdout}");
    let notes = git(repo, &["notes", "--ref=tests/default", "list"]);
    assert_eq!(notes.lines().count(), commits, "one result per tree");
    let (out, w2, c2) = timed(repo, &mut range());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let known = stdout
        .lines()
        .filter(|l| l.ends_with("(default:known-good)"))
        .count();
    assert_eq!(
        known, commits,
        "the second git test run ran nothing:\n{stdout}"
    );
    [(w1, c1), (w2, c2)]
}

/// One round of `git receipt run test base..main` with `bin` in a fresh copy:
/// fresh, then cached. `expected` is the result at each commit of the fresh run.
fn receipt_round(bin: &str, repo: &Path, expected: &[&str]) -> [(f64, f64); 2] {
    let range = || {
        let mut c = Command::new(bin);
        c.args(["run", "--json", "test", "base..main"]);
        c
    };
    let ran = expected.iter().filter(|r| **r == "passed").count();
    let (out, w1, c1) = timed(repo, &mut range());
    let v: Value = serde_json::from_slice(&out.stdout).expect("run --json is JSON");
    assert_eq!(results(&v), expected, "the fresh range run: {v}");
    assert_eq!(
        (
            v["passed"].as_u64(),
            v["cached"].as_u64(),
            v["failed"].as_u64()
        ),
        (
            Some(ran as u64),
            Some((expected.len() - ran) as u64),
            Some(0)
        ),
        "counts of the fresh range run"
    );
    assert_eq!(
        receipts_in(bin, repo),
        ran,
        "one receipt per commit whose inputs changed"
    );
    let (out, w2, c2) = timed(repo, &mut range());
    let v: Value = serde_json::from_slice(&out.stdout).expect("run --json is JSON");
    assert_eq!(
        (v["passed"].as_u64(), v["cached"].as_u64()),
        (Some(0), Some(expected.len() as u64)),
        "the second range run runs nothing: {v}"
    );
    assert_eq!(receipts_in(bin, repo), ran, "the second run wrote nothing");
    assert!(
        !repo.join(".git/receipt-worktrees").exists(),
        "no temporary checkout outlives the run"
    );
    [(w1, c1), (w2, c2)]
}

/// One round of the loop a user writes without a range run, in a fresh copy.
fn loop_round(repo: &Path, commits: usize) -> (f64, f64) {
    let script = r#"for c in $(git rev-list --reverse base..main); do
  git checkout -q "$c" && "$BIN" run test >/dev/null 2>&1 || exit 1
done"#;
    let (_, w, c) = timed(
        repo,
        Command::new("sh").args(["-c", script]).env("BIN", BIN),
    );
    assert_eq!(
        receipts_in(BIN, repo),
        commits,
        "the loop runs every commit"
    );
    (w, c)
}

/// The check's command alone, `times` times, in `repo`.
fn floor_round(repo: &Path, times: usize) -> (f64, f64) {
    let script =
        format!("i=0; while [ $i -lt {times} ]; do sh -c '{CHECK}' || exit 1; i=$((i+1)); done");
    let (_, w, c) = timed(repo, Command::new("sh").args(["-c", &script]));
    (w, c)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let rounds: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(5).max(1);
    let commits = if quick { 20 } else { 100 };
    let before = std::env::var("GIT_RECEIPT_BENCH_BEFORE").ok();

    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let key = home.join("key");
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // SAFETY: single-threaded at this point; the variables seal the child processes.
    unsafe {
        std::env::set_var("PATH", path);
        std::env::set_var("HOME", &home);
        std::env::set_var("TZ", "UTC");
        std::env::set_var("LC_ALL", "C");
        std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        std::env::remove_var("XDG_CONFIG_HOME");
        std::env::remove_var("GIT_DIR");
        std::env::remove_var("GIT_WORK_TREE");
        std::env::set_var("GIT_RECEIPT_SIGNING_KEY", &key);
        std::env::set_var("GIT_AUTHOR_NAME", "Bench");
        std::env::set_var("GIT_AUTHOR_EMAIL", "b@example.org");
        std::env::set_var("GIT_COMMITTER_NAME", "Bench");
        std::env::set_var("GIT_COMMITTER_EMAIL", "b@example.org");
    }
    require_git_test();
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .expect("ssh-keygen (OpenSSH) makes the signing key");
    assert!(st.success());

    let template = template(tmp.path(), commits);
    // the fresh range run passes the commits that changed src (the odd ones,
    // the first included) and finds the docs commit after each one cached
    let expected: Vec<&str> = (1..=commits)
        .map(|i| if i % 2 == 1 { "passed" } else { "cached" })
        .collect();
    let ran = expected.iter().filter(|r| **r == "passed").count();

    let mut git_test = [Samples::default(), Samples::default()];
    let mut receipt = [Samples::default(), Samples::default()];
    let mut receipt_before = [Samples::default(), Samples::default()];
    let mut looped = Samples::default();
    let mut floor_all = Samples::default();
    let mut floor_ran = Samples::default();
    let t = Instant::now();
    for round in 0..rounds {
        // each round in another order, so the machine's noise falls on each
        let mut order = vec![0, 1, 2, 3];
        if before.is_none() {
            order.retain(|&k| k != 3);
        }
        let turn = round % order.len();
        order.rotate_left(turn);
        for k in order {
            let at = tmp.path().join(format!("r{round}-{k}"));
            match k {
                0 => {
                    let repo = copy(&template, &at);
                    for (s, x) in git_test.iter_mut().zip(git_test_round(&repo, commits)) {
                        s.push(x);
                    }
                }
                1 => {
                    let repo = copy(&template, &at);
                    for (s, x) in receipt.iter_mut().zip(receipt_round(BIN, &repo, &expected)) {
                        s.push(x);
                    }
                }
                2 => {
                    let repo = copy(&template, &at);
                    looped.push(loop_round(&repo, commits));
                    floor_all.push(floor_round(&repo, commits));
                    floor_ran.push(floor_round(&repo, ran));
                }
                _ => {
                    let repo = copy(&template, &at);
                    let b = before.as_deref().unwrap();
                    for (s, x) in receipt_before
                        .iter_mut()
                        .zip(receipt_round(b, &repo, &expected))
                    {
                        s.push(x);
                    }
                }
            }
            std::fs::remove_dir_all(&at).unwrap();
        }
        eprintln!(
            "round {}/{rounds} done ({:.0} s)",
            round + 1,
            t.elapsed().as_secs_f64()
        );
    }

    let (gw, gc) = git_test[0].medians();
    let (cw, cc) = git_test[1].medians();
    println!(
        "`cargo bench --bench run_range` ({commits} commits, {ran} of them changing the check's inputs; \
         loose objects and refs, no commit-graph; medians of {rounds} rounds)\n"
    );
    println!("| case | wall | CPU | x git-test | target |");
    println!("|---|---:|---:|---:|---:|");
    let row = |case: &str, (w, c): (f64, f64), base: f64, target: &str| {
        println!(
            "| {case} | {w:.0} ms | {c:.0} ms | {:.2}x | {target} |",
            w / base
        );
    };
    row(
        &format!("`git test run base..main`, fresh ({commits} run)"),
        (gw, gc),
        gw,
        "",
    );
    row(
        &format!(
            "`git receipt run test base..main`, fresh ({ran} run, {} cached)",
            commits - ran
        ),
        receipt[0].medians(),
        gw,
        "0.5x",
    );
    if before.is_some() {
        row(
            "the same, the build before",
            receipt_before[0].medians(),
            gw,
            "",
        );
    }
    row(
        &format!("`git checkout; git receipt run test` loop ({commits} run)"),
        looped.medians(),
        gw,
        "",
    );
    row("`git test run base..main`, cached", (cw, cc), cw, "");
    row(
        "`git receipt run test base..main`, cached",
        receipt[1].medians(),
        cw,
        "0.5x",
    );
    if before.is_some() {
        row(
            "the same, the build before",
            receipt_before[1].medians(),
            cw,
            "",
        );
    }
    row(
        &format!("floor: the check alone, {commits} times"),
        floor_all.medians(),
        gw,
        "",
    );
    row(
        &format!("floor: the check alone, {ran} times"),
        floor_ran.medians(),
        gw,
        "",
    );
    let per = |total: f64, floor: f64, n: usize| (total - floor) / n as f64;
    println!(
        "\nper commit beyond the check: git-test {:.1} ms, git-receipt range {:.1} ms (per commit it runs: {:.1} ms), loop {:.1} ms",
        per(gw, floor_all.medians().0, commits),
        per(receipt[0].medians().0, floor_ran.medians().0, commits),
        per(
            receipt[0].medians().0 - receipt[1].medians().0,
            floor_ran.medians().0,
            ran
        ),
        per(looped.medians().0, floor_all.medians().0, commits),
    );
}
