//! The server holds the line (issue 8): pushes that try to get around the
//! pre-receive hook, each against a real `git daemon` on 127.0.0.1 started by the
//! test, with the hook installed on the served bare repository. Each attack is
//! refused with a message that says why, and the legitimate path beside it is
//! still accepted.
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

/// A served bare repository holding the seed's `main`, with the pre-receive hook.
fn guarded_server(env: &Env, daemon: &Daemon, name: &str) -> (PathBuf, String) {
    let seed = seed_with_signer(env, &format!("seed-{name}"));
    let (bare, url) = daemon.bare(env, name);
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    env.receipt_ok(&bare, &["install-hooks", "--server"]);
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

#[test]
fn rewinding_a_chain_to_before_a_failed_receipt_in_the_same_push_as_the_branch_is_refused() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = guarded_server(&env, &daemon, "rewind.git");
    let dir = clone(&env, &url, "c");
    let change = commit_src_change(&env, &dir, "pub fn flaky() {}\n");
    env.receipt_ok(&dir, &["run", "test"]);
    let writer = env.only_writer(&dir);
    let (chain, notes) = (
        format!("refs/receipts/{writer}"),
        format!("refs/notes/receipts/{writer}"),
    );
    let passed_chain = env.git_ok(&dir, &["rev-parse", &chain]);
    let passed_notes = env.git_ok(&dir, &["rev-parse", &notes]);
    // the newest receipt for these inputs failed
    let r = env.receipt(&dir, &["record", "test", "--exit-code", "1"]);
    assert_eq!(r.code, 0, "recording a failure is a success: {r}");
    let failed_chain = env.git_ok(&dir, &["rev-parse", &chain]);
    let r = raw_push(&env, &dir, &[&chain, &notes]);
    assert_eq!(r.code, 0, "a new chain is accepted: {r}");
    let r = raw_push(&env, &dir, &["main"]);
    assert_ne!(r.code, 0, "the failed receipt decides: {r}");
    assert!(r.stderr.contains("failed"), "{r}");

    // the attack: rewind the chain and its notes to before the failure, with the branch
    let r = raw_push(
        &env,
        &dir,
        &[
            "main",
            &format!("+{passed_chain}:{chain}"),
            &format!("+{passed_notes}:{notes}"),
        ],
    );
    assert_ne!(r.code, 0, "the rewind is refused: {r}");
    assert!(
        r.stderr.contains(&format!("{chain}: not a fast-forward")),
        "names the ref and why: {r}"
    );
    assert!(r.stderr.contains("chains are append-only"), "{r}");
    assert!(
        r.stderr.contains(&format!("git update-ref -d {chain}")),
        "says how an administrator removes a chain: {r}"
    );
    assert_eq!(server_ref(&env, &bare, &chain), Some(failed_chain.clone()));
    assert_ne!(server_ref(&env, &bare, "main"), Some(change.clone()));

    // notes are display only: moving them alone is not the hook's business
    let r = raw_push(&env, &dir, &[&format!("+{passed_notes}:{notes}")]);
    assert_eq!(r.code, 0, "a notes ref may move: {r}");

    // the legitimate path: a new passing receipt on top of the chain
    env.receipt_ok(&dir, &["run", "test"]);
    let r = raw_push(&env, &dir, &["main", &chain, &format!("+{notes}:{notes}")]);
    assert_eq!(r.code, 0, "a fast-forward with a passing receipt: {r}");
    assert_eq!(server_ref(&env, &bare, "main"), Some(change));
    assert_ne!(server_ref(&env, &bare, &chain), Some(failed_chain));
}

#[test]
fn deleting_a_chain_by_push_is_refused() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = guarded_server(&env, &daemon, "delete-chain.git");
    let dir = clone(&env, &url, "c");
    env.receipt_ok(&dir, &["run", "test"]);
    let writer = env.only_writer(&dir);
    let (chain, notes) = (
        format!("refs/receipts/{writer}"),
        format!("refs/notes/receipts/{writer}"),
    );
    env.receipt_ok(&dir, &["push"]);
    let tip = server_ref(&env, &bare, &chain).expect("the chain is on the server");

    let r = raw_push(&env, &dir, &[&format!(":{chain}")]);
    assert_ne!(r.code, 0, "deleting a chain is refused: {r}");
    assert!(
        r.stderr.contains(&format!(
            "{chain}: deleting a receipt chain by push is refused"
        )),
        "names the ref and why: {r}"
    );
    assert!(r.stderr.contains("chains are append-only"), "{r}");
    assert!(
        r.stderr.contains(&format!("git update-ref -d {chain}")),
        "{r}"
    );
    assert_eq!(server_ref(&env, &bare, &chain), Some(tip.clone()));

    // the legitimate paths: appending to the chain, and moving the display notes
    env.receipt_ok(&dir, &["run", "docs"]);
    let r = env.receipt_ok(&dir, &["push"]);
    assert!(r.stderr.contains("pushed 1 new receipt"), "{r}");
    let r = raw_push(&env, &dir, &[&format!(":{notes}")]);
    assert_eq!(r.code, 0, "notes are display only: {r}");
    // and the administrator, on the server itself
    env.git_ok(&bare, &["update-ref", "-d", &chain]);
    assert_eq!(server_ref(&env, &bare, &chain), None);
}

#[test]
fn deleting_a_protected_branch_that_is_not_head_and_recreating_it_unreceipted_are_refused() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let seed = seed_with_signer(&env, "seed");
    let (bare, url) = daemon.bare(&env, "release.git");
    env.git_ok(
        &bare,
        &["config", "--add", "receipt.protectedBranch", "main"],
    );
    env.git_ok(
        &bare,
        &["config", "--add", "receipt.protectedBranch", "release"],
    );
    env.receipt_ok(&bare, &["install-hooks", "--server"]);

    // the very first push has nothing to take signers from: accepted, and said so
    env.git_ok(&seed, &["branch", "release"]);
    let r = env.git(&seed, &["push", url.as_str(), "main", "release"]);
    assert_eq!(r.code, 0, "the first push is accepted: {r}");
    for branch in ["refs/heads/main", "refs/heads/release"] {
        assert!(
            r.stderr.contains(&format!(
                "{branch} is created by this push and the server has no branch yet to take signers and required checks from, so it is not gated"
            )),
            "{r}"
        );
    }

    let dir = clone(&env, &url, "c");
    let r = raw_push(&env, &dir, &[":release"]);
    assert_ne!(r.code, 0, "deleting a protected branch is refused: {r}");
    assert!(
        r.stderr
            .contains("refs/heads/release: deleting a protected branch by push is refused"),
        "{r}"
    );
    assert!(
        r.stderr.contains("git update-ref -d refs/heads/release"),
        "{r}"
    );
    assert!(server_ref(&env, &bare, "release").is_some());

    // an administrator removed it on the server; re-creating it is gated like an update
    env.git_ok(&bare, &["update-ref", "-d", "refs/heads/release"]);
    let main_tip = server_ref(&env, &bare, "main").unwrap();
    let unreceipted = commit_src_change(&env, &dir, "pub fn unreviewed() {}\n");
    let r = raw_push(&env, &dir, &["HEAD:refs/heads/release"]);
    assert_ne!(r.code, 0, "an unreceipted re-creation is refused: {r}");
    assert!(
        r.stderr.contains(&format!(
            "refs/heads/release ({}) lacks present receipts signed by the signers in .gitreceipts at refs/heads/main ({})",
            &unreceipted[..7],
            &main_tip[..7]
        )),
        "names the branch, and where signers come from: {r}"
    );
    assert!(r.stderr.contains("test"), "names the check: {r}");
    assert!(r.stderr.contains("missing"), "{r}");
    assert_eq!(server_ref(&env, &bare, "release"), None);

    env.receipt_ok(&dir, &["run", "test"]);
    let writer = env.only_writer(&dir);
    let r = raw_push(
        &env,
        &dir,
        &[
            "HEAD:refs/heads/release",
            &format!("refs/receipts/{writer}"),
            &format!("refs/notes/receipts/{writer}"),
        ],
    );
    assert_eq!(r.code, 0, "a receipted creation is accepted: {r}");
    assert_eq!(server_ref(&env, &bare, "release"), Some(unreceipted));
}

/// On a clone of a guarded server, a `feature` branch that edits `.gitreceipts`
/// with `edit` and changes `src`.
fn feature_editing_the_contract(env: &Env, dir: &Path, edit: impl Fn(&str) -> String) {
    env.git_ok(dir, &["checkout", "-qb", "feature"]);
    let contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    let edited = edit(&contract);
    assert_ne!(edited, contract, "the edit changes the contract");
    std::fs::write(dir.join(".gitreceipts"), edited).unwrap();
    commit_src_change(env, dir, "pub fn weakened() {}\n");
}

#[test]
fn a_branch_that_removes_required_true_still_needs_the_check_at_gate_and_at_the_server() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = guarded_server(&env, &daemon, "required.git");
    let dir = clone(&env, &url, "c");
    feature_editing_the_contract(&env, &dir, |c| c.replacen("\trequired = true\n", "", 1));
    env.receipt_ok(&dir, &["run", "docs"]);

    let r = env.receipt(&dir, &["gate", "--trust", "origin/main"]);
    assert_eq!(r.code, 1, "still required at origin/main: {r}");
    assert!(
        r.stdout.contains("1 of 1 required check not present"),
        "{r}"
    );
    assert!(r.stdout.contains("test  missing"), "names the check: {r}");
    assert!(r.stdout.contains("fix: git receipt run test"), "{r}");
    // judged by its own .gitreceipts alone, the branch requires nothing
    let r = env.receipt(&dir, &["gate"]);
    assert_eq!(r.code, 0, "{r}");

    let r = raw_push(&env, &dir, &["feature:main"]);
    assert_ne!(r.code, 0, "the server refuses: {r}");
    assert!(r.stderr.contains("lacks present receipts"), "{r}");
    assert!(r.stderr.contains("test"), "names the check: {r}");

    // the legitimate path: run the check the trusted revision requires
    env.receipt_ok(&dir, &["run", "test"]);
    let r = env.receipt(&dir, &["gate", "--trust", "origin/main"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("required check test present"), "{r}");
    let writer = env.only_writer(&dir);
    let r = raw_push(
        &env,
        &dir,
        &[
            "feature:main",
            &format!("refs/receipts/{writer}"),
            &format!("refs/notes/receipts/{writer}"),
        ],
    );
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        server_ref(&env, &bare, "main"),
        Some(env.git_ok(&dir, &["rev-parse", "feature"]))
    );

    // retiring the check, step two (docs/trust.md): main no longer requires it,
    // so a push that deletes it needs no receipt for it
    let contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    let (start, end) = (
        contract.find("[check \"test\"]").unwrap(),
        contract.find("[check \"docs\"]").unwrap(),
    );
    let retired = format!("{}{}", &contract[..start], &contract[end..]);
    std::fs::write(dir.join(".gitreceipts"), retired).unwrap();
    commit_src_change(&env, &dir, "pub fn after_retirement() {}\n");
    let r = raw_push(&env, &dir, &["feature:main"]);
    assert_eq!(r.code, 0, "{r}");
}

#[test]
fn a_branch_that_deletes_a_required_check_reads_missing_with_the_reason() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = guarded_server(&env, &daemon, "deleted.git");
    let main_tip = server_ref(&env, &bare, "main").unwrap();
    let dir = clone(&env, &url, "c");
    feature_editing_the_contract(&env, &dir, |c| {
        let start = c.find("[check \"test\"]").unwrap();
        let end = c.find("[check \"docs\"]").unwrap();
        format!("{}{}", &c[..start], &c[end..])
    });

    let reason = "required at origin/main but no longer declared in .gitreceipts here";
    let r = env.receipt(&dir, &["gate", "--trust", "origin/main"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("test  missing"), "{r}");
    assert!(r.stdout.contains(reason), "{r}");
    assert!(
        r.stdout
            .contains("fix: declare [check \"test\"] in .gitreceipts again"),
        "{r}"
    );
    let r = env.receipt(&dir, &["gate", "--trust", "origin/main", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["checks"][0]["name"], "test", "{r}");
    assert_eq!(v[0]["checks"][0]["state"], "missing", "{r}");
    assert_eq!(v[0]["checks"][0]["reason"], reason, "{r}");
    // the same finding as structure, for machines: a code and its fields
    assert_eq!(
        v[0]["reasons"],
        serde_json::json!([{"code": "required-but-undeclared", "check": "test", "trusted": "origin/main"}]),
        "{r}"
    );

    // --verify trusts the trust root on the default branch: the same rule
    let r = env.receipt(&dir, &["gate", "--verify"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout.contains(
            "(the trust root on the default branch's first-parent history) but no longer declared in .gitreceipts here"
        ),
        "{r}"
    );

    let r = raw_push(&env, &dir, &["feature:main"]);
    assert_ne!(r.code, 0, "the server refuses: {r}");
    assert!(
        r.stderr.contains(&format!(
            "required at refs/heads/main ({}) but no longer declared in .gitreceipts here",
            &main_tip[..7]
        )),
        "{r}"
    );
}

#[test]
fn a_branch_that_changes_a_required_checks_command_is_judged_by_it_and_the_change_is_shown() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = guarded_server(&env, &daemon, "redefined.git");
    let main_tip = server_ref(&env, &bare, "main").unwrap();
    let dir = clone(&env, &url, "c");
    feature_editing_the_contract(&env, &dir, |c| {
        c.replacen(
            "run = \"echo tests-ran; echo to-stderr >&2\"",
            "run = echo new-test-command",
            1,
        )
    });
    env.receipt_ok(&dir, &["run", "test"]);
    let notice = "required check \"test\" is defined differently here than at origin/main: its run changed; the definition here is the one evaluated";
    let r = env.receipt(&dir, &["gate", "--trust", "origin/main"]);
    assert_eq!(r.code, 0, "the branch's own definition is evaluated: {r}");
    assert!(r.stderr.contains(notice), "a reviewer sees it: {r}");

    let writer = env.only_writer(&dir);
    let r = raw_push(
        &env,
        &dir,
        &[
            "feature:main",
            &format!("refs/receipts/{writer}"),
            &format!("refs/notes/receipts/{writer}"),
        ],
    );
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains(&format!(
            "required check \"test\" is defined differently here than at refs/heads/main ({}): its run changed",
            &main_tip[..7]
        )),
        "the server says so too: {r}"
    );
    assert_eq!(
        server_ref(&env, &bare, "main"),
        Some(env.git_ok(&dir, &["rev-parse", "feature"]))
    );
}

#[test]
fn a_notes_commit_that_drops_the_failed_line_does_not_make_the_branch_pass() {
    // The attack of issue 8: the newest trusted receipt for a branch's inputs
    // failed; a pusher with no key at all rewrites the notes (a fast-forward) so
    // they show only the older pass, and pushes the branch with them.
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = guarded_server(&env, &daemon, "notes-drop.git");
    let dir = clone(&env, &url, "c");
    let change = commit_src_change(&env, &dir, "pub fn flaky() {}\n");
    env.receipt_ok(&dir, &["run", "test"]);
    let writer = env.only_writer(&dir);
    let notes = format!("refs/notes/receipts/{writer}");
    let nref = format!("--ref={notes}");
    let inputs = env.log_json(&dir)[0]["inputs"].as_str().unwrap().to_owned();
    let passed_line = env.git_ok(&dir, &["notes", &nref, "show", &change]);
    assert!(passed_line.ends_with(" test passed"), "{passed_line}");
    let r = env.receipt(&dir, &["record", "test", "--exit-code", "1"]);
    assert_eq!(r.code, 0, "{r}");
    let failed_line = env.git_ok(&dir, &["notes", &nref, "show", &change]);
    assert!(
        failed_line.ends_with(" test failed"),
        "the note shows the newest: {failed_line}"
    );
    env.receipt_ok(&dir, &["push"]);

    // the forgery, with stock git only: both notes show the pass again
    for object in [&change, &inputs] {
        env.git_ok(
            &dir,
            &["notes", &nref, "add", "-f", "-m", &passed_line, object],
        );
    }
    assert_eq!(
        env.git_ok(&dir, &["notes", &nref, "show", &change]),
        passed_line
    );
    let r = raw_push(&env, &dir, &[&notes, "main"]);
    assert_ne!(r.code, 0, "the chain decides, not the note: {r}");
    assert!(
        r.stderr.contains("test") && r.stderr.contains("failed"),
        "{r}"
    );
    assert_ne!(server_ref(&env, &bare, "main"), Some(change.clone()));
    // pushed alone, the forged notes are accepted (a display) and change nothing
    let r = raw_push(&env, &dir, &[&notes]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        server_ref(&env, &bare, &notes),
        Some(env.git_ok(&dir, &["rev-parse", &notes]))
    );
    let r = raw_push(&env, &dir, &["main"]);
    assert_ne!(
        r.code, 0,
        "still refused with the forged notes on the server: {r}"
    );
    assert!(r.stderr.contains("failed"), "{r}");

    // a fresh clone reads the forged notes and still says failed
    let ci = clone(&env, &url, "ci");
    env.receipt_ok(&ci, &["fetch"]);
    env.git_ok(
        &ci,
        &["fetch", "-q", "origin", &format!("+{notes}:{notes}")],
    );
    assert_eq!(
        env.git_ok(&ci, &["notes", &nref, "show", &change]),
        passed_line
    );
    env.git_ok(
        &ci,
        &[
            "fetch",
            "-q",
            &dir.to_string_lossy(),
            "main:refs/heads/branch",
        ],
    );
    let r = env.receipt(&ci, &["status", "--json", "branch"]);
    assert_eq!(r.code, 0, "{r}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["checks"][0]["name"], "test", "{r}");
    assert_eq!(v["checks"][0]["state"], "failed", "{r}");
    let r = env.receipt(&ci, &["gate", "branch"]);
    assert_eq!(r.code, 1, "{r}");
    // verify: the lagging display is a warning, not a finding
    let r = env.receipt(&ci, &["verify", "--trust", "origin/main"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("notes do not show it"),
        "the hidden receipt is named as a warning: {r}"
    );
}

/// The harness once killed only the `git` wrapper, and the `git-daemon` it started
/// kept listening after every test (12 per full run).
#[test]
fn leaked_servers_dropping_the_daemon_ends_git_daemon_and_frees_its_port() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let port = daemon.port;
    let (_, url) = daemon.bare(&env, "leak.git");
    let r = env.git(env.tmp.path(), &["ls-remote", &url]);
    assert_eq!(r.code, 0, "the daemon serves: {r}");
    drop(daemon);
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nothing listens on {port} once the daemon is dropped"
    );
}

/// Issue 10: a recorded pass silently beat an observed failure. With `accept = run`
/// on the server's main, the pre-receive hook counts only observed runs, also for
/// a branch whose own `.gitreceipts` drops `accept = run`.
#[test]
fn pre_receive_with_accept_run_refuses_a_recorded_pass_even_when_the_push_drops_it() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let seed = seed_with_signer(&env, "seed");
    env.git_ok(
        &seed,
        &["config", "-f", ".gitreceipts", "check.test.accept", "run"],
    );
    env.git_ok(&seed, &["commit", "-qam", "observed runs only"]);
    let (bare, url) = daemon.bare(&env, "accept.git");
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    env.receipt_ok(&bare, &["install-hooks", "--server"]);
    let dir = clone(&env, &url, "c");
    let change = commit_src_change(&env, &dir, "pub fn recorded() {}\n");
    env.receipt_ok(&dir, &["record", "test", "--exit-code", "0"]);
    let writer = env.only_writer(&dir);
    let (chain, notes) = (
        format!("refs/receipts/{writer}"),
        format!("refs/notes/receipts/{writer}"),
    );
    let r = raw_push(&env, &dir, &["main", &chain, &notes]);
    assert_ne!(r.code, 0, "a recorded pass does not count: {r}");
    assert!(r.stderr.contains("1 recorded receipt ignored"), "{r}");
    // dropping `accept = run` in the pushed branch changes nothing
    env.git_ok(
        &dir,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "--unset",
            "check.test.accept",
        ],
    );
    env.git_ok(&dir, &["commit", "-qam", "accept recorded results"]);
    let r = raw_push(&env, &dir, &["main", &chain, &notes]);
    assert_ne!(r.code, 0, "main's accept = run holds: {r}");
    assert!(r.stderr.contains("recorded receipt"), "{r}");
    assert_ne!(server_ref(&env, &bare, "main"), Some(change));
    // an observed run is accepted
    env.receipt_ok(&dir, &["run", "test"]);
    let r = raw_push(&env, &dir, &["main", &chain, &format!("+{notes}:{notes}")]);
    assert_eq!(r.code, 0, "{r}");
}
