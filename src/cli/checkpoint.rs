//! `git receipt checkpoint`: verify every chain, then sign a checkpoint of their tips.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use git_receipt::checkpoint;
use git_receipt::store::checkpoints::checkpoint_ref;
use git_receipt::text::escape;

use super::Context;
use super::verify::{print_findings, run_verify, verifier_trust};

/// Verify every receipt chain, then sign a checkpoint of their tips.
///
/// The checkpoint names each chain's tip commit, index and receipt id, and what
/// the trust set says of the key that signs it; it is signed with your key (a
/// DSSE envelope) and appended to refs/receipt-checkpoints/<your writer id>,
/// which only grows. A clone that trusts you can then start from it: `git
/// receipt verify --since-checkpoint` checks only what came after, and any chain
/// that no longer descends from a recorded tip is reported as rolled back.
/// Nothing is signed unless every chain verifies. Readers refuse a checkpoint
/// whose signer they do not trust, and a signer whose newest checkpoint is
/// older than receipt.checkpointMaxAge (45 days by default): sign one at least
/// monthly (a scheduled CI job with a trusted key, say).
#[derive(Debug, Args)]
pub struct CheckpointArgs {
    /// Push the checkpoint chain to this remote afterwards (origin when given
    /// without a value); never forced.
    #[arg(long, value_name = "REMOTE", num_args = 0..=1, default_missing_value = "origin")]
    pub push: Option<String>,
    /// Verify against the signers in .gitreceipts at this revision.
    #[arg(long, value_name = "REV", conflicts_with = "allowed_signers")]
    pub trust: Option<String>,
    /// Verify against the keys in this OpenSSH allowed_signers file.
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
    /// Print what was signed as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Checkpoint.
pub fn cmd_checkpoint(ctx: &Context, args: CheckpointArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    if let Some(remote) = &args.push
        && !store.has_remote(remote)?
    {
        bail!("no remote named {remote:?}\nhint: add one with `git remote add {remote} <url>`");
    }
    let (trust, described) = verifier_trust(
        ctx,
        &store,
        args.trust.as_deref(),
        args.allowed_signers.as_deref(),
    )?;
    let key = ctx.signing_key(&store)?;
    let signer = ctx.writer(&store, &key)?;
    // everything, checked whole: what this signs, others will skip
    let mut report = run_verify(&store, &trust, None)?;
    report.set_aside_untrusted(&trust);
    if !report.findings.is_empty() {
        print_findings(&report);
        eprintln!(
            "git-receipt: no checkpoint signed: {} against {described}\nhint: `git receipt verify` says what is wrong; a checkpoint vouches only for chains that verify",
            super::plural(report.findings.len() as u64, "finding", "findings")
        );
        return Ok(ExitCode::from(1));
    }
    let marks = checkpoint::marks(&store, &report.tips, &trust)?;
    let signed = checkpoint::sign(
        &store,
        &key,
        &signer,
        marks,
        git_receipt::clock::signing_now_ms()?,
    )?;
    let refname = checkpoint_ref(&signer);
    // what other clones trust: the signers at HEAD's trust root, without your key
    let own_trusted = match store.head() {
        Ok((head, _)) => git_receipt::policy::trust::reader_trust(&store, head, None)
            .ok()
            .and_then(|(t, _)| {
                t.lookup(&key.public().fingerprint())
                    .map(|t| t.refuses(Some(signed.time_ms)).is_none())
            })
            .unwrap_or(false),
        Err(_) => false,
    };
    let mut pushed = None;
    if let Some(remote) = &args.push {
        let spec = format!("{refname}:{refname}");
        let out = store.run_git(&["push", "--quiet", remote, &spec])?;
        if !out.ok {
            bail!(
                "checkpoint #{} is signed and kept here ({refname}), but pushing it to {remote} failed:\n{}\nhint: `git receipt fetch {remote}` first if the remote has checkpoints of yours this clone lacks, then `git push {remote} {spec}`",
                signed.payload.sequence,
                escape(out.stderr.trim())
            );
        }
        pushed = Some(remote.clone());
    }
    if args.json {
        let v = serde_json::json!({
            "signer": signer,
            "sequence": signed.payload.sequence,
            "time": signed.payload.time,
            "commit": signed.commit.to_string(),
            "ref": refname,
            "chains": signed.payload.chains.len(),
            "receipts": report.receipts,
            "pushed_to": pushed,
            "trusted_by_others": own_trusted,
            "notices": ctx.flush_notices(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "checkpoint #{} of {} signed: {} ({} verified against {described})",
            signed.payload.sequence,
            signer,
            super::plural(signed.payload.chains.len() as u64, "chain", "chains"),
            super::plural(report.receipts, "receipt", "receipts"),
        );
        println!("  {refname} -> {}", signed.commit);
        if let Some(remote) = &pushed {
            println!("  pushed to {remote}");
        }
    }
    if !own_trusted {
        eprintln!(
            "git-receipt: notice: your key {} is not a [signer] of .gitreceipts on the default branch, so other clones refuse this checkpoint as forged\nhint: add it with `git receipt key show` and a [signer \"name\"] section, merged to the default branch",
            key.public().fingerprint()
        );
    }
    if args.push.is_none() {
        eprintln!(
            "git-receipt: push it with `git receipt checkpoint --push` or `git push origin {refname}`"
        );
    }
    Ok(ExitCode::SUCCESS)
}
