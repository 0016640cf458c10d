//! git-config syntax to a list of `key = value` entries, each with its section
//! and line.
//!
//! Two readers give the same list. gix's config parser reads everything git
//! reads. It is also most of a gate's time when a team's contract lists a
//! thousand signers: it keeps an event per token, and each entry copies its
//! names. So a contract written plainly, the way `git receipt init`, `git config
//! -f` and people write it, is read by [`plain`], which borrows every name and
//! value from the text and answers only for a strict subset of the syntax:
//!
//! - a line is blank, a comment (`#` or `;` first), a section header, or a key;
//! - a header is `[name]` or `[name "subsection"]`, the name of ASCII letters,
//!   digits and `-`, the subsection without `"` or `\`, nothing but blanks after;
//! - a key is an ASCII letter, then letters, digits and `-`, then nothing but
//!   blanks, or `=` and a value with no `"`, `\`, `#`, `;` or tab in it;
//! - no control character anywhere but the tab, and no key before a section.
//!
//! For anything else (quotes, escapes, continued lines, comments after a value,
//! `[section.sub]`, CRLF) it declines, and gix reads the file. Where it answers,
//! it answers what gix does: `tests` compare the two on generated files, the
//! `contract` fuzz target on any bytes, and a test compares it with stock
//! `git config --list`.

use std::borrow::Cow;
use std::path::Path;
use std::rc::Rc;

use gix::bstr::ByteSlice;
use gix::config::parse::{EventRef as Event, Events};

use super::ContractError;

/// A section header: `[name "subsection"]` and its line, shared by the
/// section's entries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Head<'a> {
    /// The section name, lower-cased.
    pub name: Cow<'a, str>,
    pub sub: Option<Cow<'a, str>>,
    pub line: usize,
}

/// One `key = value` with the section it sits in and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RawEntry<'a> {
    /// Shared by the entries of one section: a thousand signers' entries are
    /// kept small (a contract's entries are all held at once).
    pub head: Rc<Head<'a>>,
    /// The key, lower-cased.
    pub key: Cow<'a, str>,
    /// `None` for a key without `=` (a boolean true).
    pub value: Option<Cow<'a, str>>,
    pub line: usize,
    /// A `;` or `#` comment followed the value on its line.
    pub trailing_comment: bool,
}

/// The entries of `text` in file order; `file` only labels errors.
pub(super) fn entries<'a>(text: &'a str, file: &Path) -> Result<Vec<RawEntry<'a>>, ContractError> {
    match plain(text) {
        Some(entries) => Ok(entries),
        None => with_gix(text, file),
    }
}

/// The entries of a plainly written file (see the module's text), or `None` when
/// the file uses anything else.
fn plain(text: &str) -> Option<Vec<RawEntry<'_>>> {
    const BLANKS: [char; 2] = [' ', '\t'];
    let bytes = text.as_bytes();
    // No control character but tab and newline, anywhere: one pass over the
    // file that the compiler turns into vector instructions.
    let control = bytes.iter().fold(false, |seen, &b| {
        seen | ((b < 0x20) & (b != b'\t') & (b != b'\n')) | (b == 0x7f)
    });
    if control {
        return None;
    }
    let is_name = |b: u8| b.is_ascii_alphanumeric() || b == b'-';
    // a line holds at most one entry: sized once, not grown by copying
    let lines = memchr::memchr_iter(b'\n', bytes).count() + 1;
    let mut out = Vec::with_capacity(lines);
    let mut section: Option<Rc<Head<'_>>> = None;
    let mut start = 0;
    for (at, end) in memchr::memchr_iter(b'\n', bytes)
        .chain(std::iter::once(bytes.len()))
        .enumerate()
    {
        // split at ASCII newlines, so each piece is UTF-8 as the text is
        let line = &text[start..end];
        start = end + 1;
        let t = line.trim_start_matches(BLANKS);
        let Some(&first) = t.as_bytes().first() else {
            continue;
        };
        if first == b'#' || first == b';' {
            continue;
        }
        if first == b'[' {
            let rest = &t[1..];
            let n = rest.bytes().take_while(|&b| is_name(b)).count();
            let (name, rest) = rest.split_at(n);
            if name.is_empty() {
                return None;
            }
            let (sub, rest) = match rest.strip_prefix(']') {
                Some(rest) => (None, rest),
                None => {
                    let spaced = rest.trim_start_matches(BLANKS);
                    if spaced.len() == rest.len() {
                        return None;
                    }
                    let quoted = spaced.strip_prefix('"')?;
                    let end = quoted.find('"')?;
                    let sub = &quoted[..end];
                    if sub.contains('\\') {
                        return None;
                    }
                    (
                        Some(Cow::Borrowed(sub)),
                        quoted[end + 1..].strip_prefix(']')?,
                    )
                }
            };
            if !rest.trim_matches(BLANKS).is_empty() {
                return None;
            }
            section = Some(Rc::new(Head {
                name: lower(name),
                sub,
                line: at + 1,
            }));
            continue;
        }
        if !first.is_ascii_alphabetic() {
            return None;
        }
        let n = t.bytes().take_while(|&b| is_name(b)).count();
        let (key, rest) = t.split_at(n);
        let rest = rest.trim_start_matches(BLANKS);
        let value = if rest.is_empty() {
            None
        } else {
            let value = rest.strip_prefix('=')?.trim_matches(BLANKS);
            let v = value.as_bytes();
            let quoting = memchr::memchr3(b'"', b'\\', b'#', v).is_some()
                || memchr::memchr2(b';', b'\t', v).is_some();
            if quoting {
                return None;
            }
            Some(Cow::Borrowed(value))
        };
        out.push(RawEntry {
            head: section.clone()?,
            key: lower(key),
            value,
            line: at + 1,
            trailing_comment: false,
        });
    }
    Some(out)
}

/// ASCII lower case, borrowed when it already is.
fn lower(s: &str) -> Cow<'_, str> {
    if s.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(s.to_ascii_lowercase())
    } else {
        Cow::Borrowed(s)
    }
}

/// The entries as gix's config parser reads them: any git-config syntax.
fn with_gix<'a>(text: &'a str, file: &Path) -> Result<Vec<RawEntry<'a>>, ContractError> {
    // whitespace between tokens says nothing here; not keeping it saves a third of the events
    let events = Events::from_bytes(
        text.as_bytes(),
        Some(|e| !matches!(e, Event::Whitespace(_))),
    )
    .map_err(|e| {
        // The parser's own message quotes what follows the error, which may run
        // past the offending line; quote at most the start of that line.
        let what = e.to_string();
        let what = what.split(": '").next().unwrap_or_default();
        let rest = e.remaining_data();
        let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
        let shown: String = String::from_utf8_lossy(line).chars().take(40).collect();
        ContractError::Syntax {
            file: file.to_owned(),
            line: e.line_number(),
            message: format!("{what} at {:?}", crate::text::escape(&shown)),
        }
    })?;
    Ok(collect_entries(&events))
}

fn collect_entries<'a>(events: &Events) -> Vec<RawEntry<'a>> {
    let entries = events
        .iter()
        .filter(|e| matches!(e, Event::SectionValueName(_)))
        .count();
    let mut out = Vec::with_capacity(entries);
    let mut line = 1usize;
    let mut section: Rc<Head<'a>> = Rc::default();
    let mut pending: Option<RawEntry> = None;
    let mut continued = String::new();
    for event in events.iter() {
        match event {
            Event::SectionHeader {
                name,
                subsection_name,
                ..
            } => {
                out.extend(pending.take());
                section = Rc::new(Head {
                    name: Cow::Owned(name.to_str_lossy().to_ascii_lowercase()),
                    sub: subsection_name.map(|s| Cow::Owned(s.to_str_lossy().into_owned())),
                    line,
                });
            }
            Event::SectionValueName(key) => {
                out.extend(pending.take());
                pending = Some(RawEntry {
                    head: section.clone(),
                    key: Cow::Owned(key.to_str_lossy().to_ascii_lowercase()),
                    value: None,
                    line,
                    trailing_comment: false,
                });
            }
            Event::KeyValueSeparator => {
                if let Some(p) = pending.as_mut() {
                    p.value = Some(Cow::Borrowed(""));
                }
            }
            Event::Value(v) => {
                if let Some(p) = pending.as_mut()
                    && p.value.is_some()
                {
                    p.value = Some(Cow::Owned(
                        gix::config::value::normalize(v).to_str_lossy().into_owned(),
                    ));
                }
            }
            Event::ValueNotDone(v) => continued.push_str(&v.to_str_lossy()),
            Event::ValueDone(v) => {
                continued.push_str(&v.to_str_lossy());
                if let Some(p) = pending.as_mut() {
                    let joined = std::mem::take(&mut continued);
                    p.value = Some(Cow::Owned(
                        gix::config::value::normalize(joined.as_bytes().as_bstr())
                            .to_str_lossy()
                            .into_owned(),
                    ));
                }
            }
            Event::Newline(n) => {
                line += n.iter().filter(|b| **b == b'\n').count();
                // a value continued with a backslash spans lines; anything else ends here
                if continued.is_empty() {
                    out.extend(pending.take());
                }
            }
            Event::Comment { .. } => {
                if let Some(p) = pending.as_mut() {
                    p.trailing_comment = true;
                }
            }
            Event::Whitespace(_) => {}
        }
    }
    out.extend(pending.take());
    out
}

/// For the fuzzers and tests: where the plain reader answers for `text`, whether gix
/// reads the same entries; the two readings when they differ.
pub fn disagreement(text: &str) -> Option<String> {
    let fast = plain(text)?;
    match with_gix(text, Path::new(".gitreceipts")) {
        Ok(slow) if slow == fast => None,
        other => Some(format!("plain reader: {fast:#?}\ngix: {other:#?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so a failure reproduces.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            from[(self.next() % from.len() as u64) as usize]
        }
    }

    /// Files built from the pieces a contract is made of: mostly pieces the plain
    /// reader takes, now and then one it must decline (the second of each pair).
    fn generated(seed: u64, n: usize) -> Vec<String> {
        let mut rng = Rng(seed);
        let names: (&[&str], &[&str]) = (
            &["check", "Signer", "review", "x", "a-b", "3", "CHECK"],
            &["", "a.b", "ä", "a_b", "a b"],
        );
        let subs: (&[&str], &[&str]) = (
            &[
                "test", "Te st", "", "é", " ", "#", ";", "\t", "UP", "a=b", "[x]",
            ],
            &["a\\\"b", "a\"", "\\"],
        );
        let keys: (&[&str], &[&str]) = (
            &["run", "Key", "required", "a-1", "PATH", "x"],
            &["1a", "k_", "", "-a", "a.b", "ä"],
        );
        let values: (&[&str], &[&str]) = (
            &[
                "cargo test",
                "  spaced  ",
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAA comment",
                "",
                "x=y",
                "ünï",
                "true",
                "a  b",
                "[x]",
                "a\u{a0}",
            ],
            &[
                "a # b",
                "a ; b",
                "\"q\"",
                "a\\",
                "tab\there",
                "a\\nb",
                "\u{1}",
                "\u{7f}",
            ],
        );
        let blanks: (&[&str], &[&str]) = (&["", " ", "\t", "  ", " \t"], &["\u{b}", "\u{c}", "\r"]);
        let ends: (&[&str], &[&str]) = (
            &["\n", "\n", "\n\n"],
            &["", "\r\n", " # c\n", ";c\n", "\\\n", "\r"],
        );
        let pick = |rng: &mut Rng, (plain, odd): (&[&str], &[&str])| -> String {
            if rng.next().is_multiple_of(40) {
                rng.pick(odd).to_owned()
            } else {
                rng.pick(plain).to_owned()
            }
        };
        (0..n)
            .map(|_| {
                let mut s = String::new();
                for i in 0..(rng.next() % 14) {
                    // a key before any section is declined: start with a header mostly
                    let piece = if i == 0 && !rng.next().is_multiple_of(10) {
                        0
                    } else {
                        rng.next() % 6
                    };
                    match piece {
                        0 => {
                            s += &pick(&mut rng, blanks);
                            s.push('[');
                            s += &pick(&mut rng, names);
                            if !rng.next().is_multiple_of(4) {
                                s += &pick(
                                    &mut rng,
                                    ([" ", "  ", "\t"].as_slice(), [""].as_slice()),
                                );
                                s.push('"');
                                s += &pick(&mut rng, subs);
                                s.push('"');
                            }
                            s.push(']');
                            s += &pick(&mut rng, blanks);
                        }
                        1 => {
                            s += &pick(&mut rng, blanks);
                            s += &pick(
                                &mut rng,
                                (
                                    ["# note", "; note", "#", ""].as_slice(),
                                    ["# \u{1}"].as_slice(),
                                ),
                            );
                        }
                        _ => {
                            s += &pick(&mut rng, blanks);
                            s += &pick(&mut rng, keys);
                            if !rng.next().is_multiple_of(5) {
                                s += &pick(&mut rng, blanks);
                                s.push('=');
                                s += &pick(&mut rng, blanks);
                                s += &pick(&mut rng, values);
                                s += &pick(&mut rng, blanks);
                            }
                        }
                    }
                    s += &pick(&mut rng, ends);
                }
                s
            })
            .collect()
    }

    #[test]
    fn the_plain_reader_agrees_with_gix_wherever_it_answers() {
        let (mut answered, mut declined) = (0, 0);
        for text in generated(0x5eed_0fc0_ffee, 40_000) {
            if let Some(d) = disagreement(&text) {
                panic!("{text:?}:\n{d}");
            }
            match plain(&text) {
                Some(_) => answered += 1,
                None => declined += 1,
            }
        }
        // both sides of the subset are exercised, or the test proves nothing
        assert!(
            answered > 15_000 && declined > 5_000,
            "{answered} {declined}"
        );
    }

    /// Stock git is the oracle: wherever the plain reader answers, `git config
    /// --list` reads the same sections, keys and values.
    #[test]
    fn the_plain_reader_agrees_with_git_config() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("contract");
        let mut compared = 0;
        for text in generated(0x0dd_ba11, 3_000) {
            let Some(entries) = plain(&text) else {
                continue;
            };
            if entries.is_empty() {
                continue;
            }
            std::fs::write(&file, &text).unwrap();
            let out = std::process::Command::new("git")
                .args(["config", "--no-includes", "-f"])
                .arg(&file)
                .arg("--list")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "git refuses what the plain reader read: {text:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let ours: String = entries
                .iter()
                .map(|e| {
                    let sub = e.head.sub.as_deref().map(|s| format!(".{s}"));
                    let value = e.value.as_deref().map(|v| format!("={v}"));
                    format!(
                        "{}{}.{}{}\n",
                        e.head.name,
                        sub.unwrap_or_default(),
                        e.key,
                        value.unwrap_or_default()
                    )
                })
                .collect();
            assert_eq!(String::from_utf8_lossy(&out.stdout), ours, "{text:?}");
            compared += 1;
            if compared == 300 {
                break;
            }
        }
        assert_eq!(compared, 300);
    }

    #[test]
    fn the_plain_reader_declines_what_is_outside_its_subset() {
        for text in [
            "[check \"a\"]\n\trun = \"quoted\"\n",
            "[check \"a\"]\n\trun = a \\\n b\n",
            "[check \"a\"]\n\trun = a # why\n",
            "[check \"a\"]\r\n\trun = a\r\n",
            "[check.a]\n\trun = a\n",
            "[check \"a\"] run = a\n",
            "[check \"a\\\"b\"]\n",
            "run = a\n",
            "[check \"a\"]\n\trun = a\tb\n",
            "[check \"a\"]\n\trun = a\x0bb\n",
        ] {
            assert_eq!(plain(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_plain_reader_reads_a_contract_as_written() {
        let text = "# team\n[Check \"Unit\"]\n\trun = cargo test --all\n\tREQUIRED\n\tpath =\n[signer \"ä\"]\n  key = ssh-ed25519 AAAA x  \n";
        let e = plain(text).unwrap();
        let seen: Vec<_> = e
            .iter()
            .map(|e| {
                (
                    &*e.head.name,
                    e.head.sub.as_deref(),
                    e.head.line,
                    &*e.key,
                    e.value.as_deref(),
                    e.line,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("check", Some("Unit"), 2, "run", Some("cargo test --all"), 3),
                ("check", Some("Unit"), 2, "required", None, 4),
                ("check", Some("Unit"), 2, "path", Some(""), 5),
                ("signer", Some("ä"), 6, "key", Some("ssh-ed25519 AAAA x"), 7),
            ]
        );
        assert_eq!(disagreement(text), None);
    }
}
