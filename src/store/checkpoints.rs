//! Signed checkpoints, as git stores them: one append-only commit chain per
//! signer under `refs/receipt-checkpoints/<writer>`, each commit's tree holding
//! exactly one regular file, `checkpoint.json` (a DSSE envelope). What the
//! envelope says, who signed it and whether anyone should believe it is
//! the business of the `checkpoint` module above the store; this module only reads and writes the
//! shape, with every size bounded.

use gix::ObjectId;
use gix::objs::tree::{Entry, EntryKind};

use super::concurrent_gc::encode;
use super::{Store, StoreError};

/// Prefix of checkpoint refs: `refs/receipt-checkpoints/<writer>`.
pub const CHECKPOINT_PREFIX: &str = "refs/receipt-checkpoints/";

/// The one file of a checkpoint commit's tree.
pub const CHECKPOINT_FILE: &str = "checkpoint.json";

/// The largest `checkpoint.json` read: 16 MiB, room for some 50,000 chains at
/// about 300 bytes each (base64 included). Larger is refused unread.
pub const MAX_CHECKPOINT_BYTES: u64 = 16 << 20;

/// The most commits of one signer's checkpoint chain read: a checkpoint a day
/// for 270 years. A bound on what a hostile push can make a reader walk.
pub const MAX_CHECKPOINTS: usize = 100_000;

/// The checkpoint chain ref of `writer`.
pub fn checkpoint_ref(writer: &str) -> String {
    format!("{CHECKPOINT_PREFIX}{writer}")
}

/// One checkpoint commit, read for its shape only.
#[derive(Debug, Clone)]
pub struct RawCheckpoint {
    /// The commit.
    pub commit: ObjectId,
    /// Its parents (a checkpoint chain is linear: none at the root, else one).
    pub parents: Vec<ObjectId>,
    /// The bytes of `checkpoint.json`, or why the commit holds no readable one.
    pub file: Result<Vec<u8>, String>,
}

impl Store {
    /// Each signer's checkpoint chain tip, by writer id (sorted).
    pub fn checkpoint_tips(&self) -> Result<Vec<(String, ObjectId)>, StoreError> {
        Ok(self
            .tips_under(CHECKPOINT_PREFIX)?
            .into_iter()
            .filter(|(w, _)| crate::receipt::is_valid_writer_id(w))
            .collect())
    }

    /// Read checkpoint commit `commit`: its parents and its one file. A commit
    /// that cannot be read at all is an error; one of the wrong shape (another
    /// file, a tree, a file over [`MAX_CHECKPOINT_BYTES`]) says so in `file`.
    pub fn read_checkpoint(&self, commit: ObjectId) -> Result<RawCheckpoint, StoreError> {
        let c = self
            .repo
            .find_commit(commit)
            .map_err(super::git_err(format!(
                "reading checkpoint commit {commit}"
            )))?;
        let parents: Vec<ObjectId> = c.parent_ids().map(|p| p.detach()).collect();
        let file = (|| {
            let tree_id = c.tree_id().map_err(|e| format!("tree unreadable: {e}"))?;
            let tree = self
                .repo
                .find_tree(tree_id)
                .map_err(|e| format!("tree unreadable: {e}"))?;
            let mut blob = None;
            for e in tree.iter() {
                let e = e.map_err(|e| format!("tree unreadable: {e}"))?;
                if e.filename() == CHECKPOINT_FILE && e.mode().kind() == EntryKind::Blob {
                    blob = Some(e.oid().to_owned());
                } else {
                    return Err(format!(
                        "its tree holds {:?}; a checkpoint commit holds exactly one regular file, {CHECKPOINT_FILE}",
                        crate::text::escape(&String::from_utf8_lossy(e.filename()))
                    ));
                }
            }
            let blob = blob.ok_or_else(|| format!("its tree holds no {CHECKPOINT_FILE}"))?;
            let header = self
                .repo
                .find_header(blob)
                .map_err(|e| format!("{CHECKPOINT_FILE} unreadable: {e}"))?;
            if header.size() > MAX_CHECKPOINT_BYTES {
                return Err(format!(
                    "{CHECKPOINT_FILE} is {} bytes, over the {MAX_CHECKPOINT_BYTES}-byte limit",
                    header.size()
                ));
            }
            let mut blob = self
                .repo
                .find_blob(blob)
                .map_err(|e| format!("{CHECKPOINT_FILE} unreadable: {e}"))?;
            Ok(blob.take_data())
        })();
        Ok(RawCheckpoint {
            commit,
            parents,
            file,
        })
    }

    /// Append a checkpoint holding `file` to `writer`'s checkpoint chain, on top
    /// of `parent` (which must be the chain's tip: the ref moves only from it).
    /// Returns the new commit.
    pub fn append_checkpoint(
        &self,
        writer: &str,
        file: Vec<u8>,
        parent: Option<ObjectId>,
        message: &str,
    ) -> Result<ObjectId, StoreError> {
        let blob = self.put_kept_object(CHECKPOINT_FILE, gix::objs::Kind::Blob, file)?;
        let (kind, bytes) = encode(&gix::objs::Tree {
            entries: vec![Entry {
                mode: EntryKind::Blob.into(),
                filename: CHECKPOINT_FILE.into(),
                oid: blob.id,
            }],
        });
        let tree = self.put_kept_object("a checkpoint tree", kind, bytes)?;
        let commit =
            self.put_tool_commit("a checkpoint commit", tree.id, parent, message.to_owned())?;
        let refname = checkpoint_ref(writer);
        self.set_ref(&refname, parent, commit.id, "git-receipt: checkpoint")?;
        self.keep_written(&refname, &[blob, tree, commit.clone()])?;
        Ok(commit.id)
    }
}
