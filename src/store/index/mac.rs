//! The per-user key that seals the receipt index, and the HMAC-SHA256 it seals with.
//!
//! The key is 32 random bytes in `$XDG_CONFIG_HOME/git-receipt/index-key` (else
//! `~/.config/git-receipt/index-key`), beside the signing key and never in a
//! repository: whoever can write a repository's files (a restored CI cache, a
//! copied or shared repository, another user of the machine) cannot read it, so
//! cannot seal an index this user's git-receipt accepts. It is made on first need,
//! mode 0600, whole or not at all (written to a temporary file, then linked into
//! place only if no key is there yet: two processes racing agree on the winner's).
//! It seals the index and the record of notes built whole
//! (`.git/receipt-notes-whole`), under a domain each, and signs nothing;
//! losing it costs one rebuild of each index and one reading of the notes.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest as _, Sha256};

use crate::notice::Notice;

/// The index key's file name, in git-receipt's config directory.
pub const KEY_FILE: &str = "index-key";
const KEY_LEN: usize = 32;
const SHA256_BLOCK: usize = 64;

/// The secret that seals this user's receipt index files.
pub struct Key([u8; KEY_LEN]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)") // never the secret
    }
}

impl Key {
    /// A key from its bytes (tests, and the file).
    pub const fn from_bytes(bytes: [u8; KEY_LEN]) -> Key {
        Key(bytes)
    }

    /// HMAC-SHA256 (RFC 2104) of the concatenation of `parts`.
    pub fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        hmac_sha256(&self.0, parts)
    }
}

/// HMAC-SHA256 of the concatenation of `parts` under `key` (at most 64 bytes, as
/// every key here is).
fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    assert!(key.len() <= SHA256_BLOCK, "HMAC keys here fit one block");
    let mut ipad = [0x36u8; SHA256_BLOCK];
    let mut opad = [0x5cu8; SHA256_BLOCK];
    for (i, b) in key.iter().enumerate() {
        ipad[i] ^= b;
        opad[i] ^= b;
    }
    let mut inner = Sha256::new();
    inner.update(ipad);
    for p in parts {
        inner.update(p);
    }
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(opad);
    outer.update(inner);
    outer.finalize().into()
}

/// Equal, compared in time independent of where they differ.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// This user's index key, read or made once per process; `None` (after at most
/// one notice) when there is no place for it or it cannot be used, and the index
/// is then kept in memory only.
pub fn user_key() -> Option<&'static Key> {
    static KEY: OnceLock<Option<Key>> = OnceLock::new();
    KEY.get_or_init(|| {
        // nowhere to keep a key: quietly in memory
        let path = key_path()?;
        match load_or_create(&path) {
            Ok(key) => Some(key),
            Err(why) => {
                crate::notice::process().push(
                    Notice::info(
                        why.code(),
                        format!(
                            "the receipt index key {} {why}; the receipt index is kept in memory only (correct, slower)",
                            path.display()
                        ),
                    )
                    .about(why.subject(&path).display().to_string()),
                );
                None
            }
        }
    })
    .as_ref()
}

/// [`user_key`] when this user has one already, never making it: for what
/// only saves time when sealed (`.git/receipt-notes-whole`), so that a command
/// that otherwise writes nothing to git-receipt's config directory (a `run`
/// signing through ssh-agent) does not make the directory for it.
pub fn made_user_key() -> Option<&'static Key> {
    if key_path().is_some_and(|p| p.exists()) {
        user_key()
    } else {
        None
    }
}

/// Where this user's index key is kept; `None` with no HOME and no
/// XDG_CONFIG_HOME (or an empty one, which would put the key in whatever
/// directory the command runs in).
fn key_path() -> Option<PathBuf> {
    crate::user_dir::config_dir()
        .filter(|d| d.is_absolute())
        .map(|d| d.join(KEY_FILE))
}

/// Why the index key cannot be used: said once per process, and the index is then
/// kept in memory.
#[derive(Debug)]
pub enum KeyProblem {
    /// It is not there and cannot be made.
    Uncreatable(std::io::Error),
    /// It is there and cannot be read.
    Unreadable(std::io::Error),
    /// It changed between two reads, twice.
    Unsettled,
    /// It does not hold a key's number of bytes.
    WrongSize(usize),
    /// Group or others may read or write it (the mode).
    OpenToOthers(u32),
}

impl std::fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyProblem::Uncreatable(e) => write!(f, "cannot be created ({e})"),
            KeyProblem::Unreadable(e) => write!(f, "cannot be read ({e})"),
            KeyProblem::Unsettled => f.write_str("keeps changing while it is read"),
            KeyProblem::WrongSize(n) => write!(f, "is {n} bytes, not {KEY_LEN}"),
            KeyProblem::OpenToOthers(mode) => write!(
                f,
                "is open to other users (mode {mode:o}), who could seal a receipt index this user trusts"
            ),
        }
    }
}

impl KeyProblem {
    /// The notice code (`index-key-...`), by which the CLI finds the way out.
    pub fn code(&self) -> &'static str {
        match self {
            KeyProblem::Uncreatable(_) => "index-key-uncreatable",
            KeyProblem::Unreadable(_) => "index-key-unreadable",
            KeyProblem::Unsettled => "index-key-unsettled",
            KeyProblem::WrongSize(_) => "index-key-size",
            KeyProblem::OpenToOthers(_) => "index-key-open",
        }
    }

    /// What the way out names: the directory the key goes in when it cannot be
    /// made, else the key file at `path`.
    pub fn subject<'a>(&self, path: &'a Path) -> &'a Path {
        match self {
            KeyProblem::Uncreatable(_) => path.parent().unwrap_or(path),
            _ => path,
        }
    }
}

/// Read the key at `path`, or make it when there is none.
pub fn load_or_create(path: &Path) -> Result<Key, KeyProblem> {
    for _ in 0..2 {
        match std::fs::read(path) {
            Ok(bytes) => return key_of(path, &bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match create(path) {
                Ok(key) => return Ok(key),
                // another process made it first: read the winner's
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(KeyProblem::Uncreatable(e)),
            },
            Err(e) => return Err(KeyProblem::Unreadable(e)),
        }
    }
    Err(KeyProblem::Unsettled)
}

fn key_of(path: &Path, bytes: &[u8]) -> Result<Key, KeyProblem> {
    let Ok(bytes) = <[u8; KEY_LEN]>::try_from(bytes) else {
        return Err(KeyProblem::WrongSize(bytes.len()));
    };
    if let Some(mode) = crate::user_dir::open_to_others(path) {
        return Err(KeyProblem::OpenToOthers(mode));
    }
    Ok(Key(bytes))
}

/// Make the key: whole in a temporary file, then linked into place only when no
/// key is there yet (`AlreadyExists` when another process won).
fn create(path: &Path) -> std::io::Result<Key> {
    let dir: PathBuf = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_owned)
        .unwrap_or_else(|| PathBuf::from("."));
    {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
        builder.create(&dir)?;
    }
    let mut bytes = [0u8; KEY_LEN];
    ssh_key::getrandom::fill(&mut bytes).map_err(|e| {
        std::io::Error::other(format!("the system random number generator failed: {e}"))
    })?;
    // tempfile makes its files 0600
    let mut tmp = tempfile::Builder::new()
        .prefix(".index-key.")
        .tempfile_in(&dir)?;
    tmp.write_all(&bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist_noclobber(path).map_err(|e| e.error)?;
    Ok(Key(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        // test cases 1 and 2
        let mac = hmac_sha256(&[0x0b; 20], &[b"Hi ", b"There"]);
        assert_eq!(
            hex::encode(mac),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        let mac = hmac_sha256(b"Jefe", &[b"what do ya want for nothing?"]);
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_key_is_made_once_private_and_read_back() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cfg/git-receipt").join(KEY_FILE);
        let made = load_or_create(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = load_or_create(&path).unwrap();
        assert_eq!(made.0, again.0, "read back, not made again");
        assert_eq!(
            create(&path).unwrap_err().kind(),
            std::io::ErrorKind::AlreadyExists,
            "an existing key is never replaced"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            load_or_create(&path).unwrap_err(),
            KeyProblem::OpenToOthers(0o644)
        ));
        std::fs::write(&path, b"short").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            load_or_create(&path).unwrap_err(),
            KeyProblem::WrongSize(5)
        ));
    }

    #[test]
    fn racing_processes_agree_on_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        let keys: Vec<[u8; KEY_LEN]> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| load_or_create(&path).unwrap().0))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| *k == keys[0]), "one winner");
        assert_eq!(std::fs::read(&path).unwrap(), keys[0]);
    }
}
