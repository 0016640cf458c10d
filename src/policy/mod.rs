//! The one judge: whose keys count, which checks and reviews a revision is held
//! to, what the verdict is, what an acceptance signs, and what the server refuses.
//!
//! Every command that decides (`status`, `gate`, `show`, `report`, both hooks, MCP,
//! `export`, `push`, `doctor`, `review`, `run --stale`, `run A..B`) asks this module, so that a
//! rule is written once and tested once, here, without the binary:
//!
//! - [`trust`]: the trust set of a reader (its own key, `receipt.trustedKey`, the
//!   signers at the trust root, held to the default branch's revocations), of a
//!   verifier (the signers at a revision it names) and of the server (the signers
//!   at the protected branch's old tip, and `receipt.trustedKey`);
//! - [`contract`]: the `.gitreceipts` at a commit;
//! - [`mod@judge`]: a [`Baseline`] (the revision's own `.gitreceipts`, or also the
//!   requirements at a trusted revision) and [`judge()`], which returns a
//!   [`Judgement`]: every check's and review's state, what cannot be decided,
//!   and the policy's own findings as typed [`Reason`]s;
//! - [`verdict`]: [`Judgement::verdict`], the one rule "which required checks are
//!   not present, which cannot be decided" that `gate` and both hooks apply;
//! - [`acceptance`]: the acceptance body `gate --record` signs, built from a
//!   judgement;
//! - [`server`]: the pre-receive hook's ref rules (receipt chains, log refs,
//!   protected branches), as typed [`server::Refusal`]s;
//! - [`flaky`]: which tests trusted receipts of the same inputs disagree on;
//! - [`rerun`]: whether a range run (`run A..B`) still runs a check at a commit;
//! - [`push`]: which pushed refs the pre-push hook gates, and which chains a push
//!   carries, as data.
//!
//! Nothing here prints or carries a `hint:`: the CLI renders words, attaches
//! hints and picks exit codes.

pub mod acceptance;
pub mod contract;
pub mod flaky;
pub mod judge;
pub mod push;
pub mod rerun;
pub mod server;
pub mod trust;
pub mod verdict;

pub use judge::{Baseline, Judgement, Options, REVIEW_PREFIX, Reason, Revision, judge};
pub use trust::Trust;
pub use verdict::{Require, Verdict};

/// Why the judge could not decide.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// Reading the repository failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// A `.gitreceipts` does not parse.
    #[error(transparent)]
    Contract(#[from] crate::contract::ContractError),
    /// A state could not be computed.
    #[error(transparent)]
    Freshness(#[from] crate::freshness::FreshnessError),
    /// No trust root could be chosen.
    #[error(transparent)]
    TrustRoot(#[from] crate::trust::TrustRootError),
    /// A `receipt.trustedKey` value is not a usable public key.
    #[error("git config receipt.trustedKey = {line:?}")]
    TrustedKey {
        /// The configured value.
        line: String,
        /// Why it is not a key.
        #[source]
        source: crate::sign::KeyError,
    },
    /// `receipt.walkLimit` is zero or negative.
    #[error("receipt.walkLimit = {0} must be a positive number of commits")]
    WalkLimit(i64),
    /// A verifier named a revision without a `.gitreceipts`: it names no signers.
    #[error("there is no .gitreceipts at {rev}, so it names no signers to trust")]
    NoSigners {
        /// The revision as named.
        rev: String,
    },
    /// No trusted key goes by the signer an acceptance is asked of.
    #[error("--accepted-by {0}: no trusted key goes by that name")]
    UnknownSigner(String),
    /// A found acceptance receipt holds no acceptance (the index named a
    /// receipt of another kind).
    #[error("receipt {0} is not an acceptance")]
    NotAnAcceptance(String),
    /// A review a verdict requires is not declared (the judgement it came from
    /// was made over another contract).
    #[error("review {0:?} is not declared")]
    UndeclaredReview(String),
}

#[cfg(test)]
mod observer_tests;
#[cfg(test)]
mod results_tests;
#[cfg(test)]
mod tests;
