//! One record file as upstream reads it: `_read_record` (`open(path,
//! encoding="utf-8")` and plain `json.load`; `None` on `OSError`,
//! `ValueError` or `TypeError`, or when the value is not a dict) and then
//! `_valid_record`, whose conditions are checked in upstream's order so
//! that the first one that fails is the reason given. Two things escape
//! both: nesting deep enough to raise `RecursionError`, and a `status`
//! that is a list or an object (`status in {…}` raises `TypeError`, which
//! nothing catches): every scan, and so every master start, stops there.

use std::fmt;

use serde::Serialize;

use crate::engine::journal::WorkId;
use crate::engine::json::{self, Mode, NonFinite, ParseErrorKind, Value};

use super::names::target_id;

/// A record's `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Claimed; expires after the TTL.
    Leased,
    /// `begin_commit` ran: never taken again.
    Committing,
    /// Completed: blocks the id for ever.
    Done,
}

impl Status {
    /// The status as upstream spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Leased => "leased",
            Status::Committing => "committing",
            Status::Done => "done",
        }
    }
}

/// Why upstream's reader rejects a record (the first failing condition).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "reason", content = "detail")]
pub enum Rejection {
    /// Not valid UTF-8 (`UnicodeDecodeError`).
    InvalidUtf8,
    /// Starts with a byte order mark.
    Bom,
    /// No bytes at all.
    Empty,
    /// Not JSON (torn, trailing garbage, an integer beyond 4300 digits).
    NotJson(String),
    /// JSON, but not an object.
    NotAnObject,
    /// `schema` is not 1.
    Schema,
    /// `id` is not the file's stem.
    IdMismatch,
    /// `status` is not `leased`, `committing` or `done`.
    Status,
    /// `payload` is not an object.
    Payload,
    /// `token` is not a non-empty string.
    Token,
    /// `updated` is not a finite, non-negative number.
    Updated,
    /// `commit` is present and not an object.
    Commit,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::InvalidUtf8 => f.write_str("is not valid UTF-8"),
            Rejection::Bom => f.write_str("starts with a UTF-8 byte order mark"),
            Rejection::Empty => f.write_str("is empty"),
            Rejection::NotJson(why) => write!(f, "is not JSON ({why})"),
            Rejection::NotAnObject => f.write_str("is JSON but not an object"),
            Rejection::Schema => f.write_str("has a schema that is not 1"),
            Rejection::IdMismatch => f.write_str("has an id that is not its file name"),
            Rejection::Status => f.write_str("has a status that is not leased, committing or done"),
            Rejection::Payload => f.write_str("has a payload that is not an object"),
            Rejection::Token => f.write_str("has no token (empty or not a string)"),
            Rejection::Updated => {
                f.write_str("has an updated time that is not a finite, non-negative number")
            }
            Rejection::Commit => f.write_str("has a commit that is not an object"),
        }
    }
}

/// What upstream's reader raises instead of returning (uncaught: the scan,
/// the claim and the master start that run into it stop).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Raises {
    /// Nesting deeper than Python's recursion limit.
    RecursionError,
    /// `status` is a list or an object: `status in {…}` cannot hash it.
    TypeError,
    /// Not an exception: the record path is a FIFO, and `open()` waits for
    /// a writer for ever.
    Hangs,
}

impl Raises {
    /// The exception's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Raises::RecursionError => "RecursionError",
            Raises::TypeError => "TypeError",
            Raises::Hangs => "hangs",
        }
    }
}

/// Something upstream accepts that its writer never writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Oddity {
    /// `schema` is `true` or `1.0`, not the integer 1.
    SchemaNotInteger,
    /// `updated` is a string or a boolean that `float()` reads.
    UpdatedNotNumber,
    /// A member name repeats (the last value counts).
    DuplicateMember,
    /// A work record whose payload does not hash to its id.
    PayloadHash,
    /// A target record whose id is not `sha256("target:<target>")`, or
    /// whose `target` is not in `targets`.
    TargetId,
    /// A target record in `committing` or `done`, which upstream never
    /// writes (it treats it as free and overwrites it).
    TargetStatus,
}

impl Oddity {
    /// In words.
    pub fn describe(self) -> &'static str {
        match self {
            Oddity::SchemaNotInteger => "its schema is not the integer 1 (upstream accepts it)",
            Oddity::UpdatedNotNumber => {
                "its updated time is not a number but a value float() reads (upstream accepts it)"
            }
            Oddity::DuplicateMember => "a member name repeats; the last value counts",
            Oddity::PayloadHash => {
                "its payload does not hash to its id (upstream never checks; not written by the AFL master)"
            }
            Oddity::TargetId => {
                "its id is not the hash of its target, or its target is not in its group"
            }
            Oddity::TargetStatus => {
                "a target record in a status upstream never writes for targets (treated as free)"
            }
        }
    }
}

/// Which table a record is read for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TableKind {
    /// `FencedWorkLeaseTable`: one record per dispatch.
    Work,
    /// `FencedTargetLeaseTable`: one record per branch target of a group.
    Target,
}

impl TableKind {
    /// `work` or `target`.
    pub fn as_str(self) -> &'static str {
        match self {
            TableKind::Work => "work",
            TableKind::Target => "target",
        }
    }
}

/// A record upstream accepts, with what the reports show of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Its status.
    pub status: Status,
    /// `float(updated)`: finite and non-negative.
    pub updated: f64,
    /// `str(owner)`, when present.
    pub owner: Option<String>,
    /// `str(previous_owner)`, when present and not empty.
    pub previous_owner: Option<String>,
    /// `str(worker)`, when present.
    pub worker: Option<String>,
    /// The fencing token.
    pub token: String,
    /// `str(attempts)` and `str(steals)`, when present.
    pub attempts: Option<String>,
    /// See `attempts`.
    pub steals: Option<String>,
    /// `float(completed)`, when it reads as one.
    pub completed: Option<f64>,
    /// Whether a `commit` manifest is present (only the standalone
    /// frontend writes one).
    pub has_commit: bool,
    /// The payload's `path`, when it is a string.
    pub path: Option<String>,
    /// Whether the payload has a `continuation` that is not null.
    pub continuation: bool,
    /// A target record's `target`, as text.
    pub target: Option<String>,
    /// What is odd about it.
    pub oddities: Vec<Oddity>,
}

/// What upstream's reader makes of a record file's bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum Reading {
    /// Accepted.
    Valid(Box<Record>),
    /// Rejected: `_read_record` returns `None` or `_valid_record` is false.
    Rejected(Rejection),
    /// The reader raises.
    Raises(Raises),
}

impl Reading {
    /// The record, when accepted.
    pub fn valid(&self) -> Option<&Record> {
        match self {
            Reading::Valid(r) => Some(r),
            _ => None,
        }
    }
}

/// Reads the bytes of `<id>.json` as upstream's `_read_record` and
/// `_valid_record` do, through the Python-compatible parser: any bytes.
/// What `engine::table::read` falls back on, and the reference its fast
/// path is checked against.
pub fn read_general(bytes: &[u8], id: &WorkId, kind: TableKind) -> Reading {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Reading::Rejected(Rejection::InvalidUtf8);
    };
    if text.is_empty() {
        return Reading::Rejected(Rejection::Empty);
    }
    let parsed = match json::parse(text, Mode::Snapshot) {
        Ok(parsed) => parsed,
        Err(e) => {
            return match e.kind {
                ParseErrorKind::Bom => Reading::Rejected(Rejection::Bom),
                ParseErrorKind::TooDeep => Reading::Raises(Raises::RecursionError),
                _ => Reading::Rejected(Rejection::NotJson(e.to_string())),
            };
        }
    };
    let Value::Object(object) = &parsed.value else {
        return Reading::Rejected(Rejection::NotAnObject);
    };
    let schema = object.get("schema");
    let schema_ok = match schema {
        Some(Value::Int(i)) => i.to_u64() == Some(1),
        Some(Value::Bool(b)) => *b,
        Some(Value::Float(f)) => *f == 1.0,
        _ => false,
    };
    if !schema_ok {
        return Reading::Rejected(Rejection::Schema);
    }
    let hex = id.to_hex();
    if !matches!(object.get("id"), Some(Value::Str(s)) if *s == *hex.as_str()) {
        return Reading::Rejected(Rejection::IdMismatch);
    }
    let status = match object.get("status") {
        Some(Value::Array(_) | Value::Object(_)) => return Reading::Raises(Raises::TypeError),
        Some(Value::Str(s)) if *s == *"leased" => Status::Leased,
        Some(Value::Str(s)) if *s == *"committing" => Status::Committing,
        Some(Value::Str(s)) if *s == *"done" => Status::Done,
        _ => return Reading::Rejected(Rejection::Status),
    };
    let Some(Value::Object(payload)) = object.get("payload") else {
        return Reading::Rejected(Rejection::Payload);
    };
    let token = match object.get("token") {
        Some(Value::Str(s)) if !s.as_bytes().is_empty() => s.to_string_lossy(),
        _ => return Reading::Rejected(Rejection::Token),
    };
    let Some(updated) = object.get("updated").and_then(timestamp) else {
        return Reading::Rejected(Rejection::Updated);
    };
    if !matches!(object.get("commit"), None | Some(Value::Object(_))) {
        return Reading::Rejected(Rejection::Commit);
    }
    let text_of = |key: &str| object.get(key).map(json::py_str);
    let mut oddities = Vec::new();
    if !matches!(schema, Some(Value::Int(_))) {
        oddities.push(Oddity::SchemaNotInteger);
    }
    if !matches!(object.get("updated"), Some(Value::Int(_) | Value::Float(_))) {
        oddities.push(Oddity::UpdatedNotNumber);
    }
    if parsed.stats.duplicate_members > 0 {
        oddities.push(Oddity::DuplicateMember);
    }
    let target = text_of("target");
    match kind {
        TableKind::Work => {
            let payload_value = Value::Object(payload.clone());
            let hashes = json::to_canonical(&payload_value, NonFinite::Refuse)
                .is_ok_and(|bytes| WorkId::of_canonical(&bytes) == *id);
            if !hashes {
                oddities.push(Oddity::PayloadHash);
            }
        }
        TableKind::Target => {
            let number = object.get("target").and_then(|t| match t {
                Value::Int(i) => i.to_u64(),
                _ => None,
            });
            let in_group = matches!(object.get("targets"), Some(Value::Array(items))
                if items.iter().any(|v| Some(v) == object.get("target")));
            if number.is_none_or(|n| target_id(n) != *id) || !in_group {
                oddities.push(Oddity::TargetId);
            }
            if status != Status::Leased {
                oddities.push(Oddity::TargetStatus);
            }
        }
    }
    let path = match payload.get("path") {
        Some(Value::Str(s)) => Some(s.to_string_lossy()),
        _ => None,
    };
    Reading::Valid(Box::new(Record {
        status,
        updated,
        owner: text_of("owner"),
        previous_owner: text_of("previous_owner").filter(|o| !o.is_empty()),
        worker: text_of("worker"),
        token,
        attempts: text_of("attempts"),
        steals: text_of("steals"),
        completed: object.get("completed").and_then(timestamp),
        has_commit: object.get("commit").is_some(),
        path,
        continuation: payload
            .get("continuation")
            .is_some_and(|c| !matches!(c, Value::Null)),
        target,
        oddities,
    }))
}

/// Upstream's `_timestamp`: `float(value)`, finite and not negative.
pub fn timestamp(value: &Value) -> Option<f64> {
    json::py_float(value)
        .ok()
        .filter(|t| t.is_finite() && *t >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::read_general as read;
    use super::*;

    fn id() -> WorkId {
        super::super::names::parse_id(&"ab".repeat(32)).unwrap()
    }

    fn record(members: &str) -> String {
        format!(
            "{{\"schema\":1,\"id\":\"{}\",\"payload\":{{\"path\":\"/q/a\"}},\"token\":\"h:1:2:3\",{members}}}\n",
            "ab".repeat(32)
        )
    }

    fn rejected(text: &str) -> Option<Rejection> {
        match read(text.as_bytes(), &id(), TableKind::Work) {
            Reading::Rejected(r) => Some(r),
            _ => None,
        }
    }

    #[test]
    fn upstream_rejections_in_order() {
        assert_eq!(rejected(""), Some(Rejection::Empty));
        assert_eq!(rejected("\u{feff}{}"), Some(Rejection::Bom));
        assert!(matches!(
            rejected("{\"schema\":"),
            Some(Rejection::NotJson(_))
        ));
        assert_eq!(rejected("[]"), Some(Rejection::NotAnObject));
        assert_eq!(rejected("{}"), Some(Rejection::Schema));
        assert_eq!(
            rejected(&record("\"status\":\"gone\",\"updated\":1")),
            Some(Rejection::Status)
        );
        assert_eq!(
            rejected(&record("\"status\":\"leased\",\"updated\":NaN")),
            Some(Rejection::Updated)
        );
        assert_eq!(
            rejected(&record("\"status\":\"leased\",\"updated\":-1")),
            Some(Rejection::Updated)
        );
        assert_eq!(
            rejected(&record("\"status\":\"leased\",\"updated\":1,\"commit\":[]")),
            Some(Rejection::Commit)
        );
        assert_eq!(
            read(b"\xff", &id(), TableKind::Work),
            Reading::Rejected(Rejection::InvalidUtf8)
        );
    }

    #[test]
    fn what_upstream_accepts_and_what_raises() {
        let odd = record("\"status\":\"leased\",\"updated\":\"17.5\",\"schema\":true");
        let Reading::Valid(r) = read(odd.as_bytes(), &id(), TableKind::Work) else {
            panic!("accepted upstream");
        };
        assert_eq!(r.updated, 17.5);
        assert_eq!(
            r.oddities,
            [
                Oddity::SchemaNotInteger,
                Oddity::UpdatedNotNumber,
                Oddity::DuplicateMember,
                Oddity::PayloadHash
            ]
        );
        let poison = record("\"status\":[],\"updated\":1");
        assert_eq!(
            read(poison.as_bytes(), &id(), TableKind::Work),
            Reading::Raises(Raises::TypeError)
        );
        let deep = format!("{}{}", "[".repeat(2000), "]".repeat(2000));
        assert_eq!(
            read(deep.as_bytes(), &id(), TableKind::Work),
            Reading::Raises(Raises::RecursionError)
        );
    }
}
