//! A file removed in place, for a change that leaves it out of a set of
//! files (the digest ledger re-sharded to fewer files): backed up first,
//! then removed only while no process has it open for writing, the
//! directory fsynced after.

use std::fs;
use std::path::Path;

use super::error::{ChangeLog, Done, WriteError, io_err};
use super::lease::hold_unchanged;
use super::{Original, parent_or_dot, sync_dir};
use crate::store::error::in_words;
use crate::store::failpoint;

/// Removes `target`, the file `original` was read from: `before_remove`
/// (the backup) runs first and may fail the removal; then, under a read
/// lease on the original (no process can open it for writing meanwhile),
/// it must still be the file that was read, not grown by a byte, and a
/// process that has it open for writing is refused ([`WriteError::Busy`]).
/// The directory is fsynced after: until then a power loss may bring the
/// file back, which loses nothing.
pub fn remove_in_place(
    changes: &ChangeLog,
    target: &Path,
    original: &Original<'_>,
    before_remove: impl FnOnce() -> Result<(), WriteError>,
) -> Result<(), WriteError> {
    before_remove()?;
    failpoint::hit("before-remove").map_err(io_err(target, "remove"))?;
    let held = hold_unchanged(original, target)?;
    fs::remove_file(target).map_err(io_err(target, "remove"))?;
    changes.record(target, Done::Removed);
    drop(held);
    let unsynced = |why: String| {
        WriteError::after(
            target,
            Done::Removed,
            format!("could not fsync its directory ({why}); a power loss may bring it back"),
        )
    };
    failpoint::hit("after-remove").map_err(|err| unsynced(in_words(&err)))?;
    sync_dir(parent_or_dot(target)).map_err(|e| {
        unsynced(match &e {
            WriteError::Io { err, .. } => in_words(err),
            other => other.to_string(),
        })
    })
}
