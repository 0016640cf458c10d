//! Leaving the repository as git does: commands that write objects start
//! `git gc --auto` in the background afterwards, the way git's own porcelain
//! does, so receipts never pile up loose objects without end.
//!
//! The hot path pays only for git's own cheap heuristic: count the loose objects
//! in one fan-out directory (`objects/17`) against `gc.auto`/256, and the packs
//! against `gc.autoPackLimit`. Only when either is over does it spawn
//! `git gc --auto --quiet`, detached (its own process group, no stdin or
//! stdout, never waited for), which decides again and does the work; never
//! while another writer holds a lock on a receipt ref (its write is in flight).

use std::process::Stdio;

use super::Store;

/// git's default `gc.auto`: loose objects before `gc --auto` packs them.
pub const DEFAULT_GC_AUTO: i64 = 6700;
/// git's default `gc.autoPackLimit`: packs before `gc --auto` merges them.
pub const DEFAULT_GC_AUTO_PACK_LIMIT: i64 = 50;

/// Whether a file name in a fan-out directory is a loose object (38 hex digits).
fn is_loose_object_name(name: &std::ffi::OsStr) -> bool {
    let name = name.as_encoded_bytes();
    name.len() == 38 && name.iter().all(u8::is_ascii_hexdigit)
}

impl Store {
    /// Whether `git gc --auto` would find work, by git's own estimate: more loose
    /// objects in `objects/17` than `gc.auto`/256 (rounded up), or more packs than
    /// `gc.autoPackLimit`. `gc.auto = 0` (or `maintenance.auto = false`) disables.
    pub fn gc_would_run(&self) -> bool {
        let config = self.repo.config_snapshot();
        if config.boolean("maintenance.auto") == Some(false) {
            return false;
        }
        let gc_auto = config.integer("gc.auto").unwrap_or(DEFAULT_GC_AUTO);
        if gc_auto <= 0 {
            return false;
        }
        let objects = self.repo.common_dir().join("objects");
        let threshold = (gc_auto as u64).div_ceil(256) as usize;
        let loose = std::fs::read_dir(objects.join("17"))
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| is_loose_object_name(&e.file_name()))
                    .take(threshold + 1)
                    .count()
            })
            .unwrap_or(0);
        if loose > threshold {
            return true;
        }
        let pack_limit = config
            .integer("gc.autoPackLimit")
            .unwrap_or(DEFAULT_GC_AUTO_PACK_LIMIT);
        if pack_limit <= 0 {
            return false;
        }
        let packs = std::fs::read_dir(objects.join("pack"))
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| {
                        let path = e.path();
                        path.extension().is_some_and(|x| x == "pack")
                            && !path.with_extension("keep").exists()
                    })
                    .count()
            })
            .unwrap_or(0);
        packs as i64 > pack_limit
    }

    /// After writing objects: start `git gc --auto --quiet` in the background when
    /// git's heuristic says it has work, and return at once. Best effort: a gc that
    /// cannot start costs nothing but the packing, which the next command retries.
    ///
    /// Never while another writer is in the middle of a ref update
    /// ([`Store::writer_holds_lock`]): the next command that writes starts it.
    pub fn gc_auto_detached(&self) {
        if !self.gc_would_run() || self.writer_holds_lock() {
            return;
        }
        use std::os::unix::process::CommandExt as _;
        let _ = self
            .git_command()
            .args(["gc", "--auto", "--quiet"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // its own process group: a Ctrl-C meant for us does not stop it midway
            .process_group(0)
            .spawn();
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
