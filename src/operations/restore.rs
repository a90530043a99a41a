//! `restore`: the work a `recover --discard` dropped, brought back from its
//! export by appending each exported lease to the journal again, under the
//! master's lock, after sealing the tail, through the write session.
//!
//! The master's resume requeues exactly the leases active when it starts,
//! so a lease appended again is requeued once more; the plan must never
//! make it requeue work twice or work that was finished. An exported lease
//! is restored only when the journal's last lease of its id is that very
//! lease (same time, worker, attempts and clock: the id is its payload's
//! hash) and the id is neither active nor completed now: the discard's
//! reclaim is then the last thing that happened to it. Otherwise it is
//! skipped, and the plan says why: active now (a restore already brought
//! it back, or the master leased it again), completed (its work is done),
//! leased again since (resume or a dispatch already ran it anew), or never
//! leased in this journal. A second run restores nothing.
//!
//! The export is checked whole before anything is locked: every line must
//! be a lease upstream would replay, each id once; anything else is
//! refused, naming the line.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::engine::journal::{
    self, Clock, Effect, LineEvent, LineKind, Observer, Op, Replay, StateView, Summary, TailFix,
    WorkId, encode, payload_facts,
};
use crate::engine::json::PyInt;
use crate::operations::exit::Exit;
use crate::operations::numbers::plural;
use crate::operations::report::{Command, Report};
use crate::store::failpoint;
use crate::store::format::Kind;
use crate::store::open;
use crate::store::path::companion_of;
use crate::store::progress::Progress;
use crate::store::session::{self, Opened, Outcome, Publication, Session, Tell, WriteOptions};

/// What happens to one exported lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fate {
    /// Appended again: the discard's reclaim is the last thing that
    /// happened to it.
    Restore,
    /// Skipped: active now; appending it would only replace that lease.
    Active,
    /// Skipped: completed since; resume would run finished work again.
    Completed,
    /// Skipped: leased again since it was discarded (resume requeued it or
    /// the master dispatched it anew); restoring would run it twice.
    LeasedAgain,
    /// Skipped: this journal never leased it.
    NotInJournal,
}

/// One lease of the export and what happens to it.
#[derive(Clone, Debug, Serialize)]
pub struct ExportLease {
    /// Its line in the export.
    pub line: u64,
    /// Work id.
    pub id: WorkId,
    /// Owner rank.
    pub worker: PyInt,
    /// Clock domain.
    pub clock: Clock,
    /// Lease time (the time it was first leased at).
    pub time: f64,
    /// Attempts counter.
    pub attempts: PyInt,
    /// The payload's `path`, when it is a string.
    pub path: Option<String>,
    /// What happens to it.
    pub fate: Fate,
    /// The line of the journal's last lease of this id, if any.
    pub journal_line: Option<u64>,
    /// The lease as upstream's compaction writes it.
    #[serde(skip)]
    pub record: Vec<u8>,
}

/// A restore of one journal.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The export the leases come from.
    pub export: String,
    /// The end of the journal, sealed before anything is appended
    /// (`none` when nothing is restored: the journal is not touched).
    pub tail: TailFix,
    /// Every exported lease, in the export's order.
    pub leases: Vec<ExportLease>,
    /// How many are restored.
    pub restored: usize,
    /// How many are skipped.
    pub skipped: usize,
    /// Bytes appended.
    pub append_bytes: usize,
    /// Replay state now.
    pub before: StateView,
    /// Replay state after the restore.
    pub after: StateView,
    /// The lease records appended.
    #[serde(skip)]
    pub append: Vec<u8>,
}

impl Plan {
    /// Whether there is nothing to change.
    pub fn is_noop(&self) -> bool {
        self.restored == 0
    }
}

/// The journal an export's name names: `<journal>.discarded.<UTC>.jsonl`
/// (or `…<UTC>-<n>.jsonl`, for a second export of the same second) in
/// the same directory; `None` for any other name.
pub fn journal_of(export: &Path) -> Option<PathBuf> {
    companion_of(export, ".discarded.", ".jsonl")
}

/// The export's leases, each line checked to be a lease upstream would
/// replay, each id once; or the line that is not, and why.
pub fn read_export(bytes: &[u8]) -> Result<Vec<ExportLease>, (u64, String)> {
    struct Reader {
        leases: Vec<ExportLease>,
        first_line: HashMap<WorkId, u64>,
        error: Option<(u64, String)>,
    }
    impl Observer for Reader {
        fn line(&mut self, event: &LineEvent<'_>) {
            if self.error.is_some() {
                return;
            }
            let record = match &event.classified.kind {
                LineKind::Record(record) => record,
                _ => {
                    let why = event
                        .classified
                        .describe_ignored()
                        .unwrap_or_else(|| "not a record".into());
                    self.error = Some((event.number, why));
                    return;
                }
            };
            let why = match (&record.op, event.effect) {
                (Op::Lease(Ok(lease)), Some(Effect::Activated)) => {
                    let payload = lease.payload.bytes(event.content);
                    self.first_line.insert(record.id, event.number);
                    self.leases.push(ExportLease {
                        line: event.number,
                        id: record.id,
                        worker: lease.worker.clone(),
                        clock: lease.clock,
                        time: lease.time,
                        attempts: lease.attempts.clone(),
                        path: payload_facts(payload).0,
                        fate: Fate::NotInJournal,
                        journal_line: None,
                        record: encode::lease_line(
                            &record.id,
                            &lease.worker,
                            lease.time,
                            &lease.attempts,
                            lease.clock,
                            payload,
                        ),
                    });
                    return;
                }
                (Op::Lease(Ok(_)), _) => format!(
                    "lease {} appears twice (line {} too)",
                    record.id.short(),
                    self.first_line.get(&record.id).copied().unwrap_or_default()
                ),
                (Op::Lease(Err(rejection)), _) => {
                    format!("a lease upstream ignores ({rejection})")
                }
                (op, _) => format!("a {} record, not a lease", op.name()),
            };
            self.error = Some((event.number, why));
        }
    }
    let mut reader = Reader {
        leases: Vec::new(),
        first_line: HashMap::new(),
        error: None,
    };
    journal::scan(bytes, &mut reader).map_err(|e| (0, e.to_string()))?;
    if let Some(error) = reader.error {
        return Err(error);
    }
    if reader.leases.is_empty() {
        return Err((1, "holds no lease".into()));
    }
    Ok(reader.leases)
}

/// The journal's last lease of each exported id, as a scan meets them.
struct LastLeases(HashMap<WorkId, Option<Seen>>);

/// A lease as the journal last held it.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    line: u64,
    worker: PyInt,
    time: f64,
    attempts: PyInt,
    clock: Clock,
}

impl Observer for LastLeases {
    fn line(&mut self, event: &LineEvent<'_>) {
        let (LineKind::Record(record), Some(effect)) = (&event.classified.kind, event.effect)
        else {
            return;
        };
        if !matches!(
            effect,
            Effect::Activated | Effect::Reactivated | Effect::TookOver { .. }
        ) {
            return;
        }
        if let Op::Lease(Ok(lease)) = &record.op
            && let Some(slot) = self.0.get_mut(&record.id)
        {
            *slot = Some(Seen {
                line: event.number,
                worker: lease.worker.clone(),
                time: lease.time,
                attempts: lease.attempts.clone(),
                clock: lease.clock,
            });
        }
    }
}

/// Plans the restore of `leases` into a journal scanned as `replay` and
/// `summary`, whose last lease of each id `seen` holds; `replay` becomes
/// the state after it. Refused when no exported id was ever leased in the
/// journal: the export is not this journal's.
fn plan(
    replay: &mut Replay,
    summary: &Summary,
    export: &Path,
    mut leases: Vec<ExportLease>,
    seen: LastLeases,
) -> Result<Plan, String> {
    let before = StateView::of(replay);
    for lease in &mut leases {
        let last = seen.0.get(&lease.id).cloned().flatten();
        lease.journal_line = last.as_ref().map(|s| s.line);
        lease.fate = if replay.active.contains_key(&lease.id) {
            Fate::Active
        } else if replay.completed.contains(&lease.id) {
            Fate::Completed
        } else {
            match last {
                None => Fate::NotInJournal,
                Some(s)
                    if s.worker == lease.worker
                        && s.time == lease.time
                        && s.attempts == lease.attempts
                        && s.clock == lease.clock =>
                {
                    Fate::Restore
                }
                Some(_) => Fate::LeasedAgain,
            }
        };
    }
    if leases.iter().all(|l| l.fate == Fate::NotInJournal) {
        return Err(format!(
            "{}: line {}: lease {} was never leased in this journal, nor {}: it is not a discard export of it (or the journal was compacted since, which forgets reclaimed leases); nothing was changed",
            export.display(),
            leases[0].line,
            leases[0].id.short(),
            if leases.len() == 1 {
                "any other".to_string()
            } else {
                format!(
                    "any other of the export's {}",
                    plural(leases.len() as u64, "lease", "leases")
                )
            }
        ));
    }
    let mut append = Vec::new();
    let mut line = summary.lines;
    for lease in leases.iter().filter(|l| l.fate == Fate::Restore) {
        let offset = summary.bytes + append.len() as u64;
        line += 1;
        let content = &lease.record[..lease.record.len() - 1];
        if let LineKind::Record(record) = journal::classify(content).kind {
            replay.apply(&record, content, line, offset);
        }
        append.extend_from_slice(&lease.record);
    }
    let restored = leases.iter().filter(|l| l.fate == Fate::Restore).count();
    Ok(Plan {
        export: export.display().to_string(),
        tail: if restored == 0 {
            TailFix::None
        } else {
            TailFix::of(&summary.tail)
        },
        skipped: leases.len() - restored,
        restored,
        leases,
        append_bytes: append.len(),
        before,
        after: StateView::of(replay),
        append,
    })
}

/// Runs `restore`: the leases of `export` appended to `journal` (else the
/// journal its name names), planned, and carried out when `options` say
/// so. Returns the report and the exit status.
pub fn run(
    export: &Path,
    journal: Option<&Path>,
    options: &WriteOptions,
    progress: &dyn Progress,
    tell: Tell<'_>,
) -> anyhow::Result<(Report<Plan>, Exit)> {
    let journal = match journal {
        Some(j) => j.to_path_buf(),
        None => journal_of(export).ok_or_else(|| {
            anyhow::anyhow!(
                "{}: the name does not say which journal it belongs to (<journal>.discarded.<UTC>.jsonl); name it: leasejournal restore EXPORT JOURNAL. Nothing was changed",
                export.display()
            )
        })?,
    };
    if journal.is_dir() {
        anyhow::bail!(
            "{}: is a directory; restore takes the journal the export came from. Nothing was changed",
            journal.display()
        );
    }
    if !journal.exists() {
        anyhow::bail!(
            "{}: no such journal (the export {} belongs to it); name the journal: leasejournal restore EXPORT JOURNAL. Nothing was changed",
            journal.display(),
            export.display()
        );
    }
    let (mut file, _) = open::open_regular(export)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(session::read_error(export))?;
    let leases = read_export(&bytes).map_err(|(line, why)| {
        anyhow::anyhow!(
            "{}: line {line}: {why}: not a discard export (one lease upstream replays per line, each id once); nothing was changed",
            export.display()
        )
    })?;
    let run = session::run_paths(
        std::slice::from_ref(&journal),
        options,
        tell,
        &[Kind::Journal],
        |session, path, _| restore_file(session, path, export, leases.clone(), progress),
    )?;
    let exit = Exit::of_write(
        session::would_change(&run, Plan::is_noop),
        session::left_behind(&run),
    );
    Ok((Report::of(Command::Restore, run), exit))
}

/// Plans the restore into one journal and, in a writing mode, carries it
/// out.
fn restore_file(
    session: &Session<'_>,
    path: &Path,
    export: &Path,
    leases: Vec<ExportLease>,
    progress: &dyn Progress,
) -> anyhow::Result<Outcome<Plan>> {
    let removed_temp_files = session.clean_temps(path);
    let opened = Opened::open(path)?;
    let mut seen = LastLeases(leases.iter().map(|l| (l.id, None)).collect());
    let mut scan = opened.scan(progress, |src| journal::scan(src, &mut seen))?;
    let plan = plan(&mut scan.replay, &scan.summary, export, leases, seen)
        .map_err(|e| anyhow::anyhow!(e))?;
    drop(scan);
    let mut outcome = session.outcome(path, Kind::Journal, plan, removed_temp_files);
    let plan = &outcome.plan;
    if plan.is_noop() {
        outcome.note = Some("nothing to restore: no exported lease can come back".into());
        return Ok(outcome);
    }
    if !session.writes() {
        return Ok(outcome);
    }
    failpoint::hit("planned")?;
    let version = opened.version();
    let published = session.publish(
        opened,
        Publication::sealed_append(version, &plan.tail, &plan.append, &plan.after),
    )?;
    published.record_sealing(&mut outcome, |plan| Some(&mut plan.tail));
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exports_name_names_its_journal() {
        let j = |name: &str| journal_of(Path::new(name)).map(|p| p.display().to_string());
        assert_eq!(
            j("/out/run1/.work_leases.jsonl.discarded.20250807T070140Z.jsonl").as_deref(),
            Some("/out/run1/.work_leases.jsonl")
        );
        assert_eq!(
            j("d.jsonl.discarded.20250807T070140Z-2.jsonl").as_deref(),
            Some("d.jsonl")
        );
        for other in [
            "export.jsonl",
            "j.discarded.2025.jsonl",
            ".discarded.20250807T070140Z.jsonl",
            "j.discarded.20250807T070140Z-x.jsonl",
        ] {
            assert_eq!(j(other), None, "{other}");
        }
    }

    #[test]
    fn an_export_holds_leases_only_each_id_once() {
        let lease = |path: &str| {
            let payload = format!("{{\"path\":\"{path}\"}}");
            encode::lease_line(
                &WorkId::of_canonical(payload.as_bytes()),
                &PyInt::Small(1),
                5.0,
                &PyInt::Small(1),
                Clock::Unix,
                payload.as_bytes(),
            )
        };
        let mut good = lease("a");
        good.extend(lease("b"));
        assert_eq!(read_export(&good).unwrap().len(), 2);
        let mut twice = good.clone();
        twice.extend(lease("a"));
        assert_eq!(
            read_export(&twice).unwrap_err().0,
            3,
            "the same lease twice"
        );
        let mut done = good.clone();
        let id = WorkId::of_canonical(br#"{"path":"a"}"#);
        done.extend(encode::marker_line("done", &id, Clock::Unix, 6.0));
        assert_eq!(
            read_export(&done).unwrap_err(),
            (3, "a done record, not a lease".into())
        );
        assert_eq!(read_export(b"{oops\n").unwrap_err().0, 1);
        assert_eq!(read_export(b"").unwrap_err().1, "holds no lease");
    }
}
