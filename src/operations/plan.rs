//! What the write commands share: the replay state as a plan shows it, the
//! check that a written file replays to the planned state, how a run
//! writes, and its outcomes and reports.

use std::io::Read;

use serde::Serialize;

use crate::engine::journal::{self, Active, Replay, WorkId};
use crate::operations::statedir::Kind;

/// A replay state as counts and a digest ([`Replay::digest`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StateView {
    /// Active leases.
    pub active: usize,
    /// Completed ids.
    pub completed: usize,
    /// SHA-256 of the canonical state.
    pub digest: String,
}

impl StateView {
    /// Summarises a replay.
    pub fn of(replay: &Replay) -> StateView {
        StateView {
            active: replay.active.len(),
            completed: replay.completed.len(),
            digest: replay.digest(),
        }
    }

    /// Summarises a state of active leases, in id order, and no completed
    /// ids.
    pub fn of_active<'a>(
        active: impl ExactSizeIterator<Item = (&'a WorkId, &'a Active)>,
    ) -> StateView {
        StateView {
            active: active.len(),
            completed: 0,
            digest: journal::state_digest(active, std::iter::empty()),
        }
    }
}

/// Replays what a reader holds and compares it with the planned state.
pub fn check_replay(src: impl Read + Send, planned: &StateView) -> Result<(), String> {
    // Sized for the planned state up front: growing the completed set by
    // doubling would briefly hold two copies of it.
    let replay = Replay::with_capacity(planned.active, planned.completed);
    let scan = journal::scan_into(src, replay, &mut ())
        .map_err(|e| format!("re-read failed: {}", crate::operations::words::in_words(&e)))?;
    let got = StateView::of(&scan.replay);
    if &got == planned {
        Ok(())
    } else {
        Err(format!(
            "planned {} active, {} completed, digest {}; found {} active, {} completed, digest {}",
            planned.active,
            planned.completed,
            &planned.digest[..16],
            got.active,
            got.completed,
            &got.digest[..16]
        ))
    }
}

/// How a run writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Print the plan only.
    DryRun,
    /// Print the plan; exit 1 if it would change anything (`--check`).
    Check,
    /// Change files in place.
    Apply,
    /// Write the result to `--output`.
    Output,
}

/// What happened to one file.
#[derive(Debug, Serialize)]
pub struct Outcome<P: Serialize> {
    /// The file.
    pub path: String,
    /// `journal` or `snapshot`.
    pub kind: Kind,
    /// The plan.
    pub plan: P,
    /// Whether anything was written.
    pub written: bool,
    /// The backup made, if any.
    pub backup: Option<String>,
    /// The `--output` file written, if any.
    pub output: Option<String>,
    /// Stale temporary files of this tool removed under the lock.
    pub removed_temp_files: Vec<String>,
    /// A remark ("nothing to do", …).
    pub note: Option<String>,
    /// Whether a change in place keeps a backup (no `--no-backup`).
    pub keeps_backup: bool,
    /// Records another process appended to the journal while it was being
    /// replaced (it ignores the master's lock), carried into the result.
    /// Absent when there were none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_appends_carried: Option<crate::operations::durable::Carried>,
}

/// The report of a writing subcommand.
#[derive(Debug, Serialize)]
pub struct Report<P: Serialize> {
    /// Contract version.
    pub schema_version: u32,
    /// `recover`, `migrate` or `compact`.
    pub command: &'static str,
    /// How it wrote.
    pub mode: Mode,
    /// Per file, in the order they were handled.
    pub files: Vec<Outcome<P>>,
}

/// What happens to the end of the file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum TailFix {
    /// Nothing: it ends with a terminator.
    None,
    /// A torn (or zero-filled) tail is cut off.
    Cut {
        /// Where the cut starts.
        offset: u64,
        /// Bytes removed.
        bytes: u64,
        /// Of those, NUL bytes.
        zero_bytes: u64,
    },
    /// A complete last record gets its missing newline.
    Terminate {
        /// Where the newline goes.
        offset: u64,
    },
}
