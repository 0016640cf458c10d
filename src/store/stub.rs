//! Retention stubs: a chain entry whose receipt was dropped, keeping its id.
//!
//! A stub is a chain commit whose tree holds `stub.json` (and no
//! `receipt.json`): the RFC 8785 canonical form of [`Stub`], which names the
//! receipt it replaces by id, its place in the chain (`index`, `prev`), and, for
//! a reader, what it was about. Nothing in a stub is signed: the entry above it
//! signs its id (`prev`), so the chain's links still verify, and a stub counts
//! for nothing in any decision. `git receipt retain` writes them (the store's retain module; see
//! `docs/format.md`, "Retention stubs").

use serde::{Deserialize, Serialize};

use crate::receipt::{Body, Kind, Receipt, Unverified, is_hex_oid, is_receipt_id};

/// Name of the stub file in a chain commit's tree.
pub const STUB_FILE: &str = "stub.json";
/// The value of [`Stub::format`].
pub const STUB_FORMAT: &str = "git-receipt-stub/1";
/// The largest `stub.json` read; anything larger is refused unread.
pub const MAX_STUB_BYTES: usize = 4096;

/// What stays of a dropped receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stub {
    /// [`STUB_FORMAT`].
    pub format: String,
    /// The dropped receipt's id (`sha256:` and 64 lowercase hex digits).
    pub id: String,
    /// Its `chain.index`.
    pub index: u64,
    /// Its `chain.prev`.
    pub prev: Option<String>,
    /// Its check's name, for display (unsigned; a check name as receipts hold them).
    pub check: String,
    /// The commit it was about (`subject.commit`), for display.
    pub subject: String,
    /// When its check started (`result.started_at`), for display.
    pub started_at: String,
    /// When it was dropped, RFC 3339 UTC.
    pub dropped_at: String,
}

/// Whether `t` has the shape of the RFC 3339 UTC times git-receipt writes
/// (`2026-12-05T04:00:00.000Z`, or without the fraction): for display only,
/// so the shape is all that is checked.
fn is_time(t: &str) -> bool {
    let b = t.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    (t.len() == 20 || t.len() == 24)
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && (t.len() == 20 || (b[19] == b'.' && digits(20..23)))
        && b[t.len() - 1] == b'Z'
}

impl Stub {
    /// The stub of `receipt`, dropped at `dropped_at`; `None` for a receipt
    /// that is not a check (acceptances and reviews are never dropped).
    pub fn of(receipt: &Receipt<Unverified>, dropped_at: &str) -> Option<Stub> {
        let b: &Body = receipt.body();
        // a receipt that parses holds an acceptance or a review exactly when
        // its kind says so (the schema check in receipt.rs)
        if b.kind != Kind::Check {
            return None;
        }
        Some(Stub {
            format: STUB_FORMAT.to_owned(),
            id: receipt.id().to_owned(),
            index: b.chain.index,
            prev: b.chain.prev.clone(),
            check: b.check.name.clone(),
            subject: b.subject.commit.clone(),
            started_at: b.result.started_at.clone(),
            dropped_at: dropped_at.to_owned(),
        })
    }

    /// The stored bytes: canonical JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        crate::canon::to_canonical(self).expect("a stub is plain JSON")
    }

    /// Read stored bytes strictly: bounded, canonical, closed, every member in
    /// its shape. The answer says what is wrong, in words.
    pub fn parse(bytes: &[u8]) -> Result<Stub, String> {
        if bytes.len() > MAX_STUB_BYTES {
            return Err(format!(
                "{STUB_FILE} is {} bytes, over the {MAX_STUB_BYTES} byte limit",
                bytes.len()
            ));
        }
        let s: Stub = crate::canon::from_canonical(bytes)
            .map_err(|e| format!("{STUB_FILE} is not a stub: {e}"))?;
        let bad = |what: &str| Err(format!("{STUB_FILE} is not a stub: {what}"));
        if s.format != STUB_FORMAT {
            return bad("format is not git-receipt-stub/1");
        }
        if !is_receipt_id(&s.id) {
            return bad("id is not a receipt id");
        }
        match (&s.prev, s.index) {
            (None, 0) => {}
            (Some(p), i) if i > 0 && is_receipt_id(p) => {}
            _ => return bad("prev is not the id before it (null exactly at index 0)"),
        }
        if !crate::receipt::is_valid_check_name(&s.check) {
            return bad("check is not a check name");
        }
        if !is_hex_oid(&s.subject) {
            return bad("subject is not an object id");
        }
        if !is_time(&s.started_at) || !is_time(&s.dropped_at) {
            return bad("a time is not RFC 3339 UTC");
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stub() -> Stub {
        Stub {
            format: STUB_FORMAT.to_owned(),
            id: format!("sha256:{}", "ab".repeat(32)),
            index: 3,
            prev: Some(format!("sha256:{}", "cd".repeat(32))),
            check: "test".to_owned(),
            subject: "12".repeat(20),
            started_at: "2026-01-02T03:04:05.678Z".to_owned(),
            dropped_at: "2026-12-05T00:00:00Z".to_owned(),
        }
    }

    #[test]
    fn a_stub_reads_back_as_written_and_only_canonically() {
        let s = stub();
        let bytes = s.to_bytes();
        assert_eq!(Stub::parse(&bytes).unwrap(), s);
        let mut spaced = bytes.clone();
        spaced.insert(1, b' ');
        assert!(Stub::parse(&spaced).unwrap_err().contains("not a stub"));
        let extra = String::from_utf8(bytes.clone())
            .unwrap()
            .replacen('{', "{\"evil\":1,", 1);
        assert!(Stub::parse(extra.as_bytes()).is_err());
        assert!(
            Stub::parse(&vec![b' '; MAX_STUB_BYTES + 1])
                .unwrap_err()
                .contains("byte limit")
        );
        // at the limit it is read (and this is no stub)
        let at_limit = Stub::parse(&vec![b' '; MAX_STUB_BYTES]).unwrap_err();
        assert!(at_limit.contains("not a stub"), "{at_limit}");
        let mut longest = stub();
        longest.check = "c".repeat(64);
        assert_eq!(Stub::parse(&longest.to_bytes()).unwrap(), longest);
    }

    #[test]
    fn every_member_of_a_stub_is_held_to_its_shape() {
        type Change = Box<dyn Fn(&mut Stub)>;
        let bad: Vec<(&str, Change)> = vec![
            (
                "format",
                Box::new(|s| s.format = "git-receipt-stub/2".into()),
            ),
            ("id", Box::new(|s| s.id = "sha256:AB".to_owned())),
            (
                "id",
                Box::new(|s| s.id = format!("sha256:{}", "AB".repeat(32))),
            ),
            (
                "id",
                Box::new(|s| s.id = format!("sha1:{}", "ab".repeat(32))),
            ),
            ("prev", Box::new(|s| s.prev = None)),
            ("prev", Box::new(|s| s.prev = Some("sha256:12".into()))),
            ("prev", Box::new(|s| s.index = 0)),
            ("check", Box::new(|s| s.check = String::new())),
            ("check", Box::new(|s| s.check = "x".repeat(65))),
            ("check", Box::new(|s| s.check = "t\u{1b}[2J".into())),
            (
                "time",
                Box::new(|s| s.started_at = "2026-12-05T00:00:00,000Z".into()),
            ),
            ("subject", Box::new(|s| s.subject = "12".repeat(19))),
            ("subject", Box::new(|s| s.subject = "G2".repeat(20))),
            ("time", Box::new(|s| s.started_at = "yesterday".into())),
            (
                "time",
                Box::new(|s| s.dropped_at = "2026-12-05 00:00:00Z".into()),
            ),
            (
                "time",
                Box::new(|s| s.dropped_at = "2026-12-05T00:00:00.1234Z".into()),
            ),
            (
                "time",
                Box::new(|s| s.dropped_at = "2026-12-05T00:00:00+01".into()),
            ),
        ];
        for (what, change) in bad {
            let mut s = stub();
            change(&mut s);
            let err = Stub::parse(&s.to_bytes()).unwrap_err();
            assert!(err.contains(what), "{what}: {err}");
        }
        let mut root = stub();
        root.index = 0;
        root.prev = None;
        root.subject = "ab".repeat(32);
        root.started_at = "2026-01-02T03:04:05Z".into();
        assert_eq!(Stub::parse(&root.to_bytes()).unwrap(), root);
        assert!(is_receipt_id(&format!("sha256:{}", "0f".repeat(32))));
        assert!(!is_receipt_id(&format!("sha256:{}", "0f".repeat(31))));
    }
}
