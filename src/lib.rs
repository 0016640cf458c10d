//! git-receipt: signed, hash-chained check receipts stored in git.
//!
//! The model in one page:
//!
//! - A **check** is a named command declared in `.gitreceipts` ([`contract`]), or an
//!   ad hoc argv given on the command line.
//! - Running it ([`runner`]) produces an observation; [`recorder`] turns that into a
//!   **receipt** ([`receipt`]): an RFC 8785 canonical JSON body ([`canon`]) signed
//!   with Ed25519 as an OpenSSH SSHSIG ([`sign`]) by the user's key ([`keyfile`]),
//!   held in this process or by ssh-agent ([`agent`]).
//! - Receipts form one append-only **chain** per writer (one key plus a chain name),
//!   stored as commits under `refs/receipts/<writer>` and indexed by git notes on
//!   the subject commit and the inputs tree ([`store`]).
//! - Readers accept only receipts signed by keys in a [`trust`] set.
//! - **Decisions** built on receipts are receipts too ([`decision`]): a signed gate
//!   acceptance citing its evidence, and reviewers' approvals that go stale.
//! - [`intoto`] turns verified receipts into in-toto attestations for other tools.
#![deny(missing_docs)]

pub mod agent;
pub mod artifacts;
pub mod canon;
pub mod checkpoint;
pub mod clock;
pub mod contract;
pub mod decision;
pub mod environment;
pub mod freshness;
pub mod hooks;
pub mod idempotency;
pub mod intoto;
pub mod keyfile;
pub mod metrics;
pub mod notice;
pub mod parity;
pub mod policy;
pub mod quarantine;
pub mod receipt;
pub mod recorder;
pub mod results;
pub mod retention;
pub mod runner;
pub mod sign;
pub mod store;
pub mod sync;
pub mod text;
pub mod trust;
pub mod user_dir;
pub mod verify;
mod wire;

/// This machine's host name, or `unknown`.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}
