//! Objects read straight from the repository's pack files, for walks that read
//! many objects once each (the verifier reads every chain entry's commit, tree and
//! `receipt.json`; a fetch's admission reads each new entry's tree and receipt,
//! then its notes and index walks read those it did not remember). It keeps
//! every delta base it inflates on the way to an object, as git's own
//! delta-base cache does: gix keeps only the objects asked for, so a
//! receipt blob whose delta chain runs through receipts of other chains inflated
//! that whole chain again (six inflates a blob on a repacked repository, where one
//! would do).
//!
//! It answers only what it can read within [`ALLOC_LIMIT`] from a pack it opened;
//! anything else (a loose object, a pack that appeared later, an object behind an
//! alternate, a damaged entry, a large one) is `None`, and the caller reads it the
//! usual way, whose answer (and error) then decides. The bytes it returns are the
//! bytes gix would return for the same id: the same pack entries, decoded by the
//! same `gix-pack` functions.
//!
//! mutants: whatever makes it decline more (a smaller [`ALLOC_LIMIT`], no pack
//! opened, another hash kind for parsing) is equivalent in answers: the caller's
//! usual read decides, and only speed moves (`benches/verify.rs`).

use std::path::Path;
use std::sync::Mutex;

use gix::odb::pack;
use gix::odb::pack::cache::DecodeEntry;
use gix::odb::pack::data::entry::Header;

/// Most one read may allocate while decoding (the object, its base and the delta
/// between them). Every receipt (at most `MAX_RECEIPT_BYTES`, 256 KiB) and its
/// bases fit; a larger object is read the usual way.
pub(crate) const ALLOC_LIMIT: usize = 1 << 20;

/// Bytes of inflated objects kept for the deltas that build on them. On a
/// repacked 30,000-receipt repository 4 MiB did as well as 64 MiB (a base is
/// mostly needed again soon after it was made); twice that for longer chains.
const CACHE_BYTES: usize = 8 << 20;

/// Deltas followed from one object before giving up (git packs at most 4,095 deep;
/// a ref-delta cycle in a damaged pack ends here).
const MAX_DEPTH: usize = 10_000;

/// What the packs directory under `objects` is now: its inode, size and change
/// times. `None` when it cannot be read (then no store is kept).
pub(crate) type PackDirStamp = (u64, u64, i64, i64, i64, i64);

pub(crate) fn pack_dir_stamp(objects: &std::path::Path) -> Option<PackDirStamp> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(objects.join("pack")).ok()?;
    Some((
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    ))
}

/// [`Packs`] opened on first use: a walk that reads nothing packed (a `run`
/// whose chain is all loose objects) opens no pack.
pub(crate) struct LazyPacks {
    objects: std::path::PathBuf,
    hash: gix::hash::Kind,
    cell: std::sync::OnceLock<Packs>,
}

impl LazyPacks {
    /// The packs of `objects`, opened when first read.
    pub(crate) fn new(objects: &Path, hash: gix::hash::Kind) -> LazyPacks {
        LazyPacks {
            objects: objects.to_owned(),
            hash,
            cell: std::sync::OnceLock::new(),
        }
    }

    /// The packs of `repo`'s object directory, opened when first read.
    pub(crate) fn of(repo: &gix::Repository) -> LazyPacks {
        LazyPacks::new(repo.objects.store_ref().path(), repo.object_hash())
    }

    /// The packs, opened now if they were not.
    pub(crate) fn get(&self) -> &Packs {
        self.cell
            .get_or_init(|| Packs::open(&self.objects, self.hash))
    }
}

/// The pack files of one repository, opened once, and the bases inflated so far.
pub(crate) struct Packs {
    bundles: Vec<pack::Bundle>,
    hash: gix::hash::Kind,
    state: Mutex<State>,
}

struct State {
    cache: pack::cache::lru::MemoryCappedHashmap,
    inflate: gix::zlib::Inflate,
    held: Vec<u8>,
}

impl Packs {
    /// The packs under `objects/pack` of `objects` (a pack that does not open is
    /// left out: its objects are read the usual way).
    pub(crate) fn open(objects: &Path, hash: gix::hash::Kind) -> Packs {
        let mut bundles = Vec::new();
        if let Ok(dir) = std::fs::read_dir(objects.join("pack")) {
            for entry in dir.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "idx")
                    && let Ok(mut bundle) = pack::Bundle::at(&path, hash)
                    && let Ok(id) = u32::try_from(bundles.len())
                {
                    bundle.pack.alloc_limit_bytes = Some(ALLOC_LIMIT);
                    // the key of its bases in the cache: its position, where gix
                    // would use a checksum of its path, which two paths can share
                    bundle.pack.id = id;
                    bundles.push(bundle);
                }
            }
        }
        Packs {
            bundles,
            hash,
            state: Mutex::new(State {
                cache: pack::cache::lru::MemoryCappedHashmap::new(CACHE_BYTES),
                inflate: Default::default(),
                held: Vec::new(),
            }),
        }
    }

    /// The hash kind of the repository.
    pub(crate) fn hash(&self) -> gix::hash::Kind {
        self.hash
    }

    /// Object `id` into `out`, and its kind, when a pack opened here holds it and it
    /// decodes within [`ALLOC_LIMIT`]; `None` otherwise (read it the usual way).
    pub(crate) fn read(&self, id: &gix::oid, out: &mut Vec<u8>) -> Option<gix::objs::Kind> {
        let (bundle, offset) = self.bundles.iter().find_map(|b| {
            b.index
                .lookup(id)
                .map(|n| (b, b.index.pack_offset_at_index(n)))
        })?;
        let mut state = self.state.lock().ok()?;
        let State {
            cache,
            inflate,
            held,
        } = &mut *state;
        let (pack, index) = (&bundle.pack, &bundle.index);
        let resolve = |base: &gix::oid, _: &mut Vec<u8>| {
            Ok(match index.lookup(base) {
                Some(n) => Some(pack::data::decode::entry::ResolvedBase::InPack(
                    pack.entry(index.pack_offset_at_index(n))?,
                )),
                None => None,
            })
        };
        // Down the delta chain to a base already inflated, or a whole object.
        let mut chain = Vec::new();
        let mut cursor = pack.entry(offset).ok()?;
        let mut kind = loop {
            if let Some((kind, _)) = cache.get(pack.id, cursor.data_offset, held) {
                if chain.is_empty() {
                    std::mem::swap(out, held);
                }
                break kind;
            }
            if chain.len() == MAX_DEPTH {
                return None;
            }
            let base = match cursor.header {
                Header::OfsDelta { base_distance } => {
                    pack.entry(cursor.checked_base_pack_offset(base_distance)?)
                }
                Header::RefDelta { base_id } => {
                    pack.entry(index.pack_offset_at_index(index.lookup(base_id)?))
                }
                _ => {
                    let whole = pack
                        .decode_entry(
                            cursor.clone(),
                            out,
                            inflate,
                            &resolve,
                            &mut pack::cache::Never,
                        )
                        .ok()?;
                    // a base of what was asked for: kept for the deltas on it
                    if !chain.is_empty() {
                        cache.put(
                            pack.id,
                            cursor.data_offset,
                            out,
                            whole.kind,
                            whole.compressed_size,
                        );
                    }
                    break whole.kind;
                }
            }
            .ok()?;
            chain.push(cursor);
            cursor = base;
        };
        // Up again, one delta at a time, each on the base just kept (decoding a
        // delta keeps what it made).
        for entry in chain.into_iter().rev() {
            kind = pack
                .decode_entry(entry, out, inflate, &resolve, cache)
                .ok()?
                .kind;
        }
        Some(kind)
    }
}
