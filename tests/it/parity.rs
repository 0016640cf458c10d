//! Differential checks (`parity = differential`, issue 28): the real binary runs a
//! real TAP producer (`make_parity_repo.sh`) on main and on branches, and a
//! branch's failure blocks only when it fails a test that main did not.

use std::path::Path;

use crate::common::Env;

/// Write `cases` (one `NAME ok|fail` a line) and commit it on a new branch `name`
/// from `from`.
fn branch(env: &Env, dir: &Path, name: &str, from: &str, cases: &str) {
    env.git_ok(dir, &["checkout", "-q", "-b", name, from]);
    std::fs::write(dir.join("cases"), cases).unwrap();
    env.git_ok(dir, &["commit", "-qam", name]);
}

fn row(env: &Env, dir: &Path) -> serde_json::Value {
    let s = env.status_of(dir, None, "suite");
    assert!(s.is_object(), "{s}");
    s
}

#[test]
fn a_branch_fails_only_on_failures_main_did_not_have_and_without_a_baseline_cannot_be_decided() {
    let env = Env::new();
    let dir = env.fixture_repo("make_parity_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    let main = env.git_ok(&dir, &["rev-parse", "--short=7", "main"]);
    // the baseline: main fails `legacy`
    assert_eq!(env.receipt(&dir, &["run", "suite"]).code, 1);

    // the same failure on a branch: present, and the reason says why
    branch(
        &env,
        &dir,
        "same",
        "main",
        "adds ok\nlegacy fail\nnew-test ok\n",
    );
    assert_eq!(env.receipt(&dir, &["run", "suite"]).code, 1);
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 0, "main fails legacy too: {g}");
    let s = row(&env, &dir);
    assert_eq!(s["state"], "present", "{s}");
    assert!(
        s["reason"].as_str().unwrap().ends_with(&format!(
            "but differential: 0 fixed, 0 new failures vs {main} (1 failing there too)"
        )),
        "{s}"
    );
    // a signed acceptance of it verifies
    assert_eq!(env.receipt(&dir, &["gate", "--record"]).code, 0);
    let v = env.receipt(&dir, &["verify"]);
    assert_eq!(
        v.code, 0,
        "verify weighs the acceptance's claim the same way: {v}"
    );

    // a new failure (and a fix): failed, naming it
    branch(&env, &dir, "breaks", "main", "adds fail\nlegacy ok\n");
    assert_eq!(env.receipt(&dir, &["run", "suite"]).code, 1);
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 1, "{g}");
    assert!(
        g.stdout.contains(&format!(
            "differential: 1 fixed, 1 new failure vs {main}: adds"
        )),
        "{g}"
    );

    // main moves on without a receipt; a branch from there has no baseline
    env.git_ok(&dir, &["checkout", "-q", "main"]);
    std::fs::write(dir.join("cases"), "adds ok\nlegacy fail\nmore ok\n").unwrap();
    env.git_ok(&dir, &["commit", "-qam", "main moves"]);
    let main2 = env.git_ok(&dir, &["rev-parse", "--short=7", "main"]);
    branch(
        &env,
        &dir,
        "nobase",
        "main",
        "adds ok\nlegacy fail\nmore ok\nmine ok\n",
    );
    assert_eq!(env.receipt(&dir, &["run", "suite"]).code, 1);
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 2, "no baseline: cannot decide: {g}");
    assert!(
        g.stderr.contains(&format!(
            "cannot decide check \"suite\": it is `parity = differential`, and the baseline {main2} (the trust root on the default branch's first-parent history) has no trusted receipt of its inputs there (stale)"
        )),
        "{g}"
    );
    let hint = format!("git receipt run suite {main2}^..{main2}");
    assert!(g.stderr.contains(&hint), "the hint names the fix: {g}");
    // which is what it says: the baseline's receipt, the work tree untouched
    let r = env.receipt(&dir, &["run", "suite", &format!("{main2}^..{main2}")]);
    assert_eq!(r.code, 1, "main2 fails legacy: {r}");
    assert_eq!(
        env.git_ok(&dir, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "nobase"
    );
    let g = env.receipt(&dir, &["gate"]);
    assert_eq!(g.code, 0, "weighed now: {g}");
}
