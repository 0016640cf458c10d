//! `git receipt record`: write a receipt for a result produced elsewhere.

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Args;

use git_receipt::receipt::{MAX_IDEMPOTENCY_KEY_BYTES, Mode, is_idempotency_key};
use git_receipt::recorder::{self, Recorded};
use git_receipt::runner::{Captured, Observation, capture, now_ms};
use git_receipt::text::escape;

use super::run::{TAIL_BYTES, resolve_check};
use super::{Context, short_id};

/// Write a receipt for a check whose result was produced elsewhere
///
/// For when the command ran outside git-receipt (another runner, a CI step):
/// records the given exit code and output log against the current work tree, as
/// `"mode": "record"`. The check must be declared in .gitreceipts, or given
/// after `--` as an ad hoc check.
///
/// Keep the log outside the work tree, or the receipt records uncommitted
/// changes (the log itself).
///
/// With --expect-commit REV, nothing is recorded unless the receipt would name
/// REV's commit (HEAD's commit is what it names): a CI step that passes the
/// commit it was started for cannot record a result against another checkout.
/// With --idempotency-key, an upload retried (a CI job or step run again) is
/// recorded once: when your chain already holds the key for the same result
/// (everything but the start time), nothing is written, the receipt that holds it
/// is named, and the exit code is 0; when it holds the key for another result,
/// nothing is written and the exit code is 2.
///
/// Examples:
///
///     cargo test > /tmp/test.log 2>&1; git receipt record test --exit-code $? --log /tmp/test.log
///     git receipt record test --exit-code 0 --expect-commit "$GITHUB_SHA"
///     git receipt record test --exit-code 0 --log /tmp/test.log --idempotency-key "ci-$CI_JOB_ID/test"
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RecordArgs {
    /// The check's name.
    pub name: String,
    /// The exit code the check returned.
    #[arg(long, allow_negative_numbers = true)]
    pub exit_code: i64,
    /// The check's full output (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    pub log: Option<std::path::PathBuf>,
    /// How long the check took, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub duration_ms: u64,
    /// Why the result is not a plain exit code (makes the receipt failed).
    #[arg(long, default_value = "")]
    pub detail: String,
    /// Refuse, recording nothing, unless HEAD's commit (the one the receipt
    /// names) is this revision's commit.
    #[arg(long, value_name = "REV")]
    pub expect_commit: Option<String>,
    /// A name for this one result (1 to 128 printable ASCII characters, no
    /// space; e.g. the CI job's id and the check): a retry with the same key and
    /// result writes nothing.
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// An ad hoc command (what ran), for a check not declared in .gitreceipts.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Refuse when the receipt would name commit `names` rather than `expected`
/// (what `rev` names): the error says both and what to do.
fn expect_commit(rev: &str, expected: gix::ObjectId, names: gix::ObjectId) -> Result<()> {
    if expected == names {
        return Ok(());
    }
    anyhow::bail!(
        "--expect-commit {} is commit {expected}, but HEAD is commit {names}, which the receipt would name: nothing was recorded\nhint: check out the expected commit first (git checkout --detach {expected}), or pass --expect-commit the commit that was tested",
        escape(rev)
    )
}

/// Record the result.
pub fn cmd_record(ctx: &Context, args: RecordArgs) -> Result<ExitCode> {
    if let Some(k) = &args.idempotency_key
        && !is_idempotency_key(k)
    {
        anyhow::bail!(
            "--idempotency-key \"{}\" is not a key: a key is 1 to {MAX_IDEMPOTENCY_KEY_BYTES} printable ASCII characters without spaces\nhint: e.g. --idempotency-key \"ci-$CI_JOB_ID/{}\" (the job that produced the result, and the check)",
            escape(k),
            escape(&args.name)
        );
    }
    let store = ctx.store()?;
    // before anything is made or written (a key, a tree, a receipt)
    let expected = match &args.expect_commit {
        Some(rev) => {
            let expected = store
                .resolve_commit(rev)
                .with_context(|| format!("--expect-commit {}", escape(rev)))?;
            expect_commit(rev, expected, store.resolve_commit("HEAD")?)?;
            Some((rev, expected))
        }
        None => None,
    };
    let (check, _, _) = resolve_check(ctx, &store, &args.name, &args.command, &[], &[])?;
    if let Some(a) = check.assertions.first() {
        anyhow::bail!(
            "check {:?} declares environment assertions ({:?} first), which only `git receipt run` can observe; a recorded result would claim them unseen\nhint: git receipt run {}",
            check.name,
            a.name,
            check.name
        );
    }
    let log_limit = super::run::log_limit(&store)?;
    // Read the log as a run reads output: the first receipt.logLimit bytes, the
    // tail and the count, in bounded memory however large the file is.
    let captured = match &args.log {
        None => Captured::default(),
        Some(p) if p.as_os_str() == "-" => capture(std::io::stdin().lock(), log_limit, TAIL_BYTES)
            .context("reading the log from standard input")?,
        Some(p) => {
            let file = std::fs::File::open(p)
                .with_context(|| format!("reading the log {}", p.display()))?;
            capture(file, log_limit, TAIL_BYTES)
                .with_context(|| format!("reading the log {}", p.display()))?
        }
    };
    let key = ctx.signing_key(&store)?;
    let writer = ctx.writer(&store, &key)?;
    // A clock that may not sign refuses before anything is written.
    store.check_signing_clock(&writer)?;
    let subject = recorder::subject_now(&store, &check)?;
    if let Some((rev, expected)) = expected {
        // HEAD may have moved since it was compared
        expect_commit(rev, expected, subject.commit)?;
    }
    super::run::warn_paths_matching_nothing(&store, &check, subject.tree)?;
    super::run::warn_unmarked(&subject.unmarked);
    let mut obs = Observation {
        exit_code: args.exit_code,
        detail: args.detail.clone(),
        started_at_ms: now_ms().saturating_sub(args.duration_ms),
        duration_ms: args.duration_ms,
        stdout_tail: captured.tail,
        stderr_tail: Vec::new(),
        log_truncated: captured.truncated,
        interrupted: None,
        log: captured.log,
        output_bytes: captured.total,
    };
    let around = recorder::Surroundings {
        assertions: Vec::new(),
        dependencies: git_receipt::environment::resolve_all(store.workdir()?, &check.dependencies)
            .with_context(|| format!("nothing was recorded for check {:?}", check.name))?,
        tests: None,
        metrics: Vec::new(),
        artifacts: super::run::artifacts_after_run(&check, store.workdir()?, &mut obs),
        idempotency_key: args.idempotency_key.clone(),
    };
    let recorded = recorder::store_receipt_once(
        &store,
        &writer,
        &key,
        &check,
        subject,
        &obs,
        Mode::Record,
        &around,
    )?;
    let appended = match recorded {
        Recorded::Written(appended) => appended,
        Recorded::AlreadyRecorded(holder) => {
            eprintln!(
                "git-receipt: already recorded: {} under idempotency key {}, receipt {} ({} #{}); nothing written",
                escape(&check.name),
                escape(args.idempotency_key.as_deref().unwrap_or_default()),
                holder.id,
                writer,
                holder.index
            );
            return Ok(ExitCode::SUCCESS);
        }
        Recorded::KeyHeldForOther(holder) => anyhow::bail!(
            "idempotency key {} already names another result: receipt {} ({} #{}) holds it for a result other than this one (something besides the start time differs); nothing was written\nhint: use a new key for a new result; `git receipt show {}` shows the one recorded",
            escape(args.idempotency_key.as_deref().unwrap_or_default()),
            holder.id,
            writer,
            holder.index,
            short_id(&holder.id)
        ),
    };
    let b = appended.receipt.body();
    eprintln!(
        "git-receipt: recorded {} {} (exit {}), receipt {} ({} #{})",
        check.name,
        if b.result.passed { "passed" } else { "failed" },
        b.result.exit_code,
        short_id(appended.receipt.id()),
        writer,
        b.chain.index
    );
    store.gc_auto_detached();
    Ok(ExitCode::SUCCESS)
}
