//! `leasejournal verify`: the pre-resume go/no-go. Read-only.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::explain::CodeParser;
use super::output::{
    Bars, Format, KindArg, OutputArgs, ProgressArgs, parse_count, parse_now, parse_seconds,
    system_now,
};
use crate::operations::findings::{DEFAULT_SKEW, Settings, catalog::Code};
use crate::operations::{exit::Exit, verify};
use crate::render;

/// Check journals, snapshots and state directories before resuming.
///
/// Run it in the job script right before SYMCC_RESUME=1. Every problem is a
/// finding with a stable code, a severity, the file, the line and byte
/// offset, the id and a message; `leasejournal explain CODE` says what a
/// code means, what upstream does with it and which command fixes it.
///
/// It also forecasts the master's resume as `recover` does: an active
/// lease whose seed is not a file here and that has no continuation
/// (seed-missing; relative paths are looked up from the current directory,
/// so run it where the master runs), and work resume would queue twice.
///
/// Every finding's severity answers one question: does resuming now lose,
/// duplicate or misattribute work? Where a command fixes a finding, the
/// report names it with the real path, and ends with the commands to run,
/// in order (next:); none of them ever reclaims a lease.
///
/// Verdict and exit status: go (0) when every path was checked, nothing is
/// an error (nor a warning, with --strict) and no master is running; no-go
/// (1) when something is; incomplete (2) when a path could not be checked;
/// busy (3) when a live master holds .master-queue.lock of a checked
/// directory (its pid is named). Busy wins over incomplete, incomplete
/// over no-go. Several paths are checked side by side, reported in order.
#[derive(Clone, Debug, Args)]
pub struct VerifyArgs {
    /// Journals, snapshots and state directories; - reads standard input.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// Read file PATHs as this kind instead of detecting it.
    #[arg(long = "kind", value_enum, value_name = "KIND")]
    pub kind: Option<KindArg>,

    /// Judge lease ages and future times against this Unix time instead of
    /// the system clock.
    #[arg(long = "now", allow_negative_numbers = true, value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,

    /// Report active unix leases at least this old as expired; 0 (the
    /// default) is what the master's resume uses: every lease expires.
    #[arg(long = "ttl", allow_negative_numbers = true, value_name = "SECONDS", default_value = "0", value_parser = parse_seconds)]
    pub ttl: f64,

    /// Clock tolerance for future leases and clock regressions.
    #[arg(long = "skew", allow_negative_numbers = true, value_name = "SECONDS", default_value_t = DEFAULT_SKEW, value_parser = parse_seconds)]
    pub skew: f64,

    /// Fail on warnings too.
    #[arg(long = "strict")]
    pub strict: bool,

    /// Leave out findings with this code (repeatable).
    #[arg(
        long = "ignore",
        value_name = "CODE",
        value_parser = CodeParser,
        hide_possible_values = true
    )]
    pub ignore: Vec<Code>,

    /// Show at most N examples per code (0: all); counts stay exact.
    #[arg(long = "max-examples", allow_negative_numbers = true, value_name = "N", default_value_t = 10, value_parser = parse_count)]
    pub max_examples: usize,

    /// Print nothing on stdout; only the exit status tells.
    #[arg(long = "quiet", short = 'q')]
    pub quiet: bool,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Runs `verify`.
pub fn run(args: &VerifyArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let settings = Settings {
        now: args.now.unwrap_or_else(system_now),
        ttl: args.ttl,
        skew: args.skew,
        max_examples: args.max_examples,
        ignore: args.ignore.clone(),
        strict: args.strict,
    };
    // --quiet shows no progress either.
    let format = if args.quiet {
        Format::Json
    } else {
        args.output.format
    };
    let bars = Bars::for_paths(&args.progress, format, args.paths.len());
    let kind = args.kind.map(KindArg::kind);
    let (report, exit) = verify::verify(&args.paths, kind, &settings, &bars);
    for error in &report.errors {
        super::tell(format_args!("{}", error.cause));
    }
    if !args.quiet {
        args.output.emit(out, &report, |out, styles| {
            render::verify(out, &report, styles)
        })?;
    }
    Ok(exit)
}
