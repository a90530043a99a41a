//! Human output of `diff` for two fenced lease tables: how they were
//! compared, each side's `snapshot_counts` and files side by side, then
//! the changes by kind, one line each: the id, the path, and what the
//! change means in upstream's state machine.

use std::io::{self, Write};

use serde_json::Value as Json;

use super::{Column, Styles, count, duration, plural, printable, table, utc};
use crate::engine::journal::short_id;
use crate::operations::diff::table::{ORDER, key_of};
use crate::operations::diff::{Change, DiffReport, TableDiff, TableTotals};

/// A row of the summary: its label, its number, and whether it is shown
/// when both sides have none.
type Line = (&'static str, fn(&TableTotals) -> u64, bool);

/// Writes the comparison of two tables.
pub fn tables(
    out: &mut dyn Write,
    r: &DiffReport,
    t: &TableDiff,
    (a, b): (&TableTotals, &TableTotals),
    s: &Styles,
) -> io::Result<()> {
    writeln!(out, "{} {}  →  {}", s.bold("diff"), r.a, r.b)?;
    for note in &r.notes {
        writeln!(out, "  note        {}", s.warn(note))?;
    }
    let from = |from: &str| match from {
        "default" => "the default".to_string(),
        other => other.to_string(),
    };
    writeln!(
        out,
        "  table       {} lease tables, records placed at {} shards ({}), TTL {} ({}), counted at {}",
        t.table.as_str(),
        t.shard_count.value,
        from(&t.shard_count.from),
        duration(t.ttl_effective),
        from(&t.ttl.from),
        utc(t.now)
    )?;
    let mut rows = table(
        &[Column::whole(""), Column::whole("A"), Column::whole("B")],
        s,
    );
    let lines: [Line; 12] = [
        ("leased", |x| x.counts.leased, true),
        ("of them expired", |x| x.counts.expired, true),
        ("committing", |x| x.counts.committing, true),
        ("done", |x| x.counts.done, true),
        ("accepted", |x| x.accepted, true),
        ("rejected", |x| x.rejected, true),
        ("record files", |x| x.records, true),
        ("outside their shard", |x| x.outside, false),
        ("lock files", |x| x.locks, true),
        ("temporary files", |x| x.temp_files, false),
        ("probe directories", |x| x.probes, false),
        ("other names", |x| x.other, false),
    ];
    for (label, of, always) in lines {
        let (x, y) = (of(a), of(b));
        if always || x + y > 0 {
            let mark = |n: u64| {
                if x == y { count(n) } else { s.bold(&count(n)) }
            };
            rows.add_row(vec![label.to_string(), mark(x), mark(y)]);
        }
    }
    writeln!(out, "{rows}")?;
    writeln!(
        out,
        "  records     {} of {} differ",
        count(t.ids - t.unchanged),
        plural(t.ids, "id", "ids")
    )?;
    if r.changes.is_empty() {
        let words = if r.identical {
            s.ok("none: identical")
        } else {
            "none left after the filters".to_string()
        };
        return writeln!(out, "  changes     {words}");
    }
    let total: u64 = r.counts.values().sum();
    let to_records: u64 = r
        .counts
        .iter()
        .filter(|(k, _)| k.starts_with("record_"))
        .map(|(_, n)| n)
        .sum();
    let mut words = format!(
        "{} ({} to records, {} to the names beside them)",
        plural(total, "change", "changes"),
        count(to_records),
        count(total - to_records)
    );
    if (r.changes.len() as u64) < total {
        words += &format!(
            "; at most {} of each kind listed, the first by shard and id (--max-examples)",
            count(t.max_examples as u64)
        );
    }
    writeln!(out, "  changes     {words}")?;
    for key in ORDER {
        let Some(&n) = r.counts.get(key) else {
            continue;
        };
        let shown: Vec<&Change> = r.changes.iter().filter(|c| key_of(c) == key).collect();
        let listed = if (shown.len() as u64) < n {
            format!(", {} listed", count(shown.len() as u64))
        } else {
            String::new()
        };
        writeln!(out, "  {} ({}{listed})", s.bold(heading(key)), count(n))?;
        let width = shown
            .iter()
            .map(|c| path(c).chars().count())
            .max()
            .unwrap_or(0);
        for c in shown {
            let id = c.id.as_deref().map_or("-", short_id);
            let place = path(c);
            let pad = width - place.chars().count();
            writeln!(
                out,
                "    {id:<12}  {}{}  {}",
                printable(&place),
                " ".repeat(pad),
                what(c, t.ttl_effective, s)
            )?;
        }
    }
    Ok(())
}

/// A kind of change, as a heading.
fn heading(key: &str) -> &'static str {
    match key {
        "record_added" => "records added",
        "record_removed" => "records removed",
        "record_status" => "status changed",
        "record_owner" => "taken by another owner",
        "record_token" => "re-claimed by the same owner",
        "record_updated" => "heartbeats",
        "record_bytes" => "other bytes changed",
        "record_reading" => "read differently by upstream's reader",
        "record_shard" => "moved to another directory",
        "lock_added" => "lock files added",
        "lock_removed" => "lock files removed",
        "lock_type" => "lock paths changed type",
        "temp_added" => "temporary files added",
        "temp_removed" => "temporary files removed",
        "temp_type" => "temporary paths changed type",
        "probe_added" => "probe directories added",
        "probe_removed" => "probe directories removed",
        "probe_type" => "probe paths changed type",
        "kept_added" => "leasejournal's own directories added",
        "kept_removed" => "leasejournal's own directories removed",
        "other_added" => "other names added",
        "other_removed" => "other names removed",
        _ => "other names changed type",
    }
}

/// The path a change is at (B's, else A's), its id shortened.
fn path(c: &Change) -> String {
    let at = |v: &Json| match v {
        Json::Array(items) => items.first().and_then(Json::as_str).map(str::to_string),
        other => other.get("path").and_then(Json::as_str).map(str::to_string),
    };
    let full = at(&c.after).or_else(|| at(&c.before)).unwrap_or_default();
    let Some((dir, name)) = full.rsplit_once('/') else {
        return full;
    };
    match (name.get(..64), &c.id) {
        (Some(hex), Some(id)) if hex == id => format!("{dir}/{}…{}", short_id(id), &name[64..]),
        _ => full,
    }
}

fn text<'v>(v: &'v Json, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Json::as_str)
}

fn number(v: &Json, key: &str) -> Option<f64> {
    v.get(key).and_then(Json::as_f64)
}

/// `owner`, or a dash.
fn owner(v: &Json) -> &str {
    text(v, "owner").unwrap_or("-")
}

/// "attempts 1 → 2, steals 0 → 1" for the fields that differ.
fn steps(a: &Json, b: &Json, keys: &[&str]) -> String {
    keys.iter()
        .filter(|k| a.get(**k) != b.get(**k))
        .map(|k| {
            let v = |x: &Json| match x.get(*k) {
                Some(Json::String(s)) if s.is_empty() => "\"\"".to_string(),
                Some(Json::String(s)) => s.clone(),
                Some(Json::Null) | None => "-".to_string(),
                Some(Json::Number(n)) if *k == "completed" => utc(n.as_f64().unwrap_or(0.0)),
                Some(other) => other.to_string(),
            };
            format!("{} {} → {}", k.replace('_', " "), v(a), v(b))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the status of B's record adds to a claim.
fn then(b: &Json) -> &'static str {
    match text(b, "status") {
        Some("committing") => "; since committed",
        Some("done") => "; since completed",
        _ => "",
    }
}

/// What a change means, in words.
fn what(c: &Change, ttl: f64, s: &Styles) -> String {
    let (a, b) = (&c.before, &c.after);
    let accepted = |v: &Json| text(v, "reading") == Some("accepted");
    let message = |v: &Json| text(v, "message").unwrap_or("").to_string();
    if c.entity != "record" {
        let kind = |v: &Json| text(v, "type").unwrap_or("-").to_string();
        return match (a.is_null(), b.is_null()) {
            (true, _) => format!("added ({})", kind(b)),
            (_, true) => format!("removed (was {})", kind(a)),
            _ => s.warn(&format!("{} → {}", kind(a), kind(b))),
        };
    }
    match (c.change, c.field) {
        (crate::operations::diff::ChangeKind::Added, _) => {
            if !accepted(b) {
                return s.error(&format!("rejected by B's reader: it {}", message(b)));
            }
            let worker = text(b, "worker").map_or(String::new(), |w| format!(" (worker {w})"));
            match text(b, "status") {
                Some("leased") => format!("leased by {}{worker}", owner(b)),
                Some(status) => format!("{status}, by {}{worker}", owner(b)),
                None => "-".into(),
            }
        }
        (crate::operations::diff::ChangeKind::Removed, _) => {
            if !accepted(a) {
                return format!("was rejected by A's reader: it {}", message(a));
            }
            match text(a, "status") {
                Some("leased") => {
                    format!("was leased by {}: abandoned, released or deleted", owner(a))
                }
                Some(status) => s.warn(&format!(
                    "was {status}, by {}: upstream never deletes a {status} record",
                    owner(a)
                )),
                None => "-".into(),
            }
        }
        (_, Some("shard")) => {
            let dirs = |v: &Json| match v {
                Json::Array(items) => items
                    .iter()
                    .filter_map(Json::as_str)
                    .map(|p| p.rsplit_once('/').map_or(p, |(dir, _)| dir).to_string() + "/")
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => "-".into(),
            };
            format!("moved from {} to {}", dirs(a), dirs(b))
        }
        (_, Some("reading")) => match (accepted(a), accepted(b)) {
            (true, _) => s.error(&format!(
                "rejected by B's reader: it {}; in A it was {}, by {}",
                message(b),
                text(a, "status").unwrap_or("-"),
                owner(a)
            )),
            (false, true) => s.ok(&format!(
                "accepted by B's reader: {}, by {}; A's rejected it: it {}",
                text(b, "status").unwrap_or("-"),
                owner(b),
                message(a)
            )),
            (false, false) => format!(
                "rejected by both readers: in A it {}; in B it {}",
                message(a),
                message(b)
            ),
        },
        (_, Some("bytes")) if !accepted(a) => {
            format!("other bytes, still rejected: it {}", message(b))
        }
        (_, Some("bytes")) => {
            let changed = steps(
                a,
                b,
                &[
                    "worker",
                    "attempts",
                    "steals",
                    "previous_owner",
                    "completed",
                ],
            );
            let size = |v: &Json| number(v, "size").unwrap_or(0.0) as u64;
            if changed.is_empty() {
                format!(
                    "other bytes (the payload, the commit or the layout): {} → {} bytes",
                    count(size(a)),
                    count(size(b))
                )
            } else {
                changed
            }
        }
        (_, field) => lease_words(field, a, b, ttl, s),
    }
}

/// A steal, a re-claim, a status step or a heartbeat, in words.
fn lease_words(field: Option<&str>, a: &Json, b: &Json, ttl: f64, s: &Styles) -> String {
    let updated_a = number(a, "updated").unwrap_or(0.0);
    let updated_b = number(b, "updated").unwrap_or(0.0);
    let (status_a, status_b) = (
        text(a, "status").unwrap_or("-"),
        text(b, "status").unwrap_or("-"),
    );
    let claim = number(b, "claimed").unwrap_or(updated_b);
    let gap = claim - updated_a;
    let counters = steps(a, b, &["attempts", "steals"]);
    let counters = if counters.is_empty() {
        String::new()
    } else {
        format!("; {counters}")
    };
    match field {
        Some("owner") => {
            let mut words = if status_a == "leased" {
                let mut w = format!(
                    "stolen by {} from {} after {} without a heartbeat",
                    owner(b),
                    owner(a),
                    duration(gap)
                );
                if gap < ttl {
                    w += &s.error(&format!(", before its TTL ({}) ran out", duration(ttl)));
                }
                w
            } else {
                s.error(&format!(
                    "taken by {} from a {status_a} record of {}: upstream's claim refuses those",
                    owner(b),
                    owner(a)
                ))
            };
            words += &format!("{counters}{}", then(b));
            match text(b, "previous_owner") {
                Some(prev) if Some(prev) != text(a, "owner") => {
                    words += &s.warn(&format!(
                        "; B names {prev} as the previous owner: another claim in between"
                    ));
                }
                _ => {}
            }
            words
        }
        Some("token") => format!(
            "re-claimed by the same owner, {}, after {} without a heartbeat{counters}{}",
            owner(b),
            duration(gap),
            then(b)
        ),
        Some("status") => {
            let delta = updated_b - updated_a;
            let expired = if delta >= ttl {
                s.error(&format!(
                    "; its lease had expired {} before (TTL {}): another master could have taken it",
                    duration(delta - ttl),
                    duration(ttl)
                ))
            } else {
                String::new()
            };
            let since = |from: &str| {
                number(b, "completed").map_or(String::new(), |t| {
                    format!(" {} after {from}", duration(t - updated_a))
                })
            };
            match (status_a, status_b) {
                ("leased", "committing") => format!(
                    "committed (begin_commit) {} after its last heartbeat{expired}",
                    duration(delta)
                ),
                ("committing", "done") => format!("completed{}", since("begin_commit")),
                ("leased", "done") => format!(
                    "completed without begin_commit{}",
                    since("its last heartbeat")
                ),
                (x, y) => s.error(&format!(
                    "status {x} → {y}: upstream never moves a record back"
                )),
            }
        }
        _ => {
            let delta = updated_b - updated_a;
            if delta < 0.0 {
                return s.error(&format!(
                    "updated moved back by {}: upstream never does this",
                    duration(-delta)
                ));
            }
            let mut words = format!("heartbeat +{}", duration(delta));
            if status_b != "leased" {
                words += &format!(" while {status_b}");
            }
            if delta >= ttl && status_a == "leased" {
                words += &s.error(&format!(
                    "; expired in between: {} without a heartbeat is over the TTL ({})",
                    duration(delta),
                    duration(ttl)
                ));
            }
            words
        }
    }
}
