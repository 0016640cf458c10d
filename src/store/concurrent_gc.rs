//! Writes that survive a concurrent `git gc --prune=now`, `git prune` or
//! `git repack -ad` (issue 25).
//!
//! git documents the race: a prune lists what is reachable, then deletes every
//! loose object it did not reach, so the objects of a write in flight (written,
//! but not yet named by a ref when the prune listed the refs) may go, and a
//! repack that finds a fan-out directory empty removes it under the writer's
//! feet. Three defences, in the order a write meets them:
//!
//! - **Writing.** Objects are written loose through one function that tries
//!   again when the fan-out directory vanished between its creation and the
//!   rename into it, and otherwise names the object file and the operation.
//! - **Reflogs.** Every update of a chain or notes ref is logged
//!   (`logs/refs/receipts/<writer>`, as `core.logAllRefUpdates = always` would),
//!   so gc keeps every earlier tip, and with it the whole chain below a write that
//!   a prune cut.
//! - **Checking after the update.** Once the ref names the new objects, they are
//!   looked up again on disk (not in this process's view of the packs, which can
//!   outlive a pack a repack deleted); what went is written again from memory. A
//!   write that cannot be made whole puts the ref back and says so.
//!
//! A reader that still finds a chain or notes ref naming a missing commit (a
//! writer killed between its update and its check) puts it back on the newest
//! entry of its reflog whose objects are all here, and says which receipts went.

use gix::ObjectId;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};

use super::{CHAIN_PREFIX, NOTES_PREFIX, Store, StoreError};
use crate::notice::Notice;

/// How often a write tries again when its fan-out directory vanished, or when a
/// prune deleted its objects after the ref update.
const ATTEMPTS: u32 = 8;

/// How long a writer waits, after its ref update, for a `git gc` that started
/// before it (and so may delete its new objects) to finish, before it checks
/// its objects one last time.
const GC_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a reader waits for the writer of a chain tip with missing objects
/// to write them again (after any gc that was running has finished) before it
/// restores the chain from the reflog.
const RESTORE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Objects held back by [`Store::begin_object_batch`].
#[derive(Default)]
pub(crate) struct ObjectBatch {
    objects: Vec<Written>,
    ids: std::collections::HashSet<ObjectId>,
}

/// The fewest objects [`Store::end_object_batch`] writes as a pack.
const PACK_AT_LEAST: usize = 100;

/// About how many bytes of objects (before deflating) make one part of a
/// streamed pack (a whole object at least): only one part is in memory at a
/// time, where the notes pack of a 200,000-receipt fetch was 105 MB built
/// whole, and as much again in the parts it was joined from.
const PACK_PART_BYTES: usize = 4 << 20;

/// `objects` as a pack file (version 2, every object whole and deflated, the
/// trailer the repository's hash of all before it), as `git index-pack`
/// reads one, written to `out` part by part: the objects of each part of
/// about `part_bytes` are deflated on `threads` threads, written in order and
/// hashed as they go, so that only one part is ever in memory. Each object is
/// deflated alone, so where the parts are cut changes no byte: this is the
/// pack [`encode_pack_on`] makes whole (held by
/// `a_pack_streamed_part_by_part_is_the_pack_made_whole`). Returns where each
/// object's entry starts and the CRC-32 of the entry, in the order of
/// `objects`, and the trailer.
fn write_pack(
    objects: &[Written],
    hash: gix::hash::Kind,
    threads: usize,
    part_bytes: usize,
    out: &mut dyn std::io::Write,
) -> std::io::Result<(Vec<(u64, u32)>, gix::ObjectId)> {
    let mut hasher = gix::hash::hasher(hash);
    let mut put = |bytes: &[u8]| {
        hasher.update(bytes);
        out.write_all(bytes)
    };
    put(b"PACK")?;
    put(&2u32.to_be_bytes())?;
    let count = u32::try_from(objects.len()).map_err(std::io::Error::other)?;
    put(&count.to_be_bytes())?;
    let mut placed = Vec::with_capacity(objects.len());
    let mut at: u64 = 12;
    let mut rest = objects;
    while !rest.is_empty() {
        let (part, after) = rest.split_at(part_len(rest, part_bytes));
        for (deflated, ends) in deflate_entries(part, threads) {
            let mut start = 0;
            for end in ends {
                placed.push((at + start as u64, crc32fast::hash(&deflated[start..end])));
                start = end;
            }
            at += deflated.len() as u64;
            put(&deflated)?;
        }
        rest = after;
    }
    let digest = hasher.try_finalize().map_err(std::io::Error::other)?;
    out.write_all(digest.as_bytes())?;
    Ok((placed, digest))
}

/// The version 2 index (`.idx`) and the reverse index (`.rev`, version 1) of
/// the pack [`write_pack`] wrote of `objects`, their entries at `placed`,
/// its trailer `pack_sum`: byte for byte what `git index-pack --rev-index`
/// writes for that pack (held by
/// `a_pack_s_indexes_are_the_bytes_stock_git_writes_for_it_in_either_hash`),
/// without reading the pack again: every id was hashed here, from the bytes
/// the pack holds. An error when two objects have one id (an index names each
/// object once).
fn pack_indexes(
    objects: &[Written],
    placed: &[(u64, u32)],
    pack_sum: &gix::oid,
    hash: gix::hash::Kind,
) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let n = objects.len();
    if placed.len() != n {
        return Err(std::io::Error::other("an entry for each object"));
    }
    let mut sorted: Vec<usize> = (0..n).collect();
    sorted.sort_unstable_by(|&a, &b| objects[a].id.cmp(&objects[b].id));
    if sorted
        .windows(2)
        .any(|w| objects[w[0]].id == objects[w[1]].id)
    {
        return Err(std::io::Error::other("two objects of one id"));
    }
    let count = u32::try_from(n).map_err(std::io::Error::other)?;
    let mut idx = Vec::with_capacity(8 + 1024 + n * (hash.len_in_bytes() + 8) + 64);
    idx.extend_from_slice(&[0xff, b't', b'O', b'c']);
    idx.extend_from_slice(&2u32.to_be_bytes());
    // fan-out: how many ids start with each byte or a smaller one
    let mut fanout = [0u32; 256];
    for &i in &sorted {
        fanout[usize::from(objects[i].id.as_bytes()[0])] += 1;
    }
    let mut upto = 0u32;
    for slot in fanout {
        upto += slot;
        idx.extend_from_slice(&upto.to_be_bytes());
    }
    debug_assert_eq!(upto, count);
    for &i in &sorted {
        idx.extend_from_slice(objects[i].id.as_bytes());
    }
    for &i in &sorted {
        idx.extend_from_slice(&placed[i].1.to_be_bytes());
    }
    // offsets from 2 GiB on go to a table of 8-byte ones, named by position
    let mut large: Vec<u64> = Vec::new();
    for &i in &sorted {
        let offset = placed[i].0;
        let word = match u32::try_from(offset) {
            Ok(small) if small < 0x8000_0000 => small,
            _ => {
                let at = u32::try_from(large.len()).map_err(std::io::Error::other)?;
                large.push(offset);
                // mutants: `^` for `|` is equivalent: `at` counts large
                // offsets, fewer than 2^31, so it never has the top bit set
                0x8000_0000 | at
            }
        };
        idx.extend_from_slice(&word.to_be_bytes());
    }
    for offset in large {
        idx.extend_from_slice(&offset.to_be_bytes());
    }
    idx.extend_from_slice(pack_sum.as_bytes());
    let sum = checksum(hash, &idx)?;
    idx.extend_from_slice(sum.as_bytes());
    // the reverse index: for each entry in pack order (the order written,
    // as offsets only grow), its position in the index
    let mut position = vec![0u32; n];
    for (at, &i) in sorted.iter().enumerate() {
        position[i] = at as u32;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by_key(|&i| placed[i].0);
    let mut rev = Vec::with_capacity(12 + 4 * n + 64);
    rev.extend_from_slice(b"RIDX");
    rev.extend_from_slice(&1u32.to_be_bytes());
    let hash_id: u32 = match hash {
        gix::hash::Kind::Sha1 => 1,
        gix::hash::Kind::Sha256 => 2,
        _ => {
            return Err(std::io::Error::other(
                "a hash the reverse index has no id for",
            ));
        }
    };
    rev.extend_from_slice(&hash_id.to_be_bytes());
    for i in order {
        rev.extend_from_slice(&position[i].to_be_bytes());
    }
    rev.extend_from_slice(pack_sum.as_bytes());
    let sum = checksum(hash, &rev)?;
    rev.extend_from_slice(sum.as_bytes());
    Ok((idx, rev))
}

/// The repository's hash of `bytes`.
fn checksum(hash: gix::hash::Kind, bytes: &[u8]) -> std::io::Result<gix::ObjectId> {
    let mut hasher = gix::hash::hasher(hash);
    hasher.update(bytes);
    hasher.try_finalize().map_err(std::io::Error::other)
}

/// How many of the first `objects` make a part of about `part_bytes` (at least
/// one).
fn part_len(objects: &[Written], part_bytes: usize) -> usize {
    let mut bytes = 0;
    objects
        .iter()
        .position(|w| {
            bytes += w.bytes.len();
            bytes > part_bytes
        })
        .map_or(objects.len(), |i| i.max(1))
}

/// The pack entries of `objects` (header and deflated bytes each), in order,
/// in as many pieces as there were `threads` to deflate them, each with where
/// each of its entries ends: a fetch's notes are thousands of objects,
/// deflated on every core, each piece in order (the same bytes as one thread
/// makes).
fn deflate_entries(objects: &[Written], threads: usize) -> Vec<(Vec<u8>, Vec<usize>)> {
    // a few objects on this thread (threads cost more than they save); either
    // path makes the same bytes (mutants: so this choice of path is
    // equivalent in answers; the bytes are held by
    // `a_pack_deflated_on_many_threads_is_the_pack_one_thread_makes`)
    let encode = |objects: &[Written]| {
        let (mut out, mut ends) = (Vec::new(), Vec::with_capacity(objects.len()));
        encode_entries(objects, &mut out, &mut ends);
        (out, ends)
    };
    if threads <= 1 || objects.len() < 512 {
        return vec![encode(objects)];
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = objects
            .chunks(objects.len().div_ceil(threads))
            .map(|part| s.spawn(move || encode(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("deflating threads do not panic"))
            .collect()
    })
}

/// `objects` as a pack built whole in memory on `threads` threads, as it was
/// before it streamed: what [`write_pack`] is held to.
#[cfg(test)]
fn encode_pack_on(objects: &[Written], hash: gix::hash::Kind, threads: usize) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"PACK");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&(objects.len() as u32).to_be_bytes());
    for (part, _) in deflate_entries(objects, threads) {
        out.extend_from_slice(&part);
    }
    let digest = checksum(hash, &out).expect("hashing a pack in memory");
    out.extend_from_slice(digest.as_bytes());
    out
}

/// The pack entries of `objects` (header and deflated bytes each), after
/// `out`; where each ends in `out`, after `ends`.
fn encode_entries(objects: &[Written], out: &mut Vec<u8>, ends: &mut Vec<usize>) {
    // one compressor for every object of a level, reset between them: a new
    // one each allocated and zeroed some 400 KiB of tables, most of the pack's
    // cost for objects of a few hundred bytes (a notes pack of 20,000
    // receipts). Trees at the fastest level: a notes tree is mostly object
    // ids, which do not compress (a 200,000-receipt fetch's 202,858 notes
    // trees, 32.1 MB: 31.8 MB at the default level in 1.9 s of CPU, 32.4 MB
    // at the fastest in 0.6 s); blobs (0.53 s at the fastest, which stored
    // them: 24.9 MB to 26.4; 1.2 s at the default, to 20.0 MB) and commits at
    // the default. (mutants: which level an object gets is equivalent in
    // answers: git reads a stream of any level; only size and speed move.)
    let mut fast = gix::zlib::stream::deflate::Compress::new(gix::zlib::Compression::BEST_SPEED);
    let mut default = gix::zlib::stream::deflate::Compress::new(gix::zlib::Compression::DEFAULT);
    for w in objects {
        let code: u8 = match w.kind {
            gix::objs::Kind::Commit => 1,
            gix::objs::Kind::Tree => 2,
            gix::objs::Kind::Blob => 3,
            gix::objs::Kind::Tag => 4,
        };
        let mut size = w.bytes.len();
        // mutants: `^` for either `|` below is equivalent: the type's bits and
        // the size's low four bits do not overlap, and no byte before the
        // continuation bit is set has that bit set
        let mut byte = (code << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            out.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        out.push(byte);
        let z = match w.kind {
            gix::objs::Kind::Tree => &mut fast,
            _ => &mut default,
        };
        deflate_into(z, &w.bytes, out);
        ends.push(out.len());
    }
}

/// `bytes` as one whole zlib stream (as git stores an object) after `out`, with
/// `z` reset first.
fn deflate_into(z: &mut gix::zlib::stream::deflate::Compress, bytes: &[u8], out: &mut Vec<u8>) {
    use gix::zlib::stream::deflate::FlushCompress;
    z.reset();
    let start_in = z.total_in();
    let mut buf = [0u8; 8192];
    loop {
        let (consumed, written) = (z.total_in() - start_in, z.total_out());
        let status = z
            .compress(&bytes[consumed as usize..], &mut buf, FlushCompress::Finish)
            .expect("deflating in memory cannot fail");
        out.extend_from_slice(&buf[..(z.total_out() - written) as usize]);
        if status == gix::zlib::Status::StreamEnd {
            return;
        }
    }
}

/// One object written by this process, kept in memory until the ref that names
/// it is checked, so that a prune that deleted it can be undone.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    /// Its id.
    pub id: ObjectId,
    kind: gix::objs::Kind,
    bytes: Vec<u8>,
    /// What it is, for messages (`receipt.json`, `a chain commit`).
    what: &'static str,
}

impl Written {
    /// A blob this process wrote before (a log), with its bytes.
    pub(crate) fn blob(id: ObjectId, bytes: &[u8], what: &'static str) -> Written {
        Written {
            id,
            kind: gix::objs::Kind::Blob,
            bytes: bytes.to_vec(),
            what,
        }
    }
}

/// `bytes`, an object of `kind`, with its id in a repository of `hash`.
fn hashed(
    hash: gix::hash::Kind,
    what: &'static str,
    kind: gix::objs::Kind,
    bytes: Vec<u8>,
) -> Result<Written, StoreError> {
    let id = gix::objs::compute_hash(hash, kind, &bytes).map_err(|e| StoreError::Git {
        what: format!("hashing {what}"),
        source: e.into(),
    })?;
    Ok(Written {
        id,
        kind,
        bytes,
        what,
    })
}

/// A commit of `tree` on `parent` by the tool's own identity
/// ([`super::tool_signature`]), encoded as git stores it.
pub(crate) fn tool_commit(
    tree: ObjectId,
    parent: Option<ObjectId>,
    message: String,
) -> (gix::objs::Kind, Vec<u8>) {
    let sig = super::tool_signature();
    encode(&gix::objs::Commit {
        tree,
        parents: parent.into_iter().collect(),
        author: sig.clone(),
        committer: sig,
        encoding: None,
        message: message.into(),
        extra_headers: Vec::new(),
    })
}

/// Encode `object` as git stores it.
pub(crate) fn encode(object: &impl gix::objs::WriteTo) -> (gix::objs::Kind, Vec<u8>) {
    let mut bytes = Vec::new();
    object
        .write_to(&mut bytes)
        .expect("writing to memory cannot fail");
    (object.kind(), bytes)
}

impl Store {
    /// The objects directory of this repository.
    fn objects_dir(&self) -> std::path::PathBuf {
        self.repo.objects.store_ref().path().to_owned()
    }

    /// Write an object (unless it is here already), or in a batch hold it
    /// back for the batch's pack; its id. Its bytes are not kept for
    /// [`Store::keep_written`] ([`Store::put_kept_object`] keeps them).
    pub(crate) fn put_object(
        &self,
        what: &'static str,
        kind: gix::objs::Kind,
        bytes: Vec<u8>,
    ) -> Result<ObjectId, StoreError> {
        let written = hashed(self.repo.object_hash(), what, kind, bytes)?;
        let id = written.id;
        // Held back for a pack: not asked whether it is here. Nearly every
        // object a batch holds (a fetch's notes) is new, and asking cost a
        // lookup in every pack index and a loose path's stat each, a third of
        // building a fetch's notes (`benches/year.rs`); one already here is
        // written again in the pack, which git reads either way and gc drops.
        // The batch holds the only copy (its caller takes the objects back
        // from [`Store::end_object_batch`]), without the spare room the bytes
        // were grown with (an encoded tree or a note's text has up to as much
        // again, which the copy a batch used to hold did not have).
        {
            let mut batch = self.object_batch.lock().expect("object batch");
            if let Some(b) = batch.as_mut() {
                if b.ids.insert(id) {
                    let mut written = written;
                    written.bytes.shrink_to_fit();
                    b.objects.push(written);
                }
                return Ok(id);
            }
        }
        self.write_unless_here(&written)?;
        Ok(id)
    }

    /// [`Store::put_object`], and the object kept in memory for
    /// [`Store::keep_written`]. In a batch, which holds the object itself,
    /// the caller is given a copy; one that builds in a batch takes its
    /// objects from [`Store::end_object_batch`] instead.
    pub(crate) fn put_kept_object(
        &self,
        what: &'static str,
        kind: gix::objs::Kind,
        bytes: Vec<u8>,
    ) -> Result<Written, StoreError> {
        let written = hashed(self.repo.object_hash(), what, kind, bytes)?;
        {
            let mut batch = self.object_batch.lock().expect("object batch");
            if let Some(b) = batch.as_mut() {
                if b.ids.insert(written.id) {
                    b.objects.push(written.clone());
                }
                return Ok(written);
            }
        }
        self.write_unless_here(&written)?;
        Ok(written)
    }

    /// Write `written` loose unless this process finds it here.
    fn write_unless_here(&self, written: &Written) -> Result<(), StoreError> {
        // asked without a refresh on a miss: a new object misses, and gix would
        // list `objects/pack` again for each (thousands of directory scans for
        // a fetch's notes). A pack that appeared since this process last looked
        // costs at worst a loose copy of an object it holds, which gc drops.
        let here = {
            let mut odb = self.repo.objects.clone();
            odb.refresh_never();
            gix::objs::Exists::exists(&odb, &written.id)
        };
        if here {
            return Ok(());
        }
        self.write_loose(written)
    }

    /// How many objects the batch holds so far (0 outside one).
    pub(crate) fn batched(&self) -> usize {
        self.object_batch
            .lock()
            .expect("object batch")
            .as_ref()
            .map_or(0, |b| b.objects.len())
    }

    /// Whether [`Store::put_object`] holds objects back for a pack.
    pub(crate) fn batching(&self) -> bool {
        self.object_batch.lock().expect("object batch").is_some()
    }

    /// Write (as [`Store::put_object`]) a commit of `tree` on `parent` by the
    /// tool's own identity ([`super::tool_signature`]): every commit git-receipt
    /// makes (chain entries, retention stubs, notes, checkpoints).
    pub(crate) fn put_tool_commit(
        &self,
        what: &'static str,
        tree: ObjectId,
        parent: Option<ObjectId>,
        message: String,
    ) -> Result<Written, StoreError> {
        let (kind, bytes) = tool_commit(tree, parent, message);
        self.put_kept_object(what, kind, bytes)
    }

    /// From now on, hold the objects [`Store::put_object`] writes in memory, to
    /// be written as one pack by [`Store::end_object_batch`]: a fetch derives
    /// notes for thousands of receipts, and one loose file an object cost it
    /// more than everything else it did (a file created each, and read back
    /// one by one). An object held back cannot be read from the repository
    /// yet, and no ref may name one until the batch ends: the caller builds
    /// first and moves refs after.
    pub(crate) fn begin_object_batch(&self) {
        let mut batch = self.object_batch.lock().expect("object batch");
        batch.get_or_insert_with(ObjectBatch::default);
    }

    /// Write what [`Store::begin_object_batch`] held back, as one pack with
    /// its indexes ([`Store::write_packed`]), and write objects loose again. A
    /// pack that cannot be written is written loose instead, object by object
    /// (what goes wrong then is the error). Returns the objects it wrote, in
    /// the order they were put.
    pub(crate) fn end_object_batch(&self) -> Result<Vec<Written>, StoreError> {
        let Some(batch) = self.object_batch.lock().expect("object batch").take() else {
            return Ok(Vec::new());
        };
        // a handful is cheaper loose than a process; git unpacks fetches of
        // fewer than 100 objects the same way (`fetch.unpackLimit`). This
        // process's reads see the new pack: a miss looks again.
        if batch.objects.len() >= PACK_AT_LEAST
            && self.write_packed(&batch.objects, PACK_PART_BYTES)
        {
            return Ok(batch.objects);
        }
        for w in &batch.objects {
            self.write_loose(w)?;
        }
        Ok(batch.objects)
    }

    /// Whether `objects` went into the repository as one pack, written here
    /// as `git index-pack --stdin --rev-index` would leave it: the pack
    /// streamed to a temporary file in parts of about `part_bytes`
    /// ([`write_pack`]), its index and reverse index made from what was
    /// written ([`pack_indexes`]), each hardened as `core.fsync` asks, then
    /// renamed into place as git does, the index last (a reader finds a pack
    /// by its index). A fetch's notes are hundreds of thousands of objects:
    /// `git index-pack` inflated and hashed each again, on one core, a second
    /// of every eight a 200,000-receipt fetch took. Anything that goes wrong
    /// leaves no file behind and is a `false` (write them loose then, whose
    /// error says what is wrong).
    fn write_packed(&self, objects: &[Written], part_bytes: usize) -> bool {
        let hash = self.repo.object_hash();
        let dir = self.objects_dir().join("pack");
        let durability = self.durability();
        let temporary = |prefix: &str| {
            tempfile::Builder::new()
                .prefix(prefix)
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o444))
                .tempfile_in(&dir)
        };
        let write = || -> std::io::Result<()> {
            let mut pack = temporary("tmp_pack_")?;
            let (placed, sum) = {
                let mut out = std::io::BufWriter::with_capacity(1 << 16, pack.as_file_mut());
                let written =
                    write_pack(objects, hash, super::worker_threads(), part_bytes, &mut out)?;
                std::io::Write::flush(&mut out)?;
                written
            };
            let (idx, rev) = pack_indexes(objects, &placed, &sum, hash)?;
            let mut files = vec![(pack, "pack", false)];
            for (bytes, prefix, ext) in [(rev, "tmp_rev_", "rev"), (idx, "tmp_idx_", "idx")] {
                let mut file = temporary(prefix)?;
                std::io::Write::write_all(file.as_file_mut(), &bytes)?;
                files.push((file, ext, true));
            }
            // the same objects in the same order make the same pack: one of
            // its name with its index in place is this pack, already here
            // (and these files, dropped, are removed unflushed)
            if dir.join(format!("pack-{sum}.idx")).is_file() {
                return Ok(());
            }
            for (file, _, metadata) in &files {
                durability
                    .pack_file(file.path(), *metadata)
                    .map_err(|e| e.cause)?;
            }
            let mut placed_files = Vec::new();
            for (file, ext, _) in files {
                let to = dir.join(format!("pack-{sum}.{ext}"));
                match file.persist(&to) {
                    Ok(_) => placed_files.push(to),
                    Err(e) => {
                        for placed in &placed_files {
                            let _ = std::fs::remove_file(placed);
                        }
                        return Err(e.error);
                    }
                }
            }
            Ok(())
        };
        write().is_ok()
    }

    /// A copy of object `id` (just written here) to keep for
    /// [`Store::keep_written`].
    pub(crate) fn written_copy(
        &self,
        id: ObjectId,
        what: &'static str,
    ) -> Result<Written, StoreError> {
        let object = self.repo.find_object(id).map_err(|e| StoreError::Git {
            what: format!("reading back {what} {id}"),
            source: e.into(),
        })?;
        Ok(Written {
            id,
            kind: object.kind,
            bytes: object.data.clone(),
            what,
        })
    }

    /// Write one object loose, even if this process believes it has it. The
    /// fan-out directory (`objects/ab`) may be removed by a concurrent
    /// `git prune`/`git repack` between gix creating it and renaming the object
    /// into it ("failed to persist temporary file: No such file or directory"):
    /// that is tried again (gix creates the directory again); anything else, or
    /// the same after [`ATTEMPTS`], is an error naming the file.
    fn write_loose(&self, w: &Written) -> Result<(), StoreError> {
        use gix::objs::Write as _;
        let dir = self.objects_dir();
        let loose = gix::odb::loose::Store::at(dir.clone(), self.repo.object_hash());
        let mut attempt = 0;
        loop {
            attempt += 1;
            match loose.write_buf(w.kind, &w.bytes) {
                Ok(_) => {
                    let hex = w.id.to_hex().to_string();
                    let path = dir.join(&hex[..2]).join(&hex[2..]);
                    return self.harden_object(w.id, &path, w.what);
                }
                Err(e) => {
                    let vanished = error_chain_has_not_found(&e);
                    if vanished && attempt < ATTEMPTS {
                        pause(attempt);
                        continue;
                    }
                    let hex = w.id.to_hex().to_string();
                    let path = dir.join(&hex[..2]).join(&hex[2..]);
                    return Err(StoreError::ObjectWrite {
                        what: w.what,
                        path,
                        attempts: attempt,
                        vanished,
                        cause: full_message(&e),
                    });
                }
            }
        }
    }

    /// Which of `ids` the repository on disk lacks now. Asks a freshly opened
    /// object store: this process's own may still read a pack that a
    /// concurrent repack has deleted.
    ///
    /// A repack renames its new pack in, deletes the old ones and then the loose
    /// copies, so one look can fall between two of those steps and miss an
    /// object that is there; what is missing is looked for again, a little
    /// later, in a store opened again.
    pub(crate) fn missing_on_disk(&self, ids: &[ObjectId]) -> Vec<ObjectId> {
        let mut missing = self.missing_on_disk_once(ids);
        for pause_ms in [20, 60] {
            if missing.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(pause_ms));
            missing = self.missing_on_disk_once(&missing);
        }
        missing
    }

    fn missing_on_disk_once(&self, ids: &[ObjectId]) -> Vec<ObjectId> {
        use gix::objs::Exists as _;
        let dir = self.objects_dir();
        let not_loose: Vec<ObjectId> = ids
            .iter()
            .copied()
            .filter(|id| {
                let hex = id.to_hex().to_string();
                !dir.join(&hex[..2]).join(&hex[2..]).is_file()
            })
            .collect();
        if not_loose.is_empty() {
            return not_loose;
        }
        // An object store opened after the last change to the packs directory
        // sees the packs on disk (a repack that deletes one changes the
        // directory), so one is kept for as long as the directory stays as it
        // was: opening a store maps every pack index, which a fetch of 10,000
        // chains did once per chain. What it does not find is looked for in one
        // opened now.
        let stamp = super::packed::pack_dir_stamp(&dir);
        let mut slot = self.packs_view.lock().expect("packs view");
        let cached = match (&*slot, &stamp) {
            (Some((was, odb)), Some(now)) if was == now => Some(odb.clone()),
            _ => None,
        };
        let missing: Vec<ObjectId> = match &cached {
            Some(odb) => not_loose.into_iter().filter(|id| !odb.exists(id)).collect(),
            None => not_loose,
        };
        if missing.is_empty() {
            return missing;
        }
        let Ok(fresh) = gix::odb::at(dir.clone(), self.repo.object_hash()) else {
            return missing;
        };
        let missing = missing.into_iter().filter(|id| !fresh.exists(id)).collect();
        *slot = stamp.map(|s| (s, fresh));
        missing
    }

    /// Whether a `git gc` that started at or before `since` is running here: its
    /// `gc.pid` (which git holds for the whole run, repack and prune included)
    /// is dated no later than `since`, is younger than the 12 hours after which
    /// git itself calls it stale, and names no dead process of this host. Such a
    /// gc may have listed the refs before an update at `since`, and delete the
    /// objects the update named.
    pub(crate) fn gc_running_since(&self, since: std::time::SystemTime) -> bool {
        let pid_file = self.repo.common_dir().join("gc.pid");
        let Ok(modified) = std::fs::metadata(&pid_file).and_then(|m| m.modified()) else {
            return false;
        };
        if modified > since
            || modified
                .elapsed()
                .is_ok_and(|age| age > std::time::Duration::from_secs(12 * 3600))
        {
            return false;
        }
        let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
        let mut words = text.split_whitespace();
        if let (Some(pid), Some(host)) = (words.next(), words.next())
            && host == crate::host_name()
            && !std::path::Path::new("/proc").join(pid).exists()
            && std::path::Path::new("/proc/self").exists()
        {
            return false;
        }
        true
    }

    /// Wait (at most [`GC_WAIT`]) until no gc that started at or before `since`
    /// is running (see [`Store::gc_running_since`]).
    pub(crate) fn wait_for_gc_started_before(&self, since: std::time::SystemTime) {
        let start = std::time::Instant::now();
        while start.elapsed() < GC_WAIT && self.gc_running_since(since) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// After `refname` was moved to name `written`: check that every one of them
    /// is on disk, and write again what a concurrent prune deleted, until all
    /// stay (bounded). `Err` names what could not be kept.
    pub(crate) fn keep_written(
        &self,
        refname: &str,
        written: &[Written],
    ) -> Result<(), StoreError> {
        let ids: Vec<ObjectId> = written.iter().map(|w| w.id).collect();
        for attempt in 1..=ATTEMPTS {
            let missing = self.missing_on_disk(&ids);
            if missing.is_empty() {
                return Ok(());
            }
            if attempt == ATTEMPTS {
                let what = written
                    .iter()
                    .filter(|w| missing.contains(&w.id))
                    .map(|w| format!("{} {}", w.what, w.id))
                    .collect::<Vec<_>>()
                    .join(", ");
                // the caller puts the ref back, and says whether it could
                return Err(StoreError::ObjectsPruned {
                    refname: refname.to_owned(),
                    what,
                    attempts: ATTEMPTS,
                    put_back: false,
                });
            }
            for w in written.iter().filter(|w| missing.contains(&w.id)) {
                self.write_loose(w)?;
            }
            pause(attempt);
        }
        Ok(())
    }

    /// Move `refname` to `new` by compare-and-swap against `old` (`None`: it must
    /// not exist), logging the update in the ref's reflog, which is created if
    /// need be: gc keeps every object a reflog names.
    pub(crate) fn update_logged_ref(
        &self,
        refname: &str,
        old: Option<ObjectId>,
        new: ObjectId,
        message: &str,
    ) -> Result<(), gix::Error> {
        self.logged_ref_update(refname, old, new, message)?;
        Ok(())
    }

    /// [`Store::update_logged_ref`], answering whether the ref was there
    /// before (gix's answer: the applied edit expects what it found).
    fn logged_ref_update(
        &self,
        refname: &str,
        old: Option<ObjectId>,
        new: ObjectId,
        message: &str,
    ) -> Result<bool, gix::Error> {
        let edit = logged_edit(refname, old, new, message)?;
        let applied = self.edit_refs_mended(&[refname], vec![edit])?;
        self.harden_ref(refname);
        Ok(applied.iter().any(|e| {
            matches!(
                &e.change,
                Change::Update {
                    expected: PreviousValue::MustExistAndMatch(_),
                    ..
                }
            )
        }))
    }

    /// [`Store::update_logged_ref`] that moved the ref itself: an error, as a
    /// lost race is, when `old` is `None` and the ref was there already. gix
    /// takes "must not exist" as met by a ref that already names `new`, and
    /// two writers of a chain's first entry in one millisecond build the very
    /// same commit (the same body, a deterministic signature, the same
    /// second): both would report it as their own, and one receipt would stand
    /// for two runs. The one that did not create the ref builds on it instead.
    pub(crate) fn move_logged_ref(
        &self,
        refname: &str,
        old: Option<ObjectId>,
        new: ObjectId,
        message: &str,
    ) -> Result<(), gix::Error> {
        let existed = self.logged_ref_update(refname, old, new, message)?;
        if old.is_none() && existed {
            return Err(gix::Error::from_error(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{refname} was created by another writer, at the same entry"),
            )));
        }
        Ok(())
    }

    /// [`Store::update_logged_ref`] of many refs (name, expected, new, reflog
    /// message) in one transaction: one lock file a ref and one `packed-refs`
    /// lock, where a ref at a time took both for each (most of what a fetch
    /// from a hundred writers spent moving refs). `false` when the transaction
    /// failed and nothing moved (a ref moved meanwhile): the caller moves each
    /// alone, so that each answers as it would have.
    ///
    /// mutants: `false` for the body is equivalent in answers (each ref then
    /// moves alone, with the same reflog line); only the time moves
    /// (`benches/year.rs`).
    pub(crate) fn update_logged_refs_at_once(&self, moves: &[RefMove<'_>]) -> bool {
        let Ok(edits) = moves
            .iter()
            .map(|&(name, old, new, message)| logged_edit(name, old, new, message))
            .collect::<Result<Vec<_>, _>>()
        else {
            return false;
        };
        let names: Vec<&str> = moves.iter().map(|m| m.0).collect();
        if self.edit_refs_mended(&names, edits).is_err() {
            return false;
        }
        for name in names {
            self.harden_ref(name);
        }
        true
    }

    /// Apply `edits` to the refs `names` in one transaction, with their reflog
    /// lines mended around it: a line a failed append left half-written would
    /// be glued to the next one, so it is cut off before, and again when this
    /// edit fails (gix writes a reflog line in pieces, and a full disk can stop
    /// it half-way; the refs did not move).
    pub(crate) fn edit_refs_mended(
        &self,
        names: &[&str],
        edits: Vec<gix::refs::transaction::RefEdit>,
    ) -> Result<Vec<gix::refs::transaction::RefEdit>, gix::Error> {
        for name in names {
            self.mend_reflog(name);
        }
        super::refs_may_have_moved();
        // Dated by the clock, as the chain commits are (`tool_signature`), not by
        // `GIT_COMMITTER_DATE`: gc expires reflog entries by their date, and one
        // dated in the past would protect nothing.
        let sig = super::tool_signature();
        let mut time = gix::date::parse::TimeBuf::default();
        match self
            .repo
            .edit_references_as(edits, Some(sig.to_ref(&mut time)))
        {
            Ok(applied) => Ok(applied),
            Err(e) => {
                for name in names {
                    self.mend_reflog(name);
                }
                Err(e)
            }
        }
    }

    /// Cut `refname`'s reflog back to its last whole line, under the ref's
    /// lock, when it ends mid-line: what an append that failed half-way (gix
    /// writes a line in several writes) leaves. git skips such a line, but the
    /// next append would be glued to it, and the entry it names (which keeps
    /// its objects from gc) would be lost. Best effort: a reflog that cannot be
    /// read or cut is left as it is.
    pub(crate) fn mend_reflog(&self, refname: &str) {
        let path = self.repo.common_dir().join("logs").join(refname);
        if !ends_mid_line(&path) {
            return;
        }
        self.holding_ref_lock(refname, std::time::Duration::from_secs(2), || {
            if ends_mid_line(&path) {
                let _ = cut_to_last_line(&path);
            }
        });
    }

    /// Hold `refname`'s lock file (`<ref>.lock`, the one git and gix take to
    /// move it) while `f` runs, waiting at most `wait` for it. A writer's last
    /// look at its new entry runs under it, and a reader's restore from the
    /// reflog decides under it ([`Store::restore_from_reflog`]), so the two
    /// exclude each other: no reader puts the ref back below an entry whose
    /// writer has just found it whole and reports it written. `None` when the
    /// lock stayed taken.
    pub(crate) fn holding_ref_lock<T>(
        &self,
        refname: &str,
        wait: std::time::Duration,
        f: impl FnOnce() -> T,
    ) -> Option<T> {
        let common = self.repo.common_dir();
        let _lock = gix::lock::Marker::acquire_to_hold_resource(
            common.join(refname),
            gix::lock::acquire::Fail::AfterDurationWithBackoff(wait),
            Some(common.to_owned()),
            0,
        )
        .ok()?;
        Some(f())
    }

    /// Undo an update of `refname` from `to` to `from` whose objects could not be
    /// kept: back to `to`, or deleted when it did not exist. Best effort: if
    /// another writer moved it since, it is left as it is (a reader restores a
    /// tip that names missing objects from the reflog). Whether it was put back.
    pub(crate) fn put_ref_back(
        &self,
        refname: &str,
        from: ObjectId,
        to: Option<ObjectId>,
        message: &str,
    ) -> bool {
        let undone = match to {
            Some(to) => self.update_logged_ref(refname, Some(from), to, message),
            None => refname
                .try_into()
                .map_err(gix::Error::from_error)
                .and_then(|name: gix::refs::FullName| {
                    super::refs_may_have_moved();
                    self.repo.edit_reference(RefEdit {
                        change: Change::Delete {
                            expected: PreviousValue::MustExistAndMatch(gix::refs::Target::Object(
                                from,
                            )),
                            log: RefLog::AndReference,
                        },
                        name,
                        deref: false,
                    })
                })
                .map(drop),
        };
        undone.is_ok()
    }

    /// The objects of chain entry `commit` (the commit, its tree and the tree's
    /// blobs) and its parent commit, as far as they can be read here.
    pub(crate) fn entry_objects(&self, commit: ObjectId) -> Vec<ObjectId> {
        let mut out = vec![commit];
        let Ok(c) = self.repo.find_commit(commit) else {
            return out;
        };
        out.extend(c.parent_ids().map(|p| p.detach()));
        let Ok(tree) = c.tree_id() else {
            return out;
        };
        out.push(tree.detach());
        if let Ok(tree) = self.repo.find_tree(tree)
            && let Ok(decoded) = tree.decode()
        {
            out.extend(decoded.entries.iter().map(|e| e.oid.to_owned()));
        }
        out
    }

    /// Whether the objects of chain entry `tip` are all on disk: what a reader
    /// checks of a chain's tip before it trusts the chain's ref.
    pub(crate) fn tip_is_whole(&self, tip: ObjectId) -> bool {
        self.repo.has_object(tip) && self.missing_on_disk(&self.entry_objects(tip)).is_empty()
    }

    /// Put a chain or notes ref whose tip `missing` lacks objects on disk back on
    /// the newest entry of its reflog whose objects are all here, saying so.
    /// A writer whose objects a prune deleted writes them again within
    /// milliseconds, so this first waits [`RESTORE_GRACE`] for the tip to become
    /// whole (or the ref to move). `None` when the ref is no such ref, the tip
    /// became whole, or no entry is (the caller reports the missing object).
    pub(crate) fn restore_from_reflog(&self, refname: &str, missing: ObjectId) -> Option<ObjectId> {
        if !self.overrides.is_empty() || self._quarantine_view.is_some() {
            return None;
        }
        let (writer, is_chain) = if let Some(w) = refname.strip_prefix(CHAIN_PREFIX) {
            (w, true)
        } else {
            (refname.strip_prefix(NOTES_PREFIX)?, false)
        };
        if !crate::receipt::is_valid_writer_id(writer) {
            return None;
        }
        let whole = |c: ObjectId| {
            if is_chain {
                self.chain_is_whole(writer, c)
            } else {
                self.missing_on_disk(&self.entry_objects(c)).is_empty()
            }
        };
        let objects_of = |c: ObjectId| {
            if is_chain {
                self.entry_objects(c)
            } else {
                vec![c]
            }
        };
        let start = std::time::Instant::now();
        loop {
            let now = self.repo.try_find_reference(refname).ok()??;
            let now = now.target().try_id()?.to_owned();
            if now != missing {
                return None;
            }
            if self.repo.has_object(missing)
                && self.missing_on_disk(&objects_of(missing)).is_empty()
            {
                return None;
            }
            // the writer may be waiting for a gc to finish before it writes
            // them again: wait for that gc too, then a little longer
            let waited = start.elapsed();
            if waited > GC_WAIT + RESTORE_GRACE
                || (waited > RESTORE_GRACE && !self.gc_running_since(std::time::SystemTime::now()))
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        let r = self.repo.try_find_reference(refname).ok()??;
        let mut candidates: Vec<ObjectId> = Vec::new();
        {
            let mut platform = r.log_iter();
            let entries = platform.rev().ok()??;
            for line in entries.flatten() {
                let id = line.new_oid.to_owned();
                if id != missing && !id.is_null() && !candidates.contains(&id) {
                    candidates.push(id);
                }
            }
        }
        // a second opinion from a store opened afresh: this process's object
        // store may list the packs as they were before a concurrent repack, and
        // every entry skipped here is lost from the chain
        let fresh_whole = |c: ObjectId| {
            let Ok(fresh) = Store::open(self.repo.path()) else {
                return false;
            };
            if is_chain {
                fresh.chain_is_whole(writer, c)
            } else {
                fresh.missing_on_disk(&fresh.entry_objects(c)).is_empty()
            }
        };
        let restored = newest_whole(&candidates, whole, fresh_whole)?;
        super::crash_point("restore-decided");
        // Decide under the ref's lock, taken by preparing the update: a writer
        // that wrote the tip's objects again and found them whole did so under
        // the same lock, and has reported its receipt written; then the tip is
        // whole now, and stays.
        let sig = super::tool_signature();
        let mut time = gix::date::parse::TimeBuf::default();
        let edit = logged_edit(
            refname,
            Some(missing),
            restored,
            "git-receipt: restored from the reflog (the tip was pruned)",
        )
        .ok()?;
        let prepared = self
            .repo
            .refs
            .transaction()
            .prepare(
                Some(edit),
                gix::lock::acquire::Fail::AfterDurationWithBackoff(RESTORE_GRACE),
                gix::lock::acquire::Fail::AfterDurationWithBackoff(RESTORE_GRACE),
            )
            .ok()?;
        if self.repo.has_object(missing) && self.missing_on_disk(&objects_of(missing)).is_empty() {
            // dropping the prepared transaction releases the lock, changing nothing
            return None;
        }
        super::refs_may_have_moved();
        if prepared.commit(Some(sig.to_ref(&mut time))).is_err() {
            self.mend_reflog(refname);
            return None;
        }
        self.harden_ref(refname);
        // The entries that name what the prune took are no history: drop them
        // as git's own tool does, so that `git fsck` finds no broken reflog.
        let _ = self.run_git(&[
            "reflog",
            "expire",
            "--stale-fix",
            "--expire=never",
            "--expire-unreachable=never",
            refname,
        ]);
        let (code, lost) = if is_chain {
            let index = self
                .chain_entry(writer, restored)
                .map(|e| e.receipt.body().chain.index)
                .ok();
            (
                "chain-restored-from-reflog",
                format!(
                    "; its tip (index {}) is now {restored}, and receipts written after it are lost: run their checks again",
                    index.map_or_else(|| "?".to_owned(), |i| i.to_string())
                ),
            )
        } else {
            (
                "notes-restored-from-reflog",
                "; `git receipt reindex` completes the notes from the chain".to_owned(),
            )
        };
        self.notice(
            Notice::warning(
                code,
                format!(
                    "{} pointed at {missing}, whose objects a concurrent `git gc --prune=now` (or `git prune`, `git repack -ad`) deleted; restored it from its reflog to {restored}, the newest entry whose objects are all here{lost}",
                    crate::text::escape(refname)
                ),
            )
            .about(refname.to_owned()),
        );
        Some(restored)
    }

    /// Whether every entry of `writer`'s chain from `tip` to its root is on disk
    /// and readable.
    fn chain_is_whole(&self, writer: &str, tip: ObjectId) -> bool {
        let mut objects = Vec::new();
        let walked = self.walk_chain(writer, tip, |e| {
            objects.extend(self.entry_objects(e.commit));
            Ok(true)
        });
        walked.is_ok() && self.missing_on_disk(&objects).is_empty()
    }

    /// Whether `refname` names `commit` or an entry above it (another writer
    /// appended since): `false` when a reader put the ref back below it.
    /// `Err` (a missing object) when the walk met a hole, which a concurrent
    /// prune leaves for a moment.
    pub(crate) fn ref_holds(&self, refname: &str, commit: ObjectId) -> Result<bool, StoreError> {
        let Ok(Some(r)) = self.repo.try_find_reference(refname) else {
            return Ok(false);
        };
        let mut next = r.target().try_id().map(|id| id.to_owned());
        // a few hundred appends between this write and the look are plenty
        for _ in 0..512 {
            let Some(id) = next else { return Ok(false) };
            if id == commit {
                return Ok(true);
            }
            let c = self
                .repo
                .find_commit(id)
                .map_err(|_| StoreError::RefToMissingObject {
                    refname: refname.to_owned(),
                    id,
                })?;
            next = c.parent_ids().next().map(|p| p.detach());
        }
        Ok(false)
    }
}

/// One ref to move: its name, the value it must have, the new one, and the
/// reflog message.
pub(crate) type RefMove<'a> = (&'a str, Option<ObjectId>, ObjectId, &'a str);

/// The reflog edit that moves `refname` from `old` (`None`: it must not exist)
/// to `new`, creating the reflog if need be.
fn logged_edit(
    refname: &str,
    old: Option<ObjectId>,
    new: ObjectId,
    message: &str,
) -> Result<RefEdit, gix::Error> {
    let expected = match old {
        None => PreviousValue::MustNotExist,
        Some(t) => PreviousValue::MustExistAndMatch(gix::refs::Target::Object(t)),
    };
    let name: gix::refs::FullName = refname.try_into().map_err(gix::Error::from_error)?;
    Ok(RefEdit {
        change: Change::Update {
            log: LogChange {
                mode: RefLog::AndReference,
                force_create_reflog: true,
                message: message.into(),
            },
            expected,
            new: gix::refs::Target::Object(new),
        },
        name,
        deref: false,
    })
}

/// How many times, and how far apart, a restore looks again at an entry that
/// seemed not whole, in a store opened afresh, before it takes an older one.
const RELOOKS: u32 = 8;
const RELOOK_PAUSE: std::time::Duration = std::time::Duration::from_millis(150);

/// The first of `candidates` (newest first) that is `whole`. Each one found not
/// whole is looked at again, [`RELOOKS`] times over about a second, with
/// `fresh_whole` (a store opened anew) before an older one is taken: a look that
/// falls between two steps of a concurrent repack, or reads through a view of
/// the packs from before it, can miss objects that are there, and every entry
/// skipped here is lost from the chain (with everything above it, since an
/// entry is whole only with its whole chain below).
fn newest_whole(
    candidates: &[ObjectId],
    whole: impl Fn(ObjectId) -> bool,
    fresh_whole: impl Fn(ObjectId) -> bool,
) -> Option<ObjectId> {
    candidates.iter().copied().find(|&c| {
        whole(c)
            || (0..RELOOKS).any(|_| {
                std::thread::sleep(RELOOK_PAUSE);
                fresh_whole(c)
            })
    })
}

/// Whether `e` says an object was missing: what a reader meets in the moment
/// between a concurrent prune's deleting a write's objects and their writer's
/// writing them again.
pub(crate) fn is_missing_object(e: &StoreError) -> bool {
    match e {
        StoreError::RefToMissingObject { .. } | StoreError::ChainHoled { .. } => true,
        StoreError::CorruptChain { reason, .. } | StoreError::NotYourTip { reason, .. } => {
            reason.contains("could not be found")
        }
        other => other.to_string().contains("could not be found"),
    }
}

impl Store {
    /// Run `step` again (a few times) while it fails on a missing object, each
    /// time after any gc running now has finished and the writers it hurt had
    /// [`RESTORE_GRACE`] to write their objects again.
    pub(crate) fn retry_missing<T>(
        &self,
        mut step: impl FnMut() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match step() {
                Err(e) if attempt < 4 && is_missing_object(&e) => {
                    self.wait_for_gc_started_before(std::time::SystemTime::now());
                    std::thread::sleep(RESTORE_GRACE / 4);
                }
                other => return other,
            }
        }
    }
}

/// Whether the file at `path` exists, is not empty, and does not end with a
/// newline.
fn ends_mid_line(path: &std::path::Path) -> bool {
    use std::os::unix::fs::FileExt as _;
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut last = [0u8; 1];
    len > 0 && f.read_exact_at(&mut last, len - 1).is_ok() && last[0] != b'\n'
}

/// Truncate the file at `path` just after its last newline (to nothing when it
/// has none), reading it backwards a block at a time.
fn cut_to_last_line(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let mut end = f.metadata()?.len();
    let mut block = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let part = &mut block[..(end - start) as usize];
        f.read_exact_at(part, start)?;
        if let Some(i) = part.iter().rposition(|&b| b == b'\n') {
            return f.set_len(start + i as u64 + 1);
        }
        end = start;
    }
    f.set_len(0)
}

/// Whether `e` or any error under it is a "No such file or directory".
fn error_chain_has_not_found(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::NotFound
        {
            return true;
        }
        if c.to_string().contains("No such file or directory") {
            return true;
        }
        cause = c.source();
    }
    false
}

/// `e` and every cause under it, joined: gix's outer message alone says only
/// "failed to persist temporary file".
fn full_message(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = c.source();
    }
    parts.join(": ")
}

/// A short pause that grows with `attempt` (5 ms, 10 ms, ... 160 ms), between
/// tries at something a concurrent gc or repack is in the middle of.
fn pause(attempt: u32) {
    std::thread::sleep(std::time::Duration::from_millis(5 << attempt.min(5)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freshness::rules::git_in as git;

    /// (loose objects, packs) in the repository at `dir`, as `git count-objects -v` counts them.
    fn objects_here(dir: &std::path::Path) -> (usize, usize) {
        let counts = git(dir, &["count-objects", "-v"]);
        let field = |name: &str| {
            counts
                .lines()
                .find_map(|l| l.strip_prefix(name)?.parse().ok())
                .unwrap_or_else(|| panic!("no {name:?} in {counts}"))
        };
        (field("count: "), field("packs: "))
    }

    /// `n` objects of every kind put in a batch, in a repository of `format`.
    fn batch_of(format: &str, n: usize) -> (tempfile::TempDir, Store, Vec<Written>) {
        let tmp = tempfile::tempdir().unwrap();
        git(
            tmp.path(),
            &["init", "-q", &format!("--object-format={format}")],
        );
        let store = Store::open(tmp.path()).unwrap();
        store.begin_object_batch();
        assert!(store.batching());
        let mut put = Vec::new();
        for i in 0..n {
            // one large enough to need several size bytes in its pack header
            let text = if i == 0 {
                "x".repeat(70_000)
            } else {
                format!("note {i}\n")
            };
            let blob = store
                .put_kept_object("a note", gix::objs::Kind::Blob, text.into_bytes())
                .unwrap();
            put.push(blob.clone());
            if i % 50 == 0 {
                let tree = gix::objs::Tree {
                    entries: vec![gix::objs::tree::Entry {
                        mode: gix::objs::tree::EntryKind::Blob.into(),
                        filename: "n".into(),
                        oid: blob.id,
                    }],
                };
                let (kind, bytes) = encode(&tree);
                let tree = store.put_kept_object("a notes tree", kind, bytes).unwrap();
                let sig = crate::store::tool_signature();
                let commit = gix::objs::Commit {
                    tree: tree.id,
                    parents: Default::default(),
                    author: sig.clone(),
                    committer: sig,
                    encoding: None,
                    message: "m\n".into(),
                    extra_headers: Vec::new(),
                };
                let (kind, bytes) = encode(&commit);
                put.push(tree);
                put.push(
                    store
                        .put_kept_object("a notes commit", kind, bytes)
                        .unwrap(),
                );
            }
        }
        // the same object again is held once
        store
            .put_object("a note", gix::objs::Kind::Blob, b"note 1\n".to_vec())
            .unwrap();
        assert_eq!(store.batched(), put.len());
        (tmp, store, put)
    }

    /// `objects` as [`write_pack`] streams them, into memory.
    fn streamed(
        objects: &[Written],
        hash: gix::hash::Kind,
        threads: usize,
        part_bytes: usize,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        write_pack(objects, hash, threads, part_bytes, &mut out).unwrap();
        out
    }

    /// A pack deflated on several threads is byte for byte the pack one
    /// thread makes, built whole or streamed (and stock git reads it: the
    /// tests below).
    #[test]
    fn a_pack_deflated_on_many_threads_is_the_pack_one_thread_makes() {
        let (_tmp, _store, put) = batch_of("sha1", 600);
        let one = encode_pack_on(&put, gix::hash::Kind::Sha1, 1);
        for threads in [2, 3, 8] {
            assert!(
                encode_pack_on(&put, gix::hash::Kind::Sha1, threads) == one,
                "{threads} threads"
            );
            assert!(
                streamed(&put, gix::hash::Kind::Sha1, threads, PACK_PART_BYTES) == one,
                "streamed on {threads} threads"
            );
        }
        assert!(one.len() > 600 * 10);
    }

    /// A pack streamed part by part, whatever the size of a part and however
    /// many threads deflate each, is byte for byte the pack built whole in
    /// memory, trailer included, in either hash.
    #[test]
    fn a_pack_streamed_part_by_part_is_the_pack_made_whole() {
        for format in ["sha1", "sha256"] {
            let (_tmp, store, put) = batch_of(format, 3000);
            let hash = store.repo.object_hash();
            let whole = encode_pack_on(&put, hash, 1);
            // parts of 16 KiB: the large first object alone, then parts large
            // enough to be deflated on several threads
            assert_eq!(part_len(&put, 16 << 10), 1);
            let second = part_len(&put[1..], 16 << 10);
            assert!((512..put.len() / 2).contains(&second), "{second}");
            for part_bytes in [1, 16 << 10, PACK_PART_BYTES] {
                for threads in [1, 2, 8] {
                    assert!(
                        streamed(&put, hash, threads, part_bytes) == whole,
                        "{format}: parts of {part_bytes} bytes on {threads} threads"
                    );
                }
            }
        }
    }

    /// Objects that do not compress, `n` of `size` bytes each.
    fn noise(n: usize, size: usize) -> Vec<Vec<u8>> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..n)
            .map(|_| {
                (0..size)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect()
            })
            .collect()
    }

    /// A pack written in many parts, each deflated on several threads, with
    /// its indexes, is read by stock git, which reads every object as it was
    /// put and finds the repository whole, in either hash.
    #[test]
    fn a_pack_written_in_parts_is_read_by_stock_git_in_either_hash() {
        for format in ["sha1", "sha256"] {
            let (tmp, store, mut put) = batch_of(format, 3000);
            // and some that do not compress: more than a pipe holds
            for bytes in noise(40, 8 << 10) {
                put.push(
                    store
                        .put_kept_object("a log", gix::objs::Kind::Blob, bytes)
                        .unwrap(),
                );
            }
            assert!(store.write_packed(&put, 16 << 10), "{format}");
            assert_eq!(objects_here(tmp.path()), (0, 1), "{format}");
            for w in [&put[0], &put[1], &put[1500], &put[put.len() - 1]] {
                let kind = git(tmp.path(), &["cat-file", "-t", &w.id.to_string()]);
                assert_eq!(kind.trim(), w.kind.to_string(), "{format}");
            }
            let listed = git(
                tmp.path(),
                &["cat-file", "--batch-all-objects", "--batch-check"],
            );
            assert_eq!(listed.lines().count(), put.len(), "{format}");
            git(tmp.path(), &["fsck", "--strict"]);
        }
    }

    /// The index and reverse index written beside a pack are byte for byte
    /// what `git index-pack --rev-index` writes for the same pack, in either
    /// hash, and git's `verify-pack` finds every object where the index says;
    /// a pack the same objects make again is the one already in place.
    #[test]
    fn a_pack_s_indexes_are_the_bytes_stock_git_writes_for_it_in_either_hash() {
        for format in ["sha1", "sha256"] {
            let (tmp, store, put) = batch_of(format, 1500);
            assert!(store.write_packed(&put, 16 << 10), "{format}");
            let dir = tmp.path().join(".git/objects/pack");
            let named = |ext: &str| -> Vec<std::path::PathBuf> {
                std::fs::read_dir(&dir)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .filter(|p| p.extension().is_some_and(|e| e == ext))
                    .collect()
            };
            let (packs, idxs, revs) = (named("pack"), named("idx"), named("rev"));
            assert_eq!((packs.len(), idxs.len(), revs.len()), (1, 1, 1), "{format}");
            // no temporary file is left
            assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3, "{format}");
            let theirs = tmp.path().join("theirs.idx");
            git(
                tmp.path(),
                &[
                    "index-pack",
                    "--rev-index",
                    "-o",
                    theirs.to_str().unwrap(),
                    packs[0].to_str().unwrap(),
                ],
            );
            let read = |p: &std::path::Path| std::fs::read(p).unwrap();
            assert!(read(&idxs[0]) == read(&theirs), "{format}: the .idx");
            assert!(
                read(&revs[0]) == read(&theirs.with_extension("rev")),
                "{format}: the .rev"
            );
            let listing = git(
                tmp.path(),
                &["verify-pack", "-v", idxs[0].to_str().unwrap()],
            );
            for w in &put {
                let line = listing
                    .lines()
                    .find(|l| l.starts_with(&w.id.to_string()))
                    .unwrap_or_else(|| panic!("{format}: {} not listed", w.id));
                assert_eq!(
                    line.split_whitespace().nth(1),
                    Some(w.kind.to_string().as_str()),
                    "{line}"
                );
            }
            // written again: the pack in place stands, nothing added
            assert!(store.write_packed(&put, PACK_PART_BYTES), "{format}");
            assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3, "{format}");
            git(tmp.path(), &["fsck", "--strict"]);
        }
    }

    /// Offsets from 2 GiB on go to the index's table of large offsets, in the
    /// order of the ids that need them, as the format (gitformat-pack(5))
    /// lays them out; the small ones stay in the table of four bytes.
    #[test]
    fn offsets_past_two_gib_go_to_the_table_of_large_offsets() {
        let (_tmp, _store, put) = batch_of("sha1", 3);
        let objects = &put[..3];
        let big = 0x8000_0000u64;
        // 2 GiB itself is the first offset of the large table
        let placed = [(12, 7), (big, 8), (big * 3, 9)];
        let sum = gix::ObjectId::null(gix::hash::Kind::Sha1);
        let (idx, rev) = pack_indexes(objects, &placed, &sum, gix::hash::Kind::Sha1).unwrap();
        let mut sorted: Vec<usize> = (0..3).collect();
        sorted.sort_by_key(|&i| objects[i].id);
        let body = 8 + 1024 + 3 * 20;
        let word = |at: usize| u32::from_be_bytes(idx[at..at + 4].try_into().unwrap());
        let crcs: Vec<u32> = (0..3).map(|k| word(body + 4 * k)).collect();
        let offsets: Vec<u32> = (0..3).map(|k| word(body + 12 + 4 * k)).collect();
        let large = |k: usize| {
            let at = body + 24 + 8 * k;
            u64::from_be_bytes(idx[at..at + 8].try_into().unwrap())
        };
        let mut next_large = 0;
        for (k, &i) in sorted.iter().enumerate() {
            assert_eq!(crcs[k], placed[i].1);
            if i == 0 {
                assert_eq!(offsets[k], 12);
            } else {
                assert_eq!(offsets[k], 0x8000_0000 | next_large);
                assert_eq!(large(next_large as usize), placed[i].0);
                next_large += 1;
            }
        }
        // two large offsets, then the two checksums
        assert_eq!(idx.len(), body + 24 + 16 + 40);
        assert_eq!(rev.len(), 12 + 12 + 40);
        // two objects of one id: no index
        let twice = [objects[0].clone(), objects[0].clone()];
        assert!(pack_indexes(&twice, &placed[..2], &sum, gix::hash::Kind::Sha1).is_err());
    }

    /// When git stops reading the pack half-way (here it cannot create its
    /// temporary pack file, and dies before it reads any), the feed meets a
    /// broken pipe: no panic and no wait, and every object is written loose
    /// instead, where stock git reads it.
    #[test]
    fn a_pack_git_stops_reading_is_written_loose_instead() {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q"]);
        let store = Store::open(tmp.path()).unwrap();
        store.begin_object_batch();
        let mut put = Vec::new();
        for bytes in noise(PACK_AT_LEAST + 100, 8 << 10) {
            put.push(
                store
                    .put_kept_object("a log", gix::objs::Kind::Blob, bytes)
                    .unwrap(),
            );
        }
        let pack_dir = tmp.path().join(".git/objects/pack");
        std::fs::remove_dir(&pack_dir).unwrap();
        std::fs::write(&pack_dir, "not a directory").unwrap();
        let written = store.end_object_batch().unwrap();
        std::fs::remove_file(&pack_dir).unwrap();
        std::fs::create_dir(&pack_dir).unwrap();
        assert_eq!(written.len(), put.len());
        assert_eq!(objects_here(tmp.path()), (put.len(), 0));
        for w in [&put[0], &put[put.len() - 1]] {
            let size = git(tmp.path(), &["cat-file", "-s", &w.id.to_string()]);
            assert_eq!(size.trim(), (8 << 10).to_string());
        }
        git(tmp.path(), &["fsck", "--strict"]);
    }

    #[test]
    fn a_batch_of_objects_is_written_as_one_pack_that_stock_git_reads_in_either_hash() {
        for format in ["sha1", "sha256"] {
            let (tmp, store, put) = batch_of(format, 600);
            // held back: not on disk yet
            assert!(!store.missing_on_disk(&[put[5].id]).is_empty(), "{format}");
            let written = store.end_object_batch().unwrap();
            assert!(!store.batching());
            assert_eq!(
                written.iter().map(|w| w.id).collect::<Vec<_>>(),
                put.iter().map(|w| w.id).collect::<Vec<_>>()
            );
            assert_eq!(objects_here(tmp.path()), (0, 1), "{format}");
            let ids: String = put.iter().map(|w| format!("{}\n", w.id)).collect();
            let mut child = std::process::Command::new("git")
                .args(["cat-file", "--batch"])
                .current_dir(tmp.path())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            std::io::Write::write_all(&mut child.stdin.take().unwrap(), ids.as_bytes()).unwrap();
            let out = child.wait_with_output().unwrap().stdout;
            let mut expected = Vec::new();
            for w in &put {
                expected.extend_from_slice(
                    format!("{} {} {}\n", w.id, w.kind, w.bytes.len()).as_bytes(),
                );
                expected.extend_from_slice(&w.bytes);
                expected.push(b'\n');
            }
            assert!(
                out == expected,
                "{format}: stock git reads every object as put"
            );
            git(tmp.path(), &["fsck", "--strict"]);
            // this process reads them too
            assert!(store.missing_on_disk(&[put[5].id]).is_empty(), "{format}");
            let note1 = put.iter().find(|w| w.bytes == b"note 1\n").unwrap().id;
            assert_eq!(store.repo.find_blob(note1).unwrap().data, b"note 1\n");
        }
    }

    /// An object already here (loose, or in a pack) that a batch is given
    /// again is held and written in the batch's pack: not asked for, and git
    /// takes the pack, reads the object, and finds the repository whole.
    #[test]
    fn a_batch_holds_objects_already_here_and_git_takes_its_pack() {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q"]);
        let store = Store::open(tmp.path()).unwrap();
        let loose = store
            .put_kept_object("a note", gix::objs::Kind::Blob, b"here loose\n".to_vec())
            .unwrap();
        let packed = store
            .put_kept_object("a note", gix::objs::Kind::Blob, b"here packed\n".to_vec())
            .unwrap();
        // the second into a pack of its own, the first left loose
        let mut child = std::process::Command::new("git")
            .args(["pack-objects", "-q", ".git/objects/pack/pack"])
            .current_dir(tmp.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::io::Write::write_all(
            &mut child.stdin.take().unwrap(),
            format!("{}\n", packed.id).as_bytes(),
        )
        .unwrap();
        assert!(child.wait().unwrap().success());
        std::fs::remove_file(
            tmp.path()
                .join(".git/objects")
                .join(&packed.id.to_hex().to_string()[..2])
                .join(&packed.id.to_hex().to_string()[2..]),
        )
        .unwrap();
        let store = Store::open(tmp.path()).unwrap();
        store.begin_object_batch();
        let mut put = vec![
            store
                .put_kept_object("a note", gix::objs::Kind::Blob, b"here loose\n".to_vec())
                .unwrap(),
            store
                .put_kept_object("a note", gix::objs::Kind::Blob, b"here packed\n".to_vec())
                .unwrap(),
        ];
        for i in 0..PACK_AT_LEAST {
            put.push(
                store
                    .put_kept_object(
                        "a note",
                        gix::objs::Kind::Blob,
                        format!("new {i}\n").into_bytes(),
                    )
                    .unwrap(),
            );
        }
        assert_eq!((put[0].id, put[1].id), (loose.id, packed.id));
        assert_eq!(store.batched(), put.len(), "held, though here already");
        let written = store.end_object_batch().unwrap();
        assert_eq!(written.len(), put.len());
        assert_eq!(objects_here(tmp.path()), (1, 2), "the batch's pack taken");
        for w in &put {
            let shown = git(tmp.path(), &["cat-file", "-p", &w.id.to_string()]);
            assert_eq!(shown.as_bytes(), w.bytes.trim_ascii_end());
        }
        git(tmp.path(), &["fsck", "--strict"]);
    }

    /// Many refs move in one transaction, each with its reflog line, as stock
    /// git reads them; when one cannot (it moved meanwhile), each moves alone:
    /// those before it move, it answers with its error, none after it moves.
    #[test]
    fn refs_moved_together_or_one_by_one_answer_as_each_alone() {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q"]);
        git(tmp.path(), &["commit", "-q", "--allow-empty", "-m", "a"]);
        git(tmp.path(), &["commit", "-q", "--allow-empty", "-m", "b"]);
        let rev = |r: &str| {
            let out = git(tmp.path(), &["rev-parse", r]);
            ObjectId::from_hex(out.trim().as_bytes()).unwrap()
        };
        let (a, b) = (rev("HEAD~1"), rev("HEAD"));
        let store = Store::open(tmp.path()).unwrap();
        let names = ["refs/receipts/x", "refs/receipts/y", "refs/receipts/z"];
        let all: Vec<RefMove<'_>> = names.iter().map(|n| (*n, None, a, "m1")).collect();
        store.set_refs(&all).unwrap();
        for n in names {
            assert_eq!(rev(n), a);
            let log = git(tmp.path(), &["reflog", "show", "--format=%gs", n]);
            assert_eq!(log.trim(), "m1", "{n}");
        }
        // y is expected at b, where it is not: x moves, y refuses, z stays
        let moves: Vec<RefMove<'_>> = vec![
            (names[0], Some(a), b, "m2"),
            (names[1], Some(b), b, "m2"),
            (names[2], Some(a), b, "m2"),
        ];
        let err = store.set_refs(&moves).unwrap_err().to_string();
        assert!(err.contains("refs/receipts/y"), "{err}");
        assert_eq!((rev(names[0]), rev(names[1]), rev(names[2])), (b, a, a));
    }

    /// A batch holds what it is given without the spare room its bytes were
    /// grown with (a fetch's notes were a third larger held with it).
    #[test]
    fn an_object_held_in_a_batch_has_no_spare_room() {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q"]);
        let store = Store::open(tmp.path()).unwrap();
        store.begin_object_batch();
        let mut bytes = Vec::with_capacity(4096);
        bytes.extend_from_slice(b"a short note\n");
        let id = store
            .put_object("a note", gix::objs::Kind::Blob, bytes)
            .unwrap();
        let batch = store.object_batch.lock().unwrap();
        let held = &batch.as_ref().unwrap().objects;
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].id, id);
        assert_eq!(held[0].bytes.capacity(), held[0].bytes.len());
    }

    #[test]
    fn a_small_batch_is_written_loose_and_outside_a_batch_nothing_is_held() {
        let (tmp, store, put) = batch_of("sha1", 20);
        let written = store.end_object_batch().unwrap();
        assert_eq!(written.len(), put.len());
        assert_eq!(objects_here(tmp.path()), (put.len(), 0));
        assert!(store.end_object_batch().unwrap().is_empty());
        assert_eq!(store.batched(), 0);
        let w = store
            .put_object(
                "a note",
                gix::objs::Kind::Blob,
                b"straight to disk".to_vec(),
            )
            .unwrap();
        assert!(store.missing_on_disk(&[w]).is_empty());
    }

    fn pruned(put_back: bool) -> StoreError {
        StoreError::ObjectsPruned {
            refname: "refs/receipts/w".into(),
            what: "a chain commit 1234".into(),
            attempts: 5,
            put_back,
        }
    }

    #[test]
    fn a_pruned_write_says_nothing_was_stored_only_when_its_ref_was_put_back() {
        let back = pruned(false).after_put_back(true).to_string();
        assert!(
            back.contains("the ref was put back, so nothing was stored"),
            "{back}"
        );
        let left = pruned(true).after_put_back(false).to_string();
        assert!(!left.contains("nothing was stored"), "{left}");
        assert!(left.contains("could not be put back"), "{left}");
        assert!(
            left.contains("`git receipt log` shows whether it is"),
            "{left}"
        );
        // any other error passes through as it is
        let other = StoreError::NoCommit.after_put_back(true);
        assert!(matches!(other, StoreError::NoCommit));
    }

    #[test]
    fn a_reflog_line_left_half_written_is_cut_off_and_whole_lines_stay() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let whole = "a b c <d> 1 +0000\tone\nb c d <e> 2 +0000\ttwo\n";
        for (content, after) in [
            (format!("{whole}0123456789abcdef"), whole.to_owned()),
            (whole.to_owned(), whole.to_owned()),
            ("half a line".to_owned(), String::new()),
            (String::new(), String::new()),
            // longer than one block read backwards
            (format!("{whole}{}", "x".repeat(200_000)), whole.to_owned()),
        ] {
            std::fs::write(&log, &content).unwrap();
            if ends_mid_line(&log) {
                cut_to_last_line(&log).unwrap();
            }
            assert_eq!(
                std::fs::read_to_string(&log).unwrap(),
                after,
                "{content:.40}"
            );
        }
        assert!(!ends_mid_line(&dir.path().join("none")));
    }

    #[test]
    fn an_object_in_a_pack_deleted_since_the_last_look_is_missing() {
        let (dir, store) = empty_store();
        let blob = store.write_blob(b"packed, then gone").unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{args:?}: {out:?}");
        };
        // loose
        assert!(store.missing_on_disk(&[blob]).is_empty());
        // packed: found, and the store that found it is kept
        git(&["update-ref", "refs/keep", &blob.to_string()]);
        git(&["repack", "-adq"]);
        git(&["prune-packed"]);
        assert!(store.missing_on_disk(&[blob]).is_empty());
        assert!(store.missing_on_disk(&[blob]).is_empty(), "asked again");
        // the pack goes (as a concurrent repack deletes it): the kept store,
        // which still maps it, is not asked
        for f in std::fs::read_dir(dir.path().join(".git/objects/pack")).unwrap() {
            std::fs::remove_file(f.unwrap().path()).unwrap();
        }
        assert_eq!(store.missing_on_disk(&[blob]), vec![blob]);
    }

    /// A store on a new, empty repository (kept while the directory lives).
    fn empty_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let repo = gix::init(dir.path()).unwrap();
        (dir, Store::from_repo(repo).unwrap())
    }

    /// A chain's first entry is the writer's own only when its update created
    /// the ref: gix takes "must not exist" as met by a ref already naming the
    /// new value (two writers of one first entry in one millisecond build the
    /// same commit), and an append must then build on it instead. Any other
    /// move answers as `update_logged_ref` does.
    #[test]
    fn a_ref_another_writer_created_with_the_same_value_is_not_moved_by_this_one() {
        let (_dir, store) = empty_store();
        let a = store.write_blob(b"a").unwrap();
        let b = store.write_blob(b"b").unwrap();
        let name = "refs/receipts/w";
        store.move_logged_ref(name, None, a, "first").unwrap();
        // gix alone lets the same creation pass again
        store.update_logged_ref(name, None, a, "again").unwrap();
        let e = store.move_logged_ref(name, None, a, "again").unwrap_err();
        assert!(e.to_string().contains("created by another writer"), "{e}");
        assert!(store.move_logged_ref(name, None, b, "other").is_err());
        store.move_logged_ref(name, Some(a), b, "on top").unwrap();
        assert!(store.move_logged_ref(name, Some(a), b, "stale").is_err());
        assert_eq!(store.ref_value(name).unwrap(), Some(b));
    }

    #[test]
    fn a_ref_moved_by_another_process_is_not_put_back_and_says_so() {
        let (_dir, store) = empty_store();
        let a = store.write_blob(b"a").unwrap();
        let b = store.write_blob(b"b").unwrap();
        let c = store.write_blob(b"c").unwrap();
        let name = "refs/receipts/w";
        store.update_logged_ref(name, None, a, "t").unwrap();
        store.update_logged_ref(name, Some(a), b, "t").unwrap();
        // put back from b to a: it holds b, so it goes back
        assert!(store.put_ref_back(name, b, Some(a), "t"));
        assert_eq!(store.ref_value(name).unwrap(), Some(a));
        // another writer moved it to c: putting "b" back changes nothing
        store.update_logged_ref(name, Some(a), c, "t").unwrap();
        assert!(!store.put_ref_back(name, b, Some(a), "t"));
        assert_eq!(store.ref_value(name).unwrap(), Some(c));
        // a ref that did not exist before is deleted, when it still holds the write
        assert!(store.put_ref_back(name, c, None, "t"));
        assert_eq!(store.ref_value(name).unwrap(), None);
        assert!(!store.put_ref_back(name, c, None, "t"));
    }
}
