//! Bytes per receipt (issue 30): what a receipt costs a server and every clone
//! that fetches it, the signed chain apart from the notes display, against the
//! branches they describe, measured in the same run.
//!
//! Builds a repository in-process: COMMITS commits (git fast-import, each
//! changing `src/lib.rs`, so every commit has inputs of its own), then RECEIPTS
//! receipts through the library's own append path (`Store::append`, exactly as
//! `git receipt run` writes them: chain commit, tree, `receipt.json`, and one notes
//! commit per receipt, noting its commit and its inputs tree), spread round-robin
//! over WRITERS writers, two checks (`test`, `lint`) a commit. Nothing is packed
//! while it is built: the objects are loose, as a clone's are before gc.
//!
//! Then, for each set of refs a fetch could ask for, it packs what those refs
//! reach as `git pack-objects --revs` does for a fetch (the server's own delta
//! search, default window and depth) and counts the objects (`git rev-list
//! --objects`):
//!
//! - the branches (`refs/heads/*`): the baseline, a branches-only clone;
//! - the chains (`refs/receipts/*`): the signed record;
//! - the notes (`refs/notes/receipts/*`): the display, alone (`--not` the
//!   chains, so an object both reach is counted once, with the chains);
//! - chains and notes together (a push or fetch of both, as outside CI);
//! - everything (a mirror clone).
//!
//! Prints, per receipt, objects and packed bytes of each, the notes' share, and
//! the ratio of a mirror clone (and of a clone with chains but no notes: CI's
//! default, `receipt.pushNotes`) to a branches-only clone. Target (issue 30):
//! under 600 bytes per receipt packed, display included, for what a clone
//! fetches. Asserts nothing about size; it asserts that every receipt was
//! written and every note is there (`git notes show` of the last receipt's
//! commit), so it never measures a wrong repository.
//!
//! Usage: cargo bench --bench bytes [-- RECEIPTS [WRITERS]]  (default 10,000
//! receipts, 100 writers; COMMITS is RECEIPTS / 4); with GIT_RECEIPT_BENCH_KEEP
//! set, the repository is kept (for a profiler).

mod support;

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use git_receipt::receipt::{definition_digest, writer_id};
use git_receipt::store::Store;
use support::{check_body, fast_import, git, marks, pack_of, seeded_keys};

/// The refs under `prefix`, one a line.
fn refs(repo: &Path, prefix: &str) -> String {
    let mut out = git(repo, &["for-each-ref", "--format=%(refname)", prefix])
        .trim_end()
        .to_owned();
    out.push('\n');
    out
}

/// `refs` as `--not` lines: what they reach is left out.
fn not(refs: &str) -> String {
    let mut out = String::from("--not\n");
    out.push_str(refs);
    out
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let receipts = args.first().copied().unwrap_or(10_000);
    let writers = args.get(1).copied().unwrap_or(100).max(1);
    let commits = (receipts / 4).max(1);

    let tmp = tempfile::tempdir().unwrap();
    support::sealed_home(tmp.path());
    // a push in this process would leave its notes behind in CI; none is made,
    // but the figures must not depend on where the bench runs
    // SAFETY: single-threaded at this point.
    unsafe { std::env::remove_var("CI") };
    let repo = tmp.path().join("repo");
    git(
        tmp.path(),
        &["init", "-q", "-b", "main", repo.to_str().unwrap()],
    );

    // 1. history
    let t = Instant::now();
    let contract = "[check \"test\"]\n\trun = cargo test\n\tpath = src\n\trequired = true\n[check \"lint\"]\n\trun = cargo clippy\n\tpath = src\n";
    let mut stream = Vec::new();
    for c in 0..commits {
        writeln!(stream, "commit refs/heads/main\nmark :{}", c + 1).unwrap();
        let msg = format!("change {c}\n");
        write!(
            stream,
            "committer Dev <dev@example.org> {} +0000\ndata {}\n{msg}",
            1_700_000_000 + c,
            msg.len()
        )
        .unwrap();
        if c == 0 {
            write!(
                stream,
                "M 100644 inline .gitreceipts\ndata {}\n{contract}",
                contract.len()
            )
            .unwrap();
        }
        let body = format!("pub fn f() -> u64 {{ {c} }}\n");
        write!(
            stream,
            "M 100644 inline src/lib.rs\ndata {}\n{body}",
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

    // 2. receipts, through the append path (notes included), loose
    let t = Instant::now();
    let store = Store::open(&repo).unwrap();
    let keys = seeded_keys(writers);
    let paths = vec!["src".to_owned()];
    let checks: Vec<(&str, Vec<String>)> = [("test", "cargo test"), ("lint", "cargo clippy")]
        .into_iter()
        .map(|(name, run)| (name, vec!["sh".to_owned(), "-c".to_owned(), run.to_owned()]))
        .collect();
    let mut last_commit = String::new();
    for r in 0..receipts {
        let c = (r / 4).min(commits - 1);
        let commit = gix::ObjectId::from_hex(ids[c].as_bytes()).unwrap();
        let tree = store.commit_tree(commit).unwrap();
        let inputs = store.inputs_tree(tree, &paths, true).unwrap();
        let key = &keys[r % writers];
        let writer = writer_id(key.public(), "bench");
        let (name, argv) = &checks[(r / 2) % 2];
        let definition = definition_digest(argv, &paths, &[]);
        store
            .append(&writer, key, &[], |index, prev| {
                let mut body = check_body(&writer, index, prev, commit, tree, inputs, r as u64);
                body.check.name = (*name).into();
                body.check.argv = argv.clone();
                body.check.definition = definition.clone();
                body.runner.host = format!("ci-runner-{}", r % 7);
                body
            })
            .unwrap();
        last_commit = commit.to_string();
    }
    eprintln!(
        "receipts: {receipts} from {writers} writers appended in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    // every receipt written, and its notes: stock git reads the last one's
    let chains = refs(&repo, "refs/receipts/");
    let total: usize = chains
        .lines()
        .map(|r| {
            git(&repo, &["rev-list", "--count", r])
                .trim()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(total, receipts, "every receipt is on a chain");
    let last_writer = writer_id(keys[(receipts - 1) % writers].public(), "bench");
    let shown = git(
        &repo,
        &[
            "notes",
            &format!("--ref=receipts/{last_writer}"),
            "show",
            &last_commit,
        ],
    );
    assert!(shown.contains(" passed"), "{shown}");

    // 3. what each set of refs costs a fetch
    let t = Instant::now();
    let branches = refs(&repo, "refs/heads/");
    let notes = refs(&repo, "refs/notes/receipts/");
    let (b_obj, b_bytes) = pack_of(&repo, &branches);
    let (c_obj, c_bytes) = pack_of(&repo, &chains);
    let (n_obj, n_bytes) = pack_of(&repo, &format!("{notes}{}", not(&chains)));
    let (cn_obj, cn_bytes) = pack_of(&repo, &format!("{chains}{notes}"));
    let (all_obj, all_bytes) = pack_of(&repo, &format!("{branches}{chains}{notes}"));
    let (bc_obj, bc_bytes) = pack_of(&repo, &format!("{branches}{chains}"));
    eprintln!("packing: {:.1}s", t.elapsed().as_secs_f64());

    let n = receipts as f64;
    println!(
        "`cargo bench --bench bytes -- {receipts} {writers}` ({receipts} receipts, {writers} writers, {commits} commits, 2 checks a commit; one notes commit per receipt, as `run` of one check writes them; packed as a fetch packs them)\n"
    );
    println!("| refs fetched | objects | packed | objects / receipt | bytes / receipt |");
    println!("|---|---:|---:|---:|---:|");
    let row = |what: &str, obj: u64, bytes: u64| {
        println!(
            "| {what} | {obj} | {:.1} KiB | {:.2} | {:.0} |",
            bytes as f64 / 1024.0,
            obj as f64 / n,
            bytes as f64 / n
        );
    };
    row("branches (`refs/heads/*`): the baseline", b_obj, b_bytes);
    row(
        "chains (`refs/receipts/*`): the signed record",
        c_obj,
        c_bytes,
    );
    row(
        "notes alone (`refs/notes/receipts/*`, not what the chains reach)",
        n_obj,
        n_bytes,
    );
    row(
        "chains and notes (a push or fetch of both)",
        cn_obj,
        cn_bytes,
    );
    row(
        "branches and chains (a clone + fetch, notes derived locally: CI's default)",
        bc_obj,
        bc_bytes,
    );
    row("everything (a mirror clone)", all_obj, all_bytes);
    println!();
    println!(
        "notes / chains: {:.2}x the bytes, {:.2}x the objects",
        n_bytes as f64 / c_bytes as f64,
        n_obj as f64 / c_obj as f64
    );
    println!(
        "a mirror clone / a branches-only clone: {:.2}x; branches and chains (no notes) / branches only: {:.2}x",
        all_bytes as f64 / b_bytes as f64,
        bc_bytes as f64 / b_bytes as f64
    );
    println!(
        "bytes per receipt a fetch of chains takes: {:.0} (target under 600 with the display; with notes: {:.0})",
        c_bytes as f64 / n,
        cn_bytes as f64 / n
    );
    if std::env::var_os("GIT_RECEIPT_BENCH_KEEP").is_some() {
        let kept = tmp.keep();
        eprintln!("kept {}", kept.display());
    }
}
