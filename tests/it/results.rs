//! Per-test results (`results =` in `.gitreceipts`, format v4): the real binary
//! runs real checks in a fixture repository (`make_results_repo.sh`) and the
//! receipts' lists are checked against what the runners printed or wrote.

use crate::common::Env;

fn repo(env: &Env) -> std::path::PathBuf {
    let dir = env.fixture_repo("make_results_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    dir
}

/// The one receipt `show --json` prints for HEAD's newest run of `check`.
fn shown(env: &Env, dir: &std::path::Path, check: &str) -> serde_json::Value {
    let r = env.receipt_ok(dir, &["show", "--json"]);
    let all: Vec<serde_json::Value> = serde_json::from_str(&r.stdout).unwrap();
    let found = all
        .into_iter()
        .find(|s| s["receipt"]["receipt"]["check"]["name"] == check)
        .unwrap_or_else(|| panic!("no receipt for {check} in {}", r.stdout));
    // the JSON Schema accepts every v4 receipt the binary writes
    crate::common::receipt_schema::assert_schema_accepts(&found["receipt"]);
    found
}

#[test]
fn tap_on_stdout_counts_skip_and_todo_and_escapes_hostile_names() {
    let env = Env::new();
    let dir = repo(&env);
    let run = env.receipt(&dir, &["run", "tap"]);
    assert_eq!(run.code, 1, "the check's own exit code stands: {run}");
    let s = shown(&env, &dir, "tap");
    let body = &s["receipt"]["receipt"];
    assert_eq!(body["schema"], "git-receipt/v4");
    let t = &body["result"]["tests"];
    assert_eq!(
        (&t["passed"], &t["failed"], &t["skipped"], &t["total"]),
        (&1.into(), &1.into(), &2.into(), &4.into()),
        "{t}"
    );
    let names: Vec<(String, String)> = t["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            ("adds".to_owned(), "passed".to_owned()),
            (
                "evil \u{1b}[31m<script>alert(1)</script>".to_owned(),
                "failed".to_owned()
            ),
            ("later".to_owned(), "skipped".to_owned()),
            ("net".to_owned(), "skipped".to_owned()),
        ]
    );
    let text = env.receipt_ok(&dir, &["show"]).stdout;
    assert!(
        text.contains("tests    1 passed, 1 failed, 2 skipped of 4 (tap:-)"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "a raw escape reached the terminal: {text:?}"
    );
    assert!(text.contains("failed  evil \\x1b[31m<script>"), "{text}");
    assert!(
        !text.contains("adds"),
        "only failed tests without --tests: {text}"
    );
    let all = env.receipt_ok(&dir, &["show", "--tests"]).stdout;
    for name in ["adds", "later", "net"] {
        assert!(all.contains(name), "--tests lists {name}: {all}");
    }
    // status: counts in --json, every test under its check with --tests
    let st = env.status_of(&dir, None, "tap");
    assert_eq!(st["tests"]["failed"], 1, "{st}");
    assert_eq!(st["tests"]["total"], 4, "{st}");
    let text = env.receipt_ok(&dir, &["status", "--tests"]).stdout;
    assert!(
        text.contains("tap:\n  tests    1 passed, 1 failed"),
        "{text}"
    );
    assert!(
        text.contains("skipped net") && !text.contains('\u{1b}'),
        "{text}"
    );
    let r = env.receipt_ok(&dir, &["status", "--json", "--tests"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let tap = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "tap")
        .unwrap();
    assert_eq!(tap["tests"]["list"].as_array().unwrap().len(), 4, "{tap}");
    // the HTML report: the counts, and the hostile name escaped
    let page = env.path("report.html");
    env.receipt_ok(&dir, &["report", "-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("1 passed, 1 failed, 2 skipped of 4"),
        "report counts: {html}"
    );
    assert!(
        html.contains("evil \\x1b[31m&lt;script&gt;"),
        "the name is escaped in HTML: {html}"
    );
    assert!(!html.contains("<script>"), "no raw script in the report");
}

#[test]
fn a_missing_or_garbage_results_file_still_writes_the_receipt() {
    let env = Env::new();
    let dir = repo(&env);
    for (check, says) in [
        ("missing", "out/missing.xml was not written by the run"),
        ("garbage", "out/garbage.xml is not junit: not JUnit XML"),
    ] {
        let run = env.receipt(&dir, &["run", check]);
        assert_eq!(run.code, 0, "the check passed and that stands: {run}");
        assert!(
            run.stderr.contains("warning") && run.stderr.contains(says),
            "{run}"
        );
        let s = shown(&env, &dir, check);
        let t = &s["receipt"]["receipt"]["result"]["tests"];
        assert!(t["error"].as_str().unwrap().contains(says), "{t}");
        assert_eq!(t["total"], 0);
        let text = env.receipt_ok(&dir, &["show"]).stdout;
        assert!(text.contains("could not be read"), "{text}");
    }
}

#[test]
fn a_large_suite_keeps_its_list_beside_the_log_checked_against_the_digest() {
    let env = Env::new();
    let dir = repo(&env);
    let run = env.receipt(&dir, &["run", "big"]);
    assert_eq!(run.code, 0, "{run}");
    let s = shown(&env, &dir, "big");
    let t = &s["receipt"]["receipt"]["result"]["tests"];
    assert_eq!(t["total"], 5001);
    assert_eq!(t["failed"], 1);
    assert!(t["list"].is_null(), "not inline: {t}");
    let blob = t["list_blob"]
        .as_str()
        .expect("a blob beside the log")
        .to_owned();
    assert_eq!(s["tests"]["list"].as_array().unwrap().len(), 5001);
    let writer = env.only_writer(&dir);
    let kept = env.git_ok(
        &dir,
        &["rev-parse", &format!("refs/receipt-logs/{writer}/{blob}")],
    );
    assert_eq!(kept, blob, "the list is kept under a log ref");
    let text = env.receipt_ok(&dir, &["show"]).stdout;
    assert!(
        text.contains("tests    5000 passed, 1 failed, 0 skipped of 5001"),
        "{text}"
    );
    assert!(text.contains("failed  big::broken"), "{text}");
    // tamper with the stored list: same size, other bytes, under the same name
    let bytes = env.git_ok(&dir, &["cat-file", "blob", &blob]);
    let forged = bytes.replacen("big::t00000", "big::t0000X", 1);
    assert_ne!(forged, bytes);
    let object = dir.join(format!(".git/objects/{}/{}", &blob[..2], &blob[2..]));
    assert!(object.exists(), "the list is a loose object");
    let mut raw = format!("blob {}\0", forged.len()).into_bytes();
    raw.extend_from_slice(forged.as_bytes());
    let mut enc = zlib_compress(&raw);
    std::fs::remove_file(&object).unwrap();
    std::fs::write(&object, &mut enc).unwrap();
    let text = env.receipt_ok(&dir, &["show"]).stdout;
    assert!(
        text.contains("the test list cannot be shown") && text.contains("tampered"),
        "{text}"
    );
    let s = shown(&env, &dir, "big");
    assert!(s["tests"]["list"].is_null());
    assert!(s["tests"]["error"].as_str().unwrap().contains("tampered"));
}

/// zlib-compress with stock tools (python3's zlib), as git stores a loose object.
fn zlib_compress(raw: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read()))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    child.stdin.take().unwrap().write_all(raw).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
}

/// `export --in-toto` names the real tests in the test-result predicate, and the
/// in-toto project's own packages read and verify it (`verify_intoto.py`).
#[test]
fn in_toto_export_lists_the_real_tests_and_in_toto_verifies_it() {
    use crate::common::{self, pytools};
    let Some(py) = pytools::need(
        &["in-toto", "securesystemslib", "in-toto-attestation"],
        &["in_toto", "securesystemslib", "in_toto_attestation"],
    ) else {
        return;
    };
    let env = Env::new();
    let dir = repo(&env);
    assert_eq!(env.receipt(&dir, &["run", "tap"]).code, 1);
    env.receipt_ok(&dir, &["run", "big"]);
    let key_file = env.path("exporter.pub");
    std::fs::write(&key_file, env.receipt_ok(&dir, &["key", "show"]).stdout).unwrap();
    let out = env.path("head.intoto.jsonl");
    let r = env.receipt(&dir, &["export", "--in-toto", "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r}");
    let mut cmd = py.command();
    cmd.arg(common::fixture("verify_intoto.py"))
        .arg(&out)
        .arg(&key_file);
    env.seal(&mut cmd);
    let v = common::to_run(cmd.output().expect("run python"));
    assert_eq!(v.code, 0, "in-toto verifies every envelope: {v}");
    let summaries: Vec<serde_json::Value> = v
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tap = summaries
        .iter()
        .find(|s| s["passed"] == serde_json::json!(["adds"]))
        .unwrap_or_else(|| panic!("the TAP check's tests by name: {summaries:?}"));
    assert_eq!(
        tap["failed"],
        serde_json::json!(["evil \u{1b}[31m<script>alert(1)</script>"])
    );
    let big = summaries
        .iter()
        .find(|s| s["failed"] == serde_json::json!(["big::broken"]))
        .unwrap_or_else(|| panic!("the large suite's failed test: {summaries:?}"));
    let passed = big["passed"].as_array().unwrap();
    assert_eq!(passed.len(), 5000, "the list beside the log is exported");
    assert_eq!(passed[0], "big::t00000");
}

/// cargo-nextest, a real runner on a real cargo project, writes JUnit; the
/// receipt's list is exactly what nextest's own file says (nextest leaves the
/// ignored test out of it).
#[test]
fn nextest_junit_is_recorded_as_nextest_wrote_it() {
    use crate::common;
    if !common::require_tool("cargo-nextest", "cargo install --locked cargo-nextest") {
        return;
    }
    let env = Env::new();
    let dir = env.fixture_repo("make_nextest_repo.sh", "repo");
    env.receipt_ok(&dir, &["init"]);
    // the toolchain lives under the real HOME: name it, and build offline
    let home = std::env::var("HOME").unwrap();
    let cargo_home = std::env::var("CARGO_HOME").unwrap_or(format!("{home}/.cargo"));
    let rustup_home = std::env::var("RUSTUP_HOME").unwrap_or(format!("{home}/.rustup"));
    let toolchain = [
        ("CARGO_HOME", cargo_home.as_str()),
        ("RUSTUP_HOME", rustup_home.as_str()),
        ("CARGO_NET_OFFLINE", "true"),
    ];
    let run = env.receipt_with(&dir, &["run", "test"], &toolchain);
    assert_ne!(run.code, 0, "one test fails: {run}");
    let xml = std::fs::read_to_string(dir.join("target/nextest/default/junit.xml"))
        .unwrap_or_else(|e| panic!("nextest wrote no JUnit ({e}): {run}"));
    // nextest's own file, read here with plain string matching
    let mut expected: Vec<(String, &str)> = xml
        .split("<testcase ")
        .skip(1)
        .map(|case| {
            let attr = |a: &str| {
                let at = case.find(&format!("{a}=\"")).unwrap() + a.len() + 2;
                case[at..at + case[at..].find('"').unwrap()].to_owned()
            };
            let end = case.find("</testcase>").unwrap_or(case.len());
            let status = if case[..end].contains("<failure") {
                "failed"
            } else if case[..end].contains("<skipped") {
                "skipped"
            } else {
                "passed"
            };
            (format!("{}::{}", attr("classname"), attr("name")), status)
        })
        .collect();
    expected.sort();
    // nextest leaves ignored tests out of its JUnit: a pass and a fail
    assert_eq!(expected.len(), 2, "nextest reports two tests: {xml}");
    let s = shown(&env, &dir, "test");
    let t = &s["receipt"]["receipt"]["result"]["tests"];
    let got: Vec<(String, &str)> = t["list"]
        .as_array()
        .unwrap_or_else(|| panic!("an inline list: {t}"))
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(
        (&t["passed"], &t["failed"], &t["skipped"]),
        (&1.into(), &1.into(), &0.into())
    );
    assert!(
        got.iter()
            .any(|(n, s)| n.ends_with("tests::fails") && *s == "failed")
    );

    // the same suite as libtest JSON lines (nextest's experimental
    // --message-format libtest-json), the ignored test run too
    let run = env.receipt_with(&dir, &["run", "test-json"], &toolchain);
    assert_ne!(run.code, 0, "one test fails: {run}");
    let s = shown(&env, &dir, "test-json");
    let t = &s["receipt"]["receipt"]["result"]["tests"];
    assert_eq!(t["error"], "", "{t}");
    let statuses: Vec<(&str, &str)> = t["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(statuses.len(), 3, "{t}");
    for (suffix, status) in [
        ("tests::fails", "failed"),
        ("tests::passes", "passed"),
        ("tests::ignored", "passed"),
    ] {
        assert!(
            statuses
                .iter()
                .any(|(n, s)| n.ends_with(suffix) && *s == status),
            "{suffix} {status} in {statuses:?}"
        );
    }
}

/// pytest's `--junitxml` on a tiny Python project: one pass, one fail, one skip,
/// as pytest itself wrote them.
#[test]
fn pytest_junitxml_is_recorded() {
    use crate::common::pytools;
    let Some(py) = pytools::need(&["pytest"], &["pytest"]) else {
        return;
    };
    let env = Env::new();
    let dir = repo(&env);
    let python = py.exe.to_str().unwrap().to_owned();
    let run = env.receipt_with(&dir, &["run", "pytest"], &[("PYTHON", python.as_str())]);
    assert_eq!(run.code, 1, "pytest exits 1 with a failed test: {run}");
    let s = shown(&env, &dir, "pytest");
    let t = &s["receipt"]["receipt"]["result"]["tests"];
    assert_eq!(t["error"], "", "{t}");
    let got: Vec<(&str, &str)> = t["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("test_fixture::test_fails", "failed"),
            ("test_fixture::test_passes", "passed"),
            ("test_fixture::test_skipped", "skipped"),
        ]
    );
    let xml = std::fs::read_to_string(dir.join("out/pytest.xml")).unwrap();
    for (_, name) in got.iter().map(|(n, _)| n.split_once("::").unwrap()) {
        assert!(
            xml.contains(&format!("name=\"{name}\"")),
            "pytest wrote {name}: {xml}"
        );
    }
}
