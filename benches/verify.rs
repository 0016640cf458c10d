//! `git receipt verify` over 100,000 receipts, against the floor measured in the
//! same run: bare strict Ed25519 verification of the same 100,000 signatures. Also,
//! measured in the same run: linearity (the same repository shape with a tenth of
//! the receipts), and incremental CI (100 new receipts on top of the 100,000,
//! verified with the checkpoint the full run wrote, as a fraction of a full verify).
//!
//! The chain (two writers of 50,000 receipts each, spread over 1,000 commits) is
//! written with `git fast-import` from bodies signed here, then notes are built with
//! `git receipt reindex`, and the repository is packed. `verify` runs as a whole
//! process; its peak memory is sampled from /proc. Prints figures and ratios;
//! asserts nothing but that the repositories verify clean.
//!
//! Usage: cargo bench --bench verify [-- RECEIPTS ITERATIONS]

mod support;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use git_receipt::receipt::{
    Body, Chain, Check, Kind, Mode, Outcome, Receipt, Runner, SCHEMA, Subject, Verified,
    definition_digest, format_timestamp, writer_id,
};
use git_receipt::sign::{SigningKey, verify};
use support::{chain_entry, fast_import, git};

const BIN: &str = env!("CARGO_BIN_EXE_git-receipt");

/// A generated repository: 1,000 commits trusting two keys, and their chains.
struct Generated {
    tmp: tempfile::TempDir,
    repo: PathBuf,
    keys: [SigningKey; 2],
    /// (commit, tree), oldest first.
    commits: Vec<(String, String)>,
    /// Per writer: the next index and the id of its tip receipt.
    heads: [(u64, Option<String>); 2],
}

impl Generated {
    /// History only: 1,000 commits whose .gitreceipts trusts both keys.
    fn history() -> Generated {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        git(
            tmp.path(),
            &["init", "-q", "-b", "main", repo.to_str().unwrap()],
        );
        let keys = [
            SigningKey::from_seed(&[11; 32]),
            SigningKey::from_seed(&[12; 32]),
        ];
        let t = Instant::now();
        let mut contract =
            String::from("[check \"test\"]\n\trun = cargo test\n\trequired = true\n");
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
        let mut commits: Vec<(String, String)> = Vec::new();
        for line in marks.lines() {
            let id = line.split_once(' ').unwrap().1.to_owned();
            let tree = git(&repo, &["rev-parse", &format!("{id}^{{tree}}")]);
            commits.push((id, tree));
        }
        eprintln!(
            "history: 1,000 commits in {:.1}s",
            t.elapsed().as_secs_f64()
        );
        Generated {
            tmp,
            repo,
            keys,
            commits,
            heads: [(0, None), (0, None)],
        }
    }

    /// Sign `per_writer` receipts for each writer on top of its chain and write them
    /// with fast-import. Returns them.
    fn append(&mut self, per_writer: usize) -> Vec<Receipt<Verified>> {
        let argv = vec!["sh".to_owned(), "-c".to_owned(), "cargo test".to_owned()];
        let definition = definition_digest(&argv, &[], &[]);
        let mut signed: Vec<Receipt<Verified>> = Vec::with_capacity(per_writer * 2);
        let mut s = Vec::new();
        for (w, key) in self.keys.iter().enumerate() {
            let writer = writer_id(key.public(), "bench");
            let (mut index, mut prev) = self.heads[w].clone();
            for n in 0..per_writer {
                let (commit, tree) = &self.commits[(index as usize * 7 + w) % self.commits.len()];
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
                        dependencies: Vec::new(),
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
                        assertions: Vec::new(),
                        tests: None,
                    },
                    runner: Runner {
                        tool: "bench".into(),
                        host: "bench".into(),
                        os: "linux-x86_64".into(),
                    },
                    acceptance: None,
                    review: None,
                    supersedes: None,
                };
                let r = Receipt::sign(body, key).unwrap();
                // continue the chain this fast-import did not write
                let from = (n == 0 && index > 0).then(|| format!("refs/receipts/{writer}^0"));
                chain_entry(&mut s, &r, key.public(), from.as_deref(), None, index);
                prev = Some(r.id().to_owned());
                index += 1;
                signed.push(r);
            }
            self.heads[w] = (index, prev);
        }
        fast_import(&self.repo, &s);
        signed
    }

    /// Notes from the chains, by the tool itself.
    fn reindex(&self) {
        let out = Command::new(BIN)
            .current_dir(&self.repo)
            .arg("reindex")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Pack the way pack-objects packs what arrives by `git fetch` or loose objects
    /// by `git gc`: newest objects whole, older ones as deltas (depth 50).
    /// fast-import's own pack deltifies the other way round (each receipt against
    /// the one before), which no clone or gc produces, and which defeats delta-base
    /// caching.
    fn repack(&self) {
        git(
            &self.repo,
            &["repack", "-adfq", "--depth=50", "--window=10"],
        );
    }
}

/// A repository with `total` receipts, notes and packed; the receipts signed.
fn generate(total: usize) -> (Generated, Vec<Receipt<Verified>>) {
    let mut g = Generated::history();
    let t = Instant::now();
    let signed = g.append(total / 2);
    eprintln!(
        "receipts: {} signed and written in {:.1}s",
        signed.len(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    g.reindex();
    g.repack();
    eprintln!("notes + repack: {:.1}s", t.elapsed().as_secs_f64());
    (g, signed)
}

/// Strict verification of the same signatures, one core, in process.
fn floor(keys: &[SigningKey; 2], signed: &[Receipt<Verified>]) -> f64 {
    let t = Instant::now();
    for r in signed {
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
    t.elapsed().as_secs_f64()
}

/// Best wall time of `verify --trust main --json [extra]` over `iterations` runs,
/// with `before` run ahead of each (untimed), and the peak memory of the process.
struct Timing {
    best: f64,
    peak_kib: i64,
    peak_anon_kib: i64,
}

fn time_verify(
    repo: &Path,
    extra: &[&str],
    before: &dyn Fn(),
    receipts: u64,
    iterations: usize,
) -> Timing {
    let mut timing = Timing {
        best: f64::MAX,
        peak_kib: 0,
        peak_anon_kib: 0,
    };
    for _ in 0..iterations {
        before();
        let t = Instant::now();
        let mut child = Command::new(BIN)
            .current_dir(repo)
            .args(["verify", "--trust", "main", "--json"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
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
        timing.best = timing.best.min(t.elapsed().as_secs_f64());
        timing.peak_kib = timing.peak_kib.max(max_rss_kib);
        timing.peak_anon_kib = timing.peak_anon_kib.max(anon_kib);
        assert_eq!(code, 0, "verify exits 0");
        let v: serde_json::Value = serde_json::from_slice(&stdout).expect("verify --json");
        assert_eq!(v["ok"], true, "the generated repository verifies clean");
        assert_eq!(v["receipts"], receipts, "receipts checked");
    }
    timing
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let total = args.first().copied().unwrap_or(100_000);
    let iterations = args.get(1).copied().unwrap_or(3);
    let home = tempfile::tempdir().unwrap();
    // SAFETY: single-threaded here; these seal the child processes.
    unsafe {
        std::env::set_var("HOME", home.path());
        std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        std::env::remove_var("XDG_CONFIG_HOME");
    }

    let (mut big, signed) = generate(total);
    if std::env::var_os("GIT_RECEIPT_BENCH_KEEP").is_some() {
        // for profiling: leave the generated repository behind and say where
        eprintln!("kept {}", big.repo.display());
        let _ = std::mem::replace(&mut big.tmp, tempfile::tempdir().unwrap()).keep();
    }
    let floor = floor(&big.keys, &signed);
    drop(signed);
    let full = time_verify(&big.repo, &[], &|| {}, total as u64, iterations);

    // linearity: the same shape with a tenth of the receipts
    let (small, signed) = generate(total / 10);
    drop(signed);
    // a tenth of the time: three times the runs, so its best is as steady as the
    // full run's (a stray scheduler hiccup is a larger share of a short run)
    let tenth = time_verify(
        &small.repo,
        &[],
        &|| {},
        (total / 10) as u64,
        iterations * 3,
    );
    drop(small);

    // incremental CI: a clean run records the checkpoint; 100 receipts arrive
    let cp = big.tmp.path().join("checkpoint.json");
    let scratch = big.tmp.path().join("checkpoint-run.json");
    time_verify(
        &big.repo,
        &["--checkpoint", cp.to_str().unwrap()],
        &|| {},
        total as u64,
        1,
    );
    big.append(50);
    big.reindex();
    let incremental = time_verify(
        &big.repo,
        &["--checkpoint", scratch.to_str().unwrap()],
        // each run starts from the recorded checkpoint (a clean run moves it on)
        &|| {
            std::fs::copy(&cp, &scratch).unwrap();
        },
        100,
        iterations,
    );

    let w = 60;
    println!(
        "receipts: {total} in 2 chains over 1,000 commits (packed), notes on commits and trees"
    );
    println!(
        "{:<w$} {:>8.2} s",
        "floor: strict Ed25519 verify of the signatures (1 core)", floor
    );
    println!(
        "{:<w$} {:>8.2} s   (best of {iterations})",
        "git receipt verify --trust main (whole process)", full.best
    );
    println!(
        "{:<w$} {:>8.2}x   (target at most 1x)",
        "ratio verify / floor",
        full.best / floor
    );
    println!(
        "{:<w$} {:>8.2} s   (best of {})",
        format!("verify of {} receipts, same shape", total / 10),
        tenth.best,
        iterations * 3
    );
    println!(
        "{:<w$} {:>8.2}x   (target at most 10.5x)",
        "linearity: 10x the receipts takes",
        full.best / tenth.best
    );
    println!(
        "{:<w$} {:>8.2} s   (best of {iterations})",
        "verify --checkpoint, 100 new receipts on top", incremental.best
    );
    println!(
        "{:<w$} {:>7.1} %   (target under 10%)",
        "incremental / full verify",
        100.0 * incremental.best / full.best
    );
    println!(
        "{:<w$} {:>8.1} MB   (target < 200 MB)",
        "peak memory of verify (VmHWM, incl. mapped packs)",
        full.peak_kib as f64 / 1024.0
    );
    println!(
        "{:<w$} {:>8.1} MB",
        "peak heap of verify (RssAnon, sampled)",
        full.peak_anon_kib as f64 / 1024.0
    );
    let pack_bytes: u64 = std::fs::read_dir(big.repo.join(".git/objects/pack"))
        .unwrap()
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "{:<w$} {:>8.1} MB",
        "size of the pack files",
        pack_bytes as f64 / 1048576.0
    );
    println!(
        "{:<w$} {:>8}",
        "cores available",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    if std::env::var_os("BENCH_KEEP").is_some() {
        eprintln!("kept: {}", big.tmp.keep().display());
    }
}
