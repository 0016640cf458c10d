//! Hints: the ways out that the CLI attaches to what the library says. The library
//! returns errors with structured fields and notices with a stable `code`, in words
//! without a `hint:`; the command line is the one place that knows which command to
//! suggest, so the `hint:` lines are written here (as jj's `CommandError { error,
//! hints }` does), keyed by notice code or by error type and variant.

use git_receipt::notice::{Level, Notice};
use git_receipt::text::escape;

/// How to make approvals of review `review` count on a commit whose author is
/// unknown (`self-approve = false` and no signature by a trusted key): words
/// after "no approval can count until ...", unescaped `review` escaped here.
pub(crate) fn sign_commits(review: &str) -> String {
    format!(
        "the author signs the commit with a key that is a [signer] of .gitreceipts (git config gpg.format ssh; git config user.signingKey <that key's file>; git config commit.gpgSign true; then git commit --amend --no-edit -S, or git rebase --exec 'git commit --amend --no-edit -S' <base> for several), or [review \"{}\"] sets self-approve = true",
        escape(review)
    )
}

/// The hint lines (each starting `hint: `) for notice `n`, by its code.
pub(crate) fn for_notice(n: &Notice) -> Vec<String> {
    let subject = || escape(n.subject.as_deref().unwrap_or_default());
    let hint = match n.code {
        "clock-skew-config" => format!("e.g. `git config {} 600`", subject()),
        "ref-missing-object" => return vec![missing_object(&subject())],
        "ref-skipped" => {
            "`git receipt verify` reports it; `git update-ref -d` with that name removes it"
                .to_owned()
        }
        "log-ref-not-written" | "notes-not-updated" => "run `git receipt reindex`".to_owned(),
        "note-corrupt" => "run `git receipt reindex` to rebuild notes from the chains".to_owned(),
        "chain-cut" => "a shallow fetch (--depth) cuts chains: fetch refs/receipts/* in full; `git receipt verify` reports the chain".to_owned(),
        "chain-merge" => "`git receipt verify` reports it; a server with `git receipt install-hooks --server` refuses such a push".to_owned(),
        "chain-rewritten" => "`git receipt verify --checkpoint FILE` tells a rollback from a legitimate update".to_owned(),
        "chain-entry-refused" => "`git receipt verify` says what is wrong; the writer's next `git receipt push` replaces them".to_owned(),
        "index-key-uncreatable" => format!(
            "make {} writable, or set XDG_CONFIG_HOME to a writable directory",
            subject()
        ),
        "index-key-unreadable" => "check its permissions".to_owned(),
        "index-key-unsettled" => "let one git-receipt run finish".to_owned(),
        "index-key-size" => format!(
            "delete it (`rm {}`); git-receipt makes a new one and rebuilds each index once",
            subject()
        ),
        "index-key-open" => format!("`chmod 600 {}`", subject()),
        "test-clock-unreadable" => {
            "it is a test hook: unset it, or give e.g. 2099-01-01T00:00:00Z".to_owned()
        }
        _ => return Vec::new(),
    };
    vec![format!("hint: {hint}")]
}

/// Notice `n` as stderr shows it: `git-receipt: warning: ...`, then its hints.
pub(crate) fn render_notice(n: &Notice) -> String {
    let level = match n.level {
        Level::Notice => "notice",
        Level::Warning => "warning",
    };
    // a message may quote a receipt, a ref or a contract (Notice::message): it is
    // made safe here, once for every notice (escaping is idempotent)
    let mut text = format!(
        "git-receipt: {level}: {}",
        git_receipt::text::escape_lines(&n.message)
    );
    for h in for_notice(n) {
        text.push('\n');
        text.push_str(&h);
    }
    text
}

/// The way out for a ref that names a missing object: back to its previous value,
/// or away, then rebuild what derives from it.
pub(crate) fn missing_object(refname: &str) -> String {
    format!(
        "hint: if a remote has this chain, take it back from there (`git fetch origin +{refname}:{refname}`); otherwise delete the broken chain with `git update-ref -d {refname}`; then run `git receipt reindex`"
    )
}

/// `.gitreceipts` over the size limit: what belongs in it.
const CONTRACT_TOO_LARGE: &str = "hint: .gitreceipts holds only checks, reviews and signers (a thousand signers is about 100 KB): remove what does not belong there, and commit that";

/// A contract that is not a regular file.
const CONTRACT_NOT_A_FILE: &str =
    "hint: replace it with a regular file that holds the contract, and commit that";

/// The way out of a shallow clone for the freshness walk.
const FETCH_MORE_HISTORY: &str = "hint: fetch more history with `git fetch --deepen=1000` (or `git fetch --unshallow`), and the receipts with `git receipt fetch`";

/// The way to a log too large to show: stream it from git, unchecked.
pub(crate) fn log_too_large(blob: &gix::ObjectId) -> String {
    format!(
        "hint: `git cat-file blob {blob} | less` streams it (not checked against the receipt's log_sha256; `git cat-file blob {blob} | sha256sum` checks it by hand)"
    )
}

/// The private key file to name in `ssh-add` hints.
fn key_file(key_file: &Option<std::path::PathBuf>) -> String {
    match key_file {
        Some(path) => path.display().to_string(),
        None => "<the private key file>".to_owned(),
    }
}

/// Error `e`'s message followed by its hint lines, as one text (for output that
/// shows an error in place, not through `report_error`).
pub(crate) fn with_hints(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    for h in for_chain(e) {
        text.push('\n');
        text.push_str(&h);
    }
    text
}

/// The hint lines of error `e` and of every error below it (its sources), in order.
pub(crate) fn for_chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut out = Vec::new();
    let mut next = Some(e);
    while let Some(e) = next {
        for h in for_error(e) {
            if !out.contains(&h) {
                out.push(h);
            }
        }
        next = e.source();
    }
    out
}

/// The hint lines for one error of a chain (as `report_error` walks it), by its
/// type and variant; empty for an error that carries none. Errors that wrap
/// another without making it their `source` (`#[error(transparent)]`, a field)
/// get the hints of the one they wrap.
pub(crate) fn for_error(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    use git_receipt::agent::AgentError;
    use git_receipt::clock::ClockError;
    use git_receipt::contract::ContractError;
    use git_receipt::environment::DependencyError;
    use git_receipt::freshness::FreshnessError;
    use git_receipt::keyfile::KeyfileError;
    use git_receipt::receipt::ReceiptError;
    use git_receipt::sign::KeyError;
    use git_receipt::store::StoreError;
    use git_receipt::store::notes::{CorruptNote, NoteTooLarge};
    use git_receipt::sync::{LogPolicyError, PushError};
    use git_receipt::trust::TrustRootError;

    let one = |h: &str| vec![h.to_owned()];
    if e.downcast_ref::<super::output::StdoutFailed>().is_some() {
        return one(
            "hint: free room where the output goes (or send it elsewhere), then run it again",
        );
    }
    // the policy's transparent wrappers hide the error they wrap from the chain
    if let Some(e) = e.downcast_ref::<git_receipt::policy::PolicyError>() {
        use git_receipt::policy::PolicyError;
        return match e {
            PolicyError::Store(inner) => for_error(inner),
            PolicyError::Contract(inner) => for_error(inner),
            PolicyError::Freshness(inner) => for_error(inner),
            PolicyError::TrustRoot(inner) => for_error(inner),
            _ => Vec::new(),
        };
    }
    if let Some(e) = e.downcast_ref::<git_receipt::retention::RetainError>() {
        use git_receipt::retention::RetainError;
        return match e {
            RetainError::Store(inner) => for_error(inner),
            RetainError::NothingProtected => vec![
                "hint: run it in the server's repository, or set receipt.protectedBranch to the branches whose receipts to keep".to_owned(),
            ],
            RetainError::Shallow => vec![
                "hint: run it in the server's repository, or `git fetch --unshallow` first".to_owned(),
            ],
            RetainError::Misconfigured(_) => vec![
                "hint: `git config --get-all receipt.protectedBranch` shows the values; each is a branch or a refs/heads/ pattern with *".to_owned(),
            ],
        };
    }
    if let Some(e) = e.downcast_ref::<git_receipt::store::checkout::CheckoutError>() {
        use git_receipt::store::checkout::CheckoutError;
        return match e {
            CheckoutError::Busy { pid, .. } if *pid > 0 => vec![format!(
                "hint: wait for it to end, or stop it (kill {pid}): it removes its checkout as it goes"
            )],
            CheckoutError::Busy { .. } => {
                one("hint: wait for it to end: it removes its checkout as it goes")
            }
            CheckoutError::Store(inner) => for_error(inner),
            CheckoutError::Io { .. } => Vec::new(),
        };
    }
    if let Some(e) = e.downcast_ref::<StoreError>() {
        return match e {
            StoreError::CompatObjectFormat { .. } => one(
                "hint: use git-receipt in a clone without extensions.compatObjectFormat (git clone makes one); git-receipt works in SHA-1 and SHA-256 repositories alike",
            ),
            StoreError::NotARepository { .. } => {
                one("hint: run this inside a git work tree, or `git init` one")
            }
            StoreError::CliConfig { .. } => one(
                "hint: give each as `git -c section.name=value receipt ...`, or unset GIT_CONFIG_PARAMETERS",
            ),
            StoreError::RefToMissingObject { refname, .. } => vec![missing_object(refname)],
            StoreError::ContractNotAFile { .. } => one(CONTRACT_NOT_A_FILE),
            StoreError::ContractTooLarge { .. } => one(CONTRACT_TOO_LARGE),
            StoreError::NoCommit => one("hint: make a first commit, then run the check again"),
            StoreError::BadRevision { rev, .. } => vec![format!(
                "hint: `git log --oneline` lists commits; `git rev-parse --verify {rev}^{{commit}}` checks a name"
            )],
            StoreError::ChainHoled { .. } => one(
                "hint: run it again once the gc is done (plain `git gc` is safe beside writers; `--prune=now` is not); if it says this with no gc running, `git receipt verify` reports the chain",
            ),
            StoreError::CorruptChain { .. } => {
                one("hint: run `git receipt verify` for a full report")
            }
            StoreError::NotYourTip {
                writer,
                tip,
                last_valid,
                ..
            } => {
                let chain = git_receipt::store::chain::chain_ref(writer);
                vec![
                    match last_valid {
                        Some(v) => format!(
                            "hint: your last valid receipt is chain commit {v}: `git update-ref {chain} {v} {tip}` goes back to it (what is above it is not yours), or `git receipt push` replaces it on the remote"
                        ),
                        None => format!(
                            "hint: nothing in it is a valid receipt of yours: `git update-ref -d {chain} {tip}` removes it"
                        ),
                    },
                    "hint: run `git receipt verify` for a full report".to_owned(),
                ]
            }
            StoreError::Contention { refname, .. } => vec![format!(
                "hint: try again; nothing was lost. If no git-receipt or git process is running, a killed one may have left {refname}.lock in the git directory: it is removed automatically once it is two minutes old, or remove it by hand"
            )],
            StoreError::RemoteTimedOut { .. } => one(
                "hint: check the network or the server and run it again; for a slow link raise the limit: git config receipt.networkTimeout 1800",
            ),
            StoreError::Clock(c) => for_error(c.as_ref()),
            StoreError::ObjectsPruned { .. } => one(
                "hint: run it again once the gc is done; `git gc --prune=now` (or `git prune`) deletes what writers are writing, so do not run it while receipts are written (plain `git gc` is safe)",
            ),
            StoreError::ObjectWrite { vanished: true, .. } => one(
                "hint: run it again; if a `git gc` or `git repack` loop is running, let it finish first",
            ),
            StoreError::ObjectWrite { .. } => one(
                "hint: check that the objects directory is writable and the disk has room, then run it again",
            ),
            StoreError::Harden { .. } => one(
                "hint: the disk reported an error while flushing; check it (`dmesg`, its free space), then run it again",
            ),
            _ => Vec::new(),
        };
    }
    if let Some(e) = e.downcast_ref::<ClockError>() {
        return match e {
            ClockError::BeforeEpoch { .. } => one(
                "hint: set the clock (e.g. `timedatectl set-ntp true`, or `date -s`), then run again",
            ),
            ClockError::BehindChain {
                previous_in_future, ..
            } => {
                let mut h = one(
                    "hint: if this clock is behind, set it (e.g. `timedatectl set-ntp true`), then run again",
                );
                if *previous_in_future {
                    h.push("hint: if the previous entry's date is the one that is wrong, readers already ignore it as dated in the future; continue on a new chain for this key: `git config receipt.chain <new-name>` (e.g. `git config receipt.chain fixed-clock`), then run again".to_owned());
                }
                h
            }
        };
    }
    if let Some(e) = e.downcast_ref::<AgentError>() {
        return match e {
            AgentError::NoSocket { key_file: k, .. } => vec![format!(
                "hint: start an agent and add the key: eval \"$(ssh-agent)\" && ssh-add {}",
                key_file(k)
            )],
            AgentError::Unreachable { .. } => one(
                "hint: is the agent running? `ssh-add -l` asks it; start one with eval \"$(ssh-agent)\"",
            ),
            AgentError::Protocol { .. } => {
                one("hint: `ssh-add -l` checks the agent; restart it if that fails too")
            }
            AgentError::TimedOut { .. } => one(
                "hint: check `ssh-add -l`: an agent that hangs there too needs a restart; a key added with `ssh-add -c` waits for your confirmation; a slower agent needs `git config receipt.agentTimeout <seconds>` (or GIT_RECEIPT_AGENT_TIMEOUT)",
            ),
            AgentError::BadTimeout { .. } => one(
                "hint: e.g. `git config receipt.agentTimeout 30` (how long to wait for ssh-agent)",
            ),
            AgentError::LacksKey { key_file: k, .. } => vec![format!(
                "hint: add it with `ssh-add {}` (`ssh-add -l` lists the keys the agent holds; a locked agent lists none until `ssh-add -X`)",
                key_file(k)
            )],
            AgentError::Refused { .. } => one(
                "hint: a key added with `ssh-add -c` needs your confirmation; a key on a token needs the token present",
            ),
            AgentError::BadSignature { .. } => {
                one("hint: `ssh-add -D` and add the key again, or restart the agent")
            }
        };
    }
    if let Some(e) = e.downcast_ref::<ReceiptError>() {
        return match e {
            ReceiptError::Signing(a) => for_error(a),
            _ => Vec::new(),
        };
    }
    if let Some(e) = e.downcast_ref::<KeyError>() {
        return match e {
            KeyError::Unreadable { .. } => {
                one("hint: check that it is a readable file and that the disk holding it answers")
            }
            _ => Vec::new(),
        };
    }
    if let Some(e) = e.downcast_ref::<KeyfileError>() {
        return match e {
            KeyfileError::NoHome => {
                one("hint: set GIT_RECEIPT_SIGNING_KEY to the path of an Ed25519 key")
            }
            _ => Vec::new(),
        };
    }
    if let Some(e) = e.downcast_ref::<ContractError>() {
        return match e {
            ContractError::Syntax { file, .. } => vec![format!(
                "hint: check it with `{}`",
                git_receipt::contract::syntax_check_command(file)
            )],
            ContractError::Invalid { hint, .. } => vec![format!("hint: {hint}")],
            ContractError::NotAFile { .. } => one(CONTRACT_NOT_A_FILE),
            ContractError::TooLarge { .. } => one(CONTRACT_TOO_LARGE),
            _ => Vec::new(),
        };
    }
    if let Some(e) = e.downcast_ref::<FreshnessError>() {
        return match e {
            FreshnessError::Shallow { .. } | FreshnessError::ShallowReview { .. } => {
                one(FETCH_MORE_HISTORY)
            }
            FreshnessError::ShallowUntrusted { check, .. } => vec![
                format!(
                    "hint: no deeper history makes an untrusted receipt count: trust the key that signed those of {} (`git receipt log` lists them): declare it (its owner's `git receipt key show`) as a [signer] in .gitreceipts on the default branch, or here with `git config --add receipt.trustedKey \"<that key>\"`",
                    escape(check)
                ),
                FETCH_MORE_HISTORY.to_owned(),
            ],
            FreshnessError::Dependency { error, .. } => for_error(error.as_ref()),
            FreshnessError::NoBaseline {
                check,
                baseline: Some(b),
                ..
            } => {
                let b = b.to_hex_with_len(7);
                vec![format!(
                    "hint: run it at the baseline, your work tree untouched: git receipt run {} {b}^..{b} (or fetch the receipts that have it: git receipt fetch)",
                    escape(check)
                )]
            }
            FreshnessError::NoBaseline { .. } => Vec::new(),
            FreshnessError::Store(s) => for_error(s),
            #[allow(unreachable_patterns)]
            _ => Vec::new(),
        };
    }
    if let Some(e) = e.downcast_ref::<DependencyError>() {
        return match e {
            DependencyError::Absent { name, .. } => vec![format!(
                "hint: clone it there (git-receipt never fetches it), or correct `path` in [dependency \"{name}\"]"
            )],
            DependencyError::BadRef { name, .. } => vec![format!(
                "hint: fetch it in that clone yourself, or correct `ref` in [dependency \"{name}\"]"
            )],
            _ => Vec::new(),
        };
    }
    if let Some(e) = e.downcast_ref::<TrustRootError>() {
        return match e {
            TrustRootError::TooFar { branch, .. } => vec![format!(
                "hint: merge or rebase {branch} into it, raise the limit (git config receipt.walkLimit N), or judge it against the branch it belongs to (--trust REV, or git config receipt.defaultBranch)"
            )],
            TrustRootError::Shallow { branch, .. } => vec![format!(
                "hint: fetch more of {branch}'s history: git fetch --deepen=100 (or --unshallow)"
            )],
            TrustRootError::Store(s) => for_error(s),
        };
    }
    if let Some(e) = e.downcast_ref::<PushError>() {
        return match e {
            PushError::Remote { hint, .. } => vec![format!("hint: {hint}")],
            PushError::TimedOut { .. } => vec![
                "hint: check the network or the server and run it again; for a slow link raise the limit: git config receipt.networkTimeout 1800".to_owned(),
                "hint: see git's message above".to_owned(),
            ],
            PushError::Refused { hint, .. } => hint.lines().map(|l| format!("hint: {l}")).collect(),
            PushError::Unstored { .. } => one(
                "hint: ask the server's admin to free space on it (or to let it write its repository), then run `git receipt push` again; receipt.pushReceipts would not help: the branch needs the same room",
            ),
            PushError::Contention { .. } => one("hint: try again"),
            PushError::KeyConflict {
                writer,
                remote,
                conflict,
            } => vec![
                "hint: a key names one result: record a new result under a new key".to_owned(),
                format!(
                    "hint: to keep the remote's result, take its chain (this clone's unpushed receipts leave your chain; run or record them again): git update-ref {} {}",
                    git_receipt::store::chain::chain_ref(writer),
                    git_receipt::store::remote::staged_chain_ref(remote, writer)
                ),
                format!(
                    "hint: `git receipt show {}` shows yours",
                    super::short_id(&conflict.ours.id)
                ),
            ],
            PushError::Store(s) => for_error(s),
        };
    }
    if let Some(e) = e.downcast_ref::<LogPolicyError>() {
        return match e {
            LogPolicyError::PushLogs(_) => one("hint: git config receipt.pushLogs all|failed|none"),
            LogPolicyError::PushLogLimit(_) => one("hint: e.g. git config receipt.pushLogLimit 4m"),
        };
    }
    if e.downcast_ref::<CorruptNote>().is_some() || e.downcast_ref::<NoteTooLarge>().is_some() {
        return one("hint: run `git receipt reindex` to rebuild notes from the chains");
    }
    Vec::new()
}

/// The hint for rows that read missing or stale in a clone whose receipt chains
/// start where a shallow fetch cut them (`git receipt fetch --since`): an older
/// receipt, on the remote and not here, may decide them (the server, with whole
/// chains, may judge them present), so running the check again is not the only
/// way out. `None` when no such row fails or the chains here are whole. A hint,
/// never a decision: the rows stay as judged.
pub(crate) fn cut_chains(
    store: &git_receipt::store::Store,
    failing: &[&git_receipt::freshness::CheckState],
) -> Option<String> {
    CutChains::default().hint(store, failing)
}

/// [`cut_chains`] for a command that judges many revisions (`gate A B C`, a
/// push of many refs): whether the chains here are cut ([`Store::chains_cut`]:
/// up to 256 listed commits read, a commit and a tree each) is asked once, at
/// the first revision with a row that reads missing or stale, and its answer
/// kept for the rest of the command (nothing the command does moves
/// `.git/shallow`).
///
/// [`Store::chains_cut`]: git_receipt::store::Store::chains_cut
#[derive(Default)]
pub(crate) struct CutChains(std::cell::OnceCell<bool>);

impl CutChains {
    /// [`cut_chains`], with the answer to whether the chains are cut kept.
    pub(crate) fn hint(
        &self,
        store: &git_receipt::store::Store,
        failing: &[&git_receipt::freshness::CheckState],
    ) -> Option<String> {
        use git_receipt::freshness::State;
        let names: Vec<String> = failing
            .iter()
            .filter(|s| matches!(s.state, State::Missing | State::Stale))
            .map(|s| escape(&s.name).into_owned())
            .collect();
        if names.is_empty() || !*self.0.get_or_init(|| store.chains_cut()) {
            return None;
        }
        Some(cut_hint(store, &names))
    }
}

/// The words of [`cut_chains`] for the rows `names` (escaped).
fn cut_hint(store: &git_receipt::store::Store, names: &[String]) -> String {
    // the remote a fetch takes by default, or the clone's one remote
    let remotes = store.remote_names();
    let remote = store
        .config_string("receipt.remote")
        .or_else(|| match remotes.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "origin".to_owned());
    format!(
        "hint: the receipt chains here start where `git receipt fetch --since` cut them: an older receipt, on {remote} and not fetched here, may decide {}; `git receipt fetch --unshallow {remote}` takes the rest of every chain",
        names.join(", "),
        remote = escape(&remote),
    )
}
