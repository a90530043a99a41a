//! What `/proc` shows of the processes that have a file open: each open
//! description of it (all of them to root; to anyone else, their own
//! processes'), with its `fdinfo` (the access mode, the locks held on it).
//! The writers ask it who appends to a journal where leases are refused,
//! and the readers who holds the master's lock.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// One open description of a file: the process that has it, and what
/// `/proc/PID/fdinfo/FD` says of it.
pub struct OpenDescription {
    /// The process.
    pub pid: i64,
    /// Its `fdinfo` text (`flags:`, `lock:` lines…); empty where it cannot
    /// be read.
    pub fdinfo: String,
}

/// Every open description of the file with this device and inode that
/// `/proc` shows, in process order.
pub fn open_descriptions(dev: u64, ino: u64) -> Vec<OpenDescription> {
    let mut found = Vec::new();
    for pid in crate::store::open::dir_names(Path::new("/proc")).unwrap_or_default() {
        let Some(pid) = pid.to_str().and_then(|p| p.parse::<i64>().ok()) else {
            continue;
        };
        let proc_dir = Path::new("/proc").join(pid.to_string());
        let fds = proc_dir.join("fd");
        for fd in crate::store::open::dir_names(&fds).unwrap_or_default() {
            let same = fs::metadata(fds.join(&fd)).is_ok_and(|m| m.dev() == dev && m.ino() == ino);
            if same {
                let fdinfo =
                    fs::read_to_string(proc_dir.join("fdinfo").join(&fd)).unwrap_or_default();
                found.push(OpenDescription { pid, fdinfo });
            }
        }
    }
    found
}
