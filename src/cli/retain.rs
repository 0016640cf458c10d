//! `git receipt retain`: drop old receipts of unreached commits to stubs.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use git_receipt::retention::{Keep, Rules, kept_commits, retain};
use git_receipt::text::escape;

use super::Context;

/// Drop old receipts of unreached commits, keeping each as a stub (its id).
///
/// Old check receipts of commits no protected branch or tag reaches go, and
/// every chain still verifies. A receipt goes when its check started more than AGE ago, its commit is
/// reached by no protected branch (receipt.protectedBranch, or the branch HEAD
/// names; a remote-tracking branch of the same name counts) and no tag, no
/// receipt names it (supersedes, an acceptance's evidence), and it is not the
/// newest entry of its chain. Acceptances and reviews always stay. The chains
/// are rewritten (the receipts above a stub are the same receipts, on new
/// commits) and their notes rebuilt; `git gc` then frees what went.
///
/// No push may rewrite a chain: run this where the chains live, in the
/// server's repository. A clone's `git receipt fetch` then takes the rewritten
/// chains, checking that each stub stands for a receipt this same rule drops.
///
/// Examples:
///
///     git receipt retain --older-than 180d --dry-run
///     git -C /srv/git/project.git receipt retain --older-than 26w
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RetainArgs {
    /// The age beyond which receipts may go: a number and a unit, d (days), w (weeks) or h (hours).
    #[arg(long, value_name = "AGE")]
    pub older_than: String,
    /// Say what would go, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was (or would be) dropped and kept as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// The least age `retain` takes: a receipt a day old may be of a branch that
/// is being reviewed right now.
const MIN_AGE_MS: u64 = 86_400_000;

pub fn cmd_retain(ctx: &Context, args: RetainArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let Some(age) = super::prune_logs::parse_age(&args.older_than) else {
        bail!(
            "--older-than {:?} is not an age\nhint: a number and a unit: 180d, 26w or 48h",
            escape(&args.older_than)
        );
    };
    if age < MIN_AGE_MS {
        bail!(
            "--older-than {} is less than a day: receipts that young may be of work in review\nhint: give 1d or more (180d is usual)",
            escape(&args.older_than)
        );
    }
    let now = git_receipt::clock::now_ms();
    let (kept, refs) = kept_commits(&store)?;
    let rules = Rules {
        cutoff_ms: now.saturating_sub(age),
        kept,
        ..Rules::default()
    };
    let dropped_at = git_receipt::receipt::format_timestamp(now);
    let outcomes = retain(&store, rules, &dropped_at, args.dry_run)?;
    let dropped: u64 = outcomes.iter().map(|o| o.plan.stubs.len() as u64).sum();
    let chains = outcomes.iter().filter(|o| !o.plan.stubs.is_empty()).count();
    let mut kept_by = std::collections::BTreeMap::<Keep, u64>::new();
    for o in &outcomes {
        for (k, n) in &o.plan.kept {
            *kept_by.entry(*k).or_default() += n;
        }
    }
    let before: u64 = outcomes.iter().map(|o| o.plan.stubs_before).sum();
    if args.json {
        let v = serde_json::json!({
            "dry_run": args.dry_run,
            "older_than": args.older_than,
            "cutoff": git_receipt::receipt::format_timestamp(now.saturating_sub(age)),
            "kept_by": refs,
            "dropped": dropped,
            "stubs_before": before,
            "kept": kept_by.iter().map(|(k, n)| (k.as_str(), n)).collect::<std::collections::BTreeMap<_, _>>(),
            "chains": outcomes.iter().filter(|o| !o.plan.stubs.is_empty()).map(|o| serde_json::json!({
                "writer": o.writer,
                "dropped": o.plan.stubs.values().map(|s| serde_json::json!({
                    "id": s.id,
                    "index": s.index,
                    "check": s.check,
                    "subject": s.subject,
                    "started_at": s.started_at,
                })).collect::<Vec<_>>(),
                "tip": o.rewritten.as_ref().map(|r| r.tip.to_string()),
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for o in &outcomes {
            for s in o.plan.stubs.values() {
                println!(
                    "{} {} #{} {} {} {}",
                    if args.dry_run {
                        "would drop"
                    } else {
                        "dropped"
                    },
                    escape(&o.writer),
                    s.index,
                    s.id,
                    escape(&s.check),
                    escape(&s.subject),
                );
            }
        }
    }
    let kept_words: Vec<String> = kept_by
        .iter()
        .map(|(k, n)| {
            let why = match k {
                Keep::Tip => "chain tips",
                Keep::Decision => "acceptances and reviews",
                Keep::Young => "younger than the cutoff",
                Keep::Reached => "of commits protected branches or tags reach",
                Keep::Named => "named by another receipt",
            };
            format!("{n} {why}")
        })
        .collect();
    eprintln!(
        "git-receipt: {} {} older than {} in {} (kept: {}; {} stubs were already there), reachability from {}",
        if args.dry_run {
            "would drop"
        } else {
            "dropped"
        },
        super::plural(dropped, "receipt", "receipts"),
        escape(&args.older_than),
        super::plural(chains as u64, "chain", "chains"),
        if kept_words.is_empty() {
            "none".to_owned()
        } else {
            kept_words.join(", ")
        },
        before,
        super::plural(refs.len() as u64, "ref", "refs"),
    );
    if !args.dry_run && dropped > 0 {
        eprintln!(
            "git-receipt: the chains are rewritten; `git gc --prune=now` frees what went once no clone needs it, and `git receipt verify` checks them"
        );
    }
    Ok(ExitCode::SUCCESS)
}
