//! Notes stay home in CI (issue 30): a push made in CI (`CI` set, as GitHub
//! Actions, GitLab CI and the rest set it) sends the signed chain without its
//! notes, the display whose packed bytes outweigh the chain's. The server then
//! holds chains only for CI's receipts; a reviewer's `git receipt fetch` derives
//! the notes from the chain it verified, and stock git shows them there.
//! `receipt.pushNotes` decides either way when set. Real `git daemon` on
//! 127.0.0.1; stock git is the oracle for what the server holds.

use std::path::Path;

use crate::common::{Daemon, Env, clone};

/// The refs of the bare repository at `bare` under `prefix`.
fn refs_under(env: &Env, bare: &Path, prefix: &str) -> Vec<String> {
    env.git_ok(bare, &["for-each-ref", "--format=%(refname)", prefix])
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_push_in_ci_sends_the_chain_without_notes_and_a_fetch_derives_them() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let seed = env.fixture_repo("make_basic_repo.sh", "seed");
    let (bare, url) = daemon.bare(&env, "served.git");
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);

    let ci = clone(&env, &url, "ci");
    env.receipt_ok(&ci, &["run", "test"]);
    let writer = env.only_writer(&ci);
    let chain = format!("refs/receipts/{writer}");
    let notes = format!("refs/notes/receipts/{writer}");
    let r = env.receipt_with(&ci, &["push"], &[("CI", "true")]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(refs_under(&env, &bare, "refs/receipts/"), [chain.as_str()]);
    assert!(
        refs_under(&env, &bare, "refs/notes/").is_empty(),
        "CI pushed notes"
    );
    // CI keeps its own display
    assert!(
        env.git(&ci, &["notes", "--ref", &notes, "show", "HEAD"])
            .code
            == 0
    );

    // a reviewer's fetch derives the notes from the chain it verified
    let reviewer = Env::new();
    let dir = clone(&reviewer, &url, "reviewer");
    let r = reviewer.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    let id = env.log_json(&ci)[0]["id"].as_str().unwrap().to_owned();
    let shown = reviewer.git_ok(&dir, &["notes", "--ref", &notes, "show", "HEAD"]);
    assert!(shown.contains(&id), "{shown}");

    // a second receipt in CI: still the chain alone, on the lease of the first
    env.receipt_ok(&ci, &["run", "docs"]);
    let r = env.receipt_with(&ci, &["push"], &[("CI", "1")]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        env.git_ok(&bare, &["rev-parse", &chain]),
        env.git_ok(&ci, &["rev-parse", &chain])
    );
    assert!(refs_under(&env, &bare, "refs/notes/").is_empty());

    // receipt.pushNotes = true sends them, in CI too
    env.git_ok(&ci, &["config", "receipt.pushNotes", "true"]);
    let r = env.receipt_with(&ci, &["push"], &[("CI", "true")]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        env.git_ok(&bare, &["rev-parse", &notes]),
        env.git_ok(&ci, &["rev-parse", &notes])
    );
}

#[test]
fn outside_ci_notes_are_pushed_unless_push_notes_is_false() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let seed = env.fixture_repo("make_basic_repo.sh", "seed");
    let (bare, url) = daemon.bare(&env, "served.git");
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    let dev = clone(&env, &url, "dev");
    env.receipt_ok(&dev, &["run", "test"]);
    let writer = env.only_writer(&dev);
    let notes = format!("refs/notes/receipts/{writer}");
    // `CI=false` is not CI
    let r = env.receipt_with(&dev, &["push"], &[("CI", "false")]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(refs_under(&env, &bare, "refs/notes/"), [notes.as_str()]);
    let pushed = env.git_ok(&bare, &["rev-parse", &notes]);

    // switched off: the next receipt's chain goes, the server's notes stay
    env.git_ok(&dev, &["config", "receipt.pushNotes", "false"]);
    env.receipt_ok(&dev, &["run", "docs"]);
    let r = env.receipt(&dev, &["push"]);
    assert_eq!(r.code, 0, "{r}");
    let chain = format!("refs/receipts/{writer}");
    assert_eq!(
        env.git_ok(&bare, &["rev-parse", &chain]),
        env.git_ok(&dev, &["rev-parse", &chain])
    );
    assert_eq!(env.git_ok(&bare, &["rev-parse", &notes]), pushed);
    assert_ne!(env.git_ok(&dev, &["rev-parse", &notes]), pushed);
}
