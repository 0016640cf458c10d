//! A machine without a git identity (a fresh CI container: no user.name, no
//! GIT_COMMITTER_*) still gets notes, not just the chain.

use std::process::Command;

use crate::common::{self, Env};

#[test]
fn notes_are_written_without_a_git_identity() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let mut cmd = Command::new(common::bin());
    env.seal(&mut cmd);
    for var in [
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd
        .current_dir(&repo)
        .args(["run", "test"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let writer = env.only_writer(&repo);
    env.git_ok(
        &repo,
        &[
            "rev-parse",
            "--verify",
            &format!("refs/notes/receipts/{writer}"),
        ],
    );
    let r = env.receipt_ok(&repo, &["show"]);
    assert!(r.stdout.contains("check    test passed"), "{r}");
}
