//! The options of a fenced lease table (`.work_lease_table/`,
//! `.target_lease_table/`) on the command line: the shard count it is
//! read at, and what `repair` may do to it. Shared by the commands that
//! read or change a table, apart from their own files so that each stays
//! parse → operate → emit.

use clap::Args;

use super::output::{parse_now, parse_seconds, system_now};
use crate::operations::repair::table::TableRequest;

/// How a fenced lease table is read and repaired.
#[derive(Clone, Debug, Args)]
pub struct TableArgs {
    /// Read a fenced lease table at N shards, the count every master using
    /// it runs with (SYMCC_MULTI_MASTER_LEASE_SHARDS; by default that
    /// variable, else 256). repair moves a record outside the directory
    /// its id names back to its own path only at a count given here.
    #[arg(long = "lease-shards", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub lease_shards: Option<u64>,

    /// Say that every master using the fenced lease table, on every host,
    /// is stopped: no lock covers a whole table, so repair --apply changes
    /// one only with this. It still refuses while a process on this host
    /// holds one of its record locks.
    #[arg(long = "all-masters-stopped")]
    pub all_masters_stopped: bool,

    /// Also move the table's done records to .leasejournal-archive/: every
    /// scan then reads fewer files, but each of those ids can be claimed
    /// and dispatched again, and snapshot_counts counts them no more.
    #[arg(long = "archive-done")]
    pub archive_done: bool,

    /// With --archive-done, only done records completed at least SECONDS
    /// ago.
    #[arg(long = "older-than", value_name = "SECONDS", requires = "archive_done", value_parser = parse_seconds)]
    pub older_than: Option<f64>,

    /// Move records to the directories --lease-shards N names even where
    /// every record sits where another count puts them (the masters'
    /// count changed to N): without it, such a layout is left as it is.
    #[arg(long = "reshard", requires = "lease_shards")]
    pub reshard: bool,

    /// Judge a fenced lease table's expiry at this TTL, as inspect --ttl.
    #[arg(long = "ttl", value_name = "SECONDS", value_parser = parse_seconds)]
    pub ttl: Option<f64>,

    /// Judge a table's times (expiry, --older-than) against this Unix time
    /// instead of the system clock.
    #[arg(long = "now", value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,
}

impl TableArgs {
    /// The request, as `repair` takes it.
    pub fn request(&self) -> TableRequest {
        TableRequest {
            lease_shards: self.lease_shards,
            all_masters_stopped: self.all_masters_stopped,
            archive_done: self.archive_done,
            older_than: self.older_than,
            reshard: self.reshard,
            ttl: self.ttl,
            now: self.now.unwrap_or_else(system_now),
        }
    }
}
