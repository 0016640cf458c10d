//! `git receipt reindex`: rebuild the receipt index and the notes from the chains.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use super::Context;

/// Rebuild the receipt index and every writer's notes from the chains.
///
/// The chains under refs/receipts/ are the source of truth. The receipt index (in
/// the git directory, never pushed) is what status, gate, show and the hooks read;
/// every command keeps it up to date, and one found damaged is rebuilt on the spot,
/// so this is rarely needed. Notes (refs/notes/receipts/*) are a display for
/// `git log` and `git notes show`: each shows the newest receipt per check of its
/// writer. Use this after a crash between writing a chain and its notes, or when a
/// note is reported corrupt. Each rebuilt notes ref gets a new commit on top of the
/// old one, so nothing is lost.
#[derive(Debug, Args)]
pub struct ReindexArgs {}

/// Rebuild the notes.
pub fn cmd_reindex(ctx: &Context, _args: ReindexArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let index = store.rebuild_index()?;
    let receipts: u64 = index.chains().iter().map(|c| c.count).sum();
    let writers = store.writers()?;
    store.reindex_notes_of(&writers)?;
    let counts = format!(
        "{receipts} receipt{}; the notes of {} chain{}",
        if receipts == 1 { "" } else { "s" },
        writers.len(),
        if writers.len() == 1 { "" } else { "s" }
    );
    use git_receipt::store::index::IndexWrite;
    let file = store.index_path();
    match store.index_write() {
        Some(IndexWrite::Written) => {
            eprintln!(
                "git-receipt: rebuilt the receipt index {} ({counts})",
                file.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(IndexWrite::Failed(why)) => bail!(
            "rebuilt the notes ({counts}), but could not write the receipt index: {why}\nhint: nothing is lost (every command indexes the chains in memory meanwhile); free space or fix the permissions of {}, then run `git receipt reindex` again",
            file.display()
        ),
        Some(IndexWrite::Locked) => bail!(
            "rebuilt the notes ({counts}), but {}.lock is held by another process, so the receipt index was not written\nhint: run `git receipt reindex` again once it is done; a lock left by a killed process is removed when two minutes old",
            file.display()
        ),
        Some(IndexWrite::NoKey) => {
            eprintln!(
                "git-receipt: rebuilt the notes ({counts}); the receipt index is kept in memory only: no index key could be made under your config directory (see docs/format.md, \"The receipt index\")"
            );
            Ok(ExitCode::SUCCESS)
        }
        None => {
            eprintln!(
                "git-receipt: rebuilt the notes ({counts}); the receipt index file is turned off (GIT_RECEIPT_INDEX=0 or receipt.index=false), so it is indexed in memory"
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
