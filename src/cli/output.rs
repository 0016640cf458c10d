//! Writing to standard output and standard error without ever panicking.
//!
//! std's `println!` and `eprintln!` panic when the write fails: a full disk
//! under `> file` or `2> file`, a closed descriptor, a pipe whose reader left
//! while SIGPIPE is ignored (as `run` and `record` have it). The binary
//! shadows those macros (see `main.rs`) with these functions, so that no
//! output error reaches a panic and none loses a receipt:
//!
//! - standard error carries messages about the work, never its result: a
//!   failed write of one is dropped, and the command goes on;
//! - standard output carries the result: the first failed write is kept, later
//!   output is dropped, the command still finishes what it does (a receipt is
//!   still stored), and [`finish`] then makes it an error naming the stream and
//!   the system's words (exit 2), as `git log > /dev/full` does.

use std::io::Write as _;
use std::sync::OnceLock;

/// The first write to standard output that failed, in the system's words.
static STDOUT_FAILED: OnceLock<String> = OnceLock::new();

/// `print!`: write to standard output, keeping the first failure for [`finish`].
pub(crate) fn out(args: std::fmt::Arguments<'_>) {
    if STDOUT_FAILED.get().is_some() {
        return;
    }
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        let _ = STDOUT_FAILED.set(e.to_string());
    }
}

/// `eprint!`: write to standard error; a failure is dropped (there is no other
/// stream to tell it on).
pub(crate) fn err(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// Write a command's whole result to standard output; a failure names the
/// stream.
pub(crate) fn write_stdout(bytes: &[u8]) -> Result<(), StdoutFailed> {
    let mut o = std::io::stdout().lock();
    o.write_all(bytes)
        .and_then(|_| o.flush())
        .map_err(|e| StdoutFailed(e.to_string()))
}

/// Flush standard output; the first write to it that failed, if one did.
pub(crate) fn finish() -> Option<String> {
    if let Err(e) = std::io::stdout().lock().flush() {
        let _ = STDOUT_FAILED.set(e.to_string());
    }
    STDOUT_FAILED.get().cloned()
}

/// A command's result that could not be written to standard output.
#[derive(Debug)]
pub(crate) struct StdoutFailed(pub String);

impl std::fmt::Display for StdoutFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "could not write to standard output: {}; what the command stored is kept",
            self.0
        )
    }
}

impl std::error::Error for StdoutFailed {}

/// On a terminal: one line, rewritten in place, while a transfer waits on its
/// remote, and gone when it ends.
pub(crate) fn show_waiting(w: &git_receipt::store::remote::Waiting) {
    if w.done {
        err(format_args!("\r\x1b[K"));
        return;
    }
    let gives_up = match w.limit {
        Some(l) => format!("gives up at {}s, receipt.networkTimeout", l.as_secs()),
        None => "no time limit: receipt.networkTimeout is 0".to_owned(),
    };
    err(format_args!(
        "\rgit-receipt: waiting on the remote: {} ({}s; {gives_up})\x1b[K",
        // a remote's name is the user's own config, but may hold anything
        git_receipt::text::escape(&w.what),
        w.elapsed.as_secs(),
    ));
}
