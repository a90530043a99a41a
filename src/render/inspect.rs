//! Human output of `inspect`.

use std::io::{self, Write};

use rayon::prelude::*;

use super::{Column, Styles, age, count, duration, noun, plural, printable, table, utc};
use crate::engine::journal::{Clock, ClockMarker, IgnoreReason, TailState, short_id};
use crate::operations::inspect::{
    DirectoryReport, FileReport, InspectReport, JournalReport, PathReport, SnapshotReport,
};

/// Writes a journal report.
pub fn journal(
    out: &mut dyn Write,
    r: &JournalReport,
    now: f64,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    let sum = &r.summary;
    writeln!(out, "{} {}", s.bold("journal"), printable(&r.path))?;
    let tail = match sum.tail.state {
        TailState::Empty => "empty file".to_string(),
        TailState::Clean => "clean".to_string(),
        TailState::Torn => s.warn(&format!(
            "torn: {} bytes at offset {} upstream ignores (repair seals it)",
            count(sum.tail.bytes),
            sum.tail.offset
        )),
        TailState::Unterminated => s.warn(&format!(
            "last record ({} bytes) has no newline; the next upstream append glues onto it (repair adds it)",
            count(sum.tail.bytes)
        )),
    };
    writeln!(
        out,
        "  size        {}, {}",
        plural(sum.bytes, "byte", "bytes"),
        plural(sum.lines, "line", "lines")
    )?;
    writeln!(out, "  tail        {tail}")?;
    if sum.tail.zero_bytes > 0 {
        writeln!(
            out,
            "  zero fill   {}",
            s.warn(&format!(
                "{} NUL bytes at the end of the file",
                count(sum.tail.zero_bytes)
            ))
        )?;
    }
    writeln!(
        out,
        "  records     {} lease · {} done · {} reclaim · {} other op  (events {})",
        count(sum.records.lease),
        count(sum.records.done),
        count(sum.records.reclaim),
        count(sum.records.other),
        count(r.events)
    )?;
    writeln!(
        out,
        "  clocks      {} unix · {} legacy · {} unmarked{}",
        count(sum.clocks.unix),
        count(sum.clocks.legacy),
        count(sum.clocks.unmarked),
        if sum.clocks.other > 0 {
            format!(" · {} invalid", count(sum.clocks.other))
        } else {
            String::new()
        }
    )?;
    let ignored: Vec<String> = sum
        .ignored
        .iter()
        .map(|(reason, n)| format!("{} {}", count(*n), reason_name(*reason)))
        .collect();
    super::ignored_line(out, sum.ignored.values().sum(), &ignored, s)?;
    if sum.invalid_utf8_bytes > 0 {
        writeln!(
            out,
            "  bad UTF-8   {} on {}, deleted before parsing as upstream does",
            plural(sum.invalid_utf8_bytes, "byte", "bytes"),
            plural(sum.invalid_utf8_lines, "line", "lines")
        )?;
    }
    if sum.lenient_leases > 0 {
        writeln!(
            out,
            "  coerced     {} values upstream converts (\"3\", 2.9, 0 attempts, …)",
            if sum.lenient_leases == 1 {
                "1 lease carries".to_string()
            } else {
                format!("{} leases carry", count(sum.lenient_leases))
            }
        )?;
    }
    writeln!(
        out,
        "  state       {} active · {} completed",
        s.bold(&count(r.active_count as u64)),
        count(r.completed_count as u64)
    )?;
    if let Some(range) = &r.time_range {
        writeln!(
            out,
            "  time range  {} … {}  (first {}, last {})",
            utc(range.first),
            utc(range.last),
            age(now - range.first),
            age(now - range.last)
        )?;
    }
    if let Some(filter) = &r.filter {
        let mut parts = Vec::new();
        if let Some(w) = filter.worker {
            parts.push(format!("worker {w}"));
        }
        if let Some(id) = &filter.id {
            parts.push(format!("id {id}*"));
        }
        writeln!(
            out,
            "  showing     {} of {} active ({})",
            r.active.len(),
            r.active_count,
            parts.join(", ")
        )?;
    }
    if !r.active.is_empty() {
        let mut t = table(
            &[
                Column::whole("id"),
                Column::spare("worker", 5),
                Column::spare("clock", 4),
                Column::spare("leased", 3),
                Column::whole("age"),
                Column::spare("attempts", 1),
                Column::spare("line", 2),
                Column::shorten("path"),
            ],
            s,
        );
        // Oldest first: legacy leases (from an earlier boot), then by time;
        // at most `limit` of them.
        let mut rows: Vec<&crate::operations::inspect::ActiveLease> = r.active.iter().collect();
        rows.sort_by(|a, b| {
            (a.clock == Clock::Unix)
                .cmp(&(b.clock == Clock::Unix))
                .then(a.time.total_cmp(&b.time))
                .then(a.id.cmp(&b.id))
        });
        let left_out = limit.map_or(0, |n| rows.len().saturating_sub(n));
        rows.truncate(rows.len() - left_out);
        // Formatted on every core: a journal can hold tens of thousands.
        t.add_rows(rows.par_iter().map(|a| {
            let (leased, age_text) = match a.clock {
                Clock::Unix => (utc(a.time), a.age_seconds.map(age).unwrap_or_default()),
                Clock::Legacy => (
                    format!("monotonic {}", crate::engine::json::float_repr(a.time)),
                    "unknown".to_string(),
                ),
            };
            let clock = match a.clock {
                Clock::Unix => "unix".to_string(),
                Clock::Legacy => s.warn("legacy"),
            };
            vec![
                a.id.short(),
                a.worker.to_string(),
                clock,
                leased,
                age_text,
                a.attempts.to_string(),
                a.line.to_string(),
                a.path
                    .as_deref()
                    .map_or("-".into(), |p| printable(p).into_owned()),
            ]
        }));
        writeln!(out, "{t}")?;
        if left_out > 0 {
            writeln!(
                out,
                "  … and {} more active {}, newer than these (--all lists every one; --format json always does)",
                count(left_out as u64),
                if left_out == 1 { "lease" } else { "leases" }
            )?;
        }
    }
    if let Some(history) = &r.history {
        if history.is_empty() {
            writeln!(out, "  history     no record of a matching id")?;
        } else {
            let mut t = table(
                &[
                    Column::whole("id"),
                    Column::spare("line", 2),
                    Column::spare("offset", 1),
                    Column::whole("op"),
                    Column::spare("time", 4),
                    Column::spare("worker", 3),
                    Column::shorten("effect"),
                ],
                s,
            );
            for h in history {
                t.add_row(vec![
                    h.id.short(),
                    h.line.to_string(),
                    h.offset.to_string(),
                    printable(&h.op).into_owned(),
                    match (h.time, h.clock) {
                        (Some(t), ClockMarker::Unix) => utc(t),
                        (Some(t), _) => format!("monotonic {}", crate::engine::json::float_repr(t)),
                        (None, _) => "-".into(),
                    },
                    h.worker
                        .as_ref()
                        .map(|w| w.to_string())
                        .unwrap_or_else(|| "-".into()),
                    printable(&h.effect).into_owned(),
                ]);
            }
            writeln!(out, "{t}")?;
        }
    }
    Ok(())
}

fn reason_name(reason: IgnoreReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Writes a snapshot report.
pub fn snapshot(out: &mut dyn Write, r: &SnapshotReport, s: &Styles) -> io::Result<()> {
    writeln!(out, "{} {}", s.bold("snapshot"), printable(&r.path))?;
    writeln!(out, "  size        {} bytes", count(r.bytes))?;
    if let Some(err) = &r.parse.error {
        writeln!(
            out,
            "  parse       {}",
            s.error(&format!(
                "{err}: upstream starts empty and every statistic is lost"
            ))
        )?;
        return Ok(());
    }
    if !r.parse.is_object {
        writeln!(
            out,
            "  parse       {}",
            s.error("not a JSON object: upstream's restore ignores it and starts empty")
        )?;
        return Ok(());
    }
    let clock = match r.clock {
        Clock::Unix => "unix".to_string(),
        Clock::Legacy => s.warn(
            "legacy (no \"clock\": last_lease/last_complete are monotonic and restore zeroes them)",
        ),
    };
    writeln!(out, "  clock       {clock}")?;
    if r.parse.duplicate_members > 0 || r.parse.nonfinite_constants > 0 {
        writeln!(
            out,
            "  oddities    {} (last wins), {} NaN/Infinity",
            plural(
                r.parse.duplicate_members,
                "duplicate member",
                "duplicate members"
            ),
            r.parse.nonfinite_constants
        )?;
    }
    writeln!(out, "  tasks       {}", count(r.tasks as u64))?;
    if let Some(t) = &r.totals {
        writeln!(
            out,
            "  totals      {} · {} · {} generated · {} · {} elapsed",
            noun(&t.completions, "completion", "completions"),
            noun(&t.failures, "failure", "failures"),
            t.total_generated,
            noun(&t.leases, "lease", "leases"),
            duration(t.elapsed)
        )?;
    }
    let c = &r.changes;
    let mut restore = Vec::new();
    if c.stats_truncated + c.leases_truncated > 0 {
        restore.push(format!(
            "skips {} stats and {} leases beyond the last 65536",
            c.stats_truncated, c.leases_truncated
        ));
    }
    if !c.dropped.is_empty() {
        restore.push(s.error(&format!(
            "drops {}",
            plural(c.dropped.len() as u64, "entry", "entries")
        )));
    }
    if !c.overwritten.is_empty() {
        restore.push(format!(
            "merges {} duplicate entries (last wins)",
            c.overwritten.len()
        ));
    }
    let lease_resets = c.zeroed.iter().filter(|z| z.field == "updated").count();
    let legacy_zeroed = c.zeroed.len() - lease_resets;
    if legacy_zeroed > 0 {
        restore.push(s.warn(&format!(
            "zeroes {legacy_zeroed} legacy last_lease/last_complete times"
        )));
    }
    if lease_resets > 0 {
        restore.push(format!(
            "resets the time of {} to 0.0",
            plural(lease_resets as u64, "state lease", "state leases")
        ));
    }
    if !c.coerced.is_empty() {
        restore.push(format!(
            "converts or clamps {}",
            plural(c.coerced.len() as u64, "value", "values")
        ));
    }
    for member in &c.ignored_members {
        restore.push(s.error(&format!("ignores \"{member}\" (not a list)")));
    }
    if restore.is_empty() {
        writeln!(out, "  restore     {}", s.ok("keeps everything as written"))?;
    } else {
        writeln!(out, "  restore     {}", restore.join("; "))?;
    }
    if !r.leases.is_empty() {
        writeln!(
            out,
            "  leases      {}",
            if r.leases.len() == 1 {
                "1 from the previous coordinator epoch; restore makes it stale and the first recovery adds a failure to its task".to_string()
            } else {
                format!(
                    "{} from the previous coordinator epoch; restore makes them stale and the first recovery adds a failure to each task",
                    count(r.leases.len() as u64)
                )
            }
        )?;
        let mut t = table(
            &[
                Column::whole("task"),
                Column::spare("worker", 1),
                Column::shorten("stats"),
            ],
            s,
        );
        for l in &r.leases {
            let has_stats = !c.leases_without_stats.contains(&l.task_id);
            t.add_row(vec![
                short_id(&l.task_id).to_string(),
                l.worker.to_string(),
                if has_stats {
                    "yes".into()
                } else {
                    s.warn("missing")
                },
            ]);
        }
        writeln!(out, "{t}")?;
    }
    if !c.dropped.is_empty() {
        let mut t = table(
            &[
                Column::whole("list"),
                Column::whole("index"),
                Column::whole("task"),
                Column::shorten("dropped because"),
            ],
            s,
        );
        for d in &c.dropped {
            t.add_row(vec![
                format!("{:?}", d.list).to_lowercase(),
                d.index.to_string(),
                d.task_id
                    .as_deref()
                    .map_or("-".into(), |t| short_id(t).to_string()),
                d.reason.clone(),
            ]);
        }
        writeln!(out, "{t}")?;
    }
    Ok(())
}

/// Writes what `inspect` found: one file, or a state directory.
pub fn path_report(
    out: &mut dyn Write,
    r: &PathReport,
    now: f64,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    match r {
        PathReport::File(FileReport::Journal(j)) => journal(out, j, now, limit, s),
        PathReport::File(FileReport::Snapshot(snap)) => snapshot(out, snap, s),
        PathReport::Directory(d) => directory(out, d, now, limit, s),
        PathReport::Ledger(l) => super::ledger::inspection(out, l, s),
        PathReport::Table(t) => super::lease_table::inspection(out, &t.table, limit, s),
    }
}

/// Writes what `inspect` reports: one inspection, or several, a blank line
/// between two.
pub fn inspect_report(
    out: &mut dyn Write,
    r: &InspectReport,
    now: f64,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    match r {
        InspectReport::One(one) => path_report(out, one, now, limit, s),
        InspectReport::Many(many) => {
            for (i, one) in many.inspections.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                path_report(out, one, now, limit, s)?;
            }
            Ok(())
        }
    }
}

/// Writes a directory report.
pub fn directory(
    out: &mut dyn Write,
    r: &DirectoryReport,
    now: f64,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    writeln!(out, "{} {}", s.bold("state directory"), printable(&r.path))?;
    let lock = match (r.master_lock.present, r.master_lock.held) {
        (false, _) => "no .master-queue.lock".to_string(),
        (true, Some(true)) => s.error(&format!(
            "held by {}: a master is running and these files are changing",
            r.master_lock
                .processes
                .iter()
                .map(crate::store::lock::Holder::describe)
                .collect::<Vec<_>>()
                .join("; ")
        )),
        (true, Some(false)) => s.ok("not held: no master is running"),
        (true, None) => s.warn("unknown (/proc/locks unreadable)"),
    };
    writeln!(out, "  master lock {lock}")?;
    if !r.missing.is_empty() {
        writeln!(out, "  missing     {}", r.missing.join(", "))?;
    }
    for t in &r.stale_temp_files {
        writeln!(
            out,
            "  stale temp  {}",
            s.warn(&format!("{} ({} bytes)", t.name, count(t.bytes)))
        )?;
    }
    for file in &r.files {
        writeln!(out)?;
        match file {
            FileReport::Journal(j) => journal(out, j, now, limit, s)?,
            FileReport::Snapshot(sn) => snapshot(out, sn, s)?,
        }
    }
    if let Some(ledger) = &r.ledger {
        writeln!(out)?;
        super::ledger::ledger(out, ledger, s)?;
    }
    for t in &r.tables {
        writeln!(out)?;
        super::lease_table::inspection(out, t, limit, s)?;
    }
    Ok(())
}
