//! The inputs of an operation: what a command-line path names (a file of
//! a known kind, standard input, a state directory), opened read-only.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::engine::journal::{DEFERRED, Observer, Positional, Scan, WORK_LEASES};
use crate::engine::snapshot::STATE_TASKS;
use crate::operations::exit::Exit;
use crate::operations::progress::Progress;
use crate::operations::statedir::{self, Kind, ProcLocks, StateDir};
use crate::operations::words::in_words;

pub use crate::operations::error::InputError;

/// How many leading bytes the content sniffer looks at.
const SNIFF_BYTES: usize = 64 << 10;

/// What a command-line path names.
pub enum Target {
    /// A single file of a known kind, opened, with the bytes already read
    /// from it for sniffing (to be chained in front of the rest).
    File {
        /// The path.
        path: PathBuf,
        /// Its kind.
        kind: Kind,
        /// Bytes already read.
        prefix: Vec<u8>,
        /// The open file, positioned after `prefix`.
        file: File,
    },
    /// A state directory.
    Directory(StateDir),
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

/// Resolves a path to a file of known kind or a state directory; `-` is
/// standard input.
pub fn target(
    path: &Path,
    kind: Option<Kind>,
    proc_locks: &ProcLocks,
) -> Result<Target, InputError> {
    if is_stdin(path) {
        let file = stdin_file()?;
        return file_target(path, kind, file);
    }
    let meta = std::fs::metadata(path).map_err(|e| InputError::io(path, &e))?;
    if meta.is_dir() {
        let dir = statedir::examine(path, proc_locks.get())?;
        if dir.files.is_empty() {
            return Err(InputError::new(
                path,
                format!(
                    "contains none of {}, {}, {}: not a SymCC state directory",
                    WORK_LEASES, DEFERRED, STATE_TASKS
                ),
            ));
        }
        return Ok(Target::Directory(dir));
    }
    let (file, _) = statedir::open_regular(path)?;
    file_target(path, kind, file)
}

/// An opened file of the kind given, named, or sniffed from its start.
fn file_target(path: &Path, kind: Option<Kind>, mut file: File) -> Result<Target, InputError> {
    let mut prefix = Vec::new();
    let kind = match kind.or_else(|| statedir::kind_from_name(path)) {
        Some(kind) => kind,
        None => {
            (&mut file)
                .take(SNIFF_BYTES as u64)
                .read_to_end(&mut prefix)
                .map_err(|e| InputError::io(path, &e))?;
            statedir::kind_from_content(&prefix).ok_or_else(|| {
                InputError::new(
                    path,
                    "neither a lease journal nor a state snapshot (no journal record or \
                     snapshot object at the start); name the kind with --kind",
                )
            })?
        }
    };
    Ok(Target::File {
        path: path.to_path_buf(),
        kind,
        prefix,
        file,
    })
}

/// The size of an opened file: how much of a journal is read.
pub fn size(path: &Path, file: &File) -> Result<u64, InputError> {
    file.metadata()
        .map(|m| m.len())
        .map_err(|e| InputError::new(path, format!("read error: {}", in_words(&e))))
}

/// Runs `check` on every path, several at once (as many as rayon's pool
/// has threads), and returns the results in the order of `paths`. Standard
/// input is read on the calling thread first, so that no thread of the
/// pool waits for a pipe; every other path is read by position.
pub fn each_path<T: Send>(paths: &[PathBuf], check: impl Fn(&Path) -> T + Sync) -> Vec<T> {
    let mut results: Vec<Option<T>> = paths
        .iter()
        .map(|path| is_stdin(path).then(|| check(path)))
        .collect();
    results
        .par_iter_mut()
        .zip(paths)
        .with_max_len(1)
        .for_each(|(slot, path)| {
            if slot.is_none() {
                *slot = Some(check(path));
            }
        });
    results.into_iter().flatten().collect()
}

/// The exit status of a read-only run over several paths, `errors` the
/// paths it could not read: 2 when there is one, else 0.
pub fn exit_for(errors: &[InputError]) -> Exit {
    if errors.is_empty() {
        Exit::Success
    } else {
        Exit::Trouble
    }
}

/// The journals a path names, opened, in the order resume reads them: a
/// journal (or `-`), or a state directory's journals. A snapshot is
/// refused: `view` names what reads only journals (`--records`).
pub fn journals(
    path: &Path,
    kind: Option<Kind>,
    proc_locks: &ProcLocks,
    view: &str,
) -> Result<Vec<(PathBuf, File)>, InputError> {
    match target(path, kind, proc_locks)? {
        Target::File {
            path,
            kind: Kind::Journal,
            file,
            ..
        } => Ok(vec![(path, file)]),
        Target::File { path, .. } => Err(InputError::new(
            &path,
            format!("a snapshot: {view} reads journals"),
        )),
        Target::Directory(dir) => dir
            .files
            .into_iter()
            .filter(|(_, kind)| *kind == Kind::Journal)
            .map(|(path, _)| {
                let (file, _) = statedir::open_regular(&path)?;
                Ok((path, file))
            })
            .collect(),
    }
}

/// Runs `each` on every journal `paths` name ([`journals`]), in the order
/// given: the results, and the errors of the paths that could not be read
/// (`view` names what reads only journals).
pub fn each_journal<T>(
    paths: &[PathBuf],
    kind: Option<Kind>,
    view: &str,
    mut each: impl FnMut(&Path, &File) -> Result<T, InputError>,
) -> (Vec<T>, Vec<InputError>) {
    let proc_locks = ProcLocks::default();
    let (mut found, mut errors) = (Vec::new(), Vec::new());
    for path in paths {
        let result = journals(path, kind, &proc_locks, view).and_then(|journals| {
            journals
                .iter()
                .map(|(path, file)| each(path, file))
                .collect::<Result<Vec<T>, _>>()
        });
        match result {
            Ok(results) => found.extend(results),
            Err(e) => errors.push(e),
        }
    }
    (found, errors)
}

/// Scans the journal `file` (opened from `path`) once, reporting each line
/// to `observer` and the reading to `progress`.
pub fn scan_journal(
    path: &Path,
    file: &File,
    progress: &dyn Progress,
    observer: &mut (dyn Observer + Send),
) -> Result<Scan, InputError> {
    let len = size(path, file)?;
    let meter = progress.meter(path, len);
    let advance = |n| meter.advance(n);
    let scan = crate::engine::journal::scan(
        Positional::file(file, len).with_progress(&advance),
        observer,
    )
    .map_err(|e| InputError::new(path, format!("read error: {}", in_words(&e))));
    meter.finish();
    scan
}
