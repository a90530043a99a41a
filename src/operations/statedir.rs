//! A SymCC state directory (`<output>/<name>/`): which of upstream's files
//! are there, which temporary files a crash left behind, and whether a
//! master holds `.master-queue.lock` — read from `/proc/locks`, never by
//! opening or locking the file (a probe at the wrong moment would make a
//! starting master fail).
//!
//! Also the one way this tool opens an input file for reading: regular
//! files only, opened non-blocking so a FIFO can never hang the tool.

use std::fs::{self, File, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::engine::journal::{self, DEFERRED, WORK_LEASES};
use crate::engine::json;
use crate::engine::snapshot::{self, STATE_TASKS};
use crate::operations::error::InputError;
use crate::operations::words::in_words;

/// The master's directory lock.
pub const MASTER_LOCK: &str = ".master-queue.lock";

/// What a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A JSONL lease journal.
    Journal,
    /// A `.state_tasks.json` snapshot.
    Snapshot,
}

fn file_type_name(meta: &Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Opens `path` with `options`, which hold `O_NONBLOCK` so that a FIFO
/// never blocks. With it, an open that would wait for a lease holder
/// (another run of this tool, cutting a torn tail or checking a file
/// before a rename, for a few milliseconds) fails with `EWOULDBLOCK`
/// instead: it is tried again for up to five seconds.
pub fn open_nonblocking(options: &fs::OpenOptions, path: &Path) -> io::Result<File> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match options.open(path) {
            Err(err)
                if err.raw_os_error() == Some(libc::EWOULDBLOCK)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// Opens a regular file for reading without ever blocking on a FIFO and
/// without changing its access time semantics beyond a plain read.
pub fn open_regular(path: &Path) -> Result<(File, Metadata), InputError> {
    let meta = fs::metadata(path).map_err(|e| InputError::io(path, &e))?;
    if !meta.is_file() {
        return Err(InputError::new(
            path,
            format!("is {}, not a regular file", file_type_name(&meta)),
        ));
    }
    let file = open_nonblocking(
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC),
        path,
    )
    .map_err(|e| InputError::io(path, &e))?;
    // The path may have been replaced between stat and open: check the
    // descriptor itself.
    let meta = file.metadata().map_err(|e| InputError::io(path, &e))?;
    if !meta.is_file() {
        return Err(InputError::new(
            path,
            format!("is {}, not a regular file", file_type_name(&meta)),
        ));
    }
    Ok((file, meta))
}

/// The kind a file name implies, if it implies one: a journal's name
/// first, then a snapshot's.
pub fn kind_from_name(path: &Path) -> Option<Kind> {
    let name = path.file_name()?.to_str()?;
    if journal::owns_name(name) {
        Some(Kind::Journal)
    } else if snapshot::owns_name(name) {
        Some(Kind::Snapshot)
    } else {
        None
    }
}

/// The kind the first bytes of a file imply, each format asked of its
/// first line in turn, the journal first. An empty file is an (empty)
/// journal.
pub fn kind_from_content(prefix: &[u8]) -> Option<Kind> {
    let first = json::first_line(prefix);
    if journal::owns_start(&first) {
        Some(Kind::Journal)
    } else if snapshot::owns_start(&first) {
        Some(Kind::Snapshot)
    } else {
        None
    }
}

/// A leftover temporary file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TempFile {
    /// File name within the directory.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Which state file it was meant to replace, when the name says so.
    pub belongs_to: Option<String>,
    /// Left by this tool (`<file>.leasejournal.<pid>.tmp`) rather than by
    /// upstream.
    pub ours: bool,
}

/// What `/proc/locks` says about the master's lock file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MasterLock {
    /// Whether `.master-queue.lock` exists.
    pub present: bool,
    /// Whether some process holds a lock on it; `None` when `/proc/locks`
    /// could not be read.
    pub held: Option<bool>,
    /// PIDs holding it, as `/proc/locks` reports them.
    pub holders: Vec<i64>,
}

/// The files of a state directory.
#[derive(Clone, Debug)]
pub struct StateDir {
    /// The directory.
    pub path: PathBuf,
    /// The known files present, in the order the master reads them on
    /// resume (deferred journal, work journal, snapshot).
    pub files: Vec<(PathBuf, Kind)>,
    /// Leftover `*.tmp` files.
    pub temp_files: Vec<TempFile>,
    /// This tool's backups (`FILE.bak.<UTC>`) and discard exports
    /// (`FILE.discarded.<UTC>.jsonl`) of the state files.
    pub backups: Vec<TempFile>,
    /// The master lock.
    pub master_lock: MasterLock,
}

/// The names in `dir`, `.` and `..` left out. Read with rustix rather than
/// `std::fs::read_dir`, whose handle panics when closing the directory
/// fails (an I/O error there is possible, if rare); every error here is an
/// `Err`.
pub fn dir_names(dir: &Path) -> io::Result<Vec<std::ffi::OsString>> {
    use std::os::unix::ffi::OsStrExt;
    let handle = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)?;
    let mut entries = rustix::fs::Dir::read_from(&handle)?;
    let mut names = Vec::new();
    while let Some(entry) = entries.read() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(std::ffi::OsStr::from_bytes(name).to_os_string());
        }
    }
    Ok(names)
}

/// Looks at a state directory without writing, creating or locking anything.
pub fn examine(dir: &Path, proc_locks: Option<&str>) -> Result<StateDir, InputError> {
    let names = dir_names(dir).map_err(|e| InputError::io(dir, &e))?;
    let mut temp_files = Vec::new();
    let mut backups = Vec::new();
    for file_name in names {
        let name = file_name.to_string_lossy().into_owned();
        let metadata = || fs::symlink_metadata(dir.join(&file_name));
        if is_our_copy(&name) {
            if let Ok(meta) = metadata()
                && meta.is_file()
            {
                backups.push(TempFile {
                    belongs_to: [WORK_LEASES, DEFERRED, STATE_TASKS]
                        .into_iter()
                        .find(|f| name.starts_with(&format!("{f}.")))
                        .map(str::to_string),
                    name,
                    bytes: meta.len(),
                    ours: true,
                });
            }
            continue;
        }
        if !name.ends_with(".tmp") {
            continue;
        }
        let Ok(meta) = metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let belongs_to = [WORK_LEASES, DEFERRED, STATE_TASKS]
            .into_iter()
            .find(|f| name.starts_with(&format!("{f}.")))
            .map(str::to_string);
        let ours = name.contains(".leasejournal.");
        temp_files.push(TempFile {
            name,
            bytes: meta.len(),
            belongs_to,
            ours,
        });
    }
    temp_files.sort_by(|a, b| a.name.cmp(&b.name));
    backups.sort_by(|a, b| a.name.cmp(&b.name));

    // A state file that is absent is absent; one that cannot be looked at
    // is an error, never silently left out.
    let mut files: Vec<(PathBuf, Kind)> = Vec::new();
    for (name, kind) in [
        (DEFERRED, Kind::Journal),
        (WORK_LEASES, Kind::Journal),
        (STATE_TASKS, Kind::Snapshot),
    ] {
        let path = dir.join(name);
        match fs::symlink_metadata(&path) {
            Ok(_) => files.push((path, kind)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(InputError::new(
                    &path,
                    format!("cannot be examined: {}", in_words(&err)),
                ));
            }
        }
    }

    let master_lock = master_lock(dir, proc_locks);
    Ok(StateDir {
        path: dir.to_path_buf(),
        files,
        temp_files,
        backups,
        master_lock,
    })
}

/// Whether a file name is one of this tool's backups or discard exports
/// of a state file.
fn is_our_copy(name: &str) -> bool {
    [WORK_LEASES, DEFERRED, STATE_TASKS].iter().any(|f| {
        name.strip_prefix(*f).is_some_and(|rest| {
            rest.starts_with(".bak.")
                || (rest.starts_with(".discarded.") && rest.ends_with(".jsonl"))
        })
    })
}

/// What `/proc/locks` (its text, if it could be read) says about
/// `<dir>/.master-queue.lock`, found without opening it.
pub fn master_lock(dir: &Path, proc_locks: Option<&str>) -> MasterLock {
    match fs::symlink_metadata(dir.join(MASTER_LOCK)) {
        Err(_) => MasterLock {
            present: false,
            held: Some(false),
            holders: Vec::new(),
        },
        Ok(meta) => {
            let holders = proc_locks.map(|text| lock_holders(text, meta.dev(), meta.ino()));
            MasterLock {
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

    /// Each format's cases are in its own `sniff`; here, that the journal
    /// is asked first.
    #[test]
    fn content_detection() {
        assert_eq!(kind_from_content(b""), Some(Kind::Journal));
        assert_eq!(
            kind_from_content(b"{\"op\":\"lease\",\"stats\":[]}\n"),
            Some(Kind::Journal)
        );
        assert_eq!(
            kind_from_content(b"{\"clock\":\"unix\",\"stats\":[]}"),
            Some(Kind::Snapshot)
        );
        assert_eq!(kind_from_content(b"[1,2]\n"), None);
        assert_eq!(kind_from_name(Path::new("a/b.jsonl")), Some(Kind::Journal));
        assert_eq!(kind_from_name(Path::new("a/b.json")), Some(Kind::Snapshot));
        assert_eq!(kind_from_name(Path::new("a/b.txt")), None);
    }
}
