//! Only verified chain entries cross a boundary (issue 22). Each attack of a
//! pusher with no trusted key, against a real `git daemon` on 127.0.0.1: with the
//! pre-receive hook (refused, with the rule it broke), and on a server without it
//! (readers ignore what breaks a rule, and the writer's own `git receipt push`
//! repairs its chain without losing anything it signed).
//!
//! Actors: CI, whose key is `[signer "ci"]` on the served `main`; Mallory, with a
//! key nobody trusts; Nina, a new colleague who has not pushed yet.

use std::path::{Path, PathBuf};

use crate::common::{Daemon, Env, Run, clone};

struct World {
    daemon: Daemon,
    ci: Env,
    mallory: Env,
    bare: PathBuf,
    url: String,
    ci_dir: PathBuf,
    ci_writer: String,
}

/// A served repository whose `main` trusts CI's key and requires `test`, CI's
/// clone, and CI's chain on the server: #0 passed, #1 passed, #2 FAILED, all for
/// the inputs `main` has. `hooked` installs the server hook first.
fn world(hooked: bool) -> World {
    let ci = Env::new();
    let mallory = Env::new();
    let daemon = Daemon::start(&ci);
    let seed = ci.fixture_repo("make_basic_repo.sh", "seed");
    let key = ci.receipt_ok(&seed, &["key", "generate"]).stdout;
    ci.git_ok(
        &seed,
        &["config", "-f", ".gitreceipts", "signer.ci.key", key.trim()],
    );
    ci.git_ok(&seed, &["commit", "-qam", "trust ci"]);
    let (bare, url) = daemon.bare(&ci, "served.git");
    ci.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    if hooked {
        ci.receipt_ok(&bare, &["install-hooks", "--server"]);
    }
    let ci_dir = clone(&ci, &url, "ci");
    ci.receipt_ok(&ci_dir, &["run", "test"]);
    ci.receipt_ok(&ci_dir, &["run", "test"]);
    let r = ci.receipt(&ci_dir, &["record", "test", "--exit-code", "1"]);
    assert_eq!(r.code, 0, "{r}");
    ci.receipt_ok(&ci_dir, &["push"]);
    let ci_writer = ci.only_writer(&ci_dir);
    World {
        daemon,
        ci,
        mallory,
        bare,
        url,
        ci_dir,
        ci_writer,
    }
}

/// Mallory's clone, with every chain of the server under refs/theirs/.
fn mallory_clone(w: &World) -> PathBuf {
    let dir = clone(&w.mallory, &w.url, "mallory");
    w.mallory.git_ok(
        &dir,
        &["fetch", "-q", "origin", "+refs/receipts/*:refs/theirs/*"],
    );
    dir
}

/// A README-only commit on `main` (the `test` inputs unchanged), so that CI's
/// receipts for `main`'s inputs decide it.
fn readme_commit(env: &Env, dir: &Path) -> String {
    std::fs::write(dir.join("README"), "read me, changed\n").unwrap();
    env.git_ok(dir, &["commit", "-qam", "readme"]);
    env.git_ok(dir, &["rev-parse", "HEAD"])
}

fn raw_push(env: &Env, dir: &Path, refspecs: &[&str]) -> Run {
    let mut args = vec!["push", "--no-verify", "origin"];
    args.extend_from_slice(refspecs);
    env.git(dir, &args)
}

fn server_ref(w: &World, name: &str) -> Option<String> {
    let r = w.ci.git(&w.bare, &["rev-parse", "--verify", "-q", name]);
    (r.code == 0).then(|| r.stdout.trim().to_owned())
}

/// CI's chain commits, oldest first.
fn ci_chain(w: &World) -> Vec<String> {
    let chain = format!("refs/receipts/{}", w.ci_writer);
    let mut v: Vec<String> =
        w.ci.git_ok(&w.ci_dir, &["rev-list", "--first-parent", &chain])
            .lines()
            .map(str::to_owned)
            .collect();
    v.reverse();
    v
}

/// The tree of `commit`.
fn tree_of(env: &Env, dir: &Path, commit: &str) -> String {
    env.git_ok(dir, &["rev-parse", &format!("{commit}^{{tree}}")])
}

/// Attack 1's commit M: receipt #1 (passed) again, with parents [#0, the real
/// tip #2 (failed)]: a fast-forward whose first-parent walk never sees #2.
fn hiding_merge(env: &Env, dir: &Path, chain: &[String]) -> String {
    let tree_of_1 = tree_of(env, dir, &chain[1]);
    env.git_ok(
        dir,
        &[
            "commit-tree",
            &tree_of_1,
            "-p",
            &chain[0],
            "-p",
            &chain[2],
            "-m",
            "merge",
        ],
    )
}

/// Attack 4's ref names: 20 writer ids of CI's key under other chain names.
fn other_names(w: &World) -> Vec<String> {
    let key_part = &w.ci_writer[w.ci_writer.len() - 32..];
    (0..20)
        .map(|i| format!("refs/receipts/x{i}-{key_part}"))
        .collect()
}

/// A commit holding a `receipt.json` that is not JSON, on `parent`.
fn junk_commit(env: &Env, dir: &Path, parent: Option<&str>) -> String {
    let blob = env.git_input(dir, &["hash-object", "-w", "--stdin"], b"not json\n");
    let tree = env.git_input(
        dir,
        &["mktree"],
        format!("100644 blob {blob}\treceipt.json\n").as_bytes(),
    );
    let mut args = vec!["commit-tree", tree.as_str(), "-m", "junk"];
    if let Some(p) = parent {
        args.extend(["-p", p]);
    }
    env.git_ok(dir, &args)
}

#[test]
fn a_two_parent_chain_commit_that_hides_a_failed_receipt_is_refused_by_the_hook() {
    let w = world(true);
    let chain = ci_chain(&w);
    let dir = mallory_clone(&w);
    let change = readme_commit(&w.mallory, &dir);
    let m = hiding_merge(&w.mallory, &dir, &chain);
    let ci_ref = format!("refs/receipts/{}", w.ci_writer);
    let r = raw_push(&w.mallory, &dir, &["main", &format!("{m}:{ci_ref}")]);
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("has 2 parents; a chain is linear: an entry has exactly one parent"),
        "names the rule: {r}"
    );
    assert!(r.stderr.contains(&ci_ref), "names the ref: {r}");
    assert_eq!(server_ref(&w, &ci_ref), Some(chain[2].clone()));
    assert_ne!(server_ref(&w, "refs/heads/main"), Some(change));
}

#[test]
fn junk_appended_to_another_writers_chain_is_refused_by_the_hook() {
    let w = world(true);
    let chain = ci_chain(&w);
    let dir = mallory_clone(&w);
    let junk = junk_commit(&w.mallory, &dir, Some(&chain[2]));
    let ci_ref = format!("refs/receipts/{}", w.ci_writer);
    let r = raw_push(&w.mallory, &dir, &[&format!("{junk}:{ci_ref}")]);
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("breaks the receipt rule"), "{r}");
    assert!(r.stderr.contains("receipt.json is invalid"), "{r}");
    assert_eq!(server_ref(&w, &ci_ref), Some(chain[2].clone()));

    // a real receipt of CI's copied on top (a valid signature, a broken link)
    let tree_of_0 = tree_of(&w.mallory, &dir, &chain[0]);
    let copy = w.mallory.git_ok(
        &dir,
        &["commit-tree", &tree_of_0, "-p", &chain[2], "-m", "copy"],
    );
    let r = raw_push(&w.mallory, &dir, &[&format!("{copy}:{ci_ref}")]);
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("the link rule"), "{r}");

    // a receipt Mallory signed, under CI's name
    w.mallory.receipt_ok(&dir, &["run", "test"]);
    let mallory_writer = w.mallory.only_writer(&dir);
    let hers = w.mallory.git_ok(
        &dir,
        &["rev-parse", &format!("refs/receipts/{mallory_writer}")],
    );
    let r = raw_push(&w.mallory, &dir, &[&format!("+{hers}:{ci_ref}")]);
    assert_ne!(r.code, 0, "replacing CI's chain with hers: {r}");
    assert!(
        r.stderr.contains("a valid entry signed by the writer"),
        "{r}"
    );
    let her_tree = tree_of(&w.mallory, &dir, &hers);
    let on_top = w.mallory.git_ok(
        &dir,
        &["commit-tree", &her_tree, "-p", &chain[2], "-m", "hers"],
    );
    let r = raw_push(&w.mallory, &dir, &[&format!("{on_top}:{ci_ref}")]);
    assert_ne!(r.code, 0, "appending hers to CI's chain: {r}");
    assert!(
        r.stderr.contains(&format!("but sits in {}", w.ci_writer)),
        "{r}"
    );
    assert_eq!(server_ref(&w, &ci_ref), Some(chain[2].clone()));

    // and CI's own next push goes through
    w.ci.receipt_ok(&w.ci_dir, &["run", "test"]);
    let r = w.ci.receipt_ok(&w.ci_dir, &["push"]);
    assert!(r.stderr.contains("pushed 1 new receipt"), "{r}");
    // Mallory's own chain is hers to push
    let r = raw_push(
        &w.mallory,
        &dir,
        &[&format!("refs/receipts/{mallory_writer}")],
    );
    assert_eq!(
        r.code, 0,
        "a validly signed chain of anyone's is accepted: {r}"
    );
}

#[test]
fn squatting_a_new_writers_id_is_refused_by_the_hook() {
    let w = world(true);
    let nina = Env::new();
    let nina_dir = clone(&nina, &w.url, "nina");
    nina.receipt_ok(&nina_dir, &["run", "test"]);
    let nina_writer = nina.only_writer(&nina_dir);
    let dir = mallory_clone(&w);
    let junk = junk_commit(&w.mallory, &dir, None);
    let nina_ref = format!("refs/receipts/{nina_writer}");
    let r = raw_push(&w.mallory, &dir, &[&format!("{junk}:{nina_ref}")]);
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("breaks the receipt rule"), "{r}");
    assert_eq!(server_ref(&w, &nina_ref), None);
    let r = nina.receipt_ok(&nina_dir, &["push"]);
    assert!(r.stderr.contains("pushed 1 new receipt"), "{r}");
}

#[test]
fn one_chain_under_many_names_is_refused_by_the_hook_and_read_once_without_it() {
    let w = world(true);
    let chain = ci_chain(&w);
    let dir = mallory_clone(&w);
    let names = other_names(&w);
    let specs: Vec<String> = names.iter().map(|n| format!("{}:{n}", chain[2])).collect();
    let spec_refs: Vec<&str> = specs.iter().map(String::as_str).collect();
    let r = raw_push(&w.mallory, &dir, &spec_refs);
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains(&format!("names chain {}, but sits in x0-", w.ci_writer)),
        "{r}"
    );
    assert!(names.iter().all(|n| server_ref(&w, n).is_none()));
}

// ---------------------------------------------------------------------------------
// Without the hook: readers hold the line, and the writer repairs its chain
// ---------------------------------------------------------------------------------

#[test]
fn junk_on_a_hookless_server_is_not_taken_by_fetch_and_the_writers_push_replaces_it() {
    let w = world(false);
    let chain = ci_chain(&w);
    let ci_ref = format!("refs/receipts/{}", w.ci_writer);
    // a reviewer who fetched CI's chain before the attack
    let reviewer = Env::new();
    let rev_dir = clone(&reviewer, &w.url, "reviewer");
    reviewer.receipt_ok(&rev_dir, &["fetch"]);

    let dir = mallory_clone(&w);
    let junk = junk_commit(&w.mallory, &dir, Some(&chain[2]));
    let r = raw_push(&w.mallory, &dir, &[&format!("{junk}:{ci_ref}")]);
    assert_eq!(r.code, 0, "no hook: the server takes anything: {r}");

    // the reviewer's fetch refuses it and keeps CI's real chain
    let r = reviewer.receipt(&rev_dir, &["fetch"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("REJECTED"), "{r}");
    assert!(r.stderr.contains("receipt.json is invalid"), "{r}");
    assert_eq!(
        reviewer.git_ok(&rev_dir, &["rev-parse", &ci_ref]),
        chain[2],
        "the reviewer keeps CI's real tip"
    );
    // a fresh clone takes every real entry below the junk
    let fresh = clone(&reviewer, &w.url, "fresh");
    let r = reviewer.receipt(&fresh, &["fetch"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("took 3 new receipts; REJECTED"), "{r}");
    assert_eq!(reviewer.git_ok(&fresh, &["rev-parse", &ci_ref]), chain[2]);

    // CI's next push replaces the junk with its own entries, nothing lost
    w.ci.receipt_ok(&w.ci_dir, &["run", "test"]);
    let r = w.ci.receipt_ok(&w.ci_dir, &["push"]);
    assert!(
        r.stderr
            .contains("held commits that are not receipts of yours"),
        "{r}"
    );
    assert!(r.stderr.contains("pushed 1 new receipt"), "{r}");
    let ci_tip = w.ci.git_ok(&w.ci_dir, &["rev-parse", &ci_ref]);
    assert_eq!(server_ref(&w, &ci_ref), Some(ci_tip.clone()));
    assert_eq!(
        w.ci.git_ok(&w.ci_dir, &["rev-parse", &format!("{ci_tip}^")]),
        chain[2],
        "the new receipt follows CI's last real one, not the junk"
    );
    // and the readers take the repaired chain
    let r = reviewer.receipt_ok(&rev_dir, &["fetch"]);
    assert!(r.stderr.contains("1 new receipt"), "{r}");
    reviewer.receipt_ok(&rev_dir, &["verify", "--trust", "origin/main"]);
    assert_eq!(reviewer.git_ok(&rev_dir, &["rev-parse", &ci_ref]), ci_tip);
}

#[test]
fn a_squatted_writer_id_on_a_hookless_server_is_replaced_by_the_writers_push() {
    let w = world(false);
    let nina = Env::new();
    let nina_dir = clone(&nina, &w.url, "nina");
    nina.receipt_ok(&nina_dir, &["run", "test"]);
    let nina_writer = nina.only_writer(&nina_dir);
    let nina_ref = format!("refs/receipts/{nina_writer}");
    let dir = mallory_clone(&w);
    let junk = junk_commit(&w.mallory, &dir, None);
    let r = raw_push(&w.mallory, &dir, &[&format!("{junk}:{nina_ref}")]);
    assert_eq!(r.code, 0, "{r}");
    let r = nina.receipt_ok(&nina_dir, &["push"]);
    assert!(
        r.stderr
            .contains("held commits that are not receipts of yours"),
        "{r}"
    );
    let tip = nina.git_ok(&nina_dir, &["rev-parse", &nina_ref]);
    assert_eq!(server_ref(&w, &nina_ref), Some(tip));
}

#[test]
fn a_repair_is_allowed_by_the_hook_installed_after_the_junk_but_a_rewind_never_is() {
    let w = world(false);
    let chain = ci_chain(&w);
    let ci_ref = format!("refs/receipts/{}", w.ci_writer);
    let dir = mallory_clone(&w);
    let junk = junk_commit(&w.mallory, &dir, Some(&chain[2]));
    raw_push(&w.mallory, &dir, &[&format!("{junk}:{ci_ref}")]);
    w.ci.receipt_ok(&w.bare, &["install-hooks", "--server"]);

    // Mallory may not discard CI's entries: rewinding below the failure is refused
    let r = raw_push(&w.mallory, &dir, &[&format!("+{}:{ci_ref}", chain[1])]);
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("a valid entry signed by the writer"),
        "{r}"
    );
    assert_eq!(server_ref(&w, &ci_ref), Some(junk));

    // CI replaces the junk (a non-fast-forward that discards no entry of its chain)
    w.ci.receipt_ok(&w.ci_dir, &["run", "test"]);
    let r = w.ci.receipt_ok(&w.ci_dir, &["push"]);
    assert!(
        r.stderr
            .contains("held commits that are not receipts of yours"),
        "{r}"
    );
    let ci_tip = w.ci.git_ok(&w.ci_dir, &["rev-parse", &ci_ref]);
    assert_eq!(server_ref(&w, &ci_ref), Some(ci_tip));
    let _ = &w.daemon;
}

/// A reader on a hookless server who takes every chain with plain git
/// (`+refs/receipts/*:refs/receipts/*`), as a forge's CI checkout might.
fn plain_fetch(env: &Env, dir: &Path) {
    env.git_ok(
        dir,
        &["fetch", "-q", "origin", "+refs/receipts/*:refs/receipts/*"],
    );
}

#[test]
fn plain_git_fetch_readers_count_no_merge_no_junk_and_no_chain_under_another_name() {
    let w = world(false);
    let chain = ci_chain(&w);
    let ci_ref = format!("refs/receipts/{}", w.ci_writer);
    let reader = Env::new();
    let rdir = clone(&reader, &w.url, "reader");
    plain_fetch(&reader, &rdir);
    let gate = |why: &str| {
        let r = reader.receipt(&rdir, &["gate", "HEAD"]);
        assert_eq!(r.code, 1, "{why}: {r}");
        r
    };
    let r = gate("CI's newest receipt failed");
    assert!(r.stdout.contains("failed"), "{r}");

    let dir = mallory_clone(&w);
    // 4: CI's chain under 20 more names
    let specs: Vec<String> = other_names(&w)
        .iter()
        .map(|n| format!("{}:{n}", chain[2]))
        .collect();
    let spec_refs: Vec<&str> = specs.iter().map(String::as_str).collect();
    assert_eq!(raw_push(&w.mallory, &dir, &spec_refs).code, 0);
    plain_fetch(&reader, &rdir);
    let r = gate("the copies under other names change nothing");
    assert!(r.stdout.contains("failed"), "{r}");
    assert!(
        r.stderr
            .contains("points at a receipt of another chain; it is not read"),
        "{r}"
    );

    // 2: junk, and a real passing receipt of CI's copied, on top of CI's chain
    let tree_of_1 = tree_of(&w.mallory, &dir, &chain[1]);
    let copy = w.mallory.git_ok(
        &dir,
        &["commit-tree", &tree_of_1, "-p", &chain[2], "-m", "copy"],
    );
    let junk = junk_commit(&w.mallory, &dir, Some(&copy));
    assert_eq!(
        raw_push(&w.mallory, &dir, &[&format!("{junk}:{ci_ref}")]).code,
        0
    );
    plain_fetch(&reader, &rdir);
    let r = gate("what is above CI's real tip is not part of its chain");
    assert!(r.stdout.contains("failed"), "{r}");
    assert!(r.stderr.contains("is not an entry of it"), "{r}");

    // 1: the merge that hides the failure from first-parent readers
    let m = hiding_merge(&w.mallory, &dir, &chain);
    assert_eq!(
        raw_push(&w.mallory, &dir, &[&format!("+{m}:{ci_ref}")]).code,
        0
    );
    plain_fetch(&reader, &rdir);
    let r = gate("a chain with a merge counts for nothing: never present");
    assert!(r.stdout.contains("test  missing"), "{r}");
    assert!(r.stderr.contains("which has more than one parent"), "{r}");
    let r = reader.receipt(&rdir, &["verify", "--trust", "origin/main"]);
    assert_eq!(r.code, 1, "CI's verify catches it: {r}");
    assert!(r.stdout.contains("has 2 parents"), "{r}");
}

/// A fetch that meets a chain diverged from the local copy by junk here (a
/// commit that is no entry, above the entries both hold): the remote's valid
/// entries replace the junk, and it says so; but a local copy holding a valid
/// entry of its own below the junk (the writer's second clone) is kept whole,
/// nothing it signed lost.
#[test]
fn a_fetch_replaces_local_junk_by_the_remote_s_entries_but_never_a_local_valid_entry() {
    let w = world(true);
    let chain = ci_chain(&w);
    let ci_ref = format!("refs/receipts/{}", w.ci_writer);
    let reviewer = Env::new();
    let rev_dir = clone(&reviewer, &w.url, "reviewer");
    reviewer.receipt_ok(&rev_dir, &["fetch"]);
    let junk = junk_commit(&reviewer, &rev_dir, Some(&chain[2]));
    reviewer.git_ok(&rev_dir, &["update-ref", &ci_ref, &junk]);
    w.ci.receipt_ok(&w.ci_dir, &["run", "test"]);
    w.ci.receipt_ok(&w.ci_dir, &["push"]);
    let ci_tip = w.ci.git_ok(&w.ci_dir, &["rev-parse", &ci_ref]);
    let r = reviewer.receipt(&rev_dir, &["fetch"]);
    assert!(
        r.stderr
            .contains("s chain replaces commits here that were not entries of it"),
        "{r}"
    );
    assert!(r.stderr.contains("took 1 receipt"), "{r}");
    assert_eq!(reviewer.git_ok(&rev_dir, &["rev-parse", &ci_ref]), ci_tip);

    // CI's second clone: a receipt of its own on the same tip, junk above it
    let ci2 = clone(&w.ci, &w.url, "ci2");
    w.ci.receipt_ok(&ci2, &["fetch"]);
    w.ci.receipt_ok(&ci2, &["run", "test"]);
    let own = w.ci.git_ok(&ci2, &["rev-parse", &ci_ref]);
    assert_ne!(own, ci_tip);
    let junk = junk_commit(&w.ci, &ci2, Some(&own));
    w.ci.git_ok(&ci2, &["update-ref", &ci_ref, &junk]);
    // meanwhile the first clone pushes another
    w.ci.receipt_ok(&w.ci_dir, &["run", "test"]);
    w.ci.receipt_ok(&w.ci_dir, &["push"]);
    let r = w.ci.receipt_ok(&ci2, &["fetch"]);
    assert!(
        r.stderr.contains("your chain diverged from origin's"),
        "{r}"
    );
    assert_eq!(
        w.ci.git_ok(&ci2, &["rev-parse", &ci_ref]),
        junk,
        "the local copy, with its own valid entry, is kept"
    );
}
