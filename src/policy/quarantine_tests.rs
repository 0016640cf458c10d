//! Unit tests of the quarantine rule ([`crate::quarantine`]) as the judge applies
//! it: receipts with per-test results written into a scratch repository by the
//! recorder, judged at chosen clocks and against chosen baselines.

use gix::ObjectId;

use super::contract::contract_at;
use super::tests::{Repo, contract, key, trusting};
use super::*;
use crate::freshness::{DEFAULT_WALK_LIMIT, State};
use crate::quarantine::excuse;
use crate::receipt::{Mode, TestCase, TestStatus, writer_id};
use crate::sign::SigningKey;
use crate::store::Store;

/// 2027-01-31T00:00:00Z, the expiry the fixtures write.
const EXPIRES_MS: u64 = 1_801_353_600_000;

const CHECK: &str =
    "[check \"suite\"]\n\trun = sh suite.sh\n\tresults = tap:-\n\trequired = true\n";

fn quarantine(name: &str, test: &str, expires: &str) -> String {
    format!(
        "[quarantine \"{name}\"]\n\tcheck = suite\n\ttest = {test}\n\towner = ada@example.com\n\texpires = {expires}\n"
    )
}

fn case(name: &str, status: TestStatus) -> TestCase {
    TestCase {
        name: name.into(),
        status,
        duration_ms: None,
    }
}

/// A receipt of `suite` on `commit` by `key`, exiting `exit_code`, whose
/// results are `tests` (`Err`: they could not be read).
fn record_tests(
    store: &Store,
    key: &SigningKey,
    commit: ObjectId,
    exit_code: i64,
    tests: Result<Vec<TestCase>, String>,
) {
    let c = contract_at(store, commit, "test").unwrap();
    let def = c.check("suite").unwrap();
    let spec = crate::freshness::spec_in(&c, def);
    let tree = store.commit_tree(commit).unwrap();
    let subject = crate::recorder::SubjectIds {
        commit,
        tree,
        inputs: store.inputs_tree(tree, &spec.paths, true).unwrap(),
        dirty: false,
        unmarked: Vec::new(),
    };
    let obs = crate::runner::Observation {
        exit_code,
        detail: String::new(),
        started_at_ms: 1_700_000_000_000,
        duration_ms: 1,
        stdout_tail: Vec::new(),
        stderr_tail: Vec::new(),
        log: Vec::new(),
        output_bytes: 0,
        log_truncated: false,
        interrupted: None,
    };
    let decl = def.results.clone().unwrap();
    let around = crate::recorder::Surroundings {
        tests: Some(crate::results::record(&decl, tests)),
        ..Default::default()
    };
    let writer = writer_id(key.public(), "default");
    crate::recorder::store_receipt_in(
        store,
        &writer,
        key,
        &spec,
        subject,
        &obs,
        Mode::Run,
        &around,
    )
    .unwrap();
}

fn judged_at(
    store: &Store,
    commit: ObjectId,
    k: &SigningKey,
    baseline: &Baseline,
    now_ms: u64,
) -> Judgement {
    judge(
        store,
        &Revision::commit("HEAD", commit),
        &trusting(&[k]),
        baseline,
        Options {
            walk_limit: DEFAULT_WALK_LIMIT,
            now_ms,
        },
    )
    .unwrap()
}

fn suite(j: &Judgement) -> &crate::freshness::CheckState {
    j.states.iter().find(|s| s.name == "suite").unwrap()
}

#[test]
fn a_failure_of_only_quarantined_tests_reads_present_until_the_quarantine_expires() {
    let repo = Repo::new();
    let text = format!(
        "{CHECK}{}",
        quarantine("known", "login times out", "2027-01-31")
    );
    let c = repo.commit(&[(".gitreceipts", &text), ("suite.sh", "x")], "one");
    let store = repo.store();
    let k = key(1);
    record_tests(
        &store,
        &k,
        c,
        1,
        Ok(vec![
            case("adds", TestStatus::Passed),
            case("login times out", TestStatus::Failed),
        ]),
    );
    // the last millisecond before the expiry: present, with the typed reason
    let j = judged_at(&store, c, &k, &Baseline::Own, EXPIRES_MS - 1);
    assert_eq!(suite(&j).state, State::Present, "{}", suite(&j).reason);
    assert!(
        suite(&j).reason.contains("failed only quarantined tests (login times out (known, owner ada@example.com, expires 2027-01-31))"),
        "{}",
        suite(&j).reason
    );
    let covered = crate::quarantine::Covered {
        test: "login times out".into(),
        quarantine: "known".into(),
        owner: "ada@example.com".into(),
        expires: "2027-01-31".into(),
    };
    assert_eq!(
        j.reasons,
        [Reason::Quarantined {
            check: "suite".into(),
            tests: vec![covered.clone()]
        }]
    );
    assert!(j.verdict(&Require::Marked).passed(), "the gate passes");
    // at the expiry itself: the failure counts again, and says why
    let j = judged_at(&store, c, &k, &Baseline::Own, EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Failed);
    assert_eq!(
        j.reasons,
        [Reason::QuarantineExpired {
            check: "suite".into(),
            tests: vec![covered]
        }]
    );
    assert!(
        suite(&j).notices[0].starts_with("quarantine expired for login times out (known"),
        "{:?}",
        suite(&j).notices
    );
}

#[test]
fn a_branch_cannot_excuse_its_own_failure_against_a_trusted_revision() {
    let repo = Repo::new();
    let main = repo.commit(&[(".gitreceipts", CHECK), ("suite.sh", "x")], "main");
    let text = format!("{CHECK}{}", quarantine("mine", "flaky", "2999-01-01"));
    let branch = repo.commit(&[(".gitreceipts", &text)], "quarantine my failure");
    let store = repo.store();
    let k = key(1);
    record_tests(
        &store,
        &k,
        branch,
        1,
        Ok(vec![case("flaky", TestStatus::Failed)]),
    );
    let own = judged_at(&store, branch, &k, &Baseline::Own, EXPIRES_MS);
    assert_eq!(suite(&own).state, State::Present, "its own file excuses it");
    let at_main = Baseline::At {
        commit: main,
        label: "main".into(),
    };
    let judged = judged_at(&store, branch, &k, &at_main, EXPIRES_MS);
    assert_eq!(
        suite(&judged).state,
        State::Failed,
        "main has no such quarantine"
    );
    assert!(judged.reasons.is_empty(), "{:?}", judged.reasons);
    // and a quarantine at the trusted revision counts where the branch dropped it
    let trusted_text = format!("{CHECK}{}", quarantine("kept", "flaky", "2999-01-01"));
    let main2 = repo.commit(&[(".gitreceipts", &trusted_text)], "main quarantines it");
    let dropped = repo.commit(&[(".gitreceipts", CHECK)], "branch drops it");
    record_tests(
        &store,
        &k,
        dropped,
        1,
        Ok(vec![case("flaky", TestStatus::Failed)]),
    );
    let at_main2 = Baseline::At {
        commit: main2,
        label: "main".into(),
    };
    let j = judged_at(&store, dropped, &k, &at_main2, EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Present, "{}", suite(&j).reason);
}

#[test]
fn only_a_failure_every_failed_test_of_which_is_quarantined_for_this_check_is_excused() {
    let repo = Repo::new();
    let text = format!(
        "{CHECK}{}{}[check \"other\"]\n\trun = true\n[quarantine \"elsewhere\"]\n\tcheck = other\n\ttest = b\n\towner = o\n\texpires = 2999-01-01\n",
        quarantine("a", "a", "2999-01-01"),
        quarantine("old", "b", "2000-01-01"),
    );
    let c = repo.commit(&[(".gitreceipts", &text), ("suite.sh", "x")], "one");
    let store = repo.store();
    let k = key(1);
    let receipt = |exit: i64, tests: Result<Vec<TestCase>, String>| {
        record_tests(&store, &k, c, exit, tests);
        let j = judged_at(&store, c, &k, &Baseline::Own, EXPIRES_MS);
        let s = suite(&j).clone();
        (s.state, s.notices.join(" | "), j.reasons.len())
    };
    // a and b failed: b's quarantine expired, and the one for check `other` is not this check's
    let (st, notes, reasons) = receipt(
        1,
        Ok(vec![
            case("a", TestStatus::Failed),
            case("b", TestStatus::Failed),
        ]),
    );
    assert_eq!(st, State::Failed);
    assert!(notes.contains("quarantine expired for b (old"), "{notes}");
    assert!(
        notes.contains("quarantined but not enough to pass: a (a, owner ada@example.com, expires 2999-01-01) (also failed: b)"),
        "{notes}"
    );
    assert_eq!(reasons, 1, "one expired-quarantine reason");
    // every test passed but the check failed: the failure is outside the tests
    let (st, notes, _) = receipt(1, Ok(vec![case("a", TestStatus::Passed)]));
    assert_eq!(st, State::Failed);
    assert!(
        notes.contains("the failure is outside the tests"),
        "{notes}"
    );
    // results that could not be read excuse nothing
    let (st, notes, _) = receipt(1, Err("no file".into()));
    assert_eq!(st, State::Failed);
    assert!(notes.contains("could not be read when it ran"), "{notes}");
    // a skipped quarantined test and a failed one: excused (skips are not failures)
    let (st, _, _) = receipt(
        1,
        Ok(vec![
            case("a", TestStatus::Failed),
            case("c", TestStatus::Skipped),
        ]),
    );
    assert_eq!(st, State::Present);
}

#[test]
fn the_excuse_of_a_passed_receipt_or_one_without_tests_is_nothing() {
    let repo = Repo::new();
    let text = format!("{CHECK}{}", quarantine("a", "a", "2999-01-01"));
    let c = repo.commit(&[(".gitreceipts", &text), ("suite.sh", "x")], "one");
    let store = repo.store();
    let k = key(1);
    let q = contract(&text).quarantines;
    record_tests(&store, &k, c, 0, Ok(vec![case("a", TestStatus::Failed)]));
    let j = judged_at(&store, c, &k, &Baseline::Own, EXPIRES_MS);
    let d = suite(&j).decider.as_ref().unwrap();
    let list = [case("a", TestStatus::Failed)];
    let e = excuse(&d.receipt, Ok(&list), "suite", &q, EXPIRES_MS);
    assert!(!e.excused, "a passed receipt needs no excuse");
    assert_eq!(e.not_excusable.as_deref(), Some("the receipt passed"));
    assert_eq!(e.words(), None);
}
