//! The review rules of `docs/freshness.md` ("Reviews and acceptances") and the
//! evidence rules of acceptances, as unit tests: review receipts appended through
//! [`append_decision`] in a repository made by stock git, trust sets of seeded keys.

use super::*;
use crate::freshness::rules::{Scratch, T0, git_in};
use crate::receipt::{Criterion, Status, writer_id};
use crate::trust::TrustOrigin;

fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed(&[seed; 32])
}

fn review_def(paths: &[&str], required: u32, self_approve: bool) -> ReviewDef {
    ReviewDef {
        name: "code".into(),
        paths: paths.iter().map(|p| p.to_string()).collect(),
        required,
        self_approve,
    }
}

/// `by`'s verdict on review `def` at `commit`, decided `minute` minutes after T0.
fn verdict(
    s: &Scratch,
    by: &SigningKey,
    def: &ReviewDef,
    commit: ObjectId,
    v: Verdict,
    message: &str,
    minute: u64,
) -> Appended {
    let tree = s.store.commit_tree(commit).unwrap();
    let inputs = s.store.inputs_tree(tree, &def.paths, true).unwrap();
    append_decision(
        &s.store,
        &writer_id(by.public(), "default"),
        by,
        Subject {
            commit: commit.to_string(),
            tree: tree.to_string(),
            inputs: inputs.to_string(),
            dirty: false,
            dependencies: Vec::new(),
        },
        Payload::Review(Review {
            name: def.name.clone(),
            paths: def.paths.clone(),
            verdict: v,
            message: message.into(),
            decided_at: crate::receipt::format_timestamp(T0 + minute * 60_000),
            accepts: None,
        }),
    )
    .unwrap()
}

/// Names a signer by the seed of its test key.
fn label(fp: &str) -> String {
    (1..=9u8)
        .find(|&i| key(i).public().fingerprint() == fp)
        .map_or_else(|| fp.to_owned(), |i| format!("k{i}"))
}

/// The labels of these keys in the order approvers are listed: by fingerprint.
fn by_fingerprint(seeds: &[u8]) -> String {
    let mut fps: Vec<String> = seeds
        .iter()
        .map(|&i| key(i).public().fingerprint())
        .collect();
    fps.sort();
    fps.iter()
        .map(|fp| label(fp))
        .collect::<Vec<_>>()
        .join(", ")
}

fn trust_of(seeds: &[u8]) -> TrustSet {
    let mut t = TrustSet::default();
    for &i in seeds {
        t.add(key(i).public().clone(), TrustOrigin::Config);
    }
    t
}

fn state(s: &Scratch, trust: &TrustSet, commit: ObjectId, def: &ReviewDef) -> ReviewState {
    state_within(s, trust, commit, def, crate::freshness::DEFAULT_WALK_LIMIT)
}

fn state_within(
    s: &Scratch,
    trust: &TrustSet,
    commit: ObjectId,
    def: &ReviewDef,
    limit: usize,
) -> ReviewState {
    let tree = s.store.commit_tree(commit).unwrap();
    review_state(&s.store, trust, commit, tree, def, limit, &label).unwrap()
}

fn two_commits() -> (Scratch, ObjectId, ObjectId) {
    let s = Scratch::new();
    let a = s.commit(&[("src/lib.rs", "a\n"), ("README", "r\n")], "A");
    let b = s.commit(&[("README", "r2\n")], "B");
    (s, a, b)
}

#[test]
fn reviews_present_with_required_distinct_trusted_approvals() {
    let (s, a, b) = two_commits();
    let def = review_def(&["src"], 2, true);
    let trust = trust_of(&[1, 2]);
    let st = state(&s, &trust, b, &def);
    assert_eq!(st.state, State::Missing);
    assert_eq!(
        st.reason.to_string(),
        "missing: no trusted approval of these inputs (needs 2)"
    );
    assert_eq!((st.name.as_str(), st.required), ("code", 2));
    let first = verdict(&s, &key(1), &def, a, Verdict::Approve, "", 1);
    let st = state(&s, &trust, b, &def);
    assert_eq!(st.state, State::Missing);
    assert_eq!(st.reason.to_string(), "missing: 1 of 2 approvals (by k1)");
    // the same signer twice is one approver
    verdict(&s, &key(1), &def, b, Verdict::Approve, "", 2);
    assert_eq!(
        state(&s, &trust, b, &def).reason.to_string(),
        "missing: 1 of 2 approvals (by k1)"
    );
    // an untrusted key's approval counts for nothing, and is counted
    verdict(&s, &key(5), &def, b, Verdict::Approve, "", 3);
    let st = state(&s, &trust, b, &def);
    assert_eq!((st.state, st.untrusted), (State::Missing, 1));
    let second = verdict(&s, &key(2), &def, b, Verdict::Approve, "", 4);
    let st = state(&s, &trust, b, &def);
    assert_eq!(st.state, State::Present);
    assert_eq!(
        st.reason.to_string(),
        format!("present: approved by {}", by_fingerprint(&[1, 2]))
    );
    assert_eq!(st.approvals.len(), 2);
    assert!(
        st.approvals
            .iter()
            .any(|(fp, id)| fp == &key(2).public().fingerprint() && id == second.receipt.id())
    );
    assert!(
        !st.approvals.iter().any(|(_, id)| id == first.receipt.id()),
        "k1's newest verdict counts"
    );
    assert_eq!(
        st.decider.unwrap().receipt.id(),
        second.receipt.id(),
        "the newest approval"
    );
    let tree = s.store.commit_tree(b).unwrap();
    assert_eq!(
        st.inputs,
        s.store.inputs_tree(tree, &def.paths, false).unwrap()
    );
    // required = 0 still needs one approval to be present
    let zero = review_def(&["src"], 0, true);
    let st = state(&s, &trust_of(&[2]), b, &zero);
    assert_eq!(st.state, State::Present);
    let st = state(&s, &trust_of(&[3]), b, &zero);
    assert_eq!(
        st.reason.to_string(),
        "missing: no trusted approval of these inputs (needs 1)"
    );
}

#[test]
fn reviews_a_signer_s_newest_verdict_counts_and_a_rejection_fails() {
    let (s, _a, b) = two_commits();
    let def = review_def(&["src"], 1, true);
    let trust = trust_of(&[1, 2]);
    verdict(&s, &key(1), &def, b, Verdict::Approve, "", 1);
    let reject = verdict(&s, &key(2), &def, b, Verdict::Reject, "needs tests", 2);
    let st = state(&s, &trust, b, &def);
    assert_eq!(st.state, State::Failed);
    assert_eq!(st.reason.to_string(), "failed: rejected by k2: needs tests");
    assert_eq!(st.decider.unwrap().receipt.id(), reject.receipt.id());
    // k2 changes its mind
    verdict(&s, &key(2), &def, b, Verdict::Approve, "", 3);
    assert_eq!(
        state(&s, &trust, b, &def).reason.to_string(),
        format!("present: approved by {}", by_fingerprint(&[1, 2]))
    );
    verdict(&s, &key(1), &def, b, Verdict::Reject, "", 4);
    assert_eq!(
        state(&s, &trust, b, &def).reason.to_string(),
        "failed: rejected by k1"
    );
}

#[test]
fn reviews_an_approval_counts_only_for_the_paths_it_signed() {
    let (s, _a, b) = two_commits();
    let signed = review_def(&["nothing-here"], 1, true);
    let asked = review_def(&["absent-too"], 1, true);
    verdict(&s, &key(1), &signed, b, Verdict::Approve, "", 1);
    let trust = trust_of(&[1]);
    assert_eq!(state(&s, &trust, b, &signed).state, State::Present);
    let st = state(&s, &trust, b, &asked);
    assert_eq!(st.state, State::Missing, "{}", st.reason);
}

#[test]
fn reviews_only_an_ancestor_approved_is_stale_within_the_walk_limit() {
    let (s, a, _b) = two_commits();
    let def = review_def(&["src"], 1, true);
    let trust = trust_of(&[1]);
    verdict(&s, &key(1), &def, a, Verdict::Approve, "", 1);
    let mut tip = a;
    for i in 0..3 {
        tip = s.commit(&[("src/lib.rs", &format!("{i}\n"))], "src");
    }
    // A is four commits back (B, then three touching src)
    let st = state_within(&s, &trust, tip, &def, 4);
    assert_eq!(st.state, State::Stale);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: approved on {} by k1, but the reviewed paths changed since",
            a.to_hex_with_len(7)
        )
    );
    assert!(st.decider.is_some());
    let st = state_within(&s, &trust, tip, &def, 3);
    assert_eq!(st.state, State::Missing);
    assert_eq!(
        st.reason.to_string(),
        "missing: no trusted approval of these inputs (needs 1)"
    );
    // a rejection on an ancestor makes nothing stale
    let (s, a, _) = two_commits();
    verdict(&s, &key(1), &def, a, Verdict::Reject, "", 1);
    let h = s.commit(&[("src/lib.rs", "x\n")], "src");
    assert_eq!(state(&s, &trust, h, &def).state, State::Missing);
}

/// The review walk is bounded by depth as a check's is: merges every ten
/// commits do not eat the bound (issue 27).
#[test]
fn reviews_the_walk_limit_is_depth_so_merges_do_not_eat_it() {
    let mut s = Scratch::new();
    let (root, tip) = s.merge_heavy(1000);
    let def = review_def(&["src"], 1, true);
    let trust = trust_of(&[1]);
    verdict(&s, &key(1), &def, root, Verdict::Approve, "", 1);
    let st = state_within(&s, &trust, tip, &def, 1000);
    assert_eq!(st.state, State::Stale, "{}", st.reason);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "stale: approved on {} by k1, but the reviewed paths changed since",
            root.to_hex_with_len(7)
        )
    );
    let st = state_within(&s, &trust, tip, &def, 999);
    assert_eq!(st.state, State::Missing, "{}", st.reason);
}

#[test]
fn reviews_past_a_shallow_boundary_cannot_be_decided() {
    let (s, a, _b) = two_commits();
    let def = review_def(&["src"], 1, true);
    let trust = trust_of(&[1]);
    verdict(&s, &key(1), &def, a, Verdict::Approve, "", 1);
    let mut tip = a;
    for i in 0..3 {
        tip = s.commit(&[("src/lib.rs", &format!("{i}\n"))], "src");
    }
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", s.dir.path().display());
    git_in(dir.path(), &["clone", "-q", "--depth", "2", &url, "c"]);
    let c = dir.path().join("c");
    git_in(&c, &["config", "receipt.index", "false"]);
    git_in(
        &c,
        &["fetch", "-q", "origin", "refs/receipts/*:refs/receipts/*"],
    );
    let store = Store::open(&c).unwrap();
    let tree = store.commit_tree(tip).unwrap();
    match review_state(&store, &trust, tip, tree, &def, 1000, &label) {
        Err(e @ FreshnessError::ShallowReview { .. }) => {
            let FreshnessError::ShallowReview { boundary, review } = &e else {
                unreachable!()
            };
            assert_eq!(review, "code");
            assert_eq!(
                *boundary,
                s.store.resolve_commit("HEAD~1").unwrap(),
                "the last commit this clone has"
            );
            assert!(e.to_string().starts_with(&format!(
                "history is shallow at {boundary}: cannot tell whether review \"code\" is stale or missing"
            )));
        }
        Err(e) => panic!("{e}"),
        Ok(st) => panic!("decided from truncated history: {}", st.reason),
    }
    // within the history it has, an approval is found before the boundary
    let full = state(&s, &trust, tip, &def);
    assert_eq!(full.state, State::Stale);
}

#[test]
fn reviews_without_self_approve_an_unsigned_commit_s_approvals_do_not_count() {
    let (s, _a, b) = two_commits();
    let def = review_def(&["src"], 1, false);
    let trust = trust_of(&[1]);
    verdict(&s, &key(1), &def, b, Verdict::Approve, "", 1);
    let st = state(&s, &trust, b, &def);
    assert_eq!(st.state, State::Missing);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "missing: commit {} has no verified SSH signature, so its author is unknown and no approval can be told from a self-approval (self-approve = false)",
            b.to_hex_with_len(7)
        )
    );
    assert!(st.approvals.is_empty());
    assert_eq!(commit_author(&s.store, &trust, b), Author::Unsigned);
    assert_eq!(commit_signer(&s.store, b), None);
    // with self-approve = true it counts
    let yes = review_def(&["src"], 1, true);
    assert_eq!(state(&s, &trust, b, &yes).state, State::Present);
}

#[test]
fn reviews_an_author_is_known_only_by_a_trusted_unrevoked_key() {
    let c = ObjectId::from_hex("ab".repeat(20).as_bytes()).unwrap();
    assert_eq!(Author::Known("SHA256:x".into()).unknown_reason(c), None);
    assert_eq!(
        Author::Untrusted("SHA256:x".into())
            .unknown_reason(c)
            .unwrap(),
        "commit abababa is signed by SHA256:x, an untrusted key, so its author is unknown and no approval can be told from a self-approval (self-approve = false)"
    );
    assert_eq!(
        Author::Unsigned.unknown_reason(c).unwrap(),
        "commit abababa has no verified SSH signature, so its author is unknown and no approval can be told from a self-approval (self-approve = false)"
    );
    // only an untrusted signer is named as one
    assert_eq!(
        Author::Untrusted("SHA256:x".into()).untrusted_signer(),
        Some("SHA256:x")
    );
    assert_eq!(Author::Known("SHA256:x".into()).untrusted_signer(), None);
    assert_eq!(Author::Unsigned.untrusted_signer(), None);
}

pub(crate) fn acceptance_body(s: &Scratch, commit: ObjectId, criteria: Vec<Criterion>) -> Body {
    let tree = s.store.commit_tree(commit).unwrap();
    Body {
        schema: SCHEMA_V3.into(),
        kind: Kind::Acceptance,
        chain: Chain {
            writer: writer_id(key(1).public(), "default"),
            index: 0,
            prev: None,
        },
        subject: Subject {
            commit: commit.to_string(),
            tree: tree.to_string(),
            inputs: tree.to_string(),
            dirty: false,
            dependencies: Vec::new(),
        },
        check: Default::default(),
        result: Default::default(),
        acceptance: Some(Acceptance {
            status: Status::Accepted,
            trusted: commit.to_string(),
            decided_at: crate::receipt::format_timestamp(T0),
            criteria,
            unresolved: Vec::new(),
        }),
        review: None,
        runner: Runner {
            tool: "t".into(),
            host: "h".into(),
            os: "o".into(),
        },
        supersedes: None,
    }
}

#[test]
fn acceptances_each_claim_must_be_backed_by_what_it_cites() {
    let (s, _a, b) = two_commits();
    let c = crate::freshness::rules::contract(
        "[check \"test\"]\n\trun = true\n\tpath = src\n[review \"code\"]\n\tpath = src\n\trequired = 2\n",
    );
    let trust = trust_of(&[1, 2]);
    let pass = s.run(&key(1), &c, "test", b, 0, 1);
    let fail = s.run(&key(1), &c, "test", b, 1, 2);
    let def = review_def(&["src"], 2, true);
    let approval = verdict(&s, &key(2), &def, b, Verdict::Approve, "", 3);
    let tree = s.store.commit_tree(b).unwrap();
    let inputs = s
        .store
        .inputs_tree(tree, &["src".into()], false)
        .unwrap()
        .to_string();
    let writer = |k: u8| writer_id(key(k).public(), "default");
    let chain: Vec<(String, String, ObjectId)> = [
        (&pass, writer(1)),
        (&fail, writer(1)),
        (&approval, writer(2)),
    ]
    .into_iter()
    .map(|(a, w)| (a.receipt.id().to_owned(), w, a.commit))
    .collect();
    let locate = |id: &str| {
        chain
            .iter()
            .find(|(i, _, _)| i == id)
            .map(|(_, w, c)| (w.clone(), *c))
    };
    let criterion = |kind, name: &str, st, evidence: Vec<&str>| Criterion {
        kind,
        name: name.into(),
        state: st,
        inputs: inputs.clone(),
        evidence: evidence.into_iter().map(str::to_owned).collect(),
    };
    let problems = |criteria| {
        acceptance_problems(&s.store, &trust, &acceptance_body(&s, b, criteria), &locate)
            .into_iter()
            .map(|p| p.reason)
            .collect::<Vec<_>>()
    };
    // backed claims
    assert!(
        problems(vec![criterion(
            CriterionKind::Check,
            "test",
            State::Present,
            vec![pass.receipt.id()]
        )])
        .is_empty()
    );
    assert!(
        problems(vec![criterion(
            CriterionKind::Check,
            "test",
            State::Failed,
            vec![fail.receipt.id()]
        )])
        .is_empty()
    );
    assert!(
        problems(vec![criterion(
            CriterionKind::Check,
            "test",
            State::Missing,
            vec![]
        )])
        .is_empty()
    );
    let (p, f, r) = (pass.receipt.id(), fail.receipt.id(), approval.receipt.id());
    assert_eq!(
        problems(vec![criterion(
            CriterionKind::Check,
            "test",
            State::Present,
            vec![]
        )]),
        ["claims check test present but cites no receipt"]
    );
    assert_eq!(
        problems(vec![criterion(
            CriterionKind::Check,
            "test",
            State::Present,
            vec![f]
        )]),
        [format!(
            "claims check test present citing {f}, which failed (exit 1)"
        )]
    );
    assert_eq!(
        problems(vec![criterion(
            CriterionKind::Check,
            "test",
            State::Failed,
            vec![p]
        )]),
        [format!("claims check test failed citing {p}, which passed")]
    );
    assert_eq!(
        problems(vec![criterion(
            CriterionKind::Check,
            "test",
            State::Missing,
            vec![p]
        )]),
        [format!("claims check test missing yet cites {p}")]
    );
    assert_eq!(
        problems(vec![criterion(
            CriterionKind::Check,
            "test",
            State::Present,
            vec!["sha256:00"]
        )]),
        ["claims check test present citing sha256:00, which is in no chain here"]
    );
    assert_eq!(
        problems(vec![criterion(
            CriterionKind::Check,
            "lint",
            State::Present,
            vec![p]
        )]),
        [format!(
            "claims check lint present citing {p}, which is a receipt of test"
        )]
    );
    // a receipt of other inputs backs no present or failed claim
    let a_tree = s.store.commit_tree(_a).unwrap();
    let a_inputs = s.store.inputs_tree(a_tree, &["src".into()], false).unwrap();
    let elsewhere = s.run(
        &key(1),
        &c,
        "test",
        s.commit(&[("src/lib.rs", "other\n")], "src"),
        0,
        4,
    );
    s.git(&["reset", "-q", "--hard", &b.to_string()]);
    let mut chain = chain;
    chain.push((
        elsewhere.receipt.id().to_owned(),
        writer(1),
        elsewhere.commit,
    ));
    let locate = |id: &str| {
        chain
            .iter()
            .find(|(i, _, _)| i == id)
            .map(|(_, w, c)| (w.clone(), *c))
    };
    let e = elsewhere.receipt.id();
    let other_inputs = &elsewhere.receipt.body().subject.inputs;
    for claimed in [State::Present, State::Failed] {
        let got: Vec<String> = acceptance_problems(
            &s.store,
            &trust,
            &acceptance_body(
                &s,
                b,
                vec![criterion(CriterionKind::Check, "test", claimed, vec![e])],
            ),
            &locate,
        )
        .into_iter()
        .map(|p| p.reason)
        .collect();
        assert_eq!(
            got[0],
            format!(
                "claims check test {} citing {e}, which is about other inputs ({}) than the decided revision's ({})",
                claimed.as_str(),
                &other_inputs[..7],
                &inputs[..7]
            )
        );
    }
    let _ = a_inputs;
    // a review needs as many distinct approvers as the contract there asks
    let _ = (
        r,
        s.commit(
            &[(
                ".gitreceipts",
                "[review \"code\"]\n\tpath = src\n\trequired = 2\n",
            )],
            "contract",
        ),
    );
    let head = s.head();
    let body = acceptance_body(
        &s,
        head,
        vec![criterion(
            CriterionKind::Review,
            "code",
            State::Present,
            vec![r],
        )],
    );
    let got: Vec<String> = acceptance_problems(&s.store, &trust, &body, &locate)
        .into_iter()
        .map(|p| p.reason)
        .collect();
    assert_eq!(
        got,
        ["claims review code present citing approvals by 1 distinct trusted signer; it needs 2"]
    );
    // evidence by a key that is not trusted counts for nothing
    let got = acceptance_problems(
        &s.store,
        &trust_of(&[2]),
        &acceptance_body(
            &s,
            b,
            vec![criterion(
                CriterionKind::Check,
                "test",
                State::Present,
                vec![p],
            )],
        ),
        &locate,
    );
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].criterion, "check test");
    assert_eq!(got[0].cited.as_deref(), Some(p));
    assert_eq!(
        got[0].reason,
        format!(
            "claims check test present citing {p}, which counts for nothing: not signed by a trusted key"
        )
    );
    // no acceptance: nothing to check
    let mut plain = acceptance_body(&s, b, vec![]);
    plain.acceptance = None;
    assert!(acceptance_problems(&s.store, &trust, &plain, &locate).is_empty());
}

#[test]
fn acceptances_the_newest_by_the_named_keys_is_found_by_tree() {
    let (s, _a, b) = two_commits();
    let tree = s.store.commit_tree(b).unwrap();
    let trust = trust_of(&[1, 2]);
    let body = acceptance_body(&s, b, vec![]);
    let accepted = append_decision(
        &s.store,
        &writer_id(key(1).public(), "default"),
        &key(1),
        body.subject.clone(),
        Payload::Acceptance(body.acceptance.clone().unwrap()),
    )
    .unwrap();
    let mut index = s.store.receipt_index().unwrap();
    let mut notices = Vec::new();
    let k1 = vec![key(1).public().fingerprint()];
    let found = newest_acceptance(&s.store, &mut index, &trust, tree, &k1, &mut notices)
        .unwrap()
        .unwrap();
    assert_eq!(found.receipt.id(), accepted.receipt.id());
    assert_eq!(found.writer, writer_id(key(1).public(), "default"));
    let k2 = vec![key(2).public().fingerprint()];
    assert!(
        newest_acceptance(&s.store, &mut index, &trust, tree, &k2, &mut notices)
            .unwrap()
            .is_none()
    );
    assert!(notices.is_empty());
    let other = s
        .store
        .commit_tree(s.store.resolve_commit("HEAD~1").unwrap())
        .unwrap();
    assert!(
        newest_acceptance(&s.store, &mut index, &trust, other, &k1, &mut notices)
            .unwrap()
            .is_none()
    );
}

/// Commit everything, SSH-signed (`gpg.format = ssh`) by the test key of `seed`,
/// written as an OpenSSH private key file for `ssh-keygen -Y sign`.
fn signed_commit(s: &Scratch, seed: u8, files: &[(&str, &str)]) -> ObjectId {
    use std::os::unix::fs::PermissionsExt as _;
    let secret = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
    let keypair = ssh_key::private::Ed25519Keypair::from(&secret);
    let pem = ssh_key::PrivateKey::new(keypair.into(), "author")
        .unwrap()
        .to_openssh(ssh_key::LineEnding::LF)
        .unwrap();
    let path = s.dir.path().join(format!(".git/author-{seed}"));
    std::fs::write(&path, pem.as_bytes()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    for (p, content) in files {
        std::fs::write(s.dir.path().join(p), content).unwrap();
    }
    s.git(&["add", "-A"]);
    let key = path.to_str().unwrap();
    s.git(&[
        "-c",
        "gpg.format=ssh",
        "-c",
        &format!("user.signingKey={key}"),
        "commit",
        "-q",
        "-S",
        "-m",
        "signed",
    ]);
    s.head()
}

#[test]
fn reviews_without_self_approve_the_author_s_own_approval_does_not_count() {
    let (s, _a, _b) = two_commits();
    let h = signed_commit(&s, 3, &[("src/lib.rs", "by k3\n")]);
    let author = key(3).public().clone();
    assert_eq!(commit_signer(&s.store, h), Some(author.clone()));
    let trust = trust_of(&[1, 3]);
    assert_eq!(
        commit_author(&s.store, &trust, h),
        Author::Known(author.fingerprint())
    );
    assert_eq!(
        commit_author(&s.store, &trust_of(&[1]), h),
        Author::Untrusted(author.fingerprint())
    );
    let mut revoked = trust_of(&[1]);
    revoked.add_entry(crate::trust::Trusted {
        key: author.clone(),
        origin: TrustOrigin::Config,
        valid_after: None,
        valid_before: None,
        revoked: true,
    });
    assert_eq!(
        commit_author(&s.store, &revoked, h),
        Author::Untrusted(author.fingerprint())
    );
    let def = review_def(&["src"], 1, false);
    verdict(&s, &key(3), &def, h, Verdict::Approve, "", 1);
    let st = state(&s, &trust, h, &def);
    assert_eq!(st.state, State::Missing);
    assert_eq!(
        st.reason.to_string(),
        "missing: the author's own approval does not count (self-approve = false)"
    );
    // the author's approval with another's: 1 of 2
    let two = review_def(&["src"], 2, false);
    verdict(&s, &key(3), &two, h, Verdict::Approve, "", 2);
    verdict(&s, &key(1), &two, h, Verdict::Approve, "", 3);
    assert_eq!(
        state(&s, &trust, h, &two).reason.to_string(),
        "missing: 1 of 2 approvals (by k1); the author's own approval does not count (self-approve = false)"
    );
    verdict(&s, &key(1), &def, h, Verdict::Approve, "", 4);
    let st = state(&s, &trust, h, &def);
    assert_eq!(st.state, State::Present);
    assert_eq!(st.reason.to_string(), "present: approved by k1");
    // signed by an untrusted key: no approval of it can count
    let st = state(&s, &trust_of(&[1]), h, &def);
    assert_eq!(st.state, State::Missing);
    assert_eq!(
        st.reason.to_string(),
        format!(
            "missing: commit {} is signed by {}, an untrusted key, so its author is unknown and no approval can be told from a self-approval (self-approve = false)",
            h.to_hex_with_len(7),
            author.fingerprint()
        )
    );
    // an unsigned commit names no author
    assert_eq!(
        commit_signer(&s.store, s.store.resolve_commit("HEAD~1").unwrap()),
        None
    );
}

#[test]
fn reviews_verdicts_here_that_do_not_count_keep_it_missing_without_a_walk() {
    let (s, a, b) = two_commits();
    let def = review_def(&["src"], 1, false);
    let trust = trust_of(&[1]);
    // an approval of A's inputs would make B stale, but a verdict on B's own
    // inputs that cannot count (unknown author) keeps it missing, with why
    let tip = s.commit(&[("src/lib.rs", "changed\n")], "src");
    verdict(
        &s,
        &key(1),
        &review_def(&["src"], 1, true),
        a,
        Verdict::Approve,
        "",
        1,
    );
    verdict(&s, &key(1), &def, tip, Verdict::Approve, "", 2);
    let st = state(&s, &trust, tip, &def);
    assert_eq!(st.state, State::Missing);
    assert!(
        st.reason.starts_with(&format!(
            "missing: commit {} has no verified SSH signature",
            tip.to_hex_with_len(7)
        )),
        "{}",
        st.reason
    );
    assert!(st.decider.is_none());
    let _ = b;
}

#[test]
fn reviews_a_verdict_dated_in_the_future_counts_for_nothing_and_leaves_a_notice() {
    let (s, _a, b) = two_commits();
    let def = review_def(&["src"], 1, true);
    let trust = trust_of(&[1]);
    // 2099: far past the clock and its skew
    let minutes = (4_070_908_800_000 - T0) / 60_000;
    let future = verdict(&s, &key(1), &def, b, Verdict::Reject, "", minutes);
    let st = state(&s, &trust, b, &def);
    assert_eq!(st.state, State::Missing);
    assert_eq!(st.notices.len(), 1);
    assert!(
        st.notices[0].contains(future.receipt.id()),
        "{}",
        st.notices[0]
    );
}

#[test]
fn reviews_a_revoked_reviewer_counts_for_nothing_and_is_counted() {
    let (s, _a, b) = two_commits();
    let def = review_def(&["src"], 1, true);
    verdict(&s, &key(1), &def, b, Verdict::Approve, "", 1);
    let mut revoked = TrustSet::default();
    revoked.add_entry(crate::trust::Trusted {
        key: key(1).public().clone(),
        origin: TrustOrigin::Config,
        valid_after: None,
        valid_before: None,
        revoked: true,
    });
    let st = state(&s, &revoked, b, &def);
    assert_eq!((st.state, st.untrusted), (State::Missing, 1));
}

#[test]
fn reviews_approvals_given_at_the_same_time_are_decided_by_the_first_signer() {
    let (s, _a, b) = two_commits();
    let def = review_def(&["src"], 2, true);
    let one = verdict(&s, &key(1), &def, b, Verdict::Approve, "", 1);
    let two = verdict(&s, &key(2), &def, b, Verdict::Approve, "", 1);
    let st = state(&s, &trust_of(&[1, 2]), b, &def);
    assert_eq!(st.state, State::Present);
    // approvers are read by fingerprint; on a tie the first read stays the decider
    let first = if key(1).public().fingerprint() < key(2).public().fingerprint() {
        one
    } else {
        two
    };
    assert_eq!(st.decider.unwrap().receipt.id(), first.receipt.id());
}

#[test]
fn acceptances_are_found_for_exactly_the_tree_they_signed() {
    let (s, _a, b) = two_commits();
    let tree = s.store.commit_tree(b).unwrap();
    let trust = trust_of(&[1]);
    // signed for inputs = B's tree but another `tree`: not an acceptance of B's tree
    let mut body = acceptance_body(&s, b, vec![]);
    body.subject.tree = "cd".repeat(20);
    append_decision(
        &s.store,
        &writer_id(key(1).public(), "default"),
        &key(1),
        body.subject.clone(),
        Payload::Acceptance(body.acceptance.clone().unwrap()),
    )
    .unwrap();
    let mut index = s.store.receipt_index().unwrap();
    let keys = vec![key(1).public().fingerprint()];
    assert!(
        newest_acceptance(&s.store, &mut index, &trust, tree, &keys, &mut Vec::new())
            .unwrap()
            .is_none()
    );
}

#[test]
fn acceptances_a_review_claim_is_held_to_its_approvals() {
    let (s, _a, b) = two_commits();
    let c = crate::freshness::rules::contract("[check \"test\"]\n\trun = true\n\tpath = src\n");
    let trust = trust_of(&[1, 2]);
    let def = review_def(&["src"], 1, true);
    let other = ReviewDef {
        name: "other".into(),
        ..def.clone()
    };
    let k1 = verdict(&s, &key(1), &def, b, Verdict::Approve, "", 1);
    let k2 = verdict(&s, &key(2), &def, b, Verdict::Approve, "", 2);
    let rejects = verdict(&s, &key(2), &def, b, Verdict::Reject, "", 3);
    let of_other = verdict(&s, &key(1), &other, b, Verdict::Approve, "", 4);
    let check = s.run(&key(1), &c, "test", b, 0, 5);
    // an approval of other inputs of src (a later commit's)
    let later = s.commit(&[("src/lib.rs", "later\n")], "C");
    let of_later = verdict(&s, &key(1), &def, later, Verdict::Approve, "", 6);
    let w = |k: u8| writer_id(key(k).public(), "default");
    let chain: Vec<(String, String, ObjectId)> = [
        (&k1, w(1)),
        (&k2, w(2)),
        (&rejects, w(2)),
        (&of_other, w(1)),
        (&check, w(1)),
        (&of_later, w(1)),
    ]
    .into_iter()
    .map(|(a, w)| (a.receipt.id().to_owned(), w, a.commit))
    .collect();
    let locate = |id: &str| {
        chain
            .iter()
            .find(|(i, _, _)| i == id)
            .map(|(_, w, c)| (w.clone(), *c))
    };
    let tree = s.store.commit_tree(b).unwrap();
    let inputs = s
        .store
        .inputs_tree(tree, &def.paths, false)
        .unwrap()
        .to_string();
    let problems = |st: State, inputs: &str, evidence: &[&str]| -> Vec<String> {
        let body = acceptance_body(
            &s,
            b,
            vec![Criterion {
                kind: CriterionKind::Review,
                name: "code".into(),
                state: st,
                inputs: inputs.to_owned(),
                evidence: evidence.iter().map(|e| e.to_string()).collect(),
            }],
        );
        acceptance_problems(&s.store, &trust, &body, &locate)
            .into_iter()
            .map(|p| p.reason)
            .collect()
    };
    let (a1, a2, r, o, k) = (
        k1.receipt.id(),
        k2.receipt.id(),
        rejects.receipt.id(),
        of_other.receipt.id(),
        check.receipt.id(),
    );
    // no contract anywhere: one approval is enough
    assert_eq!(
        problems(State::Present, &inputs, &[a1]),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(State::Present, &inputs, &[a1, a2]),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(State::Present, &inputs, &[r]),
        [
            format!("claims review code present citing {r}, which rejects"),
            "claims review code present citing approvals by 0 distinct trusted signers; it needs 1"
                .to_owned()
        ]
    );
    assert_eq!(
        problems(State::Present, &inputs, &[o]),
        [
            format!("claims review code present citing {o}, which is a receipt of review other"),
            "claims review code present citing approvals by 0 distinct trusted signers; it needs 1"
                .to_owned()
        ]
    );
    assert_eq!(
        problems(State::Present, &inputs, &[k])[0],
        format!("claims review code present citing {k}, which is a receipt of test")
    );
    assert_eq!(
        problems(State::Stale, &inputs, &[a1]),
        [format!(
            "claims review code stale citing {a1}, which is about the decided inputs themselves"
        )]
    );
    // stale is backed by an approval of other inputs than the decided ones
    assert_eq!(
        problems(State::Stale, &inputs, &[of_later.receipt.id()]),
        Vec::<String>::new()
    );
    // the criterion's own inputs must be the decided revision's too
    let elsewhere = "ef".repeat(20);
    assert_eq!(
        problems(State::Present, &elsewhere, &[a1])[0],
        format!(
            "claims review code present citing {a1}, which is about other inputs ({}) than the decided revision's ({})",
            &inputs[..7],
            &inputs[..7]
        )
    );
}

fn criterion(kind: CriterionKind, name: &str) -> Criterion {
    Criterion {
        kind,
        name: name.into(),
        state: State::Present,
        inputs: String::new(),
        evidence: Vec::new(),
    }
}

#[test]
fn acceptances_count_only_on_gated_history_and_only_when_complete() {
    let s = Scratch::new();
    let r = s.commit(&[("README", "r\n")], "R, before any contract");
    let contract = "[check \"test\"]\n\trun = true\n\tpath = src\n\trequired = true\n[check \"docs\"]\n\trun = true\n[review \"code\"]\n\tpath = src\n\trequired = 1\n[review \"shown\"]\n\tpath = src\n\trequired = 0\n";
    let a = s.commit(&[(".gitreceipts", contract), ("src/lib.rs", "a\n")], "A");
    let b = s.commit(&[("README", "r2\n")], "B");
    s.git(&["switch", "-q", "-c", "side", &a.to_string()]);
    let side = s.commit(&[("x", "x\n")], "side");
    s.git(&["switch", "-q", "main"]);
    let full = vec![
        criterion(CriterionKind::Check, "test"),
        criterion(CriterionKind::Review, "code"),
    ];
    let acc = |trusted: &str, criteria: &[Criterion]| {
        let mut x = acceptance_body(&s, b, Vec::new()).acceptance.unwrap();
        x.trusted = trusted.to_owned();
        x.criteria = criteria.to_vec();
        x
    };
    let counts = |trusted: &str, criteria: &[Criterion]| {
        counts_here(&s.store, &acc(trusted, criteria)).unwrap()
    };
    // the tip and an older first-parent commit are gated history
    assert_eq!(counts(&b.to_string(), &full), Ok(()));
    assert_eq!(counts(&a.to_string(), &full), Ok(()));
    // what is required comes from the trusted commit: nothing before the contract
    assert_eq!(counts(&r.to_string(), &[]), Ok(()));
    // a commit that is not here, or no commit id at all
    for absent in ["1234567890123456789012345678901234567890", "not-hex", ""] {
        assert_eq!(
            counts(absent, &full),
            Err(NotHere::TrustedAbsent {
                trusted: absent.into()
            })
        );
    }
    // here, but off the first-parent history: nobody gated its rules
    match counts(&side.to_string(), &full) {
        Err(NotHere::TrustedNotGated { trusted, why }) => {
            assert_eq!(trusted, side.to_string());
            assert!(
                why.contains("is not on the first-parent history of refs/heads/main")
                    && why.contains(&a.to_hex_with_len(7).to_string()),
                "{why}"
            );
        }
        other => panic!("{other:?}"),
    }
    // partial: each required criterion left out is named, by kind (a review with
    // `required = 0` is shown, not required)
    assert_eq!(
        counts(&b.to_string(), &full[..1]),
        Err(NotHere::Partial {
            trusted: b.to_string(),
            missing: vec!["review code".into()]
        })
    );
    assert_eq!(
        counts(&b.to_string(), &[criterion(CriterionKind::Check, "docs")]),
        Err(NotHere::Partial {
            trusted: b.to_string(),
            missing: vec!["check test".into(), "review code".into()]
        })
    );
    // a check criterion does not stand in for a review of the same name
    assert_eq!(
        counts(
            &b.to_string(),
            &[
                criterion(CriterionKind::Check, "test"),
                criterion(CriterionKind::Check, "code")
            ]
        ),
        Err(NotHere::Partial {
            trusted: b.to_string(),
            missing: vec!["review code".into()]
        })
    );
    // the words name the commit and what is missing
    let words = NotHere::Partial {
        trusted: b.to_string(),
        missing: vec!["check test".into(), "review code".into()],
    }
    .to_string();
    assert!(
        words.contains(&format!(
            "check test, review code required at {} are not among its criteria",
            b.to_hex_with_len(7)
        )),
        "{words}"
    );
    assert!(
        NotHere::Partial {
            trusted: b.to_string(),
            missing: vec!["check test".into()],
        }
        .to_string()
        .contains("check test required at")
            && NotHere::TrustedAbsent {
                trusted: "1234567890".into()
            }
            .to_string()
            .contains("commit 1234567, which is not in this repository"),
    );
}

#[test]
fn a_signer_name_finds_a_key_the_set_holds_under_another_origin() {
    let k = key(7);
    let contract = crate::contract::Contract::parse(
        format!("[signer \"ci\"]\n\tkey = {}\n", k.public().to_openssh()).as_bytes(),
        std::path::Path::new(".gitreceipts"),
    )
    .unwrap();
    let mut trust = TrustSet::default();
    trust.add(k.public().clone(), TrustOrigin::OwnKey);
    trust.add_contract(contract);
    assert_eq!(signer_keys(&trust, "ci"), vec![k.public().fingerprint()]);
    assert_eq!(
        signer_keys(&trust, &k.public().fingerprint()),
        vec![k.public().fingerprint()]
    );
    assert!(signer_keys(&trust, "nobody").is_empty());
    assert!(trust.fingerprints_named("nobody").is_empty());
}

/// A verdict is found by the role of the object it signed: a review whose
/// signed `inputs` names this commit (a commit id where a tree belongs) is no
/// approval *on* this commit, so the walk does not find it and the review is
/// missing, not stale.
#[test]
fn reviews_a_verdict_is_found_only_in_the_role_it_signed() {
    let (s, _a, b) = two_commits();
    let def = review_def(&["src"], 1, true);
    let trust = trust_of(&[2]);
    let tree = s.store.commit_tree(b).unwrap();
    append_decision(
        &s.store,
        &writer_id(key(2).public(), "default"),
        &key(2),
        Subject {
            commit: "ab".repeat(20),
            tree: tree.to_string(),
            inputs: b.to_string(),
            dirty: false,
            dependencies: Vec::new(),
        },
        Payload::Review(Review {
            name: def.name.clone(),
            paths: def.paths.clone(),
            verdict: Verdict::Approve,
            message: String::new(),
            decided_at: crate::receipt::format_timestamp(T0),
            accepts: None,
        }),
    )
    .unwrap();
    // the index does propose it for this commit, as inputs
    let hits = s
        .store
        .index_lookup(&mut s.store.receipt_index().unwrap(), &b)
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.role).collect::<Vec<_>>(),
        [Role::Inputs]
    );
    let st = state(&s, &trust, b, &def);
    assert_eq!(st.state, State::Missing, "{}", st.reason);
    assert_eq!(
        st.reason,
        "missing: no trusted approval of these inputs (needs 1)"
    );
    assert!(st.decider.is_none());
}

/// `by`'s accepted regression of `tests` of check `name` whose receipt is
/// `of`: its inputs, under `definition` (the receipt's when `None`), decided
/// `minute` minutes after T0.
fn accept_regression(
    s: &Scratch,
    by: &SigningKey,
    name: &str,
    of: &Receipt<Verified>,
    tests: &[&str],
    definition: Option<&str>,
    minute: u64,
) -> Appended {
    let b = of.body();
    append_decision(
        &s.store,
        &writer_id(by.public(), "default"),
        by,
        b.subject.clone(),
        Payload::Review(Review {
            name: name.into(),
            paths: b.check.paths.clone(),
            verdict: Verdict::Approve,
            message: "wanted".into(),
            decided_at: crate::receipt::format_timestamp(T0 + minute * 60_000),
            accepts: Some(crate::receipt::Accepts {
                definition: definition.unwrap_or(&b.check.definition).to_owned(),
                tests: tests.iter().map(|t| t.to_string()).collect(),
                metrics: Vec::new(),
            }),
        }),
    )
    .unwrap()
}

/// A failed comparison of `check` with new failures a, b, c and d.
fn four_new_failures(check: &str) -> crate::parity::Comparison {
    crate::parity::Comparison {
        check: check.into(),
        baseline: "0123456789abcdef".into(),
        baseline_receipt: "r".into(),
        tests_compared: true,
        new_failures: ["a", "b", "c", "d"].map(String::from).to_vec(),
        fixed: Vec::new(),
        still_failing: 0,
        allowed: 0,
        metrics: Vec::new(),
        max_regression_bp: None,
        accepted: Vec::new(),
        accepted_by: Vec::new(),
    }
}

#[test]
fn an_accepted_regression_counts_for_its_check_inputs_definition_and_time_by_a_trusted_key() {
    // two check names whose 32-bit index keys collide as regressions (found
    // by hashing `regression:check-N` for N from 0 up)
    let (name, twin) = ("check-141202", "check-1389320");
    assert_eq!(
        check_hash(&decision_key(DecisionKind::Regression, name)),
        check_hash(&decision_key(DecisionKind::Regression, twin)),
        "the pair collides under the regression key too"
    );
    let s = Scratch::new();
    let a = s.commit(&[("src/lib.rs", "a\n")], "A");
    let c = crate::freshness::rules::contract(&format!(
        "[check \"{name}\"]\n\trun = false\n\tpath = src\n"
    ));
    let here = s.run(&key(1), &c, name, a, 1, 0).receipt;
    let b = s.commit(&[("src/lib.rs", "b\n")], "B");
    let there = s.run(&key(1), &c, name, b, 1, 0).receipt;
    let trust = trust_of(&[1, 2]);
    // (the check says self-accept = true: k1 signed `here` and may accept it)
    let accepted_as = |until: Option<u64>, self_accept: bool| {
        let mut cmp = four_new_failures(name);
        let mut notices = Vec::new();
        accept_regressions(
            &s.store,
            &trust,
            &here,
            &mut cmp,
            until,
            self_accept,
            &label,
            &mut notices,
        )
        .unwrap();
        (cmp.accepted, cmp.accepted_by, notices)
    };
    let accepted = |until: Option<u64>| {
        let (tests, by, notices) = accepted_as(until, true);
        assert!(notices.is_empty(), "{notices:?}");
        (tests, by)
    };
    assert_eq!(accepted(None), (vec![], vec![]), "none yet");
    // what must not count: another key, definition, inputs or check
    accept_regression(&s, &key(3), name, &here, &["a"], None, 1);
    let other = format!("sha256:{}", "0".repeat(64));
    accept_regression(&s, &key(2), name, &here, &["b"], Some(&other), 2);
    accept_regression(&s, &key(2), name, &there, &["c"], None, 3);
    accept_regression(&s, &key(2), twin, &here, &["d"], None, 4);
    // nor a plain review of the check's name
    verdict(
        &s,
        &key(2),
        &ReviewDef {
            name: name.into(),
            paths: vec!["src".into()],
            required: 1,
            self_approve: true,
        },
        a,
        Verdict::Approve,
        "",
        5,
    );
    assert_eq!(accepted(None), (vec![], vec![]), "none of them counts");
    // what counts: a trusted key's, of these inputs and this definition
    let by_k2 = accept_regression(&s, &key(2), name, &here, &["c", "d"], None, 6).receipt;
    let by_k1 = accept_regression(&s, &key(1), name, &here, &["a"], None, 7).receipt;
    let words = |r: &Receipt<Verified>, k: &str| format!("{k} ({})", &r.id()[..19]);
    assert_eq!(
        accepted(None),
        (
            ["a", "c", "d"].map(String::from).to_vec(),
            vec![words(&by_k1, "k1"), words(&by_k2, "k2")]
        ),
        "newest first, each named"
    );
    // without self-accept, k1's own acceptance of k1's receipt counts for
    // nothing, and says so (not of one that would accept nothing here); k2's
    // still counts
    accept_regression(&s, &key(1), name, &here, &["not-a-new-failure"], None, 8);
    let (tests, by, notices) = accepted_as(None, false);
    assert_eq!(tests, ["c", "d"]);
    assert_eq!(by, vec![words(&by_k2, "k2")]);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with(&format!(
            "the accepted regression {} counts for nothing: its signer also signed the receipt that regressed ({})",
            words(&by_k1, "k1"),
            &here.id()[..19]
        )),
        "{notices:?}"
    );
    // by a time: only those decided by then, the boundary included
    let at = |minute: u64| Some(T0 + minute * 60_000);
    assert_eq!(accepted(at(6)).0, ["c", "d"]);
    assert_eq!(accepted(at(7).map(|t| t - 1)).0, ["c", "d"]);
    assert_eq!(accepted(at(7)).0, ["a", "c", "d"]);
    assert_eq!(accepted(at(6).map(|t| t - 1)), (vec![], vec![]));
}

/// Whether an acceptance that claims check `suite` present at B, citing B's
/// failed differential receipt (one new failure; its metric 5% worse than at A),
/// stands, when B's .gitreceipts allows `decided` (new failures, max-regression
/// %) and A's, the trusted revision's, allows `trusted`: the problems found.
fn differential_claim(decided: (u32, u32), trusted: (u32, u32)) -> Vec<String> {
    differential_claim_with(
        (decided.0, decided.1, false),
        (trusted.0, trusted.1, false),
        false,
    )
}

/// [`differential_claim`] with each rules' `self-accept` as the third member,
/// and (`accepted_by_runner`) the new failure accepted, before the acceptance
/// was decided, by the key that ran it.
fn differential_claim_with(
    decided: (u32, u32, bool),
    trusted: (u32, u32, bool),
    accepted_by_runner: bool,
) -> Vec<String> {
    claim_about(
        (decided, trusted),
        accepted_by_runner,
        Here {
            exit: 1,
            t1_fails: true,
            ops: Some("190"),
            claim: State::Present,
        },
    )
}

/// The run at B that an acceptance's claim cites, against A's passing run of
/// both tests with ops = 200.
struct Here {
    exit: i64,
    /// Whether t1 fails (a new failure); t2 always passes.
    t1_fails: bool,
    /// The ops it read; `None`: not read.
    ops: Option<&'static str>,
    /// What the acceptance claims of check `suite`, citing it.
    claim: State,
}

/// [`differential_claim_with`] for any run at B and any claim about it: the
/// problems an acceptance decided at B, trusting A, has.
fn claim_about(
    (decided, trusted): ((u32, u32, bool), (u32, u32, bool)),
    accepted_by_runner: bool,
    here_run: Here,
) -> Vec<String> {
    use crate::receipt::{Better, Metric, TestCase, TestStatus};
    let gitreceipts = |(allow, bound, own): (u32, u32, bool)| {
        format!(
            "[check \"suite\"]\n\trun = true\n\tpath = src\n\tresults = junit:out.xml\n\
             \tparity = differential\n\tallow-new-failures = {allow}\n\
             \tmetric = ops ops/s higher ^ops: ([0-9.]+)\n\tmax-regression = {bound}%\n\
             \tself-accept = {own}\n"
        )
    };
    let case = |name: &str, status| TestCase {
        name: name.into(),
        status,
        duration_ms: Some(1),
    };
    let ops = |value: Option<&str>| Metric {
        name: "ops".into(),
        unit: "ops/s".into(),
        better: Better::Higher,
        value: value.map(str::to_owned),
        error: if value.is_some() {
            String::new()
        } else {
            "no line matched".into()
        },
    };
    let s = Scratch::new();
    let (there, here) = (gitreceipts(trusted), gitreceipts(decided));
    let a = s.commit(&[("src/lib.rs", "a\n"), (".gitreceipts", &there)], "A");
    let b = s.commit(&[("src/lib.rs", "b\n"), (".gitreceipts", &here)], "B");
    let (at_a, at_b) = (
        crate::freshness::rules::contract(&there),
        crate::freshness::rules::contract(&here),
    );
    let passed = vec![
        case("t1", TestStatus::Passed),
        case("t2", TestStatus::Passed),
    ];
    let run_here = vec![
        case(
            "t1",
            if here_run.t1_fails {
                TestStatus::Failed
            } else {
                TestStatus::Passed
            },
        ),
        case("t2", TestStatus::Passed),
    ];
    s.run_read(
        &key(1),
        &at_a,
        "suite",
        a,
        0,
        1,
        passed,
        vec![ops(Some("200"))],
    );
    let fail = s.run_read(
        &key(1),
        &at_b,
        "suite",
        b,
        here_run.exit,
        2,
        run_here,
        vec![ops(here_run.ops)],
    );
    if accepted_by_runner {
        accept_regression(&s, &key(1), "suite", &fail.receipt, &["t1"], None, 3);
    }
    let cited = fail.receipt.id().to_owned();
    let (writer, entry) = (writer_id(key(1).public(), "default"), fail.commit);
    let locate = |id: &str| (id == cited).then(|| (writer.clone(), entry));
    let inputs = fail.receipt.body().subject.inputs.clone();
    let mut body = acceptance_body(
        &s,
        b,
        vec![Criterion {
            kind: CriterionKind::Check,
            name: "suite".into(),
            state: here_run.claim,
            inputs,
            evidence: vec![cited.clone()],
        }],
    );
    let acceptance = body.acceptance.as_mut().unwrap();
    acceptance.trusted = a.to_string();
    acceptance.decided_at = crate::receipt::format_timestamp(T0 + 60 * 60_000);
    acceptance_problems(&s.store, &trust_of(&[1]), &body, &locate)
        .into_iter()
        .map(|p| p.reason)
        .collect()
}

#[test]
fn acceptances_a_failed_differential_receipt_is_excused_by_the_laxer_bounds_of_the_two_rules() {
    // each bound on its own: the laxer of the decided and the trusted rules
    for (decided, trusted) in [
        ((0, 10), (1, 10)),
        ((1, 10), (0, 10)),
        ((1, 1), (1, 10)),
        ((1, 10), (1, 1)),
    ] {
        assert_eq!(
            differential_claim(decided, trusted),
            Vec::<String>::new(),
            "decided {decided:?}, trusted {trusted:?}"
        );
    }
    // and the claim falls when neither allows the new failure, or the metric
    for (decided, trusted) in [((0, 10), (0, 10)), ((1, 1), (1, 1)), ((0, 1), (1, 1))] {
        let problems = differential_claim(decided, trusted);
        assert_eq!(
            problems.len(),
            1,
            "decided {decided:?}, trusted {trusted:?}"
        );
        assert!(
            problems[0].contains("claims check suite present citing"),
            "{problems:?}"
        );
    }
}

#[test]
fn acceptances_a_review_under_a_key_that_collides_with_acceptances_is_not_one() {
    // a review name whose index key hashes as the acceptances' key does (found
    // by hashing `review:` and 7 characters of [a-z0-9], counting up)
    let name = "pyrf1je";
    assert_eq!(
        check_hash(&decision_key(DecisionKind::Review, name)),
        check_hash(&decision_key(DecisionKind::Acceptance, "")),
        "the review's key collides with the acceptances'"
    );
    let (s, _a, b) = two_commits();
    let tree = s.store.commit_tree(b).unwrap();
    // a whole-tree review: its inputs and tree are B's tree, as an acceptance's are
    let def = ReviewDef {
        name: name.into(),
        paths: Vec::new(),
        required: 1,
        self_approve: true,
    };
    let review = verdict(&s, &key(1), &def, b, Verdict::Approve, "", 1);
    assert_eq!(review.receipt.body().subject.inputs, tree.to_string());
    let mut index = s.store.receipt_index().unwrap();
    let keys = vec![key(1).public().fingerprint()];
    assert!(
        newest_acceptance(
            &s.store,
            &mut index,
            &trust_of(&[1]),
            tree,
            &keys,
            &mut Vec::new()
        )
        .unwrap()
        .is_none(),
        "a review is never an acceptance, whatever key it is filed under"
    );
}

#[test]
fn acceptances_a_regression_accepted_by_whoever_ran_it_counts_when_either_rules_say_self_accept() {
    for (decided, trusted) in [(false, true), (true, false)] {
        assert_eq!(
            differential_claim_with((0, 10, decided), (0, 10, trusted), true),
            Vec::<String>::new(),
            "self-accept decided {decided}, trusted {trusted}"
        );
    }
    let problems = differential_claim_with((0, 10, false), (0, 10, false), true);
    assert_eq!(problems.len(), 1, "neither says self-accept: {problems:?}");
    assert!(
        problems[0].contains("claims check suite present citing"),
        "{problems:?}"
    );
}

#[test]
fn acceptances_a_claim_of_failed_citing_a_passed_run_stands_only_when_its_metric_fails_the_comparison()
 {
    let passed_run = |ops| Here {
        exit: 0,
        t1_fails: false,
        ops,
        claim: State::Failed,
    };
    let bounds = ((0, 10, false), (0, 1, false)); // the laxer: 10%
    // 15% worse: past the bound, so the passed run is a failed differential check
    assert_eq!(
        claim_about(bounds, false, passed_run(Some("170"))),
        Vec::<String>::new()
    );
    // a metric that was not read cannot be compared: failed as well
    assert_eq!(
        claim_about(bounds, false, passed_run(None)),
        Vec::<String>::new()
    );
    // 5% worse, within the laxer bound: the claim of failed is refuted
    let problems = claim_about(bounds, false, passed_run(Some("190")));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("claims check suite failed citing")
            && problems[0].ends_with("which passed"),
        "{problems:?}"
    );
}
