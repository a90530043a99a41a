//! Options every reporting subcommand shares: `--format` and `--color`.

use std::io::IsTerminal;

use clap::{Args, ValueEnum};

use crate::render::{ColorChoice, Styles};
use crate::store::format::Kind;
use crate::store::progress::{Meter, Progress};

/// The kind of a file, when its name and content do not settle it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// A JSONL lease journal (.work_leases.jsonl, .dispatch_protocol_deferred.jsonl).
    Journal,
    /// A .state_tasks.json snapshot.
    Snapshot,
}

impl KindArg {
    /// The domain kind.
    pub fn kind(self) -> Kind {
        match self {
            KindArg::Journal => Kind::Journal,
            KindArg::Snapshot => Kind::Snapshot,
        }
    }
}

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable text and tables.
    Table,
    /// One JSON document on stdout, with its schema_version.
    Json,
    /// One JSON object per journal line: inspect --records only, whose
    /// help names it (hidden from the other commands' help and completions).
    #[value(hide = true)]
    Ndjson,
}

/// When to colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    /// Colour when stdout is a terminal and NO_COLOR is not set.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// `--format` and `--color`.
#[derive(Clone, Debug, Args)]
pub struct OutputArgs {
    /// Output format: human tables, or JSON for machines.
    #[arg(long = "format", value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// When to use colour in table output; NO_COLOR turns "auto" off.
    #[arg(long = "color", value_enum, default_value_t = ColorArg::Auto, value_name = "WHEN")]
    pub color: ColorArg,
}

impl OutputArgs {
    /// Writes `report` to `out`: as JSON, or drawn by `table` with this
    /// run's styles. The one place that chooses between the two.
    pub fn emit<R: serde::Serialize + ?Sized>(
        &self,
        out: &mut dyn std::io::Write,
        report: &R,
        table: impl FnOnce(&mut dyn std::io::Write, &Styles) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        match self.format {
            Format::Json => crate::render::json(out, report),
            Format::Table => table(out, &self.styles()),
            // Refused before anything is read (cli::run).
            Format::Ndjson => Err(std::io::Error::other(
                "--format ndjson is the stream of inspect --records",
            )),
        }
    }

    /// The styles for this run, decided once.
    pub fn styles(&self) -> Styles {
        let choice = match self.color {
            ColorArg::Auto => ColorChoice::Auto,
            ColorArg::Always => ColorChoice::Always,
            ColorArg::Never => ColorChoice::Never,
        };
        // NO_COLOR, or a terminal that cannot show colour (TERM=dumb).
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
            || std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Styles::new(choice, std::io::stdout().is_terminal(), no_color).with_width(screen_width())
    }
}

/// The width tables fit in: `COLUMNS` when it is a number, else the
/// terminal's when stdout is one; otherwise tables are as wide as their
/// cells (a file or a pipe gets every character).
pub fn screen_width() -> Option<usize> {
    if let Some(columns) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
    {
        return Some(columns);
    }
    terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| w.0 as usize)
}

/// `--no-progress`.
#[derive(Clone, Debug, Args)]
pub struct ProgressArgs {
    /// Never show a progress bar (one appears on stderr for files over
    /// 64 MiB when stderr is a terminal and the format is not JSON).
    #[arg(long = "no-progress")]
    pub no_progress: bool,
}

/// The progress bars of one run: the options, the output format and,
/// when several files may be read at once, the bars showing, drawn
/// together.
pub struct Bars<'a> {
    args: &'a ProgressArgs,
    format: Format,
    together: Option<indicatif::MultiProgress>,
}

impl<'a> Bars<'a> {
    /// The bars of a run that reads one file at a time.
    pub fn new(args: &'a ProgressArgs, format: Format) -> Self {
        Bars {
            args,
            format,
            together: None,
        }
    }

    /// The bars of a run over `paths` command-line paths, read side by side
    /// when there are several.
    pub fn for_paths(args: &'a ProgressArgs, format: Format, paths: usize) -> Self {
        Bars {
            together: (paths > 1).then(|| {
                indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::stderr())
            }),
            ..Bars::new(args, format)
        }
    }
}

impl Progress for Bars<'_> {
    fn meter(&self, path: &std::path::Path, len: u64) -> Box<dyn Meter + '_> {
        let bar = self.args.bar(path, len, self.format);
        // A hidden bar stays out: joining the others would draw it.
        let bar = match &self.together {
            Some(together) if !bar.is_hidden() => together.add(bar),
            _ => bar,
        };
        Box::new(BarMeter(bar))
    }
}

/// A progress bar as an operation's meter.
struct BarMeter(indicatif::ProgressBar);

impl Meter for BarMeter {
    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// Files larger than this get a progress bar.
const PROGRESS_THRESHOLD: u64 = 64 << 20;

impl ProgressArgs {
    /// A bar for reading `len` bytes of `path`: bytes, rate and ETA on
    /// stderr, or a hidden one when it should not show.
    pub fn bar(&self, path: &std::path::Path, len: u64, format: Format) -> indicatif::ProgressBar {
        let show = !self.no_progress
            && format != Format::Json
            && len > PROGRESS_THRESHOLD
            && std::io::stderr().is_terminal();
        if !show {
            return indicatif::ProgressBar::hidden();
        }
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(len),
            indicatif::ProgressDrawTarget::stderr(),
        );
        let style = indicatif::ProgressStyle::with_template(
            // At most 59 columns whatever the terminal says (a name cut to
            // 12, a bar of 12, the byte counts, the ETA): it never wraps,
            // even at 60 columns.
            "{msg:12!} {bar:12} {bytes}/{total_bytes} ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ));
        bar
    }
}

/// Parses `--now`: finite Unix seconds.
pub fn parse_now(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of Unix seconds"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!(
            "{text:?} is not a finite, non-negative number of Unix seconds"
        ));
    }
    Ok(value)
}

/// Parses a point in time: Unix seconds, or an RFC 3339 timestamp such as
/// `2025-08-07T07:00:00Z`.
pub fn parse_time(text: &str) -> Result<f64, String> {
    if let Ok(seconds) = parse_now(text) {
        return Ok(seconds);
    }
    text.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond() as f64 / 1000.0)
        .map_err(|_| {
            format!("{text:?} is neither Unix seconds nor a time such as 2025-08-07T07:00:00Z")
        })
}

/// Parses a duration: finite, non-negative seconds.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "{text:?} is not a finite, non-negative number of seconds"
        )),
    }
}

/// Parses a count: a whole number from 0 up.
pub fn parse_count(text: &str) -> Result<usize, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a whole number from 0 up"))
}

/// Parses a worker rank: a whole number from 0 up.
pub fn parse_rank(text: &str) -> Result<u32, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a worker rank (a whole number from 0 up)"))
}

/// Parses `inspect --worker`: a rank, any size upstream's integers take.
pub fn parse_worker(text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a worker rank (a whole number from 0 up)"))
}

/// Parses an id prefix: 1 to 64 hex digits.
pub fn parse_id_prefix(text: &str) -> Result<String, String> {
    if text.is_empty() || text.len() > 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{text:?} is not 1 to 64 hexadecimal digits"));
    }
    Ok(text.to_ascii_lowercase())
}

/// The system clock as Unix seconds.
pub fn system_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// How many rows `inspect`'s tables show.
#[derive(Clone, Debug, Args)]
pub struct RowsArgs {
    /// Show at most N rows in each table (active leases oldest first; a
    /// fenced lease table's records), and say how many were left out (0:
    /// all; JSON always lists every one).
    #[arg(
        long = "limit",
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = DEFAULT_ROWS,
        value_parser = parse_count,
        conflicts_with = "all"
    )]
    pub limit: usize,

    /// Show every row of every table.
    #[arg(long = "all")]
    pub all: bool,
}

impl RowsArgs {
    /// The rows per table, `None` for all.
    pub fn limit(&self) -> Option<usize> {
        (!self.all && self.limit > 0).then_some(self.limit)
    }
}

/// `--limit` where `--all` means something else (`recover`, whose `--all`
/// selects every lease for `--discard`): rows per table, 20 unless given,
/// 0 for all.
#[derive(Clone, Debug, Args)]
pub struct RowLimit {
    /// At most N rows in each table (resume's reclaims, in its order; a
    /// fenced lease table's records), with how many were left out (0: all;
    /// JSON lists every one). Not with --discard: --first N caps that.
    #[arg(long = "limit", allow_negative_numbers = true, value_name = "N", value_parser = parse_count)]
    pub limit: Option<usize>,
}

impl RowLimit {
    /// The rows per table, `None` for all.
    pub fn rows(&self) -> Option<usize> {
        match self.limit {
            None => Some(DEFAULT_ROWS),
            Some(0) => None,
            Some(n) => Some(n),
        }
    }
}

/// The rows a table shows unless `--limit` says otherwise.
pub const DEFAULT_ROWS: usize = 20;
