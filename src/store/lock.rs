//! The master's lock, `.master-queue.lock`, both ways this tool meets it:
//! whether a master holds it, read from `/proc/locks` ([`LockState`]), never
//! by opening or locking the file (a probe at the wrong moment would make a
//! starting master fail), and who holds it now ([`Holder`]: `/proc/locks`
//! names only the process that took the lock); and held by this tool while
//! it changes a state directory (`store::durable::HeldLock`, the writers'
//! `flock`).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::Serialize;

use crate::store::procs::open_descriptions;

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
    /// PIDs holding it: the processes whose open descriptions hold the
    /// lock, where `/proc` shows them; else the process `/proc/locks`
    /// names.
    pub holders: Vec<i64>,
    /// The holders, each with its command and, when it inherited the lock
    /// from the process that took it, that process.
    pub processes: Vec<Holder>,
}

/// A process that holds a lock. `/proc/locks` names the process that took
/// the lock, which may have passed it on (a fork, a descriptor handed
/// down) and be gone since; the holders are the processes whose open
/// descriptions hold it (`/proc/PID/fdinfo` lists the locks on each).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Holder {
    /// Its process id.
    pub pid: i64,
    /// Its command name (`/proc/PID/comm`), when it can be read.
    pub command: Option<String>,
    /// Whether it is a run of this tool, changing the directory, rather
    /// than a master.
    pub leasejournal: bool,
    /// The process that took the lock, when it is another: this one
    /// inherited the lock from it.
    pub inherited_from: Option<i64>,
    /// Whether the process it inherited the lock from still runs.
    pub inherited_from_running: bool,
}

impl Holder {
    /// The holder in words: `pid 42 (python3)`, `pid 43 (sleep, which
    /// inherited the lock from pid 41, no longer running)`.
    pub fn describe(&self) -> String {
        let mut about = Vec::new();
        if self.leasejournal {
            about.push("another run of leasejournal".to_string());
        } else if let Some(command) = &self.command {
            about.push(command.clone());
        }
        let mut text = format!("pid {}", self.pid);
        if let Some(taker) = self.inherited_from {
            let state = if self.inherited_from_running {
                "still running"
            } else {
                "no longer running"
            };
            about.push(format!(
                "which inherited the lock from pid {taker}, {state}"
            ));
        }
        if !about.is_empty() {
            text.push_str(&format!(" ({})", about.join(", ")));
        }
        text
    }
}

/// Who holds a lock, as the subject of a sentence: `a running master, pid
/// 42 (python3),`, or `another run of leasejournal, pid 43,` when every
/// holder is one; `a running master` when nobody can be named.
pub fn describe_holders(holders: &[Holder]) -> String {
    let leasejournal = !holders.is_empty() && holders.iter().all(|h| h.leasejournal);
    let who = if leasejournal {
        "another run of leasejournal"
    } else {
        "a running master"
    };
    if holders.is_empty() {
        return who.to_string();
    }
    let named: Vec<String> = holders
        .iter()
        .map(|h| match (leasejournal, h.inherited_from) {
            (true, None) => format!("pid {}", h.pid),
            _ => h.describe(),
        })
        .collect();
    format!("{who}, {},", named.join("; "))
}

/// Whether process `pid` runs (exists, and is not a zombie waiting to be
/// reaped).
pub fn running(pid: i64) -> bool {
    let Ok(stat) = fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")) else {
        return false;
    };
    // "PID (comm) S …": the state follows the last parenthesis.
    let state = stat
        .rfind(')')
        .and_then(|at| stat[at + 1..].trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

/// The processes that hold a lock on the file with this device and inode,
/// `takers` being the processes `/proc/locks` names for it. Each process's
/// open descriptions of the file are looked at (all of them to root; to
/// anyone else, their own processes'); where none can be seen to hold it,
/// the takers are the holders.
pub fn holders(dev: u64, ino: u64, takers: &[i64]) -> Vec<Holder> {
    if takers.is_empty() {
        return Vec::new();
    }
    let mut found: Vec<Holder> = Vec::new();
    let me = std::process::id() as i64;
    for open in open_descriptions(dev, ino) {
        let taker = open.fdinfo.lines().find_map(|line| {
            let lock = line.strip_prefix("lock:")?;
            lock_holders(lock.trim_start(), dev, ino).first().copied()
        });
        let Some(taker) = taker else { continue };
        if found.iter().any(|h| h.pid == open.pid) {
            continue;
        }
        let inherited_from = (taker != open.pid).then_some(taker);
        found.push(holder(
            open.pid,
            me,
            inherited_from,
            inherited_from.is_some_and(running),
        ));
    }
    if found.is_empty() {
        found = takers
            .iter()
            .map(|&pid| holder(pid, me, None, false))
            .collect();
    }
    found.sort_by_key(|h| h.pid);
    found
}

/// A holder's facts from `/proc/PID`.
fn holder(pid: i64, me: i64, inherited_from: Option<i64>, inherited_from_running: bool) -> Holder {
    let proc_dir = Path::new("/proc").join(pid.to_string());
    let command = fs::read_to_string(proc_dir.join("comm"))
        .ok()
        .map(|c| c.trim_end().to_string());
    let exe = fs::read_link(proc_dir.join("exe")).ok();
    let leasejournal = pid == me
        || exe
            .as_ref()
            .and_then(|e| e.file_name())
            .is_some_and(|name| name == "leasejournal");
    Holder {
        pid,
        command,
        leasejournal,
        inherited_from,
        inherited_from_running,
    }
}

/// What `/proc/locks` (its text, if it could be read) says about
/// `<dir>/.master-queue.lock`, found without opening it.
pub fn master_lock(dir: &Path, proc_locks: Option<&str>) -> LockState {
    match fs::symlink_metadata(dir.join(MASTER_LOCK)) {
        Err(_) => LockState {
            present: false,
            held: Some(false),
            holders: Vec::new(),
            processes: Vec::new(),
        },
        Ok(meta) => {
            let takers = proc_locks.map(|text| lock_holders(text, meta.dev(), meta.ino()));
            let processes = takers
                .as_deref()
                .map(|takers| holders(meta.dev(), meta.ino(), takers))
                .unwrap_or_default();
            LockState {
                present: true,
                held: takers.as_ref().map(|h| !h.is_empty()),
                holders: processes.iter().map(|h| h.pid).collect(),
                processes,
            }
        }
    }
}

/// What a probe of the master's lock found ([`probe_master_lock`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "result", content = "error")]
pub enum Probe {
    /// The lock was free: taken and dropped at once.
    Free,
    /// Someone holds it.
    Held,
    /// It could not be tried (the error, in words).
    Failed(String),
}

/// Takes and at once drops `<dir>/.master-queue.lock` as the master takes
/// it (`flock(LOCK_EX|LOCK_NB)` on the existing file, opened read-write,
/// as NFS needs for an exclusive lock; never created, never written), to
/// learn whether a master on another host holds it. Only on the operator's
/// word (`verify --remote-master probe`): a master that starts in the
/// instant the probe holds the lock fails to start.
pub fn probe_master_lock(dir: &Path) -> Probe {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;

    let path = dir.join(MASTER_LOCK);
    let file = match fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) => return Probe::Failed(crate::store::error::in_words(&e)),
    };
    match file.metadata() {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Probe::Failed("not a regular file".into()),
        Err(e) => return Probe::Failed(crate::store::error::in_words(&e)),
    }
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        // Dropped at once; closing the file would drop it too.
        // SAFETY: as above.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
        return Probe::Free;
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EWOULDBLOCK) => Probe::Held,
        _ => Probe::Failed(crate::store::error::in_words(&e)),
    }
}

/// The initial PID namespace's inode, fixed by the kernel
/// (`PROC_PID_INIT_INO`).
const INITIAL_PID_NAMESPACE: &str = "pid:[4026531836]";

/// Whether this process runs in a PID namespace other than the initial
/// one (a container): `/proc/locks` then leaves out the locks of
/// processes outside it, so a master there is as invisible as one on
/// another host. Read from the `/proc/self/ns/pid` link, whose target
/// names the namespace (`NSpid` in `/proc/self/status` cannot tell: it
/// counts only the namespaces below the one `/proc` was mounted for).
/// Read once a run.
pub fn in_nested_pid_namespace() -> bool {
    static NESTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *NESTED.get_or_init(|| {
        let name = match crate::store::failpoint::replaced("pid-namespace") {
            Some(file) => fs::read_to_string(file).ok(),
            None => fs::read_link("/proc/self/ns/pid")
                .ok()
                .map(|target| target.display().to_string()),
        };
        name.is_some_and(|name| name.trim_end() != INITIAL_PID_NAMESPACE)
    })
}

/// Reads `/proc/locks`; `None` where the system has none.
pub fn read_proc_locks() -> Option<String> {
    let path = crate::store::failpoint::replaced("proc-locks")
        .unwrap_or_else(|| std::path::PathBuf::from("/proc/locks"));
    fs::read_to_string(path).ok()
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
    held_on_device(proc_locks, dev)
        .filter(|(i, _)| *i == ino)
        .map(|(_, pid)| pid)
        .collect()
}

/// Every lock `/proc/locks` lists as held (not waited for) on a file of
/// device `dev`: its inode and the holder's PID.
pub fn held_on_device(proc_locks: &str, dev: u64) -> impl Iterator<Item = (u64, i64)> + '_ {
    let major = libc::major(dev) as u64;
    let minor = libc::minor(dev) as u64;
    proc_locks.lines().filter_map(move |line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "1: FLOCK ADVISORY WRITE 1234 08:02:131 0 EOF"; waiters carry "->".
        if fields.get(1) == Some(&"->") || fields.len() < 6 {
            return None;
        }
        let mut id = fields[5].split(':');
        let (maj, min, inode) = (id.next()?, id.next()?, id.next()?);
        if u64::from_str_radix(maj, 16) != Ok(major) || u64::from_str_radix(min, 16) != Ok(minor) {
            return None;
        }
        Some((inode.parse().ok()?, fields[4].parse().ok()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_are_told_apart_in_words() {
        let master = Holder {
            pid: 42,
            command: Some("python3".into()),
            leasejournal: false,
            inherited_from: None,
            inherited_from_running: false,
        };
        let heir = Holder {
            pid: 43,
            command: Some("sleep".into()),
            inherited_from: Some(41),
            ..master.clone()
        };
        let ours = Holder {
            pid: 44,
            command: Some("leasejournal".into()),
            leasejournal: true,
            ..master.clone()
        };
        assert_eq!(master.describe(), "pid 42 (python3)");
        assert_eq!(
            heir.describe(),
            "pid 43 (sleep, which inherited the lock from pid 41, no longer running)"
        );
        assert_eq!(describe_holders(&[]), "a running master");
        assert_eq!(
            describe_holders(std::slice::from_ref(&master)),
            "a running master, pid 42 (python3),"
        );
        assert_eq!(
            describe_holders(std::slice::from_ref(&ours)),
            "another run of leasejournal, pid 44,"
        );
        assert_eq!(
            describe_holders(&[ours, master]),
            "a running master, pid 44 (another run of leasejournal); pid 42 (python3),"
        );
    }

    #[test]
    fn a_lock_nobody_holds_has_no_holder() {
        assert_eq!(holders(1, 1, &[]), Vec::new());
    }

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
