//! Whether a check still has to run at one commit of a range (`git receipt run
//! A..B`): the judge's own state decides, so a commit that `status A..B` shows
//! present for a check is one a range run leaves alone, and no second copy of the
//! freshness rule exists. Present means a trusted passing receipt for exactly the
//! check's inputs and definition at that commit (whichever commit it was written
//! on); failed, stale, missing and undecided all run again.

use crate::freshness::State;

use super::Judgement;

/// What a range run does with one check at one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Run it.
    Run,
    /// Already present: the id of the receipt that makes it so.
    Cached {
        /// The deciding receipt's id.
        receipt: String,
    },
}

/// What to do with check `check` at the commit `judgement` is about; `force`
/// runs it even when it is present.
pub fn need(judgement: &Judgement, check: &str, force: bool) -> Need {
    if force {
        return Need::Run;
    }
    let present = judgement
        .states
        .iter()
        .find(|s| s.name == check && s.state == State::Present);
    match present.and_then(|s| s.decider.as_ref()) {
        Some(d) => Need::Cached {
            receipt: d.receipt.id().to_owned(),
        },
        None => Need::Run,
    }
}
