//! Where the signing key lives, and creating it on first use.
//!
//! Precedence: `GIT_RECEIPT_SIGNING_KEY` (a path), then git config
//! `receipt.signingKey` (a path, `~/` expanded), then the default
//! `$XDG_CONFIG_HOME/git-receipt/signing_key` (or `~/.config/...`). Only the default
//! is created when missing: a key the user named explicitly and that is not there
//! is an error, never silently replaced.

use std::path::{Path, PathBuf};

use crate::sign::{KeyError, SigningKey};

/// Where the key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `GIT_RECEIPT_SIGNING_KEY`.
    Env(PathBuf),
    /// git config `receipt.signingKey`.
    Config(PathBuf),
    /// The default location, created on first use.
    Default(PathBuf),
}

impl KeySource {
    /// The path.
    pub fn path(&self) -> &Path {
        match self {
            KeySource::Env(p) | KeySource::Config(p) | KeySource::Default(p) => p,
        }
    }
}

/// Why no key could be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyfileError {
    /// No HOME and no XDG_CONFIG_HOME.
    #[error(
        "cannot find a place for the signing key: neither XDG_CONFIG_HOME nor HOME is set\nhint: set GIT_RECEIPT_SIGNING_KEY to the path of an Ed25519 key"
    )]
    NoHome,
    /// The key file is there but not usable, or an explicitly named one is missing.
    #[error("{source}{}", origin_hint(.origin))]
    Key {
        /// Which setting named it.
        origin: &'static str,
        /// The key error.
        source: KeyError,
    },
}

fn origin_hint(origin: &str) -> String {
    if origin.is_empty() {
        String::new()
    } else {
        format!("\n(the key path comes from {origin})")
    }
}

fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

/// The default key path.
pub fn default_path() -> Result<PathBuf, KeyfileError> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => {
            PathBuf::from(std::env::var_os("HOME").ok_or(KeyfileError::NoHome)?).join(".config")
        }
    };
    Ok(base.join("git-receipt").join("signing_key"))
}

/// Decide where the key is; `config_value` is git config `receipt.signingKey`.
pub fn locate(config_value: Option<String>) -> Result<KeySource, KeyfileError> {
    if let Some(p) = std::env::var_os("GIT_RECEIPT_SIGNING_KEY").filter(|v| !v.is_empty()) {
        return Ok(KeySource::Env(PathBuf::from(p)));
    }
    if let Some(p) = config_value.filter(|v| !v.is_empty()) {
        return Ok(KeySource::Config(expand_home(&p)));
    }
    Ok(KeySource::Default(default_path()?))
}

fn origin(source: &KeySource) -> &'static str {
    match source {
        KeySource::Env(_) => "GIT_RECEIPT_SIGNING_KEY",
        KeySource::Config(_) => "git config receipt.signingKey",
        KeySource::Default(_) => "",
    }
}

/// Load the key; create the default one if it does not exist yet. The second value
/// is true when a key was created just now.
pub fn load_or_create(source: &KeySource) -> Result<(SigningKey, bool), KeyfileError> {
    let wrap = |e| KeyfileError::Key {
        origin: origin(source),
        source: e,
    };
    match SigningKey::load(source.path()) {
        Ok(k) => Ok((k, false)),
        Err(KeyError::NotFound { .. }) if matches!(source, KeySource::Default(_)) => {
            let comment = format!("git-receipt@{}", crate::host_name());
            let key = SigningKey::generate(source.path(), &comment).map_err(wrap)?;
            Ok((key, true))
        }
        Err(e) => Err(wrap(e)),
    }
}

/// Load the key without ever creating one.
pub fn load_existing(source: &KeySource) -> Result<SigningKey, KeyfileError> {
    SigningKey::load(source.path()).map_err(|e| KeyfileError::Key {
        origin: origin(source),
        source: e,
    })
}

/// The permission bits of the key file at `path` when group or others may read
/// or write it (`ssh` refuses such a key; git-receipt warns), else `None`.
pub fn open_to_others(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}
