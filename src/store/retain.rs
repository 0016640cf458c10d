//! Rewriting a chain with retention stubs (`git receipt retain`): the receipts
//! to drop replaced by [`Stub`]s, every commit above written again as it was.

use std::collections::BTreeMap;

use gix::ObjectId;
use gix::objs::tree::{Entry, EntryKind};

use super::chain::{ChainItem, chain_ref};
use super::stub::{STUB_FILE, Stub};
use super::{Store, StoreError, git_err};

/// What [`Store::rewrite_with_stubs`] did to one chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    /// The chain's new tip.
    pub tip: ObjectId,
    /// Receipts now stubs.
    pub dropped: u64,
    /// Chain commits written again above them (same trees, new parents).
    pub rewritten: u64,
}

impl Store {
    /// Replace the receipts of `writer`'s chain at the indexes `stubs` names by
    /// those stubs, and move the chain from its tip to the result (compare and
    /// swap: a chain that moved since is left alone, and the error says so).
    /// `items` is the chain as read ([`Store::chain_items`], oldest first), its
    /// last the tip. Every commit above the first stub is written again with its
    /// tree and message as they were, on its new parent; receipts, ids, indexes
    /// and links do not change, so the chain verifies as before, the stubs'
    /// links checked by the ids the receipts above them sign. The tip is never a
    /// stub, nor is anything but a receipt whose stub names it.
    ///
    /// The caller rebuilds the notes ([`Store::restart_notes`]); the receipt
    /// index re-indexes a chain that moved sideways on its next read.
    pub fn rewrite_with_stubs(
        &self,
        writer: &str,
        items: &[ChainItem],
        stubs: &BTreeMap<u64, Stub>,
    ) -> Result<Rewritten, StoreError> {
        let Some(tip) = items.last().map(ChainItem::commit) else {
            return Err(StoreError::CorruptChain {
                writer: writer.to_owned(),
                commit: ObjectId::null(self.repo.object_hash()),
                reason: "has no commits to rewrite".to_owned(),
            });
        };
        let refuse = |reason: String| StoreError::CorruptChain {
            writer: writer.to_owned(),
            commit: tip,
            reason,
        };
        if items.first().is_some_and(|i| i.parent().is_some()) {
            return Err(refuse(
                "the chain's first entries are not in this repository (a shallow clone): retention rewrites a whole chain; run it where the chains are whole (the server), or `git fetch --unshallow` first".to_owned(),
            ));
        }
        let mut parent: Option<ObjectId> = None;
        let mut moved = false;
        let mut out = Rewritten {
            tip,
            dropped: 0,
            rewritten: 0,
        };
        let last = items.len().saturating_sub(1);
        for (n, item) in items.iter().enumerate() {
            let (id, index) = item.id_index();
            let stub = stubs
                .get(&index)
                .filter(|_| matches!(item, ChainItem::Entry(_)));
            if let Some(stub) = stub {
                if n == last {
                    return Err(refuse(format!(
                        "receipt {id} is the chain's tip, which is never dropped"
                    )));
                }
                if stub.id != id || stub.index != index {
                    return Err(refuse(format!(
                        "the stub for #{index} names {} #{}, not {id}",
                        stub.id, stub.index
                    )));
                }
                parent = Some(self.write_stub_commit(stub, parent)?);
                out.dropped += 1;
                moved = true;
            } else if moved {
                parent = Some(self.recommit(item.commit(), parent)?);
                out.rewritten += 1;
            } else {
                parent = Some(item.commit());
            }
        }
        if out.dropped as usize != stubs.len() {
            return Err(refuse(format!(
                "{} of the {} receipts to drop are not receipts of this chain",
                stubs.len() - out.dropped as usize,
                stubs.len()
            )));
        }
        let new_tip = parent.unwrap_or(tip);
        if new_tip != tip {
            self.set_ref(
                &chain_ref(writer),
                Some(tip),
                new_tip,
                "git-receipt: retain (receipts dropped to stubs)",
            )?;
        }
        out.tip = new_tip;
        Ok(out)
    }

    /// Chain commits `commits` (oldest first) written again on `onto`, each
    /// with its tree and message as it was: the entries a clone has above a
    /// chain its remote rewrote with stubs (same ids, so the links hold).
    pub fn recommit_onto(
        &self,
        commits: &[ObjectId],
        onto: ObjectId,
    ) -> Result<ObjectId, StoreError> {
        let mut parent = onto;
        for c in commits {
            parent = self.recommit(*c, Some(parent))?;
        }
        Ok(parent)
    }

    /// A stub's chain commit on `parent`.
    fn write_stub_commit(
        &self,
        stub: &Stub,
        parent: Option<ObjectId>,
    ) -> Result<ObjectId, StoreError> {
        let blob = self.put_object(STUB_FILE, gix::objs::Kind::Blob, stub.to_bytes())?;
        let tree = gix::objs::Tree {
            entries: vec![Entry {
                mode: EntryKind::Blob.into(),
                filename: STUB_FILE.into(),
                oid: blob,
            }],
        };
        let (kind, bytes) = super::concurrent_gc::encode(&tree);
        let tree = self.put_object("a stub tree", kind, bytes)?;
        let message = format!("stub: {} #{}\n", stub.check, stub.index);
        Ok(self
            .put_tool_commit("a stub commit", tree, parent, message)?
            .id)
    }

    /// Chain commit `commit` written again on `parent`: its tree, author,
    /// committer and message as they were.
    fn recommit(&self, commit: ObjectId, parent: Option<ObjectId>) -> Result<ObjectId, StoreError> {
        let c = self
            .repo
            .find_commit(commit)
            .map_err(git_err("reading a chain commit"))?;
        let mut owned = c
            .decode()
            .map_err(git_err("reading a chain commit"))?
            .into_owned()
            .map_err(git_err("reading a chain commit"))?;
        owned.parents = parent.into_iter().collect();
        let (kind, bytes) = super::concurrent_gc::encode(&owned);
        self.put_object("a chain commit", kind, bytes)
    }
}
