//! The backup of a file changed in place: a hard link of the replaced
//! inode where one can be made, else a copy; durable before the change.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::error::{WriteError, io_err};
use super::{give_to, link_unnamed, open_target, parent_or_dot, sync_dir};
use crate::store::failpoint;

/// Backs `path` up as `<dir>/<name>.bak.<stamp>` (dir: `backup_dir` or the
/// file's own), made durable with its directory, and returns its path.
/// `stamp` is a UTC timestamp such as `20261130T073645Z`.
///
/// `replaced`: the original's open descriptor, when the change renames a
/// new file over it. The backup is then a hard link of that very inode,
/// which costs nothing whatever the file's size: after the rename nothing
/// of this tool writes to the old inode again (records another process
/// appends to it meanwhile are carried into the result, and so are in
/// both). Where a link cannot be made (another file system for
/// `--backup-dir`, no links there, too many), the backup is a copy, as it
/// always is for a change made in place (an append writes to the very
/// inode a link would share).
pub fn backup(
    path: &Path,
    backup_dir: Option<&Path>,
    stamp: &str,
    replaced: Option<&File>,
) -> Result<PathBuf, WriteError> {
    // A bare file name's backup is a bare name too (`j.jsonl.bak.…`, not
    // `./j.jsonl.bak.…`): the path printed is the one the operator gave.
    let dir = backup_dir.or_else(|| path.parent().filter(|p| !p.as_os_str().is_empty()));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dest = |attempt: u32| {
        let suffix = if attempt == 0 {
            String::new()
        } else {
            format!("-{attempt}")
        };
        let file = format!("{name}.bak.{stamp}{suffix}");
        dir.map_or_else(|| PathBuf::from(&file), |d| d.join(&file))
    };
    if let Some(original) = replaced
        && let Some(linked) = backup_by_link(original, dest)?
    {
        return Ok(linked);
    }
    backup_by_copy(path, dest)
}

/// The backup as a hard link of `original` at the first free name of
/// `dest`, the original and the directory fsynced; `None` when no link can
/// be made there.
fn backup_by_link(
    original: &File,
    dest: impl Fn(u32) -> PathBuf,
) -> Result<Option<PathBuf>, WriteError> {
    let mut attempt = 0;
    let dest = loop {
        let dest = dest(attempt);
        let linked = failpoint::hit("backup-link").and_then(|()| link_unnamed(original, &dest));
        match linked {
            Ok(()) => break dest,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 1000 => attempt += 1,
            Err(_) => return Ok(None),
        }
    };
    let result = (|| {
        failpoint::hit("backup-written").map_err(io_err(&dest, "write the backup"))?;
        // What the original holds is the backup's content: durable before
        // the result replaces it.
        original
            .sync_all()
            .map_err(io_err(&dest, "fsync the backup"))?;
        sync_dir(parent_or_dot(&dest))
    })();
    match result {
        Ok(()) => Ok(Some(dest)),
        Err(e) => {
            let _ = fs::remove_file(&dest);
            Err(e)
        }
    }
}

/// The backup as a copy of `path` at the first free name of `dest`, with
/// the original's mode and owner, fsynced with its directory.
fn backup_by_copy(path: &Path, dest: impl Fn(u32) -> PathBuf) -> Result<PathBuf, WriteError> {
    let (mut src, meta) = open_target(path)?;
    let mut attempt = 0;
    let (dest, mut out) = loop {
        let dest = dest(attempt);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(meta.permissions().mode() & 0o777)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&dest)
        {
            Ok(f) => break (dest, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 1000 => attempt += 1,
            Err(err) => {
                return Err(WriteError::Io {
                    path: dest,
                    action: "create the backup",
                    err,
                });
            }
        }
    };
    let result = (|| {
        give_to(&out, meta.uid(), meta.gid())
            .map_err(io_err(&dest, "give the backup the original's owner"))?;
        io::copy(&mut src, &mut out).map_err(io_err(&dest, "write the backup"))?;
        failpoint::hit("backup-written").map_err(io_err(&dest, "write the backup"))?;
        out.sync_all().map_err(io_err(&dest, "fsync the backup"))?;
        sync_dir(parent_or_dot(&dest))
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&dest);
        return Err(e);
    }
    Ok(dest)
}

/// Removes a copy this run made (a backup, an export) for a change that
/// then failed before anything was changed: the file it copies is still
/// there as it was. Whether it is gone afterwards (a file already gone
/// counts as removed).
pub fn remove_copy(path: &Path) -> bool {
    fs::remove_file(path).is_ok() || !path.exists()
}
