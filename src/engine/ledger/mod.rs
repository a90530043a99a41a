//! The persistent digest ledger, `<symcc_dir>/.state_shards/processed.NNN.log`
//! (upstream `PersistentShardLedger`): one lowercase hex SHA-256 per line,
//! appended by the master after each dispatch and for every triaged
//! child; read by `load_recent` on every master start so that the AFL
//! queue rescan skips those inputs.
//!
//! Upstream's rules, as read in its code:
//! - file `f"{namespace}.{shard:03d}.log"` (four or more digits from shard
//!   1000 on), namespace `processed`; shard `int(digest[:8], 16) %
//!   shard_count`; the count is written nowhere;
//! - `load_recent` reads only the files of `range(shard_count)`, each
//!   opened `encoding="ascii", errors="ignore"` in text mode (bytes above
//!   0x7f deleted, then universal newlines), keeps `line.strip()` when it
//!   is 64 lowercase hex digits, skips a file it cannot open, and never
//!   checks that a digest sits in the file its shard names;
//! - past `MAX_DEDUP_ENTRIES` distinct digests it `set.pop()`s one for
//!   each new one: the count stays at the limit, which ones go depends on
//!   the process's string hash seed and cannot be known offline.
//!
//! `engine::ledger::line` splits and judges lines, `engine::ledger::set`
//! holds the distinct digests, `engine::ledger::scan` reads a ledger file
//! by file, `engine::ledger::sniff` names the ledger's files,
//! `engine::ledger::start` says how the next master start reads it;
//! `engine::ledger::seal` makes a file's end safe for the next `add`, and
//! `engine::ledger::rewrite` plans, writes and reads back the files that
//! `repair` and `compact` rewrite.

pub mod line;
pub mod rewrite;
pub mod scan;
pub mod seal;
pub mod set;
pub mod slots;
pub mod sniff;
pub mod start;

use std::fmt;

use serde::{Serialize, Serializer};

pub use line::{Reason, Tail, TailKind};
pub use scan::{FileScan, Fit, LedgerScan, Reasons, Site, Totals};
pub use seal::{LastLine, Sealed, TailSeal};
pub use set::DigestSet;
pub use sniff::{DIR, NAMESPACE, file_name, index_of, owns_name};

/// Upstream's `MAX_DEDUP_ENTRIES`: the master calls `load_recent` with it.
pub const MAX_DEDUP_ENTRIES: u64 = 5_000_000;

/// A SHA-256 digest as the ledger holds it (64 lowercase hex digits).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The digest of 64 lowercase hex digits, exactly as upstream's
    /// `_valid_digest` accepts them; anything else is `None`.
    pub fn from_lower_hex(text: &[u8]) -> Option<Digest> {
        // The work ids' decoder: sixteen characters at a time.
        crate::engine::journal::decode_hex(text).map(|id| Digest(id.0))
    }

    /// A digest given by a person: 64 hex digits in either case.
    pub fn parse(text: &str) -> Option<Digest> {
        Digest::from_lower_hex(text.to_ascii_lowercase().as_bytes())
    }

    /// `int(digest[:8], 16)`: the first four bytes, big-endian.
    pub fn prefix(&self) -> u32 {
        u32::from_be_bytes([self.0[0], self.0[1], self.0[2], self.0[3]])
    }

    /// The shard upstream files this digest under at `count` shards
    /// (`count` of 0 is taken as 1, as upstream's `max(1, int(n))`).
    pub fn shard(&self, count: u32) -> u32 {
        self.prefix() % count.max(1)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_lowercase_hex64_and_shard_by_their_first_eight_digits() {
        let text = "0000000a".to_string() + &"f".repeat(56);
        let d = Digest::from_lower_hex(text.as_bytes()).unwrap();
        assert_eq!(d.to_string(), text);
        assert_eq!(d.prefix(), 10);
        assert_eq!(d.shard(4), 2);
        assert_eq!(d.shard(0), 0);
        assert!(Digest::from_lower_hex(text.to_uppercase().as_bytes()).is_none());
        assert_eq!(Digest::parse(&text.to_uppercase()), Some(d));
        assert!(Digest::from_lower_hex(&text.as_bytes()[1..]).is_none());
        assert!(Digest::from_lower_hex(b"g").is_none());
    }
}
