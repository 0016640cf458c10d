//! Bounded reads (issue 22, item 5): a huge `.gitreceipts` or note is refused from
//! its object header, never read whole, and an ssh-agent that never answers times
//! out. Each input is real: a 256 MiB blob (a comment line repeated, so it packs
//! into a few hundred KiB) written by `git hash-object -w` into a real repository,
//! the real binary measured by GNU time (`%M`, peak resident KB), a real
//! `git daemon` for the server hook, and a fake agent on a Unix socket of the
//! test's own that lists the key and then never answers.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{self, Daemon, Env, Run, to_run};
use base64::Engine as _;

/// 256 MiB: the size of each oversized input.
const HUGE: u64 = 256 << 20;

/// Peak memory a bounded read may take, in KB (64 MB).
const BOUND_KB: u64 = 64 * 1024;

/// Write a 256 MiB blob of one comment line repeated into `repo`'s objects; its id.
fn huge_blob(env: &Env, repo: &Path) -> String {
    let file = env.path("huge");
    let line = b"# a comment line, repeated until the file is 256 MiB\n";
    let mut out = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    let mut left = HUGE as usize;
    while left > 0 {
        let n = left.min(line.len());
        out.write_all(&line[..n]).unwrap();
        left -= n;
    }
    out.into_inner().unwrap().sync_all().unwrap();
    let id = env.git_ok(repo, &["hash-object", "-w", file.to_str().unwrap()]);
    std::fs::remove_file(&file).unwrap();
    id
}

/// Commit blob `id` as `.gitreceipts` (through the index only: the work tree
/// keeps its small file, nothing writes 256 MiB to disk); the new commit.
fn commit_contract_blob(env: &Env, repo: &Path, id: &str) -> String {
    env.git_ok(
        repo,
        &[
            "update-index",
            "--cacheinfo",
            &format!("100644,{id},.gitreceipts"),
        ],
    );
    env.git_ok(repo, &["commit", "-qm", "a huge .gitreceipts"]);
    env.git_ok(repo, &["rev-parse", "HEAD"])
}

/// Run the real binary under GNU time in `dir` with `input` on stdin: what it did,
/// and its peak resident memory in KB.
fn measured(env: &Env, dir: &Path, args: &[&str], input: &[u8]) -> (Run, u64) {
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "maxrss %M"]).arg(common::bin()).args(args);
    env.seal(&mut cmd);
    let mut child = cmd
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("GNU time (/usr/bin/time) must be installed");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let mut run = to_run(child.wait_with_output().unwrap());
    let (rest, kb) = run
        .stderr
        .trim_end()
        .rsplit_once('\n')
        .map_or(("", run.stderr.trim_end()), |(a, b)| (a, b));
    let kb: u64 = kb
        .strip_prefix("maxrss ")
        .unwrap_or_else(|| panic!("time reports the peak: {run}"))
        .trim()
        .parse()
        .unwrap();
    run.stderr = format!("{rest}\n");
    (run, kb)
}

#[test]
fn a_huge_committed_gitreceipts_is_refused_unread_by_status() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let id = huge_blob(&env, &repo);
    let commit = commit_contract_blob(&env, &repo, &id);
    for args in [&["status"][..], &["status", "HEAD"], &["gate", "HEAD"]] {
        let (r, kb) = measured(&env, &repo, args, b"");
        assert_eq!(r.code, 2, "{args:?} cannot decide: {r}");
        assert!(
            r.stderr.contains(&format!(
                ".gitreceipts at {commit} is {HUGE} bytes, over the 4194304-byte (4 MiB) limit"
            )),
            "{args:?} names the size, the limit and the commit: {r}"
        );
        assert!(
            r.stderr.contains("hint: .gitreceipts holds only checks"),
            "{args:?} says how to fix it: {r}"
        );
        assert!(
            kb < BOUND_KB,
            "{args:?} took {kb} KB for a 256 MiB .gitreceipts"
        );
    }
}

#[test]
fn a_huge_gitreceipts_in_the_work_tree_is_refused_unread_by_run() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    // a sparse file: 256 MiB by its metadata, nothing on disk
    let file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(repo.join(".gitreceipts"))
        .unwrap();
    file.set_len(HUGE).unwrap();
    drop(file);
    for args in [&["run", "test"][..], &["status"]] {
        let (r, kb) = measured(&env, &repo, args, b"");
        assert_eq!(r.code, 2, "{args:?}: {r}");
        assert!(
            r.stderr.contains(&format!(
                ".gitreceipts is {HUGE} bytes, over the 4194304-byte (4 MiB) limit"
            )),
            "{args:?}: {r}"
        );
        assert!(kb < BOUND_KB, "{args:?} took {kb} KB");
    }
    assert_eq!(
        env.git_ok(&repo, &["for-each-ref", "refs/receipts/"]),
        "",
        "nothing ran, nothing was written"
    );
}

#[test]
fn the_server_refuses_a_push_of_a_protected_branch_with_a_huge_gitreceipts() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let seed = env.fixture_repo("make_basic_repo.sh", "seed");
    let (bare, url) = daemon.bare(&env, "big.git");
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    env.receipt_ok(&bare, &["install-hooks", "--server"]);
    let old = env.git_ok(&seed, &["rev-parse", "HEAD"]);
    let id = huge_blob(&env, &seed);
    let new = commit_contract_blob(&env, &seed, &id);

    let r = env.git(&seed, &["push", "--no-verify", url.as_str(), "main"]);
    assert_ne!(r.code, 0, "the push is refused: {r}");
    assert!(
        r.stderr.contains(&format!(
            "refs/heads/main ({}): refused: a protected branch's .gitreceipts must be at most 4194304 bytes (4 MiB)",
            &new[..7]
        )),
        "names the branch and the rule: {r}"
    );
    assert!(r.stderr.contains(&format!("is {HUGE} bytes")), "{r}");
    assert_eq!(env.git_ok(&bare, &["rev-parse", "main"]), old);

    // the hook itself, measured: the objects reach the server on a branch it does
    // not protect, then the hook judges main's update as a push would ask it
    let r = env.git(
        &seed,
        &["push", "--no-verify", url.as_str(), "main:refs/heads/side"],
    );
    assert_eq!(r.code, 0, "an unprotected branch is not gated: {r}");
    let input = format!("{old} {new} refs/heads/main\n");
    let (r, kb) = measured(&env, &bare, &["hook", "pre-receive"], input.as_bytes());
    assert_eq!(r.code, 1, "refused, not crashed: {r}");
    assert!(r.stderr.contains("git-receipt: refusing the push"), "{r}");
    assert!(r.stderr.contains("refs/heads/main"), "{r}");
    assert!(kb < BOUND_KB, "the hook took {kb} KB");
}

#[test]
fn a_huge_note_is_a_verify_finding_not_read() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let writer = env.only_writer(&repo);
    let id = huge_blob(&env, &repo);
    let first = env.git_ok(&repo, &["rev-parse", "HEAD~1"]);
    env.git_ok(
        &repo,
        &[
            "notes",
            &format!("--ref=refs/notes/receipts/{writer}"),
            "add",
            "-f",
            "-C",
            &id,
            &first,
        ],
    );
    let (r, kb) = measured(&env, &repo, &["verify"], b"");
    assert_eq!(r.code, 1, "a finding: {r}");
    assert!(
        r.stdout.contains("note too large") || r.stderr.contains("note too large"),
        "{r}"
    );
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains(&format!(
            "is {HUGE} bytes, over the 1048576-byte (1 MiB) limit"
        )),
        "{r}"
    );
    assert!(kb < BOUND_KB, "verify took {kb} KB for a 256 MiB note");
    // the next append replaces it with what the chain says
    let r = env.receipt_ok(&repo, &["reindex"]);
    let r2 = env.receipt(&repo, &["verify"]);
    assert_eq!(r2.code, 0, "after {r}: {r2}");
}

/// A fake ssh-agent on `socket`: it lists `key_blob` when asked for identities, and
/// holds every signing request open without ever answering.
fn silent_agent(socket: &Path, key_blob: Vec<u8>) {
    let listener = UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut len = [0u8; 4];
            if stream.read_exact(&mut len).is_err() {
                continue;
            }
            let mut request = vec![0u8; u32::from_be_bytes(len) as usize];
            if stream.read_exact(&mut request).is_err() {
                continue;
            }
            if request.first() == Some(&11) {
                // SSH_AGENT_IDENTITIES_ANSWER: one key, with a comment
                let mut body = vec![12u8];
                body.extend_from_slice(&1u32.to_be_bytes());
                for s in [&key_blob[..], b"fake"] {
                    body.extend_from_slice(&(s.len() as u32).to_be_bytes());
                    body.extend_from_slice(s);
                }
                let mut answer = (body.len() as u32).to_be_bytes().to_vec();
                answer.extend_from_slice(&body);
                let _ = stream.write_all(&answer);
            } else {
                held.push(stream); // never answered, never closed
            }
        }
    });
}

/// A repository whose signing key is a public key file, so it signs through the
/// agent; the socket path to give as SSH_AUTH_SOCK.
fn repo_signing_through(env: &Env) -> (PathBuf, PathBuf) {
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let line = env.receipt_ok(&repo, &["key", "generate"]).stdout;
    let pub_file = env.path("agent-key.pub");
    std::fs::write(&pub_file, &line).unwrap();
    env.git_ok(
        &repo,
        &["config", "receipt.signingKey", pub_file.to_str().unwrap()],
    );
    let blob = base64::engine::general_purpose::STANDARD
        .decode(line.split_whitespace().nth(1).unwrap())
        .unwrap();
    let socket = env.path("agent.sock");
    silent_agent(&socket, blob);
    (repo, socket)
}

/// `git receipt ARGS` with SSH_AUTH_SOCK set, bounded by coreutils `timeout` so
/// that a regression fails (exit 124) instead of hanging the suite.
fn receipt_via_agent(env: &Env, repo: &Path, socket: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new("timeout");
    cmd.arg("120").arg(common::bin()).args(args);
    env.seal(&mut cmd);
    cmd.current_dir(repo).env("SSH_AUTH_SOCK", socket);
    to_run(cmd.output().unwrap())
}

#[test]
fn an_ssh_agent_that_never_answers_times_out_and_run_says_what_became_of_the_check() {
    let env = Env::new();
    let (repo, socket) = repo_signing_through(&env);
    env.git_ok(&repo, &["config", "receipt.agentTimeout", "1"]);
    let r = receipt_via_agent(&env, &repo, &socket, &["run", "test"]);
    assert_ne!(r.code, 124, "git receipt run hung on the agent: {r}");
    assert_eq!(r.code, 2, "could not store the receipt: {r}");
    assert!(
        r.stderr.contains(&format!(
            "ssh-agent at {} (SSH_AUTH_SOCK) did not answer within 1s",
            socket.display()
        )),
        "{r}"
    );
    assert!(r.stderr.contains("hint: check `ssh-add -l`"), "{r}");
    assert!(
        r.stderr
            .contains("check \"test\" ran (exit 0), but its receipt could not be stored"),
        "the check's result is reported, not lost silently: {r}"
    );
    assert!(r.stdout.contains("tests-ran"), "the check ran: {r}");
    assert_eq!(
        env.git_ok(&repo, &["for-each-ref", "refs/receipts/"]),
        "",
        "no receipt without a signature"
    );

    // the environment variable wins over git config, and record times out alike
    let mut cmd = Command::new("timeout");
    cmd.arg("120")
        .arg(common::bin())
        .args(["record", "test", "--exit-code", "0"]);
    env.seal(&mut cmd);
    cmd.current_dir(&repo)
        .env("SSH_AUTH_SOCK", &socket)
        .env("GIT_RECEIPT_AGENT_TIMEOUT", "0.5");
    let r = to_run(cmd.output().unwrap());
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("did not answer within 0.5s"), "{r}");
}

#[test]
fn an_agent_timeout_that_is_not_seconds_is_refused_not_guessed() {
    let env = Env::new();
    let (repo, socket) = repo_signing_through(&env);
    for bad in ["abc", "0", "-3"] {
        env.git_ok(&repo, &["config", "receipt.agentTimeout", bad]);
        let r = receipt_via_agent(&env, &repo, &socket, &["run", "test"]);
        assert_eq!(r.code, 2, "{bad}: {r}");
        assert!(
            r.stderr.contains(&format!(
                "receipt.agentTimeout = {bad:?} is not a number of seconds"
            )),
            "{bad}: {r}"
        );
        assert!(!r.stdout.contains("tests-ran"), "{bad}: nothing ran: {r}");
    }
}

#[test]
fn a_log_over_the_display_limit_is_refused_unread_by_show() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.git_ok(&repo, &["config", "receipt.logLimit", "40m"]);
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        "yes 'test case ... ok' | head -c 40000000 | git receipt record test --exit-code 0 --log -",
    ]);
    env.seal(&mut cmd);
    let r = to_run(cmd.current_dir(&repo).output().unwrap());
    assert_eq!(r.code, 0, "{r}");
    let v = env.log_json(&repo);
    let id = v[0]["id"].as_str().unwrap().to_owned();
    let (r, kb) = measured(&env, &repo, &["show", "--log", &id], b"");
    // what it printed, short: a log shown whole would be 40 MB of failure message
    let said = format!(
        "exit {}, {} bytes on stdout\n--- stderr\n{}",
        r.code,
        r.stdout.len(),
        r.stderr
    );
    assert_eq!(r.code, 1, "not shown: {said}");
    assert!(
        r.stderr.contains(
            "the log is 40000000 bytes, over the 33554432-byte (32 MiB) limit for showing a log"
        ),
        "{said}"
    );
    assert!(r.stderr.contains("hint: `git cat-file blob "), "{said}");
    assert!(
        r.stdout.starts_with("--- stdout (last 4096 bytes)"),
        "the signed tails instead: {said}"
    );
    assert!(kb < BOUND_KB, "show --log took {kb} KB");
    // under the limit, the log is shown whole, as before
    env.git_ok(&repo, &["config", "receipt.logLimit", "1m"]);
    env.receipt_ok(&repo, &["run", "test"]);
    let id = env.log_json(&repo)[0]["id"].as_str().unwrap().to_owned();
    let r = env.receipt_ok(&repo, &["show", "--log", &id]);
    assert!(r.stdout.contains("tests-ran"), "{r}");
}
