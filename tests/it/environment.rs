//! Environment assertions and cross-repository dependencies (issue 13), against
//! the real binary, real `sh`, `git --version`, `python3`, two real sibling
//! repositories and a real submodule, built by `make_sibling_repos.sh`:
//! `test` asserts git, python and `${worktree}`; `integration` depends on
//! `../proto` (ref main, paths schema); `vendored` reads the submodule vendor/lib.
//! Every check appends its name to `ran.log` beside the repositories, so a test
//! can tell whether a check's command ran at all.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Env, Run};
use serde_json::Value;

struct Siblings {
    env: Env,
    root: PathBuf,
    app: PathBuf,
    proto: PathBuf,
}

fn setup() -> Siblings {
    let env = Env::new();
    let root = env.fixture_repo("make_sibling_repos.sh", "w");
    Siblings {
        app: root.join("app"),
        proto: root.join("proto"),
        root,
        env,
    }
}

impl Siblings {
    fn receipt(&self, args: &[&str]) -> Run {
        self.env.receipt(&self.app, args)
    }

    /// Which checks' commands have run, in order.
    fn ran(&self) -> Vec<String> {
        std::fs::read_to_string(self.root.join("ran.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `status --json`'s entry for `check`.
    fn state(&self, check: &str) -> Value {
        let r = self.receipt(&["status", "--json"]);
        assert_eq!(r.code, 0, "{r}");
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == check)
            .unwrap_or_else(|| panic!("no {check} in {v:#}"))
            .clone()
    }

    /// The newest receipt's envelope.
    fn newest(&self) -> Value {
        let log = self.env.log_json(&self.app);
        let chain_commit = log[0]["chain_commit"].as_str().unwrap();
        serde_json::from_slice(&self.env.receipt_bytes(&self.app, chain_commit)).unwrap()
    }

    /// Commit a change to `file` in the repository at `repo`.
    fn commit(&self, repo: &Path, file: &str, text: &str) {
        let p = repo.join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self.env.git_ok(repo, &["add", "-A"]);
        self.env.git_ok(repo, &["commit", "-q", "-m", file]);
    }

    /// Replace `from` by `to` in the app's .gitreceipts and commit it.
    fn edit_contract(&self, from: &str, to: &str) {
        let path = self.app.join(".gitreceipts");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{from:?} is in the contract");
        std::fs::write(&path, text.replace(from, to)).unwrap();
        self.env
            .git_ok(&self.app, &["commit", "-q", "-am", "contract"]);
    }
}

fn real_path(p: &Path) -> String {
    std::fs::canonicalize(p).unwrap().display().to_string()
}

#[test]
fn passing_assertions_are_signed_into_a_v3_receipt() {
    let s = setup();
    let r = s.receipt(&["run", "test"]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(s.ran(), ["test"]);
    let v = s.newest();
    let body = &v["receipt"];
    assert_eq!(body["schema"], "git-receipt/v3");
    let asserts = body["result"]["assertions"].as_array().unwrap();
    let names: Vec<&str> = asserts
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["git", "python", "here"], "in declared order");
    assert!(
        asserts
            .iter()
            .all(|a| a["passed"] == true && a["detail"] == "")
    );
    let git = String::from_utf8(
        Command::new("git")
            .arg("--version")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(
        asserts[0]["actual"],
        git.trim(),
        "the first line of real git"
    );
    assert_eq!(asserts[0]["expected"]["glob"], "git version 2.*");
    assert_eq!(asserts[1]["expected"]["regex"], "^3$");
    assert_eq!(asserts[1]["actual"], "3", "real python3");
    // ${worktree} was substituted, and the assertion ran at the top of the work tree
    let top = real_path(&s.app);
    assert_eq!(asserts[2]["expected"]["glob"], top.as_str());
    assert_eq!(asserts[2]["actual"], top.as_str());
    assert!(
        body["subject"].get("dependencies").is_none(),
        "test has none"
    );
    assert_eq!(s.state("test")["state"], "present");
    let shown = s.receipt(&["show", "HEAD"]);
    assert!(
        shown
            .stdout
            .contains("assert   python passed: match \"^3$\", got \"3\""),
        "{shown}"
    );
    // a check without assertions or dependencies still writes v2
    s.receipt(&["run", "vendored"]);
    assert_eq!(s.newest()["receipt"]["schema"], "git-receipt/v2");
}

#[test]
fn a_failing_assertion_runs_nothing_and_fails_the_receipt_with_its_reason() {
    let s = setup();
    s.edit_contract("expect = git version 2.*", "expect = git version 1.*");
    let r = s.receipt(&["run", "test"]);
    assert_eq!(r.code, 1, "{r}");
    // no output was captured, so no log was kept, and nothing points at one
    assert!(!r.stderr.contains("show --log"), "{r}");
    assert!(
        s.ran().is_empty(),
        "the check's command never ran: {:?}",
        s.ran()
    );
    let body = s.newest()["receipt"].clone();
    assert_eq!(body["result"]["passed"], false);
    let asserts = body["result"]["assertions"].as_array().unwrap();
    assert_eq!(asserts.len(), 1, "nothing runs after the failed assertion");
    assert_eq!(asserts[0]["passed"], false);
    let detail = body["result"]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(
            "assertion \"git\" failed: expected \"git version 1.*\" (glob), got \"git version 2."
        ),
        "{detail}"
    );
    let state = s.state("test");
    assert_eq!(state["state"], "failed");
    assert!(
        state["reason"]
            .as_str()
            .unwrap()
            .contains("assertion \"git\" failed: expected \"git version 1.*\""),
        "{state}"
    );
    let gate = s.receipt(&["gate"]);
    assert_eq!(gate.code, 1, "{gate}");
    assert!(gate.stdout.contains("assertion \"git\" failed"), "{gate}");
}

#[test]
fn editing_an_expectation_makes_old_receipts_stale() {
    let s = setup();
    assert_eq!(s.receipt(&["run", "test"]).code, 0);
    assert_eq!(s.state("test")["state"], "present");
    s.edit_contract("match = ^3$", "match = ^3");
    let state = s.state("test");
    assert_eq!(state["state"], "stale", "{state}");
    assert!(
        state["reason"]
            .as_str()
            .unwrap()
            .contains("definition changed"),
        "{state}"
    );
    // a check without assertions keeps the digest it always had
    let vendored_before = {
        s.receipt(&["run", "vendored"]);
        s.newest()["receipt"]["check"]["definition"].clone()
    };
    assert_eq!(
        vendored_before,
        serde_json::json!(git_receipt::receipt::definition_digest(
            &[
                "sh".into(),
                "-c".into(),
                "echo vendored >> ../ran.log".into()
            ],
            &["vendor".into()],
            &[]
        ))
    );
}

#[test]
fn an_unknown_substitution_is_a_contract_error() {
    let s = setup();
    s.edit_contract("expect = ${worktree}", "expect = ${workdir}");
    for args in [&["run", "test"][..], &["status"], &["env"]] {
        let r = s.receipt(args);
        assert_eq!(r.code, 2, "{args:?}: {r}");
        assert!(
            r.stderr
                .contains(":9: assert \"here\": unknown substitution \"${workdir}\""),
            "{args:?}: {r}"
        );
        assert!(
            r.stderr
                .contains("hint: the substitutions are ${worktree}, ${gitdir}, ${home}"),
            "{r}"
        );
    }
    assert!(s.ran().is_empty());
}

#[test]
fn env_prints_the_assertions_alone_and_records_nothing() {
    let s = setup();
    let r = s.receipt(&["env", "test"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stdout
            .contains("python  passed  match \"^3$\"  got \"3\""),
        "{r}"
    );
    assert!(s.ran().is_empty(), "env never runs the check");
    let refs = s.env.git_ok(&s.app, &["for-each-ref", "refs/receipts/"]);
    assert_eq!(refs, "", "env writes no receipt");
    let r = s.receipt(&["env", "--json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["assertions"].as_array().unwrap().len(), 3, "{v:#}");
    assert_eq!(v["dependencies"][0]["name"], "proto");
    let proto_head = s.env.git_ok(&s.proto, &["rev-parse", "main"]);
    assert_eq!(v["dependencies"][0]["commit"], proto_head.as_str());
    let schema_tree = s.env.git_ok(&s.proto, &["rev-parse", "main:schema"]);
    // the tree of its declared paths, as stock git builds it
    let expected = s.env.git_input(
        &s.proto,
        &["mktree"],
        format!("040000 tree {schema_tree}\tschema\n").as_bytes(),
    );
    assert_eq!(v["dependencies"][0]["tree"], expected.as_str());
    // a failing one: exit 1, its expectation and what was found on one line
    s.edit_contract("match = ^3$", "match = ^2$");
    let r = s.receipt(&["env", "test"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(
        r.stdout
            .contains("python  failed  match \"^2$\"  got \"3\""),
        "{r}"
    );
}

#[test]
fn hostile_assertion_output_is_escaped_and_bounded() {
    let s = setup();
    s.edit_contract(
        "run = git --version",
        "run = \"printf 'git version 2.\\\\033[31mred\\\\342\\\\200\\\\256%0600d\\\\nsecond line' 0\"",
    );
    let r = s.receipt(&["env", "test"]);
    assert!(
        !r.stdout.contains('\u{1b}'),
        "no raw escape reaches the terminal: {r}"
    );
    assert!(
        !r.stdout.contains('\u{202e}'),
        "no bidi override either: {r}"
    );
    assert!(
        !r.stdout.contains("second line"),
        "only the first line: {r}"
    );
    assert_eq!(s.receipt(&["run", "test"]).code, 0);
    let actual = s.newest()["receipt"]["result"]["assertions"][0]["actual"]
        .as_str()
        .unwrap()
        .to_owned();
    // ~630 bytes on its first line, cut at the bound (on a character boundary)
    let max = git_receipt::receipt::MAX_ACTUAL_BYTES;
    assert!(
        actual.len() <= max && actual.len() > max - 4 && actual.starts_with("git version 2."),
        "{} bytes: {actual:?}",
        actual.len()
    );
    let shown = s.receipt(&["show", "HEAD"]);
    assert!(
        !shown.stdout.contains('\u{1b}') && !shown.stdout.contains('\u{202e}'),
        "{shown}"
    );
}

#[test]
fn a_dependency_that_did_not_move_keeps_the_check_present() {
    let s = setup();
    assert_eq!(s.receipt(&["run", "integration"]).code, 0);
    let body = s.newest()["receipt"].clone();
    assert_eq!(body["schema"], "git-receipt/v3");
    let dep = &body["subject"]["dependencies"][0];
    assert_eq!(dep["name"], "proto");
    assert_eq!(
        dep["commit"],
        s.env.git_ok(&s.proto, &["rev-parse", "main"]).as_str()
    );
    // the sibling is only read: the tree's id is computed, not written there
    let probe = s
        .env
        .git(&s.proto, &["cat-file", "-e", dep["tree"].as_str().unwrap()]);
    assert_ne!(probe.code, 0, "nothing written into the dependency's clone");
    assert_eq!(s.state("integration")["state"], "present");
    assert_eq!(
        s.receipt(&["gate"]).code,
        1,
        "vendored is not required; test is"
    );
    s.receipt(&["run", "test"]);
    let gate = s.receipt(&["gate"]);
    assert_eq!(gate.code, 0, "{gate}");
    // it moves, but not inside its declared paths: still present
    s.commit(&s.proto, "README", "proto, reworded\n");
    let state = s.state("integration");
    assert_eq!(state["state"], "present", "{state}");
    assert_eq!(s.receipt(&["gate"]).code, 0);
}

#[test]
fn a_dependency_that_moved_inside_its_paths_makes_the_check_stale() {
    let s = setup();
    assert_eq!(s.receipt(&["run", "integration"]).code, 0);
    assert_eq!(s.receipt(&["run", "test"]).code, 0);
    let before = s.env.git_ok(&s.proto, &["rev-parse", "--short=7", "main"]);
    s.commit(
        &s.proto,
        "schema/api.proto",
        "message Ping { string id = 1; }\n",
    );
    let after = s.env.git_ok(&s.proto, &["rev-parse", "--short=7", "main"]);
    let state = s.state("integration");
    assert_eq!(state["state"], "stale", "{state}");
    assert_eq!(
        state["reason"],
        format!("stale: dependency proto moved: {before} -> {after}, schema/api.proto changed")
    );
    let gate = s.receipt(&["gate"]);
    assert_eq!(gate.code, 1, "{gate}");
    assert!(gate.stdout.contains("dependency proto moved"), "{gate}");
    // running it again records the new commit and makes it present
    assert_eq!(s.receipt(&["run", "integration"]).code, 0);
    assert_eq!(s.state("integration")["state"], "present");
}

#[test]
fn a_missing_dependency_clone_is_undecided_never_present() {
    let s = setup();
    assert_eq!(s.receipt(&["run", "integration"]).code, 0);
    assert_eq!(s.receipt(&["run", "test"]).code, 0);
    std::fs::rename(&s.proto, s.root.join("proto.away")).unwrap();
    let gate = s.receipt(&["gate"]);
    assert_eq!(gate.code, 2, "{gate}");
    assert!(
        gate.stderr.contains("cannot decide check \"integration\": dependency proto is not available: no repository at"),
        "{gate}"
    );
    assert!(
        gate.stderr
            .contains("hint: clone it there (git-receipt never fetches it)"),
        "{gate}"
    );
    let status = s.receipt(&["status"]);
    assert_eq!(status.code, 2, "{status}");
    assert!(
        !status.stdout.contains("present  passed"),
        "never present: {status}"
    );
    // and `run` refuses before running anything
    let before = s.ran().len();
    let run = s.receipt(&["run", "integration"]);
    assert_eq!(run.code, 2, "{run}");
    assert_eq!(s.ran().len(), before, "nothing ran");
}

#[test]
fn a_submodule_bump_makes_a_check_of_its_path_stale_through_the_inputs_tree() {
    let s = setup();
    assert_eq!(s.receipt(&["run", "vendored"]).code, 0);
    assert_eq!(s.state("vendored")["state"], "present");
    let lib = s.root.join("lib");
    s.commit(&lib, "VERSION", "v2\n");
    let sub = s.app.join("vendor/lib");
    s.env.git_ok(
        &sub,
        &[
            "-c",
            "protocol.file.allow=always",
            "pull",
            "-q",
            "origin",
            "main",
        ],
    );
    s.env.git_ok(&s.app, &["commit", "-q", "-am", "bump lib"]);
    let state = s.state("vendored");
    assert_eq!(state["state"], "stale", "{state}");
    assert!(
        state["reason"]
            .as_str()
            .unwrap()
            .starts_with("stale: vendor/lib changed since"),
        "{state}"
    );
}

/// `ssh-keygen -Y verify` (no git-receipt code involved) accepts a v3 receipt,
/// and `verify` walks a chain holding v2 and v3 receipts.
#[test]
fn ssh_keygen_accepts_a_v3_receipt() {
    let s = setup();
    s.receipt(&["run", "vendored"]);
    assert_eq!(s.receipt(&["run", "integration"]).code, 0);
    let id = s.env.log_json(&s.app)[0]["id"].as_str().unwrap().to_owned();
    let body = s.receipt(&["show", "--body", &id]).raw_stdout;
    assert!(String::from_utf8_lossy(&body).contains("\"schema\":\"git-receipt/v3\""));
    let sig = s.receipt(&["show", "--sshsig", &id]).stdout;
    let pubkey = s.receipt(&["key", "show"]).stdout;
    let allowed = s.env.path("allowed_signers");
    std::fs::write(&allowed, format!("ci namespaces=\"git-receipt\" {pubkey}")).unwrap();
    let sig_file = s.env.path("v3.sig");
    std::fs::write(&sig_file, sig).unwrap();
    let out = s
        .env
        .ssh_keygen_verify(&allowed, "ci", "git-receipt", &sig_file, &body);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verify = s.receipt(&["verify"]);
    assert_eq!(verify.code, 0, "{verify}");
    assert!(verify.stderr.contains("verified 2 receipts"), "{verify}");
}

#[test]
fn record_refuses_a_check_with_assertions() {
    let s = setup();
    let r = s.receipt(&["record", "test", "--exit-code", "0"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("only `git receipt run` can observe"),
        "{r}"
    );
    assert!(r.stderr.contains("hint: git receipt run test"), "{r}");
}

/// `docs/receipt.schema.json` accepts real v3 receipts (assertions, a failed
/// assertion, dependencies) and refuses v3 members under v2, as the reader does.
#[test]
fn the_json_schema_reads_v3_as_the_reader_does() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/receipt.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let s = setup();
    s.receipt(&["run", "test"]);
    let passed = s.newest();
    s.receipt(&["run", "integration"]);
    let with_dependency = s.newest();
    s.edit_contract("match = ^3$", "match = ^2$");
    s.receipt(&["run", "test"]);
    let failed = s.newest();
    for (what, v) in [
        ("passed assertions", &passed),
        ("a dependency", &with_dependency),
        ("a failed assertion", &failed),
    ] {
        let errors: Vec<String> = validator.iter_errors(v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{what}: {errors:?}");
    }
    let reader = |v: &Value| {
        git_receipt::receipt::Receipt::parse(&git_receipt::canon::to_canonical(v).unwrap())
    };
    for (what, mut v) in [
        ("assertions under v2", passed.clone()),
        ("dependencies under v2", with_dependency.clone()),
    ] {
        v["receipt"]["schema"] = "git-receipt/v2".into();
        assert!(!validator.is_valid(&v), "the schema refuses {what}");
        assert!(reader(&v).is_err(), "the reader refuses {what}");
    }
    let mut lying = failed.clone();
    lying["receipt"]["result"]["detail"] = "".into();
    lying["receipt"]["result"]["exit_code"] = 0.into();
    lying["receipt"]["result"]["passed"] = true.into();
    assert!(
        !validator.is_valid(&lying),
        "passed with a failed assertion"
    );
    assert!(reader(&lying).is_err(), "the reader refuses it too");
}

/// The v3 definition digest, recomputed by Python from `docs/format.md` section 6
/// alone (json + hashlib, no git-receipt code), is the one the receipt signs.
#[test]
fn python_recomputes_the_v3_definition_digest() {
    let s = setup();
    assert_eq!(s.receipt(&["run", "integration"]).code, 0);
    let signed = s.newest()["receipt"]["check"]["definition"].clone();
    let script = r#"
import hashlib, json
d = {"argv": ["sh", "-c", "echo integration >> ../ran.log"], "assertions": [],
     "dependencies": [{"name": "proto", "path": "../proto", "ref": "main", "paths": ["schema"]}],
     "env": [], "paths": ["src"]}
text = json.dumps(d, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
print("sha256:" + hashlib.sha256(text.encode()).hexdigest())
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .output()
        .expect("python3 must be installed for this interop test");
    assert!(out.status.success());
    let python = String::from_utf8(out.stdout).unwrap();
    assert_eq!(signed, python.trim());
    assert_eq!(
        python.trim(),
        "sha256:af1e3ec3438c046f737906a01f6fbf32e49e8a0e66da16921bf6a8dcf4bf79a3",
        "the digest docs/format.md quotes"
    );
}
