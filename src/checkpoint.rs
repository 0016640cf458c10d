//! Signed checkpoints: a trusted writer's signed statement of every chain's tip
//! (a transparency log's signed tree head), so that a clone can start from it
//! rather than from each chain's first entry (`fetch --since`, `verify
//! --since-checkpoint`).
//!
//! A checkpoint is a DSSE envelope (payload type [`PAYLOAD_TYPE`]) whose payload
//! is canonical JSON ([`Payload`]): the signer's writer id and key, its place in
//! the signer's checkpoint chain (`sequence`, and `prev`, the digest of the
//! payload before it), when it was signed, and for each chain its tip commit,
//! index and receipt id, with the key that chain is signed by and what the trust
//! set said of that key. Checkpoints are stored append-only, one chain per
//! signer (see [`crate::store::checkpoints`]).
//!
//! Every entry of a checkpoint chain is checked where it enters (fetch, the
//! server hook, by [`read_chain_above`]) and again where it is used, by
//! [`read_chain_top`]: shape, canonical bytes, the signature under the key it
//! names (which the signer's writer id must name), and the links. A reader reads
//! a chain from its newest entry down only as far as the entry it starts from
//! and the one below that. Whether anyone should believe it is the reader's trust
//! set's to say ([`choose`]): a checkpoint whose signer the reader does not trust
//! is **forged**; one whose signer's newest checkpoint is older than
//! `receipt.checkpointMaxAge` is **stale** (a server can hold back new
//! checkpoints, never make old ones new); one that does not descend from the
//! checkpoint this clone accepted before is **rolled back** (`fetch` keeps the
//! local one), as is a chain that no longer descends from the tip a checkpoint
//! recorded (`verify` reports it).

use std::collections::BTreeMap;

use base64::Engine as _;
use gix::ObjectId;
use sha2::{Digest as _, Sha256};

use crate::receipt::{format_timestamp, is_valid_writer_id, writer_matches_key};
use crate::sign::{PublicKey, SigningKey};
use crate::store::checkpoints::{MAX_CHECKPOINT_BYTES, MAX_CHECKPOINTS, RawCheckpoint};
use crate::store::{Store, StoreError};
use crate::trust::{TrustSet, Trusted};

/// The DSSE payload type of a checkpoint: a signature made for a receipt
/// (SSHSIG) or an in-toto export can never be taken for one.
pub const PAYLOAD_TYPE: &str = "application/vnd.git-receipt.checkpoint+json";

/// The payload's `format`.
pub const FORMAT: &str = "git-receipt-checkpoint/1";

/// The git config key for how old a signer's newest checkpoint may be.
pub const MAX_AGE_CONFIG: &str = "receipt.checkpointMaxAge";

/// How old a signer's newest checkpoint may be, by default: 45 days (monthly
/// checkpoints, and two weeks' grace).
pub const DEFAULT_MAX_AGE_MS: u64 = 45 * DAY_MS;

const DAY_MS: u64 = 86_400_000;

/// What a checkpoint says about one chain.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mark {
    /// The chain's tip commit.
    pub tip: String,
    /// The tip receipt's `chain.index`.
    pub index: u64,
    /// The tip receipt's id.
    pub id: String,
    /// The OpenSSH fingerprint of the key the chain is signed by.
    pub key: String,
    /// What the signer's trust set said of that key ([`key_trust`]); `None`: it
    /// was not trusted, so the checkpoint vouches for none of its receipts.
    pub trust: Option<String>,
}

/// The signed statement.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Payload {
    /// [`FORMAT`].
    pub format: String,
    /// The signer's writer id (its checkpoint chain's name).
    pub signer: String,
    /// The signer's public key, an `ssh-ed25519` line.
    pub key: String,
    /// 0 for the signer's first checkpoint, then one more each.
    pub sequence: u64,
    /// `sha256:<hex>` of the previous checkpoint's payload (`None` at 0).
    pub prev: Option<String>,
    /// When it was signed (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
    pub time: String,
    /// Every chain, by writer id.
    pub chains: BTreeMap<String, Mark>,
}

/// A DSSE envelope, as `checkpoint.json` holds it (canonical JSON).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    payload: String,
    #[serde(rename = "payloadType")]
    payload_type: String,
    signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvelopeSignature {
    keyid: String,
    sig: String,
}

/// One entry of a checkpoint chain whose every rule holds.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Its commit.
    pub commit: ObjectId,
    /// What it says.
    pub payload: Payload,
    /// `sha256:<hex>` of its payload bytes (the next entry's `prev`).
    pub digest: String,
    /// `payload.time` as Unix ms.
    pub time_ms: u64,
    /// The signer's key.
    pub key: PublicKey,
}

/// Why a checkpoint commit is not an entry of its signer's checkpoint chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("checkpoint {commit}: {reason}")]
pub struct Broken {
    /// The commit.
    pub commit: ObjectId,
    /// What is wrong, in one line.
    pub reason: String,
}

/// A signer's checkpoint chain as read: the entries that hold, oldest first, and
/// why the commit above them does not (it and everything above are not part of
/// the chain).
#[derive(Debug, Clone, Default)]
pub struct SignerChain {
    /// The valid entries, oldest first.
    pub entries: Vec<Checked>,
    /// The first commit from the root up that breaks a rule.
    pub broken: Option<Broken>,
}

/// `sha256:<hex>` of `bytes`.
fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// What a trust set says of one key, as a digest: its fingerprint, validity
/// window and revocation. A checkpoint vouches for a chain's receipts only to a
/// reader whose trust set says the same of that chain's key.
pub fn key_trust(t: &Trusted) -> String {
    digest(
        format!(
            "{} {:?} {:?} {}",
            t.key.fingerprint(),
            t.valid_after,
            t.valid_before,
            t.revoked
        )
        .as_bytes(),
    )
}

/// Whether `s` is `n` lowercase hex digits.
fn is_hex_of(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `s` is `sha256:` and 64 lowercase hex digits.
fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| is_hex_of(h, 64))
}

impl Payload {
    /// Every rule a payload's own fields must follow, given the object id width
    /// of the repository (40 or 64 hex digits).
    fn check_fields(&self, hex_width: usize) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!(
                "its format is {:?}, not {FORMAT:?}",
                crate::text::escape(&self.format)
            ));
        }
        if !is_valid_writer_id(&self.signer) {
            return Err("its signer is not a writer id".into());
        }
        match (&self.prev, self.sequence) {
            (None, 0) => {}
            (Some(p), s) if s > 0 && is_digest(p) => {}
            _ => return Err("its sequence and prev disagree (prev is set exactly above 0)".into()),
        }
        for (writer, m) in &self.chains {
            let bad = |what: &str| {
                Err(format!(
                    "its mark for chain {:?} has {what}",
                    crate::text::escape(writer)
                ))
            };
            if !is_valid_writer_id(writer) {
                return Err(format!(
                    "it names {:?}, which is no writer id",
                    crate::text::escape(writer)
                ));
            }
            if !is_hex_of(&m.tip, hex_width) {
                return bad("a tip that is not an object id of this repository");
            }
            if !is_digest(&m.id) {
                return bad("an id that is not a receipt id");
            }
            if crate::sign::fingerprint_digest_of(&m.key).is_none() {
                return bad("a key that is not a fingerprint");
            }
            if m.trust.as_deref().is_some_and(|t| !is_digest(t)) {
                return bad("a trust that is not a digest");
            }
        }
        Ok(())
    }
}

/// Where a checkpoint sits, for [`check_entry`].
#[derive(Debug, Clone, Copy)]
pub enum Below<'a> {
    /// At the root of its chain.
    Root,
    /// On top of this entry.
    Entry(&'a Checked),
    /// Accepted before, its links checked then: they are not checked again.
    Accepted,
}

/// Check one checkpoint commit of `signer`'s chain where `below` says it sits:
/// every rule but whether the signer is trusted.
pub fn check_entry(
    raw: &RawCheckpoint,
    signer: &str,
    below: Below<'_>,
    hex_width: usize,
) -> Result<Checked, Broken> {
    link_entry(raw, below, || read_entry(raw, signer, hex_width))
}

/// The rules of [`check_entry`] that ask where the entry sits, in its order:
/// its parents first, then what `read` (every other rule, [`read_entry`]) says,
/// then its sequence, `prev` and time against the entry below.
fn link_entry(
    raw: &RawCheckpoint,
    below: Below<'_>,
    read: impl FnOnce() -> Result<Checked, Broken>,
) -> Result<Checked, Broken> {
    let broken = |reason: String| Broken {
        commit: raw.commit,
        reason,
    };
    let accepted = matches!(below, Below::Accepted);
    let below = match below {
        Below::Entry(b) => Some(b),
        _ => None,
    };
    let wanted: Vec<ObjectId> = below.map(|b| b.commit).into_iter().collect();
    if !accepted && raw.parents != wanted {
        return Err(broken(match below {
            None => format!(
                "the chain's first checkpoint has {} parents; it has none",
                raw.parents.len()
            ),
            Some(b) => format!(
                "its parents are not exactly the checkpoint below it ({})",
                b.commit
            ),
        }));
    }
    let checked = read()?;
    let payload = &checked.payload;
    if let Some(b) = below {
        if payload.sequence != b.payload.sequence + 1 || payload.prev.as_deref() != Some(&b.digest)
        {
            return Err(broken(format!(
                "it does not follow checkpoint {} of this signer (sequence {}, prev {})",
                b.payload.sequence,
                payload.sequence,
                payload.prev.as_deref().unwrap_or("none")
            )));
        }
        if checked.time_ms < b.time_ms {
            return Err(broken(format!(
                "it is dated {}, before the checkpoint below it ({})",
                payload.time, b.payload.time
            )));
        }
    } else if payload.sequence != 0 && !accepted {
        return Err(broken(format!(
            "it is the chain's first checkpoint but says it is number {}",
            payload.sequence
        )));
    }
    Ok(checked)
}

/// The rules of [`check_entry`] that one checkpoint commit answers alone: its
/// envelope, payload, signer, key and signature, and time.
fn read_entry(raw: &RawCheckpoint, signer: &str, hex_width: usize) -> Result<Checked, Broken> {
    let broken = |reason: String| Broken {
        commit: raw.commit,
        reason,
    };
    let file = raw.file.as_ref().map_err(|e| broken(e.clone()))?;
    let envelope: Envelope = crate::canon::from_canonical_typed(file).map_err(|e| {
        broken(format!(
            "checkpoint.json is not a canonical DSSE envelope: {e}"
        ))
    })?;
    if envelope.payload_type != PAYLOAD_TYPE {
        return Err(broken(format!(
            "its payload type is {:?}, not {PAYLOAD_TYPE:?}",
            crate::text::escape(&envelope.payload_type)
        )));
    }
    let [signature] = envelope.signatures.as_slice() else {
        return Err(broken(format!(
            "it carries {} signatures; a checkpoint carries exactly one",
            envelope.signatures.len()
        )));
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let bytes = b64
        .decode(&envelope.payload)
        .map_err(|_| broken("its payload is not base64".into()))?;
    let payload: Payload = crate::canon::from_canonical_typed(&bytes)
        .map_err(|e| broken(format!("its payload is not a canonical checkpoint: {e}")))?;
    payload.check_fields(hex_width).map_err(broken)?;
    if payload.signer != signer {
        return Err(broken(format!(
            "it is signed as {:?}, but sits in the checkpoint chain of {signer}",
            crate::text::escape(&payload.signer)
        )));
    }
    let key = PublicKey::from_openssh(&payload.key)
        .map_err(|e| broken(format!("its key is not an ssh-ed25519 key: {e}")))?;
    let fp = key.fingerprint();
    if !writer_matches_key(signer, &fp) || signature.keyid != fp {
        return Err(broken(format!(
            "its key {fp} is not the key writer id {signer} names, or not the key of its signature"
        )));
    }
    let sig = b64
        .decode(&signature.sig)
        .map_err(|_| broken("its signature is not base64".into()))?;
    crate::sign::verify_dsse(&key, PAYLOAD_TYPE, &bytes, &sig)
        .map_err(|e| broken(format!("its signature does not verify: {e}")))?;
    let time_ms = crate::clock::timestamp_ms(&payload.time)
        .filter(|&t| format_timestamp(t) == payload.time)
        .ok_or_else(|| broken("its time is not a UTC timestamp".into()))?;
    Ok(Checked {
        commit: raw.commit,
        digest: digest(&bytes),
        payload,
        time_ms,
        key,
    })
}

/// Read `signer`'s checkpoint chain from `tip` down to its root, then check it
/// from the root up ([`check_entry`]); at most [`MAX_CHECKPOINTS`] commits.
pub fn read_chain(store: &Store, signer: &str, tip: ObjectId) -> Result<SignerChain, StoreError> {
    read_chain_above(store, signer, tip, None)
}

/// [`read_chain`], but only above `base`, an entry of the chain already held
/// as valid (what a clone accepted before, the server's old tip): it is read
/// and checked alone, its own links taken as they were checked when it came,
/// and the entries above it are checked against it. `entries` then starts with
/// `base`. A `tip` that does not descend from `base` is broken at `tip`.
pub fn read_chain_above(
    store: &Store,
    signer: &str,
    tip: ObjectId,
    base: Option<ObjectId>,
) -> Result<SignerChain, StoreError> {
    let width = store.object_hash().len_in_hex();
    let broken_at = |commit, reason: String| SignerChain {
        entries: Vec::new(),
        broken: Some(Broken { commit, reason }),
    };
    let mut raws = Vec::new();
    let mut next = Some(tip);
    while let Some(c) = next {
        if Some(c) == base {
            break;
        }
        next = match read_down(store, tip, c, &mut raws) {
            Ok(n) => n,
            Err(broken) => return Ok(broken),
        };
    }
    let mut out = SignerChain::default();
    if let Some(b) = base {
        if next != Some(b) {
            return Ok(broken_at(
                tip,
                format!("it does not descend from {b}, the checkpoint accepted before it"),
            ));
        }
        let raw = store.read_checkpoint(b)?;
        match check_entry(&raw, signer, Below::Accepted, width) {
            Ok(c) => out.entries.push(c),
            Err(e) => return Ok(broken_at(b, e.reason)),
        }
    }
    // what each entry answers alone, on every core (a year's twelve payloads
    // name every chain each), then each linked to the one below, from the root
    let reads = read_entries(&raws, signer, width);
    link_up(&raws, reads, &mut out, |_| Below::Root);
    Ok(out)
}

/// Read checkpoint commit `c` of the chain from `tip` onto `raws` (newest
/// first), at most [`MAX_CHECKPOINTS`] of them: the next to read, its one
/// parent (`None` at a root or a merge), or `Err`, the chain broken there.
fn read_down(
    store: &Store,
    tip: ObjectId,
    c: ObjectId,
    raws: &mut Vec<RawCheckpoint>,
) -> Result<Option<ObjectId>, SignerChain> {
    let broken_at = |commit, reason: String| SignerChain {
        entries: Vec::new(),
        broken: Some(Broken { commit, reason }),
    };
    if raws.len() >= MAX_CHECKPOINTS {
        return Err(broken_at(
            tip,
            format!("the chain is longer than {MAX_CHECKPOINTS} checkpoints"),
        ));
    }
    let raw = match store.read_checkpoint(c) {
        Ok(r) => r,
        // a commit that is not here (or is no commit): nothing below it can
        // be read, so nothing above it can be checked
        Err(e) => return Err(broken_at(c, format!("unreadable: {e}"))),
    };
    let next = match raw.parents.as_slice() {
        [p] => Some(*p),
        _ => None,
    };
    raws.push(raw);
    Ok(next)
}

/// Link `raws` (newest first, each with its read in `reads`, in that order)
/// onto `out` from the lowest up: each on the entry below it, the lowest
/// where `lowest` says when `out` holds none; the first that breaks a rule
/// ends it, in `out.broken`.
fn link_up(
    raws: &[RawCheckpoint],
    reads: Vec<Result<Checked, Broken>>,
    out: &mut SignerChain,
    lowest: impl Fn(&RawCheckpoint) -> Below<'static>,
) {
    let mut reads = reads.into_iter().rev();
    for raw in raws.iter().rev() {
        let below = out.entries.last().map_or_else(|| lowest(raw), Below::Entry);
        let read = reads.next().expect("one read an entry");
        match link_entry(raw, below, || read) {
            Ok(c) => out.entries.push(c),
            Err(b) => {
                out.broken = Some(b);
                break;
            }
        }
    }
}

/// Whether `entry` is the one `since` starts from, met walking down a chain
/// from its newest entry.
fn picks(since: Since, entry: &Checked) -> bool {
    match since {
        Since::Newest => true,
        Since::AtOrBefore(t) => entry.time_ms <= t,
    }
}

/// The top of `signer`'s checkpoint chain, as far down as a reader starting
/// from it needs: from `tip` down to the entry `since` picks (or to the root
/// when none does), and one entry more, which is checked alone so that the
/// lowest picked entry's links are checked too. Every entry read is checked as
/// [`read_chain`] checks it, from the lowest read up; a broken one ends the
/// walk. `entries` holds the entries read, oldest first; when the walk stopped
/// above the root, the lowest of them is checked alone, not against the entry
/// below it.
///
/// What lies further down decides nothing here: each entry's `prev` is the
/// digest of the payload below it, so the entries read are, link by link, the
/// signer's own statement of its history, and the rest of the chain was checked
/// where it entered (the server's hook, `fetch`). So the cost of choosing a
/// checkpoint follows the entries it may choose, not how many were ever signed
/// (a year's twelve, each naming every chain).
pub fn read_chain_top(
    store: &Store,
    signer: &str,
    tip: ObjectId,
    since: Since,
) -> Result<SignerChain, StoreError> {
    let width = store.object_hash().len_in_hex();
    // newest first; read a window at a time, each window's entries on every
    // core (the newest and the one below it together)
    let window = crate::store::worker_threads().max(2);
    let mut raws: Vec<RawCheckpoint> = Vec::new();
    let mut reads: Vec<Result<Checked, Broken>> = Vec::new();
    let mut next = Some(tip);
    // how many entries from the top are needed: through the picked one (or a
    // broken one) and one more
    let mut needed: Option<usize> = None;
    // mutants: `==` or `<=` for `<` is equivalent in answers (a window more
    // is read, and what is past `needed` is let go unchecked)
    while needed.is_none_or(|n| raws.len() < n) {
        if next.is_none() {
            break;
        }
        let start = raws.len();
        // mutants: `<=` is equivalent in answers (a window one longer)
        while raws.len() < start + window {
            let Some(c) = next else { break };
            next = match read_down(store, tip, c, &mut raws) {
                Ok(n) => n,
                Err(broken) => return Ok(broken),
            };
        }
        reads.extend(read_entries(&raws[start..], signer, width));
        if needed.is_none() {
            needed = reads.iter().enumerate().skip(start).find_map(|(i, r)| {
                match r {
                    // a broken entry refuses the chain: nothing below it matters
                    Err(_) => Some(i + 1),
                    Ok(e) => picks(since, e).then_some(i + 2),
                }
            });
        }
    }
    let n = needed.map_or(raws.len(), |n| n.min(raws.len()));
    raws.truncate(n);
    reads.truncate(n);
    let mut out = SignerChain::default();
    // the lowest read: the root if it has no single parent (whose rules then
    // say what is wrong with it), else checked alone
    link_up(&raws, reads, &mut out, |raw| {
        if raw.parents.len() == 1 {
            Below::Accepted
        } else {
            Below::Root
        }
    });
    Ok(out)
}

/// [`read_entry`] of each of `raws`, in their order, spread over the cores.
fn read_entries(
    raws: &[RawCheckpoint],
    signer: &str,
    width: usize,
) -> Vec<Result<Checked, Broken>> {
    let threads = crate::store::worker_threads().min(raws.len()).max(1);
    crate::store::in_order_on(raws.iter().collect(), vec![(); threads], |_, raw| {
        read_entry(raw, signer, width)
    })
}

/// Build, sign and append a checkpoint of `chains` (writer id to its mark) to
/// `signer`'s checkpoint chain.
pub fn sign(
    store: &Store,
    key: &SigningKey,
    signer: &str,
    chains: BTreeMap<String, Mark>,
    now_ms: u64,
) -> Result<Checked, SignError> {
    let tip = store
        .ref_value(&crate::store::checkpoints::checkpoint_ref(signer))
        .map_err(SignError::Store)?;
    let below = match tip {
        None => None,
        Some(t) => {
            let chain = read_chain(store, signer, t).map_err(SignError::Store)?;
            if let Some(b) = chain.broken {
                return Err(SignError::Broken(b));
            }
            chain.entries.last().cloned()
        }
    };
    // never dated before the checkpoint below (a clock that went back)
    let now_ms = below.as_ref().map_or(now_ms, |b| now_ms.max(b.time_ms));
    let payload = Payload {
        format: FORMAT.into(),
        signer: signer.to_owned(),
        key: key.public().to_openssh(),
        sequence: below.as_ref().map_or(0, |b| b.payload.sequence + 1),
        prev: below.as_ref().map(|b| b.digest.clone()),
        time: format_timestamp(now_ms),
        chains,
    };
    let bytes =
        crate::canon::to_canonical(&payload).map_err(|e| SignError::Encode(e.to_string()))?;
    let sig = key
        .sign_dsse(PAYLOAD_TYPE, &bytes)
        .map_err(|e| SignError::Sign(e.to_string()))?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let envelope = Envelope {
        payload: b64.encode(&bytes),
        payload_type: PAYLOAD_TYPE.into(),
        signatures: vec![EnvelopeSignature {
            keyid: key.public().fingerprint(),
            sig: b64.encode(sig),
        }],
    };
    let file =
        crate::canon::to_canonical(&envelope).map_err(|e| SignError::Encode(e.to_string()))?;
    if too_large(file.len()) {
        return Err(SignError::Encode(format!(
            "it would be {} bytes, over the {MAX_CHECKPOINT_BYTES}-byte limit",
            file.len()
        )));
    }
    let message = format!(
        "checkpoint #{}: {} chains\n",
        payload.sequence,
        payload.chains.len()
    );
    let commit = store
        .append_checkpoint(signer, file, tip, &message)
        .map_err(SignError::Store)?;
    Ok(Checked {
        commit,
        digest: digest(&bytes),
        time_ms: now_ms,
        payload,
        key: key.public().clone(),
    })
}

/// Whether a `checkpoint.json` of `len` bytes is over [`MAX_CHECKPOINT_BYTES`]:
/// readers refuse it unread, so it is never signed.
fn too_large(len: usize) -> bool {
    len as u64 > MAX_CHECKPOINT_BYTES
}

/// Why no checkpoint was signed.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// Reading or writing the repository failed.
    #[error(transparent)]
    Store(StoreError),
    /// The signer's own checkpoint chain is broken here.
    #[error("your checkpoint chain is broken here, so nothing can follow it: {0}")]
    Broken(Broken),
    /// The checkpoint could not be encoded.
    #[error("the checkpoint could not be written: {0}")]
    Encode(String),
    /// The key could not sign.
    #[error("the checkpoint could not be signed: {0}")]
    Sign(String),
}

/// Which checkpoint of a chain to start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// The newest.
    Newest,
    /// The newest signed at or before this time (Unix ms): what `--since 90d`
    /// anchors to, so that every entry of the last 90 days is above it.
    AtOrBefore(u64),
}

/// Why one signer's checkpoints are not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The signer's writer id.
    pub signer: String,
    /// `forged`, `stale`, `future`, `broken` or `none-old-enough`.
    pub code: &'static str,
    /// One line, with the fix where there is one.
    pub reason: String,
}

/// The checkpoint chosen, and why the others were not.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// The entry to start from, if any signer's holds.
    pub checkpoint: Option<Checked>,
    /// Every signer whose checkpoints were not used, with why.
    pub refused: Vec<Refused>,
}

/// How old a signer's newest checkpoint may be: `receipt.checkpointMaxAge`
/// (`45d`, `12h`, `90m` or seconds), else [`DEFAULT_MAX_AGE_MS`]. `Err` names a
/// value that cannot be read (never taken as "no limit").
pub fn max_age_ms(store: &Store) -> Result<u64, String> {
    match store.config_string(MAX_AGE_CONFIG) {
        None => Ok(DEFAULT_MAX_AGE_MS),
        Some(v) => parse_age(&v).ok_or_else(|| {
            format!(
                "{MAX_AGE_CONFIG} = {:?} is not an age such as 45d, 12h, 90m or 3600",
                crate::text::escape(&v)
            )
        }),
    }
}

/// An age: `<n>d`, `<n>h`, `<n>m`, `<n>s` or `<n>` seconds; `None` for anything
/// else, zero, or an age past a thousand years.
pub fn parse_age(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&t[..i], c.to_ascii_lowercase()),
        _ => (t, 's'),
    };
    // u64's parser takes a leading `+`; nothing else but digits gets through it
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    let ms = match unit {
        'd' => n.checked_mul(DAY_MS)?,
        'h' => n.checked_mul(3_600_000)?,
        'm' => n.checked_mul(60_000)?,
        's' => n.checked_mul(1000)?,
        _ => return None,
    };
    (ms > 0 && ms <= 1000 * 366 * DAY_MS).then_some(ms)
}

/// Choose the checkpoint to start from among every signer's chain here: only
/// signers `trust` trusts (not revoked, inside their window when they signed),
/// only chains whose newest entry is at most `max_age_ms` old and not dated past
/// the allowed skew; of what holds, the newest entry ([`Since::Newest`]) or the
/// newest signed at or before a time (a tie goes to the signer whose writer id
/// sorts first). Every signer not used is in
/// [`Chosen::refused`], with why.
pub fn choose(
    store: &Store,
    trust: &TrustSet,
    now_ms: u64,
    max_age_ms: u64,
    since: Since,
) -> Result<Chosen, StoreError> {
    let mut refused = Vec::new();
    let mut best: Option<Checked> = None;
    for (signer, tip) in store.checkpoint_tips()? {
        let chain = read_chain_top(store, &signer, tip, since)?;
        let refuse = |code, reason: String| Refused {
            signer: signer.clone(),
            code,
            reason,
        };
        if let Some(b) = &chain.broken {
            // a broken entry is forged or damaged: what is below it may still
            // hold, but its newest word is not to be believed, so nothing is
            refused.push(refuse(
                "forged",
                format!("{b}: not a checkpoint its signer made (forged or damaged)"),
            ));
            continue;
        }
        let Some(newest) = chain.entries.last() else {
            continue;
        };
        let fp = newest.key.fingerprint();
        match trust.lookup(&fp) {
            None => {
                refused.push(refuse(
                    "forged",
                    format!(
                        "signed by {fp}, a key the trust set does not hold: not a checkpoint to start from"
                    ),
                ));
                continue;
            }
            Some(t) => {
                if let Some(why) = t.refuses(Some(newest.time_ms)) {
                    refused.push(refuse("forged", format!("not trusted: {why}")));
                    continue;
                }
            }
        }
        if newest.time_ms > now_ms.saturating_add(store.max_skew_ms()) {
            refused.push(refuse(
                "future",
                format!(
                    "its newest checkpoint is dated {}, ahead of this clock by more than receipt.maxClockSkew allows",
                    newest.payload.time
                ),
            ));
            continue;
        }
        let age = now_ms.saturating_sub(newest.time_ms);
        if age > max_age_ms {
            refused.push(refuse(
                "stale",
                format!(
                    "its newest checkpoint (#{}, {}) is {} old, past {MAX_AGE_CONFIG} ({}): a server may be holding newer ones back; ask the signer to sign one with `git receipt checkpoint --push`",
                    newest.payload.sequence,
                    newest.payload.time,
                    crate::clock::span(age),
                    crate::clock::span(max_age_ms),
                ),
            ));
            continue;
        }
        let pick = match since {
            Since::Newest => Some(newest),
            Since::AtOrBefore(t) => chain.entries.iter().rev().find(|e| e.time_ms <= t),
        };
        let Some(pick) = pick else {
            refused.push(refuse(
                "none-old-enough",
                format!(
                    "its oldest checkpoint ({}) is newer than the time asked for",
                    chain.entries[0].payload.time
                ),
            ));
            continue;
        };
        if best.as_ref().is_none_or(|b| pick.time_ms > b.time_ms) {
            best = Some(pick.clone());
        }
    }
    Ok(Chosen {
        checkpoint: best,
        refused,
    })
}

/// The marks of a checkpoint of every chain in `tips` (writer id to tip, as a
/// clean verify found them), read from each tip's receipt, with what `trust`
/// says of each chain's key.
pub fn marks(
    store: &Store,
    tips: &BTreeMap<String, String>,
    trust: &TrustSet,
) -> Result<BTreeMap<String, Mark>, StoreError> {
    let mut out = BTreeMap::new();
    for (writer, tip) in tips {
        let Ok(commit) = ObjectId::from_hex(tip.as_bytes()) else {
            continue;
        };
        let entry = store.chain_entry(writer, commit)?;
        let r = &entry.receipt;
        let key = r.signature().key.clone();
        out.insert(
            writer.clone(),
            Mark {
                tip: tip.clone(),
                index: r.body().chain.index,
                id: r.id().to_owned(),
                trust: trust.lookup(&key).map(key_trust),
                key,
            },
        );
    }
    Ok(out)
}

/// The verify checkpoint a signed checkpoint amounts to under `trust`: the tip
/// of every chain whose key `trust` says now what it said when the checkpoint
/// was signed (a key revoked, re-windowed or newly trusted since is checked
/// whole), recorded under `trust`, so that [`crate::verify::verify`] checks those
/// chains only above it, and reports any that no longer descend from it.
pub fn as_verify_checkpoint(c: &Checked, trust: &TrustSet) -> crate::verify::Checkpoint {
    let chains = c
        .payload
        .chains
        .iter()
        .filter(|(_, m)| m.trust.is_some() && trust.lookup(&m.key).map(key_trust) == m.trust)
        .map(|(w, m)| (w.clone(), m.tip.clone()))
        .collect();
    crate::verify::Checkpoint {
        version: crate::verify::CHECKPOINT_VERSION,
        trust: Some(crate::verify::trust_digest(trust)),
        chains,
        notes: BTreeMap::new(),
        signed_elsewhere: true,
    }
}

#[cfg(test)]
mod tests;
