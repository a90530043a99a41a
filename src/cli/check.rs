//! What `verify` asks of its checks: the present, the lease TTL, the clock
//! skew, which findings count and which are listed, and what to do about
//! a master on another host. Shared parts of the command line, apart from
//! `verify.rs` so that the command stays parse → operate → emit.

use clap::{Args, ValueEnum};

use super::explain::CodeParser;
use super::ledger::NextStartArgs;
use super::output::{parse_count, parse_now, parse_seconds, system_now};
use crate::operations::findings::{
    DEFAULT_SKEW, RemoteMaster, Settings,
    catalog::{Code, Severity},
};

/// A finding's severity, as `--min-severity` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SeverityArg {
    /// Every finding.
    Info,
    /// Warnings and errors.
    Warning,
    /// Errors only.
    Error,
}

/// What to do about a master on another host (`--remote-master`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RemoteMasterArg {
    /// On a shared file system the verdict is incomplete (master-unseen):
    /// a master on another host cannot be seen from here.
    Unseen,
    /// Take .master-queue.lock and drop it at once, as the master takes it,
    /// to learn whether one holds it; conclusive only where flock reaches
    /// other hosts. A master starting in that instant fails to start.
    Probe,
    /// You know no master runs on any other host.
    None,
}

/// The checks' settings on the command line.
#[derive(Clone, Debug, Args)]
pub struct CheckArgs {
    /// Judge lease ages and future times against this Unix time instead of
    /// the system clock.
    #[arg(long = "now", allow_negative_numbers = true, value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,

    /// Report active unix leases at least this old as expired; without it,
    /// 0, what the master's resume uses: every lease expires. For a fenced
    /// lease table, the table's TTL (without it, the master's: see
    /// inspect --ttl).
    #[arg(long = "ttl", allow_negative_numbers = true, value_name = "SECONDS", value_parser = parse_seconds)]
    pub ttl: Option<f64>,

    /// Clock tolerance for future leases and clock regressions.
    #[arg(long = "skew", allow_negative_numbers = true, value_name = "SECONDS", default_value_t = DEFAULT_SKEW, value_parser = parse_seconds)]
    pub skew: f64,

    /// Fail on warnings too.
    #[arg(long = "strict")]
    pub strict: bool,

    /// Leave out findings with this code (repeatable): they neither count
    /// nor change the verdict.
    #[arg(
        long = "ignore",
        value_name = "CODE",
        value_parser = CodeParser,
        hide_possible_values = true
    )]
    pub ignore: Vec<Code>,

    /// List only findings of this severity or worse; counts, the verdict
    /// and the summary lines stay whole.
    #[arg(
        long = "min-severity",
        value_enum,
        value_name = "SEVERITY",
        default_value = "info"
    )]
    pub min_severity: SeverityArg,

    /// Show at most N examples per code (0: all); counts stay exact.
    #[arg(long = "max-examples", allow_negative_numbers = true, value_name = "N", default_value_t = 10, value_parser = parse_count)]
    pub max_examples: usize,

    /// A state directory on a file system other hosts share (NFS, Lustre,
    /// GPFS, CephFS, BeeGFS): a master on another host is not in this
    /// host's /proc/locks. Say what to do about it.
    #[arg(
        long = "remote-master",
        value_enum,
        value_name = "MODE",
        default_value = "unseen"
    )]
    pub remote_master: RemoteMasterArg,

    #[command(flatten)]
    pub next: NextStartArgs,

    #[command(flatten)]
    pub table: super::lease_table::TableArgs,
}

impl CheckArgs {
    /// The settings these arguments ask for.
    pub fn settings(&self) -> Settings {
        let table = self.table.settings(self.ttl);
        Settings {
            now: self.now.unwrap_or_else(system_now),
            ttl: self.ttl.unwrap_or(0.0),
            skew: self.skew,
            max_examples: self.max_examples,
            ignore: self.ignore.clone(),
            strict: self.strict,
            min_severity: match self.min_severity {
                SeverityArg::Info => Severity::Info,
                SeverityArg::Warning => Severity::Warning,
                SeverityArg::Error => Severity::Error,
            },
            remote_master: match self.remote_master {
                RemoteMasterArg::Unseen => RemoteMaster::Unseen,
                RemoteMasterArg::Probe => RemoteMaster::Probe,
                RemoteMasterArg::None => RemoteMaster::None,
            },
            seed_dir: std::env::current_dir()
                .ok()
                .map(|dir| dir.display().to_string()),
            table_kind: table.kind,
            lease_shards: table.lease_shards,
            table_ttl: table.ttl,
        }
    }
}
