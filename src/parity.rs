//! Differential checks (`parity = differential`): a failure blocks only when this
//! change introduced it.
//!
//! The **baseline** is the trusted history's view of the same check: the trusted
//! receipt of the check for the inputs at the baseline commit, which is the merge
//! base of the revision with the trusted revision (the trust root for a reader,
//! the protected branch's old tip for the server, `--trust REV`), or, when the
//! revision is itself on that history, its first parent. The baseline commit's
//! own `.gitreceipts` defines the check there, so a branch that redefines the
//! check is compared with what the trusted history ran.
//!
//! A differential check whose deciding receipt failed reads:
//!
//! - **present** when at most `allow-new-failures` tests fail here that did not
//!   fail at the baseline (a test that is new here and fails counts as new); the
//!   reason says how many were fixed and how many are new (`2 fixed, 0 new
//!   failures vs 3f2a1c9`);
//! - **failed** otherwise, naming the new failures; and when the receipt has no
//!   per-test results, or no test failed (the failure is outside the tests);
//! - **undecided** when the baseline cannot be weighed: no baseline commit, the
//!   check not declared there, no trusted receipt of its inputs there, one whose
//!   per-test results could not be read, or one that ran where the check's
//!   declared environment assertions read otherwise (another runner class). The
//!   reason says which baseline was looked for.
//!
//! A receipt that passed needs no baseline: nothing failed.

use std::collections::BTreeSet;
use std::sync::Arc;

use gix::ObjectId;
use serde::Serialize;

use crate::contract::{Contract, ContractError, Parity};
use crate::freshness::{self, CheckState, FreshnessError, State, Undecided};
use crate::receipt::{Receipt, TestStatus, Verified};
use crate::store::{Store, StoreError};
use crate::trust::TrustSet;

/// How many test names a reason lists at most (the counts are whole).
pub const MAX_NAMED: usize = 10;

/// What a differential check was weighed against, and what it found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// The check.
    pub check: String,
    /// The baseline commit.
    pub baseline: String,
    /// The baseline's receipt.
    pub baseline_receipt: String,
    /// Whether the tests were compared (the receipt here failed).
    pub tests_compared: bool,
    /// Tests that fail here and did not fail at the baseline, sorted.
    pub new_failures: Vec<String>,
    /// Tests that failed at the baseline and pass here, sorted.
    pub fixed: Vec<String>,
    /// Tests that fail here and failed at the baseline too.
    pub still_failing: usize,
    /// `allow-new-failures`.
    pub allowed: u32,
    /// The metrics both receipts read, compared.
    pub metrics: Vec<MetricChange>,
    /// `max-regression`, in hundredths of a percent, when metrics are bounded.
    pub max_regression_bp: Option<u32>,
    /// New failures and regressed metrics that trusted accepted regressions
    /// accept for these inputs ([`Comparison::accept`]), sorted: they count
    /// for nothing against the bounds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accepted: Vec<String>,
    /// The accepted regressions that did, as `signer (id)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accepted_by: Vec<String>,
}

impl Comparison {
    /// Whether the check reads present.
    pub fn passes(&self) -> bool {
        let counted = |name: &String| self.accepted.binary_search(name).is_err();
        self.new_failures.iter().filter(|n| counted(n)).count() <= self.allowed as usize
            && !self.metrics.iter().any(|m| m.regressed && counted(&m.name))
    }

    /// Let an accepted regression (`by`, in words) accept these test and
    /// metric names: those of them that are new failures or regressed metrics
    /// here no longer count. Returns whether it accepted any.
    pub fn accept(&mut self, tests: &[String], metrics: &[String], by: String) -> bool {
        let mut took = false;
        for t in tests {
            if self.new_failures.binary_search(t).is_ok() && !self.accepted.contains(t) {
                self.accepted.push(t.clone());
                took = true;
            }
        }
        for m in metrics {
            if self.metrics.iter().any(|x| x.regressed && &x.name == m)
                && !self.accepted.contains(m)
            {
                self.accepted.push(m.clone());
                took = true;
            }
        }
        if took {
            self.accepted.sort();
            self.accepted_by.push(by);
        }
        took
    }

    /// `2 fixed, 1 new failure vs 3f2a1c9: a; p99 12.5 -> 13.9 ms (+11.2%, past
    /// max-regression 5%)` (names from receipts: escape before printing).
    pub fn words(&self) -> String {
        let b7 = &self.baseline[..7.min(self.baseline.len())];
        let mut parts = Vec::new();
        if self.tests_compared {
            let n = self.new_failures.len();
            let mut s = format!(
                "{} fixed, {n} new failure{} vs {b7}",
                self.fixed.len(),
                if n == 1 { "" } else { "s" },
            );
            if self.still_failing > 0 {
                s.push_str(&format!(" ({} failing there too)", self.still_failing));
            }
            if n > 0 {
                s.push_str(": ");
                s.push_str(&named(&self.new_failures));
                if self.allowed > 0 {
                    s.push_str(&format!(" (allow-new-failures = {})", self.allowed));
                }
            }
            parts.push(s);
        }
        if let Some(max) = self.max_regression_bp {
            let max = percent(i64::from(max));
            if self.metrics.is_empty() {
                parts.push(format!("no metric to compare with {b7}'s"));
            }
            for m in &self.metrics {
                let change = match m.worse_bp {
                    None => "from 0".to_owned(),
                    Some(bp) if bp < 0 => format!("{} better", percent(-bp)),
                    Some(bp) => format!("{} worse", percent(bp)),
                };
                parts.push(format!(
                    "{} {} -> {} {} vs {b7} ({change}; {} max-regression {max})",
                    m.name,
                    m.baseline,
                    m.here,
                    m.unit,
                    if m.regressed { "past" } else { "within" }
                ));
            }
        }
        if !self.accepted.is_empty() {
            parts.push(format!(
                "accepted: {} (by {})",
                named(&self.accepted),
                self.accepted_by.join(", ")
            ));
        }
        parts.join("; ")
    }
}

/// Hundredths of a percent as `5%`, `0.5%`, `-12.25%`.
fn percent(bp: i64) -> String {
    let sign = if bp < 0 { "-" } else { "" };
    let (whole, frac) = (bp.unsigned_abs() / 100, bp.unsigned_abs() % 100);
    match frac {
        0 => format!("{sign}{whole}%"),
        f if f % 10 == 0 => format!("{sign}{whole}.{}%", f / 10),
        f => format!("{sign}{whole}.{f:02}%"),
    }
}

/// The first [`MAX_NAMED`] of `names`, joined, and how many more.
fn named(names: &[String]) -> String {
    let mut s = names
        .iter()
        .take(MAX_NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > MAX_NAMED {
        s.push_str(&format!(" and {} more", names.len() - MAX_NAMED));
    }
    s
}

/// The commit a differential check of `commit` is weighed against, given the
/// trusted revision `trusted` (named `label`): their merge base, or `commit`'s
/// first parent when `commit` is on the trusted history itself; with the words
/// that name it in reasons. `None` when there is none (unrelated histories, a
/// root commit).
pub fn baseline_commit(
    store: &Store,
    commit: ObjectId,
    trusted: ObjectId,
    label: &str,
) -> Result<Option<(ObjectId, String)>, StoreError> {
    let base = if trusted == commit {
        Some(commit)
    } else {
        store.merge_base_of(commit, trusted)?
    };
    let short = |c: ObjectId| c.to_hex_with_len(7).to_string();
    Ok(match base {
        Some(b) if b == commit => store.commit_parents(commit)?.first().map(|p| {
            (
                *p,
                format!(
                    "{} (the parent of {}, which is on {label})",
                    short(*p),
                    short(commit)
                ),
            )
        }),
        Some(b) if b == trusted && label.starts_with(&short(b)) => Some((b, label.to_owned())),
        Some(b) if b == trusted => Some((b, format!("{} ({label})", short(b)))),
        Some(b) => Some((b, format!("{} (merge base with {label})", short(b)))),
        None => None,
    })
}

/// Per test name, whether the list says it failed (a name listed both ways
/// counts as failed).
fn failed_names(list: &[crate::receipt::TestCase]) -> (BTreeSet<&str>, BTreeSet<&str>) {
    let failed: BTreeSet<&str> = list
        .iter()
        .filter(|t| t.status == TestStatus::Failed)
        .map(|t| t.name.as_str())
        .collect();
    let passed: BTreeSet<&str> = list
        .iter()
        .filter(|t| t.status == TestStatus::Passed && !failed.contains(t.name.as_str()))
        .map(|t| t.name.as_str())
        .collect();
    (failed, passed)
}

/// The declared environment assertions' values a receipt recorded, by name.
fn assertion_values(r: &Receipt<Verified>) -> Vec<(&str, &str)> {
    let mut v: Vec<(&str, &str)> = r
        .body()
        .result
        .assertions
        .iter()
        .map(|a| (a.name.as_str(), a.actual.as_str()))
        .collect();
    v.sort();
    v
}

/// What weighing one receipt came to.
pub enum Weighed {
    /// Nothing to weigh: it passed and declares no bounded metric.
    Nothing,
    /// Compared with the baseline.
    Compared(Comparison),
    /// Failed on its own: why no comparison can excuse it.
    Fails(String),
    /// The baseline cannot be weighed.
    Undecided(FreshnessError),
}

/// One metric here against the baseline's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MetricChange {
    /// The metric.
    pub name: String,
    /// Its unit.
    pub unit: String,
    /// The baseline's value, as printed.
    pub baseline: String,
    /// The value here, as printed.
    pub here: String,
    /// How far it moved the wrong way, in hundredths of a percent of the
    /// baseline's value (negative: it improved); `None` from a baseline of 0.
    pub worse_bp: Option<i64>,
    /// Whether it moved the wrong way past `max-regression`.
    pub regressed: bool,
}

/// How far `here` is worse than `there` for a metric that is `better`, in
/// hundredths of a percent of `there` (`None`: `there` is 0).
fn worse_bp(better: crate::receipt::Better, there: f64, here: f64) -> Option<i64> {
    if there == 0.0 {
        return None;
    }
    let delta = match better {
        crate::receipt::Better::Lower => here - there,
        crate::receipt::Better::Higher => there - here,
    };
    let bp = (delta / there.abs() * 10_000.0).round();
    Some(bp.clamp(i64::MIN as f64, i64::MAX as f64) as i64)
}

/// The metrics both receipts read (same name, unit and direction), compared
/// under a bound of `max_bp`.
fn compare_metrics(
    here: &[crate::receipt::Metric],
    there: &[crate::receipt::Metric],
    max_bp: u32,
) -> Vec<MetricChange> {
    let mut out = Vec::new();
    for h in here {
        let Some(t) = there
            .iter()
            .find(|t| t.name == h.name && t.unit == h.unit && t.better == h.better)
        else {
            continue;
        };
        let (Some(hv), Some(tv)) = (&h.value, &t.value) else {
            continue;
        };
        let (Ok(hf), Ok(tf)) = (hv.parse::<f64>(), tv.parse::<f64>()) else {
            continue;
        };
        let worse = worse_bp(h.better, tf, hf);
        let regressed = match worse {
            Some(bp) => bp > i64::from(max_bp),
            // from 0, any move the wrong way is past every bound
            None => match h.better {
                crate::receipt::Better::Lower => hf > tf,
                crate::receipt::Better::Higher => hf < tf,
            },
        };
        out.push(MetricChange {
            name: h.name.clone(),
            unit: h.unit.clone(),
            baseline: tv.clone(),
            here: hv.clone(),
            worse_bp: worse,
            regressed,
        });
    }
    out
}

/// The `max-regression` of `def`, when it has metrics for it to bound: a
/// receipt of it is weighed even when it passed.
pub fn metric_bound(def: &crate::contract::CheckDef) -> Option<u32> {
    def.max_regression_bp.filter(|_| !def.metrics.is_empty())
}

/// Weigh `here`, the receipt deciding differential check `def` (as the rules
/// that judge it declare it), against the baseline `baseline` and the words that
/// name it (None: there is none; `trusted_label` names the trusted revision in
/// reasons): its failed tests when it failed, its metrics when `def` bounds
/// them (`max-regression`).
pub fn weigh(
    store: &Store,
    trust: &TrustSet,
    def: &crate::contract::CheckDef,
    here: &Receipt<Verified>,
    baseline: Option<(ObjectId, String)>,
    trusted_label: &str,
    walk_limit: usize,
) -> Result<Weighed, FreshnessError> {
    let check = def.name.as_str();
    let no_baseline = |why: String| {
        Ok(Weighed::Undecided(FreshnessError::NoBaseline {
            check: check.to_owned(),
            baseline: baseline.as_ref().map(|(b, _)| *b),
            why,
        }))
    };
    let body = here.body();
    let weigh_tests = !body.result.passed;
    let bound = metric_bound(def);
    if !weigh_tests && bound.is_none() {
        return Ok(Weighed::Nothing);
    }
    let mut failed_here = BTreeSet::new();
    let mut passed_here = BTreeSet::new();
    let list;
    if weigh_tests {
        let Some(tests) = &body.result.tests else {
            return Ok(Weighed::Fails(
                "the receipt records no per-test results to compare".into(),
            ));
        };
        if !tests.error.is_empty() {
            return Ok(Weighed::Fails(
                "its per-test results could not be read when it ran, so nothing can be compared"
                    .into(),
            ));
        }
        list = match crate::results::load_list(store, tests) {
            Ok(l) => l,
            Err(why) => return Ok(Weighed::Fails(why)),
        };
        (failed_here, passed_here) = failed_names(&list);
        if failed_here.is_empty() {
            return Ok(Weighed::Fails(
                "the check failed but no test did: the failure is outside the tests".into(),
            ));
        }
    }
    if bound.is_some()
        && let Some(m) = body
            .result
            .metrics
            .iter()
            .find(|m| def.metrics.iter().any(|d| d.name == m.name) && m.value.is_none())
    {
        return Ok(Weighed::Fails(format!(
            "its metric {} was not read ({}), so it cannot be compared",
            m.name, m.error
        )));
    }
    let Some((b, words)) = &baseline else {
        return no_baseline(format!(
            "it is `parity = differential`, and no baseline commit can be found for it (no merge base with {trusted_label})"
        ));
    };
    let b = *b;
    let b7 = b.to_hex_with_len(7).to_string();
    let at = match contract_at(store, b, &b7) {
        Ok(c) => c,
        Err(At::Store(e)) => return Err(e.into()),
        Err(At::Contract(e)) => {
            return no_baseline(format!(
                "it is `parity = differential`, and the .gitreceipts at the baseline {b7} does not parse: {e}"
            ));
        }
    };
    let Some(there_def) = at.check(check) else {
        return no_baseline(format!(
            "it is `parity = differential`, but the baseline {words} declares no check {check:?} to compare with"
        ));
    };
    let only: Arc<Contract> = Arc::new(Contract {
        checks: vec![there_def.clone()],
        ..(*at).clone()
    });
    let outcome = freshness::evaluate(store, b, &only, trust, freshness::Options { walk_limit })?
        .into_iter()
        .next();
    let there = match outcome {
        Some(Ok(CheckState {
            state: State::Present | State::Failed,
            decider: Some(d),
            ..
        })) => d.receipt,
        Some(Ok(s)) => {
            return no_baseline(format!(
                "it is `parity = differential`, and the baseline {words} has no trusted receipt of its inputs there ({})",
                s.state.as_str()
            ));
        }
        Some(Err(Undecided { error, .. })) => {
            return no_baseline(format!(
                "it is `parity = differential`, and the baseline {words} cannot be decided: {error}"
            ));
        }
        None => return no_baseline(format!("the baseline {b7} was not evaluated")),
    };
    // a baseline is only compared within a runner class: when the deciding
    // receipt there ran elsewhere, the newest trusted one of the same inputs
    // that ran where the assertions read as they do here stands in for it
    let there = if assertion_values(&there) == assertion_values(here) {
        there
    } else {
        let class = assertion_values(here);
        let same_class = |r: &Receipt<Verified>| assertion_values(r) == class;
        match freshness::newest_of_inputs(store, b, &only, there_def, trust, &same_class)? {
            Some(r) => r,
            None => {
                return no_baseline(format!(
                    "it is `parity = differential`, and no trusted receipt of its inputs at the baseline {words} ran where the declared environment assertions read as here ({:?}; its newest, {}, read {:?}): another runner class",
                    class,
                    short(there.id()),
                    assertion_values(&there)
                ));
            }
        }
    };
    let mut failed_there = BTreeSet::new();
    let list_there;
    if weigh_tests {
        list_there = match there.body().result.tests.as_ref() {
            Some(t) if t.error.is_empty() => match crate::results::load_list(store, t) {
                Ok(l) => l,
                Err(why) => {
                    return no_baseline(format!(
                        "the baseline's receipt {} has a test list that cannot be read: {why}",
                        short(there.id())
                    ));
                }
            },
            _ => {
                return no_baseline(format!(
                    "the baseline's receipt {} (on {b7}) recorded no per-test results",
                    short(there.id())
                ));
            }
        };
        (failed_there, _) = failed_names(&list_there);
    }
    let new_failures: Vec<String> = failed_here
        .difference(&failed_there)
        .map(|s| (*s).to_owned())
        .collect();
    let fixed: Vec<String> = failed_there
        .iter()
        .filter(|t| passed_here.contains(*t))
        .map(|s| (*s).to_owned())
        .collect();
    let metrics = match bound {
        Some(max) => compare_metrics(&body.result.metrics, &there.body().result.metrics, max),
        None => Vec::new(),
    };
    Ok(Weighed::Compared(Comparison {
        check: check.to_owned(),
        baseline: b.to_string(),
        baseline_receipt: there.id().to_owned(),
        tests_compared: weigh_tests,
        still_failing: failed_here.intersection(&failed_there).count(),
        new_failures,
        fixed,
        allowed: def.allow_new_failures,
        metrics,
        max_regression_bp: bound,
        accepted: Vec::new(),
        accepted_by: Vec::new(),
    }))
}

/// Why the contract at a commit could not be had.
enum At {
    Store(StoreError),
    Contract(ContractError),
}

impl From<ContractError> for At {
    fn from(e: ContractError) -> At {
        At::Contract(e)
    }
}

/// `.gitreceipts` at `commit` (empty when there is none), named `label` in
/// errors; parsed once per blob, as the judge's.
fn contract_at(store: &Store, commit: ObjectId, label: &str) -> Result<Arc<Contract>, At> {
    use crate::contract::FILE_NAME;
    Ok(
        match store.file_id_at(commit, FILE_NAME).map_err(At::Store)? {
            Some(id) => Contract::parse_blob(
                id,
                std::path::Path::new(&format!(".gitreceipts at {label}")),
                || store.blob(id).map_err(At::Store),
            )?,
            None => Default::default(),
        },
    )
}

fn short(id: &str) -> &str {
    id.get(..19).unwrap_or(id)
}

/// Whether any check of `contract` is differential.
pub fn any_differential(contract: &Contract) -> bool {
    contract
        .checks
        .iter()
        .any(|c| c.parity == Parity::Differential)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::{Better, Metric, TestCase};

    fn metric(name: &str, unit: &str, better: Better, value: &str) -> Metric {
        Metric {
            name: name.into(),
            unit: unit.into(),
            better,
            value: Some(value.into()),
            error: String::new(),
        }
    }

    #[test]
    fn percent_writes_hundredths_of_a_percent_with_no_trailing_zero() {
        let cases = [
            (0, "0%"),
            (500, "5%"),
            (50, "0.5%"),
            (5, "0.05%"),
            (1225, "12.25%"),
            (-1225, "-12.25%"),
            (-50, "-0.5%"),
        ];
        for (bp, words) in cases {
            assert_eq!(percent(bp), words, "{bp}");
        }
    }

    #[test]
    fn named_lists_ten_names_and_counts_the_rest() {
        let names = |n: usize| (0..n).map(|i| format!("t{i}")).collect::<Vec<_>>();
        assert_eq!(named(&names(10)), names(10).join(", "));
        assert_eq!(
            named(&names(12)),
            format!("{} and 2 more", names(10).join(", "))
        );
    }

    #[test]
    fn a_name_listed_both_failed_and_passed_counts_as_failed_and_a_skip_as_neither() {
        let case = |name: &str, status| TestCase {
            name: name.into(),
            status,
            duration_ms: None,
        };
        let list = [
            case("x", TestStatus::Failed),
            case("x", TestStatus::Passed),
            case("y", TestStatus::Passed),
            case("z", TestStatus::Skipped),
        ];
        let (failed, passed) = failed_names(&list);
        assert_eq!(failed, BTreeSet::from(["x"]));
        assert_eq!(passed, BTreeSet::from(["y"]));
    }

    #[test]
    fn worse_bp_is_the_move_the_wrong_way_in_hundredths_of_a_percent_of_the_baseline() {
        assert_eq!(worse_bp(Better::Lower, 10.0, 10.5), Some(500));
        assert_eq!(worse_bp(Better::Lower, 10.0, 9.0), Some(-1000));
        assert_eq!(worse_bp(Better::Higher, 200.0, 190.0), Some(500));
        assert_eq!(worse_bp(Better::Higher, 200.0, 250.0), Some(-2500));
        // of the baseline's magnitude: -10 -> -5 is 50% up
        assert_eq!(worse_bp(Better::Lower, -10.0, -5.0), Some(5000));
        assert_eq!(worse_bp(Better::Lower, 0.0, 5.0), None);
    }

    #[test]
    fn a_metric_is_compared_only_with_the_baselines_of_the_same_name_unit_and_direction() {
        let here = [metric("p99", "ms", Better::Lower, "11")];
        let there = [
            metric("errors", "ms", Better::Lower, "100"),
            metric("p99", "s", Better::Lower, "1"),
            metric("p99", "ms", Better::Higher, "20"),
            metric("p99", "ms", Better::Lower, "10"),
        ];
        let c = compare_metrics(&here, &there, 1000);
        assert_eq!(
            c,
            [MetricChange {
                name: "p99".into(),
                unit: "ms".into(),
                baseline: "10".into(),
                here: "11".into(),
                worse_bp: Some(1000),
                regressed: false,
            }]
        );
        // one hundredth of a percent past the bound regresses
        assert!(compare_metrics(&here, &there, 999)[0].regressed);
    }

    #[test]
    fn from_a_baseline_of_zero_only_a_move_the_wrong_way_regresses() {
        let regressed = |better, here: &str| {
            let c = compare_metrics(
                &[metric("m", "n", better, here)],
                &[metric("m", "n", better, "0")],
                1000,
            );
            assert_eq!(c[0].worse_bp, None);
            c[0].regressed
        };
        for (here, lower, higher) in [("0", false, false), ("5", true, false), ("-1", false, true)]
        {
            assert_eq!(regressed(Better::Lower, here), lower, "lower, 0 -> {here}");
            assert_eq!(
                regressed(Better::Higher, here),
                higher,
                "higher, 0 -> {here}"
            );
        }
    }

    #[test]
    fn a_comparison_says_an_unchanged_metric_is_0_percent_worse() {
        let change = |name: &str, worse_bp, regressed| MetricChange {
            name: name.into(),
            unit: "ms".into(),
            baseline: "10".into(),
            here: "10".into(),
            worse_bp,
            regressed,
        };
        let c = Comparison {
            check: "suite".into(),
            baseline: "0123456789abcdef".into(),
            baseline_receipt: "r".into(),
            tests_compared: true,
            new_failures: Vec::new(),
            fixed: vec!["f".into()],
            still_failing: 0,
            allowed: 0,
            metrics: vec![
                change("same", Some(0), false),
                change("less", Some(-50), false),
                change("zero", None, true),
            ],
            max_regression_bp: Some(500),
            accepted: Vec::new(),
            accepted_by: Vec::new(),
        };
        assert_eq!(
            c.words(),
            "1 fixed, 0 new failures vs 0123456; \
             same 10 -> 10 ms vs 0123456 (0% worse; within max-regression 5%); \
             less 10 -> 10 ms vs 0123456 (0.5% better; within max-regression 5%); \
             zero 10 -> 10 ms vs 0123456 (from 0; past max-regression 5%)"
        );
        assert!(!c.passes(), "a regressed metric fails it");
    }

    #[test]
    fn an_accepted_regression_takes_only_new_failures_and_regressed_metrics_it_names() {
        let change = |name: &str, regressed| MetricChange {
            name: name.into(),
            unit: "ms".into(),
            baseline: "10".into(),
            here: "12".into(),
            worse_bp: Some(2000),
            regressed,
        };
        let mut c = Comparison {
            check: "suite".into(),
            baseline: "0123456789abcdef".into(),
            baseline_receipt: "r".into(),
            tests_compared: true,
            new_failures: vec!["a".into(), "b".into()],
            fixed: Vec::new(),
            still_failing: 0,
            allowed: 0,
            metrics: vec![change("p50", false), change("p99", true)],
            max_regression_bp: Some(500),
            accepted: Vec::new(),
            accepted_by: Vec::new(),
        };
        assert!(!c.passes());
        // names that are no new failure, or a metric within its bound, take nothing
        let nothing = ["c".to_owned(), "p50".to_owned()];
        assert!(!c.accept(&nothing, &nothing[1..], "x (1)".into()));
        assert!(c.accepted.is_empty() && c.accepted_by.is_empty());
        // one failure of two: still failing (allow-new-failures = 0)
        assert!(c.accept(&["b".to_owned()], &[], "ada (2)".into()));
        assert_eq!(c.accepted, ["b"]);
        assert!(!c.passes());
        // with one allowed, the other may fail
        c.allowed = 1;
        assert!(!c.passes(), "p99 still regressed");
        // the metric, by another signer; the same name twice is taken once
        assert!(c.accept(&["b".to_owned()], &["p99".to_owned()], "bo (3)".into()));
        assert!(!c.accept(&["b".to_owned()], &["p99".to_owned()], "cy (4)".into()));
        assert_eq!(c.accepted, ["b", "p99"], "sorted");
        assert_eq!(c.accepted_by, ["ada (2)", "bo (3)"]);
        assert!(c.passes());
        c.allowed = 0;
        assert!(!c.passes(), "a is a new failure nobody accepted");
        assert!(c.accept(&["a".to_owned()], &[], "ada (5)".into()));
        assert!(c.passes());
        assert!(
            c.words()
                .ends_with("; accepted: a, b, p99 (by ada (2), bo (3), ada (5))"),
            "{}",
            c.words()
        );
        // the accepted stay in the comparison's own lists: it says what happened
        assert_eq!(c.new_failures, ["a", "b"]);
        assert!(c.metrics[1].regressed);
    }

    #[test]
    fn only_a_contract_with_a_differential_check_is_weighed() {
        let parse = |text: &str| {
            Contract::parse(text.as_bytes(), std::path::Path::new(".gitreceipts")).unwrap()
        };
        assert!(!any_differential(&parse("[check \"a\"]\n\trun = true\n")));
        assert!(any_differential(&parse(
            "[check \"a\"]\n\trun = true\n[check \"b\"]\n\trun = true\n\tresults = tap:-\n\tparity = differential\n"
        )));
    }
}
