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
    assert!(
        !line.contains("ada") && line.contains("untrusted key"),
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
