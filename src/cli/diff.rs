//! `leasejournal diff A B`: what changed between two snapshots, two
//! journals, two digest ledgers or two lease tables, in the terms of the
//! domain. Read-only.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::diff_options::{OnlyArg, TableDiffArgs};
use super::ledger::LedgerDiffArgs;
use super::output::{KindArg, OutputArgs, parse_id_prefix};
use crate::operations::diff::{self, Filter, LedgerDiffOptions};
use crate::operations::exit::Exit;
use crate::render;

/// Compare two snapshots, two journals, two digest ledgers or two lease tables.
///
/// Snapshots are compared as upstream restores them, keyed by task id:
/// tasks added and removed, per-field changes with deltas, state leases
/// added, removed or moved to another worker, the clock domain and the
/// configuration, and the cumulative totals on each side. Journals are
/// compared as upstream replays them: active leases added, removed and
/// changed, completed ids added and removed; then their bytes: whether B is
/// A plus appended records (listed with their effects) or where the two
/// diverge, and whether either divergent part is torn or corrupt. Digest
/// ledgers (two .state_shards/, two processed.NNN.log, or two state
/// directories, whose ledgers are compared) are compared as digests per
/// shard file: added, removed, and moved to other files (a re-shard), per
/// file and in all; and what upstream's load_recent loads from each side at
/// --state-shards N, which the AFL rescan skips. Lease tables (two
/// .work_lease_table/ or .target_lease_table/ roots, or two state
/// directories that both hold one) are compared record by record, matched
/// by id at --lease-shards N: added, removed, stolen, re-claimed,
/// committed, completed, heartbeats, records a reader rejects or that
/// moved, and the lock, temporary and probe files beside them.
///
/// Exit status as diff(1): 0 identical, 1 different, 2 trouble. Journals
/// are identical when their bytes are; snapshots when their restored views
/// and configuration are; ledgers when every shard file holds the same
/// digests; tables when every name and record under the roots is the same.
/// With --ignore, --only or --id, 0 means that no change is left to show
/// (as diff -I).
#[derive(Clone, Debug, Args)]
pub struct DiffArgs {
    /// The earlier (or reference) file, ledger or state directory; - reads
    /// standard input.
    #[arg(value_name = "A")]
    pub a: PathBuf,

    /// The later (or suspect) one; - reads standard input.
    #[arg(value_name = "B")]
    pub b: PathBuf,

    /// Read both files as this kind instead of detecting it.
    #[arg(long = "kind", value_enum, value_name = "KIND")]
    pub kind: Option<KindArg>,

    /// Leave out changes of this field (repeatable), e.g. elapsed, last_lease.
    #[arg(long = "ignore", allow_hyphen_values = true, value_name = "FIELD")]
    pub ignore: Vec<String>,

    /// Show only added, removed or changed entities.
    #[arg(long = "only", value_enum, value_name = "KIND")]
    pub only: Option<OnlyArg>,

    /// Show only ids starting with PREFIX (hex).
    #[arg(long = "id", allow_hyphen_values = true, value_name = "PREFIX", value_parser = parse_id_prefix)]
    pub id: Option<String>,

    /// For journals: attribute each state change to the records in B that
    /// caused it.
    #[arg(long = "history")]
    pub history: bool,

    /// Print nothing; the exit status alone says whether they differ
    /// (0 same, 1 different), like diff -q and cmp -s.
    #[arg(long = "quiet", short = 'q')]
    pub quiet: bool,

    #[command(flatten)]
    pub ledger: LedgerDiffArgs,

    #[command(flatten)]
    pub table: TableDiffArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `diff`.
pub fn run(args: &DiffArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let filter = Filter {
        ignore: args.ignore.iter().cloned().collect(),
        only: args.only.map(OnlyArg::kind),
        id_prefix: args.id.clone(),
    };
    let kind = args.kind.map(KindArg::kind);
    let ledgers = LedgerDiffOptions {
        shard_count: args.ledger.state_shards,
        max_examples: args.ledger.max_examples,
    };
    let tables = args.table.options(args.ledger.max_examples);
    let (report, exit) = diff::run(
        (&args.a, &args.b),
        kind,
        &filter,
        args.history,
        ledgers,
        tables,
    )?;
    // With --quiet, like diff -q and cmp -s: the exit status alone answers.
    if !args.quiet {
        args.output.emit(out, &report, |out, styles| {
            render::diff(out, &report, styles)
        })?;
    }
    Ok(exit)
}
