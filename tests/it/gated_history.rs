//! Trust comes only from gated history (issue 24, item 1): the trust root of a
//! revision is the newest commit on the default branch's first-parent history
//! that it descends from, never a merge base that sits inside a merged branch.
//!
//! Mallory's docs branch adds her own `[signer]` in commit A and reverts it in B;
//! `main` merges it with `git merge --no-ff` (net diff: one README line). A later
//! branch forked from A has A as its merge base with `main`, whose `.gitreceipts`
//! trusts her key; its trust root is the commit `main` had before the merge.

use std::path::{Path, PathBuf};

use crate::common::{Env, Run};
use serde_json::Value;

fn rev(env: &Env, repo: &Path, r: &str) -> String {
    env.git_ok(repo, &["rev-parse", r])
}

fn short(oid: &str) -> &str {
    &oid[..7]
}

/// The basic fixture, with the maintainer's (this environment's) key generated.
fn setup() -> (Env, PathBuf) {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["key", "generate"]);
    (env, repo)
}

/// Another person's environment with its own signing key; returns it and the
/// public key line.
fn person(repo: &Path) -> (Env, String) {
    let p = Env::new();
    let key = p
        .receipt_ok(repo, &["key", "generate"])
        .stdout
        .trim()
        .to_owned();
    (p, key)
}

fn contract_with_signer(repo: &Path, name: &str, key: &str) -> String {
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str(&format!("[signer \"{name}\"]\n\tkey = {key}\n"));
    contract
}

fn commit_all(env: &Env, repo: &Path, msg: &str) -> String {
    env.git_ok(repo, &["add", "-A"]);
    env.git_ok(repo, &["commit", "-q", "-m", msg]);
    rev(env, repo, "HEAD")
}

/// `status --json REV`: the check `name` and the trust it was judged by.
fn status_of(env: &Env, repo: &Path, r: &str, name: &str) -> (Value, String) {
    let s = env.receipt(repo, &["status", "--json", r]);
    assert_eq!(s.code, 0, "status {r}: {s}");
    let v: Value = serde_json::from_str(&s.stdout).expect("status --json is JSON");
    let check = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no check {name} in {v}"));
    (check, v["trust"].as_str().unwrap_or_default().to_owned())
}

fn gate(env: &Env, repo: &Path, args: &[&str]) -> Run {
    let mut all = vec!["gate"];
    all.extend_from_slice(args);
    env.receipt(repo, &all)
}

/// Mallory's docs branch (A: her signer and a README line; B: the signer
/// reverted), merged into main with a merge commit; returns (main before the
/// merge, A).
fn mallorys_merged_docs_branch(env: &Env, repo: &Path, mallory_key: &str) -> (String, String) {
    let before = rev(env, repo, "main");
    let original = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    env.git_ok(repo, &["checkout", "-q", "-b", "docs"]);
    std::fs::write(
        repo.join(".gitreceipts"),
        contract_with_signer(repo, "mallory", mallory_key),
    )
    .unwrap();
    std::fs::write(repo.join("README"), "read me\nsee docs/\n").unwrap();
    let a = commit_all(env, repo, "docs: point at docs/");
    std::fs::write(repo.join(".gitreceipts"), original).unwrap();
    commit_all(env, repo, "oops, revert the contract change");
    env.git_ok(repo, &["checkout", "-q", "main"]);
    env.git_ok(
        repo,
        &["merge", "-q", "--no-ff", "-m", "Merge docs", "docs"],
    );
    (before, a)
}

#[test]
fn a_signer_added_and_reverted_inside_a_merged_branch_is_not_trusted_for_a_branch_forked_from_it() {
    let (env, repo) = setup();
    let (mallory, mallory_key) = person(&repo);
    let (before, a) = mallorys_merged_docs_branch(&env, &repo, &mallory_key);
    assert_eq!(
        env.git_ok(&repo, &["merge-base", "main", &a]),
        a,
        "the case: A itself is the merge base of a branch from A with main"
    );
    // the later branch, forked from A, with Mallory's receipt for its change
    env.git_ok(&repo, &["checkout", "-q", "-b", "feature", &a]);
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { backdoor() }\n").unwrap();
    commit_all(&env, &repo, "feature");
    mallory.receipt_ok(&repo, &["run", "test"]);

    let (test, trust) = status_of(&env, &repo, "feature", "test");
    assert_eq!(test["state"], "missing", "her key is not trusted: {test}");
    assert!(test["untrusted_receipts"].as_u64().unwrap() >= 1, "{test}");
    assert_eq!(
        trust,
        format!(
            "signers of .gitreceipts at {} (refs/heads/main~1, on its first-parent history)",
            short(&before)
        ),
        "the trust root is the tip main had before the merge, not the merge base A"
    );

    let g = gate(&env, &repo, &["feature"]);
    assert_eq!(g.code, 1, "plain gate: {g}");
    assert!(g.stdout.contains("missing"), "{g}");
    let g = gate(&env, &repo, &["feature", "--verify"]);
    assert_eq!(g.code, 1, "gate --verify: {g}");
    assert!(g.stdout.contains("missing"), "{g}");
    assert!(
        g.stderr
            .contains(&format!("signers of .gitreceipts at {}", short(&before))),
        "says whose signers it verified against: {g}"
    );
    // A itself is judged by the same trust root: a commit inside a merged branch
    // never trusts the signers it adds
    let (_, trust_a) = status_of(&env, &repo, &a, "test");
    assert!(trust_a.contains(short(&before)), "{trust_a}");
}

#[test]
fn a_signer_added_on_main_by_a_merged_change_is_trusted_for_a_branch_forked_after_the_merge() {
    let (env, repo) = setup();
    let (mallory, mallory_key) = person(&repo);
    mallorys_merged_docs_branch(&env, &repo, &mallory_key);
    let (bob, bob_key) = person(&repo);
    // the honest path: bob's signer added on a branch, reviewed, merged into main
    env.git_ok(&repo, &["checkout", "-q", "-b", "trust-bob"]);
    std::fs::write(
        repo.join(".gitreceipts"),
        contract_with_signer(&repo, "bob", &bob_key),
    )
    .unwrap();
    commit_all(&env, &repo, "trust bob");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    env.git_ok(
        &repo,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "Merge trust-bob",
            "trust-bob",
        ],
    );
    let merged = rev(&env, &repo, "main");
    env.git_ok(&repo, &["checkout", "-q", "-b", "topic"]);
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { topic() }\n").unwrap();
    commit_all(&env, &repo, "topic");
    bob.receipt_ok(&repo, &["run", "test"]);

    let (test, trust) = status_of(&env, &repo, "topic", "test");
    assert_eq!(
        trust,
        format!(
            "signers of .gitreceipts at {} (the tip of refs/heads/main)",
            short(&merged)
        )
    );
    assert_eq!(test["state"], "present", "{test}");
    let g = gate(&env, &repo, &["topic"]);
    assert_eq!(g.code, 0, "{g}");
    let g = gate(&env, &repo, &["topic", "--verify"]);
    assert_eq!(g.code, 0, "{g}");
    // and main moving on does not change it: the trust root is found further back
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    std::fs::write(repo.join("docs/index.md"), "# docs\nmore\n").unwrap();
    commit_all(&env, &repo, "docs");
    let (test, trust) = status_of(&env, &repo, "topic", "test");
    assert_eq!(
        trust,
        format!(
            "signers of .gitreceipts at {} (refs/heads/main~1, on its first-parent history)",
            short(&merged)
        )
    );
    assert_eq!(test["state"], "present", "{test}");
    // Mallory's receipt for the same change still counts for nothing there
    mallory.receipt_ok(&repo, &["run", "docs"]);
    let (docs, _) = status_of(&env, &repo, "topic", "docs");
    assert_eq!(docs["state"], "missing", "{docs}");
}

#[test]
fn a_trust_root_further_back_than_the_walk_limit_fails_closed_with_a_hint() {
    let (env, repo) = setup();
    let fork = rev(&env, &repo, "main");
    env.git_ok(&repo, &["checkout", "-q", "-b", "old-topic"]);
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { old() }\n").unwrap();
    commit_all(&env, &repo, "old topic");
    env.receipt_ok(&repo, &["run", "test"]);
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    for i in 0..3 {
        std::fs::write(repo.join("docs/index.md"), format!("# docs {i}\n")).unwrap();
        commit_all(&env, &repo, "docs");
    }
    // the fork point is main~3: four first-parent commits from the tip
    env.git_ok(&repo, &["config", "receipt.walkLimit", "3"]);
    for args in [
        &["status", "old-topic"][..],
        &["gate", "old-topic"],
        &["gate", "old-topic", "--verify"],
    ] {
        let r = env.receipt(&repo, args);
        assert_eq!(
            r.code, 2,
            "cannot decide, never some other trust: {args:?} {r}"
        );
        assert!(
            r.stderr.contains(
                "none of the newest 3 commits on the first-parent history of refs/heads/main is an ancestor of it"
            ),
            "{r}"
        );
        assert!(
            r.stderr.contains("hint:") && r.stderr.contains("receipt.walkLimit"),
            "{r}"
        );
    }
    env.git_ok(&repo, &["config", "receipt.walkLimit", "4"]);
    let (test, trust) = status_of(&env, &repo, "old-topic", "test");
    assert_eq!(
        trust,
        format!(
            "signers of .gitreceipts at {} (refs/heads/main~3, on its first-parent history)",
            short(&fork)
        )
    );
    assert_eq!(test["state"], "present", "{test}");
    let g = gate(&env, &repo, &["old-topic", "--verify"]);
    assert_eq!(g.code, 0, "{g}");
}

/// A `.gitreceipts` on the default branch that does not parse stops a reader
/// of any revision judged by it, and the error names that commit as what it
/// is (the tip of main), so a user whose own branch's file is fine sees which
/// file to mend; the branch's own file is never read in its place.
#[test]
fn a_broken_contract_at_the_trust_root_is_named_as_the_tip_of_main() {
    let (env, repo) = setup();
    env.git_ok(&repo, &["checkout", "-q", "-b", "topic"]);
    let good = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    std::fs::write(
        repo.join(".gitreceipts"),
        format!("{good}[check \"all\"]\n\trun = true\n\tpath = .\n"),
    )
    .unwrap();
    let broken = commit_all(&env, &repo, "a path that spells the whole tree");
    env.git_ok(&repo, &["checkout", "-q", "topic"]);
    std::fs::write(repo.join("README"), "topic\n").unwrap();
    commit_all(&env, &repo, "topic work");
    env.git_ok(&repo, &["merge", "-q", "--no-edit", "main"]);
    std::fs::write(repo.join(".gitreceipts"), &good).unwrap();
    commit_all(&env, &repo, "the topic's file is fine");
    let r = env.receipt(&repo, &["gate", "HEAD"]);
    assert_eq!(r.code, 2, "{r}");
    let line = good.lines().count() + 3;
    assert!(
        r.stderr.contains(&format!(
            "error: .gitreceipts at {} (the tip of refs/heads/main):{line}: check \"all\": path \".\" names the whole tree",
            short(&broken)
        )),
        "{r}"
    );
}
