//! Appending in place: seal the end of the file (cut a torn tail, or end
//! the last line), then the records in one write, each step fsynced.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::Identity;
use super::error::{ChangeLog, Done, WriteError, io_err, open_err};
use super::lease::lease;
use crate::store::error::in_words;
use crate::store::failpoint;

/// How to make the end of a file safe to append to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seal {
    /// It ends with a line terminator (or is empty).
    Clean,
    /// Cut it to this length (a torn or zero-filled tail goes).
    Truncate(u64),
    /// Its last record is complete but unterminated: add a newline.
    Newline,
}

/// What an append did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    /// How the tail was sealed.
    pub sealed: Sealed,
    /// The length of the file when this append was done: what another
    /// process appends afterwards lies beyond it.
    pub end: u64,
}

/// How the end of a file was made safe to append to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sealed {
    /// As planned.
    AsPlanned,
    /// A torn tail was ended with a newline instead of cut: no lease could
    /// be had to prove that no other process would append meanwhile, and
    /// a cut could then destroy what it appends. The torn bytes stay as a
    /// line upstream ignores.
    Terminated,
}

/// Seals the end of `target` and appends `bytes` in one write, fsyncing
/// after each step. `planned` is the file as it was read: under a write
/// lease (no other process has the file open, and none can open it until
/// the change is done), it must still be that file, not grown by a byte,
/// before anything is cut or written. Without a lease (another process
/// keeps the file open, or the file system gives none) nothing is cut: a
/// torn tail is ended with a newline instead, and records are appended
/// with `O_APPEND`, which never overwrites what another process appends.
///
/// No other descriptor of `target` may be open in this process (a write
/// lease needs that).
pub fn append(
    changes: &ChangeLog,
    target: &Path,
    planned: &Identity,
    seal: Seal,
    bytes: &[u8],
) -> Result<Appended, WriteError> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(target)
        .map_err(open_err(target, "open for appending"))?;
    let held = lease(&file, libc::F_WRLCK).ok();
    let meta = file.metadata().map_err(io_err(target, "stat"))?;
    if Identity::of(&meta) != *planned {
        return Err(WriteError::Changed {
            path: target.to_path_buf(),
        });
    }
    let words = |err: &io::Error| in_words(err);
    let mut sealed = Sealed::AsPlanned;
    let mut done: Option<Done> = None;
    let terminate = |file: &File| (&mut &*file).write_all(b"\n");
    match seal {
        Seal::Clean => {}
        Seal::Truncate(len) if held.is_some() => {
            file.set_len(len)
                .map_err(io_err(target, "cut the torn tail"))?;
            done = Some(Done::TailCut);
        }
        Seal::Truncate(_) => {
            terminate(&file).map_err(io_err(target, "end the torn last line"))?;
            sealed = Sealed::Terminated;
            done = Some(Done::TornLineEnded);
        }
        Seal::Newline => {
            terminate(&file).map_err(io_err(target, "terminate the last line"))?;
            done = Some(Done::LastLineTerminated);
        }
    }
    // A change is recorded as made, then made durable.
    let made = |what: Done| {
        changes.record(target, what);
        file.sync_all().map_err(|e| {
            WriteError::after(
                target,
                what,
                format!(
                    "the fsync after it failed ({}); a power loss may still undo it",
                    words(&e)
                ),
            )
        })
    };
    if let Some(what) = done {
        made(what)?;
        failpoint::hit("tail-cut")
            .map_err(|e| WriteError::after(target, what, format!("then {}", words(&e))))?;
    }
    let end = |file: &File| {
        file.metadata().map(|m| m.len()).map_err(|e| {
            WriteError::after(
                target,
                Done::Changed,
                format!("could not stat it: {}", words(&e)),
            )
        })
    };
    if bytes.is_empty() {
        return Ok(Appended {
            sealed,
            end: end(&file)?,
        });
    }
    failpoint::hit("before-append").map_err(|err| match done {
        Some(what) => WriteError::after(target, what, format!("appending failed: {}", words(&err))),
        None => WriteError::Io {
            path: target.to_path_buf(),
            action: "append",
            err,
        },
    })?;
    let start = file.metadata().map_err(io_err(target, "stat"))?.len();
    if let Err(err) = (&mut &file).write_all(bytes) {
        // Leave no partial record behind: under the lease nobody else has
        // written since, so cut back to where the append began.
        let now = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        let restored = now == start
            || (held.is_some() && file.set_len(start).and_then(|()| file.sync_all()).is_ok());
        return Err(match (restored, done) {
            (true, None) => WriteError::Io {
                path: target.to_path_buf(),
                action: "append",
                err,
            },
            (true, Some(what)) => WriteError::after(
                target,
                what,
                format!(
                    "appending the records failed ({}); none was appended",
                    words(&err)
                ),
            ),
            (false, _) => {
                changes.record(target, Done::PartlyAppended);
                WriteError::after(
                    target,
                    Done::PartlyAppended,
                    format!(
                        "appending failed ({}) and the part written could not be cut back: the journal ends in a torn record; run `leasejournal repair`",
                        words(&err)
                    ),
                )
            }
        });
    }
    made(Done::RecordsAppended)?;
    let end = end(&file)?;
    drop(held);
    Ok(Appended { sealed, end })
}
