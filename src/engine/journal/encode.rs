//! Records as upstream writes them: `json.dumps(record, sort_keys=True,
//! separators=(",", ":"), allow_nan=False)` plus `"\n"`. Compaction's lease
//! records carry exactly the seven fields upstream's `compact()` writes.

use super::id::WorkId;
use super::model::Clock;
use crate::engine::json::{PyInt, float_repr};

/// A lease line: `{"attempts","clock","id","op":"lease","payload","time","worker"}`.
/// `payload` is already canonical; `time` must be finite.
pub fn lease_line(
    id: &WorkId,
    worker: &PyInt,
    time: f64,
    attempts: &PyInt,
    clock: Clock,
    payload: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 160);
    out.extend_from_slice(format!("{{\"attempts\":{attempts},\"clock\":\"{}\",\"id\":\"{id}\",\"op\":\"lease\",\"payload\":", clock.as_str()).as_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(
        format!(",\"time\":{},\"worker\":{worker}}}\n", float_repr(time)).as_bytes(),
    );
    out
}

/// A `done` or `reclaim` line: `{"clock","id","op","time"}`.
pub fn marker_line(op: &str, id: &WorkId, clock: Clock, time: f64) -> Vec<u8> {
    format!(
        "{{\"clock\":\"{}\",\"id\":\"{id}\",\"op\":\"{op}\",\"time\":{}}}\n",
        clock.as_str(),
        float_repr(time)
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_match_upstreams_samples() {
        // samples/legacy_demo.jsonl, written by upstream's compact() and
        // recover_expired(now=1.0).
        let payload = br#"{"path":"legacy","target_branch":5}"#;
        let id = WorkId::of_canonical(payload);
        let lease = lease_line(
            &id,
            &PyInt::Small(1),
            123456.789,
            &PyInt::Small(1),
            Clock::Legacy,
            payload,
        );
        let reclaim = marker_line("reclaim", &id, Clock::Unix, 1.0);
        let mut both = lease;
        both.extend_from_slice(&reclaim);
        let sample = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/samples/legacy_demo.jsonl"
        ))
        .unwrap();
        assert_eq!(
            String::from_utf8(both).unwrap(),
            String::from_utf8(sample).unwrap()
        );
    }
}
