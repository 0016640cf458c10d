//! Small read-only questions about the repository that code above the store asks:
//! does an object exist, what does HEAD name, which refs lie under a prefix, is
//! this clone shallow. Each answers in ids and strings, so no caller outside
//! `store/` holds a `gix::Repository` (the store is the only code that touches git).

use std::collections::{HashMap, HashSet};

use gix::ObjectId;

use super::{Store, StoreError, git_err};

/// How many of the commits `.git/shallow` lists [`Store::chains_cut`] looks at.
pub const CUT_LOOKS: usize = 256;

/// What kind of object an id names, from its header alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// A blob.
    Blob,
    /// A tree.
    Tree,
    /// A commit.
    Commit,
    /// An annotated tag.
    Tag,
}

/// A lazy breadth-first walk of the ancestry of a revision, bounded by depth:
/// the one walk of the freshness rules (checks and reviews alike).
///
/// A commit's **depth** is the number of parent steps on the shortest path from
/// the revision to it: for a commit on the revision's first-parent line its
/// position there (`git rev-list --first-parent` order, `H~k` is `k` deep) unless
/// a merged branch reaches it in fewer steps; for a commit a merge brought in,
/// the merge's depth plus its steps down the merged branch. The walk visits the
/// commits of depth at most `limit`, nearest first (first parents first at equal
/// depth), and only as far as its caller asks ([`Store::ancestry_step`]): a
/// caller that stops at the nearest receipt pays for the distance to it, not for
/// the bound. Merges do not eat the bound: the commits they bring in are visited
/// but do not push the first-parent line further away.
#[derive(Debug, Default)]
pub struct Ancestry {
    /// Each ancestor visited so far (the revision itself left out) and its depth.
    pub order: Vec<(ObjectId, usize)>,
    /// The depth of every commit reached (visited or waiting to be).
    pub distance: HashMap<ObjectId, usize>,
    /// The first shallow commit visited (the revision itself, if it is one).
    pub shallow_hit: Option<ObjectId>,
    /// A commit deeper than the bound was left out: there is history beyond.
    pub truncated: bool,
    limit: usize,
    /// Reached, not yet visited, nearest first.
    queue: std::collections::VecDeque<ObjectId>,
}

impl Ancestry {
    /// Whether every commit within the bound has been visited.
    pub fn is_done(&self) -> bool {
        self.queue.is_empty()
    }
}

/// What ancestry walks have read, kept for the life of a [`Store`]: a commit's
/// parents never change, so every revision evaluated through one store (a
/// range, a report) reads each commit once.
#[derive(Default)]
pub(crate) struct History {
    /// Parents by commit, first parent first.
    parents: HashMap<ObjectId, Box<[ObjectId]>>,
    /// The commits `.git/shallow` lists, once read.
    shallow: Option<std::sync::Arc<HashSet<ObjectId>>>,
    /// The commit-graph, once looked for (`None` inside: there is none).
    graph: Option<Option<gix::commitgraph::Graph>>,
    /// `is_ancestor(a, b)` answers by `(a, b)`: what a range (judged oldest
    /// first) asks again for each commit is answered from its parents' answers.
    pub(crate) ancestor: HashMap<(ObjectId, ObjectId), bool>,
    /// The first-parent chain below one tip (the default branch's, for trust
    /// roots), as far as it has been read: a range judges a thousand commits
    /// against the same chain.
    first_parents: Option<std::sync::Arc<FirstParentChain>>,
    /// Trust roots found, as positions on the chain below a tip, by (tip, rev,
    /// walk limit): `None` inside for no shared history.
    trust_roots: HashMap<(ObjectId, ObjectId, usize), Option<usize>>,
}

/// A tip and the commits below it by first parents, `commits()[0]` the tip,
/// read as far as some caller asked ([`Store::extend_first_parents`]). Shared
/// (an `Arc`) between the store and its readers: a range asks about it for
/// every commit, and only an extension copies it.
#[derive(Debug, Clone)]
pub struct FirstParentChain {
    commits: Vec<ObjectId>,
    positions: HashMap<ObjectId, usize>,
    ended: Option<bool>,
}

impl FirstParentChain {
    fn new(tip: ObjectId) -> FirstParentChain {
        FirstParentChain {
            commits: vec![tip],
            positions: [(tip, 0)].into(),
            ended: None,
        }
    }

    /// The tip, then each first parent in turn, as far as read.
    pub fn commits(&self) -> &[ObjectId] {
        &self.commits
    }

    /// How the chain ended, once it has: `Some(false)` at a root commit,
    /// `Some(true)` at a parent this (shallow) clone does not have.
    pub fn ended(&self) -> Option<bool> {
        self.ended
    }

    /// Where `commit` sits in the part read so far (the tip is 0).
    pub fn position(&self, commit: ObjectId) -> Option<usize> {
        self.positions.get(&commit).copied()
    }
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("parents", &self.parents.len())
            .finish()
    }
}

/// The SSH signature of a commit (git's `gpgsig` header) and the bytes it signs.
#[derive(Debug)]
pub struct CommitSignature {
    /// The armored signature, as the header holds it.
    pub armored: Vec<u8>,
    /// The commit as signed: the object without its signature header.
    pub signed: Vec<u8>,
}

impl Store {
    /// Whether the object database holds `id` (of any kind).
    pub fn has_object(&self, id: ObjectId) -> bool {
        self.repo.has_object(id)
    }

    /// Whether `id` names a commit this repository holds.
    pub fn has_commit(&self, id: ObjectId) -> bool {
        self.repo.find_commit(id).is_ok()
    }

    /// The kind and size of object `id` from its header, without reading it; `None`
    /// when this repository does not hold it (or cannot read its header).
    pub fn object_header(&self, id: ObjectId) -> Option<(ObjectKind, u64)> {
        let header = self.repo.find_header(id).ok()?;
        let kind = match header.kind() {
            gix::object::Kind::Blob => ObjectKind::Blob,
            gix::object::Kind::Tree => ObjectKind::Tree,
            gix::object::Kind::Commit => ObjectKind::Commit,
            gix::object::Kind::Tag => ObjectKind::Tag,
        };
        Some((kind, header.size()))
    }

    /// The object format of this repository's ids: SHA-1, or SHA-256
    /// (`git init --object-format=sha256`).
    pub fn object_hash(&self) -> gix::hash::Kind {
        self.repo.object_hash()
    }

    /// The empty tree's id in this repository's hash.
    pub fn empty_tree(&self) -> ObjectId {
        ObjectId::empty_tree(self.repo.object_hash())
    }

    /// The full name of the branch HEAD points at (`refs/heads/main`), or `None` when
    /// HEAD is detached or cannot be read.
    pub fn head_branch(&self) -> Option<String> {
        self.repo
            .head_name()
            .ok()
            .flatten()
            .map(|n| n.as_bstr().to_string())
    }

    /// The commit HEAD points at, or `None` when HEAD is unborn or unreadable.
    pub fn head_commit_id(&self) -> Option<ObjectId> {
        self.repo.head_id().ok().map(|id| id.detach())
    }

    /// The ref `name` names when it is symbolic (one step, not followed), `Ok(None)`
    /// when it is direct or does not exist; an error when it cannot be read.
    pub fn symref_target(&self, name: &str) -> Result<Option<String>, StoreError> {
        match self.repo.try_find_reference(name) {
            Ok(Some(r)) => Ok(r.target().try_name().map(|t| t.as_bstr().to_string())),
            Ok(None) => Ok(None),
            Err(e) => Err(git_err(format!("reading ref {name}"))(e)),
        }
    }

    /// Whether ref `name` exists (direct or symbolic).
    pub fn ref_exists(&self, name: &str) -> bool {
        self.repo.try_find_reference(name).ok().flatten().is_some()
    }

    /// The commit ref `name` peels to (through tags), or `None` when it does not
    /// exist or names no commit.
    pub fn ref_commit(&self, name: &str) -> Option<ObjectId> {
        self.repo
            .try_find_reference(name)
            .ok()
            .flatten()
            .and_then(|mut r| r.peel_to_commit().ok().map(|c| c.id))
    }

    /// The full name and peeled id of ref `name` (`main` finds `refs/heads/main`),
    /// or `None` when it does not exist or does not peel.
    pub fn ref_peeled(&self, name: &str) -> Option<(String, ObjectId)> {
        self.ref_peeled_checked(name).ok().flatten()
    }

    /// [`Store::ref_peeled`] for a decision: a ref whose file (or the objects it
    /// peels through) cannot be read is an error naming why, not "no such ref".
    pub fn ref_peeled_checked(&self, name: &str) -> Result<Option<(String, ObjectId)>, StoreError> {
        let unreadable =
            |e: &(dyn std::error::Error + 'static)| super::unreadable(format!("reading {name}"), e);
        let mut r = match self.repo.try_find_reference(name) {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(None),
            Err(e) => return unreadable(&e).map_or(Ok(None), Err),
        };
        let id = match r.peel_to_id() {
            Ok(id) => id.detach(),
            Err(e) => return unreadable(&e).map_or(Ok(None), Err),
        };
        Ok(Some((r.name().as_bstr().to_string(), id)))
    }

    /// Every ref under `prefix` (`refs/heads/`), by full name, with the object it
    /// points at directly (`None` for a symbolic ref). Refs that cannot be read are
    /// left out.
    pub fn refs_named_under(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, Option<ObjectId>)>, StoreError> {
        let refs = self.repo.references().map_err(git_err("listing refs"))?;
        let under = refs
            .prefixed(prefix)
            .map_err(git_err(format!("listing {prefix}")))?;
        Ok(under
            .flatten()
            .map(|r| {
                (
                    r.name().as_bstr().to_string(),
                    r.target().try_id().map(|id| id.to_owned()),
                )
            })
            .collect())
    }

    /// The names of the configured remotes.
    pub fn remote_names(&self) -> Vec<String> {
        self.repo
            .remote_names()
            .into_iter()
            .map(|n| n.to_string())
            .collect()
    }

    /// A boolean from git config.
    pub fn config_bool(&self, key: &str) -> Option<bool> {
        self.repo.config_snapshot().boolean(key)
    }

    /// Whether this clone is shallow (`.git/shallow` lists commits), `false` when
    /// that cannot be read.
    pub fn is_shallow(&self) -> bool {
        self.repo.is_shallow().unwrap_or(false)
    }

    /// The commits `.git/shallow` lists: history stops there in this clone.
    pub fn shallow_commits(&self) -> Result<HashSet<ObjectId>, StoreError> {
        Ok(self
            .repo
            .shallow_commits()
            .map_err(git_err("reading .git/shallow"))?
            .map(|c| c.iter().copied().collect())
            .unwrap_or_default())
    }

    /// Whether this clone's receipt chains stop at a shallow edge, as `git
    /// receipt fetch --since` leaves them (or a `git fetch --depth` of the
    /// chain refs): `.git/shallow` lists a chain commit, one whose tree holds
    /// `signer.pub` beside `receipt.json` or a retention stub. Older receipts
    /// are then on the remote and not here, so a check that reads missing or
    /// stale may be decided by one of them. For a hint, never for a decision
    /// (anyone who can write `.git/shallow` can make it say either); at most
    /// [`CUT_LOOKS`] listed commits are looked at, so a branch cut at many
    /// commits costs no more.
    pub fn chains_cut(&self) -> bool {
        let Ok(Some(shallow)) = self.repo.shallow_commits() else {
            return false;
        };
        shallow.iter().take(CUT_LOOKS).any(|&c| {
            let Ok(tree) = self.commit_tree(c) else {
                return false;
            };
            let Ok(tree) = self.repo.find_tree(tree) else {
                return false;
            };
            tree.find_entry(super::admit::SIGNER_FILE).is_some()
                && (tree.find_entry(super::entry::RECEIPT_FILE).is_some()
                    || tree.find_entry(super::stub::STUB_FILE).is_some())
        })
    }

    /// The parents of `commit`, first parent first.
    pub fn commit_parents(&self, commit: ObjectId) -> Result<Vec<ObjectId>, StoreError> {
        Ok(self
            .repo
            .find_commit(commit)
            .map_err(git_err(format!("reading commit {commit}")))?
            .parent_ids()
            .map(|p| p.detach())
            .collect())
    }

    /// Write `bytes` as a blob and return its id.
    pub fn write_blob(&self, bytes: &[u8]) -> Result<ObjectId, StoreError> {
        // through the writer that survives a concurrent repack's removing its
        // fan-out directory (see `concurrent_gc`)
        self.put_object("a blob", gix::objs::Kind::Blob, bytes.to_vec())
    }

    /// Every rule of [`super::admit::check_entry`] for chain commit `commit` of
    /// `writer`'s chain, read through this store (so, after
    /// [`Store::see_quarantine`], also from a push's quarantine).
    pub fn check_entry(
        &self,
        writer: &str,
        commit: ObjectId,
        known: &dyn Fn(&str) -> Option<crate::sign::PublicKey>,
    ) -> Result<super::admit::Entry, super::admit::Refusal> {
        super::admit::check_entry(&self.repo, writer, commit, known)
    }

    /// `commit` and its ancestors, breadth first, at most `limit` of them, ending
    /// early at the first that cannot be read.
    pub fn ancestors_breadth_first(
        &self,
        commit: ObjectId,
        limit: usize,
    ) -> Result<Vec<ObjectId>, StoreError> {
        let walk = self
            .repo
            .rev_walk([commit])
            .sorting(gix::revision::walk::Sorting::BreadthFirst)
            .all()
            .map_err(git_err(format!("walking the history of {commit}")))?;
        Ok(walk
            .take(limit)
            .map_while(|info| info.ok().map(|i| i.id))
            .collect())
    }

    /// The signature of `commit` and what it signs, or `None` for an unsigned or
    /// unreadable commit. Checking it is the caller's business.
    pub fn commit_signature(&self, commit: ObjectId) -> Option<CommitSignature> {
        let commit = self.repo.find_commit(commit).ok()?;
        let (armored, signed) = commit.signature().ok()??;
        let mut message = Vec::new();
        std::io::Read::read_to_end(&mut signed.to_bstring().as_slice(), &mut message).ok()?;
        Some(CommitSignature {
            armored: armored.to_vec(),
            signed: message,
        })
    }

    /// Start the walk of the ancestry of `rev`, at most `limit` deep (see
    /// [`Ancestry`]); nothing is read until [`Store::ancestry_step`].
    pub fn ancestry(&self, rev: ObjectId, limit: usize) -> Result<Ancestry, StoreError> {
        let mut distance = HashMap::new();
        distance.insert(rev, 0);
        Ok(Ancestry {
            order: Vec::new(),
            distance,
            shallow_hit: None,
            truncated: false,
            limit,
            queue: [rev].into(),
        })
    }

    /// Visit the next commit of `walk` (the revision itself first): `false` once
    /// every commit within its bound has been visited. A shallow commit is
    /// visited but its parents, which this clone does not have, are not.
    pub fn ancestry_step(&self, walk: &mut Ancestry) -> Result<bool, StoreError> {
        let Some(commit) = walk.queue.pop_front() else {
            return Ok(false);
        };
        let depth = walk.distance[&commit];
        if depth > 0 {
            walk.order.push((commit, depth));
        }
        if self.is_shallow_commit(commit)? {
            walk.shallow_hit.get_or_insert(commit);
            return Ok(true);
        }
        let parents = self.cached_parents(commit)?;
        for &p in parents.iter() {
            if walk.distance.contains_key(&p) {
                continue;
            }
            if depth + 1 > walk.limit {
                walk.truncated = true;
                continue;
            }
            walk.distance.insert(p, depth + 1);
            walk.queue.push_back(p);
        }
        Ok(true)
    }

    /// Read `.git/shallow` again on the next question: a fetch with `--depth`
    /// (another process) just changed it.
    pub fn forget_shallow(&self) {
        self.history.lock().expect("history lock").shallow = None;
    }

    /// Whether `.git/shallow` lists `commit` (read once per store).
    pub(crate) fn is_shallow_commit(&self, commit: ObjectId) -> Result<bool, StoreError> {
        let mut history = self.history.lock().expect("history lock");
        let shallow = match &history.shallow {
            Some(s) => s.clone(),
            None => {
                let s = std::sync::Arc::new(self.shallow_commits()?);
                history.shallow = Some(s.clone());
                s
            }
        };
        Ok(shallow.contains(&commit))
    }

    /// The parents of `commit`, first parent first, read once per store.
    pub(crate) fn cached_parents(&self, commit: ObjectId) -> Result<Box<[ObjectId]>, StoreError> {
        let mut history = self.history.lock().expect("history lock");
        Ok(self.parents_through(&mut history, commit)?.into())
    }

    /// The first-parent chain below `tip` as far as this store has read it
    /// (only the tip, the first time).
    pub fn first_parent_chain(&self, tip: ObjectId) -> std::sync::Arc<FirstParentChain> {
        let history = self.history.lock().expect("history lock");
        match &history.first_parents {
            Some(c) if c.commits[0] == tip => c.clone(),
            _ => std::sync::Arc::new(FirstParentChain::new(tip)),
        }
    }

    /// The trust root this store found for `rev` below `tip` (the trust
    /// module's `trust_root`), as a position on that tip's chain.
    ///
    /// mutants: this memo and [`Store::remember_trust_root`] only save work
    /// (`None` here, `()` there, or `<` for the bound's `>=`, which keeps one
    /// answer at a time, are equivalent: every root is then searched for and
    /// found the same; the trust module's range test compares each answer with
    /// a fresh store's).
    pub fn remembered_trust_root(
        &self,
        tip: ObjectId,
        rev: ObjectId,
        limit: usize,
    ) -> Option<Option<usize>> {
        let history = self.history.lock().expect("history lock");
        history.trust_roots.get(&(tip, rev, limit)).copied()
    }

    /// Keep the trust root found for `rev` below `tip` within `limit`.
    pub fn remember_trust_root(
        &self,
        tip: ObjectId,
        rev: ObjectId,
        limit: usize,
        at: Option<usize>,
    ) {
        let mut history = self.history.lock().expect("history lock");
        // bounded as the ancestry answers are
        if history.trust_roots.len() >= 1_000_000 {
            history.trust_roots.clear();
        }
        history.trust_roots.insert((tip, rev, limit), at);
    }

    /// Read `chain` down to index `want` (or to where it ends), and keep what was
    /// read for the next caller of [`Store::first_parent_chain`].
    pub fn extend_first_parents(
        &self,
        chain: &mut std::sync::Arc<FirstParentChain>,
        want: usize,
    ) -> Result<(), StoreError> {
        if chain.commits.len() > want || chain.ended.is_some() {
            return Ok(());
        }
        let shared = chain;
        let chain = std::sync::Arc::make_mut(shared);
        while chain.commits.len() <= want && chain.ended.is_none() {
            let last = chain.commits[chain.commits.len() - 1];
            match self.cached_parents(last)?.first().copied() {
                None => chain.ended = Some(false),
                Some(p) if !self.has_object(p) => chain.ended = Some(true),
                Some(p) => {
                    chain.positions.insert(p, chain.commits.len());
                    chain.commits.push(p);
                }
            }
        }
        let mut history = self.history.lock().expect("history lock");
        // mutants: `==` for the `!=` below is equivalent: a longer chain of
        // another tip then stays kept, and this tip's is read again next time
        // (the guard of `first_parent_chain` never hands out another tip's);
        // so is `<=` for `<`: a chain as long as the kept one is the same chain
        let longer = history.first_parents.as_ref().is_none_or(|c| {
            c.commits[0] != shared.commits[0]
                || c.commits.len() < shared.commits.len()
                || shared.ended.is_some()
        });
        if longer {
            history.first_parents = Some(shared.clone());
        }
        Ok(())
    }

    /// Visit every commit of `walk` within its bound.
    pub fn ancestry_finish(&self, walk: &mut Ancestry) -> Result<(), StoreError> {
        while self.ancestry_step(walk)? {}
        Ok(())
    }

    /// The parents of `commit` as `history` remembers them, read (from the
    /// commit-graph when there is one) the first time.
    fn parents_through<'h>(
        &self,
        history: &'h mut History,
        commit: ObjectId,
    ) -> Result<&'h [ObjectId], StoreError> {
        if !history.parents.contains_key(&commit) {
            if history.graph.is_none() {
                history.graph = Some(self.repo.commit_graph_if_enabled().ok().flatten());
            }
            let from_graph = history.graph.as_ref().and_then(|g| {
                let g = g.as_ref()?;
                let c = g.commit_by_id(commit)?;
                c.iter_parents()
                    .map(|p| p.ok().map(|pos| g.id_at(pos).to_owned()))
                    .collect::<Option<Vec<ObjectId>>>()
            });
            let parents = match from_graph {
                Some(p) => p,
                None => self.commit_parents(commit)?,
            };
            history.parents.insert(commit, parents.into_boxed_slice());
        }
        Ok(&history.parents[&commit])
    }
}

#[cfg(test)]
mod tests {
    use crate::freshness::rules::Scratch;
    use crate::store::Store;

    /// Chains fetched to a depth (as `fetch --since` leaves them) are cut; a
    /// clone whose branches alone are shallow, or that is not shallow, is not;
    /// and only the first [`super::CUT_LOOKS`] commits `.git/shallow` lists
    /// are looked at.
    #[test]
    fn chains_are_cut_when_git_s_shallow_list_holds_a_chain_commit() {
        let s = Scratch::new();
        let chain = s.chain(3, &[0; 3]);
        for _ in 0..2 {
            s.commit(&[("src/lib.rs", &format!("{}\n", s.head()))], "more");
        }
        // a project's own file of that name does not make a commit a chain's
        s.commit(&[("receipt.json", "{}\n")], "a file named as receipts are");
        let whole = Store::open(s.dir.path()).unwrap();
        assert!(!whole.chains_cut(), "not shallow");
        let chain_ref = format!(
            "refs/receipts/{}:refs/receipts/{}",
            chain.writer, chain.writer
        );
        let cut = s.fetched_to_depth(2, &[&chain_ref]);
        assert!(Store::open(cut.path()).unwrap().chains_cut(), "chains cut");
        let branch = s.fetched_to_depth(1, &["main:refs/heads/main"]);
        let branch_store = Store::open(branch.path()).unwrap();
        assert!(branch_store.is_shallow());
        assert!(!branch_store.chains_cut(), "a shallow branch is no chain");
        assert!(
            branch_store
                .file_at(s.head(), "receipt.json")
                .unwrap()
                .is_some()
        );
        // behind as many listed commits as are looked at, none a chain
        // commit here (ids that sort first, of no object), it is not looked
        // at; one place sooner, it is
        let listed = std::fs::read_to_string(cut.path().join(".git/shallow")).unwrap();
        let chain_commits: Vec<&str> = listed.lines().collect();
        let with_others_first = |others: usize| {
            let mut lines: Vec<String> = (0..others).map(|i| format!("{i:040x}")).collect();
            lines.extend(chain_commits.iter().map(|c| c.to_string()));
            std::fs::write(cut.path().join(".git/shallow"), lines.join("\n") + "\n").unwrap();
            Store::open(cut.path()).unwrap().chains_cut()
        };
        assert!(with_others_first(super::CUT_LOOKS - 1));
        assert!(!with_others_first(super::CUT_LOOKS));
    }
}
