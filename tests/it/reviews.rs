//! Review receipts (issue 14): `git receipt review` signs a verdict on the inputs
//! of a `[review]`'s paths; `status` and `gate` count distinct trusted approvers,
//! each once with their newest verdict; a change in the reviewed paths makes the
//! approvals stale; the author approves only with `self-approve = true`, known by
//! the key of the commit's SSH signature; the server's pre-receive hook holds a
//! protected branch to a required review.
//!
//! Each reviewer is an environment of its own (its own HOME, so its own key)
//! working in the same repository.

use std::path::{Path, PathBuf};

use crate::common::{self, Daemon, Env};

/// The basic fixture plus `[review "code"]` on `src` needing `required`
/// approvals, with the keys of `trusted` reviewers declared as signers; committed
/// on main, so main's tip is the trust root.
fn reviewed_repo(env: &Env, trusted: &[(&str, &Env)], review: &str) -> PathBuf {
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    let mut contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    contract.push_str(review);
    for (name, who) in trusted {
        let key = who.receipt_ok(&dir, &["key", "generate"]).stdout;
        contract.push_str(&format!("[signer \"{name}\"]\n\tkey = {}\n", key.trim()));
    }
    std::fs::write(dir.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&dir, &["commit", "-qam", "declare the review"]);
    dir
}

const CODE_BY_TWO: &str =
    "[review \"code\"]\n\tpath = src\n\trequired = 2\n\tself-approve = true\n";

/// The `review:code` row of `status --json` at HEAD: (state, reason).
fn review_row(env: &Env, dir: &Path) -> (String, String) {
    let r = env.receipt(dir, &["status", "HEAD", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_else(|_| panic!("{r}"));
    let row = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "review:code")
        .unwrap_or_else(|| panic!("a review:code row: {r}"))
        .clone();
    (
        row["state"].as_str().unwrap().to_owned(),
        row["reason"].as_str().unwrap().to_owned(),
    )
}

fn approve(env: &Env, dir: &Path) {
    env.receipt_ok(dir, &["review", "HEAD", "--approve", "-m", "looks good"]);
}

#[test]
fn two_distinct_trusted_approvers_make_a_review_present_and_nothing_less_does() {
    let (maintainer, ada, bob, mallory) = (Env::new(), Env::new(), Env::new(), Env::new());
    let dir = reviewed_repo(&maintainer, &[("ada", &ada), ("bob", &bob)], CODE_BY_TWO);
    assert_eq!(review_row(&maintainer, &dir).0, "missing");

    approve(&ada, &dir);
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "missing", "{reason}");
    assert!(reason.contains("1 of 2 approvals (by ada)"), "{reason}");
    // the review receipt, as stored, is what the schema describes
    let log = ada.log_json(&dir);
    let writer = log[0]["writer"].as_str().unwrap();
    let tip = ada.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]);
    let stored: serde_json::Value = serde_json::from_slice(&ada.receipt_bytes(&dir, &tip)).unwrap();
    assert_eq!(stored["receipt"]["kind"], "review");
    assert_eq!(stored["receipt"]["review"]["verdict"], "approve");
    assert_eq!(
        stored["receipt"]["review"]["paths"],
        serde_json::json!(["src"])
    );
    let src_only = maintainer.git_input(
        &dir,
        &["mktree"],
        format!(
            "040000 tree {}\tsrc\n",
            maintainer.git_ok(&dir, &["rev-parse", "HEAD:src"])
        )
        .as_bytes(),
    );
    assert_eq!(
        stored["receipt"]["subject"]["inputs"],
        src_only.as_str(),
        "the inputs of the review's paths"
    );
    common::receipt_schema::assert_schema_accepts(&stored);

    approve(&ada, &dir);
    assert_eq!(
        review_row(&maintainer, &dir),
        (state.clone(), reason.clone()),
        "the same signer twice is still one approval"
    );

    approve(&mallory, &dir);
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(
        state, "missing",
        "an untrusted signer does not count: {reason}"
    );

    approve(&bob, &dir);
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "present", "{reason}");
    assert!(
        reason.contains("approved by ada, bob") || reason.contains("approved by bob, ada"),
        "{reason}"
    );
    let r = maintainer.receipt(&dir, &["gate", "HEAD", "--require", "review:code"]);
    assert_eq!(r.code, 0, "gate treats the review like a check: {r}");
    // an acceptance cites both approvals as the review's evidence, and verifies
    maintainer.receipt_ok(&dir, &["run", "test"]);
    maintainer.receipt_ok(&dir, &["gate", "HEAD", "--record"]);
    let writer = maintainer.log_json(&dir)[0]["writer"]
        .as_str()
        .unwrap()
        .to_owned();
    let tip = maintainer.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]);
    let v: serde_json::Value =
        serde_json::from_slice(&maintainer.receipt_bytes(&dir, &tip)).unwrap();
    let criteria = v["receipt"]["acceptance"]["criteria"].as_array().unwrap();
    let review = criteria
        .iter()
        .find(|c| c["kind"] == "review")
        .unwrap_or_else(|| panic!("a review criterion: {v}"));
    assert_eq!(review["name"], "code");
    assert_eq!(review["state"], "present");
    assert_eq!(review["evidence"].as_array().unwrap().len(), 2, "{review}");
    assert_eq!(v["receipt"]["acceptance"]["status"], "accepted");
    let r = maintainer.receipt(&dir, &["verify"]);
    assert_eq!(r.code, 0, "the review evidence backs the claim: {r}");

    // a change elsewhere keeps the approvals
    std::fs::write(dir.join("README"), "elsewhere\n").unwrap();
    maintainer.git_ok(&dir, &["commit", "-qam", "docs only"]);
    assert_eq!(review_row(&maintainer, &dir).0, "present");

    // a newer rejection by one of them wins over their approval
    let r = bob.receipt(&dir, &["review", "HEAD", "--reject"]);
    assert_eq!(r.code, 2, "a rejection says why: {r}");
    bob.receipt_ok(
        &dir,
        &[
            "review",
            "HEAD",
            "--reject",
            "-m",
            "needs a test for the empty case",
        ],
    );
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "failed", "{reason}");
    assert!(
        reason.contains("rejected by bob: needs a test for the empty case"),
        "{reason}"
    );
    let r = maintainer.receipt(&dir, &["gate", "HEAD", "--require", "review:code"]);
    assert_eq!(r.code, 1, "{r}");
    // a reviewer's words are hostile text: escaped on the terminal
    bob.receipt_ok(
        &dir,
        &[
            "review",
            "HEAD",
            "--reject",
            "-m",
            "clear\u{1b}[2J\u{202e}screen",
        ],
    );
    let r = maintainer.receipt(&dir, &["status", "HEAD"]);
    assert!(
        !r.stdout.contains('\u{1b}') && !r.stdout.contains('\u{202e}'),
        "{r}"
    );
    assert!(r.stdout.contains(r"clear\x1b[2J\u{202e}screen"), "{r}");
    let r = maintainer.receipt(&dir, &["show", "HEAD"]);
    assert!(
        !r.stdout.contains('\u{1b}') && r.stdout.contains("message  clear"),
        "{r}"
    );
    // and bob's newer approval wins over his rejection
    approve(&bob, &dir);
    assert_eq!(review_row(&maintainer, &dir).0, "present");

    // a change in the reviewed paths makes the approvals stale
    std::fs::write(dir.join("src/lib.rs"), "pub fn reviewed_no_more() {}\n").unwrap();
    maintainer.git_ok(&dir, &["commit", "-qam", "change src"]);
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "stale", "{reason}");
    assert!(
        reason.contains("the reviewed paths changed since"),
        "{reason}"
    );
}

/// Commit everything as `env`, SSH-signed with its receipt key as git does with
/// `gpg.format = ssh` (given on the command line only: a repository-wide
/// `user.signingKey` would make every reviewer here sign receipts with that key).
fn signed_commit(env: &Env, dir: &Path, message: &str) {
    let key = env.home.join(".config/git-receipt/signing_key");
    assert!(
        key.exists(),
        "the receipt key is where git-receipt keeps it"
    );
    let signing_key = format!("user.signingKey={}", key.display());
    env.git_ok(
        dir,
        &[
            "-c",
            "gpg.format=ssh",
            "-c",
            &signing_key,
            "commit",
            "-S",
            "-qam",
            message,
        ],
    );
}

#[test]
fn the_author_known_by_the_commit_signature_counts_only_with_self_approve() {
    // git signs the commits with ssh-keygen
    if !common::require_tool("ssh-keygen", "apt-get install openssh-client") {
        return;
    }
    let (maintainer, ada, bob) = (Env::new(), Env::new(), Env::new());
    let review = "[review \"code\"]\n\tpath = src\n\trequired = 1\n";
    let dir = reviewed_repo(&maintainer, &[("ada", &ada), ("bob", &bob)], review);
    // ada writes and signs a change, then approves it herself
    std::fs::write(dir.join("src/lib.rs"), "pub fn by_ada() {}\n").unwrap();
    signed_commit(&ada, &dir, "ada's change");
    approve(&ada, &dir);
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "missing", "{reason}");
    assert!(
        reason.contains("the author's own approval does not count (self-approve = false)"),
        "{reason}"
    );
    approve(&bob, &dir);
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "present", "another reviewer counts: {reason}");
    assert!(
        reason.contains("approved by bob") && !reason.contains("ada"),
        "{reason}"
    );

    // an unsigned commit has no known author: with self-approve = false no
    // approval can be told from a self-approval
    std::fs::write(dir.join("src/lib.rs"), "pub fn unsigned() {}\n").unwrap();
    maintainer.git_ok(&dir, &["commit", "-qam", "unsigned change"]);
    approve(&bob, &dir);
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "missing", "{reason}");
    assert!(reason.contains("has no verified SSH signature"), "{reason}");
}

#[test]
fn the_pre_receive_hook_refuses_a_protected_update_without_the_required_review() {
    let (maintainer, ada) = (Env::new(), Env::new());
    let daemon = Daemon::start(&maintainer);
    let review = "[review \"code\"]\n\tpath = src\n\trequired = 1\n\tself-approve = true\n";
    let seed = reviewed_repo(&maintainer, &[("ada", &ada), ("dev", &maintainer)], review);
    let (bare, url) = daemon.bare(&maintainer, "reviewed.git");
    maintainer.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    maintainer.receipt_ok(&bare, &["install-hooks", "--server"]);

    let dir = maintainer.path("clone");
    maintainer.git_ok(
        maintainer.tmp.path(),
        &["clone", "-q", &url, dir.to_str().unwrap()],
    );
    maintainer.receipt_ok(&dir, &["init"]);
    std::fs::write(dir.join("src/lib.rs"), "pub fn needs_review() {}\n").unwrap();
    maintainer.git_ok(&dir, &["commit", "-qam", "change src"]);
    maintainer.receipt_ok(&dir, &["run", "test"]);
    maintainer.receipt_ok(&dir, &["push"]);
    // the developer's own pre-push hook does not ask for reviews on a topic
    // branch: a branch is pushed to be reviewed ...
    maintainer.receipt_ok(&dir, &["install-hooks"]);
    let r = maintainer.git(&dir, &["push", "origin", "HEAD:refs/heads/topic"]);
    assert_eq!(r.code, 0, "{r}");
    // ... but a push to the branch the remote's HEAD names is held to it there
    // already, before anything reaches the server
    let r = maintainer.git(&dir, &["push", "origin", "main"]);
    assert_eq!(r.code, 1, "the pre-push hook refuses: {r}");
    assert!(
        r.stderr.contains("git-receipt: push to origin refused"),
        "{r}"
    );
    assert!(r.stderr.contains("review:code"), "{r}");
    assert!(
        r.stderr.contains("git receipt review") && r.stderr.contains("--name code"),
        "{r}"
    );
    assert_eq!(
        maintainer.git_ok(&bare, &["rev-parse", "main"]),
        maintainer.git_ok(&seed, &["rev-parse", "main"]),
        "nothing reached the server"
    );
    let r = maintainer.git(&dir, &["push", "--no-verify", "origin", "main"]);
    assert_ne!(r.code, 0, "no review: refused: {r}");
    assert!(r.stderr.contains("review:code"), "{r}");
    assert!(
        r.stderr.contains("git receipt review"),
        "says what fixes it: {r}"
    );

    approve(&ada, &dir);
    ada.receipt_ok(&dir, &["push"]);
    let r = maintainer.git(&dir, &["push", "--no-verify", "origin", "main"]);
    assert_eq!(r.code, 0, "reviewed: accepted: {r}");
}

#[test]
fn run_stale_runs_the_checks_and_names_the_reviews_still_needed_when_a_review_is_declared() {
    let (maintainer, ada) = (Env::new(), Env::new());
    let dir = reviewed_repo(&maintainer, &[("ada", &ada)], CODE_BY_TWO);
    let r = maintainer.receipt(&dir, &["run", "--stale"]);
    assert_eq!(r.code, 0, "the checks ran and passed: {r}");
    assert!(r.stderr.contains("2 of 2 checks passed"), "{r}");
    assert!(!r.stderr.contains("not a valid check name"), "{r}");
    assert!(
        r.stderr.contains("review:code (missing)")
            && r.stderr.contains("git receipt review")
            && r.stderr.contains("--name code --approve"),
        "the review still needed, with the command that approves it: {r}"
    );
    let run: Vec<String> = maintainer
        .log_json(&dir)
        .iter()
        .map(|e| e["check"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        run.contains(&"test".to_owned()) && run.contains(&"docs".to_owned()),
        "{run:?}"
    );
    // with every check present, it still says the review is needed
    let r = maintainer.receipt(&dir, &["run", "--stale"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("nothing to run"), "{r}");
    assert!(r.stderr.contains("review:code (missing)"), "{r}");
    // once approved, it is no longer named
    approve(&ada, &dir);
    approve(&maintainer, &dir);
    let r = maintainer.receipt(&dir, &["run", "--stale"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(!r.stderr.contains("review:code"), "{r}");
}

// ------------------------------------------------------------------ issue 23

const CODE_BY_ONE: &str =
    "[review \"code\"]\n\tpath = src\n\trequired = 1\n\tself-approve = true\n";

/// `count` commits, each changing `src/lib.rs` (the reviewed paths).
fn change_src(env: &Env, dir: &Path, count: usize) {
    for i in 0..count {
        std::fs::write(dir.join("src/lib.rs"), format!("pub fn v{i}() {{}}\n")).unwrap();
        env.git_ok(dir, &["commit", "-qam", &format!("src {i}")]);
    }
}

/// Issue 23: `gate --record` judged the reviews again with the default walk
/// limit while the report it signs used `receipt.walkLimit`, so with an approval
/// 10 commits back and `walkLimit = 5` it signed "review code missing" citing
/// that approval, and its own `verify` (and every later `gate --verify`) refused
/// the acceptance.
#[test]
fn gate_record_uses_the_reports_walk_limit_so_verify_accepts_the_acceptance() {
    let (maintainer, ada) = (Env::new(), Env::new());
    let dir = reviewed_repo(&maintainer, &[("ada", &ada)], CODE_BY_ONE);
    approve(&ada, &dir);
    let approval = ada.log_json(&dir)[0]["id"].as_str().unwrap().to_owned();
    change_src(&maintainer, &dir, 10);
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "stale", "within the default walk limit: {reason}");
    maintainer.git_ok(&dir, &["config", "receipt.walkLimit", "5"]);
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "missing", "10 commits back, beyond 5: {reason}");

    maintainer.receipt_ok(&dir, &["run", "test"]);
    let r = maintainer.receipt(&dir, &["gate", "HEAD", "--record"]);
    assert_eq!(r.code, 1, "the review is missing: {r}");
    let writer = maintainer.log_json(&dir)[0]["writer"]
        .as_str()
        .unwrap()
        .to_owned();
    let tip = maintainer.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]);
    let v: serde_json::Value =
        serde_json::from_slice(&maintainer.receipt_bytes(&dir, &tip)).unwrap();
    let acceptance = &v["receipt"]["acceptance"];
    assert_eq!(acceptance["status"], "rejected", "{v}");
    let review = acceptance["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "review")
        .unwrap_or_else(|| panic!("a review criterion: {v}"))
        .clone();
    assert_eq!(review["state"], "missing", "{review}");
    assert_eq!(
        review["evidence"],
        serde_json::json!([]),
        "the signed claim cites what the report decided by, not {approval}"
    );
    let r = maintainer.receipt(&dir, &["verify"]);
    assert_eq!(r.code, 0, "the acceptance verifies: {r}");
    let r = maintainer.receipt(&dir, &["gate", "HEAD", "--verify"]);
    assert_eq!(r.code, 1, "verified, and the review still missing: {r}");
    assert!(!r.stderr.contains("finding"), "{r}");
}

/// Issue 23: in a `--depth 3` clone a check whose receipt lies past the
/// boundary was undecided (exit 2) while a review in the same position read
/// missing (exit 1): the review walk had no shallow check.
#[test]
fn a_review_past_a_shallow_boundary_is_undecided_like_a_check() {
    let (maintainer, ada) = (Env::new(), Env::new());
    let dir = reviewed_repo(&maintainer, &[("ada", &ada)], CODE_BY_ONE);
    approve(&ada, &dir);
    maintainer.receipt_ok(&dir, &["run", "test"]);
    change_src(&maintainer, &dir, 3);
    assert_eq!(review_row(&maintainer, &dir).0, "stale");

    let url = format!("file://{}", dir.display());
    maintainer.git_ok(
        maintainer.tmp.path(),
        &["clone", "-q", "--depth", "3", &url, "clone"],
    );
    let clone = maintainer.path("clone");
    maintainer.git_ok(
        &clone,
        &[
            "fetch",
            "-q",
            "origin",
            "refs/receipts/*:refs/receipts/*",
            "refs/notes/receipts/*:refs/notes/receipts/*",
        ],
    );
    assert_eq!(
        maintainer.git_ok(&clone, &["rev-list", "--count", "HEAD"]),
        "3"
    );
    let boundary = maintainer.git_ok(&clone, &["rev-parse", "HEAD~2"]);
    for require in ["test", "review:code"] {
        let r = maintainer.receipt(&clone, &["gate", "HEAD", "--require", require]);
        assert_eq!(r.code, 2, "{require}: undecided, not missing: {r}");
        assert!(
            r.stderr
                .contains(&format!("history is shallow at {boundary}")),
            "{require}: {r}"
        );
        assert!(r.stderr.contains("git fetch --deepen"), "{require}: {r}");
    }
    let r = maintainer.receipt(&clone, &["gate", "HEAD", "--require", "review:code"]);
    assert!(
        r.stderr
            .contains("cannot tell whether review \"code\" is stale or missing"),
        "{r}"
    );
    let r = maintainer.receipt(&clone, &["status", "HEAD"]);
    assert_eq!(r.code, 2, "{r}");
    // with the history fetched, the answer is there
    maintainer.git_ok(&clone, &["fetch", "-q", "--unshallow"]);
    assert_eq!(review_row(&maintainer, &clone).0, "stale");
}

#[test]
fn self_approve_false_is_not_beaten_by_signing_the_commit_with_a_throwaway_key() {
    if !common::require_tool("ssh-keygen", "apt-get install openssh-client") {
        return;
    }
    let (maintainer, mallory, bob, throwaway) = (Env::new(), Env::new(), Env::new(), Env::new());
    let review = "[review \"code\"]\n\tpath = src\n\trequired = 1\n";
    let dir = reviewed_repo(&maintainer, &[("mallory", &mallory), ("bob", &bob)], review);
    throwaway.receipt_ok(&dir, &["key", "generate"]);
    // mallory writes a change, signs the commit with a key nobody trusts, and
    // approves it herself
    std::fs::write(dir.join("src/lib.rs"), "pub fn backdoor() {}\n").unwrap();
    signed_commit(&throwaway, &dir, "mallory's change");
    let r = mallory.receipt(&dir, &["review", "HEAD", "--approve", "-m", "lgtm"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("this approval cannot count")
            && r.stderr.contains("an untrusted key")
            && r.stderr.contains("hint: "),
        "review says at once that it cannot count, and what would: {r}"
    );
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "missing", "{reason}");
    assert!(
        reason.contains("is signed by")
            && reason.contains("an untrusted key, so its author is unknown"),
        "{reason}"
    );
    let r = maintainer.receipt(&dir, &["gate", "HEAD", "--require", "review:code"]);
    assert_eq!(r.code, 1, "{r}");
    // bob's approval cannot be told from a self-approval either: fail closed
    approve(&bob, &dir);
    assert_eq!(review_row(&maintainer, &dir).0, "missing");

    // the honest control: signed by a trusted key, another reviewer counts
    std::fs::write(dir.join("src/lib.rs"), "pub fn by_bob() {}\n").unwrap();
    signed_commit(&bob, &dir, "bob's change");
    let r = mallory.receipt(&dir, &["review", "HEAD", "--approve", "-m", "ok"]);
    assert!(!r.stderr.contains("cannot count"), "{r}");
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "present", "{reason}");
    // and the author's own approval is flagged at once
    let r = bob.receipt(&dir, &["review", "HEAD", "--approve", "-m", "mine"]);
    assert!(r.stderr.contains("the author's own approval"), "{r}");
}

/// `gate HEAD --trust main --require review:code --json` on `dir`: (review:code
/// state, its reason, the notices).
fn gate_review(env: &Env, dir: &Path) -> (String, String, String) {
    let r = env.receipt(
        dir,
        &[
            "gate",
            "HEAD",
            "--trust",
            "main",
            "--require",
            "review:code",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_else(|_| panic!("{r}"));
    let v = if v.is_array() { v[0].clone() } else { v };
    let row = v["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .find(|c| c["name"] == "review:code")
        .unwrap_or_else(|| panic!("a review:code row: {r}"))
        .clone();
    (
        row["state"].as_str().unwrap().to_owned(),
        row["reason"].as_str().unwrap().to_owned(),
        v["notices"].to_string(),
    )
}

#[test]
fn a_branch_pointing_its_review_at_paths_that_match_nothing_is_judged_by_mains_review_paths() {
    let (maintainer, rita, mallory) = (Env::new(), Env::new(), Env::new());
    let review = "[review \"code\"]\n\tpath = src\n\trequired = 1\n\tself-approve = true\n";
    let dir = reviewed_repo(&maintainer, &[("rita", &rita)], review);
    mallory.receipt_ok(&dir, &["key", "generate"]);
    // PR 1: a typo fix that also points the review at `Src`
    mallory.git_ok(&dir, &["checkout", "-qb", "typo"]);
    std::fs::write(dir.join("README"), "fixed a typo\n").unwrap();
    let contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    std::fs::write(
        dir.join(".gitreceipts"),
        contract.replace("path = src\n", "path = Src\n"),
    )
    .unwrap();
    mallory.git_ok(&dir, &["commit", "-qam", "fix a typo"]);
    let (_, _, notices) = gate_review(&maintainer, &dir);
    assert!(
        notices.contains("review \\\"code\\\" is defined differently here")
            && notices.contains("its path changed"),
        "{notices}"
    );
    rita.receipt_ok(&dir, &["review", "HEAD", "--approve", "-m", "typo ok"]);
    let (state, reason, _) = gate_review(&maintainer, &dir);
    assert_eq!(state, "present", "the honest control: {reason}");
    maintainer.git_ok(&dir, &["checkout", "-q", "main"]);
    maintainer.git_ok(&dir, &["merge", "-q", "--ff-only", "typo"]);

    // PR 2: a change in src/, and the review pointed at nothing
    mallory.git_ok(&dir, &["checkout", "-qb", "feature"]);
    std::fs::write(dir.join("src/lib.rs"), "pub fn backdoor() {}\n").unwrap();
    let contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    std::fs::write(
        dir.join(".gitreceipts"),
        contract.replace("path = Src\n", "path = nothing-here\n"),
    )
    .unwrap();
    mallory.git_ok(&dir, &["commit", "-qam", "innocent"]);
    let (state, reason, notices) = gate_review(&maintainer, &dir);
    assert!(state == "stale" || state == "missing", "{state}: {reason}");
    assert!(
        notices.contains("review \\\"code\\\" is defined differently here")
            && notices.contains("its path changed"),
        "a notice names the changed definition: {notices}"
    );
    assert!(
        notices.contains("path \\\"nothing-here\\\" of the review matches nothing"),
        "a notice names the path that matches nothing: {notices}"
    );
    let r = maintainer.receipt(
        &dir,
        &[
            "gate",
            "HEAD",
            "--trust",
            "main",
            "--require",
            "review:code",
        ],
    );
    assert_eq!(r.code, 1, "{r}");
}

/// The fix lines (`  fix: ...`) of some output.
fn fix_lines(out: &str) -> Vec<&str> {
    out.lines()
        .map(|l| l.strip_prefix("remote:").unwrap_or(l).trim_start())
        .filter(|l| l.starts_with("fix: "))
        .collect()
}

/// Issue 26 item 4: with `self-approve = false`, on a commit whose author is
/// unknown (no signature by a trusted key) no approval can count. `review` says so
/// at once and how to sign; `status`, `gate`, the pre-push hook and the server's
/// pre-receive hook say to sign the commit, never the `review --approve` that
/// changes nothing. Signing it makes the approval already given count; an unsigned
/// changelog commit on top turns the review missing again, naming that commit.
#[test]
fn on_a_commit_of_unknown_author_every_fix_says_to_sign_it_not_to_approve_it() {
    if !common::require_tool("ssh-keygen", "apt-get install openssh-client") {
        return;
    }
    let (maintainer, ada, bob) = (Env::new(), Env::new(), Env::new());
    let daemon = Daemon::start(&maintainer);
    let review = "[review \"code\"]\n\tpath = src\n\trequired = 1\n";
    let seed = reviewed_repo(
        &maintainer,
        &[("ada", &ada), ("bob", &bob), ("dev", &maintainer)],
        review,
    );
    let (bare, url) = daemon.bare(&maintainer, "unsigned.git");
    maintainer.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    maintainer.receipt_ok(&bare, &["install-hooks", "--server"]);
    let dir = maintainer.path("clone");
    maintainer.git_ok(
        maintainer.tmp.path(),
        &["clone", "-q", &url, dir.to_str().unwrap()],
    );
    maintainer.receipt_ok(&dir, &["init"]);
    maintainer.receipt_ok(&dir, &["install-hooks"]);

    // ada's change, committed unsigned (git's default)
    std::fs::write(dir.join("src/lib.rs"), "pub fn by_ada() {}\n").unwrap();
    ada.git_ok(&dir, &["commit", "-qam", "ada's change"]);
    maintainer.receipt_ok(&dir, &["run", "test"]);
    let short = maintainer.git_ok(&dir, &["rev-parse", "--short=7", "HEAD"]);
    let short = short.trim();
    let r = bob.receipt(&dir, &["review", "HEAD", "--approve", "-m", "lgtm"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("warning: this approval cannot count")
            && r.stderr
                .contains(&format!("commit {short} has no verified SSH signature"))
            && r.stderr.contains("git config gpg.format ssh")
            && r.stderr.contains("user.signingKey")
            && r.stderr.contains("commit.gpgSign"),
        "review says at once that the approval cannot count here, and what would make it: {r}"
    );
    bob.receipt_ok(&dir, &["push"]);

    let not_approve = |what: &str, out: &str| {
        let fixes = fix_lines(out);
        assert!(!fixes.is_empty(), "{what} says what fixes it: {out}");
        for fix in fixes.iter().filter(|f| f.contains("review")) {
            assert!(
                !fix.contains("--approve") && fix.contains("gpg.format ssh"),
                "{what}'s fix signs the commit rather than approving it again: {out}"
            );
        }
    };
    let r = maintainer.receipt(&dir, &["status", "HEAD"]);
    assert!(
        r.stdout.contains("no verified SSH signature") && !r.stdout.contains("--approve"),
        "{r}"
    );
    let r = maintainer.receipt(&dir, &["gate", "HEAD", "--require", "review:code"]);
    assert_eq!(r.code, 1, "{r}");
    not_approve("gate", &format!("{}{}", r.stdout, r.stderr));
    let r = maintainer.receipt(
        &dir,
        &["gate", "HEAD", "--require", "review:code", "--json"],
    );
    assert!(r.stdout.contains("\"review-author-unknown\""), "{r}");
    let r = maintainer.git(&dir, &["push", "origin", "main"]);
    assert_eq!(r.code, 1, "the pre-push hook refuses: {r}");
    not_approve("the pre-push hook", &r.stderr);
    let r = maintainer.git(&dir, &["push", "--no-verify", "origin", "main"]);
    assert_ne!(r.code, 0, "the server refuses: {r}");
    assert!(r.stderr.contains("review:code"), "{r}");
    not_approve("the server's hook", &r.stderr);

    // what the hint says works: ada signs the commit with her [signer] key, and
    // bob's approval of the same content counts
    let key = ada.home.join(".config/git-receipt/signing_key");
    let signing_key = format!("user.signingKey={}", key.display());
    ada.git_ok(
        &dir,
        &[
            "-c",
            "gpg.format=ssh",
            "-c",
            &signing_key,
            "commit",
            "--amend",
            "--no-edit",
            "-q",
            "-S",
        ],
    );
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "present", "{reason}");
    assert!(reason.contains("approved by bob"), "{reason}");

    // an unsigned changelog commit on top: no reviewed path changed, yet its
    // author is unknown, so the review is missing and says which commit and why
    std::fs::write(dir.join("CHANGELOG"), "a change\n").unwrap();
    maintainer.git_ok(&dir, &["add", "CHANGELOG"]);
    maintainer.git_ok(&dir, &["commit", "-qm", "changelog"]);
    let short = maintainer.git_ok(&dir, &["rev-parse", "--short=7", "HEAD"]);
    let (state, reason) = review_row(&maintainer, &dir);
    assert_eq!(state, "missing", "{reason}");
    assert!(
        reason.contains(&format!(
            "commit {} has no verified SSH signature, so its author is unknown",
            short.trim()
        )),
        "the reason names the unsigned commit: {reason}"
    );
    let r = maintainer.receipt(&dir, &["gate", "HEAD", "--require", "review:code"]);
    assert_eq!(r.code, 1, "{r}");
    not_approve(
        "gate on the changelog commit",
        &format!("{}{}", r.stdout, r.stderr),
    );
}
