//! `git receipt completions`: shell completion scripts generated from the clap
//! definitions, with the glue git's own completion needs to complete
//! `git receipt <TAB>`.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, CommandFactory, ValueEnum};
use clap_complete::Shell;

/// Print a shell completion script for git receipt
///
/// bash: completes `git receipt <TAB>` under git's own bash completion (which
/// calls `_git_receipt`) and `git-receipt <TAB>`. zsh: a `_git-receipt`
/// function, which zsh's git completion calls for `git receipt`. fish: completions
/// for `git-receipt`.
///
/// Examples:
///
///     git receipt completions bash > ~/.local/share/bash-completion/completions/git-receipt
///     git receipt completions zsh > ~/.zfunc/_git-receipt
///     git receipt completions fish > ~/.config/fish/completions/git-receipt.fish
///
/// bash also completes the checks declared in the work tree's .gitreceipts
/// (`git receipt run <TAB>`, `gate --require <TAB>`) and its reviews
/// (`review --name <TAB>`).
///
/// bash-completion loads a file for `git-receipt` only when that command is
/// completed; for `git receipt <TAB>` in a new shell, source it from ~/.bashrc.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: CompletionShell,
}

/// The shells a script is generated for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

/// The name the bash script is generated for (see [`cmd_completions`]).
const BASH_NAME: &str = "gitreceipt";

/// Names from the `.gitreceipts` of the work tree: clap's script knows the
/// options but not the checks a repository declares, so after it has answered,
/// `run`'s and `record`'s words and `--require`'s value get the
/// declared check names, and `review --name`'s the review names. The file is read
/// with git's own config parser (it is git config syntax); nothing is run.
const BASH_NAMES: &str = r#"
# the [check "NAME"] (or [review "NAME"]) names of the work tree's .gitreceipts
_gitreceipt_declared() {
    local top
    top=$(git rev-parse --show-toplevel 2>/dev/null) || return 0
    [ -f "$top/.gitreceipts" ] || return 0
    git config --file "$top/.gitreceipts" --name-only --get-regexp "^$1\." 2>/dev/null |
        sed -e "s/^$1\.//" -e 's/\.[^.]*$//' | sort -u
}

_gitreceipt_with_names() {
    _gitreceipt "$@"
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} sub= i names=
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            -C) ((i++)) ;;
            -*) ;;
            *) sub=${COMP_WORDS[i]}; break ;;
        esac
    done
    # an option's value: the names instead of clap's file names; a word: besides
    case "$sub:$prev" in
        *:--require) COMPREPLY=($(compgen -W "$(_gitreceipt_declared check)" -- "$cur")) ;;
        review:--name) COMPREPLY=($(compgen -W "$(_gitreceipt_declared review)" -- "$cur")) ;;
        run:* | record:*)
            [[ $cur == -* ]] || names=$(_gitreceipt_declared check)
            [ -n "$names" ] && COMPREPLY+=($(compgen -W "$names" -- "$cur"))
            ;;
    esac
    return 0
}
"#;

/// Glue for git's bash completion: git completes `git receipt ...` by calling
/// `_git_receipt` with its own `words`/`cword` (`words[__git_cmd_idx]` is
/// `receipt`); clap's function reads `COMP_WORDS`/`COMP_CWORD` as if the command
/// were `git-receipt`.
const BASH_GIT_GLUE: &str = r#"
# git's completion (contrib/completion/git-completion.bash) calls this for `git receipt`.
_git_receipt() {
    local idx=${__git_cmd_idx:-1}
    local COMP_WORDS=("git-receipt" "${words[@]:idx+1}")
    local COMP_CWORD=$((cword - idx))
    local COMP_LINE="${COMP_WORDS[*]}"
    local COMP_POINT=${#COMP_LINE}
    _gitreceipt_with_names git-receipt "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
}
"#;

/// Print the script.
pub fn cmd_completions(args: CompletionsArgs) -> Result<ExitCode> {
    let shell = match args.shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    if let CompletionShell::Bash = args.shell {
        // clap_complete's bash script names a hyphenated binary's subcommand
        // functions inconsistently (`git__receipt__subcmd__run` called,
        // `git__subcmd__receipt__subcmd__run` defined), so it is generated for a
        // name without one and registered for `git-receipt`.
        let mut buf = Vec::new();
        let mut cmd = super::Cli::command().name(BASH_NAME);
        clap_complete::generate(shell, &mut cmd, BASH_NAME, &mut buf);
        let script = String::from_utf8(buf)?;
        for line in script.lines() {
            match line.trim_start().starts_with("complete -F ") {
                true => println!(
                    "{}",
                    line.strip_suffix(BASH_NAME)
                        .map(|l| format!("{l}git-receipt"))
                        .unwrap_or_else(|| line.to_owned())
                        .replace("-F _gitreceipt ", "-F _gitreceipt_with_names ")
                ),
                false => println!("{line}"),
            }
        }
        print!("{BASH_NAMES}{BASH_GIT_GLUE}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut cmd = super::Cli::command().name("git-receipt");
    // into memory first: clap_complete panics when its writer fails
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "git-receipt", &mut script);
    super::output::write_stdout(&script)?;
    Ok(ExitCode::SUCCESS)
}
