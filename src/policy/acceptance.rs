//! The acceptance body `gate --record` signs, built from a [`Judgement`] and its
//! verdict, so that what is signed is what was decided: the same states, the same
//! walk limit, the same trusted revision.

use gix::ObjectId;

use super::PolicyError;
use super::judge::{Baseline, Judgement, REVIEW_PREFIX, contract_at, effective_reviews};
use crate::decision::short7;
use crate::freshness::{CheckState, State};
use crate::receipt::{Acceptance, Criterion, CriterionKind, Status, Subject, Unresolved};
use crate::store::Store;
use crate::trust::{TrustSet, trust_root};

/// The most characters of a reason an unresolved criterion carries.
pub const MAX_REASON_CHARS: usize = 1000;

/// The commit whose rules an acceptance of `commit` under `baseline` cites as
/// `trusted`: the baseline's trusted revision, else the trust root, else the
/// commit itself.
pub fn trusted_commit(
    store: &Store,
    commit: ObjectId,
    baseline: &Baseline,
) -> Result<ObjectId, PolicyError> {
    Ok(match baseline {
        Baseline::At { commit, .. } => *commit,
        _ => trust_root(store, commit)?.commit.unwrap_or(commit),
    })
}

/// The subject an acceptance of `commit` is about: the commit and its whole tree.
pub fn subject(store: &Store, commit: ObjectId) -> Result<Subject, PolicyError> {
    let tree = store.commit_tree(commit)?.to_string();
    Ok(Subject {
        commit: commit.to_string(),
        tree: tree.clone(),
        inputs: tree,
        dirty: false,
        dependencies: Vec::new(),
    })
}

/// The acceptance of the judgement's revision over its `required` rows (those of
/// its verdict), counting receipts `trust` accepts, citing `trusted` and dated
/// `decided_at`: accepted exactly when every criterion is present. A review's
/// evidence is its approvals (or the receipt that made it fail or go stale),
/// decided again with the judgement's walk limit, so what is signed agrees with
/// what `verify` reads back; a check's evidence is the receipt that decided it.
pub fn acceptance(
    store: &Store,
    judgement: &Judgement,
    required: &[&CheckState],
    trust: &TrustSet,
    trusted: ObjectId,
    decided_at: String,
) -> Result<Acceptance, PolicyError> {
    let commit = judgement.commit;
    let tree = store.commit_tree(commit)?;
    let here = contract_at(store, commit, &judgement.rev)?;
    let trusted_contract = contract_at(store, trusted, "the trusted revision")?;
    let reviews = effective_reviews(&here, Some(&trusted_contract));
    let mut criteria = Vec::new();
    for s in required {
        let (kind, name, inputs, mut evidence) = match s.name.strip_prefix(REVIEW_PREFIX) {
            Some(name) => {
                let def = reviews
                    .iter()
                    .find(|r| r.name == name)
                    .ok_or_else(|| PolicyError::UndeclaredReview(name.to_owned()))?;
                let label = |fp: &str| fp.to_owned();
                let r = crate::decision::review_state(
                    store,
                    trust,
                    commit,
                    tree,
                    def,
                    judgement.walk_limit,
                    &label,
                )?;
                let evidence: Vec<String> = match r.state {
                    State::Present => r.approvals.into_iter().map(|(_, id)| id).collect(),
                    State::Missing => Vec::new(),
                    _ => r
                        .decider
                        .map(|d| d.receipt.id().to_owned())
                        .into_iter()
                        .collect(),
                };
                (CriterionKind::Review, name.to_owned(), r.inputs, evidence)
            }
            None => {
                let paths = here
                    .check(&s.name)
                    .map(|c| c.paths.clone())
                    .unwrap_or_default();
                let evidence = match (s.state, &s.decider) {
                    (State::Missing, _) | (_, None) => Vec::new(),
                    (_, Some(d)) => vec![d.receipt.id().to_owned()],
                };
                (
                    CriterionKind::Check,
                    s.name.clone(),
                    store.inputs_tree(tree, &paths, false)?,
                    evidence,
                )
            }
        };
        evidence.sort();
        evidence.dedup();
        criteria.push((
            Criterion {
                kind,
                name,
                state: s.state,
                inputs: inputs.to_string(),
                evidence,
            },
            s.reason.clone(),
        ));
    }
    Ok(body(criteria, trusted, decided_at))
}

/// The acceptance over `criteria` (each with its reason in words): checks before
/// reviews, by name, each once; rejected with the unresolved ones when any is not
/// present.
pub fn body(
    mut criteria: Vec<(Criterion, String)>,
    trusted: ObjectId,
    decided_at: String,
) -> Acceptance {
    criteria.sort_by(|(a, _), (b, _)| {
        (a.kind == CriterionKind::Review, &a.name).cmp(&(b.kind == CriterionKind::Review, &b.name))
    });
    criteria.dedup_by(|(a, _), (b, _)| a.kind == b.kind && a.name == b.name);
    let unresolved: Vec<Unresolved> = criteria
        .iter()
        .filter(|(c, _)| c.state != State::Present)
        .map(|(c, reason)| Unresolved {
            kind: c.kind,
            name: c.name.clone(),
            state: c.state,
            reason: reason.chars().take(MAX_REASON_CHARS).collect(),
        })
        .collect();
    Acceptance {
        status: if unresolved.is_empty() {
            Status::Accepted
        } else {
            Status::Rejected
        },
        trusted: trusted.to_string(),
        decided_at,
        criteria: criteria.into_iter().map(|(c, _)| c).collect(),
        unresolved,
    }
}

/// How many commits back [`accepted_by`] looks for the nearest accepted ancestor
/// when the revision itself is not accepted (to say why, never to pass).
pub const NEAREST_ACCEPTED_WALK: usize = 200;

/// Why a signer's acceptance of a tree is not there, typed; `Display` gives the
/// words.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "code", rename_all = "kebab-case")]
pub enum NotAccepted {
    /// The newest acceptance of the tree by the signer rejects it.
    Rejected {
        /// The tree.
        tree: String,
        /// The rejecting acceptance's id.
        receipt: String,
        /// What it left unresolved: (name, state).
        unresolved: Vec<(String, String)>,
    },
    /// No acceptance of the tree; an ancestor's (whose tree differs) is nearest.
    NearestDiffers {
        /// The tree.
        tree: String,
        /// The signer as named.
        signer: String,
        /// The revision asked about.
        commit: String,
        /// The accepted ancestor.
        nearest: String,
        /// How many commits back it is.
        distance: usize,
        /// Its acceptance's id.
        receipt: String,
    },
    /// The newest acceptance of the tree by the signer accepts it, but does not
    /// count in this repository: its `trusted` commit is not on gated history
    /// here, or its criteria leave out what is required there.
    DoesNotCountHere {
        /// The tree.
        tree: String,
        /// The acceptance's id.
        receipt: String,
        /// Why.
        why: crate::decision::NotHere,
    },
    /// No acceptance of the tree nor of any near ancestor.
    Absent {
        /// The tree.
        tree: String,
        /// The signer as named.
        signer: String,
    },
}

/// The first 19 characters of a receipt id (`sha256:` and 12 digits), never
/// splitting a character.
fn short_id(id: &str) -> &str {
    match id.char_indices().nth(19) {
        Some((end, _)) => &id[..end],
        None => id,
    }
}

impl std::fmt::Display for NotAccepted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotAccepted::Rejected {
                tree,
                receipt,
                unresolved,
            } => write!(
                f,
                "its newest acceptance of tree {} ({}) is rejected: {}",
                short7(tree),
                short_id(receipt),
                unresolved
                    .iter()
                    .map(|(name, state)| format!("{name} {state}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            NotAccepted::NearestDiffers {
                tree,
                signer,
                commit,
                nearest,
                distance,
                receipt,
            } => write!(
                f,
                "no acceptance of tree {} by {signer}; the nearest is of {} ({distance} commit{} back, {}), whose tree differs: accept this revision with `git receipt gate {} --record`",
                short7(tree),
                short7(nearest),
                if *distance == 1 { "" } else { "s" },
                short_id(receipt),
                short7(commit),
            ),
            NotAccepted::DoesNotCountHere { tree, receipt, why } => write!(
                f,
                "its newest acceptance of tree {} ({}) does not count here: {why}",
                short7(tree),
                short_id(receipt),
            ),
            NotAccepted::Absent { tree, signer } => write!(
                f,
                "no acceptance of tree {} by {signer} (fetch receipts with `git receipt fetch`?)",
                short7(tree)
            ),
        }
    }
}

/// Whether `signer` (a `[signer]` name or a key fingerprint in `trust`) accepted
/// exactly `tree` (revision `commit`): `Ok(())`, or why not. Acceptances ignored
/// for being dated in the future go to `notices`, in words (unescaped). An error
/// when no trusted key goes by `signer` ([`PolicyError::UnknownSigner`]).
pub fn accepted_by(
    store: &Store,
    trust: &TrustSet,
    commit: ObjectId,
    tree: ObjectId,
    signer: &str,
    notices: &mut Vec<String>,
) -> Result<Result<(), NotAccepted>, PolicyError> {
    use crate::decision::{newest_acceptance, signer_keys};
    let keys = signer_keys(trust, signer);
    if keys.is_empty() {
        return Err(PolicyError::UnknownSigner(signer.to_owned()));
    }
    let mut index = store.receipt_index()?;
    if let Some(found) = newest_acceptance(store, &mut index, trust, tree, &keys, notices)? {
        let b = found.receipt.body();
        let Some(a) = b.acceptance.as_ref() else {
            return Err(PolicyError::NotAnAcceptance(found.receipt.id().to_owned()));
        };
        return Ok(match a.status {
            Status::Accepted => match crate::decision::counts_here(store, a)? {
                Ok(()) => Ok(()),
                Err(why) => Err(NotAccepted::DoesNotCountHere {
                    tree: tree.to_string(),
                    receipt: found.receipt.id().to_owned(),
                    why,
                }),
            },
            Status::Rejected => Err(NotAccepted::Rejected {
                tree: tree.to_string(),
                receipt: found.receipt.id().to_owned(),
                unresolved: a
                    .unresolved
                    .iter()
                    .map(|u| (u.name.clone(), u.state.as_str().to_owned()))
                    .collect(),
            }),
        });
    }
    // Say why: the nearest ancestor it accepted, whose tree differs.
    let ancestors = store.ancestors_breadth_first(commit, NEAREST_ACCEPTED_WALK)?;
    for (n, id) in ancestors.into_iter().enumerate().skip(1) {
        let Ok(t) = store.commit_tree(id) else {
            continue;
        };
        if let Some(found) = newest_acceptance(store, &mut index, trust, t, &keys, notices)? {
            return Ok(Err(NotAccepted::NearestDiffers {
                tree: tree.to_string(),
                signer: signer.to_owned(),
                commit: commit.to_string(),
                nearest: id.to_string(),
                distance: n,
                receipt: found.receipt.id().to_owned(),
            }));
        }
    }
    Ok(Err(NotAccepted::Absent {
        tree: tree.to_string(),
        signer: signer.to_owned(),
    }))
}
