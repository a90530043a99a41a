//! `inspect`'s views for after an incident: `--workers`, one row per
//! worker rank; `--timeline`, the campaign over time; `--records`, the
//! journal as a stream of one JSON object per line. (Shared by `inspect`,
//! not a command of its own.)

use std::io::Write;

use clap::Args;

use std::path::PathBuf;

use super::output::{Bars, Format, KindArg, OutputArgs, ProgressArgs, parse_time, system_now};
use crate::operations::exit::Exit;
use crate::operations::findings::Settings;
use crate::operations::{records, timeline, workers};
use crate::render;
use crate::store::error::InputError;

/// `inspect --workers`, `--timeline` and `--records`.
#[derive(Clone, Debug, Args)]
pub struct ForensicsArgs {
    /// One row per worker rank of each journal: leases given, completed,
    /// reclaimed (by resume, TTL expiry or abandon, as the records' shape
    /// tells), active now, the oldest active lease's age, median and p95
    /// lease duration (lease to done), the last activity, and "stalled"
    /// for a rank quiet far longer than the others (10 median lease
    /// durations, at least 10 minutes): a stuck or dead rank.
    #[arg(long = "workers", conflicts_with_all = ["worker", "id", "history", "limit", "all", "records", "timeline"])]
    pub workers: bool,

    /// The campaign over time, fitting the terminal: completions per time
    /// bucket as a sparkline, in all and per worker rank (each line scaled
    /// to its own peak), and beneath, R where reclaims happened, L where
    /// the legacy clock ends and X at the last record. JSON gives the
    /// bucket counts.
    #[arg(long = "timeline", conflicts_with_all = ["worker", "id", "history", "limit", "all", "records"])]
    pub timeline: bool,

    /// With --timeline: from this time (Unix seconds, or RFC 3339 such as
    /// 2025-08-07T07:00:00Z).
    #[arg(long = "since", value_name = "TIME", requires = "timeline", value_parser = parse_time)]
    pub since: Option<f64>,

    /// With --timeline: up to this time (Unix seconds, or RFC 3339).
    #[arg(long = "until", value_name = "TIME", requires = "timeline", value_parser = parse_time)]
    pub until: Option<f64>,

    /// With --timeline: draw with ASCII only (also when TERM=dumb).
    #[arg(long = "ascii", requires = "timeline")]
    pub ascii: bool,

    /// Write every line of the journals as one JSON object (with --format
    /// ndjson): file, line, offset, kind, op, id, hidden_id, worker,
    /// previous_worker, time, clock, attempts, effect (what replay did),
    /// ignored (why upstream ignores it) and findings (the codes verify
    /// gives the line), in file order, as upstream's reader splits lines.
    #[arg(long = "records", conflicts_with_all = ["worker", "id", "history", "limit", "all"])]
    pub records: bool,

    /// With --records: also give each line the codes that depend on the
    /// state at the end of the file (not-a-journal, legacy-clock-lease,
    /// future-lease, expired-lease, seed-missing, requeued-twice), reading
    /// each journal twice.
    #[arg(long = "end-state", requires = "records")]
    pub end_state: bool,
}

/// What `inspect` was asked besides these views.
pub struct Inspect<'a> {
    /// The PATHs.
    pub paths: &'a [PathBuf],
    /// `--kind`.
    pub kind: Option<KindArg>,
    /// `--now`.
    pub now: Option<f64>,
    /// `--format`, `--color`.
    pub output: &'a OutputArgs,
    /// `--no-progress`.
    pub progress: &'a ProgressArgs,
}

/// Runs `inspect --workers`, `--timeline` or `--records`; `None` when none
/// was asked for. `--format ndjson` and `--records` go together.
pub fn run(
    forensics: &ForensicsArgs,
    args: Inspect<'_>,
    out: &mut dyn Write,
) -> Option<anyhow::Result<Exit>> {
    let now = args.now.unwrap_or_else(system_now);
    let bars = Bars::new(args.progress, args.output.format);
    let kind = args.kind.map(KindArg::kind);
    if forensics.timeline && args.output.format != Format::Ndjson {
        // A sparkline has no width of its own: a pipe gets 80 columns.
        let width = super::output::screen_width().unwrap_or(80);
        let window = timeline::Window {
            since: forensics.since,
            until: forensics.until,
            buckets: width.saturating_sub(render::TIMELINE_MARGIN).max(10),
        };
        let (report, errors) = timeline::timeline(args.paths, kind, window, &bars);
        let ascii = forensics.ascii || std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        return Some(emit(&args, out, &report, &errors, |out, styles| {
            render::timeline(out, &report, ascii, styles)
        }));
    }
    if forensics.workers && args.output.format != Format::Ndjson {
        let (report, errors) = workers::workers(args.paths, kind, now, &bars);
        return Some(emit(&args, out, &report, &errors, |out, styles| {
            render::workers(out, &report, styles)
        }));
    }
    match (forensics.records, args.output.format == Format::Ndjson) {
        (false, false) => return None,
        (true, false) => {
            return Some(Err(anyhow::anyhow!(
                "inspect --records writes one JSON object per journal line: add --format ndjson; nothing was read"
            )));
        }
        (false, true) => {
            return Some(Err(anyhow::anyhow!(
                "--format ndjson is the stream of inspect --records: add --records, or use --format json; nothing was read"
            )));
        }
        (true, true) => {}
    }
    let settings = Settings::at(now);
    let tell = |e: &InputError| super::tell(format_args!("{e}"));
    Some(
        records::stream(
            args.paths,
            kind,
            forensics.end_state,
            &settings,
            &bars,
            &mut render::Ndjson::new(out),
            &tell,
        )
        .map_err(anyhow::Error::from),
    )
}

/// Names the paths that could not be read, then writes `report`: the exit
/// status says whether every path was read.
fn emit<R: serde::Serialize>(
    args: &Inspect<'_>,
    out: &mut dyn Write,
    report: &R,
    errors: &[InputError],
    draw: impl FnOnce(&mut dyn Write, &crate::render::Styles) -> std::io::Result<()>,
) -> anyhow::Result<Exit> {
    for error in errors {
        super::tell(format_args!("{error}"));
    }
    args.output.emit(out, report, draw)?;
    Ok(Exit::of_read_errors(errors))
}
