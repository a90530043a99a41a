//! The one way this tool opens an input for reading: regular files only,
//! opened non-blocking so a FIFO can never hang the tool; standard input
//! as a file; a directory's names without a panicking handle.

use std::fs::{self, File, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::store::error::{InputError, in_words};

pub(crate) fn file_type_name(meta: &Metadata) -> &'static str {
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
/// Whether PATH names standard input: `-`, or `/dev/stdin` when it is a
/// pipe or a terminal rather than a file.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
        || (path.as_os_str() == "/dev/stdin"
            && std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()))
}

/// Standard input as a file that can be read by position: the file itself
/// when it is one (`< journal.jsonl`), else its bytes copied into an
/// anonymous memory file (a pipe), so that every command reads `-` as it
/// reads a path. Nothing is created on disk.
pub fn stdin_file() -> Result<File, InputError> {
    use std::os::fd::AsFd;

    let path = Path::new("-");
    let dup = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| InputError::io(path, &e))?;
    let mut stdin = File::from(dup);
    let meta = stdin.metadata().map_err(|e| InputError::io(path, &e))?;
    if meta.is_file() {
        return Ok(stdin);
    }
    // SAFETY: a valid NUL-terminated name and flags; the result is checked.
    let fd = unsafe { libc::memfd_create(c"leasejournal-stdin".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(InputError::io(path, &std::io::Error::last_os_error()));
    }
    // SAFETY: fd is a new descriptor this process owns.
    let mut copy = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    std::io::copy(&mut stdin, &mut copy).map_err(|e| InputError::io(path, &e))?;
    std::io::Seek::rewind(&mut copy).map_err(|e| InputError::io(path, &e))?;
    Ok(copy)
}

/// The size of an opened file: how much of a journal is read.
pub fn size(path: &Path, file: &File) -> Result<u64, InputError> {
    file.metadata()
        .map(|m| m.len())
        .map_err(|e| InputError::new(path, format!("read error: {}", in_words(&e))))
}
