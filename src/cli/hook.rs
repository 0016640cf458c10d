//! `git receipt install-hooks`, `uninstall-hooks`, and `hook <name>`: what the
//! shims in hooks/ call.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand};

use git_receipt::freshness::{CheckState, State};
use git_receipt::hooks::{self, HookChange};
use git_receipt::store::Store;
use git_receipt::trust::{TrustOrigin, TrustSet};

use super::Context;
use super::status::{Baseline, contract_at, evaluate_rev, evaluate_rev_trusting, render_rows};
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
        protection_pattern(branch).map_err(anyhow::Error::msg)?;
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
    let head = match store.repo().head_name() {
        Ok(Some(name)) => name.as_bstr().to_string(),
        _ => String::new(),
    };
    let exists = !head.is_empty()
        && store
            .repo()
            .try_find_reference(head.as_str())
            .ok()
            .flatten()
            .is_some();
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

/// What each pushed ref (remote ref name, local commit) lacks: fresh receipts
/// for its required checks, as the lines of a refusal (empty when all is well).
///
/// Required reviews count only for a push to one of `reviewed` (remote ref names):
/// a feature branch is pushed in order to be reviewed, the branch it merges into
/// is not.
pub(super) fn lacking_receipts(
    ctx: &Context,
    store: &Store,
    pushed: &[(String, gix::ObjectId)],
    reviewed: &[String],
) -> Result<String> {
    let mut refused = String::new();
    for (r, local) in pushed {
        let reviews_count = reviewed.iter().any(|b| ref_pattern_matches(b, r));
        let local = *local;
        let report = evaluate_rev(ctx, store, &local.to_string())?;
        if let Some(u) = report.undecided.iter().find(|u| u.required) {
            refused.push_str(&format!(
                "{r} ({}): cannot decide {}: {}\n",
                local.to_hex_with_len(7),
                u.name,
                u.error
            ));
            continue;
        }
        // Reviews hold only for a protected branch: a feature branch is pushed
        // in order to be reviewed. The server's pre-receive hook holds its own
        // protected branches to them whatever this clone says.
        let failing: Vec<&CheckState> = report
            .states
            .iter()
            .filter(|s| s.required && s.state != State::Present)
            .filter(|s| reviews_count || !s.name.starts_with(super::status::REVIEW_PREFIX))
            .collect();
        if !failing.is_empty() {
            refused.push_str(&format!(
                "{r} ({}) lacks fresh receipts:\n",
                local.to_hex_with_len(7)
            ));
            refused.push_str(&render_rows(&failing, false));
            for s in &failing {
                match s.name.strip_prefix(super::status::REVIEW_PREFIX) {
                    Some(review) => refused.push_str(&format!(
                        "  fix: a reviewer runs git receipt review {} --approve --name {review}, then pushes the review\n",
                        local.to_hex_with_len(12)
                    )),
                    None => refused.push_str(&format!("  fix: git receipt run {}\n", s.name)),
                }
            }
        }
    }
    Ok(refused)
}

fn pre_push(
    ctx: &Context,
    store: &Store,
    remote: &str,
    updates: &[hooks::PushedRef],
) -> Result<ExitCode> {
    let gate_tags = store
        .repo()
        .config_snapshot()
        .boolean("receipt.gateTags")
        .unwrap_or(false);
    let mut pushed = Vec::new();
    for u in updates {
        let Some(local) = u.local else { continue }; // deletions pass
        let r = &u.remote_ref;
        if r.starts_with("refs/receipts/") || r.starts_with("refs/notes/") {
            continue;
        }
        if r.starts_with("refs/tags/") && !gate_tags {
            continue;
        }
        pushed.push((r.clone(), local));
    }
    let gated = pushed.len();
    let refused = lacking_receipts(ctx, store, &pushed, &reviewed_branches(store, remote))?;
    if !refused.is_empty() {
        // ref names, check names and reasons may come from someone else's push
        eprint!(
            "git-receipt: push to {remote} refused\n{}hint: run the fixes above and push again; to push anyway: git push --no-verify\n",
            escape_lines(&refused)
        );
        return Ok(ExitCode::from(1));
    }
    let push_receipts = store
        .repo()
        .config_snapshot()
        .boolean("receipt.pushReceipts")
        .unwrap_or(true);
    if gated > 0 && push_receipts {
        // A push that carries a chain and its notes at their local tips (push
        // refspecs in the remote's config) sends them itself, in one connection.
        let carried_ref = |name: &str, local: Option<gix::ObjectId>| {
            local.is_some()
                && updates
                    .iter()
                    .any(|u| u.remote_ref == name && u.local == local)
        };
        let mut carried = Vec::new();
        for (writer, tip) in store.writers()? {
            let notes = git_receipt::store::notes::notes_ref(&writer);
            if carried_ref(&format!("refs/receipts/{writer}"), Some(tip))
                && carried_ref(&notes, store.ref_value(&notes)?)
            {
                git_receipt::sync::assume_pushed(store, remote, &writer)?;
                carried.push(writer);
            }
        }
        let plan = super::push::PushPlan {
            skip_unchanged: true,
            carried,
            ..Default::default()
        };
        match super::push::push_own(ctx, store, remote, &plan) {
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
                let hints: String = e
                    .chain()
                    .flat_map(super::hints::for_error)
                    .map(|h| format!("\n{h}"))
                    .collect();
                eprintln!(
                    "git-receipt: push to {remote} stopped: the receipts could not be pushed first\n{e:#}{hints}\nhint: set `git config receipt.pushReceipts false` to push branches without their receipts, or push with --no-verify"
                );
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The branches the server protects: `receipt.protectedBranch` (repeatable), or
/// the branch HEAD names.
/// The remote branches a push to `remote` must bring required reviews to:
/// `receipt.protectedBranch` when set (as on the server), else the branch the
/// remote's HEAD names (`refs/remotes/<remote>/HEAD`, set by clone or
/// `git remote set-head`).
pub(super) fn reviewed_branches(store: &Store, remote: &str) -> Vec<String> {
    let configured = store.config_strings("receipt.protectedBranch");
    if !configured.is_empty() {
        return protected_branches(store);
    }
    let head = format!("refs/remotes/{remote}/HEAD");
    let out = store.run_git(&["symbolic-ref", "--quiet", &head]);
    match out {
        Ok(o) if o.ok => o
            .stdout
            .trim()
            .strip_prefix(&format!("refs/remotes/{remote}/"))
            .map(|b| vec![format!("refs/heads/{b}")])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

fn protected_branches(store: &Store) -> Vec<String> {
    let configured = store.config_strings("receipt.protectedBranch");
    if !configured.is_empty() {
        return configured
            .iter()
            .map(|b| protection_pattern(b).unwrap_or_else(|_| full_branch_name(b)))
            .collect();
    }
    match store.repo().head_name() {
        Ok(Some(name)) => vec![name.as_bstr().to_string()],
        _ => Vec::new(),
    }
}

/// `b` as a full ref name: `main` is `refs/heads/main`, `refs/...` is itself.
fn full_branch_name(b: &str) -> String {
    if b.starts_with("refs/") {
        b.to_owned()
    } else {
        format!("refs/heads/{b}")
    }
}

/// A `receipt.protectedBranch` value (or `--protect` argument) as the full ref
/// name or pattern it protects, or why it protects nothing. A branch name or
/// full ref name protects that ref; one with `*` is a pattern over branches
/// (`release/*`, `refs/heads/release/*`), where `*` matches any run of
/// characters, `/` included. Other wildcards (`?`, `[...]`) are refused rather
/// than taken literally: no ref could be named so, and protecting nothing
/// without a word is what this check exists to prevent.
fn protection_pattern(value: &str) -> std::result::Result<String, String> {
    let full = full_branch_name(value.trim());
    let bad = |why: &str| {
        Err(format!(
            "receipt.protectedBranch (or --protect) {:?} {why}, so it would protect nothing
hint: name a branch (main), a full ref name (refs/heads/main), or a pattern with * over branches (release/*)",
            escape(value)
        ))
    };
    if value.trim().is_empty() {
        return bad("is empty");
    }
    if let Some(c) = full.chars().find(|c| {
        matches!(c, '?' | '[' | ']' | '\\' | '~' | '^' | ':') || c.is_whitespace() || c.is_control()
    }) {
        return bad(&format!(
            "holds {c:?}, which no ref name holds and which is not a supported wildcard (only * is)"
        ));
    }
    if full.contains("..") || full.ends_with('/') || full.contains("//") {
        return bad("is not a ref name (`..`, `//` or a trailing `/`)");
    }
    if full.contains('*') && !full.starts_with("refs/heads/") {
        return bad("is a pattern outside refs/heads/ (patterns protect branches only)");
    }
    Ok(full)
}

/// Whether ref `name` matches `pattern` (a full ref name, where each `*` matches
/// any run of characters, `/` included; linear in the lengths, whatever the pattern).
fn ref_pattern_matches(pattern: &str, name: &str) -> bool {
    git_receipt::trust::wildcard_match(pattern, name, false)
}

/// git's own limit on a chain of symbolic refs (`SYMREF_MAXDEPTH`).
const SYMREF_MAX_DEPTH: usize = 5;

/// The ref an update of `name` really moves: `name`, or the ref its symbolic
/// refs lead to. receive-pack names a symbolic ref in the hook's input as it was
/// pushed (`refs/heads/master`) and then updates (or deletes) its target
/// (`refs/heads/main`), so every rule is applied to the target.
fn resolve_symref(store: &Store, name: &str) -> std::result::Result<String, String> {
    let mut at = name.to_owned();
    for _ in 0..=SYMREF_MAX_DEPTH {
        let target = match store.repo().try_find_reference(at.as_str()) {
            Ok(Some(r)) => r.target().try_name().map(|t| t.as_bstr().to_string()),
            Ok(None) => None,
            Err(e) => {
                return Err(format!(
                    "{name}: cannot read it on the server to tell which ref it moves ({e})
"
                ));
            }
        };
        match target {
            Some(t) => at = t,
            None => return Ok(at),
        }
    }
    Err(format!(
        "{name}: a chain of more than {SYMREF_MAX_DEPTH} symbolic refs, which git does not follow either
"
    ))
}

/// What the server protects: the patterns of `receipt.protectedBranch` (or the
/// branch HEAD names), and every existing branch they cover, by name or through
/// a symbolic ref they name (protecting `master`, a symbolic ref to `main`,
/// protects `main`).
struct Protected {
    /// Full ref names and patterns.
    patterns: Vec<String>,
    /// The existing (non-symbolic) refs covered, with their tips: the branch HEAD
    /// names first when it is covered, then in the order of the patterns.
    existing: Vec<(String, gix::ObjectId)>,
}

impl Protected {
    /// Read the server's configuration and refs; an unusable
    /// `receipt.protectedBranch` is an error (the push is refused, not let
    /// through unprotected).
    fn load(store: &Store) -> std::result::Result<Protected, String> {
        let configured = store.config_strings("receipt.protectedBranch");
        let patterns = if configured.is_empty() {
            protected_branches(store)
        } else {
            configured
                .iter()
                .map(|b| protection_pattern(b))
                .collect::<std::result::Result<Vec<_>, _>>()?
        };
        let mut candidates: Vec<String> = Vec::new();
        if let Ok(Some(head)) = store.repo().head_name() {
            let head = head.as_bstr().to_string();
            if patterns.iter().any(|p| ref_pattern_matches(p, &head)) {
                candidates.push(head);
            }
        }
        for p in &patterns {
            match p.split_once('*') {
                None => candidates.push(p.clone()),
                Some((literal, _)) => {
                    // the refs under the pattern's literal directory
                    let dir = &literal[..literal.rfind('/').map_or(0, |i| i + 1)];
                    let refs = store
                        .repo()
                        .references()
                        .map_err(|e| format!("listing the server's refs: {e}"))?;
                    let under = refs
                        .prefixed(dir)
                        .map_err(|e| format!("listing {dir}: {e}"))?;
                    for r in under.flatten() {
                        let name = r.name().as_bstr().to_string();
                        if ref_pattern_matches(p, &name) {
                            candidates.push(name);
                        }
                    }
                }
            }
        }
        let mut existing: Vec<(String, gix::ObjectId)> = Vec::new();
        for c in &candidates {
            let target = resolve_symref(store, c).map_err(|e| e.trim_end().to_owned())?;
            if existing.iter().any(|(n, _)| *n == target) {
                continue;
            }
            let tip = store
                .repo()
                .try_find_reference(target.as_str())
                .ok()
                .flatten()
                .and_then(|mut r| r.peel_to_commit().ok().map(|c| c.id));
            if let Some(tip) = tip {
                existing.push((target, tip));
            }
        }
        Ok(Protected { patterns, existing })
    }

    /// Whether an update of `name` (already resolved through symbolic refs) is
    /// an update of a protected branch.
    fn covers(&self, name: &str) -> bool {
        self.patterns.iter().any(|p| ref_pattern_matches(p, name))
            || self.existing.iter().any(|(n, _)| n == name)
    }

    /// The names of the existing protected branches.
    fn existing_names(&self) -> Vec<String> {
        self.existing.iter().map(|(n, _)| n.clone()).collect()
    }
}

/// Why an update of receipt chain `u` is refused, if it is. Every entry the push
/// adds must follow every rule of `git_receipt::store::admit` (one parent, the
/// allowed files, a canonical receipt naming this chain, signed strictly by the
/// key its writer id names, linked to the entry below), checked in the
/// quarantine: the cost is one read and one signature per new entry. A chain is
/// append-only: a push may create one or add entries on top, and may replace the
/// top only when everything it discards is not an entry of the chain (junk, a
/// merge, a squat on the writer id: the writer's own repair); never delete it.
fn chain_refusal(
    store: &Store,
    u: &hooks::ReceivedRef,
    known: &dyn Fn(&str) -> Option<git_receipt::sign::PublicKey>,
) -> Option<String> {
    let writer = &u.name["refs/receipts/".len()..];
    if !git_receipt::receipt::is_valid_writer_id(writer) {
        return Some(format!(
            "{}: not a receipt chain name (refs/receipts/<chain name>-<32 hex digits of the key>)\n",
            u.name
        ));
    }
    let Some(new) = u.new else {
        return Some(format!(
            "{}: deleting a receipt chain by push is refused: chains are append-only\n",
            u.name
        ));
    };
    let entry_refused = |r: &git_receipt::store::admit::Refusal| {
        format!(
            "{}: {r}\n  every new entry must be a receipt signed by the key {writer} is derived from, with one parent, the entry below it\n",
            u.name
        )
    };
    let base = match u.old {
        None => None,
        Some(old) => match store.is_ancestor(old, new) {
            Ok(true) => Some(old),
            Ok(false) => match discards_an_entry(store, writer, old, new, known) {
                Ok(None) => match store.merge_base_of(old, new) {
                    Ok(b) => b,
                    Err(e) => return Some(format!("{}: {e}\n", u.name)),
                },
                Ok(Some(why)) => {
                    return Some(format!(
                        "{}: not a fast-forward ({} -> {}), and it would discard {why}: chains are append-only, so a push may only add receipts on top of the chain the server has, or replace commits that are not entries of it\n",
                        u.name,
                        old.to_hex_with_len(7),
                        new.to_hex_with_len(7)
                    ));
                }
                Err(e) => {
                    return Some(format!(
                        "{}: cannot tell what replacing {} with {} discards ({e}): chains are append-only, so only a fast-forward is accepted\n",
                        u.name,
                        old.to_hex_with_len(7),
                        new.to_hex_with_len(7)
                    ));
                }
            },
            Err(e) => {
                return Some(format!(
                    "{}: cannot tell that {} descends from {} ({e}): chains are append-only, so only a fast-forward is accepted\n",
                    u.name,
                    new.to_hex_with_len(7),
                    old.to_hex_with_len(7)
                ));
            }
        },
    };
    match store.admit(writer, new, base, known) {
        Ok(a) => a.refusal.as_ref().map(entry_refused),
        Err(e) => Some(format!(
            "{}: the chain below the new entries is not a valid chain ({e}); replace it with your own entries (`git receipt push` does)\n",
            u.name
        )),
    }
}

/// For a push that replaces `old` with `new` (not a descendant): the first commit
/// it would discard that is a valid entry of `writer`'s chain, if any. Only the
/// lowest discarded commits need checking: anything above a commit that is not
/// an entry is not one either.
fn discards_an_entry(
    store: &Store,
    writer: &str,
    old: gix::ObjectId,
    new: gix::ObjectId,
    known: &dyn Fn(&str) -> Option<git_receipt::sign::PublicKey>,
) -> Result<Option<String>> {
    use git_receipt::store::admit::check_entry;
    let out = store.run_git(&[
        "rev-list",
        "--parents",
        &old.to_string(),
        "--not",
        &new.to_string(),
    ])?;
    if !out.ok {
        bail!("git rev-list: {}", out.stderr);
    }
    let rows: Vec<Vec<gix::ObjectId>> = out
        .stdout
        .lines()
        .map(|l| {
            l.split(' ')
                .filter_map(|h| gix::ObjectId::from_hex(h.as_bytes()).ok())
                .collect()
        })
        .collect();
    let discarded: std::collections::HashSet<gix::ObjectId> =
        rows.iter().filter_map(|r| r.first().copied()).collect();
    for row in &rows {
        let (&c, parents) = row.split_first().context("rev-list output")?;
        if parents.iter().any(|p| discarded.contains(p)) {
            continue; // above another discarded commit
        }
        // a commit that breaks a rule, or follows a commit that is no entry, is
        // not one itself
        let Ok(entry) = check_entry(store.repo(), writer, c, known) else {
            continue;
        };
        return Ok(Some(format!(
            "receipt #{} ({}), a valid entry signed by the writer",
            entry.receipt.body().chain.index,
            entry.receipt.id()
        )));
    }
    Ok(None)
}

/// The keys a server knows, for entries that carry no `signer.pub` (written before
/// entries did): the signers at the tip of every protected branch and of HEAD,
/// and `receipt.trustedKey`. They only check a signature; trust is decided per
/// protected branch by [`gate_update`].
fn known_keys(store: &Store, protected: &[String]) -> TrustSet {
    let mut trust = TrustSet::default();
    let head = match store.repo().head_name() {
        Ok(Some(name)) => Some(name.as_bstr().to_string()),
        _ => None,
    };
    for name in head.iter().chain(protected) {
        let tip = store
            .repo()
            .try_find_reference(name.as_str())
            .ok()
            .flatten()
            .and_then(|mut r| r.peel_to_commit().ok().map(|c| c.id));
        if let Some(tip) = tip
            && let Ok(c) = contract_at(store, tip, name)
        {
            trust.add_contract(c);
        }
    }
    for line in store.config_strings("receipt.trustedKey") {
        if let Ok(k) = git_receipt::sign::PublicKey::from_openssh(&line) {
            trust.add(k, TrustOrigin::Config);
        }
    }
    trust
}

/// Why the server refuses an update of a log ref (`refs/receipt-logs/<writer>/<blob>`),
/// if it does: a log ref is created pointing at the blob its name gives, or deleted
/// (`prune-logs`); it never changes, so what a name promises is what it holds.
fn log_refusal(store: &Store, u: &hooks::ReceivedRef) -> Option<String> {
    let new = u.new?; // deletion: logs may be pruned
    let rest = &u.name[git_receipt::store::logs::LOG_PREFIX.len()..];
    let named = rest
        .rsplit_once('/')
        .filter(|(w, _)| git_receipt::receipt::is_valid_writer_id(w))
        .and_then(|(_, b)| gix::ObjectId::from_hex(b.as_bytes()).ok());
    let Some(named) = named else {
        return Some(format!(
            "{}: not a log ref name (refs/receipt-logs/<writer>/<blob id>)\n",
            u.name
        ));
    };
    if u.old.is_some() {
        return Some(format!(
            "{}: a log ref is never updated, only created or deleted\n",
            u.name
        ));
    }
    let is_blob = store
        .repo()
        .find_header(new)
        .is_ok_and(|h| h.kind() == gix::object::Kind::Blob);
    if new != named || !is_blob {
        return Some(format!(
            "{}: points at {}, but a log ref must point at the blob its name gives\n",
            u.name,
            new.to_hex_with_len(7)
        ));
    }
    None
}

/// The branch whose tip gives signers and required checks to a protected branch
/// that this push creates: an existing protected branch other than the one
/// created (the one HEAD names first, when it is protected), never an
/// unprotected one, whose signers are whatever its last unchecked push made them.
/// `None` when no protected branch exists.
fn creation_baseline(protected: &Protected, created: &str) -> Option<(String, gix::ObjectId)> {
    protected
        .existing
        .iter()
        .find(|(name, _)| name != created)
        .cloned()
}

/// Whether the server has any branch (a ref under refs/heads/ that is not
/// symbolic): before the very first push it has none.
fn has_any_branch(store: &Store) -> Result<bool> {
    let refs = store
        .repo()
        .references()
        .context("listing the server's refs")?;
    let mut branches = refs
        .prefixed("refs/heads/")
        .context("listing refs/heads/")?;
    Ok(branches.any(|r| r.is_ok_and(|r| r.target().try_id().is_some())))
}

/// The signers the server trusts when judging an update: those at the trusted
/// revision, plus `receipt.trustedKey` in the server's config.
fn server_trust(store: &Store, trusted: gix::ObjectId, label: &str) -> Result<(TrustSet, String)> {
    let mut trust = TrustSet::default();
    trust.add_contract(contract_at(store, trusted, label)?);
    for line in store.config_strings("receipt.trustedKey") {
        trust.add(
            git_receipt::sign::PublicKey::from_openssh(&line)
                .with_context(|| format!("git config receipt.trustedKey = {line:?}"))?,
            TrustOrigin::Config,
        );
    }
    Ok((
        trust,
        format!("signers of .gitreceipts at {label} and receipt.trustedKey"),
    ))
}

fn pre_receive(ctx: &Context, input: &str) -> Result<ExitCode> {
    let mut store = ctx.store()?;
    let pushed = hooks::parse_pre_receive(input).map_err(anyhow::Error::msg)?;
    let protected = match Protected::load(&store) {
        Ok(p) => p,
        Err(why) => {
            eprint!(
                "git-receipt: refusing the push: this server's protection is misconfigured\n{}hint: an administrator fixes receipt.protectedBranch on the server (git config --get-all receipt.protectedBranch)\n",
                escape_lines(&format!("{why}\n"))
            );
            return Ok(ExitCode::from(1));
        }
    };
    let mut refused = String::new();
    // every rule applies to the ref an update really moves: a push to a symbolic
    // ref (`master` -> `main`) is an update of its target
    let mut updates: Vec<hooks::ReceivedRef> = Vec::with_capacity(pushed.len());
    for u in pushed {
        let name = match resolve_symref(&store, &u.name) {
            Ok(name) => name,
            Err(why) => {
                refused.push_str(&why);
                continue;
            }
        };
        if name != u.name {
            eprintln!(
                "git-receipt: {} is a symbolic ref to {} on this server: the push is judged as an update of {}",
                escape(&u.name),
                escape(&name),
                escape(&name)
            );
        }
        if updates.iter().any(|v| v.name == name) {
            continue; // the same ref by two names: git makes them agree
        }
        updates.push(hooks::ReceivedRef { name, ..u });
    }
    // Only a protected branch's update is decided from the receipt index: a push
    // of receipts alone costs what its new entries cost, never the index. When
    // one is, bring the server's own index up to date (and write it) before reads
    // see the proposed refs: the chains in the push are then indexed in memory on
    // top of it, and never written, since the push may yet be refused.
    let gated = updates.iter().any(|u| protected.covers(&u.name));
    if gated {
        store.receipt_index()?;
    }
    store.see_quarantine()?;
    let mut chains_refused = Vec::new();
    // read only for an entry that carries no signer.pub (written before entries did)
    let known_set = std::cell::OnceCell::new();
    let known = |fp: &str| {
        known_set
            .get_or_init(|| known_keys(&store, &protected.existing_names()))
            .lookup(fp)
            .map(|t| t.key.clone())
    };
    for u in updates
        .iter()
        .filter(|u| u.name.starts_with("refs/receipts/"))
    {
        if let Some(why) = chain_refusal(&store, u, &known) {
            refused.push_str(&why);
            chains_refused.push(u.name.as_str());
        }
    }
    for u in updates
        .iter()
        .filter(|u| u.name.starts_with(git_receipt::store::logs::LOG_PREFIX))
    {
        if let Some(why) = log_refusal(&store, u) {
            refused.push_str(&why);
        }
    }
    // receipts that arrive in this same push count: reads see the proposed refs
    // (notes refs are display only and free to move)
    for u in &updates {
        if u.name.starts_with("refs/receipts/") || u.name.starts_with("refs/notes/receipts/") {
            store.override_ref(&u.name, u.new);
        }
    }
    warn_if_nothing_protected(&store, &protected, &updates);
    let mut branches_deleted = Vec::new();
    // the very first push (the server has no branch yet) has nothing to gate by
    let first_push = !has_any_branch(&store)?;
    for u in updates.iter().filter(|u| protected.covers(&u.name)) {
        let Some(new) = u.new else {
            refused.push_str(&format!(
                "{}: deleting a protected branch by push is refused\n",
                u.name
            ));
            branches_deleted.push(u.name.as_str());
            continue;
        };
        let (trusted, label) = match u.old {
            Some(old) => (old, format!("{} ({})", u.name, old.to_hex_with_len(7))),
            None => match creation_baseline(&protected, &u.name) {
                Some((name, tip)) => (tip, format!("{name} ({})", tip.to_hex_with_len(7))),
                None if !first_push => {
                    refused.push_str(&format!(
                        "{}: creating a protected branch is refused: no protected branch exists on this server to take its signers and required checks from, and an unprotected branch's are whatever its last push made them\n  fix: an administrator creates {} on the server itself (git update-ref {} <commit>), or protects the branch it is made from first (git config --add receipt.protectedBranch main)\n",
                        u.name, u.name, u.name
                    ));
                    continue;
                }
                None => {
                    eprintln!(
                        "git-receipt: {} is created by this push and the server has no branch yet to take signers and required checks from, so it is not gated",
                        escape(&u.name)
                    );
                    continue;
                }
            },
        };
        gate_update(ctx, &store, &u.name, new, trusted, &label, &mut refused)?;
    }
    if !refused.is_empty() {
        let mut hints = String::new();
        for name in chains_refused {
            hints.push_str(&format!(
                "hint: an administrator who must remove or rewind {name} does it on the server itself (e.g. git update-ref -d {name}), not by a push\n"
            ));
        }
        for name in branches_deleted {
            hints.push_str(&format!(
                "hint: an administrator who must delete {name} does it on the server itself (e.g. git update-ref -d {name}), not by a push\n"
            ));
        }
        // ref names, check names and reasons come from the pusher
        eprint!(
            "git-receipt: refusing the push\n{}{}",
            escape_lines(&refused),
            escape_lines(&hints)
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Say loudly, on every push, when no protected branch exists on the server (nor
/// is created by this push) while another branch is pushed: the hook then guards
/// nothing, which a team must not learn by accident.
fn warn_if_nothing_protected(store: &Store, protected: &Protected, updates: &[hooks::ReceivedRef]) {
    let guarded = !protected.existing.is_empty()
        || updates
            .iter()
            .any(|u| protected.covers(&u.name) && u.new.is_some());
    let protected = &protected.patterns;
    let unguarded: Vec<&str> = updates
        .iter()
        .filter(|u| u.name.starts_with("refs/heads/") && u.new.is_some())
        .map(|u| u.name.as_str())
        .collect();
    if guarded || unguarded.is_empty() {
        return;
    }
    let which = if !store.config_strings("receipt.protectedBranch").is_empty() {
        format!(
            "receipt.protectedBranch names {}, which does not exist",
            protected.join(", ")
        )
    } else if let Some(head) = protected.first() {
        format!("receipt.protectedBranch is unset and HEAD names {head}, which does not exist")
    } else {
        "receipt.protectedBranch is unset and HEAD names no branch".to_owned()
    };
    eprint!(
        "{}",
        escape_lines(&format!(
            "git-receipt: WARNING: this server protects no branch: {which}, so {} is accepted without any receipt check\n\
             hint: on the server, name the branch to protect: git config receipt.protectedBranch main\n\
             hint: with gitolite, in gitolite.conf: config receipt.protectedBranch = main\n",
            unguarded.join(", ")
        ))
    );
}

/// Gate the new tip `new` of protected branch `name` on present receipts for every
/// check required at `new` or at the trusted revision `trusted`, signed by the
/// signers there; append what is wrong to `refused`.
fn gate_update(
    ctx: &Context,
    store: &Store,
    name: &str,
    new: gix::ObjectId,
    trusted: gix::ObjectId,
    label: &str,
    refused: &mut String,
) -> Result<()> {
    let short = new.to_hex_with_len(7);
    // A `.gitreceipts` over the size limit (at the new tip or the trusted
    // revision) is refused unread: the push is refused, the hook does not fail.
    let too_large = |e: anyhow::Error, refused: &mut String| match e
        .downcast_ref::<git_receipt::store::StoreError>()
    {
        Some(big @ git_receipt::store::StoreError::ContractTooLarge { .. }) => {
            refused.push_str(&format!(
                "{name} ({short}): refused: a protected branch's .gitreceipts must be at most {} bytes (4 MiB): {}\n",
                git_receipt::contract::MAX_CONTRACT_BYTES,
                big.to_string().lines().next().unwrap_or_default()
            ));
            Ok(())
        }
        _ => Err(e),
    };
    let trust = match server_trust(store, trusted, label) {
        Ok(trust) => trust,
        Err(e) => return too_large(e, refused),
    };
    let baseline = Baseline::At {
        commit: trusted,
        label: label.to_owned(),
    };
    let report = match evaluate_rev_trusting(ctx, store, &new.to_string(), Some(&trust), &baseline)
    {
        Ok(report) => report,
        Err(e) => return too_large(e, refused),
    };
    for notice in &report.notices {
        eprintln!(
            "git-receipt: notice: {} ({short}): {}",
            escape(name),
            escape(notice)
        );
    }
    for u in report.undecided.iter().filter(|u| u.required) {
        refused.push_str(&format!(
            "{name} ({short}): cannot decide {}: {}\n",
            u.name, u.error
        ));
    }
    let failing: Vec<&CheckState> = report
        .states
        .iter()
        .filter(|s| s.required && s.state != State::Present)
        .collect();
    if !failing.is_empty() {
        refused.push_str(&format!(
            "{name} ({short}) lacks present receipts signed by the signers in .gitreceipts at {label}:\n"
        ));
        refused.push_str(&render_rows(&failing, false));
        for s in &failing {
            refused.push_str(&format!("  fix: {} && git receipt push\n", report.fix(s)));
        }
    }
    // receipt.requireAcceptance: a trusted acceptance of exactly this tree by each
    // named signer, read from the chains (never re-decided here)
    let signers = store.config_strings("receipt.requireAcceptance");
    if !signers.is_empty() {
        let tree = store.commit_tree(new)?;
        for signer in signers.iter().flat_map(|s| s.split(',')).map(str::trim) {
            if signer.is_empty() {
                continue;
            }
            if let Err(why) = super::gate::accepted_by(store, &trust.0, new, tree, signer)? {
                refused.push_str(&format!(
                    "{name} ({short}) is not accepted by {} (receipt.requireAcceptance): {}\n  fix: run `git receipt gate {short} --record` as {}, then git receipt push\n",
                    escape(signer),
                    escape(&why),
                    escape(signer)
                ));
            }
        }
    }
    Ok(())
}
