//! Idempotency keys (`docs/format.md` section 15): a result uploaded again
//! under its key is recorded once, by `record` in one clone and by `push` across
//! clones of one key that had not met; a key named for two results is refused
//! where it can be and reported by `verify` where it cannot.
//!
//! Two clones "of one machine" share a HOME (one key, one writer id) and a
//! remote served by `git daemon`, as CI jobs of one key on two runners do.

use std::path::{Path, PathBuf};

use crate::common::{Daemon, Env, Run};
use git_receipt::receipt::format_timestamp;

const KEY: &str = "ci-4711/test";

/// The log of a result produced elsewhere, outside every work tree.
fn log_file(env: &Env, text: &str) -> PathBuf {
    let path = env.path("test.log");
    std::fs::write(&path, text).unwrap();
    path
}

/// `record test` of exit `exit` with `log`, 1500 ms, under idempotency key `key`.
fn record(env: &Env, dir: &Path, exit: &str, log: &Path, key: &str) -> Run {
    env.receipt(
        dir,
        &[
            "record",
            "test",
            "--exit-code",
            exit,
            "--log",
            log.to_str().unwrap(),
            "--duration-ms",
            "1500",
            "--idempotency-key",
            key,
        ],
    )
}

/// How many receipts `refname`'s chain holds in `dir`, and its tip.
fn chain(env: &Env, dir: &Path, refname: &str) -> (u64, String) {
    let count = env.git_ok(dir, &["rev-list", "--count", refname]);
    (
        count.parse().unwrap(),
        env.git_ok(dir, &["rev-parse", refname]),
    )
}

/// Everything this clone keeps of its receipts: chains, notes, log refs.
fn receipt_refs(env: &Env, dir: &Path) -> String {
    env.git_ok(
        dir,
        &[
            "for-each-ref",
            "refs/receipts/",
            "refs/notes/receipts/",
            "refs/receipt-logs/",
        ],
    )
}

#[test]
fn a_retried_record_with_the_same_key_and_result_writes_nothing_and_names_the_receipt() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["key", "generate"]);
    let log = log_file(&env, "test result: ok. 12 passed\n");
    let first = record(&env, &dir, "0", &log, KEY);
    assert_eq!(first.code, 0, "{first}");
    assert!(
        first.stderr.contains("recorded test passed (exit 0)"),
        "{first}"
    );
    let writer = env.only_writer(&dir);
    let refname = format!("refs/receipts/{writer}");
    let id = env.log_json(&dir)[0]["id"].as_str().unwrap().to_owned();
    assert!(
        first.stderr.contains(&id[..19]),
        "the receipt {id} is named: {first}"
    );
    let before = receipt_refs(&env, &dir);
    assert_eq!(chain(&env, &dir, &refname).0, 1);
    // the upload step runs again (a CI retry): a later start time, same result
    std::thread::sleep(std::time::Duration::from_millis(5));
    let again = record(&env, &dir, "0", &log, KEY);
    assert_eq!(again.code, 0, "{again}");
    assert_eq!(
        again.stderr.trim_end(),
        format!(
            "git-receipt: already recorded: test under idempotency key {KEY}, receipt {id} ({writer} #0); nothing written"
        ),
        "{again}"
    );
    assert_eq!(again.stdout, "", "{again}");
    assert_eq!(
        receipt_refs(&env, &dir),
        before,
        "no chain, note or log ref moved"
    );
    // the chain holds it once; another key is another result, written
    let other = record(&env, &dir, "0", &log, "ci-4712/test");
    assert_eq!(other.code, 0, "{other}");
    assert!(other.stderr.contains("recorded test passed"), "{other}");
    assert_eq!(chain(&env, &dir, &refname).0, 2);
    let third = record(&env, &dir, "0", &log, KEY);
    assert!(
        third
            .stderr
            .contains(&format!("receipt {id} ({writer} #0)")),
        "found below the tip: {third}"
    );
    assert_eq!(chain(&env, &dir, &refname).0, 2);
    let shown = env.receipt_ok(&dir, &["show", "--body", &id]).stdout;
    let body: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(body["schema"], "git-receipt/v5");
    assert_eq!(body["result"]["idempotency_key"], KEY);
}

#[test]
fn a_retry_under_the_key_with_another_result_is_refused_and_writes_nothing() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["key", "generate"]);
    // a key that is no key: refused before anything is read or written
    let log = log_file(&env, "ok\n");
    let bad = record(&env, &dir, "0", &log, "ci 4711");
    assert_eq!(bad.code, 2, "{bad}");
    assert!(
        bad.stderr.contains("--idempotency-key \"ci 4711\" is not a key: a key is 1 to 128 printable ASCII characters without spaces\nhint: e.g. --idempotency-key"),
        "{bad}"
    );
    let too_long = record(&env, &dir, "0", &log, &"k".repeat(129));
    assert_eq!(too_long.code, 2, "{too_long}");
    assert_eq!(receipt_refs(&env, &dir), "", "nothing written");
    assert_eq!(record(&env, &dir, "0", &log, KEY).code, 0);
    let writer = env.only_writer(&dir);
    let id = env.log_json(&dir)[0]["id"].as_str().unwrap().to_owned();
    let before = receipt_refs(&env, &dir);
    // the job's retry saw another exit code, or another log: another result
    for (exit, text) in [("1", "ok\n"), ("0", "ok, but other output\n")] {
        let log = log_file(&env, text);
        let r = record(&env, &dir, exit, &log, KEY);
        assert_eq!(r.code, 2, "{r}");
        assert!(
            r.stderr.contains(&format!(
                "idempotency key {KEY} already names another result: receipt {id} ({writer} #0) holds it for a result other than this one"
            )),
            "{r}"
        );
        assert!(
            r.stderr.contains("\nhint: use a new key for a new result"),
            "{r}"
        );
        assert_eq!(receipt_refs(&env, &dir), before, "nothing written");
    }
    // and the work tree changed since: another subject, another result
    std::fs::write(dir.join("src/lib.rs"), "pub fn changed() {}\n").unwrap();
    let r = record(&env, &dir, "0", &log, KEY);
    assert_eq!(r.code, 2, "{r}");
    assert_eq!(receipt_refs(&env, &dir), before);
}

/// A served repository seeded with the basic fixture, and two clones of it,
/// `a` and `b`, sharing `env`'s HOME: one key, one writer id, generated here.
fn two_clones(env: &Env, daemon: &Daemon, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let seed = env.fixture_repo("make_basic_repo.sh", &format!("seed-{name}"));
    let (bare, url) = daemon.bare(env, name);
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    let mut clones = Vec::new();
    for rel in ["a", "b"] {
        let dir = env.path(rel);
        env.git_ok(
            env.tmp.path(),
            &["clone", "-q", &url, dir.to_str().unwrap()],
        );
        clones.push(dir);
    }
    env.receipt_ok(&clones[0], &["key", "generate"]);
    let b = clones.pop().unwrap();
    let a = clones.pop().unwrap();
    (bare, a, b)
}

/// `verify` in `dir`, which trusts its own key: clean, and no warning (the notes
/// show what the chain holds).
fn assert_verifies_clean(env: &Env, dir: &Path) {
    let r = env.receipt(dir, &["verify"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains(": all valid"), "{r}");
    assert!(!r.stderr.contains("warning"), "{r}");
    assert!(!r.stderr.contains("idempotency"), "{r}");
}

#[test]
fn two_clones_uploading_one_keyed_result_leave_it_once_on_the_remote() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, a, b) = two_clones(&env, &daemon, "keyed.git");
    let log = log_file(&env, "test result: ok. 12 passed\n");
    // the job uploads from runner a, and its retry from runner b: neither saw
    // the other's chain, so each writes the result
    assert_eq!(record(&env, &a, "0", &log, KEY).code, 0);
    assert_eq!(record(&env, &b, "0", &log, KEY).code, 0);
    env.receipt_ok(&b, &["run", "docs"]);
    let writer = env.only_writer(&a);
    let refname = format!("refs/receipts/{writer}");
    let keyed_id = env.log_json(&a)[0]["id"].as_str().unwrap().to_owned();
    let r = env.receipt_ok(&a, &["push"]);
    assert!(r.stderr.contains("pushed 1 new receipt of "), "{r}");
    let r = env.receipt_ok(&b, &["push"]);
    assert!(
        r.stderr.contains(
            "pushed 1 new receipt of default-"
        ) && r.stderr.contains(
            " (1 re-appended after the chain diverged; 1 left out: origin already held its result)"
        ),
        "{r}"
    );
    // the remote holds the result once, then b's docs
    let (count, tip) = chain(&env, &bare, &refname);
    assert_eq!(count, 2, "one keyed result and the docs run");
    // b's chain is the remote's, its notes and index agree
    assert_eq!(chain(&env, &b, &refname), (2, tip.clone()));
    let log_b = env.log_json(&b);
    let ids: Vec<&str> = log_b.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2, "{log_b:?}");
    assert!(
        ids.contains(&keyed_id.as_str()),
        "a's keyed receipt: {ids:?}"
    );
    assert_eq!(
        env.status_of(&b, None, "test")["receipt"],
        keyed_id.as_str()
    );
    assert_verifies_clean(&env, &b);
    // a takes the docs run as a fast-forward
    env.receipt_ok(&a, &["fetch"]);
    assert_eq!(chain(&env, &a, &refname), (2, tip));
    assert_verifies_clean(&env, &a);
}

#[test]
fn a_run_receipt_uploaded_again_from_a_copy_of_its_clone_is_left_out() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, a, b) = two_clones(&env, &daemon, "copied.git");
    // runner a runs the tests; the job's workspace is saved (a cache, an
    // artifact) before its upload step, which later runs again from the copy
    env.receipt_ok(&a, &["run", "test"]);
    let copy = env.path("a-copy");
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(&a)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    // meanwhile another job of the key pushed: the chains diverge
    env.receipt_ok(&b, &["run", "docs"]);
    env.receipt_ok(&b, &["push"]);
    let r = env.receipt_ok(&a, &["push"]);
    assert!(
        r.stderr
            .contains("(1 re-appended after the chain diverged)"),
        "{r}"
    );
    let writer = env.only_writer(&a);
    let refname = format!("refs/receipts/{writer}");
    let (count, tip) = chain(&env, &bare, &refname);
    assert_eq!(count, 2);
    // the retried upload: the same receipt, which the remote holds re-signed
    // above b's (a keyless receipt is known by its body without `chain`)
    let r = env.receipt_ok(&copy, &["push"]);
    assert!(
        r.stderr.contains("pushed 0 new receipts of default-")
            && r.stderr
                .contains("(1 left out: origin already held its result)"),
        "{r}"
    );
    assert_eq!(chain(&env, &bare, &refname), (2, tip.clone()), "not twice");
    assert_eq!(chain(&env, &copy, &refname), (2, tip));
    assert_eq!(
        env.status_of(&copy, None, "test")["receipt"],
        env.status_of(&a, None, "test")["receipt"],
        "the copy's test receipt is the one a pushed"
    );
    assert_verifies_clean(&env, &copy);
    // a new run is another run: pushed as usual
    env.receipt_ok(&copy, &["run", "test"]);
    let r = env.receipt_ok(&copy, &["push"]);
    assert!(r.stderr.contains("pushed 1 new receipt of "), "{r}");
    assert_eq!(chain(&env, &bare, &refname).0, 3);
}

#[test]
fn a_key_the_remote_holds_for_another_result_refuses_the_push_and_changes_nothing() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, a, b) = two_clones(&env, &daemon, "conflict.git");
    let log = log_file(&env, "test result: ok. 12 passed\n");
    assert_eq!(record(&env, &a, "0", &log, KEY).code, 0);
    env.receipt_ok(&a, &["push"]);
    let theirs = env.log_json(&a)[0]["id"].as_str().unwrap().to_owned();
    // the same key for a failed result, on a runner that never saw a's
    assert_eq!(record(&env, &b, "1", &log, KEY).code, 0);
    let ours = env.log_json(&b)[0]["id"].as_str().unwrap().to_owned();
    let writer = env.only_writer(&b);
    let refname = format!("refs/receipts/{writer}");
    let remote_before = chain(&env, &bare, &refname);
    let local_before = receipt_refs(&env, &b);
    let r = env.receipt(&b, &["push"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(&format!(
            "pushing chain {writer} to origin was refused: idempotency key {KEY} names two results: your receipt #0 {ours} and the remote's #0 {theirs}, which differ in more than the start time; nothing was sent and your local receipts are untouched"
        )),
        "{r}"
    );
    assert!(
        r.stderr
            .contains("hint: a key names one result: record a new result under a new key"),
        "{r}"
    );
    assert!(
        r.stderr.contains(&format!(
            "git update-ref {refname} refs/receipts-incoming/origin/{writer}"
        )),
        "{r}"
    );
    assert_eq!(chain(&env, &bare, &refname), remote_before);
    assert_eq!(receipt_refs(&env, &b), local_before);
    // the way out the hint names: take the remote's chain, record anew
    env.git_ok(
        &b,
        &[
            "update-ref",
            &refname,
            &format!("refs/receipts-incoming/origin/{writer}"),
        ],
    );
    assert_eq!(record(&env, &b, "1", &log, "ci-4711/test-retry").code, 0);
    let r = env.receipt_ok(&b, &["push"]);
    assert!(r.stderr.contains("pushed 1 new receipt of "), "{r}");
    assert_eq!(chain(&env, &bare, &refname).0, 2);
}

/// [`Env::append_crafted`] with a start time after the receipt below (and not
/// after the clock of a later `record`).
fn append_changed(
    env: &Env,
    dir: &Path,
    writer: &str,
    change: impl FnOnce(&mut git_receipt::receipt::Body),
) -> String {
    env.append_crafted(dir, writer, |body| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        body.result.started_at = format_timestamp(now);
        change(body);
    })
}

#[test]
fn verify_finds_a_chain_holding_one_key_for_two_results_and_notes_one_result_twice() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["key", "generate"]);
    let log = log_file(&env, "ok\n");
    assert_eq!(record(&env, &dir, "0", &log, KEY).code, 0);
    let writer = env.only_writer(&dir);
    let first = env.log_json(&dir)[0]["id"].as_str().unwrap().to_owned();
    // the same result again (only the start differs): one result, said once
    let twice = append_changed(&env, &dir, &writer, |_| {});
    env.receipt_ok(&dir, &["reindex"]);
    let r = env.receipt(&dir, &["verify", "--json"]);
    assert_eq!(r.code, 0, "{r}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["findings"], serde_json::json!([]), "{r}");
    let notices = v["notices"].as_array().unwrap();
    let repeated: Vec<&serde_json::Value> = notices
        .iter()
        .filter(|n| n["code"] == "idempotency-repeated")
        .collect();
    assert_eq!(repeated.len(), 1, "{r}");
    assert_eq!(repeated[0]["subject"], twice.as_str());
    assert!(
        repeated[0]["message"].as_str().unwrap().contains(&format!(
            "#1 holds the result of #0 ({first}) again under idempotency key {KEY}"
        )),
        "{r}"
    );
    // another result under the key: a finding naming both, exit 1
    let other = append_changed(&env, &dir, &writer, |b| {
        b.result.exit_code = 1;
        b.result.passed = false;
    });
    env.receipt_ok(&dir, &["reindex"]);
    let r = env.receipt(&dir, &["verify"]);
    assert_eq!(r.code, 1, "{r}");
    let line = format!(
        "{writer} #2 {}: [idempotency] holds idempotency key {KEY} for another result than #0 {first} does: one key names one result",
        &other[..19]
    );
    assert!(r.stdout.lines().any(|l| l == line), "{line}\n{r}");
    assert!(r.stderr.contains(": 1 finding"), "{r}");
    let r = env.receipt(&dir, &["verify", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["findings"][0]["kind"], "idempotency", "{r}");
    assert_eq!(v["findings"][0]["id"], other.as_str(), "{r}");
    // and `record` with the key, here, names the newest holder's other result
    let r = record(&env, &dir, "0", &log, KEY);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(&format!("receipt {other} ({writer} #2)")),
        "{r}"
    );
}

#[test]
fn the_pre_push_hook_says_what_it_left_out() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, a, b) = two_clones(&env, &daemon, "hooked.git");
    let log = log_file(&env, "test result: ok. 12 passed\n");
    assert_eq!(record(&env, &a, "0", &log, KEY).code, 0);
    assert_eq!(record(&env, &b, "0", &log, KEY).code, 0);
    env.receipt_ok(&b, &["run", "docs"]);
    env.receipt_ok(&a, &["push"]);
    // b pushes a branch; its pre-push hook sends b's receipts first
    env.receipt_ok(&b, &["init"]);
    std::fs::write(b.join("NOTES"), "more\n").unwrap();
    env.git_ok(&b, &["add", "NOTES"]);
    env.git_ok(&b, &["commit", "-qm", "notes"]);
    let r = env.git(&b, &["push", "origin", "HEAD:refs/heads/topic"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains(
            "(1 re-appended after the chain diverged; 1 left out: origin already held its result)"
        ),
        "{r}"
    );
    let writer = env.only_writer(&a);
    let (count, _) = chain(&env, &bare, &format!("refs/receipts/{writer}"));
    assert_eq!(count, 2, "the keyed result once, and the docs run");
}
