//! Reading what a path names: its journals in the order resume reads them,
//! each scanned once with its progress shown, and many paths side by side.

use std::fs::File;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::engine::journal::{Observer, Positional, Scan};
use crate::store::error::{InputError, in_words};
use crate::store::format::Kind;
use crate::store::lock::ProcLocks;
use crate::store::open;
use crate::store::progress::Progress;
use crate::store::resolve::{self, Purpose, Target};

/// Runs `check` on every path, several at once (as many as rayon's pool
/// has threads), and returns the results in the order of `paths`. Standard
/// input is read on the calling thread first, so that no thread of the
/// pool waits for a pipe; every other path is read by position.
pub fn each_path<T: Send>(paths: &[PathBuf], check: impl Fn(&Path) -> T + Sync) -> Vec<T> {
    let mut results: Vec<Option<T>> = paths
        .iter()
        .map(|path| open::is_stdin(path).then(|| check(path)))
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

/// The journals a path names, opened, in the order resume reads them: a
/// journal (or `-`), or a state directory's journals. A snapshot is
/// refused: `view` names what reads only journals (`--records`).
pub fn journals(
    path: &Path,
    kind: Option<Kind>,
    proc_locks: &ProcLocks,
    view: &str,
) -> Result<Vec<(PathBuf, File)>, InputError> {
    match resolve::resolve(path, kind, Purpose::Read(proc_locks))? {
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
                let (file, _) = open::open_regular(&path)?;
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
    read_journal(path, file, progress, |src| {
        crate::engine::journal::scan(src, observer)
    })
}

/// Reads the journal `file` (opened from `path`) once through `read`, by
/// position, showing the reading to `progress`; a read error names the
/// file.
pub fn read_journal<T>(
    path: &Path,
    file: &File,
    progress: &dyn Progress,
    read: impl FnOnce(Positional<'_>) -> std::io::Result<T>,
) -> Result<T, InputError> {
    let len = open::size(path, file)?;
    let meter = progress.meter(path, len);
    let advance = |n| meter.advance(n);
    let result = read(Positional::file(file, len).with_progress(&advance))
        .map_err(|e| InputError::new(path, format!("read error: {}", in_words(&e))));
    meter.finish();
    result
}
