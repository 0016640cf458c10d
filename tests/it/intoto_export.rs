//! `git receipt export --in-toto`, checked by the in-toto project's own Python
//! code (in-toto, securesystemslib, in-toto-attestation from PyPI): the DSSE
//! signature verifies with the exporter's public key, the Statement and its
//! test-result predicate parse strictly and validate, and one flipped payload byte
//! makes verification fail there. Which receipts are exported (trusted ones only)
//! needs no Python.

use std::path::Path;
use std::process::Command;

use crate::common::{self, Env, Run, pytools};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

pub(crate) const PACKAGES: &[&str] = &["in-toto", "securesystemslib", "in-toto-attestation"];
pub(crate) const IMPORTS: &[&str] = &["in_toto", "securesystemslib", "in_toto_attestation"];

/// Run `verify_intoto.py` over `envelopes` with the public key in `key_file`.
pub(crate) fn verify(env: &Env, py: &pytools::Python, envelopes: &Path, key_file: &Path) -> Run {
    let mut cmd: Command = py.command();
    cmd.arg(common::fixture("verify_intoto.py"))
        .arg(envelopes)
        .arg(key_file);
    env.seal(&mut cmd);
    common::to_run(cmd.output().expect("run python"))
}

#[test]
fn in_toto_envelopes_verify_with_securesystemslib_and_a_flipped_payload_byte_does_not() {
    let Some(py) = pytools::need(PACKAGES, IMPORTS) else {
        return;
    };
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let failing = env.receipt(&repo, &["run", "flaky", "--", "sh", "-c", "exit 3"]);
    assert_eq!(failing.code, 3, "{failing}");
    let key_file = env.path("exporter.pub");
    std::fs::write(&key_file, env.receipt_ok(&repo, &["key", "show"]).stdout).unwrap();
    let fingerprint = env
        .receipt_ok(&repo, &["key", "show", "--fingerprint"])
        .stdout
        .trim()
        .to_owned();

    let out = env.path("head.intoto.jsonl");
    let r = env.receipt(&repo, &["export", "--in-toto", "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("exported 2 in-toto attestations"), "{r}");
    let lines = std::fs::read_to_string(&out).unwrap();
    assert_eq!(lines.lines().count(), 2, "one envelope per line: {lines}");

    let v = verify(&env, &py, &out, &key_file);
    assert_eq!(v.code, 0, "in-toto verifies every envelope: {v}");
    let summaries: Vec<Value> = v
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    let receipts = env.log_json(&repo);
    for s in &summaries {
        // keyid is OpenSSH's fingerprint, as Python computed it from the key line
        assert_eq!(s["keyids"], serde_json::json!([fingerprint]), "{s}");
        assert_eq!(s["fingerprint"], fingerprint.as_str());
        let id = format!(
            "sha256:{}",
            s["configuration"]["receipt"]["sha256"].as_str().unwrap()
        );
        let receipt = receipts
            .iter()
            .find(|r| r["id"] == id.as_str())
            .unwrap_or_else(|| panic!("{id} is a receipt here: {receipts:?}"));
        assert_eq!(s["subjects"]["commit"]["gitCommit"], head.as_str());
        assert_eq!(s["subjects"]["inputs"]["gitTree"], receipt["inputs"]);
        match receipt["check"].as_str().unwrap() {
            "test" => {
                assert_eq!(s["result"], "PASSED", "{s}");
                assert_eq!(s["passed"], serde_json::json!(["test"]));
            }
            "flaky" => {
                assert_eq!(s["result"], "FAILED", "{s}");
                assert_eq!(s["failed"], serde_json::json!(["flaky"]));
            }
            other => panic!("unexpected check {other}"),
        }
    }

    // stdout carries the same bytes: one receipt, one key, one line
    let again = env.receipt_ok(&repo, &["export", "--in-toto"]);
    assert_eq!(again.stdout, lines, "exports are reproducible");

    // one flipped byte of one payload, and the in-toto side refuses it
    let first = lines.lines().next().unwrap();
    let mut envelope: Value = serde_json::from_str(first).unwrap();
    let mut payload = STANDARD
        .decode(envelope["payload"].as_str().unwrap())
        .unwrap();
    let at = payload.len() / 2;
    payload[at] ^= 0x01;
    envelope["payload"] = STANDARD.encode(&payload).into();
    let tampered = env.path("tampered.intoto.jsonl");
    std::fs::write(&tampered, format!("{envelope}\n")).unwrap();
    let v = verify(&env, &py, &tampered, &key_file);
    assert_eq!(v.code, 1, "a flipped payload byte fails verification: {v}");
    assert!(v.stderr.contains("signature does not verify"), "{v}");

    // and so does another key than the exporter's
    let stranger = env.path("stranger");
    let r = env.receipt_with(
        &repo,
        &["key", "generate"],
        &[("GIT_RECEIPT_SIGNING_KEY", stranger.to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{r}");
    let v = verify(&env, &py, &out, &env.path("stranger.pub"));
    assert_eq!(v.code, 1, "another key does not verify: {v}");

    // a receipt of uncommitted changes attests its inputs tree, not the commit
    std::fs::write(repo.join("src/lib.rs"), "pub fn changed() {}\n").unwrap();
    env.receipt_ok(&repo, &["run", "test"]);
    let dirty = env
        .log_json(&repo)
        .into_iter()
        .find(|r| r["dirty"] == true)
        .expect("a dirty receipt");
    let out = env.path("dirty.intoto.jsonl");
    let id = dirty["id"].as_str().unwrap();
    env.receipt_ok(
        &repo,
        &["export", "--in-toto", id, "-o", out.to_str().unwrap()],
    );
    let v = verify(&env, &py, &out, &key_file);
    assert_eq!(v.code, 0, "{v}");
    let s: Value = serde_json::from_str(v.stdout.trim()).unwrap();
    assert_eq!(
        s["subjects"],
        serde_json::json!({"inputs": {"gitTree": dirty["inputs"]}}),
        "no gitCommit for a tree that was not the commit's: {s}"
    );
}

#[test]
fn export_leaves_out_receipts_of_untrusted_keys_and_says_which() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    // a second writer whose key nobody here trusts, on the same commit
    let stranger = env.path("stranger_key");
    let as_stranger = [("GIT_RECEIPT_SIGNING_KEY", stranger.to_str().unwrap())];
    for step in [&["key", "generate"][..], &["run", "docs"]] {
        let r = env.receipt_with(&repo, step, &as_stranger);
        assert_eq!(r.code, 0, "{r}");
    }
    let docs_id = env
        .log_json(&repo)
        .into_iter()
        .find(|r| r["check"] == "docs")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let r = env.receipt(&repo, &["export", "--in-toto", "HEAD", &docs_id]);
    assert_eq!(r.code, 1, "a receipt left out is a no: {r}");
    assert_eq!(r.stdout.lines().count(), 1, "only the trusted one: {r}");
    assert!(
        r.stderr
            .contains(&format!("not exporting receipt {docs_id}"))
            && r.stderr.contains("not a trusted key"),
        "says which and why: {r}"
    );
    assert!(
        r.stderr.contains("exported 1 in-toto attestation ") && r.stderr.contains("1 not exported"),
        "asked twice (HEAD and its id), refused once: {r}"
    );
    let envelope: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    let statement: Value = serde_json::from_slice(
        &STANDARD
            .decode(envelope["payload"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(statement["predicate"]["passedTests"][0], "test");

    // once trusted, it is exported too
    let stranger_pub = std::fs::read_to_string(env.path("stranger_key.pub")).unwrap();
    env.git_ok(
        &repo,
        &["config", "--add", "receipt.trustedKey", stranger_pub.trim()],
    );
    let r = env.receipt(&repo, &["export", "--in-toto"]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(r.stdout.lines().count(), 2, "{r}");
}

#[test]
fn export_of_a_revision_without_receipts_is_a_no_with_a_hint() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let r = env.receipt(&repo, &["export", "--in-toto", "HEAD~1"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.is_empty(), "{r}");
    assert!(r.stderr.contains("hint: `git receipt show HEAD~1`"), "{r}");
    let r = env.receipt(&repo, &["export"]);
    assert_eq!(r.code, 2, "a format is required: {r}");
    assert!(r.stderr.contains("--in-toto"), "{r}");
}

/// An acceptance receipt (`gate --record`) becomes a SLSA verification summary:
/// in-toto's own code verifies its envelope, the predicate parses strictly into
/// the VSA v1 protobuf, its evidence are the deciding receipts, and a rejected
/// decision says FAILED.
#[test]
fn an_acceptance_exports_as_a_verification_summary_that_in_toto_reads() {
    let Some(py) = pytools::need(PACKAGES, IMPORTS) else {
        return;
    };
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let key_file = env.path("exporter.pub");
    std::fs::write(&key_file, env.receipt_ok(&repo, &["key", "show"]).stdout).unwrap();
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    let tree = env.git_ok(&repo, &["rev-parse", "HEAD^{tree}"]);
    let accepted = env.receipt(&repo, &["gate", "HEAD", "--record"]);
    assert_eq!(accepted.code, 0, "{accepted}");
    // and a rejected one, one commit later with nothing receipted
    std::fs::write(repo.join("src/lib.rs"), "pub fn unreceipted() {}\n").unwrap();
    env.git_ok(&repo, &["commit", "-qam", "unreceipted"]);
    let rejected = env.receipt(&repo, &["gate", "HEAD", "--record"]);
    assert_eq!(rejected.code, 1, "{rejected}");

    let log = env.log_json(&repo);
    let test_id = log.iter().find(|r| r["check"] == "test").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let decisions: Vec<String> = log
        .iter()
        .filter(|r| r["kind"] == "acceptance")
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(decisions.len(), 2, "{log:?}");
    let out = env.path("vsa.intoto.jsonl");
    let mut args = vec!["export", "--in-toto", "-o", out.to_str().unwrap()];
    args.extend(decisions.iter().map(String::as_str));
    let r = env.receipt(&repo, &args);
    assert_eq!(r.code, 0, "{r}");
    let v = verify(&env, &py, &out, &key_file);
    assert_eq!(v.code, 0, "in-toto verifies the summaries: {v}");
    let summaries: Vec<Value> = v
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(summaries.len(), 2, "{v}");
    let passed = summaries
        .iter()
        .find(|s| s["result"] == "PASSED")
        .unwrap_or_else(|| panic!("an accepted decision: {v}"));
    assert_eq!(
        passed["predicateType"],
        "https://slsa.dev/verification_summary/v1"
    );
    assert_eq!(passed["subjects"]["commit"]["gitCommit"], head.as_str());
    assert_eq!(passed["subjects"]["tree"]["gitTree"], tree.as_str());
    assert_eq!(passed["policy"]["gitCommit"], head.as_str(), "{passed}");
    assert_eq!(
        passed["inputs"],
        serde_json::json!([test_id.strip_prefix("sha256:").unwrap()]),
        "the evidence is the test receipt: {passed}"
    );
    assert_eq!(passed["levels"], "");
    let failed = summaries
        .iter()
        .find(|s| s["result"] == "FAILED")
        .unwrap_or_else(|| panic!("a rejected decision: {v}"));
    assert_eq!(failed["levels"], "FAILED", "{failed}");
    assert_eq!(
        failed["subjects"]["commit"]["gitCommit"],
        env.git_ok(&repo, &["rev-parse", "HEAD"]).as_str()
    );
}

/// Issue 26 item 7: a review receipt about REV (which has no in-toto form) is
/// skipped with a notice, and does not turn the export of REV's checks into a
/// no; named by its id it is what was asked for, so leaving it out is a no.
#[test]
fn a_review_receipt_does_not_make_the_export_of_a_revision_fail() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str("[review \"code\"]\n\tpath = src\n\tself-approve = true\n");
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "declare a review"]);
    env.receipt_ok(&repo, &["run", "test"]);
    env.receipt_ok(&repo, &["review", "HEAD", "--approve", "-m", "fine"]);
    let r = env.receipt(&repo, &["export", "--in-toto"]);
    assert_eq!(r.code, 0, "the check is exported, the review skipped: {r}");
    assert_eq!(r.stdout.lines().count(), 1, "{r}");
    assert!(
        r.stderr.contains("skipping review receipt")
            && r.stderr.contains("no in-toto form")
            && r.stderr.contains("exported 1 in-toto attestation "),
        "says what it skipped: {r}"
    );
    assert!(!r.stderr.contains("not exported"), "{r}");
    let review_id = env
        .log_json(&repo)
        .into_iter()
        .find(|r| r["kind"] == "review")
        .unwrap_or_else(|| panic!("a review in the log"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = env.receipt(&repo, &["export", "--in-toto", &review_id]);
    assert_eq!(r.code, 1, "asked for by id and not exported: {r}");
    assert!(r.stderr.contains("no in-toto form"), "{r}");
}
