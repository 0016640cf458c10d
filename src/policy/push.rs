//! The pre-push hook's plan, as data: which pushed refs are gated, which branches
//! a push must bring required reviews to, and which chains the running `git push`
//! already carries. The judging itself is [`super::judge()`] and
//! [`super::Judgement::verdict`] with [`super::Require::MarkedChecks`].

use gix::ObjectId;

use crate::hooks::PushedRef;
use crate::store::{Store, StoreError};

/// How a push of one's own chains is made (`git receipt push`, the pre-push hook).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushPlan {
    /// Every log of yours (`--logs`).
    pub all_logs: bool,
    /// Send nothing for a chain unchanged since the last push (the pre-push hook).
    pub skip_unchanged: bool,
    /// Refspecs (a branch) pushed with the first chain, atomically.
    pub also: Vec<String>,
    /// Writers whose chain and notes the running `git push` already carries at
    /// their local tips (configured push refspecs): nothing to push for them.
    pub carried: Vec<String>,
}

/// The pushed refs the pre-push hook gates, as (remote ref name, local commit):
/// not deletions (they pass), not receipt chains nor notes (they are the
/// evidence, not what it is about), and tags only with `gate_tags`
/// (`receipt.gateTags`).
pub fn gated_refs(updates: &[PushedRef], gate_tags: bool) -> Vec<(String, ObjectId)> {
    let mut pushed = Vec::new();
    for u in updates {
        let Some(local) = u.local else { continue };
        let r = &u.remote_ref;
        if r.starts_with("refs/receipts/") || r.starts_with("refs/notes/") {
            continue;
        }
        if r.starts_with("refs/tags/") && !gate_tags {
            continue;
        }
        pushed.push((r.clone(), local));
    }
    pushed
}

/// The writers of this clone whose chain and notes `updates` already push at
/// their local tips (push refspecs in the remote's config): one connection
/// carries them, so nothing need be pushed for them after. Without
/// `with_notes` (notes are not pushed: `receipt.pushNotes`), the chain alone.
pub fn carried_writers(
    store: &Store,
    updates: &[PushedRef],
    with_notes: bool,
) -> Result<Vec<String>, StoreError> {
    let carried_ref = |name: &str, local: Option<ObjectId>| {
        local.is_some()
            && updates
                .iter()
                .any(|u| u.remote_ref == name && u.local == local)
    };
    let mut carried = Vec::new();
    for (writer, tip) in store.writers()? {
        let notes = crate::store::notes::notes_ref(&writer);
        if carried_ref(&format!("refs/receipts/{writer}"), Some(tip))
            && (!with_notes || carried_ref(&notes, store.ref_value(&notes)?))
        {
            carried.push(writer);
        }
    }
    Ok(carried)
}

/// The remote branches a push to `remote` must bring required reviews to:
/// `receipt.protectedBranch` when set (as on the server:
/// [`super::server::protected_branches`]), else the branch the remote's HEAD
/// names (`refs/remotes/<remote>/HEAD`, set by clone or `git remote set-head`).
pub fn reviewed_branches(store: &Store, remote: &str) -> Vec<String> {
    let configured = store.config_strings("receipt.protectedBranch");
    if !configured.is_empty() {
        return super::server::protected_branches(store);
    }
    // read here, not by a `git symbolic-ref` (a process in every hooked push)
    let head = format!("refs/remotes/{remote}/HEAD");
    match store.symref_target(&head) {
        Ok(Some(target)) => target
            .strip_prefix(&format!("refs/remotes/{remote}/"))
            .map(|b| vec![format!("refs/heads/{b}")])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Whether a push to remote ref `name` must bring its required reviews: it is
/// one of `reviewed` (full names or `*` patterns).
pub fn reviews_due(reviewed: &[String], name: &str) -> bool {
    reviewed
        .iter()
        .any(|b| super::server::ref_pattern_matches(b, name))
}
