//! File leases (`fcntl(F_SETLEASE)`): how a change proves, without the
//! writer's cooperation, that no process that ignores the master's lock
//! is appending to the file it changes; and, where the file system gives
//! no leases, the processes `/proc` shows writing it.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use std::path::Path;

use super::error::{WriteError, io_err};
use super::{Identity, Original};
use crate::store::failpoint;
use crate::store::procs::open_descriptions;

/// How long a change waits for another process to close the file it
/// needs a lease on (an appender that reopens the journal per record
/// closes it within milliseconds).
const LEASE_PATIENCE: Duration = Duration::from_secs(2);

/// Why a lease could not be had.
#[derive(Debug)]
pub(super) enum NoLease {
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
pub(super) struct Lease<'a>(&'a File);

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
pub(super) fn lease(file: &File, kind: libc::c_int) -> Result<Lease<'_>, NoLease> {
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
pub(super) fn writers_of(file: &File) -> Vec<i64> {
    let Ok(meta) = file.metadata() else {
        return Vec::new();
    };
    let me = std::process::id() as i64;
    let mut pids = Vec::new();
    for open in open_descriptions(meta.dev(), meta.ino()) {
        if open.pid == me {
            continue;
        }
        let flags = open
            .fdinfo
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| i64::from_str_radix(f.trim(), 8).ok());
        // Unknown flags count as writing: better refuse than lose.
        if flags.is_none_or(|f| f & i64::from(libc::O_ACCMODE) != i64::from(libc::O_RDONLY))
            && !pids.contains(&open.pid)
        {
            pids.push(open.pid);
        }
    }
    pids
}

/// Under a read lease on `original` (no process can open it for writing
/// while it is held), checks that `target` is still the file that was
/// read, not grown by a byte: what a change that replaces or removes it
/// needs right before it does. A process that has it open for writing is
/// refused ([`WriteError::Busy`]); where leases are refused, such a
/// process is looked for in `/proc` instead, and no lease is held.
pub(super) fn hold_unchanged<'f>(
    original: &Original<'f>,
    target: &Path,
) -> Result<Option<Lease<'f>>, WriteError> {
    let busy = || WriteError::Busy {
        path: target.to_path_buf(),
    };
    let held = match lease(original.file, libc::F_RDLCK) {
        Ok(held) => Some(held),
        Err(NoLease::Busy) => return Err(busy()),
        Err(NoLease::Unsupported) if !writers_of(original.file).is_empty() => return Err(busy()),
        Err(NoLease::Unsupported) => None,
    };
    let now = original.file.metadata().map_err(io_err(target, "stat"))?;
    if Identity::of(&now) != Identity::of(original.meta) {
        return Err(WriteError::Changed {
            path: target.to_path_buf(),
        });
    }
    Identity::of(original.meta).check(target)?;
    Ok(held)
}
