//! Full output logs travel on demand (issue 9): chains carry receipts only, logs
//! live under `refs/receipt-logs/<writer>/<blob>`, `receipt.pushLogs` decides which
//! are pushed, `show --log` fetches exactly one and checks it against the signed
//! size and SHA-256, and `prune-logs` drops old ones on both sides while `verify`
//! stays clean. Every test runs against a real `git daemon` on 127.0.0.1 with the
//! server's pre-receive hook installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Daemon, Env, Run, clone};

/// A served repository holding the basic fixture's `main` (whose `.gitreceipts`
/// trusts this environment's key), with the pre-receive hook, and a clone of it.
fn served(env: &Env, daemon: &Daemon, name: &str) -> (PathBuf, String, PathBuf) {
    let seed = env.fixture_repo("make_basic_repo.sh", &format!("seed-{name}"));
    let pubkey = env.receipt_ok(&seed, &["key", "generate"]).stdout;
    env.git_ok(
        &seed,
        &[
            "config",
            "-f",
            ".gitreceipts",
            "signer.dev.key",
            pubkey.trim(),
        ],
    );
    env.git_ok(&seed, &["commit", "-qam", "trust dev"]);
    let (bare, url) = daemon.bare(env, name);
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    env.git_ok(&bare, &["config", "receipt.protectedBranch", "main"]);
    env.receipt_ok(&bare, &["install-hooks", "--server"]);
    let dev = clone(env, &url, &format!("dev-{name}"));
    env.receipt_ok(&dev, &["init"]);
    (bare, url, dev)
}

/// `record test --exit-code CODE --log FILE` with `body` as the output; returns the
/// receipt id and the log blob id.
fn record(env: &Env, dir: &Path, code: i32, body: &[u8]) -> (String, String) {
    let file = env.path(&format!("out-{}.txt", body.len()));
    std::fs::write(&file, body).unwrap();
    env.receipt_ok(
        dir,
        &[
            "record",
            "test",
            "--exit-code",
            &code.to_string(),
            "--log",
            file.to_str().unwrap(),
        ],
    );
    let log = env.log_json(dir);
    let newest = log
        .iter()
        .max_by_key(|r| r["index"].as_u64().unwrap())
        .unwrap();
    (
        newest["id"].as_str().unwrap().to_owned(),
        newest["log"].as_str().unwrap().to_owned(),
    )
}

/// Test output of `n` lines, like `cargo test` prints, different for each `seed`.
fn output(seed: usize, n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| {
            format!(
                "test module_{seed}::case_{i} ... ok ({}.{:03}s)\n",
                i % 7,
                (i * 37 + seed) % 1000
            )
        })
        .collect::<String>()
        .into_bytes()
}

fn refs(env: &Env, dir: &Path, prefix: &str) -> Vec<String> {
    env.git_ok(dir, &["for-each-ref", "--format=%(refname)", prefix])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn has_object(env: &Env, dir: &Path, oid: &str) -> bool {
    env.git(dir, &["cat-file", "-e", oid]).code == 0
}

fn show_log(env: &Env, dir: &Path, id: &str) -> Run {
    env.receipt(dir, &["show", "--log", id])
}

#[test]
fn receipts_travel_without_logs_and_show_log_fetches_and_checks_exactly_one() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url, dev) = served(&env, &daemon, "logs.git");
    let failing = output(1, 2000);
    let passing = output(2, 2000);
    let (failed_id, failed_log) = record(&env, &dev, 1, &failing);
    let (passed_id, passed_log) = record(&env, &dev, 0, &passing);
    let writer = env.only_writer(&dev);
    // the chain commits hold the receipt and the signer's key only
    for r in env.log_json(&dev) {
        let commit = r["chain_commit"].as_str().unwrap();
        assert_eq!(
            env.git_ok(&dev, &["ls-tree", "--name-only", commit]),
            "receipt.json\nsigner.pub"
        );
    }
    let r = env.receipt_ok(&dev, &["push"]);
    assert!(
        r.stderr.contains("with 1 log"),
        "the failed log travels by default: {r}"
    );
    assert_eq!(
        refs(&env, &bare, "refs/receipt-logs/"),
        vec![format!("refs/receipt-logs/{writer}/{failed_log}")],
        "pushLogs = failed (the default) pushes the failed check's log only"
    );

    let ci = clone(&env, &url, "ci");
    env.receipt_ok(&ci, &["fetch"]);
    assert_eq!(env.log_json(&ci).len(), 2, "the receipts arrived");
    assert!(refs(&env, &ci, "refs/receipt-logs/").is_empty());
    assert!(
        !has_object(&env, &ci, &failed_log),
        "no log came with the receipts"
    );
    assert!(!has_object(&env, &ci, &passed_log));

    let r = show_log(&env, &ci, &failed_id);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(r.raw_stdout, failing, "the exact log bytes");
    assert_eq!(
        refs(&env, &ci, "refs/receipt-logs/"),
        vec![format!("refs/receipt-logs/{writer}/{failed_log}")],
        "kept under its log ref"
    );
    let r = show_log(&env, &ci, &failed_id);
    assert_eq!(r.code, 0, "now read locally: {r}");
    assert_eq!(r.raw_stdout, failing);

    let r = show_log(&env, &ci, &passed_id);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("nobody pushed the log"), "{r}");
    assert!(
        r.stdout.contains("--- stdout"),
        "the signed tails instead: {r}"
    );
    assert!(
        r.stdout.contains("case_1999"),
        "the tail of the output: {r}"
    );

    // fetch --logs brings every pushed log
    let other = clone(&env, &url, "other");
    env.receipt_ok(&other, &["fetch", "--logs"]);
    assert!(has_object(&env, &other, &failed_log));
    assert!(!has_object(&env, &other, &passed_log));
    assert_eq!(
        env.receipt_ok(&other, &["verify", "--trust", "origin/main"])
            .code,
        0
    );
}

#[test]
fn a_tampered_log_ref_is_refused_and_the_server_keeps_log_refs_honest() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url, dev) = served(&env, &daemon, "tamper.git");
    let (failed_id, failed_log) = record(&env, &dev, 1, &output(3, 200));
    let (_, other_log) = record(&env, &dev, 1, &output(4, 200));
    env.receipt_ok(&dev, &["push"]);
    let writer = env.only_writer(&dev);
    let name = format!("refs/receipt-logs/{writer}/{failed_log}");

    // through the hook, a log ref cannot be moved to another blob...
    let r = env.git(
        &dev,
        &[
            "push",
            "--no-verify",
            "origin",
            &format!("+{other_log}:{name}"),
        ],
    );
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("a log ref is never updated"), "{r}");
    // ...nor created at a blob its name does not give
    let bogus = format!("refs/receipt-logs/{writer}/{}", "0".repeat(40));
    let r = env.git(
        &dev,
        &[
            "push",
            "--no-verify",
            "origin",
            &format!("{other_log}:{bogus}"),
        ],
    );
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("must point at the blob its name gives"),
        "{r}"
    );

    // an administrator (or a server without the hook) moves it anyway; verify
    // on the server names it
    env.git_ok(&bare, &["update-ref", &name, &other_log]);
    let r = env.receipt(&bare, &["verify"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout.contains("[log]") && r.stdout.contains("not at the blob its name gives"),
        "{r}"
    );
    let ci = clone(&env, &url, "ci");
    env.receipt_ok(&ci, &["fetch"]);
    let r = show_log(&env, &ci, &failed_id);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr.contains("refusing the log")
            && r.stderr.contains("not at the blob its name gives"),
        "{r}"
    );
    assert!(
        refs(&env, &ci, "refs/receipt-logs/").is_empty(),
        "nothing kept"
    );
    let r = env.receipt(&ci, &["fetch", "--logs"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("log REJECTED"), "{r}");
    assert_eq!(
        refs(&env, &ci, "refs/receipt-logs/"),
        vec![format!("refs/receipt-logs/{writer}/{other_log}")],
        "only the honest log ref is taken"
    );
}

#[test]
fn push_logs_none_all_and_the_size_limit() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url, dev) = served(&env, &daemon, "policy.git");
    env.git_ok(&dev, &["config", "receipt.pushLogs", "none"]);
    let (failed_id, _) = record(&env, &dev, 1, &output(5, 100));
    env.receipt_ok(&dev, &["push"]);
    assert!(
        refs(&env, &bare, "refs/receipt-logs/").is_empty(),
        "pushLogs = none"
    );
    let ci = clone(&env, &url, "ci");
    env.receipt_ok(&ci, &["fetch"]);
    let r = show_log(&env, &ci, &failed_id);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("nobody pushed the log"), "{r}");

    env.git_ok(&dev, &["config", "receipt.pushLogs", "all"]);
    env.git_ok(&dev, &["config", "receipt.pushLogLimit", "1k"]);
    let (_, small) = record(&env, &dev, 0, &output(6, 5));
    let (_, big) = record(&env, &dev, 0, &output(7, 500));
    env.receipt_ok(&dev, &["push"]);
    let on_server = refs(&env, &bare, "refs/receipt-logs/");
    assert_eq!(on_server.len(), 1, "{on_server:?}");
    assert!(
        on_server[0].ends_with(&small),
        "the small log only: {on_server:?}"
    );
    assert!(!has_object(&env, &bare, &big), "the big log stays local");
    let r = env.receipt_ok(&dev, &["push", "--logs"]);
    assert!(r.stderr.contains("logs"), "{r}");
    assert_eq!(
        refs(&env, &bare, "refs/receipt-logs/").len(),
        3,
        "every log, when asked"
    );

    env.git_ok(&dev, &["config", "receipt.pushLogs", "some"]);
    let r = env.receipt(&dev, &["push"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains("receipt.pushLogs = \"some\" is not a setting"),
        "{r}"
    );
}

#[test]
fn prune_logs_drops_old_logs_on_both_sides_and_verify_stays_clean() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url, dev) = served(&env, &daemon, "prune.git");
    env.git_ok(&dev, &["config", "receipt.pushLogs", "all"]);
    let (id, log) = record(&env, &dev, 1, &output(8, 300));
    record(&env, &dev, 0, &output(9, 300));
    env.receipt_ok(&dev, &["push"]);
    assert_eq!(refs(&env, &bare, "refs/receipt-logs/").len(), 2);

    // nothing is that old yet
    let r = env.receipt_ok(&dev, &["prune-logs", "--older-than", "90d", "--push"]);
    assert!(
        r.stderr.contains("pruned 0 logs older than 90d here"),
        "{r}"
    );
    assert_eq!(refs(&env, &dev, "refs/receipt-logs/").len(), 2);
    // a dry run names them and deletes nothing
    let r = env.receipt_ok(
        &dev,
        &["prune-logs", "--older-than", "0h", "--push", "--dry-run"],
    );
    assert_eq!(r.stdout.lines().count(), 4, "two here, two on origin: {r}");
    assert_eq!(refs(&env, &bare, "refs/receipt-logs/").len(), 2);
    // everything is older than zero hours
    let r = env.receipt_ok(&dev, &["prune-logs", "--older-than", "0h", "--push"]);
    assert!(r.stderr.contains("pruned 2 logs older than 0h here"), "{r}");
    assert!(
        r.stderr.contains("pruned 2 logs older than 0h on origin"),
        "{r}"
    );
    assert!(refs(&env, &dev, "refs/receipt-logs/").is_empty());
    assert!(refs(&env, &bare, "refs/receipt-logs/").is_empty());
    env.git_ok(&dev, &["gc", "--quiet", "--prune=now"]);
    assert!(!has_object(&env, &dev, &log), "gc freed the log");

    // the receipts stay, with their tails, and verify on both sides
    assert_eq!(env.receipt_ok(&dev, &["verify"]).code, 0);
    let ci = clone(&env, &url, "ci");
    env.receipt_ok(&ci, &["fetch"]);
    let r = env.receipt_ok(&ci, &["verify", "--trust", "origin/main"]);
    assert!(r.stderr.contains("verified 2 receipts"), "{r}");
    let r = show_log(&env, &ci, &id);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout.contains("case_299"),
        "the signed tail is still there: {r}"
    );
    let r = env.receipt(&dev, &["prune-logs", "--older-than", "soon"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("hint: a number and a unit"), "{r}");
}

#[test]
fn a_v1_receipt_with_its_log_in_the_chain_still_reads_verifies_and_shows_its_log() {
    use git_receipt::receipt::{
        Body, Chain, Check, Kind, Mode, Outcome, Receipt, Runner, SCHEMA, Subject,
        definition_digest, format_timestamp, writer_id,
    };
    use git_receipt::sign::SigningKey;
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = SigningKey::from_seed(&[7; 32]);
    env.git_ok(
        &repo,
        &["config", "receipt.trustedKey", &key.public().to_openssh()],
    );
    let writer = writer_id(key.public(), "old");
    let log_text = b"an old log, kept in the chain\n";
    let log = env.git_input(&repo, &["hash-object", "-w", "--stdin"], log_text);
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    let tree = env.git_ok(&repo, &["rev-parse", "HEAD^{tree}"]);
    let inputs = env.git_ok(&repo, &["rev-parse", "HEAD:"]);
    let _ = inputs;
    let src_only = env.git_input(
        &repo,
        &["mktree"],
        format!(
            "040000 tree {}\tsrc\n",
            env.git_ok(&repo, &["rev-parse", "HEAD:src"])
        )
        .as_bytes(),
    );
    let argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        "echo tests-ran; echo to-stderr >&2".to_owned(),
    ];
    let body = Body {
        schema: SCHEMA.into(),
        kind: Kind::Check,
        chain: Chain {
            writer: writer.clone(),
            index: 0,
            prev: None,
        },
        subject: Subject {
            commit: head.clone(),
            tree,
            inputs: src_only,
            dirty: false,
            dependencies: Vec::new(),
        },
        check: Check {
            name: "test".into(),
            definition: definition_digest(&argv, &["src".to_owned()], &[]),
            argv,
            paths: vec!["src".into()],
            env: Default::default(),
        },
        result: Outcome {
            mode: Mode::Run,
            exit_code: 0,
            passed: true,
            started_at: format_timestamp(1_767_225_600_000),
            duration_ms: 5,
            stdout_tail: "an old log, kept in the chain\n".into(),
            stderr_tail: String::new(),
            log: Some(log.clone()),
            output_bytes: log_text.len() as u64,
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
            tool: "git-receipt 0.1.0".into(),
            host: "h".into(),
            os: "linux-x86_64".into(),
        },
        acceptance: None,
        review: None,
        supersedes: None,
    };
    let receipt = Receipt::sign(body, &key).unwrap();
    assert!(String::from_utf8_lossy(receipt.bytes()).contains("git-receipt/v1"));
    let blob = env.git_input(&repo, &["hash-object", "-w", "--stdin"], receipt.bytes());
    let chain_tree = env.git_input(
        &repo,
        &["mktree"],
        format!("100644 blob {log}\toutput.log\n100644 blob {blob}\treceipt.json\n").as_bytes(),
    );
    let commit = env.git_ok(
        &repo,
        &["commit-tree", &chain_tree, "-m", "receipt: test passed #0"],
    );
    env.git_ok(
        &repo,
        &["update-ref", &format!("refs/receipts/{writer}"), &commit],
    );

    let r = env.receipt_ok(&repo, &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["checks"][0]["state"], "present", "{r}");
    assert_eq!(v["checks"][0]["receipt"], receipt.id(), "{r}");
    let r = env.receipt_ok(&repo, &["verify"]);
    assert!(r.stderr.contains("verified 1 receipt "), "{r}");
    let r = show_log(&env, &repo, receipt.id());
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(r.raw_stdout, log_text);
    // and `ssh-keygen -Y verify` still accepts it (the v1 bytes are untouched)
    let body = env
        .receipt_ok(&repo, &["show", "--body", receipt.id()])
        .raw_stdout;
    let sig = env
        .receipt_ok(&repo, &["show", "--sshsig", receipt.id()])
        .stdout;
    let (msg, sigfile, signers) = (env.path("msg"), env.path("msg.sig"), env.path("signers"));
    std::fs::write(&msg, body).unwrap();
    std::fs::write(&sigfile, sig).unwrap();
    std::fs::write(
        &signers,
        format!(
            "old namespaces=\"git-receipt\" {}\n",
            key.public().to_openssh()
        ),
    )
    .unwrap();
    let out = env.ssh_keygen_verify(
        &signers,
        "old",
        "git-receipt",
        &sigfile,
        &std::fs::read(&msg).unwrap(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn record_streams_a_huge_log_in_bounded_memory() {
    // issue 10, item 6: `record --log -` read 1 GB into memory (992 MB resident)
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.git_ok(&repo, &["config", "receipt.logLimit", "1m"]);
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        "yes 'test case ... ok' | head -c 300000000 | /usr/bin/time -f 'maxrss %M' git receipt record test --exit-code 0 --log -",
    ]);
    env.seal(&mut cmd);
    let out = cmd.current_dir(&repo).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let kb: u64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("maxrss "))
        .expect("time reports the peak")
        .trim()
        .parse()
        .unwrap();
    assert!(kb < 64 * 1024, "300 MB of log took {kb} KB resident");
    let show = env.receipt_ok(&repo, &["show", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    let result = &v[0]["receipt"]["receipt"]["result"];
    assert_eq!(result["output_bytes"], 300_000_000u64);
    assert_eq!(result["log_truncated"], true);
    assert_eq!(result["log_bytes"], 1 << 20);
    // the tail is exactly the last 4096 bytes of the stream
    let line = b"test case ... ok\n";
    let n = 300_000_000usize;
    let tail: Vec<u8> = (n - 4096..n).map(|i| line[i % line.len()]).collect();
    assert_eq!(
        result["stdout_tail"].as_str().unwrap().as_bytes(),
        &tail[..]
    );
}

#[test]
fn a_log_limit_that_is_not_a_size_is_refused_not_guessed() {
    // issue 10, item 9: -1 silently dropped logs and `abc` silently meant the default
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    for bad in ["-1", "abc"] {
        env.git_ok(&repo, &["config", "receipt.logLimit", bad]);
        for args in [
            &["run", "test"][..],
            &["record", "test", "--exit-code", "0"],
        ] {
            let r = env.receipt(&repo, args);
            assert_eq!(r.code, 2, "{args:?} with logLimit {bad}: {r}");
            assert!(
                r.stderr.contains(&format!(
                    "receipt.logLimit = \"{bad}\" is not a size in bytes"
                )),
                "{r}"
            );
        }
    }
    assert_eq!(
        env.git(&repo, &["for-each-ref", "refs/receipts/"]).stdout,
        "",
        "no receipt was written"
    );
    env.git_ok(&repo, &["config", "receipt.logLimit", "0"]);
    env.receipt_ok(&repo, &["run", "test"]);
}
