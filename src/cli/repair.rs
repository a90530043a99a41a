//! `leasejournal repair`: the lossless fixes to run before the master
//! resumes. Dry run by default.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::Finished;
use super::output::{Bars, OutputArgs, ProgressArgs};
use super::write::{self, WriteArgs};
use crate::operations::repair;
use crate::operations::report::Command;
use crate::render;

/// Fix what a crash left in the journals, losing no lease.
///
/// Run it before resuming when verify names it. A torn or zero-filled last
/// line is cut off (the backup keeps its bytes); a complete last record
/// without a newline gets one, through a rewrite of the file, never in
/// place (a power loss could leave the record followed by a NUL, which
/// upstream skips); a record glued onto a torn fragment is put
/// back on a line of its own, and a byte order mark in front of the first
/// record is removed, so upstream reads those records again.
///
/// It never appends a reclaim: after it, the active leases are those before
/// it plus any a salvaged record brings back, less any a salvaged done
/// completes (the plan names both). A glued reclaim of a lease that is
/// active at that point is not applied, since it would take the work away
/// from the master's resume; its line is left out instead.
///
/// For a state directory both journals are repaired; the snapshot is not
/// touched. Prints the plan and changes nothing unless --apply (in place,
/// under the master's lock, with a backup) or --output (a new file).
#[derive(Clone, Debug, Args)]
pub struct RepairArgs {
    /// Journals or state directories.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Runs `repair`.
pub fn run(args: &RepairArgs, out: &mut dyn Write) -> anyhow::Result<Finished> {
    let bars = Bars::new(&args.progress, args.output.format);
    let (report, exit) = repair::run(&args.paths, &args.write.options(), &bars, &write::Stderr)
        .map_err(|e| write::report_failure(&args.output, out, Command::Repair, e))?;
    write::finish(&args.output, out, report, exit, render::repair)
}
