//! `git receipt show`: the receipts whose subject is a revision, or one receipt's
//! signed bytes for checking with OpenSSH.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use serde_json::json;

use git_receipt::receipt::{Receipt, Unverified};
use git_receipt::sign::{PublicKey, armor_sshsig};
use git_receipt::store::chain::ChainEntry;
use git_receipt::store::index::Role;
use git_receipt::store::{Store, short};
use git_receipt::trust::{Refusal, TrustSet};

use super::{Context, colour, human_ms, paint};
use git_receipt::text::escape;

/// Show the receipts whose subject is a revision.
///
/// Lists every receipt, from every writer, whose signed subject is the commit REV
/// (default HEAD), with its result and whether its signature verifies against a
/// trusted key. Receipts are found through the chains (via the local receipt
/// index), never through notes.
///
/// To check a receipt with OpenSSH alone:
///   git receipt show --body ID > msg
///   git receipt show --sshsig ID > msg.sig
///   ssh-keygen -Y verify -f allowed_signers -I NAME -n git-receipt -s msg.sig < msg
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The revision (default HEAD).
    pub rev: Option<String>,
    /// Print JSON (an array of receipts) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print the receipt ID's signature as an OpenSSH SSHSIG file.
    #[arg(long, value_name = "ID", conflicts_with_all = ["rev", "body", "json"])]
    pub sshsig: Option<String>,
    /// Print the exact signed message (the canonical body) of receipt ID.
    #[arg(long, value_name = "ID", conflicts_with_all = ["rev", "json"])]
    pub body: Option<String>,
    /// With --sshsig: the signer's public key file, when it is not a trusted key.
    #[arg(long, value_name = "FILE", requires = "sshsig")]
    pub key: Option<std::path::PathBuf>,
    /// Print the full output log of receipt ID, checked against its signature.
    ///
    /// A log this clone lacks is fetched from the remote (just that one log ref).
    /// When nobody pushed it, says so and prints the signed output tails instead
    /// (exit 1). On a terminal, control characters are shown escaped; piped, the
    /// bytes are exactly the log.
    #[arg(long, value_name = "ID", conflicts_with_all = ["rev", "json", "body", "sshsig"])]
    pub log: Option<String>,
    /// With --log: the remote to fetch a missing log from (default: receipt.remote, or origin).
    #[arg(long, value_name = "REMOTE", requires = "log")]
    pub remote: Option<String>,
}

/// Find one receipt by id or unique id prefix (with or without `sha256:`).
pub(super) fn find_receipt(store: &Store, wanted: &str) -> Result<(String, ChainEntry)> {
    let needle = if wanted.starts_with("sha256:") {
        wanted.to_owned()
    } else {
        format!("sha256:{wanted}")
    };
    if needle.len() < "sha256:".len() + 4 {
        bail!("receipt id {wanted:?} is too short; give at least 4 hex digits");
    }
    let mut found: Vec<(String, ChainEntry)> = Vec::new();
    for (writer, _) in store.writers()? {
        for e in store.read_chain(&writer)? {
            if e.receipt.id().starts_with(&needle) {
                found.push((writer.clone(), e));
            }
        }
    }
    match found.len() {
        0 => bail!(
            "no receipt {wanted:?} in any chain under refs/receipts/\nhint: `git receipt log` lists them"
        ),
        1 => Ok(found.pop().expect("one")),
        n => bail!("receipt id {wanted:?} is ambiguous ({n} receipts); give more digits"),
    }
}

/// How a receipt's signature fares against the trust set.
pub(super) enum SigStatus {
    Verified(String),
    Untrusted,
    /// A trusted key, but revoked or used outside its validity window.
    Refused(String),
    Invalid(String),
}

impl SigStatus {
    /// `signature_status` and `signature_detail` for JSON output.
    pub(super) fn json(&self) -> (&'static str, Option<String>) {
        match self {
            SigStatus::Verified(o) => ("verified", Some(o.clone())),
            SigStatus::Untrusted => ("untrusted", None),
            SigStatus::Refused(why) => ("untrusted", Some(why.clone())),
            SigStatus::Invalid(why) => ("invalid", Some(why.clone())),
        }
    }
}

pub(super) fn check_signature(trust: &TrustSet, r: &Receipt<Unverified>) -> SigStatus {
    match trust.check(r.clone()) {
        Ok((_, t)) => SigStatus::Verified(t.origin.to_string()),
        Err(Refusal::Untrusted) => SigStatus::Untrusted,
        // a revoked key, or one used outside its window, is not trusted for this receipt
        Err(refusal @ (Refusal::Revoked(_) | Refusal::Window(_))) => {
            SigStatus::Refused(refusal.to_string())
        }
        Err(Refusal::BadSignature(why)) => SigStatus::Invalid(why),
    }
}

/// Show receipts, or print one receipt's signature or body.
pub fn cmd_show(ctx: &Context, args: ShowArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    if let Some(id) = &args.body {
        let (_, e) = find_receipt(&store, id)?;
        std::io::stdout().write_all(e.receipt.body_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(id) = &args.sshsig {
        let (_, e) = find_receipt(&store, id)?;
        let key = match &args.key {
            Some(file) => {
                let text = std::fs::read_to_string(file)
                    .map_err(|err| anyhow::anyhow!("cannot read {}: {err}", file.display()))?;
                PublicKey::from_openssh(text.trim())?
            }
            None => match ctx.trust(&store)?.lookup(&e.receipt.signature().key) {
                Some(t) => t.key.clone(),
                None => bail!(
                    "receipt {} is signed by {}, which is not a trusted key here\nhint: pass the signer's public key with --key FILE",
                    e.receipt.id(),
                    e.receipt.signature().key
                ),
            },
        };
        if key.fingerprint() != e.receipt.signature().key {
            bail!(
                "the key given is {}, but receipt {} is signed by {}",
                key.fingerprint(),
                e.receipt.id(),
                e.receipt.signature().key
            );
        }
        print!("{}", armor_sshsig(&key, &e.receipt.raw_signature()));
        return Ok(ExitCode::SUCCESS);
    }

    if let Some(id) = &args.log {
        return show_log(&store, id, args.remote.as_deref());
    }
    let rev = args.rev.as_deref().unwrap_or("HEAD");
    let commit = store.resolve_commit(rev)?;
    let trust = ctx.trust(&store)?;
    // Candidates come from the receipt index (built from the chains, never from
    // notes); each is opened and listed only if its signed subject is this commit.
    let mut index = store.receipt_index()?;
    let mut shown: Vec<(String, ChainEntry)> = Vec::new();
    for hit in store.index_lookup(&mut index, &commit)? {
        if hit.role != Role::Subject {
            continue;
        }
        let writer = index.writer(hit.record.chain).to_owned();
        // fail closed: a corrupt receipt about this commit is an error, not a gap
        let entry = store.chain_entry(&writer, hit.record.commit)?;
        if gix::ObjectId::from_hex(entry.receipt.body().subject.commit.as_bytes()).ok()
            != Some(commit)
            || entry.receipt.body().chain.writer != writer
        {
            continue;
        }
        shown.push((writer, entry));
    }
    shown.sort_by(|a, b| {
        b.1.receipt
            .body()
            .result
            .started_at
            .cmp(&a.1.receipt.body().result.started_at)
    });
    if args.json {
        let arr: Vec<_> = shown
            .iter()
            .map(|(writer, e)| {
                let (status, by) = check_signature(&trust, &e.receipt).json();
                let envelope: serde_json::Value =
                    serde_json::from_slice(e.receipt.bytes()).expect("parsed before");
                json!({
                    "id": e.receipt.id(),
                    "writer": writer,
                    "chain_commit": e.commit.to_string(),
                    "signature_status": status,
                    "signature_detail": by,
                    "receipt": envelope,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&arr)?);
        return Ok(ExitCode::SUCCESS);
    }
    if shown.is_empty() {
        eprintln!(
            "git-receipt: no receipts for {rev} ({})\nhint: `git receipt run <check>` writes one",
            short(&commit)
        );
        return Ok(ExitCode::from(1));
    }
    let on = colour(std::io::stdout().is_terminal());
    let mut out = String::new();
    for (writer, e) in &shown {
        let b = e.receipt.body();
        let state = if b.result.passed {
            paint(on, "32", "passed")
        } else {
            paint(on, "31", "failed")
        };
        let sig = match check_signature(&trust, &e.receipt) {
            SigStatus::Verified(o) => format!("verified ({o})"),
            SigStatus::Untrusted => paint(on, "33", "untrusted key"),
            SigStatus::Refused(why) => paint(on, "33", &format!("untrusted key: {}", escape(&why))),
            SigStatus::Invalid(why) => paint(on, "31", &format!("INVALID: {}", escape(&why))),
        };
        out.push_str(&format!(
            "receipt {}\n  check    {} {state}, exit {}{}, {}\n  subject  commit {} tree {} inputs {}{}\n  started  {}  ({})\n  writer   {} #{}\n  signed   {} {sig}\n",
            e.receipt.id(),
            escape(&b.check.name),
            b.result.exit_code,
            if b.result.detail.is_empty() { String::new() } else { format!(" ({})", escape(&b.result.detail)) },
            human_ms(b.result.duration_ms),
            &b.subject.commit[..7],
            &b.subject.tree[..7],
            &b.subject.inputs[..7],
            if b.subject.dirty { " (uncommitted changes)" } else { "" },
            b.result.started_at,
            match b.result.mode {
                git_receipt::receipt::Mode::Run => "run",
                git_receipt::receipt::Mode::Record => "recorded",
            },
            escape(writer),
            b.chain.index,
            escape(&e.receipt.signature().key),
        ));
        out.push_str(&format!(
            "  command  {}\n",
            escape(&shell_words(&b.check.argv))
        ));
        if let Some(log) = &b.result.log {
            out.push_str(&format!(
                "  log      {} ({} bytes{})\n",
                escape(log),
                b.result.output_bytes,
                if b.result.log_truncated {
                    ", truncated"
                } else {
                    ""
                }
            ));
        }
        out.push('\n');
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `show --log ID`: the stored log, from this clone, the chain commit (v1) or the
/// remote, always checked against what the receipt signed before it is printed.
fn show_log(store: &Store, id: &str, remote: Option<&str>) -> Result<ExitCode> {
    use git_receipt::store::logs::{FetchedLog, log_mismatch, log_ref};
    let (writer, e) = find_receipt(store, id)?;
    let b = e.receipt.body();
    let Some(blob) = b.result.log.as_deref() else {
        eprintln!(
            "git-receipt: receipt {} has no log: the check printed nothing",
            e.receipt.id()
        );
        return Ok(ExitCode::SUCCESS);
    };
    let blob = gix::ObjectId::from_hex(blob.as_bytes())?;
    let remote = remote
        .map(str::to_owned)
        .or_else(|| store.config_string("receipt.remote"))
        .unwrap_or_else(|| "origin".to_owned());
    let tails = || {
        eprintln!("git-receipt: the receipt's signed output tails:");
        print!(
            "--- stdout (last {} bytes)\n{}--- stderr (last {} bytes)\n{}",
            b.result.stdout_tail.len(),
            terminal_safe(&b.result.stdout_tail),
            b.result.stderr_tail.len(),
            terminal_safe(&b.result.stderr_tail)
        );
    };
    let bytes = match store.log_bytes(blob)? {
        Some(bytes) => bytes,
        None if !store.has_remote(&remote)? && !remote.contains('/') && !remote.contains(':') => {
            eprintln!(
                "git-receipt: this clone does not have the log of receipt {} ({blob}), and there is no remote {remote:?} to fetch it from\nhint: pass --remote NAME",
                e.receipt.id()
            );
            tails();
            return Ok(ExitCode::from(1));
        }
        None => match store.fetch_log(&remote, &writer, blob)? {
            FetchedLog::Bytes(bytes) => bytes,
            FetchedLog::Absent => {
                eprintln!(
                    "git-receipt: nobody pushed the log of receipt {} to {remote} (its writer's receipt.pushLogs kept it local, or it was pruned)",
                    e.receipt.id()
                );
                tails();
                return Ok(ExitCode::from(1));
            }
            FetchedLog::Mismatch(why) => {
                eprintln!(
                    "git-receipt: refusing the log of receipt {} from {remote}: {why}",
                    e.receipt.id()
                );
                tails();
                return Ok(ExitCode::from(1));
            }
        },
    };
    if let Some(why) = log_mismatch(b, &blob, &bytes) {
        eprintln!(
            "git-receipt: refusing the log of receipt {}: {why}",
            e.receipt.id()
        );
        tails();
        return Ok(ExitCode::from(1));
    }
    // keep what was fetched, under its log ref (v2 logs; v1 logs live in the chain)
    if b.result.log_bytes.is_some() && store.ref_value(&log_ref(&writer, &blob))?.is_none() {
        store.set_log_ref(&writer, blob)?;
    }
    let mut out = std::io::stdout();
    if out.is_terminal() {
        out.write_all(terminal_safe(&String::from_utf8_lossy(&bytes)).as_bytes())?;
    } else {
        out.write_all(&bytes)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Text from a receipt or its log, safe to print on a terminal: control
/// characters but newline and tab are shown escaped.
fn terminal_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
