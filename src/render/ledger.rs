//! Human output of the digest ledger (`inspect` of a state directory, of
//! `.state_shards/` or of one `processed.NNN.log`), and the ledger as
//! `verify` and `recover` show it: one line, and each item's rescan.

use std::io::{self, Write};

use super::{Column, Styles, count, plural, printable, table};
use crate::engine::journal::{Rescan, RescanWhy};
use crate::engine::ledger::{MAX_DEDUP_ENTRIES, Reason, TailKind};
use crate::operations::inspect::LedgerInspection;
use crate::operations::ledger::{CountSource, LedgerFile, LedgerReport, LedgerView, QueryReport};
use crate::store::ledger::EntryKind;

/// Writes `inspect` of a ledger directory or file.
pub fn inspection(out: &mut dyn Write, r: &LedgerInspection, s: &Styles) -> io::Result<()> {
    writeln!(out, "{} {}", s.bold("digest ledger"), printable(&r.path))?;
    body(out, &r.ledger, s)
}

/// Writes a state directory's ledger, after its title.
pub fn ledger(out: &mut dyn Write, r: &LedgerReport, s: &Styles) -> io::Result<()> {
    writeln!(out, "{} {}", s.bold("digest ledger"), printable(&r.path))?;
    body(out, r, s)
}

fn body(out: &mut dyn Write, r: &LedgerReport, s: &Styles) -> io::Result<()> {
    let n = r.shard_count;
    writeln!(
        out,
        "  shards      read at {n} ({})",
        count_source(r.shard_count_from, r.shard_count_note.as_deref())
    )?;
    let shard_files = r.files.iter().filter(|f| f.index.is_some()).count() as u64;
    let foreign = r.files.len() as u64 - shard_files;
    let mut files = plural(shard_files, "shard file", "shard files");
    if let (Some(first), Some(last)) = (r.indices.first(), r.indices.last()) {
        files += &format!(" ({first:03}–{last:03})");
    }
    if foreign > 0 {
        files += &format!(
            ", {}",
            s.warn(&plural(
                foreign,
                "foreign name upstream never reads",
                "foreign names upstream never reads"
            ))
        );
    }
    writeln!(out, "  files       {files}")?;
    let fits = match &r.fitting_counts {
        None => "any count: no digest says which".to_string(),
        Some(c) if c.is_empty() => s.warn(
            "no count: some digests sit in files their shard names under no count that reads every file",
        ),
        Some(c) => {
            let shown: Vec<String> = c.iter().take(8).map(u32::to_string).collect();
            let more = if c.len() > 8 { ", …" } else { "" };
            let word = if c.len() == 1 { "count" } else { "counts" };
            format!("{word} {}{more} (every digest in its own shard's file)", shown.join(", "))
        }
    };
    writeln!(out, "  fits        {fits}")?;
    writeln!(
        out,
        "  digests     {} loaded · {} distinct · {} · {}",
        s.bold(&count(r.digests)),
        count(r.distinct),
        plural(r.valid, "valid line", "valid lines"),
        plural(r.duplicates, "duplicate", "duplicates")
    )?;
    if r.unread > 0 {
        let text = format!(
            "{} only in files {n} shards never read: the rescan dispatches their inputs again",
            plural(r.unread, "digest", "digests")
        );
        writeln!(out, "  unread      {}", s.error(&text))?;
    }
    if r.misplaced > 0 {
        let text = format!(
            "{} in a file their shard at {n} does not name (loaded all the same)",
            plural(r.misplaced, "line", "lines")
        );
        writeln!(out, "  misplaced   {text}")?;
    }
    if r.over_limit > 0 {
        let text = format!(
            "{} beyond {}: upstream drops that many, which ones it cannot be known",
            plural(r.over_limit, "digest", "digests"),
            count(MAX_DEDUP_ENTRIES)
        );
        writeln!(out, "  over limit  {}", s.error(&text))?;
    }
    let ignored: Vec<String> = Reason::ALL
        .iter()
        .filter(|reason| r.ignored.get(**reason) > 0)
        .map(|reason| {
            format!(
                "{} {}",
                count(r.ignored.get(*reason)),
                reason.name().replace('_', " ")
            )
        })
        .collect();
    super::ignored_line(out, r.ignored.total(), &ignored, s)?;
    if !r.files.is_empty() {
        files_table(out, &r.files, s)?;
    }
    for q in &r.queries {
        query(out, q, n, s)?;
    }
    Ok(())
}

/// Where the count a ledger was read at comes from, in words, with why
/// an input that comes first did not decide it.
fn count_source(from: CountSource, note: Option<&str>) -> String {
    let from = match from {
        CountSource::Option => "as --state-shards says",
        CountSource::Environment => "as SYMCC_STATE_SHARDS says",
        CountSource::Workers => "min(64, --workers), the master's default",
        CountSource::Files => "the smallest that reads every file; --state-shards N checks another",
    };
    match note {
        Some(note) => format!("{from}; {note}"),
        None => from.to_string(),
    }
}

/// Writes the ledger as `verify` and `recover` show it, in one line: the
/// count it is read at and why, and what that loads and leaves unread.
pub fn view(out: &mut dyn Write, v: &LedgerView, s: &Styles) -> io::Result<()> {
    writeln!(out, "{} {}", s.bold("ledger"), view_line(v, s))
}

fn view_line(v: &LedgerView, s: &Styles) -> String {
    let path = printable(&v.path);
    let Some(r) = &v.read else {
        return format!(
            "{path}: not read, SYMCC_PERSISTENT_STATE turns it off (the AFL rescan skips no input)"
        );
    };
    let n = r.shard_count;
    let from = match r.shard_count_from {
        CountSource::Files => {
            "the smallest that reads every file: no --state-shards, SYMCC_STATE_SHARDS or --workers"
                .to_string()
        }
        other => count_source(other, r.shard_count_note.as_deref()),
    };
    let shards = plural(u64::from(n), "shard", "shards");
    let mut line = format!(
        "{path}: read at {shards} ({from}): {} loaded",
        plural(r.digests, "digest", "digests")
    );
    if r.unread > 0 {
        line += &s.error(&format!(
            ", {} only in files {shards} never read",
            count(r.unread)
        ));
    }
    if r.over_limit > 0 {
        line += &s.error(&format!(
            ", {} beyond {} dropped",
            count(r.over_limit),
            count(MAX_DEDUP_ENTRIES)
        ));
    }
    line
}

/// Whether the AFL rescan dispatches an item's input again, for the
/// forecast's table; `requeued` when resume requeues the item (else it
/// drops it).
pub fn rescan_cell(rescan: &Rescan, requeued: bool, s: &Styles) -> String {
    let text = match rescan.why {
        RescanWhy::Loaded => "skips it",
        RescanWhy::MayBeDropped => "skips it, unless dropped past 5,000,000",
        RescanWhy::Unread => "sees it again: in an unread shard",
        RescanWhy::NotInLedger => "sees it again: not in the ledger",
        RescanWhy::LedgerOff => "sees it again: ledger off",
        RescanWhy::Continuation => "- (a continuation)",
        RescanWhy::NoDigest => "? (no digest)",
    };
    match (requeued, rescan.sees_again) {
        (true, Some(true)) => s.warn(&format!("{text} (runs twice)")),
        (false, Some(false)) => s.error(&format!("{text} (lost for good)")),
        _ => text.to_string(),
    }
}

fn files_table(out: &mut dyn Write, files: &[LedgerFile], s: &Styles) -> io::Result<()> {
    let mut t = table(
        &[
            Column::shorten("file"),
            Column::whole("read"),
            Column::whole("bytes"),
            Column::spare("lines", 2),
            Column::whole("valid"),
            Column::spare("new", 1),
            Column::spare("dup", 3),
            Column::whole("ignored"),
            Column::shorten("tail"),
        ],
        s,
    );
    for row in files.iter().map(|f| {
        let read = match (f.index, f.kind, f.read) {
            (None, _, _) => s.warn("never"),
            (_, EntryKind::Dir, _) => s.warn("dir"),
            (_, EntryKind::Other, _) => s.warn("other"),
            (_, _, true) => "yes".to_string(),
            (_, _, false) => s.error("no"),
        };
        let bytes = f.bytes.map_or("-".to_string(), count);
        let Some(scan) = &f.scan else {
            let dash = || "-".to_string();
            return vec![
                printable(&f.name).into_owned(),
                read,
                bytes,
                dash(),
                dash(),
                dash(),
                dash(),
                dash(),
                dash(),
            ];
        };
        let tail = match scan.tail.kind {
            TailKind::Clean => "clean".to_string(),
            TailKind::MissingNewline => s.warn("digest without newline: the next append loses it"),
            TailKind::Torn => s.warn(&format!(
                "torn ({} bytes): the next append is lost",
                count(scan.tail.bytes)
            )),
            TailKind::Nul => s.warn(&format!(
                "{} NUL bytes: the next append is lost",
                count(scan.tail.bytes)
            )),
        };
        vec![
            printable(&f.name).into_owned(),
            read,
            bytes,
            count(scan.lines),
            count(scan.valid),
            count(scan.new),
            count(scan.duplicates),
            count(scan.ignored.total()),
            tail,
        ]
    }) {
        t.add_row(row);
    }
    writeln!(out, "{t}")
}

fn query(out: &mut dyn Write, q: &QueryReport, n: u32, s: &Styles) -> io::Result<()> {
    let what = match &q.source {
        Some(file) => format!("{} ({})", q.digest, printable(file)),
        None => q.digest.to_string(),
    };
    writeln!(out, "  digest      {what}")?;
    let answer = match (q.loaded, q.sites.first()) {
        (_, None) => s.warn("not in the ledger: the AFL rescan dispatches this input"),
        (true, Some(_)) => {
            let first = q.sites.iter().find(|site| site.read).unwrap_or(&q.sites[0]);
            let mut text = format!("loaded from {} line {}", first.file, first.line);
            if q.sites.len() > 1 {
                text += &format!(" ({} in all)", plural(q.sites.len() as u64, "line", "lines"));
            }
            if q.may_be_dropped {
                text += &format!("; beyond {} digests upstream may drop it", count(MAX_DEDUP_ENTRIES));
            }
            s.ok(&text)
        }
        (false, Some(site)) => s.error(&format!(
            "only in {} line {}, which {n} shards never read: the rescan dispatches this input again",
            site.file, site.line
        )),
    };
    writeln!(out, "              {answer}")
}
