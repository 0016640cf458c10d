//! Unit tests of who observed a run (issue 29): `[signer] observer = true`,
//! `accept = run-by:NAMES` and `accept-protected`, as the judge applies them.
//! Which keys are observers is read from the trusted rules only, so a branch
//! that edits its own `.gitreceipts` gains nothing.

use gix::ObjectId;

use super::tests::{Repo, contract, key, record};
use super::*;
use crate::freshness::{DEFAULT_WALK_LIMIT, State};
use crate::receipt::Mode;
use crate::sign::SigningKey;
use crate::store::Store;
use crate::trust::TrustSet;

/// The developer's key and CI's.
fn keys() -> (SigningKey, SigningKey) {
    (key(1), key(2))
}

/// `.gitreceipts` declaring `dev` and `ci` (`ci_observer`: with `observer =
/// true`), and a required check `test` with the `accept` lines given.
fn rules(dev: &SigningKey, ci: &SigningKey, ci_observer: bool, accept: &str) -> String {
    format!(
        "[signer \"dev\"]\n\tkey = {}\n[signer \"ci\"]\n\tkey = {}\n\tobserver = {ci_observer}\n\
         [check \"test\"]\n\trun = true\n\trequired = true\n{accept}",
        dev.public().to_openssh(),
        ci.public().to_openssh(),
    )
}

/// The trust of the trusted revision `trusted`: its signers, as the server and
/// a verifier hold them.
fn trust_at(store: &Store, trusted: ObjectId) -> Trust {
    let mut set = TrustSet::default();
    set.add_contract(super::contract::contract_at(store, trusted, "main").unwrap());
    Trust::given(set, "signers of .gitreceipts at main")
}

/// `test`'s state at `here` against `baseline`, for a protected branch or not.
fn test_state(
    store: &Store,
    here: ObjectId,
    trust: &Trust,
    baseline: &Baseline,
    protected: bool,
) -> (crate::freshness::CheckState, Judgement) {
    let opts = Options {
        walk_limit: DEFAULT_WALK_LIMIT,
        now_ms: crate::clock::now_ms(),
        protected,
    };
    let j = judge(
        store,
        &Revision::commit("HEAD", here),
        trust,
        baseline,
        opts,
    )
    .unwrap();
    let s = j.states.iter().find(|s| s.name == "test").unwrap().clone();
    (s, j)
}

/// A trusted `main` declaring the developer and CI (an observer) with the
/// `accept` lines given, and a commit on top of it that changes a file.
struct Scene {
    dev: SigningKey,
    ci: SigningKey,
    repo: Repo,
    store: Store,
    trusted: ObjectId,
    here: ObjectId,
    trust: Trust,
}

fn scene(accept: &str) -> Scene {
    let (dev, ci) = keys();
    let repo = Repo::new();
    let main = rules(&dev, &ci, true, accept);
    let trusted = repo.commit(&[(".gitreceipts", &main)], "trusted");
    let here = repo.commit(&[("src.txt", "change")], "change");
    let store = repo.store();
    let trust = trust_at(&store, trusted);
    Scene {
        dev,
        ci,
        repo,
        store,
        trusted,
        here,
        trust,
    }
}

fn at(trusted: ObjectId) -> Baseline {
    Baseline::At {
        commit: trusted,
        label: "main".into(),
    }
}

#[test]
fn a_developers_run_does_not_count_where_run_by_ci_is_required_and_cis_observed_run_does() {
    let sc = scene("\taccept = run-by:ci\n");
    let (dev, ci, store, trusted, here, trust) =
        (&sc.dev, &sc.ci, &sc.store, sc.trusted, sc.here, &sc.trust);
    for baseline in [Baseline::Own, at(trusted)] {
        let (s, _) = test_state(store, here, trust, &baseline, false);
        assert_eq!(s.state, State::Missing, "{baseline:?}: {}", s.reason);
    }
    // (who signs, how it was obtained, what the reason then ends with)
    let passed_over = [
        (
            &dev,
            Mode::Run,
            "(1 run by another signer ignored: accept = run-by:ci counts only runs signed by an observer it names)",
        ),
        // CI's word for a result it did not observe counts no more than anyone's
        (
            &ci,
            Mode::Record,
            "(1 recorded receipt and 1 run by another signer ignored: accept = run-by:ci counts only runs signed by an observer it names)",
        ),
    ];
    for (by, mode, reason) in passed_over {
        record(store, by, here, "test", true, mode);
        let (s, _) = test_state(store, here, trust, &at(trusted), false);
        assert_eq!(s.state, State::Missing, "{}", s.reason);
        assert!(s.reason.ends_with(reason), "{}", s.reason);
    }
    // CI's observed run decides, for every baseline
    record(store, ci, here, "test", true, Mode::Run);
    for baseline in [Baseline::Own, at(trusted)] {
        let (s, j) = test_state(store, here, trust, &baseline, false);
        assert_eq!(s.state, State::Present, "{baseline:?}: {}", s.reason);
        let decider = s.decider.unwrap();
        assert_eq!(decider.receipt.signature().key, ci.public().fingerprint());
        assert_eq!(j.accept_of("test").to_string(), "run-by:ci");
    }
    // and a failed observed run by CI fails: the developer's pass does not hide it
    record(store, ci, here, "test", false, Mode::Run);
    let (s, _) = test_state(store, here, trust, &at(trusted), false);
    assert_eq!(s.state, State::Failed, "{}", s.reason);
}

#[test]
fn a_branch_that_makes_its_own_key_an_observer_or_drops_run_by_gains_nothing() {
    let sc = scene("\taccept = run-by:ci\n");
    let (dev, ci, repo, store, trusted, trust) =
        (&sc.dev, &sc.ci, &sc.repo, &sc.store, sc.trusted, &sc.trust);
    let dev_observer = |accept: &str| {
        format!(
            "[signer \"dev\"]\n\tkey = {}\n\tobserver = true\n[signer \"ci\"]\n\tkey = {}\n\tobserver = true\n\
             [check \"test\"]\n\trun = true\n\trequired = true\n{accept}",
            dev.public().to_openssh(),
            ci.public().to_openssh(),
        )
    };
    // (what the branch's .gitreceipts says, whether its own rules hold without
    // a trusted revision, what is evaluated against main, whether that is
    // stricter than what the branch says)
    let cases = [
        (
            dev_observer("\taccept = run-by:dev\n"),
            true,
            "run-by:",
            true,
        ),
        (
            dev_observer("\taccept = run-by:ci,dev\n"),
            true,
            "run-by:ci",
            true,
        ),
        // CI's name on the developer's key
        (
            rules(ci, dev, true, "\taccept = run-by:ci\n"),
            true,
            "run-by:ci",
            false,
        ),
        (rules(dev, ci, true, ""), false, "run-by:ci", true),
        (
            rules(dev, ci, true, "\taccept = run\n"),
            false,
            "run-by:ci",
            true,
        ),
        (
            rules(dev, ci, false, "\taccept-protected = any\n"),
            false,
            "run-by:ci",
            true,
        ),
    ];
    for (i, (text, holds_alone, evaluated, tightened)) in cases.iter().enumerate() {
        repo.git(&["checkout", "-q", "--detach", &trusted.to_string()]);
        let here = repo.commit(
            &[(".gitreceipts", text), ("src.txt", &format!("change {i}"))],
            "the branch edits its rules",
        );
        record(store, dev, here, "test", true, Mode::Run);
        for protected in [false, true] {
            let (s, j) = test_state(store, here, trust, &at(trusted), protected);
            assert_ne!(s.state, State::Present, "{text}: {}", s.reason);
            assert_eq!(j.accept_of("test").to_string(), *evaluated, "{text}");
            let told = j.reasons.iter().any(|r| {
                matches!(
                    r,
                    Reason::AcceptTightened { check, evaluated: e, .. }
                        if check == "test" && e == evaluated
                )
            });
            assert_eq!(told, *tightened, "{text}: {:?}", j.reasons);
        }
        // judged by its own rules (status, the pre-push hook), the observers'
        // keys still come from the trusted signers
        if *holds_alone {
            let (s, _) = test_state(store, here, trust, &Baseline::Own, false);
            assert_ne!(s.state, State::Present, "{text}: {}", s.reason);
        }
    }
    // the rules the branch names and main's share no observer: nothing counts
    repo.git(&["checkout", "-q", "--detach", &trusted.to_string()]);
    let here = repo.commit(
        &[
            (".gitreceipts", &dev_observer("\taccept = run-by:dev\n")),
            ("src.txt", "again"),
        ],
        "dev only",
    );
    record(store, ci, here, "test", true, Mode::Run);
    let (s, _) = test_state(store, here, trust, &at(trusted), false);
    assert_eq!(s.state, State::Missing, "{}", s.reason);
    assert!(s.reason.contains("have none in common"), "{}", s.reason);
}

#[test]
fn accept_protected_applies_only_when_judged_for_a_protected_branch() {
    let sc = scene("\taccept-protected = run-by:ci\n");
    let (dev, ci, store, trusted, here, trust) =
        (&sc.dev, &sc.ci, &sc.store, sc.trusted, sc.here, &sc.trust);
    record(store, dev, here, "test", true, Mode::Run);
    for baseline in [Baseline::Own, at(trusted)] {
        let (topic, j) = test_state(store, here, trust, &baseline, false);
        assert_eq!(topic.state, State::Present, "{}", topic.reason);
        assert_eq!(j.accept_of("test"), &crate::contract::Accept::Any);
        let (protected, j) = test_state(store, here, trust, &baseline, true);
        assert_eq!(protected.state, State::Missing, "{}", protected.reason);
        assert_eq!(j.accept_of("test").to_string(), "run-by:ci");
    }
    record(store, ci, here, "test", true, Mode::Run);
    let (protected, _) = test_state(store, here, trust, &at(trusted), true);
    assert_eq!(protected.state, State::Present, "{}", protected.reason);
    // with none, accept-protected is accept
    let c = contract(&rules(dev, ci, true, "\taccept = run-by:ci\n"));
    assert_eq!(c.checks[0].accept_for(true).to_string(), "run-by:ci");
}

#[test]
fn run_by_counts_nothing_until_the_trusted_rules_declare_the_observer() {
    let (dev, ci) = keys();
    let repo = Repo::new();
    // main trusts ci, but not as an observer; the branch declares it one and
    // asks for its runs: a branch cannot make its own observers
    let trusted = repo.commit(&[(".gitreceipts", &rules(&dev, &ci, false, ""))], "trusted");
    let here = repo.commit(
        &[(
            ".gitreceipts",
            &rules(&dev, &ci, true, "\taccept = run-by:ci\n"),
        )],
        "ci observes",
    );
    let store = repo.store();
    let trust = trust_at(&store, trusted);
    record(&store, &ci, here, "test", true, Mode::Run);
    for baseline in [Baseline::Own, at(trusted)] {
        let (s, _) = test_state(&store, here, &trust, &baseline, false);
        assert_eq!(s.state, State::Missing, "{}", s.reason);
        assert!(
            s.reason.ends_with(
                "(no receipt counts: accept = run-by:ci names no signer that the trusted .gitreceipts declares observer = true)"
            ),
            "{}",
            s.reason
        );
    }
    // once main declares it, the same receipt counts
    let mut set = TrustSet::default();
    set.add_contract(contract(&rules(&dev, &ci, true, "")));
    let trust = Trust::given(set, "main after the merge");
    let (s, _) = test_state(&store, here, &trust, &Baseline::Own, false);
    assert_eq!(s.state, State::Present, "{}", s.reason);
    // a name main does not declare beside one it does: a notice, the other counts
    let mut set = TrustSet::default();
    set.add_contract(contract(&format!(
        "{}[signer \"nightly\"]\n\tkey = {}\n",
        rules(&dev, &ci, true, ""),
        key(3).public().to_openssh()
    )));
    let trust = Trust::given(set, "main");
    repo.git(&["checkout", "-q", "--detach", &here.to_string()]);
    let text = rules(&dev, &ci, true, "\taccept = run-by:ci,nightly\n")
        + &format!(
            "[signer \"nightly\"]\n\tkey = {}\n\tobserver = true\n",
            key(3).public().to_openssh()
        );
    let both = repo.commit(&[(".gitreceipts", &text)], "nightly too");
    record(&store, &ci, both, "test", true, Mode::Run);
    let (s, _) = test_state(&store, both, &trust, &Baseline::Own, false);
    assert_eq!(s.state, State::Present, "{}", s.reason);
    assert_eq!(
        s.notices,
        [
            "accept = run-by:ci,nightly: the trusted .gitreceipts declares no observer named nightly, so only the others' runs count"
        ]
    );
}

#[test]
fn a_looser_accept_protected_is_told_even_where_the_contract_needs_no_copy() {
    let (dev, ci) = keys();
    let trusted = contract(&rules(&dev, &ci, true, "\taccept = run-by:ci\n"));
    let here = contract(&rules(
        &dev,
        &ci,
        true,
        "\taccept = run-by:ci\n\taccept-protected = any\n",
    ));
    let shared = std::sync::Arc::new(here);
    let mut judged = shared.clone();
    let reasons = super::judge::tighten_accept(&mut judged, Some((&trusted, "T")), true);
    assert_eq!(
        reasons,
        [Reason::AcceptTightened {
            check: "test".into(),
            trusted: "T".into(),
            here: "any".into(),
            evaluated: "run-by:ci".into(),
        }]
    );
    assert!(
        std::sync::Arc::ptr_eq(&judged, &shared),
        "accept is already what is evaluated"
    );
    // for a topic branch there is nothing to tell, and without a trusted
    // revision the branch's own accept-protected holds
    let mut topic = shared.clone();
    assert!(super::judge::tighten_accept(&mut topic, Some((&trusted, "T")), false).is_empty());
    let mut own = shared.clone();
    assert!(super::judge::tighten_accept(&mut own, None, true).is_empty());
    assert_eq!(own.checks[0].accept, crate::contract::Accept::Any);
    assert_eq!(
        shared.checks[0].accept.to_string(),
        "run-by:ci",
        "the shared parse is untouched"
    );
}
