//! Rendering at the edge: data in, bytes out. Human tables and text with
//! colour from one [`Styles`] value, and JSON. Domain types never see this
//! module.

mod diff;
mod diff_table;
mod inspect;
mod lease_table;
mod ledger;
mod ledger_change;
mod records;
mod restore;
mod table;
mod table_repair;
mod timeline;
mod verify;
mod workers;
mod write;

pub use diff::diff;
pub use inspect::{directory, inspect_report, journal, path_report, snapshot};
pub use records::Ndjson;
pub use table::{Column, Fit, Table, printable};
pub use timeline::timeline;
pub use verify::{catalog, explain, verify};
pub use workers::workers;

/// The columns a timeline's line takes besides its buckets.
pub const TIMELINE_MARGIN: usize = 2 + timeline::LABEL + timeline::AFTER;
pub use restore::{restore, rollback};
pub use write::{compact, discard, forecast, forecasts, migrate, repair};

use std::io::{self, Write};

use owo_colors::OwoColorize;
use serde::Serialize;

/// Colour on or off, decided once from `--color`, the terminal and
/// `NO_COLOR`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Styles {
    enabled: bool,
    /// The screen width tables fit in (`None`: as wide as they are).
    width: Option<usize>,
}

/// What `--color` asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl Styles {
    /// Decides whether to colour. `NO_COLOR` (non-empty) turns `auto` off;
    /// an explicit `always` wins over it, as the convention allows.
    pub fn new(choice: ColorChoice, stdout_is_terminal: bool, no_color: bool) -> Styles {
        let enabled = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => stdout_is_terminal && !no_color,
        };
        Styles {
            enabled,
            width: None,
        }
    }

    /// These styles, with tables fitted into `width` columns.
    pub fn with_width(self, width: Option<usize>) -> Styles {
        Styles { width, ..self }
    }

    /// Plain output.
    pub fn plain() -> Styles {
        Styles {
            enabled: false,
            width: None,
        }
    }

    fn paint(&self, text: &str, f: impl Fn(&str) -> String) -> String {
        if self.enabled {
            f(text)
        } else {
            text.to_string()
        }
    }

    /// Headings and names.
    pub fn bold(&self, text: &str) -> String {
        self.paint(text, |t| t.bold().to_string())
    }

    /// Things that lose data.
    pub fn error(&self, text: &str) -> String {
        self.paint(text, |t| t.red().bold().to_string())
    }

    /// Things worth a look.
    pub fn warn(&self, text: &str) -> String {
        self.paint(text, |t| t.yellow().to_string())
    }

    /// All is well.
    pub fn ok(&self, text: &str) -> String {
        self.paint(text, |t| t.green().to_string())
    }

    /// Secondary detail.
    pub fn dim(&self, text: &str) -> String {
        self.paint(text, |t| t.dimmed().to_string())
    }
}

/// How a writing run writes, in words, for the `what` it changes
/// ("file", "files").
fn how(mode: crate::store::session::Mode, what: &str, s: &Styles) -> String {
    use crate::store::session::Mode;
    match mode {
        Mode::DryRun => s.warn(&format!(
            "dry run: nothing is written; --apply changes the {what} in place"
        )),
        Mode::Check => s.warn("check: nothing is written"),
        Mode::Apply => "in place".to_string(),
        Mode::Output => "to a new file".to_string(),
    }
}

/// The `ignored` line of a summary: `none`, or how many lines upstream
/// ignores (`total`) and how many for each reason (`reasons`, in words).
fn ignored_line(out: &mut dyn Write, total: u64, reasons: &[String], s: &Styles) -> io::Result<()> {
    if reasons.is_empty() {
        writeln!(out, "  ignored     {}", s.ok("none"))
    } else {
        writeln!(
            out,
            "  ignored     {}: {}",
            plural(total, "line", "lines"),
            s.warn(&reasons.join(", "))
        )
    }
}

/// Writes a value as pretty JSON followed by a newline.
pub fn json<T: Serialize + ?Sized>(out: &mut dyn Write, value: &T) -> io::Result<()> {
    // io::Error::from keeps an I/O error's kind (a closed pipe stays
    // BrokenPipe, which the caller ends quietly on).
    serde_json::to_writer_pretty(&mut *out, value).map_err(io::Error::from)?;
    writeln!(out)
}

/// A table in the project's one style, with a bold header: each column
/// says how it gives way when the table is wider than the screen.
pub fn table(columns: &[Column<'_>], styles: &Styles) -> Table {
    let shorten: Vec<usize> = columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.fit == Fit::Shorten)
        .map(|(i, _)| i)
        .collect();
    let mut spare: Vec<(u8, usize)> = columns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match c.fit {
            Fit::Spare(rank) => Some((rank, i)),
            Fit::Whole | Fit::Shorten => None,
        })
        .collect();
    spare.sort_unstable();
    let spare: Vec<usize> = spare.into_iter().map(|(_, i)| i).collect();
    Table::new(columns.iter().map(|c| styles.bold(c.title)).collect())
        .fit(styles.width)
        .shrink(&shorten)
        .drop_first(&spare)
}

/// A Unix time as `YYYY-MM-DD HH:MM:SS UTC`, or the raw number when it is
/// out of the calendar's range.
pub fn utc(seconds: f64) -> String {
    let stamp = if seconds.is_finite() && seconds.abs() < 2.0e11 {
        jiff::Timestamp::from_second(seconds.floor() as i64).ok()
    } else {
        None
    };
    match stamp {
        Some(t) => {
            let d = jiff::tz::Offset::UTC.to_datetime(t);
            if (1000..=9999).contains(&d.year()) {
                // Tables print thousands of these: no format string to parse.
                format!(
                    "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
                    d.year(),
                    d.month(),
                    d.day(),
                    d.hour(),
                    d.minute(),
                    d.second()
                )
            } else {
                t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
            }
        }
        None => crate::engine::json::float_repr_any(seconds),
    }
}

pub use crate::operations::numbers::{count, duration, plural};

/// An age relative to now: `3h 2m ago` or, for a time in the future,
/// `in 5m`.
pub fn age(seconds: f64) -> String {
    if seconds < 0.0 {
        format!("in {}", duration(-seconds))
    } else {
        format!("{} ago", duration(seconds))
    }
}

/// A number already written out (a Python integer) and the noun, singular
/// for exactly 1.
pub fn noun(n: impl std::fmt::Display, one: &str, many: &str) -> String {
    let n = n.to_string();
    let word = if n == "1" { one } else { many };
    format!("{n} {word}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_decision() {
        assert!(!Styles::new(ColorChoice::Auto, false, false).enabled);
        assert!(Styles::new(ColorChoice::Auto, true, false).enabled);
        assert!(!Styles::new(ColorChoice::Auto, true, true).enabled);
        assert!(Styles::new(ColorChoice::Always, false, true).enabled);
        assert!(!Styles::new(ColorChoice::Never, true, false).enabled);
        assert_eq!(Styles::plain().bold("x"), "x");
    }

    #[test]
    fn columns_give_way_as_their_fit_says() {
        let columns = [
            Column::whole("id"),
            Column::spare("b", 2),
            Column::spare("a", 1),
            Column::shorten("path"),
        ];
        let header = |width| {
            let mut t = table(&columns, &Styles::plain().with_width(Some(width)));
            t.add_row(vec![
                "554e5e40fca2",
                "bbbb",
                "aaaa",
                "/afl/queue/id:000005,sync:x",
            ]);
            t.to_string().lines().nth(1).unwrap().to_string()
        };
        // Whole at its width; the long path shortened first; then the
        // spare columns go by rank, "a" before "b" though it stands after
        // it; ids stay whole, whatever the width.
        assert_eq!(
            header(60),
            "│ id           ┆ b    ┆ a    ┆ path                        │"
        );
        assert_eq!(
            header(50),
            "│ id           ┆ b    ┆ a    ┆ path              │"
        );
        assert_eq!(header(40), "│ id           ┆ b    ┆ path           │");
        assert_eq!(header(30), "│ id           ┆ path        │");
        assert_eq!(header(10), "│ id           ┆ path       │");
    }

    #[test]
    fn times_and_durations() {
        assert_eq!(utc(1754550000.0), "2025-08-07 07:00:00 UTC");
        assert_eq!(utc(1e300), "1e+300");
        // The direct formatting equals strftime's wherever it is used.
        for seconds in [
            -30_610_224_000.0_f64, // 1000-01-01
            -1.0,
            0.0,
            951_782_400.5, // 2000-02-29
            1_754_550_000.9,
            199_999_999_999.0, // year 8307, the last one shown as a date
            -62_135_596_800.0, // year 1
            -12_000_000_000.0,
        ] {
            let t = jiff::Timestamp::from_second(seconds.floor() as i64).unwrap();
            let expected = if seconds.abs() < 2.0e11 {
                t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
            } else {
                crate::engine::json::float_repr_any(seconds)
            };
            assert_eq!(utc(seconds), expected, "{seconds}");
        }
        assert_eq!(duration(0.4), "0s");
        assert_eq!(duration(3725.0), "1h 2m");
        assert_eq!(duration(90061.0), "1d 1h");
        assert_eq!(age(-61.0), "in 1m 1s");
        assert_eq!(count(1234567), "1,234,567");
    }
}
