//! `git receipt mcp` driven by the real MCP client from PyPI (the Python `mcp`
//! package, through `tests/fixtures/mcp_client.py`): an agent lists the tools, runs
//! a passing and a failing check, reads status and a log, and gets a clear tool
//! error for bad arguments while the server keeps serving.
//!
//! The client comes from `python3` when it already has the pinned `mcp` (`.ci/run`
//! installs `tests/requirements.txt`), else from a virtualenv made once under the
//! target directory from the same file. When neither can be had the tests print
//! why and skip, or fail when `CI` is set.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::{self, Env, bin, fixture};

/// The Python client's interpreter, or a printed reason to skip.
macro_rules! python_or_skip {
    () => {
        match common::pytools::need(&["mcp"], &["mcp.client.stdio"]) {
            Some(py) => py.exe,
            None => return,
        }
    };
}

/// Start `git receipt <server_args>` in `repo` from the Python client, make `calls`
/// in order, and return what the client saw.
fn session(env: &Env, python: &Path, repo: &Path, server_args: &[&str], calls: Value) -> Value {
    use std::io::Write;
    let spec = json!({
        "command": bin(),
        "args": server_args,
        "cwd": repo,
        "calls": calls,
    });
    let mut cmd = Command::new(python);
    cmd.arg(fixture("mcp_client.py"));
    env.seal(&mut cmd);
    let mut child = cmd
        .current_dir(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python MCP client");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(spec.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP client failed:\n{stderr}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("the client printed no JSON ({e}); stderr:\n{stderr}"))
}

/// The basic fixture plus a declared check `fails` that prints a line and exits 3.
fn repo_with_failing_check(env: &Env) -> PathBuf {
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str("[check \"fails\"]\n\trun = \"echo boom-line; exit 3\"\n");
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "declare a failing check"]);
    repo
}

/// Call `i`'s result, asserting it is one (not a protocol error).
fn result(seen: &Value, i: usize) -> &Value {
    let call = &seen["calls"][i];
    assert!(
        call.get("result").is_some(),
        "call {i} ({}) got no result: {call:#}",
        call["name"]
    );
    &call["result"]
}

/// The text of a result's (only) content block.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().expect("a text block")
}

fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

#[test]
fn an_agent_runs_a_passing_and_a_failing_check_and_reads_status_and_a_log() {
    let python = python_or_skip!();
    let env = Env::new();
    let repo = repo_with_failing_check(&env);
    let seen = session(
        &env,
        &python,
        &repo,
        &["mcp"],
        json!([
            {"name": "run", "arguments": {"check": "test"}},
            {"name": "run", "arguments": {"check": "fails"}},
            {"name": "status", "arguments": {}},
            {"name": "log", "arguments": {"rev": "HEAD", "check": "fails"}},
            {"name": "log", "arguments": {"rev": "HEAD", "check": "fails", "max_bytes": 4}},
            {"name": "gate", "arguments": {}},
            {"name": "flaky", "arguments": {"check": "fails"}},
            {"name": "status", "arguments": {"tests": true}},
        ]),
    );
    let names: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["status", "run", "show", "gate", "flaky", "log"]);
    for tool in seen["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool:#}");
    }
    assert_eq!(seen["calls"][1]["arguments"]["check"], "fails");

    let passed = result(&seen, 0);
    assert!(!is_error(passed), "{passed:#}");
    let run = &passed["structuredContent"];
    assert_eq!(
        (&run["check"], &run["state"], &run["exit_code"]),
        (&json!("test"), &json!("passed"), &json!(0)),
        "{run:#}"
    );
    // both streams, in the order they arrived (which differs from run to run)
    let tail = run["log_tail"].as_str().unwrap();
    assert!(
        tail.contains("tests-ran\n") && tail.contains("to-stderr\n") && tail.len() == 20,
        "{run:#}"
    );
    let test_id = run["receipt"].as_str().unwrap().to_owned();
    assert_eq!(run["shown"]["id"], test_id.as_str(), "{run:#}");
    assert_eq!(run["shown"]["signature_status"], "verified", "{run:#}");
    // the check's output reached the client while it ran, as progress
    let progress = seen["calls"][0]["progress"].as_array().unwrap();
    assert!(
        progress
            .iter()
            .flat_map(|p| p["message"].as_str().unwrap_or("").lines())
            .any(|line| line == "test: tests-ran"),
        "no progress notification carried the check's output: {progress:#?}"
    );

    let failed = result(&seen, 1);
    assert!(
        !is_error(failed),
        "a failing check is a result, not a tool error: {failed:#}"
    );
    let run = &failed["structuredContent"];
    assert_eq!(
        (&run["state"], &run["exit_code"], &run["log_tail"]),
        (&json!("failed"), &json!(3), &json!("boom-line\n")),
        "{run:#}"
    );
    let fails_id = run["receipt"].as_str().unwrap().to_owned();

    // status: exactly what `git receipt status --json` prints
    let status = result(&seen, 2);
    let cli = env.receipt_ok(&repo, &["status", "--json"]);
    assert_eq!(
        text(status),
        cli.stdout,
        "status over MCP is the CLI's JSON"
    );
    let states: Vec<(String, String, String)> = status["structuredContent"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["state"].as_str().unwrap().to_owned(),
                c["receipt"].as_str().unwrap_or("-").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("test".into(), "present".into(), test_id.clone()),
            ("docs".into(), "missing".into(), "-".into()),
            ("fails".into(), "failed".into(), fails_id.clone()),
        ]
    );

    let log = &result(&seen, 3)["structuredContent"];
    assert_eq!(
        (&log["text"], &log["output_bytes"], &log["truncated"]),
        (&json!("boom-line\n"), &json!(10), &json!(false)),
        "{log:#}"
    );
    let cut = &result(&seen, 4)["structuredContent"];
    assert_eq!(
        (&cut["text"], &cut["truncated"]),
        (&json!("ine\n"), &json!(true)),
        "max_bytes keeps the end of the log: {cut:#}"
    );

    // gate: the verdict on HEAD (only `test` is required, and it is present)
    let gate = result(&seen, 5);
    let cli = env.receipt_ok(&repo, &["gate", "--json"]);
    assert_eq!(text(gate), cli.stdout, "gate over MCP is the CLI's JSON");
    assert_eq!(
        serde_json::from_str::<Value>(text(gate)).unwrap()[0]["ok"],
        true
    );

    // flaky: the CLI's JSON (one run of `fails` records no per-test results:
    // nothing compared), and status with every check's test list asked for
    let flaky = result(&seen, 6);
    let cli = env.receipt_ok(&repo, &["flaky", "--json", "fails"]);
    assert_eq!(text(flaky), cli.stdout, "flaky over MCP is the CLI's JSON");
    assert_eq!(flaky["structuredContent"]["flaky"], json!([]), "{flaky:#}");
    assert_eq!(flaky["structuredContent"]["compared"], 0, "{flaky:#}");
    let with_tests = result(&seen, 7);
    assert!(!is_error(with_tests), "{with_tests:#}");
    let cli = env.receipt(&repo, &["status", "--json", "--tests"]);
    assert_eq!(
        text(with_tests),
        cli.stdout,
        "status --tests over MCP is the CLI's JSON"
    );
}

#[test]
fn bad_arguments_are_tool_errors_and_the_server_keeps_serving() {
    let python = python_or_skip!();
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let seen = session(
        &env,
        &python,
        &repo,
        &["mcp"],
        json!([
            {"name": "run", "arguments": {"check": 5}},
            {"name": "status", "arguments": {"bogus": true}},
            {"name": "status", "arguments": {"rev": "--output=/tmp/x"}},
            {"name": "status", "arguments": {"rev": "no-such-branch"}},
            {"name": "log", "arguments": {"receipt": "sha256:0000", "max_bytes": 0}},
            {"name": "log", "arguments": {"receipt": "sha256:0000", "rev": "HEAD"}},
            {"name": "run", "arguments": {"check": "no-such-check"}},
            {"name": "run", "arguments": {"check": "sneaky", "command": ["touch", "adhoc-ran"]}},
            {"name": "no_such_tool", "arguments": {}},
            {"name": "run", "arguments": {"check": "test"}},
        ]),
    );
    let expected = [
        "bad arguments for tool \"run\": invalid type: integer `5`, expected a string",
        "bad arguments for tool \"status\": unknown field `bogus`",
        "rev \"--output=/tmp/x\" is not a revision",
        "no-such-branch",
        "max_bytes 0 is out of range",
        "name the log by `receipt` (an id), or by both `rev` and `check`",
        "no check named \"no-such-check\" in .gitreceipts; declared checks: test, docs",
        "hint: declare it in .gitreceipts ([check \"sneaky\"] run = ...), or start the server with `git receipt mcp --allow-adhoc`",
    ];
    for (i, needle) in expected.iter().enumerate() {
        let r = result(&seen, i);
        assert!(is_error(r), "call {i} should be a tool error: {r:#}");
        assert!(
            text(r).contains(needle),
            "call {i}: expected {needle:?} in: {}",
            text(r)
        );
    }
    assert!(
        !repo.join("adhoc-ran").exists(),
        "an ad hoc command ran without --allow-adhoc"
    );
    let unknown = &seen["calls"][8];
    assert!(
        unknown["protocol_error"]
            .as_str()
            .is_some_and(|e| e.contains("no tool \"no_such_tool\"")),
        "{unknown:#}"
    );
    // ... and after all that, the server still serves
    let ok = result(&seen, 9);
    assert!(!is_error(ok), "{ok:#}");
    assert_eq!(ok["structuredContent"]["state"], "passed", "{ok:#}");
    assert_eq!(
        env.log_json(&repo).len(),
        1,
        "only the last call wrote a receipt"
    );
}

#[test]
fn with_allow_adhoc_run_takes_a_command_and_show_finds_its_receipt() {
    let python = python_or_skip!();
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let first = session(
        &env,
        &python,
        &repo,
        &["mcp", "--allow-adhoc"],
        json!([
            {"name": "run", "arguments": {
                "check": "lint", "command": ["sh", "-c", "echo adhoc-out"], "paths": ["src"]}},
        ]),
    );
    let run = &result(&first, 0)["structuredContent"];
    assert_eq!(
        (&run["state"], &run["log_tail"]),
        (&json!("passed"), &json!("adhoc-out\n")),
        "{run:#}"
    );
    assert_eq!(
        run["shown"]["receipt"]["receipt"]["check"]["paths"],
        json!(["src"]),
        "{run:#}"
    );
    let id = run["receipt"].as_str().unwrap();
    // a second session: show and log by the id the first one returned
    let second = session(
        &env,
        &python,
        &repo,
        &["mcp"],
        json!([
            {"name": "show", "arguments": {"target": id}},
            {"name": "log", "arguments": {"receipt": id}},
        ]),
    );
    let show = result(&second, 0);
    let cli = env.receipt_ok(&repo, &["show", "--json", id]);
    assert_eq!(text(show), cli.stdout, "show over MCP is the CLI's JSON");
    assert_eq!(
        result(&second, 1)["structuredContent"]["text"],
        "adhoc-out\n"
    );
}

#[test]
fn a_server_started_outside_a_repository_says_so_before_serving() {
    let env = Env::new();
    let r = env.receipt(env.tmp.path(), &["mcp"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stdout.is_empty(), "{r}");
    assert!(r.stderr.contains("not a git repository"), "{r}");
}
