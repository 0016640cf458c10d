//! Tampering with receipts, chains and notes is caught by `git receipt verify`.
//!
//! Every test builds the same honest repository: two writers, Ada and Bob (each an
//! Env with its own HOME and key), both declared as `[signer]` in `.gitreceipts` on
//! `main`, with receipts on two commits. It asserts that `git receipt verify --json
//! --trust main` is clean, applies ONE attack with stock git plumbing (or with the
//! library, to re-sign a body), and asserts exit 1 and a finding of the specific
//! `kind` that names the chain, the receipt and what is wrong. It also asserts that
//! nothing else is flagged: the untouched writer's chain stays clean, so a finding
//! is about the attack and not noise.
//!
//! A forger here is thorough: when a chain is rewritten, the notes are rewritten to
//! name the new chain commits (and the new receipt ids), exactly as the tool would
//! have written them, so that only the check under test can catch the forgery.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::common::{Env, Run};
use base64::Engine as _;
use git_receipt::canon;
use git_receipt::receipt::{Body, Receipt, Unverified, writer_id};
use git_receipt::sign::SigningKey;
use serde_json::{Value, json};

const ADA: usize = 0;
const BOB: usize = 1;

/// The honest repository.
///
/// Commits on `main`: `initial`, `add readme` (R), `trust ada and bob` (C1, adds the
/// two `[signer]`s), `more code` (C2, HEAD). Ada's chain: #0 test on C1, #1 docs on
/// C1, #2 test on C2. Bob's chain: #0 test on C2, #1 docs on C2.
struct Fx {
    /// Ada and Bob.
    envs: [Env; 2],
    /// A verifier with a fresh HOME and no key (CI).
    ci: Env,
    repo: PathBuf,
    writers: [String; 2],
    /// Public key lines, `ssh-ed25519 AAAA...`.
    keys: [String; 2],
    /// Chain commits, oldest (index 0) first.
    chains: [Vec<String>; 2],
    readme: String,
    c1: String,
    c2: String,
}

/// A chain entry to write: its tree, any parents beyond the previous entry, and the
/// old chain commit it stands for (whose note lines follow it).
struct Entry {
    tree: String,
    extra_parents: Vec<String>,
    replaces: Option<String>,
}

fn key_path(env: &Env) -> PathBuf {
    env.home.join(".config/git-receipt/signing_key")
}

fn honest() -> Fx {
    let envs = [Env::new(), Env::new()];
    let ci = Env::new();
    let repo = envs[ADA].fixture_repo("make_basic_repo.sh", "repo");
    let mut keys = [String::new(), String::new()];
    for (i, env) in envs.iter().enumerate() {
        env.receipt_ok(&repo, &["key", "generate"]);
        keys[i] = env
            .receipt_ok(&repo, &["key", "show"])
            .stdout
            .trim()
            .to_owned();
    }
    let ada = &envs[ADA];
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str(&format!(
        "[signer \"ada\"]\n\tkey = {}\n[signer \"bob\"]\n\tkey = {}\n",
        keys[ADA], keys[BOB]
    ));
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    ada.git_ok(&repo, &["commit", "-q", "-am", "trust ada and bob"]);
    ada.receipt_ok(&repo, &["run", "test"]);
    ada.receipt_ok(&repo, &["run", "docs"]);
    std::fs::write(repo.join("src/extra.rs"), "pub fn extra() {}\n").unwrap();
    ada.git_ok(&repo, &["add", "src/extra.rs"]);
    ada.git_ok(&repo, &["commit", "-q", "-m", "more code"]);
    ada.receipt_ok(&repo, &["run", "test"]);
    envs[BOB].receipt_ok(&repo, &["run", "test"]);
    envs[BOB].receipt_ok(&repo, &["run", "docs"]);

    let writers = [0, 1].map(|i| {
        let key = SigningKey::load(&key_path(&envs[i])).unwrap();
        writer_id(key.public(), "default")
    });
    let chains = [0, 1].map(|i| {
        let mut c: Vec<String> = ada
            .git_ok(
                &repo,
                &["rev-list", &format!("refs/receipts/{}", writers[i])],
            )
            .lines()
            .map(str::to_owned)
            .collect();
        c.reverse();
        c
    });
    assert_eq!((chains[ADA].len(), chains[BOB].len()), (3, 2));
    let rev = |r: &str| ada.git_ok(&repo, &["rev-parse", r]);
    let fx = Fx {
        readme: rev("HEAD~2"),
        c1: rev("HEAD~1"),
        c2: rev("HEAD"),
        envs,
        ci,
        repo,
        writers,
        keys,
        chains,
    };
    // Before any attack: everything verifies, against the signers on main.
    let (r, v) = fx.verify_main();
    fx.assert_clean(&r, &v);
    assert_eq!(v["chains"], 2, "{r}");
    assert_eq!(v["receipts"], 5, "{r}");
    fx
}

impl Fx {
    fn git(&self, args: &[&str]) -> String {
        self.envs[ADA].git_ok(&self.repo, args)
    }

    fn chain_ref(&self, w: usize) -> String {
        format!("refs/receipts/{}", self.writers[w])
    }

    fn notes_ref(&self, w: usize) -> String {
        format!("refs/notes/receipts/{}", self.writers[w])
    }

    fn signing_key(&self, w: usize) -> SigningKey {
        SigningKey::load(&key_path(&self.envs[w])).unwrap()
    }

    fn fingerprint(&self, w: usize) -> String {
        self.signing_key(w).public().fingerprint()
    }

    /// `git receipt verify --json ARGS`, run by the CI env; the report parsed.
    fn verify(&self, args: &[&str]) -> (Run, Value) {
        let mut argv = vec!["verify", "--json"];
        argv.extend_from_slice(args);
        let r = self.ci.receipt(&self.repo, &argv);
        let v = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("verify --json prints a report ({e}): {r}"));
        (r, v)
    }

    fn verify_main(&self) -> (Run, Value) {
        self.verify(&["--trust", "main"])
    }

    fn assert_clean(&self, r: &Run, v: &Value) {
        assert_eq!(r.code, 0, "verify must be clean: {r}");
        assert_eq!(v["ok"], true, "{r}");
        assert_eq!(v["findings"], json!([]), "{r}");
    }

    /// Exit 1, and a finding of `kind` about `chain` whose reason contains every
    /// needle. Every finding must concern `chain` and be of one of `allowed` kinds
    /// (which always includes `kind`). Returns the finding.
    fn caught(
        &self,
        (r, v): &(Run, Value),
        chain: &str,
        kind: &str,
        needles: &[&str],
        allowed: &[&str],
    ) -> Value {
        assert_eq!(r.code, 1, "verify must fail: {r}");
        assert_eq!(v["ok"], false, "{r}");
        let findings = v["findings"].as_array().unwrap();
        for f in findings {
            assert_eq!(f["chain"], chain, "only the attacked chain is flagged: {r}");
            assert!(
                f["kind"] == kind || allowed.iter().any(|k| f["kind"] == *k),
                "unexpected finding {f}: {r}"
            );
        }
        findings
            .iter()
            .find(|f| {
                f["kind"] == kind
                    && needles
                        .iter()
                        .all(|n| f["reason"].as_str().unwrap().contains(n))
            })
            .unwrap_or_else(|| panic!("no [{kind}] finding saying {needles:?}: {r}"))
            .clone()
    }

    /// The one kind of finding: a signature of writer `w` that does not verify.
    fn bad_signature(&self, report: &(Run, Value), w: usize) -> Value {
        self.caught(
            report,
            &self.writers[w],
            "signature",
            &[&format!(
                "signature does not verify against key {}",
                self.fingerprint(w)
            )],
            &[],
        )
    }

    fn bytes(&self, w: usize, i: usize) -> Vec<u8> {
        self.envs[ADA].receipt_bytes(&self.repo, &self.chains[w][i])
    }

    fn receipt(&self, w: usize, i: usize) -> Receipt<Unverified> {
        Receipt::parse(&self.bytes(w, i)).unwrap()
    }

    fn id(&self, w: usize, i: usize) -> String {
        self.receipt(w, i).id().to_owned()
    }

    fn json(&self, w: usize, i: usize) -> Value {
        serde_json::from_slice(&self.bytes(w, i)).unwrap()
    }

    /// The id of the receipt a chain commit holds, when it still parses.
    fn id_at(&self, commit: &str) -> Option<String> {
        let r = self.envs[ADA].git(
            &self.repo,
            &["cat-file", "blob", &format!("{commit}:receipt.json")],
        );
        if r.code != 0 {
            return None;
        }
        Receipt::parse(&r.raw_stdout)
            .ok()
            .map(|r| r.id().to_owned())
    }

    fn blob(&self, bytes: &[u8]) -> String {
        self.envs[ADA].git_input(&self.repo, &["hash-object", "-w", "--stdin"], bytes)
    }

    /// The tree of chain commit `commit` with its `receipt.json` entry replaced by
    /// `entry` (`<mode> <type> <oid>`).
    fn tree_with_receipt(&self, commit: &str, entry: &str) -> String {
        let mut lines: Vec<String> = self
            .git(&["ls-tree", commit])
            .lines()
            .map(|l| {
                if l.ends_with("\treceipt.json") {
                    format!("{entry}\treceipt.json")
                } else {
                    l.to_owned()
                }
            })
            .collect();
        lines.push(String::new());
        self.envs[ADA].git_input(&self.repo, &["mktree"], lines.join("\n").as_bytes())
    }

    /// The chain as it is, entry by entry.
    fn entries(&self, w: usize) -> Vec<Entry> {
        self.chains[w]
            .iter()
            .map(|c| Entry {
                tree: self.git(&["rev-parse", &format!("{c}^{{tree}}")]),
                extra_parents: Vec::new(),
                replaces: Some(c.clone()),
            })
            .collect()
    }

    /// Write `entries` as new chain commits, each on the previous one, move the chain
    /// ref onto the last by compare-and-swap, and rewrite the notes to follow.
    fn rewrite(&mut self, w: usize, entries: Vec<Entry>) {
        let mut new_chain: Vec<String> = Vec::new();
        let mut moved = HashMap::new();
        for e in entries {
            let mut args = vec![
                "commit-tree".to_owned(),
                e.tree,
                "-m".into(),
                "forged".into(),
            ];
            for p in new_chain.last().into_iter().chain(&e.extra_parents) {
                args.extend(["-p".to_owned(), p.clone()]);
            }
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let commit = self.git(&argv);
            if let Some(old) = e.replaces {
                moved.insert(old, commit.clone());
            }
            new_chain.push(commit);
        }
        let old_tip = self.chains[w].last().unwrap().clone();
        self.git(&[
            "update-ref",
            &self.chain_ref(w),
            new_chain.last().unwrap(),
            &old_tip,
        ]);
        self.renote(w, &moved);
        self.chains[w] = new_chain;
    }

    /// Make every note line of writer `w` that names an old chain commit name its
    /// replacement (and the id it holds now), or drop the line when it has none.
    fn renote(&self, w: usize, moved: &HashMap<String, String>) {
        let nref = format!("--ref={}", self.notes_ref(w));
        for listed in self.git(&["notes", &nref, "list"]).lines() {
            let object = listed.split(' ').nth(1).unwrap();
            let text = self.git(&["notes", &nref, "show", object]);
            let mut out = String::new();
            for line in text.lines() {
                let mut f: Vec<String> = line.split(' ').map(str::to_owned).collect();
                if self.chains[w].contains(&f[1]) {
                    let Some(new) = moved.get(&f[1]) else {
                        continue;
                    };
                    if let Some(id) = self.id_at(new) {
                        f[0] = id;
                    }
                    f[1] = new.clone();
                }
                out.push_str(&f.join(" "));
                out.push('\n');
            }
            if out.trim_end() == text {
                continue;
            }
            if out.is_empty() {
                self.git(&["notes", &nref, "remove", object]);
            } else {
                self.set_note(w, object, &out);
            }
        }
    }

    /// Overwrite the note on `object` in writer `w`'s notes, as a person would.
    fn set_note(&self, w: usize, object: &str, text: &str) {
        let file = self.envs[ADA].path("note.txt");
        std::fs::write(&file, text).unwrap();
        self.git(&[
            "notes",
            &format!("--ref={}", self.notes_ref(w)),
            "add",
            "-f",
            "-F",
            file.to_str().unwrap(),
            object,
        ]);
    }

    /// Replace the stored bytes of entry `i`, keeping the rest of the chain.
    fn replace_bytes(&mut self, w: usize, i: usize, bytes: &[u8]) {
        let blob = self.blob(bytes);
        self.replace_receipt_entry(w, i, &format!("100644 blob {blob}"));
    }

    /// Replace the `receipt.json` tree entry of entry `i`.
    fn replace_receipt_entry(&mut self, w: usize, i: usize, entry: &str) {
        let mut entries = self.entries(w);
        entries[i].tree = self.tree_with_receipt(&self.chains[w][i], entry);
        self.rewrite(w, entries);
    }

    /// Replace entry `i` by a canonical rendering of `v` (its signature untouched).
    fn replace_json(&mut self, w: usize, i: usize, v: &Value) {
        self.replace_bytes(w, i, &canon::to_canonical(v).unwrap());
    }

    /// Edit entry `i`'s body and sign it again with the writer's real key: a forgery
    /// by someone who holds the key, which only the chain checks can catch.
    fn resign(&mut self, w: usize, i: usize, edit: impl FnOnce(&mut Body)) -> String {
        let mut body = self.receipt(w, i).body().clone();
        edit(&mut body);
        let r = Receipt::sign(body, &self.signing_key(w)).unwrap();
        self.replace_bytes(w, i, r.bytes());
        r.id().to_owned()
    }
}

// ---------------------------------------------------------------------------------
// The stored bytes
// ---------------------------------------------------------------------------------

#[test]
fn one_byte_changed_in_a_receipt_body_breaks_its_signature() {
    let mut fx = honest();
    let mut bytes = fx.bytes(ADA, 2);
    let at = bytes
        .windows(9)
        .position(|w| w == b"tests-ran")
        .expect("the stdout tail is in the body");
    bytes[at + 6] = b'R'; // tests-Ran: still canonical, still the v1 schema
    fx.replace_bytes(ADA, 2, &bytes);
    let id = fx
        .id_at(&fx.chains[ADA][2])
        .expect("still a well-formed receipt");
    let f = fx.bad_signature(&fx.verify_main(), ADA);
    assert_eq!(f["index"], 2);
    assert_eq!(f["id"], id.as_str());
    assert_eq!(f["commit"], fx.chains[ADA][2].as_str());
}

/// `verify` checks the signatures of a long chain together (a batch, from 256 on):
/// one forged among 300 honest ones is still the one finding, at its index, and
/// the rest verify.
#[test]
fn a_broken_signature_among_300_honest_ones_is_the_one_finding() {
    let mut fx = honest();
    let store = git_receipt::store::Store::open(&fx.repo).unwrap();
    let key = fx.signing_key(ADA);
    let template = fx.receipt(ADA, 2).body().clone();
    for _ in 0..300 {
        store
            .append(&fx.writers[ADA], &key, &[], |index, prev| {
                let mut body = template.clone();
                body.chain.index = index;
                body.chain.prev = prev;
                body
            })
            .unwrap();
    }
    fx.chains[ADA] = fx
        .git(&["rev-list", "--reverse", &fx.chain_ref(ADA)])
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(fx.chains[ADA].len(), 303);
    let (r, v) = fx.verify_main();
    fx.assert_clean(&r, &v);
    assert_eq!(v["receipts"], 305, "{r}");

    // Ada's own signature of receipt #0 on receipt #150: the body (and so the id
    // the next receipt links to) unchanged, the signature valid, but for other bytes
    let donor = fx.json(ADA, 0);
    let mut v = fx.json(ADA, 150);
    v["signature"] = donor["signature"].clone();
    fx.replace_json(ADA, 150, &v);
    let report = fx.verify_main();
    let f = fx.bad_signature(&report, ADA);
    assert_eq!(f["index"], 150);
    assert_eq!(f["id"], fx.id(ADA, 150).as_str());
    assert_eq!(
        report.1["findings"].as_array().unwrap().len(),
        1,
        "{}",
        report.0
    );
    assert_eq!(report.1["receipts"], 305, "{}", report.0);
}

#[test]
fn a_receipt_re_signed_by_a_key_outside_the_trust_set_is_untrusted() {
    let mut fx = honest();
    let original = fx.receipt(ADA, 2);
    let mallory = SigningKey::from_seed(&[7; 32]);
    let forged = Receipt::sign(original.body().clone(), &mallory).unwrap();
    assert_eq!(forged.id(), original.id(), "same body, same id");
    fx.replace_bytes(ADA, 2, forged.bytes());
    let report = fx.verify_main();
    let f = fx.caught(
        &report,
        &fx.writers[ADA],
        "untrusted",
        &[&format!(
            "signed by {}, which is not a trusted key",
            mallory.public().fingerprint()
        )],
        &["writer"],
    );
    assert_eq!(f["id"], original.id());
    assert_eq!(f["index"], 2);
    // and the chain's writer id names Ada's key, not Mallory's
    fx.caught(
        &report,
        &fx.writers[ADA],
        "writer",
        &["names another key"],
        &["untrusted"],
    );
}

#[test]
fn a_valid_signature_over_other_bytes_does_not_verify() {
    let mut fx = honest();
    // Ada's own signature, from her receipt #0, moved onto her receipt #2
    let donor = fx.json(ADA, 0);
    let mut v = fx.json(ADA, 2);
    v["signature"] = donor["signature"].clone();
    fx.replace_json(ADA, 2, &v);
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "signature",
        &[
            "signature does not verify against key",
            &fx.fingerprint(ADA),
        ],
        &[],
    );
    assert_eq!(f["index"], 2);
    assert_eq!(f["id"], fx.id(ADA, 2).as_str());
}

#[test]
fn a_receipt_re_serialised_as_non_canonical_json_is_refused() {
    let mut fx = honest();
    let pretty = serde_json::to_vec_pretty(&fx.json(ADA, 2)).unwrap();
    fx.replace_bytes(ADA, 2, &pretty);
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "format",
        &["invalid receipt: ", "not in RFC 8785 canonical form"],
        // its note lines now name a receipt that no verified chain holds
        &["note"],
    );
    assert_eq!(f["commit"], fx.chains[ADA][2].as_str());
}

#[test]
fn a_duplicate_member_is_refused() {
    let mut fx = honest();
    let text = String::from_utf8(fx.bytes(ADA, 2)).unwrap();
    let forged = text.replacen("\"detail\":\"\",", "\"detail\":\"\",\"detail\":\"\",", 1);
    assert_ne!(forged, text);
    fx.replace_bytes(ADA, 2, forged.as_bytes());
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "format",
        &["member \"detail\" appears twice in the object at \"/receipt/result\""],
        &["note"],
    );
    assert_eq!(f["commit"], fx.chains[ADA][2].as_str());
}

#[test]
fn an_unknown_member_is_refused() {
    let mut fx = honest();
    let mut v = fx.json(ADA, 2);
    v["receipt"]["subject"]["approved_by"] = Value::from("ada");
    fx.replace_json(ADA, 2, &v);
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "format",
        &["unknown member \"approved_by\" in \"/receipt/subject\""],
        &["note"],
    );
    assert_eq!(f["commit"], fx.chains[ADA][2].as_str());
}

#[test]
fn an_integer_beyond_2_pow_53_minus_1_is_refused() {
    let mut fx = honest();
    let text = String::from_utf8(fx.bytes(ADA, 2)).unwrap();
    let duration = fx.json(ADA, 2)["receipt"]["result"]["duration_ms"].clone();
    let forged = text.replacen(
        &format!("\"duration_ms\":{duration},"),
        "\"duration_ms\":9007199254740993,",
        1,
    );
    assert_ne!(forged, text);
    fx.replace_bytes(ADA, 2, forged.as_bytes());
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "format",
        &["integer 9007199254740993 at \"/receipt/result/duration_ms\" is outside"],
        &["note"],
    );
    assert_eq!(f["commit"], fx.chains[ADA][2].as_str());
}

#[test]
fn an_oversized_receipt_is_refused_unread() {
    let mut fx = honest();
    let mut v = fx.json(ADA, 2);
    v["receipt"]["result"]["stdout_tail"] = Value::from("x".repeat(300 * 1024));
    fx.replace_json(ADA, 2, &v);
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "shape",
        &["receipt.json is ", "bytes, over the 262144 byte limit"],
        &["note"],
    );
    assert_eq!(f["commit"], fx.chains[ADA][2].as_str());
}

// ---------------------------------------------------------------------------------
// Signatures and keys
// ---------------------------------------------------------------------------------

/// The Ed25519 group order L, little-endian.
const L: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
];

/// `R || S` made `R || S+L`: the same point equation holds, so a verifier that
/// reduces S modulo L accepts it; a strict one refuses S >= L.
fn malleate(sig: [u8; 64]) -> [u8; 64] {
    let mut out = sig;
    let mut carry = 0u16;
    for i in 0..32 {
        let sum = sig[32 + i] as u16 + L[i] as u16 + carry;
        out[32 + i] = sum as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0, "S + L fits in 256 bits");
    out
}

#[test]
fn a_signature_valid_only_under_non_strict_ed25519_is_refused() {
    let mut fx = honest();
    let original = fx.receipt(ADA, 2);
    let malleated = malleate(original.raw_signature());
    assert_ne!(malleated, original.raw_signature());

    // Witness that it is a real signature for lax verifiers: OpenSSH's ssh-keygen,
    // whose Ed25519 reduces S, accepts the malleated one for the same message.
    let dir = fx.envs[ADA].path("sshsig");
    std::fs::create_dir_all(&dir).unwrap();
    let key = fx.signing_key(ADA);
    std::fs::write(dir.join("msg"), original.body_bytes()).unwrap();
    std::fs::write(
        dir.join("msg.sig"),
        git_receipt::sign::armor_sshsig(key.public(), &malleated),
    )
    .unwrap();
    std::fs::write(
        dir.join("allowed"),
        format!("ada namespaces=\"git-receipt\" {}\n", fx.keys[ADA]),
    )
    .unwrap();
    let lax = std::process::Command::new("sh")
        .current_dir(&dir)
        .env("HOME", &dir)
        .args([
            "-c",
            "ssh-keygen -Y verify -f allowed -I ada -n git-receipt -s msg.sig < msg",
        ])
        .output()
        .expect("ssh-keygen runs");
    assert!(
        lax.status.success(),
        "ssh-keygen accepts S + L (non-strict): {}",
        String::from_utf8_lossy(&lax.stderr)
    );

    let mut v = fx.json(ADA, 2);
    v["signature"]["sig"] =
        Value::from(base64::engine::general_purpose::STANDARD.encode(malleated));
    fx.replace_json(ADA, 2, &v);
    assert_eq!(
        fx.id_at(&fx.chains[ADA][2]).as_deref(),
        Some(original.id()),
        "the body, and so the id, is unchanged: only the signature encoding differs"
    );
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "signature",
        &[
            "signature does not verify against key",
            &fx.fingerprint(ADA),
        ],
        &[],
    );
    assert_eq!(f["id"], original.id());
}

#[test]
fn a_revoked_key_vouches_for_nothing() {
    let fx = honest();
    fx.git(&["config", "-f", ".gitreceipts", "signer.bob.revoked", "true"]);
    fx.git(&["commit", "-q", "-am", "revoke bob"]);
    let report = fx.verify_main();
    let f = fx.caught(
        &report,
        &fx.writers[BOB],
        "revoked",
        &[&format!(
            "key {} is revoked (signer \"bob\" in .gitreceipts)",
            fx.fingerprint(BOB)
        )],
        &[],
    );
    assert!(f["id"].is_string(), "{f}");
    let flagged: Vec<&str> = report.1["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["commit"].as_str().unwrap())
        .collect();
    assert_eq!(
        flagged,
        [&fx.chains[BOB][1], &fx.chains[BOB][0]],
        "both of Bob's receipts, tip first: {}",
        report.0
    );
    // Trust is read at the revision named: before the revocation, Bob was trusted.
    let (r, v) = fx.verify(&["--trust", "main~1"]);
    fx.assert_clean(&r, &v);
    // `log` (which shares the one trust decision) no longer calls Bob's receipts verified
    let r = fx.ci.receipt(&fx.repo, &["log", "--json"]);
    let log: Value = serde_json::from_str(&r.stdout).unwrap();
    for entry in log.as_array().unwrap() {
        let expected = if entry["writer"] == fx.writers[BOB].as_str() {
            "untrusted"
        } else {
            "verified"
        };
        assert_eq!(entry["signature_status"], expected, "{entry}");
        if expected == "untrusted" {
            assert!(
                entry["signature_detail"]
                    .as_str()
                    .unwrap()
                    .contains("is revoked"),
                "{entry}"
            );
        }
    }
}

#[test]
fn a_revocation_on_main_applies_at_once_to_a_branch_forked_before_it() {
    let fx = honest();
    fx.git(&["branch", "feature"]);
    fx.git(&["config", "-f", ".gitreceipts", "signer.bob.revoked", "true"]);
    fx.git(&["commit", "-q", "-am", "revoke bob"]);
    fx.git(&["checkout", "-q", "feature"]);
    // Without --trust, signers come from HEAD's trust root on main (the commit
    // it forked from), which predates the revocation; the revocation on main still applies: revoking
    // only ever removes trust, so it cannot let a change trust itself.
    let f = fx.caught(
        &fx.verify(&[]),
        &fx.writers[BOB],
        "revoked",
        &[&format!("key {} is revoked", fx.fingerprint(BOB))],
        &[],
    );
    assert!(f["id"].is_string(), "{f}");
}

#[test]
fn a_key_declared_twice_is_held_to_the_narrowest_window() {
    let fx = honest();
    // A second [signer] for Ada's key, after the first, that retires it in 2020.
    fx.git(&[
        "config",
        "-f",
        ".gitreceipts",
        "signer.ada-old.key",
        &fx.keys[ADA],
    ]);
    fx.git(&[
        "config",
        "-f",
        ".gitreceipts",
        "signer.ada-old.valid-before",
        "2020-01-01",
    ]);
    fx.git(&["commit", "-q", "-am", "retire ada's key"]);
    fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "window",
        &["expired at 2020-01-01T00:00:00.000Z"],
        &[],
    );
}

#[test]
fn a_receipt_signed_after_its_key_expired_is_refused() {
    let fx = honest();
    fx.git(&[
        "config",
        "-f",
        ".gitreceipts",
        "signer.ada.valid-before",
        "2020-01-01",
    ]);
    fx.git(&["commit", "-q", "-am", "ada's key expired in 2020"]);
    let report = fx.verify_main();
    let started = fx.json(ADA, 2)["receipt"]["result"]["started_at"]
        .as_str()
        .unwrap()
        .to_owned();
    let f = fx.caught(
        &report,
        &fx.writers[ADA],
        "window",
        &[&format!(
            "signed at {started} but key {} expired at 2020-01-01T00:00:00.000Z",
            fx.fingerprint(ADA)
        )],
        &[],
    );
    assert_eq!(f["index"], 2);
    assert_eq!(report.1["findings"].as_array().unwrap().len(), 3);
}

#[test]
fn a_receipt_signed_before_its_key_became_valid_is_refused() {
    let fx = honest();
    fx.git(&[
        "config",
        "-f",
        ".gitreceipts",
        "signer.bob.valid-after",
        "2100-01-01",
    ]);
    fx.git(&["commit", "-q", "-am", "bob's key is for later"]);
    fx.caught(
        &fx.verify_main(),
        &fx.writers[BOB],
        "window",
        &["is valid only after 2100-01-01T00:00:00.000Z"],
        &[],
    );
}

/// An allowed_signers file for Ada and Bob, with `bob_options` on Bob's line.
fn allowed_signers(fx: &Fx, bob_options: &str) -> PathBuf {
    let file = fx.ci.path("allowed_signers");
    std::fs::write(
        &file,
        format!(
            "# who may sign receipts\nada@example.org namespaces=\"git-receipt\" {}\nbob@example.org {bob_options} {}\n",
            fx.keys[ADA], fx.keys[BOB]
        ),
    )
    .unwrap();
    file
}

#[test]
fn allowed_signers_valid_before_expires_a_key() {
    let fx = honest();
    let file = allowed_signers(&fx, "namespaces=\"git-receipt\"");
    let (r, v) = fx.verify(&["--allowed-signers", file.to_str().unwrap()]);
    fx.assert_clean(&r, &v);
    assert!(v["trust"].as_str().unwrap().contains("allowed signers in"));

    let file = allowed_signers(&fx, "namespaces=\"git-receipt\",valid-before=\"20200101\"");
    fx.caught(
        &fx.verify(&["--strict", "--allowed-signers", file.to_str().unwrap()]),
        &fx.writers[BOB],
        "window",
        &[&format!(
            "but key {} expired at 2020-01-01T00:00:00.000Z",
            fx.fingerprint(BOB)
        )],
        &[],
    );
}

#[test]
fn allowed_signers_for_another_namespace_does_not_trust_a_key() {
    let fx = honest();
    // Bob may sign files and git commits with this key, but not receipts.
    let file = allowed_signers(&fx, "namespaces=\"file,git\"");
    fx.caught(
        &fx.verify(&["--strict", "--allowed-signers", file.to_str().unwrap()]),
        &fx.writers[BOB],
        "untrusted",
        &[&format!(
            "signed by {}, which is not a trusted key",
            fx.fingerprint(BOB)
        )],
        &[],
    );
}

#[test]
fn a_signer_added_by_the_change_itself_is_not_trusted_from_main() {
    let fx = honest();
    let carol = Env::new();
    carol.receipt_ok(&fx.repo, &["key", "generate"]);
    let carol_key = carol.receipt_ok(&fx.repo, &["key", "show"]).stdout;
    fx.git(&["checkout", "-q", "-b", "feature"]);
    fx.git(&[
        "config",
        "-f",
        ".gitreceipts",
        "signer.carol.key",
        carol_key.trim(),
    ]);
    fx.git(&["commit", "-q", "-am", "trust me"]);
    carol.receipt_ok(&fx.repo, &["run", "test"]);
    let carol_writer = writer_id(
        SigningKey::load(&key_path(&carol)).unwrap().public(),
        "default",
    );
    // The branch trusts itself...
    let (r, v) = fx.verify(&["--trust", "feature"]);
    fx.assert_clean(&r, &v);
    // ...main does not, and neither does the default trust root (the commit of
    // main's first-parent history HEAD forked from), which is what a verifier without --trust uses.
    for args in [&["--strict", "--trust", "main"][..], &["--strict"]] {
        fx.caught(
            &fx.verify(args),
            &carol_writer,
            "untrusted",
            &["which is not a trusted key"],
            &[],
        );
    }
}

#[test]
fn a_chain_under_a_writer_id_that_names_another_key_is_refused() {
    let fx = honest();
    // Ada's chain and notes, moved under an id derived from Bob's key.
    let bob_hex = fx.writers[BOB].rsplit_once('-').unwrap().1;
    let stolen = format!("laptop-{bob_hex}");
    for (from, to) in [
        (fx.chain_ref(ADA), format!("refs/receipts/{stolen}")),
        (fx.notes_ref(ADA), format!("refs/notes/receipts/{stolen}")),
    ] {
        let tip = fx.git(&["rev-parse", &from]);
        fx.git(&["update-ref", &to, &tip, ""]);
        fx.git(&["update-ref", "-d", &from, &tip]);
    }
    let report = fx.verify_main();
    let f = fx.caught(
        &report,
        &stolen,
        "writer",
        &[&format!(
            "signed by {}, but writer id {stolen} names another key",
            fx.fingerprint(ADA)
        )],
        &[],
    );
    assert!(f["id"].is_string(), "{f}");
    fx.caught(
        &report,
        &stolen,
        "writer",
        &[&format!(
            "names writer {}, but sits in chain {stolen}",
            fx.writers[ADA]
        )],
        &[],
    );
    assert_eq!(report.1["findings"].as_array().unwrap().len(), 6);
}

// ---------------------------------------------------------------------------------
// Links between receipts
// ---------------------------------------------------------------------------------

#[test]
fn a_receipt_removed_from_the_middle_leaves_a_gap() {
    let mut fx = honest();
    let (id0, id1) = (fx.id(ADA, 0), fx.id(ADA, 1));
    let mut entries = fx.entries(ADA);
    entries.remove(1);
    fx.rewrite(ADA, entries);
    let report = fx.verify_main();
    let f = fx.caught(
        &report,
        &fx.writers[ADA],
        "link",
        &["index 2 follows index 0: a receipt is missing, duplicated or reordered"],
        &[],
    );
    assert_eq!(f["index"], 2);
    assert_eq!(f["commit"], fx.chains[ADA][1].as_str());
    fx.caught(
        &report,
        &fx.writers[ADA],
        "link",
        &[&format!(
            "prev is {id1}, but the receipt before it is {id0}"
        )],
        &[],
    );
}

#[test]
fn the_first_receipt_removed_leaves_a_root_that_is_not_index_0() {
    let mut fx = honest();
    let mut entries = fx.entries(ADA);
    entries.remove(0);
    fx.rewrite(ADA, entries);
    fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "link",
        &["is the root of the chain but has index 1; earlier receipts were removed"],
        &[],
    );
}

#[test]
fn two_receipts_swapped_are_out_of_order() {
    let mut fx = honest();
    let mut entries = fx.entries(ADA);
    entries.swap(1, 2);
    fx.rewrite(ADA, entries);
    let report = fx.verify_main();
    fx.caught(
        &report,
        &fx.writers[ADA],
        "link",
        &["index 1 follows index 2"],
        &[],
    );
    fx.caught(
        &report,
        &fx.writers[ADA],
        "link",
        &["index 2 follows index 0"],
        &[],
    );
}

#[test]
fn an_index_gap_in_a_re_signed_receipt_is_caught_by_the_link_check() {
    let mut fx = honest();
    let id = fx.resign(ADA, 2, |b| b.chain.index = 3);
    assert_eq!(fx.id_at(&fx.chains[ADA][2]), Some(id));
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "link",
        &["index 3 follows index 1: a receipt is missing, duplicated or reordered"],
        &[],
    );
    assert_eq!(f["index"], 3);
    assert_eq!(f["commit"], fx.chains[ADA][2].as_str());
}

#[test]
fn prev_pointing_elsewhere_in_a_re_signed_receipt_is_caught_by_the_link_check() {
    let mut fx = honest();
    let (id0, id1) = (fx.id(ADA, 0), fx.id(ADA, 1));
    fx.resign(ADA, 2, |b| b.chain.prev = Some(id0.clone()));
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "link",
        &[&format!(
            "prev is {id0}, but the receipt before it is {id1}"
        )],
        &[],
    );
    assert_eq!(f["index"], 2);
}

#[test]
fn a_receipt_grafted_from_another_writer_is_refused() {
    let mut fx = honest();
    // Bob's #1, appended to Ada's chain as is
    let mut entries = fx.entries(ADA);
    entries.push(Entry {
        tree: fx.git(&["rev-parse", &format!("{}^{{tree}}", fx.chains[BOB][1])]),
        extra_parents: Vec::new(),
        replaces: None,
    });
    fx.rewrite(ADA, entries);
    let report = fx.verify_main();
    fx.caught(
        &report,
        &fx.writers[ADA],
        "writer",
        &[&format!(
            "names writer {}, but sits in chain {}",
            fx.writers[BOB], fx.writers[ADA]
        )],
        &["link"],
    );
    fx.caught(
        &report,
        &fx.writers[ADA],
        "link",
        &["index 1 follows index 2"],
        &["writer"],
    );
}

#[test]
fn a_receipt_claiming_to_supersede_one_no_chain_has_is_refused() {
    let mut fx = honest();
    let ghost = format!("sha256:{}", "ab".repeat(32));
    let id = fx.resign(ADA, 2, |b| b.supersedes = Some(ghost.clone()));
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "supersedes",
        &[&format!(
            "claims to supersede {ghost}, which is in no chain here"
        )],
        &[],
    );
    assert_eq!(f["id"], id.as_str());
    assert_eq!(f["index"], 2);
}

#[test]
fn superseding_a_receipt_of_another_writer_is_fine() {
    let mut fx = honest();
    let target = fx.id(BOB, 0);
    fx.resign(ADA, 2, |b| b.supersedes = Some(target.clone()));
    let (r, v) = fx.verify_main();
    fx.assert_clean(&r, &v);
}

// ---------------------------------------------------------------------------------
// Chain commit shape
// ---------------------------------------------------------------------------------

#[test]
fn a_chain_commit_with_two_parents_is_refused() {
    let mut fx = honest();
    let mut entries = fx.entries(ADA);
    entries[2].extra_parents.push(fx.chains[BOB][1].clone());
    fx.rewrite(ADA, entries);
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "shape",
        &["chain commit has 2 parents; a chain is linear"],
        &[],
    );
    assert_eq!(f["commit"], fx.chains[ADA][2].as_str());
}

#[test]
fn a_receipt_json_that_is_a_tree_is_refused() {
    let mut fx = honest();
    let subtree = fx.git(&["rev-parse", "HEAD:src"]);
    fx.replace_receipt_entry(ADA, 2, &format!("040000 tree {subtree}"));
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "shape",
        &["receipt.json is a directory (tree), not a regular file"],
        &["note"],
    );
    assert_eq!(f["commit"], fx.chains[ADA][2].as_str());
}

#[test]
fn a_receipt_json_that_is_a_symlink_is_refused() {
    let mut fx = honest();
    // a link whose target, if followed, would be a perfectly good receipt
    let target = fx.blob(b"../receipt.json");
    fx.replace_receipt_entry(ADA, 2, &format!("120000 blob {target}"));
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "shape",
        &["receipt.json is a symbolic link, not a regular file"],
        &["note"],
    );
    assert_eq!(f["commit"], fx.chains[ADA][2].as_str());
}

/// Packed, a chain entry is read straight from the pack files (`store/packed.rs`),
/// and anything out of the ordinary the usual way: an oversized receipt and one
/// that is a symbolic link are the same findings as when they were loose.
#[test]
fn tampered_entries_are_the_same_findings_once_packed() {
    let mut fx = honest();
    let mut v = fx.json(ADA, 2);
    v["receipt"]["result"]["stdout_tail"] = Value::from("x".repeat(300 * 1024));
    fx.replace_json(ADA, 2, &v);
    let target = fx.blob(b"../receipt.json");
    fx.replace_receipt_entry(BOB, 1, &format!("120000 blob {target}"));
    let (_, loose) = fx.verify_main();
    fx.git(&["repack", "-adfq", "--depth=50", "--window=10"]);
    let (_, packed) = fx.verify_main();
    assert_eq!(packed["findings"], loose["findings"]);
    assert_eq!(packed["receipts"], loose["receipts"]);
    let reasons: Vec<&str> = packed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "shape")
        .filter_map(|f| f["reason"].as_str())
        .collect();
    for expected in [
        "bytes, over the 262144 byte limit",
        "receipt.json is a symbolic link, not a regular file",
    ] {
        assert!(
            reasons.iter().any(|r| r.contains(expected)),
            "{expected:?} in {reasons:?}"
        );
    }
}

#[test]
fn a_chain_commit_without_receipt_json_is_refused() {
    let mut fx = honest();
    let mut entries = fx.entries(ADA);
    let other = fx.envs[ADA].git_input(
        &fx.repo,
        &["hash-object", "-w", "--stdin"],
        b"not a receipt\n",
    );
    entries[2].tree = fx.envs[ADA].git_input(
        &fx.repo,
        &["mktree"],
        format!("100644 blob {other}\tREADME\n").as_bytes(),
    );
    fx.rewrite(ADA, entries);
    fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "shape",
        &["no receipt.json in its tree"],
        &["note"],
    );
}

// ---------------------------------------------------------------------------------
// Notes
// ---------------------------------------------------------------------------------

#[test]
fn a_note_copied_to_another_commit_is_refused() {
    let fx = honest();
    let nref = format!("--ref={}", fx.notes_ref(ADA));
    fx.git(&["notes", &nref, "copy", &fx.c2, &fx.readme]);
    let id = fx.id(ADA, 2);
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "note",
        &[
            &format!("note on {} names receipt {id}", &fx.readme[..7]),
            &format!("whose signed subject is commit {}", &fx.c2[..7]),
            "the note was copied or moved",
        ],
        &[],
    );
    assert_eq!(f["commit"], fx.readme.as_str());
    assert_eq!(f["id"], id.as_str());
}

#[test]
fn a_note_naming_a_receipt_in_no_chain_is_refused() {
    let fx = honest();
    // A receipt Ada really signed, about C1, kept in a commit no chain reaches: the
    // note is the only thing that points at it.
    let mut body = fx.receipt(ADA, 0).body().clone();
    body.result.stdout_tail = "all 4000 tests passed\n".into();
    let r = Receipt::sign(body, &fx.signing_key(ADA)).unwrap();
    let blob = fx.blob(r.bytes());
    let tree = fx.envs[ADA].git_input(
        &fx.repo,
        &["mktree"],
        format!("100644 blob {blob}\treceipt.json\n").as_bytes(),
    );
    let stray = fx.git(&["commit-tree", &tree, "-p", &fx.chains[ADA][0], "-m", "x"]);
    let nref = format!("--ref={}", fx.notes_ref(ADA));
    let note = fx.git(&["notes", &nref, "show", &fx.c1]);
    fx.set_note(
        ADA,
        &fx.c1,
        &format!("{note}\n{} {stray} test passed\n", r.id()),
    );
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "note",
        &[&format!(
            "note on {} names receipt {} at {stray}, which is in no chain of {}",
            &fx.c1[..7],
            r.id(),
            fx.writers[ADA]
        )],
        &[],
    );
    assert_eq!(f["id"], r.id());
}

#[test]
fn a_note_naming_a_chain_commit_that_holds_another_receipt_is_refused() {
    let fx = honest();
    let nref = format!("--ref={}", fx.notes_ref(ADA));
    let note = fx.git(&["notes", &nref, "show", &fx.c1]);
    // #1's line, pointed at #0's chain commit
    let forged = note.replace(&fx.chains[ADA][1], &fx.chains[ADA][0]);
    assert_ne!(forged, note);
    fx.set_note(ADA, &fx.c1, &format!("{forged}\n"));
    fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "note",
        &[&format!(
            "note names {} but chain commit {} holds another receipt",
            fx.id(ADA, 1),
            fx.chains[ADA][0],
        )],
        &[],
    );
}

// ---------------------------------------------------------------------------------
// Checkpoints: rewrites, rollbacks and deletions that leave a valid-looking chain
// ---------------------------------------------------------------------------------

/// Verify with a checkpoint: the first clean run writes it.
fn checkpointed(fx: &Fx) -> PathBuf {
    let cp = fx.ci.path("checkpoint.json");
    let (r, v) = fx.verify(&["--trust", "main", "--checkpoint", cp.to_str().unwrap()]);
    fx.assert_clean(&r, &v);
    assert_eq!(v["checkpoint_written"], true, "{r}");
    let recorded: Value = serde_json::from_slice(&std::fs::read(&cp).unwrap()).unwrap();
    assert_eq!(
        recorded["chains"][&fx.writers[ADA]],
        fx.chains[ADA][2].as_str()
    );
    cp
}

fn verify_against(fx: &Fx, cp: &Path) -> (Run, Value) {
    fx.verify(&["--trust", "main", "--checkpoint", cp.to_str().unwrap()])
}

#[test]
fn a_chain_rewritten_and_force_pushed_is_caught_by_the_checkpoint() {
    let mut fx = honest();
    let cp = checkpointed(&fx);
    // Moving forward is fine, and moves the checkpoint.
    fx.envs[ADA].receipt_ok(&fx.repo, &["run", "docs"]);
    let (r, v) = verify_against(&fx, &cp);
    fx.assert_clean(&r, &v);
    fx.chains[ADA].push(fx.git(&["rev-parse", &fx.chain_ref(ADA)]));
    let recorded = std::fs::read(&cp).unwrap();

    // The same receipts in new commits: a valid chain on its own.
    let old_tip = fx.chains[ADA][3].clone();
    let entries = fx.entries(ADA);
    fx.rewrite(ADA, entries);
    let (r, v) = fx.verify_main();
    fx.assert_clean(&r, &v);

    let f = fx.caught(
        &verify_against(&fx, &cp),
        &fx.writers[ADA],
        "checkpoint",
        &[&format!(
            "chain no longer descends from {old_tip}, its tip at the checkpoint: it was rolled back or rewritten (now {})",
            fx.chains[ADA][3]
        )],
        &[],
    );
    assert_eq!(f["commit"], old_tip.as_str());
    assert_eq!(
        std::fs::read(&cp).unwrap(),
        recorded,
        "a failing run leaves the checkpoint as it was"
    );
}

#[test]
fn a_chain_rolled_back_with_its_notes_is_caught_by_the_checkpoint() {
    let fx = honest();
    let cp = checkpointed(&fx);
    // Drop Ada's last receipt: the chain and its notes, each one step back.
    fx.git(&[
        "update-ref",
        &fx.chain_ref(ADA),
        &fx.chains[ADA][1],
        &fx.chains[ADA][2],
    ]);
    let notes_before = fx.git(&["rev-parse", &format!("{}~1", fx.notes_ref(ADA))]);
    fx.git(&["update-ref", &fx.notes_ref(ADA), &notes_before]);
    let (r, v) = fx.verify_main();
    fx.assert_clean(&r, &v);
    fx.caught(
        &verify_against(&fx, &cp),
        &fx.writers[ADA],
        "checkpoint",
        &[&format!(
            "chain no longer descends from {}, its tip at the checkpoint: it was rolled back or rewritten (now {})",
            fx.chains[ADA][2], fx.chains[ADA][1]
        )],
        &[],
    );
}

#[test]
fn a_deleted_chain_is_caught_by_the_checkpoint() {
    let fx = honest();
    let cp = checkpointed(&fx);
    fx.git(&["update-ref", "-d", &fx.chain_ref(BOB)]);
    // Its notes alone still name receipts that no chain holds...
    fx.caught(
        &fx.verify_main(),
        &fx.writers[BOB],
        "note",
        &["which is in no chain of"],
        &[],
    );
    // ...so a careful deleter removes them too, and then only the checkpoint knows.
    fx.git(&["update-ref", "-d", &fx.notes_ref(BOB)]);
    let (r, v) = fx.verify_main();
    fx.assert_clean(&r, &v);
    fx.caught(
        &verify_against(&fx, &cp),
        &fx.writers[BOB],
        "checkpoint",
        &[&format!(
            "chain refs/receipts/{} was deleted; the checkpoint recorded its tip {}",
            fx.writers[BOB], fx.chains[BOB][1]
        )],
        &[],
    );
}

// ---------------------------------------------------------------------------------
// The gate
// ---------------------------------------------------------------------------------

#[test]
fn gate_with_verify_passes_an_honest_repository_and_fails_a_tampered_one() {
    let mut fx = honest();
    let gate = |fx: &Fx| {
        fx.ci
            .receipt(&fx.repo, &["gate", "HEAD", "--verify", "--trust", "main"])
    };
    let r = gate(&fx);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stdout.contains("HEAD: required check test present"),
        "{r}"
    );
    assert!(r.stderr.contains("verified 5 receipts in 2 chains"), "{r}");

    let donor = fx.json(ADA, 0);
    let mut v = fx.json(ADA, 2);
    v["signature"] = donor["signature"].clone();
    fx.replace_json(ADA, 2, &v);

    let r = gate(&fx);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout.contains(&format!(
            "{} #2 {}: [signature] signature does not verify against key {}",
            fx.writers[ADA],
            &fx.id(ADA, 2)[..19],
            fx.fingerprint(ADA)
        )),
        "{r}"
    );
    assert!(r.stderr.contains("gate failed: 1 finding "), "{r}");
    // Without --verify the gate looks only at HEAD's checks, which Bob's intact
    // receipt still covers: that is why CI passes --verify.
    let r = fx
        .ci
        .receipt(&fx.repo, &["gate", "HEAD", "--trust", "main"]);
    assert_eq!(r.code, 0, "{r}");
}

#[test]
fn verifying_writes_no_key_for_the_verifier() {
    let fx = honest();
    fx.ci
        .receipt_ok(&fx.repo, &["gate", "HEAD", "--verify", "--trust", "main"]);
    assert!(
        !key_path(&fx.ci).exists(),
        "verify and gate never create a signing key"
    );
}

#[test]
fn a_notes_ref_that_is_not_a_notes_commit_is_a_finding_not_a_crash() {
    let fx = honest();
    // point Ada's notes ref at a blob (plumbing only: git itself allows it)
    let some_blob = fx.git(&["rev-parse", &format!("{}:receipt.json", fx.chains[ADA][0])]);
    fx.git(&["update-ref", &fx.notes_ref(ADA), &some_blob]);
    let f = fx.caught(
        &fx.verify_main(),
        &fx.writers[ADA],
        "note",
        &["is not a readable notes commit", "git receipt reindex"],
        &[],
    );
    assert!(f["commit"].is_null());
}
