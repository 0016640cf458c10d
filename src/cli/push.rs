//! `git receipt push`: this clone's chains and notes to a remote.

use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Args;

use git_receipt::sync::{self, LogPolicy, PushOutcome};

use super::Context;
use super::status::Fix as _;
use super::status::RunCommand as _;
use git_receipt::text::escape;

/// Push this clone's receipt chains and notes to a remote.
///
/// Pushes refs/receipts/<writer> and refs/notes/receipts/<writer> for each chain
/// of your key, with `git push --atomic` (the chain as a fast-forward, the notes
/// with a lease). If the same key wrote elsewhere and the chains diverged, your
/// unpushed receipts are re-appended on the remote's tip (re-signed, new index and
/// prev) and the push is retried; one whose result the remote's new receipts hold
/// already (the same idempotency key and result, or the same receipt) is left out,
/// and one whose key they hold for another result stops the push. Other writers
/// never conflict: they own other refs.
///
/// Full output logs travel as git config receipt.pushLogs says (all, failed or
/// none; default failed: the logs a reviewer needs), each at most
/// receipt.pushLogLimit bytes (default 1 MiB); --logs pushes every log of yours.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The remote (default origin).
    pub remote: Option<String>,
    /// Push every full output log of yours too, whatever its size or result.
    #[arg(long)]
    pub logs: bool,
    /// Also push the current branch, in the same atomic push, after checking
    /// its receipts as the pre-push hook does: one connection instead of two.
    #[arg(long)]
    pub with_branch: bool,
}

pub(super) use git_receipt::policy::push::PushPlan;

/// Push every own chain; print one line per writer.
pub(super) fn push_own(
    ctx: &Context,
    store: &git_receipt::store::Store,
    remote: &str,
    plan: &PushPlan,
) -> Result<Vec<PushOutcome>> {
    let all_logs = plan.all_logs;
    let logs = if all_logs {
        LogPolicy::everything()
    } else {
        LogPolicy::from_config(store).map_err(anyhow::Error::msg)?
    };
    let key = ctx.signing_key(store)?;
    let chain = ctx.chain_name(store)?;
    let mut writers = sync::own_writers(store, &key, &chain)?;
    writers.retain(|w| !plan.carried.contains(w));
    let mut out = Vec::new();
    for (i, w) in writers.iter().enumerate() {
        // the branch travels with the first chain's push
        let also = if i == 0 { &plan.also[..] } else { &[] };
        out.push(sync::push_writer(
            store,
            remote,
            w,
            &key,
            &logs,
            plan.skip_unchanged,
            also,
        )?);
    }
    // pushing can re-append (write objects) and fetches the remote's chain
    store.gc_auto_detached();
    Ok(out)
}

/// Push.
pub fn cmd_push(ctx: &Context, args: PushArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let remote = args.remote.unwrap_or_else(|| "origin".into());
    if !store.has_remote(&remote)? && !remote.contains(['/', ':']) {
        bail!(
            "no remote named {remote:?}\nhint: add one with `git remote add {remote} <url>`, or name another: git receipt push <remote>"
        );
    }
    let mut also = Vec::new();
    if args.with_branch {
        let Some(branch) = store.head_branch() else {
            bail!(
                "--with-branch pushes the current branch, and HEAD names none\nhint: check out a branch, or push it with git push"
            );
        };
        let tip = store
            .head_commit_id()
            .with_context(|| format!("{branch} has no commit to push"))?;
        let refused = lacking_receipts(
            ctx,
            &store,
            &[(branch.clone(), tip)],
            &git_receipt::policy::push::reviewed_branches(&store, &remote),
        )?;
        if !refused.is_empty() {
            eprint!(
                "git-receipt: push to {remote} refused\n{}hint: run the fixes above and push again\n",
                git_receipt::text::escape_lines(&refused)
            );
            return Ok(ExitCode::from(1));
        }
        also.push(format!("{branch}:{branch}"));
    }
    let plan = PushPlan {
        all_logs: args.logs,
        also: also.clone(),
        ..PushPlan::default()
    };
    let outcomes = match push_own(ctx, &store, &remote, &plan) {
        Ok(o) => o,
        // the server said no: a verdict (1), not a failure to decide (2)
        Err(e) if matches!(e.downcast_ref(), Some(sync::PushError::Refused { .. })) => {
            super::report_error(&e);
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e),
    };
    if outcomes.is_empty() && !also.is_empty() {
        // no receipts of yours: the branch alone (it passed the gate above)
        let mut argv = vec!["push", "--no-verify", "--porcelain", remote.as_str()];
        argv.extend(also.iter().map(String::as_str));
        let out = store.run_git(&argv)?;
        if !out.ok {
            bail!(
                "pushing {} to {remote} failed\n{}",
                also.join(" "),
                out.stderr.trim()
            );
        }
    }
    if outcomes.is_empty() {
        eprintln!(
            "git-receipt: no receipts of yours to push\nhint: `git receipt run <check>` writes one"
        );
    }
    let names = super::signer_names(&store);
    for o in outcomes {
        if let Some(why) = &o.repaired {
            eprintln!(
                "git-receipt: {remote}'s {} held commits that are not receipts of yours: {}\ngit-receipt: replaced them with your chain (a lease on exactly that tip); nothing you signed was dropped",
                o.writer,
                git_receipt::text::escape(why)
            );
        }
        let extra = what_happened(&o, &remote);
        let logs = if o.logs > 0 {
            format!(
                ", with {} log{}",
                o.logs,
                if o.logs == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        eprintln!(
            "git-receipt: pushed {} new receipt{} of {} to {remote}{logs}{extra}",
            o.pushed,
            if o.pushed == 1 { "" } else { "s" },
            git_receipt::text::escape(&names.label_with_id(&o.writer))
        );
    }
    for spec in &also {
        let branch = spec.split_once(':').map_or(spec.as_str(), |(b, _)| b);
        eprintln!("git-receipt: pushed {branch} to {remote} with the receipts, in one push");
    }
    Ok(ExitCode::SUCCESS)
}

/// What each pushed ref (remote ref name, local commit) lacks: fresh receipts
/// for its required checks, as the lines of a refusal (empty when all is well).
///
/// A push to one of `reviewed` (remote ref names: `receipt.protectedBranch`, else
/// the remote's HEAD branch) is a push to a protected branch: its required
/// reviews count (a feature branch is pushed in order to be reviewed, the branch
/// it merges into is not), and each check accepts what its `accept-protected`
/// says.
pub(super) fn lacking_receipts(
    ctx: &Context,
    store: &git_receipt::store::Store,
    pushed: &[(String, gix::ObjectId)],
    reviewed: &[String],
) -> Result<String> {
    let mut refused = String::new();
    let mut names = None;
    let cut_chains = super::hints::CutChains::default();
    for (r, local) in pushed {
        let protected = git_receipt::policy::push::reviews_due(reviewed, r);
        let local = *local;
        // A push to a protected branch is judged as one (`accept-protected`).
        let report = super::status::evaluate_rev_for(
            ctx,
            store,
            &local.to_string(),
            None,
            &super::status::Baseline::Own,
            protected,
        )?;
        // Reviews hold only for a protected branch: a feature branch is pushed
        // in order to be reviewed. The server's pre-receive hook holds its own
        // protected branches to them whatever this clone says.
        let verdict =
            report.verdict(&git_receipt::policy::Require::MarkedChecks { reviews: protected });
        if let Some(u) = verdict.undecided.first() {
            refused.push_str(&format!(
                "{r} ({}): cannot decide {}: {}\n",
                local.to_hex_with_len(7),
                u.name,
                u.error
            ));
            continue;
        }
        let failing = verdict.failing;
        if !failing.is_empty() {
            refused.push_str(&format!(
                "{r} ({}) lacks fresh receipts:\n",
                local.to_hex_with_len(7)
            ));
            refused.push_str(&super::status::render_rows_named(
                &failing,
                false,
                names.get_or_insert_with(|| super::signer_names(store)),
            ));
            for s in &failing {
                match s.name.strip_prefix(git_receipt::policy::REVIEW_PREFIX) {
                    Some(_) if report.approval_cannot_count(s).is_some() => {
                        refused.push_str(&format!("  fix: {}\n", report.fix(s)))
                    }
                    Some(review) => refused.push_str(&format!(
                        "  fix: a reviewer runs git receipt review {} --approve --name {review}, then pushes the review\n",
                        local.to_hex_with_len(12)
                    )),
                    None => {
                        refused.push_str(&format!("  fix: {}\n", report.run_command(&s.name)))
                    }
                }
            }
            if let Some(hint) = cut_chains.hint(store, &failing) {
                refused.push_str(&format!("{hint}\n"));
            }
        }
    }
    Ok(refused)
}

/// What a push did besides sending, in words after the count: ` (2 re-appended
/// after the chain diverged; 1 left out: origin already held its result)`, or
/// nothing.
pub(super) fn what_happened(o: &sync::PushOutcome, remote: &str) -> String {
    let mut said = Vec::new();
    if o.reappended > 0 {
        said.push(format!(
            "{} re-appended after the chain diverged",
            o.reappended
        ));
    }
    if o.left_out > 0 {
        said.push(format!(
            "{} left out: {} already held {}",
            o.left_out,
            escape(remote),
            if o.left_out == 1 {
                "its result"
            } else {
                "their results"
            }
        ));
    }
    if said.is_empty() {
        String::new()
    } else {
        format!(" ({})", said.join("; "))
    }
}
