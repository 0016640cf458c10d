//! The receipt index: a local, derived map from object ids (subject commits and
//! inputs trees) to the chain entries about them.
//!
//! Decisions read chains, never notes (anyone who can push can rewrite a notes
//! ref), but reading every chain on every `gate` is too slow. So each repository
//! keeps this index beside its objects, the way git keeps the commit-graph: in the
//! git directory, never in a ref, never pushed or fetched, rebuilt from the chains
//! at any time (`git receipt reindex`), and brought up to date incrementally by any
//! command that reads it.
//!
//! # What the index may decide
//!
//! A decision opens, and checks the signature, trust and signed subject of, the
//! receipt that counts; but to stay fast it passes over the other candidates by
//! the fields recorded here (check name hash, definition, role, start time)
//! without opening them. So the index does decide which receipt is the newest
//! for a check: an index that relabels the newest failed receipt as another
//! check's makes the older passing one count. Its content is therefore trusted
//! only as far as it is known to come from the chains:
//!
//! - built in memory from the chains by this process: trusted;
//! - read from the file: trusted only when sealed by this user's own index key
//!   (see [`mac`]), which lives outside every repository
//!   (`~/.config/git-receipt/index-key`). A file sealed by anyone else (a
//!   repository copied from another user or machine, a restored CI cache,
//!   another user of a shared repository, or a forger who can write `.git` but
//!   not the user's config directory) fails its MAC and is never read: it is
//!   rebuilt from the chains, with a notice. Stale, torn, truncated and deleted
//!   files are rebuilt as well, and cost only time.
//! - `gate --verify` reads no file at all ([`Store::ignore_index_file`]): it
//!   decides from an index built in memory from the chains it has just
//!   verified, so even a leaked index key cannot change what it decides.
//! - the server's `pre-receive` hook reads the index file in the bare
//!   repository, which pushers cannot write (a push only adds objects and refs),
//!   sealed with the server account's own key; the pushed chains are indexed in
//!   memory on top of it and never written.
//!
//! Without a usable key (no HOME or XDG_CONFIG_HOME, a read-only config
//! directory, a key file open to other users) no file is read or written: every
//! command indexes the chains in memory, correct and slower.
//!
//! # File format (`<git dir>/receipt-index`, version 4, little-endian)
//!
//! ```text
//! header   32 bytes  "GRIX", version u32, chains u32, records u32, keys u32,
//!                    chain table length u32, id length u32 (N: 20 for SHA-1,
//!                    32 for SHA-256; 0, read as 20, in files written before
//!                    SHA-256 repositories were), 4 reserved bytes
//! chains   per chain: tip (N), entries indexed u64, name length u16, name
//! fanout   256 x u32 cumulative key counts by the key's first byte
//! keys     N + 4 bytes each, sorted: object id (N), record number u32 whose top
//!          bit says whether the object is the receipt's inputs tree (set) or its
//!          subject commit (clear)
//! records  N + 44 bytes each: chain commit (N), chain number u32, chain index u64,
//!          start time u64 (the digits of `started_at`), first 8 bytes of the
//!          receipt id, check name hash u32, first 8 bytes of the definition
//!          digest, flags u8 (1 passed, 2 dirty, 4 decision), 3 zero bytes. An acceptance
//!          receipt's name hash is that of `acceptance:`, a review's that of
//!          `review:<name>`, its definition 0, its start time `decided_at` and
//!          passed its `accepted` / `approve` (version 1 did not index them, so
//!          a version 1 file is rebuilt); an accepted regression's (a v4 review)
//!          that of `regression:<check>` (version 3 filed it under
//!          `review:<check>`, where no lookup for it looks, so a version 3 file
//!          is rebuilt)
//! tags     16 bytes per 4 KiB block of everything above: the first 16 bytes of
//!          HMAC-SHA256(key, "GRIX v4 block" || block number u32 || block)
//! trailer  48 bytes: length of everything above u64, blocks u32,
//!          HMAC-SHA256(key, "GRIX v4 table" || these first 12 bytes || tags)
//!          (32 bytes), "GRIX"
//! ```
//!
//! A lookup reads the trailer and the tag table and checks the table's MAC, then
//! reads the header, the chain table, one fanout entry pair and a binary search's
//! worth of key and record blocks, each block checked against its tag before use:
//! O(log n) blocks (the tag table is 16 bytes per 4 KiB, the size the CRC table
//! of version 2 was) and independent of the number of writers. A block costs one
//! HMAC of 4 KiB, a few microseconds.
//!
//! Why keyed tags per block, not CRCs under one MAC: version 2 checked each block
//! against a CRC-32, and the CRC table against one more. A CRC detects damage,
//! not intent: whoever edits a record can recompute every CRC (that is the
//! attack: a failed receipt relabelled, every checksum valid). Sealing only the
//! CRC table with a MAC would not be enough either: a forger can change a block
//! and then append bytes that bring its CRC-32 back to the sealed value (CRC is
//! linear, so a collision costs four bytes), and the lookup would accept the
//! block. So each block has its own keyed tag, bound to its number, and the table
//! of tags, with the body length and block count, is sealed by one MAC: a forger
//! without the key can neither change a block, nor move one, nor mix blocks of
//! two files the user did seal. What remains is replaying a whole file this user
//! sealed, for this or another repository; that is harmless, since every record
//! describes chain commits (named by their content) as they are, and chain tips
//! are compared with the refs before use.
//!
//! Writes take `receipt-index.lock` exclusively, write, fsync and rename, so a
//! reader sees the old index or the new one.
//!
//! `GIT_RECEIPT_INDEX=0` or `git config receipt.index false` turns the file off:
//! every command then indexes the chains in memory (the debugging switch, like
//! git's `core.commitGraph`).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::PathBuf;

use gix::ObjectId;
use sha2::{Digest as _, Sha256};

use super::entry::{ChainCommit, ReceiptFileProblem, WalkReader};
use super::{Store, StoreError, crash_point};
use crate::notice::{Notice, Sink};

pub mod mac;
use mac::Key;

/// The index file's name in the git directory.
pub const INDEX_FILE: &str = "receipt-index";

const MAGIC: &[u8; 4] = b"GRIX";
const VERSION: u32 = 4;
const BLOCK: usize = 4096;
const TAG_LEN: usize = 16;
const TAG_DOMAIN: &[u8] = b"GRIX v4 block";
const TABLE_DOMAIN: &[u8] = b"GRIX v4 table";
const HEADER_LEN: usize = 32;
const FANOUT_LEN: usize = 256 * 4;
/// The bytes of a key, for object ids of `oid` bytes (20 for SHA-1, 32 for
/// SHA-256): the id, then a record number u32.
const fn key_len(oid: usize) -> usize {
    oid + 4
}
/// The bytes of a record: the chain commit's id, then 44 bytes of fields.
const fn record_len(oid: usize) -> usize {
    oid + 44
}
const TRAILER_LEN: usize = 48;
const ROLE_INPUTS: u32 = 1 << 31;
/// Keys or records read at a time by a pass over the whole file.
const PASS: usize = 4096;
/// Records are numbered below the role bit.
const MAX_RECORDS: usize = (ROLE_INPUTS - 1) as usize;

/// Which object of a receipt a key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The receipt's subject commit.
    Subject,
    /// The receipt's inputs tree.
    Inputs,
}

/// One chain entry as the index knows it: enough to find it and to skip it
/// without opening it. Nothing here decides anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// The chain commit that holds the receipt.
    pub commit: ObjectId,
    /// The chain (see [`Index::writer`]).
    pub chain: u32,
    /// The receipt's index in its chain.
    pub position: u64,
    /// `started_at` as a number that sorts like the timestamp (its digits).
    pub started: u64,
    /// The first 8 bytes of the receipt id.
    pub id_prefix: [u8; 8],
    /// [`check_hash`] of the check name.
    pub check: u32,
    /// [`definition_prefix`] of the check's definition digest.
    pub definition: u64,
    /// The receipt says it passed.
    pub passed: bool,
    /// The receipt covered uncommitted changes.
    pub dirty: bool,
    /// The receipt is an acceptance or a review, not a check.
    pub decision: bool,
}

/// A record found for an object, and which of its objects the object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// The record.
    pub record: Record,
    /// Subject commit or inputs tree.
    pub role: Role,
}

/// One chain as indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainInfo {
    /// The writer id.
    pub writer: String,
    /// The tip that was indexed.
    pub tip: ObjectId,
    /// How many entries were indexed.
    pub count: u64,
}

/// Why the index file cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("the receipt index is unusable: {0}")]
pub struct Corrupt(String);

/// The decision kinds the index keys apart from checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionKind {
    /// Acceptance receipts, keyed by `acceptance:`.
    Acceptance,
    /// Review receipts, keyed by `review:<name>`.
    Review,
    /// Accepted regressions (v4 reviews that accept one), keyed by
    /// `regression:<check>`.
    Regression,
}

/// The name a decision receipt is keyed under in place of a check name: it holds a
/// `:`, which no check name may, so a decision never passes for a check's evidence
/// (and a hash collision only costs opening a receipt that is then skipped).
pub fn decision_key(kind: DecisionKind, name: &str) -> String {
    match kind {
        DecisionKind::Acceptance => "acceptance:".to_owned(),
        DecisionKind::Review => format!("review:{name}"),
        DecisionKind::Regression => format!("regression:{name}"),
    }
}

/// The hash of a check name kept in records (FNV-1a, 32 bits): a filter only.
pub fn check_hash(name: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The first 8 bytes of a `sha256:<hex>` digest (0 when it is not one): a filter only.
pub fn definition_prefix(digest: &str) -> u64 {
    digest
        .strip_prefix("sha256:")
        .and_then(|h| h.get(..16))
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .unwrap_or(0)
}

/// The first 8 bytes of a receipt id `sha256:<hex>` (zeros when it is not one).
pub fn id_prefix(id: &str) -> [u8; 8] {
    let mut out = [0u8; 8];
    if let Some(h) = id.strip_prefix("sha256:").and_then(|h| h.get(..16)) {
        let _ = hex::decode_to_slice(h, &mut out);
    }
    out
}

/// `started_at` (`2026-01-31T12:00:00.000Z`) as its digits, which sort like it.
fn started_key(ts: &str) -> u64 {
    let digits: String = ts.chars().filter(char::is_ascii_digit).take(19).collect();
    digits.parse().unwrap_or(0)
}

/// A record with the two objects it is keyed by.
#[derive(Debug, Clone, Copy)]
struct Entry {
    record: Record,
    subject: ObjectId,
    inputs: ObjectId,
}

/// The whole index in memory: what is built, updated and written.
#[derive(Debug, Default)]
struct Mem {
    /// The object format of every id in it.
    kind: gix::hash::Kind,
    chains: Vec<ChainInfo>,
    records: Vec<Record>,
    /// Sorted by object, then record number (with the role bit).
    keys: Vec<(ObjectId, u32)>,
}

impl Mem {
    /// Build from chains (sorted by writer) and their entries.
    fn from_entries(chains: Vec<(ChainInfo, Vec<Entry>)>, kind: gix::hash::Kind) -> Mem {
        let mut mem = Mem::empty(kind);
        let mut chains = chains;
        chains.sort_by(|a, b| a.0.writer.cmp(&b.0.writer));
        for (n, (info, entries)) in chains.into_iter().enumerate() {
            for e in entries {
                if mem.records.len() >= MAX_RECORDS {
                    break;
                }
                let r = mem.records.len() as u32;
                mem.records.push(Record {
                    chain: n as u32,
                    ..e.record
                });
                mem.keys.push((e.subject, r));
                mem.keys.push((e.inputs, r | ROLE_INPUTS));
            }
            mem.chains.push(info);
        }
        mem.keys.sort_unstable();
        mem
    }

    /// An index of nothing, for ids of `kind`.
    fn empty(kind: gix::hash::Kind) -> Mem {
        Mem {
            kind,
            ..Mem::default()
        }
    }

    /// Every chain's entries, regrouped (the inverse of [`Mem::from_entries`]).
    fn into_entries(self) -> Vec<(ChainInfo, Vec<Entry>)> {
        let zero = ObjectId::null(self.kind);
        let mut entries: Vec<Entry> = self
            .records
            .iter()
            .map(|r| Entry {
                record: *r,
                subject: zero,
                inputs: zero,
            })
            .collect();
        for (oid, r) in &self.keys {
            let e = &mut entries[(r & !ROLE_INPUTS) as usize];
            if r & ROLE_INPUTS != 0 {
                e.inputs = *oid;
            } else {
                e.subject = *oid;
            }
        }
        let mut out: Vec<(ChainInfo, Vec<Entry>)> =
            self.chains.into_iter().map(|c| (c, Vec::new())).collect();
        for e in entries {
            out[e.record.chain as usize].1.push(e);
        }
        out
    }

    fn lookup(&self, oid: &ObjectId) -> Vec<Hit> {
        let start = self.keys.partition_point(|(k, _)| k < oid);
        self.keys[start..]
            .iter()
            .take_while(|(k, _)| k == oid)
            .map(|(_, r)| hit(self.records[(r & !ROLE_INPUTS) as usize], *r))
            .collect()
    }

    /// The index file's bytes, sealed with `key` (see [`Mem::encode_to`]).
    #[cfg(test)]
    fn encode(&self, key: &Key) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_to(key, &mut out)
            .expect("writing to memory does not fail");
        out
    }

    /// Write the index file to `out` block by block, each body block tagged as
    /// it is done, then the tags and the sealed trailer: what is held beyond
    /// this index is one block and the tags (16 bytes a 4 KiB block), never a
    /// copy of the whole file (which at a million receipts is a hundred
    /// megabytes, at the end of a fetch that holds the most already).
    fn encode_to(&self, key: &Key, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut body = Blocks {
            key,
            out,
            block: Vec::with_capacity(BLOCK),
            tags: Vec::new(),
            len: 0,
        };
        // the chains' section, small (a writer id and a tip a chain): its
        // length goes in the header
        let mut chains = Vec::new();
        for c in &self.chains {
            chains.extend_from_slice(c.tip.as_bytes());
            chains.extend_from_slice(&c.count.to_le_bytes());
            chains.extend_from_slice(&(c.writer.len() as u16).to_le_bytes());
            chains.extend_from_slice(c.writer.as_bytes());
        }
        body.put(MAGIC)?;
        for n in [
            VERSION,
            self.chains.len() as u32,
            self.records.len() as u32,
            self.keys.len() as u32,
            chains.len() as u32,
            self.kind.len_in_bytes() as u32,
        ] {
            body.put(&n.to_le_bytes())?;
        }
        body.put(&[0; 4])?;
        body.put(&chains)?;
        let mut fanout = [0u32; 256];
        for (oid, _) in &self.keys {
            fanout[oid.as_bytes()[0] as usize] += 1;
        }
        let mut total = 0;
        for f in fanout {
            total += f;
            body.put(&total.to_le_bytes())?;
        }
        for (oid, r) in &self.keys {
            body.put(oid.as_bytes())?;
            body.put(&r.to_le_bytes())?;
        }
        for r in &self.records {
            body.put(r.commit.as_bytes())?;
            body.put(&r.chain.to_le_bytes())?;
            body.put(&r.position.to_le_bytes())?;
            body.put(&r.started.to_le_bytes())?;
            body.put(&r.id_prefix)?;
            body.put(&r.check.to_le_bytes())?;
            body.put(&r.definition.to_le_bytes())?;
            body.put(&[
                u8::from(r.passed) | (u8::from(r.dirty) << 1) | (u8::from(r.decision) << 2),
                0,
                0,
                0,
            ])?;
        }
        body.end()?;
        let Blocks { out, tags, len, .. } = body;
        let blocks = (tags.len() / TAG_LEN) as u32;
        out.write_all(&tags)?;
        let mut trailer = Vec::with_capacity(TRAILER_LEN);
        trailer.extend_from_slice(&(len as u64).to_le_bytes());
        trailer.extend_from_slice(&blocks.to_le_bytes());
        let seal = key.mac(&[TABLE_DOMAIN, &trailer, &tags]);
        trailer.extend_from_slice(&seal);
        trailer.extend_from_slice(MAGIC);
        out.write_all(&trailer)
    }
}

/// The body of an index file as it is written: [`BLOCK`] bytes at a time, each
/// tagged ([`block_tag`]) and passed on when full.
struct Blocks<'a, W> {
    key: &'a Key,
    out: &'a mut W,
    /// The block being filled.
    block: Vec<u8>,
    /// The tags of the blocks passed on.
    tags: Vec<u8>,
    /// Body bytes so far.
    len: usize,
}

impl<W: std::io::Write> Blocks<'_, W> {
    fn put(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        self.len += bytes.len();
        while !bytes.is_empty() {
            let take = (BLOCK - self.block.len()).min(bytes.len());
            self.block.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.block.len() == BLOCK {
                self.pass_on()?;
            }
        }
        Ok(())
    }

    /// Tag the block and pass it on.
    fn pass_on(&mut self) -> std::io::Result<()> {
        let n = self.tags.len() / TAG_LEN;
        self.tags
            .extend_from_slice(&block_tag(self.key, n, &self.block));
        self.out.write_all(&self.block)?;
        self.block.clear();
        Ok(())
    }

    /// Pass on the last block, if it holds anything.
    fn end(&mut self) -> std::io::Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        self.pass_on()
    }
}

/// The keyed tag of body block number `n`.
fn block_tag(key: &Key, n: usize, block: &[u8]) -> [u8; TAG_LEN] {
    let mac = key.mac(&[TAG_DOMAIN, &(n as u32).to_le_bytes(), block]);
    mac[..TAG_LEN].try_into().expect("16 bytes")
}

/// Why a sealed file is refused: another key sealed it, or none did.
const NOT_OURS: &str = "it was not written by this user's git-receipt (MAC mismatch: copied from another repository, user or machine, restored from a cache, damaged, or forged)";

fn hit(record: Record, r: u32) -> Hit {
    Hit {
        record,
        role: if r & ROLE_INPUTS != 0 {
            Role::Inputs
        } else {
            Role::Subject
        },
    }
}

/// The record `b` holds, its chain commit's id `oid` bytes long.
fn decode_record(b: &[u8], oid: usize) -> Record {
    let (id, b) = b.split_at(oid);
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
    Record {
        commit: ObjectId::from_bytes_or_panic(id),
        chain: u32_at(0),
        position: u64_at(4),
        started: u64_at(12),
        id_prefix: b[20..28].try_into().expect("8 bytes"),
        check: u32_at(28),
        definition: u64_at(32),
        passed: b[40] & 1 != 0,
        dirty: b[40] & 2 != 0,
        decision: b[40] & 4 != 0,
    }
}

/// The index file, read block by block, each block checked against its keyed tag
/// before use.
#[derive(Debug)]
struct FileView {
    file: File,
    key: &'static Key,
    body_len: usize,
    tags: Vec<[u8; TAG_LEN]>,
    /// Body blocks read and checked so far, by number.
    blocks: Vec<std::sync::OnceLock<Box<[u8]>>>,
    chains: Vec<ChainInfo>,
    /// The object format of its ids: the repository's, which
    /// [`FileView::open`] found the file written for.
    kind: gix::hash::Kind,
    records: usize,
    keys: usize,
    fanout_at: usize,
    keys_at: usize,
    records_at: usize,
}

impl FileView {
    fn open(
        path: &std::path::Path,
        key: &'static Key,
        kind: gix::hash::Kind,
    ) -> Result<Option<FileView>, Corrupt> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Corrupt(format!("cannot open it: {e}"))),
        };
        let len = file
            .metadata()
            .map_err(|e| Corrupt(format!("cannot stat it: {e}")))?
            .len() as usize;
        let bad = |why: &str| Corrupt(why.to_owned());
        // Only for the message: an index of another version is rebuilt as well.
        let mut start = [0u8; 8];
        if file.read_exact_at(&mut start, 0).is_ok()
            && &start[..4] == MAGIC
            && u32::from_le_bytes(start[4..8].try_into().expect("4")) != VERSION
        {
            return Err(Corrupt(format!(
                "it has version {}, not {VERSION}",
                u32::from_le_bytes(start[4..8].try_into().expect("4"))
            )));
        }
        if len < HEADER_LEN + FANOUT_LEN + TRAILER_LEN {
            return Err(bad("too short (truncated?)"));
        }
        let mut trailer = [0u8; TRAILER_LEN];
        file.read_exact_at(&mut trailer, (len - TRAILER_LEN) as u64)
            .map_err(|e| Corrupt(format!("cannot read it: {e}")))?;
        if &trailer[TRAILER_LEN - 4..] != MAGIC {
            return Err(bad("its trailer is damaged (truncated or torn)"));
        }
        let body_len = u64::from_le_bytes(trailer[..8].try_into().expect("8")) as usize;
        let blocks = u32::from_le_bytes(trailer[8..12].try_into().expect("4")) as usize;
        if body_len.div_ceil(BLOCK) != blocks
            || body_len.checked_add(blocks * TAG_LEN + TRAILER_LEN) != Some(len)
        {
            return Err(bad("its length does not match its trailer"));
        }
        let mut table = vec![0u8; blocks * TAG_LEN];
        file.read_exact_at(&mut table, body_len as u64)
            .map_err(|e| Corrupt(format!("cannot read it: {e}")))?;
        let seal = key.mac(&[TABLE_DOMAIN, &trailer[..12], &table]);
        if !mac::same(&seal, &trailer[12..44]) {
            return Err(bad(NOT_OURS));
        }
        let tags: Vec<[u8; TAG_LEN]> = table
            .chunks(TAG_LEN)
            .map(|c| c.try_into().expect("16"))
            .collect();
        let mut view = FileView {
            file,
            key,
            body_len,
            blocks: (0..tags.len())
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            tags,
            chains: Vec::new(),
            kind,
            records: 0,
            keys: 0,
            fanout_at: 0,
            keys_at: 0,
            records_at: 0,
        };
        let header = view.read(0, HEADER_LEN)?;
        if &header[..4] != MAGIC {
            return Err(bad("it does not start like a receipt index"));
        }
        let u32_at =
            |o: usize| u32::from_le_bytes(header[o..o + 4].try_into().expect("4")) as usize;
        if u32_at(4) != VERSION as usize {
            return Err(Corrupt(format!(
                "it has version {}, not {VERSION}",
                u32_at(4)
            )));
        }
        let (n_chains, records, keys, chains_len) = (u32_at(8), u32_at(12), u32_at(16), u32_at(20));
        // the id width: 0 in a file written before SHA-256 repositories were
        // read, which were all SHA-1
        let written_for = match u32_at(24) {
            0 => gix::hash::Kind::Sha1.len_in_bytes(),
            n => n,
        };
        if written_for != view.oid() {
            return Err(Corrupt(format!(
                "it holds object ids of {written_for} bytes, and this repository's ({}) have {}",
                kind,
                view.oid()
            )));
        }
        view.fanout_at = HEADER_LEN + chains_len;
        view.keys_at = view.fanout_at + FANOUT_LEN;
        view.records_at = view.keys_at + keys * view.key_len();
        if view.records_at + records * view.record_len() != body_len || keys != records * 2 {
            return Err(bad("its sections do not add up"));
        }
        view.records = records;
        view.keys = keys;
        let table = view.read(HEADER_LEN, chains_len)?;
        let mut at = 0;
        for _ in 0..n_chains {
            // the tip, entries u64, name length u16
            let width = view.oid() + 10;
            let fixed = table
                .get(at..at + width)
                .ok_or_else(|| bad("its chain table is cut short"))?;
            let (tip, fixed) = fixed.split_at(view.oid());
            let tip = ObjectId::from_bytes_or_panic(tip);
            let count = u64::from_le_bytes(fixed[..8].try_into().expect("8"));
            let n = u16::from_le_bytes(fixed[8..10].try_into().expect("2")) as usize;
            let name = table
                .get(at + width..at + width + n)
                .and_then(|b| std::str::from_utf8(b).ok())
                .ok_or_else(|| bad("its chain table is damaged"))?;
            view.chains.push(ChainInfo {
                writer: name.to_owned(),
                tip,
                count,
            });
            at += width + n;
        }
        if at != chains_len {
            return Err(bad("its chain table has trailing bytes"));
        }
        Ok(Some(view))
    }

    /// [`FileView::read`] for a pass over the whole file: the blocks are checked
    /// and handed over, not kept, so the pass holds one read's worth of the file.
    fn read_passing(&self, offset: usize, len: usize) -> Result<Vec<u8>, Corrupt> {
        if offset + len > self.body_len {
            return Err(Corrupt("a read runs past its end".into()));
        }
        let (first, last) = (offset / BLOCK, (offset + len).div_ceil(BLOCK));
        let start = first * BLOCK;
        let end = (last * BLOCK).min(self.body_len);
        let mut bytes = vec![0u8; end - start];
        self.file
            .read_exact_at(&mut bytes, start as u64)
            .map_err(|e| Corrupt(format!("cannot read it: {e}")))?;
        for (n, block) in (first..).zip(bytes.chunks(BLOCK)) {
            if !mac::same(&block_tag(self.key, n, block), &self.tags[n]) {
                return Err(Corrupt(format!("block {n}: {NOT_OURS}")));
            }
        }
        bytes.truncate(offset + len - start);
        bytes.drain(..offset - start);
        Ok(bytes)
    }

    /// `len` bytes at `offset` of the body, every block they touch checked.
    fn read(&self, offset: usize, len: usize) -> Result<Vec<u8>, Corrupt> {
        self.with(offset, len, <[u8]>::to_vec)
    }

    /// `f` of the `len` bytes at `offset` of the body, every block they touch
    /// checked: lent from the block that holds them, or copied together when
    /// they span blocks (a lookup's many small reads copy nothing).
    fn with<R>(&self, offset: usize, len: usize, f: impl FnOnce(&[u8]) -> R) -> Result<R, Corrupt> {
        if offset
            .checked_add(len)
            .is_none_or(|end| end > self.body_len)
        {
            return Err(Corrupt("a read runs past its end".into()));
        }
        let n = offset / BLOCK;
        // mutants: a condition that lends from a block less often is
        // equivalent (the copy below gives the same bytes); one that lends
        // wrongly fails `a_read_gives_the_file_s_bytes_within_and_across_blocks`
        if len > 0 && (offset + len - 1) / BLOCK == n {
            let from = offset - n * BLOCK;
            return Ok(f(&self.block(n)?[from..from + len]));
        }
        let mut out = Vec::with_capacity(len);
        let mut at = offset;
        while at < offset + len {
            let n = at / BLOCK;
            let block = self.block(n)?;
            let from = at - n * BLOCK;
            let take = (offset + len - at).min(block.len() - from);
            out.extend_from_slice(&block[from..from + take]);
            at += take;
        }
        Ok(f(&out))
    }

    /// Body block `n`, read and checked on first use and kept (threads that
    /// ask for it at once may each read it; one copy is kept).
    fn block(&self, n: usize) -> Result<&[u8], Corrupt> {
        let (Some(slot), Some(tag)) = (self.blocks.get(n), self.tags.get(n)) else {
            return Err(Corrupt("a read runs past its last block".into()));
        };
        if let Some(block) = slot.get() {
            return Ok(block);
        }
        let start = n * BLOCK;
        let size = BLOCK.min(self.body_len - start);
        let mut block = vec![0u8; size];
        self.file
            .read_exact_at(&mut block, start as u64)
            .map_err(|e| Corrupt(format!("cannot read it: {e}")))?;
        if !mac::same(&block_tag(self.key, n, &block), tag) {
            return Err(Corrupt(format!("block {n}: {NOT_OURS}")));
        }
        Ok(slot.get_or_init(|| block.into_boxed_slice()))
    }

    /// The bytes of an object id in it: 20 (SHA-1) or 32 (SHA-256).
    fn oid(&self) -> usize {
        self.kind.len_in_bytes()
    }

    fn key_len(&self) -> usize {
        key_len(self.oid())
    }

    fn record_len(&self) -> usize {
        record_len(self.oid())
    }

    /// The object id and the record number (with its role bit) of key `k`.
    fn split_key(&self, k: &[u8]) -> (ObjectId, u32) {
        let (id, n) = k.split_at(self.oid());
        (
            ObjectId::from_bytes_or_panic(id),
            u32::from_le_bytes(n.try_into().expect("4")),
        )
    }

    fn record(&self, r: u32) -> Result<Record, Corrupt> {
        let n = (r & !ROLE_INPUTS) as usize;
        if n >= self.records {
            return Err(Corrupt("a key names a record that does not exist".into()));
        }
        let rec = self.with(
            self.records_at + n * self.record_len(),
            self.record_len(),
            |b| decode_record(b, self.oid()),
        )?;
        if rec.chain as usize >= self.chains.len() {
            return Err(Corrupt("a record names a chain that does not exist".into()));
        }
        Ok(rec)
    }

    fn lookup(&self, oid: &ObjectId) -> Result<Vec<Hit>, Corrupt> {
        // each read lent from the block that holds it
        let fan = |i: usize| {
            self.with(self.fanout_at + i * 4, 4, |b| {
                u32::from_le_bytes(b.try_into().expect("4")) as usize
            })
        };
        let first = oid.as_bytes()[0] as usize;
        let (mut lo, hi) = (if first == 0 { 0 } else { fan(first - 1)? }, fan(first)?);
        if lo > hi || hi > self.keys {
            return Err(Corrupt("its fanout table is damaged".into()));
        }
        let mut h = hi;
        while lo < h {
            let mid = (lo + h) / 2;
            let before = self.with(self.keys_at + mid * self.key_len(), self.oid(), |b| {
                b < oid.as_bytes()
            })?;
            if before {
                lo = mid + 1;
            } else {
                h = mid;
            }
        }
        // The keys of `oid`: read a run of keys at a time, not one by one.
        const RUN: usize = 64;
        let mut found: Vec<u32> = Vec::new();
        let mut i = lo;
        'keys: while i < hi {
            let n = RUN.min(hi - i);
            let ended = self.with(self.keys_at + i * self.key_len(), n * self.key_len(), |b| {
                for k in b.chunks(self.key_len()) {
                    let (id, number) = k.split_at(self.oid());
                    if id != oid.as_bytes() {
                        return true;
                    }
                    found.push(u32::from_le_bytes(number.try_into().expect("4")));
                }
                false
            })?;
            if ended {
                break 'keys;
            }
            i += n;
        }
        // Their records: one read of the span when they lie close together (one
        // chain's receipts about one object do), else one read each.
        let numbers: Vec<usize> = found.iter().map(|r| (r & !ROLE_INPUTS) as usize).collect();
        let (Some(&first), Some(&last)) = (numbers.iter().min(), numbers.iter().max()) else {
            return Ok(Vec::new());
        };
        if last >= self.records {
            return Err(Corrupt("a key names a record that does not exist".into()));
        }
        let span = last - first + 1;
        let mut out = Vec::with_capacity(found.len());
        if span <= 4 * numbers.len() + 64 {
            let len = self.record_len();
            self.with(self.records_at + first * len, span * len, |bytes| {
                for (r, n) in found.iter().zip(&numbers) {
                    let at = (n - first) * len;
                    out.push(hit(decode_record(&bytes[at..at + len], self.oid()), *r));
                }
            })?;
            if out
                .iter()
                .any(|h| h.record.chain as usize >= self.chains.len())
            {
                return Err(Corrupt("a record names a chain that does not exist".into()));
            }
        } else {
            for r in &found {
                out.push(hit(self.record(*r)?, *r));
            }
        }
        Ok(out)
    }

    fn to_mem(&self) -> Result<Mem, Corrupt> {
        let keys_bytes = self.read(self.keys_at, self.keys * self.key_len())?;
        let mut keys = Vec::with_capacity(self.keys);
        for k in keys_bytes.chunks(self.key_len()) {
            let (id, r) = self.split_key(k);
            if (r & !ROLE_INPUTS) as usize >= self.records {
                return Err(Corrupt("a key names a record that does not exist".into()));
            }
            keys.push((id, r));
        }
        let rec_bytes = self.read(self.records_at, self.records * self.record_len())?;
        let mut records = Vec::with_capacity(self.records);
        for b in rec_bytes.chunks(self.record_len()) {
            let r = decode_record(b, self.oid());
            if r.chain as usize >= self.chains.len() {
                return Err(Corrupt("a record names a chain that does not exist".into()));
            }
            records.push(r);
        }
        // every record is keyed exactly twice: by its subject and by its inputs
        let mut seen = vec![0u8; records.len()];
        for (_, r) in &keys {
            seen[(r & !ROLE_INPUTS) as usize] |= if r & ROLE_INPUTS != 0 { 2 } else { 1 };
        }
        if seen.iter().any(|s| *s != 3) {
            return Err(Corrupt(
                "a record is not keyed by both of its objects".into(),
            ));
        }
        Ok(Mem {
            kind: self.kind,
            chains: self.chains.clone(),
            records,
            keys,
        })
    }
}

#[derive(Debug)]
enum Inner {
    File(FileView),
    Mem(Mem),
}

/// The receipt index, up to date with the chains when handed out by
/// [`Store::receipt_index`].
#[derive(Debug)]
pub struct Index {
    inner: Inner,
}

#[cfg(test)]
impl Record {
    /// A decision's record at chain commit `commit` of chain `chain`, every
    /// other field zero: for tests of what reads records by where they sit.
    pub(crate) fn decision_at(commit: ObjectId, chain: u32) -> Record {
        Record {
            commit,
            chain,
            position: 0,
            started: 0,
            id_prefix: [0; 8],
            check: 0,
            definition: 0,
            passed: true,
            dirty: false,
            decision: true,
        }
    }
}

#[cfg(test)]
impl Index {
    /// An index of these chains and no records: for tests of what a record
    /// opens to (`open_candidate` of the `freshness` module).
    pub(crate) fn of_chains(chains: Vec<ChainInfo>) -> Index {
        Index {
            inner: Inner::Mem(Mem::from_entries(
                chains.into_iter().map(|c| (c, Vec::new())).collect(),
                gix::hash::Kind::Sha1,
            )),
        }
    }

    /// An index of these chains and records, laid out in the order given, each
    /// record keyed by its commit in both roles: for tests of readers that must
    /// refuse a layout this module never writes.
    pub(crate) fn of_records(chains: Vec<ChainInfo>, records: Vec<Record>) -> Index {
        let mut keys: Vec<(ObjectId, u32)> = (0u32..)
            .zip(&records)
            .flat_map(|(n, r)| [(r.commit, n), (r.commit, n | ROLE_INPUTS)])
            .collect();
        keys.sort_unstable();
        Index {
            inner: Inner::Mem(Mem {
                kind: gix::hash::Kind::Sha1,
                chains,
                records,
                keys,
            }),
        }
    }

    /// This index without its keys of role `role` (each record keyed by its
    /// other object only): a layout this module never writes, for tests of
    /// readers that must refuse it. Only for an index made in memory.
    pub(crate) fn without_keys(mut self, role: Role) -> Index {
        let Inner::Mem(m) = &mut self.inner else {
            panic!("an index made in memory");
        };
        let inputs = role == Role::Inputs;
        m.keys.retain(|(_, r)| (r & ROLE_INPUTS != 0) != inputs);
        self
    }
}

impl Index {
    /// Every indexed chain, sorted by writer id.
    pub fn chains(&self) -> &[ChainInfo] {
        match &self.inner {
            Inner::File(f) => &f.chains,
            Inner::Mem(m) => &m.chains,
        }
    }

    /// The writer id of chain number `chain`.
    pub fn writer(&self, chain: u32) -> &str {
        &self.chains()[chain as usize].writer
    }

    /// Every record keyed by `oid`, newest first, with the default clock skew
    /// (see [`Index::lookup_until`]).
    pub fn lookup(&self, oid: &ObjectId) -> Result<Vec<Hit>, Corrupt> {
        let horizon = crate::clock::now_ms().saturating_add(crate::clock::DEFAULT_MAX_SKEW_MS);
        self.lookup_until(oid, horizon)
    }

    /// Every record keyed by `oid`, newest first: within one chain by position,
    /// across chains by start time, an entry's taken as no earlier than those
    /// before it in its chain, and start times after `horizon_ms` (Unix ms: the
    /// reader's clock plus its skew) ignored ([`crate::clock::sort_newest_first`]).
    pub fn lookup_until(&self, oid: &ObjectId, horizon_ms: u64) -> Result<Vec<Hit>, Corrupt> {
        self.lookup_chains_until(oid, horizon_ms, |_| true)
    }

    /// [`Index::lookup_until`] of the records `keep` takes, the others dropped
    /// before they are ordered. `keep` must answer alike for every record of
    /// one chain (it is asked of each, so that it can count them): a chain's
    /// order is its own, so leaving whole chains out changes no other's place
    /// (ten thousand writers' receipts of one commit, none of them by a trusted
    /// key, cost a gate two sorts of ten thousand).
    pub fn lookup_chains_until(
        &self,
        oid: &ObjectId,
        horizon_ms: u64,
        mut keep: impl FnMut(&Hit) -> bool,
    ) -> Result<Vec<Hit>, Corrupt> {
        let mut hits = match &self.inner {
            Inner::File(f) => f.lookup(oid)?,
            Inner::Mem(m) => m.lookup(oid),
        };
        hits.retain(|h| keep(h));
        if hits.len() < 2 {
            // nothing to order (most objects of a walk have no receipt at all)
            return Ok(hits);
        }
        let horizon = started_key(&crate::receipt::format_timestamp(horizon_ms));
        crate::clock::sort_newest_first(&mut hits, horizon, |h| {
            (h.record.chain, h.record.position, h.record.started)
        });
        Ok(hits)
    }

    /// Every record keyed by `oid`, in no particular order: for checks that
    /// look at each of them (`verify`'s notes check), not for what is newest.
    pub fn keyed(&self, oid: &ObjectId) -> Result<Vec<Hit>, Corrupt> {
        match &self.inner {
            Inner::File(f) => f.lookup(oid),
            Inner::Mem(m) => Ok(m.lookup(oid)),
        }
    }

    /// Every (object, hit) pair, for whole-repository checks such as `verify`.
    pub fn all(&self) -> Result<Vec<(ObjectId, Hit)>, Corrupt> {
        let owned;
        let mem = match &self.inner {
            Inner::File(f) => {
                owned = f.to_mem()?;
                &owned
            }
            Inner::Mem(m) => m,
        };
        Ok(mem
            .keys
            .iter()
            .map(|(oid, r)| (*oid, hit(mem.records[(r & !ROLE_INPUTS) as usize], *r)))
            .collect())
    }

    /// The object format of the ids it holds.
    pub fn object_hash(&self) -> gix::hash::Kind {
        match &self.inner {
            Inner::File(f) => f.kind,
            Inner::Mem(m) => m.kind,
        }
    }

    /// How many records the index holds.
    pub fn records_len(&self) -> usize {
        match &self.inner {
            Inner::File(f) => f.records,
            Inner::Mem(m) => m.records.len(),
        }
    }

    /// Visit every key in order: the object, the number of the record it keys
    /// (below [`Index::records_len`]) and which of the record's objects it is. A
    /// pass over the file that keeps none of it (see [`Index::each_record`]).
    pub fn each_key(&self, mut visit: impl FnMut(ObjectId, usize, Role)) -> Result<(), Corrupt> {
        let role = |r: u32| {
            if r & ROLE_INPUTS != 0 {
                Role::Inputs
            } else {
                Role::Subject
            }
        };
        match &self.inner {
            Inner::Mem(m) => {
                for (oid, r) in &m.keys {
                    visit(*oid, (r & !ROLE_INPUTS) as usize, role(*r));
                }
            }
            Inner::File(f) => {
                for at in (0..f.keys).step_by(PASS) {
                    let n = PASS.min(f.keys - at);
                    let bytes = f.read_passing(f.keys_at + at * f.key_len(), n * f.key_len())?;
                    for k in bytes.chunks(f.key_len()) {
                        let (id, r) = f.split_key(k);
                        let number = (r & !ROLE_INPUTS) as usize;
                        if number >= f.records {
                            return Err(Corrupt("a key names a record that does not exist".into()));
                        }
                        visit(id, number, role(r));
                    }
                }
            }
        }
        Ok(())
    }

    /// Visit every record in order with its number. One chain's records are
    /// numbered together, in chain order, chains in the order of
    /// [`Index::chains`]. For whole-repository checks (`verify`) whose memory must
    /// not grow with the index: the file is read a stretch at a time and checked,
    /// and nothing of it is kept.
    pub fn each_record(&self, mut visit: impl FnMut(usize, Record)) -> Result<(), Corrupt> {
        match &self.inner {
            Inner::Mem(m) => {
                for (n, r) in m.records.iter().enumerate() {
                    visit(n, *r);
                }
            }
            Inner::File(f) => {
                for at in (0..f.records).step_by(PASS) {
                    let n = PASS.min(f.records - at);
                    let bytes =
                        f.read_passing(f.records_at + at * f.record_len(), n * f.record_len())?;
                    for (i, b) in bytes.chunks(f.record_len()).enumerate() {
                        let r = decode_record(b, f.oid());
                        if r.chain as usize >= f.chains.len() {
                            return Err(Corrupt(
                                "a record names a chain that does not exist".into(),
                            ));
                        }
                        visit(at + i, r);
                    }
                }
            }
        }
        Ok(())
    }

    /// The records numbered `range` (see [`Index::each_record`]), read and
    /// checked without being kept by the index.
    pub fn records_in(&self, range: std::ops::Range<usize>) -> Result<Vec<Record>, Corrupt> {
        let outside = || Corrupt("a read runs past its end".into());
        match &self.inner {
            Inner::Mem(m) => m
                .records
                .get(range)
                .map(<[Record]>::to_vec)
                .ok_or_else(outside),
            Inner::File(f) => {
                if range.start > range.end || range.end > f.records {
                    return Err(outside());
                }
                let bytes = f.read_passing(
                    f.records_at + range.start * f.record_len(),
                    range.len() * f.record_len(),
                )?;
                Ok(bytes
                    .chunks(f.record_len())
                    .map(|b| decode_record(b, f.oid()))
                    .collect())
            }
        }
    }

    fn into_mem(self) -> Result<Mem, Corrupt> {
        match self.inner {
            Inner::File(f) => f.to_mem(),
            Inner::Mem(m) => Ok(m),
        }
    }
}

/// What indexing one chain commit needs from its receipt. Parsed leniently: the
/// index is a hint, and the decision parses the receipt strictly when it opens it.
#[derive(serde::Deserialize)]
struct Light {
    receipt: LightBody,
    #[serde(default)]
    signature: Option<LightSignature>,
}

#[derive(serde::Deserialize)]
struct LightSignature {
    #[serde(default)]
    key: String,
}

#[derive(serde::Deserialize)]
struct LightBody {
    chain: LightChain,
    subject: LightSubject,
    check: Option<LightCheck>,
    result: Option<LightResult>,
    acceptance: Option<LightDecision>,
    review: Option<LightDecision>,
}

/// An acceptance or a review, as the index keys it.
#[derive(serde::Deserialize)]
struct LightDecision {
    #[serde(default)]
    name: String,
    #[serde(alias = "verdict")]
    status: String,
    decided_at: String,
    /// Present on an accepted regression; what it holds is read strictly later.
    #[serde(default)]
    accepts: Option<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct LightChain {
    index: u64,
    #[serde(default)]
    writer: String,
    #[serde(default)]
    prev: Option<String>,
}

/// What the entry rules (admission's, in `store/admit.rs`) need of a receipt that the index checks
/// itself: whether it names this chain and its key, and the id it follows.
#[derive(Debug, Clone, Copy)]
struct Link {
    /// `chain.writer` is the chain's.
    named: bool,
    /// `chain.writer` is the chain's, and `signature.key` the key its id names.
    ours: bool,
    /// The first 8 bytes of `chain.prev`, or `None` when it is `null`.
    prev: Option<[u8; 8]>,
}

#[derive(serde::Deserialize)]
struct LightSubject {
    commit: String,
    inputs: String,
    dirty: bool,
}

#[derive(serde::Deserialize)]
struct LightCheck {
    name: String,
    definition: String,
}

#[derive(serde::Deserialize)]
struct LightResult {
    passed: bool,
    started_at: String,
}

/// The index entry for one receipt's stored bytes, or `None` when they are not a
/// receipt (the entry is then simply not indexed; `verify` reports it).
#[cfg(test)]
fn light_entry(commit: ObjectId, bytes: &[u8]) -> Option<Entry> {
    light_checked(commit, bytes, "").map(|(e, _)| e)
}

/// [`light_entry`], with what linking it into chain `writer` needs.
fn light_checked(commit: ObjectId, bytes: &[u8], writer: &str) -> Option<(Entry, Link)> {
    let l: Light = serde_json::from_slice(bytes).ok()?;
    let named = l.receipt.chain.writer == writer;
    let ours = named
        && l.signature
            .as_ref()
            .is_some_and(|s| crate::receipt::writer_matches_key(writer, &s.key));
    let prev = l.receipt.chain.prev.as_deref().map(id_prefix);
    let link = Link { named, ours, prev };
    // The body's canonical bytes sit between `{"receipt":` and `,"signature":{`.
    // Stored bytes that are not canonical are still indexed (with no id), so that
    // the decision opens them and refuses them loudly.
    const SIG: &[u8] = br#","signature":{"#;
    let id = bytes
        .windows(SIG.len())
        .rposition(|w| w == SIG)
        .and_then(|end| bytes.get(br#"{"receipt":"#.len()..end))
        .filter(|_| bytes.starts_with(br#"{"receipt":"#))
        .map(|body| Sha256::digest(body)[..8].try_into().expect("8 bytes"))
        .unwrap_or([0; 8]);
    let b = l.receipt;
    // A decision is keyed under a name no check can have (see [`decision_key`]).
    let is_decision = b.check.is_none();
    let (started, check, definition, passed) = match (b.check, b.result, b.acceptance, b.review) {
        (Some(c), Some(r), None, None) => (
            started_key(&r.started_at),
            check_hash(&c.name),
            definition_prefix(&c.definition),
            r.passed,
        ),
        (None, None, Some(a), None) => (
            started_key(&a.decided_at),
            check_hash(&decision_key(DecisionKind::Acceptance, "")),
            0,
            a.status == "accepted",
        ),
        (None, None, None, Some(r)) => (
            started_key(&r.decided_at),
            check_hash(&decision_key(
                if r.accepts.is_some() {
                    DecisionKind::Regression
                } else {
                    DecisionKind::Review
                },
                &r.name,
            )),
            0,
            r.status == "approve",
        ),
        _ => return None,
    };
    let entry = Entry {
        record: Record {
            commit,
            chain: 0,
            position: b.chain.index,
            started,
            id_prefix: id,
            check,
            definition,
            passed,
            dirty: b.subject.dirty,
            decision: is_decision,
        },
        subject: ObjectId::from_hex(b.subject.commit.as_bytes()).ok()?,
        inputs: ObjectId::from_hex(b.subject.inputs.as_bytes()).ok()?,
    };
    Some((entry, link))
}

/// Whether the index file is turned off (`GIT_RECEIPT_INDEX=0`, `receipt.index=false`).
fn file_disabled(store: &Store) -> bool {
    if let Some(v) = std::env::var_os("GIT_RECEIPT_INDEX") {
        return v == "0" || v == "false";
    }
    store
        .repo
        .config_snapshot()
        .boolean("receipt.index")
        .is_some_and(|on| !on)
}

impl Store {
    /// Where the index file lives.
    pub fn index_path(&self) -> PathBuf {
        self.repo.common_dir().join(INDEX_FILE)
    }

    /// The receipt index, brought up to date with every chain first (and written
    /// back, unless reads see proposed refs, as in a server hook, or the file is
    /// turned off). Cached for the life of this `Store`, and checked against the
    /// chain tips again only after this process may have moved a ref (a ref edit
    /// by any store, a git command run by one: `refs_moved`): a command
    /// sees the chains as they were when it first looked, plus its own writes,
    /// and one that judges many revisions reads every writer's ref once, not once
    /// per revision (ten thousand loose ref files cost more than a gate's work).
    /// What another process writes meanwhile is seen by the next command, as a
    /// write that lands just after this command's first look would be.
    pub fn receipt_index(&self) -> Result<std::sync::Arc<Index>, StoreError> {
        let mut slot = self.index.lock().expect("index slot");
        // read before the tips are: a move during the check is seen next call
        let moved = super::refs_moved();
        let current = match slot.take() {
            Some((i, checked)) if checked == moved => {
                *slot = Some((i.clone(), checked));
                return Ok(i);
            }
            Some((i, _)) => Some(i),
            None => self.open_index_file().map(std::sync::Arc::new),
        };
        let fresh = self.update_index(current, false)?;
        *slot = Some((fresh.clone(), moved));
        Ok(fresh)
    }

    /// Rebuild the index from the chains alone, ignoring the file, and write it.
    pub fn rebuild_index(&self) -> Result<std::sync::Arc<Index>, StoreError> {
        let mut slot = self.index.lock().expect("index slot");
        let moved = super::refs_moved();
        let fresh = self.update_index(None, true)?;
        *slot = Some((fresh.clone(), moved));
        Ok(fresh)
    }

    /// Candidates for `oid`: [`Index::lookup`] on the current index, rebuilt from
    /// the chains when a damaged block turns up during the lookup.
    pub fn index_lookup(
        &self,
        index: &mut std::sync::Arc<Index>,
        oid: &ObjectId,
    ) -> Result<Vec<Hit>, StoreError> {
        self.index_lookup_chains(index, oid, &mut |_, _| true)
    }

    /// [`Store::index_lookup`] of the chains `keep` takes (given the index and
    /// each record; see [`Index::lookup_chains_until`]).
    pub fn index_lookup_chains(
        &self,
        index: &mut std::sync::Arc<Index>,
        oid: &ObjectId,
        keep: &mut dyn FnMut(&Index, &Hit) -> bool,
    ) -> Result<Vec<Hit>, StoreError> {
        // no hits, no order to fix: the clock and config are not read
        if index.lookup_until(oid, 0).is_ok_and(|h| h.is_empty()) {
            return Ok(Vec::new());
        }
        let horizon = self.horizon_ms();
        let current = index.clone();
        match current.lookup_chains_until(oid, horizon, |h| keep(&current, h)) {
            Ok(h) => Ok(h),
            Err(why) => {
                self.notice(Notice::info(
                    "index-rebuilt",
                    format!(
                        "{why}; rebuilding {} from the chains",
                        self.index_path().display()
                    ),
                ));
                *index = self.rebuild_index()?;
                let rebuilt = index.clone();
                Ok(rebuilt
                    .lookup_chains_until(oid, horizon, |h| keep(&rebuilt, h))
                    .expect("an index built in memory is whole"))
            }
        }
    }

    /// Read no index file for the life of this `Store`: its decisions read an
    /// index built in memory from the chains (which is still written back). For
    /// `gate --verify`, which decides from what it has verified, never from a
    /// file anyone could have put in the git directory.
    pub fn ignore_index_file(&mut self) {
        self.index_file_ignored = true;
        *self.index.get_mut().expect("index slot") = None;
    }

    /// A digest of `.git/shallow` (empty when there is none): where this
    /// clone's history stops. A chain indexed up to a shallow edge (`fetch
    /// --since`) is indexed as whole, so an index written under another edge
    /// (deepened, unshallowed) is not read: its chains would lack what is
    /// there now.
    pub(super) fn shallow_stamp(&self) -> String {
        use sha2::Digest as _;
        match std::fs::read(self.repo.common_dir().join("shallow")) {
            Ok(bytes) if !bytes.is_empty() => hex::encode(sha2::Sha256::digest(&bytes)),
            _ => String::new(),
        }
    }

    /// Where the [`Store::shallow_stamp`] the index file was built under is kept.
    fn shallow_stamp_path(&self) -> PathBuf {
        self.repo.common_dir().join(format!("{INDEX_FILE}.shallow"))
    }

    fn open_index_file(&self) -> Option<Index> {
        if file_disabled(self) || self.index_file_ignored {
            return None;
        }
        let built_under = std::fs::read_to_string(self.shallow_stamp_path()).unwrap_or_default();
        // no index file yet (a fresh clone's first fetch): nothing was rebuilt
        if built_under.trim() != self.shallow_stamp() && self.index_path().exists() {
            self.notice(Notice::info(
                "index-rebuilt",
                format!(
                    "this clone's shallow edge moved since {} was written (.git/shallow changed); rebuilding it from the chains",
                    self.index_path().display()
                ),
            ));
            return None;
        }
        // no key: nothing read (nor written), every lookup in memory
        let key = mac::user_key()?;
        let path = self.index_path();
        match FileView::open(&path, key, self.repo.object_hash()) {
            Ok(Some(view)) => Some(Index {
                inner: Inner::File(view),
            }),
            Ok(None) => None,
            Err(why) => {
                self.notice(Notice::info(
                    "index-rebuilt",
                    format!("{why} ({}); rebuilding it from the chains", path.display()),
                ));
                None
            }
        }
    }

    /// Index whatever the chains have that `current` lacks; `force` ignores it.
    fn update_index(
        &self,
        current: Option<std::sync::Arc<Index>>,
        force: bool,
    ) -> Result<std::sync::Arc<Index>, StoreError> {
        // before any chain is read: an edge that moves during the build makes
        // the next reader rebuild, never trust what this one missed
        let stamp = self.shallow_stamp();
        let current = if force { None } else { current };
        if let Some(idx) = &current
            && self.tips_unchanged(
                super::CHAIN_PREFIX,
                idx.chains().iter().map(|c| (c.writer.as_str(), c.tip)),
            )
        {
            return Ok(idx.clone());
        }
        // only writer ids: `writers` skips (and warns about) any other name; a
        // tip the index holds was read and checked when it was indexed, so only
        // the tips that moved are looked up (a fetch that brings one receipt
        // from 10,000 writers looks up one object, not 10,000)
        let indexed: HashMap<&str, ObjectId> = current
            .as_ref()
            .map(|i| {
                i.chains()
                    .iter()
                    .map(|c| (c.writer.as_str(), c.tip))
                    .collect()
            })
            .unwrap_or_default();
        let tips: Vec<(String, ObjectId)> =
            self.tips_under_known(super::CHAIN_PREFIX, &|w, tip| indexed.get(w) == Some(&tip))?;
        drop(indexed);
        if let Some(idx) = &current {
            let same = idx.chains().len() == tips.len()
                && idx
                    .chains()
                    .iter()
                    .zip(&tips)
                    .all(|(c, (w, t))| c.writer == *w && c.tip == *t);
            if same {
                return Ok(idx.clone());
            }
        }
        let old = match current {
            None => Mem::empty(self.repo.object_hash()),
            Some(arc) => match std::sync::Arc::try_unwrap(arc) {
                Ok(idx) => idx.into_mem(),
                Err(arc) => match &arc.inner {
                    Inner::File(f) => f.to_mem(),
                    Inner::Mem(m) => Ok(Mem {
                        kind: m.kind,
                        chains: m.chains.clone(),
                        records: m.records.clone(),
                        keys: m.keys.clone(),
                    }),
                },
            }
            .unwrap_or_else(|why| {
                self.notice(Notice::info(
                    "index-rebuilt",
                    format!("{why}; rebuilding it from the chains"),
                ));
                Mem::empty(self.repo.object_hash())
            }),
        };
        let mut by_writer: HashMap<String, (ChainInfo, Vec<Entry>)> = old
            .into_entries()
            .into_iter()
            .map(|(c, e)| (c.writer.clone(), (c, e)))
            .collect();
        let mut chains = Vec::with_capacity(tips.len());
        let mut jobs = Vec::new();
        for (writer, tip) in tips {
            match by_writer.remove(&writer) {
                Some((info, entries)) if info.tip == tip => chains.push((info, entries)),
                known => jobs.push((writer, tip, known)),
            }
        }
        chains.extend(self.index_chains(jobs));
        let mem = Mem::from_entries(chains, self.repo.object_hash());
        if self.overrides.is_empty() && !file_disabled(self) {
            self.write_index_file(&mem, &stamp);
        }
        Ok(std::sync::Arc::new(Index {
            inner: Inner::Mem(mem),
        }))
    }

    /// Index the chains of `jobs` (writer, tip, what was indexed before): on every
    /// core, a chain per thread, when there are several; else one chain with its
    /// receipts read on every core. Each thread reads through a [`WalkReader`]
    /// of its own.
    fn index_chains(
        &self,
        jobs: Vec<(String, ObjectId, Option<Known>)>,
    ) -> Vec<(ChainInfo, Vec<Entry>)> {
        let threads = super::worker_threads();
        if jobs.len() < 2 || threads == 1 {
            let reader = WalkReader::packed(&self.repo);
            return jobs
                .into_iter()
                .map(|(w, t, k)| index_chain(&self.repo, &reader, &self.notices, &w, t, k, true))
                .collect();
        }
        let shared = self.repo.clone().into_sync();
        let workers: Vec<(gix::Repository, WalkReader)> = WalkReader::packed(&self.repo)
            .others(threads)
            .into_iter()
            .map(|reader| (shared.to_thread_local(), reader))
            .collect();
        let notices = &*self.notices;
        super::in_order_on(jobs, workers, |(repo, reader), (w, t, k)| {
            index_chain(repo, reader, notices, &w, t, k, false)
        })
    }
}

/// What an earlier index knew of a chain.
type Known = (ChainInfo, Vec<Entry>);

/// Index one chain from `tip`, reusing what `known` indexed when the chain still
/// descends from it; a chain that moved backwards or sideways is re-indexed whole,
/// and said so in `notices`. `split` lets it read the receipts on every core.
/// Commits and receipts are read by `reader`.
fn index_chain(
    repo: &gix::Repository,
    reader: &WalkReader,
    notices: &Sink,
    writer: &str,
    tip: ObjectId,
    known: Option<Known>,
    split: bool,
) -> (ChainInfo, Vec<Entry>) {
    // A chain indexed incompletely (cut by a shallow fetch, or a missing object)
    // was recorded with a null tip, so it is read again whole until it is whole.
    let known = known.filter(|(i, _)| !i.tip.is_null());
    let stop = known.as_ref().map(|(i, _)| i.tip);
    let mut complete = true;
    let mut shallow_cut = false;
    let mut walked: Vec<Walked> = Vec::new(); // newest first
    // A ref whose tip is a receipt of another chain (one chain pushed under many
    // names) is not walked: that commit is an entry of the chain it names, so
    // nothing from it up counts here. One read per such name.
    if Some(tip) != stop
        && let Ok(ChainCommit { tree: Ok(tree), .. }) = reader.commit(repo, tip)
        && let Ok(Some((_, l))) = light_read(repo, reader, tip, tree, writer)
        && !l.named
    {
        notices.push(Notice::info(
            "chain-of-another",
            format!(
                "refs/receipts/{writer} points at a receipt of another chain; it is not read (`git receipt verify` reports it)"
            ),
        ));
        return (
            ChainInfo {
                writer: writer.to_owned(),
                tip,
                count: 0,
            },
            Vec::new(),
        );
    }
    let mut reached_stop = false;
    let mut seen = HashSet::new();
    let mut next = Some(tip);
    while let Some(c) = next {
        if Some(c) == stop {
            reached_stop = true;
            break;
        }
        if !seen.insert(c) {
            break;
        }
        let ChainCommit { tree, parents } = match reader.commit(repo, c) {
            Ok(commit) => commit,
            // the edge of a clone that took the chain from a signed checkpoint
            // (`fetch --since`): the commit below is listed in `.git/shallow`,
            // so history stops there by design. The chain here starts at it,
            // and is indexed as whole: an index written under another edge is
            // not read (`shallow_stamp`), so a deepening is indexed next time.
            Err(_)
                if walked.last().is_some_and(|w| {
                    repo.shallow_commits()
                        .ok()
                        .flatten()
                        .is_some_and(|s| s.contains(&w.commit))
                }) =>
            {
                shallow_cut = true;
                break;
            }
            Err(e) => {
                notices.push(Notice::warning(
                    "chain-cut",
                    format!(
                        "chain {writer} is unreadable at {c} ({e}); only the {} receipts above it count",
                        walked.len()
                    ),
                ));
                complete = false;
                break;
            }
        };
        let mut parents = parents.into_iter();
        let parent = parents.next();
        let merge = parents.next().is_some();
        next = parent;
        match tree {
            Ok(t) => walked.push(Walked {
                commit: c,
                tree: t,
                parent,
                merge,
            }),
            Err(_) => walked.push(Walked {
                commit: c,
                tree: ObjectId::null(c.kind()),
                parent,
                merge: false, // no readable receipt: not an entry either
            }),
        }
    }
    let mut entries = Vec::new();
    // git-receipt never writes a merge into a chain: one is an attack on
    // first-parent readers (it can hide the newer entries of its other parent),
    // and which parent the chain continues on is not for it to say. The chain
    // counts for nothing until its writer's next push replaces the merge.
    if let Some(m) = walked.iter().find(|w| w.merge) {
        notices.push(Notice::info(
            "chain-merge",
            format!(
                "chain {writer} holds commit {}, which has more than one parent: no entry of a chain does, so none of the chain's receipts count until its writer's next `git receipt push` replaces it",
                m.commit.to_hex_with_len(12)
            ),
        ));
        return (
            ChainInfo {
                writer: writer.to_owned(),
                tip: if complete {
                    tip
                } else {
                    ObjectId::null(tip.kind())
                },
                count: 0,
            },
            Vec::new(),
        );
    }
    if let Some((info, old)) = known {
        if reached_stop {
            entries = old;
        } else {
            notices.push(Notice::info(
                "chain-rewritten",
                format!(
                    "chain {writer} no longer descends from {}, the tip indexed before (now {tip}): it moved backwards or was rewritten; re-indexed it",
                    info.tip
                ),
            ));
        }
    }
    // Read newest first, the walk's order: packs keep the newest receipt whole
    // and older ones as deltas against newer, so this order reuses delta bases.
    // Entries are stored oldest first, and kept only while each follows the one
    // below it (admission's entry rules, in `store/admit.rs`, but the signature, which the
    // decision checks on every receipt it counts): the first that does not ends
    // the chain for every decision, with everything above it.
    let fresh = light_entries(repo, reader, writer, &walked, split);
    let mut below: Option<(ObjectId, u64, [u8; 8])> = entries
        .last()
        .map(|e: &Entry| (e.record.commit, e.record.position, e.record.id_prefix));
    // a chain cut by a missing object starts at its lowest readable entry
    let mut cut_start = (!complete || shallow_cut) && below.is_none();
    let mut dropped: Option<(ObjectId, usize)> = None;
    for (n, (w, e)) in walked.iter().zip(fresh).rev().enumerate() {
        let linked = |position: u64, prev: Option<[u8; 8]>| match below {
            _ if cut_start => true,
            None => w.parent.is_none() && position == 0 && prev.is_none(),
            Some((commit, below_position, id)) => {
                w.parent == Some(commit) && position == below_position + 1 && prev == Some(id)
            }
        };
        let follows = match &e {
            None => false,
            Some(Lit::Receipt(e, link)) => {
                !w.merge && link.ours && linked(e.record.position, link.prev)
            }
            // a retention stub: a link, no receipt (it counts for nothing)
            Some(Lit::Stub { position, prev, .. }) => !w.merge && linked(*position, *prev),
        };
        cut_start = false;
        match e {
            Some(Lit::Receipt(e, _)) if follows => {
                below = Some((e.record.commit, e.record.position, e.record.id_prefix));
                entries.push(e);
            }
            Some(Lit::Stub { position, id, .. }) if follows => {
                below = Some((w.commit, position, id));
            }
            _ => {
                dropped = Some((w.commit, walked.len() - n));
                break;
            }
        }
    }
    if let Some((commit, n)) = dropped {
        notices.push(Notice::info(
            "chain-entry-refused",
            format!(
                "chain {writer}: commit {} is not an entry of it (not a receipt of this chain linked to the one below), so it and what is above it ({n} commit{}) count for nothing",
                commit.to_hex_with_len(12),
                if n == 1 { "" } else { "s" }
            ),
        ));
    }
    let count = entries.len() as u64;
    (
        ChainInfo {
            writer: writer.to_owned(),
            tip: if complete {
                tip
            } else {
                ObjectId::null(tip.kind())
            },
            count,
        },
        entries,
    )
}

/// What the index takes of one receipt's bytes read for one chain
/// ([`light_checked`]), made where they were first read (a fetch's
/// admission) and held (`entry::remember_admitted`) for the index walk after it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Indexed(Option<(Entry, Link)>);

impl Indexed {
    /// [`light_checked`] of `bytes`, the receipt of chain commit `commit`, read
    /// for chain `writer`.
    pub(crate) fn of(commit: ObjectId, bytes: &[u8], writer: &str) -> Indexed {
        Indexed(light_checked(commit, bytes, writer))
    }

    /// Whether the index reads it as a receipt. (mutants: `true` is
    /// equivalent in answers: a reading of none is then held as it is, and
    /// the walk takes the same none it would read.)
    pub(crate) fn is_entry(&self) -> bool {
        self.0.is_some()
    }
}

/// [`light_checked`] of the receipt in `tree`, the tree of chain commit
/// `commit`, read for chain `writer`: what admission remembered of it, else
/// read through `reader`; `Err` when it holds no receipt to read.
fn light_read(
    repo: &gix::Repository,
    reader: &WalkReader,
    commit: ObjectId,
    tree: ObjectId,
    writer: &str,
) -> Result<Option<(Entry, Link)>, ReceiptFileProblem> {
    if let Some(d) = super::entry::recalled_derived(&commit, writer)
        && let Some(indexed) = d.indexed.downcast_ref::<Indexed>()
    {
        return Ok(indexed.0);
    }
    reader
        .receipt_file(repo, tree)
        .map(|bytes| light_checked(commit, &bytes, writer))
}

/// A chain commit's content as the index reads it.
enum Lit {
    /// A receipt: its index entry and links.
    Receipt(Entry, Link),
    /// A retention stub: its index, and the first 8 bytes of its id and prev.
    Stub {
        position: u64,
        id: [u8; 8],
        prev: Option<[u8; 8]>,
    },
}

/// A chain commit as the index walk found it.
struct Walked {
    commit: ObjectId,
    tree: ObjectId,
    parent: Option<ObjectId>,
    /// More than one parent: never an entry, and it poisons the chain.
    merge: bool,
}

/// Read and parse the receipts of chain commits of `writer`, one answer per
/// commit in order (`None`: no receipt), through `reader`; with `split`, on
/// every core for long lists (each thread through a reader like it of its own).
fn light_entries(
    repo: &gix::Repository,
    reader: &WalkReader,
    writer: &str,
    commits: &[Walked],
    split: bool,
) -> Vec<Option<Lit>> {
    let one = |repo: &gix::Repository, reader: &WalkReader, w: &Walked| match light_read(
        repo, reader, w.commit, w.tree, writer,
    ) {
        Ok(lit) => lit.map(|(e, l)| Lit::Receipt(e, l)),
        Err(ReceiptFileProblem::Stub(read)) => (*read).ok().map(|s| Lit::Stub {
            position: s.index,
            id: id_prefix(&s.id),
            prev: s.prev.as_deref().map(id_prefix),
        }),
        Err(ReceiptFileProblem::Shape(_) | ReceiptFileProblem::Oversized(_)) => None,
    };
    let threads = super::worker_threads();
    if !split || threads == 1 || commits.len() < 256 {
        return commits.iter().map(|c| one(repo, reader, c)).collect();
    }
    let shared = repo.clone().into_sync();
    let chunk = commits.len().div_ceil(threads);
    let parts = commits.chunks(chunk);
    let readers = reader.others(parts.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .zip(readers)
            .map(|(part, reader)| {
                let shared = &shared;
                s.spawn(move || {
                    let repo = shared.to_thread_local();
                    part.iter()
                        .map(|c| one(&repo, &reader, c))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("indexing threads do not panic"))
            .collect()
    })
}

impl Store {
    /// Write the index file atomically; give up quietly when another process holds
    /// the lock or the git directory is read-only (the next reader writes it).
    fn write_index_file(&self, mem: &Mem, stamp: &str) {
        let outcome = self.try_write_index_file(mem);
        if outcome == IndexWrite::Written {
            // a stamp that cannot be written is read as another edge: the
            // next reader rebuilds, nothing is lost
            let path = self.shallow_stamp_path();
            let _ = if stamp.is_empty() {
                std::fs::remove_file(&path).or_else(|e| {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })
            } else {
                std::fs::write(&path, stamp)
            };
        }
        *self.index_written.lock().expect("index write slot") = Some(outcome);
    }

    /// What became of the last attempt to write the index file, if one was made.
    pub fn index_write(&self) -> Option<IndexWrite> {
        self.index_written.lock().expect("index write slot").clone()
    }

    fn try_write_index_file(&self, mem: &Mem) -> IndexWrite {
        let Some(key) = mac::user_key() else {
            return IndexWrite::NoKey;
        };
        let path = self.index_path();
        let lock = path.with_extension("lock");
        let mut file = match super::take_file_lock(&lock) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return IndexWrite::Locked;
            }
            Err(e) => {
                return IndexWrite::Failed(format!("creating {}: {e}", lock.display()));
            }
        };
        let written = (|| {
            let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut file);
            mem.encode_to(key, &mut buffered)?;
            buffered.flush()?;
            drop(buffered);
            file.sync_all()
        })()
        .map_err(|e| format!("writing {}: {e}", lock.display()));
        crash_point("index-write");
        let renamed = written.and_then(|()| {
            std::fs::rename(&lock, &path)
                .map_err(|e| format!("renaming {} to {}: {e}", lock.display(), path.display()))
        });
        match renamed {
            Ok(()) => IndexWrite::Written,
            Err(why) => {
                let _ = std::fs::remove_file(&lock);
                IndexWrite::Failed(why)
            }
        }
    }
}

/// What became of writing the index file. Commands that only read go on in any
/// case (the index is derived); `reindex` says which it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexWrite {
    /// Written.
    Written,
    /// Another process held the lock: it writes one.
    Locked,
    /// No index key is available (see the module docs): never written.
    NoKey,
    /// An I/O error, naming the file and the operation.
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(n: u8) -> ObjectId {
        oid_of(gix::hash::Kind::Sha1, n)
    }

    fn oid_of(kind: gix::hash::Kind, n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&vec![n; kind.len_in_bytes()])
    }

    fn entry_of(kind: gix::hash::Kind, n: u8, subject: u8, inputs: u8) -> Entry {
        let oid = |n| oid_of(kind, n);
        Entry {
            record: Record {
                commit: oid(n),
                chain: 0,
                position: n as u64,
                started: 20260101000000000 + n as u64,
                id_prefix: [n; 8],
                check: check_hash("test"),
                definition: 7,
                passed: n.is_multiple_of(2),
                dirty: false,
                decision: false,
            },
            subject: oid(subject),
            inputs: oid(inputs),
        }
    }

    fn sample() -> Mem {
        sample_of(gix::hash::Kind::Sha1)
    }

    fn sample_of(kind: gix::hash::Kind) -> Mem {
        let (oid, entry) = (|n| oid_of(kind, n), |n, s, i| entry_of(kind, n, s, i));
        Mem::from_entries(
            vec![
                (
                    ChainInfo {
                        writer: "b-00".into(),
                        tip: oid(9),
                        count: 2,
                    },
                    vec![entry(1, 100, 200), entry(2, 100, 201)],
                ),
                (
                    ChainInfo {
                        writer: "a-00".into(),
                        tip: oid(8),
                        count: 1,
                    },
                    vec![entry(3, 101, 200)],
                ),
            ],
            kind,
        )
    }

    static KEY: Key = Key::from_bytes([7; 32]);
    static OTHER_KEY: Key = Key::from_bytes([8; 32]);

    fn view_of(bytes: &[u8]) -> Result<Option<FileView>, Corrupt> {
        view_as(bytes, gix::hash::Kind::Sha1)
    }

    /// `bytes` opened as the index of a repository whose ids are `kind`.
    fn view_as(bytes: &[u8], kind: gix::hash::Kind) -> Result<Option<FileView>, Corrupt> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx");
        std::fs::write(&path, bytes).unwrap();
        FileView::open(&path, &KEY, kind)
    }

    /// `before()`, then `after()` with the file `loose` gone (removed as
    /// another process would remove a ref, and put back after), in a round
    /// in which no ref moved in this process: other tests run beside these,
    /// and a round one of them moved a ref in says nothing, so it is tried
    /// again.
    fn while_gone_behind_its_back<B, A>(
        loose: &std::path::Path,
        mut before: impl FnMut() -> B,
        mut after: impl FnMut() -> A,
    ) -> (B, A) {
        for _ in 0..200 {
            let moved = super::super::refs_moved();
            let b = before();
            let bytes = std::fs::read(loose).unwrap();
            std::fs::remove_file(loose).unwrap();
            let a = after();
            let quiet = super::super::refs_moved() == moved;
            std::fs::write(loose, &bytes).unwrap();
            if quiet {
                return (b, a);
            }
        }
        panic!("no round without a ref move in this process");
    }

    /// A store reads the writers' refs for its index once, and again only
    /// after this process may have moved a ref: its own receipt is seen at once
    /// (a write through any store counts), a ref moved behind its back by
    /// another process only by the next store (the next command), and after
    /// any ref move this process makes.
    #[test]
    fn the_index_reads_the_chains_once_until_this_process_moves_a_ref() {
        use crate::freshness::rules::{Scratch, contract, key_and_trust};
        let s = Scratch::new();
        let c = s.commit(&[("f", "1")], "one");
        let rules = contract("[check \"test\"]\n\trun = true\n\trequired = true\n");
        let (key, _) = key_and_trust(3);
        let writers = |i: &Index| -> Vec<(String, ObjectId)> {
            i.chains()
                .iter()
                .map(|c| (c.writer.clone(), c.tip))
                .collect()
        };
        assert!(writers(&s.store.receipt_index().unwrap()).is_empty());
        // a receipt this process writes is seen by the store that wrote it
        let first = s.run(&key, &rules, "test", c, 0, 1).commit;
        let seen = writers(&s.store.receipt_index().unwrap());
        assert_eq!(seen.len(), 1, "its own write: {seen:?}");
        assert_eq!(seen[0].1, first);
        let chain_ref = format!("{}{}", super::super::CHAIN_PREFIX, seen[0].0);
        let loose = s.store.repo.common_dir().join(&chain_ref);
        // another process deletes the chain's ref (the file, as git would): the
        // store keeps what it read, unless a ref moved in this process meanwhile
        let (cached, again) = while_gone_behind_its_back(
            &loose,
            || s.store.receipt_index().unwrap(),
            || s.store.receipt_index().unwrap(),
        );
        assert!(
            std::sync::Arc::ptr_eq(&cached, &again),
            "read the refs again though no ref moved in this process"
        );
        assert_eq!(writers(&again), seen);
        std::fs::remove_file(&loose).unwrap();
        // the next command sees the ref gone
        let next = Store::open(s.dir.path()).unwrap();
        assert!(writers(&next.receipt_index().unwrap()).is_empty());
        // and so does this store after a ref move in this process
        super::super::refs_may_have_moved();
        assert!(writers(&s.store.receipt_index().unwrap()).is_empty());
    }

    /// A listing of the writers' refs is kept until a ref may have moved in
    /// this process, as the receipt index's tips are: what another process
    /// does meanwhile is seen by the next command, or once this one moves a
    /// ref. The index's check of its tips and the listing share it (a verify
    /// read ten thousand loose ref files once for each).
    #[test]
    fn a_listing_of_writer_refs_is_kept_until_a_ref_moves_in_this_process() {
        use super::super::{CHAIN_PREFIX, Store, refs_may_have_moved};
        use crate::freshness::rules::{Scratch, contract, key_and_trust};
        let s = Scratch::new();
        let c = s.commit(&[("f", "1")], "one");
        let rules = contract("[check \"test\"]\n\trun = true\n\trequired = true\n");
        let (key, _) = key_and_trust(4);
        let tip = s.run(&key, &rules, "test", c, 0, 1).commit;
        let listed = s.store.writers().unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(listed[0].1, tip);
        let unchanged = |store: &Store| {
            store.tips_unchanged(CHAIN_PREFIX, listed.iter().map(|(w, t)| (w.as_str(), *t)))
        };
        let loose = s
            .store
            .repo
            .common_dir()
            .join(format!("{CHAIN_PREFIX}{}", listed[0].0));
        assert!(loose.is_file(), "the chain's ref is loose");
        // another process deletes the ref (its file, as git would)
        let (known, (again, same)) = while_gone_behind_its_back(
            &loose,
            || unchanged(&s.store),
            || (s.store.writers().unwrap(), unchanged(&s.store)),
        );
        assert!(known);
        assert_eq!(again, listed, "read the refs again though none moved here");
        assert!(same);
        // this store's own append moves the tip under the same name: no
        // longer the tip it knew
        let moved = s.run(&key, &rules, "test", c, 1, 2).commit;
        assert_ne!(moved, tip);
        assert!(!unchanged(&s.store));
        assert_eq!(
            s.store.writers().unwrap(),
            vec![(listed[0].0.clone(), moved)]
        );
        std::fs::remove_file(&loose).unwrap();
        // the next command sees the ref gone
        assert!(
            Store::open(s.dir.path())
                .unwrap()
                .writers()
                .unwrap()
                .is_empty()
        );
        // and so does this store after a ref move in this process
        refs_may_have_moved();
        assert!(!unchanged(&s.store));
        assert!(s.store.writers().unwrap().is_empty());
    }

    /// A SHA-256 repository's index holds 32-byte ids (keys of 36 bytes,
    /// records of 76), says so in its header, and answers as memory does; read
    /// as the other format's index, either file is refused, never misread.
    #[test]
    fn a_sha256_index_holds_whole_ids_and_is_read_only_as_one() {
        use gix::hash::Kind::{Sha1, Sha256};
        let mem = sample_of(Sha256);
        let bytes = mem.encode(&KEY);
        assert_eq!(u32::from_le_bytes(bytes[24..28].try_into().unwrap()), 32);
        let view = view_as(&bytes, Sha256).unwrap().unwrap();
        assert_eq!((view.key_len(), view.record_len()), (36, 76));
        assert_eq!(view.chains, mem.chains);
        for o in [100, 101, 200, 201, 5] {
            let id = oid_of(Sha256, o);
            assert_eq!(view.lookup(&id).unwrap(), mem.lookup(&id), "object {o}");
        }
        assert_eq!(mem.lookup(&oid_of(Sha256, 200)).len(), 2);
        let back = view.to_mem().unwrap();
        assert_eq!(
            (back.kind, &back.records, &back.keys),
            (Sha256, &mem.records, &mem.keys)
        );
        let index = Index {
            inner: Inner::File(view),
        };
        assert_eq!(index.object_hash(), Sha256);
        let mut keys = Vec::new();
        index.each_key(|id, n, _| keys.push((id, n))).unwrap();
        assert_eq!(keys.len(), 6);
        assert!(keys.iter().all(|(id, _)| id.kind() == Sha256));
        let mut records = Vec::new();
        index.each_record(|_, r| records.push(r)).unwrap();
        assert_eq!(records, mem.records);
        assert_eq!(index.records_in(1..3).unwrap(), mem.records[1..3]);

        let wrong = view_as(&bytes, Sha1).unwrap_err();
        assert!(wrong.0.contains("object ids of 32 bytes"), "{}", wrong.0);
        let sha1 = sample().encode(&KEY);
        assert_eq!(u32::from_le_bytes(sha1[24..28].try_into().unwrap()), 20);
        let wrong = view_as(&sha1, Sha256).unwrap_err();
        assert!(wrong.0.contains("object ids of 20 bytes"), "{}", wrong.0);
    }

    #[test]
    fn the_file_answers_like_memory() {
        let mem = sample();
        let view = view_of(&mem.encode(&KEY)).unwrap().unwrap();
        assert_eq!(view.chains, mem.chains);
        for o in [100, 101, 200, 201, 5] {
            assert_eq!(
                view.lookup(&oid(o)).unwrap(),
                mem.lookup(&oid(o)),
                "object {o}"
            );
        }
        assert_eq!(mem.lookup(&oid(200)).len(), 2);
        let back = view.to_mem().unwrap();
        assert_eq!(back.records, mem.records);
        assert_eq!(back.keys, mem.keys);
    }

    /// An index of many blocks, written block by block: read back, it is the
    /// index that was written, and a writer that fails part way is an error
    /// (the caller then removes its lock file), never a panic.
    #[test]
    fn an_index_of_many_blocks_is_written_one_block_at_a_time() {
        let kind = gix::hash::Kind::Sha1;
        let chains = sixty_a_chain(kind, 40, |c, n| {
            let mut e = entry_of(kind, n, c, n.wrapping_add(c));
            e.record.commit = ObjectId::from_bytes_or_panic(&[c ^ n; 20]);
            e
        });
        let mem = Mem::from_entries(chains, kind);
        let bytes = mem.encode(&KEY);
        assert!(bytes.len() > 40 * BLOCK, "{} bytes", bytes.len());
        let view = view_of(&bytes).unwrap().unwrap();
        assert_eq!(view.chains, mem.chains);
        let back = view.to_mem().unwrap();
        assert_eq!(back.records, mem.records);
        assert_eq!(back.keys, mem.keys);
        for o in [0, 7, 39, 59, 98] {
            assert_eq!(
                view.lookup(&oid(o)).unwrap(),
                mem.lookup(&oid(o)),
                "object {o}"
            );
        }
        /// Takes `room` bytes, then fails.
        struct Full(usize);
        impl std::io::Write for Full {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                if b.len() > self.0 {
                    return Err(std::io::Error::other("disk full"));
                }
                self.0 -= b.len();
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        for room in [0, BLOCK - 1, 10 * BLOCK, bytes.len() - 1] {
            let failed = mem.encode_to(&KEY, &mut Full(room));
            assert!(
                failed.is_err_and(|e| e.to_string() == "disk full"),
                "room {room}"
            );
        }
        assert!(mem.encode_to(&KEY, &mut Full(bytes.len())).is_ok());
    }

    /// `chains` chains of 60 entries each, entry `n` of chain `c` as `entry`
    /// makes it.
    fn sixty_a_chain(
        kind: gix::hash::Kind,
        chains: u8,
        entry: impl Fn(u8, u8) -> Entry,
    ) -> Vec<(ChainInfo, Vec<Entry>)> {
        (0..chains)
            .map(|c| {
                let info = ChainInfo {
                    writer: format!("w-{c:02}"),
                    tip: oid_of(kind, c),
                    count: 60,
                };
                (info, (0..60u8).map(|n| entry(c, n)).collect())
            })
            .collect()
    }

    /// Every read of the body, within a block or across blocks, at any offset
    /// and length up to more than a block, gives the file's own bytes (the
    /// body starts the file), whether lent from a block or copied together;
    /// one running past the end is an error, never a panic.
    #[test]
    fn a_read_gives_the_file_s_bytes_within_and_across_blocks() {
        let kind = gix::hash::Kind::Sha1;
        let chains = sixty_a_chain(kind, 4, |c, n| entry_of(kind, n, c, n));
        let bytes = Mem::from_entries(chains, kind).encode(&KEY);
        let view = view_of(&bytes).unwrap().unwrap();
        assert!(view.body_len > 2 * BLOCK, "{} bytes", view.body_len);
        let lens = [0, 1, 2, 7, 24, 41, BLOCK - 1, BLOCK, BLOCK + 1];
        let offsets = (0..40)
            .chain(BLOCK - 40..BLOCK + 40)
            .chain(2 * BLOCK - 3..2 * BLOCK + 3);
        for offset in offsets {
            for len in lens {
                let got = view.read(offset, len);
                if offset + len > view.body_len {
                    assert!(got.is_err(), "{offset}+{len}");
                } else {
                    assert_eq!(got.unwrap(), &bytes[offset..offset + len], "{offset}+{len}");
                }
            }
        }
        assert!(view.read(view.body_len, 1).is_err());
        assert!(view.read(usize::MAX, 2).is_err());
    }

    #[test]
    fn every_damaged_byte_is_caught() {
        let bytes = sample().encode(&KEY);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            let caught = match view_of(&bad) {
                Err(_) => true,
                Ok(None) => false,
                Ok(Some(v)) => v.to_mem().is_err() || v.lookup(&oid(100)).is_err(),
            };
            assert!(
                caught,
                "a flipped byte at {i} of {} went unnoticed",
                bytes.len()
            );
        }
        for cut in [0, 10, bytes.len() / 2, bytes.len() - 1] {
            assert!(view_of(&bytes[..cut]).is_err(), "truncated to {cut}");
        }
    }

    /// The attack on version 2: a record relabelled and every checksum recomputed.
    /// Whoever lacks the key can only seal with another one, which is refused.
    #[test]
    fn a_file_sealed_with_another_key_is_refused() {
        let mut mem = sample();
        assert!(view_of(&mem.encode(&OTHER_KEY)).is_err_and(|e| e.0.contains("MAC mismatch")));
        mem.records[0].check = check_hash("another check");
        assert!(view_of(&mem.encode(&OTHER_KEY)).is_err());
        // a block changed and its tag recomputed with another key: the table's seal fails
        let honest = sample().encode(&KEY);
        let forged_block = mem.encode(&OTHER_KEY);
        let mut spliced = honest.clone();
        let body = honest.len() - TRAILER_LEN - TAG_LEN;
        assert_eq!(
            u64::from_le_bytes(honest[body + TAG_LEN..][..8].try_into().unwrap()) as usize,
            body,
            "the sample is one block"
        );
        spliced[..body].copy_from_slice(&forged_block[..body]);
        spliced[body..body + TAG_LEN].copy_from_slice(&forged_block[body..body + TAG_LEN]);
        assert!(view_of(&spliced).is_err_and(|e| e.0.contains("MAC mismatch")));
        // a block of another file this user sealed, with its own tag: refused too
        let mut other = sample();
        other.records[1].passed = !other.records[1].passed;
        let theirs = other.encode(&KEY);
        let mut mixed = honest.clone();
        mixed[body..body + TAG_LEN].copy_from_slice(&theirs[body..body + TAG_LEN]);
        mixed[..body].copy_from_slice(&theirs[..body]);
        assert_ne!(mixed, honest);
        assert!(view_of(&mixed).is_err_and(|e| e.0.contains("MAC mismatch")));
        assert!(view_of(&honest).unwrap().is_some());
    }

    /// The check hash is a filter only: two names that collide, which is why
    /// every decision compares the signed name again (the definition digest
    /// leaves the name out, so both filters pass for a receipt of the other).
    #[test]
    fn check_hash_is_fnv1a_and_collides_for_check_579599_and_check_762382() {
        assert_eq!(check_hash(""), 0x811c_9dc5);
        assert_eq!(check_hash("a"), 0xe40c_292c);
        assert_eq!(check_hash("foobar"), 0xbf9c_f968);
        assert_eq!(check_hash("check-579599"), check_hash("check-762382"));
        assert_ne!(check_hash("check-579599"), check_hash("check-579598"));
    }

    #[test]
    fn light_entries_take_the_body_digest_as_id() {
        let body = r#"{"chain":{"index":4,"prev":null,"writer":"w"},"check":{"definition":"sha256:00000000000000ff","name":"test"},"result":{"passed":true,"started_at":"2026-01-02T03:04:05.678Z"},"subject":{"commit":"1111111111111111111111111111111111111111","dirty":false,"inputs":"2222222222222222222222222222222222222222"}}"#;
        let bytes =
            format!(r#"{{"receipt":{body},"signature":{{"alg":"ed25519","key":"k","sig":"s"}}}}"#);
        let e = light_entry(oid(1), bytes.as_bytes()).unwrap();
        let id = crate::receipt::id_of(body.as_bytes());
        assert_eq!(e.record.id_prefix, id_prefix(&id));
        assert_eq!(e.record.position, 4);
        assert_eq!(e.record.started, 20260102030405678);
        assert_eq!(e.record.definition, 0xff);
        assert!(light_entry(oid(1), b"{}").is_none());
        let reordered = format!(r#"{{"signature":{{"alg":"ed25519"}},"receipt":{body}}}"#);
        let e = light_entry(oid(1), reordered.as_bytes()).unwrap();
        assert_eq!(
            e.record.id_prefix, [0; 8],
            "not canonical: indexed without an id"
        );
    }

    /// Each chain indexed through a walk's reader (its packs opened before
    /// some chains were packed) is indexed as reading everything the usual
    /// way indexes it, with the same notices: a chain packed with a stub and a
    /// loose entry on top, one packed, one in a pack written since, one cut
    /// at a commit whose pack entry is damaged; whole, and on top of what was
    /// indexed of it below its tip.
    #[test]
    fn chains_indexed_through_a_walk_s_packs_are_indexed_as_the_usual_read_indexes_them() {
        let m = crate::store::entry::walk_fixture::mixed();
        let repo = &m.s.store.repo;
        let late = WalkReader::packed(repo);
        let usual = WalkReader::usual();
        let index = |reader: &WalkReader, w: &str, tip: ObjectId, known: Option<Known>| {
            let notices = Sink::default();
            let indexed = index_chain(repo, reader, &notices, w, tip, known, false);
            (format!("{indexed:?}"), notices.take())
        };
        for reader in [&m.early, &late] {
            for (w, tip) in &m.writers {
                assert_eq!(
                    index(reader, w, *tip, None),
                    index(&usual, w, *tip, None),
                    "{w}"
                );
                // on what was indexed below the tip
                let below = m.commits[m.commits.iter().position(|c| c == tip).unwrap() - 1];
                let known = || {
                    Some(index_chain(
                        repo,
                        &usual,
                        &Sink::default(),
                        w,
                        below,
                        None,
                        false,
                    ))
                };
                assert_eq!(
                    index(reader, w, *tip, known()),
                    index(&usual, w, *tip, known()),
                    "{w} on what was indexed"
                );
            }
        }
        // what they are: `a`'s four receipts (its stub counts for nothing),
        // `b`'s three, `c`'s two, `d`'s top one (cut below it)
        let counts: Vec<u64> = m
            .writers
            .iter()
            .map(|(w, tip)| {
                index_chain(repo, &late, &Sink::default(), w, *tip, None, false)
                    .0
                    .count
            })
            .collect();
        assert_eq!(counts, [4, 3, 2, 1]);
        let (_, said) = index(&late, &m.writers[3].0, m.writers[3].1, None);
        assert!(said.iter().any(|n| n.code == "chain-cut"), "{said:?}");
    }
}
