//! Moving receipts between repositories with stock `git fetch` and `git push`.
//!
//! gix cannot push, and users' remotes come with credentials, proxies and hooks
//! that only git knows, so both directions run git as a subprocess. Fetching goes
//! into a staging namespace (`refs/receipts-incoming/<remote>/<writer>`), is
//! verified there, and only then fast-forwards local chains: a local chain that is
//! ahead of or diverged from the remote's is never overwritten.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use gix::ObjectId;

use super::chain::{ChainEntry, chain_ref};
use super::entry::LOG_FILE;
use super::notes::notes_ref;
use super::{CHAIN_PREFIX, NOTES_PREFIX, Store, StoreError, git_err};
use crate::receipt::{Receipt, is_valid_writer_id};
use crate::sign::SigningKey;

/// Ref tips by writer id.
pub type Tips = BTreeMap<String, ObjectId>;

/// The staging name of a remote: its name, or for a URL or path (pushing to one
/// directly) a digest of it, so it can be part of a ref name.
pub fn staging_name(remote: &str) -> String {
    if is_valid_remote_name(remote) {
        remote.to_owned()
    } else {
        use sha2::Digest;
        format!(
            "url-{}",
            &hex::encode(sha2::Sha256::digest(remote.as_bytes()))[..16]
        )
    }
}

/// Where fetched chains are staged before they are verified.
pub fn staged_chain_ref(remote: &str, writer: &str) -> String {
    format!("refs/receipts-incoming/{}/{writer}", staging_name(remote))
}

/// Where a fetch from `remote` stages its signed checkpoint chains.
pub fn staged_checkpoint_prefix(remote: &str) -> String {
    format!(
        "refs/receipt-checkpoints-incoming/{}/",
        staging_name(remote)
    )
}

/// Where fetched notes are staged.
pub fn staged_notes_ref(remote: &str, writer: &str) -> String {
    format!(
        "refs/notes/receipts-incoming/{}/{writer}",
        staging_name(remote)
    )
}

/// What a git subprocess said.
#[derive(Debug)]
pub struct GitOutput {
    /// Exit status was 0.
    pub ok: bool,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// How a local chain relates to a fetched one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// No local chain: take the fetched one.
    New,
    /// Same tip.
    Same,
    /// Local is an ancestor: fast-forward.
    Behind,
    /// Fetched is an ancestor: local has receipts the remote lacks.
    Ahead,
    /// Neither contains the other.
    Diverged,
}

/// Whether a remote name can be part of a ref name.
pub fn is_valid_remote_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['.', '-'])
        && !name.contains("..")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl Store {
    /// A `git` command running in this repository.
    pub fn git_command(&self) -> Command {
        // it may move a ref; those who run it do so at once
        super::refs_may_have_moved();
        let mut cmd = Command::new("git");
        match self.repo.workdir() {
            Some(w) => cmd.arg("-C").arg(w),
            None => cmd.arg("--git-dir").arg(self.git_dir()),
        };
        cmd
    }

    /// Run git with `args`, capturing its output. A `fetch`, `push` or
    /// `ls-remote` (which wait on a remote) is given `receipt.networkTimeout`
    /// seconds (default [`NETWORK_TIMEOUT_SECS`]; 0: no limit): a remote that
    /// stalls is given up on, the transfer killed, and nothing is taken from it (a
    /// fetch lands in the staging namespace only, a push is atomic).
    pub fn run_git(&self, args: &[&str]) -> Result<GitOutput, StoreError> {
        self.run_git_stdin(args, None)
    }

    /// [`Store::run_git`] with `input` on git's stdin.
    pub fn run_git_input(&self, args: &[&str], input: &[u8]) -> Result<GitOutput, StoreError> {
        self.run_git_stdin(args, Some(input))
    }

    /// How long a network `git` command may take: `receipt.networkTimeout`
    /// (seconds; 0 or less: no limit), else [`NETWORK_TIMEOUT_SECS`].
    fn network_limit(&self) -> Option<std::time::Duration> {
        match self.config_integer("receipt.networkTimeout") {
            Some(n) if n <= 0 => None,
            Some(n) => Some(std::time::Duration::from_secs(n as u64)),
            None => Some(std::time::Duration::from_secs(NETWORK_TIMEOUT_SECS)),
        }
    }

    fn run_git_stdin(&self, args: &[&str], input: Option<&[u8]>) -> Result<GitOutput, StoreError> {
        if matches!(args.first(), Some(&("fetch" | "push" | "ls-remote"))) {
            let started = self.start_network_git(args, input, self.network_limit())?;
            return self.finish_network_git(started);
        }
        let Some(input) = input else {
            let out = self
                .git_command()
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .output()
                .map_err(could_not_run(args))?;
            return Ok(GitOutput::of(&out));
        };
        self.run_git_feeding(args, |stdin| stdin.write_all(input))
    }

    /// [`Store::run_git`] of a local command (no time limit) with what `feed`
    /// writes on git's stdin, handed to git as it is written: a notes pack of
    /// hundreds of megabytes never has to be whole in memory. git's output is
    /// read on threads of its own meanwhile, so a git that writes while it
    /// reads cannot stall the feed, nor the feed git.
    ///
    /// A git that stops reading early (it refused its input, or failed) makes
    /// the feed's next write fail with a broken pipe, and git's own failure
    /// is the answer. Any other failure of the feed, or a git that says it
    /// succeeded without reading all its input, is an error: what git did
    /// with part of its input cannot be trusted.
    pub(crate) fn run_git_feeding(
        &self,
        args: &[&str],
        feed: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> Result<GitOutput, StoreError> {
        use std::io::{Read as _, Write as _};
        let mut child = self
            .git_command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(could_not_run(args))?;
        let stdin = child.stdin.take().expect("piped");
        let read_all = |mut pipe: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = pipe.read_to_end(&mut v);
                v
            })
        };
        let out_reader = read_all(Box::new(child.stdout.take().expect("piped")));
        let err_reader = read_all(Box::new(child.stderr.take().expect("piped")));
        let fed = {
            let mut stdin = std::io::BufWriter::with_capacity(1 << 16, stdin);
            // dropped at the end of this block: git sees the end of its input
            feed(&mut stdin).and_then(|()| stdin.flush())
        };
        let status = child.wait().map_err(could_not_run(args));
        let out = std::process::Output {
            status: status?,
            stdout: out_reader.join().unwrap_or_default(),
            stderr: err_reader.join().unwrap_or_default(),
        };
        let out = GitOutput::of(&out);
        match fed {
            Ok(()) => Ok(out),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe && !out.ok => Ok(out),
            Err(e) => Err(StoreError::GitCommand {
                args: args.join(" "),
                stderr: if out.stderr.is_empty() {
                    format!("could not write its input: {e}")
                } else {
                    format!("could not write its input: {e}; git said: {}", out.stderr)
                },
            }),
        }
    }

    /// Start a network `git` command (`fetch`, `push`, `ls-remote`) with
    /// `input` on its stdin, without waiting for it: the caller works while
    /// git talks to the remote, then [`Store::finish_network_git`] waits, within
    /// what is left of `limit` (counted from the start).
    fn start_network_git(
        &self,
        args: &[&str],
        input: Option<&[u8]>,
        limit: Option<std::time::Duration>,
    ) -> Result<StartedGit, StoreError> {
        let mut cmd = self.git_command();
        cmd.args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().map_err(could_not_run(args))?;
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            let input = input.to_vec();
            // a writer of its own, so a git that stops reading cannot stall
            // the wait (and its time limit); a write git refused is git's to
            // report
            std::thread::spawn(move || {
                use std::io::Write as _;
                let _ = stdin.write_all(&input);
            });
        }
        Ok(StartedGit {
            child,
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            limit,
            started: std::time::Instant::now(),
        })
    }

    /// Wait for a command [`Store::start_network_git`] started, saying so while
    /// it lasts, and kill it at its time limit.
    fn finish_network_git(&self, started: StartedGit) -> Result<GitOutput, StoreError> {
        let StartedGit {
            child,
            args,
            limit,
            started,
        } = started;
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let what = waiting_label(&args);
        let before = started.elapsed();
        let tell = |elapsed, done| {
            if let Some(sink) = &self.waiting {
                sink(&Waiting {
                    what: what.clone(),
                    elapsed: before + elapsed,
                    limit,
                    done,
                });
            }
        };
        let left = limit.map(|l| l.saturating_sub(before));
        match wait_with_limit(child, left, &tell).map_err(could_not_run(&args))? {
            Some(out) => Ok(GitOutput::of(&out)),
            None => Err(StoreError::RemoteTimedOut {
                args: args.join(" "),
                seconds: limit.map_or(0, |l| l.as_secs()),
            }),
        }
    }

    /// Whether `remote` is a configured remote name.
    pub fn has_remote(&self, remote: &str) -> Result<bool, StoreError> {
        Ok(self.run_git(&["remote", "get-url", remote])?.ok)
    }

    /// Whether `a` is an ancestor of (or equal to) `b`.
    pub fn is_ancestor(&self, a: ObjectId, b: ObjectId) -> Result<bool, StoreError> {
        if a == b {
            return Ok(true);
        }
        if let Some(known) = self.ancestor_from_parents(a, b)? {
            return Ok(known);
        }
        let answer = match self.repo.merge_base(a, b) {
            Ok(Some(base)) => base.detach() == a,
            Ok(None) => false,
            Err(e) => {
                return Err(StoreError::Git {
                    what: "computing a merge base".into(),
                    source: e.into(),
                });
            }
        };
        self.remember_ancestor(a, b, answer);
        Ok(answer)
    }

    /// Whether `a` is an ancestor of `b`, from what this store already knows:
    /// `b`'s ancestors are `b` and its parents' ancestors, so `a` is one of them
    /// when it is a parent or is known to be an ancestor of one, and is not when
    /// it is known to be no ancestor of any. `None` when that is not yet known
    /// (or `b` is a shallow commit, whose parents are not here to ask).
    fn ancestor_from_parents(&self, a: ObjectId, b: ObjectId) -> Result<Option<bool>, StoreError> {
        {
            let history = self.history.lock().expect("history lock");
            if let Some(known) = history.ancestor.get(&(a, b)) {
                return Ok(Some(*known));
            }
        }
        if self.is_shallow_commit(b)? {
            return Ok(None);
        }
        let parents = self.cached_parents(b)?;
        let known = {
            let history = self.history.lock().expect("history lock");
            let mut all_known_not = true;
            let mut yes = false;
            for p in parents.iter() {
                match history.ancestor.get(&(a, *p)) {
                    _ if *p == a => yes = true,
                    Some(true) => yes = true,
                    Some(false) => {}
                    None => all_known_not = false,
                }
            }
            if yes {
                Some(true)
            } else if all_known_not {
                Some(false)
            } else {
                None
            }
        };
        if let Some(answer) = known {
            self.remember_ancestor(a, b, answer);
        }
        Ok(known)
    }

    fn remember_ancestor(&self, a: ObjectId, b: ObjectId, answer: bool) {
        let mut history = self.history.lock().expect("history lock");
        // bounded: a range of a million commits asks a few dozen questions each
        if history.ancestor.len() >= 4_000_000 {
            history.ancestor.clear();
        }
        history.ancestor.insert((a, b), answer);
    }

    /// How the local `ours` relates to a fetched `theirs`.
    pub fn relation(
        &self,
        ours: Option<ObjectId>,
        theirs: ObjectId,
    ) -> Result<Relation, StoreError> {
        Ok(match ours {
            None => Relation::New,
            Some(o) if o == theirs => Relation::Same,
            Some(o) if self.is_ancestor(o, theirs)? => Relation::Behind,
            Some(o) if self.is_ancestor(theirs, o)? => Relation::Ahead,
            Some(_) => Relation::Diverged,
        })
    }

    /// What `id` names when it is not a commit ("tag", "tree", "blob", or "an
    /// object missing here"); `None` for a commit. A fetched chain's tip is taken
    /// as the ref names it (not peeled), so a remote ref naming anything else is
    /// refused by this, for its chain alone.
    pub fn not_a_commit(&self, id: ObjectId) -> Option<String> {
        match self.repo.find_header(id) {
            Ok(h) if h.kind() == gix::object::Kind::Commit => None,
            Ok(h) => Some(h.kind().to_string()),
            Err(_) => Some("an object missing here".to_owned()),
        }
    }

    /// Refs under `prefix`, with their ids.
    pub fn refs_under(&self, prefix: &str) -> Result<BTreeMap<String, ObjectId>, StoreError> {
        let refs = self
            .repo
            .references()
            .map_err(git_err("listing references"))?;
        let mut out = BTreeMap::new();
        for r in refs
            .prefixed(prefix)
            .map_err(git_err(format!("listing {prefix}")))?
        {
            let mut r = r.map_err(git_err("reading a ref"))?;
            let name = r.name().as_bstr().to_string();
            // a ref that names an object is taken as it is, no object read (what it
            // names is checked by whoever reads it: a fetch's 10,000 staged tips
            // were 10,000 object lookups); a symbolic one is followed
            let id = match r.target().try_id() {
                Some(id) => id.to_owned(),
                None => r
                    .peel_to_id()
                    .map_err(git_err(format!("resolving {name}")))?
                    .detach(),
            };
            out.insert(name, id);
        }
        Ok(out)
    }

    /// Every chain tip `remote` has, by writer id (`git ls-remote`: nothing is
    /// fetched). Names that are no writer id are left out.
    pub fn remote_chain_tips(&self, remote: &str) -> Result<Tips, StoreError> {
        let pattern = format!("{CHAIN_PREFIX}*");
        let out = self.run_git(&["ls-remote", "--refs", remote, &pattern])?;
        if !out.ok {
            return Err(StoreError::GitCommand {
                args: format!("ls-remote {remote} (receipt chains)"),
                stderr: out.stderr,
            });
        }
        let mut tips = Tips::new();
        for line in out.stdout.lines() {
            let Some((oid, name)) = line.split_once('\t') else {
                continue;
            };
            let (Ok(oid), Some(w)) = (
                ObjectId::from_hex(oid.trim().as_bytes()),
                name.strip_prefix(CHAIN_PREFIX),
            ) else {
                continue;
            };
            if is_valid_writer_id(w) {
                tips.insert(w.to_owned(), oid);
            }
        }
        Ok(tips)
    }

    /// Fetch the chains of `writers` from `remote` into the staging namespace
    /// (as [`Store::fetch_staged`] does for every writer), as much of each as
    /// `cut` says (what `fetch --since` takes). Refspecs go on stdin, so a
    /// thousand writers make one command line.
    pub fn fetch_writers_staged(
        &self,
        remote: &str,
        writers: &[&str],
        cut: Cut,
    ) -> Result<(), StoreError> {
        match self.start_fetch_writers_staged(remote, writers, cut)? {
            Some(started) => self.finish_fetch_writers_staged(started),
            None => Ok(()),
        }
    }

    /// [`Store::fetch_writers_staged`] started, not waited for (`None`: no
    /// writers, nothing to fetch): the caller reads what an earlier fetch
    /// brought while git fetches, then [`Store::finish_fetch_writers_staged`].
    /// Reading objects meanwhile is safe (git moves a finished pack into place
    /// whole); moving refs or writing objects is not, until it finishes.
    pub fn start_fetch_writers_staged(
        &self,
        remote: &str,
        writers: &[&str],
        cut: Cut,
    ) -> Result<Option<StartedFetch>, StoreError> {
        if writers.is_empty() {
            return Ok(None);
        }
        let cut_arg = match cut {
            Cut::Whole => None,
            Cut::Depth(d) => Some(format!("--depth={d}")),
            // git's own form of a date (`@<seconds>`), sent to the server as
            // `deepen-since <seconds>`: no time zone or format to misread
            Cut::Since(ms) => Some(format!("--shallow-since=@{}", ms / 1000)),
        };
        let mut args = vec![
            "fetch",
            "--no-tags",
            "--no-write-fetch-head",
            "--quiet",
            "--refmap=",
            "--stdin",
        ];
        if let Some(c) = &cut_arg {
            args.push(c);
        }
        args.push(remote);
        let specs: String = writers
            .iter()
            .map(|w| format!("+{}:{}\n", chain_ref(w), staged_chain_ref(remote, w)))
            .collect();
        let git = self.start_network_git(&args, Some(specs.as_bytes()), self.network_limit())?;
        Ok(Some(StartedFetch {
            git,
            what: match cut {
                Cut::Whole => format!("fetch {remote} (receipt chains)"),
                cut => format!("fetch {remote} (receipt chains, {cut})"),
            },
        }))
    }

    /// Wait for a fetch [`Store::start_fetch_writers_staged`] started.
    pub fn finish_fetch_writers_staged(&self, started: StartedFetch) -> Result<(), StoreError> {
        let out = self.finish_network_git(started.git)?;
        self.forget_shallow();
        if !out.ok {
            return Err(StoreError::GitCommand {
                args: started.what,
                stderr: out.stderr,
            });
        }
        Ok(())
    }

    /// Fetch every signer's checkpoint chain from `remote` into the staging
    /// namespace, alone (what `fetch --since` reads before any chain).
    pub fn fetch_checkpoints_staged(&self, remote: &str) -> Result<Tips, StoreError> {
        let spec = format!(
            "+{}*:{}*",
            super::checkpoints::CHECKPOINT_PREFIX,
            staged_checkpoint_prefix(remote)
        );
        let out = self.run_git(&[
            "fetch",
            "--prune",
            "--no-tags",
            "--no-write-fetch-head",
            "--quiet",
            "--refmap=",
            remote,
            &spec,
        ])?;
        if !out.ok {
            return Err(StoreError::GitCommand {
                args: format!("fetch {remote} (checkpoints)"),
                stderr: out.stderr,
            });
        }
        self.staged_checkpoints(remote)
    }

    /// Every signer's checkpoint chain tip as the last fetch of every chain
    /// from `remote` staged it, by writer id.
    pub fn staged_checkpoints(&self, remote: &str) -> Result<Tips, StoreError> {
        let prefix = staged_checkpoint_prefix(remote);
        Ok(self
            .refs_under(&prefix)?
            .into_iter()
            .filter_map(|(k, v)| {
                let w = k.strip_prefix(&prefix)?.to_owned();
                is_valid_writer_id(&w).then_some((w, v))
            })
            .collect())
    }

    /// Fetch every chain and notes ref of `remote` into the staging namespace.
    /// Returns staged chain tips and staged notes tips by writer.
    pub fn fetch_staged(
        &self,
        remote: &str,
        only_writer: Option<&str>,
    ) -> Result<(Tips, Tips), StoreError> {
        self.fetch_staged_with(remote, only_writer, false)
    }

    /// [`Store::fetch_staged`] of every writer, with `cut` ([`Store::chains_cut`],
    /// asked by the caller) the rest of every chain a shallow fetch cut here, at
    /// [`GIT_MAX_DEPTH`]: not git's `--unshallow`, which takes every branch's
    /// whole history too.
    pub fn fetch_staged_whole(&self, remote: &str, cut: bool) -> Result<(Tips, Tips), StoreError> {
        self.fetch_staged_with(remote, None, cut)
    }

    fn fetch_staged_with(
        &self,
        remote: &str,
        only_writer: Option<&str>,
        unshallow: bool,
    ) -> Result<(Tips, Tips), StoreError> {
        let (chains, notes) = match only_writer {
            Some(w) => (
                format!("+{}:{}", chain_ref(w), staged_chain_ref(remote, w)),
                format!("+{}:{}", notes_ref(w), staged_notes_ref(remote, w)),
            ),
            None => (
                format!(
                    "+{CHAIN_PREFIX}*:refs/receipts-incoming/{}/*",
                    staging_name(remote)
                ),
                format!(
                    "+{NOTES_PREFIX}*:refs/notes/receipts-incoming/{}/*",
                    staging_name(remote)
                ),
            ),
        };
        // A ref deleted remotely must not be mistaken for a current one. For
        // every writer, `--prune` removes the staged chains the remote no longer
        // has and leaves the unchanged ones alone: deleting and recreating 1,000
        // loose ref files cost seconds of file-system work on every fetch. One
        // writer's staged refs, and the staged notes (fetched for one writer
        // only), are removed first.
        let chain_stage = format!("refs/receipts-incoming/{}/", staging_name(remote));
        let notes_stage = format!("refs/notes/receipts-incoming/{}/", staging_name(remote));
        let mut stale = Vec::new();
        let cleared: &[&String] = match only_writer {
            Some(_) => &[&chain_stage, &notes_stage],
            None => &[&notes_stage],
        };
        for prefix in cleared {
            for (name, _) in self.refs_under(prefix)? {
                if only_writer.is_none_or(|w| name.ends_with(&format!("/{w}"))) {
                    stale.push(name);
                }
            }
        }
        self.delete_refs(&stale)?;
        // --refmap= keeps git from also updating refs through the remote's configured
        // refspecs: nothing reaches refs/receipts/* before it is verified.
        // Every writer's notes are not fetched: they are a display, derived from the
        // chains, and each clone builds its own from the chains it verified (a
        // notes history is as long as its chain, so this halves what a fetch
        // carries). One writer's own notes come along for `push`'s lease.
        let mut args = vec![
            "fetch",
            "--no-tags",
            "--no-write-fetch-head",
            "--quiet",
            "--refmap=",
            remote,
            &chains,
        ];
        // every signer's checkpoints come with every writer's chains, staged:
        // the checkpoint module checks them before a local ref moves
        let checkpoints = format!(
            "+{}*:{}*",
            super::checkpoints::CHECKPOINT_PREFIX,
            staged_checkpoint_prefix(remote)
        );
        if only_writer.is_some() {
            args.push(&notes);
        } else {
            args.insert(1, "--prune");
            args.push(&checkpoints);
        }
        let whole = format!("--depth={GIT_MAX_DEPTH}");
        if unshallow {
            args.insert(1, &whole);
        }
        let mut out = self.run_git(&args)?;
        // git fails the whole fetch when one named ref is missing: a chain whose
        // notes the remote lacks (a squat, or notes deleted) still comes alone
        if only_writer.is_some()
            && !out.ok
            && out.stderr.contains(&format!(
                "couldn't find remote ref {}",
                notes_ref(only_writer.unwrap_or_default())
            ))
        {
            args.pop();
            out = self.run_git(&args)?;
        }
        // for one writer, a remote that does not have it yet is not an error
        let absent_writer =
            only_writer.is_some() && out.stderr.contains("couldn't find remote ref");
        if !out.ok && !absent_writer {
            return Err(StoreError::GitCommand {
                args: format!("fetch {remote} (receipt refs)"),
                stderr: out.stderr,
            });
        }
        let strip = |m: BTreeMap<String, ObjectId>, prefix: &str| {
            m.into_iter()
                .filter_map(|(k, v)| {
                    let w = k.strip_prefix(prefix)?.to_owned();
                    is_valid_writer_id(&w).then_some((w, v))
                })
                .collect::<BTreeMap<_, _>>()
        };
        Ok((
            strip(self.refs_under(&chain_stage)?, &chain_stage),
            strip(self.refs_under(&notes_stage)?, &notes_stage),
        ))
    }

    /// Delete the refs `names` in one transaction, in this process: a fetch with
    /// 1,000 writers clears their staging refs without 1,000 `git update-ref -d`.
    /// A ref that is already gone is not an error; any other failure is, naming
    /// the refs.
    pub fn delete_refs(&self, names: &[String]) -> Result<(), StoreError> {
        use gix::refs::transaction::{Change, RefEdit, RefLog};
        if names.is_empty() {
            return Ok(());
        }
        let what = || match names {
            [one] => format!("deleting {one}"),
            [first, ..] => format!("deleting {} refs ({first}, ...)", names.len()),
            [] => unreachable!("not empty"),
        };
        let mut edits = Vec::with_capacity(names.len());
        for name in names {
            let full: gix::refs::FullName = name
                .as_str()
                .try_into()
                .map_err(git_err(format!("deleting {name}: not a ref name")))?;
            edits.push(RefEdit {
                change: Change::Delete {
                    expected: gix::refs::transaction::PreviousValue::Any,
                    log: RefLog::AndReference,
                },
                name: full,
                deref: false,
            });
        }
        let mut time = gix::date::parse::TimeBuf::default();
        super::refs_may_have_moved();
        self.repo
            .edit_references_as(edits, Some(super::tool_signature().to_ref(&mut time)))
            .map_err(git_err(what()))?;
        Ok(())
    }

    /// Set each of `refs` to its value (`None`: delete it), whatever it was, in
    /// one transaction in this process (what one `git update-ref` each did, a
    /// process each in every hooked push); reflogs as `core.logAllRefUpdates`
    /// says, as git's. For refs that only remember (the staging refs), not
    /// for a chain or notes ref (those are [`Store::set_ref`]'s, compared and
    /// logged).
    pub fn put_refs(&self, refs: &[(String, Option<ObjectId>)]) -> Result<(), StoreError> {
        use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
        let mut edits = Vec::with_capacity(refs.len());
        for (name, value) in refs {
            let full: gix::refs::FullName = name
                .as_str()
                .try_into()
                .map_err(git_err(format!("writing {name}: not a ref name")))?;
            let change = match value {
                Some(id) => Change::Update {
                    log: LogChange {
                        mode: RefLog::AndReference,
                        force_create_reflog: false,
                        message: "git-receipt: pushed".into(),
                    },
                    expected: PreviousValue::Any,
                    new: gix::refs::Target::Object(*id),
                },
                None => Change::Delete {
                    expected: PreviousValue::Any,
                    log: RefLog::AndReference,
                },
            };
            edits.push(RefEdit {
                change,
                name: full,
                deref: false,
            });
        }
        let names: Vec<&str> = refs.iter().map(|(n, _)| n.as_str()).collect();
        self.edit_refs_mended(&names, edits)
            .map_err(git_err(format!("writing {}", names.join(", "))))?;
        Ok(())
    }

    /// Set a local ref to `new`, expecting it to be `old` (compare-and-swap).
    pub fn set_ref(
        &self,
        name: &str,
        old: Option<ObjectId>,
        new: ObjectId,
        why: &str,
    ) -> Result<(), StoreError> {
        // logged, as every chain and notes update is (see `concurrent_gc`)
        self.update_logged_ref(name, old, new, why)
            .map_err(git_err(format!("updating {name}")))?;
        Ok(())
    }

    /// [`Store::set_ref`] of many refs (name, expected, new, reflog message):
    /// in one transaction when all can move, else one at a time, each
    /// answering as alone (`Err` at the first that fails, those before it
    /// moved).
    pub fn set_refs(
        &self,
        moves: &[(&str, Option<ObjectId>, ObjectId, &str)],
    ) -> Result<(), StoreError> {
        // mutants: the bound is equivalent in answers (one ref moves the same
        // alone or in a transaction of one)
        if moves.len() > 1 && self.update_logged_refs_at_once(moves) {
            return Ok(());
        }
        for &(name, old, new, why) in moves {
            self.set_ref(name, old, new, why)?;
        }
        Ok(())
    }

    /// Re-append `entries` (oldest first) on top of `onto`, re-signed with `key`
    /// with new index and prev, and move the local chain from `old_tip` to the
    /// result. Used when one key wrote on two machines: the chain stays linear,
    /// and nothing is lost but what the caller leaves out of `entries` (what
    /// `onto` holds already); with no entries the local chain moves to `onto`.
    /// The caller rebuilds the notes ([`Store::reindex_notes`]); the receipt
    /// index re-indexes a chain that moved sideways on its next read.
    pub fn reappend(
        &self,
        writer: &str,
        key: &SigningKey,
        old_tip: ObjectId,
        onto: Option<ObjectId>,
        entries: &[ChainEntry],
    ) -> Result<ObjectId, StoreError> {
        // (index, id) of the entry the next one follows; none: the chain's root
        let mut below = match onto {
            Some(onto) => {
                let base = self.chain_entry(writer, onto)?;
                Some((
                    base.receipt.body().chain.index,
                    base.receipt.id().to_owned(),
                ))
            }
            None => None,
        };
        let mut parent = onto;
        let mut written = Vec::new();
        for e in entries {
            let mut body = e.receipt.body().clone();
            body.chain.index = below.as_ref().map_or(0, |(i, _)| i + 1);
            body.chain.prev = below.as_ref().map(|(_, id)| id.clone());
            let receipt = Receipt::sign(body, key).map_err(|source| StoreError::BadReceipt {
                writer: writer.to_owned(),
                commit: e.commit,
                source,
            })?;
            let old_tree = self
                .repo
                .find_commit(e.commit)
                .map_err(git_err("reading a chain commit"))?
                .tree()
                .map_err(git_err("reading a chain tree"))?;
            let log = old_tree.find_entry(LOG_FILE).map(|l| l.oid().to_owned());
            let (commit, objects) = self.write_chain_commit(
                &receipt,
                key.public(),
                log,
                parent,
                "(re-appended after the chain diverged)\n",
            )?;
            parent = Some(commit);
            written.extend(objects);
            below = Some((receipt.body().chain.index, receipt.id().to_owned()));
        }
        let Some(parent) = parent else {
            return Err(StoreError::CorruptChain {
                writer: writer.to_owned(),
                commit: old_tip,
                reason: "nothing to re-append".into(),
            });
        };
        let refname = chain_ref(writer);
        self.set_ref(
            &refname,
            Some(old_tip),
            parent,
            "git-receipt: re-append after divergence",
        )?;
        if let Err(e) = self.keep_written(&refname, &written) {
            let back = self.put_ref_back(
                &refname,
                parent,
                Some(old_tip),
                "git-receipt: put back (objects pruned)",
            );
            return Err(e.after_put_back(back));
        }
        Ok(parent)
    }

    /// Receipts on `tip` that are not on `base` (oldest first): walk back to the
    /// merge base.
    pub fn entries_since(
        &self,
        writer: &str,
        tip: ObjectId,
        base: Option<ObjectId>,
    ) -> Result<Vec<ChainEntry>, StoreError> {
        let mut out = Vec::new();
        self.walk_chain(writer, tip, |e| {
            if Some(e.commit) == base {
                return Ok(false);
            }
            out.push(e);
            Ok(true)
        })?;
        out.reverse();
        Ok(out)
    }

    /// The merge base of two commits, if any.
    pub fn merge_base_of(&self, a: ObjectId, b: ObjectId) -> Result<Option<ObjectId>, StoreError> {
        Ok(self
            .repo
            .merge_base(a, b)
            .map_err(git_err("computing a merge base"))?
            .map(|id| id.detach()))
    }
}

/// How long a `fetch` or `push` may take before it is given up on, unless
/// `receipt.networkTimeout` says otherwise.
pub const NETWORK_TIMEOUT_SECS: u64 = 300;

/// How long a transfer runs before [`Store::report_waiting`]'s sink hears of it.
pub const WAITING_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// A transfer that is waiting on its remote.
#[derive(Debug, Clone)]
pub struct Waiting {
    /// `git fetch origin`, `git push origin`: what waits, on which remote.
    pub what: String,
    /// How long it has run.
    pub elapsed: std::time::Duration,
    /// When it is given up on (`receipt.networkTimeout`); `None`: never.
    pub limit: Option<std::time::Duration>,
    /// It ended (finished, failed or was given up on): the last word.
    pub done: bool,
}

/// Who hears of a [`Waiting`] transfer.
pub type WaitingSink = std::sync::Arc<dyn Fn(&Waiting) + Send + Sync>;

/// `git <command> <remote>` of a transfer's arguments: the first one after the
/// command that is not an option.
fn waiting_label(args: &[&str]) -> String {
    let command = args.first().copied().unwrap_or("git");
    match args.iter().skip(1).find(|a| !a.starts_with('-')) {
        Some(remote) => format!("git {command} {remote}"),
        None => format!("git {command}"),
    }
}

/// The error of a `git` that could not be run (or waited for) with `args`.
fn could_not_run<'a>(args: &'a [&'a str]) -> impl Fn(std::io::Error) -> StoreError + Copy + 'a {
    move |e| StoreError::GitCommand {
        args: args.join(" "),
        stderr: format!("could not run git: {e}"),
    }
}

impl GitOutput {
    /// What a finished `git` said: whether it succeeded, its output, and its
    /// error output trimmed.
    fn of(out: &std::process::Output) -> GitOutput {
        GitOutput {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        }
    }
}

/// A network `git` command started by [`Store::start_network_git`].
struct StartedGit {
    child: std::process::Child,
    args: Vec<String>,
    limit: Option<std::time::Duration>,
    started: std::time::Instant,
}

/// The deepest `git fetch --depth` a fetch asks for: one below the largest git
/// takes (an `int`; beyond it git says "is not a positive number", or reads a
/// wrapped value), because at that largest (git's `INFINITE_DEPTH`, what
/// `--unshallow` sends) the server makes every shallow root of the clone
/// whole, so a CI clone's `--depth 1` branches would come with all their
/// history too. Deeper than any chain can be: a chain fetched at it comes
/// whole, and nothing else does.
pub const GIT_MAX_DEPTH: u64 = i32::MAX as u64 - 1;

/// How much of each chain a fetch of chains takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Every entry.
    Whole,
    /// The newest this many entries of each chain (`git fetch --depth`).
    Depth(u64),
    /// The entries whose commits are dated at or after this time, Unix ms
    /// (`git fetch --shallow-since`, to the second). A chain whose tip is
    /// older comes whole, as git does it; dates are the writer's, so a cut by
    /// date only saves fetching: whoever reads the chain checks what it holds.
    Since(u64),
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cut::Whole => f.write_str("whole"),
            Cut::Depth(d) => write!(f, "depth {d}"),
            Cut::Since(ms) => write!(
                f,
                "since {}",
                crate::receipt::format_timestamp(ms / 1000 * 1000)
            ),
        }
    }
}

/// A fetch of receipt chains started by [`Store::start_fetch_writers_staged`].
pub struct StartedFetch {
    git: StartedGit,
    /// What it fetches, in words (for its error).
    what: String,
}

/// Wait for `child` (its own process group) at most `limit` (`None`: as long as
/// it takes), collecting its output; `None` when it ran out of time (then it
/// and its group are killed). `tell(elapsed, done)` hears of it from
/// [`WAITING_AFTER`] on, about once a second, and once more when it ends.
fn wait_with_limit(
    mut child: std::process::Child,
    limit: Option<std::time::Duration>,
    tell: &dyn Fn(std::time::Duration, bool),
) -> std::io::Result<Option<std::process::Output>> {
    use std::io::Read as _;
    let mut out_pipe = child.stdout.take().expect("piped");
    let mut err_pipe = child.stderr.take().expect("piped");
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out_pipe.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err_pipe.read_to_end(&mut v);
        v
    });
    let start = std::time::Instant::now();
    let mut told: Option<std::time::Duration> = None;
    // woken the moment the child ends (a transfer's end was noticed up to half
    // its time late when this slept at a doubling backoff); without the waiter,
    // a look every step
    let mut ended = Some(ended_signal(&child));
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        let elapsed = start.elapsed();
        if elapsed >= WAITING_AFTER
            && told.is_none_or(|t| elapsed >= t + std::time::Duration::from_secs(1))
        {
            tell(elapsed, false);
            told = Some(elapsed);
        }
        if limit.is_some_and(|l| elapsed >= l) {
            if let Ok(pgid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill(2) on the process group the child leads
                unsafe {
                    libc::kill(-pgid, libc::SIGKILL);
                }
            }
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        // until it ends, the next word on it is due, or its time is up
        let due = told.map_or(WAITING_AFTER, |t| t + std::time::Duration::from_secs(1));
        let mut step = due.saturating_sub(elapsed);
        if let Some(l) = limit {
            step = step.min(l.saturating_sub(elapsed));
        }
        let step = step.max(std::time::Duration::from_millis(1));
        match ended.as_ref().map(|rx| rx.recv_timeout(step)) {
            Some(Err(std::sync::mpsc::RecvTimeoutError::Timeout)) => {}
            // it ended (the next look reaps it), or the waiter could not wait
            Some(_) => ended = None,
            None => std::thread::sleep(step.min(std::time::Duration::from_millis(20))),
        }
    };
    if told.is_some() {
        tell(start.elapsed(), true);
    }
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Ok(status.map(|status| std::process::Output {
        status,
        stdout,
        stderr,
    }))
}

/// A channel that is sent one message when `child` ends, by a thread that waits
/// for it with `waitid(WNOWAIT)`: that reaps nothing, so the child stays this
/// process's to reap (and to signal: its pid cannot be reused meanwhile).
pub(crate) fn ended_signal(child: &std::process::Child) -> std::sync::mpsc::Receiver<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id() as libc::id_t;
    std::thread::spawn(move || {
        loop {
            // SAFETY: waitid writes only into `info`, which lives on this
            // stack frame; WNOWAIT leaves the child unreaped
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let r =
                unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
            if r == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break;
            }
        }
        let _ = tx.send(());
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// git fed more than a pipe holds: one that stops reading because it
    /// failed answers with its own failure; one that says it succeeded
    /// without reading everything, or a feed that fails of itself, is an
    /// error that says so. None panics or waits for ever.
    #[test]
    fn a_git_that_stops_reading_what_it_is_fed_answers_without_a_hang() {
        let tmp = tempfile::tempdir().unwrap();
        crate::freshness::rules::git_in(tmp.path(), &["init", "-q"]);
        let store = Store::open(tmp.path()).unwrap();
        let much = vec![b'x'; 8 << 20];
        let refused = store
            .run_git_feeding(&["index-pack", "--stdin"], |stdin| {
                stdin.write_all(b"JUNK")?;
                stdin.write_all(&much)
            })
            .unwrap();
        assert!(!refused.ok);
        assert!(refused.stderr.contains("signature"), "{}", refused.stderr);
        let unread = store
            .run_git_feeding(&["rev-parse", "--git-dir"], |stdin| stdin.write_all(&much))
            .unwrap_err()
            .to_string();
        assert!(
            unread.contains("`git rev-parse --git-dir` failed: could not write its input"),
            "{unread}"
        );
        let own = store
            .run_git_feeding(&["hash-object", "--stdin"], |stdin| {
                stdin.write_all(b"half")?;
                Err(std::io::Error::other("the feed broke"))
            })
            .unwrap_err()
            .to_string();
        assert!(
            own.contains("could not write its input: the feed broke"),
            "{own}"
        );
        let fed = store
            .run_git_feeding(&["hash-object", "--stdin"], |stdin| stdin.write_all(&much))
            .unwrap();
        assert!(fed.ok && fed.stdout.trim().len() == 40, "{fed:?}");
    }

    /// A transfer waited for through the waiter thread is reported with its
    /// own status and output, whether it succeeds or fails.
    #[test]
    fn a_transfers_end_is_waited_for_with_its_status_and_output() {
        // How soon the end is noticed is measured by `cargo bench --bench
        // prepush`, not asserted here: a test holds answers, never times.
        for (script, ok) in [
            ("sleep 0.05; echo done", true),
            ("echo no >&2; exit 3", false),
        ] {
            let mut cmd = Command::new("sh");
            cmd.args(["-c", script])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            let child = cmd.spawn().unwrap();
            let out = wait_with_limit(child, Some(Duration::from_secs(10)), &|_, _| {})
                .unwrap()
                .expect("not timed out");
            assert_eq!(out.status.success(), ok, "{script}");
            if ok {
                assert_eq!(out.stdout, b"done\n");
            } else {
                assert_eq!(out.status.code(), Some(3));
                assert_eq!(out.stderr, b"no\n");
            }
        }
    }
}
