//! `leasejournal recover`: the forecast of the master's resume (read-only),
//! and `--discard`, the one way to drop work on purpose.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::Finished;
use super::ledger::NextStartArgs;
use super::output::{Bars, OutputArgs, ProgressArgs, parse_now, system_now};
use super::select::SelectArgs;
use super::write::{self, WriteArgs};
use crate::operations::exit::Exit;
use crate::operations::recover;
use crate::operations::report::Command;
use crate::render;

/// Forecast what the master's resume will recover; discard work only when
/// told to.
///
/// On SYMCC_RESUME=1 the master reclaims every active lease (the deferred
/// journal first, then the work journal), in (attempts, time, id) order,
/// and rebuilds each payload into a work item at the front of its queue.
/// Those payloads are the only record of that work: nothing else requeues
/// it. recover prints, per journal, the reclaims resume will append, the
/// work items it will requeue (their rebuilt shape), the items it will drop
/// and why (seed path not a file on this host and no continuation), the
/// payload members it never restores (parameter_overrides,
/// parameter_token), items queued twice, and the first record resume will
/// append and whether it glues onto an unterminated last line. Where the
/// state directory has a digest ledger (.state_shards/), it also says for
/// each item whether the next start's AFL rescan dispatches its input
/// again: it does unless the input's digest is loaded at the shard count
/// (--state-shards, SYMCC_STATE_SHARDS, --workers), so a requeued item it
/// sees runs twice, and a dropped item it skips is lost for good. Relative
/// seed paths are looked up from the current directory: run it where the
/// master runs. For a fenced lease table (its root, or a state directory's
/// own): the expired leases every master start takes, in upstream's order.
/// It reads only; it never writes, creates or locks anything.
///
/// --discard reclaims leases exactly as upstream's recover_expired does,
/// for work meant to be dropped (an input that keeps killing workers). It
/// needs a selection (--all, or any of --ttl, --id, --worker), appends one
/// reclaim record per lease after sealing the tail, and first writes every
/// discarded lease to an export file (<journal>.discarded.<UTC>.jsonl, or
/// --export FILE), fsynced: `leasejournal restore EXPORT --apply`, before
/// the master resumes, brings the work back. Dry run unless --apply.
#[derive(Clone, Debug, Args)]
pub struct RecoverArgs {
    /// A journal or a state directory.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// Reclaim the selected leases: their work is dropped (see --export).
    #[arg(long = "discard")]
    pub discard: bool,

    #[command(flatten)]
    pub select: SelectArgs,

    /// With --discard: export the discarded leases to FILE (which must
    /// not exist) instead of <journal>.discarded.<UTC>.jsonl.
    #[arg(long = "export", value_name = "FILE", requires = "discard")]
    pub export: Option<PathBuf>,

    /// The time resume runs at (the forecast's ages; the time of
    /// --discard's reclaim records) instead of the system clock.
    #[arg(long = "now", allow_negative_numbers = true, value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,

    #[command(flatten)]
    pub next: NextStartArgs,
    #[command(flatten)]
    pub table: super::lease_table::TableArgs,

    /// Replaced by `leasejournal repair`.
    #[arg(long = "salvage", hide = true)]
    pub salvage: bool,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Runs `recover`.
pub fn run(args: &RecoverArgs, out: &mut dyn Write) -> anyhow::Result<Finished> {
    anyhow::ensure!(
        !args.salvage,
        "recover --salvage is now `leasejournal repair`, which also seals the tail and never reclaims a lease; nothing was changed"
    );
    let now = args.now.unwrap_or_else(system_now);
    let bars = Bars::new(&args.progress, args.output.format);
    let options = args.write.options();
    if !args.discard {
        let (next, table) = (args.next.next_start(), args.table.settings(args.select.ttl));
        let report = recover::run_forecast(&args.path, &options, now, &next, &table, &bars)?;
        args.output.emit(out, &report, |out, styles| {
            render::forecast(out, &report, styles)
        })?;
        return Ok(Exit::Success.into());
    }
    let request = args.select.request(args.export.clone());
    let (report, exit) =
        recover::run_discard(&args.path, &request, now, &options, &bars, &write::Stderr)
            .map_err(|e| write::report_failure(&args.output, out, Command::Recover, e))?;
    write::finish(&args.output, out, report, exit, render::discard)
}
