//! `git receipt mcp`: a Model Context Protocol server on stdio, so that a coding
//! agent asks for typed results (did `test` pass, for which tree, with which
//! receipt) instead of scraping logs or saying "tests passed" without proof.
//!
//! Every tool runs this same binary as a subprocess with `--json` and returns what
//! it printed, so a tool's result is the CLI's JSON by construction, not a second
//! rendering of it. It also means that one call's failure cannot end the session,
//! and that nothing but the protocol ever reaches our stdout. Only this subcommand
//! starts a (single-threaded) tokio runtime; the subprocesses are waited for on
//! blocking threads, and the rest of the binary stays synchronous.
//!
//! Arguments that do not fit a tool's schema, and commands that cannot decide
//! (exit 2), are tool errors (`isError`) carrying the CLI's message and hints; the
//! server keeps serving. A verdict is data: a failing check or a gate that says no
//! is a normal result.

use std::borrow::Cow;
use std::io::{BufRead, BufReader, IsTerminal, Read};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Args;
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::schemars::JsonSchema;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{Value, json};

use git_receipt::store::Store;

use super::Context;

/// Largest log excerpt one `log` call returns (1 MiB).
const MAX_LOG_BYTES: u32 = 1 << 20;
/// Log excerpt of a `log` call that does not say (16 KiB).
const DEFAULT_LOG_BYTES: u32 = 16 << 10;
/// Log tail returned with a `run` result.
const RUN_LOG_TAIL_BYTES: u32 = 4 << 10;
/// Most output lines one progress notification quotes (the last of its batch).
const PROGRESS_LINES: usize = 20;
/// Longest output line quoted in a progress notification.
const PROGRESS_LINE_CHARS: usize = 200;

/// Serve git-receipt to a coding agent over the Model Context Protocol (stdio)
///
/// Tools: `status` (a revision, a range or the work tree), `run` (a declared check,
/// with progress notifications while it runs; returns the receipt id, state and log
/// tail), `show` (receipts of a revision, or one by id), `gate` (are the required
/// checks present) and `log` (a receipt's output, bounded). Results are the JSON of
/// the matching subcommand's --json. `run` refuses ad hoc commands unless the
/// server was started with --allow-adhoc, so an agent can only run what
/// .gitreceipts declares. The server works in the repository it is started in
/// (or -C DIR); the MCP client starts it and talks to it on stdin and stdout.
///
/// Examples:
///
///     git receipt mcp
///     git receipt -C ~/src/project mcp --allow-adhoc
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct McpArgs {
    /// Let the `run` tool run ad hoc commands, not only checks declared in .gitreceipts.
    #[arg(long)]
    pub allow_adhoc: bool,
}

/// Serve until the client closes stdin.
pub fn cmd_mcp(ctx: &Context, args: McpArgs) -> Result<ExitCode> {
    // fail before serving when there is no repository to serve
    let store = ctx.store()?;
    let dir = store.workdir().unwrap_or(store.git_dir()).to_owned();
    let server = Server {
        exe: std::env::current_exe().context("cannot find the git-receipt executable")?,
        dir,
        allow_adhoc: args.allow_adhoc,
        run_turn: Arc::default(),
    };
    if std::io::stdin().is_terminal() {
        eprintln!(
            "git-receipt: serving the Model Context Protocol on stdin and stdout; an MCP client (a coding agent) starts this, see README\nhint: Ctrl-D ends it"
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    runtime.block_on(async {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .context("the MCP client did not complete the handshake")?;
        service.waiting().await.context("serving MCP on stdio")?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The server: which binary to run, in which repository, with what leave.
#[derive(Debug, Clone)]
struct Server {
    exe: PathBuf,
    dir: PathBuf,
    allow_adhoc: bool,
    /// Held through each `run`: its receipt is the one its run appended, found by
    /// comparing the chains' tips before and after, so this server's runs take turns.
    run_turn: Arc<tokio::sync::Mutex<()>>,
}

/// Arguments of `status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
struct StatusParams {
    /// A revision (HEAD, main, a commit id) or a range A..B; default: the work tree on HEAD, as `run` would test it.
    rev: Option<String>,
    /// Also list every test of each check that records per-test results (`status --tests`).
    #[serde(default)]
    tests: bool,
}

/// Arguments of `flaky`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
struct FlakyParams {
    /// Only this check (default: every check).
    check: Option<String>,
}

/// Arguments of `show`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
struct ShowParams {
    /// A revision (default HEAD), or a receipt id or unique id prefix (sha256:...).
    target: Option<String>,
}

/// Arguments of `gate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
struct GateParams {
    /// The revisions to gate (default HEAD).
    #[serde(default)]
    revs: Vec<String>,
    /// Require these checks instead of those marked `required = true`.
    #[serde(default)]
    require: Vec<String>,
    /// Trust only the signers in .gitreceipts at this revision (e.g. origin/main).
    trust: Option<String>,
    /// First verify every chain, as `git receipt verify`; any finding fails the gate.
    #[serde(default)]
    verify: bool,
}

/// Arguments of `log`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
struct LogParams {
    /// The receipt id or unique id prefix (sha256:...) whose output to read.
    receipt: Option<String>,
    /// Instead of `receipt`: the revision whose deciding receipt for `check` to read.
    rev: Option<String>,
    /// With `rev`: the check.
    check: Option<String>,
    /// Return at most this many bytes, the end of the output (default 16384, at most 1048576).
    max_bytes: Option<u32>,
}

/// Arguments of `run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars")]
struct RunParams {
    /// The check to run, as declared in .gitreceipts.
    check: String,
    /// An ad hoc command (argv) to run as check `check`; only when the server was started with --allow-adhoc.
    #[serde(default)]
    command: Vec<String>,
    /// For an ad hoc command: its input paths (default the whole tree).
    #[serde(default)]
    paths: Vec<String>,
}

/// One tool as `tools/list` describes it.
fn tool<T: JsonSchema + 'static>(
    name: &'static str,
    description: &'static str,
    read_only: bool,
) -> Tool {
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(read_only);
    annotations.open_world_hint = Some(false);
    let mut tool = Tool::new(name, description, schema_for_type::<T>());
    tool.annotations = Some(annotations);
    tool
}

fn tools() -> Vec<Tool> {
    vec![
        tool::<StatusParams>(
            "status",
            "The state of every check declared in .gitreceipts (present, failed, stale or missing), with the receipt that decided it and why: the JSON of `git receipt status --json`.",
            true,
        ),
        tool::<RunParams>(
            "run",
            "Run a check declared in .gitreceipts on the work tree and write a signed receipt of its result. Sends progress notifications (its output lines) while it runs. Returns the receipt id, state (passed or failed), exit code, log tail, and in `shown` the receipt as `git receipt show --json` gives it. A failing check is a result, not an error.",
            false,
        ),
        tool::<ShowParams>(
            "show",
            "The receipts whose subject is a revision and those deciding its checks, or one receipt by id, each with its signature status: the JSON of `git receipt show --json`.",
            true,
        ),
        tool::<GateParams>(
            "gate",
            "Whether every required check is present at each revision (`ok`), with each required check's state: the JSON of `git receipt gate --json`.",
            true,
        ),
        tool::<FlakyParams>(
            "flaky",
            "Tests that trusted receipts of the same check, on the same inputs and definition, disagree on (one passed, another failed), with the receipts that say so and any [quarantine] at HEAD: the JSON of `git receipt flaky --json`.",
            true,
        ),
        tool::<LogParams>(
            "log",
            "A receipt's full output (stdout and stderr as they arrived), checked against its signature; the last `max_bytes` bytes. Name the receipt by id, or by `rev` and `check` for the receipt deciding that check there.",
            true,
        ),
    ]
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("git-receipt", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Signed receipts of checks (tests, lints) stored in git. Run checks with the `run` tool \
                 instead of running them yourself: its receipt is evidence a reviewer can verify. \
                 `status` says which checks are present, failed, stale or missing for the work tree; \
                 `log` shows a failing check's output; `gate` says whether a revision may be pushed.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        if !tools().iter().any(|t| t.name == name) {
            return Err(McpError::invalid_params(
                format!("no tool {name:?}; the tools are status, run, show, gate, flaky and log"),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let result = async {
            match name {
                "status" => self.status(params(name, arguments)?).await,
                "show" => self.show(params(name, arguments)?).await,
                "gate" => self.gate(params(name, arguments)?).await,
                "log" => self.log(params(name, arguments)?).await,
                "flaky" => self.flaky(params(name, arguments)?).await,
                _ => self.run(params(name, arguments)?, &context).await,
            }
        }
        .await;
        Ok(match result {
            Ok(done) => done,
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        }
        .into())
    }
}

/// A tool's arguments, or the tool error that says what is wrong with them.
fn params<T: serde::de::DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, String> {
    serde_json::from_value(arguments).map_err(|e| {
        format!(
            "bad arguments for tool {tool:?}: {e}\nhint: tools/list gives each tool's input schema"
        )
    })
}

/// A revision, range or name that goes on the command line: never an option.
fn operand<'a>(what: &str, value: &'a str) -> Result<&'a str, String> {
    if value.is_empty() || value.starts_with('-') {
        return Err(format!(
            "{what} {value:?} is not a revision, receipt id or name (it is empty or starts with '-')"
        ));
    }
    Ok(value)
}

/// What one subprocess did.
struct Finished {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
}

impl Finished {
    /// The CLI's message for a command that could not decide, as a tool error.
    fn error(&self, what: &str) -> String {
        let stderr = self.stderr.trim();
        if stderr.is_empty() {
            format!("{what} failed (exit {}) without saying why", self.code)
        } else {
            // the CLI's errors are already escaped for a terminal
            stderr.to_owned()
        }
    }
}

impl Server {
    /// This binary, in the served repository, with `args`.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.exe);
        cmd.arg("-C").arg(&self.dir).args(args).stdin(Stdio::null());
        cmd
    }

    /// Run this binary with `args` to its end, on a blocking thread.
    async fn invoke(&self, args: Vec<String>) -> Result<Finished, String> {
        let mut cmd = self.command(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .map_err(|e| format!("the git-receipt subprocess was lost: {e}"))?
            .map_err(|e| format!("cannot run {}: {e}", self.exe.display()))?;
        Ok(Finished {
            // killed by a signal: as "could not decide"
            code: out.status.code().unwrap_or(2),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// A `--json` subcommand's output as the tool result: exit 0 and 1 (a verdict)
    /// return its JSON, anything else is a tool error with its message.
    async fn json_tool(&self, what: &str, args: Vec<String>) -> Result<CallToolResult, String> {
        let done = self.invoke(args).await?;
        if done.code != 0 && done.code != 1 {
            return Err(done.error(what));
        }
        let text = String::from_utf8(done.stdout)
            .map_err(|_| format!("{what} printed output that is not UTF-8"))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{what} did not print JSON ({e}): {}", done.stderr.trim()))?;
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        // structured content must be an object; arrays stay text only
        if value.is_object() {
            result.structured_content = Some(value);
        }
        Ok(result)
    }

    async fn status(&self, p: StatusParams) -> Result<CallToolResult, String> {
        let mut args = vec!["status".to_owned(), "--json".to_owned()];
        if p.tests {
            args.push("--tests".to_owned());
        }
        if let Some(rev) = &p.rev {
            args.push(operand("rev", rev)?.to_owned());
        }
        self.json_tool("git receipt status", args).await
    }

    async fn flaky(&self, p: FlakyParams) -> Result<CallToolResult, String> {
        let mut args = vec!["flaky".to_owned(), "--json".to_owned()];
        if let Some(check) = &p.check {
            args.push(operand("check", check)?.to_owned());
        }
        self.json_tool("git receipt flaky", args).await
    }

    async fn show(&self, p: ShowParams) -> Result<CallToolResult, String> {
        let mut args = vec!["show".to_owned(), "--json".to_owned()];
        if let Some(target) = &p.target {
            args.push(operand("target", target)?.to_owned());
        }
        self.json_tool("git receipt show", args).await
    }

    async fn gate(&self, p: GateParams) -> Result<CallToolResult, String> {
        let mut args = vec!["gate".to_owned(), "--json".to_owned()];
        if p.verify {
            args.push("--verify".to_owned());
        }
        if let Some(trust) = &p.trust {
            args.push(format!("--trust={}", operand("trust", trust)?));
        }
        for check in &p.require {
            args.push(format!("--require={}", operand("require", check)?));
        }
        for rev in &p.revs {
            args.push(operand("rev", rev)?.to_owned());
        }
        self.json_tool("git receipt gate", args).await
    }

    async fn log(&self, p: LogParams) -> Result<CallToolResult, String> {
        let max = p.max_bytes.unwrap_or(DEFAULT_LOG_BYTES);
        if max == 0 || max > MAX_LOG_BYTES {
            return Err(format!(
                "max_bytes {max} is out of range: give 1 to {MAX_LOG_BYTES}"
            ));
        }
        let target = match (&p.receipt, &p.rev, &p.check) {
            (Some(id), None, None) => LogOf::Receipt(operand("receipt", id)?.to_owned()),
            (None, Some(rev), Some(check)) => LogOf::Decider {
                rev: operand("rev", rev)?.to_owned(),
                check: operand("check", check)?.to_owned(),
            },
            _ => {
                return Err(
                    "name the log by `receipt` (an id), or by both `rev` and `check`, not both ways"
                        .to_owned(),
                );
            }
        };
        let excerpt = self.log_excerpt(&target, max).await?;
        Ok(CallToolResult::structured(excerpt))
    }

    /// The end of a receipt's log, at most `max` bytes, as the `log` tool returns it.
    async fn log_excerpt(&self, target: &LogOf, max: u32) -> Result<Value, String> {
        let mut args = vec!["show".to_owned()];
        match target {
            LogOf::Receipt(id) => args.push(format!("--log={id}")),
            LogOf::Decider { rev, check } => {
                args.push(format!("--log={rev}"));
                args.push(format!("--check={check}"));
            }
        }
        let mut cmd = self.command(&args.iter().map(String::as_str).collect::<Vec<_>>());
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let max = max as usize;
        let (code, tail, total, stderr) = tokio::task::spawn_blocking(move || {
            let mut child = cmd.spawn()?;
            let mut stderr_pipe = child.stderr.take().expect("piped");
            let stderr_reader = std::thread::spawn(move || {
                let mut s = Vec::new();
                let _ = stderr_pipe.read_to_end(&mut s);
                s
            });
            // the runner's own bounded capture: no log kept, only the tail
            let captured =
                git_receipt::runner::capture(child.stdout.take().expect("piped"), 0, max)?;
            let stderr = stderr_reader.join().unwrap_or_default();
            let status = child.wait()?;
            std::io::Result::Ok((
                status.code().unwrap_or(2),
                captured.tail,
                captured.total,
                stderr,
            ))
        })
        .await
        .map_err(|e| format!("the git-receipt subprocess was lost: {e}"))?
        .map_err(|e| format!("cannot run {}: {e}", self.exe.display()))?;
        let stderr = String::from_utf8_lossy(&stderr).trim().to_owned();
        if code != 0 {
            // exit 1: no log to be had; stdout then holds the signed tails
            return Err(format!(
                "{stderr}\n{}",
                String::from_utf8_lossy(&tail).trim_end()
            ));
        }
        Ok(json!({
            "receipt": match target { LogOf::Receipt(id) => Some(id.as_str()), LogOf::Decider { .. } => None },
            "output_bytes": total,
            "truncated": total > tail.len() as u64,
            "text": String::from_utf8_lossy(&tail),
            "note": (!stderr.is_empty()).then_some(stderr),
        }))
    }

    async fn run(
        &self,
        p: RunParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, String> {
        let check = operand("check", &p.check)?.to_owned();
        if !p.command.is_empty() && !self.allow_adhoc {
            return Err(format!(
                "refusing to run an ad hoc command as check {check:?}: this server runs only checks declared in .gitreceipts\nhint: declare it in .gitreceipts ([check \"{check}\"] run = ...), or start the server with `git receipt mcp --allow-adhoc`"
            ));
        }
        let mut args = vec!["run".to_owned(), check.clone()];
        for path in &p.paths {
            args.push(format!("--path={path}"));
        }
        if !p.command.is_empty() {
            args.push("--".to_owned());
            args.extend(p.command.iter().cloned());
        }
        let _turn = self.run_turn.lock().await;
        let before = self.chain_tips().await?;
        let mut cmd = self.command(&args.iter().map(String::as_str).collect::<Vec<_>>());
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.exe.display()))?;
        let (lines_tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
        let mut readers = Vec::new();
        for pipe in [
            Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().expect("piped")),
        ] {
            let tx = lines_tx.clone();
            readers.push(std::thread::spawn(move || forward_lines(pipe, &tx)));
        }
        drop(lines_tx);
        let waiter = tokio::task::spawn_blocking(move || {
            let status = child.wait();
            let mut last_stderr = String::new();
            for r in readers {
                if let Ok(text) = r.join() {
                    last_stderr = text;
                }
            }
            (status, last_stderr)
        });
        // One notification per batch of lines (as many as the client takes, no
        // timer), carrying the batch's last PROGRESS_LINES lines.
        let token = context.meta.get_progress_token();
        let mut seen = 0u64;
        let mut batch = std::collections::VecDeque::new();
        while let Some(line) = lines.recv().await {
            batch.push_back(line);
            while let Ok(more) = lines.try_recv() {
                batch.push_back(more);
            }
            seen += batch.len() as u64;
            batch.drain(..batch.len().saturating_sub(PROGRESS_LINES));
            if let Some(token) = &token {
                let message = batch
                    .drain(..)
                    .map(|l| {
                        format!(
                            "{check}: {}",
                            git_receipt::text::escape(&clip(&l, PROGRESS_LINE_CHARS))
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let note = ProgressNotificationParam::new(token.clone(), seen as f64)
                    .with_message(message);
                // a client that stopped listening does not stop the check
                let _ = context.peer.notify_progress(note).await;
            }
            batch.clear();
        }
        let (status, stderr_tail) = waiter
            .await
            .map_err(|e| format!("the git-receipt subprocess was lost: {e}"))?;
        let status = status.map_err(|e| format!("cannot wait for git receipt run: {e}"))?;
        let after = self.chain_tips().await?;
        let Some(id) = self.new_receipt(&check, before, after).await? else {
            return Err(format!(
                "check {check:?} got no receipt (git receipt run exit {}):\n{}",
                status.code().unwrap_or(-1),
                // the check's own output is in there
                git_receipt::text::escape_lines(stderr_tail.trim())
            ));
        };
        let shown = self
            .invoke(vec!["show".into(), "--json".into(), id.clone()])
            .await?;
        let shown: Value = serde_json::from_slice(&shown.stdout)
            .ok()
            .and_then(|v: Value| v.as_array().and_then(|a| a.first().cloned()))
            .ok_or_else(|| format!("cannot read back receipt {id}: {}", shown.stderr.trim()))?;
        let result = &shown["receipt"]["receipt"]["result"];
        let log = if result["log"].is_null() {
            json!({"output_bytes": 0, "truncated": false, "text": ""})
        } else {
            self.log_excerpt(&LogOf::Receipt(id.clone()), RUN_LOG_TAIL_BYTES)
                .await?
        };
        Ok(CallToolResult::structured(json!({
            "check": check,
            "receipt": id,
            "state": if result["passed"] == json!(true) { "passed" } else { "failed" },
            "exit_code": result["exit_code"],
            "detail": result["detail"],
            "duration_ms": result["duration_ms"],
            "log_tail": log["text"],
            "log_truncated": log["truncated"],
            "shown": shown,
        })))
    }

    /// Every chain's tip now.
    async fn chain_tips(&self) -> Result<Vec<(String, gix::ObjectId)>, String> {
        let dir = self.dir.clone();
        tokio::task::spawn_blocking(move || Store::discover(&dir)?.writers())
            .await
            .map_err(|e| format!("reading the receipt chains was lost: {e}"))?
            .map_err(|e| format!("cannot read the receipt chains: {e}"))
    }

    /// The id of the newest receipt for `check` appended between `before` and
    /// `after` (the chains' tips around one `run`). Read from the chains, not from
    /// what `run` printed, which the check's own output could imitate; only a run
    /// of the same check by another process in the same moment could be taken for
    /// this one.
    async fn new_receipt(
        &self,
        check: &str,
        before: Vec<(String, gix::ObjectId)>,
        after: Vec<(String, gix::ObjectId)>,
    ) -> Result<Option<String>, String> {
        let (dir, check) = (self.dir.clone(), check.to_owned());
        tokio::task::spawn_blocking(move || {
            let store = Store::discover(&dir)?;
            let mut newest: Option<(String, String)> = None;
            for (writer, tip) in after {
                let old = before.iter().find(|(w, _)| *w == writer).map(|(_, t)| *t);
                if old == Some(tip) {
                    continue;
                }
                store.walk_chain(&writer, tip, |e| {
                    if Some(e.commit) == old {
                        return Ok(false);
                    }
                    let b = e.receipt.body();
                    if b.check.name == check
                        && newest
                            .as_ref()
                            .is_none_or(|(at, _)| b.result.started_at > *at)
                    {
                        newest = Some((b.result.started_at.clone(), e.receipt.id().to_owned()));
                    }
                    Ok(true)
                })?;
            }
            Ok::<_, git_receipt::store::StoreError>(newest.map(|(_, id)| id))
        })
        .await
        .map_err(|e| format!("reading the receipt chains was lost: {e}"))?
        .map_err(|e| format!("cannot read the receipt chains: {e}"))
    }
}

/// Which receipt's log: by id, or the one deciding a check at a revision.
enum LogOf {
    Receipt(String),
    Decider { rev: String, check: String },
}

/// Send each line of `from` to `to`; return the last few lines read (for a
/// `run` that wrote no receipt, whose error is at the end of stderr).
fn forward_lines(
    from: Box<dyn Read + Send>,
    to: &tokio::sync::mpsc::UnboundedSender<String>,
) -> String {
    let mut last = std::collections::VecDeque::new();
    let mut reader = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
        if last.len() == 20 {
            last.pop_front();
        }
        last.push_back(text.clone());
        // the receiver gone only means nobody shows progress any more
        let _ = to.send(text);
    }
    last.into_iter().collect::<Vec<_>>().join("\n")
}

/// At most `max` characters of `text`, marked when cut.
fn clip(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        Some((end, _)) => Cow::Owned(format!("{}...", &text[..end])),
        None => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_that_look_like_options_are_refused() {
        assert!(operand("rev", "--help").is_err());
        assert!(operand("rev", "").is_err());
        assert_eq!(operand("rev", "main..HEAD"), Ok("main..HEAD"));
    }

    #[test]
    fn clip_never_splits_a_character() {
        assert_eq!(clip("ééé", 2), "éé...");
        assert_eq!(clip("ab", 2), "ab");
    }

    #[test]
    fn every_tool_schema_is_an_object_that_refuses_unknown_members() {
        for t in tools() {
            assert_eq!(t.input_schema["type"], "object", "{}", t.name);
            assert_eq!(
                t.input_schema.get("additionalProperties"),
                Some(&json!(false)),
                "{}",
                t.name
            );
        }
    }
}
