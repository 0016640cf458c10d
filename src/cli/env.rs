//! `git receipt env`: run the environment assertions alone and show what they
//! found, with the dependencies as their local clones hold them now.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use serde_json::json;

use git_receipt::contract::{AssertDef, DependencyDef};
use git_receipt::environment::{self, OpenDependency, Substitutions};
use git_receipt::receipt::Expectation;
use git_receipt::text::escape;

use super::{Context, colour, paint};

/// Run environment assertions alone and show what they found
///
/// Runs the [assert] sections that check CHECK declares (every declared one
/// without CHECK) at the top of the work tree, as `git receipt run` runs them
/// before the check, and prints one line each: name, passed or failed, what it
/// expected and what it found (the first line of its output). Then each
/// dependency, resolved from its local clone (nothing is fetched). Nothing is
/// recorded. Exits 0 when every assertion passed and every dependency resolved,
/// 1 otherwise, 2 when the contract cannot be read.
///
/// Examples:
///
///     git receipt env
///     git receipt env test --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct EnvArgs {
    /// The check whose assertions and dependencies to run (default: all declared).
    #[arg(value_name = "CHECK")]
    pub check: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Run the assertions, resolve the dependencies, print both.
pub fn cmd_env(ctx: &Context, args: EnvArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let contract = ctx.contract(&store)?;
    let (asserts, deps): (Vec<AssertDef>, Vec<DependencyDef>) = match &args.check {
        None => (contract.assertions.clone(), contract.dependencies.clone()),
        Some(name) => match contract.check(name) {
            Some(def) => (contract.assertions_of(def), contract.dependencies_of(def)),
            None => bail!(
                "no check named {:?} in .gitreceipts\nhint: `git receipt env` without a name runs every declared assertion",
                escape(name)
            ),
        },
    };
    let workdir = store.workdir()?.to_owned();
    let results =
        environment::run_assertions(&asserts, &Substitutions::of(&store)?, &workdir, false);
    let resolved: Vec<_> = deps
        .iter()
        .map(|d| {
            (
                d,
                OpenDependency::open(&workdir, d).and_then(|o| o.resolve()),
            )
        })
        .collect();
    let all_good = results.iter().all(|r| r.passed) && resolved.iter().all(|(_, r)| r.is_ok());
    let code = if all_good {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    if args.json {
        let dependencies: Vec<_> = resolved
            .iter()
            .map(|(d, r)| {
                json!({
                    "name": d.name,
                    "path": d.path,
                    "ref": d.rev,
                    "paths": d.paths,
                    "commit": r.as_ref().ok().map(|s| &s.commit),
                    "tree": r.as_ref().ok().map(|s| &s.tree),
                    "error": r.as_ref().err().map(|e| e.to_string()),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "assertions": results,
                "dependencies": dependencies,
                "notices": ctx.flush_notices(),
            }))?
        );
        return Ok(code);
    }
    if asserts.is_empty() && deps.is_empty() {
        eprintln!(
            "git-receipt: no environment assertions or dependencies are declared{}\nhint: declare one:\n    [assert \"rust\"]\n        run = rustc --version\n        expect = rustc 1.*",
            args.check
                .as_deref()
                .map(|c| format!(" for check {:?}", escape(c)))
                .unwrap_or_default()
        );
        return Ok(code);
    }
    let on = colour(std::io::stdout().is_terminal());
    let width = results.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for r in &results {
        let state = if r.passed {
            paint(on, "32", "passed")
        } else {
            paint(on, "31", "failed")
        };
        let expected = match &r.expected {
            None => "(recorded only)".to_owned(),
            Some(Expectation::Glob(g)) => format!("expect {}", escape(&format!("{g:?}"))),
            Some(Expectation::Regex(x)) => format!("match {}", escape(&format!("{x:?}"))),
        };
        out.push_str(&format!(
            "{:<width$}  {state}  {expected}  got {}\n",
            escape(&r.name),
            escape(&format!("{:?}", r.actual)),
        ));
        if !r.passed {
            out.push_str(&format!("{:<width$}    {}\n", "", escape(&r.detail)));
        }
    }
    for (d, r) in &resolved {
        match r {
            Ok(s) => out.push_str(&format!(
                "dependency {}  {} at {}  {}, {} {}\n",
                escape(&d.name),
                escape(&d.path),
                escape(d.rev.as_deref().unwrap_or("HEAD")),
                &s.commit[..7],
                if d.paths.is_empty() {
                    "tree".to_owned()
                } else {
                    format!("tree of {}", escape(&d.paths.join(", ")))
                },
                &s.tree[..7],
            )),
            Err(e) => out.push_str(&format!(
                "dependency {}  {}\n",
                escape(&d.name),
                paint(
                    on,
                    "31",
                    &git_receipt::text::escape_lines(&super::hints::with_hints(e))
                )
            )),
        }
    }
    print!("{out}");
    Ok(code)
}
