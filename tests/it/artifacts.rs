//! What a check produced (issue 29): `artifact = GLOB` records each matching
//! file's path, size and SHA-256 in a v5 receipt; `git receipt which FILE`
//! finds the trusted receipt that produced a file by its digest; `export
//! --slsa` states it as SLSA Provenance v1, checked by the in-toto project's
//! own Python packages. `sha256sum` and stock git are the oracles.

use std::path::Path;
use std::process::Command;

use crate::common::{Env, Run, pytools, receipt_schema};
use crate::intoto_export;
use serde_json::Value;

/// `sha256:<hex>` of `file`, as coreutils' `sha256sum` computes it.
fn sha256sum(file: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(file)
        .output()
        .expect("sha256sum runs");
    assert!(out.status.success(), "sha256sum {}", file.display());
    let text = String::from_utf8(out.stdout).unwrap();
    format!("sha256:{}", text.split_whitespace().next().unwrap())
}

/// The newest receipt of `check` as `show --json` prints it (the envelope).
fn newest(env: &Env, repo: &Path, check: &str) -> Value {
    let log = env.log_json(repo);
    let id = log
        .iter()
        .find(|r| r["check"] == check)
        .unwrap_or_else(|| panic!("a receipt of {check}: {log:?}"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown: Value =
        serde_json::from_str(&env.receipt_ok(repo, &["show", "--json", &id]).stdout).unwrap();
    shown[0]["receipt"].clone()
}

fn which(env: &Env, repo: &Path, file: &Path) -> (Run, Value) {
    let r = env.receipt(repo, &["which", "--json", file.to_str().unwrap()]);
    let v = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r}"));
    (r, v)
}

#[test]
fn a_build_s_artifacts_are_recorded_and_found_again_by_which_and_a_changed_one_is_not() {
    let env = Env::new();
    let repo = env.fixture_repo("make_artifacts_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "build"]);
    let bin = repo.join("dist/app.bin");
    let version = repo.join("dist/VERSION");

    // the receipt is v5 and lists exactly the declared files, sorted, hashed
    let stored = newest(&env, &repo, "build");
    receipt_schema::assert_schema_accepts(&stored);
    let body = &stored["receipt"];
    assert_eq!(body["schema"], "git-receipt/v5");
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    assert_eq!(
        body["result"]["artifacts"],
        serde_json::json!([
            {"path": "dist/VERSION", "size": size(&version), "sha256": sha256sum(&version)},
            {"path": "dist/app.bin", "size": size(&bin), "sha256": sha256sum(&bin)},
        ]),
        "dist/scratch.tmp matches no glob"
    );
    let shown = env.receipt_ok(&repo, &["show"]).stdout;
    assert!(
        shown.contains(&format!(
            "  artifact dist/app.bin {} bytes {}",
            size(&bin),
            sha256sum(&bin)
        )),
        "{shown}"
    );
    // a check without artifact globs still writes what it wrote before
    env.receipt_ok(&repo, &["run", "test"]);
    assert_eq!(
        newest(&env, &repo, "test")["receipt"]["schema"],
        "git-receipt/v2"
    );

    // which: found by digest, wherever the file now lives
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    let copy = env.path("downloaded-app");
    std::fs::copy(&bin, &copy).unwrap();
    let (r, v) = which(&env, &repo, &copy);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(v["sha256"], sha256sum(&bin).as_str());
    let row = &v["produced_by"][0];
    assert_eq!(v["produced_by"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(row["check"], "build");
    assert_eq!(row["path"], "dist/app.bin");
    assert_eq!(row["commit"], head.as_str());
    assert_eq!(row["inputs"], body["subject"]["inputs"]);
    assert_eq!(row["dirty"], false);
    assert_eq!(
        row["required"]["present"], true,
        "build and test both ran: {v}"
    );
    let text = env
        .receipt_ok(&repo, &["which", copy.to_str().unwrap()])
        .stdout;
    assert!(
        text.contains(
            "produced as dist/app.bin by check build (passed, observed by git receipt run)"
        ) && text.contains(&format!("  on       commit {head} inputs "))
            && text.contains("  required every required check present there"),
        "{text}"
    );

    // a changed artifact is not found
    std::fs::write(&copy, b"built from: something else\n").unwrap();
    let (r, v) = which(&env, &repo, &copy);
    assert_eq!(r.code, 1, "{r}");
    assert_eq!(v["produced_by"], serde_json::json!([]));
    let r = env.receipt(&repo, &["which", copy.to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .contains("no trusted receipt here recorded a file with sha256:"),
        "{r}"
    );

    // a receipt by a key not trusted here does not count, and says why
    let stranger = env.path("stranger");
    let r = env.receipt_with(
        &repo,
        &["key", "generate"],
        &[("GIT_RECEIPT_SIGNING_KEY", stranger.to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{r}");
    std::fs::write(repo.join("src/app.c"), "int main(void) { return 1; }\n").unwrap();
    env.git_ok(&repo, &["commit", "-qam", "change"]);
    let r = env.receipt_with(
        &repo,
        &["run", "build"],
        &[("GIT_RECEIPT_SIGNING_KEY", stranger.to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{r}");
    let (r, v) = which(&env, &repo, &bin);
    assert_eq!(r.code, 1, "only a stranger's receipt has this digest: {r}");
    assert!(
        v["not_counted"][0]["why"]
            .as_str()
            .unwrap()
            .contains("which is not a trusted key here"),
        "{v}"
    );
    assert!(
        r.stderr
            .contains("git-receipt: not counting receipt sha256:"),
        "{r}"
    );

    // a required check failing where it was built: which says so
    std::fs::write(repo.join("src/ok"), "no\n").unwrap();
    env.git_ok(&repo, &["commit", "-qam", "break test"]);
    env.receipt_ok(&repo, &["run", "build"]);
    assert_eq!(env.receipt(&repo, &["run", "test"]).code, 1);
    let (r, v) = which(&env, &repo, &bin);
    assert_eq!(r.code, 0, "{r}");
    let mine = v["produced_by"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["commit"] == env.git_ok(&repo, &["rev-parse", "HEAD"]).as_str())
        .unwrap_or_else(|| panic!("{v}"))
        .clone();
    assert_eq!(mine["required"]["present"], false, "{v}");
    assert_eq!(mine["required"]["failing"], serde_json::json!(["test"]));
    let text = env
        .receipt_ok(&repo, &["which", bin.to_str().unwrap()])
        .stdout;
    assert!(
        text.contains("  required not present there: test"),
        "{text}"
    );

    // and a file that is not there is an error that says so
    let r = env.receipt(&repo, &["which", "no/such/file"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("cannot read no/such/file"), "{r}");
}

#[test]
fn globs_that_match_more_than_a_receipt_records_fail_the_run_and_say_so() {
    let env = Env::new();
    let repo = env.fixture_repo("make_artifacts_repo.sh", "repo");
    let contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    std::fs::write(
        repo.join(".gitreceipts"),
        contract.replace("\tartifact = dist/VERSION\n", "\tartifact = dist/many/*\n"),
    )
    .unwrap();
    std::fs::write(
        repo.join("build.sh"),
        "mkdir -p dist/many\nfor i in $(seq 0 256); do echo $i > dist/many/$i; done\n",
    )
    .unwrap();
    env.git_ok(&repo, &["commit", "-qam", "too many"]);
    let r = env.receipt(&repo, &["run", "build"]);
    assert_eq!(r.code, 1, "the run's receipt is failed: {r}");
    assert!(
        r.stderr.contains("its artifacts cannot be recorded: artifact = dist/many/*: the globs match more than 256 files")
            && r.stderr.contains("hint: change the artifact = globs in .gitreceipts"),
        "{r}"
    );
    let body = &newest(&env, &repo, "build")["receipt"];
    assert_eq!(body["result"]["passed"], false);
    assert_eq!(body["result"]["artifacts"], serde_json::json!([]));
    assert!(
        body["result"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("artifacts: artifact = dist/many/*: the globs match more than 256 files"),
        "{body}"
    );
    // a glob that leaves the work tree is a contract error naming the fix
    std::fs::write(
        repo.join(".gitreceipts"),
        contract.replace("\tartifact = dist/VERSION\n", "\tartifact = ../outside\n"),
    )
    .unwrap();
    let r = env.receipt(&repo, &["run", "build"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(
            "artifact = \"../outside\" is not a relative path or glob inside the work tree"
        ) && r.stderr.contains("hint: write artifact = GLOB"),
        "{r}"
    );
}

#[test]
fn slsa_provenance_of_a_build_is_verified_by_the_in_toto_packages() {
    let Some(py) = pytools::need(intoto_export::PACKAGES, intoto_export::IMPORTS) else {
        return;
    };
    let env = Env::new();
    let repo = env.fixture_repo("make_artifacts_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "build"]);
    env.receipt_ok(&repo, &["run", "test"]);
    let key_file = env.path("exporter.pub");
    std::fs::write(&key_file, env.receipt_ok(&repo, &["key", "show"]).stdout).unwrap();
    let out = env.path("build.intoto.jsonl");
    let r = env.receipt(&repo, &["export", "--slsa", "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("exported 1 SLSA provenance signed by")
            && r.stderr.contains("; 1 receipt skipped")
            && r.stderr.contains("it records no artifacts"),
        "the test receipt has no artifacts: {r}"
    );
    let v = intoto_export::verify(&env, &py, &out, &key_file);
    assert_eq!(v.code, 0, "in-toto verifies the provenance: {v}");
    let s: Value = serde_json::from_str(v.stdout.lines().next().unwrap()).unwrap();
    let hex = |p: &str| sha256sum(&repo.join(p))["sha256:".len()..].to_owned();
    assert_eq!(s["predicateType"], "https://slsa.dev/provenance/v1");
    assert_eq!(
        s["subjects"],
        serde_json::json!({
            "dist/VERSION": {"sha256": hex("dist/VERSION")},
            "dist/app.bin": {"sha256": hex("dist/app.bin")},
        })
    );
    let body = &newest(&env, &repo, "build")["receipt"];
    assert_eq!(
        s["resolved"],
        serde_json::json!({
            "commit": {"gitCommit": env.git_ok(&repo, &["rev-parse", "HEAD"])},
            "inputs": {"gitTree": body["subject"]["inputs"]},
        })
    );
    assert_eq!(s["external"]["check"], "build");
    assert_eq!(s["external"]["definition"], body["check"]["definition"]);
    assert_eq!(s["internal"]["mode"], "run");
    let id = &s["invocationId"];
    assert_eq!(s["internal"]["receipt"], *id);
    assert_eq!(
        s["byproducts"]["log"]["sha256"].as_str(),
        body["result"]["log_sha256"]
            .as_str()
            .map(|d| &d["sha256:".len()..]),
        "the log is a byproduct"
    );

    // a receipt named by its id with no artifacts is a no
    let test_id = env
        .log_json(&repo)
        .iter()
        .find(|r| r["check"] == "test")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = env.receipt(&repo, &["export", "--slsa", &test_id]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stderr
            .contains(&format!("not exporting receipt {test_id}")),
        "{r}"
    );
    // a failed build's outputs get none
    std::fs::write(
        repo.join("build.sh"),
        "mkdir -p dist; echo x > dist/app.bin; exit 1\n",
    )
    .unwrap();
    env.git_ok(&repo, &["commit", "-qam", "broken build"]);
    assert_eq!(env.receipt(&repo, &["run", "build"]).code, 1);
    let r = env.receipt(&repo, &["export", "--slsa"]);
    assert_eq!(r.code, 1, "nothing exported: {r}");
    assert!(
        r.stderr
            .contains("its check failed, and a failed run's outputs get no provenance"),
        "{r}"
    );
    // and --in-toto with --slsa is a usage error
    assert_eq!(
        env.receipt(&repo, &["export", "--slsa", "--in-toto"]).code,
        2
    );
}
