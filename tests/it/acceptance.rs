//! Acceptance receipts (issue 14): `gate --record` signs the decision with the
//! receipts it rests on, `gate --accepted-by` reads it for exactly one tree, the
//! pre-receive hook requires it with `receipt.requireAcceptance`, and `verify`
//! names every claim whose cited evidence does not back it.
//!
//! The served history comes from the basic fixture (`test`, inputs `src`,
//! required), with the CI environment's key declared as `[signer "ci"]`.

use std::path::{Path, PathBuf};

use crate::common::receipt_schema::assert_schema_accepts;
use crate::common::{Daemon, Env, Run};
use git_receipt::decision::{Payload, append_decision};
use git_receipt::freshness::State;
use git_receipt::receipt::{
    Acceptance, Criterion, CriterionKind, Status, Subject, format_timestamp, writer_id,
};
use git_receipt::sign::SigningKey;
use git_receipt::store::Store;

pub(crate) fn clone(env: &Env, url: &str, rel: &str) -> PathBuf {
    let dir = env.path(rel);
    env.git_ok(env.tmp.path(), &["clone", "-q", url, dir.to_str().unwrap()]);
    env.receipt_ok(&dir, &["init"]);
    dir
}

/// The public key of `env`'s signing key (created on first use).
fn public_key(env: &Env, dir: &Path) -> String {
    env.receipt_ok(dir, &["key", "generate"])
        .stdout
        .trim()
        .to_owned()
}

/// A served repository whose `main` trusts `ci`'s key as `[signer "ci"]`.
pub(crate) fn served_with_ci(ci: &Env, daemon: &Daemon, name: &str) -> (PathBuf, String) {
    let seed = ci.fixture_repo("make_basic_repo.sh", &format!("seed-{name}"));
    let key = public_key(ci, &seed);
    ci.git_ok(
        &seed,
        &["config", "-f", ".gitreceipts", "signer.ci.key", &key],
    );
    ci.git_ok(&seed, &["commit", "-qam", "trust ci"]);
    let (bare, url) = daemon.bare(ci, name);
    ci.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    (bare, url)
}

#[test]
fn ci_records_an_acceptance_and_a_release_clone_gates_on_exactly_that_tree() {
    let ci = Env::new();
    let dev = Env::new();
    let release = Env::new();
    let daemon = Daemon::start(&ci);
    let (_, url) = served_with_ci(&ci, &daemon, "release.git");

    // CI: check, decide, sign the decision, push it
    let c = clone(&ci, &url, "ci");
    ci.receipt_ok(&c, &["run", "test"]);
    let r = ci.receipt_ok(&c, &["gate", "HEAD", "--record"]);
    assert!(r.stderr.contains("recorded acceptance sha256:"), "{r}");
    assert!(r.stderr.contains("(accepted)"), "{r}");
    ci.receipt_ok(&c, &["push"]);
    let accepted = ci.git_ok(&c, &["rev-parse", "HEAD"]);

    // the acceptance is on CI's chain, v3, citing the receipt that decided `test`
    let log = ci.log_json(&c);
    let test_id = log
        .iter()
        .find(|e| e["check"] == "test")
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .expect("the test receipt");
    assert!(
        log.iter()
            .any(|e| e["kind"] == "acceptance" && e["decision"] == "acceptance accepted"),
        "log --json says what was decided: {log:?}"
    );
    let writer = ci.only_writer(&c);
    let tip = ci.git_ok(&c, &["rev-parse", &format!("refs/receipts/{writer}")]);
    let stored: serde_json::Value =
        serde_json::from_slice(&ci.receipt_bytes(&c, &tip)).expect("a JSON receipt");
    assert_schema_accepts(&stored);
    let body = &stored["receipt"];
    assert_eq!(body["schema"], "git-receipt/v3");
    assert_eq!(body["kind"], "acceptance");
    assert_eq!(body["subject"]["commit"], accepted.as_str());
    let a = &body["acceptance"];
    assert_eq!(a["status"], "accepted");
    assert_eq!(a["criteria"][0]["name"], "test");
    assert_eq!(a["criteria"][0]["state"], "present");
    assert_eq!(a["criteria"][0]["evidence"][0], test_id.as_str());
    assert_eq!(a["unresolved"], serde_json::json!([]));
    assert!(body.get("check").is_none() && body.get("result").is_none());

    // a release clone: the same tree is accepted by ci, without deciding again
    let rel = clone(&release, &url, "release");
    release.receipt_ok(&rel, &["fetch"]);
    let r = release.receipt(&rel, &["gate", "origin/main", "--accepted-by", "ci"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("accepted by ci"), "{r}");
    let r = release.receipt(
        &rel,
        &[
            "gate",
            "origin/main",
            "--verify",
            "--trust",
            "origin/main",
            "--accepted-by",
            "ci",
        ],
    );
    assert_eq!(
        r.code, 0,
        "verified chains, then the acceptance answers: {r}"
    );

    // a developer adds one commit (outside `test`'s inputs): `test` is still
    // present, but no one accepted this tree
    let d = clone(&dev, &url, "dev");
    std::fs::write(d.join("README"), "changed\n").unwrap();
    dev.git_ok(&d, &["commit", "-qam", "one more"]);
    dev.git_ok(&d, &["push", "-q", "--no-verify", "origin", "main"]);
    release.git_ok(&rel, &["fetch", "-q"]);
    let r = release.receipt(&rel, &["gate", "origin/main", "--accepted-by", "ci"]);
    assert_eq!(r.code, 1, "one commit later is not accepted: {r}");
    assert!(r.stdout.contains("not accepted by ci"), "{r}");
    assert!(
        r.stdout
            .contains(&format!("the nearest is of {}", &accepted[..7]))
            && r.stdout.contains("1 commit back")
            && r.stdout.contains("whose tree differs"),
        "says why: {r}"
    );
    let r = release.receipt(&rel, &["gate", "origin/main~1", "--accepted-by", "ci"]);
    assert_eq!(r.code, 0, "the accepted revision still is: {r}");

    // an unknown signer cannot decide anything
    let r = release.receipt(&rel, &["gate", "origin/main", "--accepted-by", "nobody"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("no trusted key goes by that name"), "{r}");

    // the honest acceptance verifies
    let r = release.receipt(&rel, &["verify"]);
    assert_eq!(r.code, 0, "{r}");
}

#[test]
fn a_rejected_decision_is_recorded_and_does_not_accept() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    let r = env.receipt(&dir, &["gate", "HEAD", "--record"]);
    assert_eq!(r.code, 1, "nothing ran: rejected, exit as gate: {r}");
    assert!(r.stderr.contains("(rejected)"), "{r}");
    let writer = env.only_writer(&dir);
    let tip = env.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]);
    let v: serde_json::Value = serde_json::from_slice(&env.receipt_bytes(&dir, &tip)).unwrap();
    assert_schema_accepts(&v);
    let a = &v["receipt"]["acceptance"];
    assert_eq!(a["status"], "rejected");
    assert_eq!(a["unresolved"][0]["name"], "test");
    assert_eq!(a["unresolved"][0]["state"], "missing");
    assert_eq!(a["criteria"][0]["evidence"], serde_json::json!([]));
    let fingerprint = v["signature"]["key"].as_str().unwrap().to_owned();
    let r = env.receipt(&dir, &["gate", "HEAD", "--accepted-by", &fingerprint]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("is rejected: test missing"), "{r}");
}

/// What a forger writes: an acceptance of `commit` claiming `test` present,
/// citing `evidence`, signed by a trusted key of its own.
fn forge(dir: &Path, key: &SigningKey, commit: &str, inputs: &str, evidence: &str) -> String {
    let criterion = Criterion {
        kind: CriterionKind::Check,
        name: "test".into(),
        state: State::Present,
        inputs: inputs.to_owned(),
        evidence: vec![evidence.to_owned()],
    };
    forge_criteria(dir, key, commit, vec![criterion])
}

/// A forged acceptance of `commit` claiming `criteria` (all present).
fn forge_criteria(dir: &Path, key: &SigningKey, commit: &str, criteria: Vec<Criterion>) -> String {
    let store = Store::open(dir).unwrap();
    let oid = gix::ObjectId::from_hex(commit.as_bytes()).unwrap();
    let tree = store.commit_tree(oid).unwrap().to_string();
    let acceptance = Acceptance {
        status: Status::Accepted,
        trusted: commit.to_owned(),
        decided_at: format_timestamp(1_767_225_600_000),
        criteria,
        unresolved: Vec::new(),
    };
    let subject = Subject {
        commit: commit.to_owned(),
        inputs: tree.clone(),
        tree,
        dirty: false,
        dependencies: Vec::new(),
    };
    let appended = append_decision(
        &store,
        &writer_id(key.public(), "forger"),
        key,
        subject,
        Payload::Acceptance(acceptance),
    )
    .unwrap();
    appended.receipt.id().to_owned()
}

/// A forger's key (from `seed`), trusted through receipt.trustedKey; HEAD, the
/// decided revision; and the inputs tree of `src` there.
fn trusted_forger(env: &Env, dir: &Path, seed: u8) -> (SigningKey, String, String) {
    let forger = SigningKey::from_seed(&[seed; 32]);
    env.git_ok(
        dir,
        &[
            "config",
            "receipt.trustedKey",
            &forger.public().to_openssh(),
        ],
    );
    let decided = env.git_ok(dir, &["rev-parse", "HEAD"]);
    let src = env.git_ok(dir, &["rev-parse", "HEAD:src"]);
    let inputs = env.git_input(
        dir,
        &["mktree"],
        format!("040000 tree {src}\tsrc\n").as_bytes(),
    );
    (forger, decided, inputs)
}

fn id_of(env: &Env, dir: &Path, check: &str, nth_newest: usize) -> String {
    env.log_json(dir)
        .iter()
        .filter(|e| e["check"] == check)
        .nth(nth_newest)
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .unwrap()
}

fn findings(r: &Run) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("verify --json");
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "acceptance")
        .cloned()
        .collect()
}

#[test]
fn forged_acceptances_citing_a_failed_receipt_another_check_or_other_inputs_are_each_a_finding() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    let (forger, decided, inputs) = trusted_forger(&env, &dir, 9);
    env.receipt_ok(&dir, &["run", "test"]);
    let passed = id_of(&env, &dir, "test", 0);
    env.receipt_ok(&dir, &["record", "test", "--exit-code", "1"]);
    let failed = id_of(&env, &dir, "test", 0);
    env.receipt_ok(&dir, &["run", "docs"]);
    let docs = id_of(&env, &dir, "docs", 0);
    std::fs::write(dir.join("src/lib.rs"), "pub fn other() {}\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "other inputs"]);
    env.receipt_ok(&dir, &["run", "test"]);
    let elsewhere = id_of(&env, &dir, "test", 0);

    // the control: citing the passing receipt on these inputs backs the claim
    forge(&dir, &forger, &decided, &inputs, &passed);
    let r = env.receipt(&dir, &["verify", "--json"]);
    assert_eq!(r.code, 0, "an honest citation is no finding: {r}");

    let cites_failed = forge(&dir, &forger, &decided, &inputs, &failed);
    let cites_docs = forge(&dir, &forger, &decided, &inputs, &docs);
    let cites_elsewhere = forge(&dir, &forger, &decided, &inputs, &elsewhere);
    let r = env.receipt(&dir, &["verify", "--json"]);
    assert_eq!(r.code, 1, "{r}");
    let found = findings(&r);
    assert_eq!(found.len(), 3, "one finding per forged claim: {r}");
    let reason_of = |id: &str| -> String {
        found
            .iter()
            .find(|f| f["id"] == id)
            .map(|f| f["reason"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("a finding for {id}: {r}"))
    };
    let why = reason_of(&cites_failed);
    assert!(
        why.contains(&format!(
            "claims check test present citing {failed}, which failed (exit 1)"
        )),
        "{why}"
    );
    let why = reason_of(&cites_docs);
    assert!(
        why.contains(&format!("citing {docs}, which is a receipt of docs")),
        "{why}"
    );
    let why = reason_of(&cites_elsewhere);
    assert!(
        why.contains(&format!("citing {elsewhere}, which is about other inputs")),
        "{why}"
    );
    // the text report names them too
    let r = env.receipt(&dir, &["verify"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout.contains("which failed (exit 1)") || r.stderr.contains("which failed (exit 1)"),
        "{r}"
    );
}

#[test]
fn the_pre_receive_hook_refuses_a_protected_update_no_required_signer_accepted() {
    let ci = Env::new();
    let daemon = Daemon::start(&ci);
    let (bare, url) = served_with_ci(&ci, &daemon, "guarded.git");
    ci.receipt_ok(&bare, &["install-hooks", "--server"]);
    ci.git_ok(&bare, &["config", "receipt.requireAcceptance", "ci"]);
    let c = clone(&ci, &url, "ci");
    std::fs::write(c.join("src/lib.rs"), "pub fn changed() {}\n").unwrap();
    ci.git_ok(&c, &["commit", "-qam", "change src"]);
    ci.receipt_ok(&c, &["run", "test"]);
    ci.receipt_ok(&c, &["push"]);
    let r = ci.git(&c, &["push", "--no-verify", "origin", "main"]);
    assert_ne!(r.code, 0, "present receipts are not enough: {r}");
    assert!(
        r.stderr
            .contains("is not accepted by ci (receipt.requireAcceptance)"),
        "{r}"
    );
    ci.receipt_ok(&c, &["gate", "HEAD", "--record"]);
    ci.receipt_ok(&c, &["push"]);
    let r = ci.git(&c, &["push", "--no-verify", "origin", "main"]);
    assert_eq!(r.code, 0, "accepted by ci: {r}");
}

/// An acceptance that claims a review present on fewer distinct approvers than
/// the review requires is a finding that says how many it cites and needs; with
/// enough approvers it is not.
#[test]
fn a_forged_acceptance_claiming_a_review_on_too_few_approvers_is_a_finding() {
    let (env, ada, bob) = (Env::new(), Env::new(), Env::new());
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    let mut contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    contract.push_str("[review \"code\"]\n\tpath = src\n\trequired = 2\n\tself-approve = true\n");
    for (name, who) in [("ada", &ada), ("bob", &bob)] {
        let key = who.receipt_ok(&dir, &["key", "generate"]).stdout;
        contract.push_str(&format!("[signer \"{name}\"]\n\tkey = {}\n", key.trim()));
    }
    std::fs::write(dir.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&dir, &["commit", "-qam", "code review by two"]);
    let (forger, decided, inputs) = trusted_forger(&env, &dir, 11);
    let review_ids = |dir: &Path| -> Vec<String> {
        env.log_json(dir)
            .iter()
            .filter(|e| e["kind"] == "review")
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect()
    };
    ada.receipt_ok(&dir, &["review", "HEAD", "--approve", "-m", "fine"]);
    let one = review_ids(&dir);
    assert_eq!(one.len(), 1, "{one:?}");
    let claim = |evidence: Vec<String>| Criterion {
        kind: CriterionKind::Review,
        name: "code".into(),
        state: State::Present,
        inputs: inputs.clone(),
        evidence,
    };
    forge_criteria(&dir, &forger, &decided, vec![claim(one.clone())]);
    let r = env.receipt(&dir, &["verify", "--json"]);
    assert_eq!(r.code, 1, "{r}");
    let f = findings(&r);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0]["reason"]
            .as_str()
            .unwrap()
            .contains("approvals by 1 distinct trusted signer; it needs 2"),
        "{f:?}"
    );

    // two distinct approvers: the same kind of claim is backed
    bob.receipt_ok(&dir, &["review", "HEAD", "--approve", "-m", "fine too"]);
    let mut two = review_ids(&dir);
    two.sort();
    forge_criteria(&dir, &forger, &decided, vec![claim(two)]);
    let r = env.receipt(&dir, &["verify", "--json"]);
    assert_eq!(findings(&r).len(), 1, "only the first forgery: {r}");
}
