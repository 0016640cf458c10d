//! How much slower a hooked `git push` is than a plain one, over ssh to gitolite
//! (issue 12, item 5), measured in the same run against the same server.
//!
//! The server is the tests' gitolite3 behind a private sshd on 127.0.0.1
//! (`tests/it/common/gitolite.rs`), with two repositories: `plain` (no git-receipt
//! hook) and `app` (git-receipt's pre-receive hook as a repo-specific hook,
//! protecting `main`). Each round, Alice commits a change and:
//!
//! - **plain**: `git push --no-verify` of the commit to `plain`;
//! - **hooked, named, receipts to send**: `git receipt run test` (not timed),
//!   then `git push origin main` to `app` through the pre-push hook: push
//!   refspecs do not apply to a named push, so the hook pushes the new receipt
//!   first;
//! - **hooked, nothing to send**: a commit that changes no check's inputs (its
//!   receipts are already on the server), a bare `git push` through the hook.
//!
//! - **one push**: `git receipt run test`, then `git receipt push --with-branch`
//!   (receipts and branch in one atomic push);
//! - **bare, with push refspecs**: a bare `git push`, whose remote lists the
//!   branch, the chain and its notes as push refspecs (`git receipt init
//!   --push-refspecs` adds them once there is a key): the hook gates and lets
//!   git send them;
//! - and, apart, the two halves of a hooked push: `git receipt push`, then
//!   `git push --no-verify` of the receipted commit through the server hook.
//!
//! Rounds alternate the cases, so the machine's noise falls on each; the figure is
//! the median wall time and its ratio to plain. Prints a table; asserts nothing.
//!
//! Usage: cargo bench --bench push [-- ROUNDS]   (default 9)

#[path = "../tests/it/common/mod.rs"]
#[allow(unused_imports)]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::Env;
use common::gitolite::Gitolite;

const RIGHTS: &str = "    RW+ refs/heads/           = alice
    RW  refs/receipts/        = alice
    RW+ refs/notes/receipts/  = alice
    RW+ refs/receipt-logs/    = alice
";

fn timed(env: &Env, dir: &Path, args: &[&str]) -> Duration {
    let start = Instant::now();
    let r = env.git(dir, args);
    let took = start.elapsed();
    assert_eq!(r.code, 0, "git {args:?}: {r}");
    took
}

fn commit(env: &Env, dir: &Path, path: &str, text: &str) {
    std::fs::write(dir.join(path), text).unwrap();
    env.git_ok(dir, &["commit", "-qam", "change"]);
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(9);
    let admin = Env::new();
    let Some(server) = Gitolite::start(&admin, true) else {
        return;
    };
    let alice = Env::new();
    let a = alice.fixture_repo("make_basic_repo.sh", "alice");
    let key = alice.receipt_ok(&a, &["key", "generate"]).stdout;
    alice.git_ok(
        &a,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "signer.alice.key",
            key.trim(),
        ],
    );
    alice.git_ok(&a, &["commit", "-qam", "trust alice"]);
    let shim = admin
        .receipt_ok(&a, &["install-hooks", "--server", "--print"])
        .stdout;
    server.put_repo_specific_hook("git-receipt", &shim);
    server.configure(
        &admin,
        &format!(
            "repo plain\n{RIGHTS}\nrepo app\n{RIGHTS}    option hook.pre-receive = git-receipt\n    config receipt.protectedBranch = main\n"
        ),
    );
    alice.git_ok(
        &a,
        &["config", "core.sshCommand", &server.ssh_command("alice")],
    );
    alice.git_ok(&a, &["remote", "add", "origin", &server.url("app")]);
    alice.git_ok(&a, &["remote", "add", "plain", &server.url("plain")]);
    alice.git_ok(&a, &["push", "-q", "origin", "main"]);
    alice.git_ok(&a, &["push", "-q", "plain", "main"]);
    alice.receipt_ok(&a, &["init", "--push-refspecs"]);

    let (mut plain, mut send, mut none) = (Vec::new(), Vec::new(), Vec::new());
    let (mut receipts_only, mut gated_branch) = (Vec::new(), Vec::new());
    let (mut with_branch, mut by_refspec) = (Vec::new(), Vec::new());
    // ssh sessions per case in the last round, from gitolite's log
    let mut count = [0usize; 7];
    for i in 0..=rounds {
        commit(&alice, &a, "src/lib.rs", &format!("pub fn f{i}() {{}}\n"));
        let k = server.sessions().len();
        let p = timed(&alice, &a, &["push", "-q", "--no-verify", "plain", "main"]);
        count[0] = server.sessions().len() - k;
        alice.receipt_ok(&a, &["run", "test"]);
        let k = server.sessions().len();
        let s = timed(&alice, &a, &["push", "-q", "origin", "main"]);
        count[1] = server.sessions().len() - k;
        commit(&alice, &a, "README", &format!("round {i}\n"));
        alice.git_ok(&a, &["push", "-q", "--no-verify", "plain", "main"]);
        let k = server.sessions().len();
        let n = timed(&alice, &a, &["push", "-q"]);
        count[2] = server.sessions().len() - k;
        // the two halves of a hooked push with a receipt, apart
        commit(&alice, &a, "src/lib.rs", &format!("pub fn g{i}() {{}}\n"));
        alice.receipt_ok(&a, &["run", "test"]);
        let k = server.sessions().len();
        let start = Instant::now();
        alice.receipt_ok(&a, &["push"]);
        let r = start.elapsed();
        count[5] = server.sessions().len() - k;
        let k = server.sessions().len();
        let g = timed(&alice, &a, &["push", "-q", "--no-verify", "origin", "main"]);
        count[6] = server.sessions().len() - k;
        // one atomic push of receipts and branch
        commit(&alice, &a, "src/lib.rs", &format!("pub fn h{i}() {{}}\n"));
        alice.receipt_ok(&a, &["run", "test"]);
        let k = server.sessions().len();
        let start = Instant::now();
        alice.receipt_ok(&a, &["push", "--with-branch"]);
        let wb = start.elapsed();
        count[3] = server.sessions().len() - k;
        // the default route: a bare `git push`, whose push refspecs (`git receipt
        // init` added them, the key existing) carry branch, chain and notes
        commit(&alice, &a, "src/lib.rs", &format!("pub fn k{i}() {{}}\n"));
        alice.receipt_ok(&a, &["run", "test"]);
        let k = server.sessions().len();
        let rs = timed(&alice, &a, &["push", "-q"]);
        count[4] = server.sessions().len() - k;
        if i > 0 {
            by_refspec.push(rs);
            with_branch.push(wb);
            // the first round warms caches and creates the chain on the server
            plain.push(p);
            send.push(s);
            none.push(n);
            receipts_only.push(r);
            gated_branch.push(g);
        }
    }
    let base = median(plain.clone());
    println!("push over ssh to gitolite3 on 127.0.0.1, median of {rounds} rounds");
    println!("| case | median | ratio to plain | ssh sessions |");
    println!("|---|---|---|---|");
    for (i, (name, v)) in [
        ("plain `git push --no-verify`", plain),
        (
            "hooked `git push origin main` (named), a receipt to send",
            send,
        ),
        ("hooked bare `git push`, nothing to send", none),
        (
            "`git receipt push --with-branch`, a receipt to send",
            with_branch,
        ),
        (
            "hooked bare `git push` (`init --push-refspecs`), a receipt to send",
            by_refspec,
        ),
        (
            "  apart: `git receipt push` (the receipts alone)",
            receipts_only,
        ),
        (
            "  apart: `git push --no-verify` gated by the server hook",
            gated_branch,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let m = median(v);
        println!(
            "| {name} | {:.0} ms | {:.2}x | {} |",
            m.as_secs_f64() * 1000.0,
            m.as_secs_f64() / base.as_secs_f64(),
            count[i]
        );
    }
}
