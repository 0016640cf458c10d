//! `git receipt install-hooks`, `uninstall-hooks`, and `hook <name>`: what the
//! shims in hooks/ call.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand};

use git_receipt::hooks::{self, HookChange};
use git_receipt::policy::Require;
use git_receipt::policy::push as push_plan;
use git_receipt::policy::server;
use git_receipt::store::Store;

use super::Context;
use super::push::lacking_receipts;
use super::status::Fix as _;
use super::status::render_rows;
use git_receipt::text::{escape, escape_lines};

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
    /// With --server: protect this branch (repeatable; adds receipt.protectedBranch).
    /// A `*` makes it a pattern over branch names: `release/*` protects every
    /// branch under release/ (`*` also matches `/`).
    #[arg(long, value_name = "BRANCH", requires = "server")]
    pub protect: Vec<String>,
    /// Print the hook to stdout instead of installing it (e.g. for gitolite's
    /// repo-specific hooks; see docs/servers.md).
    #[arg(long)]
    pub print: bool,
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
        #[arg(required_unless_present = "pre_commit")]
        remote: Option<String>,
        /// The remote's URL.
        url: Option<String>,
        /// Take the push from the pre-commit framework's PRE_COMMIT_* variables
        /// instead of arguments and stdin (what .pre-commit-hooks.yaml runs).
        #[arg(long, conflicts_with_all = ["remote", "url"])]
        pre_commit: bool,
    },
    /// Refuse updates and creations of protected branches whose new tip lacks
    /// present receipts, deleting a protected branch, and any update of a receipt
    /// chain that is not a fast-forward. Reads git's pre-receive input on stdin.
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
    if args.print {
        print!(
            "{}",
            if args.server {
                hooks::PRE_RECEIVE
            } else {
                hooks::PRE_PUSH
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let store = ctx.store()?;
    if args.server {
        server_preflight(&store, &args.protect)?;
    }
    let change = install_hooks(&store, args.server)?;
    eprintln!("git-receipt: {change}");
    Ok(ExitCode::SUCCESS)
}

/// Before installing the server hook: refuse in a gitolite-managed repository
/// (its hooks are gitolite's to manage), record `--protect` branches, and refuse
/// when nothing would be protected (a hook that guards a branch that does not
/// exist guards nothing).
fn server_preflight(store: &Store, protect: &[String]) -> Result<()> {
    let git_dir = store.git_dir();
    if hooks::gitolite_managed(git_dir) {
        bail!(
            "{} is managed by gitolite: `gitolite setup` puts gitolite's own hooks back, and a hook installed here would vanish without a word\n\
             hint: install it as a gitolite repo-specific hook instead (docs/servers.md):\n\
             hint:   in ~/.gitolite.rc: LOCAL_CODE => \"$ENV{{HOME}}/local\", and enable 'repo-specific-hooks'\n\
             hint:   git receipt install-hooks --server --print > ~/local/hooks/repo-specific/git-receipt; chmod +x ~/local/hooks/repo-specific/git-receipt\n\
             hint:   in gitolite.conf, for the repository: option hook.pre-receive = git-receipt\n\
             hint:   and say what it protects: config receipt.protectedBranch = main (with GIT_CONFIG_KEYS => 'receipt\\..*' in ~/.gitolite.rc)",
            git_dir.display()
        );
    }
    let configured = store.config_strings("receipt.protectedBranch");
    for branch in configured.iter().chain(protect) {
        protection_pattern(branch)?;
    }
    for branch in protect {
        let have = configured
            .iter()
            .any(|c| c == branch || c.strip_prefix("refs/heads/") == Some(branch));
        if !have {
            let out = store.run_git(&["config", "--add", "receipt.protectedBranch", branch])?;
            if !out.ok {
                bail!(
                    "git config --add receipt.protectedBranch {branch}: {}",
                    out.stderr.trim()
                );
            }
            eprintln!("git-receipt: protecting {branch} (git config receipt.protectedBranch)");
        }
    }
    if !configured.is_empty() || !protect.is_empty() {
        return Ok(());
    }
    let head = store.head_branch().unwrap_or_default();
    let exists = !head.is_empty() && store.ref_exists(&head);
    if !exists {
        bail!(
            "not installing: this repository does not say which branch to protect\n\
             receipt.protectedBranch is unset and HEAD names {}, which does not exist here, so the hook would guard nothing\n\
             hint: name the branch: git receipt install-hooks --server --protect main",
            if head.is_empty() {
                "no branch"
            } else {
                head.as_str()
            }
        );
    }
    Ok(())
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
    if let HookName::PrePush {
        pre_commit: true, ..
    } = args.hook
    {
        let store = ctx.store()?;
        let (remote, updates) = pre_commit_push(&store)?;
        return pre_push(ctx, &store, &remote, &updates);
    }
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading the hook's input")?;
    match args.hook {
        HookName::PrePush { remote, .. } => {
            let store = ctx.store()?;
            let updates = hooks::parse_pre_push(&input).map_err(anyhow::Error::msg)?;
            pre_push(ctx, &store, remote.as_deref().unwrap_or(""), &updates)
        }
        HookName::PreReceive => pre_receive(ctx, &input),
    }
}

/// The push that the pre-commit framework's pre-push stage describes in its
/// environment. pre-commit reads git's pre-push input itself and passes its hooks
/// only the first ref that has commits to send (never a deletion); when that
/// push carries a root commit it leaves PRE_COMMIT_TO_REF unset, and the local
/// ref names the commit instead.
fn pre_commit_push(store: &Store) -> Result<(String, Vec<hooks::PushedRef>)> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let missing = |name: &str| {
        anyhow::anyhow!(
            "{name} is not set: `hook pre-push --pre-commit` runs from the pre-commit framework's pre-push stage\n\
             hint: `pre-commit install --hook-type pre-push` installs it; without pre-commit, `git receipt install-hooks` installs git-receipt's own hook"
        )
    };
    let remote = var("PRE_COMMIT_REMOTE_NAME").ok_or_else(|| missing("PRE_COMMIT_REMOTE_NAME"))?;
    let remote_ref =
        var("PRE_COMMIT_REMOTE_BRANCH").ok_or_else(|| missing("PRE_COMMIT_REMOTE_BRANCH"))?;
    let local_ref = var("PRE_COMMIT_LOCAL_BRANCH").unwrap_or_default();
    let local = match var("PRE_COMMIT_TO_REF") {
        Some(hex) => gix::ObjectId::from_hex(hex.as_bytes()).map_err(|_| {
            anyhow::anyhow!("PRE_COMMIT_TO_REF = {:?} is not an object id", escape(&hex))
        })?,
        None if !local_ref.is_empty() => store.resolve_commit(&local_ref)?,
        None => return Err(missing("PRE_COMMIT_TO_REF (or PRE_COMMIT_LOCAL_BRANCH)")),
    };
    let pushed = hooks::PushedRef {
        local_ref,
        local: Some(local),
        remote_ref,
        remote: None,
    };
    Ok((remote, vec![pushed]))
}

fn pre_push(
    ctx: &Context,
    store: &Store,
    remote: &str,
    updates: &[hooks::PushedRef],
) -> Result<ExitCode> {
    let gate_tags = store.config_bool("receipt.gateTags").unwrap_or(false);
    let pushed = push_plan::gated_refs(updates, gate_tags);
    let gated = pushed.len();
    let refused = lacking_receipts(
        ctx,
        store,
        &pushed,
        &push_plan::reviewed_branches(store, remote),
    )?;
    if !refused.is_empty() {
        // ref names, check names and reasons may come from someone else's push
        eprint!(
            "git-receipt: push to {remote} refused\n{}hint: run the fixes above and push again; to push anyway: git push --no-verify\n",
            escape_lines(&refused)
        );
        return Ok(ExitCode::from(1));
    }
    let push_receipts = store.config_bool("receipt.pushReceipts").unwrap_or(true);
    if gated > 0 && push_receipts {
        // A push that carries a chain and its notes at their local tips (push
        // refspecs in the remote's config) sends them itself, in one connection.
        let carried =
            push_plan::carried_writers(store, updates, git_receipt::sync::pushes_notes(store))?;
        for writer in &carried {
            git_receipt::sync::assume_pushed(store, remote, writer)?;
        }
        let plan = push_plan::PushPlan {
            skip_unchanged: true,
            carried,
            ..Default::default()
        };
        match super::push::push_own(ctx, store, remote, &plan) {
            Ok(outcomes) => {
                let names = super::signer_names(store);
                for o in outcomes.iter().filter(|o| o.pushed > 0 || o.left_out > 0) {
                    eprintln!(
                        "git-receipt: pushed {} receipt{} of {} to {remote}{}",
                        o.pushed,
                        if o.pushed == 1 { "" } else { "s" },
                        escape(&names.label_with_id(&o.writer)),
                        super::push::what_happened(o, remote)
                    );
                }
            }
            Err(e) => {
                let hints: String = e
                    .chain()
                    .flat_map(super::hints::for_error)
                    .map(|h| format!("\n{h}"))
                    .collect();
                let unstored = e.chain().any(|c| {
                    matches!(
                        c.downcast_ref(),
                        Some(git_receipt::sync::PushError::Unstored { .. })
                    )
                });
                let way_around = if unstored {
                    ""
                } else {
                    "\nhint: set `git config receipt.pushReceipts false` to push branches without their receipts, or push with --no-verify"
                };
                eprintln!(
                    "git-receipt: push to {remote} stopped: the receipts could not be pushed first\n{e:#}{hints}{way_around}"
                );
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `receipt.protectedBranch` value `value` as the ref name or pattern it
/// protects, or the error (with its hint) for one that protects nothing.
fn protection_pattern(value: &str) -> Result<String> {
    server::protection_pattern(value).map_err(|e| {
        anyhow::anyhow!(
            "{e}\nhint: name a branch (main), a full ref name (refs/heads/main), or a pattern with * over branches (release/*)"
        )
    })
}

/// The words of the server's refusals (one or more lines each, with the fixes
/// this hook knows), unescaped.
fn refusal_lines(refusals: &[server::Refusal]) -> String {
    use server::Refusal;
    let mut refused = String::new();
    for r in refusals {
        match r {
            Refusal::Misconfigured(_) => {}
            Refusal::ProtectedCreatedUnjudged { name } => refused.push_str(&format!(
                "{r}\n  fix: an administrator creates {name} on the server itself (git update-ref {name} <commit>), or protects the branch it is made from first (git config --add receipt.protectedBranch main)\n"
            )),
            Refusal::Lacking { judgement, .. } => {
                refused.push_str(&format!("{r}\n"));
                let failing = judgement.verdict(&Require::Marked).failing;
                refused.push_str(&render_rows(&failing, false));
                for s in &failing {
                    let then = if judgement.approval_cannot_count(s).is_some() {
                        "; then push the signed commit"
                    } else {
                        " && git receipt push"
                    };
                    refused.push_str(&format!("  fix: {}{then}\n", judgement.fix(s)));
                }
            }
            Refusal::NotAccepted {
                name,
                new,
                signer,
                why,
            } => {
                let short = new.to_hex_with_len(7);
                refused.push_str(&format!(
                    "{name} ({short}) is not accepted by {} (receipt.requireAcceptance): {}\n  fix: run `git receipt gate {short} --record` as {}, then git receipt push\n",
                    escape(signer),
                    escape(&why.to_string()),
                    escape(signer)
                ));
            }
            _ => refused.push_str(&format!("{r}\n")),
        }
    }
    refused
}

fn pre_receive(ctx: &Context, input: &str) -> Result<ExitCode> {
    use server::{Event, Refusal};
    let mut store = ctx.store()?;
    let pushed = hooks::parse_pre_receive(input).map_err(anyhow::Error::msg)?;
    let decided = match server::pre_receive(&mut store, pushed) {
        Ok(d) => d,
        Err(e @ git_receipt::policy::PolicyError::UnknownSigner(_)) => bail!(
            "{e}\nhint: name a [signer] of .gitreceipts at the trusted revision, or a key fingerprint (SHA256:...)"
        ),
        Err(e) => return Err(e.into()),
    };
    if let Some(Refusal::Misconfigured(why)) = decided.refusals.first() {
        let why = match why {
            server::Misconfigured::Pattern(_) => format!(
                "{why}\nhint: name a branch (main), a full ref name (refs/heads/main), or a pattern with * over branches (release/*)"
            ),
            server::Misconfigured::Unreadable(_) => why.to_string(),
        };
        eprint!(
            "git-receipt: refusing the push: this server's protection is misconfigured\n{}hint: an administrator fixes receipt.protectedBranch on the server (git config --get-all receipt.protectedBranch)\n",
            escape_lines(&format!("{why}\n"))
        );
        return Ok(ExitCode::from(1));
    }
    for event in &decided.events {
        match event {
            Event::Symref { pushed, target } => eprintln!(
                "git-receipt: {} is a symbolic ref to {} on this server: the push is judged as an update of {}",
                escape(pushed),
                escape(target),
                escape(target)
            ),
            Event::Unprotected { which, unguarded } => eprint!(
                "{}",
                escape_lines(&format!(
                    "git-receipt: WARNING: this server protects no branch: {which}, so {} is accepted without any receipt check\n\
                     hint: on the server, name the branch to protect: git config receipt.protectedBranch main\n\
                     hint: with gitolite, in gitolite.conf: config receipt.protectedBranch = main\n",
                    unguarded.join(", ")
                ))
            ),
            Event::NotGated { name } => eprintln!(
                "git-receipt: {} is created by this push and the server has no branch yet to take signers and required checks from, so it is not gated",
                escape(name)
            ),
            Event::Judged { name, new, notice } => eprintln!(
                "git-receipt: notice: {} ({}): {}",
                escape(name),
                new.to_hex_with_len(7),
                escape(notice)
            ),
            Event::Acceptance(n) => eprintln!("git-receipt: notice: {}", escape(n)),
        }
    }
    if decided.refusals.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let refused = refusal_lines(&decided.refusals);
    let mut hints = String::new();
    for name in decided
        .refusals
        .iter()
        .filter(|r| r.is_chain())
        .filter_map(|r| r.ref_name())
    {
        hints.push_str(&format!(
            "hint: an administrator who must remove or rewind {name} does it on the server itself (e.g. git update-ref -d {name}), not by a push\n"
        ));
    }
    for r in &decided.refusals {
        if let Refusal::ProtectedDeleted { name } = r {
            hints.push_str(&format!(
                "hint: an administrator who must delete {name} does it on the server itself (e.g. git update-ref -d {name}), not by a push\n"
            ));
        }
    }
    // ref names, check names and reasons come from the pusher
    eprint!(
        "git-receipt: refusing the push\n{}{}",
        escape_lines(&refused),
        escape_lines(&hints)
    );
    Ok(ExitCode::from(1))
}
