//! A fenced lease table's files, read without a lock and without writing:
//! the root's names, one shard directory's entries (name, type, inode),
//! one record's bytes, and the facts of this host the findings need (its
//! node name, whether a pid runs, which lock files `/proc/locks` shows
//! held). The rules of what the names and bytes mean are
//! `engine::table`'s.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

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
        return Err(InputError::new(
            root,
            "is not a directory, so it is no fenced lease table (a master's start fails on it: durable_makedirs)",
        ));
    }
    Ok(meta.dev())
}

/// The entries of a directory, `.` and `..` left out, with their types
/// (from the directory itself where the file system says, else `lstat`).
pub fn entries(dir: &Path) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    OpenDir::open(dir)?.for_each(|bytes, kind, ino| {
        let (name, utf8) = match std::str::from_utf8(bytes) {
            Ok(s) => (s.to_string(), true),
            Err(_) => (String::from_utf8_lossy(bytes).into_owned(), false),
        };
        out.push(Entry {
            name,
            utf8,
            kind,
            ino,
        });
    })?;
    Ok(out)
}

/// A directory held open: its entries listed one at a time, and the files
/// in it read by name relative to it (`openat`), so that a shard of many
/// records is read without building a path, or walking one, per record.
pub struct OpenDir {
    fd: rustix::fd::OwnedFd,
}

impl OpenDir {
    /// Opens `dir` (following a link, as `os.listdir` does).
    pub fn open(dir: &Path) -> io::Result<OpenDir> {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = rustix::fs::open(dir, flags, Mode::empty())?;
        Ok(OpenDir { fd })
    }

    /// Calls `each` with every entry's name, type (not following a link:
    /// from the directory itself where the file system says, else
    /// `lstat`) and inode, `.` and `..` left out. Nothing is kept between
    /// entries but the listing's own buffer.
    pub fn for_each(&self, mut each: impl FnMut(&[u8], EntryType, u64)) -> io::Result<()> {
        let mut listing = rustix::fs::Dir::read_from(&self.fd)?;
        while let Some(entry) = listing.read() {
            let entry = entry?;
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let kind = match entry.file_type() {
                rustix::fs::FileType::Unknown => rustix::fs::statat(
                    &self.fd,
                    entry.file_name(),
                    rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                )
                .map(|st| EntryType::of(rustix::fs::FileType::from_raw_mode(st.st_mode)))
                .unwrap_or(EntryType::Special),
                ft => EntryType::of(ft),
            };
            each(bytes, kind, entry.ino());
        }
        Ok(())
    }

    /// [`read_record`] of the file `name` in this directory.
    pub fn read_record(&self, name: &[u8], buffer: &mut Vec<u8>) -> RecordFile {
        buffer.clear();
        match rustix::fs::openat(&self.fd, name, record_flags(), rustix::fs::Mode::empty()) {
            Ok(fd) => read_all(&fd, buffer),
            Err(rustix::io::Errno::NOENT) => RecordFile::Absent,
            Err(e) => RecordFile::Unreadable(e.into()),
        }
    }
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
    match rustix::fs::open(path, record_flags(), rustix::fs::Mode::empty()) {
        Ok(fd) => read_all(&fd, buffer),
        Err(rustix::io::Errno::NOENT) => RecordFile::Absent,
        Err(e) => RecordFile::Unreadable(e.into()),
    }
}

/// How a record is opened: read-only, following a link, never blocking
/// on a FIFO nor taking a terminal.
fn record_flags() -> rustix::fs::OFlags {
    use rustix::fs::OFlags;
    OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC
}

/// Reads `fd` to its end into `buffer` (empty), into its spare capacity
/// (never zeroed first).
fn read_all(fd: &rustix::fd::OwnedFd, buffer: &mut Vec<u8>) -> RecordFile {
    if buffer.capacity() < 8192 {
        buffer.reserve(8192);
    }
    loop {
        if buffer.len() == buffer.capacity() {
            buffer.reserve(buffer.len());
        }
        let room = buffer.capacity() - buffer.len();
        match rustix::io::read(fd, rustix::buffer::spare_capacity(buffer)) {
            Ok(0) => return RecordFile::Read,
            // A short read of a regular file is its end: records are
            // published by rename, never grown in place.
            Ok(n) if n < room => return RecordFile::Read,
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return RecordFile::Unreadable(e.into()),
        }
    }
}

/// Whether a seed path names a regular file on this host
/// (`os.path.isfile`).
pub fn is_file(path: &str) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// [`is_file`] for the many seeds of one journal or table, which mostly sit
/// in a few directories (an AFL queue): once a seed's directory is found
/// not to be a directory here, the other seeds in it are missing without a
/// lookup each. A host without the AFL output mounted then costs one or
/// two lookups per directory instead of one per seed. The kernel resolves
/// a path's directory before its last component, so a seed whose
/// directory does not resolve is never a file; a seed with no directory
/// part is always looked up.
#[derive(Debug, Default)]
pub struct SeedFiles {
    missing_dirs: std::cell::RefCell<std::collections::HashSet<std::path::PathBuf>>,
}

impl SeedFiles {
    /// Whether `path` names a regular file here, as [`is_file`] says.
    pub fn is_file(&self, path: &str) -> bool {
        let dir = Path::new(path)
            .parent()
            .filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir
            && self.missing_dirs.borrow().contains(dir)
        {
            return false;
        }
        if is_file(path) {
            return true;
        }
        if let Some(dir) = dir
            && !fs::metadata(dir).is_ok_and(|m| m.is_dir())
        {
            self.missing_dirs.borrow_mut().insert(dir.to_path_buf());
        }
        false
    }
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
    proc_locks.map_or_else(Vec::new, |text| {
        crate::store::lock::held_on_device(text, dev).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeds of a missing directory are missing, with one lookup of
    /// the directory; files, files beside no directory part and files in a
    /// directory that appears later are still found.
    #[test]
    fn seed_files_answer_as_is_file_does() {
        let dir = std::env::temp_dir().join(format!("leasejournal-seeds-{}", std::process::id()));
        fs::create_dir_all(dir.join("queue")).unwrap();
        fs::write(dir.join("queue/id:000001"), b"seed").unwrap();
        let at = |rel: &str| dir.join(rel).display().to_string();
        let seeds = SeedFiles::default();
        assert!(seeds.is_file(&at("queue/id:000001")));
        assert!(!seeds.is_file(&at("queue/id:000002")));
        assert!(!seeds.is_file(&at("queue")), "a directory is not a file");
        assert!(!seeds.is_file(&at("gone/id:000001")));
        assert!(seeds.missing_dirs.borrow().contains(&dir.join("gone")));
        assert!(!seeds.is_file(&at("gone/id:000002")));
        assert!(
            !seeds.is_file(&at("queue/id:000001/x")),
            "a file's path is no directory"
        );
        assert!(
            seeds
                .missing_dirs
                .borrow()
                .contains(&dir.join("queue/id:000001"))
        );
        // Paths that go through the missing directory are missing too.
        assert!(!seeds.is_file(&at("gone/../queue/id:000001")));
        assert!(!seeds.is_file(""));
        assert!(!seeds.is_file("no-directory-part-here"));
        assert!(
            seeds
                .missing_dirs
                .borrow()
                .iter()
                .all(|d| !d.as_os_str().is_empty())
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
