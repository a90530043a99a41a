//! What the write commands share: their report, the selection and order of
//! leases to reclaim, and the refusal to compact away hidden records.

use std::path::Path;

use serde::Serialize;

use crate::engine::journal::{self, Active, Clock, Replay, WorkId};
use crate::engine::json::{self, PyInt, Value};
use crate::operations::numbers::plural;
use crate::operations::schema;
use crate::store::durable::Change;
use crate::store::path::shell_quote;
use crate::store::session::{Mode, Outcome, Run};

/// A lease to reclaim, as a plan lists it.
#[derive(Clone, Debug, Serialize)]
pub struct Reclaim {
    /// Work id.
    pub id: WorkId,
    /// Owner rank.
    pub worker: PyInt,
    /// Clock domain.
    pub clock: Clock,
    /// Lease time.
    pub time: f64,
    /// `now - time` for a unix lease.
    pub age_seconds: Option<f64>,
    /// Attempts counter.
    pub attempts: PyInt,
    /// Line of the lease in force.
    pub line: u64,
    /// The payload's `path`, when it is a string.
    pub path: Option<String>,
    /// Whether the payload carries a non-null `continuation`.
    pub continuation: bool,
}

/// Upstream's `recover_expired` selection and order: the leases `expired`
/// accepts, sorted by `(attempts, time, id)`, at most `limit` (0: all).
pub fn reclaims(
    replay: &Replay,
    now: f64,
    limit: usize,
    expired: impl Fn(&WorkId, &Active) -> bool,
) -> Vec<Reclaim> {
    let mut chosen: Vec<(&WorkId, &Active)> = replay
        .active
        .iter()
        .filter(|(id, a)| expired(id, a))
        .collect();
    // Python compares the times as numbers: -0.0 and 0.0 tie and the id
    // decides (times are finite, so partial_cmp always answers).
    chosen.sort_by(|(ia, a), (ib, b)| {
        a.attempts
            .cmp(&b.attempts)
            .then(
                a.time
                    .partial_cmp(&b.time)
                    .unwrap_or(std::cmp::Ordering::Equal),
            )
            .then(ia.cmp(ib))
    });
    if limit > 0 {
        chosen.truncate(limit);
    }
    chosen
        .into_iter()
        .map(|(id, a)| {
            let (path, continuation) = payload_facts(&a.payload);
            Reclaim {
                id: *id,
                worker: a.worker.clone(),
                clock: a.clock,
                time: a.time,
                age_seconds: (a.clock == Clock::Unix).then_some(now - a.time),
                attempts: a.attempts.clone(),
                line: a.line,
                path,
                continuation,
            }
        })
        .collect()
}

/// The payload's `path` and whether it has a non-null `continuation`.
pub fn payload_facts(payload: &[u8]) -> (Option<String>, bool) {
    // A canonical payload (what the replay keeps) is read without building
    // its values; anything else is parsed.
    if let Some([path, continuation]) =
        journal::payload_members(payload, [b"path", b"continuation"])
    {
        return (
            path.and_then(json_string),
            continuation.is_some_and(|raw| raw != b"null"),
        );
    }
    let Some(obj) = std::str::from_utf8(payload)
        .ok()
        .and_then(|t| json::parse(t, json::Mode::Journal).ok())
        .and_then(|p| match p.value {
            Value::Object(o) => Some(o),
            _ => None,
        })
    else {
        return (None, false);
    };
    let path = match obj.get("path") {
        Some(Value::Str(s)) => Some(s.to_string_lossy()),
        _ => None,
    };
    let continuation = matches!(obj.get("continuation"), Some(v) if *v != Value::Null);
    (path, continuation)
}

/// The text of a JSON string value given as its raw bytes; `None` for any
/// other value.
fn json_string(raw: &[u8]) -> Option<String> {
    match raw {
        [b'"', inner @ .., b'"'] if !inner.contains(&b'\\') => {
            Some(String::from_utf8_lossy(inner).into_owned())
        }
        _ => match json::parse(std::str::from_utf8(raw).ok()?, json::Mode::Journal)
            .ok()?
            .value
        {
            Value::Str(s) => Some(s.to_string_lossy()),
            _ => None,
        },
    }
}

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
}

impl Command {
    /// The version of its report's contract.
    pub fn schema_version(self) -> u32 {
        match self {
            Command::Repair => schema::REPAIR,
            Command::Recover => schema::RECOVER,
            Command::Migrate => schema::MIGRATE,
            Command::Compact => schema::COMPACT,
        }
    }
}

/// The report of a writing subcommand.
#[derive(Debug, Serialize)]
pub struct Report<P: Serialize> {
    /// Contract version.
    pub schema_version: u32,
    /// The command.
    pub command: Command,
    /// How it wrote.
    pub mode: Mode,
    /// Per file, in the order they were handled.
    pub files: Vec<Outcome<P>>,
    /// The changes the run made, in order: not part of the JSON (each
    /// file's outcome says what was written); the face needs them when
    /// printing the report fails.
    #[serde(skip)]
    pub changes: Vec<Change>,
}

impl<P: Serialize> Report<P> {
    /// The report of `command`'s run.
    pub fn of(command: Command, run: Run<P>) -> Report<P> {
        Report {
            schema_version: command.schema_version(),
            command,
            mode: run.mode,
            files: run.files,
            changes: run.changes,
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
            plural(hidden_records as u64, "record is", "records are"),
            shell_quote(&path.display().to_string())
        );
    }
    Ok(())
}
