//! The figures of issue 8, from one command: `git receipt gate` and `git receipt run`
//! at team scale, each against a baseline measured in the same run.
//!
//! Builds its repositories itself: history with `git fast-import`; receipts through
//! the library's own append path (`Store::append`, as `benches/gate.rs` does) where
//! that is quick enough, and for the 100k-receipt repositories as signed chain
//! commits written with `git fast-import` (the bytes, tree and message
//! `Store::append` writes) with notes rebuilt by `git receipt reindex`, because
//! 100k appends take ten minutes. Each repository is then packed the way a clone or
//! `git gc` packs it (`git repack -adf`, `git pack-refs`, a commit-graph).
//!
//! Every timed command is a whole process (the release binary, as a hook runs it),
//! run once untimed first so the receipt index is built and written (except the
//! fresh-clone case, which times exactly that), then timed alternately with its
//! baseline. Prints a markdown table of medians and ratios; asserts nothing (a gate
//! that answers the wrong verdict is flagged in the table, not failed).
//!
//! Usage: cargo bench --bench scale [-- [SCALE] [RUNS] [--only=1,4,...]]
//!
//! Case 5b is the state a CI job or reviewer is in: a real `git clone` plus `git
//! receipt fetch` (refs loose, no commit-graph, the index the fetch left), then
//! the first gate, timed once.
//!
//! SCALE divides every size (default 1: full size; 10 for a quick run); the walk
//! of 500 commits is never scaled. RUNS is the number of timed runs per figure
//! (default 21). `--only` picks cases by number. `BENCH_KEEP=1` keeps the
//! repositories and prints where.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use git_receipt::receipt::{Receipt, Verified, writer_id};
use git_receipt::sign::{SigningKey, verify};
use git_receipt::store::Store;
use gix::ObjectId;
use support::{CHECK_RUN, chain_entry, check_body, fast_import, git, marks, median, seeded_keys};

const BIN: &str = env!("CARGO_BIN_EXE_git-receipt");
const CHAIN_NAME: &str = "bench";

fn main() {
    let started = Instant::now();
    let opts = Options::parse();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // SAFETY: single-threaded at this point; the variables seal the child processes.
    unsafe {
        std::env::set_var("HOME", &home);
        std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
        std::env::set_var("TZ", "UTC");
        std::env::set_var("LC_ALL", "C");
        std::env::remove_var("XDG_CONFIG_HOME");
        std::env::remove_var("GIT_RECEIPT_SIGNING_KEY");
        std::env::remove_var("GIT_RECEIPT_INDEX");
        std::env::remove_var("GIT_DIR");
    }
    let mut table = Table::default();
    let s = opts.scale;

    if opts.wants(1) {
        let writers = (1000 / s).max(2);
        // every writer its own key in .gitreceipts, then the same number of
        // writers (chains) under 10 keys: which cost follows writers, which signers
        for (name, signers) in [("writers", writers), ("writers-10-keys", 10.min(writers))] {
            let repo = writers_repo(tmp.path(), name, writers, signers);
            table.gate_vs_notes(
                &opts,
                &repo,
                &format!(
                    "1. `gate HEAD` present, {writers} writers, one receipt each, {signers} keys in .gitreceipts"
                ),
                "HEAD",
                true,
                "1.5x",
            );
        }
    }
    if opts.wants(3) {
        let receipts = (5000 / s).max(2);
        let repo = one_commit_repo(tmp.path(), receipts);
        table.gate_vs_notes(
            &opts,
            &repo,
            &format!("3. `gate HEAD` present, {receipts} receipts of one check on HEAD"),
            "HEAD",
            true,
            "1.5x",
        );
    }
    if opts.wants(4) {
        let n = (10_000 / s).max(600);
        let repo = imported_repo(tmp.path(), "small", n);
        table.stale_cases(&opts, &repo, n);
    }
    if opts.wants(2) || opts.wants(4) || opts.wants(5) {
        let n = (100_000 / s).max(600);
        let repo = imported_repo(tmp.path(), "large", n);
        if opts.wants(2) {
            table.gate_vs_notes(
                &opts,
                &repo,
                &format!("2. `gate HEAD` present, {n} receipts on {n} commits"),
                "HEAD",
                true,
                "1.5x",
            );
        }
        if opts.wants(4) {
            table.stale_cases(&opts, &repo, n);
        }
        if opts.wants(5) {
            table.fresh_clone(&opts, &repo, n);
        }
    }
    if opts.wants(6) {
        let runs = (5000 / s).max(100);
        table.many_runs(tmp.path(), runs);
    }

    println!(
        "\nscale 1/{s}, {} timed runs per figure (medians of whole processes, each alternated with its baseline), {} cores, {}",
        opts.runs,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        git(Path::new("."), &["--version"])
    );
    println!();
    table.print();
    println!("\nwhole bench: {:.0} s", started.elapsed().as_secs_f64());
    if std::env::var_os("BENCH_KEEP").is_some() {
        eprintln!("kept: {}", tmp.keep().display());
    }
}

struct Options {
    scale: usize,
    runs: usize,
    only: Option<Vec<u32>>,
}

impl Options {
    fn parse() -> Options {
        let mut numbers = Vec::new();
        let mut only = None;
        for a in std::env::args().skip(1) {
            if let Some(list) = a.strip_prefix("--only=") {
                only = Some(list.split(',').filter_map(|c| c.parse().ok()).collect());
            } else if let Ok(n) = a.parse::<usize>() {
                numbers.push(n);
            }
        }
        Options {
            scale: numbers.first().copied().unwrap_or(1).max(1),
            runs: numbers.get(1).copied().unwrap_or(21).max(1),
            only,
        }
    }

    fn wants(&self, case: u32) -> bool {
        self.only.as_ref().is_none_or(|o| o.contains(&case))
    }
}

/// One row of the printed table.
struct Row {
    case: String,
    median: String,
    baseline: String,
    ratio: String,
    target: String,
}

#[derive(Default)]
struct Table {
    rows: Vec<Row>,
    remarks: Vec<String>,
}

impl Table {
    fn print(&mut self) {
        // by case number, in the order measured within a case
        self.rows
            .sort_by_key(|r| r.case.split('.').next().unwrap_or("").to_owned());
        println!("| case | median | baseline median | ratio | target |");
        println!("|---|---:|---:|---:|---:|");
        for r in &self.rows {
            println!(
                "| {} | {} | {} | {} | {} |",
                r.case, r.median, r.baseline, r.ratio, r.target
            );
        }
        for remark in &self.remarks {
            println!("\n{remark}");
        }
    }

    fn push(
        &mut self,
        case: &str,
        subject_ms: f64,
        baseline_ms: f64,
        baseline: &str,
        target: &str,
    ) {
        self.rows.push(Row {
            case: case.to_owned(),
            median: ms(subject_ms),
            baseline: format!("{} ({baseline})", ms(baseline_ms)),
            ratio: format!("{:.2}x", subject_ms / baseline_ms),
            target: target.to_owned(),
        });
    }

    /// `gate REV` against `git notes --ref=<writer> show HEAD`, where HEAD has a note.
    fn gate_vs_notes(
        &mut self,
        opts: &Options,
        repo: &Built,
        case: &str,
        rev: &str,
        present: bool,
        target: &str,
    ) {
        let mut case = case.to_owned();
        if let Some(wrong) = check_verdict(&repo.path, rev, present) {
            case.push_str(&format!(" **({wrong})**"));
        }
        let notes_ref = format!("--ref=receipts/{}", repo.head_writer);
        let (gate, notes) = alternate(
            opts.runs,
            || run_quiet(&repo.path, BIN, &["gate", rev]),
            || run_quiet(&repo.path, "git", &["notes", &notes_ref, "show", "HEAD"]),
        );
        self.push(&case, gate, notes, "`git notes show HEAD`", target);
    }

    /// Case 4: stale with the nearest receipt 1 and 500 commits back.
    fn stale_cases(&mut self, opts: &Options, repo: &Built, receipts: usize) {
        for (branch, back, target) in [("stale1", 1, "2x"), ("stale500", 500, "5x")] {
            self.gate_vs_notes(
                opts,
                repo,
                &format!(
                    "4. `gate` stale, nearest receipt {back} commit{} back, {receipts} receipts",
                    if back == 1 { "" } else { "s" }
                ),
                branch,
                false,
                target,
            );
        }
    }

    /// Case 5: the first `gate` with no index file, against verifying every
    /// signature strictly on one core in this process.
    fn fresh_clone(&mut self, opts: &Options, repo: &Built, receipts: usize) {
        let index = repo.path.join(".git/receipt-index");
        let mut case =
            format!("5. first `gate HEAD` in a fresh clone ({receipts} receipts, no index file)");
        let _ = std::fs::remove_file(&index);
        if let Some(wrong) = check_verdict(&repo.path, "HEAD", true) {
            case.push_str(&format!(" **({wrong})**"));
        }
        let (mut samples, mut cpu) = (Vec::new(), Vec::new());
        for _ in 0..opts.runs {
            let _ = std::fs::remove_file(&index);
            let before = cpu_ms(libc::RUSAGE_CHILDREN);
            samples.push(time_ms(|| run_quiet(&repo.path, BIN, &["gate", "HEAD"])));
            cpu.push(cpu_ms(libc::RUSAGE_CHILDREN) - before);
        }
        let rebuilt = index.exists();
        let (gate, gate_cpu) = (median(samples), median(cpu));
        // the floor, three times (it takes seconds): wall and CPU time of this thread
        let (mut floors, mut floor_cpu) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let before = cpu_ms(libc::RUSAGE_SELF);
            floors.push(time_ms(|| {
                for (key, r) in &repo.signed {
                    verify(repo.keys[*key].public(), r.body_bytes(), &r.raw_signature())
                        .expect("valid");
                }
            }));
            floor_cpu.push(cpu_ms(libc::RUSAGE_SELF) - before);
        }
        let (floor, floor_cpu) = (median(floors), median(floor_cpu));
        self.push(
            &case,
            gate,
            floor,
            &format!("strict verify of {} signatures, 1 core", repo.signed.len()),
            "< 0.5x",
        );
        self.remarks.push(format!(
            "case 5: CPU time (user + system, medians): first gate {}, floor {} ({:.2}x); on a busy machine the gate's wall time also waits for a second core",
            ms(gate_cpu),
            ms(floor_cpu),
            gate_cpu / floor_cpu
        ));
        if !rebuilt {
            self.remarks
                .push("note: case 5: the gate did not write an index file".into());
        }
        self.real_clone(repo, floor, floor_cpu);
    }

    /// Case 5b: the state a CI job or a reviewer is in: a real `git clone` of the
    /// repository (over `file://`, so git's transport packs what it sends), then
    /// `git receipt init` and `git receipt fetch` (every chain taken and checked,
    /// refs loose, no commit-graph), then the first `gate HEAD`, against the same
    /// strict-verify floor. The fetch is printed beside `git fetch` of the same
    /// refspec into a second clone, measured in the same run.
    fn real_clone(&mut self, repo: &Built, floor: f64, floor_cpu: f64) {
        let dir = repo.path.parent().unwrap().join("real-clone");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("file://{}", repo.path.display());
        let (ours, theirs) = (dir.join("ours"), dir.join("theirs"));
        for c in [&ours, &theirs] {
            git(
                &dir,
                &["clone", "-q", "--no-local", &url, c.to_str().unwrap()],
            );
        }
        run_quiet(&ours, BIN, &["init"]);
        let before = cpu_ms(libc::RUSAGE_CHILDREN);
        let fetch = time_ms(|| run_quiet(&ours, BIN, &["fetch"]));
        let fetch_cpu = cpu_ms(libc::RUSAGE_CHILDREN) - before;
        let git_fetch = time_ms(|| {
            git(
                &theirs,
                &[
                    "fetch",
                    "-q",
                    "--no-tags",
                    "origin",
                    "+refs/receipts/*:refs/receipts/*",
                ],
            );
        });
        // the clone's very first gate is the one timed; its verdict is read
        // from a second gate after it
        let before = cpu_ms(libc::RUSAGE_CHILDREN);
        let gate = time_ms(|| run_quiet(&ours, BIN, &["gate", "HEAD"]));
        let gate_cpu = cpu_ms(libc::RUSAGE_CHILDREN) - before;
        let mut case = format!(
            "5b. first `gate HEAD` after `git clone` + `git receipt fetch` ({} receipts)",
            repo.signed.len()
        );
        if let Some(wrong) = check_verdict(&ours, "HEAD", true) {
            case.push_str(&format!(" **({wrong})**"));
        }
        self.push(
            &case,
            gate,
            floor,
            &format!("strict verify of {} signatures, 1 core", repo.signed.len()),
            "< 0.35x",
        );
        self.remarks.push(format!(
            "case 5b: the first gate after the fetch took {} CPU ({:.3}x the floor's {}); the fetch before it took {} wall, {} CPU ({:.2}x the floor's CPU), against {} for `git fetch` of the same refspec ({:.1}x): a fetch checks every entry it takes",
            ms(gate_cpu),
            gate_cpu / floor_cpu,
            ms(floor_cpu),
            ms(fetch),
            ms(fetch_cpu),
            fetch_cpu / floor_cpu,
            ms(git_fetch),
            fetch / git_fetch
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Case 6: many `git receipt run`s on one commit: the last ones against the first
    /// ones, and the size of `.git` at the end (no manual gc).
    fn many_runs(&mut self, dir: &Path, runs: usize) {
        let t = Instant::now();
        let repo = dir.join("runs");
        git(dir, &["init", "-q", "-b", "main", repo.to_str().unwrap()]);
        let contract = "[check \"test\"]\n\trun = true\n\tpath = src\n\trequired = true\n";
        std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::write(repo.join("src/lib.rs"), "// lib\n").unwrap();
        git(&repo, &["add", "-A"]);
        git(
            &repo,
            &[
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@x",
                "commit",
                "-qm",
                "one",
            ],
        );
        let window = 50.min(runs / 2);
        let mut failed = 0;
        let mut run = |repo: &Path| {
            let t = Instant::now();
            let ok = Command::new(BIN)
                .current_dir(repo)
                .args(["run", "test"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap()
                .success();
            failed += usize::from(!ok);
            t.elapsed().as_secs_f64() * 1000.0
        };
        let mut sequential = Vec::with_capacity(runs);
        let early = dir.join("runs-early");
        for i in 0..runs {
            if i == window {
                // the repository as the first runs left it, to time against at the end
                let out = Command::new("cp")
                    .arg("-a")
                    .arg(&repo)
                    .arg(&early)
                    .status()
                    .unwrap();
                assert!(out.success(), "cp -a");
            }
            sequential.push(run(&repo));
        }
        let bytes = du_bytes(&repo.join(".git"));
        let disk = du_disk_bytes(&repo.join(".git"));
        let objects = git(&repo, &["count-objects", "-v"]).replace('\n', ", ");
        // Noise from the other builders moves whole minutes of runs, so the figure is
        // the next runs here timed alternately with runs where only `window` were made.
        let (mut late, mut soon) = (Vec::new(), Vec::new());
        for _ in 0..window {
            soon.push(run(&early));
            late.push(run(&repo));
        }
        let (last, first) = (median(late), median(soon));
        let mut case =
            format!("6. `run` on one commit after {runs} `run`s there vs after {window}");
        if failed > 0 {
            case.push_str(&format!(" **({failed} runs failed)**"));
        }
        self.push(
            &case,
            last,
            first,
            &format!("after {window} `run`s"),
            "1.2x",
        );
        self.remarks.push(format!(
            "case 6: in sequence, the median of the first {window} `run`s was {} and of the last {window} of {runs} {}",
            ms(median(sequential[..window].to_vec())),
            ms(median(sequential[runs - window..].to_vec()))
        ));
        self.rows.push(Row {
            case: format!("6. size of `.git` after {runs} `run`s, no manual gc"),
            median: format!("{:.1} MB", bytes as f64 / 1e6),
            baseline: "-".into(),
            ratio: "-".into(),
            target: "< 50 MB".into(),
        });
        self.remarks.push(format!(
            "case 6: after {runs} `run`s `.git` took {:.1} MB on disk (`du -s`, whole blocks per loose object); `git count-objects -v`: {objects}",
            disk as f64 / 1e6
        ));
        eprintln!("case 6: {runs} runs in {:.1}s", t.elapsed().as_secs_f64());
    }
}

/// A repository built for some cases.
struct Built {
    path: PathBuf,
    /// The writer with a note on HEAD (the baseline shows it).
    head_writer: String,
    keys: Vec<SigningKey>,
    /// Receipts signed here, with the index of their key (for the floor).
    signed: Vec<(usize, Receipt<Verified>)>,
}

fn contract(keys: &[SigningKey]) -> String {
    let mut c = format!("[check \"test\"]\n\trun = {CHECK_RUN}\n\tpath = src\n\trequired = true\n");
    for (i, k) in keys.iter().enumerate() {
        c.push_str(&format!(
            "[signer \"w{i}\"]\n\tkey = {}\n",
            k.public().to_openssh()
        ));
    }
    c
}

/// Case 1: `writers` writers, one receipt each, on the newest `writers` commits
/// (writer 0 on HEAD), through `Store::append`. Writer `w` signs with key
/// `w % signers` (all of them signers in `.gitreceipts`) in a chain of its own.
fn writers_repo(dir: &Path, name: &str, writers: usize, signers: usize) -> Built {
    let t = Instant::now();
    let path = dir.join(name);
    let keys = seeded_keys(signers);
    let ids = history(&path, writers, &contract(&keys), &[]);
    let store = Store::open(&path).unwrap();
    let chain = |w: usize| format!("{CHAIN_NAME}{w}");
    for w in (0..writers).rev() {
        let commit = ids[ids.len() - 1 - w];
        append(
            &store,
            &keys[w % signers],
            &chain(w),
            commit,
            (writers - w) as u64,
        );
    }
    pack(&path);
    eprintln!(
        "case 1: {writers} writers, one receipt each, {signers} keys, in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    Built {
        path,
        head_writer: writer_id(keys[0].public(), &chain(0)),
        keys,
        signed: Vec::new(),
    }
}

/// Case 3: `receipts` receipts of one check on HEAD, one writer, through
/// `Store::append`.
fn one_commit_repo(dir: &Path, receipts: usize) -> Built {
    let t = Instant::now();
    let path = dir.join("one-commit");
    let keys = seeded_keys(1);
    let ids = history(&path, 100, &contract(&keys), &[]);
    let store = Store::open(&path).unwrap();
    let head = *ids.last().unwrap();
    for r in 0..receipts {
        append(&store, &keys[0], CHAIN_NAME, head, r as u64);
    }
    pack(&path);
    eprintln!(
        "case 3: {receipts} receipts on HEAD in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    Built {
        path,
        head_writer: writer_id(keys[0].public(), CHAIN_NAME),
        keys,
        signed: Vec::new(),
    }
}

/// Cases 2, 4 and 5: `n` commits on main with one receipt each from 10 writers
/// (the newest on HEAD), and two branches off main's tip that change the check's
/// inputs: `stale1` (1 commit) and `stale500` (500 commits).
fn imported_repo(dir: &Path, name: &str, n: usize) -> Built {
    const WRITERS: usize = 10;
    let t = Instant::now();
    let path = dir.join(name);
    let keys = seeded_keys(WRITERS);
    let ids = history(
        &path,
        n,
        &contract(&keys),
        &[("stale1", 1), ("stale500", 500)],
    );
    eprintln!(
        "{name}: {} commits in {:.1}s",
        n + 501,
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let store = Store::open(&path).unwrap();
    // receipt r is on commit r, written by writer r % 10; HEAD's is writer (n-1) % 10
    let mut chains: Vec<Vec<(ObjectId, ObjectId, ObjectId)>> = vec![Vec::new(); WRITERS];
    for (r, commit) in ids.iter().enumerate() {
        let tree = store.commit_tree(*commit).unwrap();
        let inputs = store.inputs_tree(tree, &["src".to_owned()], true).unwrap();
        chains[r % WRITERS].push((*commit, tree, inputs));
    }
    drop(store);
    let mut stream = Vec::new();
    let mut signed = Vec::with_capacity(n);
    for (w, subjects) in chains.iter().enumerate() {
        let writer = writer_id(keys[w].public(), CHAIN_NAME);
        let mut prev: Option<String> = None;
        for (index, (commit, tree, inputs)) in subjects.iter().enumerate() {
            let r = index * WRITERS + w;
            let body = check_body(
                &writer,
                index as u64,
                prev.take(),
                *commit,
                *tree,
                *inputs,
                r as u64,
            );
            let receipt = Receipt::sign(body, &keys[w]).unwrap();
            prev = Some(receipt.id().to_owned());
            // what the store writes: receipt.json and signer.pub in a tree
            chain_entry(
                &mut stream,
                &receipt,
                keys[w].public(),
                None,
                None,
                r as u64,
            );
            signed.push((w, receipt));
        }
    }
    fast_import(&path, &stream);
    drop(stream);
    eprintln!(
        "{name}: {n} receipts signed and imported in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let out = Command::new(BIN)
        .current_dir(&path)
        .arg("reindex")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "reindex: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{name}: reindex in {:.1}s", t.elapsed().as_secs_f64());
    pack(&path);
    Built {
        path,
        head_writer: writer_id(keys[(n - 1) % WRITERS].public(), CHAIN_NAME),
        keys,
        signed,
    }
}

/// `n` commits on main (fast-import), each changing one of 100 files under src/
/// and one of 7 under docs/; `.gitreceipts` in the first. Each `(branch, k)` adds
/// a branch of `k` commits off main's tip that change src/. Returns main's commits,
/// oldest first; HEAD is main.
fn history(repo: &Path, n: usize, contract: &str, branches: &[(&str, usize)]) -> Vec<ObjectId> {
    git(
        repo.parent().unwrap(),
        &["init", "-q", "-b", "main", repo.to_str().unwrap()],
    );
    let mut s = Vec::new();
    let commit = |s: &mut Vec<u8>, branch: &str, mark: usize, from: Option<usize>, body: &str| {
        write!(
            s,
            "commit refs/heads/{branch}\nmark :{mark}\ncommitter Bench <b@example.org> {} +0000\ndata 8\ncommit \n",
            1_700_000_000 + mark
        )
        .unwrap();
        if let Some(f) = from {
            writeln!(s, "from :{f}").unwrap();
        }
        if mark == 1 {
            writeln!(
                s,
                "M 100644 inline .gitreceipts\ndata {}\n{contract}",
                contract.len()
            )
            .unwrap();
        }
        let file = mark % 100;
        writeln!(
            s,
            "M 100644 inline src/file{file}.rs\ndata {}\n{body}",
            body.len()
        )
        .unwrap();
        writeln!(
            s,
            "M 100644 inline docs/readme{}.md\ndata {}\n{body}",
            mark % 7,
            body.len()
        )
        .unwrap();
    };
    for i in 1..=n {
        let from = (i > 1).then(|| i - 1);
        commit(&mut s, "main", i, from, &format!("// version {i}\n"));
    }
    let mut mark = n;
    for (branch, k) in branches {
        let mut from = n;
        for j in 0..*k {
            mark += 1;
            commit(
                &mut s,
                branch,
                mark,
                Some(from),
                &format!("// {branch} {j}\n"),
            );
            from = mark;
        }
    }
    fast_import(repo, &s);
    git(repo, &["reset", "-q", "--hard", "main"]);
    let ids = marks(repo, n)
        .iter()
        .map(|id| ObjectId::from_hex(id.as_bytes()).unwrap())
        .collect();
    std::fs::remove_file(repo.join(".git/marks")).unwrap();
    ids
}

/// One receipt for `commit` through the library's append path.
fn append(store: &Store, key: &SigningKey, chain: &str, commit: ObjectId, serial: u64) {
    let tree = store.commit_tree(commit).unwrap();
    let inputs = store.inputs_tree(tree, &["src".to_owned()], true).unwrap();
    let writer = writer_id(key.public(), chain);
    store
        .append(&writer, key, &[], |index, prev| {
            check_body(&writer, index, prev, commit, tree, inputs, serial)
        })
        .unwrap();
}

/// Pack as a clone or `git gc` leaves a repository: one pack with the newest
/// objects whole (fast-import deltifies the other way), packed refs, a commit-graph.
fn pack(repo: &Path) {
    let t = Instant::now();
    git(repo, &["repack", "-adfq", "--depth=50", "--window=10"]);
    git(repo, &["pack-refs", "--all"]);
    git(repo, &["commit-graph", "write", "--reachable"]);
    eprintln!(
        "{}: packed in {:.1}s",
        repo.file_name().unwrap().to_string_lossy(),
        t.elapsed().as_secs_f64()
    );
}

/// Run `gate REV` once, untimed (it builds and writes the index), and say what is
/// wrong with its verdict, if anything.
fn check_verdict(repo: &Path, rev: &str, present: bool) -> Option<String> {
    let out = Command::new(BIN)
        .current_dir(repo)
        .args(["gate", rev])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let code = out.status.code();
    let right = if present {
        code == Some(0)
    } else {
        code == Some(1) && text.contains("stale")
    };
    (!right).then(|| {
        format!(
            "verdict: exit {code:?}, expected {}: {}",
            if present { "present" } else { "stale" },
            text.trim().replace('\n', " / ")
        )
    })
}

/// Medians of `a` and `b`, timed alternately so that noise from the other builders
/// on this machine falls on both.
fn alternate(runs: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (f64, f64) {
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        sb.push(time_ms(&mut b));
        sa.push(time_ms(&mut a));
    }
    (median(sa), median(sb))
}

fn run_quiet(dir: &Path, program: &str, args: &[&str]) {
    Command::new(program)
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
}

fn time_ms(mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1000.0
}

/// User plus system CPU time so far of this process or of its waited-for children.
fn cpu_ms(who: libc::c_int) -> f64 {
    // SAFETY: getrusage writes one rusage struct, which lives on this stack.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut usage) };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} s", v / 1000.0)
    } else {
        format!("{v:.1} ms")
    }
}

/// `du -sb`: apparent size in bytes.
fn du_bytes(dir: &Path) -> u64 {
    du(dir, "-sb")
}

/// `du -s`: disk usage in bytes (the file system's blocks).
fn du_disk_bytes(dir: &Path) -> u64 {
    du(dir, "-sk") * 1024
}

fn du(dir: &Path, flags: &str) -> u64 {
    let out = Command::new("du").arg(flags).arg(dir).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
