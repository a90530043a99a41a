//! The only code that writes user files: the master's lock, change
//! detection, backups, atomic replacement and sealed appends, each durable
//! (fsync of the file and of its directory) and each refusing symlinks.
//!
//! Order of a change in place, as the write commands use it:
//! 1. [`MasterLock::acquire`] — the same `flock` the master takes, held
//!    until the last fsync, so no master starts mid-change and no change
//!    starts under a master;
//! 2. read and plan (elsewhere), remembering the file's [`Identity`];
//! 3. [`Identity::check`] — the file is still the one that was read;
//! 4. [`backup`];
//! 5. [`replace`] (temp file re-read and verified as it is written, fsync,
//!    rename, fsync the directory)
//!    or [`append`] (seal the tail, one write, fsync);
//! 6. re-read and confirm (the caller, with the replay digest).
//!
//! A failed fsync is reported and never retried into a success. Failpoints
//! (`LEASEJOURNAL_FAILPOINTS`) exist for the crash-safety tests only.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::statedir::MASTER_LOCK;

/// Why a write did not happen (or did not complete).
#[derive(Debug)]
pub enum WriteError {
    /// A live master holds the directory's lock.
    Locked {
        /// The directory.
        dir: PathBuf,
        /// Who holds it, as `/proc/locks` tells (empty when it cannot).
        pids: Vec<i64>,
        /// Whether `--lock-timeout` was waited out.
        waited: bool,
    },
    /// The file changed between the read and the write.
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// The target is a symbolic link (or not a regular file).
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        what: &'static str,
    },
    /// The destination of `--output` already exists.
    Exists {
        /// The path.
        path: PathBuf,
    },
    /// A system call failed.
    Io {
        /// The path it concerned.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        err: io::Error,
    },
    /// What was written does not replay to the planned state.
    Verify {
        /// The path.
        path: PathBuf,
        /// The difference.
        detail: String,
    },
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Locked { dir, pids, waited } => {
                let who = match pids.as_slice() {
                    [] => String::new(),
                    [pid] => format!(" (pid {pid})"),
                    many => format!(
                        " (pids {})",
                        many.iter()
                            .map(|p| p.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                if *waited {
                    write!(
                        f,
                        "{}: a running master{who} still holds {MASTER_LOCK} at the end of --lock-timeout; nothing was written",
                        dir.display()
                    )
                } else {
                    write!(
                        f,
                        "{}: a running master{who} holds {MASTER_LOCK}; nothing was written. Stop it first, or wait for it with --lock-timeout SECONDS",
                        dir.display()
                    )
                }
            }
            WriteError::Changed { path } => write!(
                f,
                "{}: changed since it was read (another writer?); nothing was written",
                path.display()
            ),
            WriteError::NotRegular { path, what } => {
                write!(
                    f,
                    "{}: is {what}; refusing to write through it",
                    path.display()
                )
            }
            WriteError::Exists { path } => {
                write!(
                    f,
                    "{}: already exists; refusing to overwrite it",
                    path.display()
                )
            }
            WriteError::Io { path, action, err } => write!(
                f,
                "{}: cannot {action}: {}",
                path.display(),
                crate::statedir::in_words(err)
            ),
            WriteError::Verify { path, detail } => write!(
                f,
                "{}: the result does not replay to the planned state ({detail}); the original is unchanged",
                path.display()
            ),
        }
    }
}

impl std::error::Error for WriteError {}

fn io_err<'a>(path: &'a Path, action: &'static str) -> impl FnOnce(io::Error) -> WriteError + 'a {
    move |err| WriteError::Io {
        path: path.to_path_buf(),
        action,
        err,
    }
}

/// Failpoints for the crash-safety tests: `LEASEJOURNAL_FAILPOINTS` holds
/// `name=action` pairs separated by commas; `kill` sends SIGKILL to this
/// process, `error` fails with an I/O error ("no space left on device"),
/// `pause:PATH` creates `PATH.reached` and waits (up to 60 s) for
/// `PATH.continue`; `truncate` (at `temp-written` only) halves the
/// temporary file, and `check-thread=none` makes [`replace`] check the
/// file after writing it, as when no thread can be spawned.
pub fn failpoint(name: &str) -> io::Result<()> {
    for action in failpoint_actions(name) {
        if action == "kill" {
            // SAFETY: raise has no preconditions; SIGKILL ends the process.
            unsafe {
                libc::raise(libc::SIGKILL);
            }
        } else if action == "error" {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        } else if let Some(path) = action.strip_prefix("pause:") {
            fs::write(format!("{path}.reached"), b"")?;
            let deadline = Instant::now() + Duration::from_secs(60);
            while !Path::new(&format!("{path}.continue")).exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    Ok(())
}

/// The actions set for the failpoint `name`, in order.
fn failpoint_actions(name: &str) -> Vec<String> {
    let spec = std::env::var("LEASEJOURNAL_FAILPOINTS").unwrap_or_default();
    spec.split(',')
        .filter_map(|item| item.split_once('='))
        .filter(|(point, _)| *point == name)
        .map(|(_, action)| action.to_string())
        .collect()
}

/// Whether the failpoint `name` is set to `action`.
fn failpoint_is(name: &str, action: &str) -> bool {
    failpoint_actions(name).iter().any(|a| a == action)
}

/// The failpoint action `truncate` at `name`: cuts `file` to half its
/// length, so the tests can show that a result which does not replay to
/// the plan is never published.
fn truncate_point(name: &str, file: &File) -> io::Result<()> {
    if failpoint_is(name, "truncate") {
        let len = file.metadata()?.len();
        file.set_len(len / 2)?;
    }
    Ok(())
}

/// The master's directory lock, held until dropped.
#[derive(Debug)]
pub struct MasterLock {
    _file: File,
}

impl MasterLock {
    /// Takes `<dir>/.master-queue.lock` as the master does: opened
    /// `O_RDWR|O_CREAT|O_CLOEXEC|O_NOFOLLOW` with mode 0600, a regular file,
    /// `flock(LOCK_EX|LOCK_NB)`. With `wait`, retries until it expires.
    pub fn acquire(
        dir: &Path,
        wait: Option<Duration>,
        on_wait: impl FnOnce(&[i64]),
    ) -> Result<MasterLock, WriteError> {
        let path = dir.join(MASTER_LOCK);
        let open = |create_new: bool| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(create_new)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
        };
        // A lock file this tool creates belongs to the directory's owner,
        // as the master's own would: the master, running as that user,
        // must be able to open it.
        let file = match open(true) {
            Ok(file) => {
                give_to_owner_of(&file, dir).map_err(io_err(
                    &path,
                    "give the master lock to the directory's owner",
                ))?;
                Ok(file)
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => open(false),
            Err(err) => Err(err),
        }
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ELOOP) => WriteError::NotRegular {
                path: path.clone(),
                what: "a symbolic link",
            },
            _ => WriteError::Io {
                path: path.clone(),
                action: "open the master lock",
                err,
            },
        })?;
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
            crate::statedir::read_proc_locks()
                .map(|text| crate::statedir::lock_holders(&text, meta.dev(), meta.ino()))
                .unwrap_or_default()
        };
        let mut on_wait = Some(on_wait);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(MasterLock { _file: file }),
                Err(fs::TryLockError::WouldBlock) => {
                    if deadline.is_none_or(|d| Instant::now() >= d) {
                        return Err(WriteError::Locked {
                            dir: dir.to_path_buf(),
                            pids: holders(),
                            waited: deadline.is_some(),
                        });
                    }
                    if let Some(tell) = on_wait.take() {
                        tell(&holders());
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
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ELOOP) => WriteError::NotRegular {
                path: path.to_path_buf(),
                what: "a symbolic link",
            },
            _ => WriteError::Io {
                path: path.to_path_buf(),
                action: "open",
                err,
            },
        })?;
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

/// Gives a new `file` the owner and group of the directory `dir`.
fn give_to_owner_of(file: &File, dir: &Path) -> io::Result<()> {
    let meta = fs::metadata(dir)?;
    give_to(file, meta.uid(), meta.gid())
}

fn sync_dir(dir: &Path) -> Result<(), WriteError> {
    let d = File::open(dir).map_err(io_err(dir, "open the directory"))?;
    d.sync_all().map_err(io_err(dir, "fsync the directory"))
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Copies `path` to `<dir>/<name>.bak.<stamp>` (dir: `backup_dir` or the
/// file's own), fsyncs the copy and its directory, and returns its path.
/// `stamp` is a UTC timestamp such as `20261130T073645Z`.
pub fn backup(path: &Path, backup_dir: Option<&Path>, stamp: &str) -> Result<PathBuf, WriteError> {
    let (mut src, meta) = open_target(path)?;
    let dir = backup_dir.unwrap_or_else(|| parent(path));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut attempt = 0;
    let (dest, mut out) = loop {
        let suffix = if attempt == 0 {
            String::new()
        } else {
            format!("-{attempt}")
        };
        let dest = dir.join(format!("{name}.bak.{stamp}{suffix}"));
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
        failpoint("backup-written").map_err(io_err(&dest, "write the backup"))?;
        out.sync_all().map_err(io_err(&dest, "fsync the backup"))?;
        sync_dir(parent(&dest))
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&dest);
        return Err(e);
    }
    Ok(dest)
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
        give_to_owner_of(&file, parent(path))
            .map_err(io_err(path, "give the file the directory's owner"))?;
        file.write_all(bytes).map_err(io_err(path, "write"))?;
        file.sync_all().map_err(io_err(path, "fsync"))?;
        sync_dir(parent(path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(path);
    }
    result
}

/// This tool's temporary file for `target`.
pub fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent(target).join(format!("{name}.leasejournal.{}.tmp", std::process::id()))
}

/// Removes this tool's leftover temporary files for `target` (call under
/// the master lock, when no run of this tool can be writing them).
pub fn remove_stale_temps(target: &Path) -> Vec<PathBuf> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!("{name}.leasejournal.");
    let mut removed = Vec::new();
    if let Ok(entries) = fs::read_dir(parent(target)) {
        for entry in entries.flatten() {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if file_name.starts_with(&prefix)
                && file_name.ends_with(".tmp")
                && entry.file_type().is_ok_and(|t| t.is_file())
                && fs::remove_file(entry.path()).is_ok()
            {
                removed.push(entry.path());
            }
        }
    }
    removed
}

/// Writes a new version of `target` through a temporary file: `produce`
/// writes the content while `check`, on another thread, re-reads the
/// temporary file as it grows ([`Reread`]) and accepts it (or finds it
/// needless, when it is discarded) or refuses it. The file is fsynced while
/// the check finishes; only when both succeed, and the file holds exactly
/// what was written, is it renamed over `target` and the directory
/// fsynced. `like` gives the mode and owner to keep (the original's);
/// `None` for a new file (mode 0644 less the umask). `must_not_exist`
/// refuses to replace an existing `target`.
///
/// `produce` runs while the check waits for its bytes: it must not wait for
/// anything the check does, nor use the global rayon pool, whose threads
/// the check's scan may be holding while it waits. The check reads each
/// byte once, as soon as it is written; the temporary file is ours alone
/// (created `O_EXCL` under the master's lock), and the length is compared
/// again before the rename.
pub fn replace(
    target: &Path,
    like: Option<&fs::Metadata>,
    must_not_exist: bool,
    produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    check: impl FnOnce(&mut Reread<'_>) -> Result<Publish, String> + Send,
) -> Result<Publish, WriteError> {
    replace_then(target, like, must_not_exist, produce, check, || Ok(()))
}

/// [`replace`] in place, with `before_rename` run once the temporary file
/// is written, checked and found to change something, right before it is
/// renamed over `target` (the backup: none is made for a change that turns
/// out to change nothing). If it fails, nothing is renamed.
pub fn replace_in_place(
    target: &Path,
    like: &fs::Metadata,
    produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    check: impl FnOnce(&mut Reread<'_>) -> Result<Publish, String> + Send,
    before_rename: impl FnOnce() -> Result<(), WriteError>,
) -> Result<Publish, WriteError> {
    replace_then(target, Some(like), false, produce, check, before_rename)
}

fn replace_then(
    target: &Path,
    like: Option<&fs::Metadata>,
    must_not_exist: bool,
    produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    check: impl FnOnce(&mut Reread<'_>) -> Result<Publish, String> + Send,
    before_rename: impl FnOnce() -> Result<(), WriteError>,
) -> Result<Publish, WriteError> {
    if must_not_exist && fs::symlink_metadata(target).is_ok() {
        return Err(WriteError::Exists {
            path: target.to_path_buf(),
        });
    }
    let temp = temp_path(target);
    let mode = like.map_or(0o644, |m| m.permissions().mode() & 0o7777);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&temp)
        .map_err(io_err(&temp, "create the temporary file"))?;
    // Removes the temporary file if anything below fails or panics.
    let mut guard = RemoveOnDrop(Some(temp.clone()));
    let result = (|| {
        match like {
            Some(m) => {
                // The original's owner and mode.
                give_to(&file, m.uid(), m.gid()).map_err(io_err(&temp, "keep the owner"))?;
                fs::set_permissions(&temp, fs::Permissions::from_mode(mode))
                    .map_err(io_err(&temp, "keep the mode"))?;
            }
            // A new file belongs to the directory's owner.
            None => give_to_owner_of(&file, parent(target))
                .map_err(io_err(&temp, "give the file the directory's owner"))?,
        }
        let progress = Progress::default();
        // Read back through the descriptor that wrote it: the same file,
        // whatever happens to its name.
        let reread = Reread {
            file: &file,
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
            let checking = if failpoint_is("check-thread", "none") {
                None
            } else {
                std::thread::Builder::new()
                    .spawn_scoped(scope, run_check)
                    .ok()
            };
            let written = write_temp(&file, &temp, &progress, produce);
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
        let (verdict, read) = checked.expect("a finished write is checked");
        let publish = verdict.map_err(|detail| WriteError::Verify {
            path: target.to_path_buf(),
            detail,
        })?;
        // The check read all of it, and nothing changed its size since.
        let size = file
            .metadata()
            .map_err(io_err(&temp, "re-read the temporary file"))?
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
            let _ = fs::remove_file(&temp);
            return Ok(Publish::No);
        }
        before_rename()?;
        failpoint("before-rename").map_err(io_err(target, "rename"))?;
        if must_not_exist && fs::symlink_metadata(target).is_ok() {
            return Err(WriteError::Exists {
                path: target.to_path_buf(),
            });
        }
        fs::rename(&temp, target).map_err(io_err(target, "rename the temporary file over"))?;
        failpoint("after-rename").map_err(io_err(target, "fsync the directory"))?;
        sync_dir(parent(target))?;
        Ok(Publish::Yes)
    })();
    if result.is_ok() {
        // Renamed over the target, or already removed.
        guard.0 = None;
    }
    result
}

/// Writes the temporary file with `produce`, telling `progress` what is
/// written as it goes, then fsyncs it (while the check finishes) and
/// returns its length. Whatever happens, `progress` ends: finished, or
/// abandoned so that the check stops waiting.
fn write_temp(
    file: &File,
    temp: &Path,
    progress: &Progress,
    produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<u64, WriteError> {
    let mut abandon = AbandonOnDrop(Some(progress));
    let mut out = BufWriter::with_capacity(1 << 20, Reporting { file, progress });
    produce(&mut out).map_err(io_err(temp, "write the temporary file"))?;
    out.flush()
        .map_err(io_err(temp, "write the temporary file"))?;
    drop(out);
    failpoint("temp-written").map_err(io_err(temp, "write the temporary file"))?;
    truncate_point("temp-written", file).map_err(io_err(temp, "write the temporary file"))?;
    abandon.0 = None;
    let len = progress.end(End::Finished);
    file.sync_all()
        .map_err(io_err(temp, "fsync the temporary file"))?;
    Ok(len)
}

/// How much of the temporary file is written, shared between the writer
/// and the check that follows it.
#[derive(Default)]
struct Progress {
    state: std::sync::Mutex<Written>,
    changed: std::sync::Condvar,
}

#[derive(Clone, Copy, Default)]
struct Written {
    len: u64,
    end: Option<End>,
    /// The check refused the file before the write ended.
    refused: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Finished,
    Abandoned,
}

impl Progress {
    fn lock(&self) -> std::sync::MutexGuard<'_, Written> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn grew(&self, n: usize) {
        self.lock().len += n as u64;
        self.changed.notify_all();
    }

    fn end(&self, end: End) -> u64 {
        let len = {
            let mut state = self.lock();
            state.end = Some(end);
            state.len
        };
        self.changed.notify_all();
        len
    }
}

/// Marks the file refused when dropped (after a refusal or a panic in the
/// check) if it is still being written, so that the writer stops; unless
/// it was taken out because the check accepted the file.
struct RefuseOnDrop<'a>(Option<&'a Progress>);

impl Drop for RefuseOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(progress) = self.0 {
            let mut state = progress.lock();
            if state.end.is_none() {
                state.refused = true;
            }
        }
    }
}

/// Ends the write as abandoned when dropped (after an error or a panic in
/// `produce`), unless it was taken out because the write finished.
struct AbandonOnDrop<'a>(Option<&'a Progress>);

impl Drop for AbandonOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(progress) = self.0 {
            progress.end(End::Abandoned);
        }
    }
}

/// The temporary file as its writer sees it: every write is reported.
struct Reporting<'a> {
    file: &'a File,
    progress: &'a Progress,
}

impl Write for Reporting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.progress.lock().refused {
            return Err(io::Error::other("the re-read check refused the file"));
        }
        let n = (&mut &*self.file).write(buf)?;
        self.progress.grew(n);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The temporary file as [`replace`]'s check reads it, through its own
/// descriptor, while it is written: a read never goes past what has been
/// written and waits for more until the writer has finished. The end is
/// the end of what was written; a file that turns out shorter, or a write
/// that was abandoned, is a read error.
pub struct Reread<'a> {
    file: &'a File,
    progress: &'a Progress,
    pos: u64,
}

impl io::Read for Reread<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = {
            let mut state = self.progress.lock();
            loop {
                if state.len > self.pos {
                    break state.len - self.pos;
                }
                match state.end {
                    Some(End::Finished) => return Ok(0),
                    Some(End::Abandoned) => {
                        return Err(io::Error::other("the write was abandoned"));
                    }
                    None => {
                        state = self
                            .progress
                            .changed
                            .wait(state)
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                    }
                }
            }
        };
        let want = buf
            .len()
            .min(usize::try_from(available).unwrap_or(usize::MAX));
        let n = std::os::unix::fs::FileExt::read_at(self.file, &mut buf[..want], self.pos)?;
        if n == 0 && want > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the temporary file is shorter than what was written",
            ));
        }
        self.pos += n as u64;
        Ok(n)
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

/// What the check of a temporary file decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Publish {
    /// Rename it over the target.
    Yes,
    /// Discard it: the target already has this content.
    No,
}

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

/// Seals the end of `target` and appends `bytes` in one write, fsyncing
/// after each step.
pub fn append(target: &Path, seal: Seal, bytes: &[u8]) -> Result<(), WriteError> {
    let mut file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(target)
        .map_err(io_err(target, "open for appending"))?;
    match seal {
        Seal::Clean => {}
        Seal::Truncate(len) => {
            file.set_len(len)
                .map_err(io_err(target, "cut the torn tail"))?;
            file.sync_all()
                .map_err(io_err(target, "fsync after cutting the tail"))?;
            failpoint("tail-cut").map_err(io_err(target, "append"))?;
        }
        Seal::Newline => {
            file.seek(SeekFrom::End(0))
                .map_err(io_err(target, "append"))?;
            file.write_all(b"\n")
                .map_err(io_err(target, "terminate the last line"))?;
            file.sync_all()
                .map_err(io_err(target, "fsync after terminating the last line"))?;
        }
    }
    if bytes.is_empty() {
        return Ok(());
    }
    failpoint("before-append").map_err(io_err(target, "append"))?;
    file.seek(SeekFrom::End(0))
        .map_err(io_err(target, "append"))?;
    let start = file.stream_position().map_err(io_err(target, "append"))?;
    if let Err(err) = file.write_all(bytes) {
        // Leave no partial record behind: cut back to where the append began.
        let _ = file.set_len(start);
        let _ = file.sync_all();
        return Err(WriteError::Io {
            path: target.to_path_buf(),
            action: "append",
            err,
        });
    }
    file.sync_all()
        .map_err(io_err(target, "fsync after appending"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let _ = replace(
                &target,
                None,
                false,
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
        let published = replace(&target, None, true, produce_big, |f| {
            let mut got = Vec::new();
            io::Read::read_to_end(f, &mut got).map_err(|e| e.to_string())?;
            assert!(got == expected, "the check reads exactly what is written");
            Ok(Publish::Yes)
        });
        assert!(matches!(published, Ok(Publish::Yes)));
        assert!(fs::read(&target).unwrap() == expected);
        assert_eq!(entries(dir.path()), ["journal.jsonl"]);
    }

    #[test]
    fn a_failed_or_panicking_write_ends_the_check_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("journal.jsonl");
        fs::write(&target, b"before\n").unwrap();
        let read_error = std::sync::Mutex::new(String::new());
        let failed = replace(
            &target,
            None,
            false,
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
            let _ = replace(
                &target,
                None,
                false,
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
        let refused = replace(
            &target,
            None,
            true,
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
        let refused = replace(&target, None, true, produce_big, |f| {
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
        let refused = replace(
            &target,
            None,
            false,
            |out| out.write_all(b"after\n"),
            |_| Err("no".into()),
        );
        assert!(matches!(refused, Err(WriteError::Verify { .. })));
        assert_eq!(entries(dir.path()), ["journal.jsonl"]);
        let published = replace(
            &target,
            None,
            false,
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
