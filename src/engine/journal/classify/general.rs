//! The general path of line classification: upstream's per-line rules of
//! `WorkLeaseJournal._load` for any line (parse, shape, id, op, the lease
//! coercions, in upstream's order of checks), plus the diagnostics upstream
//! does not make (which values it coerces, unknown fields, glued records,
//! canonical form). Builds the line's values with the Python-compatible
//! parser; the reference the fast path is checked against.

use crate::engine::journal::id::{VerifiedId, WorkId};
use crate::engine::journal::model::{
    Classified, Clock, ClockMarker, Field, Lease, LeaseRejection, Lenient, LineKind, Op, Payload,
    Record,
};
use crate::engine::json::{
    self, CoerceError, Mode, NonFinite, ParseErrorKind, PyInt, Value, py_float, py_int,
    py_str_is_work_id, truthy,
};

const LEASE_FIELDS: [&str; 7] = ["attempts", "clock", "id", "op", "payload", "time", "worker"];
const MARKER_FIELDS: [&str; 4] = ["clock", "id", "op", "time"];

/// How far back from the end of a corrupt line a glued record may start,
/// and how many starts are tried: bounds the work on hostile lines.
const GLUE_WINDOW: usize = 16 << 20;

/// Lines longer than this are validated before they are parsed.
const HUGE_LINE: usize = 16 << 20;
const GLUE_CANDIDATES: usize = 16;

/// Classifies any line.
pub(super) fn classify(content: &[u8]) -> Classified {
    let (text, invalid_utf8) = json::strip_invalid_utf8(content);
    // Stripping leaves valid UTF-8 by construction.
    let text = std::str::from_utf8(&text).unwrap_or_default();
    let kind = classify_text(text, true);
    Classified { invalid_utf8, kind }
}

fn classify_text(text: &str, look_for_glue: bool) -> LineKind {
    if text
        .bytes()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return LineKind::Blank;
    }
    // A huge line is checked without building its values first: only an
    // object (a would-be record) is worth parsing in full.
    if text.len() > HUGE_LINE {
        match json::validate(text, Mode::Journal) {
            Err(err) => return corrupt(text, err, look_for_glue),
            Ok(parsed) if parsed.value.as_object().is_none() => return LineKind::NotAnObject,
            Ok(_) => {}
        }
    }
    let value = match json::parse(text, Mode::Journal) {
        Ok(parsed) => parsed.value,
        Err(err) => return corrupt(text, err, look_for_glue),
    };
    let Value::Object(obj) = &value else {
        return LineKind::NotAnObject;
    };
    let Some(id) = py_str_is_work_id(obj.get("id").unwrap_or(&Value::Str("".into()))) else {
        return LineKind::BadId;
    };
    let id = WorkId(id);
    let op_value = obj.get("op");
    let op = match op_value {
        Some(Value::Str(s)) if s == "lease" => Op::Lease(lease(id, obj)),
        Some(Value::Str(s)) if s == "done" => Op::Done,
        Some(Value::Str(s)) if s == "reclaim" => Op::Reclaim,
        Some(Value::Str(s)) => Op::Unknown(s.to_string_lossy()),
        Some(other) => Op::Unknown(
            String::from_utf8_lossy(
                &json::to_canonical(other, NonFinite::AsStrings).unwrap_or_default(),
            )
            .into_owned(),
        ),
        None => Op::Unknown("None".to_string()),
    };
    let known: &[&str] = if matches!(op, Op::Lease(_)) {
        &LEASE_FIELDS
    } else {
        &MARKER_FIELDS
    };
    let unknown_fields: Vec<String> = obj
        .members()
        .iter()
        .filter(|(k, _)| !known.iter().any(|f| k == *f))
        .map(|(k, _)| k.to_string_lossy())
        .collect();
    let time = obj
        .get("time")
        .and_then(|t| py_float(t).ok())
        .filter(|t| t.is_finite());
    let marker = match obj.get("clock") {
        None => ClockMarker::Absent,
        Some(Value::Str(s)) if s == "unix" => ClockMarker::Unix,
        Some(Value::Str(s)) if s == "legacy" => ClockMarker::Legacy,
        Some(_) => ClockMarker::Other,
    };
    let canonical =
        json::to_canonical(&value, NonFinite::Refuse).is_ok_and(|bytes| bytes == text.as_bytes());
    let verbatim = canonical
        && unknown_fields.is_empty()
        && matches!(marker, ClockMarker::Unix | ClockMarker::Legacy)
        && matches!(obj.get("time"), Some(Value::Float(_)))
        && match &op {
            Op::Lease(Ok(lease)) => lease.lenient.is_empty(),
            Op::Done | Op::Reclaim => true,
            _ => false,
        };
    LineKind::Record(Record {
        id,
        op,
        time,
        marker,
        unknown_fields,
        canonical,
        verbatim,
    })
}

/// A line that does not parse, with the record glued behind a torn
/// fragment if there is one. A BOM is not a torn fragment: the record
/// behind it is the line itself, lost to the BOM.
fn corrupt(text: &str, err: json::ParseError, look_for_glue: bool) -> LineKind {
    let glued = if look_for_glue && err.kind != ParseErrorKind::Bom {
        find_glued(text)
    } else {
        None
    };
    LineKind::Corrupt {
        reason: err.into(),
        glued,
    }
}

/// The leftmost complete record glued onto a torn fragment, if any.
///
/// Only lines ending in `}` can end with a record, and a candidate must
/// open like a record (`{"` and one of the record's member names), which
/// keeps hostile lines from costing more than a few parses each.
fn find_glued(text: &str) -> Option<(usize, Box<Record>)> {
    let bytes = text.as_bytes();
    let trimmed = text.trim_end_matches([' ', '\t', '\n', '\r']);
    if !trimmed.ends_with('}') {
        return None;
    }
    const OPENINGS: [&[u8]; 7] = [
        b"{\"attempts\"",
        b"{\"clock\"",
        b"{\"id\"",
        b"{\"op\"",
        b"{\"payload\"",
        b"{\"time\"",
        b"{\"worker\"",
    ];
    let floor = bytes.len().saturating_sub(GLUE_WINDOW).max(1);
    memchr::memchr_iter(b'{', &bytes[floor..])
        .map(|i| floor + i)
        .filter(|&at| OPENINGS.iter().any(|o| bytes[at..].starts_with(o)))
        .take(GLUE_CANDIDATES)
        .find_map(|at| match classify_text(&text[at..], false) {
            LineKind::Record(record) => Some((at, Box::new(record))),
            _ => None,
        })
}

fn coerce_error(field: Field, raw: &Value, err: CoerceError) -> LeaseRejection {
    LeaseRejection::Field {
        field,
        why: format!("{} ({})", describe(raw), err),
    }
}

/// A short description of a raw value for messages.
fn describe(value: &Value) -> String {
    let text = json::to_canonical(value, NonFinite::AsStrings).unwrap_or_default();
    let mut s = String::from_utf8_lossy(&text).into_owned();
    if s.len() > 40 {
        let cut = (0..=37).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

/// Upstream's lease branch, in its order of checks.
fn lease(id: WorkId, obj: &json::Object) -> Result<Lease, LeaseRejection> {
    let Some(payload @ Value::Object(_)) = obj.get("payload") else {
        return Err(LeaseRejection::PayloadNotObject);
    };
    let payload = json::to_canonical(payload, NonFinite::Refuse)
        .map_err(|_| LeaseRejection::PayloadNotFinite)?;
    let verified = VerifiedId::check(id, &payload)
        .map_err(|computed| LeaseRejection::PayloadMismatch { computed })?;
    let mut lenient = Vec::new();

    // worker = int(worker or 0), booleans refused first.
    let worker_raw = obj.get("worker");
    let worker = match worker_raw {
        Some(raw @ Value::Bool(_)) => {
            return Err(LeaseRejection::Field {
                field: Field::Worker,
                why: format!("{} (a boolean is not a rank)", describe(raw)),
            });
        }
        None => {
            lenient.push(Lenient {
                field: Field::Worker,
                note: "missing, read as 0".into(),
            });
            PyInt::Small(0)
        }
        Some(raw) if !truthy(raw) => {
            if !matches!(raw, Value::Int(_)) {
                lenient.push(Lenient {
                    field: Field::Worker,
                    note: format!("{} read as 0", describe(raw)),
                });
            }
            PyInt::Small(0)
        }
        Some(raw) => {
            let w = py_int(raw).map_err(|e| coerce_error(Field::Worker, raw, e))?;
            if !matches!(raw, Value::Int(_)) {
                lenient.push(Lenient {
                    field: Field::Worker,
                    note: format!("{} read as {w}", describe(raw)),
                });
            }
            w
        }
    };

    // updated = _finite_timestamp(time or 0.0)
    let time = match obj.get("time") {
        None => {
            lenient.push(Lenient {
                field: Field::Time,
                note: "missing, read as 0.0".into(),
            });
            0.0
        }
        Some(raw) => {
            let t = if truthy(raw) {
                py_float(raw).map_err(|e| coerce_error(Field::Time, raw, e))?
            } else {
                0.0
            };
            if !t.is_finite() || t < 0.0 {
                return Err(LeaseRejection::Field {
                    field: Field::Time,
                    why: format!("{} is not a finite, non-negative time", describe(raw)),
                });
            }
            if !matches!(raw, Value::Float(_)) {
                lenient.push(Lenient {
                    field: Field::Time,
                    note: format!("{} read as {}", describe(raw), json::float_repr(t)),
                });
            }
            t
        }
    };

    // attempts = int(attempts or 1)
    let attempts = match obj.get("attempts") {
        None => {
            lenient.push(Lenient {
                field: Field::Attempts,
                note: "missing, read as 1".into(),
            });
            PyInt::Small(1)
        }
        Some(raw) => {
            let a = if truthy(raw) {
                py_int(raw).map_err(|e| coerce_error(Field::Attempts, raw, e))?
            } else {
                PyInt::Small(1)
            };
            if !matches!(raw, Value::Int(_)) || !truthy(raw) {
                lenient.push(Lenient {
                    field: Field::Attempts,
                    note: format!("{} read as {a}", describe(raw)),
                });
            }
            a
        }
    };

    let clock = match obj.get("clock") {
        None => Clock::Legacy,
        Some(Value::Str(s)) if s == "legacy" => Clock::Legacy,
        Some(Value::Str(s)) if s == "unix" => Clock::Unix,
        Some(raw) => {
            return Err(LeaseRejection::Field {
                field: Field::Clock,
                why: format!("{} is neither \"unix\" nor \"legacy\"", describe(raw)),
            });
        }
    };
    if worker.is_negative() {
        return Err(LeaseRejection::Field {
            field: Field::Worker,
            why: format!("{worker} is negative"),
        });
    }
    if attempts < PyInt::Small(1) {
        return Err(LeaseRejection::Field {
            field: Field::Attempts,
            why: format!("{attempts} is below 1"),
        });
    }
    Ok(Lease {
        id: verified,
        worker,
        time,
        attempts,
        clock,
        payload: Payload::Encoded(payload.into()),
        lenient,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID_A: &str = "b3ebf1ab1e22ca48684634c8a2b31bf4f956e0964f7eccb2c2e09cb59f6cc088";
    const PAYLOAD_A: &str = r#"{"path":"legacy","target_branch":5}"#;

    fn lease_line(extra: &str) -> String {
        format!(r#"{{"op":"lease","id":"{ID_A}","payload":{PAYLOAD_A}{extra}}}"#)
    }

    fn record(line: &str) -> Record {
        match classify(line.as_bytes()).kind {
            LineKind::Record(r) => r,
            other => panic!("not a record: {other:?}"),
        }
    }

    fn accepted(line: &str) -> Lease {
        match record(line).op {
            Op::Lease(Ok(l)) => l,
            other => panic!("not accepted: {other:?}"),
        }
    }

    fn rejected(line: &str) -> LeaseRejection {
        match record(line).op {
            Op::Lease(Err(r)) => r,
            other => panic!("not rejected: {other:?}"),
        }
    }

    #[test]
    fn payload_hash_is_the_id() {
        assert_eq!(WorkId::of_canonical(PAYLOAD_A.as_bytes()).to_hex(), ID_A);
        let l = accepted(&lease_line(r#","worker":1,"time":123456.789,"attempts":1"#));
        assert_eq!(l.clock, Clock::Legacy);
        assert!(l.lenient.is_empty());
    }

    #[test]
    fn coercions_follow_upstream() {
        let l = accepted(&lease_line(r#","worker":"3","time":"12.5","attempts":0"#));
        assert_eq!(l.worker, PyInt::Small(3));
        assert_eq!(l.time, 12.5);
        assert_eq!(l.attempts, PyInt::Small(1));
        assert_eq!(l.lenient.len(), 3);
        let l = accepted(&lease_line(r#","worker":2.9,"time":null,"attempts":[]"#));
        assert_eq!(l.worker, PyInt::Small(2));
        assert_eq!(l.time, 0.0);
        let l = accepted(&lease_line(r#","time":true,"worker":-0.5"#));
        assert_eq!(l.time, 1.0);
        assert_eq!(l.worker, PyInt::Small(0));
    }

    #[test]
    fn refusals_follow_upstream() {
        for extra in [
            r#","worker":true"#,
            r#","worker":-1"#,
            r#","worker":"x""#,
            r#","worker":1e400"#,
            r#","time":1e400"#,
            r#","time":-1.0"#,
            r#","time":"nan""#,
            r#","attempts":"0""#,
            r#","attempts":0.5"#,
            r#","clock":null"#,
            r#","clock":"monotonic""#,
        ] {
            assert!(
                matches!(rejected(&lease_line(extra)), LeaseRejection::Field { .. }),
                "{extra}"
            );
        }
        let spliced = format!(
            r#"{{"op":"lease","id":"{}","payload":{PAYLOAD_A}}}"#,
            "0".repeat(64)
        );
        assert!(matches!(
            rejected(&spliced),
            LeaseRejection::PayloadMismatch { .. }
        ));
        let inf = format!(r#"{{"op":"lease","id":"{ID_A}","payload":{{"x":1e999}}}}"#);
        assert_eq!(rejected(&inf), LeaseRejection::PayloadNotFinite);
    }

    #[test]
    fn shapes_and_ids() {
        assert_eq!(classify(b"  \t").kind, LineKind::Blank);
        assert_eq!(classify(b"[1,2]").kind, LineKind::NotAnObject);
        let upper = format!(r#"{{"op":"done","id":"{}"}}"#, ID_A.to_uppercase());
        assert_eq!(classify(upper.as_bytes()).kind, LineKind::BadId);
        let done = record(&format!(
            r#"{{"clock":"unix","id":"{ID_A}","op":"done","time":1.0}}"#
        ));
        assert!(done.canonical);
        assert_eq!(done.op, Op::Done);
        let odd = record(&format!(r#"{{"x":1,"id":"{ID_A}","op":"other"}}"#));
        assert_eq!(odd.op, Op::Unknown("other".into()));
        assert_eq!(odd.unknown_fields, vec!["x".to_string()]);
        assert!(!odd.canonical);
    }

    #[test]
    fn glued_record_is_found_behind_a_torn_fragment() {
        let good = format!(r#"{{"clock":"unix","id":"{ID_A}","op":"done","time":1.0}}"#);
        let line = format!(r#"{{"attempts":1,"clock":"unix","id":"{good}"#);
        match classify(line.as_bytes()).kind {
            LineKind::Corrupt {
                glued: Some((at, rec)),
                ..
            } => {
                assert_eq!(at, line.len() - good.len());
                assert_eq!(rec.op, Op::Done);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_utf8_is_deleted_before_parsing() {
        let c = classify(b"{\"op\":\xff\"done\"}");
        assert_eq!(c.invalid_utf8, 1);
        assert_eq!(c.kind, LineKind::BadId);
    }
}
