//! Objects read straight from the repository's pack files, for walks that read
//! many objects once each (the verifier reads every chain entry's commit, tree and
//! `receipt.json`; a fetch's admission reads each new entry's tree and receipt,
//! then its notes and index walks read every entry's commit again, and the
//! receipts it did not remember: `entry::WalkReader`). It keeps
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
//! bytes gix would return for the same id: the same pack entries, located by
//! `gix-pack`, inflated by the same zlib, each checked to end exactly at the size
//! its header gives, and deltas applied as git's `patch_delta` applies them
//! (here, not by gix, to inflate with room to spare: zlib's fast loop stops 260
//! bytes before the end of its output, and gix inflates into exactly the size,
//! so most of a small object ran in the slow loop; a whole `verify` runs 7.8%
//! fewer instructions for it). A test reads every object of a pack with deltas
//! as `git cat-file` gives it.
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
/// Readers on several threads share it ([`LazyPacks::others`]).
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

/// [`Packs`] opened on first use: a walk that reads nothing at all opens no
/// pack (the first read opens every pack index, whether or not the object it
/// asks for is packed).
pub(crate) struct LazyPacks {
    objects: std::path::PathBuf,
    hash: gix::hash::Kind,
    /// The pack files, opened at the first read of this or of any
    /// [`LazyPacks::others`] of it, and shared between them.
    files: std::sync::Arc<std::sync::OnceLock<std::sync::Arc<Files>>>,
    /// Bytes of bases kept ([`CACHE_BYTES`], or a thread's share of them).
    cache_bytes: usize,
    cell: std::sync::OnceLock<Packs>,
}

impl LazyPacks {
    /// The packs of `objects`, opened when first read.
    pub(crate) fn new(objects: &Path, hash: gix::hash::Kind) -> LazyPacks {
        LazyPacks {
            objects: objects.to_owned(),
            hash,
            files: Default::default(),
            cache_bytes: CACHE_BYTES,
            cell: std::sync::OnceLock::new(),
        }
    }

    /// The packs of `repo`'s object directory, opened when first read.
    pub(crate) fn of(repo: &gix::Repository) -> LazyPacks {
        LazyPacks::new(repo.objects.store_ref().path(), repo.object_hash())
    }

    /// The same packs for `n` threads: the same files, opened once for all
    /// (each file mapped once: a page two read is in memory once), each with
    /// a cache and a lock of its own (one shared, the threads would take
    /// turns on its lock for every read). Together they keep at most twice
    /// this one's bytes of bases: on two threads each keeps as much as this
    /// one (a receipt's base is a receipt of any chain, and half as much cost
    /// a 200,000-receipt index rebuilt on two threads a sixth of its time),
    /// on more each keeps less.
    ///
    /// mutants: the share is equivalent in answers: only speed and memory
    /// move.
    pub(crate) fn others(&self, n: usize) -> Vec<LazyPacks> {
        let cache_bytes = (self.cache_bytes * 2 / n.max(1)).min(self.cache_bytes);
        (0..n)
            .map(|_| LazyPacks {
                objects: self.objects.clone(),
                hash: self.hash,
                files: self.files.clone(),
                cache_bytes,
                cell: std::sync::OnceLock::new(),
            })
            .collect()
    }

    /// The packs, opened now if they were not.
    pub(crate) fn get(&self) -> &Packs {
        self.cell.get_or_init(|| {
            let files = self
                .files
                .get_or_init(|| std::sync::Arc::new(Files::open(&self.objects, self.hash)));
            Packs::over(files.clone(), self.cache_bytes)
        })
    }
}

/// The pack files of one repository, opened once.
struct Files {
    bundles: Vec<pack::Bundle>,
    hash: gix::hash::Kind,
}

impl Files {
    /// The packs under `objects/pack` of `objects` (a pack that does not open is
    /// left out: its objects are read the usual way).
    fn open(objects: &Path, hash: gix::hash::Kind) -> Files {
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
        // An object is most likely in the largest pack: asked first, the small
        // ones a fetch or a `gc --auto` left beside it are asked only for what
        // it does not hold. (Each keeps its position as its id, its key in
        // the cache.)
        bundles.sort_by_key(|b| std::cmp::Reverse(b.index.num_objects()));
        Files { bundles, hash }
    }
}

/// Reads of the pack files of one repository (opened once, maybe for other
/// threads' reads too), and the bases they inflated so far.
pub(crate) struct Packs {
    files: std::sync::Arc<Files>,
    /// The position in the files' bundles of the pack that held the last
    /// object found.
    last_hit: std::sync::atomic::AtomicUsize,
    state: Mutex<State>,
}

struct State {
    cache: pack::cache::lru::MemoryCappedHashmap,
    inflate: gix::zlib::Inflate,
    held: Vec<u8>,
    /// What a delta makes, before it becomes the base of the next.
    made: Vec<u8>,
    /// The deltas on the way to an object, kept for the next read.
    chain: Vec<pack::data::Entry>,
}

impl Packs {
    /// Reads of `files` keeping `cache_bytes` of bases, nothing inflated yet.
    fn over(files: std::sync::Arc<Files>, cache_bytes: usize) -> Packs {
        Packs {
            files,
            last_hit: Default::default(),
            state: Mutex::new(State {
                cache: pack::cache::lru::MemoryCappedHashmap::new(cache_bytes),
                inflate: Default::default(),
                held: Vec::new(),
                made: Vec::new(),
                chain: Vec::new(),
            }),
        }
    }

    /// The hash kind of the repository.
    pub(crate) fn hash(&self) -> gix::hash::Kind {
        self.files.hash
    }

    /// Whether a pack opened here lists `id` in its index: then the
    /// repository holds it, as gix's `has_object` (which asks the same
    /// indexes) says; `false` says nothing (ask the usual way).
    pub(crate) fn holds(&self, id: &gix::oid) -> bool {
        self.find(id).is_some()
    }

    /// Where `id` sits in the packs opened here: the place of its pack among
    /// them and where its entry starts in it. Reading objects in the order of
    /// their places reads a pack front to back, as git wrote it: a receipt
    /// blob's delta base sits a few objects before it (a few KiB), so it is
    /// still among the bases kept, where a walk down one chain at a time
    /// meets every base again long after it was dropped. `None` when no pack
    /// here lists it.
    pub(crate) fn place(&self, id: &gix::oid) -> Option<(usize, u64)> {
        self.find_at(id).map(|(n, _, offset)| (n, offset))
    }

    /// The pack whose index lists `id`, and where its entry starts there.
    fn find(&self, id: &gix::oid) -> Option<(&pack::Bundle, u64)> {
        self.find_at(id).map(|(_, bundle, offset)| (bundle, offset))
    }

    /// [`Packs::find`], with the pack's place among the bundles.
    fn find_at(&self, id: &gix::oid) -> Option<(usize, &pack::Bundle, u64)> {
        // The pack that held the last object found is asked first: a walk reads
        // an entry's commit, tree and blob, and a chain's next entry, mostly
        // from the pack one fetch brought them in. (mutants: which pack is
        // asked first is equivalent in answers: an object is the same bytes in
        // any pack that holds it.)
        let first = self.last_hit.load(std::sync::atomic::Ordering::Relaxed);
        let bundles = &self.files.bundles;
        let (at, bundle, offset) = bundles
            .get(first)
            .map(|b| (first, b))
            .into_iter()
            .chain(bundles.iter().enumerate().filter(|(n, _)| *n != first))
            .find_map(|(n, b)| {
                position(&b.index, id).map(|p| (n, b, b.index.pack_offset_at_index(p)))
            })?;
        if at != first {
            self.last_hit
                .store(at, std::sync::atomic::Ordering::Relaxed);
        }
        Some((at, bundle, offset))
    }

    /// Object `id` into `out`, and its kind, when a pack opened here holds it and it
    /// decodes within [`ALLOC_LIMIT`]; `None` otherwise (read it the usual way).
    pub(crate) fn read(&self, id: &gix::oid, out: &mut Vec<u8>) -> Option<gix::objs::Kind> {
        let (bundle, offset) = self.find(id)?;
        let mut state = self.state.lock().ok()?;
        let State {
            cache,
            inflate,
            held,
            made,
            chain,
        } = &mut *state;
        chain.clear();
        let (pack, index) = (&bundle.pack, &bundle.index);
        // Down the delta chain to a base already inflated, or a whole object.
        let mut cursor = pack.entry(offset).ok()?;
        let kind = loop {
            if let Some((kind, _)) = cache.get(pack.id, cursor.data_offset, held) {
                std::mem::swap(out, held);
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
                    pack.entry(index.pack_offset_at_index(position(index, &base_id)?))
                }
                _ => {
                    let kind = cursor.header.as_kind()?;
                    let compressed_size = inflate_exact(pack, &cursor, out, inflate)?;
                    // a base of what was asked for: kept for the deltas on it;
                    // and a whole blob asked for, kept for the deltas after it
                    // (a walk in pack order meets it as a base soon after).
                    // mutants: keeping more or less is equivalent in answers:
                    // a kept base is the bytes decoding it again gives
                    if !chain.is_empty() || kind == gix::objs::Kind::Blob {
                        cache.put(pack.id, cursor.data_offset, out, kind, compressed_size);
                    }
                    break kind;
                }
            }
            .ok()?;
            chain.push(cursor);
            cursor = base;
        };
        // Up again, one delta at a time, each on the base in `out`; what each
        // makes is kept, as the base of what comes after it.
        for entry in chain.drain(..).rev() {
            let compressed_size = inflate_exact(pack, &entry, held, inflate)?;
            apply_delta(out, held, made)?;
            std::mem::swap(out, made);
            cache.put(pack.id, entry.data_offset, out, kind, compressed_size);
        }
        Some(kind)
    }
}

/// The size a delta's instructions begin with (the base's, then the
/// result's): seven bits a byte, least significant first, the high bit set
/// on every byte but the last; taken off the front of `delta`. `None` past
/// 64 bits or the end.
fn delta_size(delta: &mut &[u8]) -> Option<u64> {
    let mut size = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = delta.split_first()?;
        *delta = rest;
        size |= u64::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(size);
        }
    }
    None
}

/// The object git's delta `delta` makes of `base`, into `out`, as git's
/// `patch_delta` makes it: the base's size must be `base`'s, the result at
/// most [`ALLOC_LIMIT`] and exactly the size the delta gives; each
/// instruction copies a range of the base (an offset of up to four bytes, a
/// size of up to three, none meaning 64 KiB) that must lie inside it, or
/// inserts up to 127 bytes that follow it. `None` for anything else (the
/// usual read then decides, and says what is wrong).
fn apply_delta(base: &[u8], mut delta: &[u8], out: &mut Vec<u8>) -> Option<()> {
    if delta_size(&mut delta)? != base.len() as u64 {
        return None;
    }
    let size = usize::try_from(delta_size(&mut delta)?)
        .ok()
        .filter(|&n| n <= ALLOC_LIMIT)?;
    out.clear();
    out.reserve(size);
    while let Some((&op, rest)) = delta.split_first() {
        delta = rest;
        if op & 0x80 != 0 {
            // which of the offset's four bytes and the size's three follow
            let mut field = |bits: u8, first: u8| -> Option<usize> {
                let mut n = 0usize;
                for i in 0..bits {
                    if op & (first << i) != 0 {
                        let (&byte, rest) = delta.split_first()?;
                        delta = rest;
                        n |= usize::from(byte) << (8 * i);
                    }
                }
                Some(n)
            };
            let offset = field(4, 0x01)?;
            let len = match field(3, 0x10)? {
                0 => 0x10000,
                n => n,
            };
            out.extend_from_slice(base.get(offset..offset.checked_add(len)?)?);
        } else if op != 0 {
            let (insert, rest) = delta.split_at_checked(usize::from(op))?;
            delta = rest;
            out.extend_from_slice(insert);
        } else {
            return None;
        }
        if out.len() > size {
            return None;
        }
    }
    (out.len() == size).then_some(())
}

/// Room past an entry's size that [`inflate_exact`] gives zlib: its fast
/// loop runs only while this much output room is left (zlib's and zlib-rs's
/// `INFLATE_FAST_MIN_LEFT`, 258 bytes of the longest match and two more), so
/// an object inflated into exactly its size, as gix inflates it, spends its
/// last 260 bytes in the slow one: most of a chain commit, a tree or a
/// receipt (a third of what reading an entry cost).
const INFLATE_ROOM: usize = 260;

/// The data of `entry` of `pack` (a whole object, or a delta's
/// instructions), inflated into `out`: its size as the entry's header gives
/// it, at most [`ALLOC_LIMIT`], and the stream must end exactly there (as gix
/// checks it: one that stops short or runs on is refused); the bytes it took
/// from the pack. `None` for anything larger or anything that does not
/// inflate so (the usual read then decides).
fn inflate_exact<T: pack::FileData>(
    pack: &pack::data::File<T>,
    entry: &pack::data::Entry,
    out: &mut Vec<u8>,
    inflate: &mut gix::zlib::Inflate,
) -> Option<usize> {
    let size = usize::try_from(entry.decompressed_size)
        .ok()
        .filter(|&n| n <= ALLOC_LIMIT)?;
    let input = pack.entry_slice(entry.data_offset..pack.pack_end() as u64)?;
    out.clear();
    // mutants: more room (`*` for `+`) is equivalent in answers: only the
    // buffer grows
    out.resize(size + INFLATE_ROOM, 0);
    inflate.reset();
    let (status, read, written) = inflate.once(input, out).ok()?;
    if status != gix::zlib::Status::StreamEnd || written != size {
        return None;
    }
    out.truncate(size);
    Some(read)
}

/// Where `id` sits in `index`, as [`pack::index::File::lookup`] answers on an
/// index whose ids are sorted and unique, as git writes them (on any other, a
/// position that holds `id`, or `None`, as there). The
/// ids of a pack are hashes, spread evenly over their range, so where an id
/// sits is close to where its first eight bytes say: a few guesses, each
/// narrowed by the ids the guesses before it found, read a few places of the
/// index where a binary search reads a dozen (each a cache miss in an index of
/// a hundred thousand objects, most of what a lookup cost). After a few
/// guesses a binary search takes over, so ids made to bunch together cost at
/// most a few reads more than the binary search would.
fn position<T: pack::FileData>(index: &pack::index::File<T>, id: &gix::oid) -> Option<u32> {
    position_among(index.num_objects(), |n| index.oid_at_index(n), id)
}

/// [`position`] among `len` sorted ids, the id at each position read by `id_at`.
fn position_among<'a>(len: u32, id_at: impl Fn(u32) -> &'a gix::oid, id: &gix::oid) -> Option<u32> {
    /// Guesses before the binary search.
    const GUESSES: usize = 6;
    let head = |o: &gix::oid| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&o.as_bytes()[..8]);
        u64::from_be_bytes(b)
    };
    let target = head(id);
    // how `id` orders against the id at `at`, and that id's head
    let order = |at: u32| {
        let there = id_at(at);
        let h = head(there);
        ((target, id.as_bytes()).cmp(&(h, there.as_bytes())), h)
    };
    // [lo, hi) holds it if anything does; `low` and `high` bound the heads there
    let (mut lo, mut hi) = (0u32, len);
    let (mut low, mut high) = (0u64, u64::MAX);
    for _ in 0..GUESSES {
        let len = hi - lo;
        if len < 2 || !(low..=high).contains(&target) {
            break;
        }
        let share = u128::from(target - low) * u128::from(len) / (u128::from(high - low) + 1);
        let at = lo + u32::try_from(share).unwrap_or(u32::MAX).min(len - 1);
        match order(at) {
            (std::cmp::Ordering::Equal, _) => return Some(at),
            (std::cmp::Ordering::Less, h) => (hi, high) = (at, h),
            (std::cmp::Ordering::Greater, h) => (lo, low) = (at + 1, h),
        }
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match order(mid).0 {
            std::cmp::Ordering::Equal => return Some(mid),
            std::cmp::Ordering::Less => hi = mid,
            std::cmp::Ordering::Greater => lo = mid + 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest as _;

    /// A version 2 pack index of `ids` (sorted here), each at a made-up offset.
    fn index_of(mut ids: Vec<[u8; 20]>) -> pack::index::File<Vec<u8>> {
        ids.sort_unstable();
        ids.dedup();
        let mut data = vec![0xff, b't', b'O', b'c', 0, 0, 0, 2];
        for byte in 0..=255u8 {
            let upto = ids.iter().filter(|id| id[0] <= byte).count() as u32;
            data.extend_from_slice(&upto.to_be_bytes());
        }
        for id in &ids {
            data.extend_from_slice(id);
        }
        for _ in &ids {
            data.extend_from_slice(&0u32.to_be_bytes()); // crc32
        }
        for n in 0..ids.len() as u32 {
            data.extend_from_slice(&(12 + 100 * n).to_be_bytes());
        }
        data.extend_from_slice(&[0; 40]); // pack and index checksums
        pack::index::File::from_data(data, "test.idx".into(), gix::hash::Kind::Sha1).unwrap()
    }

    /// The objects `git verify-pack -v` lists for the pack of `index`: each
    /// id with its line's fields (id, type, size, size in the pack, offset,
    /// and for a delta its depth and base).
    fn verify_pack(
        s: &crate::freshness::rules::Scratch,
        index: &Path,
    ) -> Vec<(gix::ObjectId, Vec<String>)> {
        let listing = s.git(&["verify-pack", "-v", index.to_str().unwrap()]);
        listing
            .lines()
            .filter_map(|line| {
                let f: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
                let id = gix::ObjectId::from_hex(f.first()?.as_bytes()).ok()?;
                Some((id, f))
            })
            .collect()
    }

    fn id(seed: &str) -> [u8; 20] {
        let mut id = [0; 20];
        id.copy_from_slice(&sha2::Sha256::digest(seed.as_bytes())[..20]);
        id
    }

    /// Every id of an index is found where it is, and no other, as the binary
    /// search of gix finds it: ids spread as hashes are (in a few reads of the
    /// index each), ids made to share their first seven bytes (the guesses
    /// give way to the binary search), the first and last ids there can be,
    /// one id, none.
    #[test]
    fn an_id_is_found_where_the_binary_search_finds_it() {
        let spread: Vec<[u8; 20]> = (0..5000).map(|n| id(&n.to_string())).collect();
        let mut bunched: Vec<[u8; 20]> = (0..3000)
            .map(|n| {
                let mut b = id(&format!("b{n}"));
                b[..7].copy_from_slice(&[0x5a; 7]);
                b
            })
            .collect();
        bunched.extend(spread.iter().take(50));
        let edges = vec![[0; 20], [0xff; 20], id("x")];
        let absent: Vec<[u8; 20]> = (5000..6000)
            .map(|n| id(&n.to_string()))
            .chain((3000..3500).map(|n| {
                let mut b = id(&format!("b{n}"));
                b[..7].copy_from_slice(&[0x5a; 7]);
                b
            }))
            .chain([[0; 20], [0xff; 20], [0x5a; 20], [0x80; 20]])
            .collect();
        for (ids, reads) in [
            // a binary search reads 13 of 5,000, 12 of 3,050
            (spread, 4.5),
            (bunched, 20.0),
            (edges, 2.0),
            (vec![id("one")], 1.0),
            (Vec::new(), 0.0),
        ] {
            let index = index_of(ids.clone());
            let read = std::cell::Cell::new(0);
            for n in 0..index.num_objects() {
                let oid = index.oid_at_index(n).to_owned();
                let counted = |n| {
                    read.set(read.get() + 1);
                    index.oid_at_index(n)
                };
                assert_eq!(position_among(index.num_objects(), counted, &oid), Some(n));
                assert_eq!(position(&index, &oid), Some(n));
            }
            let per_id = f64::from(read.get()) / f64::from(index.num_objects().max(1));
            assert!(per_id <= reads, "{per_id} reads an id");
            for a in &absent {
                let oid = gix::ObjectId::from_bytes_or_panic(a);
                assert_eq!(position(&index, &oid), index.lookup(oid), "{oid}");
            }
        }
    }

    /// Every object of two packs is placed where `git verify-pack -v` says its
    /// entry starts, in the pack it lists it under; an id no pack lists has
    /// no place.
    #[test]
    fn an_object_is_placed_where_stock_git_says_its_entry_starts() {
        let s = crate::freshness::rules::Scratch::new();
        for n in 0..3 {
            s.commit(&[("a.txt", &format!("{n}\n"))], "first");
        }
        s.git(&["repack", "-adq"]);
        for n in 3..5 {
            s.commit(&[("b.txt", &format!("{n}\n"))], "second");
        }
        s.git(&["repack", "-dq"]);
        let objects = s.dir.path().join(".git/objects");
        let packs = LazyPacks::new(&objects, gix::hash::Kind::Sha1);
        let bundles = &packs.get().files.bundles;
        assert_eq!(bundles.len(), 2);
        let mut placed = 0;
        for (n, bundle) in bundles.iter().enumerate() {
            for (id, f) in verify_pack(&s, bundle.index.path()) {
                let line = f.join(" ");
                let offset: u64 = f[4].parse().unwrap();
                assert_eq!(packs.get().place(&id), Some((n, offset)), "{line}");
                placed += 1;
            }
        }
        // 5 commits, 5 trees and 5 blobs
        assert_eq!(placed, 15);
        assert_eq!(
            packs
                .get()
                .place(&gix::ObjectId::from_bytes_or_panic(&id("none"))),
            None
        );
    }

    /// Every object of a pack, whole or a delta, reads as stock `git cat-file`
    /// gives it; a whole entry whose header says another size than its stream
    /// inflates to is refused (`None`: the usual read then decides, and says
    /// what is wrong), one byte short or one over.
    #[test]
    fn every_object_reads_as_git_gives_it_and_an_entry_of_another_size_is_refused() {
        let s = crate::freshness::rules::Scratch::new();
        let text: String = (0..200).map(|n| format!("line {n}\n")).collect();
        for n in 0..6 {
            let a = format!("{text}{n}\n");
            s.commit(&[("a.txt", &a), ("b.txt", &format!("{n}\n"))], "change");
        }
        s.git(&["repack", "-adfq", "--depth=4"]);
        let dir = s.dir.path();
        let cat = |kind: &str, id: &str| {
            let out = std::process::Command::new("git")
                .args(["cat-file", kind, id])
                .current_dir(dir)
                .output()
                .unwrap();
            assert!(out.status.success());
            out.stdout
        };
        let objects = dir.join(".git/objects");
        let packs = LazyPacks::new(&objects, gix::hash::Kind::Sha1);
        let bundles = &packs.get().files.bundles;
        assert_eq!(bundles.len(), 1);
        let listing = verify_pack(&s, bundles[0].index.path());
        let pack_path = bundles[0].pack.path().to_owned();
        let (mut deltas, mut small_blob) = (0, None);
        let mut buf = Vec::new();
        for (id, f) in &listing {
            let (id, line) = (*id, f.join(" "));
            let kind = packs.get().read(&id, &mut buf).expect(&line);
            assert_eq!(kind.to_string(), f[1], "{line}");
            assert_eq!(buf, cat(&f[1], &f[0]), "{line}");
            if f.len() > 5 {
                deltas += 1;
            } else if f[1] == "blob" && f[2] == "2" {
                small_blob = Some((id, f[4].parse::<usize>().unwrap()));
            }
        }
        assert!(deltas > 0, "deltas were read: {listing:?}");
        let (blob, offset) = small_blob.expect("a whole blob of 2 bytes");
        drop(packs);
        let pristine = std::fs::read(&pack_path).unwrap();
        // the header's first byte holds the size's low four bits: 2 here
        assert_eq!(pristine[offset] & 0x8f, 2);
        let mut mode = std::fs::metadata(&pack_path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o644);
        std::fs::set_permissions(&pack_path, mode).unwrap();
        for said in [1u8, 3] {
            let mut damaged = pristine.clone();
            damaged[offset] = (damaged[offset] & !0x0f) | said;
            std::fs::write(&pack_path, &damaged).unwrap();
            let packs = LazyPacks::new(&objects, gix::hash::Kind::Sha1);
            assert_eq!(
                packs.get().read(&blob, &mut buf),
                None,
                "header says {said}"
            );
        }
        std::fs::write(&pack_path, &pristine).unwrap();
        let packs = LazyPacks::new(&objects, gix::hash::Kind::Sha1);
        assert_eq!(
            packs.get().read(&blob, &mut buf),
            Some(gix::objs::Kind::Blob)
        );
    }

    /// A delta's instructions make what git's `patch_delta` makes, and every
    /// way a delta can be wrong is refused, never read past or panicked on.
    #[test]
    fn a_delta_is_applied_as_git_applies_it_and_a_bad_one_is_refused() {
        let base: Vec<u8> = (0..70_000u32).map(|n| (n % 251) as u8).collect();
        let size = |mut n: usize| {
            let mut v = Vec::new();
            loop {
                let b = (n & 0x7f) as u8;
                n >>= 7;
                if n == 0 {
                    v.push(b);
                    return v;
                }
                v.push(b | 0x80);
            }
        };
        let delta = |result: usize, ops: &[u8]| {
            let mut d = size(base.len());
            d.extend(size(result));
            d.extend_from_slice(ops);
            d
        };
        let mut out = Vec::new();
        // copy 3 bytes at offset 0x0102 (offset bytes 1 and 2, size byte 1),
        // insert "xy", copy 64 KiB from 0 (no size byte: 0x10000)
        let ops = [
            0x80 | 0x01 | 0x02 | 0x10,
            0x02,
            0x01,
            3,
            2,
            b'x',
            b'y',
            0x80,
        ];
        assert_eq!(
            apply_delta(&base, &delta(5 + 0x10000, &ops), &mut out),
            Some(())
        );
        let mut want = base[0x0102..0x0105].to_vec();
        want.extend_from_slice(b"xy");
        want.extend_from_slice(&base[..0x10000]);
        assert_eq!(out, want);
        // offset and size bytes may be skipped: only bit 4 (size byte 0) here
        assert_eq!(
            apply_delta(&base, &delta(7, &[0x90, 7]), &mut out),
            Some(())
        );
        assert_eq!(out, &base[..7]);
        let refused = [
            // the base's size is not this base's
            {
                let mut d = size(base.len() - 1);
                d.extend(size(1));
                d.extend_from_slice(&[1, b'a']);
                d
            },
            // a copy past the base's end
            delta(
                16,
                &[0x80 | 0x01 | 0x02 | 0x04 | 0x10, 0x68, 0x11, 0x01, 16],
            ),
            // an offset of four bytes that overflows nothing but the base
            delta(1, &[0x80 | 0x0f | 0x10, 0xff, 0xff, 0xff, 0xff, 1]),
            // more than the result's size, by an insert or a copy
            delta(1, &[2, b'a', b'b']),
            delta(1, &[0x90, 2]),
            // less than the result's size
            delta(3, &[2, b'a', b'b']),
            // the reserved instruction 0
            delta(1, &[0, 1, b'a']),
            // cut inside an insert, inside a copy's bytes, inside a size
            delta(3, &[3, b'a']),
            delta(3, &[0x80 | 0x01 | 0x10, 0x00]),
            size(base.len()),
            vec![0x80],
            // a result over the bound
            delta(ALLOC_LIMIT + 1, &[1, b'a']),
            // a size of more than 64 bits
            vec![0xff; 11],
        ];
        for (n, d) in refused.iter().enumerate() {
            assert_eq!(apply_delta(&base, d, &mut out), None, "case {n}: {d:?}");
        }
        // and whatever the instructions after a valid start, no panic, and
        // an answer is exactly the size it says (a fixed pseudo-random run)
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut answered = 0;
        for _ in 0..20_000 {
            let want = (next() % 300) as usize;
            let ops: Vec<u8> = (0..next() % 40).map(|_| next() as u8).collect();
            if apply_delta(&base, &delta(want, &ops), &mut out).is_some() {
                assert_eq!(out.len(), want);
                answered += 1;
            }
        }
        assert!(answered > 0, "some random deltas are valid ones");
    }
}
