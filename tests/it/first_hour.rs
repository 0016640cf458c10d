//! The smaller stumbles of a newcomer's first hour (issue 26 item 10): `log` and
//! the pre-push hook name signers as `status` does, `status --trust`, check names
//! in completion, where an ad hoc check ran, and a lowered `timeout`.

use std::path::{Path, PathBuf};

use crate::common::Env;

/// The basic fixture with `env`'s key declared as `[signer "ada"]`, committed.
fn ada_repo(env: &Env) -> PathBuf {
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = env.receipt_ok(&dir, &["key", "generate"]).stdout;
    let mut contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    contract.push_str(&format!("[signer \"ada\"]\n\tkey = {}\n", key.trim()));
    std::fs::write(dir.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&dir, &["commit", "-qam", "ada signs"]);
    dir
}

fn change_src(env: &Env, dir: &Path, text: &str) {
    std::fs::write(dir.join("src/lib.rs"), text).unwrap();
    env.git_ok(dir, &["commit", "-qam", "change src"]);
}

#[test]
fn log_and_the_pre_push_hook_name_the_signer_as_status_does() {
    let env = Env::new();
    let dir = ada_repo(&env);
    env.receipt_ok(&dir, &["run", "test"]);
    let writer = env.only_writer(&dir);
    let status = env.receipt_ok(&dir, &["status", "HEAD"]).stdout;
    assert!(status.contains("by ada #0"), "status names ada: {status}");
    let log = env.receipt_ok(&dir, &["log"]).stdout;
    assert!(
        log.contains(&format!(" ada ({writer}#0)")),
        "log names the signer, with the writer id: {log}"
    );
    let json = env.log_json(&dir);
    assert_eq!(json[0]["signer_name"], "ada", "{json:?}");
    assert_eq!(json[0]["writer"], writer.as_str());

    // a key no one declared: no name, however its chain is called
    let stranger = env.path("stranger_key");
    let as_stranger = [("GIT_RECEIPT_SIGNING_KEY", stranger.to_str().unwrap())];
    for step in [&["key", "generate"][..], &["run", "docs"]] {
        assert_eq!(env.receipt_with(&dir, step, &as_stranger).code, 0);
    }
    let json = env.log_json(&dir);
    let docs = json.iter().find(|r| r["check"] == "docs").unwrap();
    assert!(docs["signer_name"].is_null(), "{docs}");
    let log = env.receipt_ok(&dir, &["log"]).stdout;
    let line = log.lines().find(|l| l.contains(" docs ")).unwrap();
    // (the name as log prints it, ` ada (<writer>#0)`: a random writer id's
    // hex may hold the letters `ada` itself)
    assert!(
        !line.contains(" ada (") && line.contains("untrusted key"),
        "{line}"
    );

    // the pre-push hook: a refusal's rows and what it pushed name ada too
    let server = env.path("server.git");
    env.git_ok(
        env.tmp.path(),
        &[
            "clone",
            "-q",
            "--bare",
            dir.to_str().unwrap(),
            server.to_str().unwrap(),
        ],
    );
    env.git_ok(&dir, &["remote", "add", "origin", server.to_str().unwrap()]);
    env.receipt_ok(&dir, &["install-hooks"]);
    change_src(&env, &dir, "pub fn changed() {}\n");
    let r = env.git(&dir, &["push", "-q", "origin", "main"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr.contains("by ada #0") && !r.stderr.contains(&format!("by {writer}")),
        "the refusal names the signer as status does: {r}"
    );
    env.receipt_ok(&dir, &["run", "test"]);
    let r = env.git(&dir, &["push", "-q", "origin", "main"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains(&format!("pushed 2 receipts of ada ({writer}) to origin")),
        "{r}"
    );
}

/// The state of `check` in `status --json` output.
fn state_in(out: &str, check: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(out).unwrap_or_else(|_| panic!("{out}"));
    let v = if v.is_array() { v[0].clone() } else { v };
    v["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .find(|c| c["name"] == check)
        .unwrap_or_else(|| panic!("{check} in {v}"))["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn status_takes_trust_rev_with_the_meaning_gate_gives_it() {
    let env = Env::new();
    let dir = ada_repo(&env);
    // a maintainer's main: ada's key is not a signer there, and docs is required
    env.git_ok(&dir, &["branch", "strict", "HEAD~1"]);
    env.git_ok(&dir, &["checkout", "-q", "strict"]);
    let contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    std::fs::write(
        dir.join(".gitreceipts"),
        contract.replace("path = docs", "path = docs\n\trequired = true"),
    )
    .unwrap();
    env.git_ok(&dir, &["commit", "-qam", "docs required"]);
    env.git_ok(&dir, &["checkout", "-q", "main"]);
    env.receipt_ok(&dir, &["run", "test"]);

    let r = env.receipt_ok(&dir, &["status", "HEAD", "--json"]);
    assert_eq!(state_in(&r.stdout, "test"), "present", "{r}");
    for args in [
        &["status", "HEAD"][..],
        &["status"],
        &["status", "HEAD~1..HEAD"],
    ] {
        let mut args = args.to_vec();
        args.extend(["--trust", "strict"]);
        let r = env.receipt(&dir, &args);
        assert_eq!(r.code, 0, "{args:?}: {r}");
        assert!(
            r.stdout.contains("untrusted") || r.stdout.contains("missing"),
            "{args:?}: ada's receipt does not count under strict's signers: {r}"
        );
    }
    let r = env.receipt_ok(&dir, &["status", "HEAD", "--trust", "strict", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let g = env.receipt(&dir, &["gate", "HEAD", "--trust", "strict", "--json"]);
    assert_eq!(g.code, 1, "{g}");
    let gate: serde_json::Value = serde_json::from_str(&g.stdout).unwrap();
    let gate = if gate.is_array() {
        gate[0].clone()
    } else {
        gate
    };
    for check in ["test", "docs"] {
        let row = |v: &serde_json::Value| {
            v["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == check)
                .map(|c| (c["state"].clone(), c["required"].clone()))
        };
        assert_eq!(
            row(&status),
            row(&gate),
            "{check}: status --trust is gate --trust"
        );
    }
    assert_eq!(state_in(&r.stdout, "test"), "missing", "{r}");
    let docs_required = status["checks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["name"] == "docs" && c["required"] == true);
    assert!(docs_required, "required at the trusted revision: {r}");
    let r = env.receipt(&dir, &["status", "--trust", "no-such-rev"]);
    assert_eq!(r.code, 2, "{r}");
}

/// Set `timeout` of check test to `limit` in the committed .gitreceipts.
fn set_timeout(env: &Env, dir: &Path, limit: &str) {
    let contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    let mut kept: String = contract
        .lines()
        .filter(|l| !l.trim_start().starts_with("timeout"))
        .map(|l| format!("{l}\n"))
        .collect();
    kept = kept.replace(
        "\tpath = src\n",
        &format!("\tpath = src\n\ttimeout = {limit}\n"),
    );
    std::fs::write(dir.join(".gitreceipts"), kept).unwrap();
    env.git_ok(dir, &["commit", "-qam", &format!("timeout = {limit}")]);
}

/// Issue 26 item 10: a pass that took longer than the check's timeout allows now
/// would have been killed under it, so it no longer counts as present (Bazel
/// treats the same as a bug); a pass within the new limit still does, since
/// `timeout` is not part of the definition.
#[test]
fn a_lowered_timeout_does_not_keep_a_pass_that_took_longer() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    set_timeout(&env, &dir, "10m");
    // a two-minute pass (recorded: no test here sleeps)
    env.receipt_ok(
        &dir,
        &[
            "record",
            "test",
            "--exit-code",
            "0",
            "--duration-ms",
            "120000",
        ],
    );
    assert_eq!(
        env.status_of(&dir, Some("HEAD"), "test")["state"],
        "present"
    );
    set_timeout(&env, &dir, "1m");
    let row = env.status_of(&dir, Some("HEAD"), "test");
    assert_eq!(row["state"], "stale", "{row}");
    assert!(
        row["reason"]
            .as_str()
            .unwrap()
            .contains("took 120s, longer than timeout = 60s allows now"),
        "{row}"
    );
    let r = env.receipt(&dir, &["gate", "HEAD"]);
    assert_eq!(r.code, 1, "{r}");
    // within the new limit: present again, without any other change
    set_timeout(&env, &dir, "5m");
    assert_eq!(
        env.status_of(&dir, Some("HEAD"), "test")["state"],
        "present"
    );
    set_timeout(&env, &dir, "1m");
    env.receipt_ok(&dir, &["run", "--stale"]);
    assert_eq!(
        env.status_of(&dir, Some("HEAD"), "test")["state"],
        "present"
    );
}

/// Issue 26 item 10: an ad hoc check started in a subdirectory runs at the top
/// of the work tree, as a declared check does: its receipt names no directory,
/// so the same argv must mean the same run wherever it was started; it says so.
#[test]
fn an_ad_hoc_check_started_in_a_subdirectory_runs_at_the_top_and_says_so() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    let sub = dir.join("src");
    let r = env.receipt(&sub, &["run", "at-top", "--", "test", "-f", ".gitreceipts"]);
    assert_eq!(r.code, 0, "ran at the top, where .gitreceipts is: {r}");
    assert!(
        r.stderr.contains("runs at the top of the work tree")
            && r.stderr.contains("not in the current directory"),
        "{r}"
    );
    // from the top: the same run, and no notice
    let r = env.receipt(&dir, &["run", "at-top", "--", "test", "-f", ".gitreceipts"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(!r.stderr.contains("runs at the top"), "{r}");
    let json = env.log_json(&dir);
    let runs: Vec<_> = json.iter().filter(|r| r["check"] == "at-top").collect();
    assert!(
        runs.len() == 2 && runs.iter().all(|r| r["passed"] == true),
        "{runs:?}"
    );
}

/// `path = .` (or `--path .`) is what a newcomer writes for "everything":
/// refused, with the words that say a check with no path covers the whole tree,
/// and nothing is run or written.
#[test]
fn a_path_that_spells_the_whole_tree_says_to_leave_it_out() {
    let env = Env::new();
    let dir = env.fixture_repo("make_basic_repo.sh", "repo");
    let before = env.log_json(&dir).len();
    let r = env.receipt(&dir, &["run", "all", "--path", "./", "--", "true"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(
            "error: --path \"./\" names the whole tree, which is what a check with no --path covers\nhint: leave --path out"
        ),
        "{r}"
    );
    std::fs::write(
        dir.join(".gitreceipts"),
        "[check \"all\"]\n\trun = true\n\tpath = .\n",
    )
    .unwrap();
    let r = env.receipt(&dir, &["run", "all"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(
            ".gitreceipts:3: check \"all\": path \".\" names the whole tree, which is what a check with no path covers\nhint: remove this path line"
        ),
        "{r}"
    );
    assert_eq!(
        env.log_json(&dir).len(),
        before,
        "nothing was run or written"
    );
    // as the hint says: no path, the whole tree
    std::fs::write(dir.join(".gitreceipts"), "[check \"all\"]\n\trun = true\n").unwrap();
    env.receipt_ok(&dir, &["run", "all"]);
}
