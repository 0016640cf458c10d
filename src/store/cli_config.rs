//! `git -c key=value receipt ...`: git hands a subcommand its `-c` (and
//! `--config-env`) settings in `GIT_CONFIG_PARAMETERS`, which every git
//! subcommand must honour over the config files. gix reads the other
//! environment form, `GIT_CONFIG_COUNT` with `GIT_CONFIG_KEY_<n>` and
//! `GIT_CONFIG_VALUE_<n>`, itself; this module reads `GIT_CONFIG_PARAMETERS`
//! the way git's `config.c` does.

/// The name of the variable git sets for `git -c`.
pub const ENV: &str = "GIT_CONFIG_PARAMETERS";

/// One `-c` setting: a full key (`section[.subsection].name`) and its value;
/// `None` is a key given without `=`, an implicit `true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The key as written (git compares section and name case-insensitively).
    pub key: String,
    /// The value, if one was given.
    pub value: Option<String>,
}

/// One single-quoted word at the start of `s` (git's `sq_dequote_step`): `'...'`,
/// where `'\''` and `'\!'` stand for a quote and a `!`. Returns the word and the
/// rest after it.
fn sq_word(s: &str) -> Option<(String, &str)> {
    let mut rest = s.strip_prefix('\'')?;
    let mut word = String::new();
    loop {
        let end = rest.find('\'')?;
        word.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        // `'\''` or `'\!'`: an escaped character, and the word goes on
        let mut chars = rest.chars();
        match (chars.next(), chars.next(), chars.next()) {
            (Some('\\'), Some(c @ ('\'' | '!')), Some('\'')) => {
                word.push(c);
                rest = &rest[3..];
            }
            _ => return Some((word, rest)),
        }
    }
}

/// Parse the value of `GIT_CONFIG_PARAMETERS`: whitespace-separated entries,
/// each new-style `'key'='value'` (or `'key'=`, an implicit `true`) or old-style
/// `'key=value'` (or `'key'`). `Err` names what is malformed, as git refuses it.
pub fn parse(env: &str) -> Result<Vec<Setting>, String> {
    let bogus = || format!("bogus format in {ENV}: {env:?}");
    let mut out = Vec::new();
    let mut cur = env.trim_start();
    while !cur.is_empty() {
        let (word, rest) = sq_word(cur).ok_or_else(bogus)?;
        let rest = if let Some(after) = rest.strip_prefix('=') {
            // new style: 'key'='value' or 'key'=
            if after.starts_with('\'') {
                let (value, rest) = sq_word(after).ok_or_else(bogus)?;
                if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
                    return Err(bogus());
                }
                out.push(Setting {
                    key: word,
                    value: Some(value),
                });
                rest
            } else if after.is_empty() || after.starts_with(char::is_whitespace) {
                out.push(Setting {
                    key: word,
                    value: None,
                });
                after
            } else {
                return Err(bogus());
            }
        } else if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            // old style: 'key=value' or 'key'
            let (key, value) = match word.split_once('=') {
                Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
                None => (word, None),
            };
            out.push(Setting { key, value });
            rest
        } else {
            return Err(bogus());
        };
        cur = rest.trim_start();
    }
    Ok(out)
}

/// The settings as a config file of source `Cli`, to append over every other
/// (git's precedence: files, then `GIT_CONFIG_COUNT`, then `-c`). `Err` names a
/// key that is not `section[.subsection].name`.
pub fn as_file(settings: &[Setting]) -> Result<gix::config::File, String> {
    let mut file =
        gix::config::File::new(gix::config::file::Metadata::from(gix::config::Source::Cli));
    for s in settings {
        let invalid = || {
            format!(
                "{:?} (from git -c) is not a valid configuration key; keys are section.name or section.subsection.name",
                s.key
            )
        };
        let (section, rest) = s.key.split_once('.').ok_or_else(invalid)?;
        let (subsection, name) = match rest.rsplit_once('.') {
            Some((sub, name)) => (Some(sub), name),
            None => (None, rest),
        };
        if section.is_empty() || name.is_empty() {
            return Err(invalid());
        }
        let subsection: Option<&gix::bstr::BStr> = subsection.map(gix::bstr::BStr::new);
        let value: Option<&gix::bstr::BStr> = s.value.as_deref().map(gix::bstr::BStr::new);
        let mut sec = file
            .section_mut_or_create_new(section, subsection)
            .map_err(|_| invalid())?;
        sec.push(name, value).map_err(|_| invalid())?;
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, value: Option<&str>) -> Setting {
        Setting {
            key: key.to_owned(),
            value: value.map(str::to_owned),
        }
    }

    #[test]
    fn new_and_old_style_entries_parse_as_git_writes_them() {
        assert_eq!(
            parse("'receipt.chain'='x' 'a.b'= 'c.d=e=f' 'g.h'").unwrap(),
            vec![
                kv("receipt.chain", Some("x")),
                kv("a.b", None),
                kv("c.d", Some("e=f")),
                kv("g.h", None),
            ]
        );
        assert_eq!(
            parse(r"'user.name'='O'\''Brien'\!''").unwrap(),
            vec![kv("user.name", Some("O'Brien!"))]
        );
        assert_eq!(
            parse("'a.b'=' spaced '").unwrap(),
            vec![kv("a.b", Some(" spaced "))]
        );
        assert_eq!(parse("").unwrap(), vec![]);
    }

    #[test]
    fn a_malformed_value_is_refused() {
        assert!(parse("a.b=c").is_err());
        assert!(parse("'a.b").is_err());
        assert!(parse("'a.b'x").is_err());
        assert!(parse("'a.b'='c'x").is_err());
    }

    #[test]
    fn a_key_without_a_section_is_refused() {
        assert!(as_file(&[kv("nosection", Some("1"))]).is_err());
        let f = as_file(&[
            kv("url.ssh://h/x.insteadOf", Some("y")),
            kv("receipt.logLimit", Some("abc")),
        ])
        .unwrap();
        assert_eq!(
            f.string("url.ssh://h/x.insteadof").unwrap().to_string(),
            "y"
        );
        assert_eq!(f.string("receipt.loglimit").unwrap().to_string(), "abc");
    }
}
