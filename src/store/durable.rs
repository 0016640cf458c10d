//! Hardening what the store writes against a power loss, as git does: by
//! `core.fsync`, `core.fsyncMethod` and the deprecated `core.fsyncObjectFiles`
//! (git-config(1)), with git's meaning and git's default.
//!
//! Of git's components two name what git-receipt writes into the repository
//! itself: `loose-object` (every receipt, chain commit, tree, note and log
//! blob is written loose) and `reference` (the chain, notes and log refs and
//! their reflogs). Packs come only from the `git fetch` and `git gc` that
//! git-receipt starts, and git hardens those by the same settings. git's default
//! (`committed,-loose-object`) hardens neither, so by default, as with
//! `git commit`, the newest receipt may be lost in an unclean shutdown; set
//! `git config core.fsync committed,reference` (or `all`) to keep it. A ref is
//! written only after every object it names is hardened, so a crash leaves a
//! chain at an earlier entry, never naming an object that was not on disk.
//!
//! git-receipt's own files (the receipt index, a `verify --checkpoint`, a
//! signing key it creates) are hardened whatever the settings: they are one
//! small file per command.

use std::fs::File;
use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::{Store, StoreError};
use crate::notice::Notice;

impl Store {
    /// What this repository's git config asks to harden, read once.
    pub(crate) fn durability(&self) -> Durability {
        *self.durability.get_or_init(|| {
            let config = self.repo.config_snapshot();
            let fsync = config.string("core.fsync").map(|v| v.to_string());
            let method = config.string("core.fsyncMethod").map(|v| v.to_string());
            let object_files = config.boolean("core.fsyncObjectFiles");
            let (d, ignored) =
                Durability::from_settings(fsync.as_deref(), method.as_deref(), object_files);
            for what in ignored {
                self.notice(Notice::warning(
                    "fsync-setting-unknown",
                    format!("ignoring the unknown {what}, as git does (see `git help config`)"),
                ));
            }
            d
        })
    }

    // mutants: the flush functions of this file (`harden_object`, `harden_ref`,
    // `Durability::reference`, `Durability::harden`, `writeout`, and
    // `Durability::pack_file`, whose choice of what to flush follows the
    // `packs` and `pack_metadata` bits the unit tests pin) do system calls
    // a unit test cannot observe; `--cargo-arg=--lib` leaves them alive, and the
    // LD_PRELOAD fault tests kill them: `cargo mutants --file src/store/durable.rs
    // --re "harden_object|harden_ref|Durability::reference|Durability::harden|writeout"
    // -- --test it -- faults::core_fsync faults::each_failed_fsync` (10 of 11
    // caught; the 11th is the non-Linux `writeout`).
    /// Harden loose object `id`, just written to `path`, when `core.fsync` asks
    /// for loose objects. Before any ref names it: an error here means nothing
    /// was stored.
    pub(crate) fn harden_object(
        &self,
        id: ObjectId,
        path: &Path,
        what: &'static str,
    ) -> Result<(), StoreError> {
        let d = self.durability();
        if !d.loose_objects {
            return Ok(());
        }
        d.loose_object(path).map_err(|e| StoreError::Harden {
            what: format!("{what} {id}"),
            path: e.path,
            cause: e.cause.to_string(),
        })
    }

    /// Harden `refname`, just moved, when `core.fsync` asks for references. The
    /// ref has moved already, so a failure here is a warning that says so,
    /// not a failed write.
    pub(crate) fn harden_ref(&self, refname: &str) {
        let d = self.durability();
        if !d.refs {
            return;
        }
        if let Err(e) = d.reference(self.repo.common_dir(), refname) {
            self.notice(Notice::warning(
                "ref-not-hardened",
                format!(
                    "{refname} was updated, but flushing {} to disk failed: {}; what it records is stored, but a power loss before the system writes it out may lose it (core.fsync asks for references to be flushed); run `sync` once the disk is healthy",
                    e.path.display(),
                    e.cause
                ),
            ));
        }
    }
}

/// The strategy of `core.fsyncMethod`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// `fsync`: the file's data and metadata reach the disk (git's default).
    Fsync,
    /// `writeout-only`: the kernel is asked to start writing the file back,
    /// without waiting for the disk's cache (on Linux `sync_file_range`;
    /// elsewhere a full fsync, which is stronger).
    WriteoutOnly,
    /// `batch`: git writes loose objects back as with `writeout-only` and
    /// flushes them with one fsync at the end. git-receipt writes a handful of
    /// objects per command, so it hardens each as `fsync` does: as safe, and
    /// no slower to notice.
    Batch,
}

/// What to harden, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Durability {
    /// Harden every loose object written.
    pub loose_objects: bool,
    /// Harden every ref (and its reflog) moved.
    pub refs: bool,
    /// Harden every pack file written (`pack`; git's default).
    pub packs: bool,
    /// Harden every pack index and reverse index written (`pack-metadata`;
    /// git's default).
    pub pack_metadata: bool,
    /// How.
    pub method: Method,
}

/// One bit per component of `core.fsync`, in git's words.
// mutants: `|` for `^` in the aggregates below (and in `DEFAULT`) is
// equivalent: the six component bits are distinct powers of two, so no two
// operands share a bit and `a | b == a ^ b` (the unit test
// `each_component_is_one_bit_and_each_aggregate_is_its_members` pins the bits).
const COMPONENTS: &[(&str, u16)] = &[
    ("loose-object", LOOSE),
    ("pack", PACK),
    ("pack-metadata", PACK_METADATA),
    ("commit-graph", COMMIT_GRAPH),
    ("index", INDEX),
    ("reference", REFERENCE),
    ("objects", LOOSE | PACK),
    ("derived-metadata", PACK_METADATA | COMMIT_GRAPH),
    ("committed", LOOSE | PACK),
    ("added", LOOSE | PACK | INDEX),
    (
        "all",
        LOOSE | PACK | PACK_METADATA | COMMIT_GRAPH | INDEX | REFERENCE,
    ),
];
const LOOSE: u16 = 1;
const PACK: u16 = 1 << 1;
const PACK_METADATA: u16 = 1 << 2;
const COMMIT_GRAPH: u16 = 1 << 3;
const INDEX: u16 = 1 << 4;
const REFERENCE: u16 = 1 << 5;
/// git's platform default: `committed,-loose-object` and the derived metadata.
const DEFAULT: u16 = PACK | PACK_METADATA | COMMIT_GRAPH;

/// The components a `core.fsync` value names, as git reads it: starting from
/// the default, `-x` removes `x`, `none` clears the set, the empty value is the
/// default. Unknown names are ignored, as git does (with a warning), and
/// returned for the caller to say so.
pub(crate) fn components(value: &str) -> (u16, Vec<String>) {
    let mut set = DEFAULT;
    let mut unknown = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if item == "none" {
            set = 0;
            continue;
        }
        let (remove, name) = match item.strip_prefix('-') {
            Some(n) => (true, n),
            None => (false, item),
        };
        match COMPONENTS.iter().find(|(n, _)| *n == name) {
            Some(&(_, bits)) if remove => set &= !bits,
            Some(&(_, bits)) => set |= bits,
            None => unknown.push(item.to_owned()),
        }
    }
    (set, unknown)
}

impl Durability {
    /// From the three settings, as read from git's config: the last value of
    /// `core.fsync` (`None`: not set), of `core.fsyncMethod`, and of
    /// `core.fsyncObjectFiles`. The second half names settings git would warn of
    /// and ignore.
    pub(crate) fn from_settings(
        fsync: Option<&str>,
        method: Option<&str>,
        object_files: Option<bool>,
    ) -> (Durability, Vec<String>) {
        let (set, mut ignored) = components(fsync.unwrap_or(""));
        let ignored_components = std::mem::take(&mut ignored)
            .into_iter()
            .map(|c| format!("core.fsync component '{c}'"));
        ignored.extend(ignored_components);
        let method = match method.map(str::trim) {
            None | Some("fsync") => Method::Fsync,
            Some("writeout-only") => Method::WriteoutOnly,
            Some("batch") => Method::Batch,
            Some(other) => {
                ignored.push(format!("core.fsyncMethod value '{other}'"));
                Method::Fsync
            }
        };
        (
            Durability {
                // the deprecated switch turns loose objects on whatever core.fsync says
                loose_objects: set & LOOSE != 0 || object_files == Some(true),
                refs: set & REFERENCE != 0,
                packs: set & PACK != 0,
                pack_metadata: set & PACK_METADATA != 0,
                method,
            },
            ignored,
        )
    }

    /// Harden the loose object file at `path` and its fan-out directory, where
    /// its name lives.
    pub(crate) fn loose_object(&self, path: &Path) -> Result<(), HardenError> {
        self.harden(path)
    }

    /// Harden the files of a ref just moved: its loose file (when it has one),
    /// the directory holding it, and its reflog.
    pub(crate) fn reference(&self, common_dir: &Path, refname: &str) -> Result<(), HardenError> {
        for file in [
            common_dir.join(refname),
            common_dir.join("logs").join(refname),
        ] {
            // packed (so no loose file), or no reflog: nothing of it to harden here
            if !file.is_file() {
                continue;
            }
            self.harden(&file)?;
        }
        Ok(())
    }

    /// Harden `file`, a pack file (`metadata`: an index of one) about to be
    /// renamed into place, when `core.fsync` asks for it, as git hardens
    /// those it writes: the file, not its directory.
    pub(crate) fn pack_file(&self, file: &Path, metadata: bool) -> Result<(), HardenError> {
        if (metadata && self.pack_metadata) || (!metadata && self.packs) {
            sync_path(file, self.method)
        } else {
            Ok(())
        }
    }

    /// `file`, and (unless only written back) the directory naming it.
    fn harden(&self, file: &Path) -> Result<(), HardenError> {
        if self.method == Method::WriteoutOnly {
            return sync_path(file, Method::WriteoutOnly);
        }
        sync_path(file, Method::Fsync)?;
        match file.parent() {
            Some(dir) => sync_path(dir, Method::Fsync),
            None => Ok(()),
        }
    }
}

/// A file that could not be hardened, and why.
#[derive(Debug)]
pub(crate) struct HardenError {
    /// The file or directory.
    pub path: PathBuf,
    /// What the system said.
    pub cause: std::io::Error,
}

fn sync_path(path: &Path, how: Method) -> Result<(), HardenError> {
    let at = |cause| HardenError {
        path: path.to_owned(),
        cause,
    };
    let file = File::open(path).map_err(at)?;
    match how {
        Method::WriteoutOnly => writeout(&file).map_err(at),
        Method::Fsync | Method::Batch => file.sync_all().map_err(at),
    }
}

#[cfg(target_os = "linux")]
fn writeout(file: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: a plain system call on a descriptor this function borrows for
    // its whole duration; it reads no memory of ours.
    let r = unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

// mutants: replacing this body is not built on Linux, where the mutation runs,
// so no test here can see it; the Linux `writeout` above is killed by
// `faults::core_fsync_decides_what_run_flushes_as_git_does` (writeout-only
// makes no fsync) and `faults::each_failed_fsync_of_run_*`.
#[cfg(not(target_os = "linux"))]
fn writeout(file: &File) -> std::io::Result<()> {
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// git's components are six distinct bits, and each aggregate is the union
    /// of exactly the components git documents for it (`git help config`,
    /// core.fsync), as is the default (`committed,-loose-object` and the
    /// derived metadata).
    #[test]
    fn each_component_is_one_bit_and_each_aggregate_is_its_members() {
        let bit = |name: &str| COMPONENTS.iter().find(|(n, _)| *n == name).unwrap().1;
        let single = [
            "loose-object",
            "pack",
            "pack-metadata",
            "commit-graph",
            "index",
            "reference",
        ];
        let mut seen = 0u16;
        for name in single {
            let b = bit(name);
            assert_eq!(b.count_ones(), 1, "{name} is one bit");
            assert_eq!(seen & b, 0, "{name} shares no bit");
            seen |= b;
        }
        let union = |names: &[&str]| names.iter().fold(0u16, |acc, n| acc | bit(n));
        for (aggregate, members) in [
            ("objects", &["loose-object", "pack"][..]),
            ("derived-metadata", &["pack-metadata", "commit-graph"][..]),
            ("committed", &["loose-object", "pack"][..]),
            ("added", &["loose-object", "pack", "index"][..]),
            ("all", &single[..]),
        ] {
            assert_eq!(bit(aggregate), union(members), "{aggregate}");
            assert_eq!(
                bit(aggregate).count_ones() as usize,
                members.len(),
                "{aggregate}"
            );
        }
        assert_eq!(DEFAULT, union(&["pack", "pack-metadata", "commit-graph"]));
        assert_eq!(DEFAULT.count_ones(), 3);
    }

    fn d(fsync: Option<&str>, method: Option<&str>, files: Option<bool>) -> Durability {
        Durability::from_settings(fsync, method, files).0
    }

    #[test]
    fn git_s_default_hardens_neither_loose_objects_nor_refs() {
        let none = d(None, None, None);
        assert!(!none.loose_objects && !none.refs);
        assert_eq!(none.method, Method::Fsync);
        assert_eq!(d(Some(""), None, None), none);
        assert_eq!(d(Some("committed,-loose-object"), None, None), none);
    }

    #[test]
    fn each_aggregate_means_what_git_config_1_says() {
        let cases = [
            ("committed", true, false),
            ("objects", true, false),
            ("added", true, false),
            ("loose-object", true, false),
            ("reference", false, true),
            ("committed,reference", true, true),
            ("all", true, true),
            ("all,-reference", true, false),
            ("all,-loose-object", false, true),
            ("none", false, false),
            ("all,none", false, false),
            ("none,reference", false, true),
            (" reference , loose-object ", true, true),
            ("pack,index,commit-graph", false, false),
        ];
        for (value, loose, refs) in cases {
            let got = d(Some(value), None, None);
            assert_eq!(
                (got.loose_objects, got.refs),
                (loose, refs),
                "core.fsync={value}"
            );
        }
        // packs and their indexes: by default, and as the aggregates name them
        for (value, packs, metadata) in [
            ("", true, true),
            ("committed,-loose-object", true, true),
            ("none", false, false),
            ("none,objects", true, false),
            ("none,derived-metadata", false, true),
            ("all,-pack", false, true),
            ("-pack-metadata", true, false),
        ] {
            let got = d(Some(value), None, None);
            assert_eq!(
                (got.packs, got.pack_metadata),
                (packs, metadata),
                "core.fsync={value}"
            );
        }
    }

    #[test]
    fn the_deprecated_object_files_switch_adds_loose_objects_only() {
        let on = d(Some("none"), None, Some(true));
        assert!(on.loose_objects && !on.refs);
        assert!(!d(None, None, Some(false)).loose_objects);
        assert!(d(Some("loose-object"), None, Some(false)).loose_objects);
    }

    #[test]
    fn unknown_components_and_methods_are_ignored_and_named() {
        let (got, ignored) =
            Durability::from_settings(Some("reference,bogus,-also"), Some("sometimes"), None);
        assert!(got.refs && !got.loose_objects);
        assert_eq!(got.method, Method::Fsync);
        assert_eq!(
            ignored,
            [
                "core.fsync component 'bogus'",
                "core.fsync component '-also'",
                "core.fsyncMethod value 'sometimes'"
            ]
        );
        assert_eq!(d(None, Some("batch"), None).method, Method::Batch);
        assert_eq!(
            d(None, Some("writeout-only"), None).method,
            Method::WriteoutOnly
        );
        assert_eq!(d(None, Some("fsync"), None).method, Method::Fsync);
    }

    #[test]
    fn hardening_a_file_that_is_gone_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("ab").join("cdef");
        let all = d(Some("all"), None, None);
        let e = all.loose_object(&gone).unwrap_err();
        assert_eq!(e.path, gone);
        assert_eq!(e.cause.kind(), std::io::ErrorKind::NotFound);
        // a ref with neither a loose file nor a reflog has nothing to harden
        all.reference(dir.path(), "refs/receipts/x").unwrap();
    }

    #[test]
    fn hardening_existing_files_succeeds_in_every_method() {
        let dir = tempfile::tempdir().unwrap();
        let obj = dir.path().join("ab");
        std::fs::create_dir(&obj).unwrap();
        std::fs::write(obj.join("cdef"), b"x").unwrap();
        std::fs::create_dir_all(dir.path().join("logs/refs/receipts")).unwrap();
        std::fs::create_dir_all(dir.path().join("refs/receipts")).unwrap();
        std::fs::write(dir.path().join("refs/receipts/w"), b"0\n").unwrap();
        std::fs::write(dir.path().join("logs/refs/receipts/w"), b"0\n").unwrap();
        for method in ["fsync", "writeout-only", "batch"] {
            let all = d(Some("all"), Some(method), None);
            all.loose_object(&obj.join("cdef")).unwrap();
            all.reference(dir.path(), "refs/receipts/w").unwrap();
        }
    }
}
