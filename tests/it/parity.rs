//! Differential checks (`parity = differential`, issue 28): the real binary runs a
//! real TAP producer (`make_parity_repo.sh`) on main and on branches, and a
//! branch's failure blocks only when it fails a test that main did not.

use std::path::Path;

use crate::common::Env;

/// Write `file` (for `cases`: one `NAME ok|fail` a line) and commit it on a new
/// branch `name` from `from`.
fn branch(env: &Env, dir: &Path, name: &str, from: &str, file: &str, text: &str) {
    env.git_ok(dir, &["checkout", "-q", "-b", name, from]);
    std::fs::write(dir.join(file), text).unwrap();
    env.git_ok(dir, &["commit", "-qam", name]);
}

fn row(env: &Env, dir: &Path, check: &str) -> serde_json::Value {
    let s = env.status_of(dir, None, check);
    assert!(s.is_object(), "{s}");
    s
}

#[test]
fn a_branch_fails_only_on_failures_main_did_not_have_and_without_a_baseline_cannot_be_decided() {
    let env = Env::new();
    let dir = env.fixture_repo("make_parity_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    let main = env.git_ok(&dir, &["rev-parse", "--short=7", "main"]);
    // the baseline: main fails `legacy`
    assert_eq!(env.receipt(&dir, &["run", "suite"]).code, 1);

    // the same failure on a branch: present, and the reason says why
    branch(
        &env,
        &dir,
        "same",
        "main",
        "cases",
        "adds ok\nlegacy fail\nnew-test ok\n",
    );
    assert_eq!(env.receipt(&dir, &["run", "suite"]).code, 1);
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 0, "main fails legacy too: {g}");
    let s = row(&env, &dir, "suite");
    assert_eq!(s["state"], "present", "{s}");
    assert!(
        s["reason"].as_str().unwrap().ends_with(&format!(
            "but differential: 0 fixed, 0 new failures vs {main} (1 failing there too)"
        )),
        "{s}"
    );
    // a signed acceptance of it verifies
    assert_eq!(env.receipt(&dir, &["gate", "--record"]).code, 0);
    let v = env.receipt(&dir, &["verify"]);
    assert_eq!(
        v.code, 0,
        "verify weighs the acceptance's claim the same way: {v}"
    );

    // a new failure (and a fix): failed, naming it
    branch(
        &env,
        &dir,
        "breaks",
        "main",
        "cases",
        "adds fail\nlegacy ok\n",
    );
    assert_eq!(env.receipt(&dir, &["run", "suite"]).code, 1);
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 1, "{g}");
    assert!(
        g.stdout.contains(&format!(
            "differential: 1 fixed, 1 new failure vs {main}: adds"
        )),
        "{g}"
    );

    // main moves on without a receipt; a branch from there has no baseline
    env.git_ok(&dir, &["checkout", "-q", "main"]);
    std::fs::write(dir.join("cases"), "adds ok\nlegacy fail\nmore ok\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "main moves"]);
    let main2 = env.git_ok(&dir, &["rev-parse", "--short=7", "main"]);
    branch(
        &env,
        &dir,
        "nobase",
        "main",
        "cases",
        "adds ok\nlegacy fail\nmore ok\nmine ok\n",
    );
    assert_eq!(env.receipt(&dir, &["run", "suite"]).code, 1);
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 2, "no baseline: cannot decide: {g}");
    assert!(
        g.stderr.contains(&format!(
            "cannot decide check \"suite\": it is `parity = differential`, and the baseline {main2} (the trust root on the default branch's first-parent history) has no trusted receipt of its inputs there (stale)"
        )),
        "{g}"
    );
    let hint = format!("git receipt run suite {main2}^..{main2}");
    assert!(g.stderr.contains(&hint), "the hint names the fix: {g}");
    // which is what it says: the baseline's receipt, the work tree untouched
    let r = env.receipt(&dir, &["run", "suite", &format!("{main2}^..{main2}")]);
    assert_eq!(r.code, 1, "main2 fails legacy: {r}");
    assert_eq!(
        env.git_ok(&dir, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "nobase"
    );
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 0, "weighed now: {g}");
}

#[test]
fn a_metric_that_regressed_past_its_bound_fails_a_passing_run_and_verify_agrees() {
    let env = Env::new();
    let dir = env.fixture_repo("make_metrics_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    let main = env.git_ok(&dir, &["rev-parse", "--short=7", "main"]);
    env.receipt_ok(&dir, &["run", "bench"]);
    let shown = env.receipt_ok(&dir, &["show"]).stdout;
    assert!(
        shown.contains("  metric   ops = 200 ops/s (higher is better)"),
        "{shown}"
    );
    assert!(
        shown.contains("  metric   p99 = 10.0 ms (lower is better)"),
        "{shown}"
    );

    // within 5%: present, the comparison said
    branch(&env, &dir, "within", "main", "numbers", "10.4 195\n");
    env.receipt_ok(&dir, &["run", "bench"]);
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 0, "{g}");
    let s = row(&env, &dir, "bench");
    assert!(
        s["reason"].as_str().unwrap().contains(&format!(
            "differential: ops 200 -> 195 ops/s vs {main} (2.5% worse; within max-regression 5%); p99 10.0 -> 10.4 ms vs {main} (4% worse; within max-regression 5%)"
        )),
        "{s}"
    );

    // past it: the run passed, the check fails, and verify accepts the signed
    // acceptance that says so
    branch(&env, &dir, "slower", "main", "numbers", "11.0 200\n");
    let r = env.receipt(&dir, &["run", "bench"]);
    assert_eq!(r.code, 0, "the run itself passes: {r}");
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 1, "{g}");
    assert!(
        g.stdout.contains(&format!(
            "p99 10.0 -> 11.0 ms vs {main} (10% worse; past max-regression 5%)"
        )),
        "{g}"
    );
    let rec = env.receipt(&dir, &["gate", "--record"]);
    assert_eq!(rec.code, 1, "recorded, and not accepted: {rec}");
    let v = env.receipt(&dir, &["verify"]);
    assert_eq!(
        v.code, 0,
        "a failed claim citing a passed run that regressed stands: {v}"
    );
}

#[test]
fn an_accepted_regression_counts_for_exactly_its_inputs_and_names_only_by_a_trusted_key() {
    let env = Env::new();
    let dir = env.fixture_repo("make_parity_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    let main = env.git_ok(&dir, &["rev-parse", "--short=7", "main"]);
    assert_eq!(
        env.receipt(&dir, &["run", "suite"]).code,
        1,
        "main fails legacy"
    );
    branch(
        &env,
        &dir,
        "breaks",
        "main",
        "cases",
        "adds fail\nlegacy ok\n",
    );
    assert_eq!(env.receipt(&dir, &["run", "suite"]).code, 1);
    assert_eq!(
        env.receipt(&dir, &["gate"]).code,
        1,
        "adds is a new failure"
    );

    // bad requests say what to do, and write nothing
    let chain_len = || env.log_json(&dir).len();
    let before = chain_len();
    for (args, says) in [
        (
            vec!["suite", "-m", "why"],
            "name what is accepted: a --test or a --metric",
        ),
        (
            vec!["suite", "--test", "adds"],
            "an accepted regression says why",
        ),
        (
            vec!["nope", "--test", "adds", "-m", "why"],
            "no check nope is declared in .gitreceipts at HEAD",
        ),
        (
            vec!["suite", "--metric", "p99", "-m", "why"],
            "check suite declares no metric p99",
        ),
        (
            vec!["suite", "--metric", "not a name", "-m", "why"],
            "is not a metric name",
        ),
    ] {
        let r = env.receipt(&dir, &[&["accept-regression"], args.as_slice()].concat());
        assert_eq!(r.code, 2, "an error, not a verdict: {args:?}: {r}");
        assert!(r.stderr.contains(says), "{args:?}: {r}");
        assert!(r.stderr.contains("\nhint: "), "{r}");
    }
    assert_eq!(chain_len(), before, "nothing written");

    // accepting a test that is no new failure changes nothing
    env.receipt_ok(
        &dir,
        &[
            "accept-regression",
            "suite",
            "--test",
            "legacy",
            "-m",
            "fixed anyway",
        ],
    );
    assert_eq!(env.receipt(&dir, &["gate"]).code, 1);

    // accepting the new failure: present, and the reason says by whom
    let a = env.receipt_ok(
        &dir,
        &[
            "accept-regression",
            "suite",
            "--test",
            "adds",
            "-m",
            "adds is retired in #12",
        ],
    );
    assert!(a.stdout.starts_with("accepted for check suite at "), "{a}");
    assert!(a.stdout.trim_end().ends_with(": test adds"), "{a}");
    // by the key that ran the regression, it counts for nothing unless the
    // rules say self-accept = true, and the gate says why
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 1, "{g}");
    assert_eq!(
        g.stderr
            .matches("counts for nothing: its signer also signed the receipt that regressed")
            .count(),
        1,
        "said once, of the acceptance that names the new failure: {g}"
    );
    assert!(
        g.stderr
            .contains("or the check must say self-accept = true"),
        "{g}"
    );
    // stored as a v4 review the schema describes, of exactly these inputs
    let writer = env.only_writer(&dir);
    let tip = env.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]);
    let stored: serde_json::Value = serde_json::from_slice(&env.receipt_bytes(&dir, &tip)).unwrap();
    let r = &stored["receipt"];
    assert_eq!(
        (&r["schema"], &r["kind"]),
        (&"git-receipt/v4".into(), &"review".into())
    );
    assert_eq!(r["review"]["accepts"]["tests"], serde_json::json!(["adds"]));
    assert_eq!(r["review"]["accepts"]["metrics"], serde_json::json!([]));
    assert_eq!(
        r["review"]["paths"],
        serde_json::json!(["cases", "suite.sh"])
    );
    let inputs = env.git_input(
        &dir,
        &["mktree"],
        format!(
            "100644 blob {}\tcases\n100644 blob {}\tsuite.sh\n",
            env.git_ok(&dir, &["rev-parse", "HEAD:cases"]),
            env.git_ok(&dir, &["rev-parse", "HEAD:suite.sh"])
        )
        .as_bytes(),
    );
    assert_eq!(r["subject"]["inputs"], inputs.as_str());
    crate::common::receipt_schema::assert_schema_accepts(&stored);
    // and the schema refuses it with a reject verdict, or as v3
    let mut bad = stored.clone();
    bad["receipt"]["review"]["verdict"] = "reject".into();
    let mut v3 = stored.clone();
    v3["receipt"]["schema"] = "git-receipt/v3".into();
    let schema = crate::common::receipt_schema::validator();
    for refused in [bad, v3] {
        assert!(!schema.is_valid(&refused), "{refused}");
    }
    // a reviewer's key, trusted here, accepts it: that counts
    let reviewer = env.ssh_keygen("reviewer-key");
    let reviewer_pub = std::fs::read_to_string(env.path("reviewer-key.pub")).unwrap();
    env.git_ok(
        &dir,
        &["config", "--add", "receipt.trustedKey", reviewer_pub.trim()],
    );
    let as_reviewer = |args: &[&str]| {
        let r = env.receipt_with(
            &dir,
            args,
            &[("GIT_RECEIPT_SIGNING_KEY", reviewer.to_str().unwrap())],
        );
        assert_eq!(r.code, 0, "{r}");
    };
    let accept_adds = [
        "accept-regression",
        "suite",
        "--test",
        "adds",
        "-m",
        "adds is retired in #12",
    ];
    as_reviewer(&accept_adds);
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 0, "{g}");
    let s = row(&env, &dir, "suite");
    assert_eq!(s["state"], "present", "{s}");
    let reason = s["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("1 fixed, 1 new failure vs {main}: adds"))
            && reason.contains("accepted: adds (by "),
        "{s}"
    );
    let shown = env.receipt_ok(&dir, &["show"]).stdout;
    assert!(
        shown.contains("decision accepted regression of check suite"),
        "{shown}"
    );
    assert!(shown.contains("  accepts  test adds\n"), "{shown}");
    assert!(
        shown.contains("  message  adds is retired in #12\n"),
        "{shown}"
    );
    // a signed acceptance resting on it verifies; so does the chain
    assert_eq!(env.receipt(&dir, &["gate", "--record"]).code, 0);
    let v = env.receipt(&dir, &["verify"]);
    assert_eq!(v.code, 0, "{v}");

    // the inputs change (adds still failing): the acceptance no longer counts
    std::fs::write(dir.join("cases"), "adds fail\nlegacy ok\nextra ok\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "more"]);
    assert_eq!(env.receipt(&dir, &["run", "suite"]).code, 1);
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 1, "stale for new inputs: {g}");
    assert!(!g.stdout.contains("accepted:"), "{g}");

    // another key's acceptance of these inputs is not trusted here
    let other = env.ssh_keygen("other-key");
    let r = env.receipt_with(
        &dir,
        &["accept-regression", "suite", "--test", "adds", "-m", "mine"],
        &[("GIT_RECEIPT_SIGNING_KEY", other.to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        env.receipt(&dir, &["gate"]).code,
        1,
        "an untrusted key accepts nothing"
    );
    // the trusted reviewer's does
    as_reviewer(&accept_adds);
    assert_eq!(env.receipt(&dir, &["gate"]).code, 0);
    // and a definition change makes it another check
    let contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    std::fs::write(
        dir.join(".gitreceipts"),
        contract.replace("run = sh suite.sh", "run = sh ./suite.sh"),
    )
    .unwrap();
    env.git_ok(&dir, &["commit", "-qam", "redefine"]);
    assert_eq!(env.receipt(&dir, &["run", "suite"]).code, 1);
    let g = env.receipt(&dir, &["gate"]);
    assert_ne!(g.code, 0, "{g}");
    assert!(!g.stdout.contains("accepted:"), "{g}");
}
