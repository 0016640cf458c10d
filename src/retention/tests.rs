//! The retention rules as unit tests: receipts written through the store in a
//! repository made by stock git, branches deleted and tagged with git, the
//! result checked by `verify` and by reading the chain back.

use super::*;
use crate::decision::{Payload, append_decision};
use crate::freshness::rules::{Scratch, T0, contract};
use crate::receipt::{Review, Subject, Verdict, writer_id};
use crate::sign::SigningKey;
use crate::trust::{TrustOrigin, TrustSet};

const CONTRACT: &str = "[check \"test\"]\n\trun = true\n\tpath = src\n";

fn key() -> SigningKey {
    SigningKey::from_seed(&[7; 32])
}

fn trust() -> TrustSet {
    let mut t = TrustSet::default();
    t.add(key().public().clone(), TrustOrigin::Config);
    t
}

fn writer() -> String {
    writer_id(key().public(), "default")
}

/// A review by the test key of `commit`, decided `minute` minutes after T0.
fn review(s: &Scratch, commit: ObjectId, minute: u64) -> crate::store::chain::Appended {
    let tree = s.store.commit_tree(commit).unwrap();
    append_decision(
        &s.store,
        &writer(),
        &key(),
        Subject {
            commit: commit.to_string(),
            tree: tree.to_string(),
            inputs: tree.to_string(),
            dirty: false,
            dependencies: Vec::new(),
        },
        Payload::Review(Review {
            name: "code".into(),
            paths: Vec::new(),
            verdict: Verdict::Approve,
            message: String::new(),
            decided_at: crate::receipt::format_timestamp(T0 + minute * 60_000),
            accepts: None,
        }),
    )
    .unwrap()
}

fn rules(kept: &[ObjectId], named: &[&str]) -> Rules {
    Rules {
        cutoff_ms: T0 + 10 * 60_000,
        kept: kept.iter().copied().collect(),
        named: named.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn a_receipt_goes_only_when_old_unreached_unnamed_a_check_and_not_the_tip() {
    let s = Scratch::new();
    let c = contract(CONTRACT);
    let a = s.commit(&[("src/lib.rs", "a\n")], "a");
    let old = unv(s.run(&key(), &c, "test", a, 0, 9).receipt.bytes()).unwrap();
    let at_cutoff = unv(s.run(&key(), &c, "test", a, 0, 10).receipt.bytes()).unwrap();
    let decision = unv(review(&s, a, 1).receipt.bytes()).unwrap();
    let none = rules(&[], &[]);
    assert_eq!(keep(&old, false, &none), None);
    assert_eq!(keep(&old, true, &none), Some(Keep::Tip));
    assert_eq!(keep(&at_cutoff, false, &none), Some(Keep::Young));
    assert_eq!(keep(&decision, false, &none), Some(Keep::Decision));
    assert_eq!(keep(&old, false, &rules(&[a], &[])), Some(Keep::Reached));
    assert_eq!(
        keep(&old, false, &rules(&[], &[old.id()])),
        Some(Keep::Named)
    );
    // another commit reached, another id named: it still goes
    let b = s.commit(&[("src/lib.rs", "b\n")], "b");
    assert_eq!(keep(&old, false, &rules(&[b], &[at_cutoff.id()])), None);
    // the names are short for --json
    let names: Vec<&str> = [
        Keep::Tip,
        Keep::Decision,
        Keep::Young,
        Keep::Reached,
        Keep::Named,
    ]
    .iter()
    .map(|k| k.as_str())
    .collect();
    assert_eq!(names, ["tip", "decision", "young", "reached", "named"]);
}

#[test]
fn what_a_receipt_names_is_what_it_supersedes_and_an_acceptance_s_evidence() {
    let s = Scratch::new();
    let c = contract(CONTRACT);
    let a = s.commit(&[("src/lib.rs", "a\n")], "a");
    let r = unv(s.run(&key(), &c, "test", a, 0, 1).receipt.bytes()).unwrap();
    assert!(named_by(&r).is_empty());
    let r2 = unv(s.run(&key(), &c, "test", a, 1, 2).receipt.bytes()).unwrap();
    let mut evidence = vec![r.id().to_owned(), r2.id().to_owned()];
    evidence.sort();
    let mut body = crate::decision::rules::acceptance_body(
        &s,
        a,
        vec![crate::receipt::Criterion {
            kind: crate::receipt::CriterionKind::Check,
            name: "test".into(),
            state: crate::receipt::State::Present,
            inputs: a.to_string(),
            evidence: evidence.clone(),
        }],
    );
    let superseded = format!("sha256:{}", "5".repeat(64));
    body.supersedes = Some(superseded.clone());
    let signed = crate::receipt::Receipt::sign(body, &key()).unwrap();
    let unverified = unv(signed.bytes()).unwrap();
    let mut want = vec![superseded];
    want.extend(evidence);
    assert_eq!(named_by(&unverified), want);
}

/// main: a (receipt 0), then a side branch s1, s2 (receipts 1, 2, 4) that is
/// deleted, a tagged side commit t (receipt 3), a review of s1 (5) and a
/// receipt of main's c at the tip (6).
fn history() -> (Scratch, Vec<ObjectId>) {
    let s = Scratch::new();
    let c = contract(CONTRACT);
    let a = s.commit(&[("src/lib.rs", "a\n")], "a");
    s.git(&["checkout", "-q", "-b", "side"]);
    let s1 = s.commit(&[("src/lib.rs", "s1\n")], "s1");
    let s2 = s.commit(&[("src/lib.rs", "s2\n")], "s2");
    s.git(&["checkout", "-q", "-b", "tagged", "main"]);
    let t = s.commit(&[("src/lib.rs", "t\n")], "t");
    s.git(&["tag", "-a", "-m", "v", "v1", "tagged"]);
    // a tag of a blob reaches no commit
    let path = s.dir.path().join("loose-blob");
    std::fs::write(&path, "not a commit\n").unwrap();
    let blob = s.git(&["hash-object", "-w", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    s.git(&["tag", "blob-tag", blob.trim()]);
    s.git(&["checkout", "-q", "main"]);
    s.git(&["branch", "-q", "-D", "side", "tagged"]);
    let cm = s.commit(&[("src/lib.rs", "c\n")], "c");
    let mut receipts = Vec::new();
    for (commit, minute) in [(a, 1), (s1, 2), (s2, 3), (t, 4), (s1, 5)] {
        receipts.push(s.run(&key(), &c, "test", commit, 0, minute).commit);
    }
    receipts.push(review(&s, s1, 6).commit);
    receipts.push(s.run(&key(), &c, "test", cm, 0, 7).commit);
    (s, vec![a, s1, s2, t, cm])
}

/// The rules of a retention an hour after [`history`]'s receipts: every one is
/// old, the reach is the repository's.
fn old_rules(s: &Scratch) -> Rules {
    Rules {
        cutoff_ms: T0 + 60 * 60_000,
        kept: kept_commits(&s.store).unwrap().0,
        named: HashSet::new(),
    }
}

#[test]
fn retain_drops_exactly_the_old_unreached_checks_and_the_chain_still_verifies() {
    let (s, commits) = history();
    let (kept, refs) = kept_commits(&s.store).unwrap();
    assert!(refs.contains(&"refs/heads/main".to_owned()), "{refs:?}");
    assert!(refs.contains(&"refs/tags/v1".to_owned()), "{refs:?}");
    for (commit, reached) in commits.iter().zip([true, false, false, true, true]) {
        assert_eq!(kept.contains(commit), reached, "{commit}");
    }
    let before = crate::verify::verify(&s.store, &trust(), None, &mut |_| {}).unwrap();
    assert!(before.findings.is_empty(), "{:?}", before.findings);
    let when = "2026-12-05T00:00:00.000Z";
    let r = Rules {
        cutoff_ms: T0 + 60 * 60_000,
        kept,
        named: HashSet::new(),
    };
    let dry = retain(&s.store, r.clone(), when, true).unwrap();
    assert_eq!(dry.len(), 1);
    assert_eq!(
        dry[0].plan.stubs.keys().copied().collect::<Vec<_>>(),
        [1, 2, 4]
    );
    assert!(dry[0].rewritten.is_none());
    let tip_before = s.store.chain_tip(&writer()).unwrap().unwrap();
    assert_eq!(
        s.store.read_chain(&writer()).unwrap().len(),
        7,
        "a dry run drops nothing"
    );

    let done = retain(&s.store, r.clone(), when, false).unwrap();
    let plan = &done[0].plan;
    assert_eq!(plan.stubs.keys().copied().collect::<Vec<_>>(), [1, 2, 4]);
    assert_eq!(plan.kept.get(&Keep::Reached), Some(&2)); // a, t
    assert_eq!(plan.kept.get(&Keep::Decision), Some(&1));
    assert_eq!(plan.kept.get(&Keep::Tip), Some(&1));
    let rewritten = done[0].rewritten.clone().unwrap();
    assert_eq!((rewritten.dropped, rewritten.rewritten), (3, 3)); // 1, 2, 4 go; 3, 5, 6 move
    assert_ne!(rewritten.tip, tip_before);
    assert_eq!(s.store.chain_tip(&writer()).unwrap(), Some(rewritten.tip));

    // the receipts left are the same receipts, the stubs keep the ids that went
    let items = s.store.chain_items(&writer(), rewritten.tip).unwrap();
    let stubbed: Vec<u64> = items
        .iter()
        .filter_map(|i| match i {
            ChainItem::Stub(st) => Some(st.stub.index),
            ChainItem::Entry(_) => None,
        })
        .collect();
    assert_eq!(stubbed, [1, 2, 4]);
    for (n, i) in items.iter().enumerate() {
        assert_eq!(i.id_index().1, n as u64);
    }
    assert_eq!(s.store.read_chain(&writer()).unwrap().len(), 4);
    let after = crate::verify::verify(&s.store, &trust(), None, &mut |_| {}).unwrap();
    assert!(after.findings.is_empty(), "{:?}", after.findings);
    assert_eq!((after.receipts, after.stubs), (4, 3));
    // stock git reads the rewritten chain whole
    s.git(&["fsck", "--strict", "--no-dangling"]);

    // again: nothing more goes, the stubs stay as they are
    let again = retain(&s.store, r, when, false).unwrap();
    assert!(again[0].plan.stubs.is_empty());
    assert_eq!(again[0].plan.stubs_before, 3);
    assert!(again[0].rewritten.is_none());
    assert_eq!(s.store.chain_tip(&writer()).unwrap(), Some(rewritten.tip));
}

#[test]
fn a_receipt_another_names_stays_and_a_young_one_stays() {
    let (s, _) = history();
    let (kept, _) = kept_commits(&s.store).unwrap();
    let chain = s.store.read_chain(&writer()).unwrap(); // newest first
    let named_id = chain[5].receipt.id().to_owned(); // receipt 1
    let r = Rules {
        cutoff_ms: T0 + 60 * 60_000,
        kept: kept.clone(),
        named: [named_id].into_iter().collect(),
    };
    let chains = read_chains(&s.store).unwrap();
    let p = plan(&chains[0].1, &r, "2026-12-05T00:00:00Z");
    assert_eq!(p.stubs.keys().copied().collect::<Vec<_>>(), [2, 4]);
    assert_eq!(p.kept.get(&Keep::Named), Some(&1));
    // a cutoff before receipt 2 started: 2 and 4 are young
    let young = Rules {
        cutoff_ms: T0 + 3 * 60_000,
        kept,
        named: HashSet::new(),
    };
    let p = plan(&chains[0].1, &young, "2026-12-05T00:00:00Z");
    assert_eq!(p.stubs.keys().copied().collect::<Vec<_>>(), [1]);
    assert_eq!(p.kept.get(&Keep::Young), Some(&3)); // 2, 4, 6 (5 is a decision)
}

#[test]
fn retention_refuses_a_repository_with_nothing_protected_or_a_shallow_one() {
    let (s, _) = history();
    s.git(&["config", "receipt.protectedBranch", "release"]);
    let store = crate::store::Store::open(s.dir.path()).unwrap();
    assert!(matches!(
        kept_commits(&store),
        Err(RetainError::NothingProtected)
    ));
    // a remote-tracking branch of a protected name counts as the branch
    let head = s.head();
    s.git(&[
        "update-ref",
        "refs/remotes/origin/release",
        &head.to_string(),
    ]);
    let store = crate::store::Store::open(s.dir.path()).unwrap();
    let (kept, refs) = kept_commits(&store).unwrap();
    assert!(kept.contains(&head));
    assert!(
        refs.contains(&"refs/remotes/origin/release".to_owned()),
        "{refs:?}"
    );
    assert!(!refs.contains(&"refs/heads/main".to_owned()), "{refs:?}");
    s.git(&["config", "receipt.protectedBranch", "bad name?"]);
    let store = crate::store::Store::open(s.dir.path()).unwrap();
    assert!(matches!(
        kept_commits(&store),
        Err(RetainError::Misconfigured(_))
    ));
    s.git(&["config", "--unset", "receipt.protectedBranch"]);
    std::fs::write(s.dir.path().join(".git/shallow"), format!("{head}\n")).unwrap();
    let store = crate::store::Store::open(s.dir.path()).unwrap();
    assert!(matches!(kept_commits(&store), Err(RetainError::Shallow)));
    let e = RetainError::Shallow.to_string();
    assert!(e.contains("shallow"), "{e}");
}

#[test]
fn a_rewrite_refuses_the_tip_a_stub_of_another_receipt_and_an_index_with_no_receipt() {
    let (s, _) = history();
    let chains = read_chains(&s.store).unwrap();
    let (w, items) = &chains[0];
    let tip = items.last().unwrap().commit();
    let stub_at = |n: usize| match &items[n] {
        ChainItem::Entry(e) => Stub::of(&e.receipt, "2026-12-05T00:00:00Z").unwrap(),
        ChainItem::Stub(_) => unreachable!(),
    };
    let one = |k: u64, st: Stub| [(k, st)].into_iter().collect::<BTreeMap<_, _>>();
    let e = s
        .store
        .rewrite_with_stubs(w, items, &one(6, stub_at(6)))
        .unwrap_err();
    assert!(e.to_string().contains("never dropped"), "{e}");
    let e = s
        .store
        .rewrite_with_stubs(w, items, &one(1, stub_at(2)))
        .unwrap_err();
    assert!(e.to_string().contains("not sha256:"), "{e}");
    let mut misplaced = stub_at(1);
    misplaced.index = 5;
    let e = s
        .store
        .rewrite_with_stubs(w, items, &one(1, misplaced))
        .unwrap_err();
    assert!(e.to_string().contains("names sha256:"), "{e}");
    let e = s
        .store
        .rewrite_with_stubs(w, items, &one(9, stub_at(2)))
        .unwrap_err();
    assert!(e.to_string().contains("not receipts of this chain"), "{e}");
    // nothing moved
    assert_eq!(s.store.chain_tip(w).unwrap(), Some(tip));
    assert_eq!(s.store.read_chain(w).unwrap().len(), 7);
}

fn unv(bytes: &[u8]) -> Result<Receipt<Unverified>, crate::receipt::ReceiptError> {
    Receipt::parse(bytes)
}

/// A commit on `parent` whose tree holds `stub.json` = `stub`, made with git.
fn plant_stub(s: &Scratch, stub: &Stub, parent: ObjectId) -> ObjectId {
    let b = blob(s, &stub.to_bytes());
    plant_tree(s, &format!("100644 blob {b}\tstub.json\n"), Some(parent))
}

#[test]
fn a_stub_at_the_tip_or_out_of_its_place_is_refused_by_the_entry_rules_and_by_verify() {
    let (s, _) = history();
    let done = retain(&s.store, old_rules(&s), "2026-12-05T00:00:00Z", false).unwrap();
    let tip = done[0].rewritten.clone().unwrap().tip;
    let top = s.store.chain_entry(&writer(), tip).unwrap().receipt;
    let k = key();
    let known = crate::store::admit::only_key(k.public());
    // the rewritten chain is admitted whole from its root: 4 receipts, 3 stubs
    let a = s.store.admit(&writer(), tip, None, &known).unwrap();
    assert!(a.refusal.is_none(), "{:?}", a.refusal);
    assert_eq!((a.admitted, a.stubs, a.valid_tip), (4, 3, Some(tip)));
    // a stub on top: linked, but a chain never ends in one
    let mut on_top = Stub::of(&top, "2026-12-05T00:00:00Z").unwrap();
    on_top.prev = Some(top.id().to_owned());
    on_top.index += 1;
    on_top.id = format!("sha256:{}", "9".repeat(64));
    let planted = plant_stub(&s, &on_top, tip);
    let a = s
        .store
        .admit(&writer(), planted, Some(tip), &known)
        .unwrap();
    assert_eq!(a.valid_tip_or(Some(tip)), Some(tip));
    let refusal = a.refusal.expect("refused");
    assert!(refusal.reason.contains("at the tip"), "{refusal}");
    s.git(&[
        "update-ref",
        &format!("refs/receipts/{}", writer()),
        &planted.to_string(),
    ]);
    let v = crate::verify::verify(&s.store, &trust(), None, &mut |_| {}).unwrap();
    assert!(
        v.findings
            .iter()
            .any(|f| f.kind == "stub" && f.reason.contains("tip is a retention stub")),
        "{:?}",
        v.findings
    );
    // a stub that does not follow the entry below it
    let mut astray = on_top.clone();
    astray.prev = Some(format!("sha256:{}", "8".repeat(64)));
    let planted = plant_stub(&s, &astray, tip);
    let a = s
        .store
        .admit(&writer(), planted, Some(tip), &known)
        .unwrap();
    assert_eq!(
        a.refusal.expect("refused").rule,
        crate::store::admit::Rule::Link
    );
}

#[test]
fn retain_keeps_a_receipt_an_acceptance_cites_as_evidence() {
    let (s, commits) = history();
    let chain = s.store.read_chain(&writer()).unwrap(); // newest first
    let cited = chain[4].receipt.id().to_owned(); // receipt 2, of s2
    accept_citing(&s, &key(), commits[4], &cited);
    let done = retain(&s.store, old_rules(&s), "2026-12-05T00:00:00Z", false).unwrap();
    let plan = &done[0].plan;
    assert_eq!(plan.stubs.keys().copied().collect::<Vec<_>>(), [1, 4]);
    assert_eq!(plan.kept.get(&Keep::Named), Some(&1));
    assert!(
        s.store
            .read_chain(&writer())
            .unwrap()
            .iter()
            .any(|e| e.receipt.id() == cited)
    );
}

/// An acceptance by `key` (its default writer) of `commit`, whose check
/// `test` cites receipt `cited` as evidence.
fn accept_citing(s: &Scratch, key: &SigningKey, commit: ObjectId, cited: &str) {
    let body = crate::decision::rules::acceptance_body(
        s,
        commit,
        vec![crate::receipt::Criterion {
            kind: crate::receipt::CriterionKind::Check,
            name: "test".into(),
            state: crate::receipt::State::Present,
            inputs: commit.to_string(),
            evidence: vec![cited.to_owned()],
        }],
    );
    append_decision(
        &s.store,
        &writer_id(key.public(), "default"),
        key,
        body.subject.clone(),
        Payload::Acceptance(body.acceptance.clone().unwrap()),
    )
    .unwrap();
}

/// A commit of `tree_lines` (as `git mktree` reads them) on `parent`, made with git.
fn plant_tree(s: &Scratch, tree_lines: &str, parent: Option<ObjectId>) -> ObjectId {
    let mut child = std::process::Command::new("git")
        .args(["mktree"])
        .current_dir(s.dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), tree_lines.as_bytes()).unwrap();
    let tree = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
    let mut args = vec!["commit-tree".to_owned(), tree.trim().to_owned()];
    if let Some(p) = parent {
        args.extend(["-p".to_owned(), p.to_string()]);
    }
    args.extend(["-m".to_owned(), "planted".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ObjectId::from_hex(s.git(&args).as_bytes()).unwrap()
}

fn blob(s: &Scratch, bytes: &[u8]) -> String {
    let path = s.dir.path().join("planted-blob");
    std::fs::write(&path, bytes).unwrap();
    let id = s.git(&["hash-object", "-w", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    id
}

#[test]
fn the_entry_rules_hold_a_stub_to_its_place_at_the_root_and_above_an_entry() {
    let s = Scratch::new();
    let k = key();
    let known = crate::store::admit::only_key(k.public());
    let root = |index: u64, prev: Option<String>| Stub {
        format: crate::store::stub::STUB_FORMAT.into(),
        id: format!("sha256:{}", "a".repeat(64)),
        index,
        prev,
        check: "test".into(),
        subject: "1".repeat(40),
        started_at: "2026-01-01T00:00:00Z".into(),
        dropped_at: "2026-12-05T00:00:00Z".into(),
    };
    let plant_root = |st: &Stub| {
        let b = blob(&s, &st.to_bytes());
        plant_tree(&s, &format!("100644 blob {b}\tstub.json\n"), None)
    };
    // a stub at index 0 with no parent follows nothing, as a root entry does;
    // alone it is a chain that ends in a stub
    let good = plant_root(&root(0, None));
    let a = s.store.admit(&writer(), good, None, &known).unwrap();
    assert_eq!((a.admitted, a.stubs), (0, 1));
    assert!(a.refusal.unwrap().reason.contains("at the tip"));
    let bad = plant_root(&root(1, Some(format!("sha256:{}", "b".repeat(64)))));
    let a = s.store.admit(&writer(), bad, None, &known).unwrap();
    let r = a.refusal.unwrap();
    assert!(r.reason.contains("does not follow"), "{r}");
    assert_eq!(a.stubs, 0);
    // a stub at index 0 that has a parent is not a root
    let under = plant_root(&root(0, None));
    let b = blob(&s, &root(0, None).to_bytes());
    let parented = plant_tree(&s, &format!("100644 blob {b}\tstub.json\n"), Some(under));
    let a = s.store.admit(&writer(), parented, None, &known).unwrap();
    assert!(a.refusal.unwrap().reason.contains("does not follow"));
    assert_eq!(a.stubs, 1);
    // a tree with more than stub.json is no stub
    let extra = blob(&s, b"extra");
    let crowded = plant_tree(
        &s,
        &format!("100644 blob {b}\tstub.json\n100644 blob {extra}\tzzz\n"),
        None,
    );
    let a = s.store.admit(&writer(), crowded, None, &known).unwrap();
    assert!(a.refusal.unwrap().reason.contains("alone"));
}

#[test]
fn a_stub_above_an_entry_must_name_it_by_index_parent_and_prev() {
    let (s, _) = history();
    let done = retain(&s.store, old_rules(&s), "2026-12-05T00:00:00Z", false).unwrap();
    let tip = done[0].rewritten.clone().unwrap().tip;
    let top = s.store.chain_entry(&writer(), tip).unwrap().receipt;
    let k = key();
    let known = crate::store::admit::only_key(k.public());
    let mut good = Stub::of(&top, "2026-12-05T00:00:00Z").unwrap();
    good.prev = Some(top.id().to_owned());
    good.index += 1;
    good.id = format!("sha256:{}", "9".repeat(64));
    let below = s.store.chain_entry(&writer(), tip).unwrap().parent.unwrap();
    let cases: Vec<(Stub, ObjectId)> = vec![
        (good.clone(), tip),
        // each of the three links wrong alone
        (
            Stub {
                prev: Some(format!("sha256:{}", "8".repeat(64))),
                ..good.clone()
            },
            tip,
        ),
        (
            Stub {
                index: good.index + 1,
                ..good.clone()
            },
            tip,
        ),
        (good.clone(), below),
    ];
    for (n, (stub, parent)) in cases.into_iter().enumerate() {
        let planted = plant_stub(&s, &stub, parent);
        let a = s.store.admit(&writer(), planted, None, &known).unwrap();
        let reason = a.refusal.expect("refused").reason;
        if n == 0 {
            // in its place: refused only as the tip
            assert!(reason.contains("at the tip"), "{reason}");
            assert_eq!(a.stubs, 4);
        } else {
            assert!(reason.contains("does not follow"), "{n}: {reason}");
            assert_eq!(a.stubs, 3);
        }
    }
}

#[test]
fn admission_ends_before_a_receipt_whose_signature_fails_stubs_counted_below_it() {
    let (s, _) = history();
    let done = retain(&s.store, old_rules(&s), "2026-12-05T00:00:00Z", false).unwrap();
    let tip = done[0].rewritten.clone().unwrap().tip;
    let entry = s.store.chain_entry(&writer(), tip).unwrap();
    // the tip's receipt, one signed value changed: canonical, linked, forged
    let forged_tip = s.forged(tip, entry.parent, "\"duration_ms\":5", "\"duration_ms\":6");
    let k = key();
    let known = crate::store::admit::only_key(k.public());
    let a = s.store.admit(&writer(), forged_tip, None, &known).unwrap();
    assert_eq!(
        a.refusal.unwrap().rule,
        crate::store::admit::Rule::Signature
    );
    // receipts 0, 3 and 5 (6 was forged), the stubs 1, 2 and 4 below it
    assert_eq!((a.admitted, a.stubs), (3, 3));
    assert_eq!(a.valid_tip, entry.parent);
}

/// A copy of chain commit `commit` with `receipt.json` alone in its tree (no
/// `signer.pub`: the same receipt, other bytes in git), on `parent`.
fn without_signer_file(s: &Scratch, commit: ObjectId, parent: ObjectId) -> ObjectId {
    let listing = s.git(&["ls-tree", &format!("{commit}^{{tree}}")]);
    let line = listing
        .lines()
        .find(|l| l.ends_with("\treceipt.json"))
        .unwrap();
    plant_tree(s, &format!("{line}\n"), Some(parent))
}

#[test]
fn a_rewrite_that_changes_a_kept_receipt_s_bytes_or_stubs_what_retention_keeps_is_refused() {
    let (s, _) = history();
    let w = writer();
    let ours = s.store.chain_tip(&w).unwrap().unwrap();
    let done = retain(&s.store, old_rules(&s), "2026-12-05T00:00:00Z", false).unwrap();
    let theirs = done[0].rewritten.clone().unwrap().tip;
    let k = key();
    let known = crate::store::admit::only_key(k.public());
    let chain = format!("refs/receipts/{w}");
    // the rewrite, with receipt 6 (the tip) in another tree
    let below = s.store.chain_entry(&w, theirs).unwrap().parent.unwrap();
    let altered = without_signer_file(&s, theirs, below);
    s.git(&["update-ref", &chain, &ours.to_string()]);
    let out = crate::sync::retained(&s.store, &w, ours, altered, &known).unwrap();
    match out {
        Some(crate::sync::FetchOutcome::Rejected(why)) => {
            assert!(why.contains("other bytes"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.store.chain_tip(&w).unwrap(), Some(ours));
    // the rewrite as retain made it is taken
    let out = crate::sync::retained(&s.store, &w, ours, theirs, &known).unwrap();
    assert!(
        matches!(
            out,
            Some(crate::sync::FetchOutcome::Retained {
                dropped: 3,
                taken: 0,
                kept_local: 0
            })
        ),
        "{out:?}"
    );
    assert_eq!(s.store.chain_tip(&w).unwrap(), Some(theirs));
}

#[test]
fn a_stub_at_the_root_verifies_and_one_below_an_unreadable_entry_is_no_tip() {
    let (s, commits) = history();
    let (mut kept, _) = kept_commits(&s.store).unwrap();
    kept.remove(&commits[0]); // receipt 0 may go too
    let r = Rules {
        cutoff_ms: T0 + 60 * 60_000,
        kept,
        named: HashSet::new(),
    };
    let done = retain(&s.store, r, "2026-12-05T00:00:00Z", false).unwrap();
    assert_eq!(
        done[0].plan.stubs.keys().copied().collect::<Vec<_>>(),
        [0, 1, 2, 4]
    );
    let v = crate::verify::verify(&s.store, &trust(), None, &mut |_| {}).unwrap();
    assert!(v.findings.is_empty(), "{:?}", v.findings);
    assert_eq!((v.receipts, v.stubs), (3, 4));
    // receipt 3 made unreadable: what is below it is still no tip
    let w = writer();
    let tip = s.store.chain_tip(&w).unwrap().unwrap();
    let items: Vec<ObjectId> = s
        .store
        .chain_items(&w, tip)
        .unwrap()
        .iter()
        .map(ChainItem::commit)
        .collect(); // 0..=6
    let junk = blob(&s, b"not a receipt");
    let broken = plant_tree(
        &s,
        &format!("100644 blob {junk}\treceipt.json\n"),
        Some(items[2]),
    );
    let above: Vec<ObjectId> = items[4..].to_vec();
    let new_tip = s.store.recommit_onto(&above, broken).unwrap();
    s.git(&[
        "update-ref",
        &format!("refs/receipts/{w}"),
        &new_tip.to_string(),
    ]);
    let v = crate::verify::verify(&s.store, &trust(), None, &mut |_| {}).unwrap();
    assert!(!v.findings.is_empty());
    assert!(
        v.findings
            .iter()
            .all(|f| !f.reason.contains("tip is a retention stub")),
        "{:?}",
        v.findings
    );
}

#[test]
fn a_divergence_without_stubs_is_no_retention() {
    let (s, commits) = history();
    let w = writer();
    let ours = s.store.chain_tip(&w).unwrap().unwrap();
    let parent = s.store.chain_entry(&w, ours).unwrap().parent.unwrap();
    // the same key wrote another receipt at the tip's index elsewhere
    let chain = format!("refs/receipts/{w}");
    s.git(&["update-ref", &chain, &parent.to_string()]);
    let c = contract(CONTRACT);
    let theirs = s.run(&key(), &c, "test", commits[4], 1, 50).commit;
    s.git(&["update-ref", &chain, &ours.to_string()]);
    let k = key();
    let known = crate::store::admit::only_key(k.public());
    let out = crate::sync::retained(&s.store, &w, ours, theirs, &known).unwrap();
    assert!(out.is_none(), "{out:?}");
    assert_eq!(s.store.chain_tip(&w).unwrap(), Some(ours));
}

#[test]
fn a_clone_s_own_receipts_survive_taking_a_retained_chain_that_grew_elsewhere_too() {
    let (s, commits) = history();
    let w = writer();
    let chain = format!("refs/receipts/{w}");
    let before = s.store.chain_tip(&w).unwrap().unwrap();
    retain(&s.store, old_rules(&s), "2026-12-05T00:00:00Z", false).unwrap();
    // the remote: retained, then two receipts by the key elsewhere
    let c = contract(CONTRACT);
    s.run(&key(), &c, "test", commits[4], 0, 60);
    let theirs = s.run(&key(), &c, "test", commits[4], 0, 61).commit;
    // this clone: the chain before retention, and one receipt of its own
    s.git(&["update-ref", &chain, &before.to_string()]);
    let own = s.run(&key(), &c, "test", commits[4], 1, 62);
    let k = key();
    let known = crate::store::admit::only_key(k.public());
    let out = crate::sync::retained(&s.store, &w, own.commit, theirs, &known).unwrap();
    assert!(
        matches!(
            out,
            Some(crate::sync::FetchOutcome::Retained {
                dropped: 3,
                taken: 0,
                kept_local: 1
            })
        ),
        "{out:?}"
    );
    // its own receipt on the remote's entry below the fork: the remote's two
    // are the push's to reconcile, as with any divergence
    let tip = s.store.chain_tip(&w).unwrap().unwrap();
    let top = s.store.chain_entry(&w, tip).unwrap();
    assert_eq!(top.receipt.id(), own.receipt.id());
    assert_eq!(s.store.read_chain(&w).unwrap().len(), 5);
}

#[test]
fn the_index_counts_a_receipt_only_linked_to_the_entry_below_it_stub_or_receipt() {
    let (s, commits) = history();
    let w = writer();
    let chain = format!("refs/receipts/{w}");
    let done = retain(&s.store, old_rules(&s), "2026-12-05T00:00:00Z", false).unwrap();
    let tip = done[0].rewritten.clone().unwrap().tip;
    let items: Vec<ObjectId> = s
        .store
        .chain_items(&w, tip)
        .unwrap()
        .iter()
        .map(ChainItem::commit)
        .collect(); // 0..=6: stubs at 1, 2 and 4
    let counted = |s: &Scratch| {
        crate::store::refs_may_have_moved();
        s.store
            .receipt_index()
            .unwrap()
            .lookup(&commits[4])
            .unwrap()
            .len()
    };
    // receipt 6 (about main's c) counts on the chain as it is
    assert_eq!(counted(&s), 1);
    let tree_of = |c: ObjectId| s.git(&["ls-tree", &format!("{c}^{{tree}}")]) + "\n";
    // receipt 6 straight on receipt 3: skipped 4 and 5, it follows nothing
    let skipping = plant_tree(&s, &tree_of(items[6]), Some(items[3]));
    s.git(&["update-ref", &chain, &skipping.to_string()]);
    assert_eq!(counted(&s), 0);
    // on a stub of 5 that names another id: the index lines up, prev does not
    // (5 is a review, which retention keeps: its stub is made by hand)
    let receipt5 = s.store.chain_entry(&w, items[5]).unwrap().receipt;
    let b5 = receipt5.body();
    let faithful = Stub {
        format: crate::store::stub::STUB_FORMAT.into(),
        id: receipt5.id().to_owned(),
        index: b5.chain.index,
        prev: b5.chain.prev.clone(),
        check: "code".into(),
        subject: b5.subject.commit.clone(),
        started_at: "2026-01-01T00:00:00Z".into(),
        dropped_at: "2026-12-05T00:00:00Z".into(),
    };
    let mut astray = faithful.clone();
    astray.id = format!("sha256:{}", "7".repeat(64));
    let stub5 = plant_stub(&s, &astray, items[4]);
    let above = plant_tree(&s, &tree_of(items[6]), Some(stub5));
    s.git(&["update-ref", &chain, &above.to_string()]);
    assert_eq!(counted(&s), 0);
    // on a faithful stub of 5: it counts again
    let stub5 = plant_stub(&s, &faithful, items[4]);
    let above = plant_tree(&s, &tree_of(items[6]), Some(stub5));
    s.git(&["update-ref", &chain, &above.to_string()]);
    assert_eq!(counted(&s), 1);
    // the writer's own key signs receipt 6 again as #9 on 5: prev lines up,
    // the index does not
    let mut body = s
        .store
        .chain_entry(&w, items[6])
        .unwrap()
        .receipt
        .body()
        .clone();
    body.chain.index = 9;
    let skipped = crate::receipt::Receipt::sign(body, &key()).unwrap();
    let bytes = blob(&s, skipped.bytes());
    let listing = tree_of(items[6]);
    let signer = listing
        .lines()
        .find(|l| l.ends_with("\tsigner.pub"))
        .unwrap();
    let lines = format!("{signer}\n100644 blob {bytes}\treceipt.json\n");
    let numbered = plant_tree(&s, &lines, Some(items[5]));
    s.git(&["update-ref", &chain, &numbered.to_string()]);
    assert_eq!(counted(&s), 0);
}

#[test]
fn taking_a_retained_chain_refuses_a_stub_of_a_receipt_another_writer_s_acceptance_cites() {
    let (mut s, commits) = history();
    let w = writer();
    let chain = format!("refs/receipts/{w}");
    let ours = s.store.chain_tip(&w).unwrap().unwrap();
    let cited = s.store.read_chain(&w).unwrap()[4].receipt.id().to_owned(); // receipt 2, of s2
    // the remote's retention, made where that acceptance was not (yet) seen
    let done = retain(&s.store, old_rules(&s), "2026-12-05T00:00:00Z", false).unwrap();
    assert_eq!(
        done[0].plan.stubs.keys().copied().collect::<Vec<_>>(),
        [1, 2, 4]
    );
    let theirs = done[0].rewritten.clone().unwrap().tip;
    s.git(&["update-ref", &chain, &ours.to_string()]);
    // here another writer's chain holds an acceptance citing receipt 2
    let other = SigningKey::from_seed(&[8; 32]);
    accept_citing(&s, &other, commits[2], &cited);
    let k = key();
    let known = crate::store::admit::only_key(k.public());
    let out = crate::sync::retained(&s.store, &w, ours, theirs, &known).unwrap();
    match out {
        Some(crate::sync::FetchOutcome::Rejected(why)) => {
            assert!(why.contains(&cited) && why.contains("named"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.store.chain_tip(&w).unwrap(), Some(ours));
    // a shallow clone cannot see every name or reach: refused, said so
    let shallow = s.dir.path().join(".git/shallow");
    std::fs::write(&shallow, format!("{}\n", commits[0])).unwrap();
    s.reopen();
    match crate::sync::retained(&s.store, &w, ours, theirs, &known).unwrap() {
        Some(crate::sync::FetchOutcome::Rejected(why)) => {
            assert!(why.contains("shallow"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.store.chain_tip(&w).unwrap(), Some(ours));
}
