//! `leasejournal recover`: the forecast of the master's resume (read-only),
//! and `--discard`, the one way to drop work on purpose.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::Finished;
use super::ledger::NextStartArgs;
use super::output::{Bars, OutputArgs, ProgressArgs, RowLimit, parse_now, system_now};
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
/// While a master holds .master-queue.lock the forecast says so: the
/// journals are changing under it. Several PATHs are forecast in order;
/// their JSON is {"mode": "forecasts", "forecasts": [one report per path],
/// "errors": [{"path", "message"}]}. It never writes, creates or locks
/// anything.
///
/// --discard reclaims leases exactly as upstream's recover_expired does,
/// for work meant to be dropped (an input that keeps killing workers). It
/// needs a selection (--all, or any of --ttl, --id, --worker; --first N
/// takes the first N in recovery order), and one PATH; it appends one
/// reclaim record per lease after sealing the tail, and first writes every
/// discarded lease to an export file (<journal>.discarded.<UTC>.jsonl, or
/// --export FILE), fsynced: `leasejournal restore EXPORT --apply`, before
/// the master resumes, brings the work back. Dry run unless --apply.
#[derive(Clone, Debug, Args)]
pub struct RecoverArgs {
    /// Journals, state directories and fenced lease tables (--discard: one).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// Reclaim the selected leases: their work is dropped (see --export).
    #[arg(long = "discard")]
    pub discard: bool,

    #[command(flatten)]
    pub select: SelectArgs,

    /// The time resume runs at (the forecast's ages; the time of
    /// --discard's reclaim records) instead of the system clock.
    #[arg(long = "now", allow_negative_numbers = true, value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,

    #[command(flatten)]
    pub rows: RowLimit,
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
    let bars = Bars::for_paths(&args.progress, args.output.format, args.paths.len());
    let options = args.write.options();
    if !args.discard {
        let (next, table) = (args.next.next_start(), args.table.settings(args.select.ttl));
        let (report, errors) =
            recover::run_forecasts(&args.paths, &options, now, &next, &table, &bars)?;
        errors
            .iter()
            .for_each(|e| super::tell(format_args!("{e:#}")));
        let limit = args.rows.rows();
        args.output.emit(out, &report, |out, styles| {
            render::forecasts(out, &report, limit, styles)
        })?;
        return Ok(Exit::of_read_errors(&errors).into());
    }
    let path = super::select::discard_path(&args.paths, args.rows.limit)?;
    let request = args.select.request();
    let (report, exit) = recover::run_discard(path, &request, now, &options, &bars, &write::Stderr)
        .map_err(|e| write::report_failure(&args.output, out, Command::Recover, e))?;
    write::finish(&args.output, out, report, exit, render::discard)
}
