//! Fault injection (issue 25): every file write of `run`, `reindex`, `verify
//! --checkpoint`, `fetch` and `push`, failed in turn with a real `EIO` or `ENOSPC`
//! from an LD_PRELOAD shim (tests/fixtures/faultshim.c, built here with `cc`),
//! leaves a repository that `git fsck --strict` and `git receipt verify` accept,
//! with the receipts equal to before or after; the command says what failed
//! (exit 2, the OS's words) or succeeds, never panics and never gives a verdict it
//! did not reach; and the retry succeeds.
//!
//! The shim counts `write`/`pwrite`/`writev` on regular files of the git-receipt
//! process only (not git's, not its stdout or stderr, which are pipes here). Calls
//! that the Rust code makes through raw system calls (`rustix`, under `tempfile`'s
//! renames) are out of its reach, and git-receipt calls no `fsync` yet (issue 25,
//! item 6): those points are covered by the crash tests of durability.rs instead.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, Env, Run};

/// The most failure points tried per command (spread evenly over its writes).
const MAX_POINTS: usize = 40;

/// The shim, built for `env`, with the file its counts go to; `None` (the test
/// returns) where there is no C compiler outside CI.
fn faults(env: &Env) -> Option<Faults> {
    Some(Faults {
        so: shim(env)?,
        count_file: env.path("count"),
    })
}

fn shim(env: &Env) -> Option<PathBuf> {
    if !common::require_tool("cc", "apt-get install gcc") {
        return None;
    }
    let out = env.path("faultshim.so");
    let r = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&out)
        .arg(common::fixture("faultshim.c"))
        .arg("-ldl")
        .output()
        .expect("cc");
    assert!(
        r.status.success(),
        "building the shim: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    Some(out)
}

struct Faults {
    so: PathBuf,
    count_file: PathBuf,
}

impl Faults {
    /// `git receipt args` in `dir` with the `at`th write failing with `errno`
    /// (`at` 0: none fails; the count is written).
    fn run(&self, env: &Env, dir: &Path, args: &[&str], at: usize, errno: &str) -> Run {
        let at = at.to_string();
        env.receipt_with(
            dir,
            args,
            &[
                ("LD_PRELOAD", self.so.to_str().unwrap()),
                ("FAULT_OP", "write"),
                ("FAULT_AT", &at),
                ("FAULT_ERRNO", errno),
                ("FAULT_COUNT", self.count_file.to_str().unwrap()),
            ],
        )
    }

    /// How many writes `git receipt args` makes (running it once, unharmed).
    fn count(&self, env: &Env, dir: &Path, args: &[&str]) -> usize {
        let _ = std::fs::remove_file(&self.count_file);
        let r = self.run(env, dir, args, 0, "EIO");
        assert_eq!(r.code, 0, "counting {args:?}: {r}");
        std::fs::read_to_string(&self.count_file)
            .unwrap_or_else(|e| panic!("the shim wrote no count ({e}): is it loaded? {r}"))
            .trim()
            .parse()
            .unwrap()
    }
}

/// Up to [`MAX_POINTS`] of the write numbers `1..=n`, spread evenly, always
/// with the first and the last.
fn points(n: usize) -> Vec<usize> {
    if n <= MAX_POINTS {
        return (1..=n).collect();
    }
    let mut v: Vec<usize> = (0..MAX_POINTS)
        .map(|i| 1 + i * (n - 1) / (MAX_POINTS - 1))
        .collect();
    v.dedup();
    v
}

fn errno_for(k: usize) -> &'static str {
    if k.is_multiple_of(2) { "ENOSPC" } else { "EIO" }
}

/// What a failed command must say: the OS's words for the injected error.
fn says_why(r: &Run, errno: &str) -> bool {
    let words = match errno {
        "ENOSPC" => "No space left on device",
        _ => "Input/output error",
    };
    r.stderr.contains(words)
}

/// The outcome of one injected fault must be an answer, not a crash or a
/// wrong verdict.
fn assert_answer(r: &Run, what: &str, errno: &str) {
    assert!(
        r.code == 0 || r.code == 2,
        "{what}: exit {} (a panic is 101, a verdict 1): {r}",
        r.code
    );
    if r.code == 2 {
        assert!(says_why(r, errno), "{what}: the error names the cause: {r}");
    }
}

fn assert_consistent(env: &Env, dir: &Path, what: &str) {
    let r = env.git(dir, &["fsck", "--strict", "--no-dangling"]);
    assert_eq!(r.code, 0, "{what}: git fsck: {r}");
    // no finding (a clone that has fetched nothing yet is consistent too:
    // verify then says so, with exit 1, and finds nothing wrong)
    let r = env.receipt(dir, &["verify", "--json"]);
    let v: serde_json::Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{what}: {e}: {r}"));
    assert_eq!(v["findings"], serde_json::json!([]), "{what}: verify: {r}");
    assert!(
        r.code == 0 || !v["nothing_fetched"].is_null(),
        "{what}: verify: {r}"
    );
}

fn receipts(env: &Env, dir: &Path) -> usize {
    env.log_json(dir).len()
}

#[test]
fn each_failed_write_of_run_leaves_before_or_after_and_the_retry_records() {
    let env = Env::new();
    let Some(f) = faults(&env) else { return };
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    env.receipt_ok(&dir, &["run", "test"]);
    let n = f.count(&env, &dir, &["run", "docs"]);
    assert!(n >= 5, "run writes objects, refs and the index: {n}");
    let mut failed = 0;
    for k in points(n) {
        let before = receipts(&env, &dir);
        let errno = errno_for(k);
        let what = format!("run docs, write {k} of {n} failing with {errno}");
        let r = f.run(&env, &dir, &["run", "docs"], k, errno);
        assert_answer(&r, &what, errno);
        let after = receipts(&env, &dir);
        if r.code == 0 {
            assert_eq!(after, before + 1, "{what}: reported written: {r}");
        } else {
            failed += 1;
            assert!(
                after == before || after == before + 1,
                "{what}: {before} -> {after}"
            );
        }
        assert_consistent(&env, &dir, &what);
        // the retry records, and docs reads present
        env.receipt_ok(&dir, &["run", "docs"]);
        assert_eq!(
            env.status_of(&dir, None, "docs")["state"],
            "present",
            "{what}"
        );
    }
    assert!(failed > 0, "some injected write must make run fail");
}

#[test]
fn each_failed_write_of_reindex_and_of_a_checkpoint_keeps_every_answer() {
    let env = Env::new();
    let Some(f) = faults(&env) else { return };
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    env.receipt_ok(&dir, &["run", "test"]);
    env.receipt_ok(&dir, &["run", "docs"]);
    let expected = env.receipt_ok(&dir, &["status", "--json"]).stdout;

    let n = f.count(&env, &dir, &["reindex"]);
    for k in points(n) {
        let errno = errno_for(k);
        let what = format!("reindex, write {k} of {n} failing with {errno}");
        let r = f.run(&env, &dir, &["reindex"], k, errno);
        assert_answer(&r, &what, errno);
        if r.code == 2 {
            assert!(
                !r.stderr.contains("rebuilt the receipt index"),
                "{what}: {r}"
            );
        }
        assert_consistent(&env, &dir, &what);
        assert_eq!(
            env.receipt_ok(&dir, &["status", "--json"]).stdout,
            expected,
            "{what}: status is unchanged"
        );
        env.receipt_ok(&dir, &["reindex"]);
    }

    let cp = env.path("cp/checkpoint.json");
    std::fs::create_dir_all(cp.parent().unwrap()).unwrap();
    let cp_arg = cp.to_str().unwrap().to_owned();
    let args = ["verify", "--checkpoint", cp_arg.as_str()];
    let n = f.count(&env, &dir, &args);
    let good = std::fs::read(&cp).unwrap();
    for k in points(n) {
        let errno = errno_for(k);
        let what = format!("verify --checkpoint, write {k} of {n} failing with {errno}");
        env.receipt_ok(&dir, &["run", "docs"]);
        let r = f.run(&env, &dir, &args, k, errno);
        assert_answer(&r, &what, errno);
        let now = std::fs::read(&cp).unwrap();
        if r.code == 2 {
            assert_eq!(now, good, "{what}: a failed write keeps the old checkpoint");
        }
        let left: Vec<_> = std::fs::read_dir(cp.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n != "checkpoint.json")
            .collect();
        assert!(left.is_empty(), "{what}: no temporary file left: {left:?}");
        env.receipt_ok(&dir, &args);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&cp).unwrap()).unwrap();
        assert!(v.is_object(), "{what}: the retry writes a checkpoint");
    }
}

#[test]
fn each_failed_write_of_fetch_and_push_leaves_both_sides_consistent_and_the_retry_completes() {
    let env = Env::new();
    let Some(f) = faults(&env) else { return };
    let bare = env.path("server.git");
    env.git_ok(
        env.tmp.path(),
        &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
    );
    let url = format!("file://{}", bare.display());
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.git_ok(&dir, &["remote", "add", "origin", &url]);
    env.git_ok(&dir, &["push", "-q", "origin", "main"]);
    env.receipt_ok(&dir, &["init"]);
    env.receipt_ok(&dir, &["run", "test"]);

    // push: one new receipt each time
    env.receipt_ok(&dir, &["run", "docs"]);
    let n = f.count(&env, &dir, &["push"]);
    let mut failed = 0;
    for k in points(n.max(1)) {
        env.receipt_ok(&dir, &["run", "docs"]);
        let errno = errno_for(k);
        let what = format!("push, write {k} of {n} failing with {errno}");
        let r = f.run(&env, &dir, &["push"], k, errno);
        assert_answer(&r, &what, errno);
        failed += usize::from(r.code == 2);
        assert_consistent(&env, &dir, &what);
        let r = env.git(&bare, &["fsck", "--strict", "--no-dangling"]);
        assert_eq!(r.code, 0, "{what}: the server's fsck: {r}");
        env.receipt_ok(&dir, &["push"]);
    }
    let pushed = receipts(&env, &dir);

    // fetch: a fresh clone each time, so there is everything to fetch
    let fresh = |name: &str| {
        let c = env.path(name);
        let _ = std::fs::remove_dir_all(&c);
        env.git_ok(env.tmp.path(), &["clone", "-q", &url, c.to_str().unwrap()]);
        env.receipt_ok(&c, &["init", "--no-hooks"]);
        c
    };
    let c = fresh("count-clone");
    let n = f.count(&env, &c, &["fetch"]);
    assert!(n >= 2, "fetch writes refs and the index: {n}");
    for k in points(n) {
        let c = fresh("clone");
        let errno = errno_for(k);
        let what = format!("fetch, write {k} of {n} failing with {errno}");
        let r = f.run(&env, &c, &["fetch"], k, errno);
        assert_answer(&r, &what, errno);
        failed += usize::from(r.code == 2);
        assert_consistent(&env, &c, &what);
        let got = receipts(&env, &c);
        if r.code == 0 {
            assert_eq!(got, pushed, "{what}: reported fetched");
        }
        env.receipt_ok(&c, &["fetch"]);
        assert_eq!(
            receipts(&env, &c),
            pushed,
            "{what}: the retry fetches it all"
        );
    }
    assert!(
        failed > 0,
        "some injected write must make push or fetch fail"
    );
}
