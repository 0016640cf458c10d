//! Which checks and reviews a revision is held to, and their states: [`judge()`].
//!
//! A revision is held to its own `.gitreceipts` and, when judged against a
//! revision already trusted ([`Baseline`]), to the requirements there too, so a
//! branch cannot loosen what it is judged by by editing the file:
//!
//! - a check required there stays required here; one no longer declared here
//!   reads missing ([`Reason::RequiredButUndeclared`]);
//! - a check that accepts only observed runs (`accept = run`), or only runs by
//!   named observers (`accept = run-by:NAMES`), there does so here
//!   ([`tighten_accept`]; [`Reason::AcceptTightened`]);
//! - each review is the stricter of the two definitions ([`effective_reviews`]);
//! - what a branch changed of a required check or a review is told
//!   ([`Reason::CheckRedefined`], [`Reason::ReviewRedefined`]).

use std::sync::Arc;

use gix::ObjectId;
use serde::Serialize;

use super::PolicyError;
pub use super::contract::contract_at;
use super::trust::Trust;
pub use super::trust::trust_root_label;
use crate::contract::{Accept, Contract, ReviewDef};
use crate::freshness::{self, CheckState, Decider, State, Undecided};
use crate::store::Store;
use crate::trust::{TrustOrigin, TrustSet, trust_root};

/// The prefix that tells a review's row from a check's in a [`Judgement`]:
/// `review:` and the review's name (no check name holds a `:`).
pub const REVIEW_PREFIX: &str = "review:";

/// Which requirements a revision must meet besides those in its own `.gitreceipts`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Baseline {
    /// Only its own (`status`, plain `gate`, the pre-push hook).
    Own,
    /// Also those at the reader's trust root: the newest commit on the default
    /// branch's first-parent history that the revision descends from
    /// (`gate --verify`).
    TrustRoot,
    /// Also those at this trusted revision (`gate --trust REV`; the pre-receive
    /// hook, with the protected branch's old tip or, for a branch the push
    /// creates, the tip of the server's default protected branch); `label`
    /// names it in reasons.
    At {
        /// The trusted revision.
        commit: ObjectId,
        /// How it is named in reasons.
        label: String,
    },
}

/// What the judge looks at: a commit, or a tree on top of it (the work tree, as
/// `git receipt run` would test it), with the contract to use.
#[derive(Clone, Debug)]
pub struct Revision<'a> {
    /// How the revision is named (`HEAD`, `the work tree`).
    pub label: &'a str,
    /// The commit (whose history the stale walk follows).
    pub commit: ObjectId,
    /// The tree judged, when it is not the commit's (the work tree).
    pub tree: Option<ObjectId>,
    /// The contract to use, when not the commit's `.gitreceipts` (the work tree's).
    pub contract: Option<Arc<Contract>>,
}

impl<'a> Revision<'a> {
    /// Commit `commit`, named `label`, with its own tree and `.gitreceipts`.
    pub fn commit(label: &'a str, commit: ObjectId) -> Revision<'a> {
        Revision {
            label,
            commit,
            tree: None,
            contract: None,
        }
    }
}

/// How the judge works.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// How far the stale walk goes back (`receipt.walkLimit`).
    pub walk_limit: usize,
    /// The judging clock (Unix ms): quarantines expire by it
    /// ([`crate::quarantine`]).
    pub now_ms: u64,
    /// Judge as for a protected branch: each check accepts what its
    /// `accept-protected` says (the server's pre-receive hook, a push to a
    /// protected branch, `gate --protected`); otherwise what `accept` says.
    pub protected: bool,
}

impl Options {
    /// The options the repository's config sets: [`walk_limit`].
    pub fn from_config(store: &Store) -> Result<Options, PolicyError> {
        Ok(Options {
            walk_limit: walk_limit(store)?,
            now_ms: crate::clock::now_ms(),
            protected: false,
        })
    }
}

/// What the policy itself found, beside the states freshness decides: typed, so
/// `--json` carries the structure (`code` and fields); `Display` gives the words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "code", rename_all = "kebab-case")]
pub enum Reason {
    /// A check required at the trusted revision that `.gitreceipts` here no
    /// longer declares: it reads missing.
    RequiredButUndeclared {
        /// The check.
        check: String,
        /// The trusted revision, as the baseline names it.
        trusted: String,
    },
    /// A check whose `accept` (or `accept-protected`) here counts receipts
    /// that the trusted revision's does not: what both accept is evaluated.
    AcceptTightened {
        /// The check.
        check: String,
        /// The trusted revision, as the baseline names it.
        trusted: String,
        /// What `.gitreceipts` here accepts (`any`, `run`, `run-by:NAMES`).
        here: String,
        /// What is evaluated.
        evaluated: String,
    },
    /// A required check whose `run`, `path` or `env` here differs from the
    /// trusted revision's: the definition here is the one evaluated.
    CheckRedefined {
        /// The check.
        check: String,
        /// The trusted revision, as the baseline names it.
        trusted: String,
        /// What changed: `run`, `path`, `env`.
        changed: Vec<&'static str>,
    },
    /// A review whose definition here differs from the trusted revision's: the
    /// stricter of the two is evaluated.
    ReviewRedefined {
        /// The review.
        review: String,
        /// The trusted revision, as the baseline names it.
        trusted: String,
        /// What changed: `path`, `required`, `self-approve`.
        changed: Vec<&'static str>,
    },
    /// A differential check's failure weighed against its baseline: present
    /// when it introduced at most `allow-new-failures` failures.
    Differential(crate::parity::Comparison),
    /// A failed check whose every failed test is quarantined: it reads present.
    Quarantined {
        /// The check.
        check: String,
        /// The failed tests and the quarantines that cover them.
        tests: Vec<crate::quarantine::Covered>,
    },
    /// A failed check with a failed test whose quarantine has expired: it
    /// stays failed.
    QuarantineExpired {
        /// The check.
        check: String,
        /// The failed tests and their expired quarantines.
        tests: Vec<crate::quarantine::Covered>,
    },
    /// A path of a review that matches nothing at the revision: an approval
    /// covers nothing there.
    ReviewPathMatchesNothing {
        /// The review.
        review: String,
        /// The path.
        path: String,
    },
    /// A review with `self-approve = false`, not present, on a revision whose
    /// author is unknown (no SSH signature by a trusted key): no approval can
    /// count there until the commit is signed by a trusted key.
    ReviewAuthorUnknown {
        /// The review.
        review: String,
        /// The revision (full hex).
        commit: String,
        /// The untrusted key that signed it; none when it has no verified signature.
        signed_by: Option<String>,
    },
}

impl Reason {
    /// The stable kebab-case name of the kind of reason (the `code` in JSON).
    pub fn code(&self) -> &'static str {
        match self {
            Reason::RequiredButUndeclared { .. } => "required-but-undeclared",
            Reason::CheckRedefined { .. } => "check-redefined",
            Reason::AcceptTightened { .. } => "accept-tightened",
            Reason::ReviewRedefined { .. } => "review-redefined",
            Reason::ReviewPathMatchesNothing { .. } => "review-path-matches-nothing",
            Reason::Differential(_) => "differential",
            Reason::Quarantined { .. } => "quarantined",
            Reason::QuarantineExpired { .. } => "quarantine-expired",
            Reason::ReviewAuthorUnknown { .. } => "review-author-unknown",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::RequiredButUndeclared { trusted, .. } => write!(
                f,
                "required at {trusted} but no longer declared in .gitreceipts here"
            ),
            Reason::AcceptTightened {
                check,
                trusted,
                here,
                evaluated,
            } => write!(
                f,
                "check {check:?} accepts {} here, more than {trusted} accepts: accept = {} is evaluated",
                crate::text::escape(here),
                crate::text::escape(evaluated)
            ),
            Reason::CheckRedefined {
                check,
                trusted,
                changed,
            } => write!(
                f,
                "required check {check:?} is defined differently here than at {trusted}: its {} changed; the definition here is the one evaluated",
                changed.join(" and ")
            ),
            Reason::ReviewRedefined {
                review,
                trusted,
                changed,
            } => write!(
                f,
                "review {review:?} is defined differently here than at {trusted}: its {} changed; the stricter of the two is evaluated (the paths of both, the larger required, self-approve only if both allow it)",
                changed.join(" and ")
            ),
            Reason::Differential(c) => {
                write!(f, "check {:?} is differential: {}", c.check, c.words())
            }
            Reason::Quarantined { check, tests } => write!(
                f,
                "check {check:?} failed only quarantined tests, so it reads present: {}",
                crate::quarantine::covered_words(tests)
            ),
            Reason::QuarantineExpired { check, tests } => write!(
                f,
                "check {check:?}: the quarantine of {} has expired, so the failure counts",
                crate::quarantine::covered_words(tests)
            ),
            Reason::ReviewPathMatchesNothing { path, .. } => write!(
                f,
                "path {path:?} of the review matches nothing at this revision, so an approval covers nothing there"
            ),
            Reason::ReviewAuthorUnknown {
                commit, signed_by, ..
            } => f.write_str(&crate::decision::unknown_author_words(
                commit.get(..7).unwrap_or(commit),
                signed_by.as_deref(),
            )),
        }
    }
}

/// A failed check whose deciding receipt failed only tests that `quarantines`
/// hold (unexpired at `now_ms`) reads present; one with a failed test whose
/// quarantine expired, or quarantined tests among others, keeps failing with a
/// notice that says so ([`crate::quarantine`]). The typed findings go to `reasons`.
pub fn apply_quarantines(
    store: &Store,
    states: &mut [CheckState],
    quarantines: &[crate::contract::QuarantineDef],
    now_ms: u64,
    reasons: &mut Vec<Reason>,
) {
    if quarantines.is_empty() {
        return;
    }
    for s in states.iter_mut().filter(|s| s.state == State::Failed) {
        let Some(d) = &s.decider else { continue };
        if !quarantines.iter().any(|q| q.check == s.name) {
            continue;
        }
        let excuse =
            crate::quarantine::excuse_stored(store, &d.receipt, &s.name, quarantines, now_ms);
        if !excuse.expired.is_empty() {
            reasons.push(Reason::QuarantineExpired {
                check: s.name.clone(),
                tests: excuse.expired.clone(),
            });
        }
        if excuse.excused {
            s.state = State::Present;
            s.reason = format!(
                "{}, but it failed only quarantined tests ({})",
                s.reason,
                crate::quarantine::covered_words(&excuse.covered)
            );
            reasons.push(Reason::Quarantined {
                check: s.name.clone(),
                tests: excuse.covered,
            });
        } else if let Some(words) = excuse.words() {
            s.notices.push(words);
        } else if let Some(why) = excuse.not_excusable {
            s.notices
                .push(format!("a quarantine names this check, but {why}"));
        }
    }
}

/// The trusted revision a differential check's baseline is found from: the one
/// `baseline` names, or the reader's trust root (also for [`Baseline::Own`]:
/// "failures this change introduced" are weighed against the trusted history
/// even where only the revision's own requirements apply).
fn parity_trusted(
    store: &Store,
    commit: ObjectId,
    trust: &Trust,
    baseline: &Baseline,
) -> Result<Option<(ObjectId, String)>, PolicyError> {
    let baseline = match baseline {
        Baseline::Own => &Baseline::TrustRoot,
        b => b,
    };
    named_revision(store, commit, trust, baseline)
}

/// Each failed check that `rules` declares `parity = differential` weighed
/// against its baseline ([`crate::parity`]): present when it introduced at most
/// `allow-new-failures` failures, failed otherwise, moved to `undecided` when the
/// baseline cannot be weighed. The comparisons go to `reasons`.
#[allow(clippy::too_many_arguments)]
pub fn apply_parity(
    store: &Store,
    commit: ObjectId,
    trust: &Trust,
    baseline: &Baseline,
    rules: &Contract,
    walk_limit: usize,
    states: &mut Vec<CheckState>,
    undecided: &mut Vec<Undecided>,
    reasons: &mut Vec<Reason>,
) -> Result<(), PolicyError> {
    use crate::parity::{Weighed, baseline_commit, weigh};
    // the baseline (with the words naming it) and the trusted revision's
    // label, found once for every differential check
    let mut found: Option<(Option<(ObjectId, String)>, String)> = None;
    let mut kept = Vec::with_capacity(states.len());
    for mut s in std::mem::take(states) {
        let def = rules
            .check(&s.name)
            .filter(|d| d.parity == crate::contract::Parity::Differential);
        // a failed receipt, or a passed one whose metrics are bounded
        let (Some(def), Some(d)) = (def, &s.decider) else {
            kept.push(s);
            continue;
        };
        let bounded = crate::parity::metric_bound(def).is_some();
        if !(s.state == State::Failed || (s.state == State::Present && bounded)) {
            kept.push(s);
            continue;
        }
        if found.is_none() {
            found = Some(match parity_trusted(store, commit, trust, baseline) {
                Ok(Some((t, label))) => (baseline_commit(store, commit, t, &label)?, label),
                Ok(None) => (None, "the trusted history".to_owned()),
                // no trust root: the check cannot be weighed, which is its
                // own undecided state, not an error of the whole judgement
                Err(PolicyError::TrustRoot(e)) => (None, format!("the trusted history ({e})")),
                Err(e) => return Err(e),
            });
        }
        let (base, label) = found.clone().unwrap_or_default();
        match weigh(store, &trust.set, def, &d.receipt, base, &label, walk_limit)? {
            Weighed::Nothing => kept.push(s),
            Weighed::Compared(mut c) => {
                // what the comparison holds against it, a trusted accepted
                // regression of exactly these inputs may accept
                if !c.passes() {
                    let mut notices = Vec::new();
                    crate::decision::accept_regressions(
                        store,
                        &trust.set,
                        &d.receipt,
                        &mut c,
                        None,
                        def.self_accept,
                        &|fp| signer_label(&trust.set, fp),
                        &mut notices,
                    )?;
                    s.notices.extend(notices);
                }
                let was = s.state;
                s.state = if c.passes() {
                    State::Present
                } else {
                    State::Failed
                };
                s.reason = match (was, s.state) {
                    (State::Failed, State::Present) => {
                        format!("{}, but differential: {}", s.reason, c.words())
                    }
                    (State::Present, State::Failed) => format!(
                        "failed: differential: {} (the run itself passed: {})",
                        c.words(),
                        s.reason
                    ),
                    _ => format!("{}; differential: {}", s.reason, c.words()),
                };
                reasons.push(Reason::Differential(c));
                kept.push(s);
            }
            // a passed run whose bounded metric cannot be compared fails: no
            // regression past the bound can be ruled out
            Weighed::Fails(why) if s.state == State::Present => {
                s.reason = format!(
                    "failed: differential, but {why} (the run itself passed: {})",
                    s.reason
                );
                s.state = State::Failed;
                kept.push(s);
            }
            Weighed::Fails(why) => {
                s.notices.push(format!("differential, but {why}"));
                kept.push(s);
            }
            Weighed::Undecided(error) => undecided.push(Undecided {
                name: s.name.clone(),
                required: s.required,
                error,
            }),
        }
    }
    *states = kept;
    Ok(())
}

/// One revision judged.
#[derive(Debug)]
pub struct Judgement {
    /// How the revision was named.
    pub rev: String,
    /// Its commit.
    pub commit: ObjectId,
    /// Whose keys counted, in words.
    pub trust_root: String,
    /// Every check's and review's state (reviews named [`REVIEW_PREFIX`]`<name>`).
    pub states: Vec<CheckState>,
    /// Checks only the history missing from a shallow clone could decide.
    pub undecided: Vec<Undecided>,
    /// Checks required at the trusted revision that `.gitreceipts` here no longer
    /// declares (each also has a `missing` entry in `states`).
    pub undeclared: Vec<String>,
    /// What a reviewer should see even when the verdict is yes, in words: what
    /// each state's decision passed over (`<name>: <notice>`), then the
    /// redefinitions of required checks and reviews.
    pub notices: Vec<String>,
    /// The policy's own findings, typed ([`Reason`]), in the order found.
    pub reasons: Vec<Reason>,
    /// The walk limit the states were decided with (`receipt.walkLimit`): what
    /// is signed of them (`gate --record`) is decided with the same.
    pub walk_limit: usize,
    /// Which receipts each check counted (its name, the accept evaluated:
    /// `accept-protected` for a protected branch, held to the trusted
    /// revision's; [`tighten_accept`]).
    pub accepts: Vec<(String, Accept)>,
}

impl Judgement {
    /// Which receipts check `name` counted (`any` for one not judged here).
    pub fn accept_of(&self, name: &str) -> &Accept {
        const ANY: &Accept = &Accept::Any;
        self.accepts
            .iter()
            .find(|(n, _)| n == name)
            .map_or(ANY, |(_, a)| a)
    }
}

/// How far `status`, `gate` and the hooks walk back: `receipt.walkLimit`
/// (default [`freshness::DEFAULT_WALK_LIMIT`]); zero or less is an error.
pub fn walk_limit(store: &Store) -> Result<usize, PolicyError> {
    match store.config_integer("receipt.walkLimit") {
        None => Ok(freshness::DEFAULT_WALK_LIMIT),
        Some(n) if n > 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        Some(n) => Err(PolicyError::WalkLimit(n)),
    }
}

/// The name a trusted key goes by in reasons: its `[signer]` name, else its fingerprint.
pub fn signer_label(trust: &TrustSet, fp: &str) -> String {
    match trust.lookup(fp).map(|t| &t.origin) {
        Some(TrustOrigin::Contract(name)) => name.clone(),
        _ => fp.to_owned(),
    }
}

/// The reviews a revision is held to: those declared here and, when judged against
/// a trusted revision, those required there too, each the stricter of the two
/// definitions: the paths of both, the larger `required`, and `self-approve` only
/// when both allow it (a branch cannot drop a required review, point it at paths
/// that match nothing, lower its count or allow self-approval by editing
/// .gitreceipts).
pub fn effective_reviews(here: &Contract, trusted: Option<&Contract>) -> Vec<ReviewDef> {
    let mut out = here.reviews.clone();
    for was in trusted.map(|t| t.reviews.as_slice()).unwrap_or_default() {
        match out.iter_mut().find(|r| r.name == was.name) {
            Some(r) => {
                r.required = r.required.max(was.required);
                r.self_approve &= was.self_approve;
                // no paths is the whole tree, which covers every path
                r.paths = if r.paths.is_empty() || was.paths.is_empty() {
                    Vec::new()
                } else {
                    crate::contract::minimal_paths(
                        r.paths.iter().chain(&was.paths).cloned().collect(),
                    )
                };
            }
            None if was.required > 0 => out.push(was.clone()),
            None => {}
        }
    }
    out
}

/// `contract` with each check's `accept` the one it is judged by: its
/// `accept-protected` when judged for a protected branch (`protected`), else
/// its `accept`; and, against a trusted revision (`trusted`, with its label),
/// only what the trusted rules accept as well ([`Accept::meet`], the same
/// choice of key there): a branch cannot let a recorded result count, drop
/// `run-by`, or name other observers by editing the file it is judged by.
/// Which keys the observers' names stand for is never read from `contract`
/// (see [`crate::trust::TrustSet::observer_keys`]). Each check whose accept
/// here was looser is a [`Reason::AcceptTightened`]. Copied (from the parsed
/// contract every caller shares) only when it changes.
pub fn tighten_accept(
    contract: &mut Arc<Contract>,
    trusted: Option<(&Contract, &str)>,
    protected: bool,
) -> Vec<Reason> {
    let mut reasons = Vec::new();
    let mut evaluated = Vec::with_capacity(contract.checks.len());
    for check in &contract.checks {
        let here = check.accept_for(protected);
        let accept = match trusted.and_then(|(t, _)| t.check(&check.name)) {
            Some(was) => here.meet(was.accept_for(protected)),
            None => here.clone(),
        };
        if let Some((_, label)) = trusted
            && *here != accept
        {
            reasons.push(Reason::AcceptTightened {
                check: check.name.clone(),
                trusted: label.to_owned(),
                here: here.to_string(),
                evaluated: accept.to_string(),
            });
        }
        evaluated.push(accept);
    }
    // freshness reads only `accept`: `accept_protected` may stay as it is
    if contract
        .checks
        .iter()
        .zip(&evaluated)
        .any(|(c, a)| c.accept != *a)
    {
        for (check, accept) in Arc::make_mut(contract).checks.iter_mut().zip(evaluated) {
            check.accept = accept;
        }
    }
    reasons
}

/// Each review's state at `commit` (tree `tree`) as a row beside the checks,
/// named `review:<name>`, required when it needs at least one approval; one only
/// the history missing from a shallow clone could decide goes to `undecided`. A
/// path of a review that matches nothing is a notice on its row and a [`Reason`]
/// in `reasons`.
#[allow(clippy::too_many_arguments)]
pub fn review_states(
    store: &Store,
    trust: &TrustSet,
    commit: ObjectId,
    tree: ObjectId,
    reviews: &[ReviewDef],
    walk_limit: usize,
    undecided: &mut Vec<Undecided>,
    reasons: &mut Vec<Reason>,
) -> Result<Vec<CheckState>, PolicyError> {
    let label = |fp: &str| signer_label(trust, fp);
    let mut out = Vec::new();
    for def in reviews {
        let mut r = match crate::decision::review_state(
            store, trust, commit, tree, def, walk_limit, &label,
        ) {
            Ok(r) => r,
            Err(error @ freshness::FreshnessError::ShallowReview { .. }) => {
                undecided.push(Undecided {
                    name: format!("{REVIEW_PREFIX}{}", def.name),
                    required: def.required > 0,
                    error,
                });
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        // a path that matches nothing reviews nothing: its inputs are the empty tree
        let empty = store.empty_tree();
        for p in &def.paths {
            if store.inputs_tree(tree, std::slice::from_ref(p), false)? == empty {
                let reason = Reason::ReviewPathMatchesNothing {
                    review: def.name.clone(),
                    path: p.clone(),
                };
                r.notices.push(reason.to_string());
                reasons.push(reason);
            }
        }
        // no approval can count on a commit of unknown author: say so on the
        // row (unless its reason does) and as a typed reason the fix reads
        if r.state != State::Present
            && let Some(author) = &r.author
            && let Some(words) = author.unknown_reason(commit)
        {
            if !r.reason.contains(&words) {
                r.notices.push(words);
            }
            reasons.push(Reason::ReviewAuthorUnknown {
                review: def.name.clone(),
                commit: commit.to_string(),
                signed_by: author.untrusted_signer().map(str::to_owned),
            });
        }
        out.push(CheckState {
            name: format!("{REVIEW_PREFIX}{}", r.name),
            required: r.required > 0,
            state: r.state,
            decider: r.decider.map(|d| Decider {
                receipt: d.receipt,
                writer: d.writer,
                distance: None,
            }),
            reason: r.reason,
            changed_paths: Vec::new(),
            untrusted: r.untrusted,
            notices: r.notices,
        });
    }
    Ok(out)
}

/// The one rule for which checks are required when a revision is judged against a
/// revision already trusted (`gate --trust`, `gate --verify`, the pre-receive
/// hook): those required in `.gitreceipts` here **and** those required at the
/// trusted revision, so that a branch cannot drop a requirement by editing the
/// file it is judged by.
///
/// Marks each of them required in `judgement`; adds a `missing` state for one
/// required there that `here` no longer declares (there is nothing here to
/// evaluate); and, for a required check whose `run`, `path` or `env` here differs
/// from there, adds a notice: a branch may change its test command, so the
/// definition here is the one evaluated, but a reviewer should see that it changed.
pub fn require_trusted_checks(
    judgement: &mut Judgement,
    here: &Contract,
    trusted: &Contract,
    label: &str,
) {
    for was in trusted.checks.iter().filter(|c| c.required) {
        if here.check(&was.name).is_none() {
            let reason = Reason::RequiredButUndeclared {
                check: was.name.clone(),
                trusted: label.to_owned(),
            };
            judgement.undeclared.push(was.name.clone());
            judgement.states.push(CheckState {
                name: was.name.clone(),
                required: true,
                state: State::Missing,
                decider: None,
                reason: reason.to_string(),
                changed_paths: Vec::new(),
                untrusted: 0,
                notices: Vec::new(),
            });
            judgement.reasons.push(reason);
            continue;
        }
        for s in judgement.states.iter_mut().filter(|s| s.name == was.name) {
            s.required = true;
        }
        for u in judgement
            .undecided
            .iter_mut()
            .filter(|u| u.name == was.name)
        {
            u.required = true;
        }
    }
    for now in here.checks.iter() {
        let Some(was) = trusted.check(&now.name) else {
            continue;
        };
        if !(now.required || was.required) {
            continue;
        }
        let changed = changed_fields(&[
            ("run", now.run != was.run),
            ("path", now.paths != was.paths),
            ("env", now.env != was.env),
        ]);
        if !changed.is_empty() {
            let reason = Reason::CheckRedefined {
                check: now.name.clone(),
                trusted: label.to_owned(),
                changed,
            };
            judgement.notices.push(reason.to_string());
            judgement.reasons.push(reason);
        }
    }
}

/// The names of the fields marked as differing, in order.
fn changed_fields(fields: &[(&'static str, bool)]) -> Vec<&'static str> {
    fields
        .iter()
        .filter_map(|&(what, differs)| differs.then_some(what))
        .collect()
}

/// A [`Reason::ReviewRedefined`] for each review whose definition here differs
/// from the one at the trusted revision `label`: the stricter of the two is
/// evaluated ([`effective_reviews`]), and a reviewer should see that a branch
/// changed it.
pub fn changed_reviews(here: &Contract, trusted: &Contract, label: &str) -> Vec<Reason> {
    let mut out = Vec::new();
    for now in &here.reviews {
        let Some(was) = trusted.reviews.iter().find(|r| r.name == now.name) else {
            continue;
        };
        let changed = changed_fields(&[
            ("path", now.paths != was.paths),
            ("required", now.required != was.required),
            ("self-approve", now.self_approve != was.self_approve),
        ]);
        if !changed.is_empty() {
            out.push(Reason::ReviewRedefined {
                review: now.name.clone(),
                trusted: label.to_owned(),
                changed,
            });
        }
    }
    out
}

/// The trusted revision `baseline` names for `commit` (none for [`Baseline::Own`],
/// nor when it is `commit` itself), with its label.
fn trusted_revision(
    store: &Store,
    commit: ObjectId,
    trust: &Trust,
    baseline: &Baseline,
) -> Result<Option<(ObjectId, String)>, PolicyError> {
    Ok(named_revision(store, commit, trust, baseline)?.filter(|(c, _)| *c != commit))
}

/// The revision `baseline` names for `commit`, with its label: none for
/// [`Baseline::Own`], the reader's trust root (`trust.root`, or found) for
/// [`Baseline::TrustRoot`].
fn named_revision(
    store: &Store,
    commit: ObjectId,
    trust: &Trust,
    baseline: &Baseline,
) -> Result<Option<(ObjectId, String)>, PolicyError> {
    Ok(match baseline {
        Baseline::Own => None,
        Baseline::TrustRoot => match trust.root {
            Some(c) => Some(c),
            None => trust_root(store, commit)?.commit,
        }
        .map(|c| (c, trust_root_label(c))),
        Baseline::At { commit, label } => Some((*commit, label.clone())),
    })
}

/// The reviews `commit` (whose contract is `here`) is held to under `baseline`
/// ([`effective_reviews`] with the trusted revision's; `root` is the reader's
/// trust root, when known): what `review` offers to approve.
pub fn reviews_held_to(
    store: &Store,
    here: &Contract,
    commit: ObjectId,
    root: Option<ObjectId>,
    baseline: &Baseline,
) -> Result<Vec<ReviewDef>, PolicyError> {
    let trusted = match baseline {
        Baseline::Own => None,
        Baseline::TrustRoot => root.map(|c| (c, c.to_hex_with_len(7).to_string())),
        Baseline::At { commit, label } => Some((*commit, label.clone())),
    }
    .filter(|(c, _)| *c != commit);
    Ok(match trusted {
        Some((c, label)) => effective_reviews(here, Some(&*contract_at(store, c, &label)?)),
        None => here.reviews.clone(),
    })
}

/// Judge every check and review `rev` declares (and, per `baseline`, those the
/// trusted revision requires), counting only receipts `trust` accepts.
pub fn judge(
    store: &Store,
    rev: &Revision<'_>,
    trust: &Trust,
    baseline: &Baseline,
    opts: Options,
) -> Result<Judgement, PolicyError> {
    let commit = rev.commit;
    let mut contract = match &rev.contract {
        Some(c) => c.clone(),
        None => contract_at(store, commit, rev.label)?,
    };
    let trusted = trusted_revision(store, commit, trust, baseline)?
        .map(|(c, label)| Ok::<_, PolicyError>((contract_at(store, c, &label)?, label)))
        .transpose()?;
    let tightened = tighten_accept(
        &mut contract,
        trusted.as_ref().map(|(c, label)| (&**c, label.as_str())),
        opts.protected,
    );
    let accepts = contract
        .checks
        .iter()
        .map(|c| (c.name.clone(), c.accept.clone()))
        .collect();
    let walk_limit = opts.walk_limit;
    let fopts = freshness::Options { walk_limit };
    let outcomes = match rev.tree {
        Some(tree) => freshness::evaluate_tree(store, commit, tree, &contract, &trust.set, fopts)?,
        None => freshness::evaluate(store, commit, &contract, &trust.set, fopts)?,
    };
    let mut states = Vec::new();
    let mut undecided = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok(s) => states.push(s),
            Err(u) => undecided.push(u),
        }
    }
    let mut reasons = Vec::new();
    // the rules of the trusted history when there is one: a branch cannot
    // excuse its own failures by adding a quarantine, nor weigh them against
    // a baseline by declaring its check differential
    let rules: &Contract = match &trusted {
        Some((t, _)) => t,
        None => &contract,
    };
    if crate::parity::any_differential(rules) {
        apply_parity(
            store,
            rev.commit,
            trust,
            baseline,
            rules,
            walk_limit,
            &mut states,
            &mut undecided,
            &mut reasons,
        )?;
    }
    apply_quarantines(
        store,
        &mut states,
        &rules.quarantines,
        opts.now_ms,
        &mut reasons,
    );
    let rev_tree = match rev.tree {
        Some(t) => t,
        None => store.commit_tree(commit)?,
    };
    let reviews = effective_reviews(&contract, trusted.as_ref().map(|(c, _)| &**c));
    states.extend(review_states(
        store,
        &trust.set,
        commit,
        rev_tree,
        &reviews,
        walk_limit,
        &mut undecided,
        &mut reasons,
    )?);
    let mut judgement = Judgement {
        rev: rev.label.to_owned(),
        commit,
        trust_root: trust.description.clone(),
        states,
        undecided,
        undeclared: Vec::new(),
        notices: Vec::new(),
        reasons,
        walk_limit,
        accepts,
    };
    for reason in tightened {
        judgement.notices.push(reason.to_string());
        judgement.reasons.push(reason);
    }
    // what the decisions passed over, by check, for the reader to see
    for s in &judgement.states {
        for n in &s.notices {
            judgement.notices.push(format!("{}: {n}", s.name));
        }
    }
    if let Some((trusted_contract, label)) = trusted {
        require_trusted_checks(&mut judgement, &contract, &trusted_contract, &label);
        for reason in changed_reviews(&contract, &trusted_contract, &label) {
            judgement.notices.push(reason.to_string());
            judgement.reasons.push(reason);
        }
    }
    Ok(judgement)
}
