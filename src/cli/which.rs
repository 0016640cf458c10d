//! `git receipt which`: which trusted receipt produced a file.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Args;
use serde_json::json;

use git_receipt::policy::{Baseline, Require};
use git_receipt::text::escape;
use git_receipt::trust::Refusal;

use super::{Context, short_id};

/// Name the trusted receipts that produced a file
///
/// Hashes FILE (SHA-256) and looks through every receipt chain here for check
/// receipts that recorded an artifact with that digest (`artifact = GLOB` in
/// .gitreceipts). A receipt counts only when its signature verifies against a
/// key trusted for its commit, as `git receipt status` trusts it. For each it
/// prints the check and its outcome, the path the file had, the commit and
/// inputs tree (and whether the run saw uncommitted changes), who signed it,
/// and whether every check required at that commit was present there, as
/// `git receipt gate` judges it. Receipts that do not count are named on stderr
/// with the reason.
///
/// Exits 0 when a trusted receipt produced the file, 1 when none did. Reads
/// every chain here, so run `git receipt fetch` first for others' receipts.
///
/// Examples:
///
///     git receipt which target/release/app
///     git receipt which dist/app.tar.gz --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct WhichArgs {
    /// The file to look up.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One trusted receipt that produced the file, and the gate at its commit.
struct Row {
    path: String,
    id: String,
    writer: String,
    signer: String,
    body: git_receipt::receipt::Body,
    /// Every required check present at its commit.
    gate: bool,
    failing: Vec<String>,
    undecided: Vec<String>,
}

/// Look the file up.
pub fn cmd_which(ctx: &Context, args: WhichArgs) -> Result<ExitCode> {
    let (size, sha256) = git_receipt::artifacts::digest_file(&args.file).with_context(|| {
        format!(
            "cannot read {}\nhint: name a file (git receipt which looks up one file's SHA-256)",
            args.file.display()
        )
    })?;
    let store = ctx.store()?;
    let search = git_receipt::artifacts::produced(&store, &sha256)?;
    for (writer, why) in &search.unreadable {
        eprintln!(
            "{}",
            git_receipt::text::escape_lines(&format!(
                "git-receipt: warning: chain {writer} could not be read to its root: {why}\nhint: git receipt verify says what is wrong with it"
            ))
        );
    }
    let names = super::signer_names(&store);
    let mut trusts = std::collections::HashMap::new();
    let mut judged: std::collections::HashMap<gix::ObjectId, (bool, Vec<String>, Vec<String>)> =
        std::collections::HashMap::new();
    let mut rows = Vec::new();
    let mut refused = Vec::new();
    for p in search.found {
        let id = p.entry.receipt.id().to_owned();
        let body = p.entry.receipt.body().clone();
        let commit = store.resolve_commit(&body.subject.commit).ok();
        let Some(commit) = commit else {
            refused.push((
                id,
                format!("its commit {} is not in this clone", body.subject.commit),
            ));
            continue;
        };
        let trust = match trusts.entry(commit) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(ctx.trust_for(&store, commit)?.0)
            }
        };
        let signer = p.entry.receipt.signature().key.clone();
        if body.chain.writer != p.writer {
            refused.push((id, format!("it is not its chain's own ({})", p.writer)));
            continue;
        }
        if !trust.may_sign_as(&p.writer) {
            refused.push((
                id,
                super::export::refusal_words(Refusal::Untrusted, &signer),
            ));
            continue;
        }
        if let Err(refusal) = trust.check(p.entry.receipt) {
            refused.push((id, super::export::refusal_words(refusal, &signer)));
            continue;
        }
        let (gate, failing, undecided) = match judged.entry(commit) {
            std::collections::hash_map::Entry::Occupied(e) => e.get().clone(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let j = super::status::evaluate_commit_trusting(
                    ctx,
                    &store,
                    commit,
                    None,
                    &Baseline::Own,
                )?;
                let v = j.verdict(&Require::Marked);
                e.insert((
                    v.passed(),
                    v.failing.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
                    v.undecided
                        .iter()
                        .map(|u| u.name.clone())
                        .collect::<Vec<_>>(),
                ))
                .clone()
            }
        };
        rows.push(Row {
            path: p.path,
            id,
            writer: p.writer,
            signer,
            body,
            gate,
            failing,
            undecided,
        });
    }
    for (id, why) in &refused {
        eprintln!(
            "{}",
            git_receipt::text::escape_lines(&format!(
                "git-receipt: not counting receipt {id}: {why}"
            ))
        );
    }
    if args.json {
        let produced: Vec<_> = rows
            .iter()
            .map(|r| {
                let Row {
                    path,
                    id,
                    writer,
                    signer,
                    body: b,
                    gate,
                    failing,
                    undecided,
                } = r;
                json!({
                    "id": id,
                    "check": b.check.name,
                    "passed": b.result.passed,
                    "mode": b.result.mode,
                    "path": path,
                    "commit": b.subject.commit,
                    "tree": b.subject.tree,
                    "inputs": b.subject.inputs,
                    "dirty": b.subject.dirty,
                    "writer": writer,
                    "signer": signer,
                    "started_at": b.result.started_at,
                    "required": {
                        "present": gate,
                        "failing": failing,
                        "undecided": undecided,
                    },
                })
            })
            .collect();
        let out = json!({
            "file": args.file.to_string_lossy(),
            "size": size,
            "sha256": sha256,
            "produced_by": produced,
            "not_counted": refused
                .iter()
                .map(|(id, why)| json!({ "id": id, "why": why }))
                .collect::<Vec<_>>(),
            "receipts_read": search.read,
        });
        super::output::write_stdout(
            format!("{}\n", serde_json::to_string_pretty(&out)?).as_bytes(),
        )?;
    } else {
        let mut out = String::new();
        if rows.is_empty() {
            out.push_str(&format!(
                "{}: no trusted receipt here recorded a file with {sha256} ({size} bytes; {} read)\n",
                escape(&args.file.to_string_lossy()),
                super::plural(search.read as u64, "receipt", "receipts"),
            ));
        }
        for r in &rows {
            let Row {
                path,
                id,
                writer,
                body: b,
                gate,
                failing,
                undecided,
                ..
            } = r;
            out.push_str(&format!(
                "{}: produced as {} by check {} ({}, {}), receipt {}\n",
                escape(&args.file.to_string_lossy()),
                escape(path),
                escape(&b.check.name),
                if b.result.passed { "passed" } else { "failed" },
                match b.result.mode {
                    git_receipt::receipt::Mode::Run => "observed by git receipt run",
                    git_receipt::receipt::Mode::Record => "recorded",
                },
                short_id(id),
            ));
            out.push_str(&format!(
                "  on       commit {} inputs {}{}\n",
                escape(&b.subject.commit),
                escape(&b.subject.inputs),
                if b.subject.dirty {
                    " WITH UNCOMMITTED CHANGES (not the commit's tree)"
                } else {
                    ""
                },
            ));
            out.push_str(&format!(
                "  signed   {} at {}\n",
                escape(&names.label(writer)),
                escape(&b.result.started_at)
            ));
            let mut required = if *gate {
                "every required check present there".to_owned()
            } else {
                let mut parts = Vec::new();
                if !failing.is_empty() {
                    parts.push(format!(
                        "not present there: {}",
                        escape(&failing.join(", "))
                    ));
                }
                if !undecided.is_empty() {
                    parts.push(format!(
                        "undecided there: {}",
                        escape(&undecided.join(", "))
                    ));
                }
                parts.join("; ")
            };
            if required.is_empty() {
                required = "the gate says no there".into();
            }
            out.push_str(&format!("  required {required}\n"));
        }
        super::output::write_stdout(out.as_bytes())?;
    }
    Ok(if rows.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
