//! `leasejournal migrate`: move journals and snapshots out of the legacy
//! clock domain. Dry run by default.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::Finished;
use super::output::{Bars, OutputArgs, ProgressArgs, parse_now, system_now};
use super::write::{self, WriteArgs};
use crate::operations::migrate;
use crate::operations::report::Command;
use crate::render;

/// Move journals and snapshots out of the legacy (monotonic) clock domain.
///
/// Journal: nothing is reclaimed. Its active leases outside the unix clock
/// domain are listed; the master's resume reclaims every one of them and
/// requeues its work (F314 L5 holds without any change to the file), and a
/// reclaim written here would lose that work. With --rewrite the journal is
/// compacted (keeping completed ids) so no clock-less record remains;
/// legacy leases keep "clock":"legacy", exactly as upstream's compaction
/// writes them. Without --rewrite a journal has nothing to migrate.
///
/// Snapshot without "clock":"unix": replaced by exactly the bytes upstream
/// writes right after restoring it (legacy last_lease/last_complete and
/// every lease time zeroed, entries restore drops dropped). A unix snapshot
/// has nothing to migrate. Running migrate twice changes nothing the second
/// time.
///
/// Prints the plan and changes nothing unless --apply or --output.
#[derive(Clone, Debug, Args)]
pub struct MigrateArgs {
    /// A journal, a snapshot or a state directory.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// Compact a journal that has clock-less records (keeping completed
    /// ids and the legacy leases).
    #[arg(long = "rewrite")]
    pub rewrite: bool,

    /// Judge lease ages against this Unix time instead of the system clock.
    #[arg(long = "now", allow_negative_numbers = true, value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Runs `migrate`.
pub fn run(args: &MigrateArgs, out: &mut dyn Write) -> anyhow::Result<Finished> {
    let now = args.now.unwrap_or_else(system_now);
    let bars = Bars::new(&args.progress, args.output.format);
    let options = args.write.options();
    let (report, exit) = migrate::run(
        &args.path,
        args.rewrite,
        now,
        &options,
        &bars,
        &write::Stderr,
    )
    .map_err(|e| write::report_failure(&args.output, out, Command::Migrate, e))?;
    write::finish(&args.output, out, report, exit, render::migrate)
}
