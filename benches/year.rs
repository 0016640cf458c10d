//! A year of a team (issue 30): RECEIPTS receipts from WRITERS writers over 365
//! days, a signed checkpoint at each month's end, and what a fresh clone pays
//! for them, each figure against its baseline measured in the same run.
//!
//! The server repository is generated in-process:
//!
//! - the branch: one commit per 10 receipts on `main` (git fast-import), each
//!   changing one of 256 files under `src/`, the first adding a `.gitreceipts`
//!   that requires check `test` (inputs `src`) and names every writer's key as a
//!   `[signer]`;
//! - the receipts: signed here, each by a writer drawn at random (a fixed seed),
//!   dated evenly over the year and about the newest commit made before it, written
//!   as chain entries with fast-import exactly as the store writes them;
//! - the checkpoints: the year starts and ends half-way through a month, so a
//!   month ends 12 times inside it, the newest 15 days before its end (a monthly
//!   checkpoint's average age). At each, the chains written so far are imported and
//!   writer 0's key signs a checkpoint of their tips (`checkpoint::marks` and
//!   `checkpoint::sign` on a `Store` opened on the server, dated at the month's end);
//! - then the server packs as a server's gc does (`git repack -adf`, `pack-refs`,
//!   a commit-graph). No notes are built on the server: a clone derives its own.
//!
//! Every git-receipt command runs as a whole process with its clock at the year's
//! end (`GIT_RECEIPT_TEST_NOW`). Clones fetch over `file://` through
//! `git upload-pack` (it packs, as a server does); the bytes received are what
//! upload-pack writes to the client, counted by this bench standing in between.
//! The clones run with `gc.auto=0`, so no background gc lands inside a later
//! timing; the `git gc --auto` a fetch starts in the background is run in the
//! foreground after the first gate, before verify (and timed apart). Their refs
//! stay loose, as users have them.
//!
//! Printed, each with its baseline:
//!
//! - packed bytes per receipt of the chains, of the notes the full clone derived
//!   (apart from the chains), and of the checkpoints, against the branches;
//! - a fresh clone: `git clone` (branches only: the baseline), then
//!   `git receipt fetch --since 90d`, bytes received and wall time as ratios to
//!   the clone; and a plain `git receipt fetch` in another fresh clone, against
//!   `git fetch` of the same chains into an empty repository (the transfer alone);
//! - the first `git receipt gate HEAD` after the `--since` fetch, against
//!   `git rev-parse HEAD` and `git notes show` of HEAD;
//! - `git receipt verify --since-checkpoint` in the `--since` clone (and in the
//!   full one), against a whole `git receipt verify` in the full clone: time
//!   and receipts checked, per receipt.
//!
//! Asserts only that every command exits 0 and every verify is clean; never a
//! timing.
//!
//! Usage: cargo bench --bench year [-- RECEIPTS WRITERS]  (default 1,000,000
//! receipts, 1,000 writers; `-- 20000 100` for a quick run). With
//! GIT_RECEIPT_BENCH_KEEP set, the directory is kept.

mod support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use git_receipt::checkpoint;
use git_receipt::receipt::{Receipt, definition_digest, format_timestamp, writer_id};
use git_receipt::sign::SigningKey;
use git_receipt::store::Store;
use gix::ObjectId;
use support::{BIN, chain_entry, check_body, fast_import, git, marks, pack_of, seeded_keys};

/// The year's end, the clock of every command: 2026-01-01T00:00:00Z.
const END_S: u64 = 1_767_225_600;
const DAY_MS: u64 = 86_400_000;
const YEAR_MS: u64 = 365 * DAY_MS;
const START_MS: u64 = END_S * 1000 - YEAR_MS;
/// Receipts per commit on `main`.
const RECEIPTS_PER_COMMIT: usize = 10;
/// Files under `src/`, 16 directories of 16.
const FILES: usize = 256;
/// Receipts per fast-import stream, at most.
const STREAM: usize = 20_000;
/// This bench re-run as the upload-pack in between: `<bench> FLAG <count file>
/// <upload-pack args>`.
const COUNT_FLAG: &str = "--count-upload-pack";

/// When month end `k` (0 to 11) falls: half a month in, then monthly.
fn month_end_ms(k: u64) -> u64 {
    START_MS + YEAR_MS / 24 + k * YEAR_MS / 12
}

/// The year as generated on the server.
struct Year {
    server: PathBuf,
    keys: Vec<SigningKey>,
    writers: Vec<String>,
    /// Per commit of `main`, oldest first: commit, tree, inputs tree (`src`).
    commits: Vec<(ObjectId, ObjectId, ObjectId)>,
    /// Receipts after each checkpoint, by checkpoint (0 to 11).
    after: Vec<u64>,
    /// The writer of the newest receipt (one on HEAD).
    last_writer: String,
}

/// The contract: check `test` on `src`, every key a signer.
fn contract(keys: &[SigningKey]) -> String {
    let mut c =
        String::from("[check \"test\"]\n\trun = cargo test\n\tpath = src\n\trequired = true\n");
    for (i, k) in keys.iter().enumerate() {
        c.push_str(&format!(
            "[signer \"w{i}\"]\n\tkey = {}\n",
            k.public().to_openssh()
        ));
    }
    c
}

/// A source file's text at commit `c`.
fn source(file: usize, c: usize) -> String {
    format!(
        "//! module {file}\n\npub fn value() -> u64 {{\n    // changed by commit {c}\n    {}\n}}\n\n#[cfg(test)]\nmod tests {{\n    #[test]\n    fn value_is_stable() {{\n        assert_eq!(super::value(), {});\n    }}\n}}\n",
        c * 31 + file,
        c * 31 + file
    )
}

/// `main`: `commits` commits dated evenly over the year, as marks `:1` on.
fn history(
    repo: &Path,
    keys: &[SigningKey],
    commits: usize,
) -> Vec<(ObjectId, ObjectId, ObjectId)> {
    let contract = contract(keys);
    let mut s = Vec::new();
    for c in 0..commits {
        let when = START_MS / 1000 + (c as u64 * YEAR_MS / commits as u64) / 1000;
        let msg = format!("change {c}\n");
        write!(
            s,
            "commit refs/heads/main\nmark :{}\ncommitter Dev <dev@example.org> {when} +0000\ndata {}\n{msg}",
            c + 1,
            msg.len()
        )
        .unwrap();
        let mut file = |path: String, body: String| {
            write!(s, "M 100644 inline {path}\ndata {}\n{body}\n", body.len()).unwrap();
        };
        if c == 0 {
            file(".gitreceipts".into(), contract.clone());
            for f in 0..FILES {
                file(
                    format!("src/m{:02}/f{:02}.rs", f / 16, f % 16),
                    source(f, 0),
                );
            }
        } else {
            let f = (c * 7919) % FILES;
            file(
                format!("src/m{:02}/f{:02}.rs", f / 16, f % 16),
                source(f, c),
            );
        }
    }
    fast_import(repo, &s);
    let store = Store::open(repo).unwrap();
    let paths = vec!["src".to_owned()];
    marks(repo, commits)
        .iter()
        .map(|id| {
            let commit = ObjectId::from_hex(id.as_bytes()).unwrap();
            let tree = store.commit_tree(commit).unwrap();
            let inputs = store.inputs_tree(tree, &paths, false).unwrap();
            (commit, tree, inputs)
        })
        .collect()
}

/// A fixed-seed xorshift: which writer signs each receipt.
struct Draw(u64);

impl Draw {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The chain tips on the server, by writer id.
fn chain_tips(repo: &Path) -> BTreeMap<String, String> {
    git(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname:lstrip=2) %(objectname)",
            "refs/receipts/",
        ],
    )
    .lines()
    .filter_map(|l| l.split_once(' '))
    .map(|(w, t)| (w.to_owned(), t.to_owned()))
    .collect()
}

/// Sign checkpoint `k` of every chain's tip as writer 0, dated at month end `k`.
fn sign_checkpoint(year: &Year, k: u64) {
    let store = Store::open(&year.server).unwrap();
    let (head, _) = store.head().unwrap();
    let (trust, _) = git_receipt::policy::trust::reader_trust(&store, head, None).unwrap();
    let marks = checkpoint::marks(&store, &chain_tips(&year.server), &trust).unwrap();
    assert!(
        marks.values().all(|m| m.trust.is_some()),
        "every chain trusted"
    );
    let signed = checkpoint::sign(
        &store,
        &year.keys[0],
        &year.writers[0],
        marks,
        month_end_ms(k),
    )
    .unwrap();
    assert_eq!(signed.payload.sequence, k);
}

/// Sign `total` receipts over the year and write them as chain entries, a
/// checkpoint at each month end; returns how many receipts follow each.
fn receipts(year: &mut Year, total: usize) -> Vec<u64> {
    let argv = vec!["sh".to_owned(), "-c".to_owned(), "cargo test".to_owned()];
    let definition = definition_digest(&argv, &["src".to_owned()], &[]);
    let n = year.writers.len();
    // per writer: next index, tip receipt id, written in the current stream
    let mut heads: Vec<(u64, Option<String>, bool)> = vec![(0, None, false); n];
    let mut draw = Draw(0x9E37_79B9_7F4A_7C15);
    let mut stream = Vec::new();
    let mut in_stream = 0;
    let mut next_checkpoint = 0u64;
    let mut at_checkpoint = [0u64; 12];
    let flush = |stream: &mut Vec<u8>, heads: &mut Vec<(u64, Option<String>, bool)>| {
        fast_import(&year.server, stream);
        stream.clear();
        for h in heads.iter_mut() {
            h.2 = false;
        }
    };
    for r in 0..total {
        let at_ms = START_MS + (r as u64 * YEAR_MS) / total as u64;
        while next_checkpoint < 12 && month_end_ms(next_checkpoint) <= at_ms {
            flush(&mut stream, &mut heads);
            in_stream = 0;
            sign_checkpoint(year, next_checkpoint);
            at_checkpoint[next_checkpoint as usize] = r as u64;
            next_checkpoint += 1;
        }
        let w = draw.next(n);
        let c = (r / RECEIPTS_PER_COMMIT).min(year.commits.len() - 1);
        let (commit, tree, inputs) = year.commits[c];
        let (index, prev, written) = heads[w].clone();
        let mut body = check_body(&year.writers[w], index, prev, commit, tree, inputs, 0);
        body.check.definition = definition.clone();
        body.check.argv = argv.clone();
        body.result.started_at = format_timestamp(at_ms);
        body.runner.host = format!("host-{w}");
        let receipt = Receipt::sign(body, &year.keys[w]).unwrap();
        let from = (!written && index > 0).then(|| format!("refs/receipts/{}^0", year.writers[w]));
        // the commit time is the receipt's (chain_entry counts from 1,700,000,000)
        chain_entry(
            &mut stream,
            &receipt,
            year.keys[w].public(),
            from.as_deref(),
            None,
            at_ms / 1000 - 1_700_000_000,
        );
        heads[w] = (index + 1, Some(receipt.id().to_owned()), true);
        year.last_writer = year.writers[w].clone();
        in_stream += 1;
        if in_stream == STREAM {
            flush(&mut stream, &mut heads);
            in_stream = 0;
        }
    }
    flush(&mut stream, &mut heads);
    while next_checkpoint < 12 {
        sign_checkpoint(year, next_checkpoint);
        at_checkpoint[next_checkpoint as usize] = total as u64;
        next_checkpoint += 1;
    }
    at_checkpoint.iter().map(|&a| total as u64 - a).collect()
}

/// Run as the upload-pack between a clone and the server: `git upload-pack ARGS`
/// with its stdout passed on and counted, the count appended to `file`.
fn count_upload_pack(file: &str, args: &[String]) -> i32 {
    let mut child = Command::new("git")
        .arg("upload-pack")
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("git upload-pack");
    let mut from = child.stdout.take().unwrap();
    let mut to = std::io::stdout().lock();
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        bytes += n as u64;
        if to.write_all(&buf[..n]).and_then(|_| to.flush()).is_err() {
            break;
        }
    }
    let code = child.wait().map(|s| s.code().unwrap_or(1)).unwrap_or(1);
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .unwrap();
    writeln!(out, "{bytes}").unwrap();
    code
}

/// The bytes upload-pack sent since the last call (the count file emptied).
fn take_count(file: &Path) -> u64 {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    std::fs::write(file, "").unwrap();
    text.lines().map(|l| l.trim().parse::<u64>().unwrap()).sum()
}

/// A whole `git-receipt` process in `dir`, which must exit 0: its stdout and
/// stderr, and wall time in ms.
fn receipt(dir: &Path, args: &[&str]) -> (String, String, f64) {
    let t = Instant::now();
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "git receipt {args:?} exited {:?}\n{stdout}\n{stderr}",
        out.status.code()
    );
    (stdout, stderr, ms)
}

/// A whole `git` process in `dir`, which must succeed: wall time in ms.
fn git_ms(dir: &Path, args: &[&str]) -> f64 {
    let t = Instant::now();
    git(dir, args);
    t.elapsed().as_secs_f64() * 1000.0
}

/// A fresh `git clone` of the server's branches into `dir` through the counting
/// upload-pack; bytes received and wall time.
fn clone(tmp: &Path, url: &str, upload_pack: &str, count: &Path, dir: &Path) -> (u64, f64) {
    let ms = git_ms(
        tmp,
        &[
            "clone",
            "-q",
            "--no-local",
            "--upload-pack",
            upload_pack,
            url,
            dir.to_str().unwrap(),
        ],
    );
    let bytes = take_count(count);
    git(dir, &["config", "remote.origin.uploadpack", upload_pack]);
    git(dir, &["config", "gc.auto", "0"]);
    (bytes, ms)
}

/// Entries of every chain present in `repo` (chains are disjoint).
fn entries(repo: &Path) -> u64 {
    git(repo, &["rev-list", "--count", "--glob=refs/receipts/"])
        .parse()
        .unwrap()
}

/// Loose objects in `repo` and their size on disk in KiB (`git count-objects`).
fn loose(repo: &Path) -> (u64, u64) {
    let out = git(repo, &["count-objects", "-v"]);
    let field = |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("count:"), field("size:"))
}

/// `verify --json ARGS` in `dir`, clean: receipts checked, the report, and ms.
fn verify(dir: &Path, args: &[&str]) -> (u64, serde_json::Value, f64) {
    let mut all = vec!["verify", "--json"];
    all.extend_from_slice(args);
    let (stdout, _, ms) = receipt(dir, &all);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["ok"], true, "verify {args:?} is clean: {v}");
    (v["receipts"].as_u64().unwrap(), v, ms)
}

fn refs(repo: &Path, prefix: &str) -> String {
    let mut out = git(repo, &["for-each-ref", "--format=%(refname)", prefix]);
    out.push('\n');
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(COUNT_FLAG) {
        std::process::exit(count_upload_pack(&args[2], &args[3..]));
    }
    let numbers: Vec<usize> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    let total = numbers.first().copied().unwrap_or(1_000_000);
    let writer_count = numbers.get(1).copied().unwrap_or(1_000).clamp(1, total);
    let commit_count = (total / RECEIPTS_PER_COMMIT).max(1);

    let tmp = tempfile::tempdir().unwrap();
    support::sealed_home(tmp.path());
    // SAFETY: single-threaded here; these reach every child.
    unsafe {
        std::env::set_var("GIT_RECEIPT_TEST_NOW", END_S.to_string());
        std::env::remove_var("CI");
    }
    let server = tmp.path().join("server");
    git(
        tmp.path(),
        &["init", "-q", "-b", "main", server.to_str().unwrap()],
    );

    // 1. generate
    let started = Instant::now();
    let keys = seeded_keys(writer_count);
    let writers: Vec<String> = keys
        .iter()
        .map(|k| writer_id(k.public(), "bench"))
        .collect();
    let t = Instant::now();
    let commits = history(&server, &keys, commit_count);
    let history_s = t.elapsed().as_secs_f64();
    let mut year = Year {
        server: server.clone(),
        keys,
        writers,
        commits,
        after: Vec::new(),
        last_writer: String::new(),
    };
    let t = Instant::now();
    year.after = receipts(&mut year, total);
    let receipts_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    git(&server, &["repack", "-adfq", "--depth=50", "--window=10"]);
    git(&server, &["pack-refs", "--all"]);
    git(&server, &["commit-graph", "write", "--reachable"]);
    let pack_s = t.elapsed().as_secs_f64();
    let generate_s = started.elapsed().as_secs_f64();
    eprintln!(
        "generated in {generate_s:.1}s: history {history_s:.1}s, receipts and checkpoints {receipts_s:.1}s, server gc {pack_s:.1}s"
    );
    assert_eq!(
        entries(&server),
        total as u64,
        "every receipt is on a chain"
    );

    // 2. bytes per receipt on the server
    let t = Instant::now();
    let branches = refs(&server, "refs/heads/");
    let chains = refs(&server, "refs/receipts/");
    let cps = refs(&server, "refs/receipt-checkpoints/");
    let (b_obj, b_bytes) = pack_of(&server, &branches);
    let (c_obj, c_bytes) = pack_of(&server, &chains);
    let (k_obj, k_bytes) = pack_of(&server, &cps);
    eprintln!("server packs counted in {:.1}s", t.elapsed().as_secs_f64());

    // 3. clones through the counting upload-pack
    let exe = std::env::current_exe().unwrap();
    let count = tmp.path().join("upload-pack-bytes");
    let upload_pack = format!("'{}' {COUNT_FLAG} '{}'", exe.display(), count.display());
    let url = format!("file://{}", server.display());
    let since_dir = tmp.path().join("since");
    let full_dir = tmp.path().join("full");
    let (clone_bytes, clone_ms) = clone(tmp.path(), &url, &upload_pack, &count, &since_dir);
    let (_, since_err, since_ms) = receipt(&since_dir, &["fetch", "--since", "90d"]);
    let since_bytes = take_count(&count);
    let since_entries = entries(&since_dir);
    let since_loose = loose(&since_dir);
    let (clone2_bytes, clone2_ms) = clone(tmp.path(), &url, &upload_pack, &count, &full_dir);
    let (_, _, full_ms) = receipt(&full_dir, &["fetch"]);
    let full_bytes = take_count(&count);
    let full_loose = loose(&full_dir);
    assert_eq!(
        entries(&full_dir),
        total as u64,
        "the full fetch took every receipt"
    );
    // the transfer alone: stock git fetching the same chains into an empty repository
    let bare = tmp.path().join("chains.git");
    git(
        tmp.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    let git_fetch_ms = git_ms(
        &bare,
        &[
            "fetch",
            "-q",
            "--upload-pack",
            &upload_pack,
            &url,
            "+refs/receipts/*:refs/receipts/*",
        ],
    );
    let git_fetch_bytes = take_count(&count);
    std::fs::remove_dir_all(&bare).unwrap();

    // 4. the first gate after the --since fetch, before any gc
    let note = format!("--ref=refs/notes/receipts/{}", year.last_writer);
    let rev_parse_ms = git_ms(&since_dir, &["rev-parse", "HEAD"]);
    let (_, _, gate_ms) = receipt(&since_dir, &["gate", "HEAD"]);
    let (_, _, gate2_ms) = receipt(&since_dir, &["gate", "HEAD"]);
    let notes_ms = git_ms(&since_dir, &["notes", &note, "show", "HEAD"]);
    // the `git gc --auto` each fetch starts in the background, run to its end
    // (in the foreground: detached, it would repack under the verify timed next)
    let gc = [
        "-c",
        "gc.auto=6700",
        "-c",
        "gc.autoDetach=false",
        "gc",
        "--auto",
        "--quiet",
    ];
    let since_gc_ms = git_ms(&since_dir, &gc);
    let full_gc_ms = git_ms(&full_dir, &gc);

    // 5. verify from the checkpoint, against a whole verify
    let (since_checked, since_v, since_verify_ms) = verify(&since_dir, &["--since-checkpoint"]);
    let (full_checked, _, full_verify_ms) = verify(&full_dir, &[]);
    let (fcp_checked, _, fcp_verify_ms) = verify(&full_dir, &["--since-checkpoint"]);
    assert_eq!(
        full_checked, total as u64,
        "the whole verify checks every receipt"
    );

    // 6. the display the full clone derived
    let t = Instant::now();
    let notes = refs(&full_dir, "refs/notes/receipts/");
    let (n_obj, n_bytes) = pack_of(&full_dir, &format!("{notes}--not\n{chains}"));
    eprintln!("notes pack counted in {:.1}s", t.elapsed().as_secs_f64());

    let n = total as f64;
    let kib = |b: u64| b as f64 / 1024.0;
    let mib = |b: u64| b as f64 / 1048576.0;
    println!(
        "`cargo bench --bench year -- {total} {writer_count}`: {total} receipts from {writer_count} writers (each receipt's writer drawn at random), {commit_count} commits on main, over 365 days; 12 monthly checkpoints signed by one writer, the newest {:.1} days before the year's end; generated in {generate_s:.0} s (history {history_s:.0} s, receipts and checkpoints {receipts_s:.0} s, server gc {pack_s:.0} s)\n",
        (END_S * 1000 - month_end_ms(11)) as f64 / DAY_MS as f64
    );
    println!("## Packed bytes (a fetch's pack of each ref set, on the packed server)\n");
    println!("| refs | objects | packed | objects / receipt | bytes / receipt |");
    println!("|---|---:|---:|---:|---:|");
    let row = |what: &str, obj: u64, bytes: u64| {
        println!(
            "| {what} | {obj} | {:.1} MiB | {:.2} | {:.0} |",
            mib(bytes),
            obj as f64 / n,
            bytes as f64 / n
        );
    };
    row("branches (`refs/heads/*`): the baseline", b_obj, b_bytes);
    row("chains (`refs/receipts/*`)", c_obj, c_bytes);
    row(
        "notes the full clone derived (not what the chains reach)",
        n_obj,
        n_bytes,
    );
    row("chains and notes", c_obj + n_obj, c_bytes + n_bytes);
    row("checkpoints (`refs/receipt-checkpoints/*`)", k_obj, k_bytes);
    println!(
        "\nbytes per receipt a clone fetches: {:.0} (notes are derived locally by `git receipt fetch`, never fetched: the display costs the clone no bytes; target under 600); with notes as if fetched: {:.0}; chains / branches: {:.2}x; branches: {:.0} bytes per commit\n",
        c_bytes as f64 / n,
        (c_bytes + n_bytes) as f64 / n,
        c_bytes as f64 / b_bytes as f64,
        b_bytes as f64 / commit_count as f64
    );
    println!("## A fresh clone (file://, through upload-pack; bytes as sent)\n");
    println!("| step | received | wall | bytes / baseline | time / baseline |");
    println!("|---|---:|---:|---:|---:|");
    println!(
        "| `git clone` (branches only): the baseline | {:.1} MiB | {:.2} s | 1.00x | 1.00x |",
        mib(clone_bytes),
        clone_ms / 1000.0
    );
    println!(
        "| `git receipt fetch --since 90d` in it | {:.1} MiB | {:.2} s | {:.2}x | {:.2}x |",
        mib(since_bytes),
        since_ms / 1000.0,
        since_bytes as f64 / clone_bytes as f64,
        since_ms / clone_ms
    );
    println!(
        "| clone + `fetch --since 90d` together (target within 2x) | {:.1} MiB | {:.2} s | {:.2}x | {:.2}x |",
        mib(clone_bytes + since_bytes),
        (clone_ms + since_ms) / 1000.0,
        (clone_bytes + since_bytes) as f64 / clone_bytes as f64,
        (clone_ms + since_ms) / clone_ms
    );
    println!(
        "| another `git clone` (branches only) | {:.1} MiB | {:.2} s | {:.2}x | {:.2}x |",
        mib(clone2_bytes),
        clone2_ms / 1000.0,
        clone2_bytes as f64 / clone_bytes as f64,
        clone2_ms / clone_ms
    );
    println!(
        "| plain `git receipt fetch` in it (every chain whole) | {:.1} MiB | {:.2} s | {:.2}x | {:.2}x |",
        mib(full_bytes),
        full_ms / 1000.0,
        full_bytes as f64 / clone_bytes as f64,
        full_ms / clone_ms
    );
    println!(
        "| `git fetch` of the same chains into an empty repository (the transfer alone) | {:.1} MiB | {:.2} s | {:.2}x | {:.2}x |",
        mib(git_fetch_bytes),
        git_fetch_ms / 1000.0,
        git_fetch_bytes as f64 / clone_bytes as f64,
        git_fetch_ms / clone_ms
    );
    println!(
        "\nplain `git receipt fetch` / `git fetch` of the same chains: {:.2}x the time ({:.0} us per receipt beyond the transfer: admission, notes, index)",
        full_ms / git_fetch_ms,
        1000.0 * (full_ms - git_fetch_ms) / n
    );
    let anchor_seq = since_err
        .lines()
        .find_map(|l| l.split("from checkpoint #").nth(1))
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse::<usize>().ok());
    let needed = anchor_seq.map(|k| year.after[k] + writer_count as u64);
    // what fetch --since says it fetched: "(N fetches: depth 1, since ..., depth 6)"
    let fetches = since_err
        .lines()
        .find_map(|l| l.split("taken from its tips up (").nth(1))
        .and_then(|s| s.split(')').next())
        .unwrap_or("?");
    println!(
        "\n`--since 90d` started from checkpoint #{} ({} receipts after it; with each chain's entry at the checkpoint, {} entries needed); it took {since_entries} entries ({:.1}% of the year, {:.2}x what was needed: the chains that moved are cut by date a week before the checkpoint, and a chain the date left short is topped up by depth, rounded up) in {fetches}; {:.1} KiB received per receipt taken, against {:.1} KiB per receipt for the whole fetch\n",
        anchor_seq.map_or("?".into(), |k| k.to_string()),
        anchor_seq.map_or(0, |k| year.after[k]),
        needed.unwrap_or(0),
        100.0 * since_entries as f64 / n,
        since_entries as f64 / needed.unwrap_or(1) as f64,
        kib(since_bytes) / since_entries as f64,
        kib(full_bytes) / n,
    );
    println!(
        "loose objects each fetch left for gc (the notes display it derives is written as one pack since issue 30; what is left is what git itself unpacked): {} ({:.0} MiB on disk) after `--since 90d`, {} ({:.0} MiB) after the plain fetch\n",
        since_loose.0,
        since_loose.1 as f64 / 1024.0,
        full_loose.0,
        full_loose.1 as f64 / 1024.0
    );
    println!("## The first gate after `fetch --since 90d`\n");
    println!("| command | wall | / git rev-parse HEAD |");
    println!("|---|---:|---:|");
    let line = |what: &str, ms: f64| {
        println!("| {what} | {ms:.1} ms | {:.1}x |", ms / rev_parse_ms);
    };
    line("`git rev-parse HEAD`: the baseline", rev_parse_ms);
    line("`git notes --ref=<writer> show HEAD`", notes_ms);
    line("`git receipt gate HEAD`, the first", gate_ms);
    line("`git receipt gate HEAD`, again", gate2_ms);
    println!(
        "\nthen the `git gc --auto` a fetch starts in the background (gc.auto 6,700), run to its end: {:.1} s in the `--since` clone, {:.1} s in the full clone; verify runs after it\n",
        since_gc_ms / 1000.0,
        full_gc_ms / 1000.0
    );
    println!("## Verify from the checkpoint\n");
    println!(
        "| command | receipts checked | covered by the checkpoint | wall | per receipt checked |"
    );
    println!("|---|---:|---:|---:|---:|");
    let per = |ms: f64, k: u64| 1000.0 * ms / k.max(1) as f64;
    println!(
        "| `verify --since-checkpoint` in the `--since` clone | {since_checked} | {} | {:.2} s | {:.1} us |",
        since_v["covered_by_checkpoint"],
        since_verify_ms / 1000.0,
        per(since_verify_ms, since_checked)
    );
    println!(
        "| `verify --since-checkpoint` in the full clone | {fcp_checked} | | {:.2} s | {:.1} us |",
        fcp_verify_ms / 1000.0,
        per(fcp_verify_ms, fcp_checked)
    );
    println!(
        "| `verify` (whole) in the full clone: the baseline | {full_checked} | | {:.2} s | {:.1} us |",
        full_verify_ms / 1000.0,
        per(full_verify_ms, full_checked)
    );
    println!(
        "\nfrom the checkpoint / whole: {:.3} of the receipts in {:.3} of the time (proportional: equal shares); receipts after the newest checkpoint: {}",
        since_checked as f64 / full_checked as f64,
        since_verify_ms / full_verify_ms,
        year.after[11]
    );
    if std::env::var_os("GIT_RECEIPT_BENCH_KEEP").is_some() {
        eprintln!("kept {}", tmp.keep().display());
    }
}
