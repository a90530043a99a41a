//! The checks of a snapshot (and upstream's restore of it) and of a state
//! directory's listing: temporary files, backups, the master's lock.

use super::Settings;
use super::catalog::{At, Code, Findings, Id};
use crate::engine::snapshot;
use crate::operations::numbers::{plural, plural_unseparated};
use crate::store::lock::{Holder, LockState};
use crate::store::statedir::TempFile;

/// Verifies a snapshot's bytes.
pub fn snapshot(bytes: &[u8], file: &str, settings: &Settings) -> Findings {
    let s = settings;
    let mut f = Findings::default();
    let snap = snapshot::read(bytes);
    let none = At::default();
    match &snap.parse {
        Err(e) => {
            let e = e.to_string();
            f.add(s, Code::SnapshotCorrupt, file, none, || {
                format!("does not parse ({e}): upstream starts empty and every statistic is lost")
            });
            return f;
        }
        Ok(_) if !snap.is_object => {
            f.add(s, Code::SnapshotCorrupt, file, none, || {
                "not a JSON object: upstream's restore ignores it and starts empty".into()
            });
            return f;
        }
        Ok(stats) => {
            if stats.duplicate_members > 0 {
                let n = stats.duplicate_members;
                f.add(s, Code::SnapshotDuplicateMember, file, none, || {
                    format!(
                        "{}: the last value of each wins",
                        plural_unseparated(n, "repeated member name", "repeated member names")
                    )
                });
            }
            if stats.nonfinite_constants > 0 {
                let n = stats.nonfinite_constants;
                f.add(s, Code::SnapshotNonFinite, file, none, || {
                    plural_unseparated(n, "NaN/Infinity constant", "NaN/Infinity constants")
                });
            }
        }
    }
    if !snap.unix_clock {
        f.add(s, Code::SnapshotLegacyClock, file, none, || {
            "no \"clock\":\"unix\": last_lease/last_complete are monotonic and restore zeroes them"
                .into()
        });
    }
    let c = &snap.changes;
    if c.stats_truncated + c.leases_truncated > 0 {
        f.add(s, Code::SnapshotTruncated, file, none, || {
            format!(
                "{} stats and {} leases before the last 65536 are never read",
                c.stats_truncated, c.leases_truncated
            )
        });
    }
    for member in &c.ignored_members {
        f.add(s, Code::SnapshotDroppedEntry, file, none, || {
            format!("\"{member}\" is not a list: restore ignores all of it")
        });
    }
    for d in &c.dropped {
        let at = At {
            id: d.task_id.as_deref().map(Id::Text),
            ..At::default()
        };
        f.add(s, Code::SnapshotDroppedEntry, file, at, || {
            format!("{}[{}]: {}", list_name(d.list), d.index, d.reason)
        });
    }
    if let Some(restored) = &snap.restored {
        let infinite = restored
            .stats
            .iter()
            .filter(|t| {
                !t.reward.is_finite()
                    || !t.elapsed.is_finite()
                    || !t.last_lease.is_finite()
                    || !t.last_complete.is_finite()
            })
            .count();
        if infinite > 0
            && snap
                .parse
                .as_ref()
                .is_ok_and(|p| p.nonfinite_constants == 0)
        {
            f.add(s, Code::SnapshotNonFinite, file, none, || {
                format!("{infinite} stats entries restore to an infinite value")
            });
        }
        for lease in &restored.leases {
            let at = At {
                id: Some(Id::Text(&lease.task_id)),
                ..At::default()
            };
            f.add(s, Code::SnapshotInheritedLease, file, at, || {
                format!(
                    "state lease of worker {} from the previous coordinator epoch: restore makes it stale",
                    lease.worker
                )
            });
        }
    }
    for task in &c.leases_without_stats {
        let at = At {
            id: Some(Id::Text(task)),
            ..At::default()
        };
        f.add(s, Code::SnapshotLeaseWithoutStats, file, at, || {
            "a state lease whose task has no stats entry".into()
        });
    }
    f
}

fn list_name(list: snapshot::List) -> &'static str {
    match list {
        snapshot::List::Stats => "stats",
        snapshot::List::Leases => "leases",
    }
}

/// Verifies what a state directory's listing shows.
pub fn directory(
    dir: &str,
    has_work_journal: bool,
    (temp_files, backups): (&[TempFile], &[TempFile]),
    lock: &LockState,
    settings: &Settings,
) -> Findings {
    let s = settings;
    let mut f = Findings::default();
    if !backups.is_empty() {
        let bytes: u64 = backups.iter().map(|b| b.bytes).sum();
        f.add(s, Code::LeasejournalBackups, dir, At::default(), || {
            format!(
                "{} left by leasejournal, {} in all: {}",
                if backups.len() == 1 {
                    "1 backup or export".to_string()
                } else {
                    format!("{} backups and exports", backups.len())
                },
                plural(bytes, "byte", "bytes"),
                backups
                    .iter()
                    .map(|b| b.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
    }
    for t in temp_files {
        f.add(s, Code::StaleTempFile, dir, At::default(), || {
            format!(
                "{} ({}) left by a crashed rewrite",
                t.name,
                plural(t.bytes, "byte", "bytes")
            )
        });
    }
    if lock.held == Some(true) {
        let holders = lock
            .processes
            .iter()
            .map(Holder::describe)
            .collect::<Vec<_>>()
            .join("; ");
        let what = if !lock.processes.is_empty() && lock.processes.iter().all(|h| h.leasejournal) {
            "another run of leasejournal is changing these files"
        } else {
            "a master is running"
        };
        f.add(s, Code::LiveMaster, dir, At::default(), || {
            format!(".master-queue.lock is held by {holders}: {what}")
        });
    }
    if !has_work_journal {
        f.add(s, Code::MissingJournal, dir, At::default(), || {
            "no .work_leases.jsonl: nothing to recover".into()
        });
    }
    f
}
