//! `git receipt man`: write man pages generated from the clap definitions.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Args, CommandFactory};

/// Write the man pages, so that `git receipt --help` works
///
/// Writes git-receipt.1 and one page per subcommand: git turns
/// `git receipt --help` into `man git-receipt`. By default the pages go to share/man/man1 beside the directory this binary is
/// in (~/.cargo/share/man/man1 after `cargo install`): man searches there for
/// every directory on PATH, so nothing else needs configuring.
///
/// Examples:
///
///     git receipt man
///     git receipt man --out-dir ~/.local/share/man/man1
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ManArgs {
    /// Where to write the pages (default: ../share/man/man1 from this binary's directory).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// Where man looks for the pages of a program in `bin`: `bin/../share/man/man1`.
fn default_out_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding this program's path")?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let bin = exe
        .parent()
        .context("this program's path has no directory")?;
    Ok(bin
        .parent()
        .unwrap_or(bin)
        .join("share")
        .join("man")
        .join("man1"))
}

/// Generate the pages.
pub fn cmd_man(args: ManArgs) -> Result<ExitCode> {
    let out_dir = match args.out_dir {
        Some(d) => d,
        None => default_out_dir()?,
    };
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut cmd = super::Cli::command().name("git-receipt");
    cmd.build();
    write_page(&out_dir, "git-receipt", "git receipt", cmd.clone())?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("git-receipt-{}", sub.get_name());
        let invoked = format!("git receipt {}", sub.get_name());
        write_page(&out_dir, &name, &invoked, sub.clone().name(name.clone()))?;
    }
    eprintln!("git-receipt: man pages written to {}", out_dir.display());
    Ok(ExitCode::SUCCESS)
}

/// The synopsis, with every option's value name (`[-C <DIR>]`, `[--path <PATH>]`).
fn synopsis(invoked: &str, cmd: &clap::Command) -> String {
    let mut parts = vec![invoked.to_owned()];
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let value = arg
            .get_value_names()
            .map(|v| {
                v.iter()
                    .map(|n| format!("<{n}>"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|_| arg.get_action().takes_values());
        let text = if arg.is_positional() {
            let name = arg
                .get_value_names()
                .map(|v| v.join(" "))
                .unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
            let many = if arg.get_num_args().is_some_and(|n| n.max_values() > 1) {
                "..."
            } else {
                ""
            };
            let name = if arg.is_last_set() {
                format!("-- {name}")
            } else {
                name
            };
            if arg.is_required_set() {
                format!("<{name}>{many}")
            } else {
                format!("[{name}]{many}")
            }
        } else {
            let flag = match (arg.get_short(), arg.get_long()) {
                (Some(s), Some(l)) => format!("-{s}|--{l}"),
                (Some(s), None) => format!("-{s}"),
                (None, Some(l)) => format!("--{l}"),
                (None, None) => continue,
            };
            let text = match value {
                Some(v) => format!("{flag} {v}"),
                None => flag,
            };
            if arg.is_required_set() {
                text
            } else {
                format!("[{text}]")
            }
        };
        parts.push(text);
    }
    if cmd.has_subcommands() {
        parts.push("<command>".to_owned());
    }
    parts.join(" ")
}

fn write_page(dir: &std::path::Path, name: &str, invoked: &str, cmd: clap::Command) -> Result<()> {
    let usage = synopsis(invoked, &cmd);
    let cmd = cmd.bin_name(invoked.to_owned()).override_usage(usage);
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut buf)?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, buf).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
