//! `leasejournal restore`: bring the work a discard dropped back from its
//! export. Dry run by default.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::Finished;
use super::output::{Bars, OutputArgs, ProgressArgs};
use super::write::{self, WriteArgs};
use crate::operations::report::Command;
use crate::operations::restore;
use crate::render;

/// Bring discarded work back: append a discard export's leases to its
/// journal again.
///
/// EXPORT is the file recover --discard wrote before it reclaimed the
/// leases (<journal>.discarded.<UTC>.jsonl): each discarded lease as
/// upstream's compaction writes it. Every line must be a lease upstream
/// would replay, each id once; anything else is refused (exit 2), naming
/// the line. The journal is JOURNAL, else the one the export is named
/// after: its name without .discarded.<UTC>.jsonl, in the same directory.
///
/// The master's resume requeues exactly the leases active when it starts,
/// so a lease comes back only if the discard's reclaim is the last thing
/// that happened to it: the journal's last lease of its id is that very
/// lease (same time, worker, attempts, clock and payload) and the id is
/// neither active nor completed now. Every other lease is skipped, and the
/// plan says why: active now (never doubled), completed since (resume
/// would run finished work again), leased again since (its work already
/// ran anew), or never leased in this journal. An export none of whose
/// leases this journal ever leased is refused as another journal's.
/// Running it twice restores nothing the second time.
///
/// With --apply, under the master's lock: the journal is backed up, a torn
/// tail is sealed, the leases are appended with one write and fsynced, and
/// the journal is re-read and must replay to the planned state. The
/// restored leases keep the times they were first leased at; verify does
/// not read them as the clock going back. Prints the plan and changes
/// nothing unless --apply or --output.
#[derive(Clone, Debug, Args)]
pub struct RestoreArgs {
    /// A discard export (<journal>.discarded.<UTC>.jsonl).
    #[arg(value_name = "EXPORT")]
    pub export: PathBuf,

    /// The journal to restore into (default: the one EXPORT is named
    /// after, in its directory).
    #[arg(value_name = "JOURNAL")]
    pub journal: Option<PathBuf>,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Runs `restore`.
pub fn run(args: &RestoreArgs, out: &mut dyn Write) -> anyhow::Result<Finished> {
    let bars = Bars::new(&args.progress, args.output.format);
    let (report, exit) = restore::run(
        &args.export,
        args.journal.as_deref(),
        &args.write.options(),
        &bars,
        &write::Stderr,
    )
    .map_err(|e| write::report_failure(&args.output, out, Command::Restore, e))?;
    write::finish(&args.output, out, report, exit, render::restore)
}
