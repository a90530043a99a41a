//! `leasejournal rollback`: put a file back to one of its backups. Dry run
//! by default.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::Finished;
use super::output::{Bars, OutputArgs, ProgressArgs};
use super::write::{self, WriteArgs};
use crate::operations::report::Command;
use crate::operations::rollback;
use crate::render;

/// Put a journal or a snapshot back to one of its backups.
///
/// BACKUP is a FILE.bak.<UTC> that repair, compact, migrate, recover
/// --discard, restore or rollback kept; the file is FILE, else the one the
/// backup is named after, in its directory (name it for a backup kept in
/// --backup-dir).
///
/// The plan says what the state gains and loses: for a journal, the ids
/// that would be active or completed after and are not now, the ids
/// active or completed now that would not be, and the records of the file
/// now that the backup does not hold; for a snapshot, its tasks, leases
/// and completions, as upstream's restore reads them. A rollback that
/// loses work recorded since the backup is refused (exit 2, nothing
/// changed) unless --allow-loss: an id active now that would be neither
/// active nor completed (resume would not requeue its work), a completed
/// id that would not be (its work could run again), a task whose counts
/// would go back. The dry run shows such a plan and says it is refused.
///
/// With --apply, under the master's lock: the file is replaced, as a
/// rewrite, by the backup's bytes, compared byte for byte as it is
/// written, and the file it replaces is kept as a backup of its own, so a
/// rollback can itself be rolled back. Prints the plan and changes nothing
/// unless --apply or --output.
#[derive(Clone, Debug, Args)]
pub struct RollbackArgs {
    /// A backup (FILE.bak.<UTC>).
    #[arg(value_name = "BACKUP")]
    pub backup: PathBuf,

    /// The file to put back (default: the one BACKUP is named after, in
    /// its directory).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// Roll back even when that loses work recorded since the backup:
    /// leases active now, completed ids, a snapshot's newer statistics.
    #[arg(long = "allow-loss")]
    pub allow_loss: bool,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Runs `rollback`.
pub fn run(args: &RollbackArgs, out: &mut dyn Write) -> anyhow::Result<Finished> {
    let bars = Bars::new(&args.progress, args.output.format);
    let request = rollback::Request {
        backup: args.backup.clone(),
        file: args.file.clone(),
        allow_loss: args.allow_loss,
    };
    let (report, exit) = rollback::run(&request, &args.write.options(), &bars, &write::Stderr)
        .map_err(|e| write::report_failure(&args.output, out, Command::Rollback, e))?;
    write::finish(&args.output, out, report, exit, render::rollback)
}
