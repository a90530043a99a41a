//! The digest ledger's options, shared by the commands that read it:
//! `inspect`'s (the shard count to read it at, and the digests to look
//! for) and `diff`'s (the shard count to compare the loads at, and how
//! many digests to list).

use std::path::PathBuf;

use clap::Args;

use super::output::parse_count;

use crate::operations::ledger::{self, Digest, LedgerOptions};

/// How the digest ledger (`.state_shards/processed.NNN.log`) is read.
#[derive(Clone, Debug, Args)]
pub struct LedgerArgs {
    /// Read the digest ledger as a master started with N state shards does
    /// (SYMCC_STATE_SHARDS, by default min(64, workers)): files numbered N
    /// and above are never read. Without it, the smallest count that reads
    /// every shard file present.
    #[arg(long = "state-shards", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub state_shards: Option<u32>,

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
            shard_count: self.state_shards,
            queries: ledger::queries(&self.digest, &self.digest_of)?,
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
    /// the smallest (0: all); counts stay exact.
    #[arg(long = "max-examples", allow_negative_numbers = true, value_name = "N", default_value_t = 10, value_parser = parse_count)]
    pub max_examples: usize,
}

/// A digest on the command line: 64 hex digits, either case.
fn parse_digest(text: &str) -> Result<Digest, String> {
    Digest::parse(text).ok_or_else(|| "expected a SHA-256: 64 hex digits".to_string())
}
