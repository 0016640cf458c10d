//! Flaky tests and quarantines (issue 28): the real binary runs a real TAP
//! producer (`make_flaky_repo.sh`) whose `sometimes` test flips between runs on
//! the same inputs, and whose `known broken` test is quarantined on main.

use crate::common::Env;

const NOW: &str = "GIT_RECEIPT_TEST_NOW";
/// Before the fixture's quarantine expires (2027-01-31), and after.
const BEFORE: &str = "2026-12-01T00:00:00Z";
const AFTER: &str = "2027-01-31T00:00:00Z";

fn suite_state(env: &Env, dir: &std::path::Path, when: &str) -> serde_json::Value {
    let r = env.receipt_with(dir, &["status", "--json"], &[(NOW, when)]);
    let all: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("status --json is JSON ({e}): {r}"));
    let checks = all["checks"].as_array().unwrap_or_else(|| panic!("{all}"));
    checks
        .iter()
        .find(|c| c["name"] == "suite")
        .unwrap_or_else(|| panic!("no suite row: {all}"))
        .clone()
}

#[test]
fn a_quarantined_failure_passes_the_gate_until_it_expires_and_never_by_a_branchs_own_entry() {
    let env = Env::new();
    let dir = env.fixture_repo("make_flaky_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);

    // run 1: `sometimes` and `known broken` fail; only one is quarantined
    let r = env.receipt_with(&dir, &["run", "suite"], &[(NOW, BEFORE)]);
    assert_eq!(r.code, 1, "the check's own exit code stands: {r}");
    let g = env.receipt_with(&dir, &["gate"], &[(NOW, BEFORE)]);
    assert_eq!(g.code, 1, "a failure outside the quarantine blocks: {g}");
    let s = suite_state(&env, &dir, BEFORE);
    assert_eq!(s["state"], "failed", "{s}");
    let said = s.to_string();
    assert!(said.contains("quarantined but not enough to pass"), "{s}");
    assert!(said.contains("also failed: sometimes"), "{s}");

    // run 2: only `known broken` fails: the gate passes, and says why
    let r = env.receipt_with(&dir, &["run", "suite"], &[(NOW, BEFORE)]);
    assert_eq!(r.code, 1, "{r}");
    let g = env.receipt_with(&dir, &["gate"], &[(NOW, BEFORE)]);
    assert_eq!(g.code, 0, "only a quarantined test failed: {g}");
    let s = suite_state(&env, &dir, BEFORE);
    assert_eq!(s["state"], "present", "{s}");
    assert!(
        s["reason"]
            .as_str()
            .unwrap()
            .contains("failed only quarantined tests (known broken (known-broken, owner ada@example.org, expires 2027-01-31))"),
        "{s}"
    );
    let text = env.receipt_with(&dir, &["status"], &[(NOW, BEFORE)]).stdout;
    assert!(text.contains("quarantined"), "{text}");

    // a signed acceptance that relied on the quarantine verifies
    let rec = env.receipt_with(&dir, &["gate", "--record"], &[(NOW, BEFORE)]);
    assert_eq!(rec.code, 0, "{rec}");
    let v = env.receipt(&dir, &["verify"]);
    assert_eq!(v.code, 0, "verify accepts the acceptance: {v}");

    // at the expiry, the same receipt blocks again
    let g = env.receipt_with(&dir, &["gate"], &[(NOW, AFTER)]);
    assert_eq!(g.code, 1, "an expired quarantine blocks: {g}");
    let s = suite_state(&env, &dir, AFTER);
    assert_eq!(s["state"], "failed", "{s}");
    assert!(
        s.to_string()
            .contains("quarantine expired for known broken"),
        "{s}"
    );

    // run 3 fails `sometimes` again; a branch quarantines it in its own file
    env.receipt_with(&dir, &["run", "suite"], &[(NOW, BEFORE)]);
    env.git_ok(&dir, &["checkout", "-q", "-b", "excuse"]);
    let mut text = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    text.push_str(
        "[quarantine \"mine\"]\n\tcheck = suite\n\ttest = sometimes\n\towner = me\n\texpires = 2999-01-01\n",
    );
    std::fs::write(dir.join(".gitreceipts"), text).unwrap();
    env.git_ok(&dir, &["commit", "-qam", "quarantine my failure"]);
    let own = env.receipt_with(&dir, &["gate"], &[(NOW, BEFORE)]);
    assert_eq!(
        own.code, 0,
        "its own file excuses it where only its own rules apply: {own}"
    );
    let trusted = env.receipt_with(&dir, &["gate", "HEAD", "--trust", "main"], &[(NOW, BEFORE)]);
    assert_eq!(
        trusted.code, 1,
        "judged by main's rules, the branch's entry counts for nothing: {trusted}"
    );
}

#[test]
fn flaky_lists_a_test_two_receipts_of_the_same_inputs_disagree_on() {
    let env = Env::new();
    let dir = env.fixture_repo("make_flaky_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    let none = env.receipt_ok(&dir, &["flaky"]);
    assert!(
        none.stdout
            .contains("no flaky test among 0 trusted receipts"),
        "{none}"
    );
    env.receipt(&dir, &["run", "suite"]);
    let one = env.receipt_ok(&dir, &["flaky"]);
    assert!(
        one.stdout.contains("no flaky test among 1 trusted receipt"),
        "{one}"
    );
    env.receipt(&dir, &["run", "suite"]);
    let ids: Vec<String> = env
        .log_json(&dir)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    let r = env.receipt_ok(&dir, &["flaky", "--json"]);
    let out: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let flaky = out["flaky"].as_array().unwrap();
    assert_eq!(flaky.len(), 1, "only `sometimes` flips: {out}");
    let f = &flaky[0];
    assert_eq!(f["check"], "suite");
    assert_eq!(f["test"], "sometimes");
    assert_eq!((&f["passed"], &f["failed"]), (&1.into(), &1.into()), "{f}");
    // the evidence is the two receipts: the first failed it, the second passed it
    let (newest, oldest) = (&ids[0], &ids[1]);
    assert_eq!(f["failed_in"][0].as_str(), Some(oldest.as_str()), "{f}");
    assert_eq!(f["passed_in"][0].as_str(), Some(newest.as_str()), "{f}");
    assert_eq!(out["compared"], 2);
    assert_eq!(f["quarantine"], serde_json::Value::Null);
    let text = env.receipt_ok(&dir, &["flaky", "suite"]).stdout;
    assert!(
        text.starts_with("suite  sometimes  passed 1, failed 1 on inputs "),
        "{text}"
    );
    assert!(text.contains("not quarantined"), "{text}");
    // another check's name finds nothing
    let other = env.receipt_ok(&dir, &["flaky", "nope"]);
    assert!(other.stdout.contains("no flaky test among 0"), "{other}");
}
