//! An acceptance counts only where it was made, and only for what it decided
//! (issue 24, cases 4 and 5): its `trusted` commit must be on this repository's
//! gated history (the first-parent history of the default branch), and its
//! criteria must cover everything required there. A plain `gate --record` holds
//! the revision to its trust root's rules, since the acceptance names them.
//!
//! Served over a real `git daemon`: the basic fixture (`test` required, inputs
//! `src`; `docs` not required) with the CI environment's key as `[signer "ci"]`.

use std::path::Path;

use super::acceptance::clone;
use crate::common::{Daemon, Env, Run};

/// A served repository whose `main` trusts `ci`'s key as `[signer "ci"]`: its URL.
fn served_with_ci(ci: &Env, daemon: &Daemon, name: &str) -> String {
    super::acceptance::served_with_ci(ci, daemon, name).1
}

/// The newest entry of the only chain in `dir`, as JSON.
fn newest_receipt(env: &Env, dir: &Path) -> serde_json::Value {
    let writer = env.only_writer(dir);
    let tip = env.git_ok(dir, &["rev-parse", &format!("refs/receipts/{writer}")]);
    serde_json::from_slice(&env.receipt_bytes(dir, &tip)).expect("a JSON receipt")
}

fn verify_json(env: &Env, dir: &Path) -> (Run, serde_json::Value) {
    let r = env.receipt(dir, &["verify", "--json"]);
    let v = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r}"));
    (r, v)
}

/// Case 4. CI (one key for several repositories) gates a revision in Mallory's
/// mirror, whose `main` no longer requires `test`; the acceptance chains onto
/// CI's real chain and Mallory copies it to the original, with the accepted
/// revision as a tag. The original's release gate must not take it, and
/// `verify` must say why.
#[test]
fn an_acceptance_made_by_a_forks_rules_does_not_count_in_the_original() {
    let ci = Env::new();
    let mallory = Env::new();
    let release = Env::new();
    let daemon = Daemon::start(&ci);
    let origin = served_with_ci(&ci, &daemon, "origin.git");

    // CI's real chain starts in the original
    let c = clone(&ci, &origin, "ci");
    ci.receipt_ok(&c, &["run", "test"]);
    ci.receipt_ok(&c, &["gate", "HEAD", "--record"]);
    ci.receipt_ok(&c, &["push"]);

    // Mallory's mirror, with CI's chain; her main drops `required = true`, and
    // the revision she wants released changes src without any test receipt
    let (mirror_dir, mirror) = daemon.bare(&mallory, "mirror.git");
    std::fs::remove_dir_all(&mirror_dir).unwrap();
    mallory.git_ok(
        &daemon.root,
        &[
            "clone",
            "-q",
            "--mirror",
            &origin,
            mirror_dir.to_str().unwrap(),
        ],
    );
    let m = clone(&mallory, &mirror, "mallory");
    mallory.git_ok(
        &m,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "check.test.required",
            "false",
        ],
    );
    mallory.git_ok(&m, &["commit", "-qam", "ci: test is optional"]);
    let forked_main = mallory.git_ok(&m, &["rev-parse", "HEAD"]);
    mallory.git_ok(&m, &["push", "-q", "--no-verify", "origin", "main"]);
    std::fs::write(m.join("src/lib.rs"), "pub fn backdoor() {}\n").unwrap();
    mallory.git_ok(&m, &["commit", "-qam", "release 1.0"]);
    mallory.git_ok(&m, &["tag", "v1.0"]);
    mallory.git_ok(&m, &["push", "-q", "--no-verify", "origin", "v1.0"]);

    // CI, asked to gate v1.0 in the mirror against the mirror's main
    let cm = clone(&ci, &mirror, "ci-in-mirror");
    ci.receipt_ok(&cm, &["fetch"]);
    let r = ci.receipt(
        &cm,
        &[
            "gate",
            "v1.0",
            "--verify",
            "--trust",
            "origin/main",
            "--record",
        ],
    );
    assert_eq!(r.code, 0, "by the mirror's rules nothing is required: {r}");
    assert!(r.stderr.contains("(accepted)"), "{r}");
    let a = newest_receipt(&ci, &cm);
    assert_eq!(a["receipt"]["acceptance"]["trusted"], forked_main.as_str());
    ci.receipt_ok(&cm, &["push"]);

    // Mallory copies CI's chain (a fast-forward of the real one) and the tag
    mallory.git_ok(
        &m,
        &["fetch", "-q", "origin", "refs/receipts/*:refs/receipts/*"],
    );
    let writer = mallory
        .git_ok(
            &m,
            &["for-each-ref", "--format=%(refname)", "refs/receipts/"],
        )
        .lines()
        .find(|l| !l.contains("/log/") && !l.contains("/index"))
        .unwrap()
        .to_owned();
    for refspec in [
        format!("{writer}:{writer}"),
        "v1.0:refs/tags/v1.0".to_owned(),
    ] {
        mallory.git_ok(&m, &["push", "-q", "--no-verify", &origin, &refspec]);
    }

    // the original's release gate: v1.0 is not accepted, and says why
    let rel = clone(&release, &origin, "release");
    release.receipt_ok(&rel, &["fetch"]);
    let r = release.receipt(&rel, &["gate", "v1.0", "--accepted-by", "ci"]);
    assert_eq!(r.code, 1, "a fork's acceptance does not count here: {r}");
    // (the forked main is here, as the tag's parent, but was never gated)
    assert!(
        r.stdout.contains("does not count here")
            && r.stdout.contains(&format!(
                "the rules of commit {}, which is not on the first-parent history of",
                &forked_main[..7]
            )),
        "{r}"
    );
    // judged by the original's own rules, v1.0 lacks its required test
    let r = release.receipt(&rel, &["gate", "v1.0", "--verify"]);
    assert_eq!(r.code, 1, "{r}");
    // verify names the acceptance that does not count here
    let (r, v) = verify_json(&release, &rel);
    assert_eq!(r.code, 1, "{r}");
    let findings = v["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|f| f["kind"] == "acceptance"
            && f["reason"]
                .as_str()
                .unwrap()
                .contains("does not count here: it applies the rules of commit")),
        "{findings:?}"
    );
    assert_eq!(
        findings.len(),
        1,
        "the other receipts are genuine: {findings:?}"
    );

    // the honest control: CI's acceptance made in the original still counts
    let r = release.receipt(&rel, &["gate", "origin/main", "--accepted-by", "ci"]);
    assert_eq!(r.code, 0, "{r}");
}

/// Case 5, plain `gate --record` on a branch that dropped `required = true`:
/// the acceptance names the trust root, so the trust root's required `test` is
/// applied and the acceptance is rejected (it used to say accepted, trusted:
/// main, though main's rule was never applied).
#[test]
fn a_plain_recorded_gate_applies_the_rules_of_the_commit_it_names() {
    let ci = Env::new();
    let daemon = Daemon::start(&ci);
    let origin = served_with_ci(&ci, &daemon, "plain.git");
    let c = clone(&ci, &origin, "ci");
    let main = ci.git_ok(&c, &["rev-parse", "origin/main"]);
    ci.git_ok(&c, &["switch", "-q", "-c", "feature"]);
    ci.git_ok(
        &c,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "check.test.required",
            "false",
        ],
    );
    std::fs::write(c.join("src/lib.rs"), "pub fn untested() {}\n").unwrap();
    ci.git_ok(&c, &["commit", "-qam", "feature without test"]);

    // a plain gate judges by the branch's own rules: nothing required
    let r = ci.receipt(&c, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");
    // a recorded one applies main's too, as its `trusted` says
    let r = ci.receipt(&c, &["gate", "HEAD", "--record"]);
    assert_eq!(r.code, 1, "main requires test: {r}");
    assert!(r.stderr.contains("(rejected)"), "{r}");
    let a = &newest_receipt(&ci, &c)["receipt"]["acceptance"];
    assert_eq!(a["trusted"], main.as_str());
    assert_eq!(a["status"], "rejected");
    assert_eq!(a["unresolved"][0]["name"], "test");
    let r = ci.receipt(&c, &["gate", "HEAD", "--accepted-by", "ci"]);
    assert_eq!(r.code, 1, "{r}");

    // the honest control: with test run, the recorded gate accepts, and counts
    ci.receipt_ok(&c, &["run", "test"]);
    let r = ci.receipt(&c, &["gate", "HEAD", "--record"]);
    assert_eq!(r.code, 0, "{r}");
    let r = ci.receipt(&c, &["gate", "HEAD", "--accepted-by", "ci"]);
    assert_eq!(r.code, 0, "{r}");
}

/// Case 5, `--require`: an acceptance of just `docs` while the trusted revision
/// requires `test` is partial. It is recorded (it is a genuine decision), says
/// so, never satisfies `--accepted-by`, and `verify` reports it without calling
/// it a forgery.
#[test]
fn an_acceptance_made_with_require_is_partial_and_never_satisfies_accepted_by() {
    let ci = Env::new();
    let daemon = Daemon::start(&ci);
    let origin = served_with_ci(&ci, &daemon, "partial.git");
    let c = clone(&ci, &origin, "ci");
    ci.receipt_ok(&c, &["run", "docs"]);
    let r = ci.receipt(
        &c,
        &[
            "gate",
            "HEAD",
            "--trust",
            "origin/main",
            "--require",
            "docs",
            "--record",
        ],
    );
    assert_eq!(r.code, 0, "docs is present: {r}");
    assert!(
        r.stderr
            .contains("will not satisfy `gate --accepted-by` here")
            && r.stderr.contains("check test required at"),
        "says at once that it is partial: {r}"
    );
    let a = &newest_receipt(&ci, &c)["receipt"]["acceptance"];
    assert_eq!(a["status"], "accepted");
    assert_eq!(a["criteria"].as_array().unwrap().len(), 1);
    let r = ci.receipt(&c, &["gate", "HEAD", "--accepted-by", "ci"]);
    assert_eq!(
        r.code, 1,
        "a partial acceptance does not satisfy --accepted-by: {r}"
    );
    assert!(
        r.stdout.contains("it is partial: check test required at"),
        "{r}"
    );
    let (r, v) = verify_json(&ci, &c);
    assert_eq!(r.code, 0, "a partial acceptance is genuine: {r}");
    let notices = v["notices"].as_array().unwrap();
    assert!(
        notices.iter().any(|n| n["code"] == "acceptance-partial"
            && n["message"]
                .as_str()
                .unwrap()
                .contains("check test required at")),
        "verify reports it: {v}"
    );
    let r = ci.receipt(&c, &["verify"]);
    assert!(
        r.stderr.contains("does not satisfy `gate --accepted-by`"),
        "{r}"
    );

    // the honest control: a full acceptance of the same revision counts
    ci.receipt_ok(&c, &["run", "test"]);
    ci.receipt_ok(&c, &["gate", "HEAD", "--trust", "origin/main", "--record"]);
    let r = ci.receipt(&c, &["gate", "HEAD", "--accepted-by", "ci"]);
    assert_eq!(r.code, 0, "{r}");
}
