//! Upstream's `recover_expired` selection: which active leases a reclaim
//! takes and in which order, `(attempts, time, id)`, with what a plan
//! lists of each ([`Reclaim`]): the payload's `path` and whether it has a
//! continuation, read without a full parse when the payload is canonical.
//! Resume's forecast, a discard and migrate's list of legacy leases use it.

use serde::Serialize;

use super::classify::payload_members;
use super::id::WorkId;
use super::model::{Active, Clock};
use super::replay::Replay;
use crate::engine::json::{self, PyInt, Value};

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
    /// Byte offset of that line.
    pub offset: u64,
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
                offset: a.offset,
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
    if let Some([path, continuation]) = payload_members(payload, [b"path", b"continuation"]) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::journal::{self, payload_member};

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
                payload_member(payload.as_bytes(), b"path"),
                payload_member(payload.as_bytes(), b"continuation"),
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
                payload_member(payload.as_bytes(), b"path"),
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
