//! The exit codes, in one place. Documented in the man pages and README;
//! nothing else in the program chooses a process exit status.

use std::process::ExitCode;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success (for `verify`: no errors; for `diff`: identical).
    Success,
    /// 1: problems found (`verify` errors, `diff` differences).
    Problems,
    /// 2: usage error, or an input could not be read.
    Trouble,
    /// 3: refused because a live master owns the directory.
    Refused,
}

impl Exit {
    /// The numeric code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Problems => 1,
            Exit::Trouble => 2,
            Exit::Refused => 3,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// The table of codes for help and man pages.
pub const EXIT_STATUS: &[(u8, &str)] = &[
    (0, "Success."),
    (1, "Problems found (used by verify and diff)."),
    (
        2,
        "Usage error, or an input could not be read (missing, unreadable, not a regular file, not a journal or snapshot).",
    ),
    (
        3,
        "Refused: a live master holds the directory's .master-queue.lock (commands that write).",
    ),
];
