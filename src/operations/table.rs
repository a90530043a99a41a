//! A fenced lease table read as upstream's scans and claims see it, in one
//! pass over its files: what `snapshot_counts`, `recover_expired_records`
//! and `claim` would do, and everything about the files that upstream
//! skips, refuses or raises on. Shared by `inspect`, `verify` (through
//! `operations::findings::table`) and `recover`; `operations::diff::table`
//! compares two.
//!
//! Memory follows the findings, not the records: shard directories are
//! read in parallel, one at a time per thread, and a record that is
//! neither expired, committing, rejected nor odd leaves only its counts
//! behind. The table is never locked and nothing is written: a record is
//! published by rename, so a read sees a whole version of it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use crate::engine::journal::WorkId;
pub use crate::engine::table::TableKind;
use crate::engine::table::{
    self, AtPath, ClaimOutcome, Oddity, Raises, Reading, Record, Rejection, RootName, ShardName,
    Status,
};
use crate::store::error::InputError;
use crate::store::lock::ProcLocks;
use crate::store::table::{self as files, EntryType, RecordFile};

/// Where a setting came from.
#[derive(Clone, Debug, Serialize)]
pub struct Setting<T> {
    /// The value used.
    pub value: T,
    /// `--flag`, the environment variable, or `default`.
    pub from: String,
}

/// What the command line says of the tables a command reads: each
/// `None` is what the master would use (its environment, then upstream's
/// defaults).
#[derive(Clone, Debug, Default)]
pub struct TableSettings {
    /// `--table-kind`.
    pub kind: Option<TableKind>,
    /// `--lease-shards`.
    pub lease_shards: Option<u64>,
    /// `--ttl`.
    pub ttl: Option<f64>,
}

impl TableSettings {
    /// The options of one read at `now`.
    pub fn options(&self, now: f64, skew: f64, history: Option<String>) -> TableOptions {
        TableOptions {
            kind: self.kind,
            lease_shards: self.lease_shards,
            ttl: self.ttl,
            now,
            skew,
            history,
        }
    }
}

/// How a table is read.
#[derive(Clone, Debug)]
pub struct TableOptions {
    /// `work` or `target`; `None`: from the root's name, else its records.
    pub kind: Option<TableKind>,
    /// `--lease-shards`; `None`: the master's environment, else 256.
    pub lease_shards: Option<u64>,
    /// `--ttl`; `None`: the master's environment, else its default.
    pub ttl: Option<f64>,
    /// The present, Unix seconds.
    pub now: f64,
    /// How far ahead of `now` an update may be before it is "in the
    /// future" (the checks' skew).
    pub skew: f64,
    /// Collect every file of the ids starting with this (lowercase hex).
    pub history: Option<String>,
}

/// `snapshot_counts(now)`, exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// `leased` records (expired ones included).
    pub leased: u64,
    /// `committing` records.
    pub committing: u64,
    /// `leased` records at least the TTL old.
    pub expired: u64,
    /// `done` records.
    pub done: u64,
}

/// The files the scanned shard directories hold.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct FileTally {
    /// `<id>.json` names listed (what every scan reads).
    pub records: u64,
    /// `<id>.json.lock` names.
    pub locks: u64,
    /// Lock files with no record beside them (normal: upstream keeps them).
    pub orphan_locks: u64,
    /// Left-over `*.tmp` files.
    pub temp_files: u64,
    /// Other names (the scans ignore them).
    pub other: u64,
    /// Bytes of the record files read.
    pub record_bytes: u64,
}

/// A leased record the next scan returns.
#[derive(Clone, Debug, Serialize)]
pub struct ExpiredRecord {
    /// Its id.
    pub id: WorkId,
    /// Its path, relative to the root.
    pub path: String,
    /// `owner`.
    pub owner: Option<String>,
    /// `worker`.
    pub worker: Option<String>,
    /// `updated`.
    pub updated: f64,
    /// `now - updated`.
    pub age_seconds: f64,
    /// `attempts`.
    pub attempts: Option<String>,
    /// `steals`.
    pub steals: Option<String>,
    /// The payload's `path`.
    pub seed: Option<String>,
    /// Whether the seed is a file on this host (`None`: no seed path).
    pub seed_here: Option<bool>,
    /// Whether the payload carries a continuation instead.
    pub continuation: bool,
    /// Its place in `recover_expired_records`' order (0-based).
    pub order: usize,
}

/// A record in `committing`.
#[derive(Clone, Debug, Serialize)]
pub struct CommittingRecord {
    /// Its id.
    pub id: WorkId,
    /// Its path, relative to the root.
    pub path: String,
    /// `owner`.
    pub owner: Option<String>,
    /// `updated`: when `begin_commit` ran.
    pub updated: f64,
    /// `now - updated`.
    pub age_seconds: f64,
    /// Whether a commit manifest is present (the standalone frontend's;
    /// it redoes those itself).
    pub has_commit: bool,
    /// Whether its owner is on this host and not running.
    pub owner_dead: bool,
    /// The payload's `path`.
    pub seed: Option<String>,
}

/// A record whose `updated` is ahead of `now` by more than the skew.
#[derive(Clone, Debug, Serialize)]
pub struct FutureRecord {
    /// Its id.
    pub id: WorkId,
    /// Its path, relative to the root.
    pub path: String,
    /// Its status.
    pub status: Status,
    /// `owner`.
    pub owner: Option<String>,
    /// `updated - now`.
    pub ahead_seconds: f64,
}

/// A record upstream's reader rejects or raises on.
#[derive(Clone, Debug, Serialize)]
pub struct RejectedRecord {
    /// The id its name gives.
    pub id: WorkId,
    /// The path upstream reads for it, relative to the root.
    pub path: String,
    /// Why: upstream's first failing check, `unreadable`, or `absent` (the
    /// id's files are all elsewhere).
    pub reason: String,
    /// In words.
    pub message: String,
    /// The exception upstream raises reading it, if it does.
    pub raises: Option<&'static str>,
    /// Where else `<id>.json` files of this id are (relative paths).
    pub elsewhere: Vec<String>,
    /// What a fresh `claim` of the id does.
    pub claim: ClaimOutcome,
}

/// A record listed in a scanned shard directory its id does not name.
#[derive(Clone, Debug, Serialize)]
pub struct MisplacedRecord {
    /// Its id.
    pub id: WorkId,
    /// Where it is, relative to the root.
    pub path: String,
    /// The path its id names.
    pub own_path: String,
    /// What the own path holds: `nothing`, `same` (the same bytes) or
    /// `other` (another version, or something unreadable).
    pub own_path_holds: &'static str,
    /// Whether the bytes here are a record upstream would accept at its
    /// own path.
    pub valid_here: bool,
    /// Its status, when valid.
    pub status: Option<Status>,
}

/// A directory (or other entry) of the root that no scan at this count
/// lists.
#[derive(Clone, Debug, Serialize)]
pub struct UnreadEntry {
    /// Its name.
    pub name: String,
    /// `beyond-count` (a shard at or above the count),
    /// `not-canonical` (digits upstream never builds, like `5` or `0005`),
    /// `not-a-directory` (a shard of the count whose path is no
    /// directory: every claim there raises), `probe` or `other`.
    pub why: &'static str,
    /// What it is.
    pub entry_type: EntryType,
    /// Record names inside (directories only).
    pub records: u64,
    /// Of those, how many hold a `leased` or `committing` record.
    pub active: u64,
    /// For a probe directory: the pid in its name, and whether it runs here.
    pub pid: Option<u32>,
    /// See `pid`.
    pub pid_running: Option<bool>,
}

/// A lock path that is not a regular file: a claim of its id raises.
#[derive(Clone, Debug, Serialize)]
pub struct BadLock {
    /// Its id.
    pub id: WorkId,
    /// Its path, relative to the root.
    pub path: String,
    /// What it is.
    pub entry_type: EntryType,
    /// What `claim` raises.
    pub raises: &'static str,
}

/// A left-over temporary file.
#[derive(Clone, Debug, Serialize)]
pub struct TempFile {
    /// Its path, relative to the root.
    pub path: String,
    /// Its record's id.
    pub id: WorkId,
    /// The writer's pid (from the name).
    pub pid: u32,
    /// Whether a process with that pid runs on this host.
    pub pid_running_here: bool,
}

/// A record lock `/proc/locks` shows held on this host.
#[derive(Clone, Debug, Serialize)]
pub struct HeldLock {
    /// Its id.
    pub id: WorkId,
    /// The lock file, relative to the root.
    pub path: String,
    /// The holder.
    pub pid: i64,
}

/// An accepted record with something odd about it.
#[derive(Clone, Debug, Serialize)]
pub struct OddRecord {
    /// Its id.
    pub id: WorkId,
    /// Its path, relative to the root.
    pub path: String,
    /// What is odd.
    pub oddities: Vec<Oddity>,
}

/// One owner's records.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OwnerRow {
    /// The owner string (`nodename:pid` or `SYMCC_MASTER_ID`).
    pub owner: String,
    /// Its `leased` records.
    pub leased: u64,
    /// Of those, at least the TTL old.
    pub expired: u64,
    /// Its `committing` records.
    pub committing: u64,
    /// Its `done` records.
    pub done: u64,
    /// The newest heartbeat of its leased or committing records, as an age.
    pub newest_heartbeat_age: Option<f64>,
    /// The oldest, as an age.
    pub oldest_heartbeat_age: Option<f64>,
    /// `running`, `dead` (on this host, pid not running), `other-host`
    /// or `unknown` (not `nodename:pid`).
    pub host: &'static str,
}

/// Every file of one id (`--history`).
#[derive(Clone, Debug, Serialize)]
pub struct HistoryFile {
    /// Its id.
    pub id: WorkId,
    /// The path, relative to the root.
    pub path: String,
    /// `record`, `lock` or `temp`.
    pub role: &'static str,
    /// What it is.
    pub entry_type: EntryType,
    /// Whether it is the path upstream reads for the id.
    pub own_path: bool,
    /// For a record or temporary file: upstream's reading of its bytes
    /// (`accepted`, or why not).
    pub reading: Option<String>,
    /// The record, when accepted.
    pub status: Option<Status>,
    /// See `status`.
    pub owner: Option<String>,
    /// See `status`.
    pub previous_owner: Option<String>,
    /// See `status`.
    pub worker: Option<String>,
    /// See `status`.
    pub token: Option<String>,
    /// See `status`.
    pub updated: Option<f64>,
    /// See `status`.
    pub attempts: Option<String>,
    /// See `status`.
    pub steals: Option<String>,
    /// See `status`.
    pub completed: Option<f64>,
    /// See `status`.
    pub seed: Option<String>,
    /// For the own path of a record: what a fresh `claim` does.
    pub claim: Option<ClaimOutcome>,
}

/// A fenced lease table as upstream sees it. The JSON contract of a
/// table's `inspect` (and of `verify`'s and `recover`'s view of it).
#[derive(Clone, Debug, Serialize)]
pub struct TableReport {
    /// Always `"table"`.
    pub kind: &'static str,
    /// `work` or `target`.
    pub table: TableKind,
    /// How `table` was decided: `name`, `environment`, `records` or
    /// `--table-kind`.
    pub table_from: &'static str,
    /// The root as given.
    pub path: String,
    /// The shard count read with.
    pub shard_count: Setting<u64>,
    /// The TTL: `value` as given, `effective` after upstream's clamp.
    pub ttl: Setting<f64>,
    /// The TTL the table applies (at least 1 s).
    pub ttl_effective: f64,
    /// The present the ages are from.
    pub now: f64,
    /// `snapshot_counts(now)`.
    pub counts: Counts,
    /// The files of the scanned shard directories.
    pub files: FileTally,
    /// Ids whose own path holds a record upstream accepts.
    pub accepted: u64,
    /// Ids with an `<id>.json` under the root that upstream's reader does
    /// not accept at the id's own path, sorted.
    pub rejected: Vec<WorkId>,
    /// Those ids, with why.
    pub rejected_records: Vec<RejectedRecord>,
    /// `recover_expired_records(now)`: the ids, in its order (an id listed
    /// in two scanned directories appears twice, as upstream returns it).
    pub recovered: Vec<WorkId>,
    /// What one master start takes of them (`limit=4096`).
    pub start_limit: usize,
    /// The expired leased records, in that order.
    pub expired: Vec<ExpiredRecord>,
    /// The `committing` records, oldest first.
    pub committing: Vec<CommittingRecord>,
    /// Records updated in the future.
    pub future: Vec<FutureRecord>,
    /// Records in a scanned directory their id does not name.
    pub misplaced: Vec<MisplacedRecord>,
    /// Root entries no scan lists.
    pub unread: Vec<UnreadEntry>,
    /// When records sit outside the directory their id names at this
    /// count: the counts (up to 4,096, at most 8 listed) at which every
    /// record looked at sits in its own directory, those listed where
    /// this count puts them included; empty when none does (records moved
    /// by hand); `null` when every record sits where this count puts it.
    pub fitting_counts: Option<Vec<u64>>,
    /// Lock paths that are not regular files.
    pub bad_locks: Vec<BadLock>,
    /// Left-over temporary files.
    pub temp_files: Vec<TempFile>,
    /// Record locks held on this host now.
    pub held_locks: Vec<HeldLock>,
    /// Accepted records with something odd.
    pub odd: Vec<OddRecord>,
    /// One row per owner, by owner.
    pub owners: Vec<OwnerRow>,
    /// This host's node name (owners `nodename:pid` on it are checked).
    pub host: Option<String>,
    /// `--history`: every file of the ids asked for.
    pub history: Option<Vec<HistoryFile>>,
}

/// A table as `verify` and `recover` summarise it.
#[derive(Clone, Debug, Serialize)]
pub struct TableView {
    /// The root.
    pub path: String,
    /// `work` or `target`.
    pub table: TableKind,
    /// The shard count read with.
    pub shard_count: u64,
    /// The TTL the table applies.
    pub ttl: f64,
    /// `snapshot_counts(now)`.
    pub counts: Counts,
    /// Ids whose own path holds an accepted record.
    pub accepted: u64,
    /// Ids upstream's reader rejects.
    pub rejected: usize,
    /// How many records `recover_expired_records` returns.
    pub recoverable: usize,
    /// How many of them the next master start takes (work tables).
    pub taken_at_start: usize,
}

impl TableReport {
    /// The summary `verify` and `recover` carry.
    pub fn view(&self) -> TableView {
        TableView {
            path: self.path.clone(),
            table: self.table,
            shard_count: self.shard_count.value,
            ttl: self.ttl_effective,
            counts: self.counts,
            accepted: self.accepted,
            rejected: self.rejected.len(),
            recoverable: self.recovered.len(),
            taken_at_start: if self.table == TableKind::Work {
                self.taken_at_start().len()
            } else {
                0
            },
        }
    }

    /// The expired records one master start takes.
    pub fn taken_at_start(&self) -> &[ExpiredRecord] {
        &self.expired[..self.expired.len().min(self.start_limit)]
    }
}

/// Well-placed records kept per shard for the counts the layout fits.
const SAMPLE_PER_SHARD: usize = 4;

/// The largest shard count the layout is tried at.
const MAX_FITTED_COUNT: u64 = 4096;

/// What one shard directory (or the misplaced pass) adds.
#[derive(Default)]
struct Part {
    /// A few records per shard that sit where the count puts them, for
    /// the counts the layout fits.
    sample: Vec<(u64, WorkId)>,
    counts: Counts,
    files: FileTally,
    accepted: u64,
    rejected: Vec<RejectedRecord>,
    expired: Vec<(f64, ExpiredRecord)>,
    committing: Vec<CommittingRecord>,
    future: Vec<FutureRecord>,
    misplaced: Vec<(u64, WorkId, String)>,
    bad_locks: Vec<BadLock>,
    temp_files: Vec<TempFile>,
    held_locks: Vec<HeldLock>,
    odd: Vec<OddRecord>,
    owners: BTreeMap<String, OwnerRow>,
    history: Vec<HistoryFile>,
}

impl Part {
    fn merge(mut self, other: Part) -> Part {
        let (a, b) = (&mut self.counts, other.counts);
        a.leased += b.leased;
        a.committing += b.committing;
        a.expired += b.expired;
        a.done += b.done;
        let (f, g) = (&mut self.files, other.files);
        f.records += g.records;
        f.locks += g.locks;
        f.orphan_locks += g.orphan_locks;
        f.temp_files += g.temp_files;
        f.other += g.other;
        f.record_bytes += g.record_bytes;
        self.accepted += other.accepted;
        self.rejected.extend(other.rejected);
        self.expired.extend(other.expired);
        self.committing.extend(other.committing);
        self.future.extend(other.future);
        self.misplaced.extend(other.misplaced);
        self.bad_locks.extend(other.bad_locks);
        self.temp_files.extend(other.temp_files);
        self.held_locks.extend(other.held_locks);
        self.odd.extend(other.odd);
        for (owner, row) in other.owners {
            let mine = self.owners.entry(owner).or_insert_with(|| OwnerRow {
                owner: row.owner.clone(),
                ..OwnerRow::default()
            });
            mine.leased += row.leased;
            mine.expired += row.expired;
            mine.committing += row.committing;
            mine.done += row.done;
            mine.newest_heartbeat_age =
                min_opt(mine.newest_heartbeat_age, row.newest_heartbeat_age);
            mine.oldest_heartbeat_age =
                max_opt(mine.oldest_heartbeat_age, row.oldest_heartbeat_age);
        }
        self.history.extend(other.history);
        self.sample.extend(other.sample);
        self
    }
}

fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// What the read of a table needs at hand.
struct Context<'a> {
    root: &'a Path,
    kind: TableKind,
    shard_count: u64,
    /// The TTL the table applies (`snapshot_counts`, `claim`): at least 1 s.
    ttl: f64,
    /// The TTL `recover_expired_records` is given: the table's, or an
    /// explicit `--ttl` below 1 s (0: every leased record).
    recover_ttl: f64,
    now: f64,
    skew: f64,
    held: std::collections::HashMap<u64, i64>,
    host: Option<String>,
    history: Option<&'a str>,
}

impl Context<'_> {
    fn own_rel(&self, id: &WorkId) -> String {
        format!(
            "{}/{}.json",
            table::shard_dir_name(table::shard_of(id, self.shard_count)),
            id
        )
    }

    fn wants_history(&self, id: &WorkId) -> bool {
        self.history.is_some_and(|p| id.has_prefix(p))
    }

    /// The owner's state on this host.
    fn owner_host(&self, owner: &str) -> &'static str {
        let Some((node, pid)) = owner.rsplit_once(':') else {
            return "unknown";
        };
        let Ok(pid) = pid.parse::<i64>() else {
            return "unknown";
        };
        match &self.host {
            Some(host) if host == node => {
                if files::running(pid) {
                    "running"
                } else {
                    "dead"
                }
            }
            Some(_) => "other-host",
            None => "unknown",
        }
    }
}

/// What a record path holds, read.
enum Read {
    Absent,
    Unreadable(String),
    Bytes(Reading, u64),
}

impl Read {
    fn at_path(&self) -> AtPath<'_> {
        match self {
            Read::Absent => AtPath::Absent,
            Read::Unreadable(_) => AtPath::Rejected,
            Read::Bytes(Reading::Valid(r), _) => AtPath::Valid(r),
            Read::Bytes(Reading::Rejected(_), _) => AtPath::Rejected,
            Read::Bytes(Reading::Raises(r), _) => AtPath::Raises(*r),
        }
    }

    fn describe(&self) -> String {
        match self {
            Read::Absent => "nothing there".into(),
            Read::Unreadable(why) => format!("cannot be read ({why})"),
            Read::Bytes(Reading::Valid(_), _) => "accepted".into(),
            Read::Bytes(Reading::Rejected(r), _) => format!("rejected: {r}"),
            Read::Bytes(Reading::Raises(r), _) => {
                format!("upstream's reader raises {}", r.as_str())
            }
        }
    }
}

fn read_at(path: &Path, id: &WorkId, kind: TableKind, buffer: &mut Vec<u8>) -> Read {
    match files::read_record(path, buffer) {
        RecordFile::Absent => Read::Absent,
        RecordFile::Unreadable(e) => Read::Unreadable(crate::store::error::in_words(&e)),
        RecordFile::Read => Read::Bytes(table::read(buffer, id, kind), buffer.len() as u64),
    }
}

/// The claim outcome for an id whose own path reads as `read`, the lock
/// path and the shard directory considered.
fn claim_of(
    ctx: &Context<'_>,
    read: &Read,
    lock: Option<EntryType>,
    shard_is_dir: bool,
) -> ClaimOutcome {
    if !shard_is_dir {
        return ClaimOutcome::Raises("NotADirectoryError");
    }
    match lock {
        Some(EntryType::Dir) => return ClaimOutcome::Raises("IsADirectoryError"),
        Some(EntryType::Symlink | EntryType::Special) => return ClaimOutcome::Raises("OSError"),
        _ => {}
    }
    match ctx.kind {
        TableKind::Work => table::claim(read.at_path(), ctx.now, ctx.ttl),
        TableKind::Target => table::claim_group(read.at_path(), ctx.now, ctx.ttl),
    }
}

/// Accounts one listing of an accepted record, as each scan does.
fn count_listing(ctx: &Context<'_>, part: &mut Part, id: &WorkId, record: &Record, first: bool) {
    let age = ctx.now - record.updated;
    match record.status {
        Status::Leased => {
            part.counts.leased += 1;
            if table::counted_expired(ctx.now, record.updated, ctx.ttl) {
                part.counts.expired += 1;
            }
            if table::recoverable(ctx.now, record.updated, ctx.recover_ttl) {
                let seed_here = record.path.as_deref().map(files::is_file);
                part.expired.push((
                    record.updated,
                    ExpiredRecord {
                        id: *id,
                        path: ctx.own_rel(id),
                        owner: record.owner.clone(),
                        worker: record.worker.clone(),
                        updated: record.updated,
                        age_seconds: age,
                        attempts: record.attempts.clone(),
                        steals: record.steals.clone(),
                        seed: record.path.clone(),
                        seed_here,
                        continuation: record.continuation,
                        order: 0,
                    },
                ));
            }
        }
        Status::Committing => part.counts.committing += 1,
        Status::Done => part.counts.done += 1,
    }
    if !first {
        return;
    }
    part.accepted += 1;
    let owner = record.owner.as_deref().unwrap_or_default();
    let tally = |row: &mut OwnerRow| {
        match record.status {
            Status::Leased => {
                row.leased += 1;
                if table::counted_expired(ctx.now, record.updated, ctx.ttl) {
                    row.expired += 1;
                }
            }
            Status::Committing => row.committing += 1,
            Status::Done => row.done += 1,
        }
        if record.status != Status::Done {
            row.newest_heartbeat_age = min_opt(row.newest_heartbeat_age, Some(age));
            row.oldest_heartbeat_age = max_opt(row.oldest_heartbeat_age, Some(age));
        }
    };
    // Owners are few: the row is looked up before its key is made.
    match part.owners.get_mut(owner) {
        Some(row) => tally(row),
        None => {
            let mut row = OwnerRow {
                owner: owner.to_string(),
                ..OwnerRow::default()
            };
            tally(&mut row);
            part.owners.insert(owner.to_string(), row);
        }
    }
    if record.status != Status::Done && -age > ctx.skew {
        part.future.push(FutureRecord {
            id: *id,
            path: ctx.own_rel(id),
            status: record.status,
            owner: record.owner.clone(),
            ahead_seconds: -age,
        });
    }
    if record.status == Status::Committing {
        part.committing.push(CommittingRecord {
            id: *id,
            path: ctx.own_rel(id),
            owner: record.owner.clone(),
            updated: record.updated,
            age_seconds: age,
            has_commit: record.has_commit,
            owner_dead: record
                .owner
                .as_deref()
                .is_some_and(|o| ctx.owner_host(o) == "dead"),
            seed: record.path.clone(),
        });
    }
    if !record.oddities.is_empty() {
        part.odd.push(OddRecord {
            id: *id,
            path: ctx.own_rel(id),
            oddities: record.oddities.clone(),
        });
    }
}

fn rejection_of(read: &Read) -> (String, String, Option<&'static str>) {
    match read {
        Read::Absent => (
            "absent".into(),
            "its own path holds nothing: upstream never reads the copies elsewhere".into(),
            None,
        ),
        Read::Unreadable(why) => ("unreadable".into(), format!("cannot be read ({why})"), None),
        Read::Bytes(Reading::Rejected(r), _) => (reason_name(r).into(), r.to_string(), None),
        Read::Bytes(Reading::Raises(r), _) => (
            "raises".into(),
            match r {
                Raises::RecursionError => "nests deeper than Python's recursion limit".into(),
                Raises::TypeError => "has a status that is a list or an object".into(),
                Raises::Hangs => "is a FIFO, which open() waits on for a writer".into(),
            },
            Some(r.as_str()),
        ),
        Read::Bytes(Reading::Valid(_), _) => ("accepted".into(), "accepted".into(), None),
    }
}

/// The stable name of a rejection.
pub fn reason_name(r: &Rejection) -> &'static str {
    match r {
        Rejection::InvalidUtf8 => "invalid-utf8",
        Rejection::Bom => "bom",
        Rejection::Empty => "empty",
        Rejection::NotJson(_) => "not-json",
        Rejection::NotAnObject => "not-an-object",
        Rejection::Schema => "schema",
        Rejection::IdMismatch => "id-mismatch",
        Rejection::Status => "status",
        Rejection::Payload => "payload",
        Rejection::Token => "token",
        Rejection::Updated => "updated",
        Rejection::Commit => "commit",
    }
}

fn history_file(
    id: WorkId,
    path: String,
    role: &'static str,
    entry_type: EntryType,
    own_path: bool,
    read: Option<&Read>,
    claim: Option<ClaimOutcome>,
) -> HistoryFile {
    let record = read.and_then(|r| match r {
        Read::Bytes(Reading::Valid(rec), _) => Some(rec.as_ref()),
        _ => None,
    });
    HistoryFile {
        id,
        path,
        role,
        entry_type,
        own_path,
        reading: read.map(Read::describe),
        status: record.map(|r| r.status),
        owner: record.and_then(|r| r.owner.clone()),
        previous_owner: record.and_then(|r| r.previous_owner.clone()),
        worker: record.and_then(|r| r.worker.clone()),
        token: record.map(|r| r.token.clone()),
        updated: record.map(|r| r.updated),
        attempts: record.and_then(|r| r.attempts.clone()),
        steals: record.and_then(|r| r.steals.clone()),
        completed: record.and_then(|r| r.completed),
        seed: record.and_then(|r| r.path.clone()),
        claim,
    }
}

/// Reads one scanned shard directory, entry by entry as it is listed: a
/// record is read (relative to the open directory) when its name comes,
/// and only what it leaves in the findings is kept, with the ids of the
/// names listed (for the locks without a record, and the claims of the
/// rejected records, which need the whole listing).
fn read_shard(ctx: &Context<'_>, shard: u64) -> Result<Part, InputError> {
    let mut part = Part::default();
    let name = table::shard_dir_name(shard);
    let dir = ctx.root.join(&name);
    if !files::is_dir(&dir) {
        return Ok(part);
    }
    let handle = files::OpenDir::open(&dir).map_err(|e| InputError::io(&dir, &e))?;
    let mut locks: Vec<(WorkId, EntryType)> = Vec::new();
    let mut with_record: Vec<WorkId> = Vec::new();
    // Rejected records and history rows of records, waiting for their
    // lock's type.
    let mut pending: Vec<(WorkId, EntryType, Read)> = Vec::new();
    let mut buffer = Vec::with_capacity(8192);
    handle
        .for_each(|bytes, kind, ino| {
            let Ok(entry_name) = std::str::from_utf8(bytes) else {
                part.files.other += 1;
                return;
            };
            match table::shard_name(entry_name) {
                ShardName::Record(id) => {
                    with_record.push(id);
                    part.files.records += 1;
                    if part.sample.len() < SAMPLE_PER_SHARD {
                        part.sample.push((shard, id));
                    }
                    if table::shard_of(&id, ctx.shard_count) != shard {
                        part.misplaced
                            .push((shard, id, format!("{name}/{entry_name}")));
                        return;
                    }
                    // The listed name is the own path's: `<id>.json`, the
                    // id in lowercase hex. A FIFO there would hang
                    // upstream's open(): it is not opened.
                    let read = if kind == EntryType::Special {
                        Read::Bytes(Reading::Raises(Raises::Hangs), 0)
                    } else {
                        match handle.read_record(bytes, &mut buffer) {
                            RecordFile::Absent => Read::Absent,
                            RecordFile::Unreadable(e) => {
                                Read::Unreadable(crate::store::error::in_words(&e))
                            }
                            RecordFile::Read => Read::Bytes(
                                table::read(&buffer, &id, ctx.kind),
                                buffer.len() as u64,
                            ),
                        }
                    };
                    if let Read::Bytes(_, n) = &read {
                        part.files.record_bytes += n;
                    }
                    if let Read::Bytes(Reading::Valid(record), _) = &read {
                        count_listing(ctx, &mut part, &id, record, true);
                        if !ctx.wants_history(&id) {
                            return;
                        }
                    }
                    pending.push((id, kind, read));
                }
                ShardName::Lock(id) => {
                    part.files.locks += 1;
                    locks.push((id, kind));
                    if kind != EntryType::File {
                        part.bad_locks.push(BadLock {
                            id,
                            path: format!("{name}/{entry_name}"),
                            entry_type: kind,
                            raises: if kind == EntryType::Dir {
                                "IsADirectoryError"
                            } else {
                                "OSError"
                            },
                        });
                    }
                    if let Some(pid) = ctx.held.get(&ino) {
                        part.held_locks.push(HeldLock {
                            id,
                            path: format!("{name}/{entry_name}"),
                            pid: *pid,
                        });
                    }
                    if ctx.wants_history(&id) {
                        part.history.push(history_file(
                            id,
                            format!("{name}/{entry_name}"),
                            "lock",
                            kind,
                            table::shard_of(&id, ctx.shard_count) == shard,
                            None,
                            None,
                        ));
                    }
                }
                ShardName::Temp { id, pid } => {
                    part.files.temp_files += 1;
                    part.temp_files.push(TempFile {
                        path: format!("{name}/{entry_name}"),
                        id,
                        pid,
                        pid_running_here: files::running(i64::from(pid)),
                    });
                    if ctx.wants_history(&id) {
                        let mut buffer = Vec::new();
                        let read = read_at(&dir.join(entry_name), &id, ctx.kind, &mut buffer);
                        part.history.push(history_file(
                            id,
                            format!("{name}/{entry_name}"),
                            "temp",
                            kind,
                            false,
                            Some(&read),
                            None,
                        ));
                    }
                }
                ShardName::Other => part.files.other += 1,
            }
        })
        .map_err(|e| InputError::io(&dir, &e))?;
    locks.sort_unstable_by_key(|(id, _)| *id);
    with_record.sort_unstable();
    let lock_of = |id: &WorkId| {
        locks
            .binary_search_by_key(id, |(l, _)| *l)
            .ok()
            .map(|i| locks[i].1)
    };
    for (id, entry_type, read) in pending {
        let rel = format!("{name}/{id}.json");
        let lock = lock_of(&id);
        if ctx.wants_history(&id) {
            let claim = claim_of(ctx, &read, lock, true);
            part.history.push(history_file(
                id,
                rel.clone(),
                "record",
                entry_type,
                true,
                Some(&read),
                Some(claim),
            ));
        }
        if !matches!(read, Read::Bytes(Reading::Valid(_), _)) {
            let (reason, message, raises) = rejection_of(&read);
            part.rejected.push(RejectedRecord {
                id,
                path: rel,
                reason,
                message,
                raises,
                elsewhere: Vec::new(),
                claim: claim_of(ctx, &read, lock, true),
            });
        }
    }
    part.files.orphan_locks = locks
        .iter()
        .filter(|(id, _)| with_record.binary_search(id).is_err())
        .count() as u64;
    Ok(part)
}

/// The table's kind from its records: the first one read that has a
/// `targets` member makes it a target table.
fn kind_from_records(root: &Path, shard_count: u64) -> TableKind {
    let mut buffer = Vec::new();
    for shard in 0..shard_count.min(4096) {
        let dir = root.join(table::shard_dir_name(shard));
        let Ok(entries) = files::entries(&dir) else {
            continue;
        };
        for entry in entries {
            if let ShardName::Record(_) = table::shard_name(&entry.name)
                && let RecordFile::Read = files::read_record(&dir.join(&entry.name), &mut buffer)
            {
                return if memchr::memmem::find(&buffer, b"\"targets\"").is_some() {
                    TableKind::Target
                } else {
                    TableKind::Work
                };
            }
        }
    }
    TableKind::Work
}

/// How the table's kind is decided: `--table-kind`, the root's name, the
/// environment's target root, then its records (`records`).
pub fn decide_kind(
    root: &Path,
    kind: Option<TableKind>,
    shard_count: u64,
) -> (TableKind, &'static str) {
    if let Some(kind) = kind {
        return (kind, "--table-kind");
    }
    match root.file_name().and_then(|n| n.to_str()) {
        Some(table::TARGET_DIR) => return (TableKind::Target, "name"),
        Some(table::WORK_DIR) => return (TableKind::Work, "name"),
        _ => {}
    }
    let same = |var: &str| {
        std::env::var_os(var)
            .is_some_and(|v| std::fs::canonicalize(v).ok() == std::fs::canonicalize(root).ok())
    };
    if same("SYMCC_MULTI_MASTER_TARGET_LEASE_DIR") {
        return (TableKind::Target, "environment");
    }
    if same("SYMCC_MULTI_MASTER_LEASE_DIR") {
        return (TableKind::Work, "environment");
    }
    (kind_from_records(root, shard_count), "records")
}

/// Reads the table at `root` as upstream's scans and claims see it. A
/// root that is not a directory, or a shard directory that cannot be
/// listed, is the error.
pub fn read(root: &Path, options: &TableOptions) -> Result<TableReport, InputError> {
    let dev = files::open_root(root)?;
    let proc_locks = ProcLocks::default();
    let held = files::held_locks(proc_locks.get(), dev)
        .into_iter()
        .collect();
    let shard_setting = shard_count_setting(options.lease_shards);
    let shard_count = shard_setting.value;
    let (kind, table_from) = decide_kind(root, options.kind, shard_count);
    let ttl_setting = ttl_setting(options.ttl, kind);
    let ctx = Context {
        root,
        kind,
        shard_count,
        ttl: table::table_ttl(ttl_setting.value),
        recover_ttl: if ttl_setting.from == "--ttl" {
            ttl_setting.value
        } else {
            table::table_ttl(ttl_setting.value)
        },
        now: options.now,
        skew: options.skew,
        held,
        host: files::node_name(),
        history: options.history.as_deref(),
    };
    let root_entries = files::entries(root).map_err(|e| InputError::io(root, &e))?;
    let mut unread = Vec::new();
    let mut not_dirs = Vec::new();
    for entry in &root_entries {
        let name = &entry.name;
        let path = root.join(name);
        let is_dir = files::is_dir(&path);
        let (why, pid) = match table::root_name(name) {
            RootName::Shard { number, canonical } => {
                match (is_dir, canonical, number < shard_count) {
                    (true, true, true) => continue,
                    (true, true, false) => ("beyond-count", None),
                    (true, false, _) => ("not-canonical", None),
                    (false, true, true) => {
                        not_dirs.push(number);
                        ("not-a-directory", None)
                    }
                    (false, _, _) => ("other", None),
                }
            }
            RootName::Probe { pid } => ("probe", pid),
            RootName::Kept => ("kept", None),
            RootName::Other => ("other", None),
        };
        unread.push(UnreadEntry {
            name: name.clone(),
            why,
            entry_type: entry.kind,
            records: 0,
            active: 0,
            pid,
            pid_running: pid.map(|p| files::running(i64::from(p))),
        });
    }
    let parts: Vec<Result<Part, InputError>> = (0..shard_count)
        .into_par_iter()
        .map(|shard| read_shard(&ctx, shard))
        .collect();
    let mut total = Part::default();
    for part in parts {
        total = total.merge(part?);
    }
    // What an id's own path holds: nothing, where its shard's path is no
    // directory (a claim raises there before it reads anything).
    let read_own = |id: &WorkId, buffer: &mut Vec<u8>| {
        if not_dirs.contains(&table::shard_of(id, shard_count)) {
            Read::Absent
        } else {
            read_at(&root.join(ctx.own_rel(id)), id, kind, buffer)
        }
    };
    // Shard directories that are links: their targets are read through
    // them, not again as directories of their own.
    let linked: Vec<PathBuf> = root_entries
        .iter()
        .filter(|e| e.kind == EntryType::Symlink)
        .filter(|e| {
            matches!(table::root_name(&e.name), RootName::Shard { number, canonical: true } if number < shard_count)
        })
        .filter_map(|e| std::fs::canonicalize(root.join(&e.name)).ok())
        .collect();
    // Ids named by `<id>.json` files outside their own path: the records
    // listed in the wrong scanned directory, and those in directories no
    // scan lists.
    let mut elsewhere: BTreeMap<WorkId, Vec<String>> = BTreeMap::new();
    let misplaced = std::mem::take(&mut total.misplaced);
    // Records outside their own directory, with the number of the one they
    // are in: what decides the counts the layout fits.
    let mut outside: Vec<(u64, WorkId)> = misplaced.iter().map(|(s, id, _)| (*s, *id)).collect();
    let mut misplaced_rows = Vec::new();
    let mut buffer = Vec::new();
    for (_, id, rel) in &misplaced {
        elsewhere.entry(*id).or_default().push(rel.clone());
        let here = read_at(&root.join(rel), id, kind, &mut buffer);
        let here_bytes = buffer.clone();
        if ctx.wants_history(id) {
            total.history.push(history_file(
                *id,
                rel.clone(),
                "record",
                EntryType::File,
                false,
                Some(&here),
                None,
            ));
        }
        let own = read_own(id, &mut buffer);
        let holds = match &own {
            Read::Absent => "nothing",
            _ if matches!(own, Read::Bytes(..)) && buffer == here_bytes => "same",
            _ => "other",
        };
        misplaced_rows.push(MisplacedRecord {
            id: *id,
            path: rel.clone(),
            own_path: ctx.own_rel(id),
            own_path_holds: holds,
            valid_here: here.at_path_valid(),
            status: match &here {
                Read::Bytes(Reading::Valid(r), _) => Some(r.status),
                _ => None,
            },
        });
        // Each scan reads the own path for this listing too.
        if let Read::Bytes(Reading::Valid(record), _) = &own {
            let mut extra = Part::default();
            count_listing(&ctx, &mut extra, id, record, false);
            total = total.merge(extra);
        }
    }
    for entry in unread.iter_mut() {
        let dir = root.join(&entry.name);
        if matches!(entry.why, "probe" | "kept") || !files::is_dir(&dir) {
            continue;
        }
        if std::fs::canonicalize(&dir).is_ok_and(|real| linked.contains(&real)) {
            entry.why = "linked";
            continue;
        }
        let number = match table::root_name(&entry.name) {
            RootName::Shard { number, .. } => Some(number),
            _ => None,
        };
        let Ok(listing) = files::entries(&dir) else {
            continue;
        };
        for e in listing {
            if let ShardName::Lock(id) = table::shard_name(&e.name)
                && ctx.wants_history(&id)
            {
                total.history.push(history_file(
                    id,
                    format!("{}/{}", entry.name, e.name),
                    "lock",
                    e.kind,
                    false,
                    None,
                    None,
                ));
            }
            if let ShardName::Record(id) = table::shard_name(&e.name) {
                entry.records += 1;
                if let Some(number) = number {
                    outside.push((number, id));
                }
                let read = read_at(&dir.join(&e.name), &id, kind, &mut buffer);
                if let Read::Bytes(Reading::Valid(r), _) = &read
                    && r.status != Status::Done
                {
                    entry.active += 1;
                }
                elsewhere
                    .entry(id)
                    .or_default()
                    .push(format!("{}/{}", entry.name, e.name));
                if ctx.wants_history(&id) {
                    total.history.push(history_file(
                        id,
                        format!("{}/{}", entry.name, e.name),
                        "record",
                        e.kind,
                        false,
                        Some(&read),
                        None,
                    ));
                }
            }
        }
    }
    // Ids whose only files are elsewhere: rejected, as upstream's reader
    // finds nothing (or something else) at their own path.
    let rejected_here: std::collections::HashSet<WorkId> =
        total.rejected.iter().map(|r| r.id).collect();
    for (id, places) in &elsewhere {
        if rejected_here.contains(id) {
            continue;
        }
        let own_rel = ctx.own_rel(id);
        let own_shard = table::shard_of(id, shard_count);
        let own_dir_listed = files::is_dir(&root.join(table::shard_dir_name(own_shard)));
        let own = read_own(id, &mut buffer);
        if matches!(own, Read::Bytes(Reading::Valid(_), _)) && own_dir_listed {
            continue;
        }
        let lock = files::entries(&root.join(table::shard_dir_name(own_shard)))
            .ok()
            .and_then(|l| {
                l.into_iter()
                    .find(|e| e.name == format!("{id}.json.lock"))
                    .map(|e| e.kind)
            });
        let (reason, message, raises) = rejection_of(&own);
        total.rejected.push(RejectedRecord {
            id: *id,
            path: own_rel,
            reason,
            message,
            raises,
            elsewhere: places.clone(),
            claim: claim_of(&ctx, &own, lock, !not_dirs.contains(&own_shard)),
        });
    }
    for r in total.rejected.iter_mut() {
        if let Some(places) = elsewhere.get(&r.id) {
            r.elsewhere = places.clone();
        }
    }
    total.rejected.sort_by_key(|r| r.id);
    total.rejected.dedup_by(|a, b| a.id == b.id);
    total
        .expired
        .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.id.cmp(&b.1.id)));
    let expired: Vec<ExpiredRecord> = total
        .expired
        .into_iter()
        .enumerate()
        .map(|(order, (_, mut e))| {
            e.order = order;
            e
        })
        .collect();
    total
        .committing
        .sort_by(|a, b| a.updated.total_cmp(&b.updated).then(a.id.cmp(&b.id)));
    total.future.sort_by_key(|r| r.id);
    total.bad_locks.sort_by(|a, b| a.path.cmp(&b.path));
    total.temp_files.sort_by(|a, b| a.path.cmp(&b.path));
    total.held_locks.sort_by(|a, b| a.path.cmp(&b.path));
    total.odd.sort_by(|a, b| a.path.cmp(&b.path));
    total
        .history
        .sort_by(|a, b| a.id.cmp(&b.id).then(a.path.cmp(&b.path)));
    misplaced_rows.sort_by(|a, b| a.path.cmp(&b.path));
    // The counts at which nine in ten of the records looked at (the first
    // few of every directory) sit in their own directory, where at this
    // count fewer than half do.
    let fitting_counts = (!outside.is_empty()).then(|| {
        let mut placed: Vec<(u64, WorkId)> = total.sample.clone();
        placed.extend(outside.iter().take(4096));
        let fit = |n: u64| {
            let hits = placed
                .iter()
                .filter(|(s, id)| table::shard_of(id, n) == *s)
                .count();
            hits * 10 >= placed.len() * 9
        };
        let here = placed
            .iter()
            .filter(|(s, id)| table::shard_of(id, shard_count) == *s)
            .count();
        if here * 2 >= placed.len() {
            return Vec::new();
        }
        let lowest = placed.iter().map(|(s, _)| s + 1).min().unwrap_or(1);
        (lowest..=MAX_FITTED_COUNT)
            .filter(|n| *n != shard_count && fit(*n))
            .take(8)
            .collect()
    });
    unread.sort_by(|a, b| a.name.cmp(&b.name));
    let owners = total
        .owners
        .into_values()
        .map(|mut row| {
            row.host = ctx.owner_host(&row.owner);
            row
        })
        .collect();
    Ok(TableReport {
        kind: "table",
        table: kind,
        table_from,
        path: root.display().to_string(),
        shard_count: shard_setting,
        ttl: ttl_setting,
        ttl_effective: ctx.ttl,
        now: options.now,
        counts: total.counts,
        files: total.files,
        accepted: total.accepted,
        rejected: total.rejected.iter().map(|r| r.id).collect(),
        rejected_records: total.rejected,
        recovered: expired.iter().map(|e| e.id).collect(),
        start_limit: table::START_LIMIT,
        expired,
        committing: total.committing,
        future: total.future,
        misplaced: misplaced_rows,
        unread,
        fitting_counts,
        bad_locks: total.bad_locks,
        temp_files: total.temp_files,
        held_locks: total.held_locks,
        odd: total.odd,
        owners,
        host: ctx.host.clone(),
        history: options.history.as_ref().map(|_| total.history),
    })
}

impl Read {
    fn at_path_valid(&self) -> bool {
        matches!(self, Read::Bytes(Reading::Valid(_), _))
    }
}

/// The tables a state directory holds at upstream's default roots.
pub fn tables_in(dir: &Path) -> Vec<PathBuf> {
    [table::WORK_DIR, table::TARGET_DIR]
        .iter()
        .map(|name| dir.join(name))
        .filter(|p| files::is_dir(p))
        .collect()
}

/// Whether `path` looks like a table root: one of upstream's default
/// names, or a directory named by `SYMCC_MULTI_MASTER_LEASE_DIR` or
/// `SYMCC_MULTI_MASTER_TARGET_LEASE_DIR`, or a directory whose entries
/// are all shard directories or probe directories (at least one shard).
pub fn is_table_root(path: &Path) -> bool {
    // Upstream's own names are read as tables whatever they are, so that
    // one that is not a directory is reported as that.
    if matches!(
        path.file_name().and_then(|n| n.to_str()),
        Some(table::WORK_DIR | table::TARGET_DIR)
    ) {
        return true;
    }
    if !files::is_dir(path) {
        return false;
    }
    let canonical = std::fs::canonicalize(path).ok();
    for var in [
        "SYMCC_MULTI_MASTER_LEASE_DIR",
        "SYMCC_MULTI_MASTER_TARGET_LEASE_DIR",
    ] {
        if let Some(v) = std::env::var_os(var)
            && canonical.is_some()
            && std::fs::canonicalize(v).ok() == canonical
        {
            return true;
        }
    }
    let Ok(entries) = files::entries(path) else {
        return false;
    };
    let mut shards = 0;
    for e in &entries {
        match table::root_name(&e.name) {
            RootName::Shard { .. } if e.kind == EntryType::Dir => shards += 1,
            RootName::Probe { .. } | RootName::Kept => {}
            _ => return false,
        }
    }
    shards > 0
}

/// The shard count the scans list: `--lease-shards`, else
/// `SYMCC_MULTI_MASTER_LEASE_SHARDS` (`max(1, int(value))`), else 256.
pub fn shard_count_setting(flag: Option<u64>) -> Setting<u64> {
    if let Some(n) = flag {
        return Setting {
            value: n.max(1),
            from: "--lease-shards".into(),
        };
    }
    match std::env::var("SYMCC_MULTI_MASTER_LEASE_SHARDS")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        Some(n) => Setting {
            value: n.max(1) as u64,
            from: "SYMCC_MULTI_MASTER_LEASE_SHARDS".into(),
        },
        None => Setting {
            value: table::DEFAULT_SHARDS,
            from: "default".into(),
        },
    }
}

/// The TTL the master builds the table with: `--ttl`, else (a target
/// table) `SYMCC_MULTI_MASTER_TARGET_LEASE_TTL`, else
/// `SYMCC_WORK_LEASE_TTL`, else `max(120, 4 * SYMCC_TIMEOUT)`; the
/// environment's values clamped to `[1, 86400]` as the master clamps them.
pub fn ttl_setting(flag: Option<f64>, kind: TableKind) -> Setting<f64> {
    if let Some(t) = flag {
        return Setting {
            value: t,
            from: "--ttl".into(),
        };
    }
    let env_f64 = |var: &str| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite())
    };
    let work = env_f64("SYMCC_WORK_LEASE_TTL");
    let timeout = env_f64("SYMCC_TIMEOUT");
    let work_ttl = table::master_ttl(work, timeout);
    let target = (kind == TableKind::Target)
        .then(|| env_f64("SYMCC_MULTI_MASTER_TARGET_LEASE_TTL"))
        .flatten();
    let (value, from) = match (target, work, timeout) {
        (Some(t), _, _) => (
            t.clamp(1.0, 86_400.0),
            "SYMCC_MULTI_MASTER_TARGET_LEASE_TTL",
        ),
        (None, Some(_), _) => (work_ttl, "SYMCC_WORK_LEASE_TTL"),
        (None, None, Some(_)) => (work_ttl, "SYMCC_TIMEOUT"),
        (None, None, None) => (work_ttl, "default"),
    };
    Setting {
        value,
        from: from.into(),
    }
}

/// What a fresh `claim` of `id` by another owner does now (a target
/// table's: `claim_group([target])`), as upstream would decide it: the
/// shard directory made, the lock file opened, the record read.
pub fn claim_probe(root: &Path, report: &TableReport, id: &WorkId) -> ClaimOutcome {
    let shard_dir = root.join(table::shard_dir_name(table::shard_of(
        id,
        report.shard_count.value,
    )));
    let shard_is_dir = files::is_dir(&shard_dir) || !shard_dir.exists();
    let lock = std::fs::symlink_metadata(shard_dir.join(format!("{id}.json.lock")))
        .ok()
        .map(|m| {
            let ft = m.file_type();
            if ft.is_file() {
                EntryType::File
            } else if ft.is_dir() {
                EntryType::Dir
            } else if ft.is_symlink() {
                EntryType::Symlink
            } else {
                EntryType::Special
            }
        });
    let ctx = Context {
        root,
        kind: report.table,
        shard_count: report.shard_count.value,
        ttl: report.ttl_effective,
        recover_ttl: report.ttl_effective,
        now: report.now,
        skew: 0.0,
        held: Default::default(),
        host: None,
        history: None,
    };
    let mut buffer = Vec::new();
    let read = read_at(
        &shard_dir.join(format!("{id}.json")),
        id,
        report.table,
        &mut buffer,
    );
    claim_of(&ctx, &read, lock, shard_is_dir)
}
