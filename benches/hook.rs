//! The server pre-receive hook's cost (issue 22): a push of 1 and of 1,000 new
//! entries on a chain of 100,000, and a push of 1 entry with 1,000 and 10,000
//! writers present, each against a plain `git push` of the same refs to the same
//! kind of server without the hook, and per new entry against the strict-verify
//! floor measured in the same run (`git_receipt::sign::verify` of single SSHSIG
//! receipt signatures, in process, one core). The target: per-entry cost at most
//! the floor plus 50% (1.5x), flat in chain length and in the number of writers.
//!
//! Each case builds two bare repositories alike (`git fast-import` of a 100-commit
//! `main` and of the chains, signed here with seeded keys; then `cp -a`): one with
//! `git receipt install-hooks --server --protect main`, one without. Refs stay
//! loose, nothing is repacked, no commit-graph: the state pushes leave a server in.
//! Every chain entry is what the store writes: `receipt.json` and `signer.pub` in
//! its tree, linked by index and prev, on `refs/receipts/<writer>`. A client whose
//! object store borrows the servers' (alternates) holds the new entries, one chain
//! extension; each round pushes the next batch of it (`git push <bare> <tip>:<ref>`,
//! local transport) to both servers, so each server takes the same pushes in the
//! same order and the hooked one's receipt index is, as in use, one push behind.
//! One push to each first, untimed (it builds the hooked server's index from
//! nothing: printed apart), then the timed rounds alternate which server goes
//! first; figures are medians, the hook's cost the median of the rounds' paired
//! differences. CPU is user + system of all processes of the push (the children's
//! rusage). A last push, untimed, runs the hook's `git-receipt` under
//! `/usr/bin/time -f %M` for its peak resident set. Prints a table; asserts
//! nothing about time (a refused push shows in the table, with git's message).
//!
//! Usage: cargo bench --bench hook [-- [--quick] [RUNS]]
//!
//! Full (about 3 minutes on 2 cores): a chain of 100,000, and 1,000 and 10,000
//! writers. `--quick` (under a minute): a chain of 10,000 and 1,000 writers only.
//! RUNS timed rounds per case (default 7). `BENCH_KEEP=1` keeps the repositories.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use git_receipt::receipt::{Receipt, Verified, writer_id};
use git_receipt::sign::{PublicKey, SigningKey, verify};
use support::{
    chain_entry, check_body, fast_import, fast_import_bare, git, marks, median, seeded_keys,
};

const BIN: &str = env!("CARGO_BIN_EXE_git-receipt");
const CHAIN_NAME: &str = "bench";
/// Commits on `main`, which receipts name as their subjects in turn.
const HISTORY: usize = 100;
/// Signatures the floor verifies, each timing.
const FLOOR_SIGNATURES: usize = 2000;

fn main() {
    let started = Instant::now();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let runs = args
        .iter()
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(7)
        .max(1);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // `git-receipt` on the hook's PATH (the shim calls `git receipt`), and a second
    // directory whose `git-receipt` reports its peak RSS, for the last push
    let bin = tmp.path().join("bin");
    let rss_bin = tmp.path().join("rss-bin");
    let rss_file = tmp.path().join("rss.txt");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&rss_bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("git-receipt")).unwrap();
    let wrapper = rss_bin.join("git-receipt");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec /usr/bin/time -f %M -o '{}' '{BIN}' \"$@\"\n",
            rss_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    // SAFETY: single-threaded at this point; the variables seal the child processes.
    unsafe {
        std::env::set_var("HOME", &home);
        std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        std::env::set_var("TZ", "UTC");
        std::env::set_var("LC_ALL", "C");
        std::env::set_var("PATH", format!("{}:{path}", bin.display()));
        for v in [
            "XDG_CONFIG_HOME",
            "GIT_RECEIPT_SIGNING_KEY",
            "GIT_RECEIPT_INDEX",
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        ] {
            std::env::remove_var(v);
        }
    }
    let rss = Rss {
        path: format!("{}:{path}", rss_bin.display()),
        file: rss_file,
        available: Path::new("/usr/bin/time").exists(),
    };

    let chain_len = if quick { 10_000 } else { 100_000 };
    let writer_counts: &[usize] = if quick { &[1000] } else { &[1000, 10_000] };
    let mut floors = Vec::new();
    let mut rows = Vec::new();

    // the shape of case (a) with a short chain: what "flat in chain length" and
    // "flat in writers" are against
    let small = Servers::build(tmp.path(), "chain100", 1, |_| 100, 0, runs + 2);
    rows.push(small.measure("0. chain of 100, 1 writer: push 1 entry", 1, runs, &rss));
    drop(small);

    let mut big = Servers::build(tmp.path(), "chain", 1, |_| chain_len, 0, (runs + 2) * 1001);
    // the floor's signatures: the new entries' (the hook verifies those)
    let floor_set = (big.key.clone(), std::mem::take(&mut big.signed));
    floors.push(floor(&floor_set));
    rows.push(big.measure(
        &format!("a. chain of {}: push 1 entry", thousands(chain_len)),
        1,
        runs,
        &rss,
    ));
    rows.push(big.measure(
        &format!("b. chain of {}: push 1,000 entries", thousands(chain_len)),
        1000,
        runs,
        &rss,
    ));
    floors.push(floor(&floor_set));
    drop(big);

    for &w in writer_counts {
        let s = Servers::build(
            tmp.path(),
            &format!("writers{w}"),
            w,
            |i| 1 + i % 3,
            w / 2,
            runs + 2,
        );
        rows.push(s.measure(
            &format!(
                "{}. {} writers (1-3 entries each): push 1 entry",
                if w == 1000 { 'c' } else { 'd' },
                thousands(w)
            ),
            1,
            runs,
            &rss,
        ));
    }
    floors.push(floor(&floor_set));
    let floor_us = median(floors);

    println!(
        "\nserver pre-receive hook: hooked vs plain `git push` to a local bare repository, medians of {runs} rounds, {} cores, {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        git(Path::new("."), &["--version"])
    );
    println!(
        "floor: strict verify (`git_receipt::sign::verify`) of one SSHSIG receipt signature, in process: {floor_us:.1} us (median of 3 runs of {FLOOR_SIGNATURES}: before, between and after the cases)\n"
    );
    println!(
        "| case | accepted | hooked | plain | hook cost | per entry | per entry / floor | hooked CPU | plain CPU | hook CPU | hook peak RSS | first hooked push |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let per_entry_us = r.cost * 1000.0 / r.entries as f64;
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.1}x | {} | {} | {} | {} | {} |",
            r.case,
            r.accepted,
            ms(r.hooked),
            ms(r.plain),
            ms(r.cost),
            us(per_entry_us),
            per_entry_us / floor_us,
            ms(r.hooked_cpu),
            ms(r.plain_cpu),
            ms(r.cpu_cost),
            r.rss_kib
                .map(|k| format!("{:.1} MB", k as f64 / 1024.0))
                .unwrap_or_else(|| "-".into()),
            ms(r.cold),
        );
    }
    let cost = |prefix: &str| rows.iter().find(|r| r.case.starts_with(prefix));
    println!();
    if let (Some(a), Some(b)) = (cost("a."), cost("b.")) {
        let marginal = (b.cost - a.cost) * 1000.0 / (b.entries - a.entries) as f64;
        let marginal_cpu = (b.cpu_cost - a.cpu_cost) * 1000.0 / (b.entries - a.entries) as f64;
        println!(
            "per entry, the push's fixed cost left out ((b - a) / 999): {} wall, {} CPU = {:.2}x / {:.2}x the floor (target at most 1.5x)",
            us(marginal),
            us(marginal_cpu),
            marginal / floor_us,
            marginal_cpu / floor_us
        );
        println!(
            "per entry in a push of 1,000 (b / 1000): {} = {:.2}x the floor (target at most 1.5x)",
            us(b.cost * 1000.0 / b.entries as f64),
            b.cost * 1000.0 / b.entries as f64 / floor_us
        );
    }
    if let (Some(zero), Some(a)) = (cost("0."), cost("a.")) {
        println!(
            "flat in chain length: hook cost with a chain of {} / of 100: {:.2}x wall, {:.2}x CPU (target about 1x)",
            thousands(chain_len),
            a.cost / zero.cost,
            a.cpu_cost / zero.cpu_cost
        );
        for r in rows
            .iter()
            .filter(|r| r.case.starts_with("c.") || r.case.starts_with("d."))
        {
            println!(
                "flat in writers: hook cost in case {} / with 1 writer: {:.2}x wall, {:.2}x CPU (target about 1x)",
                &r.case[..1],
                r.cost / zero.cost,
                r.cpu_cost / zero.cpu_cost
            );
        }
    }
    if let (Some(c), Some(d)) = (cost("c."), cost("d.")) {
        println!(
            "flat in writers: hook cost with 10,000 writers / with 1,000: {:.2}x wall, {:.2}x CPU (target about 1x)",
            d.cost / c.cost,
            d.cpu_cost / c.cpu_cost
        );
    }
    for r in &rows {
        if let Some(why) = &r.refused {
            println!("\n{}: a push was refused: {why}", r.case);
        }
    }
    println!(
        "\n(first hooked push: the untimed push ahead of the rounds, which builds the hooked server's receipt index from nothing)"
    );
    println!("whole bench: {:.0} s", started.elapsed().as_secs_f64());
    if std::env::var_os("BENCH_KEEP").is_some() {
        eprintln!("kept: {}", tmp.keep().display());
    }
}

/// Where the last push's hook reports its peak RSS.
struct Rss {
    /// PATH whose `git-receipt` runs under /usr/bin/time.
    path: String,
    file: PathBuf,
    available: bool,
}

/// Two servers built alike, one hooked, and a client holding new entries of one
/// writer's chain (`tips[i]`: the chain commit of the i-th new entry).
struct Servers {
    hooked: PathBuf,
    plain: PathBuf,
    client: PathBuf,
    writer: String,
    /// The writer's public key.
    key: PublicKey,
    tips: Vec<String>,
    /// The new entries' receipts (the floor verifies their signatures).
    signed: Vec<Receipt<Verified>>,
    /// How many new entries the servers have taken so far.
    pushed: std::cell::Cell<usize>,
}

/// One row of the table.
struct Row {
    case: String,
    entries: usize,
    accepted: String,
    refused: Option<String>,
    hooked: f64,
    plain: f64,
    cost: f64,
    hooked_cpu: f64,
    plain_cpu: f64,
    cpu_cost: f64,
    rss_kib: Option<u64>,
    cold: f64,
}

impl Servers {
    /// `writers` writers with seeded keys, writer `w` with a chain of `entries(w)`
    /// on both servers; the client holds `extension` new entries on writer
    /// `pushed`'s chain.
    fn build(
        dir: &Path,
        name: &str,
        writers: usize,
        entries: impl Fn(usize) -> usize,
        pushed: usize,
        extension: usize,
    ) -> Servers {
        let t = Instant::now();
        let hooked = dir.join(format!("{name}-hooked.git"));
        let plain = dir.join(format!("{name}-plain.git"));
        let client = dir.join(format!("{name}-client"));
        git(
            dir,
            &[
                "init",
                "-q",
                "--bare",
                "-b",
                "main",
                hooked.to_str().unwrap(),
            ],
        );
        let keys = seeded_keys(writers);
        let subjects = history(&hooked, &keys[pushed]);

        // the chains, signed here while fast-import writes them
        let mut fi = Command::new("git")
            .current_dir(&hooked)
            .args(["fast-import", "--quiet"])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = fi.stdin.take().unwrap();
        let mut serial = 0u64;
        let mut total = 0usize;
        let mut head = (0u64, None);
        for (w, key) in keys.iter().enumerate() {
            let writer = writer_id(key.public(), CHAIN_NAME);
            let (mut index, mut prev) = (0u64, None::<String>);
            let mut s = Vec::new();
            for _ in 0..entries(w) {
                let r = sign(&writer, key, index, prev.take(), &subjects, serial);
                chain_entry(&mut s, &r, key.public(), None, None, serial);
                prev = Some(r.id().to_owned());
                index += 1;
                serial += 1;
                if s.len() > 1 << 20 {
                    stdin.write_all(&s).unwrap();
                    s.clear();
                }
            }
            stdin.write_all(&s).unwrap();
            total += index as usize;
            if w == pushed {
                head = (index, prev);
            }
        }
        drop(stdin);
        assert!(fi.wait().unwrap().success(), "fast-import");
        let key = &keys[pushed];
        let writer = writer_id(key.public(), CHAIN_NAME);
        let base = git(&hooked, &["rev-parse", &format!("refs/receipts/{writer}")]);
        eprintln!(
            "{name}: {writers} writers, {total} entries signed and imported in {:.1}s",
            t.elapsed().as_secs_f64()
        );

        let t = Instant::now();
        let out = Command::new("cp")
            .arg("-a")
            .arg(&hooked)
            .arg(&plain)
            .status()
            .unwrap();
        assert!(out.success(), "cp -a");
        let out = Command::new(BIN)
            .current_dir(&hooked)
            .args(["install-hooks", "--server", "--protect", "main"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "install-hooks --server: {}",
            String::from_utf8_lossy(&out.stderr)
        );

        // the client: the servers' objects borrowed, and the new entries its own
        git(dir, &["init", "-q", "-b", "main", client.to_str().unwrap()]);
        std::fs::write(
            client.join(".git/objects/info/alternates"),
            format!("{}\n", plain.join("objects").display()),
        )
        .unwrap();
        let (mut index, mut prev) = head;
        let mut s = Vec::new();
        let mut signed = Vec::with_capacity(extension);
        for n in 0..extension {
            let r = sign(&writer, key, index, prev.take(), &subjects, serial);
            let from = (n == 0).then_some(base.as_str());
            chain_entry(&mut s, &r, key.public(), from, Some(n + 1), serial);
            prev = Some(r.id().to_owned());
            index += 1;
            serial += 1;
            signed.push(r);
        }
        fast_import(&client, &s);
        let tips = marks(&client, extension);
        eprintln!(
            "{name}: second server, hook and {extension} new entries in {:.1}s",
            t.elapsed().as_secs_f64()
        );
        Servers {
            hooked,
            plain,
            client,
            writer,
            key: key.public().clone(),
            tips,
            signed,
            pushed: std::cell::Cell::new(0),
        }
    }

    /// Push the next `n` new entries to both servers, `runs` timed rounds after an
    /// untimed one, then one more for the hook's peak RSS.
    fn measure(&self, case: &str, n: usize, runs: usize, rss: &Rss) -> Row {
        let t = Instant::now();
        let next = || {
            let at = self.pushed.get() + n;
            assert!(
                at <= self.tips.len(),
                "the client holds too few new entries"
            );
            self.pushed.set(at);
            self.tips[at - 1].clone()
        };
        let mut refused = None;
        let mut accepted = 0;
        let note = |p: &Pushed, refused: &mut Option<String>| {
            if p.code != 0 && refused.is_none() {
                *refused = Some(format!(
                    "exit {}: {}",
                    p.code,
                    p.stderr.trim().replace('\n', " / ")
                ));
            }
        };
        let tip = next();
        let cold = self.push(&self.hooked, &tip, None);
        note(&cold, &mut refused);
        let p = self.push(&self.plain, &tip, None);
        note(&p, &mut refused);
        let (mut hooked, mut plain, mut cost) = (Vec::new(), Vec::new(), Vec::new());
        let (mut hooked_cpu, mut plain_cpu, mut cpu_cost) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..runs {
            let tip = next();
            let (h, p) = if round % 2 == 0 {
                let p = self.push(&self.plain, &tip, None);
                (self.push(&self.hooked, &tip, None), p)
            } else {
                let h = self.push(&self.hooked, &tip, None);
                (h, self.push(&self.plain, &tip, None))
            };
            note(&h, &mut refused);
            note(&p, &mut refused);
            accepted += usize::from(h.code == 0);
            hooked.push(h.wall);
            plain.push(p.wall);
            cost.push(h.wall - p.wall);
            hooked_cpu.push(h.cpu);
            plain_cpu.push(p.cpu);
            cpu_cost.push(h.cpu - p.cpu);
        }
        let tip = next();
        let rss_kib = rss.available.then(|| {
            let _ = std::fs::remove_file(&rss.file);
            let h = self.push(&self.hooked, &tip, Some(&rss.path));
            note(&h, &mut refused);
            std::fs::read_to_string(&rss.file)
                .ok()
                .and_then(|t| t.lines().last()?.trim().parse().ok())
        });
        let rss_kib = rss_kib.flatten();
        self.push(&self.plain, &tip, None);
        eprintln!(
            "{}: {runs} rounds in {:.1}s",
            &case[..1],
            t.elapsed().as_secs_f64()
        );
        Row {
            case: case.to_owned(),
            entries: n,
            accepted: format!("{accepted}/{runs}"),
            refused,
            hooked: median(hooked),
            plain: median(plain),
            cost: median(cost),
            hooked_cpu: median(hooked_cpu),
            plain_cpu: median(plain_cpu),
            cpu_cost: median(cpu_cost),
            rss_kib,
            cold: cold.wall,
        }
    }

    /// `git push <server> <tip>:refs/receipts/<writer>` from the client, timed.
    fn push(&self, server: &Path, tip: &str, path: Option<&str>) -> Pushed {
        let mut cmd = Command::new("git");
        cmd.current_dir(&self.client)
            .args(["push", "--quiet", "--no-verify"])
            .arg(server)
            .arg(format!("{tip}:refs/receipts/{}", self.writer))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(path) = path {
            cmd.env("PATH", path);
        }
        let cpu = cpu_ms();
        let t = Instant::now();
        let out = cmd.output().unwrap();
        let wall = t.elapsed().as_secs_f64() * 1000.0;
        Pushed {
            wall,
            cpu: cpu_ms() - cpu,
            code: out.status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

struct Pushed {
    wall: f64,
    cpu: f64,
    code: i32,
    stderr: String,
}

/// `main` in bare `repo`: [`HISTORY`] commits, the first with a `.gitreceipts`
/// requiring check `test` and trusting `key`. Returns (commit, tree) of each.
fn history(repo: &Path, key: &SigningKey) -> Vec<(String, String)> {
    let contract = format!(
        "[check \"test\"]\n\trun = {}\n\tpath = src\n\trequired = true\n[signer \"bench\"]\n\tkey = {}\n",
        support::CHECK_RUN,
        key.public().to_openssh()
    );
    let mut s = Vec::new();
    for i in 1..=HISTORY {
        write!(
            s,
            "commit refs/heads/main\ncommitter Bench <b@example.org> {} +0000\ndata 7\ncommit\n",
            1_700_000_000 + i
        )
        .unwrap();
        if i == 1 {
            writeln!(
                s,
                "M 100644 inline .gitreceipts\ndata {}\n{contract}",
                contract.len()
            )
            .unwrap();
        }
        let body = format!("// version {i}\n");
        writeln!(
            s,
            "M 100644 inline src/file{}.rs\ndata {}\n{body}",
            i % 10,
            body.len()
        )
        .unwrap();
    }
    fast_import_bare(repo, &s);
    git(repo, &["log", "--reverse", "--format=%H %T", "main"])
        .lines()
        .map(|l| {
            let (c, t) = l.split_once(' ').unwrap();
            (c.to_owned(), t.to_owned())
        })
        .collect()
}

/// The receipt at `index` of `writer`'s chain, on subject `serial` of `subjects`.
fn sign(
    writer: &str,
    key: &SigningKey,
    index: u64,
    prev: Option<String>,
    subjects: &[(String, String)],
    serial: u64,
) -> Receipt<Verified> {
    let (commit, tree) = &subjects[serial as usize % subjects.len()];
    let body = check_body(writer, index, prev, commit, tree, tree, serial);
    Receipt::sign(body, key).unwrap()
}

/// Microseconds per strict verification of one receipt signature, in process, on
/// this thread: [`FLOOR_SIGNATURES`] of them.
fn floor((key, signed): &(PublicKey, Vec<Receipt<Verified>>)) -> f64 {
    let t = Instant::now();
    for r in signed.iter().cycle().take(FLOOR_SIGNATURES) {
        verify(key, r.body_bytes(), &r.raw_signature()).expect("valid");
    }
    t.elapsed().as_secs_f64() * 1e6 / FLOOR_SIGNATURES as f64
}

/// User plus system CPU time so far of this process's waited-for children (and
/// theirs), in milliseconds.
fn cpu_ms() -> f64 {
    // SAFETY: getrusage writes one rusage struct, which lives on this stack.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// `n` with a comma every three digits: 100,000.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ms(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{:.2} s", v / 1000.0)
    } else {
        format!("{v:.1} ms")
    }
}

fn us(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{:.2} ms", v / 1000.0)
    } else {
        format!("{v:.1} us")
    }
}
