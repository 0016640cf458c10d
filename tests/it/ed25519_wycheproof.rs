//! Wycheproof Ed25519 verification vectors against `sign::verify_raw_strict`.
//!
//! Every `valid` case must verify and every `invalid` case must be rejected. The
//! vectors (C2SP/wycheproof, Apache-2.0; see `fixtures/ed25519/README.md`) cover
//! malleable S, non-canonical R, truncated and padded signatures and edge-case values.

use std::path::PathBuf;

use ed25519_dalek::Signer as _;
use git_receipt::sign::{verify_raw_strict, verify_raw_strict_many};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// SHA-256 of the unedited fixture, as recorded in `fixtures/ed25519/README.md`.
const FIXTURE_SHA256: &str = "752d2ea7d7c6cf4736381b6cbacb61f8182b126ab7cd9b058f00c50084975536";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TestFile {
    algorithm: String,
    number_of_tests: usize,
    test_groups: Vec<TestGroup>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TestGroup {
    #[serde(rename = "type")]
    kind: String,
    public_key: GroupKey,
    tests: Vec<TestCase>,
}

#[derive(Deserialize)]
struct GroupKey {
    pk: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TestCase {
    tc_id: u64,
    comment: String,
    flags: Vec<String>,
    msg: String,
    sig: String,
    result: Expected,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum Expected {
    Valid,
    Invalid,
}

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/ed25519/wycheproof_ed25519_test.json")
}

fn unhex(field: &str, tc_id: u64, value: &str) -> Vec<u8> {
    hex::decode(value).unwrap_or_else(|err| panic!("tcId {tc_id}: {field} is not hex: {err}"))
}

/// The pinned fixture, its digest checked.
fn load() -> TestFile {
    let path = fixture_path();
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|err| panic!("cannot read fixture {}: {err}", path.display()));
    assert_eq!(
        hex::encode(Sha256::digest(&bytes)),
        FIXTURE_SHA256,
        "{} differs from the unedited Wycheproof file recorded in fixtures/ed25519/README.md",
        path.display()
    );
    let file: TestFile = serde_json::from_slice(&bytes).expect("fixture is Wycheproof JSON");
    assert_eq!(file.algorithm, "EDDSA");
    file
}

#[test]
fn wycheproof_ed25519_vectors() {
    let file = load();

    let mut checked = 0usize;
    let mut valid = 0usize;
    let mut invalid = 0usize;
    let mut mismatches = Vec::new();
    for group in &file.test_groups {
        assert_eq!(group.kind, "EddsaVerify");
        let public_key = unhex("publicKey.pk", 0, &group.public_key.pk);
        for case in &group.tests {
            let message = unhex("msg", case.tc_id, &case.msg);
            let signature = unhex("sig", case.tc_id, &case.sig);
            let outcome = verify_raw_strict(&public_key, &message, &signature);
            checked += 1;
            match case.result {
                Expected::Valid => valid += 1,
                Expected::Invalid => invalid += 1,
            }
            let accepted = outcome.is_ok();
            if accepted != (case.result == Expected::Valid) {
                mismatches.push(format!(
                    "tcId {} ({:?}, comment {:?}, flags {:?}): expected {:?}, got {:?}",
                    case.tc_id, case.result, case.comment, case.flags, case.result, outcome
                ));
            }
        }
    }

    assert!(
        mismatches.is_empty(),
        "{} of {checked} Wycheproof cases disagree with verify_raw_strict:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert_eq!(
        checked, file.number_of_tests,
        "checked {checked} cases but the file declares numberOfTests = {}",
        file.number_of_tests
    );
    assert_eq!(checked, 151, "the pinned fixture has 151 cases");
    assert!(valid > 0 && invalid > 0, "{valid} valid, {invalid} invalid");
}

/// The batch (`verify_raw_strict_many`, what `verify` uses from 256 signatures on)
/// gives every Wycheproof case the answer strict verification gives it alone: the
/// valid cases all together among 300 honest signatures (a batch that holds), then
/// each case alone among them, at a position that moves with its id.
#[test]
fn batched_wycheproof_cases_get_the_answers_of_one_at_a_time() {
    let file = load();
    let signers: Vec<ed25519_dalek::SigningKey> = (1..=5u8)
        .map(|i| ed25519_dalek::SigningKey::from_bytes(&[i; 32]))
        .collect();
    let fillers: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = (0..300usize)
        .map(|i| {
            let key = &signers[i % signers.len()];
            let msg = format!("honest filler {i}").into_bytes();
            let sig = key.sign(&msg).to_bytes().to_vec();
            (key.verifying_key().to_bytes().to_vec(), msg, sig)
        })
        .collect();
    let mut cases = Vec::new();
    for group in &file.test_groups {
        let public_key = unhex("publicKey.pk", 0, &group.public_key.pk);
        for case in &group.tests {
            cases.push((
                case.tc_id,
                case.result,
                (
                    public_key.clone(),
                    unhex("msg", case.tc_id, &case.msg),
                    unhex("sig", case.tc_id, &case.sig),
                ),
            ));
        }
    }
    let check = |batch: &[(Vec<u8>, Vec<u8>, Vec<u8>)], what: &str| {
        let items: Vec<(&[u8], &[u8], &[u8])> = batch
            .iter()
            .map(|(k, m, s)| (k.as_slice(), m.as_slice(), s.as_slice()))
            .collect();
        let together = verify_raw_strict_many(&items);
        assert_eq!(together.len(), items.len());
        for (i, ((k, m, s), got)) in items.iter().zip(together).enumerate() {
            let alone = verify_raw_strict(k, m, s);
            assert_eq!(
                got.is_ok(),
                alone.is_ok(),
                "{what}, item {i}: batched {got:?}, alone {alone:?}"
            );
        }
    };
    let mut all_valid = fillers.clone();
    all_valid.extend(
        cases
            .iter()
            .filter(|(_, result, _)| *result == Expected::Valid)
            .map(|(_, _, item)| item.clone()),
    );
    check(&all_valid, "every valid case in one batch");
    for (tc_id, result, item) in &cases {
        let mut batch = fillers.clone();
        batch.insert((*tc_id as usize * 7) % batch.len(), item.clone());
        check(
            &batch,
            &format!("tcId {tc_id} ({result:?}) among 300 honest signatures"),
        );
        let alone = verify_raw_strict(&item.0, &item.1, &item.2);
        assert_eq!(alone.is_ok(), *result == Expected::Valid, "tcId {tc_id}");
    }
}
