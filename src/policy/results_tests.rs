//! Unit tests of the rules built on per-test results, as the judge applies them:
//! quarantines ([`crate::quarantine`]) and differential checks
//! ([`crate::parity`]). Receipts with per-test results are written into a scratch
//! repository by the recorder, and judged at chosen clocks and baselines.

use gix::ObjectId;

use super::tests::{Repo, contract, key, run_of, trusting};
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
    record_where(store, key, commit, exit_code, tests, &[], &[]);
}

/// [`record_tests`] where the declared assertions read `(name, actual)` and the
/// metrics `(name, value)`; the receipt's id.
fn record_where(
    store: &Store,
    key: &SigningKey,
    commit: ObjectId,
    exit_code: i64,
    tests: Result<Vec<TestCase>, String>,
    assertions: &[(&str, &str)],
    metrics: &[(&str, Option<&str>)],
) -> String {
    let writer = writer_id(key.public(), "default");
    let run = ("suite", exit_code, tests);
    record_in(store, (&writer, key), commit, run, assertions, metrics)
}

/// A receipt of check `run.0` on `commit` in chain `writer` signed by `key`
/// (which need not be the writer's), exiting `run.1` with results `run.2`; its id.
fn record_in(
    store: &Store,
    (writer, key): (&str, &SigningKey),
    commit: ObjectId,
    (check, exit_code, tests): (&str, i64, Result<Vec<TestCase>, String>),
    assertions: &[(&str, &str)],
    metrics: &[(&str, Option<&str>)],
) -> String {
    let (c, spec, subject, obs) = run_of(store, commit, check, exit_code);
    let def = c.check(check).unwrap();
    let around = crate::recorder::Surroundings {
        // sorted, as the parsers leave a list
        tests: def.results.as_ref().map(|decl| {
            crate::results::record(
                decl,
                tests.map(|mut l| {
                    l.sort();
                    l
                }),
            )
        }),
        metrics: metrics
            .iter()
            .map(|(name, value)| {
                let d = def.metrics.iter().find(|m| m.name == *name).unwrap();
                crate::receipt::Metric {
                    name: d.name.clone(),
                    unit: d.unit.clone(),
                    better: d.better,
                    value: value.map(str::to_owned),
                    error: if value.is_some() {
                        String::new()
                    } else {
                        "no line matched".into()
                    },
                }
            })
            .collect(),
        assertions: assertions
            .iter()
            .map(|(name, actual)| crate::receipt::AssertionResult {
                name: (*name).into(),
                argv: vec!["sh".into(), "-c".into(), "uname".into()],
                expected: None,
                actual: (*actual).into(),
                passed: true,
                detail: String::new(),
            })
            .collect(),
        ..Default::default()
    };
    crate::recorder::store_receipt_in(store, writer, key, &spec, subject, &obs, Mode::Run, &around)
        .unwrap()
        .receipt
        .id()
        .to_owned()
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
            protected: false,
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

// ---------------------------------------------------------------------------------
// Differential checks
// ---------------------------------------------------------------------------------

const DIFFERENTIAL: &str = "[check \"suite\"]\n\trun = sh suite.sh\n\tpath = suite.sh\n\tresults = tap:-\n\trequired = true\n\tparity = differential\n";

fn tests_of(cases: &[(&str, bool)]) -> Result<Vec<TestCase>, String> {
    Ok(cases
        .iter()
        .map(|(n, ok)| {
            case(
                n,
                if *ok {
                    TestStatus::Passed
                } else {
                    TestStatus::Failed
                },
            )
        })
        .collect())
}

/// main (`M`, suite.sh v1) and a topic commit on it (`T`, suite.sh v2), with
/// `contract` at both.
fn main_and_topic(repo: &Repo, contract: &str) -> (ObjectId, ObjectId) {
    let m = repo.commit(&[(".gitreceipts", contract), ("suite.sh", "v1")], "main");
    repo.git(&["checkout", "-q", "-b", "topic"]);
    let t = repo.commit(&[("suite.sh", "v2")], "topic");
    (m, t)
}

/// [`main_and_topic`] in a new repository: it, its store, the key that signs,
/// and the two commits.
fn on_topic(contract: &str) -> (Repo, Store, SigningKey, (ObjectId, ObjectId)) {
    let repo = Repo::new();
    let commits = main_and_topic(&repo, contract);
    let store = repo.store();
    (repo, store, key(1), commits)
}

fn at(commit: ObjectId) -> Baseline {
    Baseline::At {
        commit,
        label: "main".into(),
    }
}

#[test]
fn a_differential_failure_blocks_only_on_tests_that_did_not_fail_at_the_baseline() {
    let (_repo, store, k, (m, t)) = on_topic(DIFFERENTIAL);
    // main: `old` already fails there
    record_tests(
        &store,
        &k,
        m,
        1,
        tests_of(&[("a", true), ("old", false), ("b", true)]),
    );
    // the topic fails only what main fails: present, and says so
    record_tests(
        &store,
        &k,
        t,
        1,
        tests_of(&[("a", true), ("old", false), ("b", true)]),
    );
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    let s = suite(&j);
    assert_eq!(s.state, State::Present, "{}", s.reason);
    let m7 = m.to_hex_with_len(7).to_string();
    assert!(
        s.reason.ends_with(&format!(
            "but differential: 0 fixed, 0 new failures vs {m7} (1 failing there too)"
        )),
        "{}",
        s.reason
    );
    let Reason::Differential(c) = &j.reasons[0] else {
        panic!("{:?}", j.reasons)
    };
    assert_eq!(
        (c.baseline.as_str(), c.still_failing),
        (m.to_string().as_str(), 1)
    );
    assert!(j.verdict(&Require::Marked).passed());
    // a new failure (and a fix): failed, naming it
    record_tests(
        &store,
        &k,
        t,
        1,
        tests_of(&[("a", false), ("old", true), ("b", true)]),
    );
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    let s = suite(&j);
    assert_eq!(s.state, State::Failed);
    assert!(
        s.reason
            .ends_with(&format!("differential: 1 fixed, 1 new failure vs {m7}: a")),
        "{}",
        s.reason
    );
    // a test that is new here and fails is a new failure too
    record_tests(
        &store,
        &k,
        t,
        1,
        tests_of(&[("a", true), ("old", false), ("brand-new", false)]),
    );
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Failed);
    assert!(
        suite(&j).reason.contains("new failure vs"),
        "{}",
        suite(&j).reason
    );
    // a passing receipt needs no baseline
    record_tests(&store, &k, t, 0, tests_of(&[("a", true)]));
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Present);
    assert!(j.reasons.is_empty(), "{:?}", j.reasons);
}

#[test]
fn allow_new_failures_bounds_how_many_a_change_may_introduce() {
    let text = format!("{DIFFERENTIAL}\tallow-new-failures = 1\n");
    let (_repo, store, k, (m, t)) = on_topic(&text);
    record_tests(&store, &k, m, 0, tests_of(&[("a", true), ("b", true)]));
    record_tests(&store, &k, t, 1, tests_of(&[("a", false), ("b", true)]));
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Present, "{}", suite(&j).reason);
    assert!(
        suite(&j).reason.contains("1 new failure vs"),
        "{}",
        suite(&j).reason
    );
    assert!(
        suite(&j).reason.contains("(allow-new-failures = 1)"),
        "{}",
        suite(&j).reason
    );
    record_tests(&store, &k, t, 1, tests_of(&[("a", false), ("b", false)]));
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Failed, "two are one too many");
}

#[test]
fn without_a_usable_baseline_a_differential_failure_cannot_be_decided() {
    let (_repo, store, k, (m, t)) = on_topic(DIFFERENTIAL);
    record_tests(&store, &k, t, 1, tests_of(&[("a", false)]));
    let undecided_why = |j: &Judgement| -> String {
        assert!(
            j.states.iter().all(|s| s.name != "suite"),
            "not a state: {:?}",
            j.states
        );
        let u = j
            .undecided
            .iter()
            .find(|u| u.name == "suite")
            .expect("undecided");
        assert!(u.required);
        match &u.error {
            crate::freshness::FreshnessError::NoBaseline { baseline, why, .. } => {
                assert_eq!(*baseline, Some(m));
                why.clone()
            }
            other => panic!("{other}"),
        }
    };
    // no receipt at the baseline at all
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    let why = undecided_why(&j);
    let m7 = m.to_hex_with_len(7).to_string();
    assert!(
        why.contains(&format!(
            "the baseline {m7} (main) has no trusted receipt of its inputs there (missing)"
        )),
        "{why}"
    );
    assert!(!j.verdict(&Require::Marked).passed(), "undecided is no yes");
    // a baseline receipt by a key not trusted here counts for nothing
    record_tests(&store, &key(9), m, 0, tests_of(&[("a", true)]));
    let why = undecided_why(&judged_at(&store, t, &k, &at(m), EXPIRES_MS));
    assert!(why.contains("has no trusted receipt"), "{why}");
    // a baseline whose results could not be read
    record_tests(&store, &k, m, 0, Err("no file".into()));
    let why = undecided_why(&judged_at(&store, t, &k, &at(m), EXPIRES_MS));
    assert!(why.contains("recorded no per-test results"), "{why}");
}

#[test]
fn a_baseline_is_the_newest_trusted_receipt_from_the_same_runner_class() {
    let text = format!("[assert \"os\"]\n\trun = uname\n{DIFFERENTIAL}\tassert = os\n");
    let (_repo, store, k, (m, t)) = on_topic(&text);
    let darwin = || {
        record_where(
            &store,
            &k,
            m,
            1,
            tests_of(&[("a", false)]),
            &[("os", "Darwin")],
            &[],
        )
    };
    let there = darwin();
    // here: Linux, failing a (a new failure against a baseline that passed it)
    record_where(
        &store,
        &k,
        t,
        1,
        tests_of(&[("a", false)]),
        &[("os", "Linux")],
        &[],
    );
    let undecided = || {
        let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
        j.undecided
            .iter()
            .find(|u| u.name == "suite")
            .map(|u| u.error.to_string())
    };
    let why = undecided().expect("no Linux receipt at the baseline: undecided");
    assert!(
        why.contains(&format!(
            "no trusted receipt of its inputs at the baseline {} (main) ran where the declared environment assertions read as here",
            m.to_hex_with_len(7)
        )) && why.contains(&format!("its newest, {}, read", &there[..19]))
            && why.contains("Darwin")
            && why.contains("Linux")
            && why.ends_with("another runner class"),
        "{why}"
    );
    // an older Linux receipt at the baseline is the one compared with, even
    // when a Darwin one is newer: it failed a too, so nothing is new
    let linux = record_where(
        &store,
        &k,
        m,
        1,
        tests_of(&[("a", false)]),
        &[("os", "Linux")],
        &[],
    );
    darwin();
    assert_eq!(undecided(), None);
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Present, "{}", suite(&j).reason);
    let compared = j
        .reasons
        .iter()
        .find_map(|r| match r {
            Reason::Differential(c) => Some(c.baseline_receipt.clone()),
            _ => None,
        })
        .expect("a comparison");
    assert_eq!(
        compared, linux,
        "the Linux receipt, not the newer Darwin one"
    );
}

#[test]
fn differential_is_the_trusted_revisions_rule_and_a_main_commit_is_weighed_against_its_parent() {
    let repo = Repo::new();
    // main declares the check absolute; the topic makes it differential
    let absolute = DIFFERENTIAL.replace("\tparity = differential\n", "");
    let m = repo.commit(&[(".gitreceipts", &absolute), ("suite.sh", "v1")], "main");
    repo.git(&["checkout", "-q", "-b", "topic"]);
    let t = repo.commit(
        &[(".gitreceipts", DIFFERENTIAL), ("suite.sh", "v2")],
        "topic",
    );
    let store = repo.store();
    let k = key(1);
    record_tests(&store, &k, m, 1, tests_of(&[("a", false)]));
    record_tests(&store, &k, t, 1, tests_of(&[("a", false)]));
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Failed, "main's rules: absolute");
    assert!(
        j.reasons
            .iter()
            .all(|r| !matches!(r, Reason::Differential(_)))
    );
    // by its own rules (status, plain gate) the topic is weighed against the
    // trust root, main, and introduced nothing
    let own = judged_at(&store, t, &k, &Baseline::Own, EXPIRES_MS);
    assert_eq!(suite(&own).state, State::Present, "{}", suite(&own).reason);
    // a commit on main itself is weighed against its first parent
    repo.git(&["checkout", "-q", "main"]);
    let m2 = repo.commit(
        &[(".gitreceipts", DIFFERENTIAL), ("suite.sh", "v3")],
        "main 2",
    );
    record_tests(&store, &k, m2, 1, tests_of(&[("a", false), ("b", false)]));
    let j = judged_at(&store, m2, &k, &Baseline::Own, EXPIRES_MS);
    let s = suite(&j);
    assert_eq!(s.state, State::Failed);
    let m7 = m.to_hex_with_len(7).to_string();
    assert!(
        s.reason.ends_with(&format!(
            "0 fixed, 1 new failure vs {m7} (1 failing there too): b"
        )),
        "{}",
        s.reason
    );
}

#[test]
fn a_differential_checks_metrics_fail_it_past_max_regression_even_when_the_run_passed() {
    let text = "[check \"suite\"]\n\trun = sh suite.sh\n\tpath = suite.sh\n\trequired = true\n\tparity = differential\n\tmax-regression = 5%\n\tmetric = p99 ms lower ^p99: ([0-9.]+)\n\tmetric = ops ops/s higher ^ops: ([0-9.]+)\n";
    let (_repo, store, k, (m, t)) = on_topic(text);
    let m7 = m.to_hex_with_len(7).to_string();
    let run = |commit, p99: &str, ops: Option<&str>| {
        record_metrics(&store, &k, commit, &[("ops", ops), ("p99", Some(p99))]);
        judged_at(&store, t, &k, &at(m), EXPIRES_MS)
    };
    // the baseline: p99 10 ms, 200 ops/s
    record_metrics(&store, &k, m, &[("ops", Some("200")), ("p99", Some("10"))]);
    // within 5% both ways: present, the comparison said
    let j = run(t, "10.5", Some("190"));
    let s = suite(&j);
    assert_eq!(s.state, State::Present, "{}", s.reason);
    assert!(
        s.reason.ends_with(&format!(
            "; differential: ops 200 -> 190 ops/s vs {m7} (5% worse; within max-regression 5%); p99 10 -> 10.5 ms vs {m7} (5% worse; within max-regression 5%)"
        )),
        "{}",
        s.reason
    );
    // past it: the passed run fails the check, and says so
    let j = run(t, "10.6", Some("250"));
    let s = suite(&j);
    assert_eq!(s.state, State::Failed);
    assert!(
        s.reason
            .starts_with("failed: differential: ops 200 -> 250 ops/s"),
        "{}",
        s.reason
    );
    assert!(s.reason.contains("(25% better; within"), "{}", s.reason);
    assert!(s.reason.contains("p99 10 -> 10.6 ms vs"), "{}", s.reason);
    assert!(
        s.reason.contains("(6% worse; past max-regression 5%)"),
        "{}",
        s.reason
    );
    assert!(
        s.reason.contains("(the run itself passed: present:"),
        "{}",
        s.reason
    );
    let Some(Reason::Differential(c)) = j.reasons.first() else {
        panic!("{:?}", j.reasons)
    };
    assert_eq!(c.metrics.iter().filter(|x| x.regressed).count(), 1);
    assert_eq!(c.metrics[1].worse_bp, Some(600));
    // a metric that was not read here cannot be compared: the check fails
    let j = run(t, "10", None);
    let s = suite(&j);
    assert_eq!(s.state, State::Failed, "no regression can be ruled out");
    assert!(
        s.reason
            .starts_with("failed: differential, but its metric ops was not read (no line matched)"),
        "{}",
        s.reason
    );
}

#[test]
fn a_metric_compared_with_zero_or_missing_at_the_baseline() {
    let text = "[check \"suite\"]\n\trun = sh suite.sh\n\tpath = suite.sh\n\tparity = differential\n\tmax-regression = 1000%\n\tmetric = errors n lower ^errors: ([0-9]+)\n\tmetric = ops n higher ^ops: ([0-9]+)\n";
    let (_repo, store, k, (m, t)) = on_topic(text);
    // at the baseline no error and no ops reading
    record_metrics(&store, &k, m, &[("errors", Some("0")), ("ops", None)]);
    record_metrics(&store, &k, t, &[("errors", Some("0")), ("ops", Some("5"))]);
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Present, "{}", suite(&j).reason);
    let Some(Reason::Differential(c)) = j.reasons.first() else {
        panic!("{:?}", j.reasons)
    };
    assert_eq!(
        c.metrics.len(),
        1,
        "ops is not compared with a baseline that did not read it"
    );
    assert_eq!(c.metrics[0].worse_bp, None, "from 0");
    // from 0, any move the wrong way is past every bound
    record_metrics(&store, &k, t, &[("errors", Some("1")), ("ops", Some("5"))]);
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Failed);
    assert!(
        suite(&j).reason.contains("errors 0 -> 1 n vs"),
        "{}",
        suite(&j).reason
    );
    assert!(
        suite(&j).reason.contains("(from 0; past"),
        "{}",
        suite(&j).reason
    );
    // and without any baseline receipt, even a passed run cannot be decided
    let (_repo, store, _, (m, t)) = on_topic(text);
    record_metrics(&store, &k, t, &[("errors", Some("0")), ("ops", Some("5"))]);
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    assert!(
        j.undecided.iter().any(|u| u.name == "suite"),
        "{:?}",
        j.states
    );
}

/// A differential check of its metrics only: p99 may grow 5% at most.
const BOUNDED: &str = "[check \"suite\"]\n\trun = sh suite.sh\n\tpath = suite.sh\n\trequired = true\n\tparity = differential\n\tmax-regression = 5%\n\tmetric = p99 ms lower ^p99: ([0-9.]+)\n";

/// A passed receipt of `suite` on `commit` without per-test results, whose
/// metrics read `(name, value)`.
fn record_metrics(
    store: &Store,
    k: &SigningKey,
    commit: ObjectId,
    metrics: &[(&str, Option<&str>)],
) {
    record_where(store, k, commit, 0, Err("none".into()), &[], metrics);
}

#[test]
fn a_differential_failure_without_per_test_results_keeps_failing_with_a_notice() {
    let (_repo, store, k, (m, t)) = on_topic(DIFFERENTIAL);
    record_tests(&store, &k, m, 1, tests_of(&[("a", false)]));
    record_tests(&store, &k, t, 1, Err("no file".into()));
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    let s = suite(&j);
    assert_eq!(s.state, State::Failed);
    assert!(!s.reason.contains("differential"), "{}", s.reason);
    assert_eq!(
        s.notices,
        [
            "differential, but its per-test results could not be read when it ran, so nothing can be compared"
        ]
    );
    assert!(j.reasons.is_empty(), "{:?}", j.reasons);
}

#[test]
fn a_single_bounded_metric_not_read_fails_a_passed_run_and_a_stale_check_is_not_weighed() {
    let (repo, store, k, (m, t)) = on_topic(BOUNDED);
    let t2 = repo.commit(&[("suite.sh", "v3")], "topic 2");
    record_metrics(&store, &k, m, &[("p99", Some("10"))]);
    record_metrics(&store, &k, t, &[("p99", None)]);
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    let s = suite(&j);
    assert_eq!(s.state, State::Failed);
    assert!(
        s.reason
            .starts_with("failed: differential, but its metric p99 was not read (no line matched)"),
        "{}",
        s.reason
    );
    // a regression at t, judged at t2 where suite.sh changed since: stale, as
    // freshness decided, not weighed
    record_metrics(&store, &k, t, &[("p99", Some("20"))]);
    let j = judged_at(&store, t2, &k, &at(m), EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Stale, "{}", suite(&j).reason);
    assert!(j.reasons.is_empty(), "{:?}", j.reasons);
}

#[test]
fn the_baseline_commit_is_the_merge_base_or_the_parent_and_its_words_say_which() {
    let (repo, store, _, (m, t)) = on_topic(DIFFERENTIAL);
    repo.git(&["checkout", "-q", "main"]);
    let m2 = repo.commit(&[("suite.sh", "v3")], "main 2");
    let m7 = m.to_hex_with_len(7).to_string();
    let base = |commit, trusted, label: &str| {
        crate::parity::baseline_commit(&store, commit, trusted, label).unwrap()
    };
    // main moved on: the merge base, even when the label spells its short id
    assert_eq!(
        base(t, m2, "main"),
        Some((m, format!("{m7} (merge base with main)")))
    );
    let by_id = format!("{m7} (trust root)");
    assert_eq!(
        base(t, m2, &by_id),
        Some((m, format!("{m7} (merge base with {by_id})")))
    );
    // the trusted revision itself: its label, with the short id unless it says it
    assert_eq!(base(t, m, "main"), Some((m, format!("{m7} (main)"))));
    assert_eq!(base(t, m, &by_id), Some((m, by_id.clone())));
    // a commit on the trusted history: its first parent; a root commit has none
    assert_eq!(
        base(m2, m2, "main"),
        Some((
            m,
            format!(
                "{m7} (the parent of {}, which is on main)",
                m2.to_hex_with_len(7)
            )
        ))
    );
    assert_eq!(base(m, m2, "main"), None);
}

#[test]
fn the_baseline_is_the_differential_checks_own_among_the_checks_there() {
    let text = format!("[check \"lint\"]\n\trun = true\n{DIFFERENTIAL}");
    let (_repo, store, k, (m, t)) = on_topic(&text);
    record_tests(&store, &k, m, 1, tests_of(&[("a", false)]));
    record_tests(&store, &k, t, 1, tests_of(&[("a", false)]));
    let j = judged_at(&store, t, &k, &at(m), EXPIRES_MS);
    assert_eq!(suite(&j).state, State::Present, "{:?}", j.undecided);
}

// ---------------------------------------------------------------------------------
// Flaky tests
// ---------------------------------------------------------------------------------

#[test]
fn a_test_the_trusted_receipts_of_the_same_inputs_disagree_on_is_flaky() {
    use TestStatus::{Failed as F, Passed as P, Skipped as S};
    let repo = Repo::new();
    let text = format!(
        "{CHECK}[check \"other\"]\n\trun = sh other.sh\n\tresults = tap:-\n[check \"plain\"]\n\trun = true\n"
    );
    let c = repo.commit(&[(".gitreceipts", &text), ("suite.sh", "x")], "one");
    let store = repo.store();
    let (k, stranger) = (key(1), key(9));
    let mine = writer_id(k.public(), "default");
    // a receipt of `check` in chain `writer` signed by `by`, with results `l`
    // (none for `plain`, which declares no `results`)
    let rec = |writer: &str, by: &SigningKey, check: &str, l: &[(&str, TestStatus)]| {
        let tests = Ok(l.iter().map(|(n, s)| case(n, *s)).collect());
        record_in(&store, (writer, by), c, (check, 1, tests), &[], &[])
    };
    let ids: Vec<String> = [
        // `dup` listed both ways says nothing of it
        &[("a", F), ("b", P), ("dup", P), ("dup", F), ("s", S)][..],
        &[("a", P), ("b", P), ("dup", F)],
        &[("a", P), ("b", P), ("s", S)],
    ]
    .into_iter()
    .map(|run| rec(&mine, &k, "suite", run))
    .collect();
    rec(&mine, &k, "other", &[("x", P)]);
    rec(&mine, &k, "other", &[("x", F)]);
    rec(&mine, &k, "plain", &[]);
    // in chains of the trusted key's, signed by another: untrusted; one without
    // per-test results is not even counted
    let forged = writer_id(k.public(), "forged");
    rec(&forged, &stranger, "suite", &[("b", F)]);
    rec(&writer_id(k.public(), "unsigned"), &stranger, "plain", &[]);
    // the stranger's own chain is not read at all
    rec(
        &writer_id(stranger.public(), "default"),
        &stranger,
        "suite",
        &[("b", F)],
    );
    // the forged chain again under a trusted key's name: not that chain's
    let alias = writer_id(k.public(), "alias");
    let tip = repo.git(&["rev-parse", &format!("refs/receipts/{forged}")]);
    repo.git(&["update-ref", &format!("refs/receipts/{alias}"), &tip]);
    let store = repo.store();
    let trust = trusting(&[&k]);
    let survey = super::flaky::find(&store, &trust.set, None).unwrap();
    let found = |s: &super::flaky::Survey| -> Vec<(String, String, usize, usize)> {
        s.flaky
            .iter()
            .map(|f| (f.check.clone(), f.test.clone(), f.passed, f.failed))
            .collect()
    };
    let flaky = |check: &str, test: &str, passed, failed| {
        (check.to_owned(), test.to_owned(), passed, failed)
    };
    assert_eq!(
        found(&survey),
        [flaky("other", "x", 1, 1), flaky("suite", "a", 2, 1)]
    );
    assert_eq!((survey.compared, survey.untrusted), (5, 2));
    assert!(survey.unreadable.is_empty(), "{:?}", survey.unreadable);
    let a = &survey.flaky[1];
    assert_eq!(a.failed_in, [ids[0].clone()]);
    let mut passed_in = a.passed_in.clone();
    passed_in.sort();
    let mut want = ids[1..].to_vec();
    want.sort();
    assert_eq!(passed_in, want);
    // one check's: the other's receipts are neither compared nor flaky
    let survey = super::flaky::find(&store, &trust.set, Some("suite")).unwrap();
    assert_eq!(found(&survey), [flaky("suite", "a", 2, 1)]);
    assert_eq!((survey.compared, survey.untrusted), (3, 2));
}
