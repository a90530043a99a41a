//! Human output of the writing subcommands: the plan, and what was done.

use std::io::{self, Write};

use super::{Styles, age, count, printable, table};
use crate::compact::Measured;
use crate::journal::Clock;
use crate::migrate::{Migration, SnapshotPlan};
use crate::plan::{Mode, Outcome, Reclaim, Report, StateView};
use crate::recover::{Plan, TailFix};

fn header<P: serde::Serialize>(
    out: &mut dyn Write,
    command: &str,
    mode: Mode,
    o: &Outcome<P>,
    s: &Styles,
) -> io::Result<()> {
    let how = match mode {
        Mode::DryRun => s.warn("dry run: nothing is written; --apply changes the file in place"),
        Mode::Apply => "in place".to_string(),
        Mode::Output => "to a new file".to_string(),
    };
    writeln!(out, "{} {}  ({how})", s.bold(command), o.path)?;
    for t in &o.removed_temp_files {
        writeln!(out, "  cleaned     removed stale temporary file {t}")?;
    }
    Ok(())
}

fn footer<P: serde::Serialize>(out: &mut dyn Write, o: &Outcome<P>, s: &Styles) -> io::Result<()> {
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

fn states(out: &mut dyn Write, before: &StateView, after: &StateView) -> io::Result<()> {
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
    let mut t = table(
        &[
            "id",
            "worker",
            "clock",
            "age",
            "attempts",
            "line",
            "path",
            "on resume",
        ],
        s,
    );
    for r in reclaims {
        let resume = match r.dropped_on_resume {
            Some(true) => s.warn("dropped: no such file, no continuation"),
            Some(false) => "re-dispatched".to_string(),
            None => "-".to_string(),
        };
        t.add_row(vec![
            r.id.to_hex()[..12].to_string(),
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
            resume,
        ]);
    }
    writeln!(out, "{t}")
}

fn recover_body(out: &mut dyn Write, p: &Plan, s: &Styles) -> io::Result<()> {
    let tail = match p.tail {
        TailFix::None => "clean".to_string(),
        TailFix::Cut {
            offset,
            bytes,
            zero_bytes,
        } => s.warn(&format!(
            "cut {} torn bytes at offset {offset}{} (kept in the backup)",
            count(bytes),
            if zero_bytes > 0 {
                format!(", {} of them NUL", count(zero_bytes))
            } else {
                String::new()
            }
        )),
        TailFix::Terminate { offset } => format!("add the missing newline at offset {offset}"),
    };
    writeln!(out, "  tail        {tail}")?;
    for g in &p.salvaged {
        writeln!(
            out,
            "  salvage     line {}: {} {} split out of a torn fragment of {} bytes",
            g.line,
            g.op,
            &g.id.to_hex()[..12],
            g.fragment_bytes
        )?;
    }
    writeln!(
        out,
        "  reclaim     {} leases{}",
        count(p.reclaims.len() as u64),
        if p.reclaims.is_empty() {
            ""
        } else {
            ", in this order:"
        }
    )?;
    reclaim_table(out, &p.reclaims, s)?;
    if p.append_bytes > 0 {
        writeln!(
            out,
            "  {}      {} records, {} bytes{}",
            if p.rewrite { "write " } else { "append" },
            count(p.reclaims.len() as u64),
            count(p.append_bytes as u64),
            if p.rewrite {
                " appended to the rewritten file"
            } else {
                ""
            }
        )?;
    }
    states(out, &p.before, &p.after)
}

/// Writes a recover report.
pub fn recover(out: &mut dyn Write, r: &Report<Plan>, s: &Styles) -> io::Result<()> {
    for o in &r.files {
        header(out, "recover", r.mode, o, s)?;
        recover_body(out, &o.plan, s)?;
        footer(out, o, s)?;
    }
    Ok(())
}

fn compact_body(out: &mut dyn Write, m: &Measured, s: &Styles) -> io::Result<()> {
    let p = &m.plan;
    writeln!(
        out,
        "  size        {} bytes, {} lines → {} bytes, {} records{}",
        count(p.bytes_before),
        count(p.lines_before),
        count(m.bytes_after),
        count(p.records_after),
        if m.unchanged {
            " (already compact)"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "  keeps       {} active leases",
        count(p.active as u64)
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
            "  keeps       {} completed ids (lease + done each)",
            count(p.completed_kept as u64)
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
            &z.task_id[..12],
            z.field,
            z.before
        )?;
    }
    for d in &p.dropped {
        writeln!(out, "  drops       {:?}[{}]: {}", d.list, d.index, d.reason)?;
    }
    Ok(())
}

/// Writes a migrate report.
pub fn migrate(out: &mut dyn Write, r: &Report<Migration>, s: &Styles) -> io::Result<()> {
    for o in &r.files {
        header(out, "migrate", r.mode, o, s)?;
        match &o.plan {
            Migration::Reclaim(p) => recover_body(out, p, s)?,
            Migration::Rewrite {
                reclaimed,
                compaction,
            } => {
                writeln!(
                    out,
                    "  reclaim     {} legacy leases",
                    count(reclaimed.len() as u64)
                )?;
                reclaim_table(out, reclaimed, s)?;
                compact_body(out, compaction, s)?;
            }
            Migration::Snapshot(p) => snapshot_body(out, p)?,
        }
        footer(out, o, s)?;
    }
    Ok(())
}
