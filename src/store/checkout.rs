//! Temporary checkouts of other commits, for `git receipt run A..B`.
//!
//! The commits of a range are checked out in a detached linked work tree
//! (`git worktree add --detach`) under `<git dir>/receipt-worktrees/`, so the
//! check runs on exactly that commit's files while the user's work tree, index and
//! HEAD are never touched. The receipt store, the objects and the refs are the
//! repository's own (a linked work tree shares them), so a receipt written there is
//! an ordinary receipt of this repository.
//!
//! One checkout serves a whole run: [`Checkout::switch_to`] moves it to the next
//! commit (HEAD detached again, every tracked file as that commit has it) and
//! removes whatever is not that commit's (`git clean -ffdx`: what the previous
//! check wrote, ignored files included), so each check starts from the files a
//! new checkout would have. Making and removing a linked work tree costs more
//! than the check itself for a quick check (issue 27: `cargo bench --bench
//! run_range`), and moving one rewrites only the files that differ.
//!
//! One range run at a time holds `<git dir>/receipt-worktrees.lock` (an
//! `flock(2)`, which the kernel lets go of when the process ends; the file names
//! the process), so two runs never share or remove each other's checkouts. A
//! checkout is removed when it is dropped, whatever happened in it; one left
//! behind by a run that was killed (SIGKILL, a power cut) is removed by the next
//! run, which then gets the lock. The user's hooks do not run for these checkouts
//! (`core.hooksPath` is pointed at an empty place): a `post-checkout` hook is
//! for the user's own work tree. Nor does its sparse checkout: a check runs on
//! the whole commit. Each submodule this repository has cloned is checked out
//! in it at the recorded commit, from the local clone (see
//! `Store::check_out_submodules`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use gix::ObjectId;

use super::{Store, StoreError};

/// The directory, in the (common) git directory, that holds the checkouts.
pub const DIR: &str = "receipt-worktrees";
/// The lock file beside it.
pub const LOCK: &str = "receipt-worktrees.lock";

/// What can go wrong with a temporary checkout.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    /// Another range run holds the lock.
    #[error(
        "another `git receipt run` over a range is running in this repository (process {pid} holds {})",
        lock.display()
    )]
    Busy {
        /// The lock file.
        lock: PathBuf,
        /// The process that holds it, as the file names it (0: unknown).
        pid: u32,
    },
    /// A file or directory could not be made, read or removed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// `git worktree` failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The right to make checkouts in this repository: the lock, held while this
/// lives. Dropping it removes the lock and the (then empty) directory.
pub struct Checkouts<'s> {
    store: &'s Store,
    root: PathBuf,
    lock: PathBuf,
    /// Holds the `flock` for as long as this lives.
    _file: std::fs::File,
    made: u32,
    /// Checkouts a killed run left behind, removed when the lock was taken.
    pub removed_stale: Vec<PathBuf>,
}

/// One commit checked out; removed (with git's record of it) when dropped.
pub struct Checkout<'s> {
    store: &'s Store,
    path: PathBuf,
    /// The commit checked out.
    pub commit: ObjectId,
}

/// `git -C dir <args>` with the user's hooks and sparse checkout off.
fn git_at(dir: &Path, args: &[&str]) -> Result<std::process::Output, StoreError> {
    std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "core.sparseCheckout=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| StoreError::GitCommand {
            args: args.join(" "),
            stderr: format!("could not run git: {e}"),
        })
}

/// [`git_at`], which must succeed.
fn git_in(dir: &Path, args: &[&str]) -> Result<(), StoreError> {
    let out = git_at(dir, args)?;
    if !out.status.success() {
        return Err(StoreError::GitCommand {
            args: format!("{} (in {})", args.join(" "), dir.display()),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(())
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CheckoutError {
    let path = path.to_owned();
    move |source| CheckoutError::Io { what, path, source }
}

/// Take `lock` with `flock(2)`: the kernel lets go of it when its process ends,
/// however it ends, so a killed run never leaves a lock that holds. The file
/// names the holder's process, for the message a second run gets. The lock is
/// taken on the file the path names when it is taken: one that was removed in
/// the meantime (by a run that just ended) is let go and taken again.
fn take_lock(lock: &Path) -> Result<std::fs::File, CheckoutError> {
    use std::io::{Read as _, Seek as _, Write as _};
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::MetadataExt as _;
    loop {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(lock)
            .map_err(io("opening", lock))?;
        // SAFETY: flock(2) on a descriptor this function owns
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let why = std::io::Error::last_os_error();
            if why.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(io("locking", lock)(why));
            }
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            return Err(CheckoutError::Busy {
                lock: lock.to_owned(),
                pid: text.trim().parse().unwrap_or(0),
            });
        }
        let held = file.metadata().map_err(io("reading", lock))?;
        match std::fs::metadata(lock) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {}
            // removed (and maybe made again) since it was opened: not the lock
            _ => continue,
        }
        file.set_len(0).map_err(io("writing", lock))?;
        file.rewind().map_err(io("writing", lock))?;
        file.write_all(format!("{}\n", std::process::id()).as_bytes())
            .map_err(io("writing", lock))?;
        return Ok(file);
    }
}

impl Store {
    /// Take the lock for temporary checkouts, after removing the checkouts a
    /// killed run left behind. [`CheckoutError::Busy`] when a live run holds it.
    pub fn checkouts(&self) -> Result<Checkouts<'_>, CheckoutError> {
        let common = self.repo.common_dir().to_owned();
        let lock = common.join(LOCK);
        let root = common.join(DIR);
        let file = take_lock(&lock)?;
        let mut checkouts = Checkouts {
            store: self,
            root,
            lock,
            _file: file,
            made: 0,
            removed_stale: Vec::new(),
        };
        checkouts.remove_stale()?;
        Ok(checkouts)
    }

    /// `git worktree <args>`, without the user's hooks.
    fn worktree<A: AsRef<OsStr>>(&self, args: &[A]) -> Result<(), StoreError> {
        let words = || {
            let words: Vec<String> = args
                .iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned())
                .collect();
            format!("worktree {}", words.join(" "))
        };
        let out = self
            .git_command()
            .args(["-c", "core.hooksPath=/dev/null", "worktree"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| StoreError::GitCommand {
                args: words(),
                stderr: format!("could not run git: {e}"),
            })?;
        if !out.status.success() {
            return Err(StoreError::GitCommand {
                args: words(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(())
    }

    /// Remove the checkout at `path` and git's record of it, whatever state it
    /// is in: `git worktree remove --force --force` (also a locked or dirty
    /// one), else the directory itself and then `git worktree prune`.
    fn remove_checkout(&self, path: &Path) -> Result<(), CheckoutError> {
        let args = [OsStr::new("remove"), "--force".as_ref(), "--force".as_ref()];
        let removed = self.worktree(&[&args[..], &[path.as_os_str()]].concat());
        if removed.is_err() || path.exists() {
            if path.exists() {
                std::fs::remove_dir_all(path).map_err(io("removing", path))?;
            }
            self.worktree(&["prune"])?;
        }
        Ok(())
    }
}

impl<'s> Checkouts<'s> {
    /// Remove whatever is in the directory: checkouts of a run that was killed.
    fn remove_stale(&mut self) -> Result<(), CheckoutError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io("reading", &self.root)(e)),
        };
        for entry in entries {
            let path = entry.map_err(io("reading", &self.root))?.path();
            self.store.remove_checkout(&path)?;
            self.removed_stale.push(path);
        }
        if !self.removed_stale.is_empty() {
            // git's records of checkouts whose directory went some other way
            self.store.worktree(&["prune"])?;
        }
        Ok(())
    }

    /// Check out `commit` in a new detached work tree.
    pub fn checkout(&mut self, commit: ObjectId) -> Result<Checkout<'s>, CheckoutError> {
        std::fs::create_dir_all(&self.root).map_err(io("creating", &self.root))?;
        self.made += 1;
        let path = self.root.join(format!(
            "{}-{}-{}",
            commit.to_hex_with_len(7),
            std::process::id(),
            self.made
        ));
        // from here on, whatever `git worktree add` left is removed on drop
        let checkout = Checkout {
            store: self.store,
            path,
            commit,
        };
        let hex = commit.to_string();
        self.store.worktree(&[
            OsStr::new("add"),
            "--detach".as_ref(),
            "--no-checkout".as_ref(),
            "--quiet".as_ref(),
            checkout.path.as_os_str(),
            hex.as_ref(),
        ])?;
        // The whole commit, whatever sparse checkout the user's work tree has
        // (`worktree add` copies its patterns into the new one, which would then
        // lack files and be checked as dirty); `reset --hard` runs no hook.
        git_in(&checkout.path, &["reset", "--hard", "--quiet"])?;
        self.store.check_out_submodules(&checkout.path)?;
        Ok(checkout)
    }
}

impl Store {
    /// Check out, in the temporary checkout at `path`, each submodule of its
    /// commit that this repository has cloned (`<git dir>/modules/<name>`), at
    /// the commit the superproject records, from that local clone: no network,
    /// and a check sees what `git submodule update` gives in the user's own work
    /// tree. A submodule never cloned here stays empty, as it is in the user's
    /// work tree. Hooks do not run.
    fn check_out_submodules(&self, path: &Path) -> Result<(), StoreError> {
        if !path.join(".gitmodules").is_file() {
            return Ok(());
        }
        // exit 1: no submodule has a path
        let listed = git_at(
            path,
            &[
                "config",
                "--file",
                ".gitmodules",
                "--get-regexp",
                r"^submodule\..*\.path$",
            ],
        )?;
        let modules = self.repo.common_dir().join("modules");
        for line in String::from_utf8_lossy(&listed.stdout).lines() {
            // `submodule.<name>.path <path>`: a name may hold spaces
            let Some((key, sub_path)) = line.split_once(".path ") else {
                continue;
            };
            let Some(name) = key.strip_prefix("submodule.") else {
                continue;
            };
            let local = modules.join(name);
            if !local.is_dir() {
                continue;
            }
            let url = format!("submodule.{name}.url={}", local.display());
            git_in(
                path,
                &[
                    "-c",
                    &url,
                    "-c",
                    "protocol.file.allow=always",
                    "submodule",
                    "update",
                    "--init",
                    // a moved checkout: what the check before changed goes
                    "--force",
                    "--quiet",
                    "--",
                    sub_path,
                ],
            )?;
            // and what the check before wrote into it
            git_in(&path.join(sub_path), &["clean", "-ffdxq"])?;
        }
        Ok(())
    }
}

impl Drop for Checkouts<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.root);
        let _ = std::fs::remove_file(&self.lock);
    }
}

impl Checkout<'_> {
    /// The top of the checkout's work tree.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Move the checkout to `commit`, leaving it as a new checkout of `commit`
    /// would be: HEAD detached at it (never a branch a check switched to, which
    /// would move with it), every tracked file as the commit has it (local
    /// changes thrown away), and nothing else (`git clean -ffdx`: untracked and
    /// ignored files and directories, nested repositories). No hook runs.
    pub fn switch_to(&mut self, commit: ObjectId) -> Result<(), CheckoutError> {
        let hex = commit.to_string();
        git_in(
            &self.path,
            &["checkout", "--quiet", "--force", "--detach", &hex],
        )?;
        git_in(&self.path, &["clean", "-ffdxq"])?;
        self.store.check_out_submodules(&self.path)?;
        self.commit = commit;
        Ok(())
    }

    /// Remove the checkout now, saying whether that worked (dropping it does the
    /// same, silently).
    pub fn remove(mut self) -> Result<(), CheckoutError> {
        let path = std::mem::take(&mut self.path);
        self.store.remove_checkout(&path)
    }
}

impl Drop for Checkout<'_> {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = self.store.remove_checkout(&self.path);
        }
    }
}
