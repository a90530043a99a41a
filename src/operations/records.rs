//! `inspect --records --format ndjson`: every line of a journal as one JSON
//! object, in file order, exactly the lines upstream's reader splits (its
//! universal newlines): what the line is, the record on it, what replay
//! did with it (the effect `--history` describes, as a stable name) and
//! the codes of the findings `verify` gives it. For `jq`, DuckDB
//! (`read_json_auto`) or pandas.
//!
//! Streamed: the scan runs on a thread of its own and hands its lines over
//! in batches (a few in hand at a time) to the calling thread, which gives
//! them, as typed rows, to the face's [`RowSink`] to format and write
//! (`render::records` writes the NDJSON bytes). Memory is the replay state
//! and those batches, whatever the size of the file (and, with
//! `--end-state`, the end state's codes by line, one per active lease at
//! most).
//!
//! The hand-over is the one place where a thread of rayon's pool waits for
//! a thread outside it: the scan's observer, on a thread of the pool,
//! waits while every batch is in hand. The thread it waits for only runs
//! the sink, which formats and writes and never uses the pool, so the wait
//! always ends (`engine::journal::scan`'s rule is that nothing in the pool
//! waits for what waits for the pool).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crate::engine::journal::{
    self, ClockMarker, Effect, IgnoreReason, LineEvent, LineKind, Observer, Op, Positional, WorkId,
};
use crate::engine::json::PyInt;
use crate::operations::exit::Exit;
use crate::operations::findings::Settings;
use crate::operations::findings::catalog::Code;
use crate::operations::findings::journal::{self as checks, LineChecks};
use crate::store::error::InputError;
use crate::store::error::in_words;
use crate::store::format;
use crate::store::format::Kind;
use crate::store::lock::ProcLocks;
use crate::store::open;
use crate::store::progress::Progress;
use crate::store::read;

/// One line of a journal, as the stream gives it. Written with the
/// journal's path first; every field is always present (`null` when it
/// does not apply), so that every object has the same columns.
#[derive(Clone, Debug, Default)]
pub struct Row {
    /// 1-based line number, as upstream splits lines.
    pub line: u64,
    /// Byte offset of the line in the file.
    pub offset: u64,
    /// What the line is: `record`, `blank`, `corrupt`, `not-an-object`
    /// or `bad-id`.
    pub kind: &'static str,
    /// A record's op: `lease`, `done`, `reclaim`, or another value as
    /// upstream's `str()` shows it.
    pub op: Option<OpName>,
    /// A record's id.
    pub id: Option<WorkId>,
    /// The id of a complete record glued onto a torn fragment in a corrupt
    /// line (upstream ignores the line, and the record with it).
    pub hidden_id: Option<WorkId>,
    /// The worker: an accepted lease's, or the owner a `done` completed or
    /// a `reclaim` dropped.
    pub worker: Option<PyInt>,
    /// The owner a lease took over from without a reclaim.
    pub previous_worker: Option<PyInt>,
    /// A record's `time`, when it is a finite number.
    pub time: Option<f64>,
    /// A record's `clock` member: `unix`, `legacy`, `absent` or `other`.
    pub clock: Option<ClockMarker>,
    /// An accepted lease's attempts.
    pub attempts: Option<PyInt>,
    /// What replay did with a record ([`effect_name`]).
    pub effect: Option<&'static str>,
    /// Why upstream ignores the line, or why the record changed nothing.
    pub ignored: Option<IgnoreReason>,
    /// The codes of `verify`'s findings on this line, in the order found.
    pub findings: Vec<Code>,
}

/// A record's op ([`Op::name`]), kept beyond the line's life.
#[derive(Clone, Debug)]
pub enum OpName {
    /// `lease`, `done` or `reclaim`.
    Known(&'static str),
    /// Anything else.
    Other(String),
}

impl OpName {
    /// The name of `op`; only another op than upstream's three is copied.
    fn of(op: &Op) -> OpName {
        match op.known_name() {
            Some(name) => OpName::Known(name),
            None => OpName::Other(op.name().to_string()),
        }
    }
}

/// The stable name of a replay effect: the tag of [`Effect`]'s JSON.
pub fn effect_name(effect: &Effect) -> &'static str {
    match effect {
        Effect::Activated => "activated",
        Effect::Reactivated => "reactivated",
        Effect::TookOver { .. } => "took-over",
        Effect::Completed { .. } => "completed",
        Effect::DoneIgnored { .. } => "done-ignored",
        Effect::Reclaimed { .. } => "reclaimed",
        Effect::ReclaimIgnored => "reclaim-ignored",
        Effect::LeaseIgnored { .. } => "lease-ignored",
        Effect::UnknownOp { .. } => "unknown-op",
    }
}

impl Row {
    /// The row of a line as the scan saw it.
    fn of(event: &LineEvent<'_>, findings: Vec<Code>) -> Row {
        let mut row = Row {
            line: event.number,
            offset: event.offset,
            kind: "record",
            op: None,
            id: None,
            hidden_id: None,
            worker: None,
            previous_worker: None,
            time: None,
            clock: None,
            attempts: None,
            effect: event.effect.map(effect_name),
            ignored: IgnoreReason::of_line(event.classified, event.terminator),
            findings,
        };
        match &event.classified.kind {
            LineKind::Record(record) => {
                row.op = Some(OpName::of(&record.op));
                if let Op::Lease(Ok(lease)) = &record.op {
                    row.worker = Some(lease.worker.clone());
                    row.attempts = Some(lease.attempts.clone());
                }
                row.id = Some(record.id);
                row.time = record.time;
                row.clock = Some(record.marker);
                match event.effect {
                    Some(Effect::Completed { worker } | Effect::Reclaimed { worker, .. }) => {
                        row.worker = Some(worker.clone());
                    }
                    Some(Effect::TookOver { previous_worker }) => {
                        row.previous_worker = Some(previous_worker.clone());
                    }
                    _ => {}
                }
                if let Some(effect) = event.effect {
                    row.ignored = IgnoreReason::of_effect(effect, record);
                }
            }
            LineKind::Blank => row.kind = "blank",
            LineKind::Corrupt { glued, .. } => {
                row.kind = "corrupt";
                row.hidden_id = glued.as_ref().map(|(_, record)| record.id);
            }
            LineKind::NotAnObject => row.kind = "not-an-object",
            LineKind::BadId => row.kind = "bad-id",
        }
        row
    }
}

/// Where the rows go: the face, which turns them into bytes.
///
/// Called on the thread that called [`stream`], while the scan, on a
/// thread of rayon's pool, waits for its batches to be taken: an
/// implementation formats and writes, and must never use the pool.
pub trait RowSink {
    /// The rows of the journal at `path` (as shown) follow.
    fn journal(&mut self, path: &str);
    /// Writes a batch of rows, in file order. After an error no more
    /// batches of this journal are given.
    fn rows(&mut self, rows: &[Row]) -> io::Result<()>;
}

/// Lines handed over at a time.
const BATCH: usize = 8192;

/// Batches of rows handed over but not yet written, at most.
const IN_HAND: usize = 4;

/// The scan's side: each line's row, with its codes, handed over in
/// batches. The last row is always kept back, for the codes of the tail.
struct Rows<'s> {
    checks: LineChecks<'s>,
    /// The end state's codes by line, when they were asked for.
    end_state: BTreeMap<u64, Vec<Code>>,
    batch: Vec<Row>,
    hand_over: mpsc::SyncSender<Vec<Row>>,
}

impl Observer for Rows<'_> {
    fn line(&mut self, event: &LineEvent<'_>) {
        let mut codes = self.checks.line(event);
        codes.extend(self.end_state.remove(&event.number).unwrap_or_default());
        self.batch.push(Row::of(event, codes));
        if self.batch.len() > BATCH {
            let last = self.batch.pop();
            let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH + 1));
            self.batch.extend(last);
            // The writing side only goes away on an error, which it reports.
            let _ = self.hand_over.send(full);
        }
    }
}

/// Streams the rows of every journal `paths` name (a journal, `-`, or a
/// state directory's journals in resume order) to `sink`, in the order
/// given. A path that cannot be read is reported and the others are still
/// streamed; the exit status is then 2 ([`Exit::Trouble`]).
///
/// Each path is read as `kind`, or as detected. With `end_state`
/// (`--end-state`), each journal is first read for the findings of the
/// state at its end ([`checks::END_STATE`]), so that their lines carry them
/// too: two reads instead of one.
pub fn stream(
    paths: &[PathBuf],
    kind: Option<Kind>,
    end_state: bool,
    settings: &Settings,
    progress: &dyn Progress,
    sink: &mut dyn RowSink,
    tell: &dyn Fn(&InputError),
) -> io::Result<Exit> {
    let proc_locks = ProcLocks::default();
    let mut exit = Exit::Success;
    for path in paths {
        let result = read::journals(path, kind, &proc_locks, "--records")
            .and_then(|journals| {
                let ends = if end_state {
                    checks::end_state_codes(&journals, settings, progress)?
                } else {
                    vec![BTreeMap::new(); journals.len()]
                };
                Ok(journals.into_iter().zip(ends))
            })
            .map_err(Failure::Input)
            .and_then(|mut journals| {
                journals.try_for_each(|((path, file), end)| {
                    stream_file(&path, file, settings, progress, sink, end)
                })
            });
        match result {
            Ok(()) => {}
            Err(Failure::Input(e)) => {
                tell(&e);
                exit = Exit::Trouble;
            }
            Err(Failure::Output(e)) => return Err(e),
        }
    }
    Ok(exit)
}

/// Why a journal's stream stopped.
enum Failure {
    /// The journal could not be read: the next path is still streamed.
    Input(InputError),
    /// Standard output could not be written: the run ends.
    Output(io::Error),
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Failure::Input(e)
    }
}

/// Streams one journal's rows.
fn stream_file(
    path: &Path,
    file: std::fs::File,
    settings: &Settings,
    progress: &dyn Progress,
    sink: &mut dyn RowSink,
    end_state: BTreeMap<u64, Vec<Code>>,
) -> Result<(), Failure> {
    let shown = path.display().to_string();
    let deferred = path.file_name().is_some_and(|n| n == format::DEFERRED);
    let len = open::size(path, &file)?;
    let meter = progress.meter(path, len);
    let (hand_over, taken) = mpsc::sync_channel::<Vec<Row>>(IN_HAND);
    let (scanned, written) = std::thread::scope(|scope| {
        let meter = &meter;
        let file = &file;
        let shown = shown.as_str();
        let scanning = scope.spawn(move || {
            let advance = |n| meter.advance(n);
            let mut rows = Rows {
                checks: LineChecks::new(settings, shown, deferred),
                end_state,
                batch: Vec::with_capacity(BATCH + 1),
                hand_over,
            };
            let src = Positional::file(file, len).with_progress(&advance);
            let scan = journal::scan(src, &mut rows)?;
            let Rows {
                checks,
                mut batch,
                hand_over,
                ..
            } = rows;
            if let Some(last) = batch.last_mut() {
                last.findings.extend(checks.tail(&scan.summary));
            }
            let _ = hand_over.send(batch);
            Ok::<_, io::Error>(())
        });
        sink.journal(shown);
        let mut written = Ok(());
        for batch in taken {
            if written.is_err() {
                // Keep taking, so that the scan is never left waiting.
                continue;
            }
            written = sink.rows(&batch);
        }
        let scanned = scanning
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (scanned, written)
    });
    meter.finish();
    written.map_err(Failure::Output)?;
    scanned.map_err(|e| {
        Failure::Input(InputError::new(
            path,
            format!("read error: {}", in_words(&e)),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are the tags of the effect's own JSON.
    #[test]
    fn effect_names_are_the_json_tags() {
        let worker = PyInt::Small(3);
        for effect in [
            Effect::Activated,
            Effect::Reactivated,
            Effect::TookOver {
                previous_worker: worker.clone(),
            },
            Effect::Completed {
                worker: worker.clone(),
            },
            Effect::DoneIgnored {
                already_completed: true,
            },
            Effect::Reclaimed {
                worker,
                lease_time: 0.0,
            },
            Effect::ReclaimIgnored,
            Effect::LeaseIgnored { reason: "x".into() },
            Effect::UnknownOp { op: "x".into() },
        ] {
            let json = serde_json::to_value(&effect).unwrap();
            assert_eq!(json["effect"], effect_name(&effect), "{effect:?}");
        }
    }
}
