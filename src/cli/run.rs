//! `git receipt run`: run a check and write a signed receipt of its result.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Args;

use git_receipt::contract::{minimal_paths, normalize_path};
use git_receipt::environment;
use git_receipt::receipt::{Mode, is_valid_check_name};
use git_receipt::recorder::{self, CheckSpec};
use git_receipt::runner::{self, RunSpec};

use super::status::Fix as _;
use super::{Context, colour, human_ms, paint, short_id};
use git_receipt::text::escape;

/// Say which paths git's index marks hid from `git status` and how the receipt
/// records them: their content on disk, or without them when they are not on
/// disk (a sparse checkout), so the receipt is marked dirty and does not cover
/// HEAD's tree. At most a few are named.
pub(super) fn warn_unmarked(unmarked: &[git_receipt::store::worktree::Unmarked]) {
    use git_receipt::store::worktree::Marked;
    const NAMED: usize = 5;
    for u in unmarked.iter().take(NAMED) {
        let how = match u.marked {
            Marked::AssumeUnchanged => "marked assume-unchanged",
            Marked::SkipWorktree => {
                "marked skip-worktree (a sparse checkout marks what it leaves out)"
            }
        };
        let what = if u.absent {
            "it is not on disk, so the check cannot see it: the receipt records the tree without it"
        } else {
            "it differs on disk from the index: the receipt records what is on disk"
        };
        eprintln!(
            "git-receipt: notice: {} is {how}, so git status does not show it, but {what} (dirty)",
            escape(&u.path)
        );
    }
    if unmarked.len() > NAMED {
        eprintln!(
            "git-receipt: notice: and {} more such paths",
            unmarked.len() - NAMED
        );
    }
}

/// Default cap on the stored output log (8 MiB); set `receipt.logLimit` to change it.
pub const DEFAULT_LOG_LIMIT: usize = 8 << 20;
/// Bytes of each stream kept in the receipt.
pub const TAIL_BYTES: usize = 4096;

/// Run checks and write a signed receipt of each result
///
/// Runs each check NAME declared in .gitreceipts (`sh -c <run>` at the top of the
/// work tree), one after another, or, with a command after `--`, that command as
/// an ad hoc check (also run at the top of the work tree, from any subdirectory). Output streams live; after each check one line on stderr gives
/// its result, duration and receipt id (and, when it failed, how to read its
/// log); after several, one summary. --all runs every declared check; --stale
/// runs every declared check that is not present for the work tree (what the
/// pre-push hook asks for), then names the required reviews not present and
/// the command a reviewer runs to approve each (no command of yours makes a
/// review present). One check exits with its own exit code (a failing
/// check still gets a receipt); several exit 0 when all passed, 1 otherwise; 2 if
/// a receipt could not be stored.
///
/// Over a range: an argument with `..` in it (A..B, as `git log A..B` takes it;
/// not the name of a declared check) runs the checks on each commit of the range, oldest first, in a
/// temporary checkout under .git/receipt-worktrees/, moved to each commit in turn
/// and cleaned of whatever the check before left (your work tree, index and HEAD
/// are not touched; the checkout is removed at the end, and one a killed run left
/// is removed by the next), so each receipt covers that commit. The checks are the NAMEs (each must be declared at every commit of the
/// range), or with --all or --stale every check declared at each commit. A check
/// already present at a commit (a trusted passing receipt for exactly its inputs,
/// as `git receipt status A..B` shows it) is not run again but counted as cached;
/// --force runs it anyway. The run stops at the first commit with a failed check
/// unless -k (--keep-going). One line per commit on stderr, then a total (--json:
/// one object on stdout, and the checks' output only in their logs). Exit 0 when
/// every check passed or was cached, 1 when one failed, 2 if it could not run.
///
/// Examples:
///
///     git receipt run test
///     git receipt run --stale
///     git receipt run lint -- cargo clippy -- -D warnings
///     git receipt run test HEAD~1..HEAD
///     git receipt run --all -k --first-parent origin/main..HEAD
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RunArgs {
    /// The checks to run (one, with a command after `--`), and at most one
    /// range A..B of commits to run them on.
    #[arg(value_name = "NAME|A..B", required_unless_present_any = ["all", "stale"])]
    pub names: Vec<String>,
    /// Run every check declared in .gitreceipts.
    #[arg(long, conflicts_with = "stale")]
    pub all: bool,
    /// Run every declared check that is not present for the work tree.
    #[arg(long)]
    pub stale: bool,
    /// An ad hoc command to run instead of a declared check.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// For an ad hoc check: an input path (repeatable); default the whole tree.
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<String>,
    /// For an ad hoc check: record this environment variable's value (repeatable).
    #[arg(long = "env", value_name = "NAME")]
    pub env: Vec<String>,
    /// With a range: go on past a commit whose check failed.
    #[arg(short = 'k', long)]
    pub keep_going: bool,
    /// With a range: run checks that are already present at a commit too.
    #[arg(long)]
    pub force: bool,
    /// With a range: follow only the first parent of merges (`git log --first-parent`).
    #[arg(long)]
    pub first_parent: bool,
    /// With a range: refuse a range of more than N commits [default: 1000].
    #[arg(long, value_name = "N")]
    pub max_commits: Option<usize>,
    /// With a range: print JSON on stdout instead of the checks' output.
    #[arg(long)]
    pub json: bool,
}

/// How many commits a range run takes without `--max-commits`.
pub const DEFAULT_MAX_COMMITS: usize = 1000;

/// Resolve the check to run: declared in the contract, or ad hoc.
pub(super) fn resolve_check(
    ctx: &Context,
    store: &git_receipt::store::Store,
    name: &str,
    command: &[String],
    paths: &[String],
    env: &[String],
) -> Result<(CheckSpec, Option<std::time::Duration>, bool)> {
    if !is_valid_check_name(name) {
        bail!(
            "{name:?} is not a valid check name\nhint: use letters, digits, '.', '_' and '-', starting with a letter or digit"
        );
    }
    let contract = ctx.contract(store)?;
    let declared = contract.check(name);
    match (declared, command.is_empty()) {
        (Some(def), true) => {
            if !paths.is_empty() || !env.is_empty() {
                bail!(
                    "--path and --env are for ad hoc checks; check {name:?} declares its own in .gitreceipts"
                );
            }
            Ok((
                git_receipt::freshness::spec_in(&contract, def),
                def.timeout,
                true,
            ))
        }
        (Some(_), false) => bail!(
            "check {name:?} is declared in .gitreceipts, so it cannot also be given a command\nhint: run `git receipt run {name}` without `-- ...`, or give the ad hoc check another name"
        ),
        (None, false) => {
            let mut norm = Vec::new();
            for p in paths {
                match normalize_path(p) {
                    Some(n) => norm.push(n),
                    None if git_receipt::receipt::spells_whole_tree(p) => bail!(
                        "--path {p:?} names the whole tree, which is what a check with no --path covers\nhint: leave --path out"
                    ),
                    None => bail!("--path {p:?} is not a relative path inside the repository"),
                }
            }
            let mut env = env.to_vec();
            env.sort();
            env.dedup();
            Ok((
                CheckSpec {
                    name: name.to_owned(),
                    argv: command.to_vec(),
                    paths: minimal_paths(norm),
                    env,
                    ..Default::default()
                },
                None,
                false,
            ))
        }
        (None, true) => {
            let names: Vec<&str> = contract.checks.iter().map(|c| c.name.as_str()).collect();
            let declared = if names.is_empty() {
                "no checks are declared (no .gitreceipts, or it is empty)".to_owned()
            } else {
                format!("declared checks: {}", names.join(", "))
            };
            bail!(
                "no check named {name:?} in .gitreceipts; {declared}\nhint: declare it:\n    [check \"{name}\"]\n        run = <command>\nor run it ad hoc: git receipt run {name} -- <command>"
            )
        }
    }
}

/// Warn about each declared path that matches nothing in `tree` (a typo, or a
/// wildcard): no change to it can ever make the check stale.
pub(super) fn warn_paths_matching_nothing(
    store: &git_receipt::store::Store,
    check: &CheckSpec,
    tree: gix::ObjectId,
) -> Result<()> {
    for path in store.paths_matching_nothing(tree, &check.paths)? {
        let warning = format!(
            "git-receipt: warning: check {:?}: path {:?} matches nothing in the work tree, so no change to it makes the check stale\nhint: correct the path in .gitreceipts (a file or directory, relative to the top, without wildcards)",
            check.name, path
        );
        eprintln!("{}", git_receipt::text::escape_lines(&warning));
    }
    Ok(())
}

/// `receipt.logLimit`: bytes of output kept in the stored log. A value that is not
/// a size (negative, or not a number) is refused rather than read as 0 or the default.
pub(super) fn log_limit(store: &git_receipt::store::Store) -> Result<usize> {
    match store.config_string("receipt.logLimit") {
        None => Ok(DEFAULT_LOG_LIMIT),
        Some(text) => match store.config_integer("receipt.logLimit") {
            Some(n) if n >= 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => bail!(
                "receipt.logLimit = {text:?} is not a size in bytes\nhint: e.g. `git config receipt.logLimit 8m` (0 keeps no log)"
            ),
        },
    }
}

/// What one check's run came to, for the summary.
struct Outcome {
    name: String,
    passed: bool,
    exit_code: i64,
    duration_ms: u64,
    id: String,
    /// Whether a full log was kept (none when an assertion stopped the check).
    has_log: bool,
}

/// Run the checks, store their receipts, exit with the one check's code or the
/// verdict over several.
pub fn cmd_run(ctx: &Context, args: RunArgs) -> Result<ExitCode> {
    // a check may be named `v1..2`: such a declared name is a name, not a range
    let declared: Vec<String> = if args.names.iter().any(|a| a.contains("..")) {
        ctx.store()
            .and_then(|store| ctx.contract(&store))
            .map(|c| c.checks.iter().map(|c| c.name.clone()).collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let (range, names) = split_range(&args.names, &declared)?;
    if let Some(range) = range {
        return cmd_run_range(ctx, &args, &range, names);
    }
    if (args.all || args.stale)
        && let Some(name) = names.first()
    {
        let flag = if args.all { "all" } else { "stale" };
        bail!(
            "--{flag} runs every declared check, so it takes no check name ({name:?})\nhint: name the checks, or give --{flag} alone"
        );
    }
    let range_only = [
        ("--keep-going", args.keep_going),
        ("--force", args.force),
        ("--first-parent", args.first_parent),
        ("--max-commits", args.max_commits.is_some()),
        ("--json", args.json),
    ];
    if let Some((flag, _)) = range_only.iter().find(|(_, given)| *given) {
        bail!(
            "{flag} is for a run over a range of commits, and none was given\nhint: add a range, e.g. git receipt run test main..HEAD"
        );
    }
    let store = ctx.store()?;
    // with --stale: the required reviews not present, each with its fix
    let mut reviews_needed: Vec<String> = Vec::new();
    let names: Vec<String> = if args.all || args.stale {
        let contract = ctx.contract(&store)?;
        let declared: Vec<String> = contract.checks.iter().map(|c| c.name.clone()).collect();
        if declared.is_empty() {
            bail!(
                "no checks are declared in .gitreceipts, so --{} has nothing to run\nhint: declare one:\n    [check \"test\"]\n        run = <command>",
                if args.all { "all" } else { "stale" }
            );
        }
        if args.stale {
            let report = super::status::evaluate_work_tree(ctx, &store)?;
            // a review is a row beside the checks, but no command makes it
            // present: it is named after the run, with who must approve it
            let is_review = |name: &str| name.starts_with(super::status::REVIEW_PREFIX);
            let stale: Vec<String> = report
                .states
                .iter()
                .filter(|s| s.state != git_receipt::freshness::State::Present)
                .filter(|s| !is_review(&s.name))
                .map(|s| s.name.clone())
                .chain(
                    report
                        .undecided
                        .iter()
                        .filter(|u| !is_review(&u.name))
                        .map(|u| u.name.clone()),
                )
                .collect();
            reviews_needed = report
                .states
                .iter()
                .filter(|s| is_review(&s.name) && s.required)
                .filter(|s| s.state != git_receipt::freshness::State::Present)
                .map(|s| format!("  {} ({}): {}\n", s.name, s.state.as_str(), report.fix(s)))
                .collect();
            // a check an older receipt, cut away here, may decide is run all the same
            let rerun: Vec<&git_receipt::freshness::CheckState> = report
                .states
                .iter()
                .filter(|s| !is_review(&s.name))
                .collect();
            if let Some(hint) = super::hints::cut_chains(&store, &rerun) {
                eprintln!("{hint}; --stale runs it here all the same");
            }
            if stale.is_empty() {
                eprintln!(
                    "git-receipt: every declared check is present for the work tree; nothing to run"
                );
                print_reviews_needed(&reviews_needed);
                return Ok(ExitCode::SUCCESS);
            }
            stale
        } else {
            declared
        }
    } else {
        names
    };
    if !args.command.is_empty() && names.len() != 1 {
        bail!(
            "a command after `--` is one ad hoc check: name exactly one\nhint: git receipt run lint -- cargo clippy"
        );
    }
    // every name is checked before anything runs
    let mut resolved = Vec::new();
    for name in &names {
        resolved.push(resolve_check(
            ctx,
            &store,
            name,
            &args.command,
            &args.paths,
            &args.env,
        )?);
    }
    let key = ctx.signing_key(&store)?;
    let writer = ctx.writer(&store, &key)?;
    let label = super::signer_names(&store).label(&writer);
    let mut outcomes = Vec::new();
    let total = resolved.len();
    // several checks: one notes commit for all their receipts, when the run
    // ends however it ends, not one per receipt
    let notes = (total > 1).then(|| {
        store.defer_notes();
        NotesLater {
            store: &store,
            writer: &writer,
        }
    });
    for (check, timeout, declared) in resolved {
        let how = HowToRun {
            timeout,
            declared,
            echo: true,
            fresh_at: None,
        };
        let outcome = match run_one(&store, &writer, &label, &key, &check, &how) {
            Err(e) if let Some(&Interrupted(sig)) = e.downcast_ref::<Interrupted>() => {
                let left = total - outcomes.len() - 1;
                let mut text = format!(
                    "git-receipt: interrupted ({}): {} was stopped and not recorded",
                    signal_name(sig),
                    escape(&check.name)
                );
                if left > 0 {
                    text.push_str(&format!(
                        ", and {} not run",
                        super::plural(left as u64, "check was", "checks were")
                    ));
                }
                if !outcomes.is_empty() {
                    text.push_str(&match outcomes.len() {
                        1 => "; the check before it kept its receipt".to_owned(),
                        n => format!("; the {n} checks before it kept their receipts"),
                    });
                }
                eprintln!("{text}");
                return Ok(ExitCode::from((128 + sig).clamp(0, 255) as u8));
            }
            other => other?,
        };
        outcomes.push(outcome);
    }
    drop(notes);
    store.gc_auto_detached();
    if let [one] = outcomes.as_slice() {
        print_reviews_needed(&reviews_needed);
        // the command's own status; a receipt failed for another reason (its
        // artifacts could not be recorded) is a failure even when it exited 0
        let code = match one.exit_code.clamp(0, 255) as u8 {
            0 if !one.passed => 1,
            c => c,
        };
        return Ok(ExitCode::from(code));
    }
    let on = colour(std::io::stderr().is_terminal());
    let width = outcomes.iter().map(|o| o.name.len()).max().unwrap_or(4);
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    let mut summary = format!(
        "git-receipt: {} of {} passed\n",
        outcomes.len() - failed,
        super::plural(outcomes.len() as u64, "check", "checks")
    );
    for o in &outcomes {
        let state = if o.passed {
            paint(on, "32", "passed")
        } else {
            paint(on, "31", "failed")
        };
        summary.push_str(&format!(
            "  {:<width$}  {state}  {:>8}  {}{}\n",
            escape(&o.name),
            human_ms(o.duration_ms),
            short_id(&o.id),
            if o.passed {
                String::new()
            } else if o.has_log {
                format!(
                    "  exit {}; its log: git receipt show --log {}",
                    o.exit_code,
                    short_id(&o.id)
                )
            } else {
                format!("  exit {}; no log was kept", o.exit_code)
            }
        ));
    }
    eprint!("{summary}");
    print_reviews_needed(&reviews_needed);
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// After `run --stale`: the reviews it could not run (no command makes a review
/// present), each with the command a reviewer runs to approve it.
fn print_reviews_needed(lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let text = format!(
        "git-receipt: still needed, and not runnable ({}):\n{}",
        super::plural(lines.len() as u64, "review", "reviews"),
        lines.concat()
    );
    eprint!("{}", git_receipt::text::escape_lines(&text));
}

/// A run stopped by a signal before the command ended: nothing is recorded.
#[derive(Debug)]
struct Interrupted(i32);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by {}", signal_name(self.0))
    }
}

impl std::error::Error for Interrupted {}

/// How a user knows an interrupting signal.
fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT, Ctrl-C",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP, the terminal closed",
        _ => "a signal",
    }
}

/// Warn when the check changed its own inputs while it ran (pytest's
/// `__pycache__` under a declared path, a build writing into `src/`): the
/// receipt covers the inputs as they were before, so the work tree no longer
/// matches it and `status` reads it stale at once. Advisory: when the work tree
/// cannot be read again, nothing is said.
fn warn_inputs_changed_by_run(
    store: &git_receipt::store::Store,
    check: &CheckSpec,
    before: gix::ObjectId,
) {
    let after = store.head().and_then(|(_, head_tree)| {
        let now = store.subject_tree(head_tree)?;
        store.inputs_tree(now.tree, &check.paths, true)
    });
    let Ok(after) = after else { return };
    if after == before {
        return;
    }
    let changed: Vec<String> = store
        .changed_paths(before, after, &[])
        .unwrap_or_default()
        .iter()
        .map(|p| escape(p).into_owned())
        .collect();
    eprintln!(
        "git-receipt: warning: {} changed its own inputs while it ran ({}): the receipt covers them as they were before, so it is stale for the work tree as it is now\nhint: keep what the check writes out of its declared paths (add it to .gitignore, as __pycache__/ or target/), then run it again",
        escape(&check.name),
        if changed.is_empty() {
            "files under its paths".to_owned()
        } else {
            git_receipt::text::list_paths(&changed)
        }
    );
}

/// Whether the current directory is the top of the work tree `workdir`.
fn started_at_the_top(workdir: &std::path::Path) -> bool {
    let same = |a: &std::path::Path, b: &std::path::Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y);
    std::env::current_dir().is_ok_and(|here| same(&here, workdir))
}

/// How [`run_one`] runs its check.
struct HowToRun {
    /// Kill it after this long.
    timeout: Option<std::time::Duration>,
    /// Declared in .gitreceipts (not ad hoc).
    declared: bool,
    /// Copy its output to ours as it arrives (not with `--json`).
    echo: bool,
    /// The commit the work tree holds exactly, nothing else (a temporary
    /// checkout just moved there): its subject needs no look at the work tree.
    fresh_at: Option<gix::ObjectId>,
}

/// Run one check and store its receipt; print its line.
fn run_one(
    store: &git_receipt::store::Store,
    writer: &str,
    label: &str,
    key: &git_receipt::sign::SigningKey,
    check: &CheckSpec,
    how: &HowToRun,
) -> Result<Outcome> {
    let HowToRun {
        timeout,
        declared,
        echo,
        fresh_at,
    } = *how;
    let workdir = store.workdir()?.to_owned();
    if !declared && !started_at_the_top(&workdir) {
        eprintln!(
            "{}",
            git_receipt::text::escape_lines(&format!(
                "git-receipt: notice: ad hoc check {:?} runs at the top of the work tree ({}), as declared checks do, not in the current directory",
                check.name,
                workdir.display()
            ))
        );
    }
    // A clock that may not sign refuses before anything runs.
    store
        .check_signing_clock(writer)
        .with_context(|| format!("check {:?} was not run", check.name))?;
    // The subject is what the check is about to see, so compute it first.
    let subject = match fresh_at {
        Some(commit) => recorder::subject_of_commit(store, check, commit)?,
        None => recorder::subject_now(store, check)?,
    };
    warn_paths_matching_nothing(store, check, subject.tree)?;
    warn_unmarked(&subject.unmarked);
    let (dirty, inputs_before) = (subject.dirty, subject.inputs);
    let log_limit = log_limit(store)?;
    // The sibling repositories first: one that cannot be resolved is an error
    // before anything runs, not a receipt.
    let dependencies = environment::resolve_all(&workdir, &check.dependencies)
        .with_context(|| format!("check {:?} was not run", check.name))?;
    let assertions = environment::run_assertions(
        &check.assertions,
        &environment::Substitutions::of(store)?,
        &workdir,
        true,
    );
    // what reading the store had to say comes before the check's own output
    super::flush_store_notices(store);
    let results_before = check
        .results
        .as_ref()
        .and_then(|d| git_receipt::results::stamp_before(d, &workdir));
    let metric_stamps = git_receipt::metrics::metric_stamps(&check.metrics, &workdir);
    // a failed assertion stops the check before it runs: no results to read
    let ran = environment::failure_detail(&assertions).is_none();
    let mut obs = match environment::failure_detail(&assertions) {
        // a failed assertion: the check never runs, and its receipt says why
        Some(detail) => runner::Observation {
            exit_code: 1,
            detail,
            started_at_ms: runner::now_ms(),
            duration_ms: 0,
            stdout_tail: Vec::new(),
            stderr_tail: Vec::new(),
            log: Vec::new(),
            output_bytes: 0,
            log_truncated: false,
            interrupted: None,
        },
        None => runner::run(&RunSpec {
            argv: check.argv.clone(),
            // ad hoc checks too: the receipt names no directory, so the same
            // argv must mean the same run wherever `git receipt run` was started
            cwd: Some(workdir.clone()),
            timeout,
            log_limit,
            tail_bytes: TAIL_BYTES,
            echo,
        }),
    };
    if let Some(sig) = obs.interrupted {
        // a run nobody let finish has no result to sign
        return Err(Interrupted(sig).into());
    }
    let tests = check.results.as_ref().map(|decl| {
        let read = if !ran {
            Err(format!("the check did not run: {}", obs.detail))
        } else {
            git_receipt::results::read_after_run(
                decl,
                &workdir,
                &obs.log,
                obs.log_truncated,
                results_before.as_ref(),
            )
        };
        if let Err(why) = &read {
            eprintln!(
                "{}",
                git_receipt::text::escape_lines(&format!(
                    "git-receipt: warning: check {:?}: its test results could not be read: {why}; the receipt records that, and the check's outcome stands\nhint: check that the runner writes {}:{} (relative to the top of the work tree)",
                    check.name,
                    decl.format.as_str(),
                    decl.path
                ))
            );
        }
        git_receipt::results::record(decl, read)
    });
    let metrics = git_receipt::metrics::read_metrics(
        &check.metrics,
        &workdir,
        &obs.log,
        obs.log_truncated,
        &metric_stamps,
        (!ran).then_some(obs.detail.as_str()),
    );
    for m in metrics.iter().filter(|m| !m.error.is_empty()) {
        eprintln!(
            "{}",
            git_receipt::text::escape_lines(&format!(
                "git-receipt: warning: check {:?}: metric {} could not be read: {}; the receipt records that",
                check.name, m.name, m.error
            ))
        );
    }
    let artifacts = artifacts_after_run(check, &workdir, &mut obs);
    let around = recorder::Surroundings {
        assertions,
        dependencies,
        tests,
        metrics,
        artifacts,
        idempotency_key: None,
    };
    let appended = match recorder::store_receipt_in(
        store,
        writer,
        key,
        check,
        subject,
        &obs,
        Mode::Run,
        &around,
    ) {
        Ok(a) => a,
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!(
                "check {:?} ran (exit {}), but its receipt could not be stored",
                check.name, obs.exit_code
            )));
        }
    };
    let r = appended.receipt.body();
    let on = colour(std::io::stderr().is_terminal());
    let state = if r.result.passed {
        paint(on, "32", "passed")
    } else {
        paint(on, "31", "failed")
    };
    let mut line = format!(
        "git-receipt: {} {state} in {}, receipt {} ({} #{})",
        escape(&check.name),
        human_ms(r.result.duration_ms),
        short_id(appended.receipt.id()),
        escape(label),
        r.chain.index
    );
    if dirty {
        line.push_str(" [uncommitted changes]");
    }
    if !obs.detail.is_empty() {
        line.push_str(&format!(": {}", escape(&obs.detail)));
    }
    if !r.result.passed && r.result.log.is_some() {
        line.push_str(&format!(
            "; its log: git receipt show --log {}",
            short_id(appended.receipt.id())
        ));
    }
    eprintln!("{line}");
    warn_inputs_changed_by_run(store, check, inputs_before);
    Ok(Outcome {
        name: check.name.clone(),
        passed: r.result.passed,
        exit_code: obs.exit_code,
        duration_ms: r.result.duration_ms,
        id: appended.receipt.id().to_owned(),
        has_log: r.result.log.is_some(),
    })
}

/// The range among the positional arguments (the one with `..` in it that is
/// not the name of a `declared` check), and the check names.
fn split_range(args: &[String], declared: &[String]) -> Result<(Option<String>, Vec<String>)> {
    let (ranges, names): (Vec<&String>, Vec<&String>) = args
        .iter()
        .partition(|a| a.contains("..") && !declared.contains(a));
    let names = names.into_iter().cloned().collect();
    match ranges.as_slice() {
        [] => Ok((None, names)),
        [one] if one.starts_with('-') => bail!(
            "{} is not a range of commits\nhint: give it as `git log` takes one, e.g. main..feature",
            escape(one)
        ),
        [one] => Ok((Some((*one).clone()), names)),
        [first, second, ..] => bail!(
            "one range at a time: {} and {}\nhint: run each range on its own",
            escape(first),
            escape(second)
        ),
    }
}

/// What became of one check at one commit of a range.
enum RangeResult {
    /// It ran.
    Ran(Outcome),
    /// It was already present: this receipt.
    Cached(String),
}

impl RangeResult {
    fn word(&self) -> &'static str {
        match self {
            RangeResult::Ran(o) if o.passed => "passed",
            RangeResult::Ran(_) => "failed",
            RangeResult::Cached(_) => "cached",
        }
    }
}

/// One commit of a range, once its checks are done.
struct CommitDone {
    commit: gix::ObjectId,
    subject: String,
    results: Vec<(String, RangeResult)>,
}

impl CommitDone {
    fn failed(&self) -> bool {
        self.results
            .iter()
            .any(|(_, r)| matches!(r, RangeResult::Ran(o) if !o.passed))
    }
}

/// `run ... A..B`: run the checks on every commit of the range, oldest first,
/// each in a temporary checkout of its own.
fn cmd_run_range(
    ctx: &Context,
    args: &RunArgs,
    spec: &str,
    names: Vec<String>,
) -> Result<ExitCode> {
    use git_receipt::policy::rerun::{Need, need};

    if !args.command.is_empty() || !args.paths.is_empty() || !args.env.is_empty() {
        bail!(
            "a run over a range runs declared checks only (no command after `--`, --path or --env)\nhint: declare the check in .gitreceipts, commit it, then git receipt run NAME {}",
            escape(spec)
        );
    }
    if (args.all || args.stale) && !names.is_empty() {
        bail!(
            "--{} runs every check declared at each commit, so it takes no check name ({:?})",
            if args.all { "all" } else { "stale" },
            names[0]
        );
    }
    for name in &names {
        if !is_valid_check_name(name) {
            bail!(
                "{name:?} is not a valid check name\nhint: use letters, digits, '.', '_' and '-', starting with a letter or digit"
            );
        }
    }
    let store = ctx.store()?;
    let max = args.max_commits.unwrap_or(DEFAULT_MAX_COMMITS);
    let mut commits = super::status::range_commits_with(&store, spec, args.first_parent)?;
    commits.reverse();
    if commits.len() > max {
        bail!(
            "{} has {} commits, more than --max-commits {max}\nhint: narrow the range, or raise the limit: --max-commits {}",
            escape(spec),
            commits.len(),
            commits.len()
        );
    }
    if commits.is_empty() {
        if args.json {
            println!("{}", range_json(spec, args, &[], &[]));
        }
        eprintln!(
            "git-receipt: {} has no commits; nothing to run",
            escape(spec)
        );
        return Ok(ExitCode::SUCCESS);
    }
    // which checks, at which commit: all decided before anything runs
    let mut plan: Vec<(gix::ObjectId, String, Vec<String>)> = Vec::new();
    for (commit, subject) in commits {
        let contract = super::status::contract_at(&store, commit, &commit.to_string())?;
        let checks = if names.is_empty() {
            contract.checks.iter().map(|c| c.name.clone()).collect()
        } else {
            for name in &names {
                if contract.check(name).is_none() {
                    bail!(
                        "check {name:?} is not declared in .gitreceipts at {} ({}), a commit of {}\nhint: start the range after the commit that declares it, or use --all",
                        commit.to_hex_with_len(7),
                        escape(&subject),
                        escape(spec)
                    );
                }
            }
            names.clone()
        };
        plan.push((commit, subject, checks));
    }
    let key = ctx.signing_key(&store)?;
    let writer = ctx.writer(&store, &key)?;
    let label = super::signer_names(&store).label(&writer);
    // Ctrl-C between two checks stops the run here, so the checkout is removed
    let _catching = runner::catch_interrupts();
    let mut checkouts = store.checkouts()?;
    for stale in &checkouts.removed_stale {
        eprintln!(
            "git-receipt: removed {}, a temporary checkout left by a run that was killed",
            stale.display()
        );
    }
    let total = plan.len();
    let planned: Vec<gix::ObjectId> = plan.iter().map(|(c, _, _)| *c).collect();
    // what `--json` says of a run stopped by a signal at the `n`th commit
    let stopped = |sig: i32, n: usize, done: &[CommitDone], partial: Option<CommitDone>| {
        args.json.then(|| {
            let mut done: Vec<&CommitDone> = done.iter().collect();
            // the commit it stopped at, with the checks that finished there
            done.extend(partial.as_ref().filter(|p| !p.results.is_empty()));
            interrupted_json(spec, args, &done, &planned[n + 1..], sig, planned[n])
        })
    };
    let on = colour(std::io::stderr().is_terminal());
    let mut done: Vec<CommitDone> = Vec::new();
    let mut not_run: Vec<gix::ObjectId> = Vec::new();
    // made when the first check that has to run needs it, then moved from commit
    // to commit (each check starts from the files a new checkout would have)
    let mut checkout: Option<git_receipt::store::checkout::Checkout> = None;
    // the checkout's store, opened with it and kept as it moves: what one
    // commit's checks read (the chain, the contract's objects) the next reuses
    let mut checkout_store: Option<git_receipt::store::Store> = None;
    // one notes update when the run ends, however it ends, not one per receipt
    let notes = NotesLater {
        store: &store,
        writer: &writer,
    };
    for (n, (commit, subject, checks)) in plan.into_iter().enumerate() {
        if done.last().is_some_and(|d| d.failed()) && !args.keep_going {
            not_run.push(commit);
            continue;
        }
        if let Some(sig) = runner::interrupt_caught() {
            return Ok(interrupted_range(
                sig,
                commit,
                checkout,
                stopped(sig, n, &done, None),
            ));
        }
        let judgement = super::status::evaluate_commit_trusting(
            ctx,
            &store,
            commit,
            None,
            &super::status::Baseline::Own,
        )?;
        let mut results = Vec::new();
        // the store of the checkout once a check has moved it to this commit
        let mut at: Option<&git_receipt::store::Store> = None;
        for name in checks {
            if let Need::Cached { receipt } = need(&judgement, &name, args.force) {
                results.push((name, RangeResult::Cached(receipt)));
                continue;
            }
            let partial = |results: &mut Vec<(String, RangeResult)>| {
                Some(CommitDone {
                    commit,
                    subject: subject.clone(),
                    results: std::mem::take(results),
                })
            };
            if let Some(sig) = runner::interrupt_caught() {
                let json = stopped(sig, n, &done, partial(&mut results));
                return Ok(interrupted_range(sig, commit, checkout, json));
            }
            // the first check to run at a commit moves the checkout there and
            // finds it as moving it left it; a later one, what the checks
            // before it left
            let fresh = at.is_none();
            if fresh {
                let moved = match checkout.as_mut() {
                    Some(made) => made.switch_to(commit).map(|()| None),
                    None => checkouts.checkout(commit).map(Some),
                }
                .with_context(|| format!("cannot check out {}", commit.to_hex_with_len(7)));
                match (moved, runner::interrupt_caught()) {
                    (_, Some(sig)) => {
                        let json = stopped(sig, n, &done, partial(&mut results));
                        return Ok(interrupted_range(sig, commit, checkout, json));
                    }
                    (moved, None) => {
                        if let Some(made) = moved? {
                            checkout = Some(made);
                        }
                    }
                }
                if checkout_store.is_none() {
                    let made = checkout.as_ref().expect("made above");
                    let opened = ctx.store_at(made.path())?;
                    opened.defer_notes();
                    checkout_store = Some(opened);
                }
                at = checkout_store.as_ref();
            }
            let at = at.expect("opened above");
            let (check, timeout, declared) = resolve_check(ctx, at, &name, &[], &[], &[])?;
            let how = HowToRun {
                timeout,
                declared,
                echo: !args.json,
                fresh_at: fresh.then_some(commit),
            };
            match run_one(at, &writer, &label, &key, &check, &how) {
                Err(e) if let Some(&Interrupted(sig)) = e.downcast_ref::<Interrupted>() => {
                    let json = stopped(sig, n, &done, partial(&mut results));
                    return Ok(interrupted_range(sig, commit, checkout, json));
                }
                outcome => results.push((name, RangeResult::Ran(outcome?))),
            }
        }
        let line = results
            .iter()
            .map(|(name, r)| {
                let colour = match r.word() {
                    "passed" => "32",
                    "failed" => "31",
                    _ => "2",
                };
                format!("{} {}", escape(name), paint(on, colour, r.word()))
            })
            .collect::<Vec<_>>()
            .join(", ");
        eprintln!(
            "git-receipt: [{}/{total}] {} {}: {}",
            n + 1,
            commit.to_hex_with_len(7),
            escape(&subject),
            if line.is_empty() {
                "no checks declared".to_owned()
            } else {
                line
            }
        );
        done.push(CommitDone {
            commit,
            subject,
            results,
        });
    }
    drop(checkout_store);
    if let Some(made) = checkout {
        let last = made.commit;
        made.remove().with_context(|| {
            format!(
                "cannot remove the checkout (at {})",
                last.to_hex_with_len(7)
            )
        })?;
    }
    drop(checkouts);
    // the notes are objects too: written before gc looks
    drop(notes);
    store.gc_auto_detached();
    let count = |word: &str| {
        done.iter()
            .flat_map(|d| &d.results)
            .filter(|(_, r)| r.word() == word)
            .count() as u64
    };
    let failed = count("failed");
    let mut summary = format!(
        "git-receipt: {} of {}: {} passed, {failed} failed, {} cached",
        super::plural(done.len() as u64, "commit", "commits"),
        escape(spec),
        super::plural(count("passed"), "check", "checks"),
        count("cached"),
    );
    if !not_run.is_empty() {
        let at = done.last().map(|d| d.commit.to_hex_with_len(7).to_string());
        summary.push_str(&format!(
            "; stopped at {}, the first failure: {} not run\nhint: -k (--keep-going) runs on past a failure",
            at.unwrap_or_default(),
            super::plural(not_run.len() as u64, "commit was", "commits were")
        ));
    }
    eprintln!("{summary}");
    if args.json {
        println!("{}", range_json(spec, args, &done, &not_run));
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Brings a writer's notes up to date with its chain when dropped: the end of a
/// range run, whose appends leave the notes alone ([`Store::defer_notes`]).
///
/// [`Store::defer_notes`]: git_receipt::store::Store::defer_notes
struct NotesLater<'a> {
    store: &'a git_receipt::store::Store,
    writer: &'a str,
}

impl Drop for NotesLater<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.store.index_notes(self.writer) {
            eprintln!(
                "{}",
                git_receipt::text::escape_lines(&format!(
                    "git-receipt: warning: the receipts are stored, but their notes (the display for git log --notes) were not updated: {e}\nhint: git receipt reindex writes them from the chain"
                ))
            );
        }
    }
}

/// Say that a range run was interrupted at `commit`, remove its checkout, print
/// `json` (`--json`: what was done before), and give the exit code for the
/// signal.
fn interrupted_range(
    sig: i32,
    commit: gix::ObjectId,
    checkout: Option<git_receipt::store::checkout::Checkout>,
    json: Option<String>,
) -> ExitCode {
    if let Some(made) = checkout {
        let _ = made.remove();
    }
    eprintln!(
        "git-receipt: interrupted ({}) at {}: a check it stopped was not recorded, and nothing after it ran; the receipts written before it were kept",
        signal_name(sig),
        commit.to_hex_with_len(7)
    );
    if let Some(json) = json {
        println!("{json}");
    }
    ExitCode::from((128 + sig).clamp(0, 255) as u8)
}

/// `run A..B --json` of a run stopped by signal `sig` at commit `at`: what
/// [`range_json`] says of the commits done (with the checks that finished at
/// `at`), `at` and the commits after it as not run, and `interrupted`.
fn interrupted_json(
    spec: &str,
    args: &RunArgs,
    done: &[&CommitDone],
    after: &[gix::ObjectId],
    sig: i32,
    at: gix::ObjectId,
) -> String {
    let mut not_run = vec![at];
    not_run.extend_from_slice(after);
    let mut v = range_value(spec, args, done, &not_run);
    v["interrupted"] = serde_json::json!({
        // the signal's own name, without the words for people (`, Ctrl-C`)
        "signal": signal_name(sig).split(',').next().unwrap_or_default(),
        "at": at.to_string(),
    });
    serde_json::to_string_pretty(&v).expect("JSON of plain values")
}

/// `run A..B --json`: every commit done, with each check's result.
fn range_json(
    spec: &str,
    args: &RunArgs,
    done: &[CommitDone],
    not_run: &[gix::ObjectId],
) -> String {
    let done: Vec<&CommitDone> = done.iter().collect();
    let mut v = range_value(spec, args, &done, not_run);
    v["interrupted"] = serde_json::Value::Null;
    serde_json::to_string_pretty(&v).expect("JSON of plain values")
}

/// The JSON value of [`range_json`].
fn range_value(
    spec: &str,
    args: &RunArgs,
    done: &[&CommitDone],
    not_run: &[gix::ObjectId],
) -> serde_json::Value {
    use serde_json::json;
    let commits: Vec<_> = done
        .iter()
        .map(|d| {
            json!({
                "commit": d.commit.to_string(),
                "subject": d.subject,
                "checks": d.results.iter().map(|(name, r)| match r {
                    RangeResult::Ran(o) => json!({
                        "name": name,
                        "result": r.word(),
                        "receipt": o.id,
                        "exit_code": o.exit_code,
                        "duration_ms": o.duration_ms,
                    }),
                    RangeResult::Cached(id) => json!({
                        "name": name,
                        "result": "cached",
                        "receipt": id,
                        "exit_code": null,
                        "duration_ms": null,
                    }),
                }).collect::<Vec<_>>(),
            })
        })
        .collect();
    let count = |word: &str| {
        done.iter()
            .flat_map(|d| &d.results)
            .filter(|(_, r)| r.word() == word)
            .count()
    };
    json!({
        "range": spec,
        "first_parent": args.first_parent,
        "commits": commits,
        "not_run": not_run.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        "passed": count("passed"),
        "failed": count("failed"),
        "cached": count("cached"),
    })
}

/// The files `check`'s `artifact =` globs match in `workdir` now that it ran
/// (`None` when it declares none). When they cannot all be listed, the run's
/// receipt is failed and says why: evidence of part of a build's outputs would
/// read as all of them.
pub(crate) fn artifacts_after_run(
    check: &CheckSpec,
    workdir: &std::path::Path,
    obs: &mut runner::Observation,
) -> Option<Vec<git_receipt::receipt::Artifact>> {
    if check.artifacts.is_empty() {
        return None;
    }
    match git_receipt::artifacts::collect(workdir, &check.artifacts) {
        Ok(list) => Some(list),
        Err(why) => {
            eprintln!(
                "{}",
                git_receipt::text::escape_lines(&format!(
                    "git-receipt: check {:?}: its artifacts cannot be recorded: {why}; the receipt is failed\nhint: change the artifact = globs in .gitreceipts",
                    check.name
                ))
            );
            obs.detail = if obs.detail.is_empty() {
                format!("artifacts: {why}")
            } else {
                format!("{}; artifacts: {why}", obs.detail)
            };
            Some(Vec::new())
        }
    }
}
