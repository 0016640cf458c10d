//! `git receipt review`: sign a verdict on a revision's reviewed paths.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use git_receipt::decision::{Payload, append_decision};
use git_receipt::receipt::{
    Accepts, MAX_ACCEPTED_TESTS, MAX_MESSAGE_BYTES, MAX_TEST_NAME_BYTES, Review, Subject, Verdict,
    format_timestamp,
};
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

/// What a review (or an accepted regression) is about: a commit, its tree and
/// the inputs tree of the reviewed paths; never uncommitted changes.
fn decision_subject(commit: gix::ObjectId, tree: gix::ObjectId, inputs: gix::ObjectId) -> Subject {
    Subject {
        commit: commit.to_string(),
        tree: tree.to_string(),
        inputs: inputs.to_string(),
        dirty: false,
        dependencies: Vec::new(),
    }
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
            accepts: None,
        };
        let subject = decision_subject(commit, tree, inputs);
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

/// Accept a differential check's new failures or metric regressions, signed
///
/// A check with `parity = differential` fails when tests that passed on its
/// baseline fail here, or a metric regressed past `max-regression`. When that
/// is known and wanted (a test retired on purpose, a slower but correct
/// algorithm), a trusted signer accepts it: this writes a signed receipt on
/// your chain naming the check, the tests and metrics accepted, the inputs
/// tree of the check's paths at the revision and the check's definition. It
/// counts only for exactly those inputs and that definition: any change to the
/// check's paths makes it stale, and the failure counts again. It never
/// excuses a failure outside the tests (a crash, a missing results file) or a
/// check that is not differential. As with reviews, it must come from another
/// key than the run that regressed, unless the check says `self-accept = true`.
/// Push it with `git receipt push`.
///
/// Examples:
///
///     git receipt accept-regression test --test tests::old_api -m "old API removed in #412"
///     git receipt accept-regression bench HEAD --metric p99 -m "p99 +8%: the new parser is exact"
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct AcceptRegressionArgs {
    /// The differential check.
    pub check: String,
    /// The revision whose inputs it accepts (default HEAD).
    #[arg(default_value = "HEAD")]
    pub rev: String,
    /// A test that may fail here though it passed at the baseline (repeatable).
    #[arg(long = "test", value_name = "NAME")]
    pub tests: Vec<String>,
    /// A metric that may regress past max-regression (repeatable).
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// Why it is acceptable (required: reviewers read it).
    #[arg(short = 'm', long = "message")]
    pub message: Option<String>,
}

/// Names from `.gitreceipts` for a hint, escaped and joined; `none` for none.
fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let listed: Vec<String> = names.map(|n| escape(n).into_owned()).collect();
    if listed.is_empty() {
        "none".to_owned()
    } else {
        listed.join(", ")
    }
}

/// Write the accepted-regression receipt.
pub fn cmd_accept_regression(ctx: &Context, args: AcceptRegressionArgs) -> Result<ExitCode> {
    let example = format!(
        "git receipt accept-regression {} {} --test NAME -m \"why it is acceptable\"",
        escape(&args.check),
        escape(&args.rev)
    );
    if args.tests.is_empty() && args.metrics.is_empty() {
        bail!("name what is accepted: a --test or a --metric\nhint: {example}");
    }
    let message = args.message.clone().unwrap_or_default();
    if message.trim().is_empty() {
        bail!("an accepted regression says why (reviewers read it)\nhint: {example}");
    }
    if message.len() > MAX_MESSAGE_BYTES {
        bail!(
            "the message is {} bytes, over the {MAX_MESSAGE_BYTES} byte limit\nhint: say it shorter, and link to the rest",
            message.len()
        );
    }
    let mut tests = args.tests.clone();
    tests.sort();
    tests.dedup();
    if tests.len() > MAX_ACCEPTED_TESTS {
        bail!(
            "{} tests named, over the {MAX_ACCEPTED_TESTS} one accepted regression holds\nhint: accept them in several, or lower the check's ambition: allow-new-failures = N",
            tests.len()
        );
    }
    if let Some(t) = tests
        .iter()
        .find(|t| t.is_empty() || t.len() > MAX_TEST_NAME_BYTES)
    {
        bail!(
            "a test name of {} bytes: names are 1 to {MAX_TEST_NAME_BYTES} bytes, as results record them",
            t.len()
        );
    }
    let mut metrics = args.metrics.clone();
    metrics.sort();
    metrics.dedup();
    if let Some(m) = metrics
        .iter()
        .find(|m| !git_receipt::receipt::is_valid_check_name(m))
    {
        bail!(
            "{} is not a metric name\nhint: use the NAME of a `metric = NAME UNIT ...` line of the check",
            escape(m)
        );
    }
    let store = ctx.store()?;
    let commit = store.resolve_commit(&args.rev)?;
    let tree = store.commit_tree(commit)?;
    let contract = super::status::contract_at(&store, commit, &args.rev)?;
    let Some(def) = contract.check(&args.check) else {
        bail!(
            "no check {} is declared in .gitreceipts at {}\nhint: the checks there: {}",
            escape(&args.check),
            escape(&args.rev),
            names(contract.checks.iter().map(|c| c.name.as_str()))
        );
    };
    if let Some(m) = metrics
        .iter()
        .find(|m| !def.metrics.iter().any(|d| &d.name == *m))
    {
        bail!(
            "check {} declares no metric {}\nhint: its metrics: {}",
            escape(&def.name),
            escape(m),
            names(def.metrics.iter().map(|d| d.name.as_str()))
        );
    }
    if def.parity != git_receipt::contract::Parity::Differential {
        eprintln!(
            "warning: check {} is not `parity = differential` at {}: an accepted regression counts only where the trusted rules make it differential",
            escape(&def.name),
            escape(&args.rev)
        );
    }
    let spec = git_receipt::freshness::spec_in(&contract, def);
    let inputs = store.inputs_tree(tree, &def.paths, false)?;
    let mut paths = def.paths.clone();
    paths.sort();
    paths.dedup();
    let review = Review {
        name: def.name.clone(),
        paths,
        verdict: Verdict::Approve,
        message,
        decided_at: format_timestamp(git_receipt::runner::now_ms()),
        accepts: Some(Accepts {
            definition: spec.definition(),
            tests: tests.clone(),
            metrics: metrics.clone(),
        }),
    };
    let subject = decision_subject(commit, tree, inputs);
    let key = ctx.signing_key(&store)?;
    let writer = ctx.writer(&store, &key)?;
    let appended = append_decision(&store, &writer, &key, subject, Payload::Review(review))?;
    let mut named: Vec<String> = tests
        .iter()
        .map(|t| format!("test {}", escape(t)))
        .collect();
    named.extend(metrics.iter().map(|m| format!("metric {}", escape(m))));
    println!(
        "accepted for check {} at {} (inputs {}, {}): {}",
        escape(&def.name),
        commit.to_hex_with_len(7),
        inputs.to_hex_with_len(7),
        short_id(appended.receipt.id()),
        named.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}
