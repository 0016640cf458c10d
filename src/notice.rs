//! Notices: what the library tells its caller besides a result, as data.
//!
//! The library never prints. Something a reader should see that does not stop the
//! work (an index rebuilt from the chains, a chain cut at an unreadable entry, a
//! clock that runs ahead) is a [`Notice`]: a stable machine `code`, a level and the
//! words. Code that holds a `Store` hands notices to the store's [`Sink`]
//! (`Store::notice`); reports carry their own lists. The CLI drains the sink,
//! prints each notice on stderr (hints, keyed by `code`, are attached there) and
//! puts every one in `--json` output. A leaf: the store is above it.

use serde::Serialize;

/// How much a notice matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Worth knowing; nothing is wrong.
    Notice,
    /// Something is wrong, was worked around, and may need the user.
    Warning,
}

/// One thing the library has to say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Notice {
    /// How much it matters.
    pub level: Level,
    /// A stable kebab-case name for the kind of notice (`index-rebuilt`,
    /// `chain-cut`): what scripts match on and what the CLI keys hints by.
    pub code: &'static str,
    /// The words, without a `hint:` (the CLI adds hints). May quote data from a
    /// receipt or a ref: escape it before it reaches a terminal.
    pub message: String,
    /// What the notice is about when a hint needs to name it (a ref, a path),
    /// unescaped; absent from JSON when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

impl Notice {
    /// A [`Level::Notice`].
    pub fn info(code: &'static str, message: impl Into<String>) -> Notice {
        Notice {
            level: Level::Notice,
            code,
            message: message.into(),
            subject: None,
        }
    }

    /// A [`Level::Warning`].
    pub fn warning(code: &'static str, message: impl Into<String>) -> Notice {
        Notice {
            level: Level::Warning,
            code,
            message: message.into(),
            subject: None,
        }
    }

    /// This notice, about `subject` (see [`Notice::subject`]).
    pub fn about(mut self, subject: impl Into<String>) -> Notice {
        self.subject = Some(subject.into());
        self
    }
}

/// The sink for what code that holds no store has to say (the receipt index's key,
/// which is read once per process; the test hook of the clock). The CLI drains it
/// with every store's.
pub fn process() -> &'static Sink {
    static SINK: Sink = Sink(std::sync::Mutex::new(Vec::new()));
    &SINK
}

/// A place notices go until someone takes them: shared between threads, so a
/// parallel verification can report into one list.
#[derive(Debug, Default)]
pub struct Sink(std::sync::Mutex<Vec<Notice>>);

impl Sink {
    /// Keep `n` (a notice equal to one already kept is kept once).
    pub fn push(&self, n: Notice) {
        let mut list = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !list.contains(&n) {
            list.push(n);
        }
    }

    /// Every notice kept so far, oldest first, leaving the sink empty.
    pub fn take(&self) -> Vec<Notice> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sink_keeps_each_notice_once_in_order_and_empties_when_taken() {
        let sink = Sink::default();
        sink.push(Notice::warning("chain-cut", "b"));
        sink.push(Notice::info("index-rebuilt", "a"));
        sink.push(Notice::warning("chain-cut", "b"));
        let got = sink.take();
        assert_eq!(
            got,
            vec![
                Notice::warning("chain-cut", "b"),
                Notice::info("index-rebuilt", "a")
            ]
        );
        assert!(sink.take().is_empty());
    }

    #[test]
    fn a_notice_serializes_with_its_level_in_lowercase() {
        let v = serde_json::to_value(Notice::warning("chain-cut", "x")).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"level": "warning", "code": "chain-cut", "message": "x"})
        );
    }
}
