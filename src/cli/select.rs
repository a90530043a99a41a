//! The leases `recover --discard` drops: `--all`, `--ttl`, `--id`,
//! `--worker` and `--first`.

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

    /// With --discard: reclaim at most N of the selected leases (0: no
    /// limit), the first in recovery order.
    #[arg(
        long = "first",
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 0,
        requires = "discard",
        value_parser = parse_count
    )]
    pub first: usize,

    /// With --discard: export the discarded leases to FILE (which must
    /// not exist) instead of <journal>.discarded.<UTC>.jsonl.
    #[arg(long = "export", value_name = "FILE", requires = "discard")]
    pub export: Option<PathBuf>,
}

impl SelectArgs {
    /// The discard asked for.
    pub fn request(&self) -> DiscardRequest {
        DiscardRequest {
            selection: Selection {
                ttl: self.ttl,
                id_prefix: self.id.clone(),
                worker: self.worker,
                all: self.all,
            },
            limit: self.first,
            export: self.export.clone(),
        }
    }
}

/// The one path `--discard` changes; refused with several, or with
/// `--limit` (table rows in every command: the cap it once meant is
/// `--first`, and an old script's cap must not become "every lease").
pub fn discard_path(paths: &[PathBuf], limit: Option<usize>) -> anyhow::Result<&PathBuf> {
    anyhow::ensure!(
        limit.is_none(),
        "recover --discard takes no --limit (it shows every lease it drops): --first N discards at most N leases. Nothing was changed"
    );
    match paths {
        [path] => Ok(path),
        _ => anyhow::bail!(
            "recover --discard takes one journal or state directory, not {}. Nothing was changed",
            paths.len()
        ),
    }
}
