//! `git receipt status`: the state of every declared check at a revision.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use serde_json::json;

use git_receipt::contract::Contract;
use git_receipt::freshness::{CheckState, State};
use git_receipt::policy::{self, Judgement, Revision, Trust};
use git_receipt::store::Store;

pub(super) use git_receipt::policy::{Baseline, REVIEW_PREFIX};

use super::{Context, colour, paint, short_id};
use git_receipt::text::escape;

/// Show the state of every check declared in .gitreceipts at a revision, or over a range.
///
/// For each check: present (a trusted passing receipt covers exactly its inputs),
/// failed, stale (an ancestor was checked but its inputs or definition changed
/// since), or missing; with the receipt that decided it and the reason.
/// Without a revision, the work tree as `git receipt run` would test it (its
/// files and its .gitreceipts), saying when it has uncommitted changes. With a
/// range A..B (as `git log A..B` takes it), one row per commit and one column per
/// check: what a reviewer wants for a pull request.
/// Only receipts signed by a trusted key count: your own key, git config
/// receipt.trustedKey, and the signers in .gitreceipts at the revision's trust root:
/// the newest commit on the default branch's first-parent history it descends from.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The revision (default: the work tree on HEAD), or a range A..B.
    #[arg(value_name = "REV|A..B")]
    pub rev: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Under each check, list the per-test results of the receipt that decides it
    /// (checks that declare `results =`); with --json, each check's `tests` has
    /// its `list`.
    #[arg(long)]
    pub tests: bool,
    /// Trust only the signers in .gitreceipts at this revision (e.g. origin/main),
    /// and require what is required there too, as `git receipt gate --trust` does.
    #[arg(long, value_name = "REV")]
    pub trust: Option<String>,
}

/// The trust `status --trust REV` judges by (none: the usual trust root) and the
/// requirements it adds.
type Trusting = (Option<(git_receipt::trust::TrustSet, String)>, Baseline);

/// One revision's evaluation: the library's [`Judgement`].
pub(super) type RevReport = Judgement;

/// The words and commands the CLI attaches to a judgement's rows.
pub(super) trait Fix {
    /// The command (or edit) that makes check `s` present.
    fn fix(&self, s: &CheckState) -> String;
    /// For a review row no approval can make present (its commit's author is
    /// unknown), why: then the fix is to sign the commit, not to approve it.
    fn approval_cannot_count(&self, s: &CheckState) -> Option<String>;
}

impl Fix for RevReport {
    fn approval_cannot_count(&self, s: &CheckState) -> Option<String> {
        let review = s.name.strip_prefix(REVIEW_PREFIX)?;
        self.reasons.iter().find_map(|r| match r {
            policy::Reason::ReviewAuthorUnknown { review: name, .. } if name == review => {
                Some(r.to_string())
            }
            _ => None,
        })
    }

    fn fix(&self, s: &CheckState) -> String {
        if let Some(review) = s.name.strip_prefix(REVIEW_PREFIX) {
            let rev = self.commit.to_hex_with_len(7);
            if self.approval_cannot_count(s).is_some() {
                format!(
                    "no approval counts on {rev} until {}",
                    super::hints::sign_commits(review)
                )
            } else if s.state == State::Failed {
                format!(
                    "address the rejection, then ask for review again: git receipt review {rev} --name {review} --approve"
                )
            } else {
                format!(
                    "a trusted reviewer runs: git receipt review {rev} --name {review} --approve"
                )
            }
        } else if self.undeclared.contains(&s.name) {
            format!(
                "declare [check \"{}\"] in .gitreceipts again, then git receipt run {}",
                s.name, s.name
            )
        } else if s.state == State::Failed {
            // rerunning a failing check only fails again: the fix is in the code
            let run = self.run_command(&s.name);
            match &s.decider {
                Some(d) if d.receipt.body().result.log.is_some() => format!(
                    "fix what made {} fail (its log: git receipt show --log {}), then {run}",
                    s.name,
                    short_id(d.receipt.id()),
                ),
                _ => format!("fix what made {} fail, then {run}", s.name),
            }
        } else {
            self.run_command(&s.name)
        }
    }
}

/// The command whose receipt would count for check `name`, in words: `git
/// receipt run NAME`, run by an observer it names for `accept = run-by:NAMES`.
pub(super) trait RunCommand {
    fn run_command(&self, name: &str) -> String;
}

impl RunCommand for RevReport {
    fn run_command(&self, name: &str) -> String {
        use git_receipt::contract::Accept;
        match self.accept_of(name) {
            Accept::RunBy(names) if names.is_empty() => format!(
                "no run counts until accept = run-by in .gitreceipts here names an observer that the trusted revision's names too; then that observer runs git receipt run {name}"
            ),
            Accept::RunBy(names) => format!(
                "{} runs git receipt run {name}",
                escape(&names.join(" or "))
            ),
            _ => format!("git receipt run {name}"),
        }
    }
}

/// Evaluate every declared check at `rev`.
pub(super) fn evaluate_rev(ctx: &Context, store: &Store, rev: &str) -> Result<RevReport> {
    evaluate_rev_trusting(ctx, store, rev, None, &Baseline::Own)
}

/// `.gitreceipts` at `commit` (empty when there is none), named `label` in errors.
pub(super) fn contract_at(
    store: &Store,
    commit: gix::ObjectId,
    label: &str,
) -> Result<std::sync::Arc<Contract>> {
    Ok(policy::judge::contract_at(store, commit, label)?)
}

/// Evaluate every declared check at `rev`, with a given trust set instead of the
/// one derived from the trust root, held to the requirements of `baseline` too.
pub(super) fn evaluate_rev_trusting(
    ctx: &Context,
    store: &Store,
    rev: &str,
    trust_override: Option<&(git_receipt::trust::TrustSet, String)>,
    baseline: &Baseline,
) -> Result<RevReport> {
    evaluate_rev_for(ctx, store, rev, trust_override, baseline, false)
}

/// [`evaluate_rev_trusting`], judged as for a protected branch when
/// `protected` (each check accepts what its `accept-protected` says).
pub(super) fn evaluate_rev_for(
    ctx: &Context,
    store: &Store,
    rev: &str,
    trust_override: Option<&(git_receipt::trust::TrustSet, String)>,
    baseline: &Baseline,
    protected: bool,
) -> Result<RevReport> {
    let commit = store.resolve_commit(rev)?;
    let contract = contract_at(store, commit, rev)?;
    evaluate_with(
        ctx,
        store,
        rev,
        (commit, None),
        contract,
        trust_override,
        baseline,
        protected,
    )
}

/// [`evaluate_rev_trusting`] for a commit already resolved (`report` evaluates a
/// thousand of them; parsing each id back as a revision would look it up again).
pub(super) fn evaluate_commit_trusting(
    ctx: &Context,
    store: &Store,
    commit: gix::ObjectId,
    trust_override: Option<&(git_receipt::trust::TrustSet, String)>,
    baseline: &Baseline,
) -> Result<RevReport> {
    let rev = commit.to_string();
    let contract = contract_at(store, commit, &rev)?;
    evaluate_with(
        ctx,
        store,
        &rev,
        (commit, None),
        contract,
        trust_override,
        baseline,
        false,
    )
}

/// Judge `contract`'s checks at `commit`, or at `tree` on top of it (the work
/// tree), with the trust and baseline as [`evaluate_rev_trusting`] takes them:
/// the override, or the reader's trust for `commit` ([`Context::trust_for`]);
/// as for a protected branch when `protected`.
#[allow(clippy::too_many_arguments)]
fn evaluate_with(
    ctx: &Context,
    store: &Store,
    rev: &str,
    (commit, tree): (gix::ObjectId, Option<gix::ObjectId>),
    contract: std::sync::Arc<Contract>,
    trust_override: Option<&(git_receipt::trust::TrustSet, String)>,
    baseline: &Baseline,
    protected: bool,
) -> Result<RevReport> {
    let trust = match trust_override {
        Some((t, d)) => Trust::given(t.clone(), d.clone()),
        None => {
            let (set, root) = ctx.trust_for(store, commit)?;
            Trust {
                set,
                description: root.description,
                root: root.commit,
            }
        }
    };
    let revision = Revision {
        label: rev,
        commit,
        tree,
        contract: Some(contract),
    };
    let opts = policy::Options {
        protected,
        ..policy::Options::from_config(store)?
    };
    Ok(policy::judge(store, &revision, &trust, baseline, opts)?)
}

/// Warn on stderr about each declared `path` that names nothing in `tree` (`at`
/// says where): a typo or a pattern (`src/*`) leaves the check's inputs without
/// it, so changes there never make the check stale.
pub(super) fn warn_paths_matching_nothing(
    store: &Store,
    contract: &Contract,
    tree: gix::ObjectId,
    at: &str,
) -> Result<()> {
    for check in &contract.checks {
        for path in store.paths_matching_nothing(tree, &check.paths)? {
            let warning = format!(
                "git-receipt: warning: check {:?}: path {:?} matches nothing at {at}, so no change to it makes the check stale\nhint: correct the path in .gitreceipts (a file or directory, relative to the top, without wildcards)",
                check.name, path
            );
            eprintln!("{}", git_receipt::text::escape_lines(&warning));
        }
    }
    Ok(())
}

/// JSON for one check's state.
pub(super) fn state_json(s: &CheckState) -> serde_json::Value {
    let decider = s.decider.as_ref().map(|d| {
        let b = d.receipt.body();
        json!({
            "id": d.receipt.id(),
            "writer": d.writer,
            "commit": b.subject.commit,
            "started_at": b.time(),
            "passed": b.result.passed,
            "mode": mode_name(b.result.mode),
            "distance": d.distance,
        })
    });
    json!({
        "name": s.name,
        "required": s.required,
        "state": s.state.as_str(),
        "receipt": s.decider.as_ref().map(|d| d.receipt.id().to_owned()),
        "decided_by": decider,
        "reason": s.reason,
        "changed_paths": s.changed_paths,
        "untrusted_receipts": s.untrusted,
        "notices": s.notices,
        // the per-test counts of the deciding receipt (format v4), or null
        "tests": s.decider.as_ref().and_then(|d| d.receipt.body().result.tests.as_ref()).map(|t| json!({
            "format": t.format.as_str(),
            "path": t.path,
            "error": t.error,
            "passed": t.passed,
            "failed": t.failed,
            "skipped": t.skipped,
            "total": t.total,
        })),
    })
}

/// How a receipt's result was obtained, as text and JSON show it.
pub(super) fn mode_name(mode: git_receipt::receipt::Mode) -> &'static str {
    match mode {
        git_receipt::receipt::Mode::Run => "run",
        git_receipt::receipt::Mode::Record => "recorded",
    }
}

pub(super) fn state_colour(state: State) -> &'static str {
    match state {
        State::Present => "32",
        State::Failed => "31",
        State::Stale => "33",
        State::Missing => "31",
    }
}

/// Text rows for one revision, naming writers by their ids.
pub(super) fn render_rows(states: &[&CheckState], on: bool) -> String {
    render_rows_named(states, on, &super::SignerNames::default())
}

/// Text rows for one revision, naming writers as `names` knows them.
pub(super) fn render_rows_named(
    states: &[&CheckState],
    on: bool,
    names: &super::SignerNames,
) -> String {
    let width = states
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = String::new();
    for s in states {
        let state = format!("{:<7}", s.state.as_str());
        let reason = row_reason(s);
        out.push_str(&format!(
            "{:<width$}  {}  {}\n",
            escape(&s.name),
            paint(on, state_colour(s.state), &state),
            escape(&reason)
        ));
        if let Some(d) = &s.decider {
            let b = d.receipt.body();
            out.push_str(&format!(
                "{:<width$}           receipt {} by {} #{} at {} on {} ({})\n",
                "",
                short_id(d.receipt.id()),
                escape(&names.label(&d.writer)),
                b.chain.index,
                b.time(),
                &b.subject.commit[..7],
                match &b.review {
                    Some(r) => match r.verdict {
                        git_receipt::receipt::Verdict::Approve => "approve",
                        git_receipt::receipt::Verdict::Reject => "reject",
                    },
                    None => mode_name(b.result.mode),
                },
            ));
        }
    }
    out
}

/// What the work tree holds that HEAD does not, for `status` without a revision.
struct WorkTree {
    /// The work tree's tree, as `run` would test it, when it differs from HEAD's.
    tree: Option<gix::ObjectId>,
    /// The work tree's `.gitreceipts`, when it differs from HEAD's.
    contract: Option<Contract>,
}

/// Compare the work tree with HEAD: its files (as `run` stages them) and its
/// `.gitreceipts` (as `run` reads it; one that does not parse is the error `run`
/// would give).
fn work_tree_changes(store: &Store, head: gix::ObjectId) -> Result<WorkTree> {
    let workdir = store.workdir()?;
    let committed = store.file_at(head, git_receipt::contract::FILE_NAME)?;
    // at most one byte over the limit: enough to differ, and for `load` to refuse it
    // absent is a state (no contract in the work tree); unreadable is an error,
    // never "changed" or "absent"
    let path = workdir.join(git_receipt::contract::FILE_NAME);
    let unreadable = |e: std::io::Error| anyhow::anyhow!("cannot read {}: {e}", path.display());
    let now = match std::fs::File::open(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(unreadable(e)),
        Ok(f) => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(f, git_receipt::contract::MAX_CONTRACT_BYTES + 1),
                &mut bytes,
            )
            .map_err(unreadable)?;
            Some(bytes)
        }
    };
    let contract = if committed != now {
        Some(Contract::load(workdir).map_err(|e| {
            let mut lines = vec![e.to_string()];
            lines.extend(super::hints::for_chain(&e));
            lines.push("hint: .gitreceipts has uncommitted changes, and `git receipt run` reads this file; fix it, or `git receipt status HEAD` shows the committed one".to_owned());
            anyhow::anyhow!(lines.join("\n"))
        })?)
    } else {
        None
    };
    // after the contract: a `.gitreceipts` over its limit is refused before the
    // work tree (which holds it) is hashed
    let head_tree = store.commit_tree(head)?;
    let subject = store.subject_tree(head_tree)?;
    Ok(WorkTree {
        tree: subject.dirty.then_some(subject.tree),
        contract,
    })
}

/// Every check's state for the work tree as `git receipt run` would test it (its
/// files and its `.gitreceipts`), on top of HEAD's history.
pub(super) fn evaluate_work_tree(ctx: &Context, store: &Store) -> Result<RevReport> {
    Ok(work_tree_report(ctx, store, &(None, Baseline::Own))?.0)
}

fn work_tree_report(
    ctx: &Context,
    store: &Store,
    (trust, baseline): &Trusting,
) -> Result<(RevReport, WorkTree)> {
    let commit = store.resolve_commit("HEAD")?;
    let work = work_tree_changes(store, commit)?;
    if work.tree.is_none() && work.contract.is_none() {
        let report = evaluate_rev_trusting(ctx, store, "HEAD", trust.as_ref(), baseline)?;
        return Ok((report, work));
    }
    let contract = match &work.contract {
        Some(c) => std::sync::Arc::new(c.clone()),
        None => contract_at(store, commit, "HEAD")?,
    };
    let mut report = evaluate_with(
        ctx,
        store,
        "the work tree",
        (commit, work.tree),
        contract,
        trust.as_ref(),
        baseline,
        false,
    )?;
    // the evaluation names the commit it sits on; what it judged is the work tree
    let own = format!("{}'s inputs", commit.to_hex_with_len(7));
    for s in &mut report.states {
        s.reason = s.reason.replace(&own, "the work tree's inputs");
    }
    Ok((report, work))
}

/// A row's reason without its leading `state: ` (the state is its own column:
/// `present  passed on ...`, not `present  present: ...`), with the ignored
/// untrusted receipts counted.
pub(super) fn row_reason(s: &CheckState) -> String {
    let mut reason = s
        .reason
        .strip_prefix(&format!("{}: ", s.state.as_str()))
        .unwrap_or(&s.reason)
        .to_owned();
    if s.untrusted > 0 && s.state != State::Present {
        reason.push_str(&format!(
            " ({} by untrusted keys ignored)",
            super::plural(s.untrusted as u64, "receipt", "receipts")
        ));
    }
    reason
}

/// The commits of range `spec` (`A..B`, as `git log A..B` lists them, newest
/// first), each with its subject line.
pub(super) fn range_commits(store: &Store, spec: &str) -> Result<Vec<(gix::ObjectId, String)>> {
    range_commits_with(store, spec, false)
}

/// [`range_commits`], following only the first parent of each merge when
/// `first_parent` (`git log --first-parent`).
pub(super) fn range_commits_with(
    store: &Store,
    spec: &str,
    first_parent: bool,
) -> Result<Vec<(gix::ObjectId, String)>> {
    let mut args = vec!["log", "--format=%H %s"];
    if first_parent {
        args.push("--first-parent");
    }
    args.extend([spec, "--"]);
    let out = store.run_git(&args)?;
    if !out.ok {
        bail!(
            "cannot list the commits of {}: {}\nhint: give a range as `git log` takes it, e.g. main..feature",
            escape(spec),
            out.stderr
        );
    }
    let mut commits = Vec::new();
    for line in out.stdout.lines() {
        let (hex, subject) = line.split_once(' ').unwrap_or((line, ""));
        commits.push((gix::ObjectId::from_hex(hex.as_bytes())?, subject.to_owned()));
    }
    Ok(commits)
}

/// `status A..B`: one row per commit of the range, one column per check.
fn cmd_status_range(
    ctx: &Context,
    store: &Store,
    spec: &str,
    json_out: bool,
    (trust, baseline): &Trusting,
) -> Result<ExitCode> {
    let commits = range_commits(store, spec)?;
    if trust.is_none() {
        git_receipt::trust::prepare_range(store, commits.len())?;
    }
    let mut rows = Vec::new();
    let mut columns: Vec<String> = Vec::new();
    // oldest first: what a commit's judging asks of its ancestry (its trust
    // root, above all) is then answered from its parents' answers
    for (commit, subject) in commits.iter().rev() {
        let report = evaluate_commit_trusting(ctx, store, *commit, trust.as_ref(), baseline)?;
        rows.push((*commit, subject.clone(), report));
    }
    rows.reverse();
    for (_, _, report) in &mut rows {
        if !report.undecided.is_empty() {
            return Err(report.undecided.swap_remove(0).error.into());
        }
        for s in &report.states {
            if !columns.contains(&s.name) {
                columns.push(s.name.clone());
            }
        }
    }
    if json_out {
        let store_notices = super::notice_words(&ctx.flush_notices());
        let v = json!({
            "range": spec,
            "notices": store_notices,
            "checks": columns,
            "commits": rows.iter().map(|(commit, subject, report)| json!({
                "commit": commit.to_string(),
                "subject": subject,
                "trust": report.trust_root,
                "checks": report.states.iter().map(state_json).collect::<Vec<_>>(),
                "notices": report.notices,
                "reasons": report.reasons,
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        eprintln!("git-receipt: {} has no commits", escape(spec));
        return Ok(ExitCode::SUCCESS);
    }
    for (commit, _, report) in &rows {
        for notice in &report.notices {
            eprintln!(
                "git-receipt: notice: {}: {}",
                commit.to_hex_with_len(7),
                escape(notice)
            );
        }
    }
    let on = colour(std::io::stdout().is_terminal());
    let widths: Vec<usize> = columns.iter().map(|c| c.len().max(7)).collect();
    let mut out = format!("{:<7}", "");
    for (c, w) in columns.iter().zip(&widths) {
        out.push_str(&format!("  {:<w$}", escape(c)));
    }
    out.push('\n');
    for (commit, subject, report) in &rows {
        out.push_str(&commit.to_hex_with_len(7).to_string());
        for (c, w) in columns.iter().zip(&widths) {
            let cell = match report.states.iter().find(|s| &s.name == c) {
                Some(s) => paint(
                    on,
                    state_colour(s.state),
                    &format!("{:<w$}", s.state.as_str()),
                ),
                None => format!("{:<w$}", "-"),
            };
            out.push_str(&format!("  {cell}"));
        }
        out.push_str(&format!("  {}\n", escape(subject)));
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// Print the state of every check.
pub fn cmd_status(ctx: &Context, args: StatusArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let trusting = super::gate::trust_and_baseline(ctx, &store, args.trust.as_deref(), false)?;
    if let Some(spec) = args.rev.as_deref().filter(|r| r.contains("..")) {
        return cmd_status_range(ctx, &store, spec, args.json, &trusting);
    }
    let rev = args.rev.as_deref().unwrap_or("HEAD");
    let (mut report, work) = match (&args.rev, store.workdir()) {
        (None, Ok(_)) => {
            let (report, work) = work_tree_report(ctx, &store, &trusting)?;
            (report, Some(work))
        }
        _ => {
            let (trust, baseline) = &trusting;
            let report = evaluate_rev_trusting(ctx, &store, rev, trust.as_ref(), baseline)?;
            (report, None)
        }
    };
    let contract = match work.as_ref().and_then(|w| w.contract.clone()) {
        Some(c) => std::sync::Arc::new(c),
        None => contract_at(&store, report.commit, rev)?,
    };
    let at = format!("{rev} ({})", report.commit.to_hex_with_len(7));
    let tree = match work.as_ref().and_then(|w| w.tree) {
        Some(t) => t,
        None => store.commit_tree(report.commit)?,
    };
    warn_paths_matching_nothing(&store, &contract, tree, &at)?;
    if let Some(w) = &work {
        if w.tree.is_some() && !args.json {
            eprintln!(
                "git-receipt: the work tree has uncommitted changes on HEAD ({}): these states are the work tree's, as `git receipt run` would test it; `git receipt status HEAD` shows the commit",
                report.commit.to_hex_with_len(7)
            );
        }
        if w.contract.is_some() && !args.json {
            eprintln!(
                "git-receipt: notice: .gitreceipts has uncommitted changes: these are the work tree's checks (what `git receipt run` reads), not HEAD's"
            );
        }
    }
    // status answers for every check: one that cannot be decided makes it exit 2
    if !report.undecided.is_empty() {
        return Err(report.undecided.swap_remove(0).error.into());
    }
    if args.json {
        let v = json!({
            "rev": report.rev,
            "commit": report.commit.to_string(),
            "trust": report.trust_root,
            "work_tree": work.as_ref().map(|w| json!({
                "uncommitted_changes": w.tree.is_some(),
                "contract_uncommitted": w.contract.is_some(),
            })),
            "checks": report.states.iter().map(|s| {
                let mut v = state_json(s);
                if args.tests
                    && let Some(t) = s.decider.as_ref().and_then(|d| d.receipt.body().result.tests.as_ref())
                {
                    v["tests"]["list"] = match git_receipt::results::load_list(&store, t) {
                        Ok(list) => json!(list),
                        Err(why) => { v["tests"]["list_error"] = json!(why); json!(null) }
                    };
                }
                v
            }).collect::<Vec<_>>(),
            "notices": report.notices.iter().cloned()
                .chain(super::notice_words(&ctx.flush_notices()))
                .collect::<Vec<_>>(),
            "reasons": report.reasons,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    for notice in &report.notices {
        eprintln!("git-receipt: notice: {}", escape(notice));
    }
    if report.states.is_empty() {
        let where_ = if work.as_ref().is_some_and(|w| w.contract.is_some()) {
            "in the work tree".to_owned()
        } else {
            format!("at {}", escape(rev))
        };
        println!(
            "no checks declared in .gitreceipts {where_}\nhint: declare one:\n    [check \"test\"]\n        run = <command>"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let on = colour(std::io::stdout().is_terminal());
    let states: Vec<&CheckState> = report.states.iter().collect();
    // names as the trust judged by gives them (gate --trust does the same)
    let names = match &trusting.1 {
        Baseline::At { commit, label } => {
            super::SignerNames::of(&*contract_at(&store, *commit, label)?)
        }
        _ => super::signer_names(&store),
    };
    print!("{}", render_rows_named(&states, on, &names));
    if args.tests {
        for s in &states {
            if let Some(t) = s
                .decider
                .as_ref()
                .and_then(|d| d.receipt.body().result.tests.as_ref())
            {
                print!(
                    "{}:\n{}",
                    escape(&s.name),
                    super::show::tests_lines(&store, t, true, on)
                );
            }
        }
    }
    if states.iter().any(|s| s.state != State::Present) && !store.has_writers()? {
        // a fresh clone: `git clone` brings no refs/receipts/, so all reads missing
        eprintln!(
            "git-receipt: this clone has no receipts at all (nothing under refs/receipts/): a plain `git clone` does not bring them
hint: `git receipt fetch` brings them from the remote (after `git receipt init`, a plain `git fetch` does too); `git receipt run --stale` makes your own"
        );
    }
    Ok(ExitCode::SUCCESS)
}
