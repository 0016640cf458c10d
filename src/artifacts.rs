//! What a check produced (`artifact = GLOB` in `.gitreceipts`, format v5): the
//! files its globs match in the work tree once the run has ended, each with its
//! size and SHA-256, as a receipt records them; and the digest of one file, as
//! `git receipt which` looks it up.
//!
//! A glob is matched against paths relative to the top of the work tree, the
//! way git matches pathspecs with `:(glob)`: `*` and `?` stay within one path
//! segment, `**` crosses them, `[...]` is a class. A glob without any of those
//! names a file, or a directory whose files all count. The walk starts at the
//! glob's literal leading directories, never enters `.git`, never follows a
//! symbolic link to a directory, and is bounded: more than [`MAX_ARTIFACTS`]
//! matches or [`MAX_WALKED`] entries looked at is an error that names the glob,
//! so a receipt never claims a partial list.

use std::io::Read as _;
use std::path::Path;

use sha2::{Digest as _, Sha256};

pub use crate::receipt::{Artifact, MAX_ARTIFACTS};

/// The most directory entries the globs of one check may look at.
pub const MAX_WALKED: usize = 200_000;

/// `sha256:<hex>` and the size of the file at `path`, read in bounded memory.
pub fn digest_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok((size, format!("sha256:{}", hex::encode(hasher.finalize()))))
}

/// Whether `segment` holds a glob metacharacter.
fn is_pattern(segment: &str) -> bool {
    segment.contains(['*', '?', '[', '\\'])
}

/// The files under `workdir` that `globs` match, sorted by path, each hashed;
/// or why the list cannot be complete (what to change is in the words).
pub fn collect(workdir: &Path, globs: &[String]) -> Result<Vec<Artifact>, String> {
    let mut found: std::collections::BTreeMap<String, std::path::PathBuf> = Default::default();
    let mut walked = 0usize;
    for glob in globs {
        let segments: Vec<&str> = glob.split('/').collect();
        let literal = segments.iter().take_while(|s| !is_pattern(s)).count();
        let start = segments[..literal].join("/");
        let pattern = (literal < segments.len()).then_some(glob.as_str());
        let mut stack = vec![start];
        while let Some(rel) = stack.pop() {
            walked += 1;
            if walked > MAX_WALKED {
                return Err(format!(
                    "artifact = {glob}: the globs looked at more than {MAX_WALKED} files and directories; name the files more narrowly"
                ));
            }
            let path = workdir.join(&rel);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue; // nothing there: it matches nothing
            };
            let meta = if meta.file_type().is_symlink() {
                match std::fs::metadata(&path) {
                    // a link to a file counts as that file; to a directory, not entered
                    Ok(m) if m.is_file() => m,
                    _ => continue,
                }
            } else {
                meta
            };
            if meta.is_dir() {
                if rel == ".git" || rel.ends_with("/.git") {
                    continue;
                }
                let entries = std::fs::read_dir(&path)
                    .map_err(|e| format!("artifact = {glob}: cannot list {rel}: {e}"))?;
                for entry in entries {
                    let entry =
                        entry.map_err(|e| format!("artifact = {glob}: cannot list {rel}: {e}"))?;
                    let name = entry.file_name();
                    let Some(name) = name.to_str() else {
                        return Err(format!(
                            "artifact = {glob}: a file name under {} is not UTF-8 ({}), which a receipt cannot name; rename it or narrow the glob",
                            if rel.is_empty() { "." } else { &rel },
                            crate::text::escape(&name.to_string_lossy())
                        ));
                    };
                    stack.push(if rel.is_empty() {
                        name.to_owned()
                    } else {
                        format!("{rel}/{name}")
                    });
                }
            } else if meta.is_file() {
                let wanted = match pattern {
                    None => true,
                    Some(p) => gix::glob::wildmatch(
                        p.into(),
                        rel.as_str().into(),
                        gix::glob::wildmatch::Mode::NO_MATCH_SLASH_LITERAL,
                    ),
                };
                if wanted {
                    found.insert(rel, path);
                    if found.len() > MAX_ARTIFACTS {
                        return Err(format!(
                            "artifact = {glob}: the globs match more than {MAX_ARTIFACTS} files, more than a receipt records; name fewer (an archive of them is one artifact)"
                        ));
                    }
                }
            }
        }
    }
    found
        .into_iter()
        .map(|(rel, path)| {
            if !crate::receipt::is_artifact_path(&rel) {
                return Err(format!(
                    "artifact {}: the path is over {} bytes or holds control characters, which a receipt cannot name",
                    crate::text::escape(&rel),
                    crate::receipt::MAX_ARTIFACT_PATH_BYTES
                ));
            }
            let (size, sha256) = digest_file(&path)
                .map_err(|e| format!("artifact {}: cannot read it: {e}", crate::text::escape(&rel)))?;
            Ok(Artifact { path: rel, size, sha256 })
        })
        .collect()
}

/// A check receipt that recorded an artifact with the digest looked for.
#[derive(Debug, Clone)]
pub struct Produced {
    /// The chain it is in.
    pub writer: String,
    /// It, as its chain holds it (not yet verified: the caller decides trust).
    pub entry: crate::store::chain::ChainEntry,
    /// The path it recorded the file under.
    pub path: String,
}

/// What [`produced`] found.
#[derive(Debug, Default)]
pub struct Search {
    /// The receipts that recorded the digest, newest first within each chain.
    pub found: Vec<Produced>,
    /// Receipts read.
    pub read: usize,
    /// Chains that could not be read to their root, each with why (the
    /// entries above the bad one were read).
    pub unreadable: Vec<(String, String)>,
}

/// Every check receipt in every chain here that records an artifact whose
/// SHA-256 is `sha256` (`sha256:<hex>`). Reads each chain from its tip to its
/// root: the cost is one parse per receipt here (no index holds artifact
/// digests). A chain whose entry is missing or corrupt is named in
/// [`Search::unreadable`] and the rest are still read: nothing is decided here.
pub fn produced(
    store: &crate::store::Store,
    sha256: &str,
) -> Result<Search, crate::store::StoreError> {
    let mut search = Search::default();
    for (writer, tip) in store.writers()? {
        let walked = store.walk_chain(&writer, tip, |entry| {
            search.read += 1;
            let path = entry
                .receipt
                .body()
                .result
                .artifacts
                .as_ref()
                .and_then(|list| list.iter().find(|a| a.sha256 == sha256))
                .map(|a| a.path.clone());
            if let Some(path) = path {
                search.found.push(Produced {
                    writer: writer.clone(),
                    entry,
                    path,
                });
            }
            Ok(true)
        });
        if let Err(e) = walked {
            search.unreadable.push((writer, e.to_string()));
        }
    }
    Ok(search)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, f.as_bytes()).unwrap();
        }
        dir
    }

    fn paths(dir: &Path, globs: &[&str]) -> Vec<String> {
        let globs: Vec<String> = globs.iter().map(|g| g.to_string()).collect();
        collect(dir, &globs)
            .unwrap()
            .into_iter()
            .map(|a| a.path)
            .collect()
    }

    #[test]
    fn a_glob_matches_within_a_segment_and_double_star_across_them() {
        let dir = tree(&[
            "dist/app.tar.gz",
            "dist/app.zip",
            "dist/sub/inner.tar.gz",
            "target/release/app",
            ".git/config",
            "src/lib.rs",
        ]);
        let d = dir.path();
        assert_eq!(paths(d, &["dist/*.tar.gz"]), ["dist/app.tar.gz"]);
        assert_eq!(
            paths(d, &["dist/**/*.tar.gz"]),
            ["dist/app.tar.gz", "dist/sub/inner.tar.gz"]
        );
        assert_eq!(paths(d, &["target/release/app"]), ["target/release/app"]);
        // a literal directory: every file under it
        assert_eq!(
            paths(d, &["dist"]),
            ["dist/app.tar.gz", "dist/app.zip", "dist/sub/inner.tar.gz"]
        );
        // from the top: never .git, and overlapping globs list a file once
        assert_eq!(
            paths(d, &["**/*.zip", "dist/app.*"]),
            ["dist/app.tar.gz", "dist/app.zip"]
        );
        assert!(paths(d, &["*"]).is_empty(), "no file at the top");
        assert!(paths(d, &["missing/*"]).is_empty());
        assert!(!paths(d, &["**"]).iter().any(|p| p.starts_with(".git")));
    }

    #[test]
    fn each_artifact_has_its_size_and_sha256() {
        let dir = tree(&["out/a"]);
        let got = collect(dir.path(), &["out/a".to_string()]).unwrap();
        assert_eq!(
            got,
            [Artifact {
                path: "out/a".into(),
                size: 5,
                // printf 'out/a' | sha256sum
                sha256: format!("sha256:{}", hex::encode(Sha256::digest(b"out/a"))),
            }]
        );
        assert_eq!(
            digest_file(&dir.path().join("out/a")).unwrap(),
            (5, got[0].sha256.clone())
        );
    }

    #[test]
    fn more_matches_than_a_receipt_records_is_an_error_that_names_the_glob() {
        let files: Vec<String> = (0..=MAX_ARTIFACTS).map(|i| format!("o/{i}")).collect();
        let dir = tree(&files.iter().map(String::as_str).collect::<Vec<_>>());
        let err = collect(dir.path(), &["o/*".to_string()]).unwrap_err();
        assert!(
            err.contains("artifact = o/*: the globs match more than"),
            "{err}"
        );
        // exactly the bound is fine
        std::fs::remove_file(dir.path().join("o/0")).unwrap();
        assert_eq!(
            collect(dir.path(), &["o/*".to_string()]).unwrap().len(),
            MAX_ARTIFACTS
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_link_to_a_file_counts_and_a_link_to_a_directory_is_not_entered() {
        let dir = tree(&["real/f", "out/x"]);
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("out/dir")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real/f"), dir.path().join("out/f")).unwrap();
        assert_eq!(paths(dir.path(), &["out/**"]), ["out/f", "out/x"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_name_that_is_not_utf8_is_an_error_not_a_silent_gap() {
        use std::os::unix::ffi::OsStrExt as _;
        let dir = tree(&["out/x"]);
        std::fs::write(
            dir.path()
                .join("out")
                .join(std::ffi::OsStr::from_bytes(b"bad\xff")),
            b"",
        )
        .unwrap();
        let err = collect(dir.path(), &["out/*".to_string()]).unwrap_err();
        assert!(err.contains("is not UTF-8"), "{err}");
    }
}
