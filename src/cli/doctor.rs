//! `git receipt doctor`: how this clone is set up for receipts, each line OK or
//! the command that mends it.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::{CHAIN_REFSPEC, Context, NOTES_REFSPEC, current_config_values};
use git_receipt::keyfile;
use git_receipt::receipt::writer_id;
use git_receipt::store::Store;
use git_receipt::text::escape;

/// Check how this clone is set up for receipts.
///
/// One line per item, each `ok` or what to run: the remote's fetch refspecs for
/// receipt chains and notes, the exclusion of your own chain from plain fetches,
/// the pre-push hook, your signing key (and whether it is a signer in
/// .gitreceipts on the default branch), how it signs (in-process, or through
/// ssh-agent, which must hold it), notes.displayRef (so `git log` shows
/// receipts), shallow history, and whether the remote has receipt chains this
/// clone lacks. Exits 0 when every line is ok, 1 when something needs doing.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The remote to check (default: receipt.remote, or origin).
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,
    /// Do not ask the remote which receipt chains it has.
    #[arg(long)]
    pub offline: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One item of the diagnosis.
struct Line {
    item: &'static str,
    ok: bool,
    detail: String,
    /// What to run when not ok.
    fix: Option<String>,
}

fn ok(item: &'static str, detail: impl Into<String>) -> Line {
    Line {
        item,
        ok: true,
        detail: detail.into(),
        fix: None,
    }
}

fn fix(item: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Line {
    Line {
        item,
        ok: false,
        detail: detail.into(),
        fix: Some(fix.into()),
    }
}

/// Diagnose.
pub fn cmd_doctor(ctx: &Context, args: DoctorArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let remote = args
        .remote
        .clone()
        .or_else(|| store.config_string("receipt.remote"))
        .unwrap_or_else(|| "origin".to_owned());
    let mut lines = Vec::new();
    let has_remote = store.has_remote(&remote)?;
    let fetch_specs = if has_remote {
        current_config_values(&store, &format!("remote.{remote}.fetch"))?
    } else {
        Vec::new()
    };
    let source = ctx.key_source(Some(&store))?;
    let key = if source.is_present() {
        Some(keyfile::public_key(&source)?)
    } else {
        None
    };
    let writer = match &key {
        Some(k) => Some(writer_id(k, &ctx.chain_name(&store)?)),
        None => None,
    };

    // the remote and its refspecs
    if !has_remote {
        lines.push(fix(
            "remote",
            format!("no remote {remote:?}: receipts stay in this clone"),
            "git remote add origin <url>, then git receipt init (or pass --remote NAME)",
        ));
    } else {
        let missing: Vec<&str> = [CHAIN_REFSPEC, NOTES_REFSPEC]
            .into_iter()
            .filter(|spec| !fetch_specs.iter().any(|v| v == spec))
            .collect();
        lines.push(if missing.is_empty() {
            ok(
                "refspecs",
                format!("`git fetch {remote}` brings receipt chains and notes"),
            )
        } else {
            fix(
                "refspecs",
                format!(
                    "remote.{remote}.fetch lacks {}: a plain `git fetch` does not bring receipts",
                    missing.join(" and ")
                ),
                format!("git receipt init --remote {remote} (or git receipt fetch each time)"),
            )
        });
        if let Some(w) = &writer
            && missing.is_empty()
        {
            let exclusion = format!("^refs/receipts/{w}");
            lines.push(if fetch_specs.contains(&exclusion) {
                ok("own chain", "your own chain is excluded from plain fetches")
            } else {
                fix(
                    "own chain",
                    "a plain fetch would try to overwrite your own chain, which only you write",
                    format!("git receipt init --remote {remote}"),
                )
            });
        }
    }

    // the pre-push hook
    let hooks = super::hook::hooks_dir(&store)?;
    let pre_push = std::fs::read_to_string(hooks.join("pre-push")).unwrap_or_default();
    lines.push(if pre_push.contains(git_receipt::hooks::MARKER) {
        ok("hook", "the pre-push hook checks receipts before a push")
    } else {
        fix(
            "hook",
            "no pre-push hook: a push does not check or carry receipts",
            "git receipt install-hooks",
        )
    });

    // the key, and whether the default branch trusts it
    match (&key, &writer) {
        (Some(k), Some(w)) => {
            let fp = k.fingerprint();
            let names = super::signer_names(&store);
            match git_receipt::trust::default_branch(&store)? {
                Some((branch, tip)) => {
                    let branch = branch
                        .strip_prefix("refs/heads/")
                        .or_else(|| branch.strip_prefix("refs/remotes/"))
                        .unwrap_or(&branch)
                        .to_owned();
                    let contract = super::status::contract_at(&store, tip, &branch)?;
                    let signer = contract
                        .signers
                        .iter()
                        .find(|s| s.key.fingerprint() == fp);
                    lines.push(match signer {
                        Some(s) => ok(
                            "key",
                            format!("your key {fp} is signer {:?} on {branch}", s.name),
                        ),
                        None => fix(
                            "key",
                            format!(
                                "your key {fp} (writer {}) is not a signer in .gitreceipts on {branch}: others do not count your receipts",
                                names.label(w)
                            ),
                            format!(
                                "git config -f .gitreceipts signer.<your-name>.key \"$(git receipt key show)\" and merge it into {branch}"
                            ),
                        ),
                    });
                }
                None => lines.push(ok(
                    "key",
                    format!("your key {fp} (no default branch found to check its signers)"),
                )),
            }
        }
        _ => lines.push(ok(
            "key",
            "no signing key: this clone can verify but not write receipts (`git receipt key generate`, or the first `git receipt run`, creates one)",
        )),
    }

    // how the key signs: in-process, or through an ssh-agent that must hold it
    if key.is_some() {
        lines.push(match keyfile::load_existing(&source) {
            Ok(signing) => ok("signing", keyfile::signing_route(&source, &signing)),
            Err(err) => {
                let message = err.to_string();
                let hints = super::hints::for_chain(&err);
                let hint = hints
                    .iter()
                    .find_map(|line| line.strip_prefix("hint: "))
                    .unwrap_or("git receipt key show (it says what is wrong)");
                fix("signing", message.lines().next().unwrap_or_default(), hint)
            }
        });
    }

    // notes in git log
    let display = current_config_values(&store, "notes.displayRef")?;
    lines.push(if display.iter().any(|v| v == "refs/notes/receipts/*") {
        ok("notes", "`git log` shows receipts (notes.displayRef)")
    } else {
        fix(
            "notes",
            "`git log` does not show receipts",
            "git config --add notes.displayRef 'refs/notes/receipts/*'",
        )
    });

    // shallow history
    // `fetch --since` leaves receipt chains shallow by design; only a cut in
    // the branches' history keeps status and gate from looking back
    let shallow = store.shallow_commits().unwrap_or_default();
    let chains_only = shallow.iter().all(|&c| {
        store
            .file_id_at(c, "receipt.json")
            .is_ok_and(|blob| blob.is_some())
    });
    lines.push(if shallow.is_empty() {
        ok("history", "full history")
    } else if chains_only {
        ok(
            "history",
            "full history; receipt chains taken from a signed checkpoint up (`fetch --since`): verify with `git receipt verify --since-checkpoint`; `git receipt fetch --unshallow` takes the rest of them",
        )
    } else {
        fix(
            "history",
            "this clone is shallow: status and gate cannot look behind its edge",
            "git fetch --unshallow",
        )
    });

    // receipt chains on the remote
    if has_remote && !args.offline {
        lines.push(remote_chains(&store, &remote)?);
    }

    let healthy = lines.iter().all(|l| l.ok);
    if args.json {
        let v = json!({
            "ok": healthy,
            "remote": remote,
            "items": lines.iter().map(|l| json!({
                "item": l.item,
                "ok": l.ok,
                "detail": l.detail,
                "fix": l.fix,
            })).collect::<Vec<_>>(),
            "notices": ctx.flush_notices(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for l in &lines {
            println!(
                "{:<9}  {:<4}  {}",
                l.item,
                if l.ok { "ok" } else { "FIX" },
                escape(&l.detail)
            );
            if let Some(f) = &l.fix {
                println!("{:<9}        run: {}", "", escape(f));
            }
        }
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Whether `remote` has receipt chains, and any this clone lacks or has older.
fn remote_chains(store: &Store, remote: &str) -> Result<Line> {
    let out = store.run_git(&["ls-remote", remote, "refs/receipts/*"])?;
    if !out.ok {
        return Ok(fix(
            "remote",
            format!("cannot list {remote}'s receipt refs: {}", out.stderr),
            format!("git ls-remote {remote} (check the URL and your access), or pass --offline"),
        ));
    }
    let mut total = 0;
    let mut behind = 0;
    for line in out.stdout.lines() {
        let Some((oid, name)) = line.split_once('\t') else {
            continue;
        };
        total += 1;
        let here = store.ref_value(name)?.map(|o| o.to_string());
        if here.as_deref() != Some(oid)
            && gix::ObjectId::from_hex(oid.as_bytes())
                .map(|o| !store.has_object(o))
                .unwrap_or(true)
        {
            behind += 1;
        }
    }
    Ok(if total == 0 {
        ok(
            "remote",
            format!("{remote} has no receipt chains yet (`git receipt push` sends yours)"),
        )
    } else if behind == 0 {
        ok(
            "remote",
            format!(
                "this clone has all {} on {remote}",
                super::plural(total as u64, "receipt chain", "receipt chains")
            ),
        )
    } else {
        fix(
            "remote",
            format!(
                "{} of {} on {remote} {} receipts this clone lacks",
                behind,
                super::plural(total as u64, "receipt chain", "receipt chains"),
                if behind == 1 { "has" } else { "have" }
            ),
            "git receipt fetch",
        )
    })
}
