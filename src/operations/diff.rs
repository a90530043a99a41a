//! `diff` as data: what changed between two snapshots (their restored
//! views, keyed by task id) or two journals (their replay states), in the
//! terms of the domain, plus the forensic facts about two journals' bytes:
//! whether one is the other plus appended records, or where they diverge.
//! The comparing is pure (values and readers in, a report out); [`run`]
//! opens the two files, read-only.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use serde::Serialize;
use serde_json::{Value as Json, json};

use crate::engine::journal::Clock;
use crate::engine::journal::StateView;
use crate::engine::journal::{
    self, Active, LineEvent, LineKind, LineReader, Observer, Replay, WorkId,
};
use crate::engine::json::PyInt;
use crate::engine::snapshot::{self, Restored, TaskLease, TaskStats};
use crate::operations::exit::Exit;
use crate::operations::schema;
use crate::store::error::InputError;
use crate::store::error::in_words;
use crate::store::format::Kind;
use crate::store::lock::ProcLocks;
use crate::store::open;
use crate::store::resolve::Target;
use crate::store::resolve::{self, Purpose};

/// What kind of change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Only in B.
    Added,
    /// Only in A.
    Removed,
    /// In both, different.
    Changed,
}

/// One difference.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// `task`, `lease`, `config`, `active` or `completed`.
    pub entity: &'static str,
    /// Added, removed or changed.
    pub change: ChangeKind,
    /// Task or work id (none for configuration).
    pub id: Option<String>,
    /// The field that changed (none for added and removed entities).
    pub field: Option<&'static str>,
    /// The value in A.
    pub before: Json,
    /// The value in B.
    pub after: Json,
    /// `after - before` for numbers.
    pub delta: Option<Json>,
}

/// Which changes to report.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Fields to leave out.
    pub ignore: BTreeSet<String>,
    /// Only this kind of change.
    pub only: Option<ChangeKind>,
    /// Only ids starting with this (lowercase hex).
    pub id_prefix: Option<String>,
}

impl Filter {
    fn keeps(&self, c: &Change) -> bool {
        c.field.is_none_or(|f| !self.ignore.contains(f))
            && self.only.is_none_or(|k| k == c.change)
            && self
                .id_prefix
                .as_deref()
                .is_none_or(|p| c.id.as_deref().is_some_and(|id| id.starts_with(p)))
    }
}

fn int(i: &PyInt) -> Json {
    serde_json::to_value(i).unwrap_or(Json::Null)
}

fn float(f: f64) -> Json {
    serde_json::Number::from_f64(f).map_or_else(
        || Json::String(crate::engine::json::float_repr_any(f)),
        Json::Number,
    )
}

fn int_delta(a: &PyInt, b: &PyInt) -> Option<Json> {
    match (a, b) {
        (PyInt::Small(x), PyInt::Small(y)) => y.checked_sub(*x).map(|d| json!(d)),
        _ => None,
    }
}

/// Cumulative statistics of one side.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Tasks.
    pub tasks: usize,
    /// State leases.
    pub state_leases: usize,
    /// Sums over the stats entries.
    #[serde(flatten)]
    pub stats: crate::engine::snapshot::Totals,
}

fn totals(r: &Restored) -> Totals {
    Totals {
        tasks: r.stats.len(),
        state_leases: r.leases.len(),
        stats: r.totals(),
    }
}

/// The difference between two snapshots.
#[derive(Clone, Debug, Serialize)]
pub struct SnapshotDiff {
    /// Whether there is no change at all (filters aside).
    pub identical: bool,
    /// The changes, after filtering.
    pub changes: Vec<Change>,
    /// Changes by entity and kind (`task added`, …), after filtering.
    pub counts: BTreeMap<String, u64>,
    /// Totals of A.
    pub totals_a: Totals,
    /// Totals of B.
    pub totals_b: Totals,
}

/// One side of a snapshot comparison: its restored view and file clock.
pub struct SnapshotSide<'a> {
    /// The restored view.
    pub restored: &'a Restored,
    /// Whether the file carries `"clock":"unix"`.
    pub unix_clock: bool,
}

/// Compares two restored snapshots.
pub fn snapshots(a: &SnapshotSide<'_>, b: &SnapshotSide<'_>, filter: &Filter) -> SnapshotDiff {
    let mut changes = Vec::new();
    let clock = |unix: bool| json!(if unix { "unix" } else { "legacy" });
    if a.unix_clock != b.unix_clock {
        changes.push(Change {
            entity: "config",
            change: ChangeKind::Changed,
            id: None,
            field: Some("clock"),
            before: clock(a.unix_clock),
            after: clock(b.unix_clock),
            delta: None,
        });
    }
    let (ra, rb) = (a.restored, b.restored);
    for (field, x, y) in [
        ("shard_count", &ra.shard_count, &rb.shard_count),
        ("worker_count", &ra.worker_count, &rb.worker_count),
        ("steal_window", &ra.steal_window, &rb.steal_window),
    ] {
        if x != y {
            changes.push(Change {
                entity: "config",
                change: ChangeKind::Changed,
                id: None,
                field: Some(field),
                before: int(x),
                after: int(y),
                delta: int_delta(x, y),
            });
        }
    }
    let stats_a: HashMap<&str, &TaskStats> =
        ra.stats.iter().map(|t| (t.task_id.as_str(), t)).collect();
    let stats_b: HashMap<&str, &TaskStats> =
        rb.stats.iter().map(|t| (t.task_id.as_str(), t)).collect();
    let ids: BTreeSet<&str> = stats_a.keys().chain(stats_b.keys()).copied().collect();
    for id in ids {
        match (stats_a.get(id), stats_b.get(id)) {
            (Some(t), None) => changes.push(Change {
                entity: "task",
                change: ChangeKind::Removed,
                id: Some(id.to_string()),
                field: None,
                before: serde_json::to_value(t).unwrap_or(Json::Null),
                after: Json::Null,
                delta: None,
            }),
            (None, Some(t)) => changes.push(Change {
                entity: "task",
                change: ChangeKind::Added,
                id: Some(id.to_string()),
                field: None,
                before: Json::Null,
                after: serde_json::to_value(t).unwrap_or(Json::Null),
                delta: None,
            }),
            (Some(x), Some(y)) => task_changes(id, x, y, &mut changes),
            (None, None) => {}
        }
    }
    let leases_a: BTreeMap<&str, &TaskLease> =
        ra.leases.iter().map(|l| (l.task_id.as_str(), l)).collect();
    let leases_b: BTreeMap<&str, &TaskLease> =
        rb.leases.iter().map(|l| (l.task_id.as_str(), l)).collect();
    let ids: BTreeSet<&str> = leases_a.keys().chain(leases_b.keys()).copied().collect();
    let lease_json = |l: &TaskLease| json!({"worker": int(&l.worker), "updated": l.updated.map_or(Json::Null, float)});
    for id in ids {
        let lease_change = |change, field, before, after| Change {
            entity: "lease",
            change,
            id: Some(id.to_string()),
            field,
            before,
            after,
            delta: None,
        };
        match (leases_a.get(id), leases_b.get(id)) {
            (Some(x), None) => changes.push(lease_change(
                ChangeKind::Removed,
                None,
                lease_json(x),
                Json::Null,
            )),
            (None, Some(y)) => changes.push(lease_change(
                ChangeKind::Added,
                None,
                Json::Null,
                lease_json(y),
            )),
            (Some(x), Some(y)) => {
                if x.worker != y.worker {
                    changes.push(lease_change(
                        ChangeKind::Changed,
                        Some("worker"),
                        int(&x.worker),
                        int(&y.worker),
                    ));
                }
                if x.updated.map(f64::to_bits) != y.updated.map(f64::to_bits) {
                    let before = x.updated.map_or(Json::Null, float);
                    let after = y.updated.map_or(Json::Null, float);
                    changes.push(lease_change(
                        ChangeKind::Changed,
                        Some("updated"),
                        before,
                        after,
                    ));
                }
            }
            (None, None) => {}
        }
    }
    let identical = changes.is_empty();
    changes.retain(|c| filter.keeps(c));
    SnapshotDiff {
        identical,
        counts: count(&changes),
        changes,
        totals_a: totals(ra),
        totals_b: totals(rb),
    }
}

fn task_changes(id: &str, x: &TaskStats, y: &TaskStats, out: &mut Vec<Change>) {
    let mut push = |field: &'static str, before: Json, after: Json, delta: Option<Json>| {
        out.push(Change {
            entity: "task",
            change: ChangeKind::Changed,
            id: Some(id.to_string()),
            field: Some(field),
            before,
            after,
            delta,
        });
    };
    for (field, a, b) in [
        ("shard", &x.shard, &y.shard),
        ("owner", &x.owner, &y.owner),
        ("leases", &x.leases, &y.leases),
        ("completions", &x.completions, &y.completions),
        ("failures", &x.failures, &y.failures),
        ("total_generated", &x.total_generated, &y.total_generated),
    ] {
        if a != b {
            push(field, int(a), int(b), int_delta(a, b));
        }
    }
    for (field, a, b) in [
        ("reward", x.reward, y.reward),
        ("elapsed", x.elapsed, y.elapsed),
    ] {
        if a.to_bits() != b.to_bits() {
            let delta = (a.is_finite() && b.is_finite()).then(|| float(b - a));
            push(field, float(a), float(b), delta);
        }
    }
    // Times as the files hold them: restore zeroes legacy ones, and
    // comparing a legacy snapshot with its migration must show exactly that.
    for (field, a, b) in [
        ("last_lease", x.written_times.0, y.written_times.0),
        ("last_complete", x.written_times.1, y.written_times.1),
    ] {
        if a.map(f64::to_bits) != b.map(f64::to_bits) {
            let delta = a
                .zip(b)
                .filter(|(p, q)| p.is_finite() && q.is_finite())
                .map(|(p, q)| float(q - p));
            push(
                field,
                a.map_or(Json::Null, float),
                b.map_or(Json::Null, float),
                delta,
            );
        }
    }
}

/// Changes per entity and kind, keyed `{entity}_{kind}` (`task_changed`).
pub fn count(changes: &[Change]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for c in changes {
        let kind = match c.change {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
        };
        *counts.entry(format!("{}_{kind}", c.entity)).or_default() += 1;
    }
    counts
}

fn active_json(a: &Active) -> Json {
    json!({
        "worker": int(&a.worker),
        "time": float(a.time),
        "attempts": int(&a.attempts),
        "clock": a.clock.as_str(),
    })
}

/// Compares two replay states.
pub fn replays(a: &Replay, b: &Replay, filter: &Filter) -> Vec<Change> {
    let mut changes = Vec::new();
    let ids: BTreeSet<&WorkId> = a.active.keys().chain(b.active.keys()).collect();
    for id in ids {
        let hex = Some(id.to_hex());
        match (a.active.get(id), b.active.get(id)) {
            (Some(x), None) => changes.push(Change {
                entity: "active",
                change: ChangeKind::Removed,
                id: hex,
                field: None,
                before: active_json(x),
                after: Json::Null,
                delta: None,
            }),
            (None, Some(y)) => changes.push(Change {
                entity: "active",
                change: ChangeKind::Added,
                id: hex,
                field: None,
                before: Json::Null,
                after: active_json(y),
                delta: None,
            }),
            (Some(x), Some(y)) => {
                let mut field =
                    |name: &'static str, before: Json, after: Json, delta: Option<Json>| {
                        if before != after {
                            changes.push(Change {
                                entity: "active",
                                change: ChangeKind::Changed,
                                id: hex.clone(),
                                field: Some(name),
                                before,
                                after,
                                delta,
                            });
                        }
                    };
                field("owner", int(&x.worker), int(&y.worker), None);
                let time_delta = (x.time != y.time).then(|| float(y.time - x.time));
                field("time", float(x.time), float(y.time), time_delta);
                field(
                    "attempts",
                    int(&x.attempts),
                    int(&y.attempts),
                    int_delta(&x.attempts, &y.attempts),
                );
                field(
                    "clock",
                    json!(x.clock.as_str()),
                    json!(y.clock.as_str()),
                    None,
                );
                if x.payload != y.payload {
                    // The same id with another payload cannot happen (the id
                    // is its hash); kept for completeness.
                    field("payload", json!("…"), json!("(different)"), None);
                }
            }
            (None, None) => {}
        }
    }
    let removed = a.completed.iter().filter(|id| !b.completed.contains(id));
    let added = b.completed.iter().filter(|id| !a.completed.contains(id));
    let mut completed: Vec<(ChangeKind, &WorkId)> = removed
        .map(|id| (ChangeKind::Removed, id))
        .chain(added.map(|id| (ChangeKind::Added, id)))
        .collect();
    completed.sort_by_key(|(_, id)| **id);
    for (change, id) in completed {
        changes.push(Change {
            entity: "completed",
            change,
            id: Some(id.to_hex()),
            field: None,
            before: json!(change == ChangeKind::Removed),
            after: json!(change == ChangeKind::Added),
            delta: None,
        });
    }
    changes.retain(|c| filter.keeps(c));
    changes
}

/// A record in B, with what replay did with it.
#[derive(Clone, Debug, Serialize)]
pub struct RecordAt {
    /// 1-based line in B.
    pub line: u64,
    /// Byte offset in B.
    pub offset: u64,
    /// The op (`lease`, `done`, `reclaim`, other), or `corrupt`/`torn`…
    pub op: String,
    /// The id, for records.
    pub id: Option<String>,
    /// What replay did with it.
    pub effect: String,
}

/// How two journals' bytes relate.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "relation", rename_all = "kebab-case")]
pub enum Bytes {
    /// Byte for byte the same.
    Identical,
    /// B is A followed by more bytes.
    Appended {
        /// Bytes A has (where B's new part starts).
        at_offset: u64,
        /// Lines of B from there, with their effects.
        appended: Vec<RecordAt>,
        /// Whether A ended inside a line (its torn tail and B's first new
        /// bytes are one line).
        glued_onto_a_torn_tail: bool,
    },
    /// A is B followed by more bytes (B was cut back).
    Truncated {
        /// Bytes B has.
        at_offset: u64,
    },
    /// They differ from some byte on.
    Diverged {
        /// The first differing byte offset.
        offset: u64,
        /// The line of A it is on.
        line_a: u64,
        /// The line of B it is on.
        line_b: u64,
        /// What A's lines from there are like.
        tail_a: TailKind,
        /// What B's lines from there are like.
        tail_b: TailKind,
    },
}

/// The state of a file's divergent part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TailKind {
    /// Every line parses (or there is none).
    Clean,
    /// Its last line is torn.
    Torn,
    /// It holds a corrupt line (other than a torn last line).
    Corrupt,
}

/// How B's bytes relate to A's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// The same bytes.
    Identical,
    /// B is A with more bytes after offset `at` (A's length).
    Appended {
        /// Where A ends.
        at: u64,
    },
    /// They differ at offset `at`, or B ends there, before A does.
    Differs {
        /// The first differing offset, or B's length.
        at: u64,
    },
}

/// Compares two byte streams: identical, a prefix, or the first divergence.
pub fn relate(mut a: impl Read, mut b: impl Read) -> io::Result<Relation> {
    let mut buf_a = vec![0u8; 1 << 16];
    let mut buf_b = vec![0u8; 1 << 16];
    let mut offset = 0u64;
    loop {
        let na = read_full(&mut a, &mut buf_a)?;
        let nb = read_full(&mut b, &mut buf_b)?;
        let n = na.min(nb);
        if let Some(i) = (0..n).find(|&i| buf_a[i] != buf_b[i]) {
            return Ok(Relation::Differs {
                at: offset + i as u64,
            });
        }
        offset += n as u64;
        if na < nb {
            return Ok(Relation::Appended { at: offset });
        }
        if na > nb {
            return Ok(Relation::Differs { at: offset });
        }
        if na == 0 {
            return Ok(Relation::Identical);
        }
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The line holding `offset`, and what the lines from there are like.
pub fn line_at(src: impl Read, offset: u64) -> io::Result<(u64, TailKind)> {
    let mut reader = LineReader::new(src);
    let mut line_no = 0;
    let mut kind = TailKind::Clean;
    let mut found = None;
    while let Some(line) = reader.next_line()? {
        let end = line.offset + line.raw.len() as u64;
        if found.is_none() && end > offset {
            found = Some(line.number);
        }
        if found.is_some() {
            let classified = journal::classify(line.content);
            if let LineKind::Corrupt { .. } = classified.kind {
                if line.terminator == journal::Terminator::None {
                    if kind == TailKind::Clean {
                        kind = TailKind::Torn;
                    }
                } else {
                    kind = TailKind::Corrupt;
                }
            }
        }
        line_no = line.number;
    }
    Ok((found.unwrap_or(line_no + 1), kind))
}

/// Collects B's lines from an offset on, with their effects.
pub struct FromOffset {
    /// Where to start.
    pub offset: u64,
    /// What was collected.
    pub records: Vec<RecordAt>,
}

impl Observer for FromOffset {
    fn line(&mut self, event: &LineEvent<'_>) {
        // A line holding any new byte: every line from the offset on, and
        // the line A's torn tail is glued into.
        if event.offset >= self.offset || event.offset + event.content.len() as u64 > self.offset {
            self.records.push(record_at(event));
        }
    }
}

fn record_at(event: &LineEvent<'_>) -> RecordAt {
    let (op, id, effect) = match (&event.classified.kind, event.effect) {
        (LineKind::Record(r), Some(effect)) => (
            r.op.name().to_string(),
            Some(r.id.to_hex()),
            effect.describe(),
        ),
        (
            LineKind::Corrupt {
                glued: Some((_, r)),
                ..
            },
            _,
        ) => (
            r.op.name().to_string(),
            Some(r.id.to_hex()),
            "lost: glued onto a torn fragment, upstream ignores the line".into(),
        ),
        (kind, _) => (
            "ignored".into(),
            None,
            event
                .classified
                .describe_ignored()
                .unwrap_or_else(|| format!("{kind:?}")),
        ),
    };
    RecordAt {
        line: event.number,
        offset: event.offset,
        op,
        id,
        effect,
    }
}

/// Collects B's records of a set of ids (for `--history`).
pub struct RecordsOf {
    /// The ids.
    pub ids: BTreeSet<String>,
    /// Their records, per id, in file order.
    pub records: BTreeMap<String, Vec<RecordAt>>,
}

impl Observer for RecordsOf {
    fn line(&mut self, event: &LineEvent<'_>) {
        let id = match &event.classified.kind {
            LineKind::Record(r) => r.id.to_hex(),
            LineKind::Corrupt {
                glued: Some((_, r)),
                ..
            } => r.id.to_hex(),
            _ => return,
        };
        if self.ids.contains(&id) {
            self.records.entry(id).or_default().push(record_at(event));
        }
    }
}

/// Totals of each side.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Summary {
    /// Snapshots: cumulative statistics.
    Snapshot {
        /// A's totals.
        a: Totals,
        /// B's totals.
        b: Totals,
        /// A's clock domain (its times are monotonic when legacy).
        clock_a: crate::engine::journal::Clock,
        /// B's clock domain.
        clock_b: crate::engine::journal::Clock,
    },
    /// Journals: replay states.
    Journal {
        /// A's state.
        a: StateView,
        /// B's state.
        b: StateView,
    },
}

/// The `diff --format json` document.
#[derive(Clone, Debug, Serialize)]
pub struct DiffReport {
    /// Contract version.
    pub schema_version: u32,
    /// `snapshot` or `journal`.
    pub kind: crate::store::format::Kind,
    /// A's path.
    pub a: String,
    /// B's path.
    pub b: String,
    /// Whether the two are identical (journals: byte for byte; snapshots:
    /// restored views and configuration), regardless of filters.
    pub identical: bool,
    /// The changes (after `--ignore`, `--only`, `--id`).
    pub changes: Vec<Change>,
    /// Changes by entity and kind.
    pub counts: BTreeMap<String, u64>,
    /// Totals of each side.
    pub summary: Summary,
    /// Journals: how the bytes relate.
    pub bytes: Option<Bytes>,
    /// Journals with `--history`: B's records of each changed id.
    pub history: Option<BTreeMap<String, Vec<RecordAt>>>,
    /// Remarks (a side that does not restore, …).
    pub notes: Vec<String>,
}

/// Compares A and B (two journals or two snapshots; `-` is standard input
/// for one of them), read as `kind` when given. Returns the report and the
/// exit status as diff(1) has it: same, or different.
pub fn run(
    (a, b): (&Path, &Path),
    kind: Option<Kind>,
    filter: &Filter,
    with_history: bool,
) -> anyhow::Result<(DiffReport, Exit)> {
    if open::is_stdin(a) && open::is_stdin(b) {
        anyhow::bail!("diff reads standard input for one side only (- given for A and B)");
    }
    let (kind_a, prefix_a, file_a) = open_file(a, kind)?;
    let (kind_b, prefix_b, file_b) = open_file(b, kind)?;
    if kind_a != kind_b {
        anyhow::bail!(
            "cannot compare {} (a {}) with {} (a {}): diff compares two journals or two snapshots",
            a.display(),
            kind_a.name(),
            b.display(),
            kind_b.name()
        );
    }
    let report = match kind_a {
        Kind::Snapshot => {
            let bytes_a = read_all(a, prefix_a, file_a)?;
            let bytes_b = read_all(b, prefix_b, file_b)?;
            let mut notes = Vec::new();
            let (ra, ua) = restored_or_empty(&bytes_a, &mut notes, "A");
            let (rb, ub) = restored_or_empty(&bytes_b, &mut notes, "B");
            let d = snapshots(
                &SnapshotSide {
                    restored: &ra,
                    unix_clock: ua,
                },
                &SnapshotSide {
                    restored: &rb,
                    unix_clock: ub,
                },
                filter,
            );
            DiffReport {
                schema_version: schema::DIFF,
                kind: Kind::Snapshot,
                a: a.display().to_string(),
                b: b.display().to_string(),
                identical: d.identical,
                counts: d.counts,
                changes: d.changes,
                summary: Summary::Snapshot {
                    a: d.totals_a,
                    b: d.totals_b,
                    clock_a: if ua { Clock::Unix } else { Clock::Legacy },
                    clock_b: if ub { Clock::Unix } else { Clock::Legacy },
                },
                bytes: None,
                history: None,
                notes,
            }
        }
        Kind::Journal => diff_journals((a, b), (&file_a, &file_b), filter, with_history)?,
    };
    // With --ignore, --only or --id the answer is about what is compared,
    // as diff -I answers: nothing left to show is "same".
    let filtered = !filter.ignore.is_empty() || filter.only.is_some() || filter.id_prefix.is_some();
    let same = if filtered {
        report.changes.is_empty()
    } else {
        report.identical
    };
    Ok((report, if same { Exit::Success } else { Exit::Problems }))
}

/// Opens one side: a file, never a directory.
fn open_file(path: &Path, kind: Option<Kind>) -> Result<(Kind, Vec<u8>, File), InputError> {
    match resolve::resolve(path, kind, Purpose::Read(&ProcLocks::default()))? {
        Target::File {
            kind, prefix, file, ..
        } => Ok((kind, prefix, file)),
        Target::Directory(_) => Err(InputError::new(
            path,
            "is a directory; diff compares two files (name the journals or snapshots in it)",
        )),
    }
}

/// A snapshot as upstream restores it, or the empty state upstream starts
/// with when it does not restore.
fn restored_or_empty(bytes: &[u8], notes: &mut Vec<String>, side: &str) -> (Restored, bool) {
    let snap = snapshot::read(bytes);
    match snap.restored {
        Some(r) => (r, snap.unix_clock),
        None => {
            notes.push(format!(
                "{side} does not restore (unparseable or not an object): upstream would start empty"
            ));
            let empty = Restored {
                shard_count: PyInt::Small(16),
                worker_count: PyInt::Small(1),
                steal_window: PyInt::Small(64),
                stats: Vec::new(),
                leases: Vec::new(),
            };
            (empty, false)
        }
    }
}

/// The rest of an opened file after the bytes already read.
fn read_all(path: &Path, mut prefix: Vec<u8>, mut file: File) -> Result<Vec<u8>, InputError> {
    file.read_to_end(&mut prefix)
        .map_err(|e| InputError::new(path, format!("read error: {}", in_words(&e))))?;
    Ok(prefix)
}

/// A file read from its start, by position (the sniffing read moved its
/// cursor; standard input is such a file too, see [`open::stdin_file`](crate::store::open::stdin_file)).
struct FromStart<'a> {
    file: &'a File,
    pos: u64,
}

impl Read for FromStart<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = std::os::unix::fs::FileExt::read_at(self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// One side, read again from its start.
fn reopen(file: &File) -> BufReader<FromStart<'_>> {
    BufReader::with_capacity(1 << 20, FromStart { file, pos: 0 })
}

/// Scans one side.
fn scan(
    path: &Path,
    file: &File,
    observer: &mut (dyn journal::Observer + Send),
) -> Result<journal::Scan, InputError> {
    let len = open::size(path, file)?;
    journal::scan(journal::Positional::file(file, len), observer)
        .map_err(|e| InputError::new(path, format!("read error: {}", in_words(&e))))
}

/// A read error of one side.
fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> InputError + '_ {
    move |e| InputError::new(path, format!("read error: {}", in_words(&e)))
}

/// Compares two journals: their replays, then their bytes.
fn diff_journals(
    (a, b): (&Path, &Path),
    (file_a, file_b): (&File, &File),
    filter: &Filter,
    with_history: bool,
) -> Result<DiffReport, InputError> {
    let relation = relate(reopen(file_a), reopen(file_b)).map_err(io_err(b))?;
    let scan_a = scan(a, file_a, &mut ())?;
    // Identical bytes replay identically: B is not read again.
    let (scan_b, bytes) = match relation {
        Relation::Identical => (None, Bytes::Identical),
        Relation::Appended { at } => {
            let mut from = FromOffset {
                offset: at,
                records: Vec::new(),
            };
            let scan_b = scan(b, file_b, &mut from)?;
            let glued = scan_a.summary.tail.state != journal::TailState::Clean
                && scan_a.summary.tail.state != journal::TailState::Empty;
            (
                Some(scan_b),
                Bytes::Appended {
                    at_offset: at,
                    appended: from.records,
                    glued_onto_a_torn_tail: glued,
                },
            )
        }
        Relation::Differs { at } => {
            let scan_b = scan(b, file_b, &mut ())?;
            if at == scan_b.summary.bytes && at < scan_a.summary.bytes {
                (Some(scan_b), Bytes::Truncated { at_offset: at })
            } else {
                let (line_a, tail_a) = line_at(reopen(file_a), at).map_err(io_err(a))?;
                let (line_b, tail_b) = line_at(reopen(file_b), at).map_err(io_err(b))?;
                (
                    Some(scan_b),
                    Bytes::Diverged {
                        offset: at,
                        line_a,
                        line_b,
                        tail_a,
                        tail_b,
                    },
                )
            }
        }
    };
    let replay_b = scan_b.as_ref().map_or(&scan_a.replay, |s| &s.replay);
    let changes = replays(&scan_a.replay, replay_b, filter);
    let history = if with_history {
        let ids: BTreeSet<String> = changes.iter().filter_map(|c| c.id.clone()).collect();
        let mut records = RecordsOf {
            ids,
            records: BTreeMap::new(),
        };
        scan(b, file_b, &mut records)?;
        Some(records.records)
    } else {
        None
    };
    let identical = matches!(bytes, Bytes::Identical);
    let state_a = StateView::of(&scan_a.replay);
    Ok(DiffReport {
        schema_version: schema::DIFF,
        kind: Kind::Journal,
        a: a.display().to_string(),
        b: b.display().to_string(),
        identical,
        counts: count(&changes),
        changes,
        summary: Summary::Journal {
            b: scan_b
                .as_ref()
                .map_or_else(|| state_a.clone(), |s| StateView::of(&s.replay)),
            a: state_a,
        },
        bytes: Some(bytes),
        history,
        notes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relate_finds_prefixes_and_divergence() {
        assert_eq!(
            relate(&b"abc"[..], &b"abc"[..]).unwrap(),
            Relation::Identical
        );
        assert_eq!(
            relate(&b"abc"[..], &b"abcdef"[..]).unwrap(),
            Relation::Appended { at: 3 }
        );
        assert_eq!(
            relate(&b"abcdef"[..], &b"abc"[..]).unwrap(),
            Relation::Differs { at: 3 }
        );
        assert_eq!(
            relate(&b"abXdef"[..], &b"abcdef"[..]).unwrap(),
            Relation::Differs { at: 2 }
        );
    }

    #[test]
    fn filter_by_kind_field_and_id() {
        let c = Change {
            entity: "task",
            change: ChangeKind::Changed,
            id: Some("abcd".into()),
            field: Some("elapsed"),
            before: json!(1.0),
            after: json!(2.0),
            delta: Some(json!(1.0)),
        };
        assert!(Filter::default().keeps(&c));
        let ignore = Filter {
            ignore: BTreeSet::from(["elapsed".to_string()]),
            ..Filter::default()
        };
        assert!(!ignore.keeps(&c));
        let only = Filter {
            only: Some(ChangeKind::Added),
            ..Filter::default()
        };
        assert!(!only.keeps(&c));
        let id = Filter {
            id_prefix: Some("ab".into()),
            ..Filter::default()
        };
        assert!(id.keeps(&c));
    }
}
