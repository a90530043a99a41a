//! `inspect`'s views for after an incident: `--workers`, one row per
//! worker rank, and `--records`, the journal as a stream of one JSON
//! object per line. (Shared by `inspect`, not a command of its own.)

use std::io::Write;

use clap::Args;

use std::path::PathBuf;

use super::output::{Bars, Format, KindArg, OutputArgs, ProgressArgs, system_now};
use crate::operations::exit::Exit;
use crate::operations::verify::Settings;
use crate::operations::{input, records, workers};
use crate::render;

/// `inspect --workers` and `--records`.
#[derive(Clone, Debug, Args)]
pub struct ForensicsArgs {
    /// One row per worker rank of each journal: leases given, completed,
    /// reclaimed (by resume, TTL expiry or abandon, as the records' shape
    /// tells), active now, the oldest active lease's age, median and p95
    /// lease duration (lease to done), the last activity, and "stalled"
    /// for a rank quiet far longer than the others (10 median lease
    /// durations, at least 10 minutes): a stuck or dead rank.
    #[arg(long = "workers", conflicts_with_all = ["worker", "id", "history", "limit", "all", "records"])]
    pub workers: bool,

    /// Write every line of the journals as one JSON object (with --format
    /// ndjson): file, line, offset, kind, op, id, hidden_id, worker,
    /// previous_worker, time, clock, attempts, effect (what replay did),
    /// ignored (why upstream ignores it) and findings (the codes verify
    /// gives the line), in file order, as upstream's reader splits lines.
    #[arg(long = "records", conflicts_with_all = ["worker", "id", "history", "limit", "all"])]
    pub records: bool,
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

impl<'a> Inspect<'a> {
    /// What was asked, showing progress as the defaults say.
    pub fn new(
        paths: &'a [PathBuf],
        kind: Option<KindArg>,
        now: Option<f64>,
        output: &'a OutputArgs,
    ) -> Self {
        static DEFAULT: ProgressArgs = ProgressArgs { no_progress: false };
        Inspect {
            paths,
            kind,
            now,
            output,
            progress: &DEFAULT,
        }
    }

    /// With these progress options.
    pub fn with_progress(self, progress: &'a ProgressArgs) -> Self {
        Inspect { progress, ..self }
    }
}

/// Runs `inspect --workers` or `--records`; `None` when neither was asked
/// for. `--format ndjson` and `--records` go together.
pub fn run(
    forensics: &ForensicsArgs,
    args: Inspect<'_>,
    out: &mut dyn Write,
) -> Option<anyhow::Result<Exit>> {
    let now = args.now.unwrap_or_else(system_now);
    if forensics.workers && args.output.format != Format::Ndjson {
        let bars = Bars::new(args.progress, args.output.format);
        let kind = args.kind.map(KindArg::kind);
        let (report, errors) = workers::workers(args.paths, kind, now, &bars);
        for error in &errors {
            super::tell(format_args!("{error}"));
        }
        let emitted = args.output.emit(out, &report, |out, styles| {
            render::workers(out, &report, styles)
        });
        return Some(
            emitted
                .map(|()| input::exit_for(&errors))
                .map_err(anyhow::Error::from),
        );
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
    let settings = Settings {
        now,
        ttl: 0.0,
        skew: 300.0,
        max_examples: 1,
        ignore: Vec::new(),
        strict: false,
    };
    let bars = Bars::new(args.progress, args.output.format);
    let tell = |e: &input::InputError| super::tell(format_args!("{e}"));
    let kind = args.kind.map(KindArg::kind);
    Some(
        records::stream(args.paths, kind, &settings, &bars, out, &tell)
            .map_err(anyhow::Error::from),
    )
}
