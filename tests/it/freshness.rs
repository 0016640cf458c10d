//! Every freshness rule (present / failed / stale / missing, trust, shallow
//! clones, the walk bound, gate) against the real binary on scripted fixture
//! repositories, with stock git doing the history operations.
//!
//! `make_branchy_repo.sh` gives `A - B - M` on `main` (M touches docs only) and
//! `B - F` on `feature` (F touches src/lib.rs); `test` reads src, `docs` reads docs.

use std::path::{Path, PathBuf};

use crate::common::{self, Env, Run};
use serde_json::Value;

const FIXTURE: &str = "make_branchy_repo.sh";

fn setup() -> (Env, PathBuf) {
    let env = Env::new();
    let repo = env.fixture_repo(FIXTURE, "repo");
    (env, repo)
}

fn rev(env: &Env, repo: &Path, r: &str) -> String {
    env.git_ok(repo, &["rev-parse", &format!("{r}^{{commit}}")])
}

fn short(oid: &str) -> &str {
    &oid[..7]
}

/// Write (Some) or delete (None) files, stage everything, commit; the new HEAD.
fn commit(env: &Env, repo: &Path, files: &[(&str, Option<&str>)], msg: &str) -> String {
    for (path, content) in files {
        let p = repo.join(path);
        match content {
            Some(text) => {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, text).unwrap();
            }
            None => std::fs::remove_file(&p).unwrap(),
        }
    }
    env.git_ok(repo, &["add", "-A"]);
    env.git_ok(repo, &["commit", "-q", "-m", msg]);
    rev(env, repo, "HEAD")
}

/// Run a declared check, assert its exit code, return the new receipt's id.
fn run_check(env: &Env, repo: &Path, check: &str, envs: &[(&str, &str)], code: i32) -> String {
    let r = env.receipt_with(repo, &["run", check], envs);
    assert_eq!(r.code, code, "run {check}: {r}");
    let log = env.log_json(repo);
    let newest = log
        .iter()
        .find(|e| e["check"] == check)
        .unwrap_or_else(|| panic!("no receipt for {check} in {log:?}"));
    newest["id"].as_str().unwrap().to_owned()
}

/// Run a declared check that passes; the receipt id.
fn pass(env: &Env, repo: &Path, check: &str) -> String {
    run_check(env, repo, check, &[], 0)
}

/// `status --json` of one check at `rev`.
fn state(env: &Env, repo: &Path, rev: &str, check: &str) -> Value {
    env.status_of(repo, Some(rev), check)
}

/// `gate --json ARGS`: the run and its parsed output (when it printed JSON).
fn gate(env: &Env, repo: &Path, args: &[&str]) -> (Run, Option<Value>) {
    let mut all = vec!["gate", "--json"];
    all.extend_from_slice(args);
    let r = env.receipt(repo, &all);
    let v = serde_json::from_str(&r.stdout).ok();
    (r, v)
}

fn reason(s: &Value) -> &str {
    s["reason"].as_str().unwrap()
}

fn changed(s: &Value) -> Vec<&str> {
    s["changed_paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect()
}

/// The id of the inputs tree of a check with `path = src` at `rev`, built with
/// stock git (`git mktree`), independently of git-receipt.
fn src_inputs_tree(env: &Env, repo: &Path, rev: &str) -> String {
    let src = env.git_ok(repo, &["rev-parse", &format!("{rev}:src")]);
    let mut cmd = std::process::Command::new("git");
    env.seal(&mut cmd);
    cmd.current_dir(repo)
        .args(["mktree"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("040000 tree {src}\tsrc\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn public_key(env: &Env, repo: &Path) -> String {
    env.receipt_ok(repo, &["key", "show"])
        .stdout
        .trim()
        .to_owned()
}

// ---------------------------------------------------------------- rule 1: by inputs

#[test]
fn pass_on_a_commit_is_present_on_that_commit() {
    let (env, repo) = setup();
    let head = rev(&env, &repo, "HEAD");
    let id = pass(&env, &repo, "test");
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert_eq!(
        reason(&s),
        format!(
            "present: passed on {} (tested on this commit)",
            short(&head)
        )
    );
    assert_eq!(s["decided_by"]["distance"], 0);
    assert_eq!(s["decided_by"]["commit"], head.as_str());
    let (g, v) = gate(&env, &repo, &[]);
    assert_eq!(g.code, 0, "{g}");
    assert_eq!(v.unwrap()[0]["ok"], true);
    let text = env.receipt(&repo, &["gate"]);
    assert_eq!(text.code, 0, "{text}");
    assert_eq!(text.stdout, "HEAD: required check test present\n");
}

#[test]
fn fail_on_a_commit_is_failed_with_exit_code_and_time() {
    let (env, repo) = setup();
    let head = rev(&env, &repo, "HEAD");
    let id = run_check(&env, &repo, "test", &[("TEST_EXIT", "3")], 3);
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "failed", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    let started = s["decided_by"]["started_at"].as_str().unwrap();
    assert_eq!(
        reason(&s),
        format!("failed: exit 3 at {started} on {}", short(&head))
    );
    let (g, v) = gate(&env, &repo, &[]);
    assert_eq!(g.code, 1, "{g}");
    assert_eq!(v.unwrap()[0]["checks"][0]["state"], "failed");
}

#[test]
fn fail_then_pass_on_the_same_tree_is_present_and_show_lists_both() {
    let (env, repo) = setup();
    let failed = run_check(&env, &repo, "test", &[("TEST_EXIT", "1")], 1);
    assert_eq!(state(&env, &repo, "HEAD", "test")["state"], "failed");
    let passed = pass(&env, &repo, "test");
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "the newest receipt decides: {s}");
    assert_eq!(s["receipt"], passed.as_str());
    let show = env.receipt_ok(&repo, &["show", "--json"]);
    let v: Value = serde_json::from_str(&show.stdout).unwrap();
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&failed.as_str()) && ids.contains(&passed.as_str()));
    let text = env.receipt_ok(&repo, &["show"]).stdout;
    assert!(text.contains("test failed, exit 1"), "{text}");
    assert!(text.contains("test passed, exit 0"), "{text}");
}

#[test]
fn amend_of_the_message_only_is_present_by_inputs_tree() {
    let (env, repo) = setup();
    let tested = rev(&env, &repo, "HEAD");
    let id = pass(&env, &repo, "test");
    env.git_ok(
        &repo,
        &["commit", "-q", "--amend", "-m", "main moves: reworded"],
    );
    let amended = rev(&env, &repo, "HEAD");
    assert_ne!(amended, tested);
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert_eq!(s["decided_by"]["distance"], Value::Null, "not an ancestor");
    assert_eq!(
        reason(&s),
        format!(
            "present: inputs identical to {} (tested on a commit that is not an ancestor)",
            short(&tested)
        )
    );
}

#[test]
fn fetched_receipt_for_a_commit_this_repository_lacks_counts_by_inputs() {
    let (env, origin) = setup();
    let url = format!("file://{}", origin.display());
    env.git_ok(env.tmp.path(), &["clone", "-q", &url, "clone"]);
    let clone = env.path("clone");
    // upstream rewords main and tests the rewritten commit; the clone never gets it
    env.git_ok(
        &origin,
        &["commit", "-q", "--amend", "-m", "reworded upstream"],
    );
    let rewritten = rev(&env, &origin, "HEAD");
    let id = pass(&env, &origin, "test");
    env.git_ok(
        &clone,
        &[
            "fetch",
            "-q",
            "origin",
            "refs/receipts/*:refs/receipts/*",
            "refs/notes/receipts/*:refs/notes/receipts/*",
        ],
    );
    assert_ne!(env.git(&clone, &["cat-file", "-e", &rewritten]).code, 0);
    let s = state(&env, &clone, "HEAD", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert_eq!(
        reason(&s),
        format!(
            "present: inputs identical to {} (tested on a commit this repository does not have)",
            short(&rewritten)
        )
    );
}

#[test]
fn rebase_onto_moved_main_keeping_inputs_is_present() {
    let (env, repo) = setup();
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    let tested = rev(&env, &repo, "HEAD");
    let id = pass(&env, &repo, "test");
    env.git_ok(&repo, &["rebase", "-q", "main"]);
    let rebased = rev(&env, &repo, "HEAD");
    assert_ne!(rebased, tested);
    assert_eq!(rev(&env, &repo, "HEAD~1"), rev(&env, &repo, "main"));
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert!(
        reason(&s).contains(&format!("inputs identical to {}", short(&tested))),
        "{s}"
    );
    // docs, whose inputs the rebase did change, is not carried along
    assert_ne!(state(&env, &repo, "HEAD", "docs")["state"], "present");
}

#[test]
fn cherry_pick_onto_another_branch_is_present() {
    let (env, repo) = setup();
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    let tested = rev(&env, &repo, "HEAD");
    let id = pass(&env, &repo, "test");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    env.git_ok(&repo, &["cherry-pick", tested.as_str()]);
    let picked = rev(&env, &repo, "HEAD");
    assert_ne!(picked, tested);
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert_eq!(s["decided_by"]["commit"], tested.as_str());
}

#[test]
fn squash_merge_keeping_inputs_is_present() {
    let (env, repo) = setup();
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    let id = pass(&env, &repo, "test");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    let before = state(&env, &repo, "HEAD", "test");
    assert_eq!(before["state"], "missing", "{before}");
    env.git_ok(&repo, &["merge", "-q", "--squash", "feature"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "squashed feature"]);
    assert_eq!(
        env.git_ok(&repo, &["rev-list", "--parents", "-n1", "HEAD"])
            .split(' ')
            .count(),
        2,
        "a squash is a single-parent commit"
    );
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
}

// --------------------------------------------------- rule 2: the nearest ancestor

#[test]
fn commit_outside_the_inputs_stays_present() {
    let (env, repo) = setup();
    let tested = rev(&env, &repo, "HEAD");
    let id = pass(&env, &repo, "test");
    commit(
        &env,
        &repo,
        &[("README", Some("changed\n")), ("docs/new.md", Some("x\n"))],
        "no src",
    );
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert_eq!(
        reason(&s),
        format!(
            "present: inputs identical to {} (tested 1 commit back)",
            short(&tested)
        )
    );
    assert_eq!(s["decided_by"]["distance"], 1);
}

#[test]
fn commit_touching_the_inputs_is_stale_with_exact_changed_paths() {
    let (env, repo) = setup();
    let tested = rev(&env, &repo, "HEAD");
    let id = pass(&env, &repo, "test");
    commit(
        &env,
        &repo,
        &[
            ("src/lib.rs", Some("pub fn lib() { 2 }\n")),
            ("src/main.rs", None),
            ("src/util/new.rs", Some("// new\n")),
            ("README", Some("not an input\n")),
        ],
        "touch src",
    );
    commit(
        &env,
        &repo,
        &[("docs/index.md", Some("# later\n"))],
        "docs only",
    );
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "stale", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert_eq!(
        changed(&s),
        ["src/lib.rs", "src/main.rs", "src/util/new.rs"],
        "README is not an input"
    );
    assert_eq!(
        reason(&s),
        format!(
            "stale: src/lib.rs, src/main.rs, src/util/new.rs changed since {} (2 commits back)",
            short(&tested)
        )
    );
    assert_eq!(s["decided_by"]["distance"], 2);
    let (g, _) = gate(&env, &repo, &[]);
    assert_eq!(g.code, 1, "{g}");
}

#[test]
fn a_receipt_on_a_sibling_branch_is_not_an_ancestor_and_does_not_count() {
    let (env, repo) = setup();
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    pass(&env, &repo, "test");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    commit(
        &env,
        &repo,
        &[("src/main.rs", Some("fn main() { 1 }\n"))],
        "main src",
    );
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "missing", "{s}");
    assert_eq!(s["receipt"], Value::Null);
}

#[test]
fn merge_whose_inputs_equal_a_tested_side_is_present() {
    let (env, repo) = setup();
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    let tested = rev(&env, &repo, "HEAD");
    let id = pass(&env, &repo, "test");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    env.git_ok(
        &repo,
        &["merge", "-q", "--no-ff", "-m", "merge feature", "feature"],
    );
    assert_eq!(rev(&env, &repo, "HEAD^2"), tested);
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert_eq!(
        reason(&s),
        format!(
            "present: inputs identical to {} (tested 1 commit back)",
            short(&tested)
        )
    );
}

#[test]
fn merge_combining_changes_from_both_sides_is_stale() {
    let (env, repo) = setup();
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    pass(&env, &repo, "test");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    let main_side = commit(
        &env,
        &repo,
        &[("src/main.rs", Some("fn main() { 1 }\n"))],
        "main src",
    );
    let main_id = pass(&env, &repo, "test");
    env.git_ok(
        &repo,
        &["merge", "-q", "--no-ff", "-m", "merge feature", "feature"],
    );
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(
        s["state"], "stale",
        "both sides were tested, the merge was not: {s}"
    );
    // nearest ancestor, first parent first: the main side, where feature's change is new
    assert_eq!(s["receipt"], main_id.as_str());
    assert_eq!(changed(&s), ["src/lib.rs"]);
    assert_eq!(
        reason(&s),
        format!(
            "stale: src/lib.rs changed since {} (1 commit back)",
            short(&main_side)
        )
    );
}

// ---------------------------------------------------------- rule 3: the definition

#[test]
fn editing_the_run_of_a_check_makes_it_stale_definition_changed() {
    let (env, repo) = setup();
    let tested = rev(&env, &repo, "HEAD");
    let id = pass(&env, &repo, "test");
    let contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    let edited = contract.replace("echo tests-ran;", "echo tests-ran-v2;");
    assert_ne!(contract, edited);
    commit(
        &env,
        &repo,
        &[(".gitreceipts", Some(&edited))],
        "edit test's run",
    );
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "stale", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert!(
        reason(&s).starts_with(&format!(
            "stale: definition changed since {}",
            short(&tested)
        )),
        "{s}"
    );
    assert_eq!(changed(&s), Vec::<&str>::new());
    // a run under the new definition is present again
    pass(&env, &repo, "test");
    assert_eq!(state(&env, &repo, "HEAD", "test")["state"], "present");
}

// ------------------------------------------------------------------- dirty trees

#[test]
fn receipt_on_a_dirty_tree_is_present_once_exactly_those_changes_are_committed() {
    let (env, repo) = setup();
    let base = rev(&env, &repo, "HEAD");
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { dirty() }\n").unwrap();
    std::fs::write(repo.join("src/extra.rs"), "// untracked\n").unwrap();
    let id = pass(&env, &repo, "test");
    let log = env.log_json(&repo);
    assert_eq!(log[0]["dirty"], true);
    assert_eq!(log[0]["commit"], base.as_str());
    // HEAD as committed was not what was tested: stale against its own receipt
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "stale", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert_eq!(changed(&s), ["src/extra.rs", "src/lib.rs"]);
    assert_eq!(
        reason(&s),
        format!(
            "stale: src/extra.rs, src/lib.rs differ from what was tested on {} (this commit, with uncommitted changes)",
            short(&base)
        )
    );
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "commit what was tested"]);
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    // named after what was tested: the work tree on base, not base's inputs
    assert_eq!(
        reason(&s),
        format!(
            "present: uncommitted changes on {} were tested, identical to {}'s inputs (tested 1 commit back)",
            short(&base),
            short(&rev(&env, &repo, "HEAD"))
        )
    );
    assert_eq!(
        log[0]["inputs"],
        src_inputs_tree(&env, &repo, "HEAD").as_str()
    );
}

#[test]
fn receipt_on_a_dirty_tree_does_not_cover_a_commit_of_other_changes() {
    let (env, repo) = setup();
    let base = rev(&env, &repo, "HEAD");
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { dirty() }\n").unwrap();
    std::fs::write(repo.join("src/extra.rs"), "// tested, never committed\n").unwrap();
    pass(&env, &repo, "test");
    std::fs::remove_file(repo.join("src/extra.rs")).unwrap();
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { other() }\n").unwrap();
    env.git_ok(&repo, &["commit", "-q", "-am", "commit something else"]);
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "stale", "{s}");
    // against what was tested (the dirty inputs), not against the commit it sat on
    assert_eq!(changed(&s), ["src/extra.rs", "src/lib.rs"]);
    assert_eq!(
        reason(&s),
        format!(
            "stale: src/extra.rs, src/lib.rs differ from what was tested on {} (1 commit back, with uncommitted changes)",
            short(&base)
        )
    );
}

// ------------------------------------------------ where a note hangs is not trusted

#[test]
fn a_note_copied_onto_another_commit_does_not_make_it_present() {
    let (env, repo) = setup();
    let tested = rev(&env, &repo, "main");
    pass(&env, &repo, "test");
    let writer = env.only_writer(&repo);
    let notes = format!("--ref=receipts/{writer}");
    let other = rev(&env, &repo, "feature");
    let other_inputs = src_inputs_tree(&env, &repo, "feature");
    let tested_inputs = src_inputs_tree(&env, &repo, "main");
    assert_eq!(env.log_json(&repo)[0]["inputs"], tested_inputs.as_str());
    env.git_ok(&repo, &["notes", &notes, "copy", &tested, &other]);
    env.git_ok(&repo, &["notes", &notes, "copy", &tested, &other_inputs]);
    // the copies really are there, readable with stock git
    let copied = env.git_ok(&repo, &["notes", &notes, "show", &other_inputs]);
    assert!(copied.contains(" test passed"), "{copied}");
    let s = state(&env, &repo, "feature", "test");
    assert_eq!(s["state"], "missing", "{s}");
    assert_eq!(s["receipt"], Value::Null);
    let (g, _) = gate(&env, &repo, &["feature"]);
    assert_eq!(g.code, 1, "{g}");
    // and a commit that descends from the copy target is not covered either
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    commit(
        &env,
        &repo,
        &[("src/lib.rs", Some("pub fn lib() { 3 }\n"))],
        "on feature",
    );
    assert_eq!(state(&env, &repo, "HEAD", "test")["state"], "missing");
    // while the tested commit itself is still present
    assert_eq!(state(&env, &repo, "main", "test")["state"], "present");
}

// --------------------------------------------------------------------------- trust

#[test]
fn a_receipt_by_an_untrusted_key_is_ignored() {
    let (env, repo) = setup();
    let bob = Env::new();
    let id = pass(&bob, &repo, "test");
    // bob trusts his own key
    assert_eq!(state(&bob, &repo, "HEAD", "test")["receipt"], id.as_str());
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "missing", "{s}");
    assert_eq!(s["receipt"], Value::Null);
    assert!(s["untrusted_receipts"].as_u64().unwrap() >= 1, "{s}");
    let text = env.receipt_ok(&repo, &["status"]).stdout;
    assert!(
        text.contains("(1 receipt by untrusted keys ignored)"),
        "{text}"
    );
    let (g, _) = gate(&env, &repo, &[]);
    assert_eq!(g.code, 1, "{g}");
}

fn add_signer(env: &Env, repo: &Path, name: &str, key: &str) -> String {
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str(&format!("[signer \"{name}\"]\n\tkey = {key}\n"));
    commit(
        env,
        repo,
        &[(".gitreceipts", Some(&contract))],
        &format!("trust {name}"),
    )
}

#[test]
fn a_signer_added_on_main_is_trusted_for_branches_forked_after_it() {
    let (env, repo) = setup();
    let bob = Env::new();
    bob.receipt_ok(&repo, &["key", "generate"]);
    let bob_key = public_key(&bob, &repo);
    let signed = add_signer(&env, &repo, "bob", &bob_key);
    // a topic branch from main after the signer was added
    env.git_ok(&repo, &["checkout", "-q", "-b", "topic"]);
    commit(
        &env,
        &repo,
        &[("src/lib.rs", Some("pub fn lib() { topic() }\n"))],
        "topic",
    );
    let id = pass(&bob, &repo, "test");
    let r = env.receipt_ok(&repo, &["status", "--json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["trust"],
        format!(
            "signers of .gitreceipts at {} (the tip of refs/heads/main)",
            short(&signed)
        )
    );
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert_eq!(s["untrusted_receipts"], 0);
    // feature forked before the signer was added: bob's receipt does not count there
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    pass(&bob, &repo, "test");
    let s = state(&env, &repo, "feature", "test");
    assert_eq!(s["state"], "missing", "{s}");
    assert!(s["untrusted_receipts"].as_u64().unwrap() >= 1, "{s}");
}

#[test]
fn a_signer_added_on_a_branch_is_not_trusted_for_that_branch() {
    let (env, repo) = setup();
    let carol = Env::new();
    carol.receipt_ok(&repo, &["key", "generate"]);
    let carol_key = public_key(&carol, &repo);
    let fork = rev(&env, &repo, "main");
    env.git_ok(&repo, &["checkout", "-q", "-b", "sneaky"]);
    let own = add_signer(&env, &repo, "carol", &carol_key);
    let id = pass(&carol, &repo, "test");
    let r = env.receipt_ok(&repo, &["status", "--json", "sneaky"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["trust"],
        format!(
            "signers of .gitreceipts at {} (the tip of refs/heads/main)",
            short(&fork)
        ),
        "the trust root is the branch it forked from, not the revision"
    );
    let s = state(&env, &repo, "sneaky", "test");
    assert_eq!(
        s["state"], "missing",
        "a branch cannot trust its own signer: {s}"
    );
    assert!(s["untrusted_receipts"].as_u64().unwrap() >= 1, "{s}");
    let (g, _) = gate(&env, &repo, &["sneaky"]);
    assert_eq!(g.code, 1, "{g}");
    // once main itself carries the signer, the same receipt counts
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    env.git_ok(&repo, &["merge", "-q", "--ff-only", "sneaky"]);
    assert_eq!(rev(&env, &repo, "main"), own);
    let s = state(&env, &repo, "sneaky", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
}

#[test]
fn a_key_in_receipt_trusted_key_is_trusted() {
    let (env, repo) = setup();
    let bob = Env::new();
    let id = pass(&bob, &repo, "test");
    let bob_key = public_key(&bob, &repo);
    assert_eq!(state(&env, &repo, "HEAD", "test")["state"], "missing");
    env.git_ok(&repo, &["config", "receipt.trustedKey", &bob_key]);
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    assert_eq!(s["untrusted_receipts"], 0);
}

// ----------------------------------------------------------------- shallow clones

/// `git clone --depth 1 file://origin clone`, then fetch the receipt refs.
fn shallow_clone(env: &Env, origin: &Path) -> PathBuf {
    let url = format!("file://{}", origin.display());
    env.git_ok(
        env.tmp.path(),
        &["clone", "-q", "--depth", "1", &url, "clone"],
    );
    let clone = env.path("clone");
    env.git_ok(
        &clone,
        &[
            "fetch",
            "-q",
            "origin",
            "refs/receipts/*:refs/receipts/*",
            "refs/notes/receipts/*:refs/notes/receipts/*",
        ],
    );
    assert_eq!(env.git_ok(&clone, &["rev-list", "--count", "HEAD"]), "1");
    clone
}

#[test]
fn shallow_clone_whose_head_is_untested_cannot_decide() {
    let (env, repo) = setup();
    let tested = rev(&env, &repo, "HEAD");
    pass(&env, &repo, "test");
    pass(&env, &repo, "docs");
    let head = commit(
        &env,
        &repo,
        &[("src/lib.rs", Some("pub fn lib() { 9 }\n"))],
        "untested",
    );
    assert_eq!(state(&env, &repo, "HEAD", "test")["state"], "stale");
    let clone = shallow_clone(&env, &repo);
    for args in [
        &["gate", "--json"][..],
        &["gate"],
        &["status", "--json"],
        &["status"],
    ] {
        let r = env.receipt(&clone, args);
        assert_eq!(r.code, 2, "{args:?}: {r}");
        assert!(
            r.stderr.contains(&format!("history is shallow at {head}")),
            "{args:?}: {r}"
        );
        assert!(
            r.stderr.contains(
                "hint: fetch more history with `git fetch --deepen=1000` (or `git fetch --unshallow`), and the receipts with `git receipt fetch`"
            ),
            "{r}"
        );
        assert!(
            !r.stdout.contains("present") && !r.stdout.contains("stale"),
            "never an answer from truncated history: {r}"
        );
    }
    // with the history fetched as the hint says, the answer is there
    env.git_ok(&clone, &["fetch", "-q", "--unshallow"]);
    env.receipt_ok(&clone, &["fetch"]);
    let s = state(&env, &clone, "HEAD", "test");
    assert_eq!(s["state"], "stale", "{s}");
    assert_eq!(
        reason(&s),
        format!(
            "stale: src/lib.rs changed since {} (1 commit back)",
            short(&tested)
        )
    );
}

#[test]
fn shallow_clone_whose_head_inputs_were_tested_is_present() {
    let (env, repo) = setup();
    let tested = rev(&env, &repo, "HEAD");
    let id = pass(&env, &repo, "test");
    // HEAD moves on without touching src; docs (not required) has no receipt at all.
    // Two commits: a depth-1 clone still knows HEAD's parent id, not the grandparent.
    commit(&env, &repo, &[("README", Some("newer\n"))], "readme only");
    commit(&env, &repo, &[("README", Some("newest\n"))], "readme again");
    let clone = shallow_clone(&env, &repo);
    let (g, v) = gate(&env, &clone, &[]);
    assert_eq!(g.code, 0, "rule 1 needs no history: {g}");
    let check = &v.unwrap()[0]["checks"][0];
    assert_eq!(check["name"], "test");
    assert_eq!(check["state"], "present");
    assert_eq!(check["receipt"], id.as_str());
    assert_eq!(
        reason(check),
        format!(
            "present: inputs identical to {} (tested on a commit this shallow clone does not have)",
            short(&tested)
        ),
        "in a shallow clone the tested commit may well be an ancestor"
    );
    let (g, _) = gate(&env, &clone, &["--require", "test"]);
    assert_eq!(g.code, 0, "{g}");
    // a check that needs history still cannot be decided, and says so
    let (g, _) = gate(&env, &clone, &["--require", "test,docs"]);
    assert_eq!(g.code, 2, "{g}");
    assert!(g.stderr.contains("history is shallow at"), "{g}");
}

// ------------------------------------------------------------------------ missing

#[test]
fn nothing_found_is_missing_within_1000_ancestors() {
    let (env, repo) = setup();
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "missing");
    assert_eq!(reason(&s), "missing: no receipt within 1,000 ancestors");
    assert_eq!(s["receipt"], Value::Null);
    assert_eq!(s["decided_by"], Value::Null);
    assert_eq!(s["untrusted_receipts"], 0);
}

#[test]
fn receipt_walk_limit_bounds_the_walk() {
    let (env, repo) = setup();
    let tested = rev(&env, &repo, "HEAD");
    pass(&env, &repo, "test");
    for i in 1..=3 {
        commit(
            &env,
            &repo,
            &[("src/lib.rs", Some(&format!("pub fn lib() {{ {i} }}\n")))],
            &format!("src {i}"),
        );
    }
    assert_eq!(state(&env, &repo, "HEAD", "test")["state"], "stale");
    env.git_ok(&repo, &["config", "receipt.walkLimit", "2"]);
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "missing", "the receipt is 3 commits back: {s}");
    assert_eq!(reason(&s), "missing: no receipt within 2 ancestors");
    env.git_ok(&repo, &["config", "receipt.walkLimit", "3"]);
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "stale", "{s}");
    assert_eq!(
        reason(&s),
        format!(
            "stale: src/lib.rs changed since {} (3 commits back)",
            short(&tested)
        )
    );
    env.git_ok(&repo, &["config", "receipt.walkLimit", "0"]);
    let r = env.receipt(&repo, &["status"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("receipt.walkLimit = 0"), "{r}");
}

#[test]
fn present_by_inputs_beyond_the_walk_limit_does_not_claim_a_non_ancestor() {
    let (env, repo) = setup();
    let tested = rev(&env, &repo, "HEAD");
    pass(&env, &repo, "test");
    for i in 1..=5 {
        commit(
            &env,
            &repo,
            &[("README", Some(&format!("{i}\n")))],
            &format!("readme {i}"),
        );
    }
    env.git_ok(&repo, &["config", "receipt.walkLimit", "2"]);
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(s["state"], "present", "rule 1 needs no walk: {s}");
    assert_eq!(
        reason(&s),
        format!(
            "present: inputs identical to {} (tested more than 2 commits back)",
            short(&tested)
        )
    );
    env.git_ok(&repo, &["config", "--unset", "receipt.walkLimit"]);
    let s = state(&env, &repo, "HEAD", "test");
    assert_eq!(
        reason(&s),
        format!(
            "present: inputs identical to {} (tested 5 commits back)",
            short(&tested)
        )
    );
}

// --------------------------------------------------------------------------- gate

#[test]
fn gate_require_names_the_checks_to_require() {
    let (env, repo) = setup();
    pass(&env, &repo, "test");
    let (g, v) = gate(&env, &repo, &[]);
    assert_eq!(g.code, 0, "docs is not required by default: {g}");
    let (g, v2) = gate(&env, &repo, &["--require", "test,docs"]);
    assert_eq!(g.code, 1, "{g}");
    let checks = &v2.unwrap()[0]["checks"];
    assert_eq!(checks[0]["name"], "test");
    assert_eq!(checks[0]["state"], "present");
    assert_eq!(checks[1]["name"], "docs");
    assert_eq!(checks[1]["state"], "missing");
    assert_eq!(v.unwrap()[0]["checks"].as_array().unwrap().len(), 1);
    let (g, _) = gate(&env, &repo, &["--require", "docs"]);
    assert_eq!(g.code, 1, "{g}");
    pass(&env, &repo, "docs");
    let (g, _) = gate(&env, &repo, &["--require", "test,docs"]);
    assert_eq!(g.code, 0, "{g}");
}

#[test]
fn gate_judges_every_named_revision() {
    let (env, repo) = setup();
    pass(&env, &repo, "test");
    let main = rev(&env, &repo, "main");
    let feature = rev(&env, &repo, "feature");
    let (g, v) = gate(&env, &repo, &["main", "feature"]);
    assert_eq!(g.code, 1, "feature is not tested: {g}");
    let v = v.unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert_eq!(v[0]["rev"], "main");
    assert_eq!(v[0]["commit"], main.as_str());
    assert_eq!(v[0]["ok"], true);
    assert_eq!(v[1]["rev"], "feature");
    assert_eq!(v[1]["commit"], feature.as_str());
    assert_eq!(v[1]["ok"], false);
    // the order does not matter
    let (g, _) = gate(&env, &repo, &["feature", "main"]);
    assert_eq!(g.code, 1, "{g}");
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    pass(&env, &repo, "test");
    let (g, _) = gate(&env, &repo, &["main", "feature"]);
    assert_eq!(g.code, 0, "{g}");
}

#[test]
fn gate_require_of_an_undeclared_check_cannot_decide() {
    let (env, repo) = setup();
    pass(&env, &repo, "test");
    let r = env.receipt(&repo, &["gate", "--require", "test,lint"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains("--require lint: no check \"lint\" is declared in .gitreceipts at HEAD"),
        "{r}"
    );
    assert!(
        r.stderr
            .contains("hint: declare it, or require one of: test, docs"),
        "{r}"
    );
    assert_eq!(r.stdout, "", "{r}");
}

#[test]
fn gate_failure_prints_each_check_with_its_fix() {
    let (env, repo) = setup();
    pass(&env, &repo, "test");
    commit(
        &env,
        &repo,
        &[("src/lib.rs", Some("pub fn lib() { 5 }\n"))],
        "src",
    );
    let head = rev(&env, &repo, "HEAD");
    let r = env.receipt(&repo, &["gate", "--require", "test,docs"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout.starts_with(&format!(
            "HEAD ({}): 2 of 2 required checks not present\n",
            short(&head)
        )),
        "{r}"
    );
    assert!(r.stdout.contains("fix: git receipt run test\n"), "{r}");
    assert!(r.stdout.contains("fix: git receipt run docs\n"), "{r}");
    // the state is printed once: `stale    src/lib.rs changed since`
    assert!(
        r.stdout.contains("stale    src/lib.rs changed since"),
        "{r}"
    );
}

// ------------------------------------------------------------------------- output

/// Run `git-receipt ARGS` in `dir` under a pseudo-terminal (util-linux `script`).
fn on_a_terminal(env: &Env, dir: &Path, args: &str, envs: &[(&str, &str)]) -> Run {
    let mut cmd = std::process::Command::new("script");
    env.seal(&mut cmd);
    cmd.current_dir(dir).envs(envs.iter().copied()).args([
        "-qec",
        &format!("{} {args}", common::bin().display()),
        "/dev/null",
    ]);
    let out = cmd.output().expect("run script(1)");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        raw_stdout: out.stdout,
    }
}

#[test]
fn status_without_a_terminal_or_with_no_color_has_no_escapes() {
    let (env, repo) = setup();
    pass(&env, &repo, "test");
    commit(
        &env,
        &repo,
        &[("docs/index.md", Some("# changed\n"))],
        "docs",
    );
    for envs in [&[][..], &[("NO_COLOR", "1")]] {
        let r = env.receipt_with(&repo, &["status"], envs);
        assert_eq!(r.code, 0, "{r}");
        assert!(r.stdout.contains("present"), "{r}");
        assert!(!r.raw_stdout.contains(&0x1b), "no ANSI escapes: {r}");
        let g = env.receipt_with(&repo, &["gate", "--require", "docs"], envs);
        assert_eq!(g.code, 1, "{g}");
        assert!(!g.raw_stdout.contains(&0x1b), "no ANSI escapes: {g}");
    }
    // on a terminal there is colour, unless NO_COLOR says otherwise
    let tty = on_a_terminal(&env, &repo, "status", &[]);
    assert_eq!(tty.code, 0, "{tty}");
    assert!(tty.stdout.contains("\x1b[32mpresent"), "{tty}");
    let tty = on_a_terminal(&env, &repo, "status", &[("NO_COLOR", "1")]);
    assert_eq!(tty.code, 0, "{tty}");
    assert!(tty.stdout.contains("present"), "{tty}");
    assert!(
        !tty.raw_stdout.contains(&0x1b),
        "NO_COLOR on a terminal: {tty}"
    );
}

// ------------------------------------------------------------------ issue 23

/// Issue 23: the index filters check names by a 32-bit FNV-1a hash, and
/// `check-579599` and `check-762382` collide; declared alike (the definition
/// digest leaves the name out), only the signed name tells their receipts
/// apart: a receipt for one never makes the other present, nor stale.
#[test]
fn a_receipt_for_a_colliding_check_name_leaves_the_other_missing() {
    let (env, repo) = setup();
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    for name in ["check-579599", "check-762382"] {
        contract.push_str(&format!(
            "[check \"{name}\"]\n\trun = \"true\"\n\tpath = src\n"
        ));
    }
    commit(&env, &repo, &[(".gitreceipts", Some(&contract))], "collide");
    let id = pass(&env, &repo, "check-579599");
    let s = state(&env, &repo, "HEAD", "check-579599");
    assert_eq!(s["state"], "present", "{s}");
    assert_eq!(s["receipt"], id.as_str());
    let s = state(&env, &repo, "HEAD", "check-762382");
    assert_eq!(s["state"], "missing", "{s}");
    assert_eq!(reason(&s), "missing: no receipt within 1,000 ancestors");
    assert_eq!(s["receipt"], Value::Null);
    // one commit on, the walk for an ancestor's receipt tells them apart too
    commit(
        &env,
        &repo,
        &[("src/lib.rs", Some("pub fn lib() { 23 }\n"))],
        "src",
    );
    assert_eq!(state(&env, &repo, "HEAD", "check-579599")["state"], "stale");
    let s = state(&env, &repo, "HEAD", "check-762382");
    assert_eq!(s["state"], "missing", "{s}");
}

// ------------------------------------------------------- docs/freshness.md examples

/// docs/freshness.md, whose examples are these fixture's commits (704648f is
/// main, 73d1bd6 feature).
fn freshness_doc() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/freshness.md")).unwrap()
}

/// The `test` row of `git receipt status [rev]` as text, with each (commit,
/// name) of `names` written as the docs name it.
fn test_row(env: &Env, repo: &Path, rev: Option<&str>, names: &[(&str, &str)]) -> String {
    let mut args = vec!["status"];
    args.extend(rev);
    let r = env.receipt(repo, &args);
    let mut row = r
        .stdout
        .lines()
        .find(|l| l.starts_with("test "))
        .unwrap_or_else(|| panic!("a test row: {r}"))
        .trim_end()
        .to_owned();
    for (commit, doc) in names {
        row = row.replace(&commit[..7], doc);
    }
    row
}

/// Note `line` in `misses` unless the doc shows it as it is printed.
fn doc_shows(doc: &str, misses: &mut Vec<String>, line: &str) {
    if !doc.lines().any(|l| l.trim_end() == line) {
        misses.push(line.to_owned());
    }
}

/// Issue 26 item 10: the examples in docs/freshness.md are what the commands
/// print, on the fixture they were written from.
#[test]
fn the_examples_in_docs_freshness_md_are_what_status_and_gate_print() {
    let doc = freshness_doc();
    let mut misses = Vec::new();
    let (env, repo) = setup();
    assert_eq!(short(&rev(&env, &repo, "main")), "704648f");
    assert_eq!(short(&rev(&env, &repo, "feature")), "73d1bd6");

    // step 1: pass, fail, pass on one tree
    pass(&env, &repo, "test");
    let present = test_row(&env, &repo, None, &[]);
    doc_shows(&doc, &mut misses, &present);
    let receipt_line = env.receipt_ok(&repo, &["status"]).stdout;
    let receipt_line = receipt_line.lines().nth(1).unwrap();
    let (printed, words) = (receipt_line.trim(), receipt_line.split_whitespace().count());
    if !(printed.ends_with(" on 704648f (run)")
        && doc.lines().any(|l| {
            let shown = l.trim();
            shown.starts_with("receipt sha256:")
                && shown.split_whitespace().count() == words
                && shown.ends_with(" on 704648f (run)")
        }))
    {
        misses.push(receipt_line.to_owned());
    }
    run_check(&env, &repo, "test", &[("TEST_EXIT", "3")], 3);
    let failed = test_row(&env, &repo, None, &[]);
    let (head, tail) = failed.split_once(" at ").unwrap();
    let on = tail.split_once(' ').unwrap().1;
    if !doc
        .lines()
        .any(|l| l.starts_with(&format!("{head} at ")) && l.ends_with(on))
    {
        misses.push(failed.clone());
    }
    pass(&env, &repo, "test");
    doc_shows(&doc, &mut misses, &test_row(&env, &repo, None, &[]));
    let g = env.receipt(&repo, &["gate"]);
    assert_eq!(g.code, 0, "{g}");
    doc_shows(&doc, &mut misses, g.stdout.trim_end());

    // amend: not an ancestor
    env.git_ok(&repo, &["commit", "-q", "--amend", "-m", "reworded"]);
    doc_shows(&doc, &mut misses, &test_row(&env, &repo, None, &[]));

    // a commit outside the inputs
    let (env, repo) = setup();
    pass(&env, &repo, "test");
    commit(&env, &repo, &[("README", Some("x\n"))], "readme");
    doc_shows(&doc, &mut misses, &test_row(&env, &repo, None, &[]));

    // a commit touching the paths, then one that does not
    let (env, repo) = setup();
    pass(&env, &repo, "test");
    commit(
        &env,
        &repo,
        &[
            ("src/lib.rs", Some("pub fn lib() { 2 }\n")),
            ("src/main.rs", None),
            ("src/util/new.rs", Some("pub fn new() {}\n")),
            ("README", Some("changed\n")),
        ],
        "src",
    );
    commit(&env, &repo, &[("docs/index.md", Some("# more\n"))], "docs");
    doc_shows(&doc, &mut misses, &test_row(&env, &repo, None, &[]));

    // the definition changed
    let (env, repo) = setup();
    pass(&env, &repo, "test");
    let contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    commit(
        &env,
        &repo,
        &[(
            ".gitreceipts",
            Some(&contract.replace("echo tests-ran", "echo tests-run")),
        )],
        "edit run",
    );
    doc_shows(&doc, &mut misses, &test_row(&env, &repo, None, &[]));

    // a dirty-tree receipt, then committing those changes
    let (env, repo) = setup();
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { 9 }\n").unwrap();
    std::fs::write(repo.join("src/extra.rs"), "pub fn extra() {}\n").unwrap();
    pass(&env, &repo, "test");
    doc_shows(&doc, &mut misses, &test_row(&env, &repo, None, &[]));
    doc_shows(&doc, &mut misses, &test_row(&env, &repo, Some("HEAD"), &[]));
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-qm", "what was tested"]);
    doc_shows(&doc, &mut misses, &test_row(&env, &repo, None, &[]));

    // ... or committing something else instead
    let (env, repo) = setup();
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { 9 }\n").unwrap();
    std::fs::write(repo.join("src/extra.rs"), "pub fn extra() {}\n").unwrap();
    pass(&env, &repo, "test");
    env.git_ok(&repo, &["stash", "-q", "-u"]);
    commit(&env, &repo, &[("README", Some("edited\n"))], "readme");
    let reason = reason(&state(&env, &repo, "HEAD", "test")).to_owned();
    if !doc.replace('\n', " ").contains(&format!("`{reason}`")) {
        misses.push(reason);
    }

    // a copied note does not count
    let (env, repo) = setup();
    pass(&env, &repo, "test");
    let notes = format!("--ref=receipts/{}", env.only_writer(&repo));
    env.git_ok(&repo, &["notes", &notes, "copy", "main", "feature"]);
    doc_shows(
        &doc,
        &mut misses,
        &test_row(&env, &repo, Some("feature"), &[]),
    );

    // the walk bound
    let (env, repo) = setup();
    pass(&env, &repo, "test");
    for i in 0..3 {
        let text = format!("pub fn lib() {{ {i} }}\n");
        commit(&env, &repo, &[("src/lib.rs", Some(&text))], "src");
    }
    doc_shows(&doc, &mut misses, &test_row(&env, &repo, None, &[]));
    env.git_ok(&repo, &["config", "receipt.walkLimit", "2"]);
    doc_shows(&doc, &mut misses, &test_row(&env, &repo, None, &[]));

    // gate's failure: each row with its fix
    let (env, repo) = setup();
    pass(&env, &repo, "test");
    let head = commit(
        &env,
        &repo,
        &[("src/lib.rs", Some("pub fn lib() { 1 }\n"))],
        "src",
    );
    let g = env.receipt(&repo, &["gate", "--require", "test,docs"]);
    assert_eq!(g.code, 1, "{g}");
    for line in g.stdout.lines() {
        let line = line.replace(&head[..7], "5759942");
        let printed = line.trim();
        if printed.starts_with("receipt sha256:") {
            let words = printed.split_whitespace().count();
            let shown = doc.lines().any(|l| {
                l.trim().starts_with("receipt sha256:")
                    && l.split_whitespace().count() == words
                    && l.trim_end().ends_with(&printed[printed.len() - 17..])
            });
            if !shown {
                misses.push(line.clone());
            }
        } else if !doc
            .lines()
            .any(|l| l.trim_end() == format!("  {line}").trim_end())
        {
            misses.push(line.clone());
        }
    }

    // merges: feature's inputs, then both sides changed
    let (env, repo) = setup();
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    pass(&env, &repo, "test");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    env.git_ok(&repo, &["merge", "-q", "--no-ff", "-m", "merge", "feature"]);
    doc_shows(&doc, &mut misses, &test_row(&env, &repo, None, &[]));
    let (env, repo) = setup();
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    pass(&env, &repo, "test");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    let main_side = commit(
        &env,
        &repo,
        &[("src/main.rs", Some("fn main() { 1 }\n"))],
        "main src",
    );
    pass(&env, &repo, "test");
    env.git_ok(&repo, &["merge", "-q", "--no-ff", "-m", "merge", "feature"]);
    doc_shows(
        &doc,
        &mut misses,
        &test_row(&env, &repo, None, &[(&main_side, "8384597")]),
    );
    assert!(
        misses.is_empty(),
        "docs/freshness.md shows these output lines as printed:\n{}",
        misses.join("\n")
    );
}
