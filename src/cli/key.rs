//! `git receipt key`: the signing key.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

use git_receipt::keyfile::{self, KeySource};
use git_receipt::sign::SigningKey;

use super::Context;

/// Create or show the signing key.
///
/// The key is an OpenSSH Ed25519 private key. It is looked up in
/// GIT_RECEIPT_SIGNING_KEY, then git config receipt.signingKey, then
/// $XDG_CONFIG_HOME/git-receipt/signing_key (~/.config/...), which the first
/// `git receipt run` creates if it is missing. The private key is never printed.
#[derive(Debug, Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    command: KeyCommand,
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Create the signing key where it is looked up (refuses to overwrite one).
    Generate,
    /// Print the public key line (`ssh-ed25519 AAAA...`), for .gitreceipts or allowed_signers.
    Show {
        /// Print the SHA256 fingerprint instead.
        #[arg(long)]
        fingerprint: bool,
    },
}

/// Run a key subcommand.
pub fn cmd_key(ctx: &Context, args: KeyArgs) -> Result<ExitCode> {
    let store = ctx.store().ok();
    let source = ctx.key_source(store.as_ref())?;
    match args.command {
        KeyCommand::Generate => {
            if source.path().exists() {
                bail!(
                    "a key already exists at {}; not overwriting it\nhint: `git receipt key show` prints its public key",
                    source.path().display()
                );
            }
            let key = SigningKey::generate(
                source.path(),
                &format!("git-receipt@{}", git_receipt::host_name()),
            )?;
            eprintln!(
                "git-receipt: created signing key {} ({})",
                source.path().display(),
                key.public().fingerprint()
            );
            println!("{}", key.public().to_openssh());
        }
        KeyCommand::Show { fingerprint } => {
            // A key named by the environment or config that is missing gets the
            // loader's error, which names the setting it came from.
            if matches!(source, KeySource::Default(_)) && !source.path().exists() {
                bail!(
                    "no signing key at {}\nhint: `git receipt key generate` creates it (so does the first `git receipt run`)",
                    source.path().display()
                );
            }
            let key = keyfile::load_existing(&source)?;
            if fingerprint {
                println!("{}", key.public().fingerprint());
            } else {
                println!("{}", key.public().to_openssh());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
