//! The server's ref rules: what the pre-receive hook refuses, as typed
//! [`Refusal`]s, and what it has to say besides, as [`Event`]s.
//!
//! - A receipt chain (`refs/receipts/<writer>`) is append-only: a push may create
//!   one or add entries on top, each following every rule of
//!   [`crate::store::admit`], and may replace the top only when nothing it
//!   discards is an entry of the chain; never delete it.
//! - A log ref (`refs/receipt-logs/<writer>/<blob>`) is created pointing at the
//!   blob its name gives, or deleted; never changed.
//! - A protected branch (`receipt.protectedBranch`, or the branch HEAD names;
//!   patterns with `*`; symbolic refs resolved to what they move) is never
//!   deleted by push; its new tip is judged ([`super::judge()`]) against its old
//!   tip, or, when the push creates it, against an existing protected branch, by
//!   the signers there ([`super::trust::server`]).
//!
//! [`pre_receive`] applies them all; the CLI renders the words, adds hints and
//! picks the exit code.

use gix::ObjectId;

use super::PolicyError;
use super::acceptance::{NotAccepted, accepted_by};
use super::judge::{Baseline, Judgement, Options, Revision, judge};
use super::verdict::Require;
use crate::hooks::ReceivedRef;
use crate::sign::PublicKey;
use crate::store::query::ObjectKind;
use crate::store::{Store, StoreError};

/// git's own limit on a chain of symbolic refs (`SYMREF_MAXDEPTH`).
pub const SYMREF_MAX_DEPTH: usize = 5;

/// Why a `receipt.protectedBranch` value (or `--protect` argument) protects nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("receipt.protectedBranch (or --protect) {value:?} {why}, so it would protect nothing")]
pub struct BadProtection {
    /// The value, escaped for a terminal.
    pub value: String,
    /// What is wrong with it.
    pub why: String,
}

/// Why the server's protection cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Misconfigured {
    /// A `receipt.protectedBranch` value protects nothing.
    #[error(transparent)]
    Pattern(#[from] BadProtection),
    /// The refs it covers cannot be read, in words.
    #[error("{0}")]
    Unreadable(String),
}

/// Why the server refuses (part of) a push, typed; `Display` gives the words
/// (one line, without the trailing newline; [`Refusal::Lacking`] gives only its
/// first line: the CLI renders the rows).
#[derive(Debug)]
pub enum Refusal {
    /// The server's `receipt.protectedBranch` is unusable: the push is refused,
    /// not let through unprotected.
    Misconfigured(Misconfigured),
    /// A pushed ref's symbolic ref cannot be read.
    SymrefUnreadable {
        /// The ref as pushed.
        name: String,
        /// Why.
        error: String,
    },
    /// A pushed ref is a chain of more symbolic refs than git follows.
    SymrefTooDeep {
        /// The ref as pushed.
        name: String,
    },
    /// A ref under `refs/receipts/` whose name is no writer id.
    NotAChainName {
        /// The ref.
        name: String,
    },
    /// A push deletes a receipt chain.
    ChainDeleted {
        /// The ref.
        name: String,
    },
    /// A new entry of a chain breaks a rule of [`crate::store::admit`].
    ChainEntry {
        /// The ref.
        name: String,
        /// Its writer id.
        writer: String,
        /// The rule broken.
        refusal: Box<crate::store::admit::Refusal>,
    },
    /// A push replaces a chain's top and would discard a valid entry.
    ChainRewritten {
        /// The ref.
        name: String,
        /// The server's tip.
        old: ObjectId,
        /// The pushed tip.
        new: ObjectId,
        /// The entry discarded, in words.
        discards: String,
    },
    /// What replacing a chain's top discards cannot be told.
    ChainDiscardUnknown {
        /// The ref.
        name: String,
        /// The server's tip.
        old: ObjectId,
        /// The pushed tip.
        new: ObjectId,
        /// Why.
        error: String,
    },
    /// Whether the pushed tip descends from the server's cannot be told.
    ChainAncestryUnknown {
        /// The ref.
        name: String,
        /// The server's tip.
        old: ObjectId,
        /// The pushed tip.
        new: ObjectId,
        /// Why.
        error: String,
    },
    /// The chain below the new entries is not a valid chain (or its merge base
    /// with the server's cannot be computed).
    ChainBaseInvalid {
        /// The ref.
        name: String,
        /// Why.
        error: String,
        /// Whether the error is the merge base's (said as is).
        merge_base: bool,
    },
    /// A ref under `refs/receipt-logs/` whose name is not `<writer>/<blob id>`.
    NotALogRef {
        /// The ref.
        name: String,
    },
    /// A push moves an existing log ref.
    LogRefUpdated {
        /// The ref.
        name: String,
    },
    /// A log ref points at something else than the blob its name gives.
    LogRefMismatch {
        /// The ref.
        name: String,
        /// What it points at.
        new: ObjectId,
    },
    /// A push deletes, rewrites or adds a broken entry to a signed checkpoint
    /// chain (`refs/receipt-checkpoints/<writer>`).
    Checkpoint {
        /// The ref.
        name: String,
        /// What is wrong, in words.
        reason: String,
    },
    /// A push deletes a protected branch.
    ProtectedDeleted {
        /// The branch.
        name: String,
    },
    /// A push creates a protected branch while no protected branch exists to
    /// take signers and required checks from.
    ProtectedCreatedUnjudged {
        /// The branch.
        name: String,
    },
    /// A `.gitreceipts` at the new tip or the trusted revision is over the limit.
    ContractTooLarge {
        /// The branch.
        name: String,
        /// The pushed tip.
        new: ObjectId,
        /// The store's first line about it.
        detail: String,
    },
    /// A required check or review the server's history cannot decide.
    Undecided {
        /// The branch.
        name: String,
        /// The pushed tip.
        new: ObjectId,
        /// The check (or `review:<name>`).
        check: String,
        /// Why, in words.
        error: String,
    },
    /// Required checks or reviews at the new tip are not present.
    Lacking {
        /// The branch.
        name: String,
        /// The pushed tip.
        new: ObjectId,
        /// The trusted revision, as named.
        label: String,
        /// The judgement (its verdict for [`Require::Marked`] lists them).
        judgement: Box<Judgement>,
    },
    /// `receipt.requireAcceptance` names a signer that did not accept the tree.
    NotAccepted {
        /// The branch.
        name: String,
        /// The pushed tip.
        new: ObjectId,
        /// The signer as configured.
        signer: String,
        /// Why.
        why: Box<NotAccepted>,
    },
}

impl Refusal {
    /// The stable kebab-case name of the kind of refusal.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Misconfigured(_) => "misconfigured",
            Refusal::SymrefUnreadable { .. } => "symref-unreadable",
            Refusal::SymrefTooDeep { .. } => "symref-too-deep",
            Refusal::NotAChainName { .. } => "not-a-chain-name",
            Refusal::ChainDeleted { .. } => "chain-deleted",
            Refusal::ChainEntry { .. } => "chain-entry",
            Refusal::ChainRewritten { .. } => "chain-rewritten",
            Refusal::ChainDiscardUnknown { .. } => "chain-discard-unknown",
            Refusal::ChainAncestryUnknown { .. } => "chain-ancestry-unknown",
            Refusal::ChainBaseInvalid { .. } => "chain-base-invalid",
            Refusal::NotALogRef { .. } => "not-a-log-ref",
            Refusal::LogRefUpdated { .. } => "log-ref-updated",
            Refusal::LogRefMismatch { .. } => "log-ref-mismatch",
            Refusal::Checkpoint { .. } => "checkpoint",
            Refusal::ProtectedDeleted { .. } => "protected-deleted",
            Refusal::ProtectedCreatedUnjudged { .. } => "protected-created-unjudged",
            Refusal::ContractTooLarge { .. } => "contract-too-large",
            Refusal::Undecided { .. } => "undecided",
            Refusal::Lacking { .. } => "lacking",
            Refusal::NotAccepted { .. } => "not-accepted",
        }
    }

    /// The ref refused.
    pub fn ref_name(&self) -> Option<&str> {
        match self {
            Refusal::Misconfigured(_) => None,
            Refusal::SymrefUnreadable { name, .. }
            | Refusal::SymrefTooDeep { name }
            | Refusal::NotAChainName { name }
            | Refusal::ChainDeleted { name }
            | Refusal::ChainEntry { name, .. }
            | Refusal::ChainRewritten { name, .. }
            | Refusal::ChainDiscardUnknown { name, .. }
            | Refusal::ChainAncestryUnknown { name, .. }
            | Refusal::ChainBaseInvalid { name, .. }
            | Refusal::NotALogRef { name }
            | Refusal::LogRefUpdated { name }
            | Refusal::LogRefMismatch { name, .. }
            | Refusal::Checkpoint { name, .. }
            | Refusal::ProtectedDeleted { name }
            | Refusal::ProtectedCreatedUnjudged { name }
            | Refusal::ContractTooLarge { name, .. }
            | Refusal::Undecided { name, .. }
            | Refusal::Lacking { name, .. }
            | Refusal::NotAccepted { name, .. } => Some(name),
        }
    }

    /// Whether it refuses an update of a receipt chain (whose repair an
    /// administrator makes on the server, not by a push).
    pub fn is_chain(&self) -> bool {
        matches!(
            self,
            Refusal::NotAChainName { .. }
                | Refusal::ChainDeleted { .. }
                | Refusal::ChainEntry { .. }
                | Refusal::ChainRewritten { .. }
                | Refusal::ChainDiscardUnknown { .. }
                | Refusal::ChainAncestryUnknown { .. }
                | Refusal::ChainBaseInvalid { .. }
                | Refusal::Checkpoint { .. }
        )
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = |id: &ObjectId| id.to_hex_with_len(7).to_string();
        match self {
            Refusal::Misconfigured(why) => write!(f, "{why}"),
            Refusal::SymrefUnreadable { name, error } => write!(
                f,
                "{name}: cannot read it on the server to tell which ref it moves ({error})"
            ),
            Refusal::SymrefTooDeep { name } => write!(
                f,
                "{name}: a chain of more than {SYMREF_MAX_DEPTH} symbolic refs, which git does not follow either"
            ),
            Refusal::NotAChainName { name } => write!(
                f,
                "{name}: not a receipt chain name (refs/receipts/<chain name>-<32 hex digits of the key>)"
            ),
            Refusal::ChainDeleted { name } => write!(
                f,
                "{name}: deleting a receipt chain by push is refused: chains are append-only"
            ),
            Refusal::ChainEntry {
                name,
                writer,
                refusal,
            } => write!(
                f,
                "{name}: {refusal}\n  every new entry must be a receipt signed by the key {writer} is derived from, with one parent, the entry below it"
            ),
            Refusal::ChainRewritten {
                name,
                old,
                new,
                discards,
            } => write!(
                f,
                "{name}: not a fast-forward ({} -> {}), and it would discard {discards}: chains are append-only, so a push may only add receipts on top of the chain the server has, or replace commits that are not entries of it",
                short(old),
                short(new)
            ),
            Refusal::ChainDiscardUnknown {
                name,
                old,
                new,
                error,
            } => write!(
                f,
                "{name}: cannot tell what replacing {} with {} discards ({error}): chains are append-only, so only a fast-forward is accepted",
                short(old),
                short(new)
            ),
            Refusal::ChainAncestryUnknown {
                name,
                old,
                new,
                error,
            } => write!(
                f,
                "{name}: cannot tell that {} descends from {} ({error}): chains are append-only, so only a fast-forward is accepted",
                short(new),
                short(old)
            ),
            Refusal::ChainBaseInvalid {
                name,
                error,
                merge_base: true,
            } => write!(f, "{name}: {error}"),
            Refusal::ChainBaseInvalid { name, error, .. } => write!(
                f,
                "{name}: the chain below the new entries is not a valid chain ({error}); replace it with your own entries (`git receipt push` does)"
            ),
            Refusal::NotALogRef { name } => write!(
                f,
                "{name}: not a log ref name (refs/receipt-logs/<writer>/<blob id>)"
            ),
            Refusal::LogRefUpdated { name } => write!(
                f,
                "{name}: a log ref is never updated, only created or deleted"
            ),
            Refusal::LogRefMismatch { name, new } => write!(
                f,
                "{name}: points at {}, but a log ref must point at the blob its name gives",
                short(new)
            ),
            Refusal::Checkpoint { name, reason } => write!(f, "{name}: {reason}"),
            Refusal::ProtectedDeleted { name } => {
                write!(f, "{name}: deleting a protected branch by push is refused")
            }
            Refusal::ProtectedCreatedUnjudged { name } => write!(
                f,
                "{name}: creating a protected branch is refused: no protected branch exists on this server to take its signers and required checks from, and an unprotected branch's are whatever its last push made them"
            ),
            Refusal::ContractTooLarge { name, new, detail } => write!(
                f,
                "{name} ({}): refused: a protected branch's .gitreceipts must be at most {} bytes (4 MiB): {detail}",
                short(new),
                crate::contract::MAX_CONTRACT_BYTES,
            ),
            Refusal::Undecided {
                name,
                new,
                check,
                error,
            } => write!(f, "{name} ({}): cannot decide {check}: {error}", short(new)),
            Refusal::Lacking {
                name, new, label, ..
            } => write!(
                f,
                "{name} ({}) lacks present receipts signed by the signers in .gitreceipts at {label}:",
                short(new)
            ),
            Refusal::NotAccepted {
                name,
                new,
                signer,
                why,
            } => write!(
                f,
                "{name} ({}) is not accepted by {signer} (receipt.requireAcceptance): {why}",
                short(new)
            ),
        }
    }
}

/// What the server tells the pusher besides refusals, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A pushed ref is a symbolic ref: the push is judged as an update of its target.
    Symref {
        /// The ref as pushed.
        pushed: String,
        /// The ref it moves.
        target: String,
    },
    /// The very first push creates a protected branch: nothing to judge it by.
    NotGated {
        /// The branch.
        name: String,
    },
    /// No protected branch exists nor is created, while branches are pushed.
    Unprotected {
        /// Why nothing is protected, in words.
        which: String,
        /// The branches pushed unguarded.
        unguarded: Vec<String>,
    },
    /// A notice of the judgement of a protected branch's new tip.
    Judged {
        /// The branch.
        name: String,
        /// The pushed tip.
        new: ObjectId,
        /// The notice, in words (unescaped).
        notice: String,
    },
    /// A notice of reading acceptances (one dated in the future), unescaped.
    Acceptance(String),
}

/// What [`pre_receive`] decided.
#[derive(Debug, Default)]
pub struct PreReceive {
    /// What to tell, in order.
    pub events: Vec<Event>,
    /// What is refused, in order: the push is refused unless this is empty.
    pub refusals: Vec<Refusal>,
}

/// `b` as a full ref name: `main` is `refs/heads/main`, `refs/...` is itself.
pub fn full_branch_name(b: &str) -> String {
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
pub fn protection_pattern(value: &str) -> Result<String, BadProtection> {
    let full = full_branch_name(value.trim());
    let bad = |why: &str| {
        Err(BadProtection {
            value: crate::text::escape(value).into_owned(),
            why: why.to_owned(),
        })
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
pub fn ref_pattern_matches(pattern: &str, name: &str) -> bool {
    crate::trust::wildcard_match(pattern, name, false)
}

/// The branches the server protects: `receipt.protectedBranch` (repeatable; a
/// value that protects nothing is taken as the branch it names), or the branch
/// HEAD names.
pub fn protected_branches(store: &Store) -> Vec<String> {
    let configured = store.config_strings("receipt.protectedBranch");
    if !configured.is_empty() {
        return configured
            .iter()
            .map(|b| protection_pattern(b).unwrap_or_else(|_| full_branch_name(b)))
            .collect();
    }
    store.head_branch().into_iter().collect()
}

/// The ref an update of `name` really moves: `name`, or the ref its symbolic
/// refs lead to. receive-pack names a symbolic ref in the hook's input as it was
/// pushed (`refs/heads/master`) and then updates (or deletes) its target
/// (`refs/heads/main`), so every rule is applied to the target.
pub fn resolve_symref(store: &Store, name: &str) -> Result<String, Refusal> {
    let mut at = name.to_owned();
    for _ in 0..=SYMREF_MAX_DEPTH {
        match store.symref_target(&at) {
            Ok(Some(t)) => at = t,
            Ok(None) => return Ok(at),
            Err(e) => {
                return Err(Refusal::SymrefUnreadable {
                    name: name.to_owned(),
                    error: e.to_string(),
                });
            }
        }
    }
    Err(Refusal::SymrefTooDeep {
        name: name.to_owned(),
    })
}

/// What the server protects: the patterns of `receipt.protectedBranch` (or the
/// branch HEAD names), and every existing branch they cover, by name or through
/// a symbolic ref they name (protecting `master`, a symbolic ref to `main`,
/// protects `main`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Protected {
    /// Full ref names and patterns.
    pub patterns: Vec<String>,
    /// The existing (non-symbolic) refs covered, with their tips: the branch HEAD
    /// names first when it is covered, then in the order of the patterns.
    pub existing: Vec<(String, ObjectId)>,
}

impl Protected {
    /// Read the server's configuration and refs; an unusable
    /// `receipt.protectedBranch` is an error (the push is refused, not let
    /// through unprotected).
    pub fn load(store: &Store) -> Result<Protected, Misconfigured> {
        let configured = store.config_strings("receipt.protectedBranch");
        let patterns = if configured.is_empty() {
            protected_branches(store)
        } else {
            configured
                .iter()
                .map(|b| protection_pattern(b))
                .collect::<Result<Vec<_>, _>>()?
        };
        let mut candidates: Vec<String> = Vec::new();
        if let Some(head) = store.head_branch()
            && patterns.iter().any(|p| ref_pattern_matches(p, &head))
        {
            candidates.push(head);
        }
        for p in &patterns {
            match p.split_once('*') {
                None => candidates.push(p.clone()),
                Some((literal, _)) => {
                    // the refs under the pattern's literal directory
                    // mutants: `i * 1` for `i + 1` is equivalent: it drops the
                    // trailing `/`, and `refs_named_under` lists by byte prefix
                    // (gix's `prefixed`: `refs/heads/rel` lists `refs/heads/rel/1`
                    // and `refs/heads/relx`), so it lists a superset of the refs,
                    // and every name is then matched against the whole pattern.
                    let dir = &literal[..literal.rfind('/').map_or(0, |i| i + 1)];
                    let under = store.refs_named_under(dir).map_err(|e| {
                        Misconfigured::Unreadable(format!("listing the server's refs: {e}"))
                    })?;
                    for (name, _) in under {
                        if ref_pattern_matches(p, &name) {
                            candidates.push(name);
                        }
                    }
                }
            }
        }
        let mut existing: Vec<(String, ObjectId)> = Vec::new();
        for c in &candidates {
            let target =
                resolve_symref(store, c).map_err(|e| Misconfigured::Unreadable(e.to_string()))?;
            if existing.iter().any(|(n, _)| *n == target) {
                continue;
            }
            if let Some(tip) = store.ref_commit(&target) {
                existing.push((target, tip));
            }
        }
        Ok(Protected { patterns, existing })
    }

    /// Whether an update of `name` (already resolved through symbolic refs) is
    /// an update of a protected branch.
    pub fn covers(&self, name: &str) -> bool {
        self.patterns.iter().any(|p| ref_pattern_matches(p, name))
            || self.existing.iter().any(|(n, _)| n == name)
    }

    /// The names of the existing protected branches.
    pub fn existing_names(&self) -> Vec<String> {
        self.existing.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The branch whose tip gives signers and required checks to a protected
    /// branch that this push creates: an existing protected branch other than
    /// the one created (the one HEAD names first, when it is protected), never
    /// an unprotected one, whose signers are whatever its last unchecked push
    /// made them. `None` when no protected branch exists.
    pub fn creation_baseline(&self, created: &str) -> Option<(String, ObjectId)> {
        self.existing
            .iter()
            .find(|(name, _)| name != created)
            .cloned()
    }
}

/// Why an update of receipt chain `u` is refused, if it is. Every entry the push
/// adds must follow every rule of [`crate::store::admit`] (one parent, the
/// allowed files, a canonical receipt naming this chain, signed strictly by the
/// key its writer id names, linked to the entry below), checked in the
/// quarantine: the cost is one read and one signature per new entry. A chain is
/// append-only: a push may create one or add entries on top, and may replace the
/// top only when everything it discards is not an entry of the chain (junk, a
/// merge, a squat on the writer id: the writer's own repair); never delete it.
pub fn chain_refusal(
    store: &Store,
    u: &ReceivedRef,
    known: &dyn Fn(&str) -> Option<PublicKey>,
) -> Option<Refusal> {
    let name = || u.name.clone();
    let writer = u.name.strip_prefix("refs/receipts/").unwrap_or(&u.name);
    if !crate::receipt::is_valid_writer_id(writer) {
        return Some(Refusal::NotAChainName { name: name() });
    }
    let Some(new) = u.new else {
        return Some(Refusal::ChainDeleted { name: name() });
    };
    let base = match u.old {
        None => None,
        Some(old) => match store.is_ancestor(old, new) {
            Ok(true) => Some(old),
            Ok(false) => match discards_an_entry(store, writer, old, new, known) {
                Ok(None) => match store.merge_base_of(old, new) {
                    Ok(b) => b,
                    Err(e) => {
                        return Some(Refusal::ChainBaseInvalid {
                            name: name(),
                            error: e.to_string(),
                            merge_base: true,
                        });
                    }
                },
                Ok(Some(discards)) => {
                    return Some(Refusal::ChainRewritten {
                        name: name(),
                        old,
                        new,
                        discards,
                    });
                }
                Err(e) => {
                    return Some(Refusal::ChainDiscardUnknown {
                        name: name(),
                        old,
                        new,
                        error: e,
                    });
                }
            },
            Err(e) => {
                return Some(Refusal::ChainAncestryUnknown {
                    name: name(),
                    old,
                    new,
                    error: e.to_string(),
                });
            }
        },
    };
    match store.admit(writer, new, base, known) {
        Ok(a) => a.refusal.map(|refusal| Refusal::ChainEntry {
            name: name(),
            writer: writer.to_owned(),
            refusal: Box::new(refusal),
        }),
        Err(e) => Some(Refusal::ChainBaseInvalid {
            name: name(),
            error: e.to_string(),
            merge_base: false,
        }),
    }
}

/// For a push that replaces `old` with `new` (not a descendant): the first commit
/// it would discard that is a valid entry of `writer`'s chain, if any, in words
/// (an error, in words, when the discarded commits cannot be listed).
/// Only the lowest discarded commits need checking: anything above a commit that
/// is not an entry is not one either.
pub fn discards_an_entry(
    store: &Store,
    writer: &str,
    old: ObjectId,
    new: ObjectId,
    known: &dyn Fn(&str) -> Option<PublicKey>,
) -> Result<Option<String>, String> {
    let out = store
        .run_git(&[
            "rev-list",
            "--parents",
            &old.to_string(),
            "--not",
            &new.to_string(),
        ])
        .map_err(|e| e.to_string())?;
    if !out.ok {
        return Err(format!("git rev-list: {}", out.stderr));
    }
    let rows: Vec<Vec<ObjectId>> = out
        .stdout
        .lines()
        .map(|l| {
            l.split(' ')
                .filter_map(|h| ObjectId::from_hex(h.as_bytes()).ok())
                .collect()
        })
        .collect();
    let discarded: std::collections::HashSet<ObjectId> =
        rows.iter().filter_map(|r| r.first().copied()).collect();
    for row in &rows {
        let Some((&c, parents)) = row.split_first() else {
            return Err("rev-list output".into());
        };
        if parents.iter().any(|p| discarded.contains(p)) {
            continue; // above another discarded commit
        }
        // a commit that breaks a rule, or follows a commit that is no entry, is
        // not one itself
        let Ok(entry) = store.check_entry(writer, c, known) else {
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

/// Why the server refuses an update of a log ref (`refs/receipt-logs/<writer>/<blob>`),
/// if it does: a log ref is created pointing at the blob its name gives, or deleted
/// (`prune-logs`); it never changes, so what a name promises is what it holds.
pub fn log_refusal(store: &Store, u: &ReceivedRef) -> Option<Refusal> {
    let new = u.new?; // deletion: logs may be pruned
    let name = || u.name.clone();
    let rest = u
        .name
        .strip_prefix(crate::store::logs::LOG_PREFIX)
        .unwrap_or(&u.name);
    let named = rest
        .rsplit_once('/')
        .filter(|(w, _)| crate::receipt::is_valid_writer_id(w))
        .and_then(|(_, b)| ObjectId::from_hex(b.as_bytes()).ok());
    let Some(named) = named else {
        return Some(Refusal::NotALogRef { name: name() });
    };
    if u.old.is_some() {
        return Some(Refusal::LogRefUpdated { name: name() });
    }
    let is_blob = store
        .object_header(new)
        .is_some_and(|(kind, _)| kind == ObjectKind::Blob);
    if new != named || !is_blob {
        return Some(Refusal::LogRefMismatch { name: name(), new });
    }
    None
}

/// Why the server refuses an update of a signed checkpoint chain
/// (`refs/receipt-checkpoints/<writer>`), if it does: like a receipt chain it is
/// append-only (never deleted, never rewritten), and every new entry must hold
/// every rule of [`crate::checkpoint::check_entry`] (shape, canonical bytes, the
/// signature under the key the writer id names, links), checked in the
/// quarantine above the server's old tip. Whether its signer is trusted is each
/// reader's to decide, as for a receipt chain.
pub fn checkpoint_refusal(store: &Store, u: &ReceivedRef) -> Option<Refusal> {
    let refuse = |reason: String| {
        Some(Refusal::Checkpoint {
            name: u.name.clone(),
            reason,
        })
    };
    let signer = u
        .name
        .strip_prefix(crate::store::checkpoints::CHECKPOINT_PREFIX)
        .unwrap_or(&u.name);
    if !crate::receipt::is_valid_writer_id(signer) {
        return refuse(
            "not a checkpoint chain name (refs/receipt-checkpoints/<chain name>-<32 hex digits of the key>)".into(),
        );
    }
    let Some(new) = u.new else {
        return refuse(
            "deleting a checkpoint chain by push is refused: checkpoints are append-only".into(),
        );
    };
    if let Some(old) = u.old
        && !store.is_ancestor(old, new).unwrap_or(false)
    {
        return refuse(format!(
            "{} does not descend from the server's {}: checkpoints are append-only, a rollback or rewrite is refused",
            new.to_hex_with_len(7),
            old.to_hex_with_len(7)
        ));
    }
    match crate::checkpoint::read_chain_above(store, signer, new, u.old) {
        Ok(chain) => chain.broken.and_then(|b| refuse(b.to_string())),
        Err(e) => refuse(format!("cannot be read: {e}")),
    }
}

/// Whether the server has any branch (a ref under refs/heads/ that is not
/// symbolic): before the very first push it has none.
pub fn has_any_branch(store: &Store) -> Result<bool, StoreError> {
    Ok(store
        .refs_named_under("refs/heads/")?
        .iter()
        .any(|(_, id)| id.is_some()))
}

/// When no protected branch exists on the server (nor is created by this push)
/// while another branch is pushed, say so: the hook then guards nothing, which a
/// team must not learn by accident.
pub fn unprotected(store: &Store, protected: &Protected, updates: &[ReceivedRef]) -> Option<Event> {
    let guarded = !protected.existing.is_empty()
        || updates
            .iter()
            .any(|u| protected.covers(&u.name) && u.new.is_some());
    let patterns = &protected.patterns;
    let unguarded: Vec<String> = updates
        .iter()
        .filter(|u| u.name.starts_with("refs/heads/") && u.new.is_some())
        .map(|u| u.name.clone())
        .collect();
    if guarded || unguarded.is_empty() {
        return None;
    }
    let which = if !store.config_strings("receipt.protectedBranch").is_empty() {
        format!(
            "receipt.protectedBranch names {}, which does not exist",
            patterns.join(", ")
        )
    } else if let Some(head) = patterns.first() {
        format!("receipt.protectedBranch is unset and HEAD names {head}, which does not exist")
    } else {
        "receipt.protectedBranch is unset and HEAD names no branch".to_owned()
    };
    Some(Event::Unprotected { which, unguarded })
}

/// Whether `e` is a `.gitreceipts` over the size limit: its first line.
fn too_large(e: &PolicyError) -> Option<String> {
    match e {
        PolicyError::Store(big @ StoreError::ContractTooLarge { .. }) => Some(
            big.to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        ),
        _ => None,
    }
}

/// Judge the new tip `new` of protected branch `name` on present receipts for
/// every check and review required at `new` or at the trusted revision
/// `trusted` (named `label`), signed by the signers there; then, for
/// `receipt.requireAcceptance`, a trusted acceptance of exactly its tree by each
/// named signer (read from the chains, never decided again).
pub fn judge_update(
    store: &Store,
    name: &str,
    new: ObjectId,
    trusted: ObjectId,
    label: &str,
    out: &mut PreReceive,
) -> Result<(), PolicyError> {
    let refuse_large = |e: PolicyError, out: &mut PreReceive| match too_large(&e) {
        Some(detail) => {
            // refused unread: the push is refused, the hook does not fail
            out.refusals.push(Refusal::ContractTooLarge {
                name: name.to_owned(),
                new,
                detail,
            });
            Ok(())
        }
        None => Err(e),
    };
    let trust = match super::trust::server(store, trusted, label) {
        Ok(trust) => trust,
        Err(e) => return refuse_large(e, out),
    };
    let baseline = Baseline::At {
        commit: trusted,
        label: label.to_owned(),
    };
    let rev = new.to_string();
    let judged = super::judge::contract_at(store, new, &rev).and_then(|contract| {
        let revision = Revision {
            label: &rev,
            commit: new,
            tree: None,
            contract: Some(contract),
        };
        // a protected branch: each check accepts what `accept-protected` says
        let opts = Options {
            protected: true,
            ..Options::from_config(store)?
        };
        judge(store, &revision, &trust, &baseline, opts)
    });
    let judgement = match judged {
        Ok(j) => j,
        Err(e) => return refuse_large(e, out),
    };
    for notice in &judgement.notices {
        out.events.push(Event::Judged {
            name: name.to_owned(),
            new,
            notice: notice.clone(),
        });
    }
    let verdict = judgement.verdict(&Require::Marked);
    for u in &verdict.undecided {
        out.refusals.push(Refusal::Undecided {
            name: name.to_owned(),
            new,
            check: u.name.clone(),
            error: u.error.to_string(),
        });
    }
    let lacking = !verdict.failing.is_empty();
    if lacking {
        out.refusals.push(Refusal::Lacking {
            name: name.to_owned(),
            new,
            label: label.to_owned(),
            judgement: Box::new(judgement),
        });
    }
    let signers = store.config_strings("receipt.requireAcceptance");
    if !signers.is_empty() {
        let tree = store.commit_tree(new)?;
        for signer in signers.iter().flat_map(|s| s.split(',')).map(str::trim) {
            if signer.is_empty() {
                continue;
            }
            let mut notices = Vec::new();
            let verdict = accepted_by(store, &trust.set, new, tree, signer, &mut notices);
            out.events
                .extend(notices.into_iter().map(Event::Acceptance));
            if let Err(why) = verdict? {
                out.refusals.push(Refusal::NotAccepted {
                    name: name.to_owned(),
                    new,
                    signer: signer.to_owned(),
                    why: Box::new(why),
                });
            }
        }
    }
    Ok(())
}

/// Every rule of the server for the updates of one push (`pushed`, as git's
/// pre-receive input names them): symbolic refs resolved to the refs they move;
/// each chain update admitted entry by entry in the quarantine; each log ref
/// checked; each protected branch's new tip judged, with the chains in the same
/// push counting. `store` is made to see the quarantine and the proposed refs.
pub fn pre_receive(store: &mut Store, pushed: Vec<ReceivedRef>) -> Result<PreReceive, PolicyError> {
    let mut out = PreReceive::default();
    let protected = match Protected::load(store) {
        Ok(p) => p,
        Err(why) => {
            out.refusals.push(Refusal::Misconfigured(why));
            return Ok(out);
        }
    };
    // every rule applies to the ref an update really moves: a push to a symbolic
    // ref (`master` -> `main`) is an update of its target
    let mut updates: Vec<ReceivedRef> = Vec::with_capacity(pushed.len());
    for u in pushed {
        let name = match resolve_symref(store, &u.name) {
            Ok(name) => name,
            Err(refusal) => {
                out.refusals.push(refusal);
                continue;
            }
        };
        if name != u.name {
            out.events.push(Event::Symref {
                pushed: u.name.clone(),
                target: name.clone(),
            });
        }
        if updates.iter().any(|v| v.name == name) {
            continue; // the same ref by two names: git makes them agree
        }
        updates.push(ReceivedRef { name, ..u });
    }
    // Only a protected branch's update is decided from the receipt index: a push
    // of receipts alone costs what its new entries cost, never the index. When
    // one is, bring the server's own index up to date (and write it) before reads
    // see the proposed refs: the chains in the push are then indexed in memory on
    // top of it, and never written, since the push may yet be refused.
    if updates.iter().any(|u| protected.covers(&u.name)) {
        store.receipt_index()?;
    }
    store.see_quarantine()?;
    {
        let store: &Store = store;
        // read only for an entry that carries no signer.pub (written before entries did)
        let known_set = std::cell::OnceCell::new();
        let known = |fp: &str| {
            known_set
                .get_or_init(|| super::trust::known_keys(store, &protected.existing_names()))
                .lookup(fp)
                .map(|t| t.key.clone())
        };
        for u in updates
            .iter()
            .filter(|u| u.name.starts_with("refs/receipts/"))
        {
            out.refusals.extend(chain_refusal(store, u, &known));
        }
        for u in updates
            .iter()
            .filter(|u| u.name.starts_with(crate::store::logs::LOG_PREFIX))
        {
            out.refusals.extend(log_refusal(store, u));
        }
        for u in updates.iter().filter(|u| {
            u.name
                .starts_with(crate::store::checkpoints::CHECKPOINT_PREFIX)
        }) {
            out.refusals.extend(checkpoint_refusal(store, u));
        }
    }
    // receipts that arrive in this same push count: reads see the proposed refs
    // (notes refs are display only and free to move)
    for u in &updates {
        if u.name.starts_with("refs/receipts/") || u.name.starts_with("refs/notes/receipts/") {
            store.override_ref(&u.name, u.new);
        }
    }
    let store: &Store = store;
    out.events.extend(unprotected(store, &protected, &updates));
    // the very first push (the server has no branch yet) has nothing to gate by
    let first_push = !has_any_branch(store)?;
    for u in updates.iter().filter(|u| protected.covers(&u.name)) {
        let Some(new) = u.new else {
            out.refusals.push(Refusal::ProtectedDeleted {
                name: u.name.clone(),
            });
            continue;
        };
        let (trusted, label) = match u.old {
            Some(old) => (old, format!("{} ({})", u.name, old.to_hex_with_len(7))),
            None => match protected.creation_baseline(&u.name) {
                Some((name, tip)) => (tip, format!("{name} ({})", tip.to_hex_with_len(7))),
                None if !first_push => {
                    out.refusals.push(Refusal::ProtectedCreatedUnjudged {
                        name: u.name.clone(),
                    });
                    continue;
                }
                None => {
                    out.events.push(Event::NotGated {
                        name: u.name.clone(),
                    });
                    continue;
                }
            },
        };
        judge_update(store, &u.name, new, trusted, &label, &mut out)?;
    }
    Ok(out)
}
