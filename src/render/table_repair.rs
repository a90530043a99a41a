//! Human output of what `repair` does to a fenced lease table: one line
//! per entry moved (where from, where to, what is wrong and what the move
//! changes for upstream), what is left as it is and why, the refusal of
//! `--apply` when it would refuse, and after `--apply` the table read
//! again.

use std::io::{self, Write};

use super::{Styles, count, how, plural, printable};
use crate::operations::repair::table::{Action, Fix, State, TableRepair};
use crate::operations::table::Counts;
use crate::store::path::shell_quote;
use crate::store::session::Mode;

fn counts_words(c: &Counts) -> String {
    format!(
        "{} leased ({} expired), {} committing, {} done",
        count(c.leased),
        count(c.expired),
        count(c.committing),
        count(c.done)
    )
}

fn verb(a: &Action) -> &'static str {
    match (a.fix, a.state) {
        (Fix::Misplaced, State::Done) => "moved",
        (Fix::Misplaced, _) => "move",
        (Fix::ArchiveDone, State::Done) => "archived",
        (Fix::ArchiveDone, _) => "archive",
        (_, State::Done) => "quarantined",
        _ => "quarantine",
    }
}

/// Writes one table's repair.
pub(super) fn table(
    out: &mut dyn Write,
    mode: Mode,
    t: &TableRepair,
    s: &Styles,
) -> io::Result<()> {
    let how = how(mode, "table", s);
    writeln!(out, "{} {}  ({how})", s.bold("repair"), printable(&t.path))?;
    writeln!(
        out,
        "  table       {} table at {} ({}): {}",
        t.table.as_str(),
        plural(t.shard_count.value, "shard", "shards"),
        t.shard_count.from,
        counts_words(&t.counts)
    )?;
    if t.actions.is_empty() {
        writeln!(out, "  changes     {}", s.ok("none: nothing to move"))?;
    }
    for a in &t.actions {
        let head = format!("{:<11}", verb(a));
        let line = format!("{} → {}", printable(&a.path), printable(&a.to));
        writeln!(out, "  {head} {line}")?;
        writeln!(out, "              {}", a.why)?;
        writeln!(out, "              after: {}", a.effect)?;
        if let Some(why) = &a.skipped {
            writeln!(out, "              {}", s.warn(&format!("skipped: {why}")))?;
        }
    }
    for u in &t.unchanged {
        let what = match (&u.path, u.what) {
            (Some(p), _) => format!("{}: {}", printable(p), u.why),
            (None, what) => {
                let (one, many) = match what {
                    "expired" => ("expired leased record", "expired leased records"),
                    "lock-files" => ("lock file", "lock files"),
                    _ => ("odd record", "odd records"),
                };
                format!("{}: {}", plural(u.count, one, many), u.why)
            }
        };
        writeln!(out, "  keeps       {what}")?;
    }
    if let Some(why) = &t.refused
        && mode != Mode::Apply
        && !t.actions.is_empty()
    {
        writeln!(out, "  refused     {}", s.warn(why))?;
    }
    if let Some(r) = &t.reread {
        writeln!(out, "  re-read     {}", counts_words(&r.counts))?;
        let rejected = if r.rejected.is_empty() {
            "none".to_string()
        } else {
            let ids: Vec<String> = r.rejected.iter().map(|id| id.short()).collect();
            ids.join(", ")
        };
        writeln!(
            out,
            "              rejected {rejected}; misplaced {}; temporary files {}; bad lock paths {}",
            count(r.misplaced),
            count(r.temp_files),
            count(r.bad_locks)
        )?;
        if !r.unread.is_empty() {
            writeln!(
                out,
                "              unread by the scans: {}",
                r.unread.join(", ")
            )?;
        }
    }
    if t.written {
        let moved = t.actions.iter().filter(|a| a.state == State::Done).count();
        writeln!(
            out,
            "  result      {}; the quarantine is {}",
            s.ok(&format!(
                "{} moved, re-read and confirmed",
                plural(moved as u64, "entry", "entries")
            )),
            t.quarantine
        )?;
    }
    Ok(())
}

/// Says that a state directory's table is left alone unless named.
pub(super) fn not_named(out: &mut dyn Write, table: &str) -> io::Result<()> {
    writeln!(
        out,
        "note: the fenced lease table at {table} is repaired only when named: leasejournal repair --all-masters-stopped {}",
        shell_quote(table)
    )
}
