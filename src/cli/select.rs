//! The leases `recover --discard` drops: `--all`, `--ttl`, `--id`,
//! `--worker` and `--limit`.

use std::path::PathBuf;

use clap::Args;

use super::output::{parse_count, parse_id_prefix, parse_rank, parse_seconds};
use crate::operations::recover::{DiscardRequest, Selection};

/// Which active leases `--discard` reclaims.
#[derive(Clone, Debug, Args)]
pub struct SelectArgs {
    /// With --discard: select every active lease.
    #[arg(long = "all", requires = "discard", conflicts_with_all = ["ttl", "id", "worker"])]
    pub all: bool,

    /// With --discard: select leases upstream's recover_expired would
    /// expire at this TTL (0: all; a lease off the unix clock always).
    /// Without it: a fenced lease table's TTL for the forecast (by default
    /// the master's, as for inspect --ttl).
    #[arg(long = "ttl", allow_negative_numbers = true, value_name = "SECONDS", value_parser = parse_seconds)]
    pub ttl: Option<f64>,

    /// With --discard: select ids starting with this hex prefix.
    #[arg(long = "id", allow_hyphen_values = true, value_name = "PREFIX", requires = "discard", value_parser = parse_id_prefix)]
    pub id: Option<String>,

    /// With --discard: select leases of this worker rank.
    #[arg(long = "worker", allow_negative_numbers = true, value_name = "N", requires = "discard", value_parser = parse_rank)]
    pub worker: Option<u32>,

    /// With --discard: reclaim at most N leases (0: no limit), the first
    /// in recovery order.
    #[arg(
        long = "limit",
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 0,
        requires = "discard",
        value_parser = parse_count
    )]
    pub limit: usize,
}

impl SelectArgs {
    /// The discard asked for, exporting to `export` when given.
    pub fn request(&self, export: Option<PathBuf>) -> DiscardRequest {
        DiscardRequest {
            selection: Selection {
                ttl: self.ttl,
                id_prefix: self.id.clone(),
                worker: self.worker,
                all: self.all,
            },
            limit: self.limit,
            export,
        }
    }
}
