//! The digest ledger's options, shared by the commands that read it
//! (`inspect`): the shard count to read it at, and the digests to look for.

use std::path::PathBuf;

use clap::Args;

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

/// A digest on the command line: 64 hex digits, either case.
fn parse_digest(text: &str) -> Result<Digest, String> {
    Digest::parse(text).ok_or_else(|| "expected a SHA-256: 64 hex digits".to_string())
}
