//! The fenced lease tables shared by several masters (upstream
//! `FencedWorkLeaseTable` and `FencedTargetLeaseTable` in
//! `util/distributed_state.py`): `<root>/<shard:03d>/<id>.json`, one JSON
//! object per work item (or branch target), read lock-free by every scan.
//!
//! Upstream's rules, as read in its code:
//! - the scans (`recover_expired_records`, `snapshot_counts`) list the
//!   directories of `range(shard_count)` only, keep the names `<id>.json`
//!   whose stem is a valid id, and read the record from the path the id
//!   names (`record_path(id)`), not from the one listed: a record in
//!   another shard's directory is read from its own, or not at all;
//! - a record is accepted by `_read_record` + `_valid_record`
//!   ([`read`]); the scans skip what is rejected, `claim` refuses
//!   it for ever;
//! - `recover_expired_records(now, lease_ttl)` returns the `leased`
//!   records with `ttl == 0 or now - updated >= ttl`, by `(updated, id)`;
//!   it never writes; `snapshot_counts(now)` counts by status, `expired`
//!   being `leased` with `now - updated >= ` the table's TTL;
//! - `claim` refuses `done`, `committing` (even at TTL 0), rejected
//!   records and unexpired `leased` ones; a target group's `claim_group`
//!   refuses rejected records and `leased` ones younger than the TTL, and
//!   overwrites the rest;
//! - the table's TTL is clamped to at least one second by the
//!   constructor; the master passes `SYMCC_WORK_LEASE_TTL` (or
//!   `SYMCC_MULTI_MASTER_TARGET_LEASE_TTL`), itself clamped to
//!   `[1, 86400]`, and takes at most 4096 records at a start.
//!
//! `engine::table::names` holds the file names, `engine::table::record`
//! the reader, `engine::table::fast` its fast path for records in
//! upstream's exact form (checked against the general reader).

mod fast;
pub mod names;
pub mod record;

use crate::engine::journal::WorkId;

pub use names::{
    ARCHIVE_DIR, DEFAULT_SHARDS, QUARANTINE_DIR, RootName, ShardName, TARGET_DIR, WORK_DIR,
    parse_id, root_name, shard_dir_name, shard_name, shard_of, target_id,
};
pub use record::{
    Oddity, Raises, Reading, Record, Rejection, Status, TableKind, read_general, timestamp,
};

/// Reads the bytes of `<id>.json` as upstream's `_read_record` and
/// `_valid_record` do: a work record in upstream's exact form through the
/// fast path (`engine::table::fast`), everything else through the general
/// reader ([`read_general`]).
pub fn read(bytes: &[u8], id: &WorkId, kind: TableKind) -> Reading {
    if kind == TableKind::Work
        && let Some(record) = fast::read(bytes, id)
    {
        return Reading::Valid(Box::new(record));
    }
    read_general(bytes, id, kind)
}

/// The fast path alone: `Some` only for a work record in upstream's exact
/// form (a test hook: the checks compare it with [`read_general`]).
#[cfg(any(test, feature = "test-hooks"))]
pub fn read_fast(bytes: &[u8], id: &WorkId) -> Option<Record> {
    fast::read(bytes, id)
}

/// `recover_expired(limit=4096)`: what one master start takes at most.
pub const START_LIMIT: usize = 4096;

/// The table's TTL as upstream's constructor keeps it (at least 1 s).
pub fn table_ttl(ttl: f64) -> f64 {
    ttl.max(1.0)
}

/// The master's TTL from its environment: `SYMCC_WORK_LEASE_TTL`, else
/// `max(120, 4 * SYMCC_TIMEOUT)`, clamped to `[1, 86400]`. `timeout` is
/// `SYMCC_TIMEOUT` when it reads as a number.
pub fn master_ttl(explicit: Option<f64>, timeout: Option<f64>) -> f64 {
    let ttl = explicit.unwrap_or_else(|| 120f64.max(4.0 * timeout.unwrap_or(0.0)));
    ttl.clamp(1.0, 86_400.0)
}

/// Whether `recover_expired_records(now, lease_ttl=ttl)` returns a leased
/// record last updated at `updated`.
pub fn recoverable(now: f64, updated: f64, ttl: f64) -> bool {
    !(ttl > 0.0 && now - updated < ttl)
}

/// Whether `snapshot_counts(now)` counts a leased record as expired, for
/// a table built with `ttl` (already clamped).
pub fn counted_expired(now: f64, updated: f64, ttl: f64) -> bool {
    now - updated >= ttl
}

/// What a fresh `claim` by another owner does with an id, given what its
/// record path holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimOutcome {
    /// It takes the id (no record, or an expired `leased` one).
    Takes,
    /// It returns `None`: the record is live, `committing`, `done`, or
    /// rejected (then for ever).
    Refused,
    /// It raises (the exception's name): the master stops.
    Raises(&'static str),
}

/// What is at an id's record path, as `claim` sees it.
#[derive(Clone, Copy, Debug)]
pub enum AtPath<'a> {
    /// Nothing: `os.path.exists` is false.
    Absent,
    /// Something `open` fails on, or whose bytes are rejected.
    Rejected,
    /// A record upstream accepts.
    Valid(&'a Record),
    /// Bytes the reader raises on.
    Raises(Raises),
}

/// `claim(id, …, now=now)` with the table's TTL, after the lock was taken.
pub fn claim(at: AtPath<'_>, now: f64, ttl: f64) -> ClaimOutcome {
    match at {
        AtPath::Absent => ClaimOutcome::Takes,
        AtPath::Rejected => ClaimOutcome::Refused,
        AtPath::Raises(r) => ClaimOutcome::Raises(r.as_str()),
        AtPath::Valid(r) => match r.status {
            Status::Done | Status::Committing => ClaimOutcome::Refused,
            Status::Leased if ttl > 0.0 && now - r.updated < ttl => ClaimOutcome::Refused,
            Status::Leased => ClaimOutcome::Takes,
        },
    }
}

/// `claim_group([target], …, now=now)` for one member.
pub fn claim_group(at: AtPath<'_>, now: f64, ttl: f64) -> ClaimOutcome {
    match at {
        AtPath::Valid(r) if r.status == Status::Leased && now - r.updated < ttl => {
            ClaimOutcome::Refused
        }
        AtPath::Valid(_) | AtPath::Absent => ClaimOutcome::Takes,
        AtPath::Rejected => ClaimOutcome::Refused,
        AtPath::Raises(r) => ClaimOutcome::Raises(r.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_rules() {
        assert_eq!(master_ttl(None, None), 120.0);
        assert_eq!(master_ttl(None, Some(60.0)), 240.0);
        assert_eq!(master_ttl(Some(0.2), None), 1.0);
        assert_eq!(master_ttl(Some(1e9), None), 86_400.0);
        assert!(recoverable(100.0, 50.0, 0.0));
        assert!(recoverable(100.0, 200.0, 0.0), "ttl 0 takes the future too");
        assert!(
            !recoverable(100.0, 200.0, 30.0),
            "a future update never expires"
        );
        assert!(recoverable(100.0, 70.0, 30.0), "at exactly the TTL");
        assert!(!recoverable(100.0, 70.5, 30.0));
        assert!(counted_expired(100.0, 70.0, 30.0));
    }
}
