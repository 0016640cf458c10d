//! RFC 8785 conformance: the specification's own test vectors, copied unedited
//! into `fixtures/jcs/` (see the README there for their origin and licence).

use std::fs;
use std::path::{Path, PathBuf};

use git_receipt::canon::{canonicalize_json, from_canonical, to_canonical};

fn jcs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/jcs")
}

/// The six vectors of the reference suite.
const VECTORS: [&str; 6] = [
    "arrays",
    "french",
    "structures",
    "unicode",
    "values",
    "weird",
];

/// Every `input/*.json` with its name stem, sorted so failures are reproducible;
/// exactly the six of the reference suite, so that no loop over them can pass on
/// an empty or partial copy.
fn vector_names() -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(jcs_dir().join("input"))
        .expect("fixtures/jcs/input is readable")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, VECTORS, "unexpected set of fixtures/jcs/input files");
    names
}

fn read(rel: &str) -> Vec<u8> {
    let path = jcs_dir().join(rel);
    fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Decodes the `outhex` format: hex byte pairs separated by whitespace.
fn decode_outhex(text: &[u8]) -> Vec<u8> {
    let text = std::str::from_utf8(text).expect("outhex is ASCII");
    text.split_ascii_whitespace()
        .map(|pair| {
            u8::from_str_radix(pair, 16).unwrap_or_else(|e| panic!("bad hex {pair:?}: {e}"))
        })
        .collect()
}

#[test]
fn every_input_canonicalizes_to_its_output() {
    let names = vector_names();
    let mut failures = Vec::new();
    for name in &names {
        let input = read(&format!("input/{name}.json"));
        let expected = read(&format!("output/{name}.json"));
        match canonicalize_json(&input) {
            Ok(got) if got == expected => {}
            Ok(got) => failures.push(format!(
                "{name}: got {:?}, expected {:?}",
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&expected)
            )),
            Err(e) => failures.push(format!("{name}: error {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}

/// The suite's second spelling of each expected output (hex bytes), compared with
/// what our canonicalization produces, not with the other fixture.
#[test]
fn every_input_canonicalizes_to_its_outhex_bytes() {
    let mut failures = Vec::new();
    for name in vector_names() {
        let input = read(&format!("input/{name}.json"));
        let outhex = decode_outhex(&read(&format!("outhex/{name}.txt")));
        assert!(!outhex.is_empty(), "{name}: outhex holds bytes");
        match canonicalize_json(&input) {
            Ok(got) if got == outhex => {}
            Ok(got) => failures.push(format!("{name}: got {got:02x?}")),
            Err(e) => failures.push(format!("{name}: error {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_output_is_accepted_as_canonical() {
    // The reader side: canonical bytes pass from_canonical unchanged.
    let mut failures = Vec::new();
    for name in vector_names() {
        let output = read(&format!("output/{name}.json"));
        match from_canonical::<serde_json::Value>(&output) {
            Ok(value) if to_canonical(&value).unwrap() == output => {}
            Ok(_) => failures.push(format!("{name}: re-serialization differs")),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_input_is_rejected_as_not_canonical() {
    for name in vector_names() {
        let input = read(&format!("input/{name}.json"));
        let result = from_canonical::<serde_json::Value>(&input);
        assert!(
            matches!(
                result,
                Err(git_receipt::canon::CanonError::NotCanonical { .. })
            ),
            "{name}: expected NotCanonical, got {result:?}"
        );
    }
}

/// All 200,000 lines of the ES6 number-serialization file: each double must
/// serialize to exactly the expected text, and parsing that text back must give
/// the same double (which checks serde_json's float parsing, needed for
/// `canonicalize_json` of arbitrary input to be byte-exact).
#[test]
fn es6_number_serialization_200k() {
    const LINES: usize = 200_000;
    let text = String::from_utf8(read("es6-numbers-200k.txt")).expect("ASCII");

    let mut lines = 0usize;
    let mut skipped = 0usize;
    let mut checked = 0usize;
    let mut mismatches = 0usize;
    let mut reparse_mismatches = 0usize;
    let mut first = Vec::new();

    for (number, line) in text.lines().enumerate() {
        lines += 1;
        let (hex, expected) = line
            .split_once(',')
            .unwrap_or_else(|| panic!("line {}: no comma in {line:?}", number + 1));
        let bits = u64::from_str_radix(hex, 16)
            .unwrap_or_else(|e| panic!("line {}: bad hex {hex:?}: {e}", number + 1));
        let value = f64::from_bits(bits);
        if !value.is_finite() {
            // JSON has no NaN/Infinity; the file is not expected to contain any.
            skipped += 1;
            continue;
        }
        checked += 1;

        let got = to_canonical(&value);
        let ok = matches!(&got, Ok(bytes) if bytes == expected.as_bytes());
        if !ok {
            mismatches += 1;
            if first.len() < 10 {
                first.push(format!(
                    "line {}: {hex} -> {got:?}, expected {expected}",
                    number + 1
                ));
            }
        }

        // f64 `==` so that -0 (written "0") compares equal to its reparse.
        let reparsed: f64 = serde_json::from_str(expected)
            .unwrap_or_else(|e| panic!("line {}: cannot parse {expected:?}: {e}", number + 1));
        if reparsed != value {
            reparse_mismatches += 1;
            if first.len() < 10 {
                first.push(format!(
                    "line {}: {expected} parses to {:016x}, expected {bits:016x}",
                    number + 1,
                    reparsed.to_bits()
                ));
            }
        }
    }

    assert_eq!(
        lines, LINES,
        "es6-numbers-200k.txt should have {LINES} lines"
    );
    assert_eq!(
        skipped, 0,
        "the fixture is documented to hold only finite doubles"
    );
    assert!(
        mismatches == 0 && reparse_mismatches == 0,
        "{mismatches} serialization and {reparse_mismatches} parse mismatches out of {checked}; first:\n{}",
        first.join("\n")
    );
}
