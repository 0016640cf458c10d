//! `git receipt run ... A..B` (issue 27, the answer to `git test run A..B`): each
//! commit of the range is checked in a temporary checkout of its own, oldest
//! first, and its receipt covers that commit; the user's work tree, index and
//! HEAD are never touched, and no checkout outlives the run.
//!
//! The history is `tests/fixtures/make_range_repo.sh`: `base` (A), then B, C
//! (breaks `test`), D (fixes it), E; `docs` has the same inputs throughout.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{self, Env};

fn history(env: &Env) -> PathBuf {
    env.fixture_repo("make_range_repo.sh", "repo")
}

/// `git receipt run ARGS --json`: its exit code and its JSON.
fn run_json(env: &Env, repo: &Path, args: &[&str]) -> (i32, Value) {
    let r = env.receipt(repo, &[&["run", "--json"], args].concat());
    let v = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {r}"));
    (r.code, v)
}

/// The commits of `range` as stock git lists them, oldest first.
fn rev_list(env: &Env, repo: &Path, extra: &[&str], range: &str) -> Vec<String> {
    let out = env.git_ok(
        repo,
        &[&["rev-list", "--reverse"], extra, &[range]].concat(),
    );
    out.lines().map(str::to_owned).collect()
}

/// The commits a range run's JSON went through, in its order.
fn commits_of(v: &Value) -> Vec<String> {
    v["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .map(|c| c["commit"].as_str().unwrap().to_owned())
        .collect()
}

/// What became of check `name` at each commit of a range run's JSON.
fn results_of(v: &Value, name: &str) -> Vec<String> {
    v["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .map(|c| {
            c["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|k| k["name"] == name)
                .and_then(|k| k["result"].as_str())
                .unwrap_or("-")
                .to_owned()
        })
        .collect()
}

/// The states of check `name` in `status RANGE --json`, oldest first.
fn states_of(env: &Env, repo: &Path, range: &str, name: &str) -> Vec<String> {
    let r = env.receipt(repo, &["status", range, "--json"]);
    assert_eq!(r.code, 0, "{r}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let mut states: Vec<String> = v["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|k| k["name"] == name)
                .and_then(|k| k["state"].as_str())
                .unwrap_or("-")
                .to_owned()
        })
        .collect();
    states.reverse();
    states
}

/// Receipts of check `name`, oldest first.
fn receipts_of(env: &Env, repo: &Path, name: &str) -> Vec<Value> {
    let mut all: Vec<Value> = env
        .log_json(repo)
        .into_iter()
        .filter(|r| r["check"] == name)
        .collect();
    all.reverse();
    all
}

/// No checkout is left: git knows of the main work tree only, and the
/// directory and the lock are gone.
fn assert_no_checkout_left(env: &Env, repo: &Path) {
    let list = env.git_ok(repo, &["worktree", "list", "--porcelain"]);
    let trees: Vec<&str> = list
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .collect();
    assert_eq!(trees.len(), 1, "only the main work tree: {list}");
    let dir = repo.join(".git/receipt-worktrees");
    assert!(
        !dir.exists() || std::fs::read_dir(&dir).unwrap().next().is_none(),
        "{} is left with {:?}",
        dir.display(),
        std::fs::read_dir(&dir).map(|d| d.count())
    );
    assert!(
        !repo.join(".git/receipt-worktrees.lock").exists(),
        "the lock is left"
    );
    assert!(
        !repo.join(".git/worktrees").exists()
            || std::fs::read_dir(repo.join(".git/worktrees"))
                .unwrap()
                .next()
                .is_none(),
        "git still records a linked work tree"
    );
}

#[test]
fn each_commit_gets_its_own_receipt_and_the_work_tree_is_not_touched() {
    let env = Env::new();
    let repo = history(&env);
    // uncommitted work of every kind: an edit, a staged file, an untracked one
    std::fs::write(repo.join("src/lib.rs"), "broken by hand\n").unwrap();
    std::fs::write(repo.join("staged.txt"), "staged\n").unwrap();
    env.git_ok(&repo, &["add", "staged.txt"]);
    std::fs::write(repo.join("untracked.txt"), "mine\n").unwrap();
    let porcelain = env.git_ok(&repo, &["status", "--porcelain"]);
    let staged = env.git_ok(&repo, &["diff", "--cached"]);
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    let branch = env.git_ok(&repo, &["symbolic-ref", "HEAD"]);

    let (code, v) = run_json(&env, &repo, &["-k", "test", "base..main"]);
    assert_eq!(code, 1, "a commit failed: {v}");
    let range = rev_list(&env, &repo, &[], "base..main");
    assert_eq!(commits_of(&v), range, "every commit, oldest first");
    assert_eq!(
        results_of(&v, "test"),
        ["passed", "failed", "passed", "passed"]
    );

    // each receipt covers its commit: that commit and its tree, not the work tree
    let receipts = receipts_of(&env, &repo, "test");
    assert_eq!(receipts.len(), 4, "{receipts:?}");
    for (receipt, commit) in receipts.iter().zip(&range) {
        assert_eq!(receipt["commit"], commit.as_str());
        let tree = env.git_ok(&repo, &["rev-parse", &format!("{commit}^{{tree}}")]);
        assert_eq!(receipt["tree"], tree.as_str(), "{receipt}");
        assert_eq!(receipt["dirty"], false, "{receipt}");
    }
    assert_eq!(
        states_of(&env, &repo, "base..main", "test"),
        ["present", "failed", "present", "present"]
    );

    // the user's work is as it was
    assert_eq!(env.git_ok(&repo, &["status", "--porcelain"]), porcelain);
    assert_eq!(env.git_ok(&repo, &["diff", "--cached"]), staged);
    assert_eq!(
        std::fs::read_to_string(repo.join("src/lib.rs")).unwrap(),
        "broken by hand\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("untracked.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(env.git_ok(&repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(env.git_ok(&repo, &["symbolic-ref", "HEAD"]), branch);
    assert_no_checkout_left(&env, &repo);
}

#[test]
fn the_first_failure_stops_the_run_unless_keep_going() {
    let env = Env::new();
    let repo = history(&env);
    let range = rev_list(&env, &repo, &[], "base..main");

    let r = env.receipt(&repo, &["run", "test", "base..main"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr.contains("stopped at") && r.stderr.contains("-k (--keep-going)"),
        "{r}"
    );
    assert!(
        r.stderr
            .contains(&format!("{} break lib: test failed", &range[1][..7])),
        "one line per commit, with its subject: {r}"
    );
    let ran: Vec<String> = receipts_of(&env, &repo, "test")
        .iter()
        .map(|r| r["commit"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ran, range[..2], "nothing after the failing commit ran");
    assert_no_checkout_left(&env, &repo);

    let (code, v) = run_json(&env, &repo, &["--keep-going", "test", "base..main"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["not_run"], serde_json::json!([]), "{v}");
    assert_eq!(
        results_of(&v, "test"),
        ["cached", "failed", "passed", "passed"],
        "a failed receipt is run again, a present one is not"
    );
    assert_no_checkout_left(&env, &repo);
}

/// The one notes ref of the run's writer (`refs/notes/receipts/<writer>`).
fn notes_ref(env: &Env, repo: &Path) -> String {
    let refs = env.git_ok(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/notes/receipts/",
        ],
    );
    let refs: Vec<&str> = refs.lines().collect();
    assert_eq!(refs.len(), 1, "one writer's notes: {refs:?}");
    refs[0].to_owned()
}

#[test]
fn a_range_runs_notes_show_every_receipt_in_one_notes_commit_however_it_ends() {
    let env = Env::new();
    let repo = history(&env);
    let range = rev_list(&env, &repo, &[], "base..main");

    // stopped by the failure at the second commit: its notes are still written
    let r = env.receipt(&repo, &["run", "test", "base..main"]);
    assert_eq!(r.code, 1, "{r}");
    let notes = notes_ref(&env, &repo);
    let show = |commit: &str| {
        let r = env.git(&repo, &["notes", "--ref", &notes, "show", commit]);
        if r.code == 0 { r.stdout } else { String::new() }
    };
    let count = || {
        env.git_ok(&repo, &["rev-list", "--count", &notes])
            .trim()
            .parse::<u32>()
            .unwrap()
    };
    let receipts = receipts_of(&env, &repo, "test");
    assert_eq!(receipts.len(), 2, "{receipts:?}");
    for receipt in &receipts {
        let (id, commit) = (
            receipt["id"].as_str().unwrap(),
            receipt["commit"].as_str().unwrap(),
        );
        let word = if receipt["passed"] == true {
            "passed"
        } else {
            "failed"
        };
        assert!(
            show(commit).contains(&format!("{id} ")) && show(commit).contains(word),
            "stock git shows the note of {commit}: {:?}",
            show(commit)
        );
    }
    assert_eq!(count(), 1, "one notes commit for the whole run");

    // the rest, past the failure: one notes commit more, for three receipts
    let r = env.receipt(&repo, &["run", "--keep-going", "test", "base..main"]);
    assert_eq!(r.code, 1, "{r}");
    let receipts = receipts_of(&env, &repo, "test");
    assert_eq!(receipts.len(), 5, "{receipts:?}");
    for commit in &range[1..] {
        let newest = receipts
            .iter()
            .rev()
            .find(|r| r["commit"] == commit.as_str())
            .unwrap_or_else(|| panic!("a receipt of {commit}"));
        assert!(
            show(commit).contains(newest["id"].as_str().unwrap()),
            "{commit}: {:?}",
            show(commit)
        );
    }
    assert_eq!(count(), 2, "one notes commit for the second run");
    // and what stock git shows is what verify finds the chain says
    let r = env.receipt(&repo, &["verify"]);
    assert_eq!(r.code, 0, "{r}");
}

#[test]
fn a_second_run_is_all_cached_and_force_runs_again() {
    let env = Env::new();
    let repo = history(&env);
    let (code, v) = run_json(&env, &repo, &["--all", "main~2..main"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(results_of(&v, "test"), ["passed", "passed"]);
    // docs has the same inputs at both commits: the first receipt covers the second
    assert_eq!(results_of(&v, "docs"), ["passed", "cached"]);
    let written = env.log_json(&repo).len();
    assert_eq!(written, 3);

    let (code, v) = run_json(&env, &repo, &["--all", "main~2..main"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(results_of(&v, "test"), ["cached", "cached"]);
    assert_eq!(results_of(&v, "docs"), ["cached", "cached"]);
    assert_eq!(v["passed"], 0);
    assert_eq!(env.log_json(&repo).len(), written, "nothing ran");

    // --stale over a range skips what is present as well
    let (code, v) = run_json(&env, &repo, &["--stale", "main~2..main"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["cached"], 4, "{v}");

    let (code, v) = run_json(&env, &repo, &["--all", "--force", "main~2..main"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(results_of(&v, "test"), ["passed", "passed"]);
    assert_eq!(results_of(&v, "docs"), ["passed", "passed"]);
    assert_eq!(env.log_json(&repo).len(), written + 4);
    assert_no_checkout_left(&env, &repo);
}

#[test]
fn max_commits_refuses_a_larger_range_by_name() {
    let env = Env::new();
    let repo = history(&env);
    let r = env.receipt(&repo, &["run", "test", "base..main", "--max-commits", "3"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains("base..main has 4 commits, more than --max-commits 3"),
        "{r}"
    );
    assert!(env.log_json(&repo).is_empty(), "nothing ran");
    let r = env.receipt(
        &repo,
        &["run", "-k", "test", "base..main", "--max-commits", "4"],
    );
    assert_eq!(r.code, 1, "four commits are within --max-commits 4: {r}");
    assert_eq!(receipts_of(&env, &repo, "test").len(), 4);
}

#[test]
fn first_parent_leaves_out_the_commits_of_merged_branches() {
    let env = Env::new();
    // root, ten first-parent commits; the tenth merges two commits of side-10
    let mut cmd = Command::new("bash");
    cmd.arg(common::fixture("make_merge_history_repo.sh"))
        .arg(env.path("small"))
        .arg("10");
    env.seal(&mut cmd);
    assert!(cmd.status().unwrap().success());
    let repo = env.path("small");
    let range = "main~10..main";
    let first_parent = rev_list(&env, &repo, &["--first-parent"], range);
    let all = rev_list(&env, &repo, &[], range);
    assert_eq!((first_parent.len(), all.len()), (10, 12), "the fixture");

    let (code, v) = run_json(&env, &repo, &["--first-parent", "test", range]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(commits_of(&v), first_parent);
    assert_eq!(v["first_parent"], true);
    let side = env.git_ok(&repo, &["rev-parse", "side-10", "side-10~1"]);
    for c in side.lines() {
        assert!(!commits_of(&v).contains(&c.to_owned()), "{c} is on side-10");
    }

    let (code, v) = run_json(&env, &repo, &["test", range]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(commits_of(&v), all, "without it, the merged commits too");
    assert_no_checkout_left(&env, &repo);
}

#[test]
fn a_killed_runs_checkout_and_lock_are_removed_by_the_next_run() {
    let env = Env::new();
    let repo = history(&env);
    // what `kill -9` leaves: a checkout git knows of, and the lock file (whose
    // flock went with the process) naming a process that is gone
    env.git_ok(
        &repo,
        &[
            "worktree",
            "add",
            "--detach",
            ".git/receipt-worktrees/0000000-1-1",
            "base",
        ],
    );
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    std::fs::write(
        repo.join(".git/receipt-worktrees.lock"),
        format!("{}\n", gone.id()),
    )
    .unwrap();

    let r = env.receipt(&repo, &["run", "test", "main~1..main"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("a temporary checkout left by a run that was killed"),
        "{r}"
    );
    assert_no_checkout_left(&env, &repo);
}

#[test]
fn a_range_run_is_refused_while_another_holds_the_lock() {
    use std::os::fd::AsRawFd as _;
    let env = Env::new();
    let repo = history(&env);
    let lock = repo.join(".git/receipt-worktrees.lock");
    // another run: a process holding the lock's flock, as a running one does
    let held = std::fs::File::create(&lock).unwrap();
    std::fs::write(&lock, "4242\n").unwrap();
    // SAFETY: flock(2) on a descriptor this test owns
    assert_eq!(
        unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let r = env.receipt(&repo, &["run", "test", "main~1..main"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(
            "another `git receipt run` over a range is running in this repository (process 4242 holds"
        ) && r.stderr.contains("hint: wait for it to end, or stop it (kill 4242)"),
        "{r}"
    );
    assert!(lock.exists(), "the other run's lock is left alone");
    assert!(env.log_json(&repo).is_empty(), "nothing ran");
    // it ends: the kernel lets go of its lock, and the next run takes it
    drop(held);
    env.receipt_ok(&repo, &["run", "test", "main~1..main"]);
    assert_no_checkout_left(&env, &repo);
}

#[test]
fn ctrl_c_in_a_range_run_records_nothing_and_removes_the_checkout() {
    let env = Env::new();
    let repo = history(&env);
    let started = env.path("started");
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str(&format!(
        "[check \"slow\"]\n\trun = echo $$ > {} && exec sleep 120\n",
        started.display()
    ));
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "a slow check"]);

    let mut cmd = Command::new(common::bin());
    // --json: the answer says where it stopped, and what did not run
    cmd.args(["run", "slow", "main~1..main", "--json"]);
    env.seal(&mut cmd);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    common::sigint_as_in_a_terminal(&mut cmd);
    let child = cmd
        .current_dir(&repo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&started).is_ok_and(|t| t.ends_with('\n')) {
        assert!(Instant::now() < deadline, "the check never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        std::fs::read_dir(repo.join(".git/receipt-worktrees"))
            .unwrap()
            .next()
            .is_some(),
        "the check runs in a checkout"
    );
    // a terminal's Ctrl-C: the whole foreground group
    let sent = Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = common::to_run(child.wait_with_output().unwrap());
    assert_eq!(out.code, 130, "{out}");
    assert!(out.stderr.contains("interrupted (SIGINT"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    let main = env.git_ok(&repo, &["rev-parse", "main"]).trim().to_owned();
    assert_eq!(v["interrupted"]["signal"], "SIGINT", "{v}");
    assert_eq!(v["interrupted"]["at"], main.as_str(), "{v}");
    assert_eq!(v["not_run"], serde_json::json!([main]), "{v}");
    assert_eq!(v["passed"], 0, "{v}");
    assert!(
        env.log_json(&repo).is_empty(),
        "an interrupted run was recorded"
    );
    assert_no_checkout_left(&env, &repo);
}

#[test]
fn a_check_not_declared_at_every_commit_is_refused_before_anything_runs() {
    let env = Env::new();
    let repo = history(&env);
    let r = env.receipt(&repo, &["run", "lint", "base..main"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains("check \"lint\" is not declared in .gitreceipts at"),
        "{r}"
    );
    let r = env.receipt(&repo, &["run", "test", "base..main", "main~2..main"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("one range at a time"), "{r}");
    let r = env.receipt(&repo, &["run", "test", "--keep-going"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("--keep-going is for a run over a range"),
        "{r}"
    );
    assert!(env.log_json(&repo).is_empty(), "nothing ran");
}

#[test]
fn a_declared_check_named_with_two_dots_is_a_name_not_a_range() {
    let env = Env::new();
    let repo = history(&env);
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str("[check \"v1..2\"]\n\trun = true\n");
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "a check with dots"]);
    let r = env.receipt_ok(&repo, &["run", "v1..2"]);
    assert!(
        r.stderr.contains("v1..2 passed"),
        "run on the work tree: {r}"
    );
    let (code, v) = run_json(&env, &repo, &["v1..2", "main~1..main"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(results_of(&v, "v1..2"), ["cached"], "{v}");
}

#[test]
fn a_sparse_work_tree_still_gets_receipts_of_whole_commits() {
    let env = Env::new();
    let repo = history(&env);
    env.git_ok(&repo, &["sparse-checkout", "set", "src"]);
    assert!(!repo.join("docs").exists(), "the fixture is sparse now");
    // two commits, so the second is checked in the checkout moved there
    let (code, v) = run_json(&env, &repo, &["--all", "--force", "main~2..main"]);
    assert_eq!(code, 0, "docs/index.md is there in the checkout: {v}");
    let receipts = env.log_json(&repo);
    assert_eq!(receipts.len(), 4, "two checks at two commits");
    for receipt in receipts {
        let commit = receipt["commit"].as_str().unwrap();
        let tree = env.git_ok(&repo, &["rev-parse", &format!("{commit}^{{tree}}")]);
        assert_eq!(receipt["dirty"], false, "{receipt}");
        assert_eq!(receipt["tree"], tree.as_str(), "{receipt}");
    }
    assert!(
        !repo.join("docs").exists(),
        "the user's sparse checkout stays"
    );
    assert_no_checkout_left(&env, &repo);
}

#[test]
fn a_range_run_checks_out_each_commits_submodule_at_its_recorded_commit() {
    let env = Env::new();
    let repo = history(&env);
    // a library repository, two versions
    let lib = env.path("lib");
    env.git_ok(
        &env.path(""),
        &["init", "-q", "-b", "main", lib.to_str().unwrap()],
    );
    std::fs::write(lib.join("lib.txt"), "v1\n").unwrap();
    env.git_ok(&lib, &["add", "-A"]);
    env.git_ok(&lib, &["commit", "-qm", "v1"]);
    // the superproject takes it as a submodule, checked by `sub`: the file is
    // there and the submodule is at the commit the superproject records
    let file_ok = ["-c", "protocol.file.allow=always"];
    env.git_ok(
        &repo,
        &[
            &file_ok[..],
            &[
                "submodule",
                "add",
                "-q",
                lib.to_str().unwrap(),
                "vendor/lib",
            ],
        ]
        .concat(),
    );
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str(
        // and what it writes into the submodule does not reach the next commit
        "[check \"sub\"]\n\trun = \"test -f vendor/lib/lib.txt && test \\\"$(git rev-parse HEAD:vendor/lib)\\\" = \\\"$(git -C vendor/lib rev-parse HEAD)\\\" && test ! -e vendor/lib/litter && touch vendor/lib/litter && echo junk >> vendor/lib/lib.txt\"\n\tpath = vendor\n",
    );
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-qm", "vendor lib v1"]);
    // the library moves on, and so does the superproject's submodule
    std::fs::write(lib.join("lib.txt"), "v2\n").unwrap();
    env.git_ok(&lib, &["commit", "-qam", "v2"]);
    let sub = repo.join("vendor/lib");
    env.git_ok(
        &sub,
        &[&file_ok[..], &["pull", "-q", "origin", "main"]].concat(),
    );
    env.git_ok(&repo, &["commit", "-qam", "vendor lib v2"]);
    // and the user's own submodule is left somewhere else entirely
    env.git_ok(&sub, &["checkout", "-q", "HEAD~1"]);

    let (code, v) = run_json(&env, &repo, &["sub", "main~2..main"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["passed"], 2,
        "each commit's submodule, at its commit: {v}"
    );
    // the submodule's clone was the local one: nothing was fetched from its URL
    std::fs::remove_dir_all(&lib).unwrap();
    let (code, v) = run_json(&env, &repo, &["sub", "main~2..main", "--force"]);
    assert_eq!(code, 0, "with the submodule's URL gone: {v}");
    assert_no_checkout_left(&env, &repo);
    // the user's work tree and its submodule are as they were
    let head_of_sub = env.git_ok(&sub, &["rev-parse", "HEAD"]);
    let recorded_v1 = env.git_ok(&repo, &["rev-parse", "main~1:vendor/lib"]);
    assert_eq!(head_of_sub, recorded_v1);
}

#[test]
fn what_a_check_leaves_in_the_checkout_does_not_reach_the_next_commit() {
    // one checkout serves the run: moved from commit to commit, it must be as a
    // new checkout of each commit would be, whatever the check before did in it
    let env = Env::new();
    let repo = history(&env);
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    // fails when it finds what it leaves: an untracked file, an ignored one, a
    // changed tracked file; and it leaves HEAD on a branch it makes, once
    contract.push_str(concat!(
        "[check \"litter\"]\n",
        "\trun = \"test ! -e litter.txt && test ! -e ignored/x && ! grep -q junk docs/index.md",
        " && mkdir -p ignored && touch litter.txt ignored/x && echo junk >> docs/index.md",
        " && { git rev-parse -q --verify refs/heads/trap >/dev/null || git switch -q -c trap; }\"\n",
    ));
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    std::fs::write(repo.join(".gitignore"), "ignored/\n").unwrap();
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-qm", "a littering check"]);
    for n in 1..=2 {
        std::fs::write(repo.join("src/lib.rs"), format!("ok {n}0\n")).unwrap();
        env.git_ok(&repo, &["commit", "-qam", &format!("lib {n}0")]);
    }
    let range = rev_list(&env, &repo, &[], "main~3..main");

    let (code, v) = run_json(&env, &repo, &["litter", "main~3..main"]);
    assert_eq!(code, 0, "each commit's check found a clean checkout: {v}");
    assert_eq!(results_of(&v, "litter"), ["passed", "passed", "passed"]);
    let receipts = receipts_of(&env, &repo, "litter");
    let covered: Vec<&str> = receipts
        .iter()
        .map(|r| r["commit"].as_str().unwrap())
        .collect();
    assert_eq!(covered, range, "one receipt per commit, each its own");
    for r in &receipts {
        assert_eq!(r["dirty"], false, "checked as the commit has it: {r}");
    }
    // the branch the first check switched to stays where it was made: moving
    // the checkout detaches HEAD first, so no branch moves with it
    assert_eq!(
        env.git_ok(&repo, &["rev-parse", "trap"]),
        range[0],
        "the branch a check made did not move"
    );
    env.git_ok(&repo, &["branch", "-D", "trap"]);
    assert_no_checkout_left(&env, &repo);
}

#[test]
fn a_second_check_at_a_commit_is_judged_on_what_the_first_left() {
    // the first check at a commit finds the checkout as moving it left it (its
    // subject is the commit's, with no look at the work tree); a later one at
    // the same commit finds what the checks before it did, and says so
    let env = Env::new();
    let repo = history(&env);
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str(concat!(
        "[check \"a-scribble\"]\n",
        "\trun = \"echo scribbled >> docs/index.md\"\n",
        "\tpath = src\n",
        "[check \"b-read\"]\n",
        "\trun = true\n",
        "\tpath = docs\n",
    ));
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    env.git_ok(
        &repo,
        &["commit", "-qam", "two checks that share a checkout"],
    );
    std::fs::write(repo.join("src/lib.rs"), "ok 50\n").unwrap();
    env.git_ok(&repo, &["commit", "-qam", "lib 50"]);
    let range = rev_list(&env, &repo, &[], "main~2..main");

    let (code, v) = run_json(&env, &repo, &["a-scribble", "b-read", "main~2..main"]);
    assert_eq!(code, 0, "{v}");
    for (name, dirty) in [("a-scribble", false), ("b-read", true)] {
        let receipts = receipts_of(&env, &repo, name);
        assert_eq!(receipts.len(), 2, "{name}: {receipts:?}");
        for (r, commit) in receipts.iter().zip(&range) {
            assert_eq!(r["commit"], commit.as_str(), "{name}");
            let tree = env.git_ok(&repo, &["rev-parse", &format!("{commit}^{{tree}}")]);
            assert_eq!(r["dirty"], dirty, "{name}: {r}");
            assert_eq!(r["tree"] == tree.as_str(), !dirty, "{name}: {r}");
        }
    }
    assert_no_checkout_left(&env, &repo);
}
