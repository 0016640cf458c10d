//! `git receipt show`: the receipts that bear on a revision (its own, and those
//! that decide its checks through identical inputs), one receipt by id, a
//! receipt's stored log, or its signed bytes for checking with OpenSSH.

use std::io::IsTerminal;
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

/// Show the receipts for a revision, or one receipt by its id
///
/// Lists every receipt, from every writer, whose signed subject is the commit REV
/// (default HEAD), and the receipt that decides each declared check there (as
/// `git receipt status` does: one found by identical inputs on another commit
/// counts too), each with how it was found, its result and whether its signature
/// verifies against a trusted key. Receipts are found through the chains (via the
/// local receipt index), never through notes. Given a receipt id or a unique
/// prefix of one (`sha256:85d2b20bed0b`, as printed everywhere), shows that
/// receipt. Exits 1 when there is nothing to show (text and --json alike).
///
/// Examples:
///
///     git receipt show
///     git receipt show --log HEAD --check test
///
/// To check a receipt with OpenSSH alone:
///
///     git receipt show --body sha256:3f2a > msg
///     git receipt show --sshsig sha256:3f2a > msg.sig
///     ssh-keygen -Y verify -f allowed_signers -I me -n git-receipt -s msg.sig < msg
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ShowArgs {
    /// The revision (default HEAD), or a receipt id or unique id prefix (sha256:...).
    #[arg(value_name = "REV|ID")]
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
    /// With --check NAME, the value is a revision instead, and the log is that of
    /// the receipt deciding check NAME there (`--log HEAD --check test`).
    /// A log this clone lacks is fetched from the remote (just that one log ref).
    /// When nobody pushed it, says so and prints the signed output tails instead
    /// (exit 1). On a terminal, control characters are shown escaped; piped, the
    /// bytes are exactly the log.
    #[arg(long, value_name = "ID|REV", conflicts_with_all = ["rev", "json", "body", "sshsig"])]
    pub log: Option<String>,
    /// With --log REV: show the log of the receipt deciding this check at REV.
    #[arg(long, value_name = "NAME", requires = "log")]
    pub check: Option<String>,
    /// With --log: the remote to fetch a missing log from (default: receipt.remote, or origin).
    #[arg(long, value_name = "REMOTE", requires = "log")]
    pub remote: Option<String>,
    /// List every test of a receipt with per-test results, not only the failed ones.
    #[arg(long)]
    pub tests: bool,
}

/// The `tests` lines of a receipt with per-test results: the counts, then the
/// failed tests (every test with `all`), names escaped.
pub(super) fn tests_lines(
    store: &git_receipt::store::Store,
    t: &git_receipt::receipt::Tests,
    all: bool,
    on: bool,
) -> String {
    use git_receipt::receipt::TestStatus;
    let source = format!("{}:{}", t.format.as_str(), t.path);
    if !t.error.is_empty() {
        return format!(
            "  tests    {}: could not be read ({}): {}\n",
            paint(on, "33", "unknown"),
            escape(&source),
            escape(&t.error)
        );
    }
    let mut out = format!(
        "  tests    {} passed, {} failed, {} skipped of {} ({})\n",
        t.passed,
        t.failed,
        t.skipped,
        t.total,
        escape(&source)
    );
    if t.failed == 0 && !all {
        return out;
    }
    match git_receipt::results::load_list(store, t) {
        Ok(list) => {
            for c in list
                .iter()
                .filter(|c| all || c.status == TestStatus::Failed)
            {
                let status = match c.status {
                    TestStatus::Passed => paint(on, "32", "passed "),
                    TestStatus::Failed => paint(on, "31", "failed "),
                    TestStatus::Skipped => paint(on, "33", "skipped"),
                };
                let took = c
                    .duration_ms
                    .map(|d| format!("  {}", human_ms(d)))
                    .unwrap_or_default();
                out.push_str(&format!("    {status} {}{took}\n", escape(&c.name)));
            }
        }
        Err(why) => out.push_str(&format!(
            "    {}: {}\n",
            paint(on, "31", "the test list cannot be shown"),
            escape(&why)
        )),
    }
    out
}

/// Whether `text` reads as a receipt id or id prefix rather than a revision.
pub(super) fn looks_like_id(text: &str) -> bool {
    text.strip_prefix("sha256:")
        .is_some_and(|h| h.len() >= 4 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Find one receipt by id or unique id prefix (with or without `sha256:`).
///
/// Candidates come from the receipt index (ids' first 8 bytes); each is opened
/// from its chain and compared in full.
pub(super) fn find_receipt(store: &Store, wanted: &str) -> Result<(String, ChainEntry)> {
    let needle = if wanted.starts_with("sha256:") {
        wanted.to_ascii_lowercase()
    } else {
        format!("sha256:{}", wanted.to_ascii_lowercase())
    };
    if needle.len() < "sha256:".len() + 4 {
        bail!(
            "receipt id {:?} is too short; give at least 4 hex digits",
            escape(wanted)
        );
    }
    let hex_part = &needle["sha256:".len()..];
    let index = store.receipt_index()?;
    let mut seen = std::collections::HashSet::new();
    let mut found: Vec<(String, ChainEntry)> = Vec::new();
    for (_, hit) in index.all().map_err(|e| anyhow::anyhow!("{e}"))? {
        let prefix = hex::encode(hit.record.id_prefix);
        let comparable = hex_part.len().min(prefix.len());
        if prefix[..comparable] != hex_part[..comparable] || !seen.insert(hit.record.commit) {
            continue;
        }
        let writer = index.writer(hit.record.chain).to_owned();
        let entry = store.chain_entry(&writer, hit.record.commit)?;
        if entry.receipt.id().starts_with(&needle) {
            found.push((writer, entry));
        }
    }
    if found.is_empty()
        && let Some((writer, s)) = find_stub(store, &needle)?
    {
        bail!(
            "receipt {} was dropped by retention on {}: it was #{} of chain {}, check {:?} on commit {}, started {}; the chain keeps only its id (a stub, nothing of it signed), so it counts for nothing\nhint: a clone fetched before then may still hold it (`git receipt show` there); `git receipt verify` checks the stubs' links",
            s.stub.id,
            escape(&s.stub.dropped_at),
            s.stub.index,
            escape(&writer),
            escape(&s.stub.check),
            escape(&s.stub.subject),
            escape(&s.stub.started_at),
        );
    }
    match found.len() {
        0 => bail!(
            "no receipt {:?} in any chain under refs/receipts/\nhint: `git receipt log` lists them; `git receipt fetch` brings the remote's",
            escape(wanted)
        ),
        1 => Ok(found.pop().expect("one")),
        n => bail!(
            "receipt id {:?} is ambiguous ({n} receipts); give more digits",
            escape(wanted)
        ),
    }
}

/// The retention stub of receipt id `needle` (a prefix), read from every chain:
/// the receipt index holds receipts only, and this is asked only of an id that
/// no receipt here has. The first found, walking chains in writer order.
fn find_stub(
    store: &Store,
    needle: &str,
) -> Result<Option<(String, Box<git_receipt::store::chain::StubEntry>)>> {
    use git_receipt::store::chain::ChainItem;
    for (writer, tip) in store.writers()? {
        let mut hit = None;
        // a chain that does not read is `verify`'s to report: this only looks
        let _ = store.walk_chain_items(&writer, tip, |item| {
            if let ChainItem::Stub(s) = item
                && s.stub.id.starts_with(needle)
            {
                hit = Some(s);
                return Ok(false);
            }
            Ok(true)
        });
        if let Some(s) = hit {
            return Ok(Some((writer, s)));
        }
    }
    Ok(None)
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
        super::output::write_stdout(e.receipt.body_bytes())?;
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

    if let Some(target) = &args.log {
        let id = match &args.check {
            Some(check) => decider_of(ctx, &store, target, check)?,
            None => target.clone(),
        };
        return show_log(&store, &id, args.remote.as_deref());
    }
    let trust = ctx.trust(&store)?;
    let names = super::signer_names(&store);
    let wanted = args.rev.as_deref().unwrap_or("HEAD");
    // an id as printed (`sha256:...`), or bare hex that names no revision here
    let by_id = looks_like_id(wanted)
        || (wanted.len() >= 4
            && wanted.bytes().all(|b| b.is_ascii_hexdigit())
            && store.resolve_commit(wanted).is_err());
    if by_id {
        let (writer, e) = find_receipt(&store, wanted)?;
        let shown = vec![Shown {
            writer,
            entry: e,
            found: vec!["by its id".to_owned()],
        }];
        return print_shown(&store, &shown, &trust, &names, &args);
    }
    let rev = wanted;
    let commit = store.resolve_commit(rev)?;
    let mut shown = receipts_about(&store, commit)?;
    for s in &mut shown {
        s.found.push(format!("its subject is {}", short(&commit)));
    }
    // the receipts that decide the checks here, as `status` reads them; a
    // .gitreceipts that does not parse here leaves only the receipts about it
    let states = match super::status::evaluate_rev(ctx, &store, rev) {
        Ok(report) => report.states,
        // a file that could not be read: an error, never a quieter answer
        Err(e) if e.chain().any(git_receipt::store::is_unreadable) => return Err(e),
        Err(e) => {
            eprintln!(
                "{}",
                git_receipt::text::escape_lines(&format!(
                    "git-receipt: warning: cannot tell which receipts decide the checks at {rev}: {e}"
                ))
            );
            Vec::new()
        }
    };
    for state in &states {
        let Some(d) = &state.decider else { continue };
        let how = format!(
            "decides check {}: {}",
            escape(&state.name),
            escape(&state.reason)
        );
        match shown
            .iter_mut()
            .find(|s| s.entry.receipt.id() == d.receipt.id())
        {
            Some(s) => s.found.push(how),
            None => {
                let entry = entry_of(&store, &d.writer, d.receipt.id(), &d.receipt.body().subject)?;
                shown.push(Shown {
                    writer: d.writer.clone(),
                    entry,
                    found: vec![how],
                });
            }
        }
    }
    if shown.is_empty() && !args.json {
        eprintln!(
            "git-receipt: no receipts for {} ({}), and none decides a check there\nhint: `git receipt run <check>` writes one; `git receipt status {}` shows each check",
            escape(rev),
            short(&commit),
            escape(rev)
        );
        return Ok(ExitCode::from(1));
    }
    print_shown(&store, &shown, &trust, &names, &args)
}

/// One receipt to show, and how it was found.
struct Shown {
    writer: String,
    entry: ChainEntry,
    found: Vec<String>,
}

/// The receipts whose signed subject is `commit`, newest first.
fn receipts_about(store: &Store, commit: gix::ObjectId) -> Result<Vec<Shown>> {
    Ok(entries_about(store, commit)?
        .into_iter()
        .map(|(writer, entry)| Shown {
            writer,
            entry,
            found: Vec::new(),
        })
        .collect())
}

/// The receipts (writer, chain entry) whose signed subject is `commit`, newest first.
pub(super) fn entries_about(
    store: &Store,
    commit: gix::ObjectId,
) -> Result<Vec<(String, ChainEntry)>> {
    // Candidates come from the receipt index (built from the chains, never from
    // notes); each is opened and listed only if its signed subject is this commit.
    let mut index = store.receipt_index()?;
    let mut found: Vec<(String, ChainEntry)> = Vec::new();
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
        found.push((writer, entry));
    }
    found.sort_by(|(_, a), (_, b)| b.receipt.body().time().cmp(a.receipt.body().time()));
    Ok(found)
}

/// The chain entry of receipt `id` by `writer`, found through its inputs tree.
fn entry_of(
    store: &Store,
    writer: &str,
    id: &str,
    subject: &git_receipt::receipt::Subject,
) -> Result<ChainEntry> {
    let mut index = store.receipt_index()?;
    let inputs = gix::ObjectId::from_hex(subject.inputs.as_bytes())?;
    let prefix = git_receipt::store::index::id_prefix(id);
    for hit in store.index_lookup(&mut index, &inputs)? {
        if hit.record.id_prefix != prefix || index.writer(hit.record.chain) != writer {
            continue;
        }
        let entry = store.chain_entry(writer, hit.record.commit)?;
        if entry.receipt.id() == id {
            return Ok(entry);
        }
    }
    Ok(find_receipt(store, id)?.1)
}

/// The id of the receipt deciding `check` at `rev` (for `--log REV --check NAME`).
fn decider_of(ctx: &Context, store: &Store, rev: &str, check: &str) -> Result<String> {
    let report = super::status::evaluate_rev(ctx, store, rev)?;
    let Some(state) = report.states.iter().find(|s| s.name == check) else {
        bail!(
            "no check {:?} is declared in .gitreceipts at {}\nhint: declared there: {}",
            escape(check),
            escape(rev),
            report
                .states
                .iter()
                .map(|s| escape(&s.name))
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    match &state.decider {
        Some(d) => Ok(d.receipt.id().to_owned()),
        None => bail!(
            "no receipt decides check {} at {}: {}\nhint: `git receipt run {}` writes one",
            escape(check),
            escape(rev),
            escape(&state.reason),
            escape(check)
        ),
    }
}

/// Print receipts as text or JSON; exit 1 when there are none (both forms).
fn print_shown(
    store: &git_receipt::store::Store,
    shown: &[Shown],
    trust: &TrustSet,
    names: &super::SignerNames,
    args: &ShowArgs,
) -> Result<ExitCode> {
    let json_out = args.json;
    let code = if shown.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    if json_out {
        let arr: Vec<_> = shown
            .iter()
            .map(|s| {
                let e = &s.entry;
                let (status, by) = check_signature(trust, &e.receipt).json();
                let envelope: serde_json::Value =
                    serde_json::from_slice(e.receipt.bytes()).expect("parsed before");
                json!({
                    "id": e.receipt.id(),
                    "writer": s.writer,
                    "signer": names.name_of(&s.writer),
                    "chain_commit": e.commit.to_string(),
                    "found": s.found,
                    "signature_status": status,
                    "signature_detail": by,
                    "receipt": envelope,
                    // a list kept beside the log, read and checked (or why not)
                    "tests": e.receipt.body().result.tests.as_ref().map(|t| {
                        match git_receipt::results::load_list(store, t) {
                            Ok(list) => json!({ "list": list }),
                            Err(why) => json!({ "list": null, "error": why }),
                        }
                    }),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&arr)?);
        return Ok(code);
    }
    let on = colour(std::io::stdout().is_terminal());
    let mut out = String::new();
    for s in shown {
        let e = &s.entry;
        let b = e.receipt.body();
        let state = if b.result.passed {
            paint(on, "32", "passed")
        } else {
            paint(on, "31", "failed")
        };
        let sig = match check_signature(trust, &e.receipt) {
            SigStatus::Verified(o) => format!("verified ({})", escape(&o)),
            SigStatus::Untrusted => paint(on, "33", "untrusted key"),
            SigStatus::Refused(why) => paint(on, "33", &format!("untrusted key: {}", escape(&why))),
            SigStatus::Invalid(why) => paint(on, "31", &format!("INVALID: {}", escape(&why))),
        };
        out.push_str(&format!("receipt {}\n", escape(e.receipt.id())));
        for how in &s.found {
            out.push_str(&format!("  found    {how}\n"));
        }
        if b.kind != git_receipt::receipt::Kind::Check {
            out.push_str(&decision_lines(b));
            out.push_str(&format!(
                "  writer   {} #{}\n  signed   {} {sig}\n",
                escape(&names.label(&s.writer)),
                b.chain.index,
                escape(&e.receipt.signature().key),
            ));
            continue;
        }
        out.push_str(&format!(
            "  check    {} {state}, exit {}{}, {}\n  subject  commit {} tree {} inputs {}{}\n  started  {}  ({})\n  writer   {} #{}\n  signed   {} {sig}\n",
            escape(&b.check.name),
            b.result.exit_code,
            if b.result.detail.is_empty() { String::new() } else { format!(" ({})", escape(&b.result.detail)) },
            human_ms(b.result.duration_ms),
            escape(b.subject.commit.get(..7).unwrap_or(&b.subject.commit)),
            escape(b.subject.tree.get(..7).unwrap_or(&b.subject.tree)),
            escape(b.subject.inputs.get(..7).unwrap_or(&b.subject.inputs)),
            if b.subject.dirty { " (uncommitted changes)" } else { "" },
            escape(&b.result.started_at),
            match b.result.mode {
                git_receipt::receipt::Mode::Run => "run",
                git_receipt::receipt::Mode::Record => "recorded",
            },
            escape(&names.label(&s.writer)),
            b.chain.index,
            escape(&e.receipt.signature().key),
        ));
        out.push_str(&format!(
            "  command  {}\n",
            escape(&shell_words(&b.check.argv))
        ));
        for a in &b.result.assertions {
            let expected = match &a.expected {
                None => "recorded only".to_owned(),
                Some(git_receipt::receipt::Expectation::Glob(g)) => format!("expect {g:?}"),
                Some(git_receipt::receipt::Expectation::Regex(x)) => format!("match {x:?}"),
            };
            out.push_str(&format!(
                "  assert   {} {}: {}, got {}{}\n",
                escape(&a.name),
                if a.passed {
                    paint(on, "32", "passed")
                } else {
                    paint(on, "31", "failed")
                },
                escape(&expected),
                escape(&format!("{:?}", a.actual)),
                if a.passed {
                    String::new()
                } else {
                    format!(" ({})", escape(&a.detail))
                },
            ));
        }
        if let Some(t) = &b.result.tests {
            out.push_str(&tests_lines(store, t, args.tests, on));
        }
        for m in &b.result.metrics {
            out.push_str(&format!(
                "  metric   {} = {} {} ({} is better){}\n",
                escape(&m.name),
                escape(m.value.as_deref().unwrap_or("?")),
                escape(&m.unit),
                m.better.as_str(),
                if m.error.is_empty() {
                    String::new()
                } else {
                    format!(": {}", escape(&m.error))
                }
            ));
        }
        match &b.result.artifacts {
            Some(list) if list.is_empty() => {
                out.push_str("  artifact none: the artifact = globs matched no file\n")
            }
            Some(list) => {
                for a in list {
                    out.push_str(&format!(
                        "  artifact {} {} bytes {}\n",
                        escape(&a.path),
                        a.size,
                        escape(&a.sha256)
                    ));
                }
            }
            None => {}
        }
        if let Some(k) = &b.result.idempotency_key {
            out.push_str(&format!("  key      {}\n", escape(k)));
        }
        for d in &b.subject.dependencies {
            out.push_str(&format!(
                "  depends  {} commit {} tree {}\n",
                escape(&d.name),
                escape(d.commit.get(..7).unwrap_or(&d.commit)),
                escape(d.tree.get(..7).unwrap_or(&d.tree)),
            ));
        }
        if let Some(log) = &b.result.log {
            out.push_str(&format!(
                "  log      {} ({} bytes{}): git receipt show --log {}\n",
                escape(log),
                b.result.output_bytes,
                if b.result.log_truncated {
                    ", truncated"
                } else {
                    ""
                },
                escape(super::short_id(e.receipt.id())),
            ));
        }
        out.push('\n');
    }
    print!("{out}");
    Ok(code)
}

pub(super) fn shell_words(argv: &[String]) -> String {
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
            git_receipt::text::escape_lines(&b.result.stdout_tail),
            b.result.stderr_tail.len(),
            git_receipt::text::escape_lines(&b.result.stderr_tail)
        );
    };
    // refused from the object header, unread: a log over the display limit, or
    // one of another size than the receipt signed
    if let Some(size) = store.log_size(blob) {
        let why = git_receipt::store::logs::too_large_to_show(size)
            .map(|why| format!("{why}\n{}", super::hints::log_too_large(&blob)))
            .or_else(|| {
                b.result
                    .log_bytes
                    .filter(|&signed| signed != size)
                    .map(|signed| {
                        format!("the log has {size} bytes, but the receipt signed {signed}")
                    })
            });
        if let Some(why) = why {
            eprintln!(
                "git-receipt: refusing the log of receipt {}: {why}",
                e.receipt.id()
            );
            tails();
            return Ok(ExitCode::from(1));
        }
    }
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
            FetchedLog::TooLarge(why) => {
                eprintln!(
                    "git-receipt: refusing the log of receipt {} from {remote}: {why}\n{}",
                    e.receipt.id(),
                    super::hints::log_too_large(&blob)
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
    if std::io::stdout().is_terminal() {
        super::output::write_stdout(
            git_receipt::text::escape_lines(&String::from_utf8_lossy(&bytes)).as_bytes(),
        )?;
    } else {
        super::output::write_stdout(&bytes)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What an acceptance or review receipt says, for `show` (every string escaped).
fn decision_lines(b: &git_receipt::receipt::Body) -> String {
    let mut out = format!(
        "  decision {}\n  subject  commit {} tree {} inputs {}\n  decided  {}\n",
        escape(&b.headline()),
        escape(b.subject.commit.get(..7).unwrap_or(&b.subject.commit)),
        escape(b.subject.tree.get(..7).unwrap_or(&b.subject.tree)),
        escape(b.subject.inputs.get(..7).unwrap_or(&b.subject.inputs)),
        escape(b.time()),
    );
    if let Some(a) = &b.acceptance {
        for c in &a.criteria {
            out.push_str(&format!(
                "  {:<8} {} {}{}\n",
                match c.kind {
                    git_receipt::receipt::CriterionKind::Check => "check",
                    git_receipt::receipt::CriterionKind::Review => "review",
                },
                escape(&c.name),
                c.state.as_str(),
                c.evidence
                    .iter()
                    .map(|id| format!(" {}", escape(super::short_id(id))))
                    .collect::<String>()
            ));
        }
        for u in &a.unresolved {
            out.push_str(&format!(
                "  why      {}: {}\n",
                escape(&u.name),
                escape(&u.reason)
            ));
        }
    }
    if let Some(a) = b.review.as_ref().and_then(|r| r.accepts.as_ref()) {
        for t in &a.tests {
            out.push_str(&format!("  accepts  test {}\n", escape(t)));
        }
        for m in &a.metrics {
            out.push_str(&format!("  accepts  metric {}\n", escape(m)));
        }
        out.push_str(&format!(
            "  of       definition {}\n",
            escape(super::short_id(&a.definition))
        ));
    }
    if let Some(r) = &b.review
        && !r.message.is_empty()
    {
        out.push_str(&format!("  message  {}\n", escape(&r.message)));
    }
    out
}
