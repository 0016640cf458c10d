//! The per-user directory git-receipt keeps files in (the default signing key, the
//! receipt index key), and the permission check both kinds of key file get. A
//! leaf: the store (for the index key) and `keyfile` (for the signing key) read
//! it, and it imports nothing of the library.

use std::path::{Path, PathBuf};

/// git-receipt's per-user config directory: `$XDG_CONFIG_HOME/git-receipt`, else
/// `~/.config/git-receipt`; `None` when neither `XDG_CONFIG_HOME` nor `HOME` is set.
pub fn config_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".config"),
    };
    Some(base.join("git-receipt"))
}

/// The permission bits of the key file at `path` when group or others may read
/// or write it (`ssh` refuses such a key; git-receipt warns), else `None`.
pub fn open_to_others(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}
