//! `git receipt key`: the signing key.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

use git_receipt::keyfile;
use git_receipt::sign::SigningKey;
use git_receipt::text::{escape, escape_lines};

use super::Context;

/// Create or show the signing key.
///
/// The key is an OpenSSH Ed25519 key, looked up in GIT_RECEIPT_SIGNING_KEY, then
/// git config receipt.signingKey, then git config user.signingKey when gpg.format
/// is ssh (the key git signs commits with), then
/// $XDG_CONFIG_HOME/git-receipt/signing_key (~/.config/...), which the first
/// `git receipt run` creates if it is missing. An unencrypted private key file signs
/// in-process; a public key (a .pub file, or `ssh-ed25519 AAAA...` in the setting)
/// or a passphrase-protected key signs through ssh-agent (SSH_AUTH_SOCK), which
/// must hold it (`ssh-add`). The private key is never printed.
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
            let Some(path) = source.file() else {
                bail!(
                    "the signing key is {}, whose private half ssh-agent holds; there is nothing to generate\nhint: `git receipt key show` prints it",
                    source.describe()
                );
            };
            if path.exists() {
                bail!(
                    "a key already exists at {}; not overwriting it\nhint: `git receipt key show` prints its public key",
                    path.display()
                );
            }
            let key =
                SigningKey::generate(path, &format!("git-receipt@{}", git_receipt::host_name()))?;
            eprintln!(
                "git-receipt: created signing key {} ({})",
                path.display(),
                key.public().fingerprint()
            );
            println!("{}", key.public().to_openssh());
        }
        KeyCommand::Show { fingerprint } => {
            // A key named by the environment or config that is missing gets the
            // loader's error, which names the setting it came from.
            if source.is_default() && !source.is_present() {
                bail!(
                    "no signing key at {}\nhint: `git receipt key generate` creates it (so does the first `git receipt run`)",
                    source.describe()
                );
            }
            // The public key needs no agent: show it even when the agent is away,
            // and say on stderr how (or why not) the key signs.
            let public = keyfile::public_key(&source)?;
            if fingerprint {
                println!("{}", public.fingerprint());
            } else {
                println!("{}", public.to_openssh());
            }
            match keyfile::load_existing(&source) {
                Ok(key) => eprintln!(
                    "git-receipt: {}",
                    escape(&keyfile::signing_route(&source, &key))
                ),
                Err(err) => eprintln!(
                    "git-receipt: warning: this key cannot sign now: {}",
                    escape_lines(&super::hints::with_hints(&err))
                ),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
