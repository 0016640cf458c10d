//! Fail closed: receipts whose stored bytes or chain commits were tampered with
//! using stock git plumbing are rejected by every reading command, with a message
//! that names the receipt (writer and chain commit) and the specific reason.
//!
//! Every forgery here is what someone with write access to the repository could do:
//! write a blob, a tree and a commit, move `refs/receipts/<writer>` onto it, and
//! point the notes at it so that `show` finds it.

use std::path::PathBuf;

use crate::common::{Env, Run};
use git_receipt::canon;
use git_receipt::receipt::Receipt;
use git_receipt::sign::SigningKey;
use serde_json::Value;

/// A fixture repository with a chain of receipts of `test` on HEAD.
struct Fx {
    env: Env,
    repo: PathBuf,
    writer: String,
    /// Chain commits, oldest (index 0) first.
    chain: Vec<String>,
}

/// `git receipt run test`, `n` times.
fn setup(n: usize) -> Fx {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    for _ in 0..n {
        env.receipt_ok(&repo, &["run", "test"]);
    }
    let writer = env.only_writer(&repo);
    let mut chain: Vec<String> = env
        .git_ok(&repo, &["rev-list", &format!("refs/receipts/{writer}")])
        .lines()
        .map(str::to_owned)
        .collect();
    chain.reverse();
    assert_eq!(chain.len(), n);
    Fx {
        env,
        repo,
        writer,
        chain,
    }
}

impl Fx {
    fn git(&self, args: &[&str]) -> String {
        self.env.git_ok(&self.repo, args)
    }

    fn receipt(&self, args: &[&str]) -> Run {
        self.env.receipt(&self.repo, args)
    }

    fn chain_ref(&self) -> String {
        format!("refs/receipts/{}", self.writer)
    }

    fn notes_ref_arg(&self) -> String {
        format!("--ref=receipts/{}", self.writer)
    }

    /// The stored bytes of entry `index`.
    fn bytes(&self, index: usize) -> Vec<u8> {
        self.env.receipt_bytes(&self.repo, &self.chain[index])
    }

    /// Entry `index` as JSON.
    fn json(&self, index: usize) -> Value {
        serde_json::from_slice(&self.bytes(index)).unwrap()
    }

    fn id(&self, index: usize) -> String {
        Receipt::parse(&self.bytes(index)).unwrap().id().to_owned()
    }

    /// The `git mktree` lines of entry `index`'s tree.
    fn tree_lines(&self, index: usize) -> Vec<String> {
        self.git(&["ls-tree", &self.chain[index]])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn write_blob(&self, bytes: &[u8]) -> String {
        self.env
            .git_input(&self.repo, &["hash-object", "-w", "--stdin"], bytes)
    }

    /// Replace entry `index` by a commit of `tree_lines` (mktree input) with `parents`,
    /// re-parent every later entry on top of it, and move the chain ref by
    /// compare-and-swap. The notes are rewritten to name the new chain commits, and
    /// the forged entry under `new_id` (when it has one), so that `show` reaches the
    /// forgery exactly as it would reach a real receipt.
    fn forge(&mut self, index: usize, tree_lines: &[String], extra_parents: &[&str]) {
        let mut input = tree_lines.join("\n");
        input.push('\n');
        let tree = self
            .env
            .git_input(&self.repo, &["mktree"], input.as_bytes());
        let mut args = vec!["commit-tree".to_owned(), tree, "-m".into(), "forged".into()];
        if index > 0 {
            args.extend(["-p".into(), self.chain[index - 1].clone()]);
        }
        for p in extra_parents {
            args.extend(["-p".into(), (*p).to_owned()]);
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut new_chain = self.chain[..index].to_vec();
        new_chain.push(self.git(&argv));
        for later in &self.chain[index + 1..] {
            let tree = self.git(&["rev-parse", &format!("{later}^{{tree}}")]);
            let parent = new_chain.last().unwrap().clone();
            new_chain.push(self.git(&["commit-tree", &tree, "-p", &parent, "-m", "rebuilt"]));
        }
        self.git(&[
            "update-ref",
            &self.chain_ref(),
            new_chain.last().unwrap(),
            self.chain.last().unwrap(),
        ]);
        // The note on HEAD (the subject of every receipt here) names each chain commit.
        let note = self.git(&["notes", &self.notes_ref_arg(), "show", "HEAD"]);
        let mut text = String::new();
        for line in note.lines() {
            let mut fields: Vec<String> = line.split(' ').map(str::to_owned).collect();
            let pos = self.chain.iter().position(|c| *c == fields[1]).unwrap();
            fields[1] = new_chain[pos].clone();
            if pos == index
                && let Some(id) = self.forged_id(&new_chain[pos])
            {
                fields[0] = id;
            }
            text.push_str(&fields.join(" "));
            text.push('\n');
        }
        self.set_note("HEAD", &text);
        self.chain = new_chain;
    }

    /// The id of the receipt in a forged chain commit, when its bytes still parse.
    fn forged_id(&self, commit: &str) -> Option<String> {
        let r = self.env.git(
            &self.repo,
            &["cat-file", "blob", &format!("{commit}:receipt.json")],
        );
        if r.code != 0 {
            return None;
        }
        let bytes = self.env.receipt_bytes(&self.repo, commit);
        Receipt::parse(&bytes).ok().map(|r| r.id().to_owned())
    }

    /// Overwrite the note on `object` in this writer's notes, the way a person would.
    fn set_note(&self, object: &str, text: &str) {
        let file = self.env.path("note.txt");
        std::fs::write(&file, text).unwrap();
        self.git(&[
            "notes",
            &self.notes_ref_arg(),
            "add",
            "-f",
            "-F",
            file.to_str().unwrap(),
            object,
        ]);
    }

    /// Replace entry `index`'s receipt.json by `bytes`, keeping its other files.
    fn forge_bytes(&mut self, index: usize, bytes: &[u8]) {
        let blob = self.write_blob(bytes);
        let lines: Vec<String> = self
            .tree_lines(index)
            .into_iter()
            .map(|l| {
                if l.ends_with("\treceipt.json") {
                    format!("100644 blob {blob}\treceipt.json")
                } else {
                    l
                }
            })
            .collect();
        self.forge(index, &lines, &[]);
    }

    /// Replace entry `index` by the canonical bytes of `value`.
    fn forge_json(&mut self, index: usize, value: &Value) {
        let text = serde_json::to_vec(value).unwrap();
        let bytes = canon::canonicalize_json(&text).expect("canonicalizable");
        self.forge_bytes(index, &bytes);
    }

    /// An entry whose receipt.json cannot be read at all (not a regular file, or
    /// oversized) names no subject, so nothing can find it by commit: `log` (which
    /// walks the chain) refuses it, `show` never lists it, and `verify` reports it.
    fn assert_rejected_unfindable(&self, index: usize, reason: &str) {
        let commit = &self.chain[index];
        for args in [&["log"][..], &["log", "--json"]] {
            let r = self.receipt(args);
            assert_eq!(r.code, 2, "{args:?} must refuse: {r}");
            assert!(
                r.stderr.contains(commit.as_str()),
                "{args:?} names {commit}: {r}"
            );
            assert!(r.stderr.contains(reason), "{args:?} says {reason:?}: {r}");
        }
        let r = self.receipt(&["show", "--json"]);
        assert_eq!(r.code, 0, "{r}");
        let arr: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(arr.len(), self.chain.len() - 1, "every other receipt: {r}");
        assert!(
            arr.iter().all(|v| v["chain_commit"] != commit.as_str()),
            "the broken entry is not listed: {r}"
        );
        let r = self.receipt(&["verify"]);
        assert_eq!(r.code, 1, "{r}");
        assert!(r.stdout.contains(reason), "verify reports it: {r}");
        if index + 1 == self.chain.len() {
            let before = self.git(&["rev-parse", &self.chain_ref()]);
            let r = self.receipt(&["run", "test"]);
            assert_eq!(r.code, 2, "run on a corrupt tip must refuse: {r}");
            assert!(r.stderr.contains(reason), "{r}");
            assert_eq!(self.git(&["rev-parse", &self.chain_ref()]), before);
        }
    }

    /// Every reading command refuses: exit 2, nothing on stdout, and stderr names the
    /// writer, the chain commit of entry `index` and contains `reason`.
    fn assert_rejected(&self, index: usize, reason: &str) {
        let commit = &self.chain[index];
        for args in [
            &["log"][..],
            &["log", "--json"],
            &["show"],
            &["show", "--json"],
            &["show", "HEAD"],
        ] {
            let r = self.receipt(args);
            assert_eq!(r.code, 2, "{args:?} must refuse: {r}");
            assert_eq!(r.stdout, "", "{args:?} prints no partial listing: {r}");
            assert!(
                r.stderr.contains(&self.writer),
                "{args:?} names the writer: {r}"
            );
            assert!(
                r.stderr.contains(commit.as_str()),
                "{args:?} names chain commit {commit}: {r}"
            );
            assert!(r.stderr.contains(reason), "{args:?} says {reason:?}: {r}");
            assert!(
                !r.stderr.contains("caused by"),
                "{args:?} says the reason once: {r}"
            );
        }
        // Writing on top of a corrupt tip is refused too, and nothing is appended.
        if index + 1 == self.chain.len() {
            let before = self.git(&["rev-parse", &self.chain_ref()]);
            let r = self.receipt(&["run", "test"]);
            assert_eq!(r.code, 2, "run on a corrupt tip must refuse: {r}");
            assert!(r.stderr.contains(reason), "{r}");
            assert_eq!(self.git(&["rev-parse", &self.chain_ref()]), before);
        }
    }
}

// ---------------------------------------------------------------------------------
// Stored bytes
// ---------------------------------------------------------------------------------

#[test]
fn unknown_member_in_the_body_is_rejected() {
    let mut fx = setup(3);
    let mut v = fx.json(2);
    v["receipt"]["extra"] = Value::from(1);
    fx.forge_json(2, &v);
    fx.assert_rejected(
        2,
        "not a v1 receipt: unknown member \"extra\" in \"/receipt\"",
    );
}

#[test]
fn unknown_member_in_a_nested_object_or_the_envelope_is_rejected() {
    for (place, pointer) in [
        ("result", "\"/receipt/result\""),
        ("signature", "\"/signature\""),
        ("envelope", "the envelope"),
    ] {
        let mut fx = setup(2);
        let mut v = fx.json(1);
        let target = match place {
            "result" => &mut v["receipt"]["result"],
            "signature" => &mut v["signature"],
            _ => &mut v,
        };
        target["zz_extra"] = Value::from("x");
        fx.forge_json(1, &v);
        fx.assert_rejected(1, &format!("unknown member \"zz_extra\" in {pointer}"));
    }
}

#[test]
fn unknown_enum_value_is_rejected() {
    let mut fx = setup(2);
    let mut v = fx.json(1);
    v["receipt"]["kind"] = Value::from("deploy");
    fx.forge_json(1, &v);
    fx.assert_rejected(
        1,
        "not a v1 receipt: unknown variant `deploy`, expected one of `check`, `acceptance`, `review`",
    );
}

#[test]
fn missing_required_member_is_rejected() {
    let mut fx = setup(2);
    let mut v = fx.json(1);
    v["receipt"].as_object_mut().unwrap().remove("supersedes");
    fx.forge_json(1, &v);
    fx.assert_rejected(
        1,
        "not a v1 receipt: missing member \"supersedes\" in \"/receipt\"",
    );
}

#[test]
fn a_space_after_a_colon_is_not_canonical() {
    let mut fx = setup(3);
    let bytes = fx.bytes(2);
    let text = String::from_utf8(bytes).unwrap();
    let forged = text.replacen("\"receipt\":", "\"receipt\": ", 1);
    assert_ne!(forged, text);
    fx.forge_bytes(2, forged.as_bytes());
    fx.assert_rejected(
        2,
        "not in RFC 8785 canonical form (first difference at byte 11)",
    );
}

#[test]
fn members_out_of_order_are_not_canonical() {
    let mut fx = setup(3);
    let v = fx.json(2);
    // signature first, then receipt: the same value, in non-canonical order
    let forged = format!(
        "{{\"signature\":{},\"receipt\":{}}}",
        String::from_utf8(canon::to_canonical(&v["signature"]).unwrap()).unwrap(),
        String::from_utf8(canon::to_canonical(&v["receipt"]).unwrap()).unwrap()
    );
    fx.forge_bytes(2, forged.as_bytes());
    fx.assert_rejected(
        2,
        "not in RFC 8785 canonical form (first difference at byte 2)",
    );
}

#[test]
fn a_duplicate_member_is_rejected() {
    let mut fx = setup(3);
    let text = String::from_utf8(fx.bytes(2)).unwrap();
    let forged = text.replacen("\"detail\":\"\",", "\"detail\":\"\",\"detail\":\"\",", 1);
    assert_ne!(forged, text);
    fx.forge_bytes(2, forged.as_bytes());
    fx.assert_rejected(
        2,
        "member \"detail\" appears twice in the object at \"/receipt/result\"",
    );
}

#[test]
fn an_integer_beyond_2_pow_53_minus_1_is_rejected() {
    let mut fx = setup(3);
    let text = String::from_utf8(fx.bytes(2)).unwrap();
    let duration = fx.json(2)["receipt"]["result"]["duration_ms"].clone();
    let forged = text.replacen(
        &format!("\"duration_ms\":{duration},"),
        "\"duration_ms\":9007199254740993,",
        1,
    );
    assert_ne!(forged, text);
    fx.forge_bytes(2, forged.as_bytes());
    fx.assert_rejected(
        2,
        "integer 9007199254740993 at \"/receipt/result/duration_ms\" is outside",
    );
}

#[test]
fn an_oversized_receipt_is_rejected_before_it_is_parsed() {
    let mut fx = setup(3);
    let mut v = fx.json(2);
    v["receipt"]["result"]["stdout_tail"] = Value::from("x".repeat(300 * 1024));
    fx.forge_json(2, &v);
    fx.assert_rejected_unfindable(2, "over the 262144 byte limit");
}

#[test]
fn a_tampered_middle_entry_is_rejected_even_though_the_tip_is_fine() {
    let mut fx = setup(3);
    let mut v = fx.json(1);
    v["receipt"]["sneaky"] = Value::Bool(true);
    fx.forge_json(1, &v);
    // the tip itself still parses and verifies
    Receipt::parse(&fx.bytes(2)).expect("tip untouched");
    fx.assert_rejected(1, "unknown member \"sneaky\" in \"/receipt\"");
}

// ---------------------------------------------------------------------------------
// Signatures: well-formed receipts that do not verify
// ---------------------------------------------------------------------------------

/// `show` marks the receipt; `log` marks it too. Exit codes stay 0: the listing
/// is complete, and the verdict is in the mark.
fn assert_marked(fx: &Fx, id: &str, text_mark: &str, json_status: &str) {
    let r = fx.receipt(&["show"]);
    assert_eq!(r.code, 0, "{r}");
    let block = r
        .stdout
        .split("\n\n")
        .find(|b| b.contains(id))
        .unwrap_or_else(|| panic!("show lists {id}: {r}"));
    assert!(block.contains(text_mark), "{block}");
    for other in r.stdout.split("\n\n").filter(|b| !b.contains(id)) {
        assert!(
            !other.contains("INVALID") && !other.contains("untrusted"),
            "{r}"
        );
    }

    let r = fx.receipt(&["show", "--json"]);
    assert_eq!(r.code, 0, "{r}");
    let arr: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    let entry = arr.iter().find(|e| e["id"] == id).expect("listed");
    assert_eq!(entry["signature_status"], json_status, "{entry}");
    for other in arr.iter().filter(|e| e["id"] != id) {
        assert_eq!(other["signature_status"], "verified", "{other}");
    }

    let r = fx.receipt(&["log"]);
    assert_eq!(r.code, 0, "{r}");
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with(&id[..19]))
        .unwrap_or_else(|| panic!("log lists {id}: {r}"));
    assert!(line.contains(text_mark), "{line}");
    let r = fx.receipt(&["log", "--json"]);
    let arr: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    let entry = arr.iter().find(|e| e["id"] == id).expect("listed");
    assert_eq!(entry["signature_status"], json_status, "{entry}");
    for other in arr.iter().filter(|e| e["id"] != id) {
        assert_eq!(other["signature_status"], "verified", "{other}");
    }
}

#[test]
fn a_body_byte_changed_under_an_intact_signature_is_a_bad_signature() {
    let mut fx = setup(3);
    let mut v = fx.json(2);
    let tail = v["receipt"]["result"]["stdout_tail"].as_str().unwrap();
    assert_eq!(tail, "tests-ran\n");
    v["receipt"]["result"]["stdout_tail"] = Value::from("tests-RAN\n");
    fx.forge_json(2, &v);
    let id = fx.forged_id(&fx.chain[2]).expect("still well-formed");
    assert_ne!(id, fx.id(1));
    assert_marked(&fx, &id, "INVALID", "invalid");
    let r = fx.receipt(&["show"]);
    assert!(
        r.stdout
            .contains("INVALID: signature does not verify against key SHA256:"),
        "{r}"
    );
}

#[test]
fn a_receipt_re_signed_by_another_key_is_untrusted() {
    let mut fx = setup(3);
    let original = Receipt::parse(&fx.bytes(2)).unwrap();
    let other = SigningKey::from_seed(&[7; 32]);
    let forged = Receipt::sign(original.body().clone(), &other).unwrap();
    assert_eq!(forged.id(), original.id(), "same body, same id");
    fx.forge_bytes(2, forged.bytes());
    // signed by a key its writer id does not name: not an entry of the chain, so
    // no listing or decision counts it, and `verify` says why
    let r = fx.receipt(&["show", "--json"]);
    assert_eq!(r.code, 0, "{r}");
    let arr: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    assert!(arr.iter().all(|e| e["id"] != original.id()), "{r}");
    assert_eq!(arr.len(), 2, "the two real entries below it: {r}");
    assert!(r.stderr.contains("is not an entry of it"), "{r}");
    let r = fx.receipt(&["verify"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout.contains(&format!(
            "signed by {}, but writer id",
            other.public().fingerprint()
        )),
        "{r}"
    );
}

// ---------------------------------------------------------------------------------
// Chain commit shape
// ---------------------------------------------------------------------------------

#[test]
fn receipt_json_that_is_a_tree_is_rejected() {
    let mut fx = setup(3);
    let subtree = fx.git(&["rev-parse", "HEAD:src"]);
    let lines: Vec<String> = fx
        .tree_lines(2)
        .into_iter()
        .map(|l| {
            if l.ends_with("\treceipt.json") {
                format!("040000 tree {subtree}\treceipt.json")
            } else {
                l
            }
        })
        .collect();
    fx.forge(2, &lines, &[]);
    fx.assert_rejected_unfindable(2, "receipt.json is a directory (tree), not a regular file");
}

#[test]
fn receipt_json_that_is_a_symlink_is_rejected() {
    let mut fx = setup(3);
    // a link whose target, if followed, would be a perfectly good receipt
    let target = fx.write_blob(b"output.log");
    let lines: Vec<String> = fx
        .tree_lines(2)
        .into_iter()
        .map(|l| {
            if l.ends_with("\treceipt.json") {
                format!("120000 blob {target}\treceipt.json")
            } else {
                l
            }
        })
        .collect();
    fx.forge(2, &lines, &[]);
    fx.assert_rejected_unfindable(2, "receipt.json is a symbolic link, not a regular file");
}

#[test]
fn receipt_json_that_is_executable_is_rejected() {
    let mut fx = setup(2);
    let lines: Vec<String> = fx
        .tree_lines(1)
        .into_iter()
        .map(|l| l.replace("100644 blob", "100755 blob"))
        .collect();
    fx.forge(1, &lines, &[]);
    fx.assert_rejected_unfindable(1, "receipt.json is an executable file, not a regular file");
}

#[test]
fn a_chain_commit_with_two_parents_is_rejected() {
    let mut fx = setup(3);
    let head = fx.git(&["rev-parse", "HEAD"]);
    let lines = fx.tree_lines(2);
    fx.forge(2, &lines, &[&head]);
    // a merge in a chain is an attack on first-parent readers (docs/trust.md,
    // section 12): no receipt of the chain counts until it is replaced, `log` and
    // `verify` name it, and nothing is written on it
    let commit = fx.chain[2].clone();
    let r = fx.receipt(&["log"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("has 2 parents; a chain is linear"), "{r}");
    let r = fx.receipt(&["show", "--json"]);
    assert_eq!(r.code, 1, "no receipt decides HEAD's checks: {r}");
    assert_eq!(r.stdout.trim(), "[]", "nothing of the chain counts: {r}");
    assert!(
        r.stderr.contains(&format!(
            "holds commit {}, which has more than one parent",
            &commit[..12]
        )),
        "{r}"
    );
    let r = fx.receipt(&["verify"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("has 2 parents; a chain is linear"), "{r}");
    let before = fx.git(&["rev-parse", &fx.chain_ref()]);
    let r = fx.receipt(&["run", "test"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("has 2 parents; a chain is linear"), "{r}");
    assert_eq!(fx.git(&["rev-parse", &fx.chain_ref()]), before);
}

// ---------------------------------------------------------------------------------
// Notes are an index, never the truth
// ---------------------------------------------------------------------------------

#[test]
fn a_note_naming_a_chain_commit_that_holds_another_receipt_is_ignored() {
    let fx = setup(2);
    let (id0, id1) = (fx.id(0), fx.id(1));
    let note = fx.git(&["notes", &fx.notes_ref_arg(), "show", "HEAD"]);
    assert_eq!(
        note.lines().count(),
        1,
        "the newest receipt per check: {note}"
    );
    assert!(note.contains(&id1), "{note}");
    // the line keeps id1 but points at the chain commit of receipt 0
    let forged = note.replace(&fx.chain[1], &fx.chain[0]);
    fx.set_note("HEAD", &format!("{forged}\n"));

    // show reads the chains (through the receipt index), never the note: both
    // receipts, each once, each by its own chain commit
    let r = fx.receipt(&["show", "--json"]);
    assert_eq!(r.code, 0, "{r}");
    let arr: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    let listed: Vec<(&str, &str)> = arr
        .iter()
        .map(|v| {
            (
                v["id"].as_str().unwrap(),
                v["chain_commit"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            (id1.as_str(), fx.chain[1].as_str()),
            (id0.as_str(), fx.chain[0].as_str())
        ],
        "{r}"
    );
    // verify, which checks the display, names the forged line
    let r = fx.receipt(&["verify"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout.contains(&format!(
            "note names {id1} but chain commit {} holds another receipt",
            fx.chain[0]
        )),
        "{r}"
    );
}

#[test]
fn a_duplicated_note_line_lists_the_receipt_once() {
    let fx = setup(1);
    let note = fx.git(&["notes", &fx.notes_ref_arg(), "show", "HEAD"]);
    fx.set_note("HEAD", &format!("{note}\n{note}\n"));
    let r = fx.receipt(&["show", "--json"]);
    assert_eq!(r.code, 0, "{r}");
    let arr: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(arr.len(), 1, "{r}");
}

fn assert_note_does_not_count(fx: &Fx, rev: &str) {
    let id = fx.id(0);
    let target = fx.git(&["rev-parse", rev]);
    // The note does not make it this commit's receipt: show finds it only as what
    // decides `test` here through identical inputs, as status does, never by subject.
    let r = fx.receipt(&["show", rev]);
    assert!(
        !r.stdout.contains("its subject is"),
        "not this commit's receipt: {r}"
    );
    let r = fx.receipt(&["show", "--json", rev]);
    let arr: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    for shown in &arr {
        assert!(
            shown["receipt"]["receipt"]["subject"]["commit"].is_string(),
            "{r}"
        );
        assert_ne!(
            shown["receipt"]["body"]["subject"]["commit"],
            target.as_str(),
            "{r}"
        );
        for how in shown["found"].as_array().unwrap() {
            assert!(how.as_str().unwrap().starts_with("decides check "), "{r}");
        }
    }
    // verify names the moved note as a finding about the display
    let r = fx.receipt(&["verify"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout
            .contains(&format!("note on {} names receipt {id}", &target[..7]))
            && r.stdout.contains("the note was copied or moved"),
        "{r}"
    );
    // the receipt still counts where it belongs
    let r = fx.receipt(&["show", "--json", "HEAD"]);
    let arr: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(arr.len(), 1, "{r}");
    assert_eq!(arr[0]["signature_status"], "verified");
}

#[test]
fn a_note_copied_onto_another_commit_does_not_make_its_receipt() {
    let fx = setup(1);
    fx.git(&["notes", &fx.notes_ref_arg(), "copy", "HEAD", "HEAD~1"]);
    assert_eq!(
        fx.git(&["notes", &fx.notes_ref_arg(), "show", "HEAD~1"]),
        fx.git(&["notes", &fx.notes_ref_arg(), "show", "HEAD"]),
    );
    assert_note_does_not_count(&fx, "HEAD~1");
}

#[test]
fn a_note_added_with_dash_c_onto_another_commit_does_not_make_its_receipt() {
    let fx = setup(1);
    let blob = fx.git(&["notes", &fx.notes_ref_arg(), "list", "HEAD"]);
    fx.git(&["notes", &fx.notes_ref_arg(), "add", "-C", &blob, "HEAD~1"]);
    assert_note_does_not_count(&fx, "HEAD~1");
}
