//! The bytes of `inspect --records --format ndjson`: each row the
//! operation streams ([`Row`]) as one line of JSON, the journal's path
//! first, every member always present, in the order of the contract.
//!
//! Written by hand, member by member, into one buffer per batch and one
//! write per batch: the stream has a line for every line of the journal,
//! and serde's generic path cost twice the time. Called on the thread the
//! scan hands its batches to (see `operations::records`), so nothing here
//! may use rayon's pool.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::engine::journal::{ClockMarker, IgnoreReason, WorkId};
use crate::engine::json::PyInt;
use crate::operations::records::{OpName, Row, RowSink};

/// The rows as NDJSON, written to `out`.
pub struct Ndjson<'a> {
    out: &'a mut dyn Write,
    /// The current journal's path, already a JSON string.
    file: String,
    names: Names,
    /// A batch's bytes, reused from batch to batch.
    buffer: Vec<u8>,
}

impl<'a> Ndjson<'a> {
    /// Rows written to `out`, a batch at a time.
    pub fn new(out: &'a mut dyn Write) -> Ndjson<'a> {
        Ndjson {
            out,
            file: String::new(),
            names: Names::default(),
            buffer: Vec::new(),
        }
    }
}

impl RowSink for Ndjson<'_> {
    fn journal(&mut self, path: &str) {
        self.file = serde_json::to_string(path).unwrap_or_default();
    }

    fn rows(&mut self, rows: &[Row]) -> io::Result<()> {
        self.buffer.clear();
        for row in rows {
            line(row, &self.file, &mut self.names, &mut self.buffer);
        }
        self.out.write_all(&self.buffer)
    }
}

/// Writes `row` as one line of JSON; `file` is the journal's path, already
/// a JSON string.
fn line(row: &Row, file: &str, names: &mut Names, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"file\":");
    out.extend_from_slice(file.as_bytes());
    out.extend_from_slice(b",\"line\":");
    out.extend_from_slice(itoa::Buffer::new().format(row.line).as_bytes());
    out.extend_from_slice(b",\"offset\":");
    out.extend_from_slice(itoa::Buffer::new().format(row.offset).as_bytes());
    out.extend_from_slice(b",\"kind\":\"");
    out.extend_from_slice(row.kind.as_bytes());
    out.extend_from_slice(b"\",\"op\":");
    match &row.op {
        None => out.extend_from_slice(b"null"),
        Some(OpName::Other(op)) => string(op, out),
        Some(OpName::Known(op)) => quoted(op, out),
    }
    out.extend_from_slice(b",\"id\":");
    id(row.id.as_ref(), out);
    out.extend_from_slice(b",\"hidden_id\":");
    id(row.hidden_id.as_ref(), out);
    out.extend_from_slice(b",\"worker\":");
    int(row.worker.as_ref(), out);
    out.extend_from_slice(b",\"previous_worker\":");
    int(row.previous_worker.as_ref(), out);
    out.extend_from_slice(b",\"time\":");
    match row.time {
        Some(t) if t.is_finite() => {
            out.extend_from_slice(ryu::Buffer::new().format_finite(t).as_bytes())
        }
        _ => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"clock\":");
    match row.clock {
        None => out.extend_from_slice(b"null"),
        Some(ClockMarker::Absent) => quoted("absent", out),
        Some(ClockMarker::Unix) => quoted("unix", out),
        Some(ClockMarker::Legacy) => quoted("legacy", out),
        Some(ClockMarker::Other) => quoted("other", out),
    }
    out.extend_from_slice(b",\"attempts\":");
    int(row.attempts.as_ref(), out);
    out.extend_from_slice(b",\"effect\":");
    match row.effect {
        None => out.extend_from_slice(b"null"),
        Some(effect) => quoted(effect, out),
    }
    out.extend_from_slice(b",\"ignored\":");
    match row.ignored {
        None => out.extend_from_slice(b"null"),
        Some(reason) => quoted(names.ignored(reason), out),
    }
    out.extend_from_slice(b",\"findings\":[");
    for (i, code) in row.findings.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        quoted(code.as_str(), out);
    }
    out.extend_from_slice(b"]}\n");
}

/// The JSON names of the reasons a line is ignored, as their serde names.
#[derive(Default)]
struct Names(HashMap<IgnoreReason, String>);

impl Names {
    fn ignored(&mut self, reason: IgnoreReason) -> &str {
        self.0
            .entry(reason)
            .or_insert_with(|| match serde_json::to_value(reason) {
                Ok(serde_json::Value::String(name)) => name,
                _ => format!("{reason:?}"),
            })
    }
}

/// A name known to need no escaping, quoted.
fn quoted(name: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.push(b'"');
}

/// Any text as a JSON string.
fn string(text: &str, out: &mut Vec<u8>) {
    // Writing to a vector cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// An id in hex, or `null`.
fn id(id: Option<&WorkId>, out: &mut Vec<u8>) {
    match id {
        None => out.extend_from_slice(b"null"),
        Some(id) => {
            out.push(b'"');
            out.extend_from_slice(&id.hex_bytes());
            out.push(b'"');
        }
    }
}

/// A Python integer, or `null`.
fn int(n: Option<&PyInt>, out: &mut Vec<u8>) {
    match n {
        None => out.extend_from_slice(b"null"),
        Some(PyInt::Small(n)) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
        Some(n) => out.extend_from_slice(n.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::findings::catalog::Code;

    fn row() -> Row {
        Row {
            line: 3,
            offset: 120,
            kind: "record",
            ..Row::default()
        }
    }

    fn bytes(rows: &[Row]) -> String {
        let mut out = Vec::new();
        let mut sink = Ndjson::new(&mut out);
        sink.journal("a \"b\".jsonl");
        sink.rows(rows).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_member_is_present_in_the_contracts_order() {
        assert_eq!(
            bytes(&[row()]),
            "{\"file\":\"a \\\"b\\\".jsonl\",\"line\":3,\"offset\":120,\"kind\":\"record\",\
             \"op\":null,\"id\":null,\"hidden_id\":null,\"worker\":null,\"previous_worker\":null,\
             \"time\":null,\"clock\":null,\"attempts\":null,\"effect\":null,\"ignored\":null,\
             \"findings\":[]}\n"
        );
    }

    #[test]
    fn values_are_written_as_json() {
        let id = WorkId::of_canonical(b"{}");
        let big = PyInt::from_big(
            num_bigint::BigInt::parse_bytes(b"123456789012345678901234567890", 10).unwrap(),
        );
        let codes = &Code::ALL[..2];
        let full = Row {
            op: Some(OpName::Other("x\n\"y\"".into())),
            id: Some(id),
            worker: Some(PyInt::Small(-7)),
            previous_worker: Some(big),
            time: Some(1754550000.5),
            clock: Some(ClockMarker::Legacy),
            attempts: Some(PyInt::Small(2)),
            effect: Some("took-over"),
            ignored: Some(IgnoreReason::OrphanDone),
            findings: codes.to_vec(),
            ..row()
        };
        let infinite = Row {
            op: Some(OpName::Known("done")),
            hidden_id: Some(id),
            time: Some(f64::INFINITY),
            ..row()
        };
        let text = bytes(&[full, infinite]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let hex = id.to_hex();
        assert!(
            lines[0].contains("\"op\":\"x\\n\\\"y\\\"\",\"id\":\""),
            "{text}"
        );
        assert!(lines[0].contains(&format!("\"id\":\"{hex}\",\"hidden_id\":null")));
        assert!(lines[0].contains(
            "\"worker\":-7,\"previous_worker\":123456789012345678901234567890,\
             \"time\":1754550000.5,\"clock\":\"legacy\",\"attempts\":2,\
             \"effect\":\"took-over\",\"ignored\":\"orphan-done\""
        ));
        assert!(lines[0].ends_with(&format!(
            "\"findings\":[\"{}\",\"{}\"]}}",
            codes[0].as_str(),
            codes[1].as_str()
        )));
        assert!(lines[1].contains(&format!(
            "\"op\":\"done\",\"id\":null,\"hidden_id\":\"{hex}\""
        )));
        assert!(lines[1].contains("\"time\":null"), "{text}");
    }
}
