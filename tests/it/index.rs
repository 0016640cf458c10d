//! The receipt index (`.git/receipt-index`) is a hint that can only make a lookup
//! faster: deleted, truncated, corrupted, stale, torn by a crash or raced by other
//! processes, it gives the same answers as no index file at all
//! (`GIT_RECEIPT_INDEX=0`, which indexes the chains in memory on every command).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{Env, Run};

const NO_FILE: (&str, &str) = ("GIT_RECEIPT_INDEX", "0");

/// A repository whose checks are in every state at some revision:
/// HEAD~2: test present, docs failed; HEAD~1 (src changed): test stale 1 back,
/// docs failed by identical inputs; HEAD (docs changed): test stale 2 back, docs
/// stale; plus a second, untrusted writer whose receipts never count.
fn scenario(env: &Env) -> PathBuf {
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    env.receipt_ok(&repo, &["record", "docs", "--exit-code", "1"]);
    let stranger = env.ssh_keygen("stranger_key");
    let r = env.receipt_with(
        &repo,
        &["record", "test", "--exit-code", "0"],
        &[("GIT_RECEIPT_SIGNING_KEY", stranger.to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{r}");
    std::fs::write(repo.join("src/lib.rs"), "pub fn changed() {}\n").unwrap();
    env.git_ok(&repo, &["commit", "-qam", "change src"]);
    std::fs::write(repo.join("docs/index.md"), "# more docs\n").unwrap();
    env.git_ok(&repo, &["commit", "-qam", "change docs"]);
    repo
}

/// Everything the decisions say about the scenario, as one string.
fn answers(env: &Env, repo: &Path, envs: &[(&str, &str)]) -> (String, String) {
    let mut out = String::new();
    let mut err = String::new();
    for args in [
        &["status", "--json", "HEAD"][..],
        &["status", "--json", "HEAD~1"],
        &["status", "--json", "HEAD~2"],
        &["show", "--json", "HEAD~2"],
        &["gate", "--json", "HEAD~2", "HEAD"],
    ] {
        let r = env.receipt_with(repo, args, envs);
        assert!(r.code == 0 || r.code == 1, "{args:?}: {r}");
        out.push_str(&format!("{args:?} exit {}\n{}", r.code, r.stdout));
        err.push_str(&r.stderr);
    }
    (out, err)
}

/// The answers with no index file: what every index must agree with.
fn baseline(env: &Env, repo: &Path) -> String {
    answers(env, repo, &[NO_FILE]).0
}

/// The baseline of the scenario as built, which has every state in it.
fn scenario_baseline(env: &Env, repo: &Path) -> String {
    let out = baseline(env, repo);
    assert!(out.contains(r#""state": "present""#), "{out}");
    assert!(out.contains(r#""state": "failed""#), "{out}");
    assert!(out.contains(r#""state": "stale""#), "{out}");
    assert!(out.contains(r#""untrusted_receipts": 1"#), "{out}");
    out
}

fn index_file(repo: &Path) -> PathBuf {
    repo.join(".git/receipt-index")
}

#[test]
fn without_the_index_file_the_answers_are_the_same_and_none_is_written() {
    let env = Env::new();
    let repo = scenario(&env);
    let expected = scenario_baseline(&env, &repo);
    assert!(
        !index_file(&repo).exists(),
        "GIT_RECEIPT_INDEX=0 writes no file"
    );
    env.git_ok(&repo, &["config", "receipt.index", "false"]);
    assert_eq!(answers(&env, &repo, &[]).0, expected);
    assert!(
        !index_file(&repo).exists(),
        "receipt.index=false writes no file"
    );
    env.git_ok(&repo, &["config", "--unset", "receipt.index"]);
    let (first, err) = answers(&env, &repo, &[]);
    assert_eq!(first, expected, "built from nothing");
    assert_eq!(err, "", "a missing index is built quietly");
    assert!(index_file(&repo).exists());
    let (second, err) = answers(&env, &repo, &[]);
    assert_eq!(second, expected, "read back from the file");
    assert_eq!(err, "");
}

/// What `git pack-refs` (a clone, `git gc`) does to the writers' refs changes no
/// answer: packed refs are read straight from `packed-refs`, and a chain that
/// moved on since (a loose ref newer than the packed one of its name) is read at
/// its loose tip, as git reads it.
#[test]
fn packed_writer_refs_give_the_same_answers_and_a_newer_loose_tip_wins() {
    let env = Env::new();
    let repo = scenario(&env);
    let expected = scenario_baseline(&env, &repo);
    env.git_ok(&repo, &["pack-refs", "--all"]);
    let loose = |repo: &Path| {
        std::fs::read_dir(repo.join(".git/refs/receipts"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    assert_eq!(loose(&repo), 0, "every chain ref is packed");
    assert_eq!(answers(&env, &repo, &[]).0, expected, "packed, index file");
    assert_eq!(baseline(&env, &repo), expected, "packed, no index file");
    let status = |repo: &Path| env.receipt(repo, &["status", "--json", "HEAD"]).stdout;
    assert!(!status(&repo).contains(r#""state": "failed""#));
    // a failing receipt on HEAD: its chain's loose ref now shadows the packed one
    env.receipt_ok(&repo, &["record", "test", "--exit-code", "1"]);
    assert_eq!(loose(&repo), 1, "the chain moved on in a loose ref");
    let packed = std::fs::read_to_string(repo.join(".git/packed-refs")).unwrap();
    let own = std::fs::read_dir(repo.join(".git/refs/receipts"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let own = format!("refs/receipts/{}", own.to_str().unwrap());
    let tip = env.git_ok(&repo, &["rev-parse", &own]);
    assert!(
        packed.contains(&own) && !packed.contains(&tip),
        "packed-refs still holds the older tip of {own}: {packed}"
    );
    let out = status(&repo);
    assert!(
        out.contains(r#""state": "failed""#),
        "the loose tip is read: {out}"
    );
    assert_eq!(
        answers(&env, &repo, &[]).0,
        baseline(&env, &repo),
        "the index agrees with indexing from nothing"
    );
    let r = env.receipt(&repo, &["gate", "HEAD"]);
    assert_eq!(r.code, 1, "{r}");
}

#[test]
fn a_deleted_or_truncated_index_is_rebuilt_and_gives_the_same_answers() {
    let env = Env::new();
    let repo = scenario(&env);
    let expected = scenario_baseline(&env, &repo);
    answers(&env, &repo, &[]);
    let whole = std::fs::read(index_file(&repo)).unwrap();
    std::fs::remove_file(index_file(&repo)).unwrap();
    assert_eq!(answers(&env, &repo, &[]).0, expected, "deleted");
    assert_eq!(
        std::fs::read(index_file(&repo)).unwrap(),
        whole,
        "rewritten"
    );
    for cut in [0, 1, 31, whole.len() / 2, whole.len() - 1] {
        std::fs::write(index_file(&repo), &whole[..cut]).unwrap();
        let (out, err) = answers(&env, &repo, &[]);
        assert_eq!(out, expected, "truncated to {cut} bytes");
        assert!(
            err.contains("the receipt index is unusable") && err.contains("rebuilding it"),
            "says it rebuilt the index (cut at {cut}): {err}"
        );
        assert_eq!(std::fs::read(index_file(&repo)).unwrap(), whole, "repaired");
    }
}

#[test]
fn a_corrupted_index_is_caught_by_its_checksums_and_gives_the_same_answers() {
    let env = Env::new();
    let repo = scenario(&env);
    let expected = scenario_baseline(&env, &repo);
    answers(&env, &repo, &[]);
    let whole = std::fs::read(index_file(&repo)).unwrap();
    // header, chain table, fanout, keys, records, checksums, trailer
    let spots = [
        0,
        5,
        40,
        100,
        1200,
        whole.len() / 2,
        whole.len() - 40,
        whole.len() - 10,
    ];
    for at in spots {
        let mut bad = whole.clone();
        bad[at] ^= 0x5a;
        std::fs::write(index_file(&repo), &bad).unwrap();
        let (out, _) = answers(&env, &repo, &[]);
        assert_eq!(out, expected, "a byte flipped at {at} of {}", whole.len());
    }
    // garbage of the right length, and a file from another world entirely
    std::fs::write(index_file(&repo), vec![0x42; whole.len()]).unwrap();
    assert_eq!(answers(&env, &repo, &[]).0, expected);
    std::fs::write(index_file(&repo), b"GRIX").unwrap();
    assert_eq!(answers(&env, &repo, &[]).0, expected);
    // an unreadable path in its place (a directory) costs time, never an answer
    std::fs::remove_file(index_file(&repo)).unwrap();
    std::fs::create_dir(index_file(&repo)).unwrap();
    let (out, err) = answers(&env, &repo, &[]);
    assert_eq!(out, expected, "{err}");
}

#[test]
fn a_stale_index_is_brought_up_to_date_incrementally() {
    let env = Env::new();
    let repo = scenario(&env);
    answers(&env, &repo, &[]);
    let old = std::fs::read(index_file(&repo)).unwrap();
    // new receipts after the index was written: docs now passes at HEAD
    env.receipt_ok(&repo, &["run", "docs"]);
    env.receipt_ok(&repo, &["run", "test"]);
    let expected = baseline(&env, &repo);
    let (out, err) = answers(&env, &repo, &[]);
    assert_eq!(out, expected);
    assert_eq!(err, "", "catching up is quiet: {err}");
    assert!(out.contains(r#""state": "present""#));
    // an index from before those receipts, put back in place, catches up as well
    std::fs::write(index_file(&repo), &old).unwrap();
    assert_eq!(answers(&env, &repo, &[]).0, expected);
    assert_ne!(std::fs::read(index_file(&repo)).unwrap(), old);
}

#[test]
fn a_chain_that_moved_backwards_is_reported_and_reindexed() {
    let env = Env::new();
    let repo = scenario(&env);
    env.receipt_ok(&repo, &["run", "docs"]);
    answers(&env, &repo, &[]);
    // roll the trusted writer's chain back by one receipt (the docs pass at HEAD)
    let writers = env.git_ok(
        &repo,
        &["for-each-ref", "--format=%(refname)", "refs/receipts/"],
    );
    let chain = writers
        .lines()
        .find(|w| env.git_ok(&repo, &["rev-list", "--count", w]) == "3")
        .expect("the trusted writer has three receipts")
        .to_owned();
    let tip = env.git_ok(&repo, &["rev-parse", &chain]);
    env.git_ok(&repo, &["update-ref", &chain, &format!("{tip}~1")]);
    let expected = baseline(&env, &repo);
    let (out, err) = answers(&env, &repo, &[]);
    assert_eq!(out, expected);
    assert!(
        err.contains(&format!("no longer descends from {tip}")) && err.contains("re-indexed it"),
        "the rollback is reported: {err}"
    );
    assert!(
        !out.contains(&tip),
        "the rolled-back receipt no longer counts"
    );
    let (_, err) = answers(&env, &repo, &[]);
    assert_eq!(err, "", "reported once, then indexed: {err}");
    // a deleted chain drops out of the index
    env.git_ok(&repo, &["update-ref", "-d", &chain]);
    assert_eq!(answers(&env, &repo, &[]).0, baseline(&env, &repo));
}

/// The quick check that an index is current reads `packed-refs` without looking
/// up any object: a tip rewritten inside `packed-refs` (no loose ref, same
/// length), backwards or to an object that is no commit, must still be noticed.
#[test]
fn a_packed_tip_rewritten_in_place_is_noticed() {
    let env = Env::new();
    let repo = scenario(&env);
    env.receipt_ok(&repo, &["run", "docs"]);
    env.git_ok(&repo, &["pack-refs", "--all"]);
    answers(&env, &repo, &[]);
    let packed_file = repo.join(".git/packed-refs");
    let packed = std::fs::read_to_string(&packed_file).unwrap();
    let (tip, chain) = packed
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(_, name)| {
            name.starts_with("refs/receipts/")
                && env.git_ok(&repo, &["rev-list", "--count", name]) == "3"
        })
        .map(|(t, n)| (t.to_owned(), n.to_owned()))
        .expect("the trusted writer has three receipts, packed");
    let older = env.git_ok(&repo, &["rev-parse", &format!("{tip}~1")]);
    std::fs::write(&packed_file, packed.replace(&tip, &older)).unwrap();
    assert_eq!(env.git_ok(&repo, &["rev-parse", &chain]), older);
    let expected = baseline(&env, &repo);
    let (out, err) = answers(&env, &repo, &[]);
    assert_eq!(out, expected);
    assert!(
        err.contains(&format!("no longer descends from {tip}")),
        "the rollback is reported: {err}"
    );
    // now to the chain commit's tree: a ref that is no commit is skipped with a warning
    let tree = env.git_ok(&repo, &["rev-parse", &format!("{older}^{{tree}}")]);
    std::fs::write(&packed_file, packed.replace(&tip, &tree)).unwrap();
    let (out, err) = answers(&env, &repo, &[]);
    assert_eq!(out, baseline(&env, &repo));
    assert!(err.contains("not a commit"), "{err}");
}

#[test]
fn a_crash_while_writing_the_index_leaves_a_working_one() {
    let env = Env::new();
    let repo = scenario(&env);
    answers(&env, &repo, &[]);
    let before = std::fs::read(index_file(&repo)).unwrap();
    env.receipt_ok(&repo, &["run", "test"]);
    let r = env.receipt_with(
        &repo,
        &["status", "HEAD"],
        &[("GIT_RECEIPT_TEST_STOP_AFTER", "index-write")],
    );
    assert_ne!(r.code, 0, "the injected crash happened: {r}");
    let lock = repo.join(".git/receipt-index.lock");
    assert!(lock.exists(), "the crash left the lock behind");
    assert_eq!(
        std::fs::read(index_file(&repo)).unwrap(),
        before,
        "the old index is untouched"
    );
    let expected = baseline(&env, &repo);
    assert_eq!(
        answers(&env, &repo, &[]).0,
        expected,
        "answers despite the lock"
    );
    assert!(lock.exists(), "a young lock is someone else's: left alone");
    let ok = Command::new("touch")
        .args(["-d", "10 minutes ago"])
        .arg(&lock)
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(answers(&env, &repo, &[]).0, expected);
    assert!(!lock.exists(), "a stale lock is removed");
    assert_ne!(
        std::fs::read(index_file(&repo)).unwrap(),
        before,
        "and the index written"
    );
}

#[test]
fn concurrent_writers_and_readers_agree() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["key", "generate"]);
    let spawn = |script: &str| {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        env.seal(&mut cmd);
        cmd.current_dir(&repo)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // each writer records its own duration: two identical observations made in the
    // same millisecond are one receipt (same bytes, same id), not a lost one
    let writer = |n: usize| {
        format!(
            "i=0; while [ $i -lt 8 ]; do git receipt record test --exit-code 0 --duration-ms {n} || exit 1; i=$((i+1)); done"
        )
    };
    let reader = "i=0; while [ $i -lt 8 ]; do git receipt status --json >/dev/null || exit 1; git receipt show --json >/dev/null; [ $? -le 1 ] || exit 1; i=$((i+1)); done"; // show exits 1 while there is no receipt yet
    let mut children: Vec<_> = (1..=3).map(|n| spawn(&writer(n))).collect();
    children.extend((0..3).map(|_| spawn(reader)));
    for c in children {
        let out = c.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "every process succeeded: {stderr}");
        assert!(
            !stderr.contains("unusable") && !stderr.contains("rebuilding"),
            "no reader ever saw a torn index: {stderr}"
        );
    }
    let log = env.log_json(&repo);
    assert_eq!(log.len(), 24);
    let mut ids: Vec<String> = log
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    let shown = env.receipt_ok(&repo, &["show", "--json", "HEAD"]);
    let v: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    let mut listed: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    listed.sort();
    assert_eq!(listed, ids, "the index names every receipt once");
    let with_file = env.receipt_ok(&repo, &["status", "--json"]).stdout;
    let r: Run = env.receipt_with(&repo, &["status", "--json"], &[NO_FILE]);
    assert_eq!(with_file, r.stdout);
}

#[test]
fn a_fetch_leaves_a_current_index_that_the_first_reader_uses_as_it_is() {
    let env = Env::new();
    let origin = scenario(&env);
    let clone = env.path("clone");
    let r = env.git(
        &env.path(""),
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{r}");
    assert!(!index_file(&clone).exists(), "a plain clone has no index");
    let r = env.receipt_ok(&clone, &["fetch"]);
    assert!(r.stderr.contains("2 chains"), "{r}");
    // the fetch wrote the index, covering every chain it took
    let after_fetch = std::fs::read(index_file(&clone)).expect("fetch writes the index");
    let answers_now = answers(&env, &clone, &[]).0;
    assert_eq!(
        answers_now,
        baseline(&env, &clone),
        "the same answers as no file"
    );
    // and every reader found it current: none had anything to add or write
    assert_eq!(
        std::fs::read(index_file(&clone)).unwrap(),
        after_fetch,
        "the index after the readers is the one the fetch left"
    );
}
