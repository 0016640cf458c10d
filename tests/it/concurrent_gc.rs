//! Issue 25, items 1 and 2: receipts written while `git gc --prune=now` and
//! `git repack -ad` loop beside them. git documents that a prune may delete the
//! loose objects of a write in flight (they were unreachable when it listed
//! them); the writer must notice and write them again, the chain below must stay
//! reachable (reflogs), and a fan-out directory that a prune removed under a
//! writer's feet must not fail the write. At the end every receipt a writer
//! reported written is in `git receipt log`, `verify` passes and `git fsck
//! --strict` is clean.

use crate::common::{self, Env};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Writers racing on the one chain of one key, and receipts each writes. 16 x 5
/// is the case; on 2 cores the whole test takes 15 to 30 seconds.
///
/// One background thread loops `git gc --prune=now` then `git repack -ad`;
/// `CONCURRENT_GC_TOGETHER=1` runs them in two threads at once instead (two
/// repacks racing each other as well as the writers: harsher than git itself
/// is made for). `CONCURRENT_GC_KEEP=DIR` copies the repository there after the
/// race, to look at.
const WRITERS: usize = 16;
const EACH: usize = 5;

/// The short receipt ids (`sha256:` and 12 hex digits) a writer's stderr reports
/// as written (`... receipt sha256:0123456789ab (...)`).
fn reported_ids(said: &str) -> Vec<String> {
    said.lines()
        .filter(|l| l.starts_with("git-receipt: "))
        .filter_map(|l| {
            let at = l.find(", receipt sha256:")? + ", receipt ".len();
            Some(l[at..].split_whitespace().next()?.to_owned())
        })
        .collect()
}

/// Run `git args` in a loop until `stop`, counting the rounds.
fn loop_git(
    env: &Env,
    repo: &Path,
    rounds_of: &'static [&'static [&'static str]],
    stop: Arc<AtomicBool>,
    rounds: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<()> {
    let mut template = Command::new("git");
    env.seal(&mut template);
    let envs: Vec<(std::ffi::OsString, std::ffi::OsString)> = template
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
        .collect();
    let repo = repo.to_owned();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            for args in rounds_of {
                let _ = Command::new("git")
                    .env_clear()
                    .envs(envs.iter().map(|(k, v)| (k, v)))
                    .current_dir(&repo)
                    .args(*args)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
            rounds.fetch_add(1, Ordering::Relaxed);
        }
    })
}

#[test]
fn writers_racing_gc_prune_now_and_repack_lose_no_receipt() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["key", "generate"]);
    // the chain exists before the race, so a prune has something below the
    // write in flight to lose
    env.receipt_ok(&repo, &["record", "test", "--exit-code", "0"]);

    let stop = Arc::new(AtomicBool::new(false));
    let gc_rounds = Arc::new(AtomicUsize::new(0));
    let repack_rounds = Arc::new(AtomicUsize::new(0));
    let together = std::env::var_os("CONCURRENT_GC_TOGETHER").is_some();
    let loops = if together {
        vec![
            loop_git(
                &env,
                &repo,
                &[&["gc", "--prune=now", "--quiet"]],
                stop.clone(),
                gc_rounds.clone(),
            ),
            loop_git(
                &env,
                &repo,
                &[&["repack", "-ad", "-q"]],
                stop.clone(),
                repack_rounds.clone(),
            ),
        ]
    } else {
        vec![loop_git(
            &env,
            &repo,
            &[&["gc", "--prune=now", "--quiet"], &["repack", "-ad", "-q"]],
            stop.clone(),
            gc_rounds.clone(),
        )]
    };

    let bin = common::bin();
    let mut children = Vec::new();
    for p in 0..WRITERS {
        let mut cmd = Command::new("sh");
        env.seal(&mut cmd);
        let err = env.path(&format!("writer-{p}.stderr"));
        // half run the check, half record a result; a failed write is counted,
        // not fatal, so the figures below say how many were lost
        let one = if p % 2 == 0 {
            format!("'{}' run test", bin.display())
        } else {
            format!("'{}' record test --exit-code 0", bin.display())
        };
        cmd.current_dir(&repo).args([
            "-c",
            &format!(
                "i=0; while [ $i -lt {EACH} ]; do {one} >/dev/null 2>>'{}'; i=$((i+1)); done",
                err.display()
            ),
        ]);
        children.push(cmd.spawn().unwrap());
    }
    for mut c in children {
        c.wait().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for l in loops {
        l.join().unwrap();
    }
    // and one more prune after the race: what only an unreachable object kept
    // would go now
    let last_gc = env.git(&repo, &["gc", "--prune=now", "--quiet"]);

    let mut reported = Vec::new();
    let mut failures = Vec::new();
    let mut stderr_of = Vec::new();
    for p in 0..WRITERS {
        let said = std::fs::read_to_string(env.path(&format!("writer-{p}.stderr"))).unwrap();
        reported.extend(reported_ids(&said));
        stderr_of.push(said.clone());
        // everything a writer said beside its receipts (and the check's own
        // `to-stderr`) is a failure, with its causes and hints
        failures.extend(
            said.lines()
                .filter(|l| *l != "to-stderr" && !l.contains(", receipt sha256:"))
                .map(|l| format!("writer {p}: {l}")),
        );
    }
    let log = env.receipt(&repo, &["log", "--json"]);
    let present: BTreeSet<String> = if log.code == 0 {
        serde_json::from_str::<Vec<serde_json::Value>>(&log.stdout)
            .expect("log --json is JSON")
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    } else {
        BTreeSet::new()
    };
    let missing: Vec<&String> = reported
        .iter()
        .filter(|short| !present.iter().any(|id| id.starts_with(short.as_str())))
        .collect();
    let figures = format!(
        "{} of {} writes reported written, {} of them present in `git receipt log` \
         ({} receipts there with the one before the race); {} gc and {} repack rounds ran",
        reported.len(),
        WRITERS * EACH,
        reported.len() - missing.len(),
        present.len(),
        gc_rounds.load(Ordering::Relaxed),
        repack_rounds.load(Ordering::Relaxed),
    );
    eprintln!("concurrent_gc: {figures}");
    if let Some(keep) = std::env::var_os("CONCURRENT_GC_KEEP") {
        let _ = Command::new("cp").arg("-a").arg(&repo).arg(keep).status();
    }
    for f in failures.iter().take(12) {
        eprintln!("concurrent_gc: {f}");
    }
    assert_eq!(
        log.code, 0,
        "git receipt log after the race ({figures}): {log}"
    );
    // what the writer of a lost receipt said, and the chain's reflog: the
    // evidence of how it went
    let said_by: Vec<&String> = stderr_of
        .iter()
        .filter(|said| missing.iter().any(|m| said.contains(m.as_str())))
        .collect();
    let reflog = env.git(&repo, &["reflog", "show", "--all", "--format=%h %gs"]);
    // every rewind any writer saw or made (a restore's and a put-back's reflog
    // lines go with the broken entries they name, so the writers' words are the
    // record)
    let rewinds: Vec<String> = stderr_of
        .iter()
        .enumerate()
        .flat_map(|(p, said)| {
            said.lines()
                .filter(|l| {
                    l.contains("restored it from its reflog")
                        || l.contains("put back")
                        || l.contains(", receipt sha256:")
                        || l.contains("gc-still-running")
                        || l.contains("still running after")
                })
                .map(move |l| format!("writer {p}: {l}"))
                .collect::<Vec<_>>()
        })
        .collect();
    // What is promised (docs/format.md, "Concurrent git gc"): a receipt
    // reported written is in the chain, or a reader that found the chain's tip
    // pruned put it back below that receipt and said so (a `git repack -ad`
    // has no gc.pid to wait for, and a prune can still take a write's objects
    // after its last look: rare, and never silent). A loss no restore named is
    // a silent one, and fails; with CONCURRENT_GC_STRICT set, every loss does.
    let index_of = |short: &str| -> Option<u64> {
        stderr_of.iter().flat_map(|s| s.lines()).find_map(|l| {
            let rest = l.split(&format!("receipt {short} (")).nth(1)?;
            rest.split('#').nth(1)?.trim_end_matches(')').parse().ok()
        })
    };
    let restored_to: Vec<u64> = stderr_of
        .iter()
        .flat_map(|s| s.lines())
        .filter(|l| l.contains("restored it from its reflog"))
        .filter_map(|l| {
            l.split("its tip (index ")
                .nth(1)?
                .split(')')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    let silent: Vec<&&String> = missing
        .iter()
        .filter(|m| match index_of(m) {
            Some(i) => !restored_to.iter().any(|&r| r < i),
            None => true,
        })
        .collect();
    let strict = std::env::var_os("CONCURRENT_GC_STRICT").is_some();
    if !missing.is_empty() {
        eprintln!(
            "concurrent_gc: {} receipt(s) reported written were lost and named lost by a restore (to index {restored_to:?}): {missing:?}",
            missing.len()
        );
    }
    assert!(
        silent.is_empty() && (!strict || missing.is_empty()),
        "every receipt reported written is present, or a restore below it named it lost ({figures}); missing: {missing:?}, of them lost without a restore below them: {silent:?}; restores to {restored_to:?}\n\
         what its writer said:\n{}\nevery write, restore and put-back the writers reported:\n{}\nthe reflogs:\n{}",
        said_by
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n---\n"),
        rewinds.join("\n"),
        reflog.stdout
    );
    // A write may still fail while gc deletes what it wrote faster than it can
    // write it again; it then says so, and that nothing was stored. The message
    // of issue 25 item 2, which named no file, is gone.
    assert!(
        !failures
            .iter()
            .any(|f| f.contains("failed to persist") && !f.contains("could not write")),
        "a failed object write names its file and operation ({figures}):\n{}",
        failures.join("\n")
    );
    assert!(
        reported.len() >= WRITERS * EACH / 4,
        "most writes get through ({figures}):\n{}",
        failures.join("\n")
    );
    let verify = env.receipt(&repo, &["verify"]);
    assert_eq!(verify.code, 0, "git receipt verify: {verify}");
    let fsck = env.git(&repo, &["fsck", "--strict", "--no-dangling"]);
    assert_eq!(fsck.code, 0, "git fsck --strict: {fsck}");
    assert!(
        !fsck.stderr.contains("error") && !fsck.stderr.contains("missing"),
        "git fsck --strict says nothing wrong: {fsck}"
    );
    assert_eq!(
        last_gc.code, 0,
        "a last gc --prune=now after the race ({figures}): {last_gc}"
    );
}

/// The race the writers above once lost a receipt to: a reader finds a chain's
/// tip pruned, waits, and decides to put the ref back below it; meanwhile the
/// tip's writer writes the objects again, finds its entry whole and reports it
/// written. The reader decides under the ref's lock (which the writer holds for
/// its last look) and looks at the tip once more there, so it leaves a tip that
/// became whole alone; a tip that stays pruned it restores, saying so.
#[test]
fn a_reader_restores_no_tip_that_its_writer_made_whole_while_the_reader_decided() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["key", "generate"]);
    env.receipt_ok(&repo, &["record", "test", "--exit-code", "0"]);
    env.receipt_ok(&repo, &["record", "test", "--exit-code", "0"]);
    let writer = env.only_writer(&repo);
    let refname = format!("refs/receipts/{writer}");
    let before = env.git_ok(&repo, &["rev-parse", &refname]);
    env.receipt_ok(&repo, &["record", "test", "--exit-code", "0"]);
    let tip = env.git_ok(&repo, &["rev-parse", &refname]);
    // the tip's commit pruned, as a racing `git gc --prune=now` leaves it
    let object = repo.join(".git/objects").join(&tip[..2]).join(&tip[2..]);
    let bytes = std::fs::read(&object).unwrap();
    std::fs::remove_file(&object).unwrap();

    // a reader, held at the moment it has chosen the entry to go back to
    let decided = env.path("decided");
    let mut cmd = Command::new(common::bin());
    env.seal(&mut cmd);
    let reader = cmd
        .current_dir(&repo)
        .args(["log", "--json"])
        .env("GIT_RECEIPT_TEST_HOLD_AFTER", "restore-decided")
        .env("GIT_RECEIPT_TEST_PAUSE_FILE", &decided)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !decided.exists() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "the reader decided to restore"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // the writer writes its commit again (and would report it written)
    std::fs::write(&object, &bytes).unwrap();
    std::fs::remove_file(&decided).unwrap();
    let out = reader.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("restored it"), "{stderr}");
    assert_eq!(
        env.git_ok(&repo, &["rev-parse", &refname]),
        tip,
        "the tip its writer made whole stays: {stderr}"
    );
    let entries: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(entries.len(), 3, "{stderr}");

    // a tip whose writer never comes back is restored, and the reader says so
    std::fs::remove_file(&object).unwrap();
    let run = env.receipt(&repo, &["log", "--json"]);
    assert!(
        run.stderr
            .contains(&format!("restored it from its reflog to {before}")),
        "{run}"
    );
    assert_eq!(env.git_ok(&repo, &["rev-parse", &refname]), before);
}
