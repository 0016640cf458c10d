//! Retention (`git receipt retain`): which receipts may be dropped to stubs.
//!
//! A receipt is dropped, keeping its id in a stub (`store::stub`), only when
//! every one of these holds; anything else keeps it whole:
//!
//! 1. it is a check's receipt (acceptances and reviews are decisions: kept);
//! 2. its check started before the cutoff (a time that does not read is young);
//! 3. its subject commit is not reached by any protected branch (as the server
//!    protects them, or a remote-tracking branch of the same name) or any tag;
//! 4. no receipt of any chain here names it (`supersedes`, an acceptance's
//!    evidence), so nothing that stays points at a receipt that went;
//! 5. it is not the tip of its chain (the newest entry signs the stubs below).
//!
//! Retention rewrites chains, which no push may do: it runs where the chains
//! live (the server's repository), and the clones take the rewritten chains
//! (see `docs/trust.md`, "Retention").

use std::collections::{BTreeMap, HashSet};

use gix::ObjectId;

use crate::policy::server::{Protected, ref_pattern_matches};
use crate::receipt::{Kind, Receipt, Unverified};
use crate::store::chain::ChainItem;
use crate::store::retain::Rewritten;
use crate::store::stub::Stub;
use crate::store::{Store, StoreError};

/// What decides whether a receipt goes.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Receipts whose checks started before this (Unix ms) may go.
    pub cutoff_ms: u64,
    /// Commits reached by a protected branch or a tag: their receipts stay.
    pub kept: HashSet<ObjectId>,
    /// Receipt ids that some receipt names: they stay.
    pub named: HashSet<String>,
}

/// Why a receipt stays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Keep {
    /// The newest entry of its chain.
    Tip,
    /// An acceptance or a review.
    Decision,
    /// Its check started at or after the cutoff.
    Young,
    /// Its commit is reached by a protected branch or a tag.
    Reached,
    /// Another receipt names it.
    Named,
}

impl Keep {
    /// A short name, for `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Keep::Tip => "tip",
            Keep::Decision => "decision",
            Keep::Young => "young",
            Keep::Reached => "reached",
            Keep::Named => "named",
        }
    }
}

/// Why `receipt` stays under `rules`, or `None` when it may go.
pub fn keep(receipt: &Receipt<Unverified>, is_tip: bool, rules: &Rules) -> Option<Keep> {
    let b = receipt.body();
    if is_tip {
        return Some(Keep::Tip);
    }
    // a receipt that parses holds an acceptance or a review exactly when its
    // kind says so (the schema check in receipt.rs)
    if b.kind != Kind::Check {
        return Some(Keep::Decision);
    }
    match crate::clock::timestamp_ms(&b.result.started_at) {
        Some(t) if t < rules.cutoff_ms => {}
        _ => return Some(Keep::Young),
    }
    let subject = ObjectId::from_hex(b.subject.commit.as_bytes()).ok();
    if subject.is_none_or(|c| rules.kept.contains(&c)) {
        return Some(Keep::Reached);
    }
    if rules.named.contains(receipt.id()) {
        return Some(Keep::Named);
    }
    None
}

/// The ids `receipt` names: what it supersedes and an acceptance's evidence.
pub fn named_by(receipt: &Receipt<Unverified>) -> Vec<String> {
    let b = receipt.body();
    let mut out: Vec<String> = b.supersedes.iter().cloned().collect();
    if let Some(a) = &b.acceptance {
        for c in &a.criteria {
            out.extend(c.evidence.iter().cloned());
        }
    }
    out
}

/// One chain's plan: the stubs to write, by index, and how many receipts stay
/// for each reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Index to the stub that replaces the receipt there.
    pub stubs: BTreeMap<u64, Stub>,
    /// Receipts kept, by reason.
    pub kept: BTreeMap<Keep, u64>,
    /// Stubs already in the chain (an earlier retention's).
    pub stubs_before: u64,
}

/// The plan for one chain, given its items oldest first.
pub fn plan(items: &[ChainItem], rules: &Rules, dropped_at: &str) -> Plan {
    let mut out = Plan::default();
    let last = items.len().saturating_sub(1);
    for (n, item) in items.iter().enumerate() {
        match item {
            ChainItem::Stub(_) => out.stubs_before += 1,
            ChainItem::Entry(e) => match keep(&e.receipt, n == last, rules) {
                Some(why) => *out.kept.entry(why).or_default() += 1,
                None => {
                    let stub = Stub::of(&e.receipt, dropped_at)
                        .expect("a receipt kept for nothing is a check");
                    out.stubs.insert(stub.index, stub);
                }
            },
        }
    }
    out
}

/// Why retention cannot run here.
#[derive(Debug, thiserror::Error)]
pub enum RetainError {
    /// Reading or writing the repository failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Nothing is protected, so every old receipt would go.
    #[error(
        "no protected branch exists here (receipt.protectedBranch, or the branch HEAD names): retention keeps the receipts of what protected branches and tags reach, and with none it would drop them all"
    )]
    NothingProtected,
    /// `receipt.protectedBranch` does not read.
    #[error("receipt.protectedBranch: {0}")]
    Misconfigured(String),
    /// A shallow repository cannot say what its branches reach.
    #[error(
        "this repository is shallow: what its branches reach below the cut is not here, so retention could drop receipts of protected history"
    )]
    Shallow,
}

/// The commits that protected branches (and the remote-tracking branches of
/// the same names) and tags reach, with the refs they were read from.
pub fn kept_commits(store: &Store) -> Result<(HashSet<ObjectId>, Vec<String>), RetainError> {
    if store.is_shallow() {
        return Err(RetainError::Shallow);
    }
    let protected =
        Protected::load(store).map_err(|e| RetainError::Misconfigured(e.to_string()))?;
    let mut refs: Vec<String> = protected.existing.iter().map(|(n, _)| n.clone()).collect();
    for (name, _) in store.refs_named_under("refs/remotes/")? {
        let Some(rest) = name
            .strip_prefix("refs/remotes/")
            .and_then(|r| r.split_once('/'))
            .map(|(_, b)| b)
        else {
            continue;
        };
        let as_branch = format!("refs/heads/{rest}");
        if protected
            .patterns
            .iter()
            .any(|p| ref_pattern_matches(p, &as_branch))
        {
            refs.push(name);
        }
    }
    if refs.is_empty() {
        return Err(RetainError::NothingProtected);
    }
    // tags, peeled to the commits they name (a tag of a tree or a blob reaches no commit)
    let tags = store.run_git(&[
        "for-each-ref",
        "--format=%(refname) %(objecttype) %(*objecttype)",
        "refs/tags/",
    ])?;
    if !tags.ok {
        return Err(StoreError::GitCommand {
            args: "for-each-ref refs/tags/".to_owned(),
            stderr: tags.stderr,
        }
        .into());
    }
    for line in tags.stdout.lines() {
        let mut parts = line.split(' ');
        if let (Some(name), Some(kind), peeled) = (parts.next(), parts.next(), parts.next())
            && (kind == "commit" || peeled == Some("commit"))
        {
            refs.push(name.to_owned());
        }
    }
    let input: String = refs.iter().map(|r| format!("{r}^{{commit}}\n")).collect();
    let out = store.run_git_input(&["rev-list", "--stdin"], input.as_bytes())?;
    if !out.ok {
        return Err(StoreError::GitCommand {
            args: "rev-list --stdin".to_owned(),
            stderr: out.stderr,
        }
        .into());
    }
    let kept = out
        .stdout
        .lines()
        .filter_map(|l| ObjectId::from_hex(l.trim().as_bytes()).ok())
        .collect();
    Ok((kept, refs))
}

/// What retention did (or, dry, would do) to one chain.
#[derive(Debug, Clone)]
pub struct ChainOutcome {
    /// The writer.
    pub writer: String,
    /// Its plan.
    pub plan: Plan,
    /// What the rewrite did (`None`: dry run, or nothing to drop).
    pub rewritten: Option<Rewritten>,
}

/// Every chain's items, oldest first, read once: (writer, items).
type Chains = Vec<(String, Vec<ChainItem>)>;

/// Read every chain whole, oldest entry first.
pub fn read_chains(store: &Store) -> Result<Chains, StoreError> {
    let mut out = Vec::new();
    for (writer, _) in store.writers()? {
        if let Some(tip) = store.chain_tip(&writer)? {
            let items = store.chain_items(&writer, tip)?;
            out.push((writer, items));
        }
    }
    Ok(out)
}

/// The ids the receipts among `items` name.
pub fn named_ids<'a>(items: impl IntoIterator<Item = &'a ChainItem>) -> HashSet<String> {
    items
        .into_iter()
        .filter_map(|i| match i {
            ChainItem::Entry(e) => Some(named_by(&e.receipt)),
            ChainItem::Stub(_) => None,
        })
        .flatten()
        .collect()
}

/// Plan every chain under `rules` (with `named` filled from the chains), and
/// unless `dry_run`, rewrite those with receipts to drop and rebuild their notes.
pub fn retain(
    store: &Store,
    mut rules: Rules,
    dropped_at: &str,
    dry_run: bool,
) -> Result<Vec<ChainOutcome>, RetainError> {
    let chains = read_chains(store)?;
    rules.named = named_ids(chains.iter().flat_map(|(_, items)| items));
    let mut out = Vec::new();
    for (writer, items) in chains {
        let plan = plan(&items, &rules, dropped_at);
        let rewritten = if dry_run || plan.stubs.is_empty() {
            None
        } else {
            let r = store.rewrite_with_stubs(&writer, &items, &plan.stubs)?;
            store.restart_notes(&writer)?;
            Some(r)
        };
        out.push(ChainOutcome {
            writer,
            plan,
            rewritten,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
