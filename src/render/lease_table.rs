//! Human output of a fenced lease table (`inspect` of a table root, or of
//! a state directory that holds one): the settings it was read with, what
//! upstream's scans count and return, then one table per kind of finding,
//! each limited like `inspect`'s leases.

use std::io::{self, Write};

use super::{Column, Styles, age, count, duration, plural, printable, table};
use crate::engine::journal::WorkId;
use crate::engine::table::{ClaimOutcome, TableKind};
use crate::operations::recover::TableForecast;
use crate::operations::table::{ExpiredRecord, Setting, TableReport, TableView};

/// Writes `inspect` of a table.
pub fn inspection(
    out: &mut dyn Write,
    r: &TableReport,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    writeln!(
        out,
        "{} {} ({})",
        s.bold("fenced lease table"),
        printable(&r.path),
        kind_words(r.table, r.table_from)
    )?;
    writeln!(
        out,
        "  shards      {} ({})",
        count(r.shard_count.value),
        setting_source(&r.shard_count)
    )?;
    if let Some(fits) = r.fitting_counts.as_ref().filter(|f| !f.is_empty()) {
        let fits: Vec<String> = fits.iter().map(|n| count(*n)).collect();
        writeln!(
            out,
            "  layout      {}",
            s.error(&format!(
                "the records sit where {} shards put them: is that the count the masters use (--lease-shards)?",
                fits.join(" or ")
            ))
        )?;
    }
    let clamp = if r.ttl_effective != r.ttl.value {
        format!("; the table applies {}", duration(r.ttl_effective))
    } else {
        String::new()
    };
    writeln!(
        out,
        "  ttl         {} ({}{clamp})",
        duration(r.ttl.value),
        setting_source(&r.ttl)
    )?;
    let rejected = if r.rejected.is_empty() {
        s.ok("none rejected")
    } else {
        s.warn(&format!(
            "{} upstream's reader rejects",
            plural(r.rejected.len() as u64, "id", "ids")
        ))
    };
    writeln!(
        out,
        "  records     {} listed · {} accepted · {rejected}",
        count(r.files.records),
        count(r.accepted)
    )?;
    let c = &r.counts;
    writeln!(
        out,
        "  counts      {} leased ({} expired) · {} committing · {} done",
        count(c.leased),
        count(c.expired),
        count(c.committing),
        count(c.done)
    )?;
    writeln!(out, "  next start  {}", next_start(r, s))?;
    if let Some((newest, oldest)) = heartbeats(r) {
        writeln!(
            out,
            "  heartbeat   newest {} · oldest {} (leased and committing records)",
            age(newest),
            age(oldest)
        )?;
    }
    let mut files = vec![plural(r.files.locks, "lock file", "lock files")];
    if r.files.orphan_locks > 0 {
        files.push(format!(
            "{} without a record (normal: upstream keeps them)",
            count(r.files.orphan_locks)
        ));
    }
    if r.files.temp_files > 0 {
        files.push(s.warn(&plural(
            r.files.temp_files,
            "left-over temporary file",
            "left-over temporary files",
        )));
    }
    if r.files.other > 0 {
        files.push(plural(r.files.other, "other name", "other names"));
    }
    writeln!(out, "  files       {}", files.join(" · "))?;
    if r.counts.done > 0 {
        writeln!(
            out,
            "  scan cost   every scan reads {} (nothing upstream ever removes them)",
            plural(r.counts.done, "done record", "done records")
        )?;
    }
    owners(out, r, s)?;
    rejected_table(out, r, limit, s)?;
    expired_table(out, r, limit, s)?;
    committing_table(out, r, limit, s)?;
    other_findings(out, r, limit, s)?;
    if let Some(history) = &r.history {
        history_table(out, r, history, s)?;
    }
    Ok(())
}

fn kind_words(kind: TableKind, from: &str) -> String {
    let what = match kind {
        TableKind::Work => "work table",
        TableKind::Target => "target table",
    };
    let how = match from {
        "name" => "by its name",
        "environment" => "as the master's environment names it",
        "records" => "by its records",
        _ => "as --table-kind says",
    };
    format!("{what}, {how}")
}

fn setting_source<T>(setting: &Setting<T>) -> String {
    match setting.from.as_str() {
        "default" => "upstream's default".to_string(),
        flag if flag.starts_with("--") => format!("as {flag} says"),
        var => format!("as {var} says"),
    }
}

fn next_start(r: &TableReport, s: &Styles) -> String {
    let n = r.expired.len();
    if r.table == TableKind::Target {
        return if n == 0 {
            "no expired target lease".to_string()
        } else {
            format!(
                "{} expired: the next claim_group of those targets overwrites them (masters never recover target records)",
                plural(n as u64, "target lease", "target leases")
            )
        };
    }
    if n == 0 {
        return s.ok("takes nothing: no leased record is expired");
    }
    let taken = n.min(r.start_limit);
    let mut text = format!(
        "takes {} (recover_expired, oldest first",
        plural(taken as u64, "expired lease", "expired leases")
    );
    if n > r.start_limit {
        text += &format!(
            "; {} wait for later idle moments",
            count((n - r.start_limit) as u64)
        );
    }
    text.push(')');
    s.warn(&text)
}

fn heartbeats(r: &TableReport) -> Option<(f64, f64)> {
    let newest = r
        .owners
        .iter()
        .filter_map(|o| o.newest_heartbeat_age)
        .reduce(f64::min)?;
    let oldest = r
        .owners
        .iter()
        .filter_map(|o| o.oldest_heartbeat_age)
        .reduce(f64::max)?;
    Some((newest, oldest))
}

fn owners(out: &mut dyn Write, r: &TableReport, s: &Styles) -> io::Result<()> {
    if r.owners.is_empty() {
        return Ok(());
    }
    let mut t = table(
        &[
            Column::shorten("owner"),
            Column::whole("host"),
            Column::whole("leased"),
            Column::whole("expired"),
            Column::whole("committing"),
            Column::spare("done", 1),
            Column::spare("newest heartbeat", 2),
        ],
        s,
    );
    for o in &r.owners {
        let host = match o.host {
            "dead" => s.error("dead here"),
            "running" => s.ok("running here"),
            "other-host" => "other host".to_string(),
            _ => "unknown".to_string(),
        };
        t.add_row(vec![
            if o.owner.is_empty() {
                "(none)".to_string()
            } else {
                printable(&o.owner).into_owned()
            },
            host,
            count(o.leased),
            count(o.expired),
            count(o.committing),
            count(o.done),
            o.newest_heartbeat_age.map_or("-".to_string(), age),
        ]);
    }
    writeln!(out, "{t}")
}

fn left_out(out: &mut dyn Write, shown: usize, total: usize, what: &str) -> io::Result<()> {
    if shown < total {
        writeln!(
            out,
            "  … {} more {what} (--all shows every one)",
            count((total - shown) as u64)
        )?;
    }
    Ok(())
}

fn shown(limit: Option<usize>, total: usize) -> usize {
    limit.map_or(total, |l| l.min(total))
}

fn claim_words(c: ClaimOutcome, s: &Styles) -> String {
    match c {
        ClaimOutcome::Takes => "takes it".to_string(),
        ClaimOutcome::Refused => s.warn("refused"),
        ClaimOutcome::Raises(e) => s.error(&format!("raises {e}")),
    }
}

fn rejected_table(
    out: &mut dyn Write,
    r: &TableReport,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    if r.rejected_records.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "{}",
        s.bold("rejected records (the scans skip them; the claim column says what a fresh claim of the id does)")
    )?;
    let mut t = table(
        &[
            Column::whole("id"),
            Column::shorten("path"),
            Column::shorten("why"),
            Column::whole("claim"),
        ],
        s,
    );
    let n = shown(limit, r.rejected_records.len());
    for x in &r.rejected_records[..n] {
        let mut why = x.message.clone();
        if !x.elsewhere.is_empty() {
            why += &format!("; also at {}", x.elsewhere.join(", "));
        }
        t.add_row(vec![
            x.id.short(),
            x.path.clone(),
            why,
            claim_words(x.claim, s),
        ]);
    }
    writeln!(out, "{t}")?;
    left_out(out, n, r.rejected_records.len(), "rejected records")
}

fn expired_table(
    out: &mut dyn Write,
    r: &TableReport,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    if r.expired.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "{}",
        s.bold("expired leases (recover_expired_records' order)")
    )?;
    let mut t = table(
        &[
            Column::whole("#"),
            Column::whole("id"),
            Column::shorten("owner"),
            Column::whole("age"),
            Column::spare("attempts", 2),
            Column::spare("steals", 1),
            Column::shorten("seed"),
        ],
        s,
    );
    let n = shown(limit, r.expired.len());
    for e in &r.expired[..n] {
        let seed = seed_cell(e, "a master here skips it", s);
        t.add_row(vec![
            (e.order + 1).to_string(),
            e.id.short(),
            e.owner
                .as_deref()
                .map_or("-".into(), |o| printable(o).into_owned()),
            duration(e.age_seconds),
            e.attempts.clone().unwrap_or_else(|| "-".into()),
            e.steals.clone().unwrap_or_else(|| "-".into()),
            seed,
        ]);
    }
    writeln!(out, "{t}")?;
    left_out(out, n, r.expired.len(), "expired leases")
}

/// An expired record's seed cell: the path and whether it is here (what a
/// master here does without it, in `missing`), its continuation, or none.
fn seed_cell(e: &ExpiredRecord, missing: &str, s: &Styles) -> String {
    match (&e.seed, e.seed_here) {
        (Some(p), Some(true)) => format!("{} (here)", printable(p)),
        (Some(p), _) => s.warn(&format!("{} (not on this host: {missing})", printable(p))),
        (None, _) if e.continuation => "continuation".to_string(),
        (None, _) => s.warn("none"),
    }
}

fn committing_table(
    out: &mut dyn Write,
    r: &TableReport,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    if r.committing.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "{}",
        s.bold("committing records (never taken again, never recovered)")
    )?;
    let mut t = table(
        &[
            Column::whole("id"),
            Column::shorten("owner"),
            Column::whole("since"),
            Column::whole("manifest"),
            Column::shorten("seed"),
        ],
        s,
    );
    let n = shown(limit, r.committing.len());
    for c in &r.committing[..n] {
        let owner = c.owner.as_deref().map_or("-".into(), |o| {
            if c.owner_dead {
                s.error(&format!("{} (dead here)", printable(o)))
            } else {
                printable(o).into_owned()
            }
        });
        t.add_row(vec![
            c.id.short(),
            owner,
            age(c.age_seconds),
            if c.has_commit { "yes" } else { "none" }.to_string(),
            c.seed
                .as_deref()
                .map_or("-".into(), |p| printable(p).into_owned()),
        ]);
    }
    writeln!(out, "{t}")?;
    left_out(out, n, r.committing.len(), "committing records")
}

/// One line per finding of the smaller kinds.
fn other_findings(
    out: &mut dyn Write,
    r: &TableReport,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    let mut lines: Vec<String> = Vec::new();
    for m in &r.misplaced {
        lines.push(format!(
            "{} misplaced: in a shard directory its id does not name at {} shards (its own path {}: {})",
            m.path,
            count(r.shard_count.value),
            m.own_path,
            m.own_path_holds
        ));
    }
    for u in &r.unread {
        let text = match u.why {
            "beyond-count" => format!(
                "{}/ is a shard directory at or beyond the count {}: no scan at this count lists it ({})",
                u.name,
                count(r.shard_count.value),
                plural(u.records, "record", "records")
            ),
            "not-canonical" => format!(
                "{}/ is not a name upstream builds for a shard: never listed ({})",
                u.name,
                plural(u.records, "record", "records")
            ),
            "not-a-directory" => s.error(&format!(
                "{} is {}, not a directory: every claim of an id of that shard raises",
                u.name,
                u.entry_type.in_words()
            )),
            "probe" => format!(
                "{} is a left-over file-system probe directory (pid {}{})",
                u.name,
                u.pid.map_or("?".into(), |p| p.to_string()),
                if u.pid_running == Some(true) {
                    ", running here"
                } else {
                    ""
                }
            ),
            "kept" => format!("{}/ holds what leasejournal repair moved out", u.name),
            _ if u.records > 0 => format!(
                "{} is not a shard directory: its {} are never read",
                u.name,
                plural(u.records, "record", "records")
            ),
            _ => format!("{} is not part of the table (ignored)", u.name),
        };
        lines.push(text);
    }
    for b in &r.bad_locks {
        lines.push(s.error(&format!(
            "{} is {}: a claim of {} raises {} and stops the master",
            b.path,
            b.entry_type.in_words(),
            b.id.short(),
            b.raises
        )));
    }
    for t in &r.temp_files {
        lines.push(format!(
            "{} is a left-over temporary file (pid {}{})",
            t.path,
            t.pid,
            if t.pid_running_here {
                ", a process with that pid runs here"
            } else {
                ""
            }
        ));
    }
    for h in &r.held_locks {
        lines.push(s.warn(&format!(
            "{} is locked now by pid {} on this host",
            h.path, h.pid
        )));
    }
    for f in &r.future {
        lines.push(s.warn(&format!(
            "{} is {} and updated {} ahead of now: it never expires until the clock passes it",
            f.path,
            f.status.as_str(),
            duration(f.ahead_seconds)
        )));
    }
    for o in &r.odd {
        let what: Vec<&str> = o.oddities.iter().map(|x| x.describe()).collect();
        lines.push(format!("{}: {}", o.path, what.join("; ")));
    }
    if lines.is_empty() {
        return Ok(());
    }
    writeln!(out, "{}", s.bold("also"))?;
    let n = shown(limit, lines.len());
    for line in &lines[..n] {
        writeln!(out, "  {}", printable(line))?;
    }
    left_out(out, n, lines.len(), "lines")
}

fn history_table(
    out: &mut dyn Write,
    r: &TableReport,
    history: &[crate::operations::table::HistoryFile],
    s: &Styles,
) -> io::Result<()> {
    if history.is_empty() {
        return writeln!(out, "{}", s.warn("history: no file of that id"));
    }
    writeln!(out, "{}", s.bold("history (every file of the id)"))?;
    let mut last: Option<WorkId> = None;
    for h in history {
        if last != Some(h.id) {
            writeln!(out, "  {}", h.id)?;
            last = Some(h.id);
        }
        let own = if h.own_path { " (its own path)" } else { "" };
        writeln!(
            out,
            "    {} {}{own}: {}",
            h.role,
            h.path,
            h.reading
                .clone()
                .unwrap_or_else(|| h.entry_type.in_words().to_string())
        )?;
        if let Some(status) = h.status {
            writeln!(
                out,
                "      {} · owner {} · previous {} · worker {} · attempts {} · steals {}",
                status.as_str(),
                h.owner.as_deref().unwrap_or("-"),
                h.previous_owner.as_deref().unwrap_or("-"),
                h.worker.as_deref().unwrap_or("-"),
                h.attempts.as_deref().unwrap_or("-"),
                h.steals.as_deref().unwrap_or("-"),
            )?;
            if let Some(updated) = h.updated {
                let completed = h
                    .completed
                    .map(|c| format!(" · completed {}", super::utc(c)))
                    .unwrap_or_default();
                writeln!(
                    out,
                    "      updated {} ({}){completed}",
                    super::utc(updated),
                    age(r.now - updated)
                )?;
            }
            if let Some(token) = &h.token {
                writeln!(out, "      token {}", printable(token))?;
            }
        }
        if let Some(claim) = h.claim {
            writeln!(out, "      a fresh claim now: {}", claim_words(claim, s))?;
        }
    }
    Ok(())
}

/// One line of a table as `verify` and `recover` show it: what upstream's
/// scans count, what the next master start takes, and that other hosts'
/// masters and locks cannot be seen from here.
pub fn view(out: &mut dyn Write, v: &TableView, s: &Styles) -> io::Result<()> {
    let c = &v.counts;
    let mut line = format!(
        "{} ({} table, {}, TTL {}): {} leased ({} expired) · {} committing · {} done",
        printable(&v.path),
        v.table.as_str(),
        plural(v.shard_count, "shard", "shards"),
        duration(v.ttl),
        count(c.leased),
        count(c.expired),
        count(c.committing),
        count(c.done)
    );
    if v.rejected > 0 {
        line += &s.warn(&format!(", {} rejected", count(v.rejected as u64)));
    }
    if v.table == TableKind::Work {
        line += &format!(
            "; the next master start takes {}",
            plural(v.taken_at_start as u64, "expired lease", "expired leases")
        );
    }
    writeln!(out, "{} {line}", s.bold("table"))?;
    writeln!(
        out,
        "  {}",
        s.dim("masters and record locks on other hosts cannot be seen from here: a change to the table needs every master using it stopped")
    )
}

/// `recover` of a fenced lease table: what the next master start takes,
/// at most `limit` rows of it.
pub fn forecast(
    out: &mut dyn Write,
    f: &TableForecast,
    limit: Option<usize>,
    s: &Styles,
) -> io::Result<()> {
    let v = &f.view;
    writeln!(
        out,
        "{} {}  (forecast of the next master start; nothing is written)",
        s.bold("recover"),
        printable(&v.path)
    )?;
    writeln!(
        out,
        "  table       {} table, {}, TTL {}",
        v.table.as_str(),
        plural(v.shard_count, "shard", "shards"),
        duration(v.ttl)
    )?;
    let c = &v.counts;
    writeln!(
        out,
        "  records     {} leased ({} expired) · {} committing · {} done",
        count(c.leased),
        count(c.expired),
        count(c.committing),
        count(c.done)
    )?;
    let n = f.expired.len();
    if v.table == TableKind::Target {
        writeln!(
            out,
            "  next start  takes nothing: masters never recover target records; the next claim_group of a target overwrites an expired one ({})",
            plural(n as u64, "expired target lease", "expired target leases")
        )?;
        return Ok(());
    }
    let taken = v.taken_at_start;
    let mut line = format!(
        "takes {} (every start, with or without SYMCC_RESUME)",
        plural(taken as u64, "expired lease", "expired leases")
    );
    if n > taken {
        line += &format!("; {} more at later idle moments", count((n - taken) as u64));
    }
    writeln!(out, "  next start  {line}")?;
    if f.committing > 0 {
        writeln!(
            out,
            "  committing  {} no master will ever take",
            plural(f.committing as u64, "record", "records")
        )?;
    }
    if n == 0 {
        return Ok(());
    }
    let mut t = table(
        &[
            Column::whole("#"),
            Column::whole("id"),
            Column::shorten("owner"),
            Column::whole("age"),
            Column::shorten("seed"),
        ],
        s,
    );
    let rows = shown(limit, n);
    for e in &f.expired[..rows] {
        let seed = seed_cell(e, "skipped here", s);
        t.add_row(vec![
            (e.order + 1).to_string(),
            e.id.short(),
            e.owner
                .as_deref()
                .map_or("-".into(), |o| printable(o).into_owned()),
            duration(e.age_seconds),
            seed,
        ]);
    }
    writeln!(out, "{t}")?;
    more_rows(out, rows, n, "expired leases")
}

/// What a row limit left out of a table of `recover`.
pub(super) fn more_rows(
    out: &mut dyn Write,
    shown: usize,
    total: usize,
    what: &str,
) -> io::Result<()> {
    if shown < total {
        writeln!(
            out,
            "  … and {} more {what} (--limit 0 shows every one; --format json lists every one)",
            count((total - shown) as u64)
        )?;
    }
    Ok(())
}
