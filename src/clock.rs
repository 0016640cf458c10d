//! Time: the one reading of "now", the skew a reader allows, and the order of
//! receipts, which is the chain's before it is the clock's.
//!
//! A receipt's date is what its writer's clock said, and a clock can be wrong (or
//! a signer hostile). So (see `docs/freshness.md`, "Time"):
//!
//! - Within one chain, the chain decides: a later entry is newer than an earlier
//!   one whatever the dates say. Across chains the dates decide, each entry taken
//!   as no earlier than the entries before it in its own chain
//!   ([`sort_newest_first`]).
//! - A receipt dated later than the reader's clock by more than the allowed skew
//!   ([`DEFAULT_MAX_SKEW_MS`], git config `receipt.maxClockSkew`) counts for
//!   nothing and is reported ([`future_notice`]).
//! - Nothing is signed with a clock before 1970 ([`signing_now_ms`]), nor dated
//!   before the previous entry of its chain ([`ClockError::BehindChain`]).

use std::time::{SystemTime, UNIX_EPOCH};

/// Test hook: when set, "now" is this instead of the system clock. Unix seconds
/// (negative before 1970) or a UTC time such as `2099-01-01T00:00:00Z`. For tests
/// only: it lets a test set the clock of one process without touching the
/// machine's.
pub const TEST_NOW_ENV: &str = "GIT_RECEIPT_TEST_NOW";

/// How far ahead of the reader's clock a receipt may be dated and still count:
/// ten minutes.
pub const DEFAULT_MAX_SKEW_MS: u64 = 10 * 60 * 1000;

/// The git config key that sets the skew, in seconds.
pub const SKEW_CONFIG: &str = "receipt.maxClockSkew";

/// Milliseconds since the Unix epoch, now; negative before it.
pub fn now_ms_signed() -> i64 {
    if let Some(t) = test_now() {
        return t;
    }
    let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => ms(d),
        Err(e) => -ms(e.duration()),
    }
}

/// Milliseconds since the Unix epoch, now; 0 before it (for reading: nothing that
/// signs may use a clock before 1970, see [`signing_now_ms`]).
pub fn now_ms() -> u64 {
    u64::try_from(now_ms_signed()).unwrap_or(0)
}

fn test_now() -> Option<i64> {
    let v = std::env::var(TEST_NOW_ENV).ok()?;
    let v = v.trim();
    if let Ok(secs) = v.parse::<i64>() {
        return Some(secs.saturating_mul(1000));
    }
    match timestamp_ms(v).or_else(|| parse_signer_time(v)) {
        Some(ms) => Some(i64::try_from(ms).unwrap_or(i64::MAX)),
        None => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                crate::notice::process().push(crate::notice::Notice::warning(
                    "test-clock-unreadable",
                    format!(
                        "{TEST_NOW_ENV} = {:?} is neither Unix seconds nor a UTC time; using the system clock",
                        crate::text::escape(v)
                    ),
                ))
            });
            None
        }
    }
}

/// A signer validity time, as Unix ms (UTC): `2026-01-31`, `2026-01-31T12:00:00Z`,
/// or OpenSSH's `YYYYMMDD[HHMM[SS]][Z]`.
pub fn parse_signer_time(text: &str) -> Option<u64> {
    let t = text.trim().trim_end_matches('Z');
    // the digits, in place (every receipt's time is read through here): more
    // than 14 is none of the forms
    let (mut digits, mut count) = ([0u8; 14], 0);
    for c in t.bytes() {
        if c.is_ascii_digit() {
            *digits.get_mut(count)? = c - b'0';
            count += 1;
        } else if !matches!(c, b'-' | b':' | b'T') {
            return None;
        }
    }
    if !matches!(count, 8 | 12 | 14) {
        return None;
    }
    // a field the form leaves out is 0
    let field = |from: usize, len: usize| -> u64 {
        digits[..count]
            .get(from..from + len)
            .map_or(0, |f| f.iter().fold(0, |n, &d| n * 10 + u64::from(d)))
    };
    let (y, m, d) = (field(0, 4) as i64, field(4, 2), field(6, 2));
    let (hh, mm, ss) = (field(8, 2), field(10, 2), field(12, 2));
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // days from civil (Howard Hinnant)
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + (hh * 3600 + mm * 60 + ss) as i64;
    u64::try_from(secs).ok().map(|s| s * 1000)
}

/// Unix ms of a receipt timestamp (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
pub fn timestamp_ms(ts: &str) -> Option<u64> {
    let (whole, ms) = ts.trim_end_matches('Z').split_once('.')?;
    parse_signer_time(whole)?.checked_add(ms.parse::<u64>().ok()?)
}

/// Why nothing was signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    /// The clock reads a time before 1970.
    #[error(
        "this computer's clock reads {}, before 1970-01-01, so nothing was signed: git cannot date a commit before 1970 (`git fsck` and servers refuse it)",
        format_signed(*now_ms)
    )]
    BeforeEpoch {
        /// What the clock reads.
        now_ms: i64,
    },
    /// The new entry would be dated before the previous entry of its chain.
    #[error(
        "this computer's clock reads {clock}, earlier than the previous entry of chain {writer} ({previous_id}, dated {previous}{ahead}): a chain's dates never go backwards, so nothing was signed"
    )]
    BehindChain {
        /// The chain.
        writer: String,
        /// What the clock reads.
        clock: String,
        /// The previous entry's id.
        previous_id: String,
        /// The previous entry's date.
        previous: String,
        /// How far the previous entry is ahead of the clock, in words
        /// (`, 3 hours ahead of this clock`), or empty.
        ahead: String,
        /// The previous entry is ahead of this clock by more than the skew.
        previous_in_future: bool,
    },
}

/// Now, for signing: refused before 1970.
pub fn signing_now_ms() -> Result<u64, ClockError> {
    let now = now_ms_signed();
    u64::try_from(now).map_err(|_| ClockError::BeforeEpoch { now_ms: now })
}

/// Whether a clock reading `now_ms` may sign an entry after one dated `previous`
/// (a receipt timestamp, with receipt id `previous_id`) on `writer`'s chain;
/// `skew_ms` is the reader's allowance (`receipt.maxClockSkew`, read by the store), which says whether the
/// previous entry is the one that is wrong.
pub fn may_follow(
    writer: &str,
    now_ms: u64,
    (previous_id, previous): (&str, &str),
    skew_ms: u64,
) -> Result<(), ClockError> {
    let Some(prev_ms) = timestamp_ms(previous) else {
        return Ok(()); // no readable date to go back from
    };
    if now_ms >= prev_ms {
        return Ok(());
    }
    let now = now_ms;
    Err(ClockError::BehindChain {
        writer: writer.to_owned(),
        clock: crate::receipt::format_timestamp(now),
        previous_id: previous_id.to_owned(),
        previous: previous.to_owned(),
        ahead: if prev_ms > now {
            format!(", {} ahead of this clock", span(prev_ms - now))
        } else {
            String::new()
        },
        previous_in_future: prev_ms > now.saturating_add(skew_ms),
    })
}

/// A reader's clock and the skew it allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Horizon {
    /// Now, Unix ms.
    pub now_ms: u64,
    /// How far ahead of now a receipt may be dated and still count.
    pub skew_ms: u64,
}

impl Horizon {
    /// The latest date (Unix ms) a receipt may carry and still count.
    pub fn limit_ms(self) -> u64 {
        self.now_ms.saturating_add(self.skew_ms)
    }
}

/// The notice for a receipt dated `date` (its `started_at` or `decided_at`) later
/// than `horizon` allows, or `None` when it is not. `what` is `started` or `was
/// decided`. The id and the date come from the receipt: escape before printing.
pub fn future_notice(id: &str, what: &str, date: &str, horizon: Horizon) -> Option<String> {
    let t = timestamp_ms(date)?;
    if t <= horizon.limit_ms() {
        return None;
    }
    Some(format!(
        "receipt {id} says it {what} at {date}, {} ahead of this clock (more than the {} {SKEW_CONFIG} allows); it is ignored",
        span(t.saturating_sub(horizon.now_ms)),
        span(horizon.skew_ms),
    ))
}

/// A duration in the largest whole unit: `73 years`, `3 hours`, `10 minutes`.
pub fn span(ms: u64) -> String {
    const UNITS: [(u64, &str); 5] = [
        (365 * 86_400_000, "year"),
        (86_400_000, "day"),
        (3_600_000, "hour"),
        (60_000, "minute"),
        (1000, "second"),
    ];
    for (size, name) in UNITS {
        if ms >= size {
            let n = ms / size;
            return format!("{n} {name}{}", if n == 1 { "" } else { "s" });
        }
    }
    format!("{ms} ms")
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a time that may be before 1970.
pub fn format_signed(ms: i64) -> String {
    if let Ok(u) = u64::try_from(ms) {
        return crate::receipt::format_timestamp(u);
    }
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // civil from days (Howard Hinnant), as `format_timestamp` but for any day
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let secs = rem / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60,
        rem % 1000
    )
}

/// Sort `items` newest first. `key` gives each item's chain, its position in that
/// chain and its date (any unit that sorts like time; `horizon` in the same unit).
///
/// Within one chain the position decides, whatever the dates say. Across chains
/// an item's date is taken as the latest date among its chain's items up to its
/// position (so an entry dated earlier than the one before it in its own chain
/// is as new as that one), ignoring dates beyond `horizon`: an entry dated in the
/// future makes none of the entries after it newer than anyone else's. Such an
/// entry itself sorts by its own date, so first: it must never win (the caller
/// skips it), and the caller that meets it first can say why it does not count.
/// Ties go to the higher position, then the higher chain.
pub fn sort_newest_first<T, C: Ord>(
    items: &mut Vec<T>,
    horizon: u64,
    key: impl Fn(&T) -> (C, u64, u64),
) {
    let mut keyed: Vec<(C, u64, u64, T)> = items
        .drain(..)
        .map(|t| {
            let (c, p, d) = key(&t);
            (c, p, d, t)
        })
        .collect();
    keyed.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let mut effective: Vec<(u64, u64, C, T)> = Vec::with_capacity(keyed.len());
    let mut latest = 0;
    for (chain, position, date, item) in keyed {
        if effective.last().is_none_or(|last| last.2 != chain) {
            latest = 0;
        }
        let counts_as = if date <= horizon {
            latest = latest.max(date);
            latest
        } else {
            date // first, so that a reader meets it and can say why it does not count
        };
        effective.push((counts_as, position, chain, item));
    }
    effective.sort_by(|a, b| (b.0, b.1, &b.2).cmp(&(a.0, a.1, &a.2)));
    items.extend(effective.into_iter().map(|e| e.3));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_before_1970_are_formatted() {
        assert_eq!(format_signed(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_signed(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(format_signed(-59_000), "1969-12-31T23:59:01.000Z");
        assert_eq!(format_signed(-86_400_000 * 365), "1969-01-01T00:00:00.000Z");
    }

    #[test]
    fn spans_say_the_largest_unit() {
        assert_eq!(span(600_000), "10 minutes");
        assert_eq!(span(3_600_000), "1 hour");
        assert_eq!(span(73 * 365 * 86_400_000 + 5), "73 years");
        assert_eq!(span(12), "12 ms");
    }

    #[test]
    fn within_a_chain_position_decides_and_across_chains_dates_do() {
        // (chain, position, date)
        let mut v = vec![
            ("a", 0, 50), // a's first, dated late
            ("a", 1, 10), // a's second, dated earlier: still newer than a#0
            ("b", 0, 40),
            ("b", 1, 999), // dated beyond the horizon
            ("b", 2, 45),
        ];
        sort_newest_first(&mut v, 100, |t| (t.0, t.1, t.2));
        let order: Vec<(&str, u64)> = v.iter().map(|t| (t.0, t.1)).collect();
        // b#1, beyond the horizon, comes first to be skipped; a#1 and a#0 count
        // as 50; b#2 as 45 (b#1's 999 is ignored), b#0 as 40
        assert_eq!(
            order,
            [("b", 1), ("a", 1), ("a", 0), ("b", 2), ("b", 0)],
            "{v:?}"
        );
    }

    #[test]
    fn an_entry_far_ahead_of_the_clock_makes_a_notice_and_one_within_the_skew_does_not() {
        let now = now_ms();
        let horizon = Horizon {
            now_ms: now,
            skew_ms: DEFAULT_MAX_SKEW_MS,
        };
        let soon = crate::receipt::format_timestamp(now + 60_000);
        assert_eq!(future_notice("sha256:x", "started", &soon, horizon), None);
        let n = future_notice("sha256:x", "started", "2999-01-01T00:00:00.000Z", horizon)
            .expect("a notice");
        assert!(n.contains("receipt sha256:x says it started at 2999-01-01T00:00:00.000Z"));
        assert!(n.contains("years ahead of this clock"), "{n}");
        assert!(n.contains("more than the 10 minutes"), "{n}");
        assert!(n.contains("it is ignored"), "{n}");
    }
}
