//! Quarantined tests: a failure that is tracked, owned, expiring debt instead of
//! a blocked merge.
//!
//! A `[quarantine "name"]` section of `.gitreceipts` names a check, a test (as
//! the check's receipts record it in `result.tests`), an owner and an expiry
//! date. A check whose deciding receipt **failed** reads present when:
//!
//! - the receipt recorded its per-test results without an error (format v4), and
//!   at least one test failed;
//! - every test that failed is quarantined for that check, and no such quarantine
//!   has expired at the judging clock (`expires` is the first moment it no longer
//!   applies);
//!
//! and stays failed otherwise, its notices naming what the quarantine covered and
//! what it did not (a failure outside the tests, a test not quarantined, an
//! expired quarantine). The receipt is unchanged: the test still ran and its
//! failure is still signed.
//!
//! Whose quarantines count: those at the trusted revision when the revision is
//! judged against one (`gate --verify`, `gate --trust`, the pre-receive hook), so
//! a branch cannot excuse its own failures by adding an entry; those of the
//! revision itself otherwise (`status`, plain `gate`, the pre-push hook, which
//! hold a revision only to its own file anyway). `verify` holds a signed
//! acceptance that claims such a check present to the quarantines at the
//! acceptance's trusted revision, at the time it was decided.

use serde::Serialize;

use crate::contract::QuarantineDef;
use crate::receipt::{Receipt, TestStatus, Verified};

/// What the quarantines made of one failed receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Excuse {
    /// Whether every failure is excused: the check reads present.
    pub excused: bool,
    /// The failed tests each unexpired quarantine covered, with the quarantine.
    pub covered: Vec<Covered>,
    /// Failed tests no unexpired quarantine covers.
    pub uncovered: Vec<String>,
    /// Quarantines of failed tests that have expired.
    pub expired: Vec<Covered>,
    /// Why nothing could be excused, when that is why (no per-test results, or
    /// the failure is outside the tests).
    pub not_excusable: Option<String>,
}

/// A failed test and the quarantine that names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Covered {
    /// The test.
    pub test: String,
    /// The `[quarantine "name"]`.
    pub quarantine: String,
    /// Its owner.
    pub owner: String,
    /// Its expiry, as written.
    pub expires: String,
}

impl Excuse {
    /// Nothing excused, for `why`.
    fn none(why: impl Into<String>) -> Excuse {
        Excuse {
            excused: false,
            covered: Vec::new(),
            uncovered: Vec::new(),
            expired: Vec::new(),
            not_excusable: Some(why.into()),
        }
    }

    /// The words a reader sees on the check's row, or none when no quarantine
    /// applied to any failed test (strings from the receipt and the contract:
    /// escape before printing).
    pub fn words(&self) -> Option<String> {
        if self.excused {
            return Some(format!(
                "failed only quarantined test{}: {}",
                if self.covered.len() == 1 { "" } else { "s" },
                covered_words(&self.covered)
            ));
        }
        let mut parts = Vec::new();
        if !self.expired.is_empty() {
            parts.push(format!(
                "quarantine expired for {}",
                covered_words(&self.expired)
            ));
        }
        if !self.covered.is_empty() {
            parts.push(format!(
                "quarantined but not enough to pass: {} (also failed: {})",
                covered_words(&self.covered),
                if self.uncovered.is_empty() {
                    "nothing else".to_owned()
                } else {
                    self.uncovered.join(", ")
                }
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// `test (quarantine, owner O, expires D)` for each, joined by `; ` (strings from
/// receipts and the contract: escape before printing).
pub fn covered_words(covered: &[Covered]) -> String {
    covered
        .iter()
        .map(|c| {
            format!(
                "{} ({}, owner {}, expires {})",
                c.test, c.quarantine, c.owner, c.expires
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// [`excuse`] of `receipt` with its own test list, read from `store` (inline,
/// or beside the log and checked against its signed digest).
pub fn excuse_stored(
    store: &crate::store::Store,
    receipt: &Receipt<Verified>,
    check: &str,
    quarantines: &[QuarantineDef],
    now_ms: u64,
) -> Excuse {
    let list = match &receipt.body().result.tests {
        Some(t) => crate::results::load_list(store, t),
        None => Ok(Vec::new()),
    };
    excuse(
        receipt,
        list.as_deref().map_err(String::as_str),
        check,
        quarantines,
        now_ms,
    )
}

/// What the quarantines of `check` in `quarantines` make of `receipt`, a failed
/// receipt of it whose per-test list is `list` (`Err`: why the list cannot be
/// read), at `now_ms`.
pub fn excuse(
    receipt: &Receipt<Verified>,
    list: Result<&[crate::receipt::TestCase], &str>,
    check: &str,
    quarantines: &[QuarantineDef],
    now_ms: u64,
) -> Excuse {
    let body = receipt.body();
    if body.result.passed {
        return Excuse::none("the receipt passed");
    }
    let Some(tests) = &body.result.tests else {
        return Excuse::none("the receipt records no per-test results");
    };
    if !tests.error.is_empty() {
        return Excuse::none("the receipt's per-test results could not be read when it ran");
    }
    let list = match list {
        Ok(l) => l,
        Err(why) => return Excuse::none(why.to_owned()),
    };
    let mut failed: Vec<&str> = list
        .iter()
        .filter(|t| t.status == TestStatus::Failed)
        .map(|t| t.name.as_str())
        .collect();
    failed.dedup();
    if failed.is_empty() {
        return Excuse::none(
            "the check failed but no test did: the failure is outside the tests, which no quarantine excuses",
        );
    }
    let mut out = Excuse {
        excused: false,
        covered: Vec::new(),
        uncovered: Vec::new(),
        expired: Vec::new(),
        not_excusable: None,
    };
    for test in failed {
        let named: Vec<&QuarantineDef> = quarantines
            .iter()
            .filter(|q| q.check == check && q.test == test)
            .collect();
        let cover = |q: &QuarantineDef| Covered {
            test: test.to_owned(),
            quarantine: q.name.clone(),
            owner: q.owner.clone(),
            expires: q.expires.clone(),
        };
        match named.iter().find(|q| now_ms < q.expires_ms) {
            Some(q) => out.covered.push(cover(q)),
            None => {
                out.uncovered.push(test.to_owned());
                out.expired.extend(named.iter().map(|q| cover(q)));
            }
        }
    }
    out.excused = out.uncovered.is_empty();
    out
}
