//! `run`, `record`, `show`, `log` against a scripted fixture repository.

use crate::common::{self, Env};

#[test]
fn run_declared_check_streams_output_and_writes_a_receipt() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let r = env.receipt(&repo, &["run", "test"]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        r.stdout, "tests-ran\n",
        "the check's stdout passes through untouched: {r}"
    );
    assert!(r.stderr.contains("to-stderr\n"), "{r}");
    assert!(
        r.stderr.contains("created a new signing key"),
        "first use announces the key: {r}"
    );
    assert!(r.stderr.contains("git-receipt: test passed in "), "{r}");
    let log = env.log_json(&repo);
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["check"], "test");
    assert_eq!(log[0]["passed"], true);
    assert_eq!(log[0]["index"], 0);
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(log[0]["commit"], head.as_str());
    assert_eq!(log[0]["dirty"], false);
    // the key notice is said once only
    let again = env.receipt_ok(&repo, &["run", "test"]);
    assert!(
        !again.stderr.contains("created a new signing key"),
        "{again}"
    );
}

#[test]
fn failing_check_gets_a_failed_receipt_and_its_exit_code() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let r = env.receipt(
        &repo,
        &["run", "lint", "--", "sh", "-c", "echo bad; exit 7"],
    );
    assert_eq!(r.code, 7, "{r}");
    assert!(r.stderr.contains("lint failed"), "{r}");
    let log = env.log_json(&repo);
    assert_eq!(log[0]["passed"], false);
    assert_eq!(log[0]["exit_code"], 7);
}

#[test]
fn command_that_cannot_start_gets_a_failed_receipt_and_127() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let r = env.receipt(
        &repo,
        &["run", "ghost", "--", "/nonexistent/tool", "--flag"],
    );
    assert_eq!(r.code, 127, "{r}");
    assert!(
        r.stderr.contains("could not start \"/nonexistent/tool\""),
        "{r}"
    );
    let show = env.receipt_ok(&repo, &["show", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    let result = &v[0]["receipt"]["receipt"]["result"];
    assert_eq!(result["exit_code"], 127);
    assert_eq!(result["passed"], false);
    assert!(
        result["detail"]
            .as_str()
            .unwrap()
            .starts_with("could not start"),
        "{result}"
    );
}

#[test]
fn killed_by_signal_is_recorded_as_such() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let r = env.receipt(&repo, &["run", "sig", "--", "sh", "-c", "kill -TERM $$"]);
    assert_eq!(r.code, 143, "{r}");
    let show = env.receipt_ok(&repo, &["show", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(
        v[0]["receipt"]["receipt"]["result"]["detail"],
        "killed by signal 15"
    );
}

#[test]
fn unknown_check_names_the_declared_ones_and_the_fix() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let r = env.receipt(&repo, &["run", "tset"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("no check named \"tset\""), "{r}");
    assert!(r.stderr.contains("declared checks: test, docs"), "{r}");
    assert!(
        r.stderr.contains("git receipt run tset -- <command>"),
        "{r}"
    );
    assert_eq!(
        env.git_ok(&repo, &["for-each-ref", "refs/receipts/"]),
        "",
        "nothing written"
    );
}

#[test]
fn malformed_contract_is_reported_with_file_and_line() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    std::fs::write(
        repo.join(".gitreceipts"),
        "[check \"test\"]\n\trun = true\n\trequried = true\n",
    )
    .unwrap();
    let r = env.receipt(&repo, &["run", "test"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains(".gitreceipts:3: check \"test\": unknown key \"requried\""),
        "{r}"
    );
}

#[test]
fn non_utf8_output_is_kept_raw_in_the_log_and_lossy_in_the_tail() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let r = env.receipt(&repo, &["run", "bin", "--", "printf", "ok\\377\\376end"]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        r.raw_stdout, b"ok\xff\xfeend",
        "passes through byte for byte"
    );
    let show = env.receipt_ok(&repo, &["show", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    let result = &v[0]["receipt"]["receipt"]["result"];
    assert_eq!(result["stdout_tail"], "ok\u{fffd}\u{fffd}end");
    let log = result["log"].as_str().unwrap();
    let mut cmd = std::process::Command::new("git");
    env.seal(&mut cmd);
    let blob = cmd
        .current_dir(&repo)
        .args(["cat-file", "blob", log])
        .output()
        .unwrap();
    assert_eq!(blob.stdout, b"ok\xff\xfeend");
}

#[test]
fn record_stores_a_result_produced_elsewhere_with_its_log() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let log = env.path("out.txt");
    std::fs::write(&log, "line 1\nline 2\n").unwrap();
    let r = env.receipt_ok(
        &repo,
        &[
            "record",
            "test",
            "--exit-code",
            "0",
            "--log",
            log.to_str().unwrap(),
            "--duration-ms",
            "1234",
        ],
    );
    assert!(r.stderr.contains("recorded test passed (exit 0)"), "{r}");
    let show = env.receipt_ok(&repo, &["show", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    let result = &v[0]["receipt"]["receipt"]["result"];
    assert_eq!(result["mode"], "record");
    assert_eq!(result["duration_ms"], 1234);
    assert_eq!(result["stdout_tail"], "line 1\nline 2\n");
    assert_eq!(result["output_bytes"], 14);
    // the chain commit holds the receipt and its signer's key only; the log lives under its log ref
    let chain_commit = v[0]["chain_commit"].as_str().unwrap();
    assert_eq!(
        env.git_ok(&repo, &["ls-tree", "--name-only", chain_commit]),
        "receipt.json\nsigner.pub"
    );
    let log = result["log"].as_str().unwrap();
    let writer = env.only_writer(&repo);
    assert_eq!(
        env.git_ok(
            &repo,
            &["rev-parse", &format!("refs/receipt-logs/{writer}/{log}")]
        ),
        log
    );
    assert_eq!(
        env.git_ok(&repo, &["cat-file", "blob", log]),
        "line 1\nline 2"
    );
    assert_eq!(result["log_bytes"], 14);
    let sha = env.git_input(&repo, &["hash-object", "--stdin"], b"line 1\nline 2\n");
    assert_eq!(sha, log, "the log is the blob of the recorded output");
    // a failing recorded result
    let r = env.receipt_ok(&repo, &["record", "test", "--exit-code", "3"]);
    assert!(r.stderr.contains("recorded test failed (exit 3)"), "{r}");
}

#[test]
fn log_is_capped_at_the_configured_limit_and_says_so() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.git_ok(&repo, &["config", "receipt.logLimit", "100"]);
    let r = env.receipt(
        &repo,
        &[
            "run",
            "big",
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 100 ]; do echo 0123456789; i=$((i+1)); done",
        ],
    );
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(r.stdout.len(), 1100, "the terminal still sees everything");
    let v: serde_json::Value =
        serde_json::from_str(&env.receipt_ok(&repo, &["show", "--json"]).stdout).unwrap();
    let result = &v[0]["receipt"]["receipt"]["result"];
    assert_eq!(result["output_bytes"], 1100);
    assert_eq!(result["log_truncated"], true);
    let blob = env.git_ok(&repo, &["cat-file", "-s", result["log"].as_str().unwrap()]);
    assert_eq!(blob, "100");
}

#[test]
fn dirty_tree_receipt_names_the_tree_a_commit_of_those_changes_gets() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    std::fs::write(repo.join("src/lib.rs"), "pub fn changed() {}\n").unwrap();
    std::fs::write(repo.join("src/new.rs"), "// untracked\n").unwrap();
    let index_before = std::fs::read(repo.join(".git/index")).unwrap();
    let r = env.receipt_ok(&repo, &["run", "test"]);
    assert!(r.stderr.contains("[uncommitted changes]"), "{r}");
    assert_eq!(
        std::fs::read(repo.join(".git/index")).unwrap(),
        index_before,
        "the user's index is untouched"
    );
    let log = env.log_json(&repo);
    assert_eq!(log[0]["dirty"], true);
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(log[0]["commit"], head.as_str());
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(
        &repo,
        &["commit", "-qm", "commit exactly the tested changes"],
    );
    let tree = env.git_ok(&repo, &["rev-parse", "HEAD^{tree}"]);
    assert_eq!(log[0]["tree"], tree.as_str());
    // the uncommitted content is not reachable from the receipt refs
    let r = env.git(
        &repo,
        &[
            "rev-list",
            "--objects",
            "--glob=refs/receipts/*",
            "--glob=refs/notes/*",
        ],
    );
    assert_eq!(
        r.code, 0,
        "git rev-list lists the receipt refs' objects: {r}"
    );
    let reachable: Vec<&str> = r.stdout.lines().map(|l| &l[..40]).collect();
    let chain_commit = log[0]["chain_commit"].as_str().unwrap();
    assert!(
        reachable.contains(&chain_commit),
        "the listing covers the chain (so an empty one cannot pass): {r}"
    );
    assert!(
        !reachable.contains(&tree.as_str()),
        "the dirty tree is not reachable from receipt refs"
    );
}

#[test]
fn show_lists_receipts_for_that_commit_and_those_deciding_its_checks() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    // HEAD~1 has HEAD's inputs for `test`: HEAD's receipt decides it there, and
    // show says so rather than that it is a receipt about HEAD~1
    let r = env.receipt_ok(&repo, &["show", "HEAD~1"]);
    assert!(
        r.stdout
            .contains("  found    decides check test: present: inputs identical to"),
        "{r}"
    );
    assert!(!r.stdout.contains("its subject is"), "{r}");
    let r = env.receipt_ok(&repo, &["show"]);
    assert!(r.stdout.contains("check    test passed, exit 0"), "{r}");
    assert!(r.stdout.contains("verified (your key)"), "{r}");
}

#[test]
fn notes_are_readable_by_stock_git() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let writer = env.only_writer(&repo);
    let log = env.log_json(&repo);
    let id = log[0]["id"].as_str().unwrap();
    let note = env.git_ok(
        &repo,
        &["notes", &format!("--ref=receipts/{writer}"), "show", "HEAD"],
    );
    assert!(note.starts_with(id), "{note}");
    assert!(note.ends_with(" test passed"), "{note}");
    // the inputs tree (src only) carries the same note
    let inputs = log[0]["inputs"].as_str().unwrap();
    let mut expected = std::process::Command::new("git");
    env.seal(&mut expected);
    let src = env.git_ok(&repo, &["rev-parse", "HEAD:src"]);
    let mktree = expected
        .current_dir(&repo)
        .args(["mktree"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    mktree
        .stdin
        .as_ref()
        .unwrap()
        .write_all(format!("040000 tree {src}\tsrc\n").as_bytes())
        .unwrap();
    let out = mktree.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        inputs,
        "inputs = a tree holding only src/"
    );
    let note_on_inputs = env.git_ok(
        &repo,
        &["notes", &format!("--ref=receipts/{writer}"), "show", inputs],
    );
    assert_eq!(note_on_inputs, note);
    let shown = env.git_ok(&repo, &["log", "-1", "--notes=receipts/*", "--format=%N"]);
    assert!(shown.contains(id), "{shown}");
}

#[test]
fn outside_a_repository_says_so() {
    let env = Env::new();
    let r = env.receipt(env.tmp.path(), &["run", "x", "--", "true"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("not a git repository"), "{r}");
}

#[test]
fn no_commit_yet_says_what_to_do() {
    let env = Env::new();
    let repo = env.path("empty");
    env.git_ok(env.tmp.path(), &["init", "-q", repo.to_str().unwrap()]);
    let r = env.receipt(&repo, &["run", "x", "--", "true"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("HEAD has no commit yet"), "{r}");
}

#[test]
fn only_allow_listed_environment_values_are_recorded() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    std::fs::write(
        repo.join(".gitreceipts"),
        "[check \"test\"]\n\trun = true\n\tenv = RUSTFLAGS\n\tenv = ABSENT_VAR\n",
    )
    .unwrap();
    let r = env.receipt_with(
        &repo,
        &["run", "test"],
        &[
            ("RUSTFLAGS", "-Dwarnings"),
            ("SECRET_TOKEN", "hunter2-do-not-record"),
        ],
    );
    assert_eq!(r.code, 0, "{r}");
    let v: serde_json::Value =
        serde_json::from_str(&env.receipt_ok(&repo, &["show", "--json"]).stdout).unwrap();
    let check = &v[0]["receipt"]["receipt"]["check"];
    assert_eq!(
        check["env"],
        serde_json::json!({"RUSTFLAGS": "-Dwarnings"}),
        "unset names are omitted"
    );
    let chain_commit = v[0]["chain_commit"].as_str().unwrap();
    let bytes = env.receipt_bytes(&repo, chain_commit);
    assert!(
        !String::from_utf8_lossy(&bytes).contains("hunter2"),
        "no other value is recorded"
    );
}

#[test]
fn timeout_kills_the_check_and_records_why() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    std::fs::write(
        repo.join(".gitreceipts"),
        "[check \"slow\"]\n\trun = \"echo begin; sleep 30; echo never\"\n\ttimeout = 1\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let r = env.receipt(&repo, &["run", "slow"]);
    assert_eq!(r.code, 124, "{r}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the sleep was killed, not waited for"
    );
    assert!(r.stderr.contains("timed out after 1s"), "{r}");
    assert_eq!(r.stdout, "begin\n");
    let v: serde_json::Value =
        serde_json::from_str(&env.receipt_ok(&repo, &["show", "--json"]).stdout).unwrap();
    let result = &v[0]["receipt"]["receipt"]["result"];
    assert_eq!(result["passed"], false);
    assert_eq!(result["detail"], "timed out after 1s and was killed");
}

/// A timed-out check's whole process group dies even when `kill` is not on
/// PATH (issue 25): the check's grandchild, which holds its output open, is
/// signalled directly, so `run` neither waits on it nor leaves it behind.
#[test]
fn a_timed_out_check_with_no_kill_on_path_has_its_grandchildren_killed_too() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let pidfile = env.path("grandchild.pid");
    std::fs::write(
        repo.join(".gitreceipts"),
        format!(
            "[check \"slow\"]\n\trun = \"sleep 300 & echo $! > {}; wait\"\n\ttimeout = 1\n",
            pidfile.display()
        ),
    )
    .unwrap();
    // a PATH with sh, sleep and git, and no kill
    let sealed = env.path("sealed-bin");
    std::fs::create_dir_all(&sealed).unwrap();
    for tool in ["sh", "sleep", "git"] {
        let found = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        let path = String::from_utf8(found.stdout).unwrap();
        std::os::unix::fs::symlink(path.trim(), sealed.join(tool)).unwrap();
    }
    assert!(!sealed.join("kill").exists());
    // a watchdog far below the grandchild's 300 s: a run that waits on it fails
    let mut cmd = std::process::Command::new("/usr/bin/timeout");
    env.seal(&mut cmd);
    cmd.arg("60")
        .arg(common::bin())
        .args(["run", "slow"])
        .current_dir(&repo)
        .env("PATH", &sealed);
    let r = common::to_run(cmd.output().unwrap());
    assert_eq!(r.code, 124, "the check timed out, run itself did not: {r}");
    assert!(r.stderr.contains("timed out after 1s"), "{r}");
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let pid = pid.trim();
    assert!(!pid.is_empty());
    // reaped by init once killed; give the kernel a moment to tear it down
    let mut alive = true;
    for _ in 0..50 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        alive = !stat.is_empty() && !stat.contains(") Z ");
        if !alive {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!alive, "the grandchild {pid} was killed with its group");
}

#[test]
fn git_dash_c_settings_reach_git_receipt_as_git_passes_them() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    // `git -c` (GIT_CONFIG_PARAMETERS): a chain named x, a log limit refused
    let r = env.git(&repo, &["-c", "receipt.chain=x", "receipt", "run", "test"]);
    assert_eq!(r.code, 0, "{r}");
    let writer = env.only_writer(&repo);
    assert!(writer.starts_with("x-"), "a chain named x: {writer}");
    let r = env.git(
        &repo,
        &["-c", "receipt.logLimit=abc", "receipt", "run", "test"],
    );
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr
            .contains("receipt.logLimit = \"abc\" is not a size"),
        "{r}"
    );
    // `-c` wins over the repository's own config, as in git
    env.git_ok(&repo, &["config", "receipt.chain", "fromfile"]);
    let r = env.git(&repo, &["-c", "receipt.chain=y", "receipt", "run", "docs"]);
    assert_eq!(r.code, 0, "{r}");
    let refs = env.git_ok(
        &repo,
        &["for-each-ref", "--format=%(refname)", "refs/receipts/"],
    );
    assert!(refs.contains("refs/receipts/y-"), "{refs}");
    assert!(!refs.contains("refs/receipts/fromfile-"), "{refs}");
    // the other environment form: GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n/VALUE_n
    env.git_ok(&repo, &["config", "--unset", "receipt.chain"]);
    let count = [
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "receipt.chain"),
        ("GIT_CONFIG_VALUE_0", "z"),
    ];
    let r = env.receipt_with(&repo, &["run", "docs"], &count);
    assert_eq!(r.code, 0, "{r}");
    let refs = env.git_ok(
        &repo,
        &["for-each-ref", "--format=%(refname)", "refs/receipts/"],
    );
    assert!(refs.contains("refs/receipts/z-"), "{refs}");
    let limit = [
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "receipt.logLimit"),
        ("GIT_CONFIG_VALUE_0", "abc"),
    ];
    let r = env.receipt_with(&repo, &["run", "test"], &limit);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("is not a size"), "{r}");
    // a malformed GIT_CONFIG_PARAMETERS is refused, naming the variable
    let r = env.receipt_with(
        &repo,
        &["run", "test"],
        &[("GIT_CONFIG_PARAMETERS", "'receipt.chain")],
    );
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("GIT_CONFIG_PARAMETERS"), "{r}");
}

#[test]
fn a_committed_gitreceipts_with_bad_syntax_is_checked_with_a_command_that_works() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    std::fs::write(repo.join(".gitreceipts"), "[check \"test\"\n\trun = true\n").unwrap();
    env.git_ok(&repo, &["commit", "-qam", "break the contract"]);
    let r = env.receipt(&repo, &["status", "HEAD"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        !r.stderr.contains("git config -f .gitreceipts at"),
        "no file is called that: {r}"
    );
    let hint = "git config --blob HEAD:.gitreceipts --list";
    assert!(r.stderr.contains(hint), "{r}");
    // the hint's command, run as given, shows the same error
    let args: Vec<&str> = hint.split(' ').skip(1).collect();
    let check = env.git(&repo, &args);
    assert_ne!(check.code, 0, "{check}");
    assert!(check.stderr.contains("bad config line"), "{check}");
    // for the work tree's own file on disk (changed, uncommitted), -f names it
    std::fs::write(repo.join(".gitreceipts"), "[check \"docs\"\n").unwrap();
    let r = env.receipt(&repo, &["status"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("git config -f .gitreceipts --list"),
        "{r}"
    );
}

/// A chain commit's message is for people reading `git log` of the chain: what
/// the receipt says and its place, without the receipt id (issue 30: 8% of a
/// receipt's packed bytes); `git receipt log` prints the id.
#[test]
fn a_chain_commit_says_what_the_receipt_says_without_its_id() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let writer = env.only_writer(&repo);
    let message = env.git_ok(
        &repo,
        &[
            "log",
            "-1",
            "--format=%B",
            &format!("refs/receipts/{writer}"),
        ],
    );
    assert_eq!(message.trim_end(), "receipt: test passed #0");
    let id = env.log_json(&repo)[0]["id"].as_str().unwrap().to_owned();
    assert!(!message.contains(&id));
    let r = env.receipt_ok(&repo, &["log"]);
    assert!(r.stdout.contains(&id[..19]), "{r}");
}
