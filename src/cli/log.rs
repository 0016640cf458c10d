//! `git receipt log`: every chain's receipts, newest first.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::show::{SigStatus, check_signature};
use super::{Context, colour, human_ms, paint, short_id};

/// List receipts from every chain, newest first, one line each.
///
/// Columns: receipt id, start time, check, result and how it was obtained
/// (`(run)` observed by `git receipt run`, `(recorded)` by `record`), subject commit (`+` when the
/// work tree had uncommitted changes), duration, writer and index (with the
/// `[signer]` name `status` gives it first, when a trusted signer's key signed
/// it: `ada (default-8ef8...#3)`); then
/// `untrusted key` or `INVALID signature` when the signature does not verify
/// against a trusted key.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Print JSON (an array) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Show at most this many receipts.
    #[arg(short = 'n', long, value_name = "N")]
    pub max_count: Option<usize>,
}

/// List receipts.
pub fn cmd_log(ctx: &Context, args: LogArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let mut all = Vec::new();
    for (writer, _) in store.writers()? {
        for e in store.read_chain(&writer)? {
            all.push((writer.clone(), e));
        }
    }
    all.sort_by(|a, b| {
        let (x, y) = (a.1.receipt.body(), b.1.receipt.body());
        y.time()
            .cmp(x.time())
            .then(a.0.cmp(&b.0))
            .then(y.chain.index.cmp(&x.chain.index))
    });
    if let Some(n) = args.max_count {
        all.truncate(n);
    }
    let trust = ctx.trust(&store)?;
    // the names `status` gives the signers, for receipts whose trusted signature
    // verifies with that signer's key
    let names = super::signer_names(&store);
    let name_of = |writer: &str, signer: &str, sig: &SigStatus| -> Option<String> {
        match sig {
            SigStatus::Verified(_) => names.name_of_signed(writer, signer).map(str::to_owned),
            _ => None,
        }
    };
    let status: Vec<SigStatus> = all
        .iter()
        .map(|(_, e)| check_signature(&trust, &e.receipt))
        .collect();
    if args.json {
        let arr: Vec<_> = all
            .iter()
            .zip(&status)
            .map(|((writer, e), sig)| {
                let b = e.receipt.body();
                let (signature_status, signature_detail) = sig.json();
                json!({
                    "id": e.receipt.id(),
                    "writer": writer,
                    "signer_name": name_of(writer, &e.receipt.signature().key, sig),
                    "index": b.chain.index,
                    "prev": b.chain.prev,
                    "chain_commit": e.commit.to_string(),
                    "check": b.check.name,
                    "passed": b.result.passed,
                    "mode": super::status::mode_name(b.result.mode),
                    "exit_code": b.result.exit_code,
                    "commit": b.subject.commit,
                    "tree": b.subject.tree,
                    "inputs": b.subject.inputs,
                    "dirty": b.subject.dirty,
                    "started_at": b.result.started_at,
                    "duration_ms": b.result.duration_ms,
                    "log": b.result.log,
                    "signer": e.receipt.signature().key,
                    "signature_status": signature_status,
                    "signature_detail": signature_detail,
                    // v3 decisions: what was decided (check, passed and the
                    // result members are empty for them)
                    "kind": b.kind,
                    "decision": (b.kind != git_receipt::receipt::Kind::Check).then(|| b.headline()),
                    "decided_at": (b.kind != git_receipt::receipt::Kind::Check).then(|| b.time()),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&arr)?);
        return Ok(ExitCode::SUCCESS);
    }
    let on = colour(std::io::stdout().is_terminal());
    let mut out = String::new();
    for ((writer, e), sig) in all.iter().zip(&status) {
        let b = e.receipt.body();
        let place = format!("{writer}#{}", b.chain.index);
        let who = match name_of(writer, &e.receipt.signature().key, sig) {
            Some(name) => format!("{} ({place})", git_receipt::text::escape(&name)),
            None => place,
        };
        let mark = match sig {
            SigStatus::Verified(_) => String::new(),
            SigStatus::Untrusted | SigStatus::Refused(_) => {
                format!(" {}", paint(on, "33", "untrusted key"))
            }
            SigStatus::Invalid(_) => format!(" {}", paint(on, "31", "INVALID signature")),
        };
        if b.kind != git_receipt::receipt::Kind::Check {
            out.push_str(&format!(
                "{} {} {} {} {who}{mark}\n",
                paint(on, "33", short_id(e.receipt.id())),
                b.time(),
                git_receipt::text::escape(&b.headline()),
                &b.subject.commit[..7],
            ));
            continue;
        }
        let state = if b.result.passed {
            paint(on, "32", "passed")
        } else {
            paint(on, "31", "failed")
        };
        out.push_str(&format!(
            "{} {} {} {state} ({}) {}{} {} {who}{mark}\n",
            paint(on, "33", short_id(e.receipt.id())),
            b.result.started_at,
            b.check.name,
            super::status::mode_name(b.result.mode),
            &b.subject.commit[..7],
            if b.subject.dirty { "+" } else { "" },
            human_ms(b.result.duration_ms),
        ));
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}
