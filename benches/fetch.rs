//! `git receipt fetch` with many writers, against plain `git fetch` of the same
//! refspecs measured in the same run (issue 27): nothing new, and one new receipt.
//!
//! The state is a user's: a server (a bare repository reached over `file://`, so
//! git runs its real transport) with WRITERS chains of one receipt each, written
//! with `git fast-import` from bodies signed here; a real `git clone` of it, `git
//! receipt init`, one `git receipt fetch` (not timed) that admits every chain. Refs
//! stay loose (nothing packs them, as after a fetch until gc) and there is no
//! commit-graph. Then rounds alternate the cases, so the machine's noise falls on
//! each:
//!
//! - **nothing new**: `git fetch --no-tags origin '+refs/receipts/*:refs/baseline/*'`
//!   (the baseline: the chains' refspec, nothing to transfer) against `git receipt
//!   fetch`;
//! - **one new receipt**: one more entry on one writer's chain on the server, then
//!   the same two commands (each takes that one entry).
//!
//! Then, apart: the first `git receipt gate` after the first fetch, which finds
//! the receipt index that fetch left current, against a gate with no index file
//! (`GIT_RECEIPT_INDEX=0`: it indexes every chain first, as the first gate after a
//! fetch did when fetch wrote no index).
//!
//! Last, `git receipt gate HEAD` reading that index with every writer's ref loose
//! (as a fetch leaves them, until gc), then packed (`git pack-refs --all`), each
//! against `git for-each-ref refs/receipts/` (stock git reading the same refs in
//! the same state: what a gate cannot do with less) and `git notes show` of one
//! writer's note, alternated. `-- 10000 7` is the 10,000-writer row of issue 27.
//!
//! Prints the median wall time of each and the ratio; asserts nothing but that the
//! fetches and gates succeed.
//!
//! Usage: cargo bench --bench fetch [-- WRITERS ROUNDS]   (default 1000 7); with
//! GIT_RECEIPT_BENCH_KEEP set, the repositories are kept (for a profiler).

mod support;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use git_receipt::receipt::{Receipt, writer_id};
use support::{
    BIN, chain_entry, check_body, fast_import_bare, git, median, receipt_output, seeded_keys,
    timed_ms,
};

fn receipt(dir: &Path, home: &Path, args: &[&str]) {
    let out = receipt_output(dir, home, args);
    assert!(
        out.status.success(),
        "git receipt {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let writers: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(7);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();

    // the served history: one commit with a .gitreceipts declaring `test`
    let seed = tmp.path().join("seed");
    git(
        tmp.path(),
        &["init", "-q", "-b", "main", seed.to_str().unwrap()],
    );
    std::fs::create_dir_all(seed.join("src")).unwrap();
    std::fs::write(seed.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(
        seed.join(".gitreceipts"),
        format!(
            "[check \"test\"]\n\trun = {}\n\tpath = src\n\trequired = true\n",
            support::CHECK_RUN
        ),
    )
    .unwrap();
    git(&seed, &["add", "-A"]);
    git(
        &seed,
        &[
            "-c",
            "user.name=B",
            "-c",
            "user.email=b@x",
            "commit",
            "-qm",
            "c",
        ],
    );
    let commit = git(&seed, &["rev-parse", "HEAD"]);
    let tree = git(&seed, &["rev-parse", "HEAD^{tree}"]);
    let inputs = git(&seed, &["rev-parse", "HEAD:src"]);
    let server = tmp.path().join("server.git");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--bare",
            seed.to_str().unwrap(),
            server.to_str().unwrap(),
        ],
    );

    // WRITERS chains of one receipt each
    let t = Instant::now();
    let keys = seeded_keys(writers + rounds);
    let mut tips: Vec<(String, u64, String)> = Vec::new(); // (writer, index, id)
    let mut stream = Vec::new();
    for (i, key) in keys.iter().take(writers).enumerate() {
        let writer = writer_id(key.public(), "default");
        let body = check_body(&writer, 0, None, &commit, &tree, &inputs, i as u64);
        let r = Receipt::sign(body, key).unwrap();
        chain_entry(&mut stream, &r, key.public(), None, None, i as u64);
        tips.push((writer, 0, r.id().to_owned()));
    }
    fast_import_bare(&server, &stream);
    eprintln!(
        "server: {writers} writers, one receipt each, in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    // a user's clone: git clone, init, the first fetch
    let client = tmp.path().join("client");
    let url = format!("file://{}", server.display());
    git(tmp.path(), &["clone", "-q", &url, client.to_str().unwrap()]);
    receipt(&client, &home, &["init"]);
    let t = Instant::now();
    receipt(&client, &home, &["fetch"]);
    eprintln!(
        "first git receipt fetch of {writers} chains: {:.0} ms (not in the table)",
        t.elapsed().as_secs_f64() * 1000.0
    );
    // the first gate after that fetch, which finds the index the fetch left,
    // against a gate that must index every chain first (no index file: what
    // the first gate after a fetch cost when fetch left none)
    let gate = |no_index: bool| {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(&client)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .arg("gate");
        if no_index {
            cmd.env("GIT_RECEIPT_INDEX", "0");
        }
        let out = cmd.output().expect("git-receipt gate");
        // a verdict either way (the writers are strangers here: `test` reads
        // missing, exit 1), never an error
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "gate: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let first_gate = timed_ms(|| gate(false));
    let (mut with_index, mut indexing) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            indexing.push(timed_ms(|| gate(true)));
            with_index.push(timed_ms(|| gate(false)));
        } else {
            with_index.push(timed_ms(|| gate(false)));
            indexing.push(timed_ms(|| gate(true)));
        }
    }
    let baseline = |c: &Path| {
        git(
            c,
            &[
                "fetch",
                "--no-tags",
                "--quiet",
                "origin",
                "+refs/receipts/*:refs/baseline/*",
            ],
        );
    };
    baseline(&client);

    let (mut idle_git, mut idle_ours, mut new_git, mut new_ours) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let ours_first = round % 2 == 1;
        // nothing new
        let (g, o) = if ours_first {
            let o = timed_ms(|| receipt(&client, &home, &["fetch"]));
            (timed_ms(|| baseline(&client)), o)
        } else {
            let g = timed_ms(|| baseline(&client));
            (g, timed_ms(|| receipt(&client, &home, &["fetch"])))
        };
        idle_git.push(g);
        idle_ours.push(o);
        // one new receipt, on writer `round`'s chain
        let (writer, index, prev) = tips[round % writers].clone();
        let key = &keys[round % writers];
        let body = check_body(
            &writer,
            index + 1,
            Some(prev),
            &commit,
            &tree,
            &inputs,
            (writers + round) as u64,
        );
        let r = Receipt::sign(body, key).unwrap();
        let parent = git(&server, &["rev-parse", &format!("refs/receipts/{writer}")]);
        let mut s = Vec::new();
        chain_entry(
            &mut s,
            &r,
            key.public(),
            Some(&parent),
            None,
            (writers + round) as u64,
        );
        writeln!(s).unwrap();
        fast_import_bare(&server, &s);
        tips[round % writers] = (writer, index + 1, r.id().to_owned());
        let (g, o) = if ours_first {
            let o = timed_ms(|| receipt(&client, &home, &["fetch"]));
            (timed_ms(|| baseline(&client)), o)
        } else {
            let g = timed_ms(|| baseline(&client));
            (g, timed_ms(|| receipt(&client, &home, &["fetch"])))
        };
        new_git.push(g);
        new_ours.push(o);
    }
    let rows = [
        ("nothing new", median(idle_git), median(idle_ours)),
        ("one new receipt", median(new_git), median(new_ours)),
    ];
    println!(
        "\n`git receipt fetch`, {writers} writers, loose refs, no commit-graph, {rounds} rounds (median wall ms)"
    );
    println!("| case | git fetch (same refspec) | git receipt fetch | ratio |\n|---|---|---|---|");
    for (case, g, o) in rows {
        println!("| {case} | {g:.0} | {o:.0} | {:.2}x |", o / g);
    }
    println!(
        "\nthe first `git receipt gate` after that first fetch: {first_gate:.0} ms; then, median of {rounds}: {:.0} ms reading the index the fetch left, against {:.0} ms indexing all {writers} chains first (no index file), {:.2}x",
        median(with_index.clone()),
        median(indexing.clone()),
        median(with_index) / median(indexing)
    );

    // `gate HEAD` with every writer's ref loose (as after a fetch, until gc),
    // then packed (`git pack-refs --all`, as gc leaves them), each against
    // stock git reading the same refs (`git for-each-ref refs/receipts/`) and
    // reading one note (`git notes show`), alternated in the same run
    let notes_ref = git(
        &client,
        &[
            "for-each-ref",
            "--count=1",
            "--format=%(refname)",
            "refs/notes/receipts/",
        ],
    );
    let gate_rows = |state: &str| {
        let (mut ours, mut refs, mut note) = (Vec::new(), Vec::new(), Vec::new());
        let for_each_ref = || {
            git(
                &client,
                &["for-each-ref", "--format=%(objectname)", "refs/receipts/"],
            );
        };
        let notes_show = || {
            // a writer's note on HEAD (the bench's one commit carries them all)
            let _ = Command::new("git")
                .current_dir(&client)
                .args(["notes", "--ref", &notes_ref, "show", "HEAD"])
                .output()
                .expect("git notes show");
        };
        for round in 0..rounds {
            if round % 2 == 0 {
                refs.push(timed_ms(for_each_ref));
                note.push(timed_ms(notes_show));
                ours.push(timed_ms(|| gate(false)));
            } else {
                ours.push(timed_ms(|| gate(false)));
                note.push(timed_ms(notes_show));
                refs.push(timed_ms(for_each_ref));
            }
        }
        let (o, r, n) = (median(ours), median(refs), median(note));
        format!(
            "| {state} | {o:.0} | {r:.0} | {:.2}x | {n:.0} | {:.2}x |",
            o / r,
            o / n
        )
    };
    let loose = gate_rows("refs loose");
    git(&client, &["pack-refs", "--all"]);
    let packed = gate_rows("refs packed");
    println!(
        "\n`git receipt gate HEAD`, {writers} writers, the index the fetch left, {rounds} rounds (median wall ms)"
    );
    println!(
        "| state | gate | git for-each-ref refs/receipts/ | ratio | git notes show | ratio |\n|---|---|---|---|---|---|"
    );
    println!("{loose}\n{packed}");
    if std::env::var_os("GIT_RECEIPT_BENCH_KEEP").is_some() {
        let kept = tmp.keep();
        eprintln!("kept {} (client: client/, HOME: home/)", kept.display());
    }
}
