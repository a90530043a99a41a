//! Entries of a fenced lease table moved, never rewritten or deleted:
//! into the quarantine or the archive (`engine::table::QUARANTINE_DIR`,
//! `ARCHIVE_DIR`) or to the path their id names. A record is moved only
//! under its own `<id>.json.lock`, taken exactly as upstream takes it
//! ([`RecordLock::take`]), and only while it is still the version the plan
//! saw ([`Seen`]); the move is one `rename` within the table (no copy, so
//! the bytes are the same inode), both directories are fsynced, and the
//! result is read back. Lock files are never removed: a new opener could
//! otherwise lock another inode than an old holder.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path};

use sha2::{Digest, Sha256};

use super::error::{ChangeLog, Done, WriteError, io_err, open_err};
use super::replace::rename_noreplace;
use super::{give_to_owner_of, open_lock_file, parent_or_dot, sync_dir};
use crate::store::error::in_words;

/// A record's lock, held until dropped (closing it releases the `flock`).
#[derive(Debug)]
pub struct RecordLock {
    _file: File,
}

impl RecordLock {
    /// Takes `path` as upstream's `_bounded_advisory_lock` does, once:
    /// `open(O_RDWR|O_CREAT|O_CLOEXEC|O_NOFOLLOW, 0o600)`, a regular file,
    /// `flock(LOCK_EX|LOCK_NB)`. `None` when another process holds it. A
    /// lock file this creates belongs to the directory's owner, so that
    /// the master can open it.
    pub fn take(path: &Path) -> Result<Option<RecordLock>, WriteError> {
        let (file, created) =
            open_lock_file(path).map_err(open_err(path, "open the record's lock"))?;
        if created {
            give_to_owner_of(&file, parent_or_dot(path))
                .map_err(io_err(path, "give the lock file to the directory's owner"))?;
        }
        let meta = file
            .metadata()
            .map_err(io_err(path, "stat the record's lock"))?;
        if !meta.is_file() {
            return Err(WriteError::NotRegular {
                path: path.to_path_buf(),
                what: "not a regular file",
            });
        }
        match file.try_lock() {
            Ok(()) => Ok(Some(RecordLock { _file: file })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(err)) => Err(WriteError::Io {
                path: path.to_path_buf(),
                action: "lock the record's lock",
                err,
            }),
        }
    }
}

/// The version of an entry a plan saw: what it is (not following a
/// link), its inode and times, and for a regular file the SHA-256 of its
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
    mtime_ns: i128,
    digest: Option<[u8; 32]>,
}

impl Seen {
    /// Looks at `path` without following a link: `None` when nothing is
    /// there; for a regular file also its bytes, which the caller judges.
    pub fn of(path: &Path) -> io::Result<Option<(Seen, Vec<u8>)>> {
        let meta = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let mut bytes = Vec::new();
        let digest = if meta.is_file() {
            let mut file = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
                .open(path)?;
            let opened = file.metadata()?;
            if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
                return Err(io::Error::other("it was replaced while it was read"));
            }
            file.read_to_end(&mut bytes)?;
            Some(Sha256::digest(&bytes).into())
        } else {
            None
        };
        let seen = Seen {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode() & libc::S_IFMT,
            size: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            digest,
        };
        Ok(Some((seen, bytes)))
    }

    /// Whether it is a directory.
    pub fn is_dir(&self) -> bool {
        self.mode == libc::S_IFDIR
    }

    /// Whether it is a regular file (its bytes were read).
    pub fn is_file(&self) -> bool {
        self.mode == libc::S_IFREG
    }

    /// Whether `other` is the same inode (this entry, perhaps changed).
    pub fn same_inode(&self, other: &Seen) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }

    /// Whether `moved` is this entry after a rename: the same inode and
    /// bytes. (A directory moved to another parent has its `..` rewritten,
    /// which may touch its times.)
    fn moved_as(&self, moved: &Seen) -> bool {
        let same = (self.dev, self.ino, self.mode, self.digest)
            == (moved.dev, moved.ino, moved.mode, moved.digest);
        same && (self.is_dir() || (self.size, self.mtime_ns) == (moved.size, moved.mtime_ns))
    }
}

/// Creates `base/rel` and every missing directory on the way, each
/// fsynced into its parent and given the parent's owner (a shard
/// directory must be one the master can write in). `base` must exist;
/// nothing below it may be a symbolic link or anything but a directory.
pub fn make_dirs(changes: &ChangeLog, base: &Path, rel: &Path) -> Result<(), WriteError> {
    let mut dir = base.to_path_buf();
    for part in rel.components() {
        let Component::Normal(name) = part else {
            return Err(WriteError::NotRegular {
                path: base.join(rel),
                what: "not a plain path below the table",
            });
        };
        let parent = dir.clone();
        dir.push(name);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => {
                return Err(WriteError::NotRegular {
                    path: dir,
                    what: "not a directory",
                });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&dir, "stat")(e)),
        }
        match fs::create_dir(&dir) {
            Ok(()) => {}
            // Made meanwhile by someone else: it is there, as wanted.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => continue,
            Err(e) => return Err(io_err(&dir, "create the directory")(e)),
        }
        changes.record(&dir, Done::Created);
        let made = File::open(&dir).map_err(io_err(&dir, "open the directory"))?;
        let after = |what: String| WriteError::after(&dir, Done::Created, what);
        give_to_owner_of(&made, &parent).map_err(|e| {
            after(format!(
                "giving it the owner of {} failed: {}",
                parent.display(),
                in_words(&e)
            ))
        })?;
        sync_dir(&parent).map_err(|e| after(format!("{e}")))?;
    }
    Ok(())
}

/// Moves `from` to `to` (which must not exist, in the same table) if
/// `from` is still the version `seen` says: one rename, then both
/// directories fsynced, then `to` read back and `from` checked gone. The
/// caller holds the record's lock when `from` is a record. Before the
/// rename a failure changes nothing; after it, it is
/// [`WriteError::AfterChange`].
pub fn move_entry(
    changes: &ChangeLog,
    from: &Path,
    to: &Path,
    seen: &Seen,
) -> Result<(), WriteError> {
    let now = Seen::of(from).map_err(io_err(from, "read"))?;
    if now.map(|(s, _)| s) != Some(*seen) {
        return Err(WriteError::Changed {
            path: from.to_path_buf(),
        });
    }
    rename_noreplace(from, to).map_err(|err| match err.raw_os_error() {
        Some(libc::EEXIST) => WriteError::Exists {
            path: to.to_path_buf(),
        },
        _ => WriteError::Io {
            path: from.to_path_buf(),
            action: "rename",
            err,
        },
    })?;
    changes.record(from, Done::Moved);
    let after = |what: String| WriteError::after(from, Done::Moved, what);
    let unsynced = |e: WriteError| {
        after(format!(
            "{e}; a power loss may leave it where it was, or in both places"
        ))
    };
    sync_dir(parent_or_dot(to)).map_err(unsynced)?;
    if parent_or_dot(to) != parent_or_dot(from) {
        sync_dir(parent_or_dot(from)).map_err(unsynced)?;
    }
    let moved = Seen::of(to).map_err(|e| {
        after(format!(
            "re-reading {} failed: {}",
            to.display(),
            in_words(&e)
        ))
    })?;
    if !moved.is_some_and(|(m, _)| seen.moved_as(&m)) {
        return Err(after(format!(
            "re-reading {} did not find what was moved",
            to.display()
        )));
    }
    match fs::symlink_metadata(from) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        _ => Err(after(format!(
            "{} is there again after the move (another writer?)",
            from.display()
        ))),
    }
}
