//! Human output of what `repair` and `compact` do to a digest ledger: the
//! count it is read at, what upstream loads before and after, and one row
//! per shard file.

use std::io::{self, Write};

use super::{Column, Styles, count, how, plural, printable, table};
use crate::engine::ledger::TailSeal;
use crate::operations::ledger_change::{FileAction, LedgerChange, LedgerFileChange};
use crate::store::session::Mode;

/// The columns of a shard file's row.
const COLUMNS: [Column<'static>; 6] = [
    Column::whole("file"),
    Column::whole("action"),
    Column::spare("lines", 2),
    Column::spare("valid", 1),
    Column::shorten("moved / dropped"),
    Column::shorten("end"),
];

/// Writes one ledger's change, after the state files of its directory.
pub(super) fn ledger(
    out: &mut dyn Write,
    command: &str,
    mode: Mode,
    l: &LedgerChange,
    s: &Styles,
) -> io::Result<()> {
    let how = how(mode, "files", s);
    writeln!(out, "{} {}  ({how})", s.bold(command), printable(&l.path))?;
    for t in &l.removed_temp_files {
        writeln!(out, "  cleaned     removed stale temporary file {t}")?;
    }
    for t in &l.stale_temp_files_left {
        let left = format!("{}: {}; it stays", t.path, t.error);
        writeln!(out, "  left        {}", s.warn(&left))?;
    }
    let n = l.shard_count;
    let shards = if l.reshard {
        format!(
            "re-sharded to {n} (--state-shards): each valid digest moves into the file its shard names; files {n:03} and above are removed"
        )
    } else {
        format!(
            "read at {n}, the smallest count that reads every file, not SYMCC_STATE_SHARDS (verify says what a smaller count loses); repair --state-shards N moves the digests into the files N reads"
        )
    };
    writeln!(out, "  shards      {shards}")?;
    let (b, a) = (&l.before, &l.after);
    let unread = if b.unread > 0 {
        s.error(&format!(
            ", {} unread (their inputs are dispatched again)",
            count(b.unread)
        ))
    } else {
        String::new()
    };
    writeln!(
        out,
        "  loads       {} of {} distinct digests{unread} → {} of {}",
        count(b.digests),
        count(b.distinct),
        count(a.digests),
        count(a.distinct)
    )?;
    writeln!(
        out,
        "  lines       {} valid, {} ignored → {} valid, {} ignored",
        count(b.valid),
        count(b.ignored),
        count(a.valid),
        count(a.ignored)
    )?;
    let kept = match mode {
        Mode::Output => "the source file keeps them",
        _ if l.keeps_backup => "the backup keeps them",
        _ => "--no-backup: they are not kept",
    };
    if !l.files.is_empty() {
        let mut t = table(&COLUMNS, s);
        for f in &l.files {
            t.add_row(cells(f, kept, s));
        }
        writeln!(out, "{t}")?;
    }
    if let Some(note) = &l.note {
        writeln!(out, "  result      {}", s.ok(note))?;
    }
    if l.written {
        writeln!(
            out,
            "  result      {}",
            s.ok("written, re-read and confirmed")
        )?;
    }
    for f in &l.files {
        if let Some(b) = &f.backup {
            writeln!(out, "  backup      {b}")?;
        }
        if let Some(o) = &f.output {
            writeln!(out, "  output      {o}")?;
        }
        if let Some(c) = &f.late_appends_carried {
            let text = format!(
                "{}: {} ({}) another process appended during the change, ignoring {}: stop it",
                f.name,
                plural(c.lines, "line", "lines"),
                plural(c.bytes, "byte", "bytes"),
                crate::store::lock::MASTER_LOCK
            );
            writeln!(out, "  carried     {}", s.warn(&text))?;
        }
    }
    Ok(())
}

fn cells(f: &LedgerFileChange, kept: &str, s: &Styles) -> Vec<String> {
    let action = match f.action {
        FileAction::None => "-".to_string(),
        FileAction::Rewrite => "rewrite".to_string(),
        FileAction::Create => "create".to_string(),
        FileAction::Remove => s.warn("remove"),
        FileAction::Skip => s.warn("skip: not a file"),
    };
    let arrow = |a: u64, b: u64| {
        if a == b {
            count(a)
        } else {
            format!("{} → {}", count(a), count(b))
        }
    };
    let mut changed = Vec::new();
    if f.moved_out > 0 {
        changed.push(format!("{} out", count(f.moved_out)));
    }
    if f.moved_in > 0 {
        changed.push(format!("{} in", count(f.moved_in)));
    }
    if f.duplicates_dropped > 0 {
        changed.push(plural(f.duplicates_dropped, "duplicate", "duplicates"));
    }
    let cut_line = matches!(f.tail, TailSeal::Cut { .. }) as u64;
    let ignored = f.ignored_dropped - cut_line.min(f.ignored_dropped);
    if ignored > 0 && f.action != FileAction::Remove {
        changed.push(plural(ignored, "ignored line", "ignored lines"));
    }
    let end = match f.tail {
        _ if matches!(f.action, FileAction::Remove | FileAction::Skip) => "-".to_string(),
        TailSeal::None => "clean".to_string(),
        TailSeal::Cut {
            bytes, nul_bytes, ..
        } => s.warn(&format!(
            "cut {} ({kept})",
            if nul_bytes == bytes {
                plural(bytes, "NUL byte", "NUL bytes")
            } else if nul_bytes > 0 {
                format!(
                    "{}, {} NUL",
                    plural(bytes, "torn byte", "torn bytes"),
                    count(nul_bytes)
                )
            } else {
                plural(bytes, "torn byte", "torn bytes")
            }
        )),
        TailSeal::Terminate { nul_bytes: 0, .. } => "newline added".to_string(),
        TailSeal::Terminate { nul_bytes, .. } => format!(
            "{} cut, newline added: restores {}",
            plural(nul_bytes, "NUL byte", "NUL bytes"),
            f.restored
                .map_or(String::new(), |d| d.to_string()[..12].to_string())
        ),
    };
    vec![
        f.name.clone(),
        action,
        arrow(f.lines_before, f.lines_after),
        arrow(f.valid_before, f.valid_after),
        if changed.is_empty() {
            "-".to_string()
        } else {
            changed.join(", ")
        },
        end,
    ]
}
