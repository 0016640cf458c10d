//! Where the signing key lives, how it signs, and creating it on first use.
//!
//! Precedence: `GIT_RECEIPT_SIGNING_KEY`, then git config `receipt.signingKey`, then,
//! as git itself signs with SSH, git config `user.signingKey` when `gpg.format` is
//! `ssh`, then the default `$XDG_CONFIG_HOME/git-receipt/signing_key` (or
//! `~/.config/...`). Each setting names a key file (`~/` expanded) or holds a public
//! key itself (`ssh-ed25519 AAAA...`, or git's `key::ssh-ed25519 AAAA...`).
//!
//! What is named decides how the key signs: an unencrypted OpenSSH private key file
//! signs in this process, and so does a `.pub` file with its unencrypted private
//! key beside it (`key.pub` and `key`, as `ssh-keygen -Y sign` and so git's SSH
//! signing use it); any other public key (a `.pub` file or a literal) and a
//! passphrase-protected private key sign through ssh-agent at `SSH_AUTH_SOCK`
//! ([`crate::agent`]), which must hold the key. Only the default is created when
//! missing: a key the user named explicitly and that is not there is an error,
//! never silently replaced.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::agent::{Agent, AgentError};
use crate::sign::{KeyError, KeyFile, PublicKey, SigningKey};
pub use crate::user_dir::open_to_others;

/// Which setting named the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrigin {
    /// `GIT_RECEIPT_SIGNING_KEY`.
    Env,
    /// git config `receipt.signingKey`.
    ReceiptConfig,
    /// git config `user.signingKey`, used because `gpg.format` is `ssh`.
    GitSigningKey,
    /// Nothing: the default location, created on first use.
    Default,
}

impl fmt::Display for KeyOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyOrigin::Env => "GIT_RECEIPT_SIGNING_KEY",
            KeyOrigin::ReceiptConfig => "git config receipt.signingKey",
            KeyOrigin::GitSigningKey => "git config user.signingKey (gpg.format=ssh)",
            KeyOrigin::Default => "the default location",
        })
    }
}

/// What the setting holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLocation {
    /// A key file: a private key, or a public key line whose private half is in
    /// ssh-agent.
    File(PathBuf),
    /// A public key line given in the setting itself (`key::` prefix removed).
    Literal(String),
}

/// Where the key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySource {
    /// Which setting named it.
    pub origin: KeyOrigin,
    /// What the setting holds.
    pub location: KeyLocation,
}

impl KeySource {
    /// The key file, or `None` for a public key given as a literal.
    pub fn file(&self) -> Option<&Path> {
        match &self.location {
            KeyLocation::File(path) => Some(path),
            KeyLocation::Literal(_) => None,
        }
    }

    /// Whether nothing named the key (so it may be created).
    pub fn is_default(&self) -> bool {
        self.origin == KeyOrigin::Default
    }

    /// Whether there is a key to load: a literal, or a file that exists.
    pub fn is_present(&self) -> bool {
        self.file().is_none_or(Path::exists)
    }

    /// One line for people: what holds the key and which setting named it.
    pub fn describe(&self) -> String {
        match (&self.location, self.origin) {
            (KeyLocation::File(path), KeyOrigin::Default) => {
                format!("{} (the default location)", path.display())
            }
            (KeyLocation::File(path), origin) => format!("{} (from {origin})", path.display()),
            (KeyLocation::Literal(_), origin) => format!("the public key in {origin}"),
        }
    }

    /// The note that ends an error about this key: which setting named it.
    fn origin_note(&self) -> String {
        match (&self.location, self.origin) {
            (_, KeyOrigin::Default) => String::new(),
            (KeyLocation::File(_), origin) => format!("\n(the key path comes from {origin})"),
            (KeyLocation::Literal(_), origin) => format!("\n(the key comes from {origin})"),
        }
    }
}

/// Why no key could be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyfileError {
    /// No HOME and no XDG_CONFIG_HOME.
    #[error("cannot find a place for the signing key: neither XDG_CONFIG_HOME nor HOME is set")]
    NoHome,
    /// The key is not usable, or an explicitly named one is missing.
    #[error("{source}{origin_note}")]
    Key {
        /// Which setting named it (a line of its own, or empty for the default).
        origin_note: String,
        /// The key error.
        source: KeyError,
    },
    /// The key is held by ssh-agent, and the agent cannot sign with it.
    #[error("{source}{origin_note}")]
    Agent {
        /// Which setting named it (a line of its own, or empty for the default).
        origin_note: String,
        /// The agent error.
        source: AgentError,
    },
}

fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

/// Read a setting the way git reads `user.signingKey`: `key::` then a public key
/// line, or a bare public key line (`ssh-ed25519 AAAA...`), or else a path.
fn parse_setting(value: &str) -> KeyLocation {
    if let Some(literal) = value.strip_prefix("key::") {
        return KeyLocation::Literal(literal.trim().to_owned());
    }
    let mut words = value.split_whitespace();
    let first = words.next().unwrap_or("");
    let is_key_type = ["ssh-", "sk-", "ecdsa-"]
        .iter()
        .any(|prefix| first.starts_with(prefix));
    if is_key_type && words.next().is_some() {
        KeyLocation::Literal(value.trim().to_owned())
    } else {
        KeyLocation::File(expand_home(value))
    }
}

/// git-receipt's per-user config directory: `$XDG_CONFIG_HOME/git-receipt`, else
/// `~/.config/git-receipt`. It holds the default signing key and the receipt
/// index key (see [`crate::store::index`]).
pub fn config_dir() -> Result<PathBuf, KeyfileError> {
    crate::user_dir::config_dir().ok_or(KeyfileError::NoHome)
}

/// The default key path.
pub fn default_path() -> Result<PathBuf, KeyfileError> {
    Ok(config_dir()?.join("signing_key"))
}

/// Decide where the key is. `receipt_signing_key` is git config `receipt.signingKey`;
/// `git_ssh_signing_key` is git config `user.signingKey` when `gpg.format` is `ssh`
/// (the caller leaves it `None` otherwise).
pub fn locate(
    receipt_signing_key: Option<String>,
    git_ssh_signing_key: Option<String>,
) -> Result<KeySource, KeyfileError> {
    if let Some(value) = std::env::var_os("GIT_RECEIPT_SIGNING_KEY").filter(|v| !v.is_empty()) {
        let location = match value.to_str() {
            Some(text) => parse_setting(text),
            None => KeyLocation::File(PathBuf::from(value)),
        };
        return Ok(KeySource {
            origin: KeyOrigin::Env,
            location,
        });
    }
    let named = [
        (KeyOrigin::ReceiptConfig, receipt_signing_key),
        (KeyOrigin::GitSigningKey, git_ssh_signing_key),
    ]
    .into_iter()
    .find_map(|(origin, value)| Some((origin, value.filter(|v| !v.trim().is_empty())?)));
    Ok(match named {
        Some((origin, value)) => KeySource {
            origin,
            location: parse_setting(&value),
        },
        None => KeySource {
            origin: KeyOrigin::Default,
            location: KeyLocation::File(default_path()?),
        },
    })
}

fn key_error(source: &KeySource) -> impl Fn(KeyError) -> KeyfileError + '_ {
    |err| KeyfileError::Key {
        origin_note: source.origin_note(),
        source: err,
    }
}

/// What the source names, read without asking an agent.
fn read(source: &KeySource) -> Result<KeyFile, KeyfileError> {
    match &source.location {
        KeyLocation::File(path) => KeyFile::read(path).map_err(key_error(source)),
        KeyLocation::Literal(line) => PublicKey::from_openssh(line)
            .map(KeyFile::Public)
            .map_err(key_error(source)),
    }
}

/// The public key, without asking ssh-agent anything, from a key file read and
/// checked whole (`key show`, `doctor`, `init`). A missing file is an error.
pub fn public_key(source: &KeySource) -> Result<PublicKey, KeyfileError> {
    Ok(read(source)?.public().clone())
}

/// The public key as [`public_key`] gives it, read from a private key file's
/// public half only (see [`KeyFile::read_public`]): for writer ids and for
/// trusting one's own receipts, in every gate and status.
pub fn public_half(source: &KeySource) -> Result<PublicKey, KeyfileError> {
    match &source.location {
        KeyLocation::File(path) => KeyFile::read_public(path).map_err(key_error(source)),
        KeyLocation::Literal(line) => PublicKey::from_openssh(line).map_err(key_error(source)),
    }
}

/// The private key file to name in `ssh-add` hints for a public key file: the
/// `.pub` file without its suffix.
fn private_key_file(public_file: &Path) -> Option<PathBuf> {
    let name = public_file.to_str()?.strip_suffix(".pub")?;
    Some(PathBuf::from(name))
}

/// The unencrypted private key beside a public key file (`key.pub` -> `key`), when
/// there is one and it is the private half of `public`: what `ssh-keygen -Y sign
/// -f key.pub` (and so git's SSH signing) signs with when no agent holds the key.
fn private_key_beside(public_file: &Path, public: &PublicKey) -> Option<SigningKey> {
    let file = private_key_file(public_file)?;
    match KeyFile::read(&file).ok()? {
        KeyFile::Private(key) if key.public() == public => Some(*key),
        _ => None,
    }
}

/// The file that holds the secret half of `key`, loaded from `source`, when it
/// signs in this process: the named file, or for a `.pub` file the private key
/// beside it (for the check that nobody else can read it).
pub fn secret_file(source: &KeySource, key: &SigningKey) -> Option<PathBuf> {
    if key.agent().is_some() {
        return None;
    }
    let file = source.file()?;
    match private_key_file(file) {
        Some(private) if private.exists() => Some(private),
        _ => Some(file.to_owned()),
    }
}

/// Load the key without ever creating one. A key held by ssh-agent is checked to be
/// there (the agent is asked once). A `.pub` file with its unencrypted private key
/// beside it signs with that key, as `ssh-keygen -Y sign` does.
pub fn load_existing(source: &KeySource) -> Result<SigningKey, KeyfileError> {
    let (public, key_file) = match (read(source)?, source.file()) {
        (KeyFile::Private(key), _) => return Ok(*key),
        (KeyFile::Public(public), Some(file)) => match private_key_beside(file, &public) {
            Some(key) => return Ok(key),
            None => (public, private_key_file(file)),
        },
        (KeyFile::Public(public), None) => (public, None),
        (KeyFile::Encrypted(public), Some(file)) => {
            if Agent::from_env().is_none() {
                return Err(key_error(source)(KeyError::Encrypted {
                    path: file.to_owned(),
                }));
            }
            (public, Some(file.to_owned()))
        }
        (KeyFile::Encrypted(public), None) => (public, None),
    };
    let agent_error = |err| KeyfileError::Agent {
        origin_note: source.origin_note(),
        source: err,
    };
    let agent = Agent::from_env().ok_or_else(|| {
        agent_error(AgentError::NoSocket {
            fingerprint: public.fingerprint(),
            key_file: key_file.clone(),
        })
    })?;
    SigningKey::in_agent(public, agent, key_file).map_err(agent_error)
}

/// Load the key; create the default one if it does not exist yet. The second value
/// is true when a key was created just now.
pub fn load_or_create(source: &KeySource) -> Result<(SigningKey, bool), KeyfileError> {
    match (source.is_default(), source.file()) {
        (true, Some(path)) if !path.exists() => {
            let comment = format!("git-receipt@{}", crate::host_name());
            let key = SigningKey::generate(path, &comment).map_err(key_error(source))?;
            Ok((key, true))
        }
        _ => Ok((load_existing(source)?, false)),
    }
}

/// How `key`, loaded from `source`, signs: one line for `key show` and `doctor`.
pub fn signing_route(source: &KeySource, key: &SigningKey) -> String {
    match key.agent() {
        Some(agent) => format!(
            "signs through ssh-agent at {} (SSH_AUTH_SOCK), key {}",
            agent.socket().display(),
            source.describe()
        ),
        None => match secret_file(source, key).filter(|f| Some(f.as_path()) != source.file()) {
            // a .pub file named, the private key beside it signs
            Some(private) => format!(
                "signs in-process with the private key {} beside {}",
                private.display(),
                source.describe()
            ),
            None => format!(
                "signs in-process with the private key {}",
                source.describe()
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_read_as_git_reads_user_signing_key() {
        let literal = |s: &str| KeyLocation::Literal(s.to_owned());
        assert_eq!(
            parse_setting("key::ssh-ed25519 AAAA c"),
            literal("ssh-ed25519 AAAA c")
        );
        assert_eq!(
            parse_setting("ssh-ed25519 AAAA"),
            literal("ssh-ed25519 AAAA")
        );
        assert_eq!(
            parse_setting("sk-ssh-ed25519@openssh.com AAAA"),
            literal("sk-ssh-ed25519@openssh.com AAAA")
        );
        assert_eq!(
            parse_setting("/keys/ssh-key"),
            KeyLocation::File("/keys/ssh-key".into()),
            "a path stays a path"
        );
        assert_eq!(
            parse_setting("ssh-key.pub"),
            KeyLocation::File("ssh-key.pub".into()),
            "one word is a path even when it starts like a key type"
        );
    }

    #[test]
    fn the_private_key_file_of_a_pub_file_drops_the_suffix() {
        assert_eq!(
            private_key_file(Path::new("/h/.ssh/id_ed25519.pub")),
            Some(PathBuf::from("/h/.ssh/id_ed25519"))
        );
        assert_eq!(private_key_file(Path::new("/h/key")), None);
    }
}
