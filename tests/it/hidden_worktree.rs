//! Issue 24, case 7: `subject.tree` is what ran, even where `git status` is told
//! not to look. A file marked assume-unchanged or skip-worktree, a sparse
//! checkout that leaves a failing test off disk, an fsmonitor hook that answers
//! for the disk, and a submodule with uncommitted changes each made `run` record
//! `dirty: false` and HEAD's tree for a check that passed only because of what
//! git hid, so `status` said present for a commit that fails.
//!
//! In every case stock `git status` is the witness that the state is hidden
//! (it prints nothing), the committed state fails the check, and the work tree
//! makes it pass. The fix: the receipt records the real content as dirty (so it
//! covers no commit's tree), names the path, or refuses (a submodule, a sparse
//! index) with what to do; honest controls still read present.

use std::path::{Path, PathBuf};

use crate::common::Env;
use serde_json::Value;

fn setup() -> (Env, PathBuf) {
    let env = Env::new();
    let repo = env.fixture_repo("make_hidden_worktree_repo.sh", "repo");
    (env, repo)
}

/// Stock git sees nothing to report: the state under test is hidden from it.
fn git_status_is_clean(env: &Env, repo: &Path) {
    let status = env.git_ok(repo, &["status", "--porcelain"]);
    assert_eq!(
        status, "",
        "the setup should hide the change from git status"
    );
}

/// The newest receipt's subject, for check `check`.
fn newest_subject(env: &Env, repo: &Path, check: &str) -> Value {
    let log = env.log_json(repo);
    let newest = log
        .iter()
        .find(|e| e["check"] == check)
        .unwrap_or_else(|| panic!("no receipt for {check} in {log:?}"));
    let id = newest["id"].as_str().unwrap();
    let shown = env.receipt_ok(repo, &["show", "--json", id]);
    let v: Value = serde_json::from_str(&shown.stdout).expect("show --json is JSON");
    let v = if v.is_array() { v[0].clone() } else { v };
    let subject = v["receipt"]["receipt"]["subject"].clone();
    assert!(subject.is_object(), "no subject in {v}");
    subject
}

/// `status --json HEAD`'s state of `check`.
fn state_at_head(env: &Env, repo: &Path, check: &str) -> String {
    env.status_of(repo, Some("HEAD"), check)["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn head_tree(env: &Env, repo: &Path) -> String {
    env.git_ok(repo, &["rev-parse", "HEAD^{tree}"])
}

/// A run that passed on hidden content: recorded dirty, not HEAD's tree, and so
/// not present at HEAD (whose committed content fails).
fn assert_recorded_as_dirty(env: &Env, repo: &Path, check: &str) {
    let subject = newest_subject(env, repo, check);
    assert_eq!(subject["dirty"], true, "subject: {subject}");
    assert_ne!(
        subject["tree"].as_str().unwrap(),
        head_tree(env, repo),
        "the receipt must not claim HEAD's tree: {subject}"
    );
    assert_ne!(state_at_head(env, repo, check), "present");
}

fn mark_and_edit(flag: &str) {
    let (env, repo) = setup();
    env.git_ok(&repo, &["update-index", flag, "src/flag"]);
    std::fs::write(repo.join("src/flag"), "good\n").unwrap();
    git_status_is_clean(&env, &repo);
    let r = env.receipt(&repo, &["run", "flag"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("src/flag is marked") && r.stderr.contains("(dirty)"),
        "run must say which path git status hid: {r}"
    );
    assert!(r.stderr.contains("[uncommitted changes]"), "{r}");
    assert_recorded_as_dirty(&env, &repo, "flag");
    // the user's index keeps its mark: only a private copy was unmarked
    let listed = env.git_ok(&repo, &["ls-files", "-v", "src/flag"]);
    assert!(
        listed.starts_with('h') || listed.starts_with('S'),
        "the mark is gone from the user's index: {listed}"
    );
}

#[test]
fn an_edit_under_assume_unchanged_is_recorded_as_dirty() {
    mark_and_edit("--assume-unchanged");
}

#[test]
fn an_edit_under_skip_worktree_is_recorded_as_dirty() {
    mark_and_edit("--skip-worktree");
}

#[test]
fn a_sparse_checkout_that_leaves_a_failing_test_off_disk_is_recorded_without_it() {
    let (env, repo) = setup();
    env.git_ok(
        &repo,
        &["sparse-checkout", "set", "--no-cone", "/*", "!/t/fail.sh"],
    );
    assert!(
        !repo.join("t/fail.sh").exists(),
        "the sparse checkout should drop it"
    );
    git_status_is_clean(&env, &repo);
    let r = env.receipt(&repo, &["run", "suite"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("t/fail.sh is marked skip-worktree") && r.stderr.contains("not on disk"),
        "run must name the file the check could not see: {r}"
    );
    assert_recorded_as_dirty(&env, &repo, "suite");
    // the recorded tree lacks the file, as stock git reads it
    let tree = newest_subject(&env, &repo, "suite")["tree"]
        .as_str()
        .unwrap()
        .to_owned();
    let listed = env.git_ok(&repo, &["ls-tree", "-r", "--name-only", &tree]);
    assert!(!listed.lines().any(|l| l == "t/fail.sh"), "{listed}");
    assert!(listed.lines().any(|l| l == "t/ok.sh"), "{listed}");
}

#[test]
fn a_sparse_index_is_refused_with_what_to_do() {
    let (env, repo) = setup();
    env.git_ok(
        &repo,
        &["sparse-checkout", "set", "--cone", "--sparse-index", "src"],
    );
    assert!(!repo.join("t").exists());
    let before = env.log_json(&repo).len();
    let r = env.receipt(&repo, &["run", "suite"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("index is sparse") && r.stderr.contains("git config index.sparse false"),
        "{r}"
    );
    assert_eq!(env.log_json(&repo).len(), before, "nothing may be recorded");
}

#[test]
fn an_fsmonitor_that_answers_for_the_disk_is_not_believed() {
    let (env, repo) = setup();
    // a hook that always says nothing changed (fsmonitor protocol 2: a token, no paths)
    let hook = env.path("lying-fsmonitor");
    std::fs::write(&hook, "#!/bin/sh\nprintf 'token\\0'\n").unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&hook)
        .status()
        .unwrap();
    env.git_ok(&repo, &["config", "core.fsmonitor", hook.to_str().unwrap()]);
    env.git_ok(&repo, &["config", "core.fsmonitorHookVersion", "2"]);
    // one status records the hook's token and marks every entry valid
    env.git_ok(&repo, &["status", "--porcelain"]);
    std::fs::write(repo.join("src/flag"), "good\n").unwrap();
    git_status_is_clean(&env, &repo);
    let r = env.receipt(&repo, &["run", "flag"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("[uncommitted changes]"), "{r}");
    assert_recorded_as_dirty(&env, &repo, "flag");
}

#[test]
fn a_submodule_with_uncommitted_changes_is_refused_by_name() {
    let (env, repo) = setup();
    std::fs::write(repo.join("sub/file"), "good\n").unwrap();
    // stock git hides it with the setting run used to pass
    let hidden = env.git_ok(
        &repo,
        &["status", "--porcelain", "--ignore-submodules=dirty"],
    );
    assert_eq!(hidden, "");
    let before = env.log_json(&repo).len();
    let r = env.receipt(&repo, &["run", "sub"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("submodule sub has modified files")
            && r.stderr.contains("commit them in the submodule"),
        "{r}"
    );
    assert_eq!(env.log_json(&repo).len(), before, "nothing may be recorded");

    // an untracked file there is refused as well: the check could read it
    env.git_ok(&repo.join("sub"), &["checkout", "--", "file"]);
    std::fs::write(repo.join("sub/extra"), "x\n").unwrap();
    let r = env.receipt(&repo, &["run", "sub"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("submodule sub has untracked files"),
        "{r}"
    );
}

#[test]
fn honest_controls_still_read_present() {
    let (env, repo) = setup();
    // committed good content in the submodule and here: a clean, present run
    std::fs::write(repo.join("sub/file"), "good\n").unwrap();
    env.git_ok(&repo.join("sub"), &["commit", "-q", "-am", "good"]);
    std::fs::write(repo.join("src/flag"), "good\n").unwrap();
    std::fs::remove_file(repo.join("t/fail.sh")).unwrap();
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "fix everything"]);
    // a mark on an unchanged file changes nothing
    env.git_ok(&repo, &["update-index", "--assume-unchanged", "t/ok.sh"]);
    for check in ["flag", "suite", "sub"] {
        let r = env.receipt(&repo, &["run", check]);
        assert_eq!(r.code, 0, "{check}: {r}");
        assert!(!r.stderr.contains("is marked"), "{check}: {r}");
        let subject = newest_subject(&env, &repo, check);
        assert_eq!(subject["dirty"], false, "{check}: {subject}");
        assert_eq!(subject["tree"].as_str().unwrap(), head_tree(&env, &repo));
        assert_eq!(state_at_head(&env, &repo, check), "present", "{check}");
    }
}
