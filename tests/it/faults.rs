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
//! renames) are out of its reach: those points are covered by the crash tests of
//! durability.rs instead. It also counts and fails `fsync`/`fdatasync` and
//! `sync_file_range`, which git-receipt makes as `core.fsync` asks, and
//! `read`/`pread`/`readv` of regular files: every read of `status`, `gate`,
//! `show`, `log` and `verify` failed in turn gives the same answer or an error
//! naming the cause (exit 2), never another answer.

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
        self.run_op("write", env, dir, args, at, errno)
    }

    /// [`Faults::run`] for the calls `op` counts (`write`, `fsync`, `writeout`).
    fn run_op(
        &self,
        op: &str,
        env: &Env,
        dir: &Path,
        args: &[&str],
        at: usize,
        errno: &str,
    ) -> Run {
        let at = at.to_string();
        env.receipt_with(
            dir,
            args,
            &[
                ("LD_PRELOAD", self.so.to_str().unwrap()),
                ("FAULT_OP", op),
                ("FAULT_AT", &at),
                ("FAULT_ERRNO", errno),
                ("FAULT_COUNT", self.count_file.to_str().unwrap()),
            ],
        )
    }

    /// How many writes `git receipt args` makes (running it once, unharmed).
    fn count(&self, env: &Env, dir: &Path, args: &[&str]) -> usize {
        self.count_op("write", env, dir, args)
    }

    /// [`Faults::count`] for the calls `op` counts.
    fn count_op(&self, op: &str, env: &Env, dir: &Path, args: &[&str]) -> usize {
        let _ = std::fs::remove_file(&self.count_file);
        let r = self.run_op(op, env, dir, args, 0, "EIO");
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
    assert_reflogs_whole(env, dir, what);
}

/// Every line of every reflog git-receipt keeps (its chains' and notes') is a
/// whole entry: `<old> <new> <name> <<email>> <time> <zone>` and a message
/// after a tab. git skips a broken line without a word (so `fsck` passes), and
/// the entries gc keeps alive would be lost with it.
fn assert_reflogs_whole(env: &Env, dir: &Path, what: &str) {
    let git_dir = PathBuf::from(env.git_ok(dir, &["rev-parse", "--git-common-dir"]).trim());
    let git_dir = if git_dir.is_absolute() {
        git_dir
    } else {
        dir.join(git_dir)
    };
    let mut pending = vec![git_dir.join("logs/refs")];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let path = e.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                text.is_empty() || text.ends_with('\n'),
                "{what}: {} ends mid-line",
                path.display()
            );
            for line in text.lines() {
                let head = line.split('\t').next().unwrap_or_default();
                let words: Vec<&str> = head.split(' ').collect();
                let whole = words.len() >= 5
                    && [words[0], words[1]]
                        .iter()
                        .all(|w| w.len() == 40 && w.bytes().all(|b| b.is_ascii_hexdigit()))
                    && head.contains('<')
                    && head.contains('>')
                    && words[words.len() - 2].parse::<u64>().is_ok()
                    && words[words.len() - 1].len() == 5;
                assert!(
                    whole,
                    "{what}: a broken line in {}: {line:?}",
                    path.display()
                );
            }
        }
    }
}

/// The basic fixture repository, `init`ed, with a receipt of each of `checks`.
fn receipted_repo(env: &Env, checks: &[&str]) -> PathBuf {
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    for check in checks {
        env.receipt_ok(&dir, &["run", check]);
    }
    dir
}

fn receipts(env: &Env, dir: &Path) -> usize {
    env.log_json(dir).len()
}

/// `git receipt args` (a write of a receipt of check `docs`) with each of (up
/// to [`MAX_POINTS`] of) its `n` calls of kind `op` failing in turn: every
/// outcome is an answer, a success stored exactly one receipt, the repository
/// stays consistent and the retry records. `judge` sees each outcome with the
/// receipts before and after.
fn each_failed_call_of(
    env: &Env,
    f: &Faults,
    dir: &Path,
    (op, n): (&str, usize),
    args: &[&str],
    mut judge: impl FnMut(&Run, &str, usize, usize),
) {
    for k in points(n) {
        let before = receipts(env, dir);
        let errno = errno_for(k);
        let what = format!("{args:?}, {op} {k} of {n} failing with {errno}");
        let r = f.run_op(op, env, dir, args, k, errno);
        assert_answer(&r, &what, errno);
        let after = receipts(env, dir);
        if r.code == 0 {
            assert_eq!(after, before + 1, "{what}: reported written: {r}");
        }
        judge(&r, &what, before, after);
        assert_consistent(env, dir, &what);
        // the retry records, and docs reads present
        env.receipt_ok(dir, args);
        assert_eq!(
            env.status_of(dir, None, "docs")["state"],
            "present",
            "{what}"
        );
    }
}

/// [`each_failed_call_of`] `run docs`.
fn each_failed_call_of_run(
    env: &Env,
    f: &Faults,
    dir: &Path,
    op: &str,
    n: usize,
    judge: impl FnMut(&Run, &str, usize, usize),
) {
    each_failed_call_of(env, f, dir, (op, n), &["run", "docs"], judge);
}

#[test]
fn each_failed_write_of_run_leaves_before_or_after_and_the_retry_records() {
    let env = Env::new();
    let Some(f) = faults(&env) else { return };
    let dir = receipted_repo(&env, &["test"]);
    let n = f.count(&env, &dir, &["run", "docs"]);
    assert!(n >= 5, "run writes objects, refs and the index: {n}");
    let mut failed = 0;
    each_failed_call_of_run(&env, &f, &dir, "write", n, |r, what, before, after| {
        if r.code != 0 {
            failed += 1;
            assert!(
                after == before || after == before + 1,
                "{what}: {before} -> {after}"
            );
        }
    });
    assert!(failed > 0, "some injected write must make run fail");
}

#[test]
fn each_failed_write_of_reindex_and_of_a_checkpoint_keeps_every_answer() {
    let env = Env::new();
    let Some(f) = faults(&env) else { return };
    let dir = receipted_repo(&env, &["test", "docs"]);
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

/// The loose object files under `dir`'s objects directory.
fn loose_objects(env: &Env, dir: &Path) -> std::collections::BTreeSet<String> {
    let objects = PathBuf::from(
        env.git_ok(dir, &["rev-parse", "--git-path", "objects"])
            .trim(),
    );
    let objects = if objects.is_absolute() {
        objects
    } else {
        dir.join(objects)
    };
    let mut out = std::collections::BTreeSet::new();
    for fan in std::fs::read_dir(&objects).unwrap() {
        let fan = fan.unwrap();
        let name = fan.file_name().to_string_lossy().into_owned();
        if name.len() != 2 || !fan.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(fan.path()).unwrap() {
            out.insert(format!(
                "{name}{}",
                f.unwrap().file_name().to_string_lossy()
            ));
        }
    }
    out
}

#[test]
fn core_fsync_decides_what_run_flushes_as_git_does() {
    let env = Env::new();
    let Some(f) = faults(&env) else { return };
    let dir = receipted_repo(&env, &["test"]);
    // (fsync calls, writeout calls, new loose objects) of one `run docs` under
    // the given settings (`None`: unset)
    let measure = |settings: &[(&str, Option<&str>)]| {
        for (key, value) in settings {
            match value {
                Some(v) => env.git_ok(&dir, &["config", key, v]),
                None => {
                    let _ = env.git(&dir, &["config", "--unset", key]);
                    String::new()
                }
            };
        }
        let before = loose_objects(&env, &dir);
        let fsyncs = f.count_op("fsync", &env, &dir, &["run", "docs"]);
        let new = loose_objects(&env, &dir).difference(&before).count();
        let writeouts = f.count_op("writeout", &env, &dir, &["run", "docs"]);
        (fsyncs, writeouts, new)
    };
    let unset = [
        ("core.fsync", None),
        ("core.fsyncMethod", None),
        ("core.fsyncObjectFiles", None),
    ];
    // what git-receipt flushes whatever the settings: its own files (a run
    // may write none of them)
    let (none, none_w, _) = measure(&[("core.fsync", Some("none"))]);
    assert_eq!(none_w, 0);
    // git's default (committed,-loose-object) flushes neither loose objects nor
    // refs: what `git commit` does by default
    let (default, _, new) = measure(&unset);
    assert!(
        new >= 5,
        "a run writes its receipt, log, tree, commit, notes: {new}"
    );
    assert_eq!(default, none, "the default flushes no loose object or ref");
    // loose objects: each new one, and the directory naming it
    let (loose, _, new) = measure(&[("core.fsync", Some("loose-object"))]);
    assert_eq!(
        loose,
        none + 2 * new,
        "core.fsync=loose-object: {new} new objects"
    );
    let (committed, _, new) = measure(&[("core.fsync", Some("committed"))]);
    assert_eq!(committed, none + 2 * new, "core.fsync=committed");
    // the deprecated switch, with core.fsync unset
    let (legacy, _, new) = measure(&[
        ("core.fsync", None),
        ("core.fsyncObjectFiles", Some("true")),
    ]);
    assert_eq!(legacy, none + 2 * new, "core.fsyncObjectFiles=true");
    // references: the chain, notes and log refs and their reflogs, each with
    // its directory (at least the chain ref and its reflog)
    let (refs, _, _) = measure(&[
        ("core.fsyncObjectFiles", None),
        ("core.fsync", Some("reference")),
    ]);
    assert!(refs >= none + 4, "core.fsync=reference: {refs} vs {none}");
    let (all, _, new) = measure(&[("core.fsync", Some("all"))]);
    assert_eq!(all, refs + 2 * new, "core.fsync=all is both");
    let (minus, _, _) = measure(&[("core.fsync", Some("all,-reference,-loose-object"))]);
    assert_eq!(minus, none, "removing both leaves git-receipt's own files");
    // writeout-only: the kernel is asked to write back (sync_file_range), with
    // no full fsync beyond git-receipt's own files
    let (w_fsyncs, w_writeouts, _) = measure(&[
        ("core.fsync", Some("all")),
        ("core.fsyncMethod", Some("writeout-only")),
    ]);
    assert_eq!(
        w_fsyncs, none,
        "writeout-only makes no fsync of objects or refs"
    );
    assert!(w_writeouts >= 5 + 2, "{w_writeouts} writeouts");
    // an unknown component is ignored as git does, and named
    env.git_ok(&dir, &["config", "core.fsyncMethod", "fsync"]);
    env.git_ok(&dir, &["config", "core.fsync", "reference,bogus"]);
    let r = env.receipt_ok(&dir, &["run", "docs"]);
    assert!(
        r.stderr.contains("core.fsync component 'bogus'"),
        "an unknown component is named: {r}"
    );
}

#[test]
fn each_failed_fsync_of_run_under_core_fsync_all_stores_nothing_or_says_it_stored() {
    let env = Env::new();
    let Some(f) = faults(&env) else { return };
    let dir = receipted_repo(&env, &["test"]);
    env.git_ok(&dir, &["config", "core.fsync", "all"]);
    let n = f.count_op("fsync", &env, &dir, &["run", "docs"]);
    assert!(n >= 10, "objects, refs and the index: {n}");
    let (mut failed, mut warned) = (0, 0);
    each_failed_call_of_run(&env, &f, &dir, "fsync", n, |r, what, before, after| {
        if r.code == 0 && r.stderr.contains("was updated, but flushing") {
            warned += 1;
            let errno = if r.stderr.contains("No space left") {
                "ENOSPC"
            } else {
                "EIO"
            };
            assert!(
                says_why(r, errno),
                "{what}: the warning names the cause: {r}"
            );
        } else if r.code != 0 {
            failed += 1;
            // an object that could not be flushed is named, and no ref names it
            assert!(r.stderr.contains("could not flush"), "{what}: {r}");
            assert_eq!(after, before, "{what}: said nothing was stored: {r}");
        }
    });
    assert!(
        failed > 0,
        "a failed fsync of a new object must fail the run"
    );
    assert!(
        warned > 0,
        "a failed fsync of a moved ref must be a warning"
    );
}

/// `stdout` as an answer to compare: JSON without its `notices` (what a
/// command had to say on the way, such as "the receipt index could not be
/// read, so it was rebuilt in memory"), or the text as it is.
fn answer(stdout: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(stdout) {
        Ok(mut v) => {
            if let Some(o) = v.as_object_mut() {
                o.remove("notices");
            }
            v.to_string()
        }
        Err(_) => stdout.to_owned(),
    }
}

#[test]
fn each_failed_read_of_a_reading_command_is_an_error_never_another_answer() {
    let env = Env::new();
    let Some(f) = faults(&env) else { return };
    let dir = receipted_repo(&env, &["test", "docs"]);
    let mut failed = 0;
    for args in [
        &["status", "--json"][..],
        &["gate"],
        &["gate", "--json"],
        &["show", "--json", "HEAD"],
        &["log", "--json"],
        &["verify", "--json"],
    ] {
        let base = env.receipt(&dir, args);
        assert!(base.code == 0 || base.code == 1, "{args:?}: {base}");
        let n = f.count_op("read", &env, &dir, args);
        assert!(n >= 10, "{args:?} reads HEAD, refs, objects, the key: {n}");
        for k in points(n) {
            let what = format!("{args:?}, read {k} of {n} failing with EIO");
            let r = f.run_op("read", &env, &dir, args, k, "EIO");
            if r.code == base.code && answer(&r.stdout) == answer(&base.stdout) {
                continue;
            }
            // anything else is an error that says why: never a verdict, an
            // "untrusted", a "missing" or "not a git repository" that a file
            // which could not be read made up
            failed += 1;
            assert_eq!(r.code, 2, "{what}: another answer: {r}\nwas: {base}");
            assert!(
                says_why(&r, "EIO"),
                "{what}: the error names the cause: {r}"
            );
            assert!(!r.stderr.contains("not a git repository"), "{what}: {r}");
        }
    }
    assert!(failed > 0, "some injected read must make a command fail");
}

#[test]
fn each_failed_write_of_record_leaves_before_or_after_and_the_retry_records() {
    let env = Env::new();
    let Some(f) = faults(&env) else { return };
    let dir = receipted_repo(&env, &["test"]);
    // a result produced elsewhere, its log outside the work tree
    let log = env.path("docs.log");
    std::fs::write(&log, "built the docs\n").unwrap();
    let log = log.to_str().unwrap();
    let args = ["record", "docs", "--exit-code", "0", "--log", log];
    let n = f.count(&env, &dir, &args);
    assert!(n >= 5, "record writes objects, refs and the index: {n}");
    let mut failed = 0;
    each_failed_call_of(
        &env,
        &f,
        &dir,
        ("write", n),
        &args,
        |r, what, before, after| {
            if r.code != 0 {
                failed += 1;
                assert!(
                    after == before || after == before + 1,
                    "{what}: {before} -> {after}"
                );
            }
        },
    );
    assert!(failed > 0, "some injected write must make record fail");
}
