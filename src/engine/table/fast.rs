//! The fast path of the record reader: a work record exactly as upstream's
//! `_write_record` writes it (`json.dump(record, sort_keys=True,
//! separators=(",",":"))` and one `"\n"`: sorted keys, compact
//! separators, ASCII, canonical escapes and numbers), read in one pass
//! without a value tree. The payload's bytes are then its canonical
//! encoding, so they are hashed as they stand.
//!
//! It answers only for a record upstream accepts whose every member the
//! report shows is in its plainest form: `schema` the integer 1, `id` the
//! file's stem, a known `status`, `token`, `owner`, `previous_owner` and
//! the payload's `path` strings without escapes, `worker`, `attempts` and
//! `steals` integers or such strings, `updated` (and `completed`) Python's
//! repr of a finite, non-negative float, `commit` absent or an object.
//! Anything else — a target record, a rejected one, a space, an unsorted
//! or repeated key, an escape, a coerced value — returns `None` and goes
//! to the general reader (`record::read_general`). The contract, checked
//! on generated and mutated records: whenever this returns `Some`, it
//! equals what the general reader returns.

use crate::engine::journal::{WorkId, payload_members};
use crate::engine::json::float_repr_value;

use super::record::{Oddity, Record, Status};

/// The members the reader looks at, in sorted order.
const MEMBERS: [&[u8]; 14] = [
    b"attempts",
    b"commit",
    b"completed",
    b"id",
    b"owner",
    b"payload",
    b"previous_owner",
    b"schema",
    b"status",
    b"steals",
    b"target",
    b"token",
    b"updated",
    b"worker",
];

/// A string without escapes: its contents (printable ASCII, as the
/// canonical form has checked).
fn plain_string(raw: &[u8]) -> Option<&str> {
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if inner.contains(&b'\\') {
        return None;
    }
    std::str::from_utf8(inner).ok()
}

/// `str(value)` for a plain string or a small canonical integer.
fn py_str(raw: &[u8]) -> Option<String> {
    if raw.first() == Some(&b'"') {
        return plain_string(raw).map(str::to_string);
    }
    let digits = raw.strip_prefix(b"-").unwrap_or(raw);
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Canonical already: no leading zero, no `-0`.
    std::str::from_utf8(raw).ok().map(str::to_string)
}

/// `_timestamp(value)` for a value written by `repr(float)`.
fn timestamp(raw: &[u8]) -> Option<f64> {
    if raw.first() == Some(&b'-') || !raw.contains(&b'.') && !raw.contains(&b'e') {
        return None;
    }
    float_repr_value(raw).filter(|t| t.is_finite() && *t >= 0.0)
}

/// An optional member read by `read`: absent is `Some(None)`.
fn optional<T>(raw: Option<&[u8]>, read: impl Fn(&[u8]) -> Option<T>) -> Option<Option<T>> {
    match raw {
        None => Some(None),
        Some(raw) => read(raw).map(Some),
    }
}

/// Reads a work record in upstream's exact form, or returns `None`.
pub(super) fn read(bytes: &[u8], id: &WorkId) -> Option<Record> {
    let body = bytes.strip_suffix(b"\n")?;
    if body.first() != Some(&b'{') {
        return None;
    }
    let [
        attempts,
        commit,
        completed,
        id_raw,
        owner,
        payload,
        previous_owner,
        schema,
        status,
        steals,
        target,
        token,
        updated,
        worker,
    ] = payload_members(body, MEMBERS)?;
    if schema? != b"1" {
        return None;
    }
    let id_raw = id_raw?;
    if id_raw.len() != 66 || id_raw[0] != b'"' || id_raw[1..65] != id.hex_bytes() {
        return None;
    }
    let status = match status? {
        b"\"leased\"" => Status::Leased,
        b"\"committing\"" => Status::Committing,
        b"\"done\"" => Status::Done,
        _ => return None,
    };
    let payload = payload?;
    if payload.first() != Some(&b'{') {
        return None;
    }
    let token = plain_string(token?).filter(|t| !t.is_empty())?.to_string();
    let updated = timestamp(updated?)?;
    let has_commit = match commit {
        None => false,
        Some(c) if c.first() == Some(&b'{') => true,
        Some(_) => return None,
    };
    let [path, continuation] = payload_members(payload, [b"path", b"continuation"])?;
    let path = match path {
        Some(p) if p.first() == Some(&b'"') => Some(plain_string(p)?.to_string()),
        _ => None,
    };
    let mut oddities = Vec::new();
    if WorkId::of_canonical(payload) != *id {
        oddities.push(Oddity::PayloadHash);
    }
    Some(Record {
        status,
        updated,
        owner: optional(owner, py_str)?,
        previous_owner: optional(previous_owner, py_str)?.filter(|o| !o.is_empty()),
        worker: optional(worker, py_str)?,
        token,
        attempts: optional(attempts, py_str)?,
        steals: optional(steals, py_str)?,
        completed: optional(completed, timestamp)?,
        has_commit,
        path,
        continuation: continuation.is_some_and(|c| c != b"null"),
        target: optional(target, py_str)?,
        oddities,
    })
}

#[cfg(test)]
mod tests {
    use super::super::record::{Reading, TableKind, read_general};
    use super::*;

    const PAYLOAD: &str = "{\"continuation\":null,\"focus_bytes\":\"0-15\",\"parameter_overrides\":{},\"parameter_token\":\"tok-7\",\"path\":\"/afl/queue/id:000001,src:000000\",\"s2f_actions\":[[12,\"solve\"]],\"schedule_prefix\":[1,2],\"sha256\":\"00ff\",\"strategy\":2,\"target_branch\":0}";

    /// The members of a record upstream writes, as raw JSON values.
    fn members(status: &str) -> Vec<(String, String)> {
        let id = WorkId::of_canonical(PAYLOAD.as_bytes());
        let mut m = vec![
            ("attempts", "1".to_string()),
            ("id", format!("\"{id}\"")),
            ("owner", "\"hostA:1234\"".into()),
            ("payload", PAYLOAD.into()),
            ("previous_owner", "\"\"".into()),
            ("schema", "1".into()),
            ("status", format!("\"{status}\"")),
            ("steals", "0".into()),
            ("token", "\"hostA:1234:3:1234:1754550000014023800\"".into()),
            ("updated", "1754550000.0140238".into()),
            ("worker", "3".into()),
        ];
        if status == "done" {
            m.push(("completed", "1754550012.5".into()));
        }
        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// Sorted, compact, with the newline: as `_write_record` writes it.
    fn record(mut members: Vec<(String, String)>) -> Vec<u8> {
        members.sort();
        let body: Vec<String> = members
            .iter()
            .map(|(k, v)| format!("\"{k}\":{v}"))
            .collect();
        format!("{{{}}}\n", body.join(",")).into_bytes()
    }

    fn id() -> WorkId {
        WorkId::of_canonical(PAYLOAD.as_bytes())
    }

    /// Whether the fast path answers; when it does, it must agree.
    fn agrees(bytes: &[u8]) -> bool {
        let Some(fast) = read(bytes, &id()) else {
            return false;
        };
        assert_eq!(
            Reading::Valid(Box::new(fast)),
            read_general(bytes, &id(), TableKind::Work),
            "{}",
            String::from_utf8_lossy(bytes)
        );
        true
    }

    #[test]
    fn upstream_records_take_the_fast_path_and_agree() {
        for status in ["leased", "committing", "done"] {
            assert!(agrees(&record(members(status))), "{status}");
        }
        let mut stolen = members("leased");
        stolen.retain(|(k, _)| k != "previous_owner" && k != "attempts");
        stolen.push(("previous_owner".into(), "\"hostB:99\"".into()));
        stolen.push(("attempts".into(), "2".into()));
        stolen.push(("commit".into(), "{\"manifest\":\"m\"}".into()));
        assert!(agrees(&record(stolen)));
        // A payload that does not hash to the id is odd, not rejected.
        let mut other = members("done");
        other.retain(|(k, _)| k != "id");
        other.push(("id".into(), format!("\"{}\"", "ab".repeat(32))));
        let bytes = record(other);
        let ab = super::super::names::parse_id(&"ab".repeat(32)).unwrap();
        let fast = read(&bytes, &ab).expect("fast path");
        assert_eq!(fast.oddities, [Oddity::PayloadHash]);
        assert_eq!(
            Reading::Valid(Box::new(fast)),
            read_general(&bytes, &ab, TableKind::Work)
        );
    }

    #[test]
    fn every_member_replaced_or_removed_agrees_or_falls_back() {
        let values = [
            "1",
            "0",
            "-1",
            "1.0",
            "0.5",
            "-0.0",
            "1e+16",
            "1754550000.0140238",
            "17545500000140238",
            "true",
            "false",
            "null",
            "\"\"",
            "\"1\"",
            "\"17.5\"",
            "\"leased\"",
            "\"done\"",
            "\"a\\\"b\"",
            "\"\\u00e9\"",
            "{}",
            "{\"path\":\"/q\"}",
            "{\"continuation\":{\"a\":1},\"path\":3}",
            "[]",
            "[1,2]",
        ];
        let mut fast = 0;
        let mut cases = 0;
        for status in ["leased", "committing", "done"] {
            let base = members(status);
            let mut names: Vec<String> = base.iter().map(|(k, _)| k.clone()).collect();
            names.extend(["commit", "completed", "target", "zzz"].map(String::from));
            for name in &names {
                let without: Vec<_> = base.iter().filter(|(k, _)| k != name).cloned().collect();
                cases += 1;
                fast += usize::from(agrees(&record(without.clone())));
                for v in values {
                    let mut m = without.clone();
                    m.push((name.clone(), v.to_string()));
                    cases += 1;
                    fast += usize::from(agrees(&record(m)));
                }
            }
        }
        assert!(
            fast > 50 && fast < cases,
            "{fast} of {cases} on the fast path"
        );
    }

    #[test]
    fn every_byte_mutated_agrees_or_falls_back() {
        let replacements = b"\"\\0159.-+eE{}[],: \tanu\x7f\xff\x00";
        let mut fast = 0;
        let mut cases = 0;
        for status in ["leased", "done"] {
            let base = record(members(status));
            for i in 0..=base.len() {
                let mut variants = Vec::new();
                if i < base.len() {
                    let mut deleted = base.clone();
                    deleted.remove(i);
                    variants.push(deleted);
                }
                for &r in replacements {
                    if i < base.len() {
                        let mut replaced = base.clone();
                        replaced[i] = r;
                        variants.push(replaced);
                    }
                    let mut inserted = base.clone();
                    inserted.insert(i, r);
                    variants.push(inserted);
                }
                for v in variants {
                    cases += 1;
                    fast += usize::from(agrees(&v));
                }
            }
        }
        assert!(
            fast > 100 && fast < cases,
            "{fast} of {cases} on the fast path"
        );
    }
}
