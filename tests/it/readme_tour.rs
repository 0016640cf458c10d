//! The README is run, not just read: its tour command by command in a fresh
//! repository, its install step for the man pages, and every example block of
//! `--help` compared line for line with it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, Env, Run};

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

/// The first ```sh block after `heading`.
fn sh_block_after(text: &str, heading: &str) -> Vec<String> {
    let from = text
        .find(heading)
        .unwrap_or_else(|| panic!("README has {heading:?}"));
    let rest = &text[from..];
    let start = rest.find("```sh\n").expect("a sh block") + "```sh\n".len();
    let end = rest[start..].find("```").expect("closed") + start;
    rest[start..end].lines().map(str::to_owned).collect()
}

/// The block as commands: one per line, a here-document with its body.
fn commands(lines: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = lines.iter();
    while let Some(line) = it.next() {
        if line.trim().is_empty() {
            continue;
        }
        let mut cmd = line.clone();
        if let Some(pos) = line.find("<<'") {
            let tag = line[pos + 3..].split('\'').next().unwrap().to_owned();
            for body in it.by_ref() {
                cmd.push('\n');
                cmd.push_str(body);
                if body == &tag {
                    break;
                }
            }
        }
        out.push(cmd);
    }
    out
}

/// A command line without its trailing `# comment`, trimmed.
fn command_part(line: &str) -> &str {
    match line.find("  #") {
        Some(i) => line[..i].trim(),
        None => line.trim(),
    }
}

/// `bash -c cmd` in `dir`, sealed, with `fake_bin` first on PATH.
fn bash(env: &Env, dir: &Path, fake_bin: &Path, cmd: &str) -> Run {
    let mut c = Command::new("bash");
    c.args(["--norc", "--noprofile", "-c", cmd]);
    env.seal(&mut c);
    let mut path = std::ffi::OsString::from(fake_bin);
    path.push(":");
    path.push(common::bin().parent().unwrap());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    c.env("PATH", path)
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat");
    c.current_dir(dir);
    let out = c.output().expect("bash runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        raw_stdout: out.stdout,
    }
}

/// A fresh two-commit repository `your-repo` with a Rust-shaped tree, pushed to
/// a bare `origin`; and a `cargo` that only says what it was asked (the tour's
/// checks are cargo commands; this test is about git-receipt).
fn fresh_repo(env: &Env) -> (PathBuf, PathBuf) {
    let fake = env.path("fake-bin");
    std::fs::create_dir_all(&fake).unwrap();
    let cargo = fake.join("cargo");
    std::fs::write(&cargo, "#!/bin/sh\necho \"cargo $*: ok\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let top = env.tmp.path();
    let setup = r#"set -e
git init -q --bare origin.git
git init -q -b main your-repo
cd your-repo
mkdir src
printf '[package]\nname = "demo"\n' > Cargo.toml
printf 'fn main() {}\n' > src/main.rs
git add -A && git commit -q -m "first"
printf 'pub fn lib() {}\n' > src/lib.rs
git add -A && git commit -q -m "second"
git remote add origin ../origin.git
git push -q -u origin main
"#;
    let r = bash(env, top, &fake, setup);
    assert_eq!(r.code, 0, "{r}");
    (top.join("your-repo"), fake)
}

#[test]
fn the_readme_tour_runs_as_written_in_a_fresh_repository() {
    let env = Env::new();
    let (repo, fake) = fresh_repo(&env);
    let tour = commands(&sh_block_after(&readme(), "## A 60-second tour"));
    assert!(tour.len() > 15, "the tour: {tour:?}");
    assert_eq!(
        tour[0], "cd your-repo",
        "the tour starts in your repository"
    );
    let mut ran = Vec::new();
    let mut retry = None;
    let chains = || env.git_ok(&repo, &["for-each-ref", "refs/receipts/"]);
    for cmd in &tour[1..] {
        let r = bash(&env, &repo, &fake, cmd);
        assert_eq!(r.code, 0, "README tour step `{cmd}` failed: {r}");
        if cmd.contains("--idempotency-key") {
            let before = chains();
            let again = bash(&env, &repo, &fake, command_part(cmd));
            retry = Some((again, chains() == before));
        }
        ran.push((cmd.clone(), r));
    }
    let step = |prefix: &str| -> &Run {
        &ran.iter()
            .find(|(c, _)| c.starts_with(prefix))
            .unwrap_or_else(|| panic!("the tour has `{prefix}`"))
            .1
    };
    // what the comments promise
    assert!(
        step("git receipt run test")
            .stderr
            .contains("test passed in")
    );
    let record = step("cargo test > /tmp/test.log");
    assert!(
        !record.stderr.contains("uncommitted"),
        "record's log is outside the work tree: {record}"
    );
    // the upload retried at once: the chain holds the key for this result
    let keyed = step("git receipt record test --exit-code 0 --log /tmp/test.log --idempotency-key");
    assert!(
        keyed.stderr.contains("git-receipt: recorded test passed"),
        "{keyed}"
    );
    let (retried, chain_unchanged) = retry.expect("the tour records under an idempotency key");
    assert_eq!(retried.code, 0, "{retried}");
    assert!(
        retried.stderr.contains(
            "git-receipt: already recorded: test under idempotency key ci-/test, receipt sha256:"
        ),
        "{retried}"
    );
    assert!(chain_unchanged, "the retry wrote nothing");
    let show = step("git receipt show  ");
    assert!(show.stdout.contains("  found    "), "{show}");
    let log = step("git receipt show --log HEAD --check test");
    assert!(log.stdout.contains("cargo test: ok"), "{log}");
    assert!(
        step("git receipt status  ")
            .stdout
            .contains("test  present")
    );
    assert!(
        step("git receipt gate HEAD")
            .stdout
            .contains("required check test present")
    );
    let each = step("git receipt run test HEAD~1..HEAD");
    assert!(
        each.stderr.contains("[1/1] ") && each.stderr.contains(": test "),
        "one line for the one commit: {each}"
    );
    let range = step("git receipt status HEAD~1..HEAD");
    assert_eq!(
        range.stdout.lines().count(),
        2,
        "a header and one commit: {range}"
    );
    assert!(
        step("git push").stderr.contains("receipt"),
        "the hook pushed the receipts"
    );
    assert!(step("git log --notes").stdout.contains("Notes (receipts/"));
}

#[test]
fn help_examples_are_line_for_line_in_the_readme() {
    let env = Env::new();
    let text = readme();
    // every line of the README's code blocks, without its comment
    let mut in_block = false;
    let mut readme_lines = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_block = !in_block;
        } else if in_block {
            readme_lines.push(command_part(line).to_owned());
        }
    }
    let top = env.receipt_ok(env.tmp.path(), &["--help"]).stdout;
    let subcommands: Vec<String> = top
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_owned)
        .collect();
    assert!(
        subcommands.contains(&"man".to_owned()),
        "man is listed: {top}"
    );
    let mut checked = 0;
    for sub in &subcommands {
        let help = env.receipt_ok(env.tmp.path(), &[sub, "--help"]).stdout;
        for (i, line) in help.lines().enumerate() {
            assert!(
                !(line.contains("Example") && line.contains("git receipt")),
                "{sub}: an example collapsed onto its heading: {line:?}"
            );
            let heading = line.starts_with("Example") || line.starts_with("To check");
            if !heading || !line.ends_with(':') {
                continue;
            }
            let block: Vec<&str> = help
                .lines()
                .skip(i + 1)
                .skip_while(|l| l.is_empty())
                .take_while(|l| l.starts_with("    "))
                .map(str::trim)
                .collect();
            assert!(!block.is_empty(), "{sub}: {line} has a block: {help}");
            for example in block {
                assert!(
                    readme_lines.iter().any(|r| r == example),
                    "{sub} --help example {example:?} is not a line of the README"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "{checked} example lines compared");
}

#[test]
fn git_receipt_help_opens_the_man_page_after_the_readme_install_step() {
    let env = Env::new();
    // installed as `cargo install` would: PREFIX/bin/git-receipt
    let prefix = env.path("prefix");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    let installed = prefix.join("bin/git-receipt");
    // a hard link has no open write handle that a concurrently forked test
    // process could inherit (which makes exec fail with ETXTBSY)
    if std::fs::hard_link(common::bin(), &installed).is_err() {
        std::fs::copy(common::bin(), &installed).unwrap();
    }
    let step = sh_block_after(&readme(), "## Help and man pages");
    assert_eq!(step, ["git receipt man"], "the README's install step");
    let mut r = bash(&env, env.tmp.path(), &prefix.join("bin"), &step[0]);
    for _ in 0..20 {
        if !r.stderr.contains("Text file busy") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        r = bash(&env, env.tmp.path(), &prefix.join("bin"), &step[0]);
    }
    assert_eq!(r.code, 0, "{r}");
    assert!(
        prefix.join("share/man/man1/git-receipt-run.1").is_file(),
        "{r}"
    );
    let r = bash(
        &env,
        env.tmp.path(),
        &prefix.join("bin"),
        "MANPAGER=cat MANWIDTH=200 git receipt --help",
    );
    assert_eq!(r.code, 0, "man finds the page by PATH alone: {r}");
    assert!(r.stdout.contains("SYNOPSIS"), "{r}");
    assert!(
        r.stdout.contains("git receipt [-C <DIR>]"),
        "value names in the synopsis: {r}"
    );
    let r = bash(
        &env,
        env.tmp.path(),
        &prefix.join("bin"),
        "MANPAGER=cat MANWIDTH=200 man git-receipt-run",
    );
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("[--path <PATH>]"), "{r}");
    // the examples stay one per line in the page too
    let examples: Vec<&str> = r
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("git receipt run "))
        .collect();
    assert!(
        examples.contains(&"git receipt run --stale")
            && examples.contains(&"git receipt run lint -- cargo clippy -- -D warnings"),
        "{r}"
    );
}
