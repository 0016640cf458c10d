//! Write hygiene: a dirty `run` scans the work tree once and still checks exactly
//! the tree `git add -A` would stage (stock git is the oracle); writers leave the
//! repository packed the way git's own commands do (`git gc --auto`, detached);
//! your own notes survive a plain `git fetch` in a clone where `init` ran after
//! the key existed.

use crate::common::{self, Daemon, Env};
use std::path::Path;

/// The tree stock git writes for the work tree as if everything were staged:
/// `git add -A` into a copy of the index, then `git write-tree`.
fn oracle_tree(env: &Env, dir: &Path) -> String {
    let index = env.path("oracle-index");
    std::fs::copy(dir.join(".git/index"), &index).unwrap();
    let mut add = std::process::Command::new("git");
    env.seal(&mut add);
    let out = add
        .current_dir(dir)
        .env("GIT_INDEX_FILE", &index)
        .args(["add", "-A"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut write = std::process::Command::new("git");
    env.seal(&mut write);
    let out = write
        .current_dir(dir)
        .env("GIT_INDEX_FILE", &index)
        .arg("write-tree")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The subject tree of the newest receipt in `dir`.
fn receipt_tree(env: &Env, dir: &Path) -> (String, bool) {
    let log = env.log_json(dir);
    let newest = &log[0];
    (
        newest["tree"].as_str().unwrap().to_owned(),
        newest["dirty"].as_bool().unwrap(),
    )
}

fn messy(env: &Env, rel: &str, extra_files: usize) -> std::path::PathBuf {
    let dir = env.path(rel);
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(common::fixture("make_messy_worktree.sh"))
        .arg(&dir)
        .arg(extra_files.to_string());
    env.seal(&mut cmd);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "fixture failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

fn assert_checks_what_git_add_all_stages(extra_files: usize) {
    let env = Env::new();
    let dir = messy(&env, "messy", extra_files);
    let status = env.git_ok(&dir, &["status", "--porcelain=v1"]);
    let index = |env: &Env| {
        // entries and what is staged (an intent-to-add entry shows as added)
        let entries = env.git_ok(&dir, &["ls-files", "--stage", "-z"]);
        let staged = env.git_ok(&dir, &["diff", "--cached", "--name-status", "-z"]);
        (entries, staged)
    };
    let index_before = index(&env);
    env.receipt_ok(&dir, &["run", "noop", "--", "true"]);
    let (tree, dirty) = receipt_tree(&env, &dir);
    assert_eq!(index(&env), index_before, "the user's index is untouched");
    let oracle = oracle_tree(&env, &dir);
    assert_eq!(
        tree, oracle,
        "the receipt's tree is the tree `git add -A && git write-tree` gives, for a work tree with:\n{status}"
    );
    assert!(dirty, "a work tree with changes is dirty");
    // and the tree holds what the mess made, so the oracle is not trivially equal
    let listed = env.git_ok(&dir, &["ls-tree", "-r", "-z", "--name-only", &tree]);
    let names: Vec<&str> = listed.split('\0').collect();
    for present in [
        "*",
        ":(exclude)src",
        "src/[ab].rs",
        "line\nbreak.txt",
        "docs/new-name.md",
        "docs/new-name-2.md",
        "new/deeper/x.rs",
        "embedded",
        "sub",
    ] {
        assert!(names.contains(&present), "{present:?} in {names:?}");
    }
    for absent in [
        "docs/old-name.md",
        "docs/old-name-2.md",
        "docs/gone-staged.md",
        "docs/gone-unstaged.md",
        "debug.log",
    ] {
        assert!(!names.contains(&absent), "{absent:?} not in {names:?}");
    }
}

#[test]
fn a_dirty_run_checks_exactly_the_tree_git_add_all_stages() {
    assert_checks_what_git_add_all_stages(0);
}

#[test]
fn a_dirty_run_with_thousands_of_changed_paths_checks_the_same_tree() {
    // more paths than are staged one pathspec each: the whole tree is staged
    assert_checks_what_git_add_all_stages(2500);
}

#[test]
fn a_run_with_only_staged_changes_checks_the_index_tree() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    std::fs::write(dir.join("src/lib.rs"), "pub fn staged() {}\n").unwrap();
    env.git_ok(&dir, &["add", "src/lib.rs"]);
    env.receipt_ok(&dir, &["run", "noop", "--", "true"]);
    let (tree, dirty) = receipt_tree(&env, &dir);
    assert_eq!(tree, env.git_ok(&dir, &["write-tree"]));
    assert!(dirty);
}

/// Loose objects in one fan-out directory of `dir`'s object store.
fn loose_in(dir: &Path, fanout: &str) -> usize {
    std::fs::read_dir(dir.join(".git/objects").join(fanout))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn is_loose(dir: &Path, oid: &str) -> bool {
    dir.join(".git/objects")
        .join(&oid[..2])
        .join(&oid[2..])
        .exists()
}

#[test]
fn receipts_in_a_repository_with_a_small_gc_auto_end_up_packed() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    // Enough loose objects (deterministic: fixed contents and dates) that git's own
    // estimate, loose objects in objects/17 against gc.auto/256, is over a small
    // gc.auto.
    std::fs::create_dir_all(dir.join("data")).unwrap();
    for i in 0..600 {
        std::fs::write(dir.join(format!("data/{i}")), format!("{i}\n")).unwrap();
    }
    env.git_ok(&dir, &["add", "data"]);
    env.git_ok(&dir, &["commit", "-q", "-m", "data"]);
    assert!(
        loose_in(&dir, "17") >= 2,
        "the fixture leaves more than 1 loose object in objects/17"
    );
    // gc.auto = 0 disables: many receipts, nothing packed
    env.git_ok(&dir, &["config", "gc.auto", "0"]);
    for _ in 0..10 {
        env.receipt_ok(&dir, &["run", "noop", "--", "true"]);
    }
    let writer = env.only_writer(&dir);
    let chain = env.git_ok(&dir, &["rev-list", &format!("refs/receipts/{writer}")]);
    let chain: Vec<&str> = chain.lines().collect();
    assert_eq!(chain.len(), 10);
    assert!(
        chain.iter().all(|c| is_loose(&dir, c)),
        "nothing packed yet"
    );
    // gc.auto = 256 (one object in objects/17): the next receipt starts gc --auto
    env.git_ok(&dir, &["config", "gc.auto", "256"]);
    let r = env.receipt_ok(&dir, &["run", "noop", "--", "true"]);
    assert!(
        !r.stderr.to_lowercase().contains("pack"),
        "the detached gc says nothing: {r}"
    );
    let tip = env.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]);
    // The gc runs detached: wait for it, bounded (this asserts nothing about speed).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let packed = |c: &&str| !is_loose(&dir, c);
    while !(chain.iter().all(packed) && packed(&tip.as_str()) && !dir.join(".git/gc.pid").exists())
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        chain.iter().all(packed) && packed(&tip.as_str()),
        "every receipt's chain commit ends up in a pack"
    );
    assert!(
        loose_in(&dir, "17") <= 1,
        "git's own estimate is under gc.auto again"
    );
    env.receipt_ok(&dir, &["verify"]);
}

fn clone(env: &Env, url: &str, rel: &str) -> std::path::PathBuf {
    let dir = env.path(rel);
    env.git_ok(env.tmp.path(), &["clone", "-q", url, dir.to_str().unwrap()]);
    dir
}

#[test]
fn init_in_a_clone_where_the_key_already_exists_keeps_plain_fetch_off_your_own_chain() {
    let env = Env::new(); // one HOME, one key, two clones
    let daemon = Daemon::start(&env);
    let seed = env.fixture_repo("make_basic_repo.sh", "seed");
    let (_, url) = daemon.bare(&env, "shared.git");
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    // clone a creates the key and pushes a receipt
    let a = clone(&env, &url, "a");
    env.receipt_ok(&a, &["init"]);
    env.receipt_ok(&a, &["run", "test"]);
    env.receipt_ok(&a, &["push"]);
    let me = env.only_writer(&a);
    // clone b: the key exists already when init runs
    let b = clone(&env, &url, "b");
    env.receipt_ok(&b, &["init"]);
    let fetch_specs = env.git_ok(&b, &["config", "--get-all", "remote.origin.fetch"]);
    for spec in [
        format!("^refs/receipts/{me}"),
        format!("^refs/notes/receipts/{me}"),
    ] {
        assert!(
            fetch_specs.lines().any(|l| l == spec),
            "init excludes your own refs: {spec} in\n{fetch_specs}"
        );
    }
    std::fs::write(b.join("docs/index.md"), "# more docs\n").unwrap();
    env.git_ok(&b, &["commit", "-qam", "docs"]);
    env.receipt_ok(&b, &["run", "docs"]); // not pushed
    let mine = env.log_json(&b)[0]["id"].as_str().unwrap().to_owned();
    let chain_before = env.git_ok(&b, &["rev-parse", &format!("refs/receipts/{me}")]);
    // clone a writes and pushes again: the remote's notes of this writer move on
    env.receipt_ok(&a, &["run", "docs"]);
    env.receipt_ok(&a, &["push"]);
    let r = env.git(&b, &["fetch"]);
    assert_eq!(
        r.code, 0,
        "a plain fetch neither rejects nor forces your refs: {r}"
    );
    assert_eq!(
        env.git_ok(&b, &["rev-parse", &format!("refs/receipts/{me}")]),
        chain_before,
        "your chain is untouched"
    );
    let note = env.git_ok(
        &b,
        &["notes", &format!("--ref=receipts/{me}"), "show", "HEAD"],
    );
    assert!(
        note.contains(&mine),
        "your unpushed receipt still shows in your notes: {note}"
    );
    let status = env.receipt(&b, &["status", "--json"]);
    assert!(status.stdout.contains(&mine), "and in status: {status}");
}
