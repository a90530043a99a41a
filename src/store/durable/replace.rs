//! A new version of a file through a temporary file: written while a
//! check re-reads it, fsynced, and renamed over the target only when both
//! succeed; the directory fsynced after.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::{ChangeLog, Done, WriteError, io_err};
use super::late::{Carried, settle};
use super::lease::{hold_unchanged, lease};
use super::reread::{
    AbandonOnDrop, End, Progress, Publish, RefuseOnDrop, Reporting, Reread, SourceError,
};
use super::{Original, c_path, give_to, give_to_owner_of, link_unnamed, parent_or_dot, sync_dir};
use crate::store::error::in_words;
use crate::store::failpoint;

/// This tool's temporary file for `target`.
pub fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent_or_dot(target).join(format!("{name}.leasejournal.{}.tmp", std::process::id()))
}

/// A stale temporary file of this tool that could not be removed, or the
/// directory that could not be listed to find them, and why in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Leftover {
    /// The file, or the directory that could not be listed.
    pub path: String,
    /// What failed ("cannot be removed: permission denied").
    pub error: String,
}

/// What the removal of this tool's stale temporary files did.
#[derive(Debug, Default)]
pub struct StaleTemps {
    /// The files removed.
    pub removed: Vec<PathBuf>,
    /// What stays, and why.
    pub left: Vec<Leftover>,
}

/// Removes this tool's leftover temporary files for `target` (call under
/// the master lock, when no run of this tool can be writing them). A
/// directory that cannot be listed, a name that cannot be examined and a
/// file that cannot be removed are said in `left`, never passed over.
pub fn remove_stale_temps(target: &Path) -> StaleTemps {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!("{name}.leasejournal.");
    let dir = parent_or_dot(target);
    let mut stale = StaleTemps::default();
    let leftover = |path: &Path, what: &str, err: &io::Error| Leftover {
        path: path.display().to_string(),
        error: format!("{what}: {}", in_words(err)),
    };
    let names = match crate::store::open::dir_names(dir) {
        Ok(names) => names,
        Err(err) => {
            let what = "cannot be listed to find stale temporary files of this tool";
            stale.left.push(leftover(dir, what, &err));
            return stale;
        }
    };
    for file_name in names {
        let shown = file_name.to_string_lossy();
        if !(shown.starts_with(&prefix) && shown.ends_with(".tmp")) {
            continue;
        }
        let path = dir.join(&file_name);
        let removed = match fs::symlink_metadata(&path) {
            Ok(meta) if !meta.is_file() => continue,
            Ok(_) => fs::remove_file(&path).map_err(|e| ("cannot be removed", e)),
            Err(e) => Err(("cannot be examined", e)),
        };
        match removed {
            Ok(()) => stale.removed.push(path),
            // Gone meanwhile: nothing stays.
            Err((_, err)) if err.kind() == io::ErrorKind::NotFound => {}
            Err((what, err)) => stale.left.push(leftover(&path, what, &err)),
        }
    }
    stale
}

/// Writes the new file `target` through a temporary file: `produce`
/// writes the content while `check`, on another thread, re-reads the
/// temporary file as it grows ([`Reread`]) and accepts it (or finds it
/// needless, when it is discarded) or refuses it. The file is fsynced while
/// the check finishes; only when both succeed, and the file holds exactly
/// what was written, is it given the name `target` (which must not exist:
/// that is checked atomically) and the directory fsynced. The file gets
/// mode 0644 less the umask and the directory's owner. [`replace_in_place`]
/// is the same for a file that exists.
///
/// The temporary file has no name while it is written (`O_TMPFILE`), so a
/// failure or a crash before the publish leaves nothing behind; it gets a
/// name only to be renamed over `target` a moment later. Where the file
/// system has no unnamed files it is `<target>.leasejournal.<pid>.tmp`,
/// created `O_EXCL` and removed on failure.
///
/// `produce` runs while the check waits for its bytes: it must not wait for
/// anything the check does. It may use the global rayon pool: the check
/// runs on a thread of its own, and its scan reads a stream on that thread,
/// never in the pool (`engine::journal::scan`), so no pool thread waits for
/// `produce`. The check reads each byte once, as soon as it is written; the temporary
/// file is ours alone (created under the master's lock), and the length is
/// compared again before the rename.
pub fn write_new(
    changes: &ChangeLog,
    target: &Path,
    produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    check: impl FnOnce(&mut Reread<'_>) -> Result<Publish, String> + Send,
) -> Result<Publish, WriteError> {
    replace_then(
        changes,
        target,
        Replacing {
            mode: 0o644,
            owner: None,
            must_not_exist: true,
            original: None,
        },
        produce,
        check,
        || Ok(()),
    )
    .map(|published| published.publish)
}

/// What a change in place did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Published {
    /// Whether the result was published.
    pub publish: Publish,
    /// Records another process appended to the original while it was being
    /// replaced, carried into the result.
    pub carried: Option<Carried>,
}

/// [`write_new`] in place, with `before_rename` run once the temporary file
/// is written, checked and found to change something, right before it is
/// renamed over `target` (the backup: none is made for a change that turns
/// out to change nothing). If it fails, nothing is renamed.
///
/// The original stays open throughout. Right before the rename, under a
/// read lease (no process may then open it for writing), it must still be
/// the file that was read, not grown by a byte; a process that has it open
/// for writing all along is refused ([`WriteError::Busy`]). After the
/// rename, once no process has the replaced file open for writing, what
/// was appended to it since the check is carried into the result (under a
/// write lease on the result, so it lands in order), or, when that cannot
/// be done in order, saved to `<target>.late.<pid>.jsonl` and reported as a
/// failure after the change.
pub fn replace_in_place(
    changes: &ChangeLog,
    target: &Path,
    original: &Original<'_>,
    produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    check: impl FnOnce(&mut Reread<'_>) -> Result<Publish, String> + Send,
    before_rename: impl FnOnce() -> Result<(), WriteError>,
) -> Result<Published, WriteError> {
    let meta = original.meta;
    replace_then(
        changes,
        target,
        Replacing {
            mode: meta.permissions().mode() & 0o7777,
            owner: Some((meta.uid(), meta.gid())),
            must_not_exist: false,
            original: Some(original),
        },
        produce,
        check,
        before_rename,
    )
}

/// How [`replace_then`] replaces.
struct Replacing<'a, 'o> {
    mode: u32,
    /// The owner to keep; `None`: the directory's.
    owner: Option<(u32, u32)>,
    must_not_exist: bool,
    original: Option<&'a Original<'o>>,
}

/// The temporary file: unnamed until published, or named.
struct Temp {
    file: File,
    /// The name of a named temporary file, removed when dropped unless
    /// taken out.
    named: RemoveOnDrop,
    /// Where errors about it point: its name, or the target's temporary
    /// name for an unnamed one.
    shown: PathBuf,
}

/// Creates the temporary file for `target`: unnamed where the file system
/// allows it and `/proc/self/fd` can give it a name later, named otherwise.
fn create_temp(target: &Path, mode: u32) -> Result<Temp, WriteError> {
    let shown = temp_path(target);
    let proc_fd = Path::new("/proc/self/fd").is_dir();
    if proc_fd && !failpoint::is("temp", "named") {
        let unnamed = OpenOptions::new()
            .read(true)
            .write(true)
            .mode(mode)
            .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
            .open(parent_or_dot(target));
        match unnamed {
            Ok(file) => {
                return Ok(Temp {
                    file,
                    named: RemoveOnDrop(None),
                    shown,
                });
            }
            // No unnamed files on this file system: name it.
            Err(err)
                if matches!(
                    err.raw_os_error(),
                    Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL | libc::ENOENT)
                ) => {}
            Err(err) => {
                return Err(WriteError::Io {
                    path: shown,
                    action: "create the temporary file",
                    err,
                });
            }
        }
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&shown)
        .map_err(io_err(&shown, "create the temporary file"))?;
    Ok(Temp {
        file,
        named: RemoveOnDrop(Some(shown.clone())),
        shown,
    })
}

/// Renames `from` to `to` unless `to` exists (`renameat2(RENAME_NOREPLACE)`;
/// where the file system lacks it, a check and a rename).
pub(super) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let (a, b) = (c_path(from)?, c_path(to)?);
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EINVAL | libc::ENOSYS) => {
            if fs::symlink_metadata(to).is_ok() {
                return Err(io::Error::from_raw_os_error(libc::EEXIST));
            }
            fs::rename(from, to)
        }
        _ => Err(err),
    }
}

impl Temp {
    /// Publishes the written file as `target`: atomically, and without
    /// replacing anything when `must_not_exist`. (A function of the fields,
    /// so that a lease may borrow the file meanwhile.)
    fn publish(
        file: &File,
        named: &mut RemoveOnDrop,
        shown: &Path,
        target: &Path,
        must_not_exist: bool,
    ) -> Result<(), WriteError> {
        let exists = |err: io::Error| match err.raw_os_error() {
            Some(libc::EEXIST) => WriteError::Exists {
                path: target.to_path_buf(),
            },
            _ => WriteError::Io {
                path: target.to_path_buf(),
                action: "rename the temporary file over",
                err,
            },
        };
        if named.0.is_none() {
            if must_not_exist {
                return link_unnamed(file, target).map_err(exists);
            }
            link_unnamed(file, shown).map_err(io_err(shown, "name the temporary file"))?;
            named.0 = Some(shown.to_path_buf());
        }
        let from = named.0.clone().unwrap_or_else(|| shown.to_path_buf());
        if must_not_exist {
            rename_noreplace(&from, target).map_err(exists)?;
        } else {
            fs::rename(&from, target).map_err(exists)?;
        }
        // Renamed: the name is the target's now.
        named.0 = None;
        Ok(())
    }
}

fn replace_then(
    changes: &ChangeLog,
    target: &Path,
    how: Replacing<'_, '_>,
    produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    check: impl FnOnce(&mut Reread<'_>) -> Result<Publish, String> + Send,
    before_rename: impl FnOnce() -> Result<(), WriteError>,
) -> Result<Published, WriteError> {
    if how.must_not_exist && fs::symlink_metadata(target).is_ok() {
        return Err(WriteError::Exists {
            path: target.to_path_buf(),
        });
    }
    let mut temp = create_temp(target, how.mode)?;
    let file = &temp.file;
    let shown = temp.shown.clone();
    match how.owner {
        // The original's owner and mode.
        Some((uid, gid)) => {
            give_to(file, uid, gid).map_err(io_err(&shown, "keep the owner"))?;
            file.set_permissions(fs::Permissions::from_mode(how.mode))
                .map_err(io_err(&shown, "keep the mode"))?;
        }
        // A new file belongs to the directory's owner.
        None => give_to_owner_of(file, parent_or_dot(target))
            .map_err(io_err(&shown, "give the file the directory's owner"))?,
    }
    let progress = Progress::default();
    // Read back through the descriptor that wrote it: the same file,
    // whatever happens to its name.
    let reread = Reread {
        file,
        progress: &progress,
        pos: 0,
    };
    // The check reads what is written as it is written; with no thread
    // to spare, it reads the finished file afterwards.
    let job = std::sync::Mutex::new(Some((check, reread)));
    let run_check = || {
        let taken = job
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        taken.map(|(check, mut reread)| {
            // A check that refuses (or panics) stops the writer: there
            // is no point writing the rest.
            let mut refuse = RefuseOnDrop(Some(&progress));
            let verdict = check(&mut reread);
            if verdict.is_ok() {
                refuse.0 = None;
            }
            (verdict, reread.pos)
        })
    };
    let (written, checked) = std::thread::scope(|scope| {
        let checking = if failpoint::is("check-thread", "none") {
            None
        } else {
            std::thread::Builder::new()
                .spawn_scoped(scope, run_check)
                .ok()
        };
        let written = write_temp(file, &shown, &progress, produce);
        let checked = match checking {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // A failed write needs no check.
            None if written.is_err() => None,
            None => run_check(),
        };
        (written, checked)
    });
    // The write's own failure comes first, unless the check refused
    // the file while it was being written and so stopped the write.
    if progress.lock().refused
        && let Some((Err(detail), _)) = &checked
    {
        return Err(WriteError::Verify {
            path: target.to_path_buf(),
            detail: detail.clone(),
        });
    }
    let len = written?;
    let Some((verdict, read)) = checked else {
        return Err(WriteError::Verify {
            path: target.to_path_buf(),
            detail: "the written file was not checked".into(),
        });
    };
    let publish = verdict.map_err(|detail| WriteError::Verify {
        path: target.to_path_buf(),
        detail,
    })?;
    // The check read all of it, and nothing changed its size since.
    let size = file
        .metadata()
        .map_err(io_err(&shown, "re-read the temporary file"))?
        .len();
    if read != len || size != len {
        return Err(WriteError::Verify {
            path: target.to_path_buf(),
            detail: format!(
                "{len} bytes were written, the check read {read} and the file has {size}"
            ),
        });
    }
    if publish == Publish::No {
        // An unnamed file simply goes when it is closed.
        let named = temp.named.0.take();
        drop(temp);
        if let Some(named) = named {
            fs::remove_file(&named).map_err(io_err(&named, "remove the temporary file"))?;
        }
        return Ok(Published {
            publish: Publish::No,
            carried: None,
        });
    }
    before_rename()?;
    failpoint::hit("before-rename").map_err(io_err(target, "rename"))?;
    // Under a write lease on the result (unnamed until now, so nobody has
    // it open), a process that opens it once it is published waits until
    // what was appended to the original meanwhile has been carried in:
    // the records stay in the order they were written.
    let carrying = how.original.is_some_and(|o| o.carry_late_appends);
    let result_lease = if carrying {
        lease(&temp.file, libc::F_WRLCK).ok()
    } else {
        None
    };
    // Under a read lease on the original, no process can open it for
    // writing until the rename is done. Where leases are refused, the
    // processes that have it open for writing are looked for instead.
    let held = match how.original {
        Some(original) => hold_unchanged(original, target)?,
        None => None,
    };
    failpoint::hit("renaming").map_err(io_err(target, "rename"))?;
    Temp::publish(
        &temp.file,
        &mut temp.named,
        &temp.shown,
        target,
        how.must_not_exist,
    )?;
    let done = if how.must_not_exist {
        Done::Written
    } else {
        Done::Rewritten
    };
    changes.record(target, done);
    drop(held);
    failpoint::hit("after-rename").map_err(|err| {
        WriteError::after(
            target,
            done,
            format!("could not fsync its directory: {}", in_words(&err)),
        )
    })?;
    let carried = match how.original {
        Some(original) if original.carry_late_appends => settle(
            changes,
            target,
            original,
            &temp.file,
            len,
            result_lease.is_some(),
        ),
        _ => Ok(None),
    };
    drop(result_lease);
    let synced = sync_dir(parent_or_dot(target)).map_err(|err| {
        let why = match &err {
            WriteError::Io { err, .. } => in_words(err),
            other => other.to_string(),
        };
        WriteError::after(
            target,
            done,
            format!(
                "could not fsync its directory ({why}); a power loss may still undo the change"
            ),
        )
    });
    let carried = carried?;
    synced?;
    Ok(Published {
        publish: Publish::Yes,
        carried,
    })
}

/// Writes the temporary file with `produce`, telling `progress` what is
/// written as it goes, then fsyncs it (while the check finishes) and
/// returns its length. Whatever happens, `progress` ends: finished, or
/// abandoned so that the check stops waiting. An error reading the source
/// (a [`SourceError`]) is reported against the source, not the temporary
/// file.
fn write_temp(
    file: &File,
    temp: &Path,
    progress: &Progress,
    produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<u64, WriteError> {
    let mut abandon = AbandonOnDrop(Some(progress));
    let mut out = BufWriter::with_capacity(1 << 20, Reporting { file, progress });
    produce(&mut out).map_err(|err| temp_write_error(temp, err))?;
    out.flush()
        .map_err(io_err(temp, "write the temporary file"))?;
    drop(out);
    failpoint::hit("temp-written").map_err(io_err(temp, "write the temporary file"))?;
    failpoint::truncate("temp-written", file).map_err(io_err(temp, "write the temporary file"))?;
    abandon.0 = None;
    let len = progress.end(End::Finished);
    file.sync_all()
        .map_err(io_err(temp, "fsync the temporary file"))?;
    Ok(len)
}

/// A failure while producing the temporary file: reading the source, or
/// writing the file.
fn temp_write_error(temp: &Path, err: io::Error) -> WriteError {
    if !err.get_ref().is_some_and(|inner| inner.is::<SourceError>()) {
        return WriteError::Io {
            path: temp.to_path_buf(),
            action: "write the temporary file",
            err,
        };
    }
    let source = err
        .into_inner()
        .and_then(|inner| inner.downcast::<SourceError>().ok())
        .expect("checked to be a SourceError above");
    WriteError::Io {
        path: source.path,
        action: "read",
        err: source.err,
    }
}

/// Removes a file when dropped, unless its path was taken out.
struct RemoveOnDrop(Option<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replaces `target` as a new file would be written, but over what is
    /// there: the machinery of both [`write_new`] and [`replace_in_place`]
    /// without an original to lease.
    fn overwrite(
        target: &Path,
        produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
        check: impl FnOnce(&mut Reread<'_>) -> Result<Publish, String> + Send,
    ) -> Result<Publish, WriteError> {
        let how = Replacing {
            mode: 0o644,
            owner: None,
            must_not_exist: false,
            original: None,
        };
        replace_then(
            &ChangeLog::default(),
            target,
            how,
            produce,
            check,
            || Ok(()),
        )
        .map(|published| published.publish)
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_panicking_check_leaves_the_target_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("journal.jsonl");
        fs::write(&target, b"before\n").unwrap();
        let outcome = std::panic::catch_unwind(|| {
            let _ = overwrite(
                &target,
                |out| out.write_all(b"after\n"),
                |_| panic!("a bug in the check"),
            );
        });
        assert!(outcome.is_err());
        assert_eq!(fs::read(&target).unwrap(), b"before\n");
        assert_eq!(entries(dir.path()), ["journal.jsonl"]);
    }

    /// Three and a half mebibytes in uneven pieces, more than the writer's
    /// buffer holds, so that the check reads while the file grows.
    fn produce_big(out: &mut dyn Write) -> io::Result<()> {
        for n in 0..5000u32 {
            let piece = vec![b'a' + (n % 26) as u8; 700 + (n as usize % 37)];
            out.write_all(&piece)?;
        }
        Ok(())
    }

    #[test]
    fn the_check_reads_the_file_as_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("journal.jsonl");
        let mut expected = Vec::new();
        produce_big(&mut expected).unwrap();
        let published = write_new(&ChangeLog::default(), &target, produce_big, |f| {
            let mut got = Vec::new();
            io::Read::read_to_end(f, &mut got).map_err(|e| e.to_string())?;
            assert!(got == expected, "the check reads exactly what is written");
            Ok(Publish::Yes)
        });
        assert!(matches!(published, Ok(Publish::Yes)));
        assert!(fs::read(&target).unwrap() == expected);
        assert_eq!(entries(dir.path()), ["journal.jsonl"]);
    }

    /// The check scans the journal as it is written; the scan reads its
    /// stream on the check's thread, never in the pool, so a writer that
    /// uses the global pool between its writes finds it free.
    #[test]
    fn the_writer_may_use_the_global_pool_while_the_check_scans() {
        use rayon::prelude::*;

        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("journal.jsonl");
        let produce = |out: &mut dyn Write| {
            for n in 0..200u64 {
                let sum: u64 = (0..1000u64).into_par_iter().map(|i| i * n).sum();
                for _ in 0..200 {
                    writeln!(out, "{{\"op\":\"noise\",\"n\":{sum}}}")?;
                }
            }
            Ok(())
        };
        let lines = std::sync::Mutex::new(0);
        let published = write_new(&ChangeLog::default(), &target, produce, |f| {
            let scan = crate::engine::journal::scan(f, &mut ()).map_err(|e| e.to_string())?;
            *lines.lock().unwrap() = scan.summary.lines;
            Ok(Publish::Yes)
        });
        assert_eq!(published.unwrap(), Publish::Yes);
        assert_eq!(*lines.lock().unwrap(), 40_000);
        let mut expected = Vec::new();
        produce(&mut expected).unwrap();
        assert!(fs::read(&target).unwrap() == expected);
    }

    #[test]
    fn a_failed_or_panicking_write_ends_the_check_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("journal.jsonl");
        fs::write(&target, b"before\n").unwrap();
        let read_error = std::sync::Mutex::new(String::new());
        let failed = overwrite(
            &target,
            |out| {
                produce_big(out)?;
                Err(io::Error::from_raw_os_error(libc::ENOSPC))
            },
            |f| {
                let err = io::Read::read_to_end(f, &mut Vec::new()).unwrap_err();
                *read_error.lock().unwrap() = err.to_string();
                Err(err.to_string())
            },
        );
        assert!(
            matches!(&failed, Err(WriteError::Io { action, .. }) if *action == "write the temporary file"),
            "{failed:?}"
        );
        assert!(read_error.lock().unwrap().contains("abandoned"));
        assert_eq!(fs::read(&target).unwrap(), b"before\n");
        assert_eq!(entries(dir.path()), ["journal.jsonl"]);

        let panicked = std::panic::catch_unwind(|| {
            let _ = overwrite(
                &target,
                |out| {
                    produce_big(out)?;
                    panic!("a bug in the writer")
                },
                |f| {
                    io::Read::read_to_end(f, &mut Vec::new()).map_err(|e| e.to_string())?;
                    Ok(Publish::Yes)
                },
            );
        });
        assert!(panicked.is_err());
        assert_eq!(fs::read(&target).unwrap(), b"before\n");
        assert_eq!(entries(dir.path()), ["journal.jsonl"]);
    }

    #[test]
    fn a_check_that_refuses_stops_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("journal.jsonl");
        let piece = vec![b'x'; 64 << 10];
        let mut written = 0usize;
        let refused = write_new(
            &ChangeLog::default(),
            &target,
            |out| {
                // 256 MiB, unless the refusal stops it.
                for _ in 0..4096 {
                    out.write_all(&piece)?;
                    written += piece.len();
                }
                Ok(())
            },
            |f| {
                let mut first = [0u8; 10];
                io::Read::read_exact(f, &mut first).map_err(|e| e.to_string())?;
                Err("not what was planned".into())
            },
        );
        assert!(
            matches!(&refused, Err(WriteError::Verify { detail, .. }) if detail == "not what was planned"),
            "{refused:?}"
        );
        assert!(written < 128 << 20, "the write went on: {written} bytes");
        assert!(entries(dir.path()).is_empty());
    }

    #[test]
    fn a_check_that_stops_reading_early_is_not_enough() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("journal.jsonl");
        let refused = write_new(&ChangeLog::default(), &target, produce_big, |f| {
            let mut first = [0u8; 1000];
            io::Read::read_exact(f, &mut first).map_err(|e| e.to_string())?;
            Ok(Publish::Yes)
        });
        assert!(
            matches!(&refused, Err(WriteError::Verify { detail, .. }) if detail.contains("the check read 1000")),
            "{refused:?}"
        );
        assert!(entries(dir.path()).is_empty());
    }

    #[test]
    fn a_refused_check_leaves_no_temporary_file_and_an_accepted_one_publishes() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("journal.jsonl");
        fs::write(&target, b"before\n").unwrap();
        let refused = overwrite(
            &target,
            |out| out.write_all(b"after\n"),
            |_| Err("no".into()),
        );
        assert!(matches!(refused, Err(WriteError::Verify { .. })));
        assert_eq!(entries(dir.path()), ["journal.jsonl"]);
        let published = overwrite(
            &target,
            |out| out.write_all(b"after\n"),
            |f| {
                let mut s = String::new();
                io::Read::read_to_string(f, &mut s).map_err(|e| e.to_string())?;
                assert_eq!(s, "after\n", "the check reads what was written");
                Ok(Publish::Yes)
            },
        );
        assert!(matches!(published, Ok(Publish::Yes)));
        assert_eq!(fs::read(&target).unwrap(), b"after\n");
        assert_eq!(entries(dir.path()), ["journal.jsonl"]);
    }
}
