//! Unit tests of the policy: each rule the module owns, with its contract, trust
//! set and receipts built in memory or in a scratch repository made by stock git.

use std::path::Path;
use std::sync::Arc;

use gix::ObjectId;

use super::acceptance::{self, NotAccepted};
use super::contract::contract_at;
use super::judge::{
    Reason, changed_reviews, effective_reviews, require_trusted_checks, tighten_accept,
    trust_root_label, walk_limit,
};
use super::push::{PushPlan, gated_refs, reviews_due};
use super::server::{
    self, BadProtection, Event, Misconfigured, Protected, Refusal, full_branch_name,
    protection_pattern, ref_pattern_matches,
};
use super::*;
use crate::contract::{Accept, Contract, ReviewDef};
use crate::freshness::{CheckState, DEFAULT_WALK_LIMIT, FreshnessError, State, Undecided};
use crate::hooks::{PushedRef, ReceivedRef};
use crate::receipt::{Criterion, CriterionKind, Mode, Status, writer_id};
use crate::sign::SigningKey;
use crate::store::Store;
use crate::trust::{TrustOrigin, TrustSet};

// ---------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------

pub(super) fn contract(text: &str) -> Contract {
    Contract::parse(text.as_bytes(), Path::new(".gitreceipts")).unwrap()
}

fn state(name: &str, required: bool, state: State) -> CheckState {
    CheckState {
        name: name.into(),
        required,
        state,
        decider: None,
        reason: format!("{}: because", state.as_str()),
        changed_paths: Vec::new(),
        untrusted: 0,
        notices: Vec::new(),
    }
}

fn undecided(name: &str, required: bool) -> Undecided {
    Undecided {
        name: name.into(),
        required,
        error: FreshnessError::Shallow {
            boundary: ObjectId::null(gix::hash::Kind::Sha1),
            check: name.into(),
        },
    }
}

fn judgement(states: Vec<CheckState>, undecided: Vec<Undecided>) -> Judgement {
    Judgement {
        rev: "HEAD".into(),
        commit: ObjectId::null(gix::hash::Kind::Sha1),
        trust_root: String::new(),
        states,
        undecided,
        undeclared: Vec::new(),
        notices: Vec::new(),
        reasons: Vec::new(),
        walk_limit: DEFAULT_WALK_LIMIT,
        accepts: Vec::new(),
    }
}

pub(super) fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed(&[seed; 32])
}

/// A repository made by stock git in a temporary directory, with fixed dates
/// and identities, and no user or system config.
pub(super) struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    pub(super) fn new() -> Repo {
        let repo = Repo {
            dir: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(super) fn git(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(self.path())
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "A U Thor")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .env("GIT_COMMITTER_NAME", "C O Mitter")
            .env("GIT_COMMITTER_EMAIL", "committer@example.com")
            .env("GIT_AUTHOR_DATE", "2005-04-07T22:13:13Z")
            .env("GIT_COMMITTER_DATE", "2005-04-07T22:13:13Z")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// Write `files` (path, content) and commit them all: the new commit.
    pub(super) fn commit(&self, files: &[(&str, &str)], message: &str) -> ObjectId {
        for (p, text) in files {
            let path = self.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        ObjectId::from_hex(self.git(&["rev-parse", "HEAD"]).as_bytes()).unwrap()
    }

    pub(super) fn store(&self) -> Store {
        Store::open(self.path()).unwrap()
    }
}

/// What the recorder takes for a run of check `name` (as `.gitreceipts` at
/// `commit` declares it) on `commit` that exited `exit_code`: the contract, the
/// check as receipts record it, its subject, and the observation.
pub(super) fn run_of(
    store: &Store,
    commit: ObjectId,
    name: &str,
    exit_code: i64,
) -> (
    Arc<Contract>,
    crate::recorder::CheckSpec,
    crate::recorder::SubjectIds,
    crate::runner::Observation,
) {
    let c = contract_at(store, commit, "test").unwrap();
    let spec = crate::freshness::spec_in(&c, c.check(name).unwrap());
    let tree = store.commit_tree(commit).unwrap();
    let subject = crate::recorder::SubjectIds {
        commit,
        tree,
        inputs: store.inputs_tree(tree, &spec.paths, true).unwrap(),
        dirty: false,
        unmarked: Vec::new(),
    };
    let obs = crate::runner::Observation {
        exit_code,
        detail: String::new(),
        started_at_ms: 1_700_000_000_000,
        duration_ms: 1,
        stdout_tail: Vec::new(),
        stderr_tail: Vec::new(),
        log: Vec::new(),
        output_bytes: 0,
        log_truncated: false,
        interrupted: None,
    };
    (c, spec, subject, obs)
}

/// A receipt of check `name` (as `.gitreceipts` at `commit` declares it) on
/// `commit`, by `key`, passing or not, run or recorded.
pub(super) fn record(
    store: &Store,
    key: &SigningKey,
    commit: ObjectId,
    name: &str,
    passed: bool,
    mode: Mode,
) {
    let (_, spec, subject, obs) = run_of(store, commit, name, if passed { 0 } else { 1 });
    let writer = writer_id(key.public(), "default");
    crate::recorder::store_receipt(store, &writer, key, &spec, subject, &obs, mode).unwrap();
}

pub(super) fn trusting(keys: &[&SigningKey]) -> Trust {
    let mut set = TrustSet::default();
    for k in keys {
        set.add(k.public().clone(), TrustOrigin::Config);
    }
    Trust::given(set, "the test's keys")
}

fn judged(store: &Store, commit: ObjectId, trust: &Trust, baseline: &Baseline) -> Judgement {
    judge(
        store,
        &Revision::commit("HEAD", commit),
        trust,
        baseline,
        Options::from_config(store).unwrap(),
    )
    .unwrap()
}

fn states_of(j: &Judgement) -> Vec<(&str, bool, &str)> {
    j.states
        .iter()
        .map(|s| (s.name.as_str(), s.required, s.state.as_str()))
        .collect()
}

const TEST_CHECK: &str = "[check \"test\"]\n\trun = true\n\trequired = true\n";

// ---------------------------------------------------------------------------------
// Which checks and reviews a revision is held to
// ---------------------------------------------------------------------------------

#[test]
fn checks_required_at_the_trusted_revision_stay_required_and_redefinitions_are_noticed() {
    let trusted = contract(
        "[check \"test\"]\n\trun = cargo test\n\tpath = src\n\trequired = true\n\
         [check \"lint\"]\n\trun = cargo clippy\n\trequired = true\n\
         [check \"docs\"]\n\trun = mdbook build\n\
         [check \"bench\"]\n\trun = cargo bench\n\tenv = CI\n",
    );
    // test: no longer required, another path; lint: deleted; docs: redefined
    // but required nowhere; bench: required here only, env changed
    let here = contract(
        "[check \"test\"]\n\trun = cargo test\n\tpath = src\n\tpath = tests\n\
         [check \"docs\"]\n\trun = true\n\
         [check \"bench\"]\n\trun = cargo bench\n\trequired = true\n",
    );
    let mut j = judgement(
        vec![
            state("test", false, State::Present),
            state("docs", false, State::Present),
            state("bench", true, State::Present),
        ],
        vec![],
    );
    require_trusted_checks(&mut j, &here, &trusted, "origin/main");
    assert_eq!(
        states_of(&j),
        [
            ("test", true, "present"),
            ("docs", false, "present"),
            ("bench", true, "present"),
            ("lint", true, "missing"),
        ]
    );
    assert_eq!(
        j.states[3].reason,
        "required at origin/main but no longer declared in .gitreceipts here"
    );
    assert_eq!(j.undeclared, ["lint"]);
    assert_eq!(
        j.notices,
        [
            "required check \"test\" is defined differently here than at origin/main: its path changed; the definition here is the one evaluated",
            "required check \"bench\" is defined differently here than at origin/main: its env changed; the definition here is the one evaluated",
        ],
        "docs changed too, but nothing requires it"
    );
    assert_eq!(
        j.reasons,
        [
            Reason::RequiredButUndeclared {
                check: "lint".into(),
                trusted: "origin/main".into()
            },
            Reason::CheckRedefined {
                check: "test".into(),
                trusted: "origin/main".into(),
                changed: vec!["path"]
            },
            Reason::CheckRedefined {
                check: "bench".into(),
                trusted: "origin/main".into(),
                changed: vec!["env"]
            },
        ]
    );
}

#[test]
fn a_changed_run_is_noticed_and_every_changed_field_is_named_in_order() {
    let trusted = contract("[check \"t\"]\n\trun = a\n\tpath = src\n\tenv = X\n");
    let here = contract("[check \"t\"]\n\trun = b\n\tpath = lib\n\tenv = Y\n\trequired = true\n");
    let mut j = judgement(vec![state("t", true, State::Present)], vec![]);
    require_trusted_checks(&mut j, &here, &trusted, "T");
    assert_eq!(
        j.reasons,
        [Reason::CheckRedefined {
            check: "t".into(),
            trusted: "T".into(),
            changed: vec!["run", "path", "env"]
        }]
    );
    assert!(
        j.notices[0].contains("its run and path and env changed"),
        "{:?}",
        j.notices
    );
    // the same definition: nothing to say
    let mut j = judgement(vec![state("t", true, State::Present)], vec![]);
    require_trusted_checks(&mut j, &trusted, &trusted, "T");
    assert!(j.notices.is_empty() && j.reasons.is_empty());
}

#[test]
fn a_required_check_the_history_cannot_decide_stays_required_and_undecided() {
    let trusted = contract(TEST_CHECK);
    let here = contract("[check \"test\"]\n\trun = true\n");
    let mut j = judgement(vec![], vec![undecided("test", false)]);
    require_trusted_checks(&mut j, &here, &trusted, "T");
    assert!(j.undecided[0].required, "required at the trusted revision");
    assert!(j.states.is_empty(), "declared here: not missing");
}

fn review(name: &str, paths: &[&str], required: u32, self_approve: bool) -> ReviewDef {
    ReviewDef {
        name: name.into(),
        paths: paths.iter().map(|p| p.to_string()).collect(),
        required,
        self_approve,
    }
}

fn with_reviews(reviews: Vec<ReviewDef>) -> Contract {
    Contract {
        reviews,
        ..Contract::default()
    }
}

#[test]
fn each_review_is_the_stricter_of_the_two_definitions() {
    let here = with_reviews(vec![
        review("code", &["src/a"], 1, true),
        review("docs", &[], 1, true),
        review("ops", &["ops"], 3, false),
    ]);
    let trusted = with_reviews(vec![
        review("code", &["src/b", "src/a/x"], 2, true),
        review("docs", &["docs"], 0, false),
        review("ops", &["ops"], 1, true),
        review("security", &["crypto"], 1, false),
        review("optional", &["x"], 0, false),
    ]);
    let got = effective_reviews(&here, Some(&trusted));
    assert_eq!(
        got,
        [
            // the paths of both (minimal), the larger count, self-approve as both allow
            review("code", &["src/a", "src/b"], 2, true),
            // the whole tree covers every path; self-approve only if both allow it
            review("docs", &[], 1, false),
            // a branch may raise its count and forbid self-approval
            review("ops", &["ops"], 3, false),
            // a review required there cannot be dropped here
            review("security", &["crypto"], 1, false),
        ],
        "a review not required there and not declared here is not added"
    );
    assert_eq!(effective_reviews(&here, None), here.reviews);
    let whole = with_reviews(vec![review("code", &["src"], 1, false)]);
    let everything = with_reviews(vec![review("code", &[], 1, false)]);
    assert_eq!(
        effective_reviews(&whole, Some(&everything)),
        [review("code", &[], 1, false)],
        "no paths there is the whole tree, which covers the paths here"
    );
}

#[test]
fn a_changed_review_is_named_with_what_changed() {
    let trusted = with_reviews(vec![
        review("code", &["src"], 2, false),
        review("same", &["x"], 1, false),
        review("gone", &["x"], 1, false),
    ]);
    let here = with_reviews(vec![
        review("code", &["lib"], 1, true),
        review("same", &["x"], 1, false),
        review("new", &["x"], 1, false),
    ]);
    let got = changed_reviews(&here, &trusted, "origin/main");
    assert_eq!(
        got,
        [Reason::ReviewRedefined {
            review: "code".into(),
            trusted: "origin/main".into(),
            changed: vec!["path", "required", "self-approve"],
        }]
    );
    assert_eq!(
        got[0].to_string(),
        "review \"code\" is defined differently here than at origin/main: its path and required and self-approve changed; the stricter of the two is evaluated (the paths of both, the larger required, self-approve only if both allow it)"
    );
    let only_count = with_reviews(vec![review("same", &["x"], 2, false)]);
    assert_eq!(
        changed_reviews(&only_count, &trusted, "T")[0],
        Reason::ReviewRedefined {
            review: "same".into(),
            trusted: "T".into(),
            changed: vec!["required"],
        }
    );
}

#[test]
fn accept_run_at_the_trusted_revision_holds_here_and_a_contract_is_copied_only_when_it_changes() {
    let trusted = contract(
        "[check \"a\"]\n\trun = true\n\taccept = run\n\
         [check \"b\"]\n\trun = true\n",
    );
    let mut here = Arc::new(contract(
        "[check \"a\"]\n\trun = true\n[check \"b\"]\n\trun = true\n[check \"c\"]\n\trun = true\n",
    ));
    let shared = here.clone();
    let reasons = tighten_accept(&mut here, Some((&trusted, "T")), false);
    let accepts: Vec<Accept> = here.checks.iter().map(|c| c.accept.clone()).collect();
    assert_eq!(accepts, [Accept::Run, Accept::Any, Accept::Any]);
    assert_eq!(
        reasons,
        [Reason::AcceptTightened {
            check: "a".into(),
            trusted: "T".into(),
            here: "any".into(),
            evaluated: "run".into(),
        }]
    );
    assert_eq!(
        shared.checks[0].accept,
        Accept::Any,
        "the shared parse is untouched"
    );
    // nothing to tighten: the very same contract
    let mut again = shared.clone();
    tighten_accept(
        &mut again,
        Some((&contract("[check \"a\"]\n\trun = true\n"), "T")),
        false,
    );
    assert!(Arc::ptr_eq(&again, &shared));
    // already run here: nothing to copy either
    let mut run = Arc::new(contract("[check \"a\"]\n\trun = true\n\taccept = run\n"));
    let before = run.clone();
    assert!(tighten_accept(&mut run, Some((&trusted, "T")), false).is_empty());
    assert!(Arc::ptr_eq(&run, &before));
}

#[test]
fn reasons_have_stable_codes_and_json_carries_their_fields() {
    let cases = [
        (
            Reason::RequiredButUndeclared {
                check: "lint".into(),
                trusted: "T".into(),
            },
            "required-but-undeclared",
        ),
        (
            Reason::CheckRedefined {
                check: "t".into(),
                trusted: "T".into(),
                changed: vec!["run"],
            },
            "check-redefined",
        ),
        (
            Reason::ReviewRedefined {
                review: "r".into(),
                trusted: "T".into(),
                changed: vec!["path"],
            },
            "review-redefined",
        ),
        (
            Reason::ReviewPathMatchesNothing {
                review: "r".into(),
                path: "nope".into(),
            },
            "review-path-matches-nothing",
        ),
        (
            Reason::AcceptTightened {
                check: "t".into(),
                trusted: "T".into(),
                here: "any".into(),
                evaluated: "run-by:ci".into(),
            },
            "accept-tightened",
        ),
    ];
    for (reason, code) in &cases {
        assert_eq!(reason.code(), *code);
        assert_eq!(serde_json::to_value(reason).unwrap()["code"], *code);
    }
    assert_eq!(
        serde_json::to_value(&cases[1].0).unwrap(),
        serde_json::json!({"code": "check-redefined", "check": "t", "trusted": "T", "changed": ["run"]})
    );
    assert_eq!(
        cases[3].0.to_string(),
        "path \"nope\" of the review matches nothing at this revision, so an approval covers nothing there"
    );
    assert_eq!(
        cases[4].0.to_string(),
        "check \"t\" accepts any here, more than T accepts: accept = run-by:ci is evaluated"
    );
}

// ---------------------------------------------------------------------------------
// The verdict
// ---------------------------------------------------------------------------------

fn names<'a>(states: &[&'a CheckState]) -> Vec<&'a str> {
    states.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn the_verdict_is_no_for_each_required_state_not_present_and_open_while_one_is_undecided() {
    let j = judgement(
        vec![
            state("test", true, State::Present),
            state("lint", true, State::Stale),
            state("docs", false, State::Missing),
            state("review:code", true, State::Missing),
            state("review:ops", false, State::Failed),
        ],
        vec![undecided("bench", true), undecided("fuzz", false)],
    );
    let v = j.verdict(&Require::Marked);
    assert_eq!(names(&v.required), ["test", "lint", "review:code"]);
    assert_eq!(names(&v.failing), ["lint", "review:code"]);
    assert_eq!(
        v.undecided
            .iter()
            .map(|u| u.name.as_str())
            .collect::<Vec<_>>(),
        ["bench"]
    );
    assert!(v.unknown.is_empty());
    assert!(!v.passed());

    // a push to a feature branch: its reviews are not yet due
    let v = j.verdict(&Require::MarkedChecks { reviews: false });
    assert_eq!(names(&v.required), ["test", "lint"]);
    assert_eq!(names(&v.failing), ["lint"]);
    let v = j.verdict(&Require::MarkedChecks { reviews: true });
    assert_eq!(names(&v.failing), ["lint", "review:code"]);
}

#[test]
fn a_review_the_history_cannot_decide_is_due_only_where_reviews_are() {
    let j = judgement(vec![], vec![undecided("review:code", true)]);
    assert!(
        j.verdict(&Require::MarkedChecks { reviews: false })
            .undecided
            .is_empty()
    );
    assert_eq!(
        j.verdict(&Require::MarkedChecks { reviews: true })
            .undecided
            .len(),
        1
    );
    assert_eq!(j.verdict(&Require::Marked).undecided.len(), 1);
}

#[test]
fn named_requirements_are_taken_in_their_order_whatever_is_marked() {
    let j = judgement(
        vec![
            state("test", true, State::Failed),
            state("docs", false, State::Present),
        ],
        vec![undecided("bench", false)],
    );
    let v = j.verdict(&Require::Named(vec![
        "docs".into(),
        "bench".into(),
        "nope".into(),
    ]));
    assert_eq!(names(&v.required), ["docs"], "test is marked, not named");
    assert!(v.failing.is_empty());
    assert_eq!(v.undecided.len(), 1, "named, so due even unmarked");
    assert_eq!(v.unknown, ["nope"], "undecided is known, only nope is not");
    assert!(!v.passed());
    let v = j.verdict(&Require::Named(vec!["docs".into()]));
    assert!(v.passed());
}

#[test]
fn a_verdict_passes_only_with_nothing_failing_undecided_or_unknown() {
    let all_present = judgement(vec![state("test", true, State::Present)], vec![]);
    assert!(all_present.verdict(&Require::Marked).passed());
    let nothing_required = judgement(vec![state("test", false, State::Missing)], vec![]);
    let v = nothing_required.verdict(&Require::Marked);
    assert!(v.passed() && v.required.is_empty());
    for state_ in [State::Missing, State::Failed, State::Stale] {
        let j = judgement(vec![state("test", true, state_)], vec![]);
        assert!(!j.verdict(&Require::Marked).passed(), "{state_:?}");
    }
    let open = judgement(vec![], vec![undecided("test", true)]);
    assert!(!open.verdict(&Require::Marked).passed());
}

// ---------------------------------------------------------------------------------
// The acceptance body
// ---------------------------------------------------------------------------------

fn criterion(kind: CriterionKind, name: &str, state: State) -> (Criterion, String) {
    (
        Criterion {
            kind,
            name: name.into(),
            state,
            inputs: "00".repeat(20),
            evidence: Vec::new(),
        },
        format!("{name} is {}", state.as_str()),
    )
}

#[test]
fn an_acceptance_lists_checks_then_reviews_once_each_and_rejects_with_the_unresolved() {
    let trusted = ObjectId::null(gix::hash::Kind::Sha1);
    let a = acceptance::body(
        vec![
            criterion(CriterionKind::Review, "code", State::Missing),
            criterion(CriterionKind::Check, "test", State::Present),
            criterion(CriterionKind::Check, "lint", State::Stale),
            criterion(CriterionKind::Check, "test", State::Present),
            criterion(CriterionKind::Review, "a", State::Present),
        ],
        trusted,
        "2024-01-01T00:00:00.000Z".into(),
    );
    let listed: Vec<(bool, &str)> = a
        .criteria
        .iter()
        .map(|c| (c.kind == CriterionKind::Review, c.name.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            (false, "lint"),
            (false, "test"),
            (true, "a"),
            (true, "code")
        ]
    );
    assert_eq!(a.status, Status::Rejected);
    let unresolved: Vec<(&str, &str, &str)> = a
        .unresolved
        .iter()
        .map(|u| (u.name.as_str(), u.state.as_str(), u.reason.as_str()))
        .collect();
    assert_eq!(
        unresolved,
        [
            ("lint", "stale", "lint is stale"),
            ("code", "missing", "code is missing")
        ]
    );
    assert_eq!(a.trusted, trusted.to_string());
    assert_eq!(a.decided_at, "2024-01-01T00:00:00.000Z");
}

#[test]
fn an_acceptance_with_everything_present_is_accepted_and_long_reasons_are_cut() {
    let a = acceptance::body(
        vec![criterion(CriterionKind::Check, "test", State::Present)],
        ObjectId::null(gix::hash::Kind::Sha1),
        String::new(),
    );
    assert_eq!(a.status, Status::Accepted);
    assert!(a.unresolved.is_empty());
    let (c, _) = criterion(CriterionKind::Check, "test", State::Failed);
    let long = "é".repeat(acceptance::MAX_REASON_CHARS + 5);
    let a = acceptance::body(
        vec![(c, long)],
        ObjectId::null(gix::hash::Kind::Sha1),
        String::new(),
    );
    assert_eq!(
        a.unresolved[0].reason.chars().count(),
        acceptance::MAX_REASON_CHARS,
        "cut by characters, never inside one"
    );
    // the same name as a check and as a review are two criteria
    let a = acceptance::body(
        vec![
            criterion(CriterionKind::Check, "x", State::Present),
            criterion(CriterionKind::Review, "x", State::Present),
        ],
        ObjectId::null(gix::hash::Kind::Sha1),
        String::new(),
    );
    assert_eq!(a.criteria.len(), 2);
}

#[test]
fn why_an_acceptance_is_missing_is_said_in_words() {
    let tree = "ab".repeat(20);
    let rejected = NotAccepted::Rejected {
        tree: tree.clone(),
        receipt: format!("sha256:{}", "cd".repeat(32)),
        unresolved: vec![
            ("test".into(), "failed".into()),
            ("lint".into(), "stale".into()),
        ],
    };
    assert_eq!(
        rejected.to_string(),
        "its newest acceptance of tree ababab1 (sha256:cdcdcdcdcdcd) is rejected: test failed, lint stale"
            .replace("ababab1", &tree[..7])
    );
    let nearest = |distance| NotAccepted::NearestDiffers {
        tree: tree.clone(),
        signer: "ci".into(),
        commit: "12".repeat(20),
        nearest: "34".repeat(20),
        distance,
        receipt: "sha256:ef".into(),
    };
    assert_eq!(
        nearest(1).to_string(),
        format!(
            "no acceptance of tree {} by ci; the nearest is of 3434343 (1 commit back, sha256:ef), whose tree differs: accept this revision with `git receipt gate 1212121 --record`",
            &tree[..7]
        )
    );
    assert!(nearest(3).to_string().contains("(3 commits back"));
    assert_eq!(
        NotAccepted::Absent {
            tree: tree.clone(),
            signer: "ci".into()
        }
        .to_string(),
        format!(
            "no acceptance of tree {} by ci (fetch receipts with `git receipt fetch`?)",
            &tree[..7]
        )
    );
}

// ---------------------------------------------------------------------------------
// Judging in a repository
// ---------------------------------------------------------------------------------

#[test]
fn only_receipts_by_a_trusted_key_make_a_check_present() {
    let repo = Repo::new();
    let c = repo.commit(&[(".gitreceipts", TEST_CHECK)], "one");
    let store = repo.store();
    let (ours, theirs) = (key(1), key(2));
    record(&store, &theirs, c, "test", true, Mode::Run);
    let j = judged(&store, c, &trusting(&[&ours]), &Baseline::Own);
    assert_eq!(states_of(&j), [("test", true, "missing")]);
    assert_eq!(j.states[0].untrusted, 1);
    record(&store, &ours, c, "test", true, Mode::Run);
    let j = judged(&store, c, &trusting(&[&ours]), &Baseline::Own);
    assert_eq!(states_of(&j), [("test", true, "present")]);
    assert_eq!(j.trust_root, "the test's keys");
    assert_eq!(j.rev, "HEAD");
    assert_eq!(j.commit, c);
    assert_eq!(j.walk_limit, DEFAULT_WALK_LIMIT);
}

#[test]
fn a_branch_cannot_drop_a_check_required_at_the_trusted_revision() {
    let repo = Repo::new();
    let trusted = repo.commit(
        &[(
            ".gitreceipts",
            "[check \"test\"]\n\trun = true\n\trequired = true\n[check \"lint\"]\n\trun = true\n\trequired = true\n",
        )],
        "trusted",
    );
    let here = repo.commit(&[(".gitreceipts", TEST_CHECK)], "drops lint");
    let store = repo.store();
    let k = key(1);
    record(&store, &k, here, "test", true, Mode::Run);
    let trust = trusting(&[&k]);
    let own = judged(&store, here, &trust, &Baseline::Own);
    assert_eq!(states_of(&own), [("test", true, "present")]);
    assert!(own.reasons.is_empty());
    let at = Baseline::At {
        commit: trusted,
        label: "main".into(),
    };
    let j = judged(&store, here, &trust, &at);
    assert_eq!(
        states_of(&j),
        [("test", true, "present"), ("lint", true, "missing")]
    );
    assert_eq!(
        j.reasons,
        [Reason::RequiredButUndeclared {
            check: "lint".into(),
            trusted: "main".into()
        }]
    );
    assert!(!j.verdict(&Require::Marked).passed());
    // judged against itself, a revision is held to nothing more
    let itself = Baseline::At {
        commit: here,
        label: "itself".into(),
    };
    assert_eq!(states_of(&judged(&store, here, &trust, &itself)).len(), 1);
    // the trust root a reader's trust was read from is the trusted revision
    let mut reader = trust.clone();
    reader.root = Some(trusted);
    let j = judged(&store, here, &reader, &Baseline::TrustRoot);
    assert_eq!(
        j.reasons,
        [Reason::RequiredButUndeclared {
            check: "lint".into(),
            trusted: trust_root_label(trusted)
        }]
    );
}

#[test]
fn a_recorded_result_does_not_count_where_the_trusted_revision_accepts_only_runs() {
    let repo = Repo::new();
    let trusted = repo.commit(
        &[(
            ".gitreceipts",
            "[check \"test\"]\n\trun = true\n\trequired = true\n\taccept = run\n",
        )],
        "trusted",
    );
    let here = repo.commit(&[(".gitreceipts", TEST_CHECK)], "any will do");
    let store = repo.store();
    let k = key(1);
    record(&store, &k, here, "test", true, Mode::Record);
    let trust = trusting(&[&k]);
    let own = judged(&store, here, &trust, &Baseline::Own);
    assert_eq!(states_of(&own), [("test", true, "present")]);
    let at = Baseline::At {
        commit: trusted,
        label: "main".into(),
    };
    let j = judged(&store, here, &trust, &at);
    assert_ne!(j.states[0].state, State::Present, "{}", j.states[0].reason);
    assert!(
        j.states[0].reason.contains("accept = run"),
        "{}",
        j.states[0].reason
    );
}

#[test]
fn a_review_path_that_matches_nothing_is_a_typed_reason_and_a_notice() {
    let repo = Repo::new();
    let c = repo.commit(
        &[
            (
                ".gitreceipts",
                "[review \"code\"]\n\tpath = nope\n\tpath = src\n\trequired = 1\n",
            ),
            ("src/lib.rs", "x"),
        ],
        "one",
    );
    let store = repo.store();
    let j = judged(&store, c, &trusting(&[]), &Baseline::Own);
    assert_eq!(states_of(&j), [("review:code", true, "missing")]);
    // the commit is unsigned: with self-approve = false no approval can count
    // on it either, which is said too (issue 26)
    let unsigned = Reason::ReviewAuthorUnknown {
        review: "code".into(),
        commit: c.to_string(),
        signed_by: None,
    };
    assert_eq!(
        j.reasons,
        [
            Reason::ReviewPathMatchesNothing {
                review: "code".into(),
                path: "nope".into()
            },
            unsigned.clone()
        ]
    );
    assert_eq!(
        j.notices,
        [
            "review:code: path \"nope\" of the review matches nothing at this revision, so an approval covers nothing there".to_owned(),
            format!("review:code: {unsigned}")
        ]
    );
    assert!(
        unsigned.to_string().starts_with(&format!(
            "commit {} has no verified SSH signature",
            c.to_hex_with_len(7)
        )),
        "{unsigned}"
    );
}

#[test]
fn a_review_required_at_the_trusted_revision_is_judged_here_with_its_redefinition_noticed() {
    let repo = Repo::new();
    let trusted = repo.commit(
        &[(
            ".gitreceipts",
            "[review \"code\"]\n\trequired = 2\n[review \"ops\"]\n\trequired = 1\n",
        )],
        "trusted",
    );
    let here = repo.commit(
        &[(".gitreceipts", "[review \"code\"]\n\trequired = 1\n")],
        "lowers code, drops ops",
    );
    let store = repo.store();
    let at = Baseline::At {
        commit: trusted,
        label: "main".into(),
    };
    let j = judged(&store, here, &trusting(&[]), &at);
    assert_eq!(
        states_of(&j),
        [
            ("review:code", true, "missing"),
            ("review:ops", true, "missing")
        ]
    );
    let unsigned = |review: &str| Reason::ReviewAuthorUnknown {
        review: review.into(),
        commit: here.to_string(),
        signed_by: None,
    };
    assert_eq!(
        j.reasons,
        [
            unsigned("code"),
            unsigned("ops"),
            Reason::ReviewRedefined {
                review: "code".into(),
                trusted: "main".into(),
                changed: vec!["required"]
            }
        ]
    );
    assert_eq!(
        j.notices,
        [
            format!("review:code: {}", j.reasons[0]),
            format!("review:ops: {}", j.reasons[1]),
            j.reasons[2].to_string()
        ]
    );
    let held = super::judge::reviews_held_to(
        &store,
        &contract_at(&store, here, "here").unwrap(),
        here,
        Some(trusted),
        &Baseline::TrustRoot,
    )
    .unwrap();
    assert_eq!(
        held.iter()
            .map(|r| (r.name.as_str(), r.required))
            .collect::<Vec<_>>(),
        [("code", 2), ("ops", 1)]
    );
    let own = super::judge::reviews_held_to(
        &store,
        &contract_at(&store, here, "here").unwrap(),
        here,
        Some(trusted),
        &Baseline::Own,
    )
    .unwrap();
    assert_eq!(own.len(), 1);
}

const TWO_REVIEWS: &str = "[review \"code\"]\n\trequired = 1\n\tself-approve = true\n[review \"docs\"]\n\trequired = 0\n\tself-approve = true\n";

#[test]
fn a_review_row_is_required_only_when_it_needs_an_approval() {
    let repo = Repo::new();
    let c = repo.commit(&[(".gitreceipts", TWO_REVIEWS)], "two reviews");
    let j = judged(&repo.store(), c, &trusting(&[]), &Baseline::Own);
    assert_eq!(
        states_of(&j),
        [
            ("review:code", true, "missing"),
            ("review:docs", false, "missing")
        ]
    );
    assert!(j.undecided.is_empty());
}

#[test]
fn a_review_the_shallow_history_cannot_decide_is_undecided_and_required_only_when_it_needs_an_approval()
 {
    let repo = Repo::new();
    repo.commit(&[(".gitreceipts", TWO_REVIEWS)], "two reviews");
    repo.commit(&[("a", "1")], "a");
    let tip = repo.commit(&[("a", "2")], "a again");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", repo.path().display());
    repo.git(&[
        "clone",
        "-q",
        "--depth",
        "2",
        &url,
        &dir.path().join("c").display().to_string(),
    ]);
    let store = Store::open(&dir.path().join("c")).unwrap();
    let j = judged(&store, tip, &trusting(&[]), &Baseline::Own);
    assert!(j.states.is_empty(), "{:?}", states_of(&j));
    let undecided: Vec<_> = j
        .undecided
        .iter()
        .map(|u| (u.name.as_str(), u.required))
        .collect();
    assert_eq!(undecided, [("review:code", true), ("review:docs", false)]);
    assert!(
        j.undecided
            .iter()
            .all(|u| matches!(u.error, FreshnessError::ShallowReview { .. })),
        "{:?}",
        j.undecided
    );
}

#[test]
fn the_walk_limit_is_receipt_walk_limit_and_must_be_positive() {
    let repo = Repo::new();
    repo.commit(&[], "one");
    assert_eq!(walk_limit(&repo.store()).unwrap(), DEFAULT_WALK_LIMIT);
    repo.git(&["config", "receipt.walkLimit", "5"]);
    assert_eq!(walk_limit(&repo.store()).unwrap(), 5);
    assert_eq!(Options::from_config(&repo.store()).unwrap().walk_limit, 5);
    repo.git(&["config", "receipt.walkLimit", "1"]);
    assert_eq!(walk_limit(&repo.store()).unwrap(), 1);
    for bad in ["0", "-3"] {
        repo.git(&["config", "receipt.walkLimit", bad]);
        match walk_limit(&repo.store()) {
            Err(PolicyError::WalkLimit(n)) => assert_eq!(n.to_string(), bad),
            other => panic!("receipt.walkLimit = {bad}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------
// What a range run runs again
// ---------------------------------------------------------------------------------

#[test]
fn a_range_run_leaves_only_a_present_check_alone_with_its_deciding_receipt_unless_forced() {
    let repo = Repo::new();
    let first = repo.commit(
        &[(
            ".gitreceipts",
            "[check \"test\"]\n\trun = true\n[check \"lint\"]\n\trun = true\n[check \"doc\"]\n\trun = true\n",
        )],
        "three checks",
    );
    let store = repo.store();
    let k = key(1);
    record(&store, &k, first, "test", true, Mode::Run);
    record(&store, &k, first, "lint", false, Mode::Run);
    // a commit that changes no input: the receipts written on its parent decide
    let here = repo.commit(&[], "nothing changed");
    let j = judged(&store, here, &trusting(&[&k]), &Baseline::Own);
    assert_eq!(
        states_of(&j),
        [
            ("test", false, "present"),
            ("lint", false, "failed"),
            ("doc", false, "missing")
        ]
    );
    let decided_by = |i: usize| {
        j.states[i]
            .decider
            .as_ref()
            .expect("a receipt decides")
            .receipt
            .id()
            .to_owned()
    };
    let passed = decided_by(0);
    assert_ne!(passed, decided_by(1), "each check has its own receipt");
    assert_eq!(
        rerun::need(&j, "test", false),
        rerun::Need::Cached { receipt: passed },
        "present, by the receipt written on the parent"
    );
    assert_eq!(
        rerun::need(&j, "lint", false),
        rerun::Need::Run,
        "failed, though a check before it is present"
    );
    assert_eq!(rerun::need(&j, "doc", false), rerun::Need::Run, "missing");
    assert_eq!(
        rerun::need(&j, "other", false),
        rerun::Need::Run,
        "not declared here"
    );
    assert_eq!(rerun::need(&j, "test", true), rerun::Need::Run, "forced");
}

// ---------------------------------------------------------------------------------
// Trust
// ---------------------------------------------------------------------------------

#[test]
fn a_reader_trusts_its_own_key_the_configured_keys_and_the_signers_at_the_trust_root() {
    let (own, configured, signer) = (key(1), key(2), key(3));
    let repo = Repo::new();
    let c = repo.commit(
        &[(
            ".gitreceipts",
            &format!(
                "[signer \"ci\"]\n\tkey = {}\n",
                signer.public().to_openssh()
            ),
        )],
        "one",
    );
    repo.git(&[
        "config",
        "receipt.trustedKey",
        &configured.public().to_openssh(),
    ]);
    let store = repo.store();
    let (set, root) = trust::reader_trust(&store, c, Some(own.public().clone())).unwrap();
    let origin = |k: &SigningKey| {
        set.lookup(&k.public().fingerprint())
            .map(|t| t.origin.clone())
    };
    assert_eq!(origin(&own), Some(TrustOrigin::OwnKey));
    assert_eq!(origin(&configured), Some(TrustOrigin::Config));
    assert_eq!(origin(&signer), Some(TrustOrigin::Contract("ci".into())));
    assert_eq!(root.commit, Some(c));
    let (set, _) = trust::reader_trust(&store, c, None).unwrap();
    assert!(set.lookup(&own.public().fingerprint()).is_none());
    let reader = trust::reader(&store, c, None).unwrap();
    assert_eq!(reader.root, Some(c));
    assert_eq!(reader.description, root.description);
}

#[test]
fn a_configured_key_that_is_not_a_key_is_an_error_naming_it() {
    let repo = Repo::new();
    let c = repo.commit(&[], "one");
    repo.git(&["config", "receipt.trustedKey", "ssh-ed25519 nonsense"]);
    let store = repo.store();
    match trust::reader_trust(&store, c, None) {
        Err(e @ PolicyError::TrustedKey { .. }) => {
            assert_eq!(
                e.to_string(),
                "git config receipt.trustedKey = \"ssh-ed25519 nonsense\""
            );
            assert!(std::error::Error::source(&e).is_some());
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        trust::server(&store, c, "main"),
        Err(PolicyError::TrustedKey { .. })
    ));
    // the keys a server knows only check signatures: a bad one adds nothing
    assert_eq!(trust::known_keys(&store, &[]).keys().count(), 0);
}

#[test]
fn a_verifier_trusts_exactly_the_signers_at_the_revision_it_names() {
    let signer = key(3);
    let repo = Repo::new();
    let bare = repo.commit(&[("a", "x")], "no contract");
    let c = repo.commit(
        &[(
            ".gitreceipts",
            &format!(
                "[signer \"ci\"]\n\tkey = {}\n",
                signer.public().to_openssh()
            ),
        )],
        "signers",
    );
    repo.git(&[
        "config",
        "receipt.trustedKey",
        &key(2).public().to_openssh(),
    ]);
    let store = repo.store();
    let (t, notices) = trust::verifier_at(&store, c, "origin/main").unwrap();
    assert_eq!(
        t.set.keys().count(),
        1,
        "receipt.trustedKey is not a verifier's"
    );
    assert!(t.set.lookup(&signer.public().fingerprint()).is_some());
    assert_eq!(t.description, "signers of .gitreceipts at origin/main");
    assert_eq!(t.root, None);
    assert!(notices.is_empty());
    match trust::verifier_at(&store, bare, "v1") {
        Err(e @ PolicyError::NoSigners { .. }) => assert_eq!(
            e.to_string(),
            "there is no .gitreceipts at v1, so it names no signers to trust"
        ),
        other => panic!("{other:?}"),
    }
    let server = trust::server(&store, c, "main (abc)").unwrap();
    assert_eq!(
        server.set.keys().count(),
        2,
        "the server adds receipt.trustedKey"
    );
    assert_eq!(
        server.description,
        "signers of .gitreceipts at main (abc) and receipt.trustedKey"
    );
    let known = trust::known_keys(&store, &["refs/heads/main".into()]);
    assert!(known.lookup(&signer.public().fingerprint()).is_some());
}

// ---------------------------------------------------------------------------------
// The server's ref rules
// ---------------------------------------------------------------------------------

#[test]
fn a_protected_branch_value_names_a_ref_or_a_pattern_over_branches() {
    assert_eq!(protection_pattern("main").unwrap(), "refs/heads/main");
    assert_eq!(protection_pattern(" main ").unwrap(), "refs/heads/main");
    assert_eq!(protection_pattern("refs/heads/x").unwrap(), "refs/heads/x");
    assert_eq!(
        protection_pattern("release/*").unwrap(),
        "refs/heads/release/*"
    );
    for (bad, why) in [
        ("", "is empty"),
        ("  ", "is empty"),
        ("rel?ase", "holds '?'"),
        ("a[b]", "holds '['"),
        ("a b", "holds ' '"),
        ("a\\b", "holds '\\\\'"),
        ("a~1", "holds '~'"),
        ("a^", "holds '^'"),
        ("a:b", "holds ':'"),
        ("a\u{7}", "holds '\\u{7}'"),
        ("a..b", "is not a ref name"),
        ("a/", "is not a ref name"),
        ("a//b", "is not a ref name"),
        ("refs/tags/*", "is a pattern outside refs/heads/"),
    ] {
        match protection_pattern(bad) {
            Err(BadProtection { why: got, .. }) => {
                assert!(got.starts_with(why), "{bad:?}: {got}")
            }
            Ok(p) => panic!("{bad:?} protects {p}"),
        }
    }
    assert_eq!(
        protection_pattern("").unwrap_err().to_string(),
        "receipt.protectedBranch (or --protect) \"\" is empty, so it would protect nothing"
    );
    assert_eq!(full_branch_name("main"), "refs/heads/main");
    assert_eq!(full_branch_name("refs/x"), "refs/x");
    assert!(ref_pattern_matches(
        "refs/heads/release/*",
        "refs/heads/release/1/2"
    ));
    assert!(!ref_pattern_matches(
        "refs/heads/release/*",
        "refs/heads/main"
    ));
}

#[test]
fn what_is_protected_covers_its_patterns_and_the_existing_branches_they_name() {
    let repo = Repo::new();
    let c = repo.commit(&[], "one");
    repo.git(&["branch", "release/1"]);
    repo.git(&["branch", "other"]);
    repo.git(&["symbolic-ref", "refs/heads/master", "refs/heads/main"]);
    repo.git(&["config", "--add", "receipt.protectedBranch", "master"]);
    repo.git(&["config", "--add", "receipt.protectedBranch", "release/*"]);
    let store = repo.store();
    let p = Protected::load(&store).unwrap();
    assert_eq!(p.patterns, ["refs/heads/master", "refs/heads/release/*"]);
    assert_eq!(
        p.existing,
        [
            ("refs/heads/main".to_owned(), c),
            ("refs/heads/release/1".to_owned(), c)
        ],
        "master is a symbolic ref to main: protecting it protects main"
    );
    assert!(p.covers("refs/heads/main") && p.covers("refs/heads/release/9"));
    assert!(!p.covers("refs/heads/other"));
    assert_eq!(
        p.creation_baseline("refs/heads/release/2"),
        Some(("refs/heads/main".to_owned(), c))
    );
    assert_eq!(
        p.creation_baseline("refs/heads/main"),
        Some(("refs/heads/release/1".to_owned(), c))
    );
    assert_eq!(
        server::resolve_symref(&store, "refs/heads/master").unwrap(),
        "refs/heads/main"
    );
    assert_eq!(
        server::resolve_symref(&store, "refs/heads/none").unwrap(),
        "refs/heads/none"
    );
    repo.git(&["config", "--add", "receipt.protectedBranch", "a?"]);
    assert!(matches!(
        Protected::load(&repo.store()),
        Err(Misconfigured::Pattern(_))
    ));
}

#[test]
fn without_configuration_the_branch_head_names_is_protected() {
    let repo = Repo::new();
    let c = repo.commit(&[], "one");
    let store = repo.store();
    assert_eq!(server::protected_branches(&store), ["refs/heads/main"]);
    let p = Protected::load(&store).unwrap();
    assert_eq!(p.existing, [("refs/heads/main".to_owned(), c)]);
    assert_eq!(p.creation_baseline("refs/heads/main"), None);
    assert!(server::has_any_branch(&store).unwrap());
    assert_eq!(p.existing_names(), ["refs/heads/main"]);
}

#[test]
fn a_chain_of_symbolic_refs_longer_than_git_follows_is_refused() {
    let repo = Repo::new();
    repo.commit(&[], "one");
    let mut to = "refs/heads/main".to_owned();
    for i in 0..=server::SYMREF_MAX_DEPTH {
        let name = format!("refs/heads/s{i}");
        repo.git(&["symbolic-ref", &name, &to]);
        to = name;
    }
    let store = repo.store();
    // s0 .. s4: five steps to main, as git follows
    assert_eq!(
        server::resolve_symref(&store, "refs/heads/s4").unwrap(),
        "refs/heads/main"
    );
    match server::resolve_symref(&store, &to) {
        Err(r @ Refusal::SymrefTooDeep { .. }) => assert_eq!(
            r.to_string(),
            format!("{to}: a chain of more than 5 symbolic refs, which git does not follow either")
        ),
        other => panic!("{other:?}"),
    }
}

fn received(name: &str, old: Option<ObjectId>, new: Option<ObjectId>) -> ReceivedRef {
    ReceivedRef {
        old,
        new,
        name: name.into(),
    }
}

#[test]
fn a_log_ref_is_created_at_the_blob_its_name_gives_or_deleted_never_moved() {
    let repo = Repo::new();
    let c = repo.commit(&[], "one");
    let store = repo.store();
    let blob = store.write_blob(b"log").unwrap();
    let writer = writer_id(key(1).public(), "default");
    let name = format!("{}{writer}/{blob}", crate::store::logs::LOG_PREFIX);
    assert!(server::log_refusal(&store, &received(&name, None, Some(blob))).is_none());
    assert!(server::log_refusal(&store, &received(&name, Some(blob), None)).is_none());
    assert!(matches!(
        server::log_refusal(&store, &received(&name, Some(blob), Some(blob))),
        Some(Refusal::LogRefUpdated { .. })
    ));
    // named after a blob it does not point at
    let other = store.write_blob(b"other").unwrap();
    assert!(matches!(
        server::log_refusal(&store, &received(&name, None, Some(other))),
        Some(Refusal::LogRefMismatch { new, .. }) if new == other
    ));
    // named after a commit it does point at: not a blob
    let at_commit = format!("{}{writer}/{c}", crate::store::logs::LOG_PREFIX);
    assert!(matches!(
        server::log_refusal(&store, &received(&at_commit, None, Some(c))),
        Some(Refusal::LogRefMismatch { .. })
    ));
    for bad in [
        format!("{}nowriter/{blob}", crate::store::logs::LOG_PREFIX),
        format!("{}{writer}/nothex", crate::store::logs::LOG_PREFIX),
        format!("{}{writer}", crate::store::logs::LOG_PREFIX),
    ] {
        match server::log_refusal(&store, &received(&bad, None, Some(blob))) {
            Some(r @ Refusal::NotALogRef { .. }) => assert_eq!(
                r.to_string(),
                format!("{bad}: not a log ref name (refs/receipt-logs/<writer>/<blob id>)")
            ),
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn a_chain_is_append_only_by_push() {
    let repo = Repo::new();
    repo.commit(&[(".gitreceipts", TEST_CHECK)], "one");
    let store = repo.store();
    let k = key(1);
    let c = store.head().unwrap().0;
    record(&store, &k, c, "test", true, Mode::Run);
    let first = store.writers().unwrap()[0].1;
    record(&store, &k, c, "test", false, Mode::Run);
    let (writer, second) = store.writers().unwrap()[0].clone();
    let name = format!("refs/receipts/{writer}");
    let known = |_: &str| Some(k.public().clone());
    let refuse = |u: ReceivedRef| server::chain_refusal(&store, &u, &known);
    // adding on top, or creating, is what a chain is for
    assert!(refuse(received(&name, Some(first), Some(second))).is_none());
    assert!(refuse(received(&name, None, Some(second))).is_none());
    // deleting it, or rewinding it over an entry, is not
    assert!(matches!(
        refuse(received(&name, Some(second), None)),
        Some(Refusal::ChainDeleted { .. })
    ));
    match refuse(received(&name, Some(second), Some(first))) {
        Some(r @ Refusal::ChainRewritten { .. }) => {
            assert!(
                r.to_string().contains("a valid entry signed by the writer"),
                "{r}"
            );
            assert!(r.is_chain());
            assert_eq!(r.ref_name(), Some(name.as_str()));
        }
        other => panic!("{other:?}"),
    }
    // a ref under refs/receipts/ that no writer id names
    assert!(matches!(
        refuse(received("refs/receipts/nope", None, Some(second))),
        Some(Refusal::NotAChainName { .. })
    ));
    // an entry signed by a key other than the one the writer id names
    let theirs = key(2);
    let squat = format!("refs/receipts/{}", writer_id(theirs.public(), "default"));
    assert!(matches!(
        server::chain_refusal(&store, &received(&squat, None, Some(second)), &known),
        Some(Refusal::ChainEntry { .. })
    ));
}

#[test]
fn a_checkpoint_chain_is_append_only_by_push_and_every_new_entry_must_hold() {
    let repo = Repo::new();
    repo.commit(&[], "one");
    let store = repo.store();
    let k = key(1);
    let signer = writer_id(k.public(), "default");
    let marks = std::collections::BTreeMap::new;
    let t = 1_780_000_000_000;
    let a = crate::checkpoint::sign(&store, &k, &signer, marks(), t)
        .unwrap()
        .commit;
    let b = crate::checkpoint::sign(&store, &k, &signer, marks(), t + 1)
        .unwrap()
        .commit;
    let name = crate::store::checkpoints::checkpoint_ref(&signer);
    let refuse = |u: ReceivedRef| server::checkpoint_refusal(&store, &u);
    let reason = |u: ReceivedRef| match refuse(u) {
        Some(r @ Refusal::Checkpoint { .. }) => {
            assert_eq!(r.code(), "checkpoint");
            assert!(r.is_chain());
            r.to_string()
        }
        other => panic!("{other:?}"),
    };
    // creating it, or adding on top
    assert!(refuse(received(&name, None, Some(b))).is_none());
    assert!(refuse(received(&name, Some(a), Some(b))).is_none());
    assert!(refuse(received(&name, Some(b), Some(b))).is_none());
    // deleting it, or moving it back
    assert!(reason(received(&name, Some(b), None)).contains("append-only"));
    let back = reason(received(&name, Some(b), Some(a)));
    assert!(back.starts_with(&format!("{name}: ")), "{back}");
    assert!(back.contains("does not descend"), "{back}");
    // a name that is no writer id
    let bad = format!("{}nope", crate::store::checkpoints::CHECKPOINT_PREFIX);
    assert!(reason(received(&bad, None, Some(b))).contains("not a checkpoint chain name"));
    // an entry on top that is no checkpoint, created or added
    let junk = store
        .append_checkpoint(&signer, b"{}".to_vec(), Some(b), "junk")
        .unwrap();
    assert!(reason(received(&name, Some(b), Some(junk))).contains("DSSE"));
    assert!(reason(received(&name, None, Some(junk))).contains("DSSE"));
    // signed by a key its name does not name: refused as any broken entry
    let other = format!(
        "{}{}",
        crate::store::checkpoints::CHECKPOINT_PREFIX,
        writer_id(key(2).public(), "default")
    );
    assert!(reason(received(&other, None, Some(a))).contains("sits in the checkpoint chain"));
    // a commit that is not here at all
    let missing = ObjectId::from_hex(b"1234567890123456789012345678901234567890").unwrap();
    assert!(refuse(received(&name, None, Some(missing))).is_some());
}

#[test]
fn refusals_say_which_ref_they_refuse_and_which_are_a_chain_s() {
    let old = ObjectId::null(gix::hash::Kind::Sha1);
    let deleted = Refusal::ProtectedDeleted {
        name: "refs/heads/main".into(),
    };
    assert_eq!(deleted.code(), "protected-deleted");
    assert!(!deleted.is_chain());
    assert_eq!(
        deleted.to_string(),
        "refs/heads/main: deleting a protected branch by push is refused"
    );
    let chain = Refusal::ChainAncestryUnknown {
        name: "refs/receipts/x".into(),
        old,
        new: old,
        error: "e".into(),
    };
    assert!(chain.is_chain());
    assert_eq!(
        chain.to_string(),
        "refs/receipts/x: cannot tell that 0000000 descends from 0000000 (e): chains are append-only, so only a fast-forward is accepted"
    );
    let m = Refusal::Misconfigured(Misconfigured::Unreadable("x".into()));
    assert_eq!(m.ref_name(), None);
    assert_eq!(m.to_string(), "x");
}

#[test]
fn the_server_refuses_a_protected_branch_whose_new_tip_lacks_receipts_and_its_deletion() {
    let repo = Repo::new();
    let old = repo.commit(&[(".gitreceipts", TEST_CHECK)], "one");
    let new = repo.commit(&[("a", "x")], "two");
    repo.git(&["update-ref", "refs/heads/main", &old.to_string()]);
    let mut store = repo.store();
    let got = server::pre_receive(
        &mut store,
        vec![received("refs/heads/main", Some(old), Some(new))],
    )
    .unwrap();
    match got.refusals.as_slice() {
        [
            Refusal::Lacking {
                name,
                label,
                judgement,
                ..
            },
        ] => {
            assert_eq!(name, "refs/heads/main");
            assert_eq!(
                label,
                &format!("refs/heads/main ({})", old.to_hex_with_len(7))
            );
            assert_eq!(states_of(judgement), [("test", true, "missing")]);
        }
        other => panic!("{other:?}"),
    }
    let mut store = repo.store();
    let got = server::pre_receive(
        &mut store,
        vec![received("refs/heads/main", Some(old), None)],
    )
    .unwrap();
    assert!(matches!(
        got.refusals.as_slice(),
        [Refusal::ProtectedDeleted { .. }]
    ));
    // an unprotected branch passes, and is told it is unguarded only when
    // nothing is protected
    let mut store = repo.store();
    let got = server::pre_receive(
        &mut store,
        vec![received("refs/heads/topic", None, Some(new))],
    )
    .unwrap();
    assert!(got.refusals.is_empty() && got.events.is_empty(), "{got:?}");
}

/// A server whose `main` is at `old`, whose `.gitreceipts` requires check `test`
/// and names `k` as signer `ci`, and a commit `new` on top of it with a passing
/// receipt of `test` by `k`: (the server, old, new).
fn server_with_a_receipted_tip(k: &SigningKey) -> (Repo, ObjectId, ObjectId) {
    let repo = Repo::new();
    let contract_text = format!(
        "{TEST_CHECK}[signer \"ci\"]\n\tkey = {}\n",
        k.public().to_openssh()
    );
    let old = repo.commit(&[(".gitreceipts", &contract_text)], "one");
    let new = repo.commit(&[("a", "x")], "two");
    repo.git(&["update-ref", "refs/heads/main", &old.to_string()]);
    record(&repo.store(), k, new, "test", true, Mode::Run);
    (repo, old, new)
}

#[test]
fn the_server_accepts_a_protected_branch_whose_new_tip_has_trusted_receipts() {
    let k = key(1);
    let (repo, old, new) = server_with_a_receipted_tip(&k);
    let mut store = repo.store();
    let got = server::pre_receive(
        &mut store,
        vec![received("refs/heads/main", Some(old), Some(new))],
    )
    .unwrap();
    assert!(got.refusals.is_empty(), "{:?}", got.refusals);
    // a key the old tip does not name counts for nothing
    let repo2 = Repo::new();
    let old = repo2.commit(&[(".gitreceipts", TEST_CHECK)], "one");
    let new = repo2.commit(&[("a", "x")], "two");
    repo2.git(&["update-ref", "refs/heads/main", &old.to_string()]);
    record(&repo2.store(), &k, new, "test", true, Mode::Run);
    let got = server::pre_receive(
        &mut repo2.store(),
        vec![received("refs/heads/main", Some(old), Some(new))],
    )
    .unwrap();
    assert!(matches!(got.refusals.as_slice(), [Refusal::Lacking { .. }]));
}

#[test]
fn creating_a_protected_branch_is_judged_by_another_protected_branch_or_refused() {
    let repo = Repo::new();
    let c = repo.commit(&[(".gitreceipts", TEST_CHECK)], "one");
    repo.git(&["config", "--add", "receipt.protectedBranch", "release/*"]);
    repo.git(&["config", "--add", "receipt.protectedBranch", "main"]);
    // main exists: release/1 is judged by main's tip
    let got = server::pre_receive(
        &mut repo.store(),
        vec![received("refs/heads/release/1", None, Some(c))],
    )
    .unwrap();
    match got.refusals.as_slice() {
        [Refusal::Lacking { label, .. }] => {
            assert_eq!(
                label,
                &format!("refs/heads/main ({})", c.to_hex_with_len(7))
            )
        }
        other => panic!("{other:?}"),
    }
    // no protected branch exists, but another branch does: refused
    repo.git(&["branch", "-m", "main", "topic"]);
    let got = server::pre_receive(
        &mut repo.store(),
        vec![received("refs/heads/release/1", None, Some(c))],
    )
    .unwrap();
    assert!(matches!(
        got.refusals.as_slice(),
        [Refusal::ProtectedCreatedUnjudged { .. }]
    ));
    // the very first push: nothing to judge by, said, not refused
    let empty = Repo::new();
    empty.git(&["config", "receipt.protectedBranch", "main"]);
    let got = server::pre_receive(
        &mut empty.store(),
        vec![received("refs/heads/main", None, Some(c))],
    )
    .unwrap();
    assert!(got.refusals.is_empty());
    assert_eq!(
        got.events,
        [Event::NotGated {
            name: "refs/heads/main".into()
        }]
    );
}

#[test]
fn a_server_that_protects_nothing_says_so_when_a_branch_is_pushed() {
    let repo = Repo::new();
    let c = repo.commit(&[], "one");
    repo.git(&["config", "receipt.protectedBranch", "trunk"]);
    let got = server::pre_receive(
        &mut repo.store(),
        vec![received("refs/heads/topic", None, Some(c))],
    )
    .unwrap();
    assert_eq!(
        got.events,
        [Event::Unprotected {
            which: "receipt.protectedBranch names refs/heads/trunk, which does not exist".into(),
            unguarded: vec!["refs/heads/topic".into()],
        }]
    );
    // a push of receipts alone is not a branch left unguarded
    let got = server::pre_receive(
        &mut repo.store(),
        vec![received("refs/notes/receipts/x", None, Some(c))],
    )
    .unwrap();
    assert!(got.events.is_empty());
}

#[test]
fn a_push_to_a_symbolic_ref_is_judged_as_an_update_of_its_target() {
    let repo = Repo::new();
    let old = repo.commit(&[(".gitreceipts", TEST_CHECK)], "one");
    let new = repo.commit(&[("a", "x")], "two");
    repo.git(&["update-ref", "refs/heads/main", &old.to_string()]);
    repo.git(&["symbolic-ref", "refs/heads/master", "refs/heads/main"]);
    let got = server::pre_receive(
        &mut repo.store(),
        vec![
            received("refs/heads/master", Some(old), Some(new)),
            received("refs/heads/main", Some(old), Some(new)),
        ],
    )
    .unwrap();
    assert_eq!(
        got.events,
        [Event::Symref {
            pushed: "refs/heads/master".into(),
            target: "refs/heads/main".into()
        }]
    );
    assert_eq!(got.refusals.len(), 1, "one ref by two names is judged once");
    // pushed by its symbolic name alone, the target is what is judged and refused
    let master = vec![received("refs/heads/master", Some(old), Some(new))];
    match refusals_of(&repo, master).as_slice() {
        [r @ Refusal::Lacking { .. }] => assert_eq!(r.ref_name(), Some("refs/heads/main")),
        other => panic!("{other:?}"),
    }
}

/// The refusals of a push of `updates` to `repo`.
fn refusals_of(repo: &Repo, updates: Vec<ReceivedRef>) -> Vec<Refusal> {
    server::pre_receive(&mut repo.store(), updates)
        .unwrap()
        .refusals
}

#[test]
fn receipts_pushed_with_a_protected_branch_count_for_its_new_tip() {
    let k = key(1);
    let (repo, old, new) = server_with_a_receipted_tip(&k);
    let (writer, tip) = repo.store().writers().unwrap()[0].clone();
    let chain = format!("refs/receipts/{writer}");
    // the server has not got the chain yet: the branch alone lacks its receipt
    repo.git(&["update-ref", "-d", &chain]);
    let main = || received("refs/heads/main", Some(old), Some(new));
    assert!(matches!(
        refusals_of(&repo, vec![main()]).as_slice(),
        [Refusal::Lacking { .. }]
    ));
    // the chain in the same push makes it present
    let got = refusals_of(&repo, vec![received(&chain, None, Some(tip)), main()]);
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn a_protected_branch_needs_an_acceptance_by_each_signer_require_acceptance_names() {
    let k = key(1);
    let (repo, old, new) = server_with_a_receipted_tip(&k);
    let main = || vec![received("refs/heads/main", Some(old), Some(new))];
    assert!(refusals_of(&repo, main()).is_empty());
    // blank names in the list are skipped
    repo.git(&["config", "receipt.requireAcceptance", " , ci,"]);
    match refusals_of(&repo, main()).as_slice() {
        [r @ Refusal::NotAccepted { signer, why, .. }] => {
            assert_eq!(signer, "ci");
            assert!(matches!(**why, NotAccepted::Absent { .. }), "{why:?}");
            assert_eq!(r.ref_name(), Some("refs/heads/main"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_protected_branch_whose_new_contract_is_over_the_limit_is_refused_unread() {
    let repo = Repo::new();
    let old = repo.commit(&[(".gitreceipts", TEST_CHECK)], "one");
    let limit = crate::contract::MAX_CONTRACT_BYTES;
    let big = "#".repeat(usize::try_from(limit).unwrap() + 1);
    let new = repo.commit(&[(".gitreceipts", &big)], "two");
    repo.git(&["update-ref", "refs/heads/main", &old.to_string()]);
    let main = vec![received("refs/heads/main", Some(old), Some(new))];
    match refusals_of(&repo, main).as_slice() {
        [r @ Refusal::ContractTooLarge { detail, .. }] => {
            assert_eq!(
                detail,
                &format!(
                    ".gitreceipts at {new} is {} bytes, over the {limit}-byte (4 MiB) limit for a contract, so it is not read",
                    limit + 1
                )
            );
            assert_eq!(r.ref_name(), Some("refs/heads/main"));
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------
// The pre-push plan
// ---------------------------------------------------------------------------------

fn pushed(remote_ref: &str, local: Option<ObjectId>) -> PushedRef {
    PushedRef {
        local_ref: String::new(),
        local,
        remote_ref: remote_ref.into(),
        remote: None,
    }
}

#[test]
fn the_pre_push_hook_gates_branches_and_tags_only_when_asked_never_deletions_or_receipts() {
    let c = Some(ObjectId::null(gix::hash::Kind::Sha1));
    let updates = [
        pushed("refs/heads/main", c),
        pushed("refs/heads/gone", None),
        pushed("refs/receipts/x", c),
        pushed("refs/notes/receipts/x", c),
        pushed("refs/tags/v1", c),
    ];
    let gated = |tags| -> Vec<String> {
        gated_refs(&updates, tags)
            .into_iter()
            .map(|(r, _)| r)
            .collect()
    };
    assert_eq!(gated(false), ["refs/heads/main"]);
    assert_eq!(gated(true), ["refs/heads/main", "refs/tags/v1"]);
    assert!(reviews_due(&["refs/heads/main".into()], "refs/heads/main"));
    assert!(reviews_due(&["refs/heads/r/*".into()], "refs/heads/r/1"));
    assert!(!reviews_due(
        &["refs/heads/main".into()],
        "refs/heads/topic"
    ));
    assert!(!reviews_due(&[], "refs/heads/main"));
    assert_eq!(PushPlan::default().carried, Vec::<String>::new());
}

#[test]
fn a_push_carries_a_chain_only_with_its_notes_at_their_local_tips() {
    let repo = Repo::new();
    repo.commit(&[(".gitreceipts", TEST_CHECK)], "one");
    let store = repo.store();
    let k = key(1);
    record(&store, &k, store.head().unwrap().0, "test", true, Mode::Run);
    let (writer, tip) = store.writers().unwrap()[0].clone();
    let notes = crate::store::notes::notes_ref(&writer);
    let notes_tip = store.ref_value(&notes).unwrap();
    let chain = format!("refs/receipts/{writer}");
    let both = [pushed(&chain, Some(tip)), pushed(&notes, notes_tip)];
    assert_eq!(
        super::push::carried_writers(&store, &both, true).unwrap(),
        std::slice::from_ref(&writer)
    );
    let chain_only = [pushed(&chain, Some(tip))];
    assert!(
        super::push::carried_writers(&store, &chain_only, true)
            .unwrap()
            .is_empty()
    );
    // notes not pushed (receipt.pushNotes false, CI): the chain alone carries
    assert_eq!(
        super::push::carried_writers(&store, &chain_only, false).unwrap(),
        std::slice::from_ref(&writer)
    );
    assert!(
        super::push::carried_writers(&store, &[pushed(&notes, notes_tip)], false)
            .unwrap()
            .is_empty()
    );
    let stale = [
        pushed(&chain, Some(notes_tip.unwrap())),
        pushed(&notes, notes_tip),
    ];
    assert!(
        super::push::carried_writers(&store, &stale, true)
            .unwrap()
            .is_empty()
    );
    assert!(
        super::push::carried_writers(&store, &stale, false)
            .unwrap()
            .is_empty()
    );
    assert!(super::push::reviewed_branches(&store, "origin").is_empty());
    repo.git(&["config", "receipt.protectedBranch", "main"]);
    assert_eq!(
        super::push::reviewed_branches(&repo.store(), "origin"),
        ["refs/heads/main"]
    );
}

#[test]
fn without_protected_branches_a_push_brings_reviews_to_the_branch_the_remotes_head_names() {
    let repo = Repo::new();
    let c = repo.commit(&[], "one").to_string();
    let reviewed = |remote| super::push::reviewed_branches(&repo.store(), remote);
    assert!(reviewed("origin").is_empty(), "no remote HEAD");
    repo.git(&["update-ref", "refs/remotes/origin/trunk", &c]);
    repo.git(&["update-ref", "--no-deref", "refs/remotes/origin/HEAD", &c]);
    assert!(
        reviewed("origin").is_empty(),
        "a remote HEAD that is not symbolic"
    );
    repo.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/trunk",
    ]);
    assert_eq!(reviewed("origin"), ["refs/heads/trunk"]);
    assert!(reviewed("upstream").is_empty(), "another remote's HEAD");
    repo.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/heads/main",
    ]);
    assert!(
        reviewed("origin").is_empty(),
        "a remote HEAD naming no branch of that remote"
    );
    repo.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/trunk",
    ]);
    repo.git(&["config", "receipt.protectedBranch", "release"]);
    assert_eq!(
        reviewed("origin"),
        ["refs/heads/release"],
        "receipt.protectedBranch, not the remote HEAD"
    );
}

// ---------------------------------------------------------------------------------
// What an acceptance cites
// ---------------------------------------------------------------------------------

/// An approval of review `def` on `commit` by `by`.
fn approve(store: &Store, by: &SigningKey, def: &ReviewDef, commit: ObjectId) -> String {
    let tree = store.commit_tree(commit).unwrap();
    let inputs = store.inputs_tree(tree, &def.paths, true).unwrap();
    crate::decision::append_decision(
        store,
        &writer_id(by.public(), "default"),
        by,
        crate::receipt::Subject {
            commit: commit.to_string(),
            tree: tree.to_string(),
            inputs: inputs.to_string(),
            dirty: false,
            dependencies: Vec::new(),
        },
        crate::decision::Payload::Review(crate::receipt::Review {
            name: def.name.clone(),
            paths: def.paths.clone(),
            verdict: crate::receipt::Verdict::Approve,
            message: String::new(),
            decided_at: crate::receipt::format_timestamp(1_700_000_000_000),
            accepts: None,
        }),
    )
    .unwrap()
    .receipt
    .id()
    .to_owned()
}

#[test]
fn the_trusted_commit_of_an_acceptance_is_the_baselines_revision_else_the_trust_root() {
    let repo = Repo::new();
    let first = repo.commit(&[("a", "1\n")], "first");
    let tip = repo.commit(&[("a", "2\n")], "second");
    let store = repo.store();
    let at = Baseline::At {
        commit: first,
        label: "first".into(),
    };
    assert_eq!(acceptance::trusted_commit(&store, tip, &at).unwrap(), first);
    // main's tip is its own trust root; a branch off main is held to main's tip
    assert_eq!(
        acceptance::trusted_commit(&store, tip, &Baseline::TrustRoot).unwrap(),
        tip
    );
    repo.git(&["switch", "-q", "-c", "topic"]);
    let topic = repo.commit(&[("a", "3\n")], "topic");
    let store = repo.store();
    for b in [Baseline::TrustRoot, Baseline::Own] {
        assert_eq!(acceptance::trusted_commit(&store, topic, &b).unwrap(), tip);
    }
}

#[test]
fn an_acceptance_cites_each_reviews_own_approvals_on_the_inputs_of_its_own_paths() {
    let repo = Repo::new();
    let contract = "[review \"alpha\"]\n\tpath = a\n\tself-approve = true\n[review \"beta\"]\n\tpath = b\n\trequired = 2\n\tself-approve = true\n";
    let commit = repo.commit(
        &[(".gitreceipts", contract), ("a/x", "a\n"), ("b/y", "b\n")],
        "two reviewed paths",
    );
    let store = repo.store();
    let rita = key(5);
    let c = contract_at(&store, commit, "HEAD").unwrap();
    let beta = c.reviews.iter().find(|r| r.name == "beta").unwrap().clone();
    let sam = key(8);
    let mut approvals = vec![
        approve(&store, &rita, &beta, commit),
        approve(&store, &sam, &beta, commit),
    ];
    approvals.sort();
    let trust = trusting(&[&rita, &sam]);
    let j = judged(&store, commit, &trust, &Baseline::Own);
    assert_eq!(
        states_of(&j),
        [
            ("review:alpha", true, "missing"),
            ("review:beta", true, "present")
        ]
    );
    let required: Vec<&CheckState> = j.states.iter().collect();
    let a = acceptance::acceptance(
        &store,
        &j,
        &required,
        &trust.set,
        commit,
        "2024-01-01T00:00:00.000Z".into(),
    )
    .unwrap();
    let tree = store.commit_tree(commit).unwrap();
    let by_name = |n: &str| a.criteria.iter().find(|c| c.name == n).unwrap();
    let b = by_name("beta");
    assert_eq!(b.kind, CriterionKind::Review);
    assert_eq!(b.state, State::Present);
    assert_eq!(
        b.evidence, approvals,
        "a present review cites all its approvals, not just the one that decided"
    );
    assert_eq!(
        b.inputs,
        store
            .inputs_tree(tree, &["b".to_owned()], false)
            .unwrap()
            .to_string(),
        "the inputs of beta's own paths"
    );
    let al = by_name("alpha");
    assert_eq!(al.state, State::Missing);
    assert!(al.evidence.is_empty());
    assert_eq!(
        al.inputs,
        store
            .inputs_tree(tree, &["a".to_owned()], false)
            .unwrap()
            .to_string()
    );
    assert_eq!(a.status, Status::Rejected);
}

#[test]
#[allow(clippy::result_large_err)] // the closure hands back accepted_by's own answer
fn whether_a_signer_accepted_a_tree_is_its_newest_acceptance_and_only_one_that_counts_here() {
    let repo = Repo::new();
    let commit = repo.commit(
        &[
            (".gitreceipts", "[check \"test\"]\n\trun = true\n\trequired = true\n[check \"lint\"]\n\trun = true\n"),
            ("src/lib.rs", "x\n"),
        ],
        "main",
    );
    let store = repo.store();
    let ci = key(6);
    let trust = trusting(&[&ci]);
    let fp = ci.public().fingerprint();
    let tree = store.commit_tree(commit).unwrap();
    let mut notices = Vec::new();
    let ask = |notices: &mut Vec<String>| {
        acceptance::accepted_by(&store, &trust.set, commit, tree, &fp, notices).unwrap()
    };
    assert_eq!(
        ask(&mut notices),
        Err(NotAccepted::Absent {
            tree: tree.to_string(),
            signer: fp.clone()
        })
    );
    assert!(matches!(
        acceptance::accepted_by(&store, &trust.set, commit, tree, "nobody", &mut notices),
        Err(PolicyError::UnknownSigner(_))
    ));
    let sign = |criteria: Vec<(Criterion, String)>| {
        let a = acceptance::body(criteria, commit, "2024-01-01T00:00:00.000Z".into());
        crate::decision::append_decision(
            &store,
            &writer_id(ci.public(), "default"),
            &ci,
            acceptance::subject(&store, commit).unwrap(),
            crate::decision::Payload::Acceptance(a),
        )
        .unwrap()
        .receipt
        .id()
        .to_owned()
    };
    // a partial acceptance (lint only, test required) does not count here
    let partial = sign(vec![criterion(
        CriterionKind::Check,
        "lint",
        State::Present,
    )]);
    assert_eq!(
        ask(&mut notices),
        Err(NotAccepted::DoesNotCountHere {
            tree: tree.to_string(),
            receipt: partial,
            why: crate::decision::NotHere::Partial {
                trusted: commit.to_string(),
                missing: vec!["check test".into()]
            }
        })
    );
    // a complete one does
    sign(vec![criterion(
        CriterionKind::Check,
        "test",
        State::Present,
    )]);
    assert_eq!(ask(&mut notices), Ok(()));
    // the newest decides: a later rejection takes it back
    let rejected = sign(vec![criterion(CriterionKind::Check, "test", State::Failed)]);
    match ask(&mut notices) {
        Err(NotAccepted::Rejected {
            receipt,
            unresolved,
            ..
        }) => {
            assert_eq!(receipt, rejected);
            assert_eq!(unresolved, [("test".to_owned(), "failed".to_owned())]);
        }
        other => panic!("{other:?}"),
    }
    assert!(notices.is_empty(), "{notices:?}");
}

#[test]
fn a_revocation_at_the_default_branchs_tip_reaches_a_branch_forked_before_it() {
    let repo = Repo::new();
    let k = key(7);
    let signer = format!("[signer \"k\"]\n\tkey = {}\n", k.public().to_openssh());
    let base = repo.commit(&[(".gitreceipts", signer.as_str())], "trust k");
    repo.git(&["switch", "-q", "-c", "topic"]);
    let topic = repo.commit(&[("t", "t\n")], "topic");
    repo.git(&["switch", "-q", "main"]);
    let fp = k.public().fingerprint();
    let store = repo.store();
    let (set, root) = super::trust::reader_trust(&store, topic, None).unwrap();
    assert_eq!(root.commit, Some(base));
    assert!(
        !set.lookup(&fp).unwrap().revoked,
        "trusted before the revocation"
    );
    repo.commit(
        &[(
            ".gitreceipts",
            format!("{signer}\trevoked = true\n").as_str(),
        )],
        "revoke k",
    );
    let store = repo.store();
    let (set, root) = super::trust::reader_trust(&store, topic, None).unwrap();
    assert_eq!(
        root.commit,
        Some(base),
        "the trust root is still the fork point"
    );
    assert!(
        set.lookup(&fp).unwrap().revoked,
        "the tip's revocation applies to the branch forked before it"
    );
}

/// An OpenSSH `ssh-ed25519` line for the 32 bytes `point`, whatever they encode.
fn ssh_ed25519_line(point: [u8; 32]) -> String {
    use base64::Engine as _;
    let mut blob = Vec::new();
    for part in [b"ssh-ed25519".as_slice(), point.as_slice()] {
        blob.extend((part.len() as u32).to_be_bytes());
        blob.extend_from_slice(part);
    }
    format!(
        "ssh-ed25519 {}",
        base64::engine::general_purpose::STANDARD.encode(blob)
    )
}

#[test]
fn a_signer_whose_key_no_signature_can_verify_under_is_a_warning_by_name() {
    let mut identity = [0u8; 32];
    identity[0] = 1; // the neutral point: small order
    let good = key(4);
    let c = contract(&format!(
        "[signer \"weak\"]\n\tkey = {}\n[signer \"good\"]\n\tkey = {}\n",
        ssh_ed25519_line(identity),
        good.public().to_openssh()
    ));
    let notices = trust::unusable_signers(&c, ".gitreceipts at v1");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].code, "signer-key-unusable");
    assert!(
        notices[0]
            .message
            .starts_with("signer \"weak\" in .gitreceipts at v1: ")
            && notices[0]
                .message
                .ends_with("; no receipt can verify under that key"),
        "{}",
        notices[0].message
    );
    assert!(trust::unusable_signers(&contract("[check \"t\"]\n\trun = true\n"), "x").is_empty());
}

#[test]
fn a_trust_root_is_named_by_its_short_id_and_where_it_comes_from() {
    let c = ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").unwrap();
    assert_eq!(
        trust_root_label(c),
        "0123456 (the trust root on the default branch's first-parent history)"
    );
}

#[test]
fn a_range_is_judged_by_each_commits_own_trust_root_computed_once_per_root() {
    let repo = Repo::new();
    let (a, b) = (key(1), key(2));
    let with = |k: &SigningKey| {
        format!(
            "{TEST_CHECK}[signer \"s\"]\n\tkey = {}\n",
            k.public().to_openssh()
        )
    };
    let m1 = repo.commit(&[(".gitreceipts", with(&a).as_str())], "main 1: trusts a");
    repo.git(&["switch", "-q", "-c", "old"]);
    let o1 = repo.commit(&[("o", "1\n")], "old 1");
    let o2 = repo.commit(&[("o", "2\n")], "old 2");
    repo.git(&["switch", "-q", "main"]);
    let m2 = repo.commit(&[(".gitreceipts", with(&b).as_str())], "main 2: trusts b");
    repo.git(&["switch", "-q", "-c", "new"]);
    let n1 = repo.commit(&[("n", "1\n")], "new 1");
    repo.git(&["switch", "-q", "main"]);
    let store = repo.store();
    let listed = [o2, o1, n1, m2, m1];
    for verify in [false, true] {
        let (judging, judged_by) =
            trust::per_trust_root(&store, "--all", &listed, None, verify).unwrap();
        assert_eq!(
            judging.len(),
            2,
            "two trust roots, m1 and m2 (verify {verify})"
        );
        for (commit, &i) in listed.iter().zip(&judged_by) {
            let alone = trust::reader(&store, *commit, None).unwrap();
            let (t, baseline) = &judging[i];
            assert_eq!(t.description, alone.description, "{commit}");
            let keys = |set: &TrustSet| {
                let mut v: Vec<String> = set.keys().map(|k| k.key.fingerprint()).collect();
                v.sort();
                v
            };
            assert_eq!(keys(&t.set), keys(&alone.set), "{commit}");
            match (verify, baseline) {
                (true, Baseline::At { commit: c, label }) => {
                    assert_eq!(Some(*c), alone.root);
                    assert_eq!(*label, trust_root_label(*c));
                }
                (false, Baseline::Own) => {}
                other => panic!("verify {verify}: {other:?}"),
            }
        }
        assert_eq!(judged_by[0], judged_by[1], "old 1 and old 2 share m1");
        assert_eq!(judged_by[2], judged_by[3], "new 1 and main 2 share m2");
        assert_ne!(judged_by[0], judged_by[2]);
    }
}

#[test]
fn a_trusted_key_is_named_in_reasons_by_its_signer_name_else_its_fingerprint() {
    let (ci, other) = (key(6), key(7));
    let mut set = TrustSet::default();
    set.add_contract(contract(&format!(
        "[signer \"ci\"]\n\tkey = {}\n",
        ci.public().to_openssh()
    )));
    set.add(other.public().clone(), TrustOrigin::Config);
    let (ci_fp, other_fp) = (ci.public().fingerprint(), other.public().fingerprint());
    assert_eq!(super::judge::signer_label(&set, &ci_fp), "ci");
    assert_eq!(super::judge::signer_label(&set, &other_fp), other_fp);
    assert_eq!(
        super::judge::signer_label(&set, "SHA256:unknown"),
        "SHA256:unknown"
    );
}

/// A pattern's refs are listed from its literal directory, cut after its last
/// `/`: under a directory whose name is not ASCII the cut must fall on a
/// character boundary (git allows UTF-8 in ref names).
#[test]
fn a_pattern_under_a_non_ascii_directory_finds_its_branches() {
    let repo = Repo::new();
    let c = repo.commit(&[], "one");
    repo.git(&["branch", "é/1"]);
    repo.git(&["branch", "éx"]);
    repo.git(&["config", "receipt.protectedBranch", "é/*"]);
    let p = Protected::load(&repo.store()).unwrap();
    assert_eq!(p.patterns, ["refs/heads/é/*"]);
    assert_eq!(p.existing, [("refs/heads/é/1".to_owned(), c)]);
}
