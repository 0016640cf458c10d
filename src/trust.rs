//! The set of public keys a reader accepts, and where each came from.

pub use crate::clock::{parse_signer_time, timestamp_ms};
use crate::contract::Contract;
use crate::receipt::{Receipt, Unverified, Verified};
use crate::sign::PublicKey;

/// Why a key is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustOrigin {
    /// The user's own signing key.
    OwnKey,
    /// A `[signer]` in `.gitreceipts` at a trusted revision.
    Contract(String),
    /// git config `receipt.trustedKey`.
    Config,
    /// An entry of an allowed_signers file, with its principals.
    AllowedSigners(String),
}

/// One trusted key.
#[derive(Debug, Clone)]
pub struct Trusted {
    /// The key.
    pub key: PublicKey,
    /// Why it is trusted.
    pub origin: TrustOrigin,
    /// Receipts started before this time (Unix ms) are not accepted.
    pub valid_after: Option<u64>,
    /// Receipts started at or after this time (Unix ms) are not accepted.
    pub valid_before: Option<u64>,
    /// Revoked: no receipt by this key is accepted.
    pub revoked: bool,
}

impl Trusted {
    /// Hold this key to `other` as well: revoked if either is, inside both windows.
    fn narrow(&mut self, other: &Trusted) {
        self.revoked |= other.revoked;
        self.valid_after = self.valid_after.max(other.valid_after);
        self.valid_before = match (self.valid_before, other.valid_before) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// Why a receipt started at `started_at_ms` by this key is not acceptable, if it is not.
    pub fn refuses(&self, started_at_ms: Option<u64>) -> Option<String> {
        if self.revoked {
            return Some(format!(
                "key {} is revoked ({})",
                self.key.fingerprint(),
                self.origin
            ));
        }
        let t = started_at_ms?;
        if let Some(a) = self.valid_after
            && t < a
        {
            return Some(format!(
                "signed at {} but key {} is valid only after {}",
                crate::receipt::format_timestamp(t),
                self.key.fingerprint(),
                crate::receipt::format_timestamp(a)
            ));
        }
        if let Some(b) = self.valid_before
            && t >= b
        {
            return Some(format!(
                "signed at {} but key {} expired at {}",
                crate::receipt::format_timestamp(t),
                self.key.fingerprint(),
                crate::receipt::format_timestamp(b)
            ));
        }
        None
    }
}

/// Why a receipt does not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No trusted key has the receipt's fingerprint.
    Untrusted,
    /// The key is trusted but revoked.
    Revoked(String),
    /// The key is trusted, but the receipt was signed outside its validity window.
    Window(String),
    /// The signature does not verify against the trusted key.
    BadSignature(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Untrusted => write!(f, "not signed by a trusted key"),
            Refusal::Revoked(why) | Refusal::Window(why) | Refusal::BadSignature(why) => {
                write!(f, "{why}")
            }
        }
    }
}

/// The keys a reader accepts.
///
/// Found by their key bytes, fingerprint or writer-id suffix in O(1): a team's
/// `.gitreceipts` may name a thousand signers, and comparing Ed25519 points pair
/// by pair (or hashing every key per lookup) would cost a gate more than the rest
/// of its work. A set of a thousand keys is built on every `gate`, so each key
/// costs one SHA-256 and two table inserts: both tables hold raw digest bytes
/// (formatting a fingerprint and a hex suffix per key was most of the cost; a
/// lookup decodes its one string instead), hashed by their first 8 bytes, and
/// the key bytes themselves need no table (one digest names one key).
///
/// A contract's signers are not copied in: the set holds the parsed contract
/// (shared with every other reader of that blob) and makes a signer's entry when
/// a lookup first finds it, so a gate that reads one receipt makes one entry.
#[derive(Debug, Clone, Default)]
pub struct TrustSet {
    /// Keys added one at a time (your key, git config, allowed_signers).
    keys: Vec<Trusted>,
    /// Contracts whose signers are trusted, each with its signers' entries,
    /// made on first use.
    contracts: Vec<(std::sync::Arc<Contract>, Made)>,
    /// Every entry, in the order its key was first added.
    order: Vec<Slot>,
    /// By the SHA-256 digest an OpenSSH fingerprint encodes.
    by_digest: std::collections::HashMap<[u8; 32], Slot, DigestHash>,
    /// The first 16 bytes of each key's digest: the suffix of its writer ids.
    writer_suffixes: std::collections::HashSet<[u8; 16], DigestHash>,
}

/// A contract's signers' entries, each made on first use.
type Made = Vec<std::sync::OnceLock<Box<Trusted>>>;

/// Where an entry of a [`TrustSet`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// `keys[i]`.
    Key(u32),
    /// Signer `i` of contract `c`.
    Signer(u32, u32),
}

/// The entry a contract's signer makes.
fn signer_entry(s: &crate::contract::SignerDef) -> Trusted {
    Trusted {
        key: s.key.clone(),
        origin: TrustOrigin::Contract(s.name.clone()),
        valid_after: s.valid_after,
        valid_before: s.valid_before,
        revoked: s.revoked,
    }
}

/// Hashes a SHA-256 digest (or a prefix of one) by its first 8 bytes, which are
/// already uniform. Whoever writes the keys (a `.gitreceipts` author, git config,
/// an allowed_signers file: all trusted already) could grind keys whose digests
/// share those bytes; that makes a lookup compare against each key (a thousand
/// comparisons at worst), never changes what it finds: entries are matched on
/// all 32 bytes.
type DigestHash = std::hash::BuildHasherDefault<DigestHasher>;

#[derive(Default)]
struct DigestHasher(u64);

impl std::hash::Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut first = [0u8; 8];
        let n = bytes.len().min(8);
        first[..n].copy_from_slice(&bytes[..n]);
        // `Hash` for an array writes its length first: mixed in, not replacing
        self.0 = self.0.rotate_left(17) ^ u64::from_le_bytes(first);
    }
}

impl TrustSet {
    /// Add a key without a validity window (duplicates keep the first entry).
    pub fn add(&mut self, key: PublicKey, origin: TrustOrigin) {
        self.add_entry(Trusted {
            key,
            origin,
            valid_after: None,
            valid_before: None,
            revoked: false,
        });
    }

    /// Add a key with its window and revocation. A key given twice keeps its first
    /// origin and is held to both entries: a revocation always wins, and the
    /// validity window is the narrowest (the later `valid_after`, the earlier
    /// `valid_before`), so a second, stricter declaration is never ignored.
    pub fn add_entry(&mut self, entry: Trusted) {
        let digest = entry.key.fingerprint_digest();
        match self.by_digest.get(&digest) {
            Some(&slot) => self.entry_mut(slot).narrow(&entry),
            None => {
                let slot = Slot::Key(self.keys.len() as u32);
                self.keys.push(entry);
                self.insert(digest, slot);
            }
        }
    }

    fn insert(&mut self, digest: [u8; 32], slot: Slot) {
        self.by_digest.insert(digest, slot);
        self.writer_suffixes.insert(suffix_of(&digest));
        self.order.push(slot);
    }

    /// The entry in `slot`.
    fn entry(&self, slot: Slot) -> &Trusted {
        match slot {
            Slot::Key(i) => &self.keys[i as usize],
            Slot::Signer(c, i) => {
                let (contract, made) = &self.contracts[c as usize];
                made[i as usize]
                    .get_or_init(|| Box::new(signer_entry(&contract.signers[i as usize])))
            }
        }
    }

    /// The entry in `slot`, made if it is not yet, to be narrowed.
    fn entry_mut(&mut self, slot: Slot) -> &mut Trusted {
        match slot {
            Slot::Key(i) => &mut self.keys[i as usize],
            Slot::Signer(c, i) => {
                let (contract, made) = &mut self.contracts[c as usize];
                let cell = &mut made[i as usize];
                if cell.get().is_none() {
                    *cell = std::sync::OnceLock::from(Box::new(signer_entry(
                        &contract.signers[i as usize],
                    )));
                }
                match cell.get_mut() {
                    Some(entry) => entry,
                    // set just above
                    None => unreachable!("a signer's entry is made before it is narrowed"),
                }
            }
        }
    }

    /// Apply the revocations and validity windows of a contract's signers to the
    /// keys already trusted, without trusting any new key: what the default
    /// branch's tip says about a key only ever removes trust.
    pub fn restrict(&mut self, contract: &Contract) {
        for s in &contract.signers {
            if !s.revoked && s.valid_after.is_none() && s.valid_before.is_none() {
                continue; // narrows nothing: no key's digest to compute
            }
            if let Some(&slot) = self.by_digest.get(&s.key.fingerprint_digest()) {
                self.entry_mut(slot).narrow(&signer_entry(s));
            }
        }
    }

    /// The fingerprints of the keys a `[signer "NAME"]` of a contract this set
    /// was built from declares, whatever origin the set holds each key under (your
    /// own key keeps its name where `.gitreceipts` also declares it).
    pub fn fingerprints_named(&self, name: &str) -> Vec<String> {
        self.contracts
            .iter()
            .flat_map(|(c, _)| c.signers.iter())
            .filter(|s| s.name == name)
            .map(|s| s.key.fingerprint())
            .collect()
    }

    /// The keys whose runs satisfy `accept = run-by:NAMES`: the keys of the
    /// `[signer]`s named in `names` that a contract of this set (the trusted
    /// rules, never the revision judged) declares `observer = true`. Whether a
    /// receipt by one counts is still up to [`TrustSet::check`] (revocation,
    /// validity window, signature).
    pub fn observer_keys(&self, names: &[String]) -> Observers {
        let mut out = Observers::default();
        for name in names {
            let mut found = false;
            for s in self
                .contracts
                .iter()
                .flat_map(|(c, _)| c.signers.iter())
                .filter(|s| s.observer && s.name == *name)
            {
                out.digests.insert(s.key.fingerprint_digest());
                found = true;
            }
            if !found {
                out.undeclared.push(name.clone());
            }
        }
        out
    }

    /// Add every signer of a contract. Each key is hashed (for lookups by
    /// fingerprint and writer id); its entry is made when first looked up.
    pub fn add_contract(&mut self, contract: impl Into<std::sync::Arc<Contract>>) {
        let contract = contract.into();
        let n = contract.signers.len();
        self.by_digest.reserve(n);
        self.writer_suffixes.reserve(n);
        self.order.reserve(n);
        let c = self.contracts.len() as u32;
        let mut made = Vec::with_capacity(n);
        made.resize_with(n, std::sync::OnceLock::new);
        self.contracts.push((contract.clone(), made));
        for (i, s) in contract.signers.iter().enumerate() {
            // on the contract's own key, shared by every reader of the contract
            let digest = s.key.fingerprint_digest();
            match self.by_digest.get(&digest) {
                Some(&slot) => self.entry_mut(slot).narrow(&signer_entry(s)),
                None => self.insert(digest, Slot::Signer(c, i as u32)),
            }
        }
    }

    /// Add the entries of an OpenSSH allowed_signers file that may sign in the
    /// `git-receipt` namespace.
    pub fn add_allowed_signers(&mut self, text: &str, file: &str) -> Result<(), String> {
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |why: String| format!("{file}:{}: {why}", i + 1);
            let (principals, rest) = split_field(line).ok_or_else(|| at("no principals".into()))?;
            let (options, key_text) = match rest.split_once(' ') {
                // options come before the key type unless the key type is first
                Some((first, more))
                    if !first.starts_with("ssh-")
                        && !first.starts_with("ecdsa-")
                        && !first.starts_with("sk-") =>
                {
                    (first, more.trim())
                }
                _ => ("", rest),
            };
            let mut entry_namespaces: Option<String> = None;
            let (mut after, mut before, mut cert) = (None, None, false);
            for opt in split_options(options) {
                let (name, value) = match opt.split_once('=') {
                    Some((n, v)) => (n.to_ascii_lowercase(), Some(v.trim_matches('"').to_owned())),
                    None => (opt.to_ascii_lowercase(), None),
                };
                match (name.as_str(), value) {
                    ("namespaces", Some(v)) => entry_namespaces = Some(v),
                    ("valid-after", Some(v)) => {
                        after = Some(
                            parse_signer_time(&v)
                                .ok_or_else(|| at(format!("valid-after {v:?} is not a time")))?,
                        )
                    }
                    ("valid-before", Some(v)) => {
                        before = Some(
                            parse_signer_time(&v)
                                .ok_or_else(|| at(format!("valid-before {v:?} is not a time")))?,
                        )
                    }
                    ("cert-authority", None) => cert = true,
                    (other, _) => return Err(at(format!("unknown option {other:?}"))),
                }
            }
            if cert {
                return Err(at(
                    "cert-authority entries are not supported; list the signing keys themselves"
                        .into(),
                ));
            }
            if let Some(ns) = &entry_namespaces
                && match_pattern_list(crate::sign::NAMESPACE, ns) != PatternMatch::Positive
            {
                continue; // this key may not sign receipts
            }
            let key = PublicKey::from_openssh(key_text).map_err(|e| at(e.to_string()))?;
            self.add_entry(Trusted {
                key,
                origin: TrustOrigin::AllowedSigners(principals.to_owned()),
                valid_after: after,
                valid_before: before,
                revoked: false,
            });
        }
        Ok(())
    }

    /// The one decision every reader makes: is this receipt signed, strictly, by a
    /// trusted key that is neither revoked nor used outside its validity window?
    pub fn check(
        &self,
        receipt: Receipt<Unverified>,
    ) -> Result<(Receipt<Verified>, &Trusted), Refusal> {
        let t = self.admit(&receipt)?;
        receipt
            .verify(&t.key)
            .map(|v| (v, t))
            .map_err(|e| Refusal::BadSignature(e.to_string()))
    }

    /// [`TrustSet::check`] without taking the receipt: the same refusals, in the
    /// same order, for a reader that keeps the receipt either way (verify reports
    /// on refused ones too).
    pub fn check_in_place(&self, receipt: &Receipt<Unverified>) -> Result<&Trusted, Refusal> {
        let t = self.admit(receipt)?;
        receipt
            .check_signature(&t.key)
            .map(|()| t)
            .map_err(|e| Refusal::BadSignature(e.to_string()))
    }

    /// [`TrustSet::check_in_place`] for many receipts, with the same answer for
    /// each; the signatures of the admitted ones are checked together.
    pub fn check_many(&self, receipts: &[&Receipt<Unverified>]) -> Vec<Result<&Trusted, Refusal>> {
        let admitted: Vec<Result<&Trusted, Refusal>> =
            receipts.iter().map(|r| self.admit(r)).collect();
        let (which, items): (
            Vec<usize>,
            Vec<(&Receipt<Unverified>, &crate::sign::PublicKey)>,
        ) = receipts
            .iter()
            .zip(&admitted)
            .enumerate()
            .filter_map(|(i, (r, t))| Some((i, (*r, &t.as_ref().ok()?.key))))
            .unzip();
        let mut out = admitted;
        for (i, checked) in which.into_iter().zip(Receipt::check_signatures(&items)) {
            if let Err(e) = checked {
                out[i] = Err(Refusal::BadSignature(e.to_string()));
            }
        }
        out
    }

    /// The trusted key that may have signed `receipt` when it says it was signed.
    fn admit(&self, receipt: &Receipt<Unverified>) -> Result<&Trusted, Refusal> {
        let Some(t) = self.lookup(&receipt.signature().key) else {
            return Err(Refusal::Untrusted);
        };
        match t.refuses(timestamp_ms(receipt.body().time())) {
            Some(why) if t.revoked => Err(Refusal::Revoked(why)),
            Some(why) => Err(Refusal::Window(why)),
            None => Ok(t),
        }
    }

    /// The trusted key with this OpenSSH fingerprint.
    pub fn lookup(&self, fingerprint: &str) -> Option<&Trusted> {
        // only the one spelling OpenSSH writes names the key
        let digest = crate::sign::fingerprint_digest_of(fingerprint)?;
        self.by_digest.get(&digest).map(|&slot| self.entry(slot))
    }

    /// Whether some trusted key could have written chain `writer`: a writer id ends
    /// in the first 16 bytes of its key's fingerprint digest, so a chain no trusted
    /// key owns is skipped without opening a receipt of it.
    pub fn may_sign_as(&self, writer: &str) -> bool {
        let Some((_, suffix)) = writer.rsplit_once('-') else {
            return false;
        };
        // a writer id spells its suffix in lowercase hex, as `writer_id` writes it
        let mut bytes = [0u8; 16];
        crate::receipt::decode_lower_hex(suffix.as_bytes(), &mut bytes)
            && self.writer_suffixes.contains(&bytes)
    }

    /// All keys.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &Trusted> {
        self.order.iter().map(|&slot| self.entry(slot))
    }
}

/// The keys of the observers an `accept = run-by:NAMES` names, as the trusted
/// rules declare them ([`TrustSet::observer_keys`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observers {
    /// Their fingerprint digests.
    digests: std::collections::HashSet<[u8; 32]>,
    /// The names no trusted `[signer]` declared `observer = true` goes by.
    pub undeclared: Vec<String>,
}

impl Observers {
    /// Whether the key with this OpenSSH fingerprint is one of them.
    pub fn include(&self, fingerprint: &str) -> bool {
        crate::sign::fingerprint_digest_of(fingerprint).is_some_and(|d| self.digests.contains(&d))
    }

    /// Whether there is none: no receipt can count.
    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }
}

/// The writer-id suffix of a key with this fingerprint digest, as bytes.
fn suffix_of(digest: &[u8; 32]) -> [u8; 16] {
    let mut suffix = [0u8; 16];
    suffix.copy_from_slice(&digest[..16]);
    suffix
}

impl std::fmt::Display for TrustOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrustOrigin::OwnKey => write!(f, "your key"),
            TrustOrigin::Contract(name) => write!(f, "signer {name:?} in .gitreceipts"),
            TrustOrigin::Config => write!(f, "receipt.trustedKey"),
            TrustOrigin::AllowedSigners(p) => write!(f, "allowed signer {p}"),
        }
    }
}

/// The revision whose `.gitreceipts` signers are trusted when judging another.
#[derive(Debug, Clone)]
pub struct TrustRoot {
    /// The commit the signers are read from, if any.
    pub commit: Option<gix::ObjectId>,
    /// How it was chosen, in words (for output).
    pub description: String,
    /// The commit in words, where there is one: `4f4952b (the tip of main)`,
    /// `4f4952b (main~3, on its first-parent history)` (what an error in
    /// its `.gitreceipts` names, so that a reader whose own revision's file
    /// is fine sees which one is not); empty without a commit.
    pub at: String,
}

/// The default branch: `receipt.defaultBranch`, else what `origin/HEAD` names, else
/// `init.defaultBranch`, `main` or `master`, whichever exists first.
pub fn default_branch(
    store: &crate::store::Store,
) -> Result<Option<(String, gix::ObjectId)>, crate::store::StoreError> {
    let resolve = |name: &str| store.ref_peeled_checked(name);
    if let Some(b) = store.config_string("receipt.defaultBranch") {
        return resolve(&b);
    }
    if let Some(found) = resolve("refs/remotes/origin/HEAD")? {
        return Ok(Some(found));
    }
    let mut candidates = Vec::new();
    if let Some(b) = store.config_string("init.defaultBranch") {
        candidates.push(format!("refs/heads/{b}"));
    }
    candidates.extend(["refs/heads/main".to_owned(), "refs/heads/master".to_owned()]);
    for c in &candidates {
        if let Some(found) = resolve(c)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Why no trust root could be chosen for a revision: failing closed, never
/// falling back to some other commit's signers.
#[derive(Debug, thiserror::Error)]
pub enum TrustRootError {
    /// No commit within the walk limit of the trusted branch's first-parent
    /// history is an ancestor of the revision.
    #[error(
        "cannot choose whose signers to trust for {rev}: none of the newest {limit} commits on the first-parent history of {branch} is an ancestor of it, so its trust root is further back than receipt.walkLimit ({limit}) allows"
    )]
    TooFar {
        /// The revision, abbreviated.
        rev: String,
        /// The trusted branch's ref name.
        branch: String,
        /// How many first-parent commits were looked at.
        limit: usize,
    },
    /// The trusted branch's first-parent history ends at a commit whose parent
    /// this (shallow) clone does not have.
    #[error(
        "cannot choose whose signers to trust for {rev}: the first-parent history of {branch} is cut off at {at} (a shallow clone) before it reaches a commit {rev} descends from"
    )]
    Shallow {
        /// The revision, abbreviated.
        rev: String,
        /// The trusted branch's ref name.
        branch: String,
        /// The last commit of its history here, abbreviated.
        at: String,
    },
    /// Reading the history failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// Choose the trust root for judging `rev`: the newest commit on the
/// first-parent history of the default branch (the tips that branch had, as its
/// merges recorded them) that is an ancestor of `rev` (or `rev` itself). A
/// change cannot make its own signers trusted, and neither can a commit that was
/// only ever in the middle of a merged branch: a merge base can be such a commit,
/// a first-parent commit of the default branch cannot.
///
/// Cost: when `rev` descends from the branch's tip (the usual case), one
/// ancestry check. Otherwise the first-parent chain is read back from the tip
/// (one commit per step) at most `receipt.walkLimit` commits (default
/// [`crate::store::DEFAULT_WALK_LIMIT`]), checked at steps 1, 2, 4, 8, ...
/// and then by bisection between the last miss and the first hit (being an
/// ancestor of `rev` holds from some step on, since each commit's first parent
/// is its ancestor): O(log n) ancestry checks. Past the limit, or at the edge of
/// a shallow clone, it fails closed with [`TrustRootError`]; a chain that ends
/// at a root commit before finding one means `rev` shares no history with the
/// branch, and only local keys are trusted.
pub fn trust_root(
    store: &crate::store::Store,
    rev: gix::ObjectId,
) -> Result<TrustRoot, TrustRootError> {
    let Some((name, tip)) = default_branch(store)? else {
        return Ok(TrustRoot {
            commit: None,
            description: "no default branch found (set receipt.defaultBranch): only local keys (your key, receipt.trustedKey) are trusted".into(),
            at: String::new(),
        });
    };
    let limit = root_walk_limit(store);
    let found = |commit: gix::ObjectId, steps: usize| {
        let at = if steps == 0 {
            format!("{} (the tip of {name})", commit.to_hex_with_len(7))
        } else {
            format!(
                "{} ({name}~{steps}, on its first-parent history)",
                commit.to_hex_with_len(7)
            )
        };
        TrustRoot {
            commit: Some(commit),
            description: format!("signers of .gitreceipts at {at}"),
            at,
        }
    };
    // chain.commits[i]: the branch's tip after i first-parent steps back, read
    // as needed and kept by the store, so that the commits of a range on the
    // branch itself are found in it without asking about ancestry at all (a
    // commit of the chain is its own root: the ones above it descend from it)
    let mut chain = store.first_parent_chain(tip);
    let known = known_root(store, rev, limit, &chain)?;
    if let Some(Some(at)) = known {
        // a position found through another read of the chain (the store keeps
        // one tip's): read this one as far
        store.extend_first_parents(&mut chain, at)?;
    }
    // mutants: `<` here is equivalent when mutated (`==`, `>`, `<=`): the chain
    // was just read down to `at` (positions come from the same tip's chain,
    // whose end lies below them), so `at < len` always holds, and a known
    // answer dropped is found again by the search. It guards the index below.
    let at = match known.filter(|at| at.is_none_or(|at| at < chain.commits().len())) {
        Some(at) => at,
        None => {
            let at = search_root(store, rev, &name, limit, &mut chain)?;
            store.remember_trust_root(tip, rev, limit, at);
            at
        }
    };
    Ok(match at {
        Some(at) => found(chain.commits()[at], at),
        None => TrustRoot {
            commit: None,
            description: format!(
                "{} shares no history with the first-parent history of {name}: only local keys (your key, receipt.trustedKey) are trusted",
                rev.to_hex_with_len(7)
            ),
            at: String::new(),
        },
    })
}

/// How deep the first-parent history of the default branch is searched for a
/// trust root: `receipt.walkLimit`.
fn root_walk_limit(store: &crate::store::Store) -> usize {
    match store.config_integer("receipt.walkLimit") {
        Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => crate::store::DEFAULT_WALK_LIMIT,
    }
}

/// Before the trust roots of a range of `commits` commits are asked for: read
/// the default branch's first-parent history that deep (at most the walk
/// limit), so that the commits of a range on the branch itself are found on it
/// and none costs an ancestry check. Costs what listing the range cost.
///
/// Only speed depends on it (`Ok(())` for its body is an equivalent mutant:
/// every root is then searched for, and found the same; the range test of
/// `trust::rules` compares each with a fresh store's).
pub fn prepare_range(store: &crate::store::Store, commits: usize) -> Result<(), TrustRootError> {
    if let Some((_, tip)) = default_branch(store)? {
        let mut chain = store.first_parent_chain(tip);
        let deepest = commits.min(root_walk_limit(store)).saturating_sub(1);
        store.extend_first_parents(&mut chain, deepest)?;
    }
    Ok(())
}

/// The trust root of `rev` as a position on `chain`, when it is known without
/// an ancestry check: `rev` is on the chain (its own root), the store found it
/// before, or every parent's is known. The ancestors of a commit are it and its
/// parents' ancestors, so a chain commit is an ancestor of `rev` (not on the
/// chain) exactly when it is one of a parent's, and the newest such is the
/// newest of the parents' roots (`Some(None)`: no shared history, when that is
/// every parent's answer). A range judged oldest first asks this for each
/// commit, and a merged side branch would otherwise cost an ancestry walk
/// (a merge base) for each of its commits at each step of the search.
///
/// mutants: `Ok(None)` for the body is equivalent (the search finds every
/// answer this knows; only speed differs, which the walk bench measures), and
/// so is `<=` for `<` against the bound: the chain is read at most `limit`
/// deep (positions 0 to `limit - 1`) for one limit per store.
fn known_root(
    store: &crate::store::Store,
    rev: gix::ObjectId,
    limit: usize,
    chain: &crate::store::query::FirstParentChain,
) -> Result<Option<Option<usize>>, TrustRootError> {
    let tip = chain.commits()[0];
    // a position past the bound is no answer: the search says how far it is
    let known = |c: gix::ObjectId| match chain.position(c).filter(|at| *at < limit) {
        Some(at) => Some(Some(at)),
        None => store.remembered_trust_root(tip, c, limit),
    };
    if let Some(at) = known(rev) {
        return Ok(Some(at));
    }
    // a shallow commit's parents are not here, and a root commit's answer
    // depends on how far the chain goes (no history in common, or too far)
    if store.is_shallow_commit(rev)? {
        return Ok(None);
    }
    let parents = store.cached_parents(rev)?;
    if parents.is_empty() {
        return Ok(None);
    }
    let mut newest: Option<usize> = None;
    for p in parents.iter() {
        match known(*p) {
            None => return Ok(None),
            Some(None) => {}
            Some(Some(at)) => newest = Some(newest.map_or(at, |n| n.min(at))),
        }
    }
    store.remember_trust_root(tip, rev, limit, newest);
    Ok(Some(newest))
}

/// Search `chain` (extended as needed, at most `limit` deep) for the newest
/// commit that is an ancestor of `rev`: its position, or `None` when the chain
/// ends at a root commit first (no shared history).
fn search_root(
    store: &crate::store::Store,
    rev: gix::ObjectId,
    name: &str,
    limit: usize,
    chain: &mut std::sync::Arc<crate::store::query::FirstParentChain>,
) -> Result<Option<usize>, TrustRootError> {
    let tip = chain.commits()[0];
    if store.is_ancestor(tip, rev)? {
        return Ok(Some(0));
    }
    let short = rev.to_hex_with_len(7).to_string();
    // gallop: steps 1, 2, 4, ... up to the limit, to the first that is an ancestor
    let (mut miss, mut step) = (0usize, 1usize);
    let hit = loop {
        let want = step.min(limit - 1);
        store.extend_first_parents(chain, want)?;
        // mutants: `None` for this position is equivalent but slow: the
        // ancestry checks below find the same commit; so is any mutation of
        // `*at < limit` (the chain is never read past `limit - 1`).
        if let Some(at) = chain.position(rev).filter(|at| *at < limit) {
            return Ok(Some(at));
        }
        let ended = chain.ended();
        let chain = chain.commits();
        let at = want.min(chain.len() - 1);
        // mutants: `>=` is equivalent: `at == miss` only where the chain ended at
        // the last miss (or at the tip), a commit already known not to be an
        // ancestor, and the chain's end returns just below.
        if at > miss && store.is_ancestor(chain[at], rev)? {
            break at;
        }
        if at < want || want == limit - 1 {
            // the chain ended, or the limit is reached, with no ancestor
            // mutants: both `if at < want` guards are equivalent to `true` (and `<`
            // to `<=`): `ended` is set only by an `extend_first_parents` that could not reach
            // `want`, so `at < want` whenever it is `Some`; they say why, not when.
            // `>` in the condition above is equivalent too, only slower: `at`
            // never exceeds `want`, so an ended chain gallops on (reading
            // nothing more) until `want` reaches the limit, and returns the same.
            return match ended {
                Some(false) if at < want => Ok(None),
                Some(true) if at < want => Err(TrustRootError::Shallow {
                    rev: short,
                    branch: name.to_owned(),
                    at: chain[at].to_hex_with_len(7).to_string(),
                }),
                _ => Err(TrustRootError::TooFar {
                    rev: short,
                    branch: name.to_owned(),
                    limit,
                }),
            };
        }
        miss = at;
        step = step.saturating_mul(2);
    };
    // bisect (miss, hit]: the first step whose commit is an ancestor of rev
    let chain = chain.commits();
    let (mut lo, mut hi) = (miss, hit);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if store.is_ancestor(chain[mid], rev)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(Some(hi))
}

fn split_field(line: &str) -> Option<(&str, &str)> {
    let (a, b) = line.split_once(char::is_whitespace)?;
    Some((a, b.trim_start()))
}

/// Split `a,b="x,y",c` on commas outside quotes.
fn split_options(options: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in options.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// What [`match_pattern_list`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatternMatch {
    /// No pattern matched.
    None,
    /// A pattern matched and no negated one did.
    Positive,
    /// A negated pattern (`!pat`) matched: this wins over every positive match.
    Negated,
}

/// OpenSSH's `match_pattern_list` (match.c), case-sensitive as `sshsig.c` calls it
/// for `namespaces=`: `list` is comma-separated patterns, each with `*` and `?`
/// wildcards and an optional leading `!`; a matching negated pattern refuses
/// whatever else matched. Nothing is trimmed: `" git-receipt"` does not match.
fn match_pattern_list(name: &str, list: &str) -> PatternMatch {
    let mut positive = false;
    for sub in list.split(',') {
        let (negated, pattern) = match sub.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, sub),
        };
        // OpenSSH copies each pattern into a 1024-byte buffer and gives up on a longer one
        if pattern.len() >= 1023 {
            return PatternMatch::None;
        }
        if namespace_matches(pattern, name) {
            if negated {
                return PatternMatch::Negated;
            }
            positive = true;
        }
    }
    if positive {
        PatternMatch::Positive
    } else {
        PatternMatch::None
    }
}

/// OpenSSH's `match_pattern`: `*` and `?` wildcards, bytewise, case-sensitive.
fn namespace_matches(pattern: &str, name: &str) -> bool {
    wildcard_match(pattern, name, true)
}

/// Whether `name` matches `pattern`, bytewise and case-sensitive, where each `*`
/// matches any run of bytes (`/` included) and, with `any_one`, each `?` any one
/// byte (else `?` is itself). Shared by OpenSSH's namespace patterns and the
/// server hook's protected-branch patterns.
pub fn wildcard_match(pattern: &str, name: &str, any_one: bool) -> bool {
    // Iterative, backtracking only to the last `*`: a file of `*a*a*a...` patterns
    // costs time linear in their length, not exponential.
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0, 0);
    let mut last_star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some(b'*') => {
                last_star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if (any_one && c == b'?') || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            // mutants: `sp * 1` for `sp + 1` below is equivalent: `pi` lands on the
            // `*` itself, whose arm stores the same star and steps past it; so is
            // `sn * 1` for `sn + 1`: the attempt at `sn` is made once more (and
            // fails as before), then every later start in the same order
            _ => match last_star {
                Some((sp, sn)) => {
                    last_star = Some((sp, sn + 1));
                    pi = sp + 1;
                    ni = sn + 1;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod rules;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_in_every_accepted_spelling() {
        let day = parse_signer_time("2026-01-31").unwrap();
        assert_eq!(parse_signer_time("20260131"), Some(day));
        assert_eq!(parse_signer_time("20260131Z"), Some(day));
        assert_eq!(
            crate::receipt::format_timestamp(day),
            "2026-01-31T00:00:00.000Z"
        );
        let t = parse_signer_time("2026-01-31T12:34:56Z").unwrap();
        assert_eq!(parse_signer_time("20260131123456"), Some(t));
        assert_eq!(timestamp_ms("2026-01-31T12:34:56.789Z"), Some(t + 789));
        assert_eq!(parse_signer_time("2026-13-01"), None);
        assert_eq!(parse_signer_time("yesterday"), None);
        // a millisecond field that overflows is no time, not a panic
        assert_eq!(
            timestamp_ms("2026-01-31T12:34:56.18446744073709551615Z"),
            None
        );
    }

    #[test]
    fn a_key_given_twice_is_held_to_both_entries_and_restrict_adds_no_key() {
        let k = crate::sign::SigningKey::from_seed(&[7; 32]);
        let other = crate::sign::SigningKey::from_seed(&[8; 32]);
        let at = |t: &str| parse_signer_time(t).unwrap();
        let entry = |after: Option<&str>, before: Option<&str>| Trusted {
            key: k.public().clone(),
            origin: TrustOrigin::Config,
            valid_after: after.map(at),
            valid_before: before.map(at),
            revoked: false,
        };
        let mut t = TrustSet::default();
        t.add(k.public().clone(), TrustOrigin::OwnKey);
        t.add_entry(entry(Some("2026-01-01"), Some("2027-01-01")));
        t.add_entry(entry(Some("2025-01-01"), Some("2026-06-01")));
        let e = t.lookup(&k.public().fingerprint()).unwrap();
        assert_eq!(e.origin, TrustOrigin::OwnKey, "the first origin is kept");
        assert_eq!(e.valid_after, Some(at("2026-01-01")));
        assert_eq!(e.valid_before, Some(at("2026-06-01")));

        let signer = |key: &crate::sign::SigningKey, revoked| crate::contract::SignerDef {
            name: "x".into(),
            key: key.public().clone(),
            valid_after: None,
            valid_before: None,
            revoked,
            observer: false,
        };
        let contract = Contract {
            signers: vec![signer(&k, true), signer(&other, false)],
            ..Contract::default()
        };
        t.restrict(&contract);
        assert!(t.lookup(&k.public().fingerprint()).unwrap().revoked);
        assert!(
            t.lookup(&other.public().fingerprint()).is_none(),
            "restrict never trusts a new key"
        );
    }

    #[test]
    fn keys_are_found_by_exactly_the_fingerprint_and_writer_ids_openssh_and_writers_spell() {
        let mut t = TrustSet::default();
        let keys: Vec<_> = (0..1000u16)
            .map(|i| {
                let mut seed = [3u8; 32];
                seed[..2].copy_from_slice(&i.to_le_bytes());
                crate::sign::SigningKey::from_seed(&seed)
            })
            .collect();
        t.add_contract(Contract {
            signers: keys
                .iter()
                .map(|k| crate::contract::SignerDef {
                    name: "x".into(),
                    key: k.public().clone(),
                    valid_after: None,
                    valid_before: None,
                    revoked: false,
                    observer: false,
                })
                .collect(),
            ..Contract::default()
        });
        assert_eq!(t.keys().len(), 1000);
        let k = keys[617].public();
        let fp = k.fingerprint();
        assert_eq!(t.lookup(&fp).unwrap().key, *k);
        let writer = crate::receipt::writer_id(k, "default");
        assert!(t.may_sign_as(&writer));
        let outsider = crate::sign::SigningKey::from_seed(&[4; 32]);
        assert!(t.lookup(&outsider.public().fingerprint()).is_none());
        assert!(!t.may_sign_as(&crate::receipt::writer_id(outsider.public(), "default")));
        // other spellings of the same digest name no key
        for spelling in [
            fp.replace("SHA256:", "sha256:"),
            fp.replace("SHA256:", ""),
            format!("{fp}="),
            format!("{fp} "),
            format!("{fp}A"),
            fp[..fp.len() - 1].to_owned(),
            // the last character carries 2 spare bits, which must be zero
            {
                let mut s = fp.clone();
                let last = s.pop().unwrap();
                let i = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                    .find(last)
                    .unwrap();
                s.push(
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".as_bytes()
                        [i ^ 1] as char,
                );
                s
            },
        ] {
            assert!(t.lookup(&spelling).is_none(), "{spelling:?}");
        }
        let (chain, suffix) = writer.rsplit_once('-').unwrap();
        for spelling in [
            format!("{chain}-{}", suffix.to_uppercase()),
            format!("{chain}-{}", &suffix[..31]),
            format!("{chain}-{suffix}0"),
            format!("{chain}{suffix}"),
        ] {
            assert!(!t.may_sign_as(&spelling), "{spelling:?}");
        }
    }

    #[test]
    fn pattern_lists_follow_openssh_match_pattern_list() {
        use PatternMatch::*;
        for (list, want) in [
            ("git-receipt", Positive),
            ("*", Positive),
            ("git-*", Positive),
            ("git-receip?", Positive),
            ("*,!git-receipt", Negated),
            ("!git-receipt,*", Negated),
            ("!other,*", Positive),
            ("!other", None),
            ("GIT-RECEIPT", None),
            (" git-receipt", None),
            ("git,file", None),
            ("", None),
            ("**git**receipt**", Positive),
            ("g*t*r*t", Positive),
            ("g*t*r*x", None),
        ] {
            assert_eq!(match_pattern_list("git-receipt", list), want, "{list:?}");
        }
        let hostile = "*a".repeat(5000);
        assert_eq!(match_pattern_list("git-receipt", &hostile), None);
        assert_eq!(
            match_pattern_list("aaaaaaaaaaa", &format!("{}b", "*a".repeat(400))),
            None
        );
    }

    #[test]
    fn allowed_signers_lines_parse_like_openssh() {
        let k = crate::sign::SigningKey::from_seed(&[7; 32]);
        let line = k.public().to_openssh();
        let mut t = TrustSet::default();
        let text = format!(
            "# comment\nci@example.org namespaces=\"git,git-receipt\",valid-after=\"20260101\",valid-before=\"20270101\" {line} ci key\nother namespaces=\"file\" {line}\n"
        );
        t.add_allowed_signers(&text, "allowed").unwrap();
        let e = t.lookup(&k.public().fingerprint()).unwrap();
        assert_eq!(
            e.origin,
            TrustOrigin::AllowedSigners("ci@example.org".into())
        );
        assert_eq!(e.valid_after, parse_signer_time("20260101"));
        assert!(
            e.refuses(parse_signer_time("20251231"))
                .unwrap()
                .contains("valid only after")
        );
        assert!(e.refuses(parse_signer_time("20260601")).is_none());
        assert!(
            e.refuses(parse_signer_time("20270101"))
                .unwrap()
                .contains("expired")
        );
        let mut only_file = TrustSet::default();
        only_file
            .add_allowed_signers(&format!("x namespaces=\"file\" {line}\n"), "a")
            .unwrap();
        assert!(
            only_file.keys().len() == 0,
            "a key not allowed in our namespace is not trusted"
        );
        assert!(
            TrustSet::default()
                .add_allowed_signers("x cert-authority ssh-ed25519 AAAA\n", "a")
                .is_err()
        );
    }
}
