//! Ed25519 keys, SSHSIG signing and strict verification.
//!
//! A receipt signature is an OpenSSH SSHSIG signature (see OpenSSH's
//! `PROTOCOL.sshsig`) made with an Ed25519 key, in namespace [`NAMESPACE`] with hash
//! `sha512`, over the message bytes (the canonical JSON of the receipt body). The
//! Ed25519 signature is computed over the SSHSIG *signed data*, not over the message
//! itself:
//!
//! ```text
//! byte[6]  "SSHSIG"
//! string   namespace        ("git-receipt")
//! string   reserved         ("")
//! string   hash_algorithm   ("sha512")
//! string   H(message)       (64-byte SHA-512 digest)
//! ```
//!
//! where `string` is the SSH wire encoding (big-endian `u32` length, then the bytes).
//! Only the raw 64-byte Ed25519 signature and the key's `SHA256:` fingerprint are
//! stored; together with the public key, [`armor_sshsig`] turns them back into the
//! `-----BEGIN SSH SIGNATURE-----` file that `ssh-keygen -Y verify -n git-receipt`
//! accepts.
//!
//! Verification is strict: non-canonical `S` (`S >= L`), non-canonical or small-order
//! `R`, and non-canonical or small-order public keys are all rejected, so a signature
//! is never malleable and a weak key can never vouch for arbitrary messages.
//!
//! Private keys are read from and written to OpenSSH private key files
//! (`-----BEGIN OPENSSH PRIVATE KEY-----`). Secret material is held only in buffers
//! that are zeroed when dropped, and never appears in `Debug`, `Display` or error
//! output.
//!
//! A [`SigningKey`] may instead be held by ssh-agent ([`crate::agent`]): only its
//! public half is here, the agent signs the same SSHSIG signed data, and its answer
//! is verified strictly before it is used, so a receipt cannot tell where its key
//! lived.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::hash::{Hash, Hasher};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use ed25519_dalek::{Signer as _, VerifyingKey};
use sha2::{Digest as _, Sha256, Sha512};
use zeroize::Zeroizing;

use crate::agent::{Agent, AgentError};
use crate::wire::{WireReader, put_string};

mod batch;

/// The fewest signatures checked together as one batch: fewer are checked one
/// at a time.
pub const MIN_BATCH: usize = batch::MIN_BATCH;

/// The SSHSIG namespace of every receipt signature.
///
/// Pass it to `ssh-keygen -Y verify -n` and put it in the `namespaces="..."` option of
/// an allowed-signers line.
pub const NAMESPACE: &str = "git-receipt";

/// The SSHSIG hash algorithm of every receipt signature.
const HASH_ALGORITHM: &str = "sha512";

/// The OpenSSH key type name of Ed25519 keys.
const KEY_TYPE: &str = "ssh-ed25519";

/// The six-byte preamble of SSHSIG signed data.
const SSHSIG_MAGIC: &[u8; 6] = b"SSHSIG";

/// The magic that opens the binary body of an OpenSSH private key file.
const OPENSSH_KEY_MAGIC: &[u8] = b"openssh-key-v1\0";

/// Key files larger than this are rejected unread (the largest OpenSSH keys are ~13 KiB).
const MAX_KEY_FILE_LEN: usize = 64 * 1024;

/// The length in bytes of a raw Ed25519 signature (`R || S`).
const SIGNATURE_LEN: usize = 64;

/// The length in bytes of an encoded Ed25519 public key.
const PUBLIC_KEY_LEN: usize = 32;

/// The length of an Ed25519 key blob, `string("ssh-ed25519") string(key)`.
const BLOB_LEN: usize = 4 + KEY_TYPE.len() + 4 + PUBLIC_KEY_LEN;

/// The base64 of the first 18 bytes of every Ed25519 key blob:
/// `string("ssh-ed25519")` and the first three bytes of the key's length.
const PLAIN_KEY_PREFIX: &str = "AAAAC3NzaC1lZDI1NTE5AAAA";

/// The value of each standard base64 character, 0xff for every other byte.
static BASE64_VALUE: [u8; 256] = {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut table = [0xffu8; 256];
    let mut i = 0;
    while i < 64 {
        table[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    table
};

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

/// Why a key could not be loaded, parsed or written.
///
/// Messages name the file and say how to fix the problem. They never contain private
/// key material.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key file does not exist.
    #[error(
        "signing key {path} does not exist; create one with \
         `ssh-keygen -t ed25519 -N '' -f {path}` or point receipt.signingKey at an existing \
         unencrypted OpenSSH Ed25519 private key"
    )]
    NotFound {
        /// The path that was looked up.
        path: PathBuf,
    },

    /// The key file exists but could not be read.
    #[error("cannot read signing key {path}: {source}")]
    Unreadable {
        /// The file that could not be read.
        path: PathBuf,
        /// The underlying I/O error.
        source: io::Error,
    },

    /// The private key is protected by a passphrase, which git-receipt cannot prompt
    /// for, and no ssh-agent (`SSH_AUTH_SOCK`) is there to sign with it.
    #[error(
        "signing key {path} is passphrase-protected and git-receipt cannot unlock it; \
         add it to ssh-agent (`ssh-add {path}`, with SSH_AUTH_SOCK set) and git-receipt \
         signs through the agent, or decrypt a copy with \
         `ssh-keygen -p -N '' -f <copy of the key>` and point receipt.signingKey at the copy"
    )]
    Encrypted {
        /// The encrypted key file.
        path: PathBuf,
    },

    /// The key is not an Ed25519 key.
    #[error(
        "{} has type {algorithm}, but receipts are signed with Ed25519 keys only; \
         create one with `ssh-keygen -t ed25519 -N ''`",
        origin(.path)
    )]
    NotEd25519 {
        /// The key file, if the key came from a file.
        path: Option<PathBuf>,
        /// The key's algorithm, as named in the key (e.g. `ssh-rsa`).
        algorithm: String,
    },

    /// The key is a FIDO security-key (`sk-...@openssh.com`) key.
    #[error(
        "{} is a security-key (FIDO) key of type {algorithm}, which git-receipt does not \
         support yet: its signatures also cover a touch counter and flags that a receipt \
         does not store; use a plain Ed25519 key (`ssh-keygen -t ed25519`), in a file or \
         in ssh-agent",
        origin(.path)
    )]
    SecurityKey {
        /// The key file, if the key came from a file.
        path: Option<PathBuf>,
        /// The key's algorithm, as named in the key (e.g. `sk-ssh-ed25519@openssh.com`).
        algorithm: String,
    },

    /// The key could not be parsed.
    #[error("{} is not a usable OpenSSH Ed25519 key: {reason}", origin(.path))]
    Malformed {
        /// The key file, if the key came from a file.
        path: Option<PathBuf>,
        /// What is wrong with the key, and how to fix it where that is known.
        reason: String,
    },

    /// Key generation refused to overwrite an existing file.
    #[error(
        "refusing to overwrite existing file {path}; move it away or choose a different \
         key path"
    )]
    Exists {
        /// The file that already exists.
        path: PathBuf,
    },

    /// A key file or its directory could not be written.
    #[error("cannot write {path}; check that its directory is writable and the disk is not full")]
    Write {
        /// The file or directory that could not be written.
        path: PathBuf,
        /// The underlying I/O error.
        source: io::Error,
    },
}

/// Describe where a key came from, for error messages.
fn origin(path: &Option<PathBuf>) -> String {
    match path {
        Some(path) => format!("key {}", path.display()),
        None => "the key".to_owned(),
    }
}

/// Why a signature did not verify.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// The signature or public key is not even the right shape (e.g. wrong length).
    #[error(
        "malformed signature: {reason}; the stored signature is corrupt or was not made \
         by git-receipt, re-sign the receipt"
    )]
    Malformed {
        /// What is wrong with the signature.
        reason: String,
    },

    /// The signature is well-formed but does not verify.
    #[error(
        "signature does not verify: the message was changed after signing, the signature \
         was made by a different key or in a different namespace, or it is a non-canonical \
         (malleated) encoding"
    )]
    Invalid,

    /// The public key is a small-order point, for which signatures prove nothing.
    #[error(
        "public key is a small-order (weak) Ed25519 point that would validate forged \
         signatures; it cannot be trusted, use a key made by `ssh-keygen -t ed25519`"
    )]
    WeakKey,
}

/// The SSHSIG signed data for `message` in namespace [`NAMESPACE`] with hash `sha512`.
fn signed_data(message: &[u8]) -> Vec<u8> {
    let digest = Sha512::digest(message);
    let mut out = Vec::with_capacity(6 + 4 + NAMESPACE.len() + 4 + 4 + 6 + 4 + 64);
    out.extend_from_slice(SSHSIG_MAGIC);
    put_string(&mut out, NAMESPACE.as_bytes());
    put_string(&mut out, b""); // reserved
    put_string(&mut out, HASH_ALGORITHM.as_bytes());
    put_string(&mut out, &digest);
    out
}

// ---------------------------------------------------------------------------------------
// Public keys
// ---------------------------------------------------------------------------------------

/// Why 32 bytes are not an acceptable Ed25519 public key.
enum PointError {
    /// Not the encoding of any curve point.
    NotOnCurve,
    /// A point, but not in its unique canonical encoding (`y >= p`, or `-0`).
    NonCanonical,
    /// A point of small order (at most 8): signatures under it prove nothing.
    SmallOrder,
}

impl PointError {
    fn reason(&self) -> &'static str {
        match self {
            PointError::NotOnCurve => "the 32 key bytes are not an Ed25519 curve point",
            PointError::NonCanonical => {
                "the 32 key bytes are a non-canonical encoding of an Ed25519 point"
            }
            PointError::SmallOrder => {
                "the key is a small-order (weak) Ed25519 point that would validate forged \
                 signatures"
            }
        }
    }
}

/// Decode an Ed25519 public key, accepting only canonical encodings of points of large
/// order (RFC 8032 decoding plus a small-order check).
fn decode_point(bytes: &[u8; PUBLIC_KEY_LEN]) -> Result<VerifyingKey, PointError> {
    let key = VerifyingKey::from_bytes(bytes).map_err(|_| PointError::NotOnCurve)?;
    // ed25519-dalek decompresses `y` modulo p and keeps the given bytes, so a
    // non-canonical encoding must be caught by re-encoding the point.
    if key.to_edwards().compress().as_bytes() != bytes {
        return Err(PointError::NonCanonical);
    }
    if key.is_weak() {
        return Err(PointError::SmallOrder);
    }
    Ok(key)
}

/// The SHA-256 digest that an OpenSSH fingerprint names, for exactly the one
/// spelling OpenSSH writes (`SHA256:` and 43 unpadded base64 characters, the
/// spare bits zero); `None` for any other string. Allocates nothing: receipts
/// and trust lookups read one per receipt.
pub fn fingerprint_digest_of(fingerprint: &str) -> Option<[u8; 32]> {
    let b64 = fingerprint.strip_prefix("SHA256:")?;
    let mut raw = [0u8; 33];
    let mut again = [0u8; 44];
    // decoding refuses stray trailing bits; encoding back proves the spelling
    let canonical = b64.len() == 43
        && STANDARD_NO_PAD.decode_slice(b64, &mut raw) == Ok(32)
        && STANDARD_NO_PAD.encode_slice(&raw[..32], &mut again) == Ok(43)
        && &again[..43] == b64.as_bytes();
    let mut digest = [0u8; 32];
    digest.copy_from_slice(&raw[..32]);
    canonical.then_some(digest)
}

/// An Ed25519 public key.
///
/// Every `PublicKey` made by [`PublicKey::from_openssh`] or
/// [`PublicKey::from_bytes`] is a canonically encoded Ed25519 point of large
/// order: those constructors reject non-canonical encodings and small-order (weak)
/// keys. [`PublicKey::from_openssh_deferred`] (the signers of a `.gitreceipts`,
/// where a team may list a thousand keys and a decision uses one or two) checks
/// the same on the key's first use instead: until then only its bytes are known,
/// and a key that is no valid point verifies nothing.
#[derive(Clone)]
pub struct PublicKey {
    bytes: [u8; PUBLIC_KEY_LEN],
    /// The decoded point, or why the bytes are none: set by the eager
    /// constructors, on first use for a deferred key. Boxed: a point is 192
    /// bytes, and a contract's thousand signers mostly never decode theirs.
    point: std::sync::OnceLock<Result<Box<VerifyingKey>, &'static str>>,
    /// [`PublicKey::fingerprint_digest`], computed once.
    digest: std::sync::OnceLock<[u8; 32]>,
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for PublicKey {}

impl PublicKey {
    /// Parse an OpenSSH public key line, `ssh-ed25519 AAAA... [comment]` (the format of
    /// `.pub` files and `ssh-keygen -y`).
    ///
    /// Keys of any other type give [`KeyError::NotEd25519`]; anything else that is not
    /// such a line gives [`KeyError::Malformed`].
    pub fn from_openssh(line: &str) -> Result<PublicKey, KeyError> {
        let key = Self::from_openssh_deferred(line)?;
        key.point().map_err(|reason| KeyError::Malformed {
            path: None,
            reason: reason.to_owned(),
        })?;
        Ok(key)
    }

    /// [`PublicKey::from_openssh`], except that the point is decoded (and checked
    /// canonical and of large order) on first use rather than now: the line's
    /// syntax, type and length are checked here. A key whose bytes are no valid
    /// point fails every verification with [`SignatureError::Malformed`].
    pub fn from_openssh_deferred(line: &str) -> Result<PublicKey, KeyError> {
        match Self::from_plain_line(line) {
            Some(key) => Ok(key),
            None => Self::from_any_line(line),
        }
    }

    /// [`PublicKey::from_openssh_deferred`] for any spelling OpenSSH reads.
    fn from_any_line(line: &str) -> Result<PublicKey, KeyError> {
        let malformed = |reason: &str| KeyError::Malformed {
            path: None,
            reason: reason.to_owned(),
        };
        // OpenSSH splits on ASCII blanks only; so do we (and it is cheaper: a team's
        // `.gitreceipts` may hold a thousand of these lines, read by every gate).
        let mut fields = line.split_ascii_whitespace();
        let Some(algorithm) = fields.next() else {
            return Err(malformed(
                "the public key line is empty; expected `ssh-ed25519 AAAA... [comment]`",
            ));
        };
        if algorithm != KEY_TYPE {
            if looks_like_key_type(algorithm) {
                return Err(not_ed25519(algorithm));
            }
            return Err(malformed(
                "not an OpenSSH public key line; expected `ssh-ed25519 AAAA... [comment]`",
            ));
        }
        let Some(encoded) = fields.next() else {
            return Err(malformed(
                "the key data is missing after `ssh-ed25519`; expected `ssh-ed25519 AAAA...`",
            ));
        };
        // An Ed25519 key blob is 51 bytes: decode onto the stack, and only a
        // longer (so malformed) one into the heap, for the same error as ever.
        let not_base64 = || malformed("the key data after `ssh-ed25519` is not valid base64");
        let mut small = [0u8; 64];
        let heap;
        let blob: &[u8] = match STANDARD.decode_slice(encoded, &mut small) {
            Ok(n) => &small[..n],
            Err(base64::DecodeSliceError::OutputSliceTooSmall) => {
                heap = STANDARD.decode(encoded).map_err(|_| not_base64())?;
                &heap
            }
            Err(_) => return Err(not_base64()),
        };
        Self::from_blob(blob).map_err(|err| match err {
            KeyError::Malformed { reason, .. } => malformed(&reason),
            other => other,
        })
    }

    /// The key of a line spelled the way `ssh-keygen` and `git receipt key show`
    /// write it, `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI...[ comment]`, decoded
    /// straight from its 44 characters of key; `None` for any other spelling,
    /// which the general reader takes (with its errors). A contract may list a
    /// thousand such lines, read by every gate.
    ///
    /// The blob is `string("ssh-ed25519") string(32 bytes)`, 51 bytes: its first
    /// 18 bytes are the 24 characters [`PLAIN_KEY_PREFIX`] spells, and the 33
    /// after them (`0x20`, the length's last byte, then the key) are exactly 44
    /// characters, so no padding and no spare bits: the spelling is the only one.
    fn from_plain_line(line: &str) -> Option<PublicKey> {
        let rest = line.strip_prefix("ssh-ed25519 ")?;
        let encoded = rest.as_bytes().get(..68)?;
        if rest
            .as_bytes()
            .get(68)
            .is_some_and(|b| !b.is_ascii_whitespace())
        {
            return None;
        }
        let tail = encoded.strip_prefix(PLAIN_KEY_PREFIX.as_bytes())?;
        let mut bytes = [0u8; 33];
        for (chunk, out) in tail.chunks_exact(4).zip(bytes.chunks_exact_mut(3)) {
            let mut n = 0u32;
            for &c in chunk {
                let v = BASE64_VALUE[c as usize];
                if v == 0xff {
                    return None;
                }
                n = n << 6 | u32::from(v);
            }
            out.copy_from_slice(&n.to_be_bytes()[1..]);
        }
        if bytes[0] != PUBLIC_KEY_LEN as u8 {
            return None;
        }
        let mut key = [0u8; PUBLIC_KEY_LEN];
        key.copy_from_slice(&bytes[1..]);
        Some(PublicKey::deferred(&key))
    }

    /// Parse the SSH wire-format public key blob `string("ssh-ed25519") string(key)`.
    fn from_blob(blob: &[u8]) -> Result<PublicKey, KeyError> {
        let mut reader = WireReader::new(blob);
        let algorithm = reader.string().ok_or_else(|| KeyError::Malformed {
            path: None,
            reason: "the key blob is truncated".to_owned(),
        })?;
        if algorithm != KEY_TYPE.as_bytes() {
            return Err(not_ed25519(&String::from_utf8_lossy(algorithm)));
        }
        let key = reader
            .string()
            .and_then(|key| <&[u8; PUBLIC_KEY_LEN]>::try_from(key).ok());
        match key {
            Some(key) if reader.is_empty() => Ok(PublicKey::deferred(key)),
            _ => Err(KeyError::Malformed {
                path: None,
                reason: "the key blob does not hold exactly one 32-byte Ed25519 key".to_owned(),
            }),
        }
    }

    /// The OpenSSH public key line `ssh-ed25519 AAAA...`, without a comment.
    pub fn to_openssh(&self) -> String {
        format!("{KEY_TYPE} {}", STANDARD.encode(self.blob()))
    }

    /// The key's fingerprint exactly as `ssh-keygen -lf` prints it: `SHA256:` followed by
    /// the unpadded base64 of [`PublicKey::fingerprint_digest`].
    pub fn fingerprint(&self) -> String {
        format!(
            "SHA256:{}",
            STANDARD_NO_PAD.encode(self.fingerprint_digest())
        )
    }

    /// The raw SHA-256 digest of the SSH wire-format public key blob
    /// (`string("ssh-ed25519") string(key)`), which is what OpenSSH fingerprints.
    pub fn fingerprint_digest(&self) -> [u8; 32] {
        *self
            .digest
            .get_or_init(|| Sha256::digest(self.wire()).into())
    }

    /// A public key from its 32-byte Ed25519 encoding.
    ///
    /// Rejects bytes that are not a point, non-canonical encodings, and small-order
    /// (weak) points, all with [`KeyError::Malformed`].
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<PublicKey, KeyError> {
        let key = PublicKey::deferred(bytes);
        key.point().map_err(|reason| KeyError::Malformed {
            path: None,
            reason: reason.to_owned(),
        })?;
        Ok(key)
    }

    /// The bytes, the point not decoded yet.
    fn deferred(bytes: &[u8; 32]) -> PublicKey {
        PublicKey {
            bytes: *bytes,
            point: std::sync::OnceLock::new(),
            digest: std::sync::OnceLock::new(),
        }
    }

    /// The decoded point: canonical, on the curve, of large order; decoded once.
    fn point(&self) -> Result<&VerifyingKey, &'static str> {
        self.point
            .get_or_init(|| {
                decode_point(&self.bytes)
                    .map(Box::new)
                    .map_err(|e| e.reason())
            })
            .as_deref()
            .map_err(|reason| *reason)
    }

    /// Whether the key is a usable Ed25519 key (a canonical point of large order),
    /// and why not: for a deferred key, this decodes it now.
    pub fn usable(&self) -> Result<(), &'static str> {
        self.point().map(|_| ())
    }

    /// The point for a signature check; a key that is none verifies nothing.
    fn verifying(&self) -> Result<&VerifyingKey, SignatureError> {
        self.point().map_err(|reason| SignatureError::Malformed {
            reason: format!("the public key is not usable: {reason}"),
        })
    }

    /// The 32-byte Ed25519 encoding of the key.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.bytes
    }

    /// The SSH wire-format public key blob.
    pub(crate) fn blob(&self) -> Vec<u8> {
        self.wire().to_vec()
    }

    /// [`PublicKey::blob`] on the stack, `string("ssh-ed25519") string(key)`: a
    /// contract's thousand keys are hashed for their fingerprints in every gate.
    fn wire(&self) -> [u8; BLOB_LEN] {
        let mut blob = [0u8; BLOB_LEN];
        let (kind, key) = blob.split_at_mut(4 + KEY_TYPE.len());
        kind[..4].copy_from_slice(&(KEY_TYPE.len() as u32).to_be_bytes());
        kind[4..].copy_from_slice(KEY_TYPE.as_bytes());
        key[..4].copy_from_slice(&(PUBLIC_KEY_LEN as u32).to_be_bytes());
        key[4..].copy_from_slice(&self.bytes);
        blob
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PublicKey")
            .field(&self.to_openssh())
            .finish()
    }
}

impl Hash for PublicKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

/// Whether `name` looks like an SSH key algorithm name (so that a wrong type gets the
/// "use Ed25519" advice rather than "this is garbage").
fn looks_like_key_type(name: &str) -> bool {
    name.starts_with("ssh-")
        || name.starts_with("ecdsa-")
        || name.starts_with("sk-")
        || name.contains("@openssh.com")
}

// ---------------------------------------------------------------------------------------
// Private keys
// ---------------------------------------------------------------------------------------

/// An Ed25519 key that can sign: a private key held in this process, or one held
/// by ssh-agent (see [`crate::agent`]) of which only the public half is here.
///
/// Both sign the same SSHSIG signed data, so their signatures are identical. An
/// in-process secret is zeroed when the key is dropped. `Debug` prints only the
/// public fingerprint and where the key is held.
pub struct SigningKey {
    held: Held,
    public: PublicKey,
}

/// Where the private half of a [`SigningKey`] is.
enum Held {
    /// In this process's memory, read from an OpenSSH private key file.
    InProcess(ed25519_dalek::SigningKey),
    /// In ssh-agent; `key_file` is the private key file to name in `ssh-add` hints.
    Agent {
        agent: Agent,
        key_file: Option<PathBuf>,
    },
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("SigningKey");
        debug.field("fingerprint", &self.public.fingerprint());
        if let Held::Agent { agent, .. } = &self.held {
            debug.field("agent", &agent.socket());
        }
        debug.finish_non_exhaustive()
    }
}

/// What an OpenSSH key file holds, read without asking for anything.
#[derive(Debug)]
pub enum KeyFile {
    /// An unencrypted private key: it signs in this process.
    Private(Box<SigningKey>),
    /// A passphrase-protected private key: only its public half can be read, so it
    /// can sign only through an agent that holds it.
    Encrypted(PublicKey),
    /// A public key line (a `.pub` file): the private half is elsewhere.
    Public(PublicKey),
}

impl KeyFile {
    /// Read the key file at `path`: an OpenSSH private key file or a public key line
    /// (`ssh-ed25519 AAAA... [comment]`, the format of `.pub` files).
    ///
    /// Keys of other types give [`KeyError::NotEd25519`] (security keys
    /// [`KeyError::SecurityKey`]), other content [`KeyError::Malformed`].
    pub fn read(path: &Path) -> Result<KeyFile, KeyError> {
        let data = read_key_file(path)?;
        if let Some(line) = public_key_line(&data) {
            return PublicKey::from_openssh(line)
                .map(KeyFile::Public)
                .map_err(|err| err.at(path));
        }
        match parse_openssh_private_key(&data, true).map_err(|err| err.at(path))? {
            PrivateKeyFile::Unlocked(key) => Ok(KeyFile::Private(key)),
            PrivateKeyFile::Locked(public) | PrivateKeyFile::PublicHalf(public) => {
                Ok(KeyFile::Encrypted(*public))
            }
        }
    }

    /// The public key of the key file at `path`, as [`KeyFile::read`] gives it,
    /// without decoding a private key's secret half or deriving its public key
    /// from it (a scalar multiplication, in every gate): for writer ids and trust.
    /// A secret half that does not match is found when the key first signs.
    pub fn read_public(path: &Path) -> Result<PublicKey, KeyError> {
        let data = read_key_file(path)?;
        if let Some(line) = public_key_line(&data) {
            return PublicKey::from_openssh(line).map_err(|err| err.at(path));
        }
        match parse_openssh_private_key(&data, false).map_err(|err| err.at(path))? {
            PrivateKeyFile::Unlocked(key) => Ok(key.public().clone()),
            PrivateKeyFile::Locked(public) | PrivateKeyFile::PublicHalf(public) => Ok(*public),
        }
    }

    /// The public key, whichever kind of file it came from.
    pub fn public(&self) -> &PublicKey {
        match self {
            KeyFile::Private(key) => key.public(),
            KeyFile::Encrypted(public) | KeyFile::Public(public) => public,
        }
    }
}

/// The key line of a public key file (`ssh-ed25519 AAAA... [comment]`, a `.pub`
/// file), when `data` is one rather than a private key file.
fn public_key_line(data: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(data).ok()?;
    text.split_whitespace()
        .next()
        .is_some_and(looks_like_key_type)
        .then(|| text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""))
}

impl SigningKey {
    /// Load an OpenSSH private key file (`-----BEGIN OPENSSH PRIVATE KEY-----`), as
    /// written by `ssh-keygen -t ed25519`.
    ///
    /// Files with CRLF line endings are accepted. File permissions are not checked.
    /// Passphrase-protected keys give [`KeyError::Encrypted`], keys of other types
    /// [`KeyError::NotEd25519`].
    pub fn load(path: &Path) -> Result<SigningKey, KeyError> {
        let data = read_key_file(path)?;
        match parse_openssh_private_key(&data, true).map_err(|err| err.at(path))? {
            PrivateKeyFile::Unlocked(key) => Ok(*key),
            PrivateKeyFile::Locked(_) | PrivateKeyFile::PublicHalf(_) => Err(KeyError::Encrypted {
                path: path.to_owned(),
            }),
        }
    }

    /// The key `public`, held by `agent`: checks that the agent is reachable and
    /// holds it (so a missing key is reported before any work is done), then signs
    /// through the agent. `key_file` is the private key file to name in hints
    /// (`ssh-add FILE`), when known.
    pub fn in_agent(
        public: PublicKey,
        agent: Agent,
        key_file: Option<PathBuf>,
    ) -> Result<SigningKey, AgentError> {
        let key = SigningKey {
            held: Held::Agent { agent, key_file },
            public,
        };
        key.check_agent_holds_it()?;
        Ok(key)
    }

    /// The agent that holds the key, or `None` for a key held in this process.
    pub fn agent(&self) -> Option<&Agent> {
        match &self.held {
            Held::Agent { agent, .. } => Some(agent),
            Held::InProcess(_) => None,
        }
    }

    /// For an agent-held key: `Ok` when the agent lists it, else
    /// [`AgentError::LacksKey`]. Always `Ok` for an in-process key.
    fn check_agent_holds_it(&self) -> Result<(), AgentError> {
        let Held::Agent { agent, key_file } = &self.held else {
            return Ok(());
        };
        if agent.identities()?.contains(&self.public.blob()) {
            Ok(())
        } else {
            Err(AgentError::LacksKey {
                socket: agent.socket().to_owned(),
                fingerprint: self.public.fingerprint(),
                key_file: key_file.clone(),
            })
        }
    }

    /// Generate a new random key and write it to `path` as an unencrypted OpenSSH
    /// private key file (mode 0600), and its public key line (`ssh-ed25519 AAAA...
    /// comment`) to `<path>.pub`.
    ///
    /// Missing parent directories are created with mode 0700. Refuses with
    /// [`KeyError::Exists`] if `path` or `<path>.pub` already exists.
    pub fn generate(path: &Path, comment: &str) -> Result<SigningKey, KeyError> {
        let public_path = public_key_path(path);
        for existing in [path, public_path.as_path()] {
            if fs::symlink_metadata(existing).is_ok() {
                return Err(KeyError::Exists {
                    path: existing.to_owned(),
                });
            }
        }
        if comment.contains(['\n', '\r']) {
            return Err(KeyError::Malformed {
                path: Some(path.to_owned()),
                reason: "the key comment contains a line break; use a single-line comment"
                    .to_owned(),
            });
        }

        let mut seed = Zeroizing::new([0u8; 32]);
        ssh_key::getrandom::fill(seed.as_mut()).map_err(|err| KeyError::Write {
            path: path.to_owned(),
            source: io::Error::other(format!("the system random number generator failed: {err}")),
        })?;
        let secret = ed25519_dalek::SigningKey::from_bytes(&seed);
        let keypair = ssh_key::private::Ed25519Keypair::from(&secret);
        let key = SigningKey::in_process(secret);
        let encoding_error = |err: ssh_key::Error| KeyError::Write {
            path: path.to_owned(),
            source: io::Error::other(format!("cannot encode the key: {err}")),
        };
        let pem = ssh_key::PrivateKey::new(keypair.into(), comment)
            .and_then(|private| private.to_openssh(ssh_key::LineEnding::LF))
            .map_err(encoding_error)?;

        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            create_private_dirs(parent).map_err(|source| KeyError::Write {
                path: parent.to_owned(),
                source,
            })?;
        }
        write_new_file(path, pem.as_bytes(), 0o600)?;

        let mut public_line = key.public.to_openssh();
        if !comment.is_empty() {
            public_line.push(' ');
            public_line.push_str(comment);
        }
        public_line.push('\n');
        if let Err(err) = write_new_file(&public_path, public_line.as_bytes(), 0o644) {
            // Do not leave half a key pair behind; the private file is ours, just made.
            let _ = fs::remove_file(path);
            return Err(err);
        }
        Ok(key)
    }

    /// A key derived deterministically from a 32-byte Ed25519 seed (the RFC 8032
    /// private key). Meant for tests.
    pub fn from_seed(seed: &[u8; 32]) -> SigningKey {
        SigningKey::in_process(ed25519_dalek::SigningKey::from_bytes(seed))
    }

    fn in_process(secret: ed25519_dalek::SigningKey) -> SigningKey {
        let point = secret.verifying_key();
        let public = PublicKey {
            bytes: *point.as_bytes(),
            point: std::sync::OnceLock::from(Ok(Box::new(point))),
            digest: std::sync::OnceLock::new(),
        };
        SigningKey {
            held: Held::InProcess(secret),
            public,
        }
    }

    /// The in-process secret (tests look at it to prove it never leaks).
    #[cfg(test)]
    fn secret(&self) -> &ed25519_dalek::SigningKey {
        match &self.held {
            Held::InProcess(secret) => secret,
            Held::Agent { .. } => panic!("an agent key has no secret here"),
        }
    }

    /// The public half of the key.
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// Sign `message`: an SSHSIG signature in namespace [`NAMESPACE`] with hash
    /// `sha512`, returned as the raw 64-byte Ed25519 signature (`R || S`).
    ///
    /// An in-process key never fails. An agent-held key fails with an
    /// [`AgentError`] when the agent is gone, lacks the key, refuses, or returns a
    /// signature that does not verify strictly under the key.
    pub fn sign(&self, message: &[u8]) -> Result<[u8; 64], AgentError> {
        self.sign_exactly(&signed_data(message))
    }

    /// Sign a DSSE envelope's payload (in-toto export): the raw Ed25519 signature
    /// over [`dsse_pae`]`(payload_type, payload)`, in this process or by the agent,
    /// failing as [`SigningKey::sign`] does. The key only ever signs messages that
    /// begin with `SSHSIG` ([`SigningKey::sign`]) or `DSSEv1 ` (this), so a
    /// signature made for one can never be replayed as the other.
    pub fn sign_dsse(&self, payload_type: &str, payload: &[u8]) -> Result<[u8; 64], AgentError> {
        self.sign_exactly(&dsse_pae(payload_type, payload))
    }

    /// The raw Ed25519 signature over exactly `data` (already domain-separated by
    /// the caller).
    fn sign_exactly(&self, data: &[u8]) -> Result<[u8; 64], AgentError> {
        let agent = match &self.held {
            Held::InProcess(secret) => return Ok(secret.sign(data).to_bytes()),
            Held::Agent { agent, .. } => agent,
        };
        let Some(raw) = agent.sign_ed25519(&self.public.blob(), data)? else {
            // Lacking the key and refusing look the same on the wire; ask which.
            self.check_agent_holds_it()?;
            return Err(AgentError::Refused {
                socket: agent.socket().to_owned(),
                fingerprint: self.public.fingerprint(),
            });
        };
        // An agent is another process: hold its answer to the same strict rules as
        // any signature before it goes into a receipt.
        let signature = ed25519_dalek::Signature::from_bytes(&raw);
        let point = self
            .public
            .verifying()
            .map_err(|_| AgentError::BadSignature {
                socket: agent.socket().to_owned(),
                fingerprint: self.public.fingerprint(),
            })?;
        verify_strict(point, data, &signature).map_err(|_| AgentError::BadSignature {
            socket: agent.socket().to_owned(),
            fingerprint: self.public.fingerprint(),
        })?;
        Ok(raw)
    }
}

/// DSSE's pre-authentication encoding, the bytes a DSSE signature covers:
/// `DSSEv1 <len(type)> <type> <len(payload)> <payload>`, lengths in ASCII decimal.
pub fn dsse_pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut pae = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    pae.extend_from_slice(payload);
    pae
}

/// Strict verification of a DSSE signature (see [`SigningKey::sign_dsse`]).
pub fn verify_dsse(
    key: &PublicKey,
    payload_type: &str,
    payload: &[u8],
    signature: &[u8],
) -> Result<(), SignatureError> {
    let signature = parse_signature(signature)?;
    verify_strict(
        key.verifying()?,
        &dsse_pae(payload_type, payload),
        &signature,
    )
}

/// `<path>.pub`.
fn public_key_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

/// Create `dir` and its missing parents with mode 0700 (existing ones are left alone).
fn create_private_dirs(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Write `contents` to a file that must not exist yet, with the given Unix mode.
fn write_new_file(path: &Path, contents: &[u8], mode: u32) -> Result<(), KeyError> {
    let write_error = |source| KeyError::Write {
        path: path.to_owned(),
        source,
    };
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path).map_err(|err| {
        if err.kind() == io::ErrorKind::AlreadyExists {
            KeyError::Exists {
                path: path.to_owned(),
            }
        } else {
            write_error(err)
        }
    })?;
    let filled = (|| {
        #[cfg(unix)]
        {
            // The mode given to open() is reduced by the umask; make it exact.
            use std::os::unix::fs::PermissionsExt as _;
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        file.write_all(contents)?;
        file.sync_all()
    })();
    filled.map_err(|err| {
        // We created the file, so a half-written one is ours to remove.
        let _ = fs::remove_file(path);
        write_error(err)
    })
}

/// Read a key file into a buffer that is zeroed on drop.
fn read_key_file(path: &Path) -> Result<Zeroizing<Vec<u8>>, KeyError> {
    let unreadable = |source| KeyError::Unreadable {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(|err| {
        if err.kind() == io::ErrorKind::NotFound {
            KeyError::NotFound {
                path: path.to_owned(),
            }
        } else {
            unreadable(err)
        }
    })?;
    // Allocate once, big enough for the limit plus one byte, so that reading never
    // reallocates (which would leave an un-zeroed copy of the secret behind).
    let mut data = Zeroizing::new(Vec::with_capacity(MAX_KEY_FILE_LEN + 1));
    let limit = u64::try_from(MAX_KEY_FILE_LEN + 1).unwrap_or(u64::MAX);
    file.take(limit)
        .read_to_end(&mut data)
        .map_err(unreadable)?;
    if data.len() > MAX_KEY_FILE_LEN {
        return Err(KeyError::Malformed {
            path: Some(path.to_owned()),
            reason: format!(
                "the file is larger than {} KiB, so it is not an OpenSSH private key",
                MAX_KEY_FILE_LEN / 1024
            ),
        });
    }
    Ok(data)
}

impl KeyError {
    /// Attach the key file's path to an error from parsing its contents.
    fn at(self, file: &Path) -> KeyError {
        match self {
            KeyError::NotEd25519 { algorithm, .. } => KeyError::NotEd25519 {
                path: Some(file.to_owned()),
                algorithm,
            },
            KeyError::SecurityKey { algorithm, .. } => KeyError::SecurityKey {
                path: Some(file.to_owned()),
                algorithm,
            },
            KeyError::Malformed { reason, .. } => KeyError::Malformed {
                path: Some(file.to_owned()),
                reason,
            },
            KeyError::Encrypted { .. } => KeyError::Encrypted {
                path: file.to_owned(),
            },
            other => other,
        }
    }
}

/// An OpenSSH private key file, parsed.
enum PrivateKeyFile {
    /// Unencrypted: the key itself.
    Unlocked(Box<SigningKey>),
    /// Passphrase-protected: only the public half, from the unencrypted header.
    Locked(Box<PublicKey>),
    /// Unencrypted, but only the public half was asked for (the secret half is
    /// neither decoded nor checked against it).
    PublicHalf(Box<PublicKey>),
}

/// Parse the contents of an OpenSSH private key file. Errors carry no path (the
/// caller adds it).
fn parse_openssh_private_key(data: &[u8], secret: bool) -> Result<PrivateKeyFile, KeyError> {
    let malformed = |reason: &str| KeyError::Malformed {
        path: None,
        reason: reason.to_owned(),
    };
    let text = std::str::from_utf8(data).map_err(|_| {
        malformed("the file is not text; expected an OpenSSH private key (-----BEGIN OPENSSH PRIVATE KEY-----)")
    })?;

    // `lines()` splits on "\n" and strips a trailing "\r" (CRLF files); `trim()` also
    // drops stray whitespace around each line.
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let first = lines.next().unwrap_or("");
    let label = first
        .strip_prefix("-----BEGIN ")
        .and_then(|rest| rest.strip_suffix("-----"));
    match label {
        Some("OPENSSH PRIVATE KEY") => {}
        Some("RSA PRIVATE KEY") => return Err(not_ed25519("ssh-rsa")),
        Some("DSA PRIVATE KEY") => return Err(not_ed25519("ssh-dss")),
        Some("EC PRIVATE KEY") => return Err(not_ed25519("ecdsa")),
        Some("PRIVATE KEY" | "ENCRYPTED PRIVATE KEY") => {
            return Err(malformed(
                "it is a PKCS#8 PEM file; rewrite it in OpenSSH format with \
                 `ssh-keygen -p -f <file>`",
            ));
        }
        Some(other) => {
            return Err(KeyError::Malformed {
                path: None,
                reason: format!(
                    "it is a `{other}` PEM file, not an OpenSSH private key \
                     (-----BEGIN OPENSSH PRIVATE KEY-----)"
                ),
            });
        }
        None if first.starts_with("PuTTY-User-Key-File") => {
            return Err(malformed(
                "it is a PuTTY key; export it with PuTTYgen (Conversions > Export OpenSSH key)",
            ));
        }
        None if first
            .split_whitespace()
            .next()
            .is_some_and(looks_like_key_type) =>
        {
            return Err(malformed(
                "it is a public key; point at the private key file (the one without .pub)",
            ));
        }
        None => {
            return Err(malformed(
                "expected an OpenSSH private key starting with \
                 -----BEGIN OPENSSH PRIVATE KEY-----",
            ));
        }
    }

    let mut base64_body = Zeroizing::new(Vec::with_capacity(text.len()));
    let mut terminated = false;
    for line in lines {
        if line == "-----END OPENSSH PRIVATE KEY-----" {
            terminated = true;
            break;
        }
        base64_body.extend_from_slice(line.as_bytes());
    }
    if !terminated {
        return Err(malformed(
            "the -----END OPENSSH PRIVATE KEY----- line is missing; the file is truncated",
        ));
    }
    let mut binary = Zeroizing::new(vec![0u8; base64::decoded_len_estimate(base64_body.len())]);
    // The decoder's error would quote an offending byte of the secret: keep it out.
    let len = STANDARD
        .decode_slice(base64_body.as_slice(), binary.as_mut_slice())
        .map_err(|_| malformed("the key body is not valid base64; the file is corrupt"))?;
    binary.truncate(len);

    // Peek at the unencrypted header: magic, cipher, kdf, kdf options, key count, public
    // key. This classifies the key before the full parse (which cannot name algorithms
    // it does not support).
    let mut header = WireReader::new(&binary);
    let truncated = || malformed("the key data is truncated; the file is corrupt");
    if header.bytes(OPENSSH_KEY_MAGIC.len()) != Some(OPENSSH_KEY_MAGIC) {
        return Err(malformed(
            "the key data does not start with the openssh-key-v1 magic; the file is corrupt",
        ));
    }
    let cipher = header.string().ok_or_else(truncated)?;
    let _kdf = header.string().ok_or_else(truncated)?;
    let _kdf_options = header.string().ok_or_else(truncated)?;
    let key_count = header.u32().ok_or_else(truncated)?;
    if key_count != 1 {
        return Err(KeyError::Malformed {
            path: None,
            reason: format!("the file holds {key_count} keys; expected exactly one"),
        });
    }
    let public_blob = header.string().ok_or_else(truncated)?;
    let algorithm = WireReader::new(public_blob)
        .string()
        .ok_or_else(truncated)?;
    if algorithm != KEY_TYPE.as_bytes() {
        return Err(not_ed25519(&String::from_utf8_lossy(algorithm)));
    }
    let public = PublicKey::from_blob(public_blob)?;
    if cipher != b"none" {
        return Ok(PrivateKeyFile::Locked(Box::new(public)));
    }
    if !secret {
        return Ok(PrivateKeyFile::PublicHalf(Box::new(public)));
    }

    let private = ssh_key::PrivateKey::from_bytes(&binary).map_err(|err| KeyError::Malformed {
        path: None,
        reason: format!("the private key section is invalid ({err}); the file is corrupt"),
    })?;
    let keypair = private
        .key_data()
        .ed25519()
        .ok_or_else(|| not_ed25519(private.algorithm().as_str()))?;
    let secret = ed25519_dalek::SigningKey::try_from(keypair).map_err(|_| {
        malformed("the private key does not match its public key; the file is corrupt")
    })?;
    if secret.verifying_key().as_bytes() != public.as_bytes() {
        return Err(malformed(
            "the private key does not match its public key; the file is corrupt",
        ));
    }
    Ok(PrivateKeyFile::Unlocked(Box::new(SigningKey::in_process(
        secret,
    ))))
}

/// The error for a key of type `algorithm`, which is not `ssh-ed25519`: security-key
/// (FIDO) keys are "not supported yet", every other type "Ed25519 only".
fn not_ed25519(algorithm: &str) -> KeyError {
    if algorithm.starts_with("sk-") {
        return KeyError::SecurityKey {
            path: None,
            algorithm: algorithm.to_owned(),
        };
    }
    KeyError::NotEd25519 {
        path: None,
        algorithm: algorithm.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------
// Verification and armoring
// ---------------------------------------------------------------------------------------

/// Parse a 64-byte raw Ed25519 signature.
fn parse_signature(signature: &[u8]) -> Result<ed25519_dalek::Signature, SignatureError> {
    let bytes =
        <[u8; SIGNATURE_LEN]>::try_from(signature).map_err(|_| SignatureError::Malformed {
            reason: format!(
                "an Ed25519 signature is {SIGNATURE_LEN} bytes, this one is {}",
                signature.len()
            ),
        })?;
    Ok(ed25519_dalek::Signature::from_bytes(&bytes))
}

/// Strict Ed25519 verification of `signature` over `data` (which for receipts is the
/// SSHSIG signed data).
fn verify_strict(
    key: &VerifyingKey,
    data: &[u8],
    signature: &ed25519_dalek::Signature,
) -> Result<(), SignatureError> {
    if key.is_weak() {
        return Err(SignatureError::WeakKey);
    }
    // `verify_strict` rejects S >= L, small-order R and small-order keys, and compares
    // R byte-for-byte with the recomputed (canonical) encoding, so a non-canonical R
    // fails too.
    key.verify_strict(data, signature)
        .map_err(|_| SignatureError::Invalid)
}

/// Strict verification of an SSHSIG (namespace [`NAMESPACE`], hash `sha512`)
/// signature over `message`, given as the raw 64-byte Ed25519 signature.
///
/// A signature that is not 64 bytes gives [`SignatureError::Malformed`]; one that does
/// not verify, or is a non-canonical encoding, gives [`SignatureError::Invalid`].
pub fn verify(key: &PublicKey, message: &[u8], signature: &[u8]) -> Result<(), SignatureError> {
    verify_signed_data(key, &signed_data(message), signature)
}

/// [`verify`], given the SSHSIG signed data rather than the message.
fn verify_signed_data(
    key: &PublicKey,
    data: &[u8],
    signature: &[u8],
) -> Result<(), SignatureError> {
    let signature = parse_signature(signature)?;
    verify_strict(key.verifying()?, data, &signature)
}

/// One SSHSIG signature for [`verify_many`]: what [`verify`] takes.
pub struct ToVerify<'a> {
    /// The key it must verify under.
    pub key: &'a PublicKey,
    /// The signed message (a receipt body).
    pub message: &'a [u8],
    /// The raw 64-byte Ed25519 signature.
    pub signature: &'a [u8],
}

/// [`verify`] for many signatures, with the same answer for each, faster: from
/// 256 signatures on they are checked as a batch that accepts only what strict
/// verification one at a time would accept, and whatever the batch does not
/// vouch for is checked alone (see `src/sign/batch.rs` for why the answers agree).
pub fn verify_many(items: &[ToVerify<'_>]) -> Vec<Result<(), SignatureError>> {
    let data: Vec<Vec<u8>> = items.iter().map(|i| signed_data(i.message)).collect();
    let raws: Vec<Option<batch::Raw<'_>>> = items
        .iter()
        .zip(&data)
        .map(|(item, data)| {
            Some(batch::Raw {
                key: item.key.verifying().ok()?,
                data,
                signature: item.signature,
            })
        })
        .collect();
    batch::vouched(&raws)
        .into_iter()
        .zip(items.iter().zip(&data))
        .map(|(vouched, (item, data))| {
            if vouched {
                Ok(())
            } else {
                verify_signed_data(item.key, data, item.signature)
            }
        })
        .collect()
}

/// [`verify_raw_strict`] for many raw checks (public key, message, signature), with
/// the same answer for each, through the batch of [`verify_many`]: what the
/// Wycheproof tests hold the batch to.
pub fn verify_raw_strict_many(items: &[(&[u8], &[u8], &[u8])]) -> Vec<Result<(), SignatureError>> {
    let keys: Vec<Option<VerifyingKey>> = items
        .iter()
        .map(|(pk, _, _)| {
            <&[u8; PUBLIC_KEY_LEN]>::try_from(*pk)
                .ok()
                .and_then(|b| decode_point(b).ok())
        })
        .collect();
    let raws: Vec<Option<batch::Raw<'_>>> = items
        .iter()
        .zip(&keys)
        .map(|((_, data, signature), key)| {
            Some(batch::Raw {
                key: key.as_ref()?,
                data,
                signature,
            })
        })
        .collect();
    batch::vouched(&raws)
        .into_iter()
        .zip(items)
        .map(|(vouched, (pk, data, signature))| {
            if vouched {
                Ok(())
            } else {
                verify_raw_strict(pk, data, signature)
            }
        })
        .collect()
}

/// Strict verification of a raw Ed25519 signature over `message` (no SSHSIG
/// wrapping): what Wycheproof tests.
///
/// A public key that is not 32 bytes, not a point, or not canonically encoded, and a
/// signature that is not 64 bytes, give [`SignatureError::Malformed`]; a small-order
/// public key gives [`SignatureError::WeakKey`]; anything else that does not verify
/// gives [`SignatureError::Invalid`].
pub fn verify_raw_strict(
    public_key: &[u8],
    message: &[u8],
    signature: &[u8],
) -> Result<(), SignatureError> {
    let bytes =
        <&[u8; PUBLIC_KEY_LEN]>::try_from(public_key).map_err(|_| SignatureError::Malformed {
            reason: format!(
                "an Ed25519 public key is {PUBLIC_KEY_LEN} bytes, this one is {}",
                public_key.len()
            ),
        })?;
    let key = decode_point(bytes).map_err(|err| match err {
        PointError::SmallOrder => SignatureError::WeakKey,
        other => SignatureError::Malformed {
            reason: other.reason().to_owned(),
        },
    })?;
    let signature = parse_signature(signature)?;
    verify_strict(&key, message, &signature)
}

/// Armor a stored signature as an OpenSSH SSHSIG PEM file
/// (`-----BEGIN SSH SIGNATURE-----`), which
/// `ssh-keygen -Y verify -n git-receipt` reads.
pub fn armor_sshsig(key: &PublicKey, signature: &[u8; 64]) -> String {
    let public =
        ssh_key::public::KeyData::Ed25519(ssh_key::public::Ed25519PublicKey(*key.as_bytes()));
    let signature = ssh_key::Signature::new(ssh_key::Algorithm::Ed25519, signature.to_vec())
        .expect("a 64-byte Ed25519 signature is well-formed");
    ssh_key::SshSig::new(public, NAMESPACE, ssh_key::HashAlg::Sha512, signature)
        .expect("the namespace is not empty")
        .to_pem(ssh_key::LineEnding::LF)
        .expect("an SSHSIG with an Ed25519 key always encodes")
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    /// The group order L = 2^252 + 27742317777372353535851937790883648493, little-endian.
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x10,
    ];

    /// Little-endian 256-bit addition, wrapping.
    fn add(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
        let mut out = [0u8; 32];
        let mut carry = 0u16;
        for i in 0..32 {
            let sum = u16::from(a[i]) + u16::from(b[i]) + carry;
            out[i] = sum as u8;
            carry = sum >> 8;
        }
        out
    }

    /// Little-endian 256-bit `a >= b`.
    fn ge(a: &[u8; 32], b: &[u8; 32]) -> bool {
        for i in (0..32).rev() {
            if a[i] != b[i] {
                return a[i] > b[i];
            }
        }
        true
    }

    /// Little-endian 256-bit subtraction, wrapping.
    fn sub(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
        let mut out = [0u8; 32];
        let mut borrow = 0i16;
        for i in 0..32 {
            let mut diff = i16::from(a[i]) - i16::from(b[i]) - borrow;
            borrow = 0;
            if diff < 0 {
                diff += 256;
                borrow = 1;
            }
            out[i] = diff as u8;
        }
        out
    }

    /// (a + b) mod L for a, b < L.
    fn add_mod_l(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
        let sum = add(a, b); // < 2L < 2^254: no overflow
        if ge(&sum, &L) { sub(&sum, &L) } else { sum }
    }

    /// (x * y) mod L for y < L, x a little-endian integer of any length
    /// (double-and-add over the bits of x, most significant first).
    fn mul_mod_l(x: &[u8], y: &[u8; 32]) -> [u8; 32] {
        let mut acc = [0u8; 32];
        for byte in x.iter().rev() {
            for bit in (0..8).rev() {
                acc = add_mod_l(&acc, &acc);
                if byte >> bit & 1 == 1 {
                    acc = add_mod_l(&acc, y);
                }
            }
        }
        acc
    }

    fn test_key() -> SigningKey {
        SigningKey::from_seed(&[7u8; 32])
    }

    #[test]
    fn sign_verify_round_trip() {
        let key = test_key();
        let message = br#"{"check":"test","ok":true}"#;
        let signature = key.sign(message).unwrap();
        verify(key.public(), message, &signature).expect("own signature verifies");
        // Ed25519 is deterministic.
        assert_eq!(signature, key.sign(message).unwrap());
        // The raw signature is over the SSHSIG signed data, not the message.
        verify_raw_strict(key.public().as_bytes(), &signed_data(message), &signature)
            .expect("raw signature over the SSHSIG signed data");
        assert!(verify_raw_strict(key.public().as_bytes(), message, &signature).is_err());
    }

    #[test]
    fn signed_data_matches_ssh_key_crate_layout() {
        let message = b"receipt body";
        let ours = signed_data(message);
        let theirs =
            ssh_key::SshSig::signed_data(NAMESPACE, ssh_key::HashAlg::Sha512, message).unwrap();
        assert_eq!(ours, theirs);
        assert!(ours.starts_with(b"SSHSIG\0\0\0\x0bgit-receipt\0\0\0\0\0\0\0\x06sha512\0\0\0\x40"));
        assert_eq!(ours.len(), 6 + 4 + 11 + 4 + 4 + 6 + 4 + 64);
    }

    #[test]
    fn signature_verifies_through_ssh_key_crate() {
        let key = test_key();
        let message = b"cross-check";
        let armored = armor_sshsig(key.public(), &key.sign(message).unwrap());
        assert!(armored.starts_with("-----BEGIN SSH SIGNATURE-----\n"));
        assert!(armored.trim_end().ends_with("-----END SSH SIGNATURE-----"));
        let sshsig = ssh_key::SshSig::from_pem(&armored).unwrap();
        let public = ssh_key::PublicKey::from_openssh(&key.public().to_openssh()).unwrap();
        public.verify(NAMESPACE, message, &sshsig).unwrap();
        assert!(public.verify("other", message, &sshsig).is_err());
        assert!(public.verify(NAMESPACE, b"cross-checK", &sshsig).is_err());
    }

    #[test]
    fn verify_rejects_flipped_message_bit() {
        let key = test_key();
        let message = b"the message".to_vec();
        let signature = key.sign(&message).unwrap();
        for i in 0..message.len() * 8 {
            let mut tampered = message.clone();
            tampered[i / 8] ^= 1 << (i % 8);
            assert!(
                matches!(
                    verify(key.public(), &tampered, &signature),
                    Err(SignatureError::Invalid)
                ),
                "bit {i}"
            );
        }
        let mut bad_signature = signature;
        bad_signature[10] ^= 0x40;
        assert!(matches!(
            verify(key.public(), &message, &bad_signature),
            Err(SignatureError::Invalid)
        ));
    }

    #[test]
    fn verify_rejects_other_key() {
        let message = b"m";
        let signature = test_key().sign(message).unwrap();
        let other = SigningKey::from_seed(&[8u8; 32]);
        assert!(matches!(
            verify(other.public(), message, &signature),
            Err(SignatureError::Invalid)
        ));
    }

    #[test]
    fn verify_rejects_malleated_s_plus_l() {
        let key = test_key();
        let message = b"malleable?";
        let signature = key.sign(message).unwrap();
        let s: [u8; 32] = signature[32..].try_into().unwrap();
        assert!(!ge(&s, &L), "a fresh signature has a canonical S");
        let s_plus_l = add(&s, &L); // S + L < 2^254, so it still fits in 32 bytes
        assert!(ge(&s_plus_l, &L));
        let mut malleated = signature;
        malleated[32..].copy_from_slice(&s_plus_l);
        assert_ne!(malleated, signature);
        // [S + L]B == [S]B, so a verifier that does not range-check S would accept this.
        assert!(matches!(
            verify(key.public(), message, &malleated),
            Err(SignatureError::Invalid)
        ));
        assert!(matches!(
            verify_raw_strict(key.public().as_bytes(), &signed_data(message), &malleated),
            Err(SignatureError::Invalid)
        ));
    }

    #[test]
    fn verify_rejects_small_order_r() {
        // R = identity and S = k·a satisfy the cofactorless equation
        // [S]B = R + [k]A (with k = H(R || A || M)), so only the small-order R check
        // stands between this signature and acceptance.
        let key = test_key();
        let data = signed_data(b"small R");
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let mut hasher = Sha512::new();
        hasher.update(identity);
        hasher.update(key.public().as_bytes());
        hasher.update(&data);
        let k = hasher.finalize();
        let a = key.secret().to_scalar().to_bytes();
        let s = mul_mod_l(&k, &a);
        let mut forged = [0u8; 64];
        forged[..32].copy_from_slice(&identity);
        forged[32..].copy_from_slice(&s);
        // Sanity check of the construction: the lenient verifier accepts it.
        ed25519_dalek::Verifier::verify(
            key.public().point().unwrap(),
            &data,
            &ed25519_dalek::Signature::from_bytes(&forged),
        )
        .expect("construction satisfies the cofactorless equation");
        assert!(matches!(
            verify_raw_strict(key.public().as_bytes(), &data, &forged),
            Err(SignatureError::Invalid)
        ));
    }

    #[test]
    fn weak_and_non_canonical_keys_are_rejected() {
        // The identity point (y = 1): with R = identity and S = 0 every message "verifies".
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let mut forged = [0u8; 64];
        forged[0] = 1;
        assert!(matches!(
            verify_raw_strict(&identity, b"anything", &forged),
            Err(SignatureError::WeakKey)
        ));
        assert!(PublicKey::from_bytes(&identity).is_err());

        // y = p + 1 is a non-canonical encoding of the identity; y = p + 2 .. of other points.
        let mut p_plus = [0xffu8; 32];
        p_plus[31] = 0x7f;
        p_plus[0] = 0xee; // p + 1 = 2^255 - 18
        assert!(verify_raw_strict(&p_plus, b"", &forged).is_err());
        assert!(PublicKey::from_bytes(&p_plus).is_err());

        // Non-canonical encodings of large-order points must also be refused: find one.
        let mut found = false;
        for delta in 0u8..19 {
            let mut bytes = [0xffu8; 32];
            bytes[31] = 0x7f;
            bytes[0] = 0xed + delta; // p + delta
            if let Ok(point) = VerifyingKey::from_bytes(&bytes)
                && !point.is_weak()
            {
                found = true;
                assert!(matches!(
                    verify_raw_strict(&bytes, b"", &[0u8; 64]),
                    Err(SignatureError::Malformed { .. })
                ));
                assert!(PublicKey::from_bytes(&bytes).is_err());
            }
        }
        assert!(found, "some y = p + delta is a large-order point");

        assert!(matches!(
            verify_raw_strict(&[1u8; 31], b"", &[0u8; 64]),
            Err(SignatureError::Malformed { .. })
        ));
    }

    #[test]
    fn verify_rejects_wrong_length() {
        let key = test_key();
        let signature = key.sign(b"m").unwrap();
        for bad in [
            &signature[..63],
            &[signature.as_slice(), &[0]].concat()[..],
            &[][..],
        ] {
            assert!(matches!(
                verify(key.public(), b"m", bad),
                Err(SignatureError::Malformed { .. })
            ));
            assert!(matches!(
                verify_raw_strict(key.public().as_bytes(), b"m", bad),
                Err(SignatureError::Malformed { .. })
            ));
        }
    }

    #[test]
    fn signing_key_debug_hides_secret() {
        let seed = [0xa5u8; 32];
        let key = SigningKey::from_seed(&seed);
        let debug = format!("{key:?}");
        assert!(debug.contains(&key.public().fingerprint()), "{debug}");
        let scalar = key.secret().to_scalar().to_bytes();
        for secret in [seed, scalar] {
            assert!(!debug.contains(&hex::encode(secret)));
            assert!(!debug.contains(&hex::encode_upper(secret)));
            assert!(!debug.contains(&format!("{secret:?}")[1..20]));
            assert!(!debug.contains(&STANDARD_NO_PAD.encode(secret)[..16]));
        }
        assert!(!debug.contains("165, 165"), "{debug}"); // 0xa5 as decimal list
    }

    #[test]
    fn public_key_openssh_round_trip_and_fingerprint() {
        let key = test_key();
        let line = key.public().to_openssh();
        assert!(line.starts_with("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"));
        let parsed = PublicKey::from_openssh(&format!("{line} user@host\n")).unwrap();
        assert_eq!(&parsed, key.public());
        assert_eq!(PublicKey::from_bytes(parsed.as_bytes()).unwrap(), parsed);

        let theirs = ssh_key::PublicKey::from_openssh(&line).unwrap();
        assert_eq!(
            theirs.fingerprint(ssh_key::HashAlg::Sha256).to_string(),
            key.public().fingerprint()
        );
        assert_eq!(
            theirs
                .fingerprint(ssh_key::HashAlg::Sha256)
                .sha256()
                .unwrap(),
            key.public().fingerprint_digest()
        );

        assert!(matches!(
            PublicKey::from_openssh("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ user"),
            Err(KeyError::NotEd25519 { path: None, algorithm }) if algorithm == "ssh-rsa"
        ));
        assert!(matches!(
            PublicKey::from_openssh("ecdsa-sha2-nistp256 AAAA"),
            Err(KeyError::NotEd25519 { .. })
        ));
        for bad in [
            "",
            "hello world",
            "ssh-ed25519",
            "ssh-ed25519 !!!",
            "ssh-ed25519 AAAA",
        ] {
            assert!(
                matches!(
                    PublicKey::from_openssh(bad),
                    Err(KeyError::Malformed { .. })
                ),
                "{bad:?}"
            );
        }
    }

    /// An OpenSSH private key file for `key`, as ssh-key writes it.
    fn openssh_file(key: &SigningKey) -> Zeroizing<String> {
        let keypair = ssh_key::private::Ed25519Keypair::from(key.secret());
        ssh_key::PrivateKey::new(keypair.into(), "test")
            .unwrap()
            .to_openssh(ssh_key::LineEnding::LF)
            .unwrap()
    }

    fn unlocked(parsed: Result<PrivateKeyFile, KeyError>) -> SigningKey {
        match parsed {
            Ok(PrivateKeyFile::Unlocked(key)) => *key,
            Ok(PrivateKeyFile::Locked(_) | PrivateKeyFile::PublicHalf(_)) => {
                panic!("an unencrypted key reads as encrypted")
            }
            Err(err) => panic!("{err}"),
        }
    }

    #[test]
    fn parses_private_key_with_lf_and_crlf() {
        let key = test_key();
        let pem = openssh_file(&key);
        let loaded = unlocked(parse_openssh_private_key(pem.as_bytes(), true));
        assert_eq!(loaded.public(), key.public());
        let crlf = pem.replace('\n', "\r\n");
        let loaded = unlocked(parse_openssh_private_key(crlf.as_bytes(), true));
        assert_eq!(loaded.public(), key.public());
        assert_eq!(loaded.sign(b"x").unwrap(), key.sign(b"x").unwrap());
    }

    #[test]
    fn a_plainly_spelled_key_line_reads_as_the_general_reader_reads_it() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        // the prefix is what every blob starts with
        let blob = PublicKey::deferred(&[7; 32]).blob();
        assert_eq!(STANDARD.encode(&blob[..18]), PLAIN_KEY_PREFIX);
        assert_eq!(blob, PublicKey::deferred(&[7; 32]).wire());
        let (mut plain, mut other) = (0, 0);
        for i in 0..4000 {
            let mut bytes = [0u8; 32];
            bytes.iter_mut().for_each(|b| *b = next() as u8);
            let mut line = PublicKey::deferred(&bytes).to_openssh();
            if i % 2 == 1 {
                // one character changed, added or cut, or a comment after it
                let at = 12 + (next() as usize % (line.len() - 12));
                let alphabet = b"AI+/=z9 \t.-";
                let c = alphabet[next() as usize % alphabet.len()] as char;
                match next() % 4 {
                    0 => line.replace_range(at..at + 1, &c.to_string()),
                    1 => line.insert(at, c),
                    2 => {
                        line.remove(at);
                    }
                    _ => line.push_str(" user@host"),
                }
            }
            let general = PublicKey::from_any_line(&line);
            match PublicKey::from_plain_line(&line) {
                Some(key) => {
                    plain += 1;
                    assert_eq!(Some(&key), general.as_ref().ok(), "{line:?}");
                }
                None => other += 1,
            }
        }
        assert!(plain > 2000 && other > 500, "{plain} {other}");
    }

    #[test]
    fn the_public_half_alone_is_the_public_key_of_the_file() {
        let key = test_key();
        let pem = openssh_file(&key);
        match parse_openssh_private_key(pem.as_bytes(), false) {
            Ok(PrivateKeyFile::PublicHalf(public)) => assert_eq!(&*public, key.public()),
            _ => panic!("an unencrypted key file gives its public half"),
        }
        let dir = tempfile::tempdir().unwrap();
        let (private, public) = (dir.path().join("k"), dir.path().join("k.pub"));
        std::fs::write(&private, &pem).unwrap();
        std::fs::write(&public, key.public().to_openssh()).unwrap();
        for file in [&private, &public] {
            let read = KeyFile::read(file).unwrap();
            assert_eq!(&KeyFile::read_public(file).unwrap(), read.public());
        }
        // what is not a key file is refused as before
        std::fs::write(&private, &pem[..pem.len() / 2]).unwrap();
        assert!(matches!(
            KeyFile::read_public(&private),
            Err(KeyError::Malformed { .. })
        ));
    }

    #[test]
    fn private_key_errors() {
        let key = test_key();
        let pem = openssh_file(&key);
        let truncated = &pem[..pem.len() / 2];
        assert!(matches!(
            parse_openssh_private_key(truncated.as_bytes(), true),
            Err(KeyError::Malformed { .. })
        ));
        let public_line = key.public().to_openssh();
        assert!(matches!(
            parse_openssh_private_key(public_line.as_bytes(), true),
            Err(KeyError::Malformed { reason, .. }) if reason.contains("public key")
        ));
        assert!(matches!(
            parse_openssh_private_key(b"-----BEGIN RSA PRIVATE KEY-----\nAAAA\n", true),
            Err(KeyError::NotEd25519 { .. })
        ));
        assert!(matches!(
            parse_openssh_private_key(&[0xff, 0xfe, 0x00], true),
            Err(KeyError::Malformed { .. })
        ));
    }

    #[test]
    fn generate_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/key");
        let key = SigningKey::generate(&path, "me@example").unwrap();
        let loaded = SigningKey::load(&path).unwrap();
        assert_eq!(loaded.public(), key.public());
        let public = fs::read_to_string(public_key_path(&path)).unwrap();
        assert_eq!(
            public,
            format!("{} me@example\n", key.public().to_openssh())
        );
        assert!(matches!(
            SigningKey::generate(&path, ""),
            Err(KeyError::Exists { .. })
        ));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(&dir.path().join("a")), 0o700);
            assert_eq!(mode(&dir.path().join("a/b")), 0o700);
        }
    }

    #[test]
    fn error_messages_name_the_path() {
        let missing = Path::new("/nonexistent/git-receipt/key");
        let err = SigningKey::load(missing).unwrap_err();
        assert!(matches!(err, KeyError::NotFound { .. }));
        assert!(err.to_string().contains("/nonexistent/git-receipt/key"));
        let err = KeyError::Encrypted {
            path: missing.to_owned(),
        };
        assert!(err.to_string().contains("ssh-keygen -p -N"));
        let err = KeyError::NotEd25519 {
            path: None,
            algorithm: "ssh-rsa".into(),
        };
        assert!(err.to_string().contains("ssh-keygen -t ed25519"));
    }
}
