//! `git receipt review`: sign a verdict on a revision's reviewed paths.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use git_receipt::decision::{Payload, append_decision};
use git_receipt::receipt::{MAX_MESSAGE_BYTES, Review, Subject, Verdict, format_timestamp};
use git_receipt::text::escape;

use super::{Context, short_id};

/// Approve or reject a revision for the reviews declared in .gitreceipts
///
/// Writes a signed review receipt on your chain for each `[review "NAME"]` (or
/// only --name NAME): the revision, the inputs tree of the review's paths, the
/// verdict and the message. An approval counts for every revision with the same
/// content at those paths; a change there makes it stale. Each trusted signer
/// counts once, with their newest verdict; push with `git receipt push`.
///
/// Examples:
///
///     git receipt review HEAD --approve -m "looks good"
///     git receipt review HEAD --reject -m "needs a test for the empty case"
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReviewArgs {
    /// The revision reviewed (default HEAD).
    #[arg(default_value = "HEAD")]
    pub rev: String,
    /// Approve it.
    #[arg(long, conflicts_with = "reject", required_unless_present = "reject")]
    pub approve: bool,
    /// Reject it (give the reason with -m).
    #[arg(long)]
    pub reject: bool,
    /// The message recorded with the verdict.
    #[arg(short = 'm', long = "message", default_value = "")]
    pub message: String,
    /// Only this review (default: every review declared at the revision).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

/// Write the review receipts.
pub fn cmd_review(ctx: &Context, args: ReviewArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let commit = store.resolve_commit(&args.rev)?;
    let tree = store.commit_tree(commit)?;
    if args.reject && args.message.trim().is_empty() {
        bail!(
            "a rejection says why\nhint: git receipt review {} --reject -m \"what must change\"",
            args.rev
        );
    }
    if args.message.len() > MAX_MESSAGE_BYTES {
        bail!(
            "the message is {} bytes, over the {MAX_MESSAGE_BYTES} byte limit\nhint: say it shorter, and link to the rest",
            args.message.len()
        );
    }
    // the reviews as the revision is judged: declared here, held to the trust root's
    let (trust, root) = ctx.trust_for(&store, commit)?;
    let here = super::status::contract_at(&store, commit, &args.rev)?;
    let mut contract = (*here).clone();
    contract.reviews = git_receipt::policy::judge::reviews_held_to(
        &store,
        &here,
        commit,
        root.commit,
        &git_receipt::policy::Baseline::TrustRoot,
    )?;
    let reviews: Vec<_> = match &args.name {
        Some(name) => match contract.reviews.iter().find(|r| &r.name == name) {
            Some(r) => vec![r.clone()],
            None => bail!(
                "no review {name:?} is declared in .gitreceipts at {}\nhint: {}",
                args.rev,
                if contract.reviews.is_empty() {
                    format!("declare one: [review \"{name}\"] with path = src and required = 1")
                } else {
                    format!(
                        "the reviews are: {}",
                        contract
                            .reviews
                            .iter()
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            ),
        },
        None if contract.reviews.is_empty() => bail!(
            "no [review] is declared in .gitreceipts at {}\nhint: declare one, e.g. [review \"code\"] with path = src and required = 2",
            args.rev
        ),
        None => contract.reviews.clone(),
    };
    let key = ctx.signing_key(&store)?;
    let writer = ctx.writer(&store, &key)?;
    let verdict = if args.reject {
        Verdict::Reject
    } else {
        Verdict::Approve
    };
    let author = git_receipt::decision::commit_author(&store, &trust, commit);
    for def in reviews {
        let inputs = store.inputs_tree(tree, &def.paths, true)?;
        let review = Review {
            name: def.name.clone(),
            paths: def.paths.clone(),
            verdict,
            message: args.message.clone(),
            decided_at: format_timestamp(git_receipt::runner::now_ms()),
        };
        let subject = Subject {
            commit: commit.to_string(),
            tree: tree.to_string(),
            inputs: inputs.to_string(),
            dirty: false,
            dependencies: Vec::new(),
        };
        let appended = append_decision(&store, &writer, &key, subject, Payload::Review(review))?;
        println!(
            "{} review {} of {} ({}): {}",
            if args.reject { "rejected" } else { "approved" },
            escape(&def.name),
            commit.to_hex_with_len(7),
            short_id(appended.receipt.id()),
            if def.paths.is_empty() {
                "the whole tree".to_owned()
            } else {
                escape(&def.paths.join(", ")).into_owned()
            }
        );
        if !args.reject && !def.self_approve {
            if let Some(why) = author.unknown_reason(commit) {
                eprintln!(
                    "warning: this approval cannot count: {why}\nhint: it counts once {}",
                    super::hints::sign_commits(&def.name)
                );
            } else if author == git_receipt::decision::Author::Known(key.public().fingerprint()) {
                eprintln!(
                    "warning: this approval cannot count: it is the author's own approval (self-approve = false)\nhint: ask another trusted reviewer: git receipt review {} --approve",
                    escape(&args.rev)
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
