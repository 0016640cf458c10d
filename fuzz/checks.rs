//! What each fuzz target asserts about one input, shared by the targets
//! (`fuzz/fuzz_targets/*.rs`, nightly) and by `tests/it/fuzz_regressions.rs`, which
//! replays every crash input found so far on stable.
//!
//! Beyond "no panic", each check asserts what the parser promises: a receipt that
//! parses is exactly its canonical bytes, a canonicalization is idempotent, what a
//! parser accepts it reads back the same after re-serializing, and a contract that
//! parses holds only valid names and normalized paths.
#![allow(dead_code)]

use git_receipt::canon::{canonicalize_json, from_canonical, to_canonical, to_canonical_fast};
use git_receipt::contract::{Contract, MAX_TIMEOUT, minimal_paths, normalize_path};
use git_receipt::receipt::{Receipt, id_of, is_valid_check_name};
use git_receipt::sign::PublicKey;

/// The stored bytes of a receipt (the envelope, the body, the canonical check).
pub fn receipt(data: &[u8]) {
    if let Ok(r) = Receipt::parse(data) {
        assert_eq!(r.bytes(), data, "a parsed receipt is exactly its bytes");
        let body = to_canonical(r.body()).expect("a parsed body re-encodes");
        assert_eq!(
            body,
            r.body_bytes(),
            "the body re-encodes to the signed bytes"
        );
        assert_eq!(r.id(), id_of(&body), "the id is the hash of the body");
        let again = Receipt::parse(r.bytes()).expect("parses again");
        assert_eq!(again.id(), r.id());
    }
    if let Ok(v) = from_canonical::<serde_json::Value>(data) {
        assert_eq!(
            to_canonical(&v).expect("a canonical value re-encodes"),
            data,
            "canonical bytes re-encode to themselves"
        );
    }
    // The read path's direct writer answers what the full path answers, or nothing.
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data)
        && let Some(fast) = to_canonical_fast(&v)
    {
        assert_eq!(
            Some(fast),
            to_canonical(&v).ok(),
            "the fast canonical writer agrees with the full one"
        );
    }
    if let Ok(c) = canonicalize_json(data) {
        match canonicalize_json(&c) {
            Ok(again) => {
                assert_eq!(again, c, "idempotent");
                assert!(
                    from_canonical::<serde_json::Value>(&c).is_ok(),
                    "accepted as canonical"
                );
            }
            // The documented asymmetry (canon.rs,
            // `integral_floats_from_2_pow_53_to_1e21_do_not_round_trip`): an integral
            // float from 2^53 to 1e21 is written in ES6 form as digits only, which a
            // reader takes for an unsafe integer. No receipt member is a float.
            Err(git_receipt::canon::CanonError::IntegerOutOfRange { .. }) => {}
            Err(e) => panic!("canonical output does not read back: {e}"),
        }
    }
}

/// The text of a note (one line per receipt).
pub fn note(data: &[u8]) {
    let object = gix::ObjectId::null(gix::hash::Kind::Sha1);
    if let Ok(lines) = git_receipt::store::notes::parse_note("refs/notes/receipts/x", object, data)
    {
        let text: String = lines
            .iter()
            .map(|l| {
                format!(
                    "{} {} {} {}\n",
                    l.id,
                    l.commit,
                    l.check,
                    if l.passed { "passed" } else { "failed" }
                )
            })
            .collect();
        let again =
            git_receipt::store::notes::parse_note("refs/notes/receipts/x", object, text.as_bytes())
                .expect("a written note parses");
        assert_eq!(again, lines, "a note reads back as written");
    }
}

/// A `.gitreceipts` file.
pub fn contract(data: &[u8]) {
    // the plain reader, where it answers, reads what gix-config reads
    if let Some(differ) = std::str::from_utf8(data)
        .ok()
        .and_then(git_receipt::contract::syntax_disagreement)
    {
        panic!("{differ}");
    }
    let Ok(c) = Contract::parse(data, std::path::Path::new(".gitreceipts")) else {
        return;
    };
    assert!(std::str::from_utf8(data).is_ok(), "only UTF-8 is accepted");
    for check in &c.checks {
        assert!(is_valid_check_name(&check.name), "{:?}", check.name);
        assert!(!check.run.trim().is_empty(), "a check has a command");
        for p in &check.paths {
            assert_eq!(normalize_path(p).as_deref(), Some(p.as_str()), "normalized");
        }
        assert_eq!(
            minimal_paths(check.paths.clone()),
            check.paths,
            "minimal, sorted"
        );
        if let Some(t) = check.timeout {
            assert!(!t.is_zero() && t <= MAX_TIMEOUT, "{t:?}");
        }
    }
    let again = Contract::parse(data, std::path::Path::new(".gitreceipts")).unwrap();
    assert_eq!(again, c, "parsing is deterministic");
}

/// An OpenSSH allowed_signers file.
pub fn allowed_signers(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut trust = git_receipt::trust::TrustSet::default();
    if trust.add_allowed_signers(text, "allowed_signers").is_ok() {
        for t in trust.keys() {
            let line = t.key.to_openssh();
            assert_eq!(PublicKey::from_openssh(&line).expect("re-reads"), t.key);
        }
    }
}

/// The input git gives the pre-push and pre-receive hooks.
pub fn hook_input(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(refs) = git_receipt::hooks::parse_pre_push(text) {
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(refs.len(), lines, "one update per non-blank line");
    }
    if let Ok(refs) = git_receipt::hooks::parse_pre_receive(text) {
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(refs.len(), lines, "one update per non-blank line");
    }
}

/// An OpenSSH public key line.
pub fn public_key(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(key) = PublicKey::from_openssh(text) {
        let line = key.to_openssh();
        let again = PublicKey::from_openssh(&line).expect("our own line re-reads");
        assert_eq!(again, key);
        assert_eq!(again.fingerprint(), key.fingerprint());
    }
}

/// `signatures`: a batch gives every signature the answer strict verification
/// gives it alone. The input is cut into up to 8 checks (a 32-byte key, a
/// 64-byte signature, a length byte and that many message bytes; a key that is
/// no acceptable public key makes its check the next honest one with the 64
/// bytes XORed into its signature), set among 256 honest signatures so that
/// the batch path runs.
pub fn signatures(data: &[u8]) {
    use git_receipt::sign::{SigningKey, ToVerify, verify, verify_many};
    use std::sync::OnceLock;
    type Signed = (SigningKey, Vec<u8>, [u8; 64]);
    static HONEST: OnceLock<Vec<Signed>> = OnceLock::new();
    let honest = HONEST.get_or_init(|| {
        (0..256u32)
            .map(|i| {
                let key = SigningKey::from_seed(&[(i % 5) as u8 + 1; 32]);
                let message = format!("honest {i}").into_bytes();
                let signature = key.sign(&message).expect("an in-process key signs");
                (key, message, signature)
            })
            .collect()
    });
    let mut odd: Vec<(PublicKey, Vec<u8>, [u8; 64])> = Vec::new();
    let mut rest = data;
    while odd.len() < 8 && rest.len() >= 97 {
        let (key, tail) = rest.split_at(32);
        let (sig, tail) = tail.split_at(64);
        let len = (tail[0] as usize).min(tail.len() - 1);
        let message = tail[1..1 + len].to_vec();
        rest = &tail[1 + len..];
        let mut signature = [0u8; 64];
        signature.copy_from_slice(sig);
        match PublicKey::from_bytes(key.try_into().expect("32 bytes")) {
            Ok(key) => odd.push((key, message, signature)),
            Err(_) => {
                let (k, m, s) = &honest[odd.len() * 31 % honest.len()];
                for (b, x) in signature.iter_mut().zip(s) {
                    *b ^= x;
                }
                odd.push((k.public().clone(), m.clone(), signature));
            }
        }
    }
    let mut items: Vec<ToVerify<'_>> = honest
        .iter()
        .map(|(k, m, s)| ToVerify {
            key: k.public(),
            message: m,
            signature: s,
        })
        .collect();
    for (i, (k, m, s)) in odd.iter().enumerate() {
        let at = (i * 37 + data.len()) % (items.len() + 1);
        items.insert(
            at,
            ToVerify {
                key: k,
                message: m,
                signature: s,
            },
        );
    }
    let together = verify_many(&items);
    assert_eq!(together.len(), items.len());
    for (item, got) in items.iter().zip(together) {
        let alone = verify(item.key, item.message, item.signature);
        assert_eq!(
            got.is_ok(),
            alone.is_ok(),
            "batched {got:?}, alone {alone:?}"
        );
    }
}

/// `checkpoint`: what a server's checkpoint chain and retained chains hand a
/// reader (issue 30). The input is read as each of: a `checkpoint.json` (a DSSE
/// envelope) checked as the first entry of its signer's chain, in a SHA-1 and a
/// SHA-256 repository; a checkpoint payload and a retention stub, each through
/// the typed fast path and the strict canonical parser, which must answer alike
/// (the fast path may only take what the strict one takes, as the same value);
/// and a stub that parses must be exactly the bytes it writes back.
pub fn checkpoint(data: &[u8]) {
    use git_receipt::checkpoint::{Below, Payload, check_entry};
    use git_receipt::store::checkpoints::RawCheckpoint;
    use git_receipt::store::stub::Stub;

    // the signer the envelope's payload names, if it names one, so that the
    // check gets past "signed as another" to the key and the signature
    let signer = serde_json::from_slice::<serde_json::Value>(data)
        .ok()
        .and_then(|v| {
            let b64 = v.get("payload")?.as_str()?.to_owned();
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
            let p = serde_json::from_slice::<serde_json::Value>(&bytes).ok()?;
            Some(p.get("signer")?.as_str()?.to_owned())
        })
        .unwrap_or_else(|| "default-00000000000000000000000000000000".to_owned());
    for (kind, width) in [(gix::hash::Kind::Sha1, 40), (gix::hash::Kind::Sha256, 64)] {
        let raw = RawCheckpoint {
            commit: gix::ObjectId::null(kind),
            parents: Vec::new(),
            file: Ok(data.to_vec()),
        };
        if let Ok(c) = check_entry(&raw, &signer, Below::Root, width) {
            assert_eq!(c.payload.signer, signer, "signed as its chain's signer");
            assert_eq!(c.payload.sequence, 0, "a first entry is number 0");
            assert!(c.payload.prev.is_none(), "a first entry has no prev");
            for m in c.payload.chains.values() {
                assert_eq!(m.tip.len(), width, "tips are this hash's ids");
            }
        }
    }
    readers_agree::<Payload>(data);
    readers_agree::<Stub>(data);
    if let Ok(stub) = Stub::parse(data) {
        assert_eq!(stub.to_bytes(), data, "a stub is exactly its bytes");
        assert_eq!(Stub::parse(&stub.to_bytes()).ok(), Some(stub));
    }
}

/// The typed fast path and the strict canonical parser read `data` as the same
/// `T`, or both refuse it.
fn readers_agree<T>(data: &[u8])
where
    T: serde::de::DeserializeOwned + serde::Serialize + PartialEq + std::fmt::Debug,
{
    let fast = git_receipt::canon::from_canonical_typed::<T>(data);
    let strict = git_receipt::canon::from_canonical::<T>(data);
    match (&fast, &strict) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "both readers read one value"),
        (Err(_), Err(_)) => {}
        _ => panic!("the fast path says {fast:?}, the strict parser {strict:?}"),
    }
}
