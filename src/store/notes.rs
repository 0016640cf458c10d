//! The notes index: `refs/notes/receipts/<writer>`.
//!
//! Notes are a display for stock git, never an input to a decision: anyone who
//! can push can rewrite a notes ref, so status, gate, show, the hooks and fetch read
//! the chains through the receipt index ([`super::index`]) instead. Each receipt is
//! noted on its subject commit (so `git log --notes='receipts/*'` shows it) and on
//! its inputs tree. A note shows the newest receipt per check of its writer on
//! that object, one line each:
//!
//! ```text
//! <receipt id> <chain commit> <check name> <passed|failed>
//! ```
//!
//! Notes are derived from the chain and never trusted on their own: a reader loads
//! the receipt from the chain commit and checks its signed subject. The notes commit
//! message records how far the chain has been indexed (`chain <oid> index <n>`), so
//! each append indexes exactly what is missing, including receipts whose notes a
//! crash cut off, and `reindex` can rebuild everything from scratch.

use std::collections::{BTreeMap, HashSet};

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;

use super::entry::{EntryReader, NoteSource, WalkReader};
use super::packed::Packs;
use super::{NOTES_PREFIX, Retry, Store, StoreError, git_err};
use crate::notice::Notice;

/// How many writers' notes [`Store::index_notes_of`] reads at a time (on
/// every core) before writing them: what it reads of them is held until then.
const NOTES_WAVE: usize = 16;

/// What [`Store::index_notes_of`] does to a writer's notes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotesUpdate {
    /// Note the receipts the notes do not show yet ([`Store::index_notes`]).
    Extend,
    /// Build the tree from the chain alone, a commit on the old notes
    /// ([`Store::reindex_notes`]).
    Rebuild,
    /// Build the tree from the chain alone, a commit with no parent
    /// ([`Store::restart_notes`]).
    Restart,
}

impl NotesUpdate {
    fn rebuilds(self) -> bool {
        self != NotesUpdate::Extend
    }

    fn root(self) -> bool {
        self == NotesUpdate::Restart
    }
}

/// Above this many notes at the top level, switch to git's 2/38 fanout.
const FLAT_LIMIT: usize = 256;

/// The largest note git-receipt reads (1 MiB). A note holds one line (about 150
/// bytes) per check of its writer on the object, so this is thousands of checks;
/// a larger note is refused from its object header, never read: `verify` reports
/// it, and the next append replaces it with what the chain says.
pub const MAX_NOTE_BYTES: u64 = 1 << 20;

/// A note blob larger than [`MAX_NOTE_BYTES`], refused unread.
#[derive(Debug, thiserror::Error)]
#[error(
    "note {blob} is {size} bytes, over the {MAX_NOTE_BYTES}-byte (1 MiB) limit for a note, so it is not read"
)]
pub struct NoteTooLarge {
    /// The note blob.
    pub blob: ObjectId,
    /// Its size in bytes.
    pub size: u64,
}

/// The notes ref of a writer.
pub fn notes_ref(writer: &str) -> String {
    format!("{NOTES_PREFIX}{writer}")
}

/// One line of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteLine {
    /// The receipt id.
    pub id: String,
    /// The chain commit that holds it.
    pub commit: ObjectId,
    /// The check name (for people reading `git log`; the receipt decides).
    pub check: String,
    /// Passed or failed (for people; the receipt decides).
    pub passed: bool,
}

impl NoteLine {
    fn format(&self) -> String {
        format!(
            "{} {} {} {}\n",
            self.id,
            self.commit,
            self.check,
            if self.passed { "passed" } else { "failed" }
        )
    }

    fn parse(line: &str) -> Option<NoteLine> {
        let mut parts = line.split(' ');
        let id = parts.next()?.to_owned();
        let commit = ObjectId::from_hex(parts.next()?.as_bytes()).ok()?;
        let check = parts.next()?.to_owned();
        let passed = match parts.next()? {
            "passed" => true,
            "failed" => false,
            _ => return None,
        };
        (parts.next().is_none() && id.starts_with("sha256:")).then_some(NoteLine {
            id,
            commit,
            check,
            passed,
        })
    }
}

/// A note's text that is not in the format above.
#[derive(Debug, thiserror::Error)]
#[error("note on {object} in {refname} is corrupt at line {line}: {text:?}")]
pub struct CorruptNote {
    /// The notes ref.
    pub refname: String,
    /// The annotated object.
    pub object: ObjectId,
    /// 1-based line.
    pub line: usize,
    /// The offending text.
    pub text: String,
}

/// Parse a note's text.
pub fn parse_note(
    refname: &str,
    object: ObjectId,
    text: &[u8],
) -> Result<Vec<NoteLine>, CorruptNote> {
    let text_str = text.to_str_lossy();
    text_str
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| {
            NoteLine::parse(l).ok_or_else(|| CorruptNote {
                refname: refname.to_owned(),
                object,
                line: i + 1,
                text: l.chars().take(120).collect(),
            })
        })
        .collect()
}

/// One entry of a notes tree as [`Store::notes_changed`] compares them.
struct NotesTreeEntry {
    /// The path so far: the names above and its own.
    name: String,
    /// A tree to go into (its path is shorter than an object id).
    subtree: bool,
    /// The annotated object, when a note.
    note: Option<ObjectId>,
    oid: ObjectId,
}

/// The candidate paths of a note for `object` in git's fanout layouts.
fn note_paths(object: &ObjectId) -> [String; 3] {
    let h = object.to_hex().to_string();
    [
        format!("{}/{}", &h[..2], &h[2..]),
        h.clone(),
        format!("{}/{}/{}", &h[..2], &h[2..4], &h[4..]),
    ]
}

/// A notes commit built by [`Store::build_notes`], before its ref moves.
struct BuiltNotes {
    notes_tip: Option<ObjectId>,
    commit: ObjectId,
    /// The chain tip the notes were brought up to.
    chain_tip: ObjectId,
    /// Built from nothing, not on `notes_tip`'s tree.
    rebuild: bool,
    /// The chain tip `notes_tip`'s message records it built up to.
    recorded_chain: Option<ObjectId>,
    /// What it wrote, for [`Store::keep_written`]; empty when built in a
    /// batch, which holds them.
    written: Vec<super::concurrent_gc::Written>,
}

impl BuiltNotes {
    /// The chain tip these notes of `writer` are whole at, given what
    /// `whole` records ([`super::whole_notes`]): built from nothing, or on
    /// notes recorded whole at the chain tip their message names (a chain
    /// that moved under them was read as rewritten, `rebuild`).
    fn whole_at(&self, writer: &str, whole: &super::whole_notes::WholeNotes) -> Option<ObjectId> {
        let on_whole = match (self.notes_tip, self.recorded_chain) {
            (Some(notes), Some(chain)) => whole.covers(writer, chain, notes),
            _ => false,
        };
        (self.rebuild || on_whole).then_some(self.chain_tip)
    }
}

/// What a writer's notes lack, read ([`Store::plan_notes`]) before anything
/// is written ([`Store::write_planned_notes`]).
#[derive(Debug, PartialEq, Eq)]
struct NotesPlan {
    /// The chain tip the notes are brought up to.
    chain_tip: ObjectId,
    /// The notes commit they go on (none yet: `None`).
    notes_tip: Option<ObjectId>,
    /// Build the tree from nothing rather than on the notes tip's.
    rebuild: bool,
    /// The chain tip the notes tip's message records it built up to.
    recorded_chain: Option<ObjectId>,
    /// The chain index of `chain_tip`.
    tip_index: u64,
    /// Log blobs here whose refs a crash may have cut off.
    logs: Vec<ObjectId>,
    /// The new note lines, by annotated object, oldest receipt first.
    by_object: BTreeMap<ObjectId, Vec<NoteLine>>,
}

impl Store {
    /// Every writer with a notes ref here, sorted.
    pub fn notes_writers(&self) -> Result<Vec<String>, StoreError> {
        self.names_under(NOTES_PREFIX)
    }

    /// [`Store::notes_writers`] with each writer's notes tip, from the same
    /// one listing.
    pub fn notes_tips(&self) -> Result<Vec<(String, ObjectId)>, StoreError> {
        self.tips_under(NOTES_PREFIX)
    }

    /// Every object that has a note in `writer`'s notes (any fanout).
    pub fn noted_objects(&self, writer: &str) -> Result<HashSet<ObjectId>, StoreError> {
        Ok(self
            .note_entries(writer)?
            .into_iter()
            .map(|(o, _)| o)
            .collect())
    }

    /// Every note of `writer` as (annotated object, note blob), in any fanout.
    pub fn note_entries(&self, writer: &str) -> Result<Vec<(ObjectId, ObjectId)>, StoreError> {
        match self.notes_tip(writer)? {
            Some(tip) => self.note_entries_at(tip),
            None => Ok(Vec::new()),
        }
    }

    /// Every note of the notes commit `tip` as (annotated object, note blob), in
    /// any fanout.
    pub fn note_entries_at(&self, tip: ObjectId) -> Result<Vec<(ObjectId, ObjectId)>, StoreError> {
        self.note_entries_where(None, tip, |_| true, |_| true)
    }

    /// The notes on `objects` in the notes commit `tip`, as
    /// [`Store::note_entries_at`] lists them (any fanout), reading only the
    /// subtrees a path to one of them can pass through.
    pub fn notes_on(
        &self,
        tip: ObjectId,
        objects: &HashSet<ObjectId>,
    ) -> Result<Vec<(ObjectId, ObjectId)>, StoreError> {
        self.notes_on_read_by(None, tip, objects)
    }

    /// [`Store::note_entries`] of `writer`, or with `only` [`Store::notes_on`]
    /// (the notes of a tip on some objects), the trees read through `reader`'s packs
    /// where they hold them: listing every note of a writer reads a tree for
    /// each two or three notes (git's 2/38 fanout), and the packs keep the delta
    /// bases they inflate. Anything they decline is read the usual way, whose
    /// answer and error decide.
    pub fn note_entries_read_by(
        &self,
        reader: &EntryReader,
        writer: &str,
        only: Option<(ObjectId, &HashSet<ObjectId>)>,
    ) -> Result<Vec<(ObjectId, ObjectId)>, StoreError> {
        let packs = Some(reader.packs());
        match only {
            Some((tip, objects)) => self.notes_on_read_by(packs, tip, objects),
            None => match self.notes_tip(writer)? {
                Some(tip) => self.note_entries_where(packs, tip, |_| true, |_| true),
                None => Ok(Vec::new()),
            },
        }
    }

    fn notes_on_read_by(
        &self,
        packs: Option<&Packs>,
        tip: ObjectId,
        objects: &HashSet<ObjectId>,
    ) -> Result<Vec<(ObjectId, ObjectId)>, StoreError> {
        let hexes: Vec<String> = objects.iter().map(|o| o.to_string()).collect();
        self.note_entries_where(
            packs,
            tip,
            |prefix| {
                hexes.iter().any(|h| {
                    h.len() >= prefix.len()
                        && h.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
                })
            },
            |object| objects.contains(object),
        )
    }

    /// The notes of `tip` on objects `keep` takes, going into the subtrees whose
    /// path so far (the hex digits of the names above) `descend` takes; trees
    /// read through `packs` where they hold them.
    fn note_entries_where(
        &self,
        packs: Option<&Packs>,
        tip: ObjectId,
        descend: impl Fn(&str) -> bool,
        keep: impl Fn(&ObjectId) -> bool,
    ) -> Result<Vec<(ObjectId, ObjectId)>, StoreError> {
        use std::fmt::Write as _;
        let hex_len = self.repo.object_hash().len_in_hex();
        let mut out = Vec::new();
        let mut buf = Vec::new();
        let mut name = String::new();
        let mut stack = vec![(self.notes_commit_tree(packs, tip)?, String::new())];
        while let Some((tree, prefix)) = stack.pop() {
            self.each_in_notes_tree(packs, tree, &mut buf, |filename, mode, oid| {
                name.clear();
                name.push_str(&prefix);
                let _ = write!(name, "{filename}");
                if mode.is_tree() && name.len() < hex_len {
                    if descend(&name) {
                        stack.push((oid.to_owned(), name.clone()));
                    }
                } else if mode.is_blob()
                    && let Ok(object) = ObjectId::from_hex(name.as_bytes())
                    && keep(&object)
                {
                    out.push((object, oid.to_owned()));
                }
            })?;
        }
        Ok(out)
    }

    /// The tree of the notes commit `commit`: read through `packs` when they
    /// hold it, the usual way otherwise (whose error says what is wrong).
    fn notes_commit_tree(
        &self,
        packs: Option<&Packs>,
        commit: ObjectId,
    ) -> Result<ObjectId, StoreError> {
        let mut buf = Vec::new();
        match packs.and_then(|packs| super::entry::packed_commit_in(packs, &commit, &mut buf)) {
            Some((tree, _)) => Ok(tree),
            None => self.commit_tree(commit),
        }
    }

    /// Call `each` with every entry of the notes tree `tree` (name, mode, id):
    /// read through `packs` (into `buf`) when they hold it whole and every entry
    /// parses, the usual way otherwise, which says what is wrong.
    fn each_in_notes_tree(
        &self,
        packs: Option<&Packs>,
        tree: ObjectId,
        buf: &mut Vec<u8>,
        mut each: impl FnMut(&gix::bstr::BStr, gix::objs::tree::EntryMode, &gix::oid),
    ) -> Result<(), StoreError> {
        use gix::objs::{Kind, TreeRefIter};
        if let Some(packs) = packs
            && packs.read(&tree, buf) == Some(Kind::Tree)
            && TreeRefIter::from_bytes(buf, packs.hash()).all(|e| e.is_ok())
        {
            for e in TreeRefIter::from_bytes(buf, packs.hash()).flatten() {
                each(e.filename, e.mode, e.oid);
            }
            return Ok(());
        }
        let tree = self
            .repo
            .find_tree(tree)
            .map_err(git_err("reading a notes tree"))?;
        let decoded = tree.decode().map_err(git_err("decoding a notes tree"))?;
        for e in &decoded.entries {
            each(e.filename, e.mode, e.oid);
        }
        Ok(())
    }

    /// The objects whose notes differ between the notes commits `old` and `new`:
    /// on each, one of them holds a note the other does not hold at the same path
    /// with the same blob. Subtrees both hold alike are not read.
    pub fn notes_changed(
        &self,
        old: ObjectId,
        new: ObjectId,
    ) -> Result<HashSet<ObjectId>, StoreError> {
        self.notes_changed_in(None, old, new)
    }

    /// [`Store::notes_changed`], the commits and trees read through `reader`'s
    /// packs where they hold them (the bases they inflate kept: a writer's
    /// notes trees are deltas of each other), the usual way otherwise.
    pub fn notes_changed_read_by(
        &self,
        reader: &EntryReader,
        old: ObjectId,
        new: ObjectId,
    ) -> Result<HashSet<ObjectId>, StoreError> {
        self.notes_changed_in(Some(reader.packs()), old, new)
    }

    fn notes_changed_in(
        &self,
        packs: Option<&Packs>,
        old: ObjectId,
        new: ObjectId,
    ) -> Result<HashSet<ObjectId>, StoreError> {
        let hex_len = self.repo.object_hash().len_in_hex();
        let mut buf = Vec::new();
        let mut list =
            |tree: Option<ObjectId>, prefix: &str| -> Result<Vec<NotesTreeEntry>, StoreError> {
                let Some(tree) = tree else {
                    return Ok(Vec::new());
                };
                let mut entries = Vec::new();
                self.each_in_notes_tree(packs, tree, &mut buf, |filename, mode, oid| {
                    let name = format!("{prefix}{filename}");
                    // mutants: `||` for either `&&` here, and `<=`, differ only
                    // on entries no notes tree holds (a tree of a whole id's
                    // name, a blob of a short one), which name no object
                    let subtree = mode.is_tree() && name.len() < hex_len;
                    let note = (!subtree && mode.is_blob())
                        .then(|| ObjectId::from_hex(name.as_bytes()).ok())
                        .flatten();
                    entries.push(NotesTreeEntry {
                        name,
                        subtree,
                        note,
                        oid: oid.to_owned(),
                    });
                })?;
                Ok(entries)
            };
        let mut changed = HashSet::new();
        let mut stack = vec![(
            Some(self.notes_commit_tree(packs, old)?),
            Some(self.notes_commit_tree(packs, new)?),
            String::new(),
        )];
        while let Some((old, new, prefix)) = stack.pop() {
            let (old, new) = (list(old, &prefix)?, list(new, &prefix)?);
            let key = |e: &NotesTreeEntry| (e.name.clone(), e.subtree, e.oid);
            let (old_keys, new_keys): (HashSet<_>, HashSet<_>) =
                (old.iter().map(key).collect(), new.iter().map(key).collect());
            let new_subtrees: HashSet<&str> = new
                .iter()
                .filter(|n| n.subtree)
                .map(|n| n.name.as_str())
                .collect();
            for n in &new {
                if old_keys.contains(&key(n)) {
                    continue;
                }
                if n.subtree {
                    let before = old
                        .iter()
                        .find(|o| o.subtree && o.name == n.name)
                        .map(|o| o.oid);
                    stack.push((before, Some(n.oid), n.name.clone()));
                } else if let Some(object) = n.note {
                    changed.insert(object);
                }
            }
            for o in &old {
                if new_keys.contains(&key(o)) {
                    continue;
                }
                if o.subtree {
                    // a subtree by that name in both was pushed above
                    if !new_subtrees.contains(o.name.as_str()) {
                        stack.push((Some(o.oid), None, o.name.clone()));
                    }
                } else if let Some(object) = o.note {
                    changed.insert(object);
                }
            }
        }
        Ok(changed)
    }

    /// The bytes of a blob.
    pub fn blob(&self, id: ObjectId) -> Result<Vec<u8>, StoreError> {
        Ok(self
            .repo
            .find_blob(id)
            .map_err(git_err(format!("reading blob {id}")))?
            .take_data())
    }

    /// The bytes of note blob `id`, or [`NoteTooLarge`] (decided from the object
    /// header, before anything is read) when it is over [`MAX_NOTE_BYTES`].
    pub fn note_blob(&self, id: ObjectId) -> Result<Result<Vec<u8>, NoteTooLarge>, StoreError> {
        let size = self
            .repo
            .find_header(id)
            .map_err(git_err(format!("reading note {id}")))?
            .size();
        if size > MAX_NOTE_BYTES {
            return Ok(Err(NoteTooLarge { blob: id, size }));
        }
        self.blob(id).map(Ok)
    }

    /// The tip of a writer's notes ref.
    pub fn notes_tip(&self, writer: &str) -> Result<Option<ObjectId>, StoreError> {
        self.ref_value(&notes_ref(writer))
    }

    /// The raw note text on `object` in the notes tree `tree` (bounded by
    /// [`MAX_NOTE_BYTES`]: see [`Store::note_blob`]).
    fn note_in_tree(
        &self,
        tree: ObjectId,
        object: &ObjectId,
    ) -> Result<Option<Result<Vec<u8>, NoteTooLarge>>, StoreError> {
        let tree = self
            .repo
            .find_tree(tree)
            .map_err(git_err("reading a notes tree"))?;
        for path in note_paths(object) {
            if let Some(entry) = tree
                .lookup_entry_by_path(&path)
                .map_err(git_err("looking up a note"))?
                && entry.mode().is_blob()
            {
                return self.note_blob(entry.oid().to_owned()).map(Some);
            }
        }
        Ok(None)
    }

    /// The raw text of the note on `object` in `writer`'s notes.
    pub fn note_text(&self, writer: &str, object: ObjectId) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(tip) = self.notes_tip(writer)? else {
            return Ok(None);
        };
        let tree = self.commit_tree(tip)?;
        match self.note_in_tree(tree, &object)? {
            None => Ok(None),
            Some(Ok(text)) => Ok(Some(text)),
            Some(Err(big)) => Err(StoreError::Git {
                what: format!("reading the note on {object} in {}", notes_ref(writer)),
                source: Box::new(big),
            }),
        }
    }

    /// The note lines on `object` in `writer`'s notes, or `None` without a note.
    pub fn read_note(
        &self,
        writer: &str,
        object: ObjectId,
    ) -> Result<Option<Vec<NoteLine>>, StoreError> {
        let Some(tip) = self.notes_tip(writer)? else {
            return Ok(None);
        };
        let tree = self.commit_tree(tip)?;
        match self.note_in_tree(tree, &object)? {
            None => Ok(None),
            Some(Err(big)) => Err(StoreError::Git {
                what: format!("reading the note on {object} in {}", notes_ref(writer)),
                source: Box::new(big),
            }),
            Some(Ok(text)) => parse_note(&notes_ref(writer), object, &text)
                .map(Some)
                .map_err(|e| StoreError::Git {
                    what: "reading notes".into(),
                    source: Box::new(e),
                }),
        }
    }

    /// [`Store::reindex_notes`] of every writer of `writers` (as
    /// [`Store::writers`] lists them; a name that is no writer id is left
    /// alone), in one pack when there are many: a loose file an object was
    /// 30,000 files for 10,000 writers, each read back one by one.
    pub fn reindex_notes_of(&self, writers: &[(String, ObjectId)]) -> Result<(), StoreError> {
        let rebuild: Vec<(String, NotesUpdate)> = writers
            .iter()
            .filter(|(writer, _)| crate::receipt::is_valid_writer_id(writer))
            .map(|(writer, _)| (writer.clone(), NotesUpdate::Rebuild))
            .collect();
        self.index_notes_of(&rebuild)
    }

    /// [`Store::index_notes`], [`Store::reindex_notes`] or
    /// [`Store::restart_notes`] (as each writer's [`NotesUpdate`] says) of many
    /// writers, their objects written as one pack: every notes
    /// commit is built first, the pack written, and then each ref moved and
    /// its objects checked as one update checks them. A writer whose notes
    /// moved meanwhile, or whose objects a concurrent prune took, is updated
    /// again the usual way.
    pub fn index_notes_of(&self, writers: &[(String, NotesUpdate)]) -> Result<(), StoreError> {
        // mutants: this bound, and the one on the transaction below, are
        // equivalent in answers: they choose only whether objects go in one
        // pack and refs in one transaction, or one by one (`benches/year.rs`)
        if writers.len() < 2 {
            for (w, how) in writers {
                self.update_notes(w, *how)?;
            }
            return Ok(());
        }
        let whole = self.whole_notes();
        // the writers whose notes are left whole, recorded once at the end
        let mut left_whole: Vec<(String, ObjectId, ObjectId)> = Vec::new();
        self.begin_object_batch();
        let mut built = Vec::with_capacity(writers.len());
        let mut start = 0;
        // a reader a thread, kept from one wave to the next (the pack files
        // opened once, the bases each inflated kept)
        let mut readers = WalkReader::packed(&self.repo).others(super::worker_threads());
        // read on every core a wave of writers at a time (what a wave read is
        // held until it is written), then written here in order
        for wave in writers.chunks(NOTES_WAVE) {
            for ((w, how), plan) in wave.iter().zip(self.plan_notes_on(wave, &mut readers)) {
                let b = match plan.and_then(|plan| {
                    plan.map(|p| self.write_planned_notes(w, &notes_ref(w), p, how.root()))
                        .transpose()
                }) {
                    Ok(b) => b,
                    Err(e) => {
                        // what was built so far stays unnamed: gc drops it
                        let _ = self.end_object_batch();
                        return Err(e);
                    }
                };
                let end = self.batched();
                if let Some(b) = b {
                    built.push((w, *how, b, start..end));
                }
                start = end;
            }
        }
        let objects = self.end_object_batch()?;
        // every notes ref in one transaction when all can move (a ref at a time
        // took a lock file and the packed-refs lock each); else one at a time
        let names: Vec<String> = built.iter().map(|(w, ..)| notes_ref(w)).collect();
        let moves: Vec<super::concurrent_gc::RefMove<'_>> = built
            .iter()
            .zip(&names)
            .map(|((_, _, b, _), n)| {
                (
                    n.as_str(),
                    b.notes_tip,
                    b.commit,
                    "git-receipt: index notes",
                )
            })
            .collect();
        let all_moved = moves.len() > 1 && self.update_logged_refs_at_once(&moves);
        if all_moved {
            self.wait_for_gc_started_before(std::time::SystemTime::now());
        }
        for (w, how, b, range) in built {
            let refname = notes_ref(w);
            // mutants: `&&` for `||` here, and waiting again below, are
            // equivalent in answers: a ref the transaction moved then fails
            // its own move and is brought up to date the usual way, which
            // finds nothing to do
            let moved = all_moved
                || self
                    .update_logged_ref(&refname, b.notes_tip, b.commit, "git-receipt: index notes")
                    .is_ok();
            if moved {
                if !all_moved {
                    self.wait_for_gc_started_before(std::time::SystemTime::now());
                }
                // its notes commit, trees and notes, all from the batch
                if self.keep_written(&refname, &objects[range]).is_ok() {
                    if let Some(chain) = b.whole_at(w, &whole) {
                        left_whole.push((w.clone(), chain, b.commit));
                    }
                    continue;
                }
                let _ = self.put_ref_back(
                    &refname,
                    b.commit,
                    b.notes_tip,
                    "git-receipt: put back (objects pruned)",
                );
            } else {
                self.clear_stale_lock(&refname);
            }
            if let Some(b) = self.update_notes_built(w, how)?
                && let Some(chain) = b.whole_at(w, &whole)
            {
                left_whole.push((w.clone(), chain, b.commit));
            }
        }
        self.record_whole_notes(&whole, &left_whole);
        Ok(())
    }

    /// Bring `writer`'s notes up to date with its chain: index every receipt the
    /// notes do not cover yet. Cheap when only the newest receipt is missing.
    pub fn index_notes(&self, writer: &str) -> Result<(), StoreError> {
        self.update_notes(writer, NotesUpdate::Extend)
    }

    /// Rebuild `writer`'s notes from the chain alone (a new notes commit on top of
    /// the old one, whose tree is built from scratch).
    pub fn reindex_notes(&self, writer: &str) -> Result<(), StoreError> {
        self.update_notes(writer, NotesUpdate::Rebuild)
    }

    /// [`Store::reindex_notes`] with a notes commit that has no parent: the
    /// notes of receipts a retention dropped go with the old history (the ref
    /// is rewritten; notes are a display, see `docs/format.md`).
    pub fn restart_notes(&self, writer: &str) -> Result<(), StoreError> {
        self.update_notes(writer, NotesUpdate::Restart)
    }

    fn update_notes(&self, writer: &str, how: NotesUpdate) -> Result<(), StoreError> {
        // the edge the notes are built under; the record is read only when
        // they move (an append, a push: most find nothing to do)
        let edge = self.shallow_stamp();
        if let Some(b) = self.update_notes_built(writer, how)? {
            let whole = self.whole_notes_under(&edge);
            if let Some(chain) = b.whole_at(writer, &whole) {
                self.record_whole_notes(&whole, &[(writer.to_owned(), chain, b.commit)]);
            }
        }
        Ok(())
    }

    /// [`Store::update_notes`] without the record of notes built whole: the
    /// notes commit its ref now names, when it built one.
    fn update_notes_built(
        &self,
        writer: &str,
        how: NotesUpdate,
    ) -> Result<Option<BuiltNotes>, StoreError> {
        let refname = notes_ref(writer);
        let mut retry = Retry::new();
        loop {
            let Some(built) = self.build_notes(writer, &refname, how)? else {
                return Ok(None);
            };
            let BuiltNotes {
                notes_tip,
                commit,
                ref written,
                ..
            } = built;
            // logged, like the chain: gc keeps every notes commit a reflog names
            match self.update_logged_ref(&refname, notes_tip, commit, "git-receipt: index notes") {
                Ok(()) => {
                    // A prune that listed the refs before this update deletes what it
                    // wrote (git's documented race): once any gc that started before
                    // it is done, look, and if anything went, put the ref back and
                    // build again.
                    self.wait_for_gc_started_before(std::time::SystemTime::now());
                    if self.keep_written(&refname, written).is_ok() {
                        return Ok(Some(built));
                    }
                    let back = self.put_ref_back(
                        &refname,
                        commit,
                        notes_tip,
                        "git-receipt: put back (objects pruned)",
                    );
                    // notes are derived: one left with objects missing is
                    // rebuilt by the next update, so trying again is safe
                    if !retry.again() {
                        return Err(StoreError::ObjectsPruned {
                            refname: refname.clone(),
                            what: "its notes commit and trees".into(),
                            attempts: retry.attempts(),
                            put_back: back,
                        });
                    }
                }
                Err(e) => {
                    self.clear_stale_lock(&refname);
                    if !retry.again() {
                        return Err(self.gave_up(&refname, &retry, e));
                    }
                }
            }
        }
    }

    /// The notes commit that brings `writer`'s notes (`refname`) up to date
    /// with its chain, its objects written (or held in a batch), no ref moved;
    /// `None` when there is nothing to do. Its chain is read the usual way:
    /// this is one writer's update (an append's, a push's, each of a
    /// `reindex`'s), and a reader of the packs opened for each mapped every
    /// pack again (a `reindex` of 200,000 receipts faulted 600,000 pages in
    /// again, four more seconds of system time); many writers' notes are
    /// planned through the packs ([`Store::index_notes_of`]).
    fn build_notes(
        &self,
        writer: &str,
        refname: &str,
        how: NotesUpdate,
    ) -> Result<Option<BuiltNotes>, StoreError> {
        match self.plan_notes(writer, how.rebuilds(), &WalkReader::usual())? {
            Some(plan) => self
                .write_planned_notes(writer, refname, plan, how.root())
                .map(Some),
            None => Ok(None),
        }
    }

    /// What [`Store::build_notes`] reads before it writes anything: the
    /// receipts `writer`'s notes lack, as note lines by annotated object;
    /// `None` when there is nothing to do. Reads only, so the notes of many
    /// writers are planned on every core ([`Store::plan_notes_on`]). The
    /// chain's commits and receipts are read by `reader`.
    fn plan_notes(
        &self,
        writer: &str,
        from_scratch: bool,
        reader: &WalkReader,
    ) -> Result<Option<NotesPlan>, StoreError> {
        let Some(chain_tip) = self.chain_tip(writer)? else {
            return Ok(None);
        };
        let notes_tip = self.notes_tip(writer)?;
        let recorded = match (notes_tip, from_scratch) {
            (Some(t), false) => self.recorded_position(t)?,
            _ => None,
        };
        if recorded.is_some_and(|(oid, _)| oid == chain_tip) {
            return Ok(None);
        }
        // Collect what is missing, newest first.
        let mut missing = Vec::new();
        let mut rebuild = from_scratch || notes_tip.is_none();
        let mut tip_index = None;
        self.walk_note_sources(reader, writer, chain_tip, |e| {
            let idx = e.index;
            tip_index.get_or_insert(idx);
            if let Some((oid, ridx)) = recorded {
                if e.commit == oid {
                    return Ok(false);
                }
                if idx <= ridx {
                    // Recorded position is not on this chain: it was rewritten.
                    rebuild = true;
                }
            }
            missing.push(e);
            Ok(true)
        })?;
        if let (Some((_, ridx)), Some(tidx), false) = (recorded, tip_index, rebuild)
            && tidx <= ridx
        {
            // Someone else already indexed further than this chain tip.
            return Ok(None);
        }
        // Receipts whose log refs a crash cut off get them when the notes are
        // written (v2 logs live beside the chain; the blob is here when this
        // clone wrote it).
        let logs = missing
            .iter()
            .filter_map(|e: &NoteSource| e.log)
            .filter(|b| self.repo.has_object(b))
            .collect();
        // Group the new lines by annotated object, oldest receipt first.
        let mut by_object: BTreeMap<ObjectId, Vec<NoteLine>> = BTreeMap::new();
        // Notes show check receipts only: a decision is read from the chains.
        for e in missing.iter().rev() {
            let Some(shown) = &e.shown else {
                continue;
            };
            let line = NoteLine {
                id: shown.id.clone(),
                commit: e.commit,
                check: shown.check.clone(),
                passed: shown.passed,
            };
            for oid in [shown.subject, shown.inputs] {
                let lines = by_object.entry(oid).or_default();
                if !lines.contains(&line) {
                    lines.push(line.clone());
                }
            }
        }
        Ok(Some(NotesPlan {
            chain_tip,
            notes_tip,
            rebuild,
            recorded_chain: recorded.map(|(oid, _)| oid),
            tip_index: tip_index.unwrap_or(0),
            logs,
            by_object,
        }))
    }

    /// [`Store::plan_notes`] of each of `writers`, in order, on as many
    /// threads as there are `readers` when there are several: each thread
    /// reads through its own store of this repository (gix's handles are
    /// not shared between threads) and its own reader, which the caller
    /// keeps for the next writers (its packs, opened once, keep the delta
    /// bases they inflated).
    fn plan_notes_on(
        &self,
        writers: &[(String, NotesUpdate)],
        readers: &mut [WalkReader],
    ) -> Vec<Result<Option<NotesPlan>, StoreError>> {
        // mutants: the bound is equivalent in answers (the plans are the same
        // read on one thread or many; `notes_planned_on_many_threads_are_the_notes_one_thread_builds`)
        if readers.len() == 1 || writers.len() < 2 {
            let reader = &readers[0];
            return writers
                .iter()
                .map(|(w, how)| self.plan_notes(w, how.rebuilds(), reader))
                .collect();
        }
        let workers: Vec<(Store, &mut WalkReader)> = readers
            .iter_mut()
            .take(writers.len())
            .map(|reader| (self.worker(), reader))
            .collect();
        super::in_order_on(
            writers.iter().collect(),
            workers,
            |(store, reader), (w, how)| store.plan_notes(w, how.rebuilds(), reader),
        )
    }

    /// Write the notes commit `plan` describes for `writer` (its objects
    /// written, or held in a batch), no ref moved.
    fn write_planned_notes(
        &self,
        writer: &str,
        refname: &str,
        plan: NotesPlan,
        root: bool,
    ) -> Result<BuiltNotes, StoreError> {
        let NotesPlan {
            chain_tip,
            notes_tip,
            rebuild,
            recorded_chain,
            tip_index,
            logs,
            by_object,
        } = plan;
        let base_tree = match (notes_tip, rebuild) {
            (Some(t), false) => self.commit_tree(t)?,
            _ => ObjectId::empty_tree(self.repo.object_hash()),
        };
        for blob in logs {
            self.set_log_ref(writer, blob)?;
        }
        let tree = self.write_notes_tree(base_tree, refname, by_object)?;
        let message =
            format!("Notes added by 'git receipt'\n\nchain {chain_tip} index {tip_index}\n");
        let (kind, bytes) =
            super::concurrent_gc::tool_commit(tree, notes_tip.filter(|_| !root), message);
        // what this update wrote, kept in memory to be written again if a
        // concurrent prune deletes it (see `concurrent_gc`); in a batch, which
        // holds every object (this commit too), the caller takes them from the
        // batch (they cannot be read back yet), and nothing is held twice
        let (commit, written) = if self.batching() {
            (self.put_object("a notes commit", kind, bytes)?, Vec::new())
        } else {
            let written_commit = self.put_kept_object("a notes commit", kind, bytes)?;
            let commit = written_commit.id;
            let mut written = vec![written_commit];
            for id in self.new_notes_objects(commit, base_tree)? {
                if id != commit {
                    written.push(self.written_copy(id, "a notes tree or note")?);
                }
            }
            (commit, written)
        };
        Ok(BuiltNotes {
            notes_tip,
            commit,
            chain_tip,
            rebuild,
            recorded_chain,
            written,
        })
    }

    /// The objects a notes update wrote: its commit, and every tree and note of
    /// the commit's tree that `base` (the tree it was built on) lacks.
    fn new_notes_objects(
        &self,
        commit: ObjectId,
        base: ObjectId,
    ) -> Result<Vec<ObjectId>, StoreError> {
        let tree = self.commit_tree(commit)?;
        let mut out = vec![commit];
        let mut pending = vec![(tree, Some(base))];
        while let Some((tree, base)) = pending.pop() {
            if Some(tree) == base {
                continue;
            }
            out.push(tree);
            let entries = |id: ObjectId| -> Result<Vec<(String, ObjectId, bool)>, StoreError> {
                Ok(self
                    .repo
                    .find_tree(id)
                    .map_err(git_err("reading a notes tree"))?
                    .decode()
                    .map_err(git_err("decoding a notes tree"))?
                    .entries
                    .iter()
                    .map(|e| (e.filename.to_string(), e.oid.to_owned(), e.mode.is_tree()))
                    .collect())
            };
            let old = match base {
                Some(b) if self.repo.has_object(b) => entries(b)?,
                _ => Vec::new(),
            };
            for (name, id, is_tree) in entries(tree)? {
                let before = old.iter().find(|(n, _, _)| *n == name).map(|e| e.1);
                if before == Some(id) {
                    continue;
                }
                if is_tree {
                    pending.push((id, before));
                } else {
                    out.push(id);
                }
            }
        }
        Ok(out)
    }

    /// The `chain <oid> index <n>` a notes commit records, if it records one.
    fn recorded_position(
        &self,
        notes_commit: ObjectId,
    ) -> Result<Option<(ObjectId, u64)>, StoreError> {
        let c = self
            .repo
            .find_commit(notes_commit)
            .map_err(git_err("reading the notes commit"))?;
        let msg = c
            .message_raw()
            .map_err(git_err("reading the notes commit message"))?
            .to_str_lossy()
            .into_owned();
        Ok(msg.lines().find_map(|l| {
            let mut p = l.strip_prefix("chain ")?.split(" index ");
            let oid = ObjectId::from_hex(p.next()?.as_bytes()).ok()?;
            let idx = p.next()?.parse().ok()?;
            Some((oid, idx))
        }))
    }

    /// Write a notes tree: `base` plus the given lines, appended to existing notes.
    fn write_notes_tree(
        &self,
        base: ObjectId,
        refname: &str,
        additions: BTreeMap<ObjectId, Vec<NoteLine>>,
    ) -> Result<ObjectId, StoreError> {
        let base_tree = self
            .repo
            .find_tree(base)
            .map_err(git_err("reading the notes tree"))?;
        let top: Vec<(String, bool)> = base_tree
            .decode()
            .map_err(git_err("decoding the notes tree"))?
            .entries
            .iter()
            .map(|e| (e.filename.to_string(), e.mode.is_tree()))
            .collect();
        let fanned = top
            .iter()
            .any(|(name, is_tree)| *is_tree && name.len() == 2);
        let mut editor = self
            .repo
            .edit_tree(base)
            .map_err(git_err("editing the notes tree"))?;
        let fanout = fanned || top.len() + additions.len() >= FLAT_LIMIT;
        if fanout && !fanned {
            // Move every flat note under its 2-character directory, as git does
            // once a notes tree grows.
            for (name, is_tree) in &top {
                if *is_tree || name.len() != self.repo.object_hash().len_in_hex() {
                    continue;
                }
                let entry = base_tree
                    .find_entry(name.as_str())
                    .expect("listed from this tree");
                let oid = entry.oid().to_owned();
                editor
                    .remove(name.as_str())
                    .map_err(git_err("re-laying out notes"))?;
                editor
                    .upsert(
                        format!("{}/{}", &name[..2], &name[2..]),
                        EntryKind::Blob,
                        oid,
                    )
                    .map_err(git_err("re-laying out notes"))?;
            }
        }
        for (object, lines) in additions {
            let mut existing = match self.note_in_tree(base, &object)? {
                Some(Ok(text)) => parse_note(refname, object, &text).unwrap_or_else(|e| {
                    // A corrupt note is replaced by what the chain says; tell the user.
                    self.notice(Notice::warning("note-corrupt", e.to_string()));
                    Vec::new()
                }),
                // so is one too large to read
                Some(Err(big)) => {
                    self.notice(Notice::warning(
                        "note-too-large",
                        format!(
                            "the note on {object} in {refname}: {}",
                            big.to_string().lines().next().unwrap_or_default()
                        ),
                    ));
                    Vec::new()
                }
                None => Vec::new(),
            };
            // A note shows the newest receipt per check of its writer on the object
            // (lines arrive oldest first), so its size is bounded by the number of
            // checks, never by how often one commit was checked.
            for l in lines {
                existing.retain(|x| x.check != l.check);
                existing.push(l);
            }
            let text: String = existing.iter().map(NoteLine::format).collect();
            let blob = self.put_object("a note", gix::objs::Kind::Blob, text.into_bytes())?;
            let [fan, flat, deep] = note_paths(&object);
            for stale in [&fan, &flat, &deep] {
                // remove any copy in another layout so exactly one note remains
                let _ = editor.remove(stale.as_str());
            }
            let path = if fanout { fan } else { flat };
            editor
                .upsert(path, EntryKind::Blob, blob)
                .map_err(git_err("adding a note"))?;
        }
        // through the store's writer: it outlives a concurrent repack's
        // removing a fan-out directory, and hardens as core.fsync asks
        editor.detach().write(|tree| {
            let (kind, bytes) = super::concurrent_gc::encode(tree);
            self.put_object("a notes tree", kind, bytes)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freshness::rules::{Scratch, contract};
    use crate::receipt::writer_id;
    use crate::sign::SigningKey;

    /// Notes trees in git's 2/38 fanout, built by hand: a note whose blob
    /// changed inside a subtree, a subtree that is new, and a subtree both
    /// hold alike (not read), compared both ways, through the packs and the
    /// usual way. A flat tree holding the same notes as a fanout one counts
    /// every note as changed: they moved (read again, never passed over).
    #[test]
    fn notes_changed_descends_into_the_subtrees_that_differ() {
        use gix::objs::tree::{Entry, EntryKind};
        let s = Scratch::new();
        let store = &s.store;
        let blob = |text: &str| store.write_blob(text.as_bytes()).unwrap();
        let tree = |mut entries: Vec<(String, EntryKind, ObjectId)>| {
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let t = gix::objs::Tree {
                entries: entries
                    .into_iter()
                    .map(|(name, mode, oid)| Entry {
                        mode: mode.into(),
                        filename: name.into(),
                        oid,
                    })
                    .collect(),
            };
            let mut bytes = Vec::new();
            gix::objs::WriteTo::write_to(&t, &mut bytes).unwrap();
            store
                .put_object("a tree", gix::objs::Kind::Tree, bytes)
                .unwrap()
        };
        let commit = |tree: ObjectId| {
            let (kind, bytes) =
                super::super::concurrent_gc::tool_commit(tree, None, "notes\n".into());
            store.put_object("a commit", kind, bytes).unwrap()
        };
        let objects: Vec<ObjectId> = ["aa", "bb", "cc"]
            .iter()
            .map(|p| ObjectId::from_hex(format!("{p}{}", "1".repeat(38)).as_bytes()).unwrap())
            .collect();
        let (one, two) = (blob("note one\n"), blob("note two\n"));
        let fanned = |notes: &[(usize, ObjectId)]| {
            let top = notes
                .iter()
                .map(|&(o, note)| {
                    let hex = objects[o].to_string();
                    let sub = tree(vec![(hex[2..].to_owned(), EntryKind::Blob, note)]);
                    (hex[..2].to_owned(), EntryKind::Tree, sub)
                })
                .collect();
            commit(tree(top))
        };
        let old = fanned(&[(0, one), (1, one)]);
        let new = fanned(&[(0, one), (1, two), (2, one)]);
        let flat = commit(tree(vec![
            (objects[0].to_string(), EntryKind::Blob, one),
            (objects[1].to_string(), EntryKind::Blob, one),
        ]));
        let reader = store.shared_reader().local();
        let expected: HashSet<ObjectId> = HashSet::from([objects[1], objects[2]]);
        let moved: HashSet<ObjectId> = HashSet::from([objects[0], objects[1]]);
        for (a, b, want) in [
            (old, new, &expected),
            (new, old, &expected),
            (old, flat, &moved),
            (flat, old, &moved),
        ] {
            assert_eq!(&store.notes_changed(a, b).unwrap(), want, "{a} {b}");
            assert_eq!(
                &store.notes_changed_read_by(&reader, a, b).unwrap(),
                want,
                "{a} {b}, through the packs"
            );
        }
    }

    /// What each [`NotesUpdate`] does to two writers' notes at once (the
    /// batched path): `Extend` of notes already whole writes nothing;
    /// `Rebuild` writes a commit on the old notes with the same tree;
    /// `Restart` writes one with no parent and the same tree.
    #[test]
    fn each_notes_update_rebuilds_and_roots_as_it_says() {
        let s = Scratch::new();
        let c = contract("[check \"test\"]\n\trun = true\n\tpath = src\n");
        let (keys, ids) = crate::freshness::rules::keys_and_writers(31..33u8);
        for i in 0..3u64 {
            let commit = s.commit(&[("src/lib.rs", &format!("{i}\n"))], &format!("c{i}"));
            for k in &keys {
                s.run(k, &c, "test", commit, 0, i + 1);
            }
        }
        let tips = |s: &Scratch| -> Vec<ObjectId> {
            ids.iter()
                .map(|w| s.store.notes_tip(w).unwrap().unwrap())
                .collect()
        };
        let parents = |s: &Scratch, tip: ObjectId| -> Vec<ObjectId> {
            s.store
                .repo
                .find_commit(tip)
                .unwrap()
                .parent_ids()
                .map(|p| p.detach())
                .collect()
        };
        let trees = |s: &Scratch, tips: &[ObjectId]| -> Vec<ObjectId> {
            tips.iter()
                .map(|t| s.store.commit_tree(*t).unwrap())
                .collect()
        };
        let all = |how: NotesUpdate| -> Vec<(String, NotesUpdate)> {
            ids.iter().map(|w| (w.clone(), how)).collect()
        };
        let before = tips(&s);
        s.store.index_notes_of(&all(NotesUpdate::Extend)).unwrap();
        assert_eq!(tips(&s), before, "nothing to extend");
        s.store.index_notes_of(&all(NotesUpdate::Rebuild)).unwrap();
        let rebuilt = tips(&s);
        for (new, old) in rebuilt.iter().zip(&before) {
            assert_ne!(new, old, "a new notes commit");
            assert_eq!(parents(&s, *new), vec![*old], "on the old notes");
        }
        assert_eq!(trees(&s, &rebuilt), trees(&s, &before));
        s.store.index_notes_of(&all(NotesUpdate::Restart)).unwrap();
        let restarted = tips(&s);
        for (new, old) in restarted.iter().zip(&rebuilt) {
            assert_ne!(new, old, "a new notes commit");
            assert!(parents(&s, *new).is_empty(), "with no parent");
        }
        assert_eq!(trees(&s, &restarted), trees(&s, &before));
    }

    /// Which objects' notes changed between two notes commits is the same
    /// answer read through the packs (every notes commit and tree packed by
    /// stock git, so each read there is a delta of another) as the usual way,
    /// and it is the right one: the receipts run in between, on their commits
    /// and inputs trees, whichever way round the commits are given; a notes
    /// commit compared with itself changed nothing.
    #[test]
    fn notes_changed_read_through_the_packs_is_the_usual_answer() {
        let s = Scratch::new();
        let c = contract("[check \"test\"]\n\trun = true\n\tpath = src\n");
        let key = SigningKey::from_seed(&[11; 32]);
        let w = writer_id(key.public(), "default");
        let mut tips = Vec::new();
        let mut subjects = Vec::new();
        for i in 0..6u64 {
            let commit = s.commit(&[("src/lib.rs", &format!("{i}\n"))], &format!("c{i}"));
            s.run(&key, &c, "test", commit, (i % 2) as i64, i + 1);
            tips.push(s.store.notes_tip(&w).unwrap().unwrap());
            subjects.push(HashSet::from([
                commit,
                s.store.commit_tree(commit).unwrap(),
            ]));
        }
        s.git(&["gc", "-q", "--aggressive"]);
        let reader = s.store.shared_reader().local();
        for (a, b) in [(0, 1), (0, 5), (2, 4), (3, 3)] {
            let expected: HashSet<ObjectId> =
                subjects[a + 1..=b].iter().flatten().copied().collect();
            for (old, new) in [(tips[a], tips[b]), (tips[b], tips[a])] {
                let usual = s.store.notes_changed(old, new).unwrap();
                let packed = s.store.notes_changed_read_by(&reader, old, new).unwrap();
                assert_eq!(usual, expected, "{a}..{b}");
                assert_eq!(packed, expected, "{a}..{b}, through the packs");
            }
        }
        let held: Vec<_> = tips
            .iter()
            .filter(|t| reader.packs().read(t, &mut Vec::new()).is_some())
            .collect();
        assert_eq!(held.len(), tips.len(), "the packs hold every notes commit");
    }

    /// A receipt that names its commit as its inputs too (a writer may sign
    /// any subject) is noted on that object once, not twice.
    #[test]
    fn a_receipt_whose_inputs_name_its_commit_is_noted_on_it_once() {
        let s = Scratch::new();
        let c = contract("[check \"test\"]\n\trun = true\n\tpath = src\n");
        let key = SigningKey::from_seed(&[9; 32]);
        let commit = s.commit(&[("src/lib.rs", "a\n")], "a");
        let tree = s.store.commit_tree(commit).unwrap();
        let entry = s.run(&key, &c, "test", commit, 0, 1).commit;
        // the receipt's inputs edited to name the commit (the signature is
        // not the notes' to check: they show what the chain holds)
        let same = s.forged(
            entry,
            None,
            &format!("\"inputs\":\"{tree}\""),
            &format!("\"inputs\":\"{commit}\""),
        );
        let w = writer_id(key.public(), "default");
        s.git(&[
            "update-ref",
            &crate::store::chain::chain_ref(&w),
            &same.to_string(),
        ]);
        s.store.reindex_notes(&w).unwrap();
        let text = String::from_utf8(s.store.note_text(&w, commit).unwrap().unwrap()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert_eq!(s.store.note_entries(&w).unwrap().len(), 1);
    }

    /// Many writers' notes planned on several threads are the plans one
    /// thread reads, in the writers' order (writers noted already, noted in
    /// part, not at all, and rebuilt from scratch), and the notes
    /// `index_notes_of` writes from them are, for each writer, what
    /// rebuilding its notes alone from its chain writes.
    #[test]
    fn notes_planned_on_many_threads_are_the_notes_one_thread_builds() {
        let s = Scratch::new();
        let c = contract("[check \"test\"]\n\trun = true\n\tpath = src\n");
        let keys: Vec<SigningKey> = (1..=5u8).map(|i| SigningKey::from_seed(&[i; 32])).collect();
        let commits: Vec<ObjectId> = (0..4)
            .map(|i| s.commit(&[("src/lib.rs", &format!("{i}\n"))], &format!("c{i}")))
            .collect();
        let mut minute = 0;
        let mut run = |k: &SigningKey, commit: ObjectId, exit: i64| {
            minute += 1;
            s.run(k, &c, "test", commit, exit, minute);
        };
        // the first writer noted whole, the second in part, the rest not
        for &commit in &commits {
            run(&keys[0], commit, 0);
        }
        run(&keys[1], commits[0], 0);
        run(&keys[1], commits[1], 1);
        s.store.defer_notes();
        for (k, key) in keys.iter().enumerate().skip(1) {
            for (i, &commit) in commits.iter().enumerate().skip(usize::from(k == 1) * 2) {
                run(key, commit, (i % 2) as i64);
            }
        }
        let ids: Vec<String> = keys
            .iter()
            .map(|k| writer_id(k.public(), "default"))
            .collect();
        // the last rebuilt from scratch
        let writers: Vec<(String, NotesUpdate)> = ids
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let how = if i == 4 {
                    NotesUpdate::Restart
                } else {
                    NotesUpdate::Extend
                };
                (w.clone(), how)
            })
            .collect();
        let readers = |n: usize| WalkReader::packed(&s.store.repo).others(n);
        let one = s.store.plan_notes_on(&writers, &mut readers(1));
        let plans: Vec<&NotesPlan> = one
            .iter()
            .filter_map(|p| p.as_ref().unwrap().as_ref())
            .collect();
        assert_eq!(plans.len(), 4, "the first writer has nothing to note");
        assert!(one[0].as_ref().unwrap().is_none());
        assert!(!plans[0].rebuild && plans[0].notes_tip.is_some(), "in part");
        assert!(
            plans[1].rebuild && plans[1].notes_tip.is_none(),
            "not at all"
        );
        assert_eq!(plans[3].by_object.len(), 8, "4 commits and their 4 trees");
        for threads in [2, 3, 8] {
            let many = s.store.plan_notes_on(&writers, &mut readers(threads));
            assert!(
                format!("{many:?}") == format!("{one:?}"),
                "{threads} threads"
            );
        }
        s.store.index_notes_of(&writers).unwrap();
        for (w, _) in &writers {
            let tip = s.store.notes_tip(w).unwrap().unwrap();
            let tree = s.store.commit_tree(tip).unwrap();
            assert_eq!(s.store.note_entries(w).unwrap().len(), 8, "{w}");
            s.store.reindex_notes(w).unwrap();
            let again = s.store.notes_tip(w).unwrap().unwrap();
            assert_ne!(again, tip, "{w}: rebuilt");
            assert_eq!(s.store.commit_tree(again).unwrap(), tree, "{w}");
        }
    }
    /// The notes planned for each chain through a walk's reader (its packs
    /// opened before some chains were packed) are those planned reading
    /// everything the usual way: of a chain packed with a stub and a loose
    /// entry on top, one packed, one in a pack written since, and the error
    /// of one whose pack entry of a commit is damaged; from scratch, and from
    /// the notes each append left (which `a`'s stub moved away from).
    #[test]
    fn notes_planned_through_a_walk_s_packs_are_the_notes_planned_the_usual_way() {
        let m = crate::store::entry::walk_fixture::mixed();
        let store = &m.s.store;
        let late = WalkReader::packed(&store.repo);
        let usual = WalkReader::usual();
        for reader in [&m.early, &late] {
            for (w, _) in &m.writers {
                for from_scratch in [false, true] {
                    let ours = store.plan_notes(w, from_scratch, reader);
                    let theirs = store.plan_notes(w, from_scratch, &usual);
                    assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{w}");
                }
            }
        }
        // what they are: `a`'s four receipts (two objects each, noted on
        // the same commit and tree), `b`'s three; `d` unreadable at its
        // damaged commit
        let plan = |n: usize| store.plan_notes(&m.writers[n].0, true, &late);
        let a = plan(0).unwrap().unwrap();
        assert_eq!(a.by_object.values().map(Vec::len).sum::<usize>(), 8);
        let b = plan(1).unwrap().unwrap();
        assert_eq!(b.by_object.values().map(Vec::len).sum::<usize>(), 6);
        let d = plan(3).unwrap_err().to_string();
        assert!(
            d.contains(&m.damaged.to_string()) && d.contains("not a readable commit"),
            "{d}"
        );
    }

    /// In a clone that took a chain to a depth, the notes planned through a
    /// walk's reader stop at the shallow edge where those planned the usual
    /// way do (the parent there is in no pack, nor anywhere).
    #[test]
    fn notes_planned_through_a_walk_s_packs_stop_at_a_shallow_edge_as_the_usual_read_does() {
        let s = Scratch::new();
        let c = contract("[check \"test\"]\n\trun = true\n\tpath = src\n");
        let key = SigningKey::from_seed(&[9; 32]);
        let commit = s.commit(&[("src/lib.rs", "a\n")], "a");
        for minute in 1..=4 {
            s.run(&key, &c, "test", commit, 0, minute);
        }
        let w = writer_id(key.public(), "default");
        let clone = s.fetched_to_depth(2, &["refs/receipts/*:refs/receipts/*"]);
        let store = Store::open(clone.path()).unwrap();
        let usual = store.plan_notes(&w, true, &WalkReader::usual());
        let ours = store.plan_notes(&w, true, &WalkReader::packed(&store.repo));
        assert_eq!(format!("{ours:?}"), format!("{usual:?}"));
        let lines: usize = ours
            .unwrap()
            .unwrap()
            .by_object
            .values()
            .map(Vec::len)
            .sum();
        assert_eq!(lines, 4, "two receipts, each on its commit and tree");
    }
}
