//! `inspect --timeline`: the campaign over time. Completions per time
//! bucket, in all and per worker rank, with the buckets where reclaims
//! happened, where the legacy clock gave way to the unix one, and the one
//! holding the journal's last record (where it stopped). Read-only; one
//! read of each journal.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::engine::journal::{self, ClockMarker, Effect, LineEvent, LineKind, Observer};
use crate::engine::json::PyInt;
use crate::operations::schema;
use crate::store::error::InputError;
use crate::store::format::Kind;
use crate::store::progress::Progress;
use crate::store::read;

/// Bucket widths, in seconds: the first that fits the range in the
/// buckets there is room for.
const WIDTHS: [f64; 24] = [
    1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
    10800.0, 21600.0, 43200.0, 86400.0, 172800.0, 604800.0, 1209600.0, 2592000.0, 7776000.0,
    31536000.0,
];

/// What the timeline covers and how finely.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Only records at or after this Unix time.
    pub since: Option<f64>,
    /// Only records at or before this Unix time.
    pub until: Option<f64>,
    /// At most this many buckets.
    pub buckets: usize,
}

/// One rank's completions per bucket.
#[derive(Clone, Debug, Serialize)]
pub struct RankLine {
    /// The rank.
    pub worker: PyInt,
    /// Completions of its leases, per bucket.
    pub completions: Vec<u64>,
}

/// The timeline of one journal.
#[derive(Clone, Debug, Serialize)]
pub struct JournalTimeline {
    /// The journal.
    pub path: String,
    /// The start of the first bucket (Unix seconds); `null` when the
    /// journal has no unix-clock record in the window.
    pub start: Option<f64>,
    /// The width of a bucket, in seconds.
    pub bucket_seconds: f64,
    /// Completions per bucket, all ranks.
    pub completions: Vec<u64>,
    /// Reclaims per bucket.
    pub reclaims: Vec<u64>,
    /// Per rank, by rank.
    pub workers: Vec<RankLine>,
    /// The time of the first unix-clock record after the last legacy one,
    /// when the journal has both: where the legacy clock ends.
    pub legacy_end: Option<f64>,
    /// The time of the journal's last unix-clock record: where it stops.
    pub last_record: Option<f64>,
}

/// The `inspect --timeline --format json` document.
#[derive(Clone, Debug, Serialize)]
pub struct TimelineReport {
    /// Contract version.
    pub schema_version: u32,
    /// `timeline`.
    pub kind: &'static str,
    /// One per journal, in the order given.
    pub files: Vec<JournalTimeline>,
}

/// What the scan keeps: each completion's time and rank, each reclaim's
/// time, and the clock changes.
#[derive(Default)]
struct Events {
    completions: Vec<(f64, u32)>,
    ranks: Vec<PyInt>,
    rank_of: BTreeMap<PyInt, u32>,
    reclaims: Vec<f64>,
    legacy_seen: bool,
    legacy_end: Option<f64>,
    last: Option<f64>,
}

impl Observer for Events {
    fn line(&mut self, event: &LineEvent<'_>) {
        let (LineKind::Record(record), Some(effect)) = (&event.classified.kind, event.effect)
        else {
            return;
        };
        let time = match (record.marker, record.time) {
            (ClockMarker::Unix, Some(t)) => t,
            (ClockMarker::Absent | ClockMarker::Legacy, _) => {
                // A lease without a unix clock: any unix record after it
                // marks where the legacy clock ended.
                if matches!(record.op, journal::Op::Lease(_)) {
                    self.legacy_seen = true;
                    self.legacy_end = None;
                }
                return;
            }
            _ => return,
        };
        if self.legacy_seen && self.legacy_end.is_none() {
            self.legacy_end = Some(time);
        }
        self.last = Some(time);
        match effect {
            Effect::Completed { worker } => {
                let next = self.ranks.len() as u32;
                let rank = *self.rank_of.entry(worker.clone()).or_insert(next);
                if rank == next {
                    self.ranks.push(worker.clone());
                }
                self.completions.push((time, rank));
            }
            Effect::Reclaimed { .. } => self.reclaims.push(time),
            _ => {}
        }
    }
}

/// The timeline of one journal.
fn journal_timeline(
    path: &std::path::Path,
    file: &std::fs::File,
    window: Window,
    progress: &dyn Progress,
) -> Result<JournalTimeline, InputError> {
    let mut events = Events::default();
    let scan = read::scan_journal(path, file, progress, &mut events)?;
    let inside =
        |t: f64| window.since.is_none_or(|s| t >= s) && window.until.is_none_or(|u| t <= u);
    // The range: the window where given, else the records'.
    let range = scan
        .summary
        .unix_time_range
        .map(|(first, last)| (window.since.unwrap_or(first), window.until.unwrap_or(last)));
    let buckets = window.buckets.max(1);
    let (start, width, n) = match range {
        Some((from, to)) if to >= from => {
            let span = to - from;
            let width = WIDTHS
                .iter()
                .copied()
                .find(|w| span / w < buckets as f64)
                .unwrap_or(span / (buckets as f64 - 1.0).max(1.0));
            let start = (from / width).floor() * width;
            let n = (((to - start) / width).floor() as usize + 1).min(buckets);
            (Some(start), width, n)
        }
        _ => (None, 1.0, 0),
    };
    let bucket = |t: f64| {
        start
            .filter(|_| inside(t))
            .map(|s| (((t - s) / width).floor() as usize).min(n.saturating_sub(1)))
            .filter(|_| n > 0)
    };
    let mut completions = vec![0; n];
    let mut per_rank = vec![vec![0; n]; events.ranks.len()];
    for &(t, rank) in &events.completions {
        if let Some(b) = bucket(t) {
            completions[b] += 1;
            per_rank[rank as usize][b] += 1;
        }
    }
    let mut reclaims = vec![0; n];
    for &t in &events.reclaims {
        if let Some(b) = bucket(t) {
            reclaims[b] += 1;
        }
    }
    let mut workers: Vec<RankLine> = events
        .ranks
        .into_iter()
        .zip(per_rank)
        .map(|(worker, completions)| RankLine {
            worker,
            completions,
        })
        .collect();
    workers.sort_by(|a, b| a.worker.cmp(&b.worker));
    Ok(JournalTimeline {
        path: path.display().to_string(),
        start,
        bucket_seconds: width,
        completions,
        reclaims,
        workers,
        legacy_end: events.legacy_end,
        last_record: events.last,
    })
}

/// `inspect --timeline` of `paths`, in the order given: the report, and
/// the paths that could not be read.
pub fn timeline(
    paths: &[PathBuf],
    kind: Option<Kind>,
    window: Window,
    progress: &dyn Progress,
) -> (TimelineReport, Vec<InputError>) {
    let (files, errors) = read::each_journal(paths, kind, "--timeline", |path, file| {
        journal_timeline(path, file, window, progress)
    });
    let report = TimelineReport {
        schema_version: schema::INSPECT,
        kind: "timeline",
        files,
    };
    (report, errors)
}
