//! `compact`: rewrite a journal as the state it replays to
//! (`engine::journal::compaction`), and a digest ledger's files as their
//! distinct valid digests (`operations::ledger_change`), carried out
//! through the write session:
//! the result is compared with the source as it is written, so "already
//! compact" and the size come without another pass.

use std::io::Write;
use std::path::Path;
use std::sync::PoisonError;

use crate::engine::journal::BlockReader;
use crate::engine::journal::HiddenCount;
use crate::engine::journal::compaction::{Measured, scan_observed, write_kept, write_leases};
use crate::operations::exit::Exit;
use crate::operations::findings::journal::measured;
use crate::operations::ledger_change;
use crate::operations::numbers::plural;
use crate::operations::report::{Command, Report, refuse_hidden};
use crate::store::compare::{CompareSink, Tee};
use crate::store::durable::{self, Publish};
use crate::store::failpoint;
use crate::store::format::Kind;
use crate::store::progress::Progress;
use crate::store::session::{
    self, Mode, Opened, Outcome, Publication, Session, Tell, WriteOptions, check_replay,
};

/// What `compact` drops besides what upstream's compaction drops.
#[derive(Clone, Copy, Debug, Default)]
pub struct Drops {
    /// Forget completed ids, exactly as upstream's `compact()` does
    /// (`--drop-completed`).
    pub completed: bool,
    /// Compact even when lines upstream ignores hide records that repair
    /// would bring back (`--drop-hidden`).
    pub hidden: bool,
    /// Write a plan that empties a file holding bytes but no record
    /// upstream reads (`--allow-empty`).
    pub empty: bool,
}

/// The flag that lets compact drop hidden records.
pub const DROP_HIDDEN: &str = "--drop-hidden";
/// The flag that lets compact empty a file with bytes but no record.
pub const ALLOW_EMPTY: &str = "--allow-empty";

/// Whether a plan would empty a file that holds bytes but no record
/// upstream reads (noise, a zero fill): what it holds is then lost to every
/// reader but the backup, so the operator says so first.
fn empties_unread(m: &Measured) -> bool {
    m.plan.bytes_before > 0
        && m.plan.records_after == 0
        && m.superseded == 0
        && m.plan.completed_dropped == 0
}

/// Runs `compact` on PATH (a journal, a state directory, a digest ledger
/// or one of its files): the plan of each journal and of the ledger,
/// carried out when `options` say so. Returns the report and the exit
/// status.
pub fn run(
    path: &Path,
    drops: Drops,
    options: &WriteOptions,
    progress: &dyn Progress,
    tell: Tell<'_>,
) -> anyhow::Result<(Report<Measured>, Exit)> {
    let (run, ledgers) = session::run_paths_and_ledgers(
        std::slice::from_ref(&path.to_path_buf()),
        options,
        tell,
        &[Kind::Journal],
        |session, path, _| compact_file(session, path, drops, progress),
        &mut |session, target| ledger_change::compact(session, target, progress),
    )?;
    let report = Report::with_ledgers(Command::Compact, run, ledgers);
    let exit = Exit::of_write(report.would_change(|m| m.unchanged), report.left_behind());
    Ok((report, exit))
}

/// Plans the compaction of one journal and, in a writing mode, carries it
/// out.
fn compact_file(
    session: &Session<'_>,
    path: &Path,
    drops: Drops,
    progress: &dyn Progress,
) -> anyhow::Result<Outcome<Measured>> {
    let removed_temp_files = session.clean_temps(path);
    let opened = Opened::open(path)?;
    let mut hidden = HiddenCount::default();
    let scan = opened.scan(progress, |src| scan_observed(src, &mut hidden))?;
    let plan = crate::engine::journal::compaction::plan(
        scan.replay,
        scan.summary.lines,
        scan.summary.bytes,
        drops.completed,
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut measured = measured(plan, &scan.summary, hidden.records);
    if hidden.records > 0 && !drops.hidden {
        measured.needs.push(DROP_HIDDEN);
    }
    if empties_unread(&measured) && !drops.empty {
        measured.needs.push(ALLOW_EMPTY);
    }
    // A plan that needs a flag is shown, and written by no mode.
    if session.writes() {
        if measured.needs.contains(&DROP_HIDDEN) {
            refuse_hidden(path, hidden.records)?;
        }
        if measured.needs.contains(&ALLOW_EMPTY) {
            anyhow::bail!(
                "{}: compaction would leave it empty: none of its {} changes the state upstream replays (the backup would keep them); add {ALLOW_EMPTY} to write it. Nothing was changed",
                path.display(),
                plural(measured.plan.lines_before, "line", "lines"),
            );
        }
    }
    let mut outcome = session.outcome(path, Kind::Journal, measured, removed_temp_files);
    // The offsets go once they are written: the check's replay, at its
    // largest when the writing ends, does not meet them in memory.
    let keep_offsets = std::mem::take(&mut outcome.plan.plan.keep_offsets);
    let plan = &outcome.plan.plan;
    // The result is compared with the source as it is written, so the
    // size and "already compact" come without another pass.
    // Set when the writing ends, which the check's re-read waits for.
    let measured = std::sync::Mutex::new((0u64, false));
    let measured_now = || *measured.lock().unwrap_or_else(PoisonError::into_inner);
    let version = opened.version();
    let produce = |out: &mut dyn Write| {
        let mut sink = CompareSink::new(version.reopen()?);
        let mut tee = Tee {
            a: out,
            b: &mut sink,
        };
        write_kept(
            version.reopen()?,
            &keep_offsets,
            &mut tee,
            BlockReader::<&[u8]>::DEFAULT_BLOCK,
        )?;
        drop(keep_offsets);
        write_leases(&plan.leases, &mut tee)?;
        *measured.lock().unwrap_or_else(PoisonError::into_inner) = sink.finish()?;
        Ok(())
    };
    failpoint::hit("planned")?;
    if session.writes() {
        let in_place = session.mode == Mode::Apply;
        let check = move |f: &mut durable::Reread<'_>| {
            check_replay(f, &plan.after)?;
            // In place, a result equal to the file is not published.
            Ok(if in_place && measured_now().1 {
                Publish::No
            } else {
                Publish::Yes
            })
        };
        let published = session.publish(
            opened,
            Publication::Rewrite {
                produce: Box::new(produce),
                check: Box::new(check),
                carry_late_appends: true,
            },
        )?;
        if in_place && !published.written {
            outcome.note = Some("nothing to do: already compact".into());
        }
        published.record(&mut outcome);
    } else {
        produce(&mut std::io::sink()).map_err(session::read_error(path))?;
    }
    let (bytes_after, unchanged) = measured_now();
    outcome.plan.bytes_after = bytes_after;
    outcome.plan.unchanged = unchanged;
    Ok(outcome)
}
