//! `git receipt prune-logs`: drop old full output logs; the receipts stay.

use std::collections::HashMap;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use gix::ObjectId;

use git_receipt::store::Store;
use git_receipt::store::logs::LOG_PREFIX;

use super::Context;

/// Drop the full output logs of receipts older than AGE; the receipts stay.
///
/// Deletes the log refs (refs/receipt-logs/<writer>/<blob>) whose receipts all
/// started before the cutoff; `git gc` then frees the logs. The receipts, with
/// their signed output tails, stay and still verify. With --push, deletes the same
/// log refs on the remote as well: log refs are the only receipt refs that may be
/// deleted by a push, and the server's pre-receive hook allows nothing else. A log
/// ref that no receipt here names is left alone (fetch its chain first).
///
/// Examples:
///
///     git receipt prune-logs --older-than 90d --dry-run
///     git receipt prune-logs --older-than 12w --push origin
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PruneLogsArgs {
    /// The age beyond which logs go: a number and a unit, d (days), w (weeks) or h (hours).
    #[arg(long, value_name = "AGE")]
    pub older_than: String,
    /// Also delete them from this remote (default origin).
    #[arg(long, value_name = "REMOTE", num_args = 0..=1, default_missing_value = "origin")]
    pub push: Option<String>,
    /// Say what would go, delete nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `90d` -> milliseconds; bounded so a cutoff never wraps.
pub(super) fn parse_age(text: &str) -> Option<u64> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = text.split_at(split);
    let n: u64 = n.parse().ok()?;
    let unit_ms: u64 = match unit {
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => return None,
    };
    n.checked_mul(unit_ms)
        .filter(|ms| *ms <= 100 * 365 * 86_400_000)
}

/// For each log blob a receipt here names: the newest start time (Unix ms) among
/// the receipts that name it. A chain that cannot be read is skipped and named.
fn newest_use(store: &Store) -> Result<HashMap<ObjectId, u64>> {
    let mut out: HashMap<ObjectId, u64> = HashMap::new();
    for (writer, _) in store.writers()? {
        if !git_receipt::receipt::is_valid_writer_id(&writer) {
            continue;
        }
        let entries = match store.read_chain(&writer) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("git-receipt: warning: skipped chain {writer}: {e}");
                continue;
            }
        };
        for e in entries {
            let r = &e.receipt.body().result;
            let (Some(blob), Some(ms)) = (
                r.log
                    .as_deref()
                    .and_then(|h| ObjectId::from_hex(h.as_bytes()).ok()),
                git_receipt::trust::timestamp_ms(&r.started_at),
            ) else {
                continue;
            };
            let newest = out.entry(blob).or_insert(ms);
            *newest = (*newest).max(ms);
        }
    }
    Ok(out)
}

/// Whether the log ref `name` (`refs/receipt-logs/<writer>/<blob>`) is older than the cutoff.
fn is_old(name: &str, used: &HashMap<ObjectId, u64>, cutoff: u64) -> Option<bool> {
    let blob = name.rsplit_once('/')?.1;
    let blob = ObjectId::from_hex(blob.as_bytes()).ok()?;
    used.get(&blob).map(|newest| *newest < cutoff)
}

/// Prune.
pub fn cmd_prune_logs(ctx: &Context, args: PruneLogsArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let Some(age) = parse_age(&args.older_than) else {
        bail!(
            "--older-than {:?} is not an age\nhint: a number and a unit: 90d, 12w or 48h",
            args.older_than
        );
    };
    let now = git_receipt::clock::now_ms();
    let cutoff = now.saturating_sub(age);
    let used = newest_use(&store)?;
    let verb = if args.dry_run {
        "would prune"
    } else {
        "pruned"
    };

    let mut local = 0;
    let mut unknown = 0;
    for lr in store.log_refs()? {
        match is_old(&lr.name, &used, cutoff) {
            Some(true) => {
                if args.dry_run {
                    println!("{}", lr.name);
                } else {
                    store.delete_log_ref(&lr.name)?;
                }
                local += 1;
            }
            Some(false) => {}
            None => unknown += 1,
        }
    }
    eprintln!(
        "git-receipt: {verb} {local} log{} older than {} here",
        if local == 1 { "" } else { "s" },
        args.older_than
    );
    if unknown > 0 {
        eprintln!(
            "git-receipt: left {unknown} log ref{} that no receipt here names (fetch the chains first: git receipt fetch)",
            if unknown == 1 { "" } else { "s" }
        );
    }

    if let Some(remote) = &args.push {
        let listed = store.run_git(&["ls-remote", remote, &format!("{LOG_PREFIX}*")])?;
        if !listed.ok {
            bail!(
                "cannot list the log refs on {remote}: {}\nhint: check the remote with `git ls-remote {remote}`",
                listed.stderr
            );
        }
        let old: Vec<String> = listed
            .stdout
            .lines()
            .filter_map(|l| l.split_once('\t').map(|(_, name)| name.to_owned()))
            .filter(|name| is_old(name, &used, cutoff) == Some(true))
            .collect();
        if !args.dry_run {
            for batch in old.chunks(200) {
                let mut argv = vec!["push", "--no-verify", "--quiet", remote.as_str()];
                let specs: Vec<String> = batch.iter().map(|n| format!(":{n}")).collect();
                argv.extend(specs.iter().map(String::as_str));
                let out = store.run_git(&argv)?;
                if !out.ok {
                    bail!(
                        "deleting old log refs on {remote} failed: {}\nhint: the server must allow deleting refs/receipt-logs/* (see docs/workflows.md)",
                        out.stderr
                    );
                }
            }
        } else {
            for n in &old {
                println!("{remote} {n}");
            }
        }
        eprintln!(
            "git-receipt: {verb} {} log{} older than {} on {remote}",
            old.len(),
            if old.len() == 1 { "" } else { "s" },
            args.older_than
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::parse_age;

    #[test]
    fn ages_have_a_unit_and_a_bound() {
        assert_eq!(parse_age("90d"), Some(90 * 86_400_000));
        assert_eq!(parse_age("2w"), Some(14 * 86_400_000));
        assert_eq!(parse_age("48h"), Some(48 * 3_600_000));
        for bad in ["90", "d", "-1d", "1y", "99999999999999999999d", "1000000w"] {
            assert_eq!(parse_age(bad), None, "{bad}");
        }
    }
}
