//! `git receipt completions`: the bash script completes `git receipt <TAB>` under
//! git's own bash completion, checked by running bash with both scripts loaded.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::Env;

/// git's bash completion script as installed on this machine.
fn git_completion_script() -> PathBuf {
    let candidates = [
        "/usr/share/bash-completion/completions/git",
        "/usr/share/git/completion/git-completion.bash",
        "/usr/share/git-core/contrib/completion/git-completion.bash",
        "/etc/bash_completion.d/git",
    ];
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("git's bash completion script is needed for this test; looked in {candidates:?}")
        })
}

/// The candidates bash offers for `line` (the cursor at its end), with git's
/// completion and ours loaded, as a sorted list.
fn complete(env: &Env, line: &str) -> Vec<String> {
    complete_in(env, env.tmp.path(), line)
}

/// [`complete`] with the shell in directory `dir`.
fn complete_in(env: &Env, dir: &Path, line: &str) -> Vec<String> {
    let ours = env
        .receipt_ok(env.tmp.path(), &["completions", "bash"])
        .stdout;
    let script = env.path("ours.bash");
    std::fs::write(&script, ours).unwrap();
    let driver = format!(
        r#"
source '{git}'
source '{ours}'
line=$1
COMP_LINE="$line"; COMP_POINT=${{#line}}
read -ra COMP_WORDS <<< "$line"
[[ "$line" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMPREPLY=()
__git_wrap__git_main git "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        git = git_completion_script().display(),
        ours = script.display()
    );
    let mut cmd = Command::new("bash");
    cmd.args(["--norc", "--noprofile", "-c", &driver, "driver", line]);
    env.seal(&mut cmd);
    cmd.current_dir(dir);
    let out = cmd.output().expect("bash runs");
    assert!(
        out.status.success(),
        "bash failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "no errors from the scripts: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end().to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    v.sort();
    v
}

#[test]
fn git_receipt_tab_completes_subcommands_and_options_under_gits_completion() {
    let env = Env::new();
    let subcommands = complete(&env, "git receipt ");
    for expected in [
        "completions",
        "doctor",
        "gate",
        "run",
        "show",
        "status",
        "verify",
    ] {
        assert!(
            subcommands.iter().any(|c| c == expected),
            "{expected} in {subcommands:?}"
        );
    }
    assert!(
        !subcommands.iter().any(|c| c == "hook-internal"),
        "{subcommands:?}"
    );
    assert_eq!(complete(&env, "git receipt sta"), ["status"]);
    assert_eq!(complete(&env, "git receipt ver"), ["verify"]);
    let run = complete(&env, "git receipt run --");
    for expected in ["--all", "--stale", "--path", "--env"] {
        assert!(run.iter().any(|c| c == expected), "{expected} in {run:?}");
    }
    assert_eq!(
        complete(&env, "git receipt verify --st"),
        ["--strict"],
        "a subcommand's own options"
    );
    assert_eq!(
        complete(&env, "git receipt completions "),
        ["--help", "-C", "-h", "bash", "fish", "zsh"]
    );
    // git's options before the subcommand shift the words; ours still line up
    assert_eq!(complete(&env, "git -C . receipt sho"), ["show"]);
    // and `git rec<TAB>` offers receipt, since git-receipt is on PATH
    let top = complete(&env, "git rec");
    assert!(top.iter().any(|c| c == "receipt"), "{top:?}");
}

#[test]
fn zsh_and_fish_scripts_name_the_subcommands() {
    let env = Env::new();
    let zsh = env
        .receipt_ok(env.tmp.path(), &["completions", "zsh"])
        .stdout;
    assert!(zsh.starts_with("#compdef git-receipt"), "{zsh}");
    assert!(
        zsh.contains("_git-receipt"),
        "zsh's git completion calls _git-receipt"
    );
    assert!(
        zsh.contains("'--stale[") || zsh.contains("--stale"),
        "{zsh}"
    );
    let fish = env
        .receipt_ok(env.tmp.path(), &["completions", "fish"])
        .stdout;
    assert!(fish.contains("complete -c git-receipt"), "{fish}");
    assert!(fish.contains("-a \"doctor\""), "{fish}");
}

/// Issue 26 item 10: completion knows the checks (and reviews) the repository
/// declares, read from the work tree's .gitreceipts, from any subdirectory.
#[test]
fn bash_completes_the_declared_check_and_review_names() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str("[check \"lint\"]\n\trun = true\n[review \"code\"]\n\tpath = src\n");
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    let run = complete_in(&env, &repo, "git receipt run ");
    for expected in ["test", "docs", "lint", "--all"] {
        assert!(run.iter().any(|c| c == expected), "{expected} in {run:?}");
    }
    assert!(
        !run.iter().any(|c| c == "code"),
        "a review is not a check: {run:?}"
    );
    assert_eq!(
        complete_in(&env, &repo.join("src"), "git receipt run do"),
        ["docs"]
    );
    assert_eq!(complete_in(&env, &repo, "git receipt run test l"), ["lint"]);
    assert_eq!(
        complete_in(&env, &repo, "git receipt gate --require li"),
        ["lint"]
    );
    assert_eq!(
        complete_in(&env, &repo, "git receipt review --name "),
        ["code"]
    );
    // options are still options, and outside a repository there are no names
    assert_eq!(
        complete_in(&env, &repo, "git receipt run --st"),
        ["--stale"]
    );
    let outside = complete(&env, "git receipt run ");
    assert!(!outside.iter().any(|c| c == "test"), "{outside:?}");
}
