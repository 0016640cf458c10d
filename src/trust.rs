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
