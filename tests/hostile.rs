//! Hostile input (issue 10): receipts, refs and `.gitreceipts` written by someone
//! who can push, or by a careless hand. Nothing they hold may paint the terminal,
//! crash the binary, read outside the repository or keep a check fresh forever.

mod common;
use common::{Env, Run};

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
    assert!(status.stdout.contains(r"failed: x\x1b[2J"), "{status}");
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
    assert!(hook.stderr.contains(r"failed: x\x1b[2J"), "{hook}");
    assert_no_terminal_control("pre-push hook", &hook);

    // an error that quotes a hostile argument is escaped as well
    let err = env.receipt(&repo, &["status", "\x1b[2Jnope"]);
    assert_eq!(err.code, 2, "{err}");
    assert_no_terminal_control("an error", &err);
}
