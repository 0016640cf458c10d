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
    _gitreceipt git-receipt "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
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
                ),
                false => println!("{line}"),
            }
        }
        print!("{BASH_GIT_GLUE}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut cmd = super::Cli::command().name("git-receipt");
    clap_complete::generate(shell, &mut cmd, "git-receipt", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}
