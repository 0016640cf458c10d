//! The command line: one file per subcommand, each an `XArgs` whose doc comment is
//! its `--help`, and a `cmd_x(&Context, XArgs)`. Commands never open the repository
//! or read config themselves; they ask the [`Context`].
//!
//! Exit codes: 0 all good; 1 the verdict is no (for `run`: the check's own exit
//! code); 2 could not decide (usage, I/O, corrupt repository).

mod checkpoint;
mod completions;
mod doctor;
mod env;
mod export;
mod fetch;
mod flaky;
mod gate;
mod hints;
mod hook;
mod init;
mod key;
mod log;
mod man;
mod mcp;
pub(crate) mod output;
mod prune_logs;
mod push;
mod record;
mod reindex;
mod report;
mod retain;
mod review;
mod run;
mod show;
mod status;
mod verify;
mod which;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};

use git_receipt::contract::Contract;
use git_receipt::keyfile::{self, KeySource};
use git_receipt::receipt::{is_valid_chain_name, writer_id};
use git_receipt::sign::SigningKey;
use git_receipt::store::Store;
use git_receipt::trust::{TrustRoot, TrustSet, trust_root};

/// Signed, hash-chained receipts that a check ran, stored in git.
///
/// `git receipt run test` runs the check `test` declared in `.gitreceipts` and
/// writes a signed receipt under refs/receipts/, noted on the commit it covers.
#[derive(Debug, Parser)]
#[command(
    name = "git-receipt",
    bin_name = "git receipt",
    version,
    max_term_width = 100
)]
pub struct Cli {
    /// Run as if started in this directory.
    #[arg(short = 'C', global = true, value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Run(run::RunArgs),
    Record(record::RecordArgs),
    Show(show::ShowArgs),
    Log(log::LogArgs),
    Flaky(flaky::FlakyArgs),
    Which(which::WhichArgs),
    Status(status::StatusArgs),
    Gate(gate::GateArgs),
    Review(review::ReviewArgs),
    AcceptRegression(review::AcceptRegressionArgs),
    Reindex(reindex::ReindexArgs),
    Init(init::InitArgs),
    Push(push::PushArgs),
    Fetch(fetch::FetchArgs),
    PruneLogs(prune_logs::PruneLogsArgs),
    Retain(retain::RetainArgs),
    InstallHooks(hook::InstallHooksArgs),
    UninstallHooks(hook::UninstallHooksArgs),
    Hook(hook::HookArgs),
    Verify(verify::VerifyArgs),
    Checkpoint(checkpoint::CheckpointArgs),
    Export(export::ExportArgs),
    Env(env::EnvArgs),
    Report(report::ReportArgs),
    Key(key::KeyArgs),
    Doctor(doctor::DoctorArgs),
    Completions(completions::CompletionsArgs),
    Man(man::ManArgs),
    Mcp(mcp::McpArgs),
}

impl Cli {
    /// The command line, parsed. `gate`, `status` and `hook` (what hooks and CI
    /// run, often many times a push) are parsed by a command holding only their
    /// own arguments: building every subcommand's definition is a tenth of a
    /// gate's time. Anything that parser does not take as it is (help, a usage
    /// error, another subcommand) goes to the whole parser, whose answer and
    /// messages are the only ones the user sees.
    pub fn parse_args() -> Cli {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        Cli::parse_hot(&args).unwrap_or_else(|| Cli::parse_from(args))
    }

    /// [`Cli::parse_args`]'s quick parse of `args`, or `None`.
    fn parse_hot(args: &[std::ffi::OsString]) -> Option<Cli> {
        use clap::{ArgMatches, Args, FromArgMatches as _};
        type Make = fn(&ArgMatches) -> Option<Command>;
        let name = args.get(1)?.to_str()?;
        let (sub, make): (clap::Command, Make) = match name {
            "gate" => (
                gate::GateArgs::augment_args(clap::Command::new("gate")),
                |m| gate::GateArgs::from_arg_matches(m).ok().map(Command::Gate),
            ),
            "status" => (
                status::StatusArgs::augment_args(clap::Command::new("status")),
                |m| {
                    status::StatusArgs::from_arg_matches(m)
                        .ok()
                        .map(Command::Status)
                },
            ),
            "hook" => (
                hook::HookArgs::augment_args(clap::Command::new("hook")),
                |m| hook::HookArgs::from_arg_matches(m).ok().map(Command::Hook),
            ),
            _ => return None,
        };
        // the top level's one argument (`-C`, as [`Cli`] declares it) and this
        // subcommand; no help or version flags, so those go to the whole parser
        let cmd = clap::Command::new("git-receipt")
            .disable_help_flag(true)
            .disable_version_flag(true)
            .disable_help_subcommand(true)
            .subcommand_required(true)
            .arg(
                clap::Arg::new("dir")
                    .short('C')
                    .global(true)
                    .value_name("DIR")
                    .value_parser(clap::value_parser!(PathBuf)),
            )
            .subcommand(sub.disable_help_flag(true));
        let matches = cmd.try_get_matches_from(args).ok()?;
        let (_, sub_matches) = matches.subcommand()?;
        let dir = matches.get_one::<PathBuf>("dir").cloned();
        let command = make(sub_matches)?;
        Some(Cli { dir, command })
    }
}

/// What every command may ask for.
pub struct Context {
    cwd: PathBuf,
    /// What the library had to say, from every store this command opened, until it
    /// is printed ([`Context::flush_notices`]).
    notices: std::sync::Arc<git_receipt::notice::Sink>,
}

impl Context {
    fn store(&self) -> Result<Store> {
        let mut store = Store::discover(&self.cwd)?;
        store.share_notices(self.notices.clone());
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            store.report_waiting(std::sync::Arc::new(output::show_waiting));
        }
        Ok(store)
    }

    /// Exactly the repository at `dir` (a temporary checkout of `run A..B`),
    /// reporting its notices with this command's.
    fn store_at(&self, dir: &std::path::Path) -> Result<Store> {
        let mut store = Store::open(dir)?;
        store.share_notices(self.notices.clone());
        Ok(store)
    }

    /// Print every notice kept so far on stderr, with its hints, and return them
    /// (for `--json`, which carries them too). A command calls it where it ends,
    /// and before anything long-running prints; [`dispatch`] prints what is left.
    fn flush_notices(&self) -> Vec<git_receipt::notice::Notice> {
        print_notices(self.notices.take())
    }

    fn contract(&self, store: &Store) -> Result<Contract> {
        Ok(Contract::load(store.workdir()?)?)
    }

    /// Where the signing key is: see [`keyfile::locate`]. git's own SSH signing key
    /// (`user.signingKey` with `gpg.format=ssh`) is used when nothing else names one.
    fn key_source(&self, store: Option<&Store>) -> Result<KeySource> {
        let config = |key: &str| store.and_then(|s| s.config_string(key));
        // how long ssh-agent may take to answer, should the key be there
        if let Some(text) = config("receipt.agentTimeout") {
            let timeout = git_receipt::agent::parse_timeout(&text).ok_or_else(|| {
                git_receipt::agent::AgentError::BadTimeout {
                    setting: "receipt.agentTimeout",
                    value: text.clone(),
                }
            })?;
            git_receipt::agent::set_timeout(timeout);
        }
        let git_ssh_key = config("user.signingKey").filter(|_| {
            config("gpg.format").is_some_and(|format| format.eq_ignore_ascii_case("ssh"))
        });
        Ok(keyfile::locate(config("receipt.signingKey"), git_ssh_key)?)
    }

    /// The signing key, created with a notice on first use.
    fn signing_key(&self, store: &Store) -> Result<SigningKey> {
        let source = self.key_source(Some(store))?;
        let (key, created) = keyfile::load_or_create(&source)?;
        if let Some(path) = keyfile::secret_file(&source, &key)
            && let Some(mode) = keyfile::open_to_others(&path)
        {
            eprintln!(
                "git-receipt: warning: the signing key {} is readable by others (mode {mode:04o}): anyone who can read it can sign receipts as you\nhint: chmod 600 {}",
                path.display(),
                path.display()
            );
        }
        if created {
            for line in exclude_own_chain(store, &self.writer(store, &key)?)? {
                eprintln!("git-receipt: {line}");
            }
            eprintln!(
                "git-receipt: created a new signing key at {} ({})\n\
                 git-receipt: its public key, for a [signer] in .gitreceipts or receipt.trustedKey:\n  {}",
                source.file().unwrap_or(std::path::Path::new("")).display(),
                key.public().fingerprint(),
                key.public().to_openssh()
            );
        }
        Ok(key)
    }

    /// The chain name: git config `receipt.chain`, default `default`.
    fn chain_name(&self, store: &Store) -> Result<String> {
        let chain = store
            .config_string("receipt.chain")
            .unwrap_or_else(|| "default".into());
        if !is_valid_chain_name(&chain) {
            anyhow::bail!(
                "receipt.chain = {chain:?} is not a valid chain name\nhint: use 1 to 32 of a-z, 0-9, '_' and '-', e.g. `git config receipt.chain laptop`"
            );
        }
        Ok(chain)
    }

    /// The writer id for a key in this repository.
    fn writer(&self, store: &Store, key: &SigningKey) -> Result<String> {
        Ok(writer_id(key.public(), &self.chain_name(store)?))
    }

    /// Keys this reader accepts when judging `rev`: its own, receipt.trustedKey, and
    /// the signers of `.gitreceipts` at the trust root (the newest commit on the
    /// default branch's first-parent history that `rev` descends from:
    /// [`trust_root`]), never those of `rev` itself nor of a commit that was only
    /// ever inside a merged branch; held to the revocations and validity windows
    /// at the default branch's tip. Fails closed when no trust root can be chosen.
    fn trust_for(&self, store: &Store, rev: gix::ObjectId) -> Result<(TrustSet, TrustRoot)> {
        let own = self.own_public_key(store)?;
        Ok(git_receipt::policy::trust::reader_trust(store, rev, own)?)
    }

    /// The public half of this reader's signing key, whose receipts it trusts:
    /// `None` when it has none. No key is no key; a key that is there but cannot
    /// be read is an error, never a verdict (every receipt of yours would read
    /// "untrusted").
    fn own_public_key(&self, store: &Store) -> Result<Option<git_receipt::sign::PublicKey>> {
        let mut own = None;
        if let Ok(source) = self.key_source(Some(store)) {
            match keyfile::public_half(&source) {
                Ok(key) => own = Some(key),
                Err(keyfile::KeyfileError::Key {
                    source: git_receipt::sign::KeyError::NotFound { .. },
                    ..
                }) => {}
                Err(
                    e @ keyfile::KeyfileError::Key {
                        source: git_receipt::sign::KeyError::Unreadable { .. },
                        ..
                    },
                ) => {
                    return Err(anyhow::Error::new(e)
                        .context("could not read your signing key, whose receipts you trust"));
                }
                Err(_) => {}
            }
        }
        Ok(own)
    }

    /// The trust set for judging HEAD (or nothing but local keys without a commit).
    fn trust(&self, store: &Store) -> Result<TrustSet> {
        match store.head() {
            Ok((head, _)) => Ok(self.trust_for(store, head)?.0),
            // no commit yet: no history to trust anyone by
            Err(git_receipt::store::StoreError::NoCommit) => Ok(TrustSet::default()),
            Err(e) => Err(e.into()),
        }
    }
}

/// The fetch refspec that brings every chain, fast-forward only (never forced).
pub(crate) const CHAIN_REFSPEC: &str = "refs/receipts/*:refs/receipts/*";
/// The fetch refspec that brings every notes index (derived, so forced).
pub(crate) const NOTES_REFSPEC: &str = "+refs/notes/receipts/*:refs/notes/receipts/*";

/// Every value of multi-valued git config `key` as git has it now. Read through
/// git, not the config snapshot taken when the repository was opened: that one
/// does not see what `git config --add` wrote since (init adds the receipt
/// refspecs and then excludes your own chain from them, in one process).
pub(crate) fn current_config_values(store: &Store, key: &str) -> Result<Vec<String>> {
    let out = store.run_git(&["config", "--get-all", key])?;
    // exit 1: the key is not set
    Ok(if out.ok {
        out.stdout.lines().map(str::to_owned).collect()
    } else {
        Vec::new()
    })
}

/// Add `value` to multi-valued git config `key` unless present; true if added.
pub(crate) fn add_config(store: &Store, key: &str, value: &str) -> Result<bool> {
    if current_config_values(store, key)?
        .iter()
        .any(|v| v == value)
    {
        return Ok(false);
    }
    let out = store.run_git(&["config", "--add", key, value])?;
    if !out.ok {
        anyhow::bail!("git config --add {key} {value}: {}", out.stderr);
    }
    Ok(true)
}

/// The push refspecs that let a bare `git push` carry the current branch and
/// `writer`'s chain and notes in one push (one connection, one run of the
/// server's hook), for those who opt in with `receipt.pushRefspecs = true`. Globs,
/// so a clone that has no receipt yet pushes nothing extra rather than failing on
/// a missing source ref; no other writer id starts with `writer` (the fingerprint
/// part has a fixed length). The chain is never forced (append-only); the notes
/// are derived, so they are. Not the default: any push refspec makes git ignore
/// `push.default` (`HEAD` pushes the branch to its own name, not its upstream,
/// and fails on a detached HEAD).
pub(crate) fn own_push_refspecs(writer: &str) -> [String; 3] {
    [
        "HEAD".to_owned(),
        format!("refs/receipts/{writer}*:refs/receipts/{writer}*"),
        format!("+refs/notes/receipts/{writer}*:refs/notes/receipts/{writer}*"),
    ]
}

/// Wire `writer`'s own chain into every remote that fetches receipt refs:
///
/// - exclude it from plain fetches, so `git fetch` never tries to rewind the
///   chain only this clone writes;
/// - only when `receipt.pushRefspecs` is true, and the remote has no push
///   refspecs of its own (left alone, with a hint), add [`own_push_refspecs`], so
///   a bare `git push` sends branch and receipts together. Otherwise git's
///   `push.default` decides where a bare `git push` goes, as without
///   git-receipt, and the pre-push hook sends the receipts in a push of its own;
///   the refspecs an earlier `init` added by default are taken out again.
///
/// Returns the config lines changed; hints go to stderr.
pub(crate) fn exclude_own_chain(store: &Store, writer: &str) -> Result<Vec<String>> {
    let mut added = Vec::new();
    // through git, not the snapshot: `init --push-refspecs` has just set it
    let push_refspecs = store
        .run_git(&["config", "--type=bool", "--get", "receipt.pushRefspecs"])?
        .stdout
        .trim()
        == "true";
    for remote in store.remote_names() {
        let key = format!("remote.{remote}.fetch");
        if !current_config_values(store, &key)?
            .iter()
            .any(|v| v == CHAIN_REFSPEC)
        {
            continue;
        }
        for spec in [
            format!("^refs/receipts/{writer}"),
            format!("^refs/notes/receipts/{writer}"),
        ] {
            if add_config(store, &key, &spec)? {
                added.push(format!("{key} += {spec}"));
            }
        }
        let push_key = format!("remote.{remote}.push");
        let existing = current_config_values(store, &push_key)?;
        let ours = own_push_refspecs(writer);
        if !push_refspecs {
            // an earlier init's default: `HEAD` with this chain's two globs
            if existing.iter().any(|v| *v == ours[1]) {
                for spec in &ours {
                    if existing.contains(spec) {
                        let out = store.run_git(&[
                            "config",
                            "--fixed-value",
                            "--unset-all",
                            &push_key,
                            spec,
                        ])?;
                        if !out.ok {
                            anyhow::bail!(
                                "git config --fixed-value --unset-all {push_key} {spec}: {}",
                                out.stderr
                            );
                        }
                        added.push(format!(
                            "{push_key} -= {spec} (push.default decides where `git push` goes; the pre-push hook sends the receipts)"
                        ));
                    }
                }
            }
            continue;
        }
        if !existing.is_empty() && !existing.iter().any(|v| *v == ours[1]) {
            eprintln!(
                "git-receipt: {push_key} is set already, so it was left alone: a hooked `git push` sends your receipts in a push of its own first
                 hint: to send them in git's own push: git config --add {push_key} '{}' && git config --add {push_key} '{}'",
                ours[1], ours[2]
            );
            continue;
        }
        for spec in ours {
            if add_config(store, &push_key, &spec)? {
                added.push(format!("{push_key} += {spec}"));
            }
        }
    }
    Ok(added)
}

/// Run the parsed command.
pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    let cwd = match cli.dir {
        Some(d) if !d.is_dir() => anyhow::bail!(
            "cannot change to {}: {}\nhint: -C takes an existing directory inside a git work tree",
            d.display(),
            if d.exists() {
                "not a directory"
            } else {
                "no such directory"
            }
        ),
        Some(d) => d,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let ctx = Context {
        cwd,
        notices: Default::default(),
    };
    if !matches!(
        cli.command,
        Command::Run(_) | Command::Record(_) | Command::Mcp(_)
    ) {
        restore_default_sigpipe();
    }
    let result = match cli.command {
        Command::Run(a) => run::cmd_run(&ctx, a),
        Command::Record(a) => record::cmd_record(&ctx, a),
        Command::Show(a) => show::cmd_show(&ctx, a),
        Command::Log(a) => log::cmd_log(&ctx, a),
        Command::Flaky(a) => flaky::cmd_flaky(&ctx, a),
        Command::Which(a) => which::cmd_which(&ctx, a),
        Command::Status(a) => status::cmd_status(&ctx, a),
        Command::Env(a) => env::cmd_env(&ctx, a),
        Command::Gate(a) => gate::cmd_gate(&ctx, a),
        Command::Review(a) => review::cmd_review(&ctx, a),
        Command::AcceptRegression(a) => review::cmd_accept_regression(&ctx, a),
        Command::Reindex(a) => reindex::cmd_reindex(&ctx, a),
        Command::Init(a) => init::cmd_init(&ctx, a),
        Command::Push(a) => push::cmd_push(&ctx, a),
        Command::Fetch(a) => fetch::cmd_fetch(&ctx, a),
        Command::PruneLogs(a) => prune_logs::cmd_prune_logs(&ctx, a),
        Command::Retain(a) => retain::cmd_retain(&ctx, a),
        Command::InstallHooks(a) => hook::cmd_install_hooks(&ctx, a),
        Command::UninstallHooks(a) => hook::cmd_uninstall_hooks(&ctx, a),
        Command::Hook(a) => hook::cmd_hook(&ctx, a),
        Command::Verify(a) => verify::cmd_verify(&ctx, a),
        Command::Checkpoint(a) => checkpoint::cmd_checkpoint(&ctx, a),
        Command::Export(a) => export::cmd_export(&ctx, a),
        Command::Report(a) => report::cmd_report(&ctx, a),
        Command::Key(a) => key::cmd_key(&ctx, a),
        Command::Man(a) => man::cmd_man(a),
        Command::Doctor(a) => doctor::cmd_doctor(&ctx, a),
        Command::Completions(a) => completions::cmd_completions(a),
        Command::Mcp(a) => mcp::cmd_mcp(&ctx, a),
    };
    ctx.flush_notices();
    result
}

/// Reading commands die quietly on a closed pipe (`git receipt log | head`), like
/// git. `run` and `record` keep Rust's default of ignoring SIGPIPE: a reader that
/// goes away must never cost a check its receipt; so does `mcp`, which waits for
/// the check it runs before it notices that its client has gone.
fn restore_default_sigpipe() {
    // SAFETY: called before any other thread exists; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Print an error chain: the message, then each cause on its own line.
pub fn report_error(e: &anyhow::Error) {
    let mut text = format!("git-receipt: error: {e}");
    // the hints of each error follow its own line, where its message ended when
    // the library still wrote them into it
    let mut hints = hints::for_error(e.as_ref());
    for cause in e.chain().skip(1) {
        // Many errors already quote their cause in their own message; say it once.
        let words = cause.to_string();
        if !text.contains(&words) {
            push_hints(&mut text, hints.drain(..));
            text.push_str(&format!("\n  caused by: {words}"));
        }
        hints.extend(hints::for_error(cause));
    }
    push_hints(&mut text, hints);
    // errors quote what they could not parse, which may be someone else's bytes
    eprintln!("{}", git_receipt::text::escape_lines(&text));
}

/// Print what `store` (and every store of its command, which share one list) had
/// to say so far: for code that holds a store but no [`Context`], before it
/// starts something long-running that prints.
fn flush_store_notices(store: &Store) -> Vec<git_receipt::notice::Notice> {
    print_notices(store.take_notices())
}

/// Print `notices`, and those of code that holds no store, on stderr with their
/// hints; return them all.
fn print_notices(notices: Vec<git_receipt::notice::Notice>) -> Vec<git_receipt::notice::Notice> {
    let mut all = git_receipt::notice::process().take();
    all.extend(notices);
    for n in &all {
        eprintln!("{}", hints::render_notice(n));
    }
    all
}

/// The words of `notices`, for the `notices` of `status --json` and `gate --json`,
/// which list as strings what a reader should see about the answer. Left out: what
/// the receipt index says about itself (rebuilt, its key, a chain that moved since
/// it was last indexed), which depends on the state of a cache, not of the
/// repository, so the same question would get different JSON from one run to the
/// next; stderr and `verify --json` still carry those.
fn notice_words(notices: &[git_receipt::notice::Notice]) -> Vec<String> {
    notices
        .iter()
        .filter(|n| !n.code.starts_with("index-") && n.code != "chain-rewritten")
        .map(|n| n.message.clone())
        .collect()
}

/// Append each hint on its own line, once (an error and the one it wraps may
/// have the same way out).
fn push_hints(text: &mut String, hints: impl IntoIterator<Item = String>) {
    for h in hints {
        if !text.contains(&h) {
            text.push('\n');
            text.push_str(&h);
        }
    }
}

/// Whether to use colour on stderr/stdout.
fn colour(stream_is_tty: bool) -> bool {
    stream_is_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn paint(on: bool, code: &str, text: &str) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// The first 19 characters of a receipt id (`sha256:` and 12 digits); never
/// splits a character, whatever the id holds.
fn short_id(id: &str) -> &str {
    match id.char_indices().nth(19) {
        Some((end, _)) => &id[..end],
        None => id,
    }
}

/// The names signers have in a trusted revision's `.gitreceipts`, so that output
/// can say `ada` where it would say `default-8ef8f6cb...`. A branch that declares
/// a signer for a key of its own does not get to name it.
#[derive(Debug, Default)]
pub(crate) struct SignerNames {
    /// The first 16 bytes of each signer key's fingerprint digest, in hex, and the name.
    by_suffix: std::collections::HashMap<String, String>,
    /// Each signer key's fingerprint (`SHA256:...`) and the name.
    by_fingerprint: std::collections::HashMap<String, String>,
}

impl SignerNames {
    /// The names of the `[signer]` entries of `contract`, a trusted revision's.
    pub(crate) fn of(contract: &Contract) -> SignerNames {
        let mut names = SignerNames::default();
        for signer in &contract.signers {
            let suffix = hex::encode(&signer.key.fingerprint_digest()[..16]);
            // the first signer of a key names it
            names
                .by_suffix
                .entry(suffix)
                .or_insert_with(|| signer.name.clone());
            names
                .by_fingerprint
                .entry(signer.key.fingerprint())
                .or_insert_with(|| signer.name.clone());
        }
        names
    }

    /// `ada (default-8ef8...)` for a chain of signer ada's key, else the writer
    /// id: for output that must show the id (what refs and `show` take) too.
    pub(crate) fn label_with_id(&self, writer: &str) -> String {
        match self.name_of(writer) {
            Some(name) => format!("{name} ({writer})"),
            None => writer.to_owned(),
        }
    }

    /// The signer's name for a receipt signed by key `fingerprint` on chain
    /// `writer`: only when that key is the signer's and the chain is its own
    /// (a chain named after a signer's key but signed by another key gets none).
    pub(crate) fn name_of_signed(&self, writer: &str, fingerprint: &str) -> Option<&str> {
        let by_key = self.by_fingerprint.get(fingerprint)?;
        (self.name_of(writer) == Some(by_key.as_str())).then_some(by_key.as_str())
    }

    /// The signer's name for writer id `writer`, when a trusted `[signer]` key wrote it.
    pub(crate) fn name_of(&self, writer: &str) -> Option<&str> {
        let (_, suffix) = writer.rsplit_once('-')?;
        self.by_suffix.get(suffix).map(String::as_str)
    }

    /// `ada` for ada's default chain, `ada (chain ci)` for another, else the writer id.
    pub(crate) fn label(&self, writer: &str) -> String {
        match (self.name_of(writer), writer.rsplit_once('-')) {
            (Some(name), Some(("default", _))) => name.to_owned(),
            (Some(name), Some((chain, _))) => format!("{name} (chain {chain})"),
            _ => writer.to_owned(),
        }
    }
}

/// [`SignerNames`] of `.gitreceipts` at HEAD's trust root (the commit of the
/// default branch's first-parent history whose signers HEAD is judged by); none
/// when there is none (names are for display only).
pub(crate) fn signer_names(store: &Store) -> SignerNames {
    let Ok((head, _)) = store.head() else {
        return SignerNames::default();
    };
    let Some(root) = trust_root(store, head).ok().and_then(|r| r.commit) else {
        return SignerNames::default();
    };
    status::contract_at(store, root, "the trust root")
        .map(|c| SignerNames::of(&c))
        .unwrap_or_default()
}

/// `n` and the noun for it: `1 chain`, `2 chains`, `0 chains`.
fn plural(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

fn human_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.2}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, ms % 60_000 / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick parse answers exactly what the whole parser answers, or leaves
    /// the command line to it.
    #[test]
    fn the_quick_parse_agrees_with_the_whole_parser() {
        let cases: &[&[&str]] = &[
            &["gate"],
            &["gate", "HEAD"],
            &["gate", "--json", "HEAD~2", "HEAD"],
            &["gate", "--trust", "origin/main", "--verify", "HEAD"],
            &["gate", "--require", "test", "--require", "lint", "main"],
            &["gate", "-C", "/tmp", "HEAD"],
            &["gate", "--accepted-by", "ci"],
            &["status"],
            &["status", "--json", "HEAD~1"],
            &["status", "-C", "/", "--json"],
            &["hook", "pre-push", "origin", "url"],
            &["hook", "pre-receive"],
            &["hook", "commit-msg"],
            &["gate", "--help"],
            &["gate", "-h"],
            &["gate", "--version"],
            &["gate", "--no-such-flag"],
            &["status", "--trust"],
            &["hook"],
            &["gate", "--json=maybe"],
            &["-C", "/tmp", "gate"],
            &["run", "test"],
            &["help", "gate"],
        ];
        let (mut quick, mut whole) = (0, 0);
        for case in cases {
            let argv: Vec<std::ffi::OsString> = std::iter::once("git-receipt")
                .chain(case.iter().copied())
                .map(Into::into)
                .collect();
            let full = Cli::try_parse_from(&argv).map(|c| format!("{c:?}"));
            match Cli::parse_hot(&argv) {
                Some(hot) => {
                    quick += 1;
                    assert_eq!(
                        Ok(format!("{hot:?}")),
                        full.map_err(|e| e.to_string()),
                        "{case:?}"
                    );
                }
                None => whole += 1,
            }
        }
        assert!(quick >= 10 && whole >= 6, "{quick} {whole}");
    }
}
