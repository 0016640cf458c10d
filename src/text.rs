//! Text that came from someone else, made safe to print on a terminal.
//!
//! A receipt is written by whoever can push a chain, so its strings (`detail`,
//! `argv`, paths, host names, reasons that quote them) may hold escape sequences
//! that redraw the screen, ring the bell, return the carriage to paint over a line,
//! or reverse the text that follows (Unicode bidi overrides). Every text output
//! passes such strings through [`escape`] (one field, one line) or
//! [`escape_lines`] (a message whose own line breaks are kept); `--json` output
//! needs neither, since JSON escapes control characters itself. HTML output
//! (`git receipt report`) passes them through [`escape_html`].

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as itself: C0 and C1 controls (ESC, BEL,
/// CR, NUL, ...), DEL, and the Unicode characters that reorder or hide the text
/// around them (bidi embeddings, overrides, isolates and marks).
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

fn escape_with(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let keep = |c: char| keep_newlines && c == '\n';
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !is_unsafe(c) || keep(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// `s` as one line that cannot control a terminal: every control character
/// (newline and tab too) and every bidi control is written visibly, as `\x1b`,
/// `\x0a`, `\u{202e}`. Plain text, including other non-ASCII, is unchanged.
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_with(s, false)
}

/// Like [`escape`], but keeps line breaks: for a whole message whose lines are
/// its own (an error with hints, a list of refusals).
pub fn escape_lines(s: &str) -> Cow<'_, str> {
    escape_with(s, true)
}

/// `s` as HTML text or a quoted attribute value that can neither open markup nor
/// leave its attribute: `&`, `<`, `>`, `"` and `'` become character references,
/// and every control or bidi character except newline and tab is written visibly
/// as [`escape`] writes it (a page must not reorder the text it quotes either).
pub fn escape_html(s: &str) -> Cow<'_, str> {
    let needs = |c: char| {
        matches!(c, '&' | '<' | '>' | '"' | '\'') || (is_unsafe(c) && c != '\n' && c != '\t')
    };
    if !s.chars().any(needs) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if is_unsafe(c) && (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// At most five paths, then how many more.
pub fn list_paths(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    if paths.len() <= SHOWN {
        paths.join(", ")
    } else {
        format!(
            "{} and {} more",
            paths[..SHOWN].join(", "),
            paths.len() - SHOWN
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_overrides_are_written_visibly() {
        assert_eq!(
            escape("x\x1b[2J\x1b[31mFAKE\rtest\x07\x7f\u{9b}"),
            r"x\x1b[2J\x1b[31mFAKE\x0dtest\x07\x7f\u{9b}"
        );
        assert_eq!(escape("a\u{202e}b\u{2066}c"), r"a\u{202e}b\u{2066}c");
        assert_eq!(escape("two\nlines\t"), r"two\x0alines\x09");
        assert_eq!(escape_lines("two\nlines\r"), "two\nlines\\x0d");
    }

    #[test]
    fn html_markup_quotes_controls_and_bidi_are_neutralised() {
        assert_eq!(
            escape_html(r#""><img src=x onerror=alert(1)>"#),
            "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(
            escape_html("<script>alert('x')</script> & co"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co"
        );
        assert_eq!(
            escape_html("a\x1b[31mb\rc\u{202e}d\0"),
            r"a\x1b[31mb\x0dc\u{202e}d\x00"
        );
        // line breaks and tabs are a log's own layout
        assert_eq!(escape_html("one\n\ttwo"), "one\n\ttwo");
        // an escaped string, escaped again, never turns back into markup
        assert_eq!(escape_html(&escape_html("<")), "&amp;lt;");
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for s in ["cargo test --all", "héllo wörld ✓", ""] {
            assert!(matches!(escape(s), Cow::Borrowed(t) if t == s));
            assert!(matches!(escape_html(s), Cow::Borrowed(t) if t == s));
        }
    }
}
