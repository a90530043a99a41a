//! `repair` as a plan: the lossless fixes to run before the master
//! resumes. A torn or zero-filled tail is cut (its bytes stay in the
//! backup), a complete last record gets its missing newline, records glued
//! onto torn fragments go back onto lines of their own, and a byte order
//! mark in front of the first record is removed, so upstream sees those
//! records again. A complete last record followed by the NULs a power loss
//! left loses only the NULs.
//!
//! Nothing is ever appended, and above all no `reclaim`: resume's own
//! reclaims are the only way in-flight work comes back. So the active
//! leases after a repair are those before it plus the ones a salvaged
//! record brings back, less the ones a salvaged `done` completes (the plan
//! names both). A glued `reclaim` that would take a lease away from resume
//! is not applied: its line is left out (it stays in the backup). Pure:
//! reader in, plan out; [`write_result`] streams the repaired file.
//!
//! [`run`] carries the plans out through the write session (`store::session`);
//! the digest ledger's repair (tails sealed, digests moved to the files a
//! shard count names) is `operations::ledger_change`'s, and that of a
//! fenced lease table, named by its root, `operations::repair::table`'s.

pub mod table;

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::engine::journal::StateView;
use crate::engine::journal::{self, Salvage, Salvager, Scan, TailFix, WorkId, write_repaired};
use crate::operations::exit::Exit;
use crate::operations::ledger_change;
use crate::operations::report::{Command, Report};
use crate::operations::table::{is_table_root, tables_in};
use crate::store::durable::ChangeLog;
use crate::store::failpoint;
use crate::store::format::Kind;
use crate::store::progress::Progress;
use crate::store::session::FailedAfterChanges;
use crate::store::session::{self, Opened, Outcome, Publication, Session, Tell, WriteOptions};

/// A repair plan for one journal.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The end of the file.
    pub tail: TailFix,
    /// Records found inside lines upstream ignores.
    pub salvaged: Vec<Salvage>,
    /// Whether the file is rewritten (a salvage, or a missing newline)
    /// rather than sealed in place (a cut). A newline is not written in
    /// place: a power loss on a file system that may persist the new size
    /// before the data could leave the last record followed by a NUL,
    /// which upstream skips.
    pub rewrite: bool,
    /// Ids active after the repair that were not before: leases a salvaged
    /// record brings back, so resume requeues their work.
    pub brought_back: Vec<WorkId>,
    /// Ids active before the repair and completed after it: a salvaged
    /// `done` says their work was finished, so resume does not requeue it.
    pub completed_by_salvage: Vec<WorkId>,
    /// Replay state now.
    pub before: StateView,
    /// Replay state after the repair.
    pub after: StateView,
}

impl Plan {
    /// Whether there is nothing to change.
    pub fn is_noop(&self) -> bool {
        self.tail == TailFix::None && self.salvaged.is_empty()
    }
}

/// Why a repair was not planned: it would take active leases away. The
/// rules above make this impossible; it is checked all the same, because a
/// repair that loses work must never be written.
#[derive(Clone, Debug)]
pub struct WouldLoseWork(pub Vec<WorkId>);

impl std::fmt::Display for WouldLoseWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the repair would take {} active leases away from resume (first {}); nothing was written",
            self.0.len(),
            self.0[0]
        )
    }
}

impl std::error::Error for WouldLoseWork {}

/// Scans a journal once, replaying it as it is and as it will be.
pub fn scan(src: impl journal::Source) -> io::Result<(Scan, Salvager)> {
    let mut salvager = Salvager::new();
    let scan = journal::scan(src, &mut salvager)?;
    Ok((scan, salvager))
}

/// Plans the repair of a scanned journal.
pub fn plan(scan: &Scan, salvager: Salvager) -> Result<Plan, WouldLoseWork> {
    let tail = &scan.summary.tail;
    let (replay, salvaged) = salvager.into_parts();
    let last_line_salvaged = salvaged.last().is_some_and(|s| s.offset == tail.offset);
    // A salvaged last line is rewritten whole, terminator included.
    let tail_fix = if last_line_salvaged {
        TailFix::None
    } else {
        TailFix::of(tail)
    };
    // Without a salvage the file replays as it does now.
    let after_replay = if salvaged.is_empty() {
        &scan.replay
    } else {
        &replay
    };
    let before = &scan.replay;
    let mut brought_back: Vec<WorkId> = after_replay
        .active
        .keys()
        .filter(|id| !before.active.contains_key(id))
        .copied()
        .collect();
    brought_back.sort_unstable();
    let mut completed_by_salvage = Vec::new();
    let mut lost = Vec::new();
    for id in before.active.keys() {
        if !after_replay.active.contains_key(id) {
            if after_replay.completed.contains(id) {
                completed_by_salvage.push(*id);
            } else {
                lost.push(*id);
            }
        }
    }
    if !lost.is_empty() {
        lost.sort_unstable();
        return Err(WouldLoseWork(lost));
    }
    completed_by_salvage.sort_unstable();
    Ok(Plan {
        rewrite: !salvaged.is_empty() || matches!(tail_fix, TailFix::Terminate { .. }),
        tail: tail_fix,
        brought_back,
        completed_by_salvage,
        before: StateView::of(before),
        after: StateView::of(after_replay),
        salvaged,
    })
}

/// Writes the repaired file: the source's lines verbatim, except salvaged
/// lines (each record they hide on a line of its own, but those left out),
/// the torn tail (dropped) and an unterminated last record (terminated).
pub fn write_result(src: impl Read, plan: &Plan, out: &mut dyn Write) -> io::Result<()> {
    write_repaired(src, &plan.tail, &plan.salvaged, out)
}

/// The report of `repair`: each journal's plan, each ledger's change and
/// each fenced lease table's repair.
pub type RepairReport = Report<Plan, table::TableRepair>;

/// Runs `repair` over `paths` (journals, state directories, digest
/// ledgers or their files, fenced lease table roots): the plan of each
/// journal and each ledger, carried out when `options` say so; a ledger is
/// re-sharded to `state_shards` when it is given. The tables are planned
/// first (an `--apply` that `table` does not allow is refused before
/// anything is written), and changed after the state files. Returns the
/// report and the exit status.
pub fn run(
    paths: &[PathBuf],
    state_shards: Option<u32>,
    table: &table::TableRequest,
    options: &WriteOptions,
    progress: &dyn Progress,
    tell: Tell<'_>,
) -> anyhow::Result<(RepairReport, Exit)> {
    let (roots, paths): (Vec<PathBuf>, Vec<PathBuf>) =
        paths.iter().cloned().partition(|p| is_table_root(p));
    if options.output.is_some() && !roots.is_empty() {
        anyhow::bail!(
            "{}: a fenced lease table is repaired in place (its entries are moved, never copied); --output takes a single file PATH. Nothing was written",
            roots[0].display()
        );
    }
    let stamp = (options.stamp)();
    let mut plans = roots
        .iter()
        .map(|root| table::plan(root, table, &stamp))
        .collect::<Result<Vec<_>, _>>()?;
    if options.apply
        && let Some(refusal) = plans.iter().find_map(table::refusal)
    {
        return Err(refusal);
    }
    let (run, ledgers) = if paths.is_empty() {
        (session::Run::empty(options), Vec::new())
    } else {
        session::run_paths_and_ledgers(
            &paths,
            options,
            tell,
            &[Kind::Journal],
            |session, path, _| repair_file(session, path, progress),
            &mut |session, target| ledger_change::repair(session, target, state_shards, progress),
        )?
    };
    if state_shards.is_some() && ledgers.is_empty() {
        anyhow::bail!(
            "--state-shards re-shards the digest ledger (.state_shards), and no PATH holds one; nothing was changed"
        );
    }
    let mut report: RepairReport = Report::with_ledgers(Command::Repair, run, ledgers);
    if options.apply {
        let changes = ChangeLog::default();
        for (root, plan) in roots.iter().zip(plans.iter_mut()) {
            let done = table::apply(root, plan, &changes)
                .map_err(anyhow::Error::from)
                .and_then(|()| table::reread(root, table, plan));
            if let Err(error) = done {
                let mut all = std::mem::take(&mut report.changes);
                all.extend(changes.to_vec());
                let files = serde_json::to_value(&report.files).unwrap_or_default();
                return Err(FailedAfterChanges::after(
                    error,
                    all,
                    Some((report.mode, files)),
                ));
            }
        }
        report.changes.extend(changes.to_vec());
    }
    // A table named by itself too is not "not named".
    let named: Vec<PathBuf> = roots.iter().filter_map(|r| r.canonicalize().ok()).collect();
    let not_named: Vec<String> = paths
        .iter()
        .filter(|p| p.is_dir())
        .flat_map(|p| tables_in(p))
        .filter(|t| t.canonicalize().is_ok_and(|c| !named.contains(&c)))
        .map(|p| p.display().to_string())
        .collect();
    let would_change = report.would_change(Plan::is_noop)
        || (report.mode == session::Mode::Check && plans.iter().any(|p| !p.is_noop()));
    let skipped = plans.iter().any(table::TableRepair::skipped);
    if !roots.is_empty() {
        report.tables = Some(plans);
    }
    if !not_named.is_empty() {
        report.tables_not_named = Some(not_named);
    }
    let exit = if skipped {
        Exit::Refused
    } else {
        Exit::of_write(would_change, report.left_behind())
    };
    Ok((report, exit))
}

/// Plans the repair of one journal and, in a writing mode, carries it out.
fn repair_file(
    session: &Session<'_>,
    path: &Path,
    progress: &dyn Progress,
) -> anyhow::Result<Outcome<Plan>> {
    let removed_temp_files = session.clean_temps(path);
    let opened = Opened::open(path)?;
    let (scan, salvager) = opened.scan(progress, |src| self::scan(src))?;
    let plan =
        self::plan(&scan, salvager).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    drop(scan);
    let mut outcome = session.outcome(path, Kind::Journal, plan, removed_temp_files);
    let plan = &outcome.plan;
    if plan.is_noop() {
        outcome.note = Some("nothing to repair".into());
        return Ok(outcome);
    }
    if !session.writes() {
        return Ok(outcome);
    }
    failpoint::hit("planned")?;
    let version = opened.version();
    let produce = move |out: &mut dyn Write| write_result(version.reopen()?, plan, out);
    // Records glued onto fragments or behind a byte order mark need the
    // file rewritten, and so does a missing newline (see `Plan::rewrite`);
    // a torn tail alone is cut in place.
    let publication = if plan.rewrite {
        Publication::Rewrite {
            produce: Box::new(produce),
            check: session::replays_to(&plan.after),
            carry_late_appends: true,
        }
    } else {
        Publication::Append {
            tail: &plan.tail,
            bytes: &[],
            after: &plan.after,
            copy: Box::new(produce),
        }
    };
    let published = session.publish(opened, publication)?;
    published.record_sealing(&mut outcome, |plan| Some(&mut plan.tail));
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::journal::Hidden;
    use crate::engine::journal::SalvageAction;

    const A: &str = r#"{"attempts":1,"clock":"unix","id":"c178b7e31d5efb37c2e443f52fef64f302d73c6fe5c3e71c78b968b7115c88b4","op":"lease","payload":{"path":"torn-1"},"time":1754550000.0,"worker":1}"#;
    const B: &str = r#"{"attempts":1,"clock":"unix","id":"d877ee1daaa3f2319c2261cb2a5b71e9120717053d64721763ff968b221e0f7b","op":"lease","payload":{"path":"torn-2"},"time":1754550001.0,"worker":2}"#;
    const A_DONE: &str = r#"{"clock":"unix","id":"c178b7e31d5efb37c2e443f52fef64f302d73c6fe5c3e71c78b968b7115c88b4","op":"done","time":1754550002.0}"#;
    const A_RECLAIM: &str = r#"{"clock":"unix","id":"c178b7e31d5efb37c2e443f52fef64f302d73c6fe5c3e71c78b968b7115c88b4","op":"reclaim","time":1754550002.0}"#;

    fn run(input: &str) -> (Plan, String) {
        let (scan, salvager) = scan(input.as_bytes()).unwrap();
        let plan = plan(&scan, salvager).unwrap();
        let mut out = Vec::new();
        write_result(input.as_bytes(), &plan, &mut out).unwrap();
        (plan, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_torn_tail_is_cut_and_no_record_is_appended() {
        let input = format!("{A}\n{{\"attempts\":1,\"clo");
        let (plan, out) = run(&input);
        assert_eq!(
            plan.tail,
            TailFix::Cut {
                offset: A.len() as u64 + 1,
                bytes: 18,
                zero_bytes: 0
            }
        );
        assert_eq!(out, format!("{A}\n"));
        assert_eq!(plan.before, plan.after);
        assert!(!plan.rewrite);
    }

    #[test]
    fn a_complete_last_record_gets_its_newline() {
        let (plan, out) = run(&format!("{A}\n{B}"));
        assert_eq!(
            plan.tail,
            TailFix::Terminate {
                offset: (A.len() + 1 + B.len()) as u64
            }
        );
        assert_eq!(out, format!("{A}\n{B}\n"));
        assert_eq!(plan.before, plan.after);
    }

    #[test]
    fn a_glued_lease_comes_back() {
        let input = format!("{A}\n{{\"attempts\":1,\"clock\":\"unix\",\"id\":\"{B}\n");
        let (plan, out) = run(&input);
        assert_eq!(plan.before.active, 1);
        assert_eq!(plan.after.active, 2);
        assert_eq!(plan.brought_back.len(), 1);
        assert!(plan.rewrite);
        assert_eq!(out, format!("{A}\n{B}\n"));
    }

    #[test]
    fn a_glued_done_completes_and_says_so() {
        let input = format!("{A}\n{{\"attempts\":1,{A_DONE}\n");
        let (plan, out) = run(&input);
        assert_eq!(plan.completed_by_salvage.len(), 1);
        assert_eq!(plan.after.active, 0);
        assert_eq!(plan.after.completed, 1);
        assert_eq!(out, format!("{A}\n{A_DONE}\n"));
    }

    #[test]
    fn a_glued_reclaim_of_an_active_lease_is_left_out() {
        let input = format!("{A}\n{{\"attempts\":1,{A_RECLAIM}\n{B}\n");
        let (plan, out) = run(&input);
        assert_eq!(plan.salvaged[0].action, SalvageAction::LeftOut);
        assert_eq!(plan.before, plan.after, "resume still requeues A");
        assert_eq!(out, format!("{A}\n{B}\n"));
    }

    #[test]
    fn a_bom_in_front_of_the_first_record_is_removed() {
        let input = format!("\u{feff}{A}\n{B}\n");
        let (plan, out) = run(&input);
        assert_eq!(plan.salvaged[0].hidden, Hidden::Bom);
        assert_eq!(plan.after.active, 2);
        assert_eq!(out, format!("{A}\n{B}\n"));
        // Two of them, or one in front of nothing that is a record.
        let (plan, out) = run(&format!("\u{feff}\u{feff}{A}\n"));
        assert_eq!(plan.after.active, 1);
        assert_eq!(out, format!("{A}\n"));
        let (plan, _) = run(&format!("\u{feff}\n{A}\n"));
        assert!(plan.is_noop());
    }

    #[test]
    fn a_complete_record_followed_by_nuls_loses_only_the_nuls() {
        let input = format!("{A}\n{A_DONE}\0\0\0\0");
        let (plan, out) = run(&input);
        assert_eq!(plan.salvaged[0].hidden, Hidden::ZeroFill);
        assert_eq!(plan.salvaged[0].trailing_bytes, 4);
        assert_eq!(plan.tail, TailFix::None);
        assert_eq!(plan.completed_by_salvage.len(), 1);
        assert_eq!(out, format!("{A}\n{A_DONE}\n"));
        // Glued onto a torn fragment and followed by NULs: the record alone
        // stays.
        let (plan, out) = run(&format!("{A}\n{{\"attempts\":1,{A_DONE}\0\0"));
        assert_eq!(plan.salvaged[0].hidden, Hidden::Glued);
        assert_eq!(out, format!("{A}\n{A_DONE}\n"));
        // Only NULs: the whole line goes.
        let (plan, out) = run(&format!("{A}\n\0\0\0"));
        assert!(plan.salvaged.is_empty());
        assert_eq!(out, format!("{A}\n"));
    }

    #[test]
    fn records_glued_one_after_another_all_come_back() {
        // A complete record whose newline is missing, with the next record
        // appended onto it (what upstream's append does to an unterminated
        // tail), and a third one glued behind a torn fragment.
        let input = format!("{A}{B}{{\"attempts\":1,{A_DONE}\n");
        let (plan, out) = run(&input);
        let hidden: Vec<Hidden> = plan.salvaged.iter().map(|s| s.hidden).collect();
        assert_eq!(
            hidden,
            [
                Hidden::MissingNewline,
                Hidden::MissingNewline,
                Hidden::Glued
            ]
        );
        assert_eq!(out, format!("{A}\n{B}\n{A_DONE}\n"));
        assert_eq!(plan.brought_back.len(), 1, "B; A is completed");
        assert_eq!(plan.after.completed, 1);
        let (plan, out) = run(&format!("{A}{B}\n"));
        let hidden: Vec<Hidden> = plan.salvaged.iter().map(|s| s.hidden).collect();
        assert_eq!(hidden, [Hidden::MissingNewline, Hidden::Appended]);
        assert_eq!(out, format!("{A}\n{B}\n"));
    }

    #[test]
    fn a_record_followed_by_a_torn_append_keeps_the_record() {
        let input = format!("{A}\n{B}{{\"attempts\":1,\"clo");
        let (plan, out) = run(&input);
        assert_eq!(plan.salvaged.len(), 1);
        assert_eq!(plan.salvaged[0].hidden, Hidden::MissingNewline);
        assert_eq!(plan.tail, TailFix::None);
        assert_eq!(plan.brought_back.len(), 1);
        assert_eq!(out, format!("{A}\n{B}\n"));
    }

    #[test]
    fn a_clean_journal_needs_nothing() {
        let input = format!("{A}\n{B}\n");
        let (plan, out) = run(&input);
        assert!(plan.is_noop());
        assert_eq!(out, input);
    }
}
