//! The digest ledger's options, shared by the commands that read it
//! (`inspect`, `verify`, `recover`): the shard count the next master start
//! reads it at (`--state-shards`, `--workers` for `verify` and `recover`,
//! whose `inspect` namesake is its table of ranks, and the environment the
//! master reads: the one place the environment is read for it), and the
//! digests to look for (`inspect`); and `diff`'s (the shard count to
//! compare two ledgers' loads at, and how many digests to list).

use std::path::PathBuf;

use clap::Args;

use super::output::parse_count;

use crate::operations::ledger::{self, Digest, LedgerOptions, NextStart};

/// The shard count the next master start reads the digest ledger at, as
/// the command line gives it.
#[derive(Clone, Debug, Args)]
pub struct ShardArgs {
    /// Read the digest ledger (.state_shards/processed.NNN.log) as a
    /// master started with N state shards does: files numbered N and above
    /// are never read. Comes before SYMCC_STATE_SHARDS, which is read as
    /// the master reads it; with neither, the smallest count that reads
    /// every shard file present.
    #[arg(long = "state-shards", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub state_shards: Option<u32>,
}

impl ShardArgs {
    /// What the next master start reads the ledger with: this option,
    /// `workers`, and SYMCC_STATE_SHARDS and SYMCC_PERSISTENT_STATE from
    /// the environment.
    pub fn next_start(&self, workers: Option<u32>) -> NextStart {
        let env = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
        NextStart {
            state_shards: self.state_shards,
            workers,
            env_state_shards: env("SYMCC_STATE_SHARDS"),
            env_persistent_state: env("SYMCC_PERSISTENT_STATE"),
        }
    }
}

/// The next master start as `verify` and `recover` take it: the shard
/// count, and the workers the master's default count follows.
#[derive(Clone, Debug, Args)]
pub struct NextStartArgs {
    #[command(flatten)]
    pub shards: ShardArgs,

    /// The MPI workers the next master start has (every process of the run
    /// but the master): without --state-shards and SYMCC_STATE_SHARDS, the
    /// master reads the digest ledger at min(64, N) shards.
    #[arg(long = "workers", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub workers: Option<u32>,
}

impl NextStartArgs {
    /// What the next master start reads the ledger with.
    pub fn next_start(&self) -> NextStart {
        self.shards.next_start(self.workers)
    }
}

/// How the digest ledger is read, and what is asked of it.
#[derive(Clone, Debug, Args)]
pub struct LedgerArgs {
    #[command(flatten)]
    pub shards: ShardArgs,

    /// Say whether this SHA-256 (64 hex digits) is in the digest ledger,
    /// whether upstream loads it at the shard count, and on which lines of
    /// which files it is. May be repeated.
    #[arg(long = "digest", value_name = "HEX", value_parser = parse_digest)]
    pub digest: Vec<Digest>,

    /// As --digest, for the SHA-256 of FILE's content: is this input in the
    /// ledger, so that the AFL rescan skips it? May be repeated.
    #[arg(long = "digest-of", value_name = "FILE")]
    pub digest_of: Vec<PathBuf>,
}

impl LedgerArgs {
    /// The options, with `--digest-of` files hashed.
    pub fn options(&self) -> anyhow::Result<LedgerOptions> {
        Ok(LedgerOptions {
            // inspect's --workers is its table of ranks: no worker count.
            next: self.shards.next_start(None),
            queries: ledger::queries(&self.digest, &self.digest_of)?,
            probes: Vec::new(),
        })
    }
}

/// How `diff` compares two digest ledgers.
#[derive(Clone, Debug, Args)]
pub struct LedgerDiffArgs {
    /// For digest ledgers: compare what a master started with N state
    /// shards loads from each side (files numbered N and above are never
    /// read). Without it, the smallest count that reads every shard file of
    /// either side.
    #[arg(long = "state-shards", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub state_shards: Option<u32>,

    /// For digest ledgers: list at most N digests of each kind of change,
    /// the smallest; for lease tables, at most N changes of each kind, the
    /// first by shard and id (0: all); counts stay exact.
    #[arg(long = "max-examples", allow_negative_numbers = true, value_name = "N", default_value_t = 10, value_parser = parse_count)]
    pub max_examples: usize,
}

/// A digest on the command line: 64 hex digits, either case.
fn parse_digest(text: &str) -> Result<Digest, String> {
    Digest::parse(text).ok_or_else(|| "expected a SHA-256: 64 hex digits".to_string())
}
