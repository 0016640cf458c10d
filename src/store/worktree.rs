//! What was checked: the subject tree of the work tree and a check's inputs tree.
//!
//! The subject tree is the work tree as if everything were staged (`git add -A`),
//! computed in a throwaway index so the user's index is never touched. Stock git
//! does this, because it knows every `.gitignore`, attribute and filter rule. The
//! work tree is scanned once: `git status` says what differs (and in the clean
//! case, the common one and the one a hook sits on, that is all), and only the
//! paths it reports are staged into the throwaway index before `git write-tree`.
//! Trees written for a dirty work tree stay unreachable from any ref, so
//! uncommitted content is never pushed.
//!
//! `git status` can be told not to look: an index entry marked assume-unchanged or
//! skip-worktree (a sparse checkout marks every file it leaves off disk) is never
//! compared with the disk, an fsmonitor hook or the untracked cache may answer for
//! the disk, and a submodule's own uncommitted changes are not in any tree. So the
//! subject tree is computed with those caches off, from an index copy whose
//! entries are all unmarked (what git reports then is what is really on disk: an
//! edit under assume-unchanged, a file a sparse checkout left out as deleted), and
//! a submodule with uncommitted changes is refused by name, since no tree can say
//! what ran.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use gix::ObjectId;

use super::{Store, StoreError, git_err};

/// The checked tree and whether it differs from HEAD's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectTree {
    /// The tree id.
    pub tree: ObjectId,
    /// True when the work tree or index differ from HEAD.
    pub dirty: bool,
    /// Paths `git status` would not have reported, whose content on disk (or
    /// absence) the tree records: the caller should say so.
    pub unmarked: Vec<Unmarked>,
}

/// Why `git status` would have passed over a path the subject tree records as it
/// is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marked {
    /// `git update-index --assume-unchanged`.
    AssumeUnchanged,
    /// `git update-index --skip-worktree`, or left off disk by a sparse checkout.
    SkipWorktree,
}

/// A path whose index entry told git not to look at the disk, and whose content
/// there differs from the index (or is missing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmarked {
    /// The path, from the top of the work tree (lossy UTF-8: for messages).
    pub path: String,
    /// How it was marked.
    pub marked: Marked,
    /// Not on disk at all (a sparse checkout's usual case): the tree lacks it.
    pub absent: bool,
}

/// Settings that let git take a cache's word for the disk (`status` for what
/// changed, `add` for what to stage): off for every git this module runs, since
/// the subject tree must be what is really there.
const NO_CACHES: [&str; 4] = [
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
];

/// Index entries that need more than `git status`: marked ones, gitlinks, and
/// whether the index is sparse (it then holds whole directories as one entry).
#[derive(Default)]
struct IndexMarks {
    marked: Vec<(Vec<u8>, Marked)>,
    gitlinks: Vec<Vec<u8>>,
    sparse: bool,
}

/// Above this many reported paths, staging them one pathspec each costs more
/// than one more scan (git matches every path against every pathspec), so the
/// whole tree is staged with `git add -A` instead.
const MAX_PATHSPECS: usize = 2000;

fn git(
    workdir: &Path,
    args: &[&str],
    index: Option<&Path>,
    input: Option<&[u8]>,
) -> Result<Vec<u8>, StoreError> {
    let failed = |stderr: String| StoreError::GitCommand {
        args: args.join(" "),
        stderr,
    };
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(workdir).args(NO_CACHES).args(args);
    if let Some(index) = index {
        cmd.env("GIT_INDEX_FILE", index);
    }
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| failed(format!("could not run git: {e}")))?;
    if let Some(input) = input {
        let mut stdin = child.stdin.take().expect("stdin is piped");
        // git reads all of its pathspecs before it writes anything, so writing
        // them all first cannot dead-lock on a full stdout pipe. A git that stops
        // reading has failed: its own message (below) says why.
        match stdin.write_all(input) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                return Err(failed(format!("could not write to git: {e}")));
            }
            _ => drop(stdin),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| failed(format!("could not run git: {e}")))?;
    if !out.status.success() {
        return Err(failed(
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    Ok(out.stdout)
}

/// The paths `git status --porcelain=v1 -z` reports whose work tree content
/// differs from the index, as NUL-terminated literal pathspecs: what `git add -A`
/// would stage. An entry whose work tree side is clean (`Y` is a space: a change
/// that is already staged) needs nothing. A rename or copy found in the work tree
/// (`Y` is `R` or `C`, for intent-to-add entries) carries its source path as a
/// second field, which is staged too (the source is still in the index); a rename
/// already staged (`X` is `R`) carries one too, but its source is no longer in the
/// index and is skipped, since a pathspec that matches nothing is an error.
fn paths_to_stage(status: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut out = Vec::new();
    let mut fields = status.split(|b| *b == 0);
    while let Some(field) = fields.next() {
        if field.is_empty() {
            continue; // the NUL that ends the last entry
        }
        if field.len() < 4 || field[2] != b' ' {
            return Err(format!(
                "unexpected `git status` entry {:?}",
                String::from_utf8_lossy(field)
            ));
        }
        let (x, y, path) = (field[0], field[1], &field[3..]);
        let source = if matches!(x, b'R' | b'C') || matches!(y, b'R' | b'C') {
            Some(
                fields
                    .next()
                    .filter(|source| !source.is_empty())
                    .ok_or("a rename in `git status` without its source")?,
            )
        } else {
            None
        };
        if y == b' ' {
            continue;
        }
        out.push(path);
        if matches!(y, b'R' | b'C')
            && let Some(source) = source
        {
            out.push(source);
        }
    }
    Ok(out)
}

/// `paths` as git's `--pathspec-file-nul` / `update-index -z --stdin` read them.
fn nul_terminated<'a>(paths: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for p in paths {
        out.extend_from_slice(p);
        out.push(0);
    }
    out
}

/// The first submodule among `gitlinks` whose work tree holds changes no commit has
/// (`git status --porcelain=v2` marks them `S.M.` for modified files, `S..U` for
/// untracked ones), with what it holds.
fn dirty_submodule(
    workdir: &Path,
    gitlinks: &[Vec<u8>],
) -> Result<Option<(String, &'static str)>, StoreError> {
    let mut args: Vec<String> = Vec::new();
    args.extend(
        [
            "--no-optional-locks",
            "--literal-pathspecs",
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=none",
        ]
        .map(String::from),
    );
    // `git status` takes no pathspec file: name the submodules when they are few
    // enough for a command line, else ask about the whole tree
    if gitlinks.len() <= MAX_PATHSPECS {
        args.push("--".into());
        args.extend(
            gitlinks
                .iter()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        );
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = git(workdir, &args, None, None)?;
    for entry in out.split(|b| *b == 0) {
        // `1 XY SUB mH mI mW hH hI path`: SUB is `N...` for a file, `S<c><m><u>`
        let fields: Vec<&[u8]> = entry.splitn(9, |b| *b == b' ').collect();
        if fields.len() != 9 || fields[0] != b"1" || fields[2].len() != 4 {
            continue;
        }
        let sub = fields[2];
        let holds = match (sub[0], sub[2], sub[3]) {
            (b'S', b'M', b'U') => "modified and untracked files",
            (b'S', b'M', _) => "modified files",
            (b'S', _, b'U') => "untracked files",
            _ => continue,
        };
        return Ok(Some((
            String::from_utf8_lossy(fields[8]).into_owned(),
            holds,
        )));
    }
    Ok(None)
}

impl Store {
    /// The entries of the index `git status` cannot be trusted to report.
    fn index_marks(&self) -> Result<IndexMarks, StoreError> {
        let index = self
            .repo
            .index_or_empty()
            .map_err(git_err("reading the index"))?;
        let mut marks = IndexMarks {
            sparse: index.is_sparse(),
            ..Default::default()
        };
        use gix::index::entry::{Flags, Mode};
        for entry in index.entries() {
            let path = entry.path(&index);
            if entry.mode == Mode::COMMIT {
                marks.gitlinks.push(path.to_vec());
            }
            if entry.flags.contains(Flags::SKIP_WORKTREE) {
                marks.marked.push((path.to_vec(), Marked::SkipWorktree));
            } else if entry.flags.contains(Flags::ASSUME_VALID) {
                marks.marked.push((path.to_vec(), Marked::AssumeUnchanged));
            }
        }
        Ok(marks)
    }

    /// The tree of the work tree as it is now, as if fully staged: what is on disk,
    /// whatever the index's marks or git's caches say (see the module docs). A
    /// submodule with uncommitted changes is refused
    /// ([`StoreError::DirtySubmodule`]).
    pub fn subject_tree(&self, head_tree: ObjectId) -> Result<SubjectTree, StoreError> {
        let workdir = self.workdir()?.to_owned();
        let marks = self.index_marks()?;
        if marks.sparse {
            return Err(StoreError::SparseIndex);
        }
        if !marks.gitlinks.is_empty()
            && let Some((path, holds)) = dirty_submodule(&workdir, &marks.gitlinks)?
        {
            return Err(StoreError::DirtySubmodule { path, holds });
        }
        // A private copy of the index, so staging (and unmarking) leaves the
        // user's alone. Made before `git status` only when entries are marked.
        let copy = || -> Result<tempfile::NamedTempFile, StoreError> {
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
            Ok(tmp)
        };
        let unmarked_index = if marks.marked.is_empty() {
            None
        } else {
            let tmp = copy()?;
            // one mark per run: `update-index` applies only the last of
            // --no-assume-unchanged and --no-skip-worktree to every path
            for (mark, flag) in [
                (Marked::AssumeUnchanged, "--no-assume-unchanged"),
                (Marked::SkipWorktree, "--no-skip-worktree"),
            ] {
                let spec = nul_terminated(
                    marks
                        .marked
                        .iter()
                        .filter(|(_, m)| *m == mark)
                        .map(|(p, _)| p.as_slice()),
                );
                if !spec.is_empty() {
                    git(
                        &workdir,
                        &["update-index", flag, "-z", "--stdin"],
                        Some(tmp.path()),
                        Some(&spec),
                    )?;
                }
            }
            Some(tmp)
        };
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
            unmarked_index.as_ref().map(|t| t.path()),
            None,
        )?;
        if status.is_empty() {
            return Ok(SubjectTree {
                tree: head_tree,
                dirty: false,
                unmarked: Vec::new(),
            });
        }
        let paths = paths_to_stage(&status).map_err(|stderr| StoreError::GitCommand {
            args: "status --porcelain=v1 -z".into(),
            stderr,
        })?;
        let reported: std::collections::HashSet<&[u8]> = paths.iter().copied().collect();
        let unmarked = marks
            .marked
            .iter()
            .filter(|(p, _)| reported.contains(p.as_slice()))
            .map(|(p, marked)| Unmarked {
                path: String::from_utf8_lossy(p).into_owned(),
                marked: *marked,
                absent: std::fs::symlink_metadata(
                    workdir.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(p)),
                )
                .is_err(),
            })
            .collect();
        let tmp = match unmarked_index {
            Some(tmp) => tmp,
            None => copy()?,
        };
        if paths.len() > MAX_PATHSPECS {
            git(
                &workdir,
                &["-c", "core.sparseCheckout=false", "add", "-A", "--", "."],
                Some(tmp.path()),
                None,
            )?;
        } else if !paths.is_empty() {
            let spec = nul_terminated(paths.iter().copied());
            git(
                &workdir,
                &[
                    // a path a sparse checkout left out is staged as it is on
                    // disk (absent): its entry is unmarked in this index, and
                    // `add` would otherwise refuse paths outside the checkout
                    "-c",
                    "core.sparseCheckout=false",
                    "--literal-pathspecs",
                    "add",
                    "-A",
                    "--pathspec-from-file=-",
                    "--pathspec-file-nul",
                ],
                Some(tmp.path()),
                Some(&spec),
            )?;
        }
        let out = git(&workdir, &["write-tree"], Some(tmp.path()), None)?;
        let hex = String::from_utf8_lossy(&out).trim().to_owned();
        let tree =
            ObjectId::from_hex(hex.as_bytes()).map_err(git_err("parsing write-tree output"))?;
        Ok(SubjectTree {
            tree,
            dirty: tree != head_tree,
            unmarked,
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
        let empty = ObjectId::empty_tree(self.repo.object_hash());
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
            // through the store's writer (see `concurrent_gc`, `durable`); the
            // empty tree too, which gix never writes
            let id = editor.detach().write(|tree| {
                let (kind, bytes) = super::concurrent_gc::encode(tree);
                self.put_object("an inputs tree", kind, bytes)
            })?;
            if id == empty {
                let (kind, bytes) = super::concurrent_gc::encode(&gix::objs::Tree::empty());
                self.put_object("the empty tree", kind, bytes)?;
            }
            Ok(id)
        } else {
            let mut detached = editor.detach();
            detached
                .write(|t| {
                    let mut buf = Vec::new();
                    gix::objs::WriteTo::write_to(t, &mut buf)?;
                    gix::objs::compute_hash(self.repo.object_hash(), gix::objs::Kind::Tree, &buf)
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

#[cfg(test)]
mod tests {
    use super::paths_to_stage;

    fn staged(status: &[u8]) -> Vec<String> {
        paths_to_stage(status)
            .unwrap()
            .into_iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }

    #[test]
    fn changes_already_staged_need_nothing() {
        assert!(staged(b"M  a\0D  b\0A  c\0R  new\0old\0").is_empty());
    }

    #[test]
    fn work_tree_changes_are_staged_by_their_literal_path() {
        assert_eq!(
            staged(b" M a b\0?? *\0 D gone\0?? line\nbreak\0MM twice\0"),
            ["a b", "*", "gone", "line\nbreak", "twice"]
        );
    }

    #[test]
    fn a_staged_rename_changed_again_stages_only_its_new_path() {
        // the source is no longer in the index: naming it would match nothing
        assert_eq!(staged(b"RM new\0old\0 M next\0"), ["new", "next"]);
    }

    #[test]
    fn a_work_tree_rename_stages_both_paths() {
        assert_eq!(staged(b" R new\0old\0"), ["new", "old"]);
    }

    #[test]
    fn a_malformed_entry_is_an_error() {
        assert!(paths_to_stage(b"?\0").is_err());
        assert!(paths_to_stage(b" R new\0").is_err());
    }
}
