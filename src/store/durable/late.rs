//! Records another process appended to a journal while it was being
//! replaced: carried into the result in order, or saved beside it and
//! reported.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::error::{ChangeLog, Done, WriteError};
use super::lease::{NoLease, lease, writers_of};
use super::{Original, create_new, parent_or_dot};
use crate::store::error::in_words;

/// Bytes another process appended to a journal during its replacement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Carried {
    /// How many bytes.
    pub bytes: u64,
    /// How many lines (line feeds) they hold.
    pub lines: u64,
}

/// After `target` was renamed over: waits until no process has the
/// replaced file open for writing, and carries what was appended to it
/// since it was read (beyond `planned`) into the result `new` (whose
/// published length is `published`).
pub(super) fn settle(
    changes: &ChangeLog,
    target: &Path,
    original: &Original<'_>,
    new: &File,
    published: u64,
    new_leased: bool,
) -> Result<Option<Carried>, WriteError> {
    let done = Done::Rewritten;
    let planned = original.meta.len();
    let words = |err: &io::Error| in_words(err);
    // With the read lease, no writer has the old file open any more, and
    // none can open it again: it has no name. What it holds is final.
    let old = lease(original.file, libc::F_RDLCK);
    let old_still_written = matches!(old, Err(NoLease::Busy))
        || (old.is_err() && !writers_of(original.file).is_empty());
    let size = original
        .file
        .metadata()
        .map_err(|e| {
            WriteError::after(
                target,
                done,
                format!(
                    "the replaced file could not be checked for records appended meanwhile ({})",
                    words(&e)
                ),
            )
        })?
        .len();
    let late = size.saturating_sub(planned);
    let mut carried = None;
    if late > 0 {
        // Under the result's lease nothing can have been appended to it;
        // without one, its size says whether something was.
        let new_len = new.metadata().map(|m| m.len()).ok();
        if !new_leased && new_len != Some(published) {
            // The result was appended to as well: the late bytes cannot be
            // put in order. Keep them where the operator can see them.
            let save = late_path(target);
            let saved = save_range(original.file, planned, late, &save);
            return Err(WriteError::after(
                target,
                done,
                match saved {
                    Ok(()) => format!(
                        "{late} bytes another process appended to the old file during the change could not be carried in order (it appended to the new file too); they are in {}. Stop that process, check them, and append them to the journal",
                        save.display()
                    ),
                    Err(err) => format!(
                        "{late} bytes another process appended to the old file during the change could not be carried in order, nor saved to {} ({}); they are lost when this process ends",
                        save.display(),
                        words(&err)
                    ),
                },
            ));
        }
        let lines = copy_range(original.file, planned, late, new, published)
            .and_then(|lines| new.sync_all().map(|()| lines))
            .map_err(|e| {
                WriteError::after(
                    target,
                    done,
                    format!(
                        "the {late} bytes another process appended to the old file during the change could not be carried into it ({})",
                        words(&e)
                    ),
                )
            })?;
        changes.record(target, Done::LateAppendsCarried);
        carried = Some(Carried { bytes: late, lines });
    }
    if old_still_written {
        return Err(WriteError::after(
            target,
            done,
            "another process still has the replaced file open for writing and does not hold .master-queue.lock: whatever it appends there now is lost. Stop it",
        ));
    }
    Ok(carried)
}

/// Where late bytes that could not be carried are saved.
pub(super) fn late_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent_or_dot(target).join(format!("{name}.late.{}.jsonl", std::process::id()))
}

/// Copies `len` bytes at `from` of `src` to `dest` at `at`; returns the
/// number of line feeds copied.
pub(super) fn copy_range(src: &File, from: u64, len: u64, dest: &File, at: u64) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;

    let mut buf = vec![0u8; (len.min(1 << 20)) as usize];
    let mut done = 0u64;
    let mut lines = 0u64;
    while done < len {
        let want = (len - done).min(buf.len() as u64) as usize;
        src.read_exact_at(&mut buf[..want], from + done)?;
        dest.write_all_at(&buf[..want], at + done)?;
        lines += memchr::memchr_iter(b'\n', &buf[..want]).count() as u64;
        done += want as u64;
    }
    Ok(lines)
}

/// Saves `len` bytes at `from` of `src` to the new file `dest`, fsynced.
pub(super) fn save_range(src: &File, from: u64, len: u64, dest: &Path) -> io::Result<()> {
    use std::os::unix::fs::FileExt;

    let mut bytes = vec![0u8; usize::try_from(len).map_err(io::Error::other)?];
    src.read_exact_at(&mut bytes, from)?;
    create_new(dest, &bytes).map_err(io::Error::other)
}
