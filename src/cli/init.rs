//! `git receipt init`: set a clone up so receipts travel with plain git commands.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use git_receipt::store::Store;

use super::Context;

/// Set this clone up so receipts travel with plain `git fetch` and show in `git log`.
///
/// Adds fetch refspecs to the remote so that `git fetch` brings every writer's
/// chain (refs/receipts/*, fast-forward only, never forced) and notes alongside
/// branches, except your own chain, which only you write; sets notes.displayRef so
/// `git log` shows receipts; installs the pre-push hook. Running it twice changes
/// nothing.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The remote to configure (default origin).
    #[arg(long, default_value = "origin")]
    pub remote: String,
    /// Do not install the pre-push hook.
    #[arg(long)]
    pub no_hooks: bool,
}

/// Add `value` to multi-valued git config `key` unless present; true if added.
fn add_config(store: &Store, key: &str, value: &str) -> Result<bool> {
    if store.config_strings(key).iter().any(|v| v == value) {
        return Ok(false);
    }
    let out = store.run_git(&["config", "--add", key, value])?;
    if !out.ok {
        bail!("git config --add {key} {value}: {}", out.stderr);
    }
    Ok(true)
}

/// Configure.
pub fn cmd_init(ctx: &Context, args: InitArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let key = ctx.signing_key(&store)?;
    let writer = ctx.writer(&store, &key)?;
    let mut changes = Vec::new();
    if store.has_remote(&args.remote)? {
        let key_name = format!("remote.{}.fetch", args.remote);
        for spec in [
            "refs/receipts/*:refs/receipts/*".to_owned(),
            format!("^refs/receipts/{writer}"),
            "+refs/notes/receipts/*:refs/notes/receipts/*".to_owned(),
            format!("^refs/notes/receipts/{writer}"),
        ] {
            if add_config(&store, &key_name, &spec)? {
                changes.push(format!("{key_name} += {spec}"));
            }
        }
    } else {
        eprintln!(
            "git-receipt: no remote named {:?}; skipped the fetch set-up (run `git receipt init --remote <name>` once you have one)",
            args.remote
        );
    }
    if add_config(&store, "notes.displayRef", "refs/notes/receipts/*")? {
        changes.push("notes.displayRef += refs/notes/receipts/*".into());
    }
    if !args.no_hooks {
        let change = super::hook::install_hooks(&store, false)?;
        if !matches!(change, git_receipt::hooks::HookChange::Unchanged(_)) {
            changes.push(change.to_string());
        }
    }
    // Store a fresh fetch's view without overwriting: pull what the remote has now.
    if changes.is_empty() {
        eprintln!("git-receipt: already set up; nothing changed");
    } else {
        for c in &changes {
            eprintln!("git-receipt: {c}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
