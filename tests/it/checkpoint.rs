//! Incremental CI: `verify --checkpoint FILE` checks only the receipts after each
//! checkpointed tip when the chain still descends from it, and still catches
//! anything wrong there: a forged receipt, a receipt that does not link to the
//! checkpointed tip, a chain rewritten below the checkpoint. A chain the
//! checkpoint does not know is checked whole.
//!
//! Two writers, Ada and Bob (each an Env with its own HOME and key), are declared
//! as `[signer]`s in `.gitreceipts` on `main`; every verify trusts `main`.

use std::path::PathBuf;

use crate::common::{Env, Run};
use git_receipt::canon;
use git_receipt::receipt::{Receipt, Unverified, writer_id};
use git_receipt::sign::SigningKey;
use serde_json::Value;

struct Fx {
    ada: Env,
    bob: Env,
    repo: PathBuf,
    /// The checkpoint file (in Ada's temporary directory).
    cp: PathBuf,
}

fn key(env: &Env) -> SigningKey {
    SigningKey::load(&env.home.join(".config/git-receipt/signing_key")).unwrap()
}

fn writer(env: &Env) -> String {
    writer_id(key(env).public(), "default")
}

/// Ada and Bob trusted on main; Ada has receipts #0 and #1, Bob none yet; a clean
/// verify has recorded the checkpoint.
fn checkpointed() -> Fx {
    let (ada, bob) = (Env::new(), Env::new());
    let repo = ada.fixture_repo("make_basic_repo.sh", "repo");
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    for (name, env) in [("ada", &ada), ("bob", &bob)] {
        env.receipt_ok(&repo, &["key", "generate"]);
        let line = env.receipt_ok(&repo, &["key", "show"]).stdout;
        contract.push_str(&format!("[signer \"{name}\"]\n\tkey = {}\n", line.trim()));
    }
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    ada.git_ok(&repo, &["commit", "-q", "-am", "trust ada and bob"]);
    ada.receipt_ok(&repo, &["run", "test"]);
    ada.receipt_ok(&repo, &["run", "docs"]);
    let cp = ada.path("checkpoint.json");
    let fx = Fx { ada, bob, repo, cp };
    let (r, v) = fx.verify();
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(v["checkpoint_written"], true, "{r}");
    assert_eq!(
        (v["receipts"].as_u64(), v["covered_by_checkpoint"].as_u64()),
        (Some(2), Some(0)),
        "{r}"
    );
    fx
}

impl Fx {
    fn verify(&self) -> (Run, Value) {
        let r = self.ada.receipt(
            &self.repo,
            &[
                "verify",
                "--trust",
                "main",
                "--json",
                "--checkpoint",
                self.cp.to_str().unwrap(),
            ],
        );
        let v = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r}"));
        (r, v)
    }

    fn verify_text(&self) -> Run {
        self.ada.receipt(
            &self.repo,
            &[
                "verify",
                "--trust",
                "main",
                "--checkpoint",
                self.cp.to_str().unwrap(),
            ],
        )
    }

    fn git(&self, args: &[&str]) -> String {
        self.ada.git_ok(&self.repo, args)
    }

    fn tip(&self, writer: &str) -> String {
        self.git(&["rev-parse", &format!("refs/receipts/{writer}")])
    }

    fn receipt_at(&self, commit: &str) -> Receipt<Unverified> {
        Receipt::parse(&self.ada.receipt_bytes(&self.repo, commit)).unwrap()
    }

    /// Append a chain commit holding `bytes` as receipt.json on top of `writer`'s tip.
    fn append_raw(&self, writer: &str, bytes: &[u8]) -> String {
        let blob = self
            .ada
            .git_input(&self.repo, &["hash-object", "-w", "--stdin"], bytes);
        let tree = self.ada.git_input(
            &self.repo,
            &["mktree"],
            format!("100644 blob {blob}\treceipt.json\n").as_bytes(),
        );
        let tip = self.tip(writer);
        let commit = self.git(&["commit-tree", &tree, "-p", &tip, "-m", "appended"]);
        self.git(&[
            "update-ref",
            &format!("refs/receipts/{writer}"),
            &commit,
            &tip,
        ]);
        commit
    }

    /// The findings of a report, as (kind, chain, index).
    fn findings(v: &Value) -> Vec<(String, String, Option<u64>)> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["kind"].as_str().unwrap().to_owned(),
                    f["chain"].as_str().unwrap().to_owned(),
                    f["index"].as_u64(),
                )
            })
            .collect()
    }
}

fn assert_finding(r: &Run, v: &Value, kind: &str, chain: &str, index: Option<u64>, reason: &str) {
    assert_eq!(r.code, 1, "{r}");
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == kind && f["chain"] == chain && f["index"].as_u64() == index)
        .unwrap_or_else(|| panic!("a {kind} finding for {chain} #{index:?}: {r}"));
    assert!(
        f["reason"].as_str().unwrap().contains(reason),
        "{reason:?} in {f}"
    );
}

#[test]
fn after_a_checkpoint_only_the_new_receipts_are_verified() {
    let fx = checkpointed();
    for check in ["test", "docs", "test"] {
        fx.ada.receipt_ok(&fx.repo, &["run", check]);
    }
    let (r, v) = fx.verify();
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(v["receipts"], 3, "three new receipts verified: {r}");
    assert_eq!(v["covered_by_checkpoint"], 2, "{r}");
    assert_eq!(v["checkpoint_written"], true, "{r}");
    // the text summary says the same
    let text = fx.verify_text();
    assert_eq!(text.code, 0, "{text}");
    assert!(
        text.stderr
            .contains("verified 0 receipts (5 more covered by the checkpoint) in 1 chain"),
        "{text}"
    );
}

#[test]
fn notes_found_whole_at_the_checkpoint_are_not_read_again_until_they_move() {
    let fx = checkpointed();
    let cp: Value = serde_json::from_slice(&std::fs::read(&fx.cp).unwrap()).unwrap();
    assert_eq!(cp["version"], 3, "{cp}");
    let w = writer(&fx.ada);
    let notes_ref = format!("refs/notes/receipts/{w}");
    assert_eq!(
        cp["notes"][&w],
        fx.git(&["rev-parse", &notes_ref]).as_str(),
        "{cp}"
    );
    let (r, v) = fx.verify();
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        (
            v["note_lines"].as_u64(),
            v["notes_covered_by_checkpoint"].as_u64()
        ),
        (Some(0), Some(1)),
        "{r}"
    );
    let text = fx.verify_text();
    assert!(
        text.stderr
            .contains("and 0 note lines (the notes of 1 writer covered by the checkpoint)"),
        "{text}"
    );
    // a note copied onto another commit moves the notes: they are read, a finding
    let head = fx.git(&["rev-parse", "HEAD"]);
    fx.git(&["checkout", "-q", "--orphan", "elsewhere"]);
    fx.git(&["commit", "-q", "--allow-empty", "-m", "elsewhere"]);
    let other = fx.git(&["rev-parse", "HEAD"]);
    fx.git(&[
        "notes",
        "--ref",
        &notes_ref["refs/notes/".len()..],
        "copy",
        &head,
        &other,
    ]);
    let (r, v) = fx.verify();
    assert_eq!(r.code, 1, "{r}");
    assert_eq!(v["notes_covered_by_checkpoint"], 0, "{r}");
    assert!(v["note_lines"].as_u64().unwrap() > 0, "{r}");
    assert!(r.stdout.contains("the note was copied or moved"), "{r}");
}

#[test]
fn a_forged_receipt_appended_after_the_checkpoint_is_caught() {
    let fx = checkpointed();
    let ada = writer(&fx.ada);
    fx.ada.receipt_ok(&fx.repo, &["run", "test"]); // #2, honest
    let honest_tip = fx.tip(&ada);
    let honest = fx.receipt_at(&honest_tip);
    // #3: #2's body, edited, linked correctly, with #2's signature
    let mut v: Value = serde_json::from_slice(honest.bytes()).unwrap();
    v["receipt"]["chain"]["index"] = 3.into();
    v["receipt"]["chain"]["prev"] = honest.id().into();
    v["receipt"]["result"]["duration_ms"] = 1.into(); // any change breaks the signature
    fx.append_raw(&ada, &canon::to_canonical(&v).unwrap());
    let (r, v) = fx.verify();
    assert_finding(&r, &v, "signature", &ada, Some(3), "signature");
    assert_eq!(v["receipts"], 2, "#2 and #3 are checked: {r}");
    assert_eq!(v["covered_by_checkpoint"], 2, "{r}");
    assert_eq!(Fx::findings(&v).len(), 1, "nothing else is flagged: {r}");
    assert_eq!(v["checkpoint_written"], false, "{r}");
}

#[test]
fn a_receipt_appended_after_the_checkpoint_that_skips_the_checkpointed_tip_is_caught() {
    // Signed by Ada's real key, so only the link to the checkpointed tip (which the
    // incremental walk does not re-read as part of the range) can catch it.
    let fx = checkpointed();
    let ada = writer(&fx.ada);
    let tip = fx.receipt_at(&fx.tip(&ada));
    let root = fx.git(&[
        "rev-list",
        "--max-parents=0",
        &format!("refs/receipts/{ada}"),
    ]);
    let root = fx.receipt_at(&root);
    let mut body = tip.body().clone();
    body.chain.index = 2;
    body.chain.prev = Some(root.id().to_owned()); // names #0, not the tip #1
    let forged = Receipt::sign(body, &key(&fx.ada)).unwrap();
    fx.append_raw(&ada, forged.bytes());
    let (r, v) = fx.verify();
    assert_finding(
        &r,
        &v,
        "link",
        &ada,
        Some(2),
        &format!(
            "prev is {}, but the receipt before it is {}",
            root.id(),
            tip.id()
        ),
    );
    assert_eq!(v["receipts"], 1, "{r}");
    assert_eq!(Fx::findings(&v).len(), 1, "nothing else is flagged: {r}");
}

#[test]
fn a_chain_rewritten_below_the_checkpoint_is_caught_and_verified_whole() {
    let fx = checkpointed();
    let ada = writer(&fx.ada);
    let old_tip = fx.tip(&ada);
    // drop #1 and write another #1 in its place: a valid chain, and not the one
    // the checkpoint recorded
    fx.git(&[
        "update-ref",
        &format!("refs/receipts/{ada}"),
        &format!("{old_tip}~1"),
    ]);
    fx.ada.receipt_ok(&fx.repo, &["run", "test"]);
    let (r, v) = fx.verify();
    assert_finding(
        &r,
        &v,
        "checkpoint",
        &ada,
        None,
        &format!("chain no longer descends from {old_tip}, its tip at the checkpoint"),
    );
    assert_eq!(
        v["receipts"], 2,
        "the rewritten chain is checked whole: {r}"
    );
    assert_eq!(v["covered_by_checkpoint"], 0, "{r}");
    assert_eq!(Fx::findings(&v).len(), 1, "{r}");
}

#[test]
fn a_chain_absent_from_the_checkpoint_is_verified_whole() {
    let fx = checkpointed();
    let bob = writer(&fx.bob);
    fx.bob.receipt_ok(&fx.repo, &["run", "test"]);
    fx.bob.receipt_ok(&fx.repo, &["run", "docs"]);
    let (r, v) = fx.verify();
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(v["receipts"], 2, "Bob's two, and nothing of Ada's: {r}");
    assert_eq!(v["covered_by_checkpoint"], 2, "Ada's two: {r}");
    // A chain the checkpoint does not know is checked from its root: a forged root
    // is caught even though Bob's chain never was checkpointed.
    let new_cp: Value = serde_json::from_slice(&std::fs::read(&fx.cp).unwrap()).unwrap();
    assert!(
        new_cp["chains"][&bob].is_string(),
        "now it knows Bob's: {new_cp}"
    );
    let carol = Env::new();
    carol.receipt_ok(&fx.repo, &["key", "generate"]);
    carol.receipt_ok(&fx.repo, &["run", "test"]);
    let (r, v) = fx.verify();
    // checked (its root read and its signature tried), and set aside: an untrusted
    // chain counts for nothing and is a notice, not a finding
    assert_eq!(r.code, 0, "{r}");
    let aside = v["untrusted"].as_array().unwrap();
    assert_eq!(aside.len(), 1, "{r}");
    assert_eq!(aside[0]["chain"], writer(&carol).as_str(), "{r}");
    assert_eq!(aside[0]["index"], 0, "{r}");
    assert!(
        aside[0]["reason"]
            .as_str()
            .unwrap()
            .contains("not a trusted key"),
        "{r}"
    );
    assert_eq!(v["receipts"], 1, "{r}");
}

#[test]
fn a_checkpoint_of_an_unknown_version_is_refused_with_a_hint() {
    let fx = checkpointed();
    let mut cp: Value = serde_json::from_slice(&std::fs::read(&fx.cp).unwrap()).unwrap();
    cp["version"] = 9.into();
    std::fs::write(&fx.cp, serde_json::to_vec(&cp).unwrap()).unwrap();
    let r = fx.verify_text();
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("has version 9") && r.stderr.contains("hint:"),
        "{r}"
    );
}

#[test]
fn a_key_revoked_on_main_after_the_checkpoint_reaches_the_receipts_it_covers() {
    // A checkpoint vouches only under the trust it was written with: a revocation
    // must not be skipped by the incremental walk.
    let fx = checkpointed();
    let ada = writer(&fx.ada);
    let contract = std::fs::read_to_string(fx.repo.join(".gitreceipts")).unwrap();
    let revoked = contract.replace("[signer \"ada\"]\n", "[signer \"ada\"]\n\trevoked = true\n");
    assert_ne!(revoked, contract);
    std::fs::write(fx.repo.join(".gitreceipts"), revoked).unwrap();
    fx.ada
        .git_ok(&fx.repo, &["commit", "-q", "-am", "revoke ada"]);
    let (r, v) = fx.verify();
    assert_finding(&r, &v, "revoked", &ada, Some(0), "revoked");
    assert_finding(&r, &v, "revoked", &ada, Some(1), "revoked");
    assert_eq!(v["receipts"], 2, "every receipt is checked again: {r}");
    assert_eq!(v["covered_by_checkpoint"], 0, "{r}");
    assert!(
        r.stderr.contains("was written against another trust set"),
        "{r}"
    );
}

#[test]
fn a_version_1_checkpoint_is_read_its_tips_held_and_every_receipt_checked() {
    let fx = checkpointed();
    let ada = writer(&fx.ada);
    let tip = fx.tip(&ada);
    std::fs::write(
        &fx.cp,
        format!("{{\"version\":1,\"chains\":{{\"{ada}\":\"{tip}\"}}}}"),
    )
    .unwrap();
    fx.ada.receipt_ok(&fx.repo, &["run", "test"]);
    let (r, v) = fx.verify();
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(v["receipts"], 3, "no trust recorded: all checked: {r}");
    assert_eq!(v["covered_by_checkpoint"], 0, "{r}");
    assert!(r.stderr.contains("is version 1"), "{r}");
    // the clean run wrote the current version, which the next run relies on
    let cp: Value = serde_json::from_slice(&std::fs::read(&fx.cp).unwrap()).unwrap();
    assert_eq!(cp["version"], 3, "{cp}");
    assert!(cp["trust"].as_str().unwrap().starts_with("sha256:"), "{cp}");
    let (r, v) = fx.verify();
    assert_eq!(
        (v["receipts"].as_u64(), v["covered_by_checkpoint"].as_u64()),
        (Some(0), Some(3)),
        "{r}"
    );
    // and a version 1 tip is still held: roll the chain back below it
    std::fs::write(
        &fx.cp,
        format!("{{\"version\":1,\"chains\":{{\"{ada}\":\"{tip}\"}}}}"),
    )
    .unwrap();
    fx.git(&[
        "update-ref",
        &format!("refs/receipts/{ada}"),
        &format!("{tip}~1"),
    ]);
    let (r, v) = fx.verify();
    assert_finding(
        &r,
        &v,
        "checkpoint",
        &ada,
        None,
        &format!("chain no longer descends from {tip}"),
    );
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// `None` (said loudly) where this machine lets no test mount one; under CI
    /// that is a failure, never a silent pass.
    fn mount(dir: PathBuf, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(&dir).unwrap();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .output()
            .expect("mount");
        if out.status.success() {
            return Some(Tmpfs(dir));
        }
        let why = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set and a tmpfs cannot be mounted here (needs root): {why}"
        );
        eprintln!("SKIPPED: cannot mount a tmpfs ({why})");
        None
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A checkpoint write on a full disk fails with the disk's error, exit 2, and
/// leaves the old checkpoint as it was and no temporary file beside it (issue
/// 25: a `.tmp` was left behind); once there is room the retry writes it.
#[test]
fn a_checkpoint_write_on_a_full_disk_keeps_the_old_one_and_leaves_no_temporary_file() {
    let fx = checkpointed();
    let Some(disk) = Tmpfs::mount(fx.ada.path("full"), "64k") else {
        return;
    };
    let cp = disk.0.join("checkpoint.json");
    std::fs::copy(&fx.cp, &cp).unwrap();
    let old = std::fs::read(&cp).unwrap();
    // fill the disk to the last byte
    let mut fill = std::fs::File::create(disk.0.join("fill")).unwrap();
    let chunk = vec![0u8; 4096];
    while std::io::Write::write_all(&mut fill, &chunk).is_ok() {}
    while std::io::Write::write_all(&mut fill, &chunk[..1]).is_ok() {}
    drop(fill);
    fx.ada.receipt_ok(&fx.repo, &["run", "test"]);
    let args = [
        "verify",
        "--trust",
        "main",
        "--checkpoint",
        cp.to_str().unwrap(),
    ];
    let r = fx.ada.receipt(&fx.repo, &args);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("writing checkpoint"), "{r}");
    assert!(
        r.stderr.contains("No space left on device"),
        "names the disk: {r}"
    );
    assert_eq!(
        std::fs::read(&cp).unwrap(),
        old,
        "the old checkpoint is intact"
    );
    let mut left: Vec<String> = std::fs::read_dir(&disk.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["checkpoint.json", "fill"],
        "no temporary file is left"
    );
    std::fs::remove_file(disk.0.join("fill")).unwrap();
    let r = fx.ada.receipt(&fx.repo, &args);
    assert_eq!(r.code, 0, "{r}");
    assert_ne!(
        std::fs::read(&cp).unwrap(),
        old,
        "the retry records the new tips"
    );
}
