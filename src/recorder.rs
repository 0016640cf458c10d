//! Turning an observation into a stored receipt.
//!
//! Shared by `run` (we observed the command) and `record` (the result came from
//! elsewhere): resolve what was checked, build the body for whatever chain
//! position the store hands us, sign, append.

use std::collections::BTreeMap;

use crate::receipt::{
    Body, Chain, Check, Kind, Mode, Outcome, Runner, SCHEMA_V2, definition_digest, format_timestamp,
};
use crate::runner::{Observation, tail_text};
use crate::sign::SigningKey;
use crate::store::chain::Appended;
use crate::store::{Store, StoreError};

/// A check as it will be recorded.
#[derive(Debug, Clone)]
pub struct CheckSpec {
    /// Its name.
    pub name: String,
    /// The argv that runs it.
    pub argv: Vec<String>,
    /// Declared input paths (normalized, minimal); empty for the whole tree.
    pub paths: Vec<String>,
    /// Allow-listed environment variable names.
    pub env: Vec<String>,
}

impl CheckSpec {
    /// The definition digest.
    pub fn definition(&self) -> String {
        definition_digest(&self.argv, &self.paths, &self.env)
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
#[derive(Debug, Clone, Copy)]
pub struct SubjectIds {
    /// HEAD commit.
    pub commit: gix::ObjectId,
    /// Checked tree.
    pub tree: gix::ObjectId,
    /// Inputs tree.
    pub inputs: gix::ObjectId,
    /// Work tree differs from HEAD.
    pub dirty: bool,
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
    })
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
    let log = if obs.log.is_empty() {
        None
    } else {
        Some(
            store
                .repo()
                .write_blob(&obs.log)
                .map_err(crate::store::git_err("writing the output log"))?
                .detach(),
        )
    };
    let env = check.env_values();
    let definition = check.definition();
    let runner = Runner {
        tool: format!("git-receipt {}", env!("CARGO_PKG_VERSION")),
        host: crate::host_name(),
        os: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
    };
    let outcome = Outcome {
        mode,
        exit_code: obs.exit_code,
        passed: obs.exit_code == 0 && obs.detail.is_empty(),
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
    };
    store.append(writer, key, log, |index, prev| Body {
        schema: SCHEMA_V2.into(),
        kind: Kind::Check,
        chain: Chain {
            writer: writer.to_owned(),
            index,
            prev,
        },
        subject: crate::receipt::Subject {
            commit: subject.commit.to_string(),
            tree: subject.tree.to_string(),
            inputs: subject.inputs.to_string(),
            dirty: subject.dirty,
        },
        check: Check {
            name: check.name.clone(),
            argv: check.argv.clone(),
            definition: definition.clone(),
            paths: check.paths.clone(),
            env: env.clone(),
        },
        result: outcome.clone(),
        runner: runner.clone(),
        acceptance: None,
        review: None,
        supersedes: None,
    })
}
