//! The files of one chain entry's tree: `receipt.json` and the optional output log,
//! and the bounded read of `receipt.json` that every reader of chains shares (the
//! chain, the entry rules of `admit`, the index and the parallel verifier). Below
//! `chain` and `admit`, which both need it.

use gix::ObjectId;
use gix::objs::tree::EntryKind;

use super::packed::LazyPacks;
use super::stub::{MAX_STUB_BYTES, STUB_FILE, Stub};
use crate::receipt::MAX_RECEIPT_BYTES;

/// A receipt as a chain entry holds it, before its signature is checked.
type Receipt = crate::receipt::Receipt<crate::receipt::Unverified>;

/// Name of the receipt file in a chain commit's tree.
pub const RECEIPT_FILE: &str = "receipt.json";
/// Name of the optional full output log in a chain commit's tree.
pub const LOG_FILE: &str = "output.log";
/// Name of the signer's public key file in a chain commit's tree.
pub const SIGNER_FILE: &str = "signer.pub";

/// What is wrong with the `receipt.json` of a chain commit.
pub(crate) enum ReceiptFileProblem {
    /// Missing, not a regular file, or unreadable.
    Shape(String),
    /// Larger than [`MAX_RECEIPT_BYTES`] (refused before it is read).
    Oversized(usize),
    /// No `receipt.json` but a retention stub: the stub, or what is wrong with it.
    Stub(Box<Result<super::stub::Stub, String>>),
}

/// The receipt files admission read in this process, by tree, for the walks
/// that read the same entries again in the same command (a fetch admits each
/// entry, then builds its notes and indexes it: three reads of every receipt,
/// each inflating the tree and the blob's delta chain). A tree's id names its
/// content, so what is remembered is what a read would give: this speeds reads
/// up and decides nothing. Bounded: once [`RECALL_CAP`] bytes are held nothing
/// more is taken (evicting the oldest would miss every time for walks in the
/// order the entries were taken), and it is emptied when the [`Recalling`]
/// a command started is dropped.
static RECALL: std::sync::Mutex<Recall> = std::sync::Mutex::new(Recall {
    files: None,
    bytes: 0,
    packs: None,
    commits: None,
    derived: None,
});

/// At most this many chain commits' trees and parents are remembered (about a
/// hundred bytes each): every commit of a fetch of 200,000 receipts, half of
/// one of a million. What is not remembered is read again, through the packs.
/// (mutants: the bound is equivalent in answers: only memory and speed move.)
pub const RECALL_COMMITS: usize = 512 * 1024;

/// At most this many bytes of receipt files are remembered: about 90,000
/// receipts of a KiB (a 90-day fetch of 200,000 a year takes 66,000; at 32 MiB
/// half of them were read three times, `cargo bench --bench year`). What is
/// not remembered is read from the packs ([`packed_tree`]).
pub const RECALL_CAP: usize = 96 * 1024 * 1024;

struct Recall {
    files: Option<std::collections::HashMap<ObjectId, std::sync::Arc<[u8]>>>,
    bytes: usize,
    /// The pack files receipts not remembered are read from (the objects
    /// directory and its packs directory as they were when opened), so a walk
    /// past [`RECALL_CAP`] still inflates each receipt about once.
    packs: Option<RecallPacks>,
    /// Chain commits admission read, by id: the tree and the one parent (or
    /// none) the commit names. A commit's id names its content, so this is
    /// what reading it again gives. At most [`RECALL_COMMITS`].
    commits: Option<std::collections::HashMap<ObjectId, (ObjectId, Option<ObjectId>)>>,
    /// What the walks after admission take of each entry it admitted, by
    /// commit ([`Derived`]), counted in `bytes` as about what it holds.
    derived: Option<std::collections::HashMap<ObjectId, std::sync::Arc<Derived>>>,
}

/// What the walks after a fetch's admission (the notes planner's, the receipt
/// index's) take of one chain entry admission read, instead of reading and
/// parsing its receipt again: each is what that walk's own read of the entry
/// gives (a commit's id names its tree, and the tree its receipt), so this
/// speeds them up and decides nothing. About a third of the receipt's bytes,
/// so three times as many entries are held within [`RECALL_CAP`].
pub(crate) struct Derived {
    /// The chain it was read for: both walks read an entry for one chain,
    /// and the index's reading depends on which.
    writer: Box<str>,
    /// What the notes planner takes of it.
    pub(crate) note: NoteSource,
    /// What the receipt index takes of it: the index's own reading, made by
    /// admission and held here as it is (this module sits below the index).
    pub(crate) indexed: Box<dyn std::any::Any + Send + Sync>,
}

/// What the notes planner takes of one chain entry: where it sits, the log a
/// crash may have left without its ref, and what it shows on the two objects
/// it is about (a check receipt's: a decision is read from the chains, never
/// noted).
#[derive(Debug, Clone)]
pub(crate) struct NoteSource {
    /// The chain commit.
    pub(crate) commit: ObjectId,
    /// The entry below it, if any.
    pub(crate) parent: Option<ObjectId>,
    /// Its index in the chain.
    pub(crate) index: u64,
    /// The log blob a v2 receipt names with its size.
    pub(crate) log: Option<ObjectId>,
    /// What its note line shows, and where.
    pub(crate) shown: Option<Shown>,
}

/// A check receipt's note line, and the commit and inputs tree it is shown on.
#[derive(Debug, Clone)]
pub(crate) struct Shown {
    /// The receipt id.
    pub(crate) id: String,
    /// The check's name.
    pub(crate) check: String,
    /// Whether it passed.
    pub(crate) passed: bool,
    /// The commit it is about.
    pub(crate) subject: ObjectId,
    /// The inputs tree it is about.
    pub(crate) inputs: ObjectId,
}

impl NoteSource {
    /// What the planner takes of `receipt`, held by chain commit `commit`
    /// whose parent is `parent`.
    pub(crate) fn of(commit: ObjectId, parent: Option<ObjectId>, receipt: &Receipt) -> NoteSource {
        let b = receipt.body();
        let log = b
            .result
            .log
            .as_deref()
            .filter(|_| b.result.log_bytes.is_some())
            .and_then(|h| ObjectId::from_hex(h.as_bytes()).ok());
        let oid = |hex: &str| ObjectId::from_hex(hex.as_bytes()).ok();
        let shown = match (b.kind, oid(&b.subject.commit), oid(&b.subject.inputs)) {
            (crate::receipt::Kind::Check, Some(subject), Some(inputs)) => Some(Shown {
                id: receipt.id().to_owned(),
                check: b.check.name.clone(),
                passed: b.result.passed,
                subject,
                inputs,
            }),
            _ => None,
        };
        NoteSource {
            commit,
            parent,
            index: b.chain.index,
            log,
            shown,
        }
    }

    /// About what it holds on the heap, in bytes, which the memory's bound
    /// counts (mutants: equivalent in answers: only how much is held moves).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.shown
            .as_ref()
            .map_or(0, |s| s.id.len() + s.check.len())
    }
}

struct RecallPacks {
    objects: std::path::PathBuf,
    stamp: super::packed::PackDirStamp,
    packs: std::sync::Arc<LazyPacks>,
}

/// While one lives, admission remembers the receipt files it reads, for the
/// walks after it (at most `RECALL_CAP` bytes of them); dropped, they are
/// let go.
#[must_use = "receipt files are remembered only while it lives"]
pub struct Recalling(());

impl Recalling {
    /// Start remembering.
    pub fn start() -> Recalling {
        if let Ok(mut r) = RECALL.lock() {
            r.files.get_or_insert_with(Default::default);
            r.commits.get_or_insert_with(Default::default);
            r.derived.get_or_insert_with(Default::default);
        }
        Recalling(())
    }
}

impl Drop for Recalling {
    fn drop(&mut self) {
        forget_receipt_files();
    }
}

/// Remember `bytes`, the `receipt.json` that `tree` holds (read and bounded by
/// [`read_receipt_file_in`]), for later reads in this process, if a command
/// asked for that ([`Recalling`]).
pub(crate) fn remember_receipt_file(tree: ObjectId, bytes: &[u8]) {
    let Ok(mut r) = RECALL.lock() else { return };
    if r.bytes.saturating_add(bytes.len()) > RECALL_CAP {
        return;
    }
    let Some(files) = r.files.as_mut() else {
        return;
    };
    if files.insert(tree, bytes.into()).is_none() {
        r.bytes += bytes.len();
    }
}

/// Remember that chain commit `commit` names `tree` and `parent` (its one
/// parent, or none), as admission read it, for the walks after it in this
/// process, if a command asked for that ([`Recalling`]).
pub(crate) fn remember_commit(commit: ObjectId, tree: ObjectId, parent: Option<ObjectId>) {
    let Ok(mut r) = RECALL.lock() else { return };
    let Some(commits) = r.commits.as_mut() else {
        return;
    };
    // mutants: `<=` is equivalent in answers (one commit more remembered)
    if commits.len() < RECALL_COMMITS {
        commits.insert(commit, (tree, parent));
    }
}

/// The tree and parent of `commit`, when admission remembered them.
pub(super) fn recalled_commit(commit: &ObjectId) -> Option<(ObjectId, Option<ObjectId>)> {
    let r = RECALL.lock().ok()?;
    r.commits.as_ref()?.get(commit).copied()
}

/// Whether a command recalls ([`Recalling`]) and there is room for more.
/// (mutants: `true`, or `||`, is equivalent in answers: admission then makes
/// what [`remember_admitted`] lets go unheld.)
pub(crate) fn recalling() -> bool {
    RECALL
        .lock()
        .is_ok_and(|r| r.derived.is_some() && r.bytes < RECALL_CAP)
}

/// Remember what the walks after admission take of the entry `commit` of
/// chain `writer` (its parent `parent`, its receipt `receipt`, as admission
/// read them), if a command asked for that ([`Recalling`]): [`Derived`], with
/// `indexed`, the index's reading of it; its bytes instead when the index
/// declines it (`None`: then no walk takes it derived).
pub(crate) fn remember_admitted(
    commit: ObjectId,
    tree: ObjectId,
    parent: Option<ObjectId>,
    writer: &str,
    receipt: &Receipt,
    indexed: Option<Box<dyn std::any::Any + Send + Sync>>,
) {
    let Some(indexed) = indexed else {
        remember_receipt_file(tree, receipt.bytes());
        return;
    };
    let note = NoteSource::of(commit, parent, receipt);
    // mutants: the size's arithmetic, the bound's comparisons and its count
    // below are equivalent in answers: only how much is held moves
    let size = 256 + note.heap_bytes() + writer.len();
    let derived = std::sync::Arc::new(Derived {
        writer: writer.into(),
        note,
        indexed,
    });
    let Ok(mut r) = RECALL.lock() else { return };
    if r.bytes.saturating_add(size) > RECALL_CAP {
        return;
    }
    let Some(map) = r.derived.as_mut() else {
        return;
    };
    if map.insert(commit, derived).is_none() {
        r.bytes += size;
    }
}

/// What admission remembered of the entry `commit` read for chain `writer`.
pub(crate) fn recalled_derived(commit: &ObjectId, writer: &str) -> Option<std::sync::Arc<Derived>> {
    let r = RECALL.lock().ok()?;
    r.derived
        .as_ref()?
        .get(commit)
        .filter(|d| &*d.writer == writer)
        .cloned()
}

/// Let go of every remembered receipt file and commit, and remember no more.
fn forget_receipt_files() {
    if let Ok(mut r) = RECALL.lock() {
        r.files = None;
        r.bytes = 0;
        r.packs = None;
        r.commits = None;
        r.derived = None;
    }
}

/// While a command recalls ([`Recalling`]): the packs of `repo`'s objects
/// directory, opened again whenever its packs directory changed (a fetch
/// wrote a pack since).
fn recall_packs(repo: &gix::Repository) -> Option<std::sync::Arc<LazyPacks>> {
    let mut r = RECALL.lock().ok()?;
    r.files.as_ref()?;
    let objects = repo.objects.store_ref().path();
    let stamp = super::packed::pack_dir_stamp(objects)?;
    // mutants: opening the packs again when nothing changed is equivalent in
    // answers (they read the same objects; only speed moves)
    match &r.packs {
        Some(p) if p.objects == objects && p.stamp == stamp => Some(p.packs.clone()),
        _ => {
            let packs = std::sync::Arc::new(LazyPacks::of(repo));
            r.packs = Some(RecallPacks {
                objects: objects.to_owned(),
                stamp,
                packs: packs.clone(),
            });
            Some(packs)
        }
    }
}

fn recalled(tree: &ObjectId) -> Option<Vec<u8>> {
    let r = RECALL.lock().ok()?;
    r.files.as_ref()?.get(tree).map(|b| b.to_vec())
}

/// The bytes of `receipt.json` in a chain commit's tree, checking that it is a
/// regular file of bounded size. Shared by every reader of chains (the store and
/// the parallel verifier, which passes its thread's own repository handle).
pub(crate) fn read_receipt_file(
    repo: &gix::Repository,
    tree: ObjectId,
) -> Result<Vec<u8>, ReceiptFileProblem> {
    if let Some(bytes) = recalled(&tree) {
        return Ok(bytes);
    }
    if let Some(t) = recall_packs(repo).and_then(|p| packed_tree(p.get(), tree)) {
        return Ok(t.bytes);
    }
    read_receipt_file_usual(repo, tree)
}

/// [`read_receipt_file`] through gix alone: what every faster read gives way
/// to, whose answer and wording decide.
fn read_receipt_file_usual(
    repo: &gix::Repository,
    tree: ObjectId,
) -> Result<Vec<u8>, ReceiptFileProblem> {
    let tree = repo
        .find_tree(tree)
        .map_err(|e| ReceiptFileProblem::Shape(format!("tree unreadable: {e}")))?;
    read_receipt_file_in(repo, &tree)
}

/// [`read_receipt_file`] of a tree already read.
pub(crate) fn read_receipt_file_in(
    repo: &gix::Repository,
    tree: &gix::Tree<'_>,
) -> Result<Vec<u8>, ReceiptFileProblem> {
    let shape = ReceiptFileProblem::Shape;
    let Some(entry) = tree.find_entry(RECEIPT_FILE) else {
        return Err(match tree.find_entry(STUB_FILE) {
            Some(stub) => ReceiptFileProblem::Stub(Box::new(read_stub(repo, &stub))),
            None => shape(format!("no {RECEIPT_FILE} in its tree")),
        });
    };
    read_bounded(repo, &entry, RECEIPT_FILE, MAX_RECEIPT_BYTES).map_err(|p| match p {
        FileProblem::Shape(why) => shape(why),
        FileProblem::Oversized(size) => ReceiptFileProblem::Oversized(size),
    })
}

/// What is wrong with a file of a chain commit's tree.
enum FileProblem {
    /// Not a regular file, or unreadable.
    Shape(String),
    /// Larger than the limit (refused before it is read).
    Oversized(usize),
}

/// The bytes of `entry`, the file `name` of a chain commit's tree, when it is
/// a regular file of at most `max` bytes: the size is read first, so an
/// oversized blob is refused before it is read into memory.
fn read_bounded(
    repo: &gix::Repository,
    entry: &gix::object::tree::EntryRef<'_, '_>,
    name: &str,
    max: usize,
) -> Result<Vec<u8>, FileProblem> {
    let what = match entry.mode().kind() {
        EntryKind::Blob => None,
        EntryKind::BlobExecutable => Some("an executable file"),
        EntryKind::Link => Some("a symbolic link"),
        EntryKind::Tree => Some("a directory (tree)"),
        EntryKind::Commit => Some("a submodule (commit)"),
    };
    if let Some(what) = what {
        return Err(FileProblem::Shape(format!(
            "{name} is {what}, not a regular file"
        )));
    }
    let oid = entry.oid().to_owned();
    let header = repo
        .find_header(oid)
        .map_err(|e| FileProblem::Shape(format!("{name} unreadable: {e}")))?;
    let size = usize::try_from(header.size()).unwrap_or(usize::MAX);
    if size > max {
        return Err(FileProblem::Oversized(size));
    }
    let blob = repo
        .find_blob(oid)
        .map_err(|e| FileProblem::Shape(format!("{name} unreadable: {e}")))?;
    // A copy of exactly its size: the decoder's buffer, sized for a whole delta
    // chain, goes back to the repository for the next read (a verify holds
    // thousands of these at a time).
    Ok(blob.data.to_vec())
}

/// The retention stub a chain commit's tree holds as `stub.json`: a regular
/// file of at most [`MAX_STUB_BYTES`], read strictly.
fn read_stub(
    repo: &gix::Repository,
    entry: &gix::object::tree::EntryRef<'_, '_>,
) -> Result<Stub, String> {
    let bytes = read_bounded(repo, entry, STUB_FILE, MAX_STUB_BYTES).map_err(|p| match p {
        FileProblem::Shape(why) => why,
        FileProblem::Oversized(size) => {
            format!("{STUB_FILE} is {size} bytes, over the {MAX_STUB_BYTES} byte limit")
        }
    })?;
    Stub::parse(&bytes)
}

/// What a chain entry's tree holds, with its `receipt.json` (read straight
/// from the pack files by [`packed_tree`], or the usual way by admission).
pub(crate) struct EntryFiles {
    /// The bytes of `receipt.json`.
    pub(crate) bytes: Vec<u8>,
    /// The `signer.pub` blob, if the tree holds one.
    pub(crate) signer_blob: Option<ObjectId>,
    /// Whether the tree holds a log.
    pub(crate) has_log: bool,
    /// Whether it holds exactly what an entry may: besides `receipt.json`, at
    /// most one `signer.pub` and one log, each a regular file.
    pub(crate) only_entry_files: bool,
}

/// The tree `tree` and its `receipt.json` read through `packs` (which keep the
/// delta bases they inflate, so a walk in chain order inflates each receipt
/// about once), when both are packed there and the tree holds exactly one
/// `receipt.json`, a regular file of at most [`MAX_RECEIPT_BYTES`]. `None` for
/// anything else (loose, damaged, a stub, oversized, not a regular file): read
/// it the usual way, whose answer and wording decide.
///
/// mutants: every `None` here (so every mutant that only declines more, or that
/// calls fewer trees entry-shaped) is equivalent in answers: the usual read
/// decides, and only speed moves.
pub(crate) fn packed_tree(packs: &super::packed::Packs, tree: ObjectId) -> Option<EntryFiles> {
    packed_tree_in(packs, tree, &mut Vec::new())
}

/// [`packed_tree`], decoding in `buf` (a walk passes the same one each time).
fn packed_tree_in(
    packs: &super::packed::Packs,
    tree: ObjectId,
    buf: &mut Vec<u8>,
) -> Option<EntryFiles> {
    use gix::objs::{Kind, TreeRefIter};
    if packs.read(&tree, buf)? != Kind::Tree {
        return None;
    }
    let (mut receipt, mut signer_blob, mut has_log, mut only_entry_files) =
        (None, None, false, true);
    for entry in TreeRefIter::from_bytes(buf, packs.hash()) {
        let entry = entry.ok()?;
        let regular = entry.mode.kind() == EntryKind::Blob;
        if entry.filename == RECEIPT_FILE {
            if !regular || receipt.replace(entry.oid.to_owned()).is_some() {
                return None;
            }
        } else if entry.filename == SIGNER_FILE && regular && signer_blob.is_none() {
            signer_blob = Some(entry.oid.to_owned());
        } else if entry.filename == LOG_FILE && regular && !has_log {
            has_log = true;
        } else {
            only_entry_files = false;
        }
    }
    if packs.read(&receipt?, buf)? != Kind::Blob || buf.len() > MAX_RECEIPT_BYTES {
        return None;
    }
    Some(EntryFiles {
        // a copy of exactly its size, as the usual read keeps (the decoder's
        // buffer holds a base and the delta besides)
        bytes: buf.to_vec(),
        signer_blob,
        has_log,
        only_entry_files,
    })
}

/// The tree and parents of `commit` read through `packs` (decoding in `buf`),
/// when a pack opened there holds it whole, a commit whose tree parses; `None`
/// otherwise (read it the usual way, whose answer and wording decide).
///
/// mutants: every `None` here is equivalent in answers: the usual read decides,
/// and only speed moves.
pub(super) fn packed_commit_in(
    packs: &super::packed::Packs,
    commit: &gix::oid,
    buf: &mut Vec<u8>,
) -> Option<(ObjectId, Vec<ObjectId>)> {
    use gix::objs::commit::ref_iter::Token;
    use gix::objs::{CommitRefIter, Kind};
    if packs.read(commit, buf)? != Kind::Commit {
        return None;
    }
    // The tree, then the parents, which git writes (and gix reads) right
    // after it and nowhere else: the headers after them, and the message,
    // are not parsed.
    let mut tokens = CommitRefIter::from_bytes(buf, packs.hash());
    let tree = Token::try_into_id(tokens.next()?.ok()?)?;
    let mut parents = Vec::with_capacity(1);
    for token in tokens {
        match token {
            Ok(Token::Parent { id }) => parents.push(id),
            _ => break,
        }
    }
    Some((tree, parents))
}

/// A reader's decoding buffer, kept from one read to the next (reads are
/// bounded by the packs' allocation limit, so this is too).
#[derive(Default)]
struct DecodeBuf(std::cell::Cell<Vec<u8>>);

impl DecodeBuf {
    /// `read` with the buffer, which is then kept.
    fn with<T>(&self, read: impl FnOnce(&mut Vec<u8>) -> T) -> T {
        let mut buf = self.0.take();
        let out = read(&mut buf);
        self.0.set(buf);
        out
    }
}

/// A chain commit as a walk reads it: its tree (or gix's word for why that
/// is unreadable) and its parents, first parent first.
pub(crate) struct ChainCommit {
    /// The tree.
    pub(crate) tree: Result<ObjectId, gix::Error>,
    /// The parents.
    pub(crate) parents: Vec<ObjectId>,
}

/// What a walk over chain commits (the receipt index's, the notes planner's)
/// reads each commit and its `receipt.json` through: pack files of its own,
/// opened at its first read, which keep the delta bases they inflate (gix's
/// reads keep only the objects asked for, so each read inflated a delta chain
/// again), and the usual read for anything they decline (a loose object, a
/// pack written since, a damaged entry, a stub), whose answer and wording
/// decide. A receipt admission remembered ([`Recalling`]) is taken from
/// memory first. One per thread: packs shared between threads would take
/// turns on their lock.
pub(crate) struct WalkReader {
    /// `None`: everything is read the usual way.
    packs: Option<LazyPacks>,
    /// What objects are decoded in.
    scratch: DecodeBuf,
}

impl WalkReader {
    /// A reader through the packs of `repo`'s object directory, opened when
    /// first read.
    pub(crate) fn packed(repo: &gix::Repository) -> WalkReader {
        WalkReader {
            packs: Some(LazyPacks::of(repo)),
            scratch: Default::default(),
        }
    }

    /// A reader that reads everything the usual way (as every read of a
    /// chain entry outside these walks does).
    pub(crate) fn usual() -> WalkReader {
        WalkReader {
            packs: None,
            scratch: Default::default(),
        }
    }

    /// Readers like this one for `n` threads: the same pack files, opened
    /// once for all, each with a cache and a lock of its own, which share
    /// this one's bytes ([`LazyPacks::others`]).
    pub(crate) fn others(&self, n: usize) -> Vec<WalkReader> {
        let reader = |packs| WalkReader {
            packs,
            scratch: Default::default(),
        };
        match &self.packs {
            Some(p) => p.others(n).into_iter().map(|p| reader(Some(p))).collect(),
            None => (0..n).map(|_| reader(None)).collect(),
        }
    }

    /// The tree and parents of chain commit `commit`, as
    /// [`gix::Repository::find_commit`] reads them: through the packs when
    /// they hold it whole, the usual way otherwise, whose answer (and error)
    /// decide.
    ///
    /// mutants: the packs declining more (skipping them) is equivalent in
    /// answers: only speed moves.
    pub(crate) fn commit(
        &self,
        repo: &gix::Repository,
        commit: ObjectId,
    ) -> Result<ChainCommit, gix::Error> {
        if let Some((tree, parent)) = recalled_commit(&commit) {
            return Ok(ChainCommit {
                tree: Ok(tree),
                parents: parent.into_iter().collect(),
            });
        }
        if let Some(packs) = &self.packs
            && let Some((tree, parents)) = self
                .scratch
                .with(|buf| packed_commit_in(packs.get(), &commit, buf))
        {
            return Ok(ChainCommit {
                tree: Ok(tree),
                parents,
            });
        }
        let c = repo.find_commit(commit)?;
        Ok(ChainCommit {
            tree: c.tree_id().map(|t| t.detach()),
            parents: c.parent_ids().map(|p| p.detach()).collect(),
        })
    }

    /// Whether the repository holds object `id`, as
    /// [`gix::Repository::has_object`] says: yes when a pack opened here
    /// lists it (where gix asks the indexes of every pack in turn), else as
    /// gix says.
    ///
    /// mutants: the packs saying no more often is equivalent in answers:
    /// only speed moves.
    pub(crate) fn has(&self, repo: &gix::Repository, id: ObjectId) -> bool {
        self.packs.as_ref().is_some_and(|p| p.get().holds(&id)) || repo.has_object(id)
    }

    /// [`read_receipt_file`] of the tree `tree`: remembered, else through
    /// the packs ([`packed_tree`]: an entry tree whose one `receipt.json` is
    /// a regular file within bounds), else the usual way, whose answer and
    /// wording decide.
    ///
    /// mutants: the packs declining more is equivalent in answers: only
    /// speed moves.
    pub(crate) fn receipt_file(
        &self,
        repo: &gix::Repository,
        tree: ObjectId,
    ) -> Result<Vec<u8>, ReceiptFileProblem> {
        let Some(packs) = &self.packs else {
            return read_receipt_file(repo, tree);
        };
        if let Some(bytes) = recalled(&tree) {
            return Ok(bytes);
        }
        if let Some(t) = self
            .scratch
            .with(|buf| packed_tree_in(packs.get(), tree, buf))
        {
            return Ok(t.bytes);
        }
        read_receipt_file_usual(repo, tree)
    }
}

/// One chain entry as read from git: its parents and its receipt file's bytes,
/// before they are parsed (or, in `bytes`, why there are none).
pub struct RawEntry {
    /// The chain commit.
    pub commit: ObjectId,
    /// Its parents, first parent first (none when it could not be read).
    pub parents: Vec<ObjectId>,
    /// The bytes of its `receipt.json`, or what is wrong, in words.
    pub bytes: Result<Vec<u8>, String>,
    /// A retention stub in place of `receipt.json` (`bytes` then says so).
    pub stub: Option<Stub>,
}

/// A repository handle to read chain entries on other threads (the verifier reads
/// one chain per thread while others check signatures): take one
/// [`EntryReader`] per thread with [`SharedReader::local`].
pub struct SharedReader {
    repo: gix::ThreadSafeRepository,
    /// The pack files, opened once for every reader (and every chain) of a walk,
    /// with the delta bases inflated so far.
    packs: std::sync::Arc<LazyPacks>,
}

/// One thread's reader of chain entries.
pub struct EntryReader {
    repo: gix::Repository,
    packs: std::sync::Arc<LazyPacks>,
    /// What objects are decoded in.
    scratch: DecodeBuf,
}

impl super::Store {
    /// A handle for reading chain entries on other threads.
    pub fn shared_reader(&self) -> SharedReader {
        SharedReader {
            repo: self.repo.clone().into_sync(),
            packs: std::sync::Arc::new(LazyPacks::of(&self.repo)),
        }
    }
}

impl SharedReader {
    /// A reader for this thread.
    pub fn local(&self) -> EntryReader {
        EntryReader {
            repo: self.repo.to_thread_local(),
            packs: self.packs.clone(),
            scratch: Default::default(),
        }
    }

    /// Readers for `n` threads that read at once: the same pack files,
    /// mapped once, each reader with a cache and a lock of its own
    /// ([`LazyPacks::others`]; `local` readers take turns on one lock).
    pub(crate) fn apart(&self, n: usize) -> Vec<EntryReader> {
        self.packs
            .others(n)
            .into_iter()
            .map(|packs| EntryReader {
                repo: self.repo.to_thread_local(),
                packs: std::sync::Arc::new(packs),
                scratch: Default::default(),
            })
            .collect()
    }
}

impl EntryReader {
    /// Read one chain entry: the commit, its tree and `receipt.json`. Read every
    /// entry of a walk in chain order through one reader, so the pack's delta-base
    /// cache stays warm: a receipt blob is mostly a delta against a receipt read
    /// shortly before, and with a cold cache each read would inflate its whole delta
    /// chain (ten deep on average at 100k receipts).
    pub fn read(&self, commit: ObjectId) -> RawEntry {
        if let Some(entry) = self.read_packed(commit) {
            return entry;
        }
        let repo = &self.repo;
        match repo.find_commit(commit) {
            Ok(c) => {
                let mut stub = None;
                let bytes = c
                    .tree_id()
                    .map_err(|e| format!("tree unreadable: {e}"))
                    .and_then(|t| {
                        read_receipt_file(repo, t.detach()).map_err(|problem| match problem {
                            ReceiptFileProblem::Shape(why) => why,
                            ReceiptFileProblem::Oversized(size) => format!(
                                "{RECEIPT_FILE} is {size} bytes, over the {MAX_RECEIPT_BYTES} byte limit"
                            ),
                            ReceiptFileProblem::Stub(read) => match *read {
                                Ok(s) => {
                                    let why = format!("a retention stub of {}", s.id);
                                    stub = Some(s);
                                    why
                                }
                                Err(why) => why,
                            },
                        })
                    });
                RawEntry {
                    commit,
                    parents: c.parent_ids().map(|p| p.detach()).collect(),
                    bytes,
                    stub,
                }
            }
            Err(e) => {
                let why = if repo.has_object(commit) {
                    format!("not a readable commit: {e}")
                } else if repo.is_shallow().unwrap_or(false) {
                    "the chain commit is not in this clone: a shallow fetch (--depth, or `git receipt fetch --since`) cut the chain here; `git receipt verify --since-checkpoint` starts from a signed checkpoint instead, or fetch refs/receipts/* in full (in this clone: `git receipt fetch --unshallow`)".to_owned()
                } else {
                    "the chain commit is not in this repository: the chain is incomplete".to_owned()
                };
                RawEntry {
                    commit,
                    parents: Vec::new(),
                    bytes: Err(why),
                    stub: None,
                }
            }
        }
    }

    /// Where `commit` sits in the pack files this reader reads through
    /// ([`super::packed::Packs::place`]), as a key to read entries in: pack
    /// order, each pack front to back. An object no pack here lists comes
    /// first (any order reads the same answers; this one only reads faster).
    pub(crate) fn place(&self, commit: &gix::oid) -> (usize, u64) {
        self.packs.get().place(commit).unwrap_or_default()
    }

    /// The pack files this reader reads through.
    pub(crate) fn packs(&self) -> &super::packed::Packs {
        self.packs.get()
    }

    /// The bytes of blob `id` when a pack holds it and it is at most `max` bytes;
    /// `None` for anything else (read it the usual way, which says what is wrong).
    pub fn packed_blob(&self, id: ObjectId, max: u64) -> Option<Vec<u8>> {
        self.scratch.with(|buf| {
            let kind = self.packs.get().read(&id, buf)?;
            (kind == gix::objs::Kind::Blob && buf.len() as u64 <= max).then(|| buf.to_vec())
        })
    }

    /// [`EntryReader::read`] of an entry whose three objects are all in the packs
    /// and all as they should be, read through [`Packs`]; `None` for anything else
    /// (not packed here, damaged, oversized, not a regular file, two files of that
    /// name), which the usual read then reads and words.
    ///
    /// mutants: every `None` here (and so every mutant that only declines more,
    /// or `None` for the body) is equivalent in answers: the usual read then
    /// reads and words the entry, and only speed moves (`benches/verify.rs`);
    /// what it does answer is held by `verify::tests::the_pack_reader_answers_only_what_it_read_whole`
    /// and `tests/it/tamper.rs` (the same findings packed as loose).
    pub(crate) fn read_packed(&self, commit: ObjectId) -> Option<RawEntry> {
        let packs = self.packs.get();
        self.scratch.with(|buf| {
            let (tree, parents) = packed_commit_in(packs, &commit, buf)?;
            let bytes = packed_tree_in(packs, tree, buf)?.bytes;
            Some(RawEntry {
                commit,
                parents,
                bytes: Ok(bytes),
                stub: None,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::walk_fixture::mixed;
    use super::*;
    use crate::freshness::rules::{Scratch, contract};
    use crate::sign::SigningKey;

    /// What a read of a chain commit answered, in words.
    fn said_commit(read: Result<ChainCommit, gix::Error>) -> String {
        match read {
            Ok(c) => format!(
                "tree {:?} parents {:?}",
                c.tree.map_err(|e| e.to_string()),
                c.parents
            ),
            Err(e) => format!("error {e}"),
        }
    }

    /// What a read of a receipt file answered, in words.
    fn said_file(read: Result<Vec<u8>, ReceiptFileProblem>) -> String {
        match read {
            Ok(bytes) => format!("bytes {}", String::from_utf8_lossy(&bytes)),
            Err(ReceiptFileProblem::Shape(why)) => format!("shape {why}"),
            Err(ReceiptFileProblem::Oversized(n)) => format!("oversized {n}"),
            Err(ReceiptFileProblem::Stub(read)) => format!("stub {:?}", read.map(|s| s.to_bytes())),
        }
    }

    /// A walk's reader answers every read as the usual read does (each chain
    /// commit's tree and parents, each tree's `receipt.json` or what is wrong
    /// with it, whether each parent is here, a tree or a missing id asked for
    /// as a commit): from its packs what they hold whole (the packs it opened,
    /// not one written since), the usual way anything loose, damaged or a stub.
    #[test]
    fn a_walk_reads_what_the_usual_read_does_from_the_packs_where_they_hold_it_whole() {
        let m = mixed();
        let repo = &m.s.store.repo;
        let (late, usual) = (WalkReader::packed(repo), WalkReader::usual());
        let missing = ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
        let trees: Vec<ObjectId> = m
            .commits
            .iter()
            .filter(|c| **c != m.damaged)
            .map(|c| m.s.store.commit_tree(*c).unwrap())
            .collect();
        for reader in [&m.early, &late] {
            for &id in m.commits.iter().chain(&trees).chain([&missing]) {
                let (ours, theirs) = (reader.commit(repo, id), usual.commit(repo, id));
                if let (Ok(o), Ok(t)) = (&ours, &theirs)
                    && let (Ok(tree), Ok(_)) = (&o.tree, &t.tree)
                {
                    assert_eq!(
                        said_file(reader.receipt_file(repo, *tree)),
                        said_file(usual.receipt_file(repo, *tree)),
                        "{id}"
                    );
                    for p in &o.parents {
                        assert_eq!(reader.has(repo, *p), usual.has(repo, *p));
                    }
                }
                assert_eq!(said_commit(ours), said_commit(theirs), "{id}");
            }
            assert!(!reader.has(repo, missing));
        }
        // and which came from the packs
        let from = |reader: &WalkReader| -> Vec<ObjectId> {
            let packs = reader.packs.as_ref().unwrap().get();
            m.commits
                .iter()
                .copied()
                .filter(|c| packed_commit_in(packs, c, &mut Vec::new()).is_some())
                .collect()
        };
        assert_eq!(from(&m.early), m.packed_early);
        assert_eq!(from(&late), m.packed_late);
        assert!(said_commit(usual.commit(repo, m.damaged)).starts_with("error"));
    }

    /// While a command recalls, a receipt it did not remember is read from the
    /// packs (the packs directory read again once a pack was written since),
    /// with the bytes stock git reads; loose or not recalling, the usual way.
    #[test]
    fn while_recalling_receipts_are_read_from_packs_written_since_as_git_reads_them() {
        let s = Scratch::new();
        let c = contract("[check \"test\"]\n\trun = true\n\tpath = src\n");
        let h = s.commit(&[("src/lib.rs", "a\n")], "a");
        let k = SigningKey::from_seed(&[5; 32]);
        let tree = |commit: ObjectId| {
            ObjectId::from_hex(
                s.git(&["rev-parse", &format!("{commit}^{{tree}}")])
                    .as_bytes(),
            )
            .unwrap()
        };
        // (the scratch's git trims its output: compared trimmed)
        let git_reads = |commit: ObjectId| {
            s.git(&["cat-file", "blob", &format!("{commit}:{RECEIPT_FILE}")])
                .into_bytes()
        };
        let first = s.run(&k, &c, "test", h, 0, 0).commit;
        s.git(&["repack", "-a", "-d", "-q"]);
        let repo = &s.store.repo;
        let _recalling = Recalling::start();
        let before = recall_packs(repo).expect("recalling");
        assert!(packed_tree(before.get(), tree(first)).is_some());
        let read = read_receipt_file(repo, tree(first)).ok().unwrap();
        assert_eq!(read.trim_ascii_end(), git_reads(first).trim_ascii_end());
        // a receipt written since is loose: not in the packs opened
        let second = s.run(&k, &c, "test", h, 0, 1).commit;
        assert!(packed_tree(before.get(), tree(second)).is_none());
        assert!(read_receipt_file(repo, tree(second)).is_ok());
        s.git(&["repack", "-d", "-q"]);
        let after = recall_packs(repo).expect("recalling");
        assert!(!std::sync::Arc::ptr_eq(&before, &after), "opened again");
        assert!(packed_tree(after.get(), tree(second)).is_some());
        let read = read_receipt_file(repo, tree(second)).ok().unwrap();
        assert_eq!(read.trim_ascii_end(), git_reads(second).trim_ascii_end());
    }
    /// What `held` finds remembered of each commit of `chain` (oldest first)
    /// right after admitting it whole while recalling. Another test's recall
    /// ending clears the memory (it is the process's), so a round that finds
    /// any gone is tried again.
    fn held_after_admission<T>(
        s: &Scratch,
        chain: &crate::freshness::rules::Chain,
        held: impl Fn(&ObjectId) -> Option<T>,
    ) -> Vec<T> {
        let known = super::super::admit::only_key(chain.key.public());
        let tip = *chain.commits.last().unwrap();
        for _ in 0..50 {
            let _recalling = Recalling::start();
            let a = s.store.admit(&chain.writer, tip, None, &known).unwrap();
            assert_eq!(a.admitted, chain.commits.len() as u64);
            if let Some(all) = chain.commits.iter().map(&held).collect() {
                return all;
            }
        }
        panic!("another test's recall ended every round");
    }

    /// While a command recalls, what admission remembers of each entry it
    /// admitted is what the walks after it would read: the notes planner's
    /// source (line, objects, index, parent, log) and the index's reading of
    /// the receipt, for the chain it was read for and no other.
    #[test]
    fn what_admission_derives_of_an_entry_is_what_the_walks_read_of_it() {
        let s = Scratch::new();
        let chain = s.chain(8, &[0, 1, 0]);
        let (w, commits) = (&chain.writer, &chain.commits);
        let repo = &s.store.repo;
        let read: Vec<(String, String)> = commits
            .iter()
            .map(|&commit| {
                let e = s.store.chain_entry(w, commit).unwrap();
                let note = NoteSource::of(commit, e.parent, &e.receipt);
                let tree = s.store.commit_tree(commit).unwrap();
                let bytes = read_receipt_file(repo, tree).ok().unwrap();
                let indexed = super::super::index::Indexed::of(commit, &bytes, w);
                assert!(indexed.is_entry());
                (format!("{note:?}"), format!("{indexed:?}"))
            })
            .collect();
        assert!(read[1].0.contains("passed: false"), "{}", read[1].0);
        // each as read for this chain, and nothing for another chain's name
        let held = held_after_admission(&s, &chain, |c| {
            recalled_derived(c, w).map(|d| (d, recalled_derived(c, "another-writer")))
        });
        for ((d, other), (note, indexed)) in held.iter().zip(&read) {
            assert_eq!(&format!("{:?}", d.note), note);
            let held = d.indexed.downcast_ref::<super::super::index::Indexed>();
            assert_eq!(&format!("{:?}", held.unwrap()), indexed);
            assert!(other.is_none());
        }
    }

    /// While a command recalls, the chain commits admission read are answered
    /// from memory as reading them answers: the tree and the one parent each
    /// names (the root none). Another test's recall ending clears what this one
    /// remembered (the memory is the process's), so a round that finds it gone
    /// is tried again.
    #[test]
    fn commits_admission_read_are_recalled_as_reading_them_answers() {
        let s = Scratch::new();
        let chain = s.chain(6, &[0; 4]);
        let commits = &chain.commits;
        let repo = &s.store.repo;
        let usual = WalkReader::usual();
        let read: Vec<String> = commits
            .iter()
            .map(|c| said_commit(usual.commit(repo, *c)))
            .collect();
        let held = held_after_admission(&s, &chain, recalled_commit);
        for (i, (commit, (tree, parent))) in commits.iter().zip(held).enumerate() {
            assert_eq!(parent, i.checked_sub(1).map(|p| commits[p]), "{commit}");
            assert_eq!(
                said_commit(Ok(ChainCommit {
                    tree: Ok(tree),
                    parents: parent.into_iter().collect()
                })),
                read[i]
            );
            assert_eq!(said_commit(usual.commit(repo, *commit)), read[i]);
        }
    }
}

/// Chains for the tests of the walks (these, the receipt index's, the notes
/// planner's). After the unit tests, with them: test code, which may reach
/// anywhere (the import hygiene reads none of it).
#[cfg(test)]
pub(super) mod walk_fixture {
    use super::*;
    use crate::freshness::rules::{Scratch, contract, keys_and_writers};

    /// Chains in every state a walk meets them in, and a walk's reader that
    /// opened its packs part of the way (see [`mixed`]).
    pub(in crate::store) struct Mixed {
        pub(in crate::store) s: Scratch,
        /// Each writer and its chain's tip: `a`, `b`, `c`, `d` below.
        pub(in crate::store) writers: Vec<(String, ObjectId)>,
        /// A reader whose packs were opened when only `a` and `b` were packed.
        pub(in crate::store) early: WalkReader,
        /// Every chain commit, oldest first by writer.
        pub(in crate::store) commits: Vec<ObjectId>,
        /// Which of them the early reader's packs hold whole, and which a
        /// reader opened last holds whole.
        pub(in crate::store) packed_early: Vec<ObjectId>,
        pub(in crate::store) packed_late: Vec<ObjectId>,
        /// The commit whose pack entry is damaged.
        pub(in crate::store) damaged: ObjectId,
    }

    /// Four writers' chains: `a` packed with a retention stub at #1 (written
    /// before the repack) and a loose entry on top; `b` packed; `c` in a pack
    /// written after the early reader opened its packs; `d` in a pack of its
    /// own whose entry for the commit of its #1 is damaged (its bytes
    /// overwritten, so no read inflates it).
    pub(in crate::store) fn mixed() -> Mixed {
        let mut s = Scratch::new();
        let c = contract("[check \"test\"]\n\trun = true\n\tpath = src\n");
        let h = s.commit(&[("src/lib.rs", "a\n")], "a");
        let (keys, ids) = keys_and_writers(11..=14u8);
        let mut minute = 0;
        let mut run = |k: usize, n: usize| {
            for _ in 0..n {
                minute += 1;
                s.run(&keys[k], &c, "test", h, (minute % 2) as i64, minute);
            }
        };
        let chain = |w: &str| -> Vec<ObjectId> {
            s.git(&["rev-list", "--reverse", &format!("refs/receipts/{w}")])
                .lines()
                .map(|l| ObjectId::from_hex(l.as_bytes()).unwrap())
                .collect()
        };
        run(0, 4);
        // #1 of `a` dropped to a stub
        let tip = s.store.chain_tip(&ids[0]).unwrap().unwrap();
        let items = s.store.chain_items(&ids[0], tip).unwrap();
        let super::super::chain::ChainItem::Entry(e) = &items[1] else {
            panic!("a receipt")
        };
        let b = e.receipt.body();
        let stub = Stub {
            format: super::super::stub::STUB_FORMAT.into(),
            id: e.receipt.id().to_owned(),
            index: 1,
            prev: b.chain.prev.clone(),
            check: b.check.name.clone(),
            subject: b.subject.commit.clone(),
            started_at: b.result.started_at.clone(),
            dropped_at: "2026-12-05T00:00:00Z".into(),
        };
        s.store
            .rewrite_with_stubs(&ids[0], &items, &[(1, stub)].into())
            .unwrap();
        run(1, 3);
        s.git(&["repack", "-adfq"]);
        let packed_early: Vec<ObjectId> =
            chain(&ids[0]).into_iter().chain(chain(&ids[1])).collect();
        let early = WalkReader::packed(&s.store.repo);
        let _ = early.packs.as_ref().unwrap().get();
        run(2, 2);
        s.git(&["repack", "-dq"]);
        let mut packed_late = packed_early.clone();
        packed_late.extend(chain(&ids[2]));
        run(3, 3);
        s.git(&["repack", "-dq"]);
        run(0, 1);
        let d = chain(&ids[3]);
        let damaged = d[1];
        packed_late.extend([d[0], d[2]]);
        let mut commits: Vec<ObjectId> = ids.iter().flat_map(|w| chain(w)).collect();
        commits.dedup();
        // the entry of `damaged` in its pack, overwritten in its middle
        let pack_dir = s.dir.path().join(".git/objects/pack");
        let (pack, at, end) = std::fs::read_dir(&pack_dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "idx"))
            .find_map(|idx| {
                let listed = s.git_input(&["show-index"], &std::fs::read(&idx).unwrap());
                let mut offsets: Vec<(u64, ObjectId)> = listed
                    .lines()
                    .map(|l| {
                        let mut f = l.split(' ');
                        let at = f.next().unwrap().parse().unwrap();
                        (
                            at,
                            ObjectId::from_hex(f.next().unwrap().as_bytes()).unwrap(),
                        )
                    })
                    .collect();
                offsets.sort();
                let n = offsets.iter().position(|(_, id)| *id == damaged)?;
                let pack = idx.with_extension("pack");
                let end = offsets
                    .get(n + 1)
                    .map_or_else(|| std::fs::metadata(&pack).unwrap().len() - 20, |(o, _)| *o);
                Some((pack, offsets[n].0, end))
            })
            .expect("the commit is packed");
        let mut bytes = std::fs::read(&pack).unwrap();
        let middle = usize::try_from((at + end) / 2).unwrap();
        for b in &mut bytes[middle - 2..middle + 2] {
            *b ^= 0x5a;
        }
        let mut perms = std::fs::metadata(&pack).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&pack, perms).unwrap();
        std::fs::write(&pack, &bytes).unwrap();
        // a store that has not read it whole before (gix keeps what it read)
        s.reopen();
        let writers = ids
            .iter()
            .map(|w| {
                (
                    w.clone(),
                    s.store
                        .ref_value(&format!("refs/receipts/{w}"))
                        .unwrap()
                        .unwrap(),
                )
            })
            .collect();
        Mixed {
            s,
            writers,
            early,
            commits,
            packed_early,
            packed_late,
            damaged,
        }
    }
}
