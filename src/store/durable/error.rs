//! Why a write did not happen or did not complete ([`WriteError`]), and
//! what a run changed ([`ChangeLog`]): recorded by the durable code the
//! moment a change is made, so that whatever fails afterwards is reported
//! as a failure after a change, never as "nothing was changed".

use std::io;
use std::path::{Path, PathBuf};

use crate::store::error::in_words;
use crate::store::lock::{Holder, MASTER_LOCK, describe_holders};

/// Why a write did not happen (or did not complete).
#[derive(Debug)]
pub enum WriteError {
    /// A live master holds the directory's lock.
    Locked {
        /// The directory.
        dir: PathBuf,
        /// Who holds it (empty when `/proc` cannot tell).
        holders: Vec<Holder>,
        /// Whether `--lock-timeout` was waited out.
        waited: bool,
    },
    /// A process on this host holds record locks of a fenced lease table
    /// (`/proc/locks`): a master is using it.
    TableLocked {
        /// The table's root.
        root: PathBuf,
        /// Each lock held (relative to the root) and who holds it, in words.
        held: Vec<(String, String)>,
    },
    /// The file changed between the read and the write.
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// The target is a symbolic link (or not a regular file).
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        what: &'static str,
    },
    /// The destination of `--output` already exists.
    Exists {
        /// The path.
        path: PathBuf,
    },
    /// A system call failed.
    Io {
        /// The path it concerned.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        err: io::Error,
    },
    /// What was written does not replay to the planned state (found
    /// before anything was changed).
    Verify {
        /// The path.
        path: PathBuf,
        /// The difference.
        detail: String,
    },
    /// Another process has the file open for writing although it does not
    /// hold the master's lock; found before anything was changed.
    Busy {
        /// The file.
        path: PathBuf,
    },
    /// The change was made, and a step after it failed: its durability,
    /// the re-read check, or bringing in what another process wrote
    /// meanwhile. Exit status 4.
    AfterChange {
        /// The file that was changed.
        path: PathBuf,
        /// What was done to it.
        done: Done,
        /// What then failed, in words.
        failed: String,
    },
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Locked {
                dir,
                holders,
                waited,
            } => {
                let who = describe_holders(holders);
                if *waited {
                    write!(
                        f,
                        "{}: {who} still holds {MASTER_LOCK} at the end of --lock-timeout; nothing was written",
                        dir.display()
                    )
                } else {
                    write!(
                        f,
                        "{}: {who} holds {MASTER_LOCK}; nothing was written. Stop it first, or wait for it with --lock-timeout SECONDS",
                        dir.display()
                    )
                }
            }
            WriteError::TableLocked { root, held } => {
                let list: Vec<String> = held
                    .iter()
                    .map(|(lock, who)| format!("{who} holds {lock}"))
                    .collect();
                write!(
                    f,
                    "{}: a process on this host is using the table ({}); nothing was changed. Stop every master using it, on every host, first",
                    root.display(),
                    list.join(", ")
                )
            }
            WriteError::Changed { path } => write!(
                f,
                "{}: changed since it was read (another writer?); nothing was written",
                path.display()
            ),
            WriteError::NotRegular { path, what } => {
                write!(
                    f,
                    "{}: is {what}; refusing to write through it",
                    path.display()
                )
            }
            WriteError::Exists { path } => {
                write!(
                    f,
                    "{}: already exists; refusing to overwrite it",
                    path.display()
                )
            }
            WriteError::Io { path, action, err } => {
                write!(f, "{}: cannot {action}: {}", path.display(), in_words(err))
            }
            WriteError::Verify { path, detail } => write!(
                f,
                "{}: the result does not replay to the planned state ({detail}); the original is unchanged",
                path.display()
            ),
            WriteError::Busy { path } => write!(
                f,
                "{}: another process has it open for writing and does not hold {MASTER_LOCK}; stop it first. Nothing was changed",
                path.display()
            ),
            WriteError::AfterChange { path, done, failed } => {
                write!(f, "{}: {done}, but {failed}", path.display())
            }
        }
    }
}

impl std::error::Error for WriteError {}

impl WriteError {
    /// A failed step after `path` was changed (`done`): exit status 4.
    pub(super) fn after(path: &Path, done: Done, failed: impl Into<String>) -> WriteError {
        WriteError::AfterChange {
            path: path.to_path_buf(),
            done,
            failed: failed.into(),
        }
    }
}

/// What a change did to a file; its words follow the file's name
/// (`journal.jsonl was rewritten`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Done {
    /// A new file (`--output`) was written.
    Written,
    /// The file was replaced by a new version.
    Rewritten,
    /// Records another process appended during a rewrite were carried in.
    LateAppendsCarried,
    /// A torn tail was cut off.
    TailCut,
    /// A torn last line was ended with a newline instead of cut.
    TornLineEnded,
    /// A complete last line got its missing newline.
    LastLineTerminated,
    /// Records were appended.
    RecordsAppended,
    /// An append failed half-way and could not be cut back.
    PartlyAppended,
    /// The file was changed (what exactly is in its other changes).
    Changed,
    /// The file was removed (its content is in other files now).
    Removed,
    /// The entry was moved (out of a table, or to its own path in it).
    Moved,
    /// The directory was created.
    Created,
}

impl std::fmt::Display for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Done::Written => "was written",
            Done::Rewritten => "was rewritten",
            Done::LateAppendsCarried => "got the records appended during the change",
            Done::TailCut => "had its torn tail cut",
            Done::TornLineEnded => "had its torn last line ended with a newline",
            Done::LastLineTerminated => "had its last line terminated",
            Done::RecordsAppended => "had the records appended",
            Done::PartlyAppended => "was partly appended to",
            Done::Changed => "was changed",
            Done::Removed => "was removed",
            Done::Moved => "was moved",
            Done::Created => "was created",
        })
    }
}

/// A change a run made to a file: a rewrite, a cut or sealed tail,
/// appended records, a new file. Recorded in the run's [`ChangeLog`] the
/// moment the change is made, so that whatever fails afterwards (the
/// directory's fsync, the re-read check, another file, printing the
/// report) is reported as a failure after a change, never as "nothing was
/// changed".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The file changed or created.
    pub path: PathBuf,
    /// What was done.
    pub done: Done,
}

/// The changes one run has made, in the order it made them. The durable
/// code records each the moment it is made; the session hands them on in
/// its report, or in its error when a later step fails.
#[derive(Debug, Default)]
pub struct ChangeLog(std::sync::Mutex<Vec<Change>>);

impl ChangeLog {
    /// Records that `path` was changed; `done` says how.
    pub fn record(&self, path: &Path, done: Done) {
        self.changes().push(Change {
            path: path.to_path_buf(),
            done,
        });
    }

    /// How many changes were made so far.
    pub fn len(&self) -> usize {
        self.changes().len()
    }

    /// Whether nothing was changed so far.
    pub fn is_empty(&self) -> bool {
        self.changes().is_empty()
    }

    /// The changes made so far, in order.
    pub fn to_vec(&self) -> Vec<Change> {
        self.changes().clone()
    }

    fn changes(&self) -> std::sync::MutexGuard<'_, Vec<Change>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// An `open` that failed: through a symbolic link (`O_NOFOLLOW` gives
/// `ELOOP`), or otherwise.
pub(super) fn open_err<'a>(
    path: &'a Path,
    action: &'static str,
) -> impl FnOnce(io::Error) -> WriteError + 'a {
    move |err| match err.raw_os_error() {
        Some(libc::ELOOP) => WriteError::NotRegular {
            path: path.to_path_buf(),
            what: "a symbolic link",
        },
        _ => WriteError::Io {
            path: path.to_path_buf(),
            action,
            err,
        },
    }
}

pub(super) fn io_err<'a>(
    path: &'a Path,
    action: &'static str,
) -> impl FnOnce(io::Error) -> WriteError + 'a {
    move |err| WriteError::Io {
        path: path.to_path_buf(),
        action,
        err,
    }
}
