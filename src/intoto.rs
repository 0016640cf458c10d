//! in-toto attestations of receipts: a verified receipt becomes an in-toto
//! Statement v1, signed by the exporter in a DSSE envelope.
//!
//! This module owns the translation and the envelope; it takes only
//! [`Receipt<Verified>`], so nothing that failed its signature or trust check can
//! be attested. Which receipts to export, and whose trust, is the CLI's business
//! (`git receipt export`). The field mapping is documented in `docs/interop.md`.
//!
//! - A `check` receipt becomes the test-result predicate
//!   (`https://in-toto.io/attestation/test-result/v0.1`): `result` PASSED or
//!   FAILED, `configuration` the check's definition and the receipt itself, the
//!   check's name in `passedTests` or `failedTests`. Its subjects are the commit
//!   (`gitCommit`, left out when the work tree had uncommitted changes, because
//!   then the commit is not what was checked) and the inputs tree (`gitTree`).
//! - Further kinds get their own predicate in [`statement`]: one match arm each.
//!
//! The payload is the RFC 8785 form of the Statement, so one receipt exported by
//! one key always gives the same bytes (Ed25519 signatures are deterministic).

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde_json::{Value, json};

use crate::agent::AgentError;
use crate::canon::{self, CanonError};
use crate::receipt::{Body, Kind, Mode, Receipt, Verified};
use crate::sign::SigningKey;

/// The DSSE `payloadType` of an in-toto Statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The Statement layer's `_type`.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The test-result predicate a check receipt becomes.
pub const TEST_RESULT: &str = "https://in-toto.io/attestation/test-result/v0.1";
/// The verification summary predicate (SLSA VSA v1) an acceptance receipt becomes.
pub const VERIFICATION_SUMMARY: &str = "https://slsa.dev/verification_summary/v1";
/// The SLSA Provenance v1 predicate a check receipt with artifacts becomes
/// (`export --slsa`).
pub const PROVENANCE: &str = "https://slsa.dev/provenance/v1";
/// The `buildType` of that provenance: a check that `git receipt run` observed
/// or `record`ed, as docs/interop.md ("SLSA provenance") describes it.
pub const BUILD_TYPE: &str = "git-receipt:build-type/check/v1";

/// An in-toto ResourceDescriptor (only the members used here).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceDescriptor {
    /// What the producer calls the resource.
    pub name: String,
    /// Algorithm name (`gitCommit`, `gitTree`, `sha256`) to lowercase hex digest.
    pub digest: BTreeMap<&'static str, String>,
    /// Further facts about the resource; absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

/// An in-toto Statement v1.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Statement {
    /// Always [`STATEMENT_TYPE`].
    #[serde(rename = "_type")]
    pub type_: &'static str,
    /// The artifacts the Statement is about, matched by digest.
    pub subject: Vec<ResourceDescriptor>,
    /// The predicate's type URI.
    #[serde(rename = "predicateType")]
    pub predicate_type: &'static str,
    /// The predicate.
    pub predicate: Value,
}

/// One DSSE signature.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DsseSignature {
    /// The signer's OpenSSH SHA256 fingerprint (`SHA256:...`, as `ssh-keygen -l` prints it).
    pub keyid: String,
    /// Base64 (standard, padded) of the raw 64-byte Ed25519 signature over the PAE.
    pub sig: String,
}

/// A DSSE envelope, as serialized (one per line in an export).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Envelope {
    /// Base64 (standard, padded) of the Statement's bytes.
    pub payload: String,
    /// Always [`PAYLOAD_TYPE`].
    #[serde(rename = "payloadType")]
    pub payload_type: &'static str,
    /// Exactly one: the exporter's.
    pub signatures: Vec<DsseSignature>,
}

/// The Statement a verified receipt makes.
///
/// Every receipt kind has its own arm; a kind without one does not compile, so a
/// new kind cannot be exported as something it is not. An acceptance receipt
/// becomes a verification summary (SLSA VSA v1); a review receipt has no
/// Statement yet: `None`.
pub fn statement(receipt: &Receipt<Verified>) -> Option<Statement> {
    let inline = receipt
        .body()
        .result
        .tests
        .as_ref()
        .and_then(|t| t.list.clone());
    statement_with_tests(receipt, inline.as_deref())
}

/// [`statement`] with the receipt's per-test list (format v4, read and checked
/// by the caller when it is kept beside the log): a check with a list names its
/// tests in `passedTests` and `failedTests` (skipped tests are in neither: the
/// predicate's `warnedTests` are tests that passed with warnings); without one,
/// the check's name stands for its one test.
pub fn statement_with_tests(
    receipt: &Receipt<Verified>,
    tests: Option<&[crate::receipt::TestCase]>,
) -> Option<Statement> {
    let body = receipt.body();
    match body.kind {
        Kind::Check => Some(test_result(
            receipt.id(),
            &receipt.signature().key,
            body,
            tests,
        )),
        Kind::Acceptance => body
            .acceptance
            .as_ref()
            .map(|a| verification_summary(body, a)),
        Kind::Review => None,
    }
}

/// An acceptance receipt as a verification summary: the verifier is the writer
/// that signed the decision, the policy the `.gitreceipts` of the trusted
/// revision, the input attestations the evidence receipts (by id), the result
/// PASSED exactly when the decision was `accepted`. The subjects are the decided
/// commit and its tree (a decision is never about uncommitted changes).
fn verification_summary(body: &Body, a: &crate::receipt::Acceptance) -> Statement {
    let mut evidence: Vec<&String> = a.criteria.iter().flat_map(|c| &c.evidence).collect();
    evidence.sort();
    evidence.dedup();
    let inputs: Vec<Value> = evidence
        .into_iter()
        .map(|e| {
            json!({
                "uri": format!("git-receipt:receipt/{e}"),
                "digest": { "sha256": hex_of(e) },
            })
        })
        .collect();
    let accepted = a.status == crate::receipt::Status::Accepted;
    let mut statement = Statement {
        type_: STATEMENT_TYPE,
        subject: vec![
            ResourceDescriptor {
                name: "commit".into(),
                digest: BTreeMap::from([("gitCommit", body.subject.commit.clone())]),
                annotations: None,
            },
            ResourceDescriptor {
                name: "tree".into(),
                digest: BTreeMap::from([("gitTree", body.subject.tree.clone())]),
                annotations: None,
            },
        ],
        predicate_type: VERIFICATION_SUMMARY,
        predicate: json!({
            "verifier": { "id": format!("git-receipt:writer/{}", body.chain.writer) },
            "timeVerified": a.decided_at,
            "resourceUri": format!("git-receipt:commit/{}", body.subject.commit),
            "policy": {
                "uri": format!("git-receipt:contract/{}/.gitreceipts", a.trusted),
                "digest": { "gitCommit": a.trusted },
            },
            "inputAttestations": inputs,
            "verificationResult": if accepted { "PASSED" } else { "FAILED" },
            // No SLSA track is verified here: a failed policy says FAILED, as VSA
            // asks, and an accepted one names no level. A string, as
            // in-toto-attestation's vsa v1 protobuf has it (the SLSA spec's text
            // shows a list); see docs/interop.md.
            "verifiedLevels": "FAILED",
        }),
    };
    if accepted && let Some(p) = statement.predicate.as_object_mut() {
        p.remove("verifiedLevels");
    }
    statement
}

/// The subjects of a receipt: the commit (unless the checked tree was not the
/// commit's) and the inputs tree.
fn subjects(body: &Body) -> Vec<ResourceDescriptor> {
    let mut subject = Vec::new();
    if !body.subject.dirty {
        subject.push(ResourceDescriptor {
            name: "commit".into(),
            digest: BTreeMap::from([("gitCommit", body.subject.commit.clone())]),
            annotations: None,
        });
    }
    subject.push(ResourceDescriptor {
        name: "inputs".into(),
        digest: BTreeMap::from([("gitTree", body.subject.inputs.clone())]),
        annotations: None,
    });
    subject
}

/// `sha256:<hex>` without its prefix (every id and definition has it; checked when parsed).
fn hex_of(prefixed: &str) -> String {
    prefixed
        .strip_prefix("sha256:")
        .unwrap_or(prefixed)
        .to_owned()
}

/// A check receipt as a test-result Statement.
fn test_result(
    id: &str,
    signer: &str,
    body: &Body,
    tests: Option<&[crate::receipt::TestCase]>,
) -> Statement {
    let check = &body.check;
    let result = &body.result;
    let definition = ResourceDescriptor {
        name: format!("check:{}", check.name),
        digest: BTreeMap::from([("sha256", hex_of(&check.definition))]),
        annotations: Some(json!({
            "argv": check.argv,
            "paths": check.paths,
            "env": check.env,
        })),
    };
    let receipt = ResourceDescriptor {
        name: "receipt".into(),
        digest: BTreeMap::from([("sha256", hex_of(id))]),
        annotations: Some(json!({
            "id": id,
            "schema": body.schema,
            "signer": signer,
            "writer": body.chain.writer,
            "index": body.chain.index,
            "mode": match result.mode {
                Mode::Run => "run",
                Mode::Record => "record",
            },
            "exitCode": result.exit_code,
            "detail": result.detail,
            "startedAt": result.started_at,
            "durationMs": result.duration_ms,
            "commit": body.subject.commit,
            "tree": body.subject.tree,
            "dirty": body.subject.dirty,
            "log": result.log,
        })),
    };
    let name = vec![check.name.clone()];
    let none: Vec<String> = Vec::new();
    let verdict = if result.passed { "PASSED" } else { "FAILED" };
    let (passed, failed) = match tests {
        Some(list) if !list.is_empty() => {
            let named = |s: crate::receipt::TestStatus| -> Vec<String> {
                list.iter()
                    .filter(|t| t.status == s)
                    .map(|t| t.name.clone())
                    .collect()
            };
            (
                named(crate::receipt::TestStatus::Passed),
                named(crate::receipt::TestStatus::Failed),
            )
        }
        _ if result.passed => (name, none),
        _ => (none, name),
    };
    Statement {
        type_: STATEMENT_TYPE,
        subject: subjects(body),
        predicate_type: TEST_RESULT,
        predicate: json!({
            "result": verdict,
            "configuration": [definition, receipt],
            "passedTests": passed,
            "warnedTests": [],
            "failedTests": failed,
        }),
    }
}

/// Why a verified receipt has no SLSA provenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoProvenance {
    /// It is not a check receipt.
    NotACheck,
    /// Its check declares no artifacts, or none matched (format v5 `result.artifacts`).
    NoArtifacts,
    /// Its check failed: a failed run's outputs are not vouched for.
    Failed,
}

impl std::fmt::Display for NoProvenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoProvenance::NotACheck => "it is not a check receipt, so it produced nothing",
            NoProvenance::NoArtifacts => {
                "it records no artifacts (its check declares no artifact = GLOB, or none matched)"
            }
            NoProvenance::Failed => {
                "its check failed, and a failed run's outputs get no provenance"
            }
        })
    }
}

/// A passed check receipt that records artifacts as a SLSA Provenance v1
/// Statement: the artifacts are the subjects (by SHA-256); the build is the
/// check (its name, argv, paths and definition digest the external parameters),
/// run on the commit, the inputs tree and each declared dependency (the
/// resolved dependencies); the builder is the writer that signed the receipt;
/// the log is a byproduct. `signer` is the receipt's signing key's fingerprint.
pub fn provenance(receipt: &Receipt<Verified>) -> Result<Statement, NoProvenance> {
    let body = receipt.body();
    if body.kind != Kind::Check {
        return Err(NoProvenance::NotACheck);
    }
    let artifacts = match &body.result.artifacts {
        Some(list) if !list.is_empty() => list,
        _ => return Err(NoProvenance::NoArtifacts),
    };
    if !body.result.passed {
        return Err(NoProvenance::Failed);
    }
    let (check, result) = (&body.check, &body.result);
    let subject = artifacts
        .iter()
        .map(|a| ResourceDescriptor {
            name: a.path.clone(),
            digest: BTreeMap::from([("sha256", hex_of(&a.sha256))]),
            annotations: None,
        })
        .collect();
    let mut resolved = Vec::new();
    if !body.subject.dirty {
        resolved.push(ResourceDescriptor {
            name: "commit".into(),
            digest: BTreeMap::from([("gitCommit", body.subject.commit.clone())]),
            annotations: None,
        });
    }
    resolved.push(ResourceDescriptor {
        name: "inputs".into(),
        digest: BTreeMap::from([("gitTree", body.subject.inputs.clone())]),
        annotations: Some(json!({ "paths": check.paths, "dirty": body.subject.dirty })),
    });
    for d in &body.subject.dependencies {
        resolved.push(ResourceDescriptor {
            name: format!("dependency:{}", d.name),
            digest: BTreeMap::from([("gitCommit", d.commit.clone())]),
            annotations: Some(json!({ "tree": d.tree })),
        });
    }
    let mut byproducts = Vec::new();
    if let Some(Some(digest)) = &result.log_sha256 {
        byproducts.push(ResourceDescriptor {
            name: "log".into(),
            digest: BTreeMap::from([("sha256", hex_of(digest))]),
            annotations: Some(json!({
                "blob": result.log,
                "bytes": result.log_bytes,
                "truncated": result.log_truncated,
            })),
        });
    }
    let started = crate::clock::timestamp_ms(&result.started_at).unwrap_or(0);
    let finished = crate::receipt::format_timestamp(started.saturating_add(result.duration_ms));
    Ok(Statement {
        type_: STATEMENT_TYPE,
        subject,
        predicate_type: PROVENANCE,
        predicate: json!({
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "check": check.name,
                    "argv": check.argv,
                    "paths": check.paths,
                    "definition": check.definition,
                },
                "internalParameters": {
                    "env": check.env,
                    "mode": match result.mode {
                        Mode::Run => "run",
                        Mode::Record => "record",
                    },
                    "receipt": receipt.id(),
                    "schema": body.schema,
                    "signer": receipt.signature().key,
                    "runner": { "tool": body.runner.tool, "os": body.runner.os },
                },
                "resolvedDependencies": resolved,
            },
            "runDetails": {
                "builder": {
                    "id": format!("git-receipt:writer/{}", body.chain.writer),
                    "version": { "git-receipt": body.runner.tool },
                },
                "metadata": {
                    "invocationId": receipt.id(),
                    "startedOn": result.started_at,
                    "finishedOn": finished,
                },
                "byproducts": byproducts,
            },
        }),
    })
}

/// Why a Statement could not be put in a signed envelope.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The Statement holds a number outside ±(2^53-1) (a parsed receipt cannot).
    #[error("cannot encode the in-toto Statement: {0}")]
    Canon(#[from] CanonError),
    /// The key is held by ssh-agent, and the agent did not sign.
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// Sign `statement` with `key` into a DSSE envelope.
pub fn envelope(statement: &Statement, key: &SigningKey) -> Result<Envelope, ExportError> {
    let payload = canon::to_canonical(statement)?;
    let sig = key.sign_dsse(PAYLOAD_TYPE, &payload)?;
    Ok(Envelope {
        payload: STANDARD.encode(&payload),
        payload_type: PAYLOAD_TYPE,
        signatures: vec![DsseSignature {
            keyid: key.public().fingerprint(),
            sig: STANDARD.encode(sig),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::{Chain, Check, Outcome, Runner, SCHEMA_V2, Subject};
    use crate::sign::{dsse_pae, verify_dsse};

    fn key() -> SigningKey {
        SigningKey::from_seed(&[7; 32])
    }

    fn body(passed: bool, dirty: bool) -> Body {
        Body {
            schema: SCHEMA_V2.into(),
            kind: Kind::Check,
            chain: Chain {
                writer: crate::receipt::writer_id(key().public(), "default"),
                index: 0,
                prev: None,
            },
            subject: Subject {
                commit: "1".repeat(40),
                tree: "2".repeat(40),
                inputs: "3".repeat(40),
                dirty,
                dependencies: Vec::new(),
            },
            check: Check {
                name: "test".into(),
                argv: vec!["sh".into(), "-c".into(), "echo \"hi\"\n\u{202e}".into()],
                definition: format!("sha256:{}", "4".repeat(64)),
                paths: vec!["src".into()],
                env: BTreeMap::new(),
            },
            result: Outcome {
                mode: Mode::Run,
                exit_code: if passed { 0 } else { 3 },
                passed,
                started_at: "2026-02-01T00:00:00.000Z".into(),
                duration_ms: 12,
                stdout_tail: String::new(),
                stderr_tail: String::new(),
                log: None,
                output_bytes: 0,
                log_truncated: false,
                log_bytes: Some(0),
                log_sha256: Some(None),
                detail: String::new(),
                assertions: Vec::new(),
                tests: None,
                metrics: Vec::new(),
                artifacts: None,
                idempotency_key: None,
            },
            runner: Runner {
                tool: "git-receipt test".into(),
                host: "h".into(),
                os: "linux-x86_64".into(),
            },
            acceptance: None,
            review: None,
            supersedes: None,
        }
    }

    fn signed(passed: bool, dirty: bool) -> Receipt<Verified> {
        Receipt::sign(body(passed, dirty), &key()).expect("signs")
    }

    /// A v5 check receipt recording `artifacts` (paths), a log and a dependency.
    fn built(passed: bool, dirty: bool, artifacts: &[&str]) -> Receipt<Verified> {
        let mut b = body(passed, dirty);
        b.schema = crate::receipt::SCHEMA_V5.into();
        b.result.artifacts = Some(
            artifacts
                .iter()
                .map(|p| crate::receipt::Artifact {
                    path: (*p).into(),
                    size: 9,
                    sha256: format!("sha256:{}", "a".repeat(64)),
                })
                .collect(),
        );
        b.result.log = Some("5".repeat(40));
        b.result.log_bytes = Some(3);
        b.result.log_sha256 = Some(Some(format!("sha256:{}", "6".repeat(64))));
        b.subject.dependencies = vec![crate::receipt::DependencyState {
            name: "lib".into(),
            commit: "7".repeat(40),
            tree: "8".repeat(40),
        }];
        b.schema = crate::receipt::SCHEMA_V5.into();
        Receipt::sign(b, &key()).expect("signs")
    }

    #[test]
    fn a_passed_build_is_provenance_of_its_artifacts_on_its_commit_inputs_and_dependencies() {
        let r = built(true, false, &["dist/a", "dist/b"]);
        let s = provenance(&r).expect("provenance");
        assert_eq!(s.predicate_type, PROVENANCE);
        let names: Vec<&str> = s.subject.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["dist/a", "dist/b"]);
        assert_eq!(s.subject[0].digest["sha256"], "a".repeat(64));
        let p = &s.predicate;
        assert_eq!(p["buildDefinition"]["buildType"], BUILD_TYPE);
        assert_eq!(p["buildDefinition"]["externalParameters"]["check"], "test");
        assert_eq!(
            p["buildDefinition"]["externalParameters"]["definition"],
            format!("sha256:{}", "4".repeat(64))
        );
        let deps = &p["buildDefinition"]["resolvedDependencies"];
        assert_eq!(deps[0]["name"], "commit");
        assert_eq!(deps[0]["digest"]["gitCommit"], "1".repeat(40));
        assert_eq!(deps[1]["name"], "inputs");
        assert_eq!(deps[1]["digest"]["gitTree"], "3".repeat(40));
        assert_eq!(deps[2]["name"], "dependency:lib");
        assert_eq!(deps[2]["digest"]["gitCommit"], "7".repeat(40));
        assert_eq!(deps[2]["annotations"]["tree"], "8".repeat(40));
        let run = &p["runDetails"];
        assert_eq!(
            run["builder"]["id"],
            format!("git-receipt:writer/{}", r.body().chain.writer)
        );
        assert_eq!(run["metadata"]["invocationId"], r.id());
        assert_eq!(run["metadata"]["startedOn"], "2026-02-01T00:00:00.000Z");
        assert_eq!(run["metadata"]["finishedOn"], "2026-02-01T00:00:00.012Z");
        assert_eq!(run["byproducts"][0]["name"], "log");
        assert_eq!(run["byproducts"][0]["digest"]["sha256"], "6".repeat(64));
        assert_eq!(
            p["buildDefinition"]["internalParameters"]["signer"],
            r.signature().key
        );
        // uncommitted changes: the commit is not what was built from
        let dirty = provenance(&built(true, true, &["dist/a"])).unwrap();
        let deps = &dirty.predicate["buildDefinition"]["resolvedDependencies"];
        assert_eq!(deps[0]["name"], "inputs");
        assert_eq!(deps[0]["annotations"]["dirty"], true);
    }

    #[test]
    fn no_provenance_without_artifacts_for_a_failed_run_or_for_a_decision() {
        assert_eq!(
            provenance(&built(true, false, &[])).unwrap_err(),
            NoProvenance::NoArtifacts
        );
        assert_eq!(
            provenance(&signed(true, false)).unwrap_err(),
            NoProvenance::NoArtifacts
        );
        assert_eq!(
            provenance(&built(false, false, &["dist/a"])).unwrap_err(),
            NoProvenance::Failed
        );
        let mut decision = body(true, false);
        decision.schema = crate::receipt::SCHEMA_V3.into();
        decision.kind = Kind::Acceptance;
        decision.check = Default::default();
        decision.result = Default::default();
        decision.acceptance = Some(crate::receipt::Acceptance {
            status: crate::receipt::Status::Accepted,
            trusted: "1".repeat(40),
            decided_at: "2026-02-01T00:00:00.000Z".into(),
            criteria: Vec::new(),
            unresolved: Vec::new(),
        });
        let decision = Receipt::sign(decision, &key()).expect("an acceptance signs");
        assert_eq!(provenance(&decision).unwrap_err(), NoProvenance::NotACheck);
    }

    #[test]
    fn pae_matches_the_dsse_specification_example() {
        // protocol.md of DSSE: PAE("http://example.com/HelloWorld", "hello world")
        assert_eq!(
            dsse_pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
        // lengths count bytes, not characters
        assert_eq!(
            dsse_pae("t", "é".as_bytes()),
            b"DSSEv1 1 t 2 \xc3\xa9".to_vec()
        );
    }

    #[test]
    fn a_passing_check_is_a_passed_test_result_about_commit_and_inputs() {
        let r = signed(true, false);
        let s = serde_json::to_value(statement(&r).unwrap()).unwrap();
        assert_eq!(s["_type"], STATEMENT_TYPE);
        assert_eq!(s["predicateType"], TEST_RESULT);
        assert_eq!(
            s["subject"],
            json!([
                {"name": "commit", "digest": {"gitCommit": "1".repeat(40)}},
                {"name": "inputs", "digest": {"gitTree": "3".repeat(40)}},
            ])
        );
        let p = &s["predicate"];
        assert_eq!(p["result"], "PASSED");
        assert_eq!(p["passedTests"], json!(["test"]));
        assert_eq!(p["failedTests"], json!([]));
        assert_eq!(p["configuration"][0]["name"], "check:test");
        assert_eq!(p["configuration"][0]["digest"]["sha256"], "4".repeat(64));
        assert_eq!(p["configuration"][1]["name"], "receipt");
        assert_eq!(
            p["configuration"][1]["digest"]["sha256"],
            r.id().strip_prefix("sha256:").unwrap()
        );
        assert_eq!(p["configuration"][1]["annotations"]["id"], r.id());
        assert_eq!(
            p["configuration"][1]["annotations"]["signer"],
            key().public().fingerprint()
        );
    }

    #[test]
    fn a_failing_check_is_a_failed_test_result() {
        let s = serde_json::to_value(statement(&signed(false, false)).unwrap()).unwrap();
        assert_eq!(s["predicate"]["result"], "FAILED");
        assert_eq!(s["predicate"]["failedTests"], json!(["test"]));
        assert_eq!(s["predicate"]["passedTests"], json!([]));
        assert_eq!(
            s["predicate"]["configuration"][1]["annotations"]["exitCode"],
            3
        );
    }

    #[test]
    fn uncommitted_changes_leave_the_commit_out_of_the_subjects() {
        let s = serde_json::to_value(statement(&signed(true, true)).unwrap()).unwrap();
        assert_eq!(
            s["subject"],
            json!([{"name": "inputs", "digest": {"gitTree": "3".repeat(40)}}])
        );
        assert_eq!(
            s["predicate"]["configuration"][1]["annotations"]["dirty"],
            true
        );
    }

    #[test]
    fn the_envelope_verifies_over_the_canonical_statement_and_a_flipped_byte_does_not() {
        let st = statement(&signed(true, false)).unwrap();
        let env = envelope(&st, &key()).unwrap();
        assert_eq!(env.payload_type, PAYLOAD_TYPE);
        assert_eq!(env.signatures.len(), 1);
        assert_eq!(env.signatures[0].keyid, key().public().fingerprint());
        let mut payload = STANDARD.decode(&env.payload).unwrap();
        assert_eq!(payload, canon::to_canonical(&st).unwrap());
        // hostile argv bytes travel as JSON escapes, and come back as they were
        let back: Value = serde_json::from_slice(&payload).unwrap();
        assert_eq!(
            back["predicate"]["configuration"][0]["annotations"]["argv"][2],
            "echo \"hi\"\n\u{202e}"
        );
        let sig = STANDARD.decode(&env.signatures[0].sig).unwrap();
        verify_dsse(key().public(), PAYLOAD_TYPE, &payload, &sig).expect("verifies");
        payload[10] ^= 1;
        assert!(verify_dsse(key().public(), PAYLOAD_TYPE, &payload, &sig).is_err());
        // the same receipt exported by the same key gives the same line
        assert_eq!(env, envelope(&st, &key()).unwrap());
    }
}
