//! Human output of the commands that bring a file back: `restore` (a
//! discard export's leases appended again) and `rollback` (a file put back
//! to a backup).

use std::io::{self, Write};

use super::write::{footer, header, kept, states, tail_line};
use super::{Column, Styles, count, plural, printable, table};
use crate::engine::journal::{Clock, WorkId, short_id};
use crate::operations::report::Report;
use crate::operations::restore::{self, Fate};
use crate::operations::rollback::{self, JournalChange, SnapshotChange};

/// What happens to an exported lease, in words.
fn fate(lease: &restore::ExportLease, s: &Styles) -> String {
    let at = lease
        .journal_line
        .map_or(String::new(), |line| format!(" (journal line {line})"));
    match lease.fate {
        Fate::Restore => s.ok("comes back: reclaimed by the discard, nothing since"),
        Fate::Active => s.warn(&format!(
            "skipped: active now{at}; restoring would double it"
        )),
        Fate::Completed => s.warn(&format!(
            "skipped: completed since{at}; resume would run finished work again"
        )),
        Fate::LeasedAgain => s.warn(&format!(
            "skipped: leased again since{at}; its work already ran anew"
        )),
        Fate::NotInJournal => s.warn("skipped: never leased in this journal"),
    }
}

/// Writes a `restore` report.
pub fn restore(out: &mut dyn Write, r: &Report<restore::Plan>, s: &Styles) -> io::Result<()> {
    for o in &r.files {
        header(out, "restore", r.mode, o, s)?;
        let p = &o.plan;
        writeln!(
            out,
            "  export      {} ({})",
            p.export,
            plural(p.leases.len() as u64, "lease", "leases")
        )?;
        if p.restored > 0 {
            tail_line(out, &p.tail, kept(r.mode, o), s)?;
        }
        writeln!(
            out,
            "  restores    {}, skips {}",
            plural(p.restored as u64, "lease", "leases"),
            count(p.skipped as u64)
        )?;
        let mut t = table(
            &[
                Column::whole("id"),
                Column::spare("worker", 3),
                Column::spare("clock", 2),
                Column::spare("attempts", 1),
                Column::spare("line", 4),
                Column::shorten("path"),
                Column::shorten("restore"),
            ],
            s,
        );
        for l in &p.leases {
            t.add_row(vec![
                l.id.short(),
                l.worker.to_string(),
                match l.clock {
                    Clock::Unix => "unix".to_string(),
                    Clock::Legacy => s.warn("legacy"),
                },
                l.attempts.to_string(),
                l.line.to_string(),
                l.path
                    .as_deref()
                    .map_or("-".into(), |p| printable(p).into_owned()),
                fate(l, s),
            ]);
        }
        writeln!(out, "{t}")?;
        if p.append_bytes > 0 {
            writeln!(
                out,
                "  append      {}, {}",
                plural(p.restored as u64, "lease record", "lease records"),
                plural(p.append_bytes as u64, "byte", "bytes")
            )?;
        }
        states(out, &p.before, &p.after)?;
        footer(out, o, s)?;
    }
    Ok(())
}

/// Up to five of `shown` (of `len` in all), then how many more.
fn first_five(shown: impl Iterator<Item = String>, len: usize) -> String {
    let mut shown: Vec<String> = shown.take(5).collect();
    if len > 5 {
        shown.push(format!("and {} more", count(len as u64 - 5)));
    }
    shown.join(", ")
}

/// Up to five ids, then how many more.
fn ids(ids: &[WorkId]) -> String {
    first_five(ids.iter().map(WorkId::short), ids.len())
}

fn journal_body(out: &mut dyn Write, j: &JournalChange, s: &Styles) -> io::Result<()> {
    if let (Some(before), Some(after)) = (&j.before, &j.after) {
        states(out, before, after)?;
    }
    let lines: [(&[WorkId], &str, &str, bool); 4] = [
        (
            &j.active_gained,
            "gains",
            "active again: resume requeues their work",
            false,
        ),
        (
            &j.completed_gained,
            "gains",
            "completed: resume does not requeue them",
            false,
        ),
        (
            &j.active_lost,
            "loses",
            "active now, neither active nor completed after: their work is lost",
            true,
        ),
        (
            &j.completed_lost,
            "loses",
            "completed now, not after: that work could run again",
            true,
        ),
    ];
    for (list, verb, what, bad) in lines {
        if list.is_empty() {
            continue;
        }
        let text = format!(
            "{} {what}: {}",
            plural(list.len() as u64, "id", "ids"),
            ids(list)
        );
        writeln!(
            out,
            "  {verb:<11} {}",
            if bad { s.error(&text) } else { text }
        )?;
    }
    let n = &j.records_not_in_backup;
    let total = n.total();
    writeln!(
        out,
        "  since       {}{}",
        plural(
            total,
            "record the backup does not hold",
            "records the backup does not hold"
        ),
        if total == 0 {
            String::new()
        } else {
            format!(
                " ({} lease, {} done, {} reclaim, {} other)",
                count(n.lease),
                count(n.done),
                count(n.reclaim),
                count(n.other)
            )
        }
    )
}

fn snapshot_body(out: &mut dyn Write, c: &SnapshotChange, s: &Styles) -> io::Result<()> {
    writeln!(
        out,
        "  tasks       {} → {}; leases {} → {}; completions {} → {}",
        count(c.tasks_before as u64),
        count(c.tasks_after as u64),
        count(c.leases_before as u64),
        count(c.leases_after as u64),
        c.completions_before,
        c.completions_after
    )?;
    if !c.tasks_behind.is_empty() {
        let shown = first_five(
            c.tasks_behind.iter().map(|t| short_id(t).to_string()),
            c.tasks_behind.len(),
        );
        writeln!(
            out,
            "  loses       {}",
            s.error(&format!(
                "the statistics of {} recorded since the backup: {shown}",
                plural(c.tasks_behind.len() as u64, "task", "tasks"),
            ))
        )?;
    }
    Ok(())
}

/// Writes a `rollback` report.
pub fn rollback(out: &mut dyn Write, r: &Report<rollback::Plan>, s: &Styles) -> io::Result<()> {
    for o in &r.files {
        header(out, "rollback", r.mode, o, s)?;
        let p = &o.plan;
        writeln!(
            out,
            "  backup      {}, {} (the file now: {})",
            p.backup,
            plural(p.bytes_after, "byte", "bytes"),
            plural(p.bytes_before, "byte", "bytes")
        )?;
        if let Some(j) = &p.journal {
            journal_body(out, j, s)?;
        }
        if let Some(c) = &p.snapshot {
            snapshot_body(out, c, s)?;
        }
        if let Some(why) = &p.refused {
            writeln!(out, "  refused     {}", s.error(why))?;
        }
        footer(out, o, s)?;
    }
    Ok(())
}
