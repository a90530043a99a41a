//! `leasejournal verify`: the pre-resume go/no-go. Read-only.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::check::CheckArgs;
use super::output::{Bars, Format, KindArg, OutputArgs, ProgressArgs};
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
/// A state directory's digest ledger (.state_shards/) is read as the next
/// master start reads it: at --state-shards N, else SYMCC_STATE_SHARDS as
/// the master reads it, else min(64, --workers N); not at all when
/// SYMCC_PERSISTENT_STATE is 0, false, off or no. Files that count never
/// reads, tails the next append glues onto and lines upstream ignores are
/// findings, and so is an active lease whose input's digest is in no
/// ledger file (resume requeues it and the AFL rescan dispatches it again).
///
/// Every finding's severity answers one question: does resuming now lose,
/// duplicate or misattribute work? Where a command fixes a finding, the
/// report names it with the real path, and ends with the commands to run,
/// in order (next:); none of them ever reclaims a lease.
///
/// A finding no command fixes says what you must do instead (must do:),
/// and the report ends with those, after next:.
///
/// Verdict and exit status: go (0) when every path was checked, nothing is
/// an error (nor a warning, with --strict) and no master is running; no-go
/// (1) when something is; incomplete (2) when a path could not be checked,
/// or when its directory is on a file system other hosts share (NFS,
/// Lustre, GPFS, CephFS, BeeGFS, …) and a master on another host cannot be
/// ruled out (master-unseen: see --remote-master); busy (3) when a live
/// master holds .master-queue.lock of a checked directory (its pid is
/// named). Busy wins over incomplete, incomplete over no-go. Several paths
/// are checked side by side, reported in order.
#[derive(Clone, Debug, Args)]
pub struct VerifyArgs {
    /// Journals, snapshots and state directories; - reads standard input.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// Read file PATHs as this kind instead of detecting it.
    #[arg(long = "kind", value_enum, value_name = "KIND")]
    pub kind: Option<KindArg>,

    #[command(flatten)]
    pub check: CheckArgs,

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
    let settings = args.check.settings();
    // --quiet shows no progress either.
    let format = if args.quiet {
        Format::Json
    } else {
        args.output.format
    };
    let bars = Bars::for_paths(&args.progress, format, args.paths.len());
    let kind = args.kind.map(KindArg::kind);
    let next = args.check.next.next_start();
    let (report, exit) = verify::verify(&args.paths, kind, &settings, &next, &bars);
    // The human report names each path it could not check ("could not
    // check …"); without it (--quiet, JSON) stderr says so, once either way.
    if format != Format::Table {
        for error in &report.errors {
            super::tell(format_args!("{}", error.cause));
        }
    }
    if !args.quiet {
        args.output.emit(out, &report, |out, styles| {
            render::verify(out, &report, styles)
        })?;
    }
    Ok(exit)
}
