//! What was checked: the subject tree of the work tree and a check's inputs tree.
//!
//! The subject tree is the work tree as if everything were staged (`git add -A`),
//! computed in a throwaway index so the user's index is never touched. Stock git
//! does this, because it knows every `.gitignore`, attribute and filter rule; the
//! clean case (the common one, and the one a hook sits on) is a single
//! `git status` call. Trees written for a dirty work tree stay unreachable from any
//! ref, so uncommitted content is never pushed.

use std::path::Path;
use std::process::Command;

use gix::ObjectId;

use super::{Store, StoreError, git_err};

/// The checked tree and whether it differs from HEAD's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubjectTree {
    /// The tree id.
    pub tree: ObjectId,
    /// True when the work tree or index differ from HEAD.
    pub dirty: bool,
}

fn git(workdir: &Path, args: &[&str], index: Option<&Path>) -> Result<Vec<u8>, StoreError> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(workdir).args(args);
    if let Some(index) = index {
        cmd.env("GIT_INDEX_FILE", index);
    }
    let out = cmd.output().map_err(|e| StoreError::GitCommand {
        args: args.join(" "),
        stderr: format!("could not run git: {e}"),
    })?;
    if !out.status.success() {
        return Err(StoreError::GitCommand {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(out.stdout)
}

impl Store {
    /// The tree of the work tree as it is now, as if fully staged.
    pub fn subject_tree(&self, head_tree: ObjectId) -> Result<SubjectTree, StoreError> {
        let workdir = self.workdir()?.to_owned();
        let status = git(
            &workdir,
            &[
                "--no-optional-locks",
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--ignore-submodules=dirty",
            ],
            None,
        )?;
        if status.is_empty() {
            return Ok(SubjectTree {
                tree: head_tree,
                dirty: false,
            });
        }
        // A private copy of the index, so staging everything leaves the user's alone.
        let tmp = tempfile::Builder::new()
            .prefix("receipt-index-")
            .tempfile_in(self.git_dir())
            .map_err(git_err("creating a temporary index"))?;
        let real_index = self.git_dir().join("index");
        if real_index.exists() {
            std::fs::copy(&real_index, tmp.path()).map_err(git_err("copying the index"))?;
        } else {
            // no index yet: let git create one from scratch
            std::fs::remove_file(tmp.path()).ok();
        }
        git(&workdir, &["add", "-A", "--", "."], Some(tmp.path()))?;
        let out = git(&workdir, &["write-tree"], Some(tmp.path()))?;
        let hex = String::from_utf8_lossy(&out).trim().to_owned();
        let tree =
            ObjectId::from_hex(hex.as_bytes()).map_err(git_err("parsing write-tree output"))?;
        Ok(SubjectTree {
            tree,
            dirty: tree != head_tree,
        })
    }

    /// The inputs tree of a check: only `paths` of `tree` (all of it for no paths).
    /// With `write`, the tree objects are stored; without, only their id is computed.
    pub fn inputs_tree(
        &self,
        tree: ObjectId,
        paths: &[String],
        write: bool,
    ) -> Result<ObjectId, StoreError> {
        if paths.is_empty() {
            return Ok(tree);
        }
        let root = self
            .repo
            .find_tree(tree)
            .map_err(git_err(format!("reading tree {tree}")))?;
        let mut picked = Vec::new();
        for p in paths {
            if let Some(entry) = root
                .lookup_entry_by_path(p)
                .map_err(git_err(format!("looking up {p}")))?
            {
                picked.push((p.clone(), entry.mode().kind(), entry.oid().to_owned()));
            }
        }
        let empty = ObjectId::empty_tree(gix::hash::Kind::Sha1);
        let mut editor = self
            .repo
            .edit_tree(empty)
            .map_err(git_err("building an inputs tree"))?;
        for (path, kind, oid) in &picked {
            editor
                .upsert(path.as_str(), *kind, *oid)
                .map_err(git_err("building an inputs tree"))?;
        }
        if write {
            let id = editor.write().map_err(git_err("writing an inputs tree"))?;
            if id.detach() == empty {
                // make sure the empty tree exists as an object too
                self.repo
                    .write_object(gix::objs::Tree::empty())
                    .map_err(git_err("writing the empty tree"))?;
            }
            Ok(id.detach())
        } else {
            let mut detached = editor.detach();
            detached
                .write(|t| {
                    let mut buf = Vec::new();
                    gix::objs::WriteTo::write_to(t, &mut buf)?;
                    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Tree, &buf)
                        .map_err(|e| std::io::Error::other(e.to_string()))
                })
                .map_err(git_err("hashing an inputs tree"))
        }
    }

    /// The declared `paths` that name nothing in `tree`. Such a path adds nothing to
    /// the inputs tree, so a check declared only with paths like that would have
    /// the same (empty) inputs at every revision: fresh forever.
    pub fn paths_matching_nothing(
        &self,
        tree: ObjectId,
        paths: &[String],
    ) -> Result<Vec<String>, StoreError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let root = self
            .repo
            .find_tree(tree)
            .map_err(git_err(format!("reading tree {tree}")))?;
        let mut missing = Vec::new();
        for p in paths {
            if root
                .lookup_entry_by_path(p)
                .map_err(git_err(format!("looking up {p}")))?
                .is_none()
            {
                missing.push(p.clone());
            }
        }
        Ok(missing)
    }

    /// The paths under `paths` (the whole tree when empty) whose content differs
    /// between two trees, as `/`-separated paths of files (or of whole subtrees that
    /// appeared or vanished), sorted.
    pub fn changed_paths(
        &self,
        old: ObjectId,
        new: ObjectId,
        paths: &[String],
    ) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        if paths.is_empty() {
            self.diff_trees(Some(old), Some(new), "", &mut out)?;
        } else {
            for p in paths {
                let a = self.entry_at(old, p)?;
                let b = self.entry_at(new, p)?;
                if a == b {
                    continue;
                }
                match (a, b) {
                    (Some((ta, true)), Some((tb, true))) => {
                        self.diff_trees(Some(ta), Some(tb), &format!("{p}/"), &mut out)?
                    }
                    _ => out.push(p.clone()),
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// The id at `path` in `tree` and whether it is a tree.
    fn entry_at(&self, tree: ObjectId, path: &str) -> Result<Option<(ObjectId, bool)>, StoreError> {
        let t = self
            .repo
            .find_tree(tree)
            .map_err(git_err(format!("reading tree {tree}")))?;
        Ok(t.lookup_entry_by_path(path)
            .map_err(git_err(format!("looking up {path}")))?
            .map(|e| (e.oid().to_owned(), e.mode().is_tree())))
    }

    fn diff_trees(
        &self,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
        prefix: &str,
        out: &mut Vec<String>,
    ) -> Result<(), StoreError> {
        use std::collections::BTreeMap;
        let entries =
            |t: Option<ObjectId>| -> Result<BTreeMap<String, (ObjectId, bool)>, StoreError> {
                let mut m = BTreeMap::new();
                if let Some(t) = t {
                    let tree = self.repo.find_tree(t).map_err(git_err("reading a tree"))?;
                    for e in tree.decode().map_err(git_err("decoding a tree"))?.entries {
                        m.insert(e.filename.to_string(), (e.oid.to_owned(), e.mode.is_tree()));
                    }
                }
                Ok(m)
            };
        let (a, b) = (entries(old)?, entries(new)?);
        let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for name in names {
            let (x, y) = (a.get(name), b.get(name));
            if x == y {
                continue;
            }
            let path = format!("{prefix}{name}");
            match (x, y) {
                (Some((tx, true)), Some((ty, true))) => {
                    self.diff_trees(Some(*tx), Some(*ty), &format!("{path}/"), out)?
                }
                (None, Some((ty, true))) => {
                    self.diff_trees(None, Some(*ty), &format!("{path}/"), out)?
                }
                (Some((tx, true)), None) => {
                    self.diff_trees(Some(*tx), None, &format!("{path}/"), out)?
                }
                _ => out.push(path),
            }
        }
        Ok(())
    }
}
