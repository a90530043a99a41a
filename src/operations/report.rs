//! What the writing commands share: their report (with what `repair` and
//! `compact` did to a digest ledger, `operations::ledger_change`'s
//! [`LedgerChange`]), and the refusal to compact away records that repair
//! would bring back.

use std::path::Path;

use serde::Serialize;

use crate::operations::ledger_change::LedgerChange;
use crate::operations::numbers::plural;
use crate::operations::schema;
use crate::store::durable::Change;
use crate::store::path::shell_quote;
use crate::store::session::{FailedAfterChanges, Mode, Outcome, Run};

/// A writing command, as its report names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    /// `repair`.
    Repair,
    /// `recover --discard`.
    Recover,
    /// `migrate`.
    Migrate,
    /// `compact`.
    Compact,
    /// `restore`.
    Restore,
    /// `rollback`.
    Rollback,
}

impl Command {
    /// The version of its report's contract.
    pub fn schema_version(self) -> u32 {
        match self {
            Command::Repair => schema::REPAIR,
            Command::Recover => schema::RECOVER,
            Command::Migrate => schema::MIGRATE,
            Command::Compact => schema::COMPACT,
            Command::Restore => schema::RESTORE,
            Command::Rollback => schema::ROLLBACK,
        }
    }
}

/// The report of a writing subcommand; `T` is what `repair` did to each
/// fenced lease table its paths name (nothing, for the other commands).
#[derive(Debug, Serialize)]
pub struct Report<P: Serialize, T: Serialize = ()> {
    /// Contract version.
    pub schema_version: u32,
    /// The command.
    pub command: Command,
    /// How it wrote.
    pub mode: Mode,
    /// Per file, in the order they were handled.
    pub files: Vec<Outcome<P>>,
    /// What `repair` and `compact` did to each digest ledger the paths
    /// name, after the state files of its directory; absent from the other
    /// commands' reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledgers: Option<Vec<LedgerChange>>,
    /// What `repair` did to each fenced lease table the paths name (absent
    /// from the other commands' reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tables: Option<Vec<T>>,
    /// The fenced lease tables a state directory PATH holds that the run
    /// left alone, since a table is repaired only when named (`repair`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tables_not_named: Option<Vec<String>>,
    /// The changes the run made, in order: not part of the JSON (each
    /// file's outcome says what was written); the face needs them when
    /// printing the report fails.
    #[serde(skip)]
    pub changes: Vec<Change>,
}

impl<P: Serialize, T: Serialize> Report<P, T> {
    /// The report of `command`'s run.
    pub fn of(command: Command, run: Run<P>) -> Report<P, T> {
        Report {
            schema_version: command.schema_version(),
            command,
            mode: run.mode,
            files: run.files,
            ledgers: None,
            tables: None,
            tables_not_named: None,
            changes: run.changes,
        }
    }

    /// The report of `command`'s run that also changed `ledgers`.
    pub fn with_ledgers(command: Command, run: Run<P>, ledgers: Vec<LedgerChange>) -> Report<P, T> {
        Report {
            ledgers: Some(ledgers),
            ..Report::of(command, run)
        }
    }

    /// Whether a `--check` run found something to change, in a file or a
    /// ledger (`is_noop` says for a file's plan).
    pub fn would_change(&self, is_noop: impl Fn(&P) -> bool) -> bool {
        self.mode == Mode::Check
            && (self.files.iter().any(|o| !is_noop(&o.plan))
                || self.ledgers().any(|l| !l.is_noop()))
    }

    /// Whether the run left a stale temporary file of this tool it could
    /// not remove, beside a file or in a ledger (exit status 5).
    pub fn left_behind(&self) -> bool {
        self.files
            .iter()
            .any(|o| !o.stale_temp_files_left.is_empty())
            || self.ledgers().any(|l| !l.stale_temp_files_left.is_empty())
    }

    fn ledgers(&self) -> impl Iterator<Item = &LedgerChange> {
        self.ledgers.iter().flatten()
    }
}

/// What a writing run that failed after it had changed files reports with
/// `--format json` (exit status 4): the files it had finished, every
/// change it made, and what failed.
#[derive(Debug, Serialize)]
pub struct FailedReport {
    /// Contract version: the command's.
    pub schema_version: u32,
    /// The command.
    pub command: Command,
    /// How it wrote (absent when it failed before it knew).
    pub mode: Option<Mode>,
    /// The outcomes of the files it had finished, as its report lists them.
    pub files: serde_json::Value,
    /// Every change it made, in order.
    pub changed: Vec<ChangeReport>,
    /// What failed, in words (the message on stderr).
    pub error: String,
}

/// One change a run made.
#[derive(Debug, Serialize)]
pub struct ChangeReport {
    /// The file.
    pub path: String,
    /// What was done to it, as words that follow its name ("was
    /// rewritten").
    pub done: String,
}

impl FailedReport {
    /// The report of `command`'s run that failed as `failed` says.
    pub fn of(command: Command, failed: &FailedAfterChanges) -> FailedReport {
        let (mode, files) = match &failed.finished {
            Some((mode, files)) => (Some(*mode), files.clone()),
            None => (None, serde_json::Value::Array(Vec::new())),
        };
        FailedReport {
            schema_version: command.schema_version(),
            command,
            mode,
            files,
            changed: failed
                .changes
                .iter()
                .map(|c| ChangeReport {
                    path: c.path.display().to_string(),
                    done: c.done.to_string(),
                })
                .collect(),
            error: format!("{:#}", failed.error),
        }
    }
}

/// A compaction drops the lines upstream ignores; refuses when those hide
/// records that `repair` can bring back, so that no lease is lost.
pub fn refuse_hidden(path: &Path, hidden_records: usize) -> anyhow::Result<()> {
    if hidden_records > 0 {
        anyhow::bail!(
            "{}: {} hidden in lines upstream ignores (glued, behind a byte order mark or before a zero fill) would be dropped; run `leasejournal repair --apply {}` first. Nothing was changed",
            path.display(),
            plural(hidden_records as u64, "record", "records"),
            shell_quote(&path.display().to_string())
        );
    }
    Ok(())
}
