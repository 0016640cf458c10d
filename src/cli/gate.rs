//! `git receipt gate`: exit 0 only when every required check is present; with
//! `--record`, also sign that decision as an acceptance receipt citing its
//! evidence; with `--accepted-by`, read such a decision instead of deciding.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use serde_json::json;

use git_receipt::freshness::CheckState;
use git_receipt::policy::Require;

use super::status::Fix as _;
use super::status::{Baseline, evaluate_rev_for, render_rows_named, state_json};
use super::{Context, colour};
use git_receipt::text::escape;

/// Exit 0 when every required check is present at every named revision.
///
/// Required checks are those with `required = true` in .gitreceipts at each
/// revision, or the ones named with --require. With --trust REV (or --verify, whose
/// trusted revision is the trust root: the newest commit on the default branch's
/// first-parent history that the revision descends from), the checks
/// required at that trusted revision are required too, so a branch cannot drop a
/// requirement by editing .gitreceipts; one it no longer declares reads missing.
/// Exits 1 when any is missing, failed or stale (printing each with the command
/// that fixes it), 2 when it cannot decide (for example a shallow clone whose
/// history ends before an answer).
///
/// With --record, the decision is signed and appended to your chain as an
/// acceptance receipt (accepted or rejected, with the receipts that decided each
/// required check and review), so a release job can require "CI accepted exactly
/// this tree" with --accepted-by, without deciding again.
///
/// With --protected, each check counts what its accept-protected says (for
/// example `accept-protected = run-by:ci`: only runs by CI's observer key), as
/// the server's hook does for a protected branch; otherwise what accept says.
///
/// Examples:
///
///     git receipt gate HEAD --verify --record
///     git receipt gate v1.2.0 --accepted-by ci
///     git receipt gate HEAD --trust origin/main --protected
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct GateArgs {
    /// The revisions to gate (default HEAD).
    pub revs: Vec<String>,
    /// Require these checks (comma-separated) instead of those marked required.
    #[arg(long, value_delimiter = ',', value_name = "CHECKS")]
    pub require: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// First verify every chain and note (as `git receipt verify`); any finding fails the gate.
    #[arg(long)]
    pub verify: bool,
    /// Trust only the signers in .gitreceipts at this revision (e.g. origin/main).
    #[arg(long, value_name = "REV")]
    pub trust: Option<String>,
    /// Sign the decision as an acceptance receipt on your chain (also when rejected).
    #[arg(long, conflicts_with = "accepted_by")]
    pub record: bool,
    /// Judge as for a protected branch: each check accepts what its
    /// accept-protected says in .gitreceipts (default: its accept).
    #[arg(long, conflicts_with = "accepted_by")]
    pub protected: bool,
    /// Pass when each named signer ([signer] name or key fingerprint) has a
    /// trusted acceptance of exactly each revision's tree; do not decide again.
    #[arg(long, value_delimiter = ',', value_name = "SIGNER")]
    pub accepted_by: Vec<String>,
}

/// The trust (`--trust REV`: the signers of `.gitreceipts` there; `None`: the
/// usual trust root) and the requirements besides a revision's own that `gate`
/// and `report` take from their `--trust` and `--verify` flags: the revision
/// trust comes from also says which checks are required.
pub(super) fn trust_and_baseline(
    ctx: &Context,
    store: &git_receipt::store::Store,
    trust: Option<&str>,
    verify: bool,
) -> Result<(Option<(git_receipt::trust::TrustSet, String)>, Baseline)> {
    Ok(match trust {
        Some(rev) => (
            Some(super::verify::verifier_trust(ctx, store, Some(rev), None)?),
            Baseline::At {
                commit: store.resolve_commit(rev)?,
                label: rev.to_owned(),
            },
        ),
        None if verify => (None, Baseline::TrustRoot),
        None => (None, Baseline::Own),
    })
}

/// Gate the revisions.
pub fn cmd_gate(ctx: &Context, args: GateArgs) -> Result<ExitCode> {
    let mut store = ctx.store()?;
    if args.verify {
        // decide from the chains just verified, not from an index file
        store.ignore_index_file();
    }
    let revs = if args.revs.is_empty() {
        vec!["HEAD".to_owned()]
    } else {
        args.revs.clone()
    };
    let (trust, baseline) = trust_and_baseline(ctx, &store, args.trust.as_deref(), args.verify)?;
    // An acceptance names the commit whose rules it applied (`trusted`): a
    // recorded decision holds the revision to its trust root's required checks
    // too, so that it never claims rules it did not apply.
    let baseline = match baseline {
        Baseline::Own if args.record => Baseline::TrustRoot,
        b => b,
    };
    if args.verify {
        let (t, described) = match &trust {
            Some(t) => t.clone(),
            None => super::verify::verifier_trust(ctx, &store, None, None)?,
        };
        let mut report = super::verify::run_verify(&store, &t, None)?;
        report.set_aside_untrusted(&t);
        if !args.json {
            super::verify::print_untrusted_notice(&report, &described);
        }
        if !report.findings.is_empty() {
            if args.json {
                let v = json!({
                    "ok": false,
                    "trust": described,
                    "verify_findings": report.findings,
                    "notices": super::notice_words(&ctx.flush_notices()),
                });
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                super::verify::print_findings(&report);
                eprintln!(
                    "git-receipt: gate failed: {} verifying {} against {described}\nhint: `git receipt verify` shows them again",
                    super::plural(report.findings.len() as u64, "finding", "findings"),
                    super::plural(report.receipts, "receipt", "receipts"),
                );
            }
            return Ok(ExitCode::from(1));
        }
        eprintln!(
            "git-receipt: verified {} in {} against {described}",
            super::plural(report.receipts, "receipt", "receipts"),
            super::plural(report.chains as u64, "chain", "chains"),
        );
    }
    if !args.accepted_by.is_empty() {
        // the signed decisions answer (after --verify, when asked); nothing is decided again
        return gate_on_acceptance(ctx, &store, &revs, trust.as_ref(), &args);
    }
    let mut all_ok = true;
    let mut json_out = Vec::new();
    let mut text = String::new();
    let on = colour(std::io::stdout().is_terminal());
    // names are for the rows of a failing check only: a passing gate does not
    // fingerprint every [signer] key to print nothing
    let mut names: Option<super::SignerNames> = None;
    let cut_chains = super::hints::CutChains::default();
    for rev in &revs {
        let mut report =
            evaluate_rev_for(ctx, &store, rev, trust.as_ref(), &baseline, args.protected)?;
        for notice in &report.notices {
            eprintln!("git-receipt: notice: {}: {}", escape(rev), escape(notice));
        }
        // Only required checks matter: one that the history here cannot decide
        // makes the gate unable to decide (exit 2); the others are not its business.
        let require = if args.require.is_empty() {
            Require::Marked
        } else {
            Require::Named(args.require.clone())
        };
        let verdict = report.verdict(&require);
        if let Some(first) = verdict.undecided.first() {
            let name = first.name.clone();
            if let Some(i) = report.undecided.iter().position(|u| u.name == name) {
                return Err(report.undecided.swap_remove(i).error.into());
            }
        }
        if let Some(name) = verdict.unknown.first() {
            bail!(
                "--require {name}: no check {name:?} is declared in .gitreceipts at {rev}\nhint: declare it, or require one of: {}",
                report
                    .states
                    .iter()
                    .map(|s| s.name.as_str())
                    .chain(report.undecided.iter().map(|u| u.name.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let (required, failing) = (verdict.required, verdict.failing);
        all_ok &= failing.is_empty();
        if args.record {
            let recorded =
                record_acceptance(ctx, &store, &report, &required, trust.as_ref(), &baseline)?;
            eprintln!(
                "git-receipt: recorded acceptance {} of {} ({}) on chain {}",
                recorded.receipt.id(),
                report.commit.to_hex_with_len(7),
                if failing.is_empty() {
                    "accepted"
                } else {
                    "rejected"
                },
                recorded.receipt.body().chain.writer
            );
        }
        // an older receipt, cut away by `fetch --since`, may decide a failing row
        let cut = cut_chains.hint(&store, &failing);
        json_out.push(json!({
            "rev": rev,
            "commit": report.commit.to_string(),
            "ok": failing.is_empty(),
            "trust": report.trust_root,
            "checks": required.iter().map(|s| state_json(s)).collect::<Vec<_>>(),
            "notices": report.notices.iter().chain(&cut).collect::<Vec<_>>(),
            "reasons": report.reasons,
        }));
        if required.is_empty() {
            text.push_str(&format!(
                "{rev}: no required checks (mark one with `required = true` in .gitreceipts, or pass --require)\n"
            ));
        } else if failing.is_empty() {
            text.push_str(&match required.as_slice() {
                [one] => format!("{rev}: required check {} present\n", escape(&one.name)),
                all => format!("{rev}: all {} required checks present\n", all.len()),
            });
        } else {
            text.push_str(&format!(
                "{rev} ({}): {} of {} not present\n",
                report.commit.to_hex_with_len(7),
                failing.len(),
                super::plural(required.len() as u64, "required check", "required checks"),
            ));
            let names = match names {
                Some(ref n) => n,
                None => names.insert(match &baseline {
                    Baseline::At { commit, label } => super::SignerNames::of(
                        &*super::status::contract_at(&store, *commit, label)?,
                    ),
                    _ => super::signer_names(&store),
                }),
            };
            text.push_str(&render_rows_named(&failing, on, names));
            match super::verify::nothing_fetched(&store, rev)? {
                // running every check here is not what a fresh CI clone lacks
                Some(why) => text.push_str(&format!("  {why}\n")),
                None => {
                    for s in &failing {
                        text.push_str(&format!("  fix: {}\n", report.fix(s)));
                    }
                    if let Some(hint) = &cut {
                        text.push_str(&format!("{hint}\n"));
                    }
                }
            }
        }
    }
    if args.json {
        // what the store said while judging concerns every revision it judged
        let store_notices = super::notice_words(&ctx.flush_notices());
        for row in &mut json_out {
            if let Some(serde_json::Value::Array(list)) = row.get_mut("notices") {
                list.extend(store_notices.iter().map(|n| json!(n)));
            }
        }
        println!("{}", serde_json::to_string_pretty(&json_out)?);
    } else {
        print!("{text}");
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Sign the decision `report` made about its revision (its `required` rows) as an
/// acceptance receipt and append it to the user's chain.
fn record_acceptance(
    ctx: &Context,
    store: &git_receipt::store::Store,
    report: &super::status::RevReport,
    required: &[&CheckState],
    trust: Option<&(git_receipt::trust::TrustSet, String)>,
    baseline: &Baseline,
) -> Result<git_receipt::store::chain::Appended> {
    use git_receipt::policy::acceptance;
    let commit = report.commit;
    let trusted = acceptance::trusted_commit(store, commit, baseline)?;
    let trust_set = match trust {
        Some((t, _)) => t.clone(),
        None => ctx.trust_for(store, commit)?.0,
    };
    let acceptance = acceptance::acceptance(
        store,
        report,
        required,
        &trust_set,
        trusted,
        git_receipt::receipt::format_timestamp(git_receipt::clock::now_ms()),
    )?;
    if let Err(why) = git_receipt::decision::counts_here(store, &acceptance)? {
        eprintln!(
            "git-receipt: notice: this acceptance of {} will not satisfy `gate --accepted-by` here: {}",
            commit.to_hex_with_len(7),
            escape(&why.to_string())
        );
    }
    let subject = acceptance::subject(store, commit)?;
    let key = ctx.signing_key(store)?;
    let writer = ctx.writer(store, &key)?;
    Ok(git_receipt::decision::append_decision(
        store,
        &writer,
        &key,
        subject,
        git_receipt::decision::Payload::Acceptance(acceptance),
    )?)
}

/// Whether `signer` accepted exactly `tree` (revision `commit`): `Ok(())`, or the
/// reason it did not, in words ([`git_receipt::policy::acceptance::accepted_by`]),
/// adding to `notices` (unescaped) the acceptances ignored for being dated in the
/// future. Errors, with a hint, only when no trusted key goes by `signer`.
fn accepted_by_noting(
    store: &git_receipt::store::Store,
    trust: &git_receipt::trust::TrustSet,
    commit: gix::ObjectId,
    tree: gix::ObjectId,
    signer: &str,
    notices: &mut Vec<String>,
) -> Result<std::result::Result<(), String>> {
    use git_receipt::policy::{PolicyError, acceptance};
    match acceptance::accepted_by(store, trust, commit, tree, signer, notices) {
        Ok(verdict) => Ok(verdict.map_err(|why| why.to_string())),
        Err(e @ PolicyError::UnknownSigner(_)) => bail!(
            "{e}
hint: name a [signer] of .gitreceipts at the trusted revision, or a key fingerprint (SHA256:...)"
        ),
        Err(e) => Err(e.into()),
    }
}

/// `gate --accepted-by`: each revision's tree must be accepted by each signer.
fn gate_on_acceptance(
    ctx: &Context,
    store: &git_receipt::store::Store,
    revs: &[String],
    trust: Option<&(git_receipt::trust::TrustSet, String)>,
    args: &GateArgs,
) -> Result<ExitCode> {
    let mut all_ok = true;
    let mut out = Vec::new();
    for rev in revs {
        let commit = store.resolve_commit(rev)?;
        let tree = store.commit_tree(commit)?;
        let trust_set = match trust {
            Some((t, _)) => t.clone(),
            None => ctx.trust_for(store, commit)?.0,
        };
        for signer in &args.accepted_by {
            let mut notices = Vec::new();
            let verdict =
                accepted_by_noting(store, &trust_set, commit, tree, signer, &mut notices)?;
            all_ok &= verdict.is_ok();
            for n in notices.iter().filter(|_| !args.json) {
                eprintln!("git-receipt: notice: {}: {}", escape(rev), escape(n));
            }
            if !args.json {
                match &verdict {
                    Ok(()) => println!(
                        "{}: tree {} accepted by {}",
                        escape(rev),
                        tree.to_hex_with_len(7),
                        escape(signer)
                    ),
                    Err(why) => println!(
                        "{} ({}): not accepted by {}: {}",
                        escape(rev),
                        commit.to_hex_with_len(7),
                        escape(signer),
                        escape(why)
                    ),
                }
            }
            out.push(json!({
                "rev": rev,
                "commit": commit.to_string(),
                "tree": tree.to_string(),
                "signer": signer,
                "ok": verdict.is_ok(),
                "reason": verdict.err(),
                "notices": notices,
            }));
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
