//! `git receipt push`: this clone's chains and notes to a remote.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use git_receipt::sync::{self, PushOutcome};

use super::Context;

/// Push this clone's receipt chains and notes to a remote.
///
/// Pushes refs/receipts/<writer> and refs/notes/receipts/<writer> for each chain
/// of your key, with `git push --atomic` (the chain as a fast-forward, the notes
/// with a lease). If the same key wrote elsewhere and the chains diverged, your
/// unpushed receipts are re-appended on the remote's tip (re-signed, new index and
/// prev) and the push is retried. Other writers never conflict: they own other refs.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The remote (default origin).
    pub remote: Option<String>,
}

/// Push every own chain; print one line per writer.
pub(super) fn push_own(
    ctx: &Context,
    store: &git_receipt::store::Store,
    remote: &str,
) -> Result<Vec<PushOutcome>> {
    let key = ctx.signing_key(store)?;
    let chain = ctx.chain_name(store)?;
    let writers = sync::own_writers(store, &key, &chain)?;
    let mut out = Vec::new();
    for w in writers {
        out.push(sync::push_writer(store, remote, &w, &key)?);
    }
    Ok(out)
}

/// Push.
pub fn cmd_push(ctx: &Context, args: PushArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let remote = args.remote.unwrap_or_else(|| "origin".into());
    if !store.has_remote(&remote)? && !remote.contains(['/', ':']) {
        bail!(
            "no remote named {remote:?}\nhint: add one with `git remote add {remote} <url>`, or name another: git receipt push <remote>"
        );
    }
    let outcomes = push_own(ctx, &store, &remote)?;
    if outcomes.is_empty() {
        eprintln!(
            "git-receipt: no receipts of yours to push\nhint: `git receipt run <check>` writes one"
        );
    }
    for o in outcomes {
        let extra = if o.reappended > 0 {
            format!(" ({} re-appended after the chain diverged)", o.reappended)
        } else {
            String::new()
        };
        eprintln!(
            "git-receipt: pushed {} new receipt{} of {} to {remote}{extra}",
            o.pushed,
            if o.pushed == 1 { "" } else { "s" },
            o.writer
        );
    }
    Ok(ExitCode::SUCCESS)
}
