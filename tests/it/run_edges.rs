//! Issue 26, items 6 and 10: what `run` says at the edges of a run.
//!
//! - A check that writes into its own inputs (pytest's `__pycache__` under a
//!   declared path) is stale right after it passed: `run` says so, naming what
//!   it wrote, and says nothing when the check writes elsewhere.
//! - Ctrl-C (or SIGTERM, SIGHUP) during a run used to kill `git receipt` at once
//!   and silently, exit 130; a check with a timeout (its own process group, out
//!   of the terminal's reach) kept running with nobody waiting for it. Now the
//!   signal reaches the check, `run` waits for it to end, records nothing, says
//!   so, and exits 128 + the signal.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, Env};

/// A repository declaring `checks` (a `.gitreceipts` body) with `src/lib.txt`.
fn repo_with(env: &Env, checks: &str) -> PathBuf {
    let repo = env.path("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    env.git_ok(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("src/lib.txt"), "lib\n").unwrap();
    std::fs::write(repo.join(".gitreceipts"), checks).unwrap();
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "initial"]);
    repo
}

fn work_tree_state(env: &Env, repo: &Path, check: &str) -> String {
    env.status_of(repo, None, check)["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_check_that_writes_into_its_own_inputs_is_told_so() {
    let env = Env::new();
    let repo = repo_with(
        &env,
        "[check \"test\"]\n\trun = mkdir -p src/__pycache__ && echo x > src/__pycache__/lib.pyc\n\tpath = src\n\
         [check \"clean\"]\n\trun = mkdir -p out && echo x > out/report.txt\n\tpath = src\n",
    );
    let r = env.receipt(&repo, &["run", "test"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("test changed its own inputs while it ran (src/__pycache__/lib.pyc)")
            && r.stderr.contains(".gitignore"),
        "{r}"
    );
    // what the warning says is what status then reads
    assert_eq!(work_tree_state(&env, &repo, "test"), "stale");

    // a check writing outside its declared paths is fresh, and nothing is said
    std::fs::remove_dir_all(repo.join("src/__pycache__")).unwrap();
    let r = env.receipt(&repo, &["run", "clean"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(!r.stderr.contains("changed its own inputs"), "{r}");
    assert_eq!(work_tree_state(&env, &repo, "clean"), "present");
}

/// Start `git receipt ARGS` in its own process group (as a shell puts a
/// foreground job), wait until the check has written its pid to `started`, and
/// return both.
fn start_run(env: &Env, repo: &Path, args: &[&str], started: &Path) -> (std::process::Child, u32) {
    let mut cmd = Command::new(common::bin());
    cmd.args(args);
    env.seal(&mut cmd);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    common::sigint_as_in_a_terminal(&mut cmd);
    let child = cmd
        .current_dir(repo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start git-receipt run");
    let deadline = Instant::now() + Duration::from_secs(60);
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(started)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the check never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    (child, pid)
}

fn alive(pid: u32) -> bool {
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

fn interrupted(timeout: bool, to_group: bool, signal: &str, code: i32) {
    let env = Env::new();
    let started = env.path("started");
    let run = format!(
        "[check \"slow\"]\n\trun = echo $$ > {} && exec sleep 120\n{}",
        started.display(),
        if timeout { "\ttimeout = 300\n" } else { "" }
    );
    let repo = repo_with(&env, &run);
    let (child, check_pid) = start_run(&env, &repo, &["run", "slow"], &started);
    let target = if to_group {
        // a terminal's Ctrl-C: the whole foreground group
        format!("-{}", child.id())
    } else {
        child.id().to_string()
    };
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), "--", &target])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = common::to_run(child.wait_with_output().unwrap());
    assert_eq!(out.code, code, "{out}");
    assert!(
        out.stderr.contains("interrupted (")
            && out.stderr.contains("slow was stopped and not recorded"),
        "{out}"
    );
    assert!(
        !alive(check_pid),
        "the check is still running after run exited"
    );
    assert!(
        env.log_json(&repo).is_empty(),
        "an interrupted run was recorded"
    );
}

#[test]
fn ctrl_c_stops_the_check_records_nothing_and_says_so() {
    interrupted(false, true, "INT", 130);
}

#[test]
fn ctrl_c_reaches_a_check_with_a_timeout_in_its_own_process_group() {
    // only `git receipt` is in the terminal's group: it passes the signal on
    interrupted(true, true, "INT", 130);
}

#[test]
fn sigterm_to_git_receipt_alone_stops_a_check_with_a_timeout() {
    interrupted(true, false, "TERM", 143);
}

#[test]
fn a_receipt_recorded_before_the_interrupt_is_kept() {
    let env = Env::new();
    let started = env.path("started");
    let run = format!(
        "[check \"quick\"]\n\trun = true\n[check \"slow\"]\n\trun = echo $$ > {} && exec sleep 120\n\ttimeout = 300\n",
        started.display()
    );
    let repo = repo_with(&env, &run);
    let (child, _) = start_run(&env, &repo, &["run", "quick", "slow"], &started);
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = common::to_run(child.wait_with_output().unwrap());
    assert_eq!(out.code, 130, "{out}");
    assert!(
        out.stderr.contains("the check before it kept its receipt"),
        "{out}"
    );
    let log = env.log_json(&repo);
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["check"], "quick");
}

/// `run --all` (or several names) writes one notes commit for the receipts of
/// all its checks, when the last one ends; stock git shows each of them on the
/// commit. One check alone is noted as it ends, as before.
#[test]
fn several_checks_in_one_run_are_noted_in_one_notes_commit() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let r = env.receipt(&repo, &["run", "--all"]);
    assert_eq!(r.code, 0, "{r}");
    let writer = env.only_writer(&repo);
    let notes = format!("refs/notes/receipts/{writer}");
    let count = || {
        env.git_ok(&repo, &["rev-list", "--count", &notes])
            .trim()
            .to_owned()
    };
    assert_eq!(count(), "1", "one notes commit for two receipts");
    let shown = env.git_ok(&repo, &["notes", "--ref", &notes, "show", "HEAD"]);
    let log = env.log_json(&repo);
    assert_eq!(log.len(), 2, "{log:?}");
    for receipt in &log {
        let id = receipt["id"].as_str().unwrap();
        assert!(shown.contains(id), "{id} in {shown}");
    }
    assert!(
        shown.contains(" test passed") && shown.contains(" docs passed"),
        "{shown}"
    );
    // one check alone: its own notes commit, at once
    env.receipt_ok(&repo, &["run", "test"]);
    assert_eq!(count(), "2");
}
