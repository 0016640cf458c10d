//! Writes that survive a concurrent `git gc --prune=now`, `git prune` or
//! `git repack -ad` (issue 25).
//!
//! git documents the race: a prune lists what is reachable, then deletes every
//! loose object it did not reach, so the objects of a write in flight (written,
//! but not yet named by a ref when the prune listed the refs) may go, and a
//! repack that finds a fan-out directory empty removes it under the writer's
//! feet. Three defences, in the order a write meets them:
//!
//! - **Writing.** Objects are written loose through one function that tries
//!   again when the fan-out directory vanished between its creation and the
//!   rename into it, and otherwise names the object file and the operation.
//! - **Reflogs.** Every update of a chain or notes ref is logged
//!   (`logs/refs/receipts/<writer>`, as `core.logAllRefUpdates = always` would),
//!   so gc keeps every earlier tip, and with it the whole chain below a write that
//!   a prune cut.
//! - **Checking after the update.** Once the ref names the new objects, they are
//!   looked up again on disk (not in this process's view of the packs, which can
//!   outlive a pack a repack deleted); what went is written again from memory. A
//!   write that cannot be made whole puts the ref back and says so.
//!
//! A reader that still finds a chain or notes ref naming a missing commit (a
//! writer killed between its update and its check) puts it back on the newest
//! entry of its reflog whose objects are all here, and says which receipts went.

use gix::ObjectId;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};

use super::{CHAIN_PREFIX, NOTES_PREFIX, Store, StoreError};
use crate::notice::Notice;

/// How often a write tries again when its fan-out directory vanished, or when a
/// prune deleted its objects after the ref update.
const ATTEMPTS: u32 = 8;

/// How far ahead a freshly written loose object is dated (see
/// [`Store::hold_loose`]): far beyond any write's time from its objects to its
/// ref (seconds at most), and nothing beside git's default grace of two weeks.
const HOLD: std::time::Duration = std::time::Duration::from_secs(3600);

/// One object written by this process, kept in memory until the ref that names
/// it is checked, so that a prune that deleted it can be undone.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    /// Its id.
    pub id: ObjectId,
    kind: gix::objs::Kind,
    bytes: Vec<u8>,
    /// What it is, for messages (`receipt.json`, `a chain commit`).
    what: &'static str,
}

/// Encode `object` as git stores it.
pub(crate) fn encode(object: &impl gix::objs::WriteTo) -> (gix::objs::Kind, Vec<u8>) {
    let mut bytes = Vec::new();
    object
        .write_to(&mut bytes)
        .expect("writing to memory cannot fail");
    (object.kind(), bytes)
}

impl Store {
    /// The objects directory of this repository.
    fn objects_dir(&self) -> std::path::PathBuf {
        self.repo.objects.store_ref().path().to_owned()
    }

    /// Write an object (unless it is here already) and keep it in memory for
    /// [`Store::keep_written`].
    pub(crate) fn put_object(
        &self,
        what: &'static str,
        kind: gix::objs::Kind,
        bytes: Vec<u8>,
    ) -> Result<Written, StoreError> {
        let id = gix::objs::compute_hash(gix::hash::Kind::Sha1, kind, &bytes).map_err(|e| {
            StoreError::Git {
                what: format!("hashing {what}"),
                source: e.into(),
            }
        })?;
        let written = Written {
            id,
            kind,
            bytes,
            what,
        };
        if !self.repo.has_object(id) {
            self.write_loose(&written)?;
        } else {
            // git freshens an object it would have written; so does this
            self.hold_loose(id);
        }
        Ok(written)
    }

    /// Date the loose file of `id` (if it is one) [`HOLD`] ahead: `git prune
    /// --expire=now` (what `git gc --prune=now` runs) and the expiry of a cruft
    /// pack spare an object whose file is newer than their cutoff. That grace is
    /// git's own protection of a write in flight, which `--prune=now` takes
    /// away; this gives it back to the objects of this write until its ref
    /// names them (after that they are reachable, and their date means nothing).
    fn hold_loose(&self, id: ObjectId) {
        let hex = id.to_hex().to_string();
        let path = self.objects_dir().join(&hex[..2]).join(&hex[2..]);
        if let Ok(file) = std::fs::File::open(&path) {
            let _ = file.set_modified(std::time::SystemTime::now() + HOLD);
        }
    }

    /// Write one object loose, even if this process believes it has it. The
    /// fan-out directory (`objects/ab`) may be removed by a concurrent
    /// `git prune`/`git repack` between gix creating it and renaming the object
    /// into it ("failed to persist temporary file: No such file or directory"):
    /// that is tried again (gix creates the directory again); anything else, or
    /// the same after [`ATTEMPTS`], is an error naming the file.
    fn write_loose(&self, w: &Written) -> Result<(), StoreError> {
        use gix::objs::Write as _;
        let dir = self.objects_dir();
        let loose = gix::odb::loose::Store::at(dir.clone(), gix::hash::Kind::Sha1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            match loose.write_buf(w.kind, &w.bytes) {
                Ok(_) => {
                    self.hold_loose(w.id);
                    return Ok(());
                }
                Err(e) => {
                    let vanished = error_chain_has_not_found(&e);
                    if vanished && attempt < ATTEMPTS {
                        super::chain::backoff(attempt);
                        continue;
                    }
                    let hex = w.id.to_hex().to_string();
                    let path = dir.join(&hex[..2]).join(&hex[2..]);
                    return Err(StoreError::ObjectWrite {
                        what: w.what,
                        path,
                        attempts: attempt,
                        vanished,
                        cause: full_message(&e),
                    });
                }
            }
        }
    }

    /// Which of `ids` the repository on disk lacks now. Asks a freshly opened
    /// object store: this process's own may still read a pack that a
    /// concurrent repack has deleted.
    pub(crate) fn missing_on_disk(&self, ids: &[ObjectId]) -> Vec<ObjectId> {
        use gix::objs::Exists as _;
        let dir = self.objects_dir();
        let fresh = gix::odb::at(dir.clone(), gix::hash::Kind::Sha1).ok();
        ids.iter()
            .copied()
            .filter(|id| {
                let hex = id.to_hex().to_string();
                if dir.join(&hex[..2]).join(&hex[2..]).is_file() {
                    return false;
                }
                !fresh.as_ref().is_some_and(|odb| odb.exists(id))
            })
            .collect()
    }

    /// After `refname` was moved to name `written`: check that every one of them
    /// is on disk, and write again what a concurrent prune deleted, until all
    /// stay (bounded). `Err` names what could not be kept.
    pub(crate) fn keep_written(&self, refname: &str, written: &[Written]) -> Result<(), StoreError> {
        let ids: Vec<ObjectId> = written.iter().map(|w| w.id).collect();
        for attempt in 1..=ATTEMPTS {
            let missing = self.missing_on_disk(&ids);
            if missing.is_empty() {
                return Ok(());
            }
            if attempt == ATTEMPTS {
                let what = written
                    .iter()
                    .filter(|w| missing.contains(&w.id))
                    .map(|w| format!("{} {}", w.what, w.id))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(StoreError::ObjectsPruned {
                    refname: refname.to_owned(),
                    what,
                    attempts: ATTEMPTS,
                });
            }
            for w in written.iter().filter(|w| missing.contains(&w.id)) {
                self.write_loose(w)?;
            }
            super::chain::backoff(attempt);
        }
        Ok(())
    }

    /// Move `refname` to `new` by compare-and-swap against `old` (`None`: it must
    /// not exist), logging the update in the ref's reflog, which is created if
    /// need be: gc keeps every object a reflog names.
    pub(crate) fn update_logged_ref(
        &self,
        refname: &str,
        old: Option<ObjectId>,
        new: ObjectId,
        message: &str,
    ) -> Result<(), gix::Error> {
        let expected = match old {
            None => PreviousValue::MustNotExist,
            Some(t) => PreviousValue::MustExistAndMatch(gix::refs::Target::Object(t)),
        };
        let name: gix::refs::FullName = refname.try_into().map_err(gix::Error::from_error)?;
        self.repo.edit_reference(RefEdit {
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    force_create_reflog: true,
                    message: message.into(),
                },
                expected,
                new: gix::refs::Target::Object(new),
            },
            name,
            deref: false,
        })?;
        Ok(())
    }

    /// Undo an update of `refname` from `to` to `from` whose objects could not be
    /// kept: back to `to`, or deleted when it did not exist. Best effort: if
    /// another writer moved it since, it is left as it is (a reader restores a
    /// tip that names missing objects from the reflog).
    pub(crate) fn put_ref_back(
        &self,
        refname: &str,
        from: ObjectId,
        to: Option<ObjectId>,
        message: &str,
    ) {
        let _ = match to {
            Some(to) => self.update_logged_ref(refname, Some(from), to, message),
            None => refname
                .try_into()
                .map_err(gix::Error::from_error)
                .and_then(|name: gix::refs::FullName| {
                    self.repo.edit_reference(RefEdit {
                        change: Change::Delete {
                            expected: PreviousValue::MustExistAndMatch(
                                gix::refs::Target::Object(from),
                            ),
                            log: RefLog::AndReference,
                        },
                        name,
                        deref: false,
                    })
                })
                .map(drop),
        };
    }

    /// Keep `writer`'s log blob `blob` (whose bytes are `bytes`) under its log
    /// ref, and on disk: a prune may have deleted it between its writing (before
    /// the receipt) and the log ref.
    pub(crate) fn keep_log(
        &self,
        writer: &str,
        blob: ObjectId,
        bytes: &[u8],
    ) -> Result<(), StoreError> {
        let written = Written {
            id: blob,
            kind: gix::objs::Kind::Blob,
            bytes: bytes.to_vec(),
            what: "the output log",
        };
        let refname = super::logs::log_ref(writer, &blob);
        // first on disk, so that the ref never names a missing blob for long
        self.keep_written(&refname, std::slice::from_ref(&written))?;
        self.set_log_ref(writer, blob)?;
        self.keep_written(&refname, &[written])
    }

    /// Put a chain or notes ref that names a missing commit back on the newest
    /// entry of its reflog whose objects are all here, saying so. `None` when
    /// the ref is no such ref, or no entry is whole (the caller reports the
    /// missing object).
    pub(crate) fn restore_from_reflog(&self, refname: &str, missing: ObjectId) -> Option<ObjectId> {
        if !self.overrides.is_empty() || self._quarantine_view.is_some() {
            return None;
        }
        let (writer, is_chain) = if let Some(w) = refname.strip_prefix(CHAIN_PREFIX) {
            (w, true)
        } else {
            (refname.strip_prefix(NOTES_PREFIX)?, false)
        };
        if !crate::receipt::is_valid_writer_id(writer) {
            return None;
        }
        let r = self.repo.try_find_reference(refname).ok()??;
        let mut candidates: Vec<ObjectId> = Vec::new();
        {
            let mut platform = r.log_iter();
            let entries = platform.rev().ok()??;
            for line in entries.flatten() {
                let id = line.new_oid.to_owned();
                if id != missing && !id.is_null() && !candidates.contains(&id) {
                    candidates.push(id);
                }
            }
        }
        let restored = candidates.into_iter().find(|&c| {
            if is_chain {
                self.chain_is_whole(writer, c)
            } else {
                self.repo
                    .find_commit(c)
                    .ok()
                    .and_then(|c| c.tree_id().ok())
                    .is_some_and(|t| self.repo.has_object(t))
            }
        })?;
        self.update_logged_ref(
            refname,
            Some(missing),
            restored,
            "git-receipt: restored from the reflog (the tip was pruned)",
        )
        .ok()?;
        let (code, lost) = if is_chain {
            let index = self
                .chain_entry(writer, restored)
                .map(|e| e.receipt.body().chain.index)
                .ok();
            (
                "chain-restored-from-reflog",
                format!(
                    "; its tip (index {}) is now {restored}, and receipts written after it are lost: run their checks again",
                    index.map_or_else(|| "?".to_owned(), |i| i.to_string())
                ),
            )
        } else {
            (
                "notes-restored-from-reflog",
                "; `git receipt reindex` completes the notes from the chain".to_owned(),
            )
        };
        self.notice(
            Notice::warning(
                code,
                format!(
                    "{} pointed at {missing}, which a concurrent `git gc --prune=now` (or `git prune`) deleted; restored it from its reflog to {restored}, the newest entry whose objects are all here{lost}",
                    crate::text::escape(refname)
                ),
            )
            .about(refname.to_owned()),
        );
        Some(restored)
    }

    /// Whether every entry of `writer`'s chain from `tip` to its root is here
    /// and readable.
    fn chain_is_whole(&self, writer: &str, tip: ObjectId) -> bool {
        if !self.repo.has_object(tip) {
            return false;
        }
        self.walk_chain(writer, tip, |e| {
            Ok(e.parent.is_none_or(|p| self.repo.has_object(p)))
        })
        .is_ok()
    }

    /// Whether a writer of this repository is in the middle of a ref update: a
    /// `*.lock` beside a chain, notes or log ref, or `packed-refs.lock`. A
    /// `git gc --auto` started then could prune what that writer is writing.
    pub fn writer_holds_lock(&self) -> bool {
        let common = self.repo.common_dir();
        if common.join("packed-refs.lock").exists() {
            return true;
        }
        fn any_lock(dir: &std::path::Path, depth: u32) -> bool {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return false;
            };
            entries.filter_map(Result::ok).any(|e| {
                let path = e.path();
                if path.extension().is_some_and(|x| x == "lock") {
                    return true;
                }
                depth > 0 && path.is_dir() && any_lock(&path, depth - 1)
            })
        }
        [
            "refs/receipts",
            "refs/notes/receipts",
            super::logs::LOG_PREFIX.trim_end_matches('/'),
        ]
        .iter()
        .any(|d| any_lock(&common.join(d), 1))
    }
}

/// `write()`, tried again while it fails because a fan-out directory vanished
/// (see [`Store::put_object`]); for the writes gix makes itself (a tree editor's).
pub(crate) fn retry_vanished_dir<T, E: std::error::Error + 'static>(
    mut write: impl FnMut() -> Result<T, E>,
) -> Result<T, E> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match write() {
            Err(e) if attempt < ATTEMPTS && error_chain_has_not_found(&e) => {
                super::chain::backoff(attempt);
            }
            other => return other,
        }
    }
}

/// Whether `e` or any error under it is a "No such file or directory".
fn error_chain_has_not_found(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::NotFound
        {
            return true;
        }
        if c.to_string().contains("No such file or directory") {
            return true;
        }
        cause = c.source();
    }
    false
}

/// `e` and every cause under it, joined: gix's outer message alone says only
/// "failed to persist temporary file".
fn full_message(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = c.source();
    }
    parts.join(": ")
}
