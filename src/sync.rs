//! Receipts travel: fetch (stage, verify, fast-forward) and push (atomic, with a
//! lease, re-appending on divergence).
//!
//! Other writers never conflict: each writer owns its refs. The only conflict is
//! one key writing on two machines (the same writer id); then `push` fetches the
//! remote chain, re-appends this clone's unpushed receipts on top of it (re-signed,
//! with new index and prev; but for those whose result the remote's new receipts
//! hold already, see [`crate::idempotency`]), and retries, a bounded number of
//! times.

use std::collections::BTreeMap;

use gix::ObjectId;

use crate::receipt::{writer_id, writer_matches_key};
use crate::sign::SigningKey;
use crate::store::chain::chain_ref;
use crate::store::notes::{NotesUpdate, notes_ref};
use crate::store::remote::{Cut, Relation};
use crate::store::{Store, StoreError};
use crate::trust::TrustSet;

/// How often `push` re-fetches and retries after losing a race.
pub const PUSH_ATTEMPTS: u32 = 20;

/// What happened to one writer's chain during a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchOutcome {
    /// A chain this clone did not have, with its receipt count.
    Added(u64),
    /// Fast-forwarded by this many receipts.
    Updated(u64),
    /// Nothing new.
    UpToDate,
    /// The local chain has receipts the remote lacks (push them).
    LocalAhead,
    /// Neither contains the other; the local chain was kept.
    Diverged,
    /// The fetched chain failed verification and was not taken.
    Rejected(String),
    /// The fetched chain's first `taken` new entries were taken; the commit above
    /// them breaks a rule, so it and everything above it were not.
    Partial {
        /// Entries taken.
        taken: u64,
        /// Why the rest was refused.
        refused: String,
    },
    /// The remote rewrote the chain with retention stubs (`git receipt retain`
    /// on the server), each standing for a receipt that retention drops here
    /// too; the local chain now is the remote's (with any entries only this
    /// clone had written again on top).
    Retained {
        /// Receipts here that are stubs now.
        dropped: u64,
        /// Entries the remote had above the ones here.
        taken: u64,
        /// Entries only this clone had, written again on the remote's tip.
        kept_local: u64,
    },
    /// The local chain's top held commits that are not entries of the chain
    /// (junk that came by another way); the remote's valid chain replaced them.
    Repaired {
        /// Entries taken.
        taken: u64,
        /// What was wrong with what was replaced.
        replaced: String,
    },
}

/// Fetch every writer's chain from `remote`, check every new entry against the
/// rules of [`crate::store::admit`] (signatures under the key each entry carries,
/// or a trusted key for older entries that carry none), and fast-forward local
/// refs to the highest valid entry. Never overwrites a local chain that is ahead
/// or holds valid entries the remote lacks; a local top that is not entries of the
/// chain (junk that came another way) gives way to the remote's valid chain.
pub fn fetch(
    store: &Store,
    remote: &str,
    trust: &TrustSet,
) -> Result<BTreeMap<String, FetchOutcome>, StoreError> {
    let (chains, _) = store.fetch_staged(remote, None)?;
    take_fetched(store, &chains, trust, &BTreeMap::new(), BTreeMap::new())
}

/// [`fetch`], taking too the rest of every chain a shallow fetch (`fetch
/// --since`, or `git fetch --depth`) cut here: the entries below the cut come
/// with a fetch at [`GIT_MAX_DEPTH`], each writer's notes are built again from
/// its whole chain, and the receipt index (stale once the edge moved) is left
/// current, as a fetch leaves it. Nothing below a cut decides anything until a
/// reader checks it, as every entry a reader counts is checked. Also whether
/// any chain was cut.
pub fn fetch_unshallow(
    store: &Store,
    remote: &str,
    trust: &TrustSet,
) -> Result<(BTreeMap<String, FetchOutcome>, bool), StoreError> {
    let cut = store.chains_cut();
    let (chains, _) = store.fetch_staged_whole(remote, cut)?;
    let report = take_fetched(store, &chains, trust, &BTreeMap::new(), BTreeMap::new())?;
    if cut {
        store.reindex_notes_of(&store.writers()?)?;
        leave_index_current(store, "the rest of the chains is fetched");
    }
    Ok((report, cut))
}

/// Bring the receipt index up to date after a fetch that moved chains, so
/// that the first reader after it (a hook, a CI job in a fresh clone) is not
/// the one that indexes them all. The index is a cache: a failure loses
/// nothing, the next reader does it, and a notice says so after `what`.
fn leave_index_current(store: &Store, what: &str) {
    if let Err(e) = store.receipt_index() {
        store.notice(crate::notice::Notice::warning(
            "index-not-updated",
            format!("{what}, but the receipt index was not brought up to date: {e}; the next command that reads it does"),
        ));
    }
}

/// Admit the staged chain tips `chains` (writer id to fetched tip) entry by
/// entry and fast-forward the local chains, as [`fetch`] describes. A writer in
/// `bases` that this clone does not have yet is taken from that entry up (the
/// tip a signed checkpoint recorded, which `fetch --since` fetched down to):
/// the chain must descend from it, and only the entries above it are checked.
///
/// `early` holds admissions already made (writer to the tip and base they
/// were made for, and the admission): `fetch --since` admits one depth
/// group's chains while git fetches the next. One is used only for exactly
/// that tip and base.
fn take_fetched(
    store: &Store,
    chains: &BTreeMap<String, ObjectId>,
    trust: &TrustSet,
    bases: &BTreeMap<String, ObjectId>,
    mut early: BTreeMap<String, Early>,
) -> Result<BTreeMap<String, FetchOutcome>, StoreError> {
    let known = |fp: &str| trust.lookup(fp).map(|t| t.key.clone());
    let mut report = BTreeMap::new();
    // the receipts admitted here are read again for their notes and the
    // index: read once (`benches/year.rs`)
    let _recall = crate::store::Recalling::start();
    // the local tips from one listing: a chain whose tip here is the one just
    // fetched has nothing to admit, and git checked that the fetched tip's
    // objects are all here (a prune that took them is git's to repair, and
    // the fetch did); asking each of 10,000 writers' refs and objects
    // separately cost a fetch of nothing new more than git's own fetch
    let listed = store.listed_chain_tips();
    // the writers whose notes to bring up to date, and whether from scratch
    // the chains to admit, checked together (`Store::admit_many`): writer,
    // their tip, where admission starts, and how what it admits is taken
    let mut jobs: Vec<(&str, ObjectId, Option<ObjectId>, Taking)> = Vec::new();
    for (writer, theirs) in chains {
        if listed
            .as_ref()
            .is_some_and(|l| l.get(writer.as_str()) == Some(theirs))
        {
            report.insert(writer.clone(), FetchOutcome::UpToDate);
            continue;
        }
        // a remote ref that names no commit (an annotated tag of a chain's tip,
        // say) is that chain's problem, never the whole fetch's
        if let Some(why) = not_a_chain_tip(store, writer, *theirs) {
            report.insert(writer.clone(), FetchOutcome::Rejected(why));
            continue;
        }
        let ours = store.chain_tip(writer)?;
        let base = bases.get(writer).copied().filter(|_| ours.is_none());
        let outcome = match store.relation(ours, *theirs)? {
            Relation::New if let Some(base) = base => {
                match not_from_checkpoint(store, writer, *theirs, base)? {
                    Some(rejected) => rejected,
                    None => {
                        jobs.push((writer, *theirs, Some(base), Taking::FromCheckpoint));
                        continue;
                    }
                }
            }
            Relation::Same => FetchOutcome::UpToDate,
            Relation::Ahead => FetchOutcome::LocalAhead,
            rel @ (Relation::New | Relation::Behind) => {
                jobs.push((writer, *theirs, ours, Taking::Above(ours, rel)));
                continue;
            }
            Relation::Diverged
                if let Some(outcome) = retained(
                    store,
                    writer,
                    ours.expect("a diverged chain exists here"),
                    *theirs,
                    &known,
                )? =>
            {
                outcome
            }
            Relation::Diverged => {
                let ours = ours.expect("a diverged chain exists here");
                let base = store.merge_base_of(ours, *theirs)?;
                let local = store.admit(writer, ours, base, &known)?;
                match &local.refusal {
                    // what only we have holds valid entries: keep it
                    _ if local.admitted > 0 => FetchOutcome::Diverged,
                    None => FetchOutcome::Diverged,
                    Some(bad) => {
                        let a = store.admit(writer, *theirs, base, &known)?;
                        if a.admitted == 0 {
                            FetchOutcome::Rejected(match &a.refusal {
                                Some(r) => r.to_string(),
                                None => "nothing new".into(),
                            })
                        } else {
                            take(store, writer, Some(ours), &a)?;
                            FetchOutcome::Repaired {
                                taken: a.admitted,
                                replaced: bad.to_string(),
                            }
                        }
                    }
                }
            }
        };
        report.insert(writer.clone(), outcome);
    }
    // what was admitted early, for exactly this tip and base; the rest now
    let mut admitted: Vec<Option<crate::store::admit::Admission>> = jobs
        .iter()
        .map(|&(w, theirs, from, _)| {
            early
                .remove(w)
                .filter(|e| (e.tip, e.base) == (theirs, from))
                .map(|e| e.admission)
        })
        .collect();
    let rest: Vec<(&str, ObjectId, Option<ObjectId>)> = jobs
        .iter()
        .zip(&admitted)
        .filter(|(_, a)| a.is_none())
        .map(|(&(w, theirs, from, _), _)| (w, theirs, from))
        .collect();
    let mut now = store.admit_many(&rest, &known)?.into_iter();
    for a in &mut admitted {
        if a.is_none() {
            *a = now.next();
        }
    }
    let admitted = admitted.into_iter().map(|a| a.expect("every job admitted"));
    // the chains' new tips, moved in one transaction (a ref at a time took a
    // tenth of a fetch from a hundred writers)
    let mut moves: Vec<(String, Option<ObjectId>, ObjectId, &str)> = Vec::new();
    let mut taken = Vec::with_capacity(jobs.len());
    for ((writer, _, from, taking), a) in jobs.into_iter().zip(admitted) {
        let outcome = match taking {
            Taking::FromCheckpoint => {
                let base = from.expect("a checkpoint's tip");
                let valid = a.valid_tip_or(Some(base)).expect("a base is given");
                moves.push((
                    chain_ref(writer),
                    None,
                    valid,
                    "git-receipt: fetch --since (verified entries above a signed checkpoint)",
                ));
                from_checkpoint(&a)
            }
            Taking::Above(ours, rel) => {
                if let Some(valid) = a.valid_tip
                    && Some(valid) != ours
                {
                    moves.push((
                        chain_ref(writer),
                        ours,
                        valid,
                        "git-receipt: fetch (verified entries)",
                    ));
                }
                match (&a.refusal, rel) {
                    (Some(r), _) if a.admitted == 0 => FetchOutcome::Rejected(r.to_string()),
                    (Some(r), _) => FetchOutcome::Partial {
                        taken: a.admitted,
                        refused: r.to_string(),
                    },
                    (None, Relation::New) => FetchOutcome::Added(a.admitted),
                    (None, _) => FetchOutcome::Updated(a.admitted),
                }
            }
        };
        taken.push((writer, outcome));
    }
    store.set_refs(
        &moves
            .iter()
            .map(|(r, old, new, why)| (r.as_str(), *old, *new, *why))
            .collect::<Vec<_>>(),
    )?;
    for (writer, outcome) in taken {
        report.insert(writer.to_owned(), outcome);
    }
    // Notes are a display derived from the chain: build them here from what
    // was verified, rather than take another clone's. A chain that did not
    // move keeps the notes it has (whoever moved it last wrote them, and
    // `reindex` rebuilds any that went): looking at every writer's notes
    // on every fetch cost a fetch of nothing new from 10,000 writers a
    // second.
    let notes: Vec<(String, NotesUpdate)> = report
        .iter()
        .filter_map(|(writer, outcome)| {
            if matches!(outcome, FetchOutcome::Retained { .. }) {
                // the notes of the receipts that went go with the old history
                Some((writer.clone(), NotesUpdate::Restart))
            } else {
                // a diverged chain is kept as it was here, notes and all (its
                // tip may be junk the remote's entries do not replace, which
                // no notes walk can read)
                outcome
                    .took_entries()
                    .then(|| (writer.clone(), NotesUpdate::Extend))
            }
        })
        .collect();
    // every writer's notes in one pack, not a loose file per object: a fetch
    // of a year's receipts wrote two per receipt, and creating them was most
    // of what it spent (`benches/year.rs`). The index key first: the receipt
    // index this fetch leaves behind needs it anyway, and with it the notes
    // built here are recorded as whole (`store::whole_notes`), which a first
    // fetch in a fresh HOME (a CI job) would otherwise not do
    let _ = crate::store::index::mac::user_key();
    store.index_notes_of(&notes)?;
    // the entries were just read and checked: the index takes them now
    if report.values().any(FetchOutcome::took_entries) {
        leave_index_current(store, "the receipts are fetched");
    }
    Ok(report)
}

/// What happened to one signer's checkpoint chain during a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointOutcome {
    /// New checkpoints taken (the first of a signer, or on top of the local ones).
    Taken(u64),
    /// The local chain has checkpoints the remote lacks: for your own chain,
    /// unpushed ones; for another signer's, the remote holds back (rolled back)
    /// checkpoints this clone accepted before. The local chain is kept.
    LocalAhead,
    /// The remote's chain does not contain the local one: rewritten or rolled
    /// back. The local chain is kept.
    Diverged,
    /// The first `taken` new checkpoints were taken; the one above them breaks
    /// a rule (forged or damaged), so it and everything above it were not.
    Refused {
        /// Checkpoints taken below it.
        taken: u64,
        /// Why, in words.
        reason: String,
    },
}

/// After [`fetch`]: check every signer's staged checkpoint chain above what this
/// clone accepted before ([`crate::checkpoint::read_chain_above`]) and
/// fast-forward the local `refs/receipt-checkpoints/<signer>` to its highest
/// valid entry. A local chain is never moved back or sideways: that is how a
/// rollback is caught. Whether a signer is trusted is decided where a
/// checkpoint is used, not here. Signers with nothing new are left out.
pub fn take_checkpoints(
    store: &Store,
    remote: &str,
) -> Result<BTreeMap<String, CheckpointOutcome>, StoreError> {
    use crate::store::checkpoints::checkpoint_ref;
    let mut out = BTreeMap::new();
    for (signer, theirs) in store.staged_checkpoints(remote)? {
        let refname = checkpoint_ref(&signer);
        let ours = store.ref_value(&refname)?;
        let outcome = match store.relation(ours, theirs)? {
            Relation::Same => continue,
            Relation::Ahead => CheckpointOutcome::LocalAhead,
            Relation::Diverged => CheckpointOutcome::Diverged,
            Relation::New | Relation::Behind => {
                let chain = crate::checkpoint::read_chain_above(store, &signer, theirs, ours)?;
                let valid = chain.entries.last().map(|c| c.commit);
                let taken = (chain.entries.len() as u64).saturating_sub(u64::from(ours.is_some()));
                if let Some(valid) = valid
                    && Some(valid) != ours
                {
                    store.set_ref(
                        &refname,
                        ours,
                        valid,
                        "git-receipt: fetch (verified checkpoints)",
                    )?;
                }
                match chain.broken {
                    Some(b) => CheckpointOutcome::Refused {
                        taken,
                        reason: b.to_string(),
                    },
                    None => CheckpointOutcome::Taken(taken),
                }
            }
        };
        out.insert(signer, outcome);
    }
    Ok(out)
}

/// How a fetched chain's admission is taken (see [`take_fetched`]).
#[derive(Clone, Copy)]
enum Taking {
    /// A chain new here, from the tip a signed checkpoint recorded up
    /// ([`from_checkpoint`]).
    FromCheckpoint,
    /// Above the local tip (`None`: a chain new here), as `Relation` says.
    Above(Option<ObjectId>, Relation),
}

/// A chain this clone does not have is taken from `base` (the tip a signed
/// checkpoint recorded) up to `theirs` only when `base` is here and an ancestor
/// of `theirs`: else it was rolled back or rewritten below the checkpoint, and
/// this is the refusal.
fn not_from_checkpoint(
    store: &Store,
    writer: &str,
    theirs: ObjectId,
    base: ObjectId,
) -> Result<Option<FetchOutcome>, StoreError> {
    // a chain is linear: walking down from its tip finds the base (and
    // remembers what it read for the admission walk after it); anything else
    // is asked of the history whole
    let descends = base == theirs
        || (store.has_commit(base)
            && (store.reaches_down(theirs, base) || store.is_ancestor(base, theirs)?));
    if descends {
        return Ok(None);
    }
    // a tip that is no entry (junk a server without the hook took) has no
    // index to fetch down to the checkpoint by: that, not a rollback
    if let Err(e) = store.chain_entry(writer, theirs) {
        return Ok(Some(FetchOutcome::Rejected(format!(
            "the remote's chain tip {} is not a receipt ({e}), so how deep to fetch it from the signed checkpoint cannot be read; `git receipt fetch` without --since takes the entries below it (in this clone, after `git fetch --unshallow` from that remote)",
            theirs.to_hex_with_len(12)
        ))));
    }
    Ok(Some(FetchOutcome::Rejected(format!(
        "the remote's chain (tip {}) does not descend from {}, its tip at the signed checkpoint: it was rolled back or rewritten",
        theirs.to_hex_with_len(12),
        base.to_hex_with_len(12)
    ))))
}

/// What taking a chain this clone does not have from the tip a signed
/// checkpoint recorded (which [`not_from_checkpoint`] found it descends from)
/// up did: `a`, the entries above it admitted as any fetched entries are, and
/// the checkpoint's entry, the chain's first here.
fn from_checkpoint(a: &crate::store::admit::Admission) -> FetchOutcome {
    let taken = a.admitted + 1;
    match &a.refusal {
        Some(r) => FetchOutcome::Partial {
            taken,
            refused: r.to_string(),
        },
        None => FetchOutcome::Added(taken),
    }
}

/// What `fetch --since` fetched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SinceFetch {
    /// Chains taken from the checkpoint's tips up (shallow here).
    pub from_checkpoint: usize,
    /// Chains fetched whole: ones this clone had, and ones the checkpoint does
    /// not vouch for (new since, or a key whose trust changed).
    pub whole: usize,
    /// The fetches of chains taken from the checkpoint, in order, one `git
    /// fetch` each.
    pub fetches: Vec<Cut>,
}

/// How long before a checkpoint's time `fetch --since` cuts its chains by date
/// (Unix ms): a chain whose writer wrote in that week before the checkpoint
/// comes with its checkpointed entry in that one fetch; any other gets a
/// top-up by depth. A wider margin means fewer top-ups and more entries from
/// before the checkpoint (a year of 1,000 writers, `benches/year.rs`: 1.05x
/// the entries needed and 18 of 1,000 chains topped up at a week; 1.11x and 1
/// at two weeks).
pub const SINCE_MARGIN_MS: u64 = 7 * 86_400 * 1000;

/// `git receipt fetch --since`: like [`fetch`], but a chain this clone does not
/// have yet and that `anchor` (a signed checkpoint, chosen and trusted by the
/// caller) vouches for is fetched only from the tip `anchor` recorded up, so a
/// fresh clone's cost follows the entries since the checkpoint, not history.
///
/// The chains that moved since the checkpoint come in one fetch cut by date
/// ([`SINCE_MARGIN_MS`] before the checkpoint's time); a chain that did not
/// move, at depth 1 (its tip is the checkpoint's entry; cut by date, git
/// would send it whole). A chain the date left short of its checkpointed entry
/// (its writer idle that week, or a clock behind) is fetched again at the
/// depth its tip's index says it needs ([`depth_for`], [`depth_groups`]).
/// Commit dates are the writer's to set, so they only choose what to fetch:
/// each chain must still descend from its checkpointed tip, or it is refused,
/// never trusted shorter. Everything else is fetched and admitted as [`fetch`]
/// does.
pub fn fetch_since(
    store: &Store,
    remote: &str,
    trust: &TrustSet,
    anchor: &crate::checkpoint::Checked,
) -> Result<(BTreeMap<String, FetchOutcome>, SinceFetch), StoreError> {
    let vouched = crate::checkpoint::as_verify_checkpoint(anchor, trust);
    let remote_tips = store.remote_chain_tips(remote)?;
    let mut whole: Vec<&str> = Vec::new();
    // writer, its base, the base's index
    let mut shallow: Vec<(&str, ObjectId, u64)> = Vec::new();
    // of those, the ones whose tip there is their base, and the rest
    let (mut still, mut moved): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for (w, &theirs) in &remote_tips {
        // a chain here already is fetched as always: a depth on it would cut
        // what this clone has
        let here = store.chain_tip(w)?.is_some();
        let base = vouched
            .chains
            .get(w)
            .and_then(|t| ObjectId::from_hex(t.as_bytes()).ok())
            .filter(|_| !here);
        match (base, anchor.payload.chains.get(w)) {
            (Some(b), Some(m)) => {
                shallow.push((w, b, m.index));
                if theirs == b {
                    still.push(w);
                } else {
                    moved.push(w);
                }
            }
            _ => whole.push(w),
        }
    }
    let mut stats = SinceFetch {
        from_checkpoint: shallow.len(),
        whole: whole.len(),
        fetches: Vec::new(),
    };
    store.fetch_writers_staged(remote, &whole, Cut::Whole)?;
    if !still.is_empty() {
        store.fetch_writers_staged(remote, &still, Cut::Depth(1))?;
        stats.fetches.push(Cut::Depth(1));
    }
    if !moved.is_empty() {
        let since = Cut::Since(anchor.time_ms.saturating_sub(SINCE_MARGIN_MS));
        match store.fetch_writers_staged(remote, &moved, since) {
            Ok(()) => stats.fetches.push(since),
            // git's server ends a cut by date that selects no commit at all
            // ("no commits selected for shallow requests", which a client of
            // `git daemon` never sees: only "the remote end hung up"): every
            // tip older than the date, as when the only chains that moved were
            // rolled back, or written by a clock behind; and a server older
            // than git 2.11 has no cut by date. At depth 1 instead, each tip's
            // index says how deep to go; a remote that fails again is the error
            Err(StoreError::GitCommand { .. }) => {
                store.fetch_writers_staged(remote, &moved, Cut::Depth(1))?;
                stats.fetches.push(Cut::Depth(1));
            }
            Err(e) => return Err(e),
        }
    }
    // the commits walked here are remembered for the admission walks
    let recall = crate::store::Recalling::start();
    // a moved chain that reaches its base is ready; any other needs its tip's
    // index less the checkpoint's, plus the checkpoint's own entry (fetched in
    // `depth_groups`: a few fetches however many writers)
    let bases: BTreeMap<String, ObjectId> =
        shallow.iter().map(|&(w, b, _)| (w.to_owned(), b)).collect();
    let mut ready: Vec<&str> = Vec::new();
    let mut needs: Vec<(&str, u64)> = Vec::new();
    for &(w, base, index) in &shallow {
        let Some(tip) = store.ref_value(&crate::store::remote::staged_chain_ref(remote, w))? else {
            continue;
        };
        if store.has_commit(base) && store.reaches_down(tip, base) {
            ready.push(w);
            continue;
        }
        // a tip that is no readable entry is the admission's to report
        let Ok(entry) = store.chain_entry(w, tip) else {
            continue;
        };
        let n = entry.receipt.body().chain.index;
        let need = n.saturating_sub(index).saturating_add(1);
        if need > 1 {
            needs.push((w, need));
        }
    }
    // the ready chains admitted while git fetches the first depth, and each
    // depth's while git fetches the next (the remote's time is this clone's
    // idle time): admission only reads objects, which a running fetch never
    // changes; refs, notes and the index wait for the end
    let mut early: BTreeMap<String, Early> = BTreeMap::new();
    let mut previous: Option<&[&str]> = Some(&ready);
    for (depth, ws) in &depth_groups(needs) {
        let started = store.start_fetch_writers_staged(remote, ws, Cut::Depth(*depth))?;
        let admitted = match previous {
            Some(prev) => admit_early(store, remote, prev, &bases, trust, &mut early),
            None => Ok(()),
        };
        // the fetch is waited for even when the admission failed: no git is
        // left running in this repository after this command
        if let Some(started) = started {
            store.finish_fetch_writers_staged(started)?;
        }
        admitted?;
        stats.fetches.push(Cut::Depth(*depth));
        previous = Some(ws);
    }
    let prefix = format!(
        "refs/receipts-incoming/{}/",
        crate::store::remote::staging_name(remote)
    );
    let wanted: std::collections::HashSet<&str> = remote_tips.keys().map(String::as_str).collect();
    let chains: BTreeMap<String, ObjectId> = store
        .refs_under(&prefix)?
        .into_iter()
        .filter_map(|(k, v)| {
            let w = k.strip_prefix(&prefix)?;
            wanted.contains(w).then(|| (w.to_owned(), v))
        })
        .collect();
    let report = take_fetched(store, &chains, trust, &bases, early)?;
    drop(recall);
    Ok((report, stats))
}

/// An admission made early: for this tip, from this base.
struct Early {
    tip: ObjectId,
    base: Option<ObjectId>,
    admission: crate::store::admit::Admission,
}

/// Admit the chains `writers` (new here, fetched from a checkpoint's tip, in
/// `bases`) as [`take_fetched`] will, into `early`: only those that descend
/// from their base (the rest are for `take_fetched` to refuse).
fn admit_early(
    store: &Store,
    remote: &str,
    writers: &[&str],
    bases: &BTreeMap<String, ObjectId>,
    trust: &TrustSet,
    early: &mut BTreeMap<String, Early>,
) -> Result<(), StoreError> {
    let known = |fp: &str| trust.lookup(fp).map(|t| t.key.clone());
    let mut jobs: Vec<(&str, ObjectId, Option<ObjectId>)> = Vec::new();
    for &w in writers {
        let (Some(&base), Some(tip)) = (
            bases.get(w),
            store.ref_value(&crate::store::remote::staged_chain_ref(remote, w))?,
        ) else {
            continue;
        };
        if store.chain_tip(w)?.is_none()
            && not_a_chain_tip(store, w, tip).is_none()
            && not_from_checkpoint(store, w, tip, base)?.is_none()
        {
            jobs.push((w, tip, Some(base)));
        }
    }
    for (&(w, tip, base), admission) in jobs.iter().zip(store.admit_many(&jobs, &known)?) {
        early.insert(
            w.to_owned(),
            Early {
                tip,
                base,
                admission,
            },
        );
    }
    Ok(())
}

/// What more entries than needed one fetch of chains may take so that chains
/// of smaller depths join a deeper group instead of a fetch of their own: a
/// fetch's own cost (a connection, the refs, the server's search, git's
/// checks: about a quarter of a second here, with 1,000 refs on the server) is
/// worth some thousands of entries fetched and admitted (about 70 us each).
pub const MERGE_ENTRIES: u64 = 1024;

/// The fetches for chains each needing some entries (`needs`: writer and
/// entries needed), deepest first: chains of one [`depth_for`] share a fetch,
/// and a group takes the chains of the next shallower depths too while all it
/// takes beyond what its chains need stays within [`MERGE_ENTRIES`]. So a few
/// chains left short by a cut by date cost one fetch, not one for each depth,
/// and many chains still cost no more fetches than `depth_for` makes.
pub fn depth_groups(mut needs: Vec<(&str, u64)>) -> Vec<(u64, Vec<&str>)> {
    needs.sort_by_key(|&(w, n)| (std::cmp::Reverse(depth_for(n)), w));
    let mut groups: Vec<(u64, Vec<&str>, u64)> = Vec::new();
    let mut k = 0;
    while k < needs.len() {
        // one depth's chains
        let depth = depth_for(needs[k].1);
        let end = k + needs[k..]
            .iter()
            .take_while(|&&(_, n)| depth_for(n) == depth)
            .count();
        let these = &needs[k..end];
        k = end;
        if let Some((deeper, members, extra)) = groups.last_mut() {
            let more = beyond(*deeper, these);
            if extra.saturating_add(more) <= MERGE_ENTRIES {
                members.extend(these.iter().map(|&(w, _)| w));
                *extra = extra.saturating_add(more);
                continue;
            }
        }
        let extra = beyond(depth, these);
        groups.push((depth, these.iter().map(|&(w, _)| w).collect(), extra));
    }
    groups.into_iter().map(|(d, ws, _)| (d, ws)).collect()
}

/// The entries a fetch at `depth` takes beyond what `chains` need (each needs
/// at most `depth`). Needs come from tips not yet checked, bounded only by a
/// receipt's largest index: the sum saturates rather than wrap.
fn beyond(depth: u64, chains: &[(&str, u64)]) -> u64 {
    chains.iter().fold(0, |sum, &(_, n)| {
        sum.saturating_add(depth.saturating_sub(n))
    })
}

/// The depth a chain that needs `need` entries is fetched at: exactly `need` up
/// to 8, then the next step of a sequence that grows by a quarter (8, 10, 13,
/// 17, 22, 28, ...): at most a quarter more entries than needed, and chains
/// needing about as many share one fetch (some three fetches per doubling of
/// the spread of needs, however many writers). Powers of two took 1.73x the
/// entries needed at a year's scale (`benches/year.rs`).
pub fn depth_for(need: u64) -> u64 {
    let mut depth = 8;
    if need <= depth {
        return need.max(1);
    }
    while depth < need {
        depth = depth.saturating_add(depth.div_ceil(4));
    }
    depth.min(GIT_MAX_DEPTH)
}

/// The largest depth a fetch asks git for ([`crate::store::remote::GIT_MAX_DEPTH`]):
/// deeper than any chain can be, so a chain fetched at it comes whole. A need
/// comes from a tip not yet checked, which may claim any index up to a
/// receipt's largest.
pub use crate::store::remote::GIT_MAX_DEPTH;

impl FetchOutcome {
    /// Whether the fetch took entries into the local chain.
    pub fn took_entries(&self) -> bool {
        matches!(
            self,
            FetchOutcome::Added(_)
                | FetchOutcome::Updated(_)
                | FetchOutcome::Partial { .. }
                | FetchOutcome::Repaired { .. }
                | FetchOutcome::Retained { .. }
        )
    }
}

/// The least age of a receipt a remote may have dropped to a stub: the floor of
/// `git receipt retain --older-than`.
pub const RETAIN_MIN_AGE_MS: u64 = 86_400_000;

/// Every item of `writer`'s chain from `tip`, oldest first, when the chain
/// reads whole down to its root here.
fn rooted_items(
    store: &Store,
    writer: &str,
    tip: ObjectId,
) -> Option<Vec<crate::store::chain::ChainItem>> {
    store
        .chain_items(writer, tip)
        .ok()
        .filter(|items| items.first().is_some_and(|i| i.parent().is_none()))
}

/// A remote chain `theirs` that is ours rewritten by `git receipt retain`: the
/// same receipt ids at every index they share, the same trees (so the same
/// signed bytes) wherever both hold a receipt, and a stub where ours holds a
/// receipt only if the rule of [`crate::retention`] drops that receipt here too
/// (a check, older than a day, of a commit no protected branch or tag reaches
/// here, named by no receipt). Taken when it is; a rewrite that stubs what
/// retention keeps is refused, the local chain unchanged. `None`: theirs is not
/// a retention rewrite of ours (a divergence of another kind).
pub(crate) fn retained(
    store: &Store,
    writer: &str,
    ours: ObjectId,
    theirs: ObjectId,
    known: &dyn Fn(&str) -> Option<crate::sign::PublicKey>,
) -> Result<Option<FetchOutcome>, StoreError> {
    use crate::store::chain::ChainItem;
    let (Some(mine), Some(their)) = (
        rooted_items(store, writer, ours),
        rooted_items(store, writer, theirs),
    ) else {
        return Ok(None);
    };
    let common = mine.len().min(their.len());
    let mut dropped = Vec::new();
    // below `fork` both hold the same receipts (or stubs of them); above it,
    // each its own (the writer's key wrote elsewhere too, after the retention)
    let mut fork = common;
    for i in 0..common {
        let (m, t) = (&mine[i], &their[i]);
        if m.id_index() != t.id_index() {
            fork = i;
            break;
        }
        match (m, t) {
            (ChainItem::Entry(e), ChainItem::Stub(_)) => dropped.push(e),
            (ChainItem::Entry(_), ChainItem::Entry(_))
                if store.commit_tree(m.commit())? != store.commit_tree(t.commit())? =>
            {
                return Ok(Some(FetchOutcome::Rejected(format!(
                    "the remote's chain holds receipt {} (#{i}) with other bytes than here",
                    m.id_index().0
                ))));
            }
            _ => {}
        }
    }
    if dropped.is_empty() || fork == 0 {
        return Ok(None);
    }
    let refuse = |why: String| {
        Ok(Some(FetchOutcome::Rejected(format!(
            "the remote's chain replaces {} here by retention stubs, but {why}",
            if dropped.len() == 1 {
                "1 receipt".to_owned()
            } else {
                format!("{} receipts", dropped.len())
            }
        ))))
    };
    if matches!(their.last(), Some(ChainItem::Stub(_))) {
        return refuse("its tip is a stub, which no chain ends in".to_owned());
    }
    let kept = match crate::retention::kept_commits(store) {
        Ok((kept, _)) => kept,
        Err(e) => return refuse(format!("this clone cannot check them: {e}")),
    };
    // "named by no receipt" means in any chain, as `retain` reads it (a
    // shallow clone, where a name could sit below the cut, was refused above)
    let chains = match crate::retention::read_chains(store) {
        Ok(chains) => chains,
        Err(e) => {
            return refuse(format!(
                "this clone cannot read its chains to check them: {e}"
            ));
        }
    };
    let rules = crate::retention::Rules {
        cutoff_ms: crate::clock::now_ms().saturating_sub(RETAIN_MIN_AGE_MS),
        kept,
        named: crate::retention::named_ids(chains.iter().flat_map(|(_, items)| items)),
    };
    for e in &dropped {
        if let Some(why) = crate::retention::keep(&e.receipt, false, &rules) {
            return refuse(format!(
                "retention keeps receipt {} (#{}) here: {}",
                e.receipt.id(),
                e.receipt.body().chain.index,
                why.as_str()
            ));
        }
    }
    // mutants: `>=` for `>` is equivalent: at equal lengths with no fork
    // both arms give the remote's tip (admitting nothing above it, or
    // writing nothing on it)
    let (tip, taken, kept_local) = if fork == mine.len() && their.len() > mine.len() {
        let base = their[fork - 1].commit();
        let a = store.admit(writer, theirs, Some(base), known)?;
        if let Some(r) = a.refusal {
            return refuse(format!("what it holds above them is refused: {r}"));
        }
        (theirs, a.admitted, 0)
    } else {
        // ours above the fork, on the remote's entry below it: the same
        // receipts, linked as before (that entry has the same id); where the
        // remote holds its own entries above the fork too, the chains still
        // diverge there, as any two clones of one key can
        let above: Vec<ObjectId> = mine[fork..].iter().map(|i| i.commit()).collect();
        let tip = store.recommit_onto(&above, their[fork - 1].commit())?;
        (tip, 0, above.len() as u64)
    };
    store.set_ref(
        &crate::store::chain::chain_ref(writer),
        Some(ours),
        tip,
        "git-receipt: fetch (the remote dropped receipts to retention stubs)",
    )?;
    Ok(Some(FetchOutcome::Retained {
        dropped: dropped.len() as u64,
        taken,
        kept_local,
    }))
}

/// Move the local chain from `ours` to the highest entry `a` admitted, if any.
fn take(
    store: &Store,
    writer: &str,
    ours: Option<ObjectId>,
    a: &crate::store::admit::Admission,
) -> Result<(), StoreError> {
    if let Some(valid) = a.valid_tip
        && Some(valid) != ours
    {
        store.set_ref(
            &chain_ref(writer),
            ours,
            valid,
            "git-receipt: fetch (verified entries)",
        )?;
    }
    Ok(())
}

/// What `push` did for one writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushOutcome {
    /// The writer.
    pub writer: String,
    /// Receipts the remote did not have before.
    pub pushed: u64,
    /// Receipts re-appended because the chain had diverged.
    pub reappended: u64,
    /// Receipts of this clone not re-appended because the remote's chain holds
    /// their result already (an idempotency key, or the same receipt: see
    /// [`crate::idempotency::plan_reappend`]); the local chain no longer has them.
    pub left_out: u64,
    /// Log refs sent along (some may have been on the remote already).
    pub logs: u64,
    /// Why the remote's tip held commits that are not entries of this writer's
    /// chain (junk, a merge, a squatted name), which this push replaced.
    pub repaired: Option<String>,
}

/// Which full output logs travel with a push: `receipt.pushLogs`
/// (`all`, `failed` or `none`; default `failed`, the logs a reviewer needs) and
/// `receipt.pushLogLimit` (default 1 MiB; larger logs stay local unless asked for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogPolicy {
    /// Which receipts' logs.
    pub which: PushLogs,
    /// The largest log pushed, in bytes; `None` for no limit.
    pub limit: Option<u64>,
    /// Every local log of the writer, not only those of the receipts pushed now.
    pub backlog: bool,
}

/// `receipt.pushLogs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushLogs {
    /// Every log.
    All,
    /// The logs of failed receipts.
    Failed,
    /// No log.
    None,
}

/// A `receipt.pushLogs` or `receipt.pushLogLimit` that is not one.
#[derive(Debug, thiserror::Error)]
pub enum LogPolicyError {
    /// `receipt.pushLogs` is not `all`, `failed` or `none`.
    #[error("receipt.pushLogs = {0:?} is not a setting")]
    PushLogs(String),
    /// `receipt.pushLogLimit` is not a size in bytes.
    #[error("receipt.pushLogLimit = {0:?} is not a size in bytes")]
    PushLogLimit(String),
}

/// The default `receipt.pushLogLimit`.
pub const DEFAULT_PUSH_LOG_LIMIT: u64 = 1 << 20;

impl LogPolicy {
    /// Read `receipt.pushLogs` and `receipt.pushLogLimit`; a value that is not one
    /// is an error naming the setting and the values it takes.
    pub fn from_config(store: &Store) -> Result<LogPolicy, LogPolicyError> {
        let which = match store.config_string("receipt.pushLogs").as_deref() {
            None | Some("failed") => PushLogs::Failed,
            Some("all") => PushLogs::All,
            Some("none") => PushLogs::None,
            Some(other) => {
                return Err(LogPolicyError::PushLogs(other.to_owned()));
            }
        };
        let limit = match store.config_string("receipt.pushLogLimit") {
            None => DEFAULT_PUSH_LOG_LIMIT,
            Some(text) => match store.config_integer("receipt.pushLogLimit") {
                Some(n) if n >= 0 => n as u64,
                _ => {
                    return Err(LogPolicyError::PushLogLimit(text));
                }
            },
        };
        Ok(LogPolicy {
            which,
            limit: Some(limit),
            backlog: false,
        })
    }

    /// Every log of the writer, whatever its size or result (`push --logs`).
    pub fn everything() -> LogPolicy {
        LogPolicy {
            which: PushLogs::All,
            limit: None,
            backlog: true,
        }
    }

    /// The log refs of `writer` to push along with `entries` (the receipts the
    /// remote lacks): only logs this clone keeps under their log refs.
    pub fn select(
        &self,
        store: &Store,
        writer: &str,
        entries: &[crate::store::chain::ChainEntry],
    ) -> Result<Vec<String>, StoreError> {
        use crate::store::logs::log_ref;
        if self.backlog {
            return Ok(store
                .log_refs()?
                .into_iter()
                .filter(|l| l.writer == writer && l.named == Some(l.target))
                .map(|l| l.name)
                .collect());
        }
        let mut out = Vec::new();
        for e in entries {
            let r = &e.receipt.body().result;
            let wanted = match self.which {
                PushLogs::All => true,
                PushLogs::Failed => !r.passed,
                PushLogs::None => false,
            };
            let (Some(size), Some(blob)) = (
                r.log_bytes,
                r.log
                    .as_deref()
                    .and_then(|h| ObjectId::from_hex(h.as_bytes()).ok()),
            ) else {
                continue; // no log, or a v1 log that travels in its chain commit
            };
            if !wanted || self.limit.is_some_and(|l| size > l) {
                continue;
            }
            let name = log_ref(writer, &blob);
            if store.ref_value(&name)? == Some(blob) && !out.contains(&name) {
                out.push(name);
            }
        }
        Ok(out)
    }
}

/// Why a push failed.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The remote refused or could not be reached.
    #[error("pushing receipts to {remote} failed; your local receipts are untouched\n{detail}")]
    Remote {
        /// The remote.
        remote: String,
        /// What git said.
        detail: String,
        /// What to do, in words (the CLI shows it as a hint).
        hint: String,
    },
    /// The remote did not answer within `receipt.networkTimeout`.
    #[error(
        "pushing receipts to {remote} failed; your local receipts are untouched\nthe remote did not finish within {seconds}s (receipt.networkTimeout), so the transfer was stopped; nothing was taken from it or half-sent"
    )]
    TimedOut {
        /// The remote.
        remote: String,
        /// The limit, in seconds.
        seconds: u64,
    },
    /// The server refused the receipt refs: a verdict, not a failure to decide.
    #[error(
        "pushing receipts to {remote} was refused; your local receipts are untouched\n{}",
        format!("{refs}{server}").trim_end()
    )]
    Refused {
        /// The remote.
        remote: String,
        /// One line per ref the server refused, and why.
        refs: String,
        /// What the server said (its `remote:` lines).
        server: String,
        /// What to do, one hint a line (the CLI shows them): the right and the
        /// namespace the server must grant.
        hint: String,
    },
    /// The server could not store what was pushed (its unpacker failed: a full
    /// disk, a quota, a repository it may not write): not a refusal, and no
    /// right to grant.
    #[error(
        "pushing receipts to {remote} failed: the server could not store them: {cause}; your local receipts are untouched and nothing was stored there\n{}",
        format!("{refs}{server}").trim_end()
    )]
    Unstored {
        /// The remote.
        remote: String,
        /// One line per ref and what git said of it.
        refs: String,
        /// What the server said (its `remote:` lines).
        server: String,
        /// The cause, in words, as far as the server's words tell it.
        cause: String,
    },
    /// Kept losing races with another push of the same writer.
    #[error(
        "could not push chain {writer} to {remote} after {attempts} attempts: another clone with the same key keeps pushing"
    )]
    Contention {
        /// The writer.
        writer: String,
        /// The remote.
        remote: String,
        /// Attempts made.
        attempts: u32,
    },
    /// A receipt of this clone and one of the remote's hold one idempotency key
    /// for different results: re-appending would put both in one chain.
    #[error(
        "pushing chain {writer} to {remote} was refused: idempotency key {} names two results: your receipt #{} {} and the remote's #{} {}, which differ in more than the start time; nothing was sent and your local receipts are untouched",
        crate::text::escape(&conflict.key),
        conflict.ours.index,
        conflict.ours.id,
        conflict.theirs.index,
        conflict.theirs.id
    )]
    KeyConflict {
        /// The writer.
        writer: String,
        /// The remote.
        remote: String,
        /// The key and its two holders.
        conflict: Box<crate::idempotency::KeyConflict>,
    },
    /// Local store trouble.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn remote_hint(stderr: &str) -> String {
    let s = stderr.to_ascii_lowercase();
    if s.contains("could not read from remote")
        || s.contains("unable to connect")
        || s.contains("connection refused")
        || s.contains("could not resolve")
        || s.contains("does not appear to be a git repository")
    {
        "check the remote's URL and that it is reachable (`git remote -v`, `git ls-remote <remote>`)".into()
    } else if s.contains("hook declined")
        || s.contains("denied")
        || s.contains("refusing")
        || s.contains("rejected")
    {
        "the server refused refs/receipts/* or refs/notes/receipts/*; ask its admin to allow them, or keep receipts local (push with --no-verify to skip the hook)".into()
    } else {
        "see git's message above".into()
    }
}

/// The right a writer needs on a receipt namespace, in gitolite's words, and why.
pub fn right_needed(refname: &str) -> Option<(&'static str, &'static str, &'static str)> {
    if refname.starts_with("refs/receipts/") {
        Some((
            "RW",
            "refs/receipts/",
            "chains are created and fast-forwarded, never rewound",
        ))
    } else if refname.starts_with("refs/notes/receipts/") {
        Some((
            "RW+",
            "refs/notes/receipts/",
            "notes are pushed with a lease, which is a forced update",
        ))
    } else if refname.starts_with(crate::store::logs::LOG_PREFIX) {
        Some((
            "RW+",
            crate::store::logs::LOG_PREFIX,
            "log refs are created, and deleted by prune-logs --push",
        ))
    } else {
        None
    }
}

/// A refused `git push --porcelain`, told plainly: the refs refused and why (not
/// git's raw porcelain lines), the server's own words, and a hint that names the
/// right and the namespace when the server says which right it denied (gitolite's
/// `FATAL: <right> <ref> <repo> <user> DENIED ...`).
fn refusal(remote: &str, stdout: &str, stderr: &str) -> Option<PushError> {
    let mut refs = String::new();
    for line in stdout.lines().filter(|l| l.starts_with('!')) {
        let mut fields = line.split('\t').skip(1);
        let spec = fields.next().unwrap_or("");
        let why = fields.next().unwrap_or("").trim();
        let name = spec.rsplit_once(':').map_or(spec, |(_, dst)| dst);
        let why = if why.contains("atomic push failure") {
            "not sent: the push is atomic and the server refused another ref in it".to_owned()
        } else {
            // `[remote rejected] (hook declined)`, `[rejected] (fetch first)`
            let (kind, reason) = why.split_once("] ").unwrap_or(("", why));
            let reason = reason.trim_start_matches('(').trim_end_matches(')');
            if kind.ends_with("remote rejected") {
                format!("refused: {reason}")
            } else {
                format!("rejected: {reason}")
            }
        };
        refs.push_str(&format!("  {name}: {why}\n"));
    }
    if refs.is_empty() {
        return None;
    }
    let mut server = String::new();
    let mut hints = Vec::new();
    for line in stderr.lines().map(str::trim_end) {
        if !line.starts_with("remote:") {
            continue; // git's own summary lines; the refs are listed above
        }
        server.push_str(line);
        server.push('\n');
        let Some(denied) = line.split("FATAL:").nth(1).filter(|l| l.contains("DENIED")) else {
            continue;
        };
        let f: Vec<&str> = denied.split_whitespace().collect();
        if let [right, refname, repo, user, ..] = f[..] {
            let hint = match right_needed(refname) {
                Some((need, ns, why)) => format!(
                    "the server (gitolite) denied {user} the right {right} on {refname}; grant `{need} {ns} = {user}` under `repo {repo}` in gitolite.conf ({why}); see docs/servers.md"
                ),
                None => format!(
                    "the server (gitolite) denied {user} the right {right} on {refname} in {repo}; ask its admin"
                ),
            };
            if !hints.contains(&hint) {
                hints.push(hint);
            }
        }
    }
    if let Some(cause) = storage_failure(&refs, &server) {
        return Some(PushError::Unstored {
            remote: remote.into(),
            refs,
            server,
            cause,
        });
    }
    let behind = refs.lines().any(|l| {
        !l.trim_start().starts_with("refs/receipts/")
            && !l.trim_start().starts_with("refs/notes/")
            && (l.contains("rejected: fetch first") || l.contains("rejected: non-fast-forward"))
    });
    if behind {
        hints.push(
            "a branch in the push is behind the remote's: pull (or rebase), then push again".into(),
        );
    }
    let hint = if hints.is_empty() {
        "the server refused these refs (see its words above); it must let you push refs/receipts/ (create, fast-forward), refs/notes/receipts/ (forced, with a lease) and refs/receipt-logs/ (create, delete): docs/servers.md; or keep receipts local (git config receipt.pushReceipts false)".to_owned()
    } else {
        hints.join("\n")
    };
    Some(PushError::Refused {
        remote: remote.into(),
        refs,
        server,
        hint,
    })
}

/// Why the server could not store a push, when its words say so: the unpacker
/// failed (`unpacker error`, `unpack-objects`/`index-pack abnormal exit`) or it
/// ran out of room. `None` for a refusal by rule (a hook, a right).
fn storage_failure(refs: &str, server: &str) -> Option<String> {
    let unpack = refs.contains("unpacker error")
        || refs.contains("unpack failed")
        || server.contains("abnormal exit");
    let said = |words: &str| server.contains(words);
    let cause = if said("No space left on device") {
        "its disk is full (No space left on device)"
    } else if said("Disk quota exceeded") {
        "its disk quota is used up (Disk quota exceeded)"
    } else if said("Read-only file system") {
        "its repository is on a read-only file system"
    } else if unpack && said("Permission denied") {
        "it may not write into its repository (Permission denied)"
    } else if unpack {
        "its unpacker failed (see its words below): a full disk or a repository it may not write are the usual causes"
    } else {
        return None;
    };
    Some(cause.to_owned())
}

/// The writer ids of this clone: the key's chains that exist locally.
pub fn own_writers(
    store: &Store,
    key: &SigningKey,
    chain_name: &str,
) -> Result<Vec<String>, StoreError> {
    let fp = key.public().fingerprint();
    let mut out: Vec<String> = store
        .writers()?
        .into_iter()
        .map(|(w, _)| w)
        .filter(|w| writer_matches_key(w, &fp))
        .collect();
    let default = writer_id(key.public(), chain_name);
    if out.is_empty() && store.chain_tip(&default)?.is_some() {
        out.push(default);
    }
    Ok(out)
}

/// Whether a lost lease or race on `writer`'s refs shows in a `git push
/// --porcelain`'s output (a branch pushed along that is behind is not a race to
/// retry but a refusal).
fn lost_race(out: &crate::store::remote::GitOutput, writer: &str) -> bool {
    let ours = [chain_ref(writer), notes_ref(writer)];
    out.stdout.lines().any(|l| {
        l.starts_with('!')
            && l.contains("[rejected]")
            && (l.contains("fetch first") || l.contains("stale info") || l.contains("non-fast-forward"))
            && ours.iter().any(|r| l.contains(&format!(":{r}\t")))
    })
        // the server was updating the same ref for a concurrent push
        || out.stdout.contains("atomic transaction failed")
        || out.stderr.contains("cannot lock ref")
}

/// Why the remote's chain ref of `writer`, naming `tip`, holds no chain: it
/// names something other than a commit (an annotated tag of the chain's tip,
/// say); `None` when it names a commit. Fetch refuses such a ref for its chain
/// alone, push replaces it.
fn not_a_chain_tip(store: &Store, writer: &str, tip: ObjectId) -> Option<String> {
    store.not_a_commit(tip).map(|kind| {
        format!(
            "the remote's {} names a {kind} ({}), not a chain commit",
            chain_ref(writer),
            tip.to_hex_with_len(12)
        )
    })
}

/// Whether git-receipt's pushes send a writer's notes beside its chain:
/// `receipt.pushNotes` when set; else yes, but not in CI (the `CI` variable set,
/// as GitHub Actions, GitLab CI, CircleCI, Buildkite and others set it, and not
/// `false` or `0`). Notes are a display every clone derives from the chains it
/// fetches (`git receipt fetch`), and a CI writer's receipts are most of a
/// repository's: pushed, their notes cost the server and every clone more
/// bytes than the signed chain itself (issue 30). What a plain `git fetch` of
/// the notes refs shows of them then waits for `git receipt fetch`.
pub fn pushes_notes(store: &Store) -> bool {
    store
        .config_bool("receipt.pushNotes")
        .unwrap_or_else(|| !in_ci(std::env::var("CI").ok().as_deref()))
}

/// Whether the `CI` variable's value says this runs in CI.
fn in_ci(value: Option<&str>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// Take it that `remote` will have `writer`'s chain and notes at their local
/// tips: the running `git push` carries them. If that push fails after all, the
/// next push's lease finds out and takes the long way; nothing is lost.
pub fn assume_pushed(store: &Store, remote: &str, writer: &str) -> Result<(), StoreError> {
    match store.chain_tip(writer)? {
        Some(tip) => remember_pushed(store, remote, writer, tip, pushes_notes(store)),
        None => Ok(()),
    }
}

/// Remember what the remote now has of `writer` (the staging refs double as
/// this clone's last knowledge of the remote, which the next push leases on):
/// its chain at `chain`, and its notes at the local tip when `with_notes` were
/// pushed too.
fn remember_pushed(
    store: &Store,
    remote: &str,
    writer: &str,
    chain: ObjectId,
    with_notes: bool,
) -> Result<(), StoreError> {
    use crate::store::remote::{staged_chain_ref, staged_notes_ref};
    let mut refs = vec![(staged_chain_ref(remote, writer), Some(chain))];
    // notes not pushed: the remote's stay as last seen
    if with_notes {
        let notes = store.ref_value(&notes_ref(writer))?;
        refs.push((staged_notes_ref(remote, writer), notes));
    }
    // A failure here loses only this memory (the next push leases on the older
    // one, is refused, and takes the long way), as a failed `git update-ref`
    // did: the push itself went through.
    let _ = store.put_refs(&refs);
    Ok(())
}

/// Push on what this clone last saw of the remote (its last fetch or push of this
/// writer), without fetching first: the chain must still be there for a
/// fast-forward and the notes for their lease, or git refuses the push and
/// `None` sends the caller the long way (fetch, compare, re-append). With
/// `skip_unchanged`, nothing at all is sent when nothing changed since: the
/// pre-push hook's common case, one ssh session fewer, or two. The notes go
/// along when `with_notes` ([`pushes_notes`]).
fn push_on_lease(
    store: &Store,
    remote: &str,
    writer: &str,
    logs: &LogPolicy,
    skip_unchanged: bool,
    also: &[String],
    with_notes: bool,
) -> Result<Option<PushOutcome>, PushError> {
    use crate::store::remote::{staged_chain_ref, staged_notes_ref};
    let their_notes = store.ref_value(&staged_notes_ref(remote, writer))?;
    let (Some(theirs), Some(local)) = (
        store.ref_value(&staged_chain_ref(remote, writer))?,
        store.chain_tip(writer)?,
    ) else {
        return Ok(None);
    };
    // notes to push need a lease on what the remote had
    if with_notes && their_notes.is_none() {
        return Ok(None);
    }
    if !matches!(
        store.relation(Some(local), theirs)?,
        Relation::Same | Relation::Ahead
    ) {
        return Ok(None);
    }
    store.index_notes(writer)?;
    let new_entries = store.entries_since(writer, local, Some(theirs))?;
    let log_refs = logs.select(store, writer, &new_entries)?;
    let notes_now = store.ref_value(&notes_ref(writer))?;
    if new_entries.is_empty()
        && log_refs.is_empty()
        && (!with_notes || notes_now == their_notes)
        && also.is_empty()
    {
        return Ok(skip_unchanged.then(|| PushOutcome {
            writer: writer.into(),
            pushed: 0,
            reappended: 0,
            left_out: 0,
            logs: 0,
            repaired: None,
        }));
    }
    let chain_lease = format!("--force-with-lease={}:{theirs}", chain_ref(writer));
    let notes_lease = format!(
        "--force-with-lease={}:{}",
        notes_ref(writer),
        their_notes.map(|n| n.to_string()).unwrap_or_default()
    );
    let chain_spec = format!("{0}:{0}", chain_ref(writer));
    let notes_spec = format!("+{0}:{0}", notes_ref(writer));
    let log_specs: Vec<String> = log_refs.iter().map(|n| format!("{n}:{n}")).collect();
    let mut argv = vec![
        "push",
        "--atomic",
        "--no-verify",
        "--porcelain",
        &chain_lease,
    ];
    if with_notes {
        argv.push(&notes_lease);
    }
    argv.extend([remote, chain_spec.as_str()]);
    if with_notes {
        argv.push(&notes_spec);
    }
    argv.extend(log_specs.iter().map(String::as_str));
    argv.extend(also.iter().map(String::as_str));
    let out = store.run_git(&argv)?;
    if out.ok {
        remember_pushed(store, remote, writer, local, with_notes)?;
        return Ok(Some(PushOutcome {
            writer: writer.into(),
            pushed: new_entries.len() as u64,
            reappended: 0,
            left_out: 0,
            logs: log_specs.len() as u64,
            repaired: None,
        }));
    }
    if lost_race(&out, writer) {
        return Ok(None); // the remote moved since: the long way
    }
    if let Some(refused) = refusal(remote, &out.stdout, &out.stderr) {
        return Err(refused);
    }
    let detail = format!("{}\n{}", out.stdout.trim(), out.stderr)
        .trim()
        .to_owned();
    Err(PushError::Remote {
        remote: remote.into(),
        hint: remote_hint(&detail),
        detail,
    })
}

/// Push one writer's chain and notes to `remote`, atomically: the chain as a
/// fast-forward, the notes with a lease on what the remote had. When this clone
/// knows what the remote has (its last fetch or push), the push leases on that
/// without fetching; otherwise, or when the remote moved, it fetches the remote's
/// chain first and, on divergence, re-appends local receipts on the remote tip
/// and retries. With `skip_unchanged` (the pre-push hook), nothing is sent when
/// nothing changed since the last push. `also` are refspecs (a branch) pushed in
/// the same atomic push: one session, and the server sees the branch with its
/// receipts.
pub fn push_writer(
    store: &Store,
    remote: &str,
    writer: &str,
    key: &SigningKey,
    logs: &LogPolicy,
    skip_unchanged: bool,
    also: &[String],
) -> Result<PushOutcome, PushError> {
    let with_notes = pushes_notes(store);
    if let Some(done) = push_on_lease(
        store,
        remote,
        writer,
        logs,
        skip_unchanged,
        also,
        with_notes,
    )? {
        return Ok(done);
    }
    let mut reappended = 0;
    let mut left_out = 0;
    for attempt in 0..PUSH_ATTEMPTS {
        let Some(local) = store.chain_tip(writer)? else {
            return Ok(PushOutcome {
                writer: writer.into(),
                pushed: 0,
                reappended,
                left_out,
                logs: 0,
                repaired: None,
            });
        };
        let (chains, notes) = match store.fetch_staged(remote, Some(writer)) {
            Ok(v) => v,
            Err(StoreError::GitCommand { stderr, .. }) => {
                return Err(PushError::Remote {
                    remote: remote.into(),
                    hint: remote_hint(&stderr),
                    detail: stderr,
                });
            }
            Err(StoreError::RemoteTimedOut { seconds, .. }) => {
                return Err(PushError::TimedOut {
                    remote: remote.into(),
                    seconds,
                });
            }
            Err(e) => return Err(e.into()),
        };
        let remote_tip = chains.get(writer).copied();
        let their_notes = notes.get(writer).copied();
        // What of the remote's chain is this writer's: the entries above what we
        // share that follow every rule. Anything above them (junk, a merge, a
        // squat on our writer id) is replaced by this push, on a lease.
        let mut repaired = None;
        let theirs = match remote_tip {
            None => None,
            // a ref that names no commit (a tag of the tip, say) holds nothing
            // of this chain: replaced, on a lease on what it names
            Some(t) if let Some(why) = not_a_chain_tip(store, writer, t) => {
                repaired = Some(why);
                None
            }
            Some(t) => {
                let base = store.merge_base_of(local, t)?;
                let known = crate::store::admit::only_key(key.public());
                let admission = store.admit(writer, t, base, &known)?;
                match &admission.refusal {
                    None => Some(t),
                    Some(r) => {
                        repaired = Some(r.to_string());
                        admission.valid_tip_or(base)
                    }
                }
            }
        };
        let mut tip = local;
        if let Some(t) = theirs {
            match store.relation(Some(local), t)? {
                Relation::Same => {
                    // chain already there; still make sure the notes are
                }
                Relation::Ahead | Relation::New => {}
                Relation::Behind => {
                    // the remote has receipts we lack (same key elsewhere): take them
                    store.set_ref(
                        &chain_ref(writer),
                        Some(local),
                        t,
                        "git-receipt: push (fast-forward)",
                    )?;
                    tip = t;
                }
                Relation::Diverged
                    if let Some(outcome) = retained(
                        store,
                        writer,
                        local,
                        t,
                        &crate::store::admit::only_key(key.public()),
                    )? =>
                {
                    // the remote dropped old receipts to retention stubs: take
                    // its chain (ours on top) rather than sign the dropped
                    // receipts again
                    match outcome {
                        FetchOutcome::Retained { .. } => {
                            // look again: ours may still diverge above the
                            // retention, and re-append there as usual
                            store.restart_notes(writer)?;
                            continue;
                        }
                        FetchOutcome::Rejected(why) => {
                            return Err(PushError::Remote {
                                remote: remote.into(),
                                detail: format!("{remote}'s chain {writer} was rewritten: {why}"),
                                hint: "compare with `git receipt verify`, and ask the server's admin; your chain is kept as it is".into(),
                            });
                        }
                        // `retained` answers only those two; anything else
                        // pushes as it is, and the server refuses a rewrite
                        _ => {}
                    }
                }
                Relation::Diverged => {
                    let base = store.merge_base_of(local, t)?;
                    let mine = store.entries_since(writer, local, base)?;
                    // what the remote holds already is not sent twice: a result
                    // under its idempotency key, a receipt re-signed elsewhere
                    let theirs_new = store.entries_since(writer, t, base)?;
                    let plan = crate::idempotency::plan_reappend(mine, &theirs_new).map_err(
                        |conflict| PushError::KeyConflict {
                            writer: writer.into(),
                            remote: remote.into(),
                            conflict,
                        },
                    )?;
                    tip = store.reappend(writer, key, local, Some(t), &plan.keep)?;
                    reappended += plan.keep.len() as u64;
                    left_out += plan.left_out.len() as u64;
                    // rebuild our notes on top of the remote's, so they fast-forward
                    if let Some(n) = their_notes {
                        store.run_git(&["update-ref", &notes_ref(writer), &n.to_string()])?;
                    }
                    store.reindex_notes(writer)?;
                }
            }
        }
        store.index_notes(writer)?;
        let new_entries = match theirs {
            None => store.entries_since(writer, tip, None)?,
            Some(t) => {
                let base = store.merge_base_of(tip, t)?;
                store.entries_since(writer, tip, base)?
            }
        };
        let pushed = new_entries.len() as u64;
        let log_specs: Vec<String> = logs
            .select(store, writer, &new_entries)?
            .iter()
            .map(|name| format!("{name}:{name}"))
            .collect();
        let lease = format!(
            "--force-with-lease={}:{}",
            notes_ref(writer),
            their_notes.map(|n| n.to_string()).unwrap_or_default()
        );
        // a repair replaces the remote's bad tip, on a lease on exactly that tip
        let chain_lease = remote_tip
            .filter(|_| repaired.is_some())
            .map(|t| format!("--force-with-lease={}:{t}", chain_ref(writer)));
        let chain_spec = match chain_lease {
            Some(_) => format!("+{0}:{0}", chain_ref(writer)),
            None => format!("{0}:{0}", chain_ref(writer)),
        };
        let notes_spec = format!("+{0}:{0}", notes_ref(writer));
        let mut argv = vec!["push", "--atomic", "--no-verify", "--porcelain"];
        if with_notes {
            argv.push(&lease);
        }
        if let Some(l) = &chain_lease {
            argv.push(l);
        }
        argv.extend([remote, chain_spec.as_str()]);
        if with_notes {
            argv.push(&notes_spec);
        }
        argv.extend(log_specs.iter().map(String::as_str));
        argv.extend(also.iter().map(String::as_str));
        let out = store.run_git(&argv)?;
        if out.ok {
            remember_pushed(store, remote, writer, tip, with_notes)?;
            return Ok(PushOutcome {
                writer: writer.into(),
                pushed,
                reappended,
                left_out,
                logs: log_specs.len() as u64,
                repaired,
            });
        }
        if !lost_race(&out, writer) {
            if let Some(refused) = refusal(remote, &out.stdout, &out.stderr) {
                return Err(refused);
            }
            let detail = format!("{}\n{}", out.stdout.trim(), out.stderr)
                .trim()
                .to_owned();
            return Err(PushError::Remote {
                remote: remote.into(),
                hint: remote_hint(&detail),
                detail,
            });
        }
        // another clone with this key pushed in between: fetch again and retry
        crate::store::chain::backoff(attempt);
    }
    Err(PushError::Contention {
        writer: writer.into(),
        remote: remote.into(),
        attempts: PUSH_ATTEMPTS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chains a week's cut by date left short at 200,000 receipts from
    /// 1,000 writers (`benches/year.rs`): 18 chains over three depths, one
    /// fetch at the deepest (449 entries more than needed).
    #[test]
    fn a_few_chains_left_short_share_one_fetch_at_the_deepest_depth() {
        let needs = [
            50, 54, 54, 57, 57, 58, 60, 60, 61, 62, 62, 63, 65, 65, 66, 73, 74, 76,
        ];
        let names: Vec<String> = (0..needs.len()).map(|i| format!("w{i:02}")).collect();
        let input: Vec<(&str, u64)> = names.iter().map(String::as_str).zip(needs).collect();
        let groups = depth_groups(input);
        assert_eq!(groups.len(), 1, "{groups:?}");
        assert_eq!(groups[0].0, depth_for(76));
        assert_eq!(groups[0].1.len(), needs.len());
        let extra: u64 = needs.iter().map(|n| groups[0].0 - n).sum();
        assert_eq!(extra, 449);
        assert!(depth_groups(Vec::new()).is_empty());
    }

    /// A group takes a shallower depth's chains while what it takes beyond
    /// their needs stays within `MERGE_ENTRIES`, to the entry; past it, they
    /// are a fetch of their own. Many chains spread over many depths cost no
    /// more fetches than `depth_for` makes, and every chain gets at least
    /// what it needs, once.
    #[test]
    fn chains_join_a_deeper_fetch_while_the_extra_entries_stay_within_the_bound() {
        let names: Vec<String> = (0..=MERGE_ENTRIES).map(|i| format!("w{i:05}")).collect();
        // one chain needing exactly 8, then n chains needing 7: one more entry each
        let with = |n: usize| -> Vec<(&str, u64)> {
            std::iter::once(("deep", 8))
                .chain(names[..n].iter().map(|w| (w.as_str(), 7)))
                .collect()
        };
        let fits = depth_groups(with(MERGE_ENTRIES as usize));
        assert_eq!(fits.len(), 1, "1024 more entries: one fetch");
        assert_eq!(fits[0].0, 8);
        assert_eq!(fits[0].1.len(), MERGE_ENTRIES as usize + 1);
        assert_eq!(fits[0].1[0], "deep");
        let past = depth_groups(with(MERGE_ENTRIES as usize + 1));
        assert_eq!(past.len(), 2, "1025 more: a fetch of their own");
        assert_eq!((past[0].0, past[0].1.as_slice()), (8, ["deep"].as_slice()));
        assert_eq!(past[1].0, 7);
        assert_eq!(past[1].1.len(), MERGE_ENTRIES as usize + 1);
        // a hundred chains needing 50 (depth 55) beside one needing 87: 3,700
        // more entries at 87, so two fetches
        let mut far: Vec<(&str, u64)> = names[..100].iter().map(|w| (w.as_str(), 50)).collect();
        far.push(("deep", 87));
        let far = depth_groups(far);
        assert_eq!(
            far.iter().map(|g| (g.0, g.1.len())).collect::<Vec<_>>(),
            [(87, 1), (55, 100)]
        );

        // 1,000 chains needing 35 to 87 (the depth groups of a year before
        // the cut by date): deepest first, each chain once, at its need or
        // deeper, in no more fetches than depths
        let spread: Vec<(&str, u64)> = names[..1000]
            .iter()
            .enumerate()
            .map(|(i, w)| (w.as_str(), 35 + (i as u64 * 7919) % 53))
            .collect();
        let depths: std::collections::BTreeSet<u64> =
            spread.iter().map(|&(_, n)| depth_for(n)).collect();
        let groups = depth_groups(spread.clone());
        assert!(
            groups.len() <= depths.len(),
            "{} > {}",
            groups.len(),
            depths.len()
        );
        assert!(groups.windows(2).all(|g| g[0].0 > g[1].0));
        let need: BTreeMap<&str, u64> = spread.iter().copied().collect();
        let mut seen = std::collections::BTreeSet::new();
        for (depth, ws) in &groups {
            let mut merged = 0;
            for w in ws {
                assert!(seen.insert(*w), "{w} twice");
                assert!(*depth >= need[w]);
                if depth_for(need[w]) != *depth {
                    merged += depth - need[w];
                }
            }
            assert!(merged <= MERGE_ENTRIES);
        }
        assert_eq!(seen.len(), 1000);
    }

    #[test]
    fn a_depth_is_exact_up_to_8_then_at_most_a_quarter_more_than_needed() {
        for need in 0..=8 {
            assert_eq!(depth_for(need), need.max(1));
        }
        let steps: Vec<u64> = (9..=30).map(depth_for).collect();
        assert_eq!(steps[0], 10);
        assert_eq!(depth_for(10), 10);
        assert_eq!(depth_for(11), 13);
        assert_eq!(depth_for(14), 17);
        for need in 9..100_000 {
            let d = depth_for(need);
            assert!(d >= need && d * 4 <= need * 5 + 4, "{need} -> {d}");
        }
        // few distinct depths however many needs
        let mut distinct: Vec<u64> = (200..=400).map(depth_for).collect();
        distinct.dedup();
        assert!(distinct.len() <= 4, "{distinct:?}");
    }

    /// A need comes from a tip not yet checked: whatever index it claims, the
    /// depth and the groups are an answer, never a panic or a wrapped sum.
    #[test]
    fn any_need_however_large_gets_a_depth_and_a_group() {
        assert_eq!(depth_for(u64::MAX), GIT_MAX_DEPTH);
        let big = crate::canon::MAX_SAFE_INTEGER;
        assert_eq!(depth_for(big), GIT_MAX_DEPTH);
        assert!(depth_for(GIT_MAX_DEPTH - 1) == GIT_MAX_DEPTH);
        assert!(depth_for(1 << 30) < GIT_MAX_DEPTH);
        let names: Vec<String> = (0..10_000).map(|i| format!("w{i}")).collect();
        let needs: Vec<(&str, u64)> = names
            .iter()
            .enumerate()
            .map(|(i, w)| (w.as_str(), if i % 2 == 0 { u64::MAX } else { big }))
            .collect();
        let groups = depth_groups(needs);
        assert_eq!(groups.len(), 1, "both at git's largest depth: {groups:?}");
        assert_eq!(groups[0].0, GIT_MAX_DEPTH);
        assert_eq!(groups[0].1.len(), 10_000);
        assert_eq!(beyond(u64::MAX, &[("a", 0), ("b", 0)]), u64::MAX);
    }

    /// A chain fetched from a checkpoint descends from its tip there when a
    /// walk down its first parents finds it, and also when only its history
    /// whole does (a merge on top whose second parent holds it: admission then
    /// refuses the merge, not the whole chain as rolled back); a tip below the
    /// checkpointed one does not descend from it.
    #[test]
    fn a_chain_descends_from_its_checkpointed_tip_by_its_parents_or_by_its_history() {
        let s = crate::freshness::rules::Scratch::new();
        let chain = s.chain(9, &[0; 3]);
        let (e, h, w) = (&chain.commits, chain.source, &chain.writer);
        let descends = |tip, base| not_from_checkpoint(&s.store, w, tip, base).unwrap();
        assert!(descends(e[2], e[0]).is_none());
        assert!(descends(e[2], e[2]).is_none());
        let merge = s.git(&[
            "commit-tree",
            &format!("{}^{{tree}}", e[2]),
            "-p",
            &h.to_string(),
            "-p",
            &e[2].to_string(),
            "-m",
            "merge",
        ]);
        let merge = ObjectId::from_hex(merge.trim().as_bytes()).unwrap();
        assert!(descends(merge, e[0]).is_none(), "git's history holds it");
        match descends(e[1], e[2]) {
            Some(FetchOutcome::Rejected(why)) => assert!(why.contains("does not descend"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ci_is_any_value_of_the_ci_variable_but_empty_false_and_0() {
        for yes in ["true", "1", "yes", "TRUE", "woodpecker"] {
            assert!(in_ci(Some(yes)), "{yes}");
        }
        for no in [None, Some(""), Some("0"), Some("false"), Some("False")] {
            assert!(!in_ci(no), "{no:?}");
        }
    }

    const W: &str = "default-0b122fce84b0c88534299df4990a87ca";

    fn porcelain(lines: &[(&str, &str)]) -> String {
        let mut out = "To ssh://git@example.org/app\n".to_owned();
        for (r, why) in lines {
            out.push_str(&format!("!\t{r}:{r}\t{why}\n"));
        }
        out.push_str("Done\n");
        out
    }

    #[test]
    fn a_leased_notes_push_denied_by_gitolite_names_rw_plus_on_the_notes_namespace() {
        let stdout = porcelain(&[
            (
                &format!("refs/receipts/{W}"),
                "[remote rejected] (atomic push failure)",
            ),
            (
                &format!("refs/notes/receipts/{W}"),
                "[remote rejected] (hook declined)",
            ),
        ]);
        let stderr = format!(
            "remote: FATAL: + refs/notes/receipts/{W} app bob DENIED by refs/notes/receipts/        \nremote: error: hook declined to update refs/notes/receipts/{W}        \nerror: failed to push some refs to 'ssh://git@example.org/app'\n"
        );
        let Some(PushError::Refused {
            refs, server, hint, ..
        }) = refusal("origin", &stdout, &stderr)
        else {
            panic!("a refusal");
        };
        assert_eq!(
            refs,
            format!(
                "  refs/receipts/{W}: not sent: the push is atomic and the server refused another ref in it\n  refs/notes/receipts/{W}: refused: hook declined\n"
            )
        );
        assert!(!server.contains("failed to push some refs"), "{server}");
        assert!(server.ends_with("DENIED by refs/notes/receipts/\nremote: error: hook declined to update refs/notes/receipts/default-0b122fce84b0c88534299df4990a87ca\n"), "{server}");
        assert!(
            hint.starts_with(&format!(
                "the server (gitolite) denied bob the right + on refs/notes/receipts/{W}; grant `RW+ refs/notes/receipts/ = bob` under `repo app`"
            )),
            "{hint}"
        );
    }

    #[test]
    fn a_full_disk_or_a_failed_unpacker_is_not_called_a_refusal() {
        let stdout = porcelain(&[
            (
                &format!("refs/receipts/{W}"),
                "[remote rejected] (unpacker error)",
            ),
            (
                &format!("refs/notes/receipts/{W}"),
                "[remote rejected] (unpacker error)",
            ),
        ]);
        let full = "remote: fatal: unable to write loose object file: No space left on device\n";
        let cases = [
            (full, "its disk is full (No space left on device)"),
            (
                "remote: fatal: cannot write: Disk quota exceeded\n",
                "its disk quota is used up",
            ),
            (
                "remote: error: insufficient permission: Permission denied\n",
                "it may not write into its repository (Permission denied)",
            ),
            (
                "remote: fatal: unable to create temporary file: Read-only file system\n",
                "read-only file system",
            ),
            (
                "remote: error: unpack-objects abnormal exit\n",
                "its unpacker failed",
            ),
            ("", "its unpacker failed"),
        ];
        for (stderr, cause_has) in cases {
            match refusal("origin", &stdout, stderr) {
                Some(PushError::Unstored { cause, refs, .. }) => {
                    assert!(cause.contains(cause_has), "{stderr:?}: {cause}");
                    assert!(refs.contains("refused: unpacker error"), "{refs}");
                }
                other => panic!("{stderr:?}: {other:?}"),
            }
        }
        // a hook's refusal that mentions no storage is a refusal
        let stdout = porcelain(&[(
            &format!("refs/receipts/{W}"),
            "[remote rejected] (hook declined)",
        )]);
        assert!(matches!(
            refusal("origin", &stdout, "remote: Permission denied by policy\n"),
            Some(PushError::Refused { .. })
        ));
        // a server hook that failed for want of space is a storage failure
        assert!(matches!(
            refusal("origin", &stdout, full),
            Some(PushError::Unstored { .. })
        ));
    }

    #[test]
    fn a_chain_create_denied_names_rw_on_the_chain_namespace() {
        let stdout = porcelain(&[(
            &format!("refs/receipts/{W}"),
            "[remote rejected] (hook declined)",
        )]);
        let stderr = format!("remote: FATAL: C refs/receipts/{W} app alice DENIED by fallthru\n");
        let Some(PushError::Refused { hint, .. }) = refusal("origin", &stdout, &stderr) else {
            panic!("a refusal");
        };
        assert!(
            hint.contains("grant `RW refs/receipts/ = alice` under `repo app`"),
            "{hint}"
        );
    }

    #[test]
    fn a_push_that_was_not_refused_is_not_called_a_refusal() {
        assert!(
            refusal(
                "origin",
                "To x\nDone\n",
                "fatal: could not read from remote repository"
            )
            .is_none()
        );
    }
}
