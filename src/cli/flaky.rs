//! `git receipt flaky`: tests that trusted receipts of the same inputs disagree on.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use git_receipt::policy::flaky;
use git_receipt::text::escape;

use super::{Context, short_id};

/// List flaky tests: trusted receipts of the same inputs disagree on them.
///
/// A test is flaky when one trusted receipt says it passed and another that it
/// failed, with nothing else different that the receipts name: the same check,
/// the same inputs tree, the same definition digest. Only checks that record
/// per-test results (`results =` in .gitreceipts) can show one. Each line names
/// the check, the test, how often it passed and failed, and the receipts that
/// say so (`git receipt show ID`); a `[quarantine]` in HEAD's .gitreceipts that
/// names the test is shown beside it. Exits 0 whether or not any is found.
///
/// Examples:
///
///     git receipt flaky
///     git receipt flaky test --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct FlakyArgs {
    /// Only this check.
    #[arg(value_name = "CHECK")]
    pub check: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// List flaky tests.
pub fn cmd_flaky(ctx: &Context, args: FlakyArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let trust = ctx.trust(&store)?;
    let survey = flaky::find(&store, &trust, args.check.as_deref())?;
    // the quarantines HEAD's .gitreceipts declares, to show beside each test
    let quarantines = match store.head() {
        Ok((head, _)) => git_receipt::policy::judge::contract_at(&store, head, "HEAD")
            .map(|c| c.quarantines.clone())
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let quarantine_of = |f: &flaky::Flaky| {
        quarantines
            .iter()
            .find(|q| q.check == f.check && q.test == f.test)
    };
    if args.json {
        let rows: Vec<_> = survey
            .flaky
            .iter()
            .map(|f| {
                json!({
                    "check": f.check,
                    "test": f.test,
                    "inputs": f.inputs,
                    "definition": f.definition,
                    "passed": f.passed,
                    "failed": f.failed,
                    "passed_in": f.passed_in,
                    "failed_in": f.failed_in,
                    "quarantine": quarantine_of(f).map(|q| json!({
                        "name": q.name,
                        "owner": q.owner,
                        "expires": q.expires,
                    })),
                })
            })
            .collect();
        let out = json!({
            "flaky": rows,
            "compared": survey.compared,
            "untrusted": survey.untrusted,
            "unreadable": survey.unreadable.iter().map(|(id, why)| json!({"id": id, "why": why})).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    let ids = |list: &[String], total: usize| {
        let mut s = list
            .iter()
            .map(|i| short_id(i))
            .collect::<Vec<_>>()
            .join(" ");
        if total > list.len() {
            s.push_str(&format!(" (+{} more)", total - list.len()));
        }
        s
    };
    if survey.flaky.is_empty() {
        println!(
            "no flaky test among {} trusted receipt{} with per-test results",
            survey.compared,
            if survey.compared == 1 { "" } else { "s" }
        );
    }
    for f in &survey.flaky {
        println!(
            "{}  {}  passed {}, failed {} on inputs {}",
            escape(&f.check),
            escape(&f.test),
            f.passed,
            f.failed,
            &f.inputs[..7.min(f.inputs.len())]
        );
        println!("  passed in {}", ids(&f.passed_in, f.passed));
        println!("  failed in {}", ids(&f.failed_in, f.failed));
        match quarantine_of(f) {
            Some(q) => println!(
                "  quarantined: {} (owner {}, expires {})",
                escape(&q.name),
                escape(&q.owner),
                escape(&q.expires)
            ),
            None => println!("  not quarantined"),
        }
    }
    if survey.untrusted > 0 {
        eprintln!(
            "git-receipt: {} receipt{} passed over: not signed by a key trusted here",
            survey.untrusted,
            if survey.untrusted == 1 { "" } else { "s" }
        );
    }
    for (id, why) in &survey.unreadable {
        eprintln!(
            "git-receipt: warning: the test list of receipt {} was not compared: {}",
            short_id(id),
            escape(why)
        );
    }
    Ok(ExitCode::SUCCESS)
}
