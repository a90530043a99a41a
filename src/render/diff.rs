//! Human output of `diff`.

use std::io::{self, Write};

use serde_json::Value as Json;

use super::{Column, Styles, count, duration, noun, plural, printable, table, utc};
use crate::engine::journal::{Clock, short_id};
use crate::operations::diff::{
    Bytes, Change, ChangeKind, DiffReport, FileDiff, LedgerDiff, LedgerTotals, Summary, TailKind,
};
use crate::operations::ledger::CountSource;
use crate::store::ledger::EntryKind;

fn value(field: Option<&str>, v: &Json, monotonic: bool) -> String {
    match (field, v) {
        (_, Json::Null) => "-".into(),
        (Some("last_lease" | "last_complete" | "updated" | "time"), Json::Number(n)) => {
            let t = n.as_f64().unwrap_or(0.0);
            if t == 0.0 {
                "0.0".into()
            } else if monotonic {
                format!("monotonic {}", crate::engine::json::float_repr(t))
            } else {
                utc(t)
            }
        }
        (_, Json::String(s)) => s.clone(),
        (_, Json::Array(items)) => names(items),
        (_, other) => other.to_string(),
    }
}

/// A list of names (a ledger's files), as text.
fn names(items: &[Json]) -> String {
    let names: Vec<String> = items
        .iter()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .collect();
    names.join(", ")
}

/// A one-line description of an added or removed entity.
fn entity(c: &Change, v: &Json, monotonic: bool) -> String {
    if v.is_null() {
        return "-".into();
    }
    let num = |k: &str| v.get(k).map_or("?".to_string(), |x| x.to_string());
    match c.entity {
        "task" => format!(
            "{}, {}, {}",
            noun(num("completions"), "completion", "completions"),
            noun(num("failures"), "failure", "failures"),
            noun(num("leases"), "lease", "leases")
        ),
        "lease" => format!("worker {}", num("worker")),
        "active" => {
            let time = v.get("time").cloned().unwrap_or(Json::Null);
            let unix = v.get("clock").and_then(Json::as_str) == Some("unix");
            format!(
                "worker {}, {}",
                num("worker"),
                value(Some("time"), &time, monotonic || !unix)
            )
        }
        "digest" => value(None, v, monotonic),
        "completed" => if v == &Json::Bool(true) {
            "completed"
        } else {
            "-"
        }
        .into(),
        _ => v.to_string(),
    }
}

/// A delta's duration: under a minute to the millisecond (3.5 → 9.0 is
/// `5.5s`, where whole seconds would say `5s`), else in its two largest
/// units.
fn short_duration(seconds: f64) -> String {
    if seconds < 60.0 && seconds.fract() != 0.0 {
        let text = format!("{seconds:.3}");
        format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
    } else {
        duration(seconds)
    }
}

fn delta(c: &Change) -> String {
    let Some(d) = &c.delta else {
        return String::new();
    };
    let Some(f) = d.as_f64() else {
        return d.to_string();
    };
    let timed = matches!(
        c.field,
        Some("last_lease" | "last_complete" | "time" | "elapsed")
    );
    if timed {
        let sign = if f < 0.0 { "-" } else { "+" };
        format!("{sign}{}", short_duration(f.abs()))
    } else if d.is_i64() || d.is_u64() {
        format!("{:+}", d.as_i64().unwrap_or(0))
    } else {
        format!("{f:+}")
    }
}

fn kind(s: &Styles, c: ChangeKind) -> String {
    match c {
        ChangeKind::Added => s.ok("added"),
        ChangeKind::Removed => s.error("removed"),
        ChangeKind::Changed => s.warn("changed"),
    }
}

/// Writes a diff report.
pub fn diff(out: &mut dyn Write, r: &DiffReport, s: &Styles) -> io::Result<()> {
    if let (Some(table), Summary::Table { a, b }) = (&r.table, &r.summary) {
        return super::diff_table::tables(out, r, table, (a, b), s);
    }
    writeln!(out, "{} {}  →  {}", s.bold("diff"), r.a, r.b)?;
    for note in &r.notes {
        writeln!(out, "  note        {}", s.warn(note))?;
    }
    match &r.summary {
        Summary::Snapshot { a, b, .. } => {
            writeln!(
                out,
                "  tasks       {} → {}   leases {} → {}",
                count(a.tasks as u64),
                count(b.tasks as u64),
                count(a.state_leases as u64),
                count(b.state_leases as u64)
            )?;
            writeln!(
                out,
                "  totals      completions {} → {}, failures {} → {}, generated {} → {}, elapsed {} → {}",
                a.stats.completions,
                b.stats.completions,
                a.stats.failures,
                b.stats.failures,
                a.stats.total_generated,
                b.stats.total_generated,
                duration(a.stats.elapsed),
                duration(b.stats.elapsed)
            )?;
        }
        Summary::Journal { a, b } => super::write::state_line(out, a, b)?,
        Summary::Ledger { a, b } => {
            if let Some(ledger) = &r.ledger {
                ledgers(out, ledger, a, b, s)?;
            }
        }
        Summary::Table { .. } => {}
    }
    if let Some(bytes) = &r.bytes {
        let tail = |k: &TailKind| match k {
            TailKind::Clean => "clean".to_string(),
            TailKind::Torn => s.warn("torn"),
            TailKind::Corrupt => s.error("corrupt"),
        };
        match bytes {
            Bytes::Identical => writeln!(out, "  bytes       identical")?,
            Bytes::Truncated { at_offset } => writeln!(
                out,
                "  bytes       B is A cut back to {} bytes",
                count(*at_offset)
            )?,
            Bytes::Diverged {
                offset,
                line_a,
                line_b,
                tail_a,
                tail_b,
            } => writeln!(
                out,
                "  bytes       diverge at offset {offset} (A line {line_a}, B line {line_b}); from there A is {}, B is {}",
                tail(tail_a),
                tail(tail_b)
            )?,
            Bytes::Appended {
                at_offset,
                appended,
                glued_onto_a_torn_tail,
            } => {
                writeln!(
                    out,
                    "  bytes       B is A plus {} from offset {at_offset}{}",
                    plural(appended.len() as u64, "appended line", "appended lines"),
                    if *glued_onto_a_torn_tail {
                        s.warn(" (the first is glued onto A's torn tail)")
                    } else {
                        String::new()
                    }
                )?;
                let mut t = table(
                    &[
                        Column::spare("line", 2),
                        Column::spare("offset", 1),
                        Column::whole("op"),
                        Column::whole("id"),
                        Column::shorten("effect"),
                    ],
                    s,
                );
                for rec in appended {
                    t.add_row(vec![
                        rec.line.to_string(),
                        rec.offset.to_string(),
                        printable(&rec.op).into_owned(),
                        rec.id
                            .as_deref()
                            .map_or("-".into(), |i| short_id(i).to_string()),
                        printable(&rec.effect).into_owned(),
                    ]);
                }
                writeln!(out, "{t}")?;
            }
        }
    }
    let (mono_a, mono_b) = match &r.summary {
        Summary::Snapshot {
            clock_a, clock_b, ..
        } => (*clock_a == Clock::Legacy, *clock_b == Clock::Legacy),
        Summary::Journal { .. } | Summary::Ledger { .. } | Summary::Table { .. } => (false, false),
    };
    if r.changes.is_empty() {
        writeln!(
            out,
            "  changes     {}",
            if r.identical {
                s.ok("none: identical")
            } else {
                "none in the compared state".to_string()
            }
        )?;
    } else {
        let words = match &r.ledger {
            Some(ledger) => digest_changes(r, ledger),
            None => summary(&r.changes),
        };
        writeln!(out, "  changes     {words}")?;
        let mut t = table(
            &[
                Column::whole(""),
                Column::spare("entity", 2),
                Column::whole("id"),
                Column::spare("field", 3),
                Column::shorten("before"),
                Column::shorten("after"),
                Column::spare("delta", 1),
            ],
            s,
        );
        for c in &r.changes {
            t.add_row(vec![
                kind(s, c.change),
                c.entity.to_string(),
                c.id.as_deref()
                    .map_or("-".into(), |i| i[..i.len().min(12)].to_string()),
                c.field.unwrap_or("").to_string(),
                if c.field.is_none() {
                    entity(c, &c.before, mono_a)
                } else {
                    value(c.field, &c.before, mono_a)
                },
                if c.field.is_none() {
                    entity(c, &c.after, mono_b)
                } else {
                    value(c.field, &c.after, mono_b)
                },
                delta(c),
            ]);
        }
        writeln!(out, "{t}")?;
    }
    if let Some(history) = &r.history {
        for (id, records) in history {
            writeln!(out, "  history     {}", short_id(id))?;
            for rec in records {
                writeln!(
                    out,
                    "    line {} (offset {}): {} — {}",
                    rec.line, rec.offset, rec.op, rec.effect
                )?;
            }
        }
    }
    Ok(())
}

/// Two ledgers' totals, what upstream loads from each, and the shard
/// indices that differ.
fn ledgers(
    out: &mut dyn Write,
    r: &LedgerDiff,
    a: &LedgerTotals,
    b: &LedgerTotals,
    s: &Styles,
) -> io::Result<()> {
    let side = |t: &LedgerTotals| {
        format!(
            "{} in {}",
            plural(t.distinct, "distinct digest", "distinct digests"),
            plural(t.files, "file", "files")
        )
    };
    writeln!(out, "  ledgers     A {} · B {}", side(a), side(b))?;
    let n = r.shard_count;
    let from = match r.shard_count_from {
        CountSource::Option => "as --state-shards says",
        CountSource::Environment => "as SYMCC_STATE_SHARDS says",
        CountSource::Workers => "min(64, the workers)",
        CountSource::Files => {
            "the smallest that reads every file of either side; --state-shards N checks another"
        }
    };
    writeln!(out, "  shards      compared at {n} ({from})")?;
    writeln!(
        out,
        "  loaded      A {} · B {}",
        count(a.loaded),
        count(b.loaded)
    )?;
    if r.load_added > 0 {
        let text = format!(
            "{} B loads and A does not: on B's ledger the rescan skips {}",
            plural(r.load_added, "digest", "digests"),
            inputs(r.load_added)
        );
        writeln!(out, "  load added  {text}")?;
    }
    if r.load_removed > 0 {
        let text = format!(
            "{} A loads and B does not: on B's ledger the rescan dispatches {} again",
            plural(r.load_removed, "digest", "digests"),
            inputs(r.load_removed)
        );
        writeln!(out, "  load lost   {}", s.error(&text))?;
    }
    for (name, t) in [("A", a), ("B", b)] {
        if t.unread > 0 {
            let text = format!(
                "{name}: {} only in files {n} shards never read",
                plural(t.unread, "digest", "digests")
            );
            writeln!(out, "  unread      {}", s.error(&text))?;
        }
    }
    let differ: Vec<&FileDiff> = r.files.iter().filter(|f| f.differs()).collect();
    writeln!(
        out,
        "  files       {} of {} {}",
        count(differ.len() as u64),
        plural(r.files.len() as u64, "shard index", "shard indices"),
        if differ.len() == 1 {
            "differs"
        } else {
            "differ"
        }
    )?;
    if differ.is_empty() {
        return Ok(());
    }
    let mut t = table(
        &[
            Column::shorten("file"),
            Column::whole("read"),
            Column::whole("A"),
            Column::whole("B"),
            Column::whole("added"),
            Column::whole("removed"),
            Column::spare("moved in", 1),
            Column::spare("moved out", 1),
        ],
        s,
    );
    let held = |kind: Option<EntryKind>, digests: u64| match kind {
        None => "-".to_string(),
        Some(EntryKind::File) => count(digests),
        Some(EntryKind::Dir) => s.warn("dir"),
        Some(EntryKind::Other) => s.warn("other"),
    };
    for f in differ {
        t.add_row(vec![
            f.name.clone(),
            if f.read { "yes".into() } else { s.error("no") },
            held(f.a, f.digests_a),
            held(f.b, f.digests_b),
            count(f.added),
            count(f.removed),
            count(f.moved_in),
            count(f.moved_out),
        ]);
    }
    writeln!(out, "{t}")
}

/// The inputs of `n` digests.
fn inputs(n: u64) -> &'static str {
    if n == 1 { "its input" } else { "their inputs" }
}

/// Two ledgers' changes in words, from the exact counts: "3 digests added,
/// 1 removed, 98 moved to other files".
fn digest_changes(r: &DiffReport, ledger: &LedgerDiff) -> String {
    let of = |key: &str| r.counts.get(key).copied().unwrap_or(0);
    let mut parts = Vec::new();
    for (key, word) in [
        ("digest_added", "added"),
        ("digest_removed", "removed"),
        ("digest_changed", "moved to other files"),
    ] {
        let n = of(key);
        if n > 0 {
            let what = if parts.is_empty() {
                plural(n, "digest", "digests")
            } else {
                count(n)
            };
            parts.push(format!("{what} {word}"));
        }
    }
    let mut words = parts.join(", ");
    let shown = r.changes.len() as u64;
    let total = of("digest_added") + of("digest_removed") + of("digest_changed");
    if shown < total {
        words += &format!(
            "; at most {} of each kind listed, the smallest (--max-examples)",
            count(ledger.max_examples as u64)
        );
    }
    words
}

/// The changes in words: "9 fields changed in 3 tasks, 1 task added, …".
fn summary(changes: &[crate::operations::diff::Change]) -> String {
    use crate::operations::diff::ChangeKind;
    let mut parts = Vec::new();
    for (entity, one, many) in [
        ("task", "task", "tasks"),
        ("lease", "state lease", "state leases"),
        ("config", "setting", "settings"),
        ("active", "active lease", "active leases"),
        ("completed", "completed id", "completed ids"),
    ] {
        let of = |kind: ChangeKind| {
            changes
                .iter()
                .filter(move |c| c.entity == entity && c.change == kind)
        };
        let changed: Vec<_> = of(ChangeKind::Changed).collect();
        if !changed.is_empty() {
            let ids: std::collections::BTreeSet<Option<&String>> =
                changed.iter().map(|c| c.id.as_ref()).collect();
            parts.push(if entity == "config" {
                format!("{} changed", plural(changed.len() as u64, one, many))
            } else {
                format!(
                    "{} changed in {}",
                    plural(changed.len() as u64, "field", "fields"),
                    plural(ids.len() as u64, one, many)
                )
            });
        }
        for (kind, word) in [
            (ChangeKind::Added, "added"),
            (ChangeKind::Removed, "removed"),
        ] {
            let n = of(kind).count() as u64;
            if n > 0 {
                parts.push(format!("{} {word}", plural(n, one, many)));
            }
        }
    }
    parts.join(", ")
}
