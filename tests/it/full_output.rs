//! Output that cannot be written (issue 25): a full disk under `> file` or
//! `2> file` (here `/dev/full`, which fails every write with ENOSPC), or a
//! closed descriptor. No command panics; a failed write of a message changes
//! nothing; a result that could not be written is an error (exit 2) naming
//! standard output and the cause; and what the command stores is stored.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{self, Env, Run};

/// `git receipt args` in `dir` with standard output and/or standard error on
/// `/dev/full` (the other one captured).
fn full(env: &Env, dir: &Path, args: &[&str], stdout_full: bool, stderr_full: bool) -> Run {
    assert!(
        Path::new("/dev/full").exists(),
        "this test needs /dev/full (Linux): it is missing on this machine"
    );
    let dev_full = || {
        Stdio::from(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
    };
    let mut cmd = Command::new(common::bin());
    cmd.args(args);
    env.seal(&mut cmd);
    cmd.current_dir(dir);
    cmd.stdout(if stdout_full {
        dev_full()
    } else {
        Stdio::piped()
    });
    cmd.stderr(if stderr_full {
        dev_full()
    } else {
        Stdio::piped()
    });
    common::to_run(cmd.output().expect("run git-receipt"))
}

#[test]
fn a_full_disk_under_stderr_neither_panics_nor_loses_the_receipt() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    let before = env.log_json(&dir).len();
    // run says everything it says on stderr: every word of it fails
    let r = full(&env, &dir, &["run", "test"], false, true);
    assert_eq!(
        r.code, 0,
        "a message that cannot be written fails nothing: {r}"
    );
    assert_eq!(
        env.log_json(&dir).len(),
        before + 1,
        "the receipt is stored"
    );
    assert_eq!(env.status_of(&dir, None, "test")["state"], "present");
    // a failing command still exits with its own code, not a panic's 101
    let r = full(&env, &dir, &["show", "no-such-receipt"], false, true);
    assert_eq!(r.code, 2, "{r}");
    let r = full(&env, &dir, &["no-such-command"], false, true);
    assert_eq!(r.code, 2, "{r}");
    // a gate that fails says so by its code, whatever became of its words
    let r = full(&env, &dir, &["gate", "--require", "docs"], false, true);
    assert_eq!(r.code, 1, "{r}");
    // unless its verdict could not be written: then the answer is "could not
    // tell you" (2), which blocks a hook as 1 does
    let r = full(&env, &dir, &["gate", "--require", "docs"], true, true);
    assert_eq!(r.code, 2, "{r}");
}

#[test]
fn a_result_that_cannot_be_written_is_an_error_naming_standard_output() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    env.receipt_ok(&dir, &["run", "test"]);
    let id = env.log_json(&dir)[0]["id"].as_str().unwrap().to_owned();
    for args in [
        vec!["log"],
        vec!["log", "--json"],
        vec!["status"],
        vec!["status", "--json"],
        vec!["show", "HEAD"],
        vec!["show", "--body", &id],
        vec!["gate", "--json"],
        vec!["verify", "--json"],
        vec!["export", "--in-toto", "HEAD"],
        vec!["report"],
        vec!["completions", "bash"],
        vec!["completions", "zsh"],
    ] {
        let r = full(&env, &dir, &args, true, false);
        assert_eq!(r.code, 2, "git receipt {args:?} > /dev/full: {r}");
        assert!(
            r.stderr.contains("could not write to standard output")
                && r.stderr.contains("No space left on device"),
            "git receipt {args:?} > /dev/full names the stream and the cause: {r}"
        );
        assert!(!r.stderr.contains("panicked"), "{args:?}: {r}");
        // and with nowhere to say it either, still an exit code, not a panic
        let r = full(&env, &dir, &args, true, true);
        assert_eq!(r.code, 2, "git receipt {args:?} >/dev/full 2>&1: {r}");
    }
    // a run whose stdout is full still stores its receipt (the check's own
    // output goes there too) and says so by exit 2
    let before = env.log_json(&dir).len();
    let r = full(&env, &dir, &["run", "docs"], true, false);
    assert!(r.code == 0 || r.code == 2, "{r}");
    assert!(!r.stderr.contains("panicked"), "{r}");
    assert_eq!(env.log_json(&dir).len(), before + 1, "{r}");
}
