//! Chain verification: a report of every finding, as data (this module never prints).
//!
//! Every chain under `refs/receipts/*` is walked from its tip to its root. Each
//! entry must be a one-parent commit whose tree holds `receipt.json` as a regular
//! file of bounded size, with canonical bytes and the closed v1 schema; its index
//! and `prev` must continue the chain; its writer field and writer id must match
//! the ref and the signing key; the key must be trusted, not revoked, and inside
//! its validity window; and the strict Ed25519 signature must verify. Every note
//! line must name a receipt of that writer's chain whose signed subject is the
//! annotated commit or inputs tree. A checkpoint file catches rollbacks, rewrites
//! and deletions between runs, and spares what it covers: under the same trust, a
//! chain that still descends from its checkpointed tip is walked only down to that
//! tip, the oldest new entry linked to it.
//!
//! `fetch`, `push` and the server hook check what they take in with the entry rules
//! of [`crate::store::admit`], one read and one signature per new entry; this walk
//! reports every finding of a whole chain.
//!
//! One thread reads the chains one after another, straight from the pack files
//! where it can ([`crate::store::EntryReader`], which keeps the delta bases it
//! inflates); parsing and signatures run on every core, in bounded batches that
//! run across chains, so memory stays flat however many and however long the
//! chains are. The signatures of a batch are checked together
//! ([`crate::sign::verify_many`]), with the answer strict verification gives each
//! one alone. With a checkpoint, a writer's notes the checkpoint found whole are
//! read again only where they changed.

use std::collections::{BTreeMap, HashMap, HashSet};

use gix::ObjectId;

use crate::receipt::{Receipt, Unverified, is_valid_writer_id, writer_matches_key};
use crate::store::chain::chain_ref;
use crate::store::index::{Record, Role, id_prefix};
use crate::store::notes::{notes_ref, parse_note};
use crate::store::{Store, StoreError};
use crate::trust::{Refusal, TrustSet};

/// How many chain entries are read before they are verified together, at
/// most, when the walk reads one chain after another ([`Order::Chains`]).
const BATCH: usize = 2048;

/// The most when the walk reads every chain at once in pack order
/// ([`Order::Packs`]): a batch then holds entries of every writer, and each
/// key is one more point in the batch's equation, so a batch there holds
/// eight entries a chain, up to this many, to keep the keys an eighth of it
/// (a thousand writers' keys cost a batch of 2,048 half as much again).
const PACK_ORDER_BATCH: usize = 8192;

/// The first batch: smaller, so that checking starts while the reader is still
/// early on (each batch after it twice the one before, up to the order's
/// most); twice the least a signature batch takes, so that a few entries set
/// aside (stubs, untrusted) leave it one.
const FIRST_BATCH: usize = 2 * crate::sign::MIN_BATCH;

/// The size of the batch after one of `size` entries: twice it, up to `most`.
fn next_batch(size: usize, most: usize) -> usize {
    (2 * size).min(most)
}

/// The order a walk reads chain entries in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// One chain after another, each from its tip down.
    Chains,
    /// Every chain at once, the entry read next always the one that sits
    /// first in the pack files. git writes a fetched pack newest first, so
    /// each chain's walk down runs front to back through it, and a receipt
    /// blob's delta base (a receipt of any writer, a few KiB before it) is
    /// still among the bases just inflated; one chain after another met
    /// each base again long after it was dropped (3.4 inflates a receipt in
    /// a fetched 200,000-receipt year, one in this order).
    Packs,
}

impl Order {
    /// The order for a walk of `chains` chains: pack order while their keys
    /// stay a small share of a batch (at most a quarter of
    /// [`PACK_ORDER_BATCH`]); past that, a batch of every writer's entries
    /// would be mostly keys, and one chain after another checks faster.
    ///
    /// mutants: the order is equivalent in answers (each chain's entries
    /// reach the checks in walk order either way; held by
    /// `a_walk_in_pack_order_answers_as_one_chain_after_another`): only
    /// speed and memory move.
    fn for_chains(chains: usize) -> Order {
        if chains <= PACK_ORDER_BATCH / 4 {
            Order::Packs
        } else {
            Order::Chains
        }
    }

    /// The most entries a batch holds in this order, on a walk of `chains`
    /// chains: in pack order eight a chain, within [`BATCH`] and
    /// [`PACK_ORDER_BATCH`] (a batch is held three times over, a reader's, a
    /// checker's and one between: a hundred writers' batches stay as small
    /// as one chain after another makes them).
    fn batch(self, chains: usize) -> usize {
        match self {
            Order::Chains => BATCH,
            Order::Packs => chains.saturating_mul(8).clamp(BATCH, PACK_ORDER_BATCH),
        }
    }
}

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// The writer (chain) it concerns.
    pub chain: String,
    /// The receipt's index, when known.
    pub index: Option<u64>,
    /// The receipt's id, when known.
    pub id: Option<String>,
    /// The chain commit (or notes object) it concerns.
    pub commit: Option<String>,
    /// A stable short code for machines: `format`, `signature`, `untrusted`,
    /// `revoked`, `window`, `link`, `writer`, `shape`, `supersedes`, `note`,
    /// `log`, `checkpoint`, `ref` (a ref under `refs/receipts/` or
    /// `refs/notes/receipts/` that cannot be a writer's), `acceptance` (an
    /// acceptance receipt whose cited evidence does not back its claim),
    /// `idempotency` (a receipt holding an idempotency key that an older receipt
    /// of its chain holds for another result).
    pub kind: &'static str,
    /// One line saying what is wrong.
    pub reason: String,
}

/// The outcome of a verification.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    /// Chains walked.
    pub chains: usize,
    /// Receipts checked in this run.
    pub receipts: u64,
    /// Retention stubs walked: receipts dropped by `git receipt retain`, whose
    /// ids the chains keep.
    pub stubs: u64,
    /// Receipts not checked again because the checkpoint vouches for them (at or
    /// below a checkpointed tip the chain still descends from).
    pub covered: u64,
    /// Note lines checked (with a checkpoint, only those of notes that changed).
    pub note_lines: u64,
    /// Everything wrong, in chain order.
    pub findings: Vec<Finding>,
    /// What is worth mending but decides nothing (notes that lag their chain).
    pub warnings: Vec<Finding>,
    /// Receipts of chains that no trusted key could have written, set aside by
    /// [`Report::set_aside_untrusted`]: they count for nothing, and are no finding.
    pub untrusted: Vec<Finding>,
    /// The tip of every chain as verified.
    pub tips: BTreeMap<String, String>,
    /// The notes tip of every writer whose notes this run found whole (checked,
    /// or vouched for by the checkpoint): what a clean run's checkpoint records.
    pub notes_tips: BTreeMap<String, String>,
    /// Writers whose notes were not read again: the checkpoint vouches for them
    /// (the same notes tip on the same chain tip).
    pub notes_covered: usize,
    /// Writers whose notes were not read again by a run from a checkpoint:
    /// git-receipt built them here, whole, from the chain at the tip verified
    /// (a fetch, say), and they have not moved since ([`crate::store::whole_notes`]).
    pub notes_built_here: usize,
    /// Each chain whose walk, following first parents from its tip, met the
    /// checkpointed tip it was given (which it so descends from).
    #[serde(skip)]
    descended: HashMap<String, ObjectId>,
    /// Writers whose notes were checked against every record of their chain in
    /// the index (read whole for them), not only those after a checkpoint.
    #[serde(skip)]
    notes_read_whole: usize,
}

/// A checkpoint: each chain's verified tip at the last clean run.
///
/// Version 2 also records the trust set that run verified against (see
/// [`trust_digest`]): only under the same trust does it vouch for the receipts
/// below its tips. Version 1 files (tips only) are still read: their tips are held
/// to the same descent checks, and every receipt is checked again. Version 3
/// also records each writer's notes tip that run found whole: notes at that same
/// tip, beside a chain at its checkpointed tip, are not read again.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// 1 or 2; written as 2.
    pub version: u32,
    /// Version 2: the [`trust_digest`] of the trust set the tips were verified against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<String>,
    /// Writer id to chain tip.
    pub chains: BTreeMap<String, String>,
    /// Version 3: writer id to the notes tip found whole with that chain tip.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub notes: BTreeMap<String, String>,
    /// Made from a signed checkpoint (by `as_verify_checkpoint`, above this module),
    /// which says nothing of this clone's notes (each clone derives its own):
    /// only the notes on what the receipts after it are about are read. Never
    /// in a file.
    #[serde(skip)]
    pub signed_elsewhere: bool,
}

/// The checkpoint version this tool writes.
pub const CHECKPOINT_VERSION: u32 = 3;

/// A digest of everything in a trust set that decides whether a receipt counts:
/// each key's fingerprint, validity window and revocation, in a fixed order (not
/// where the key came from). A checkpoint vouches for what it covers only under the
/// same digest: a revoked key or a narrowed window must reach old receipts too.
pub fn trust_digest(trust: &TrustSet) -> String {
    use sha2::{Digest, Sha256};
    let mut keys: Vec<String> = trust
        .keys()
        .map(|t| {
            format!(
                "{} {:?} {:?} {}\n",
                t.key.fingerprint(),
                t.valid_after,
                t.valid_before,
                t.revoked
            )
        })
        .collect();
    keys.sort();
    keys.dedup();
    format!("sha256:{}", hex::encode(Sha256::digest(keys.concat())))
}

/// One chain entry as read from git, before it is parsed.
type Raw = crate::store::RawEntry;

/// What one entry turned out to be.
struct Checked {
    /// The chain's position among the chains walked.
    chain: usize,
    commit: ObjectId,
    parents: Vec<ObjectId>,
    receipt: Result<Entry, (&'static str, String)>,
    signature: Result<(), (&'static str, String)>,
    /// A retention stub in place of a receipt.
    stub: Option<crate::store::stub::Stub>,
}

/// What the walk keeps of one parsed receipt: its links and what is checked
/// across entries. The receipt itself is dropped on the thread that parsed it.
struct Entry {
    index: u64,
    id: String,
    prev: Option<String>,
    supersedes: Option<String>,
    /// The writer the receipt names, when it is not the chain's.
    other_writer: Option<String>,
    /// The signing key, when the chain's writer id names another key.
    other_key: Option<String>,
    /// The body of a trusted acceptance, checked against its evidence later.
    acceptance: Option<crate::receipt::Body>,
    /// A trusted receipt's idempotency key and content digest, compared with
    /// the other keys of its chain later.
    keyed: Option<(String, String)>,
    /// Its subject commit and inputs tree, when both are object ids: what its
    /// chain's notes show it on.
    about: Option<[ObjectId; 2]>,
}

/// One chain entry parsed, before its signature is checked.
struct Parsed {
    chain: usize,
    commit: ObjectId,
    parents: Vec<ObjectId>,
    receipt: Result<Receipt<Unverified>, (&'static str, String)>,
    stub: Option<crate::store::stub::Stub>,
}

fn parse_raw((chain, raw): (usize, Raw)) -> Parsed {
    Parsed {
        chain,
        commit: raw.commit,
        parents: raw.parents,
        stub: raw.stub,
        receipt: match raw.bytes {
            Err(why) => Err(("shape", why)),
            Ok(bytes) => Receipt::parse_owned(bytes).map_err(|e| ("format", e.to_string())),
        },
    }
}

/// Check the signatures and trust of parsed entries (together, see
/// [`TrustSet::check_many`]) and keep what the walk needs of each.
fn check_parsed(parsed: Vec<Parsed>, writers: &[String], trust: &TrustSet) -> Vec<Checked> {
    let receipts: Vec<&Receipt<Unverified>> = parsed
        .iter()
        .filter_map(|p| p.receipt.as_ref().ok())
        .collect();
    // one verdict per parsed receipt, in order
    let mut verdicts = trust.check_many(&receipts).into_iter();
    parsed
        .into_iter()
        .map(|p| {
            let signature = match &p.receipt {
                Err(_) => Ok(()),
                Ok(r) => match verdicts.next() {
                    Some(Ok(_)) => Ok(()),
                    Some(Err(refusal)) => Err(match refusal {
                        Refusal::Untrusted => (
                            "untrusted",
                            format!(
                                "signed by {}, which is not a trusted key",
                                r.signature().key
                            ),
                        ),
                        Refusal::Revoked(why) => ("revoked", why),
                        Refusal::Window(why) => ("window", why),
                        Refusal::BadSignature(why) => ("signature", why),
                    }),
                    // fail closed should the answers ever run short
                    None => Err(("signature", "not checked".to_owned())),
                },
            };
            let writer = writers[p.chain].as_str();
            let receipt = p.receipt.map(|r| {
                let key = &r.signature().key;
                let other_key = (!writer_matches_key(writer, key)).then(|| key.clone());
                let keyed = match &r.body().result.idempotency_key {
                    Some(k) if signature.is_ok() => {
                        Some((k.clone(), crate::idempotency::stored_content(&r)))
                    }
                    _ => None,
                };
                let id = r.id().to_owned();
                let b = r.into_body();
                let about = ObjectId::from_hex(b.subject.commit.as_bytes())
                    .ok()
                    .zip(ObjectId::from_hex(b.subject.inputs.as_bytes()).ok())
                    .map(|(subject, inputs)| [subject, inputs]);
                Entry {
                    index: b.chain.index,
                    id,
                    other_writer: (b.chain.writer != writer).then(|| b.chain.writer.clone()),
                    other_key,
                    prev: b.chain.prev.clone(),
                    supersedes: b.supersedes.clone(),
                    acceptance: (signature.is_ok() && b.acceptance.is_some()).then_some(b),
                    keyed,
                    about,
                }
            });
            Checked {
                chain: p.chain,
                commit: p.commit,
                parents: p.parents,
                receipt,
                signature,
                stub: p.stub,
            }
        })
        .collect()
}

/// Parse and verify a batch on every core: parsing in small slices that workers
/// take in turn (a core that is also reading the next batch holds nobody up),
/// then signatures in one part per core, each part checked together.
fn check_batch(batch: Vec<(usize, Raw)>, writers: &[String], trust: &TrustSet) -> Vec<Checked> {
    const SLICE: usize = 32;
    let threads = crate::store::worker_threads();
    // mutants: the conditions choosing this path, and `total / 1024` below, are
    // equivalent when mutated: both paths give each entry the answer
    // `check_parsed` gives it, in chain order (only the speed differs);
    // `a_long_chain_is_checked_in_parallel_with_the_answers_one_thread_gives` pins that.
    if threads == 1 || batch.len() < 2 * SLICE {
        return check_parsed(batch.into_iter().map(parse_raw).collect(), writers, trust);
    }
    let total = batch.len();
    let queue = std::sync::Mutex::new(batch.into_iter().enumerate());
    let mut done: Vec<(usize, Parsed)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        // a poisoned queue means a worker panicked; its join says so
                        let slice: Vec<(usize, (usize, Raw))> = queue
                            .lock()
                            .map(|mut q| q.by_ref().take(SLICE).collect())
                            .unwrap_or_default();
                        if slice.is_empty() {
                            break;
                        }
                        out.extend(slice.into_iter().map(|(n, r)| (n, parse_raw(r))));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("verification threads do not panic"))
            .collect()
    });
    done.sort_unstable_by_key(|(n, _)| *n);
    let mut parsed = done.into_iter().map(|(_, p)| p);
    // Parts big enough for a batch to pay (the torsion test costs the same for 300
    // signatures as for 3,000), on as many cores as that leaves.
    // mutants: any count of parts (`%` for `/`) is equivalent in answers: the
    // parts cover every entry, each is checked alone, and their answers are
    // put back in order; only how many cores check them moves.
    let cores = (total / 1024).clamp(1, threads);
    let part = total.div_ceil(cores);
    let parts: Vec<Vec<Parsed>> = (0..cores)
        .map(|_| parsed.by_ref().take(part).collect())
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .into_iter()
            .map(|p| s.spawn(move || check_parsed(p, writers, trust)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("verification threads do not panic"))
            .collect()
    })
}

/// What checking one stretch of a chain found.
#[derive(Debug, Default)]
pub struct ChainWalk {
    /// Entries checked.
    pub receipts: u64,
    /// Retention stubs walked (their links checked; they count for nothing).
    pub stubs: u64,
    /// Receipts at or below the base, not walked (the base's index + 1).
    pub below_base: u64,
    /// Everything wrong, newest first.
    pub findings: Vec<Finding>,
    /// (index, id, chain commit, superseded id), checked once every id is known.
    supersedes: Vec<(u64, String, ObjectId, String)>,
    /// Where each receipt checked sits: (the first 8 bytes of its id, chain commit).
    located: Vec<([u8; 8], ObjectId)>,
    /// With a base: each receipt checked above it, by chain commit, with its
    /// subject commit and inputs tree (what the notes check reads them as).
    about: HashMap<ObjectId, [ObjectId; 2]>,
    /// Trusted acceptances, checked against their evidence once every chain is read.
    acceptances: Vec<(u64, String, ObjectId, crate::receipt::Body)>,
    /// Trusted receipts that hold an idempotency key, newest first, with the key.
    keyed: Vec<(String, crate::idempotency::Holder)>,
    /// How the walk met the base it was given.
    base: BaseMet,
}

/// How a chain's walk met the base (the checkpointed tip) it was given.
#[derive(Debug, Default)]
enum BaseMet {
    /// None was given: the chain was walked whole.
    #[default]
    NoBase,
    /// Following first parents from the tip reached it.
    Reached,
    /// The walk went past where it should have met it, with what to say then.
    /// That counts only when the base is an ancestor of the tip by another path
    /// (a merge); otherwise the chain no longer descends from it, was walked
    /// whole, and [`verify_checkpoint`] says so.
    Missed(Box<Finding>),
    /// The tip does not descend from it (it is not even here, or the chain was
    /// rolled back past it): the chain was walked whole.
    NotAncestor,
    /// The tip descends from it, but it does not read as a chain entry (a
    /// finding says so): nothing was walked.
    Unreadable,
}

/// One chain's stretch as the walk goes down it: what it found so far, the entry
/// its oldest walked one must follow, and the entry just above (the child, newer)
/// whose links the next one must satisfy.
struct Stretch<'a> {
    writer: &'a str,
    tip: ObjectId,
    walk: ChainWalk,
    /// The base: its chain commit, index and receipt id.
    base: Option<(ObjectId, u64, String)>,
    child: Option<(u64, Option<String>, ObjectId)>,
}

impl Stretch<'_> {
    fn finding(
        &mut self,
        index: Option<u64>,
        id: Option<&str>,
        commit: ObjectId,
        kind: &'static str,
        reason: String,
    ) {
        self.walk.findings.push(Finding {
            chain: self.writer.to_owned(),
            index,
            id: id.map(str::to_owned),
            commit: Some(commit.to_string()),
            kind,
            reason,
        })
    }

    /// A chain commit with more than one parent: the walk followed the first.
    fn parents_finding(&mut self, index: Option<u64>, commit: ObjectId, parents: usize) {
        if parents > 1 {
            self.finding(
                index,
                None,
                commit,
                "shape",
                format!(
                    "chain commit has {parents} parents; a chain is linear (followed the first)"
                ),
            );
        }
    }

    /// A chain's first commit that does not sit at index 0.
    fn root_finding(&mut self, index: u64, id: Option<&str>, commit: ObjectId) {
        self.finding(
            Some(index),
            id,
            commit,
            "link",
            format!(
                "is the root of the chain but has index {index}; earlier receipts were removed"
            ),
        );
    }

    /// Take the next entry down the chain, checked.
    fn take(&mut self, e: Checked) {
        if let Some(stub) = e.stub {
            self.take_stub(e.commit, &e.parents, stub);
            return;
        }
        self.walk.receipts += 1;
        self.parents_finding(None, e.commit, e.parents.len());
        let r = match e.receipt {
            Err((kind, why)) => {
                self.finding(
                    None,
                    None,
                    e.commit,
                    kind,
                    format!("invalid receipt: {why}"),
                );
                self.child = None; // links around an unreadable entry cannot be checked
                return;
            }
            Ok(r) => r,
        };
        let (idx, id) = (r.index, r.id);
        if let Err((kind, why)) = e.signature {
            self.finding(Some(idx), Some(&id), e.commit, kind, why);
        }
        let walk = &mut self.walk;
        if let Some(body) = r.acceptance {
            walk.acceptances.push((idx, id.clone(), e.commit, body));
        }
        if let Some((key, content)) = r.keyed {
            walk.keyed.push((
                key,
                crate::idempotency::Holder {
                    commit: e.commit,
                    index: idx,
                    id: id.clone(),
                    content,
                },
            ));
        }
        walk.located.push((id_prefix(&id), e.commit));
        if self.base.is_some()
            && let Some(about) = r.about
        {
            walk.about.insert(e.commit, about);
        }
        let writer = self.writer;
        if let Some(named) = r.other_writer {
            self.finding(
                Some(idx),
                Some(&id),
                e.commit,
                "writer",
                format!("names writer {named}, but sits in chain {writer}"),
            );
        }
        if let Some(key) = r.other_key {
            self.finding(
                Some(idx),
                Some(&id),
                e.commit,
                "writer",
                format!("signed by {key}, but writer id {writer} names another key"),
            );
        }
        if let Some(child) = &self.child {
            check_link(&mut self.walk.findings, writer, child, idx, &id);
        }
        // mutants: `&&` inside the parentheses is equivalent: a receipt that
        // parses has `prev` set exactly when its index is not 0 (the schema
        // check in receipt.rs), so either half says the same.
        if e.parents.is_empty() && (idx != 0 || r.prev.is_some()) {
            self.root_finding(idx, Some(&id), e.commit);
        }
        if let Some(s) = r.supersedes {
            self.walk.supersedes.push((idx, id.clone(), e.commit, s));
        }
        self.child = Some((idx, r.prev, e.commit));
    }

    /// Take a retention stub: it names a receipt that was dropped, by id, index
    /// and prev, none of it signed. Its links are checked as an entry's are (the
    /// entry above must name its id), and the tip of a chain is never one.
    fn take_stub(
        &mut self,
        commit: ObjectId,
        parents: &[ObjectId],
        stub: crate::store::stub::Stub,
    ) {
        self.walk.stubs += 1;
        self.parents_finding(Some(stub.index), commit, parents.len());
        match &self.child {
            Some(child) => check_link(&mut self.walk.findings, self.writer, child, stub.index, &stub.id),
            None if commit == self.tip => self.finding(
                Some(stub.index),
                None,
                commit,
                "stub",
                format!(
                    "the chain's tip is a retention stub of {}: a chain's newest entry is a receipt, whose signature names the stubs below it",
                    stub.id
                ),
            ),
            None => {}
        }
        if parents.is_empty() && stub.index != 0 {
            self.root_finding(stub.index, None, commit);
        }
        self.child = Some((stub.index, stub.prev, commit));
    }

    /// The walk of this stretch, once following first parents from the tip reached
    /// the base (`reached_base`) or the root.
    fn finish(mut self, reached_base: bool) -> ChainWalk {
        match self.base.take() {
            Some((_, idx, id)) if reached_base => {
                self.walk.base = BaseMet::Reached;
                if let Some(child) = &self.child {
                    check_link(&mut self.walk.findings, self.writer, child, idx, &id);
                }
            }
            Some((commit, _, _)) => {
                self.walk.base = BaseMet::Missed(Box::new(Finding {
                    chain: self.writer.to_owned(),
                    index: None,
                    id: None,
                    commit: Some(self.tip.to_string()),
                    kind: "link",
                    reason: format!(
                        "following first parents from the tip never reaches {commit}, which it must descend from"
                    ),
                }))
            }
            None => {}
        }
        self.walk
    }
}

/// Entries read for checking together, from one or more chains in turn.
struct Batch {
    /// Each entry with its chain's position, newest first within a chain.
    entries: Vec<(usize, Raw)>,
    /// The chains whose walk ended in this batch: (how many of `entries` came
    /// before the end, the chain, whether it reached its base).
    ends: Vec<(usize, usize, bool)>,
}

/// Check each of `writers`' chains from its tip down to its base (not included;
/// the whole chain when `None`), as `stretches` gives them, one per writer: every
/// entry's shape, bytes, schema, signature and trust, writer, and links, each to the
/// entry below it, the oldest one checked to the base (its index plus one, `prev` =
/// the base's receipt id) or, at the root, to nothing. The walk behind `verify`
/// (whole chains, or what is new since a checkpoint); `fetch` checks what it takes
/// with the entry rules of `store::admit`. One walk a writer, in order.
///
/// One thread reads the chains one after another, a batch ahead, while every core
/// checks the batch before it: a batch runs across chains, so its signatures are
/// checked together however short each chain is.
fn walk_ranges(
    store: &Store,
    shared: &crate::store::SharedReader,
    writers: &[String],
    stretches: &[(ObjectId, Option<ObjectId>)],
    trust: &TrustSet,
    read_order: Order,
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<ChainWalk>, StoreError> {
    let mut states: Vec<Option<Stretch<'_>>> = Vec::with_capacity(writers.len());
    let mut done: Vec<Option<ChainWalk>> = Vec::with_capacity(writers.len());
    // (chain, tip, the base's commit): what the reader walks
    let mut plan: Vec<(usize, ObjectId, Option<ObjectId>)> = Vec::new();
    // Each chain's checkpointed entry, read on every core: a run from a
    // checkpoint of 1,000 writers read their 1,000 entries one after another
    // before any walk began
    let bases: Vec<ObjectId> = stretches.iter().filter_map(|s| s.1).collect();
    let mut clean = if bases.len() >= BASES_APART {
        crate::store::in_order_on(
            bases,
            shared.apart(crate::store::worker_threads()),
            clean_entry,
        )
    } else {
        let reader = shared.local();
        bases.into_iter().map(|b| clean_entry(&reader, b)).collect()
    }
    .into_iter();
    for (c, (writer, &(tip, base))) in writers.iter().zip(stretches).enumerate() {
        let mut stretch = Stretch {
            writer,
            tip,
            walk: ChainWalk::default(),
            base: None,
            child: None,
        };
        // The entry the oldest walked one must follow: read that one entry.
        if let Some(commit) = base {
            // An entry that reads cleanly is taken as it is (whether the tip
            // descends from it, the walk down finds out). Anything else is
            // asked in full: a base the tip does not descend from (not even
            // here, or rolled back past) leaves the chain to be walked whole,
            // and a base it does descend from must read as a chain entry.
            let read = match clean.next().flatten() {
                Some(e) => Ok(e),
                None if !descends(store, commit, tip) => {
                    stretch.walk.base = BaseMet::NotAncestor;
                    plan.push((c, tip, None));
                    states.push(Some(stretch));
                    done.push(None);
                    continue;
                }
                None => store
                    .chain_entry(writer, commit)
                    .map(|e| (e.receipt.body().chain.index, e.receipt.id().to_owned())),
            };
            match read {
                Ok((index, id)) => {
                    stretch.walk.below_base = index + 1;
                    stretch.base = Some((commit, index, id));
                }
                Err(e) => {
                    stretch.finding(
                        None,
                        None,
                        commit,
                        "link",
                        format!("the entry that newer receipts must follow is unreadable: {e}"),
                    );
                    stretch.walk.base = BaseMet::Unreadable;
                    states.push(None);
                    done.push(Some(stretch.walk));
                    continue;
                }
            }
        }
        plan.push((c, tip, base));
        states.push(Some(stretch));
        done.push(None);
    }
    // Following first parents is sequential; checking is not.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(1);
    std::thread::scope(|scope| {
        let plan = &plan;
        scope.spawn(move || {
            let reader = shared.local();
            let mut size = FIRST_BATCH;
            let mut batch = Batch {
                entries: Vec::with_capacity(size),
                ends: Vec::new(),
            };
            // Each chain's next entry waits its turn: by its place in the
            // packs, or by its chain's (the chain read so far first); each
            // chain's entries reach the checks in walk order either way.
            let most = read_order.batch(plan.len());
            let mut walks: Vec<(usize, ObjectId, Option<ObjectId>, HashSet<ObjectId>)> = plan
                .iter()
                .map(|&(c, tip, stop_at)| (c, tip, stop_at, HashSet::new()))
                .collect();
            let turn = |k: usize, next: &gix::oid| match read_order {
                Order::Packs => (reader.place(next), k),
                Order::Chains => ((k, 0), k),
            };
            let mut order: std::collections::BinaryHeap<_> = walks
                .iter()
                .enumerate()
                .map(|(k, w)| std::cmp::Reverse(turn(k, &w.1)))
                .collect();
            while let Some(std::cmp::Reverse((_, k))) = order.pop() {
                let (c, commit, stop_at, seen) = &mut walks[k];
                let c = *c;
                if *stop_at == Some(*commit) {
                    batch.ends.push((batch.entries.len(), c, true));
                    continue;
                }
                if !seen.insert(*commit) {
                    batch.ends.push((batch.entries.len(), c, false));
                    continue;
                }
                let raw = reader.read(*commit);
                let next = raw.parents.first().copied();
                batch.entries.push((c, raw));
                match next {
                    Some(n) => {
                        *commit = n;
                        order.push(std::cmp::Reverse(turn(k, &n)));
                    }
                    None => batch.ends.push((batch.entries.len(), c, false)),
                }
                if batch.entries.len() >= size {
                    size = next_batch(size, most);
                    let full = std::mem::replace(
                        &mut batch,
                        Batch {
                            entries: Vec::with_capacity(size),
                            ends: Vec::new(),
                        },
                    );
                    if tx.send(full).is_err() {
                        return;
                    }
                }
            }
            let _ = tx.send(batch);
        });
        let mut receipts = 0;
        for batch in rx {
            let mut ends = batch.ends.into_iter().peekable();
            let mut end_before = |n: usize, states: &mut Vec<Option<Stretch<'_>>>| {
                while let Some((_, c, reached)) = ends.next_if(|e| e.0 <= n) {
                    if let Some(stretch) = states[c].take() {
                        done[c] = Some(stretch.finish(reached));
                    }
                }
            };
            let checked = check_batch(batch.entries, writers, trust);
            let total = checked.len();
            for (n, e) in checked.into_iter().enumerate() {
                end_before(n, &mut states);
                receipts += 1;
                if let Some(stretch) = states[e.chain].as_mut() {
                    stretch.take(e);
                }
            }
            end_before(total, &mut states);
            progress(receipts);
        }
    });
    // every chain ends in some batch unless the reader panicked, which the scope
    // has passed on by now
    Ok(done
        .into_iter()
        .map(|w| w.expect("every chain's walk ends"))
        .collect())
}

/// The links of `child` (index, prev, chain commit) to the receipt `idx`/`id` below it.
fn check_link(
    findings: &mut Vec<Finding>,
    writer: &str,
    child: &(u64, Option<String>, ObjectId),
    idx: u64,
    id: &str,
) {
    let (cidx, cprev, ccommit) = child;
    let mut finding = |reason: String| {
        findings.push(Finding {
            chain: writer.to_owned(),
            index: Some(*cidx),
            id: None,
            commit: Some(ccommit.to_string()),
            kind: "link",
            reason,
        })
    };
    if *cidx != idx + 1 {
        finding(format!(
            "index {cidx} follows index {idx}: a receipt is missing, duplicated or reordered"
        ));
    }
    if cprev.as_deref() != Some(id) {
        finding(format!(
            "prev is {}, but the receipt before it is {id}",
            cprev.as_deref().unwrap_or("null")
        ));
    }
}

/// The tip a checkpoint recorded for `writer`: the walk of its chain stops there
/// when following first parents from `tip` meets it. Whether the chain still
/// descends from it is what that walk finds out (a chain that does not is walked
/// whole, and `verify_checkpoint` reports it): no ancestry is asked here, so a
/// run from a checkpoint pays for the entries after it, not once more a chain.
fn checkpointed_base(checkpoint: Option<&Checkpoint>, writer: &str) -> Option<ObjectId> {
    let recorded = checkpoint?.chains.get(writer)?;
    ObjectId::from_hex(recorded.as_bytes()).ok()
}

/// Whether chain commit `recorded` is here and `tip` descends from it, by any
/// path (git's answer, a merge base).
fn descends(store: &Store, recorded: ObjectId, tip: ObjectId) -> bool {
    recorded == tip
        || (store.has_commit(recorded) && store.is_ancestor(recorded, tip).unwrap_or(false))
}

/// From how many checkpointed entries a run reads them on every core (below,
/// a thread's start costs more than it saves).
///
/// mutants: `<` for `>=` at its use is equivalent in answers (each way reads
/// the same entries with the same reader code; only the threads differ), as
/// `section_7_checkpointed_entries_read_on_every_core_each_answer_their_own_chain`
/// (70 chains) and every test of fewer chains show either way.
const BASES_APART: usize = 64;

/// The index and receipt id of the chain entry at `commit`, when it reads
/// cleanly through `reader` (a one-parent commit whose `receipt.json` parses);
/// `None` for anything else, which [`Store::chain_entry`] then reads and words.
///
/// mutants: `None` for the body, and `>=` for `>` (only roots read fast), are
/// equivalent in answers: the full read then answers alone, only slower. A
/// stub's bytes are an error here, so the stub test only saves a parse.
/// Accepting two parents is held by
/// `section_7_a_checkpointed_tip_with_two_parents_is_no_base`.
fn clean_entry(reader: &crate::store::EntryReader, commit: ObjectId) -> Option<(u64, String)> {
    let raw = reader.read(commit);
    if raw.parents.len() > 1 || raw.stub.is_some() {
        return None;
    }
    let r = Receipt::parse_owned(raw.bytes.ok()?).ok()?;
    Some((r.body().chain.index, r.id().to_owned()))
}

/// Where every receipt a verify has seen sits, in 32 bytes a receipt (the first
/// 8 bytes of its id, its writer, its chain commit), so a million receipts take
/// 32 MB rather than a map of their ids. A lookup reads each entry whose prefix
/// matches and compares the whole id, so an id made to share a prefix with
/// another is found only if it is there.
#[derive(Default)]
struct Located {
    /// (id prefix, writer's position, chain commit), sorted by [`Located::sort`].
    entries: Vec<([u8; 8], u32, ObjectId)>,
}

impl Located {
    /// Add the entries of writer `w`.
    fn extend(&mut self, w: usize, entries: Vec<([u8; 8], ObjectId)>) {
        let w = u32::try_from(w).expect("fewer than 2^32 chains");
        self.entries.extend(
            entries
                .into_iter()
                .map(|(prefix, commit)| (prefix, w, commit)),
        );
    }

    fn sort(&mut self) {
        self.entries.sort_unstable();
    }

    /// Each of `ids` with where it sits (its writer's position and chain commit),
    /// or `None` when no receipt seen has that id.
    fn find_all(
        &self,
        reader: &crate::store::EntryReader,
        ids: &[String],
    ) -> HashMap<String, Option<(usize, ObjectId)>> {
        let mut out = HashMap::with_capacity(ids.len());
        for id in ids {
            let prefix = id_prefix(id);
            let from = self.entries.partition_point(|e| e.0 < prefix);
            let mut at = None;
            for &(p, w, commit) in &self.entries[from..] {
                if p != prefix {
                    break;
                }
                // read as the walk read it (an entry with a finding of its own,
                // such as a second parent, is still where its id sits)
                let whole = reader
                    .read(commit)
                    .bytes
                    .ok()
                    .and_then(|b| Receipt::parse_owned(b).ok())
                    .is_some_and(|r| r.id() == id);
                if whole {
                    at = Some((w as usize, commit));
                    break;
                }
            }
            out.insert(id.clone(), at);
        }
        out
    }
}

/// Verify every chain and note. `progress` is called with the running count of
/// receipts checked. With a checkpoint written under the same trust (see
/// [`Checkpoint::vouches_under`]), a chain that still descends from its
/// checkpointed tip is checked only above it (the checkpoint vouches for the rest,
/// counted in [`Report::covered`]); any other chain is checked whole.
pub fn verify(
    store: &Store,
    trust: &TrustSet,
    checkpoint: Option<&Checkpoint>,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, StoreError> {
    let mut report = Report::default();
    let shared = store.shared_reader();
    // (writer, index, id, commit, supersedes) to check once every id is known
    let mut supersedes: Vec<(String, u64, String, ObjectId, String)> = Vec::new();
    // chains checked only above their checkpointed tip: (the writer's position
    // in `writers`, that tip)
    let mut covered: Vec<(usize, ObjectId)> = Vec::new();

    // where every receipt seen sits: for supersedes links and the evidence
    // acceptances cite
    let mut located = Located::default();
    let mut writers: Vec<String> = Vec::new();
    let mut acceptances: Vec<(String, u64, String, ObjectId, crate::receipt::Body)> = Vec::new();
    let vouching = checkpoint.filter(|cp| cp.vouches_under(trust));
    // Refs no reader uses (garbage, a blob, a tree, a tag, a name that is no
    // writer id): every command skips them, so here they are findings.
    // one listing of each prefix gives the writers, their notes and the refs no
    // reader uses
    let mut unusable = Vec::new();
    let chains = store.tips_and_unusable(crate::store::CHAIN_PREFIX, &mut unusable)?;
    let notes_tips = store.tips_and_unusable(crate::store::NOTES_PREFIX, &mut unusable)?;
    for bad in unusable {
        let (prefix, kind, reason) = match bad.name.strip_prefix(crate::store::NOTES_PREFIX) {
            Some(_) => (
                crate::store::NOTES_PREFIX,
                "note",
                format!(
                    "{} is not a readable notes commit: it {}; `git receipt reindex` rebuilds it from the chain",
                    bad.name, bad.reason
                ),
            ),
            None => (
                crate::store::CHAIN_PREFIX,
                "ref",
                format!(
                    "{} {}, so no command reads it; `git update-ref -d {}` removes it",
                    bad.name, bad.reason, bad.name
                ),
            ),
        };
        let writer = &bad.name[prefix.len().min(bad.name.len())..];
        report.findings.push(Finding {
            chain: if is_valid_writer_id(writer) {
                writer.to_owned()
            } else {
                bad.name.clone()
            },
            index: None,
            id: None,
            commit: None,
            kind,
            reason,
        });
    }
    let stretches: Vec<(ObjectId, Option<ObjectId>)> = chains
        .iter()
        .map(|(writer, tip)| (*tip, checkpointed_base(vouching, writer)))
        .collect();
    let names: Vec<String> = chains.iter().map(|(w, _)| w.clone()).collect();
    let walks = walk_ranges(
        store,
        &shared,
        &names,
        &stretches,
        trust,
        Order::for_chains(names.len()),
        progress,
    )?;
    // chains walked only above their checkpointed tip: how many receipts lie at
    // or below it
    let mut grown: HashMap<String, Grown> = HashMap::new();
    drop(names);
    for (((writer, tip), mut walk), (_, base)) in chains.into_iter().zip(walks).zip(stretches) {
        // The base the chain was checked above, if any. A walk that went past
        // its base: the chain descends from it only by another path (a merge,
        // then the walk's finding stands) or not at all (rolled back or
        // rewritten: it was walked whole, as a chain with no base is, and
        // `verify_checkpoint` says so).
        let base = match (base, std::mem::take(&mut walk.base)) {
            (Some(b), BaseMet::Reached | BaseMet::Unreadable) => Some(b),
            (Some(b), BaseMet::Missed(missed)) if descends(store, b, tip) => {
                walk.findings.push(*missed);
                Some(b)
            }
            (Some(_), BaseMet::Missed(_)) => {
                walk.below_base = 0;
                None
            }
            (_, BaseMet::NoBase | BaseMet::NotAncestor) | (None, _) => None,
        };
        // the chain descends from its checkpointed tip: `verify_checkpoint`
        // need not ask again
        if let Some(b) = base {
            report.descended.insert(writer.clone(), b);
        }
        report.chains += 1;
        report.tips.insert(writer.clone(), tip.to_string());
        report.receipts += walk.receipts;
        report.stubs += walk.stubs;
        report.covered += walk.below_base;
        // mutants: `||` and `>=` are equivalent: `below_base` is set only
        // beside a base (its index + 1) and reset with it; a base left at 0
        // was unreadable, a finding, and such a chain's notes are not read
        if base.is_some() && walk.below_base > 0 {
            let about = std::mem::take(&mut walk.about);
            grown.insert(
                writer.clone(),
                Grown {
                    below: walk.below_base,
                    about,
                },
            );
        }
        report.findings.extend(walk.findings);
        check_keys(store, &writer, base, walk.keyed, &mut report)?;
        let w = writers.len();
        writers.push(writer.clone());
        located.extend(w, walk.located);
        acceptances.extend(
            walk.acceptances
                .into_iter()
                .map(|(idx, id, commit, body)| (writer.clone(), idx, id, commit, body)),
        );
        supersedes.extend(
            walk.supersedes
                .into_iter()
                .map(|(idx, id, commit, target)| (writer.clone(), idx, id, commit, target)),
        );
        if let Some(base) = base {
            covered.push((w, base));
        }
    }
    // What the checkpoint covers was verified before and cannot have changed (chain
    // commits name their content): read its ids, without checking signatures again,
    // only when a supersedes link names a receipt not seen in this run.
    // The ids asked for: what supersedes links and acceptances' evidence name.
    let mut asked: Vec<String> = supersedes.iter().map(|s| s.4.clone()).collect();
    asked.extend(acceptances.iter().flat_map(|a| {
        a.4.acceptance
            .iter()
            .flat_map(|acc| acc.criteria.iter().flat_map(|c| &c.evidence))
            .cloned()
    }));
    asked.sort_unstable();
    asked.dedup();
    located.sort();
    let reader = shared.local();
    let mut found = located.find_all(&reader, &asked);
    if found.values().any(Option::is_none) {
        for &(w, base) in &covered {
            let mut below = Vec::new();
            store.walk_chain(&writers[w], base, |e| {
                below.push((id_prefix(e.receipt.id()), e.commit));
                Ok(true)
            })?;
            located.extend(w, below);
        }
        located.sort();
        found = located.find_all(&reader, &asked);
    }
    // An acceptance whose evidence does not back it: each claim and receipt named.
    let locate = |id: &str| {
        found
            .get(id)
            .copied()
            .flatten()
            .map(|(w, commit)| (writers[w].clone(), commit))
    };
    let mut gated = crate::decision::GatedRules::default();
    for (writer, idx, id, commit, body) in acceptances {
        // An acceptance counts only where it was made: rules from a fork or from a
        // commit nobody gated are a finding; a partial one (`gate --require`) is
        // genuine and only said, since it never satisfies `--accepted-by`.
        if let Some(a) = &body.acceptance {
            let subject = &body.subject.commit[..7.min(body.subject.commit.len())];
            match crate::decision::counts_here_with(store, a, &mut gated)? {
                Ok(()) => {}
                Err(why @ crate::decision::NotHere::Partial { .. }) => {
                    if a.status == crate::receipt::Status::Accepted {
                        store.notice(
                            crate::notice::Notice::info(
                                "acceptance-partial",
                                format!(
                                    "chain {writer} #{idx}: the acceptance of {subject} does not satisfy `gate --accepted-by`: {why}"
                                ),
                            )
                            .about(id.clone()),
                        );
                    }
                }
                Err(why) => report.findings.push(Finding {
                    chain: writer.clone(),
                    index: Some(idx),
                    id: Some(id.clone()),
                    commit: Some(commit.to_string()),
                    kind: "acceptance",
                    reason: format!("acceptance of {subject} does not count here: {why}"),
                }),
            }
        }
        for p in crate::decision::acceptance_problems(store, trust, &body, &locate) {
            report.findings.push(Finding {
                chain: writer.clone(),
                index: Some(idx),
                id: Some(id.clone()),
                commit: Some(commit.to_string()),
                kind: "acceptance",
                reason: format!(
                    "acceptance of {}: {}",
                    &body.subject.commit[..7.min(body.subject.commit.len())],
                    p.reason
                ),
            });
        }
    }
    for (writer, idx, id, commit, target) in supersedes {
        if found.get(target.as_str()).copied().flatten().is_none() {
            report.findings.push(Finding {
                chain: writer,
                index: Some(idx),
                id: Some(id),
                commit: Some(commit.to_string()),
                kind: "supersedes",
                reason: format!("claims to supersede {target}, which is in no chain here"),
            });
        }
    }
    verify_notes(store, &shared, vouching, &grown, notes_tips, &mut report)?;
    verify_log_refs(store, &mut report)?;
    if let Some(cp) = checkpoint {
        verify_checkpoint(store, cp, &mut report)?;
    }
    Ok(report)
}

/// One idempotency key names one result (`docs/format.md` section 15): a
/// receipt of `writer`'s chain that holds a key an older receipt holds for
/// other content is a finding (`idempotency`, naming both); one that holds it for
/// the same content (a retry two clones each recorded before their chains met,
/// which counts as one result) is a notice (`idempotency-repeated`). `keyed` are
/// the trusted receipts walked, newest first; below a checkpointed `base` the
/// chain is read too when they hold any key (one read per receipt, no signature:
/// the checkpoint vouches for them), so a key is compared across the checkpoint.
fn check_keys(
    store: &Store,
    writer: &str,
    base: Option<ObjectId>,
    mut keyed: Vec<(String, crate::idempotency::Holder)>,
    report: &mut Report,
) -> Result<(), StoreError> {
    if keyed.is_empty() {
        return Ok(());
    }
    let mut all = match base {
        Some(b) => crate::idempotency::keyed_entries(store, writer, b)?,
        None => Vec::new(),
    };
    let from = all.len();
    all.reverse();
    keyed.reverse();
    all.extend(keyed);
    for r in crate::idempotency::repeated_keys(&all, from) {
        let (first, again) = (&r.first, &r.again);
        if r.same_content() {
            store.notice(
                crate::notice::Notice::info(
                    "idempotency-repeated",
                    format!(
                        "chain {writer} #{} holds the result of #{} ({}) again under idempotency key {}: a retry recorded by two clones before their chains met; it is one result",
                        again.index, first.index, first.id, r.key
                    ),
                )
                .about(again.id.clone()),
            );
        } else {
            report.findings.push(Finding {
                chain: writer.to_owned(),
                index: Some(again.index),
                id: Some(again.id.clone()),
                commit: Some(again.commit.to_string()),
                kind: "idempotency",
                reason: format!(
                    "holds idempotency key {} for another result than #{} {} does: one key names one result",
                    r.key, first.index, first.id
                ),
            });
        }
    }
    Ok(())
}

/// Notes are a display: a note line that names no receipt of its writer's chain,
/// another receipt than its chain commit holds, or a receipt about another object
/// is a finding (someone edited the display); a chain entry that its writer's
/// notes do not show where they should (the newest receipt per check on each
/// object) is only a warning, mended by `git receipt reindex`. Read through the
/// receipt index, which is built from the chains, so this costs the same whether
/// the chains were verified whole or from a checkpoint.
/// A log ref (`refs/receipt-logs/<writer>/<blob>`) must point at the blob its name
/// gives: readers check a log against its receipt anyway, but a ref that promises
/// one thing and holds another was tampered with.
fn verify_log_refs(store: &Store, report: &mut Report) -> Result<(), StoreError> {
    for lr in store.log_refs()? {
        let is_blob = matches!(
            store.object_header(lr.target),
            Some((crate::store::query::ObjectKind::Blob, _))
        );
        let missing = lr.named == Some(lr.target) && store.object_header(lr.target).is_none();
        if missing {
            report.findings.push(Finding {
                chain: lr.writer.clone(),
                index: None,
                id: None,
                commit: Some(lr.target.to_string()),
                kind: "log",
                reason: format!(
                    "{} names log blob {}, which is missing from the object store (a `git gc --prune=now` that ran while it was written leaves this); fetch the log again, or delete the ref (`git update-ref -d {}`)",
                    lr.name, lr.target, lr.name
                ),
            });
        } else if lr.named != Some(lr.target) || !is_blob {
            report.findings.push(Finding {
                chain: lr.writer.clone(),
                index: None,
                id: None,
                commit: Some(lr.target.to_string()),
                kind: "log",
                reason: format!(
                    "{} points at {}, not at the blob its name gives; delete it (`git update-ref -d {}`) and fetch the log again",
                    lr.name, lr.target, lr.name
                ),
            });
        }
    }
    Ok(())
}

/// Check every writer's notes against its chain (see [`notes_of`]): the writers
/// spread over every core, each thread reading through its own store of the
/// repository, and what each finds added to `report` in writer order.
/// `notes_tips` are each writer with notes and their tip, from the verify's
/// one listing of the notes refs.
fn verify_notes(
    store: &Store,
    shared: &crate::store::SharedReader,
    vouching: Option<&Checkpoint>,
    grown: &HashMap<String, Grown>,
    notes_tips: Vec<(String, ObjectId)>,
    report: &mut Report,
) -> Result<(), StoreError> {
    let file = store.receipt_index()?;
    // A chain with findings of its own counts only up to where it breaks (see
    // `store::admit`); its notes are checked once it is repaired.
    let broken: HashSet<String> = report
        .findings
        .iter()
        .filter(|f| f.kind != "note")
        .map(|f| f.chain.clone())
        .collect();
    // each writer with notes, and their tip: what a clean run's checkpoint
    // records, from the listing (not a lookup of each writer's ref)
    let with_notes: HashMap<String, ObjectId> = notes_tips.into_iter().collect();
    let chain_of: HashMap<&str, usize> = file
        .chains()
        .iter()
        .enumerate()
        .map(|(n, c)| (c.writer.as_str(), n))
        .collect();
    // where each chain's records start: one chain's are numbered together,
    // chains in the order of `chains()` (a chain whose records are not laid
    // out so is checked whole)
    let starts: Vec<usize> = file
        .chains()
        .iter()
        .scan(0usize, |at, c| {
            let start = *at;
            *at = at.saturating_add(usize::try_from(c.count).unwrap_or(usize::MAX));
            Some(start)
        })
        .collect();
    // Each thread holds one writer's records and notes at a time, never the
    // whole repository's; what a writer's check found is held until the
    // writers before it are done.
    let mut writers: Vec<&str> = chain_of
        .keys()
        .copied()
        .chain(with_notes.keys().map(String::as_str))
        .collect();
    writers.sort_unstable();
    writers.dedup();
    let built_whole = match vouching {
        Some(_) => store.whole_notes(),
        None => crate::store::whole_notes::WholeNotes::default(),
    };
    let cx = NotesCx {
        built_whole: &built_whole,
        starts: &starts,
        whole: WholeIndex {
            file: file.clone(),
            read: std::sync::Mutex::new(None),
        },
        broken: &broken,
        with_notes: &with_notes,
        chain_of: &chain_of,
        vouching,
        grown,
        tips: &report.tips,
    };
    let threads = crate::store::worker_threads().min(writers.len()).max(1);
    let workers: Vec<(Store, crate::store::EntryReader)> = shared
        .apart(threads)
        .into_iter()
        .map(|reader| (store.worker(), reader))
        .collect();
    let parts = crate::store::in_order_on(writers, workers, |(store, reader), writer| {
        notes_of(&cx, store, reader, writer)
    });
    for part in parts {
        let part = part?;
        report.findings.extend(part.findings);
        report.warnings.extend(part.warnings);
        report.note_lines += part.note_lines;
        report.notes_tips.extend(part.notes_tips);
        report.notes_covered += part.notes_covered;
        report.notes_built_here += part.notes_built_here;
        report.notes_read_whole += part.notes_read_whole;
    }
    Ok(())
}

/// What every writer's notes check reads: the receipt index, and what the
/// chains' walk found.
struct NotesCx<'a> {
    /// By chain number in the index file (`whole.file`): the number of its
    /// first record.
    starts: &'a [usize],
    /// The index file, and the index read whole once a writer's check needs it.
    whole: WholeIndex,
    /// Chains with findings of their own.
    broken: &'a HashSet<String>,
    /// Each writer with notes, and their tip.
    with_notes: &'a HashMap<String, ObjectId>,
    /// Each writer's chain number in the index file.
    chain_of: &'a HashMap<&'a str, usize>,
    vouching: Option<&'a Checkpoint>,
    grown: &'a HashMap<String, Grown>,
    /// The tip of every chain as verified.
    tips: &'a BTreeMap<String, String>,
    /// The writers whose notes git-receipt built whole here (read only for a
    /// run from a checkpoint: a whole run reads every note).
    built_whole: &'a crate::store::whole_notes::WholeNotes,
}

/// A chain walked only above its checkpointed tip.
struct Grown {
    /// How many of its receipts lie at or below that tip (the tip's index + 1).
    below: u64,
    /// Each receipt walked above it, by chain commit: its subject commit and
    /// inputs tree.
    about: HashMap<ObjectId, [ObjectId; 2]>,
}

/// The receipt index with its [`NotesTables`], read on first need by whichever
/// thread needs it (the others wait): the file's, or one built in memory from
/// the chains when the file is not laid out as it is written.
struct WholeIndex {
    /// The receipt index file (as current as the chains).
    file: std::sync::Arc<crate::store::index::Index>,
    read: std::sync::Mutex<Option<std::sync::Arc<WholeTables>>>,
}

struct WholeTables {
    index: std::sync::Arc<crate::store::index::Index>,
    tables: NotesTables,
    /// Each writer's chain number in `index`.
    chain_of: HashMap<String, usize>,
}

impl WholeIndex {
    fn get(&self, store: &Store) -> Result<std::sync::Arc<WholeTables>, StoreError> {
        // a poisoned slot means a thread panicked; its join says so
        let mut slot = self
            .read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(w) = slot.as_ref() {
            return Ok(w.clone());
        }
        let (index, tables) = match NotesTables::read(&self.file) {
            Some(tables) => (self.file.clone(), tables),
            None => {
                let index = store.rebuild_index()?;
                let tables = NotesTables::read(&index).expect("an index built in memory is whole");
                (index, tables)
            }
        };
        let chain_of = index
            .chains()
            .iter()
            .enumerate()
            .map(|(n, c)| (c.writer.clone(), n))
            .collect();
        let whole = std::sync::Arc::new(WholeTables {
            index,
            tables,
            chain_of,
        });
        *slot = Some(whole.clone());
        Ok(whole)
    }
}

/// `writer`'s notes checked against its chain, as a report of that writer's
/// alone: every note line must name a receipt of the chain whose signed subject
/// is the annotated commit or inputs tree (findings), and the newest receipt per
/// object and check should be shown (warnings: notes are a display).
fn notes_of(
    cx: &NotesCx<'_>,
    store: &Store,
    reader: &crate::store::EntryReader,
    writer: &str,
) -> Result<Report, StoreError> {
    let NotesCx {
        broken,
        with_notes,
        vouching,
        grown,
        tips,
        ..
    } = *cx;
    let mut report = Report::default();
    let report = &mut report;
    if broken.contains(writer) {
        return Ok(std::mem::take(report));
    }
    let notes_tip = with_notes.get(writer).map(ObjectId::to_string);
    // the notes the checkpoint found whole beside this very chain: what
    // they show cannot have changed (both tips name their content)
    if let (Some(cp), Some(tip)) = (vouching, &notes_tip)
        && cp.notes.get(writer) == Some(tip)
        && cp.chains.contains_key(writer)
        && cp.chains.get(writer) == tips.get(writer)
    {
        report.notes_covered += 1;
        report.notes_tips.insert(writer.to_owned(), tip.clone());
        return Ok(std::mem::take(report));
    }
    // the notes git-receipt built here, whole, from this very chain (the
    // fetch that brought it, after checking it): what they show was read
    // from it then, and both tips name their content
    if vouching.is_some()
        && let Some(tip) = &notes_tip
        && let Some(chain) = tips
            .get(writer)
            .and_then(|t| ObjectId::from_hex(t.as_bytes()).ok())
        && let Ok(notes) = ObjectId::from_hex(tip.as_bytes())
        && cx.built_whole.covers(writer, chain, notes)
    {
        report.notes_built_here += 1;
        report.notes_tips.insert(writer.to_owned(), tip.clone());
        return Ok(std::mem::take(report));
    }
    // what this writer's check adds is all about its notes: a chain with
    // findings of another kind was passed over above
    let said = |r: &Report| r.findings.len() + r.warnings.len();
    let said_before = said(report);
    // The notes the checkpoint found whole beside the chain this one grew
    // from (same trust): a note there, at the same path with the same blob,
    // on an object no newer receipt is about, names receipts the chain still
    // holds (a chain that grew keeps every entry below) and showed then all
    // it should. Only the notes on the other objects are read again.
    // From a signed checkpoint, which names no notes of this clone's (a
    // clone derives its own): the notes on the objects the receipts above
    // the checkpoint are about, and no other. The rest show
    // receipts the checkpoint covers, which this run does not read either
    // (a whole `verify` checks every note); reading them all made a verify
    // from a checkpoint cost what the whole history's notes cost.
    let before = match (vouching, notes_tip.as_deref(), grown.get(writer)) {
        (Some(cp), Some(tip), Some(g)) => {
            ObjectId::from_hex(tip.as_bytes()).ok().and_then(|new| {
                let changed = cp
                    .notes
                    .get(writer)
                    .and_then(|old| ObjectId::from_hex(old.as_bytes()).ok())
                    .and_then(|old| store.notes_changed_read_by(reader, old, new).ok());
                // a checkpoint of this clone's that did not find them
                // whole (or an older file): every note is read, as before
                (changed.is_some() || cp.signed_elsewhere).then_some((new, changed, g))
            })
        }
        _ => None,
    };
    // notes found whole: every note read, or the checkpoint's vouched for
    // what was not (a checkpoint signed after this run records them)
    let whole = before
        .as_ref()
        .is_none_or(|(_, changed, _)| changed.is_some());
    if let Some((tip, changed, g)) = &before
        && let Some(mut above) = notes_above(cx, store, reader, writer, *tip, changed.as_ref(), g)?
    {
        if whole && let Some(tip) = notes_tip {
            above.notes_tips.insert(writer.to_owned(), tip);
        }
        return Ok(above);
    }
    let before = before.map(|(tip, changed, g)| (tip, changed, g.below));
    report.notes_read_whole += 1;
    let whole_index = cx.whole.get(store)?;
    let WholeTables {
        index,
        tables,
        chain_of,
    } = &*whole_index;
    let chain = chain_of.get(writer).copied();
    let range = chain.and_then(|c| tables.ranges[c].clone()).unwrap_or(0..0);
    let records = index
        .records_in(range.clone())
        .map_err(|e| StoreError::Git {
            what: "reading the receipt index".into(),
            source: Box::new(e),
        })?;
    // this chain's entries: chain commit -> (id prefix, subject, inputs), and
    // per object and check the newest record, which its note should show
    let mut known: HashMap<ObjectId, Seen> = HashMap::new();
    let mut newest: HashMap<(ObjectId, u32), Record> = HashMap::new();
    // the objects receipts above the checkpoint are about
    let mut touched: HashSet<ObjectId> = HashSet::new();
    for (n, r) in range.zip(records) {
        let [subject, inputs] = tables.objects[n];
        if before
            .as_ref()
            .is_some_and(|(_, _, below)| r.position >= *below)
        {
            touched.extend([subject, inputs]);
        }
        known.entry(r.commit).or_insert(Seen {
            id_prefix: r.id_prefix,
            subject,
            inputs,
        });
        if r.decision {
            continue; // notes show check receipts only
        }
        for object in [subject, inputs] {
            newest
                .entry((object, r.check))
                .and_modify(|n| {
                    // mutants: `>=` is equivalent: no two records of one chain
                    // tie. The index keeps a chain's entries only while each
                    // sits at the position after the one below it
                    // (`index_chain` in store/index.rs), and reads a file only
                    // when sealed by this user's key, so a chain's records
                    // hold distinct positions (and a chain that reaches here
                    // has no finding besides: its positions are 0, 1, ...).
                    if r.position > n.position {
                        *n = r;
                    }
                })
                .or_insert(r);
        }
    }
    // what the writer's notes show: (object, chain commit named), one
    // table for them all (a set an object cost an allocation a note)
    let mut shown: HashSet<(ObjectId, ObjectId)> = HashSet::new();
    // with the checkpoint's notes: the objects whose notes are read
    let only = before.map(|(tip, changed, _)| {
        let mut changed = changed.unwrap_or_default();
        changed.extend(touched);
        (tip, changed)
    });
    let readable = notes_tip.is_some()
        && check_notes(
            store,
            reader,
            writer,
            &known,
            only.as_ref().map(|(tip, objects)| (*tip, objects)),
            &mut shown,
            report,
        )?;
    let mut missing: Vec<(ObjectId, Record)> = newest
        .into_iter()
        .filter(|((object, _), r)| {
            only.as_ref()
                .is_none_or(|(_, objects)| objects.contains(object))
                && !shown.contains(&(*object, r.commit))
        })
        .map(|((object, _), r)| (object, r))
        .collect();
    missing.sort_by_key(|(object, r)| (r.position, *object));
    let why = if readable {
        "its writer's notes do not show it"
    } else {
        "its writer has no readable notes"
    };
    for (object, r) in missing {
        report.warnings.push(Finding {
            chain: writer.to_owned(),
            index: Some(r.position),
            id: None,
            commit: Some(object.to_string()),
            kind: "note",
            reason: format!(
                "receipt #{} (chain commit {}) is about {}, but {why}; `git receipt reindex` rebuilds the notes (a display only: decisions read the chains)",
                r.position,
                r.commit.to_hex_with_len(7),
                object.to_hex_with_len(7)
            ),
        });
    }
    if let Some(tip) = notes_tip
        && readable
        && whole
        && said(report) == said_before
    {
        report.notes_tips.insert(writer.to_owned(), tip);
    }
    Ok(std::mem::take(report))
}

/// [`notes_of`] for a chain walked above a checkpoint, reading of the index
/// only its records after the checkpoint and the keys of the objects they (and
/// `changed`) are about, not the whole chain's: `Some` when the notes on those
/// objects show every receipt they should and name nothing else (what the
/// whole check would then say too), `None` when there is anything to say, or
/// anything read is not as the index writes it: the whole check then says it.
fn notes_above(
    cx: &NotesCx<'_>,
    store: &Store,
    reader: &crate::store::EntryReader,
    writer: &str,
    tip: ObjectId,
    changed: Option<&HashSet<ObjectId>>,
    grown: &Grown,
) -> Result<Option<Report>, StoreError> {
    let file = &*cx.whole.file;
    let Some(&chain) = cx.chain_of.get(writer) else {
        return Ok(None);
    };
    let (Some(&start), Some(info)) = (cx.starts.get(chain), file.chains().get(chain)) else {
        return Ok(None);
    };
    // the chain's records start at its oldest entry here: position 0, or
    // where a clone fetched from a checkpoint cut it
    let Ok(count) = usize::try_from(info.count) else {
        return Ok(None);
    };
    let Some(end) = start.checked_add(count) else {
        return Ok(None);
    };
    let oldest = match file.records_in(start..(start + 1).min(end)) {
        Ok(r) => r.first().map_or(grown.below, |r| r.position),
        Err(_) => return Ok(None),
    };
    let Some(first) = grown
        .below
        .checked_sub(oldest)
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| start.checked_add(n))
        .filter(|&first| first <= end)
    else {
        return Ok(None);
    };
    let Ok(after) = file.records_in(first..end) else {
        return Ok(None);
    };
    // the chain's records from the checkpoint's up, one each, in order
    // (mutants: `||` for `&&` below is equivalent for every index this tool
    // writes, whose records hold both; the test guards one written otherwise)
    let laid_out = after
        .iter()
        .zip(grown.below..)
        .all(|(r, position)| r.chain as usize == chain && r.position == position);
    if !laid_out {
        return Ok(None);
    }
    // the objects they are about, as the walk read them
    let mut objects: HashSet<ObjectId> = changed.cloned().unwrap_or_default();
    for r in &after {
        let Some(about) = grown.about.get(&r.commit) else {
            return Ok(None);
        };
        objects.extend(about);
    }
    // every receipt of this chain about those objects, from their keys: what
    // their notes may name, and per object and check the newest, which they
    // should show
    let null = ObjectId::null(file.object_hash());
    let mut known: HashMap<ObjectId, Seen> = HashMap::new();
    let mut newest: HashMap<(ObjectId, u32), Record> = HashMap::new();
    for &object in &objects {
        let Ok(hits) = file.keyed(&object) else {
            return Ok(None);
        };
        for hit in hits {
            let r = hit.record;
            if r.chain as usize != chain {
                continue;
            }
            let seen = known.entry(r.commit).or_insert(Seen {
                id_prefix: r.id_prefix,
                subject: null,
                inputs: null,
            });
            match hit.role {
                Role::Subject => seen.subject = object,
                Role::Inputs => seen.inputs = object,
            }
            if !r.decision {
                newest
                    .entry((object, r.check))
                    .and_modify(|n| {
                        // mutants: `>=` is equivalent, as in `notes_of`: no
                        // two records of one chain tie
                        if r.position > n.position {
                            *n = r;
                        }
                    })
                    .or_insert(r);
            }
        }
    }
    let mut report = Report::default();
    let mut shown: HashSet<(ObjectId, ObjectId)> = HashSet::new();
    let readable = check_notes(
        store,
        reader,
        writer,
        &known,
        Some((tip, &objects)),
        &mut shown,
        &mut report,
    )?;
    let clean = readable
        && report.findings.is_empty()
        && report.warnings.is_empty()
        && newest
            .iter()
            .all(|((object, _), r)| shown.contains(&(*object, r.commit)));
    Ok(clean.then_some(report))
}

/// What the notes check needs of one chain entry.
struct Seen {
    id_prefix: [u8; 8],
    subject: ObjectId,
    inputs: ObjectId,
}

/// The receipt index read once for the notes check, in memory that grows by 40
/// bytes a receipt: each record's two objects (the keys inverted), and where each
/// chain's records lie.
struct NotesTables {
    /// By record number: its subject commit and inputs tree.
    objects: Vec<[ObjectId; 2]>,
    /// By chain number: its records' numbers (one chain's are numbered together).
    ranges: Vec<Option<std::ops::Range<usize>>>,
}

impl NotesTables {
    /// `None` when the index cannot be read or is not laid out as it is written
    /// (then one built in memory from the chains is read instead).
    fn read(index: &crate::store::index::Index) -> Option<NotesTables> {
        let null = ObjectId::null(index.object_hash());
        let mut objects = vec![[null; 2]; index.records_len()];
        index
            .each_key(|oid, n, role| {
                objects[n][match role {
                    Role::Subject => 0,
                    Role::Inputs => 1,
                }] = oid;
            })
            .ok()?;
        let mut ranges: Vec<Option<std::ops::Range<usize>>> = vec![None; index.chains().len()];
        let mut apart = false;
        index
            .each_record(|n, r| match &mut ranges[r.chain as usize] {
                Some(range) if range.end == n => range.end += 1,
                Some(_) => apart = true,
                none => *none = Some(n..n + 1),
            })
            .ok()?;
        // every record keyed by both of its objects
        let whole = objects.iter().all(|o| o[0] != null && o[1] != null);
        (!apart && whole).then_some(NotesTables { objects, ranges })
    }
}

/// Check `writer`'s notes against its chain's entries (`known`): every note line
/// must name an entry of the chain, holding the receipt it names, about the object
/// the note is on. Records in `shown` what the notes show; false when the notes
/// commit is unreadable (a finding). With `only` (the notes tip and some objects),
/// only the notes on those objects are read.
fn check_notes(
    store: &Store,
    reader: &crate::store::EntryReader,
    writer: &str,
    known: &HashMap<ObjectId, Seen>,
    only: Option<(ObjectId, &HashSet<ObjectId>)>,
    shown: &mut HashSet<(ObjectId, ObjectId)>,
    report: &mut Report,
) -> Result<bool, StoreError> {
    let refname = notes_ref(writer);
    let entries = match store.note_entries_read_by(reader, writer, only) {
        Ok(e) => e,
        // a file that could not be read says nothing of the notes: an
        // error, never a finding
        Err(e) if e.is_unreadable() => return Err(e),
        Err(e) => {
            report.findings.push(Finding {
                chain: writer.to_owned(),
                index: None,
                id: None,
                commit: None,
                kind: "note",
                reason: format!("{refname} is not a readable notes commit: {e}; `git receipt reindex` rebuilds it from the chain"),
            });
            return Ok(false);
        }
    };
    // One note blob is often on two objects or more (a receipt's note on its
    // commit and on its inputs tree say the same): each blob is read and
    // parsed once, and its lines checked on every object it is on. Findings
    // keep the order of the notes they are on.
    let mut by_blob: Vec<usize> = (0..entries.len()).collect();
    by_blob.sort_by_key(|&n| entries[n].1);
    let mut found: Vec<(usize, Finding)> = Vec::new();
    for on in by_blob.chunk_by(|&a, &b| entries[a].1 == entries[b].1) {
        let blob = entries[on[0]].1;
        // a packed note within the limit straight from the pack; any other the
        // usual way, which refuses one over the limit unread
        let packed = reader.packed_blob(blob, crate::store::notes::MAX_NOTE_BYTES);
        let text = packed.map_or_else(|| store.note_blob(blob), |t| Ok(Ok(t)))?;
        let parsed = text
            .as_ref()
            .map(|text| parse_note(&refname, entries[on[0]].0, text));
        for &n in on {
            let object = entries[n].0;
            let mut finding = |id: Option<String>, reason: String| {
                found.push((
                    n,
                    Finding {
                        chain: writer.to_owned(),
                        index: None,
                        id,
                        commit: Some(object.to_string()),
                        kind: "note",
                        reason,
                    },
                ))
            };
            let lines = match &parsed {
                Ok(Ok(lines)) => lines,
                Err(big) => {
                    finding(
                        None,
                        format!(
                            "note too large: {}; `git receipt reindex` rebuilds it from the chain",
                            big.to_string().lines().next().unwrap_or_default()
                        ),
                    );
                    continue;
                }
                Ok(Err(corrupt)) => {
                    // the same text on this object: the same line, named on it
                    let e = crate::store::notes::CorruptNote {
                        refname: corrupt.refname.clone(),
                        object,
                        line: corrupt.line,
                        text: corrupt.text.clone(),
                    };
                    finding(
                        None,
                        e.to_string().lines().next().unwrap_or_default().to_owned(),
                    );
                    continue;
                }
            };
            for line in lines {
                report.note_lines += 1;
                match known.get(&line.commit) {
                    None => finding(
                        Some(line.id.clone()),
                        format!(
                            "note on {} names receipt {} at {}, which is in no chain of {writer}",
                            object.to_hex_with_len(7),
                            line.id,
                            line.commit
                        ),
                    ),
                    Some(k) if k.id_prefix != id_prefix(&line.id) => finding(
                        Some(line.id.clone()),
                        format!(
                            "note names {} but chain commit {} holds another receipt",
                            line.id, line.commit
                        ),
                    ),
                    Some(k) if k.subject != object && k.inputs != object => finding(
                        Some(line.id.clone()),
                        format!(
                            "note on {} names receipt {} whose signed subject is commit {} (inputs {}): the note was copied or moved",
                            object.to_hex_with_len(7),
                            line.id,
                            k.subject.to_hex_with_len(7),
                            k.inputs.to_hex_with_len(7),
                        ),
                    ),
                    Some(_) => {
                        shown.insert((object, line.commit));
                    }
                }
            }
        }
    }
    found.sort_by_key(|(n, _)| *n);
    report.findings.extend(found.into_iter().map(|(_, f)| f));
    Ok(true)
}

/// Report, as `checkpoint` findings, every chain of `cp` that was deleted or no
/// longer descends from the tip `cp` recorded (rolled back or rewritten).
/// [`verify`] does this for the checkpoint it is given. A chain that `report`'s
/// own walk found descending from the recorded tip (it was checked above it) is
/// not asked again; any other is read and asked here.
pub fn verify_checkpoint(
    store: &Store,
    cp: &Checkpoint,
    report: &mut Report,
) -> Result<(), StoreError> {
    for (writer, recorded) in &cp.chains {
        // what this run's walk found: the chain it verified descends from it
        if report
            .descended
            .get(writer)
            .is_some_and(|d| ObjectId::from_hex(recorded.as_bytes()).ok() == Some(*d))
        {
            continue;
        }
        let mut finding = |reason: String| {
            report.findings.push(Finding {
                chain: writer.clone(),
                index: None,
                id: None,
                commit: Some(recorded.clone()),
                kind: "checkpoint",
                reason,
            })
        };
        let Ok(recorded_id) = ObjectId::from_hex(recorded.as_bytes()) else {
            finding(format!(
                "checkpoint names {recorded:?}, which is not an object id"
            ));
            continue;
        };
        match store.chain_tip(writer)? {
            None => finding(format!(
                "chain {} was deleted; the checkpoint recorded its tip {recorded}",
                chain_ref(writer)
            )),
            Some(tip) if !descends(store, recorded_id, tip) => finding(format!(
                "chain no longer descends from {recorded}, its tip at the checkpoint: it was rolled back or rewritten (now {tip})"
            )),
            Some(_) => {}
        }
    }
    Ok(())
}

impl Report {
    /// Move the `untrusted` findings of chains that no key in `trust` could have
    /// written (an outside contributor's, say) from [`Report::findings`] to
    /// [`Report::untrusted`]: such receipts count for nothing anywhere, so they are
    /// a notice, not a finding. A trusted writer's chain holding a receipt signed by
    /// another key keeps its finding, as does everything that breaks a chain.
    pub fn set_aside_untrusted(&mut self, trust: &TrustSet) {
        let (aside, kept): (Vec<Finding>, Vec<Finding>) = std::mem::take(&mut self.findings)
            .into_iter()
            .partition(|f| f.kind == "untrusted" && !trust.may_sign_as(&f.chain));
        self.findings = kept;
        self.untrusted.extend(aside);
    }

    /// How many chains [`Report::untrusted`] spans.
    pub fn untrusted_chains(&self) -> usize {
        self.untrusted
            .iter()
            .map(|f| f.chain.as_str())
            .collect::<HashSet<_>>()
            .len()
    }
}

impl Checkpoint {
    /// The checkpoint that records every tip of a clean report, verified against `trust`.
    pub fn from_report(report: &Report, trust: &TrustSet) -> Checkpoint {
        Checkpoint {
            version: CHECKPOINT_VERSION,
            trust: Some(trust_digest(trust)),
            chains: report.tips.clone(),
            notes: report.notes_tips.clone(),
            signed_elsewhere: false,
        }
    }

    /// Whether this checkpoint vouches for the receipts below its tips when
    /// verifying against `trust`: a version 2 checkpoint written under the same trust.
    pub fn vouches_under(&self, trust: &TrustSet) -> bool {
        self.version >= 2 && self.trust.as_deref() == Some(trust_digest(trust).as_str())
    }
}

#[cfg(test)]
mod tests;
