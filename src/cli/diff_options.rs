//! `diff`'s options: which changes `--only` keeps, and for two fenced
//! lease tables the shard count records are placed by, the TTL and the
//! present `snapshot_counts` counts at.

use clap::{Args, ValueEnum};

use super::output::{parse_now, parse_seconds, system_now};
use crate::operations::diff::{ChangeKind, TableDiffOptions};

/// Which changes `--only` keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnlyArg {
    /// Entities only in B.
    Added,
    /// Entities only in A.
    Removed,
    /// Fields that differ.
    Changed,
}

impl OnlyArg {
    /// The kind of change kept.
    pub fn kind(self) -> ChangeKind {
        match self {
            OnlyArg::Added => ChangeKind::Added,
            OnlyArg::Removed => ChangeKind::Removed,
            OnlyArg::Changed => ChangeKind::Changed,
        }
    }
}

/// How `diff` compares two lease tables.
#[derive(Clone, Debug, Args)]
pub struct TableDiffArgs {
    /// For lease tables: the shard count the tables were written at
    /// (record <id> belongs in <root>/<int(id[:8],16) % N:03d>/); a record
    /// elsewhere is still matched by id, and said to sit outside. Comes
    /// before SYMCC_MULTI_MASTER_LEASE_SHARDS; with neither, 256.
    #[arg(long = "lease-shards", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub lease_shards: Option<u64>,

    /// For lease tables: the lease TTL the counts of expired leases and the
    /// words about heartbeats and steals use. Without it, the master's:
    /// SYMCC_MULTI_MASTER_TARGET_LEASE_TTL (target tables),
    /// SYMCC_WORK_LEASE_TTL, else max(120, 4 × SYMCC_TIMEOUT).
    #[arg(long = "ttl", allow_negative_numbers = true, value_name = "SECONDS", value_parser = parse_seconds)]
    pub ttl: Option<f64>,

    /// For lease tables: the present each side's snapshot_counts is taken
    /// at (Unix seconds; default: the system clock).
    #[arg(long = "now", allow_negative_numbers = true, value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,
}

impl TableDiffArgs {
    /// The options, listing at most `max_examples` changes of each kind.
    pub fn options(&self, max_examples: usize) -> TableDiffOptions {
        TableDiffOptions {
            lease_shards: self.lease_shards,
            ttl: self.ttl,
            now: self.now.unwrap_or_else(system_now),
            max_examples,
        }
    }
}
