//! The fenced lease tables' options, shared by the commands that read
//! them (`inspect`, `verify`, `recover`): the shard count the scans list
//! (`--lease-shards`) and which table it is (`--table-kind`); with `--ttl`
//! (`inspect`'s own here, `verify`'s and `recover`'s in their settings)
//! they make `operations::table::TableSettings`. Unset, each is what the
//! master reads from its environment, then upstream's default.

use clap::{Args, ValueEnum};

use super::output::parse_seconds;
use crate::operations::table::{TableKind, TableSettings};

/// `work` or `target`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TableKindArg {
    /// A work table (`FencedWorkLeaseTable`).
    Work,
    /// A target table (`FencedTargetLeaseTable`).
    Target,
}

/// How a fenced lease table is read.
#[derive(Clone, Debug, Args)]
pub struct TableArgs {
    /// Read fenced lease tables as masters started with N lease shards do
    /// (SYMCC_MULTI_MASTER_LEASE_SHARDS, by default 256): only the
    /// directories 000 … N-1 are listed, and a record is read from the
    /// directory int(id[:8], 16) % N names.
    #[arg(long = "lease-shards", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub lease_shards: Option<u64>,

    /// Read a table root as this kind, instead of deciding from its name
    /// (.work_lease_table, .target_lease_table), the master's environment
    /// or its records.
    #[arg(long = "table-kind", value_enum, value_name = "KIND")]
    pub table_kind: Option<TableKindArg>,
}

impl TableArgs {
    /// The settings, with the TTL given (or not) elsewhere.
    pub fn settings(&self, ttl: Option<f64>) -> TableSettings {
        TableSettings {
            kind: self.table_kind.map(|k| match k {
                TableKindArg::Work => TableKind::Work,
                TableKindArg::Target => TableKind::Target,
            }),
            lease_shards: self.lease_shards,
            ttl,
        }
    }
}

/// `inspect`'s table options: those above and the TTL.
#[derive(Clone, Debug, Args)]
pub struct InspectTableArgs {
    #[command(flatten)]
    pub table: TableArgs,

    /// Judge fenced lease records at least this old as expired, as a
    /// master whose table TTL is SECONDS does (by default the master's:
    /// SYMCC_WORK_LEASE_TTL, SYMCC_MULTI_MASTER_TARGET_LEASE_TTL for a
    /// target table, else max(120, 4 × SYMCC_TIMEOUT)); 0 lists every
    /// leased record, as upstream's recover_expired(lease_ttl=0) does.
    #[arg(long = "ttl", allow_negative_numbers = true, value_name = "SECONDS", value_parser = parse_seconds)]
    pub ttl: Option<f64>,
}

impl InspectTableArgs {
    /// The settings.
    pub fn settings(&self) -> TableSettings {
        self.table.settings(self.ttl)
    }
}
