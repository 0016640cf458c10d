//! `git receipt run` in a 50,000-file work tree, against stock git measured in the
//! same run: a clean run against `git status --porcelain` (the one scan a clean run
//! needs), and a dirty run (a few files changed) against `git add -A` into a
//! temporary index plus `git write-tree` (what computing the checked tree costs
//! git). Targets: clean within 1.2x, dirty within 1.3x.
//!
//! The work tree is written by `git fast-import` and checked out once. Every figure
//! is the median of whole-process wall times, the commands interleaved so that the
//! load of a shared machine falls on all of them alike. Prints a markdown table;
//! asserts nothing.
//!
//! Usage: cargo bench --bench worktree [-- FILES ITERATIONS]

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;
use support::{fast_import, git, median};

/// Run `cmd` to completion, quietly, asserting success; its wall time in seconds.
fn timed(mut cmd: Command) -> f64 {
    let t = Instant::now();
    let out = cmd.stdout(Stdio::null()).output().expect("spawn");
    let elapsed = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let files = args.first().copied().unwrap_or(50_000);
    let iterations = args.get(1).copied().unwrap_or(11);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // SAFETY: single-threaded here; these seal the child processes.
    unsafe {
        std::env::set_var("HOME", &home);
        std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        std::env::set_var("GIT_AUTHOR_NAME", "Bench");
        std::env::set_var("GIT_AUTHOR_EMAIL", "bench@example.org");
        std::env::set_var("GIT_COMMITTER_NAME", "Bench");
        std::env::set_var("GIT_COMMITTER_EMAIL", "bench@example.org");
        std::env::remove_var("XDG_CONFIG_HOME");
    }
    let repo = tmp.path().join("repo");
    git(
        tmp.path(),
        &["init", "-q", "-b", "main", repo.to_str().unwrap()],
    );

    // one commit of FILES small files, 100 to a directory, then checked out
    let t = Instant::now();
    let mut s = Vec::new();
    writeln!(
        s,
        "commit refs/heads/main\ncommitter B <b@x> 1700000000 +0000\ndata 5\nfiles"
    )
    .unwrap();
    for i in 0..files {
        let body = format!("file {i}\n");
        writeln!(
            s,
            "M 100644 inline src/d{}/f{i}.rs\ndata {}\n{body}",
            i / 100,
            body.len()
        )
        .unwrap();
    }
    fast_import(&repo, &s);
    git(&repo, &["reset", "-q", "--hard", "main"]);
    git(&repo, &["status", "--porcelain"]); // settle the index's stat data
    eprintln!(
        "work tree: {files} files in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let bin = env!("CARGO_BIN_EXE_git-receipt");
    let run = || {
        let mut c = Command::new(bin);
        c.current_dir(&repo).args(["run", "noop", "--", "true"]);
        c
    };
    let status = || {
        let mut c = Command::new("git");
        c.current_dir(&repo).args(["status", "--porcelain"]);
        c
    };
    let index = repo.join(".git/index");
    let tmp_index = tmp.path().join("bench-index");
    // git add -A into a temporary copy of the index, then git write-tree
    let add_all = || {
        let t = Instant::now();
        std::fs::copy(&index, &tmp_index).unwrap();
        let mut add = Command::new("git");
        add.current_dir(&repo)
            .env("GIT_INDEX_FILE", &tmp_index)
            .args(["add", "-A"]);
        timed(add);
        let mut write = Command::new("git");
        write
            .current_dir(&repo)
            .env("GIT_INDEX_FILE", &tmp_index)
            .arg("write-tree");
        timed(write);
        t.elapsed().as_secs_f64()
    };

    timed(run()); // creates the key
    let (mut clean_run, mut clean_git) = (Vec::new(), Vec::new());
    for _ in 0..iterations {
        clean_git.push(timed(status()));
        clean_run.push(timed(run()));
    }
    // a few files changed (one of them a new file), the rest as checked out
    for i in [7usize, 1234, files / 2, files - 1] {
        let path = repo.join(format!("src/d{}/f{i}.rs", i / 100));
        std::fs::write(path, format!("changed {i}\n")).unwrap();
    }
    std::fs::write(repo.join("src/new.rs"), "new\n").unwrap();
    timed(run());
    let (mut dirty_run, mut dirty_git) = (Vec::new(), Vec::new());
    for _ in 0..iterations {
        dirty_git.push(add_all());
        dirty_run.push(timed(run()));
    }

    let (cr, cg, dr, dg) = (
        median(clean_run),
        median(clean_git),
        median(dirty_run),
        median(dirty_git),
    );
    println!(
        "`git receipt run` in a {files}-file work tree (median of {iterations}, whole processes)\n"
    );
    println!("| case | git-receipt | stock git baseline | ratio | target |");
    println!("|---|---|---|---|---|");
    println!(
        "| clean `run noop -- true` vs `git status --porcelain` | {:.0} ms | {:.0} ms | {:.2}x | 1.2x |",
        cr * 1e3,
        cg * 1e3,
        cr / cg
    );
    println!(
        "| dirty (5 files) `run noop -- true` vs `git add -A` (temporary index) + `git write-tree` | {:.0} ms | {:.0} ms | {:.2}x | 1.3x |",
        dr * 1e3,
        dg * 1e3,
        dr / dg
    );
    if std::env::var_os("BENCH_KEEP").is_some() {
        eprintln!("kept: {}", tmp.keep().display());
    }
}
