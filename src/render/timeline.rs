//! `inspect --timeline`: a sparkline per line, the total first, then one
//! per worker rank, each scaled to its own peak; a line of marks beneath;
//! the range and the bucket width above.

use std::io::{self, Write};

use super::{Styles, count, duration, printable, utc};
use crate::operations::timeline::{JournalTimeline, TimelineReport};

/// The columns a line's label takes: `worker 999` and a space.
pub const LABEL: usize = 11;

/// The columns after a sparkline: the count and the peak.
pub const AFTER: usize = 24;

/// Levels of a bucket, from none to the line's peak.
const BLOCKS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
const ASCII: [char; 9] = [' ', '.', ':', '-', '=', '+', '*', '#', '@'];

/// Writes the timeline of each journal; `ascii` draws with ASCII only.
pub fn timeline(
    out: &mut dyn Write,
    r: &TimelineReport,
    ascii: bool,
    s: &Styles,
) -> io::Result<()> {
    if r.files.is_empty() {
        return writeln!(out, "no journal: no timeline to draw");
    }
    for (i, file) in r.files.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        journal(out, file, ascii, s)?;
    }
    Ok(())
}

fn journal(out: &mut dyn Write, t: &JournalTimeline, ascii: bool, s: &Styles) -> io::Result<()> {
    writeln!(out, "{} {}", s.bold("timeline of"), printable(&t.path))?;
    let Some(start) = t.start else {
        return writeln!(out, "  no unix-clock record in the window");
    };
    let end = start + t.bucket_seconds * t.completions.len() as f64;
    let (to, dot) = if ascii { ("->", "-") } else { ("→", "·") };
    writeln!(out, "  {} {to} {}", utc(start), utc(end))?;
    writeln!(
        out,
        "  completions per {} bucket, each line scaled to its peak",
        duration(t.bucket_seconds)
    )?;
    let levels = if ascii { &ASCII } else { &BLOCKS };
    let line = |out: &mut dyn Write, label: &str, counts: &[u64]| {
        let peak = counts.iter().copied().max().unwrap_or(0);
        let spark: String = counts
            .iter()
            .map(|&c| {
                if c == 0 {
                    levels[0]
                } else {
                    levels[(c * 8).div_ceil(peak).clamp(1, 8) as usize]
                }
            })
            .collect();
        let total: u64 = counts.iter().sum();
        writeln!(
            out,
            "  {label:<width$} {spark} {} (peak {})",
            count(total),
            count(peak),
            width = LABEL - 1
        )
    };
    line(out, "total", &t.completions)?;
    for rank in &t.workers {
        line(out, &format!("worker {}", rank.worker), &rank.completions)?;
    }
    let bucket_of = |time: Option<f64>| {
        time.map(|time| ((time - start) / t.bucket_seconds).floor())
            .filter(|b| *b >= 0.0 && (*b as usize) < t.completions.len())
            .map(|b| b as usize)
    };
    let (last, legacy) = (bucket_of(t.last_record), bucket_of(t.legacy_end));
    let marks: String = (0..t.completions.len())
        .map(|b| {
            // Reclaims are drawn wherever they are, the last bucket too;
            // the legend then says the last record is under the R.
            if t.reclaims[b] > 0 {
                'R'
            } else if Some(b) == last {
                'X'
            } else if Some(b) == legacy {
                'L'
            } else {
                ' '
            }
        })
        .collect();
    writeln!(
        out,
        "  {:<width$} {}",
        "marks",
        marks.trim_end(),
        width = LABEL - 1
    )?;
    let legacy_under_r = if legacy.is_some_and(|b| t.reclaims[b] > 0) {
        " (drawn as R)"
    } else {
        ""
    };
    writeln!(
        out,
        "  R {} {dot} L the legacy clock ends{legacy_under_r}",
        crate::operations::numbers::plural(t.reclaims.iter().sum(), "reclaim", "reclaims")
    )?;
    let under_r = last.is_some_and(|b| t.reclaims[b] > 0);
    match t.last_record {
        Some(time) if under_r => writeln!(out, "  X the last record, {} (drawn as R)", utc(time)),
        Some(time) => writeln!(out, "  X the last record, {}", utc(time)),
        None => Ok(()),
    }
}
