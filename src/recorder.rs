//! Turning an observation into a stored receipt.
//!
//! Shared by `run` (we observed the command) and `record` (the result came from
//! elsewhere): resolve what was checked, build the body for whatever chain
//! position the store hands us, sign, append.

use std::collections::BTreeMap;

use crate::contract::{AssertDef, DependencyDef};
use crate::idempotency::{Holder, content_digest, find_key};
use crate::receipt::{
    AssertionResult, Body, Chain, Check, DependencyState, Expectation, Kind, Mode, Outcome, Runner,
    SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, definition_digest, format_timestamp,
};
use crate::runner::{Observation, tail_text};
use crate::sign::SigningKey;
use crate::store::chain::Appended;
use crate::store::{Store, StoreError};

/// A check as it will be recorded.
#[derive(Debug, Clone, Default)]
pub struct CheckSpec {
    /// Its name.
    pub name: String,
    /// The argv that runs it.
    pub argv: Vec<String>,
    /// Declared input paths (normalized, minimal); empty for the whole tree.
    pub paths: Vec<String>,
    /// Allow-listed environment variable names.
    pub env: Vec<String>,
    /// The environment assertions it declares, in its order.
    pub assertions: Vec<AssertDef>,
    /// The sibling repositories it declares, sorted by name.
    pub dependencies: Vec<DependencyDef>,
    /// Where its runner writes per-test results, if it says.
    pub results: Option<crate::results::ResultsDecl>,
    /// The metrics it reports (`metric =`), in declared order.
    pub metrics: Vec<crate::contract::MetricDecl>,
    /// The globs of the files it produces (`artifact =`), in declared order.
    pub artifacts: Vec<String>,
}

impl CheckSpec {
    /// The definition digest. A check without assertions and dependencies has the
    /// digest of v1 and v2 (so its receipts stay fresh); one with them adds their
    /// declarations as written, before substitutions: see `docs/format.md`.
    pub fn definition(&self) -> String {
        if self.assertions.is_empty() && self.dependencies.is_empty() {
            return definition_digest(&self.argv, &self.paths, &self.env);
        }
        let assertions: Vec<_> = self
            .assertions
            .iter()
            .map(|a| {
                serde_json::json!({
                    "name": a.name,
                    "run": a.run,
                    "expect": match &a.expect {
                        None => serde_json::Value::Null,
                        Some(Expectation::Glob(g)) => serde_json::json!({ "glob": g }),
                        Some(Expectation::Regex(r)) => serde_json::json!({ "regex": r }),
                    },
                })
            })
            .collect();
        let dependencies: Vec<_> = self
            .dependencies
            .iter()
            .map(|d| {
                serde_json::json!({
                    "name": d.name, "path": d.path, "ref": d.rev, "paths": d.paths,
                })
            })
            .collect();
        crate::receipt::digest_of(&serde_json::json!({
            "argv": self.argv,
            "env": self.env,
            "paths": self.paths,
            "assertions": assertions,
            "dependencies": dependencies,
        }))
    }

    /// The allow-listed environment values present now.
    pub fn env_values(&self) -> BTreeMap<String, String> {
        self.env
            .iter()
            .filter_map(|name| std::env::var(name).ok().map(|v| (name.clone(), v)))
            .collect()
    }
}

/// The subject of a receipt, computed before the check runs.
#[derive(Debug, Clone)]
pub struct SubjectIds {
    /// HEAD commit.
    pub commit: gix::ObjectId,
    /// Checked tree.
    pub tree: gix::ObjectId,
    /// Inputs tree.
    pub inputs: gix::ObjectId,
    /// Work tree differs from HEAD.
    pub dirty: bool,
    /// Paths git's index marks hid from `git status` whose real content (or
    /// absence) the tree records ([`crate::store::worktree::Unmarked`]).
    pub unmarked: Vec<crate::store::worktree::Unmarked>,
}

/// Compute the subject for `check` from HEAD and the work tree.
pub fn subject_now(store: &Store, check: &CheckSpec) -> Result<SubjectIds, StoreError> {
    let (commit, head_tree) = store.head()?;
    let subject = store.subject_tree(head_tree)?;
    let inputs = store.inputs_tree(subject.tree, &check.paths, true)?;
    Ok(SubjectIds {
        commit,
        tree: subject.tree,
        inputs,
        dirty: subject.dirty,
        unmarked: subject.unmarked,
    })
}

/// The subject of `check` in a work tree known to hold exactly `commit`, as a
/// temporary checkout just moved there does (`checkout --force`, `clean
/// -ffdx`): [`subject_now`]'s answer for it, with no work tree read (a `git
/// status` of a large repository costs a range run a process and its scan per
/// commit).
pub fn subject_of_commit(
    store: &Store,
    check: &CheckSpec,
    commit: gix::ObjectId,
) -> Result<SubjectIds, StoreError> {
    let tree = store.commit_tree(commit)?;
    let inputs = store.inputs_tree(tree, &check.paths, true)?;
    Ok(SubjectIds {
        commit,
        tree,
        inputs,
        dirty: false,
        unmarked: Vec::new(),
    })
}

/// What was observed of the check's surroundings (format v3): its assertions'
/// results and its dependencies' states. Empty for a check that declares none.
#[derive(Debug, Clone, Default)]
pub struct Surroundings {
    /// The assertions that ran, in order.
    pub assertions: Vec<AssertionResult>,
    /// The dependencies, sorted by name.
    pub dependencies: Vec<DependencyState>,
    /// The per-test results read after the run (format v4), with the list's
    /// canonical bytes when it is kept beside the log rather than inline.
    pub tests: Option<(crate::receipt::Tests, Option<Vec<u8>>)>,
    /// The metrics read after the run (format v4), in any order.
    pub metrics: Vec<crate::receipt::Metric>,
    /// The files the check's `artifact =` globs matched after the run (format
    /// v5), sorted by path; `None` when it declares none.
    pub artifacts: Option<Vec<crate::receipt::Artifact>>,
    /// The idempotency key of a recorded result (format v5).
    pub idempotency_key: Option<String>,
}

/// Store a receipt for an observation of `check` on `subject`.
pub fn store_receipt(
    store: &Store,
    writer: &str,
    key: &SigningKey,
    check: &CheckSpec,
    subject: SubjectIds,
    obs: &Observation,
    mode: Mode,
) -> Result<Appended, StoreError> {
    store_receipt_in(
        store,
        writer,
        key,
        check,
        subject,
        obs,
        mode,
        &Surroundings::default(),
    )
}

/// [`store_receipt`] with what was observed of the check's surroundings: a
/// receipt with any is written as v3, one without as v2.
#[allow(clippy::too_many_arguments)]
pub fn store_receipt_in(
    store: &Store,
    writer: &str,
    key: &SigningKey,
    check: &CheckSpec,
    subject: SubjectIds,
    obs: &Observation,
    mode: Mode,
    around: &Surroundings,
) -> Result<Appended, StoreError> {
    // Before the log is written: a clock that may not sign leaves nothing behind.
    store.check_signing_clock(writer)?;
    let draft = draft(writer, check, &subject, obs, mode, around)?;
    store_draft(store, writer, key, draft)
}

/// What [`store_receipt_once`] did.
#[derive(Debug)]
pub enum Recorded {
    /// The receipt was written: no idempotency key, or one the chain did not hold.
    Written(Box<Appended>),
    /// Nothing was written: the chain holds the key for this very result
    /// (the same [`content_digest`]).
    AlreadyRecorded(Holder),
    /// Nothing was written: the chain holds the key for another result.
    KeyHeldForOther(Holder),
}

/// [`store_receipt_in`] for a result recorded under an idempotency key
/// (`around.idempotency_key`, format v5; `docs/format.md` section 15): when
/// `writer`'s chain already holds the key, nothing is written, and what holds it
/// is returned, for this same result or for another. Costs, besides the write,
/// [`find_key`]'s walk of the chain. Two processes of one clone recording one key
/// at the same instant may both write (the look and the append are not one
/// step); `verify` then reports the chain as holding the result twice.
#[allow(clippy::too_many_arguments)]
pub fn store_receipt_once(
    store: &Store,
    writer: &str,
    key: &SigningKey,
    check: &CheckSpec,
    subject: SubjectIds,
    obs: &Observation,
    mode: Mode,
    around: &Surroundings,
) -> Result<Recorded, StoreError> {
    store.check_signing_clock(writer)?;
    let draft = draft(writer, check, &subject, obs, mode, around)?;
    if let (Some(k), Some(tip)) = (&around.idempotency_key, store.chain_tip(writer)?)
        && let Some(holder) = find_key(store, writer, tip, k)?
    {
        let content = content_digest(&draft.body).map_err(|e| StoreError::BadReceipt {
            writer: writer.to_owned(),
            commit: gix::ObjectId::null(store.object_hash()),
            source: e.into(),
        })?;
        return Ok(if holder.content == content {
            Recorded::AlreadyRecorded(holder)
        } else {
            Recorded::KeyHeldForOther(holder)
        });
    }
    Ok(Recorded::Written(Box::new(store_draft(
        store, writer, key, draft,
    )?)))
}

/// A check receipt's body for any place in its chain (`chain` is set when it is
/// appended), and the blobs kept beside it (the log, a large test list), whose
/// ids it names: computed, not yet written.
struct Draft<'a> {
    body: Body,
    kept: Vec<(gix::ObjectId, &'a [u8])>,
}

/// The id `bytes` get as a blob, without writing them.
fn blob_id(kind: gix::hash::Kind, bytes: &[u8]) -> Result<gix::ObjectId, StoreError> {
    gix::objs::compute_hash(kind, gix::objs::Kind::Blob, bytes).map_err(|e| StoreError::Git {
        what: "hashing a blob".into(),
        source: Box::new(e),
    })
}

/// The receipt of `obs` as it will be written, writing nothing.
fn draft<'a>(
    writer: &str,
    check: &CheckSpec,
    subject: &SubjectIds,
    obs: &'a Observation,
    mode: Mode,
    around: &'a Surroundings,
) -> Result<Draft<'a>, StoreError> {
    let log = if obs.log.is_empty() {
        None
    } else {
        Some(blob_id(subject.tree.kind(), &obs.log)?)
    };
    // a large test list is a blob beside the log
    let mut tests = around.tests.as_ref().map(|(t, _)| t.clone());
    let list_blob = match &around.tests {
        Some((_, Some(bytes))) => Some((blob_id(subject.tree.kind(), bytes)?, bytes.as_slice())),
        _ => None,
    };
    if let (Some(t), Some((blob, _))) = (tests.as_mut(), list_blob) {
        t.list_blob = Some(blob.to_string());
    }
    let runner = Runner {
        tool: format!("git-receipt {}", env!("CARGO_PKG_VERSION")),
        host: crate::host_name(),
        os: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
    };
    let outcome = Outcome {
        mode,
        exit_code: obs.exit_code,
        passed: obs.exit_code == 0
            && obs.detail.is_empty()
            && around.assertions.iter().all(|a| a.passed),
        started_at: format_timestamp(obs.started_at_ms),
        duration_ms: obs.duration_ms,
        stdout_tail: tail_text(&obs.stdout_tail),
        stderr_tail: tail_text(&obs.stderr_tail),
        log: log.map(|l| l.to_string()),
        output_bytes: obs.output_bytes,
        log_truncated: obs.log_truncated,
        log_bytes: Some(if log.is_some() {
            obs.log.len() as u64
        } else {
            0
        }),
        log_sha256: Some(log.map(|_| crate::store::logs::log_digest(&obs.log))),
        detail: obs.detail.clone(),
        assertions: around.assertions.clone(),
        tests: tests.clone(),
        metrics: {
            let mut m = around.metrics.clone();
            m.sort_by(|a, b| a.name.cmp(&b.name));
            m
        },
        artifacts: around.artifacts.clone(),
        idempotency_key: around.idempotency_key.clone(),
    };
    let schema = if around.artifacts.is_some() || around.idempotency_key.is_some() {
        SCHEMA_V5
    } else if tests.is_some() || !around.metrics.is_empty() {
        SCHEMA_V4
    } else if around.assertions.is_empty() && around.dependencies.is_empty() {
        SCHEMA_V2
    } else {
        SCHEMA_V3
    };
    let kept = log
        .map(|l| (l, obs.log.as_slice()))
        .into_iter()
        .chain(list_blob)
        .collect();
    let body = Body {
        schema: schema.into(),
        kind: Kind::Check,
        chain: Chain {
            writer: writer.to_owned(),
            index: 0,
            prev: None,
        },
        subject: crate::receipt::Subject {
            commit: subject.commit.to_string(),
            tree: subject.tree.to_string(),
            inputs: subject.inputs.to_string(),
            dirty: subject.dirty,
            dependencies: around.dependencies.clone(),
        },
        check: Check {
            name: check.name.clone(),
            argv: check.argv.clone(),
            definition: check.definition(),
            paths: check.paths.clone(),
            env: check.env_values(),
        },
        result: outcome,
        runner,
        acceptance: None,
        review: None,
        supersedes: None,
    };
    Ok(Draft { body, kept })
}

/// Write `draft`'s blobs, then append it to `writer`'s chain at whatever place
/// the chain has for it.
fn store_draft(
    store: &Store,
    writer: &str,
    key: &SigningKey,
    draft: Draft<'_>,
) -> Result<Appended, StoreError> {
    for (id, bytes) in &draft.kept {
        let written = store.write_blob(bytes)?;
        debug_assert_eq!(written, *id, "a blob's id is the hash of its bytes");
    }
    store.append(writer, key, &draft.kept, |index, prev| {
        let mut body = draft.body.clone();
        body.chain.index = index;
        body.chain.prev = prev;
        body
    })
}
