//! A developer's and a reviewer's day (issue 11), driven through the real binary.
//!
//! An author who is a signer, a reviewer who is not, and CI with no key, around a
//! real `git daemon`: what each sees, and that CI means what it says.

mod common;

use std::path::PathBuf;

use common::{Daemon, Env};
use serde_json::Value;

fn clone(env: &Env, url: &str, rel: &str) -> PathBuf {
    let dir = env.path(rel);
    env.git_ok(env.tmp.path(), &["clone", "-q", url, dir.to_str().unwrap()]);
    dir
}

/// A served repository whose `main` declares the author as its only signer, with
/// the author's `test` receipt on its tip, pushed.
struct Served {
    _server: Env,
    _daemon: Daemon,
    url: String,
    author: Env,
    repo: PathBuf,
}

fn served() -> Served {
    let server = Env::new();
    let daemon = Daemon::start(&server);
    let (_, url) = daemon.bare(&server, "app.git");
    let author = Env::new();
    let repo = author.fixture_repo("make_basic_repo.sh", "author");
    author.receipt_ok(&repo, &["key", "generate"]);
    let key = author.receipt_ok(&repo, &["key", "show"]).stdout;
    author.git_ok(
        &repo,
        &["config", "-f", ".gitreceipts", "signer.ada.key", key.trim()],
    );
    author.git_ok(&repo, &["commit", "-q", "-am", "trust ada"]);
    author.git_ok(&repo, &["remote", "add", "origin", &url]);
    author.git_ok(&repo, &["push", "-q", "origin", "main"]);
    author.receipt_ok(&repo, &["run", "test"]);
    author.receipt_ok(&repo, &["push"]);
    Served {
        _server: server,
        _daemon: daemon,
        url,
        author,
        repo,
    }
}

fn json(r: &common::Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r}"))
}

fn ci_clone(url: &str, fetch: bool) -> (Env, PathBuf) {
    let ci = Env::new();
    let dir = clone(&ci, url, "ci");
    if fetch {
        ci.receipt_ok(&dir, &["fetch"]);
    }
    (ci, dir)
}

#[test]
fn one_outside_contributor_does_not_fail_ci_everywhere() {
    let s = served();
    // a reviewer who is no signer runs a check and pushes their receipt
    let reviewer = Env::new();
    let r = clone(&reviewer, &s.url, "reviewer");
    reviewer.receipt_ok(&r, &["key", "generate"]);
    reviewer.receipt_ok(&r, &["run", "docs"]);
    reviewer.receipt_ok(&r, &["push"]);

    let (ci, dir) = ci_clone(&s.url, true);
    let v = ci.receipt(&dir, &["verify", "--trust", "origin/main"]);
    assert_eq!(v.code, 0, "an untrusted chain is no finding: {v}");
    assert!(
        v.stderr
            .contains("notice: 1 receipt in 1 chain signed by keys outside the trust"),
        "a notice with a count: {v}"
    );
    assert!(v.stderr.contains("verify --strict"), "{v}");
    assert!(!v.stdout.contains("[untrusted]"), "{v}");
    let j = json(&ci.receipt(&dir, &["verify", "--json", "--trust", "origin/main"]));
    assert_eq!(j["findings"], serde_json::json!([]), "{j}");
    assert_eq!(j["untrusted"].as_array().unwrap().len(), 1, "{j}");

    let g = ci.receipt(&dir, &["gate", "--verify", "--trust", "origin/main"]);
    assert_eq!(g.code, 0, "{g}");
    assert!(g.stdout.contains("required check test present"), "{g}");
    assert!(g.stderr.contains("notice: 1 receipt in 1 chain"), "{g}");

    // --strict keeps the old behaviour
    let v = ci.receipt(&dir, &["verify", "--strict", "--trust", "origin/main"]);
    assert_eq!(v.code, 1, "{v}");
    assert!(v.stdout.contains("[untrusted] signed by"), "{v}");
    assert!(v.stderr.contains("1 finding"), "{v}");

    // a trusted writer's chain with a receipt by another key stays a finding: the
    // author's chain is trusted, so only a set-aside chain is the reviewer's
    let author_writer = s.author.only_writer(&s.repo);
    assert_ne!(j["untrusted"][0]["chain"], author_writer.as_str(), "{j}");
}

#[test]
fn ci_that_fetched_no_receipts_does_not_pass() {
    let s = served();
    let (ci, dir) = ci_clone(&s.url, false);
    let v = ci.receipt(&dir, &["verify", "--trust", "origin/main"]);
    assert_eq!(v.code, 1, "nothing was checked: {v}");
    assert!(
        v.stderr
            .contains("no receipt chains in this repository (nothing under refs/receipts/)"),
        "{v}"
    );
    assert!(v.stderr.contains("requires 1 check"), "{v}");
    assert!(v.stderr.contains("hint: run `git receipt fetch`"), "{v}");

    let g = ci.receipt(&dir, &["gate", "--verify", "--trust", "origin/main"]);
    assert_eq!(g.code, 1, "{g}");
    assert!(g.stdout.contains("git receipt fetch"), "the real fix: {g}");
    assert!(
        !g.stdout.contains("git receipt run test"),
        "not a rerun: {g}"
    );

    // once fetched, the same commands pass
    ci.receipt_ok(&dir, &["fetch"]);
    ci.receipt_ok(&dir, &["verify", "--trust", "origin/main"]);
    ci.receipt_ok(&dir, &["gate", "--verify", "--trust", "origin/main"]);
}
