//! `git receipt report`: one self-contained HTML page that says what is proven at
//! a revision or over a range, and lets a reviewer drill down to the evidence.
//!
//! The states come from the same evaluation as `status` and `gate`
//! ([`super::status::evaluate_rev_trusting`]); this module only gathers them and
//! writes HTML. Every string a receipt, a commit or a file name carries passes
//! through [`escape_html`]: receipts are written by whoever can push a chain. The
//! page needs no script, fetches nothing (a Content-Security-Policy forbids it
//! too), uses no external font, and stays readable at 390 px: the wide range
//! matrix scrolls inside its own box and stacks into cards on a narrow screen.
//!
//! Size is bounded whatever the repository holds: a stored log is inlined only
//! up to [`LOG_INLINE_CAP`] and while the page's log budget lasts (else it is
//! named by blob id with the command that prints it), and the evidence section
//! stops at [`EVIDENCE_BUDGET`] bytes, saying how many receipts it left out.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Args;

use git_receipt::freshness::{Candidate, Decider, State, open_candidate};
use git_receipt::receipt::{Receipt, Verified};
use git_receipt::store::Store;
use git_receipt::store::index::{Role, check_hash};
use git_receipt::text::escape_html as h;
use git_receipt::trust::{TrustSet, trust_root};

use super::status::Fix as _;
use super::status::{Baseline, RevReport, contract_at, evaluate_commit_trusting, mode_name};
use super::{Context, SignerNames, human_ms, short_id};

/// A stored log larger than this is named by its blob id, never inlined.
pub const LOG_INLINE_CAP: u64 = 256 * 1024;
/// All inlined logs of one page together stay under this.
const LOG_PAGE_BUDGET: usize = 1024 * 1024;
/// The evidence section stops growing past this many bytes of HTML.
pub const EVIDENCE_BUDGET: usize = 1024 * 1024;
/// Output tails are shown up to this many bytes each (their end).
const TAIL_SHOWN: usize = 8 * 1024;
/// First-parent commits walked at most for the history plots.
const HISTORY_WALK: usize = 1000;

/// Write one self-contained HTML page about a revision or a range.
///
/// At the top, the verdict for the revision (the range's tip): accepted when every
/// required check is present, with each check's state and why, in words and
/// colour. Below: one row per commit of the range and one column per check (the
/// deciding receipt's signer and duration on hover or focus); the evidence of
/// each deciding receipt (signer, trust, command, exit code, duration, inputs,
/// output tail and the stored log behind a disclosure); a plot per check of
/// duration and pass/fail over its last receipts on first-parent history; and
/// with --verify, the summary of `git receipt verify`. The states are those
/// `status` and `gate` compute, with the same trust (--trust as `gate --trust`).
/// The page has no script and loads nothing: it works offline and as a CI
/// artifact. Exits 0 when the page is written, whatever its verdict (`gate`
/// is the command whose exit code is the verdict), 2 when it cannot be.
///
/// Examples:
///
///     git receipt report -o receipts.html
///     git receipt report origin/main..HEAD --trust origin/main --verify -o receipts.html
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReportArgs {
    /// The revision (default HEAD), or a range A..B as `git log` takes it.
    #[arg(value_name = "REV|A..B")]
    pub rev: Option<String>,
    /// Write the page to FILE (default: standard output, when it is not a terminal).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Trust only the signers in .gitreceipts at this revision, and require its
    /// required checks too (as `gate --trust`).
    #[arg(long, value_name = "REV")]
    pub trust: Option<String>,
    /// Verify every chain and note first (as `git receipt verify`) and show the summary.
    #[arg(long)]
    pub verify: bool,
    /// Receipts per check in the history plots.
    #[arg(long, value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u16).range(1..=500))]
    pub history: u16,
}

/// One row of the range matrix.
struct Row {
    commit: gix::ObjectId,
    subject: String,
    report: RevReport,
}

/// One plotted receipt.
struct Point {
    commit: gix::ObjectId,
    started_at: String,
    duration_ms: u64,
    passed: bool,
    dirty: bool,
}

/// What `--verify` found, for the page.
struct VerifySummary {
    described: String,
    report: git_receipt::verify::Report,
}

/// Where the tip's evaluation is.
enum Tip {
    /// In the range, at this row.
    Row(usize),
    /// Outside the range (an empty range, or a tip not listed by it).
    Apart(Box<RevReport>),
}

/// Everything the page shows, gathered before a byte of HTML is written.
struct Page {
    spec: String,
    tip_label: String,
    tip: Tip,
    columns: Vec<String>,
    rows: Vec<Row>,
    names: SignerNames,
    trust: TrustSet,
    history: Vec<(String, Vec<Point>)>,
    history_len: usize,
    verify: Option<VerifySummary>,
}

/// Write the report.
pub fn cmd_report(ctx: &Context, args: ReportArgs) -> Result<ExitCode> {
    if args.output.is_none() && std::io::stdout().is_terminal() {
        bail!(
            "the report is an HTML page, not terminal text\nhint: git receipt report -o receipts.html (or redirect standard output)"
        );
    }
    let store = ctx.store()?;
    let spec = args.rev.clone().unwrap_or_else(|| "HEAD".to_owned());
    let is_range = spec.contains("..");
    let tip_rev = if is_range {
        match spec
            .rsplit_once("..")
            .map(|(_, b)| b.trim_start_matches('.'))
        {
            Some("") | None => "HEAD".to_owned(),
            Some(b) => b.to_owned(),
        }
    } else {
        spec.clone()
    };
    let tip_commit = store.resolve_commit(&tip_rev)?;
    // the same trust and requirements `gate` takes from the same flags
    let (trust_override, baseline) =
        super::gate::trust_and_baseline(ctx, &store, args.trust.as_deref(), args.verify)?;
    let (trust, names) = match (&trust_override, &baseline) {
        (Some((t, _)), Baseline::At { commit, label }) => (
            t.clone(),
            SignerNames::of(&*contract_at(&store, *commit, label)?),
        ),
        _ => (
            ctx.trust_for(&store, tip_commit)?.0,
            match trust_root(&store, tip_commit)?.commit {
                Some(root) => SignerNames::of(&*contract_at(&store, root, "the trust root")?),
                None => SignerNames::default(),
            },
        ),
    };
    let verify = if args.verify {
        let (t, described) = match &trust_override {
            Some(t) => t.clone(),
            None => super::verify::verifier_trust(ctx, &store, None, None)?,
        };
        let mut report = super::verify::run_verify(&store, &t, None)?;
        report.set_aside_untrusted(&t);
        Some(VerifySummary { described, report })
    } else {
        None
    };

    let listed = if is_range {
        super::status::range_commits(&store, &spec)?
    } else {
        super::status::range_commits(&store, &format!("{tip_commit}^!"))?
    };
    let (judging, judged_by) = match &trust_override {
        // one trust and one baseline for every commit, as `gate --trust` takes them
        Some(t) => (
            vec![Judging {
                trust: t.clone(),
                baseline: baseline.clone(),
            }],
            vec![0; listed.len()],
        ),
        None => judging_per_trust_root(
            ctx,
            &store,
            &spec_for_roots(is_range, &spec, tip_commit),
            &listed,
            args.verify,
        )?,
    };
    let rows = evaluate_rows(ctx, listed, &judging, &judged_by)?;
    let evaluate = |commit: gix::ObjectId| {
        evaluate_commit_trusting(ctx, &store, commit, trust_override.as_ref(), &baseline)
    };
    // the tip is usually the range's first row; evaluated apart when it is not
    let tip = match rows.iter().position(|r| r.commit == tip_commit) {
        Some(i) => Tip::Row(i),
        None => Tip::Apart(Box::new(evaluate(tip_commit)?)),
    };
    let tip_states = match &tip {
        Tip::Row(i) => &rows[*i].report.states,
        Tip::Apart(r) => &r.states,
    };
    let mut columns: Vec<String> = tip_states.iter().map(|s| s.name.clone()).collect();
    for row in &rows {
        for name in row
            .report
            .states
            .iter()
            .map(|s| &s.name)
            .chain(row.report.undecided.iter().map(|u| &u.name))
        {
            if !columns.contains(name) {
                columns.push(name.clone());
            }
        }
    }
    let history_len = usize::from(args.history);
    let history = history(&store, tip_commit, &columns, &trust, history_len)?;
    let page = Page {
        spec,
        tip_label: format!("{} ({})", tip_rev, tip_commit.to_hex_with_len(7)),
        tip,
        columns,
        rows,
        names,
        trust,
        history,
        history_len,
        verify,
    };
    let (html, verdict) = render(&store, &page)?;
    match &args.output {
        Some(path) => {
            write_atomically(path, html.as_bytes())?;
            eprintln!(
                "git-receipt: wrote {} ({} KiB): {}",
                path.display(),
                html.len().div_ceil(1024),
                verdict
            );
        }
        None => super::output::write_stdout(html.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The trust and the requirements a commit is judged by.
struct Judging {
    /// The trust set, and how it was chosen in words.
    trust: (TrustSet, String),
    /// Whose required checks apply besides the commit's own.
    baseline: Baseline,
}

/// The revisions whose trust roots the rows need: the range, or the one commit.
fn spec_for_roots(is_range: bool, spec: &str, tip: gix::ObjectId) -> String {
    if is_range {
        spec.to_owned()
    } else {
        format!("{tip}^!")
    }
}

/// The trust each commit of the range is judged by, as [`Context::trust_for`]
/// gives it, once per distinct trust root
/// ([`git_receipt::policy::trust::per_trust_root`]).
fn judging_per_trust_root(
    ctx: &Context,
    store: &Store,
    spec: &str,
    listed: &[(gix::ObjectId, String)],
    verify: bool,
) -> Result<(Vec<Judging>, Vec<usize>)> {
    let commits: Vec<gix::ObjectId> = listed.iter().map(|(c, _)| *c).collect();
    let (judging, judged_by) = git_receipt::policy::trust::per_trust_root(
        store,
        spec,
        &commits,
        ctx.own_public_key(store)?,
        verify,
    )?;
    let judging = judging
        .into_iter()
        .map(|(trust, baseline)| Judging {
            trust: (trust.set, trust.description),
            baseline,
        })
        .collect();
    Ok((judging, judged_by))
}

/// Evaluate every commit of the range as `status` does, on every core: each
/// thread opens its own [`Store`] (a repository handle is not shared between
/// threads) and takes every n-th commit; the rows come back in range order.
fn evaluate_rows(
    ctx: &Context,
    listed: Vec<(gix::ObjectId, String)>,
    judging: &[Judging],
    judged_by: &[usize],
) -> Result<Vec<Row>> {
    const PER_THREAD: usize = 25;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(listed.len().div_ceil(PER_THREAD))
        .max(1);
    let reports: Vec<Vec<(usize, RevReport)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let listed = &listed;
                scope.spawn(move || -> Result<Vec<(usize, RevReport)>> {
                    let store = ctx.store()?;
                    let mut out = Vec::new();
                    for (i, (commit, _)) in listed.iter().enumerate().skip(t).step_by(threads) {
                        out.push((
                            i,
                            evaluate_commit_trusting(
                                ctx,
                                &store,
                                *commit,
                                Some(&judging[judged_by[i]].trust),
                                &judging[judged_by[i]].baseline,
                            )?,
                        ));
                    }
                    Ok(out)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("an evaluation thread panicked"))
            .collect::<Result<_>>()
    })?;
    let mut slots: Vec<Option<RevReport>> = listed.iter().map(|_| None).collect();
    for (i, report) in reports.into_iter().flatten() {
        slots[i] = Some(report);
    }
    Ok(listed
        .into_iter()
        .zip(slots)
        .map(|((commit, subject), report)| Row {
            commit,
            subject,
            report: report.expect("every commit evaluated"),
        })
        .collect())
}

/// Write `bytes` to `path` through a temporary file beside it, so a reader (or a
/// CI artifact upload) never sees half a page. The file gets the permissions any
/// new file gets here (the umask decides), not a private temporary file's.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .with_context(|| format!("-o {}: not a file name", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    Ok(())
}

/// For each check, its last `n` trusted receipts on `tip`'s first-parent history,
/// oldest first: the receipts whose signed subject is one of those commits.
fn history(
    store: &Store,
    tip: gix::ObjectId,
    checks: &[String],
    trust: &TrustSet,
    n: usize,
) -> Result<Vec<(String, Vec<Point>)>> {
    let out = store.run_git(&[
        "rev-list",
        "--first-parent",
        &format!("--max-count={HISTORY_WALK}"),
        &tip.to_string(),
    ])?;
    if !out.ok {
        bail!("git rev-list --first-parent {tip}: {}", out.stderr);
    }
    let hashes: Vec<u32> = checks.iter().map(|c| check_hash(c)).collect();
    let mut points: Vec<Vec<Point>> = checks.iter().map(|_| Vec::new()).collect();
    let mut index = store.receipt_index()?;
    for line in out.stdout.lines() {
        if points.iter().all(|p| p.len() >= n) {
            break;
        }
        let commit = gix::ObjectId::from_hex(line.trim().as_bytes())?;
        let hex = commit.to_string();
        let mut here: Vec<(usize, Point)> = Vec::new();
        for hit in store.index_lookup(&mut index, &commit)? {
            let Some(i) = hashes.iter().position(|&c| c == hit.record.check) else {
                continue;
            };
            if hit.role != Role::Subject || points[i].len() >= n {
                continue;
            }
            // only what is signed, by a trusted key, about this very commit counts
            let Candidate::Open { receipt, .. } = open_candidate(store, &index, trust, &hit.record)
            else {
                continue;
            };
            let b = receipt.body();
            if b.check.name != checks[i] || b.subject.commit != hex {
                continue;
            }
            let Ok((r, _)) = trust.check(receipt) else {
                continue;
            };
            let b = r.body();
            here.push((
                i,
                Point {
                    commit,
                    started_at: b.result.started_at.clone(),
                    duration_ms: b.result.duration_ms,
                    passed: b.result.passed,
                    dirty: b.subject.dirty,
                },
            ));
        }
        // newest first within a commit, as the walk goes newest first
        here.sort_by(|a, b| b.1.started_at.cmp(&a.1.started_at));
        for (i, p) in here {
            if points[i].len() < n {
                points[i].push(p);
            }
        }
    }
    Ok(checks
        .iter()
        .cloned()
        .zip(points.into_iter().map(|mut p| {
            p.reverse();
            p
        }))
        .collect())
}

// ------------------------------------------------------------------- rendering

const CSS: &str = r#"
*{box-sizing:border-box}
body{margin:0 auto;max-width:75rem;padding:1rem;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;background:#fff;overflow-wrap:anywhere}
h1{font-size:1.35rem;margin:.2rem 0 .6rem}h2{font-size:1.15rem;margin:1.8rem 0 .6rem;border-bottom:1px solid #d1d9e0;padding-bottom:.2rem}h3{font-size:1rem;margin:0 0 .4rem}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;border:1px solid #d1d9e0;border-radius:4px;padding:.5rem;margin:.3rem 0;max-height:28rem;overflow:auto}
.meta{color:#59636e;margin:.2rem 0}
.verdict{margin:.8rem 0;padding:.7rem 1rem;border-radius:6px;border-left:8px solid;font-size:1.15rem;font-weight:600}
.verdict.yes{border-color:#1a7f37;background:#dafbe1}.verdict.no{border-color:#cf222e;background:#ffebe9}.verdict.none{border-color:#6e7781;background:#f6f8fa}
ul.checks{list-style:none;padding:0;margin:.4rem 0}ul.checks li{margin:.25rem 0;padding:.3rem .5rem;border-left:4px solid #d1d9e0}
ul.checks li.s-present{border-color:#1a7f37}ul.checks li.s-failed,ul.checks li.s-missing{border-color:#cf222e}ul.checks li.s-stale{border-color:#9a6700}ul.checks li.s-undecided{border-color:#6e7781}
.st{font-weight:600;white-space:nowrap}
.s-present .st,.st.s-present{color:#1a7f37}.s-failed .st,.st.s-failed{color:#cf222e}.s-stale .st,.st.s-stale{color:#9a6700}.s-missing .st,.st.s-missing{color:#cf222e}.s-undecided .st{color:#59636e}
.req{font-size:12px;border:1px solid #59636e;border-radius:3px;padding:0 .25rem;color:#59636e}
.why{color:#1f2328}.fix{display:block;color:#59636e;font-size:13px}
.notice{background:#fff8c5;border:1px solid #d4a72c;border-radius:4px;padding:.4rem .6rem}
.scroll{overflow-x:auto;max-width:100%}
table.matrix{border-collapse:collapse;font-size:13px}
.matrix th,.matrix td{border:1px solid #d1d9e0;padding:.25rem .45rem;text-align:left;vertical-align:top}
.matrix thead th{background:#f6f8fa;white-space:nowrap}
.matrix th.c{font-weight:400;max-width:24rem}
.matrix td{white-space:nowrap}
.matrix td.s-present{background:#dafbe1}.matrix td.s-failed{background:#ffebe9}.matrix td.s-stale{background:#fff8c5}.matrix td.s-missing{background:#fff}.matrix td.s-undecided{background:#f6f8fa}
.matrix a{color:inherit}
.via{display:block;font-size:11px;color:#59636e}
.matrix td:focus-within{outline:2px solid #0969da}
.matrix td:focus-within::after{content:attr(title);display:block;white-space:normal;max-width:18rem;font-size:12px;color:#1f2328}
.ev{border:1px solid #d1d9e0;border-radius:6px;padding:.6rem .8rem;margin:.8rem 0}
.ev:target{outline:3px solid #0969da}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.15rem .8rem;margin:.4rem 0}dl.kv dt{color:#59636e}dl.kv dd{margin:0;min-width:0}
.note{color:#59636e;font-size:13px}
figure{margin:.6rem 0 1.2rem}figcaption{font-size:13px;color:#59636e}
svg.plot{display:block;width:100%;height:auto}
.legend span{margin-right:1rem;display:inline-block}
@media (max-width:40rem){
body{padding:.6rem}
.matrix,.matrix tbody,.matrix tr,.matrix th.c{display:block;max-width:none}
.matrix thead{display:none}
.matrix tr{border:1px solid #d1d9e0;margin:.4rem 0}
.matrix th.c{border:0;border-bottom:1px solid #d1d9e0}
.matrix td{display:inline-block;border:0;margin:.15rem;white-space:normal}
.matrix td::before{content:attr(data-check) ": ";color:#59636e}
dl.kv{grid-template-columns:1fr}dl.kv dt{margin-top:.3rem}
}
"#;

/// The state's word with a symbol, so that colour is never the only signal.
fn state_label(state: &str) -> &'static str {
    match state {
        "present" => "✓ present",
        "failed" => "✗ failed",
        "stale" => "↻ stale",
        "missing" => "∅ missing",
        _ => "? undecided",
    }
}

impl Page {
    /// The evaluation of the revision the verdict is about.
    fn tip(&self) -> &RevReport {
        match &self.tip {
            Tip::Row(i) => &self.rows[*i].report,
            Tip::Apart(r) => r,
        }
    }
}

/// The anchor of a receipt's evidence.
fn anchor(id: &str) -> String {
    let hex: String = id
        .trim_start_matches("sha256:")
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(16)
        .collect();
    format!("r-{hex}")
}

/// The deciding receipt's commit when it is not `commit` itself: the check was
/// satisfied (or decided) through identical inputs elsewhere.
fn via(d: &Decider, commit: &gix::ObjectId) -> Option<String> {
    let tested = &d.receipt.body().subject.commit;
    (gix::ObjectId::from_hex(tested.as_bytes()).ok() != Some(*commit))
        .then(|| tested.chars().take(7).collect())
}

/// The whole page, and the verdict in words.
fn render(store: &Store, page: &Page) -> Result<(String, String)> {
    let mut o = String::with_capacity(64 * 1024 + page.rows.len() * page.columns.len() * 160);
    let title = format!("Receipts for {}", page.spec);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <title>{}</title><style>{CSS}</style></head><body>\n",
        h(&title)
    );
    let _ = write!(o, "<header><h1>{}</h1>", h(&title));
    let verdict = render_verdict(&mut o, page);
    o.push_str("</header>\n");
    render_matrix(&mut o, page);
    render_evidence(&mut o, store, page)?;
    render_history(&mut o, page);
    if let Some(v) = &page.verify {
        render_verify(&mut o, v);
    }
    let _ = write!(
        o,
        "<footer><p class=\"note\">Written by git-receipt {}. States are computed as <code>git receipt status</code> computes them, from signed receipts in the chains under refs/receipts/, never from notes. Every string from a receipt is shown as text.</p></footer>\n</body></html>\n",
        env!("CARGO_PKG_VERSION")
    );
    Ok((o, verdict))
}

/// The top: verdict, trust, and one line per check. Returns the verdict in words.
fn render_verdict(o: &mut String, page: &Page) -> String {
    let tip = page.tip();
    let verdict = tip.verdict(&git_receipt::policy::Require::Marked);
    let required = verdict.required;
    let undecided_required = verdict.undecided.len();
    let failing = verdict.failing.len();
    let findings = page.verify.as_ref().map_or(0, |v| v.report.findings.len());
    let (class, words) = if findings > 0 {
        (
            "no",
            format!(
                "✗ Not accepted: verifying the chains found {}",
                super::plural(findings as u64, "finding", "findings")
            ),
        )
    } else if undecided_required > 0 {
        (
            "no",
            format!(
                "? Not accepted: {} cannot be decided from the history here",
                super::plural(
                    undecided_required as u64,
                    "required check",
                    "required checks"
                )
            ),
        )
    } else if required.is_empty() {
        (
            "none",
            "– No required checks: nothing is required at this revision".to_owned(),
        )
    } else if failing == 0 {
        (
            "yes",
            match required.len() {
                1 => "✓ Accepted: the required check is present".to_owned(),
                n => format!("✓ Accepted: all {n} required checks are present"),
            },
        )
    } else {
        (
            "no",
            format!(
                "✗ Not accepted: {failing} of {} not present",
                super::plural(required.len() as u64, "required check", "required checks")
            ),
        )
    };
    let _ = write!(
        o,
        "<p class=\"meta\">At <code>{}</code> · trust: {}</p><p class=\"verdict {class}\" role=\"status\">{}</p>\n<ul class=\"checks\">\n",
        h(&page.tip_label),
        h(&tip.trust_root),
        h(&words)
    );
    for s in &tip.states {
        let _ = write!(
            o,
            "<li class=\"s-{st}\"><span class=\"st\">{label}</span> <b>{name}</b>{req} <span class=\"why\">{why}</span>",
            st = s.state.as_str(),
            label = state_label(s.state.as_str()),
            name = h(&s.name),
            req = if s.required {
                " <span class=\"req\">required</span>"
            } else {
                ""
            },
            why = h(&super::status::row_reason(s)),
        );
        if let Some(d) = &s.decider {
            let _ = write!(o, " <a href=\"#{}\">evidence</a>", anchor(d.receipt.id()));
        }
        if s.state != State::Present {
            let _ = write!(o, "<span class=\"fix\">fix: {}</span>", h(&tip.fix(s)));
        }
        o.push_str("</li>\n");
    }
    for u in &tip.undecided {
        let _ = writeln!(
            o,
            "<li class=\"s-undecided\"><span class=\"st\">? undecided</span> <b>{}</b>{} <span class=\"why\">{}</span></li>",
            h(&u.name),
            if u.required {
                " <span class=\"req\">required</span>"
            } else {
                ""
            },
            h(&u.error.to_string())
        );
    }
    o.push_str("</ul>\n");
    if tip.states.is_empty() && tip.undecided.is_empty() {
        o.push_str("<p>No checks are declared in .gitreceipts at this revision.</p>\n");
    }
    for n in &tip.notices {
        let _ = writeln!(o, "<p class=\"notice\">notice: {}</p>", h(n));
    }
    words
}

/// One row per commit, one column per check.
fn render_matrix(o: &mut String, page: &Page) {
    let _ = write!(
        o,
        "<section id=\"range\"><h2>Range: {}</h2>\n<p class=\"note legend\"><span>✓ present</span><span>✗ failed</span><span>↻ stale</span><span>∅ missing</span><span>? undecided</span><span>“via abc1234”: decided by a receipt for identical inputs on that commit</span><span>“since abc1234”: the ancestor last checked</span></p>\n",
        h(&page.spec)
    );
    if page.rows.is_empty() {
        o.push_str("<p>The range has no commits.</p></section>\n");
        return;
    }
    o.push_str("<div class=\"scroll\"><table class=\"matrix\"><thead><tr><th>commit</th>");
    for c in &page.columns {
        let _ = write!(o, "<th>{}</th>", h(c));
    }
    o.push_str("</tr></thead><tbody>\n");
    for row in &page.rows {
        let _ = write!(
            o,
            "<tr><th class=\"c\" scope=\"row\"><code>{}</code> {}</th>",
            row.commit.to_hex_with_len(7),
            h(&row.subject)
        );
        for c in &page.columns {
            let col = h(c);
            if let Some(s) = row.report.states.iter().find(|s| &s.name == c) {
                let mut title = super::status::row_reason(s);
                let mut via_text = None;
                if let Some(d) = &s.decider {
                    let b = d.receipt.body();
                    let _ = match &b.review {
                        // a verdict, not a run: no duration
                        Some(rv) => write!(
                            title,
                            " · {} by {} · {}",
                            verdict_word(rv.verdict),
                            page.names.label(&d.writer),
                            short_id(d.receipt.id())
                        ),
                        None => write!(
                            title,
                            " · signed by {} · {} · {}",
                            page.names.label(&d.writer),
                            human_ms(b.result.duration_ms),
                            short_id(d.receipt.id())
                        ),
                    };
                    via_text = via(d, &row.commit);
                }
                let label = state_label(s.state.as_str());
                let _ = write!(
                    o,
                    "<td class=\"s-{}\" data-check=\"{col}\"{} title=\"{}\">",
                    s.state.as_str(),
                    // a cell with a link is reached by keyboard through its link
                    if s.decider.is_some() {
                        ""
                    } else {
                        " tabindex=\"0\""
                    },
                    h(&title)
                );
                match &s.decider {
                    Some(d) => {
                        let _ = write!(
                            o,
                            "<a class=\"st\" href=\"#{}\">{label}</a>",
                            anchor(d.receipt.id())
                        );
                    }
                    None => {
                        let _ = write!(o, "<span class=\"st\">{label}</span>");
                    }
                }
                if let Some(v) = via_text {
                    // a stale state's receipt is an ancestor's; the others' are for
                    // identical inputs elsewhere
                    let word = if s.state == State::Stale {
                        "since"
                    } else {
                        "via"
                    };
                    let _ = write!(o, "<span class=\"via\">{word} {}</span>", h(&v));
                }
                o.push_str("</td>");
            } else if let Some(u) = row.report.undecided.iter().find(|u| &u.name == c) {
                let _ = write!(
                    o,
                    "<td class=\"s-undecided\" data-check=\"{col}\" tabindex=\"0\" title=\"{}\"><span class=\"st\">? undecided</span></td>",
                    h(&u.error.to_string())
                );
            } else {
                let _ = write!(
                    o,
                    "<td data-check=\"{col}\" title=\"not declared at this commit\">–</td>"
                );
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table></div></section>\n");
}

/// Where a deciding receipt decides, for its evidence.
struct Decides<'a> {
    decider: &'a Decider,
    places: Vec<(String, gix::ObjectId, State)>,
}

/// The evidence of every deciding receipt: the tip's first, then the range's in
/// row order, each once, within [`EVIDENCE_BUDGET`].
fn render_evidence(o: &mut String, store: &Store, page: &Page) -> Result<()> {
    let mut order: Vec<Decides> = Vec::new();
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let tip_row = std::iter::once((page.tip().commit, page.tip()));
    let rows = page.rows.iter().map(|r| (r.commit, &r.report));
    for (commit, report) in tip_row.chain(rows) {
        for s in &report.states {
            let Some(d) = &s.decider else { continue };
            let i = *seen.entry(d.receipt.id()).or_insert_with(|| {
                order.push(Decides {
                    decider: d,
                    places: Vec::new(),
                });
                order.len() - 1
            });
            let place = (s.name.clone(), commit, s.state);
            if !order[i].places.contains(&place) {
                order[i].places.push(place);
            }
        }
    }
    o.push_str("<section id=\"evidence\"><h2>Evidence</h2>\n");
    if order.is_empty() {
        o.push_str("<p>No receipt decides any check here.</p></section>\n");
        return Ok(());
    }
    let start = o.len();
    let mut log_budget = LOG_PAGE_BUDGET;
    let mut shown = 0;
    for d in &order {
        if o.len() - start > EVIDENCE_BUDGET {
            break;
        }
        render_one_evidence(o, store, page, d, &mut log_budget)?;
        shown += 1;
    }
    if shown < order.len() {
        let _ = writeln!(
            o,
            "<p class=\"note\">{} more deciding receipts are not shown here, to keep this page small; each cell above names its receipt, and <code>git receipt show &lt;commit&gt;</code> shows them.</p>",
            order.len() - shown
        );
    }
    o.push_str("</section>\n");
    Ok(())
}

fn render_one_evidence(
    o: &mut String,
    store: &Store,
    page: &Page,
    d: &Decides,
    log_budget: &mut usize,
) -> Result<()> {
    let r: &Receipt<Verified> = &d.decider.receipt;
    let b = r.body();
    if let Some(review) = &b.review {
        return render_review_evidence(o, page, d, review);
    }
    let writer = &d.decider.writer;
    let result_word = if b.result.passed { "passed" } else { "failed" };
    let _ = write!(
        o,
        "<article class=\"ev\" id=\"{}\"><h3><span class=\"st s-{}\">{}</span> <b>{}</b> <code>{}</code></h3>",
        anchor(r.id()),
        if b.result.passed { "present" } else { "failed" },
        if b.result.passed {
            "✓ passed"
        } else {
            "✗ failed"
        },
        h(&b.check.name),
        h(r.id())
    );
    o.push_str(&places_note(d));
    o.push_str("<dl class=\"kv\">");
    let trust = match page.trust.lookup(&r.signature().key) {
        Some(t) => format!("verified: signed by a trusted key ({})", t.origin),
        None => "verified: signed by a key trusted for the commit it decides".to_owned(),
    };
    let name = page.names.name_of(writer).unwrap_or("no [signer] name");
    let mut kv = |k: &str, v: String| {
        let _ = write!(o, "<dt>{k}</dt><dd>{v}</dd>");
    };
    kv(
        "signer",
        format!("{} · <code>{}</code>", h(name), h(&r.signature().key)),
    );
    kv(
        "writer",
        format!("<code>{}</code> #{}", h(writer), b.chain.index),
    );
    kv("trust", h(&trust).into_owned());
    kv(
        "command",
        format!(
            "<code>{}</code>",
            h(&super::show::shell_words(&b.check.argv))
        ),
    );
    kv(
        "result",
        format!(
            "{result_word}, exit code {}{} ({})",
            b.result.exit_code,
            if b.result.detail.is_empty() {
                String::new()
            } else {
                format!(": {}", h(&b.result.detail))
            },
            mode_name(b.result.mode)
        ),
    );
    kv("duration", human_ms(b.result.duration_ms));
    if let Some(t) = &b.result.tests {
        let source = format!("{}:{}", t.format.as_str(), t.path);
        kv(
            "tests",
            if t.error.is_empty() {
                // the failed tests by name when the list is inline (a list
                // beside the log is shown by `git receipt show`), escaped
                let failed: Vec<String> = t
                    .list
                    .iter()
                    .flatten()
                    .filter(|c| c.status == git_receipt::receipt::TestStatus::Failed)
                    .take(20)
                    .map(|c| format!("<code>{}</code>", h(&c.name)))
                    .collect();
                format!(
                    "{} passed, {} failed, {} skipped of {} (<code>{}</code>){}",
                    t.passed,
                    t.failed,
                    t.skipped,
                    t.total,
                    h(&source),
                    if failed.is_empty() {
                        String::new()
                    } else {
                        format!("; failed: {}", failed.join(", "))
                    }
                )
            } else {
                format!(
                    "could not be read (<code>{}</code>): {}",
                    h(&source),
                    h(&t.error)
                )
            },
        );
    }
    kv("started", h(&b.result.started_at).into_owned());
    kv(
        "tested",
        format!(
            "commit <code>{}</code>, {}",
            h(&b.subject.commit),
            if b.subject.dirty {
                "dirty: uncommitted changes were tested"
            } else {
                "clean: the committed tree"
            }
        ),
    );
    kv(
        "inputs",
        if b.check.paths.is_empty() {
            format!("the whole tree (<code>{}</code>)", h(&b.subject.inputs))
        } else {
            format!(
                "{} (tree <code>{}</code>)",
                b.check
                    .paths
                    .iter()
                    .map(|p| format!("<code>{}</code>", h(p)))
                    .collect::<Vec<_>>()
                    .join(", "),
                h(&b.subject.inputs)
            )
        },
    );
    o.push_str("</dl>");
    for (stream, tail) in [
        ("stdout", &b.result.stdout_tail),
        ("stderr", &b.result.stderr_tail),
    ] {
        if tail.is_empty() {
            continue;
        }
        let (shown, cut) = last_bytes(tail, TAIL_SHOWN);
        let _ = write!(
            o,
            "<p class=\"note\">{stream}, last {} bytes{}:</p><pre>{}</pre>",
            shown.len(),
            if cut { " of the signed tail" } else { "" },
            h(shown)
        );
    }
    render_log(o, store, r, log_budget)?;
    o.push_str("</article>\n");
    Ok(())
}

/// "approved" or "rejected".
fn verdict_word(v: git_receipt::receipt::Verdict) -> &'static str {
    match v {
        git_receipt::receipt::Verdict::Approve => "approved",
        git_receipt::receipt::Verdict::Reject => "rejected",
    }
}

/// "Decides review:code at abc1234 (present), ..." for an evidence article.
fn places_note(d: &Decides) -> String {
    const PLACES: usize = 6;
    let places: Vec<String> = d
        .places
        .iter()
        .take(PLACES)
        .map(|(name, commit, state)| {
            format!(
                "{} at <code>{}</code> ({})",
                h(name),
                commit.to_hex_with_len(7),
                state.as_str()
            )
        })
        .collect();
    let more = d.places.len().saturating_sub(PLACES);
    format!(
        "<p class=\"note\">Decides {}{}.</p>",
        places.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

/// A review receipt's article: a person's verdict on the inputs of the review's
/// paths, by whom, with their message; no command, exit code or duration (none
/// ran).
fn render_review_evidence(
    o: &mut String,
    page: &Page,
    d: &Decides,
    review: &git_receipt::receipt::Review,
) -> Result<()> {
    let r: &Receipt<Verified> = &d.decider.receipt;
    let b = r.body();
    let writer = &d.decider.writer;
    let approved = review.verdict == git_receipt::receipt::Verdict::Approve;
    let word = verdict_word(review.verdict);
    let name = page.names.name_of(writer).unwrap_or("no [signer] name");
    let _ = write!(
        o,
        "<article class=\"ev\" id=\"{}\"><h3><span class=\"st s-{}\">{}</span> <b>review {}</b> {} by {} <code>{}</code></h3>",
        anchor(r.id()),
        if approved { "present" } else { "failed" },
        if approved {
            "✓ approved"
        } else {
            "✗ rejected"
        },
        h(&review.name),
        word,
        h(name),
        h(r.id())
    );
    o.push_str(&places_note(d));
    o.push_str("<dl class=\"kv\">");
    let trust = match page.trust.lookup(&r.signature().key) {
        Some(t) => format!("verified: signed by a trusted key ({})", t.origin),
        None => "verified: signed by a key trusted for the commit it decides".to_owned(),
    };
    let mut kv = |k: &str, v: String| {
        let _ = write!(o, "<dt>{k}</dt><dd>{v}</dd>");
    };
    kv(
        "verdict",
        format!(
            "{word} by {} · <code>{}</code>",
            h(name),
            h(&r.signature().key)
        ),
    );
    kv(
        "writer",
        format!("<code>{}</code> #{}", h(writer), b.chain.index),
    );
    kv("trust", h(&trust).into_owned());
    kv("decided", h(&review.decided_at).into_owned());
    kv(
        "reviewed",
        format!("commit <code>{}</code>", h(&b.subject.commit)),
    );
    kv(
        "paths",
        if review.paths.is_empty() {
            format!("the whole tree (<code>{}</code>)", h(&b.subject.inputs))
        } else {
            format!(
                "{} (tree <code>{}</code>)",
                review
                    .paths
                    .iter()
                    .map(|p| format!("<code>{}</code>", h(p)))
                    .collect::<Vec<_>>()
                    .join(", "),
                h(&b.subject.inputs)
            )
        },
    );
    o.push_str("</dl>");
    if !review.message.is_empty() {
        let _ = write!(
            o,
            "<p class=\"note\">message:</p><pre>{}</pre>",
            h(&review.message)
        );
    }
    o.push_str("</article>\n");
    Ok(())
}

/// The end of `s`, at most `max` bytes, on a character boundary; and whether it was cut.
fn last_bytes(s: &str, max: usize) -> (&str, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut from = s.len() - max;
    while !s.is_char_boundary(from) {
        from += 1;
    }
    (&s[from..], true)
}

/// The stored log behind a disclosure when it is here, verified, small enough and
/// within the page's budget; otherwise its blob id and the command that prints it.
fn render_log(
    o: &mut String,
    store: &Store,
    r: &Receipt<Verified>,
    budget: &mut usize,
) -> Result<()> {
    let b = r.body();
    let Some(blob_hex) = b.result.log.as_deref() else {
        o.push_str("<p class=\"note\">No stored log: the check printed nothing.</p>");
        return Ok(());
    };
    let cut = if b.result.log_truncated {
        format!(
            " The stored log was cut at the writer's receipt.logLimit: the check printed {} bytes.",
            b.result.output_bytes
        )
    } else {
        String::new()
    };
    let command = format!("git receipt show --log {}", short_id(r.id()));
    let linked = |o: &mut String, why: String| {
        let _ = write!(
            o,
            "<p class=\"note\">Full log: blob <code>{}</code>; {why}; <code>{}</code> prints it.{}</p>",
            h(blob_hex),
            h(&command),
            h(&cut)
        );
    };
    let Ok(blob) = gix::ObjectId::from_hex(blob_hex.as_bytes()) else {
        linked(o, "not a blob id".to_owned());
        return Ok(());
    };
    let size = match store.object_header(blob) {
        Some((_, size)) => size,
        None => {
            linked(o, "this clone does not have it".to_owned());
            return Ok(());
        }
    };
    if size > LOG_INLINE_CAP {
        linked(
            o,
            format!(
                "{}, over the {} this page inlines",
                human_bytes(size),
                human_bytes(LOG_INLINE_CAP)
            ),
        );
        return Ok(());
    }
    if size as usize > *budget {
        linked(
            o,
            format!("{}, past what this page inlines in all", human_bytes(size)),
        );
        return Ok(());
    }
    let Some(bytes) = store.log_bytes(blob)? else {
        linked(o, "this clone does not have it".to_owned());
        return Ok(());
    };
    if let Some(why) = git_receipt::store::logs::log_mismatch(b, &blob, &bytes) {
        linked(o, format!("not shown: {why}"));
        return Ok(());
    }
    *budget -= bytes.len();
    let _ = write!(
        o,
        "<details><summary>Full log ({}, blob <code>{}</code>)</summary><pre>{}</pre>{}</details>",
        human_bytes(bytes.len() as u64),
        h(blob_hex),
        h(&String::from_utf8_lossy(&bytes)),
        if cut.is_empty() {
            String::new()
        } else {
            format!("<p class=\"note\">{}</p>", h(cut.trim_start()))
        }
    );
    Ok(())
}

fn human_bytes(n: u64) -> String {
    if n < 1024 {
        format!("{n} bytes")
    } else if n < 1024 * 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
    }
}

/// One plot per check: duration as bar height, pass or fail as colour and mark.
fn render_history(o: &mut String, page: &Page) {
    let _ = writeln!(
        o,
        "<section id=\"history\"><h2>History</h2><p class=\"note\">Each check's last {} trusted receipts on the first-parent history of {}, oldest on the left: bar height is the duration; a failed run is red and marked ✗ below its bar.</p>",
        page.history_len,
        h(&page.tip_label)
    );
    for (check, points) in &page.history {
        let _ = write!(o, "<figure><figcaption><b>{}</b>: ", h(check));
        if points.is_empty() {
            o.push_str("no trusted receipts on this history.</figcaption></figure>\n");
            continue;
        }
        let failed = points.iter().filter(|p| !p.passed).count();
        let mut durations: Vec<u64> = points.iter().map(|p| p.duration_ms).collect();
        durations.sort_unstable();
        let _ = write!(
            o,
            "{}, {} failed; duration median {}, newest {}</figcaption>",
            super::plural(points.len() as u64, "run", "runs"),
            failed,
            human_ms(durations[durations.len() / 2]),
            human_ms(points.last().map_or(0, |p| p.duration_ms)),
        );
        o.push_str(&plot_svg(check, points));
        o.push_str("</figure>\n");
    }
    o.push_str("</section>\n");
}

/// The inline SVG of one check's history.
fn plot_svg(check: &str, points: &[Point]) -> String {
    const BAR: u64 = 10;
    const STEP: u64 = 14;
    const TOP: u64 = 4;
    const HEIGHT: u64 = 80;
    let width = (points.len() as u64 * STEP + 40).max(200);
    let max = points
        .iter()
        .map(|p| p.duration_ms)
        .max()
        .unwrap_or(1)
        .max(1);
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"plot\" viewBox=\"0 0 {width} {}\" style=\"max-width:{}px\" role=\"img\" aria-label=\"durations of check {}\">",
        HEIGHT + 20,
        width * 2,
        h(check)
    );
    // the scale: the longest run at the top
    let _ = write!(
        s,
        "<line x1=\"0\" y1=\"{b}\" x2=\"{width}\" y2=\"{b}\" stroke=\"#d1d9e0\"/><text x=\"{width}\" y=\"11\" text-anchor=\"end\" font-size=\"9\" fill=\"#59636e\">{}</text>",
        human_ms(max),
        b = TOP + HEIGHT
    );
    for (i, p) in points.iter().enumerate() {
        let bar = (p.duration_ms.saturating_mul(HEIGHT) / max).max(2);
        let x = i as u64 * STEP + 2;
        let fill = if p.passed { "#1a7f37" } else { "#cf222e" };
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"{}\" width=\"{BAR}\" height=\"{bar}\" fill=\"{fill}\"><title>{} · {} · {} · {}{}</title></rect>",
            TOP + HEIGHT - bar,
            p.commit.to_hex_with_len(7),
            h(&p.started_at),
            human_ms(p.duration_ms),
            if p.passed { "passed" } else { "failed" },
            if p.dirty {
                " · uncommitted changes"
            } else {
                ""
            },
        );
        if !p.passed {
            let _ = write!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" fill=\"#cf222e\">✗</text>",
                x + BAR / 2,
                TOP + HEIGHT + 13
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// The summary of `git receipt verify`.
fn render_verify(o: &mut String, v: &VerifySummary) {
    let r = &v.report;
    let clean = r.findings.is_empty();
    let _ = writeln!(
        o,
        "<section id=\"verify\"><h2>Verification</h2><p class=\"verdict {}\">{}</p><p>Verified {} in {} and {} against {}.{}</p>",
        if clean { "yes" } else { "no" },
        if clean {
            "✓ Every chain and note is valid".to_owned()
        } else {
            format!(
                "✗ {}",
                super::plural(r.findings.len() as u64, "finding", "findings")
            )
        },
        super::plural(r.receipts, "receipt", "receipts"),
        super::plural(r.chains as u64, "chain", "chains"),
        super::plural(r.note_lines, "note line", "note lines"),
        h(&v.described),
        if r.untrusted.is_empty() {
            String::new()
        } else {
            format!(
                " {} signed by keys outside the trust count for nothing.",
                super::plural(r.untrusted.len() as u64, "receipt", "receipts")
            )
        }
    );
    const SHOWN: usize = 200;
    if !clean {
        o.push_str("<ul>");
        for f in r.findings.iter().take(SHOWN) {
            let _ = write!(
                o,
                "<li><code>{}</code>{} [{}] {}</li>",
                h(&f.chain),
                f.index.map(|i| format!(" #{i}")).unwrap_or_default(),
                f.kind,
                h(&f.reason)
            );
        }
        o.push_str("</ul>");
        if r.findings.len() > SHOWN {
            let _ = write!(
                o,
                "<p class=\"note\">and {} more: <code>git receipt verify</code> lists them all.</p>",
                r.findings.len() - SHOWN
            );
        }
    }
    if !r.warnings.is_empty() {
        let _ = write!(
            o,
            "<p class=\"note\">{}: <code>git receipt verify</code> shows them.</p>",
            super::plural(r.warnings.len() as u64, "warning", "warnings")
        );
    }
    o.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_are_cut_on_a_character_boundary() {
        assert_eq!(last_bytes("abc", 5), ("abc", false));
        assert_eq!(last_bytes("abcdef", 3), ("def", true));
        // 'é' is two bytes: cutting inside it moves forward past it
        assert_eq!(last_bytes("aéb", 2), ("b", true));
    }

    #[test]
    fn anchors_hold_only_hex_whatever_the_id() {
        assert_eq!(anchor("sha256:0123456789abcdef0123"), "r-0123456789abcdef");
        assert_eq!(anchor("sha256:\"><x>ab"), "r-ab");
    }

    #[test]
    fn a_plot_marks_failures_in_shape_as_well_as_colour() {
        let p = |ms, passed| Point {
            commit: gix::ObjectId::null(gix::hash::Kind::Sha1),
            started_at: "<b>".into(),
            duration_ms: ms,
            passed,
            dirty: false,
        };
        let svg = plot_svg("t<", &[p(100, true), p(400, false), p(0, true)]);
        assert_eq!(svg.matches("<rect").count(), 3);
        assert_eq!(svg.matches(">✗</text>").count(), 1, "{svg}");
        // the longest run is full height, a zero-length one still visible
        assert!(svg.contains("height=\"80\""), "{svg}");
        assert!(svg.contains("height=\"2\""), "{svg}");
        assert!(!svg.contains("<b>") && svg.contains("&lt;b&gt;"), "{svg}");
        assert!(svg.contains("check t&lt;"), "{svg}");
    }
}
