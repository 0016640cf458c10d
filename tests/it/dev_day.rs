//! A developer's and a reviewer's day (issue 11), driven through the real binary.
//!
//! An author who is a signer, a reviewer who is not, and CI with no key, around a
//! real `git daemon`: what each sees, and that CI means what it says.

use std::path::PathBuf;

use crate::common::{self, Daemon, Env, clone};
use serde_json::Value;

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

/// The check writes to stdout and stderr at once; their order in the log is the
/// order the pipes were read.
fn sorted_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    lines
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

/// A repository where Ada (a declared signer) ran `test` on one commit and then
/// committed a change outside its inputs: `test` is present at HEAD by inputs.
fn tested_then_moved_on() -> (Env, PathBuf) {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["key", "generate"]);
    let key = env.receipt_ok(&repo, &["key", "show"]).stdout;
    env.git_ok(
        &repo,
        &["config", "-f", ".gitreceipts", "signer.ada.key", key.trim()],
    );
    env.git_ok(&repo, &["commit", "-q", "-am", "trust ada"]);
    env.receipt_ok(&repo, &["run", "test"]);
    std::fs::write(repo.join("README"), "read me again\n").unwrap();
    env.git_ok(&repo, &["commit", "-q", "-am", "readme"]);
    (env, repo)
}

#[test]
fn status_and_show_agree_on_a_receipt_found_by_inputs() {
    let (env, repo) = tested_then_moved_on();
    let st = env.receipt_ok(&repo, &["status"]);
    assert!(st.stdout.contains("inputs identical to"), "{st}");
    let r = env.receipt(&repo, &["show"]);
    assert_eq!(r.code, 0, "status says present, so show has a receipt: {r}");
    assert!(
        r.stdout.contains("  found    decides check test: present"),
        "says how it was found: {r}"
    );
    assert!(
        r.stdout.contains("  writer   ada #0"),
        "the signer's name: {r}"
    );
    let j = json(&env.receipt(&repo, &["show", "--json"]));
    assert_eq!(j.as_array().unwrap().len(), 1, "{j}");
    assert_eq!(j[0]["signer"], "ada", "{j}");
    assert!(
        j[0]["found"][0]
            .as_str()
            .unwrap()
            .starts_with("decides check test"),
        "{j}"
    );

    // on the commit it tested, it is found both ways
    let r = env.receipt_ok(&repo, &["show", "HEAD~1"]);
    assert!(r.stdout.contains("  found    its subject is "), "{r}");
    assert!(
        r.stdout
            .contains("  found    decides check test: present: passed on"),
        "{r}"
    );

    // by id, as printed everywhere
    let id = j[0]["id"].as_str().unwrap().to_owned();
    let r = env.receipt_ok(&repo, &["show", &id[..19]]);
    assert!(r.stdout.starts_with(&format!("receipt {id}\n")), "{r}");
    assert!(r.stdout.contains("  found    by its id"), "{r}");
    let r = env.receipt(&repo, &["show", "sha256:ffffffffffff"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("no receipt \"sha256:ffffffffffff\""),
        "{r}"
    );
}

#[test]
fn show_log_takes_a_revision_and_a_check() {
    let (env, repo) = tested_then_moved_on();
    let r = env.receipt_ok(&repo, &["show", "--log", "HEAD", "--check", "test"]);
    assert_eq!(sorted_lines(&r.stdout), ["tests-ran", "to-stderr"], "{r}");
    let r = env.receipt(&repo, &["show", "--log", "HEAD", "--check", "docs"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("no receipt decides check docs at HEAD"),
        "{r}"
    );
    assert!(r.stderr.contains("hint: `git receipt run docs`"), "{r}");
    let r = env.receipt(&repo, &["show", "--log", "HEAD", "--check", "nope"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("declared there: test, docs"), "{r}");
    // the id form keeps working, and show names it
    let shown = env.receipt_ok(&repo, &["show"]);
    let id = shown.stdout.lines().next().unwrap()["receipt ".len()..].to_owned();
    let r = env.receipt_ok(&repo, &["show", "--log", &id]);
    assert_eq!(sorted_lines(&r.stdout), ["tests-ran", "to-stderr"], "{r}");
    assert!(
        shown
            .stdout
            .contains(&format!("git receipt show --log {}", &id[..19])),
        "{shown}"
    );
}

#[test]
fn show_json_without_receipts_exits_1_like_text() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let text = env.receipt(&repo, &["show"]);
    let j = env.receipt(&repo, &["show", "--json"]);
    assert_eq!(text.code, 1, "{text}");
    assert!(
        text.stderr.contains("no receipts for HEAD (")
            && text.stderr.contains("none decides a check there"),
        "{text}"
    );
    assert_eq!(j.code, 1, "one rule for text and JSON: {j}");
    assert_eq!(json(&j), serde_json::json!([]), "{j}");
}

fn status_json(env: &Env, repo: &std::path::Path, args: &[&str]) -> Value {
    let mut argv = vec!["status", "--json"];
    argv.extend_from_slice(args);
    json(&env.receipt_ok(repo, &argv))
}

fn reason_of(v: &Value, check: &str) -> String {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == check)
        .unwrap_or_else(|| panic!("no {check} in {v}"))["reason"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn reasons_after_a_dirty_run_name_what_was_tested() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["key", "generate"]);
    let a = env.git_ok(&repo, &["rev-parse", "--short=7", "HEAD"]);
    // test: a change to its inputs; docs: an uncommitted edit of its definition
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { 1 }\n").unwrap();
    env.git_ok(
        &repo,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "check.docs.run",
            "test -d docs",
        ],
    );
    env.receipt_ok(&repo, &["run", "test"]);
    env.receipt_ok(&repo, &["run", "docs"]);
    // A, as committed, was not what was tested
    let at_a = status_json(&env, &repo, &["HEAD"]);
    assert_eq!(
        reason_of(&at_a, "test"),
        format!(
            "stale: src/lib.rs differ from what was tested on {a} (this commit, with uncommitted changes)"
        )
    );
    assert!(
        reason_of(&at_a, "docs").starts_with(&format!(
            "stale: run on {a} with an uncommitted definition of check \"docs\""
        )),
        "not `definition changed since`: {at_a}"
    );
    env.git_ok(&repo, &["commit", "-q", "-am", "B"]);
    let b = env.git_ok(&repo, &["rev-parse", "--short=7", "HEAD"]);
    let at_b = status_json(&env, &repo, &["HEAD"]);
    for check in ["test", "docs"] {
        assert_eq!(
            reason_of(&at_b, check),
            format!(
                "present: uncommitted changes on {a} were tested, identical to {b}'s inputs (tested 1 commit back)"
            ),
            "{at_b}"
        );
    }
}

#[test]
fn status_without_a_revision_reads_the_work_tree_like_run() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["key", "generate"]);
    // a new, uncommitted check: status shows it, as run would run it
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str("[check \"lint\"]\n\trun = true\n");
    std::fs::write(repo.join(".gitreceipts"), &contract).unwrap();
    let r = env.receipt_ok(&repo, &["status"]);
    assert!(r.stdout.contains("lint  missing"), "{r}");
    assert!(
        r.stderr.contains(
            "notice: .gitreceipts has uncommitted changes: these are the work tree's checks"
        ),
        "{r}"
    );
    let v = status_json(&env, &repo, &[]);
    assert_eq!(v["work_tree"]["contract_uncommitted"], true, "{v}");
    // HEAD is still what was committed
    let r = env.receipt_ok(&repo, &["status", "HEAD"]);
    assert!(!r.stdout.contains("lint"), "{r}");
    assert!(!r.stderr.contains("uncommitted"), "{r}");

    // a typo: status refuses it as run does, instead of `no checks declared`
    std::fs::write(repo.join(".gitreceipts"), "[check \"test\"\n\trun = true\n").unwrap();
    let r = env.receipt(&repo, &["status"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(".gitreceipts has uncommitted changes"),
        "{r}"
    );
    let run = env.receipt(&repo, &["run", "test"]);
    assert_eq!(run.code, 2, "run refuses it too: {run}");

    // a dirty run is present for the work tree it tested, not for HEAD
    env.git_ok(&repo, &["checkout", "--", ".gitreceipts"]);
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { 2 }\n").unwrap();
    env.receipt_ok(&repo, &["run", "test"]);
    let r = env.receipt_ok(&repo, &["status"]);
    assert!(r.stdout.contains("test  present"), "{r}");
    assert!(
        r.stderr
            .contains("the work tree has uncommitted changes on HEAD"),
        "{r}"
    );
    let r = env.receipt_ok(&repo, &["status", "HEAD"]);
    assert!(r.stdout.contains("test  stale"), "{r}");
}

#[test]
fn messages_say_what_happened_in_plain_words() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    // a revision that does not exist: what is wrong, not the resolver's internals
    let r = env.receipt(&repo, &["status", "HEAD~2"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains("cannot resolve revision \"HEAD~2\" to a commit: commit "),
        "{r}"
    );
    assert!(r.stderr.contains("out of range"), "{r}");
    assert!(
        !r.stderr.contains("delegate") && !r.stderr.contains("caused by"),
        "{r}"
    );
    let r = env.receipt(&repo, &["status", "nosuch"]);
    assert!(
        r.stderr.contains("reference \"nosuch\" could not be found"),
        "{r}"
    );
    assert!(!r.stderr.contains("NotFound"), "{r}");
    // -C to a directory that is not there
    let r = env.receipt(&repo, &["-C", "/nonexistent", "status"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains("cannot change to /nonexistent: no such directory"),
        "{r}"
    );
    assert!(!r.stderr.contains("not a git repository"), "{r}");
    // the root commit has no ancestors to search
    let r = env.receipt_ok(&repo, &["status", "HEAD~1"]);
    assert!(
        r.stdout
            .contains("test  missing  no receipt for this commit, which has no parent"),
        "the state once, and the root commit's own wording: {r}"
    );
    let r = env.receipt_ok(&repo, &["status"]);
    assert!(
        r.stdout
            .contains("test  missing  no receipt within 1,000 ancestors"),
        "{r}"
    );

    // a failing check: the fix is in the code, and the log is one command away
    env.receipt_ok(&repo, &["key", "generate"]);
    env.git_ok(
        &repo,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "check.test.run",
            "echo boom; exit 3",
        ],
    );
    env.git_ok(&repo, &["commit", "-q", "-am", "break test"]);
    let run = env.receipt(&repo, &["run", "test"]);
    assert_eq!(run.code, 3, "{run}");
    assert!(
        run.stderr
            .contains("its log: git receipt show --log sha256:"),
        "{run}"
    );
    let g = env.receipt(&repo, &["gate"]);
    assert_eq!(g.code, 1, "{g}");
    assert!(
        g.stdout
            .contains("  fix: fix what made test fail (its log: git receipt show --log sha256:"),
        "{g}"
    );
    assert!(g.stdout.contains("test  failed   exit 3"), "{g}");
    let v = env.receipt_ok(&repo, &["verify"]);
    assert!(
        v.stderr.contains("verified 1 receipt in 1 chain and "),
        "{v}"
    );
}

#[test]
fn a_keyless_ci_is_not_told_it_verified_against_its_key() {
    let s = served();
    let (ci, dir) = ci_clone(&s.url, true);
    let v = ci.receipt_ok(&dir, &["verify"]);
    assert!(!v.stderr.contains("your key"), "{v}");
    assert!(v.stderr.contains("against signers"), "{v}");
    // the author, who has a key, is told so
    let v = s.author.receipt_ok(&s.repo, &["verify"]);
    assert!(v.stderr.contains("against your key and "), "{v}");
}

/// The basic repository with a third check, `lint`, that fails.
fn three_checks() -> (Env, PathBuf) {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["key", "generate"]);
    env.git_ok(
        &repo,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "check.lint.run",
            "echo lint-ran; exit 4",
        ],
    );
    env.git_ok(&repo, &["commit", "-q", "-am", "lint"]);
    (env, repo)
}

fn chain_checks(env: &Env, repo: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = env
        .log_json(repo)
        .iter()
        .map(|r| r["check"].as_str().unwrap().to_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn run_several_checks_prints_one_summary() {
    let (env, repo) = three_checks();
    let r = env.receipt(&repo, &["run", "test", "docs"]);
    assert_eq!(r.code, 0, "all passed: {r}");
    assert!(
        r.stderr.contains("git-receipt: 2 of 2 checks passed\n"),
        "{r}"
    );
    let summary: Vec<&str> = r
        .stderr
        .lines()
        .skip_while(|l| !l.contains("of 2 checks passed"))
        .skip(1)
        .collect();
    assert_eq!(summary.len(), 2, "one line per check: {r}");
    assert!(summary[0].starts_with("  test  passed "), "{r}");
    assert!(summary[1].starts_with("  docs  passed "), "{r}");
    assert!(summary.iter().all(|l| l.contains("sha256:")), "{r}");
    assert_eq!(chain_checks(&env, &repo), ["docs", "test"]);

    // one failing among several: exit 1, and the summary says how to see its log
    let r = env.receipt(&repo, &["run", "lint", "test"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr.contains("git-receipt: 1 of 2 checks passed\n"),
        "{r}"
    );
    assert!(
        r.stderr.lines().any(|l| l.starts_with("  lint  failed ")
            && l.contains("exit 4; its log: git receipt show --log sha256:")),
        "{r}"
    );
    // a name that is not declared stops everything before anything runs
    let before = env.log_json(&repo).len();
    let r = env.receipt(&repo, &["run", "test", "nope"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("no check named \"nope\""), "{r}");
    assert_eq!(env.log_json(&repo).len(), before, "nothing ran: {r}");
    // one check keeps its own exit code
    assert_eq!(env.receipt(&repo, &["run", "lint"]).code, 4);
    // and an ad hoc command is one check
    let r = env.receipt(&repo, &["run", "a", "b", "--", "true"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("name exactly one"), "{r}");
}

#[test]
fn run_all_runs_every_declared_check_not_a_command_named_all() {
    let (env, repo) = three_checks();
    let r = env.receipt(&repo, &["run", "--all"]);
    assert_eq!(r.code, 1, "lint fails: {r}");
    assert!(
        !r.stderr.contains("-- --all"),
        "no clap advice to run `--all`: {r}"
    );
    assert!(
        r.stderr.contains("git-receipt: 2 of 3 checks passed\n"),
        "{r}"
    );
    assert_eq!(chain_checks(&env, &repo), ["docs", "lint", "test"]);
}

#[test]
fn run_stale_runs_what_is_not_present_and_then_nothing() {
    let (env, repo) = three_checks();
    env.git_ok(
        &repo,
        &["config", "-f", ".gitreceipts", "check.lint.run", "true"],
    );
    env.git_ok(&repo, &["commit", "-q", "-am", "lint passes"]);
    env.receipt_ok(&repo, &["run", "test"]);
    // docs and lint are missing; test is present
    let r = env.receipt_ok(&repo, &["run", "--stale"]);
    assert!(
        r.stderr.contains("git-receipt: 2 of 2 checks passed\n"),
        "{r}"
    );
    assert!(!r.stderr.contains("  test "), "test was present: {r}");
    assert_eq!(chain_checks(&env, &repo), ["docs", "lint", "test"]);
    // a change to src makes test stale again, and only test runs
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { 9 }\n").unwrap();
    env.git_ok(&repo, &["commit", "-q", "-am", "src"]);
    let r = env.receipt_ok(&repo, &["run", "--stale"]);
    assert!(r.stderr.contains("git-receipt: test passed"), "{r}");
    assert!(!r.stderr.contains("docs"), "{r}");
    let r = env.receipt_ok(&repo, &["run", "--stale"]);
    assert!(r.stderr.contains("every declared check is present"), "{r}");
    let st = env.receipt_ok(&repo, &["gate"]);
    assert!(st.stdout.contains("present"), "{st}");
}

#[test]
fn status_of_a_range_has_a_row_per_commit_and_a_column_per_check() {
    let env = Env::new();
    let repo = env.fixture_repo("make_branchy_repo.sh", "repo");
    env.receipt_ok(&repo, &["key", "generate"]);
    // docs checked on the fork point, test on the feature commit
    env.git_ok(&repo, &["checkout", "-q", "main~1"]);
    env.receipt_ok(&repo, &["run", "docs"]);
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    env.receipt_ok(&repo, &["run", "test"]);
    let f = env.git_ok(&repo, &["rev-parse", "--short=7", "HEAD"]);
    // one more feature commit, changing docs and declaring a new check
    std::fs::write(repo.join("docs/index.md"), "# feature docs\n").unwrap();
    env.git_ok(
        &repo,
        &["config", "-f", ".gitreceipts", "check.lint.run", "true"],
    );
    env.git_ok(&repo, &["commit", "-q", "-am", "feature: docs and lint"]);
    let g = env.git_ok(&repo, &["rev-parse", "--short=7", "HEAD"]);

    let r = env.receipt_ok(&repo, &["status", "main..feature"]);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines.len(),
        3,
        "a header and the range's two commits, not main's: {r}"
    );
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["test", "docs", "lint"],
        "{r}"
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        [
            g.as_str(),
            "present",
            "stale",
            "missing",
            "feature:",
            "docs",
            "and",
            "lint"
        ],
        "newest first; test by identical inputs, docs changed since the fork: {r}"
    );
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        [
            f.as_str(),
            "present",
            "present",
            "-",
            "feature:",
            "change",
            "lib"
        ],
        "lint was not declared yet: {r}"
    );

    let v = json(&env.receipt_ok(&repo, &["status", "--json", "main..feature"]));
    assert_eq!(v["range"], "main..feature");
    assert_eq!(v["checks"], serde_json::json!(["test", "docs", "lint"]));
    let commits = v["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 2, "{v}");
    assert!(
        commits[1]["commit"].as_str().unwrap().starts_with(&f),
        "{v}"
    );
    assert_eq!(commits[1]["checks"][1]["state"], "present", "{v}");
    assert_eq!(commits[0]["subject"], "feature: docs and lint", "{v}");

    let r = env.receipt(&repo, &["status", "main..nosuch"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("cannot list the commits of main..nosuch"),
        "{r}"
    );
}

fn doctor_items(env: &Env, repo: &std::path::Path) -> (i32, Vec<(String, bool)>) {
    let r = env.receipt(repo, &["doctor", "--json"]);
    let v = json(&r);
    let items = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["item"].as_str().unwrap().to_owned(),
                i["ok"].as_bool().unwrap(),
            )
        })
        .collect();
    (r.code, items)
}

#[test]
fn doctor_says_what_to_run_and_then_that_all_is_well() {
    let s = served();
    // a reviewer's fresh clone: nothing set up, a key that is no signer, chains to fetch
    let reviewer = Env::new();
    let r = clone(&reviewer, &s.url, "reviewer");
    reviewer.receipt_ok(&r, &["key", "generate"]);
    let text = reviewer.receipt(&r, &["doctor"]);
    assert_eq!(text.code, 1, "{text}");
    for expected in [
        "run: git receipt init --remote origin",
        "run: git receipt install-hooks",
        "is not a signer in .gitreceipts on origin/main",
        "run: git config --add notes.displayRef 'refs/notes/receipts/*'",
        "1 of 1 receipt chain on origin has receipts this clone lacks",
        "run: git receipt fetch",
    ] {
        assert!(text.stdout.contains(expected), "{expected}: {text}");
    }
    let (_, items) = doctor_items(&reviewer, &r);
    assert_eq!(
        items,
        [
            ("refspecs".to_owned(), false),
            ("hook".to_owned(), false),
            ("key".to_owned(), false),
            ("signing".to_owned(), true),
            ("notes".to_owned(), false),
            ("history".to_owned(), true),
            ("remote".to_owned(), false),
        ]
    );
    reviewer.receipt_ok(&r, &["init"]);
    reviewer.git_ok(&r, &["fetch", "-q", "origin"]);
    let (code, items) = doctor_items(&reviewer, &r);
    assert_eq!(code, 1, "still no signer: {items:?}");
    assert_eq!(
        items.iter().filter(|(_, ok)| !ok).collect::<Vec<_>>(),
        [&("key".to_owned(), false)],
        "{items:?}"
    );
    assert!(items.contains(&("own chain".to_owned(), true)), "{items:?}");

    // the author, a signer, once set up: every line ok
    s.author.receipt_ok(&s.repo, &["init"]);
    let text = s.author.receipt_ok(&s.repo, &["doctor"]);
    assert!(text.stdout.contains("is signer \"ada\" on main"), "{text}");
    assert!(
        text.stdout
            .contains("signs in-process with the private key"),
        "{text}"
    );
    assert!(!text.stdout.contains("FIX"), "{text}");
}

#[test]
fn show_takes_bare_hex_ids_and_a_branch_cannot_name_its_own_signer() {
    let (env, repo) = tested_then_moved_on();
    let j = json(&env.receipt(&repo, &["show", "--json"]));
    let id = j[0]["id"].as_str().unwrap();
    let hex = &id["sha256:".len().."sha256:".len() + 12];
    let r = env.receipt_ok(&repo, &["show", hex]);
    assert!(r.stdout.starts_with(&format!("receipt {id}\n")), "{r}");

    // Mallory's branch declares her key as signer "maintainer" and runs docs:
    // trust (and so names) come from main, where she is nobody
    let mallory = Env::new();
    mallory.receipt_ok(&repo, &["key", "generate"]);
    let key = mallory.receipt_ok(&repo, &["key", "show"]).stdout;
    env.git_ok(&repo, &["checkout", "-q", "-b", "feature"]);
    env.git_ok(
        &repo,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "signer.maintainer.key",
            key.trim(),
        ],
    );
    env.git_ok(&repo, &["commit", "-q", "-am", "trust me"]);
    mallory.receipt_ok(&repo, &["run", "docs"]);
    let r = env.receipt_ok(&repo, &["show"]);
    assert!(!r.stdout.contains("maintainer"), "{r}");
    assert!(
        r.stdout.contains("  writer   default-"),
        "Mallory's writer id: {r}"
    );
    assert!(r.stdout.contains("  writer   ada #0"), "{r}");
}
