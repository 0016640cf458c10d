//! Where a check ran: environment assertions and sibling repositories.
//!
//! An `[assert "name"]` runs a small command before the check (in the check's
//! directory and environment) and compares the first line of its output with a
//! glob (`expect`) or a regular expression (`match`); its result goes into the
//! receipt (`result.assertions`, format v3). A failed assertion means the check
//! itself never runs.
//!
//! A `[dependency "name"]` names a local clone of another repository; a receipt
//! records the commit its `ref` named and the tree of its declared `paths`
//! (`subject.dependencies`). Freshness resolves it again from the same clone:
//! nothing is fetched, and a clone that is not there decides nothing.
//!
//! Substitutions in an assertion's `run`, `expect` and `match` are closed: only
//! the names in [`SUBSTITUTIONS`] exist, and any other `${name}` is an error
//! when the contract is read, so a typo never silently compares with "".

use std::path::{Path, PathBuf};
use std::time::Duration;

use gix::ObjectId;

use crate::contract::{AssertDef, DependencyDef};
pub use crate::contract::{SUBSTITUTIONS, substitute};
use crate::receipt::{AssertionResult, DependencyState, Expectation, MAX_ACTUAL_BYTES};
use crate::runner::{self, RunSpec};
use crate::store::{Store, StoreError};

/// An assertion is killed after this long (it asks a version, it does not build).
pub const ASSERTION_TIMEOUT: Duration = Duration::from_secs(60);

/// Output an assertion keeps: its first line is taken from the last this many
/// bytes of its standard output (all of it, for a command that prints a version).
pub const ASSERTION_OUTPUT_BYTES: usize = 64 * 1024;

/// The values of the substitutions for one work tree.
#[derive(Debug, Clone)]
pub struct Substitutions {
    /// `${worktree}`.
    pub worktree: PathBuf,
    /// `${gitdir}`.
    pub gitdir: PathBuf,
    /// `${home}`, when `HOME` is set.
    pub home: Option<PathBuf>,
}

impl Substitutions {
    /// The values for `store`'s work tree.
    pub fn of(store: &Store) -> Result<Substitutions, StoreError> {
        let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
        Ok(Substitutions {
            worktree: abs(store.workdir()?),
            gitdir: abs(store.git_dir()),
            home: std::env::var_os("HOME").map(PathBuf::from),
        })
    }

    fn value(&self, name: &str) -> Option<String> {
        let p = match name {
            "worktree" => Some(&self.worktree),
            "gitdir" => Some(&self.gitdir),
            "home" => self.home.as_ref(),
            _ => None,
        }?;
        Some(p.to_string_lossy().into_owned())
    }

    /// `text` with its substitutions, each value passed through `quote` first (a
    /// path inside a pattern must match itself, not act as one).
    fn apply(&self, text: &str, quote: fn(&str) -> String) -> Result<String, String> {
        substitute(text, &|name| self.value(name).map(|v| quote(&v)))
    }
}

/// Escape the wildmatch metacharacters of `text`.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The first line of `output` (without its line end), at most
/// [`MAX_ACTUAL_BYTES`] bytes cut at a character boundary.
pub fn first_line(output: &[u8]) -> String {
    let text = String::from_utf8_lossy(output);
    let line = text.lines().next().unwrap_or_default();
    let mut end = line.len().min(MAX_ACTUAL_BYTES);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_owned()
}

/// Run one assertion in `cwd` and judge its output.
pub fn run_assertion(def: &AssertDef, subs: &Substitutions, cwd: &Path) -> AssertionResult {
    let failed = |argv: Vec<String>, expected, actual, detail: String| AssertionResult {
        name: def.name.clone(),
        argv,
        expected,
        actual,
        passed: false,
        detail,
    };
    let command = match subs.apply(&def.run, |v| v.to_owned()) {
        Ok(c) => c,
        Err(why) => {
            return failed(
                vec!["sh".into(), "-c".into(), def.run.clone()],
                None,
                String::new(),
                why,
            );
        }
    };
    let argv = vec!["sh".to_owned(), "-c".to_owned(), command];
    let expected = match &def.expect {
        None => None,
        Some(Expectation::Glob(g)) => match subs.apply(g, glob_escape) {
            Ok(g) => Some(Expectation::Glob(g)),
            Err(why) => return failed(argv, None, String::new(), why),
        },
        Some(Expectation::Regex(r)) => match subs.apply(r, regex::escape) {
            Ok(r) => Some(Expectation::Regex(r)),
            Err(why) => return failed(argv, None, String::new(), why),
        },
    };
    let obs = runner::run(&RunSpec {
        argv: argv.clone(),
        cwd: Some(cwd.to_owned()),
        timeout: Some(ASSERTION_TIMEOUT),
        log_limit: 0,
        // the whole standard output of anything that answers a question
        tail_bytes: ASSERTION_OUTPUT_BYTES,
        echo: false,
    });
    let actual = first_line(&obs.stdout_tail);
    let detail = if !obs.detail.is_empty() {
        obs.detail.clone()
    } else if obs.exit_code != 0 {
        let err = first_line(&obs.stderr_tail);
        if err.is_empty() {
            format!("exit {}", obs.exit_code)
        } else {
            format!("exit {}: {err}", obs.exit_code)
        }
    } else {
        match &expected {
            None => String::new(),
            Some(Expectation::Glob(g)) => {
                if gix::glob::wildmatch(
                    g.as_str().into(),
                    actual.as_str().into(),
                    gix::glob::wildmatch::Mode::empty(),
                ) {
                    String::new()
                } else {
                    format!("expected {g:?} (glob), got {actual:?}")
                }
            }
            Some(Expectation::Regex(r)) => match regex::Regex::new(r) {
                Ok(re) if re.is_match(&actual) => String::new(),
                Ok(_) => format!("expected a match of {r:?} (regex), got {actual:?}"),
                Err(_) => format!("{r:?} is not a regular expression"),
            },
        }
    };
    AssertionResult {
        name: def.name.clone(),
        argv,
        expected,
        actual,
        passed: detail.is_empty(),
        detail,
    }
}

/// Run `defs` in order in `cwd`; with `stop_at_failure`, nothing runs after the
/// first that fails (what `run` does before a check).
pub fn run_assertions(
    defs: &[AssertDef],
    subs: &Substitutions,
    cwd: &Path,
    stop_at_failure: bool,
) -> Vec<AssertionResult> {
    let mut out = Vec::new();
    for def in defs {
        let r = run_assertion(def, subs, cwd);
        let failed = !r.passed;
        out.push(r);
        if failed && stop_at_failure {
            break;
        }
    }
    out
}

/// The check's `detail` for the first failed assertion, if any failed.
pub fn failure_detail(results: &[AssertionResult]) -> Option<String> {
    results
        .iter()
        .find(|a| !a.passed)
        .map(|a| format!("assertion {:?} failed: {}", a.name, a.detail))
}

/// Why a dependency cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum DependencyError {
    /// No git repository at its path.
    #[error(
        "dependency {name} is not available: no repository at {}",
        path.display()
    )]
    Absent {
        /// The dependency.
        name: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// Its ref names no commit in the clone.
    #[error(
        "dependency {name}: {rev:?} names no commit in {}",
        path.display()
    )]
    BadRef {
        /// The dependency.
        name: String,
        /// Its clone.
        path: PathBuf,
        /// The revision asked for.
        rev: String,
    },
    /// Reading the clone failed.
    #[error("dependency {name}: {source}")]
    Store {
        /// The dependency.
        name: String,
        /// The cause.
        source: Box<StoreError>,
    },
}

/// A dependency's clone, opened read-only.
pub struct OpenDependency {
    store: Store,
    def: DependencyDef,
}

impl OpenDependency {
    /// Open the clone of `def` relative to `workdir`; absent is an error.
    pub fn open(workdir: &Path, def: &DependencyDef) -> Result<OpenDependency, DependencyError> {
        let path = workdir.join(&def.path);
        let store = Store::open(&path).map_err(|_| DependencyError::Absent {
            name: def.name.clone(),
            path: path.clone(),
        })?;
        Ok(OpenDependency {
            store,
            def: def.clone(),
        })
    }

    /// Its commit and the tree of its declared paths now. Only the tree's id is
    /// computed: nothing is written into someone else's repository.
    pub fn resolve(&self) -> Result<DependencyState, DependencyError> {
        let rev = self.def.rev.as_deref().unwrap_or("HEAD");
        let store_err = |source| DependencyError::Store {
            name: self.def.name.clone(),
            source: Box::new(source),
        };
        let commit = self
            .store
            .resolve_commit(rev)
            .map_err(|_| DependencyError::BadRef {
                name: self.def.name.clone(),
                path: self
                    .store
                    .workdir()
                    .unwrap_or(self.store.git_dir())
                    .to_owned(),
                rev: rev.to_owned(),
            })?;
        let tree = self.store.commit_tree(commit).map_err(store_err)?;
        let tree = self
            .store
            .inputs_tree(tree, &self.def.paths, false)
            .map_err(store_err)?;
        Ok(DependencyState {
            name: self.def.name.clone(),
            commit: commit.to_string(),
            tree: tree.to_string(),
        })
    }

    /// How it moved since `recorded`, in words, or `None` when its declared paths
    /// hold the same tree: `dependency proto moved: a1b2c3d -> d4e5f6a, schema/x changed`.
    pub fn moved_since(
        &self,
        recorded: &DependencyState,
    ) -> Result<Option<String>, DependencyError> {
        let now = self.resolve()?;
        if now.tree == recorded.tree {
            return Ok(None);
        }
        // Name the changed paths from the two commits' trees when the clone still
        // has the recorded commit (only the declared paths are compared).
        let tree_of = |commit: &str| {
            ObjectId::from_hex(commit.as_bytes())
                .ok()
                .filter(|c| self.store.has_object(*c))
                .and_then(|c| self.store.commit_tree(c).ok())
        };
        let (old, new) = (tree_of(&recorded.commit), tree_of(&now.commit));
        let changed = match (old, new) {
            (Some(o), Some(n)) => self
                .store
                .changed_paths(o, n, &self.def.paths)
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let what = if !changed.is_empty() {
            format!("{} changed", crate::text::list_paths(&changed))
        } else if self.def.paths.is_empty() {
            "its tree changed".to_owned()
        } else {
            let dirs: Vec<String> = self.def.paths.iter().map(|p| format!("{p}/")).collect();
            format!("{} changed", dirs.join(", "))
        };
        Ok(Some(format!(
            "dependency {} moved: {} -> {}, {what}",
            self.def.name,
            recorded.commit.get(..7).unwrap_or(&recorded.commit),
            &now.commit[..7],
        )))
    }
}

/// Resolve every dependency of a check now (at `run`), sorted by name.
pub fn resolve_all(
    workdir: &Path,
    defs: &[DependencyDef],
) -> Result<Vec<DependencyState>, DependencyError> {
    let mut out = Vec::new();
    for d in defs {
        out.push(OpenDependency::open(workdir, d)?.resolve()?);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutions_are_closed() {
        let v = |n: &str| Some(format!("<{n}>"));
        assert_eq!(substitute("a ${worktree}/b", &v).unwrap(), "a <worktree>/b");
        assert_eq!(substitute("$HOME $${x} $", &v).unwrap(), "$HOME ${x} $");
        assert_eq!(
            substitute("${workdir}", &v).unwrap_err(),
            "unknown substitution \"${workdir}\""
        );
        assert!(substitute("${worktree", &v).is_err());
    }

    #[test]
    fn a_substituted_path_matches_itself_only() {
        assert_eq!(glob_escape("/tmp/a*[b]"), "/tmp/a\\*\\[b\\]");
        assert!(gix::glob::wildmatch(
            "/tmp/a\\*\\[b\\]/x".into(),
            "/tmp/a*[b]/x".into(),
            gix::glob::wildmatch::Mode::empty()
        ));
        assert!(!gix::glob::wildmatch(
            "/tmp/a\\*/x".into(),
            "/tmp/abc/x".into(),
            gix::glob::wildmatch::Mode::empty()
        ));
    }

    #[test]
    fn actual_is_one_bounded_line() {
        assert_eq!(first_line(b"rustc 1.90.0\nmore\n"), "rustc 1.90.0");
        assert_eq!(first_line(b"x\r\n"), "x");
        let long = "\u{e9}".repeat(MAX_ACTUAL_BYTES);
        let cut = first_line(long.as_bytes());
        assert!(cut.len() <= MAX_ACTUAL_BYTES && cut.len() >= MAX_ACTUAL_BYTES - 1);
    }
}
