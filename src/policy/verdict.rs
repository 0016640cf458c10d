//! The verdict over a [`Judgement`]: which required checks and reviews are not
//! present, and which cannot be decided. `gate`, the pre-push hook and the
//! pre-receive hook each apply this one rule, to their own requirement.

use crate::freshness::{CheckState, State, Undecided};

use super::judge::{Judgement, REVIEW_PREFIX};

/// What a verdict requires of a judgement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Require {
    /// The checks and reviews marked required (`gate`, the pre-receive hook).
    Marked,
    /// The checks marked required, and the reviews marked required only when
    /// `reviews` holds: a push to a feature branch is made in order to be
    /// reviewed, so its reviews are not yet due (the pre-push hook).
    MarkedChecks {
        /// Whether required reviews count too.
        reviews: bool,
    },
    /// Exactly these, by name, whatever is marked (`gate --require`).
    Named(Vec<String>),
}

impl Require {
    fn covers(&self, name: &str, marked: bool) -> bool {
        match self {
            Require::Marked => marked,
            Require::MarkedChecks { reviews } => {
                marked && (*reviews || !name.starts_with(REVIEW_PREFIX))
            }
            Require::Named(names) => names.iter().any(|n| n == name),
        }
    }
}

/// What a judgement says to a requirement.
#[derive(Debug)]
pub struct Verdict<'a> {
    /// The required states, in the judgement's order (for [`Require::Named`], in
    /// the order named).
    pub required: Vec<&'a CheckState>,
    /// Those of them that are not present: the verdict is no unless this is empty.
    pub failing: Vec<&'a CheckState>,
    /// Required checks and reviews only the history missing from a shallow clone
    /// could decide: the verdict cannot be given while this is not empty.
    pub undecided: Vec<&'a Undecided>,
    /// Names [`Require::Named`] gives that the judgement has neither a state nor
    /// an undecided entry for (not declared at the revision).
    pub unknown: Vec<String>,
}

impl Verdict<'_> {
    /// Yes: nothing required is failing or undecided, and every name is known.
    pub fn passed(&self) -> bool {
        self.failing.is_empty() && self.undecided.is_empty() && self.unknown.is_empty()
    }
}

impl Judgement {
    /// The verdict for `require`: which required states are not present and which
    /// required ones cannot be decided.
    pub fn verdict(&self, require: &Require) -> Verdict<'_> {
        let undecided: Vec<&Undecided> = self
            .undecided
            .iter()
            .filter(|u| require.covers(&u.name, u.required))
            .collect();
        let (required, unknown) = match require {
            Require::Named(names) => {
                let mut required = Vec::new();
                let mut unknown = Vec::new();
                for name in names {
                    match self.states.iter().find(|s| &s.name == name) {
                        Some(s) => required.push(s),
                        None if undecided.iter().any(|u| &u.name == name) => {}
                        None => unknown.push(name.clone()),
                    }
                }
                (required, unknown)
            }
            _ => (
                self.states
                    .iter()
                    .filter(|s| require.covers(&s.name, s.required))
                    .collect(),
                Vec::new(),
            ),
        };
        let failing = required
            .iter()
            .copied()
            .filter(|s| s.state != State::Present)
            .collect();
        Verdict {
            required,
            failing,
            undecided,
            unknown,
        }
    }
}
