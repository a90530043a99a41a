//! What `verify` finds, shared by the commands that report findings
//! (`verify`, `explain`, `inspect --records`): the catalog of codes and the
//! findings themselves ([`catalog`]), the checks of journals and of resume's
//! forecast ([`journal`]), of snapshots and state directories ([`state`]),
//! and of the digest ledger and the leases it should hold ([`ledger`]). Pure: files come in as readers or bytes, findings go out as
//! values; the caller passes `now`, the TTL and the skew ([`Settings`]).

pub mod catalog;
pub mod journal;
pub mod ledger;
pub mod state;
pub mod table;

use catalog::{Code, Severity};
use serde::Serialize;

/// What `verify` does about a master on another host, where the state
/// directory is on a file system other hosts share (`--remote-master`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RemoteMaster {
    /// It cannot be seen: the verdict is incomplete (`master-unseen`).
    #[default]
    Unseen,
    /// Take and drop the lock to find out, where `flock` reaches other
    /// hosts.
    Probe,
    /// The operator says no master runs on another host.
    None,
}

/// How far a lease's time may run ahead of `now`, or a journal's time run
/// back, before it is a finding (`--skew`), in seconds.
pub const DEFAULT_SKEW: f64 = 300.0;

/// What a verification asks.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The present, in Unix seconds.
    pub now: f64,
    /// Leases at least this old are expired (0: all, as resume does).
    pub ttl: f64,
    /// Clock tolerance for future leases and regressions.
    pub skew: f64,
    /// Examples kept per code (0: all). Counts stay exact.
    pub max_examples: usize,
    /// Codes to leave out entirely, as given (the report echoes them).
    pub ignore: Vec<Code>,
    /// Warnings make the verdict no-go too.
    pub strict: bool,
    /// Findings below this severity are left out of the listing (counts
    /// and the verdict stay whole).
    pub min_severity: Severity,
    /// A master on another host: unseen, probed, or ruled out by the
    /// operator.
    pub remote_master: RemoteMaster,
    /// The directory relative seed paths are looked up from (the current
    /// directory), for the messages; `None` where it is not known.
    pub seed_dir: Option<String>,
    /// How fenced lease tables are read: `--table-kind`, `--lease-shards`,
    /// and `--ttl` as given (a table's TTL is the master's unless it is).
    pub table_kind: Option<crate::engine::table::TableKind>,
    /// See `table_kind`.
    pub lease_shards: Option<u64>,
    /// See `table_kind`.
    pub table_ttl: Option<f64>,
}

impl Settings {
    /// What the checks ask at `now` by default: every lease expired (as
    /// resume reclaims them all), the default skew, one example per code,
    /// nothing ignored, warnings not fatal.
    pub fn at(now: f64) -> Settings {
        Settings {
            now,
            ttl: 0.0,
            skew: DEFAULT_SKEW,
            max_examples: 1,
            ignore: Vec::new(),
            strict: false,
            min_severity: Severity::Info,
            remote_master: RemoteMaster::Unseen,
            seed_dir: None,
            table_kind: None,
            lease_shards: None,
            table_ttl: None,
        }
    }
}
