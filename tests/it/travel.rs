//! Receipts travel through a real git server: `git daemon` on 127.0.0.1, started
//! by each test, with bare repositories it creates.

use crate::common::{self, Daemon, Env, clone};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// A served bare repository seeded with the basic fixture's history.
fn seeded_server(env: &Env, daemon: &Daemon, name: &str) -> (PathBuf, String) {
    let seed = env.fixture_repo("make_basic_repo.sh", &format!("seed-{name}"));
    let (bare, url) = daemon.bare(env, name);
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    (bare, url)
}

fn remote_refs(env: &Env, dir: &Path, url: &str, pattern: &str) -> Vec<String> {
    env.git_ok(dir, &["ls-remote", url, pattern])
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap().to_owned())
        .collect()
}

#[test]
fn two_writers_push_and_fetch_and_a_fresh_clone_sees_both_after_plain_fetch() {
    let alice = Env::new();
    let bob = Env::new(); // another HOME: another key
    let daemon = Daemon::start(&alice);
    let (_, url) = seeded_server(&alice, &daemon, "shared.git");
    let a = clone(&alice, &url, "a");
    let b = clone(&bob, &url, "b");
    for (env, dir) in [(&alice, &a), (&bob, &b)] {
        env.receipt_ok(dir, &["init"]);
        env.receipt_ok(dir, &["run", "test"]);
        let r = env.receipt_ok(dir, &["push"]);
        assert!(r.stderr.contains("pushed 1 new receipt of default-"), "{r}");
    }
    assert_eq!(remote_refs(&alice, &a, &url, "refs/receipts/*").len(), 2);
    for (env, dir) in [(&alice, &a), (&bob, &b)] {
        let r = env.receipt_ok(dir, &["fetch"]);
        assert!(r.stderr.contains("new chain default-"), "{r}");
        let log = env.log_json(dir);
        let writers: HashSet<&str> = log.iter().map(|r| r["writer"].as_str().unwrap()).collect();
        assert_eq!(writers.len(), 2, "both writers' receipts are here");
    }
    let ids: Vec<String> = alice
        .log_json(&a)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    // a reviewer: fresh clone, init once, then plain git fetch brings everything
    let carol = Env::new();
    let c = clone(&carol, &url, "c");
    carol.receipt_ok(&c, &["init"]);
    let r = carol.git(&c, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    let shown = carol.git_ok(&c, &["log", "--notes=receipts/*", "-1", "--format=%N"]);
    for id in &ids {
        assert!(shown.contains(id.as_str()), "git log shows {id}: {shown}");
    }
    // and plain `git log` shows them too (notes.displayRef)
    let plain = carol.git_ok(&c, &["log", "-1"]);
    assert!(plain.contains(&ids[0]), "{plain}");
    // a later plain fetch brings a new receipt as a fast-forward: nothing is
    // forced into local chains
    let chains = |env: &Env, dir: &Path| -> Vec<(String, String)> {
        env.git_ok(
            dir,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/receipts/",
            ],
        )
        .lines()
        .map(|l| {
            let (name, oid) = l.split_once(' ').unwrap();
            (name.to_owned(), oid.to_owned())
        })
        .collect()
    };
    let before = chains(&carol, &c);
    assert_eq!(before.len(), 2, "{before:?}");
    alice.receipt_ok(&a, &["run", "test"]);
    alice.receipt_ok(&a, &["push"]);
    let again = carol.git(&c, &["fetch", "--verbose"]);
    assert_eq!(again.code, 0, "{again}");
    assert!(!again.stderr.contains("forced update"), "{again}");
    let after = chains(&carol, &c);
    let moved: Vec<&(String, String)> = after.iter().filter(|r| !before.contains(r)).collect();
    assert_eq!(
        moved.len(),
        1,
        "alice's chain moved: {before:?} -> {after:?}"
    );
    let (name, new) = moved[0];
    let old = &before.iter().find(|(n, _)| n == name).unwrap().1;
    let ff = carol.git(&c, &["merge-base", "--is-ancestor", old, new]);
    assert_eq!(
        ff.code, 0,
        "{name} moved {old} -> {new} as a fast-forward: {ff}"
    );
}

#[test]
fn init_is_idempotent() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (_, url) = seeded_server(&env, &daemon, "idem.git");
    let dir = clone(&env, &url, "c");
    let first = env.receipt_ok(&dir, &["init"]);
    assert!(first.stderr.contains("notes.displayRef"), "{first}");
    let config_before = std::fs::read_to_string(dir.join(".git/config")).unwrap();
    let second = env.receipt_ok(&dir, &["init"]);
    assert!(
        second.stderr.contains("already set up; nothing changed"),
        "{second}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join(".git/config")).unwrap(),
        config_before
    );
    // init creates no key (a CI clone needs none); the first run that creates one
    // excludes this clone's own chain from plain fetches
    assert!(first.stderr.contains("no signing key yet"), "{first}");
    assert!(!env.home.join(".config/git-receipt/signing_key").exists());
    let run = env.receipt_ok(&dir, &["run", "test"]);
    let writer = env.only_writer(&dir);
    assert!(
        run.stderr.contains(&format!("^refs/receipts/{writer}")),
        "{run}"
    );
    let fetch = env.git_ok(&dir, &["config", "--get-all", "remote.origin.fetch"]);
    assert!(
        fetch.contains(&format!("^refs/receipts/{writer}")),
        "{fetch}"
    );
    assert!(
        fetch.contains(&format!("^refs/notes/receipts/{writer}")),
        "{fetch}"
    );
    // ... and gives the remote no push refspec: push.default still decides
    let push = env.git(&dir, &["config", "--get-all", "remote.origin.push"]);
    assert_eq!(push.code, 1, "no push refspecs: {push}\n{run}");
    let third = env.receipt_ok(&dir, &["init"]);
    assert!(
        third.stderr.contains("already set up; nothing changed"),
        "{third}"
    );
}

#[test]
fn a_bare_git_push_after_init_push_refspecs_carries_branch_chain_and_notes_in_one_push() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = seeded_server(&env, &daemon, "one-push.git");
    let dir = clone(&env, &url, "c");
    env.receipt_ok(&dir, &["key", "generate"]);
    let r = env.receipt_ok(&dir, &["init", "--push-refspecs"]);
    assert!(r.stderr.contains("remote.origin.push += HEAD"), "{r}");
    // a clone with a key but no receipt yet: the globs match nothing, and a bare
    // push still works (a missing source ref would fail it; --no-verify: nothing
    // is receipted yet, so the hook would refuse)
    std::fs::write(dir.join("NOTES.txt"), "no receipt yet\n").unwrap();
    env.git_ok(&dir, &["add", "NOTES.txt"]);
    env.git_ok(&dir, &["commit", "-qm", "docs only"]);
    let r = env.git(&dir, &["push", "--no-verify"]);
    assert_eq!(r.code, 0, "a bare push before any receipt: {r}");
    env.receipt_ok(&dir, &["run", "test"]);
    let writer = env.only_writer(&dir);
    std::fs::write(dir.join("NOTES.txt"), "a receipted change\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "another"]);
    env.receipt_ok(&dir, &["run", "test"]);
    let r = env.git(&dir, &["push"]);
    assert_eq!(r.code, 0, "{r}");
    // the hook gated and sent nothing itself: git's own push carried everything
    assert!(
        !r.stderr.contains("pushed"),
        "the hook pushed separately: {r}"
    );
    for name in [
        "refs/heads/main".to_owned(),
        format!("refs/receipts/{writer}"),
        format!("refs/notes/receipts/{writer}"),
    ] {
        assert_eq!(
            env.git_ok(&bare, &["rev-parse", &name]),
            env.git_ok(&dir, &["rev-parse", &name]),
            "{name} on the server"
        );
    }
    // a named push (`git push origin main`) ignores push refspecs: the hook sends
    // the receipts in a push of its own first, as before
    std::fs::write(dir.join("NOTES.txt"), "named push\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "third"]);
    env.receipt_ok(&dir, &["run", "test"]);
    let r = env.git(&dir, &["push", "origin", "main"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("pushed 1 receipt"), "{r}");
    assert_eq!(
        env.git_ok(&bare, &["rev-parse", &format!("refs/receipts/{writer}")]),
        env.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")])
    );
}

#[test]
fn init_leaves_push_refspecs_of_your_own_alone_and_can_be_told_to_add_none() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (_, url) = seeded_server(&env, &daemon, "own-push.git");
    env.receipt_ok(env.tmp.path(), &["key", "generate"]);
    let mine = clone(&env, &url, "mine");
    env.git_ok(
        &mine,
        &[
            "config",
            "remote.origin.push",
            "refs/heads/main:refs/heads/main",
        ],
    );
    let r = env.receipt_ok(&mine, &["init", "--push-refspecs"]);
    assert!(
        r.stderr.contains("remote.origin.push is set already"),
        "{r}"
    );
    assert!(
        r.stderr.contains("hint: to send them in git's own push"),
        "{r}"
    );
    assert_eq!(
        env.git_ok(&mine, &["config", "--get-all", "remote.origin.push"]),
        "refs/heads/main:refs/heads/main"
    );
    // another developer, no key yet: told not to, init adds none, and neither does
    // the first run, which creates the key and wires the chain
    let other = Env::new();
    let none = clone(&other, &url, "none");
    let r = other.receipt_ok(&none, &["init", "--no-push-refspecs"]);
    assert!(r.stderr.contains("receipt.pushRefspecs = false"), "{r}");
    let r = other.receipt_ok(&none, &["run", "test"]);
    assert!(
        r.stderr.contains("^refs/receipts/"),
        "the run wired the chain: {r}"
    );
    let push = other.git(&none, &["config", "--get-all", "remote.origin.push"]);
    assert_eq!(push.code, 1, "no push refspecs: {push}");
}

#[test]
fn same_key_on_two_clones_racing_loses_nothing() {
    let env = Env::new(); // one HOME: one key, one writer id, two machines
    let daemon = Daemon::start(&env);
    let (_, url) = seeded_server(&env, &daemon, "race.git");
    let a = clone(&env, &url, "a");
    let b = clone(&env, &url, "b");
    env.receipt_ok(&a, &["key", "generate"]);
    let bin = common::bin();
    let mut children = Vec::new();
    for (tag, dir) in [("A", &a), ("B", &b)] {
        let script = format!(
            "i=0; while [ $i -lt 50 ]; do printf '{tag}-%s\\n' $i > ../log-{tag}; '{bin}' record test --exit-code 0 --log ../log-{tag} || exit 1; \
             if [ $((i % 5)) -eq 4 ]; then '{bin}' push >/dev/null || exit 2; fi; i=$((i+1)); done; '{bin}' push 2>&1",
            bin = bin.display()
        );
        let mut cmd = std::process::Command::new("sh");
        env.seal(&mut cmd);
        cmd.current_dir(dir)
            .args(["-c", &script])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        children.push(cmd.spawn().unwrap());
    }
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a racer failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // whoever pushed first may lack the other's tail: push once more from each
    env.receipt_ok(&a, &["push"]);
    env.receipt_ok(&b, &["push"]);
    let reviewer = Env::new();
    let c = clone(&reviewer, &url, "c");
    reviewer.receipt_ok(&c, &["fetch"]);
    let mut log = reviewer.log_json(&c);
    assert_eq!(log.len(), 100, "all 100 receipts on the server");
    log.sort_by_key(|r| r["index"].as_u64().unwrap());
    for (i, r) in log.iter().enumerate() {
        assert_eq!(
            r["index"].as_u64().unwrap(),
            i as u64,
            "linear and gap-free"
        );
        if i > 0 {
            assert_eq!(r["prev"], log[i - 1]["id"]);
        }
    }
    let show: Vec<serde_json::Value> = log
        .iter()
        .map(|r| {
            let out = reviewer.receipt_ok(&c, &["show", "--body", r["id"].as_str().unwrap()]);
            serde_json::from_str(&out.stdout).unwrap()
        })
        .collect();
    let tails: HashSet<String> = show
        .iter()
        .map(|b| {
            b["result"]["stdout_tail"]
                .as_str()
                .unwrap()
                .trim()
                .to_owned()
        })
        .collect();
    let expected: HashSet<String> = (0..50)
        .flat_map(|i| [format!("A-{i}"), format!("B-{i}")])
        .collect();
    assert_eq!(
        tails, expected,
        "every receipt of both clones arrived exactly once"
    );
}

#[test]
fn pre_push_blocks_without_fresh_receipts_and_pushes_them_when_fresh() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (_, url) = seeded_server(&env, &daemon, "hooked.git");
    let dir = clone(&env, &url, "c");
    env.receipt_ok(&dir, &["init"]);
    std::fs::write(dir.join("src/lib.rs"), "pub fn changed() {}\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "change src"]);
    let r = env.git(&dir, &["push", "origin", "main"]);
    assert_ne!(r.code, 0, "the push is refused: {r}");
    assert!(r.stderr.contains("refs/heads/main"), "{r}");
    assert!(r.stderr.contains("test"), "names the check: {r}");
    assert!(
        r.stderr.contains("fix: git receipt run test"),
        "names the fix: {r}"
    );
    assert!(
        r.stderr.contains("git push --no-verify"),
        "names the escape hatch: {r}"
    );
    assert!(remote_refs(&env, &dir, &url, "refs/receipts/*").is_empty());
    env.receipt_ok(&dir, &["run", "test"]);
    let r = env.git(&dir, &["push", "origin", "main"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("pushed 1 receipt"), "{r}");
    assert_eq!(
        remote_refs(&env, &dir, &url, "refs/receipts/*").len(),
        1,
        "the server has the receipts"
    );
    assert_eq!(
        remote_refs(&env, &dir, &url, "refs/notes/receipts/*").len(),
        1
    );
    // tags pass this client-side hook without receipts (deletions too; the
    // server refuses deleting a protected branch or a chain: tests/it/server_bypass.rs)
    env.git_ok(&dir, &["tag", "v1", "HEAD~1"]);
    let r = env.git(&dir, &["push", "origin", "v1"]);
    assert_eq!(r.code, 0, "tags pass: {r}");
    // --no-verify is the escape hatch
    std::fs::write(dir.join("src/lib.rs"), "pub fn again() {}\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "again"]);
    let r = env.git(&dir, &["push", "origin", "HEAD:refs/heads/doomed"]);
    assert_ne!(r.code, 0, "the hook gates this unreceipted tip: {r}");
    let r = env.git(
        &dir,
        &[
            "push",
            "--no-verify",
            "origin",
            "main",
            "HEAD:refs/heads/doomed",
        ],
    );
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(remote_refs(&env, &dir, &url, "refs/heads/doomed").len(), 1);
    // deleting a branch whose tip lacks receipts passes the hook
    let r = env.git(&dir, &["push", "origin", ":refs/heads/doomed"]);
    assert_eq!(r.code, 0, "deletions pass: {r}");
    assert!(
        remote_refs(&env, &dir, &url, "refs/heads/doomed").is_empty(),
        "the branch was deleted"
    );
}

#[test]
fn pre_receive_refuses_unreceipted_tips_and_accepts_receipts_in_the_same_push() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    // the signer is declared in .gitreceipts on the server's main
    let seed = env.fixture_repo("make_basic_repo.sh", "seed");
    let pubkey = env.receipt_ok(&seed, &["key", "generate"]).stdout;
    let mut contract = std::fs::read_to_string(seed.join(".gitreceipts")).unwrap();
    contract.push_str(&format!("[signer \"dev\"]\n\tkey = {}", pubkey));
    std::fs::write(seed.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&seed, &["commit", "-qam", "trust dev"]);
    let (bare, url) = daemon.bare(&env, "guarded.git");
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    env.receipt_ok(&bare, &["install-hooks", "--server"]);
    assert!(bare.join("hooks/pre-receive").exists());

    let dir = clone(&env, &url, "c");
    std::fs::write(dir.join("src/lib.rs"), "pub fn guarded() {}\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "unreceipted"]);
    let r = env.git(&dir, &["push", "--no-verify", "origin", "main"]);
    assert_ne!(r.code, 0, "the server refuses: {r}");
    assert!(r.stderr.contains("lacks present receipts"), "{r}");
    assert!(
        r.stderr
            .contains("fix: git receipt run test && git receipt push"),
        "{r}"
    );

    env.receipt_ok(&dir, &["run", "test"]);
    let writer = env.only_writer(&dir);
    let r = env.git(
        &dir,
        &[
            "push",
            "--no-verify",
            "origin",
            "main",
            &format!("refs/receipts/{writer}"),
            &format!("refs/notes/receipts/{writer}"),
        ],
    );
    assert_eq!(r.code, 0, "receipts in the same push count: {r}");
    assert_eq!(
        env.git_ok(&bare, &["rev-parse", "main"]),
        env.git_ok(&dir, &["rev-parse", "HEAD"])
    );
}

#[test]
fn squash_merge_by_another_clone_keeps_the_receipt_valid_by_tree() {
    let alice = Env::new();
    let daemon = Daemon::start(&alice);
    let (_, url) = seeded_server(&alice, &daemon, "squash.git");
    let a = clone(&alice, &url, "a");
    alice.receipt_ok(&a, &["init"]);
    alice.git_ok(&a, &["checkout", "-qb", "feature"]);
    std::fs::write(a.join("src/lib.rs"), "pub fn feature() {}\n").unwrap();
    alice.git_ok(&a, &["commit", "-qam", "feature work"]);
    alice.receipt_ok(&a, &["run", "test"]);
    alice.git_ok(&a, &["push", "-q", "origin", "feature"]);
    // bob trusts alice's key, fetches, squash-merges feature into main
    let bob = Env::new();
    let b = clone(&bob, &url, "b");
    bob.receipt_ok(&b, &["init"]);
    let alice_key = alice.receipt_ok(&a, &["key", "show"]).stdout;
    bob.git_ok(&b, &["config", "receipt.trustedKey", alice_key.trim()]);
    bob.git_ok(&b, &["fetch", "-q"]);
    bob.git_ok(&b, &["merge", "-q", "--squash", "origin/feature"]);
    bob.git_ok(&b, &["commit", "-qm", "squash feature"]);
    let r = bob.receipt(&b, &["gate", "HEAD", "--json"]);
    assert_eq!(r.code, 0, "present by inputs tree: {r}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["checks"][0]["state"], "present");
}

#[test]
fn unreachable_remote_fails_clearly_and_touches_nothing() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    env.git_ok(
        &repo,
        &[
            "remote",
            "add",
            "origin",
            &format!("git://127.0.0.1:{port}/nothing.git"),
        ],
    );
    let before = env.git_ok(&repo, &["for-each-ref", "refs/receipts/", "refs/notes/"]);
    let r = env.receipt(&repo, &["push"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("your local receipts are untouched"),
        "{r}"
    );
    assert!(
        r.stderr.contains("reachable"),
        "the hint names the fix: {r}"
    );
    assert_eq!(
        env.git_ok(&repo, &["for-each-ref", "refs/receipts/", "refs/notes/"]),
        before
    );
    let r = env.receipt(&repo, &["push", "nosuchremote"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("no remote named \"nosuchremote\""), "{r}");
}

#[test]
fn a_server_that_forbids_custom_refs_is_reported_and_nothing_is_lost() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = seeded_server(&env, &daemon, "strict.git");
    let hook = bare.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\nwhile read old new ref; do case $ref in refs/heads/*|refs/tags/*) ;; *) echo \"custom ref $ref is not allowed here\"; exit 1;; esac; done\n",
    )
    .unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(&hook).unwrap().permissions(),
        0o755,
    );
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let dir = clone(&env, &url, "c");
    env.receipt_ok(&dir, &["run", "test"]);
    let before = env.git_ok(&dir, &["for-each-ref", "refs/receipts/", "refs/notes/"]);
    let r = env.receipt(&dir, &["push"]);
    assert_eq!(r.code, 1, "a refusal is a verdict: {r}");
    assert!(
        r.stderr.contains("custom ref refs/receipts/"),
        "the server's reason is shown: {r}"
    );
    assert!(
        r.stderr
            .contains("it must let you push refs/receipts/ (create, fast-forward)"),
        "{r}"
    );
    assert_eq!(
        env.git_ok(&dir, &["for-each-ref", "refs/receipts/", "refs/notes/"]),
        before
    );
}

#[test]
fn install_hooks_honours_core_hooks_path_and_keeps_an_existing_hook() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let hooks = env.path("shared-hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(
        hooks.join("pre-push"),
        "#!/bin/sh\necho user-hook-ran >&2\n",
    )
    .unwrap();
    std::fs::set_permissions(
        hooks.join("pre-push"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    env.git_ok(
        &repo,
        &["config", "core.hooksPath", hooks.to_str().unwrap()],
    );
    let r = env.receipt_ok(&repo, &["install-hooks"]);
    assert!(r.stderr.contains("kept as"), "{r}");
    assert!(
        std::fs::read_to_string(hooks.join("pre-push"))
            .unwrap()
            .contains("\"$receipt\" hook pre-push")
    );
    let r = env.receipt_ok(&repo, &["install-hooks"]);
    assert!(r.stderr.contains("already installed"), "{r}");
    // the user's hook still runs after ours (push to a local bare repo)
    let bare = env.path("bare.git");
    env.git_ok(
        env.tmp.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    env.receipt_ok(&repo, &["run", "test"]);
    let r = env.git(&repo, &["push", bare.to_str().unwrap(), "main"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("user-hook-ran"), "{r}");
    let r = env.receipt_ok(&repo, &["uninstall-hooks"]);
    assert!(r.stderr.contains("restored your original hook"), "{r}");
    assert_eq!(
        std::fs::read_to_string(hooks.join("pre-push")).unwrap(),
        "#!/bin/sh\necho user-hook-ran >&2\n"
    );
}

/// Installed only in git's exec path (as `install -m 755 git-receipt "$(git
/// --exec-path)"` puts it), not on PATH: the pre-push shim runs it directly,
/// with the push's lines on its stdin, and it gates and sends the receipt.
#[test]
fn the_pre_push_hook_finds_git_receipt_in_gits_exec_path() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["install-hooks"]);
    let bare = env.path("bare.git");
    env.git_ok(
        env.tmp.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    // an exec path of git's own programs (links) and git-receipt
    let real = std::path::PathBuf::from(env.git_ok(env.tmp.path(), &["--exec-path"]));
    let exec = env.path("exec-path");
    std::fs::create_dir_all(&exec).unwrap();
    for e in std::fs::read_dir(&real).unwrap() {
        let e = e.unwrap();
        std::os::unix::fs::symlink(e.path(), exec.join(e.file_name())).unwrap();
    }
    std::os::unix::fs::symlink(common::bin(), exec.join("git-receipt")).unwrap();
    // PATH without the directory of the binary under test
    let bin_dir = common::bin().parent().unwrap().to_owned();
    let path: Vec<std::path::PathBuf> = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .filter(|p| *p != bin_dir)
        .collect();
    let push = |args: &[&str]| {
        let mut cmd = std::process::Command::new(real.join("git"));
        env.seal(&mut cmd);
        cmd.env("PATH", std::env::join_paths(&path).unwrap())
            .env("GIT_EXEC_PATH", &exec)
            .current_dir(&repo)
            .args(args);
        cmd.output().unwrap()
    };
    // no receipt: the hook refuses, so it ran
    let out = push(&["push", "-q", bare.to_str().unwrap(), "main"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("git receipt run test"), "{stderr}");
    assert!(
        !stderr.contains("not installed where the hook looks"),
        "{stderr}"
    );
    // with it, the push goes through and the receipt travels with it
    env.receipt_ok(&repo, &["run", "test"]);
    let out = push(&["push", "-q", bare.to_str().unwrap(), "main"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mine = env.git_ok(
        &repo,
        &["for-each-ref", "--format=%(objectname)", "refs/receipts/"],
    );
    let theirs = env.git_ok(
        &bare,
        &["for-each-ref", "--format=%(objectname)", "refs/receipts/"],
    );
    assert!(!mine.is_empty());
    assert_eq!(mine, theirs);
}

#[test]
fn receipts_travel_over_smart_http_too() {
    let alice = Env::new();
    let bob = Env::new();
    let server = common::HttpServer::start(&alice);
    let seed = alice.fixture_repo("make_basic_repo.sh", "seed");
    let (_, url) = server.bare(&alice, "web.git");
    alice.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    let a = clone(&alice, &url, "a");
    let b = clone(&bob, &url, "b");
    for (env, dir) in [(&alice, &a), (&bob, &b)] {
        env.receipt_ok(dir, &["init"]);
        env.receipt_ok(dir, &["run", "test"]);
        env.receipt_ok(dir, &["push"]);
    }
    assert_eq!(remote_refs(&alice, &a, &url, "refs/receipts/*").len(), 2);
    let r = alice.receipt_ok(&a, &["fetch"]);
    assert!(r.stderr.contains("new chain default-"), "{r}");
    let writers: HashSet<String> = alice
        .log_json(&a)
        .iter()
        .map(|r| r["writer"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(writers.len(), 2);
    let carol = Env::new();
    let c = clone(&carol, &url, "c");
    carol.receipt_ok(&c, &["init"]);
    carol.git_ok(&c, &["fetch", "-q"]);
    assert_eq!(
        carol.log_json(&c).len(),
        2,
        "a plain fetch over HTTP brings both chains"
    );
}

#[test]
fn rebase_by_another_clone_onto_a_moved_main_keeps_the_receipt_valid_by_tree() {
    let alice = Env::new();
    let daemon = Daemon::start(&alice);
    let (_, url) = seeded_server(&alice, &daemon, "rebase.git");
    let a = clone(&alice, &url, "a");
    alice.receipt_ok(&a, &["init"]);
    alice.git_ok(&a, &["checkout", "-qb", "feature"]);
    std::fs::write(a.join("src/lib.rs"), "pub fn feature() {}\n").unwrap();
    alice.git_ok(&a, &["commit", "-qam", "feature work"]);
    alice.receipt_ok(&a, &["run", "test"]);
    alice.git_ok(&a, &["push", "-q", "origin", "feature"]);
    // meanwhile main moves, outside the check's inputs (src)
    let bob = Env::new();
    let b = clone(&bob, &url, "b");
    bob.receipt_ok(&b, &["init"]);
    std::fs::write(b.join("docs/index.md"), "# moved on\n").unwrap();
    bob.git_ok(&b, &["commit", "-qam", "docs on main"]);
    bob.git_ok(&b, &["push", "-q", "--no-verify", "origin", "main"]);
    let alice_key = alice.receipt_ok(&a, &["key", "show"]).stdout;
    bob.git_ok(&b, &["config", "receipt.trustedKey", alice_key.trim()]);
    bob.git_ok(&b, &["fetch", "-q"]);
    bob.git_ok(&b, &["checkout", "-qb", "feature", "origin/feature"]);
    bob.git_ok(&b, &["rebase", "-q", "main"]);
    assert_ne!(
        bob.git_ok(&b, &["rev-parse", "HEAD"]),
        alice.git_ok(&a, &["rev-parse", "HEAD"]),
        "a new commit"
    );
    let r = bob.receipt(&b, &["gate", "HEAD", "--json"]);
    assert_eq!(r.code, 0, "present by inputs tree after the rebase: {r}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["checks"][0]["state"], "present");
    assert!(
        v[0]["checks"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("inputs identical"),
        "{}",
        v[0]["checks"][0]["reason"]
    );
}

#[test]
fn init_does_not_change_where_a_bare_git_push_goes_with_push_default_upstream() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = seeded_server(&env, &daemon, "upstream.git");
    let dir = clone(&env, &url, "c");
    env.git_ok(&dir, &["config", "push.default", "upstream"]);
    env.git_ok(
        &dir,
        &["checkout", "-q", "-b", "dev", "--track", "origin/main"],
    );
    env.receipt_ok(&dir, &["key", "generate"]);
    env.receipt_ok(&dir, &["init"]);
    std::fs::write(dir.join("src/lib.rs"), "pub fn lib() { /* dev */ }\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "on dev"]);
    env.receipt_ok(&dir, &["run", "test"]);
    let writer = env.only_writer(&dir);
    let r = env.git(&dir, &["push"]);
    assert_eq!(r.code, 0, "{r}");
    // stock git's rule: dev goes to its upstream, main; no dev appears
    let tip = env.git_ok(&dir, &["rev-parse", "HEAD"]);
    assert_eq!(
        env.git_ok(&bare, &["rev-parse", "refs/heads/main"]),
        tip,
        "{r}"
    );
    assert_eq!(
        env.git(&bare, &["rev-parse", "--verify", "-q", "refs/heads/dev"])
            .code,
        1,
        "no branch dev on the server: {r}"
    );
    // the receipts still travelled with the plain push (the hook sent them)
    assert_eq!(
        env.git_ok(&bare, &["rev-parse", &format!("refs/receipts/{writer}")]),
        env.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]),
        "{r}"
    );
}

#[test]
fn init_takes_out_the_push_refspecs_an_earlier_init_added_by_default() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (_, url) = seeded_server(&env, &daemon, "migrate.git");
    let dir = clone(&env, &url, "c");
    env.receipt_ok(&dir, &["key", "generate"]);
    env.receipt_ok(&dir, &["init", "--push-refspecs"]);
    let push = env.git_ok(&dir, &["config", "--get-all", "remote.origin.push"]);
    assert_eq!(push.lines().count(), 3, "{push}");
    // as an earlier init left it: the refspecs without the opt-in
    env.git_ok(&dir, &["config", "--unset", "receipt.pushRefspecs"]);
    let r = env.receipt_ok(&dir, &["init"]);
    assert!(r.stderr.contains("remote.origin.push -= HEAD"), "{r}");
    let push = env.git(&dir, &["config", "--get-all", "remote.origin.push"]);
    assert_eq!(push.code, 1, "no push refspecs left: {push}");
    let r = env.receipt_ok(&dir, &["init"]);
    assert!(r.stderr.contains("already set up; nothing changed"), "{r}");
}

/// The git built-ins (`git push`, `git update-ref`, ...) that ran while `args`
/// ran in `dir`, in the order they started, from git's own trace
/// (`GIT_TRACE`): every git process of the push, the hook's included, says so.
fn git_builtins_of(env: &Env, dir: &Path, args: &[&str]) -> (common::Run, Vec<String>) {
    let trace = env.path("git-trace");
    let _ = std::fs::remove_file(&trace);
    let mut cmd = std::process::Command::new("git");
    cmd.args(args);
    env.seal(&mut cmd);
    cmd.current_dir(dir).env("GIT_TRACE", &trace);
    let r = common::to_run(cmd.output().unwrap());
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let builtins = text
        .lines()
        .filter_map(|l| l.split_once("trace: built-in: git ").map(|(_, c)| c))
        .map(|c| c.split_whitespace().next().unwrap_or("").to_owned())
        .collect();
    (r, builtins)
}

/// Issue 27: a hooked `git push` costs what its pushes cost. The pre-push hook
/// starts no git process but the receipts' own push: it reads the remote's HEAD
/// and remembers what it pushed in process (a `git symbolic-ref` and two `git
/// update-ref`s each took a process start), and with nothing to send it starts
/// none. What else runs is git's own work of a push, on both sides. (The first
/// push of a chain fetches the remote's first: it knows nothing of it yet.)
#[test]
fn a_hooked_push_runs_no_git_but_the_pushes() {
    let env = Env::new();
    env.fixture_repo("make_basic_repo.sh", "seed");
    env.git_ok(
        env.tmp.path(),
        &["clone", "-q", "--bare", "seed", "server.git"],
    );
    let url = format!("file://{}", env.path("server.git").display());
    let dir = clone(&env, &url, "c");
    env.receipt_ok(&dir, &["init"]);
    // git's own machinery of a push over a local transport, on either side
    let git_own = [
        "receive-pack",
        "pack-objects",
        "unpack-objects",
        "index-pack",
        "rev-list",
        "for-each-ref",
        "maintenance",
        "gc",
    ];
    let others = |builtins: &[String]| -> Vec<String> {
        builtins
            .iter()
            .filter(|b| *b != "push" && !git_own.contains(&b.as_str()))
            .cloned()
            .collect()
    };
    let pushes = |builtins: &[String]| builtins.iter().filter(|b| *b == "push").count();

    // the first push of a chain fetches what the remote has of it first
    std::fs::write(dir.join("src/lib.rs"), "pub fn first() {}\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "change src"]);
    env.receipt_ok(&dir, &["run", "test"]);
    env.git_ok(&dir, &["push", "-q", "origin", "main"]);

    // a receipt to send: the hook pushes it (one push of its own, on what it
    // remembers of the remote), then git the branch
    std::fs::write(dir.join("src/lib.rs"), "pub fn sent() {}\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "change src"]);
    env.receipt_ok(&dir, &["run", "test"]);
    let (r, builtins) = git_builtins_of(&env, &dir, &["push", "origin", "main"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("pushed 1 receipt"), "{r}");
    assert_eq!(
        pushes(&builtins),
        2,
        "the branch's and the receipts': {builtins:?}"
    );
    assert_eq!(others(&builtins), Vec::<String>::new(), "{builtins:?}");
    // and it remembered what it pushed: the next push with nothing new sends nothing
    let writer = env.only_writer(&dir);
    assert_eq!(
        env.git_ok(
            &dir,
            &[
                "rev-parse",
                &format!("refs/receipts-incoming/origin/{writer}")
            ]
        ),
        env.git_ok(&dir, &["rev-parse", &format!("refs/receipts/{writer}")]),
    );
    assert_eq!(
        env.git_ok(
            &dir,
            &[
                "rev-parse",
                &format!("refs/notes/receipts-incoming/origin/{writer}")
            ]
        ),
        env.git_ok(
            &dir,
            &["rev-parse", &format!("refs/notes/receipts/{writer}")]
        ),
    );

    // nothing to send: the branch's push alone
    std::fs::write(dir.join("README"), "changed, not an input\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "readme"]);
    let (r, builtins) = git_builtins_of(&env, &dir, &["push", "origin", "main"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(!r.stderr.contains("pushed"), "{r}");
    assert_eq!(pushes(&builtins), 1, "{builtins:?}");
    assert_eq!(others(&builtins), Vec::<String>::new(), "{builtins:?}");
    assert_eq!(
        env.git_ok(&env.path("server.git"), &["rev-parse", "main"]),
        env.git_ok(&dir, &["rev-parse", "HEAD"])
    );
}
