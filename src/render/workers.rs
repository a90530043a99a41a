//! `inspect --workers`: one table per journal, one row per worker rank.

use std::io::{self, Write};

use super::{Column, Styles, age, count, duration, plural, printable, table, utc};
use crate::operations::workers::WorkersReport;

/// Writes the workers of each journal.
pub fn workers(out: &mut dyn Write, r: &WorkersReport, s: &Styles) -> io::Result<()> {
    if r.files.is_empty() {
        return writeln!(out, "no journal: no worker to show");
    }
    for (i, file) in r.files.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{} {}", s.bold("workers of"), printable(&file.path))?;
        if file.workers.is_empty() {
            writeln!(out, "  no lease was ever given to a worker")?;
            continue;
        }
        let stalled = file.workers.iter().filter(|w| w.stalled).count();
        let median = file
            .lease_seconds_median
            .map_or("no lease completed".to_string(), |m| {
                format!("median lease {}", duration(m))
            });
        let last = file
            .last_activity
            .map_or("no unix-clock activity".to_string(), |t| {
                format!("last activity {} ({})", utc(t), age(r.now - t))
            });
        writeln!(
            out,
            "  {} · {median} · {last}",
            plural(file.workers.len() as u64, "rank", "ranks")
        )?;
        if stalled > 0 {
            writeln!(
                out,
                "  {}",
                s.warn(&format!(
                    "{} quiet far longer than the others (stalled): a stuck or dead rank?",
                    if stalled == 1 {
                        "1 rank went".to_string()
                    } else {
                        format!("{} ranks went", count(stalled as u64))
                    }
                ))
            )?;
        }
        let mut t = table(
            &[
                // Spare as it always was: the fitting used to go by the
                // name "worker", whatever the table.
                Column::spare("worker", 1),
                Column::whole("leases"),
                Column::whole("done"),
                Column::whole("reclaimed"),
                Column::whole("by resume/ttl/abandon"),
                Column::whole("active"),
                Column::whole("oldest active"),
                Column::whole("median"),
                Column::whole("p95"),
                Column::whole("last activity"),
            ],
            s,
        );
        for w in &file.workers {
            let by = &w.reclaimed_by;
            t.add_row(vec![
                w.worker.to_string(),
                count(w.leases),
                count(w.completed),
                count(w.reclaimed),
                format!("{}/{}/{}", by.resume, by.ttl_expiry, by.abandon),
                count(w.active),
                w.oldest_active_age_seconds.map_or("-".into(), duration),
                w.lease_seconds_median.map_or("-".into(), duration),
                w.lease_seconds_p95.map_or("-".into(), duration),
                match (w.last_activity, w.stalled) {
                    (None, _) => "-".into(),
                    (Some(t), false) => age(r.now - t),
                    (Some(t), true) => s.warn(&format!("{} (stalled)", age(r.now - t))),
                },
            ]);
        }
        writeln!(out, "{t}")?;
    }
    Ok(())
}
