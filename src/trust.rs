//! The set of public keys a reader accepts, and where each came from.

use crate::contract::Contract;
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
}

/// One trusted key.
#[derive(Debug, Clone)]
pub struct Trusted {
    /// The key.
    pub key: PublicKey,
    /// Why it is trusted.
    pub origin: TrustOrigin,
}

/// The keys a reader accepts.
#[derive(Debug, Clone, Default)]
pub struct TrustSet {
    keys: Vec<Trusted>,
}

impl TrustSet {
    /// Add a key (duplicates keep the first origin).
    pub fn add(&mut self, key: PublicKey, origin: TrustOrigin) {
        if !self.keys.iter().any(|t| t.key == key) {
            self.keys.push(Trusted { key, origin });
        }
    }

    /// Add every signer of a contract.
    pub fn add_contract(&mut self, contract: &Contract) {
        for s in &contract.signers {
            self.add(s.key.clone(), TrustOrigin::Contract(s.name.clone()));
        }
    }

    /// The trusted key with this OpenSSH fingerprint.
    pub fn lookup(&self, fingerprint: &str) -> Option<&Trusted> {
        self.keys
            .iter()
            .find(|t| t.key.fingerprint() == fingerprint)
    }

    /// All keys.
    pub fn keys(&self) -> &[Trusted] {
        &self.keys
    }
}

impl std::fmt::Display for TrustOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrustOrigin::OwnKey => write!(f, "your key"),
            TrustOrigin::Contract(name) => write!(f, "signer {name:?} in .gitreceipts"),
            TrustOrigin::Config => write!(f, "receipt.trustedKey"),
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
}

/// The default branch: `receipt.defaultBranch`, else what `origin/HEAD` names, else
/// `init.defaultBranch`, `main` or `master`, whichever exists first.
pub fn default_branch(store: &crate::store::Store) -> Option<(String, gix::ObjectId)> {
    let repo = store.repo();
    let resolve = |name: &str| -> Option<(String, gix::ObjectId)> {
        let mut r = repo.try_find_reference(name).ok()??;
        let id = r.peel_to_id().ok()?.detach();
        Some((r.name().as_bstr().to_string(), id))
    };
    if let Some(b) = store.config_string("receipt.defaultBranch") {
        return resolve(&b);
    }
    if let Some(found) = resolve("refs/remotes/origin/HEAD") {
        return Some(found);
    }
    let mut candidates = Vec::new();
    if let Some(b) = store.config_string("init.defaultBranch") {
        candidates.push(format!("refs/heads/{b}"));
    }
    candidates.extend(["refs/heads/main".to_owned(), "refs/heads/master".to_owned()]);
    candidates.iter().find_map(|c| resolve(c))
}

/// Choose the trust root for judging `rev`: its merge base with the default branch,
/// so that a change cannot make its own signers trusted.
pub fn trust_root(store: &crate::store::Store, rev: gix::ObjectId) -> TrustRoot {
    match default_branch(store) {
        Some((name, tip)) => match store.repo().merge_base(rev, tip) {
            Ok(Some(base)) => TrustRoot {
                commit: Some(base.detach()),
                description: format!(
                    "signers of .gitreceipts at {} (merge base with {name})",
                    base.detach().to_hex_with_len(7)
                ),
            },
            _ => TrustRoot {
                commit: None,
                description: format!(
                    "no merge base with {name}: only your key and receipt.trustedKey are trusted"
                ),
            },
        },
        None => TrustRoot {
            commit: None,
            description: "no default branch found (set receipt.defaultBranch): only your key and receipt.trustedKey are trusted".into(),
        },
    }
}
