//! The master's directory lock as this tool holds it while it changes a
//! state directory: the same `flock` the master takes.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use super::error::{WriteError, io_err, open_err};
use super::{give_to_owner_of, open_lock_file};
use crate::store::error::in_words;
use crate::store::lock;
use crate::store::lock::MASTER_LOCK;

/// The master's directory lock, held until dropped.
#[derive(Debug)]
pub struct HeldLock {
    file: File,
    /// The lock file, when this run created it.
    created: Option<std::path::PathBuf>,
}

impl HeldLock {
    /// Takes `<dir>/.master-queue.lock` as the master does: opened
    /// `O_RDWR|O_CREAT|O_CLOEXEC|O_NOFOLLOW` with mode 0600, a regular file,
    /// `flock(LOCK_EX|LOCK_NB)`. With `wait`, retries until it expires,
    /// calling `on_wait` with the lock's path and its holders once, when
    /// it first has to wait.
    pub fn acquire(
        dir: &Path,
        wait: Option<Duration>,
        on_wait: impl FnOnce(&Path, &[lock::Holder]),
    ) -> Result<HeldLock, WriteError> {
        let path = dir.join(MASTER_LOCK);
        let (file, new) = open_lock_file(&path).map_err(open_err(&path, "open the master lock"))?;
        // A lock file this tool creates belongs to the directory's owner,
        // as the master's own would: the master, running as that user,
        // must be able to open it.
        let created = new.then(|| path.clone());
        if new {
            give_to_owner_of(&file, dir)
                .map_err(io_err(
                    &path,
                    "give the master lock to the directory's owner",
                ))
                .inspect_err(|_| {
                    let _ = fs::remove_file(&path);
                })?;
        }
        let meta = file
            .metadata()
            .map_err(io_err(&path, "stat the master lock"))?;
        if !meta.is_file() {
            return Err(WriteError::NotRegular {
                path,
                what: "not a regular file",
            });
        }
        let deadline = wait.map(|w| Instant::now() + w);
        let holders = || {
            let takers = lock::read_proc_locks()
                .map(|text| lock::lock_holders(&text, meta.dev(), meta.ino()))
                .unwrap_or_default();
            lock::holders(meta.dev(), meta.ino(), &takers)
        };
        let mut on_wait = Some(on_wait);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(HeldLock { file, created }),
                // Held by another: the file is theirs now, whoever made it.
                Err(fs::TryLockError::WouldBlock) => {
                    if deadline.is_none_or(|d| Instant::now() >= d) {
                        return Err(WriteError::Locked {
                            dir: dir.to_path_buf(),
                            holders: holders(),
                            waited: deadline.is_some(),
                        });
                    }
                    if let Some(tell) = on_wait.take() {
                        tell(&path, &holders());
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(fs::TryLockError::Error(err)) => {
                    return Err(WriteError::Io {
                        path,
                        action: "lock the master lock",
                        err,
                    });
                }
            }
        }
    }
}

impl HeldLock {
    /// Gives the lock up. When this run created the lock file and is
    /// `unused` (it changed nothing), the file is removed first, while the
    /// lock is still held, so that the run leaves nothing it created: only
    /// while the name is still this file and no other process has it open
    /// (`/proc`), since a master that has opened it is about to take it.
    /// What failed, when the removal did, in words that name the file.
    pub fn release(self, unused: bool) -> Result<(), String> {
        let Some(path) = self.created.as_ref().filter(|_| unused) else {
            return Ok(());
        };
        let failed = |e: io::Error| format!("{}: {}", path.display(), in_words(&e));
        let held = self.file.metadata().map_err(failed)?;
        let named = fs::symlink_metadata(path).map_err(failed)?;
        let own = i64::from(std::process::id());
        let others = crate::store::procs::open_descriptions(held.dev(), held.ino())
            .iter()
            .any(|d| d.pid != own);
        if (named.dev(), named.ino()) != (held.dev(), held.ino()) || others {
            return Ok(());
        }
        fs::remove_file(path).map_err(failed)
    }
}
