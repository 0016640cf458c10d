//! How much slower a hooked bare `git push` is than a plain one over a local
//! transport (issue 27): with a receipt to send, and with nothing to send.
//!
//! The state is a user's: a server (a bare repository reached as `file://...`, so
//! git runs its real transport, `git-receive-pack` and all) with git-receipt's
//! server hook (`git receipt install-hooks --server --protect main`), and a real
//! `git clone` of it set up with `git receipt init` (fetch refspecs and the
//! pre-push hook; no push refspecs, the default, so a hooked push sends the
//! receipts in a push of their own, first). `.gitreceipts` declares one required
//! check, `test` (`test -f src/lib.rs`, inputs `src`), and trusts the one signer,
//! whose key `git receipt key generate` made in the bench's own HOME. The clone's
//! refs are loose (or packed by the clone), new objects loose, no commit-graph:
//! nothing here runs gc. The binary is the release build, first on PATH.
//!
//! Each round, in an order that turns between rounds so the machine's noise falls
//! on each case:
//!
//! - **plain**: a commit that changes `src`, `git receipt run test` and `git
//!   receipt push` (not timed), then `git push --no-verify`. Its receipt is on the
//!   server before the branch, so the server hook judges and accepts the branch
//!   exactly as it does the hooked case's branch: the server does the same work
//!   for the branch in both, and the baseline is a push git-receipt does not slow.
//! - **hooked, a receipt to send**: a commit that changes `src`, `git receipt run
//!   test` (not timed), then a bare `git push`: the pre-push hook gates the commit,
//!   pushes the receipt (a second connection, with its own server-hook run), and
//!   git pushes the branch.
//! - **hooked, nothing to send**: a commit that changes only `README` (the receipt
//!   of its `src` is on the server already), a bare `git push`: the hook gates it
//!   and finds nothing to send.
//! - **hooked, a receipt to send, push refspecs**: the same as the second case
//!   from a second clone set up with `git receipt init --push-refspecs` (its own
//!   chain, `receipt.chain = one`, under the same key): a bare `git push` sends
//!   branch, chain and notes in one push, and the hook only gates.
//!
//!
//! And two floors, each measured in the same run and printed beside the case it
//! bounds, so the table says how much of each ratio any hook must pay:
//!
//! - **an empty hook, nothing to send**: a third clone, without git-receipt,
//!   whose pre-push hook is `#!/bin/sh` and `exit 0`, pushes a commit that
//!   changes only `README`: what git pays to start any pre-push hook at all.
//! - **two plain pushes, a receipt to send**: a commit that changes `src`, `git
//!   receipt run test` (not timed), then, timed together, `git push
//!   --no-verify` of the receipt refs (the chain and its notes, as the hook
//!   sends them) and `git push --no-verify` of the branch: what any pre-push
//!   hook that sends the receipts in a push of their own must pay (git's
//!   pre-push hook cannot add refs to the push it runs in, and the server hook
//!   judges the branch by receipts it already holds).
//!
//! Before each case the clone it runs in takes the server's `main` (not timed),
//! so that every push is a fast-forward of what the other clone pushed.
//! The first round warms the caches and is not counted. Each figure is the median
//! wall time of the whole `git push` process and, beside it, the median CPU time
//! (user + system) of it and every process it ran (the reaped children's rusage:
//! the hook, git-receipt, the local transport's `git-receive-pack` and the server
//! hook). Prints a table; asserts nothing about time, only that every push
//! succeeded (a refused push panics with git's stderr and is never timed).
//!
//! Usage: cargo bench --bench prepush [-- ROUNDS]   (default 9); with
//! GIT_RECEIPT_BENCH_KEEP set, the repositories are kept (for a profiler).

#[path = "../tests/it/common/mod.rs"]
#[allow(unused_imports)]
mod common;

use std::path::Path;
use std::time::Instant;

use common::Env;

/// What one timed push took: wall and CPU (its own and its children's), in ms.
#[derive(Clone, Copy)]
struct Took {
    wall: f64,
    cpu: f64,
}

/// User + system time of this process's reaped children so far, in ms.
fn children_cpu_ms() -> f64 {
    // SAFETY: getrusage writes one rusage struct, which lives on this stack.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// `git args` in `dir`, timed; panics with git's output unless it succeeded.
fn timed(env: &Env, dir: &Path, args: &[&str]) -> Took {
    let cpu = children_cpu_ms();
    let start = Instant::now();
    let r = env.git(dir, args);
    let wall = start.elapsed().as_secs_f64() * 1000.0;
    let cpu = children_cpu_ms() - cpu;
    assert_eq!(r.code, 0, "git {args:?} failed: {r}");
    Took { wall, cpu }
}

fn commit(env: &Env, dir: &Path, path: &str, text: &str) {
    std::fs::write(dir.join(path), text).unwrap();
    env.git_ok(dir, &["commit", "-qam", "change"]);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[derive(Clone, Copy)]
enum Case {
    Plain,
    Send,
    Nothing,
    SendOne,
    EmptyHook,
    TwoPushes,
}

/// Two timings as one: the wall and CPU of both.
fn both(a: Took, b: Took) -> Took {
    Took {
        wall: a.wall + b.wall,
        cpu: a.cpu + b.cpu,
    }
}

/// Take the server's `main` into `dir`'s, as a pull would.
fn sync(env: &Env, dir: &Path) {
    env.git_ok(dir, &["fetch", "-q", "origin", "main"]);
    env.git_ok(dir, &["reset", "-q", "--hard", "FETCH_HEAD"]);
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(9)
        .max(1);
    let env = Env::new();

    // the served history: `.gitreceipts` with one required check and its signer
    let seed = env.path("seed");
    env.git_ok(
        env.tmp.path(),
        &["init", "-q", "-b", "main", seed.to_str().unwrap()],
    );
    std::fs::create_dir_all(seed.join("src")).unwrap();
    std::fs::write(seed.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(seed.join("README"), "read me\n").unwrap();
    std::fs::write(
        seed.join(".gitreceipts"),
        "[check \"test\"]\n\trun = test -f src/lib.rs\n\tpath = src\n\trequired = true\n",
    )
    .unwrap();
    let key = env.receipt_ok(&seed, &["key", "generate"]).stdout;
    env.git_ok(
        &seed,
        &["config", "-f", ".gitreceipts", "signer.me.key", key.trim()],
    );
    env.git_ok(&seed, &["add", "-A"]);
    env.git_ok(&seed, &["commit", "-qm", "initial"]);

    let server = env.path("server.git");
    env.git_ok(
        env.tmp.path(),
        &["clone", "-q", "--bare", "seed", "server.git"],
    );
    env.receipt_ok(&server, &["install-hooks", "--server", "--protect", "main"]);
    let url = format!("file://{}", server.display());
    env.git_ok(env.tmp.path(), &["clone", "-q", &url, "clone"]);
    let a = env.path("clone");
    env.receipt_ok(&a, &["init"]);
    env.git_ok(env.tmp.path(), &["clone", "-q", &url, "clone-one"]);
    let b = env.path("clone-one");
    env.git_ok(&b, &["config", "receipt.chain", "one"]);
    env.receipt_ok(&b, &["init", "--push-refspecs"]);
    // the floor of any pre-push hook: git-receipt nowhere in it
    env.git_ok(env.tmp.path(), &["clone", "-q", &url, "clone-empty-hook"]);
    let c = env.path("clone-empty-hook");
    let hook = c.join(".git/hooks/pre-push");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    let mut mode = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&hook, mode).unwrap();

    let order = [
        Case::Plain,
        Case::Send,
        Case::Nothing,
        Case::SendOne,
        Case::EmptyHook,
        Case::TwoPushes,
    ];
    let mut took: [Vec<Took>; 6] = Default::default();
    // the clone each case pushes from
    let dir_of = |case: Case| match case {
        Case::SendOne => &b,
        Case::EmptyHook => &c,
        _ => &a,
    };
    for i in 0..=rounds {
        for k in 0..order.len() {
            let case = order[(i + k) % order.len()];
            sync(&env, dir_of(case));
            let t = match case {
                Case::Plain => {
                    commit(&env, &a, "src/lib.rs", &format!("pub fn p{i}() {{}}\n"));
                    env.receipt_ok(&a, &["run", "test"]);
                    env.receipt_ok(&a, &["push"]);
                    timed(&env, &a, &["push", "-q", "--no-verify"])
                }
                Case::Send => {
                    commit(&env, &a, "src/lib.rs", &format!("pub fn s{i}() {{}}\n"));
                    env.receipt_ok(&a, &["run", "test"]);
                    timed(&env, &a, &["push", "-q"])
                }
                Case::Nothing => {
                    commit(&env, &a, "README", &format!("round {i}\n"));
                    timed(&env, &a, &["push", "-q"])
                }
                Case::SendOne => {
                    commit(&env, &b, "src/lib.rs", &format!("pub fn o{i}() {{}}\n"));
                    env.receipt_ok(&b, &["run", "test"]);
                    timed(&env, &b, &["push", "-q"])
                }
                Case::EmptyHook => {
                    commit(&env, &c, "README", &format!("empty hook {i}\n"));
                    timed(&env, &c, &["push", "-q"])
                }
                Case::TwoPushes => {
                    commit(&env, &a, "src/lib.rs", &format!("pub fn t{i}() {{}}\n"));
                    env.receipt_ok(&a, &["run", "test"]);
                    let receipts = timed(
                        &env,
                        &a,
                        &[
                            "push",
                            "-q",
                            "--no-verify",
                            "origin",
                            "refs/receipts/*:refs/receipts/*",
                            "+refs/notes/receipts/*:refs/notes/receipts/*",
                        ],
                    );
                    both(receipts, timed(&env, &a, &["push", "-q", "--no-verify"]))
                }
            };
            // the first round warms caches and creates the chain on the server
            if i > 0 {
                took[case as usize].push(t);
            }
        }
    }
    // every receipt reached the server, and every branch push with it: the
    // server's main is the last pusher's, and each clone's chain is the server's
    let last = dir_of(order[(rounds + order.len() - 1) % order.len()]);
    assert_eq!(
        env.git_ok(&server, &["rev-parse", "main"]),
        env.git_ok(last, &["rev-parse", "main"])
    );
    for clone in [&a, &b] {
        let mine = env.git_ok(
            clone,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/receipts/",
            ],
        );
        for line in mine.lines() {
            let (name, id) = line.split_once(' ').unwrap();
            let theirs = env.git_ok(&server, &["rev-parse", name]);
            assert_eq!(theirs, id, "{name} reached the server");
        }
    }

    let med = |case: Case| median(took[case as usize].iter().map(|t| t.wall).collect());
    let base = med(Case::Plain);
    println!(
        "bare `git push` to a `file://` server with the server hook, median of {rounds} rounds"
    );
    println!("| case | median wall | median CPU | ratio to plain | target |");
    println!("|---|---:|---:|---:|---:|");
    for (case, name, target) in [
        (Case::Plain, "plain `git push --no-verify`", ""),
        (Case::Send, "hooked `git push`, a receipt to send", "1.5x"),
        (
            Case::TwoPushes,
            "floor: two plain pushes, the receipt's then the branch's",
            "",
        ),
        (Case::Nothing, "hooked `git push`, nothing to send", "1.1x"),
        (
            Case::EmptyHook,
            "floor: an empty `sh` pre-push hook, nothing to send",
            "",
        ),
        (
            Case::SendOne,
            "hooked `git push`, a receipt to send, push refspecs (one push)",
            "1.5x",
        ),
    ] {
        let v = &took[case as usize];
        let wall = med(case);
        let cpu = median(v.iter().map(|t| t.cpu).collect());
        println!(
            "| {name} | {wall:.1} ms | {cpu:.1} ms | {:.2}x | {target} |",
            wall / base
        );
    }
    println!(
        "\nabove its floor: a receipt to send {:.2}x two plain pushes; nothing to send {:.2}x an empty hook ({:.1} ms of git-receipt's own beyond it)",
        med(Case::Send) / med(Case::TwoPushes),
        med(Case::Nothing) / med(Case::EmptyHook),
        med(Case::Nothing) - med(Case::EmptyHook),
    );
    if std::env::var_os("GIT_RECEIPT_BENCH_KEEP").is_some() {
        let kept = env.tmp.keep();
        eprintln!("kept {}", kept.display());
    }
}
