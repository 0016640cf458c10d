//! `git receipt reindex`: rebuild the notes from the chains.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::Context;

/// Rebuild every writer's notes (refs/notes/receipts/*) from its chain.
///
/// Notes are a derived index; the chains under refs/receipts/ are the source of
/// truth. Use this after a crash between writing a chain and its notes, or when a
/// note is reported corrupt. Each rebuilt notes ref gets a new commit on top of the
/// old one, so nothing is lost.
#[derive(Debug, Args)]
pub struct ReindexArgs {}

/// Rebuild the notes.
pub fn cmd_reindex(ctx: &Context, _args: ReindexArgs) -> Result<ExitCode> {
    let store = ctx.store()?;
    let writers = store.writers()?;
    for (writer, _) in &writers {
        store.reindex_notes(writer)?;
    }
    eprintln!(
        "git-receipt: rebuilt notes for {} chain{}",
        writers.len(),
        if writers.len() == 1 { "" } else { "s" }
    );
    Ok(ExitCode::SUCCESS)
}
