//! Crash safety, concurrency and interop with stock git maintenance.
//!
//! A crash is injected after each write step with `GIT_RECEIPT_TEST_STOP_AFTER`
//! (the process aborts, as under `kill -9`), and real `kill -9` is sent to writers
//! in flight. Afterwards `git fsck` must be clean, the chain linear and gap-free,
//! every receipt found (through the receipt index, exactly once), and the next write
//! must complete any notes the crash cut off (a note shows the newest receipt per
//! check of its writer).

use crate::common::{self, Env};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Command, Stdio};

/// Assert the single chain in `repo` is linear, contiguous from 0, correctly
/// linked, and return its receipts oldest first.
fn assert_chain_valid(env: &Env, repo: &Path) -> Vec<serde_json::Value> {
    let mut log = env.log_json(repo);
    log.sort_by_key(|r| r["index"].as_u64().unwrap());
    for (i, r) in log.iter().enumerate() {
        assert_eq!(
            r["index"].as_u64().unwrap(),
            i as u64,
            "no gap or duplicate index"
        );
        if i == 0 {
            assert!(r["prev"].is_null());
        } else {
            assert_eq!(
                r["prev"],
                log[i - 1]["id"],
                "prev links to the previous receipt"
            );
        }
    }
    let writer = env.only_writer(repo);
    let count = env.git_ok(
        repo,
        &["rev-list", "--count", &format!("refs/receipts/{writer}")],
    );
    assert_eq!(count, log.len().to_string(), "one chain commit per receipt");
    let merges = env.git_ok(
        repo,
        &["rev-list", "--merges", &format!("refs/receipts/{writer}")],
    );
    assert_eq!(merges, "", "the chain is linear");
    log
}

fn assert_fsck_clean(env: &Env, repo: &Path) {
    let r = env.git(repo, &["fsck", "--strict", "--no-dangling"]);
    assert_eq!(r.code, 0, "git fsck --strict: {r}");
    assert!(
        !r.stderr.contains("error") && !r.stderr.contains("warning"),
        "{r}"
    );
}

/// Ids of the receipts `git receipt show REV --json` lists (found through the
/// chains and the receipt index, never notes), in its order.
fn shown_ids(env: &Env, repo: &Path, rev: &str) -> Vec<String> {
    let r = env.receipt(repo, &["show", rev, "--json"]);
    assert_eq!(r.code, 0, "{r}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The ids of `log`, sorted, and the id of its newest receipt.
fn sorted_ids(log: &[serde_json::Value]) -> Vec<String> {
    let mut ids: Vec<String> = log
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Ids listed by the note on `object` in the writer's notes (stock git reads them).
fn noted_ids(env: &Env, repo: &Path, writer: &str, object: &str) -> Vec<String> {
    let r = env.git(
        repo,
        &["notes", &format!("--ref=receipts/{writer}"), "show", object],
    );
    if r.code != 0 {
        return Vec::new();
    }
    r.stdout
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect()
}

#[test]
fn crash_after_each_write_step_leaves_a_consistent_repository() {
    for step in ["objects", "chain", "notes"] {
        let env = Env::new();
        let repo = env.fixture_repo("make_basic_repo.sh", "repo");
        env.receipt_ok(&repo, &["run", "test"]);
        let r = env.receipt_with(
            &repo,
            &["run", "test"],
            &[("GIT_RECEIPT_TEST_STOP_AFTER", step)],
        );
        assert_ne!(r.code, 0, "the injected crash at {step} happened: {r}");
        assert_fsck_clean(&env, &repo);
        let log = assert_chain_valid(&env, &repo);
        let expected = if step == "objects" { 1 } else { 2 };
        assert_eq!(log.len(), expected, "after a crash at {step}");
        // the next append completes whatever notes the crash cut off
        env.receipt_ok(&repo, &["run", "test"]);
        let log = assert_chain_valid(&env, &repo);
        let writer = env.only_writer(&repo);
        let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
        assert_eq!(
            sorted(shown_ids(&env, &repo, "HEAD")),
            sorted_ids(&log),
            "every receipt found exactly once after a crash at {step}"
        );
        assert_eq!(
            noted_ids(&env, &repo, &writer, &head),
            vec![log.last().unwrap()["id"].as_str().unwrap().to_owned()],
            "the note shows the newest receipt after a crash at {step}"
        );
        assert_fsck_clean(&env, &repo);
    }
}

#[test]
fn kill_9_during_a_check_writes_nothing_and_breaks_nothing() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let mut cmd = Command::new(common::bin());
    env.seal(&mut cmd);
    let mut child = cmd
        .current_dir(&repo)
        .args(["run", "slow", "--", "sh", "-c", "echo started; sleep 5"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // wait until the check is running, then kill the writer
    let mut first = [0u8; 8];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    assert_eq!(&first, b"started\n");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_fsck_clean(&env, &repo);
    assert_eq!(assert_chain_valid(&env, &repo).len(), 1);
}

#[test]
fn kill_9_in_the_middle_of_each_write_step_keeps_the_chain_valid() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let mut ids = sorted_ids(&assert_chain_valid(&env, &repo));
    // Each writer pauses right after a write step (objects written; chain ref
    // moved; notes written) and says so in a file; only then is it killed, so every
    // kill provably lands in the middle of a write.
    for (round, step) in ["objects", "chain", "notes"]
        .iter()
        .cycle()
        .take(9)
        .enumerate()
    {
        let paused = env.path(&format!("paused-{round}"));
        let mut cmd = Command::new(common::bin());
        env.seal(&mut cmd);
        let mut child = cmd
            .current_dir(&repo)
            .args(["record", "test", "--exit-code", "0"])
            .env("GIT_RECEIPT_TEST_PAUSE_AFTER", step)
            .env("GIT_RECEIPT_TEST_PAUSE_FILE", &paused)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        while !paused.exists() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("round {round}: the writer ended ({status}) before it reached {step}");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let pid = i32::try_from(child.id()).unwrap();
        // SAFETY: kill(2) on the pid of our own child, which has not been reaped.
        let killed = unsafe { libc::kill(pid, libc::SIGKILL) };
        assert_eq!(killed, 0, "round {round}: kill -9 reached the writer");
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "round {round}: {status}"
        );
        assert_fsck_clean(&env, &repo);
        let log = assert_chain_valid(&env, &repo);
        let now = sorted_ids(&log);
        // killed after the objects only: nothing was appended; after the chain
        // ref moved: exactly one receipt, and every earlier one is still there
        let expected = if *step == "objects" { 0 } else { 1 };
        assert_eq!(now.len(), ids.len() + expected, "round {round} ({step})");
        assert!(
            ids.iter().all(|id| now.contains(id)),
            "round {round} ({step}): no earlier receipt was lost"
        );
        ids = now;
    }
    // one clean append repairs every note a kill may have cut off
    env.receipt_ok(&repo, &["record", "test", "--exit-code", "0"]);
    let log = assert_chain_valid(&env, &repo);
    assert_eq!(log.len(), ids.len() + 1);
    let writer = env.only_writer(&repo);
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(
        sorted(shown_ids(&env, &repo, "HEAD")),
        sorted_ids(&log),
        "every receipt found exactly once, by id (duplicates would show)"
    );
    assert_eq!(
        noted_ids(&env, &repo, &writer, &head),
        vec![log.last().unwrap()["id"].as_str().unwrap().to_owned()],
        "the note shows the newest receipt"
    );
}

#[test]
fn eight_concurrent_writers_of_one_chain_lose_nothing() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    // create the key first, so the racers do not race to create it
    env.receipt_ok(&repo, &["key", "generate"]);
    let bin = common::bin();
    let mut children = Vec::new();
    for p in 0..8 {
        let mut cmd = Command::new("sh");
        env.seal(&mut cmd);
        // half run a real command, half record; 25 receipts each; every word a
        // writer says on stderr is kept
        let err = env.path(&format!("writer-{p}.stderr"));
        let one = if p % 2 == 0 {
            format!(
                "'{}' run test >/dev/null 2>>'{}'",
                bin.display(),
                err.display()
            )
        } else {
            format!(
                "'{}' record test --exit-code 0 >/dev/null 2>>'{}'",
                bin.display(),
                err.display()
            )
        };
        cmd.current_dir(&repo).args([
            "-c",
            &format!("i=0; while [ $i -lt 25 ]; do {one} || exit 1; i=$((i+1)); done"),
        ]);
        children.push(cmd.spawn().unwrap());
    }
    for mut c in children {
        assert!(
            c.wait().unwrap().success(),
            "every writer finished without error"
        );
    }
    // No writer gave up on a lock, failed to update its notes or warned about
    // anything: each said only that its 25 receipts were written.
    for p in 0..8 {
        let said = std::fs::read_to_string(env.path(&format!("writer-{p}.stderr"))).unwrap();
        let (done, expected_other) = if p % 2 == 0 {
            ("git-receipt: test passed in ", "to-stderr")
        } else {
            ("git-receipt: recorded test passed (exit 0)", "")
        };
        let mut written = 0;
        for line in said.lines() {
            if line.starts_with(done) {
                written += 1;
            } else {
                assert_eq!(
                    line, expected_other,
                    "writer {p} said something else:\n{said}"
                );
            }
        }
        assert_eq!(written, 25, "writer {p} reported 25 receipts:\n{said}");
    }
    let log = assert_chain_valid(&env, &repo);
    assert_eq!(log.len(), 200, "8 x 25 receipts on one linear chain");
    let ids: HashSet<&str> = log.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 200, "all distinct");
    let writer = env.only_writer(&repo);
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(
        sorted(shown_ids(&env, &repo, "HEAD")),
        sorted_ids(&log),
        "show finds every receipt once"
    );
    // two checks were written (run test, record test): one line, the newest
    assert_eq!(
        noted_ids(&env, &repo, &writer, &head),
        vec![log.last().unwrap()["id"].as_str().unwrap().to_owned()],
        "the note on HEAD shows the newest receipt only"
    );
    assert_fsck_clean(&env, &repo);
}

#[test]
fn hundred_receipts_fsck_strict_clean_and_gc_loses_nothing() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["key", "generate"]);
    let mut inputs_of: HashMap<String, String> = HashMap::new();
    for i in 0..100 {
        // spread receipts over several commits and both checks, so notes fan out
        if i % 10 == 0 && i > 0 {
            std::fs::write(repo.join("src/lib.rs"), format!("pub fn v{i}() {{}}\n")).unwrap();
            env.git_ok(&repo, &["commit", "-qam", &format!("change {i}")]);
        }
        let check = if i % 3 == 0 { "docs" } else { "test" };
        env.receipt_ok(&repo, &["run", check]);
    }
    let log = assert_chain_valid(&env, &repo);
    assert_eq!(log.len(), 100);
    for r in &log {
        inputs_of.insert(
            r["id"].as_str().unwrap().to_owned(),
            r["inputs"].as_str().unwrap().to_owned(),
        );
    }
    assert_fsck_clean(&env, &repo);
    let before = env.receipt_ok(&repo, &["log", "--json"]).stdout;
    let r = env.git(&repo, &["gc", "--prune=now", "--quiet"]);
    assert_eq!(r.code, 0, "{r}");
    assert_fsck_clean(&env, &repo);
    let after = env.receipt_ok(&repo, &["log", "--json"]).stdout;
    assert_eq!(before, after, "gc --prune=now loses no receipt");
    // every receipt is still found through the chains by its commit, and the notes
    // show the newest receipt per check on each commit and inputs tree
    let writer = env.only_writer(&repo);
    let mut newest: HashMap<(String, String), String> = HashMap::new();
    for r in &log {
        let id = r["id"].as_str().unwrap().to_owned();
        let check = r["check"].as_str().unwrap().to_owned();
        newest.insert(
            (r["commit"].as_str().unwrap().to_owned(), check.clone()),
            id.clone(),
        );
        newest.insert((inputs_of[&id].clone(), check), id);
    }
    let mut shown_by_commit: HashMap<String, Vec<String>> = HashMap::new();
    for r in &log {
        let id = r["id"].as_str().unwrap();
        let commit = r["commit"].as_str().unwrap();
        let shown = shown_by_commit
            .entry(commit.to_owned())
            .or_insert_with(|| shown_ids(&env, &repo, commit));
        assert!(shown.iter().any(|n| n == id), "{id} found by its commit");
        // the log blob (when there was output) survives gc too, under its log ref
        if r["check"] == "test" {
            let log = r["log"].as_str().expect("the test check prints output");
            env.git_ok(&repo, &["cat-file", "-e", log]);
            env.git_ok(
                &repo,
                &[
                    "rev-parse",
                    "--verify",
                    &format!("refs/receipt-logs/{writer}/{log}"),
                ],
            );
        }
    }
    for ((object, check), id) in &newest {
        assert!(
            noted_ids(&env, &repo, &writer, object).contains(id),
            "the note on {object} shows {id}, the newest {check} receipt"
        );
    }
}

#[test]
fn reindex_rebuilds_deleted_and_corrupted_notes_from_the_chain() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    for _ in 0..3 {
        env.receipt_ok(&repo, &["run", "test"]);
    }
    let writer = env.only_writer(&repo);
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    let before = noted_ids(&env, &repo, &writer, &head);
    assert_eq!(
        before.len(),
        1,
        "the note shows the newest receipt of check test"
    );
    // corrupt the note with stock git, then delete another writer-free ref entirely
    env.git_ok(
        &repo,
        &[
            "notes",
            &format!("--ref=receipts/{writer}"),
            "add",
            "-f",
            "-m",
            "garbage",
            &head,
        ],
    );
    // decisions never read notes: show still finds all three receipts
    assert_eq!(shown_ids(&env, &repo, "HEAD").len(), 3);
    let r = env.receipt(&repo, &["verify"]);
    assert_eq!(r.code, 1, "a corrupt note is a finding: {r}");
    assert!(r.stdout.contains("is corrupt at line 1"), "{r}");
    assert!(
        r.stderr
            .contains("notes do not show it; `git receipt reindex` rebuilds the notes"),
        "the receipt the note no longer shows is a warning: {r}"
    );
    let r = env.receipt_ok(&repo, &["reindex"]);
    assert!(
        r.stderr.contains("(3 receipts; the notes of 1 chain)"),
        "{r}"
    );
    assert_eq!(noted_ids(&env, &repo, &writer, &head), before);
    env.git_ok(
        &repo,
        &["update-ref", "-d", &format!("refs/notes/receipts/{writer}")],
    );
    env.receipt_ok(&repo, &["reindex"]);
    assert_eq!(noted_ids(&env, &repo, &writer, &head), before);
    assert_fsck_clean(&env, &repo);
}

#[test]
fn a_fresh_ref_lock_is_respected_and_a_stale_one_is_removed() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["record", "test", "--exit-code", "0"]);
    let writer = env.only_writer(&repo);
    let tip = env.git_ok(&repo, &["rev-parse", &format!("refs/receipts/{writer}")]);
    // another writer holds the lock right now: never steal it
    let lock = repo.join(format!(".git/refs/receipts/{writer}.lock"));
    std::fs::write(&lock, format!("{tip}\n")).unwrap();
    let r = env.receipt(&repo, &["record", "test", "--exit-code", "0"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(&format!("refs/receipts/{writer}.lock")),
        "names the lock: {r}"
    );
    assert!(lock.exists(), "a young lock is left alone");
    assert_eq!(
        env.git_ok(&repo, &["rev-parse", &format!("refs/receipts/{writer}")]),
        tip
    );
    // the holder was killed long ago: the lock is stale and the next writer removes it
    let ok = Command::new("touch")
        .arg("-d")
        .arg("10 minutes ago")
        .arg(&lock)
        .status()
        .unwrap();
    assert!(ok.success());
    let r = env.receipt_ok(&repo, &["record", "test", "--exit-code", "0"]);
    assert!(
        r.stderr
            .contains("a stale lock left by a process that was killed"),
        "{r}"
    );
    assert_eq!(assert_chain_valid(&env, &repo).len(), 2);
}

/// `reindex` says so when it could not write the index (issue 25: it said
/// "rebuilt the receipt index" whatever happened), names the file and the
/// operation, leaves no lock file behind, and a retry once the cause is gone works.
#[test]
fn reindex_that_cannot_write_the_index_says_so_and_the_retry_works() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let index = repo.join(".git/receipt-index");
    let _ = std::fs::remove_file(&index);
    // a directory where the file goes: the rename over it fails
    std::fs::create_dir_all(index.join("in-the-way")).unwrap();
    let r = env.receipt(&repo, &["reindex"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains("could not write the receipt index: renaming"),
        "{r}"
    );
    assert!(r.stderr.contains("receipt-index"), "names the file: {r}");
    assert!(
        !repo.join(".git/receipt-index.lock").exists(),
        "no lock left"
    );
    // reading commands go on, from the chains
    let r = env.receipt(&repo, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");
    std::fs::remove_dir_all(&index).unwrap();
    let r = env.receipt_ok(&repo, &["reindex"]);
    assert!(r.stderr.contains("rebuilt the receipt index"), "{r}");
    assert!(index.is_file());
}

/// A signing key that is there but cannot be read is an error (exit 2, naming
/// the file and the read error), never a verdict: before, `status` called every
/// receipt of yours untrusted and `gate` said "fix: git receipt run test" (issue
/// 25). A directory where the key file goes stands in for a failing disk here.
#[test]
fn an_unreadable_signing_key_is_an_error_not_a_missing_check() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let key = env.home.join(".config/git-receipt/signing_key");
    std::fs::rename(&key, env.path("key.away")).unwrap();
    std::fs::create_dir_all(&key).unwrap();
    for args in [&["status"][..], &["gate", "HEAD"], &["show", "--json"]] {
        let r = env.receipt(&repo, args);
        assert_eq!(r.code, 2, "{args:?}: {r}");
        assert!(
            r.stderr.contains("could not read your signing key"),
            "{args:?}: {r}"
        );
        assert!(
            r.stderr.contains(key.to_str().unwrap()),
            "names the file: {r}"
        );
        assert!(r.stderr.contains("Is a directory"), "the read error: {r}");
        assert!(!r.stdout.contains("missing"), "no verdict: {r}");
    }
    std::fs::remove_dir(&key).unwrap();
    std::fs::rename(env.path("key.away"), &key).unwrap();
    env.receipt_ok(&repo, &["gate", "HEAD"]);
}

/// A remote that accepts the connection and never answers is given up on after
/// `receipt.networkTimeout` (issue 25: `push` and `fetch` waited until killed),
/// with a message that says what happened; nothing is left half-staged, and the
/// retry against a remote that answers completes.
#[test]
fn a_stalled_remote_times_out_and_the_retry_completes() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    stalled_origin(&env, &repo);
    env.git_ok(&repo, &["config", "receipt.networkTimeout", "2"]);
    for args in [&["fetch"][..], &["push"]] {
        let mut cmd = std::process::Command::new("/usr/bin/timeout");
        env.seal(&mut cmd);
        cmd.arg("60")
            .arg(common::bin())
            .args(args)
            .current_dir(&repo);
        let r = common::to_run(cmd.output().unwrap());
        assert_eq!(r.code, 2, "{args:?} gives up by itself: {r}");
        assert!(
            r.stderr.contains("did not finish within 2s"),
            "{args:?}: {r}"
        );
        assert!(r.stderr.contains("receipt.networkTimeout"), "{args:?}: {r}");
        // no terminal, no progress line
        assert!(!r.stderr.contains("waiting on the remote"), "{args:?}: {r}");
    }
    let staged = env.git_ok(&repo, &["for-each-ref", "refs/receipts-incoming/"]);
    assert_eq!(staged, "", "nothing half-staged");
    // the same clone against a remote that answers
    let daemon = common::Daemon::start(&env);
    let (_bare, url) = daemon.bare(&env, "served.git");
    env.git_ok(&repo, &["remote", "set-url", "origin", &url]);
    let r = env.receipt_ok(&repo, &["push"]);
    assert!(r.stderr.contains("pushed 1 new receipt"), "{r}");
}

/// Make `origin` of `repo` a server on 127.0.0.1 that takes connections and
/// says nothing, for as long as the test runs.
fn stalled_origin(env: &Env, repo: &Path) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().take(16) {
            held.push(conn);
        }
        std::thread::sleep(std::time::Duration::from_secs(120));
    });
    env.git_ok(
        repo,
        &[
            "remote",
            "add",
            "origin",
            &format!("git://127.0.0.1:{port}/stalled.git"),
        ],
    );
}

#[test]
fn a_slow_transfer_on_a_terminal_says_it_waits_and_until_when() {
    if !common::require_tool("script", "apt-get install bsdutils") {
        return;
    }
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    stalled_origin(&env, &repo);
    env.git_ok(&repo, &["config", "receipt.networkTimeout", "5"]);
    for command in ["fetch", "push"] {
        // under a real pseudo-terminal (script(1)), as a user at a shell has it
        let mut cmd = std::process::Command::new("script");
        env.seal(&mut cmd);
        cmd.env("SHELL", "/bin/sh")
            .args(["-q", "-e", "-c"])
            .arg(format!("'{}' {command}", common::bin().display()))
            .arg("/dev/null")
            .current_dir(&repo);
        let r = common::to_run(cmd.output().unwrap());
        let shown = format!("{}{}", r.stdout, r.stderr);
        assert_eq!(r.code, 2, "{command} gives up by itself: {r}");
        assert!(
            shown.contains("git-receipt: waiting on the remote: git fetch origin")
                || shown.contains("git-receipt: waiting on the remote: git push origin")
                || shown.contains("git-receipt: waiting on the remote: git ls-remote origin"),
            "{command}: a line says what waits: {shown:?}"
        );
        assert!(
            shown.contains("gives up at 5s, receipt.networkTimeout"),
            "{command}: and until when: {shown:?}"
        );
        // rewritten in place, about once a second, and cleared at the end
        let lines = shown
            .matches("\rgit-receipt: waiting on the remote")
            .count();
        assert!(
            (2..=5).contains(&lines),
            "{command}: {lines} updates: {shown:?}"
        );
        assert!(shown.contains("\r\x1b[K"), "{command}: cleared: {shown:?}");
        assert!(
            shown.contains("did not finish within 5s"),
            "{command}: {shown:?}"
        );
    }
}
