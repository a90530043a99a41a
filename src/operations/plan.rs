//! What the write commands share: the replay state as a plan shows it, the
//! selection and order of leases to reclaim, and the check that a written
//! file replays to the planned state.

use std::io::Read;

use serde::Serialize;

use crate::engine::journal::{self, Active, Clock, Replay, WorkId};
use crate::engine::json::{self, PyInt, Value};
use crate::operations::statedir::Kind;

/// A replay state as counts and a digest ([`Replay::digest`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StateView {
    /// Active leases.
    pub active: usize,
    /// Completed ids.
    pub completed: usize,
    /// SHA-256 of the canonical state.
    pub digest: String,
}

impl StateView {
    /// Summarises a replay.
    pub fn of(replay: &Replay) -> StateView {
        StateView {
            active: replay.active.len(),
            completed: replay.completed.len(),
            digest: replay.digest(),
        }
    }

    /// Summarises a state of active leases, in id order, and no completed
    /// ids.
    pub fn of_active<'a>(
        active: impl ExactSizeIterator<Item = (&'a WorkId, &'a Active)>,
    ) -> StateView {
        StateView {
            active: active.len(),
            completed: 0,
            digest: journal::state_digest(active, std::iter::empty()),
        }
    }
}

/// Replays what a reader holds and compares it with the planned state.
pub fn check_replay(src: impl Read + Send, planned: &StateView) -> Result<(), String> {
    // Sized for the planned state up front: growing the completed set by
    // doubling would briefly hold two copies of it.
    let replay = Replay::with_capacity(planned.active, planned.completed);
    let scan = journal::scan_into(src, replay, &mut ())
        .map_err(|e| format!("re-read failed: {}", crate::operations::words::in_words(&e)))?;
    let got = StateView::of(&scan.replay);
    if &got == planned {
        Ok(())
    } else {
        Err(format!(
            "planned {} active, {} completed, digest {}; found {} active, {} completed, digest {}",
            planned.active,
            planned.completed,
            &planned.digest[..16],
            got.active,
            got.completed,
            &got.digest[..16]
        ))
    }
}

/// A lease to reclaim, as a plan lists it.
#[derive(Clone, Debug, Serialize)]
pub struct Reclaim {
    /// Work id.
    pub id: WorkId,
    /// Owner rank.
    pub worker: PyInt,
    /// Clock domain.
    pub clock: Clock,
    /// Lease time.
    pub time: f64,
    /// `now - time` for a unix lease.
    pub age_seconds: Option<f64>,
    /// Attempts counter.
    pub attempts: PyInt,
    /// Line of the lease in force.
    pub line: u64,
    /// The payload's `path`, when it is a string.
    pub path: Option<String>,
    /// Whether the payload carries a non-null `continuation`.
    pub continuation: bool,
}

/// Upstream's `recover_expired` selection and order: the leases `expired`
/// accepts, sorted by `(attempts, time, id)`, at most `limit` (0: all).
pub fn reclaims(
    replay: &Replay,
    now: f64,
    limit: usize,
    expired: impl Fn(&WorkId, &Active) -> bool,
) -> Vec<Reclaim> {
    let mut chosen: Vec<(&WorkId, &Active)> = replay
        .active
        .iter()
        .filter(|(id, a)| expired(id, a))
        .collect();
    // Python compares the times as numbers: -0.0 and 0.0 tie and the id
    // decides (times are finite, so partial_cmp always answers).
    chosen.sort_by(|(ia, a), (ib, b)| {
        a.attempts
            .cmp(&b.attempts)
            .then(
                a.time
                    .partial_cmp(&b.time)
                    .unwrap_or(std::cmp::Ordering::Equal),
            )
            .then(ia.cmp(ib))
    });
    if limit > 0 {
        chosen.truncate(limit);
    }
    chosen
        .into_iter()
        .map(|(id, a)| {
            let (path, continuation) = payload_facts(&a.payload);
            Reclaim {
                id: *id,
                worker: a.worker.clone(),
                clock: a.clock,
                time: a.time,
                age_seconds: (a.clock == Clock::Unix).then_some(now - a.time),
                attempts: a.attempts.clone(),
                line: a.line,
                path,
                continuation,
            }
        })
        .collect()
}

/// The payload's `path` and whether it has a non-null `continuation`.
pub fn payload_facts(payload: &[u8]) -> (Option<String>, bool) {
    // A canonical payload (what the replay keeps) is read without building
    // its values; anything else is parsed.
    if let Some([path, continuation]) =
        journal::payload_members(payload, [b"path", b"continuation"])
    {
        return (
            path.and_then(json_string),
            continuation.is_some_and(|raw| raw != b"null"),
        );
    }
    let Some(obj) = std::str::from_utf8(payload)
        .ok()
        .and_then(|t| json::parse(t, json::Mode::Journal).ok())
        .and_then(|p| match p.value {
            Value::Object(o) => Some(o),
            _ => None,
        })
    else {
        return (None, false);
    };
    let path = match obj.get("path") {
        Some(Value::Str(s)) => Some(s.to_string_lossy()),
        _ => None,
    };
    let continuation = matches!(obj.get("continuation"), Some(v) if *v != Value::Null);
    (path, continuation)
}

/// The text of a JSON string value given as its raw bytes; `None` for any
/// other value.
fn json_string(raw: &[u8]) -> Option<String> {
    match raw {
        [b'"', inner @ .., b'"'] if !inner.contains(&b'\\') => {
            Some(String::from_utf8_lossy(inner).into_owned())
        }
        _ => match json::parse(std::str::from_utf8(raw).ok()?, json::Mode::Journal)
            .ok()?
            .value
        {
            Value::Str(s) => Some(s.to_string_lossy()),
            _ => None,
        },
    }
}

/// How a run writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Print the plan only.
    DryRun,
    /// Print the plan; exit 1 if it would change anything (`--check`).
    Check,
    /// Change files in place.
    Apply,
    /// Write the result to `--output`.
    Output,
}

/// What happened to one file.
#[derive(Debug, Serialize)]
pub struct Outcome<P: Serialize> {
    /// The file.
    pub path: String,
    /// `journal` or `snapshot`.
    pub kind: Kind,
    /// The plan.
    pub plan: P,
    /// Whether anything was written.
    pub written: bool,
    /// The backup made, if any.
    pub backup: Option<String>,
    /// The `--output` file written, if any.
    pub output: Option<String>,
    /// Stale temporary files of this tool removed under the lock.
    pub removed_temp_files: Vec<String>,
    /// A remark ("nothing to do", …).
    pub note: Option<String>,
    /// Whether a change in place keeps a backup (no `--no-backup`).
    pub keeps_backup: bool,
    /// Records another process appended to the journal while it was being
    /// replaced (it ignores the master's lock), carried into the result.
    /// Absent when there were none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_appends_carried: Option<crate::operations::durable::Carried>,
}

/// The report of a writing subcommand.
#[derive(Debug, Serialize)]
pub struct Report<P: Serialize> {
    /// Contract version.
    pub schema_version: u32,
    /// `recover`, `migrate` or `compact`.
    pub command: &'static str,
    /// How it wrote.
    pub mode: Mode,
    /// Per file, in the order they were handled.
    pub files: Vec<Outcome<P>>,
}

/// What happens to the end of the file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum TailFix {
    /// Nothing: it ends with a terminator.
    None,
    /// A torn (or zero-filled) tail is cut off.
    Cut {
        /// Where the cut starts.
        offset: u64,
        /// Bytes removed.
        bytes: u64,
        /// Of those, NUL bytes.
        zero_bytes: u64,
    },
    /// A complete last record gets its missing newline.
    Terminate {
        /// Where the newline goes.
        offset: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minus_zero_and_zero_times_tie_and_the_id_decides() {
        // Two legacy leases whose times are -0.0 ("time":"-0") and 0.0.
        let line = |path: &str, time: &str| {
            let payload = format!("{{\"path\":\"{path}\"}}");
            let id = WorkId::of_canonical(payload.as_bytes());
            format!("{{\"id\":\"{id}\",\"op\":\"lease\",\"payload\":{payload},\"time\":{time}}}\n")
        };
        let (a, b) = ("a", "b");
        let ida = WorkId::of_canonical(b"{\"path\":\"a\"}");
        let idb = WorkId::of_canonical(b"{\"path\":\"b\"}");
        let (low, high) = if ida < idb { (a, b) } else { (b, a) };
        // The higher id has -0.0: by total order it would come first.
        let text = line(high, "\"-0\"") + &line(low, "0.0");
        let scan = journal::scan(text.as_bytes(), &mut ()).unwrap();
        let order: Vec<WorkId> = reclaims(&scan.replay, 1.0, 0, |_, _| true)
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(order, [ida.min(idb), ida.max(idb)]);
        // And the state digest does not tell the two zeros apart.
        let zero = line(high, "0.0") + &line(low, "0.0");
        let again = journal::scan(zero.as_bytes(), &mut ()).unwrap();
        assert_eq!(scan.replay.digest(), again.replay.digest());
    }

    /// The facts from a full parse, as the fallback computes them.
    fn parsed_facts(payload: &str) -> (Option<String>, bool) {
        let value = json::parse(payload, json::Mode::Journal).unwrap().value;
        let obj = value.as_object().unwrap();
        let path = match obj.get("path") {
            Some(Value::Str(s)) => Some(s.to_string_lossy()),
            _ => None,
        };
        (
            path,
            matches!(obj.get("continuation"), Some(v) if *v != Value::Null),
        )
    }

    #[test]
    fn payload_facts_read_canonical_payloads_like_a_full_parse() {
        for payload in [
            r#"{}"#,
            r#"{"path":"/afl/queue/id:000001"}"#,
            r#"{"continuation":null,"path":"/q/a"}"#,
            r#"{"continuation":{"k":[1,2]},"path":"/q/b"}"#,
            r#"{"continuation":0,"path":"/q/c"}"#,
            r#"{"continuation":false,"path":"/q/c"}"#,
            r#"{"path":"caf\u00e9\n\"\\"}"#,
            r#"{"path":"\ud800"}"#,
            r#"{"path":7}"#,
            r#"{"path":null}"#,
            r#"{"a":{"path":"nested"},"b":[{"continuation":1}]}"#,
            r#"{"a":{"path":"nested"},"path":"top"}"#,
        ] {
            let fast = (
                journal::payload_member(payload.as_bytes(), b"path"),
                journal::payload_member(payload.as_bytes(), b"continuation"),
            );
            assert!(
                fast.0.is_some() && fast.1.is_some(),
                "{payload} is canonical"
            );
            assert_eq!(
                payload_facts(payload.as_bytes()),
                parsed_facts(payload),
                "{payload}"
            );
        }
        // Not canonical: parsed in full, same answer.
        for payload in [
            r#"{ "path": "/q/x" }"#,
            r#"{"path":"/q/y","continuation":[]}"#,
            r#"{"p\u0061th":"/q/z"}"#,
        ] {
            assert_eq!(
                journal::payload_member(payload.as_bytes(), b"path"),
                None,
                "{payload}"
            );
            assert_eq!(
                payload_facts(payload.as_bytes()),
                parsed_facts(payload),
                "{payload}"
            );
        }
        assert_eq!(payload_facts(b"[1]"), (None, false));
        assert_eq!(payload_facts(b"{\"path\":"), (None, false));
    }
}
