//! The exit codes, in one place. Documented in the man pages and README;
//! nothing else in the program chooses a process exit status.

use std::process::ExitCode;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success (`verify`: go; `diff`: identical; `--check`: nothing
    /// to do).
    Success,
    /// 1: problems found (`verify`: no-go; `diff`: differences; `--check`:
    /// something to change).
    Problems,
    /// 2: usage error, or an input could not be read (`verify`:
    /// incomplete).
    Trouble,
    /// 3: a live master owns the directory (writers refuse; `verify`:
    /// busy).
    Refused,
    /// 4: a writing command made its change, and a step after it failed
    /// (the change's durability, the re-read check, another file of the
    /// run, printing the report).
    Changed,
    /// 5: a writing command did its job (its changes made and confirmed,
    /// or nothing to do) but left a stale temporary file of an earlier run
    /// of this tool that it could not remove, or could not list the
    /// directory to look for them.
    LeftBehind,
}

impl Exit {
    /// The numeric code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Problems => 1,
            Exit::Trouble => 2,
            Exit::Refused => 3,
            Exit::Changed => 4,
            Exit::LeftBehind => 5,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

impl Exit {
    /// The exit status of a writing run that did its job: 5 when it
    /// `left_behind` a stale temporary file of this tool (`--apply` only);
    /// with `--check`, 1 when it `would_change` something; otherwise 0.
    pub fn of_write(would_change: bool, left_behind: bool) -> Exit {
        if left_behind {
            Exit::LeftBehind
        } else if would_change {
            Exit::Problems
        } else {
            Exit::Success
        }
    }

    /// The exit status of a read-only run over several paths, `errors` the
    /// paths it could not read: 2 when there is one, else 0.
    pub fn of_read_errors<E>(errors: &[E]) -> Exit {
        if errors.is_empty() {
            Exit::Success
        } else {
            Exit::Trouble
        }
    }
}

/// The table of codes for help and man pages.
pub const EXIT_STATUS: &[(u8, &str)] = &[
    (
        0,
        "Success (verify: go; diff: identical; --check: nothing to do).",
    ),
    (
        1,
        "Problems found: verify's no-go (an error finding, or a warning with --strict), diff's differences, or a --check that would change something.",
    ),
    (
        2,
        "Usage error, or an input could not be read (missing, unreadable, not a regular file, not a journal or snapshot); a refused request (recover --apply without --discard, a restore of a file that is not a discard export of that journal, a rollback --apply or --check that would lose newer work without --allow-loss, a repair --apply of a fenced lease table without --all-masters-stopped); a write that failed before it changed anything. Nothing was changed. For verify: incomplete, a path could not be checked.",
    ),
    (
        3,
        "A live master holds the directory's .master-queue.lock: the writing commands refuse and change nothing; verify's verdict is busy. For a fenced lease table: a process on this host holds one of its record locks (repair refuses and changes nothing), or a record was skipped because its lock was held or it changed since the plan (the rest was done).",
    ),
    (
        4,
        "A writing command made its change, then a later step failed: making it durable (an fsync), the re-read check, carrying in records another process appended meanwhile, another file of the same run, or printing the report. The message names each file changed and what could not be confirmed.",
    ),
    (
        5,
        "A writing command did its job (its changes made and confirmed, or nothing to do), but a stale temporary file of an earlier run of this tool (FILE.leasejournal.<pid>.tmp) could not be removed, or the directory could not be listed to look for them: stderr and the report's \"stale_temp_files_left\" name each, with the error. The state files are as a run with exit 0 leaves them; remove the file once the cause is fixed, or run the command again.",
    ),
];
