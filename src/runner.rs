//! Running a check: stream its output live, and observe it.
//!
//! The command's stdout and stderr go to ours as they arrive (so a user sees what
//! a bare run shows), while we keep the last bytes of each stream for the receipt's
//! tails and the combined output, in arrival order and up to a limit, for the log
//! blob. Output need not be UTF-8: the log keeps raw bytes, and only the tails are
//! converted (lossily) because the receipt is JSON.
//!
//! An interrupt (Ctrl-C, `kill`, a closed terminal) while the command runs does
//! not kill us before it: SIGINT, SIGTERM and SIGHUP are caught for the run,
//! passed on to the command when it has a process group of its own (a terminal
//! signals only its foreground group, and a check with a timeout is not in it),
//! and once the command has ended the observation says it was interrupted, so no
//! receipt is made of a run nobody let finish and no check is left running.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What to run and how much to keep.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The argv; `argv[0]` is looked up on `PATH`.
    pub argv: Vec<String>,
    /// Directory to run in (ours when `None`).
    pub cwd: Option<std::path::PathBuf>,
    /// Kill the command (and its process group) after this long.
    pub timeout: Option<Duration>,
    /// Keep at most this many bytes of combined output in the log.
    pub log_limit: usize,
    /// Keep the last this many bytes of each stream as its tail.
    pub tail_bytes: usize,
    /// Copy its output to ours as it arrives (a check); `false` keeps it quiet
    /// (an environment assertion, whose output is the value it records).
    pub echo: bool,
}

/// What was observed.
#[derive(Debug, Clone)]
pub struct Observation {
    /// Exit code; 128+N for signal N; 127 when it could not start; 124 on timeout.
    pub exit_code: i64,
    /// Why the result is not a plain exit code, or empty.
    pub detail: String,
    /// Start time, milliseconds since the epoch.
    pub started_at_ms: u64,
    /// Wall-clock duration.
    pub duration_ms: u64,
    /// Last bytes of stdout.
    pub stdout_tail: Vec<u8>,
    /// Last bytes of stderr.
    pub stderr_tail: Vec<u8>,
    /// Combined output, up to the limit.
    pub log: Vec<u8>,
    /// All output bytes seen.
    pub output_bytes: u64,
    /// Whether `log` was cut.
    pub log_truncated: bool,
    /// The signal (SIGINT, SIGTERM or SIGHUP) that interrupted us while the
    /// command ran: its result is no result, and must not be recorded.
    pub interrupted: Option<i32>,
}

/// The last interrupting signal caught while a command ran (0: none).
static INTERRUPTED: AtomicI32 = AtomicI32::new(0);

extern "C" fn note_interrupt(sig: libc::c_int) {
    // only an atomic store: all a signal handler may safely do
    INTERRUPTED.store(sig, Ordering::SeqCst);
}

/// The signals an interrupt arrives as.
const INTERRUPTS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Catches [`INTERRUPTS`] while it lives and puts the earlier handlers back when
/// dropped.
struct InterruptGuard {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl InterruptGuard {
    fn install() -> InterruptGuard {
        INTERRUPTED.store(0, Ordering::SeqCst);
        let mut previous = Vec::new();
        for sig in INTERRUPTS {
            // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value;
            // the handler only stores to an atomic
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = note_interrupt as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &action, &mut old) == 0 {
                    if old.sa_sigaction == libc::SIG_IGN {
                        // ignored before (`nohup`): it stays ignored
                        libc::sigaction(sig, &old, std::ptr::null_mut());
                        continue;
                    }
                    previous.push((sig, old));
                }
            }
        }
        InterruptGuard { previous }
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        for (sig, old) in &self.previous {
            // SAFETY: restores the handler sigaction returned for this signal
            unsafe {
                libc::sigaction(*sig, old, std::ptr::null_mut());
            }
        }
    }
}

/// Catches interrupts (SIGINT, SIGTERM, SIGHUP) while it lives, for a caller
/// that does more than one run and must clean up when the user stops it
/// (`run A..B` removes its temporary checkout): ask [`interrupt_caught`] between
/// steps. Each [`run`] still catches its own, and reports one in its observation.
pub struct CatchInterrupts {
    _guard: InterruptGuard,
}

/// Start catching interrupts: see [`CatchInterrupts`].
pub fn catch_interrupts() -> CatchInterrupts {
    CatchInterrupts {
        _guard: InterruptGuard::install(),
    }
}

/// The interrupt caught since [`catch_interrupts`] (or since the last [`run`]
/// began), if any.
pub fn interrupt_caught() -> Option<i32> {
    match INTERRUPTED.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// Signal the process group `child` leads.
fn signal_group(child: &std::process::Child, sig: libc::c_int) {
    if let Ok(pgid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the process group the
        // child leads (made so at spawn)
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

/// Milliseconds since the Unix epoch, now (0 before it): [`crate::clock::now_ms`].
pub fn now_ms() -> u64 {
    crate::clock::now_ms()
}

#[derive(Default)]
struct Combined {
    log: Vec<u8>,
    total: u64,
    truncated: bool,
}

fn pump(
    mut from: impl Read,
    mut to: impl Write,
    combined: Arc<Mutex<Combined>>,
    limit: usize,
    tail_bytes: usize,
) -> Vec<u8> {
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        // A closed stdout on our side (e.g. `| head`) must not stop the check.
        let _ = to.write_all(chunk).and_then(|_| to.flush());
        tail.extend_from_slice(chunk);
        if tail.len() > tail_bytes * 2 {
            tail.drain(..tail.len() - tail_bytes);
        }
        let mut c = combined.lock().expect("no panics while holding");
        c.total += n as u64;
        let room = limit.saturating_sub(c.log.len());
        if room < n {
            c.truncated = true;
        }
        c.log.extend_from_slice(&chunk[..room.min(n)]);
    }
    if tail.len() > tail_bytes {
        tail.drain(..tail.len() - tail_bytes);
    }
    tail
}

/// Run `spec`, streaming output, and report what happened. Never fails: a command
/// that cannot start is an observation too (exit 127 with a detail).
pub fn run(spec: &RunSpec) -> Observation {
    let started_at_ms = now_ms();
    let start = Instant::now();
    let mut cmd = Command::new(&spec.argv[0]);
    cmd.args(&spec.argv[1..])
        .stdin(if spec.echo {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    let own_group = spec.timeout.is_some();
    if own_group {
        // Its own process group, so a timeout kills everything it started.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    }
    // before the spawn: an interrupt may come as soon as the command starts (a
    // caught signal is reset to its default in the child by exec)
    let guard = InterruptGuard::install();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let detail = format!("could not start {:?}: {e}", spec.argv[0]);
            return Observation {
                exit_code: 127,
                started_at_ms,
                duration_ms: start.elapsed().as_millis() as u64,
                stdout_tail: Vec::new(),
                stderr_tail: detail.clone().into_bytes(),
                log: Vec::new(),
                output_bytes: 0,
                log_truncated: false,
                detail,
                interrupted: None,
            };
        }
    };
    let combined = Arc::new(Mutex::new(Combined::default()));
    let out = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    let (limit, tail) = (spec.log_limit, spec.tail_bytes);
    let c1 = combined.clone();
    let echo = spec.echo;
    let t_out = std::thread::spawn(move || {
        let to: Box<dyn Write> = if echo {
            Box::new(std::io::stdout())
        } else {
            Box::new(std::io::sink())
        };
        pump(out, to, c1, limit, tail)
    });
    let c2 = combined.clone();
    let t_err = std::thread::spawn(move || {
        let to: Box<dyn Write> = if echo {
            Box::new(std::io::stderr())
        } else {
            Box::new(std::io::sink())
        };
        pump(err, to, c2, limit, tail)
    });

    let mut timed_out = false;
    let mut passed_on = 0;
    let deadline = spec.timeout.map(|limit| start + limit);
    // Told the moment the command ends, so the loop below wakes then, not at
    // its next look (which came up to 20 ms late: a range run of quick checks
    // spent a fifth of its time there).
    let mut ended = Some(crate::store::remote::ended_signal(&child));
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if deadline.is_some_and(|d| Instant::now() >= d) => {
                timed_out = true;
                // kill the whole group: `sh -c` may have started children
                // (a signal, not a `kill` found on PATH: with a sealed PATH
                // only the direct child would die, and the output threads
                // would wait on its children)
                signal_group(&child, libc::SIGKILL);
                let _ = child.kill();
                break child.wait();
            }
            Ok(None) => {
                let sig = INTERRUPTED.load(Ordering::SeqCst);
                if sig != 0 && sig != passed_on && own_group {
                    // a terminal's Ctrl-C reached only us: the command is not
                    // in the foreground group
                    signal_group(&child, sig);
                    passed_on = sig;
                }
                // wake when it ends, or to look at the clock and at signals
                let mut step = Duration::from_millis(20);
                if let Some(d) = deadline {
                    step = step.min(d.saturating_duration_since(Instant::now()));
                }
                match ended.as_ref().map(|rx| rx.recv_timeout(step)) {
                    Some(Err(std::sync::mpsc::RecvTimeoutError::Timeout)) => {}
                    // it ended (the next look reaps it), or the waiter could
                    // not wait: from now on, look every step
                    Some(_) => ended = None,
                    None => std::thread::sleep(step),
                }
            }
            Err(e) => break Err(e),
        }
    };
    let interrupted = Some(INTERRUPTED.load(Ordering::SeqCst)).filter(|s| *s != 0);
    drop(guard);
    let stdout_tail = t_out.join().unwrap_or_default();
    let stderr_tail = t_err.join().unwrap_or_default();
    let duration_ms = start.elapsed().as_millis() as u64;
    let c = std::mem::take(&mut *combined.lock().expect("threads joined"));
    let (exit_code, detail) = match status {
        Err(e) => (127, format!("could not wait for the command: {e}")),
        Ok(_) if timed_out => (
            124,
            format!(
                "timed out after {}s and was killed",
                spec.timeout.unwrap_or_default().as_secs()
            ),
        ),
        Ok(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
            (Some(code), _) => (i64::from(code), String::new()),
            (None, Some(sig)) => (128 + i64::from(sig), format!("killed by signal {sig}")),
            (None, None) => (127, "ended without an exit code".into()),
        },
    };
    Observation {
        exit_code,
        detail,
        started_at_ms,
        duration_ms,
        stdout_tail,
        stderr_tail,
        log: c.log,
        output_bytes: c.total,
        log_truncated: c.truncated,
        interrupted,
    }
}

/// Lossy UTF-8 of a tail, starting at a character boundary.
pub fn tail_text(bytes: &[u8]) -> String {
    let mut start = 0;
    // skip UTF-8 continuation bytes the cut left at the front
    while start < bytes.len() && start < 3 && (bytes[start] & 0xC0) == 0x80 {
        start += 1;
    }
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// Output read from elsewhere (`record --log`), as a run would keep it.
#[derive(Debug, Default)]
pub struct Captured {
    /// The first `limit` bytes.
    pub log: Vec<u8>,
    /// How many bytes there were in all.
    pub total: u64,
    /// More than `limit` bytes.
    pub truncated: bool,
    /// The last `tail_bytes` bytes.
    pub tail: Vec<u8>,
}

/// Read `from` to its end, keeping what a run keeps (the log up to `limit`, the
/// tail, the count) and nothing more, so a log of any size costs bounded memory.
pub fn capture(from: impl Read, limit: usize, tail_bytes: usize) -> std::io::Result<Captured> {
    let combined = Arc::new(Mutex::new(Combined::default()));
    let mut counting = ErrorKeeper {
        inner: from,
        error: None,
    };
    let tail = pump(
        &mut counting,
        std::io::sink(),
        combined.clone(),
        limit,
        tail_bytes,
    );
    if let Some(e) = counting.error {
        return Err(e);
    }
    let c = std::mem::take(&mut *combined.lock().expect("no panics while holding"));
    Ok(Captured {
        log: c.log,
        total: c.total,
        truncated: c.truncated,
        tail,
    })
}

/// A reader that remembers the error `pump` stops at, so `capture` can report it.
struct ErrorKeeper<R> {
    inner: R,
    error: Option<std::io::Error>,
}

impl<R: Read> Read for ErrorKeeper<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.inner.read(buf) {
            Err(e) if e.kind() != std::io::ErrorKind::Interrupted => {
                self.error = Some(std::io::Error::new(e.kind(), e.to_string()));
                Err(e)
            }
            other => other,
        }
    }
}
