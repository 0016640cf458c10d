//! JUnit XML (`<testsuites>` / `<testsuite>` / `<testcase>`), as written by
//! cargo-nextest, pytest, surefire and most runners, read with `roxmltree`
//! (which processes no external DTD). A test's name is `classname::name` (just
//! `name` without a class); a `<failure>` or `<error>` child fails it, a
//! `<skipped>` child skips it; `time` is in seconds.

use super::{Collector, ParseError};
use crate::receipt::{TestCase, TestStatus};

pub(super) fn parse(bytes: &[u8]) -> Result<Vec<TestCase>, ParseError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| ParseError(format!("the JUnit XML is not UTF-8: {e}")))?;
    let doc = roxmltree::Document::parse_with_options(
        text,
        roxmltree::ParsingOptions {
            allow_dtd: false,
            nodes_limit: 16 << 20,
            ..Default::default()
        },
    )
    .map_err(|e| ParseError(format!("not JUnit XML: {e}")))?;
    let root = doc.root_element();
    if !matches!(root.tag_name().name(), "testsuites" | "testsuite") {
        return Err(ParseError(format!(
            "not JUnit XML: the root element is <{}>, not <testsuites> or <testsuite>",
            root.tag_name().name()
        )));
    }
    let mut out = Collector::default();
    for case in root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "testcase")
    {
        let name = case.attribute("name").unwrap_or_default();
        let name = match case.attribute("classname").filter(|c| !c.is_empty()) {
            Some(class) => format!("{class}::{name}"),
            None => name.to_owned(),
        };
        let child = |tag: &str| {
            case.children()
                .any(|c| c.is_element() && c.tag_name().name() == tag)
        };
        let status = if child("failure") || child("error") {
            TestStatus::Failed
        } else if child("skipped") {
            TestStatus::Skipped
        } else {
            TestStatus::Passed
        };
        let duration = case
            .attribute("time")
            .and_then(|t| t.trim().parse::<f64>().ok())
            .filter(|t| t.is_finite() && *t >= 0.0)
            .map(|t| (t * 1000.0).round() as u64);
        out.push(&name, status, duration)?;
    }
    Ok(out.list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_cases_and_their_children() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nextest-run" tests="4" failures="1" errors="1">
  <testsuite name="fixture" tests="4">
    <testcase name="tests::passes" classname="fixture" time="0.012"/>
    <testcase name="tests::fails" classname="fixture" time="0.5">
      <failure type="test failure">assertion failed</failure>
    </testcase>
    <testcase name="tests::ignored" classname="fixture"><skipped/></testcase>
    <testcase name="&lt;script&gt;" time="nan"><error message="x"/></testcase>
  </testsuite>
</testsuites>"#;
        let mut l = parse(xml.as_bytes()).unwrap();
        l.sort();
        let got: Vec<_> = l
            .iter()
            .map(|t| (t.name.as_str(), t.status, t.duration_ms))
            .collect();
        assert_eq!(
            got,
            vec![
                ("<script>", TestStatus::Failed, None),
                ("fixture::tests::fails", TestStatus::Failed, Some(500)),
                ("fixture::tests::ignored", TestStatus::Skipped, None),
                ("fixture::tests::passes", TestStatus::Passed, Some(12)),
            ]
        );
    }

    #[test]
    fn malformed_xml_is_a_clear_error() {
        for (xml, says) in [
            ("<testsuites><testcase", "not JUnit XML"),
            ("<html/>", "root element is <html>"),
            (
                "<!DOCTYPE x [<!ENTITY a \"aaaa\">]><testsuites/>",
                "not JUnit XML",
            ),
        ] {
            let e = parse(xml.as_bytes()).unwrap_err();
            assert!(e.0.contains(says), "{xml}: {e}");
        }
        assert!(parse(b"\xff\xfe").unwrap_err().0.contains("UTF-8"));
    }
}
