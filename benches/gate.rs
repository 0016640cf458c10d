//! `git receipt gate HEAD` on a large repository, against stock git reading one
//! note (`git notes --ref=... show HEAD`) in the same run.
//!
//! Builds a repository with 20,000 commits (git fast-import) and 20,000 receipts
//! from 10 writers (through the library's own append path, so notes are laid out
//! exactly as `run` lays them out), packs it with `git gc`, then times both
//! commands as whole processes, as a hook would run them. Prints medians and the
//! ratio; asserts nothing.
//!
//! Usage: cargo bench --bench gate [-- COMMITS RECEIPTS ITERATIONS]

mod support;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Command;
use std::time::Instant;

use git_receipt::receipt::{
    Body, Chain, Check, Kind, Mode, Outcome, Runner, SCHEMA, Subject, definition_digest,
    format_timestamp, writer_id,
};
use git_receipt::sign::SigningKey;
use git_receipt::store::Store;
use support::{fast_import, git, marks, median_ms};

const WRITERS: usize = 10;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let commits = args.first().copied().unwrap_or(20_000);
    let receipts = args.get(1).copied().unwrap_or(20_000);
    let iterations = args.get(2).copied().unwrap_or(30);

    let tmp = tempfile::tempdir().unwrap();
    support::sealed_home(tmp.path());
    let repo = tmp.path().join("repo");
    git(
        tmp.path(),
        &["init", "-q", "-b", "main", repo.to_str().unwrap()],
    );
    let keys: Vec<SigningKey> = (0..WRITERS)
        .map(|i| SigningKey::from_seed(&[i as u8 + 1; 32]))
        .collect();

    // 1. history: fast-import `commits` commits, each changing one of 100 files.
    let t = Instant::now();
    let mut contract =
        String::from("[check \"test\"]\n\trun = cargo test\n\tpath = src\n\trequired = true\n");
    for (i, k) in keys.iter().enumerate() {
        contract.push_str(&format!(
            "[signer \"w{i}\"]\n\tkey = {}\n",
            k.public().to_openssh()
        ));
    }
    let mut stream = Vec::new();
    for i in 0..commits {
        let ts = 1_700_000_000 + i as u64;
        write!(stream, "commit refs/heads/main\nmark :{}\ncommitter Bench <b@example.org> {ts} +0000\ndata 8\ncommit {:<1}\n", i + 1, i % 10).unwrap();
        if i > 0 {
            writeln!(stream, "from :{i}").unwrap();
        } else {
            writeln!(
                stream,
                "M 100644 inline .gitreceipts\ndata {}\n{contract}",
                contract.len()
            )
            .unwrap();
        }
        let body = format!("// version {i}\n");
        writeln!(
            stream,
            "M 100644 inline src/file{}.rs\ndata {}\n{body}",
            i % 100,
            body.len()
        )
        .unwrap();
        writeln!(
            stream,
            "M 100644 inline docs/readme{}.md\ndata {}\n{body}",
            i % 7,
            body.len()
        )
        .unwrap();
    }
    fast_import(&repo, &stream);
    git(&repo, &["reset", "-q", "--hard", "main"]);
    let ids = marks(&repo, commits);
    eprintln!(
        "history: {commits} commits in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    // 2. receipts: `receipts` receipts spread over the newest commits, 10 writers,
    //    the last one on HEAD, through the library's append path.
    let t = Instant::now();
    let store = Store::open(&repo).unwrap();
    let argv = vec!["sh".to_owned(), "-c".to_owned(), "cargo test".to_owned()];
    let paths = vec!["src".to_owned()];
    let definition = definition_digest(&argv, &paths, &[]);
    for r in 0..receipts {
        let commit_ix = commits - receipts.min(commits) + (r % commits.max(1));
        let commit = gix::ObjectId::from_hex(ids[commit_ix.min(commits - 1)].as_bytes()).unwrap();
        let tree = store.commit_tree(commit).unwrap();
        let inputs = store.inputs_tree(tree, &paths, true).unwrap();
        let key = &keys[r % WRITERS];
        let writer = writer_id(key.public(), "bench");
        store
            .append(&writer, key, &[], |index, prev| Body {
                schema: SCHEMA.into(),
                kind: Kind::Check,
                chain: Chain {
                    writer: writer.clone(),
                    index,
                    prev,
                },
                subject: Subject {
                    commit: commit.to_string(),
                    tree: tree.to_string(),
                    inputs: inputs.to_string(),
                    dirty: false,
                    dependencies: Vec::new(),
                },
                check: Check {
                    name: "test".into(),
                    argv: argv.clone(),
                    definition: definition.clone(),
                    paths: paths.clone(),
                    env: BTreeMap::new(),
                },
                result: Outcome {
                    mode: Mode::Run,
                    exit_code: 0,
                    passed: true,
                    started_at: format_timestamp(1_700_000_000_000 + r as u64),
                    duration_ms: 1000,
                    stdout_tail: "test result: ok".into(),
                    stderr_tail: String::new(),
                    log: None,
                    output_bytes: 15,
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
                    os: "linux".into(),
                },
                acceptance: None,
                review: None,
                supersedes: None,
            })
            .unwrap();
    }
    eprintln!(
        "receipts: {receipts} from {WRITERS} writers in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    git(&repo, &["gc", "--quiet"]);
    git(&repo, &["commit-graph", "write", "--reachable"]);
    eprintln!("git gc + commit-graph: {:.1}s", t.elapsed().as_secs_f64());

    // 3. timings, both as whole processes.
    let bin = env!("CARGO_BIN_EXE_git-receipt");
    let a_writer = writer_id(keys[(receipts - 1) % WRITERS].public(), "bench");
    let notes_ref = format!("--ref=receipts/{a_writer}");
    let run = |cmd: &mut Command| {
        let out = cmd.current_dir(&repo).output().unwrap();
        out.status.code()
    };
    let gate_code = run(Command::new(bin).args(["gate", "HEAD"]));
    assert_eq!(gate_code, Some(0), "HEAD is present");
    let git_show = median_ms(iterations, || {
        run(Command::new("git").args(["notes", &notes_ref, "show", "HEAD"]));
    });
    let gate = median_ms(iterations, || {
        run(Command::new(bin).args(["gate", "HEAD"]));
    });
    // a stale case: a new commit that changes src, so the walk runs one step
    std::fs::write(repo.join("src/new.rs"), "// new\n").unwrap();
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
            "new",
        ],
    );
    let stale = median_ms(iterations, || {
        run(Command::new(bin).args(["gate", "HEAD"]));
    });
    println!(
        "repository: {commits} commits, {receipts} receipts, {WRITERS} writers (packed, commit-graph)"
    );
    println!("iterations per figure: {iterations} (medians, whole processes)");
    println!(
        "{:<44} {:>8.2} ms",
        "git notes --ref=<writer> show HEAD (baseline)", git_show
    );
    println!(
        "{:<44} {:>8.2} ms   (target < 30 ms)",
        "git receipt gate HEAD (present)", gate
    );
    println!(
        "{:<44} {:>8.2}x   (target < 3x)",
        "ratio gate / git notes show",
        gate / git_show
    );
    println!(
        "{:<44} {:>8.2} ms",
        "git receipt gate HEAD (stale, walks)", stale
    );
}
