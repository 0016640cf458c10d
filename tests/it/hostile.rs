//! Hostile input (issue 10): receipts, refs and `.gitreceipts` written by someone
//! who can push, or by a careless hand. Nothing they hold may paint the terminal,
//! crash the binary, read outside the repository or keep a check fresh forever.

use crate::common::{Env, Run};

/// The attack from the issue: clear the screen, paint in red, return the carriage
/// and overwrite the line with a fake `present`.
const PAINT: &str = "x\x1b[2J\x1b[31mFAKE\rtest  present";

/// Bytes that must never reach a terminal from receipt data.
fn assert_no_terminal_control(what: &str, r: &Run) {
    for (stream, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
        let bad: Vec<char> = text
            .chars()
            .filter(|&c| {
                (c.is_control() && c != '\n')
                    || ('\u{202a}'..='\u{202e}').contains(&c)
                    || ('\u{2066}'..='\u{2069}').contains(&c)
            })
            .collect();
        assert!(
            bad.is_empty(),
            "{what}: {stream} holds raw control characters {bad:?}: {r}"
        );
    }
}

#[test]
fn terminal_injection_through_detail_argv_and_paths_is_escaped_everywhere() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    // a failed receipt whose detail paints the screen (the issue's exact attack)
    let r = env.receipt(
        &repo,
        &["record", "test", "--exit-code", "1", "--detail", PAINT],
    );
    assert_eq!(r.code, 0, "{r}");
    // an ad hoc check whose argv rings the bell, sets the title and reverses text
    let r = env.receipt(
        &repo,
        &[
            "record",
            "evil",
            "--exit-code",
            "0",
            "--",
            "sh",
            "\x1b]0;owned\x07",
            "\u{202e}txt.exe",
        ],
    );
    assert_eq!(r.code, 0, "{r}");
    // a passing `docs`, then a committed file name that carries escapes makes it stale
    env.receipt_ok(&repo, &["run", "docs"]);
    std::fs::write(repo.join("docs/\x1b[2Jx\u{202e}.md"), "x\n").unwrap();
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "escape in a file name"]);

    let show = env.receipt(&repo, &["show", "HEAD~1"]);
    assert_eq!(show.code, 0, "{show}");
    assert!(
        show.stdout
            .contains(r"(x\x1b[2J\x1b[31mFAKE\x0dtest  present)"),
        "the detail is shown, visibly escaped: {show}"
    );
    assert!(
        show.stdout.contains(r"\x1b]0;owned\x07") && show.stdout.contains(r"\u{202e}txt.exe"),
        "the argv is shown, visibly escaped: {show}"
    );
    assert_no_terminal_control("show", &show);

    let status = env.receipt(&repo, &["status", "HEAD~1"]);
    assert_eq!(status.code, 0, "{status}");
    assert!(
        status.stdout.contains(r"test  failed   x\x1b[2J"),
        "{status}"
    );
    assert_no_terminal_control("status", &status);
    let stale = env.receipt(&repo, &["status"]);
    assert!(
        stale.stdout.contains(r"docs/\x1b[2Jx\u{202e}.md changed"),
        "{stale}"
    );
    assert_no_terminal_control("status of the stale check", &stale);

    let gate = env.receipt(&repo, &["gate", "HEAD~1"]);
    assert_eq!(gate.code, 1, "{gate}");
    assert!(gate.stdout.contains(r"\x1b[31mFAKE"), "{gate}");
    assert_no_terminal_control("gate", &gate);

    let log = env.receipt(&repo, &["log"]);
    assert_eq!(log.code, 0, "{log}");
    assert_no_terminal_control("log", &log);

    // the pre-push hook refuses the failed check and says why, escaped
    let head = env.git_ok(&repo, &["rev-parse", "HEAD~1"]);
    let input = format!(
        "refs/heads/main {head} refs/heads/main {}\n",
        "0".repeat(40)
    );
    let hook = env.receipt_input(
        &repo,
        &["hook", "pre-push", "origin", "git://example.invalid/x"],
        input.as_bytes(),
    );
    assert_eq!(hook.code, 1, "{hook}");
    assert!(hook.stderr.contains(r"test  failed   x\x1b[2J"), "{hook}");
    assert_no_terminal_control("pre-push hook", &hook);

    // an error that quotes a hostile argument is escaped as well
    let err = env.receipt(&repo, &["status", "\x1b[2Jnope"]);
    assert_eq!(err.code, 2, "{err}");
    assert_no_terminal_control("an error", &err);
}

/// `ssh-keygen -Y verify` accepts the receipt's signature with this allowed_signers file.
fn ssh_keygen_accepts(
    env: &Env,
    allowed: &std::path::Path,
    body: &[u8],
    sig: &std::path::Path,
) -> bool {
    env.ssh_keygen_verify(allowed, "ci@example.org", "git-receipt", sig, body)
        .status
        .success()
}

#[test]
fn allowed_signers_negation_and_wildcards_trust_exactly_what_ssh_keygen_accepts() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let id = env.log_json(&repo)[0]["id"].as_str().unwrap().to_owned();
    let body = env.receipt_ok(&repo, &["show", "--body", &id]).raw_stdout;
    let sig = env.path("msg.sig");
    std::fs::write(
        &sig,
        env.receipt_ok(&repo, &["show", "--sshsig", &id]).stdout,
    )
    .unwrap();
    let pubkey = env
        .receipt_ok(&repo, &["key", "show"])
        .stdout
        .trim()
        .to_owned();
    let allowed = env.path("allowed_signers");
    let mut verdicts = Vec::new();
    for options in [
        "namespaces=\"*,!git-receipt\"",
        "namespaces=\"!git-receipt,*\"",
        "namespaces=\"git-*\"",
        "namespaces=\"!other,*\"",
        "namespaces=\"!other\"",
        "namespaces=\"git-receipt\"",
        "namespaces=\"GIT-RECEIPT\"",
        "namespaces=\"git,file\"",
        "namespaces=\"git-receip?\"",
        "namespaces=\"git-receipt?\"",
        "namespaces=\"g*t*r*t\"",
        "namespaces=\"file,git-receipt\"",
        "namespaces=\"file, git-receipt\"",
        "namespaces=\"*\"",
        "NAMESPACES=\"git-receipt\"",
        "",
    ] {
        std::fs::write(&allowed, format!("ci@example.org {options} {pubkey}\n")).unwrap();
        let oracle = ssh_keygen_accepts(&env, &allowed, &body, &sig);
        let ours = env.receipt(
            &repo,
            // strict: a key the file does not trust for receipts is a finding
            &[
                "verify",
                "--strict",
                "--allowed-signers",
                allowed.to_str().unwrap(),
            ],
        );
        assert!(ours.code == 0 || ours.code == 1, "{options}: {ours}");
        assert_eq!(
            ours.code == 0,
            oracle,
            "{options}: ssh-keygen -Y verify {} the key; ours: {ours}",
            if oracle { "accepts" } else { "refuses" }
        );
        verdicts.push(oracle);
    }
    assert!(
        verdicts.contains(&true) && verdicts.contains(&false),
        "the table has lines of both kinds: {verdicts:?}"
    );

    // cert-authority lines are refused with the way out, not silently skipped
    std::fs::write(
        &allowed,
        format!("ci@example.org cert-authority {pubkey}\n"),
    )
    .unwrap();
    assert!(!ssh_keygen_accepts(&env, &allowed, &body, &sig));
    let r = env.receipt(
        &repo,
        &["verify", "--allowed-signers", allowed.to_str().unwrap()],
    );
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("allowed_signers:1: cert-authority"),
        "{r}"
    );
    assert!(r.stderr.contains("list the signing keys themselves"), "{r}");
}

#[test]
fn fresh_forever_non_utf8_path_is_refused_with_its_line() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let mut contract = b"[check \"test\"]\n\trun = true\n\tpath = src".to_vec();
    contract.extend_from_slice(b"\xff\n");
    std::fs::write(repo.join(".gitreceipts"), &contract).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "non-UTF-8 path"]);
    for args in [&["run", "test"][..], &["status"], &["gate"]] {
        let r = env.receipt(&repo, args);
        assert_eq!(r.code, 2, "{args:?}: {r}");
        assert!(
            r.stderr.contains(":3: not UTF-8 (byte 12 of the line)"),
            "{args:?} names the line: {r}"
        );
        assert!(
            r.stderr.contains("hint: write .gitreceipts in UTF-8"),
            "{r}"
        );
    }
    assert!(
        env.git_ok(&repo, &["for-each-ref", "refs/receipts/"])
            .is_empty(),
        "no receipt was written for a check whose inputs cannot be named"
    );
}

#[test]
fn fresh_forever_path_matching_nothing_is_warned_at_run_and_status() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    std::fs::write(
        repo.join(".gitreceipts"),
        "[check \"test\"]\n\trun = true\n\tpath = srcx\n\tpath = src/*\n\tpath = docs\n",
    )
    .unwrap();
    env.git_ok(&repo, &["commit", "-qam", "typo and a pattern"]);
    let run = env.receipt(&repo, &["run", "test"]);
    assert_eq!(run.code, 0, "{run}");
    for path in ["srcx", "src/*"] {
        assert!(
            run.stderr.contains(&format!(
                "warning: check \"test\": path \"{path}\" matches nothing in the work tree"
            )),
            "{path}: {run}"
        );
    }
    assert!(!run.stderr.contains("path \"docs\""), "docs exists: {run}");
    // record warns the same way
    let rec = env.receipt(&repo, &["record", "test", "--exit-code", "0"]);
    assert_eq!(rec.code, 0, "{rec}");
    assert!(
        rec.stderr
            .contains("warning: check \"test\": path \"srcx\" matches nothing in the work tree"),
        "{rec}"
    );
    // a change under src/ leaves the check present, but status says why to distrust it
    std::fs::write(repo.join("src/lib.rs"), "pub fn changed() {}\n").unwrap();
    env.git_ok(&repo, &["commit", "-qam", "change src"]);
    let status = env.receipt(&repo, &["status"]);
    assert_eq!(status.code, 0, "{status}");
    for path in ["srcx", "src/*"] {
        assert!(
            status.stderr.contains(&format!(
                "warning: check \"test\": path \"{path}\" matches nothing at HEAD ("
            )),
            "{path}: {status}"
        );
    }
    assert!(
        status
            .stderr
            .contains("hint: correct the path in .gitreceipts"),
        "{status}"
    );
}

/// Run with backtraces off and insist that nothing panicked.
fn assert_no_panic(what: &str, r: &Run) {
    assert_ne!(r.code, 101, "{what}: exit 101 is a panic: {r}");
    assert!(
        !r.stderr.contains("panicked") && !r.stderr.contains("backtrace"),
        "{what}: {r}"
    );
}

#[test]
fn panic_on_huge_timeout_is_a_refused_contract_instead() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    for timeout in [
        "18446744073709551615",
        "307445734561825860m",
        "8d",
        "169h",
        "604801",
    ] {
        std::fs::write(
            repo.join(".gitreceipts"),
            format!("[check \"test\"]\n\trun = true\n\ttimeout = {timeout}\n"),
        )
        .unwrap();
        env.git_ok(&repo, &["commit", "-qam", timeout]);
        for args in [&["run", "test"][..], &["status"]] {
            let r = env.receipt_with(&repo, args, &[("RUST_BACKTRACE", "0")]);
            assert_no_panic(timeout, &r);
            assert_eq!(r.code, 2, "{timeout} {args:?}: {r}");
            assert!(
                r.stderr.contains(&format!(
                    ":3: check \"test\": timeout \"{timeout}\" is not a duration from 1s to 7 days"
                )),
                "{timeout}: {r}"
            );
        }
    }
    assert!(
        env.git_ok(&repo, &["for-each-ref", "refs/receipts/"])
            .is_empty(),
        "nothing ran"
    );
    // the bound itself is accepted
    std::fs::write(
        repo.join(".gitreceipts"),
        "[check \"test\"]\n\trun = true\n\ttimeout = 168h\n",
    )
    .unwrap();
    env.receipt_ok(&repo, &["run", "test"]);
}

/// A writer id that is well-formed but belongs to nobody here.
const FOREIGN: &str = "evil-0123456789abcdef0123456789abcdef";

#[test]
fn one_bad_ref_breaks_nobody_but_is_named_and_verify_reports_it() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let id = env.log_json(&repo)[0]["id"].as_str().unwrap().to_owned();
    let blob = env.git_input(&repo, &["hash-object", "-w", "--stdin"], b"not a chain\n");
    let tree = env.git_ok(&repo, &["rev-parse", "HEAD^{tree}"]);
    env.git_ok(&repo, &["tag", "-a", "-m", "a tag", "v1", "HEAD"]);
    let tag = env.git_ok(&repo, &["rev-parse", "refs/tags/v1"]);
    let bad: Vec<(String, String)> = vec![
        (format!("refs/receipts/{FOREIGN}"), blob.clone()),
        (
            "refs/receipts/evil-11111111111111111111111111111111".into(),
            tree,
        ),
        (
            "refs/receipts/evil-22222222222222222222222222222222".into(),
            tag,
        ),
        (
            "refs/receipts/x/y".into(),
            env.git_ok(&repo, &["rev-parse", "HEAD"]),
        ),
        (format!("refs/notes/receipts/{FOREIGN}"), blob),
    ];
    for (name, value) in &bad {
        env.git_ok(&repo, &["update-ref", name, value]);
    }
    // a ref whose file holds garbage, as a broken or hostile copy leaves it
    let garbage = "refs/receipts/evil-33333333333333333333333333333333";
    std::fs::write(repo.join(".git").join(garbage), "garbage\n").unwrap();
    let named = |r: &Run, refname: &str| r.stderr.matches(refname).count();
    for args in [
        &["log"][..],
        &["reindex"],
        &["status"],
        &["gate"],
        &["show"],
        &["show", "--body", &id],
    ] {
        let r = env.receipt_with(&repo, args, &[("RUST_BACKTRACE", "0")]);
        assert_no_panic("bad refs", &r);
        assert_eq!(r.code, 0, "{args:?} goes on past the bad writers: {r}");
        for (name, _) in bad.iter().filter(|(n, _)| n.starts_with("refs/receipts/")) {
            assert!(
                named(&r, name) <= 1,
                "{args:?} names {name} at most once: {r}"
            );
        }
        if args[0] == "log" {
            assert!(
                r.stdout.contains(&id[..19]),
                "the good receipt is listed: {r}"
            );
            for (name, _) in bad.iter().filter(|(n, _)| n.starts_with("refs/receipts/")) {
                assert_eq!(named(&r, name), 1, "log names {name}: {r}");
            }
            assert_eq!(named(&r, garbage), 1, "log names {garbage}: {r}");
        }
    }
    assert!(
        env.git(
            &repo,
            &["rev-parse", "--verify", "-q", "refs/notes/receipts/x/y"]
        )
        .code
            != 0,
        "reindex wrote no notes for the invalid writer ref refs/receipts/x/y"
    );
    let r = env.receipt(&repo, &["verify"]);
    assert_eq!(r.code, 1, "verify still reports them as findings: {r}");
    assert!(
        r.stdout
            .contains("refs/receipts/x/y is not named by a writer id"),
        "{r}"
    );
    assert!(
        r.stdout
            .contains("evil-33333333333333333333333333333333 cannot be read"),
        "{r}"
    );
    assert!(
        r.stdout.contains(&format!(
            "refs/notes/receipts/{FOREIGN} is not a readable notes commit: it points at a blob"
        )),
        "{r}"
    );
    for name in [
        FOREIGN,
        "evil-11111111111111111111111111111111",
        "evil-22222222222222222222222222222222",
    ] {
        assert!(r.stdout.contains(name), "verify names {name}: {r}");
    }
}

/// The same bad refs packed (as a clone or `git gc` leaves them, tag peeled) are
/// reported exactly as loose ones; so is a packed ref whose object is gone, and
/// one that is not named by a writer id.
#[test]
fn bad_refs_packed_are_reported_as_loose_ones() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let blob = env.git_input(&repo, &["hash-object", "-w", "--stdin"], b"not a chain\n");
    let tree = env.git_ok(&repo, &["rev-parse", "HEAD^{tree}"]);
    env.git_ok(&repo, &["tag", "-a", "-m", "a tag", "v1", "HEAD"]);
    let tag = env.git_ok(&repo, &["rev-parse", "refs/tags/v1"]);
    let tree_ref = "refs/receipts/evil-11111111111111111111111111111111";
    for (name, value) in [
        (format!("refs/receipts/{FOREIGN}"), blob.as_str()),
        (tree_ref.into(), tree.as_str()),
        (
            "refs/receipts/evil-22222222222222222222222222222222".into(),
            tag.as_str(),
        ),
    ] {
        env.git_ok(&repo, &["update-ref", &name, value]);
    }
    let loose = env.receipt(&repo, &["verify"]);
    assert_eq!(loose.code, 1, "{loose}");
    env.git_ok(&repo, &["pack-refs", "--all"]);
    assert_eq!(
        std::fs::read_dir(repo.join(".git/refs/receipts")).map_or(0, |d| d.count()),
        0,
        "every chain ref is packed"
    );
    let packed_refs = std::fs::read_to_string(repo.join(".git/packed-refs")).unwrap();
    assert!(
        packed_refs.contains("\n^"),
        "the tag is peeled: {packed_refs}"
    );
    let packed = env.receipt(&repo, &["verify"]);
    assert_eq!(
        (packed.code, &packed.stdout),
        (loose.code, &loose.stdout),
        "{packed}"
    );
    let r = env.receipt(&repo, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "the good chain still decides: {r}");
    // the tree's ref, pointing at an object that is not there
    let gone = "e".repeat(40);
    std::fs::write(
        repo.join(".git/packed-refs"),
        packed_refs.replace(&format!("{tree} {tree_ref}"), &format!("{gone} {tree_ref}")),
    )
    .unwrap();
    let r = env.receipt(&repo, &["verify"]);
    assert!(
        r.stdout.contains(&format!(
            "points at {gone}, which is missing from the object store"
        )),
        "{r}"
    );
    // a packed name that is no writer id
    env.git_ok(&repo, &["update-ref", "refs/receipts/x/y", "HEAD"]);
    env.git_ok(&repo, &["pack-refs", "--all"]);
    let r = env.receipt(&repo, &["verify"]);
    assert!(
        r.stdout
            .contains("refs/receipts/x/y is not named by a writer id"),
        "{r}"
    );
    let r = env.receipt(&repo, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");
}

#[test]
fn reads_outside_the_repository_a_gitreceipts_that_is_not_a_regular_file_is_refused() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    // a secret outside the repository that a committed symlink points at
    let secret = env.path("shadow");
    std::fs::write(
        &secret,
        "[check \"test\"]\n\trun = true\nroot:SECRET-HASH:19000::::::\n",
    )
    .unwrap();
    std::fs::remove_file(repo.join(".gitreceipts")).unwrap();
    std::os::unix::fs::symlink(&secret, repo.join(".gitreceipts")).unwrap();
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-qm", "contract as a symlink"]);
    for args in [&["run", "test"][..], &["status"], &["gate"]] {
        let r = env.receipt(&repo, args);
        assert_eq!(r.code, 2, "{args:?}: {r}");
        assert!(
            r.stderr.contains("is a symbolic link, not a regular file"),
            "{args:?}: {r}"
        );
        assert!(
            r.stderr.contains("hint: replace it with a regular file"),
            "{r}"
        );
        assert!(
            !r.stderr.contains("SECRET"),
            "{args:?} quotes nothing of it: {r}"
        );
    }
    assert!(
        env.git_ok(&repo, &["for-each-ref", "refs/receipts/"])
            .is_empty()
    );
    // a directory and a fifo in the work tree are refused by run, which reads it
    std::fs::remove_file(repo.join(".gitreceipts")).unwrap();
    for (kind, make) in [
        (
            "a directory",
            &(|p: &std::path::Path| std::fs::create_dir(p).unwrap()) as &dyn Fn(&std::path::Path),
        ),
        ("a fifo", &|p: &std::path::Path| {
            let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
        }),
    ] {
        let p = repo.join(".gitreceipts");
        make(&p);
        let r = env.receipt(&repo, &["run", "test"]);
        assert_eq!(r.code, 2, "{kind}: {r}");
        assert!(
            r.stderr.contains(&format!("is {kind}, not a regular file")),
            "{r}"
        );
        let _ = std::fs::remove_dir(&p).or_else(|_| std::fs::remove_file(&p));
    }
}

unsafe extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}

#[test]
fn a_contract_that_fails_to_parse_is_quoted_no_further_than_its_offending_line() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    for text in [
        "[x\nSECRET-NEXT-LINE\n",
        "[check \"test\"]\n\trun = \"open\nSECRET-NEXT-LINE\n",
        "[check \"test\"\nSECRET-NEXT-LINE\n",
    ] {
        std::fs::write(repo.join(".gitreceipts"), text).unwrap();
        let r = env.receipt(&repo, &["run", "test"]);
        assert_eq!(r.code, 2, "{r}");
        assert!(r.stderr.contains("not valid git-config syntax"), "{r}");
        assert!(!r.stderr.contains("SECRET"), "{text:?}: {r}");
    }
}

#[test]
fn a_recorded_pass_silently_beating_an_observed_failure_is_shown_and_accept_run_refuses_it() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let contract = |accept: &str| {
        format!("[check \"test\"]\n\trun = \"exit 3\"\n\tpath = src\n\trequired = true\n{accept}")
    };
    std::fs::write(repo.join(".gitreceipts"), contract("")).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "test fails"]);
    assert_eq!(env.receipt(&repo, &["run", "test"]).code, 3);
    env.receipt_ok(&repo, &["record", "test", "--exit-code", "0"]);

    // without accept = run the recorded pass decides, and every output says so
    let status = env.receipt_ok(&repo, &["status"]);
    assert!(status.stdout.contains("test  present"), "{status}");
    assert!(
        status.stdout.contains("(recorded)\n"),
        "status names the mode: {status}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&env.receipt_ok(&repo, &["status", "--json"]).stdout).unwrap();
    assert_eq!(json["checks"][0]["decided_by"]["mode"], "recorded");
    let gate = env.receipt(&repo, &["gate", "--json"]);
    assert_eq!(gate.code, 0, "{gate}");
    let json: serde_json::Value = serde_json::from_str(&gate.stdout).unwrap();
    assert_eq!(json[0]["checks"][0]["decided_by"]["mode"], "recorded");
    let log = env.receipt_ok(&repo, &["log"]);
    assert!(log.stdout.contains(" test passed (recorded) "), "{log}");
    assert!(log.stdout.contains(" test failed (run) "), "{log}");
    let log = env.log_json(&repo);
    assert_eq!(log[0]["mode"], "recorded");
    assert_eq!(log[1]["mode"], "run");
    let show = env.receipt_ok(&repo, &["show"]);
    assert!(show.stdout.contains("(recorded)"), "{show}");

    // accept = run: only the observed failure counts, and the reason says why
    std::fs::write(repo.join(".gitreceipts"), contract("\taccept = run\n")).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "observed runs only"]);
    let status = env.receipt_ok(&repo, &["status"]);
    assert!(status.stdout.contains("test  failed"), "{status}");
    assert!(
        status
            .stdout
            .contains("(1 recorded receipt ignored: accept = run counts only observed runs)"),
        "{status}"
    );
    assert!(status.stdout.contains("(run)\n"), "{status}");
    let gate = env.receipt(&repo, &["gate"]);
    assert_eq!(gate.code, 1, "{gate}");
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    let input = format!(
        "refs/heads/main {head} refs/heads/main {}\n",
        "0".repeat(40)
    );
    let hook = env.receipt_input(&repo, &["hook", "pre-push", "origin"], input.as_bytes());
    assert_eq!(hook.code, 1, "the pre-push hook refuses too: {hook}");
    assert!(hook.stderr.contains("recorded receipt ignored"), "{hook}");
    // a recorded result for a check that accepts only runs counts for nothing at all
    env.receipt_ok(&repo, &["record", "test", "--exit-code", "0"]);
    assert!(
        env.receipt_ok(&repo, &["status"])
            .stdout
            .contains("test  failed")
    );

    // a branch that drops `accept = run` is still held to it against main
    env.git_ok(&repo, &["checkout", "-qb", "weaken"]);
    std::fs::write(repo.join(".gitreceipts"), contract("")).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "accept anything"]);
    assert_eq!(
        env.receipt(&repo, &["gate"]).code,
        0,
        "its own file accepts records"
    );
    let gate = env.receipt(&repo, &["gate", "--verify"]);
    assert_eq!(gate.code, 1, "main's accept = run still holds: {gate}");
    assert!(gate.stdout.contains("recorded receipts ignored"), "{gate}");
}

#[test]
fn messages_a_signing_key_readable_by_others_is_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let first = env.receipt_ok(&repo, &["run", "test"]);
    assert!(!first.stderr.contains("readable by others"), "{first}");
    let key = env.home.join(".config/git-receipt/signing_key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = env.receipt_ok(&repo, &["run", "test"]);
    assert!(
        r.stderr.contains(&format!(
            "warning: the signing key {} is readable by others (mode 0644)",
            key.display()
        )),
        "{r}"
    );
    assert!(
        r.stderr
            .contains(&format!("hint: chmod 600 {}", key.display())),
        "{r}"
    );
    assert!(!r.stderr.contains("PRIVATE KEY"), "no key material: {r}");
}

#[test]
fn messages_a_chain_left_pointing_at_a_pruned_object_names_the_ref_and_the_way_out() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    env.receipt_ok(&repo, &["run", "test"]);
    let writer = env.only_writer(&repo);
    let refname = format!("refs/receipts/{writer}");
    // what a `git gc --prune=now` racing a writer leaves: the ref names a commit
    // that was pruned before the ref made it reachable
    // (and with no reflog to restore it from: chains written before reflogs were
    // kept, or a reflog expired; with one, see below)
    let tip = env.git_ok(&repo, &["rev-parse", &refname]);
    std::fs::remove_file(repo.join(".git/objects").join(&tip[..2]).join(&tip[2..])).unwrap();
    std::fs::remove_file(repo.join(".git/logs").join(&refname)).unwrap();
    let run = env.receipt(&repo, &["run", "test"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(
        run.stderr
            .contains(&format!("{refname} points at {tip}, which is missing")),
        "{run}"
    );
    assert!(
        run.stderr.contains(&format!("git update-ref -d {refname}")),
        "{run}"
    );
    assert!(run.stderr.contains("git receipt reindex"), "{run}");
    let status = env.receipt(&repo, &["status"]);
    assert_eq!(status.code, 0, "{status}");
    assert!(
        status.stderr.contains(&format!("skipping {refname}")),
        "{status}"
    );
    assert!(
        status
            .stderr
            .contains(&format!("git update-ref -d {refname}")),
        "{status}"
    );
    // the way out works
    env.git_ok(&repo, &["update-ref", "-d", &refname]);
    env.receipt_ok(&repo, &["reindex"]);
    env.receipt_ok(&repo, &["run", "test"]);
    assert!(
        env.receipt_ok(&repo, &["status"])
            .stdout
            .contains("test  present")
    );
    // with the reflog every chain update now keeps, the ref is put back to the
    // newest entry whose objects are all here, and the warning says what was lost
    env.receipt_ok(&repo, &["run", "test"]);
    let before = env.git_ok(&repo, &["rev-parse", &refname]);
    env.receipt_ok(&repo, &["run", "test"]);
    let tip = env.git_ok(&repo, &["rev-parse", &refname]);
    std::fs::remove_file(repo.join(".git/objects").join(&tip[..2]).join(&tip[2..])).unwrap();
    let run = env.receipt(&repo, &["run", "test"]);
    assert_eq!(run.code, 0, "{run}");
    assert!(
        run.stderr
            .contains(&format!("warning: {refname} pointed at {tip}"))
            && run
                .stderr
                .contains(&format!("restored it from its reflog to {before}"))
            && run.stderr.contains("receipts written after it are lost"),
        "{run}"
    );
    let r = env.receipt(&repo, &["verify"]);
    assert_eq!(r.code, 0, "{r}");
}
