//! `leasejournal inspect`: what a journal, a snapshot or a state directory
//! says, as upstream's loader would see it. Read-only: never writes,
//! creates or locks anything.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::lease_table::InspectTableArgs;
use super::output::{
    Bars, Format, KindArg, OutputArgs, ProgressArgs, RowsArgs, parse_id_prefix, parse_now,
    parse_worker, system_now,
};
use super::{forensics, ledger::LedgerArgs};
use crate::operations::exit::Exit;
use crate::operations::inspect::{self, JournalOptions};
use crate::render;

/// Show what journals, snapshots or state directories say.
///
/// PATH is a lease journal, a .state_tasks.json snapshot, or a state
/// directory (<output>/<name>/): every known file present is inspected in
/// the order the master reads them on resume, leftover *.tmp files are
/// listed, and whether .master-queue.lock is held is read from /proc/locks.
///
/// Several PATHs are read side by side and reported in order, a blank line
/// between two; one that cannot be read is named on stderr (exit 2). Their
/// JSON is one document: {"kind": "inspections", "inspections": [one report
/// per path], "errors": [{"path", "message"}]}.
///
/// For a journal: size, lines, records by op, clock domains, the tail,
/// lines upstream ignores and why, the active and completed state upstream's
/// loader reaches, and a table of active leases. For a snapshot: the clock
/// domain, tasks, totals, state leases and what upstream's restore changes.
/// For the digest ledger (.state_shards/ or a processed.NNN.log): files,
/// digests loaded and unread at the shard count, ignored lines, tails. For
/// a fenced lease table (its root, or a state directory's own): upstream's
/// counts, owners, what the next master start takes, and the records
/// upstream rejects, misplaces or can never clear.
#[derive(Clone, Debug, Args)]
pub struct InspectArgs {
    /// Journals, snapshots and state directories; - reads standard input.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// Read PATH as this kind instead of detecting it from name and content.
    #[arg(long = "kind", value_enum, value_name = "KIND")]
    pub kind: Option<KindArg>,

    /// Show only active leases owned by this worker rank.
    #[arg(long = "worker", allow_negative_numbers = true, value_name = "N", value_parser = parse_worker)]
    pub worker: Option<u64>,

    /// Show only active leases whose id starts with PREFIX (hex).
    #[arg(long = "id", allow_hyphen_values = true, value_name = "PREFIX", value_parser = parse_id_prefix)]
    pub id: Option<String>,

    /// List every record of the id(s) starting with PREFIX: line, offset,
    /// op, time and the effect it had in replay (in a fenced lease table:
    /// every file of the id, and what upstream makes of each).
    #[arg(long = "history", allow_hyphen_values = true, value_name = "PREFIX", value_parser = parse_id_prefix)]
    pub history: Option<String>,

    #[command(flatten)]
    pub rows: RowsArgs,

    /// Compute ages against this Unix time instead of the system clock.
    #[arg(long = "now", allow_negative_numbers = true, value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,

    #[command(flatten)]
    pub ledger: LedgerArgs,
    #[command(flatten)]
    pub table: InspectTableArgs,
    #[command(flatten)]
    pub forensics: forensics::ForensicsArgs,

    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Runs `inspect`.
pub fn run(args: &InspectArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let (paths, kind, now, output, progress) = (
        &args.paths,
        args.kind,
        args.now,
        &args.output,
        &args.progress,
    );
    #[rustfmt::skip]
    let asked = forensics::Inspect { paths, kind, now, output, progress };
    if let Some(ran) = forensics::run(&args.forensics, asked, out) {
        return ran;
    }
    let now = args.now.unwrap_or_else(system_now);
    let limit = args.rows.limit();
    let options = JournalOptions {
        worker: args.worker,
        id_prefix: args.id.clone(),
        history: args.history.clone(),
        list_completed: args.output.format == Format::Json,
        ledger: args.ledger.options()?,
        table: args.table.settings(),
    };
    let bars = Bars::for_paths(&args.progress, args.output.format, args.paths.len());
    let (report, errors) = inspect::inspect(paths, kind.map(KindArg::kind), &options, now, &bars)?;
    errors.iter().for_each(|e| super::tell(format_args!("{e}")));
    args.output.emit(out, &report, |out, styles| {
        render::inspect_report(out, &report, now, limit, styles)
    })?;
    Ok(Exit::of_read_errors(&errors))
}
