//! Server refs by another name (issue 24, item 6), each against a real
//! `git daemon` on 127.0.0.1 with the pre-receive hook on the served bare
//! repository: a push to a symbolic ref is judged as an update of its target,
//! `receipt.protectedBranch` patterns protect what they match (and unsupported
//! wildcards are refused), and a new protected branch takes its signers only
//! from a protected branch.
//!
//! The served `main` declares the test environment's key as `[signer "dev"]`, and
//! the basic fixture's `test` check (inputs: `src`) as `required = true`.

use std::path::{Path, PathBuf};

use crate::common::{Daemon, Env, Run, clone};

/// The basic fixture with this environment's key declared as a signer, committed.
fn seed_with_signer(env: &Env, rel: &str) -> PathBuf {
    let seed = env.fixture_repo("make_basic_repo.sh", rel);
    let pubkey = env.receipt_ok(&seed, &["key", "generate"]).stdout;
    env.git_ok(
        &seed,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "signer.dev.key",
            pubkey.trim(),
        ],
    );
    env.git_ok(&seed, &["commit", "-qam", "trust dev"]);
    seed
}

/// A served bare repository holding the seed's `main`, with the pre-receive hook
/// installed with `protect` (`--protect` arguments; none: HEAD's branch).
fn server(env: &Env, daemon: &Daemon, name: &str, protect: &[&str]) -> (PathBuf, String) {
    let seed = seed_with_signer(env, &format!("seed-{name}"));
    let (bare, url) = daemon.bare(env, name);
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    let mut args = vec!["install-hooks", "--server"];
    for p in protect {
        args.extend(["--protect", p]);
    }
    env.receipt_ok(&bare, &args);
    (bare, url)
}

/// A raw push that skips the client's pre-push hook: only the server decides.
fn raw_push(env: &Env, dir: &Path, refspecs: &[&str]) -> Run {
    let mut args = vec!["push", "--no-verify", "origin"];
    args.extend_from_slice(refspecs);
    env.git(dir, &args)
}

fn server_ref(env: &Env, bare: &Path, name: &str) -> Option<String> {
    let r = env.git(bare, &["rev-parse", "--verify", "-q", name]);
    (r.code == 0).then(|| r.stdout.trim().to_owned())
}

/// Change `src/lib.rs` (the `test` check's inputs) and commit.
fn commit_src_change(env: &Env, dir: &Path, body: &str) -> String {
    std::fs::write(dir.join("src/lib.rs"), body).unwrap();
    env.git_ok(dir, &["commit", "-qam", "change src"]);
    env.git_ok(dir, &["rev-parse", "HEAD"])
}

/// Push `env`'s receipt chain and its notes from `dir` (raw: the hook checks it).
fn push_chain(env: &Env, dir: &Path) {
    let writer = env.only_writer(dir);
    let r = raw_push(
        env,
        dir,
        &[
            &format!("refs/receipts/{writer}"),
            &format!("+refs/notes/receipts/{writer}:refs/notes/receipts/{writer}"),
        ],
    );
    assert_eq!(r.code, 0, "a valid chain is accepted: {r}");
}

#[test]
fn a_push_to_a_symbolic_ref_for_a_protected_branch_is_gated_as_that_branch() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = server(&env, &daemon, "alias.git", &[]);
    // the alias left behind by a rename master -> main
    env.git_ok(
        &bare,
        &["symbolic-ref", "refs/heads/master", "refs/heads/main"],
    );
    let main_before = server_ref(&env, &bare, "refs/heads/main").unwrap();
    let dir = clone(&env, &url, "c");
    let change = commit_src_change(&env, &dir, "pub fn unreceipted() {}\n");

    let r = raw_push(&env, &dir, &["HEAD:refs/heads/master"]);
    assert_ne!(r.code, 0, "main does not move through its alias: {r}");
    assert!(
        r.stderr.contains(
            "refs/heads/master is a symbolic ref to refs/heads/main on this server: the push is judged as an update of refs/heads/main"
        ),
        "{r}"
    );
    assert!(
        r.stderr.contains("refs/heads/main (") && r.stderr.contains("lacks present receipts"),
        "{r}"
    );
    assert_eq!(
        server_ref(&env, &bare, "refs/heads/main"),
        Some(main_before.clone())
    );

    // deleting through the alias would delete main (receive-pack follows it)
    let r = raw_push(&env, &dir, &[":refs/heads/master"]);
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("refs/heads/main: deleting a protected branch by push is refused"),
        "{r}"
    );
    assert_eq!(
        server_ref(&env, &bare, "refs/heads/main"),
        Some(main_before)
    );

    // the legitimate path: with a receipt, the push through the alias is accepted
    env.receipt_ok(&dir, &["run", "test"]);
    push_chain(&env, &dir);
    let r = raw_push(&env, &dir, &["HEAD:refs/heads/master"]);
    assert_eq!(r.code, 0, "a receipted push through the alias: {r}");
    assert_eq!(server_ref(&env, &bare, "refs/heads/main"), Some(change));
}

#[test]
fn protecting_a_symbolic_ref_protects_the_branch_it_names() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = server(&env, &daemon, "alias-protected.git", &["main"]);
    env.git_ok(
        &bare,
        &["symbolic-ref", "refs/heads/master", "refs/heads/main"],
    );
    // the administrator names the old name only
    env.git_ok(&bare, &["config", "receipt.protectedBranch", "master"]);
    let dir = clone(&env, &url, "c");
    commit_src_change(&env, &dir, "pub fn unreceipted() {}\n");
    let r = raw_push(&env, &dir, &["HEAD:refs/heads/main"]);
    assert_ne!(r.code, 0, "main is what master names: {r}");
    assert!(r.stderr.contains("lacks present receipts"), "{r}");
    // an unprotected branch beside it is not gated
    let r = raw_push(&env, &dir, &["HEAD:refs/heads/wip"]);
    assert_eq!(r.code, 0, "{r}");
}

#[test]
fn a_protected_branch_pattern_protects_every_branch_it_matches() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = server(&env, &daemon, "pattern.git", &["main", "release/*"]);
    assert_eq!(
        env.git_ok(&bare, &["config", "--get-all", "receipt.protectedBranch"]),
        "main\nrelease/*"
    );
    let dir = clone(&env, &url, "c");
    let change = commit_src_change(&env, &dir, "pub fn unreceipted() {}\n");

    for branch in ["release/1.0", "release/1.0/hotfix"] {
        let r = raw_push(&env, &dir, &[&format!("HEAD:refs/heads/{branch}")]);
        assert_ne!(r.code, 0, "{branch} is protected by release/*: {r}");
        assert!(
            r.stderr
                .contains(&format!("refs/heads/{branch} ({})", &change[..7]))
                && r.stderr.contains("lacks present receipts"),
            "{r}"
        );
        assert_eq!(
            server_ref(&env, &bare, &format!("refs/heads/{branch}")),
            None
        );
    }
    // a branch the pattern does not match is not gated
    let r = raw_push(&env, &dir, &["HEAD:refs/heads/releases-notes"]);
    assert_eq!(r.code, 0, "{r}");

    // the legitimate path, then an update and a deletion of the new branch
    env.receipt_ok(&dir, &["run", "test"]);
    push_chain(&env, &dir);
    let r = raw_push(&env, &dir, &["HEAD:refs/heads/release/1.0"]);
    assert_eq!(r.code, 0, "a receipted release is created: {r}");
    commit_src_change(&env, &dir, "pub fn later() {}\n");
    let r = raw_push(&env, &dir, &["HEAD:refs/heads/release/1.0"]);
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("lacks present receipts"), "{r}");
    let r = raw_push(&env, &dir, &[":refs/heads/release/1.0"]);
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("refs/heads/release/1.0: deleting a protected branch by push is refused"),
        "{r}"
    );
    assert_eq!(
        server_ref(&env, &bare, "refs/heads/release/1.0"),
        Some(change)
    );
}

#[test]
fn an_unsupported_wildcard_in_protected_branch_is_refused_at_install_and_at_push() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = server(&env, &daemon, "wildcard.git", &[]);
    let r = env.receipt(
        &bare,
        &["install-hooks", "--server", "--protect", "release/?"],
    );
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains("\"release/?\" holds '?', which no ref name holds and which is not a supported wildcard (only * is), so it would protect nothing"),
        "{r}"
    );
    assert!(r.stderr.contains("hint:"), "{r}");
    assert!(
        env.git(&bare, &["config", "--get-all", "receipt.protectedBranch"])
            .stdout
            .is_empty(),
        "nothing was recorded"
    );
    let r = env.receipt(
        &bare,
        &["install-hooks", "--server", "--protect", "refs/tags/*"],
    );
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("patterns protect branches only"), "{r}");

    // set by hand behind the installer's back: every push is refused, none let through
    env.git_ok(
        &bare,
        &["config", "receipt.protectedBranch", "release/[0-9]*"],
    );
    let dir = clone(&env, &url, "c");
    commit_src_change(&env, &dir, "pub fn x() {}\n");
    let r = raw_push(&env, &dir, &["HEAD:refs/heads/release/1"]);
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("refusing the push: this server's protection is misconfigured"),
        "{r}"
    );
    assert!(r.stderr.contains("'['"), "names the character: {r}");
    assert_eq!(server_ref(&env, &bare, "refs/heads/release/1"), None);
    env.git_ok(&bare, &["config", "receipt.protectedBranch", "main"]);
    env.git_ok(
        &bare,
        &["config", "--add", "receipt.protectedBranch", "release/*"],
    );
    let r = raw_push(&env, &dir, &["HEAD:refs/heads/release/1"]);
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("lacks present receipts"), "{r}");
}

#[test]
fn a_protected_branch_created_while_only_an_unprotected_branch_exists_is_refused() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    // HEAD is main, which is not protected: only release is
    let (bare, url) = server(&env, &daemon, "creation.git", &["release"]);
    let mallory = Env::new();
    let dir = env.path("m");
    mallory.git_ok(
        mallory.tmp.path(),
        &["clone", "-q", &url, dir.to_str().unwrap()],
    );
    let key = mallory.receipt_ok(&dir, &["key", "generate"]).stdout;
    mallory.git_ok(
        &dir,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "signer.mallory.key",
            key.trim(),
        ],
    );
    mallory.git_ok(&dir, &["commit", "-qam", "trust me"]);
    // main is unprotected: her signer goes in unchecked
    let r = raw_push(&mallory, &dir, &["main"]);
    assert_eq!(r.code, 0, "{r}");
    commit_src_change(&mallory, &dir, "pub fn backdoor() {}\n");
    mallory.receipt_ok(&dir, &["run", "test"]);
    push_chain(&mallory, &dir);
    let r = raw_push(&mallory, &dir, &["HEAD:refs/heads/release"]);
    assert_ne!(
        r.code, 0,
        "release never takes its signers from unprotected main: {r}"
    );
    assert!(
        r.stderr.contains(
            "refs/heads/release: creating a protected branch is refused: no protected branch exists on this server"
        ),
        "{r}"
    );
    assert!(
        r.stderr
            .contains("fix: an administrator creates refs/heads/release on the server itself"),
        "{r}"
    );
    assert_eq!(server_ref(&env, &bare, "refs/heads/release"), None);

    // the administrator creates release on the server from a commit they chose;
    // from then on each update is judged by release's own previous tip
    let seed_tip = env.git_ok(&bare, &["rev-parse", "main~1"]);
    env.git_ok(&bare, &["update-ref", "refs/heads/release", &seed_tip]);
    let r = raw_push(&mallory, &dir, &["HEAD:refs/heads/release"]);
    assert_ne!(r.code, 0, "her key is not trusted at release's tip: {r}");
    assert!(r.stderr.contains("lacks present receipts"), "{r}");
}

#[test]
fn a_protected_branch_created_from_a_protected_branch_takes_its_signers_from_it() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = server(&env, &daemon, "release.git", &["main", "release"]);
    // Mallory's receipts count for nothing at main's tip
    let mallory = Env::new();
    let mdir = env.path("m");
    mallory.git_ok(
        mallory.tmp.path(),
        &["clone", "-q", &url, mdir.to_str().unwrap()],
    );
    let key = mallory.receipt_ok(&mdir, &["key", "generate"]).stdout;
    mallory.git_ok(
        &mdir,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "signer.mallory.key",
            key.trim(),
        ],
    );
    mallory.git_ok(&mdir, &["commit", "-qam", "trust me"]);
    mallory.receipt_ok(&mdir, &["run", "test"]);
    push_chain(&mallory, &mdir);
    let r = raw_push(&mallory, &mdir, &["HEAD:refs/heads/release"]);
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains(
            "lacks present receipts signed by the signers in .gitreceipts at refs/heads/main"
        ),
        "{r}"
    );

    // the honest control: a release fast-forwarded from main with dev's receipt
    let dir = clone(&env, &url, "c");
    let change = commit_src_change(&env, &dir, "pub fn release() {}\n");
    env.receipt_ok(&dir, &["run", "test"]);
    push_chain(&env, &dir);
    let r = raw_push(&env, &dir, &["HEAD:refs/heads/release"]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(server_ref(&env, &bare, "refs/heads/release"), Some(change));
}
