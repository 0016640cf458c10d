//! `git receipt export`: receipts in other tools' formats, as DSSE envelopes
//! signed by the exporter's key, one JSON object per line: in-toto attestations
//! (`--in-toto`: each verified, trusted receipt becomes an in-toto Statement) or
//! SLSA provenance (`--slsa`: each passed check receipt that records artifacts).
//! The translation lives in `git_receipt::intoto`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Args;

use git_receipt::receipt::{Receipt, Unverified};
use git_receipt::store::short;
use git_receipt::text::escape;
use git_receipt::trust::{Refusal, TrustSet};
use git_receipt::{intoto, text};

use super::Context;
use super::show::{entries_about, find_receipt, looks_like_id};

/// Export receipts as in-toto attestations (DSSE envelopes, one JSON object per line)
///
/// Exports every receipt whose signed subject is the commit REV (default HEAD),
/// and each receipt named by its id (`sha256:...` or a unique prefix). Each
/// becomes an in-toto Statement v1 with the test-result predicate: result
/// PASSED or FAILED, the check's definition and the receipt as configuration,
/// and as subjects the commit (gitCommit; left out for a receipt of uncommitted
/// changes) and the tree of the check's inputs (gitTree). The Statement is
/// signed with your signing key in a DSSE envelope (payloadType
/// application/vnd.in-toto+json, keyid your key's SHA256 fingerprint), so
/// verifiers need `git receipt key show`.
///
/// Only receipts whose signature verifies against a key trusted here are
/// exported (as `git receipt status` trusts them for REV); any other is named
/// on stderr with the reason, and the exit status is 1. Also 1 when nothing is
/// exported, as when REV has no receipts at all (the file, with -o, then holds
/// what was exported). A review receipt has no in-toto form yet: one of REV's is
/// skipped with a notice on stderr (the exit status stays 0 when the rest is
/// exported); one named by its id is not exported (exit 1).
///
/// With --slsa instead, each trusted, passed check receipt that records
/// artifacts (`artifact = GLOB` in .gitreceipts) becomes a SLSA Provenance v1
/// Statement, in the same envelope: the artifacts (by SHA-256) are its
/// subjects, the commit, inputs tree and dependencies its resolved
/// dependencies, the log a byproduct. A revision's receipts without artifacts
/// are skipped with a notice; one named by its id is not exported (exit 1).
///
/// Examples:
///
///     git receipt export --in-toto > receipts.intoto.jsonl
///     git receipt export --in-toto main sha256:3f2a -o main.intoto.jsonl
///     git receipt export --slsa -o build.intoto.jsonl
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ExportArgs {
    /// Revisions (default HEAD) and receipt ids, in any mix.
    #[arg(value_name = "REV|ID")]
    pub targets: Vec<String>,
    /// Write in-toto attestations: DSSE envelopes of in-toto Statements v1.
    #[arg(long, required_unless_present = "slsa", conflicts_with = "slsa")]
    pub in_toto: bool,
    /// Write SLSA Provenance v1 of the artifacts of check receipts (DSSE envelopes).
    #[arg(long)]
    pub slsa: bool,
    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// One receipt picked for export, with the trust it is judged by.
struct Picked {
    receipt: Receipt<Unverified>,
    /// What asked for it, for messages: `REV` or the id given.
    asked: String,
    /// Named by its id (else found as one of a revision's receipts).
    by_id: bool,
    trust: std::rc::Rc<TrustSet>,
}

/// Export.
pub fn cmd_export(ctx: &Context, args: ExportArgs) -> Result<ExitCode> {
    debug_assert!(args.in_toto != args.slsa, "clap requires one format");
    let store = ctx.store()?;
    let targets = if args.targets.is_empty() {
        vec!["HEAD".to_owned()]
    } else {
        args.targets.clone()
    };
    let mut refused = 0usize;
    let mut picked: Vec<Picked> = Vec::new();
    let mut head_trust: Option<std::rc::Rc<TrustSet>> = None;
    for target in &targets {
        if looks_like_id(target) {
            let (_, entry) = find_receipt(&store, target)?;
            let trust = match &head_trust {
                Some(t) => t.clone(),
                None => head_trust
                    .insert(std::rc::Rc::new(ctx.trust(&store)?))
                    .clone(),
            };
            picked.push(Picked {
                receipt: entry.receipt,
                asked: target.clone(),
                by_id: true,
                trust,
            });
            continue;
        }
        let commit = store.resolve_commit(target)?;
        let trust = std::rc::Rc::new(ctx.trust_for(&store, commit)?.0);
        let about = entries_about(&store, commit)?;
        if about.is_empty() {
            eprintln!(
                "git-receipt: no receipt has {} ({}) as its subject\nhint: `git receipt show {}` lists the receipts that decide its checks (some may be about another commit with identical inputs); export one by its id",
                escape(target),
                short(&commit),
                escape(target)
            );
            refused += 1;
        }
        for (_, entry) in about {
            picked.push(Picked {
                receipt: entry.receipt,
                asked: target.clone(),
                by_id: false,
                trust: trust.clone(),
            });
        }
    }
    // the same receipt asked for twice is exported once
    let mut seen = std::collections::HashSet::new();
    picked.retain(|p| seen.insert(p.receipt.id().to_owned()));

    let key = ctx.signing_key(&store)?;
    let mut out = String::new();
    let mut exported = 0usize;
    let mut skipped = 0usize;
    for p in picked {
        let signer = p.receipt.signature().key.clone();
        let id = p.receipt.id().to_owned();
        let verified = match p.trust.check(p.receipt) {
            Ok((verified, _)) => verified,
            Err(refusal) => {
                let why = refusal_words(refusal, &signer);
                eprintln!(
                    "{}",
                    text::escape_lines(&format!(
                        "git-receipt: not exporting receipt {id} (for {}): {why}",
                        p.asked
                    ))
                );
                refused += 1;
                continue;
            }
        };
        let statement = if args.slsa {
            match intoto::provenance(&verified) {
                Ok(s) => Some(s),
                Err(why) => {
                    // a revision's receipts without artifacts: not what was asked
                    let verb = if p.by_id { "not exporting" } else { "skipping" };
                    eprintln!(
                        "{}",
                        text::escape_lines(&format!(
                            "git-receipt: {verb} receipt {id} (for {}): {why}",
                            p.asked
                        ))
                    );
                    if p.by_id {
                        refused += 1;
                    } else {
                        skipped += 1;
                    }
                    continue;
                }
            }
        } else {
            // a list kept beside the log is read and checked against the receipt;
            // one this clone lacks leaves the check's name as its one test
            let list = match &verified.body().result.tests {
                Some(t) if t.error.is_empty() => match git_receipt::results::load_list(&store, t) {
                    Ok(list) => Some(list),
                    Err(why) => {
                        eprintln!(
                            "{}",
                            text::escape_lines(&format!(
                                "git-receipt: warning: receipt {id}: its test list is not exported: {why}"
                            ))
                        );
                        None
                    }
                },
                _ => None,
            };
            intoto::statement_with_tests(&verified, list.as_deref())
        };
        let Some(statement) = statement else {
            // a revision's review receipts have no in-toto form: exporting its
            // checks is what was asked, so they are skipped, said, not a no
            if !p.by_id {
                eprintln!(
                    "{}",
                    text::escape_lines(&format!(
                        "git-receipt: skipping review receipt {id} (for {}): a {} has no in-toto form yet",
                        p.asked,
                        verified.body().headline()
                    ))
                );
                skipped += 1;
                continue;
            }
            eprintln!(
                "{}",
                text::escape_lines(&format!(
                    "git-receipt: not exporting receipt {id} (for {}): a {} has no in-toto form yet",
                    p.asked,
                    verified.body().headline()
                ))
            );
            refused += 1;
            continue;
        };
        let envelope = intoto::envelope(&statement, &key)?;
        out.push_str(&serde_json::to_string(&envelope)?);
        out.push('\n');
        exported += 1;
    }
    match &args.output {
        Some(file) => std::fs::write(file, &out)
            .with_context(|| format!("cannot write {}", file.display()))?,
        None => super::output::write_stdout(out.as_bytes())?,
    }
    eprintln!(
        "git-receipt: exported {} signed by {}{}{}",
        if args.slsa {
            super::plural(exported as u64, "SLSA provenance", "SLSA provenances")
        } else {
            super::plural(
                exported as u64,
                "in-toto attestation",
                "in-toto attestations",
            )
        },
        key.public().fingerprint(),
        if refused > 0 {
            format!("; {refused} not exported (see above)")
        } else {
            String::new()
        },
        if skipped > 0 {
            format!(
                "; {} skipped",
                if args.slsa {
                    super::plural(skipped as u64, "receipt", "receipts")
                } else {
                    super::plural(skipped as u64, "review receipt", "review receipts")
                }
            )
        } else {
            String::new()
        }
    );
    Ok(if refused > 0 || exported == 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Why a receipt signed by key `signer` counts for nothing here, in words for a
/// line about it (`export`, `which`).
pub(super) fn refusal_words(refusal: Refusal, signer: &str) -> String {
    match refusal {
        Refusal::Untrusted => format!("signed by {signer}, which is not a trusted key here"),
        Refusal::BadSignature(why) => format!("its signature is INVALID: {why}"),
        Refusal::Revoked(why) | Refusal::Window(why) => {
            format!("its signer is not trusted for it: {why}")
        }
    }
}
