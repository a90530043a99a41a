//! A SymCC state directory (`<output>/<name>/`): which of upstream's files
//! are there, which temporary files and backups are beside them, and
//! whether a master holds `.master-queue.lock` (`store::lock`), and the
//! digest ledger's directory `.state_shards/` when there is one
//! (`store::ledger`). The ledger does not make a directory a state
//! directory: the journals and the snapshot do, as before.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::store::error::{InputError, in_words};
use crate::store::format::{self, Kind};
use crate::store::ledger::{self, LedgerDir};
use crate::store::lock::{self, LockState};
use crate::store::open::dir_names;

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
    pub master_lock: LockState,
    /// The digest ledger's directory, when there is one.
    pub ledger: Option<LedgerDir>,
    /// What stands at `.state_shards` when something that is not a
    /// directory does (`store::ledger::blocker`).
    pub ledger_blocker: Option<&'static str>,
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
                    belongs_to: format::state_file_of(&name).map(str::to_string),
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
        let belongs_to = format::state_file_of(&name).map(str::to_string);
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
    for (name, kind) in format::state_files() {
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

    let ledger = ledger::beside(dir)?;
    let ledger_blocker = ledger::blocker(dir);
    let master_lock = lock::master_lock(dir, proc_locks);
    Ok(StateDir {
        ledger,
        ledger_blocker,
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
    format::state_files().any(|(f, _)| {
        name.strip_prefix(f).is_some_and(|rest| {
            rest.starts_with(".bak.")
                || (rest.starts_with(".discarded.") && rest.ends_with(".jsonl"))
        })
    })
}
