//! `leasejournal compact`: rewrite a journal as its state. Dry run by
//! default.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::Finished;
use super::output::{Bars, OutputArgs, ProgressArgs};
use super::write::{self, WriteArgs};
use crate::operations::compact;
use crate::operations::report::Command;
use crate::render;

/// Rewrite a journal as the state it replays to, and a digest ledger as its
/// distinct digests.
///
/// Keeps the active leases, sorted by id, as upstream's compaction does,
/// each with its own clock marker ("legacy" stays legacy); torn, corrupt and
/// ignored lines are dropped (they stay in the backup) and odd values are
/// written the way upstream converts them. The plan lists what goes: the
/// superseded records and the ignored lines by finding code. A plan that
/// drops records hidden in ignored lines (repair would bring them back;
/// run it first) is written only with --drop-hidden, one that empties a
/// file with bytes but no line that changes the state only with
/// --allow-empty; without them compact shows the plan and writes nothing.
///
/// By default every completed id is also kept, as its last lease followed by
/// its done record, so the completed set survives. Upstream's own
/// compaction forgets completed ids, and after a restart a finished item can
/// then be dispatched and solved again; --drop-completed writes exactly what
/// upstream's compact() writes.
///
/// For a state directory, its digest ledger (.state_shards/, also named by
/// itself or by one of its files) is compacted too: each file keeps each
/// of its distinct valid digests once, in the order first met, as
/// upstream writes them; duplicates and lines upstream ignores go, no
/// valid digest does (a digest a power loss left before NULs is kept). A
/// digest is never moved to another file, nor dropped because another
/// file holds it too (repair --state-shards moves them).
///
/// The result is re-read before it is published, and refused unless it
/// replays to the intended state. Prints the plan and changes nothing
/// unless --apply or --output.
#[derive(Clone, Debug, Args)]
pub struct CompactArgs {
    /// A journal, a state directory, a digest ledger (.state_shards) or one
    /// of its files.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// Forget completed ids, exactly as upstream's compact() does.
    #[arg(long = "drop-completed")]
    pub drop_completed: bool,

    /// Compact even when lines upstream ignores hide records that
    /// `leasejournal repair` would bring back (glued onto torn fragments,
    /// behind a byte order mark, before a zero fill): they are dropped, as
    /// upstream's compaction drops them (the backup keeps them). Without
    /// it, compact refuses such a journal and names repair.
    #[arg(long = "drop-hidden")]
    pub drop_hidden: bool,

    /// Write a plan that leaves the file empty although it has bytes: no
    /// line of it changes the state upstream replays (noise, a zero fill,
    /// only torn, corrupt or orphan lines). Without it, compact shows such
    /// a plan and writes nothing; the backup keeps the bytes.
    #[arg(long = "allow-empty")]
    pub allow_empty: bool,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Runs `compact`.
pub fn run(args: &CompactArgs, out: &mut dyn Write) -> anyhow::Result<Finished> {
    let bars = Bars::new(&args.progress, args.output.format);
    let drops = compact::Drops {
        completed: args.drop_completed,
        hidden: args.drop_hidden,
        empty: args.allow_empty,
    };
    let (report, exit) = compact::run(
        &args.path,
        drops,
        &args.write.options(),
        &bars,
        &write::Stderr,
    )
    .map_err(|e| write::report_failure(&args.output, out, Command::Compact, e))?;
    write::finish(&args.output, out, report, exit, render::compact)
}
