//! `diff` of two snapshots: their restored views compared task by task
//! and lease by lease, and their configuration and clock; a side that
//! does not restore is compared as the empty state upstream starts with.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;

use serde::Serialize;
use serde_json::{Value as Json, json};

use super::{
    Change, ChangeKind, DiffKind, DiffReport, Filter, Side, Summary, count, float, int, int_delta,
};
use crate::engine::journal::Clock;
use crate::engine::json::PyInt;
use crate::engine::snapshot::{self, Restored, TaskLease, TaskStats};
use crate::operations::schema;
use crate::store::error::{InputError, in_words};

/// Cumulative statistics of one side.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Tasks.
    pub tasks: usize,
    /// State leases.
    pub state_leases: usize,
    /// Sums over the stats entries.
    #[serde(flatten)]
    pub stats: crate::engine::snapshot::Totals,
}

fn totals(r: &Restored) -> Totals {
    Totals {
        tasks: r.stats.len(),
        state_leases: r.leases.len(),
        stats: r.totals(),
    }
}

/// The difference between two snapshots.
#[derive(Clone, Debug, Serialize)]
pub struct SnapshotDiff {
    /// Whether there is no change at all (filters aside).
    pub identical: bool,
    /// The changes, after filtering.
    pub changes: Vec<Change>,
    /// Changes by entity and kind (`task added`, …), after filtering.
    pub counts: BTreeMap<String, u64>,
    /// Totals of A.
    pub totals_a: Totals,
    /// Totals of B.
    pub totals_b: Totals,
}

/// One side of a snapshot comparison: its restored view and file clock.
pub struct SnapshotSide<'a> {
    /// The restored view.
    pub restored: &'a Restored,
    /// Whether the file carries `"clock":"unix"`.
    pub unix_clock: bool,
}

/// Compares two restored snapshots.
pub fn snapshots(a: &SnapshotSide<'_>, b: &SnapshotSide<'_>, filter: &Filter) -> SnapshotDiff {
    let mut changes = Vec::new();
    let clock = |unix: bool| json!(if unix { "unix" } else { "legacy" });
    if a.unix_clock != b.unix_clock {
        changes.push(Change {
            entity: "config",
            change: ChangeKind::Changed,
            id: None,
            field: Some("clock"),
            before: clock(a.unix_clock),
            after: clock(b.unix_clock),
            delta: None,
        });
    }
    let (ra, rb) = (a.restored, b.restored);
    for (field, x, y) in [
        ("shard_count", &ra.shard_count, &rb.shard_count),
        ("worker_count", &ra.worker_count, &rb.worker_count),
        ("steal_window", &ra.steal_window, &rb.steal_window),
    ] {
        if x != y {
            changes.push(Change {
                entity: "config",
                change: ChangeKind::Changed,
                id: None,
                field: Some(field),
                before: int(x),
                after: int(y),
                delta: int_delta(x, y),
            });
        }
    }
    let stats_a: HashMap<&str, &TaskStats> =
        ra.stats.iter().map(|t| (t.task_id.as_str(), t)).collect();
    let stats_b: HashMap<&str, &TaskStats> =
        rb.stats.iter().map(|t| (t.task_id.as_str(), t)).collect();
    let ids: BTreeSet<&str> = stats_a.keys().chain(stats_b.keys()).copied().collect();
    for id in ids {
        match (stats_a.get(id), stats_b.get(id)) {
            (Some(t), None) => changes.push(Change {
                entity: "task",
                change: ChangeKind::Removed,
                id: Some(id.to_string()),
                field: None,
                before: serde_json::to_value(t).unwrap_or(Json::Null),
                after: Json::Null,
                delta: None,
            }),
            (None, Some(t)) => changes.push(Change {
                entity: "task",
                change: ChangeKind::Added,
                id: Some(id.to_string()),
                field: None,
                before: Json::Null,
                after: serde_json::to_value(t).unwrap_or(Json::Null),
                delta: None,
            }),
            (Some(x), Some(y)) => task_changes(id, x, y, &mut changes),
            (None, None) => {}
        }
    }
    let leases_a: BTreeMap<&str, &TaskLease> =
        ra.leases.iter().map(|l| (l.task_id.as_str(), l)).collect();
    let leases_b: BTreeMap<&str, &TaskLease> =
        rb.leases.iter().map(|l| (l.task_id.as_str(), l)).collect();
    let ids: BTreeSet<&str> = leases_a.keys().chain(leases_b.keys()).copied().collect();
    let lease_json = |l: &TaskLease| json!({"worker": int(&l.worker), "updated": l.updated.map_or(Json::Null, float)});
    for id in ids {
        let lease_change = |change, field, before, after| Change {
            entity: "lease",
            change,
            id: Some(id.to_string()),
            field,
            before,
            after,
            delta: None,
        };
        match (leases_a.get(id), leases_b.get(id)) {
            (Some(x), None) => changes.push(lease_change(
                ChangeKind::Removed,
                None,
                lease_json(x),
                Json::Null,
            )),
            (None, Some(y)) => changes.push(lease_change(
                ChangeKind::Added,
                None,
                Json::Null,
                lease_json(y),
            )),
            (Some(x), Some(y)) => {
                if x.worker != y.worker {
                    changes.push(lease_change(
                        ChangeKind::Changed,
                        Some("worker"),
                        int(&x.worker),
                        int(&y.worker),
                    ));
                }
                if x.updated.map(f64::to_bits) != y.updated.map(f64::to_bits) {
                    let before = x.updated.map_or(Json::Null, float);
                    let after = y.updated.map_or(Json::Null, float);
                    changes.push(lease_change(
                        ChangeKind::Changed,
                        Some("updated"),
                        before,
                        after,
                    ));
                }
            }
            (None, None) => {}
        }
    }
    let identical = changes.is_empty();
    changes.retain(|c| filter.keeps(c));
    SnapshotDiff {
        identical,
        counts: count(&changes),
        changes,
        totals_a: totals(ra),
        totals_b: totals(rb),
    }
}

fn task_changes(id: &str, x: &TaskStats, y: &TaskStats, out: &mut Vec<Change>) {
    let mut push = |field: &'static str, before: Json, after: Json, delta: Option<Json>| {
        out.push(Change {
            entity: "task",
            change: ChangeKind::Changed,
            id: Some(id.to_string()),
            field: Some(field),
            before,
            after,
            delta,
        });
    };
    for (field, a, b) in [
        ("shard", &x.shard, &y.shard),
        ("owner", &x.owner, &y.owner),
        ("leases", &x.leases, &y.leases),
        ("completions", &x.completions, &y.completions),
        ("failures", &x.failures, &y.failures),
        ("total_generated", &x.total_generated, &y.total_generated),
    ] {
        if a != b {
            push(field, int(a), int(b), int_delta(a, b));
        }
    }
    for (field, a, b) in [
        ("reward", x.reward, y.reward),
        ("elapsed", x.elapsed, y.elapsed),
    ] {
        if a.to_bits() != b.to_bits() {
            let delta = (a.is_finite() && b.is_finite()).then(|| float(b - a));
            push(field, float(a), float(b), delta);
        }
    }
    // Times as the files hold them: restore zeroes legacy ones, and
    // comparing a legacy snapshot with its migration must show exactly that.
    for (field, a, b) in [
        ("last_lease", x.written_times.0, y.written_times.0),
        ("last_complete", x.written_times.1, y.written_times.1),
    ] {
        if a.map(f64::to_bits) != b.map(f64::to_bits) {
            let delta = a
                .zip(b)
                .filter(|(p, q)| p.is_finite() && q.is_finite())
                .map(|(p, q)| float(q - p));
            push(
                field,
                a.map_or(Json::Null, float),
                b.map_or(Json::Null, float),
                delta,
            );
        }
    }
}

/// A snapshot as upstream restores it, or the empty state upstream starts
/// with when it does not restore.
fn restored_or_empty(bytes: &[u8], notes: &mut Vec<String>, side: &str) -> (Restored, bool) {
    let snap = snapshot::read(bytes);
    match snap.restored {
        Some(r) => (r, snap.unix_clock),
        None => {
            notes.push(format!(
                "{side} does not restore (unparseable or not an object): upstream would start empty"
            ));
            let empty = Restored {
                shard_count: PyInt::Small(16),
                worker_count: PyInt::Small(1),
                steal_window: PyInt::Small(64),
                stats: Vec::new(),
                leases: Vec::new(),
            };
            (empty, false)
        }
    }
}

/// Compares two opened snapshots, read to their ends.
pub(super) fn compare(a: Side<'_>, b: Side<'_>, filter: &Filter) -> Result<DiffReport, InputError> {
    let (path_a, path_b) = (a.path, b.path);
    let bytes_a = read_all(a)?;
    let bytes_b = read_all(b)?;
    let mut notes = Vec::new();
    let (ra, ua) = restored_or_empty(&bytes_a, &mut notes, "A");
    let (rb, ub) = restored_or_empty(&bytes_b, &mut notes, "B");
    let d = snapshots(
        &SnapshotSide {
            restored: &ra,
            unix_clock: ua,
        },
        &SnapshotSide {
            restored: &rb,
            unix_clock: ub,
        },
        filter,
    );
    Ok(DiffReport {
        schema_version: schema::DIFF,
        kind: DiffKind::Snapshot,
        a: path_a.display().to_string(),
        b: path_b.display().to_string(),
        identical: d.identical,
        counts: d.counts,
        changes: d.changes,
        summary: Summary::Snapshot {
            a: d.totals_a,
            b: d.totals_b,
            clock_a: if ua { Clock::Unix } else { Clock::Legacy },
            clock_b: if ub { Clock::Unix } else { Clock::Legacy },
        },
        bytes: None,
        history: None,
        ledger: None,
        table: None,
        notes,
    })
}

/// The rest of an opened side after the bytes already read.
fn read_all(side: Side<'_>) -> Result<Vec<u8>, InputError> {
    let Side {
        path,
        mut prefix,
        mut file,
        ..
    } = side;
    file.read_to_end(&mut prefix)
        .map_err(|e| InputError::new(path, format!("read error: {}", in_words(&e))))?;
    Ok(prefix)
}
