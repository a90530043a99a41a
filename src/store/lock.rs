//! The master's lock, `.master-queue.lock`, both ways this tool meets it:
//! whether a master holds it, read from `/proc/locks` ([`LockState`]), never
//! by opening or locking the file (a probe at the wrong moment would make a
//! starting master fail); and held by this tool while it changes a state
//! directory (`store::durable::HeldLock`, the writers' `flock`).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::Serialize;

/// The master's directory lock.
pub const MASTER_LOCK: &str = ".master-queue.lock";

/// What `/proc/locks` says about the master's lock file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LockState {
    /// Whether `.master-queue.lock` exists.
    pub present: bool,
    /// Whether some process holds a lock on it; `None` when `/proc/locks`
    /// could not be read.
    pub held: Option<bool>,
    /// PIDs holding it, as `/proc/locks` reports them.
    pub holders: Vec<i64>,
}

/// What `/proc/locks` (its text, if it could be read) says about
/// `<dir>/.master-queue.lock`, found without opening it.
pub fn master_lock(dir: &Path, proc_locks: Option<&str>) -> LockState {
    match fs::symlink_metadata(dir.join(MASTER_LOCK)) {
        Err(_) => LockState {
            present: false,
            held: Some(false),
            holders: Vec::new(),
        },
        Ok(meta) => {
            let holders = proc_locks.map(|text| lock_holders(text, meta.dev(), meta.ino()));
            LockState {
                present: true,
                held: holders.as_ref().map(|h| !h.is_empty()),
                holders: holders.unwrap_or_default(),
            }
        }
    }
}

/// Reads `/proc/locks`; `None` where the system has none.
pub fn read_proc_locks() -> Option<String> {
    fs::read_to_string("/proc/locks").ok()
}

/// `/proc/locks`, read once for a whole run (of any number of state
/// directories), when it is first needed.
#[derive(Debug, Default)]
pub struct ProcLocks(std::sync::OnceLock<Option<String>>);

impl ProcLocks {
    /// Its text; `None` where the system has none.
    pub fn get(&self) -> Option<&str> {
        self.0.get_or_init(read_proc_locks).as_deref()
    }
}

/// The PIDs `/proc/locks` lists as holding (not waiting for) a lock on the
/// file with this device and inode.
pub fn lock_holders(proc_locks: &str, dev: u64, ino: u64) -> Vec<i64> {
    let major = libc::major(dev) as u64;
    let minor = libc::minor(dev) as u64;
    let mut pids = Vec::new();
    for line in proc_locks.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "1: FLOCK ADVISORY WRITE 1234 08:02:131 0 EOF"; waiters carry "->".
        if fields.get(1) == Some(&"->") || fields.len() < 6 {
            continue;
        }
        let mut id = fields[5].split(':');
        let (Some(maj), Some(min), Some(inode)) = (id.next(), id.next(), id.next()) else {
            continue;
        };
        let matches = u64::from_str_radix(maj, 16) == Ok(major)
            && u64::from_str_radix(min, 16) == Ok(minor)
            && inode.parse::<u64>() == Ok(ino);
        if matches && let Ok(pid) = fields[4].parse() {
            pids.push(pid);
        }
    }
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_locks_lines_match_device_and_inode() {
        let dev = libc::makedev(8, 2);
        let text = "1: FLOCK  ADVISORY  WRITE 4242 08:02:131 0 EOF\n\
                    1: -> FLOCK  ADVISORY  WRITE 4343 08:02:131 0 EOF\n\
                    2: POSIX  ADVISORY  WRITE 77 08:03:131 0 EOF\n\
                    3: OFDLCK ADVISORY  READ  -1 08:02:999 0 EOF\n";
        assert_eq!(lock_holders(text, dev, 131), vec![4242]);
        assert!(lock_holders(text, dev, 5).is_empty());
        assert_eq!(
            lock_holders(text, libc::makedev(0x103, 0x2a), 7),
            Vec::<i64>::new()
        );
        let wide = "9: FLOCK ADVISORY WRITE 5 103:2a:7 0 EOF";
        assert_eq!(lock_holders(wide, libc::makedev(0x103, 0x2a), 7), vec![5]);
    }
}
