//! The verification rules (the module doc, `docs/trust.md` sections 1 and 7) as
//! unit tests: chains appended through the recorder in a repository made by stock
//! git, then broken with git plumbing the way a server or a hand could.

use super::*;
use crate::freshness::rules::{Scratch, contract};
use crate::receipt::writer_id;
use crate::sign::SigningKey;
use crate::trust::{TrustOrigin, Trusted};

fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed(&[seed; 32])
}

fn trust_of(seeds: &[u8]) -> TrustSet {
    let mut t = TrustSet::default();
    for &i in seeds {
        t.add(key(i).public().clone(), TrustOrigin::Config);
    }
    t
}

const CONTRACT: &str = "[check \"test\"]\n\trun = true\n\tpath = src\n";

/// A repository with `n` receipts by key 1 on chain `default`: their chain commits.
fn chain_of(n: usize) -> (Scratch, Vec<ObjectId>) {
    let s = Scratch::new();
    let c = contract(CONTRACT);
    let mut commits = Vec::new();
    for i in 0..n {
        let h = s.commit(&[("src/lib.rs", &format!("{i}\n"))], "src");
        commits.push(s.run(&key(1), &c, "test", h, 0, i as u64).commit);
    }
    (s, commits)
}

/// A verify of `s`, with no record of the notes it built whole (the store
/// writes one as it notes each receipt; see `store::whole_notes`), so that a
/// run from a checkpoint reads the notes these tests are about; what the
/// record spares is tested apart
/// (`section_7_a_run_from_a_checkpoint_passes_over_notes_built_whole_here`).
fn run(s: &Scratch, trust: &TrustSet, checkpoint: Option<&Checkpoint>) -> Report {
    let _ = std::fs::remove_file(s.store.whole_notes_path());
    run_as_is(s, trust, checkpoint)
}

/// [`run`], with whatever record of notes built whole the store holds.
fn run_as_is(s: &Scratch, trust: &TrustSet, checkpoint: Option<&Checkpoint>) -> Report {
    let mut seen = 0;
    let r = verify(&s.store, trust, checkpoint, &mut |n| seen = n).unwrap();
    assert_eq!(seen, r.receipts, "progress ends at the receipts checked");
    r
}

fn kinds(r: &Report) -> Vec<(&'static str, Option<u64>)> {
    r.findings.iter().map(|f| (f.kind, f.index)).collect()
}

fn writer() -> String {
    writer_id(key(1).public(), "default")
}

/// A chain commit with `entry`'s tree and the given parents.
fn commit_tree(s: &Scratch, entry: ObjectId, parents: &[ObjectId]) -> ObjectId {
    let mut args = vec!["commit-tree".to_owned(), format!("{entry}^{{tree}}")];
    for p in parents {
        args.push("-p".into());
        args.push(p.to_string());
    }
    args.push("-m".into());
    args.push("forged".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ObjectId::from_hex(s.git(&args).as_bytes()).unwrap()
}

fn set_chain(s: &mut Scratch, to: ObjectId) {
    s.git(&[
        "update-ref",
        &crate::store::chain::chain_ref(&writer()),
        &to.to_string(),
    ]);
    s.reopen();
}

#[test]
fn a_whole_chain_by_a_trusted_key_is_clean() {
    let (s, commits) = chain_of(3);
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(r.findings, []);
    assert_eq!((r.chains, r.receipts, r.covered), (1, 3, 0));
    assert_eq!(r.tips.get(&writer()), Some(&commits[2].to_string()));
    assert!(r.note_lines >= 3, "each receipt is noted: {}", r.note_lines);
    assert_eq!(r.warnings, []);
    assert!(r.untrusted.is_empty());
}

#[test]
fn section_1_untrusted_revoked_and_out_of_window_receipts_are_findings() {
    let (s, _) = chain_of(2);
    let r = run(&s, &trust_of(&[2]), None);
    assert_eq!(kinds(&r), [("untrusted", Some(1)), ("untrusted", Some(0))]);
    assert_eq!(
        r.findings[0].reason,
        format!(
            "signed by {}, which is not a trusted key",
            key(1).public().fingerprint()
        )
    );
    // a chain no trusted key could have written is set aside, not a finding
    let mut r = r;
    r.set_aside_untrusted(&trust_of(&[2]));
    assert_eq!(r.findings, []);
    assert_eq!(r.untrusted.len(), 2);
    assert_eq!(r.untrusted_chains(), 1);
    // set aside only when no trusted key owns the chain
    let mut r = run(&s, &trust_of(&[2]), None);
    r.set_aside_untrusted(&trust_of(&[1]));
    assert_eq!(r.findings.len(), 2);
    let mut revoked = TrustSet::default();
    revoked.add_entry(Trusted {
        key: key(1).public().clone(),
        origin: TrustOrigin::Config,
        valid_after: None,
        valid_before: None,
        revoked: true,
    });
    let r = run(&s, &revoked, None);
    assert_eq!(kinds(&r), [("revoked", Some(1)), ("revoked", Some(0))]);
    let mut window = TrustSet::default();
    window.add_entry(Trusted {
        key: key(1).public().clone(),
        origin: TrustOrigin::Config,
        valid_after: Some(crate::freshness::rules::T0 + 30_000),
        valid_before: None,
        revoked: false,
    });
    let r = run(&s, &window, None);
    assert_eq!(kinds(&r), [("window", Some(0))]);
}

#[test]
fn a_receipt_removed_from_the_middle_breaks_the_links() {
    let (mut s, c) = chain_of(3);
    // entry 2 placed directly on entry 0
    let forged = commit_tree(&s, c[2], &[c[0]]);
    set_chain(&mut s, forged);
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(kinds(&r), [("link", Some(2)), ("link", Some(2))]);
    assert_eq!(
        r.findings[0].reason,
        "index 2 follows index 0: a receipt is missing, duplicated or reordered"
    );
    assert!(
        r.findings[1].reason.starts_with("prev is sha256:")
            && r.findings[1]
                .reason
                .contains(", but the receipt before it is sha256:"),
        "{}",
        r.findings[1].reason
    );
    assert_eq!(r.findings[0].commit, Some(forged.to_string()));
}

#[test]
fn a_chain_whose_root_is_not_index_0_lost_its_first_receipts() {
    let (mut s, c) = chain_of(2);
    let forged = commit_tree(&s, c[1], &[]);
    set_chain(&mut s, forged);
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(kinds(&r), [("link", Some(1))]);
    assert_eq!(
        r.findings[0].reason,
        "is the root of the chain but has index 1; earlier receipts were removed"
    );
}

#[test]
fn a_chain_commit_with_two_parents_is_a_shape_finding() {
    let (mut s, c) = chain_of(2);
    // git drops a repeated parent: the second is another commit
    let forged = commit_tree(&s, c[1], &[c[0], s.head()]);
    set_chain(&mut s, forged);
    let r = run(&s, &trust_of(&[1]), None);
    assert!(
        r.findings.iter().any(|f| f.kind == "shape"
            && f.reason == "chain commit has 2 parents; a chain is linear (followed the first)"),
        "{:?}",
        r.findings
    );
}

#[test]
fn an_entry_that_is_no_receipt_is_a_finding_and_the_links_around_it_are_not_checked() {
    let (mut s, c) = chain_of(2);
    let empty_tree = s.git(&["hash-object", "-t", "tree", "-w", "/dev/null"]);
    let junk = ObjectId::from_hex(
        s.git(&[
            "commit-tree",
            &empty_tree,
            "-p",
            &c[1].to_string(),
            "-m",
            "junk",
        ])
        .as_bytes(),
    )
    .unwrap();
    set_chain(&mut s, junk);
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(kinds(&r), [("shape", None)], "{:?}", r.findings);
    assert!(r.findings[0].reason.starts_with("invalid receipt: "));
    assert_eq!(r.receipts, 3);
}

#[test]
fn section_7_a_checkpoint_spares_what_it_covers_and_catches_a_rollback() {
    let (mut s, c) = chain_of(2);
    let trust = trust_of(&[1]);
    let r = run(&s, &trust, None);
    let cp = Checkpoint::from_report(&r, &trust);
    assert_eq!(cp.version, CHECKPOINT_VERSION);
    assert!(cp.vouches_under(&trust));
    assert!(!cp.vouches_under(&trust_of(&[1, 2])));
    assert!(
        !Checkpoint {
            version: 1,
            ..cp.clone()
        }
        .vouches_under(&trust)
    );
    // more receipts: only the new one is checked
    let h = s.commit(&[("src/lib.rs", "new\n")], "src");
    s.run(&key(1), &contract(CONTRACT), "test", h, 0, 9);
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(r.findings, []);
    assert_eq!((r.receipts, r.covered), (1, 2));
    // under another trust, everything again
    let r = run(&s, &trust_of(&[1, 3]), Some(&cp));
    assert_eq!((r.receipts, r.covered), (3, 0));
    // a version 1 checkpoint: tips checked, every receipt again
    let v1 = Checkpoint {
        version: 1,
        trust: None,
        chains: cp.chains.clone(),
        notes: Default::default(),
        signed_elsewhere: false,
    };
    let r = run(&s, &trust, Some(&v1));
    assert_eq!((r.receipts, r.covered, r.findings.len()), (3, 0, 0));
    // rolled back below the checkpointed tip
    set_chain(&mut s, c[0]);
    let r = run(&s, &trust, Some(&cp));
    let checkpoint: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.kind == "checkpoint")
        .collect();
    assert_eq!(checkpoint.len(), 1, "{:?}", r.findings);
    assert!(
        r.findings
            .iter()
            .all(|f| matches!(f.kind, "checkpoint" | "note")),
        "and the notes of the receipts that went: {:?}",
        r.findings
    );
    assert_eq!(
        checkpoint[0].reason,
        format!(
            "chain no longer descends from {}, its tip at the checkpoint: it was rolled back or rewritten (now {})",
            c[1], c[0]
        )
    );
    assert_eq!((r.receipts, r.covered), (1, 0), "walked whole");
    // deleted
    s.git(&[
        "update-ref",
        "-d",
        &crate::store::chain::chain_ref(&writer()),
    ]);
    s.reopen();
    let r = run(&s, &trust, Some(&cp));
    assert!(
        r.findings.iter().any(|f| f.kind == "checkpoint"
            && f.reason
                == format!(
                    "chain {} was deleted; the checkpoint recorded its tip {}",
                    crate::store::chain::chain_ref(&writer()),
                    c[1]
                )),
        "{:?}",
        r.findings
    );
    // a checkpoint naming no object id
    let mut bad = cp.clone();
    bad.chains.insert(writer(), "not-an-id".into());
    let r = run(&s, &trust, Some(&bad));
    assert!(
        r.findings
            .iter()
            .any(|f| f.reason == "checkpoint names \"not-an-id\", which is not an object id")
    );
}

#[test]
fn section_7_the_trust_digest_covers_keys_windows_and_revocations_not_origins() {
    let k = key(1);
    let with = |origin, after, revoked| {
        let mut t = TrustSet::default();
        t.add_entry(Trusted {
            key: k.public().clone(),
            origin,
            valid_after: after,
            valid_before: None,
            revoked,
        });
        trust_digest(&t)
    };
    let base = with(TrustOrigin::Config, None, false);
    assert!(base.starts_with("sha256:") && base.len() == 7 + 64);
    assert_eq!(base, with(TrustOrigin::OwnKey, None, false));
    assert_ne!(base, with(TrustOrigin::Config, Some(1), false));
    assert_ne!(base, with(TrustOrigin::Config, None, true));
    assert_ne!(base, trust_digest(&TrustSet::default()));
    // the order keys were added in does not matter
    let (a, b) = (trust_of(&[1, 2]), trust_of(&[2, 1]));
    assert_eq!(trust_digest(&a), trust_digest(&b));
}

#[test]
fn a_note_copied_to_another_commit_is_a_finding() {
    let (s, _) = chain_of(1);
    let notes = format!("receipts/{}", writer());
    let head = s.head().to_string();
    s.git(&["checkout", "-q", "--orphan", "other"]);
    let other = s.commit(&[("x", "1\n")], "other");
    s.git(&["notes", "--ref", &notes, "copy", &head, &other.to_string()]);
    let mut s = s;
    s.reopen();
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(kinds(&r), [("note", None)], "{:?}", r.findings);
    assert!(
        r.findings[0]
            .reason
            .ends_with(": the note was copied or moved"),
        "{}",
        r.findings[0].reason
    );
    assert_eq!(r.findings[0].commit, Some(other.to_string()));
}

/// Writers' notes are checked on every core; what each finds is said in writer
/// order, and every line is counted once.
#[test]
fn notes_checked_on_many_threads_are_reported_in_writer_order() {
    let s = Scratch::new();
    let c = contract(CONTRACT);
    let h = s.commit(&[("src/lib.rs", "1\n")], "src");
    let seeds = [5u8, 1, 4, 2, 3];
    for &k in &seeds {
        s.run(&key(k), &c, "test", h, 0, u64::from(k));
    }
    s.git(&["checkout", "-q", "--orphan", "other"]);
    let other = s.commit(&[("x", "1\n")], "other");
    let mut writers: Vec<String> = seeds
        .iter()
        .map(|&k| writer_id(key(k).public(), "default"))
        .collect();
    for w in &writers {
        let notes = format!("receipts/{w}");
        s.git(&[
            "notes",
            "--ref",
            &notes,
            "copy",
            &h.to_string(),
            &other.to_string(),
        ]);
    }
    let mut s = s;
    s.reopen();
    let r = run(&s, &trust_of(&seeds), None);
    writers.sort();
    let said: Vec<&str> = r.findings.iter().map(|f| f.chain.as_str()).collect();
    assert_eq!(said, writers, "{:?}", r.findings);
    assert!(
        r.findings
            .iter()
            .all(|f| f.kind == "note" && f.commit == Some(other.to_string()))
    );
    // each writer's note on the commit, on its inputs tree and the copy
    assert_eq!(r.note_lines, 15);
    assert_eq!(r.notes_tips.len(), 0, "no writer's notes were found whole");
}

#[test]
fn a_receipt_in_another_writer_s_chain_is_a_writer_finding() {
    let (mut s, _) = chain_of(1);
    // key 2's receipt, placed under key 1's chain ref
    let h = s.head();
    let other = s.run(&key(2), &contract(CONTRACT), "test", h, 0, 5);
    set_chain(&mut s, other.commit);
    let r = run(&s, &trust_of(&[1, 2]), None);
    let writer_findings: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.kind == "writer")
        .map(|f| f.reason.as_str())
        .collect();
    let w2 = writer_id(key(2).public(), "default");
    assert_eq!(
        writer_findings,
        [
            format!("names writer {w2}, but sits in chain {}", writer()),
            format!(
                "signed by {}, but writer id {} names another key",
                key(2).public().fingerprint(),
                writer()
            )
        ]
    );
    // its own chain is clean
    assert!(
        r.findings.iter().all(|f| f.chain == writer()),
        "{:?}",
        r.findings
    );
}

#[test]
fn untrusted_chains_are_counted_by_chain() {
    let (s, _) = chain_of(2);
    let h = s.head();
    s.run(&key(3), &contract(CONTRACT), "test", h, 0, 5);
    let mut r = run(&s, &trust_of(&[2]), None);
    r.set_aside_untrusted(&trust_of(&[2]));
    assert_eq!((r.untrusted.len(), r.untrusted_chains()), (3, 2));
    assert_eq!(r.findings, []);
    assert_eq!(r.chains, 2);
}

#[test]
fn notes_that_lag_their_chain_are_a_warning_not_a_finding() {
    let (mut s, _) = chain_of(2);
    s.git(&[
        "update-ref",
        "-d",
        &format!("refs/notes/receipts/{}", writer()),
    ]);
    s.reopen();
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(r.findings, []);
    assert_eq!(r.note_lines, 0);
    assert!(!r.warnings.is_empty());
    assert!(
        r.warnings.iter().all(|w| w.kind == "note"
            && w.reason
                .contains("but its writer has no readable notes; `git receipt reindex`")),
        "{:?}",
        r.warnings
    );
    // one receipt per object and check: the newest is the one a note should show
    let positions: Vec<Option<u64>> = r.warnings.iter().map(|w| w.index).collect();
    assert!(positions.contains(&Some(0)) && positions.contains(&Some(1)));
}

#[test]
fn a_log_ref_that_points_at_another_blob_is_a_finding() {
    let (s, _) = chain_of(1);
    let c = contract(CONTRACT);
    let h = s.head();
    let tree = s.store.commit_tree(h).unwrap();
    let logged = s.observe(
        &key(1),
        "default",
        &c,
        "test",
        (h, tree, false),
        crate::runner::Observation {
            exit_code: 0,
            detail: String::new(),
            started_at_ms: crate::freshness::rules::T0 + 600_000,
            duration_ms: 1,
            stdout_tail: Vec::new(),
            stderr_tail: Vec::new(),
            log: b"the whole output\n".to_vec(),
            interrupted: None,
            output_bytes: 17,
            log_truncated: false,
        },
        crate::receipt::Mode::Run,
    );
    let mut s = s;
    s.reopen();
    assert_eq!(run(&s, &trust_of(&[1]), None).findings, []);
    let log = logged.receipt.body().result.log.clone().unwrap();
    let name = format!("refs/receipt-logs/{}/{log}", writer());
    let other = s.git(&["rev-parse", "HEAD:src/lib.rs"]);
    s.git(&["update-ref", &name, &other]);
    s.reopen();
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(kinds(&r), [("log", None)]);
    assert_eq!(
        r.findings[0].reason,
        format!(
            "{name} points at {other}, not at the blob its name gives; delete it (`git update-ref -d {name}`) and fetch the log again"
        )
    );
    // pointing at the right id but not a blob
    let commit = s.head().to_string();
    let named = format!("refs/receipt-logs/{}/{commit}", writer());
    s.git(&["update-ref", "-d", &name]);
    s.git(&["update-ref", &named, &commit]);
    s.reopen();
    assert_eq!(kinds(&run(&s, &trust_of(&[1]), None)), [("log", None)]);
}

/// A chain long enough for the parallel path (two slices of 32 or more) gets the
/// findings one thread would give, each at its index.
#[test]
fn a_long_chain_is_checked_in_parallel_with_the_answers_one_thread_gives() {
    let s = Scratch::new();
    let c = contract(CONTRACT);
    let h = s.commit(&[("src/lib.rs", "x\n")], "src");
    for i in 0..70 {
        // every receipt before minute 40 falls outside the window below
        s.run(&key(1), &c, "test", h, 0, i);
    }
    let mut window = TrustSet::default();
    window.add_entry(Trusted {
        key: key(1).public().clone(),
        origin: TrustOrigin::Config,
        valid_after: Some(crate::freshness::rules::T0 + 40 * 60_000),
        valid_before: None,
        revoked: false,
    });
    let r = run(&s, &window, None);
    assert_eq!(r.receipts, 70);
    let got: Vec<(&str, Option<u64>)> = kinds(&r);
    let want: Vec<(&str, Option<u64>)> = (0..40).rev().map(|i| ("window", Some(i))).collect();
    assert_eq!(got, want);
    assert_eq!(run(&s, &trust_of(&[1]), None).findings, []);
}

/// The walk's batches start small and double up to the order's most, each a
/// size a signature batch takes.
#[test]
fn batches_start_at_twice_the_least_signature_batch_and_double_up_to_the_most() {
    let sizes = |order: Order, chains: usize| -> Vec<usize> {
        std::iter::successors(Some(FIRST_BATCH), |&s| {
            Some(next_batch(s, order.batch(chains)))
        })
        .take(6)
        .collect()
    };
    // one chain after another: up to 2,048 however many chains; in pack
    // order, eight entries a chain from 2,048 up to 8,192
    let cases = [
        (Order::Chains, 1, [2048, 2048, 2048]),
        (Order::Chains, 10_000, [2048, 2048, 2048]),
        (Order::Packs, 100, [2048, 2048, 2048]),
        (Order::Packs, 256, [2048, 2048, 2048]),
        (Order::Packs, 257, [2056, 2056, 2056]),
        (Order::Packs, 700, [4096, 5600, 5600]),
        (Order::Packs, 2048, [4096, 8192, 8192]),
    ];
    for (order, chains, last) in cases {
        let got = sizes(order, chains);
        assert_eq!(got[..3], [512, 1024, 2048], "{order:?} {chains}");
        assert_eq!(got[3..], last, "{order:?} {chains}");
    }
    assert_eq!(Order::Packs.batch(usize::MAX), PACK_ORDER_BATCH);
    assert!(
        sizes(Order::Chains, 1)
            .iter()
            .all(|&s| s >= 2 * crate::sign::MIN_BATCH)
    );
}

/// Pack order while the keys stay a quarter of a batch at most; one chain
/// after another past that.
#[test]
fn a_walk_reads_in_pack_order_up_to_a_quarter_of_a_batch_of_chains() {
    assert_eq!(Order::for_chains(0), Order::Packs);
    assert_eq!(Order::for_chains(1000), Order::Packs);
    assert_eq!(Order::for_chains(2048), Order::Packs);
    assert_eq!(Order::for_chains(2049), Order::Chains);
    assert_eq!(Order::for_chains(10_000), Order::Chains);
}

/// What a chain's walk found, in a form two walks compare by (its maps sorted).
fn walk_said(w: &ChainWalk) -> String {
    let mut about: Vec<_> = w.about.iter().collect();
    about.sort();
    format!(
        "{} {} {} {:?} {:?} {:?} {about:?} {:?} {:?} {:?}",
        w.receipts,
        w.stubs,
        w.below_base,
        w.findings,
        w.supersedes,
        w.located,
        w.acceptances
            .iter()
            .map(|(i, id, c, _)| (i, id, c))
            .collect::<Vec<_>>(),
        w.keyed.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        w.base
    )
}

/// Three writers' chains written in turn and packed by stock git (so each
/// chain's entries lie between the others' in the pack), one of them forged
/// (an entry taken out of its middle), one walked from a base, one from a base
/// its tip does not descend from: a walk in pack order finds, for every chain,
/// exactly what one chain after another finds.
#[test]
fn a_walk_in_pack_order_answers_as_one_chain_after_another() {
    let mut s = Scratch::new();
    let c = contract(CONTRACT);
    let mut commits: Vec<Vec<ObjectId>> = vec![Vec::new(); 3];
    for i in 0..30u64 {
        let h = s.commit(&[("src/lib.rs", &format!("{i}\n"))], "src");
        for (n, chain) in commits.iter_mut().enumerate() {
            chain.push(s.run(&key(n as u8 + 1), &c, "test", h, 0, i).commit);
        }
    }
    // key 1's chain loses entry 20: 21 placed on 19, the rest written again on it
    let mut tip = commit_tree(&s, commits[0][21], &[commits[0][19]]);
    for &above in &commits[0][22..] {
        tip = commit_tree(&s, above, &[tip]);
    }
    set_chain(&mut s, tip);
    s.git(&["repack", "-adq"]);
    s.reopen();
    let names: Vec<String> = (1..=3)
        .map(|n| writer_id(key(n).public(), "default"))
        .collect();
    let tips: Vec<ObjectId> = names
        .iter()
        .map(|w| {
            s.store
                .ref_value(&crate::store::chain::chain_ref(w))
                .unwrap()
                .unwrap()
        })
        .collect();
    let stretches = [
        (tips[0], None),
        (tips[1], Some(commits[1][12])),
        (tips[2], Some(commits[1][5])),
    ];
    let trust = trust_of(&[1, 2]);
    let shared = s.store.shared_reader();
    let walk = |order| {
        walk_ranges(
            &s.store,
            &shared,
            &names,
            &stretches,
            &trust,
            order,
            &mut |_| {},
        )
        .unwrap()
        .iter()
        .map(walk_said)
        .collect::<Vec<_>>()
    };
    // in the pack, every chain's tip comes before any chain's first entry:
    // pack order takes the chains in turn, not one after another
    let reader = shared.local();
    let newest = tips.iter().map(|t| reader.place(t)).max().unwrap();
    let oldest = commits.iter().map(|c| reader.place(&c[0])).min().unwrap();
    assert!(newest < oldest, "{newest:?} {oldest:?}");
    let (packs, chains) = (walk(Order::Packs), walk(Order::Chains));
    assert_eq!(packs, chains);
    // and what they agree on is what each chain holds
    let walks = walk_ranges(
        &s.store,
        &shared,
        &names,
        &stretches,
        &trust,
        Order::Packs,
        &mut |_| {},
    )
    .unwrap();
    assert!(
        walks[0]
            .findings
            .iter()
            .any(|f| f.kind == "link" && f.index == Some(21))
    );
    assert_eq!(walks[1].receipts, 17);
    assert_eq!(walks[1].below_base, 13);
    assert!(walks[1].findings.is_empty(), "{:?}", walks[1].findings);
    assert_eq!(walks[2].receipts, 30);
    // key 3 is not trusted: each of its receipts says so
    assert_eq!(walks[2].findings.len(), 30);
    assert!(walks[2].findings.iter().all(|f| f.kind == "untrusted"));
}

/// Append to `key`'s chain `default` a copy of its tip's receipt, as `edit` makes it.
fn append_edited(
    s: &Scratch,
    k: &SigningKey,
    edit: impl Fn(&mut crate::receipt::Body, u64, Option<String>),
) {
    let w = writer_id(k.public(), "default");
    let tip = s.store.chain_tip(&w).unwrap().unwrap();
    let base = s.store.chain_entry(&w, tip).unwrap().receipt.body().clone();
    s.store
        .append(&w, k, &[], |index, prev| {
            let mut b = base.clone();
            b.chain.index = index;
            b.chain.prev = prev.clone();
            edit(&mut b, index, prev);
            b
        })
        .unwrap();
}

/// Where receipts sit is kept by the first 8 bytes of their ids; a link that
/// shares those with a receipt here, but not the rest, names no receipt here,
/// whether that receipt was walked or lies below a checkpoint.
#[test]
fn a_supersedes_link_that_shares_only_a_prefix_with_a_receipt_names_none() {
    let (mut s, c) = chain_of(2);
    let trust = trust_of(&[1]);
    let cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    let first = s
        .store
        .chain_entry(&writer(), c[0])
        .unwrap()
        .receipt
        .id()
        .to_owned();
    // the same 16 hex digits after `sha256:`, then others
    let last = if first.ends_with('0') { "1" } else { "0" };
    let near = format!("{}{last}", &first[..first.len() - 1]);
    assert_ne!(near, first);
    append_edited(&s, &key(1), |b, _, _| b.supersedes = Some(near.clone()));
    s.reopen();
    for checkpoint in [None, Some(&cp)] {
        let r = run(&s, &trust, checkpoint);
        assert_eq!(kinds(&r), [("supersedes", Some(2))], "{:?}", r.findings);
        assert_eq!(
            r.findings[0].reason,
            format!("claims to supersede {near}, which is in no chain here")
        );
    }
}

#[test]
fn a_supersedes_link_must_name_a_receipt_in_some_chain() {
    let (mut s, c) = chain_of(2);
    let trust = trust_of(&[1]);
    let cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    let first = s
        .store
        .chain_entry(&writer(), c[0])
        .unwrap()
        .receipt
        .id()
        .to_owned();
    append_edited(&s, &key(1), |b, _, _| b.supersedes = Some(first.clone()));
    s.reopen();
    assert_eq!(run(&s, &trust, None).findings, []);
    // below the checkpoint: still found, though not walked again
    let r = run(&s, &trust, Some(&cp));
    assert_eq!((r.receipts, r.findings.len()), (1, 0), "{:?}", r.findings);
    let gone = format!("sha256:{}", "0".repeat(64));
    append_edited(&s, &key(1), |b, _, _| b.supersedes = Some(gone.clone()));
    s.reopen();
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(kinds(&r), [("supersedes", Some(3))]);
    assert_eq!(
        r.findings[0].reason,
        format!("claims to supersede {gone}, which is in no chain here")
    );
}

/// The id of the receipt at chain commit `commit` of key 1's chain.
fn id_at(s: &Scratch, commit: ObjectId) -> String {
    s.store
        .chain_entry(&writer(), commit)
        .unwrap()
        .receipt
        .id()
        .to_owned()
}

/// Where receipts sit is found by a binary search over their id prefixes: a link
/// to each receipt of a chain finds its own, whatever order the chain lists them in.
#[test]
fn supersedes_links_to_every_receipt_of_a_chain_each_find_theirs() {
    let (mut s, c) = chain_of(6);
    for commit in c {
        let id = id_at(&s, commit);
        append_edited(&s, &key(1), |b, _, _| b.supersedes = Some(id.clone()));
    }
    s.reopen();
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!((r.receipts, r.findings.len()), (12, 0), "{:?}", r.findings);
}

/// A chain is read a batch at a time and progress is said once a batch: a chain
/// shorter than a batch is one read, one check and one word of progress.
#[test]
fn a_chain_shorter_than_a_batch_is_checked_in_one_batch() {
    let (s, _) = chain_of(3);
    let mut said = Vec::new();
    verify(&s.store, &trust_of(&[1]), None, &mut |n| said.push(n)).unwrap();
    assert_eq!(said, [3]);
}

/// A chain that still descends from its checkpointed tip, but not by first
/// parents (a merge that puts it second), never reaches it by the walk: a link
/// finding at the tip, not links checked against an entry never walked to.
#[test]
fn section_7_a_tip_that_reaches_the_checkpointed_tip_only_by_a_second_parent_is_a_finding() {
    let (mut s, c) = chain_of(2);
    let trust = trust_of(&[1]);
    let cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    // entry 1 again, on entry 0 first and on the checkpointed tip second
    let forged = commit_tree(&s, c[1], &[c[0], c[1]]);
    set_chain(&mut s, forged);
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(
        kinds(&r),
        [("shape", None), ("link", None)],
        "{:?}",
        r.findings
    );
    assert_eq!(
        r.findings[1].reason,
        format!(
            "following first parents from the tip never reaches {}, which it must descend from",
            c[1]
        )
    );
    assert_eq!(r.findings[1].commit, Some(forged.to_string()));
}

/// A checkpoint naming a chain commit this repository never held (a checkpoint
/// file from another clone of a rewritten chain): the chain is walked whole,
/// nothing is counted as covered, and the checkpoint finding says where it went.
#[test]
fn section_7_a_checkpointed_tip_that_is_not_here_leaves_the_chain_walked_whole() {
    let (s, c) = chain_of(2);
    let trust = trust_of(&[1]);
    let mut cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    let gone = "e".repeat(40);
    cp.chains.insert(writer(), gone.clone());
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(kinds(&r), [("checkpoint", None)], "{:?}", r.findings);
    assert_eq!(
        r.findings[0].reason,
        format!(
            "chain no longer descends from {gone}, its tip at the checkpoint: it was rolled back or rewritten (now {})",
            c[1]
        )
    );
    assert_eq!((r.receipts, r.covered), (2, 0));
}

/// A checkpointed tip the chain descends from that is no chain entry (a
/// commit without `receipt.json`, spliced under a forged tip): nothing newer can
/// be linked to it, which is the one finding; the chain is not walked past it
/// and the checkpoint itself holds (the chain does descend from it).
#[test]
fn section_7_a_checkpointed_tip_that_is_no_entry_is_a_link_finding_and_nothing_more() {
    let (mut s, c) = chain_of(2);
    let trust = trust_of(&[1]);
    let mut cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    let source = s.head();
    let spliced = commit_tree(&s, source, &[c[1]]);
    let tip = commit_tree(&s, c[1], &[spliced]);
    set_chain(&mut s, tip);
    cp.chains.insert(writer(), spliced.to_string());
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(kinds(&r), [("link", None)], "{:?}", r.findings);
    assert!(
        r.findings[0]
            .reason
            .starts_with("the entry that newer receipts must follow is unreadable: "),
        "{:?}",
        r.findings
    );
    assert_eq!(r.findings[0].commit, Some(spliced.to_string()));
    assert_eq!((r.receipts, r.covered), (0, 0));
}

/// A checkpointed tip with two parents (a checkpoint naming a merge that a
/// chain grew on) is no entry to link to: the chain is linear, so the one
/// finding says the base is unreadable, however cleanly its receipt reads.
#[test]
fn section_7_a_checkpointed_tip_with_two_parents_is_no_base() {
    let (mut s, c) = chain_of(3);
    let trust = trust_of(&[1]);
    let mut cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    // entry 1 again on two parents, entry 2 again on it
    let merge = commit_tree(&s, c[1], &[c[0], c[1]]);
    let tip = commit_tree(&s, c[2], &[merge]);
    set_chain(&mut s, tip);
    cp.chains.insert(writer(), merge.to_string());
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(kinds(&r), [("link", None)], "{:?}", r.findings);
    assert_eq!(
        r.findings[0].reason,
        format!(
            "the entry that newer receipts must follow is unreadable: chain {} is corrupt at commit {merge}: has 2 parents; a chain is linear",
            writer()
        )
    );
    assert_eq!((r.receipts, r.covered), (0, 0));
}

/// Where the walk met the checkpointed tip, `verify_checkpoint` takes the
/// walk's word; where it did not, it asks the repository, so a report that says
/// nothing of a chain still gets its rollback found.
#[test]
fn section_7_the_checkpoint_is_held_by_the_walk_s_answer_or_asked_again() {
    let (mut s, c) = chain_of(2);
    let trust = trust_of(&[1]);
    let cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(r.findings, []);
    assert_eq!(r.descended.get(&writer()), Some(&c[1]));
    // the walk's answer is this run's: a report of another run is asked again
    set_chain(&mut s, c[0]);
    let mut stale = r.clone();
    stale.findings.clear();
    verify_checkpoint(&s.store, &cp, &mut stale).unwrap();
    assert_eq!(stale.findings, [], "the report's walk met the tip");
    let mut fresh = Report::default();
    verify_checkpoint(&s.store, &cp, &mut fresh).unwrap();
    assert_eq!(
        fresh.findings.iter().map(|f| f.kind).collect::<Vec<_>>(),
        ["checkpoint"]
    );
}

/// A log ref named after the blob it points at, whose blob is gone from the
/// object store, is said to be missing (not to point elsewhere).
#[test]
fn a_log_ref_whose_blob_is_missing_is_a_finding_that_says_so() {
    let (mut s, _) = chain_of(1);
    let gone = "d".repeat(40);
    let name = format!("refs/receipt-logs/{}/{gone}", writer());
    let path = s.store.git_dir().join(&name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, format!("{gone}\n")).unwrap();
    s.reopen();
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(kinds(&r), [("log", None)], "{:?}", r.findings);
    assert_eq!(
        r.findings[0].reason,
        format!(
            "{name} names log blob {gone}, which is missing from the object store (a `git gc --prune=now` that ran while it was written leaves this); fetch the log again, or delete the ref (`git update-ref -d {name}`)"
        )
    );
}

/// A note should show the newest receipt per object and check: with two on the
/// same commit and no notes, only the newer is a warning (on its commit and its
/// inputs tree).
#[test]
fn notes_that_lag_their_chain_are_a_warning_about_the_newest_receipt_per_object() {
    let (mut s, _) = chain_of(1);
    let h = s.head();
    s.run(&key(1), &contract(CONTRACT), "test", h, 0, 5);
    s.git(&["update-ref", "-d", &notes_ref(&writer())]);
    s.reopen();
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(r.findings, []);
    let at: Vec<Option<u64>> = r.warnings.iter().map(|w| w.index).collect();
    assert_eq!(at, [Some(1), Some(1)], "{:?}", r.warnings);
}

/// Only a trusted acceptance is held to its evidence: one that cites a receipt
/// that is nowhere is an `acceptance` finding when its signer is trusted, and
/// only `untrusted` when not.
#[test]
fn only_a_trusted_acceptance_is_held_to_its_evidence() {
    let (mut s, _) = chain_of(1);
    let h = s.head();
    let tree = s.store.commit_tree(h).unwrap().to_string();
    let criterion = crate::receipt::Criterion {
        kind: crate::receipt::CriterionKind::Check,
        name: "test".into(),
        state: crate::receipt::State::Present,
        inputs: tree,
        evidence: vec![format!("sha256:{}", "0".repeat(64))],
    };
    let body = crate::decision::rules::acceptance_body(&s, h, vec![criterion]);
    append_edited(&s, &key(1), |b, index, prev| {
        *b = body.clone();
        b.chain.index = index;
        b.chain.prev = prev;
    });
    s.reopen();
    let r = run(&s, &trust_of(&[1]), None);
    assert!(
        r.findings
            .iter()
            .all(|f| f.kind == "acceptance" && f.index == Some(1))
            && !r.findings.is_empty(),
        "{:?}",
        r.findings
    );
    let r = run(&s, &trust_of(&[2]), None);
    assert_eq!(kinds(&r), [("untrusted", Some(1)), ("untrusted", Some(0))]);
}

/// The notes check reads each chain's records as one run, as the index lays them
/// out; an index whose records of a chain lie apart is not read.
#[test]
fn notes_tables_read_an_index_only_when_each_chain_s_records_lie_together() {
    use crate::store::index::{ChainInfo, Index, Record};
    let commit = ObjectId::from_hex("ab".repeat(20).as_bytes()).unwrap();
    let chain = |w: &str| ChainInfo {
        writer: w.into(),
        tip: commit,
        count: 2,
    };
    let ranges = |order: [u32; 4]| {
        let index = Index::of_records(
            vec![chain("a"), chain("b")],
            order.map(|c| Record::decision_at(commit, c)).to_vec(),
        );
        NotesTables::read(&index).map(|t| t.ranges)
    };
    assert_eq!(ranges([0, 0, 1, 1]), Some(vec![Some(0..2), Some(2..4)]));
    assert_eq!(ranges([0, 1, 0, 1]), None);
}

/// The notes check reads each record's two objects from the keys; an index
/// that keys a record by only one of them (either one) is not read.
#[test]
fn notes_tables_read_an_index_only_when_every_record_is_keyed_by_both_its_objects() {
    use crate::store::index::{ChainInfo, Index, Record};
    let commit = ObjectId::from_hex("cd".repeat(20).as_bytes()).unwrap();
    let index = || {
        Index::of_records(
            vec![ChainInfo {
                writer: "a".into(),
                tip: commit,
                count: 1,
            }],
            vec![Record::decision_at(commit, 0)],
        )
    };
    let objects = NotesTables::read(&index()).map(|t| t.objects);
    assert_eq!(objects, Some(vec![[commit, commit]]));
    for role in [Role::Subject, Role::Inputs] {
        assert!(
            NotesTables::read(&index().without_keys(role)).is_none(),
            "{role:?} keys left out"
        );
    }
}

/// A note line that names a chain commit of its writer, on the object that
/// commit's receipt is about, but with another receipt's id, is a finding: the
/// id and the chain commit must agree.
#[test]
fn a_note_line_naming_a_chain_commit_with_another_receipt_s_id_is_a_finding() {
    let (mut s, c) = chain_of(1);
    let id = id_at(&s, c[0]);
    // another id: its first hex digit differs, so its prefix does too
    let digit = if id.as_bytes()[7] == b'0' { "1" } else { "0" };
    let other = format!("sha256:{digit}{}", &id[8..]);
    let subject = s.head();
    s.git(&[
        "notes",
        "--ref",
        &format!("receipts/{}", writer()),
        "add",
        "-f",
        "-m",
        &format!("{other} {} test passed", c[0]),
        &subject.to_string(),
    ]);
    s.reopen();
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(kinds(&r), [("note", None)], "{:?}", r.findings);
    assert_eq!(
        r.findings[0].reason,
        format!(
            "note names {other} but chain commit {} holds another receipt",
            c[0]
        )
    );
    assert_eq!(r.findings[0].id, Some(other));
    assert_eq!(r.findings[0].commit, Some(subject.to_string()));
}

/// Refs no reader uses are findings from the verify's one listing of each
/// prefix, and the chains beside them are verified as ever: a chain ref whose
/// commit is missing (no reflog gives it back), a notes ref at a blob.
#[test]
fn refs_no_reader_uses_are_findings_beside_the_chains_verified() {
    let (mut s, _) = chain_of(2);
    let (w2, w3) = (
        writer_id(key(2).public(), "default"),
        writer_id(key(3).public(), "default"),
    );
    let gone = "d".repeat(40);
    let chain2 = crate::store::chain::chain_ref(&w2);
    let path = s.store.git_dir().join(&chain2);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, format!("{gone}\n")).unwrap();
    let blob = s.git_input(&["hash-object", "-w", "--stdin"], b"not a commit\n");
    s.git(&["update-ref", &notes_ref(&w3), &blob]);
    s.reopen();
    let r = run(&s, &trust_of(&[1, 2, 3]), None);
    let said: Vec<(&str, &str)> = r
        .findings
        .iter()
        .map(|f| (f.kind, f.chain.as_str()))
        .collect();
    assert_eq!(
        said,
        [("ref", w2.as_str()), ("note", w3.as_str())],
        "{:?}",
        r.findings
    );
    assert!(r.findings[0].reason.starts_with(&format!(
        "{chain2} points at {gone}, which is missing from the object store"
    )));
    assert!(r.findings[1].reason.starts_with(&format!(
        "{} is not a readable notes commit: it points at a blob, not a commit",
        notes_ref(&w3)
    )));
    assert_eq!((r.chains, r.receipts), (1, 2));
    assert_eq!(r.notes_tips.len(), 1, "key 1's notes found whole");
}

/// The loose object file of key 1's notes tree.
fn notes_tree_file(s: &Scratch) -> std::path::PathBuf {
    let tree = s.git(&["rev-parse", &format!("{}^{{tree}}", notes_ref(&writer()))]);
    let path = s
        .store
        .git_dir()
        .join("objects")
        .join(&tree[..2])
        .join(&tree[2..]);
    assert!(path.is_file(), "the notes tree is a loose object");
    path
}

/// A notes commit whose tree is gone is a note finding (the notes are a
/// display, rebuilt by `reindex`), not an error.
#[test]
fn a_notes_commit_whose_tree_is_missing_is_a_note_finding() {
    let (mut s, _) = chain_of(1);
    std::fs::remove_file(notes_tree_file(&s)).unwrap();
    s.reopen();
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(kinds(&r), [("note", None)], "{:?}", r.findings);
    assert!(
        r.findings[0].reason.starts_with(&format!(
            "{} is not a readable notes commit: ",
            notes_ref(&writer())
        )) && r.findings[0]
            .reason
            .ends_with("; `git receipt reindex` rebuilds it from the chain"),
        "{}",
        r.findings[0].reason
    );
}

/// A notes tree whose file exists but cannot be read says nothing of the
/// notes: verify fails with the error rather than reporting a finding. The
/// object file is made a link to a sysfs attribute: a regular file that even
/// root opens, and that cannot be mapped into memory (ENODEV), as git-receipt
/// reads objects.
#[test]
fn a_notes_tree_that_cannot_be_read_is_an_error_not_a_finding() {
    let (mut s, _) = chain_of(1);
    let path = notes_tree_file(&s);
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/sys/kernel/uevent_seqnum", &path).unwrap();
    s.reopen();
    let e = verify(&s.store, &trust_of(&[1]), None, &mut |_| {}).unwrap_err();
    assert!(
        e.is_unreadable() && e.to_string().starts_with("reading a notes tree: "),
        "{e}"
    );
}

/// An acceptance made with `gate --require` on gated history is genuine but
/// partial: an accepted one is a notice that it does not satisfy
/// `--accepted-by`, and a rejected one, which satisfies nothing anyway, says
/// nothing; neither is a finding.
#[test]
fn a_partial_acceptance_is_a_notice_only_when_it_accepts() {
    let (mut s, _) = chain_of(1);
    let h = s.commit(
        &[(
            ".gitreceipts",
            "[check \"test\"]\n\trun = true\n\tpath = src\n\trequired = true\n",
        )],
        "the contract requires test",
    );
    let accepted = crate::decision::rules::acceptance_body(&s, h, Vec::new());
    // rejected: it names docs, which is missing (test, required, it leaves out)
    let mut rejected = accepted.clone();
    let a = rejected.acceptance.as_mut().unwrap();
    a.status = crate::receipt::Status::Rejected;
    a.criteria = vec![crate::receipt::Criterion {
        kind: crate::receipt::CriterionKind::Check,
        name: "docs".into(),
        state: crate::receipt::State::Missing,
        inputs: rejected.subject.inputs.clone(),
        evidence: Vec::new(),
    }];
    a.unresolved = vec![crate::receipt::Unresolved {
        kind: crate::receipt::CriterionKind::Check,
        name: "docs".into(),
        state: crate::receipt::State::Missing,
        reason: "no receipt".into(),
    }];
    for body in [accepted, rejected] {
        append_edited(&s, &key(1), |b, index, prev| {
            *b = body.clone();
            b.chain.index = index;
            b.chain.prev = prev;
        });
    }
    s.reopen();
    let tip = s.store.chain_tip(&writer()).unwrap().unwrap();
    let rejected = id_at(&s, tip);
    let accepted = s
        .store
        .chain_entry(&writer(), tip)
        .unwrap()
        .receipt
        .body()
        .chain
        .prev
        .clone()
        .unwrap();
    assert_ne!(accepted, rejected);
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(r.findings, []);
    let partial: Vec<crate::notice::Notice> = s
        .store
        .take_notices()
        .into_iter()
        .filter(|n| n.code == "acceptance-partial")
        .collect();
    assert_eq!(partial.len(), 1, "{partial:?}");
    assert_eq!(partial[0].subject, Some(accepted));
    assert!(
        partial[0].message.starts_with(&format!(
            "chain {} #1: the acceptance of {} does not satisfy `gate --accepted-by`: it is partial: check test required at {}",
            writer(),
            h.to_hex_with_len(7),
            h.to_hex_with_len(7)
        )),
        "{}",
        partial[0].message
    );
}

/// A result of check `test` recorded by key 1 under idempotency key `k` on a
/// new commit of `src`: exit `exit`, started `minute` minutes in. The recorder
/// writes what it is given (only `store_receipt_once` looks for the key first),
/// as two clones that had not met would have.
fn keyed(s: &Scratch, k: &str, exit: i64, minute: u64) -> crate::store::chain::Appended {
    let commit = s.head();
    let tree = s.store.commit_tree(commit).unwrap();
    let check = crate::recorder::CheckSpec {
        name: "test".into(),
        argv: vec!["true".into()],
        paths: vec!["src".into()],
        ..Default::default()
    };
    let inputs = s.store.inputs_tree(tree, &check.paths, true).unwrap();
    let obs = crate::runner::Observation {
        exit_code: exit,
        detail: String::new(),
        started_at_ms: crate::freshness::rules::T0 + minute * 60_000,
        duration_ms: 5,
        stdout_tail: Vec::new(),
        stderr_tail: Vec::new(),
        log: b"ran\n".to_vec(),
        output_bytes: 4,
        log_truncated: false,
        interrupted: None,
    };
    let around = crate::recorder::Surroundings {
        idempotency_key: Some(k.into()),
        ..Default::default()
    };
    crate::recorder::store_receipt_in(
        &s.store,
        &writer(),
        &key(1),
        &check,
        crate::recorder::SubjectIds {
            commit,
            tree,
            inputs,
            dirty: false,
            unmarked: Vec::new(),
        },
        &obs,
        crate::receipt::Mode::Record,
        &around,
    )
    .unwrap()
}

#[test]
fn one_key_for_two_results_is_a_finding_naming_both_and_one_result_twice_a_notice() {
    let s = Scratch::new();
    s.commit(&[("src/lib.rs", "1\n")], "src");
    let first = keyed(&s, "ci-7/test", 0, 0);
    let _ = keyed(&s, "ci-8/test", 0, 1);
    let retried = keyed(&s, "ci-7/test", 0, 2);
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(r.findings, [], "the same result twice is no finding");
    let notices = s.store.take_notices();
    let repeated: Vec<_> = notices
        .iter()
        .filter(|n| n.code == "idempotency-repeated")
        .collect();
    assert_eq!(repeated.len(), 1, "{notices:?}");
    assert_eq!(repeated[0].subject.as_deref(), Some(retried.receipt.id()));
    assert!(
        repeated[0].message.contains(&format!(
            "#2 holds the result of #0 ({}) again under idempotency key ci-7/test",
            first.receipt.id()
        )),
        "{}",
        repeated[0].message
    );
    let other = keyed(&s, "ci-7/test", 1, 3);
    let r = run(&s, &trust_of(&[1]), None);
    assert_eq!(kinds(&r), [("idempotency", Some(3))]);
    let f = &r.findings[0];
    assert_eq!(f.id.as_deref(), Some(other.receipt.id()));
    assert_eq!(f.commit, Some(other.commit.to_string()));
    assert_eq!(
        f.reason,
        format!(
            "holds idempotency key ci-7/test for another result than #0 {} does: one key names one result",
            first.receipt.id()
        )
    );
    // an untrusted chain's keys are not compared: it counts for nothing anyway
    let r = run(&s, &trust_of(&[2]), None);
    assert!(
        r.findings.iter().all(|f| f.kind == "untrusted"),
        "{:?}",
        r.findings
    );
}

#[test]
fn a_key_is_compared_across_a_checkpoint() {
    let s = Scratch::new();
    s.commit(&[("src/lib.rs", "1\n")], "src");
    let first = keyed(&s, "ci-7/test", 0, 0);
    let trust = trust_of(&[1]);
    let cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    keyed(&s, "ci-9/test", 0, 1);
    let r = run(&s, &trust, Some(&cp));
    assert_eq!((r.receipts, r.covered, r.findings.len()), (1, 1, 0));
    let other = keyed(&s, "ci-7/test", 1, 2);
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(
        (r.receipts, r.covered),
        (2, 1),
        "checked from the checkpoint"
    );
    assert_eq!(kinds(&r), [("idempotency", Some(2))]);
    assert_eq!(r.findings[0].id.as_deref(), Some(other.receipt.id()));
    assert!(r.findings[0].reason.contains(first.receipt.id()));
}

/// Section 7, notes: a clean run records each writer's notes tip it found
/// whole; the next run under the same trust reads them again only when the
/// notes or the chain moved. Notes that moved are checked (a forged line is a
/// finding), a chain that moved has its notes checked, another trust or a
/// version 2 checkpoint checks every writer's notes, and notes with a warning
/// or a finding are never recorded as whole.
#[test]
fn section_7_a_checkpoint_spares_notes_at_the_tip_it_found_whole() {
    let (mut s, _) = chain_of(2);
    let trust = trust_of(&[1]);
    let notes_ref = format!("refs/notes/receipts/{}", writer());
    let notes_tip = |s: &Scratch| s.git(&["rev-parse", &notes_ref]);
    let clean = run(&s, &trust, None);
    assert_eq!((clean.findings.len(), clean.warnings.len()), (0, 0));
    assert!(clean.note_lines > 0);
    assert_eq!(clean.notes_covered, 0);
    assert_eq!(
        clean.notes_tips.get(&writer()),
        Some(&notes_tip(&s)),
        "whole notes are recorded"
    );
    let cp = Checkpoint::from_report(&clean, &trust);
    assert_eq!((cp.version, &cp.notes), (3, &clean.notes_tips));

    // nothing moved: the notes are not read again, and stay recorded
    let r = run(&s, &trust, Some(&cp));
    assert_eq!((r.note_lines, r.notes_covered), (0, 1));
    assert_eq!(r.notes_tips, clean.notes_tips);
    assert_eq!(r.findings, []);

    // under another trust, or from a version 2 file, they are read again
    for (other, t) in [
        (cp.clone(), trust_of(&[1, 3])),
        (
            Checkpoint {
                version: 2,
                notes: Default::default(),
                ..cp.clone()
            },
            trust.clone(),
        ),
    ] {
        let r = run(&s, &t, Some(&other));
        assert_eq!(r.notes_covered, 0);
        assert_eq!(r.note_lines, clean.note_lines);
    }
    // from a signed checkpoint (which names no notes of this clone's): only
    // the notes on what receipts above it are about are read (none here), and
    // none are recorded as whole
    let signed = Checkpoint {
        notes: Default::default(),
        signed_elsewhere: true,
        ..cp.clone()
    };
    let r = run(&s, &trust, Some(&signed));
    assert_eq!((r.notes_covered, r.note_lines), (0, 0));
    assert_eq!(r.notes_tips.get(&writer()), None, "not read whole");

    // a note copied to another commit moves the notes: read, and a finding
    let head = s.head().to_string();
    s.git(&["checkout", "-q", "--orphan", "other"]);
    let other = s.commit(&[("x", "1\n")], "other");
    s.git(&[
        "notes",
        "--ref",
        &notes_ref["refs/notes/".len()..],
        "copy",
        &head,
        &other.to_string(),
    ]);
    s.reopen();
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(r.notes_covered, 0);
    assert_eq!(kinds(&r), [("note", None)], "{:?}", r.findings);
    assert_eq!(r.notes_tips.get(&writer()), None, "notes with a finding");

    // notes that lag a chain which moved: read, a warning, not recorded
    let mut s2 = chain_of(2).0;
    let cp2 = Checkpoint::from_report(&run(&s2, &trust, None), &trust);
    let lagging = notes_tip(&s2);
    let c = contract(CONTRACT);
    let h = s2.commit(&[("src/lib.rs", "more\n")], "src");
    s2.run(&key(1), &c, "test", h, 0, 9);
    s2.git(&["update-ref", &notes_ref, &lagging]);
    s2.reopen();
    let r = run(&s2, &trust, Some(&cp2));
    assert_eq!((r.findings.len(), r.notes_covered), (0, 0));
    assert!(
        r.warnings.iter().any(|w| w.kind == "note"),
        "{:?}",
        r.warnings
    );
    assert_eq!(r.notes_tips.get(&writer()), None, "notes with a warning");
}

/// Section 7, notes git-receipt built here whole: a run from a checkpoint (a
/// file, or a signed one) passes over a writer whose chain and notes are at
/// the tips the store recorded as it built them, and reads them again as soon
/// as the notes move or the record is gone; a whole run reads every note.
#[test]
fn section_7_a_run_from_a_checkpoint_passes_over_notes_built_whole_here() {
    let (mut s, _) = chain_of(2);
    let trust = trust_of(&[1]);
    let notes_ref = format!("refs/notes/receipts/{}", writer());
    let cp = Checkpoint::from_report(&run_as_is(&s, &trust, None), &trust);
    // a receipt after it, noted by the store on notes it built whole
    let c = contract(CONTRACT);
    let h = s.commit(&[("src/lib.rs", "more\n")], "src");
    s.run(&key(1), &c, "test", h, 0, 9);
    s.reopen();
    let tip = s.git(&["rev-parse", &notes_ref]);
    let signed = Checkpoint {
        notes: Default::default(),
        signed_elsewhere: true,
        ..cp.clone()
    };
    for from in [&cp, &signed] {
        let r = run_as_is(&s, &trust, Some(from));
        assert_eq!((r.receipts, r.findings.len()), (1, 0));
        assert_eq!(
            (r.notes_built_here, r.notes_covered, r.note_lines),
            (1, 0, 0)
        );
        assert_eq!(r.notes_tips.get(&writer()), Some(&tip), "whole, recorded");
    }
    let whole = run_as_is(&s, &trust, None);
    assert_eq!(whole.notes_built_here, 0);
    assert!(whole.note_lines > 0);
    // without the record, the notes on what the new receipt is about are read
    let r = run(&s, &trust, Some(&signed));
    assert_eq!(r.notes_built_here, 0);
    assert!(r.note_lines > 0);
    // the store records them again as it notes the next receipt
    let h = s.commit(&[("src/lib.rs", "more still\n")], "src");
    s.run(&key(1), &c, "test", h, 0, 10);
    s.reopen();
    let r = run_as_is(&s, &trust, Some(&signed));
    assert_eq!(r.notes_built_here, 0, "built on notes not recorded whole");
    s.store.reindex_notes(&writer()).unwrap();
    s.reopen();
    let r = run_as_is(&s, &trust, Some(&signed));
    assert_eq!((r.notes_built_here, r.note_lines), (1, 0), "rebuilt whole");
    // notes moved by hand: read again, and the forged line is a finding
    s.git(&[
        "notes",
        "--ref",
        &notes_ref["refs/notes/".len()..],
        "append",
        "-m",
        "0000000 forged",
        &h.to_string(),
    ]);
    s.reopen();
    let r = run_as_is(&s, &trust, Some(&signed));
    assert_eq!(r.notes_built_here, 0);
    assert_eq!(kinds(&r), [("note", None)], "{:?}", r.findings);
}

/// One more receipt on [`chain_of`]`(3)`'s chain, after `cp`: a whole run, and
/// a clean run from `cp` that checks that receipt alone and reads some of the
/// notes, not all. The new receipt's commit, and the two reports.
fn one_more_receipt_from(
    s: &mut Scratch,
    trust: &TrustSet,
    cp: &Checkpoint,
) -> (ObjectId, Report, Report) {
    let c = contract(CONTRACT);
    let h = s.commit(&[("src/lib.rs", "more\n")], "src");
    s.run(&key(1), &c, "test", h, 0, 9);
    s.reopen();
    let whole = run(s, trust, None);
    let r = run(s, trust, Some(cp));
    assert_eq!((r.receipts, r.covered), (1, 3));
    assert_eq!((r.findings.len(), r.warnings.len()), (0, 0));
    assert!(
        0 < r.note_lines && r.note_lines < whole.note_lines,
        "{} of {} note lines read",
        r.note_lines,
        whole.note_lines
    );
    (h, whole, r)
}

/// Section 7, notes of a chain that grew since the checkpoint found them whole:
/// only the notes that changed, and those on what the new receipts are about, are
/// read again; the answer is the one a run without the checkpoint gives.
#[test]
fn section_7_notes_of_a_grown_chain_are_read_only_where_they_changed() {
    let (mut s, _) = chain_of(3);
    let trust = trust_of(&[1]);
    let notes_ref = format!("refs/notes/receipts/{}", writer());
    let cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    let (_, whole, r) = one_more_receipt_from(&mut s, &trust, &cp);
    assert_eq!(r.notes_tips, whole.notes_tips, "found whole, recorded");

    // a note copied onto another commit after the checkpoint: read, a finding
    let head = s.head().to_string();
    s.git(&["checkout", "-q", "--orphan", "other"]);
    let other = s.commit(&[("x", "1\n")], "other");
    s.git(&[
        "notes",
        "--ref",
        &notes_ref["refs/notes/".len()..],
        "copy",
        &head,
        &other.to_string(),
    ]);
    s.reopen();
    let whole = run(&s, &trust, None);
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(kinds(&r), [("note", None)], "{:?}", r.findings);
    assert_eq!(r.findings, whole.findings);
    assert_eq!(r.notes_tips.get(&writer()), None, "notes with a finding");

    // a note edited on an object only old receipts are about: read, a finding
    let (mut s, _) = chain_of(3);
    let cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    // noted before the new receipt, which is about a new commit and tree
    let noted = s.git(&["notes", "--ref", &notes_ref["refs/notes/".len()..], "list"]);
    let object = noted
        .lines()
        .find_map(|l| l.split_once(' ').map(|(_, o)| o.to_owned()))
        .expect("an older noted object");
    let h = s.commit(&[("src/lib.rs", "more\n")], "src");
    s.run(&key(1), &contract(CONTRACT), "test", h, 0, 9);
    let forged = format!(
        "{} 0000000000000000000000000000000000000000\n",
        "a".repeat(64)
    );
    s.git(&[
        "notes",
        "--ref",
        &notes_ref["refs/notes/".len()..],
        "add",
        "-f",
        "-m",
        &forged,
        &object,
    ]);
    s.reopen();
    let whole = run(&s, &trust, None);
    let r = run(&s, &trust, Some(&cp));
    assert!(!whole.findings.is_empty(), "a forged note is a finding");
    assert_eq!(r.findings, whole.findings);
    assert_eq!(r.warnings, whole.warnings);
}

/// Section 7, notes from a signed checkpoint: a chain that grew has its notes
/// checked against the index's records after the checkpoint and the keys of
/// what those are about, not every record of its history, when the notes are
/// clean; older receipts about the same objects (of this check and another)
/// are recognised where the notes show them. Anything to say (notes that lag,
/// a forged line) is said as a whole run says it, from every record.
#[test]
fn section_7_clean_notes_of_a_grown_chain_are_checked_from_the_records_after_the_checkpoint() {
    let (mut s, _) = chain_of(3);
    let trust = trust_of(&[1]);
    let notes_ref = format!("refs/notes/receipts/{}", writer());
    let short = &notes_ref["refs/notes/".len()..];
    let two = contract(&format!(
        "{CONTRACT}[check \"lint\"]\n\trun = true\n\tpath = src\n"
    ));
    // before the checkpoint, another check on the newest commit
    let h = s.head();
    s.run(&key(1), &two, "lint", h, 0, 5);
    s.reopen();
    let clean = run(&s, &trust, None);
    assert_eq!((clean.findings.len(), clean.warnings.len()), (0, 0));
    assert_eq!(clean.notes_read_whole, 1);
    let mut cp = Checkpoint::from_report(&clean, &trust);
    cp.notes.clear();
    cp.signed_elsewhere = true;
    // after it, the same commit (and tree) receipted again
    s.run(&key(1), &two, "test", h, 0, 9);
    s.reopen();
    let whole = run(&s, &trust, None);
    let r = run(&s, &trust, Some(&cp));
    assert_eq!((r.receipts, r.covered), (1, 4));
    assert_eq!(
        (r.findings.len(), r.warnings.len()),
        (0, 0),
        "{:?}",
        r.warnings
    );
    assert_eq!(whole.notes_read_whole, 1);
    assert_eq!(
        r.notes_read_whole, 0,
        "only the records after the checkpoint"
    );
    // the lines of the notes on that commit and its tree, as stock git reads them
    let lines = |object: String| {
        s.git(&["notes", "--ref", short, "show", &object])
            .lines()
            .count() as u64
    };
    let expected = lines(h.to_string()) + lines(format!("{h}^{{tree}}"));
    assert!(expected >= 4, "each note shows the older receipts too");
    assert_eq!(r.note_lines, expected);
    assert_eq!(r.notes_tips.get(&writer()), None, "not read whole");

    // notes that lag (they do not show the new receipt): a warning, from
    // every record, as a whole run gives it
    let lagging = s.git(&["rev-parse", &format!("{notes_ref}^")]);
    let current = s.git(&["rev-parse", &notes_ref]);
    s.git(&["update-ref", &notes_ref, &lagging]);
    s.reopen();
    let whole = run(&s, &trust, None);
    let r = run(&s, &trust, Some(&cp));
    assert!(!r.warnings.is_empty());
    assert_eq!(r.warnings, whole.warnings);
    assert_eq!((r.findings.len(), r.notes_read_whole), (0, 1));

    // a forged line on the commit: a finding, as a whole run gives it
    s.git(&["update-ref", &notes_ref, &current]);
    let mut shown = s.git(&["notes", "--ref", short, "show", &h.to_string()]);
    shown.push_str(&format!("\n{} {}\n", "a".repeat(64), "0".repeat(40)));
    s.git(&[
        "notes",
        "--ref",
        short,
        "add",
        "-f",
        "-m",
        &shown,
        &h.to_string(),
    ]);
    s.reopen();
    let whole = run(&s, &trust, None);
    let r = run(&s, &trust, Some(&cp));
    assert!(!r.findings.is_empty());
    assert_eq!(r.findings, whole.findings);
    assert_eq!(r.warnings, whole.warnings);
    assert_eq!(r.notes_read_whole, 1);
}

/// Section 7, a clone that took the chain from a checkpoint's tip up (to a
/// depth, as `fetch --since` does): the index holds the chain from the cut up,
/// and the notes on what came after the checkpoint are still checked from the
/// records after it alone, with the answer a clean check gives.
#[test]
fn section_7_notes_in_a_clone_cut_at_the_checkpoint_are_checked_from_the_records_after_it() {
    let (s, commits) = chain_of(4);
    let trust = trust_of(&[1]);
    let clone = s.fetched_to_depth(
        2,
        &[
            "refs/receipts/*:refs/receipts/*",
            "refs/notes/receipts/*:refs/notes/receipts/*",
        ],
    );
    let store = Store::open(clone.path()).unwrap();
    let mut cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    cp.chains.insert(writer(), commits[2].to_string());
    cp.notes.clear();
    cp.signed_elsewhere = true;
    let r = verify(&store, &trust, Some(&cp), &mut |_| {}).unwrap();
    assert_eq!((r.receipts, r.covered), (1, 3));
    assert_eq!(
        (r.findings.len(), r.warnings.len()),
        (0, 0),
        "{:?} {:?}",
        r.findings,
        r.warnings
    );
    assert_eq!(
        r.note_lines, 2,
        "the newest receipt's notes, on its commit and tree"
    );
    assert_eq!(
        r.notes_read_whole, 0,
        "only the records after the checkpoint"
    );
}

/// The pack reader answers only what it read whole and as it should be: a
/// packed entry (its parents and `receipt.json`, as stock git reads them), a
/// packed blob within the size asked for; never a tree for a blob, a blob over
/// the size, nor anything loose (the usual read answers those).
#[test]
fn the_pack_reader_answers_only_what_it_read_whole() {
    let (s, commits) = chain_of(3);
    // an entry with two parents, and one with three, whose parents are read
    // in their order
    let two = commit_tree(&s, commits[2], &[commits[1], commits[0]]);
    let three = commit_tree(&s, commits[2], &[commits[0], two, commits[1]]);
    s.git(&["update-ref", "refs/test/three", &three.to_string()]); // packed too
    s.git(&["repack", "-adq"]);
    // one more entry, loose
    let c = contract(CONTRACT);
    let h = s.commit(&[("src/lib.rs", "loose\n")], "src");
    let loose = s.run(&key(1), &c, "test", h, 0, 3).commit;
    let reader = s.store.shared_reader();
    let r = reader.local();
    let tip = commits[2];
    let fast = r
        .read_packed(tip)
        .expect("a packed entry is read from the pack");
    let git_bytes = std::process::Command::new("git")
        .current_dir(s.store.workdir().unwrap())
        .args(["cat-file", "blob", &format!("{tip}:receipt.json")])
        .output()
        .unwrap()
        .stdout;
    assert_eq!(fast.bytes.as_deref().unwrap(), git_bytes.as_slice());
    assert_eq!(fast.parents, [commits[1]]);
    assert_eq!(fast.commit, tip);
    assert!(r.read_packed(commits[0]).unwrap().parents.is_empty());
    assert_eq!(
        r.read_packed(two).unwrap().parents,
        [commits[1], commits[0]]
    );
    let read = r.read_packed(three).unwrap();
    assert_eq!(read.parents, [commits[0], two, commits[1]]);
    assert_eq!(read.bytes, fast.bytes);
    assert!(r.read_packed(loose).is_none(), "loose: the usual read's");
    // blobs: whole within the size asked for, nothing over it, never a tree
    let blob = ObjectId::from_hex(
        s.git(&["rev-parse", &format!("{tip}:receipt.json")])
            .trim()
            .as_bytes(),
    )
    .unwrap();
    let size = git_bytes.len() as u64;
    assert_eq!(
        r.packed_blob(blob, size).as_deref(),
        Some(git_bytes.as_slice())
    );
    assert_eq!(r.packed_blob(blob, size - 1), None);
    let tree = ObjectId::from_hex(
        s.git(&["rev-parse", &format!("{tip}^{{tree}}")])
            .trim()
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(r.packed_blob(tree, 1 << 20), None);
    // a commit is no entry's blob either
    assert_eq!(r.packed_blob(tip, 1 << 20), None);
}

/// Section 7, notes that no checkpoint vouched for (a clone derives its own
/// notes, so the notes commit a checkpoint names is another clone's): a run
/// from the checkpoint reads the notes on what the receipts above it are about,
/// and no others, and records none as whole; a whole run reads every note.
#[test]
fn section_7_from_a_checkpoint_notes_it_did_not_vouch_for_are_read_where_new_receipts_are() {
    let (mut s, _) = chain_of(3);
    let trust = trust_of(&[1]);
    let notes_ref = format!("refs/notes/receipts/{}", writer());
    let short = &notes_ref["refs/notes/".len()..];
    // as a signed checkpoint makes it: no notes of this clone's named
    let mut cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    cp.notes.clear();
    cp.signed_elsewhere = true;
    // a checkpoint file of this clone's that did not find the notes whole
    // (it names none): every note is read, as before
    let local = Checkpoint {
        signed_elsewhere: false,
        ..cp.clone()
    };
    let noted = s.git(&["notes", "--ref", short, "list"]);
    let old_object = noted
        .lines()
        .find_map(|l| l.split_once(' ').map(|(_, o)| o.to_owned()))
        .expect("an older noted object");
    let (h, whole, r) = one_more_receipt_from(&mut s, &trust, &cp);
    assert_eq!(r.notes_tips.get(&writer()), None, "not read whole");
    assert!(whole.notes_tips.contains_key(&writer()));
    let r = run(&s, &trust, Some(&local));
    assert_eq!(r.receipts, 1);
    assert_eq!(r.note_lines, whole.note_lines, "every note read");
    assert_eq!(r.notes_tips, whole.notes_tips, "found whole, recorded");

    // a forged line on what the new receipt is about: read, a finding
    let forged = format!("{} {}\n", "a".repeat(64), "0".repeat(40));
    let new_commit = h.to_string();
    let mut shown = s.git(&["notes", "--ref", short, "show", &new_commit]);
    shown.push('\n');
    let honest = shown.clone();
    shown.push_str(&forged);
    set_note(&s, short, &shown, &new_commit);
    s.reopen();
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(kinds(&r), [("note", None)], "{:?}", r.findings);

    // a forged line only on an object old receipts are about: a whole run's
    // finding, not read from the checkpoint
    set_note(&s, short, &honest, &new_commit);
    set_note(&s, short, &forged, &old_object);
    s.reopen();
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(
        (r.findings.len(), r.warnings.len()),
        (0, 0),
        "{:?}",
        r.findings
    );
    let whole = run(&s, &trust, None);
    assert_eq!(kinds(&whole), [("note", None)], "{:?}", whole.findings);
}

/// Replace the note on `object` in notes ref `short` (under refs/notes/) by
/// `text`, with stock git.
fn set_note(s: &Scratch, short: &str, text: &str, object: &str) {
    s.git(&["notes", "--ref", short, "add", "-f", "-m", text, object]);
}

/// One note blob on several objects (a receipt's notes on its commit and on
/// its inputs tree say the same; a copy says it again) is read once and
/// checked on each object: a corrupt one is a finding on every object it is
/// on, each naming its own; a copied one only where it was copied to; the
/// findings in the order of the notes, and the lines counted on each object.
/// Packed (the notes trees read through the packs) or loose, the same report.
#[test]
fn a_note_blob_on_several_objects_is_checked_on_each_in_the_order_of_the_notes() {
    let (mut s, _) = chain_of(2);
    let short = format!("receipts/{}", writer());
    // (note blob, object) of each note: each receipt's two notes share a blob
    let noted: Vec<(String, String)> = s
        .git(&["notes", "--ref", &short, "list"])
        .lines()
        .map(|l| {
            let (blob, object) = l.split_once(' ').unwrap();
            (blob.to_owned(), object.to_owned())
        })
        .collect();
    assert_eq!(noted.len(), 4, "{noted:?}");
    let blob = &noted[0].0;
    let same: Vec<&str> = noted
        .iter()
        .filter(|(b, _)| b == blob)
        .map(|(_, o)| o.as_str())
        .collect();
    let other: Vec<&str> = noted
        .iter()
        .filter(|(b, _)| b != blob)
        .map(|(_, o)| o.as_str())
        .collect();
    assert_eq!((same.len(), other.len()), (2, 2), "{noted:?}");
    // one corrupt text on both objects of one receipt: one blob
    for object in &other {
        set_note(&s, &short, "not a note line", object);
    }
    // the other receipt's note copied to a commit no receipt is about
    s.git(&["checkout", "-q", "--orphan", "elsewhere"]);
    let copied = s.commit(&[("x", "1\n")], "elsewhere").to_string();
    s.git(&["notes", "--ref", &short, "copy", same[0], &copied]);
    s.reopen();
    let loose = run(&s, &trust_of(&[1]), None);
    // the order of the notes, as the store lists them
    let listed: Vec<String> = s
        .store
        .note_entries(&writer())
        .unwrap()
        .into_iter()
        .map(|(o, _)| o.to_string())
        .filter(|o| other.contains(&o.as_str()) || *o == copied)
        .collect();
    let on: Vec<&str> = loose
        .findings
        .iter()
        .map(|f| f.commit.as_deref().unwrap())
        .collect();
    assert_eq!(on, listed, "{:?}", loose.findings);
    for f in &loose.findings {
        let object = f.commit.as_deref().unwrap();
        assert_eq!(f.kind, "note");
        if object == copied {
            assert!(
                f.reason.ends_with(": the note was copied or moved"),
                "{}",
                f.reason
            );
        } else {
            assert_eq!(
                f.reason,
                format!(
                    "note on {object} in refs/notes/{short} is corrupt at line 1: \"not a note line\""
                )
            );
        }
    }
    // the copied note's line, on each of its three objects
    assert_eq!(loose.note_lines, 3);

    s.git(&["repack", "-adq"]);
    s.reopen();
    let tree = ObjectId::from_hex(
        s.git(&["rev-parse", &format!("refs/notes/{short}^{{tree}}")])
            .as_bytes(),
    )
    .unwrap();
    let mut buf = Vec::new();
    let reader = s.store.shared_reader();
    assert_eq!(
        reader.local().packs().read(&tree, &mut buf),
        Some(gix::objs::Kind::Tree),
        "the notes tree is read through the packs"
    );
    let packed = run(&s, &trust_of(&[1]), None);
    assert_eq!(packed.findings, loose.findings);
    assert_eq!(packed.note_lines, loose.note_lines);
}

/// From [`BASES_APART`] chains on, each chain's checkpointed entry is read on
/// every core, and each answer still goes to its own chain: every chain is
/// checked above its own entry, and a checkpoint that names a non-entry for
/// one writer among 70 is that writer's one finding, no other's.
#[test]
fn section_7_checkpointed_entries_read_on_every_core_each_answer_their_own_chain() {
    const WRITERS: u8 = 70;
    assert!(usize::from(WRITERS) >= BASES_APART);
    let mut s = Scratch::new();
    let c = contract(CONTRACT);
    let seeds: Vec<u8> = (1..=WRITERS).collect();
    let trust = trust_of(&seeds);
    let h = s.commit(&[("src/lib.rs", "1\n")], "src");
    for &k in &seeds {
        s.run(&key(k), &c, "test", h, 0, u64::from(k));
    }
    s.reopen();
    let mut cp = Checkpoint::from_report(&run(&s, &trust, None), &trust);
    let h = s.commit(&[("src/lib.rs", "2\n")], "src");
    let mut tops = Vec::new();
    for &k in &seeds {
        tops.push(s.run(&key(k), &c, "test", h, 0, 100 + u64::from(k)).commit);
    }
    s.reopen();
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(r.findings, []);
    let n = u64::from(WRITERS);
    assert_eq!((r.chains, r.receipts, r.covered), (WRITERS as usize, n, n));
    assert_eq!(r.descended.len(), WRITERS as usize);
    // writer 35's checkpointed entry replaced by a commit that is no entry,
    // between its two real ones
    let w = writer_id(key(35).public(), "default");
    let tip = tops[34];
    let base = ObjectId::from_hex(cp.chains[&w].as_bytes()).unwrap();
    let spliced = commit_tree(&s, s.head(), &[base]);
    let forged = commit_tree(&s, tip, &[spliced]);
    s.git(&[
        "update-ref",
        &crate::store::chain::chain_ref(&w),
        &forged.to_string(),
    ]);
    s.reopen();
    cp.chains.insert(w.clone(), spliced.to_string());
    let r = run(&s, &trust, Some(&cp));
    assert_eq!(kinds(&r), [("link", None)], "{:?}", r.findings);
    assert_eq!(r.findings[0].chain, w);
    assert_eq!(r.findings[0].commit, Some(spliced.to_string()));
    assert_eq!((r.receipts, r.covered), (n - 1, n - 1));
}
