//! Many strict Ed25519 checks at once, with exactly the answers of one at a time.
//!
//! `verify` reads a hundred thousand receipts, and one strict check each
//! (`verify_strict`: a double scalar multiplication per signature) was most of its
//! time. Ed25519 batch verification checks one random linear combination of all the
//! equations instead, but a plain batch does not agree with `verify_strict`: its
//! equation is blind to small torsion components, so it accepts signatures whose R
//! (or whose key) has one, which `verify_strict` rejects, and it can reject some a
//! mixed-order key makes that `verify_strict` accepts. The rule here is that a batch
//! may only ever say yes where every signature in it would get yes alone, and it
//! never says no: anything unusual, and every signature of a batch that does not
//! hold, is checked alone by `verify_strict`, which stays the authority.
//!
//! A signature (R, s) on message M under key A enters a batch only when:
//!
//! - A is not of small order and is torsion-free (once per key: a key first met
//!   in a batch is one more point of that batch's torsion test, below, and is
//!   tested alone, a scalar multiplication, only if that batch does not hold);
//! - s is canonical (s < L);
//! - R decompresses, its bytes are the point's canonical encoding, and R is not of
//!   small order.
//!
//! `verify_strict` asks exactly the first three of these and then whether
//! `[s]B - [k]A` (k = SHA-512(R || A || M) mod L) encodes to R's bytes; with R
//! canonical that is `[s]B - [k]A = R` as points. Two random tests decide the rest:
//!
//! 1. **No R (and no key first met here) has a torsion component.** For 128
//!    independent random subsets S of these points, `Q = sum over S` must be
//!    torsion-free (`[L]Q` is the identity). If some point P_j + T_j has T_j a
//!    nonzero torsion point, then fixing every choice but its own, Q's torsion part
//!    takes two values that differ by T_j, so at most one is zero: each subset
//!    misses T_j with probability at most 1/2, all 128 with at most 2^-128.
//! 2. **The equations hold together.** With 128-bit random z_i,
//!    `[sum z_i s_i]B - sum z_i R_i - sum over keys (sum z_i k_i) A = 0`. Every term
//!    lies in the prime-order subgroup (B, A and every R are torsion-free by now), so
//!    if some equation fails, the combination is zero for at most one z_j modulo L
//!    once the others are fixed: probability at most 2^-128.
//!
//! When both hold, every signature in the batch is one `verify_strict` accepts
//! (with probability at least 1 - 2^-127 over our own randomness, which an attacker
//! neither sees nor chooses). When either does not, each is checked alone.
//!
//! Cost: the subset sums share work by groups of five points (a table of the 32
//! sums of each group, then one addition per group and subset: about 32 additions
//! a point, where groups of four took 36 and measured 3% slower), and the equation is
//! one multiscalar multiplication with one point per signature plus one per key.
//! A key's own torsion test, alone, is a scalar multiplication (about what 36
//! signatures cost a batch); as a point of a batch's test it is a few additions:
//! with one new receipt on each of 10,000 chains, testing each key alone was a
//! third of what a `verify` from a checkpoint spent.

use std::collections::HashMap;

use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{Identity, IsIdentity, VartimeMultiscalarMul};
use ed25519_dalek::VerifyingKey;
use sha2::{Digest as _, Sha512};

/// Below this many signatures the fixed cost of the torsion test (128 scalar
/// multiplications) is not worth it: each is checked alone.
pub(crate) const MIN_BATCH: usize = 256;
/// Random subsets in the torsion test: each misses a torsion component with
/// probability at most 1/2.
const TORSION_TRIALS: usize = 128;
/// Points per precomputed table of subset sums.
const GROUP: usize = 5;

/// One signature ready for a batch: R decompressed, s and k reduced.
struct Prepared {
    r: EdwardsPoint,
    s: Scalar,
    k: Scalar,
    /// Which of the batch's keys signed it.
    key: usize,
}

/// One raw Ed25519 check: key, signed data, signature.
pub(crate) struct Raw<'a> {
    pub key: &'a VerifyingKey,
    pub data: &'a [u8],
    pub signature: &'a [u8],
}

/// Per check in `items`: `Some(true)` when the batch vouches that it passes
/// `verify_strict`, `None` when it must be checked alone.
pub(crate) fn verify_batch(items: &[&Raw<'_>]) -> Vec<Option<bool>> {
    match attempt(items, Keys::InTheBatch) {
        Attempt::Done(out) => out,
        // the batch failed with keys first met in it: each is tested alone now
        // (remembered), and the batch tried once more without any that failed
        Attempt::KeysUntested => match attempt(items, Keys::Alone) {
            Attempt::Done(out) => out,
            // every key is tested alone this time, so no key is untested;
            // were one, nothing would be vouched for (each checked alone)
            Attempt::KeysUntested => vec![None; items.len()],
        },
    }
}

/// How [`attempt`] tests the torsion of a key [`usable_key`] has no answer for.
#[derive(Clone, Copy, PartialEq)]
enum Keys {
    /// Among the batch's points, in the torsion test of its R values.
    InTheBatch,
    /// Alone, a scalar multiplication each.
    Alone,
}

enum Attempt {
    Done(Vec<Option<bool>>),
    /// The batch did not hold, and some key in it was tested only there.
    KeysUntested,
}

fn attempt(items: &[&Raw<'_>], keys_tested: Keys) -> Attempt {
    let mut out = vec![None; items.len()];
    // mutants: this early answer is equivalent to the one on what was
    // prepared, below (`==` or `<=` here only reads what a small batch drops)
    if items.len() < MIN_BATCH {
        return Attempt::Done(out);
    }
    // Per distinct key: its index among the batch's keys, or None when it must be
    // checked alone (weak, or with a torsion component).
    let mut key_index: HashMap<[u8; 32], Option<usize>> = HashMap::new();
    let mut keys: Vec<EdwardsPoint> = Vec::new();
    // the keys (index in `keys`, bytes) whose torsion this batch's test decides
    let mut untested: Vec<(usize, [u8; 32])> = Vec::new();
    let mut prepared: Vec<(usize, Prepared)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let key = *key_index.entry(item.key.to_bytes()).or_insert_with(|| {
            let usable = match KNOWN.get(&item.key.to_bytes()) {
                Some(answer) => answer,
                // mutants: testing every new key alone (this guard always
                // true, or `!=`) is equivalent in answers, and slower: it is
                // what the second attempt does
                None if keys_tested == Keys::Alone => usable_key(item.key),
                None if item.key.is_weak() => {
                    KNOWN.put(item.key.to_bytes(), false);
                    false
                }
                None => {
                    untested.push((keys.len(), item.key.to_bytes()));
                    true
                }
            };
            usable.then(|| {
                keys.push(item.key.to_edwards());
                keys.len() - 1
            })
        });
        if let Some(p) = key.and_then(|key| prepare(item, key)) {
            prepared.push((i, p));
        }
    }
    // mutants: the bound is equivalent in answers (a batch of any size says
    // yes only where each signature alone would); it is what a batch must
    // hold to cost less than its signatures checked alone
    if prepared.len() < MIN_BATCH {
        // too few to batch: none is vouched for, so nothing depends on a key
        // that was not tested
        return Attempt::Done(out);
    }
    let Some(random) = Randomness::new(prepared.len(), prepared.len() + untested.len()) else {
        return Attempt::Done(out); // no randomness: no batch, every signature alone
    };
    let signatures: Vec<&Prepared> = prepared.iter().map(|(_, p)| p).collect();
    let points: Vec<EdwardsPoint> = signatures
        .iter()
        .map(|p| p.r)
        .chain(untested.iter().map(|&(k, _)| keys[k]))
        .collect();
    if torsion_free(&points, &random) && equations_hold(&signatures, &keys, &random) {
        for (i, _) in &prepared {
            out[*i] = Some(true);
        }
        for (_, bytes) in untested {
            KNOWN.put(bytes, true);
        }
        return Attempt::Done(out);
    }
    if untested.is_empty() {
        Attempt::Done(out)
    } else {
        Attempt::KeysUntested
    }
}

/// For each check, whether the batch vouched for it; `None` is a check that
/// cannot enter one (its key is no usable point) and is never vouched for.
pub(crate) fn vouched(raws: &[Option<Raw<'_>>]) -> Vec<bool> {
    let (which, entering): (Vec<usize>, Vec<&Raw<'_>>) = raws
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, r.as_ref()?)))
        .unzip();
    let mut out = vec![false; raws.len()];
    for (i, b) in which.into_iter().zip(verify_batch(&entering)) {
        out[i] = b == Some(true);
    }
    out
}

/// Keys whose usability [`usable_key`] remembers, at most: a verify checks
/// each writer's key in every batch its signatures meet, and the torsion test
/// (a scalar multiplication) is most of what a key costs a batch.
const KNOWN_KEYS: usize = 1 << 16;

/// What [`usable_key`] and the batches found of each key.
static KNOWN: Remembered = Remembered::new(KNOWN_KEYS);

/// Whether `key` may enter a batch: not of small order, and torsion-free (see
/// the module docs). Remembered for this process (a pure function of the
/// key's bytes), up to [`KNOWN_KEYS`] keys; past that, worked out each time.
fn usable_key(key: &VerifyingKey) -> bool {
    KNOWN.get_or(key.to_bytes(), || {
        !key.is_weak() && key.to_edwards().is_torsion_free()
    })
}

/// Answers by key, remembered for the process, at most `cap` of them (the
/// first asked); a lock that a panic poisoned remembers nothing more.
struct Remembered {
    known: std::sync::Mutex<Option<HashMap<[u8; 32], bool>>>,
    cap: usize,
}

impl Remembered {
    const fn new(cap: usize) -> Remembered {
        Remembered {
            known: std::sync::Mutex::new(None),
            cap,
        }
    }

    /// The answer for `key`: remembered, or `work`'s (then remembered while
    /// fewer than `cap` are).
    fn get_or(&self, key: [u8; 32], work: impl FnOnce() -> bool) -> bool {
        if let Some(answer) = self.get(&key) {
            return answer;
        }
        let answer = work();
        self.put(key, answer);
        answer
    }

    /// The answer remembered for `key`, if any.
    fn get(&self, key: &[u8; 32]) -> Option<bool> {
        self.known
            .lock()
            .ok()
            .and_then(|known| known.as_ref()?.get(key).copied())
    }

    /// Remember `answer` for `key`, while fewer than `cap` are.
    fn put(&self, key: [u8; 32], answer: bool) {
        if let Ok(mut known) = self.known.lock() {
            let known = known.get_or_insert_with(HashMap::new);
            if known.len() < self.cap {
                known.insert(key, answer);
            }
        }
    }
}

/// The signature's parts, when it may enter a batch (see the module docs).
fn prepare(item: &Raw<'_>, key: usize) -> Option<Prepared> {
    let signature: &[u8; 64] = item.signature.try_into().ok()?;
    let (r_bytes, s_bytes) = signature.split_at(32);
    let r_bytes: [u8; 32] = r_bytes.try_into().ok()?;
    let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_bytes.try_into().ok()?))?;
    // Canonical: y < p. (The other way to spell a point twice, x = 0 with the
    // sign bit set, only exists for the two points with x = 0, both of small order.)
    let r = CompressedEdwardsY(r_bytes).decompress()?;
    if !y_is_reduced(&r_bytes) || r.is_small_order() {
        return None;
    }
    debug_assert_eq!(r.compress().to_bytes(), r_bytes);
    let mut h = Sha512::new();
    h.update(r_bytes);
    h.update(item.key.as_bytes());
    h.update(item.data);
    let k = Scalar::from_bytes_mod_order_wide(&h.finalize().into());
    Some(Prepared { r, s, k, key })
}

/// Whether the y coordinate of an encoded point (its low 255 bits) is below
/// p = 2^255 - 19, as a canonical encoding's is. Decompression reduces y modulo p
/// without saying so; re-encoding to compare would cost a field inversion.
fn y_is_reduced(encoded: &[u8; 32]) -> bool {
    // y >= p exactly when y is one of 2^255 - 19 ..= 2^255 - 1: every byte 0xff
    // but the top one (0x7f without the sign bit) and the lowest (at least 0xed).
    !(encoded[31] & 0x7f == 0x7f && encoded[1..31].iter().all(|&b| b == 0xff) && encoded[0] >= 0xed)
}

/// Our own random bits: 16 bytes per signature for its coefficient z, and
/// `TORSION_TRIALS` bits per point of the torsion test for the subsets.
struct Randomness {
    z: Vec<Scalar>,
    subsets: Vec<u128>,
}

impl Randomness {
    fn new(signatures: usize, points: usize) -> Option<Randomness> {
        let mut bytes = vec![0u8; (signatures + points) * 16];
        ssh_key::getrandom::fill(&mut bytes).ok()?;
        let (z, subsets) = bytes.split_at(signatures * 16);
        Some(Randomness {
            z: z.chunks_exact(16)
                .map(|c| {
                    let mut wide = [0u8; 32];
                    wide[..16].copy_from_slice(c);
                    Scalar::from_bytes_mod_order(wide)
                })
                .collect(),
            subsets: subsets
                .chunks_exact(16)
                .map(|c| u128::from_le_bytes(c.try_into().expect("16 bytes")))
                .collect(),
        })
    }
}

/// Test 1 of the module docs: no point (each R, and each key first met in
/// this batch) has a torsion component.
fn torsion_free(points: &[EdwardsPoint], random: &Randomness) -> bool {
    subset_sums(points, random)
        .iter()
        .all(EdwardsPoint::is_torsion_free)
}

/// For each trial t, the sum of the points whose subset bit t is set (bit t
/// of `random.subsets[i]` for point i): what [`torsion_free`] tests.
fn subset_sums(points: &[EdwardsPoint], random: &Randomness) -> Vec<EdwardsPoint> {
    const _: () = assert!(TORSION_TRIALS == u128::BITS as usize);
    let mut sums = vec![EdwardsPoint::identity(); TORSION_TRIALS];
    for (g, group) in points.chunks(GROUP).enumerate() {
        // table[m] = the sum of the group's points whose bit is set in m
        let mut table = [EdwardsPoint::identity(); 1 << GROUP];
        for m in 1..(1usize << group.len()) {
            let low = m.trailing_zeros() as usize;
            table[m] = table[m & (m - 1)] + group[low];
        }
        let bits = &random.subsets[g * GROUP..g * GROUP + group.len()];
        for (t, sum) in sums.iter_mut().enumerate() {
            let m = bits
                .iter()
                .enumerate()
                .fold(0usize, |m, (j, b)| m | ((((b >> t) & 1) as usize) << j));
            if m != 0 {
                *sum += table[m];
            }
        }
    }
    sums
}

/// Test 2 of the module docs: the random combination of every equation is zero.
fn equations_hold(signatures: &[&Prepared], keys: &[EdwardsPoint], random: &Randomness) -> bool {
    let mut b = Scalar::ZERO;
    let mut a = vec![Scalar::ZERO; keys.len()];
    for (p, z) in signatures.iter().zip(&random.z) {
        b += z * p.s;
        a[p.key] += z * p.k;
    }
    let scalars = std::iter::once(b)
        .chain(random.z.iter().map(|z| -z))
        .chain(a.iter().map(|a| -a));
    let points = std::iter::once(ED25519_BASEPOINT_POINT)
        .chain(signatures.iter().map(|p| p.r))
        .chain(keys.iter().copied());
    EdwardsPoint::vartime_multiscalar_mul(scalars, points).is_identity()
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::constants::EIGHT_TORSION;

    /// An answer is worked out once and then remembered, for the first
    /// `cap` keys asked; past them each is worked out again every time.
    #[test]
    fn answers_are_remembered_for_the_first_keys_up_to_the_cap() {
        let memo = Remembered::new(2);
        assert!(memo.get_or([1; 32], || true));
        assert!(memo.get_or([1; 32], || unreachable!("remembered")));
        assert!(!memo.get_or([2; 32], || false));
        assert!(!memo.get_or([2; 32], || unreachable!("remembered")));
        // a third key: answered, not remembered
        assert!(memo.get_or([3; 32], || true));
        assert!(!memo.get_or([3; 32], || false));
        assert!(memo.get_or([1; 32], || unreachable!("still remembered")));
    }

    /// A key made from a scalar we know, so tests can craft signatures freely.
    struct Key {
        a: Scalar,
        point: EdwardsPoint,
        verifying: VerifyingKey,
    }

    fn scalar(seed: u64) -> Scalar {
        let mut h = Sha512::new();
        h.update(seed.to_le_bytes());
        Scalar::from_bytes_mod_order_wide(&h.finalize().into())
    }

    fn key(seed: u64, torsion: EdwardsPoint) -> Key {
        let a = scalar(seed);
        let point = EdwardsPoint::mul_base(&a) + torsion;
        let verifying = VerifyingKey::from_bytes(&point.compress().to_bytes()).unwrap();
        Key {
            a,
            point,
            verifying,
        }
    }

    fn challenge(r: &[u8; 32], key: &Key, data: &[u8]) -> Scalar {
        let mut h = Sha512::new();
        h.update(r);
        h.update(key.point.compress().as_bytes());
        h.update(data);
        Scalar::from_bytes_mod_order_wide(&h.finalize().into())
    }

    /// A signature with nonce `[r]B + r_torsion`, honest otherwise.
    fn sign(key: &Key, data: &[u8], nonce: u64, r_torsion: EdwardsPoint) -> [u8; 64] {
        let r = scalar(nonce ^ 0xa5a5_a5a5);
        let big_r = (EdwardsPoint::mul_base(&r) + r_torsion)
            .compress()
            .to_bytes();
        let s = r + challenge(&big_r, key, data) * key.a;
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&big_r);
        sig[32..].copy_from_slice(s.as_bytes());
        sig
    }

    /// A signature under a key with torsion component `t` that strict verification
    /// accepts: R absorbs `[k]t`, found by trying nonces until k agrees.
    fn sign_mixed_key(key: &Key, t: EdwardsPoint, data: &[u8]) -> [u8; 64] {
        for nonce in 0.. {
            let r = scalar(nonce);
            let j = (nonce % 8) as u8;
            let jt = EdwardsPoint::mul_base(&Scalar::ZERO) + t * Scalar::from(j);
            let big_r = (EdwardsPoint::mul_base(&r) - jt).compress().to_bytes();
            let k = challenge(&big_r, key, data);
            if k.as_bytes()[0] % 8 == j {
                let s = r + k * key.a;
                let mut sig = [0u8; 64];
                sig[..32].copy_from_slice(&big_r);
                sig[32..].copy_from_slice(s.as_bytes());
                return sig;
            }
        }
        unreachable!()
    }

    fn strict(key: &VerifyingKey, data: &[u8], sig: &[u8; 64]) -> bool {
        key.verify_strict(data, &ed25519_dalek::Signature::from_bytes(sig))
            .is_ok()
    }

    /// A check as the tests hold it: key, data, signature.
    type Item = (VerifyingKey, Vec<u8>, [u8; 64]);

    /// 299 honest signatures under 5 keys, then `odd` at `position`.
    fn batch_with(odd: (&VerifyingKey, &[u8], [u8; 64]), position: usize) -> (Vec<Item>, usize) {
        let keys: Vec<Key> = (0..5).map(|i| key(i, EdwardsPoint::identity())).collect();
        let mut items: Vec<Item> = (0..299u64)
            .map(|i| {
                let k = &keys[i as usize % 5];
                let data = format!("receipt {i}").into_bytes();
                let sig = sign(k, &data, i, EdwardsPoint::identity());
                (k.verifying, data, sig)
            })
            .collect();
        let position = position % (items.len() + 1);
        items.insert(position, (*odd.0, odd.1.to_vec(), odd.2));
        (items, position)
    }

    fn run(items: &[Item]) -> Vec<Option<bool>> {
        let raws: Vec<Raw<'_>> = items
            .iter()
            .map(|(key, data, signature)| Raw {
                key,
                data,
                signature,
            })
            .collect();
        verify_batch(&raws.iter().collect::<Vec<_>>())
    }

    /// The subset sums the torsion test checks are the sums of exactly the
    /// points whose bit is set, for every trial, over batches that fill
    /// their last group of five and that do not (the soundness of the test,
    /// 2^-128, rests on each point entering each trial's sum on its own bit;
    /// a sum that drops, negates or repeats a point still catches most
    /// torsion, so only this comparison tells).
    #[test]
    fn subset_sums_are_the_sums_of_the_points_each_trial_takes() {
        for n in [1usize, 4, 5, 6, 13, 40] {
            let points: Vec<EdwardsPoint> = (0..n as u64)
                .map(|i| EdwardsPoint::mul_base(&scalar(300 + i)))
                .collect();
            let random = Randomness::new(0, n).unwrap();
            let sums = subset_sums(&points, &random);
            assert_eq!(sums.len(), TORSION_TRIALS);
            for (t, sum) in sums.iter().enumerate() {
                let naive = points
                    .iter()
                    .zip(&random.subsets)
                    .filter(|(_, bits)| (*bits >> t) & 1 == 1)
                    .fold(EdwardsPoint::identity(), |acc, (p, _)| acc + p);
                assert_eq!(*sum, naive, "{n} points, trial {t}");
            }
        }
    }

    /// Whether the batch vouched for every check but the one at `at`.
    fn vouched_for_all_but(out: &[Option<bool>], at: usize) -> bool {
        out.iter()
            .enumerate()
            .all(|(i, v)| i == at || *v == Some(true))
    }

    #[test]
    fn honest_signatures_are_vouched_for_by_the_batch() {
        let k = key(9, EdwardsPoint::identity());
        let sig = sign(&k, b"one more", 1, EdwardsPoint::identity());
        let (items, _) = batch_with((&k.verifying, b"one more", sig), 17);
        assert!(run(&items).iter().all(|v| *v == Some(true)));
    }

    #[test]
    fn a_small_batch_vouches_for_nothing() {
        let k = key(9, EdwardsPoint::identity());
        let items: Vec<_> = (0..MIN_BATCH as u64 - 1)
            .map(|i| {
                (
                    k.verifying,
                    vec![i as u8],
                    sign(&k, &[i as u8], i, EdwardsPoint::identity()),
                )
            })
            .collect();
        assert!(run(&items).iter().all(Option::is_none));
    }

    #[test]
    fn one_bad_signature_makes_the_batch_vouch_for_nothing() {
        let k = key(9, EdwardsPoint::identity());
        let sig = sign(&k, b"what was signed", 1, EdwardsPoint::identity());
        let (items, _) = batch_with((&k.verifying, b"what is claimed", sig), 100);
        assert!(run(&items).iter().all(Option::is_none));
    }

    /// The case a plain batch gets wrong: an R with a torsion component, over an
    /// equation that otherwise holds. Strict verification rejects it; the batch
    /// must never vouch for it, whichever torsion point and wherever it sits, in
    /// many batches with fresh randomness (a batch without the torsion test misses
    /// an order-2 component half the time).
    #[test]
    fn an_r_with_a_torsion_component_is_never_vouched_for() {
        let k = key(9, EdwardsPoint::identity());
        for (t, torsion) in EIGHT_TORSION.iter().enumerate().skip(1) {
            let sig = sign(&k, b"mixed r", t as u64, *torsion);
            assert!(!strict(&k.verifying, b"mixed r", &sig), "torsion {t}");
            for round in 0..32 {
                let (items, _) = batch_with((&k.verifying, b"mixed r", sig), round * 37 + t);
                assert!(
                    run(&items).iter().all(Option::is_none),
                    "torsion point {t}, round {round}: the batch vouched for a mixed-order R"
                );
            }
        }
    }

    /// A key with a torsion component is checked alone (strict verification may
    /// accept what a batch would not), and the honest rest of the batch still holds.
    #[test]
    fn a_mixed_order_key_is_left_to_strict_verification() {
        for (t, torsion) in EIGHT_TORSION.iter().enumerate().skip(1) {
            let k = key(20 + t as u64, *torsion);
            let sig = sign_mixed_key(&k, *torsion, b"mixed key");
            assert!(strict(&k.verifying, b"mixed key", &sig), "torsion {t}");
            let (items, at) = batch_with((&k.verifying, b"mixed key", sig), 5 * t);
            let out = run(&items);
            assert_eq!(out[at], None, "torsion {t}");
            assert!(
                vouched_for_all_but(&out, at),
                "torsion {t}: the honest signatures around it"
            );
        }
    }

    /// A key first met in a batch is a point of its torsion test. The case
    /// that needs it: a key with an order-2 torsion component T signs with an
    /// odd challenge k and a clean R, so `[s]B - [k]A = R - T` and strict
    /// verification refuses; the batch equation sees `z k T`, zero for every
    /// even z. Without the key among the tested points a batch vouches for it
    /// half the time; with it, never (32 fresh keys, each first met here).
    #[test]
    fn a_key_first_met_in_a_batch_is_tested_among_its_points() {
        let t2 = EIGHT_TORSION[4];
        assert!(t2.mul_by_cofactor().is_identity() && !t2.is_identity());
        for round in 0..32u64 {
            let k = key(1_000 + round, t2);
            let (data, sig) = (0u64..)
                .find_map(|nonce| {
                    let data = format!("odd k {round} {nonce}").into_bytes();
                    let sig = sign(&k, &data, nonce, EdwardsPoint::identity());
                    let r: [u8; 32] = sig[..32].try_into().unwrap();
                    (challenge(&r, &k, &data).as_bytes()[0] % 2 == 1).then_some((data, sig))
                })
                .unwrap();
            assert!(!strict(&k.verifying, &data, &sig), "round {round}");
            assert_eq!(
                KNOWN.get(&k.verifying.to_bytes()),
                None,
                "round {round}: new"
            );
            let (items, at) = batch_with((&k.verifying, &data, sig), 7 * round as usize);
            let out = run(&items);
            assert_eq!(
                out[at], None,
                "round {round}: vouched for what strict refuses"
            );
            // the batch failed with a key it alone tested: each key was then
            // tested alone, this one found unusable, and the rest held
            assert_eq!(
                KNOWN.get(&k.verifying.to_bytes()),
                Some(false),
                "round {round}"
            );
            assert!(
                vouched_for_all_but(&out, at),
                "round {round}: the honest signatures around it"
            );
        }
    }

    /// Keys a batch that holds tested among its points are remembered as
    /// usable, and a weak key as unusable without a torsion test; a batch
    /// that does not hold remembers nothing of its keys' torsion when it has
    /// no failing key to blame (every key is then tested alone, and usable).
    #[test]
    fn what_a_batch_found_of_its_keys_is_remembered() {
        let fresh = |seed: u64| key(2_000 + seed, EdwardsPoint::identity());
        let signed = |keys: &[Key], bad: Option<usize>| -> Vec<Item> {
            (0..300u64)
                .map(|i| {
                    let k = &keys[i as usize % keys.len()];
                    let data = format!("receipt {i}").into_bytes();
                    let mut sig = sign(k, &data, i, EdwardsPoint::identity());
                    if bad == Some(i as usize) {
                        sig[40] ^= 1; // s changed: the equation fails
                    }
                    (k.verifying, data, sig)
                })
                .collect()
        };
        let holding: Vec<Key> = (0..6).map(fresh).collect();
        assert!(
            run(&signed(&holding, None))
                .iter()
                .all(|v| *v == Some(true))
        );
        for k in &holding {
            assert_eq!(KNOWN.get(&k.verifying.to_bytes()), Some(true));
        }
        let failing: Vec<Key> = (6..12).map(fresh).collect();
        let out = run(&signed(&failing, Some(150)));
        assert!(out.iter().all(Option::is_none), "one bad signature");
        for k in &failing {
            // tested alone after the batch failed
            assert_eq!(KNOWN.get(&k.verifying.to_bytes()), Some(true));
        }
        // a weak key (of small order) never enters: the rest still hold
        let weak = VerifyingKey::from_bytes(EIGHT_TORSION[2].compress().as_bytes()).unwrap();
        assert!(weak.is_weak());
        let mut items = signed(&(12..18).map(fresh).collect::<Vec<_>>(), None);
        items[9].0 = weak;
        let out = run(&items);
        assert_eq!(out[9], None);
        assert!(vouched_for_all_but(&out, 9));
        assert_eq!(KNOWN.get(&weak.to_bytes()), Some(false));
        // The identity as a key: of small order, yet no point of the torsion
        // test can see it (it has no torsion component), and every equation
        // under it holds when s = r, since [k]A is the identity. Strict
        // verification refuses such a key; so must every batch.
        let identity =
            VerifyingKey::from_bytes(EdwardsPoint::identity().compress().as_bytes()).unwrap();
        assert!(identity.is_weak());
        let r = scalar(77);
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(EdwardsPoint::mul_base(&r).compress().as_bytes());
        sig[32..].copy_from_slice(r.as_bytes());
        assert!(!strict(&identity, b"anything", &sig));
        let mut items = signed(&(18..24).map(fresh).collect::<Vec<_>>(), None);
        items[20] = (identity, b"anything".to_vec(), sig);
        let out = run(&items);
        assert_eq!(
            out[20], None,
            "a batch vouched for a signature under the identity"
        );
        assert!(vouched_for_all_but(&out, 20));
    }

    /// The byte test agrees with decompressing and encoding again, for every
    /// encoding of y in p - 19 ..= 2^255 - 1 (the non-canonical ones and their
    /// neighbours) with either sign, and for ordinary points.
    #[test]
    fn the_canonical_y_test_agrees_with_encoding_again() {
        let mut encodings: Vec<[u8; 32]> = Vec::new();
        for low in 0xd9..=0xffu8 {
            for sign in [0u8, 0x80] {
                let mut b = [0xffu8; 32];
                b[0] = low;
                b[31] = 0x7f | sign;
                encodings.push(b);
            }
        }
        encodings
            .extend((1..50u64).map(|i| EdwardsPoint::mul_base(&scalar(i)).compress().to_bytes()));
        let mut points = 0;
        for b in encodings {
            if let Some(p) = CompressedEdwardsY(b).decompress() {
                points += 1;
                let canonical = p.compress().to_bytes() == b;
                let reduced = y_is_reduced(&b);
                assert!(
                    canonical == reduced || (p.is_small_order() && !canonical),
                    "{}: canonical {canonical}, reduced {reduced}",
                    hex::encode(b)
                );
            }
        }
        assert!(points > 49, "{points} encodings decompressed");
    }

    /// Encodings strict verification refuses never enter a batch: S >= L, R not
    /// canonically encoded, R of small order.
    #[test]
    fn encodings_strict_verification_refuses_stay_out_of_the_batch() {
        let k = key(9, EdwardsPoint::identity());
        let honest = sign(&k, b"m", 3, EdwardsPoint::identity());
        // S + L: the same S modulo L, not canonical
        let mut s_plus_l = honest;
        // L, the order of the base point, little-endian
        let l: [u8; 32] = [
            0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9,
            0xde, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x10,
        ];
        let mut carry = 0u16;
        for i in 0..32 {
            let v = s_plus_l[32 + i] as u16 + l[i] as u16 + carry;
            s_plus_l[32 + i] = v as u8;
            carry = v >> 8;
        }
        // R = the small-order point of y = 1 with the sign bit set (not canonical)
        let mut r_negative_zero = honest;
        r_negative_zero[..32].copy_from_slice(&{
            let mut b = [0u8; 32];
            b[0] = 1;
            b[31] = 0x80;
            b
        });
        // R of small order, canonically encoded
        let mut r_small = honest;
        r_small[..32].copy_from_slice(EIGHT_TORSION[2].compress().as_bytes());
        for (name, sig) in [
            ("S + L", s_plus_l),
            ("R = -0", r_negative_zero),
            ("small-order R", r_small),
        ] {
            assert!(!strict(&k.verifying, b"m", &sig), "{name}");
            let (items, at) = batch_with((&k.verifying, b"m", sig), 42);
            assert_eq!(run(&items)[at], None, "{name}");
        }
    }
}
