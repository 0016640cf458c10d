//! `git receipt verify` over 100,000 receipts, against the floor measured in the
//! same run: bare strict Ed25519 verification of the same 100,000 signatures.
//!
//! The chain (two writers of 50,000 receipts each, spread over 1,000 commits) is
//! written with `git fast-import` from bodies signed here, then notes are built with
//! `git receipt reindex`, and the repository is packed. `verify` runs as a whole
//! process; its peak memory comes from getrusage. Prints figures and ratios;
//! asserts nothing but that the repository verifies clean.
//!
//! Usage: cargo bench --bench verify [-- RECEIPTS ITERATIONS]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use git_receipt::receipt::{
    Body, Chain, Check, Kind, Mode, Outcome, Receipt, Runner, SCHEMA, Subject, Verified,
    definition_digest, format_timestamp, writer_id,
};
use git_receipt::sign::{SigningKey, verify};

fn git(dir: &Path, args: &[&str]) -> String {
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

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let total = args.first().copied().unwrap_or(100_000);
    let iterations = args.get(1).copied().unwrap_or(3);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // SAFETY: single-threaded here; these seal the child processes.
    unsafe {
        std::env::set_var("HOME", &home);
        std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        std::env::remove_var("XDG_CONFIG_HOME");
    }
    let repo = tmp.path().join("repo");
    git(
        tmp.path(),
        &["init", "-q", "-b", "main", repo.to_str().unwrap()],
    );
    let keys = [
        SigningKey::from_seed(&[11; 32]),
        SigningKey::from_seed(&[12; 32]),
    ];

    // history: 1,000 commits whose .gitreceipts trusts both keys
    let t = Instant::now();
    let mut contract = String::from("[check \"test\"]\n\trun = cargo test\n\trequired = true\n");
    for (i, k) in keys.iter().enumerate() {
        contract.push_str(&format!(
            "[signer \"w{i}\"]\n\tkey = {}\n",
            k.public().to_openssh()
        ));
    }
    let mut s = Vec::new();
    for i in 0..1000u64 {
        write!(
            s,
            "commit refs/heads/main\nmark :{}\ncommitter B <b@x> {} +0000\ndata 2\nc\n",
            i + 1,
            1_700_000_000 + i
        )
        .unwrap();
        if i == 0 {
            writeln!(
                s,
                "M 100644 inline .gitreceipts\ndata {}\n{contract}",
                contract.len()
            )
            .unwrap();
        } else {
            writeln!(s, "from :{i}").unwrap();
        }
        let body = format!("v{i}\n");
        writeln!(
            s,
            "M 100644 inline src/f{}.rs\ndata {}\n{body}",
            i % 50,
            body.len()
        )
        .unwrap();
    }
    fast_import(&repo, &s);
    let marks = std::fs::read_to_string(repo.join(".git/marks")).unwrap();
    let mut commits: Vec<(String, String)> = Vec::new(); // (commit, tree)
    for line in marks.lines() {
        let id = line.split_once(' ').unwrap().1.to_owned();
        let tree = git(&repo, &["rev-parse", &format!("{id}^{{tree}}")]);
        commits.push((id, tree));
    }
    eprintln!(
        "history: 1,000 commits in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    // receipts: signed here, written as two chains with fast-import
    let t = Instant::now();
    let argv = vec!["sh".to_owned(), "-c".to_owned(), "cargo test".to_owned()];
    let definition = definition_digest(&argv, &[], &[]);
    let mut signed: Vec<Receipt<Verified>> = Vec::with_capacity(total);
    let mut s = Vec::new();
    let per_writer = total / keys.len();
    for (w, key) in keys.iter().enumerate() {
        let writer = writer_id(key.public(), "bench");
        let mut prev: Option<String> = None;
        for index in 0..per_writer as u64 {
            let (commit, tree) = &commits[(index as usize * 7 + w) % commits.len()];
            let body = Body {
                schema: SCHEMA.into(),
                kind: Kind::Check,
                chain: Chain {
                    writer: writer.clone(),
                    index,
                    prev: prev.clone(),
                },
                subject: Subject {
                    commit: commit.clone(),
                    tree: tree.clone(),
                    inputs: tree.clone(),
                    dirty: false,
                },
                check: Check {
                    name: "test".into(),
                    argv: argv.clone(),
                    definition: definition.clone(),
                    paths: vec![],
                    env: BTreeMap::new(),
                },
                result: Outcome {
                    mode: Mode::Run,
                    exit_code: 0,
                    passed: true,
                    started_at: format_timestamp(1_800_000_000_000 + index),
                    duration_ms: 1234,
                    stdout_tail: "test result: ok. 42 passed; 0 failed".into(),
                    stderr_tail: String::new(),
                    log: None,
                    output_bytes: 36,
                    log_truncated: false,
                    log_bytes: None,
                    log_sha256: None,
                    detail: String::new(),
                },
                runner: Runner {
                    tool: "bench".into(),
                    host: "bench".into(),
                    os: "linux-x86_64".into(),
                },
                supersedes: None,
            };
            let r = Receipt::sign(body, key).unwrap();
            prev = Some(r.id().to_owned());
            write!(s, "commit refs/receipts/{writer}\ncommitter git-receipt <git-receipt@localhost> {} +0000\ndata 8\nreceipt\n", 1_800_000_000 + index).unwrap();
            writeln!(s, "M 100644 inline receipt.json\ndata {}", r.bytes().len()).unwrap();
            s.extend_from_slice(r.bytes());
            s.push(b'\n');
            signed.push(r);
        }
    }
    fast_import(&repo, &s);
    drop(s);
    eprintln!(
        "receipts: {total} signed and written in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let bin = env!("CARGO_BIN_EXE_git-receipt");
    let t = Instant::now();
    let out = Command::new(bin)
        .current_dir(&repo)
        .arg("reindex")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Pack the way pack-objects packs what arrives by `git fetch` or loose objects by
    // `git gc`: newest objects whole, older ones as deltas (depth 50). fast-import's
    // own pack deltifies the other way round (each receipt against the one before),
    // which no clone or gc produces, and which defeats delta-base caching.
    git(&repo, &["repack", "-adfq", "--depth=50", "--window=10"]);
    eprintln!("notes + repack: {:.1}s", t.elapsed().as_secs_f64());

    // the floor: strict verification of the same signatures, one core, in process
    let t = Instant::now();
    for r in &signed {
        let key = if r
            .body()
            .chain
            .writer
            .ends_with(&writer_id(keys[0].public(), "x")[2..])
        {
            &keys[0]
        } else {
            &keys[1]
        };
        verify(key.public(), r.body_bytes(), &r.raw_signature()).expect("valid");
    }
    let floor = t.elapsed().as_secs_f64();
    drop(signed);

    let mut best = f64::MAX;
    let mut peak_kib = 0i64;
    let mut peak_anon_kib = 0i64;
    for _ in 0..iterations {
        let t = Instant::now();
        let mut child = Command::new(bin)
            .current_dir(&repo)
            .args(["verify", "--trust", "main", "--json"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        // Sample /proc while it runs: VmHWM is the peak resident set of the verify
        // process itself (reset at exec, so the bench's own memory, which a forked
        // child shares until exec and getrusage would count, is left out);
        // RssAnon is its heap, without the mapped pack files.
        let pid = child.id();
        let sampler = std::thread::spawn(move || {
            let (mut hwm, mut anon) = (0i64, 0i64);
            while let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                if status.contains("State:\tZ") {
                    break;
                }
                let field = |name: &str| {
                    status
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
                        .unwrap_or(0)
                };
                // before exec the child is still a copy of this bench: skip that
                if status.lines().next() == Some("Name:\tgit-receipt") {
                    hwm = hwm.max(field("VmHWM:"));
                    anon = anon.max(field("RssAnon:"));
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            (hwm, anon)
        });
        let mut stdout = Vec::new();
        std::io::Read::read_to_end(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
        let (max_rss_kib, anon_kib) = sampler.join().unwrap();
        let code = child.wait().unwrap().code().unwrap_or(-1);
        peak_anon_kib = peak_anon_kib.max(anon_kib);
        best = best.min(t.elapsed().as_secs_f64());
        assert_eq!(code, 0, "verify exits 0");
        let v: serde_json::Value = serde_json::from_slice(&stdout).expect("verify --json");
        assert_eq!(v["ok"], true, "the generated repository verifies clean");
        assert_eq!(v["receipts"], total as u64);
        peak_kib = peak_kib.max(max_rss_kib);
    }
    println!(
        "receipts: {total} in 2 chains over 1,000 commits (packed), notes on commits and trees"
    );
    println!(
        "{:<52} {:>8.2} s",
        "floor: strict Ed25519 verify of the signatures (1 core)", floor
    );
    println!(
        "{:<52} {:>8.2} s   (best of {iterations})",
        "git receipt verify --trust main (whole process)", best
    );
    println!(
        "{:<52} {:>8.2}x   (target within 2x)",
        "ratio verify / floor",
        best / floor
    );
    println!(
        "{:<52} {:>8.1} MB   (target < 200 MB)",
        "peak memory of verify (VmHWM, incl. mapped packs)",
        peak_kib as f64 / 1024.0
    );
    println!(
        "{:<52} {:>8.1} MB",
        "peak heap of verify (RssAnon, sampled)",
        peak_anon_kib as f64 / 1024.0
    );
    let pack_bytes: u64 = std::fs::read_dir(repo.join(".git/objects/pack"))
        .unwrap()
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "{:<52} {:>8.1} MB",
        "size of the pack files",
        pack_bytes as f64 / 1048576.0
    );
    if std::env::var_os("BENCH_KEEP").is_some() {
        eprintln!("kept: {}", tmp.keep().display());
        return;
    }
    println!(
        "{:<52} {:>8}",
        "cores available",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
}

fn fast_import(repo: &Path, stream: &[u8]) {
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
