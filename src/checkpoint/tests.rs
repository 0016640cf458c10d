//! The checkpoint rules as unit tests: checkpoints signed here into a repository
//! made by stock git, then forged, aged and rolled back with git plumbing the way
//! a server or a hand could.

use super::*;
use crate::freshness::rules::{Scratch, contract};
use crate::receipt::writer_id;
use crate::store::checkpoints::checkpoint_ref;
use crate::trust::TrustOrigin;

const CONTRACT: &str = "[check \"test\"]\n\trun = true\n\tpath = src\n";
const T0: u64 = 1_780_000_000_000;

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

fn signer(seed: u8) -> String {
    writer_id(key(seed).public(), "default")
}

/// A repository with `n` receipts by key 1, and its chain's tips map.
fn repo(n: usize) -> (Scratch, BTreeMap<String, String>) {
    let s = Scratch::new();
    let c = contract(CONTRACT);
    for i in 0..n {
        let h = s.commit(&[("src/lib.rs", &format!("{i}\n"))], "src");
        s.run(&key(1), &c, "test", h, 0, i as u64);
    }
    let tips = s
        .store
        .writers()
        .unwrap()
        .into_iter()
        .map(|(w, t)| (w, t.to_string()))
        .collect();
    (s, tips)
}

fn sign_at(s: &Scratch, seed: u8, tips: &BTreeMap<String, String>, at: u64) -> Checked {
    let marks = marks(&s.store, tips, &trust_of(&[1, 2])).unwrap();
    sign(&s.store, &key(seed), &signer(seed), marks, at).unwrap()
}

fn chosen(s: &Scratch, trust: &TrustSet, now: u64, since: Since) -> Chosen {
    choose(&s.store, trust, now, DEFAULT_MAX_AGE_MS, since).unwrap()
}

/// Replace the tip of `seed`'s checkpoint chain with a commit holding `file`.
fn plant(s: &Scratch, seed: u8, file: &[u8], parent: Option<ObjectId>) -> ObjectId {
    let dir = s.store.workdir().unwrap().to_owned();
    let path = dir.join("planted.json");
    std::fs::write(&path, file).unwrap();
    let blob = s.git(&["hash-object", "-w", path.to_str().unwrap()]);
    let tree_line = format!("100644 blob {}\tcheckpoint.json\n", blob.trim());
    let tree = {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .args(["mktree"])
            .current_dir(&dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(tree_line.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let mut args = vec![
        "commit-tree".to_owned(),
        tree,
        "-m".into(),
        "planted".into(),
    ];
    if let Some(p) = parent {
        args.push("-p".into());
        args.push(p.to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let commit = s.git(&args).trim().to_owned();
    s.git(&["update-ref", &checkpoint_ref(&signer(seed)), &commit]);
    ObjectId::from_hex(commit.as_bytes()).unwrap()
}

fn file_of(s: &Scratch, commit: ObjectId) -> Vec<u8> {
    s.store.read_checkpoint(commit).unwrap().file.unwrap()
}

#[test]
fn a_signed_checkpoint_names_every_tip_and_is_chosen_by_a_reader_trusting_its_signer() {
    let (s, tips) = repo(3);
    let c = sign_at(&s, 2, &tips, T0);
    assert_eq!(c.payload.sequence, 0);
    assert_eq!(c.payload.prev, None);
    let mark = &c.payload.chains[&signer(1)];
    assert_eq!(mark.index, 2);
    assert_eq!(mark.tip, tips[&signer(1)]);
    assert!(mark.trust.is_some(), "key 1 is trusted by the signer");
    // stock git sees a one-file commit on the signer's ref
    let listed = s.git(&["ls-tree", "--name-only", &checkpoint_ref(&signer(2))]);
    assert_eq!(listed.trim(), "checkpoint.json");
    let got = chosen(&s, &trust_of(&[1, 2]), T0 + DAY_MS, Since::Newest);
    assert!(got.refused.is_empty(), "{:?}", got.refused);
    let got = got.checkpoint.expect("chosen");
    assert_eq!(got.commit, c.commit);
    assert_eq!(got.payload, c.payload);
    // the envelope's payload verifies as DSSE with stock tools' encoding
    let file = file_of(&s, c.commit);
    let v: serde_json::Value = serde_json::from_slice(&file).unwrap();
    assert_eq!(v["payloadType"], PAYLOAD_TYPE);
    assert_eq!(v["signatures"][0]["keyid"], key(2).public().fingerprint());
}

#[test]
fn checkpoints_chain_each_to_the_one_before_and_never_go_back_in_time() {
    let (s, tips) = repo(1);
    let a = sign_at(&s, 2, &tips, T0);
    // a clock that went back still dates the next one no earlier
    let b = sign_at(&s, 2, &tips, T0 - 1000);
    assert_eq!(b.payload.sequence, 1);
    assert_eq!(b.payload.prev.as_deref(), Some(a.digest.as_str()));
    assert_eq!(b.time_ms, T0);
    let chain = read_chain(&s.store, &signer(2), b.commit).unwrap();
    assert!(chain.broken.is_none(), "{:?}", chain.broken);
    assert_eq!(chain.entries.len(), 2);
    // --since picks the newest at or before the time; none older is refused
    let trust = trust_of(&[1, 2]);
    let c = sign_at(&s, 2, &tips, T0 + 10 * DAY_MS);
    let at = |t| chosen(&s, &trust, T0 + 20 * DAY_MS, Since::AtOrBefore(t));
    assert_eq!(at(T0 + DAY_MS).checkpoint.unwrap().commit, b.commit);
    assert_eq!(at(T0 + 10 * DAY_MS).checkpoint.unwrap().commit, c.commit);
    let none = at(T0 - 1);
    assert!(none.checkpoint.is_none());
    assert_eq!(none.refused[0].code, "none-old-enough");
}

#[test]
fn a_checkpoint_by_a_key_outside_the_trust_set_is_refused_as_forged() {
    let (s, tips) = repo(1);
    sign_at(&s, 3, &tips, T0);
    let got = chosen(&s, &trust_of(&[1, 2]), T0, Since::Newest);
    assert!(got.checkpoint.is_none());
    assert_eq!(got.refused.len(), 1);
    assert_eq!(got.refused[0].code, "forged");
    assert!(
        got.refused[0].reason.contains("does not hold"),
        "{:?}",
        got.refused
    );
    // revoked: refused too
    let mut trust = trust_of(&[1]);
    let mut revoked = crate::trust::Trusted {
        key: key(3).public().clone(),
        origin: TrustOrigin::Config,
        valid_after: None,
        valid_before: None,
        revoked: true,
    };
    trust.add_entry(revoked.clone());
    let got = chosen(&s, &trust, T0, Since::Newest);
    assert_eq!(got.refused[0].code, "forged");
    assert!(
        got.refused[0].reason.contains("revoked"),
        "{:?}",
        got.refused
    );
    // signed outside its window: refused
    revoked.revoked = false;
    revoked.valid_after = Some(T0 + 1);
    let mut trust = trust_of(&[1]);
    trust.add_entry(revoked);
    let got = chosen(&s, &trust, T0, Since::Newest);
    assert_eq!(got.refused[0].code, "forged");
}

#[test]
fn a_tampered_checkpoint_is_broken_whatever_was_changed() {
    let (s, tips) = repo(2);
    let good = sign_at(&s, 2, &tips, T0);
    let file = file_of(&s, good.commit);
    let env: serde_json::Value = serde_json::from_slice(&file).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = b64.decode(env["payload"].as_str().unwrap()).unwrap();
    let mut p: Payload = serde_json::from_slice(&payload).unwrap();
    // a tip moved back to an older entry, signature kept
    let older = s.git(&["rev-parse", &format!("{}~1", tips[&signer(1)])]);
    p.chains.get_mut(&signer(1)).unwrap().tip = older.trim().to_owned();
    let mut forged = env.clone();
    forged["payload"] = b64.encode(crate::canon::to_canonical(&p).unwrap()).into();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "payload changed",
            crate::canon::to_canonical(&forged).unwrap(),
        ),
        ("not canonical", serde_json::to_vec_pretty(&env).unwrap()),
        ("not json", b"{".to_vec()),
        ("payload type", {
            let mut e = env.clone();
            e["payloadType"] = "application/vnd.in-toto+json".into();
            crate::canon::to_canonical(&e).unwrap()
        }),
        ("two signatures", {
            let mut e = env.clone();
            let sig = e["signatures"][0].clone();
            e["signatures"].as_array_mut().unwrap().push(sig);
            crate::canon::to_canonical(&e).unwrap()
        }),
        ("keyid of another key", {
            let mut e = env.clone();
            e["signatures"][0]["keyid"] = key(1).public().fingerprint().into();
            crate::canon::to_canonical(&e).unwrap()
        }),
        ("unknown field", {
            let mut e = env.clone();
            e["extra"] = 1.into();
            crate::canon::to_canonical(&e).unwrap()
        }),
    ];
    for (what, bytes) in cases {
        let c = plant(&s, 2, &bytes, None);
        let chain = read_chain(&s.store, &signer(2), c).unwrap();
        assert!(chain.entries.is_empty(), "{what}: taken");
        assert_eq!(chain.broken.as_ref().unwrap().commit, c, "{what}");
        let got = chosen(&s, &trust_of(&[1, 2]), T0, Since::Newest);
        assert!(got.checkpoint.is_none(), "{what}: chosen");
        assert_eq!(got.refused[0].code, "forged", "{what}");
    }
    // the good envelope in the ref of another signer: refused (signed as key 2)
    let c = plant(&s, 1, &file, None);
    let chain = read_chain(&s.store, &signer(1), c).unwrap();
    assert!(
        chain
            .broken
            .unwrap()
            .reason
            .contains("sits in the checkpoint chain"),
        "moved to another signer's ref"
    );
}

#[test]
fn a_checkpoint_chain_that_skips_repeats_or_merges_is_broken_above_the_last_good_entry() {
    let (s, tips) = repo(1);
    let a = sign_at(&s, 2, &tips, T0);
    let b = sign_at(&s, 2, &tips, T0 + 1);
    // b's file on a's parent position: a root that says it is number 1
    let root = plant(&s, 2, &file_of(&s, b.commit), None);
    let chain = read_chain(&s.store, &signer(2), root).unwrap();
    assert!(chain.broken.unwrap().reason.contains("first checkpoint"));
    // a repeated on top of itself: the links do not follow
    let again = plant(&s, 2, &file_of(&s, a.commit), Some(a.commit));
    let chain = read_chain(&s.store, &signer(2), again).unwrap();
    assert_eq!(chain.entries.len(), 1, "a holds");
    assert!(chain.broken.unwrap().reason.contains("does not follow"));
    // the store's writer puts the chain back where it was
    s.git(&[
        "update-ref",
        &checkpoint_ref(&signer(2)),
        &b.commit.to_string(),
    ]);
    let chain = read_chain(&s.store, &signer(2), b.commit).unwrap();
    assert_eq!(chain.entries.len(), 2);
    assert!(chain.broken.is_none());
}

#[test]
fn a_reader_checks_a_chain_from_its_newest_entry_down_to_the_one_it_starts_from_and_one_more() {
    let (s, tips) = repo(1);
    let a = sign_at(&s, 2, &tips, T0);
    let b = sign_at(&s, 2, &tips, T0 + DAY_MS);
    let c = sign_at(&s, 2, &tips, T0 + 2 * DAY_MS);
    let d = sign_at(&s, 2, &tips, T0 + 3 * DAY_MS);
    // the root replaced by a damaged copy, each entry above put back on it
    let mut bad = file_of(&s, a.commit);
    bad.push(b'\n');
    let a2 = plant(&s, 2, &bad, None);
    let b2 = plant(&s, 2, &file_of(&s, b.commit), Some(a2));
    let c2 = plant(&s, 2, &file_of(&s, c.commit), Some(b2));
    let d2 = plant(&s, 2, &file_of(&s, d.commit), Some(c2));
    let whole = read_chain(&s.store, &signer(2), d2).unwrap();
    assert_eq!(
        whole.broken.unwrap().commit,
        a2,
        "the whole chain is broken"
    );
    let trust = trust_of(&[1, 2]);
    let now = T0 + 4 * DAY_MS;
    // the newest and the one below it hold: the damage further down decides
    // nothing a reader starting from the newest reads
    let top = read_chain_top(&s.store, &signer(2), d2, Since::Newest).unwrap();
    assert!(top.broken.is_none(), "{:?}", top.broken);
    let read: Vec<ObjectId> = top.entries.iter().map(|e| e.commit).collect();
    assert_eq!(read, vec![c2, d2]);
    let got = chosen(&s, &trust, now, Since::Newest);
    assert_eq!(got.checkpoint.unwrap().commit, d2);
    assert!(got.refused.is_empty(), "{:?}", got.refused);
    // starting from c: read down to b, which holds
    let got = chosen(&s, &trust, now, Since::AtOrBefore(T0 + 2 * DAY_MS));
    assert_eq!(got.checkpoint.unwrap().commit, c2);
    // starting from b: its link to the root is checked, and the root is damaged
    let got = chosen(&s, &trust, now, Since::AtOrBefore(T0 + DAY_MS));
    assert!(got.checkpoint.is_none());
    assert_eq!(got.refused[0].code, "forged");
    assert!(
        got.refused[0].reason.contains(&a2.to_string()),
        "{:?}",
        got.refused
    );
    // nothing old enough: read to the root, which is damaged
    let got = chosen(&s, &trust, now, Since::AtOrBefore(T0 - 1));
    assert_eq!(got.refused[0].code, "forged");
    // the newest that does not follow the one below it (d on b) is refused
    plant(&s, 2, &file_of(&s, d.commit), Some(b2));
    let got = chosen(&s, &trust, now, Since::Newest);
    assert!(got.checkpoint.is_none());
    assert_eq!(got.refused[0].code, "forged");
    assert!(
        got.refused[0].reason.contains("does not follow"),
        "{:?}",
        got.refused
    );
    // and the one below the newest is checked alone: damaged, it refuses
    let mut bad_c = file_of(&s, c.commit);
    bad_c.push(b'\n');
    let c3 = plant(&s, 2, &bad_c, Some(b2));
    plant(&s, 2, &file_of(&s, d.commit), Some(c3));
    let got = chosen(&s, &trust, now, Since::Newest);
    assert!(got.checkpoint.is_none());
    assert!(
        got.refused[0].reason.contains(&c3.to_string()),
        "{:?}",
        got.refused
    );
    // put back whole, every start holds
    s.git(&[
        "update-ref",
        &checkpoint_ref(&signer(2)),
        &d.commit.to_string(),
    ]);
    for (at, want) in [(T0, a.commit), (T0 + DAY_MS, b.commit), (now, d.commit)] {
        let got = chosen(&s, &trust, now, Since::AtOrBefore(at));
        assert_eq!(got.checkpoint.unwrap().commit, want);
    }
    let got = chosen(&s, &trust, now, Since::AtOrBefore(T0 - 1));
    assert_eq!(got.refused[0].code, "none-old-enough");
}

/// Wherever the entry a reader starts from falls among the windows the chain
/// is read in (a window is as many entries as there are cores), the entry
/// below it is read and checked too: damaged, it refuses the signer.
#[test]
fn the_entry_below_the_one_started_from_is_checked_wherever_it_falls() {
    let (s, tips) = repo(1);
    let entries: Vec<Checked> = (0..6)
        .map(|i| sign_at(&s, 2, &tips, T0 + i * DAY_MS))
        .collect();
    let trust = trust_of(&[1, 2]);
    let now = T0 + 7 * DAY_MS;
    for start in 1..entries.len() {
        // the chain again, the entry below `start` damaged
        let mut parent = None;
        for (i, e) in entries.iter().enumerate() {
            let mut file = file_of(&s, e.commit);
            if i + 1 == start {
                file.push(b'\n');
            }
            parent = Some(plant(&s, 2, &file, parent));
        }
        let at = T0 + start as u64 * DAY_MS;
        let got = chosen(&s, &trust, now, Since::AtOrBefore(at));
        assert!(got.checkpoint.is_none(), "starting from #{start}");
        assert_eq!(got.refused[0].code, "forged", "starting from #{start}");
        // the chain as signed: it holds
        s.git(&[
            "update-ref",
            &checkpoint_ref(&signer(2)),
            &entries[entries.len() - 1].commit.to_string(),
        ]);
        let got = chosen(&s, &trust, now, Since::AtOrBefore(at));
        assert_eq!(got.checkpoint.unwrap().commit, entries[start].commit);
    }
}

/// The lowest entry a reader reads is the chain's root when it has no single
/// parent, and a root's rules hold: one that says it is not the first, or a
/// merge at the bottom, refuses the signer.
#[test]
fn a_root_that_says_it_is_not_the_first_or_is_a_merge_refuses_the_signer() {
    let (s, tips) = repo(1);
    let a = sign_at(&s, 2, &tips, T0);
    let b = sign_at(&s, 2, &tips, T0 + DAY_MS);
    let trust = trust_of(&[1, 2]);
    let now = T0 + 2 * DAY_MS;
    assert!(chosen(&s, &trust, now, Since::Newest).checkpoint.is_some());
    // b's file as a root: number 1 with nothing below
    plant(&s, 2, &file_of(&s, b.commit), None);
    let got = chosen(&s, &trust, now, Since::Newest);
    assert!(got.checkpoint.is_none());
    assert!(
        got.refused[0].reason.contains("first checkpoint"),
        "{:?}",
        got.refused
    );
    // a's file on a commit of two parents
    let merge = s.git(&[
        "commit-tree",
        &format!("{}^{{tree}}", a.commit),
        "-p",
        &a.commit.to_string(),
        "-p",
        &b.commit.to_string(),
        "-m",
        "merge",
    ]);
    s.git(&["update-ref", &checkpoint_ref(&signer(2)), merge.trim()]);
    let got = chosen(&s, &trust, now, Since::Newest);
    assert!(got.checkpoint.is_none());
    assert!(
        got.refused[0].reason.contains("2 parents"),
        "{:?}",
        got.refused
    );
}

#[test]
fn a_signers_newest_checkpoint_older_than_the_max_age_is_stale_and_a_future_one_refused() {
    let (s, tips) = repo(1);
    sign_at(&s, 2, &tips, T0);
    let trust = trust_of(&[1, 2]);
    let fresh = chosen(&s, &trust, T0 + DEFAULT_MAX_AGE_MS, Since::Newest);
    assert!(fresh.checkpoint.is_some(), "exactly the max age is fresh");
    let stale = chosen(&s, &trust, T0 + DEFAULT_MAX_AGE_MS + 1, Since::Newest);
    assert!(stale.checkpoint.is_none());
    assert_eq!(stale.refused[0].code, "stale");
    assert!(stale.refused[0].reason.contains("git receipt checkpoint"));
    // an older anchor on a fresh chain is fine: freshness is the newest's
    sign_at(&s, 2, &tips, T0 + 100 * DAY_MS);
    let old = chosen(
        &s,
        &trust,
        T0 + 100 * DAY_MS,
        Since::AtOrBefore(T0 + 10 * DAY_MS),
    );
    assert_eq!(old.checkpoint.unwrap().time_ms, T0);
    // dated beyond the skew: refused
    let future = chosen(
        &s,
        &trust,
        T0 + 100 * DAY_MS - s.store.max_skew_ms() - 1,
        Since::Newest,
    );
    assert_eq!(future.refused[0].code, "future");
    let within = chosen(
        &s,
        &trust,
        T0 + 100 * DAY_MS - s.store.max_skew_ms(),
        Since::Newest,
    );
    assert!(within.checkpoint.is_some());
}

#[test]
fn of_several_signers_the_newest_good_checkpoint_is_chosen_and_the_rest_are_named() {
    let (s, tips) = repo(1);
    sign_at(&s, 1, &tips, T0 + 5);
    let newer = sign_at(&s, 2, &tips, T0 + 9);
    sign_at(&s, 3, &tips, T0 + 20); // untrusted
    let got = chosen(&s, &trust_of(&[1, 2]), T0 + 30, Since::Newest);
    assert_eq!(got.checkpoint.unwrap().commit, newer.commit);
    assert_eq!(got.refused.len(), 1);
    assert_eq!(got.refused[0].signer, signer(3));
    // a tie goes to the signer whose writer id sorts first
    let one = sign_at(&s, 1, &tips, T0 + 40);
    let two = sign_at(&s, 2, &tips, T0 + 40);
    let first = if signer(1) < signer(2) { one } else { two };
    let got = chosen(&s, &trust_of(&[1, 2]), T0 + 50, Since::Newest);
    assert_eq!(got.checkpoint.unwrap().commit, first.commit);
}

#[test]
fn a_checkpoint_vouches_only_for_chains_whose_key_the_reader_trusts_as_the_signer_did() {
    let (s, tips) = repo(2);
    let c = sign_at(&s, 2, &tips, T0);
    let same = as_verify_checkpoint(&c, &trust_of(&[1, 2]));
    assert_eq!(same.chains.len(), 1);
    assert!(same.vouches_under(&trust_of(&[1, 2])));
    // a key newly added elsewhere changes nothing for chain 1
    assert_eq!(
        as_verify_checkpoint(&c, &trust_of(&[1, 2, 4])).chains.len(),
        1
    );
    // key 1 revoked since: chain 1 is checked whole
    let mut trust = trust_of(&[2]);
    trust.add_entry(crate::trust::Trusted {
        key: key(1).public().clone(),
        origin: TrustOrigin::Config,
        valid_after: None,
        valid_before: None,
        revoked: true,
    });
    assert!(as_verify_checkpoint(&c, &trust).chains.is_empty());
    // and one the signer did not trust is never vouched for
    let marks = marks(&s.store, &tips, &trust_of(&[2])).unwrap();
    assert_eq!(marks[&signer(1)].trust, None);
    let c = sign(&s.store, &key(2), &signer(2), marks, T0 + 1).unwrap();
    assert!(
        as_verify_checkpoint(&c, &trust_of(&[1, 2]))
            .chains
            .is_empty()
    );
}

#[test]
fn ages_read_as_days_hours_minutes_or_seconds_and_nothing_else() {
    assert_eq!(parse_age("45d"), Some(45 * DAY_MS));
    assert_eq!(parse_age("12h"), Some(12 * 3_600_000));
    assert_eq!(parse_age("90m"), Some(90 * 60_000));
    assert_eq!(parse_age("30s"), Some(30_000));
    assert_eq!(parse_age(" 3600 "), Some(3_600_000));
    assert_eq!(parse_age("2D"), Some(2 * DAY_MS));
    for bad in [
        "",
        "d",
        "0",
        "0d",
        "-1d",
        "1.5d",
        "1w",
        "1dd",
        "99999999999999d",
        "366001d",
    ] {
        assert_eq!(parse_age(bad), None, "{bad:?}");
    }
    assert_eq!(parse_age("366000d"), Some(366_000 * DAY_MS));
}

/// Sign `payload` (any JSON) as key `seed` would, and put it on `seed`'s
/// checkpoint chain above `parent`: a signer that signs nonsense.
fn sign_raw(
    s: &Scratch,
    seed: u8,
    payload: &serde_json::Value,
    parent: Option<ObjectId>,
) -> ObjectId {
    let bytes = crate::canon::to_canonical(payload).unwrap();
    let sig = key(seed).sign_dsse(PAYLOAD_TYPE, &bytes).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let env = serde_json::json!({
        "payload": b64.encode(&bytes),
        "payloadType": PAYLOAD_TYPE,
        "signatures": [{"keyid": key(seed).public().fingerprint(), "sig": b64.encode(sig)}],
    });
    plant(s, seed, &crate::canon::to_canonical(&env).unwrap(), parent)
}

#[test]
fn a_validly_signed_payload_that_breaks_a_field_rule_is_still_broken() {
    let (s, tips) = repo(1);
    let good = sign_at(&s, 2, &tips, T0);
    let base = serde_json::to_value(&good.payload).unwrap();
    let w = signer(1);
    // as signed, it holds (the helper itself is sound)
    let c = sign_raw(&s, 2, &base, None);
    let chain = read_chain(&s.store, &signer(2), c).unwrap();
    assert!(chain.broken.is_none(), "{:?}", chain.broken);
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = base.clone();
        f(&mut v);
        v
    };
    let cases: Vec<(&str, serde_json::Value)> = vec![
        (
            "format",
            edit(&|v| v["format"] = "git-receipt-checkpoint/2".into()),
        ),
        ("signer", edit(&|v| v["signer"] = "Not A Writer".into())),
        (
            "prev at 0",
            edit(&|v| v["prev"] = good.digest.clone().into()),
        ),
        ("sequence without prev", edit(&|v| v["sequence"] = 1.into())),
        (
            "prev not a digest",
            edit(&|v| {
                v["sequence"] = 1.into();
                v["prev"] = "sha256:xyz".into();
            }),
        ),
        (
            "chain name",
            edit(&|v| {
                let m = v["chains"][&w].clone();
                v["chains"]["../../etc"] = m;
            }),
        ),
        (
            "tip short",
            edit(&|v| v["chains"][&w]["tip"] = "abc123".into()),
        ),
        (
            "tip of sha256 width",
            edit(&|v| v["chains"][&w]["tip"] = "a".repeat(64).into()),
        ),
        (
            "tip upper",
            edit(&|v| v["chains"][&w]["tip"] = "A".repeat(40).into()),
        ),
        ("id", edit(&|v| v["chains"][&w]["id"] = "sha256:zz".into())),
        (
            "id without prefix",
            edit(&|v| v["chains"][&w]["id"] = "a".repeat(64).into()),
        ),
        (
            "key",
            edit(&|v| v["chains"][&w]["key"] = "SHA256:nope".into()),
        ),
        (
            "trust",
            edit(&|v| v["chains"][&w]["trust"] = "sha256:".into()),
        ),
        (
            "time",
            edit(&|v| v["time"] = "2026-13-01T00:00:00.000Z".into()),
        ),
        (
            "time unpadded",
            edit(&|v| v["time"] = "2026-1-01T00:00:00.000Z".into()),
        ),
    ];
    for (what, payload) in cases {
        let c = sign_raw(&s, 2, &payload, None);
        let chain = read_chain(&s.store, &signer(2), c).unwrap();
        assert!(chain.entries.is_empty(), "{what}: taken");
        assert!(chain.broken.is_some(), "{what}");
    }
    // the largest integer canonical JSON holds is fine (larger is not JSON
    // it reads: `canon` refuses it)
    let ok = edit(&|v| v["chains"][&w]["index"] = ((1u64 << 53) - 1).into());
    let c = sign_raw(&s, 2, &ok, None);
    assert!(
        read_chain(&s.store, &signer(2), c)
            .unwrap()
            .broken
            .is_none()
    );
}

#[test]
fn each_link_of_a_validly_signed_checkpoint_must_follow_the_one_below() {
    let (s, tips) = repo(1);
    let a = sign_at(&s, 2, &tips, T0);
    let next = serde_json::json!({
        "format": FORMAT,
        "signer": signer(2),
        "key": key(2).public().to_openssh(),
        "sequence": 1,
        "prev": a.digest,
        "time": format_timestamp(T0 + 5),
        "chains": serde_json::to_value(&a.payload.chains).unwrap(),
    });
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = next.clone();
        f(&mut v);
        v
    };
    let c = sign_raw(&s, 2, &next, Some(a.commit));
    assert!(
        read_chain(&s.store, &signer(2), c)
            .unwrap()
            .broken
            .is_none()
    );
    let cases: Vec<(&str, serde_json::Value)> = vec![
        ("sequence skips", edit(&|v| v["sequence"] = 2.into())),
        (
            "prev of another",
            edit(&|v| v["prev"] = format!("sha256:{}", "0".repeat(64)).into()),
        ),
        (
            "before the one below",
            edit(&|v| v["time"] = format_timestamp(T0 - 1).into()),
        ),
    ];
    for (what, payload) in cases {
        let c = sign_raw(&s, 2, &payload, Some(a.commit));
        let chain = read_chain(&s.store, &signer(2), c).unwrap();
        assert_eq!(chain.entries.len(), 1, "{what}: a holds, the rest not");
        assert_eq!(chain.broken.unwrap().commit, c, "{what}");
    }
    // the right payload on the wrong parent (none): refused at the root
    let c = sign_raw(&s, 2, &next, None);
    let chain = read_chain(&s.store, &signer(2), c).unwrap();
    assert!(chain.broken.unwrap().reason.contains("first checkpoint"));
}

#[test]
fn a_chain_read_above_an_accepted_entry_starts_with_it_and_must_descend_from_it() {
    let (s, tips) = repo(1);
    let a = sign_at(&s, 2, &tips, T0);
    let b = sign_at(&s, 2, &tips, T0 + 1);
    let c = sign_at(&s, 2, &tips, T0 + 2);
    let above = read_chain_above(&s.store, &signer(2), c.commit, Some(b.commit)).unwrap();
    assert!(above.broken.is_none(), "{:?}", above.broken);
    let got: Vec<ObjectId> = above.entries.iter().map(|e| e.commit).collect();
    assert_eq!(got, [b.commit, c.commit]);
    assert_eq!(above.entries[0].payload.sequence, 1);
    // at the base itself: just it
    let same = read_chain_above(&s.store, &signer(2), b.commit, Some(b.commit)).unwrap();
    assert_eq!(same.entries.len(), 1);
    assert!(same.broken.is_none());
    // a tip below the base (rolled back) does not descend from it
    let back = read_chain_above(&s.store, &signer(2), a.commit, Some(b.commit)).unwrap();
    assert!(back.entries.is_empty());
    assert!(back.broken.unwrap().reason.contains("does not descend"));
}

#[test]
fn the_max_age_is_the_configured_one_or_45_days_and_nonsense_is_an_error() {
    let (s, _) = repo(0);
    assert_eq!(max_age_ms(&s.store), Ok(DEFAULT_MAX_AGE_MS));
    let mut s = s;
    s.git(&["config", MAX_AGE_CONFIG, "10d"]);
    s.reopen();
    assert_eq!(max_age_ms(&s.store), Ok(10 * DAY_MS));
    s.git(&["config", MAX_AGE_CONFIG, "a while"]);
    s.reopen();
    assert!(max_age_ms(&s.store).unwrap_err().contains("not an age"));
}

#[test]
fn a_checkpoint_file_over_the_limit_is_never_signed() {
    assert!(!too_large(MAX_CHECKPOINT_BYTES as usize));
    assert!(too_large(MAX_CHECKPOINT_BYTES as usize + 1));
    assert!(!too_large(0));
}
