//! `leasejournal repair`: the lossless fixes to run before the master
//! resumes, to the journals and the digest ledger. Dry run by default.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::Finished;
use super::output::{Bars, OutputArgs, ProgressArgs};
use super::table_args::TableArgs;
use super::write::{self, WriteArgs};
use crate::operations::repair;
use crate::operations::report::Command;
use crate::render;

/// Fix what a crash left in the journals and the digest ledger, losing no
/// lease and no digest.
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
/// For a state directory both journals are repaired, then its digest
/// ledger (.state_shards/, also named by itself or by one of its files);
/// the snapshot is not touched. A ledger file's torn or NUL-filled end,
/// which upstream's next append would glue onto and lose, is cut; a last
/// digest without its newline gets one, as does one a power loss left
/// before NULs (the NULs go, and upstream loads it again). No valid line is
/// dropped or added, and lines upstream ignores stay (compact drops them).
/// A fenced lease table's root (.work_lease_table/, .target_lease_table/)
/// is repaired only when named, and --apply only with
/// --all-masters-stopped: records upstream's reader rejects, temporary
/// files and probe directories whose pid is gone, lock paths that are no
/// regular file and shard paths that are no directory go to
/// .leasejournal-quarantine/, bytes kept; records outside the directory
/// their id names at --lease-shards N go back to their own path. Each
/// under the record's own lock; lock files and the records upstream
/// accepts stay (done ones go to .leasejournal-archive/ with
/// --archive-done).
/// Prints the plan and changes nothing unless --apply (in place, under the
/// master's lock, with a backup) or --output (a new file).
#[derive(Clone, Debug, Args)]
pub struct RepairArgs {
    /// Journals, state directories, digest ledgers (.state_shards) or their
    /// files, fenced lease table roots.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// Re-shard the digest ledger to N files, the count the next master
    /// start uses (SYMCC_STATE_SHARDS, by default min(64, workers)): every
    /// valid digest moves into the file int(digest[:8], 16) % N names and
    /// the files numbered N and above are removed (their backups keep
    /// them), so that the master loads every digest any file held. Files
    /// that receive digests are written first and files lose digests only
    /// after, so a crash at any point loses none.
    #[arg(long = "state-shards", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub state_shards: Option<u32>,

    #[command(flatten)]
    pub table: TableArgs,

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
    let (report, exit) = repair::run(
        &args.paths,
        args.state_shards,
        &args.table.request(),
        &args.write.options(),
        &bars,
        &write::Stderr,
    )
    .map_err(|e| write::report_failure(&args.output, out, Command::Repair, e))?;
    write::finish(&args.output, out, report, exit, render::repair)
}
