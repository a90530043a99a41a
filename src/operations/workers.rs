//! `inspect --workers`: who was doing what. One row per worker rank of a
//! journal, from its replay: leases taken, completed, reclaimed (and by
//! what, as far as the records tell), active at the end, the oldest active
//! lease's age, how long its leases took to complete, its last activity,
//! and whether it went quiet long before the others (a stuck or dead rank).
//! Read-only; one read of each journal.

use std::collections::BTreeMap;
use std::path::PathBuf;

use foldhash::HashMap;
use serde::Serialize;

use crate::engine::journal::{
    Clock, ClockMarker, Effect, LineEvent, LineKind, Observer, Op, WorkId,
};
use crate::engine::json::PyInt;
use crate::operations::schema;
use crate::store::error::InputError;
use crate::store::format::Kind;
use crate::store::progress::Progress;
use crate::store::read;

/// A rank is stalled when its last activity is older than the newest of
/// the others' by more than this many times the journal's median lease
/// duration ...
pub const STALLED_DURATIONS: f64 = 10.0;

/// ... and by at least this many seconds.
pub const STALLED_MIN_SECONDS: f64 = 600.0;

/// Who reclaimed a rank's leases. Reclaim records do not say who wrote
/// them; this is read from their shape. Upstream's `recover_expired`
/// writes one sweep of reclaims sharing one time; at resume (TTL 0) the
/// sweep leaves no lease active. `abandon` writes one reclaim.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReclaimedBy {
    /// In a sweep after which no lease was active (resume's).
    pub resume: u64,
    /// In a sweep of two or more reclaims after which leases were still
    /// active (a TTL expiry while the master ran).
    pub ttl_expiry: u64,
    /// Alone, with leases still active after it (a rollback: `abandon`).
    pub abandon: u64,
}

/// One worker rank of a journal.
#[derive(Clone, Debug, Serialize)]
pub struct Worker {
    /// The rank.
    pub worker: PyInt,
    /// Leases it was given (accepted lease records).
    pub leases: u64,
    /// Of those, leases that replaced another rank's active lease without
    /// a reclaim (L1).
    pub took_over: u64,
    /// Its leases completed (`done` while it owned them).
    pub completed: u64,
    /// Its leases reclaimed.
    pub reclaimed: u64,
    /// Of those, by whom (inferred).
    pub reclaimed_by: ReclaimedBy,
    /// Its leases active at the end of the journal.
    pub active: u64,
    /// The age of its oldest active unix-clock lease, against `now`.
    pub oldest_active_age_seconds: Option<f64>,
    /// Median time from a lease to its `done` (unix clock on both).
    pub lease_seconds_median: Option<f64>,
    /// 95th percentile of the same.
    pub lease_seconds_p95: Option<f64>,
    /// The time of its last activity: a lease given to it or a `done` of
    /// one of its leases (unix clock).
    pub last_activity: Option<f64>,
    /// The line of that record.
    pub last_line: Option<u64>,
    /// Its last activity is older than the newest of the other ranks' by
    /// more than [`STALLED_DURATIONS`] median lease durations and at least
    /// [`STALLED_MIN_SECONDS`].
    pub stalled: bool,
}

/// `inspect --workers` of one journal.
#[derive(Clone, Debug, Serialize)]
pub struct JournalWorkers {
    /// The journal.
    pub path: String,
    /// The median lease duration over every rank, which `stalled` is
    /// judged by.
    pub lease_seconds_median: Option<f64>,
    /// The newest activity of any rank.
    pub last_activity: Option<f64>,
    /// One per rank, by rank.
    pub workers: Vec<Worker>,
}

/// The `inspect --workers --format json` document.
#[derive(Clone, Debug, Serialize)]
pub struct WorkersReport {
    /// Contract version.
    pub schema_version: u32,
    /// `workers`.
    pub kind: &'static str,
    /// The time ages are measured against.
    pub now: f64,
    /// One per journal, in the order given (a state directory's in resume
    /// order).
    pub files: Vec<JournalWorkers>,
}

/// What the scan counts of one rank.
#[derive(Debug, Default)]
struct Tally {
    leases: u64,
    took_over: u64,
    completed: u64,
    reclaimed_by: ReclaimedBy,
    durations: Vec<f32>,
    last_activity: Option<(f64, u64)>,
}

/// A sweep of reclaims being read: their time, and whose leases they
/// reclaimed.
#[derive(Debug, Default)]
struct Sweep {
    time: Option<f64>,
    owners: Vec<PyInt>,
}

/// The scan's side: the tallies, and the unix time of each active lease.
#[derive(Default)]
struct Tallies {
    ranks: BTreeMap<PyInt, Tally>,
    leased_at: HashMap<WorkId, f64>,
    sweep: Sweep,
}

impl Tallies {
    fn rank(&mut self, worker: &PyInt) -> &mut Tally {
        if !self.ranks.contains_key(worker) {
            self.ranks.insert(worker.clone(), Tally::default());
        }
        self.ranks.get_mut(worker).expect("inserted")
    }

    /// Ends the sweep being read: `active` leases are left after it.
    fn end_sweep(&mut self, active: usize) {
        let owners = std::mem::take(&mut self.sweep.owners);
        let n = owners.len();
        for owner in owners {
            let by = &mut self.rank(&owner).reclaimed_by;
            match (active, n) {
                (0, _) => by.resume += 1,
                (_, 1) => by.abandon += 1,
                _ => by.ttl_expiry += 1,
            }
        }
        self.sweep.time = None;
    }

    /// Leases active now: every lease activated and not yet ended, unix
    /// or not (the replay's count).
    fn active(&self) -> usize {
        self.leased_at.len()
    }
}

impl Observer for Tallies {
    fn line(&mut self, event: &LineEvent<'_>) {
        let (LineKind::Record(record), Some(effect)) = (&event.classified.kind, event.effect)
        else {
            return;
        };
        let unix_time = (record.marker == ClockMarker::Unix)
            .then_some(record.time)
            .flatten();
        let reclaimed = matches!(effect, Effect::Reclaimed { .. });
        // A sweep ends at any other record, or at a reclaim of another
        // time; its own reclaims are already out of the active count.
        let ends = !reclaimed || self.sweep.time.is_some_and(|t| Some(t) != record.time);
        if ends && !self.sweep.owners.is_empty() {
            let active = self.active();
            self.end_sweep(active);
        }
        match effect {
            Effect::Activated | Effect::Reactivated | Effect::TookOver { .. } => {
                let Op::Lease(Ok(lease)) = &record.op else {
                    return;
                };
                let tally = self.rank(&lease.worker);
                tally.leases += 1;
                if matches!(effect, Effect::TookOver { .. }) {
                    tally.took_over += 1;
                }
                let time = (lease.clock == Clock::Unix).then_some(lease.time);
                if let Some(t) = time {
                    tally.last_activity = Some((t, event.number));
                }
                // NaN marks a lease whose time is not a unix one.
                self.leased_at.insert(record.id, time.unwrap_or(f64::NAN));
            }
            Effect::Completed { worker } => {
                let leased = self.leased_at.remove(&record.id);
                let tally = self.rank(worker);
                tally.completed += 1;
                if let Some(t) = unix_time {
                    tally.last_activity = Some((t, event.number));
                    if let Some(at) = leased.filter(|at| !at.is_nan()) {
                        tally.durations.push((t - at).max(0.0) as f32);
                    }
                }
            }
            Effect::Reclaimed { worker, .. } => {
                self.leased_at.remove(&record.id);
                self.sweep.time = record.time;
                self.sweep.owners.push(worker.clone());
            }
            _ => {}
        }
    }
}

/// The median and 95th percentile of `samples` (sorted in place), by the
/// nearest-rank method.
fn quantiles(samples: &mut [f32]) -> (Option<f64>, Option<f64>) {
    if samples.is_empty() {
        return (None, None);
    }
    samples.sort_unstable_by(f32::total_cmp);
    let rank = |q: f64| {
        let i = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
        f64::from(samples[i])
    };
    (Some(rank(0.5)), Some(rank(0.95)))
}

/// The workers of one journal, read from `file`.
fn journal_workers(
    path: &std::path::Path,
    file: &std::fs::File,
    now: f64,
    progress: &dyn Progress,
) -> Result<JournalWorkers, InputError> {
    let mut tallies = Tallies::default();
    let scan = read::scan_journal(path, file, progress, &mut tallies)?;
    if !tallies.sweep.owners.is_empty() {
        tallies.end_sweep(scan.replay.active.len());
    }
    // Active at the end, from the replay itself.
    let mut active: BTreeMap<PyInt, (u64, Option<f64>)> = BTreeMap::new();
    for (_, lease) in scan.replay.active.iter() {
        let entry = active.entry(lease.worker.clone()).or_default();
        entry.0 += 1;
        if lease.clock == Clock::Unix {
            entry.1 = Some(entry.1.map_or(lease.time, |t: f64| t.min(lease.time)));
        }
        tallies.rank(&lease.worker);
    }
    let mut all: Vec<f32> = tallies
        .ranks
        .values()
        .flat_map(|t| t.durations.iter().copied())
        .collect();
    let (median, _) = quantiles(&mut all);
    drop(all);
    let newest = tallies
        .ranks
        .values()
        .filter_map(|t| t.last_activity.map(|(t, _)| t))
        .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))));
    let quiet_after = (STALLED_DURATIONS * median.unwrap_or(0.0)).max(STALLED_MIN_SECONDS);
    let workers = tallies
        .ranks
        .into_iter()
        .map(|(worker, mut tally)| {
            let (lease_seconds_median, lease_seconds_p95) = quantiles(&mut tally.durations);
            let (active, oldest) = active.get(&worker).copied().unwrap_or_default();
            let last = tally.last_activity;
            let by = tally.reclaimed_by;
            Worker {
                worker,
                leases: tally.leases,
                took_over: tally.took_over,
                completed: tally.completed,
                reclaimed: by.resume + by.ttl_expiry + by.abandon,
                reclaimed_by: by,
                active,
                oldest_active_age_seconds: oldest.map(|t| now - t),
                lease_seconds_median,
                lease_seconds_p95,
                last_activity: last.map(|(t, _)| t),
                last_line: last.map(|(_, line)| line),
                stalled: match (last, newest) {
                    (Some((t, _)), Some(n)) => n - t > quiet_after,
                    _ => false,
                },
            }
        })
        .collect();
    Ok(JournalWorkers {
        path: path.display().to_string(),
        lease_seconds_median: median,
        last_activity: newest,
        workers,
    })
}

/// `inspect --workers` of `paths` (journals, `-`, state directories),
/// in the order given: the report, and the paths that could not be read.
pub fn workers(
    paths: &[PathBuf],
    kind: Option<Kind>,
    now: f64,
    progress: &dyn Progress,
) -> (WorkersReport, Vec<InputError>) {
    let (files, errors) = read::each_journal(paths, kind, "--workers", |path, file| {
        journal_workers(path, file, now, progress)
    });
    let report = WorkersReport {
        schema_version: schema::INSPECT,
        kind: "workers",
        now,
        files,
    };
    (report, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        assert_eq!(quantiles(&mut []), (None, None));
        assert_eq!(quantiles(&mut [3.0]), (Some(3.0), Some(3.0)));
        let mut samples: Vec<f32> = (1..=20).rev().map(|n| n as f32).collect();
        assert_eq!(quantiles(&mut samples), (Some(10.0), Some(19.0)));
    }
}
