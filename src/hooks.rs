//! Installing the hook shims, and what the hooks decide.
//!
//! The shims in `hooks/` are a few lines of sh between marker comments that call
//! `git receipt hook <name>`. Installing honours `core.hooksPath`, is idempotent,
//! and never clobbers a user's hook: an existing one is kept beside ours as
//! `<name>.pre-git-receipt` and run after ours with the same input;
//! uninstalling puts it back.

use std::path::{Path, PathBuf};

use gix::ObjectId;

/// The pre-push shim.
pub const PRE_PUSH: &str = include_str!("../hooks/pre-push");
/// The pre-receive shim.
pub const PRE_RECEIVE: &str = include_str!("../hooks/pre-receive");
/// The marker that identifies our shim.
pub const MARKER: &str = "# >>> git-receipt >>>";
/// Suffix of a user's hook kept beside ours.
pub const KEPT_SUFFIX: &str = ".pre-git-receipt";

/// What installing or uninstalling one hook did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookChange {
    /// Written fresh.
    Installed(PathBuf),
    /// Written, keeping the user's hook beside it.
    InstalledKeeping(PathBuf, PathBuf),
    /// Already there, unchanged.
    Unchanged(PathBuf),
    /// Our shim was updated to the current version.
    Updated(PathBuf),
    /// Removed (and the user's hook restored, if one was kept).
    Removed(PathBuf, bool),
    /// The hook there is not ours; left alone.
    NotOurs(PathBuf),
    /// Nothing was installed.
    Absent(PathBuf),
}

impl std::fmt::Display for HookChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HookChange::Installed(p) => write!(f, "installed {}", p.display()),
            HookChange::InstalledKeeping(p, k) => write!(
                f,
                "installed {} (your existing hook is kept as {} and still runs)",
                p.display(),
                k.display()
            ),
            HookChange::Unchanged(p) => write!(f, "{} already installed", p.display()),
            HookChange::Updated(p) => write!(f, "updated {}", p.display()),
            HookChange::Removed(p, restored) => write!(
                f,
                "removed {}{}",
                p.display(),
                if *restored {
                    " and restored your original hook"
                } else {
                    ""
                }
            ),
            HookChange::NotOurs(p) => write!(f, "{} is not ours; left alone", p.display()),
            HookChange::Absent(p) => write!(f, "{} was not installed", p.display()),
        }
    }
}

fn write_executable(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("git-receipt-tmp");
    std::fs::write(&tmp, text)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
    std::fs::rename(&tmp, path)
}

/// Install `shim` as hook `name` in `hooks_dir`.
pub fn install(hooks_dir: &Path, name: &str, shim: &str) -> std::io::Result<HookChange> {
    let path = hooks_dir.join(name);
    let kept = hooks_dir.join(format!("{name}{KEPT_SUFFIX}"));
    match std::fs::read_to_string(&path) {
        Ok(existing) if existing == shim => Ok(HookChange::Unchanged(path)),
        Ok(existing) if existing.contains(MARKER) => {
            write_executable(&path, shim)?;
            Ok(HookChange::Updated(path))
        }
        Ok(_) => {
            if kept.exists() {
                return Err(std::io::Error::other(format!(
                    "{} exists and so does {}; move one of them away, then install again",
                    path.display(),
                    kept.display()
                )));
            }
            std::fs::rename(&path, &kept)?;
            write_executable(&path, shim)?;
            Ok(HookChange::InstalledKeeping(path, kept))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write_executable(&path, shim)?;
            Ok(HookChange::Installed(path))
        }
        Err(e) => Err(e),
    }
}

/// Remove our hook `name`, restoring a kept user hook.
pub fn uninstall(hooks_dir: &Path, name: &str) -> std::io::Result<HookChange> {
    let path = hooks_dir.join(name);
    let kept = hooks_dir.join(format!("{name}{KEPT_SUFFIX}"));
    match std::fs::read_to_string(&path) {
        Ok(existing) if existing.contains(MARKER) => {
            std::fs::remove_file(&path)?;
            let restored = kept.exists();
            if restored {
                std::fs::rename(&kept, &path)?;
            }
            Ok(HookChange::Removed(path, restored))
        }
        Ok(_) => Ok(HookChange::NotOurs(path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HookChange::Absent(path)),
        Err(e) => Err(e),
    }
}

/// Whether the repository at `git_dir` is managed by gitolite: gitolite writes a
/// `gl-conf` file into repositories with rules and links `hooks/update` to its own
/// driver; `gitolite setup` puts its hooks back, so a hook installed in the
/// directory by hand would vanish.
pub fn gitolite_managed(git_dir: &Path) -> bool {
    git_dir.join("gl-conf").is_file()
        || std::fs::read_link(git_dir.join("hooks/update"))
            .is_ok_and(|t| t.to_string_lossy().contains("gitolite"))
}

/// One line of pre-push input: `<local ref> <local oid> <remote ref> <remote oid>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedRef {
    /// The local ref.
    pub local_ref: String,
    /// The commit being pushed (`None` for a deletion).
    pub local: Option<ObjectId>,
    /// The ref on the remote.
    pub remote_ref: String,
    /// What the remote has (`None` if new).
    pub remote: Option<ObjectId>,
}

/// One line of pre-receive input: `<old> <new> <ref>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedRef {
    /// The old value (`None` when the ref is created).
    pub old: Option<ObjectId>,
    /// The new value (`None` when the ref is deleted).
    pub new: Option<ObjectId>,
    /// The ref.
    pub name: String,
}

/// The non-blank lines of a hook's input, each split into exactly `N` fields.
fn hook_lines<'a, const N: usize>(
    input: &'a str,
    hook: &str,
) -> impl Iterator<Item = Result<([&'a str; N], &'a str), String>> {
    let hook = hook.to_owned();
    input
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(move |l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            <[&str; N]>::try_from(fields)
                .map(|f| (f, l))
                .map_err(|_| format!("not a {hook} line: {l:?}"))
        })
}

/// An object id in hook input; the null id means "none" (created or deleted).
fn hook_oid(hex: &str, line: &str) -> Result<Option<ObjectId>, String> {
    let id =
        ObjectId::from_hex(hex.as_bytes()).map_err(|_| format!("bad object id in {line:?}"))?;
    Ok((!id.is_null()).then_some(id))
}

/// Parse pre-push input; blank lines are skipped.
pub fn parse_pre_push(input: &str) -> Result<Vec<PushedRef>, String> {
    hook_lines::<4>(input, "pre-push")
        .map(|r| {
            let ([local_ref, local, remote_ref, remote], l) = r?;
            Ok(PushedRef {
                local_ref: local_ref.to_owned(),
                local: hook_oid(local, l)?,
                remote_ref: remote_ref.to_owned(),
                remote: hook_oid(remote, l)?,
            })
        })
        .collect()
}

/// Parse pre-receive input; blank lines are skipped.
pub fn parse_pre_receive(input: &str) -> Result<Vec<ReceivedRef>, String> {
    hook_lines::<3>(input, "pre-receive")
        .map(|r| {
            let ([old, new, name], l) = r?;
            Ok(ReceivedRef {
                old: hook_oid(old, l)?,
                new: hook_oid(new, l)?,
                name: name.to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_is_idempotent_and_keeps_the_users_hook() {
        let dir = tempfile::tempdir().unwrap();
        let user = "#!/bin/sh\necho mine\n";
        std::fs::write(dir.path().join("pre-push"), user).unwrap();
        let first = install(dir.path(), "pre-push", PRE_PUSH).unwrap();
        assert!(
            matches!(first, HookChange::InstalledKeeping(..)),
            "{first:?}"
        );
        let second = install(dir.path(), "pre-push", PRE_PUSH).unwrap();
        assert!(matches!(second, HookChange::Unchanged(..)), "{second:?}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("pre-push.pre-git-receipt")).unwrap(),
            user
        );
        let gone = uninstall(dir.path(), "pre-push").unwrap();
        assert_eq!(gone, HookChange::Removed(dir.path().join("pre-push"), true));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("pre-push")).unwrap(),
            user
        );
        assert!(!dir.path().join("pre-push.pre-git-receipt").exists());
        assert!(matches!(
            uninstall(dir.path(), "pre-push").unwrap(),
            HookChange::NotOurs(_)
        ));
    }

    #[test]
    fn a_gitolite_repository_is_known_by_its_update_hook_or_gl_conf() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("hooks")).unwrap();
        assert!(!gitolite_managed(dir.path()));
        std::os::unix::fs::symlink(
            "/srv/git/.gitolite/hooks/common/update",
            dir.path().join("hooks/update"),
        )
        .unwrap();
        assert!(gitolite_managed(dir.path()));
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("gl-conf"), "%one_repo = ();\n").unwrap();
        assert!(gitolite_managed(other.path()));
    }

    #[test]
    fn hook_input_parses() {
        let z = "0".repeat(40);
        let a = "a".repeat(40);
        let v = parse_pre_push(&format!("refs/heads/x {a} refs/heads/x {z}\n\n")).unwrap();
        assert_eq!(v.len(), 1);
        assert!(v[0].remote.is_none() && v[0].local.is_some());
        let r = parse_pre_receive(&format!("{a} {z} refs/heads/main\n")).unwrap();
        assert!(r[0].new.is_none());
        assert!(parse_pre_receive("junk\n").is_err());
    }
}
