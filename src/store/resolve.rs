//! What a command-line path names — a file of a known kind, standard input,
//! a state directory — resolved once, for readers and writers alike.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::store::error::InputError;
use crate::store::format::{self, Kind};
use crate::store::lock::ProcLocks;
use crate::store::open;
use crate::store::statedir::{self, StateDir};

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

/// What a path is resolved for: to be read, or to be changed by a
/// command that changes the kinds `wanted`.
#[derive(Clone, Copy)]
pub enum Purpose<'a> {
    /// A reader: standard input is accepted, and a state directory shows
    /// whether a master holds its lock (`/proc/locks`, read once a run).
    Read(&'a ProcLocks),
    /// A writer: standard input is refused, and a file must be of a kind
    /// it changes.
    Change {
        /// The kinds the command changes.
        wanted: &'a [Kind],
    },
}

/// Resolves a path to a file of known kind or a state directory; `-` is
/// standard input (read only). A file's kind is `kind`, else what its name
/// or its first bytes say. Nothing is written, created or locked.
pub fn resolve(
    path: &Path,
    kind: Option<Kind>,
    purpose: Purpose<'_>,
) -> Result<Target, InputError> {
    if open::is_stdin(path) {
        if let Purpose::Change { .. } = purpose {
            return Err(InputError::new(
                path,
                "this command changes files and does not read standard input; name the journal",
            ));
        }
        let file = open::stdin_file()?;
        return file_target(path, kind, file, purpose);
    }
    let meta = std::fs::metadata(path).map_err(|e| InputError::io(path, &e))?;
    if meta.is_dir() {
        return match purpose {
            Purpose::Read(proc_locks) => {
                let dir = statedir::examine(path, proc_locks.get())?;
                if dir.files.is_empty() {
                    return Err(InputError::new(
                        path,
                        format!(
                            "contains none of {}: not a SymCC state directory{}",
                            format::STATE_FILES.join(", "),
                            state_directories_in(path)
                        ),
                    ));
                }
                Ok(Target::Directory(dir))
            }
            Purpose::Change { .. } => Ok(Target::Directory(statedir::examine(path, None)?)),
        };
    }
    // A FIFO, a device or an unreadable file is refused before anything
    // (the master's lock included) is touched.
    let (file, _) = open::open_regular(path)?;
    file_target(path, kind, file, purpose)
}

/// For a directory that is not a state directory: the state directories
/// directly inside it, in words (`; it holds 3 state directories (run1,
/// run2, run3): name them, as out/*/`), or nothing.
fn state_directories_in(path: &Path) -> String {
    let mut found: Vec<String> = open::dir_names(path)
        .unwrap_or_default()
        .into_iter()
        .filter(|name| {
            let sub = path.join(name);
            sub.is_dir()
                && format::state_files().any(|(file, _)| sub.join(file).symlink_metadata().is_ok())
        })
        .map(|name| name.to_string_lossy().into_owned())
        .collect();
    if found.is_empty() {
        return String::new();
    }
    found.sort();
    let shown: Vec<&str> = found.iter().take(3).map(String::as_str).collect();
    let more = if found.len() > 3 { ", …" } else { "" };
    let count = if found.len() == 1 {
        "1 state directory".to_string()
    } else {
        format!("{} state directories", found.len())
    };
    let parent = crate::store::path::shell_quote(&path.display().to_string());
    let parent = parent.trim_end_matches('/');
    format!(
        "; it holds {count} ({}{more}): name {}, as {parent}/*/",
        shown.join(", "),
        if found.len() == 1 { "it" } else { "them" }
    )
}

/// An opened file of the kind given, named, or sniffed from its start.
fn file_target(
    path: &Path,
    kind: Option<Kind>,
    mut file: File,
    purpose: Purpose<'_>,
) -> Result<Target, InputError> {
    let mut prefix = Vec::new();
    let kind = match kind.or_else(|| format::kind_from_name(path)) {
        Some(kind) => kind,
        None => {
            (&mut file)
                .take(SNIFF_BYTES as u64)
                .read_to_end(&mut prefix)
                .map_err(|e| InputError::io(path, &e))?;
            format::kind_from_content(&prefix).ok_or_else(|| {
                InputError::new(
                    path,
                    match purpose {
                        // Nothing in it, and nothing in its name, says what
                        // it is: refused as any other unknown file is.
                        _ if prefix.is_empty() => {
                            "empty, and its name says neither a lease journal (*.jsonl) nor a \
                             state snapshot (*.json); name the kind with --kind"
                        }
                        Purpose::Read(_) => {
                            "neither a lease journal nor a state snapshot (no journal record or \
                             snapshot object at the start); name the kind with --kind"
                        }
                        Purpose::Change { .. } => {
                            "neither a lease journal nor a state snapshot; name the kind with --kind"
                        }
                    },
                )
            })?
        }
    };
    if let Purpose::Change { wanted } = purpose
        && !wanted.contains(&kind)
    {
        return Err(InputError::new(
            path,
            format!("is a {}, which this command does not change", kind.name()),
        ));
    }
    Ok(Target::File {
        path: path.to_path_buf(),
        kind,
        prefix,
        file,
    })
}
