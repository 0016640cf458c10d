//! Signing through ssh-agent: the few messages of the agent protocol that receipts
//! need, over the Unix socket named by `SSH_AUTH_SOCK`.
//!
//! The agent protocol (draft-miller-ssh-agent) frames every message as a `u32`
//! big-endian length, a type byte and the contents. git-receipt sends two requests:
//!
//! - `SSH_AGENTC_REQUEST_IDENTITIES` (11), answered by `SSH_AGENT_IDENTITIES_ANSWER`
//!   (12): which public keys the agent holds, so a key it lacks is reported by its
//!   fingerprint before a check runs, not after;
//! - `SSH_AGENTC_SIGN_REQUEST` (13) with the key blob, the data and flags 0, answered
//!   by `SSH_AGENT_SIGN_RESPONSE` (14) holding `string("ssh-ed25519") string(sig)`,
//!   or by `SSH_AGENT_FAILURE` (5) when it will not sign.
//!
//! The data the agent signs is the SSHSIG *signed data*, byte for byte what an
//! in-process key signs, so a receipt does not tell (and need not tell) where its key
//! lived. An agent's answer is hostile input like any other: lengths are bounded, and
//! the signature is verified strictly before it is used (see the `sign` module).
//!
//! A small client of our own rather than a crate: it is these two requests, and the
//! wire helpers are the ones SSHSIG already needs.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::wire::{WireReader, put_string};

/// `SSH_AGENT_FAILURE`.
const AGENT_FAILURE: u8 = 5;
/// `SSH_AGENTC_REQUEST_IDENTITIES`.
const REQUEST_IDENTITIES: u8 = 11;
/// `SSH_AGENT_IDENTITIES_ANSWER`.
const IDENTITIES_ANSWER: u8 = 12;
/// `SSH_AGENTC_SIGN_REQUEST`.
const SIGN_REQUEST: u8 = 13;
/// `SSH_AGENT_SIGN_RESPONSE`.
const SIGN_RESPONSE: u8 = 14;

/// Answers longer than this are refused unread (OpenSSH's own limit is 256 KiB).
const MAX_ANSWER_LEN: usize = 256 * 1024;

/// How long one request may wait on the agent (each write and each read of the
/// socket) unless `GIT_RECEIPT_AGENT_TIMEOUT` or git config `receipt.agentTimeout`
/// says otherwise: an agent that never answers (a stopped process, a forwarded
/// socket whose far end hung) must not hold a command forever.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The timeout set by [`set_timeout`], in milliseconds (0: none set).
static TIMEOUT_MS: AtomicU64 = AtomicU64::new(0);

/// Set the agent timeout for this process (the CLI passes git config
/// `receipt.agentTimeout`); `GIT_RECEIPT_AGENT_TIMEOUT` still wins.
pub fn set_timeout(timeout: Duration) {
    let ms = u64::try_from(timeout.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    TIMEOUT_MS.store(ms, Ordering::Relaxed);
}

/// Seconds, as `receipt.agentTimeout` and `GIT_RECEIPT_AGENT_TIMEOUT` give them: a
/// positive number, fractions allowed (`0.5`).
pub fn parse_timeout(text: &str) -> Option<Duration> {
    let secs: f64 = text.trim().parse().ok()?;
    (secs.is_finite() && secs > 0.0 && secs <= 86_400.0).then(|| Duration::from_secs_f64(secs))
}

/// The timeout in force: `GIT_RECEIPT_AGENT_TIMEOUT` (seconds), else what
/// [`set_timeout`] set, else [`DEFAULT_TIMEOUT`]. A variable that is not a number
/// of seconds is an error, not a silent default.
pub fn timeout() -> Result<Duration, AgentError> {
    if let Some(value) = std::env::var_os("GIT_RECEIPT_AGENT_TIMEOUT").filter(|v| !v.is_empty()) {
        let text = value.to_string_lossy();
        return parse_timeout(&text).ok_or_else(|| AgentError::BadTimeout {
            setting: "GIT_RECEIPT_AGENT_TIMEOUT",
            value: text.into_owned(),
        });
    }
    Ok(match TIMEOUT_MS.load(Ordering::Relaxed) {
        0 => DEFAULT_TIMEOUT,
        ms => Duration::from_millis(ms),
    })
}

/// A duration for messages: `30s`, `0.5s`.
fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// Why the agent could not be used.
///
/// Each message says what to do next; none carries key material (an agent never
/// gives out private keys anyway).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// `SSH_AUTH_SOCK` is not set (or empty).
    #[error(
        "the signing key {fingerprint} is to be used through ssh-agent, but SSH_AUTH_SOCK is not set"
    )]
    NoSocket {
        /// The fingerprint of the key that was to sign.
        fingerprint: String,
        /// The private key file to `ssh-add`, when known.
        key_file: Option<PathBuf>,
    },

    /// Nothing answers at `SSH_AUTH_SOCK`.
    #[error(
        "cannot reach ssh-agent at {} (SSH_AUTH_SOCK): {source}",
        .socket.display()
    )]
    Unreachable {
        /// The socket path.
        socket: PathBuf,
        /// The connection error.
        source: io::Error,
    },

    /// The connection broke, or the agent answered something that is not the protocol.
    #[error(
        "ssh-agent at {} gave no usable answer: {reason}",
        .socket.display()
    )]
    Protocol {
        /// The socket path.
        socket: PathBuf,
        /// What went wrong.
        reason: String,
    },

    /// The agent accepted the connection but did not answer in time.
    #[error(
        "ssh-agent at {} (SSH_AUTH_SOCK) did not answer within {}",
        .socket.display(),
        seconds(*.timeout)
    )]
    TimedOut {
        /// The socket path.
        socket: PathBuf,
        /// How long it waited.
        timeout: Duration,
    },

    /// `receipt.agentTimeout` or `GIT_RECEIPT_AGENT_TIMEOUT` is not a number of seconds.
    #[error("{setting} = {value:?} is not a number of seconds")]
    BadTimeout {
        /// Which setting.
        setting: &'static str,
        /// What it holds.
        value: String,
    },

    /// The agent does not hold the key.
    #[error(
        "ssh-agent at {} does not hold the signing key {fingerprint}",
        .socket.display()
    )]
    LacksKey {
        /// The socket path.
        socket: PathBuf,
        /// The fingerprint of the key the agent lacks.
        fingerprint: String,
        /// The private key file to `ssh-add`, when known.
        key_file: Option<PathBuf>,
    },

    /// The agent holds the key but would not sign.
    #[error(
        "ssh-agent at {} refused to sign with {fingerprint}",
        .socket.display()
    )]
    Refused {
        /// The socket path.
        socket: PathBuf,
        /// The fingerprint of the key.
        fingerprint: String,
    },

    /// The agent's signature does not verify under the key it was asked to use.
    #[error(
        "ssh-agent at {} returned a signature that does not verify under {fingerprint}; \
         nothing was written",
        .socket.display()
    )]
    BadSignature {
        /// The socket path.
        socket: PathBuf,
        /// The fingerprint of the key.
        fingerprint: String,
    },
}

/// An ssh-agent, reached through its Unix socket. Each request opens a connection
/// of its own, as `ssh-add` does, so the handle can be kept for a whole command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    socket: PathBuf,
}

impl Agent {
    /// The agent at `SSH_AUTH_SOCK`, or `None` when the variable is unset or empty.
    /// Nothing is connected yet.
    pub fn from_env() -> Option<Agent> {
        std::env::var_os("SSH_AUTH_SOCK")
            .filter(|v| !v.is_empty())
            .map(|socket| Agent::at(PathBuf::from(socket)))
    }

    /// The agent listening on `socket`.
    pub fn at(socket: PathBuf) -> Agent {
        Agent { socket }
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The public key blobs (SSH wire format) of every key the agent holds.
    pub fn identities(&self) -> Result<Vec<Vec<u8>>, AgentError> {
        let answer = self.request(REQUEST_IDENTITIES, &[])?;
        let bad = |reason: &str| self.protocol(reason);
        let (&kind, rest) = answer.split_first().ok_or_else(|| bad("an empty answer"))?;
        match kind {
            IDENTITIES_ANSWER => {}
            AGENT_FAILURE => return Err(bad("it refused to list its keys")),
            other => return Err(self.protocol(&format!("message type {other} to a key list"))),
        }
        let mut reader = WireReader::new(rest);
        let count = reader.u32().ok_or_else(|| bad("a truncated key list"))?;
        let mut blobs = Vec::new();
        for _ in 0..count {
            let blob = reader.string().ok_or_else(|| bad("a truncated key list"))?;
            reader.string().ok_or_else(|| bad("a truncated key list"))?;
            blobs.push(blob.to_vec());
        }
        Ok(blobs)
    }

    /// Ask the agent to sign `data` with the Ed25519 key whose public key blob is
    /// `key_blob`; the raw 64-byte signature. `Ok(None)` when the agent answers
    /// `SSH_AGENT_FAILURE` (it lacks the key or refused). The caller verifies.
    pub fn sign_ed25519(
        &self,
        key_blob: &[u8],
        data: &[u8],
    ) -> Result<Option<[u8; 64]>, AgentError> {
        let mut request = Vec::with_capacity(key_blob.len() + data.len() + 12);
        put_string(&mut request, key_blob);
        put_string(&mut request, data);
        request.extend_from_slice(&0u32.to_be_bytes()); // flags
        let answer = self.request(SIGN_REQUEST, &request)?;
        let bad = |reason: &str| self.protocol(reason);
        let (&kind, rest) = answer.split_first().ok_or_else(|| bad("an empty answer"))?;
        match kind {
            SIGN_RESPONSE => {}
            AGENT_FAILURE => return Ok(None),
            other => {
                return Err(self.protocol(&format!("message type {other} to a signing request")));
            }
        }
        let mut outer = WireReader::new(rest);
        let blob = outer
            .string()
            .filter(|_| outer.is_empty())
            .ok_or_else(|| bad("a malformed signature message"))?;
        let mut inner = WireReader::new(blob);
        let algorithm = inner.string().ok_or_else(|| bad("a truncated signature"))?;
        if algorithm != b"ssh-ed25519" {
            return Err(self.protocol(&format!(
                "a signature of type {:?}, not ssh-ed25519",
                String::from_utf8_lossy(algorithm)
            )));
        }
        let signature = inner
            .string()
            .filter(|_| inner.is_empty())
            .and_then(|s| <[u8; 64]>::try_from(s).ok())
            .ok_or_else(|| bad("an Ed25519 signature that is not 64 bytes"))?;
        Ok(Some(signature))
    }

    /// Send one message and read one answer (its type byte and contents).
    fn request(&self, kind: u8, contents: &[u8]) -> Result<Vec<u8>, AgentError> {
        let mut stream =
            UnixStream::connect(&self.socket).map_err(|source| AgentError::Unreachable {
                socket: self.socket.clone(),
                source,
            })?;
        // Every write and read on the socket is bounded: a deadline for the whole
        // request, re-armed before each call with what is left of it.
        let timeout = timeout()?;
        let deadline = std::time::Instant::now() + timeout;
        let timed_out = || AgentError::TimedOut {
            socket: self.socket.clone(),
            timeout,
        };
        let arm = |stream: &UnixStream| -> Result<(), AgentError> {
            let left = deadline
                .checked_duration_since(std::time::Instant::now())
                .filter(|d| !d.is_zero())
                .ok_or_else(timed_out)?;
            stream
                .set_read_timeout(Some(left))
                .and_then(|()| stream.set_write_timeout(Some(left)))
                .map_err(|err| self.protocol(&format!("the socket cannot time out ({err})")))
        };
        let io_error = |err: io::Error| match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => timed_out(),
            _ => self.protocol(&format!("the connection failed ({err})")),
        };
        let len = u32::try_from(contents.len() + 1)
            .map_err(|_| self.protocol("a request too large to send"))?;
        let mut message = Vec::with_capacity(contents.len() + 5);
        message.extend_from_slice(&len.to_be_bytes());
        message.push(kind);
        message.extend_from_slice(contents);
        arm(&stream)?;
        stream.write_all(&message).map_err(io_error)?;

        // read_exact would re-arm nothing between its reads: an agent trickling a
        // byte at a time must not stretch the deadline, so each read is armed
        let read_full = |stream: &mut UnixStream, buf: &mut [u8]| -> Result<(), AgentError> {
            let mut at = 0;
            while at < buf.len() {
                arm(stream)?;
                match stream.read(&mut buf[at..]) {
                    Ok(0) => {
                        return Err(io_error(io::ErrorKind::UnexpectedEof.into()));
                    }
                    Ok(n) => at += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io_error(e)),
                }
            }
            Ok(())
        };
        let mut len = [0u8; 4];
        read_full(&mut stream, &mut len)?;
        let len = usize::try_from(u32::from_be_bytes(len)).unwrap_or(usize::MAX);
        if len > MAX_ANSWER_LEN {
            return Err(self.protocol(&format!(
                "an answer of {len} bytes, over the {} KiB limit",
                MAX_ANSWER_LEN / 1024
            )));
        }
        let mut answer = vec![0u8; len];
        read_full(&mut stream, &mut answer)?;
        Ok(answer)
    }

    fn protocol(&self, reason: &str) -> AgentError {
        AgentError::Protocol {
            socket: self.socket.clone(),
            reason: reason.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    /// A one-connection agent that answers every request with `answer` (framed).
    fn fake_agent(answer: Vec<u8>) -> (tempfile::TempDir, Agent, std::thread::JoinHandle<Vec<u8>>) {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("agent.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let handle = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut len = [0u8; 4];
            stream.read_exact(&mut len).unwrap();
            let mut request = vec![0u8; u32::from_be_bytes(len) as usize];
            stream.read_exact(&mut request).unwrap();
            stream.write_all(&answer).unwrap();
            request
        });
        (dir, Agent::at(socket), handle)
    }

    fn framed(body: &[u8]) -> Vec<u8> {
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn an_oversized_answer_is_refused_unread() {
        let (_dir, agent, handle) = fake_agent(u32::MAX.to_be_bytes().to_vec());
        let err = agent.identities().unwrap_err();
        assert!(err.to_string().contains("over the 256 KiB limit"), "{err}");
        assert_eq!(handle.join().unwrap(), vec![REQUEST_IDENTITIES]);
    }

    #[test]
    fn a_key_count_larger_than_the_answer_is_a_protocol_error() {
        let mut body = vec![IDENTITIES_ANSWER];
        body.extend_from_slice(&1_000_000u32.to_be_bytes());
        let (_dir, agent, _handle) = fake_agent(framed(&body));
        let err = agent.identities().unwrap_err();
        assert!(err.to_string().contains("truncated key list"), "{err}");
    }

    #[test]
    fn a_signature_of_another_type_is_refused() {
        let mut sig = Vec::new();
        put_string(&mut sig, b"rsa-sha2-512");
        put_string(&mut sig, &[0u8; 64]);
        let mut body = vec![SIGN_RESPONSE];
        put_string(&mut body, &sig);
        let (_dir, agent, handle) = fake_agent(framed(&body));
        let err = agent.sign_ed25519(b"blob", b"data").unwrap_err();
        assert!(err.to_string().contains("rsa-sha2-512"), "{err}");
        let mut expected = vec![SIGN_REQUEST];
        put_string(&mut expected, b"blob");
        put_string(&mut expected, b"data");
        expected.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(handle.join().unwrap(), expected, "the request on the wire");
    }

    #[test]
    fn a_failure_answer_to_signing_is_none() {
        let (_dir, agent, _handle) = fake_agent(framed(&[AGENT_FAILURE]));
        assert_eq!(agent.sign_ed25519(b"blob", b"data").unwrap(), None);
    }

    #[test]
    fn a_missing_socket_is_unreachable() {
        let dir = tempfile::tempdir().unwrap();
        let err = Agent::at(dir.path().join("nope")).identities().unwrap_err();
        assert!(matches!(err, AgentError::Unreachable { .. }), "{err}");
        assert!(err.to_string().contains("cannot reach ssh-agent"), "{err}");
    }
}
