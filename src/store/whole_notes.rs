//! Which writers' notes git-receipt built here, whole, from their chains:
//! `.git/receipt-notes-whole`.
//!
//! A `verify` from a checkpoint reads the notes on the objects the receipts
//! after it are about (`verify::notes_of`). After a fresh clone's `git receipt
//! fetch --since`, those notes are the ones that very fetch built from the
//! chains it had just checked, and reading them again was a third of the run
//! (`benches/year.rs`). So every notes update that leaves a writer's notes
//! whole (built from nothing, or extended from notes this file already says
//! were whole) records here the chain tip and the notes commit, and a verify
//! from a checkpoint passes over a writer whose chain and notes are still at
//! those two tips: both name their content, so notes built whole from that
//! chain then are built whole from it now. Any other write of the notes (a
//! `git fetch` of another clone's, an edit by hand, a crash half-way) moves
//! the notes tip, and the notes are read again.
//!
//! It decides nothing: notes are a display (`store::notes`), and a whole
//! `verify` (no checkpoint) reads every note whatever this file says. Still,
//! whoever can write the git directory could otherwise make a verify skip
//! notes they changed, so the file is sealed with this user's index key
//! ([`super::index::mac`]), like the receipt index: a file this user did not
//! seal, a damaged one, one over [`MAX_FILE_BYTES`], or one written under
//! another shallow edge (`fetch --since` cut the chains elsewhere, so notes
//! built then lack what is here now) is read as empty, and the notes are read
//! again. Replaying a file this user sealed earlier says only what was true
//! then of two content-named tips, which stays true. Nothing is recorded
//! while this user has no index key: the record never makes one (a `run`
//! signing through ssh-agent writes nothing to git-receipt's config
//! directory); `fetch` makes it first, as the index it leaves needs it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;

use gix::ObjectId;

use super::Store;
use super::index::mac;

/// The file's name in the git directory.
pub const WHOLE_NOTES_FILE: &str = "receipt-notes-whole";

/// The largest file read (8 MiB: about 80,000 writers); a larger one is read as
/// empty, and a write that would pass it records no more writers.
pub const MAX_FILE_BYTES: u64 = 8 << 20;

const HEADER: &str = "git-receipt notes-whole 1";
const SEAL_DOMAIN: &[u8] = b"git-receipt notes-whole v1 seal";

/// Writers whose notes git-receipt built whole here: writer to (chain tip,
/// notes tip) as they were when it did, under the shallow edge they were
/// read under.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WholeNotes {
    whole: BTreeMap<String, (ObjectId, ObjectId)>,
    /// The digest of `.git/shallow` when read (empty: not shallow).
    shallow: String,
}

impl WholeNotes {
    /// None recorded, under the shallow edge `shallow` (see
    /// [`Store::whole_notes`]).
    pub fn under(shallow: &str) -> WholeNotes {
        WholeNotes {
            whole: BTreeMap::new(),
            shallow: shallow.to_owned(),
        }
    }

    /// Whether `writer`'s notes at `notes` were built whole from its chain at
    /// `chain`.
    pub fn covers(&self, writer: &str, chain: ObjectId, notes: ObjectId) -> bool {
        self.whole.get(writer) == Some(&(chain, notes))
    }

    /// Record that `writer`'s notes at `notes` were built whole from its chain
    /// at `chain` (replacing what was recorded of it).
    pub fn insert(&mut self, writer: &str, chain: ObjectId, notes: ObjectId) {
        self.whole.insert(writer.to_owned(), (chain, notes));
    }

    /// How many writers are recorded.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.whole.len()
    }

    /// The file's bytes, sealed with `key`: a header line, the shallow line,
    /// a line per writer (`<writer> <chain tip> <notes tip>`) while they fit
    /// [`MAX_FILE_BYTES`], then `seal <HMAC-SHA256 of everything before it>`.
    fn encode(&self, key: &mac::Key) -> Vec<u8> {
        let mut body = format!("{HEADER}\nshallow {}\n", or_dash(&self.shallow)).into_bytes();
        // room for the seal line
        let limit = usize::try_from(MAX_FILE_BYTES).unwrap_or(usize::MAX) - 80;
        for (writer, (chain, notes)) in &self.whole {
            let line = format!("{writer} {chain} {notes}\n");
            if body.len() + line.len() > limit {
                break;
            }
            body.extend_from_slice(line.as_bytes());
        }
        let seal = key.mac(&[SEAL_DOMAIN, &body]);
        body.extend_from_slice(format!("seal {}\n", hex::encode(seal)).as_bytes());
        body
    }

    /// What `bytes` record, when `key` sealed them under `shallow`; `None` for
    /// anything else.
    fn decode(bytes: &[u8], shallow: &str, key: &mac::Key) -> Option<WholeNotes> {
        // the seal line: the last, `seal ` and 64 hex digits
        let body_len = bytes.len().checked_sub(70)?;
        let (body, seal_line) = bytes.split_at(body_len);
        let seal = seal_line.strip_prefix(b"seal ")?.strip_suffix(b"\n")?;
        let seal = hex::decode(seal).ok()?;
        if !mac::same(&seal, &key.mac(&[SEAL_DOMAIN, body])) {
            return None;
        }
        let body = std::str::from_utf8(body).ok()?;
        let mut lines = body.lines();
        if lines.next()? != HEADER || lines.next()? != format!("shallow {}", or_dash(shallow)) {
            return None;
        }
        let mut whole = BTreeMap::new();
        for line in lines {
            let mut parts = line.split(' ');
            let (Some(writer), Some(chain), Some(notes), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return None;
            };
            let chain = ObjectId::from_hex(chain.as_bytes()).ok()?;
            let notes = ObjectId::from_hex(notes.as_bytes()).ok()?;
            whole.insert(writer.to_owned(), (chain, notes));
        }
        Some(WholeNotes {
            whole,
            shallow: shallow.to_owned(),
        })
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// A writer name the file can hold: what a ref component under
/// `refs/notes/receipts/` can be, without the space and newline the file's
/// lines are split on (no writer git-receipt makes has them).
fn recordable(writer: &str) -> bool {
    !writer.is_empty()
        && !writer
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
}

impl Store {
    /// Where [`WholeNotes`] are kept.
    pub fn whole_notes_path(&self) -> PathBuf {
        self.repo.common_dir().join(WHOLE_NOTES_FILE)
    }

    /// The writers whose notes git-receipt built whole here, as the file
    /// records them; none when there is no file, no index key, or the file
    /// is not one this user sealed under this clone's shallow edge as it is
    /// now.
    pub fn whole_notes(&self) -> WholeNotes {
        self.whole_notes_under(&self.shallow_stamp())
    }

    /// [`Store::whole_notes`] as read under the shallow edge `shallow` (a
    /// [`Store::shallow_stamp`] taken before notes were built).
    pub(super) fn whole_notes_under(&self, shallow: &str) -> WholeNotes {
        let none = WholeNotes::under(shallow);
        let Some(key) = mac::made_user_key() else {
            return none;
        };
        let path = self.whole_notes_path();
        let fits = std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_FILE_BYTES);
        if !fits {
            return none;
        }
        std::fs::read(&path)
            .ok()
            .and_then(|bytes| WholeNotes::decode(&bytes, shallow, key))
            .unwrap_or(none)
    }

    /// Record `built` (writer, chain tip, notes tip: notes built whole) on
    /// top of what the file holds, under the shallow edge `read` was read
    /// under (the edge the notes were built under: a file written after the
    /// edge moved is not read). A write that fails, or finds another process
    /// writing, records nothing: the notes are read again, which is all this
    /// file saves.
    pub(crate) fn record_whole_notes(
        &self,
        read: &WholeNotes,
        built: &[(String, ObjectId, ObjectId)],
    ) {
        if built.is_empty() {
            return;
        }
        let Some(key) = mac::made_user_key() else {
            return;
        };
        // with what other writes recorded since `read` was read
        let mut whole = self.whole_notes_under(&read.shallow);
        for (writer, chain, notes) in built {
            if recordable(writer) {
                whole.insert(writer, *chain, *notes);
            }
        }
        let path = self.whole_notes_path();
        let lock = path.with_extension("lock");
        let Ok(mut file) = super::take_file_lock(&lock) else {
            return;
        };
        // not synced: a file a crash leaves torn or empty fails its seal and
        // is read as empty, which costs a reading of the notes, nothing more
        let bytes = whole.encode(key);
        let written = file
            .write_all(&bytes)
            .and_then(|()| std::fs::rename(&lock, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&lock);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    #[test]
    fn what_a_key_sealed_under_an_edge_reads_back_and_nothing_else_does() {
        let key = mac::Key::from_bytes([7; 32]);
        let other = mac::Key::from_bytes([8; 32]);
        let mut w = WholeNotes::default();
        w.insert("alice-1", oid(1), oid(2));
        w.insert("bob-2", oid(3), oid(4));
        let bytes = w.encode(&key);
        assert_eq!(WholeNotes::decode(&bytes, "", &key), Some(w.clone()));
        assert!(w.covers("alice-1", oid(1), oid(2)));
        assert!(!w.covers("alice-1", oid(1), oid(4)));
        assert!(!w.covers("alice-1", oid(3), oid(2)));
        assert!(!w.covers("carol-3", oid(1), oid(2)));
        // another key, another shallow edge: nothing
        assert_eq!(WholeNotes::decode(&bytes, "", &other), None);
        assert_eq!(WholeNotes::decode(&bytes, "abc", &key), None);
        let mut edged = WholeNotes::under("abc");
        edged.insert("alice-1", oid(1), oid(2));
        edged.insert("bob-2", oid(3), oid(4));
        let under_edge = edged.encode(&key);
        assert_eq!(WholeNotes::decode(&under_edge, "abc", &key), Some(edged));
        assert_eq!(WholeNotes::decode(&under_edge, "", &key), None);
        // any byte changed, cut or added: nothing
        for at in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[at] ^= 1;
            assert_eq!(WholeNotes::decode(&changed, "", &key), None, "byte {at}");
            assert_eq!(
                WholeNotes::decode(&bytes[..at], "", &key),
                None,
                "cut at {at}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(b'\n');
        assert_eq!(WholeNotes::decode(&longer, "", &key), None);
        // a line the seal covers but that is not three fields: nothing
        let body = format!("{HEADER}\nshallow -\nalice-1 {}\n", oid(1));
        let mut forged = body.clone().into_bytes();
        let seal = key.mac(&[SEAL_DOMAIN, body.as_bytes()]);
        forged.extend_from_slice(format!("seal {}\n", hex::encode(seal)).as_bytes());
        assert_eq!(WholeNotes::decode(&forged, "", &key), None);
        // an empty record is a record
        let empty = WholeNotes::default().encode(&key);
        assert_eq!(
            WholeNotes::decode(&empty, "", &key),
            Some(WholeNotes::default())
        );
    }

    #[test]
    fn a_file_holds_writers_while_they_fit_and_names_only_recordable_writers() {
        assert!(recordable("default-ee212c79f064b86c"));
        assert!(!recordable(""));
        assert!(!recordable("a b"));
        assert!(!recordable("a\nb"));
        assert!(!recordable("a\u{1b}b"));
        let key = mac::Key::from_bytes([7; 32]);
        let mut w = WholeNotes::default();
        // writers of 100 bytes: a line of 183, more than fit in the file
        let n = usize::try_from(MAX_FILE_BYTES).unwrap() / 183 + 10;
        for i in 0..n {
            w.insert(&format!("{i:0100}"), oid(1), oid(2));
        }
        let bytes = w.encode(&key);
        assert!(bytes.len() as u64 <= MAX_FILE_BYTES);
        let back = WholeNotes::decode(&bytes, "", &key).unwrap();
        assert!(back.len() < n && back.len() + 20 > n, "{}", back.len());
        assert!(back.covers(&format!("{:0100}", 0), oid(1), oid(2)));

        // a last line that fills the file to the byte is kept
        let limit = usize::try_from(MAX_FILE_BYTES).unwrap() - 80;
        let head = format!("{HEADER}\nshallow -\n").len();
        let mut w = WholeNotes::default();
        let mut filled = head;
        let mut i = 0;
        while limit - filled >= 2 * 183 {
            w.insert(&format!("{i:0100}"), oid(1), oid(2));
            filled += 183;
            i += 1;
        }
        // `<writer> <40> <40>\n`: 83 bytes besides the writer
        let last = "z".repeat(limit - filled - 83);
        w.insert(&last, oid(3), oid(4));
        let back = WholeNotes::decode(&w.encode(&key), "", &key).unwrap();
        assert!(back.covers(&last, oid(3), oid(4)), "the line that fits");
        assert_eq!(back.len(), i + 1);
    }
}
