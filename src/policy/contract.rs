//! The contract a revision is held to: its `.gitreceipts`, parsed once per blob
//! (the parse is memoized by blob id, so judging a thousand commits that share
//! one contract parses it once).

use std::sync::Arc;

use gix::ObjectId;

use super::PolicyError;
use crate::contract::Contract;
use crate::store::Store;

/// `.gitreceipts` at `commit` (empty when there is none), named `label` in errors.
pub fn contract_at(
    store: &Store,
    commit: ObjectId,
    label: &str,
) -> Result<Arc<Contract>, PolicyError> {
    use crate::contract::FILE_NAME;
    Ok(match store.file_id_at(commit, FILE_NAME)? {
        Some(id) => Contract::parse_blob(
            id,
            std::path::Path::new(&format!(".gitreceipts at {label}")),
            || -> Result<Vec<u8>, PolicyError> { Ok(store.blob(id)?) },
        )?,
        None => Default::default(),
    })
}
