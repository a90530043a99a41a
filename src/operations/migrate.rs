//! `migrate` as a plan: move state out of the legacy (monotonic) clock
//! domain, as F314's L5 asks. A legacy snapshot is replaced by exactly the
//! bytes upstream writes right after restoring it. A journal's legacy
//! leases are only reported: the master's resume reclaims them and requeues
//! their work itself, and reclaiming them here would lose that work. With
//! `--rewrite` the journal is compacted, so no clock-less record remains;
//! legacy leases keep `"clock":"legacy"`, as upstream's compaction writes
//! them. Running it twice changes nothing the second time.
//!
//! [`run`] carries the plans out through the write session (`store::session`).

use std::io::{Read, Write};
use std::path::Path;

use serde::Serialize;

use crate::engine::journal::Clock;
use crate::engine::journal::HiddenCount;
use crate::engine::journal::compaction::{self, Measured};
use crate::engine::journal::{Reclaim, reclaims};
use crate::engine::snapshot::{self, Dropped, Zeroed};
use crate::operations::exit::Exit;
use crate::operations::report::{Command, Report, refuse_hidden};
use crate::store::compare::CompareSink;
use crate::store::durable::{self, Publish};
use crate::store::error::in_words;
use crate::store::failpoint;
use crate::store::format::Kind;
use crate::store::progress::Progress;
use crate::store::session::{
    self, Opened, Outcome, Publication, Session, Tell, WriteOptions, check_replay,
};

/// What `migrate` does to one file.
#[derive(Debug, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum Migration {
    /// A journal, left as it is: its legacy leases, which resume reclaims
    /// and requeues.
    Journal {
        /// The active legacy leases, in the order resume reclaims them.
        legacy_leases: Vec<Reclaim>,
    },
    /// A journal with `--rewrite`: compacted, legacy leases kept as legacy.
    Rewrite {
        /// The active legacy leases, in the order resume reclaims them.
        legacy_leases: Vec<Reclaim>,
        /// Records without a `clock` member before the rewrite.
        clockless_records: u64,
        /// The compaction.
        compaction: Measured,
    },
    /// A snapshot.
    Snapshot(SnapshotPlan),
}

impl Migration {
    /// Whether there is nothing to write.
    pub fn is_noop(&self) -> bool {
        match self {
            Migration::Journal { .. } => true,
            Migration::Rewrite {
                clockless_records,
                compaction,
                ..
            } => *clockless_records == 0 || compaction.unchanged,
            Migration::Snapshot(plan) => !plan.needed,
        }
    }
}

/// A snapshot migration.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SnapshotPlan {
    /// Whether the snapshot is legacy (no `"clock":"unix"`).
    pub needed: bool,
    /// Size now.
    pub bytes_before: usize,
    /// Size after.
    pub bytes_after: usize,
    /// Times restore sets to 0.0.
    pub zeroed: Vec<Zeroed>,
    /// Entries restore drops.
    pub dropped: Vec<Dropped>,
    /// The new content.
    #[serde(skip)]
    pub content: Vec<u8>,
}

/// Why a snapshot cannot be migrated.
#[derive(Clone, Debug)]
pub struct Unmigratable(pub String);

/// Plans a snapshot migration.
pub fn snapshot(bytes: &[u8]) -> Result<SnapshotPlan, Unmigratable> {
    let snap = snapshot::read(bytes);
    if let Err(e) = &snap.parse {
        return Err(Unmigratable(format!(
            "does not parse ({e}); restore it from a backup instead"
        )));
    }
    let Some(restored) = snap.restored else {
        return Err(Unmigratable(
            "is not a JSON object; restore it from a backup instead".into(),
        ));
    };
    let needed = !snap.unix_clock;
    let content = if needed {
        restored.to_upstream_bytes()
    } else {
        bytes.to_vec()
    };
    Ok(SnapshotPlan {
        needed,
        bytes_before: bytes.len(),
        bytes_after: content.len(),
        zeroed: if needed {
            snap.changes.zeroed
        } else {
            Vec::new()
        },
        dropped: if needed {
            snap.changes.dropped
        } else {
            Vec::new()
        },
        content,
    })
}

/// Runs `migrate` on PATH (a journal, a snapshot or a state directory):
/// the plan of each file, carried out when `options` say so; `rewrite` as
/// `--rewrite`, lease ages judged at `now`. Returns the report and the
/// exit status.
pub fn run(
    path: &Path,
    rewrite: bool,
    now: f64,
    options: &WriteOptions,
    progress: &dyn Progress,
    tell: Tell<'_>,
) -> anyhow::Result<(Report<Migration>, Exit)> {
    let kinds = [Kind::Journal, Kind::Snapshot];
    let run = session::run_paths(
        std::slice::from_ref(&path.to_path_buf()),
        options,
        tell,
        &kinds,
        |session, path, kind| {
            let mut outcome = session.outcome(
                path,
                kind,
                Migration::Snapshot(SnapshotPlan::default()),
                session.clean_temps(path),
            );
            match kind {
                Kind::Journal => {
                    migrate_journal(session, path, rewrite, now, progress, &mut outcome)?
                }
                Kind::Snapshot => migrate_snapshot(session, path, &mut outcome)?,
            }
            if outcome.plan.is_noop() {
                outcome.note = Some("nothing to migrate".into());
            }
            Ok(outcome)
        },
    )?;
    let exit = Exit::of_write(
        session::would_change(&run, Migration::is_noop),
        session::left_behind(&run),
    );
    Ok((Report::of(Command::Migrate, run), exit))
}

/// Plans the migration of one journal and, in a writing mode with
/// `rewrite` (`--rewrite`), carries it out; lease ages are judged at `now`.
fn migrate_journal(
    session: &Session<'_>,
    path: &Path,
    rewrite: bool,
    now: f64,
    progress: &dyn Progress,
    outcome: &mut Outcome<Migration>,
) -> anyhow::Result<()> {
    let opened = Opened::open(path)?;
    let read_error = session::read_error(path);
    let mut hidden = HiddenCount::default();
    let scan = opened.scan(progress, |src| compaction::scan_observed(src, &mut hidden))?;
    let legacy_leases = reclaims(&scan.replay, now, 0, |_, a| a.clock != Clock::Unix);
    if !rewrite {
        outcome.plan = Migration::Journal { legacy_leases };
        return Ok(());
    }
    let clockless_records = scan.summary.clocks.unmarked;
    if clockless_records > 0 {
        refuse_hidden(path, hidden.records)?;
    }
    let plan = compaction::plan(scan.replay, scan.summary.lines, scan.summary.bytes, false)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut sink = CompareSink::new(opened.reopen().map_err(read_error)?);
    compaction::write_result(opened.reopen().map_err(read_error)?, &plan, &mut sink)
        .map_err(read_error)?;
    let (bytes_after, unchanged) = sink.finish().map_err(read_error)?;
    outcome.plan = Migration::Rewrite {
        legacy_leases,
        clockless_records,
        compaction: Measured {
            bytes_after,
            unchanged,
            ..crate::operations::findings::journal::measured(plan, &scan.summary, 0)
        },
    };
    if !session.writes() || outcome.plan.is_noop() {
        return Ok(());
    }
    let Migration::Rewrite { compaction, .. } = &outcome.plan else {
        return Ok(());
    };
    failpoint::hit("planned")?;
    let plan = &compaction.plan;
    let version = opened.version();
    let published = session.publish(
        opened,
        Publication::Rewrite {
            produce: Box::new(move |out: &mut dyn Write| {
                compaction::write_result(version.reopen()?, plan, out)
            }),
            check: Box::new(|f: &mut durable::Reread<'_>| {
                check_replay(f, &plan.after).map(|()| Publish::Yes)
            }),
            carry_late_appends: true,
        },
    )?;
    published.record(outcome);
    Ok(())
}

/// Plans the migration of one snapshot and, in a writing mode, carries it
/// out.
fn migrate_snapshot(
    session: &Session<'_>,
    path: &Path,
    outcome: &mut Outcome<Migration>,
) -> anyhow::Result<()> {
    let mut opened = Opened::open(path)?;
    let mut bytes = Vec::new();
    opened
        .file
        .read_to_end(&mut bytes)
        .map_err(session::read_error(path))?;
    let plan = self::snapshot(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: cannot migrate: it {}", path.display(), e.0))?;
    outcome.plan = Migration::Snapshot(plan);
    let Migration::Snapshot(plan) = &outcome.plan else {
        return Ok(());
    };
    if !session.writes() || !plan.needed {
        return Ok(());
    }
    let check = |f: &mut durable::Reread<'_>| {
        let mut written = Vec::new();
        f.read_to_end(&mut written)
            .map_err(|e| format!("re-read failed: {}", in_words(&e)))?;
        if written == plan.content {
            Ok(Publish::Yes)
        } else {
            Err("the snapshot read back differs from what was written".into())
        }
    };
    // The master replaces its snapshot whole; nothing is appended to it,
    // so there is nothing to carry.
    let published = session.publish(
        opened,
        Publication::Rewrite {
            produce: Box::new(|out: &mut dyn Write| out.write_all(&plan.content)),
            check: Box::new(check),
            carry_late_appends: false,
        },
    )?;
    published.record(outcome);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrating_twice_changes_nothing_the_second_time() {
        let legacy = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/fidelity/s000/state.json"
        ))
        .unwrap();
        let first = snapshot(&legacy).unwrap();
        assert!(first.needed);
        assert!(!first.zeroed.is_empty());
        let second = snapshot(&first.content).unwrap();
        assert!(!second.needed);
        assert_eq!(second.content, first.content);
        assert!(snapshot(b"{oops").is_err());
    }
}
