//! Time does not decide (issue 22, item 7): within one writer's chain the chain
//! order says which receipt is newer, whatever the dates say; a receipt dated
//! further ahead of the reader's clock than the allowed skew never wins and is
//! named in a notice (`status`, `gate`, `--json`); and nothing is signed with a
//! clock before 1970 or behind the chain's previous entry.
//!
//! The clock of one process is set with the test hook `GIT_RECEIPT_TEST_NOW`.
//! A chain whose dates go backwards cannot be written by the tool (it refuses),
//! so the tests that need one sign the entry with the library and the writer's
//! own key, and write it with stock git plumbing, as a hostile signer would.

use std::path::{Path, PathBuf};

use crate::common::{self, Env, Run};
use git_receipt::receipt::Verdict;
use git_receipt::sign::SigningKey;
use serde_json::Value;

const NOW: &str = "GIT_RECEIPT_TEST_NOW";

fn key_path(env: &Env) -> PathBuf {
    env.home.join(".config/git-receipt/signing_key")
}

fn at(env: &Env, dir: &Path, when: &str, args: &[&str]) -> Run {
    env.receipt_with(dir, args, &[(NOW, when)])
}

fn json(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {r}"))
}

/// The row of check (or `review:<name>`) `name` in `status HEAD --json`.
fn row(env: &Env, dir: &Path, name: &str) -> (Value, Value) {
    let r = env.receipt(dir, &["status", "HEAD", "--json"]);
    assert_eq!(r.code, 0, "{r}");
    let v = json(&r);
    let row = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("a {name} row: {r}"))
        .clone();
    (row, v)
}

/// The basic fixture with the keys of `signers` declared on main as `[signer]`s
/// and `extra` appended to `.gitreceipts`.
fn repo_trusting(owner: &Env, signers: &[(&str, &Env)], extra: &str) -> PathBuf {
    let dir = owner.fixture_repo("make_basic_repo.sh", "repo");
    let mut contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    contract.push_str(extra);
    for (name, who) in signers {
        let key = who.receipt_ok(&dir, &["key", "generate"]).stdout;
        contract.push_str(&format!("[signer \"{name}\"]\n\tkey = {}\n", key.trim()));
    }
    std::fs::write(dir.join(".gitreceipts"), contract).unwrap();
    owner.git_ok(&dir, &["commit", "-qam", "trust the signers"]);
    dir
}

#[test]
fn a_later_failure_dated_before_an_earlier_pass_in_one_chain_makes_the_check_failed() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["key", "generate"]);
    let r = at(&env, &dir, "2021-03-01T12:00:00Z", &["run", "test"]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(row(&env, &dir, "test").0["state"], "present");
    let writer = env.only_writer(&dir);
    // The next entry of the same chain failed, but says it started an hour
    // before the pass: a writer whose clock was set back, or a hostile signer.
    let failed = env.append_crafted(&dir, &writer, |b| {
        b.result.passed = false;
        b.result.exit_code = 1;
        b.result.started_at = "2021-03-01T11:00:00.000Z".into();
    });
    let (test, _) = row(&env, &dir, "test");
    assert_eq!(test["state"], "failed", "the chain order decides: {test}");
    assert_eq!(test["receipt"], failed.as_str(), "{test}");
    let r = env.receipt(&dir, &["gate", "HEAD"]);
    assert_eq!(r.code, 1, "the gate sees the failure: {r}");
}

#[test]
fn a_passing_receipt_dated_2099_does_not_hide_a_later_failure_and_is_named_in_a_notice() {
    let (ada, bob) = (Env::new(), Env::new());
    let dir = repo_trusting(&ada, &[("ada", &ada), ("bob", &bob)], "");
    // Bob's clock (or Bob) says 2099; Ada's real failure comes after it.
    let r = at(&bob, &dir, "2099-01-01T00:00:00Z", &["run", "test"]);
    assert_eq!(r.code, 0, "{r}");
    let future = bob.log_json(&dir)[0]["id"].as_str().unwrap().to_owned();
    ada.receipt_ok(&dir, &["record", "test", "--exit-code", "1"]);

    let (test, v) = row(&ada, &dir, "test");
    assert_eq!(test["state"], "failed", "the real failure decides: {test}");
    let said = format!("receipt {future} says it started at 2099-01-01T00:00:00.000Z");
    let named = |notices: &Value| {
        notices.as_array().is_some_and(|n| {
            n.iter().any(|n| {
                let n = n.as_str().unwrap_or_default();
                n.contains(&said)
                    && n.contains("years ahead of this clock")
                    && n.ends_with("it is ignored")
            })
        })
    };
    assert!(named(&test["notices"]), "the row names it: {test}");
    assert!(named(&v["notices"]), "status --json names it: {v}");

    let r = ada.receipt(&dir, &["status", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("git-receipt: notice: test: "), "{r}");
    assert!(r.stderr.contains(&said), "{r}");
    let r = ada.receipt(&dir, &["gate", "HEAD"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains(&said), "gate tells it on stderr: {r}");
    let r = ada.receipt(&dir, &["gate", "HEAD", "--json"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(named(&json(&r)[0]["notices"]), "gate --json names it: {r}");

    // Within the skew a receipt counts: a clock five minutes fast is no attack.
    let soon = git_receipt::receipt::format_timestamp(git_receipt::clock::now_ms() + 5 * 60_000);
    let r = at(&ada, &dir, &soon, &["run", "test"]);
    assert_eq!(r.code, 0, "{r}");
    let (test, _) = row(&ada, &dir, "test");
    assert_eq!(test["state"], "present", "{test}");
    // ... unless the reader allows less: receipt.maxClockSkew, in seconds
    ada.git_ok(&dir, &["config", "receipt.maxClockSkew", "60"]);
    let (test, _) = row(&ada, &dir, "test");
    assert_eq!(test["state"], "failed", "{test}");
}

const CODE: &str = "[review \"code\"]\n\tpath = src\n\trequired = 1\n\tself-approve = true\n";

#[test]
fn an_approval_dated_2099_does_not_beat_a_later_rejection_by_the_same_reviewer() {
    let (maintainer, ada) = (Env::new(), Env::new());
    let dir = repo_trusting(&maintainer, &[("ada", &ada)], CODE);
    let r = at(
        &ada,
        &dir,
        "2099-01-01T00:00:00Z",
        &["review", "HEAD", "--approve"],
    );
    assert_eq!(r.code, 0, "{r}");
    // Ada's clock is right again: her chain's last entry is the one that is wrong,
    // and the refusal says how to go on.
    let r = ada.receipt(&dir, &["review", "HEAD", "--reject", "-m", "no"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("dated 2099-01-01T00:00:00.000Z"), "{r}");
    assert!(r.stderr.contains("nothing was signed"), "{r}");
    assert!(r.stderr.contains("git config receipt.chain"), "{r}");
    ada.git_ok(&dir, &["config", "receipt.chain", "fixed-clock"]);
    ada.receipt_ok(&dir, &["review", "HEAD", "--reject", "-m", "needs a test"]);

    let (review, v) = row(&maintainer, &dir, "review:code");
    assert_eq!(review["state"], "failed", "{review}");
    assert!(
        review["reason"]
            .as_str()
            .unwrap()
            .contains("rejected by ada"),
        "{review}"
    );
    let notices = v["notices"].to_string();
    assert!(
        notices.contains("says it was decided at 2099-01-01T00:00:00.000Z"),
        "{v}"
    );
}

#[test]
fn a_rejection_later_in_the_chain_beats_an_earlier_approval_dated_after_it() {
    let (maintainer, ada) = (Env::new(), Env::new());
    let dir = repo_trusting(&maintainer, &[("ada", &ada)], CODE);
    let r = at(
        &ada,
        &dir,
        "2021-03-01T12:00:00Z",
        &["review", "HEAD", "--approve"],
    );
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(row(&maintainer, &dir, "review:code").0["state"], "present");
    let writer = ada.only_writer(&dir);
    ada.append_crafted(&dir, &writer, |b| {
        let r = b.review.as_mut().unwrap();
        r.verdict = Verdict::Reject;
        r.message = "changed my mind".into();
        r.decided_at = "2021-03-01T11:00:00.000Z".into();
    });
    let (review, _) = row(&maintainer, &dir, "review:code");
    assert_eq!(
        review["state"], "failed",
        "the chain order decides: {review}"
    );
}

#[test]
fn an_acceptance_dated_2099_accepts_nothing_and_is_named() {
    let (maintainer, ada) = (Env::new(), Env::new());
    let dir = repo_trusting(&maintainer, &[("ada", &ada)], "");
    let far = "2099-01-01T00:00:00Z";
    assert_eq!(at(&ada, &dir, far, &["run", "test"]).code, 0);
    let r = at(&ada, &dir, far, &["gate", "HEAD", "--record"]);
    assert_eq!(r.code, 0, "{r}");
    let r = at(
        &maintainer,
        &dir,
        far,
        &["gate", "HEAD", "--accepted-by", "ada"],
    );
    assert_eq!(r.code, 0, "a reader whose clock says 2099 takes it: {r}");
    let r = maintainer.receipt(&dir, &["gate", "HEAD", "--accepted-by", "ada"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("not accepted by ada"), "{r}");
    assert!(
        r.stderr
            .contains("says it was decided at 2099-01-01T00:00:00.000Z")
            && r.stderr.contains("it is ignored"),
        "{r}"
    );
    let r = maintainer.receipt(&dir, &["gate", "HEAD", "--accepted-by", "ada", "--json"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        json(&r)[0]["notices"]
            .to_string()
            .contains("2099-01-01T00:00:00.000Z"),
        "{r}"
    );
}

#[test]
fn record_with_the_clock_in_1969_is_refused_and_writes_nothing() {
    let env = Env::new();
    let dir = repo_trusting(&env, &[("ada", &env)], CODE);
    let log = env.path("test.log");
    std::fs::write(&log, "ok\n").unwrap();
    let before = env.git_ok(&dir, &["count-objects", "-v"]);
    let r = at(
        &env,
        &dir,
        "-59",
        &[
            "record",
            "test",
            "--exit-code",
            "0",
            "--log",
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains("clock reads 1969-12-31T23:59:01.000Z, before 1970-01-01"),
        "{r}"
    );
    assert!(r.stderr.contains("nothing was signed"), "{r}");
    assert!(r.stderr.contains("hint: set the clock"), "{r}");
    let refs = env.git_ok(&dir, &["for-each-ref", "refs/receipts/", "refs/notes/"]);
    assert_eq!(refs, "", "no receipt, no notes");
    assert_eq!(
        env.git_ok(&dir, &["count-objects", "-v"]),
        before,
        "not even the log was written"
    );
    let fsck = env.git(&dir, &["fsck", "--strict"]);
    assert_eq!(fsck.code, 0, "{fsck}");

    // run refuses before the check runs; review and gate --record sign nothing
    let r = at(&env, &dir, "-59", &["run", "test"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("check \"test\" was not run"), "{r}");
    assert!(!r.stdout.contains("tests-ran"), "{r}");
    for args in [
        &["review", "HEAD", "--approve"][..],
        &["gate", "HEAD", "--record"],
    ] {
        let r = at(&env, &dir, "-59", args);
        assert_eq!(r.code, 2, "{args:?}: {r}");
        assert!(r.stderr.contains("before 1970-01-01"), "{args:?}: {r}");
    }
    let refs = env.git_ok(&dir, &["for-each-ref", "refs/receipts/"]);
    assert_eq!(refs, "");
    assert_eq!(env.git(&dir, &["fsck", "--strict"]).code, 0);
}

#[test]
fn run_and_record_with_the_clock_behind_the_previous_entry_are_refused() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["key", "generate"]);
    let r = at(&env, &dir, "2021-06-01T00:00:00Z", &["run", "test"]);
    assert_eq!(r.code, 0, "{r}");
    let writer = env.only_writer(&dir);
    let tip = env.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]);

    let r = at(&env, &dir, "2021-05-01T00:00:00Z", &["run", "test"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("check \"test\" was not run"), "{r}");
    assert!(
        r.stderr.contains(
            "clock reads 2021-05-01T00:00:00.000Z, earlier than the previous entry of chain"
        ) && r.stderr.contains("dated 2021-06-01T00:00:00.000Z"),
        "{r}"
    );
    assert!(
        r.stderr.contains("hint: if this clock is behind, set it"),
        "{r}"
    );
    assert!(!r.stdout.contains("tests-ran"), "it did not run: {r}");
    let r = at(
        &env,
        &dir,
        "2021-05-01T00:00:00Z",
        &["record", "test", "--exit-code", "1"],
    );
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("earlier than the previous entry"), "{r}");
    assert_eq!(
        env.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]),
        tip,
        "nothing was appended"
    );
    // the same clock as the previous entry is not behind it
    let r = at(&env, &dir, "2021-06-01T00:00:00Z", &["run", "test"]);
    assert_eq!(r.code, 0, "{r}");
}

#[test]
fn a_run_whose_chain_moved_ahead_of_its_clock_while_it_ran_says_it_ran_and_stores_nothing() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["key", "generate"]);
    let (started, go) = (env.path("started"), env.path("go"));
    // The check says it started, then waits for the test's signal (files outside
    // the work tree), so that another entry lands on the chain while it runs.
    let wait = format!(
        "touch '{}'; while [ ! -f '{}' ]; do sleep 0.05; done",
        started.display(),
        go.display()
    );
    let mut cmd = std::process::Command::new(common::bin());
    env.seal(&mut cmd);
    let slow = cmd
        .args(["run", "slow", "--", "sh", "-c", &wait])
        .current_dir(&dir)
        .env(NOW, "2021-05-01T00:00:00Z")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut slow = slow;
    while !started.exists() {
        if let Some(status) = slow.try_wait().unwrap() {
            panic!("the check did not start: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let r = at(
        &env,
        &dir,
        "2021-06-01T00:00:00Z",
        &["record", "test", "--exit-code", "0"],
    );
    assert_eq!(r.code, 0, "{r}");
    let writer = env.only_writer(&dir);
    let tip = env.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]);
    std::fs::write(&go, "").unwrap();
    let r = common::to_run(slow.wait_with_output().unwrap());
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains("check \"slow\" ran (exit 0), but its receipt could not be stored"),
        "{r}"
    );
    assert!(r.stderr.contains("earlier than the previous entry"), "{r}");
    assert_eq!(
        env.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]),
        tip
    );
    assert_eq!(env.git(&dir, &["fsck", "--strict"]).code, 0);
}

#[test]
fn append_refuses_a_clock_behind_the_previous_entry_whatever_the_caller_checked() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["key", "generate"]);
    // the chain's last entry is dated far ahead of this test's (real) clock
    let r = at(&env, &dir, "2099-01-01T00:00:00Z", &["run", "test"]);
    assert_eq!(r.code, 0, "{r}");
    let writer = env.only_writer(&dir);
    let store = git_receipt::store::Store::open(&dir).unwrap();
    let key = SigningKey::load(&key_path(&env)).unwrap();
    let tip = store.chain_tip(&writer).unwrap().unwrap();
    let template = store
        .chain_entry(&writer, tip)
        .unwrap()
        .receipt
        .body()
        .clone();
    let err = store
        .append(&writer, &key, &[], |index, prev| {
            let mut b = template.clone();
            b.chain.index = index;
            b.chain.prev = prev;
            b
        })
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, git_receipt::store::StoreError::Clock(_)),
        "{text}"
    );
    assert!(text.contains("dated 2099-01-01T00:00:00.000Z"), "{text}");
    // the previous entry is the one that is wrong: the CLI's hint says so
    assert!(
        matches!(
            &err,
            git_receipt::store::StoreError::Clock(c)
                if matches!(**c, git_receipt::clock::ClockError::BehindChain { previous_in_future: true, .. })
        ),
        "{text}"
    );
    assert_eq!(store.chain_tip(&writer).unwrap(), Some(tip));
}
