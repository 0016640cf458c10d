//! `git receipt verify` over 100,000 receipts (one core and every core), against
//! the floors measured in the same run: strict Ed25519 verification of the same
//! signatures one at a time, and in batches as `verify` checks them; and stock git
//! reading the objects verify reads (each entry's commit, tree and `receipt.json`,
//! `git cat-file --batch` on one core), since no verify can read them faster. Also,
//! measured in the same run: linearity (the same repository shape with a tenth of
//! the receipts: a tenth of each chain, or a tenth of the chains when they are
//! shorter than ten), and incremental CI (100 new receipts on top of the 100,000,
//! verified with the checkpoint the full run wrote, as a fraction of a full verify).
//!
//! The chains (100 writers by default, interleaved, over 1,000 commits) are
//! written with `git fast-import` from bodies signed here, then notes are built with
//! `git receipt reindex`, and the repository is packed. `verify` runs as a whole
//! process; its peak memory is sampled from /proc. Prints figures and ratios;
//! asserts nothing but that the repositories verify clean.
//!
//! Usage: cargo bench --bench verify [-- RECEIPTS ITERATIONS WRITERS]

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
use git_receipt::sign::{SigningKey, ToVerify, verify, verify_many};
use support::{chain_entry, fast_import, git};

const BIN: &str = env!("CARGO_BIN_EXE_git-receipt");

/// A generated repository: 1,000 commits trusting every writer's key, and their chains.
struct Generated {
    tmp: tempfile::TempDir,
    repo: PathBuf,
    keys: Vec<SigningKey>,
    /// (commit, tree), oldest first.
    commits: Vec<(String, String)>,
    /// Per writer: the next index and the id of its tip receipt.
    heads: Vec<(u64, Option<String>)>,
}

impl Generated {
    /// History only: 1,000 commits whose .gitreceipts trusts `writers` keys.
    fn history(writers: usize) -> Generated {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        git(
            tmp.path(),
            &["init", "-q", "-b", "main", repo.to_str().unwrap()],
        );
        let keys = support::seeded_keys(writers);
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
            heads: vec![(0, None); writers],
        }
    }

    /// Sign `per_writer` receipts for each writer on top of its chain, the chains
    /// interleaved (one receipt of each writer in turn, as a team writes them), and
    /// write them with fast-import, a slice at a time so the stream stays small.
    /// Returns, per receipt, its writer's position and the receipt.
    fn append(&mut self, per_writer: usize) -> Vec<(usize, Receipt<Verified>)> {
        let argv = vec!["sh".to_owned(), "-c".to_owned(), "cargo test".to_owned()];
        let definition = definition_digest(&argv, &[], &[]);
        let writers: Vec<String> = self
            .keys
            .iter()
            .map(|k| writer_id(k.public(), "bench"))
            .collect();
        let mut signed = Vec::with_capacity(per_writer * self.keys.len());
        // rounds per fast-import: some 20,000 receipts a stream
        let slice = (20_000 / self.keys.len()).max(1);
        let mut round = 0;
        while round < per_writer {
            let mut s = Vec::new();
            let mut continued = vec![false; self.keys.len()];
            for _ in round..(round + slice).min(per_writer) {
                for (w, key) in self.keys.iter().enumerate() {
                    let (index, prev) = self.heads[w].clone();
                    let r = Receipt::sign(
                        self.body(w, &writers[w], index, prev, &argv, &definition),
                        key,
                    )
                    .unwrap();
                    // continue the chain this fast-import did not write
                    let from = (!continued[w] && index > 0)
                        .then(|| format!("refs/receipts/{}^0", writers[w]));
                    continued[w] = true;
                    chain_entry(&mut s, &r, key.public(), from.as_deref(), None, index);
                    self.heads[w] = (index + 1, Some(r.id().to_owned()));
                    signed.push((w, r));
                }
            }
            fast_import(&self.repo, &s);
            round += slice;
        }
        signed
    }

    /// Receipt `index` of `writer`, for one of the generated commits.
    fn body(
        &self,
        w: usize,
        writer: &str,
        index: u64,
        prev: Option<String>,
        argv: &[String],
        definition: &str,
    ) -> Body {
        let (commit, tree) = &self.commits[(index as usize * 7 + w) % self.commits.len()];
        Body {
            schema: SCHEMA.into(),
            kind: Kind::Check,
            chain: Chain {
                writer: writer.to_owned(),
                index,
                prev,
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
                argv: argv.to_vec(),
                definition: definition.to_owned(),
                paths: vec![],
                env: BTreeMap::new(),
            },
            result: Outcome {
                mode: Mode::Run,
                exit_code: 0,
                passed: true,
                started_at: format_timestamp(1_700_000_000_000 + index),
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
                metrics: Vec::new(),
                artifacts: None,
                idempotency_key: None,
            },
            runner: Runner {
                tool: "bench".into(),
                host: "bench".into(),
                os: "linux-x86_64".into(),
            },
            acceptance: None,
            review: None,
            supersedes: None,
        }
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

/// A repository with `total` receipts in `writers` interleaved chains, notes and
/// packed; the receipts signed, each with its writer's position.
fn generate(total: usize, writers: usize) -> (Generated, Vec<(usize, Receipt<Verified>)>) {
    let mut g = Generated::history(writers);
    let t = Instant::now();
    let signed = g.append(total / writers);
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

/// Strict verification of the same signatures one at a time, one core, in process.
fn floor(keys: &[SigningKey], signed: &[(usize, Receipt<Verified>)]) -> f64 {
    let t = Instant::now();
    for (w, r) in signed {
        verify(keys[*w].public(), r.body_bytes(), &r.raw_signature()).expect("valid");
    }
    t.elapsed().as_secs_f64()
}

/// The same signatures checked together in batches of the size `verify` uses
/// (`verify_many`: a batch that accepts only what strict verification would), one
/// core, in process: the floor the issue holds `verify` to.
fn batch_floor(keys: &[SigningKey], signed: &[(usize, Receipt<Verified>)]) -> f64 {
    let signatures: Vec<[u8; 64]> = signed.iter().map(|(_, r)| r.raw_signature()).collect();
    let t = Instant::now();
    for (part, sigs) in signed.chunks(2048).zip(signatures.chunks(2048)) {
        let items: Vec<ToVerify<'_>> = part
            .iter()
            .zip(sigs)
            .map(|((w, r), sig)| ToVerify {
                key: keys[*w].public(),
                message: r.body_bytes(),
                signature: sig,
            })
            .collect();
        assert!(verify_many(&items).iter().all(Result::is_ok), "valid");
    }
    t.elapsed().as_secs_f64()
}

/// The other floor under `verify`: stock git reading exactly the objects verify
/// must read (each chain entry's commit, its tree and its `receipt.json`), chain
/// by chain in chain order, as one `git cat-file --batch` on one core: the best
/// wall time of `iterations` runs. Their ids are listed first, untimed.
fn read_floor(repo: &Path, iterations: usize) -> f64 {
    let chains = git(
        repo,
        &["for-each-ref", "--format=%(refname)", "refs/receipts/"],
    );
    let mut names = String::new();
    for chain in chains.lines() {
        for c in git(repo, &["rev-list", chain]).lines() {
            names.push_str(&format!("{c}\n{c}^{{tree}}\n{c}:receipt.json\n"));
        }
    }
    let ids = cat_file(repo, "--batch-check=%(objectname)", names.as_bytes());
    let mut best = f64::INFINITY;
    for _ in 0..iterations.max(1) {
        let t = Instant::now();
        let out = cat_file(repo, "--batch", &ids);
        best = best.min(t.elapsed().as_secs_f64());
        assert!(!out.is_empty());
    }
    best
}

/// `git cat-file OPTION` on one core, `input` on its stdin; its stdout.
fn cat_file(repo: &Path, option: &str, input: &[u8]) -> Vec<u8> {
    let mut child = Command::new("taskset")
        .args(["-c", "0", "git", "cat-file", option])
        .current_dir(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("taskset git cat-file");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(out.status.success(), "git cat-file {option}");
    out.stdout
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
    one_core: bool,
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
        // one core: pinned to CPU 0 (`available_parallelism` follows the affinity)
        let mut child = if one_core {
            let mut c = Command::new("taskset");
            c.args(["-c", "0", BIN]);
            c
        } else {
            Command::new(BIN)
        };
        let mut child = child
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
    let writers = args.get(2).copied().unwrap_or(100).clamp(1, total);
    let total = total / writers * writers;
    let home = tempfile::tempdir().unwrap();
    // SAFETY: single-threaded here; these seal the child processes.
    unsafe {
        std::env::set_var("HOME", home.path());
        std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        std::env::remove_var("XDG_CONFIG_HOME");
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);

    let (mut big, signed) = generate(total, writers);
    if std::env::var_os("GIT_RECEIPT_BENCH_KEEP").is_some() {
        // for profiling: leave the generated repository behind and say where
        eprintln!("kept {}", big.repo.display());
        let _ = std::mem::replace(&mut big.tmp, tempfile::tempdir().unwrap()).keep();
    }
    let strict = floor(&big.keys, &signed);
    let batch = batch_floor(&big.keys, &signed);
    drop(signed);
    let read = read_floor(&big.repo, iterations);
    let one = time_verify(&big.repo, true, &[], &|| {}, total as u64, iterations);
    let full = time_verify(&big.repo, false, &[], &|| {}, total as u64, iterations);

    // linearity: the same shape with a tenth of the receipts: a tenth of each
    // chain, or, with fewer than ten receipts a chain, a tenth of the chains
    // (a tenth of three receipts a chain was none: the run measured an empty
    // repository)
    let per_chain = total / writers;
    let (small_writers, small_per) = if per_chain >= 10 {
        (writers, per_chain / 10)
    } else {
        ((writers / 10).max(1), per_chain)
    };
    let small_total = small_writers * small_per;
    let (small, signed) = generate(small_total, small_writers);
    drop(signed);
    // a tenth of the time: three times the runs, so its best is as steady as the
    // full run's (a stray scheduler hiccup is a larger share of a short run)
    let tenth = time_verify(
        &small.repo,
        false,
        &[],
        &|| {},
        small_total as u64,
        iterations * 3,
    );
    drop(small);

    // incremental CI: a clean run records the checkpoint; 100 receipts arrive
    let cp = big.tmp.path().join("checkpoint.json");
    let scratch = big.tmp.path().join("checkpoint-run.json");
    time_verify(
        &big.repo,
        false,
        &["--checkpoint", cp.to_str().unwrap()],
        &|| {},
        total as u64,
        1,
    );
    let per = (100 / writers).max(1);
    big.append(per);
    big.reindex();
    let incremental = time_verify(
        &big.repo,
        false,
        &["--checkpoint", scratch.to_str().unwrap()],
        // each run starts from the recorded checkpoint (a clean run moves it on)
        &|| {
            std::fs::copy(&cp, &scratch).unwrap();
        },
        (per * writers) as u64,
        iterations,
    );

    let w = 64;
    let us = |secs: f64| 1e6 * secs / total as f64;
    println!(
        "receipts: {total} in {writers} interleaved chains over 1,000 commits (packed as a fetch or gc packs them, refs loose, no commit-graph), notes on commits and trees"
    );
    println!(
        "{:<w$} {:>8.2} s  {:>6.1} us/receipt",
        "floor: strict Ed25519 verify, one at a time (1 core)",
        strict,
        us(strict)
    );
    println!(
        "{:<w$} {:>8.2} s  {:>6.1} us/receipt",
        "floor: the same signatures in batches of 2,048 (1 core)",
        batch,
        us(batch)
    );
    println!(
        "{:<w$} {:>8.2} s  {:>6.1} us/receipt   (best of {iterations})",
        "git receipt verify --trust main, 1 core (whole process)",
        one.best,
        us(one.best)
    );
    println!(
        "{:<w$} {:>8.2}x   (target at most 1.5x)",
        "ratio verify (1 core) / batch floor",
        one.best / batch
    );
    println!(
        "{:<w$} {:>8.2}x",
        "ratio verify (1 core) / strict floor",
        one.best / strict
    );
    println!(
        "{:<w$} {:>8.2} s  {:>6.1} us/receipt   (best of {iterations})",
        "floor: git cat-file --batch of each entry's 3 objects (1 core)",
        read,
        us(read)
    );
    println!(
        "{:<w$} {:>8.2}x",
        "ratio verify (1 core) / (batch floor + read floor)",
        one.best / (batch + read)
    );
    println!(
        "{:<w$} {:>8.2} s  {:>6.1} us/receipt   (best of {iterations})",
        format!("git receipt verify --trust main, {cores} cores"),
        full.best,
        us(full.best)
    );
    println!(
        "{:<w$} {:>8.2} s   (best of {})",
        format!("verify of {small_total} receipts in {small_writers} chains, {cores} cores"),
        tenth.best,
        iterations * 3
    );
    println!(
        "{:<w$} {:>8.2}x   (target at most 10.5x)",
        format!(
            "linearity: {:.1}x the receipts takes",
            total as f64 / small_total as f64
        ),
        full.best / tenth.best
    );
    println!(
        "{:<w$} {:>8.2} s   (best of {iterations})",
        format!("verify --checkpoint, {} new receipts on top", per * writers),
        incremental.best
    );
    // the new receipts' share of all: 0.1% at the default shape; one a chain
    // at 10,000 writers of three is a quarter, and each brings a writer's
    // checks (its key, its notes) that a whole verify shares among its chain
    println!(
        "{:<w$} {:>7.1} %   (target under 10%; {:.1}% of the receipts are new)",
        "incremental / full verify",
        100.0 * incremental.best / full.best,
        100.0 * (per * writers) as f64 / (total + per * writers) as f64
    );
    println!(
        "{:<w$} {:>8.1} MB   (target < 200 MB)",
        "peak heap of verify (RssAnon, sampled)",
        one.peak_anon_kib.max(full.peak_anon_kib) as f64 / 1024.0
    );
    println!(
        "{:<w$} {:>8.1} MB",
        "peak resident set of verify (VmHWM, incl. mapped pack pages)",
        one.peak_kib.max(full.peak_kib) as f64 / 1024.0
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
    if std::env::var_os("BENCH_KEEP").is_some() {
        eprintln!("kept: {}", big.tmp.keep().display());
    }
}
