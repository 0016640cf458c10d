//! CI verifies in a fresh clone from a real git server (`git daemon` on 127.0.0.1).
//!
//! Two developers, Dev and Bob, declared as signers on `main`, push code and
//! receipts. A CI job with a fresh HOME and no key clones, fetches the receipt refs
//! (with `git receipt fetch`, or with `git receipt init` and a plain `git fetch`),
//! and verifies against the signers on `origin/main`. Then Mallory, who has push
//! access but not Dev's key, forges a receipt in Dev's chain claiming that the tests
//! passed on her unreviewed commit, and pushes it with a raw `git push --force
//! --no-verify`. CI must not be fooled, whichever way it fetches.

use std::path::{Path, PathBuf};

use crate::common::{Daemon, Env, Run, clone};
use git_receipt::canon;
use git_receipt::receipt::{Receipt, writer_id};
use git_receipt::sign::SigningKey;
use serde_json::Value;

struct World {
    _server: Env,
    _daemon: Daemon,
    url: String,
    /// Dev's writer id and Bob's.
    dev_writer: String,
    bob_writer: String,
    /// Dev's public key fingerprint.
    dev_fingerprint: String,
}

fn key_path(env: &Env) -> PathBuf {
    env.home.join(".config/git-receipt/signing_key")
}

/// A served repository whose `main` declares Dev and Bob as signers, with Dev's
/// `test` receipt and Bob's `test` and `docs` receipts on its tip, all pushed.
fn world() -> World {
    let server = Env::new();
    let daemon = Daemon::start(&server);
    let (_, url) = daemon.bare(&server, "app.git");

    let dev = Env::new();
    let bob = Env::new();
    let d = dev.fixture_repo("make_basic_repo.sh", "dev");
    dev.receipt_ok(&d, &["key", "generate"]);
    bob.receipt_ok(&d, &["key", "generate"]);
    let dev_key = dev.receipt_ok(&d, &["key", "show"]).stdout;
    let bob_key = bob.receipt_ok(&d, &["key", "show"]).stdout;
    for (name, key) in [("dev", &dev_key), ("bob", &bob_key)] {
        dev.git_ok(
            &d,
            &[
                "config",
                "-f",
                ".gitreceipts",
                &format!("signer.{name}.key"),
                key.trim(),
            ],
        );
    }
    dev.git_ok(&d, &["commit", "-q", "-am", "trust dev and bob"]);
    dev.git_ok(&d, &["remote", "add", "origin", &url]);
    dev.git_ok(&d, &["push", "-q", "origin", "main"]);
    dev.receipt_ok(&d, &["run", "test"]);
    let r = dev.receipt_ok(&d, &["push"]);
    assert!(
        r.stderr.contains("pushed 1 new receipt of dev (default-"),
        "{r}"
    );

    let b = clone(&bob, &url, "bob");
    bob.receipt_ok(&b, &["run", "test"]);
    bob.receipt_ok(&b, &["run", "docs"]);
    bob.receipt_ok(&b, &["push"]);

    let dev_signing = SigningKey::load(&key_path(&dev)).unwrap();
    let bob_signing = SigningKey::load(&key_path(&bob)).unwrap();
    World {
        _server: server,
        _daemon: daemon,
        url,
        dev_writer: writer_id(dev_signing.public(), "default"),
        bob_writer: writer_id(bob_signing.public(), "default"),
        dev_fingerprint: dev_signing.public().fingerprint(),
    }
}

/// `git receipt verify --json --trust origin/main ARGS`, parsed.
fn verify(ci: &Env, dir: &Path, args: &[&str]) -> (Run, Value) {
    let mut argv = vec!["verify", "--json", "--trust", "origin/main"];
    argv.extend_from_slice(args);
    let r = ci.receipt(dir, &argv);
    let v = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("verify --json prints a report ({e}): {r}"));
    (r, v)
}

fn assert_verified(ci: &Env, dir: &Path, world: &World, args: &[&str]) {
    let (r, v) = verify(ci, dir, args);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(v["findings"], serde_json::json!([]), "{r}");
    assert_eq!(v["chains"], 2, "{r}");
    assert_eq!(v["receipts"], 3, "{r}");
    assert!(v["tips"][&world.dev_writer].is_string(), "{r}");
    assert!(v["tips"][&world.bob_writer].is_string(), "{r}");
    assert_eq!(v["trust"], "signers of .gitreceipts at origin/main", "{r}");
}

fn gate(ci: &Env, dir: &Path) -> Run {
    ci.receipt(dir, &["gate", "HEAD", "--verify", "--trust", "origin/main"])
}

/// Mallory (push access, no key of Dev's) commits a change on a branch and forges
/// Dev's receipt #1 for it: Dev's receipt #0 with index, prev and subject edited,
/// under Dev's signature, appended to Dev's chain with a note on her commit. All
/// pushed with a raw `git push --force --no-verify`. Returns her commit.
fn forge_on_server(world: &World) -> String {
    let mallory = Env::new();
    let m = clone(&mallory, &world.url, "mallory");
    mallory.receipt_ok(&m, &["fetch"]);
    mallory.git_ok(&m, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(m.join("src/lib.rs"), "pub fn backdoor() {}\n").unwrap();
    mallory.git_ok(&m, &["commit", "-q", "-am", "small refactor"]);
    let commit = mallory.git_ok(&m, &["rev-parse", "HEAD"]);
    let tree = mallory.git_ok(&m, &["rev-parse", "HEAD^{tree}"]);
    let src = mallory.git_ok(&m, &["rev-parse", "HEAD:src"]);
    let inputs = mallory.git_input(
        &m,
        &["mktree"],
        format!("040000 tree {src}\tsrc\n").as_bytes(),
    );

    let chain_ref = format!("refs/receipts/{}", world.dev_writer);
    let tip = mallory.git_ok(&m, &["rev-parse", &chain_ref]);
    let honest = Receipt::parse(&mallory.receipt_bytes(&m, &tip)).unwrap();
    let mut v: Value = serde_json::from_slice(honest.bytes()).unwrap();
    let body = &mut v["receipt"];
    body["chain"]["index"] = 1.into();
    body["chain"]["prev"] = honest.id().into();
    body["subject"]["commit"] = commit.as_str().into();
    body["subject"]["tree"] = tree.as_str().into();
    body["subject"]["inputs"] = inputs.as_str().into();
    let bytes = canon::to_canonical(&v).unwrap();
    let forged = Receipt::parse(&bytes).expect("well-formed, only not signed by Dev");
    let blob = mallory.git_input(&m, &["hash-object", "-w", "--stdin"], &bytes);
    let entry = mallory.git_input(
        &m,
        &["mktree"],
        format!("100644 blob {blob}\treceipt.json\n").as_bytes(),
    );
    let forged_commit = mallory.git_ok(
        &m,
        &[
            "commit-tree",
            &entry,
            "-p",
            &tip,
            "-m",
            &format!("receipt: test passed #1\n\n{}", forged.id()),
        ],
    );
    mallory.git_ok(&m, &["update-ref", &chain_ref, &forged_commit, &tip]);
    let notes = format!("--ref=receipts/{}", world.dev_writer);
    for object in [&commit, &inputs] {
        mallory.git_ok(
            &m,
            &[
                "notes",
                &notes,
                "add",
                "-f",
                "-m",
                &format!("{} {forged_commit} test passed", forged.id()),
                object,
            ],
        );
    }
    let r = mallory.git(
        &m,
        &[
            "push",
            "--force",
            "--no-verify",
            "origin",
            "feature",
            &format!("{chain_ref}:{chain_ref}"),
            &format!(
                "refs/notes/receipts/{w}:refs/notes/receipts/{w}",
                w = world.dev_writer
            ),
        ],
    );
    assert_eq!(r.code, 0, "the server takes the forgery: {r}");
    commit
}

#[test]
fn ci_with_git_receipt_fetch_verifies_a_fresh_clone_and_refuses_a_forged_chain() {
    let world = world();
    let ci = Env::new(); // fresh HOME, no key
    let dir = clone(&ci, &world.url, "ci");
    let r = ci.receipt_ok(&dir, &["fetch"]);
    assert!(
        r.stderr
            .contains(&format!("new chain {}: 1 receipt", world.dev_writer)),
        "{r}"
    );
    assert!(
        r.stderr
            .contains(&format!("new chain {}: 2 receipts", world.bob_writer)),
        "{r}"
    );
    assert_verified(&ci, &dir, &world, &[]);
    let r = gate(&ci, &dir);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stdout.contains("HEAD: required check test present"),
        "{r}"
    );
    assert!(!key_path(&ci).exists(), "CI needs no key and gets none");

    let mallory_commit = forge_on_server(&world);

    // The clone that already has Dev's chain: the forged receipt is new, checked
    // before it is taken, and refused.
    let r = ci.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 1, "{r}");
    let refusal = format!(
        "{}: REJECTED, local chain unchanged: receipt sha256:",
        world.dev_writer
    );
    let reason = format!(
        "(#1): signature does not verify against key {}",
        world.dev_fingerprint
    );
    assert!(r.stderr.contains(&refusal), "{r}");
    assert!(r.stderr.contains(&reason), "{r}");
    assert_verified(&ci, &dir, &world, &[]);

    // A fresh clone takes Dev's real entry and refuses the forgery above it the
    // same way: an entry that breaks a rule is not part of the chain, and neither
    // is anything above it.
    let fresh = clone(&ci, &world.url, "ci-fresh");
    let r = ci.receipt(&fresh, &["fetch"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr.contains(&format!(
            "{}: took 1 new receipt; REJECTED what is above them: receipt sha256:",
            world.dev_writer
        )),
        "{r}"
    );
    assert!(r.stderr.contains(&reason), "{r}");
    let dev_tip = ci.git_ok(
        &fresh,
        &["rev-parse", &format!("refs/receipts/{}", world.dev_writer)],
    );
    let dev_real = ci.git_ok(
        &dir,
        &["rev-parse", &format!("refs/receipts/{}", world.dev_writer)],
    );
    assert_eq!(
        dev_tip, dev_real,
        "the fresh clone holds Dev's real entry, not the forgery"
    );
    // ...and Mallory's commit has no receipt there.
    ci.git_ok(&fresh, &["fetch", "-q", "origin", "feature"]);
    let r = ci.receipt(
        &fresh,
        &[
            "gate",
            &mallory_commit,
            "--verify",
            "--trust",
            "origin/main",
        ],
    );
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("fix: git receipt run test"), "{r}");
}

#[test]
fn ci_with_init_and_plain_git_fetch_verifies_a_fresh_clone_and_catches_a_forged_chain() {
    let world = world();
    let ci = Env::new();
    let checkpoint = ci.path("cache/receipts-checkpoint.json");
    std::fs::create_dir_all(checkpoint.parent().unwrap()).unwrap();
    let cp = checkpoint.to_str().unwrap();

    let dir = clone(&ci, &world.url, "ci");
    ci.receipt_ok(&dir, &["init"]);
    let r = ci.git(&dir, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    assert_verified(&ci, &dir, &world, &["--checkpoint", cp]);
    assert!(checkpoint.exists(), "a clean run records the checkpoint");
    let r = gate(&ci, &dir);
    assert_eq!(r.code, 0, "{r}");

    let mallory_commit = forge_on_server(&world);

    // The next CI run: a fresh clone, the cached checkpoint. Plain git fetch takes
    // the forged chain as it is (it is a fast-forward); verify catches it.
    let dir = clone(&ci, &world.url, "ci-next");
    ci.receipt_ok(&dir, &["init"]);
    let r = ci.git(&dir, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    let (r, v) = verify(&ci, &dir, &["--checkpoint", cp]);
    assert_eq!(r.code, 1, "{r}");
    let findings = v["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{r}");
    let f = &findings[0];
    assert_eq!(f["chain"], world.dev_writer.as_str(), "{r}");
    assert_eq!(f["kind"], "signature", "{r}");
    assert_eq!(f["index"], 1, "{r}");
    assert!(
        f["reason"].as_str().unwrap().contains(&format!(
            "signature does not verify against key {}",
            world.dev_fingerprint
        )),
        "{r}"
    );
    let r = gate(&ci, &dir);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("[signature]"), "{r}");
    // gating Mallory's commit itself: the forged receipt counts for nothing
    ci.git_ok(&dir, &["fetch", "-q", "origin", "feature"]);
    let r = ci.receipt(&dir, &["gate", &mallory_commit, "--trust", "origin/main"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("fix: git receipt run test"), "{r}");
}

#[test]
fn a_chain_rewritten_on_the_server_is_caught_by_the_ci_checkpoint() {
    let world = world();
    let ci = Env::new();
    let checkpoint = ci.path("receipts-checkpoint.json");
    let cp = checkpoint.to_str().unwrap();
    let dir = clone(&ci, &world.url, "ci");
    ci.receipt_ok(&dir, &["fetch"]);
    assert_verified(&ci, &dir, &world, &["--checkpoint", cp]);

    // The server's copy of Bob's chain is rewritten: the same two receipts in new
    // commits (a valid chain on its own), force-pushed by someone with push access.
    let admin = Env::new();
    let a = clone(&admin, &world.url, "admin");
    admin.receipt_ok(&a, &["fetch"]);
    let chain_ref = format!("refs/receipts/{}", world.bob_writer);
    let mut old: Vec<String> = admin
        .git_ok(&a, &["rev-list", &chain_ref])
        .lines()
        .map(str::to_owned)
        .collect();
    old.reverse();
    let mut parent: Option<String> = None;
    for c in &old {
        let tree = admin.git_ok(&a, &["rev-parse", &format!("{c}^{{tree}}")]);
        let mut args = vec!["commit-tree", tree.as_str(), "-m", "rewritten"];
        if let Some(p) = &parent {
            args.extend(["-p", p.as_str()]);
        }
        parent = Some(admin.git_ok(&a, &args));
    }
    let new_tip = parent.unwrap();
    admin.git_ok(&a, &["update-ref", &chain_ref, &new_tip]);
    let r = admin.git(
        &a,
        &[
            "push",
            "--force",
            "--no-verify",
            "origin",
            &format!("{chain_ref}:{chain_ref}"),
        ],
    );
    assert_eq!(r.code, 0, "{r}");

    // A fresh clone sees a valid chain; only the cached checkpoint knows better.
    let next = clone(&ci, &world.url, "ci-next");
    let r = ci.receipt(&next, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    let (r, v) = verify(&ci, &next, &[]);
    assert_eq!(
        r.code, 0,
        "without the checkpoint the rewrite is invisible: {r}"
    );
    assert_eq!(v["findings"], serde_json::json!([]));
    let (r, v) = verify(&ci, &next, &["--checkpoint", cp]);
    assert_eq!(r.code, 1, "{r}");
    let f = &v["findings"][0];
    assert_eq!(f["kind"], "checkpoint", "{r}");
    assert_eq!(f["chain"], world.bob_writer.as_str(), "{r}");
    assert!(
        f["reason"].as_str().unwrap().contains(&format!(
            "chain no longer descends from {}, its tip at the checkpoint: it was rolled back or rewritten (now {new_tip})",
            old[1]
        )),
        "{r}"
    );

    // The clone that fetched before keeps its chain: fetching never rewinds one. A
    // writer's chain only grows, so a remote copy that no longer contains this one
    // was rewritten: the fetch keeps the intact copy and fails loudly.
    let r = ci.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr.contains(&format!(
            "{}: DIVERGED from origin's copy, which no longer contains the receipts you have",
            world.bob_writer
        )),
        "{r}"
    );
    assert!(r.stderr.contains("kept yours"), "{r}");
    let r = ci.git(
        &dir,
        &["fetch", "origin", "refs/receipts/*:refs/receipts/*"],
    );
    assert_ne!(r.code, 0, "plain git fetch refuses to rewind a chain: {r}");
    assert!(r.stderr.contains("non-fast-forward"), "{r}");
}

#[test]
fn a_shallow_ci_clone_verifies_when_receipts_are_fetched_in_full_and_says_how_when_cut() {
    let world = world();
    let ci = Env::new();
    let shallow_clone = |rel: &str| {
        let dir = ci.path(rel);
        ci.git_ok(
            ci.tmp.path(),
            &[
                "clone",
                "-q",
                "--depth=1",
                &world.url,
                dir.to_str().unwrap(),
            ],
        );
        dir
    };
    // A depth-1 checkout is enough: receipt chains share no history with the code,
    // and `git receipt fetch` fetches them whole.
    let dir = shallow_clone("ci");
    ci.receipt_ok(&dir, &["fetch"]);
    assert_verified(&ci, &dir, &world, &[]);
    assert_eq!(gate(&ci, &dir).code, 0);

    // Receipt refs fetched with --depth are cut short: verify says where and how
    // to mend it, rather than only that an object is missing.
    let dir = shallow_clone("ci-cut");
    ci.git_ok(
        &dir,
        &[
            "fetch",
            "-q",
            "--depth=1",
            "origin",
            "refs/receipts/*:refs/receipts/*",
            "+refs/notes/receipts/*:refs/notes/receipts/*",
        ],
    );
    let (r, v) = verify(&ci, &dir, &[]);
    assert_eq!(r.code, 1, "{r}");
    let cut = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "shape")
        .unwrap_or_else(|| panic!("a [shape] finding: {r}"));
    assert_eq!(cut["chain"], world.bob_writer.as_str(), "{r}");
    assert!(
        cut["reason"].as_str().unwrap().contains(
            "a shallow fetch (--depth, or `git receipt fetch --since`) cut the chain here; `git receipt verify --since-checkpoint` starts from a signed checkpoint instead, or fetch refs/receipts/* in full (in this clone: `git receipt fetch --unshallow`)"
        ),
        "{r}"
    );
    ci.git_ok(&dir, &["fetch", "-q", "--unshallow"]);
    assert_verified(&ci, &dir, &world, &[]);
}

#[test]
fn status_and_gate_in_a_fresh_clone_point_at_fetching_the_receipts_with_no_forcing_refspec() {
    let world = world();
    let ci = Env::new(); // fresh HOME, no key
    let dir = clone(&ci, &world.url, "fresh");
    let r = ci.receipt(&dir, &["status"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("missing"), "{r}");
    assert!(
        r.stderr.contains("no receipts at all") && r.stderr.contains("`git receipt fetch`"),
        "status says why and what brings them: {r}"
    );
    let r = ci.receipt(&dir, &["gate", "HEAD"]);
    assert_eq!(r.code, 1, "{r}");
    let out = format!("{}{}", r.stdout, r.stderr);
    assert!(out.contains("git receipt fetch"), "{r}");
    assert!(
        !out.contains("+refs/receipts/"),
        "a chain is never fetched forced: {r}"
    );
    // the refspec gate names, run with stock git as given, brings the chains
    let spec = "refs/receipts/*:refs/receipts/*";
    assert!(out.contains(&format!("git fetch origin '{spec}'")), "{r}");
    ci.git_ok(&dir, &["fetch", "-q", "origin", spec]);
    let r = ci.receipt(&dir, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");
    let r = ci.receipt_ok(&dir, &["status"]);
    assert!(!r.stderr.contains("no receipts at all"), "{r}");
}

/// Issue 26 item 7: in a `git clone --depth 1 --branch X` whose receipts are
/// signed by no key trusted there, the shallow history is not the cause: deeper
/// history would not make an untrusted receipt count. The error names the cause
/// and its fix (trust the signer), and following that fix decides the checks.
#[test]
fn a_depth_1_branch_clone_whose_receipts_no_one_trusts_blames_trust_not_the_shallow_history() {
    let dev = Env::new();
    let repo = dev.fixture_repo("make_basic_repo.sh", "repo");
    dev.git_ok(&repo, &["checkout", "-qb", "feature"]);
    std::fs::write(repo.join("src/feature.rs"), "pub fn feature() {}\n").unwrap();
    dev.git_ok(&repo, &["add", "src"]);
    dev.git_ok(&repo, &["commit", "-qm", "a feature"]);
    let dev_key = dev.receipt_ok(&repo, &["key", "generate"]).stdout;
    dev.receipt_ok(&repo, &["run", "test", "docs"]);
    dev.receipt_ok(&repo, &["status", "HEAD"]);

    let ci = Env::new();
    let url = format!("file://{}", repo.display());
    let dir = ci.path("ci");
    ci.git_ok(
        ci.tmp.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            "--branch",
            "feature",
            &url,
            dir.to_str().unwrap(),
        ],
    );
    ci.git_ok(
        &dir,
        &["fetch", "-q", "origin", "refs/receipts/*:refs/receipts/*"],
    );
    for cmd in [&["status", "HEAD"][..], &["gate", "HEAD"]] {
        let r = ci.receipt(&dir, cmd);
        assert_eq!(r.code, 2, "{r}");
        assert!(
            r.stderr.contains("are signed by keys not trusted here")
                && r.stderr.contains("[signer]")
                && r.stderr.contains("receipt.trustedKey"),
            "{cmd:?} names the real cause and its fix: {r}"
        );
        assert!(
            !r.stderr
                .starts_with("git-receipt: error: history is shallow"),
            "{cmd:?} does not blame the shallow history first: {r}"
        );
    }
    // the fix, as given: trust the key; no deeper history is needed
    ci.git_ok(
        &dir,
        &["config", "--add", "receipt.trustedKey", dev_key.trim()],
    );
    let r = ci.receipt(&dir, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(ci.status_of(&dir, Some("HEAD"), "test")["state"], "present");
}
