//! The checks of a fenced lease table (`operations::table`'s report): the
//! records that stop a master or block their id for ever, the records no
//! scan sees, the leases the next start takes again, the tombstones
//! nothing clears, and the leftovers and oddities that are harmless.
//!
//! Each finding is judged by the question every finding is: does resuming
//! now lose, duplicate or misattribute work? A table is shared by masters
//! on other hosts, so a finding never assumes that none runs.

use super::Settings;
use super::catalog::{At, Code, Findings, Id, Severity};
use crate::engine::table::{Oddity, Status, TableKind};
use crate::operations::numbers::{count, duration, plural};
use crate::operations::table::TableReport;

/// The findings of one table.
pub fn check(report: &TableReport, settings: &Settings) -> Findings {
    let mut f = Findings::default();
    let root = report.path.trim_end_matches('/');
    let file = |rel: &str| format!("{root}/{rel}");
    let n = report.shard_count.value;
    for r in &report.rejected_records {
        let at = At {
            id: Some(Id::Work(r.id)),
            ..At::default()
        };
        if let Some(exception) = r.raises {
            f.add(settings, Code::TableRecordRaises, &file(&r.path), at, || {
                format!(
                    "the record {}, so upstream's reader raises {exception}: every scan of the table stops there, and with it every master start",
                    r.message
                )
            });
        } else if r.reason == "absent" {
            // Reported as misplaced, at each place it is.
        } else {
            f.add(
                settings,
                Code::TableRecordRejected,
                &file(&r.path),
                at,
                || {
                    format!(
                        "the record {}: the scans skip it and claim refuses the id for ever",
                        r.message
                    )
                },
            );
        }
    }
    // A layout another count fits: one finding, not one per record.
    let other_count = report.fitting_counts.as_ref().filter(|f| !f.is_empty());
    if let Some(fits) = other_count {
        f.add(settings, Code::TableCountMismatch, root, At::default(), || {
            let fits: Vec<String> = fits.iter().map(|n| count(*n)).collect();
            let outside = report.misplaced.len() as u64
                + report.unread.iter().map(|u| u.records).sum::<u64>();
            format!(
                "{} sit where {} shards put them, not where {} ({}) does: masters at {} would not see them; is that the count the masters use?",
                plural(outside, "record", "records"),
                fits.join(" or "),
                plural(n, "shard", "shards"),
                report.shard_count.from,
                count(n)
            )
        });
    }
    for m in report.misplaced.iter().filter(|_| other_count.is_none()) {
        let active = matches!(m.status, Some(Status::Leased | Status::Committing));
        let severity = if active && m.own_path_holds == "nothing" {
            Severity::Error
        } else {
            Code::TableMisplacedRecord.severity()
        };
        let at = At {
            id: Some(Id::Work(m.id)),
            ..At::default()
        };
        f.push(
            settings,
            Code::TableMisplacedRecord,
            severity,
            Code::TableMisplacedRecord.remedy(),
            &file(&m.path),
            at,
            || {
                let what = m.status.map_or("a record upstream would reject", |s| s.as_str());
                let own = match m.own_path_holds {
                    "nothing" => "holds nothing, so no master sees this record and a claim of the id succeeds as if it were free".to_string(),
                    "same" => "holds the same bytes (this copy is read a second time by each scan of this directory)".to_string(),
                    _ => "holds another version, which is the one upstream reads".to_string(),
                };
                format!(
                    "the record ({what}) is in a shard directory its id does not name at {}; its own path {} {own}",
                    plural(n, "shard", "shards"),
                    m.own_path
                )
            },
        );
    }
    for u in &report.unread {
        let dir = file(&u.name);
        let shard_dir = matches!(u.why, "beyond-count" | "not-canonical");
        if other_count.is_some() && shard_dir {
            continue;
        }
        match u.why {
            // An empty one hides nothing (inspect still lists it).
            "beyond-count" | "not-canonical" | "other" if u.records > 0 => {
                let severity = if u.active > 0 {
                    Severity::Error
                } else {
                    Severity::Warning
                };
                f.push(
                    settings,
                    Code::TableUnreadDirectory,
                    severity,
                    Code::TableUnreadDirectory.remedy(),
                    &dir,
                    At::default(),
                    || {
                        let why = match u.why {
                            "beyond-count" => format!(
                                "a shard directory at or beyond the count {}: a master with a larger SYMCC_MULTI_MASTER_LEASE_SHARDS wrote it, or the count shrank",
                                count(n)
                            ),
                            "not-canonical" => "a name upstream never builds for a shard".to_string(),
                            _ => "not a shard directory".to_string(),
                        };
                        format!(
                            "{}/ is {why}; no scan lists its {} ({} leased or committing)",
                            u.name,
                            plural(u.records, "record", "records"),
                            count(u.active)
                        )
                    },
                );
            }
            "not-a-directory" => {
                f.add(settings, Code::TableShardNotDirectory, &dir, At::default(), || {
                    format!(
                        "{} is {}, not a directory: a claim of any id of shard {} raises NotADirectoryError and stops the master",
                        u.name,
                        u.entry_type.in_words(),
                        u.name
                    )
                });
            }
            "probe" => {
                // Repair leaves one whose pid runs here: no fix to name.
                let remedy = (u.pid_running != Some(true))
                    .then(|| Code::TableProbeDir.remedy())
                    .flatten();
                let severity = Code::TableProbeDir.severity();
                f.push(
                    settings,
                    Code::TableProbeDir,
                    severity,
                    remedy,
                    &dir,
                    At::default(),
                    || {
                        let pid = u
                            .pid
                            .map_or("an unknown pid".into(), |p| format!("pid {p}"));
                        let running = if u.pid_running == Some(true) {
                            "; a process with that pid runs on this host: a master may be starting"
                        } else {
                            ""
                        };
                        format!(
                            "{} was left by a master's file-system probe ({pid}){running}",
                            u.name
                        )
                    },
                );
            }
            _ => {}
        }
    }
    for b in &report.bad_locks {
        let at = At {
            id: Some(Id::Work(b.id)),
            ..At::default()
        };
        f.add(
            settings,
            Code::TableLockNotRegular,
            &file(&b.path),
            at,
            || {
                format!(
                    "the lock path is {}: a claim of the id raises {} and stops the master",
                    b.entry_type.in_words(),
                    b.raises
                )
            },
        );
    }
    for c in &report.committing {
        let stranded = !c.has_commit && (c.age_seconds >= report.ttl_effective || c.owner_dead);
        if !stranded {
            continue;
        }
        let at = At {
            id: Some(Id::Work(c.id)),
            ..At::default()
        };
        f.add(settings, Code::TableCommittingStranded, &file(&c.path), at, || {
            let owner = c.owner.as_deref().unwrap_or("an unnamed owner");
            let what = if c.owner_dead {
                format!("its master ({owner}) no longer runs on this host: it died between begin_commit and complete")
            } else {
                format!(
                    "longer than the TTL: its master ({owner}) most likely stopped between begin_commit and complete (a triage batch takes far less)"
                )
            };
            format!(
                "committing for {} without a commit manifest, {what}; that dispatch ran at most once and nothing will ever clear the record",
                duration(c.age_seconds)
            )
        });
    }
    if report.table == TableKind::Work {
        for e in &report.expired {
            let at = At {
                id: Some(Id::Work(e.id)),
                ..At::default()
            };
            f.add(settings, Code::TableExpiredLease, &file(&e.path), at, || {
                let owner = e.owner.as_deref().unwrap_or("an unnamed owner");
                let which = if e.order < report.start_limit {
                    "the next master start takes it".to_string()
                } else {
                    format!(
                        "a master takes it after the first {} (at an idle moment)",
                        count(report.start_limit as u64)
                    )
                };
                let seed = match (&e.seed, e.seed_here) {
                    (Some(p), Some(true)) => format!("its seed {p} is on this host"),
                    (Some(p), _) => format!(
                        "its seed {p} is not on this host (a master here skips it, leaving it to one that sees the path)"
                    ),
                    (None, _) if e.continuation => "it carries a continuation".to_string(),
                    (None, _) => "it names no seed".to_string(),
                };
                format!(
                    "leased by {owner}, no heartbeat for {} (TTL {}): {which}, and since its re-dispatch gets a new id this record stays leased and is taken again at every later start; {seed}",
                    duration(e.age_seconds),
                    duration(report.ttl_effective)
                )
            });
        }
    }
    for x in &report.future {
        let at = At {
            id: Some(Id::Work(x.id)),
            ..At::default()
        };
        f.add(settings, Code::TableFutureUpdated, &file(&x.path), at, || {
            format!(
                "{} by {}, updated {} ahead of now: it never expires until the clock passes that time",
                x.status.as_str(),
                x.owner.as_deref().unwrap_or("no owner"),
                duration(x.ahead_seconds)
            )
        });
    }
    for o in report.owners.iter().filter(|o| o.host == "dead") {
        if o.leased + o.committing == 0 {
            continue;
        }
        f.add(settings, Code::TableOwnerDead, root, At::default(), || {
            format!(
                "{} is this host's pid that no longer runs; it holds {} and {}: the leased ones wait for the TTL",
                o.owner,
                plural(o.leased, "leased record", "leased records"),
                plural(o.committing, "committing record", "committing records")
            )
        });
    }
    for h in &report.held_locks {
        let at = At {
            id: Some(Id::Work(h.id)),
            ..At::default()
        };
        f.add(settings, Code::TableLockHeld, &file(&h.path), at, || {
            format!(
                "the record's lock is held now by pid {} on this host: a master is inside an operation on it",
                h.pid
            )
        });
    }
    for t in &report.temp_files {
        let at = At {
            id: Some(Id::Work(t.id)),
            ..At::default()
        };
        // Repair leaves one whose pid runs here: no fix to name.
        let remedy = (!t.pid_running_here)
            .then(|| Code::TableTempFile.remedy())
            .flatten();
        let severity = Code::TableTempFile.severity();
        f.push(
            settings,
            Code::TableTempFile,
            severity,
            remedy,
            &file(&t.path),
            at,
            || {
                let running = if t.pid_running_here {
                    "; a process with that pid runs on this host"
                } else {
                    ""
                };
                format!(
                    "a temporary record file a writer (pid {}) never published{running}",
                    t.pid
                )
            },
        );
    }
    if report.counts.done > 0 {
        f.add(settings, Code::TableDoneRecords, root, At::default(), || {
            format!(
                "every scan of the table reads {} that nothing ever removes (of {} record bytes it reads in all)",
                plural(report.counts.done, "done record", "done records"),
                count(report.files.record_bytes)
            )
        });
    }
    for o in &report.odd {
        let at = At {
            id: Some(Id::Work(o.id)),
            ..At::default()
        };
        f.add(settings, Code::TableOddRecord, &file(&o.path), at, || {
            let what: Vec<&str> = o.oddities.iter().map(|x| Oddity::describe(*x)).collect();
            what.join("; ")
        });
    }
    f
}
