//! `diff` of two fenced lease tables (`.work_lease_table/`,
//! `.target_lease_table/`, or any root `operations::table::is_table_root`
//! accepts), record by record: records added and removed; for an id on
//! both sides, what its record's change means in upstream's state
//! machine (a steal by another owner, a re-claim by the same one, a
//! status step, a heartbeat, other bytes), a record one side's reader
//! rejects, and a record that moved to another directory; and the files
//! that are not records (lock files, left-over temporary files, probe
//! directories, other names), added, removed or changed in type.
//!
//! Records are matched by id wherever they sit under the root, at one
//! shard count. Two passes, each a directory of each side at a time, in
//! sorted name order: the first lists every directory and compares the
//! names that are not records, keeping only the records that sit outside
//! the shard directory their id names (none in a table written at the
//! count compared); the second takes the shard directories in order and
//! compares each id's record (its own path first, else the first copy
//! elsewhere) and counts what `snapshot_counts(now)` counts on each side.
//! Memory is one shard directory of each side, those records outside their
//! directory, and at most `--max-examples` changes of each kind; every
//! count is exact. Nothing is locked or written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value as Json, json};

use super::{Change, ChangeKind, DiffKind, DiffReport, Filter, Summary, float};
use crate::engine::journal::WorkId;
use crate::engine::table::{self, Raises, Reading, Record, RootName, ShardName, TableKind};
use crate::operations::numbers::plural;
use crate::operations::schema;
use crate::operations::table::{self as lease_table, Counts, Setting};
use crate::store::error::{InputError, in_words};
use crate::store::table::{self as files, EntryType, RecordFile};

/// How two tables are compared.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TableDiffOptions {
    /// `--lease-shards`; `None`: `SYMCC_MULTI_MASTER_LEASE_SHARDS`, else 256.
    pub lease_shards: Option<u64>,
    /// `--ttl`; `None`: the master's environment, else its default.
    pub ttl: Option<f64>,
    /// The present `snapshot_counts` counts at, Unix seconds.
    pub now: f64,
    /// How many changes of each kind to list (0: all).
    pub max_examples: usize,
}

/// One side of a table comparison.
#[derive(Clone, Debug)]
pub struct TableSide<'p> {
    /// The path, as given.
    pub path: &'p Path,
    /// The table's root (the path itself, or a state directory's table).
    pub root: PathBuf,
}

/// What one side holds, in all: `snapshot_counts(now)` and its files.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TableTotals {
    /// The table's root.
    pub path: String,
    /// `snapshot_counts(now)` at the count and the TTL, exactly.
    pub counts: Counts,
    /// `<id>.json` names anywhere under the root.
    pub records: u64,
    /// Of the ids listed in their own shard directory, those whose record
    /// upstream's reader accepts.
    pub accepted: u64,
    /// Those whose record it rejects (or raises on).
    pub rejected: u64,
    /// `<id>.json` names outside the shard directory their id names.
    pub outside: u64,
    /// `<id>.json.lock` names.
    pub locks: u64,
    /// Left-over `<id>.json.<pid>.<ns>.tmp` names.
    pub temp_files: u64,
    /// File-system probe directories in the root.
    pub probes: u64,
    /// Every other name.
    pub other: u64,
}

/// The tables' comparison: the `table` member of `diff`'s report.
#[derive(Clone, Debug, Serialize)]
pub struct TableDiff {
    /// `work` or `target`.
    pub table: TableKind,
    /// How it was decided: `name`, `environment` or `records`.
    pub table_from: &'static str,
    /// The shard count records are placed by.
    pub shard_count: Setting<u64>,
    /// The TTL: as given (`--ttl`) or the master's.
    pub ttl: Setting<f64>,
    /// The TTL the table applies (at least 1 s).
    pub ttl_effective: f64,
    /// The present the counts are at.
    pub now: f64,
    /// Distinct ids with a record file on either side.
    pub ids: u64,
    /// Ids on both sides whose record is the same bytes at the same paths.
    pub unchanged: u64,
    /// At most how many changes of each kind `changes` lists (0: all).
    pub max_examples: usize,
}

/// The kinds of change, in the order the report lists them.
pub const ORDER: [&str; 23] = [
    "record_added",
    "record_removed",
    "record_status",
    "record_owner",
    "record_token",
    "record_updated",
    "record_bytes",
    "record_reading",
    "record_shard",
    "lock_added",
    "lock_removed",
    "lock_type",
    "temp_added",
    "temp_removed",
    "temp_type",
    "probe_added",
    "probe_removed",
    "probe_type",
    "kept_added",
    "kept_removed",
    "other_added",
    "other_removed",
    "other_type",
];

/// The counting key of a change: `record_added`, `record_owner`,
/// `lock_removed`, `temp_type`, …
pub fn key_of(c: &Change) -> String {
    match (c.change, c.field) {
        (ChangeKind::Added, _) => format!("{}_added", c.entity),
        (ChangeKind::Removed, _) => format!("{}_removed", c.entity),
        (ChangeKind::Changed, field) => format!("{}_{}", c.entity, field.unwrap_or("changed")),
    }
}

/// The changes of one kind: how many, and the first few.
#[derive(Default)]
struct Group {
    count: u64,
    examples: Vec<Change>,
}

/// What the two passes gather.
struct Tally<'f> {
    filter: &'f Filter,
    limit: usize,
    /// Every change, before the filters.
    differ: u64,
    groups: BTreeMap<String, Group>,
}

impl Tally<'_> {
    fn note(&mut self, c: Change) {
        self.differ += 1;
        if !self.filter.keeps(&c) {
            return;
        }
        let group = self.groups.entry(key_of(&c)).or_default();
        group.count += 1;
        if self.limit == 0 || group.examples.len() < self.limit {
            group.examples.push(c);
        }
    }
}

/// A record file read: where, its bytes, and upstream's reading.
struct Seen {
    rel: String,
    bytes: Vec<u8>,
    got: Got,
}

/// Upstream's reading of a record file.
enum Got {
    Valid(Box<Record>),
    Rejected {
        reason: &'static str,
        message: String,
    },
}

impl Got {
    fn valid(&self) -> Option<&Record> {
        match self {
            Got::Valid(r) => Some(r),
            Got::Rejected { .. } => None,
        }
    }
}

/// Reads `root/rel` for `id`; `None` when nothing is there (any more).
fn see(root: &Path, rel: &str, id: &WorkId, kind: TableKind) -> Option<Seen> {
    let mut bytes = Vec::new();
    let got = match files::read_record(&root.join(rel), &mut bytes) {
        RecordFile::Absent => return None,
        RecordFile::Unreadable(e) => Got::Rejected {
            reason: "unreadable",
            message: format!("cannot be read ({})", in_words(&e)),
        },
        RecordFile::Read => match table::read(&bytes, id, kind) {
            Reading::Valid(r) => Got::Valid(r),
            Reading::Rejected(r) => Got::Rejected {
                reason: lease_table::reason_name(&r),
                message: r.to_string(),
            },
            Reading::Raises(r) => Got::Rejected {
                reason: "raises",
                message: match r {
                    Raises::RecursionError => {
                        "nests deeper than Python's recursion limit: upstream's reader raises RecursionError"
                    }
                    Raises::TypeError => {
                        "has a status that is a list or an object: upstream's reader raises TypeError"
                    }
                    Raises::Hangs => "is a FIFO: upstream's open() waits on it for ever",
                }
                .to_string(),
            },
        },
    };
    Some(Seen {
        rel: rel.to_string(),
        bytes,
        got,
    })
}

/// The time a token says its claim was made: its last field is
/// `time.time_ns()` (the owner itself may hold colons).
fn claimed(token: &str) -> Option<f64> {
    let ns: u64 = token.rsplit(':').next()?.parse().ok()?;
    // Whole seconds apart: a u64 of nanoseconds has more digits than a
    // double keeps.
    Some((ns / 1_000_000_000) as f64 + (ns % 1_000_000_000) as f64 / 1e9)
}

/// A record file as a change shows it.
fn view(seen: &Seen) -> Json {
    let (reading, message) = match &seen.got {
        Got::Valid(_) => ("accepted", Json::Null),
        Got::Rejected { reason, message } => (*reason, Json::String(message.clone())),
    };
    let r = seen.got.valid();
    let text = |f: fn(&Record) -> Option<&String>| r.and_then(f).map_or(Json::Null, |s| json!(s));
    json!({
        "path": seen.rel,
        "size": seen.bytes.len(),
        "reading": reading,
        "message": message,
        "status": r.map_or(Json::Null, |r| json!(r.status)),
        "owner": text(|r| r.owner.as_ref()),
        "previous_owner": text(|r| r.previous_owner.as_ref()),
        "worker": text(|r| r.worker.as_ref()),
        "token": r.map_or(Json::Null, |r| json!(r.token)),
        "updated": r.map_or(Json::Null, |r| float(r.updated)),
        "claimed": r.and_then(|r| claimed(&r.token)).map_or(Json::Null, float),
        "attempts": text(|r| r.attempts.as_ref()),
        "steals": text(|r| r.steals.as_ref()),
        "completed": r.and_then(|r| r.completed).map_or(Json::Null, float),
    })
}

/// What changed in a record whose bytes differ: the field a change is
/// filed under.
fn field_of(a: &Got, b: &Got) -> &'static str {
    match (a, b) {
        (Got::Valid(a), Got::Valid(b)) => {
            if a.owner != b.owner {
                "owner"
            } else if a.token != b.token {
                "token"
            } else if a.status != b.status {
                "status"
            } else if a.updated != b.updated {
                "updated"
            } else {
                "bytes"
            }
        }
        (Got::Rejected { reason: x, .. }, Got::Rejected { reason: y, .. }) if x == y => "bytes",
        _ => "reading",
    }
}

/// A record change.
fn record_change(change: ChangeKind, id: &WorkId, field: Option<&'static str>) -> Change {
    Change {
        entity: "record",
        change,
        id: Some(id.to_hex()),
        field,
        before: Json::Null,
        after: Json::Null,
        delta: None,
    }
}

/// One side's entries of a directory: name → type (a link followed for
/// whether it is a directory).
type Listing = BTreeMap<String, EntryType>;

fn list(dir: &Path) -> Result<Listing, InputError> {
    if !files::is_dir(dir) {
        return Ok(Listing::new());
    }
    let entries = files::entries(dir).map_err(|e| InputError::io(dir, &e))?;
    Ok(entries
        .into_iter()
        .map(|e| {
            let kind = if e.kind == EntryType::Symlink && files::is_dir(&dir.join(&e.name)) {
                EntryType::Dir
            } else {
                e.kind
            };
            (e.name, kind)
        })
        .collect())
}

/// Where each side holds an id's record files (relative paths).
type Places = [Vec<String>; 2];

/// The comparison's state.
struct Walk<'a, 'f> {
    roots: [&'a Path; 2],
    kind: TableKind,
    shard_count: u64,
    ttl: f64,
    now: f64,
    tally: Tally<'f>,
    totals: [TableTotals; 2],
    /// Records outside their own shard directory, by (own shard, id).
    outside: BTreeMap<(u64, WorkId), Places>,
    ids: u64,
    unchanged: u64,
}

impl Walk<'_, '_> {
    fn own_dir(&self, id: &WorkId) -> String {
        table::shard_dir_name(table::shard_of(id, self.shard_count))
    }

    /// A name that is not a record, present on one side or both.
    fn entry(
        &mut self,
        entity: &'static str,
        rel: &str,
        id: Option<&WorkId>,
        types: [Option<EntryType>; 2],
    ) {
        let (change, field) = match types {
            [Some(a), Some(b)] if a == b => return,
            [Some(_), Some(_)] => (ChangeKind::Changed, Some("type")),
            [None, Some(_)] => (ChangeKind::Added, None),
            [Some(_), None] => (ChangeKind::Removed, None),
            [None, None] => return,
        };
        let side = |t: Option<EntryType>| t.map_or(Json::Null, |t| json!({"path": rel, "type": t}));
        self.tally.note(Change {
            entity,
            change,
            id: id.map(WorkId::to_hex),
            field,
            before: side(types[0]),
            after: side(types[1]),
            delta: None,
        });
    }

    /// The first pass: every name of the root, and of every directory in
    /// it but the probes' and this tool's own.
    fn names(&mut self) -> Result<(), InputError> {
        let tops = [list(self.roots[0])?, list(self.roots[1])?];
        let names: BTreeSet<&String> = tops[0].keys().chain(tops[1].keys()).collect();
        for name in names {
            let class = table::root_name(name);
            let entity = match class {
                RootName::Probe { .. } => "probe",
                RootName::Kept => "kept",
                _ => "other",
            };
            let descend = !matches!(class, RootName::Probe { .. } | RootName::Kept);
            let mut plain = [None, None];
            let mut inner = [Listing::new(), Listing::new()];
            for side in 0..2 {
                let Some(&t) = tops[side].get(name) else {
                    continue;
                };
                if descend && t == EntryType::Dir {
                    inner[side] = list(&self.roots[side].join(name))?;
                } else {
                    plain[side] = Some(t);
                    match class {
                        RootName::Probe { .. } => self.totals[side].probes += 1,
                        _ => self.totals[side].other += 1,
                    }
                }
            }
            self.entry(entity, name, None, plain);
            self.directory(name, &inner);
        }
        Ok(())
    }

    /// The names of one directory of the root, on both sides.
    fn directory(&mut self, dir: &str, inner: &[Listing; 2]) {
        let names: BTreeSet<&String> = inner[0].keys().chain(inner[1].keys()).collect();
        for name in names {
            let types = [inner[0].get(name).copied(), inner[1].get(name).copied()];
            let rel = format!("{dir}/{name}");
            match table::shard_name(name) {
                ShardName::Record(id) => {
                    let home = self.own_dir(&id) == dir;
                    for (side, t) in types.iter().enumerate() {
                        if t.is_none() {
                            continue;
                        }
                        self.totals[side].records += 1;
                        if !home {
                            self.totals[side].outside += 1;
                            let key = (table::shard_of(&id, self.shard_count), id);
                            self.outside.entry(key).or_default()[side].push(rel.clone());
                        }
                    }
                }
                ShardName::Lock(id) => {
                    self.held(types, |t| &mut t.locks);
                    self.entry("lock", &rel, Some(&id), types);
                }
                ShardName::Temp { id, .. } => {
                    self.held(types, |t| &mut t.temp_files);
                    self.entry("temp", &rel, Some(&id), types);
                }
                ShardName::Other => {
                    self.held(types, |t| &mut t.other);
                    self.entry("other", &rel, None, types);
                }
            }
        }
    }

    /// Counts a name in the totals of the sides that hold it.
    fn held(&mut self, types: [Option<EntryType>; 2], of: fn(&mut TableTotals) -> &mut u64) {
        for (totals, t) in self.totals.iter_mut().zip(types) {
            *of(totals) += u64::from(t.is_some());
        }
    }

    /// The second pass: the shard directories in order, each id's record
    /// compared and counted.
    fn records(&mut self) -> Result<(), InputError> {
        for shard in 0..self.shard_count {
            let dir = table::shard_dir_name(shard);
            let mut places: BTreeMap<WorkId, Places> = BTreeMap::new();
            let mut listed_elsewhere: [Vec<WorkId>; 2] = [Vec::new(), Vec::new()];
            for (side, elsewhere) in listed_elsewhere.iter_mut().enumerate() {
                for name in list(&self.roots[side].join(&dir))?.keys() {
                    if let ShardName::Record(id) = table::shard_name(name) {
                        if table::shard_of(&id, self.shard_count) == shard {
                            places.entry(id).or_default()[side].push(format!("{dir}/{name}"));
                        } else {
                            elsewhere.push(id);
                        }
                    }
                }
            }
            while let Some(entry) = self.outside.first_entry() {
                if entry.key().0 != shard {
                    break;
                }
                let ((_, id), [a, b]) = entry.remove_entry();
                let mine = places.entry(id).or_default();
                mine[0].extend(a);
                mine[1].extend(b);
            }
            for (id, at) in places {
                self.record(&dir, &id, &at);
            }
            // Each scan reads a record listed in another shard's directory
            // from its own path.
            for (side, ids) in listed_elsewhere.iter().enumerate() {
                for id in ids {
                    let own = format!("{}/{id}.json", self.own_dir(id));
                    if let Some(seen) = see(self.roots[side], &own, id, self.kind)
                        && let Got::Valid(r) = &seen.got
                    {
                        self.count(side, r);
                    }
                }
            }
        }
        Ok(())
    }

    /// `snapshot_counts(now)` for one listing of an accepted record.
    fn count(&mut self, side: usize, r: &Record) {
        let counts = &mut self.totals[side].counts;
        match r.status {
            table::Status::Leased => {
                counts.leased += 1;
                counts.expired += u64::from(table::counted_expired(self.now, r.updated, self.ttl));
            }
            table::Status::Committing => counts.committing += 1,
            table::Status::Done => counts.done += 1,
        }
    }

    /// One id, both sides.
    fn record(&mut self, dir: &str, id: &WorkId, places: &Places) {
        self.ids += 1;
        let own = format!("{dir}/{id}.json");
        let mut seen: [Option<Seen>; 2] = [None, None];
        for side in 0..2 {
            let Some(first) = places[side].first() else {
                continue;
            };
            seen[side] = see(self.roots[side], first, id, self.kind);
            if *first == own
                && let Some(s) = &seen[side]
            {
                match &s.got {
                    Got::Valid(r) => {
                        self.totals[side].accepted += 1;
                        let r = r.clone();
                        self.count(side, &r);
                    }
                    Got::Rejected { .. } => self.totals[side].rejected += 1,
                }
            }
        }
        let (a, b) = match seen {
            [None, None] => return,
            [None, Some(b)] => {
                let mut c = record_change(ChangeKind::Added, id, None);
                c.after = view(&b);
                return self.tally.note(c);
            }
            [Some(a), None] => {
                let mut c = record_change(ChangeKind::Removed, id, None);
                c.before = view(&a);
                return self.tally.note(c);
            }
            [Some(a), Some(b)] => (a, b),
        };
        let moved = places[0] != places[1];
        if moved {
            let mut c = record_change(ChangeKind::Changed, id, Some("shard"));
            c.before = json!(places[0]);
            c.after = json!(places[1]);
            self.tally.note(c);
        }
        if a.bytes == b.bytes {
            self.unchanged += u64::from(!moved);
            return;
        }
        let mut c = record_change(ChangeKind::Changed, id, Some(field_of(&a.got, &b.got)));
        if let (Some(x), Some(y)) = (a.got.valid(), b.got.valid()) {
            c.delta = Some(float(y.updated - x.updated));
        }
        c.before = view(&a);
        c.after = view(&b);
        self.tally.note(c);
    }
}

/// Compares two tables at the shard count and TTL of `options`.
pub(super) fn compare(
    a: &TableSide<'_>,
    b: &TableSide<'_>,
    filter: &Filter,
    options: TableDiffOptions,
) -> anyhow::Result<DiffReport> {
    files::open_root(&a.root)?;
    files::open_root(&b.root)?;
    let shard_count = lease_table::shard_count_setting(options.lease_shards);
    let n = shard_count.value;
    let (kind_a, from_a) = lease_table::decide_kind(&a.root, None, n);
    let (kind_b, from_b) = lease_table::decide_kind(&b.root, None, n);
    if kind_a != kind_b && from_a != "records" && from_b != "records" {
        anyhow::bail!(
            "cannot compare {} (a {} lease table) with {} (a {} lease table)",
            a.path.display(),
            kind_a.as_str(),
            b.path.display(),
            kind_b.as_str()
        );
    }
    let (kind, table_from) = if from_a == "records" && from_b != "records" {
        (kind_b, from_b)
    } else {
        (kind_a, from_a)
    };
    let ttl = lease_table::ttl_setting(options.ttl, kind);
    let mut walk = Walk {
        roots: [&a.root, &b.root],
        kind,
        shard_count: n,
        ttl: table::table_ttl(ttl.value),
        now: options.now,
        tally: Tally {
            filter,
            limit: options.max_examples,
            differ: 0,
            groups: BTreeMap::new(),
        },
        totals: Default::default(),
        outside: BTreeMap::new(),
        ids: 0,
        unchanged: 0,
    };
    walk.names()?;
    walk.records()?;
    let mut totals = std::mem::take(&mut walk.totals);
    totals[0].path = a.root.display().to_string();
    totals[1].path = b.root.display().to_string();
    let mut groups: Vec<(String, Group)> =
        std::mem::take(&mut walk.tally.groups).into_iter().collect();
    groups.sort_by_key(|(key, _)| ORDER.iter().position(|k| k == key).unwrap_or(ORDER.len()));
    let counts = groups.iter().map(|(k, g)| (k.clone(), g.count)).collect();
    let changes = groups.into_iter().flat_map(|(_, g)| g.examples).collect();
    let mut notes = Vec::new();
    for (side, t) in [a, b].iter().zip(&totals) {
        if t.outside > 0 {
            notes.push(format!(
                "{}: {} outside the shard directory their id names at {n} shards, where upstream \
                 never reads them (is --lease-shards the count the table was written at?)",
                side.path.display(),
                plural(t.outside, "record sits", "records sit")
            ));
        }
    }
    let [totals_a, totals_b] = totals;
    Ok(DiffReport {
        schema_version: schema::DIFF,
        kind: DiffKind::Table,
        a: a.path.display().to_string(),
        b: b.path.display().to_string(),
        identical: walk.tally.differ == 0,
        changes,
        counts,
        summary: Summary::Table {
            a: totals_a,
            b: totals_b,
        },
        bytes: None,
        history: None,
        ledger: None,
        table: Some(TableDiff {
            table: kind,
            table_from,
            shard_count,
            ttl_effective: walk.ttl,
            ttl,
            now: options.now,
            ids: walk.ids,
            unchanged: walk.unchanged,
            max_examples: options.max_examples,
        }),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tokens_claim_time_is_its_last_field() {
        // Exactly the half second, which a u64 of nanoseconds divided by
        // 1e9 misses.
        assert_eq!(
            claimed("node-7.cluster:31337:3:31337:1754550457250000000"),
            Some(1754550457.25)
        );
        assert_eq!(claimed("master"), None);
        assert_eq!(claimed("h:1:2:x"), None);
    }

    #[test]
    fn a_change_is_counted_under_its_entity_and_field() {
        let id = WorkId([0xab; 32]);
        assert_eq!(
            key_of(&record_change(ChangeKind::Added, &id, None)),
            "record_added"
        );
        assert_eq!(
            key_of(&record_change(ChangeKind::Changed, &id, Some("owner"))),
            "record_owner"
        );
        assert!(ORDER.contains(&"record_owner"));
    }
}
