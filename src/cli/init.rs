//! `git receipt init`: set a clone up so receipts travel with plain git commands.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{
    CHAIN_REFSPEC, Context, NOTES_REFSPEC, add_config, current_config_values, exclude_own_chain,
};

/// Set this clone up so receipts travel with plain `git fetch` and show in `git log`.
///
/// Adds fetch refspecs to the remote so that `git fetch` brings every writer's
/// chain (refs/receipts/*, fast-forward only, never forced) and notes alongside
/// branches, except your own chain, which only you write (excluded once you have a
/// key; init creates none, so a CI clone stays keyless); sets notes.displayRef so
/// `git log` shows receipts; installs the pre-push hook, which sends your
/// receipts with every `git push` (in a push of its own, first). It sets no push
/// refspec, so `push.default` still decides where a bare `git push` goes; with
/// --push-refspecs (once you have a key) it adds `HEAD`, your chain and your
/// notes to a remote that has none, so a bare `git push` sends branch and
/// receipts in one push, to a branch of the same name. Running it twice changes
/// nothing.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The remote to configure (default origin).
    #[arg(long, default_value = "origin")]
    pub remote: String,
    /// Do not install the pre-push hook.
    #[arg(long)]
    pub no_hooks: bool,
    /// Add no push refspecs (the default; sets receipt.pushRefspecs false, and
    /// takes out those an earlier init added): a hooked `git push` sends
    /// receipts in a push of its own.
    #[arg(long, conflicts_with = "push_refspecs")]
    pub no_push_refspecs: bool,
    /// Add push refspecs (`HEAD`, your chain, your notes; sets
    /// receipt.pushRefspecs true), so a bare `git push` sends branch and receipts
    /// in one push. They override push.default: the current branch goes to a
    /// branch of its own name, never its upstream, and a detached HEAD cannot be
    /// pushed bare.
    #[arg(long)]
    pub push_refspecs: bool,
}

/// Configure.
pub fn cmd_init(ctx: &Context, args: InitArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let mut changes = Vec::new();
    let wanted = if args.no_push_refspecs {
        Some("false")
    } else if args.push_refspecs {
        Some("true")
    } else {
        None
    };
    if let Some(value) = wanted
        && current_config_values(&store, "receipt.pushRefspecs")?
            .last()
            .map(String::as_str)
            != Some(value)
    {
        let out = store.run_git(&["config", "receipt.pushRefspecs", value])?;
        if !out.ok {
            anyhow::bail!("git config receipt.pushRefspecs {value}: {}", out.stderr);
        }
        changes.push(format!("receipt.pushRefspecs = {value}"));
    }
    if store.has_remote(&args.remote)? {
        let key_name = format!("remote.{}.fetch", args.remote);
        for spec in [CHAIN_REFSPEC, NOTES_REFSPEC] {
            if add_config(&store, &key_name, spec)? {
                changes.push(format!("{key_name} += {spec}"));
            }
        }
        // Your own chain is excluded from plain fetches (only you write it). With no
        // key yet (a CI clone), none is created: the first `git receipt run` that
        // creates one adds the exclusion.
        let source = ctx.key_source(Some(&store))?;
        if source.is_present() {
            let key = git_receipt::keyfile::public_key(&source)?;
            let writer = git_receipt::receipt::writer_id(&key, &ctx.chain_name(&store)?);
            changes.extend(exclude_own_chain(&store, &writer)?);
        } else {
            eprintln!(
                "git-receipt: no signing key yet (none is created here); your own chain is excluded from plain `git fetch` once `git receipt run` creates your key"
            );
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
    if changes.is_empty() {
        eprintln!("git-receipt: already set up; nothing changed");
    } else {
        for c in &changes {
            eprintln!("git-receipt: {c}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
