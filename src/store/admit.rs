//! Which chain commits are entries of their chain: one set of rules, applied where
//! data enters. The server's pre-receive hook checks every entry it accepts,
//! `fetch` every entry it takes, `push` what it builds on and what it discards,
//! and the receipt index what it counts (see `docs/trust.md`, "Boundaries").
//!
//! A chain commit is an **entry** of `refs/receipts/<writer>` when:
//!
//! 1. it has exactly one parent, the entry below it (none for index 0);
//! 2. its tree holds exactly the files the format allows: `receipt.json`, and
//!    optionally `signer.pub` and (beside a v1 receipt only) `output.log`, each a
//!    regular file;
//! 3. `receipt.json` is a receipt: canonical bytes, the closed schema, bounded size;
//! 4. the receipt names `writer` as its chain, and `signature.key` is the key that
//!    writer id is derived from (`signer.pub`, when present, is that same key);
//! 5. `chain.index` is the entry below's plus one and `chain.prev` its id (index 0
//!    and `null` at the root);
//! 6. the Ed25519 signature verifies, strictly, under that key (from `signer.pub`,
//!    or from keys the reader already knows when an older entry carries none).
//!
//! An entry that breaks a rule is not part of its chain, and neither is anything
//! above it: a chain is the longest run of entries from its root.

use gix::ObjectId;
use gix::objs::tree::EntryKind;

use super::entry::{EntryFiles, LOG_FILE, RECEIPT_FILE, ReceiptFileProblem, read_receipt_file_in};
use super::stub::STUB_FILE;
use super::{Store, StoreError};
use crate::receipt::{Receipt, SCHEMA, Unverified, writer_matches_key};
use crate::sign::PublicKey;

pub use super::entry::SIGNER_FILE;
/// The largest `signer.pub` read: an `ssh-ed25519` line is 81 bytes.
pub const MAX_SIGNER_FILE_BYTES: u64 = 256;

/// The rule an entry broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Not a commit with exactly one parent (none at the root).
    Parents,
    /// Its tree holds something the format does not allow.
    Tree,
    /// `receipt.json` is not a receipt.
    Receipt,
    /// The receipt names another chain.
    Writer,
    /// Signed by a key the writer id does not name, or `signer.pub` disagrees.
    Key,
    /// Index or prev do not follow the entry below.
    Link,
    /// The signature does not verify, or no key to check it is known.
    Signature,
}

impl Rule {
    /// A short name, for messages and `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Parents => "parents",
            Rule::Tree => "tree",
            Rule::Receipt => "receipt",
            Rule::Writer => "writer",
            Rule::Key => "key",
            Rule::Link => "link",
            Rule::Signature => "signature",
        }
    }
}

/// Why a chain commit is not an entry of its chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The chain commit.
    pub commit: ObjectId,
    /// Its receipt's `chain.index` and id, when it has a readable receipt.
    pub index: Option<u64>,
    /// Its receipt's id, when it has a readable receipt.
    pub id: Option<String>,
    /// The rule it broke.
    pub rule: Rule,
    /// What is wrong, in words (may quote the pusher's data: escape it for display).
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.id, self.index) {
            (Some(id), Some(i)) => write!(
                f,
                "receipt {id} (#{i}): {} (the {} rule; chain commit {})",
                self.reason,
                self.rule.as_str(),
                self.commit.to_hex_with_len(12),
            ),
            _ => write!(
                f,
                "chain commit {} breaks the {} rule: {}",
                self.commit.to_hex_with_len(12),
                self.rule.as_str(),
                self.reason
            ),
        }
    }
}

/// A chain commit read and found in shape (rules 1 to 4); links and signature are
/// checked by [`Entry::follows`] and [`Entry::check_signature`].
#[derive(Debug, Clone)]
pub struct Entry {
    /// The chain commit.
    pub commit: ObjectId,
    /// Its parent, if any.
    pub parent: Option<ObjectId>,
    /// The receipt, not yet verified.
    pub receipt: Receipt<Unverified>,
    /// The key in `signer.pub`, when the entry carries one.
    pub key: Option<PublicKey>,
}

/// The entry an entry must follow: its commit, index and receipt id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Below {
    /// The chain commit below.
    pub commit: ObjectId,
    /// Its `chain.index`.
    pub index: u64,
    /// Its receipt id.
    pub id: String,
}

impl Entry {
    fn refusal(&self, rule: Rule, reason: impl Into<String>) -> Refusal {
        Refusal {
            commit: self.commit,
            index: Some(self.receipt.body().chain.index),
            id: Some(self.receipt.id().to_owned()),
            rule,
            reason: reason.into(),
        }
    }

    /// What an entry above this one must follow.
    pub fn as_below(&self) -> Below {
        Below {
            commit: self.commit,
            index: self.receipt.body().chain.index,
            id: self.receipt.id().to_owned(),
        }
    }

    /// Rule 5: this entry follows `below` (`None`: it is the root).
    pub fn follows(&self, below: Option<&Below>) -> Result<(), Refusal> {
        let chain = &self.receipt.body().chain;
        match below {
            None => {
                if self.parent.is_some() {
                    return Err(
                        self.refusal(Rule::Link, "its parent is not an entry of this chain")
                    );
                }
                if chain.index != 0 || chain.prev.is_some() {
                    return Err(self.refusal(
                        Rule::Link,
                        format!(
                            "is the root of the chain but has index {}; earlier receipts were removed",
                            chain.index
                        ),
                    ));
                }
            }
            Some(b) => {
                if self.parent != Some(b.commit) {
                    return Err(self.refusal(Rule::Link, "its parent is not the entry below it"));
                }
                if chain.index != b.index + 1 {
                    return Err(self.refusal(
                        Rule::Link,
                        format!(
                            "index {} follows index {}: a receipt is missing, duplicated or reordered",
                            chain.index, b.index
                        ),
                    ));
                }
                if chain.prev.as_deref() != Some(b.id.as_str()) {
                    return Err(self.refusal(
                        Rule::Link,
                        format!(
                            "prev is {}, but the receipt before it is {}",
                            chain.prev.as_deref().unwrap_or("null"),
                            b.id
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The key this entry's signature must verify under: its `signer.pub`, else
    /// one `known` returns for the fingerprint it names.
    pub fn signing_key(
        &self,
        known: &dyn Fn(&str) -> Option<PublicKey>,
    ) -> Result<PublicKey, Refusal> {
        if let Some(k) = &self.key {
            return Ok(k.clone());
        }
        let fp = &self.receipt.signature().key;
        known(fp).ok_or_else(|| {
            self.refusal(
                Rule::Signature,
                format!(
                    "carries no {SIGNER_FILE} and its key {fp} is not known here, so its signature cannot be checked (it was written by a git-receipt older than 0.2: run `git receipt push` with a current one, which re-signs nothing but is refused here until the key is trusted)"
                ),
            )
        })
    }

    /// Rule 6 for one entry.
    pub fn check_signature(
        &self,
        known: &dyn Fn(&str) -> Option<PublicKey>,
    ) -> Result<(), Refusal> {
        let key = self.signing_key(known)?;
        self.receipt
            .check_signature(&key)
            .map_err(|e| self.refusal(Rule::Signature, format!("{e}")))
    }
}

/// A refusal of chain commit `commit` under `rule`, before its receipt is read
/// (so with no index or id).
fn refuser(commit: ObjectId) -> impl Fn(Rule, String) -> Refusal {
    move |rule, reason| Refusal {
        commit,
        index: None,
        id: None,
        rule,
        reason,
    }
}

/// Rules 1 to 4 for chain commit `commit` of `writer`'s chain, in `repo`.
pub fn read_entry(
    repo: &gix::Repository,
    writer: &str,
    commit: ObjectId,
) -> Result<Entry, Refusal> {
    let refuse = refuser(commit);
    let c = repo
        .find_commit(commit)
        .map_err(|e| refuse(Rule::Parents, format!("not a readable commit: {e}")))?;
    let parents: Vec<ObjectId> = c.parent_ids().map(|p| p.detach()).collect();
    let tree_id = c
        .tree_id()
        .map_err(|e| refuse(Rule::Tree, format!("tree unreadable: {e}")))?
        .detach();
    entry_of(repo, writer, commit, &parents, tree_id, None)
}

/// A retention stub where an entry was expected (see `super::stub`): `None`
/// when the tree holds a `receipt.json` or no `stub.json` (the entry rules then
/// say what it is). A stub's tree holds `stub.json` alone; it follows the entry
/// below as an entry does (rule 5, by its unsigned `index` and `prev`), and the
/// entry above must name its id. Nothing in it is signed: it counts for nothing.
fn stub_of(
    repo: &gix::Repository,
    commit: ObjectId,
    parent: Option<ObjectId>,
    tree_id: ObjectId,
    below: Option<&Below>,
) -> Option<Result<Below, Refusal>> {
    let tree = repo.find_tree(tree_id).ok()?;
    // an entry's tree (the usual case) is read by the entry rules: its
    // receipt is not read here too
    if tree.find_entry(RECEIPT_FILE).is_some() {
        return None;
    }
    let stub = match read_receipt_file_in(repo, &tree) {
        Err(ReceiptFileProblem::Stub(stub)) => *stub,
        _ => return None,
    };
    let refuse = |rule, index: Option<u64>, reason: String| Refusal {
        commit,
        index,
        id: None,
        rule,
        reason,
    };
    Some((|| {
        let s = stub.map_err(|why| refuse(Rule::Tree, None, why))?;
        let at = Some(s.index);
        if tree.iter().count() != 1 {
            return Err(refuse(
                Rule::Tree,
                at,
                format!("a retention stub's tree holds {STUB_FILE} alone"),
            ));
        }
        let linked = match below {
            // a stub that parses has `prev` exactly when its index is not 0
            None => parent.is_none() && s.index == 0,
            Some(b) => {
                parent == Some(b.commit)
                    && s.index == b.index + 1
                    && s.prev.as_deref() == Some(&b.id)
            }
        };
        if !linked {
            return Err(refuse(
                Rule::Link,
                at,
                format!(
                    "retention stub of {} does not follow the entry below it (index {}, prev {})",
                    s.id,
                    s.index,
                    s.prev.as_deref().unwrap_or("null")
                ),
            ));
        }
        Ok(Below {
            commit,
            index: s.index,
            id: s.id,
        })
    })())
}

/// The known keys of a writer checking its own chain: its key alone.
pub fn only_key(key: &PublicKey) -> impl Fn(&str) -> Option<PublicKey> + '_ {
    let fp = key.fingerprint();
    move |named: &str| (named == fp).then(|| key.clone())
}

/// Every rule for the one chain commit `commit` of `writer`'s chain, against the
/// entry below it (read for its id and index only: whether *it* follows every
/// rule is the caller's to know). Two reads and one signature.
pub fn check_entry(
    repo: &gix::Repository,
    writer: &str,
    commit: ObjectId,
    known: &dyn Fn(&str) -> Option<PublicKey>,
) -> Result<Entry, Refusal> {
    let e = read_entry(repo, writer, commit)?;
    let below = match e.parent {
        None => None,
        Some(p) => Some(read_entry(repo, writer, p)?.as_below()),
    };
    e.follows(below.as_ref())?;
    e.check_signature(known)?;
    Ok(e)
}

/// The files of the entry tree `tree_id` read straight from the pack files
/// ([`super::entry::packed_tree`], which keeps the delta bases it inflates: a
/// fetched receipt blob is a delta on another receipt, and gix's own reads
/// inflated its whole delta chain again for each), when its tree is exactly
/// what an entry holds. `None` for anything else, which [`entry_of`] then reads
/// the usual way, whose answer and wording decide (a stub, another file, a
/// loose object, an oversized receipt).
///
/// mutants: every `None` here (so every mutant that only declines more) is
/// equivalent in answers: the usual read decides and only speed moves.
fn packed_files(packs: &super::packed::Packs, tree_id: ObjectId) -> Option<EntryFiles> {
    super::entry::packed_tree(packs, tree_id).filter(|t| t.only_entry_files)
}

/// The files of the entry tree `tree_id`, read the usual way (through gix),
/// or the rule it breaks and why.
fn tree_files(repo: &gix::Repository, tree_id: ObjectId) -> Result<EntryFiles, (Rule, String)> {
    let tree = repo
        .find_tree(tree_id)
        .map_err(|e| (Rule::Tree, format!("tree unreadable: {e}")))?;
    let bytes = read_receipt_file_in(repo, &tree).map_err(|p| match p {
        ReceiptFileProblem::Shape(reason) => (Rule::Tree, reason),
        ReceiptFileProblem::Stub(read) => match *read {
            Ok(s) => (
                Rule::Tree,
                format!("is a retention stub of {}, not a receipt", s.id),
            ),
            Err(reason) => (Rule::Tree, reason),
        },
        ReceiptFileProblem::Oversized(size) => (
            Rule::Receipt,
            format!(
                "{RECEIPT_FILE} is {size} bytes, over the {} byte limit",
                crate::receipt::MAX_RECEIPT_BYTES
            ),
        ),
    })?;
    let mut signer_blob = None;
    let mut has_log = false;
    for e in tree.iter() {
        let e = e.map_err(|e| (Rule::Tree, format!("tree unreadable: {e}")))?;
        let name = e.filename();
        let regular = e.mode().kind() == EntryKind::Blob;
        if name == RECEIPT_FILE {
            // read_receipt_file says what is wrong with it
        } else if name == SIGNER_FILE && regular {
            signer_blob = Some(e.oid().to_owned());
        } else if name == LOG_FILE && regular {
            has_log = true;
        } else {
            return Err((
                Rule::Tree,
                format!(
                    "its tree holds {:?}, which a chain entry may not (only {RECEIPT_FILE}, {SIGNER_FILE} and, beside a v1 receipt, {LOG_FILE}, each a regular file)",
                    crate::text::escape(&name.to_string())
                ),
            ));
        }
    }
    Ok(EntryFiles {
        bytes,
        signer_blob,
        has_log,
        only_entry_files: true,
    })
}

/// [`read_entry`] of a commit already read: its parents and tree; `packed`,
/// its files when [`packed_files`] read them.
fn entry_of(
    repo: &gix::Repository,
    writer: &str,
    commit: ObjectId,
    parents: &[ObjectId],
    tree_id: ObjectId,
    packed: Option<EntryFiles>,
) -> Result<Entry, Refusal> {
    let refuse = refuser(commit);
    if parents.len() > 1 {
        return Err(refuse(
            Rule::Parents,
            format!(
                "has {} parents; a chain is linear: an entry has exactly one parent, the entry below it",
                parents.len()
            ),
        ));
    }
    let EntryFiles {
        bytes,
        signer_blob,
        has_log,
        ..
    } = match packed {
        Some(files) => files,
        None => tree_files(repo, tree_id).map_err(|(rule, why)| refuse(rule, why))?,
    };
    let receipt = Receipt::parse_owned(bytes)
        .map_err(|e| refuse(Rule::Receipt, format!("{RECEIPT_FILE} is invalid: {e}")))?;
    // the walks after a fetch's admission (notes, the index) take what they
    // need of it from here
    if super::entry::recalling() {
        let indexed = super::index::Indexed::of(commit, receipt.bytes(), writer);
        super::entry::remember_admitted(
            commit,
            tree_id,
            parents.first().copied(),
            writer,
            &receipt,
            indexed
                .is_entry()
                .then(|| Box::new(indexed) as Box<dyn std::any::Any + Send + Sync>),
        );
    }
    let mut entry = Entry {
        commit,
        parent: parents.first().copied(),
        receipt,
        key: None,
    };
    let body = entry.receipt.body();
    if has_log && body.schema != SCHEMA {
        return Err(entry.refusal(
            Rule::Tree,
            format!("holds {LOG_FILE} beside a {} receipt (only v1 receipts keep their log in the chain)", body.schema),
        ));
    }
    if body.chain.writer != writer {
        return Err(entry.refusal(
            Rule::Writer,
            format!(
                "names chain {}, but sits in {writer}",
                crate::text::escape(&body.chain.writer)
            ),
        ));
    }
    let fp = entry.receipt.signature().key.clone();
    if !writer_matches_key(writer, &fp) {
        return Err(entry.refusal(
            Rule::Key,
            format!(
                "is signed by {}, but writer id {writer} names another key",
                crate::text::escape(&fp)
            ),
        ));
    }
    if let Some(blob) = signer_blob {
        let key = read_signer_file(repo, blob).map_err(|why| entry.refusal(Rule::Key, why))?;
        if key.fingerprint() != fp {
            return Err(entry.refusal(
                Rule::Key,
                format!(
                    "its {SIGNER_FILE} holds key {}, but the receipt is signed by {}",
                    key.fingerprint(),
                    crate::text::escape(&fp)
                ),
            ));
        }
        entry.key = Some(key);
    }
    Ok(entry)
}

/// Keys read from `signer.pub` blobs, by blob id: a chain's entries share one
/// blob, so a push of a thousand entries decodes its key (a square root) once.
static SIGNER_KEYS: std::sync::Mutex<Option<std::collections::HashMap<ObjectId, PublicKey>>> =
    std::sync::Mutex::new(None);

fn read_signer_file(repo: &gix::Repository, blob: ObjectId) -> Result<PublicKey, String> {
    if let Some(k) = SIGNER_KEYS
        .lock()
        .ok()
        .and_then(|m| m.as_ref().and_then(|m| m.get(&blob).cloned()))
    {
        return Ok(k);
    }
    // from_openssh has decoded the point (canonical, large order) already
    let key = read_signer_blob(repo, blob)?;
    if let Ok(mut m) = SIGNER_KEYS.lock() {
        let m = m.get_or_insert_with(Default::default);
        if m.len() >= 4096 {
            m.clear();
        }
        m.insert(blob, key.clone());
    }
    Ok(key)
}

fn read_signer_blob(repo: &gix::Repository, blob: ObjectId) -> Result<PublicKey, String> {
    let header = repo
        .find_header(blob)
        .map_err(|e| format!("{SIGNER_FILE} unreadable: {e}"))?;
    if header.size() > MAX_SIGNER_FILE_BYTES {
        return Err(format!(
            "{SIGNER_FILE} is {} bytes, over the {MAX_SIGNER_FILE_BYTES} byte limit",
            header.size()
        ));
    }
    let blob = repo
        .find_blob(blob)
        .map_err(|e| format!("{SIGNER_FILE} unreadable: {e}"))?;
    let text =
        std::str::from_utf8(&blob.data).map_err(|_| format!("{SIGNER_FILE} is not UTF-8"))?;
    PublicKey::from_openssh(text.trim_end_matches('\n'))
        .map_err(|e| format!("{SIGNER_FILE} is not an ssh-ed25519 key line: {e}"))
}

/// The bytes of a `signer.pub` for `key`.
pub fn signer_file(key: &PublicKey) -> String {
    format!("{}\n", key.to_openssh())
}

/// What [`Store::admit`] found above a base.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Admission {
    /// How many entries above the base are part of the chain (stubs not counted).
    pub admitted: u64,
    /// How many retention stubs among them.
    pub stubs: u64,
    /// The highest of them (`None` when there is none).
    pub valid_tip: Option<ObjectId>,
    /// The first commit above them that is not an entry (it and everything above
    /// it are refused).
    pub refusal: Option<Refusal>,
}

impl Admission {
    /// The highest valid entry: the highest admitted, else `base`.
    pub fn valid_tip_or(&self, base: Option<ObjectId>) -> Option<ObjectId> {
        self.valid_tip.or(base)
    }
}

/// How many entries are read and their signatures checked together.
const BATCH: usize = 1024;

/// The most commits [`Store::admit`] walks in one call (20 bytes each): far past
/// any real chain, and a bound on what a hostile push can make it hold.
const MAX_WALK: usize = 4_000_000;

impl Store {
    /// Apply every rule to the chain commits of `writer` from `tip` down to `base`
    /// (exclusive; `None`: down to the root), following first parents. `base` must
    /// be an entry the caller already holds as valid. Costs one read and one
    /// signature per commit above `base` (signatures checked as a batch), never
    /// the length of the chain below it; memory is a batch of receipts.
    pub fn admit(
        &self,
        writer: &str,
        tip: ObjectId,
        base: Option<ObjectId>,
        known: &dyn Fn(&str) -> Option<PublicKey>,
    ) -> Result<Admission, StoreError> {
        Ok(match self.admission_walk(writer, tip, base)? {
            Walk::Done(a) => a,
            Walk::Commits(below, commits) => {
                self.admit_walked(&self.admission_packs(), writer, below, &commits, known)
            }
        })
    }

    /// [`Store::admit`] of the commits its walk found (newest first), up from
    /// `below`, a batch at a time: shape and links, then signatures.
    fn admit_walked(
        &self,
        packs: &super::packed::LazyPacks,
        writer: &str,
        mut below: Option<Below>,
        commits: &[Commit],
        known: &dyn Fn(&str) -> Option<PublicKey>,
    ) -> Admission {
        let mut out = Admission::default();
        for part in commits.rchunks(BATCH) {
            let read = self.read_part(packs, writer, part, &mut below, &mut out, known);
            let results = Receipt::check_signatures(&read.checked());
            read.count(&results, &mut out);
            if out.refusal.is_some() {
                break;
            }
        }
        refuse_stub_at_tip(commits, &mut out);
        out
    }

    /// [`Store::admit`] of many chains (writer, tip, base) at once, with the same
    /// answer for each: chains of at most a batch of commits have their
    /// signatures checked together, a batch across chains, since a chain's few
    /// new entries alone are too few for one (a fetch of a few new receipts
    /// from each of many writers checked every signature alone); longer chains
    /// are admitted one by one. Memory is three batches of receipts (a
    /// batch's signatures are checked on another thread while the next is
    /// read).
    pub fn admit_many(
        &self,
        jobs: &[(&str, ObjectId, Option<ObjectId>)],
        known: &dyn Fn(&str) -> Option<PublicKey>,
    ) -> Result<Vec<Admission>, StoreError> {
        self.admit_many_by(jobs, known, 2 * BATCH)
    }

    /// [`Store::admit_many`], the signatures checked once `flush_at` of them
    /// are held.
    fn admit_many_by(
        &self,
        jobs: &[(&str, ObjectId, Option<ObjectId>)],
        known: &dyn Fn(&str) -> Option<PublicKey>,
        flush_at: usize,
    ) -> Result<Vec<Admission>, StoreError> {
        let packs = self.admission_packs();
        let mut out: Vec<Option<Admission>> = (0..jobs.len()).map(|_| None).collect();
        // job, its commits (newest first), its admission so far, its part read
        let mut waiting: Vec<Waiting> = Vec::new();
        let mut held = 0;
        // A batch's signatures are checked on another thread while the next
        // batch is read here (reading and checking cost about the same; one
        // after the other, a fetch's admission kept one core busy). One batch
        // is checked at a time: memory is three batches of receipts.
        std::thread::scope(|s| -> Result<(), StoreError> {
            let mut checking = None;
            for (n, &(writer, tip, base)) in jobs.iter().enumerate() {
                let (mut below, commits) = match self.admission_walk(writer, tip, base)? {
                    Walk::Done(a) => {
                        out[n] = Some(a);
                        continue;
                    }
                    Walk::Commits(below, commits) => (below, commits),
                };
                // mutants: this bound, the flush's below and the count of
                // what is held are equivalent in answers
                // (`admitting_many_chains_answers_what_admitting_each_alone_does`,
                // every flush size): they choose only which signatures share
                // a batch, and how many receipts are held at once
                if commits.len() > BATCH {
                    out[n] = Some(self.admit_walked(&packs, writer, below, &commits, known));
                    continue;
                }
                let mut a = Admission::default();
                let part = self.read_part(&packs, writer, &commits, &mut below, &mut a, known);
                held += part.keyed.len();
                waiting.push((n, commits, a, part));
                if held >= flush_at {
                    settle(checking.take(), &mut out);
                    let batch = std::mem::take(&mut waiting);
                    checking = Some(s.spawn(move || check_waiting(batch)));
                    held = 0;
                }
            }
            settle(checking, &mut out);
            Ok(())
        })?;
        for (n, a) in check_waiting(waiting) {
            out[n] = Some(a);
        }
        Ok(out
            .into_iter()
            .map(|a| a.expect("every job answered"))
            .collect())
    }

    /// The pack files an admission reads entries from (opened at its first
    /// read, so a pack a fetch just wrote is among them).
    fn admission_packs(&self) -> super::packed::LazyPacks {
        super::packed::LazyPacks::of(&self.repo)
    }

    /// The commits [`Store::admit`] checks: from `tip` down to `base`, each read
    /// once, with the entry at `base` to follow; or the answer already, when a
    /// merge stands in the way.
    fn admission_walk(
        &self,
        writer: &str,
        tip: ObjectId,
        base: Option<ObjectId>,
    ) -> Result<Walk, StoreError> {
        let below = match base {
            None => None,
            Some(b) => Some(
                read_entry(&self.repo, writer, b)
                    .map_err(|r| StoreError::CorruptChain {
                        writer: writer.to_owned(),
                        commit: b,
                        reason: r.reason,
                    })?
                    .as_below(),
            ),
        };
        // Down from the tip to the base: commit ids only.
        let mut commits: Vec<Commit> = Vec::new();
        let mut next = Some(tip);
        while let Some(c) = next {
            if Some(c) == base || commits.len() >= MAX_WALK {
                break;
            }
            // read_entry says what is wrong with a commit that cannot be read
            let (parents, tree) = self.chain_commit(c).unwrap_or_default();
            if parents.len() > 1 {
                // a merge: it and everything above it are refused, and which of
                // its parents the chain continues on is not for it to say
                return Ok(Walk::Done(Admission {
                    refusal: read_entry(&self.repo, writer, c).err(),
                    ..Admission::default()
                }));
            }
            next = parents.first().copied();
            commits.push((c, parents, tree));
        }
        Ok(Walk::Commits(below, commits))
    }

    /// The parents and tree of chain commit `c` (`None`: it cannot be read as
    /// a commit; its tree `None`: the tree cannot be read): what a walk before
    /// this one in the command remembered, else read, and, while a command
    /// recalls, remembered for the walks after it when it has at most one
    /// parent (the descent check, admission, the notes and the index each
    /// walk the same commits).
    fn chain_commit(&self, c: ObjectId) -> Option<(Vec<ObjectId>, Option<ObjectId>)> {
        if let Some((tree, parent)) = super::entry::recalled_commit(&c) {
            return Some((parent.into_iter().collect(), Some(tree)));
        }
        let commit = self.repo.find_commit(c).ok()?;
        let parents: Vec<ObjectId> = commit.parent_ids().map(|p| p.detach()).collect();
        let tree = commit.tree_id().ok().map(|t| t.detach());
        if let (Some(t), [] | [_]) = (tree, parents.as_slice()) {
            super::entry::remember_commit(c, t, parents.first().copied());
        }
        Some((parents, tree))
    }

    /// Whether walking first parents down from `tip` reaches `base`, through
    /// commits of exactly one parent each, within as many commits as an
    /// admission walks: `true` says `base` is an ancestor of `tip` (as
    /// [`Store::is_ancestor`] would); `false` says only that this walk did not
    /// find it (a merge, the root, a commit not here, too far), so ask
    /// `is_ancestor`. Each commit read is remembered for the admission walk
    /// after it, while a command recalls ([`super::entry::Recalling`]): a
    /// chain taken from a signed checkpoint is walked down to it twice, and
    /// read once.
    pub fn reaches_down(&self, tip: ObjectId, base: ObjectId) -> bool {
        let mut next = tip;
        for _ in 0..MAX_WALK {
            if next == base {
                return true;
            }
            let Some((parents, _)) = self.chain_commit(next) else {
                return false;
            };
            let [parent] = parents[..] else {
                return false;
            };
            next = parent;
        }
        false
    }

    /// Rules 1 to 5 and each key for `part` (newest first), up from `below`,
    /// which moves up with it; the first refusal goes into `out`.
    fn read_part(
        &self,
        packs: &super::packed::LazyPacks,
        writer: &str,
        part: &[Commit],
        below: &mut Option<Below>,
        out: &mut Admission,
        known: &dyn Fn(&str) -> Option<PublicKey>,
    ) -> Part {
        let mut entries = Vec::with_capacity(part.len());
        // each commit of the part in order: a stub, or the entry at this
        // position of `entries`
        let mut items: Vec<Option<usize>> = Vec::with_capacity(part.len());
        for (c, parents, tree) in part.iter().rev() {
            // an entry read whole from the packs is no stub (it holds a receipt)
            let packed = tree
                .filter(|_| parents.len() <= 1)
                .and_then(|t| packed_files(packs.get(), t));
            if packed.is_none()
                && let Some(t) = tree
                && parents.len() <= 1
                && let Some(stub) =
                    stub_of(&self.repo, *c, parents.first().copied(), *t, below.as_ref())
            {
                match stub {
                    Ok(b) => {
                        *below = Some(b);
                        items.push(None);
                        continue;
                    }
                    Err(r) => {
                        out.refusal = Some(r);
                        break;
                    }
                }
            }
            let e = match tree {
                Some(t) => entry_of(&self.repo, writer, *c, parents, *t, packed),
                None => read_entry(&self.repo, writer, *c),
            }
            .and_then(|e| e.follows(below.as_ref()).map(|()| e));
            match e {
                Ok(e) => {
                    *below = Some(e.as_below());
                    items.push(Some(entries.len()));
                    entries.push(e);
                }
                Err(r) => {
                    out.refusal = Some(r);
                    break;
                }
            }
        }
        let mut keyed = Vec::with_capacity(entries.len());
        for e in &entries {
            match e.signing_key(known) {
                Ok(k) => keyed.push(k),
                Err(r) => {
                    out.refusal = Some(r);
                    break;
                }
            }
        }
        Part {
            entries,
            items,
            keyed,
        }
    }
}

/// A chain commit as the admission walk read it: its id, parents and tree.
type Commit = (ObjectId, Vec<ObjectId>, Option<ObjectId>);

/// What the admission walk found.
enum Walk {
    /// The answer: a merge stands in the way.
    Done(Admission),
    /// The entry to follow, and the commits above it, newest first.
    Commits(Option<Below>, Vec<Commit>),
}

/// A chain [`Store::admit_many`] read and holds for its batch's signature
/// check: the job, its commits (newest first), its admission so far, its part.
type Waiting = (usize, Vec<Commit>, Admission, Part);

/// Take into `out` the admissions a thread running [`check_waiting`] finished.
fn settle(
    checking: Option<std::thread::ScopedJoinHandle<'_, Vec<(usize, Admission)>>>,
    out: &mut [Option<Admission>],
) {
    for (n, a) in checking.map_or_else(Vec::new, |h| {
        h.join().expect("signature checks do not panic")
    }) {
        out[n] = Some(a);
    }
}

/// Check the signatures of the chains `waiting` holds as one batch, and
/// finish each one's admission with them.
fn check_waiting(waiting: Vec<Waiting>) -> Vec<(usize, Admission)> {
    let results = {
        let checked: Vec<(&Receipt<Unverified>, &PublicKey)> = waiting
            .iter()
            .flat_map(|(_, _, _, p)| p.checked())
            .collect();
        Receipt::check_signatures(&checked)
    };
    let mut at = 0;
    let mut out = Vec::with_capacity(waiting.len());
    for (n, commits, mut a, part) in waiting {
        let k = part.keyed.len();
        part.count(&results[at..at + k], &mut a);
        at += k;
        refuse_stub_at_tip(&commits, &mut a);
        out.push((n, a));
    }
    out
}

/// A part of a chain read and linked, its signatures not yet checked.
struct Part {
    entries: Vec<Entry>,
    /// Each commit in order: a stub, or its entry's position in `entries`.
    items: Vec<Option<usize>>,
    /// The key of each entry up to the first whose key is not known.
    keyed: Vec<PublicKey>,
}

impl Part {
    /// The signatures to check: one per keyed entry.
    fn checked(&self) -> Vec<(&Receipt<Unverified>, &PublicKey)> {
        self.entries
            .iter()
            .zip(&self.keyed)
            .map(|(e, k)| (&e.receipt, k))
            .collect()
    }

    /// Count into `out` the commits of the part that are part of the chain,
    /// given each keyed entry's signature check (`results`): those before the
    /// first entry whose key or signature failed.
    fn count(&self, results: &[Result<(), crate::receipt::ReceiptError>], out: &mut Admission) {
        let bad = results.iter().position(Result::is_err);
        let good = bad.unwrap_or(results.len());
        if let Some(i) = bad {
            let why = results[i]
                .as_ref()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            out.refusal = Some(self.entries[i].refusal(Rule::Signature, why));
        }
        for item in &self.items {
            match item {
                None => out.stubs += 1,
                Some(i) if *i < good => {
                    out.admitted += 1;
                    out.valid_tip = Some(self.entries[*i].commit);
                }
                Some(_) => break,
            }
        }
    }
}

/// A chain ends in a receipt: a stub at the tip would name an id that nothing
/// signed. Said in `out` when nothing else was.
fn refuse_stub_at_tip(commits: &[Commit], out: &mut Admission) {
    if out.refusal.is_none()
        && let Some((c, _, _)) = commits.first()
        && Some(*c) != out.valid_tip
    {
        out.refusal = Some(Refusal {
            commit: *c,
            index: None,
            id: None,
            rule: Rule::Link,
            reason: "is a retention stub at the tip of its chain: a chain's newest entry is a receipt, whose signature names the stubs below it".to_owned(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freshness::rules::{Scratch, contract};
    use crate::receipt::writer_id;
    use crate::sign::SigningKey;

    const CONTRACT: &str = "[check \"test\"]\n\trun = true\n\tpath = src\n";

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_seed(&[seed; 32])
    }

    /// An admission reads entries straight from the packs when their trees are
    /// as an entry's should be, and answers exactly what it answers reading
    /// them loose: for a valid chain and for tips of every shape the tree rule
    /// refuses (another file, an executable, a link, a second signer.pub, an
    /// oversized receipt, a log beside a v2 receipt) or whose signature fails.
    #[test]
    fn admitting_entries_from_packs_answers_what_admitting_them_loose_does() {
        let mut s = Scratch::new();
        let c = contract(CONTRACT);
        let h = s.commit(&[("src/lib.rs", "a\n")], "a");
        let k = key(4);
        let w = writer_id(k.public(), "default");
        let entries: Vec<ObjectId> = (0..3)
            .map(|minute| s.run(&k, &c, "test", h, 0, minute).commit)
            .collect();
        let (tip, below) = (entries[2], Some(entries[1]));
        let blob = s.git_input(&["hash-object", "-w", "--stdin"], b"x");
        let big = vec![b' '; crate::receipt::MAX_RECEIPT_BYTES + 1];
        let big = s.git_input(&["hash-object", "-w", "--stdin"], &big);
        let add = |line: String| move |ls: &str| format!("{ls}\n{line}\n");
        let swap = |from: &'static str, to: String| {
            move |ls: &str| {
                let mut out = String::new();
                for l in ls.lines() {
                    let l = if l.ends_with(from) {
                        to.clone()
                    } else {
                        l.to_owned()
                    };
                    out.push_str(&l);
                    out.push('\n');
                }
                out
            }
        };
        let mode_of = |mode: &str| {
            let mode = mode.to_owned();
            move |ls: &str| {
                let mut out = String::new();
                for l in ls.lines() {
                    match l
                        .strip_prefix("100644")
                        .filter(|_| l.ends_with("\treceipt.json"))
                    {
                        Some(rest) => out.push_str(&format!("{mode}{rest}\n")),
                        None => out.push_str(&format!("{l}\n")),
                    }
                }
                out
            }
        };
        let signer = s.git(&["rev-parse", &format!("{tip}:{SIGNER_FILE}")]);
        let shapes: Vec<(&str, ObjectId, Option<Rule>)> = vec![
            ("valid", tip, None),
            (
                "another file",
                s.reshaped(tip, below, add(format!("100644 blob {blob}\tx"))),
                Some(Rule::Tree),
            ),
            (
                "executable",
                s.reshaped(tip, below, mode_of("100755")),
                Some(Rule::Tree),
            ),
            (
                "link",
                s.reshaped(tip, below, mode_of("120000")),
                Some(Rule::Tree),
            ),
            (
                "two signer.pub",
                s.reshaped(
                    tip,
                    below,
                    add(format!("100644 blob {signer}\t{SIGNER_FILE}")),
                ),
                None,
            ),
            (
                "oversized",
                s.reshaped(
                    tip,
                    below,
                    swap("\treceipt.json", format!("100644 blob {big}\treceipt.json")),
                ),
                Some(Rule::Receipt),
            ),
            (
                "a log",
                s.reshaped(tip, below, add(format!("100644 blob {blob}\t{LOG_FILE}"))),
                Some(Rule::Tree),
            ),
            (
                "forged",
                s.forged(tip, below, "\"duration_ms\":", "\"duration_ms\":1"),
                Some(Rule::Signature),
            ),
        ];
        let known = |fp: &str| (fp == k.public().fingerprint()).then(|| k.public().clone());
        let admit_all = |s: &Scratch| -> Vec<Admission> {
            shapes
                .iter()
                .map(|&(_, t, _)| s.store.admit(&w, t, None, &known).unwrap())
                .collect()
        };
        let loose = admit_all(&s);
        for ((what, _, rule), a) in shapes.iter().zip(&loose) {
            assert_eq!(a.refusal.as_ref().map(|r| r.rule), *rule, "{what}: {a:?}");
            assert_eq!(a.admitted, if rule.is_some() { 2 } else { 3 }, "{what}");
        }
        // a file no entry may hold is named as such (not taken for a log)
        let other = loose[1].refusal.as_ref().unwrap();
        assert!(other.reason.contains(r#"holds "x""#), "{other:?}");
        // every shape packed (each under a ref, so the repack keeps it)
        for (n, &(_, t, _)) in shapes.iter().enumerate() {
            s.git(&["update-ref", &format!("refs/shapes/{n}"), &t.to_string()]);
        }
        s.git(&["repack", "-a", "-d", "-q"]);
        s.git(&["prune-packed"]);
        s.reopen();
        let packs = s.store.admission_packs();
        let tree = |t: ObjectId| {
            ObjectId::from_hex(s.git(&["rev-parse", &format!("{t}^{{tree}}")]).as_bytes()).unwrap()
        };
        // the valid entries are read from the packs, the odd shapes the usual way
        for (what, t, _) in &shapes {
            let read = packed_files(packs.get(), tree(*t)).is_some();
            let expected = matches!(*what, "valid" | "a log" | "forged");
            assert_eq!(read, expected, "{what}: read from the packs");
        }
        assert_eq!(admit_all(&s), loose);
    }

    /// Admitting many chains at once answers for each what admitting it alone
    /// does, with signatures checked as one batch across chains (320 new
    /// entries in three chains: a batch only together), a forged entry in one
    /// of them refused where it stands, and a chain from a base.
    #[test]
    fn admitting_many_chains_answers_what_admitting_each_alone_does() {
        let s = Scratch::new();
        let c = contract(CONTRACT);
        let h = s.commit(&[("src/lib.rs", "a\n")], "a");
        let keys = [key(1), key(2), key(3)];
        let mut tips = Vec::new();
        let mut halfway = None;
        for (n, k) in keys.iter().enumerate() {
            let mut tip = None;
            for minute in 0..120 {
                let a = s.run(k, &c, "test", h, 0, minute);
                if n == 2 && minute == 39 {
                    halfway = Some(a.commit);
                }
                tip = Some(a.commit);
            }
            tips.push((writer_id(k.public(), "default"), tip.unwrap()));
        }
        let below = s.store.chain_entry(&tips[1].0, tips[1].1).unwrap().parent;
        let bad = s.forged(tips[1].1, below, "\"duration_ms\":", "\"duration_ms\":1");
        let known = |fp: &str| {
            keys.iter()
                .find(|k| k.public().fingerprint() == fp)
                .map(|k| k.public().clone())
        };
        let jobs: Vec<(&str, ObjectId, Option<ObjectId>)> = vec![
            (&tips[0].0, tips[0].1, None),
            (&tips[1].0, bad, None),
            (&tips[2].0, tips[2].1, halfway),
        ];
        let many = s.store.admit_many(&jobs, &known).unwrap();
        let alone: Vec<Admission> = jobs
            .iter()
            .map(|&(w, t, b)| s.store.admit(w, t, b, &known).unwrap())
            .collect();
        assert_eq!(many, alone);
        // checked a batch at a time on another thread while the next is read:
        // a batch of every chain, of two, of all three
        for flush_at in [1, 121, 240, 10_000] {
            let by = s.store.admit_many_by(&jobs, &known, flush_at).unwrap();
            assert_eq!(by, alone, "flushed at {flush_at}");
        }
        assert_eq!(
            (many[0].admitted, many[0].valid_tip),
            (120, Some(tips[0].1))
        );
        assert!(many[0].refusal.is_none());
        // the forged tip: the 119 below it taken, it refused for its signature
        assert_eq!(many[1].admitted, 119);
        assert_eq!(many[1].refusal.as_ref().unwrap().rule, Rule::Signature);
        assert_eq!(many[1].refusal.as_ref().unwrap().commit, bad);
        assert_eq!((many[2].admitted, many[2].valid_tip), (80, Some(tips[2].1)));
        // a merge on a chain: refused, and nothing above it taken
        let merge = s.git(&[
            "commit-tree",
            &format!("{}^{{tree}}", tips[0].1),
            "-p",
            &tips[0].1.to_string(),
            "-p",
            &tips[2].1.to_string(),
            "-m",
            "merge",
        ]);
        let merge = ObjectId::from_hex(merge.trim().as_bytes()).unwrap();
        let jobs = [(tips[0].0.as_str(), merge, None), jobs[2]];
        let many = s.store.admit_many(&jobs, &known).unwrap();
        assert_eq!(many[0].admitted, 0);
        assert_eq!(many[0].refusal.as_ref().unwrap().rule, Rule::Parents);
        assert_eq!(many[1].admitted, 80);
    }

    /// Walking down a chain finds an entry below its tip, never a commit
    /// beside it or above it, and stops (saying it did not find it, so the
    /// history is asked whole) at a merge or the root. While a command
    /// recalls, the admission walk after it takes what it read, and admits as
    /// it does reading every commit.
    #[test]
    fn a_walk_down_a_chain_finds_what_is_below_its_tip_and_stops_at_a_merge() {
        let s = Scratch::new();
        let chain = s.chain(7, &[0; 5]);
        let (e, h, w) = (&chain.commits, chain.source, &chain.writer);
        assert!(s.store.reaches_down(e[4], e[1]));
        assert!(s.store.reaches_down(e[4], e[4]));
        assert!(s.store.reaches_down(e[4], e[0]));
        assert!(!s.store.reaches_down(e[1], e[4]), "above it");
        assert!(
            !s.store.reaches_down(e[4], h),
            "beside it: walked to the root"
        );
        let merge = s.git(&[
            "commit-tree",
            &format!("{}^{{tree}}", e[4]),
            "-p",
            &e[4].to_string(),
            "-p",
            &h.to_string(),
            "-m",
            "merge",
        ]);
        let merge = ObjectId::from_hex(merge.trim().as_bytes()).unwrap();
        assert!(!s.store.reaches_down(merge, e[1]), "a merge is not walked");
        assert!(
            s.store.is_ancestor(e[1], merge).unwrap(),
            "though git says so"
        );
        let known = only_key(chain.key.public());
        let plain = s.store.admit(w, e[4], Some(e[1]), &known).unwrap();
        let _recalling = super::super::entry::Recalling::start();
        assert!(s.store.reaches_down(e[4], e[1]));
        let after = s.store.admit(w, e[4], Some(e[1]), &known).unwrap();
        assert_eq!(
            (after.admitted, after.valid_tip, after.refusal.is_none()),
            (plain.admitted, plain.valid_tip, plain.refusal.is_none())
        );
        assert_eq!(after.admitted, 3);
    }
}
