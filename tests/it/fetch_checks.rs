//! `git receipt fetch` checks new chain entries with the verifier's own walk, from
//! the fetched tip down to the local tip: any finding refuses the chain, except
//! that a receipt by a key nobody trusts is stored (it counts for nothing).
//! Against a real `git daemon`.

use crate::common::{Daemon, Env};
use git_receipt::receipt::{Receipt, Unverified, writer_id};
use git_receipt::sign::SigningKey;

fn key(env: &Env) -> SigningKey {
    SigningKey::load(&env.home.join(".config/git-receipt/signing_key")).unwrap()
}

#[test]
fn a_fetched_receipt_signed_by_the_right_key_that_skips_the_local_tip_is_refused() {
    let (ada, ci) = (Env::new(), Env::new());
    let daemon = Daemon::start(&ada);
    let repo = ada.fixture_repo("make_basic_repo.sh", "ada");
    ada.receipt_ok(&repo, &["key", "generate"]);
    let line = ada.receipt_ok(&repo, &["key", "show"]).stdout;
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str(&format!("[signer \"ada\"]\n\tkey = {}\n", line.trim()));
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    ada.git_ok(&repo, &["commit", "-q", "-am", "trust ada"]);
    let (_, url) = daemon.bare(&ada, "shared.git");
    ada.git_ok(&repo, &["remote", "add", "origin", &url]);
    ada.git_ok(&repo, &["push", "-q", "origin", "main"]);
    ada.receipt_ok(&repo, &["run", "test"]);
    ada.receipt_ok(&repo, &["run", "docs"]);
    ada.receipt_ok(&repo, &["push"]);
    let writer = writer_id(key(&ada).public(), "default");
    let chain = format!("refs/receipts/{writer}");

    // CI has #0 and #1
    let dir = ci.path("ci");
    ci.git_ok(ci.tmp.path(), &["clone", "-q", &url, dir.to_str().unwrap()]);
    let r = ci.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains(&format!("new chain {writer}: 2 receipts")),
        "{r}"
    );
    let ci_tip = ci.git_ok(&dir, &["rev-parse", &chain]);

    // #2, signed with Ada's real key, but linked to #0: it drops #1 from the story
    let at =
        |c: &str| -> Receipt<Unverified> { Receipt::parse(&ada.receipt_bytes(&repo, c)).unwrap() };
    let tip = ada.git_ok(&repo, &["rev-parse", &chain]);
    let root = at(&format!("{tip}~1"));
    let mut body = at(&tip).body().clone();
    body.chain.index = 2;
    body.chain.prev = Some(root.id().to_owned());
    let forged = Receipt::sign(body, &key(&ada)).unwrap();
    let blob = ada.git_input(&repo, &["hash-object", "-w", "--stdin"], forged.bytes());
    let tree = ada.git_input(
        &repo,
        &["mktree"],
        format!("100644 blob {blob}\treceipt.json\n").as_bytes(),
    );
    let commit = ada.git_ok(&repo, &["commit-tree", &tree, "-p", &tip, "-m", "x"]);
    ada.git_ok(
        &repo,
        &["push", "-q", "origin", &format!("{commit}:{chain}")],
    );

    let r = ci.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 1, "{r}");
    let tip_id = at(&tip).id().to_owned();
    assert!(
        r.stderr.contains(&format!(
            "{writer}: REJECTED, local chain unchanged: receipt sha256:"
        )),
        "{r}"
    );
    assert!(
        r.stderr.contains(&format!(
            "(#2): prev is {}, but the receipt before it is {tip_id}",
            root.id()
        )),
        "{r}"
    );
    assert_eq!(
        ci.git_ok(&dir, &["rev-parse", &chain]),
        ci_tip,
        "CI's chain is untouched"
    );

    // A receipt by a key nobody trusts is stored, and counts for nothing.
    let carol = Env::new();
    let c = carol.path("carol");
    carol.git_ok(
        carol.tmp.path(),
        &["clone", "-q", &url, c.to_str().unwrap()],
    );
    carol.receipt_ok(&c, &["run", "test"]);
    carol.receipt_ok(&c, &["push"]);
    let r = ci.receipt(&dir, &["fetch"]);
    let carol_writer = writer_id(key(&carol).public(), "default");
    assert!(
        r.stderr
            .contains(&format!("new chain {carol_writer}: 1 receipt")),
        "{r}"
    );
    assert!(
        r.stderr.contains(&format!("{writer}: REJECTED")),
        "Ada's is still refused: {r}"
    );
}

/// A fetch leaves unchanged staged chains alone (no file churn: issue 27) yet a
/// chain the remote no longer has is not kept staged as if it were current, and
/// a changed one is staged at its new tip.
#[test]
fn a_fetch_prunes_the_staged_chain_the_remote_deleted_and_moves_the_changed_one() {
    let (ada, bob, ci) = (Env::new(), Env::new(), Env::new());
    let daemon = Daemon::start(&ada);
    let (bare, url) = daemon.bare(&ada, "pruned.git");
    let a = ada.fixture_repo("make_basic_repo.sh", "ada");
    ada.git_ok(&a, &["remote", "add", "origin", &url]);
    ada.git_ok(&a, &["push", "-q", "origin", "main"]);
    ada.receipt_ok(&a, &["run", "test"]);
    ada.receipt_ok(&a, &["push"]);
    let b = bob.path("bob");
    bob.git_ok(bob.tmp.path(), &["clone", "-q", &url, b.to_str().unwrap()]);
    bob.receipt_ok(&b, &["init"]);
    bob.receipt_ok(&b, &["run", "test"]);
    bob.receipt_ok(&b, &["push"]);
    let (wa, wb) = (ada.only_writer(&a), bob.only_writer(&b));

    let dir = ci.path("ci");
    ci.git_ok(ci.tmp.path(), &["clone", "-q", &url, dir.to_str().unwrap()]);
    ci.receipt_ok(&dir, &["init"]);
    ci.receipt_ok(&dir, &["fetch"]);
    let staged = |w: &str| {
        let r = ci.git(
            &dir,
            &[
                "rev-parse",
                "-q",
                "--verify",
                &format!("refs/receipts-incoming/origin/{w}"),
            ],
        );
        (r.code == 0).then(|| r.stdout.trim().to_owned())
    };
    let before_b = staged(&wb).expect("bob's chain is staged");
    assert!(staged(&wa).is_some(), "ada's chain is staged");

    // the server loses ada's chain; bob adds a receipt
    ada.git_ok(&bare, &["update-ref", "-d", &format!("refs/receipts/{wa}")]);
    bob.receipt_ok(&b, &["run", "docs"]);
    bob.receipt_ok(&b, &["push"]);
    let r = ci.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        staged(&wa),
        None,
        "a chain the remote deleted is not staged: {r}"
    );
    let after_b = staged(&wb).expect("bob's chain is still staged");
    assert_ne!(after_b, before_b, "staged at bob's new tip");
    assert_eq!(
        after_b,
        ci.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{wb}")]),
        "and taken"
    );
    // what ci verified of ada's chain before stays: a fetch deletes no receipt
    assert!(
        ci.git(
            &dir,
            &[
                "rev-parse",
                "-q",
                "--verify",
                &format!("refs/receipts/{wa}")
            ]
        )
        .code
            == 0,
        "ada's receipts stay in this clone"
    );
}

/// A remote chain ref that names an annotated tag (of the chain's own tip, so
/// peeling it would find the chain) is refused for that chain alone: the fetch
/// takes every other chain, and leaves the local one as it was.
#[test]
fn a_remote_chain_ref_naming_a_tag_is_refused_for_its_chain_alone() {
    let (ada, ci) = (Env::new(), Env::new());
    let daemon = Daemon::start(&ada);
    let repo = ada.fixture_repo("make_basic_repo.sh", "ada");
    let (server, url) = daemon.bare(&ada, "shared.git");
    ada.git_ok(&repo, &["remote", "add", "origin", &url]);
    ada.git_ok(&repo, &["push", "-q", "origin", "main"]);
    ada.receipt_ok(&repo, &["run", "test"]);
    ada.receipt_ok(&repo, &["push"]);
    let writer = writer_id(key(&ada).public(), "default");
    let chain = format!("refs/receipts/{writer}");
    let dir = ci.path("ci");
    ci.git_ok(ci.tmp.path(), &["clone", "-q", &url, dir.to_str().unwrap()]);
    ci.receipt_ok(&dir, &["fetch"]);
    let tip = ci.git_ok(&dir, &["rev-parse", &chain]);

    // on the server: the chain's ref moved to a tag of its own tip, and another
    // chain (a new writer) beside it
    ada.git_ok(&server, &["tag", "-a", "-m", "tagged", "tagged", &chain]);
    let tag = ada.git_ok(&server, &["rev-parse", "refs/tags/tagged"]);
    ada.git_ok(&server, &["update-ref", &chain, &tag]);
    let bob = Env::new();
    let b = bob.path("bob");
    bob.git_ok(bob.tmp.path(), &["clone", "-q", &url, b.to_str().unwrap()]);
    bob.receipt_ok(&b, &["run", "test"]);
    bob.receipt_ok(&b, &["push"]);

    let r = ci.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr.contains(&format!(
            "{writer}: REJECTED, local chain unchanged: the remote's {chain} names a tag ("
        )),
        "{r}"
    );
    assert!(r.stderr.contains("new chain default-"), "{r}");
    assert_eq!(ci.git_ok(&dir, &["rev-parse", &chain]), tip);

    // its writer's next push replaces the tag with the chain, on a lease on it
    let r = ada.receipt(&repo, &["push"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("names a tag (") && r.stderr.contains("replaced them with your chain"),
        "{r}"
    );
    assert_eq!(
        ada.git_ok(&server, &["rev-parse", &chain]),
        ada.git_ok(&repo, &["rev-parse", &chain])
    );
    let r = ci.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
}
