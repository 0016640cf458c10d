//! Flaky tests, keyed by inputs: a test is flaky when trusted receipts of the
//! same check, for the same inputs tree and the same definition digest, disagree
//! on it (one says passed, another failed). Nothing else differed that the
//! receipts can name, so the disagreement is the test's own.
//!
//! Only receipts that count are read: each is in its writer's chain, names that
//! writer, carries a signature a trusted key makes, and recorded its per-test
//! results without an error. A test list kept beside the log that this clone
//! lacks, or that does not match its signed digest, is passed over and counted.

use std::collections::BTreeMap;

use serde::Serialize;

use super::PolicyError;
use crate::receipt::{Kind, TestStatus};
use crate::store::Store;
use crate::trust::TrustSet;

/// How many receipt ids each side of a flaky test's evidence lists at most (the
/// counts are whole).
pub const MAX_EVIDENCE: usize = 8;

/// One flaky test and its evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Flaky {
    /// The check.
    pub check: String,
    /// The test, as the receipts name it.
    pub test: String,
    /// The inputs tree the receipts disagree on.
    pub inputs: String,
    /// The definition digest they share.
    pub definition: String,
    /// How many trusted receipts of these inputs passed the test.
    pub passed: usize,
    /// How many failed it.
    pub failed: usize,
    /// Ids of receipts that passed it, oldest first, at most [`MAX_EVIDENCE`].
    pub passed_in: Vec<String>,
    /// Ids of receipts that failed it, oldest first, at most [`MAX_EVIDENCE`].
    pub failed_in: Vec<String>,
}

/// What [`find`] read besides the flaky tests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Survey {
    /// The flaky tests, by check, then test, then inputs.
    pub flaky: Vec<Flaky>,
    /// Trusted receipts with per-test results that were compared.
    pub compared: usize,
    /// Receipts passed over: not signed by a trusted key, or not their chain's.
    pub untrusted: usize,
    /// Trusted receipts whose test list could not be read (absent from this
    /// clone, or not the list that was signed), each with why.
    pub unreadable: Vec<(String, String)>,
}

/// Per (check, inputs, definition): per test, the receipts that passed and failed it.
type Groups = BTreeMap<(String, String, String), BTreeMap<String, (Vec<String>, Vec<String>)>>;

/// Every flaky test among the trusted receipts of `check` (every check: `None`).
pub fn find(store: &Store, trust: &TrustSet, check: Option<&str>) -> Result<Survey, PolicyError> {
    let mut survey = Survey::default();
    let mut groups: Groups = BTreeMap::new();
    let mut receipts = Vec::new();
    for (writer, _) in store.writers()? {
        if !trust.may_sign_as(&writer) {
            continue;
        }
        for entry in store.read_chain(&writer)? {
            let body = entry.receipt.body();
            if body.kind != Kind::Check
                || body.result.tests.is_none()
                || check.is_some_and(|c| c != body.check.name)
            {
                continue;
            }
            if body.chain.writer != writer {
                survey.untrusted += 1;
                continue;
            }
            receipts.push(entry.receipt);
        }
    }
    // oldest first, so the evidence reads in the order it was written
    receipts.sort_by(|a, b| a.body().time().cmp(b.body().time()));
    for receipt in receipts {
        let Ok((receipt, _)) = trust.check(receipt) else {
            survey.untrusted += 1;
            continue;
        };
        let body = receipt.body();
        let Some(tests) = body.result.tests.as_ref().filter(|t| t.error.is_empty()) else {
            continue;
        };
        let list = match crate::results::load_list(store, tests) {
            Ok(l) => l,
            Err(why) => {
                survey.unreadable.push((receipt.id().to_owned(), why));
                continue;
            }
        };
        survey.compared += 1;
        let group = groups
            .entry((
                body.check.name.clone(),
                body.subject.inputs.clone(),
                body.check.definition.clone(),
            ))
            .or_default();
        // per test, what this receipt says of it; a name it lists both passed
        // and failed (two tests under one name) says nothing either way
        let mut said: BTreeMap<&str, Option<TestStatus>> = BTreeMap::new();
        for t in list.iter().filter(|t| t.status != TestStatus::Skipped) {
            said.entry(t.name.as_str())
                .and_modify(|s| {
                    if *s != Some(t.status) {
                        *s = None;
                    }
                })
                .or_insert(Some(t.status));
        }
        for (name, status) in said {
            let Some(status) = status else { continue };
            let (passed, failed) = group.entry(name.to_owned()).or_default();
            let side = if status == TestStatus::Passed {
                passed
            } else {
                failed
            };
            side.push(receipt.id().to_owned());
        }
    }
    for ((check, inputs, definition), tests) in groups {
        for (test, (passed, failed)) in tests {
            if passed.is_empty() || failed.is_empty() {
                continue;
            }
            survey.flaky.push(Flaky {
                check: check.clone(),
                test,
                inputs: inputs.clone(),
                definition: definition.clone(),
                passed: passed.len(),
                failed: failed.len(),
                passed_in: passed.into_iter().take(MAX_EVIDENCE).collect(),
                failed_in: failed.into_iter().take(MAX_EVIDENCE).collect(),
            });
        }
    }
    survey
        .flaky
        .sort_by(|a, b| (&a.check, &a.test, &a.inputs).cmp(&(&b.check, &b.test, &b.inputs)));
    Ok(survey)
}
