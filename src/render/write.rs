//! Human output of the writing subcommands: the plan, and what was done.

use std::io::{self, Write};

use super::{Column, Styles, age, count, how, plural, printable, table};
use crate::engine::journal::StateView;
use crate::engine::journal::TailFix;
use crate::engine::journal::compaction::Measured;
use crate::engine::journal::{Clock, TailState};
use crate::engine::journal::{Hidden, SalvageAction};
use crate::engine::journal::{Reclaim, ResumeOutcome, short_id};
use crate::operations::compact::{ALLOW_EMPTY, DROP_HIDDEN};
use crate::operations::migrate::{Migration, SnapshotPlan};
use crate::operations::recover::{Discard, ForecastReport, Forecasts};
use crate::operations::repair;
use crate::operations::report::Report;
use crate::store::session::{Mode, Outcome};

pub(super) fn header<P: serde::Serialize>(
    out: &mut dyn Write,
    command: &str,
    mode: Mode,
    o: &Outcome<P>,
    s: &Styles,
) -> io::Result<()> {
    let how = how(mode, "file", s);
    writeln!(out, "{} {}  ({how})", s.bold(command), o.path)?;
    if let Some(link) = &o.link {
        writeln!(out, "  link        {} is a symbolic link to it", link.path)?;
        if let Some(why) = &link.refused {
            let refused = format!("--apply refuses to write through it: {why}");
            writeln!(out, "  refused     {}", s.warn(&refused))?;
        }
    }
    for t in &o.removed_temp_files {
        writeln!(out, "  cleaned     removed stale temporary file {t}")?;
    }
    for t in &o.stale_temp_files_left {
        let left = format!("{}: {}; it stays", t.path, t.error);
        writeln!(out, "  left        {}", s.warn(&left))?;
    }
    Ok(())
}

pub(super) fn footer<P: serde::Serialize>(
    out: &mut dyn Write,
    o: &Outcome<P>,
    s: &Styles,
) -> io::Result<()> {
    if let Some(note) = &o.note {
        writeln!(out, "  result      {}", s.ok(note))?;
    }
    if o.written {
        let mut parts = vec![s.ok("written, re-read and confirmed")];
        if let Some(b) = &o.backup {
            parts.push(format!("backup {b}"));
        }
        if let Some(p) = &o.output {
            parts.push(format!("output {p}"));
        }
        writeln!(out, "  result      {}", parts.join("; "))?;
    }
    if let Some(c) = &o.late_appends_carried {
        writeln!(
            out,
            "  carried     {}",
            s.warn(&format!(
                "{} ({}) that another process appended during the change, ignoring {}: stop it",
                plural(c.lines, "line", "lines"),
                plural(c.bytes, "byte", "bytes"),
                crate::store::lock::MASTER_LOCK
            ))
        )?;
    }
    Ok(())
}

/// The `state` line of a report: counts before and after.
pub(super) fn state_line(
    out: &mut dyn Write,
    before: &StateView,
    after: &StateView,
) -> io::Result<()> {
    writeln!(
        out,
        "  state       {} active, {} completed → {} active, {} completed",
        count(before.active as u64),
        count(before.completed as u64),
        count(after.active as u64),
        count(after.completed as u64)
    )
}

pub(super) fn states(out: &mut dyn Write, before: &StateView, after: &StateView) -> io::Result<()> {
    state_line(out, before, after)?;
    writeln!(
        out,
        "  digest      {} → {}",
        &before.digest[..16],
        &after.digest[..16]
    )
}

fn reclaim_table(out: &mut dyn Write, reclaims: &[Reclaim], s: &Styles) -> io::Result<()> {
    if reclaims.is_empty() {
        return Ok(());
    }
    let mut t = table(&LEASE_COLUMNS, s);
    for r in reclaims {
        t.add_row(lease_cells(r, s));
    }
    writeln!(out, "{t}")
}

/// The columns of a lease to reclaim, the cells of [`lease_cells`].
const LEASE_COLUMNS: [Column<'static>; 7] = [
    Column::whole("id"),
    Column::spare("worker", 4),
    Column::spare("clock", 3),
    Column::whole("age"),
    Column::spare("attempts", 1),
    Column::spare("line", 2),
    Column::shorten("path"),
];

fn lease_cells(r: &Reclaim, s: &Styles) -> Vec<String> {
    vec![
        r.id.short(),
        r.worker.to_string(),
        match r.clock {
            Clock::Unix => "unix".to_string(),
            Clock::Legacy => s.warn("legacy"),
        },
        r.age_seconds.map(age).unwrap_or_else(|| "unknown".into()),
        r.attempts.to_string(),
        r.line.to_string(),
        r.path
            .as_deref()
            .map_or("-".into(), |p| printable(p).into_owned()),
    ]
}

pub(super) fn tail_line(
    out: &mut dyn Write,
    tail: &TailFix,
    kept: &str,
    s: &Styles,
) -> io::Result<()> {
    let text = match *tail {
        TailFix::None => "clean".to_string(),
        TailFix::Cut {
            offset,
            bytes,
            zero_bytes,
        } => s.warn(&format!(
            "cut {} at offset {offset}{} ({kept})",
            plural(bytes, "torn byte", "torn bytes"),
            if zero_bytes > 0 {
                format!(", {} of them NUL", count(zero_bytes))
            } else {
                String::new()
            }
        )),
        TailFix::Terminate { offset } => format!("add the missing newline at offset {offset}"),
    };
    writeln!(out, "  tail        {text}")
}

/// Where the bytes a change removes stay.
pub(super) fn kept<P: serde::Serialize>(mode: Mode, o: &Outcome<P>) -> &'static str {
    match mode {
        Mode::Output => "the source file keeps them",
        _ if o.keeps_backup => "the backup keeps them",
        _ => "--no-backup: they are not kept",
    }
}

fn repair_body(out: &mut dyn Write, p: &repair::Plan, kept: &str, s: &Styles) -> io::Result<()> {
    tail_line(out, &p.tail, kept, s)?;
    for g in &p.salvaged {
        let hidden = match g.hidden {
            Hidden::Glued => format!(
                "glued onto a torn fragment of {}",
                plural(g.fragment_bytes as u64, "byte", "bytes")
            ),
            Hidden::Bom => "behind a byte order mark".to_string(),
            Hidden::ZeroFill => format!(
                "followed by {}",
                plural(g.trailing_bytes as u64, "NUL byte", "NUL bytes")
            ),
            Hidden::MissingNewline => "complete, but its newline is missing".to_string(),
            Hidden::Appended => "appended onto the record before it".to_string(),
        };
        let action = match g.action {
            SalvageAction::Restored => "put back on a line of its own".to_string(),
            SalvageAction::LeftOut => {
                s.warn("left out: it would take an active lease away from resume")
            }
        };
        writeln!(
            out,
            "  salvage     line {}: {} {} {hidden}: {action}",
            g.line,
            g.op,
            g.id.short(),
        )?;
    }
    for id in &p.brought_back {
        writeln!(
            out,
            "  brings back {}: active again, resume requeues its work",
            id.short()
        )?;
    }
    for id in &p.completed_by_salvage {
        writeln!(
            out,
            "  completes   {}: a salvaged done says its work was finished; resume does not requeue it",
            id.short()
        )?;
    }
    writeln!(out, "  reclaims    none (repair never reclaims a lease)")?;
    states(out, &p.before, &p.after)
}

/// Writes a repair report.
pub fn repair(out: &mut dyn Write, r: &repair::RepairReport, s: &Styles) -> io::Result<()> {
    for o in &r.files {
        header(out, "repair", r.mode, o, s)?;
        repair_body(out, &o.plan, kept(r.mode, o), s)?;
        footer(out, o, s)?;
    }
    for l in r.ledgers.iter().flatten() {
        super::ledger_change::ledger(out, "repair", r.mode, l, s)?;
    }
    for t in r.tables.iter().flatten() {
        super::table_repair::table(out, r.mode, t, s)?;
    }
    for t in r.tables_not_named.iter().flatten() {
        super::table_repair::not_named(out, t)?;
    }
    Ok(())
}

/// Writes the forecast of one path or of several (a blank line between
/// two), each table at most `limit` rows.
pub fn forecasts(
    out: &mut dyn Write,
    r: &Forecasts,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    match r {
        Forecasts::One(one) => forecast(out, one, limit, s),
        Forecasts::Many(many) => {
            for (i, one) in many.forecasts.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                forecast(out, one, limit, s)?;
            }
            Ok(())
        }
    }
}

/// Writes a recover forecast.
pub fn forecast(
    out: &mut dyn Write,
    r: &ForecastReport,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    for (i, t) in r.tables.iter().enumerate() {
        if i > 0 || !r.files.is_empty() {
            writeln!(out)?;
        }
        super::lease_table::forecast(out, t, limit, s)?;
    }
    if !r.tables.is_empty() && r.files.is_empty() {
        return Ok(());
    }
    if r.files.is_empty() {
        writeln!(
            out,
            "{} no journal: resume has no lease to reclaim and nothing to requeue",
            s.bold("recover")
        )?;
    }
    for f in &r.files {
        let p = &f.forecast;
        writeln!(
            out,
            "{} {}  (forecast of the master's resume; nothing is written)",
            s.bold("recover"),
            f.path
        )?;
        if let Some(lock) = r.master_lock.as_ref().filter(|l| l.held == Some(true)) {
            writeln!(
                out,
                "  master lock {}",
                s.error(&format!(
                    "held by {}: a master is running, so this journal is changing under the forecast (resume forecasts a stopped master's files)",
                    lock.processes
                        .iter()
                        .map(crate::store::lock::Holder::describe)
                        .collect::<Vec<_>>()
                        .join("; ")
                ))
            )?;
        }
        writeln!(
            out,
            "  state       {} active, {} completed",
            count(f.before.active as u64),
            count(f.before.completed as u64)
        )?;
        writeln!(
            out,
            "  resume      reclaims {}, requeues {}{}, drops {}{}",
            plural(p.reclaims.len() as u64, "lease", "leases"),
            count(p.requeued as u64),
            if p.requeued_if_continuation_valid > 0 {
                format!(
                    " (and {} if the master accepts its continuation)",
                    count(p.requeued_if_continuation_valid as u64)
                )
            } else {
                String::new()
            },
            count(p.dropped as u64),
            if p.duplicates > 0 {
                format!(", queues {} twice", count(p.duplicates as u64))
            } else {
                String::new()
            }
        )?;
        if !p.reclaims.is_empty() {
            // The rescan's column, where a ledger judged it.
            let rescans = p.reclaims.iter().any(|q| q.rescan.is_some());
            let rescan_column = [Column::shorten("rescan")];
            let mut t = table(
                &[
                    LEASE_COLUMNS.as_slice(),
                    &[Column::shorten("on resume")],
                    if rescans { &rescan_column } else { &[] },
                ]
                .concat(),
                s,
            );
            let shown = limit.map_or(p.reclaims.len(), |n| n.min(p.reclaims.len()));
            for q in &p.reclaims[..shown] {
                let mut cells = lease_cells(&q.lease, s);
                let mut fate = match &q.outcome {
                    ResumeOutcome::Requeued => match q.item.as_ref().map(|i| i.fields) {
                        Some(6) => "requeued with its continuation".into(),
                        Some(5) => "requeued with its actions and schedule".into(),
                        _ => "requeued".into(),
                    },
                    ResumeOutcome::RequeuedIfContinuationValid => {
                        s.warn("requeued if its continuation is valid")
                    }
                    ResumeOutcome::Dropped { reason } => s.error(&format!("dropped: {reason}")),
                };
                if !q.not_restored.is_empty() {
                    fate.push_str(&format!("; loses {}", q.not_restored.join(", ")));
                }
                if let Some((file, id)) = &q.duplicate_of {
                    let name = std::path::Path::new(file)
                        .file_name()
                        .map_or(file.clone(), |n| n.to_string_lossy().into_owned());
                    fate.push_str(
                        &s.warn(&format!("; queued twice (also {} in {name})", id.short())),
                    );
                }
                cells.push(fate);
                if let Some(rescan) = &q.rescan {
                    let requeued = !matches!(q.outcome, ResumeOutcome::Dropped { .. });
                    cells.push(super::ledger::rescan_cell(rescan, requeued, s));
                }
                t.add_row(cells);
            }
            writeln!(out, "{t}")?;
            super::lease_table::more_rows(
                out,
                shown,
                p.reclaims.len(),
                "leases, in resume's order",
            )?;
        }
        if p.hidden_records > 0 {
            writeln!(
                out,
                "  hidden      {}",
                s.error(&format!(
                    "{} in lines upstream ignores: resume does not see them and cannot requeue their work; leasejournal repair --apply {} brings them back",
                    plural(p.hidden_records as u64, "record", "records"),
                    crate::store::path::shell_quote(&f.path)
                ))
            )?;
        }
        let first = &p.first_append;
        let what = match first.id {
            Some(id) => format!("the reclaim of {}", id.short()),
            None => "the first dispatch's lease".to_string(),
        };
        if first.glues {
            let onto = match p.tail.state {
                TailState::Unterminated => "onto the last record, which has no newline,",
                _ => "onto the torn last line",
            };
            writeln!(
                out,
                "  first       {}",
                s.error(&format!(
                    "{what} glues {onto} and is lost on the next load: run leasejournal repair --apply {} first",
                    crate::store::path::shell_quote(&f.path)
                ))
            )?;
        } else {
            writeln!(out, "  first       {what}, on a line of its own")?;
        }
    }
    if let Some(ledger) = &r.ledger {
        super::ledger::view(out, ledger, s)?;
    }
    Ok(())
}

/// Writes a `recover --discard` report.
pub fn discard(out: &mut dyn Write, r: &Report<Discard>, s: &Styles) -> io::Result<()> {
    for o in &r.files {
        header(out, "recover --discard", r.mode, o, s)?;
        let p = &o.plan;
        tail_line(out, &p.tail, kept(r.mode, o), s)?;
        writeln!(
            out,
            "  discard     {}{}",
            s.warn(&plural(p.reclaims.len() as u64, "lease", "leases")),
            if p.reclaims.is_empty() {
                ""
            } else {
                ", in this order (their work is dropped):"
            }
        )?;
        reclaim_table(out, &p.reclaims, s)?;
        if let Some(export) = &p.export {
            writeln!(
                out,
                "  export      {export} (each discarded lease; leasejournal restore --apply with it, before resuming, brings the work back)"
            )?;
        }
        if p.append_bytes > 0 {
            writeln!(
                out,
                "  append      {}, {}",
                plural(p.reclaims.len() as u64, "reclaim record", "reclaim records"),
                plural(p.append_bytes as u64, "byte", "bytes")
            )?;
        }
        states(out, &p.before, &p.after)?;
        footer(out, o, s)?;
    }
    Ok(())
}

fn compact_body(out: &mut dyn Write, m: &Measured, s: &Styles) -> io::Result<()> {
    let p = &m.plan;
    writeln!(
        out,
        "  size        {}, {} → {}, {}{}",
        plural(p.bytes_before, "byte", "bytes"),
        plural(p.lines_before, "line", "lines"),
        plural(m.bytes_after, "byte", "bytes"),
        plural(p.records_after, "record", "records"),
        if m.unchanged {
            " (already compact)"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "  keeps       {}",
        plural(p.active as u64, "active lease", "active leases")
    )?;
    if p.drop_completed {
        writeln!(
            out,
            "  forgets     {}",
            s.warn(&format!(
                "{} completed ids (upstream's behaviour: they can be dispatched again)",
                count(p.completed_dropped as u64)
            ))
        )?;
    } else {
        writeln!(
            out,
            "  keeps       {} (lease + done each)",
            plural(p.completed_kept as u64, "completed id", "completed ids")
        )?;
    }
    if m.superseded > 0 {
        writeln!(
            out,
            "  drops       {} (earlier leases of an id, reclaims: the result holds their effect)",
            plural(m.superseded, "superseded record", "superseded records")
        )?;
    }
    if !m.dropped.is_empty() {
        let lines: u64 = m.dropped.iter().map(|d| d.lines).sum();
        let by_code: Vec<String> = m
            .dropped
            .iter()
            .map(|d| format!("{} {}", count(d.lines), d.code))
            .collect();
        writeln!(
            out,
            "  drops       {} upstream ignores: {}",
            plural(lines, "line", "lines"),
            by_code.join(", ")
        )?;
    }
    if m.hidden_dropped > 0 {
        let hidden = plural(m.hidden_dropped as u64, "record", "records");
        let them = if m.hidden_dropped == 1 { "it" } else { "them" };
        let line = if m.needs.contains(&DROP_HIDDEN) {
            format!(
                "{hidden} hidden in lines upstream ignores; leasejournal repair brings {them} back: run it first, or add --drop-hidden to drop {them}"
            )
        } else {
            format!(
                "{hidden} hidden in lines upstream ignores (--drop-hidden; leasejournal repair would bring {them} back)"
            )
        };
        writeln!(out, "  drops       {}", s.warn(&line))?;
    }
    if m.needs.contains(&ALLOW_EMPTY) {
        writeln!(
            out,
            "  empties     {}",
            s.warn("the file: no line of it changes the state upstream replays; add --allow-empty to write it")
        )?;
    }
    states(out, &p.before, &p.after)
}

/// Writes a compact report.
pub fn compact(out: &mut dyn Write, r: &Report<Measured>, s: &Styles) -> io::Result<()> {
    for o in &r.files {
        header(out, "compact", r.mode, o, s)?;
        compact_body(out, &o.plan, s)?;
        footer(out, o, s)?;
    }
    for l in r.ledgers.iter().flatten() {
        super::ledger_change::ledger(out, "compact", r.mode, l, s)?;
    }
    Ok(())
}

fn snapshot_body(out: &mut dyn Write, p: &SnapshotPlan) -> io::Result<()> {
    if !p.needed {
        return writeln!(out, "  clock       unix already");
    }
    writeln!(
        out,
        "  rewrite     {} bytes → {} bytes, as upstream writes it after restore",
        count(p.bytes_before as u64),
        count(p.bytes_after as u64)
    )?;
    for z in &p.zeroed {
        writeln!(
            out,
            "  zeroes      {} {} (was {})",
            short_id(&z.task_id),
            z.field,
            z.before
        )?;
    }
    for d in &p.dropped {
        writeln!(
            out,
            "  drops       {}[{}]: {}",
            d.list.name(),
            d.index,
            d.reason
        )?;
    }
    Ok(())
}

fn legacy_body(out: &mut dyn Write, legacy: &[Reclaim], s: &Styles) -> io::Result<()> {
    writeln!(
        out,
        "  legacy      {}{}",
        plural(legacy.len() as u64, "active lease", "active leases"),
        match legacy.len() {
            0 => "",
            1 =>
                " off the unix clock: resume reclaims and requeues it itself (L5); nothing is reclaimed here",
            _ =>
                " off the unix clock: resume reclaims and requeues them itself (L5); nothing is reclaimed here",
        }
    )?;
    reclaim_table(out, legacy, s)
}

/// Writes a migrate report.
pub fn migrate(out: &mut dyn Write, r: &Report<Migration>, s: &Styles) -> io::Result<()> {
    for o in &r.files {
        header(out, "migrate", r.mode, o, s)?;
        match &o.plan {
            Migration::Journal { legacy_leases } => legacy_body(out, legacy_leases, s)?,
            Migration::Rewrite {
                legacy_leases,
                clockless_records,
                compaction,
            } => {
                legacy_body(out, legacy_leases, s)?;
                writeln!(
                    out,
                    "  clock-less  {}",
                    plural(*clockless_records, "record", "records")
                )?;
                if *clockless_records > 0 {
                    compact_body(out, compaction, s)?;
                }
            }
            Migration::Snapshot(p) => snapshot_body(out, p)?,
        }
        footer(out, o, s)?;
    }
    Ok(())
}
