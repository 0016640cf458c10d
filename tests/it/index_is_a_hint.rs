//! Issue 22, item 6 ("the index decides"): a `.git/receipt-index` that
//! relabelled the newest failed receipt's check, with every checksum recomputed,
//! turned `gate --verify --trust main` from failed to passed. An index file is now
//! read only when this user's own key (outside the repository) sealed it, and
//! `gate --verify` reads none at all.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::common::Env;
use sha2::{Digest as _, Sha256};

const NO_FILE: (&str, &str) = ("GIT_RECEIPT_INDEX", "0");

fn index_file(repo: &Path) -> PathBuf {
    repo.join(".git/receipt-index")
}

/// A repository whose required check `test` passed at HEAD and then, for the
/// same inputs and by the same trusted signer (a [signer] on main), failed.
fn failed_over_passed(env: &Env) -> PathBuf {
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["key", "generate"]);
    let key = env.receipt_ok(&repo, &["key", "show"]).stdout;
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str(&format!("[signer \"ada\"]\n\tkey = {}\n", key.trim()));
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "trust ada"]);
    env.receipt_ok(&repo, &["run", "test"]);
    let r = env.receipt(&repo, &["record", "test", "--exit-code", "1"]);
    assert_eq!(r.code, 0, "{r}");
    for args in [
        &["gate", "HEAD"][..],
        &["gate", "HEAD", "--verify", "--trust", "main"],
    ] {
        let r = env.receipt_with(&repo, args, &[NO_FILE]);
        assert_eq!(r.code, 1, "{args:?}: the newest receipt failed: {r}");
        assert!(r.stdout.contains("failed"), "{args:?}: {r}");
    }
    repo
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// FNV-1a, the index's check name hash (format.md).
fn check_hash(name: &str) -> u32 {
    name.bytes().fold(0x811c_9dc5, |h: u32, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for b in bytes {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xedb8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

fn hmac_sha256(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let pad = |x: u8| {
        let mut p = [x; 64];
        p.iter_mut().zip(key).for_each(|(p, k)| *p ^= k);
        p
    };
    let mut inner = Sha256::new();
    inner.update(pad(0x36));
    parts.iter().for_each(|p| inner.update(p));
    let mut outer = Sha256::new();
    outer.update(pad(0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// The index file with the failed `test` receipt's record relabelled as another
/// check's, then sealed again the way its format's integrity requires, with all a
/// forger has: CRC-32s (version 2), or keyed tags and MAC under a key that is not
/// this user's (versions 3 and 4).
fn forged(whole: &[u8]) -> Vec<u8> {
    let version = u32_at(whole, 4);
    let (records, chains_len) = (u32_at(whole, 12) as usize, u32_at(whole, 20) as usize);
    let records_at = 32 + chains_len + 1024 + 2 * records * 24;
    let body_len = records_at + records * 64;
    let mut body = whole[..body_len].to_vec();
    let failed: Vec<usize> = (0..records)
        .map(|n| records_at + n * 64)
        .filter(|at| u32_at(&body, at + 48) == check_hash("test") && body[at + 60] & 5 == 0)
        .collect();
    assert_eq!(failed.len(), 1, "one failed test receipt");
    body[failed[0] + 48..failed[0] + 52].copy_from_slice(&check_hash("forged").to_le_bytes());
    let blocks = body.len().div_ceil(4096);
    let mut out = body.clone();
    let mut trailer = (body_len as u64).to_le_bytes().to_vec();
    trailer.extend_from_slice(&(blocks as u32).to_le_bytes());
    match version {
        2 => {
            let crcs: Vec<u8> = body
                .chunks(4096)
                .flat_map(|b| crc32(b).to_le_bytes())
                .collect();
            trailer.extend_from_slice(&crc32(&crcs).to_le_bytes());
            let own = crc32(&trailer);
            trailer.extend_from_slice(&own.to_le_bytes());
            out.extend_from_slice(&crcs);
        }
        3 | 4 => {
            let key = [0x66; 32]; // not this user's
            let (block, table) = if version == 3 {
                (&b"GRIX v3 block"[..], &b"GRIX v3 table"[..])
            } else {
                (&b"GRIX v4 block"[..], &b"GRIX v4 table"[..])
            };
            let tags: Vec<u8> = body
                .chunks(4096)
                .enumerate()
                .flat_map(|(n, b)| {
                    hmac_sha256(&key, &[block, &(n as u32).to_le_bytes(), b])[..16].to_vec()
                })
                .collect();
            let seal = hmac_sha256(&key, &[table, &trailer, &tags]);
            trailer.extend_from_slice(&seal);
            out.extend_from_slice(&tags);
        }
        v => panic!("an index of version {v}: teach this forger its format"),
    }
    trailer.extend_from_slice(b"GRIX");
    out.extend_from_slice(&trailer);
    assert_eq!(
        out.len(),
        whole.len(),
        "the forgery keeps the file's layout"
    );
    out
}

#[test]
fn a_forged_index_that_relabels_the_newest_failed_receipt_does_not_pass_the_gate() {
    let env = Env::new();
    let repo = failed_over_passed(&env);
    let r = env.receipt(&repo, &["gate", "HEAD"]);
    assert_eq!(r.code, 1, "{r}");
    let honest = std::fs::read(index_file(&repo)).unwrap();

    // plain gate: the forged file is refused, rebuilt, and the gate still fails
    std::fs::write(index_file(&repo), forged(&honest)).unwrap();
    let r = env.receipt(&repo, &["gate", "HEAD"]);
    assert_eq!(r.code, 1, "the failed receipt still counts: {r}");
    assert!(r.stdout.contains("failed"), "{r}");
    assert!(
        r.stderr.contains("MAC mismatch") && r.stderr.contains("rebuilding it from the chains"),
        "says the index was rebuilt: {r}"
    );
    assert_eq!(
        std::fs::read(index_file(&repo)).unwrap(),
        honest,
        "rewritten from the chains"
    );

    // gate --verify: decides from the chains it verified, whatever the file says
    std::fs::write(index_file(&repo), forged(&honest)).unwrap();
    let r = env.receipt(&repo, &["gate", "HEAD", "--verify", "--trust", "main"]);
    assert_eq!(r.code, 1, "the failed receipt still counts: {r}");
    assert!(r.stdout.contains("failed"), "{r}");
    assert!(r.stderr.contains("verified 2 receipts"), "{r}");
}

#[test]
fn an_index_sealed_by_another_user_is_rebuilt_and_ones_own_is_reused() {
    let ada = Env::new();
    let repo = failed_over_passed(&ada);
    let expected = ada.receipt_with(&repo, &["status", "--json", "HEAD"], &[NO_FILE]);
    let status = |env: &Env| env.receipt(&repo, &["status", "--json", "HEAD"]);
    let first = status(&ada);
    assert_eq!(first.stdout, expected.stdout);
    let written = std::fs::metadata(index_file(&repo)).unwrap().ino();

    // the same user: the file is read back as it is (not rebuilt, not rewritten)
    let again = status(&ada);
    assert_eq!(again.stdout, expected.stdout);
    assert_eq!(again.stderr, "", "{again}");
    assert_eq!(
        std::fs::metadata(index_file(&repo)).unwrap().ino(),
        written,
        "reused, not written again"
    );

    // another user (another HOME, so another index key), as with a copied
    // repository or a restored cache: refused, rebuilt, sealed with their key
    let bob = Env::new();
    let theirs = status(&bob);
    assert_eq!(theirs.code, expected.code, "{theirs}");
    assert!(
        theirs
            .stderr
            .contains("not written by this user's git-receipt (MAC mismatch"),
        "{theirs}"
    );
    assert!(bob.home.join(".config/git-receipt/index-key").exists());
    let copied_back = status(&ada);
    assert_eq!(copied_back.stdout, expected.stdout);
    assert!(copied_back.stderr.contains("MAC mismatch"), "{copied_back}");
    assert_eq!(status(&ada).stderr, "", "sealed by ada again");
}

#[test]
fn without_a_usable_index_key_no_index_file_is_read_or_written() {
    let env = Env::new();
    let repo = failed_over_passed(&env);
    let expected = env.receipt_with(&repo, &["status", "--json", "HEAD"], &[NO_FILE]);
    std::fs::remove_file(index_file(&repo)).ok();
    // XDG_CONFIG_HOME names a file: nowhere to keep a key
    let blocked = env.path("not-a-directory");
    std::fs::write(&blocked, "").unwrap();
    let signing_key = env.home.join(".config/git-receipt/signing_key");
    let envs = [
        ("XDG_CONFIG_HOME", blocked.to_str().unwrap()),
        ("GIT_RECEIPT_SIGNING_KEY", signing_key.to_str().unwrap()),
    ];
    let r = env.receipt_with(&repo, &["status", "--json", "HEAD"], &envs);
    assert_eq!(
        (r.code, &r.stdout),
        (expected.code, &expected.stdout),
        "{r}"
    );
    assert_eq!(
        r.stderr.matches("receipt index key").count(),
        1,
        "one notice: {r}"
    );
    assert!(!index_file(&repo).exists(), "no key, no file");
    // a file there already is not read either: its forgery would go unnoticed
    env.receipt_ok(&repo, &["status", "HEAD"]);
    let honest = std::fs::read(index_file(&repo)).unwrap();
    std::fs::write(index_file(&repo), forged(&honest)).unwrap();
    let r = env.receipt_with(&repo, &["gate", "HEAD"], &envs);
    assert_eq!(r.code, 1, "{r}");
}
