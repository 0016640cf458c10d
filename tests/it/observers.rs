//! Who observed a run (issue 29): a protected branch can require CI's own run
//! while topic branches accept any trusted run. The served `main` declares the
//! developer's key as `[signer "dev"]` and CI's as `[signer "ci"]` with
//! `observer = true`, and its required `test` check says
//! `accept-protected = run-by:ci`. A real bare repository guards `main` with the
//! pre-receive hook; the developer and CI each have their own home and key.

use std::path::{Path, PathBuf};

use crate::common::{Env, Run};

/// The seed of the served repository: the basic fixture with both signers and
/// CI's observed run required on protected branches, committed.
fn seed(dev: &Env, ci: &Env) -> PathBuf {
    let seed = dev.fixture_repo("make_basic_repo.sh", "seed");
    let dev_key = dev.receipt_ok(&seed, &["key", "generate"]).stdout;
    let ci_key = ci.receipt_ok(&seed, &["key", "generate"]).stdout;
    for (key, value) in [
        ("signer.dev.key", dev_key.trim()),
        ("signer.ci.key", ci_key.trim()),
        ("signer.ci.observer", "true"),
        ("check.test.accept-protected", "run-by:ci"),
    ] {
        dev.git_ok(&seed, &["config", "-f", ".gitreceipts", key, value]);
    }
    dev.git_ok(
        &seed,
        &["commit", "-qam", "protected branches need CI's own run"],
    );
    seed
}

/// A bare clone of `seed` guarding `main` (the branch its HEAD names) with the
/// pre-receive hook.
fn guarded_server(env: &Env, seed: &Path) -> PathBuf {
    let bare = clone_as(env, seed, "server.git", "--bare");
    env.receipt_ok(&bare, &["install-hooks", "--server"]);
    bare
}

/// `git clone -q HOW FROM` into `rel`.
fn clone_as(env: &Env, from: &Path, rel: &str, how: &str) -> PathBuf {
    let dir = env.path(rel);
    let (from, to) = (from.to_str().unwrap(), dir.to_str().unwrap());
    env.git_ok(env.tmp.path(), &["clone", "-q", how, from, to]);
    dir
}

fn clone(env: &Env, bare: &Path, rel: &str) -> PathBuf {
    clone_as(env, bare, rel, "--origin=origin")
}

/// A push that skips the client's pre-push hook: only the server decides.
fn raw_push(env: &Env, dir: &Path, refspecs: &[&str]) -> Run {
    let mut args = vec!["push", "--no-verify", "origin"];
    args.extend_from_slice(refspecs);
    env.git(dir, &args)
}

/// The chain ref of the one writer in `dir`.
fn chain(env: &Env, dir: &Path) -> String {
    format!("refs/receipts/{}", env.only_writer(dir))
}

fn server_ref(env: &Env, bare: &Path, name: &str) -> Option<String> {
    let r = env.git(bare, &["rev-parse", "--verify", "-q", name]);
    (r.code == 0).then(|| r.stdout.trim().to_owned())
}

#[test]
fn a_protected_branch_refuses_a_developers_run_until_cis_observed_run_while_a_topic_branch_takes_it()
 {
    let (dev, ci) = (Env::new(), Env::new());
    let seed = seed(&dev, &ci);
    let bare = guarded_server(&dev, &seed);
    let d = clone(&dev, &bare, "dev");
    std::fs::write(d.join("src/lib.rs"), "pub fn observed() {}\n").unwrap();
    dev.git_ok(&d, &["commit", "-qam", "change src"]);
    let change = dev.git_ok(&d, &["rev-parse", "HEAD"]);
    dev.receipt_ok(&d, &["run", "test"]);
    let dev_chain = chain(&dev, &d);

    // the protected branch: the developer's observed run is not CI's
    let r = raw_push(&dev, &d, &["main", &dev_chain]);
    assert_ne!(r.code, 0, "the developer's run does not count on main: {r}");
    assert!(
        r.stderr.contains(
            "1 run by another signer ignored: accept = run-by:ci counts only runs signed by an observer it names"
        ),
        "the reason says whose runs count: {r}"
    );
    assert!(
        r.stderr
            .contains("fix: ci runs git receipt run test && git receipt push"),
        "the fix names who must run it: {r}"
    );
    assert_ne!(server_ref(&dev, &bare, "main"), Some(change.clone()));

    // a topic branch takes it: the server does not gate it, and judged as a
    // topic branch (`accept`, here any) the developer's run is present
    let r = raw_push(&dev, &d, &["HEAD:refs/heads/topic", &dev_chain]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(server_ref(&dev, &bare, "topic"), Some(change.clone()));
    let r = dev.receipt(&d, &["gate", "HEAD", "--trust", "origin/main"]);
    assert_eq!(r.code, 0, "a topic branch accepts any trusted run: {r}");
    let r = dev.receipt(
        &d,
        &["gate", "HEAD", "--trust", "origin/main", "--protected"],
    );
    assert_eq!(
        r.code, 1,
        "judged as for main, as the server judges it: {r}"
    );
    assert!(r.stdout.contains("ci runs git receipt run test"), "{r}");

    // the client's pre-push hook judges a push to a protected branch as one
    dev.git_ok(&d, &["config", "receipt.protectedBranch", "main"]);
    dev.receipt_ok(&d, &["install-hooks"]);
    let r = dev.git(&d, &["push", "-q", "origin", "HEAD:refs/heads/topic-2"]);
    assert_eq!(r.code, 0, "a push to a topic branch passes the hook: {r}");
    let r = dev.git(&d, &["push", "-q", "origin", "main"]);
    assert_eq!(r.code, 1, "the hook refuses the push to main: {r}");
    assert!(r.stderr.contains("push to origin refused"), "{r}");
    assert!(
        r.stderr.contains("fix: ci runs git receipt run test"),
        "{r}"
    );

    // CI checks out what the developer pushed; its word for a result it did
    // not observe counts no more than anyone's
    let c = clone(&ci, &bare, "ci");
    ci.git_ok(&c, &["checkout", "-q", "--detach", "origin/topic"]);
    let expect = ["--expect-commit", change.as_str()];
    ci.receipt_ok(
        &c,
        &[&["record", "test", "--exit-code", "0"][..], &expect].concat(),
    );
    let ci_chain = chain(&ci, &c);
    let r = raw_push(&ci, &c, &[&ci_chain]);
    assert_eq!(r.code, 0, "{r}");
    let r = raw_push(&dev, &d, &["main"]);
    assert_ne!(r.code, 0, "CI's recorded result does not count: {r}");
    assert!(
        r.stderr
            .contains("1 recorded receipt and 1 run by another signer ignored"),
        "{r}"
    );

    // CI's observed run is what main requires
    ci.receipt_ok(&c, &["run", "test"]);
    let r = raw_push(&ci, &c, &[&ci_chain]);
    assert_eq!(r.code, 0, "{r}");
    let r = raw_push(&dev, &d, &["main"]);
    assert_eq!(r.code, 0, "CI's observed run counts: {r}");
    assert_eq!(server_ref(&dev, &bare, "main"), Some(change));
}

#[test]
fn a_pushed_branch_that_declares_its_own_key_an_observer_gains_nothing() {
    let (dev, ci) = (Env::new(), Env::new());
    let seed = seed(&dev, &ci);
    let bare = guarded_server(&dev, &seed);
    let d = clone(&dev, &bare, "dev");
    // the branch makes the developer an observer and names them, and drops
    // accept-protected for good measure
    for args in [
        &[
            "config",
            "-f",
            ".gitreceipts",
            "signer.dev.observer",
            "true",
        ][..],
        &[
            "config",
            "-f",
            ".gitreceipts",
            "check.test.accept",
            "run-by:ci,dev",
        ],
        &[
            "config",
            "-f",
            ".gitreceipts",
            "--unset",
            "check.test.accept-protected",
        ],
    ] {
        dev.git_ok(&d, args);
    }
    std::fs::write(d.join("src/lib.rs"), "pub fn mine() {}\n").unwrap();
    dev.git_ok(&d, &["commit", "-qam", "I observe myself"]);
    dev.receipt_ok(&d, &["run", "test"]);
    let r = raw_push(&dev, &d, &["main", &chain(&dev, &d)]);
    assert_ne!(r.code, 0, "main's rules decide who observes: {r}");
    assert!(
        r.stderr
            .contains("check \"test\" accepts run-by:ci,dev here, more than refs/heads/main")
            && r.stderr.contains("accept = run-by:ci is evaluated"),
        "the tightening is told: {r}"
    );
    assert!(r.stderr.contains("1 run by another signer ignored"), "{r}");
}

/// `record test --exit-code 0 --expect-commit REV` in `dir`.
fn record_expecting(env: &Env, dir: &Path, rev: &str) -> Run {
    let args = ["record", "test", "--exit-code", "0", "--expect-commit", rev];
    env.receipt(dir, &args)
}

#[test]
fn record_expect_commit_refuses_another_commit_and_records_nothing() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["run", "docs"]);
    let chain = chain(&env, &dir);
    let before = env.git_ok(&dir, &["rev-parse", &chain]);
    let head = env.git_ok(&dir, &["rev-parse", "HEAD"]);
    let parent = env.git_ok(&dir, &["rev-parse", "HEAD~1"]);
    let r = record_expecting(&env, &dir, "HEAD~1");
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(&format!(
            "--expect-commit HEAD~1 is commit {parent}, but HEAD is commit {head}, which the receipt would name: nothing was recorded"
        )),
        "names both commits: {r}"
    );
    assert!(
        r.stderr
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("hint: check out the expected commit first")),
        "ends with the fix: {r}"
    );
    let tip = || env.git_ok(&dir, &["rev-parse", &chain]);
    assert_eq!(tip(), before, "nothing written");
    // a name that is no commit here
    let r = record_expecting(&env, &dir, "no-such-rev");
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("--expect-commit no-such-rev"), "{r}");
    assert!(r.stderr.contains("hint: "), "{r}");
    assert_eq!(tip(), before, "nothing written");
    // the commit it names: recorded, and the receipt names it
    let r = record_expecting(&env, &dir, &head);
    assert_eq!(r.code, 0, "{r}");
    assert_ne!(tip(), before);
    let log = env.log_json(&dir);
    let newest = log.iter().find(|r| r["check"] == "test").unwrap();
    assert_eq!(newest["commit"], head.as_str(), "{newest}");
    assert_eq!(newest["mode"], "recorded", "{newest}");
}
