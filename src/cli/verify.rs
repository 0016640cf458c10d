//! `git receipt verify`: check every chain and note, report every finding.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Args;

use git_receipt::contract::Contract;
use git_receipt::store::Store;
use git_receipt::trust::TrustSet;
use git_receipt::verify::{self, Checkpoint, Report};

use super::{Context, short_id};
use git_receipt::text::escape;

/// Verify every receipt chain and note in this repository.
///
/// Walks each chain under refs/receipts/ from its root: canonical bytes, closed
/// schema, id, contiguous index, prev links, writer id consistent with the key,
/// and a strict Ed25519 signature by a trusted key inside its validity window;
/// then every note: each line must name a verified receipt whose signed subject is
/// the annotated commit or inputs tree. Reports every finding, not only the first.
/// Exits 0 when all is valid, 1 on any finding, 2 when it cannot verify.
///
/// Trust: --trust REV takes the signers from .gitreceipts at REV (CI passes the
/// target branch, e.g. origin/main, so a change cannot trust itself);
/// --allowed-signers FILE reads OpenSSH's allowed_signers format; with neither,
/// your own key, receipt.trustedKey and the signers at HEAD's trust root (the
/// newest commit on the default branch's first-parent history it descends from),
/// held to the revocations and validity windows at the branch's tip.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Trust the signers in .gitreceipts at this revision.
    #[arg(long, value_name = "REV", conflicts_with = "allowed_signers")]
    pub trust: Option<String>,
    /// Trust the keys in this OpenSSH allowed_signers file.
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
    /// Fail if a chain no longer descends from the tip recorded here, and check
    /// only the receipts after that tip (the checkpoint vouches for the rest);
    /// record the verified tips when everything is valid.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// Start from the newest signed checkpoint (`git receipt checkpoint`) of a
    /// signer the trust set holds: each chain is checked only above the tip it
    /// records (while its key is trusted as it was then), and must still
    /// descend from it. Refused, with why, when every checkpoint here is forged
    /// (an untrusted or revoked signer, a broken signature), stale (the signer's
    /// newest is older than receipt.checkpointMaxAge, default 45d) or dated in
    /// the future.
    #[arg(long, conflicts_with = "checkpoint")]
    pub since_checkpoint: bool,
    /// Count receipts signed by keys outside the trust set as findings, even in
    /// chains no trusted key could have written (by default they count for
    /// nothing and are a notice).
    #[arg(long)]
    pub strict: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// When there are no receipt chains here at all but `rev` requires checks, why a
/// verification that checked nothing is no answer, with the fix.
pub(super) fn nothing_fetched(store: &Store, rev: &str) -> Result<Option<String>> {
    // with no remote, there is nothing to fetch: the checks were just never run
    if store.has_writers()? || store.remote_names().is_empty() {
        return Ok(None);
    }
    let Ok(commit) = store.resolve_commit(rev) else {
        return Ok(None);
    };
    let Some(bytes) = store.file_at(commit, git_receipt::contract::FILE_NAME)? else {
        return Ok(None);
    };
    let Ok(contract) = Contract::parse(&bytes, Path::new(".gitreceipts")) else {
        return Ok(None);
    };
    let required: Vec<&str> = contract
        .checks
        .iter()
        .filter(|c| c.required)
        .map(|c| c.name.as_str())
        .collect();
    if required.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!(
        "there are no receipt chains in this repository (nothing under refs/receipts/), while {} at {} requires {}: nothing was checked\nhint: run `git receipt fetch` first (or `git fetch origin 'refs/receipts/*:refs/receipts/*'`, never forced: a chain only grows)",
        git_receipt::contract::FILE_NAME,
        escape(rev),
        super::plural(required.len() as u64, "check", "checks"),
    )))
}

/// Say how many receipts were set aside as untrusted, on stderr.
pub(super) fn print_untrusted_notice(report: &Report, described: &str) {
    if report.untrusted.is_empty() {
        return;
    }
    eprintln!(
        "git-receipt: notice: {} in {} signed by keys outside the trust ({described}) {} for nothing; `git receipt verify --strict` reports them as findings",
        super::plural(report.untrusted.len() as u64, "receipt", "receipts"),
        super::plural(report.untrusted_chains() as u64, "chain", "chains"),
        if report.untrusted.len() == 1 {
            "counts"
        } else {
            "count"
        },
    );
}

/// The trust set a verifier uses.
pub(super) fn verifier_trust(
    ctx: &Context,
    store: &Store,
    trust_rev: Option<&str>,
    allowed: Option<&Path>,
) -> Result<(TrustSet, String)> {
    if let Some(rev) = trust_rev {
        let commit = store.resolve_commit(rev)?;
        let (trust, notices) = match git_receipt::policy::trust::verifier_at(store, commit, rev) {
            Ok(found) => found,
            Err(e @ git_receipt::policy::PolicyError::NoSigners { .. }) => {
                bail!("{e}\nhint: add [signer \"name\"] key = ... to .gitreceipts on {rev}")
            }
            Err(e) => return Err(e.into()),
        };
        for n in &notices {
            eprintln!(
                "git-receipt: warning: {}\nhint: replace its key line with the output of `git receipt key show` on the signer's machine",
                n.message
            );
        }
        return Ok((trust.set, trust.description));
    }
    if let Some(file) = allowed {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading allowed signers {}", file.display()))?;
        let mut trust = TrustSet::default();
        trust
            .add_allowed_signers(&text, &file.display().to_string())
            .map_err(anyhow::Error::msg)?;
        return Ok((trust, format!("allowed signers in {}", file.display())));
    }
    match store.head() {
        Ok((head, _)) => {
            let (trust, root) = ctx.trust_for(store, head)?;
            let described = match local_trust_words(&trust) {
                Some(local) => format!("{local} and {}", root.description),
                None => root.description,
            };
            Ok((trust, described))
        }
        // no commit yet: only local keys; a HEAD that cannot be read is an error
        Err(git_receipt::store::StoreError::NoCommit) => {
            let trust = ctx.trust(store)?;
            let described = local_trust_words(&trust)
                .unwrap_or_else(|| "no key (no signing key here, no receipt.trustedKey)".into());
            Ok((trust, described))
        }
        Err(e) => Err(e.into()),
    }
}

/// `your key and receipt.trustedKey`, naming only what this clone has: a CI job
/// without a key is not told it verified against one.
fn local_trust_words(trust: &TrustSet) -> Option<String> {
    use git_receipt::trust::TrustOrigin;
    let has = |o: fn(&TrustOrigin) -> bool| trust.keys().any(|t| o(&t.origin));
    let parts: Vec<&str> = [
        ("your key", has(|o| matches!(o, TrustOrigin::OwnKey))),
        (
            "receipt.trustedKey",
            has(|o| matches!(o, TrustOrigin::Config)),
        ),
    ]
    .into_iter()
    .filter_map(|(w, present)| present.then_some(w))
    .collect();
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// Run verification with a progress line on a terminal.
pub(super) fn run_verify(
    store: &Store,
    trust: &TrustSet,
    checkpoint: Option<&Checkpoint>,
) -> Result<Report> {
    let tty = std::io::stderr().is_terminal();
    let mut last = 0;
    let report = verify::verify(store, trust, checkpoint, &mut |n| {
        if tty && n - last >= 2048 {
            last = n;
            eprint!("\rgit-receipt: verifying… {n} receipts");
        }
    })?;
    if tty && last > 0 {
        eprint!("\r\x1b[K");
    }
    Ok(report)
}

/// Print findings in text.
pub(super) fn print_findings(report: &Report) {
    for f in &report.findings {
        let at = match (&f.index, &f.id) {
            (Some(i), Some(id)) => format!("#{i} {}", short_id(id)),
            (Some(i), None) => format!("#{i}"),
            _ => f
                .commit
                .as_deref()
                .map(|c| c.chars().take(7).collect())
                .unwrap_or_default(),
        };
        println!(
            "{} {}: [{}] {}",
            escape(&f.chain),
            escape(&at),
            f.kind,
            escape(&f.reason)
        );
    }
}

/// Verify.
pub fn cmd_verify(ctx: &Context, args: VerifyArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let (trust, described) = verifier_trust(
        ctx,
        &store,
        args.trust.as_deref(),
        args.allowed_signers.as_deref(),
    )?;
    let signed = if args.since_checkpoint {
        Some(signed_start(
            &store,
            &trust,
            git_receipt::checkpoint::Since::Newest,
        )?)
    } else {
        None
    };
    let checkpoint = match &args.checkpoint {
        _ if signed.is_some() => signed
            .as_ref()
            .map(|c| git_receipt::checkpoint::as_verify_checkpoint(c, &trust)),
        Some(p) if p.exists() => {
            let text =
                std::fs::read(p).with_context(|| format!("reading checkpoint {}", p.display()))?;
            let cp = serde_json::from_slice::<Checkpoint>(&text).with_context(|| {
                format!("checkpoint {} is not a git-receipt checkpoint; move it away to start a new one", p.display())
            })?;
            if !(1..=verify::CHECKPOINT_VERSION).contains(&cp.version) {
                bail!(
                    "checkpoint {} has version {}, which this git-receipt does not read\nhint: upgrade git-receipt, or move the file away to start a new checkpoint",
                    p.display(),
                    cp.version
                );
            }
            Some(cp)
        }
        _ => None,
    };
    if let Some(cp) = &checkpoint
        && signed.is_none()
        && !cp.vouches_under(&trust)
    {
        let why = if cp.version < 2 {
            "is version 1, which does not record the trust it was verified against"
        } else {
            "was written against another trust set (a signer added, revoked or re-windowed)"
        };
        eprintln!(
            "git-receipt: the checkpoint {why}: every receipt is checked again (its tips still must hold); a clean run records the current trust"
        );
    }
    let mut report = run_verify(&store, &trust, checkpoint.as_ref())?;
    if let (Some(c), Some(cp)) = (&signed, &checkpoint) {
        // the chains it does not vouch for (their key's trust changed since)
        // were checked whole; they still must not have gone back
        let rest = Checkpoint {
            chains: c
                .payload
                .chains
                .iter()
                .filter(|(w, _)| !cp.chains.contains_key(*w))
                .map(|(w, m)| (w.clone(), m.tip.clone()))
                .collect(),
            ..cp.clone()
        };
        verify::verify_checkpoint(&store, &rest, &mut report)?;
    }
    if !args.strict {
        report.set_aside_untrusted(&trust);
    }
    let empty = nothing_fetched(&store, args.trust.as_deref().unwrap_or("HEAD"))?;
    let clean = report.findings.is_empty() && empty.is_none();
    let mut recorded = false;
    if clean && let Some(p) = &args.checkpoint {
        let cp = Checkpoint::from_report(&report, &trust);
        write_checkpoint_file(p, &serde_json::to_vec_pretty(&cp)?)
            .with_context(|| format!("writing checkpoint {}", p.display()))?;
        recorded = true;
    }
    if args.json {
        let v = serde_json::json!({
            "ok": clean,
            "trust": described,
            "chains": report.chains,
            "receipts": report.receipts,
            "stubs": report.stubs,
            "covered_by_checkpoint": report.covered,
            "note_lines": report.note_lines,
            "notes_covered_by_checkpoint": report.notes_covered,
            "notes_built_here": report.notes_built_here,
            "findings": report.findings,
            "warnings": report.warnings,
            "untrusted": report.untrusted,
            "nothing_fetched": empty,
            "tips": report.tips,
            "checkpoint_written": recorded,
            "signed_checkpoint": signed.as_ref().map(|c| serde_json::json!({
                "signer": c.payload.signer,
                "sequence": c.payload.sequence,
                "time": c.payload.time,
                "commit": c.commit.to_string(),
            })),
            "notices": ctx.flush_notices(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_findings(&report);
        for w in &report.warnings {
            eprintln!(
                "git-receipt: warning: {} {}",
                escape(&w.chain),
                escape(&w.reason)
            );
        }
        print_untrusted_notice(&report, &described);
        let covered = if let Some(c) = &signed {
            format!(
                " ({} more covered by checkpoint #{} of {}, {})",
                report.covered,
                c.payload.sequence,
                escape(&c.payload.signer),
                c.payload.time
            )
        } else if checkpoint.is_some() {
            format!(" ({} more covered by the checkpoint)", report.covered)
        } else {
            String::new()
        };
        // the notes not read again, and why: " (the notes of 2 writers
        // covered by the checkpoint, of 1 writer as git-receipt built ...)"
        let passed_over: Vec<String> = [
            (report.notes_covered, "covered by the checkpoint"),
            (
                report.notes_built_here,
                "as git-receipt built them here from the chains verified",
            ),
        ]
        .into_iter()
        .filter(|&(n, _)| n > 0)
        .map(|(n, why)| format!("{} {why}", super::plural(n as u64, "writer", "writers")))
        .collect();
        let notes_covered = if passed_over.is_empty() {
            String::new()
        } else {
            format!(" (the notes of {})", passed_over.join(", of "))
        };
        let stubs = match report.stubs {
            0 => String::new(),
            n => format!(
                " ({} dropped by retention: their ids kept, their links checked)",
                super::plural(n, "stub", "stubs")
            ),
        };
        eprintln!(
            "git-receipt: verified {}{stubs}{covered} in {} and {}{notes_covered} against {described}: {}",
            super::plural(report.receipts, "receipt", "receipts"),
            super::plural(report.chains as u64, "chain", "chains"),
            super::plural(report.note_lines, "note line", "note lines"),
            if report.findings.is_empty() {
                "all valid".to_owned()
            } else {
                super::plural(report.findings.len() as u64, "finding", "findings")
            }
        );
        if let Some(why) = &empty {
            eprintln!("git-receipt: {why}");
        }
        if recorded {
            eprintln!(
                "git-receipt: checkpoint written to {}",
                args.checkpoint.as_ref().expect("recorded").display()
            );
        } else if !clean && args.checkpoint.is_some() {
            eprintln!("git-receipt: checkpoint left unchanged (it records only clean runs)");
        }
    }
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The signed checkpoint `verify --since-checkpoint` starts from: the newest of
/// a signer `trust` holds, whose chain is fresh. Every signer passed over is
/// named on stderr; none left is an error that names each and the fix.
pub(super) fn signed_start(
    store: &Store,
    trust: &TrustSet,
    since: git_receipt::checkpoint::Since,
) -> Result<git_receipt::checkpoint::Checked> {
    use git_receipt::checkpoint;
    let max_age = checkpoint::max_age_ms(store).map_err(|e| {
        anyhow::anyhow!(
            "{e}\nhint: e.g. `git config {} 45d`",
            checkpoint::MAX_AGE_CONFIG
        )
    })?;
    let chosen = checkpoint::choose(store, trust, git_receipt::clock::now_ms(), max_age, since)?;
    let refused: Vec<String> = chosen
        .refused
        .iter()
        .map(|r| {
            format!(
                "checkpoints of {}: {} ({})",
                escape(&r.signer),
                r.code.to_uppercase(),
                escape(&r.reason)
            )
        })
        .collect();
    match chosen.checkpoint {
        Some(c) => {
            for line in &refused {
                eprintln!("git-receipt: not used: {line}");
            }
            Ok(c)
        }
        None if refused.is_empty() => bail!(
            "there is no signed checkpoint here (nothing under refs/receipt-checkpoints/)\nhint: `git receipt fetch` brings the remote's; a trusted signer makes one with `git receipt checkpoint --push`; without --since-checkpoint (--since) every chain is taken whole"
        ),
        None => bail!(
            "no signed checkpoint here can be started from:\n  {}\nhint: without --since-checkpoint (--since) every chain is taken whole; a trusted signer makes a new checkpoint with `git receipt checkpoint --push`",
            refused.join("\n  ")
        ),
    }
}

/// Write `bytes` to `path` atomically and durably: a temporary file beside it,
/// fsynced, renamed over it, and the directory fsynced. On any failure the
/// temporary file is removed (it is deleted when dropped unpersisted), and the
/// old checkpoint, if any, is left as it was.
fn write_checkpoint_file(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".git-receipt-checkpoint")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    std::fs::File::open(dir)?.sync_all()
}
