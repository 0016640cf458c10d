//! Full output logs, kept beside the chains: `refs/receipt-logs/<writer>/<blob>`.
//!
//! A v2 receipt's chain commit holds `receipt.json` only; the signed body names the
//! log by blob id, size and SHA-256 (`result.log`, `log_bytes`, `log_sha256`). The
//! log itself is a blob that one ref per log keeps reachable, named by the writer
//! and the blob id, so a clone can fetch exactly the log it wants and nothing else,
//! and a log fetched from anywhere is checked against the signature before it is
//! shown. Log refs are the only receipt refs that may go away (`prune-logs`); the
//! receipts stay, with their signed tails, and still verify. v1 receipts keep their
//! log in the chain commit's tree (`output.log`).
//!
//! Written in the same crash-safe order as everything else: the blob first, then
//! the chain ref, then the log ref (and notes); a crash before the log ref leaves a
//! receipt whose log ref the next append or `git receipt reindex` creates.

use gix::ObjectId;
use gix::refs::transaction::PreviousValue;
use sha2::{Digest as _, Sha256};

use super::{Store, StoreError, git_err};
use crate::receipt::Body;

/// Prefix of log refs.
pub const LOG_PREFIX: &str = "refs/receipt-logs/";

/// The largest log `git receipt show --log` (and the MCP `log` tool, which reads
/// through it) reads to display (32 MiB, four times the default
/// `receipt.logLimit`): a log is checked against its signature before a byte is
/// shown, so it is read whole, and a larger one is refused from its object header,
/// unread. `git cat-file blob <blob>` streams such a log (unchecked).
pub const MAX_LOG_DISPLAY_BYTES: u64 = 32 << 20;

/// Why a log of `size` bytes is not read for display, if it is over
/// [`MAX_LOG_DISPLAY_BYTES`] (`git cat-file blob` streams it, unchecked).
pub fn too_large_to_show(size: u64) -> Option<String> {
    (size > MAX_LOG_DISPLAY_BYTES).then(|| {
        format!(
            "the log is {size} bytes, over the {MAX_LOG_DISPLAY_BYTES}-byte (32 MiB) limit for showing a log, so it is not read"
        )
    })
}

/// The ref that keeps `writer`'s log blob `blob`.
pub fn log_ref(writer: &str, blob: &ObjectId) -> String {
    format!("{LOG_PREFIX}{writer}/{blob}")
}

/// `sha256:<hex>` of a log's bytes, as v2 receipts sign it.
pub fn log_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Why a log's bytes are not the log a receipt signed.
pub fn log_mismatch(body: &Body, blob: &ObjectId, bytes: &[u8]) -> Option<String> {
    let r = &body.result;
    if r.log.as_deref() != Some(blob.to_string().as_str()) {
        return Some(format!(
            "blob {blob} is not the log receipt names ({})",
            r.log.as_deref().unwrap_or("none")
        ));
    }
    if let Some(size) = r.log_bytes
        && size != bytes.len() as u64
    {
        return Some(format!(
            "the log has {} bytes, but the receipt signed {size}",
            bytes.len()
        ));
    }
    if let Some(Some(digest)) = &r.log_sha256
        && *digest != log_digest(bytes)
    {
        return Some(format!(
            "the log's SHA-256 is {}, but the receipt signed {digest}",
            log_digest(bytes)
        ));
    }
    // v1 receipts sign only the blob id: the bytes must hash to it
    let id = gix::objs::compute_hash(blob.kind(), gix::objs::Kind::Blob, bytes).ok()?;
    (id != *blob).then(|| format!("the log's bytes hash to blob {id}, not {blob}"))
}

/// One log ref as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRef {
    /// The full ref name.
    pub name: String,
    /// The writer part of the name.
    pub writer: String,
    /// The blob id the name gives, if it is one.
    pub named: Option<ObjectId>,
    /// What the ref points at.
    pub target: ObjectId,
}

impl Store {
    /// Keep `writer`'s log blob reachable under its log ref (no-op when it is).
    pub fn set_log_ref(&self, writer: &str, blob: ObjectId) -> Result<(), StoreError> {
        let name = log_ref(writer, &blob);
        if self.ref_value(&name)? == Some(blob) {
            return Ok(());
        }
        super::refs_may_have_moved();
        self.repo
            .reference(
                name.as_str(),
                blob,
                PreviousValue::Any,
                "git-receipt: keep a log",
            )
            .map_err(git_err(format!("writing {name}")))?;
        Ok(())
    }

    /// Keep `writer`'s log blob `blob` (whose bytes are `bytes`) under its log
    /// ref, and on disk: a prune may have deleted it between its writing (before
    /// the receipt) and the log ref.
    pub(crate) fn keep_log(
        &self,
        writer: &str,
        blob: ObjectId,
        bytes: &[u8],
    ) -> Result<(), StoreError> {
        let written = super::concurrent_gc::Written::blob(blob, bytes, "the output log");
        let refname = log_ref(writer, &blob);
        // first on disk, so that the ref never names a missing blob for long
        self.keep_written(&refname, std::slice::from_ref(&written))?;
        self.set_log_ref(writer, blob)?;
        self.keep_written(&refname, &[written])
    }

    /// Every ref under `prefix` that names an object, with it, sorted by name; a ref
    /// that cannot be read is skipped (verify reports log refs that lie).
    fn object_refs_under(&self, prefix: &str) -> Result<Vec<(String, ObjectId)>, StoreError> {
        let refs = self
            .repo
            .references()
            .map_err(git_err("listing references"))?;
        let mut out = Vec::new();
        for r in refs
            .prefixed(prefix)
            .map_err(git_err(format!("listing {prefix}")))?
            .flatten()
        {
            if let Some(id) = r.target().try_id() {
                out.push((r.name().as_bstr().to_string(), id.to_owned()));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Every log ref here, sorted by name.
    pub fn log_refs(&self) -> Result<Vec<LogRef>, StoreError> {
        let mut out = Vec::new();
        for (name, target) in self.object_refs_under(LOG_PREFIX)? {
            let rest = &name[LOG_PREFIX.len()..];
            let (writer, blob) = rest.rsplit_once('/').unwrap_or(("", rest));
            out.push(LogRef {
                writer: writer.to_owned(),
                named: ObjectId::from_hex(blob.as_bytes()).ok(),
                target,
                name,
            });
        }
        Ok(out)
    }

    /// The size of a log blob from its object header (nothing is read), if this
    /// repository has it.
    pub fn log_size(&self, blob: ObjectId) -> Option<u64> {
        self.repo.find_header(blob).ok().map(|h| h.size())
    }

    /// The bytes of a log blob, if this repository has it. Callers bound the size
    /// first ([`Store::log_size`]).
    pub fn log_bytes(&self, blob: ObjectId) -> Result<Option<Vec<u8>>, StoreError> {
        if !self.repo.has_object(blob) {
            return Ok(None);
        }
        self.blob(blob).map(Some)
    }

    /// Delete a log ref (the log becomes unreachable here; `git gc` drops it).
    pub fn delete_log_ref(&self, name: &str) -> Result<(), StoreError> {
        let out = self.run_git(&["update-ref", "-d", name])?;
        if !out.ok {
            return Err(StoreError::GitCommand {
                args: format!("update-ref -d {name}"),
                stderr: out.stderr,
            });
        }
        Ok(())
    }
}

/// What fetching one log from a remote gave.
#[derive(Debug)]
pub enum FetchedLog {
    /// The remote's log ref points at the blob its name gives; its bytes.
    Bytes(Vec<u8>),
    /// The remote has no such log ref (nobody pushed the log, or it was pruned).
    Absent,
    /// The remote's log ref points at another object.
    Mismatch(String),
    /// The log is too large to show ([`too_large_to_show`] says why); not read.
    TooLarge(String),
}

impl Store {
    /// Fetch log refs from `remote` with `spec` into a staging namespace only
    /// (`--refmap=`: nothing reaches a local log ref before it is checked).
    fn fetch_staged_logs(&self, remote: &str, spec: &str) -> Result<(), StoreError> {
        let out = self.run_git(&[
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--refmap=",
            remote,
            spec,
        ])?;
        if out.ok {
            Ok(())
        } else {
            Err(StoreError::GitCommand {
                args: format!("fetch {remote} {spec}"),
                stderr: out.stderr,
            })
        }
    }

    /// Fetch exactly one log, `writer`'s blob `blob`, from `remote` (through a
    /// staging ref, so nothing local changes unless it is the blob named).
    pub fn fetch_log(
        &self,
        remote: &str,
        writer: &str,
        blob: ObjectId,
    ) -> Result<FetchedLog, StoreError> {
        let name = log_ref(writer, &blob);
        let staged = format!(
            "refs/receipt-logs-incoming/{}/{writer}/{blob}",
            super::remote::staging_name(remote)
        );
        if let Err(e) = self.fetch_staged_logs(remote, &format!("+{name}:{staged}")) {
            if let StoreError::GitCommand { stderr, .. } = &e {
                let stderr = stderr.to_ascii_lowercase();
                if stderr.contains("couldn't find remote ref")
                    || stderr.contains("could not find remote ref")
                {
                    return Ok(FetchedLog::Absent);
                }
            }
            return Err(e);
        }
        let target = self.ref_value(&staged)?;
        self.delete_log_ref(&staged)?;
        match target {
            Some(t) if t == blob => match self.log_size(blob).and_then(too_large_to_show) {
                Some(why) => Ok(FetchedLog::TooLarge(why)),
                None => Ok(FetchedLog::Bytes(self.blob(blob)?)),
            },
            Some(t) => Ok(FetchedLog::Mismatch(format!(
                "{remote}'s {name} points at {t}, not at the blob its name gives"
            ))),
            None => Ok(FetchedLog::Absent),
        }
    }

    /// Fetch every log ref `remote` has into a staging namespace, and keep those
    /// that point at the blob their name gives (and that this clone lacks). Returns
    /// how many were taken and why others were refused.
    pub fn fetch_all_logs(&self, remote: &str) -> Result<(usize, Vec<String>), StoreError> {
        let staging = format!(
            "refs/receipt-logs-incoming/{}/",
            super::remote::staging_name(remote)
        );
        self.fetch_staged_logs(remote, &format!("+{LOG_PREFIX}*:{staging}*"))?;
        let mut taken = 0;
        let mut refused = Vec::new();
        for (staged, target) in self.object_refs_under(&staging)? {
            let rest = staged[staging.len()..].to_owned();
            self.delete_log_ref(&staged)?;
            let named = rest.rsplit_once('/').and_then(|(w, b)| {
                crate::receipt::is_valid_writer_id(w)
                    .then(|| ObjectId::from_hex(b.as_bytes()).ok())
                    .flatten()
                    .map(|b| (w.to_owned(), b))
            });
            let is_blob = self
                .repo
                .find_header(target)
                .is_ok_and(|h| h.kind() == gix::object::Kind::Blob);
            match named {
                Some((writer, blob)) if blob == target && is_blob => {
                    if self.ref_value(&log_ref(&writer, &blob))?.is_none() {
                        self.set_log_ref(&writer, blob)?;
                        taken += 1;
                    }
                }
                _ => refused.push(format!(
                    "{remote}'s {LOG_PREFIX}{rest} points at {target}, not at the blob its name gives"
                )),
            }
        }
        Ok((taken, refused))
    }
}
