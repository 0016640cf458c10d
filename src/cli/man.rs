//! `git receipt man`: write man pages generated from the clap definitions.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Args, CommandFactory};

/// Write man pages (git-receipt.1 and one per subcommand) into a directory, so
/// that `git receipt --help` (which git turns into `man git-receipt`) works.
///
/// Example: git receipt man --out-dir ~/.local/share/man/man1
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Where to write the pages.
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
}

/// Generate the pages.
pub fn cmd_man(args: ManArgs) -> Result<ExitCode> {
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("creating {}", args.out_dir.display()))?;
    let cmd = super::Cli::command().name("git-receipt");
    write_page(&args.out_dir, "git-receipt", cmd.clone())?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("git-receipt-{}", sub.get_name());
        write_page(&args.out_dir, &name, sub.clone().name(name.clone()))?;
    }
    eprintln!(
        "git-receipt: man pages written to {}",
        args.out_dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn write_page(dir: &std::path::Path, name: &str, cmd: clap::Command) -> Result<()> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut buf)?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, buf).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
