//! A range shares one walk (issue 27): `status A..B` reads each commit of a
//! merge-heavy history once for all its rows, and every row must still be
//! exactly what `status REV --json` says of that commit alone.
//!
//! The history is `tests/fixtures/make_merge_history_repo.sh`: 300 first-parent
//! commits on a root, a merge of a two-commit branch every tenth, every third
//! commit touching README only.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::Env;

const FIXTURE: &str = "make_merge_history_repo.sh";

fn history(env: &Env) -> PathBuf {
    env.fixture_repo(FIXTURE, "repo")
}

fn json(env: &Env, repo: &Path, args: &[&str]) -> Value {
    let r = env.receipt(repo, args);
    assert_eq!(r.code, 0, "{args:?}: {r}");
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {r}"))
}

/// Every row of `status RANGE --json` against `status COMMIT --json` of its
/// commit alone: the same checks (states, reasons, deciding receipts and their
/// distances), trust, notices and reasons. Returns the rows.
fn range_matches_each_commit(env: &Env, repo: &Path, range: &str, extra: &[&str]) -> Vec<Value> {
    let all = json(env, repo, &[&["status", range, "--json"], extra].concat());
    let rows = all["commits"].as_array().expect("commits").clone();
    let listed = env.git_ok(repo, &["rev-list", "--count", range]);
    assert_eq!(
        rows.len().to_string(),
        listed,
        "one row per commit of {range}"
    );
    for row in &rows {
        let commit = row["commit"].as_str().unwrap();
        let alone = json(env, repo, &[&["status", commit, "--json"], extra].concat());
        assert_eq!(alone["commit"], row["commit"]);
        for field in ["checks", "trust", "notices", "reasons"] {
            assert_eq!(
                row[field], alone[field],
                "{field} of {commit} in {range} differs from status {commit}"
            );
        }
    }
    rows
}

/// The states of check `name` over the rows, in range order.
fn states_of<'a>(rows: &'a [Value], name: &str) -> Vec<&'a str> {
    rows.iter()
        .map(|r| {
            r["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == name)
                .and_then(|c| c["state"].as_str())
                .unwrap_or("-")
        })
        .collect()
}

#[test]
fn a_range_over_merges_with_a_check_that_never_ran_matches_each_commit_alone() {
    let env = Env::new();
    let repo = history(&env);
    let rows = range_matches_each_commit(&env, &repo, "main~300..main", &[]);
    assert_eq!(
        rows.len(),
        300 + 2 * 30,
        "300 first-parent commits, 30 merged branches of 2"
    );
    for name in ["test", "readme", "review:code"] {
        assert!(
            states_of(&rows, name).iter().all(|s| *s == "missing"),
            "{name} never ran: missing everywhere"
        );
    }
}

#[test]
fn a_range_over_merges_with_some_receipts_matches_each_commit_alone() {
    let env = Env::new();
    let repo = history(&env);
    // receipts on the first-parent line, on a merged branch and a review, with
    // a walk bound (100) that some rows of the range reach and others do not
    let run_at = |rev: &str, check: &str| {
        env.git_ok(&repo, &["checkout", "-q", rev]);
        env.receipt_ok(&repo, &["run", check]);
    };
    run_at("main~130", "test");
    run_at("main~130", "readme");
    run_at("main~76", "test"); // main~75 touches README only: present there
    run_at("side-280", "test");
    run_at("side-280~1", "readme");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    env.receipt_ok(&repo, &["review", "main~40", "--name", "code", "--approve"]);
    env.git_ok(&repo, &["config", "receipt.walkLimit", "100"]);
    let rows = range_matches_each_commit(&env, &repo, "main~95..main", &[]);
    let test = states_of(&rows, "test");
    assert!(
        test.contains(&"present") && test.contains(&"stale"),
        "{test:?}"
    );
    let readme = states_of(&rows, "readme");
    for state in ["present", "stale", "missing"] {
        assert!(
            readme.contains(&state),
            "readme is {state} somewhere: {readme:?}"
        );
    }
    let review = states_of(&rows, "review:code");
    assert!(
        review.contains(&"stale") && review.contains(&"missing"),
        "{review:?}"
    );
    // and the merged branch on its own, from its fork point
    range_matches_each_commit(&env, &repo, "main~23..side-280", &[]);
}
