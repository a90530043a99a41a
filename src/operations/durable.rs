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
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::operations::failpoint;
use crate::operations::statedir::MASTER_LOCK;

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
    /// What was written does not replay to the planned state (found
    /// before anything was changed).
    Verify {
        /// The path.
        path: PathBuf,
        /// The difference.
        detail: String,
    },
    /// Another process has the file open for writing although it does not
    /// hold the master's lock; found before anything was changed.
    Busy {
        /// The file.
        path: PathBuf,
    },
    /// The change was made, and a step after it failed: its durability,
    /// the re-read check, or bringing in what another process wrote
    /// meanwhile. Exit status 4.
    AfterChange {
        /// The file that was changed.
        path: PathBuf,
        /// What was done to it ("was rewritten", "records were appended").
        done: String,
        /// What then failed, in words.
        failed: String,
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
                crate::operations::words::in_words(err)
            ),
            WriteError::Verify { path, detail } => write!(
                f,
                "{}: the result does not replay to the planned state ({detail}); the original is unchanged",
                path.display()
            ),
            WriteError::Busy { path } => write!(
                f,
                "{}: another process has it open for writing and does not hold {MASTER_LOCK}; stop it first. Nothing was changed",
                path.display()
            ),
            WriteError::AfterChange { path, done, failed } => {
                write!(f, "{}: {done}, but {failed}", path.display())
            }
        }
    }
}

impl std::error::Error for WriteError {}

impl WriteError {
    /// A failed step after `path` was changed (`done`): exit status 4.
    fn after(path: &Path, done: &str, failed: impl Into<String>) -> WriteError {
        WriteError::AfterChange {
            path: path.to_path_buf(),
            done: done.to_string(),
            failed: failed.into(),
        }
    }
}

/// A change this process made to a file: a rewrite, a cut or sealed tail,
/// appended records, a new file. Recorded by the code below the moment the
/// change is made, so that whatever fails afterwards (the directory's
/// fsync, the re-read check, another file, printing the report) is
/// reported as a failure after a change, never as "nothing was changed".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The file changed or created.
    pub path: PathBuf,
    /// What was done, as words that follow the path ("was rewritten").
    pub done: String,
}

static CHANGES: std::sync::Mutex<Vec<Change>> = std::sync::Mutex::new(Vec::new());

fn record_change(path: &Path, done: &str) {
    CHANGES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(Change {
            path: path.to_path_buf(),
            done: done.to_string(),
        });
}

/// Every change this process has made so far, in order.
pub fn changes() -> Vec<Change> {
    CHANGES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// An `open` that failed: through a symbolic link (`O_NOFOLLOW` gives
/// `ELOOP`), or otherwise.
fn open_err<'a>(path: &'a Path, action: &'static str) -> impl FnOnce(io::Error) -> WriteError + 'a {
    move |err| match err.raw_os_error() {
        Some(libc::ELOOP) => WriteError::NotRegular {
            path: path.to_path_buf(),
            what: "a symbolic link",
        },
        _ => WriteError::Io {
            path: path.to_path_buf(),
            action,
            err,
        },
    }
}

fn io_err<'a>(path: &'a Path, action: &'static str) -> impl FnOnce(io::Error) -> WriteError + 'a {
    move |err| WriteError::Io {
        path: path.to_path_buf(),
        action,
        err,
    }
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
        .map_err(open_err(&path, "open the master lock"))?;
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
            crate::operations::statedir::read_proc_locks()
                .map(|text| {
                    crate::operations::statedir::lock_holders(&text, meta.dev(), meta.ino())
                })
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

/// How long a change waits for another process to close the file it
/// needs a lease on (an appender that reopens the journal per record
/// closes it within milliseconds).
const LEASE_PATIENCE: Duration = Duration::from_secs(2);

/// Why a lease could not be had.
#[derive(Debug)]
enum NoLease {
    /// Another process kept the file open (for writing, for a read lease;
    /// at all, for a write lease) for the whole patience.
    Busy,
    /// The file system or the kernel gives no leases here (NFS, leases
    /// disabled, a file this user neither owns nor may lease).
    Unsupported,
}

/// A lease on an open file (`fcntl(F_SETLEASE)`), released when dropped.
///
/// A read lease, on a descriptor opened read-only, is granted only while
/// no process has the file open for writing; a write lease, on a
/// descriptor opened for writing, only while no other descriptor of it is
/// open at all (this process's own included). While either is held, a
/// process that opens the file for writing (or truncates it) waits in
/// `open` until it is released. That is how the writing commands prove,
/// without the writer's cooperation, that a file is not being appended to
/// by a process that ignores the master's lock.
struct Lease<'a>(&'a File);

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        // SAFETY: fcntl on an open descriptor; F_UNLCK releases the lease.
        unsafe {
            libc::fcntl(
                std::os::fd::AsRawFd::as_raw_fd(self.0),
                libc::F_SETLEASE,
                libc::F_UNLCK,
            );
        }
    }
}

/// Takes a lease of `kind` (`F_RDLCK` or `F_WRLCK`) on `file`, retrying
/// while another process has the file open, for up to [`LEASE_PATIENCE`].
fn lease(file: &File, kind: libc::c_int) -> Result<Lease<'_>, NoLease> {
    if failpoint::is("lease", "unsupported") {
        return Err(NoLease::Unsupported);
    }
    // A lease holder is told of a conflicting open by SIGIO, whose default
    // action ends the process; the holder here releases its leases within
    // moments anyway, so the signal is ignored.
    static IGNORE_SIGIO: std::sync::Once = std::sync::Once::new();
    IGNORE_SIGIO.call_once(|| {
        // SAFETY: installs SIG_IGN, which has no handler code to run.
        unsafe {
            libc::signal(libc::SIGIO, libc::SIG_IGN);
        }
    });
    let deadline = Instant::now() + LEASE_PATIENCE;
    loop {
        // SAFETY: fcntl on an open descriptor with an integer argument.
        let rc = unsafe {
            libc::fcntl(
                std::os::fd::AsRawFd::as_raw_fd(file),
                libc::F_SETLEASE,
                kind,
            )
        };
        if rc == 0 {
            return Ok(Lease(file));
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EBUSY) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Some(libc::EAGAIN) | Some(libc::EBUSY) => return Err(NoLease::Busy),
            _ => return Err(NoLease::Unsupported),
        }
    }
}

/// The other processes that have `file` open for writing, as far as
/// `/proc` shows them (all of them to root; to anyone else, their own
/// processes). The fallback where the file system gives no leases.
fn writers_of(file: &File) -> Vec<i64> {
    let Ok(meta) = file.metadata() else {
        return Vec::new();
    };
    let me = std::process::id() as i64;
    let mut pids = Vec::new();
    for pid in crate::operations::statedir::dir_names(Path::new("/proc")).unwrap_or_default() {
        let Some(pid) = pid.to_str().and_then(|p| p.parse::<i64>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let fds = Path::new("/proc").join(pid.to_string()).join("fd");
        for fd in crate::operations::statedir::dir_names(&fds).unwrap_or_default() {
            let same = fs::metadata(fds.join(&fd))
                .is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino());
            if !same {
                continue;
            }
            let info = fs::read_to_string(
                Path::new("/proc")
                    .join(pid.to_string())
                    .join("fdinfo")
                    .join(&fd),
            )
            .unwrap_or_default();
            let flags = info
                .lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|f| i64::from_str_radix(f.trim(), 8).ok());
            // Unknown flags count as writing: better refuse than lose.
            if flags.is_none_or(|f| f & i64::from(libc::O_ACCMODE) != i64::from(libc::O_RDONLY))
                && !pids.contains(&pid)
            {
                pids.push(pid);
            }
        }
    }
    pids
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
    let file = crate::operations::statedir::open_nonblocking(
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
    let dir = backup_dir.unwrap_or_else(|| parent(path));
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
        dir.join(format!("{name}.bak.{stamp}{suffix}"))
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
        sync_dir(parent(&dest))
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
        sync_dir(parent(&dest))
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
    let dir = parent(target);
    let mut removed = Vec::new();
    for file_name in crate::operations::statedir::dir_names(dir).unwrap_or_default() {
        let shown = file_name.to_string_lossy();
        let path = dir.join(&file_name);
        if shown.starts_with(&prefix)
            && shown.ends_with(".tmp")
            && fs::symlink_metadata(&path).is_ok_and(|m| m.is_file())
            && fs::remove_file(&path).is_ok()
        {
            removed.push(path);
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
/// refuses to replace an existing `target`, atomically.
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
pub fn replace(
    target: &Path,
    like: Option<&fs::Metadata>,
    must_not_exist: bool,
    produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    check: impl FnOnce(&mut Reread<'_>) -> Result<Publish, String> + Send,
) -> Result<Publish, WriteError> {
    let mode = like.map_or(0o644, |m| m.permissions().mode() & 0o7777);
    let owner = like.map(|m| (m.uid(), m.gid()));
    replace_then(
        target,
        Replacing {
            mode,
            owner,
            must_not_exist,
            original: None,
        },
        produce,
        check,
        || Ok(()),
    )
    .map(|published| published.publish)
}

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

/// What a change in place did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Published {
    /// Whether the result was published.
    pub publish: Publish,
    /// Records another process appended to the original while it was being
    /// replaced, carried into the result.
    pub carried: Option<Carried>,
}

/// Bytes another process appended to a journal during its replacement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Carried {
    /// How many bytes.
    pub bytes: u64,
    /// How many lines (line feeds) they hold.
    pub lines: u64,
}

/// [`replace`] in place, with `before_rename` run once the temporary file
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
    target: &Path,
    original: &Original<'_>,
    produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    check: impl FnOnce(&mut Reread<'_>) -> Result<Publish, String> + Send,
    before_rename: impl FnOnce() -> Result<(), WriteError>,
) -> Result<Published, WriteError> {
    let meta = original.meta;
    replace_then(
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
            .open(parent(target));
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

/// Renames `from` to `to` unless `to` exists (`renameat2(RENAME_NOREPLACE)`;
/// where the file system lacks it, a check and a rename).
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
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
        None => give_to_owner_of(file, parent(target))
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
        Some(original) => {
            let held = match lease(original.file, libc::F_RDLCK) {
                Ok(held) => Some(held),
                Err(NoLease::Busy) => {
                    return Err(WriteError::Busy {
                        path: target.to_path_buf(),
                    });
                }
                Err(NoLease::Unsupported) => {
                    if !writers_of(original.file).is_empty() {
                        return Err(WriteError::Busy {
                            path: target.to_path_buf(),
                        });
                    }
                    None
                }
            };
            let now = original.file.metadata().map_err(io_err(target, "stat"))?;
            if Identity::of(&now) != Identity::of(original.meta) {
                return Err(WriteError::Changed {
                    path: target.to_path_buf(),
                });
            }
            Identity::of(original.meta).check(target)?;
            held
        }
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
        "was written"
    } else {
        "was rewritten"
    };
    record_change(target, done);
    drop(held);
    failpoint::hit("after-rename").map_err(|err| {
        WriteError::after(
            target,
            done,
            format!(
                "could not fsync its directory: {}",
                crate::operations::words::in_words(&err)
            ),
        )
    })?;
    let carried = match how.original {
        Some(original) if original.carry_late_appends => {
            settle(target, original, &temp.file, len, result_lease.is_some())
        }
        _ => Ok(None),
    };
    drop(result_lease);
    let synced = sync_dir(parent(target)).map_err(|err| {
        let why = match &err {
            WriteError::Io { err, .. } => crate::operations::words::in_words(err),
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

/// After `target` was renamed over: waits until no process has the
/// replaced file open for writing, and carries what was appended to it
/// since it was read (beyond `planned`) into the result `new` (whose
/// published length is `published`).
fn settle(
    target: &Path,
    original: &Original<'_>,
    new: &File,
    published: u64,
    new_leased: bool,
) -> Result<Option<Carried>, WriteError> {
    let done = "was rewritten";
    let planned = original.meta.len();
    let words = |err: &io::Error| crate::operations::words::in_words(err);
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
        record_change(target, "got the records appended during the change");
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
fn late_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent(target).join(format!("{name}.late.{}.jsonl", std::process::id()))
}

/// Copies `len` bytes at `from` of `src` to `dest` at `at`; returns the
/// number of line feeds copied.
fn copy_range(src: &File, from: u64, len: u64, dest: &File, at: u64) -> io::Result<u64> {
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
fn save_range(src: &File, from: u64, len: u64, dest: &Path) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut bytes = vec![0u8; usize::try_from(len).map_err(io::Error::other)?];
    src.read_exact_at(&mut bytes, from)?;
    create_new(dest, &bytes).map_err(io::Error::other)
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

/// A read error of the file a result is made from, carried through the
/// `io::Result` of a `produce` function so that it is reported against
/// that file.
#[derive(Debug)]
pub struct SourceError {
    path: PathBuf,
    err: io::Error,
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: cannot read: {}",
            self.path.display(),
            crate::operations::words::in_words(&self.err)
        )
    }
}

impl std::error::Error for SourceError {}

/// `err`, met reading `path`, as an error a `produce` function returns.
pub fn source_error(path: &Path, err: io::Error) -> io::Error {
    if err.get_ref().is_some_and(|inner| inner.is::<SourceError>()) {
        return err;
    }
    io::Error::new(
        err.kind(),
        SourceError {
            path: path.to_path_buf(),
            err,
        },
    )
}

/// A reader of the source file whose errors are [`SourceError`]s.
pub struct Source<R> {
    path: PathBuf,
    inner: R,
}

impl<R> Source<R> {
    /// Reads `inner`, the content of `path`.
    pub fn new(path: &Path, inner: R) -> Self {
        Source {
            path: path.to_path_buf(),
            inner,
        }
    }
}

impl<R: io::Read> io::Read for Source<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner
            .read(buf)
            .map_err(|err| source_error(&self.path, err))
    }
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
    let words = |err: &io::Error| crate::operations::words::in_words(err);
    let mut sealed = Sealed::AsPlanned;
    let mut done: Option<&str> = None;
    let terminate = |file: &File| (&mut &*file).write_all(b"\n");
    match seal {
        Seal::Clean => {}
        Seal::Truncate(len) if held.is_some() => {
            file.set_len(len)
                .map_err(io_err(target, "cut the torn tail"))?;
            done = Some("had its torn tail cut");
        }
        Seal::Truncate(_) => {
            terminate(&file).map_err(io_err(target, "end the torn last line"))?;
            sealed = Sealed::Terminated;
            done = Some("had its torn last line ended with a newline");
        }
        Seal::Newline => {
            terminate(&file).map_err(io_err(target, "terminate the last line"))?;
            done = Some("had its last line terminated");
        }
    }
    // A change is recorded as made, then made durable.
    let made = |what: &str| {
        record_change(target, what);
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
                "was changed",
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
                record_change(target, "was partly appended to");
                WriteError::after(
                    target,
                    "was partly appended to",
                    format!(
                        "appending failed ({}) and the part written could not be cut back: the journal ends in a torn record; run `leasejournal repair`",
                        words(&err)
                    ),
                )
            }
        });
    }
    made("had the records appended")?;
    let end = end(&file)?;
    drop(held);
    Ok(Appended { sealed, end })
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
        let published = replace(&target, None, true, produce, |f| {
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
