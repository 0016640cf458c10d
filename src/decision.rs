//! Decisions as receipts: acceptances and reviews (format v3, `docs/format.md`).
//!
//! A check receipt is an observation; an **acceptance** is a signed gate decision
//! that cites, for each required check and review, the receipts that decided it,
//! and a **review** is a person's signed verdict on the inputs of a revision's
//! reviewed paths. Both sit on their writer's chain like check receipts, travel
//! with it, and are found through the receipt index under names no check can
//! have ([`decision_key`]). As everywhere, the index only proposes candidates:
//! every one is opened from its chain, its signature and trust checked, and only
//! its signed body decides. Notes never show or decide a decision.
//!
//! The author of a revision, whom `self-approve = false` keeps from approving it,
//! is known by a key, never by an e-mail: the Ed25519 key that made the commit's
//! SSH signature (`gpg.format = ssh`), verified strictly over the signed commit,
//! and only when the trust set holds that key unrevoked (anyone can sign a commit
//! with a throwaway key). A commit without such a signature has no known author,
//! so no approval of it can be told from a self-approval and, with
//! `self-approve = false`, none counts.

use std::collections::{BTreeMap, HashSet};

use gix::ObjectId;

use crate::contract::ReviewDef;
use crate::freshness::{Candidate, FreshnessError, State, open_candidate};
use crate::receipt::{
    Acceptance, Body, Chain, CriterionKind, Kind, Receipt, Review, Runner, SCHEMA_V3, Subject,
    Verdict, Verified,
};
use crate::sign::{PublicKey, SigningKey};
use crate::store::chain::Appended;
use std::sync::Arc;

use crate::store::index::{DecisionKind, Index, Role, check_hash, decision_key};
use crate::store::{Store, StoreError};
use crate::trust::TrustSet;

/// What a decision receipt carries besides its subject.
#[derive(Debug, Clone)]
pub enum Payload {
    /// A gate decision.
    Acceptance(Acceptance),
    /// A reviewer's verdict.
    Review(Review),
}

/// Sign `payload` about `subject` and append it to `writer`'s chain.
pub fn append_decision(
    store: &Store,
    writer: &str,
    key: &SigningKey,
    subject: Subject,
    payload: Payload,
) -> Result<Appended, StoreError> {
    let runner = Runner {
        tool: format!("git-receipt {}", env!("CARGO_PKG_VERSION")),
        host: crate::host_name(),
        os: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
    };
    // an accepted regression is the one decision of v4
    let schema = match &payload {
        Payload::Review(r) if r.accepts.is_some() => crate::receipt::SCHEMA_V4,
        _ => SCHEMA_V3,
    };
    let (kind, acceptance, review) = match payload {
        Payload::Acceptance(a) => (Kind::Acceptance, Some(a), None),
        Payload::Review(r) => (Kind::Review, None, Some(r)),
    };
    store.append(writer, key, &[], |index, prev| Body {
        schema: schema.into(),
        kind,
        chain: Chain {
            writer: writer.to_owned(),
            index,
            prev,
        },
        subject: subject.clone(),
        check: Default::default(),
        result: Default::default(),
        acceptance: acceptance.clone(),
        review: review.clone(),
        runner: runner.clone(),
        supersedes: None,
    })
}

/// Let the trusted accepted regressions of `receipt`'s check accept what they
/// name in `c`: each must be signed by a key of `trust`, approve exactly the
/// inputs tree and definition `receipt` records, and (when `until_ms` is given,
/// as `verify` gives an acceptance's `decided_at`) have been decided by then.
/// Newest first, as every decision is read; a notice of a future-dated one
/// goes to `notices`. `label` names a signer by fingerprint. Unless
/// `self_accept` (the check's `self-accept = true`), one signed by the key that
/// signed `receipt` counts for nothing, and a notice says so.
#[allow(clippy::too_many_arguments)]
pub fn accept_regressions(
    store: &Store,
    trust: &TrustSet,
    receipt: &Receipt<Verified>,
    c: &mut crate::parity::Comparison,
    until_ms: Option<u64>,
    self_accept: bool,
    label: &dyn Fn(&str) -> String,
    notices: &mut Vec<String>,
) -> Result<(), StoreError> {
    let b = receipt.body();
    let Ok(inputs) = ObjectId::from_hex(b.subject.inputs.as_bytes()) else {
        return Ok(());
    };
    let mut index = store.receipt_index()?;
    let found = trusted_decisions(
        store,
        &mut index,
        trust,
        (inputs, Role::Inputs),
        (DecisionKind::Regression, &b.check.name),
        // mutants: `r.verdict == Verdict::Approve` is equivalent when mutated
        // (`!=`, or `&&` to `||` around it): the reader refuses a review that
        // accepts anything unless it approves (receipt.rs, validate_accepts),
        // so every body reaching here approves; it says what counts.
        |d| {
            d.subject.inputs == b.subject.inputs
                && d.review.as_ref().is_some_and(|r| {
                    r.name == b.check.name
                        && r.verdict == Verdict::Approve
                        && r.accepts
                            .as_ref()
                            .is_some_and(|a| a.definition == b.check.definition)
                        && until_ms.is_none_or(|until| {
                            crate::clock::timestamp_ms(&r.decided_at).is_some_and(|at| at <= until)
                        })
                })
        },
        &mut 0,
        notices,
    )?;
    for f in found {
        let Some(a) = f
            .receipt
            .body()
            .review
            .as_ref()
            .and_then(|r| r.accepts.as_ref())
        else {
            continue;
        };
        let by = format!(
            "{} ({})",
            label(&f.receipt.signature().key),
            f.receipt.id().get(..19).unwrap_or(f.receipt.id())
        );
        if !self_accept && f.receipt.signature().key == receipt.signature().key {
            // said only when it would have accepted something here
            if c.clone().accept(&a.tests, &a.metrics, String::new()) {
                notices.push(format!(
                "the accepted regression {by} counts for nothing: its signer also signed the receipt that regressed ({}); another trusted signer must accept it, or the check must say self-accept = true",
                receipt.id().get(..19).unwrap_or(receipt.id())
            ));
            }
            continue;
        }
        c.accept(&a.tests, &a.metrics, by);
    }
    Ok(())
}

/// A decision receipt found for an object and counted: opened, trusted, its body
/// matching what was asked.
#[derive(Debug, Clone)]
pub struct FoundDecision {
    /// The verified receipt.
    pub receipt: Receipt<Verified>,
    /// Its writer.
    pub writer: String,
}

/// Every trusted decision receipt of `kind` and `name` the index names for
/// `object` in `role`, whose signed body `keep` accepts, newest first: within one
/// chain by position, across chains by `decided_at`
/// ([`crate::clock::sort_newest_first`]). Candidates that do not open, do not
/// verify or are not trusted count for nothing; their number is added to
/// `untrusted`. A trusted one decided later than the clock plus its skew counts
/// for nothing too, and adds a notice to `notices` (once per receipt). `index` is
/// the store's receipt index (one per command: bringing it up to date reads every
/// chain tip).
#[allow(clippy::too_many_arguments)]
pub fn trusted_decisions(
    store: &Store,
    index: &mut Arc<Index>,
    trust: &TrustSet,
    (object, role): (ObjectId, Role),
    (kind, name): (DecisionKind, &str),
    keep: impl Fn(&Body) -> bool,
    untrusted: &mut usize,
    notices: &mut Vec<String>,
) -> Result<Vec<FoundDecision>, StoreError> {
    let hits = store.index_lookup(index, &object)?;
    // most commits of a walk have none: the clock and config are not read
    if hits.is_empty() {
        return Ok(Vec::new());
    }
    let horizon = store.horizon();
    let want = check_hash(&decision_key(kind, name));
    let body_kind = match kind {
        DecisionKind::Acceptance => Kind::Acceptance,
        DecisionKind::Review | DecisionKind::Regression => Kind::Review,
    };
    // a review and an accepted regression of the same name are keyed apart;
    // the body says which it is, whatever an index file claims
    let regression = kind == DecisionKind::Regression;
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for hit in hits {
        // mutants: `&&` for the second `||` (`A || B && C`: the check filter and
        // the dedup only together) is equivalent. A record of another key (B) is
        // another decision kind, or a review of another name, and the kind and
        // `keep` re-checks below refuse it (every caller's `keep` names the
        // review, acceptances all share one key); and an index built from the
        // chains holds each entry once per (object, role), since an entry's
        // commit names one writer (admit.rs, rule 4), so `seen` never meets a
        // commit twice there. It guards an index file that lies, which no unit
        // test can forge past its seal. `&&` for the first `||` is killed by
        // `reviews_a_verdict_is_found_only_in_the_role_it_signed`.
        if hit.role != role || hit.record.check != want || !seen.insert(hit.record.commit) {
            continue;
        }
        let (writer, receipt) = match open_candidate(store, index, trust, &hit.record) {
            Candidate::NoTrustedWriter => {
                *untrusted += 1;
                continue;
            }
            Candidate::Unusable => continue,
            Candidate::Open { writer, receipt } => (writer, receipt),
        };
        let b = receipt.body();
        let accepts = b.review.as_ref().is_some_and(|r| r.accepts.is_some());
        // mutants: `!=` for `body_kind == Kind::Review` is equivalent. In an
        // acceptance lookup the first term already skips every review. In a
        // review or regression lookup it drops the plain/regression test, which
        // only a body under a colliding key could reach: a plain review of name
        // N found under `regression:M`, or a regression of N under `review:M`.
        // Every caller's `keep` holds the name to M (and a regression lookup's
        // to `accepts`), so N = M, and `review:M` never hashes as `regression:M`:
        // each FNV-1a step (xor a byte, multiply by an odd prime) is a bijection
        // of the state, so two prefixes that leave different states stay apart
        // through the same name. The first `||` (`&&`) is killed by
        // `acceptances_a_review_under_a_key_that_collides_with_acceptances_is_not_one`.
        if b.kind != body_kind || (body_kind == Kind::Review && accepts != regression) || !keep(b) {
            continue;
        }
        match trust.check(receipt) {
            Ok((receipt, _)) => {
                if let Some(notice) = crate::clock::future_notice(
                    receipt.id(),
                    "was decided",
                    receipt.body().time(),
                    horizon,
                ) {
                    if !notices.contains(&notice) {
                        notices.push(notice);
                    }
                    continue;
                }
                out.push(FoundDecision { receipt, writer })
            }
            Err(_) => *untrusted += 1,
        }
    }
    crate::clock::sort_newest_first(&mut out, horizon.limit_ms(), |f| {
        let b = f.receipt.body();
        (
            f.writer.clone(),
            b.chain.index,
            crate::clock::timestamp_ms(b.time()).unwrap_or(0),
        )
    });
    Ok(out)
}

/// The newest trusted acceptance of exactly `commit`'s tree signed by one of
/// `keys` (OpenSSH fingerprints), accepted or rejected; `None` when there is none.
/// Acceptances ignored for being dated in the future add a notice to `notices`.
pub fn newest_acceptance(
    store: &Store,
    index: &mut Arc<Index>,
    trust: &TrustSet,
    tree: ObjectId,
    keys: &[String],
    notices: &mut Vec<String>,
) -> Result<Option<FoundDecision>, StoreError> {
    let tree_hex = tree.to_string();
    let mut untrusted = 0;
    let found = trusted_decisions(
        store,
        index,
        trust,
        (tree, Role::Inputs),
        (DecisionKind::Acceptance, ""),
        |b| b.subject.tree == tree_hex && b.subject.inputs == tree_hex,
        &mut untrusted,
        notices,
    )?;
    Ok(found
        .into_iter()
        .find(|f| keys.contains(&f.receipt.signature().key)))
}

/// The fingerprints of the trusted keys `signer` names: a `[signer]` name or an
/// OpenSSH fingerprint. (No trust set a decision is read with holds
/// allowed_signers entries: only `verify --allowed-signers` builds one, and it
/// looks no signer up by name.)
pub fn signer_keys(trust: &TrustSet, signer: &str) -> Vec<String> {
    use crate::trust::TrustOrigin;
    let named = trust.fingerprints_named(signer);
    let mut out: Vec<String> = trust
        .keys()
        .map(|t| (t, t.key.fingerprint()))
        .filter(|(t, fp)| {
            fp == signer
                || named.contains(fp)
                || matches!(&t.origin, TrustOrigin::Contract(name) if name == signer)
        })
        .map(|(_, fp)| fp)
        .collect();
    out.dedup();
    out
}

/// The key that made `commit`'s SSH signature (git's `gpgsig` header with
/// `gpg.format = ssh`), verified strictly over the signed commit in namespace
/// `git`; `None` for an unsigned commit or a signature that does not verify.
pub fn commit_signer(store: &Store, commit: ObjectId) -> Option<PublicKey> {
    let signature = store.commit_signature(commit)?;
    let sig = ssh_key::SshSig::from_pem(&signature.armored).ok()?;
    if sig.namespace() != "git" {
        return None;
    }
    let ssh_key::public::KeyData::Ed25519(key) = sig.public_key() else {
        return None;
    };
    let data = ssh_key::SshSig::signed_data("git", sig.hash_alg(), &signature.signed).ok()?;
    crate::sign::verify_raw_strict(&key.0, &data, sig.signature_bytes()).ok()?;
    PublicKey::from_bytes(&key.0).ok()
}

/// Who wrote a commit, as far as `self-approve = false` can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Author {
    /// Signed by this trusted key (fingerprint).
    Known(String),
    /// No SSH signature that verifies.
    Unsigned,
    /// Signed by a key (fingerprint) the trust set does not hold, or holds revoked.
    Untrusted(String),
}

impl Author {
    /// Why no approval of `commit` can count under `self-approve = false`, if none can.
    pub fn unknown_reason(&self, commit: ObjectId) -> Option<String> {
        let c = commit.to_hex_with_len(7).to_string();
        match self {
            Author::Known(_) => None,
            Author::Unsigned => Some(unknown_author_words(&c, None)),
            Author::Untrusted(fp) => Some(unknown_author_words(&c, Some(fp))),
        }
    }

    /// The key that signed the commit when it is not a trusted one.
    pub fn untrusted_signer(&self) -> Option<&str> {
        match self {
            Author::Untrusted(fp) => Some(fp),
            _ => None,
        }
    }
}

/// Why no approval of commit `short` can count under `self-approve = false`: it
/// has no verified SSH signature (`signed_by` None) or one by that untrusted key.
pub fn unknown_author_words(short: &str, signed_by: Option<&str>) -> String {
    match signed_by {
        None => format!(
            "commit {short} has no verified SSH signature, so its author is unknown and no approval can be told from a self-approval (self-approve = false)"
        ),
        Some(fp) => format!(
            "commit {short} is signed by {fp}, an untrusted key, so its author is unknown and no approval can be told from a self-approval (self-approve = false)"
        ),
    }
}

/// The author of `commit`: known only through an SSH signature ([`commit_signer`])
/// by a key `trust` holds and has not revoked.
pub fn commit_author(store: &Store, trust: &TrustSet, commit: ObjectId) -> Author {
    match commit_signer(store, commit) {
        None => Author::Unsigned,
        Some(key) => {
            let fp = key.fingerprint();
            match trust.lookup(&fp) {
                Some(t) if !t.revoked => Author::Known(fp),
                _ => Author::Untrusted(fp),
            }
        }
    }
}

/// One review's state at a revision, with the receipts behind it.
#[derive(Debug, Clone)]
pub struct ReviewState {
    /// The review's name.
    pub name: String,
    /// Distinct approvals needed.
    pub required: u32,
    /// Present, failed, stale or missing.
    pub state: State,
    /// The reason in words (names unescaped).
    pub reason: String,
    /// The inputs tree of the review's paths at the revision.
    pub inputs: ObjectId,
    /// The approvals that count: (signer fingerprint, receipt id), by fingerprint.
    pub approvals: Vec<(String, String)>,
    /// The newest counted receipt (an approval, or the rejection that failed it).
    pub decider: Option<FoundDecision>,
    /// Candidates that did not count for want of a trusted signature.
    pub untrusted: usize,
    /// Verdicts ignored for being dated in the future, in words (strings from
    /// receipts: escape before printing).
    pub notices: Vec<String>,
    /// The revision's author as `self-approve = false` tells it (None with
    /// `self-approve = true`, where the author does not matter): when unknown,
    /// no approval can count here.
    pub author: Option<Author>,
}

/// How a signer is called in a reason: its `[signer]` name or its fingerprint.
pub type SignerLabel<'a> = &'a dyn Fn(&str) -> String;

/// The state of review `def` at `commit` (tree `tree`): present with `required`
/// distinct trusted approvers of these inputs and no rejection; failed when a
/// trusted reviewer's newest verdict on them rejects; stale when only older inputs
/// (an ancestor's, within `walk_limit`) were approved; missing otherwise. A signer
/// counts once, by key, with its newest verdict; the author (see the module doc)
/// counts only with `self-approve = true`. A walk that reaches a shallow
/// boundary before an approval cannot tell stale from missing:
/// [`FreshnessError::ShallowReview`].
pub fn review_state(
    store: &Store,
    trust: &TrustSet,
    commit: ObjectId,
    tree: ObjectId,
    def: &ReviewDef,
    walk_limit: usize,
    label: SignerLabel<'_>,
) -> Result<ReviewState, FreshnessError> {
    let inputs = store.inputs_tree(tree, &def.paths, false)?;
    let inputs_hex = inputs.to_string();
    let mut untrusted = 0;
    let mut notices = Vec::new();
    let same_review = |b: &Body| b.review.as_ref().is_some_and(|r| r.name == def.name);
    let found = trusted_decisions(
        store,
        &mut store.receipt_index()?,
        trust,
        (inputs, Role::Inputs),
        (DecisionKind::Review, &def.name),
        // an approval counts only for the paths it signed: the same inputs tree
        // under other paths (two paths that match nothing) is another review
        |b| {
            same_review(b)
                && b.subject.inputs == inputs_hex
                && b.review.as_ref().is_some_and(|r| r.paths == def.paths)
        },
        &mut untrusted,
        &mut notices,
    )?;
    // newest verdict per signer (found is newest first)
    let mut newest: BTreeMap<String, FoundDecision> = BTreeMap::new();
    for f in found {
        newest.entry(f.receipt.signature().key.clone()).or_insert(f);
    }
    let author = if def.self_approve {
        None
    } else {
        Some(commit_author(store, trust, commit))
    };
    let verdict = |f: &FoundDecision| f.receipt.body().review.as_ref().map(|r| r.verdict);
    let mut state = ReviewState {
        name: def.name.clone(),
        required: def.required,
        state: State::Missing,
        reason: String::new(),
        inputs,
        approvals: Vec::new(),
        decider: None,
        untrusted,
        notices,
        author: author.clone(),
    };
    if let Some((fp, f)) = newest
        .iter()
        .find(|(_, f)| verdict(f) == Some(Verdict::Reject))
    {
        let message = f
            .receipt
            .body()
            .review
            .as_ref()
            .map(|r| r.message.clone())
            .unwrap_or_default();
        state.state = State::Failed;
        state.reason = format!(
            "failed: rejected by {}{}",
            label(fp),
            if message.is_empty() {
                String::new()
            } else {
                format!(": {message}")
            }
        );
        state.decider = Some(f.clone());
        return Ok(state);
    }
    let mut self_approved = false;
    let mut approvers = Vec::new();
    for (fp, f) in &newest {
        if verdict(f) != Some(Verdict::Approve) {
            continue;
        }
        match &author {
            Some(Author::Known(a)) if a == fp => {
                self_approved = true;
                continue;
            }
            // author unknown: cannot rule out a self-approval
            Some(Author::Unsigned | Author::Untrusted(_)) => continue,
            _ => {}
        }
        approvers.push(label(fp));
        state
            .approvals
            .push((fp.clone(), f.receipt.id().to_owned()));
        if state
            .decider
            .as_ref()
            .is_none_or(|d| d.receipt.body().time() < f.receipt.body().time())
        {
            state.decider = Some(f.clone());
        }
    }
    let have = state.approvals.len() as u32;
    if have >= def.required.max(1) {
        state.state = State::Present;
        state.reason = format!("present: approved by {}", approvers.join(", "));
        return Ok(state);
    }
    let mut why = Vec::new();
    if have > 0 {
        why.push(format!(
            "{have} of {} approvals (by {})",
            def.required,
            approvers.join(", ")
        ));
    }
    if self_approved {
        why.push("the author's own approval does not count (self-approve = false)".to_owned());
    }
    if let Some(unknown) = author.as_ref().and_then(|a| a.unknown_reason(commit))
        && !newest.is_empty()
    {
        why.push(unknown);
    }
    // Stale: no verdict on these inputs, but an ancestor (or this commit, with
    // other paths) has a trusted approval. Verdicts here that do not count keep
    // it missing, with their reason.
    if !newest.is_empty() {
        state.reason = format!("missing: {}", why.join("; "));
        return Ok(state);
    }
    // the same bounded walk as a check's rule 2, this commit first; one that
    // reaches a shallow boundary first cannot tell stale from missing
    // lazily: the walk goes only as far as the nearest approved commit
    let mut ancestry = crate::freshness::walk_ancestry(store, commit, walk_limit)?;
    let mut index = store.receipt_index()?;
    let mut seen = 0;
    while store.ancestry_step(&mut ancestry)? {
        let at = if seen == 0 {
            commit
        } else {
            ancestry.order[seen - 1].0
        };
        seen += 1;
        let mut n = 0;
        let older = trusted_decisions(
            store,
            &mut index,
            trust,
            (at, Role::Subject),
            (DecisionKind::Review, &def.name),
            |b| {
                same_review(b)
                    && b.subject.inputs != inputs_hex
                    && b.review.as_ref().map(|r| r.verdict) == Some(Verdict::Approve)
            },
            &mut n,
            &mut state.notices,
        )?;
        if let Some(f) = older.into_iter().next() {
            state.state = State::Stale;
            let b = f.receipt.body();
            why.insert(
                0,
                format!(
                    "stale: approved on {} by {}, but the reviewed paths changed since",
                    &b.subject.commit[..7],
                    label(&f.receipt.signature().key)
                ),
            );
            state.decider = Some(f);
            state.reason = why.join("; ");
            return Ok(state);
        }
    }
    if let Some(boundary) = ancestry.shallow_hit {
        return Err(FreshnessError::ShallowReview {
            boundary,
            review: def.name.clone(),
        });
    }
    state.reason = if why.is_empty() {
        format!(
            "missing: no trusted approval of these inputs (needs {})",
            def.required.max(1)
        )
    } else {
        format!("missing: {}", why.join("; "))
    };
    Ok(state)
}

/// One way an acceptance's evidence fails to back its claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceProblem {
    /// The check or review the claim is about.
    pub criterion: String,
    /// The cited receipt, when the problem is one receipt.
    pub cited: Option<String>,
    /// What is wrong, in words (names unescaped).
    pub reason: String,
}

/// Check acceptance `body` against its evidence: each cited receipt exists
/// (`locate` gives its writer and chain commit), is trusted, is a receipt of that
/// check (or an approval of that review), on the decided revision's inputs for it,
/// and agrees with the claimed state.
pub fn acceptance_problems(
    store: &Store,
    trust: &TrustSet,
    body: &Body,
    locate: &dyn Fn(&str) -> Option<(String, ObjectId)>,
) -> Vec<EvidenceProblem> {
    let mut out = Vec::new();
    let Some(a) = &body.acceptance else {
        return out;
    };
    let tree = ObjectId::from_hex(body.subject.tree.as_bytes()).ok();
    // The .gitreceipts of the decided revision and of the trusted revision,
    // parsed once: the rules every claim below is held to (an unreadable or
    // missing one holds nothing).
    let contract_of = |rev: &str| {
        ObjectId::from_hex(rev.as_bytes())
            .ok()
            .and_then(|commit| store.file_at(commit, crate::contract::FILE_NAME).ok()?)
            .and_then(|bytes| {
                crate::contract::Contract::parse(&bytes, std::path::Path::new(".gitreceipts")).ok()
            })
            .unwrap_or_default()
    };
    let rules = [contract_of(&body.subject.commit), contract_of(&a.trusted)];
    // How many distinct approvers a review needs: the most that the decided
    // revision or the trusted revision asks (a branch cannot lower it).
    let required_approvals = |name: &str| -> usize {
        rules
            .iter()
            .filter_map(|c| {
                c.reviews
                    .iter()
                    .find(|r| r.name == name)
                    .map(|r| r.required)
            })
            .max()
            .unwrap_or(1) as usize
    };
    // A claim of present citing a failed receipt may rest on the quarantines
    // and differential checks of those rules (a gate under the decided
    // revision's own, or against the trusted one), at the time the acceptance
    // was decided. It stands only when one of them excused the failure then.
    let quarantines: Vec<crate::contract::QuarantineDef> = rules
        .iter()
        .flat_map(|c| c.quarantines.iter().cloned())
        .collect();
    let decided_ms = crate::clock::timestamp_ms(&a.decided_at).unwrap_or(u64::MAX);
    // the baseline a differential claim is weighed against: a merge base,
    // looked for only when a differential check asks
    let baseline = std::cell::OnceCell::new();
    let baseline = || {
        baseline
            .get_or_init(|| {
                match (
                    ObjectId::from_hex(body.subject.commit.as_bytes()),
                    ObjectId::from_hex(a.trusted.as_bytes()),
                ) {
                    (Ok(s), Ok(t)) => crate::parity::baseline_commit(
                        store,
                        s,
                        t,
                        "the acceptance's trusted revision",
                    )
                    .ok()
                    .flatten(),
                    _ => None,
                }
            })
            .clone()
    };
    // the comparison a differential check's receipt comes to, under the
    // decided or the trusted revision's definition (the laxer bounds)
    let differential = |receipt: &Receipt<Verified>, check: &str| {
        let mut def = rules
            .iter()
            .filter_map(|c| c.check(check))
            .filter(|d| d.parity == crate::contract::Parity::Differential)
            .cloned()
            .reduce(|a, b| crate::contract::CheckDef {
                allow_new_failures: a.allow_new_failures.max(b.allow_new_failures),
                max_regression_bp: a.max_regression_bp.max(b.max_regression_bp),
                self_accept: a.self_accept || b.self_accept,
                ..a
            })?;
        if def.metrics.is_empty() {
            def.metrics = rules
                .iter()
                .filter_map(|c| c.check(check))
                .flat_map(|d| d.metrics.clone())
                .collect();
        }
        let weighed = crate::parity::weigh(
            store,
            trust,
            &def,
            receipt,
            baseline(),
            "the acceptance's trusted revision",
            crate::freshness::DEFAULT_WALK_LIMIT,
        )
        .ok()?;
        // and the accepted regressions of those inputs decided by then.
        // mutants: `true` for the guard is equivalent: accepting only takes
        // names out of what a comparison counts, so one that passes still
        // passes, and `passes()` is all `excused` reads of it; the guard only
        // saves the lookup. `false`
        // and dropping the `!` are killed by
        // `acceptances_a_regression_accepted_by_whoever_ran_it_counts_when_either_rules_say_self_accept`.
        Some(match weighed {
            crate::parity::Weighed::Compared(mut c) if !c.passes() => {
                accept_regressions(
                    store,
                    trust,
                    receipt,
                    &mut c,
                    Some(decided_ms),
                    def.self_accept,
                    &|fp| fp.to_owned(),
                    &mut Vec::new(),
                )
                .ok()?;
                crate::parity::Weighed::Compared(c)
            }
            w => w,
        })
    };
    let excused = |receipt: &Receipt<Verified>, check: &str| {
        if crate::quarantine::excuse_stored(store, receipt, check, &quarantines, decided_ms).excused
        {
            return true;
        }
        matches!(differential(receipt, check), Some(crate::parity::Weighed::Compared(c)) if c.passes())
    };
    for c in &a.criteria {
        // distinct trusted signers of cited approvals of the decided inputs
        let mut approvers: HashSet<String> = HashSet::new();
        let label = match c.kind {
            CriterionKind::Check => format!("check {}", c.name),
            CriterionKind::Review => format!("review {}", c.name),
        };
        let mut problem = |cited: Option<&str>, reason: String| {
            out.push(EvidenceProblem {
                criterion: label.clone(),
                cited: cited.map(str::to_owned),
                reason,
            })
        };
        if c.evidence.is_empty() && c.state != State::Missing {
            problem(
                None,
                format!("claims {label} {} but cites no receipt", c.state.as_str()),
            );
        }
        for id in &c.evidence {
            let claim = format!("claims {label} {}", c.state.as_str());
            let Some((writer, commit)) = locate(id) else {
                problem(
                    Some(id),
                    format!("{claim} citing {id}, which is in no chain here"),
                );
                continue;
            };
            let receipt = match store.chain_entry(&writer, commit) {
                Ok(e) => e.receipt,
                Err(e) => {
                    problem(Some(id), format!("{claim} citing {id}, unreadable: {e}"));
                    continue;
                }
            };
            let receipt = match trust.check(receipt) {
                Ok((r, _)) => r,
                Err(why) => {
                    problem(
                        Some(id),
                        format!("{claim} citing {id}, which counts for nothing: {why}"),
                    );
                    continue;
                }
            };
            let e = receipt.body();
            let paths = match (c.kind, e.kind, &e.review) {
                (CriterionKind::Check, Kind::Check, _) if e.check.name == c.name => {
                    e.check.paths.clone()
                }
                (CriterionKind::Review, Kind::Review, Some(r)) if r.name == c.name => {
                    r.paths.clone()
                }
                _ => {
                    problem(
                        Some(id),
                        format!("{claim} citing {id}, which is a receipt of {}", {
                            let h = e.headline();
                            h.rsplit_once(' ').map_or(h.clone(), |(n, _)| n.to_owned())
                        }),
                    );
                    continue;
                }
            };
            // the inputs of the decided revision for the paths the cited receipt declares
            let expected = tree.and_then(|t| store.inputs_tree(t, &paths, false).ok());
            let same_inputs = expected
                .is_some_and(|x| ObjectId::from_hex(e.subject.inputs.as_bytes()).ok() == Some(x))
                && e.subject.inputs == c.inputs;
            let passed = match e.kind {
                Kind::Review => e.review.as_ref().map(|r| r.verdict) == Some(Verdict::Approve),
                _ => e.result.passed,
            };
            match c.state {
                State::Present | State::Failed if !same_inputs => problem(
                    Some(id),
                    format!(
                        "{claim} citing {id}, which is about other inputs ({}) than the decided revision's ({})",
                        &e.subject.inputs[..7.min(e.subject.inputs.len())],
                        expected.map_or_else(
                            || "unknown".to_owned(),
                            |x| x.to_hex_with_len(7).to_string()
                        )
                    ),
                ),
                // a failed check receipt counts as present only where the
                // quarantines of the acceptance's rules excused it then
                State::Present
                    if !(passed
                        || c.kind == CriterionKind::Check && excused(&receipt, &c.name)) =>
                {
                    problem(
                        Some(id),
                        format!(
                            "{claim} citing {id}, which {}",
                            match e.kind {
                                Kind::Review => "rejects".to_owned(),
                                _ => format!("failed (exit {})", e.result.exit_code),
                            }
                        ),
                    )
                }
                // a passed run fails a differential check whose metrics
                // regressed past their bound
                State::Failed
                    if passed
                        && !(c.kind == CriterionKind::Check
                            && match differential(&receipt, &c.name) {
                                Some(crate::parity::Weighed::Fails(_)) => true,
                                Some(crate::parity::Weighed::Compared(d)) => !d.passes(),
                                _ => false,
                            }) =>
                {
                    problem(Some(id), format!("{claim} citing {id}, which passed"))
                }
                State::Stale if same_inputs && c.kind == CriterionKind::Review => problem(
                    Some(id),
                    format!("{claim} citing {id}, which is about the decided inputs themselves"),
                ),
                State::Missing => problem(Some(id), format!("{claim} yet cites {id}")),
                _ => {}
            }
            if e.kind == Kind::Review && passed && same_inputs {
                approvers.insert(receipt.signature().key.clone());
            }
        }
        if c.kind == CriterionKind::Review && c.state == State::Present {
            let needed = required_approvals(&c.name);
            if approvers.len() < needed {
                out.push(EvidenceProblem {
                    criterion: label.clone(),
                    cited: None,
                    reason: format!(
                        "claims {label} present citing approvals by {} distinct trusted signer{}; it needs {needed}",
                        approvers.len(),
                        if approvers.len() == 1 { "" } else { "s" }
                    ),
                });
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod rules;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::TrustOrigin;

    #[test]
    fn a_signer_is_named_by_its_signer_name_or_its_fingerprint() {
        let ci = SigningKey::from_seed(&[1; 32]);
        let own = SigningKey::from_seed(&[2; 32]);
        let mut trust = TrustSet::default();
        trust.add(ci.public().clone(), TrustOrigin::Contract("ci".into()));
        trust.add(own.public().clone(), TrustOrigin::OwnKey);
        let (ci_fp, own_fp) = (ci.public().fingerprint(), own.public().fingerprint());
        assert_eq!(signer_keys(&trust, "ci"), vec![ci_fp.clone()]);
        assert_eq!(signer_keys(&trust, &ci_fp), vec![ci_fp]);
        assert_eq!(signer_keys(&trust, &own_fp), vec![own_fp]);
        assert!(signer_keys(&trust, "nobody").is_empty());
        assert!(signer_keys(&trust, "").is_empty());
    }
}

/// Why an acceptance does not count in this repository (docs/trust.md, "An
/// acceptance counts only where it was made"), typed; `Display` gives the words.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "code", rename_all = "kebab-case")]
pub enum NotHere {
    /// Its `trusted` commit, whose rules it claims to apply, is not in this
    /// repository (an acceptance made in a fork or a mirror, or in a clone ahead
    /// of this one).
    TrustedAbsent {
        /// The `trusted` commit as the acceptance names it.
        trusted: String,
    },
    /// Its `trusted` commit is here but not on the first-parent history of the
    /// default branch: rules nobody gated.
    TrustedNotGated {
        /// The `trusted` commit.
        trusted: String,
        /// Why, in words (unescaped).
        why: String,
    },
    /// Its criteria leave out checks or reviews required at its `trusted` commit
    /// (an acceptance made with `gate --require` is partial).
    Partial {
        /// The `trusted` commit.
        trusted: String,
        /// What is required there and not among its criteria: `check NAME`,
        /// `review NAME`.
        missing: Vec<String>,
    },
}

/// The first 7 characters of `id`, or all of it when shorter, never splitting
/// a character.
pub(crate) fn short7(id: &str) -> &str {
    match id.char_indices().nth(7) {
        Some((end, _)) => &id[..end],
        None => id,
    }
}

impl std::fmt::Display for NotHere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotHere::TrustedAbsent { trusted } => write!(
                f,
                "it applies the rules of commit {}, which is not in this repository: an acceptance made in a fork or a mirror counts only there (if that commit is on the default branch, fetch it)",
                short7(trusted)
            ),
            NotHere::TrustedNotGated { trusted, why } => write!(
                f,
                "it applies the rules of commit {}, which {why}: only rules on gated history count",
                short7(trusted)
            ),
            NotHere::Partial { trusted, missing } => write!(
                f,
                "it is partial: {} required at {} {} not among its criteria (an acceptance made with `gate --require` covers only what it names)",
                missing.join(", "),
                short7(trusted),
                if missing.len() == 1 { "is" } else { "are" }
            ),
        }
    }
}

/// Whether commit `trusted` is on this repository's gated history: the
/// first-parent history of the default branch, read as [`crate::trust::trust_root`]
/// reads it (the walk limit and a shallow edge fail closed). `Err(why)` in words.
pub fn on_gated_history(
    store: &Store,
    trusted: ObjectId,
) -> Result<Result<(), String>, StoreError> {
    use crate::trust::{TrustRootError, default_branch, trust_root};
    let branch = default_branch(store)?.map(|(name, _)| name);
    match trust_root(store, trusted) {
        Ok(root) if root.commit == Some(trusted) => Ok(Ok(())),
        Ok(root) => Ok(Err(match (root.commit, branch) {
            (Some(nearest), Some(branch)) => format!(
                "is not on the first-parent history of {branch} (the newest commit there that it descends from is {})",
                nearest.to_hex_with_len(7)
            ),
            (Some(nearest), None) => format!(
                "is not on the default branch's first-parent history (the newest commit there that it descends from is {})",
                nearest.to_hex_with_len(7)
            ),
            (None, _) => root.description,
        })),
        Err(TrustRootError::Store(e)) => Err(e),
        Err(e) => Ok(Err(format!("cannot be placed on gated history: {e}"))),
    }
}

/// The checks and reviews required at `commit` (its `.gitreceipts`): `check
/// NAME` for each `required = true` check, `review NAME` for each review with a
/// nonzero `required`. No `.gitreceipts` there requires nothing.
pub fn required_at(store: &Store, commit: ObjectId) -> Result<Vec<String>, String> {
    let bytes = store
        .file_at(commit, crate::contract::FILE_NAME)
        .map_err(|e| e.to_string())?;
    let Some(bytes) = bytes else {
        return Ok(Vec::new());
    };
    let label = format!(".gitreceipts at {}", commit.to_hex_with_len(7));
    let c = crate::contract::Contract::parse(&bytes, std::path::Path::new(&label))
        .map_err(|e| e.to_string())?;
    Ok(c.checks
        .iter()
        .filter(|d| d.required)
        .map(|d| format!("check {}", d.name))
        .chain(
            c.reviews
                .iter()
                .filter(|r| r.required > 0)
                .map(|r| format!("review {}", r.name)),
        )
        .collect())
}

/// Whether acceptance `a` counts in this repository: its `trusted` commit is
/// here and on gated history ([`on_gated_history`]), and its criteria cover
/// everything required there ([`required_at`]). An acceptance that does not
/// count still verifies as a signed receipt; it only never satisfies
/// `gate --accepted-by` or `receipt.requireAcceptance`.
pub fn counts_here(store: &Store, a: &Acceptance) -> Result<Result<(), NotHere>, StoreError> {
    counts_here_with(store, a, &mut GatedRules::default())
}

/// What [`counts_here`] reads of each `trusted` commit (whether it is on gated
/// history, and what is required there), kept so that `verify`, which checks
/// every acceptance of every chain, walks the history and parses the contract
/// once per trusted commit rather than once per acceptance.
pub type GatedRules = std::collections::HashMap<String, Result<Vec<String>, NotHere>>;

/// [`counts_here`], reading each trusted commit's rules through `known`.
pub fn counts_here_with(
    store: &Store,
    a: &Acceptance,
    known: &mut GatedRules,
) -> Result<Result<(), NotHere>, StoreError> {
    if !known.contains_key(&a.trusted) {
        let rules = gated_rules(store, &a.trusted)?;
        known.insert(a.trusted.clone(), rules);
    }
    let required = match &known[&a.trusted] {
        Ok(required) => required,
        Err(why) => return Ok(Err(why.clone())),
    };
    let covered: HashSet<String> = a
        .criteria
        .iter()
        .map(|c| match c.kind {
            CriterionKind::Check => format!("check {}", c.name),
            CriterionKind::Review => format!("review {}", c.name),
        })
        .collect();
    let missing: Vec<String> = required
        .iter()
        .filter(|r| !covered.contains(*r))
        .cloned()
        .collect();
    if missing.is_empty() {
        Ok(Ok(()))
    } else {
        Ok(Err(NotHere::Partial {
            trusted: a.trusted.clone(),
            missing,
        }))
    }
}

/// What is required at commit `trusted` (as an acceptance names it), or why its
/// rules do not count here: absent, not on gated history, unreadable.
fn gated_rules(store: &Store, trusted: &str) -> Result<Result<Vec<String>, NotHere>, StoreError> {
    let absent = || NotHere::TrustedAbsent {
        trusted: trusted.to_owned(),
    };
    let Ok(commit) = ObjectId::from_hex(trusted.as_bytes()) else {
        return Ok(Err(absent()));
    };
    if !store.has_commit(commit) {
        return Ok(Err(absent()));
    }
    if let Err(why) = on_gated_history(store, commit)? {
        return Ok(Err(NotHere::TrustedNotGated {
            trusted: trusted.to_owned(),
            why,
        }));
    }
    Ok(
        required_at(store, commit).map_err(|why| NotHere::TrustedNotGated {
            trusted: trusted.to_owned(),
            why: format!("has a .gitreceipts this git-receipt cannot read ({why})"),
        }),
    )
}
