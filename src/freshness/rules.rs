//! Each rule of `docs/freshness.md` as a unit test: a repository made by stock git
//! in a temporary directory, receipts appended through the recorder, a contract and
//! a trust set built in memory, and the exact state and reason [`evaluate`] gives.
//!
//! [`Scratch`] is shared with the rules of `decision` and `verify`.

use super::*;
use crate::receipt::{Mode, writer_id};
use crate::recorder::SubjectIds;
use crate::runner::Observation;
use crate::sign::SigningKey;
use crate::store::chain::Appended;
use crate::trust::{TrustOrigin, Trusted};

/// 2026-01-01T00:00:00Z, the date every receipt of these tests starts near.
pub(crate) const T0: u64 = 1_767_225_600_000;

/// A repository made by stock git in a temporary directory, with fixed dates and
/// identities, and the receipt index kept in memory (no index key is made in the
/// user's config directory).
pub(crate) struct Scratch {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) store: Store,
    /// Commits made so far, for their dates.
    commits: std::cell::Cell<u64>,
}

/// `git` with no user or system config and fixed identities and dates.
pub(crate) fn git_in(dir: &std::path::Path, args: &[&str]) -> String {
    // it may move refs behind a store's back: a store's index looks again, as
    // the next command's would
    crate::store::refs_may_have_moved();
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.org")
        .env("GIT_COMMITTER_NAME", "A U Thor")
        .env("GIT_COMMITTER_EMAIL", "author@example.org")
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// What a run read after it: its per-test results (with the list's bytes when
/// kept beside the log) and its metrics.
type ReadAfter = (
    Option<(crate::receipt::Tests, Option<Vec<u8>>)>,
    Vec<crate::receipt::Metric>,
);

/// A run that exited `exit`, started `minute` minutes after T0, 5 ms long.
fn observation(exit: i64, minute: u64) -> Observation {
    Observation {
        exit_code: exit,
        detail: String::new(),
        started_at_ms: T0 + minute * 60_000,
        duration_ms: 5,
        stdout_tail: Vec::new(),
        stderr_tail: Vec::new(),
        log: Vec::new(),
        interrupted: None,
        output_bytes: 0,
        log_truncated: false,
    }
}

/// A chain [`Scratch::chain`] wrote.
pub(crate) struct Chain {
    /// The key that signed it.
    pub(crate) key: SigningKey,
    /// Its writer id.
    pub(crate) writer: String,
    /// The commit its receipts are about.
    pub(crate) source: ObjectId,
    /// Its commits, oldest first.
    pub(crate) commits: Vec<ObjectId>,
}

impl Scratch {
    /// An empty repository on branch `main`.
    pub(crate) fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        git_in(dir.path(), &["init", "-q", "-b", "main"]);
        git_in(dir.path(), &["config", "receipt.index", "false"]);
        let store = Store::open(dir.path()).unwrap();
        Scratch {
            dir,
            store,
            commits: std::cell::Cell::new(0),
        }
    }

    /// The store opened again (after git changed refs or config behind its back).
    pub(crate) fn reopen(&mut self) {
        self.store = Store::open(self.dir.path()).unwrap();
    }

    /// Run git in the work tree.
    pub(crate) fn git(&self, args: &[&str]) -> String {
        git_in(self.dir.path(), args)
    }

    /// Run git in the work tree with `input` on its stdin; its stdout, trimmed.
    pub(crate) fn git_input(&self, args: &[&str], input: &[u8]) -> String {
        let mut child = std::process::Command::new("git")
            .args(args)
            .current_dir(self.dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// A copy of chain commit `commit` on `parent` whose `receipt.json` has
    /// `from` replaced by `to` once (the rest of its tree as it was): canonical
    /// and linked, its signature broken. Made with git.
    pub(crate) fn forged(
        &self,
        commit: ObjectId,
        parent: Option<ObjectId>,
        from: &str,
        to: &str,
    ) -> ObjectId {
        let tree = self.git(&["rev-parse", &format!("{commit}^{{tree}}")]);
        let text = self.git(&["cat-file", "blob", &format!("{tree}:receipt.json")]);
        let changed = text.replacen(from, to, 1);
        assert_ne!(changed, text, "{from} is in the receipt");
        let blob = self.git_input(&["hash-object", "-w", "--stdin"], changed.as_bytes());
        self.reshaped(commit, parent, |lines| {
            lines
                .lines()
                .map(|l| match l.strip_suffix("\treceipt.json") {
                    Some(_) => format!("100644 blob {blob}\treceipt.json\n"),
                    None => format!("{l}\n"),
                })
                .collect()
        })
    }

    /// A copy of chain commit `commit` on `parent` whose tree is `edit` of its
    /// tree's `git ls-tree` lines (`git mktree` reads what it returns). Made with
    /// git.
    pub(crate) fn reshaped(
        &self,
        commit: ObjectId,
        parent: Option<ObjectId>,
        edit: impl Fn(&str) -> String,
    ) -> ObjectId {
        let tree = self.git(&["rev-parse", &format!("{commit}^{{tree}}")]);
        let lines = edit(&self.git(&["ls-tree", &tree]));
        let new_tree = self.git_input(&["mktree"], lines.as_bytes());
        let mut args = vec!["commit-tree".to_owned(), new_tree];
        if let Some(p) = parent {
            args.extend(["-p".to_owned(), p.to_string()]);
        }
        args.extend(["-m".to_owned(), "forged".to_owned()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ObjectId::from_hex(self.git(&args).as_bytes()).unwrap()
    }

    /// Write `files` (an empty content deletes the file), commit everything, and
    /// return the commit.
    pub(crate) fn commit(&self, files: &[(&str, &str)], message: &str) -> ObjectId {
        for (path, content) in files {
            let p = self.dir.path().join(path);
            if content.is_empty() {
                let _ = std::fs::remove_file(&p);
            } else {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, content).unwrap();
            }
        }
        let n = self.commits.get() + 1;
        self.commits.set(n);
        let date = format!("@{} +0000", 1_767_225_600 + n * 60);
        self.git(&["add", "-A"]);
        let out = std::process::Command::new("git")
            .args(["commit", "-q", "--allow-empty", "-m", message])
            .current_dir(self.dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "A U Thor")
            .env("GIT_AUTHOR_EMAIL", "author@example.org")
            .env("GIT_COMMITTER_NAME", "A U Thor")
            .env("GIT_COMMITTER_EMAIL", "author@example.org")
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.head()
    }

    /// The tree the work tree would have with `files` written (as in
    /// [`Scratch::commit`]), as if everything were staged; the work tree is then
    /// put back as HEAD has it.
    pub(crate) fn work_tree(&self, files: &[(&str, &str)]) -> ObjectId {
        for (path, content) in files {
            let p = self.dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, content).unwrap();
        }
        let index = self.dir.path().join(".git/scratch-index");
        let with_index = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(self.dir.path())
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_INDEX_FILE", &index)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        with_index(&["add", "-A"]);
        let tree = with_index(&["write-tree"]);
        std::fs::remove_file(&index).unwrap();
        self.git(&["reset", "-q", "--hard"]);
        self.git(&["clean", "-qfd"]);
        ObjectId::from_hex(tree.as_bytes()).unwrap()
    }

    /// A history made at once by `git fast-import` on `main`: a root commit,
    /// then `depth` first-parent commits on top of it, each one changing
    /// `src/lib.rs`, every tenth of them a merge of a one-commit branch
    /// (changing `src/side.rs`) forked from the commit below it. Returns the
    /// root (`depth` first-parent commits back from the tip) and the tip. The
    /// work tree is not checked out.
    pub(crate) fn merge_heavy(&mut self, depth: usize) -> (ObjectId, ObjectId) {
        use std::fmt::Write as _;
        let mut stream = String::new();
        let commit = |stream: &mut String,
                      branch: &str,
                      mark: usize,
                      from: Option<usize>,
                      merge: Option<usize>,
                      path: &str,
                      content: &str| {
            let n = self.commits.get() + 1;
            self.commits.set(n);
            let date = 1_767_225_600 + n * 60;
            let _ = write!(
                stream,
                "commit refs/heads/{branch}\nmark :{mark}\ncommitter A U Thor <author@example.org> {date} +0000\ndata 2\nc\n"
            );
            if let Some(f) = from {
                let _ = writeln!(stream, "from :{f}");
            }
            if let Some(m) = merge {
                let _ = writeln!(stream, "merge :{m}");
            }
            let _ = write!(
                stream,
                "M 100644 inline {path}\ndata {}\n{content}\n",
                content.len()
            );
        };
        // main's commits are marks 1 (the root) ..= depth + 1; side commits above
        commit(&mut stream, "main", 1, None, None, "src/lib.rs", "root");
        for i in 1..=depth {
            let content = format!("{i}");
            if i % 10 == 0 {
                let side = depth + 1 + i;
                commit(
                    &mut stream,
                    "side",
                    side,
                    Some(i),
                    None,
                    "src/side.rs",
                    &content,
                );
                commit(
                    &mut stream,
                    "main",
                    i + 1,
                    Some(i),
                    Some(side),
                    "src/lib.rs",
                    &content,
                );
            } else {
                commit(
                    &mut stream,
                    "main",
                    i + 1,
                    Some(i),
                    None,
                    "src/lib.rs",
                    &content,
                );
            }
        }
        let mut child = std::process::Command::new("git")
            .args(["fast-import", "--quiet", "--done"])
            .current_dir(self.dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        stream.push_str("done\n");
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), stream.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
        self.reopen();
        let tip = ObjectId::from_hex(self.git(&["rev-parse", "main"]).as_bytes()).unwrap();
        let root = ObjectId::from_hex(
            self.git(&["rev-parse", &format!("main~{depth}")])
                .as_bytes(),
        )
        .unwrap();
        (root, tip)
    }

    /// A new repository that fetched `refspecs` from this one to depth
    /// `depth` (shallow, as a clone that took chains from a checkpoint is).
    pub(crate) fn fetched_to_depth(&self, depth: u32, refspecs: &[&str]) -> tempfile::TempDir {
        let clone = tempfile::tempdir().unwrap();
        git_in(clone.path(), &["init", "-q"]);
        let url = format!("file://{}", self.dir.path().display());
        let depth = depth.to_string();
        let mut args = vec!["fetch", "-q", "--depth", &depth, &url];
        args.extend_from_slice(refspecs);
        git_in(clone.path(), &args);
        clone
    }

    /// The commit HEAD names.
    pub(crate) fn head(&self) -> ObjectId {
        ObjectId::from_hex(self.git(&["rev-parse", "HEAD"]).as_bytes()).unwrap()
    }

    /// A chain of check `test` receipts by the key of `seed` on a new commit
    /// of `src/lib.rs`, one a minute for each exit code of `exits`.
    pub(crate) fn chain(&self, seed: u8, exits: &[i64]) -> Chain {
        let contract = contract("[check \"test\"]\n\trun = true\n\tpath = src\n");
        let source = self.commit(&[("src/lib.rs", "a\n")], "a");
        let key = SigningKey::from_seed(&[seed; 32]);
        let writer = crate::receipt::writer_id(key.public(), "default");
        let commits = (0..)
            .zip(exits)
            .map(|(minute, &exit)| {
                self.run(&key, &contract, "test", source, exit, minute)
                    .commit
            })
            .collect();
        Chain {
            key,
            writer,
            source,
            commits,
        }
    }

    /// A check receipt by `key` on chain `chain` for `def` on clean `commit`:
    /// exit `exit`, started `minute` minutes after [`T0`].
    pub(crate) fn run(
        &self,
        key: &SigningKey,
        contract: &Contract,
        check: &str,
        commit: ObjectId,
        exit: i64,
        minute: u64,
    ) -> Appended {
        let tree = self.store.commit_tree(commit).unwrap();
        self.run_on(
            key,
            "default",
            contract,
            check,
            (commit, tree, false),
            exit,
            minute,
        )
    }

    /// [`Scratch::run`] on tree `tree` of `commit` (`dirty` when it is not the
    /// commit's), on chain `chain`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_on(
        &self,
        key: &SigningKey,
        chain: &str,
        contract: &Contract,
        check: &str,
        (commit, tree, dirty): (ObjectId, ObjectId, bool),
        exit: i64,
        minute: u64,
    ) -> Appended {
        self.observe(
            key,
            chain,
            contract,
            check,
            (commit, tree, dirty),
            observation(exit, minute),
            Mode::Run,
        )
    }

    /// A receipt of `obs` in `mode` (with nothing read after the run:
    /// [`Scratch::observe_with`] for that).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn observe(
        &self,
        key: &SigningKey,
        chain: &str,
        contract: &Contract,
        check: &str,
        subject: (ObjectId, ObjectId, bool),
        obs: Observation,
        mode: Mode,
    ) -> Appended {
        self.observe_with(
            key,
            chain,
            contract,
            check,
            subject,
            obs,
            mode,
            (None, Vec::new()),
        )
    }

    /// [`Scratch::run`] of a check whose run read per-test results `tests`
    /// (by the check's `results =` declaration) and metrics `metrics`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_read(
        &self,
        key: &SigningKey,
        contract: &Contract,
        check: &str,
        commit: ObjectId,
        exit: i64,
        minute: u64,
        tests: Vec<crate::receipt::TestCase>,
        metrics: Vec<crate::receipt::Metric>,
    ) -> Appended {
        let decl = contract
            .check(check)
            .and_then(|d| d.results.clone())
            .expect("the check declares results");
        let tree = self.store.commit_tree(commit).unwrap();
        self.observe_with(
            key,
            "default",
            contract,
            check,
            (commit, tree, false),
            observation(exit, minute),
            Mode::Run,
            (Some(crate::results::tests_of(&decl, tests)), metrics),
        )
    }

    /// [`Scratch::observe`] with what the run read after it: per-test results
    /// and metrics.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn observe_with(
        &self,
        key: &SigningKey,
        chain: &str,
        contract: &Contract,
        check: &str,
        (commit, tree, dirty): (ObjectId, ObjectId, bool),
        obs: Observation,
        mode: Mode,
        (tests, metrics): ReadAfter,
    ) -> Appended {
        let def = contract.check(check).expect("the check is declared");
        let spec = spec_in(contract, def);
        let inputs = self.store.inputs_tree(tree, &def.paths, true).unwrap();
        let around = crate::recorder::Surroundings {
            assertions: Vec::new(),
            dependencies: if spec.dependencies.is_empty() {
                Vec::new()
            } else {
                crate::environment::resolve_all(self.dir.path(), &spec.dependencies).unwrap()
            },
            tests,
            metrics,
            artifacts: None,
            idempotency_key: None,
        };
        crate::recorder::store_receipt_in(
            &self.store,
            &writer_id(key.public(), chain),
            key,
            &spec,
            SubjectIds {
                commit,
                tree,
                inputs,
                dirty,
                unmarked: Vec::new(),
            },
            &obs,
            mode,
            &around,
        )
        .unwrap()
    }

    /// The state of every check of `contract` at `rev`.
    pub(crate) fn states(
        &self,
        rev: ObjectId,
        contract: &Contract,
        trust: &TrustSet,
        walk_limit: usize,
    ) -> Vec<Result<CheckState, Undecided>> {
        evaluate(&self.store, rev, contract, trust, Options { walk_limit }).unwrap()
    }

    /// The state of check `name` at `rev`, which must be decided.
    pub(crate) fn state(
        &self,
        rev: ObjectId,
        contract: &Contract,
        trust: &TrustSet,
        name: &str,
    ) -> CheckState {
        self.state_within(rev, contract, trust, name, DEFAULT_WALK_LIMIT)
    }

    /// [`Scratch::state`] with walk limit `walk_limit`.
    pub(crate) fn state_within(
        &self,
        rev: ObjectId,
        contract: &Contract,
        trust: &TrustSet,
        name: &str,
        walk_limit: usize,
    ) -> CheckState {
        match self
            .states(rev, contract, trust, walk_limit)
            .into_iter()
            .find(|s| match s {
                Ok(s) => s.name == name,
                Err(u) => u.name == name,
            }) {
            Some(Ok(s)) => s,
            Some(Err(u)) => panic!("check {name} undecided: {}", u.error),
            None => panic!("no check {name}"),
        }
    }
}

/// A contract from its text.
pub(crate) fn contract(text: &str) -> Contract {
    Contract::parse(text.as_bytes(), std::path::Path::new(".gitreceipts")).unwrap()
}

/// The test keys of `seeds`, and each one's writer id on the chain `default`.
pub(crate) fn keys_and_writers(seeds: impl Iterator<Item = u8>) -> (Vec<SigningKey>, Vec<String>) {
    let keys: Vec<SigningKey> = seeds.map(|i| SigningKey::from_seed(&[i; 32])).collect();
    let ids = keys
        .iter()
        .map(|k| writer_id(k.public(), "default"))
        .collect();
    (keys, ids)
}

/// The test key of `seed` and a trust set holding only it.
pub(crate) fn key_and_trust(seed: u8) -> (SigningKey, TrustSet) {
    let key = SigningKey::from_seed(&[seed; 32]);
    let mut trust = TrustSet::default();
    trust.add(key.public().clone(), TrustOrigin::OwnKey);
    (key, trust)
}

const TEST_AND_DOCS: &str = "[check \"test\"]\n\trun = cargo test\n\tpath = src\n\trequired = true\n[check \"docs\"]\n\trun = mdbook test\n\tpath = docs\n";

/// The history of `docs/freshness.md`: A, B (README), M (docs) on main.
fn branchy() -> (Scratch, [ObjectId; 3]) {
    let s = Scratch::new();
    let a = s.commit(
        &[
            ("src/lib.rs", "pub fn a() {}\n"),
            ("src/main.rs", "fn main() {}\n"),
        ],
        "A initial",
    );
    let b = s.commit(&[("README", "readme\n")], "B add readme");
    let m = s.commit(&[("docs/index.md", "# docs\n")], "M docs changed");
    (s, [a, b, m])
}

fn short(c: ObjectId) -> String {
    c.to_hex_with_len(7).to_string()
}

#[test]
fn step_1_the_newest_receipt_for_the_inputs_decides_pass_fail_pass() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    let first = s.run(&key, &c, "test", m, 0, 1);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Present);
    assert!(st.required);
    assert_eq!(
        st.reason.to_string(),
        format!("present: passed on {} (tested on this commit)", short(m))
    );
    let d = st.decider.unwrap();
    assert_eq!(d.receipt.id(), first.receipt.id());
    assert_eq!(d.distance, Some(0));
    assert_eq!(d.writer, writer_id(key.public(), "default"));
    assert_eq!(st.untrusted, 0);
    assert!(st.changed_paths.is_empty() && st.notices.is_empty());

    s.run(&key, &c, "test", m, 3, 2);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Failed);
    assert_eq!(
        st.reason.to_string(),
        format!("failed: exit 3 at 2026-01-01T00:02:00.000Z on {}", short(m))
    );
    let again = s.run(&key, &c, "test", m, 0, 3);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Present);
    assert_eq!(st.decider.unwrap().receipt.id(), again.receipt.id());
    // the other check has no receipt at all, and the root has no parent
    let docs = s.state(m, &c, &trust, "docs");
    assert_eq!(docs.state, State::Missing);
    assert!(!docs.required);
    assert_eq!(
        docs.reason.to_string(),
        "missing: no receipt within 1,000 ancestors"
    );
}

#[test]
fn step_1_within_one_chain_the_later_entry_wins_whatever_its_date() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.run(&key, &c, "test", m, 0, 10);
    // appended later, dated earlier: still the newer
    s.run(&key, &c, "test", m, 4, 5);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Failed);
    assert_eq!(
        st.reason.to_string(),
        format!("failed: exit 4 at 2026-01-01T00:05:00.000Z on {}", short(m))
    );
}

#[test]
fn step_1_across_chains_the_later_start_wins() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, mut trust) = key_and_trust(1);
    let other = SigningKey::from_seed(&[2; 32]);
    trust.add(other.public().clone(), TrustOrigin::Config);
    let tree = s.store.commit_tree(m).unwrap();
    s.run_on(&other, "ci", &c, "test", (m, tree, false), 0, 20);
    s.run(&key, &c, "test", m, 1, 10);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Present, "{}", st.reason);
    assert_eq!(st.decider.unwrap().writer, writer_id(other.public(), "ci"));
}

#[test]
fn step_1_a_failure_with_detail_names_the_detail() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    let tree = s.store.commit_tree(m).unwrap();
    s.observe(
        &key,
        "default",
        &c,
        "test",
        (m, tree, false),
        Observation {
            exit_code: 0,
            detail: "timed out after 10s and was killed".into(),
            started_at_ms: T0,
            duration_ms: 10_000,
            stdout_tail: Vec::new(),
            stderr_tail: Vec::new(),
            log: Vec::new(),
            interrupted: None,
            output_bytes: 0,
            log_truncated: false,
        },
        Mode::Run,
    );
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Failed);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "failed: timed out after 10s and was killed at 2026-01-01T00:00:00.000Z on {}",
            short(m)
        )
    );
}

#[test]
fn step_1_a_commit_outside_the_paths_keeps_the_receipt() {
    let (s, [_, b, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.run(&key, &c, "test", b, 0, 1);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Present);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "present: inputs identical to {} (tested 1 commit back)",
            short(b)
        )
    );
    assert_eq!(st.decider.unwrap().distance, Some(1));
    let r = s.commit(&[("README", "more\n")], "readme");
    let r2 = s.commit(&[("README", "again\n")], "readme");
    assert_eq!(
        s.state(r2, &c, &trust, "test").reason.to_string(),
        format!(
            "present: inputs identical to {} (tested 3 commits back)",
            short(b)
        )
    );
    let _ = r;
}

#[test]
fn step_1_an_amend_that_keeps_the_inputs_keeps_the_receipt() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.run(&key, &c, "test", m, 0, 1);
    s.git(&["commit", "-q", "--amend", "-m", "reworded"]);
    let amended = s.head();
    assert_ne!(amended, m);
    let st = s.state(amended, &c, &trust, "test");
    assert_eq!(st.state, State::Present);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "present: inputs identical to {} (tested on a commit that is not an ancestor)",
            short(m)
        )
    );
    assert_eq!(st.decider.unwrap().distance, None);
}

#[test]
fn step_1_a_receipt_for_a_commit_this_repository_lacks_still_decides() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    let tree = s.store.commit_tree(m).unwrap();
    let gone = ObjectId::from_hex("ab".repeat(20).as_bytes()).unwrap();
    s.run_on(&key, "default", &c, "test", (gone, tree, false), 0, 1);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(
        st.reason.to_string(),
        "present: inputs identical to abababa (tested on a commit this repository does not have)"
    );
}

#[test]
fn step_1_a_tested_ancestor_beyond_the_walk_is_more_than_the_limit_back() {
    let (s, [_, b, _]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.run(&key, &c, "test", b, 0, 1);
    let mut tip = b;
    for i in 0..3 {
        tip = s.commit(&[("README", &format!("readme {i}\n"))], "readme only");
    }
    let st = s.state_within(tip, &c, &trust, "test", 2);
    assert_eq!(st.state, State::Present);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "present: inputs identical to {} (tested more than 2 commits back)",
            short(b)
        )
    );
    // within the bound it is counted
    assert_eq!(
        s.state_within(tip, &c, &trust, "test", 4)
            .reason
            .to_string(),
        format!(
            "present: inputs identical to {} (tested 4 commits back)",
            short(b)
        )
    );
    // a sibling beyond the bound: not known to be no ancestor, and not one
    s.git(&["checkout", "-q", "-b", "side", &b.to_string()]);
    let side = s.commit(&[("README", "readme 2\n")], "side");
    let st = s.state_within(side, &c, &trust, "test", 1);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "present: inputs identical to {} (tested 1 commit back)",
            short(b)
        )
    );
    s.git(&["checkout", "-q", "main"]);
    s.run(&key, &c, "test", side, 0, 2);
    let st = s.state_within(tip, &c, &trust, "test", 1);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "present: inputs identical to {} (tested on a commit that is not an ancestor)",
            short(side)
        )
    );
}

#[test]
fn step_3_a_commit_touching_the_paths_is_stale_with_the_changed_paths_and_distance() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    let receipt = s.run(&key, &c, "test", m, 0, 1);
    s.commit(
        &[
            ("src/lib.rs", "pub fn b() {}\n"),
            ("src/main.rs", ""),
            ("src/util/new.rs", "// new\n"),
            ("README", "edited\n"),
        ],
        "touch src",
    );
    let h = s.commit(&[("docs/index.md", "# more\n")], "docs");
    let st = s.state(h, &c, &trust, "test");
    assert_eq!(st.state, State::Stale);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: src/lib.rs, src/main.rs, src/util/new.rs changed since {} (2 commits back)",
            short(m)
        )
    );
    assert_eq!(
        st.changed_paths,
        ["src/lib.rs", "src/main.rs", "src/util/new.rs"]
    );
    let d = st.decider.unwrap();
    assert_eq!(d.distance, Some(2));
    assert_eq!(d.receipt.id(), receipt.receipt.id());
    // one commit back, and more than five paths
    let many: Vec<(String, String)> = (1..=7)
        .map(|i| (format!("src/f{i}.rs"), format!("// {i}\n")))
        .collect();
    let files: Vec<(&str, &str)> = many.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    s.run(&key, &c, "test", h, 0, 2);
    let h2 = s.commit(&files, "seven files");
    assert_eq!(
        s.state(h2, &c, &trust, "test").reason.to_string(),
        format!(
            "stale: src/f1.rs, src/f2.rs, src/f3.rs, src/f4.rs, src/f5.rs and 2 more changed since {} (1 commit back)",
            short(h)
        )
    );
}

#[test]
fn step_3_a_merge_is_judged_by_its_first_parent_first() {
    let (s, [_, b, _]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.git(&["checkout", "-q", "-b", "feature", &b.to_string()]);
    let f = s.commit(&[("src/lib.rs", "pub fn f() {}\n")], "F");
    s.git(&["checkout", "-q", "main"]);
    let main_src = s.commit(&[("src/main.rs", "fn main() { m() }\n")], "main src");
    s.run(&key, &c, "test", f, 0, 1);
    s.run(&key, &c, "test", main_src, 0, 2);
    s.git(&["merge", "-q", "--no-ff", "-m", "merge", "feature"]);
    let merge = s.head();
    let st = s.state(merge, &c, &trust, "test");
    assert_eq!(st.state, State::Stale);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: src/lib.rs changed since {} (1 commit back)",
            short(main_src)
        )
    );
}

/// `receipt.walkLimit` is first-parent depth, not commits visited: with a
/// merge every ten commits, the 1,000th first-parent ancestor is 1,000 deep
/// though the walk visits 1,100 commits to reach it (issue 27).
#[test]
fn step_3_the_walk_limit_is_depth_so_merges_do_not_eat_it() {
    let mut s = Scratch::new();
    let (root, tip) = s.merge_heavy(1000);
    let range = format!("{root}..{tip}");
    assert_eq!(
        s.git(&["rev-list", "--count", "--first-parent", &range]),
        "1000"
    );
    assert_eq!(s.git(&["rev-list", "--count", &range]), "1100");
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.run(&key, &c, "test", root, 0, 1);
    let st = s.state_within(tip, &c, &trust, "test", 1000);
    assert_eq!(st.state, State::Stale, "{}", st.reason);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: src/lib.rs changed since {} (1000 commits back)",
            short(root)
        )
    );
    assert_eq!(st.decider.unwrap().distance, Some(1000));
    let st = s.state_within(tip, &c, &trust, "test", 999);
    assert_eq!(st.state, State::Missing);
    assert_eq!(st.reason, "missing: no receipt within 999 ancestors");
    // a merged branch's commit is its merge's depth plus one: the side commit
    // of the tip's own merge (the tip is the 1,000th, a merge) is 1 deep
    let side = ObjectId::from_hex(s.git(&["rev-parse", "main^2"]).as_bytes()).unwrap();
    s.run(&key, &c, "test", side, 0, 2);
    let st = s.state_within(tip, &c, &trust, "test", 1);
    assert_eq!(st.state, State::Stale, "{}", st.reason);
    assert_eq!(st.decider.unwrap().distance, Some(1));
}

#[test]
fn step_2_same_inputs_under_another_definition_is_stale() {
    let (s, [_, _, m]) = branchy();
    let old = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.run(&key, &old, "test", m, 0, 1);
    let new = contract(&TEST_AND_DOCS.replace("cargo test", "cargo test --all"));
    let st = s.state(m, &new, &trust, "test");
    assert_eq!(st.state, State::Stale);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: definition changed since {} (`run`, `path` or `env` of check \"test\" edited)",
            short(m)
        )
    );
    assert_eq!(st.decider.unwrap().distance, Some(0));
    assert!(st.changed_paths.is_empty());
    // `required` is no part of the definition
    let relaxed = contract(&TEST_AND_DOCS.replace("\trequired = true\n", ""));
    assert_eq!(s.state(m, &relaxed, &trust, "test").state, State::Present);
}

#[test]
fn step_3_a_definition_changed_with_the_inputs_says_so() {
    let (s, [_, b, m]) = branchy();
    let old = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.run(&key, &old, "test", b, 0, 1);
    let new = contract(&TEST_AND_DOCS.replace("\tpath = src\n", "\tpath = src\n\tpath = docs\n"));
    let st = s.state(m, &new, &trust, "test");
    assert_eq!(st.state, State::Stale);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: definition changed since {} (1 commit back)",
            short(b)
        )
    );
}

#[test]
fn step_3_the_revision_itself_comes_first_for_a_dirty_receipt() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    // the work tree as tested: src/lib.rs edited, src/extra.rs created
    s.git(&["checkout", "-q", "-b", "wip"]);
    let wip = s.commit(
        &[
            ("src/lib.rs", "pub fn wip() {}\n"),
            ("src/extra.rs", "// x\n"),
        ],
        "what was tested",
    );
    let wip_tree = s.store.commit_tree(wip).unwrap();
    s.git(&["checkout", "-q", "main"]);
    s.run_on(&key, "default", &c, "test", (m, wip_tree, true), 0, 1);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Stale);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: src/extra.rs, src/lib.rs differ from what was tested on {} (this commit, with uncommitted changes)",
            short(m)
        )
    );
    assert_eq!(st.decider.unwrap().distance, Some(0));
    // committing exactly what was tested
    let st = s.state(wip, &c, &trust, "test");
    assert_eq!(st.state, State::Present);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "present: uncommitted changes on {} were tested, identical to {}'s inputs (tested 1 commit back)",
            short(m),
            short(wip)
        )
    );
    // committing something else: compared with what was tested
    let other = s.commit(&[("src/lib.rs", "pub fn other() {}\n")], "something else");
    assert_eq!(
        s.state(other, &c, &trust, "test").reason.to_string(),
        format!(
            "stale: src/extra.rs, src/lib.rs differ from what was tested on {} (1 commit back, with uncommitted changes)",
            short(m)
        )
    );
}

#[test]
fn step_3_a_dirty_receipt_whose_tree_is_not_here_falls_back_to_its_commit() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    let wip_tree = s.work_tree(&[("src/lib.rs", "pub fn wip() {}\n")]);
    s.run_on(&key, "default", &c, "test", (m, wip_tree, true), 0, 1);
    // a clone without the tested tree: the inputs object is gone here
    let inputs = s
        .store
        .inputs_tree(wip_tree, &["src".into()], false)
        .unwrap();
    let loose = s
        .dir
        .path()
        .join(".git/objects")
        .join(&inputs.to_string()[..2])
        .join(&inputs.to_string()[2..]);
    std::fs::remove_file(loose).unwrap();
    let mut s = s;
    s.reopen();
    let h = s.commit(&[("docs/index.md", "# x\n")], "docs only");
    assert_eq!(
        s.state(h, &c, &trust, "test").reason.to_string(),
        format!(
            "stale: inputs differ from {} (1 commit back), whose receipt covered uncommitted changes",
            short(m)
        ),
    );
    // compared with the tested commit's own tree: src/lib.rs (which the dirty run
    // had changed too) does not count as changed
    let h2 = s.commit(&[("src/main.rs", "fn main() { h2() }\n")], "src");
    let st = s.state(h2, &c, &trust, "test");
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: src/main.rs differ from what was tested on {} (2 commits back, with uncommitted changes)",
            short(m)
        ),
    );
    assert_eq!(st.changed_paths, ["src/main.rs"]);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: inputs differ from {} (this commit), whose receipt covered uncommitted changes",
            short(m)
        )
    );
    assert!(st.changed_paths.is_empty());
}

#[test]
fn step_3_a_dirty_receipt_under_another_definition_says_both() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    let wip = s.commit(&[("src/lib.rs", "pub fn wip() {}\n")], "wip");
    let wip_tree = s.store.commit_tree(wip).unwrap();
    s.run_on(&key, "default", &c, "test", (m, wip_tree, true), 0, 1);
    let new = contract(&TEST_AND_DOCS.replace("cargo test", "cargo nextest run"));
    let st = s.state(m, &new, &trust, "test");
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: run on {} (this commit) with uncommitted changes and another definition of the check",
            short(m)
        )
    );
    // rule 3 for a dirty receipt of exactly these inputs under another definition
    let st = s.state(wip, &new, &trust, "test");
    assert_eq!(st.state, State::Stale);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: run on {} with an uncommitted definition of check \"test\", not the one here (`run`, `path` or `env` differ)",
            short(m)
        )
    );
}

#[test]
fn step_4_nothing_found_is_missing() {
    let s = Scratch::new();
    let c = contract(TEST_AND_DOCS);
    let (_key, trust) = key_and_trust(1);
    let root = s.commit(&[("src/lib.rs", "x\n")], "root");
    let st = s.state(root, &c, &trust, "test");
    assert_eq!(st.state, State::Missing);
    assert_eq!(
        st.reason.to_string(),
        "missing: no receipt for this commit, which has no parent to inherit one from"
    );
    assert!(st.decider.is_none());
    let child = s.commit(&[("src/lib.rs", "y\n")], "child");
    assert_eq!(
        s.state_within(child, &c, &trust, "test", 1234)
            .reason
            .to_string(),
        "missing: no receipt within 1,234 ancestors"
    );
}

#[test]
fn the_walk_bound_turns_stale_into_missing() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.run(&key, &c, "test", m, 0, 1);
    let mut tip = m;
    for i in 0..3 {
        tip = s.commit(&[("src/lib.rs", &format!("// {i}\n"))], "src");
    }
    assert_eq!(
        s.state_within(tip, &c, &trust, "test", 3)
            .reason
            .to_string(),
        format!(
            "stale: src/lib.rs changed since {} (3 commits back)",
            short(m)
        )
    );
    let st = s.state_within(tip, &c, &trust, "test", 2);
    assert_eq!(st.state, State::Missing);
    assert_eq!(
        st.reason.to_string(),
        "missing: no receipt within 2 ancestors"
    );
}

/// `check-579599` and `check-762382` have the same 32-bit FNV-1a hash, which is
/// all the index keeps of a name, and the definition digest leaves the name out:
/// only the re-check of the signed name keeps a receipt of one from counting for
/// the other.
#[test]
fn fnv_colliding_check_names_do_not_share_receipts() {
    assert_eq!(check_hash("check-579599"), check_hash("check-762382"));
    let (s, [_, _, m]) = branchy();
    let c = contract(
        "[check \"check-579599\"]\n\trun = true\n\tpath = src\n[check \"check-762382\"]\n\trun = true\n\tpath = src\n",
    );
    let (key, trust) = key_and_trust(1);
    s.run(&key, &c, "check-579599", m, 0, 1);
    let states = s.states(m, &c, &trust, DEFAULT_WALK_LIMIT);
    let by_name = |n: &str| {
        states
            .iter()
            .filter_map(|s| s.as_ref().ok())
            .find(|s| s.name == n)
            .unwrap()
    };
    assert_eq!(by_name("check-579599").state, State::Present);
    let other = by_name("check-762382");
    assert_eq!(other.state, State::Missing, "{}", other.reason);
    assert_eq!(
        other.reason.to_string(),
        "missing: no receipt within 1,000 ancestors"
    );
    // and through the ancestry walk
    let h = s.commit(&[("src/lib.rs", "changed\n")], "src");
    assert_eq!(s.state(h, &c, &trust, "check-762382").state, State::Missing);
    assert_eq!(s.state(h, &c, &trust, "check-579599").state, State::Stale);
}

#[test]
fn trust_a_receipt_by_an_untrusted_key_counts_for_nothing_but_is_counted() {
    let (s, [_, b, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (_own, trust) = key_and_trust(1);
    let bob = SigningKey::from_seed(&[9; 32]);
    s.run(&bob, &c, "test", m, 0, 1);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Missing);
    assert_eq!(st.untrusted, 1, "the one receipt for these inputs");
    // B's src is M's: a receipt on B is one more for these inputs
    s.run(&bob, &c, "test", b, 0, 1);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.untrusted, 2);
    assert_eq!(
        st.reason.to_string(),
        "missing: no receipt within 1,000 ancestors"
    );
}

#[test]
fn trust_a_revoked_key_or_a_receipt_outside_its_window_counts_for_nothing() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let key = SigningKey::from_seed(&[1; 32]);
    s.run(&key, &c, "test", m, 0, 1);
    let entry = |valid_after, valid_before, revoked| {
        let mut t = TrustSet::default();
        t.add_entry(Trusted {
            key: key.public().clone(),
            origin: TrustOrigin::Config,
            valid_after,
            valid_before,
            revoked,
        });
        t
    };
    let st = s.state(m, &c, &entry(None, None, true), "test");
    assert_eq!(st.state, State::Missing);
    assert_eq!(st.untrusted, 1);
    let late = s.state(m, &c, &entry(Some(T0 + 120_000), None, false), "test");
    assert_eq!((late.state, late.untrusted), (State::Missing, 1));
    let early = s.state(m, &c, &entry(None, Some(T0 + 60_000), false), "test");
    assert_eq!((early.state, early.untrusted), (State::Missing, 1));
    let inside = s.state(m, &c, &entry(Some(T0), Some(T0 + 60_001), false), "test");
    assert_eq!(inside.state, State::Present);
    // a receipt by the revoked key on an ancestor makes nothing stale either
    let h = s.commit(&[("src/lib.rs", "changed\n")], "src");
    assert_eq!(
        s.state(h, &c, &entry(None, None, true), "test").state,
        State::Missing
    );
    assert_eq!(
        s.state(h, &c, &entry(None, None, false), "test").state,
        State::Stale
    );
}

#[test]
fn trust_a_trusted_key_on_another_chain_name_still_counts() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    let tree = s.store.commit_tree(m).unwrap();
    s.run_on(&key, "laptop", &c, "test", (m, tree, false), 0, 1);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Present);
    assert_eq!(
        st.decider.unwrap().writer,
        writer_id(key.public(), "laptop")
    );
}

#[test]
fn accept_run_counts_only_observed_runs_and_says_how_many_it_ignored() {
    let (s, [_, _, m]) = branchy();
    let c = contract(
        &TEST_AND_DOCS.replace("\trequired = true\n", "\trequired = true\n\taccept = run\n"),
    );
    let (key, trust) = key_and_trust(1);
    s.run(&key, &c, "test", m, 3, 1);
    let tree = s.store.commit_tree(m).unwrap();
    let recorded = |minute: u64| Observation {
        exit_code: 0,
        detail: String::new(),
        started_at_ms: T0 + minute * 60_000,
        duration_ms: 1,
        stdout_tail: Vec::new(),
        stderr_tail: Vec::new(),
        log: Vec::new(),
        interrupted: None,
        output_bytes: 0,
        log_truncated: false,
    };
    s.observe(
        &key,
        "default",
        &c,
        "test",
        (m, tree, false),
        recorded(2),
        Mode::Record,
    );
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Failed);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "failed: exit 3 at 2026-01-01T00:01:00.000Z on {} (1 recorded receipt ignored: accept = run counts only observed runs)",
            short(m)
        )
    );
    s.observe(
        &key,
        "default",
        &c,
        "test",
        (m, tree, false),
        recorded(3),
        Mode::Record,
    );
    assert!(
        s.state(m, &c, &trust, "test")
            .reason
            .to_string()
            .ends_with("(2 recorded receipts ignored: accept = run counts only observed runs)")
    );
    // accept = any (the default): the newest, recorded, decides
    assert_eq!(
        s.state(m, &contract(TEST_AND_DOCS), &trust, "test").state,
        State::Present
    );
}

#[test]
fn time_a_receipt_dated_in_the_future_counts_for_nothing_and_leaves_a_notice() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.run(&key, &c, "test", m, 5, 1);
    let tree = s.store.commit_tree(m).unwrap();
    // 2099-01-01T00:00:00Z
    let future = 4_070_908_800_000;
    let receipt = s.observe(
        &key,
        "ci",
        &c,
        "test",
        (m, tree, false),
        Observation {
            exit_code: 0,
            detail: String::new(),
            started_at_ms: future,
            duration_ms: 1,
            stdout_tail: Vec::new(),
            stderr_tail: Vec::new(),
            log: Vec::new(),
            interrupted: None,
            output_bytes: 0,
            log_truncated: false,
        },
        Mode::Run,
    );
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Failed, "{}", st.reason);
    assert_eq!(st.notices.len(), 1, "{:?}", st.notices);
    assert!(
        st.notices[0].contains(receipt.receipt.id())
            && st.notices[0].contains("2099-01-01T00:00:00.000Z"),
        "{}",
        st.notices[0]
    );
}

#[test]
fn shallow_step_1_needs_no_history_and_the_walk_stops_at_the_boundary() {
    let (s, [a, b, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.run(&key, &c, "test", a, 0, 1);
    s.run(&key, &c, "docs", b, 0, 1);
    let h = s.commit(&[("README", "later\n")], "readme");
    let clone = tempfile::tempdir().unwrap();
    let url = format!("file://{}", s.dir.path().display());
    git_in(clone.path(), &["clone", "-q", "--depth", "2", &url, "c"]);
    let cdir = clone.path().join("c");
    git_in(&cdir, &["config", "receipt.index", "false"]);
    git_in(
        &cdir,
        &["fetch", "-q", "origin", "refs/receipts/*:refs/receipts/*"],
    );
    let store = Store::open(&cdir).unwrap();
    let states = evaluate(&store, h, &c, &trust, Options::default()).unwrap();
    // test: A's src is H's src, step 1 decides without history
    let test = states[0].as_ref().unwrap();
    assert_eq!(test.state, State::Present);
    assert_eq!(
        test.reason.to_string(),
        format!(
            "present: inputs identical to {} (tested on a commit this shallow clone does not have)",
            short(a)
        )
    );
    // docs: a receipt on B, whose docs are not H's; M is the boundary
    match &states[1] {
        Err(u) => {
            assert_eq!(u.name, "docs");
            assert!(!u.required);
            match &u.error {
                FreshnessError::Shallow { boundary, check } => {
                    assert_eq!((*boundary, check.as_str()), (m, "docs"));
                }
                other => panic!("{other}"),
            }
            assert!(u.error.to_string().starts_with(&format!(
                "history is shallow at {m}: cannot tell whether check \"docs\" is stale or missing from truncated history"
            )));
        }
        Ok(st) => panic!("docs decided from truncated history: {}", st.reason),
    }
    let _ = b;
}

#[test]
fn shallow_a_receipt_on_a_sibling_is_not_an_ancestor_within_this_history() {
    let (s, [_, b, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    s.git(&["checkout", "-q", "-b", "side", &b.to_string()]);
    let side = s.commit(&[("docs/other.md", "x\n")], "side");
    s.git(&["checkout", "-q", "main"]);
    s.run(&key, &c, "test", side, 0, 1);
    let clone = tempfile::tempdir().unwrap();
    let url = format!("file://{}", s.dir.path().display());
    git_in(
        clone.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            "--no-single-branch",
            &url,
            "c",
        ],
    );
    let cdir = clone.path().join("c");
    git_in(&cdir, &["config", "receipt.index", "false"]);
    git_in(
        &cdir,
        &["fetch", "-q", "origin", "refs/receipts/*:refs/receipts/*"],
    );
    let store = Store::open(&cdir).unwrap();
    let states = evaluate(&store, m, &c, &trust, Options::default()).unwrap();
    assert_eq!(
        states[0].as_ref().unwrap().reason.to_string(),
        format!(
            "present: inputs identical to {} (tested on a commit that is not an ancestor within this shallow clone's history)",
            short(side)
        )
    );
}

#[test]
fn step_5_a_dependency_that_moved_makes_a_present_check_stale() {
    let s = Scratch::new();
    // the sibling clone, at ../proto from the work tree
    let proto = s.dir.path().join("proto");
    std::fs::create_dir_all(proto.join("schema")).unwrap();
    git_in(&proto, &["init", "-q", "-b", "main"]);
    std::fs::write(proto.join("schema/api.proto"), "v1\n").unwrap();
    std::fs::write(proto.join("README"), "r\n").unwrap();
    git_in(&proto, &["add", "-A"]);
    git_in(&proto, &["commit", "-q", "-m", "v1"]);
    let v1 = git_in(&proto, &["rev-parse", "HEAD"]);
    std::fs::write(s.dir.path().join(".gitignore"), "proto/\n").unwrap();
    let h = s.commit(&[("src/lib.rs", "x\n")], "with proto beside");
    let c = contract(
        "[dependency \"proto\"]\n\tpath = proto\n\tpaths = schema\n[check \"test\"]\n\trun = true\n\tpath = src\n\tdepends = proto\n",
    );
    let (key, trust) = key_and_trust(1);
    s.run(&key, &c, "test", h, 0, 1);
    assert_eq!(s.state(h, &c, &trust, "test").state, State::Present);
    // a move outside its declared paths changes nothing
    std::fs::write(proto.join("README"), "r2\n").unwrap();
    git_in(&proto, &["commit", "-qam", "readme"]);
    assert_eq!(s.state(h, &c, &trust, "test").state, State::Present);
    std::fs::write(proto.join("schema/api.proto"), "v2\n").unwrap();
    git_in(&proto, &["commit", "-qam", "v2"]);
    let v2 = git_in(&proto, &["rev-parse", "HEAD"]);
    let st = s.state(h, &c, &trust, "test");
    assert_eq!(st.state, State::Stale);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: dependency proto moved: {} -> {}, schema/api.proto changed",
            &v1[..7],
            &v2[..7]
        )
    );
    assert!(st.decider.is_some());
    // a clone that is not there: undecided, never present
    std::fs::rename(&proto, s.dir.path().join("elsewhere")).unwrap();
    match &s.states(h, &c, &trust, DEFAULT_WALK_LIMIT)[0] {
        Err(u) => assert!(
            matches!(u.error, FreshnessError::Dependency { ref check, .. } if check == "test"),
            "{}",
            u.error
        ),
        Ok(st) => panic!("decided without its dependency: {}", st.reason),
    }
}

#[test]
fn the_state_names_are_lowercase() {
    assert_eq!(
        [State::Present, State::Failed, State::Stale, State::Missing].map(State::as_str),
        ["present", "failed", "stale", "missing"]
    );
}

/// The index's candidates are narrowed by role, check and definition before any
/// is opened: a receipt of another check, even one defined alike on the same
/// inputs, is no untrusted receipt of this one.
#[test]
fn trust_only_this_check_s_receipts_are_counted_as_untrusted() {
    let (s, [_, _, m]) = branchy();
    let c = contract(
        "[check \"test\"]\n\trun = true\n\tpath = src\n[check \"lint\"]\n\trun = true\n\tpath = src\n",
    );
    let (_own, trust) = key_and_trust(1);
    let bob = SigningKey::from_seed(&[9; 32]);
    s.run(&bob, &c, "lint", m, 0, 1);
    let lint = s.state(m, &c, &trust, "lint");
    assert_eq!((lint.state, lint.untrusted), (State::Missing, 1));
    let test = s.state(m, &c, &trust, "test");
    assert_eq!((test.state, test.untrusted), (State::Missing, 0));
}

/// The index proposes candidates of this check's definition only for rule 1: a
/// receipt under another definition by an untrusted key is not counted as an
/// untrusted receipt for these inputs.
#[test]
fn trust_only_receipts_of_this_definition_are_counted_as_untrusted() {
    let (s, [_, _, m]) = branchy();
    let old = contract(TEST_AND_DOCS);
    let new = contract(&TEST_AND_DOCS.replace("cargo test", "cargo test --all"));
    let (_own, trust) = key_and_trust(1);
    let bob = SigningKey::from_seed(&[9; 32]);
    s.run(&bob, &old, "test", m, 0, 1);
    assert_eq!(s.state(m, &old, &trust, "test").untrusted, 1);
    let st = s.state(m, &new, &trust, "test");
    assert_eq!((st.state, st.untrusted), (State::Missing, 0));
}

/// A receipt dated in the future is met by every step that looks (rule 1, rule 3,
/// the walk): it leaves one notice, not one per step.
#[test]
fn time_a_receipt_dated_in_the_future_leaves_one_notice() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    // 2099-01-01T00:00:00Z
    s.run(&key, &c, "test", m, 0, (4_070_908_800_000 - T0) / 60_000);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Missing, "{}", st.reason);
    assert_eq!(st.notices.len(), 1, "{:?}", st.notices);
}

#[test]
fn thousands_are_grouped_in_threes_from_the_right() {
    assert_eq!(group_thousands(0), "0");
    assert_eq!(group_thousands(999), "999");
    assert_eq!(group_thousands(123_456), "123,456");
    assert_eq!(group_thousands(1_000_000), "1,000,000");
    assert_eq!(group_thousands(12_345), "12,345");
}

/// `Store::is_ancestor` answers a range's questions from the answers it gave
/// for parents: over a merge-heavy history, asked in any order (oldest first,
/// as a range is judged, newest first and shuffled) through one store, every
/// answer is stock git's (`git rev-list` of each commit is the oracle).
#[test]
fn ancestry_answers_remembered_across_a_range_are_stock_gits() {
    let mut s = Scratch::new();
    let (_root, _tip) = s.merge_heavy(40);
    let all: Vec<ObjectId> = s
        .git(&["rev-list", "--all", "--topo-order", "--reverse"])
        .lines()
        .map(|h| ObjectId::from_hex(h.as_bytes()).unwrap())
        .collect();
    let ancestors: std::collections::HashMap<ObjectId, HashSet<ObjectId>> = all
        .iter()
        .map(|b| {
            let set = s
                .git(&["rev-list", &b.to_string()])
                .lines()
                .map(|h| ObjectId::from_hex(h.as_bytes()).unwrap())
                .collect();
            (*b, set)
        })
        .collect();
    // the questions: main's tip, root and a few commits of main and the side
    // branches, asked of every commit
    let askers: Vec<ObjectId> = [0, 1, 5, 11, 12, 23, 30, all.len() - 1]
        .iter()
        .map(|i| all[*i])
        .collect();
    let orders: [Vec<ObjectId>; 3] = [
        all.clone(),
        all.iter().rev().copied().collect(),
        // a fixed shuffle: every seventh, wrapping
        (0..all.len()).map(|i| all[(i * 7) % all.len()]).collect(),
    ];
    assert!(
        !all.len().is_multiple_of(7),
        "the shuffle visits every commit"
    );
    for order in &orders {
        s.reopen();
        let mut yes = 0;
        for b in order {
            for a in &askers {
                let want = ancestors[b].contains(a);
                assert_eq!(
                    s.store.is_ancestor(*a, *b).unwrap(),
                    want,
                    "is {a} an ancestor of {b}"
                );
                yes += usize::from(want);
            }
        }
        // both answers were asked many times
        assert!(yes > 50 && yes < order.len() * askers.len() - 50, "{yes}");
    }
}

/// The index keeps only the first 8 bytes of a definition digest: a receipt
/// whose digest shares them with this check's but differs after them (signed
/// as such by a trusted key) is proposed for rule 1, and only the re-check of
/// its signed definition keeps it from counting as present. Rule 3 then finds
/// it, under another definition.
#[test]
fn step_1_a_definition_that_only_shares_the_index_prefix_does_not_count() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (key, trust) = key_and_trust(1);
    let honest = s.run(&key, &c, "test", m, 0, 1);
    let mut body = honest.receipt.body().clone();
    let digest = body.check.definition.clone();
    // keep `sha256:` and 16 hex digits, flip the last one
    let last = if digest.ends_with('0') { "1" } else { "0" };
    body.check.definition = format!("{}{last}", &digest[..digest.len() - 1]);
    assert_ne!(body.check.definition, digest);
    assert_eq!(
        definition_prefix(&body.check.definition),
        definition_prefix(&digest)
    );
    let writer = writer_id(key.public(), "forged");
    body.chain.writer = writer.clone();
    let lookalike = s
        .store
        .append(&writer, &key, &[], |index, prev| {
            let mut b = body.clone();
            b.chain.index = index;
            b.chain.prev = prev;
            b
        })
        .unwrap();
    // the honest receipt gone: only the lookalike is left for these inputs
    s.git(&[
        "update-ref",
        "-d",
        &format!("refs/receipts/{}", honest.receipt.body().chain.writer),
    ]);
    let mut s = s;
    s.reopen();
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Stale, "{}", st.reason);
    assert_eq!(
        st.reason,
        format!(
            "stale: definition changed since {} (`run`, `path` or `env` of check \"test\" edited)",
            short(m)
        )
    );
    assert_eq!(st.decider.unwrap().receipt.id(), lookalike.receipt.id());
}

/// `timeout` is no part of the definition, so rule 1 checks it: a pass that
/// took longer than the timeout allows now is stale, one that took exactly as
/// long or less is present.
#[test]
fn step_1_a_pass_longer_than_the_timeout_allows_now_is_stale() {
    let (s, [_, _, m]) = branchy();
    let c = contract(
        &TEST_AND_DOCS.replace("\trequired = true\n", "\trequired = true\n\ttimeout = 10\n"),
    );
    let (key, trust) = key_and_trust(1);
    let tree = s.store.commit_tree(m).unwrap();
    let pass_taking = |duration_ms: u64, minute: u64| {
        s.observe(
            &key,
            "default",
            &c,
            "test",
            (m, tree, false),
            Observation {
                exit_code: 0,
                detail: String::new(),
                started_at_ms: T0 + minute * 60_000,
                duration_ms,
                stdout_tail: Vec::new(),
                stderr_tail: Vec::new(),
                log: Vec::new(),
                interrupted: None,
                output_bytes: 0,
                log_truncated: false,
            },
            Mode::Run,
        )
    };
    pass_taking(10_000, 1);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Present, "{}", st.reason);
    pass_taking(12_300, 2);
    let st = s.state(m, &c, &trust, "test");
    assert_eq!(st.state, State::Stale);
    assert_eq!(
        st.reason,
        format!(
            "stale: the pass on {} took 12.3s, longer than timeout = 10s allows now",
            short(m)
        )
    );
    pass_taking(20_000, 3);
    assert_eq!(
        s.state(m, &c, &trust, "test").reason,
        format!(
            "stale: the pass on {} took 20s, longer than timeout = 10s allows now",
            short(m)
        )
    );
    pass_taking(9_999, 4);
    assert_eq!(s.state(m, &c, &trust, "test").state, State::Present);
}

#[test]
fn seconds_drop_trailing_zeros_of_the_milliseconds() {
    assert_eq!(seconds(0), "0s");
    assert_eq!(seconds(5_000), "5s");
    assert_eq!(seconds(12_300), "12.3s");
    assert_eq!(seconds(1_005), "1.005s");
    assert_eq!(seconds(60_010), "60.01s");
}

/// A shallow clone where only untrusted receipts of these inputs were found:
/// the error names the untrusted receipts, since trust, not depth, is lacking.
#[test]
fn shallow_untrusted_receipts_of_these_inputs_are_named_as_the_cause() {
    let (s, [_, _, m]) = branchy();
    let c = contract(TEST_AND_DOCS);
    let (_own, trust) = key_and_trust(1);
    let bob = SigningKey::from_seed(&[9; 32]);
    let h = s.commit(&[("docs/index.md", "# later\n")], "docs");
    s.run(&bob, &c, "docs", h, 0, 1);
    let clone = tempfile::tempdir().unwrap();
    let url = format!("file://{}", s.dir.path().display());
    git_in(clone.path(), &["clone", "-q", "--depth", "2", &url, "c"]);
    let cdir = clone.path().join("c");
    git_in(&cdir, &["config", "receipt.index", "false"]);
    git_in(
        &cdir,
        &["fetch", "-q", "origin", "refs/receipts/*:refs/receipts/*"],
    );
    let store = Store::open(&cdir).unwrap();
    let states = evaluate(&store, h, &c, &trust, Options::default()).unwrap();
    match &states[1] {
        Err(u) => match &u.error {
            FreshnessError::ShallowUntrusted {
                boundary,
                check,
                untrusted,
            } => assert_eq!((*boundary, check.as_str(), *untrusted), (m, "docs", 1)),
            other => panic!("{other}"),
        },
        Ok(st) => panic!("docs decided from truncated history: {}", st.reason),
    }
    // the check without any receipt: depth is all that is lacking
    match &states[0] {
        Err(u) => assert!(
            matches!(u.error, FreshnessError::Shallow { boundary, .. } if boundary == m),
            "{}",
            u.error
        ),
        Ok(st) => panic!("test decided from truncated history: {}", st.reason),
    }
}
