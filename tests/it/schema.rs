//! `docs/receipt.schema.json` against real receipts.
//!
//! The real binary writes receipts of every shape it can produce (declared and ad
//! hoc checks, passed and failed, a command that cannot start, a dirty work tree,
//! `record` with a log, non-UTF-8 output, ...), and each one's stored bytes, read
//! back with stock git, must validate. Then hand-made invalid variants of a real
//! receipt must be rejected, each on its own, so the schema cannot be vacuously
//! permissive; and the reader (`Receipt::parse`) must reject the same variants, so
//! the schema and the code say the same thing.

use std::path::Path;
use std::sync::OnceLock;

use crate::common::Env;
use git_receipt::canon;
use git_receipt::receipt::Receipt;
use serde_json::{Value, json};

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/receipt.schema.json");
    let text = std::fs::read_to_string(&path).expect("docs/receipt.schema.json is readable");
    serde_json::from_str(&text).expect("docs/receipt.schema.json is JSON")
}

fn validator() -> jsonschema::Validator {
    jsonschema::draft202012::new(&schema()).expect("the schema compiles as draft 2020-12")
}

/// Every schema error for `instance`, one line each (empty when valid).
fn schema_errors(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{} (at {:?})", e, e.instance_path().to_string()))
        .collect()
}

/// What the reader says about `envelope`: write it canonically (refusing what
/// cannot be written), then parse it failing closed. The signature is not checked.
fn parser_verdict(envelope: &Value) -> Result<(), String> {
    let bytes = canon::to_canonical(envelope).map_err(|e| format!("refused when writing: {e}"))?;
    Receipt::parse(&bytes)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The newest receipt in `repo`: its chain commit and stored bytes.
fn newest_receipt(env: &Env, repo: &Path) -> (String, Vec<u8>) {
    let log = env.log_json(repo);
    let newest = log
        .iter()
        .max_by_key(|e| e["index"].as_u64().expect("index is a number"))
        .expect("at least one receipt");
    let chain_commit = newest["chain_commit"]
        .as_str()
        .expect("chain_commit")
        .to_owned();
    let bytes = env.receipt_bytes(repo, &chain_commit);
    (chain_commit, bytes)
}

/// The stored bytes of one real receipt (a passing declared check), made once.
fn real_receipt() -> Value {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    let bytes = BYTES.get_or_init(|| {
        let env = Env::new();
        let repo = env.fixture_repo("make_basic_repo.sh", "repo");
        env.receipt_ok(&repo, &["run", "test"]);
        newest_receipt(&env, &repo).1
    });
    serde_json::from_slice(bytes).expect("receipt.json is JSON")
}

/// A variant of a real receipt made by `edit`.
fn variant(edit: impl FnOnce(&mut Value)) -> Value {
    let mut v = real_receipt();
    edit(&mut v);
    v
}

/// The members of `v`, which must be an object.
fn members(v: &mut Value) -> &mut serde_json::Map<String, Value> {
    v.as_object_mut().expect("an object")
}

/// The schema rejects `invalid`.
fn assert_schema_rejects(what: &str, invalid: &Value) -> Vec<String> {
    let errors = schema_errors(&validator(), invalid);
    assert!(
        !errors.is_empty(),
        "the schema must reject a receipt with {what}, but accepted:\n{invalid:#}"
    );
    errors
}

/// The schema rejects `invalid`, and so does the reader.
fn assert_rejected(what: &str, invalid: &Value) {
    let errors = assert_schema_rejects(what, invalid);
    let verdict = parser_verdict(invalid);
    assert!(
        verdict.is_err(),
        "the reader must reject a receipt with {what} too (schema said: {errors:?})"
    );
    assert!(
        !verdict.as_ref().unwrap_err().contains("canonical form"),
        "the reader must reject {what} for its content, not for its bytes: {verdict:?}"
    );
}

/// The schema accepts `valid`, and so does the reader.
fn assert_accepted(what: &str, valid: &Value) {
    let errors = schema_errors(&validator(), valid);
    assert!(
        errors.is_empty(),
        "the schema must accept a receipt with {what}: {errors:#?}"
    );
    assert_eq!(
        parser_verdict(valid),
        Ok(()),
        "the reader must accept a receipt with {what}"
    );
}

#[test]
fn schema_is_a_valid_draft_2020_12_schema() {
    let schema = schema();
    assert_eq!(
        schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "the schema declares its draft"
    );
    if let Err(e) = jsonschema::draft202012::meta::validate(&schema) {
        panic!("docs/receipt.schema.json is not a valid draft 2020-12 schema: {e}");
    }
}

/// Closed everywhere: every object schema forbids other members and requires all
/// of its own (an `Option` member is present as `null`, never absent). The
/// `if`/`then`/`else` conditions only narrow members already declared.
#[test]
fn schema_is_closed_and_requires_every_member() {
    fn visit(node: &Value, pointer: &str, seen: &mut usize) {
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    *seen += 1;
                    assert_eq!(
                        map.get("additionalProperties"),
                        Some(&Value::Bool(false)),
                        "{pointer} must say additionalProperties: false"
                    );
                    let mut required: Vec<&str> = map["required"]
                        .as_array()
                        .unwrap_or_else(|| panic!("{pointer} must list required members"))
                        .iter()
                        .map(|r| r.as_str().expect("member names are strings"))
                        .collect();
                    // log_bytes and log_sha256 are v2 members: the body's
                    // schema-version conditional requires them in v2, forbids them in v1
                    // (and assertions and dependencies are v3 members, absent when empty;
                    // tests and metrics are the v4 members, one of them required in v4 by the body's conditional;
                    // artifacts and idempotency_key the v5 ones, likewise)
                    let versioned = [
                        "log_bytes",
                        "log_sha256",
                        "assertions",
                        "tests",
                        "metrics",
                        "artifacts",
                        "idempotency_key",
                    ];
                    // and the body's kind conditionals require check and result,
                    // acceptance or review, each for its own kind
                    let by_kind = ["check", "result", "acceptance", "review"];
                    let mut declared: Vec<&str> = props
                        .keys()
                        .map(String::as_str)
                        .filter(|k| !(pointer.ends_with("/result") && versioned.contains(k)))
                        .filter(|k| !(pointer.ends_with("/subject") && *k == "dependencies"))
                        .filter(|k| !(pointer.ends_with("/body") && by_kind.contains(k)))
                        // a v4 review's member, required by the body's conditional
                        .filter(|k| !(pointer.ends_with("/review") && *k == "accepts"))
                        .collect();
                    required.sort_unstable();
                    declared.sort_unstable();
                    assert_eq!(required, declared, "{pointer} must require every member");
                }
                for (key, child) in map {
                    if matches!(key.as_str(), "if" | "then" | "else") {
                        continue;
                    }
                    visit(child, &format!("{pointer}/{key}"), seen);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    visit(child, &format!("{pointer}/{i}"), seen);
                }
            }
            _ => {}
        }
    }
    let mut seen = 0;
    visit(&schema(), "#", &mut seen);
    assert_eq!(
        seen, 21,
        "the envelope, body, signature and the body's chain, subject, check, result, runner; \
         v3's dependency, assertion and its two kinds of expectation; acceptance (with \
         criterion and unresolved), review; v4's tests, test case, metric and accepts; \
         v5's artifact"
    );
}

/// One way of making a receipt, and what marks the receipt it made.
struct Shape {
    what: &'static str,
    args: Vec<&'static str>,
    env: Vec<(&'static str, &'static str)>,
    exit: i32,
    marks: fn(&Value) -> bool,
}

#[test]
fn every_shape_of_real_receipt_validates() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    // beside the repository, so the work tree stays clean; `--log` is relative to it
    std::fs::write(env.path("out.txt"), "line 1\nline 2\n").unwrap();

    let shapes = vec![
        Shape {
            what: "declared check that passed",
            args: vec!["run", "test"],
            env: vec![],
            exit: 0,
            marks: |b| {
                b["result"]["passed"] == true
                    && b["result"]["mode"] == "run"
                    && b["check"]["paths"] == json!(["src"])
                    && b["chain"]["prev"].is_null()
                    && b["result"]["log"].is_string()
            },
        },
        Shape {
            what: "ad hoc check that failed",
            args: vec!["run", "lint", "--", "sh", "-c", "exit 3"],
            env: vec![],
            exit: 3,
            marks: |b| {
                b["result"]["exit_code"] == 3
                    && b["result"]["passed"] == false
                    && b["check"]["paths"] == json!([])
                    && b["chain"]["prev"].is_string()
            },
        },
        Shape {
            what: "command that could not start",
            args: vec!["run", "ghost", "--", "/nonexistent/tool", "--flag"],
            env: vec![],
            exit: 127,
            marks: |b| {
                b["result"]["exit_code"] == 127
                    && b["result"]["detail"]
                        .as_str()
                        .is_some_and(|d| d.starts_with("could not start"))
                    && b["result"]["log"].is_null()
            },
        },
        Shape {
            what: "check killed by a signal",
            args: vec!["run", "sig", "--", "sh", "-c", "kill -TERM $$"],
            env: vec![],
            exit: 143,
            marks: |b| b["result"]["exit_code"] == 143 && b["result"]["detail"] != "",
        },
        Shape {
            what: "non-UTF-8 output",
            args: vec!["run", "bin", "--", "printf", "ok\\377\\376end"],
            env: vec![],
            exit: 0,
            marks: |b| b["result"]["stdout_tail"] == "ok\u{fffd}\u{fffd}end",
        },
        Shape {
            what: "recorded environment and ad hoc paths",
            args: vec![
                "run", "envcheck", "--path", "src", "--path", "docs", "--env", "FOO", "--", "true",
            ],
            env: vec![("FOO", "bar \"quoted\" ü")],
            exit: 0,
            marks: |b| {
                b["check"]["env"] == json!({"FOO": "bar \"quoted\" ü"})
                    && b["check"]["paths"] == json!(["docs", "src"])
                    && b["result"]["output_bytes"] == 0
                    && b["result"]["log"].is_null()
            },
        },
        Shape {
            what: "record with --log",
            args: vec![
                "record",
                "test",
                "--exit-code",
                "0",
                "--log",
                "../out.txt",
                "--duration-ms",
                "1234",
            ],
            env: vec![],
            exit: 0,
            marks: |b| {
                b["result"]["mode"] == "record"
                    && b["result"]["duration_ms"] == 1234
                    && b["result"]["output_bytes"] == 14
                    && b["result"]["log"].is_string()
            },
        },
        Shape {
            what: "record of a negative exit code with a detail",
            args: vec![
                "record",
                "crash",
                "--exit-code",
                "-1",
                "--detail",
                "runner crashed",
                "--",
                "./crash",
            ],
            env: vec![],
            exit: 0,
            marks: |b| b["result"]["exit_code"] == -1 && b["result"]["passed"] == false,
        },
    ];

    let validator = validator();
    let mut index = 0;
    let check = |what: &str, marks: fn(&Value) -> bool, index: u64| {
        let (chain_commit, bytes) = newest_receipt(&env, &repo);
        assert_ne!(bytes.last(), Some(&b'\n'), "{what}: no trailing newline");
        let envelope: Value = serde_json::from_slice(&bytes).expect("receipt.json is JSON");
        let body = &envelope["receipt"];
        assert_eq!(body["chain"]["index"], index, "{what}: the newest receipt");
        assert!(
            marks(body),
            "{what}: the receipt at {chain_commit} does not have that shape:\n{envelope:#}"
        );
        let errors = schema_errors(&validator, &envelope);
        assert!(
            errors.is_empty(),
            "{what}: the stored receipt at {chain_commit} violates the schema:\n{errors:#?}\n{envelope:#}"
        );
        envelope
    };

    let mut all = Vec::new();
    for shape in &shapes {
        let r = env.receipt_with(&repo, &shape.args, &shape.env);
        assert_eq!(r.code, shape.exit, "{}: {r}", shape.what);
        all.push(check(shape.what, shape.marks, index));
        index += 1;
    }

    // A dirty work tree: the checked tree is not the commit's.
    std::fs::write(repo.join("src/lib.rs"), "pub fn changed() {}\n").unwrap();
    std::fs::write(repo.join("src/new.rs"), "// untracked\n").unwrap();
    env.receipt_ok(&repo, &["run", "test"]);
    all.push(check(
        "dirty work tree",
        |b| b["subject"]["dirty"] == true && b["subject"]["tree"] != b["subject"]["inputs"],
        index,
    ));
    index += 1;

    // A log cut at receipt.logLimit.
    env.git_ok(&repo, &["config", "receipt.logLimit", "4"]);
    env.receipt_ok(&repo, &["run", "big", "--", "printf", "0123456789"]);
    all.push(check(
        "log cut at receipt.logLimit",
        |b| b["result"]["log_truncated"] == true && b["result"]["output_bytes"] == 10,
        index,
    ));

    // Between them, the receipts cover both values of every either-or member.
    for (member, pick) in [
        (
            "mode",
            (|b| b["result"]["mode"].clone()) as fn(&Value) -> Value,
        ),
        ("passed", |b| b["result"]["passed"].clone()),
        ("dirty", |b| b["subject"]["dirty"].clone()),
        ("log_truncated", |b| b["result"]["log_truncated"].clone()),
        ("log is null", |b| json!(b["result"]["log"].is_null())),
        ("prev is null", |b| json!(b["chain"]["prev"].is_null())),
        ("env is empty", |b| {
            json!(b["check"]["env"].as_object().is_some_and(|m| m.is_empty()))
        }),
    ] {
        let mut values: Vec<String> = all
            .iter()
            .map(|e| pick(&e["receipt"]).to_string())
            .collect();
        values.sort();
        values.dedup();
        assert_eq!(
            values.len(),
            2,
            "{member}: both values covered, got {values:?}"
        );
    }
}

#[test]
fn real_receipt_is_accepted_by_schema_and_reader() {
    assert_accepted("nothing changed", &real_receipt());
}

#[test]
fn rejects_an_extra_member() {
    assert_rejected(
        "an extra member in the body",
        &variant(|v| {
            members(&mut v["receipt"]).insert("comment".into(), json!("hi"));
        }),
    );
    assert_rejected(
        "an extra member in result",
        &variant(|v| {
            members(&mut v["receipt"]["result"]).insert("coverage".into(), json!(93));
        }),
    );
    assert_rejected(
        "an extra member in the envelope",
        &variant(|v| {
            members(v).insert("note".into(), json!(null));
        }),
    );
}

/// Receipts whose `Option` members (`chain.prev`, `result.log`, `supersedes`) are
/// absent instead of `null`.
fn absent_optional_members() -> Vec<(&'static str, Value)> {
    vec![
        (
            "chain.prev absent instead of null",
            variant(|v| {
                members(&mut v["receipt"]["chain"]).remove("prev");
            }),
        ),
        (
            "result.log absent instead of null",
            variant(|v| {
                v["receipt"]["result"]["log"] = Value::Null;
                members(&mut v["receipt"]["result"]).remove("log");
            }),
        ),
        (
            "supersedes absent instead of null",
            variant(|v| {
                members(&mut v["receipt"]).remove("supersedes");
            }),
        ),
    ]
}

#[test]
fn rejects_a_missing_member() {
    assert_rejected(
        "no result.detail",
        &variant(|v| {
            members(&mut v["receipt"]["result"]).remove("detail");
        }),
    );
    assert_rejected(
        "no subject.dirty",
        &variant(|v| {
            members(&mut v["receipt"]["subject"]).remove("dirty");
        }),
    );
    assert_rejected(
        "no signature.key",
        &variant(|v| {
            members(&mut v["signature"]).remove("key");
        }),
    );
    for (what, invalid) in absent_optional_members() {
        assert_schema_rejects(what, &invalid);
    }
}

/// An absent `Option` member must be an error for the reader too: otherwise the
/// bytes without `"prev":null` / `"supersedes":null` are a second stored form of
/// the same receipt, with the same id and a signature that still verifies.
#[test]
fn reader_rejects_absent_optional_members() {
    for (what, invalid) in absent_optional_members() {
        assert_rejected(what, &invalid);
    }
}

#[test]
fn rejects_a_bad_writer_id() {
    for bad in [
        "Default-0123456789abcdef0123456789abcdef",
        "default-0123456789abcdef",
        "-x-0123456789abcdef0123456789abcdef",
        "default-0123456789ABCDEF0123456789ABCDEF",
        "../default-0123456789abcdef0123456789abcdef",
    ] {
        assert_rejected(
            &format!("writer id {bad:?}"),
            &variant(|v| v["receipt"]["chain"]["writer"] = json!(bad)),
        );
    }
}

/// The reader's verdict on the canonical bytes of `envelope` with the text `from`
/// replaced by `to`: bytes the writer would refuse to produce, as an attacker can.
fn parser_verdict_edited(envelope: &Value, from: &str, to: &str) -> Result<(), String> {
    let bytes = canon::to_canonical(envelope).expect("a safe variant canonicalizes");
    let text = String::from_utf8(bytes).unwrap();
    assert_eq!(text.matches(from).count(), 1, "{from} occurs once");
    Receipt::parse(text.replace(from, to).as_bytes())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn rejects_an_integer_beyond_2_pow_53_minus_1() {
    assert_accepted(
        "duration_ms = 2^53-1",
        &variant(|v| v["receipt"]["result"]["duration_ms"] = json!(9_007_199_254_740_991u64)),
    );
    // the schema's half
    assert_schema_rejects(
        "duration_ms = 2^53",
        &variant(|v| v["receipt"]["result"]["duration_ms"] = json!(9_007_199_254_740_992u64)),
    );
    let negative = |n: i64| {
        variant(|v| {
            v["receipt"]["result"]["exit_code"] = json!(n);
            v["receipt"]["result"]["passed"] = json!(false);
        })
    };
    assert_schema_rejects("exit_code = -2^53", &negative(-9_007_199_254_740_992));
    // The reader's half: the writer refuses to encode such a number at all, so
    // hand the reader bytes that hold one (otherwise it never sees the case).
    for (what, envelope, from, to) in [
        (
            "duration_ms = 2^53",
            variant(|v| v["receipt"]["result"]["duration_ms"] = json!(9_007_199_254_740_991u64)),
            "9007199254740991",
            "9007199254740992",
        ),
        (
            "exit_code = -2^53",
            negative(-9_007_199_254_740_991),
            "-9007199254740991",
            "-9007199254740992",
        ),
    ] {
        assert_eq!(
            parser_verdict(&envelope),
            Ok(()),
            "{what}: the safe neighbour is read"
        );
        let verdict = parser_verdict_edited(&envelope, from, to);
        let why = verdict.expect_err(&format!("the reader must reject {what}"));
        assert!(
            why.contains("2^53"),
            "{what}: refused as an unsafe integer: {why}"
        );
    }
}

#[test]
fn rejects_a_wrong_schema_value() {
    for bad in ["git-receipt/v4", "git-receipt/v2 ", "", "GIT-RECEIPT/V2"] {
        assert_rejected(
            &format!("schema {bad:?}"),
            &variant(|v| v["receipt"]["schema"] = json!(bad)),
        );
    }
}

/// A v2 body's log members are tied to its version and to `log`: v1 has none,
/// v2 has both, and a digest goes with a log.
#[test]
fn log_members_follow_the_schema_version() {
    let real = real_receipt();
    assert_eq!(
        real["receipt"]["schema"], "git-receipt/v2",
        "receipts are written as v2"
    );
    let v1 = variant(|v| {
        v["receipt"]["schema"] = json!("git-receipt/v1");
        let result = v["receipt"]["result"].as_object_mut().unwrap();
        result.remove("log_bytes");
        result.remove("log_sha256");
    });
    assert_accepted("the same receipt as v1, without the v2 members", &v1);
    assert_rejected(
        "v1 with log_sha256",
        &variant(|v| v["receipt"]["schema"] = json!("git-receipt/v1")),
    );
    assert_rejected(
        "v2 without log_bytes",
        &variant(|v| {
            v["receipt"]["result"]
                .as_object_mut()
                .unwrap()
                .remove("log_bytes");
        }),
    );
    assert_rejected(
        "v2 without log_sha256",
        &variant(|v| {
            v["receipt"]["result"]
                .as_object_mut()
                .unwrap()
                .remove("log_sha256");
        }),
    );
    assert_rejected(
        "v2 with a log but no digest",
        &variant(|v| v["receipt"]["result"]["log_sha256"] = Value::Null),
    );
    assert_rejected(
        "v2 with a digest that is not one",
        &variant(|v| v["receipt"]["result"]["log_sha256"] = json!("sha256:xyz")),
    );
}

/// The other value rules of format v1 that JSON Schema can express.
#[test]
fn rejects_values_the_format_forbids() {
    let cases: Vec<(&str, Value)> = vec![
        (
            "kind \"run\"",
            variant(|v| v["receipt"]["kind"] = json!("run")),
        ),
        (
            "mode \"replay\"",
            variant(|v| v["receipt"]["result"]["mode"] = json!("replay")),
        ),
        (
            "alg \"rsa\"",
            variant(|v| v["signature"]["alg"] = json!("rsa")),
        ),
        (
            "passed true with exit_code 1",
            variant(|v| v["receipt"]["result"]["exit_code"] = json!(1)),
        ),
        (
            "passed true with a detail",
            variant(|v| v["receipt"]["result"]["detail"] = json!("timed out")),
        ),
        (
            "prev set at index 0",
            variant(|v| {
                v["receipt"]["chain"]["prev"] = json!(format!("sha256:{}", "a".repeat(64)))
            }),
        ),
        (
            "prev null at index 1",
            variant(|v| v["receipt"]["chain"]["index"] = json!(1)),
        ),
        (
            "a negative index",
            variant(|v| v["receipt"]["chain"]["index"] = json!(-1)),
        ),
        (
            "a negative duration",
            variant(|v| v["receipt"]["result"]["duration_ms"] = json!(-1)),
        ),
        (
            "a float duration",
            variant(|v| v["receipt"]["result"]["duration_ms"] = json!(1.5)),
        ),
        (
            "an abbreviated commit id",
            variant(|v| v["receipt"]["subject"]["commit"] = json!("abc1234")),
        ),
        (
            "an upper-case tree id",
            variant(|v| {
                let upper = v["receipt"]["subject"]["tree"]
                    .as_str()
                    .unwrap()
                    .to_uppercase();
                v["receipt"]["subject"]["tree"] = json!(upper);
            }),
        ),
        (
            "a log that is not a blob id",
            variant(|v| v["receipt"]["result"]["log"] = json!("output.log")),
        ),
        (
            "a definition without sha256:",
            variant(|v| {
                let d = v["receipt"]["check"]["definition"].as_str().unwrap()[7..].to_owned();
                v["receipt"]["check"]["definition"] = json!(d);
            }),
        ),
        (
            "supersedes that is not a receipt id",
            variant(|v| v["receipt"]["supersedes"] = json!("sha256:1234")),
        ),
        (
            "a timestamp with an offset",
            variant(|v| {
                v["receipt"]["result"]["started_at"] = json!("2026-01-01T00:00:00.000+00:00")
            }),
        ),
        (
            "a timestamp without milliseconds",
            variant(|v| v["receipt"]["result"]["started_at"] = json!("2026-01-01T00:00:00Z")),
        ),
        (
            "an empty argv",
            variant(|v| v["receipt"]["check"]["argv"] = json!([])),
        ),
        (
            "a duplicated path",
            variant(|v| v["receipt"]["check"]["paths"] = json!(["src", "src"])),
        ),
        (
            "a check name with a space",
            variant(|v| v["receipt"]["check"]["name"] = json!("unit tests")),
        ),
        (
            "a non-string env value",
            variant(|v| v["receipt"]["check"]["env"] = json!({"CI": true})),
        ),
        (
            "null for a member that is not optional",
            variant(|v| v["receipt"]["result"]["detail"] = json!(null)),
        ),
        (
            "a signature of 63 bytes",
            variant(|v| v["signature"]["sig"] = json!("A".repeat(84))),
        ),
        (
            "a signature in a non-canonical base64 spelling",
            variant(|v| {
                let sig = v["signature"]["sig"].as_str().unwrap().to_owned();
                // the last data character carries 4 unused bits; setting one
                // still decodes to the same 64 bytes in lenient decoders
                let bumped = char::from(sig.as_bytes()[85] + 1);
                v["signature"]["sig"] = json!(format!("{}{bumped}==", &sig[..85]));
            }),
        ),
    ];
    for (what, invalid) in &cases {
        assert_rejected(what, invalid);
    }
}

/// Changes within the rules stay valid for both: the rejections above are about
/// the rule each one breaks, not about any edit at all.
#[test]
fn accepts_values_within_the_rules() {
    assert_accepted(
        "a supersedes id",
        &variant(|v| v["receipt"]["supersedes"] = json!(format!("sha256:{}", "0".repeat(64)))),
    );
    assert_accepted(
        "a later index with a prev id",
        &variant(|v| {
            v["receipt"]["chain"]["index"] = json!(7);
            v["receipt"]["chain"]["prev"] = json!(format!("sha256:{}", "f".repeat(64)));
        }),
    );
    assert_accepted(
        "a failure with exit code 0 and a detail",
        &variant(|v| {
            v["receipt"]["result"]["detail"] = json!("timed out");
            v["receipt"]["result"]["passed"] = json!(false);
        }),
    );
    assert_accepted(
        "the lowest safe exit code",
        &variant(|v| {
            v["receipt"]["result"]["exit_code"] = json!(-9_007_199_254_740_991i64);
            v["receipt"]["result"]["passed"] = json!(false);
        }),
    );
    assert_accepted(
        "a chain name with '-' and '_'",
        &variant(|v| {
            v["receipt"]["chain"]["writer"] = json!("ci_linux-2-0123456789abcdef0123456789abcdef")
        }),
    );
}

/// The fingerprint must be `SHA256:` and 43 base64 characters, as `ssh-keygen -lf`
/// prints it; the reader checks only the prefix and the length.
#[test]
fn reader_rejects_a_malformed_key_fingerprint() {
    assert_rejected(
        "a fingerprint that is not base64",
        &variant(|v| v["signature"]["key"] = json!(format!("SHA256:{}", "!".repeat(43)))),
    );
}

/// The rest of `text` after `marker`.
fn after<'a>(text: &'a str, marker: &str) -> &'a str {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("{marker:?} in docs/format.md"));
    &text[at + marker.len()..]
}

/// The content of the first fenced block that opens with `fence` in `text`.
fn block<'a>(text: &'a str, fence: &str) -> &'a str {
    let content = after(text, fence);
    &content[..content.find("\n```").expect("the block ends")]
}

/// The worked example in docs/format.md is a real receipt: it parses failing
/// closed, its id and body bytes are the ones shown, its signature verifies
/// against the key shown, and it validates against the schema.
#[test]
fn format_md_worked_example_is_a_valid_receipt() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/format.md");
    let doc = std::fs::read_to_string(&path).expect("docs/format.md is readable");
    let example = after(&doc, "## 11. Worked example");
    let stored = block(after(example, "**Stored bytes**"), "```json\n");
    let body = block(after(example, "**Body bytes**"), "```json\n");
    let id = block(after(example, "**Id**"), "```text\n");
    let key_line = after(example, "$ cat key.pub\n")
        .lines()
        .next()
        .expect("the key line");

    let receipt = Receipt::parse(stored.as_bytes()).expect("the example parses");
    assert_eq!(receipt.id(), id, "the id shown is the example's id");
    assert_eq!(
        receipt.body_bytes(),
        body.as_bytes(),
        "the body bytes shown are the signed message"
    );
    let key = git_receipt::sign::PublicKey::from_openssh(key_line).expect("the key shown");
    receipt
        .verify(&key)
        .expect("the example's signature verifies against the key shown");
    let envelope: Value = serde_json::from_str(stored).unwrap();
    assert_eq!(schema_errors(&validator(), &envelope), Vec::<String>::new());
}

/// v5 (issue 29): the schema and the reader agree on where `result.artifacts`
/// and `result.idempotency_key` may be, and on what a well-formed one is.
#[test]
fn v5_members_belong_to_v5_check_receipts_only() {
    let artifact = |path: &str| serde_json::json!({"path": path, "size": 3, "sha256": format!("sha256:{}", "0".repeat(64))});
    let v5 = |result: Value| {
        variant(|v| {
            v["receipt"]["schema"] = "git-receipt/v5".into();
            let r = members(&mut v["receipt"]["result"]);
            for (k, x) in result.as_object().unwrap() {
                r.insert(k.clone(), x.clone());
            }
        })
    };
    assert_accepted(
        "v5 artifacts",
        &v5(serde_json::json!({"artifacts": [artifact("a"), artifact("b/c")]})),
    );
    assert_accepted(
        "a v5 empty artifact list",
        &v5(serde_json::json!({"artifacts": []})),
    );
    assert_accepted(
        "a v5 key",
        &v5(serde_json::json!({"idempotency_key": "ci/123-1"})),
    );
    assert_rejected("v5 with neither member", &v5(serde_json::json!({})));
    assert_rejected(
        "an artifact path that leaves the tree",
        &v5(serde_json::json!({"artifacts": [artifact("/etc/passwd")]})),
    );
    assert_rejected(
        "an artifact digest that is not one",
        &v5(serde_json::json!({"artifacts": [{"path": "a", "size": 1, "sha256": "md5:00"}]})),
    );
    assert_rejected(
        "an artifact with an extra member",
        &v5(
            serde_json::json!({"artifacts": [{"path": "a", "size": 1, "sha256": format!("sha256:{}", "0".repeat(64)), "mode": 7}]}),
        ),
    );
    assert_rejected(
        "a key with a space",
        &v5(serde_json::json!({"idempotency_key": "a b"})),
    );
    assert_rejected(
        "a key over 128 bytes",
        &v5(serde_json::json!({"idempotency_key": "k".repeat(129)})),
    );
    // in v2 (the real receipt's schema) both are foreign
    for member in ["artifacts", "idempotency_key"] {
        let value = if member == "artifacts" {
            serde_json::json!([artifact("a")])
        } else {
            "k".into()
        };
        assert_rejected(
            &format!("{member} in v2"),
            &variant(|v| {
                members(&mut v["receipt"]["result"]).insert(member.into(), value);
            }),
        );
    }
}
