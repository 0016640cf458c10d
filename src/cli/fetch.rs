//! `git receipt fetch`: everyone's chains, verified first.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use git_receipt::checkpoint::Since;
use git_receipt::sync::{self, CheckpointOutcome, FetchOutcome};

use super::Context;

/// Fetch every writer's receipt chain from a remote, verified first.
///
/// Fetches into a staging namespace (refs/receipts-incoming/<remote>/), checks the
/// new receipts (canonical bytes, closed schema, contiguous index, prev links,
/// writer id matching the signing key, and the signature when the key is trusted),
/// then fast-forwards local chains and builds their notes here (notes are a
/// display derived from the chains, so none are taken from the remote). A local
/// chain that is ahead or diverged is never overwritten. Exits 1 if a fetched chain was rejected, or if another
/// writer's chain diverged (it was rewritten somewhere).
///
/// Full output logs stay on the remote unless --logs is given (`git receipt show
/// --log ID` fetches the one log it needs); each fetched log ref must point at the
/// blob its name gives.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// The remote (default origin).
    pub remote: Option<String>,
    /// Fetch every full output log the remote has, too.
    #[arg(long)]
    pub logs: bool,
    /// For chains this clone does not have yet: take the entries after a
    /// signed checkpoint (`git receipt checkpoint`) of a signer you trust (and
    /// those of the week before it: the chains are cut by date, then topped up
    /// by depth), so a fresh clone's cost follows recent work, not history.
    /// `checkpoint`: the
    /// newest; an age such as `90d`: the newest at least that old, so every
    /// receipt of that span is here. Chains you have are fetched as always;
    /// `git receipt verify --since-checkpoint` then verifies from it. Refused
    /// (exit 2) when no trusted, fresh checkpoint is there.
    #[arg(long, value_name = "checkpoint|AGE")]
    pub since: Option<String>,
    /// Take the rest of every chain a shallow fetch cut here (`--since`, or
    /// `git fetch --depth`): the older receipts, which may decide a check that
    /// reads missing or stale here. Their notes are built again; `git receipt
    /// verify` then checks every chain whole. A clone whose chains are whole
    /// fetches as always.
    #[arg(long, conflicts_with = "since")]
    pub unshallow: bool,
}

/// Fetch.
pub fn cmd_fetch(ctx: &Context, args: FetchArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let remote = args.remote.unwrap_or_else(|| "origin".into());
    if !store.has_remote(&remote)? {
        bail!("no remote named {remote:?}\nhint: add one with `git remote add {remote} <url>`");
    }
    if !git_receipt::store::remote::is_valid_remote_name(&remote) {
        bail!("remote name {remote:?} cannot be used in a ref name");
    }
    let trust = ctx.trust(&store)?;
    let own_fingerprint = ctx
        .key_source(Some(&store))
        .ok()
        .and_then(|s| git_receipt::keyfile::public_half(&s).ok())
        .map(|k| k.fingerprint());
    let mut deepened = false;
    let (report, checkpoints, since) = match &args.since {
        None if args.unshallow => {
            let (report, cut) = sync::fetch_unshallow(&store, &remote, &trust)?;
            deepened = cut;
            (report, sync::take_checkpoints(&store, &remote)?, None)
        }
        None => {
            let report = sync::fetch(&store, &remote, &trust)?;
            (report, sync::take_checkpoints(&store, &remote)?, None)
        }
        Some(since) => {
            let when = match since.as_str() {
                "checkpoint" => Since::Newest,
                age => match git_receipt::checkpoint::parse_age(age) {
                    Some(ms) => Since::AtOrBefore(git_receipt::clock::now_ms().saturating_sub(ms)),
                    None => bail!(
                        "--since {:?} is neither `checkpoint` nor an age such as 90d, 12h or 3600\nhint: `git receipt fetch --since 90d` takes every receipt of the last 90 days, from the newest signed checkpoint at least that old",
                        git_receipt::text::escape(since)
                    ),
                },
            };
            store.fetch_checkpoints_staged(&remote)?;
            let checkpoints = sync::take_checkpoints(&store, &remote)?;
            let anchor = super::verify::signed_start(&store, &trust, when)?;
            let (report, stats) = sync::fetch_since(&store, &remote, &trust, &anchor)?;
            (report, checkpoints, Some((anchor, stats)))
        }
    };
    store.gc_auto_detached();
    let mut rejected = false;
    for (writer, outcome) in &report {
        let line = match outcome {
            FetchOutcome::Added(n) => format!(
                "new chain {writer}: {}",
                super::plural(*n, "receipt", "receipts")
            ),
            FetchOutcome::Updated(n) => format!(
                "{writer}: {}",
                super::plural(*n, "new receipt", "new receipts")
            ),
            FetchOutcome::UpToDate => continue,
            FetchOutcome::LocalAhead => {
                format!("{writer}: yours is ahead of {remote}'s (push with `git receipt push`)")
            }
            FetchOutcome::Diverged
                if own_fingerprint
                    .as_deref()
                    .is_some_and(|fp| git_receipt::receipt::writer_matches_key(writer, fp)) =>
            {
                format!(
                    "{writer}: your chain diverged from {remote}'s (your key wrote elsewhere too); kept yours, and `git receipt push` re-appends yours on theirs"
                )
            }
            FetchOutcome::Diverged => {
                // Another writer's chain only ever grows; a copy that no longer
                // contains ours was rewritten, here or on the server.
                rejected = true;
                format!(
                    "{writer}: DIVERGED from {remote}'s copy, which no longer contains the receipts you have: the chain was rewritten (on the server or here); kept yours\nhint: compare with `git receipt verify --checkpoint FILE`, and ask the writer or the server's admin"
                )
            }
            FetchOutcome::Rejected(why) => {
                rejected = true;
                format!(
                    "{writer}: REJECTED, local chain unchanged: {}",
                    git_receipt::text::escape(why)
                )
            }
            FetchOutcome::Partial { taken, refused } => {
                rejected = true;
                format!(
                    "{writer}: took {}; REJECTED what is above them: {}\nhint: the writer's next `git receipt push` replaces commits that are not its receipts",
                    super::plural(*taken, "new receipt", "new receipts"),
                    git_receipt::text::escape(refused)
                )
            }
            FetchOutcome::Retained {
                dropped,
                taken,
                kept_local,
            } => format!(
                "{writer}: {remote} dropped {} here to retention stubs (`git receipt retain` there; each is one retention drops here too): took its chain{}{}",
                super::plural(*dropped, "old receipt", "old receipts"),
                if *taken > 0 {
                    format!(
                        " and {}",
                        super::plural(*taken, "new receipt", "new receipts")
                    )
                } else {
                    String::new()
                },
                if *kept_local > 0 {
                    format!(
                        ", with your {} on top (push them with `git receipt push`)",
                        super::plural(*kept_local, "receipt", "receipts")
                    )
                } else {
                    String::new()
                }
            ),
            FetchOutcome::Repaired { taken, replaced } => format!(
                "{writer}: {remote}'s chain replaces commits here that were not entries of it ({}); took {}",
                git_receipt::text::escape(replaced),
                super::plural(*taken, "receipt", "receipts")
            ),
        };
        eprintln!("git-receipt: {line}");
    }
    for (signer, outcome) in &checkpoints {
        let own = own_fingerprint
            .as_deref()
            .is_some_and(|fp| git_receipt::receipt::writer_matches_key(signer, fp));
        let line = match outcome {
            CheckpointOutcome::Taken(n) => format!(
                "checkpoints of {signer}: {}",
                super::plural(*n, "new checkpoint", "new checkpoints")
            ),
            CheckpointOutcome::LocalAhead if own => format!(
                "your checkpoints are ahead of {remote}'s (push with `git receipt checkpoint --push`)"
            ),
            CheckpointOutcome::LocalAhead | CheckpointOutcome::Diverged => {
                rejected = true;
                format!(
                    "checkpoints of {signer}: ROLLED BACK on {remote}, which no longer has checkpoints you accepted before; kept yours\nhint: a server that holds back checkpoints can hide receipts from clones that start from them: ask the server's admin"
                )
            }
            CheckpointOutcome::Refused { taken, reason } => {
                rejected = true;
                format!(
                    "checkpoints of {signer}: took {}; REFUSED what is above them: {}",
                    super::plural(*taken, "new checkpoint", "new checkpoints"),
                    git_receipt::text::escape(reason)
                )
            }
        };
        eprintln!("git-receipt: {line}");
    }
    if let Some((anchor, stats)) = &since {
        let fetches: Vec<String> = stats.fetches.iter().map(ToString::to_string).collect();
        eprintln!(
            "git-receipt: from checkpoint #{} of {} ({}): {} taken from its tips up ({}{}), {} whole",
            anchor.payload.sequence,
            git_receipt::text::escape(&anchor.payload.signer),
            git_receipt::text::escape(&anchor.payload.time),
            super::plural(stats.from_checkpoint as u64, "chain", "chains"),
            super::plural(fetches.len() as u64, "fetch", "fetches"),
            if fetches.is_empty() {
                String::new()
            } else {
                format!(": {}", fetches.join(", "))
            },
            stats.whole
        );
        eprintln!(
            "git-receipt: verify with `git receipt verify --since-checkpoint`; older receipts stay on {remote} (`git receipt fetch --unshallow {remote}` takes them)"
        );
    }
    if args.unshallow {
        eprintln!(
            "{}",
            if deepened {
                format!(
                    "git-receipt: took the rest of the chains a shallow fetch cut here from {remote}; `git receipt verify` checks them whole"
                )
            } else {
                "git-receipt: no chain here was cut by a shallow fetch: fetched as always"
                    .to_owned()
            }
        );
    }
    let fresh = report.values().filter(|o| o.took_entries()).count();
    eprintln!(
        "git-receipt: fetched receipts from {remote}: {}, {fresh} with new receipts",
        super::plural(report.len() as u64, "chain", "chains")
    );
    if args.logs {
        let (taken, refused) = store.fetch_all_logs(&remote)?;
        for why in &refused {
            eprintln!("git-receipt: log REJECTED: {why}");
        }
        rejected |= !refused.is_empty();
        eprintln!(
            "git-receipt: fetched {taken} new log{} from {remote}",
            if taken == 1 { "" } else { "s" }
        );
    }
    Ok(if rejected {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
