//! `git receipt install-hooks`, `uninstall-hooks`, and `hook <name>`: what the
//! shims in hooks/ call.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand};

use git_receipt::contract::Contract;
use git_receipt::freshness::{self, CheckState, Options, State};
use git_receipt::hooks::{self, HookChange};
use git_receipt::store::Store;
use git_receipt::trust::{TrustOrigin, TrustSet};

use super::Context;
use super::status::{evaluate_rev, render_rows};

/// Install the pre-push hook (or, with --server, the pre-receive hook).
///
/// Honours core.hooksPath. Idempotent. An existing hook that is not ours is kept
/// as <name>.pre-git-receipt and still runs, after ours, with the same input;
/// `git receipt uninstall-hooks` puts it back.
#[derive(Debug, Args)]
pub struct InstallHooksArgs {
    /// Install the server-side pre-receive hook (in a bare repository) instead.
    #[arg(long)]
    pub server: bool,
}

/// Remove the hooks installed by `install-hooks`, restoring any kept hook.
#[derive(Debug, Args)]
pub struct UninstallHooksArgs {}

/// Run a hook (what the shims call; not usually typed by hand).
#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    hook: HookName,
}

#[derive(Debug, Subcommand)]
enum HookName {
    /// Gate each pushed commit on fresh receipts; on success, push the receipts too.
    /// Reads git's pre-push input on stdin.
    PrePush {
        /// The remote's name (or URL).
        remote: String,
        /// The remote's URL.
        url: Option<String>,
    },
    /// Refuse updates of protected branches whose new tip lacks present receipts.
    /// Reads git's pre-receive input on stdin.
    PreReceive,
}

pub(super) fn hooks_dir(store: &Store) -> Result<PathBuf> {
    let out = store.run_git(&["rev-parse", "--git-path", "hooks"])?;
    if !out.ok {
        bail!("cannot find the hooks directory: {}", out.stderr);
    }
    let p = PathBuf::from(out.stdout.trim());
    Ok(if p.is_absolute() {
        p
    } else {
        match store.workdir() {
            Ok(w) => w.join(p),
            Err(_) => std::env::current_dir()?.join(p),
        }
    })
}

pub(super) fn install_hooks(store: &Store, server: bool) -> Result<HookChange> {
    let dir = hooks_dir(store)?;
    let (name, shim) = if server {
        ("pre-receive", hooks::PRE_RECEIVE)
    } else {
        ("pre-push", hooks::PRE_PUSH)
    };
    hooks::install(&dir, name, shim)
        .with_context(|| format!("installing the {name} hook in {}", dir.display()))
}

/// Install.
pub fn cmd_install_hooks(ctx: &Context, args: InstallHooksArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let change = install_hooks(&store, args.server)?;
    eprintln!("git-receipt: {change}");
    Ok(ExitCode::SUCCESS)
}

/// Uninstall.
pub fn cmd_uninstall_hooks(ctx: &Context, _args: UninstallHooksArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let dir = hooks_dir(&store)?;
    for name in ["pre-push", "pre-receive"] {
        let change = hooks::uninstall(&dir, name)?;
        if !matches!(change, HookChange::Absent(_)) {
            eprintln!("git-receipt: {change}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Dispatch a hook.
pub fn cmd_hook(ctx: &Context, args: HookArgs) -> Result<ExitCode> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading the hook's input")?;
    match args.hook {
        HookName::PrePush { remote, .. } => pre_push(ctx, &remote, &input),
        HookName::PreReceive => pre_receive(ctx, &input),
    }
}

fn pre_push(ctx: &Context, remote: &str, input: &str) -> Result<ExitCode> {
    let store = ctx.store()?;
    let updates = hooks::parse_pre_push(input).map_err(anyhow::Error::msg)?;
    let gate_tags = store
        .repo()
        .config_snapshot()
        .boolean("receipt.gateTags")
        .unwrap_or(false);
    let mut refused = String::new();
    let mut gated = 0;
    for u in &updates {
        let Some(local) = u.local else { continue }; // deletions pass
        let r = &u.remote_ref;
        if r.starts_with("refs/receipts/") || r.starts_with("refs/notes/") {
            continue;
        }
        if r.starts_with("refs/tags/") && !gate_tags {
            continue;
        }
        gated += 1;
        let report = evaluate_rev(ctx, &store, &local.to_string())?;
        if let Some(u) = report.undecided.iter().find(|u| u.required) {
            refused.push_str(&format!(
                "{r} ({}): cannot decide {}: {}\n",
                local.to_hex_with_len(7),
                u.name,
                u.error
            ));
            continue;
        }
        let failing: Vec<&CheckState> = report
            .states
            .iter()
            .filter(|s| s.required && s.state != State::Present)
            .collect();
        if !failing.is_empty() {
            refused.push_str(&format!(
                "{r} ({}) lacks fresh receipts:\n",
                local.to_hex_with_len(7)
            ));
            refused.push_str(&render_rows(&failing, false));
            for s in &failing {
                refused.push_str(&format!("  fix: git receipt run {}\n", s.name));
            }
        }
    }
    if !refused.is_empty() {
        eprint!(
            "git-receipt: push to {remote} refused\n{refused}hint: run the fixes above and push again; to push anyway: git push --no-verify\n"
        );
        return Ok(ExitCode::from(1));
    }
    let push_receipts = store
        .repo()
        .config_snapshot()
        .boolean("receipt.pushReceipts")
        .unwrap_or(true);
    if gated > 0 && push_receipts {
        match super::push::push_own(ctx, &store, remote) {
            Ok(outcomes) => {
                for o in outcomes.iter().filter(|o| o.pushed > 0) {
                    eprintln!(
                        "git-receipt: pushed {} receipt{} of {} to {remote}",
                        o.pushed,
                        if o.pushed == 1 { "" } else { "s" },
                        o.writer
                    );
                }
            }
            Err(e) => {
                eprintln!(
                    "git-receipt: push to {remote} stopped: the receipts could not be pushed first\n{e:#}\nhint: set `git config receipt.pushReceipts false` to push branches without their receipts, or push with --no-verify"
                );
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The branches the server protects: `receipt.protectedBranch` (repeatable), or
/// the branch HEAD names.
fn protected_branches(store: &Store) -> Vec<String> {
    let configured = store.config_strings("receipt.protectedBranch");
    if !configured.is_empty() {
        return configured
            .into_iter()
            .map(|b| {
                if b.starts_with("refs/") {
                    b
                } else {
                    format!("refs/heads/{b}")
                }
            })
            .collect();
    }
    match store.repo().head_name() {
        Ok(Some(name)) => vec![name.as_bstr().to_string()],
        _ => Vec::new(),
    }
}

fn contract_at(store: &Store, commit: gix::ObjectId) -> Result<Contract> {
    Ok(match store.contract_at(commit)? {
        Some(bytes) => Contract::parse(
            &bytes,
            std::path::Path::new(&format!(".gitreceipts at {}", commit.to_hex_with_len(7))),
        )?,
        None => Contract::default(),
    })
}

fn pre_receive(ctx: &Context, input: &str) -> Result<ExitCode> {
    let mut store = ctx.store()?;
    store.see_quarantine()?;
    let updates = hooks::parse_pre_receive(input).map_err(anyhow::Error::msg)?;
    // receipts that arrive in this same push count: reads see the proposed refs
    for u in &updates {
        if u.name.starts_with("refs/receipts/") || u.name.starts_with("refs/notes/receipts/") {
            store.override_ref(&u.name, u.new);
        }
    }
    let protected = protected_branches(&store);
    let mut refused = String::new();
    for u in &updates {
        let (Some(new), true) = (u.new, protected.contains(&u.name)) else {
            continue;
        };
        let Some(old) = u.old else {
            eprintln!(
                "git-receipt: {} is created by this push; there is no previous tip to take signers from, so it is not gated",
                u.name
            );
            continue;
        };
        let old_contract = contract_at(&store, old)?;
        let new_contract = contract_at(&store, new)?;
        let mut trust = TrustSet::default();
        trust.add_contract(&old_contract);
        for line in store.config_strings("receipt.trustedKey") {
            trust.add(
                git_receipt::sign::PublicKey::from_openssh(&line)?,
                TrustOrigin::Config,
            );
        }
        let walk_limit = super::status::walk_limit(&store)?;
        let outcomes =
            freshness::evaluate(&store, new, &new_contract, &trust, Options { walk_limit })?;
        let mut required: Vec<String> = new_contract
            .checks
            .iter()
            .filter(|c| c.required)
            .map(|c| c.name.clone())
            .collect();
        for c in old_contract.checks.iter().filter(|c| c.required) {
            if !required.contains(&c.name) {
                required.push(c.name.clone());
            }
        }
        let mut failing = Vec::new();
        for name in &required {
            let found = outcomes.iter().find(|o| match o {
                Ok(s) => &s.name == name,
                Err(u) => &u.name == name,
            });
            match found {
                None => refused.push_str(&format!("{} ({}): check {name:?} is required at the current tip but no longer declared in .gitreceipts\n", u.name, new.to_hex_with_len(7))),
                Some(Err(und)) => refused.push_str(&format!("{} ({}): cannot decide {name}: {}\n", u.name, new.to_hex_with_len(7), und.error)),
                Some(Ok(s)) if s.state != State::Present => failing.push(s),
                Some(Ok(_)) => {}
            }
        }
        if !failing.is_empty() {
            refused.push_str(&format!(
                "{} ({}) lacks present receipts signed by the signers in .gitreceipts at {}:\n",
                u.name,
                new.to_hex_with_len(7),
                old.to_hex_with_len(7)
            ));
            refused.push_str(&render_rows(&failing, false));
            for s in &failing {
                refused.push_str(&format!(
                    "  fix: git receipt run {} && git receipt push\n",
                    s.name
                ));
            }
        }
    }
    if !refused.is_empty() {
        eprint!("git-receipt: refusing the push\n{refused}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
