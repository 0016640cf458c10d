//! `git receipt gate`: exit 0 only when every required check is present.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use serde_json::json;

use git_receipt::freshness::{CheckState, State};

use super::status::{Baseline, evaluate_rev_trusting, render_rows_named, state_json};
use super::{Context, colour};
use git_receipt::text::escape;

/// Exit 0 when every required check is present at every named revision.
///
/// Required checks are those with `required = true` in .gitreceipts at each
/// revision, or the ones named with --require. With --trust REV (or --verify, whose
/// trusted revision is the merge base with the default branch), the checks
/// required at that trusted revision are required too, so a branch cannot drop a
/// requirement by editing .gitreceipts; one it no longer declares reads missing.
/// Exits 1 when any is missing, failed or stale (printing each with the command
/// that fixes it), 2 when it cannot decide (for example a shallow clone whose
/// history ends before an answer).
#[derive(Debug, Args)]
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
}

/// Gate the revisions.
pub fn cmd_gate(ctx: &Context, args: GateArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let revs = if args.revs.is_empty() {
        vec!["HEAD".to_owned()]
    } else {
        args.revs.clone()
    };
    let trust = match &args.trust {
        Some(rev) => Some(super::verify::verifier_trust(ctx, &store, Some(rev), None)?),
        None => None,
    };
    // the revision trust comes from also says which checks are required
    let baseline = match &args.trust {
        Some(rev) => Baseline::At {
            commit: store.resolve_commit(rev)?,
            label: rev.clone(),
        },
        None if args.verify => Baseline::TrustRoot,
        None => Baseline::Own,
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
                let v =
                    json!({"ok": false, "trust": described, "verify_findings": report.findings});
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
    let mut all_ok = true;
    let mut json_out = Vec::new();
    let mut text = String::new();
    let on = colour(std::io::stdout().is_terminal());
    let names = match &baseline {
        Baseline::At { commit, label } => {
            super::SignerNames::of(&super::status::contract_at(&store, *commit, label)?)
        }
        _ => super::signer_names(&store),
    };
    for rev in &revs {
        let mut report = evaluate_rev_trusting(ctx, &store, rev, trust.as_ref(), &baseline)?;
        for notice in &report.notices {
            eprintln!("git-receipt: notice: {}: {}", escape(rev), escape(notice));
        }
        // Only required checks matter: one that the history here cannot decide
        // makes the gate unable to decide (exit 2); the others are not its business.
        let required_undecided = report.undecided.iter().position(|u| {
            if args.require.is_empty() {
                u.required
            } else {
                args.require.contains(&u.name)
            }
        });
        if let Some(i) = required_undecided {
            return Err(report.undecided.swap_remove(i).error.into());
        }
        let required: Vec<&CheckState> = if args.require.is_empty() {
            report.states.iter().filter(|s| s.required).collect()
        } else {
            let mut v = Vec::new();
            for name in &args.require {
                match report.states.iter().find(|s| &s.name == name) {
                    Some(s) => v.push(s),
                    None => bail!(
                        "--require {name}: no check {name:?} is declared in .gitreceipts at {rev}\nhint: declare it, or require one of: {}",
                        report
                            .states
                            .iter()
                            .map(|s| s.name.as_str())
                            .chain(report.undecided.iter().map(|u| u.name.as_str()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            }
            v
        };
        let failing: Vec<&CheckState> = required
            .iter()
            .copied()
            .filter(|s| s.state != State::Present)
            .collect();
        all_ok &= failing.is_empty();
        json_out.push(json!({
            "rev": rev,
            "commit": report.commit.to_string(),
            "ok": failing.is_empty(),
            "trust": report.trust_root,
            "checks": required.iter().map(|s| state_json(s)).collect::<Vec<_>>(),
            "notices": report.notices,
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
            text.push_str(&render_rows_named(&failing, on, &names));
            match super::verify::nothing_fetched(&store, rev)? {
                // running every check here is not what a fresh CI clone lacks
                Some(why) => text.push_str(&format!("  {why}\n")),
                None => {
                    for s in &failing {
                        text.push_str(&format!("  fix: {}\n", report.fix(s)));
                    }
                }
            }
        }
    }
    if args.json {
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
