//! `inspect` as data: what a journal, a snapshot or a state directory says,
//! built from one read of each file. Pure apart from the reader it is given;
//! the caller passes `now`. These structs are the JSON contract of
//! `leasejournal inspect --format json` (schema_version [`schema::INSPECT`]).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::engine::journal::{
    self, Clock, ClockMarker, Completed, LineEvent, LineKind, Observer, Op, Record, Summary, WorkId,
};
use crate::engine::json::{self, PyInt};
use crate::engine::snapshot::{self, RestoreChanges, TaskLease};
use crate::operations::ledger::{self, LedgerOptions, LedgerReport};
use crate::operations::schema;
use crate::operations::table::{self, TableReport, TableSettings};
use crate::store::error::in_words;
use crate::store::error::{InputError, PathError};
use crate::store::format;
use crate::store::format::Kind;
use crate::store::ledger as ledger_dir;
use crate::store::lock::LockState;
use crate::store::lock::ProcLocks;
use crate::store::open;
use crate::store::progress::Progress;
use crate::store::read;
use crate::store::resolve::Target;
use crate::store::resolve::{self, Purpose};
use crate::store::statedir::{StateDir, TempFile};

/// Filters and extras for a journal inspection.
#[derive(Clone, Debug, Default)]
pub struct JournalOptions {
    /// Only active leases of this worker.
    pub worker: Option<u64>,
    /// Only active leases whose id starts with this (lowercase hex).
    pub id_prefix: Option<String>,
    /// Collect every record of the ids starting with this.
    pub history: Option<String>,
    /// List the completed ids (the JSON report does; the table only counts
    /// them, which saves a sorted copy of a possibly huge set).
    pub list_completed: bool,
    /// How the digest ledger is read, and what is asked of it.
    pub ledger: LedgerOptions,
    /// How fenced lease tables are read.
    pub table: TableSettings,
}

/// One active lease, as shown.
#[derive(Clone, Debug, Serialize)]
pub struct ActiveLease {
    /// Work id.
    pub id: WorkId,
    /// Owner rank.
    pub worker: PyInt,
    /// Lease time (Unix seconds for the unix clock).
    pub time: f64,
    /// Attempts counter.
    pub attempts: PyInt,
    /// Clock domain.
    pub clock: Clock,
    /// Line of the lease record in force.
    pub line: u64,
    /// Byte offset of that line.
    pub offset: u64,
    /// `now - time` for a unix-clock lease.
    pub age_seconds: Option<f64>,
    /// The payload's `path`, when it is a string.
    pub path: Option<String>,
}

/// First and last unix-clock record times.
#[derive(Clone, Debug, Serialize)]
pub struct TimeRange {
    /// Earliest time.
    pub first: f64,
    /// Latest time.
    pub last: f64,
}

/// One record in `--history`.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryEntry {
    /// Work id.
    pub id: WorkId,
    /// 1-based line.
    pub line: u64,
    /// Byte offset of the line.
    pub offset: u64,
    /// `lease`, `done`, `reclaim` or the unknown op.
    pub op: String,
    /// The record's time, when it has a finite one.
    pub time: Option<f64>,
    /// The record's `clock` member: a time is Unix seconds only under
    /// `unix`.
    pub clock: ClockMarker,
    /// The worker of an accepted lease.
    pub worker: Option<PyInt>,
    /// What replay did, in words.
    pub effect: String,
}

/// Filters applied to `active`.
#[derive(Clone, Debug, Serialize)]
pub struct Filter {
    /// `--worker`
    pub worker: Option<u64>,
    /// `--id`
    pub id: Option<String>,
}

/// `inspect` of one journal.
#[derive(Clone, Debug, Serialize)]
pub struct JournalReport {
    /// Contract version.
    pub schema_version: u32,
    /// Always `"journal"`.
    pub kind: &'static str,
    /// The path as given.
    pub path: String,
    /// Totals of the read.
    #[serde(flatten)]
    pub summary: Summary,
    /// Upstream's event counter after loading.
    pub events: u64,
    /// Unix-clock record times.
    pub time_range: Option<TimeRange>,
    /// Active leases before filtering.
    pub active_count: usize,
    /// Completed ids.
    pub completed_count: usize,
    /// Applied filters, if any.
    pub filter: Option<Filter>,
    /// The active leases upstream's loader reaches, sorted by id.
    pub active: Vec<ActiveLease>,
    /// Completed ids, sorted (empty in table output, which only counts them).
    pub completed: CompletedList,
    /// `--history` records, when asked.
    pub history: Option<Vec<HistoryEntry>>,
}

/// How the snapshot parsed.
#[derive(Clone, Debug, Serialize)]
pub struct SnapshotParse {
    /// Whether `json.load` succeeds.
    pub ok: bool,
    /// The parse error, when it does not.
    pub error: Option<String>,
    /// Whether the top level is an object.
    pub is_object: bool,
    /// Repeated member names (the last wins).
    pub duplicate_members: u64,
    /// `NaN`/`Infinity` constants.
    pub nonfinite_constants: u64,
    /// Invalid UTF-8 bytes deleted before parsing.
    pub invalid_utf8_bytes: usize,
}

/// `inspect` of one snapshot.
#[derive(Clone, Debug, Serialize)]
pub struct SnapshotReport {
    /// Contract version.
    pub schema_version: u32,
    /// Always `"snapshot"`.
    pub kind: &'static str,
    /// The path as given.
    pub path: String,
    /// File size.
    pub bytes: u64,
    /// How it parsed.
    pub parse: SnapshotParse,
    /// `"unix"` when the file carries `"clock":"unix"`, else `"legacy"`.
    pub clock: Clock,
    /// Restored stats entries.
    pub tasks: usize,
    /// Totals over them.
    pub totals: Option<snapshot::Totals>,
    /// Restored state leases (all stale after restore).
    pub leases: Vec<TaskLease>,
    /// What restore changes.
    pub changes: RestoreChanges,
    /// Exactly what upstream's restore + `to_mapping()` yields; non-finite
    /// numbers appear as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
    /// `null` when upstream would start empty (unparseable or not an object).
    pub restored: Option<Box<RawValue>>,
}

/// One file of a directory.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum FileReport {
    /// A journal.
    Journal(Box<JournalReport>),
    /// A snapshot.
    Snapshot(Box<SnapshotReport>),
}

/// `inspect` of a state directory.
#[derive(Clone, Debug, Serialize)]
pub struct DirectoryReport {
    /// Contract version.
    pub schema_version: u32,
    /// Always `"directory"`.
    pub kind: &'static str,
    /// The path as given.
    pub path: String,
    /// The files present, in resume order.
    pub files: Vec<FileReport>,
    /// Known files absent.
    pub missing: Vec<String>,
    /// Leftover `*.tmp` files.
    pub stale_temp_files: Vec<TempFile>,
    /// The master lock, read from `/proc/locks`.
    pub master_lock: LockState,
    /// The digest ledger, `.state_shards/`; `null` when there is none.
    pub ledger: Option<Box<LedgerReport>>,
    /// The fenced lease tables at upstream's default roots
    /// (`.work_lease_table/`, `.target_lease_table/`), when present.
    pub tables: Vec<TableReport>,
}

/// `inspect` of a ledger directory or a single ledger file.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerInspection {
    /// Contract version.
    pub schema_version: u32,
    /// Always `"ledger"`.
    pub kind: &'static str,
    /// The path as given.
    pub path: String,
    /// The ledger.
    pub ledger: LedgerReport,
}

/// Collects `--history` while the journal streams by.
struct History {
    prefix: String,
    entries: Vec<HistoryEntry>,
}

impl History {
    /// Keeps a record of the id asked for; `effect` is only described for
    /// those.
    fn push(&mut self, record: &Record, line: u64, offset: u64, effect: impl FnOnce() -> String) {
        if !record.id.has_prefix(&self.prefix) {
            return;
        }
        let (op, worker) = match &record.op {
            Op::Lease(Ok(l)) => ("lease".to_string(), Some(l.worker.clone())),
            Op::Lease(Err(_)) => ("lease".to_string(), None),
            Op::Done => ("done".to_string(), None),
            Op::Reclaim => ("reclaim".to_string(), None),
            Op::Unknown(op) => (op.clone(), None),
        };
        self.entries.push(HistoryEntry {
            id: record.id,
            line,
            offset,
            op,
            time: record.time,
            clock: record.marker,
            worker,
            effect: effect(),
        });
    }
}

impl Observer for History {
    fn line(&mut self, event: &LineEvent<'_>) {
        match (&event.classified.kind, event.effect) {
            (LineKind::Record(record), Some(effect)) => {
                self.push(record, event.number, event.offset, || effect.describe());
            }
            (
                LineKind::Corrupt {
                    glued: Some((at, record)),
                    ..
                },
                _,
            ) => {
                let effect =
                    || "lost: glued onto a torn fragment, upstream ignores the line".into();
                self.push(record, event.number, event.offset + *at as u64, effect);
            }
            _ => {}
        }
    }
}

/// What `inspect` reports: one file, or a state directory.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum PathReport {
    /// A journal or a snapshot.
    File(FileReport),
    /// A state directory and each of its files.
    Directory(DirectoryReport),
    /// A digest ledger (`.state_shards/`, or one `processed.NNN.log`).
    Ledger(Box<LedgerInspection>),
    /// A fenced lease table's root.
    Table(Box<TableInspection>),
}

/// `inspect` of a fenced lease table's root.
#[derive(Debug, Serialize)]
pub struct TableInspection {
    /// Contract version.
    pub schema_version: u32,
    /// The table.
    #[serde(flatten)]
    pub table: TableReport,
}

/// What `inspect` of several paths reports: each path's inspection, in
/// the order given, and the paths that could not be read.
#[derive(Debug, Serialize)]
pub struct ManyPathsReport {
    /// Contract version.
    pub schema_version: u32,
    /// `inspections`.
    pub kind: &'static str,
    /// One per path that was read, in the order given.
    pub inspections: Vec<PathReport>,
    /// The paths that could not be read, in the order given.
    pub errors: Vec<PathError>,
}

/// What `inspect` reports: one path's inspection, or several paths'.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum InspectReport {
    /// One path: its inspection.
    One(PathReport),
    /// Several paths.
    Many(ManyPathsReport),
}

/// Inspects every path of `paths`, several at once, and
/// returns the report with the errors of the paths that could not be read
/// (already in the report of several paths). One path that cannot be read
/// is the error.
pub fn inspect(
    paths: &[PathBuf],
    kind: Option<Kind>,
    options: &JournalOptions,
    now: f64,
    progress: &dyn Progress,
) -> Result<(InspectReport, Vec<InputError>), InputError> {
    // Read once for every path: who holds which lock.
    let proc_locks = ProcLocks::default();
    let mut results = read::each_path(paths, |path| {
        path_report(path, kind, options, now, progress, &proc_locks)
    });
    if results.len() == 1
        && let Some(result) = results.pop()
    {
        return Ok((InspectReport::One(result?), Vec::new()));
    }
    let mut inspections = Vec::new();
    let (mut errors, mut shown) = (Vec::new(), Vec::new());
    for (path, result) in paths.iter().zip(results) {
        match result {
            Ok(inspection) => inspections.push(inspection),
            Err(error) => {
                shown.push(PathError {
                    path: path.display().to_string(),
                    // A file of a directory names itself.
                    message: if error.path == *path {
                        error.problem.to_string()
                    } else {
                        error.to_string()
                    },
                });
                errors.push(error);
            }
        }
    }
    let report = ManyPathsReport {
        schema_version: schema::INSPECT,
        kind: "inspections",
        inspections,
        errors: shown,
    };
    Ok((InspectReport::Many(report), errors))
}

/// Inspects PATH: a journal, a snapshot, or a state directory (`-` is
/// standard input), read once, read-only; who holds which lock is read
/// (once for a run) through `proc_locks`.
fn path_report(
    path: &Path,
    kind: Option<Kind>,
    options: &JournalOptions,
    now: f64,
    progress: &dyn Progress,
    proc_locks: &ProcLocks,
) -> Result<PathReport, InputError> {
    if kind.is_none() && table::is_table_root(path) {
        let options = options.table.options(
            now,
            crate::operations::findings::DEFAULT_SKEW,
            options.history.clone(),
        );
        return Ok(PathReport::Table(Box::new(TableInspection {
            schema_version: schema::INSPECT,
            table: table::read(path, &options)?,
        })));
    }
    if kind.is_none() {
        let found = if ledger_dir::is_ledger_dir(path) {
            Some(ledger_dir::examine(path)?)
        } else {
            ledger_dir::single(path)?
        };
        if let Some(dir) = found {
            return Ok(PathReport::Ledger(Box::new(LedgerInspection {
                schema_version: schema::INSPECT,
                kind: "ledger",
                path: path.display().to_string(),
                ledger: ledger::read(&dir, &options.ledger)?,
            })));
        }
    }
    match resolve::resolve(path, kind, Purpose::Read(proc_locks))? {
        Target::File {
            path,
            kind,
            prefix,
            file,
        } => file_report(&path, kind, prefix, file, options, now, progress).map(PathReport::File),
        Target::Directory(dir) => {
            let files = directory_report(&dir, options, now, progress)?;
            let missing = format::state_files()
                .map(|(name, _)| name)
                .filter(|name| !dir.files.iter().any(|(p, _)| p.ends_with(name)))
                .map(str::to_string)
                .collect();
            Ok(PathReport::Directory(DirectoryReport {
                schema_version: schema::INSPECT,
                kind: "directory",
                path: path.display().to_string(),
                files,
                missing,
                ledger: dir
                    .ledger
                    .as_ref()
                    .map(|l| ledger::read(l, &options.ledger).map(Box::new))
                    .transpose()?,
                stale_temp_files: dir.temp_files,
                master_lock: dir.master_lock,
                tables: table::tables_in(&dir.path)
                    .iter()
                    .map(|root| {
                        let options = options.table.options(
                            now,
                            crate::operations::findings::DEFAULT_SKEW,
                            options.history.clone(),
                        );
                        table::read(root, &options)
                    })
                    .collect::<Result<_, _>>()?,
            }))
        }
    }
}

/// Inspects one opened file.
fn file_report(
    path: &Path,
    kind: Kind,
    prefix: Vec<u8>,
    mut file: File,
    options: &JournalOptions,
    now: f64,
    progress: &dyn Progress,
) -> Result<FileReport, InputError> {
    let shown = path.display().to_string();
    match kind {
        Kind::Journal => {
            let report = read::read_journal(path, &file, progress, |src| {
                journal(src, &shown, options, now)
            })?;
            Ok(FileReport::Journal(Box::new(report)))
        }
        Kind::Snapshot => {
            let mut bytes = prefix;
            file.read_to_end(&mut bytes)
                .map_err(|e| InputError::new(path, format!("read error: {}", in_words(&e))))?;
            Ok(FileReport::Snapshot(Box::new(snapshot(&bytes, &shown))))
        }
    }
}

/// Inspects every known file of a state directory, in resume order.
fn directory_report(
    dir: &StateDir,
    options: &JournalOptions,
    now: f64,
    progress: &dyn Progress,
) -> Result<Vec<FileReport>, InputError> {
    dir.files
        .iter()
        .map(|(path, kind)| {
            let (file, _) = open::open_regular(path)?;
            file_report(path, *kind, Vec::new(), file, options, now, progress)
        })
        .collect()
}

/// The payload's `path` member, when it is a string.
fn payload_path(payload: &[u8]) -> Option<String> {
    journal::payload_facts(payload).0
}

/// The completed ids of a report, listed in order as they are serialised,
/// without a sorted copy of the whole set; `None` lists nothing.
#[derive(Clone, Debug)]
pub struct CompletedList(pub Option<Completed>);

impl Serialize for CompletedList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Some(completed) => s.collect_seq(completed.sorted()),
            None => s.collect_seq(std::iter::empty::<WorkId>()),
        }
    }
}

/// Inspects a journal read from `src`.
pub fn journal(
    src: impl journal::Source,
    path: &str,
    options: &JournalOptions,
    now: f64,
) -> io::Result<JournalReport> {
    let mut history = History {
        prefix: options
            .history
            .clone()
            .unwrap_or_default()
            .to_ascii_lowercase(),
        entries: Vec::new(),
    };
    let observer: &mut (dyn Observer + Send) = if options.history.is_some() {
        &mut history
    } else {
        &mut ()
    };
    let scan = journal::scan(src, observer)?;
    let replay = scan.replay;
    let id_prefix = options.id_prefix.as_deref().map(str::to_ascii_lowercase);
    // Each lease's path is read from its payload; tens of thousands of
    // leases are read on every core.
    let active: Vec<ActiveLease> = replay
        .active_sorted()
        .into_par_iter()
        .filter(|(id, a)| {
            options.worker.is_none_or(|w| a.worker.to_u64() == Some(w))
                && id_prefix.as_deref().is_none_or(|p| id.has_prefix(p))
        })
        .map(|(id, a)| ActiveLease {
            id: *id,
            worker: a.worker.clone(),
            time: a.time,
            attempts: a.attempts.clone(),
            clock: a.clock,
            line: a.line,
            offset: a.offset,
            age_seconds: (a.clock == Clock::Unix).then_some(now - a.time),
            path: payload_path(&a.payload),
        })
        .collect();
    let filter = (options.worker.is_some() || options.id_prefix.is_some()).then(|| Filter {
        worker: options.worker,
        id: options.id_prefix.clone(),
    });
    Ok(JournalReport {
        schema_version: schema::INSPECT,
        kind: "journal",
        path: path.to_string(),
        events: replay.events,
        time_range: scan
            .summary
            .unix_time_range
            .map(|(first, last)| TimeRange { first, last }),
        active_count: replay.active.len(),
        completed_count: replay.completed.len(),
        filter,
        active,
        completed: CompletedList(options.list_completed.then_some(replay.completed)),
        history: options.history.is_some().then_some(history.entries),
        summary: scan.summary,
    })
}

/// Inspects a snapshot's bytes.
pub fn snapshot(bytes: &[u8], path: &str) -> SnapshotReport {
    let snap = snapshot::read(bytes);
    let (ok, error, stats) = match &snap.parse {
        Ok(stats) => (true, None, stats.clone()),
        Err(e) => (false, Some(e.to_string()), json::ParseStats::default()),
    };
    let totals = snap.restored.as_ref().map(|r| r.totals());
    let restored = snap
        .restored
        .as_ref()
        .and_then(|r| RawValue::from_string(r.to_report_json()).ok());
    SnapshotReport {
        schema_version: schema::INSPECT,
        kind: "snapshot",
        path: path.to_string(),
        bytes: bytes.len() as u64,
        parse: SnapshotParse {
            ok,
            error,
            is_object: snap.is_object,
            duplicate_members: stats.duplicate_members,
            nonfinite_constants: stats.nonfinite_constants,
            invalid_utf8_bytes: snap.invalid_utf8,
        },
        clock: if snap.unix_clock {
            Clock::Unix
        } else {
            Clock::Legacy
        },
        tasks: snap.restored.as_ref().map_or(0, |r| r.stats.len()),
        totals,
        leases: snap
            .restored
            .as_ref()
            .map(|r| r.leases.clone())
            .unwrap_or_default(),
        changes: snap.changes,
        restored,
    }
}
