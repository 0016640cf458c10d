//! git-receipt: signed, hash-chained check receipts stored in git.
//!
//! The model in one page:
//!
//! - A **check** is a named command declared in `.gitreceipts` ([`contract`]).
//! - Running it produces a **receipt** ([`receipt`]): an RFC 8785 canonical JSON
//!   body ([`canon`]) signed with Ed25519 as an OpenSSH SSHSIG ([`sign`]).
//! - Receipts form one append-only **chain** per writer, stored as commits under
//!   `refs/receipts/<writer>` and indexed by git notes ([`store`]).
#![deny(missing_docs)]

pub mod canon;
pub mod sign;
