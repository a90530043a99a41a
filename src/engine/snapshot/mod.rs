//! The state-shard coordinator's snapshot, `.state_tasks.json`: read with
//! plain `json.load` semantics and put through upstream's
//! `StateShardCoordinator.restore()` rules, yielding the mapping its
//! `to_mapping()` writes next, plus an account of everything restore
//! changes or drops on the way.
//!
//! Restore rules reproduced (upstream-format.md §8.3): only the last 65536
//! `stats` and `leases` entries are read; an entry needs an object with a
//! lowercase-hex64 `task_id` (after `str()`); values go through `int()` /
//! `float()` and are clamped (`shard`, counters ≥ 0, `owner` ≥ 1, `reward`,
//! `elapsed` ≥ 0.0); a conversion error drops the entry; `last_lease` and
//! `last_complete` are kept only under `"clock":"unix"` (and not even
//! converted otherwise); a later duplicate overwrites an earlier one in the
//! earlier one's position; every restored lease gets time 0.0 and a worker
//! of at least 1. `max(0.0, NaN)` is 0.0 and infinities survive, as in
//! Python.
//!
//! `sniff`: the snapshot's file name and what its first line looks like
//! ([`owns_name`], [`owns_start`]).

mod sniff;

use serde::Serialize;

use crate::engine::json::{
    self, CoerceError, Mode, NonFinite, Object, PyInt, PyString, Value, py_float, py_int,
    py_str_is_work_id,
};

pub use sniff::{NAMES, STATE_TASKS, owns_name, owns_start};

/// Upstream's window on `stats` and `leases`.
pub const RESTORE_WINDOW: usize = 65536;

/// `StateShardCoordinator.__init__` defaults, used when the file lacks a
/// configuration key.
const DEFAULT_SHARD_COUNT: i64 = 16;
const DEFAULT_WORKER_COUNT: i64 = 1;
const DEFAULT_STEAL_WINDOW: i64 = 64;

/// One restored `stats` entry (`vars(StateTaskStats)`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskStats {
    /// 64 lowercase hex.
    pub task_id: String,
    /// `max(0, int(shard))`
    pub shard: PyInt,
    /// `max(1, int(owner))`
    pub owner: PyInt,
    /// `max(0, int(leases))`
    pub leases: PyInt,
    /// `max(0, int(completions))`
    pub completions: PyInt,
    /// `max(0, int(failures))`
    pub failures: PyInt,
    /// `max(0, int(total_generated))`
    pub total_generated: PyInt,
    /// `max(0.0, float(reward))`
    pub reward: f64,
    /// `max(0.0, float(elapsed))`
    pub elapsed: f64,
    /// Kept only under the unix clock, else 0.0.
    pub last_lease: f64,
    /// Kept only under the unix clock, else 0.0.
    pub last_complete: f64,
    /// `last_lease` and `last_complete` as the file holds them (converted
    /// like unix times; `None` where they do not convert), before restore
    /// zeroes legacy ones: what `diff` compares.
    #[serde(skip)]
    pub written_times: (Option<f64>, Option<f64>),
}

/// One restored state lease: always stale (time 0.0).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskLease {
    /// 64 lowercase hex.
    pub task_id: String,
    /// `max(1, int(worker))`
    pub worker: PyInt,
    /// `updated` as the file holds it (restore always makes it 0.0).
    #[serde(skip)]
    pub updated: Option<f64>,
}

/// Sums of the cumulative statistics over the restored stats entries.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Sum of `completions`.
    pub completions: PyInt,
    /// Sum of `failures`.
    pub failures: PyInt,
    /// Sum of `total_generated`.
    pub total_generated: PyInt,
    /// Sum of `leases`.
    pub leases: PyInt,
    /// Sum of `elapsed` seconds.
    pub elapsed: f64,
}

/// The coordinator state restore reaches.
#[derive(Clone, Debug, PartialEq)]
pub struct Restored {
    /// `shard_count` from the file (`max(1, int(·))`).
    pub shard_count: PyInt,
    /// `worker_count` from the file.
    pub worker_count: PyInt,
    /// `steal_window` from the file.
    pub steal_window: PyInt,
    /// Stats in dict order.
    pub stats: Vec<TaskStats>,
    /// Leases in dict order.
    pub leases: Vec<TaskLease>,
}

impl Restored {
    /// Sums over the stats entries.
    pub fn totals(&self) -> Totals {
        let sum = |f: fn(&TaskStats) -> &PyInt| {
            self.stats
                .iter()
                .fold(PyInt::Small(0), |a, t| a + f(t).clone())
        };
        Totals {
            completions: sum(|t| &t.completions),
            failures: sum(|t| &t.failures),
            total_generated: sum(|t| &t.total_generated),
            leases: sum(|t| &t.leases),
            elapsed: self.stats.iter().map(|t| t.elapsed).sum(),
        }
    }

    /// The mapping upstream's `to_mapping()` returns.
    pub fn to_value(&self) -> Value {
        let s = |k: &str| PyString::from(k);
        let stats = self
            .stats
            .iter()
            .map(|t| {
                Value::Object(Object::from_members(vec![
                    (s("task_id"), Value::Str(t.task_id.as_str().into())),
                    (s("shard"), Value::Int(t.shard.clone())),
                    (s("owner"), Value::Int(t.owner.clone())),
                    (s("leases"), Value::Int(t.leases.clone())),
                    (s("completions"), Value::Int(t.completions.clone())),
                    (s("failures"), Value::Int(t.failures.clone())),
                    (s("total_generated"), Value::Int(t.total_generated.clone())),
                    (s("reward"), Value::Float(t.reward)),
                    (s("elapsed"), Value::Float(t.elapsed)),
                    (s("last_lease"), Value::Float(t.last_lease)),
                    (s("last_complete"), Value::Float(t.last_complete)),
                ]))
            })
            .collect();
        let leases = self
            .leases
            .iter()
            .map(|l| {
                Value::Object(Object::from_members(vec![
                    (s("task_id"), Value::Str(l.task_id.as_str().into())),
                    (s("worker"), Value::Int(l.worker.clone())),
                    (s("updated"), Value::Float(0.0)),
                ]))
            })
            .collect();
        Value::Object(Object::from_members(vec![
            (s("shard_count"), Value::Int(self.shard_count.clone())),
            (s("worker_count"), Value::Int(self.worker_count.clone())),
            (s("steal_window"), Value::Int(self.steal_window.clone())),
            (s("clock"), Value::Str("unix".into())),
            (s("stats"), Value::Array(stats)),
            (s("leases"), Value::Array(leases)),
        ]))
    }

    /// The exact bytes upstream writes for this state: sorted keys, `","`
    /// and `":"`, no trailing newline, `NaN`/`Infinity` as Python writes them.
    pub fn to_upstream_bytes(&self) -> Vec<u8> {
        // NonFinite::Python never refuses.
        json::to_canonical(&self.to_value(), NonFinite::Python).unwrap_or_default()
    }

    /// The same mapping as valid JSON (non-finite numbers as strings), for
    /// reports.
    pub fn to_report_json(&self) -> String {
        let bytes = json::to_canonical(&self.to_value(), NonFinite::AsStrings).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Which list an entry came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum List {
    /// `stats`
    Stats,
    /// `leases`
    Leases,
}

impl List {
    /// The snapshot member's name, as the file spells it.
    pub fn name(self) -> &'static str {
        match self {
            List::Stats => "stats",
            List::Leases => "leases",
        }
    }
}

/// An entry restore drops.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Dropped {
    /// The list.
    pub list: List,
    /// 0-based index in the file's list.
    pub index: usize,
    /// The entry's task id, when it has a valid one.
    pub task_id: Option<String>,
    /// Why.
    pub reason: String,
}

/// A time restore sets to 0.0.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Zeroed {
    /// The task.
    pub task_id: String,
    /// `last_lease`, `last_complete` or (for a lease) `updated`.
    pub field: &'static str,
    /// The value in the file, as written (JSON text).
    pub before: String,
}

/// A value restore converts or clamps to something else.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Coerced {
    /// The list.
    pub list: List,
    /// The task.
    pub task_id: String,
    /// The field.
    pub field: &'static str,
    /// The value in the file (JSON text, or `missing`).
    pub before: String,
    /// The restored value.
    pub after: String,
}

/// Everything restore does besides copying.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RestoreChanges {
    /// Entries in the file's `stats` list (0 if absent or not a list).
    pub stats_in_file: usize,
    /// Entries in the file's `leases` list.
    pub leases_in_file: usize,
    /// Entries before the last 65536, never read.
    pub stats_truncated: usize,
    /// Likewise for leases.
    pub leases_truncated: usize,
    /// `stats` or `leases` present but not a list: ignored whole.
    pub ignored_members: Vec<String>,
    /// Entries dropped.
    pub dropped: Vec<Dropped>,
    /// Entries that overwrote an earlier entry of the same task.
    pub overwritten: Vec<Dropped>,
    /// Times set to 0.0 (legacy clock, and every lease time).
    pub zeroed: Vec<Zeroed>,
    /// Values converted or clamped.
    pub coerced: Vec<Coerced>,
    /// Restored leases whose task has no restored stats entry.
    pub leases_without_stats: Vec<String>,
}

/// A snapshot as read.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// `Ok` with parse statistics, or why `json.load` fails (upstream then
    /// starts empty and every statistic is lost).
    pub parse: Result<json::ParseStats, json::ParseError>,
    /// Invalid UTF-8 bytes deleted before parsing.
    pub invalid_utf8: usize,
    /// Whether the top level is an object (restore ignores anything else).
    pub is_object: bool,
    /// `"clock":"unix"` present: times are Unix seconds.
    pub unix_clock: bool,
    /// The restored state (`None` when upstream would start empty).
    pub restored: Option<Restored>,
    /// What restore changes.
    pub changes: RestoreChanges,
}

/// Reads snapshot bytes the way upstream's resume does.
///
/// The master opens `.state_tasks.json` with `encoding="utf-8"` and no
/// `errors=`: a single invalid byte raises `UnicodeDecodeError` (a
/// `ValueError`), restore is skipped and the coordinator starts empty. So
/// such a file does not parse here either (the journals, read with
/// `errors="ignore"`, are another matter).
pub fn read(bytes: &[u8]) -> Snapshot {
    let (_, invalid_utf8) = json::strip_invalid_utf8(bytes);
    let parsed = std::str::from_utf8(bytes)
        .map_err(|e| json::ParseError {
            kind: json::ParseErrorKind::Syntax(
                "invalid UTF-8 (upstream decodes the snapshot strictly and starts empty)",
            ),
            offset: e.valid_up_to(),
        })
        .and_then(|text| json::parse(text, Mode::Snapshot));
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => {
            return Snapshot {
                parse: Err(e),
                invalid_utf8,
                is_object: false,
                unix_clock: false,
                restored: None,
                changes: RestoreChanges::default(),
            };
        }
    };
    let Value::Object(raw) = &parsed.value else {
        return Snapshot {
            parse: Ok(parsed.stats),
            invalid_utf8,
            is_object: false,
            unix_clock: false,
            restored: None,
            changes: RestoreChanges::default(),
        };
    };
    let unix_clock = matches!(raw.get("clock"), Some(Value::Str(s)) if s == "unix");
    let mut changes = RestoreChanges::default();
    let restored = restore(raw, unix_clock, &mut changes);
    Snapshot {
        parse: Ok(parsed.stats),
        invalid_utf8,
        is_object: true,
        unix_clock,
        restored: Some(restored),
        changes,
    }
}

fn text_of(value: Option<&Value>) -> String {
    match value {
        None => "missing".to_string(),
        Some(v) => {
            String::from_utf8_lossy(&json::to_canonical(v, NonFinite::Python).unwrap_or_default())
                .into_owned()
        }
    }
}

fn config(raw: &Object, key: &str, default: i64) -> PyInt {
    raw.get(key)
        .map_or(Ok(PyInt::Small(default)), py_int)
        .map(|v| v.max_with(1))
        .unwrap_or(PyInt::Small(default))
}

/// The entries restore reads: the last 65536 of a list member.
fn window<'a>(raw: &'a Object, key: &str, changes: &mut RestoreChanges) -> (&'a [Value], usize) {
    match raw.get(key) {
        Some(Value::Array(items)) => {
            let skip = items.len().saturating_sub(RESTORE_WINDOW);
            (&items[skip..], skip)
        }
        Some(_) => {
            changes.ignored_members.push(key.to_string());
            (&[], 0)
        }
        None => (&[], 0),
    }
}

/// Inserts with `dict` semantics: a repeated key keeps its first position.
fn upsert<T>(list: &mut Vec<T>, item: T, key: impl Fn(&T) -> &str) -> bool {
    match list.iter().position(|x| key(x) == key(&item)) {
        Some(at) => {
            list[at] = item;
            true
        }
        None => {
            list.push(item);
            false
        }
    }
}

fn restore(raw: &Object, unix_clock: bool, changes: &mut RestoreChanges) -> Restored {
    let (stats_items, stats_skip) = window(raw, "stats", changes);
    let (lease_items, lease_skip) = window(raw, "leases", changes);
    changes.stats_in_file = stats_items.len() + stats_skip;
    changes.leases_in_file = lease_items.len() + lease_skip;
    changes.stats_truncated = stats_skip;
    changes.leases_truncated = lease_skip;

    let mut stats: Vec<TaskStats> = Vec::new();
    let mut index_of: std::collections::HashMap<String, usize> = Default::default();
    for (i, item) in stats_items.iter().enumerate() {
        let index = stats_skip + i;
        let Some((obj, task_id)) = entry(List::Stats, index, item, changes) else {
            continue;
        };
        match restore_stats(obj, &task_id, unix_clock, changes) {
            Ok(entry) => match index_of.get(&task_id) {
                Some(&at) => {
                    stats[at] = entry;
                    changes.overwritten.push(Dropped {
                        list: List::Stats,
                        index,
                        task_id: Some(task_id),
                        reason: "a later entry for the same task replaces an earlier one".into(),
                    });
                }
                None => {
                    index_of.insert(task_id, stats.len());
                    stats.push(entry);
                }
            },
            Err(reason) => changes.dropped.push(Dropped {
                list: List::Stats,
                index,
                task_id: Some(task_id),
                reason,
            }),
        }
    }

    let mut leases: Vec<TaskLease> = Vec::new();
    for (i, item) in lease_items.iter().enumerate() {
        let index = lease_skip + i;
        let Some((obj, task_id)) = entry(List::Leases, index, item, changes) else {
            continue;
        };
        let raw_worker = obj.get("worker");
        let worker = raw_worker.map_or(Ok(PyInt::Small(1)), py_int);
        match worker {
            Ok(w) => {
                let worker = w.clone().max_with(1);
                if raw_worker.is_some_and(|r| *r != Value::Int(worker.clone())) {
                    changes.coerced.push(Coerced {
                        list: List::Leases,
                        task_id: task_id.clone(),
                        field: "worker",
                        before: text_of(raw_worker),
                        after: worker.to_string(),
                    });
                }
                let updated = obj.get("updated");
                if updated.is_some_and(|u| !py_float(u).is_ok_and(|f| f == 0.0)) {
                    changes.zeroed.push(Zeroed {
                        task_id: task_id.clone(),
                        field: "updated",
                        before: text_of(updated),
                    });
                }
                let overwrote = upsert(
                    &mut leases,
                    TaskLease {
                        task_id: task_id.clone(),
                        worker,
                        updated: written_time(updated),
                    },
                    |l| &l.task_id,
                );
                if overwrote {
                    changes.overwritten.push(Dropped {
                        list: List::Leases,
                        index,
                        task_id: Some(task_id),
                        reason: "a later entry for the same task replaces an earlier one".into(),
                    });
                }
            }
            Err(e) => changes.dropped.push(Dropped {
                list: List::Leases,
                index,
                task_id: Some(task_id),
                reason: format!("worker {}: {e}", text_of(raw_worker)),
            }),
        }
    }
    changes.leases_without_stats = leases
        .iter()
        .filter(|l| !index_of.contains_key(&l.task_id))
        .map(|l| l.task_id.clone())
        .collect();

    Restored {
        shard_count: config(raw, "shard_count", DEFAULT_SHARD_COUNT),
        worker_count: config(raw, "worker_count", DEFAULT_WORKER_COUNT),
        steal_window: config(raw, "steal_window", DEFAULT_STEAL_WINDOW),
        stats,
        leases,
    }
}

/// The object and its task id, or the reason restore skips the entry.
fn entry<'a>(
    list: List,
    index: usize,
    item: &'a Value,
    changes: &mut RestoreChanges,
) -> Option<(&'a Object, String)> {
    let Value::Object(obj) = item else {
        changes.dropped.push(Dropped {
            list,
            index,
            task_id: None,
            reason: format!("not an object but {}", item.type_name()),
        });
        return None;
    };
    let raw_id = obj.get("task_id");
    match raw_id.and_then(py_str_is_work_id) {
        Some(bytes) => Some((obj, bytes.iter().map(|b| format!("{b:02x}")).collect())),
        None => {
            changes.dropped.push(Dropped {
                list,
                index,
                task_id: None,
                reason: format!("task_id {} is not 64 lowercase hex", text_of(raw_id)),
            });
            None
        }
    }
}

/// A time as the file holds it, converted as restore converts unix times
/// (`max(0.0, float(·))`); a missing one is 0.0.
fn written_time(raw: Option<&Value>) -> Option<f64> {
    match raw {
        None => Some(0.0),
        Some(v) => py_float(v).ok().map(|f| if f > 0.0 { f } else { 0.0 }),
    }
}

fn restore_stats(
    obj: &Object,
    task_id: &str,
    unix_clock: bool,
    changes: &mut RestoreChanges,
) -> Result<TaskStats, String> {
    let mut coerced = Vec::new();
    let mut int = |field: &'static str, default: i64, floor: i64| -> Result<PyInt, String> {
        let raw = obj.get(field);
        let value = raw
            .map_or(Ok(PyInt::Small(default)), py_int)
            .map_err(|e: CoerceError| format!("{field} {}: {e}", text_of(raw)))?
            .max_with(floor);
        if raw.is_some_and(|r| *r != Value::Int(value.clone())) {
            coerced.push((field, text_of(raw), value.to_string()));
        }
        Ok(value)
    };
    let shard = int("shard", 0, 0)?;
    let owner = int("owner", 1, 1)?;
    let leases = int("leases", 0, 0)?;
    let completions = int("completions", 0, 0)?;
    let failures = int("failures", 0, 0)?;
    let total_generated = int("total_generated", 0, 0)?;
    let mut float = |field: &'static str| -> Result<f64, String> {
        let raw = obj.get(field);
        let f = raw
            .map_or(Ok(0.0), py_float)
            .map_err(|e| format!("{field} {}: {e}", text_of(raw)))?;
        // Python's max(0.0, f): NaN and -0.0 compare not greater, so 0.0.
        let value = if f > 0.0 { f } else { 0.0 };
        if raw.is_some_and(|r| !matches!(r, Value::Float(x) if x.to_bits() == value.to_bits())) {
            coerced.push((field, text_of(raw), json::float_repr_any(value)));
        }
        Ok(value)
    };
    let reward = float("reward")?;
    let elapsed = float("elapsed")?;
    let (last_lease, last_complete) = if unix_clock {
        (float("last_lease")?, float("last_complete")?)
    } else {
        for field in ["last_lease", "last_complete"] {
            let raw = obj.get(field);
            if raw.is_some_and(|r| !py_float(r).is_ok_and(|f| f == 0.0)) {
                changes.zeroed.push(Zeroed {
                    task_id: task_id.to_string(),
                    field,
                    before: text_of(raw),
                });
            }
        }
        (0.0, 0.0)
    };
    changes
        .coerced
        .extend(coerced.into_iter().map(|(field, before, after)| Coerced {
            list: List::Stats,
            task_id: task_id.to_string(),
            field,
            before,
            after,
        }));
    Ok(TaskStats {
        written_times: (
            written_time(obj.get("last_lease")),
            written_time(obj.get("last_complete")),
        ),
        task_id: task_id.to_string(),
        shard,
        owner,
        leases,
        completions,
        failures,
        total_generated,
        reward,
        elapsed,
        last_lease,
        last_complete,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const T1: &str = "8f9a53ee9e2cc2c09d88ff5a2039a1d05bcc57c494d39221b2a833166584a7dd";
    const T2: &str = "b3d9596d1adfd1e44bb18655c77f8a3561453e3e3d1c8a4c59c0d01eda1c4d95";

    fn restored(text: &str) -> (Restored, RestoreChanges) {
        let snap = read(text.as_bytes());
        (snap.restored.unwrap(), snap.changes)
    }

    #[test]
    fn an_invalid_utf8_byte_anywhere_makes_upstream_start_empty() {
        let good = format!(
            "{{\"clock\":\"unix\",\"leases\":[],\"shard_count\":1,\"stats\":[{{\"task_id\":\"{T1}\"}}],\"steal_window\":64,\"worker_count\":1}}"
        );
        assert!(read(good.as_bytes()).restored.is_some());
        // 0xC1 inside a key: strict decoding fails before json.load.
        let bad = good.replacen("\"shard_count\"", "\"shard_c\u{1}ount\"", 1);
        let bad: Vec<u8> = bad.bytes().map(|b| if b == 1 { 0xc1 } else { b }).collect();
        let snap = read(&bad);
        assert!(snap.restored.is_none());
        assert_eq!(snap.invalid_utf8, 1);
        let err = snap.parse.unwrap_err();
        assert_eq!(err.offset, good.find("shard_count").unwrap() + 7);
        assert!(err.to_string().starts_with("invalid UTF-8"), "{err}");
    }

    #[test]
    fn legacy_times_are_zeroed_without_conversion() {
        let (r, c) = restored(&format!(
            r#"{{"stats":[{{"task_id":"{T1}","last_lease":"junk","last_complete":5.0}}]}}"#
        ));
        assert_eq!(
            r.stats.len(),
            1,
            "a bad legacy time does not drop the entry"
        );
        assert_eq!(r.stats[0].last_complete, 0.0);
        assert_eq!(c.zeroed.len(), 2);
    }

    #[test]
    fn unix_conversion_errors_drop_the_entry() {
        let (r, c) = restored(&format!(
            r#"{{"clock":"unix","stats":[{{"task_id":"{T1}","leases":null}},{{"task_id":"{T2}","reward":NaN,"shard":"-3"}}]}}"#
        ));
        assert_eq!(r.stats.len(), 1);
        assert_eq!(c.dropped.len(), 1);
        assert_eq!(r.stats[0].reward, 0.0, "max(0.0, nan) is 0.0");
        assert_eq!(r.stats[0].shard, PyInt::Small(0));
    }

    #[test]
    fn duplicates_keep_first_position_last_value() {
        let (r, c) = restored(&format!(
            r#"{{"clock":"unix","stats":[{{"task_id":"{T1}","leases":1}},{{"task_id":"{T2}"}},{{"task_id":"{T1}","leases":7}}]}}"#
        ));
        assert_eq!(r.stats[0].task_id, T1);
        assert_eq!(r.stats[0].leases, PyInt::Small(7));
        assert_eq!(c.overwritten.len(), 1);
    }

    #[test]
    fn leases_restart_stale_with_a_worker_of_at_least_one() {
        let (r, c) = restored(&format!(
            r#"{{"clock":"unix","leases":[{{"task_id":"{T2}","updated":17.5,"worker":0}},{{"task_id":"{T1}","worker":null}}]}}"#
        ));
        assert_eq!(
            r.leases,
            vec![TaskLease {
                task_id: T2.into(),
                worker: PyInt::Small(1),
                updated: Some(17.5),
            }]
        );
        assert_eq!(c.dropped.len(), 1);
        assert_eq!(c.zeroed.len(), 1);
        assert_eq!(c.leases_without_stats, vec![T2.to_string()]);
        let bytes = String::from_utf8(r.to_upstream_bytes()).unwrap();
        assert!(bytes.starts_with(r#"{"clock":"unix","leases":[{"task_id":""#));
        assert!(bytes.ends_with(r#""updated":0.0,"worker":1}],"shard_count":16,"stats":[],"steal_window":64,"worker_count":1}"#));
    }

    #[test]
    fn unreadable_snapshots_restore_nothing() {
        assert!(read(b"{not json").restored.is_none());
        assert!(read(b"[1]").restored.is_none());
        assert!(
            read(b"{\"clock\":\"unix\",\"a\":1,\"a\":2}")
                .restored
                .is_some()
        );
    }
}
