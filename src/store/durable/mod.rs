//! The only code that writes user files: backups, atomic replacement and
//! sealed appends, each durable (fsync of the file and of its directory)
//! and each refusing symlinks. One file per idea:
//!
//! - `lock`: [`HeldLock`], the master's lock as this tool holds it while
//!   it changes a state directory;
//! - `error`: [`WriteError`], why a write did not happen, and [`Change`] /
//!   [`ChangeLog`], what a run changed, recorded the moment it is changed;
//! - `lease`: file leases (`F_SETLEASE`), the proof that no other process
//!   appends while a file is changed;
//! - `backup`: the backup of a file changed in place;
//! - `replace`: a new version through a temporary file, checked as it is
//!   written, renamed over the original;
//! - `reread`: the check's view of the temporary file while it is written,
//!   and the source a result is made from;
//! - `late`: records another process appended during a replacement,
//!   carried into the result;
//! - `append`: seal the tail, one write, fsync;
//! - `remove`: a file removed from a set of files, backed up first;
//! - `table`: a fenced lease table's entries moved (into the quarantine,
//!   the archive, or the path their id names) under the record's own lock.
//!
//! Order of a change in place, as the write session
//! (`store::session`) uses it:
//! 1. [`HeldLock::acquire`] — the same `flock` the master
//!    takes, held until the last fsync, so no master starts mid-change and
//!    no change starts under a master;
//! 2. read and plan (elsewhere), remembering the file's [`Identity`];
//! 3. [`Identity::check`] — the file is still the one that was read;
//! 4. [`backup`];
//! 5. [`replace_in_place`] (temp file re-read and verified as it is written,
//!    fsync, rename, fsync the directory)
//!    or [`append`] (seal the tail, one write, fsync);
//! 6. re-read and confirm (the session, with the replay digest).
//!
//! A failed fsync is reported and never retried into a success. Failpoints
//! (`LEASEJOURNAL_FAILPOINTS`) exist for the crash-safety tests only.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

mod append;
mod backup;
mod error;
mod late;
mod lease;
mod lock;
mod remove;
mod replace;
mod reread;
mod table;

pub use append::{Appended, Seal, Sealed, append};
pub use backup::{backup, remove_copy};
pub use error::{Change, ChangeLog, Done, WriteError};
pub use late::Carried;
pub use lock::HeldLock;
pub use remove::remove_in_place;
pub use replace::{
    Leftover, Published, StaleTemps, remove_stale_temps, replace_in_place, write_new,
};
pub use reread::{Publish, Reread, Source, source_error};
pub use table::{RecordLock, Seen, make_dirs, move_entry};

use crate::store::path::parent_or_dot;
use error::{io_err, open_err};

/// The file a change in place replaces, held open (read-only, as
/// [`open_target`] opens it) from the read through the publish.
pub struct Original<'a> {
    /// The descriptor the plan was read through.
    pub file: &'a File,
    /// Its metadata as read: the identity the plan belongs to, and the
    /// mode and owner the result keeps.
    pub meta: &'a fs::Metadata,
    /// A journal: records another process appends to it during the change
    /// are carried into the result. (A snapshot is replaced whole by its
    /// writer, never appended to.)
    pub carry_late_appends: bool,
}

/// What identifies the version of a file that was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

impl Identity {
    /// The identity of an open file's metadata.
    pub fn of(meta: &fs::Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
        }
    }

    /// The file's size as read.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Fails unless `path` is still a regular file with this identity.
    pub fn check(&self, path: &Path) -> Result<(), WriteError> {
        let meta = fs::symlink_metadata(path).map_err(io_err(path, "stat"))?;
        if meta.file_type().is_symlink() {
            return Err(WriteError::NotRegular {
                path: path.to_path_buf(),
                what: "a symbolic link",
            });
        }
        if Identity::of(&meta) != *self {
            return Err(WriteError::Changed {
                path: path.to_path_buf(),
            });
        }
        Ok(())
    }
}

/// Opens a file to be changed: no symlink, a regular file.
pub fn open_target(path: &Path) -> Result<(File, fs::Metadata), WriteError> {
    let file = crate::store::open::open_nonblocking(
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK),
        path,
    )
    .map_err(open_err(path, "open"))?;
    let meta = file.metadata().map_err(io_err(path, "stat"))?;
    if !meta.is_file() {
        return Err(WriteError::NotRegular {
            path: path.to_path_buf(),
            what: "not a regular file",
        });
    }
    Ok((file, meta))
}

/// Gives `file` the owner and group `uid`/`gid`. Only root can give a file
/// away; anyone else's new file already belongs to them, so a refusal is
/// not an error.
fn give_to(file: &File, uid: u32, gid: u32) -> io::Result<()> {
    match std::os::unix::fs::fchown(file, Some(uid), Some(gid)) {
        Err(err) if err.kind() == io::ErrorKind::PermissionDenied => Ok(()),
        other => other,
    }
}

/// Opens an upstream lock file (the master's `.master-queue.lock`, a
/// table record's lock) as upstream does: `O_RDWR|O_CREAT|O_CLOEXEC|
/// O_NOFOLLOW`, mode 0600. Says whether this call created it, so that the
/// caller gives a new one to the directory's owner.
fn open_lock_file(path: &Path) -> io::Result<(File, bool)> {
    let open = |create_new: bool| {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(create_new)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
    };
    match open(true) {
        Ok(file) => Ok((file, true)),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok((open(false)?, false)),
        Err(err) => Err(err),
    }
}

/// Gives a new `file` the owner and group of the directory `dir`.
fn give_to_owner_of(file: &File, dir: &Path) -> io::Result<()> {
    let meta = fs::metadata(dir)?;
    give_to(file, meta.uid(), meta.gid())
}

fn sync_dir(dir: &Path) -> Result<(), WriteError> {
    let d = File::open(dir).map_err(io_err(dir, "open the directory"))?;
    d.sync_all().map_err(io_err(dir, "fsync the directory"))
}

/// Creates `path`, which must not exist, with `bytes`: owned by the
/// directory's owner, mode 0644 less the umask, fsynced with its directory.
/// On failure nothing is left behind.
pub fn create_new(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    if fs::symlink_metadata(path).is_ok() {
        return Err(WriteError::Exists {
            path: path.to_path_buf(),
        });
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|err| match err.kind() {
            io::ErrorKind::AlreadyExists => WriteError::Exists {
                path: path.to_path_buf(),
            },
            _ => WriteError::Io {
                path: path.to_path_buf(),
                action: "create",
                err,
            },
        })?;
    let result = (|| {
        give_to_owner_of(&file, parent_or_dot(path))
            .map_err(io_err(path, "give the file the directory's owner"))?;
        file.write_all(bytes).map_err(io_err(path, "write"))?;
        file.sync_all().map_err(io_err(path, "fsync"))?;
        sync_dir(parent_or_dot(path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(path);
    }
    result
}

fn c_path(path: &Path) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Gives an unnamed temporary file the name `dest` (which must not exist).
fn link_unnamed(file: &File, dest: &Path) -> io::Result<()> {
    let fd = std::os::fd::AsRawFd::as_raw_fd(file);
    let from = c_path(Path::new(&format!("/proc/self/fd/{fd}")))?;
    let to = c_path(dest)?;
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
