//! `git receipt reindex`: rebuild the receipt index and the notes from the chains.

use std::process::ExitCode;

use anyhow::Result;
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
    for (writer, _) in &writers {
        if git_receipt::receipt::is_valid_writer_id(writer) {
            store.reindex_notes(writer)?;
        }
    }
    eprintln!(
        "git-receipt: rebuilt the receipt index ({receipts} receipt{}) and the notes of {} chain{}",
        if receipts == 1 { "" } else { "s" },
        writers.len(),
        if writers.len() == 1 { "" } else { "s" }
    );
    Ok(ExitCode::SUCCESS)
}
