//! The ancestry walk in the state a clone is in (issue 27): loose objects and
//! refs, no commit-graph, a merge every ten commits. Each row is timed against
//! a baseline of stock git over the same commits, in the same run:
//!
//! - `gate` with a receipt 1,000 first-parent commits back (1,200 commits lie
//!   between), at the default `receipt.walkLimit` and at 100,000 (the lazy walk
//!   costs the distance, not the bound); baseline `git rev-list --count
//!   --first-parent` over those commits. The state each gets is printed too
//!   (stale, where walkLimit counted visited commits it read missing).
//! - `status A..B` and `report A..B` over the 1,000 first-parent commits (1,200
//!   in all) with checks that never ran; baseline `git rev-list --parents` of
//!   the range plus the walk below it.
//!
//! The history is `tests/fixtures/make_merge_history_repo.sh`, its pack
//! unpacked into loose objects. Prints medians (wall and CPU of the child
//! processes) and ratios; asserts nothing. `GIT_RECEIPT_BENCH_BEFORE=<binary>`
//! times another build of git-receipt on the same rows (a before/after).
//!
//! Usage: cargo bench --bench walk [-- DEPTH ITERATIONS RANGE_ITERATIONS]

mod support;

use std::path::Path;
use std::process::Command;

use support::git;

/// CPU seconds (user + system) that finished child processes have used so far.
fn children_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

/// Median wall and CPU milliseconds of `iterations` runs of `cmd` in `dir`.
fn time(iterations: usize, dir: &Path, cmd: &[&str]) -> (f64, f64) {
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..iterations {
        let c0 = children_cpu_s();
        let t = std::time::Instant::now();
        let out = Command::new(cmd[0])
            .args(&cmd[1..])
            .current_dir(dir)
            .output()
            .expect("runs");
        wall.push(t.elapsed().as_secs_f64() * 1000.0);
        cpu.push((children_cpu_s() - c0) * 1000.0);
        assert!(
            out.status.code().is_some_and(|c| c < 2),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    (median(wall), median(cpu))
}

/// A merge-heavy history of `depth` first-parent commits, objects loose.
fn history(tmp: &Path, name: &str, depth: usize) -> std::path::PathBuf {
    let repo = tmp.join(name);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/make_merge_history_repo.sh");
    let st = Command::new("bash")
        .arg(script)
        .arg(&repo)
        .arg(depth.to_string())
        .status()
        .unwrap();
    assert!(st.success());
    // fast-import wrote one pack: unpack it, as objects are until a gc
    let pack_dir = repo.join(".git/objects/pack");
    let packs: Vec<_> = std::fs::read_dir(&pack_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for p in &packs {
        if p.extension().is_some_and(|e| e == "pack") {
            let moved = tmp.join(format!("{name}.pack"));
            std::fs::rename(p, &moved).unwrap();
            let st = Command::new("git")
                .args(["unpack-objects", "-q"])
                .current_dir(&repo)
                .stdin(std::fs::File::open(&moved).unwrap())
                .status()
                .unwrap();
            assert!(st.success());
        }
    }
    for p in &packs {
        let _ = std::fs::remove_file(p);
    }
    assert!(!repo.join(".git/objects/info/commit-graph").exists());
    repo
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let depth = args.first().copied().unwrap_or(1000);
    let iterations = args.get(1).copied().unwrap_or(7);
    let range_iterations = args.get(2).copied().unwrap_or(1);

    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let key = home.join("key");
    // SAFETY: single-threaded at this point; the variables seal the child processes.
    unsafe {
        std::env::set_var("HOME", &home);
        std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        std::env::remove_var("XDG_CONFIG_HOME");
        std::env::set_var("GIT_RECEIPT_SIGNING_KEY", &key);
        std::env::set_var("GIT_AUTHOR_NAME", "Bench");
        std::env::set_var("GIT_AUTHOR_EMAIL", "b@example.org");
        std::env::set_var("GIT_COMMITTER_NAME", "Bench");
        std::env::set_var("GIT_COMMITTER_EMAIL", "b@example.org");
    }
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(st.success());
    let bin = env!("CARGO_BIN_EXE_git-receipt");
    let before = std::env::var("GIT_RECEIPT_BENCH_BEFORE").ok();

    // 1. gate: a receipt `depth` first-parent commits back
    let gated = history(tmp.path(), "gated", depth);
    let root = format!("main~{depth}");
    git(&gated, &["checkout", "-q", &root]);
    let out = Command::new(bin)
        .args(["run", "test"])
        .current_dir(&gated)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    git(&gated, &["checkout", "-q", "main"]);
    let between = git(&gated, &["rev-list", "--count", &format!("{root}..main")]);
    let state = |b: &str| {
        let out = Command::new(b)
            .args(["status", "main", "--json"])
            .current_dir(&gated)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let row = v["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "test").cloned())
            .unwrap_or_default();
        format!(
            "{} ({})",
            row["state"].as_str().unwrap_or("?"),
            row["reason"].as_str().unwrap_or("")
        )
    };
    println!(
        "history: {depth} first-parent commits, {between} in all, a merge every 10; loose objects and refs, no commit-graph; machine loaded by other builds"
    );
    println!(
        "{:<58} {:>10} {:>10} {:>9}",
        "row", "wall ms", "cpu ms", "x base"
    );
    let fp_range = format!("{root}..main");
    let (bw, bc) = time(
        iterations,
        &gated,
        &["git", "rev-list", "--count", "--first-parent", &fp_range],
    );
    println!(
        "{:<58} {bw:>10.1} {bc:>10.1} {:>9}",
        "baseline: git rev-list --count --first-parent", "1.00"
    );
    let mut rows: Vec<(String, &str)> = vec![("gate (after) at walkLimit default".to_owned(), bin)];
    if let Some(b) = before.as_deref() {
        rows.push(("gate (before) at walkLimit default".to_owned(), b));
    }
    for (label, b) in &rows {
        let (w, c) = time(iterations, &gated, &[b, "gate", "main"]);
        println!("{label:<58} {w:>10.1} {c:>10.1} {:>9.2}", c / bc.max(0.001));
        println!("    state: {}", state(b));
    }
    git(&gated, &["config", "receipt.walkLimit", "100000"]);
    for (label, b) in &rows {
        let label = label.replace("default", "100,000");
        let (w, c) = time(iterations, &gated, &[b, "gate", "main"]);
        println!("{label:<58} {w:>10.1} {c:>10.1} {:>9.2}", c / bc.max(0.001));
        println!("    state: {}", state(b));
    }

    // 2. a range over the same shape of history, no check ever ran
    let bare = history(tmp.path(), "never", depth);
    let range = format!("main~{depth}..main");
    let (bw, bc) = time(iterations, &bare, &["git", "rev-list", "--parents", "main"]);
    println!(
        "{:<58} {bw:>10.1} {bc:>10.1} {:>9}",
        "baseline: git rev-list --parents (range + walk)", "1.00"
    );
    let page = tmp.path().join("report.html");
    let page = page.to_str().unwrap();
    for (label, b) in &rows {
        let who = if label.contains("before") {
            "before"
        } else {
            "after"
        };
        let (w, c) = time(range_iterations, &bare, &[b, "status", &range, "--json"]);
        println!(
            "{:<58} {w:>10.1} {c:>10.1} {:>9.1}",
            format!("status A..B ({who}), never ran"),
            c / bc.max(0.001)
        );
        let (w, c) = time(range_iterations, &bare, &[b, "report", &range, "-o", page]);
        println!(
            "{:<58} {w:>10.1} {c:>10.1} {:>9.1}",
            format!("report A..B ({who}), never ran"),
            c / bc.max(0.001)
        );
    }
}
