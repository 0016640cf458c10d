//! Shared test harness: a sealed environment (throwaway HOME, no system git
//! config, fixed dates, UTC, C locale), fixture repositories built by the shell
//! scripts in `tests/fixtures/`, and a runner for the real `git-receipt` binary
//! that returns stdout, stderr and exit status together.
#![allow(dead_code)]

pub mod gitolite;
pub mod pytools;
pub mod receipt_schema;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A sealed environment for one test.
pub struct Env {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
}

/// What a command did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub raw_stdout: Vec<u8>,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}--- stderr\n{}---",
            self.code, self.stdout, self.stderr
        )
    }
}

pub fn to_run(out: Output) -> Run {
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        raw_stdout: out.stdout,
    }
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_git-receipt"))
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

// ------------------------------------------------------------ tools a test needs

/// Comma-separated tool names that [`require_tool`] (and the PyPI lookups in
/// [`pytools`]) treat as not installed, to see what a test does without its tool:
/// `GIT_RECEIPT_TEST_HIDE_TOOLS=sshd CI=true cargo test --test it gitolite::` must fail.
/// A name matches a tool by its file name (`sshd` hides `/usr/sbin/sshd`) or, for
/// Python, by the PyPI package name (`mcp`).
pub const HIDE_TOOLS: &str = "GIT_RECEIPT_TEST_HIDE_TOOLS";

/// Whether [`HIDE_TOOLS`] hides `tool`.
pub fn hidden(tool: &str) -> bool {
    let base = Path::new(tool)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(tool);
    std::env::var(HIDE_TOOLS).is_ok_and(|list| {
        list.split(',')
            .map(str::trim)
            .any(|h| !h.is_empty() && (h == tool || h == base))
    })
}

/// Whether this is a CI run: `CI` set to anything but empty, `0` or `false`
/// (CI runs `.ci/run` with `CI=true`, and `.ci/run` sets it when it is unset).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// Whether `tool` is installed: an absolute path that is an executable file, or
/// a command found on PATH. A tool hidden by [`HIDE_TOOLS`] is not.
pub fn tool_found(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    if hidden(tool) {
        return false;
    }
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if tool.contains('/') {
        return executable(Path::new(tool));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| executable(&dir.join(tool))))
}

/// The one gate for a test that needs a tool (`tool` is an absolute path or a
/// command on PATH; `install` says how to get it, e.g. `apt-get install
/// openssh-server`): true when it is installed. When it is not, a local run prints
/// `SKIPPED: ...` to stderr and gets false (the test returns); with `CI` set the
/// test panics instead, since `.ci/run` installs every tool and CI never skips.
/// `if !common::require_tool("/usr/bin/chromium", "apt-get install chromium") { return; }`
#[track_caller]
pub fn require_tool(tool: &str, install: &str) -> bool {
    let missing = if hidden(tool) {
        Some(format!("hidden by {HIDE_TOOLS}"))
    } else if !tool_found(tool) {
        Some("not found".to_owned())
    } else {
        None
    };
    require(tool, missing, install)
}

/// [`require_tool`] for a need the caller checked itself: `missing` is why
/// `what` cannot be had here, `None` when it can.
#[track_caller]
pub fn require(what: &str, missing: Option<String>, install: &str) -> bool {
    let Some(why) = missing else {
        return true;
    };
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("this test");
    assert!(
        !in_ci(),
        "CI is set and {what} is missing ({why}): .ci/run must install it ({install})"
    );
    eprintln!(
        "SKIPPED: {test}: {what} is not installed ({why}); {install} (.ci/run does), \
         and with CI set this test fails instead of skipping"
    );
    false
}

impl Env {
    pub fn new() -> Env {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        Env { tmp, home }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// A new unencrypted Ed25519 key made by OpenSSH's `ssh-keygen` at `rel`
    /// (its public half at `rel.pub`): another signer's key.
    pub fn ssh_keygen(&self, rel: &str) -> PathBuf {
        let key = self.path(rel);
        let made = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&key)
            .status()
            .unwrap();
        assert!(made.success(), "ssh-keygen made {rel}");
        key
    }

    /// OpenSSH's own check of a receipt signature, the interop oracle:
    /// `ssh-keygen -Y verify -f allowed -I identity -n namespace -s sig` with
    /// `message` on its stdin, run sealed in this environment.
    pub fn ssh_keygen_verify(
        &self,
        allowed: &Path,
        identity: &str,
        namespace: &str,
        sig: &Path,
        message: &[u8],
    ) -> Output {
        let mut cmd = Command::new("ssh-keygen");
        self.seal(&mut cmd);
        let mut child = cmd
            .args(["-Y", "verify", "-f"])
            .arg(allowed)
            .args(["-I", identity, "-n", namespace, "-s"])
            .arg(sig)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ssh-keygen (OpenSSH) must be installed for this interop test");
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), message).unwrap();
        drop(child.stdin.take());
        child.wait_with_output().unwrap()
    }

    /// Apply the sealed environment to a command.
    pub fn seal(&self, cmd: &mut Command) {
        // the binary under test first on PATH, so hooks that call `git receipt` find it
        let bin_dir = bin().parent().unwrap().to_owned();
        let mut path = std::ffi::OsString::from(bin_dir);
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        cmd.env_clear()
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Ada Tester")
            .env("GIT_AUTHOR_EMAIL", "ada@example.org")
            .env("GIT_COMMITTER_NAME", "Ada Tester")
            .env("GIT_COMMITTER_EMAIL", "ada@example.org")
            .env("GIT_AUTHOR_DATE", "2026-02-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-02-01T00:00:00Z")
            .stdin(Stdio::null());
    }

    /// Build a fixture repository with `tests/fixtures/<script>` at `rel`.
    pub fn fixture_repo(&self, script: &str, rel: &str) -> PathBuf {
        let dir = self.path(rel);
        let mut cmd = Command::new("bash");
        cmd.arg(fixture(script)).arg(&dir);
        self.seal(&mut cmd);
        let out = to_run(cmd.output().expect("run fixture script"));
        assert_eq!(out.code, 0, "fixture {script} failed: {out}");
        dir
    }

    /// Run `git-receipt args...` in `dir`.
    pub fn receipt(&self, dir: &Path, args: &[&str]) -> Run {
        self.receipt_with(dir, args, &[])
    }

    pub fn receipt_with(&self, dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Run {
        let mut cmd = Command::new(bin());
        cmd.args(args);
        self.seal(&mut cmd);
        cmd.current_dir(dir).envs(envs.iter().copied());
        to_run(cmd.output().expect("run git-receipt"))
    }

    /// Run `git-receipt args...` in `dir` with `input` on stdin (hooks read it).
    pub fn receipt_input(&self, dir: &Path, args: &[&str], input: &[u8]) -> Run {
        use std::io::Write;
        let mut cmd = Command::new(bin());
        cmd.args(args);
        self.seal(&mut cmd);
        let mut child = cmd
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run git-receipt");
        child.stdin.take().unwrap().write_all(input).unwrap();
        to_run(child.wait_with_output().unwrap())
    }

    /// Run stock git in `dir`.
    pub fn git(&self, dir: &Path, args: &[&str]) -> Run {
        let mut cmd = Command::new("git");
        cmd.args(args);
        self.seal(&mut cmd);
        cmd.current_dir(dir);
        to_run(cmd.output().expect("run git"))
    }

    /// Run stock git and return trimmed stdout, asserting success.
    pub fn git_ok(&self, dir: &Path, args: &[&str]) -> String {
        let r = self.git(dir, args);
        assert_eq!(r.code, 0, "git {args:?} failed: {r}");
        r.stdout.trim().to_owned()
    }

    /// Run stock git in `dir` with `input` on stdin, assert success, and return the
    /// trimmed stdout (for plumbing such as `hash-object -w --stdin` and `mktree`).
    pub fn git_input(&self, dir: &Path, args: &[&str], input: &[u8]) -> String {
        use std::io::Write;
        let mut cmd = Command::new("git");
        cmd.args(args);
        self.seal(&mut cmd);
        let mut child = cmd
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run git");
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Run `git-receipt` and assert it exited 0.
    pub fn receipt_ok(&self, dir: &Path, args: &[&str]) -> Run {
        let r = self.receipt(dir, args);
        assert_eq!(r.code, 0, "git-receipt {args:?} failed: {r}");
        r
    }

    /// The single writer id in `dir` (asserts there is exactly one).
    pub fn only_writer(&self, dir: &Path) -> String {
        let refs = self.git_ok(
            dir,
            &["for-each-ref", "--format=%(refname)", "refs/receipts/"],
        );
        let writers: Vec<&str> = refs.lines().collect();
        assert_eq!(writers.len(), 1, "expected one chain, got {writers:?}");
        writers[0].trim_start_matches("refs/receipts/").to_owned()
    }

    /// `git receipt log --json`, parsed.
    pub fn log_json(&self, dir: &Path) -> Vec<serde_json::Value> {
        let r = self.receipt_ok(dir, &["log", "--json"]);
        serde_json::from_str(&r.stdout).expect("log --json is JSON")
    }

    /// Check `check`'s entry in `git receipt status --json [rev]` (the work tree
    /// without `rev`), asserting that status exits 0.
    pub fn status_of(&self, dir: &Path, rev: Option<&str>, check: &str) -> serde_json::Value {
        let mut args = vec!["status", "--json"];
        args.extend(rev);
        let r = self.receipt(dir, &args);
        assert_eq!(r.code, 0, "status {rev:?}: {r}");
        let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("status --json is JSON");
        v["checks"]
            .as_array()
            .expect("status --json has checks")
            .iter()
            .find(|c| c["name"] == check)
            .cloned()
            .unwrap_or_else(|| panic!("no check {check} in {v}"))
    }

    /// Sign an `edit`ed copy of the tip's body as the next entry of `writer`'s
    /// chain in `dir` with this environment's key (the one `key generate` made),
    /// and put it on the chain with stock git, as an older git-receipt, a hand
    /// or a forger holding the key could. Returns its id.
    pub fn append_crafted(
        &self,
        dir: &Path,
        writer: &str,
        edit: impl FnOnce(&mut git_receipt::receipt::Body),
    ) -> String {
        use git_receipt::receipt::Receipt;
        let chain = format!("refs/receipts/{writer}");
        let tip = self.git_ok(dir, &["rev-parse", &chain]);
        let last = Receipt::parse(&self.receipt_bytes(dir, &tip)).unwrap();
        let mut body = last.body().clone();
        body.chain.index += 1;
        body.chain.prev = Some(last.id().to_owned());
        edit(&mut body);
        let key =
            git_receipt::sign::SigningKey::load(&self.home.join(".config/git-receipt/signing_key"))
                .unwrap();
        let r = Receipt::sign(body, &key).unwrap();
        let blob = self.git_input(dir, &["hash-object", "-w", "--stdin"], r.bytes());
        let tree = self.git_input(
            dir,
            &["mktree"],
            format!("100644 blob {blob}\treceipt.json\n").as_bytes(),
        );
        let commit = self.git_ok(dir, &["commit-tree", &tree, "-p", &tip, "-m", "crafted"]);
        self.git_ok(dir, &["update-ref", &chain, &commit, &tip]);
        r.id().to_owned()
    }

    /// The stored bytes of the receipt at a chain commit (stock git reads it).
    pub fn receipt_bytes(&self, dir: &Path, chain_commit: &str) -> Vec<u8> {
        let mut cmd = Command::new("git");
        cmd.args(["cat-file", "blob", &format!("{chain_commit}:receipt.json")]);
        self.seal(&mut cmd);
        cmd.current_dir(dir);
        let out = cmd.output().unwrap();
        assert!(out.status.success());
        out.stdout
    }
}

/// A `git daemon` serving bare repositories under a directory on 127.0.0.1 with
/// push enabled; stopped when dropped.
pub struct Daemon {
    child: std::process::Child,
    pub port: u16,
    pub root: PathBuf,
}

impl Daemon {
    pub fn start(env: &Env) -> Daemon {
        let root = env.path("served");
        std::fs::create_dir_all(&root).unwrap();
        for _ in 0..20 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut cmd = Command::new("git");
            env.seal(&mut cmd);
            cmd.args([
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
            ])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", root.display()))
            .arg(&root)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
            // `git daemon` runs `git-daemon` as a child (and it forks one per
            // connection): a process group of their own lets Drop end them all.
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            let mut child = cmd.spawn().expect("git daemon");
            for _ in 0..100 {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Daemon { child, port, root };
                }
                if child.try_wait().unwrap().is_some() {
                    break; // port taken meanwhile: try another
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            kill_group(&mut child);
        }
        panic!("git daemon did not start");
    }

    /// A new bare repository served as `git://127.0.0.1:PORT/<name>`.
    pub fn bare(&self, env: &Env, name: &str) -> (PathBuf, String) {
        self.bare_in(env, name, "sha1")
    }

    /// [`Daemon::bare`] in object format `format` (`sha1` or `sha256`).
    pub fn bare_in(&self, env: &Env, name: &str, format: &str) -> (PathBuf, String) {
        let dir = self.root.join(name);
        let r = env.git(
            &self.root,
            &[
                "init",
                "-q",
                "--bare",
                "-b",
                "main",
                &format!("--object-format={format}"),
                dir.to_str().unwrap(),
            ],
        );
        assert_eq!(r.code, 0, "{r}");
        (dir, self.url(name))
    }

    pub fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}", self.port)
    }
}

/// SIGKILL the process group `child` leads (the `git` wrapper, `git-daemon` and
/// its connection handlers), then reap the leader.
fn kill_group(child: &mut std::process::Child) {
    let pgid = i32::try_from(child.id()).expect("pid fits");
    // SAFETY: kill(2) on the process group our own unreaped child leads.
    let killed = unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let errno = std::io::Error::last_os_error();
    let _ = child.wait();
    assert!(
        killed == 0 || errno.raw_os_error() == Some(libc::ESRCH),
        "kill -9 of git daemon's process group {pgid}: {errno}"
    );
}

impl Drop for Daemon {
    fn drop(&mut self) {
        kill_group(&mut self.child);
        // Nothing of the daemon may outlive the test: its port is free again. A
        // killed listener's socket closes with the process, so a connection is
        // refused at once; wait for the kernel only as long as it takes.
        let mut listening = true;
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
                listening = false;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if !std::thread::panicking() {
            assert!(
                !listening,
                "git daemon still listens on 127.0.0.1:{} after the test",
                self.port
            );
        }
    }
}

/// Smart HTTP: a minimal HTTP/1.1 server on 127.0.0.1 that runs `git http-backend`
/// as CGI for each request (one thread per connection, `Connection: close`), over
/// bare repositories under a directory. Pushing is enabled per repository with
/// `http.receivepack`. Stopped when dropped.
pub struct HttpServer {
    pub port: u16,
    pub root: PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl HttpServer {
    pub fn start(env: &Env) -> HttpServer {
        use std::io::{BufRead, BufReader, Read, Write};
        let root = env.path("http-served");
        std::fs::create_dir_all(&root).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (stop2, root2, home) = (stop.clone(), root.clone(), env.home.clone());
        // the binary under test first on the server's PATH too, as a server
        // that runs git-receipt's hook has it installed
        let mut search = std::ffi::OsString::from(bin().parent().unwrap());
        search.push(":");
        search.push(std::env::var_os("PATH").unwrap_or_default());
        std::thread::spawn(move || {
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    continue;
                };
                let (root, home, search) = (root2.clone(), home.clone(), search.clone());
                std::thread::spawn(move || {
                    stream.set_nonblocking(false).unwrap();
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    if reader.read_line(&mut line).is_err() {
                        return;
                    }
                    let mut parts = line.split_whitespace();
                    let method = parts.next().unwrap_or("").to_owned();
                    let target = parts.next().unwrap_or("/").to_owned();
                    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                    let mut headers = Vec::new();
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                        if let Some((k, v)) = h.trim_end().split_once(':') {
                            headers.push((k.to_ascii_lowercase(), v.trim().to_owned()));
                        }
                    }
                    let header = |name: &str| {
                        headers
                            .iter()
                            .find(|(k, _)| k == name)
                            .map(|(_, v)| v.clone())
                    };
                    let mut body = Vec::new();
                    if let Some(len) =
                        header("content-length").and_then(|l| l.parse::<usize>().ok())
                    {
                        body.resize(len, 0);
                        reader.read_exact(&mut body).unwrap();
                    } else if header("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
                        loop {
                            let mut size = String::new();
                            reader.read_line(&mut size).unwrap();
                            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
                            if n == 0 {
                                let mut end = String::new();
                                let _ = reader.read_line(&mut end);
                                break;
                            }
                            let mut chunk = vec![0; n + 2];
                            reader.read_exact(&mut chunk).unwrap();
                            body.extend_from_slice(&chunk[..n]);
                        }
                    }
                    let mut cmd = Command::new("git");
                    cmd.arg("http-backend")
                        .env_clear()
                        .env("PATH", &search)
                        .env("HOME", &home)
                        .env("GIT_CONFIG_NOSYSTEM", "1")
                        .env("GIT_PROJECT_ROOT", &root)
                        .env("GIT_HTTP_EXPORT_ALL", "1")
                        .env("REQUEST_METHOD", &method)
                        .env("PATH_INFO", path)
                        .env("QUERY_STRING", query)
                        .env("CONTENT_LENGTH", body.len().to_string())
                        .env("REMOTE_ADDR", "127.0.0.1")
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::null());
                    if let Some(ct) = header("content-type") {
                        cmd.env("CONTENT_TYPE", ct);
                    }
                    if let Some(enc) = header("content-encoding") {
                        cmd.env("HTTP_CONTENT_ENCODING", enc);
                    }
                    if let Some(proto) = header("git-protocol") {
                        cmd.env("GIT_PROTOCOL", proto);
                    }
                    let mut child = cmd.spawn().unwrap();
                    let mut stdin = child.stdin.take().unwrap();
                    let writer = std::thread::spawn(move || {
                        let _ = stdin.write_all(&body);
                    });
                    let out = child.wait_with_output().unwrap();
                    writer.join().unwrap();
                    // CGI output: headers, blank line, body
                    let split = out
                        .stdout
                        .windows(4)
                        .position(|w| w == b"\r\n\r\n")
                        .map(|i| (i, 4))
                        .or_else(|| {
                            out.stdout
                                .windows(2)
                                .position(|w| w == b"\n\n")
                                .map(|i| (i, 2))
                        });
                    let (head, rest) = match split {
                        Some((i, n)) => (
                            String::from_utf8_lossy(&out.stdout[..i]).into_owned(),
                            &out.stdout[i + n..],
                        ),
                        None => (String::new(), &out.stdout[..]),
                    };
                    let mut status = "200 OK".to_owned();
                    let mut response_headers = String::new();
                    for h in head.lines() {
                        match h.split_once(':') {
                            Some((k, v)) if k.eq_ignore_ascii_case("status") => {
                                status = v.trim().to_owned()
                            }
                            Some(_) => response_headers.push_str(&format!("{}\r\n", h.trim_end())),
                            None => {}
                        }
                    }
                    let mut stream = stream;
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status}\r\n{response_headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
                        rest.len()
                    );
                    let _ = stream.write_all(rest);
                });
            }
        });
        HttpServer { port, root, stop }
    }

    /// A new bare repository that accepts pushes, served as `http://127.0.0.1:PORT/<name>`.
    pub fn bare(&self, env: &Env, name: &str) -> (PathBuf, String) {
        let dir = self.root.join(name);
        let r = env.git(
            &self.root,
            &["init", "-q", "--bare", "-b", "main", dir.to_str().unwrap()],
        );
        assert_eq!(r.code, 0, "{r}");
        env.git_ok(&dir, &["config", "http.receivepack", "true"]);
        (dir, format!("http://127.0.0.1:{}/{name}", self.port))
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Start `cmd` with SIGINT at its default disposition, as a terminal's
/// foreground job has it: a test suite launched in the background (a
/// non-interactive shell's `&`, `nohup`) passes SIGINT on ignored, and `git
/// receipt run` rightly leaves an ignored SIGINT ignored, so a Ctrl-C test
/// would then time the check out instead of interrupting it.
pub fn sigint_as_in_a_terminal(cmd: &mut Command) {
    // SAFETY: between fork and exec only `signal`, which is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
}

/// `GIT_RECEIPT_TEST_NOW` for `days` days from now, in Unix seconds.
/// Seconds since the epoch, `days` before now, for `GIT_RECEIPT_TEST_NOW`: a
/// receipt dated then (its chain commit too).
pub fn days_ago(days: u64) -> String {
    (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - days * 86_400)
        .to_string()
}

pub fn days_from_now(days: u64) -> String {
    (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + days * 86_400)
        .to_string()
}

/// A `git clone` of `url` into `rel` under `env`'s temporary directory.
pub fn clone(env: &Env, url: &str, rel: &str) -> PathBuf {
    clone_with(env, url, rel, &[])
}

/// [`clone`] with more of `git clone`'s options (`--depth 1`, `-o upstream`).
pub fn clone_with(env: &Env, url: &str, rel: &str, options: &[&str]) -> PathBuf {
    let dir = env.path(rel);
    let mut args = vec!["clone", "-q"];
    args.extend_from_slice(options);
    args.extend([url, dir.to_str().unwrap()]);
    env.git_ok(env.tmp.path(), &args);
    dir
}

/// Commit a change to `src/lib.rs` (the inputs of the fixtures' `test`).
pub fn change_src(env: &Env, repo: &Path, text: &str) {
    std::fs::write(repo.join("src/lib.rs"), text).unwrap();
    env.git_ok(repo, &["commit", "-qam", text]);
}
