//! Present, missing, failed or stale: the state of each check at a revision.
//!
//! The rules (see `docs/freshness.md`), for revision H and check C:
//!
//! 1. I = the inputs tree of C at H (computed, not written). Receipts the index
//!    names for I, signed by a trusted key, whose signed `subject.inputs` is I, whose
//!    check is C and whose definition matches C decide: the most recent one gives
//!    present or failed. One index lookup, whatever the number of writers; no
//!    history needed.
//! 2. Otherwise the nearest ancestor of H (breadth first, bounded by depth) that has a
//!    trusted receipt for C makes C stale, with the paths that changed since. H
//!    itself comes first: its receipt for other inputs (made with uncommitted
//!    changes) makes it stale, not missing.
//! 3. Receipts for I whose definition differs make C stale ("definition changed").
//! 4. Nothing: missing. A walk that reaches a shallow boundary first cannot say
//!    stale or missing and reports that instead, for that check only.
//! 5. A receipt that decides by rule 1 for a check with dependencies is stale
//!    when a dependency's declared paths hold another tree in its local clone
//!    now; a clone that is not there leaves the check undecided, never present.
//!
//! Notes are never read here: anyone who can push can rewrite a notes ref. The
//! receipt index ([`Index`]) only proposes candidates; each is opened
//! from its chain, and only its signature, its key's trust and its signed subject
//! decide.

use std::collections::HashSet;

use crate::store::index::{Index, Role, check_hash, definition_prefix};

use gix::ObjectId;

use crate::contract::{Accept, CheckDef, Contract};
use crate::receipt::{Receipt, Unverified, Verified};
use crate::recorder::CheckSpec;
use crate::store::{Store, StoreError};
use crate::text::list_paths;
use crate::trust::TrustSet;

pub use crate::store::DEFAULT_WALK_LIMIT;

pub use crate::receipt::State;

/// The receipt that decided a state.
#[derive(Debug, Clone)]
pub struct Decider {
    /// The verified receipt.
    pub receipt: Receipt<Verified>,
    /// Its writer.
    pub writer: String,
    /// How many commits back its subject commit is from the revision (its depth), if
    /// it is an ancestor within the bound.
    pub distance: Option<usize>,
}

/// The state of one check, with the reason in words.
#[derive(Debug, Clone)]
pub struct CheckState {
    /// The check's name.
    pub name: String,
    /// Whether `.gitreceipts` marks it required.
    pub required: bool,
    /// The state.
    pub state: State,
    /// The receipt that decided it, if any.
    pub decider: Option<Decider>,
    /// The reason, in words.
    pub reason: String,
    /// For stale: the declared-input paths that changed.
    pub changed_paths: Vec<String>,
    /// Receipts for these inputs that were ignored because no trusted key signed them.
    pub untrusted: usize,
    /// What a reader should see besides the state: trusted receipts ignored for
    /// being dated in the future (strings from receipts: escape before printing).
    pub notices: Vec<String>,
}

/// Why a state could not be decided.
#[derive(Debug, thiserror::Error)]
pub enum FreshnessError {
    /// The walk reached the edge of a shallow clone before finding anything.
    #[error(
        "history is shallow at {boundary}: cannot tell whether check {check:?} is stale or missing from truncated history"
    )]
    Shallow {
        /// The shallow commit reached.
        boundary: ObjectId,
        /// The check being evaluated.
        check: String,
    },
    /// As [`FreshnessError::Shallow`], but receipts of the check's inputs here
    /// were found and ignored for want of a trusted signature: the cause to fix
    /// is which signers are trusted here, not the depth of the history.
    #[error(
        "no trusted receipt for check {check:?}: the receipts of its inputs here ({untrusted}) are signed by keys not trusted here, so none counts; and history is shallow at {boundary}, so no trusted receipt further back can be looked for"
    )]
    ShallowUntrusted {
        /// The shallow commit reached.
        boundary: ObjectId,
        /// The check being evaluated.
        check: String,
        /// The receipts of these inputs ignored as untrusted.
        untrusted: usize,
    },
    /// The walk for an approved ancestor reached the edge of a shallow clone
    /// before finding one: as for a check, stale or missing cannot be told.
    #[error(
        "history is shallow at {boundary}: cannot tell whether review {review:?} is stale or missing from truncated history"
    )]
    ShallowReview {
        /// The shallow commit reached.
        boundary: ObjectId,
        /// The review being evaluated.
        review: String,
    },
    /// A dependency the check declares cannot be resolved here (its clone is
    /// absent, or its ref names nothing): what it was tested against is unknown.
    #[error("cannot decide check {check:?}: {error}")]
    Dependency {
        /// The check being evaluated.
        check: String,
        /// Why.
        error: Box<crate::environment::DependencyError>,
    },
    /// A differential check (`parity = differential`) whose failure cannot be
    /// weighed: no usable trusted receipt of it at the baseline, so whether this
    /// change introduced the failures is unknown.
    #[error("cannot decide check {check:?}: {why}")]
    NoBaseline {
        /// The check being evaluated.
        check: String,
        /// The baseline commit looked at, when there was one.
        baseline: Option<ObjectId>,
        /// What was looked for and not found, in words (strings from receipts:
        /// escape before printing).
        why: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A check whose state the history here cannot tell (a shallow clone), so that the
/// checks that can be decided still are.
#[derive(Debug)]
pub struct Undecided {
    /// The check's name.
    pub name: String,
    /// Whether `.gitreceipts` marks it required.
    pub required: bool,
    /// Why it cannot be decided.
    pub error: FreshnessError,
}

/// Options for [`evaluate`].
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How deep the walk for a stale receipt goes (see [`Ancestry`]: depth
    /// counts steps back on the shortest path, so a merge's side branch does not
    /// eat the bound of the first-parent line).
    pub walk_limit: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            walk_limit: DEFAULT_WALK_LIMIT,
        }
    }
}

/// The check as receipts record it (without its assertions and dependencies:
/// [`spec_in`] adds those from the contract).
pub fn spec_of(def: &CheckDef) -> CheckSpec {
    CheckSpec {
        name: def.name.clone(),
        argv: def.argv(),
        paths: def.paths.clone(),
        env: def.env.clone(),
        results: def.results.clone(),
        metrics: def.metrics.clone(),
        artifacts: def.artifacts.clone(),
        ..Default::default()
    }
}

/// The check as receipts record it, with the assertions and dependencies it
/// declares in `contract`.
pub fn spec_in(contract: &Contract, def: &CheckDef) -> CheckSpec {
    CheckSpec {
        assertions: contract.assertions_of(def),
        dependencies: contract.dependencies_of(def),
        ..spec_of(def)
    }
}

/// Lazily built view of the ancestry, shared by all checks of one revision so that
/// the walk is paid for once; candidates come from the receipt index.
struct Evaluation<'a> {
    store: &'a Store,
    contract: &'a Contract,
    trust: &'a TrustSet,
    index: std::sync::Arc<Index>,
    rev: ObjectId,
    rev_tree: ObjectId,
    opts: Options,
    ancestry: Option<Ancestry>,
    /// Which receipts count for the check being evaluated; for `accept =
    /// run-by:NAMES`, the keys of those observers in the trusted rules; the
    /// recorded receipts passed over because it accepts only observed runs, and
    /// the runs passed over because no observer it names signed them.
    accept: Accept,
    observers: crate::trust::Observers,
    recorded_ignored: HashSet<String>,
    unobserved_ignored: HashSet<String>,
    /// The latest date a receipt may carry and count: the clock plus its skew.
    horizon: crate::clock::Horizon,
    /// The check's notices, each once, by receipt id.
    notices: Vec<(String, String)>,
}

pub(crate) use crate::store::query::Ancestry;

/// A trusted receipt found for a check, with where it came from.
struct Found {
    receipt: Receipt<Verified>,
    writer: String,
}

/// What a lookup is after: receipts for `check` keyed by `object` as `role`, of
/// one definition or of any.
struct Wanted<'a> {
    object: ObjectId,
    role: Role,
    check: &'a str,
    definition: Option<&'a str>,
}

/// Evaluate every check of `contract` at commit `rev`. A check that only the missing
/// history of a shallow clone could decide is [`Undecided`]; the others are still
/// decided (rule 1 needs no history). Any other failure is an error for all.
pub fn evaluate(
    store: &Store,
    rev: ObjectId,
    contract: &Contract,
    trust: &TrustSet,
    opts: Options,
) -> Result<Vec<Result<CheckState, Undecided>>, FreshnessError> {
    evaluate_tree(store, rev, store.commit_tree(rev)?, contract, trust, opts)
}

/// The newest trusted receipt of check `def` (as `contract` declares it) for
/// exactly the inputs it has in commit `rev`, under its definition, that `keep`
/// takes: rule 1's candidates, each held to what rule 1 holds them to (its
/// signed name, definition and inputs, a trusted signature, a date within the
/// clock's horizon, `accept`). Parity looks for a baseline receipt from the
/// runner class of the receipt it is weighed against with it.
pub fn newest_of_inputs(
    store: &Store,
    rev: ObjectId,
    contract: &Contract,
    def: &CheckDef,
    trust: &TrustSet,
    keep: &dyn Fn(&Receipt<Verified>) -> bool,
) -> Result<Option<Receipt<Verified>>, FreshnessError> {
    let rev_tree = store.commit_tree(rev)?;
    let mut ev = Evaluation::new(store, contract, trust, (rev, rev_tree), Options::default())?;
    ev.start_check(def);
    let definition = spec_in(contract, def).definition();
    let inputs = store.inputs_tree(rev_tree, &def.paths, false)?;
    let inputs_hex = inputs.to_string();
    Ok(ev
        .newest_trusted_where(
            Wanted {
                object: inputs,
                role: Role::Inputs,
                check: &def.name,
                definition: Some(&definition),
            },
            |s| s.inputs == inputs_hex,
            keep,
            &mut 0,
        )?
        .map(|f| f.receipt))
}

/// [`evaluate`] for `tree` on top of commit `rev` (its history): the work tree
/// as `git receipt run` would test it, for `status` without a revision.
pub fn evaluate_tree(
    store: &Store,
    rev: ObjectId,
    tree: ObjectId,
    contract: &Contract,
    trust: &TrustSet,
    opts: Options,
) -> Result<Vec<Result<CheckState, Undecided>>, FreshnessError> {
    let mut ev = Evaluation::new(store, contract, trust, (rev, tree), opts)?;
    let mut out = Vec::new();
    for def in &contract.checks {
        ev.start_check(def);
        match ev.check(def) {
            Ok(mut state) => {
                state.notices = ev.notices.drain(..).map(|(_, n)| n).collect();
                state.reason.push_str(&ignored_words(
                    &ev.accept,
                    &ev.observers,
                    ev.recorded_ignored.len(),
                    ev.unobserved_ignored.len(),
                ));
                if let Some(notice) = undeclared_observers_notice(&ev.accept, &ev.observers) {
                    state.notices.push(notice);
                }
                out.push(Ok(state))
            }
            Err(
                error @ (FreshnessError::Shallow { .. }
                | FreshnessError::ShallowUntrusted { .. }
                | FreshnessError::Dependency { .. }
                | FreshnessError::NoBaseline { .. }),
            ) => out.push(Err(Undecided {
                name: def.name.clone(),
                required: def.required,
                error,
            })),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// What a check's reason adds about the receipts its `accept` passed over:
/// `recorded` results of `record`, and `unobserved` runs signed by no observer
/// it names; or, for `accept = run-by:NAMES` whose names the trusted rules
/// declare no observer by, that nothing can count. Empty when there is nothing
/// to say.
fn ignored_words(
    accept: &Accept,
    observers: &crate::trust::Observers,
    recorded: usize,
    unobserved: usize,
) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    match accept {
        Accept::Any => String::new(),
        Accept::Run if recorded == 0 => String::new(),
        Accept::Run => format!(
            " ({} ignored: accept = run counts only observed runs)",
            plural(recorded, "recorded receipt", "recorded receipts")
        ),
        Accept::RunBy(names) if names.is_empty() => " (no receipt counts: the run-by observers named by this revision's .gitreceipts and by the trusted one have none in common)".to_owned(),
        Accept::RunBy(_) if observers.is_empty() => format!(
            " (no receipt counts: accept = {} names no signer that the trusted .gitreceipts declares observer = true)",
            crate::text::escape(&accept.to_string())
        ),
        Accept::RunBy(_) if recorded + unobserved == 0 => String::new(),
        Accept::RunBy(_) => {
            let mut parts = Vec::new();
            if recorded > 0 {
                parts.push(plural(recorded, "recorded receipt", "recorded receipts"));
            }
            if unobserved > 0 {
                parts.push(plural(unobserved, "run by another signer", "runs by other signers"));
            }
            format!(
                " ({} ignored: accept = {} counts only runs signed by an observer it names)",
                parts.join(" and "),
                crate::text::escape(&accept.to_string())
            )
        }
    }
}

/// A notice for `accept = run-by:NAMES` naming some (not all) observers the
/// trusted rules do not declare: only the others' runs count.
fn undeclared_observers_notice(
    accept: &Accept,
    observers: &crate::trust::Observers,
) -> Option<String> {
    if observers.undeclared.is_empty() || observers.is_empty() {
        return None;
    }
    Some(format!(
        "accept = {}: the trusted .gitreceipts declares no observer named {}, so only the others' runs count",
        crate::text::escape(&accept.to_string()),
        crate::text::escape(&observers.undeclared.join(", "))
    ))
}

impl<'a> Evaluation<'a> {
    /// An evaluation of `contract` at commit `rev` with tree `rev_tree` (its
    /// own, or the work tree on top of it), nothing read yet.
    fn new(
        store: &'a Store,
        contract: &'a Contract,
        trust: &'a TrustSet,
        (rev, rev_tree): (ObjectId, ObjectId),
        opts: Options,
    ) -> Result<Evaluation<'a>, FreshnessError> {
        Ok(Evaluation {
            store,
            contract,
            trust,
            index: store.receipt_index()?,
            rev,
            rev_tree,
            opts,
            ancestry: None,
            accept: Default::default(),
            observers: Default::default(),
            recorded_ignored: HashSet::new(),
            unobserved_ignored: HashSet::new(),
            horizon: store.horizon(),
            notices: Vec::new(),
        })
    }

    /// Begin check `def`: what counts for it (its `accept` and the observers
    /// that names), and nothing yet passed over or noticed.
    fn start_check(&mut self, def: &CheckDef) {
        self.accept = def.accept.clone();
        self.observers = self.trust.observer_keys(def.accept.observers());
        self.recorded_ignored.clear();
        self.unobserved_ignored.clear();
        self.notices.clear();
    }

    /// The newest trusted receipt the index names for `want`, opened from its chain
    /// and checked: its signed check name, writer and subject (`subject_ok`), then
    /// its signature and trust. The index only proposes candidates, newest first;
    /// each is skipped when it cannot count (another check or definition, a chain
    /// no trusted key owns) and opened otherwise. Counts in `untrusted` the
    /// candidates that did not count for want of a trusted signature. A trusted
    /// receipt dated beyond the horizon (the clock plus its skew) counts for
    /// nothing and leaves a notice.
    fn newest_trusted(
        &mut self,
        want: Wanted<'_>,
        subject_ok: impl Fn(&crate::receipt::Subject) -> bool,
        untrusted: &mut usize,
    ) -> Result<Option<Found>, FreshnessError> {
        self.newest_trusted_where(want, subject_ok, &|_| true, untrusted)
    }

    /// [`Evaluation::newest_trusted`] among the trusted receipts `keep` takes.
    fn newest_trusted_where(
        &mut self,
        want: Wanted<'_>,
        subject_ok: impl Fn(&crate::receipt::Subject) -> bool,
        keep: &dyn Fn(&Receipt<Verified>) -> bool,
        untrusted: &mut usize,
    ) -> Result<Option<Found>, FreshnessError> {
        let check = check_hash(want.check);
        let definition = want.definition.map(definition_prefix);
        let candidate = |hit: &crate::store::index::Hit| {
            hit.role == want.role
                && hit.record.check == check
                && definition.is_none_or(|d| d == hit.record.definition)
        };
        // the chains no trusted key may write are left out before the hits are
        // ordered (a property of the chain: its order is its own); each of
        // their records that is a candidate counts as untrusted
        let trust = self.trust;
        let hits =
            self.store
                .index_lookup_chains(&mut self.index, &want.object, &mut |index, hit| {
                    let trusted = trust.may_sign_as(index.writer(hit.record.chain));
                    if !trusted && candidate(hit) {
                        *untrusted += 1;
                    }
                    trusted
                })?;
        for hit in hits {
            let rec = hit.record;
            if !candidate(&hit) {
                continue;
            }
            let (writer, r) = match open_candidate(self.store, &self.index, self.trust, &rec) {
                // every chain no trusted key may write was counted and left out
                // by the lookup above; an unusable entry counts for nothing
                Candidate::NoTrustedWriter | Candidate::Unusable => continue,
                Candidate::Open { writer, receipt } => (writer, receipt),
            };
            let b = r.body();
            // The index keeps 8 bytes of the definition and 32 bits of the name:
            // both are re-checked against the signed body. `subject_ok` holds for
            // every candidate of an index built from the chains (each record is
            // keyed by its receipt's own signed subject); it guards against an
            // index file that lies. Dropping its `!` is killed by every rule-1
            // test; `&&` for the `||` before it (`A || B && C`, so the definition
            // is re-checked only when the subject is wrong) by
            // `step_1_a_definition_that_only_shares_the_index_prefix_does_not_count`.
            if b.check.name != want.check
                || want.definition.is_some_and(|d| b.check.definition != d)
                || !subject_ok(&b.subject)
            {
                continue;
            }
            if !self.accept.counts_mode(b.result.mode) {
                self.recorded_ignored.insert(r.id().to_owned());
                continue;
            }
            // by a key the trusted rules declare an observer of those named
            // (the signature is checked below, under that same key)
            if matches!(self.accept, Accept::RunBy(_))
                && !self.observers.include(&r.signature().key)
            {
                self.unobserved_ignored.insert(r.id().to_owned());
                continue;
            }
            // untrusted, revoked, out of its window or badly signed: counts for nothing
            match self.trust.check(r) {
                Ok((receipt, _)) => {
                    let b = receipt.body();
                    if let Some(notice) = crate::clock::future_notice(
                        receipt.id(),
                        "started",
                        &b.result.started_at,
                        self.horizon,
                    ) {
                        if !self.notices.iter().any(|(id, _)| id == receipt.id()) {
                            self.notices.push((receipt.id().to_owned(), notice));
                        }
                        continue;
                    }
                    if !keep(&receipt) {
                        continue;
                    }
                    return Ok(Some(Found { receipt, writer }));
                }
                Err(_) => *untrusted += 1,
            }
        }
        Ok(None)
    }

    /// How the first of `spec`'s dependencies that moved since `receipt` moved,
    /// or `None` when each still holds the tree it recorded. A clone that is not
    /// there (or has no work tree to be relative to) cannot decide: an error.
    fn dependencies_moved(
        &self,
        spec: &CheckSpec,
        receipt: &crate::receipt::Body,
    ) -> Result<Option<String>, FreshnessError> {
        use crate::environment::{DependencyError, OpenDependency};
        if spec.dependencies.is_empty() {
            return Ok(None);
        }
        let undecided = |error| FreshnessError::Dependency {
            check: spec.name.clone(),
            error: Box::new(error),
        };
        let workdir = self.store.workdir().map_err(|source| {
            undecided(DependencyError::Store {
                name: spec.dependencies[0].name.clone(),
                source: Box::new(source),
            })
        })?;
        for dep in &spec.dependencies {
            let Some(recorded) = receipt
                .subject
                .dependencies
                .iter()
                .find(|d| d.name == dep.name)
            else {
                return Ok(Some(format!(
                    "dependency {} is not recorded in the receipt",
                    dep.name
                )));
            };
            let clone = OpenDependency::open(workdir, dep).map_err(undecided)?;
            if let Some(moved) = clone.moved_since(recorded).map_err(undecided)? {
                return Ok(Some(moved));
            }
        }
        Ok(None)
    }

    /// The walk of the ancestry, started (nothing read yet) the first time.
    fn walk(&mut self) -> Result<&mut Ancestry, FreshnessError> {
        if self.ancestry.is_none() {
            self.ancestry = Some(walk_ancestry(self.store, self.rev, self.opts.walk_limit)?);
        }
        Ok(self.ancestry.as_mut().expect("just set"))
    }

    /// The `n`th commit of the walk (the revision itself is the 0th) and its
    /// depth, walking only as far as that; `None` past the bound.
    fn nth_in_walk(&mut self, n: usize) -> Result<Option<(ObjectId, usize)>, FreshnessError> {
        if n == 0 {
            return Ok(Some((self.rev, 0)));
        }
        let store = self.store;
        let walk = self.walk()?;
        while walk.order.len() < n {
            if !store.ancestry_step(walk)? {
                return Ok(None);
            }
        }
        Ok(Some(walk.order[n - 1]))
    }

    /// The whole walk, every commit within the bound visited.
    fn ancestry(&mut self) -> Result<&Ancestry, FreshnessError> {
        let store = self.store;
        let walk = self.walk()?;
        store.ancestry_finish(walk)?;
        Ok(walk)
    }

    fn distance_of(&mut self, commit_hex: &str) -> Result<Option<usize>, FreshnessError> {
        let Ok(oid) = ObjectId::from_hex(commit_hex.as_bytes()) else {
            return Ok(None);
        };
        if oid == self.rev {
            return Ok(Some(0));
        }
        // walk until the commit is reached (its depth is known once it is
        // queued), or the bound is
        let store = self.store;
        let walk = self.walk()?;
        loop {
            if let Some(d) = walk.distance.get(&oid) {
                return Ok(Some(*d));
            }
            if !store.ancestry_step(walk)? {
                return Ok(None);
            }
        }
    }

    /// Where a tested commit that the bounded walk did not reach lies, in words:
    /// "not an ancestor" only when that is known, never for a commit beyond the
    /// walk's bound or outside a shallow clone's history.
    fn not_reached(&mut self, commit_hex: &str) -> Result<String, FreshnessError> {
        let limit = self.opts.walk_limit;
        let oid = ObjectId::from_hex(commit_hex.as_bytes()).ok();
        let here = oid.is_some_and(|o| self.store.has_object(o));
        let (truncated, shallow) = {
            let a = self.ancestry()?;
            (a.truncated, a.shallow_hit.is_some())
        };
        let Some(oid) = oid.filter(|_| here) else {
            return Ok(if shallow {
                "tested on a commit this shallow clone does not have".to_owned()
            } else {
                "tested on a commit this repository does not have".to_owned()
            });
        };
        if !truncated {
            // every ancestor available here was visited
            return Ok(if shallow {
                "tested on a commit that is not an ancestor within this shallow clone's history"
            } else {
                "tested on a commit that is not an ancestor"
            }
            .to_owned());
        }
        Ok(match self.store.merge_base_of(oid, self.rev) {
            Ok(Some(base)) if base == oid => {
                format!("tested more than {} commits back", group_thousands(limit))
            }
            Ok(_) => "tested on a commit that is not an ancestor".to_owned(),
            Err(_) => format!(
                "tested on a commit that is not among the {} nearest ancestors",
                group_thousands(limit)
            ),
        })
    }

    fn check(&mut self, def: &CheckDef) -> Result<CheckState, FreshnessError> {
        let spec = spec_in(self.contract, def);
        let definition = spec.definition();
        let inputs = self.store.inputs_tree(self.rev_tree, &def.paths, false)?;
        let inputs_hex = inputs.to_string();
        let mut untrusted = 0;
        let same_inputs = |s: &crate::receipt::Subject| s.inputs == inputs_hex;
        let same_definition = self.newest_trusted(
            Wanted {
                object: inputs,
                role: Role::Inputs,
                check: &def.name,
                definition: Some(&definition),
            },
            same_inputs,
            &mut untrusted,
        )?;
        let mut state = CheckState {
            name: def.name.clone(),
            required: def.required,
            state: State::Missing,
            decider: None,
            reason: String::new(),
            changed_paths: Vec::new(),
            untrusted,
            notices: Vec::new(),
        };
        // Rule 1: same inputs, same definition.
        if let Some(found) = same_definition {
            let b = found.receipt.body();
            let distance = self.distance_of(&b.subject.commit)?;
            let short = &b.subject.commit[..7];
            let where_ = match distance {
                Some(0) => "tested on this commit".to_owned(),
                Some(1) => "tested 1 commit back".to_owned(),
                Some(d) => format!("tested {d} commits back"),
                None => self.not_reached(&b.subject.commit)?,
            };
            if b.result.passed {
                state.state = State::Present;
                let here = self.rev.to_hex_with_len(7);
                state.reason = if b.subject.dirty {
                    // what was tested was the work tree on that commit, not its inputs
                    format!(
                        "present: uncommitted changes on {short} were tested, identical to {here}'s inputs ({where_})"
                    )
                } else if distance == Some(0) {
                    format!("present: passed on {short} ({where_})")
                } else {
                    format!("present: inputs identical to {short} ({where_})")
                };
            } else {
                state.state = State::Failed;
                state.reason = if b.result.detail.is_empty() {
                    format!(
                        "failed: exit {} at {} on {short}",
                        b.result.exit_code, b.result.started_at
                    )
                } else {
                    format!(
                        "failed: {} at {} on {short}",
                        b.result.detail, b.result.started_at
                    )
                };
            }
            // A pass that took longer than the check's timeout now allows would
            // have been killed under it: `timeout` is not part of the definition
            // (lowering it must not invalidate quick runs), so it is checked here.
            if let Some(limit) = def.timeout
                && b.result.passed
                && u128::from(b.result.duration_ms) > limit.as_millis()
            {
                state.state = State::Stale;
                state.reason = format!(
                    "stale: the pass on {short} took {}, longer than timeout = {} allows now",
                    seconds(u128::from(b.result.duration_ms)),
                    seconds(limit.as_millis())
                );
            }
            // Rule 5: the sibling repositories it was tested with, resolved again
            // from the same local clones.
            if let Some(moved) = self.dependencies_moved(&spec, b)? {
                state.state = State::Stale;
                state.reason = format!("stale: {moved}");
            }
            state.decider = Some(Decider {
                receipt: found.receipt,
                writer: found.writer,
                distance,
            });
            return Ok(state);
        }
        // Rule 3: same inputs, but the check was defined differently then.
        let any_definition = self.newest_trusted(
            Wanted {
                object: inputs,
                role: Role::Inputs,
                check: &def.name,
                definition: None,
            },
            same_inputs,
            &mut 0,
        )?;
        if let Some(found) = any_definition {
            let b = found.receipt.body();
            let distance = self.distance_of(&b.subject.commit)?;
            state.state = State::Stale;
            state.reason = if b.subject.dirty {
                format!(
                    "stale: run on {} with an uncommitted definition of check {:?}, not the one here (`run`, `path` or `env` differ)",
                    &b.subject.commit[..7],
                    def.name
                )
            } else {
                format!(
                    "stale: definition changed since {} (`run`, `path` or `env` of check {:?} edited)",
                    &b.subject.commit[..7],
                    def.name
                )
            };
            state.decider = Some(Decider {
                receipt: found.receipt,
                writer: found.writer,
                distance,
            });
            return Ok(state);
        }
        // Rule 2: the nearest ancestor with a trusted receipt for this check. H itself
        // comes first: a receipt on H whose inputs are not I covered uncommitted
        // changes, and H is stale against it rather than missing.
        // The walk goes only as far as the nearest such commit.
        let mut nth = 0;
        while let Some((commit, distance)) = self.nth_in_walk(nth)? {
            nth += 1;
            let hex = commit.to_string();
            let found = self.newest_trusted(
                Wanted {
                    object: commit,
                    role: Role::Subject,
                    check: &def.name,
                    definition: None,
                },
                |s| s.commit == hex,
                &mut 0,
            )?;
            let Some(f) = found else { continue };
            let b = f.receipt.body();
            // Compare with what was tested: the receipt's inputs tree when this
            // repository has it (a dirty run's tree is never pushed), else the commit's.
            let tested = ObjectId::from_hex(b.subject.inputs.as_bytes())
                .ok()
                .filter(|t| self.store.has_object(*t));
            let old_tree = match tested {
                Some(t) => t,
                None => self.store.commit_tree(commit)?,
            };
            let changed = self
                .store
                .changed_paths(old_tree, self.rev_tree, &def.paths)?;
            let back = match distance {
                0 => "this commit".to_owned(),
                1 => "1 commit back".to_owned(),
                d => format!("{d} commits back"),
            };
            let dirty = if b.subject.dirty {
                ", tested with uncommitted changes"
            } else {
                ""
            };
            state.state = State::Stale;
            state.reason = if b.check.definition != definition && b.subject.dirty {
                format!(
                    "stale: run on {} ({back}) with uncommitted changes and another definition of the check",
                    &hex[..7]
                )
            } else if b.check.definition != definition {
                format!("stale: definition changed since {} ({back})", &hex[..7])
            } else if changed.is_empty() {
                format!(
                    "stale: inputs differ from {} ({back}){}",
                    &hex[..7],
                    if b.subject.dirty {
                        ", whose receipt covered uncommitted changes"
                    } else {
                        ""
                    }
                )
            } else if b.subject.dirty {
                format!(
                    "stale: {} differ from what was tested on {} ({back}, with uncommitted changes)",
                    list_paths(&changed),
                    &hex[..7]
                )
            } else {
                format!(
                    "stale: {} changed since {} ({back}{dirty})",
                    list_paths(&changed),
                    &hex[..7]
                )
            };
            state.changed_paths = changed;
            state.decider = Some(Decider {
                receipt: f.receipt,
                writer: f.writer,
                distance: Some(distance),
            });
            return Ok(state);
        }
        if let Some(boundary) = self.ancestry()?.shallow_hit {
            // receipts of exactly these inputs, none by a trusted key: deeper
            // history would only turn this into missing, trust is what is lacking
            if state.untrusted > 0 {
                return Err(FreshnessError::ShallowUntrusted {
                    boundary,
                    check: def.name.clone(),
                    untrusted: state.untrusted,
                });
            }
            return Err(FreshnessError::Shallow {
                boundary,
                check: def.name.clone(),
            });
        }
        state.reason = if self.ancestry()?.order.is_empty() {
            "missing: no receipt for this commit, which has no parent to inherit one from"
                .to_owned()
        } else {
            format!(
                "missing: no receipt within {} ancestors",
                group_thousands(self.opts.walk_limit)
            )
        };
        Ok(state)
    }
}

/// Milliseconds as seconds for a reason: `12.3s`, `5s`.
fn seconds(ms: u128) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        let fraction = format!("{:03}", ms % 1000);
        format!("{}.{}s", ms / 1000, fraction.trim_end_matches('0'))
    }
}

fn group_thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The lazy walk of the ancestors of `rev`, at most `limit` deep (see
/// [`Ancestry`] for what depth is), using the commit-graph when present; it notes
/// whether a shallow boundary was reached. The one walk of checks (rule 2) and
/// reviews (the review walk of the `decision` module).
pub(crate) fn walk_ancestry(
    store: &Store,
    rev: ObjectId,
    limit: usize,
) -> Result<Ancestry, FreshnessError> {
    Ok(store.ancestry(rev, limit)?)
}

/// What an index hit turned out to be when opened: the one way every decision
/// turns a hit into a candidate. The index only says where to look; the receipt
/// is read from its chain, must name that chain's writer, and is then checked by
/// [`TrustSet::check`] (the caller's job, after its own filters on the body).
#[allow(clippy::large_enum_variant)] // made and taken apart at once, never stored
pub enum Candidate {
    /// No trusted key could have written the chain (its writer id names none).
    NoTrustedWriter,
    /// The chain entry does not parse, or names another writer: nothing.
    Unusable,
    /// The receipt, not yet checked, and its chain's writer.
    Open {
        /// The chain's writer, which the receipt names.
        writer: String,
        /// The receipt, its signature and trust not yet checked.
        receipt: Receipt<Unverified>,
    },
}

/// Open what index record `rec` points at (see [`Candidate`]).
pub fn open_candidate(
    store: &Store,
    index: &Index,
    trust: &TrustSet,
    rec: &crate::store::index::Record,
) -> Candidate {
    let writer = index.writer(rec.chain);
    if !trust.may_sign_as(writer) {
        return Candidate::NoTrustedWriter;
    }
    let writer = writer.to_owned();
    match store.chain_entry(&writer, rec.commit) {
        Ok(entry) if entry.receipt.body().chain.writer == writer => Candidate::Open {
            writer,
            receipt: entry.receipt,
        },
        _ => Candidate::Unusable,
    }
}

#[cfg(test)]
pub(crate) mod rules;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::{Review, Subject, Verdict, writer_id};
    use crate::sign::SigningKey;
    use crate::store::index::{ChainInfo, Record};
    use crate::trust::TrustOrigin;

    /// A repository made by stock git in a temporary directory.
    fn scratch_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let st = std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(st.success());
        let store = Store::open(dir.path()).unwrap();
        (dir, store)
    }

    /// A review receipt appended to `writer`'s chain: its chain commit.
    fn append_review(store: &Store, writer: &str, key: &SigningKey) -> ObjectId {
        let subject = Subject {
            commit: "11".repeat(20),
            tree: "22".repeat(20),
            inputs: "22".repeat(20),
            dirty: false,
            dependencies: Vec::new(),
        };
        let review = Review {
            name: "code".into(),
            paths: Vec::new(),
            verdict: Verdict::Approve,
            message: String::new(),
            decided_at: crate::receipt::format_timestamp(crate::clock::now_ms()),
            accepts: None,
        };
        crate::decision::append_decision(
            store,
            writer,
            key,
            subject,
            crate::decision::Payload::Review(review),
        )
        .unwrap()
        .commit
    }

    fn record(commit: ObjectId, chain: u32) -> Record {
        Record::decision_at(commit, chain)
    }

    /// The writer guard of every decision: a receipt read through an index
    /// record of another chain (the same key may write several) counts for
    /// nothing, though its signature and key are good.
    #[test]
    fn a_candidate_must_name_the_chain_it_is_read_from() {
        let (_dir, store) = scratch_store();
        let key = SigningKey::from_seed(&[3; 32]);
        let laptop = writer_id(key.public(), "laptop");
        let ci = writer_id(key.public(), "ci");
        let stranger = writer_id(SigningKey::from_seed(&[4; 32]).public(), "laptop");
        let commit = append_review(&store, &laptop, &key);
        let index = Index::of_chains(
            [&laptop, &ci, &stranger]
                .into_iter()
                .map(|w| ChainInfo {
                    writer: w.clone(),
                    tip: commit,
                    count: 1,
                })
                .collect(),
        );
        let chain = |w: &str| index.chains().iter().position(|c| c.writer == w).unwrap() as u32;
        let mut trust = TrustSet::default();
        trust.add(key.public().clone(), TrustOrigin::OwnKey);
        assert!(trust.may_sign_as(&ci), "the key may write chain ci too");
        match open_candidate(&store, &index, &trust, &record(commit, chain(&laptop))) {
            Candidate::Open { writer, receipt } => {
                assert_eq!(writer, laptop);
                assert_eq!(receipt.body().chain.writer, laptop);
            }
            _ => panic!("its own chain's receipt opens"),
        }
        assert!(
            matches!(
                open_candidate(&store, &index, &trust, &record(commit, chain(&ci))),
                Candidate::Unusable
            ),
            "a receipt of chain laptop read as chain ci's counts for nothing"
        );
        assert!(matches!(
            open_candidate(&store, &index, &trust, &record(commit, chain(&stranger))),
            Candidate::NoTrustedWriter
        ));
        assert!(matches!(
            open_candidate(
                &store,
                &index,
                &TrustSet::default(),
                &record(commit, chain(&laptop))
            ),
            Candidate::NoTrustedWriter
        ));
        // a record that points at no receipt
        let tree_commit = store.commit_tree(commit).unwrap();
        assert!(matches!(
            open_candidate(&store, &index, &trust, &record(tree_commit, chain(&laptop))),
            Candidate::Unusable
        ));
    }

    /// What a receipt records of a check: `run`, `path` and `env`, and from the
    /// contract its assertions and dependencies, each in the definition digest,
    /// so that editing any one makes old receipts stale.
    #[test]
    fn the_spec_holds_every_part_of_the_definition() {
        let parse = |text: &str| {
            Contract::parse(text.as_bytes(), std::path::Path::new(".gitreceipts")).unwrap()
        };
        let digest = |text: &str| {
            let c = parse(text);
            spec_in(&c, c.check("t").unwrap()).definition()
        };
        let full = "[assert \"git\"]\n\trun = git --version\n\texpect = git*\n[dependency \"proto\"]\n\tpath = ../proto\n\tref = main\n\tpaths = schema\n[check \"t\"]\n\trun = true\n\tpath = src\n\tenv = RUSTFLAGS\n\tassert = git\n\tdepends = proto\n";
        let c = parse(full);
        let def = c.check("t").unwrap();
        let spec = spec_in(&c, def);
        assert_eq!(spec.name, "t");
        assert_eq!(spec.argv, def.argv());
        assert_eq!(spec.paths, vec!["src".to_owned()]);
        assert_eq!(spec.env, vec!["RUSTFLAGS".to_owned()]);
        assert_eq!(spec.assertions.len(), 1);
        assert_eq!(spec.dependencies.len(), 1);
        assert_eq!(spec.dependencies[0].name, "proto");
        let with = digest(full);
        for without in [
            full.replace("\tenv = RUSTFLAGS\n", ""),
            full.replace("\tassert = git\n", ""),
            full.replace("\tdepends = proto\n", ""),
            full.replace("\tpath = src\n", "\tpath = docs\n"),
            full.replace("\trun = true\n", "\trun = false\n"),
        ] {
            assert_ne!(digest(&without), with, "{without}");
        }
    }

    #[test]
    fn the_spec_carries_how_a_run_is_read_and_what_it_produces() {
        let text = "[check \"t\"]\n\trun = true\n\tresults = junit:out.xml\n\tmetric = p99 ms lower ^p99: ([0-9.]+)\n\tartifact = dist/*.tar.gz\n";
        let c = Contract::parse(text.as_bytes(), std::path::Path::new(".gitreceipts")).unwrap();
        let def = c.check("t").unwrap();
        let spec = spec_of(def);
        assert_eq!(spec.results, def.results);
        assert!(spec.results.is_some());
        assert_eq!(spec.metrics, def.metrics);
        assert_eq!(spec.metrics.len(), 1);
        assert_eq!(spec.artifacts, ["dist/*.tar.gz"]);
    }

    #[test]
    fn what_accept_passed_over_is_said_only_when_something_was() {
        let key = crate::sign::SigningKey::from_seed(&[3; 32]);
        let contract = Contract::parse(
            format!(
                "[signer \"ci\"]\n\tkey = {}\n\tobserver = true\n",
                key.public().to_openssh()
            )
            .as_bytes(),
            std::path::Path::new(".gitreceipts"),
        )
        .unwrap();
        let mut trust = TrustSet::default();
        trust.add_contract(contract);
        let ci = vec!["ci".to_owned()];
        let observers = trust.observer_keys(&ci);
        assert!(!observers.is_empty());
        let run_by = Accept::RunBy(ci);
        let none = crate::trust::Observers::default();
        assert_eq!(ignored_words(&Accept::Run, &none, 0, 0), "");
        assert_eq!(
            ignored_words(&Accept::Run, &none, 2, 0),
            " (2 recorded receipts ignored: accept = run counts only observed runs)"
        );
        assert_eq!(ignored_words(&run_by, &observers, 0, 0), "");
        assert_eq!(
            ignored_words(&run_by, &observers, 1, 1),
            " (1 recorded receipt and 1 run by another signer ignored: accept = run-by:ci counts only runs signed by an observer it names)"
        );
        assert_eq!(
            ignored_words(&run_by, &observers, 0, 2),
            " (2 runs by other signers ignored: accept = run-by:ci counts only runs signed by an observer it names)"
        );
        assert_eq!(
            ignored_words(&run_by, &observers, 2, 0),
            " (2 recorded receipts ignored: accept = run-by:ci counts only runs signed by an observer it names)"
        );
        assert!(ignored_words(&run_by, &none, 0, 0).contains("names no signer"));
        // a name the trusted rules declare no observer by: a notice only while
        // another name still counts (with none, the check's reason says it)
        let notice = |names: &[&str]| {
            let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            undeclared_observers_notice(&Accept::RunBy(names.clone()), &trust.observer_keys(&names))
        };
        assert_eq!(
            notice(&["ci", "ghost"]).as_deref(),
            Some(
                "accept = run-by:ci,ghost: the trusted .gitreceipts declares no observer named ghost, so only the others' runs count"
            )
        );
        assert_eq!(notice(&["ci"]), None);
        assert_eq!(notice(&["ghost"]), None);
    }

    #[test]
    fn paths_are_listed_briefly() {
        let p: Vec<String> = (1..=7).map(|i| format!("src/f{i}.rs")).collect();
        assert_eq!(list_paths(&p[..2]), "src/f1.rs, src/f2.rs");
        assert_eq!(
            list_paths(&p),
            "src/f1.rs, src/f2.rs, src/f3.rs, src/f4.rs, src/f5.rs and 2 more"
        );
        assert_eq!(group_thousands(1000), "1,000");
        assert_eq!(group_thousands(20), "20");
        assert_eq!(group_thousands(1234567), "1,234,567");
    }
}
