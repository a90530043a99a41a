//! `rollback`: a file put back to one of its `*.bak.<UTC>` backups (kept
//! by repair, compact, migrate, recover --discard, restore and rollback
//! itself), as a rewrite through the write session: under the master's
//! lock, the file it replaces kept as a backup of its own (so a rollback
//! can be rolled back), the result compared byte for byte with the backup
//! as it is written.
//!
//! The plan says what the state gains and loses. Rolling back loses work
//! recorded since the backup was taken when an id active now would be
//! neither active nor completed after it (resume would not requeue its
//! work), or a completed id would not be completed (resume, or a later
//! dispatch, would run finished work again); for a snapshot, when a task
//! now counts more leases, completions, failures or generated inputs than
//! the backup, or is not in it at all. Such a rollback is refused unless
//! the operator allows the loss by name (`--allow-loss`); the dry run
//! shows the plan and says it would be refused.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::engine::journal::{self, LineEvent, LineKind, Observer, Op, Replay, StateView, WorkId};
use crate::engine::json::PyInt;
use crate::engine::snapshot::{self, TaskStats};
use crate::operations::exit::Exit;
use crate::operations::numbers::plural;
use crate::operations::report::{Command, Report};
use crate::store::compare::CompareSink;
use crate::store::durable::{self, Publish};
use crate::store::failpoint;
use crate::store::format::{self, Kind};
use crate::store::path::companion_of;
use crate::store::progress::Progress;
use crate::store::session::{
    self, Mode, Opened, Outcome, Publication, Session, Tell, WriteOptions,
};

/// What a rollback changes in a journal's state.
#[derive(Clone, Debug, Default, Serialize)]
pub struct JournalChange {
    /// Replay state now.
    pub before: Option<StateView>,
    /// Replay state of the backup.
    pub after: Option<StateView>,
    /// Ids active after the rollback that are not now (resume requeues
    /// their work).
    pub active_gained: Vec<WorkId>,
    /// Ids active now that would be neither active nor completed after:
    /// their work is lost.
    pub active_lost: Vec<WorkId>,
    /// Ids completed after that are not now.
    pub completed_gained: Vec<WorkId>,
    /// Ids completed now that would not be after: their work could run
    /// again.
    pub completed_lost: Vec<WorkId>,
    /// Records of the file now that the backup does not hold (lines not
    /// in it byte for byte), by op: what was written since.
    pub records_not_in_backup: RecordCounts,
}

/// Records by op.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RecordCounts {
    /// `lease` records.
    pub lease: u64,
    /// `done` records.
    pub done: u64,
    /// `reclaim` records.
    pub reclaim: u64,
    /// Any other op.
    pub other: u64,
}

impl RecordCounts {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.lease + self.done + self.reclaim + self.other
    }
}

/// What a rollback changes in a snapshot, as upstream's restore reads it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SnapshotChange {
    /// Tasks now.
    pub tasks_before: usize,
    /// Tasks after.
    pub tasks_after: usize,
    /// Leases now.
    pub leases_before: usize,
    /// Leases after.
    pub leases_after: usize,
    /// Completions now, over every task.
    pub completions_before: PyInt,
    /// Completions after.
    pub completions_after: PyInt,
    /// Tasks whose counts (leases, completions, failures, generated
    /// inputs) would go back, or which the backup does not hold: the
    /// statistics recorded since the backup.
    pub tasks_behind: Vec<String>,
}

/// A rollback of one file.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The backup the file is put back to.
    pub backup: String,
    /// The file's size now.
    pub bytes_before: u64,
    /// Its size after (the backup's).
    pub bytes_after: u64,
    /// Whether the file already holds the backup's bytes.
    pub identical: bool,
    /// A journal's change (absent for a snapshot).
    pub journal: Option<JournalChange>,
    /// A snapshot's change (absent for a journal).
    pub snapshot: Option<SnapshotChange>,
    /// Whether rolling back loses work recorded since the backup.
    pub loses_work: bool,
    /// Why it is refused, when it loses work and `--allow-loss` was not
    /// given.
    pub refused: Option<String>,
}

impl Plan {
    /// Whether there is nothing to change.
    pub fn is_noop(&self) -> bool {
        self.identical
    }
}

/// The file a backup's name names: `<file>.bak.<UTC>` (or
/// `…<UTC>-<n>`), in the same directory; `None` for any other name.
pub fn target_of(backup: &Path) -> Option<PathBuf> {
    companion_of(backup, ".bak.", "")
}

/// The hash of a line, as the sets of lines below keep it.
fn line_hash(content: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    content.hash(&mut h);
    h.finish()
}

/// The backup's lines, by hash.
struct Lines(HashSet<u64>);

impl Observer for Lines {
    fn line(&mut self, event: &LineEvent<'_>) {
        self.0.insert(line_hash(event.content));
    }
}

/// The records of the file now that are not lines of the backup.
struct Newer<'a> {
    backup: &'a HashSet<u64>,
    counts: RecordCounts,
}

impl Observer for Newer<'_> {
    fn line(&mut self, event: &LineEvent<'_>) {
        let LineKind::Record(record) = &event.classified.kind else {
            return;
        };
        if self.backup.contains(&line_hash(event.content)) {
            return;
        }
        match record.op {
            Op::Lease(_) => self.counts.lease += 1,
            Op::Done => self.counts.done += 1,
            Op::Reclaim => self.counts.reclaim += 1,
            Op::Unknown(_) => self.counts.other += 1,
        }
    }
}

/// What rolling a journal whose state is `now` back to a backup whose
/// state is `after` gains and loses.
fn journal_change(now: &Replay, after: &Replay, records: RecordCounts) -> JournalChange {
    let sorted = |mut v: Vec<WorkId>| {
        v.sort_unstable();
        v
    };
    let not_in = |ids: Vec<&WorkId>, keep: &dyn Fn(&WorkId) -> bool| {
        sorted(ids.into_iter().filter(|id| keep(id)).copied().collect())
    };
    JournalChange {
        before: Some(StateView::of(now)),
        after: Some(StateView::of(after)),
        active_gained: not_in(after.active.keys().collect(), &|id| {
            !now.active.contains_key(id)
        }),
        active_lost: not_in(now.active.keys().collect(), &|id| {
            !after.active.contains_key(id) && !after.completed.contains(id)
        }),
        completed_gained: not_in(after.completed.iter().collect(), &|id| {
            !now.completed.contains(id)
        }),
        completed_lost: not_in(now.completed.iter().collect(), &|id| {
            !after.completed.contains(id)
        }),
        records_not_in_backup: records,
    }
}

/// What rolling a snapshot holding `now` back to one holding `after`
/// changes, as upstream's restore reads each.
pub fn snapshot_change(now: &[u8], after: &[u8]) -> SnapshotChange {
    let restored = |bytes: &[u8]| snapshot::read(bytes).restored;
    let (now, after) = (restored(now), restored(after));
    fn stats(r: &Option<snapshot::Restored>) -> &[TaskStats] {
        r.as_ref().map_or(&[][..], |r| &r.stats[..])
    }
    let leases = |r: &Option<snapshot::Restored>| r.as_ref().map_or(0, |r| r.leases.len());
    let completions = |r: &Option<snapshot::Restored>| {
        r.as_ref()
            .map_or(PyInt::Small(0), |r| r.totals().completions)
    };
    let backed: HashMap<&str, &TaskStats> = stats(&after)
        .iter()
        .map(|t| (t.task_id.as_str(), t))
        .collect();
    let counts = |t: &TaskStats| {
        [
            t.leases.clone(),
            t.completions.clone(),
            t.failures.clone(),
            t.total_generated.clone(),
        ]
    };
    let tasks_behind = stats(&now)
        .iter()
        .filter(|t| match backed.get(t.task_id.as_str()) {
            None => true,
            Some(b) => counts(t).iter().zip(counts(b)).any(|(n, a)| *n > a),
        })
        .map(|t| t.task_id.clone())
        .collect();
    SnapshotChange {
        tasks_before: stats(&now).len(),
        tasks_after: stats(&after).len(),
        leases_before: leases(&now),
        leases_after: leases(&after),
        completions_before: completions(&now),
        completions_after: completions(&after),
        tasks_behind,
    }
}

/// What the operator asked of a rollback.
#[derive(Clone, Debug)]
pub struct Request {
    /// The backup.
    pub backup: PathBuf,
    /// The file to put back, else the one the backup's name names.
    pub file: Option<PathBuf>,
    /// Roll back even when that loses work recorded since the backup
    /// (`--allow-loss`).
    pub allow_loss: bool,
}

/// Runs `rollback`: the plan, carried out when `options` say so. Returns
/// the report and the exit status.
pub fn run(
    request: &Request,
    options: &WriteOptions,
    progress: &dyn Progress,
    tell: Tell<'_>,
) -> anyhow::Result<(Report<Plan>, Exit)> {
    let backup = &request.backup;
    let file = match &request.file {
        // A backup of one state file never goes back over another: the
        // deferred journal rolled back to the work journal's backup queues
        // its work twice.
        Some(f) if target_of(backup)
            .is_some_and(|of| of.file_name() != f.file_name()) =>
        {
            let of = target_of(backup).unwrap_or_default();
            anyhow::bail!(
                "{}: is a backup of {}, not of {}: a rollback puts a file back to its own backup. Nothing was changed",
                backup.display(),
                of.file_name().unwrap_or_default().to_string_lossy(),
                f.display()
            );
        }
        Some(f) => f.clone(),
        None => target_of(backup).ok_or_else(|| {
            anyhow::anyhow!(
                "{}: not the name of a backup (FILE.bak.<UTC>); name the file it is a backup of: leasejournal rollback BACKUP FILE. Nothing was changed",
                backup.display()
            )
        })?,
    };
    if std::fs::symlink_metadata(&file).is_err() {
        anyhow::bail!(
            "{}: no such file next to the backup {} (a backup kept in --backup-dir? name the file: leasejournal rollback BACKUP FILE). Nothing was changed",
            file.display(),
            backup.display()
        );
    }
    // The backup must be there, a regular file, before anything is locked.
    Opened::open(backup)?;
    let run = session::run_paths(
        std::slice::from_ref(&file),
        options,
        tell,
        &[Kind::Journal, Kind::Snapshot],
        |session, path, kind| rollback_file(session, path, kind, request, progress),
    )?;
    let exit = Exit::of_write(
        session::would_change(&run, Plan::is_noop),
        session::left_behind(&run),
    );
    Ok((Report::of(Command::Rollback, run), exit))
}

/// Why a rollback that loses work is refused, in one line.
fn refusal(path: &Path, plan: &Plan) -> String {
    let mut lost = Vec::new();
    let first = |ids: &[WorkId]| ids.first().map(|id| id.short()).unwrap_or_default();
    if let Some(j) = &plan.journal {
        if !j.active_lost.is_empty() {
            lost.push(format!(
                "{} active now would be neither active nor completed (first {}): resume would not requeue that work",
                plural(j.active_lost.len() as u64, "lease", "leases"),
                first(&j.active_lost)
            ));
        }
        if !j.completed_lost.is_empty() {
            lost.push(format!(
                "{} would not be (first {}): that work could run again",
                plural(
                    j.completed_lost.len() as u64,
                    "completed id",
                    "completed ids"
                ),
                first(&j.completed_lost)
            ));
        }
    }
    if let Some(s) = &plan.snapshot
        && !s.tasks_behind.is_empty()
    {
        lost.push(format!(
            "the statistics of {} recorded since would be lost (first {})",
            plural(s.tasks_behind.len() as u64, "task", "tasks"),
            journal::short_id(&s.tasks_behind[0])
        ));
    }
    format!(
        "{}: rolling back to {} loses work recorded since the backup: {}; pass --allow-loss to roll back anyway. Nothing was changed",
        path.display(),
        plan.backup,
        lost.join("; ")
    )
}

/// Plans the rollback of one file and, in a writing mode, carries it out.
fn rollback_file(
    session: &Session<'_>,
    path: &Path,
    kind: Kind,
    request: &Request,
    progress: &dyn Progress,
) -> anyhow::Result<Outcome<Plan>> {
    let removed_temp_files = session.clean_temps(path);
    let backup = Opened::open(&request.backup)?;
    let opened = Opened::open(path)?;
    let read_error = session::read_error(path);
    let mut sniffed = Vec::new();
    backup
        .reopen()
        .map_err(session::read_error(&request.backup))?
        .take(64 << 10)
        .read_to_end(&mut sniffed)
        .map_err(session::read_error(&request.backup))?;
    if let Some(other) = format::kind_from_content(&sniffed).filter(|k| *k != kind) {
        anyhow::bail!(
            "{}: holds a {}, not a {} like {}: it is not a backup of it. Nothing was changed",
            request.backup.display(),
            other.name(),
            kind.name(),
            path.display()
        );
    }
    let mut same = CompareSink::new(backup.reopen().map_err(read_error)?);
    io::copy(&mut opened.reopen().map_err(read_error)?, &mut same).map_err(read_error)?;
    let (_, identical) = same.finish().map_err(read_error)?;
    let mut plan = Plan {
        backup: request.backup.display().to_string(),
        bytes_before: opened.meta.len(),
        bytes_after: backup.meta.len(),
        identical,
        journal: None,
        snapshot: None,
        loses_work: false,
        refused: None,
    };
    match kind {
        Kind::Journal => {
            let mut lines = Lines(HashSet::new());
            let after = backup.scan(progress, |src| journal::scan(src, &mut lines))?;
            let mut newer = Newer {
                backup: &lines.0,
                counts: RecordCounts::default(),
            };
            let now = opened.scan(progress, |src| journal::scan(src, &mut newer))?;
            let change = journal_change(&now.replay, &after.replay, newer.counts);
            plan.loses_work = !change.active_lost.is_empty() || !change.completed_lost.is_empty();
            plan.journal = Some(change);
        }
        Kind::Snapshot => {
            let read = |o: &Opened<'_>| -> anyhow::Result<Vec<u8>> {
                let mut bytes = Vec::new();
                o.reopen()
                    .and_then(|mut f| f.read_to_end(&mut bytes))
                    .map_err(session::read_error(o.path))?;
                Ok(bytes)
            };
            let change = snapshot_change(&read(&opened)?, &read(&backup)?);
            plan.loses_work = !change.tasks_behind.is_empty();
            plan.snapshot = Some(change);
        }
    }
    if plan.loses_work && !request.allow_loss && !plan.identical {
        let why = refusal(path, &plan);
        if matches!(session.mode, Mode::Apply | Mode::Check) {
            anyhow::bail!(why);
        }
        plan.refused = Some(why);
    }
    let mut outcome = session.outcome(path, kind, plan, removed_temp_files);
    if outcome.plan.identical {
        outcome.note = Some("nothing to do: the file holds the backup's bytes already".into());
        return Ok(outcome);
    }
    if !session.writes() || outcome.plan.refused.is_some() {
        return Ok(outcome);
    }
    failpoint::hit("planned")?;
    let version = backup.version();
    let check = move |f: &mut durable::Reread<'_>| {
        let mut same = CompareSink::new(
            version
                .reopen()
                .map_err(|e| format!("re-reading the backup failed: {e}"))?,
        );
        io::copy(f, &mut same).map_err(|e| format!("re-read failed: {e}"))?;
        match same.finish() {
            Ok((_, true)) => Ok(Publish::Yes),
            Ok(_) => Err("the file read back differs from the backup".into()),
            Err(e) => Err(format!("re-reading the backup failed: {e}")),
        }
    };
    let published = session.publish(
        opened,
        Publication::Rewrite {
            produce: Box::new(move |out: &mut dyn Write| {
                io::copy(&mut version.reopen()?, out).map(|_| ())
            }),
            check: Box::new(check),
            carry_late_appends: kind == Kind::Journal,
        },
    )?;
    published.record(&mut outcome);
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backups_name_names_its_file() {
        let t = |name: &str| target_of(Path::new(name)).map(|p| p.display().to_string());
        assert_eq!(
            t("/out/run1/.work_leases.jsonl.bak.20250807T070140Z").as_deref(),
            Some("/out/run1/.work_leases.jsonl")
        );
        assert_eq!(
            t(".state_tasks.json.bak.20250807T070140Z-3").as_deref(),
            Some(".state_tasks.json")
        );
        for other in [
            ".work_leases.jsonl",
            "j.bak.yesterday",
            ".bak.20250807T070140Z",
            "j.bak.20250807T070140Z.gz",
        ] {
            assert_eq!(t(other), None, "{other}");
        }
    }
}
