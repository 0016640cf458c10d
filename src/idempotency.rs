//! Idempotency keys (format v5, `docs/format.md` section 15): what a key stands
//! for, where a writer's chain holds one, and which of a clone's receipts a
//! remote chain already holds when `push` re-appends them.
//!
//! A key (`record --idempotency-key`) names one result, however often its upload
//! is retried. What it stands for, its **content**, is the body without what a
//! retry changes: `chain` and `result.started_at` ([`content_digest`]). A receipt
//! without a key is known by its **derived key**, the body without `chain`
//! ([`derived_key`]): the same receipt re-signed at another place of its chain,
//! as `push` does when it re-appends after the chain diverged, and nothing else.
//! This module decides; `record`, `push` and `verify` say what it decided.

use gix::ObjectId;
use sha2::{Digest, Sha256};

use crate::canon::{self, CanonError};
use crate::receipt::{Body, Receipt};
use crate::store::chain::ChainEntry;
use crate::store::{Store, StoreError};

/// `sha256:<hex>` of what an idempotency key stands for: the RFC 8785 bytes of
/// `body` without `chain`, `result.started_at` and `runner` (a retried CI job
/// records the same result from another host, or after the tool was updated).
/// Every other member (subject, check, exit code, detail, duration, tails, log
/// digest, tests, metrics, artifacts, the key itself, ...) is in it. An error only for a
/// body whose numbers no receipt can hold (one that could not be signed either).
pub fn content_digest(body: &Body) -> Result<String, CanonError> {
    digest_leaving_out(body, true)
}

/// `sha256:<hex>` of `body` without `chain`: the key a receipt without one is
/// known by, equal for the same receipt re-signed at another place of its chain
/// (a retried upload of a `run` receipt), and different for any new observation,
/// which has its own `started_at`.
pub fn derived_key(body: &Body) -> Result<String, CanonError> {
    digest_leaving_out(body, false)
}

fn digest_leaving_out(body: &Body, started_at: bool) -> Result<String, CanonError> {
    let value = serde_json::to_value(body).expect("a body is plain data");
    digest_of_value(value, started_at)
}

/// [`content_digest`] (or, without `started_at`, [`derived_key`]) of a body as a
/// JSON value.
fn digest_of_value(mut value: serde_json::Value, started_at: bool) -> Result<String, CanonError> {
    if let Some(body) = value.as_object_mut() {
        body.remove("chain");
        if started_at {
            body.remove("runner");
            if let Some(result) = body.get_mut("result").and_then(|r| r.as_object_mut()) {
                result.remove("started_at");
            }
        }
    }
    let bytes = canon::to_canonical(&value)?;
    Ok(format!("sha256:{}", hex::encode(Sha256::digest(bytes))))
}

/// The content digest of a stored receipt. Its bytes were canonical when it was
/// parsed, so its body always has one.
pub fn stored_content(receipt: &Receipt<impl Sized>) -> String {
    content_digest(receipt.body()).expect("a stored receipt's body is canonical")
}

/// The derived key of a stored receipt (see [`stored_content`]).
pub fn stored_derived_key(receipt: &Receipt<impl Sized>) -> String {
    derived_key(receipt.body()).expect("a stored receipt's body is canonical")
}

/// A receipt of a chain that holds an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// Its chain commit.
    pub commit: ObjectId,
    /// Its index in the chain.
    pub index: u64,
    /// Its id.
    pub id: String,
    /// Its [`content_digest`].
    pub content: String,
}

impl Holder {
    fn of(e: &ChainEntry) -> Holder {
        Holder {
            commit: e.commit,
            index: e.receipt.body().chain.index,
            id: e.receipt.id().to_owned(),
            content: stored_content(&e.receipt),
        }
    }
}

/// The newest receipt of `writer`'s chain at `tip` that holds idempotency key
/// `key`, if any.
///
/// Cost: a walk down the chain from `tip`, one read of each entry (commit, tree
/// and `receipt.json`, in chain order so the pack's delta bases stay warm) and a
/// byte search in it for the key's member as the canonical form spells it; only
/// an entry that holds it is parsed. The walk stops at the first holder, so a
/// retry that comes soon after its first upload (the usual case) costs a few
/// reads (4 ms from the tip of a chain of 100,000); a key the chain does not hold
/// costs a read of every entry, about what indexing the chain costs (1.6 s for
/// 100,000 receipts in one packed chain, on two cores). An entry that cannot be
/// read ends the walk (a chain cut by a shallow fetch): what lies below it is not
/// looked at.
pub fn find_key(
    store: &Store,
    writer: &str,
    tip: ObjectId,
    key: &str,
) -> Result<Option<Holder>, StoreError> {
    // The member as RFC 8785 writes it: keys are printable ASCII, so only `"` and
    // `\` are escaped, as serde_json escapes them.
    let member = format!(
        "\"idempotency_key\":{}",
        serde_json::to_string(key).expect("a string serializes")
    );
    let mut found = None;
    walk_keyed(store, writer, tip, &member, |k, holder| {
        if k == key {
            found = Some(holder);
        }
        found.is_none()
    })?;
    Ok(found)
}

/// Every receipt of `writer`'s chain at `tip` that holds an idempotency key,
/// newest first, with its key: what `verify` compares the keys of new receipts
/// with when it checks only what came after a checkpoint. Costs what
/// [`find_key`] costs for a key the chain does not hold.
pub fn keyed_entries(
    store: &Store,
    writer: &str,
    tip: ObjectId,
) -> Result<Vec<(String, Holder)>, StoreError> {
    let mut out = Vec::new();
    walk_keyed(store, writer, tip, "\"idempotency_key\":", |k, holder| {
        out.push((k.to_owned(), holder));
        true
    })?;
    Ok(out)
}

/// Walk `writer`'s chain from `tip`, newest first, calling `visit` with each
/// receipt of the chain that holds an idempotency key (parsing only those whose
/// bytes contain `needle`) until it returns `false`. See [`find_key`] for the cost.
fn walk_keyed(
    store: &Store,
    writer: &str,
    tip: ObjectId,
    needle: &str,
    mut visit: impl FnMut(&str, Holder) -> bool,
) -> Result<(), StoreError> {
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let reader = store.shared_reader().local();
    let mut next = Some(tip);
    let mut seen = std::collections::HashSet::new();
    while let Some(commit) = next {
        if !seen.insert(commit) {
            break;
        }
        let raw = reader.read(commit);
        next = raw.parents.first().copied();
        let Ok(bytes) = raw.bytes else {
            break;
        };
        if finder.find(&bytes).is_none() {
            continue;
        }
        // a receipt that does not parse, or names another chain, counts for
        // nothing, here as everywhere
        let Ok(receipt) = Receipt::parse_owned(bytes) else {
            continue;
        };
        let b = receipt.body();
        let Some(key) = b.result.idempotency_key.clone() else {
            continue;
        };
        if b.chain.writer != writer {
            continue;
        }
        let holder = Holder::of(&ChainEntry {
            commit,
            parent: next,
            receipt,
        });
        if !visit(&key, holder) {
            break;
        }
    }
    Ok(())
}

/// A receipt that holds an idempotency key a receipt below it in its chain
/// holds already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeat {
    /// The key.
    pub key: String,
    /// The oldest receipt that holds it.
    pub first: Holder,
    /// The receipt that holds it again.
    pub again: Holder,
}

impl Repeat {
    /// Whether both hold the same result: a retry that two clones each
    /// recorded before their chains met. Otherwise the key names two results.
    pub fn same_content(&self) -> bool {
        self.first.content == self.again.content
    }
}

/// The repeats among `keyed`, a chain's receipts that hold a key, oldest first:
/// each receipt from position `from` on whose key an older one holds, with the
/// oldest holder. Those before `from` are only compared with (a `verify` looked
/// at them before).
pub fn repeated_keys(keyed: &[(String, Holder)], from: usize) -> Vec<Repeat> {
    let mut first: std::collections::HashMap<&str, &Holder> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (n, (key, holder)) in keyed.iter().enumerate() {
        match first.get(key.as_str()) {
            Some(f) if n >= from => out.push(Repeat {
                key: key.clone(),
                first: (*f).clone(),
                again: holder.clone(),
            }),
            Some(_) => {}
            None => {
                first.insert(key, holder);
            }
        }
    }
    out
}

/// What `push` re-appends of this clone's receipts on a remote chain that
/// diverged from it, and what it leaves out because the remote holds it already.
#[derive(Debug, Default)]
pub struct Reappend {
    /// The receipts to re-append, oldest first.
    pub keep: Vec<ChainEntry>,
    /// The receipts left out, oldest first, each with the remote's receipt that
    /// holds its result.
    pub left_out: Vec<(ChainEntry, Holder)>,
}

/// One idempotency key held for two different results: by a receipt of this
/// clone and by one of the remote's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyConflict {
    /// The key.
    pub key: String,
    /// This clone's receipt.
    pub ours: Holder,
    /// The remote's receipt (the oldest of its new entries that holds the key).
    pub theirs: Holder,
}

/// Which of `mine` (this clone's receipts above the merge base, oldest first) to
/// re-append on a remote chain whose receipts above the merge base are `theirs`.
///
/// A receipt with a key that `theirs` hold for the same content is left out; one
/// whose key they hold only for other content is a [`KeyConflict`] (nothing is
/// to be pushed). A receipt without a key is left out when one of `theirs` has
/// the same [`derived_key`]. Everything else is kept, in order.
pub fn plan_reappend(
    mine: Vec<ChainEntry>,
    theirs: &[ChainEntry],
) -> Result<Reappend, Box<KeyConflict>> {
    use std::collections::HashMap;
    // their holders of each key, oldest first; their receipts by derived key
    let mut keyed: HashMap<&str, Vec<Holder>> = HashMap::new();
    let mut derived: HashMap<String, Holder> = HashMap::new();
    for e in theirs {
        match &e.receipt.body().result.idempotency_key {
            Some(k) => keyed.entry(k.as_str()).or_default().push(Holder::of(e)),
            None => {
                derived
                    .entry(stored_derived_key(&e.receipt))
                    .or_insert_with(|| Holder::of(e));
            }
        }
    }
    let mut plan = Reappend::default();
    for e in mine {
        let held = match &e.receipt.body().result.idempotency_key {
            Some(k) => match keyed.get(k.as_str()) {
                None => None,
                Some(holders) => {
                    let ours = Holder::of(&e);
                    match holders.iter().find(|h| h.content == ours.content) {
                        Some(same) => Some(same.clone()),
                        None => {
                            return Err(Box::new(KeyConflict {
                                key: k.clone(),
                                ours,
                                theirs: holders[0].clone(),
                            }));
                        }
                    }
                }
            },
            None if derived.is_empty() => None,
            None => derived.get(&stored_derived_key(&e.receipt)).cloned(),
        };
        match held {
            Some(h) => plan.left_out.push((e, h)),
            None => plan.keep.push(e),
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::{Chain, Check, Kind, Mode, Outcome, Runner, Subject};

    fn body() -> Body {
        Body {
            schema: crate::receipt::SCHEMA_V5.into(),
            kind: Kind::Check,
            chain: Chain {
                writer: "default-0b122fce84b0c88534299df4990a87ca".into(),
                index: 3,
                prev: Some(format!("sha256:{}", "a".repeat(64))),
            },
            subject: Subject {
                commit: "1".repeat(40),
                tree: "2".repeat(40),
                inputs: "3".repeat(40),
                dirty: false,
                dependencies: Vec::new(),
            },
            check: Check {
                name: "test".into(),
                argv: vec!["cargo".into(), "test".into()],
                definition: format!("sha256:{}", "d".repeat(64)),
                paths: vec!["src".into()],
                env: [("RUSTFLAGS".to_owned(), "-D warnings".to_owned())].into(),
            },
            result: Outcome {
                mode: Mode::Record,
                exit_code: 0,
                passed: true,
                started_at: "2026-02-01T00:00:00.000Z".into(),
                duration_ms: 1200,
                stdout_tail: "ok\n".into(),
                stderr_tail: String::new(),
                log: Some("4".repeat(40)),
                output_bytes: 3,
                log_truncated: false,
                log_bytes: Some(3),
                log_sha256: Some(Some(format!("sha256:{}", "5".repeat(64)))),
                detail: String::new(),
                assertions: Vec::new(),
                tests: None,
                metrics: Vec::new(),
                artifacts: Some(Vec::new()),
                idempotency_key: Some("ci-1234/test".into()),
            },
            acceptance: None,
            review: None,
            runner: Runner {
                tool: "git-receipt 0.1.0".into(),
                host: "ci-7".into(),
                os: "linux-x86_64".into(),
            },
            supersedes: None,
        }
    }

    #[test]
    fn a_retry_that_changes_only_the_chain_and_the_start_has_the_same_content() {
        let first = body();
        let mut retry = body();
        retry.chain.index = 9;
        retry.chain.prev = Some(format!("sha256:{}", "b".repeat(64)));
        retry.chain.writer = "other-0b122fce84b0c88534299df4990a87ca".into();
        retry.result.started_at = "2026-02-01T00:05:00.000Z".into();
        let content = |b: &Body| content_digest(b).unwrap();
        let derived = |b: &Body| derived_key(b).unwrap();
        assert_eq!(content(&first), content(&retry));
        assert!(content(&first).starts_with("sha256:"));
        // the derived key leaves out only the chain: another start is another run
        assert_ne!(derived(&first), derived(&retry));
        retry.result.started_at = first.result.started_at.clone();
        assert_eq!(derived(&first), derived(&retry));
        assert_ne!(derived(&first), content(&first));
    }

    #[test]
    fn another_exit_code_log_or_key_is_other_content_another_runner_is_not() {
        let first = content_digest(&body()).unwrap();
        let mut elsewhere = body();
        elsewhere.runner.host = "ci-8".into();
        elsewhere.runner.tool = "git-receipt 9".into();
        assert_eq!(
            content_digest(&elsewhere).unwrap(),
            first,
            "a retry on another runner host, or after an upgrade, is the same result"
        );
        type Change = (&'static str, fn(&mut Body));
        let changes: [Change; 4] = [
            ("exit code", |b| b.result.exit_code = 1),
            ("log", |b| b.result.log = None),
            ("key", |b| {
                b.result.idempotency_key = Some("ci-1235/test".into())
            }),
            ("subject", |b| b.subject.dirty = true),
        ];
        for (what, change) in changes {
            let mut b = body();
            change(&mut b);
            assert_ne!(content_digest(&b).unwrap(), first, "{what} is content");
        }
    }

    /// Every leaf of the body's JSON, one at a time: all but `chain`,
    /// `result.started_at` and `runner` change the content digest; any but
    /// `chain` changes the derived key.
    #[test]
    fn every_member_but_chain_and_started_at_is_content() {
        fn leaves(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        leaves(v, format!("{at}/{k}"), out);
                    }
                }
                serde_json::Value::Array(a) => {
                    for (i, v) in a.iter().enumerate() {
                        leaves(v, format!("{at}/{i}"), out);
                    }
                }
                _ => out.push(at),
            }
        }
        let value = serde_json::to_value(body()).unwrap();
        assert_eq!(
            digest_of_value(value.clone(), true).unwrap(),
            content_digest(&body()).unwrap(),
            "the digest of the value is the body's"
        );
        let mut paths = Vec::new();
        leaves(&value, String::new(), &mut paths);
        assert!(paths.len() > 25, "{paths:?}");
        for path in paths {
            let mut changed = value.clone();
            let leaf = changed.pointer_mut(&path).unwrap();
            *leaf = match leaf {
                serde_json::Value::String(s) => serde_json::Value::String(format!("{s}x")),
                serde_json::Value::Bool(b) => serde_json::Value::Bool(!*b),
                serde_json::Value::Number(n) => (n.as_u64().unwrap() + 1).into(),
                _ => serde_json::Value::String("x".into()),
            };
            let outside = path.starts_with("/chain/");
            let content_same =
                outside || path == "/result/started_at" || path.starts_with("/runner/");
            let digest =
                |v: &serde_json::Value, started_at| digest_of_value(v.clone(), started_at).unwrap();
            assert_eq!(
                digest(&changed, true) == digest(&value, true),
                content_same,
                "{path} in the content digest"
            );
            assert_eq!(
                digest(&changed, false) == digest(&value, false),
                outside,
                "{path} in the derived key"
            );
        }
    }

    #[test]
    fn a_body_no_receipt_can_hold_has_no_digest() {
        let mut b = body();
        b.result.exit_code = 1 << 60;
        assert!(content_digest(&b).is_err());
    }

    fn signed(b: Body) -> ChainEntry {
        let key = crate::sign::SigningKey::from_seed(&[5; 32]);
        let r = Receipt::sign(b, &key).unwrap();
        let receipt = Receipt::parse(r.bytes()).unwrap();
        ChainEntry {
            commit: ObjectId::null(gix::hash::Kind::Sha1),
            parent: None,
            receipt,
        }
    }

    fn at(mut b: Body, index: u64) -> Body {
        b.chain.index = index;
        b
    }

    #[test]
    fn a_reappend_leaves_out_what_the_remote_holds_and_keeps_the_rest_in_order() {
        let keyed = body();
        let mut keyless = body();
        keyless.result.idempotency_key = None;
        let mut other = keyless.clone();
        other.result.started_at = "2026-02-01T01:00:00.000Z".into();
        let mut new_key = body();
        new_key.result.idempotency_key = Some("ci-9/test".into());
        let mut later = keyed.clone();
        later.result.started_at = "2026-02-01T02:00:00.000Z".into();
        let theirs = [signed(at(later, 3)), signed(at(keyless.clone(), 4))];
        let mine = vec![
            signed(at(keyed, 3)),
            signed(at(other, 4)),
            signed(at(keyless, 5)),
            signed(at(new_key, 6)),
        ];
        let ids: Vec<String> = mine.iter().map(|e| e.receipt.id().to_owned()).collect();
        let plan = plan_reappend(mine, &theirs).unwrap();
        let kept: Vec<&str> = plan.keep.iter().map(|e| e.receipt.id()).collect();
        assert_eq!(kept, [ids[1].as_str(), ids[3].as_str()]);
        let left: Vec<(&str, &str)> = plan
            .left_out
            .iter()
            .map(|(e, h)| (e.receipt.id(), h.id.as_str()))
            .collect();
        assert_eq!(
            left,
            [
                (ids[0].as_str(), theirs[0].receipt.id()),
                (ids[2].as_str(), theirs[1].receipt.id()),
            ]
        );
    }

    #[test]
    fn a_key_the_remote_holds_for_other_content_is_a_conflict() {
        let mut theirs = body();
        theirs.result.exit_code = 1;
        theirs.result.passed = false;
        let theirs = [signed(at(theirs, 3))];
        let mine = signed(at(body(), 3));
        let ours_id = mine.receipt.id().to_owned();
        let c = plan_reappend(vec![mine], &theirs).unwrap_err();
        assert_eq!(c.key, "ci-1234/test");
        assert_eq!((c.ours.id.as_str(), c.ours.index), (ours_id.as_str(), 3));
        assert_eq!(c.theirs.id, theirs[0].receipt.id());
        assert_ne!(c.ours.content, c.theirs.content);
    }

    fn holder(index: u64, content: &str) -> Holder {
        Holder {
            commit: ObjectId::null(gix::hash::Kind::Sha1),
            index,
            id: format!("sha256:{index:064}"),
            content: content.into(),
        }
    }

    #[test]
    fn a_key_held_again_is_a_repeat_of_its_oldest_holder_and_only_new_ones_count() {
        let keyed = [
            ("a".to_owned(), holder(0, "x")),
            ("b".to_owned(), holder(1, "y")),
            ("a".to_owned(), holder(2, "x")),
            ("a".to_owned(), holder(3, "z")),
            ("c".to_owned(), holder(4, "x")),
            ("b".to_owned(), holder(5, "y")),
        ];
        let all = repeated_keys(&keyed, 0);
        let seen: Vec<(&str, u64, u64, bool)> = all
            .iter()
            .map(|r| {
                (
                    r.key.as_str(),
                    r.first.index,
                    r.again.index,
                    r.same_content(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [("a", 0, 2, true), ("a", 0, 3, false), ("b", 1, 5, true)]
        );
        // below `from`: compared with, not reported
        let new: Vec<u64> = repeated_keys(&keyed, 3)
            .iter()
            .map(|r| r.again.index)
            .collect();
        assert_eq!(new, [3, 5]);
        assert_eq!(repeated_keys(&keyed[..2], 0), []);
    }
}
