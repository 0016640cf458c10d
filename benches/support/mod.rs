//! What the benchmarks share: git as a child process, `git fast-import` with its
//! marks, and timing. Each bench includes it with `mod support;`.
#![allow(dead_code)] // each bench uses what it needs

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// `git args` in `dir`, which must succeed; its stdout, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Feed `stream` to `git fast-import` in `repo`, keeping its marks in `.git/marks`
/// (read back first, so one stream may name what an earlier one wrote).
pub fn fast_import(repo: &Path, stream: &[u8]) {
    let mut fi = Command::new("git")
        .current_dir(repo)
        .args([
            "fast-import",
            "--quiet",
            "--export-marks=.git/marks",
            "--import-marks-if-exists=.git/marks",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    fi.stdin.take().unwrap().write_all(stream).unwrap();
    assert!(fi.wait().unwrap().success());
}

/// The object ids of marks `:1` to `:n` in `repo`'s `.git/marks`, in mark order
/// (marks above `n` are left out).
pub fn marks(repo: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(repo.join(".git/marks")).unwrap();
    let mut ids = vec![String::new(); n];
    for line in text.lines() {
        let (m, id) = line.split_once(' ').unwrap();
        let m: usize = m[1..].parse().unwrap();
        if (1..=n).contains(&m) {
            ids[m - 1] = id.to_owned();
        }
    }
    ids
}

/// The median wall time of `iterations` runs of `f`, in milliseconds.
pub fn median_ms(iterations: usize, mut f: impl FnMut()) -> f64 {
    let mut samples: Vec<f64> = (0..iterations)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    samples[samples.len() / 2]
}
