//! A fenced lease table's files, read without a lock and without writing:
//! the root's names, one shard directory's entries (name, type, inode),
//! one record's bytes, and the facts of this host the findings need (its
//! node name, whether a pid runs, which lock files `/proc/locks` shows
//! held). The rules of what the names and bytes mean are
//! `engine::table`'s.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::store::error::InputError;

/// What kind of file an entry is (not following a symbolic link).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryType {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A FIFO, socket or device.
    Special,
}

impl EntryType {
    /// In words, with an article.
    pub fn in_words(self) -> &'static str {
        match self {
            EntryType::File => "a regular file",
            EntryType::Dir => "a directory",
            EntryType::Symlink => "a symbolic link",
            EntryType::Special => "a FIFO, socket or device",
        }
    }

    fn of(ft: rustix::fs::FileType) -> EntryType {
        use rustix::fs::FileType as T;
        match ft {
            T::RegularFile => EntryType::File,
            T::Directory => EntryType::Dir,
            T::Symlink => EntryType::Symlink,
            _ => EntryType::Special,
        }
    }

    fn of_meta(meta: &fs::Metadata) -> EntryType {
        let ft = meta.file_type();
        if ft.is_file() {
            EntryType::File
        } else if ft.is_dir() {
            EntryType::Dir
        } else if ft.is_symlink() {
            EntryType::Symlink
        } else {
            EntryType::Special
        }
    }
}

/// One name in a directory.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The name (not UTF-8 names are kept as they are, lossily shown).
    pub name: String,
    /// Whether the name is valid UTF-8 (upstream's names always are).
    pub utf8: bool,
    /// Its type, not following a link.
    pub kind: EntryType,
    /// Its inode.
    pub ino: u64,
}

/// Whether `dir` can be read as a table root: it exists and is a
/// directory (following a link, as upstream's `os.listdir` does).
pub fn open_root(root: &Path) -> Result<u64, InputError> {
    let meta = fs::metadata(root).map_err(|e| InputError::io(root, &e))?;
    if !meta.is_dir() {
        return Err(InputError::new(root, "is not a directory"));
    }
    Ok(meta.dev())
}

/// The entries of a directory, `.` and `..` left out, with their types
/// (from the directory itself where the file system says, else `lstat`).
pub fn entries(dir: &Path) -> io::Result<Vec<Entry>> {
    let handle = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(dir)?;
    let mut listing = rustix::fs::Dir::read_from(&handle)?;
    let mut out = Vec::new();
    while let Some(entry) = listing.read() {
        let entry = entry?;
        let bytes = entry.file_name().to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            rustix::fs::FileType::Unknown => {
                fs::symlink_metadata(dir.join(OsStr::from_bytes(bytes)))
                    .map(|m| EntryType::of_meta(&m))
                    .unwrap_or(EntryType::Special)
            }
            ft => EntryType::of(ft),
        };
        let (name, utf8) = match std::str::from_utf8(bytes) {
            Ok(s) => (s.to_string(), true),
            Err(_) => (String::from_utf8_lossy(bytes).into_owned(), false),
        };
        out.push(Entry {
            name,
            utf8,
            kind,
            ino: entry.ino(),
        });
    }
    Ok(out)
}

/// Whether `path` is a directory, following a link (what `os.listdir`
/// needs).
pub fn is_dir(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_dir())
}

/// What a record path holds, as upstream's `open` + `read` finds it.
#[derive(Debug)]
pub enum RecordFile {
    /// `os.path.exists` is false (nothing there, or a dangling link).
    Absent,
    /// It exists but cannot be read (a directory, no permission, …).
    Unreadable(io::Error),
    /// Its bytes, in the buffer given.
    Read,
}

/// Reads the file at `path` into `buffer` (cleared first), following a
/// link as upstream's `open` does but never blocking on a FIFO. A regular
/// file is read with as few calls as its size allows.
pub fn read_record(path: &Path, buffer: &mut Vec<u8>) -> RecordFile {
    buffer.clear();
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path);
    let mut file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return RecordFile::Absent,
        Err(e) => return RecordFile::Unreadable(e),
    };
    if buffer.capacity() < 8192 {
        buffer.reserve(8192);
    }
    loop {
        let start = buffer.len();
        let room = buffer.capacity() - start;
        buffer.resize(start + room, 0);
        match file.read(&mut buffer[start..]) {
            Ok(0) => {
                buffer.truncate(start);
                return RecordFile::Read;
            }
            Ok(n) => {
                buffer.truncate(start + n);
                // A short read of a regular file is its end: records are
                // published by rename, never grown in place.
                if n < room {
                    return RecordFile::Read;
                }
                buffer.reserve(buffer.len());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => buffer.truncate(start),
            Err(e) => {
                buffer.truncate(start);
                return RecordFile::Unreadable(e);
            }
        }
    }
}

/// Whether a seed path names a regular file on this host
/// (`os.path.isfile`).
pub fn is_file(path: &str) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// This host's node name, as `os.uname().nodename` gives it.
pub fn node_name() -> Option<String> {
    rustix::system::uname()
        .nodename()
        .to_str()
        .ok()
        .map(str::to_string)
}

/// Whether process `pid` runs on this host.
pub fn running(pid: i64) -> bool {
    crate::store::lock::running(pid)
}

/// The inodes on device `dev` that `/proc/locks` shows locked (held, not
/// waited for), with the pid holding each.
pub fn held_locks(proc_locks: Option<&str>, dev: u64) -> Vec<(u64, i64)> {
    let Some(text) = proc_locks else {
        return Vec::new();
    };
    let (major, minor) = (libc::major(dev) as u64, libc::minor(dev) as u64);
    let mut held = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) == Some(&"->") || fields.len() < 6 {
            continue;
        }
        let mut id = fields[5].split(':');
        let (Some(maj), Some(min), Some(inode)) = (id.next(), id.next(), id.next()) else {
            continue;
        };
        if u64::from_str_radix(maj, 16) == Ok(major)
            && u64::from_str_radix(min, 16) == Ok(minor)
            && let (Ok(ino), Ok(pid)) = (inode.parse::<u64>(), fields[4].parse::<i64>())
        {
            held.push((ino, pid));
        }
    }
    held
}

/// The inodes of [`held_locks`], as a set.
pub fn held_set(held: &[(u64, i64)]) -> HashSet<u64> {
    held.iter().map(|(ino, _)| *ino).collect()
}

/// `root/name`.
pub fn join(root: &Path, name: &str) -> PathBuf {
    root.join(name)
}
