//! Writer chains: `refs/receipts/<writer>`, one commit per receipt.
//!
//! Appending reads the tip, builds and signs the next body against it, writes the
//! objects, and moves the ref by compare-and-swap. Losing the race means another
//! process appended first: rebuild on the new tip and try again, so concurrent
//! writers of one chain end up with one linear chain and no lost receipt.

use std::time::Duration;

use super::concurrent_gc::{Written, encode};
use super::{CHAIN_PREFIX, Retry, Store, StoreError, crash_point};
use crate::notice::Notice;
use crate::receipt::{
    Body, MAX_RECEIPT_BYTES, Receipt, ReceiptError, Unverified, Verified, is_valid_writer_id,
};
use crate::sign::SigningKey;
use gix::ObjectId;
use gix::objs::tree::{Entry, EntryKind};

use super::entry::{ChainCommit, ReceiptFileProblem, WalkReader};
pub use super::entry::{LOG_FILE, RECEIPT_FILE};

/// One receipt as found in a chain.
#[derive(Debug, Clone)]
pub struct ChainEntry {
    /// The chain commit holding it.
    pub commit: ObjectId,
    /// Its parent chain commit, if any.
    pub parent: Option<ObjectId>,
    /// The parsed (not yet verified) receipt.
    pub receipt: Receipt<Unverified>,
}

/// A retention stub as found in a chain (see [`super::stub`]).
#[derive(Debug, Clone)]
pub struct StubEntry {
    /// The chain commit holding it.
    pub commit: ObjectId,
    /// Its parent chain commit, if any.
    pub parent: Option<ObjectId>,
    /// The stub.
    pub stub: super::stub::Stub,
}

/// One chain commit: a receipt or a retention stub.
// a walk hands each receipt on by value, unboxed, as it did before stubs
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum ChainItem {
    /// A receipt.
    Entry(ChainEntry),
    /// A stub left by `git receipt retain`.
    Stub(Box<StubEntry>),
}

impl ChainItem {
    /// The chain commit.
    pub fn commit(&self) -> ObjectId {
        match self {
            ChainItem::Entry(e) => e.commit,
            ChainItem::Stub(s) => s.commit,
        }
    }

    /// Its parent chain commit, if any.
    pub fn parent(&self) -> Option<ObjectId> {
        match self {
            ChainItem::Entry(e) => e.parent,
            ChainItem::Stub(s) => s.parent,
        }
    }

    /// The receipt id it holds or names, and its index.
    pub fn id_index(&self) -> (&str, u64) {
        match self {
            ChainItem::Entry(e) => (e.receipt.id(), e.receipt.body().chain.index),
            ChainItem::Stub(s) => (&s.stub.id, s.stub.index),
        }
    }
}

/// The ref name of a writer's chain.
pub fn chain_ref(writer: &str) -> String {
    format!("{CHAIN_PREFIX}{writer}")
}

/// A receipt just written.
#[derive(Debug)]
pub struct Appended {
    /// The receipt.
    pub receipt: Receipt<Verified>,
    /// Its chain commit.
    pub commit: ObjectId,
}

/// An entry built on a tip: the tip, the receipt, its chain commit and the
/// objects written for it.
type Built = (Option<ObjectId>, Receipt<Verified>, ObjectId, Vec<Written>);

/// How long the last look of an append waits for its chain ref's lock, which
/// other writers hold for a moment while they update it.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Store {
    /// Every writer with a chain here, with its tip, sorted by writer id.
    pub fn writers(&self) -> Result<Vec<(String, ObjectId)>, StoreError> {
        self.tips_under(CHAIN_PREFIX)
    }

    /// Whether any ref under `refs/receipts/` is a writer's chain, from the first
    /// one found rather than a listing: a command whose checks read missing asks
    /// it to say that a clone has no receipts at all, and with ten thousand loose
    /// refs a listing cost that gate as much as its decision. Refs that cannot be
    /// a writer's are passed over, as [`Store::writers`] passes over them.
    pub fn has_writers(&self) -> Result<bool, StoreError> {
        // overrides and namespaces are the listing's to apply
        if self.overrides.is_empty()
            && self.repo.refs.namespace.is_none()
            && self.first_under(CHAIN_PREFIX).is_some()
        {
            return Ok(true);
        }
        // none plainly is: the listing's exact answer (and its notices)
        Ok(!self.writers()?.is_empty())
    }

    /// Every writer's chain tip as the refs name it, from one listing, no object
    /// looked up (a tip here may be missing or no commit): for a caller that
    /// only compares tips with others it has, as a fetch compares each
    /// writer's with the one it fetched. `None` when refs are overridden or
    /// anything about them is unusual: ask [`Store::chain_tip`] of each.
    pub fn listed_chain_tips(&self) -> Option<std::collections::HashMap<String, ObjectId>> {
        if !self.overrides.is_empty() {
            return None;
        }
        Some(
            self.scan_packed_refs(CHAIN_PREFIX)?
                .into_iter()
                .map(|(mut name, tip)| {
                    name.drain(..CHAIN_PREFIX.len());
                    (name, tip)
                })
                .collect(),
        )
    }

    /// The tip of a writer's chain, if it has one.
    ///
    /// A tip whose own objects (commit, tree, blobs, parent) are not all on
    /// disk, which a concurrent prune leaves, is put back on the newest whole
    /// entry of the chain's reflog, with a notice (see `concurrent_gc`).
    pub fn chain_tip(&self, writer: &str) -> Result<Option<ObjectId>, StoreError> {
        let refname = chain_ref(writer);
        let tip = self.ref_value(&refname)?;
        if let Some(t) = tip
            && !self.overrides.contains_key(&refname)
            && !self.tip_is_whole(t)
            && let Some(restored) = self.restore_from_reflog(&refname, t)
        {
            return Ok(Some(restored));
        }
        Ok(tip)
    }

    /// Read the receipt held by one chain commit, checking the commit's shape.
    /// A retention stub is an error here: it holds no receipt.
    pub fn chain_entry(&self, writer: &str, commit: ObjectId) -> Result<ChainEntry, StoreError> {
        match self.chain_item(writer, commit)? {
            ChainItem::Entry(e) => Ok(e),
            ChainItem::Stub(s) => Err(StoreError::CorruptChain {
                writer: writer.to_owned(),
                commit,
                reason: format!(
                    "is a retention stub of receipt {} (#{}, dropped {}), not a receipt",
                    s.stub.id, s.stub.index, s.stub.dropped_at
                ),
            }),
        }
    }

    /// Read one chain commit: a receipt, or the stub a retention left in its place.
    pub fn chain_item(&self, writer: &str, commit: ObjectId) -> Result<ChainItem, StoreError> {
        self.chain_item_by(&WalkReader::usual(), writer, commit)
    }

    /// [`Store::chain_item`], its commit and receipt read by `reader`.
    fn chain_item_by(
        &self,
        reader: &WalkReader,
        writer: &str,
        commit: ObjectId,
    ) -> Result<ChainItem, StoreError> {
        let corrupt = |reason: String| StoreError::CorruptChain {
            writer: writer.to_owned(),
            commit,
            reason,
        };
        let ChainCommit { tree, parents } = reader
            .commit(&self.repo, commit)
            .map_err(|e| corrupt(format!("not a readable commit: {e}")))?;
        if parents.len() > 1 {
            return Err(corrupt(format!(
                "has {} parents; a chain is linear",
                parents.len()
            )));
        }
        let tree = tree.map_err(|e| corrupt(format!("tree unreadable: {e}")))?;
        let bytes = match reader.receipt_file(&self.repo, tree) {
            Ok(bytes) => bytes,
            Err(ReceiptFileProblem::Shape(reason)) => return Err(corrupt(reason)),
            Err(ReceiptFileProblem::Stub(read)) => {
                return match *read {
                    Err(reason) => Err(corrupt(reason)),
                    Ok(stub) => Ok(ChainItem::Stub(Box::new(StubEntry {
                        commit,
                        parent: parents.first().copied(),
                        stub,
                    }))),
                };
            }
            Err(ReceiptFileProblem::Oversized(size)) => {
                return Err(StoreError::BadReceipt {
                    writer: writer.to_owned(),
                    commit,
                    source: ReceiptError::Oversized {
                        size,
                        max: MAX_RECEIPT_BYTES,
                    },
                });
            }
        };
        let receipt = Receipt::parse(&bytes).map_err(|source| StoreError::BadReceipt {
            writer: writer.to_owned(),
            commit,
            source,
        })?;
        Ok(ChainItem::Entry(ChainEntry {
            commit,
            parent: parents.first().copied(),
            receipt,
        }))
    }

    /// Walk a chain from `tip` towards its root, newest first, calling `visit` for each
    /// receipt until it returns `false`; retention stubs are passed over (see
    /// [`Store::walk_chain_items`]). In a shallow clone the walk ends at a
    /// commit `.git/shallow` lists whose parent is not here (a chain fetched
    /// `--since` a checkpoint starts there).
    pub fn walk_chain(
        &self,
        writer: &str,
        tip: ObjectId,
        mut visit: impl FnMut(ChainEntry) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        self.walk_chain_items(writer, tip, |item| match item {
            ChainItem::Entry(e) => visit(e),
            ChainItem::Stub(_) => Ok(true),
        })
    }

    /// [`Store::walk_chain`], stubs included.
    pub fn walk_chain_items(
        &self,
        writer: &str,
        tip: ObjectId,
        visit: impl FnMut(ChainItem) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        self.walk_chain_items_by(&WalkReader::usual(), writer, tip, visit)
    }

    /// What the notes planner takes of each receipt of `writer`'s chain from
    /// `tip` towards its root, newest first, until `visit` returns `false`:
    /// what admission remembered of an entry ([`super::entry::Derived`]), else
    /// read by `reader` as [`Store::walk_chain_items`] reads it; retention
    /// stubs passed over.
    pub(crate) fn walk_note_sources(
        &self,
        reader: &WalkReader,
        writer: &str,
        tip: ObjectId,
        mut visit: impl FnMut(super::entry::NoteSource) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let read = |commit| match super::entry::recalled_derived(&commit, writer) {
            Some(d) => Ok((d.note.parent, Some(d.note.clone()))),
            None => {
                let item = self.chain_item_by(reader, writer, commit)?;
                let parent = item.parent();
                Ok(match item {
                    ChainItem::Entry(e) => (
                        parent,
                        Some(super::entry::NoteSource::of(e.commit, e.parent, &e.receipt)),
                    ),
                    ChainItem::Stub(_) => (parent, None),
                })
            }
        };
        self.walk_commits_by(reader, tip, read, |source| match source {
            Some(s) => visit(s),
            None => Ok(true),
        })
    }

    /// [`Store::walk_chain_items`], each commit and receipt read by `reader`.
    fn walk_chain_items_by(
        &self,
        reader: &WalkReader,
        writer: &str,
        tip: ObjectId,
        visit: impl FnMut(ChainItem) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let read = |commit| {
            let item = self.chain_item_by(reader, writer, commit)?;
            Ok((item.parent(), item))
        };
        self.walk_commits_by(reader, tip, read, visit)
    }

    /// Walk a chain's commits from `tip` towards its root: `read` says what a
    /// commit is and its parent, `visit` takes it until it returns `false`.
    fn walk_commits_by<T>(
        &self,
        reader: &WalkReader,
        tip: ObjectId,
        mut read: impl FnMut(ObjectId) -> Result<(Option<ObjectId>, T), StoreError>,
        mut visit: impl FnMut(T) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let mut next = Some(tip);
        while let Some(commit) = next {
            let (parent, item) = read(commit)?;
            next = parent;
            // the edge of a chain taken from a signed checkpoint (`fetch
            // --since`): the commits below are not in this clone, by design
            if next.is_some_and(|p| !reader.has(&self.repo, p)) && self.is_shallow_commit(commit)? {
                next = None;
            }
            if !visit(item)? {
                break;
            }
        }
        Ok(())
    }

    /// Every commit of a chain from `tip`, receipts and retention stubs,
    /// oldest first (from the root, or from a shallow edge).
    pub fn chain_items(&self, writer: &str, tip: ObjectId) -> Result<Vec<ChainItem>, StoreError> {
        let mut items = Vec::new();
        self.walk_chain_items(writer, tip, |i| {
            items.push(i);
            Ok(true)
        })?;
        items.reverse();
        Ok(items)
    }

    /// Every receipt of a chain, newest first.
    pub fn read_chain(&self, writer: &str) -> Result<Vec<ChainEntry>, StoreError> {
        let mut out = Vec::new();
        if let Some(tip) = self.chain_tip(writer)? {
            self.walk_chain(writer, tip, |e| {
                out.push(e);
                Ok(true)
            })?;
        }
        Ok(out)
    }

    /// Whether `writer` may sign now: the clock reads no time before 1970 and none
    /// before the date of the chain's last entry. [`Store::append`] decides again
    /// when it signs; this lets a command refuse before it runs anything.
    pub fn check_signing_clock(&self, writer: &str) -> Result<(), StoreError> {
        match self.chain_tip(writer)? {
            None => crate::clock::signing_now_ms().map(drop).map_err(Into::into),
            Some(tip) => self.clock_may_follow(writer, &self.chain_entry(writer, tip)?),
        }
    }

    /// Whether the clock allows signing an entry after `previous` on `writer`'s
    /// chain. The clock at signing is compared, not the new entry's date: a check
    /// that started before another run of the same chain finished (two at once)
    /// comes after it in the chain, and the chain order says which is newer.
    fn clock_may_follow(&self, writer: &str, previous: &ChainEntry) -> Result<(), StoreError> {
        let now = crate::clock::signing_now_ms()?;
        crate::clock::may_follow(
            writer,
            now,
            (previous.receipt.id(), previous.receipt.body().time()),
            self.max_skew_ms(),
        )?;
        Ok(())
    }

    /// Append a receipt to `writer`'s chain. `make_body(index, prev)` builds the body
    /// for a given position; it is called again if another process appended first.
    /// `logs` are the blobs kept beside the receipt under their log refs (see the
    /// `logs` module), never in the chain: the full output and, for a large test
    /// list (format v4), the list. Refused ([`StoreError::Clock`]),
    /// with nothing written, when the clock reads a time before 1970 or before the
    /// previous entry's date ([`Body::time`]).
    pub fn append(
        &self,
        writer: &str,
        key: &SigningKey,
        logs: &[(ObjectId, &[u8])],
        mut make_body: impl FnMut(u64, Option<String>) -> Body,
    ) -> Result<Appended, StoreError> {
        debug_assert!(is_valid_writer_id(writer));
        let refname = chain_ref(writer);
        // The entry built for a tip is kept: while the tip does not move (the ref
        // is merely locked by another writer), retrying costs a ref read, not a
        // new signature and new objects.
        let mut built: Option<Built> = None;
        let mut retry = Retry::new();
        loop {
            let tip = self.retry_missing(|| self.chain_tip(writer))?;
            let (receipt, commit, written) = match built.take() {
                Some((t, r, c, w)) if t == tip => (r, c, w),
                _ => {
                    // a base a concurrent prune holed for a moment: see
                    // `retry_missing`
                    if let Some(t) = tip
                        && let Err(e) = self.own_base(writer, key, t)
                        && super::concurrent_gc::is_missing_object(&e)
                    {
                        self.retry_missing(|| self.own_base(writer, key, t))?;
                        continue;
                    }
                    // Build only on an entry of this chain that its writer signed:
                    // a tip that is not one (junk or a merge that a plain `git
                    // fetch` or a hand let in) is refused, naming the way back.
                    let base = match tip {
                        None => None,
                        Some(t) => self.own_base(writer, key, t)?,
                    };
                    let (index, prev) = match base {
                        None => {
                            crate::clock::signing_now_ms()?;
                            (0, None)
                        }
                        Some(t) => {
                            let e = self.chain_entry(writer, t)?;
                            self.clock_may_follow(writer, &e)?;
                            let b = e.receipt.body();
                            (b.chain.index + 1, Some(e.receipt.id().to_owned()))
                        }
                    };
                    let body = make_body(index, prev);
                    let receipt =
                        Receipt::sign(body, key).map_err(|source| StoreError::BadReceipt {
                            writer: writer.to_owned(),
                            commit: ObjectId::null(self.repo.object_hash()),
                            source,
                        })?;
                    let (commit, written) =
                        self.write_chain_commit(&receipt, key.public(), None, base, "")?;
                    (receipt, commit, written)
                }
            };
            crash_point("objects");
            let log_message = format!("git-receipt: append {}", receipt.id());
            // logged: gc keeps every tip a reflog names, so a prune that races
            // this write can cut at most the entry in flight, never the chain below
            match self.move_logged_ref(&refname, tip, commit, &log_message) {
                Ok(()) => {
                    let updated_at = std::time::SystemTime::now();
                    crash_point("chain");
                    // A prune that listed the refs before this update deletes the new
                    // objects (git's documented race): write them again, or put the
                    // tip back and say so.
                    if let Err(e) = self.keep_written(&refname, &written) {
                        let back = self.put_ref_back(
                            &refname,
                            commit,
                            tip,
                            "git-receipt: put back (objects pruned)",
                        );
                        return Err(e.after_put_back(back));
                    }
                    // This process may have read the tip from a pack that a repack
                    // deleted since: an entry on a tip gone from disk is taken back
                    // and built again on what the chain's reflog still holds.
                    if let Some(t) = tip
                        && !self.missing_on_disk(&[t]).is_empty()
                    {
                        let back = self.put_ref_back(
                            &refname,
                            commit,
                            tip,
                            "git-receipt: put back (its parent was pruned)",
                        );
                        // whole, for the reflog entry that names it
                        let _ = self.keep_written(&refname, &written);
                        // Not put back: another writer moved the ref above the
                        // entry, which may stay in the chain; appending it again
                        // would store it twice.
                        if !back || !retry.again() {
                            return Err(StoreError::ObjectsPruned {
                                refname: refname.clone(),
                                what: format!("the chain's tip {t}, below the new entry"),
                                attempts: retry.attempts(),
                                put_back: back,
                            });
                        }
                        continue;
                    }
                    // The log ref, like the notes, is completed by the next append or
                    // `reindex` if this fails: the chain already holds the receipt.
                    for &(log, bytes) in logs {
                        if let Err(e) = self.keep_log(writer, log, bytes) {
                            self.notice(Notice::warning(
                                "log-ref-not-written",
                                format!(
                                    "receipt {} is stored, but its log ref was not written: {e}",
                                    receipt.id()
                                ),
                            ));
                        }
                    }
                    // Notes are a derived index; failing to update them loses nothing
                    // (the next append or `reindex` completes them), so report but succeed.
                    // After `defer_notes`, one later update covers them all.
                    let deferred = self
                        .notes_deferred
                        .load(std::sync::atomic::Ordering::Relaxed);
                    if !deferred && let Err(e) = self.retry_missing(|| self.index_notes(writer)) {
                        self.notice(Notice::warning(
                            "notes-not-updated",
                            format!(
                                "receipt {} is stored, but its notes were not updated: {e}",
                                receipt.id()
                            ),
                        ));
                    }
                    crash_point("notes");
                    // once more, when no gc that may have listed the refs before
                    // the update is still running (its prune may have been
                    // sweeping all this while): what it deleted is written again
                    // now, for good
                    self.wait_for_gc_started_before(updated_at);
                    // and the chain still holds it: a reader that met its objects
                    // missing may have put the ref back below it meanwhile. Both
                    // looks are taken under the ref's lock, under which a reader
                    // decides a restore: once they pass, no reader takes it off.
                    // the log blob too, which its ref alone keeps from the next prune
                    let mut kept = written.clone();
                    for &(log, bytes) in logs {
                        kept.push(Written::blob(log, bytes, "the output log"));
                    }
                    let held = match self.confirm_entry(&refname, commit, &kept) {
                        Ok(held) => held,
                        Err(e) => {
                            let back = self.put_ref_back(
                                &refname,
                                commit,
                                tip,
                                "git-receipt: put back (objects pruned)",
                            );
                            return Err(e.after_put_back(back));
                        }
                    };
                    if !held {
                        // write it again on the chain as it now is (its objects
                        // stay whole for the reflog entry that names them)
                        let _ = self.keep_written(&refname, &written);
                        if retry.again() {
                            continue;
                        }
                        return Err(StoreError::ObjectsPruned {
                            refname: refname.clone(),
                            what: format!(
                                "the chain commit {commit}, which another process then took off the chain"
                            ),
                            attempts: 1,
                            // another process took it off: not in the chain
                            put_back: true,
                        });
                    }
                    return Ok(Appended { receipt, commit });
                }
                Err(e) => {
                    self.clear_stale_lock(&refname);
                    // Lost the race (or the ref was locked by a concurrent writer):
                    // back off a little, with jitter, and rebuild if the tip moved.
                    if !retry.again() {
                        return Err(self.gave_up(&refname, &retry, e));
                    }
                    built = Some((tip, receipt, commit, written));
                }
            }
        }
    }
}

impl Store {
    /// The last look of an append at its entry `commit`, under `refname`'s
    /// lock: its objects are all on disk (what a prune took is written again),
    /// and the ref names it or an entry above it. `Ok(false)` when a reader put
    /// the ref back below it; `Err` when its objects could not be kept.
    fn confirm_entry(
        &self,
        refname: &str,
        commit: ObjectId,
        written: &[Written],
    ) -> Result<bool, StoreError> {
        for _ in 0..4 {
            let look = self.holding_ref_lock(refname, LOCK_WAIT, || {
                self.keep_written(refname, written)?;
                self.ref_holds(refname, commit)
            });
            match look {
                Some(Err(e)) if super::concurrent_gc::is_missing_object(&e) => {
                    // a hole above the entry, which its writer is filling: not
                    // under the lock, which that writer needs
                    self.wait_for_gc_started_before(std::time::SystemTime::now());
                }
                Some(answer) => return answer,
                // other writers kept the lock: look again
                None => {}
            }
        }
        // the lock never came, or the hole stayed: the look without it, as a
        // reader that meets the hole restores the chain and says so
        self.keep_written(refname, written)?;
        Ok(self
            .retry_missing(|| self.ref_holds(refname, commit))
            .unwrap_or(false))
    }

    /// The entry of `writer`'s chain that a new receipt follows, given the chain's
    /// tip `tip`: the tip itself, which must be an entry signed by `key` that
    /// follows the entry below it (two reads and one signature, remembered). A tip
    /// that is not (junk or a merge that a plain `git fetch` or a hand let in) is
    /// refused, naming the last valid entry to go back to: a receipt never
    /// follows anything its writer did not sign.
    pub(crate) fn own_base(
        &self,
        writer: &str,
        key: &SigningKey,
        tip: ObjectId,
    ) -> Result<Option<ObjectId>, StoreError> {
        let known = super::admit::only_key(key.public());
        let Err(refusal) = super::admit::check_entry(&self.repo, writer, tip, &known) else {
            return Ok(Some(tip));
        };
        // A hole is no verdict on whose the chain is: the hint for a chain that
        // is not yours deletes it, which would lose every receipt in it.
        if refusal.reason.contains("could not be found") {
            return Err(StoreError::ChainHoled {
                writer: writer.to_owned(),
                commit: refusal.commit,
                reason: refusal.reason,
            });
        }
        let last_valid = self
            .admit(writer, tip, None, &known)
            .ok()
            .and_then(|a| a.valid_tip);
        Err(StoreError::NotYourTip {
            writer: writer.to_owned(),
            commit: refusal.commit,
            reason: refusal.reason,
            tip,
            last_valid,
        })
    }

    /// Write the objects of one chain entry: `receipt.json` (and, for a v1 receipt
    /// re-appended as it was, its `output.log`) in a tree, a commit on `parent`.
    /// `remark` is appended to the commit message. Returns the commit and the
    /// objects written, kept for [`Store::keep_written`] (the log is not among
    /// them: it was written before, and is the caller's).
    pub(crate) fn write_chain_commit(
        &self,
        receipt: &Receipt<Verified>,
        signer: &crate::sign::PublicKey,
        log: Option<ObjectId>,
        parent: Option<ObjectId>,
        remark: &str,
    ) -> Result<(ObjectId, Vec<Written>), StoreError> {
        let blob = self.put_kept_object(
            "receipt.json",
            gix::objs::Kind::Blob,
            receipt.bytes().to_vec(),
        )?;
        // The signer's public key travels with every entry, so that a server or
        // a reader can check the signature of a writer it does not trust yet
        // (docs/format.md, "Chain commits"); one blob per key, shared by its chain.
        let key_blob = self.put_kept_object(
            "signer.pub",
            gix::objs::Kind::Blob,
            super::admit::signer_file(signer).into_bytes(),
        )?;
        let mut entries = vec![
            Entry {
                mode: EntryKind::Blob.into(),
                filename: RECEIPT_FILE.into(),
                oid: blob.id,
            },
            Entry {
                mode: EntryKind::Blob.into(),
                filename: super::admit::SIGNER_FILE.into(),
                oid: key_blob.id,
            },
        ];
        if let Some(log) = log {
            entries.push(Entry {
                mode: EntryKind::Blob.into(),
                filename: LOG_FILE.into(),
                oid: log,
            });
        }
        // git orders tree entries by name
        entries.sort_by(|a, b| a.filename.cmp(&b.filename));
        let (kind, bytes) = encode(&gix::objs::Tree { entries });
        let tree = self.put_kept_object("a chain tree", kind, bytes)?;
        let b = receipt.body();
        // for people reading `git log` of the chain; the receipt decides. Not
        // its id (`git receipt log` and `show` print it): 64 hex digits that
        // do not compress were 8% of a receipt's packed bytes (issue 30)
        let mut message = format!("receipt: {} #{}\n", b.headline(), b.chain.index);
        if !remark.is_empty() {
            message.push('\n');
            message.push_str(remark);
        }
        let commit = self.put_tool_commit("a chain commit", tree.id, parent, message)?;
        Ok((commit.id, vec![blob, key_blob, tree, commit]))
    }
}

/// Sleep a short, jittered, growing time; jitter comes from the clock's nanoseconds
/// and the pid so racing processes do not retry in lockstep.
pub(crate) fn backoff(attempt: u32) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
        ^ std::process::id().wrapping_mul(2_654_435_761);
    let cap_us = 200u64 << attempt.min(6);
    std::thread::sleep(Duration::from_micros(50 + u64::from(nanos) % cap_us));
}

#[cfg(test)]
mod tests {
    use crate::freshness::rules::Scratch;
    use crate::store::CHAIN_PREFIX;

    fn writer(n: u8) -> String {
        format!("w{n}-{}", format!("{n:x}").repeat(32).get(..32).unwrap())
    }

    /// A chain's walk ends at the root, and at a commit `.git/shallow` lists
    /// whose parent is not here (a chain taken from a checkpoint); a parent
    /// missing below a commit that is not shallow is damage, an error, never
    /// a shorter chain; a shallow commit whose parent is here (a clone
    /// deepened since) is walked past.
    #[test]
    fn a_walk_ends_at_the_root_or_a_shallow_edge_and_a_missing_parent_is_an_error() {
        let mut s = Scratch::new();
        let chain = s.chain(10, &[0; 3]);
        let (e, w) = (chain.commits, chain.writer);
        assert_eq!(s.store.read_chain(&w).unwrap().len(), 3);
        let git_dir = s.dir.path().join(".git");
        // listed shallow with its parent here: walked past
        std::fs::write(git_dir.join("shallow"), format!("{}\n", e[1])).unwrap();
        s.reopen();
        assert!(s.store.is_shallow_commit(e[1]).unwrap());
        assert_eq!(s.store.read_chain(&w).unwrap().len(), 3);
        // the root's commit object gone
        s.git(&["repack", "-a", "-d", "-q"]);
        let gone = e[0].to_string();
        let mut objects = s.git(&[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ]);
        objects = objects
            .lines()
            .filter(|o| *o != gone)
            .map(|o| format!("{o}\n"))
            .collect();
        let pack = s.git_input(
            &["pack-objects", "-q", ".git/objects/pack/pack"],
            objects.as_bytes(),
        );
        for old in std::fs::read_dir(git_dir.join("objects/pack")).unwrap() {
            let p = old.unwrap().path();
            if !p.to_string_lossy().contains(pack.trim()) {
                std::fs::remove_file(p).unwrap();
            }
        }
        s.reopen();
        // shallow at e[1], its parent gone: the chain starts there
        assert_eq!(s.store.read_chain(&w).unwrap().len(), 2);
        // not shallow, its parent gone: an error
        std::fs::remove_file(git_dir.join("shallow")).unwrap();
        s.reopen();
        assert!(s.store.read_chain(&w).is_err());
    }

    /// A listing told which tips were checked before looks up no object for
    /// them (a tip whose object is gone stays listed), and still checks every
    /// other: a missing one is passed over, with a notice. The plain listing of
    /// tips (a fetch's) looks up none, and none at all with refs overridden.
    #[test]
    fn known_tips_are_listed_without_a_lookup_and_only_they() {
        let mut s = Scratch::new();
        let a = s.commit(&[("f", "1")], "one");
        let gone = gix::ObjectId::from_hex(b"00000000000000000000000000000000000000aa").unwrap();
        let (w1, w2, w3) = (writer(1), writer(2), writer(3));
        s.git(&["update-ref", &format!("{CHAIN_PREFIX}{w1}"), &a.to_string()]);
        // git will not point a ref at a missing object: write the file as a
        // prune would leave it
        for w in [&w2, &w3] {
            let path = s.dir.path().join(".git").join(CHAIN_PREFIX).join(w);
            std::fs::write(path, format!("{gone}\n")).unwrap();
        }
        for state in ["loose", "packed"] {
            if state == "packed" {
                s.git(&["pack-refs", "--all"]);
            }
            s.reopen();
            let listed = s
                .store
                .tips_under_known(CHAIN_PREFIX, &|w, tip| w == w2 && tip == gone)
                .unwrap();
            assert_eq!(
                listed,
                vec![(w1.clone(), a), (w2.clone(), gone)],
                "{state}: w2 is known, w3 is checked and missing"
            );
            let plain = s.store.writers().unwrap();
            assert_eq!(plain, vec![(w1.clone(), a)], "{state}: every tip checked");
            let tips = s.store.listed_chain_tips().unwrap();
            assert_eq!(tips.len(), 3, "{state}: {tips:?}");
            assert_eq!((tips[&w1], tips[&w2], tips[&w3]), (a, gone, gone));
            s.store.override_ref(&format!("{CHAIN_PREFIX}{w1}"), None);
            assert!(s.store.listed_chain_tips().is_none(), "{state}: overridden");
        }
    }

    /// The index's currency check and "are there any writers at all" read loose
    /// refs once each; their answers must be those of a full listing in every
    /// state refs are in: loose (after a fetch), packed (after gc), and both.
    #[test]
    fn writer_refs_read_once_give_the_listings_answers_loose_packed_and_mixed() {
        let mut s = Scratch::new();
        let (a, b) = (
            s.commit(&[("f", "1")], "one"),
            s.commit(&[("f", "2")], "two"),
        );
        assert!(!s.store.has_writers().unwrap(), "no refs: no writers");
        // a ref under refs/receipts/ that no writer id names is no writer
        s.git(&["update-ref", "refs/receipts/junk", &a.to_string()]);
        s.reopen();
        assert!(!s.store.has_writers().unwrap(), "junk is no writer");
        s.git(&["update-ref", "-d", "refs/receipts/junk"]);
        let ws: Vec<String> = (1..=3).map(writer).collect();
        for w in &ws {
            s.git(&["update-ref", &format!("{CHAIN_PREFIX}{w}"), &a.to_string()]);
        }
        let same = |s: &Scratch, tips: &[(&str, gix::ObjectId)]| {
            s.store
                .tips_unchanged(CHAIN_PREFIX, tips.iter().map(|(w, t)| (*w, *t)))
        };
        let all_a: Vec<(&str, gix::ObjectId)> = ws.iter().map(|w| (w.as_str(), a)).collect();
        for state in ["loose", "packed"] {
            if state == "packed" {
                s.git(&["pack-refs", "--all"]);
            }
            s.reopen();
            assert!(s.store.has_writers().unwrap(), "{state}");
            assert!(same(&s, &all_a), "{state}: the same tips");
            assert_eq!(s.store.writers().unwrap().len(), 3, "{state}");
            let mut moved = all_a.clone();
            moved[1].1 = b;
            assert!(!same(&s, &moved), "{state}: a tip that moved");
            assert!(
                !same(&s, &all_a[..2]),
                "{state}: a writer the index does not know"
            );
            let mut more = all_a.clone();
            more.push(("w9-99999999999999999999999999999999", a));
            assert!(
                !same(&s, &more),
                "{state}: a writer the index knows is gone"
            );
        }
        // mixed: one writer's newest loose over its packed line
        s.git(&[
            "update-ref",
            &format!("{CHAIN_PREFIX}{}", ws[1]),
            &b.to_string(),
        ]);
        s.reopen();
        let mut now = all_a.clone();
        now[1].1 = b;
        assert!(same(&s, &now), "the loose ref wins over the packed one");
        assert!(!same(&s, &all_a), "the packed line is not the tip");
        let listed: Vec<(String, gix::ObjectId)> = s.store.writers().unwrap();
        assert_eq!(
            listed,
            now.iter()
                .map(|(w, t)| (w.to_string(), *t))
                .collect::<Vec<_>>()
        );
    }
}
