//! Whose keys count: the trust set of a reader, of a verifier and of the server,
//! each built here and nowhere else.
//!
//! A reader (`status`, plain `gate`, the pre-push hook) trusts its own key,
//! `receipt.trustedKey` and the signers at the trust root of the revision it
//! judges, held to the revocations at the default branch's tip. A verifier
//! (`verify --trust REV`, `gate --trust REV`) trusts exactly the signers at the
//! revision it names. The server trusts the signers at the trusted revision of
//! the protected branch it guards, and its own `receipt.trustedKey`.

use gix::ObjectId;

use super::PolicyError;
use super::contract::contract_at;
use crate::contract::Contract;
use crate::notice::Notice;
use crate::sign::PublicKey;
use crate::store::Store;
use crate::trust::{TrustOrigin, TrustRoot, TrustSet, default_branch, trust_root};

/// A trust set with what it is in words, and, for a reader's, the trust root it
/// was read from (what [`super::Baseline::TrustRoot`] holds a revision to).
#[derive(Debug, Clone)]
pub struct Trust {
    /// The keys that count.
    pub set: TrustSet,
    /// Whose keys they are, in words (for output: `trust` in `--json`).
    pub description: String,
    /// The trust root a reader's set was read from; `None` for a verifier's or
    /// the server's, whose trusted revision the baseline names.
    pub root: Option<ObjectId>,
}

impl Trust {
    /// A set given whole (a verifier's, the server's, or one a caller built).
    pub fn given(set: TrustSet, description: impl Into<String>) -> Trust {
        Trust {
            set,
            description: description.into(),
            root: None,
        }
    }
}

/// Add every `receipt.trustedKey` of the repository's config to `trust`; one that
/// is not a public key is an error (never silently fewer keys).
fn add_configured_keys(store: &Store, trust: &mut TrustSet) -> Result<(), PolicyError> {
    for line in store.config_strings("receipt.trustedKey") {
        let key = PublicKey::from_openssh(&line)
            .map_err(|source| PolicyError::TrustedKey { line, source })?;
        trust.add(key, TrustOrigin::Config);
    }
    Ok(())
}

/// The keys a reader accepts when judging `rev`: `own` (the reader's signing key,
/// when it has one), `receipt.trustedKey`, and the signers of `.gitreceipts` at
/// the trust root ([`trust_root`]: never those of `rev` itself nor of a commit
/// that was only ever inside a merged branch); held to the revocations and
/// validity windows at the default branch's tip, which apply at once, also to
/// branches forked before them (they only remove trust, so a change still cannot
/// trust itself). Fails closed when no trust root can be chosen.
pub fn reader_trust(
    store: &Store,
    rev: ObjectId,
    own: Option<PublicKey>,
) -> Result<(TrustSet, TrustRoot), PolicyError> {
    let mut trust = TrustSet::default();
    if let Some(key) = own {
        trust.add(key, TrustOrigin::OwnKey);
    }
    add_configured_keys(store, &mut trust)?;
    let root = trust_root(store, rev)?;
    if let Some(commit) = root.commit {
        trust.add_contract(contract_at(store, commit, &root.at)?);
    }
    if let Some((name, tip)) = default_branch(store)?
        && root.commit != Some(tip)
    {
        trust.restrict(&*contract_at(store, tip, &name)?);
    }
    Ok((trust, root))
}

/// [`reader_trust`] as a [`Trust`], its description the trust root's.
pub fn reader(store: &Store, rev: ObjectId, own: Option<PublicKey>) -> Result<Trust, PolicyError> {
    let (set, root) = reader_trust(store, rev, own)?;
    Ok(Trust {
        set,
        description: root.description,
        root: root.commit,
    })
}

/// A verifier's trust: exactly the signers of `.gitreceipts` at `commit` (named
/// `rev` in words), with a [`Notice`] (code `signer-key-unusable`) for each
/// signer whose key no receipt can verify under. A revision without a
/// `.gitreceipts` names no signers: [`PolicyError::NoSigners`].
pub fn verifier_at(
    store: &Store,
    commit: ObjectId,
    rev: &str,
) -> Result<(Trust, Vec<Notice>), PolicyError> {
    let Some(bytes) = store.file_at(commit, crate::contract::FILE_NAME)? else {
        return Err(PolicyError::NoSigners {
            rev: rev.to_owned(),
        });
    };
    let label = format!(".gitreceipts at {rev}");
    let contract = Contract::parse(&bytes, std::path::Path::new(&label))?;
    let notices = unusable_signers(&contract, &label);
    let mut set = TrustSet::default();
    set.add_contract(contract);
    Ok((
        Trust::given(set, format!("signers of .gitreceipts at {rev}")),
        notices,
    ))
}

/// A warning for each `[signer]` of `contract` (read from `label`) whose key is
/// not usable: no receipt can verify under it.
pub fn unusable_signers(contract: &Contract, label: &str) -> Vec<Notice> {
    contract
        .signers
        .iter()
        .filter_map(|s| {
            s.key.usable().err().map(|why| {
                Notice::warning(
                    "signer-key-unusable",
                    format!(
                        "signer {:?} in {label}: {why}; no receipt can verify under that key",
                        crate::text::escape(&s.name)
                    ),
                )
            })
        })
        .collect()
}

/// The signers the server trusts when judging an update of a protected branch:
/// those at the trusted revision `trusted` (named `label`), plus
/// `receipt.trustedKey` in the server's config.
pub fn server(store: &Store, trusted: ObjectId, label: &str) -> Result<Trust, PolicyError> {
    let mut set = TrustSet::default();
    set.add_contract(contract_at(store, trusted, label)?);
    add_configured_keys(store, &mut set)?;
    Ok(Trust::given(
        set,
        format!("signers of .gitreceipts at {label} and receipt.trustedKey"),
    ))
}

/// The keys a server knows, for chain entries that carry no `signer.pub`
/// (written before entries did): the signers at the tip of the branch HEAD names
/// and of every branch in `protected`, and `receipt.trustedKey`. They only check
/// a signature; trust is decided per protected branch by [`server`]. What cannot
/// be read adds nothing (a key it lacks refuses the entry, never admits one).
pub fn known_keys(store: &Store, protected: &[String]) -> TrustSet {
    let mut trust = TrustSet::default();
    let head = store.head_branch();
    for name in head.iter().chain(protected) {
        if let Some(tip) = store.ref_commit(name)
            && let Ok(c) = contract_at(store, tip, name)
        {
            trust.add_contract(c);
        }
    }
    for line in store.config_strings("receipt.trustedKey") {
        if let Ok(k) = PublicKey::from_openssh(&line) {
            trust.add(k, TrustOrigin::Config);
        }
    }
    trust
}

/// The distinct trusts (each with its baseline) a range is judged by, and for
/// each listed commit the index of its own.
pub type PerTrustRoot = (Vec<(Trust, super::Baseline)>, Vec<usize>);

/// The trust each commit of `listed` is judged by as a reader, as [`reader`]
/// gives it (the signers at the commit's trust root on the default branch's
/// first-parent history), computed once per distinct trust root rather than once
/// per commit: the distinct trusts, each with its baseline, and for each listed
/// commit the index of its own. With `verify`, a trust root's required checks
/// are required too (as `gate --verify` requires them).
///
/// A commit that the default branch cannot reach and that has one parent has the
/// trust root its parent has: it is not on the branch's history itself, and its
/// other ancestors are its parent's. So one `rev-list --parents` over `spec` (the
/// revisions listed) gives the commits that inherit, and a trust root is computed
/// only where a line of such commits starts, and for merges.
pub fn per_trust_root(
    store: &Store,
    spec: &str,
    listed: &[ObjectId],
    own: Option<PublicKey>,
    verify: bool,
) -> Result<PerTrustRoot, PolicyError> {
    use std::collections::HashMap;
    // the one parent of each listed commit the default branch does not reach
    let mut single_parent: HashMap<ObjectId, ObjectId> = HashMap::new();
    if let Some((_, tip)) = default_branch(store)? {
        let not_tip = format!("^{tip}");
        let out = store.run_git(&["rev-list", "--parents", spec, &not_tip, "--"])?;
        if out.ok {
            for line in out.stdout.lines() {
                let ids: Vec<ObjectId> = line
                    .split_whitespace()
                    .filter_map(|h| ObjectId::from_hex(h.as_bytes()).ok())
                    .collect();
                if let [c, p] = ids.as_slice() {
                    single_parent.insert(*c, *p);
                }
            }
        }
    }
    // Oldest first, the trust roots of the commits that do not inherit one:
    // the store keeps each (with the branch's first-parent chain as far as it
    // was read), so each commit's is then found from its parents' or on the
    // chain, and a range costs one search, not an ancestry check per commit
    // per step. This only warms the store: an error is met again, and
    // returned, by the same question in the loop below.
    crate::trust::prepare_range(store, listed.len())?;
    for commit in listed.iter().rev() {
        if !single_parent.contains_key(commit) {
            let _warm = crate::trust::trust_root(store, *commit);
        }
    }
    let mut roots: HashMap<ObjectId, Option<ObjectId>> = HashMap::new();
    let mut judging: Vec<(Trust, super::Baseline)> = Vec::new();
    let mut by_root: HashMap<Option<ObjectId>, usize> = HashMap::new();
    let mut judged_by = Vec::with_capacity(listed.len());
    for commit in listed {
        // down the single-parent line to a commit whose root is known or computable
        let mut line = vec![*commit];
        let mut at = *commit;
        let root = loop {
            if let Some(r) = roots.get(&at) {
                break *r;
            }
            match single_parent.get(&at) {
                Some(p) => {
                    at = *p;
                    line.push(at);
                }
                None => {
                    let (set, root) = reader_trust(store, at, own.clone())?;
                    roots.insert(at, root.commit);
                    if let std::collections::hash_map::Entry::Vacant(e) = by_root.entry(root.commit)
                    {
                        e.insert(judging.len());
                        let baseline = match root.commit {
                            Some(c) if verify => super::Baseline::At {
                                commit: c,
                                label: trust_root_label(c),
                            },
                            _ => super::Baseline::Own,
                        };
                        judging.push((Trust::given(set, root.description), baseline));
                    }
                    break root.commit;
                }
            }
        };
        for c in line {
            roots.insert(c, root);
        }
        judged_by.push(by_root[&root]);
    }
    Ok((judging, judged_by))
}

/// How the trust root `c` is named where its required checks are applied.
pub fn trust_root_label(c: ObjectId) -> String {
    format!(
        "{} (the trust root on the default branch's first-parent history)",
        c.to_hex_with_len(7)
    )
}
