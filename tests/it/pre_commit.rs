//! The pre-commit framework (the real `pre-commit` from PyPI) runs this
//! repository's `.pre-commit-hooks.yaml`: installed with `pre-commit install
//! --hook-type pre-push` in a scratch repository, it refuses a push without
//! fresh receipts, its manual-stage hook writes them, and the push then passes
//! and carries the receipts to the remote.

use std::path::Path;

use crate::common::{self, Env, Run, pytools};

/// A repository holding this project's `.pre-commit-hooks.yaml` (what a
/// `.pre-commit-config.yaml` names as `repo:`); returns it and its commit.
fn hooks_repo(env: &Env) -> (std::path::PathBuf, String) {
    let dir = env.path("git-receipt-hooks");
    std::fs::create_dir_all(&dir).unwrap();
    env.git_ok(&dir, &["init", "-q", "-b", "main"]);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml"),
        dir.join(".pre-commit-hooks.yaml"),
    )
    .unwrap();
    env.git_ok(&dir, &["add", "."]);
    env.git_ok(&dir, &["commit", "-q", "-m", "hooks"]);
    let rev = env.git_ok(&dir, &["rev-parse", "HEAD"]);
    (dir, rev)
}

/// Run `python -m pre_commit ARGS` in `dir`, sealed, with its cache in the test's tmp.
fn pre_commit(env: &Env, py: &pytools::Python, dir: &Path, args: &[&str]) -> Run {
    let mut cmd = py.command();
    cmd.args(["-m", "pre_commit"]).args(args);
    env.seal(&mut cmd);
    cmd.current_dir(dir)
        .env("PRE_COMMIT_HOME", env.path("pre-commit-cache"));
    common::to_run(cmd.output().expect("run pre-commit"))
}

#[test]
fn pre_commit_refuses_a_push_without_receipts_and_passes_it_once_the_manual_hook_ran() {
    let Some(py) = pytools::need(&["pre-commit"], &["pre_commit"]) else {
        return;
    };
    let env = Env::new();
    let (hooks, rev) = hooks_repo(&env);
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let remote = env.path("remote.git");
    env.git_ok(
        env.tmp.path(),
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    env.git_ok(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    // the three lines a team adds
    std::fs::write(
        repo.join(".pre-commit-config.yaml"),
        format!(
            "repos:\n- repo: {}\n  rev: {rev}\n  hooks: [{{id: git-receipt}}, {{id: git-receipt-stale}}]\n",
            hooks.display()
        ),
    )
    .unwrap();
    env.git_ok(&repo, &["add", ".pre-commit-config.yaml"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "use pre-commit"]);
    let r = pre_commit(&env, &py, &repo, &["install", "--hook-type", "pre-push"]);
    assert_eq!(r.code, 0, "{r}");

    // the first push (a root commit: pre-commit names the branch, not the commit)
    let push = env.git(&repo, &["push", "origin", "main"]);
    assert_ne!(push.code, 0, "refused without receipts: {push}");
    // pre-commit prints a hook's output on its stdout
    assert!(
        push.stdout.contains("- hook id: git-receipt\n")
            && push.stdout.contains("lacks fresh receipts")
            && push.stdout.contains("fix: git receipt run test"),
        "pre-commit ran the hook, which says what is missing and how to fix it: {push}"
    );
    assert!(
        env.git(&remote, &["rev-parse", "--verify", "-q", "refs/heads/main"])
            .code
            != 0,
        "nothing reached the remote"
    );

    let r = pre_commit(
        &env,
        &py,
        &repo,
        &["run", "git-receipt-stale", "--hook-stage", "manual"],
    );
    assert_eq!(r.code, 0, "the manual hook runs the stale checks: {r}");
    assert_eq!(env.log_json(&repo).len(), 2, "test and docs got receipts");

    let push = env.git(&repo, &["push", "origin", "main"]);
    assert_eq!(push.code, 0, "passes with receipts: {push}");
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(env.git_ok(&remote, &["rev-parse", "refs/heads/main"]), head);
    let writer = env.only_writer(&repo);
    assert_eq!(
        env.git_ok(&remote, &["rev-parse", &format!("refs/receipts/{writer}")]),
        env.git_ok(&repo, &["rev-parse", &format!("refs/receipts/{writer}")]),
        "the hook pushed the receipts along"
    );

    // a later push of a change to the check's inputs: refused as stale, by commit
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { }\n").unwrap();
    env.git_ok(&repo, &["commit", "-q", "-am", "change src"]);
    let push = env.git(&repo, &["push", "origin", "main"]);
    assert_ne!(push.code, 0, "{push}");
    assert!(push.stdout.contains("test  stale"), "{push}");
    env.receipt_ok(&repo, &["run", "test"]);
    let push = env.git(&repo, &["push", "origin", "main"]);
    assert_eq!(push.code, 0, "{push}");
}

#[test]
fn the_pre_commit_mode_of_the_hook_outside_pre_commit_says_how_to_install_it() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let r = env.receipt(&repo, &["hook", "pre-push", "--pre-commit"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("PRE_COMMIT_REMOTE_NAME is not set")
            && r.stderr.contains("pre-commit install --hook-type pre-push"),
        "{r}"
    );
}
