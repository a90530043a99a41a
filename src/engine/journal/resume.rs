//! Upstream's rebuild of a work item from a lease payload, what resume
//! requeues for every lease it reclaims (`_work_item_from_lease_payload`):
//! the path and focus as `str()` makes them, the target branch, the
//! `s2f_actions` and the `schedule_prefix` normalised and bounded as
//! upstream normalises them, and the continuation. Values in, data out.
//! `_recoverable_work_item_from_lease_payload` then keeps the item only if
//! its seed is a file or it has a continuation; that asks the file system,
//! so the caller answers it.
//!
//! [`forecast`] says what the master's resume does with a journal: every
//! active lease reclaimed in `recover_expired` order, each rebuilt and
//! requeued, kept or dropped; [`mark_duplicates`] finds the items queued
//! twice across the journals resume reads.

use std::collections::HashMap;

use serde::Serialize;

use super::{Active, Reclaim, Replay, Tail, TailState, WorkId, reclaims};

use crate::engine::json::{self, Value, py_int, py_str, py_strip, truthy};

/// The largest branch id upstream keeps (`_MAX_BRANCH_ID`).
const MAX_BRANCH_ID: u64 = u64::MAX;
/// At most this many `s2f_actions` survive a rebuild.
const MAX_ACTIONS: usize = 64;
/// At most this many `schedule_prefix` entries survive a rebuild.
const MAX_PREFIX: usize = 256;

/// A work item as resume rebuilds it from a lease payload
/// (`_work_item_from_lease_payload`): `(path, focus, target_branch)`, plus
/// `(s2f_actions, schedule_prefix)` when either is non-empty, plus the
/// continuation when the payload carries one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct WorkItem {
    /// `str(path)`: the seed, relative to the master's working directory
    /// when it is not absolute.
    pub path: String,
    /// `str(focus_bytes) or None`.
    pub focus: Option<String>,
    /// The target branch, 0 when absent or out of range.
    pub target_branch: u64,
    /// `(branch, action)` pairs kept: branch in range, action `solve`,
    /// `sample` or `skip`, each branch once, at most 64.
    pub s2f_actions: Vec<(u64, String)>,
    /// Non-negative thread ids kept, at most 256.
    pub schedule_prefix: Vec<u64>,
    /// The payload's `continuation` object, canonical, when there is one.
    /// Upstream admits it only if it is a valid
    /// `symcc-live-continuation-v1` descriptor, which this tool does not
    /// check.
    pub continuation: Option<String>,
    /// How many fields the rebuilt tuple has (3, 5 or 6).
    pub fields: u8,
}

/// `_work_item_from_lease_payload`: `None` when the path is empty.
pub fn rebuild(payload: &json::Object) -> Option<WorkItem> {
    let text = |key: &str| payload.get(key).filter(|v| truthy(v)).map(py_str);
    let path = text("path")?;
    let focus = text("focus_bytes");
    let target_branch = branch_id(payload.get("target_branch"));
    let s2f_actions = actions(payload.get("s2f_actions"));
    let schedule_prefix = schedule_prefix(payload.get("schedule_prefix"));
    let continuation = match payload.get("continuation") {
        Some(v @ Value::Object(_)) => Some(
            String::from_utf8_lossy(
                &json::to_canonical(v, json::NonFinite::Python).unwrap_or_default(),
            )
            .into_owned(),
        ),
        _ => None,
    };
    let fields = if continuation.is_some() {
        6
    } else if !s2f_actions.is_empty() || !schedule_prefix.is_empty() {
        5
    } else {
        3
    };
    Some(WorkItem {
        path,
        focus,
        target_branch,
        s2f_actions,
        schedule_prefix,
        continuation,
        fields,
    })
}

/// `_normalize_branch_id`: `int(value or 0)`, kept only in 1..=2^64-1;
/// a boolean or anything `int()` refuses is 0.
fn branch_id(value: Option<&Value>) -> u64 {
    match value {
        None | Some(Value::Bool(_)) => 0,
        Some(v) if !truthy(v) => 0,
        Some(v) => py_int(v)
            .ok()
            .and_then(|i| i.to_u64())
            .filter(|b| (1..=MAX_BRANCH_ID).contains(b))
            .unwrap_or(0),
    }
}

/// `_normalize_s2f_actions`.
fn actions(value: Option<&Value>) -> Vec<(u64, String)> {
    let Some(Value::Array(rows)) = value else {
        return Vec::new();
    };
    let mut kept: Vec<(u64, String)> = Vec::new();
    for row in rows {
        let Value::Array(pair) = row else { continue };
        if pair.len() < 2 {
            continue;
        }
        let branch = branch_id(Some(&pair[0]));
        let action = py_strip(&py_str(&pair[1])).to_lowercase();
        if branch == 0 || !matches!(action.as_str(), "solve" | "sample" | "skip") {
            continue;
        }
        if kept.iter().any(|(b, _)| *b == branch) {
            continue;
        }
        kept.push((branch, action));
    }
    kept.truncate(MAX_ACTIONS);
    kept
}

/// `normalize_schedule_prefix`: a string is split on commas, semicolons
/// and white space; a list (or an object's keys) is taken item by item;
/// each `int()`-able, non-negative item is kept, at most 256.
fn schedule_prefix(value: Option<&Value>) -> Vec<u64> {
    let tokens: Vec<Value> = match value {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Str(s)) => s
            .to_string_lossy()
            .replace([',', ';'], " ")
            .split_whitespace()
            .map(|t| Value::Str(t.into()))
            .collect(),
        Some(Value::Array(items)) => items.clone(),
        Some(Value::Object(o)) => o
            .members()
            .iter()
            .map(|(k, _)| Value::Str(k.clone()))
            .collect(),
        Some(_) => return Vec::new(),
    };
    let mut kept = Vec::new();
    for token in &tokens {
        // int() of a float string fails; int() of a float truncates.
        let Ok(tid) = py_int(token) else { continue };
        if tid.is_negative() {
            continue;
        }
        // Thread ids beyond u64 do not occur; such an item is left out.
        let Some(tid) = tid.to_u64() else { continue };
        kept.push(tid);
        if kept.len() >= MAX_PREFIX {
            break;
        }
    }
    kept
}

/// What resume does with a reclaimed lease's work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum ResumeOutcome {
    /// Requeued: its seed is a file on this host.
    Requeued,
    /// The seed is missing here, so the work comes back only through its
    /// continuation, which the master validates.
    RequeuedIfContinuationValid,
    /// Reclaimed and not requeued: the work is lost.
    Dropped {
        /// Why.
        reason: String,
    },
}

/// One lease resume reclaims, and what becomes of its work.
#[derive(Clone, Debug, Serialize)]
pub struct Requeue {
    /// The lease, as the reclaim lists it.
    #[serde(flatten)]
    pub lease: Reclaim,
    /// What resume does with it.
    #[serde(flatten)]
    pub outcome: ResumeOutcome,
    /// The rebuilt work item (absent when dropped for an empty path).
    pub item: Option<WorkItem>,
    /// Payload members that carry a value resume never restores (the work
    /// runs again without them).
    pub not_restored: Vec<String>,
    /// When an earlier reclaimed lease (this journal's or the deferred
    /// one's) rebuilds to the same item: its file and id. Resume does not
    /// de-duplicate, so the work is queued twice.
    pub duplicate_of: Option<(String, WorkId)>,
    /// The content digest the master recorded in the ledger when it sent
    /// this input: the payload's `sha256`, when it is 64 lowercase hex
    /// digits and the payload has no continuation (a continuation's
    /// `sha256` is its checkpoint id, which the ledger never holds).
    pub digest: Option<String>,
    /// Whether the next start's AFL rescan dispatches the input again;
    /// filled in by the caller that read the digest ledger (`null` where
    /// there is none).
    pub rescan: Option<Rescan>,
}

/// Whether the AFL queue rescan of the next master start dispatches an
/// input again: it skips every queue entry whose content digest the
/// ledger loaded (`best_new_testcases(analyzed_hashes=…)`), and nothing
/// else remembers what was dispatched before the restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Rescan {
    /// `true`: it dispatches the input again, if the input is in the AFL
    /// queue; `false`: it skips it; `null`: it cannot be told.
    pub sees_again: Option<bool>,
    /// Why.
    pub why: RescanWhy,
}

/// Why the rescan sees an input again or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RescanWhy {
    /// Its digest is loaded: the rescan skips it.
    Loaded,
    /// Loaded, but the ledger holds more than `MAX_DEDUP_ENTRIES` digests
    /// and upstream drops arbitrary ones: it may be among them.
    MayBeDropped,
    /// Its digest is only in files the shard count never reads.
    Unread,
    /// Its digest is in no ledger file.
    NotInLedger,
    /// The next master reads no ledger (`SYMCC_PERSISTENT_STATE` off): the
    /// rescan skips nothing.
    LedgerOff,
    /// A continuation: the master records no digest for it.
    Continuation,
    /// The payload has no digest and its seed is not a file here.
    NoDigest,
}

impl Rescan {
    /// The rescan's answer for this reason.
    pub fn because(why: RescanWhy) -> Rescan {
        let sees_again = match why {
            RescanWhy::Loaded => Some(false),
            RescanWhy::Unread | RescanWhy::NotInLedger | RescanWhy::LedgerOff => Some(true),
            RescanWhy::MayBeDropped | RescanWhy::Continuation | RescanWhy::NoDigest => None,
        };
        Rescan { sees_again, why }
    }
}

/// The first record resume appends to a journal.
#[derive(Clone, Debug, Serialize)]
pub struct FirstAppend {
    /// `reclaim` (of the first lease in order), or `lease` (the first
    /// dispatch, when no lease is active).
    pub record: &'static str,
    /// The reclaimed id, for a reclaim.
    pub id: Option<WorkId>,
    /// Whether it is concatenated onto an unterminated last line (upstream
    /// appends without checking), so that both are lost on the next load.
    pub glues: bool,
}

/// The forecast of resume for one journal.
#[derive(Clone, Debug, Serialize)]
pub struct Forecast {
    /// How the file ends now.
    pub tail: Tail,
    /// The leases resume reclaims, in the order it appends their records,
    /// with what becomes of each one's work.
    pub reclaims: Vec<Requeue>,
    /// Of those, requeued (with a seed file here).
    pub requeued: usize,
    /// Of those, requeued only through a continuation.
    pub requeued_if_continuation_valid: usize,
    /// Of those, dropped.
    pub dropped: usize,
    /// Of those, queued a second time.
    pub duplicates: usize,
    /// The first record resume appends.
    pub first_append: FirstAppend,
    /// Records hidden in lines upstream ignores (glued, behind a byte order
    /// mark, before a zero fill): resume does not see them, so it cannot
    /// requeue their work; `repair` brings them back. Filled in by the
    /// caller that observed the scan.
    pub hidden_records: usize,
}

/// Forecasts resume's recovery of a journal. `is_file` answers
/// `os.path.isfile` for a rebuilt item's path.
pub fn forecast(
    replay: &Replay,
    tail: &Tail,
    now: f64,
    is_file: impl Fn(&str) -> bool,
) -> Forecast {
    let reclaims: Vec<Requeue> = reclaims(replay, now, 0, |_, _| true)
        .into_iter()
        .map(|lease| {
            let active = &replay.active[&lease.id];
            requeue(lease, active, &is_file)
        })
        .collect();
    let count =
        |want: fn(&ResumeOutcome) -> bool| reclaims.iter().filter(|r| want(&r.outcome)).count();
    let first_append = FirstAppend {
        record: if reclaims.is_empty() {
            "lease"
        } else {
            "reclaim"
        },
        id: reclaims.first().map(|r| r.lease.id),
        glues: matches!(tail.state, TailState::Torn | TailState::Unterminated),
    };
    Forecast {
        tail: tail.clone(),
        requeued: count(|o| *o == ResumeOutcome::Requeued),
        requeued_if_continuation_valid: count(|o| *o == ResumeOutcome::RequeuedIfContinuationValid),
        dropped: count(|o| matches!(o, ResumeOutcome::Dropped { .. })),
        duplicates: 0,
        first_append,
        hidden_records: 0,
        reclaims,
    }
}

/// Marks items queued twice: resume appends the deferred journal's items,
/// then the work journal's, and removes no duplicate. `forecasts` are in
/// that order, each with its file name.
pub fn mark_duplicates(forecasts: &mut [(&str, &mut Forecast)]) {
    let mut seen: HashMap<WorkItem, (String, WorkId)> = HashMap::new();
    for (file, forecast) in forecasts.iter_mut() {
        for r in &mut forecast.reclaims {
            if matches!(r.outcome, ResumeOutcome::Dropped { .. }) {
                continue;
            }
            let Some(item) = &r.item else { continue };
            match seen.get(item) {
                Some(first) => r.duplicate_of = Some(first.clone()),
                None => {
                    seen.insert(item.clone(), (file.to_string(), r.lease.id));
                }
            }
        }
        forecast.duplicates = forecast
            .reclaims
            .iter()
            .filter(|r| r.duplicate_of.is_some())
            .count();
    }
}

fn requeue(lease: Reclaim, active: &Active, is_file: &impl Fn(&str) -> bool) -> Requeue {
    let payload = std::str::from_utf8(&active.payload)
        .ok()
        .and_then(|t| json::parse(t, json::Mode::Journal).ok())
        .and_then(|p| match p.value {
            Value::Object(o) => Some(o),
            _ => None,
        });
    let Some(payload) = payload else {
        // The replay accepts only object payloads; this cannot happen.
        return Requeue {
            lease,
            outcome: ResumeOutcome::Dropped {
                reason: "the payload is not an object".into(),
            },
            item: None,
            not_restored: Vec::new(),
            duplicate_of: None,
            digest: None,
            rescan: None,
        };
    };
    let mut not_restored = Vec::new();
    if payload.get("parameter_overrides").is_some_and(truthy) {
        not_restored.push("parameter_overrides".to_string());
    }
    if payload.get("parameter_token").is_some_and(truthy) {
        not_restored.push("parameter_token".to_string());
    }
    let item = rebuild(&payload);
    let outcome = match &item {
        None => ResumeOutcome::Dropped {
            reason: "the payload has no path".into(),
        },
        Some(item) if is_file(&item.path) => ResumeOutcome::Requeued,
        Some(item) if item.continuation.is_some() => ResumeOutcome::RequeuedIfContinuationValid,
        Some(item) => ResumeOutcome::Dropped {
            reason: format!(
                "its seed {} is not a file on this host and it has no continuation",
                item.path
            ),
        },
    };
    let digest = match (payload.get("sha256"), &item) {
        (_, Some(item)) if item.continuation.is_some() => None,
        (Some(Value::Str(s)), _) => s
            .as_str()
            .filter(|s| s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            .map(str::to_string),
        _ => None,
    };
    Requeue {
        lease,
        outcome,
        item,
        not_restored,
        duplicate_of: None,
        digest,
        rescan: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(text: &str) -> json::Object {
        match json::parse(text, json::Mode::Journal).unwrap().value {
            Value::Object(o) => o,
            _ => unreachable!(),
        }
    }

    #[test]
    fn rebuild_follows_upstreams_normalisation() {
        let item = rebuild(&object(
            r#"{"path":"/q/a","focus_bytes":"0-15","target_branch":4242,"s2f_actions":[[4242," Solve "],[77,"sample"],[4242,"skip"],[0,"solve"],[5,"jump"],[true,"solve"],["9","skip"],[1]],"schedule_prefix":[0,1,-1,"2",2.9,null,"x"],"continuation":null,"parameter_overrides":{"a":"b"}}"#,
        ))
        .unwrap();
        assert_eq!(item.path, "/q/a");
        assert_eq!(item.focus.as_deref(), Some("0-15"));
        assert_eq!(item.target_branch, 4242);
        assert_eq!(
            item.s2f_actions,
            [
                (4242, "solve".to_string()),
                (77, "sample".to_string()),
                (9, "skip".to_string())
            ]
        );
        assert_eq!(item.schedule_prefix, [0, 1, 2, 2]);
        assert_eq!(item.fields, 5);
        let plain = rebuild(&object(
            r#"{"path":"p","focus_bytes":"","target_branch":-3,"s2f_actions":"solve","schedule_prefix":"1, 2;3"}"#,
        ))
        .unwrap();
        assert_eq!(plain.focus, None);
        assert_eq!(plain.target_branch, 0);
        assert_eq!(plain.schedule_prefix, [1, 2, 3]);
        assert_eq!(plain.fields, 5);
        assert_eq!(
            rebuild(&object(
                r#"{"path":"p","target_branch":18446744073709551616}"#
            ))
            .unwrap()
            .fields,
            3
        );
        assert_eq!(rebuild(&object(r#"{"path":""}"#)), None);
        assert_eq!(rebuild(&object(r#"{"path":null}"#)), None);
        assert_eq!(
            rebuild(&object(r#"{"path":7,"continuation":{"schema":"x"}}"#))
                .unwrap()
                .path,
            "7"
        );
        assert_eq!(
            rebuild(&object(r#"{"path":["a",1,true]}"#)).unwrap().path,
            "['a', 1, True]"
        );
    }
}
