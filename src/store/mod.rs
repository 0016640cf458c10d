//! The only code that touches git.
//!
//! Layout (see `docs/format.md`): each writer owns `refs/receipts/<writer>`, a chain
//! of commits whose trees hold `receipt.json` (and `output.log`), and
//! `refs/notes/receipts/<writer>`, a notes index from subject commits and inputs
//! trees to receipts. The chain is the source of truth; notes are derived and
//! can always be rebuilt from it. Objects are written first, then the chain ref by
//! compare-and-swap, then notes, so a crash leaves either the old state or one that
//! the next append (or `reindex`) completes.

pub mod admit;
pub mod chain;
pub mod checkout;
pub mod checkpoints;
pub mod cli_config;
mod concurrent_gc;
mod durable;
mod entry;
pub use entry::{EntryReader, RawEntry, Recalling, SharedReader};
pub mod index;
pub mod logs;
pub mod maintenance;
pub mod notes;
mod packed;
pub mod query;
pub mod remote;
pub mod retain;
pub mod stub;
pub mod whole_notes;
pub mod worktree;

use std::path::{Path, PathBuf};

use gix::ObjectId;

use crate::clock::{DEFAULT_MAX_SKEW_MS, Horizon, SKEW_CONFIG};
use crate::notice::Notice;
use crate::receipt::ReceiptError;

/// Prefix of chain refs.
pub const CHAIN_PREFIX: &str = "refs/receipts/";
/// Prefix of notes refs.
pub const NOTES_PREFIX: &str = "refs/notes/receipts/";

/// Why a revision did not resolve, from the resolver's error chain: its most
/// specific message that speaks of the repository rather than of the parser's
/// internals (`delegate.traverse(NthAncestor(2)) failed`, `NotFound`).
fn revision_problem(error: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(c) = cause {
        chain.push(c.to_string());
        cause = c.source();
    }
    chain
        .into_iter()
        .rev()
        .find(|m| {
            !m.contains("delegate") && !m.contains("input=") && m.contains(' ') && !m.is_empty()
        })
        .map(|m| {
            let mut m = m;
            if let Some(first) = m.get(..1) {
                m = first.to_lowercase() + &m[1..];
            }
            m
        })
        .unwrap_or_else(|| "no such branch, tag or commit here".to_owned())
}

/// A boxed error from git plumbing.
pub type GitError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Not inside a git repository.
    #[error("not a git repository (or any parent up to the file system root): {path}")]
    NotARepository {
        /// Where we looked.
        path: PathBuf,
    },
    /// The repository keeps the other format's name of every object beside its
    /// own (`extensions.compatObjectFormat`), a mapping gix does not keep up.
    #[error(
        "this repository keeps {format} names beside its own for every object (extensions.compatObjectFormat = {format}), and gix, which git-receipt writes objects with, does not keep that map yet: receipts written here would have no {format} names"
    )]
    CompatObjectFormat {
        /// The other format, as configured.
        format: String,
    },
    /// `GIT_CONFIG_PARAMETERS` (what `git -c` passes on) could not be read.
    #[error("cannot apply the `git -c` settings: {problem}")]
    CliConfig {
        /// What is wrong with them.
        problem: String,
    },
    /// A ref names an object the repository does not have.
    #[error(
        "{refname} points at {id}, which is missing from the object store (a `git gc --prune=now` that ran while a receipt was being written leaves this)"
    )]
    RefToMissingObject {
        /// The ref.
        refname: String,
        /// The object it names.
        id: ObjectId,
    },
    /// The committed `.gitreceipts` is not a regular file.
    #[error(
        ".gitreceipts at {commit} is {kind}, not a regular file; git-receipt reads only a regular .gitreceipts"
    )]
    ContractNotAFile {
        /// The commit.
        commit: ObjectId,
        /// What it is instead.
        kind: &'static str,
    },
    /// The committed `.gitreceipts` is larger than
    /// [`MAX_CONTRACT_BYTES`] (refused from its object header,
    /// unread).
    #[error(
        "{path} at {commit} is {size} bytes, over the {}-byte (4 MiB) limit for a contract, so it is not read",
        MAX_CONTRACT_BYTES
    )]
    ContractTooLarge {
        /// The file's path in the tree.
        path: String,
        /// The commit.
        commit: ObjectId,
        /// Its size in bytes.
        size: u64,
    },
    /// A bare repository where a work tree is needed.
    #[error("this command needs a work tree, but the repository is bare")]
    Bare,
    /// A submodule's work tree holds changes that no commit has, so no tree can
    /// record what a check would see there.
    #[error(
        "submodule {path} has {holds} that no commit records, so a receipt could not say what was tested; commit them in the submodule (and the new submodule commit here), or stash them, then run again"
    )]
    DirtySubmodule {
        /// The submodule's path, from the top of the work tree.
        path: String,
        /// What it holds: modified files, untracked files or both.
        holds: &'static str,
    },
    /// The index is sparse (`index.sparse`): whole directories are one entry, so
    /// what a sparse checkout left off disk cannot be told path by path.
    #[error(
        "the index is sparse (index.sparse = true), which hides whole directories a sparse checkout left off disk; turn it off with git config index.sparse false && git sparse-checkout reapply, then run again"
    )]
    SparseIndex,
    /// HEAD does not point at a commit.
    #[error("HEAD has no commit yet, so there is nothing a receipt could name")]
    NoCommit,
    /// A revision that does not resolve.
    #[error("cannot resolve revision {rev:?} to a commit: {why}")]
    BadRevision {
        /// What the user typed.
        rev: String,
        /// Why, in words a user can act on (not the resolver's internals).
        why: String,
    },
    /// A stored receipt is not valid.
    #[error("receipt in chain {writer} at commit {commit} is invalid: {source}")]
    BadReceipt {
        /// The chain.
        writer: String,
        /// The chain commit.
        commit: ObjectId,
        /// Why.
        source: ReceiptError,
    },
    /// The chain itself is malformed (tree layout, parents).
    #[error("chain {writer} is corrupt at commit {commit}: {reason}")]
    CorruptChain {
        /// The chain.
        writer: String,
        /// The chain commit.
        commit: ObjectId,
        /// What is wrong.
        reason: String,
    },
    /// The tip of the writer's own chain is not an entry it signed (junk, or a
    /// merge a plain `git fetch` or a hand let in): nothing is appended on top.
    #[error(
        "chain {writer} is corrupt at commit {commit}: {reason}; no receipt is written on top of it"
    )]
    NotYourTip {
        /// The chain.
        writer: String,
        /// The chain commit the entry rules refuse.
        commit: ObjectId,
        /// Which rule, and why.
        reason: String,
        /// The chain's tip.
        tip: ObjectId,
        /// The newest entry of the chain that is the writer's, if any: the one to
        /// go back to.
        last_valid: Option<ObjectId>,
    },
    /// An entry of the writer's own chain lacks an object: what a concurrent
    /// `git gc --prune=now` leaves for a moment while another writer writes it
    /// again. Nothing was written, and the chain is not called someone else's.
    #[error(
        "chain {writer} is missing an object at commit {commit} ({reason}); a concurrent `git gc --prune=now`, `git prune` or `git repack -ad` deleting what another writer is writing leaves this for a moment; no receipt was written"
    )]
    ChainHoled {
        /// The chain.
        writer: String,
        /// The chain commit whose object is missing.
        commit: ObjectId,
        /// What could not be found.
        reason: String,
    },
    /// Others kept winning the compare-and-swap.
    #[error(
        "could not update {refname} after {attempts} attempts: other processes kept moving or locking it"
    )]
    Contention {
        /// The ref.
        refname: String,
        /// How often we tried.
        attempts: u32,
    },
    /// The clock forbids signing: before 1970, or behind the chain's previous entry.
    #[error(transparent)]
    Clock(Box<crate::clock::ClockError>),
    /// A git subprocess that talks to a remote ran past `receipt.networkTimeout`
    /// and was stopped.
    #[error(
        "`git {args}` failed: the remote did not finish within {seconds}s (receipt.networkTimeout), so the transfer was stopped; nothing was taken from it or half-sent"
    )]
    RemoteTimedOut {
        /// Its arguments.
        args: String,
        /// The limit, in seconds.
        seconds: u64,
    },
    /// An object could not be written to the object store.
    #[error(
        "could not write {what} as the loose object {path} (after {attempts} attempts{}): {cause}",
        if *vanished { "; its directory kept vanishing, as a concurrent `git gc`/`git repack` removes empty ones" } else { "" }
    )]
    ObjectWrite {
        /// What the object is (`receipt.json`, `a chain commit`).
        what: &'static str,
        /// The object file.
        path: PathBuf,
        /// How often it was tried.
        attempts: u32,
        /// Whether the cause was a directory that disappeared.
        vanished: bool,
        /// What the file system said, with every cause.
        cause: String,
    },
    /// An object just written could not be flushed to disk as `core.fsync`
    /// asks; no ref names it yet.
    #[error(
        "could not flush {what} to disk ({path}) as core.fsync asks: {cause}; nothing was stored"
    )]
    Harden {
        /// What the object is, with its id.
        what: String,
        /// The file or directory that could not be flushed.
        path: PathBuf,
        /// What the system said.
        cause: String,
    },
    /// A concurrent prune kept deleting the objects of a write after its ref
    /// was moved to them; the ref was put back, or could not be.
    #[error(
        "{refname} was updated, but a concurrent `git gc --prune=now` (or `git prune`) kept deleting its new objects ({what}) after {attempts} attempts to write them again; {}",
        if *put_back { "the ref was put back, so nothing was stored" } else { "the ref could not be put back (another process moved it since), so the entry may still be there, with objects missing: `git receipt log` shows whether it is, and a reader that meets the missing objects restores the ref from its reflog and names what was lost" }
    )]
    ObjectsPruned {
        /// The ref.
        refname: String,
        /// The objects that went, each with what it is.
        what: String,
        /// How often they were written again.
        attempts: u32,
        /// Whether the ref was put back where it was before the write.
        put_back: bool,
    },
    /// A git subprocess failed.
    #[error("`git {args}` failed: {stderr}")]
    GitCommand {
        /// Its arguments.
        args: String,
        /// What it printed.
        stderr: String,
    },
    /// Other git plumbing failure.
    #[error("{what}: {source}")]
    Git {
        /// What was being done.
        what: String,
        /// The cause.
        source: GitError,
    },
}

impl From<crate::clock::ClockError> for StoreError {
    fn from(e: crate::clock::ClockError) -> StoreError {
        StoreError::Clock(Box::new(e))
    }
}

/// Wrap a plumbing error with what was being done.
pub(crate) fn git_err<E: Into<GitError>>(what: impl Into<String>) -> impl FnOnce(E) -> StoreError {
    let what = what.into();
    move |e| StoreError::Git {
        what,
        source: e.into(),
    }
}

/// A ref under `refs/receipts/` or `refs/notes/receipts/` that no command reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnusableRef {
    /// The full ref name.
    pub name: String,
    /// Why it is skipped, to follow "which": `points at a blob, not a commit`.
    pub reason: String,
    /// The object it names, when that is missing from the object store.
    pub missing: Option<ObjectId>,
}

/// One ref as [`Store::scan_refs`] found it: its name and commit, or why no
/// reader can use it.
type Scanned = Result<(String, ObjectId), UnusableRef>;

/// The loose refs in `dir` (the directory of `prefix`, where only writers' refs
/// live), each read as git reads one: a file named by a writer id holding an
/// object id in lowercase hex and a newline, sorted by name. Each is opened
/// relative to the directory, three system calls a ref (gix's loose iterator
/// took six, and walked the whole path each time: ten thousand writers' refs,
/// loose after a fetch, cost a gate more than the rest of its work). A file
/// `<ref>.lock` is a write in progress and passed over, as git passes over it
/// (the ref reads as it was). `None` for anything else (a directory, a link, a
/// name that is no writer id, a symbolic or unreadable ref): the caller then
/// takes gix's path and its exact report.
fn read_loose_writer_refs(
    dir: &Path,
    prefix: &str,
    kind: gix::hash::Kind,
) -> Option<Vec<(String, ObjectId)>> {
    use std::io::Read as _;
    use std::os::fd::{AsRawFd as _, FromRawFd as _};
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Vec::new()),
        Err(_) => return None,
    };
    let dir_file = std::fs::File::open(dir).ok()?;
    let hex_len = kind.len_in_hex();
    let mut loose = Vec::new();
    let mut name_z = [0u8; 80];
    // a SHA-256 id and its newline, and room to see a longer file
    let mut buf = [0u8; 80];
    for entry in entries {
        let entry = entry.ok()?;
        let name = entry.file_name();
        let name = name.to_str()?;
        if name.ends_with(".lock") {
            continue;
        }
        if !crate::receipt::is_valid_writer_id(name)
            || !entry.file_type().ok()?.is_file()
            || name.len() >= name_z.len()
        {
            return None;
        }
        name_z[..name.len()].copy_from_slice(name.as_bytes());
        name_z[name.len()] = 0;
        // SAFETY: `name_z` holds the name and a NUL within its bounds, and the
        // directory's descriptor lives as long as `dir_file`
        let fd = unsafe {
            libc::openat(
                dir_file.as_raw_fd(),
                name_z.as_ptr().cast(),
                libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just opened here and is owned by nothing else
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        let mut n = 0;
        loop {
            match file.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
            if n == buf.len() {
                return None;
            }
        }
        let text = buf[..n].strip_suffix(b"\n").unwrap_or(&buf[..n]);
        if text.len() != hex_len {
            return None;
        }
        loose.push((format!("{prefix}{name}"), ObjectId::from_hex(text).ok()?));
    }
    loose.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Some(loose)
}

/// Where the first record of `packed` (the records of a `packed-refs` file,
/// sorted by name, each line `<id> <name>`, a peeled `^<id>` line perhaps
/// after it) whose name is not below `prefix` starts; `packed.len()` when
/// there is none. A binary search over the lines, as git's own: a gate with
/// ten thousand writers read every line before theirs to find the first.
fn first_line_not_below(packed: &[u8], prefix: &[u8]) -> usize {
    let line_start = |at: usize| {
        packed[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1)
    };
    let next_line = |at: usize| {
        packed[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(packed.len(), |p| at + p + 1)
    };
    // `lo` is always where a record (never a peeled line) starts
    let (mut lo, mut hi) = (0, packed.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let mut start = line_start(mid);
        if packed[start] == b'^' && start > lo {
            start = line_start(start - 1);
        }
        let end = next_line(start);
        let line = packed[start..end]
            .strip_suffix(b"\n")
            .unwrap_or(&packed[start..end]);
        let name = match line.iter().position(|&b| b == b' ') {
            Some(space) => &line[space + 1..],
            None => &[][..],
        };
        if name < prefix {
            lo = end;
            if packed.get(lo) == Some(&b'^') {
                lo = next_line(lo);
            }
        } else {
            hi = start;
        }
    }
    lo
}

/// Whether `hex` (a `packed-refs` object id) names `id`, decoded on the stack.
fn hex_names(hex: &[u8], id: &ObjectId) -> bool {
    // in the lowercase git writes (an uppercase spelling answers `false`, and
    // the caller reads the refs in full): a gate asks this of every writer's
    // packed line, and the hex crate's decoding cost it more
    let mut bytes = [0u8; 32];
    let bytes = &mut bytes[..id.as_bytes().len()];
    crate::receipt::decode_lower_hex(hex, bytes) && id.as_bytes() == bytes
}

/// The notice that `bad` is skipped (every listing meets it again; the sink keeps
/// it once).
fn skipped_notice(bad: &UnusableRef) -> Notice {
    let code = if bad.reason.contains("missing from the object store") {
        "ref-missing-object"
    } else {
        "ref-skipped"
    };
    Notice::warning(
        code,
        format!(
            "skipping {}, which {}",
            crate::text::escape(&bad.name),
            bad.reason
        ),
    )
    .about(bad.name.clone())
}

/// The largest `.gitreceipts` git-receipt reads (4 MiB), committed or in the work
/// tree: its size is checked (from the object header, or the file's metadata)
/// before a byte is read, so a huge file (a 256 MiB blob packs into a few hundred
/// KiB) costs no memory. A contract of a thousand signers is about 100 KB.
pub const MAX_CONTRACT_BYTES: u64 = 4 << 20;

/// Default bound of an ancestry walk (git config `receipt.walkLimit` sets it): the
/// freshness walk and the search for a trust root both stop there.
pub const DEFAULT_WALK_LIMIT: usize = 1000;

/// The decoded objects each handle on the repository keeps (gix's object
/// cache): a loose object read twice is opened and inflated once.
/// (mutants: its size is equivalent in answers)
const OBJECT_CACHE_BYTES: usize = 4 * 1024 * 1024;

/// How many times a ref of a repository may have been moved by this process:
/// every ref edit a [`Store`] makes, and every git command it runs, counts one.
/// The receipt index a store has read is taken as current while this count is
/// unchanged (see [`Store::receipt_index`]), so a command that judges a thousand
/// revisions reads ten thousand writer refs once, not once per revision.
static REFS_MOVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Count one possible ref move in this process (see [`REFS_MOVED`]).
pub(crate) fn refs_may_have_moved() {
    REFS_MOVED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// How many possible ref moves this process has made so far.
pub(crate) fn refs_moved() -> u64 {
    REFS_MOVED.load(std::sync::atomic::Ordering::SeqCst)
}

/// How many threads the store's work spread over cores uses: one a core, at
/// most eight.
pub(crate) fn worker_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 8))
}

/// `work` of each of `jobs`, answered in the jobs' order, on one thread for
/// each of `workers` (what a thread works with: its own repository handle,
/// say, since gix's are not shared between threads). Each thread takes the
/// next job from a queue and lets go of the queue before working on it, so a
/// long job holds up no other.
pub(crate) fn in_order_on<J: Send, W: Send, R: Send>(
    jobs: Vec<J>,
    workers: Vec<W>,
    work: impl Fn(&W, J) -> R + Sync,
) -> Vec<R> {
    let queue = std::sync::Mutex::new(jobs.into_iter().enumerate().collect::<Vec<_>>());
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .map(|worker| {
                let (queue, work) = (&queue, &work);
                s.spawn(move || {
                    let mut out = Vec::new();
                    loop {
                        let job = queue.lock().expect("job queue").pop();
                        let Some((n, job)) = job else { break };
                        out.push((n, work(&worker, job)));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker threads do not panic"))
            .collect()
    });
    done.sort_by_key(|(n, _)| *n);
    done.into_iter().map(|(_, r)| r).collect()
}

/// A listing of the writer refs under a prefix, and the count of
/// [`refs_moved`] it was made at.
type Listing = (String, u64, Vec<(String, ObjectId)>);

/// An open repository.
pub struct Store {
    repo: gix::Repository,
    /// Proposed ref values that reads see instead of the real ones: a server's
    /// pre-receive hook judges a push together with the receipt refs it carries.
    overrides: std::collections::HashMap<String, Option<ObjectId>>,
    /// Keeps the alternates directory of a push quarantine alive (see
    /// [`Store::see_quarantine`]).
    _quarantine_view: Option<tempfile::TempDir>,
    /// The receipt index, once read (see [`index`]), with the count of
    /// [`refs_moved`] when its tips were last checked against the chains.
    index: std::sync::Mutex<Option<(std::sync::Arc<index::Index>, u64)>>,
    /// Read no index file (see [`Store::ignore_index_file`]).
    index_file_ignored: bool,
    /// What became of the last attempt to write the index file.
    index_written: std::sync::Mutex<Option<index::IndexWrite>>,
    /// What the store had to say while it worked (see [`crate::notice`]).
    /// Shared, so that every store a command opens reports into one list
    /// ([`Store::share_notices`]).
    notices: std::sync::Arc<crate::notice::Sink>,
    /// The parents of every commit an ancestry walk has read, and the
    /// commit-graph, so that the revisions of a range share what one walk read
    /// (see [`query::Ancestry`]).
    history: std::sync::Mutex<query::History>,
    /// What `core.fsync` asks to harden, once read (see [`durable`]).
    durability: std::sync::OnceLock<durable::Durability>,
    /// Told while a transfer waits on a remote (see [`Store::report_waiting`]).
    waiting: Option<remote::WaitingSink>,
    /// An object store that sees the packs on disk as they were when the packs
    /// directory was last as stamped (see `concurrent_gc::missing_on_disk`).
    packs_view: std::sync::Mutex<Option<(packed::PackDirStamp, gix::odb::Handle)>>,
    /// Appends leave the notes to a later [`Store::index_notes`] (see
    /// [`Store::defer_notes`]).
    notes_deferred: std::sync::atomic::AtomicBool,
    /// Objects held back to be written as one pack (see
    /// [`Store::begin_object_batch`]).
    object_batch: std::sync::Mutex<Option<concurrent_gc::ObjectBatch>>,
    /// The last listing of each writer-ref prefix ([`Store::scan_packed_refs`]),
    /// with the count of [`refs_moved`] it was made at.
    listed: std::sync::Mutex<Vec<Listing>>,
}

impl StoreError {
    /// Whether a file that exists could not be read (an I/O error under it):
    /// a fault of the machine, which says nothing of what the file holds.
    pub fn is_unreadable(&self) -> bool {
        io_cause(self).is_some()
    }

    /// An [`StoreError::ObjectsPruned`] that says whether its ref was put back;
    /// any other error as it is.
    pub(crate) fn after_put_back(mut self, back: bool) -> StoreError {
        if let StoreError::ObjectsPruned { put_back, .. } = &mut self {
            *put_back = back;
        }
        self
    }
}

impl Store {
    /// Discover the repository containing `dir`.
    pub fn discover(dir: &Path) -> Result<Store, StoreError> {
        let repo = match gix::discover(dir) {
            Ok(repo) => repo,
            Err(e) => {
                let e = unreadable_or_not_a_repository(dir, &e);
                // A repository is there, readable now: what failed went away
                // (gix gives up on a candidate it cannot read, and says none
                // is there); one more look.
                match (&e, gix::discover(dir)) {
                    (StoreError::NotARepository { .. }, Ok(repo)) => repo,
                    _ => return Err(e),
                }
            }
        };
        Store::from_repo(repo)
    }

    /// Open exactly the repository at `dir` (a `.git` dir, a bare repository or a work tree).
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let repo = gix::open(dir).map_err(|e| unreadable_or_not_a_repository(dir, &e))?;
        Store::from_repo(repo)
    }

    fn from_repo(mut repo: gix::Repository) -> Result<Store, StoreError> {
        // SHA-1 and SHA-256 repositories are read and written alike; one that
        // also names each object in the other format is not (see the error)
        if let Some(format) = repo
            .config_snapshot()
            .string("extensions.compatObjectFormat")
        {
            return Err(StoreError::CompatObjectFormat {
                format: crate::text::escape(&format.to_string()).into_owned(),
            });
        }
        // Ref updates write reflogs (always for refs/notes/), which need a committer;
        // a machine without a git identity (a fresh CI container) would otherwise
        // get chains but never notes. Install a fallback that the user's identity
        // (environment, committer.*, user.*) still overrides, without asking for the
        // committer now: that reads the clock's time zone database, which costs a
        // reading command (gate in a hook) a whole directory walk.
        let mut fallback = gix::config::File::new(gix::config::file::Metadata::api());
        let name = fallback.set_raw_value(
            gix::config::tree::gitoxide::Committer::NAME_FALLBACK,
            "git-receipt",
        );
        let email = fallback.set_raw_value(
            gix::config::tree::gitoxide::Committer::EMAIL_FALLBACK,
            "git-receipt@localhost",
        );
        if name.is_ok() && email.is_ok() {
            let _ = repo.config_snapshot_mut().append(fallback);
        }
        // `git -c key=value receipt ...`: over every file, as git has it
        if let Some(params) = std::env::var_os(cli_config::ENV) {
            let cli = params
                .into_string()
                .map_err(|_| format!("{} is not UTF-8", cli_config::ENV))
                .and_then(|p| cli_config::parse(&p))
                .and_then(|settings| cli_config::as_file(&settings))
                .map_err(|problem| StoreError::CliConfig { problem })?;
            repo.config_snapshot_mut()
                .append(cli)
                .map_err(|e| StoreError::CliConfig {
                    problem: e.to_string(),
                })?;
        }
        // Chain and notes refs always keep a reflog (see `concurrent_gc`), also in
        // a repository whose `core.logAllRefUpdates` is off (a bare one's default):
        // gix writes no reflog at all then, even one asked for. What other refs
        // get is unchanged: only existing reflogs, and git's usual prefixes.
        if repo.refs.write_reflog == gix::refs::store::WriteReflog::Disable {
            repo.refs.write_reflog = gix::refs::store::WriteReflog::Normal;
        }
        repo.object_cache_size_if_unset(OBJECT_CACHE_BYTES);
        Ok(Store::over(repo))
    }

    /// A store over `repo` as [`Store::from_repo`] set it up, nothing read yet.
    fn over(repo: gix::Repository) -> Store {
        Store {
            repo,
            overrides: Default::default(),
            _quarantine_view: None,
            index: Default::default(),
            index_written: Default::default(),
            index_file_ignored: false,
            notices: Default::default(),
            history: Default::default(),
            durability: Default::default(),
            waiting: None,
            packs_view: Default::default(),
            object_batch: Default::default(),
            listed: Default::default(),
            notes_deferred: Default::default(),
        }
    }

    /// A store over the same repository for another thread to read through
    /// (gix's handles are not shared between threads): the same ref overrides
    /// and notices, its own caches, no object batch.
    pub(crate) fn worker(&self) -> Store {
        let mut repo = self.repo.clone();
        // gix sets a clone's caches up from the configuration again, where the
        // object cache is off unless `gitoxide.objects.cacheLimit` says: without
        // it a worker read a loose notes commit three times a writer
        repo.object_cache_size_if_unset(OBJECT_CACHE_BYTES);
        let mut s = Store::over(repo);
        s.overrides = self.overrides.clone();
        s.notices = self.notices.clone();
        s.index_file_ignored = self.index_file_ignored;
        s.waiting = self.waiting.clone();
        s
    }

    /// Make reads see `refname` at `value` (`None`: deleted) instead of its real value.
    pub fn override_ref(&mut self, refname: &str, value: Option<ObjectId>) {
        self.overrides.insert(refname.to_owned(), value);
        *self.index.get_mut().expect("index slot") = None;
    }

    /// The value of a ref (peeled to an object id) as reads should see it.
    pub fn ref_value(&self, name: &str) -> Result<Option<ObjectId>, StoreError> {
        if let Some(v) = self.overrides.get(name) {
            return Ok(*v);
        }
        match self
            .repo
            .try_find_reference(name)
            .map_err(git_err(format!("reading {name}")))?
        {
            None => Ok(None),
            Some(mut r) => {
                if let Some(id) = r.target().try_id().map(|id| id.to_owned())
                    && !self.repo.has_object(id)
                {
                    if let Some(restored) = self.restore_from_reflog(name, id) {
                        return Ok(Some(restored));
                    }
                    // its writer wrote it again while the restore waited
                    if self.repo.has_object(id) {
                        return Ok(Some(id));
                    }
                    return Err(StoreError::RefToMissingObject {
                        refname: name.to_owned(),
                        id,
                    });
                }
                Ok(Some(
                    r.peel_to_id()
                        .map_err(git_err(format!("resolving {name}")))?
                        .detach(),
                ))
            }
        }
    }

    /// Writer ids under `prefix` (stripped), real and overridden, sorted: only the
    /// refs that can be a writer's chain or notes. A ref that cannot (its file is
    /// garbage, its name is not a writer id, it points at a blob, tree or tag) is
    /// skipped, so one bad ref that a plain `git fetch` brought cannot stop every
    /// command; it is named once on stderr, and `git receipt verify` reports it
    /// (see [`Store::tips_and_unusable`]).
    pub(crate) fn names_under(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .tips_under(prefix)?
            .into_iter()
            .map(|(name, _)| name)
            .collect())
    }

    /// Names under `prefix` (stripped) with the commit each points at, real and
    /// overridden, sorted: one pass over the refs, whatever their number.
    pub(crate) fn tips_under(&self, prefix: &str) -> Result<Vec<(String, ObjectId)>, StoreError> {
        self.tips_under_known(prefix, &|_, _| false)
    }

    /// [`Store::tips_under`], looking up no object for a ref that `known`
    /// (given the name under `prefix` and the tip) says was read and checked
    /// before: an object id names its object for good.
    pub(crate) fn tips_under_known(
        &self,
        prefix: &str,
        known: &dyn Fn(&str, ObjectId) -> bool,
    ) -> Result<Vec<(String, ObjectId)>, StoreError> {
        self.tips_and_unusable_known(prefix, known, &mut Vec::new())
    }

    /// [`Store::tips_under`], and onto `unusable` every ref under `prefix` that
    /// it passes over, each with why (a tip missing from the object store is
    /// listed even when its reflog gives it back): one listing for both, where
    /// a verify made three.
    pub(crate) fn tips_and_unusable(
        &self,
        prefix: &str,
        unusable: &mut Vec<UnusableRef>,
    ) -> Result<Vec<(String, ObjectId)>, StoreError> {
        self.tips_and_unusable_known(prefix, &|_, _| false, unusable)
    }

    fn tips_and_unusable_known(
        &self,
        prefix: &str,
        known: &dyn Fn(&str, ObjectId) -> bool,
        unusable: &mut Vec<UnusableRef>,
    ) -> Result<Vec<(String, ObjectId)>, StoreError> {
        let mut found = Vec::new();
        for r in self.scan_refs(prefix, known)? {
            match r {
                Ok((mut name, id)) => {
                    name.drain(..prefix.len());
                    found.push((name, id));
                }
                Err(bad) => {
                    unusable.push(bad.clone());
                    // a tip a concurrent prune deleted: back on its reflog, if it can be
                    let restored = bad
                        .missing
                        .and_then(|id| Some((id, self.restore_from_reflog(&bad.name, id)?)));
                    // or whole again: its writer wrote it again while the restore waited
                    let whole_again = || bad.missing.filter(|&id| self.repo.has_object(id));
                    match restored.map(|(_, tip)| tip).or_else(whole_again) {
                        Some(tip) => found.push((bad.name[prefix.len()..].to_owned(), tip)),
                        None => self.notice(skipped_notice(&bad)),
                    }
                }
            }
        }
        if self.overrides.is_empty() {
            // sorted as git lists them already, so this only checks
            found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            found.dedup_by(|a, b| a.0 == b.0);
            return Ok(found);
        }
        let mut out: std::collections::BTreeMap<String, ObjectId> = found.into_iter().collect();
        for (name, value) in &self.overrides {
            if let Some(rest) = name.strip_prefix(prefix) {
                match value {
                    Some(v) if crate::receipt::is_valid_writer_id(rest) => {
                        out.insert(rest.to_owned(), *v);
                    }
                    _ => {
                        out.remove(rest);
                    }
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    /// Every ref under `prefix`: its full name when it can be a writer's chain or
    /// notes ref, else why not. A ref `known` takes (its name under `prefix`,
    /// its tip) is taken as it is, no object looked up.
    fn scan_refs(
        &self,
        prefix: &str,
        known: &dyn Fn(&str, ObjectId) -> bool,
    ) -> Result<Vec<Scanned>, StoreError> {
        let check = |name: String, id: ObjectId| {
            if known(&name[prefix.len()..], id) {
                Ok((name, id))
            } else {
                self.points_at_commit(name, id)
            }
        };
        if let Some(fast) = self.scan_packed_refs(prefix) {
            return Ok(fast.into_iter().map(|(name, id)| check(name, id)).collect());
        }
        let refs = self
            .repo
            .references()
            .map_err(git_err("listing references"))?;
        let mut out = Vec::new();
        for r in refs
            .prefixed(prefix)
            .map_err(git_err(format!("listing {prefix}")))?
        {
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    // the error names the ref; what the file holds is not repeated
                    let what = e.to_string();
                    let name = what
                        .split('"')
                        .nth(1)
                        .filter(|n| n.starts_with(prefix))
                        .unwrap_or(prefix)
                        .to_owned();
                    out.push(Err(UnusableRef {
                        name,
                        reason: "cannot be read: its file holds no object id".into(),
                        missing: None,
                    }));
                    continue;
                }
            };
            let name = match std::str::from_utf8(r.name().as_bstr()) {
                Ok(name) => name.to_owned(),
                Err(_) => r.name().as_bstr().to_string(),
            };
            let bad = |reason: String| {
                Err(UnusableRef {
                    name: name.clone(),
                    reason,
                    missing: None,
                })
            };
            let entry = if !crate::receipt::is_valid_writer_id(&name[prefix.len()..]) {
                bad("is not named by a writer id (`<chain>-<32 hex digits>`)".into())
            } else {
                match r.target().try_id().map(|id| id.to_owned()) {
                    None => bad("is a symbolic ref".into()),
                    Some(id) => check(name.clone(), id),
                }
            };
            out.push(entry);
        }
        Ok(out)
    }

    /// `name` (a writer's ref) pointing at `id`, unless `id` is no commit here.
    fn points_at_commit(&self, name: String, id: ObjectId) -> Scanned {
        match self.repo.find_header(id) {
            Ok(h) if h.kind() == gix::object::Kind::Commit => Ok((name, id)),
            Ok(h) => Err(UnusableRef {
                name,
                reason: format!("points at a {}, not a commit", h.kind()),
                missing: None,
            }),
            Err(_) => Err(UnusableRef {
                name,
                missing: Some(id),
                reason: format!(
                    "points at {id}, which is missing from the object store (a `git gc --prune=now` that raced a writer leaves this)"
                ),
            }),
        }
    }

    /// [`Store::scan_refs`] when every ref under `prefix` is well formed: the
    /// packed ones read straight from `packed-refs` (sorted; each line `<id>
    /// <name>`, perhaps followed by a `^<peeled id>` line), the few loose ones
    /// through gix, which win over packed ones of the same name, as in git. A
    /// thousand writers' refs cost `gate` more through gix's general iterator
    /// (which checks every name against all of git's ref-name rules) than the
    /// rest of its work; a writer id passes those rules by its shape alone.
    /// `None`, to take gix's path and its exact report of each problem, when
    /// anything here is unusual: a namespace, a loose ref that cannot be read or
    /// is symbolic, or a packed line that is not a writer id and an object id.
    ///
    /// A listing is kept until this process may have moved a ref (as the
    /// receipt index's tips are, see [`Store::receipt_index`]): a `verify`
    /// listed the chains twice, for the index and for its walk, and ten
    /// thousand loose ref files cost a tenth of a checkpointed run.
    fn scan_packed_refs(&self, prefix: &str) -> Option<Vec<(String, ObjectId)>> {
        // read before the refs are: a move during the listing is seen next time
        let moved = refs_moved();
        if let Some(kept) = self.kept_listing(prefix, moved) {
            return Some(kept);
        }
        let loose = self.walk_packed_refs(prefix, |_, _| Some(()))?;
        let refs = self.merge_packed(prefix, loose)?;
        self.keep_listing(prefix, moved, &refs);
        Some(refs)
    }

    /// The listing of `prefix` kept at `moved` ([`Store::scan_packed_refs`]).
    fn kept_listing(&self, prefix: &str, moved: u64) -> Option<Vec<(String, ObjectId)>> {
        self.listed.lock().ok().and_then(|listed| {
            listed
                .iter()
                .find(|(p, at, _)| p == prefix && *at == moved)
                .map(|(_, _, refs)| refs.clone())
        })
    }

    /// Keep `refs` as the listing of `prefix` made at `moved`.
    fn keep_listing(&self, prefix: &str, moved: u64, refs: &[(String, ObjectId)]) {
        if let Ok(mut listed) = self.listed.lock() {
            // mutants: `==` is equivalent in answers (the listings of other
            // prefixes go, to be read again; an older one of this prefix is
            // never found again, its count being past)
            listed.retain(|(p, ..)| p != prefix);
            listed.push((prefix.to_owned(), moved, refs.to_vec()));
        }
    }

    /// The packed refs under `prefix` merged with `loose` (the loose refs under
    /// it, read by [`Store::walk_packed_refs`]): a loose ref wins over a packed
    /// one of its name. Reads `packed-refs` from gix's cached buffer only, so a
    /// caller that has the loose refs reads no ref file again.
    fn merge_packed(
        &self,
        prefix: &str,
        mut loose: Vec<(String, ObjectId)>,
    ) -> Option<Vec<(String, ObjectId)>> {
        let mut tips: Vec<(String, ObjectId)> = Vec::new();
        self.walk_packed_lines(prefix, |writer, hex| {
            let mut name = String::with_capacity(prefix.len() + writer.len());
            name.push_str(prefix);
            name.push_str(writer);
            tips.push((name, ObjectId::from_hex(hex).ok()?));
            Some(())
        })?;
        if !loose.is_empty() {
            // a loose ref wins over a packed one of its name: first after a stable sort
            loose.append(&mut tips);
            loose.sort_by(|a, b| a.0.cmp(&b.0));
            loose.dedup_by(|later, first| later.0 == first.0);
            tips = loose;
        }
        Some(tips)
    }

    /// The walk behind [`Store::scan_packed_refs`]: `each` is given the writer id
    /// and hex object id of every packed line under `prefix`, in order, and may
    /// stop the walk with `None`. Returns the loose refs under `prefix` (full
    /// names), or `None` for anything unusual.
    fn walk_packed_refs(
        &self,
        prefix: &str,
        each: impl FnMut(&str, &[u8]) -> Option<()>,
    ) -> Option<Vec<(String, ObjectId)>> {
        if self.repo.refs.namespace.is_some() {
            return None;
        }
        let loose = read_loose_writer_refs(
            &self.repo.common_dir().join(prefix),
            prefix,
            self.repo.object_hash(),
        )?;
        self.walk_packed_lines(prefix, each)?;
        Some(loose)
    }

    /// The first ref under `prefix` named by a writer id and pointing at a
    /// commit here, loose or packed, reading no more ref files than it takes to
    /// find it; `None` when there is none that plainly is one.
    pub(crate) fn first_under(&self, prefix: &str) -> Option<(String, ObjectId)> {
        let relative: &gix::path::RelativePath = prefix.try_into().ok()?;
        let usable = |name: &str, id: ObjectId| {
            (name
                .strip_prefix(prefix)
                .is_some_and(crate::receipt::is_valid_writer_id)
                && self.points_at_commit(name.to_owned(), id).is_ok())
            .then(|| (name.to_owned(), id))
        };
        if let Ok(refs) = self.repo.refs.loose_iter_prefixed(relative) {
            let found = refs.filter_map(Result::ok).find_map(|r| {
                usable(
                    std::str::from_utf8(r.name.as_bstr()).ok()?,
                    r.target.try_id()?.to_owned(),
                )
            });
            if found.is_some() {
                return found;
            }
        }
        let mut found = None;
        self.walk_packed_lines(prefix, |writer, hex| {
            found = usable(&format!("{prefix}{writer}"), ObjectId::from_hex(hex).ok()?);
            found.is_none().then_some(())
        });
        found
    }

    /// The packed half of [`Store::walk_packed_refs`]: `each` is given the
    /// writer id and hex object id of every line of `packed-refs` under
    /// `prefix`, in order; `None` for anything unusual or when `each` stops.
    fn walk_packed_lines(
        &self,
        prefix: &str,
        mut each: impl FnMut(&str, &[u8]) -> Option<()>,
    ) -> Option<()> {
        use gix::bstr::ByteSlice as _;
        if let Some(packed) = self.repo.refs.cached_packed_buffer().ok()? {
            // the records, without the header: sorted (gix sorts a file that
            // does not say it is), so those under `prefix` follow one another
            // from the first line not below it, found as git finds it
            let bytes: &[u8] = (**packed).as_ref();
            let at = first_line_not_below(bytes, prefix.as_bytes());
            let hex_len = self.repo.object_hash().len_in_hex();
            let mut rest = bytes.get(at..)?;
            while !rest.is_empty() {
                let end = rest.find_byte(b'\n')?;
                let (line, next) = (&rest[..end], &rest[end + 1..]);
                let (hex, name) = (line.get(..hex_len)?, line.get(hex_len + 1..)?);
                let Some(writer) = name.strip_prefix(prefix.as_bytes()) else {
                    break;
                };
                let writer = std::str::from_utf8(writer).ok()?;
                if line.get(hex_len) != Some(&b' ') || !crate::receipt::is_valid_writer_id(writer) {
                    return None;
                }
                each(writer, hex)?;
                rest = next;
                if rest.first() == Some(&b'^') {
                    rest = &rest[rest.find_byte(b'\n')? + 1..];
                }
            }
        }
        Some(())
    }

    /// Whether the refs under `prefix`, read as [`Store::scan_packed_refs`] reads
    /// them, are exactly `known` (writer id and tip, in order), without looking up
    /// any tip's object: `known` is what was read, checked and indexed from these
    /// very tips before, and an object id names its object for good. `false` when
    /// anything differs or is unusual; the caller then reads the refs in full.
    /// With only packed refs it allocates nothing: every gate asks this of a
    /// thousand refs.
    pub(crate) fn tips_unchanged<'a, I>(&self, prefix: &str, known: I) -> bool
    where
        I: Iterator<Item = (&'a str, ObjectId)> + Clone,
    {
        if !self.overrides.is_empty() {
            return false;
        }
        let same_tips = |tips: &[(String, ObjectId)], mut known: I| {
            tips.iter().all(|(name, id)| {
                known
                    .next()
                    .is_some_and(|(w, tip)| name[prefix.len()..] == *w && *id == tip)
            }) && known.next().is_none()
        };
        let moved = refs_moved();
        if let Some(kept) = self.kept_listing(prefix, moved) {
            return same_tips(&kept, known);
        }
        let mut walk = known.clone();
        // the packed lines against `known` in order, without stopping at the
        // first difference: a loose ref may stand for a packed one
        let mut same = true;
        let walked = self.walk_packed_refs(prefix, |writer, hex| {
            same = same
                && walk
                    .next()
                    .is_some_and(|(w, tip)| w == writer && hex_names(hex, &tip));
            Some(())
        });
        match walked {
            None => false,
            Some(loose) if loose.is_empty() => same && walk.next().is_none(),
            // loose refs (a writer's newest, until `git pack-refs`; every ref
            // after a fetch) win over packed ones of their name: compare the
            // merged list, from the loose refs just read (reading ten thousand
            // ref files twice cost a gate more than the rest of its work)
            Some(loose) => self.merge_packed(prefix, loose).is_some_and(|tips| {
                self.keep_listing(prefix, moved, &tips);
                same_tips(&tips, known)
            }),
        }
    }

    /// Inside a server's pre-receive hook, the pushed objects sit in a quarantine
    /// directory that git names in `GIT_QUARANTINE_PATH` and passes to its children
    /// through `GIT_OBJECT_DIRECTORY` and `GIT_ALTERNATE_OBJECT_DIRECTORIES`. gix
    /// does not read those, so build an object store that chains to all of them
    /// through an alternates file in a temporary directory. No-op outside a hook.
    pub fn see_quarantine(&mut self) -> Result<(), StoreError> {
        let Some(quarantine) = std::env::var_os("GIT_OBJECT_DIRECTORY") else {
            return Ok(());
        };
        let view = tempfile::tempdir().map_err(git_err("creating a quarantine view"))?;
        std::fs::create_dir_all(view.path().join("info"))
            .map_err(git_err("creating a quarantine view"))?;
        std::fs::create_dir_all(view.path().join("pack"))
            .map_err(git_err("creating a quarantine view"))?;
        let mut alternates = vec![std::path::PathBuf::from(&quarantine)];
        if let Some(more) = std::env::var_os("GIT_ALTERNATE_OBJECT_DIRECTORIES") {
            alternates.extend(std::env::split_paths(&more));
        }
        alternates.push(self.repo.common_dir().join("objects"));
        let text: String = alternates
            .iter()
            .map(|p| format!("{}\n", p.display()))
            .collect();
        std::fs::write(view.path().join("info/alternates"), text)
            .map_err(git_err("writing the quarantine view"))?;
        let mut handle = gix::odb::at(view.path(), self.repo.object_hash())
            .map_err(git_err("opening the pushed objects"))?;
        // the cache a repository opened by gix gets: without it every receipt read
        // from a pushed pack resolves its whole delta chain again
        handle
            .set_pack_cache(|| Box::<gix::odb::pack::cache::lru::StaticLinkedList<64>>::default());
        handle.set_object_cache(|| {
            Box::new(gix::odb::pack::cache::object::MemoryCappedHashmap::new(
                4 * 1024 * 1024,
            ))
        });
        self.repo.objects = gix::odb::memory::Proxy::new(handle, self.repo.object_hash());
        self._quarantine_view = Some(view);
        Ok(())
    }

    /// How far ahead of the reader's clock a receipt may be dated: git config
    /// `receipt.maxClockSkew` (seconds), else [`DEFAULT_MAX_SKEW_MS`].
    pub fn max_skew_ms(&self) -> u64 {
        let Some(text) = self.config_string(SKEW_CONFIG) else {
            return DEFAULT_MAX_SKEW_MS;
        };
        match self.config_integer(SKEW_CONFIG) {
            Some(n) if n >= 0 => u64::try_from(n).unwrap_or(0).saturating_mul(1000),
            _ => {
                self.notice(
                    Notice::warning(
                        "clock-skew-config",
                        format!(
                            "{SKEW_CONFIG} = {:?} is not a number of seconds; allowing the default {}",
                            crate::text::escape(&text),
                            crate::clock::span(DEFAULT_MAX_SKEW_MS)
                        ),
                    )
                    .about(SKEW_CONFIG),
                );
                DEFAULT_MAX_SKEW_MS
            }
        }
    }

    /// This reader's clock and `receipt.maxClockSkew`.
    pub fn horizon(&self) -> Horizon {
        Horizon {
            now_ms: crate::clock::now_ms(),
            skew_ms: self.max_skew_ms(),
        }
    }

    /// The latest date a receipt may carry and still count here: now plus the skew.
    pub fn horizon_ms(&self) -> u64 {
        self.horizon().limit_ms()
    }

    /// Keep notice `n` for the caller (the library never prints; see [`crate::notice`]).
    pub fn notice(&self, n: Notice) {
        self.notices.push(n);
    }

    /// Every notice kept since the last call, oldest first.
    pub fn take_notices(&self) -> Vec<Notice> {
        self.notices.take()
    }

    /// Tell `sink` while a `fetch`, `push` or `ls-remote` waits on its remote
    /// (from [`remote::WAITING_AFTER`] on, about once a second, and once when it
    /// ends): a terminal shows that a slow transfer is alive, and until when it
    /// is given.
    pub fn report_waiting(&mut self, sink: remote::WaitingSink) {
        self.waiting = Some(sink);
    }

    /// Keep notices in `sink` from now on (with those kept so far): a caller that
    /// opens several stores for one command drains one list.
    pub fn share_notices(&mut self, sink: std::sync::Arc<crate::notice::Sink>) {
        for n in self.notices.take() {
            sink.push(n);
        }
        self.notices = sink;
    }

    /// From now on an append leaves the notes as they are, for one
    /// [`Store::index_notes`] to bring up to date with every receipt appended
    /// since (`git receipt run A..B`: one notes commit per run, not one per
    /// receipt). Notes are a display derived from the chain, so a process that
    /// dies first loses nothing: the next append, or `reindex`, writes them.
    pub fn defer_notes(&self) {
        self.notes_deferred
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The top of the work tree.
    pub fn workdir(&self) -> Result<&Path, StoreError> {
        self.repo.workdir().ok_or(StoreError::Bare)
    }

    /// The `.git` directory.
    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// Resolve a revision to a commit id.
    pub fn resolve_commit(&self, rev: &str) -> Result<ObjectId, StoreError> {
        let bad = |source: GitError| {
            // a ref or object file that could not be read: not a bad name
            unreadable(format!("resolving revision {rev:?}"), source.as_ref()).unwrap_or_else(
                || StoreError::BadRevision {
                    rev: rev.to_owned(),
                    why: revision_problem(source.as_ref()),
                },
            )
        };
        if rev == "HEAD" && self.repo.head().is_ok_and(|h| h.is_unborn()) {
            return Err(StoreError::NoCommit);
        }
        let id = self.repo.rev_parse_single(rev).map_err(|e| bad(e.into()))?;
        let commit = id
            .object()
            .map_err(|e| bad(e.into()))?
            .peel_to_commit()
            .map_err(|e| bad(e.into()))?;
        Ok(commit.id)
    }

    /// HEAD's commit and tree.
    pub fn head(&self) -> Result<(ObjectId, ObjectId), StoreError> {
        // unborn is "no commit yet"; a HEAD that cannot be read is an error
        // naming why, never taken for an empty repository
        let mut head = self.repo.head().map_err(git_err("reading HEAD"))?;
        if head.is_unborn() {
            return Err(StoreError::NoCommit);
        }
        let commit = head
            .peel_to_commit()
            .map_err(git_err("reading HEAD's commit"))?;
        let tree = commit
            .tree_id()
            .map_err(git_err("reading HEAD's tree"))?
            .detach();
        Ok((commit.id, tree))
    }

    /// The tree of a commit.
    pub fn commit_tree(&self, commit: ObjectId) -> Result<ObjectId, StoreError> {
        Ok(self
            .repo
            .find_commit(commit)
            .map_err(git_err(format!("reading commit {commit}")))?
            .tree_id()
            .map_err(git_err(format!("reading the tree of {commit}")))?
            .detach())
    }

    /// A string from git config.
    pub fn config_string(&self, key: &str) -> Option<String> {
        self.repo
            .config_snapshot()
            .string(key)
            .map(|v| v.to_string())
    }

    /// All values of a multi-valued git config key.
    pub fn config_strings(&self, key: &str) -> Vec<String> {
        self.repo
            .config_snapshot()
            .strings(key)
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.to_string())
            .collect()
    }

    /// An integer from git config (with k/m/g suffixes).
    pub fn config_integer(&self, key: &str) -> Option<i64> {
        self.repo.config_snapshot().integer(key)
    }

    /// The whole content of the file at `path` in a commit's tree, if there is one
    /// (the caller names the file: the contract module knows what `.gitreceipts`
    /// is called, the store only how to read a file at a commit).
    pub fn file_at(&self, commit: ObjectId, path: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(id) = self.file_id_at(commit, path)? else {
            return Ok(None);
        };
        Ok(Some(
            self.repo
                .find_blob(id)
                .map_err(git_err(format!("reading {path}")))?
                .take_data(),
        ))
    }

    /// The blob id of the file at `path` in a commit's tree, if there is one, without
    /// reading it: what [`Store::file_at`] would read, checked the same way. A blob
    /// over [`MAX_CONTRACT_BYTES`] is refused from its object header
    /// ([`StoreError::ContractTooLarge`]), so no reader ever holds it whole.
    pub fn file_id_at(&self, commit: ObjectId, path: &str) -> Result<Option<ObjectId>, StoreError> {
        let tree = self.commit_tree(commit)?;
        let tree = self
            .repo
            .find_tree(tree)
            .map_err(git_err("reading a tree"))?;
        let Some(entry) = tree
            .lookup_entry_by_path(path)
            .map_err(git_err(format!("looking up {path}")))?
        else {
            return Ok(None);
        };
        // What `run` reads must be what is judged: a committed symlink (or a
        // submodule, or a tree) is no contract, whatever its blob holds.
        let kind = entry.mode().kind();
        if !matches!(
            kind,
            gix::object::tree::EntryKind::Blob | gix::object::tree::EntryKind::BlobExecutable
        ) {
            return Err(StoreError::ContractNotAFile {
                commit,
                kind: match kind {
                    gix::object::tree::EntryKind::Link => "a symbolic link",
                    gix::object::tree::EntryKind::Tree => "a directory",
                    _ => "a submodule",
                },
            });
        }
        let id = entry.oid().to_owned();
        let size = self
            .repo
            .find_header(id)
            .map_err(git_err(format!("reading {path}")))?
            .size();
        if size > MAX_CONTRACT_BYTES {
            return Err(StoreError::ContractTooLarge {
                path: path.to_owned(),
                commit,
                size,
            });
        }
        Ok(Some(id))
    }
}

/// A ref lock older than this was left by a killed process: real writers hold a
/// lock for microseconds (create, write, rename). The margin is wide on purpose:
/// removing the lock of a writer that is merely slow (a loaded machine, a stopped
/// process) would let two writers commit through one lock file.
pub const STALE_LOCK_AFTER: std::time::Duration = std::time::Duration::from_secs(120);

/// Whether the lock file `lock` is older than [`STALE_LOCK_AFTER`] (a
/// missing one is not).
fn stale_lock(lock: &Path) -> bool {
    std::fs::metadata(lock)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > STALE_LOCK_AFTER)
}

/// Take the lock file `lock` of a file this tool writes whole (the receipt
/// index, the record of notes built whole): created new, after removing one
/// a killed writer left ([`STALE_LOCK_AFTER`]); an `AlreadyExists` error when
/// another process holds it.
pub(crate) fn take_file_lock(lock: &Path) -> std::io::Result<std::fs::File> {
    if stale_lock(lock) {
        let _ = std::fs::remove_file(lock);
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(lock)
}

/// How long a writer keeps retrying a ref it keeps losing (or finds locked)
/// before it gives up. gix itself waits up to 100 ms for a lock on each attempt.
pub const RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(10);

/// Retrying a compare-and-swap on a ref, bounded in time.
pub(crate) struct Retry {
    start: std::time::Instant,
    attempts: u32,
}

impl Retry {
    pub(crate) fn new() -> Retry {
        Retry {
            start: std::time::Instant::now(),
            attempts: 0,
        }
    }

    /// How many attempts failed so far.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Count a failed attempt; `false` once the time is up.
    pub(crate) fn again(&mut self) -> bool {
        self.attempts += 1;
        if self.start.elapsed() > RETRY_FOR {
            return false;
        }
        chain::backoff(self.attempts);
        true
    }
}

impl Store {
    /// The error for giving up on `refname`: contention when it is still locked,
    /// otherwise what the last attempt said.
    pub(crate) fn gave_up(&self, refname: &str, retry: &Retry, last: gix::Error) -> StoreError {
        if self
            .repo
            .common_dir()
            .join(format!("{refname}.lock"))
            .exists()
        {
            StoreError::Contention {
                refname: refname.to_owned(),
                attempts: retry.attempts,
            }
        } else {
            StoreError::Git {
                what: format!("updating {refname}"),
                source: last.into(),
            }
        }
    }

    /// Remove `<refname>.lock` if a killed writer left it behind; say so on stderr.
    pub(crate) fn clear_stale_lock(&self, refname: &str) {
        let lock = self.repo.common_dir().join(format!("{refname}.lock"));
        if stale_lock(&lock) && std::fs::remove_file(&lock).is_ok() {
            self.notice(Notice::warning(
                "stale-lock-removed",
                format!(
                    "removed {}, a stale lock left by a process that was killed while writing",
                    lock.display()
                ),
            ));
        }
    }
}

/// Whether `e`, or an error under it, is a file that exists and could not be
/// read (see [`StoreError::is_unreadable`]).
pub fn is_unreadable(e: &(dyn std::error::Error + 'static)) -> bool {
    io_cause(e).is_some()
}

/// The first I/O error under `e` (itself included) that is not "not found" or
/// bad content (invalid data, a truncated file): a file that exists and could
/// not be read.
pub(crate) fn io_cause<'e>(e: &'e (dyn std::error::Error + 'static)) -> Option<&'e std::io::Error> {
    use std::io::ErrorKind::{InvalidData, NotFound, UnexpectedEof};
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && !matches!(io.kind(), NotFound | InvalidData | UnexpectedEof)
        {
            return Some(io);
        }
        cause = c.source();
    }
    None
}

/// `e` as the error of `what` when a file under it could not be read (see
/// [`io_cause`]), naming gix's words and the system's; `None` otherwise.
pub(crate) fn unreadable(
    what: String,
    e: &(dyn std::error::Error + 'static),
) -> Option<StoreError> {
    io_cause(e).map(|io| StoreError::Git {
        what,
        source: Box::new(std::io::Error::new(io.kind(), format!("{e}: {io}"))),
    })
}

/// Why no repository could be opened at `dir`: a file of it that could not be
/// read (an I/O error other than "not found" anywhere under `e`) is named as
/// such, never taken for "there is no repository here".
fn unreadable_or_not_a_repository(dir: &Path, e: &(dyn std::error::Error + 'static)) -> StoreError {
    if let Some(e) = unreadable(format!("opening the repository at {}", dir.display()), e) {
        return e;
    }
    // gix passes over a candidate it cannot read: look at the one nearest
    // `dir` (a `.git` directory or file, or a bare repository) with std
    for a in dir.ancestors() {
        let dotgit = a.join(".git");
        let files = if dotgit.is_dir() {
            vec![dotgit.join("HEAD"), dotgit.join("config")]
        } else if dotgit.is_file() {
            vec![dotgit]
        } else if a.join("HEAD").is_file() && a.join("objects").is_dir() {
            vec![a.join("HEAD"), a.join("config")]
        } else {
            continue;
        };
        for f in files {
            if let Err(io) = std::fs::read(&f)
                && io.kind() != std::io::ErrorKind::NotFound
            {
                return StoreError::Git {
                    what: format!("reading {}", f.display()),
                    source: Box::new(io),
                };
            }
        }
        break;
    }
    not_a_repository(dir)
}

/// The error for `dir`, which is no repository gix can open.
fn not_a_repository(dir: &Path) -> StoreError {
    StoreError::NotARepository {
        path: dir.to_owned(),
    }
}

/// The identity recorded on chain and notes commits: the tool, not a person.
pub(crate) fn tool_signature() -> gix::actor::Signature {
    // Never before 1970: git (`fsck`, `receive.fsckObjects`) refuses a negative
    // date. What signs refuses such a clock first (`crate::clock::signing_now_ms`);
    // this only keeps the commit well-formed whatever reads the clock here.
    let seconds = i64::try_from(crate::clock::now_ms() / 1000).unwrap_or(i64::MAX);
    // No email (`git-receipt <>`, which `git fsck --strict` accepts): its 21
    // letters were 3% of a receipt's packed bytes, as small objects deflate
    // (issue 30, `cargo bench --bench bytes`).
    gix::actor::Signature {
        name: "git-receipt".into(),
        email: "".into(),
        time: gix::date::Time::new(seconds, 0),
    }
}

/// Test hooks: `GIT_RECEIPT_TEST_STOP_AFTER=<step>` aborts the process right after
/// `step`, the way `kill -9` would, so crash safety can be tested at every step.
/// `GIT_RECEIPT_TEST_PAUSE_AFTER=<step>` instead creates the file named by
/// `GIT_RECEIPT_TEST_PAUSE_FILE` and waits there for ever, so that a test can send
/// a real `kill -9` that provably lands in the middle of a write.
/// `GIT_RECEIPT_TEST_HOLD_AFTER=<step>` creates that file too, and goes on once
/// the test has removed it: a race the test plays out by hand, at a known point.
pub(crate) fn crash_point(step: &str) {
    if std::env::var_os("GIT_RECEIPT_TEST_HOLD_AFTER").is_some_and(|v| v == step)
        && let Some(file) = std::env::var_os("GIT_RECEIPT_TEST_PAUSE_FILE")
        && std::fs::write(&file, step).is_ok()
    {
        while std::path::Path::new(&file).exists() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    if std::env::var_os("GIT_RECEIPT_TEST_STOP_AFTER").is_some_and(|v| v == step) {
        std::process::abort();
    }
    if std::env::var_os("GIT_RECEIPT_TEST_PAUSE_AFTER").is_some_and(|v| v == step) {
        if let Some(file) = std::env::var_os("GIT_RECEIPT_TEST_PAUSE_FILE") {
            let _ = std::fs::write(file, step);
        }
        loop {
            std::thread::park();
        }
    }
}

/// Short form of an object id for display.
pub fn short(oid: &ObjectId) -> String {
    oid.to_hex_with_len(7).to_string()
}

#[cfg(test)]
mod packed_tests {
    use super::{first_line_not_below, hex_names, read_loose_writer_refs};

    /// Loose writer refs read as git reads them: sorted, a write in progress
    /// (`.lock`) passed over; anything unusual is `None`, for gix's exact path.
    #[test]
    fn loose_writer_refs_are_read_as_git_reads_them_or_not_at_all() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("receipts");
        assert_eq!(
            read_loose_writer_refs(&dir, "refs/receipts/", gix::hash::Kind::Sha1),
            Some(Vec::new())
        );
        std::fs::create_dir(&dir).unwrap();
        let (w1, w2) = (
            format!("b-{}", "1".repeat(32)),
            format!("a-{}", "2".repeat(32)),
        );
        let (id1, id2) = ("1".repeat(40), "ab".repeat(20));
        std::fs::write(dir.join(&w1), format!("{id1}\n")).unwrap();
        std::fs::write(dir.join(&w2), &id2).unwrap();
        std::fs::write(dir.join(format!("{w1}.lock")), "junk").unwrap();
        let oid = |h: &str| gix::ObjectId::from_hex(h.as_bytes()).unwrap();
        assert_eq!(
            read_loose_writer_refs(&dir, "refs/receipts/", gix::hash::Kind::Sha1),
            Some(vec![
                (format!("refs/receipts/{w2}"), oid(&id2)),
                (format!("refs/receipts/{w1}"), oid(&id1)),
            ])
        );
        let w3 = format!("c-{}", "3".repeat(32));
        for what in [
            "a symbolic ref",
            "a short id",
            "trailing junk",
            "a name that is no writer id",
            "a directory",
            "a link",
        ] {
            let path = dir.join(&w3);
            match what {
                "a symbolic ref" => std::fs::write(&path, "ref: refs/heads/main\n").unwrap(),
                "a short id" => std::fs::write(&path, "1234\n").unwrap(),
                "trailing junk" => std::fs::write(&path, format!("{id1}\n\n")).unwrap(),
                "a name that is no writer id" => {
                    std::fs::write(dir.join("junk"), format!("{id1}\n")).unwrap()
                }
                "a directory" => std::fs::create_dir(&path).unwrap(),
                _ => std::os::unix::fs::symlink(dir.join(&w1), &path).unwrap(),
            }
            assert_eq!(
                read_loose_writer_refs(&dir, "refs/receipts/", gix::hash::Kind::Sha1),
                None,
                "{what}"
            );
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_dir(&path);
            let _ = std::fs::remove_file(dir.join("junk"));
        }
        assert!(read_loose_writer_refs(&dir, "refs/receipts/", gix::hash::Kind::Sha1).is_some());
    }

    /// The binary search lands where a reading of every line would: on the
    /// first record not below the prefix, never on a peeled line, at the end
    /// when every name is below it.
    #[test]
    fn the_first_packed_line_not_below_a_prefix_is_found_by_halving() {
        let names = [
            "refs/baseline/a",
            "refs/heads/main",
            "refs/notes/receipts/w-1",
            "refs/receipts-incoming/origin/w-1",
            "refs/receipts/w-1",
            "refs/receipts/w-2",
            "refs/receipts/w-3",
            "refs/tags/v1",
            "refs/tags/v2",
        ];
        for peeled in [false, true] {
            let mut packed = Vec::new();
            let mut starts = Vec::new();
            for (i, name) in names.iter().enumerate() {
                starts.push(packed.len());
                packed.extend_from_slice(format!("{:040x} {name}\n", i).as_bytes());
                if peeled && (i % 2 == 1 || name.starts_with("refs/tags/")) {
                    packed.extend_from_slice(format!("^{:040x}\n", i + 100).as_bytes());
                }
            }
            for prefix in [
                "",
                "refs/",
                "refs/a",
                "refs/baseline/",
                "refs/heads/",
                "refs/notes/",
                "refs/receipts/",
                "refs/receipts/w-2",
                "refs/receipts/w-9",
                "refs/s",
                "refs/tags/",
                "refs/tags/v2",
                "refs/z",
                "s",
            ] {
                let linear = names
                    .iter()
                    .position(|n| n.as_bytes() >= prefix.as_bytes())
                    .map_or(packed.len(), |i| starts[i]);
                assert_eq!(
                    first_line_not_below(&packed, prefix.as_bytes()),
                    linear,
                    "{prefix:?}, peeled lines: {peeled}"
                );
            }
        }
        assert_eq!(first_line_not_below(b"", b"refs/"), 0);
    }

    #[test]
    fn an_object_id_is_named_by_its_lowercase_hex_only() {
        let id = gix::ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").unwrap();
        assert!(hex_names(b"0123456789abcdef0123456789abcdef01234567", &id));
        for other in [
            &b"0123456789ABCDEF0123456789abcdef01234567"[..],
            b"0123456789abcdef0123456789abcdef01234568",
            b"1123456789abcdef0123456789abcdef01234567",
            b"0123456789abcdef0123456789abcdef0123456",
            b"0123456789abcdef0123456789abcdef012345678",
        ] {
            assert!(!hex_names(other, &id), "{}", String::from_utf8_lossy(other));
        }
    }
}
