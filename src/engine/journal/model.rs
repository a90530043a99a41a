//! The journal's data model: what a line is ([`Classified`], [`LineKind`],
//! [`Record`], [`Op`], [`Lease`] and why a lease or a line is refused), what
//! replaying a record did ([`Effect`]), what the replay holds of an active
//! lease ([`Active`]) and of a completion ([`Completion`]), and why a line
//! changed nothing ([`IgnoreReason`]). Types and their words only; the
//! rules that produce them live in `classify` (one line) and `replay` (the
//! state machine), and the sets that hold them in `idset`. `Active` and
//! `Completion` are here rather than in `replay` because both `replay` and
//! `idset` use them, and `replay` uses `idset`.

use std::fmt;

use serde::Serialize;

use super::id::{VerifiedId, WorkId};
use super::lines::Terminator;
use crate::engine::json::{ParseError, ParseErrorKind, PyInt};

/// The clock domain of a lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// `"clock":"unix"`: `time` is Unix seconds (F314).
    Unix,
    /// No marker, or `"clock":"legacy"`: `time` is a monotonic reading from
    /// some earlier boot.
    Legacy,
}

impl Clock {
    /// The marker's JSON string.
    pub fn as_str(self) -> &'static str {
        match self {
            Clock::Unix => "unix",
            Clock::Legacy => "legacy",
        }
    }
}

/// The `clock` member of a record as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockMarker {
    /// No `clock` member (pre-F314).
    Absent,
    /// `"unix"`
    Unix,
    /// `"legacy"`
    Legacy,
    /// Anything else (upstream refuses such a lease).
    Other,
}

/// Why a line does not parse as JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CorruptReason {
    /// The first line starts with a UTF-8 BOM.
    Bom,
    /// A member name repeats (at any depth).
    DuplicateMember(String),
    /// `NaN`, `Infinity` or `-Infinity`.
    NonFinite(&'static str),
    /// Nested beyond the parser's limit.
    TooDeep,
    /// An integer beyond Python's 4300-digit limit.
    IntegerTooLong,
    /// Any other syntax error.
    Syntax(String),
}

impl From<ParseError> for CorruptReason {
    fn from(e: ParseError) -> Self {
        match e.kind {
            ParseErrorKind::Bom => CorruptReason::Bom,
            ParseErrorKind::DuplicateMember(k) => CorruptReason::DuplicateMember(k),
            ParseErrorKind::NonFinite(t) => CorruptReason::NonFinite(t),
            ParseErrorKind::TooDeep => CorruptReason::TooDeep,
            ParseErrorKind::IntegerTooLong => CorruptReason::IntegerTooLong,
            ParseErrorKind::Syntax(_) => CorruptReason::Syntax(e.to_string()),
        }
    }
}

impl fmt::Display for CorruptReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorruptReason::Bom => write!(f, "starts with a UTF-8 byte order mark"),
            CorruptReason::DuplicateMember(k) => write!(f, "duplicate member {k:?}"),
            CorruptReason::NonFinite(t) => write!(f, "non-finite constant {t}"),
            CorruptReason::TooDeep => write!(f, "nested too deeply"),
            CorruptReason::IntegerTooLong => write!(f, "integer longer than 4300 digits"),
            CorruptReason::Syntax(m) => write!(f, "not JSON: {m}"),
        }
    }
}

/// A lease field that upstream reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    /// `payload`
    Payload,
    /// `worker`
    Worker,
    /// `time`
    Time,
    /// `attempts`
    Attempts,
    /// `clock`
    Clock,
}

impl Field {
    /// The JSON member name.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Payload => "payload",
            Field::Worker => "worker",
            Field::Time => "time",
            Field::Attempts => "attempts",
            Field::Clock => "clock",
        }
    }
}

/// Why upstream ignores a lease line that has a valid id.
#[derive(Clone, Debug, PartialEq)]
pub enum LeaseRejection {
    /// `payload` is missing or not an object.
    PayloadNotObject,
    /// The payload holds a float that overflowed to infinity: upstream's
    /// `work_id()` raises.
    PayloadNotFinite,
    /// The payload hashes to another id (a spliced record).
    PayloadMismatch {
        /// The id the payload really has.
        computed: WorkId,
    },
    /// A field upstream refuses.
    Field {
        /// Which field.
        field: Field,
        /// Why, in words.
        why: String,
    },
}

impl fmt::Display for LeaseRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseRejection::PayloadNotObject => write!(f, "payload is missing or not an object"),
            LeaseRejection::PayloadNotFinite => {
                write!(f, "payload holds a number that overflows to infinity")
            }
            LeaseRejection::PayloadMismatch { computed } => {
                write!(f, "payload hashes to {computed}, not to the record's id")
            }
            LeaseRejection::Field { field, why } => write!(f, "{}: {why}", field.as_str()),
        }
    }
}

/// A value upstream accepts only after converting it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lenient {
    /// Which field.
    pub field: Field,
    /// What was there and what upstream made of it.
    pub note: String,
}

/// A lease as upstream's replay keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Lease {
    /// The record's id, which the payload hashes to.
    pub id: VerifiedId,
    /// The worker rank (`int(worker or 0)`).
    pub worker: PyInt,
    /// The lease time (`float(time or 0.0)`), finite and ≥ 0.
    pub time: f64,
    /// `int(attempts or 1)`, ≥ 1.
    pub attempts: PyInt,
    /// The clock domain.
    pub clock: Clock,
    /// The canonical encoding of the payload (what the id hashes).
    pub payload: Payload,
    /// Values upstream coerced.
    pub lenient: Vec<Lenient>,
}

/// Where a lease's canonical payload bytes are. A line in upstream's exact
/// form already holds them, so the fast path only notes where; the general
/// path re-encodes the payload.
#[derive(Clone, Debug, PartialEq)]
pub enum Payload {
    /// Bytes `start..end` of the record's line, which are canonical as they
    /// stand.
    InLine {
        /// First byte.
        start: usize,
        /// One past the last byte.
        end: usize,
    },
    /// The canonical re-encoding.
    Encoded(std::sync::Arc<[u8]>),
}

impl Payload {
    /// The canonical bytes, given the line the record was classified from.
    pub fn bytes<'a>(&'a self, line: &'a [u8]) -> &'a [u8] {
        match self {
            Payload::InLine { start, end } => {
                debug_assert!(*end <= line.len(), "a payload read from another line");
                line.get(*start..*end).unwrap_or_default()
            }
            Payload::Encoded(bytes) => bytes,
        }
    }
}

impl Classified {
    /// The same classification with every payload copied out of `line`, so
    /// that classifications of one line by different paths compare equal
    /// (a test hook, for the checks of the fast path).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn detached(&self, line: &[u8]) -> Classified {
        let mut out = self.clone();
        if let LineKind::Record(Record {
            op: Op::Lease(Ok(lease)),
            ..
        }) = &mut out.kind
            && let Payload::InLine { .. } = lease.payload
        {
            lease.payload = Payload::Encoded(lease.payload.bytes(line).into());
        }
        out
    }
}

/// The operation of a record.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `"op":"lease"`, accepted or rejected.
    Lease(Result<Lease, LeaseRejection>),
    /// `"op":"done"`
    Done,
    /// `"op":"reclaim"`
    Reclaim,
    /// Any other value, or no `op` (shown as upstream's `str()` would).
    Unknown(String),
}

impl Op {
    /// The op's name as the record spells it: `lease`, `done`, `reclaim`,
    /// or any other op as upstream's `str()` shows it.
    pub fn name(&self) -> &str {
        match self {
            Op::Unknown(op) => op,
            known => known.known_name().unwrap_or_default(),
        }
    }

    /// The name of one of upstream's three ops, `None` for any other op:
    /// for a caller that keeps the name beyond the record's life, and so
    /// copies only another op's.
    pub fn known_name(&self) -> Option<&'static str> {
        match self {
            Op::Lease(_) => Some("lease"),
            Op::Done => Some("done"),
            Op::Reclaim => Some("reclaim"),
            Op::Unknown(_) => None,
        }
    }
}

/// A line that upstream counts as an event: a JSON object with a valid id.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The id.
    pub id: WorkId,
    /// The operation.
    pub op: Op,
    /// `time` as a finite float, when it converts to one.
    pub time: Option<f64>,
    /// The `clock` member as written.
    pub marker: ClockMarker,
    /// Members upstream does not read (compaction drops them).
    pub unknown_fields: Vec<String>,
    /// Whether the line is byte-identical to upstream's own encoding of it.
    pub canonical: bool,
    /// Whether the line is exactly what compaction writes for this record
    /// (canonical, a clock marker, a float time, no unknown member, nothing
    /// coerced), so that compaction can copy it as it stands.
    pub verbatim: bool,
}

/// What a line is, judged on its own.
#[derive(Clone, Debug, PartialEq)]
pub enum LineKind {
    /// Only whitespace.
    Blank,
    /// Not JSON.
    Corrupt {
        /// Why it does not parse.
        reason: CorruptReason,
        /// A complete record glued after a torn fragment, with the byte
        /// offset (within the line) where it starts.
        glued: Option<(usize, Box<Record>)>,
    },
    /// JSON, but not an object.
    NotAnObject,
    /// An object whose `id` is missing or not 64 lowercase hex.
    BadId,
    /// A counted record.
    Record(Record),
}

/// A line's classification with its decoding facts.
#[derive(Clone, Debug, PartialEq)]
pub struct Classified {
    /// Invalid UTF-8 bytes upstream deletes before parsing.
    pub invalid_utf8: usize,
    /// What the line is.
    pub kind: LineKind,
}

impl Classified {
    /// Why upstream ignores the line, in words (for reports); `None` for a
    /// record.
    pub fn describe_ignored(&self) -> Option<String> {
        match &self.kind {
            LineKind::Blank => Some("blank line".into()),
            LineKind::Corrupt { reason, glued } => Some(match glued {
                Some((at, _)) => {
                    format!("a complete record glued at byte {at} onto a torn fragment")
                }
                None => reason.to_string(),
            }),
            LineKind::NotAnObject => Some("not a JSON object".into()),
            LineKind::BadId => Some("id missing or not 64 lowercase hex".into()),
            LineKind::Record(_) => None,
        }
    }
}

/// What applying one record did to the state.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "effect", rename_all = "kebab-case")]
pub enum Effect {
    /// A lease for an id that was neither active nor completed.
    Activated,
    /// A lease for a completed id: it is active again (the work runs twice).
    Reactivated,
    /// A lease for an already active id: the new one replaces it (L1).
    TookOver {
        /// The owner it replaced.
        previous_worker: PyInt,
    },
    /// A `done` for an active id.
    Completed {
        /// The owner at completion.
        worker: PyInt,
    },
    /// A `done` for an id that is not active: upstream does nothing.
    DoneIgnored {
        /// Whether the id was already completed.
        already_completed: bool,
    },
    /// A `reclaim` for an active id.
    Reclaimed {
        /// The owner it dropped.
        worker: PyInt,
        /// The time of the lease it dropped: what a lease restored from a
        /// discard export repeats (verify's clock check).
        #[serde(skip)]
        lease_time: f64,
    },
    /// A `reclaim` for an id that is not active: upstream does nothing.
    ReclaimIgnored,
    /// A lease line upstream refuses.
    LeaseIgnored {
        /// Why.
        reason: String,
    },
    /// An op other than lease/done/reclaim.
    UnknownOp {
        /// The op.
        op: String,
    },
}

impl Effect {
    /// What the effect means, in words (inspect's and diff's histories).
    pub fn describe(&self) -> String {
        match self {
            Effect::Activated => "activated".into(),
            Effect::Reactivated => "activated again after completion (the work runs twice)".into(),
            Effect::TookOver { previous_worker } => {
                format!("took over from worker {previous_worker} without a reclaim")
            }
            Effect::Completed { worker } => format!("completed (worker {worker})"),
            Effect::DoneIgnored {
                already_completed: true,
            } => "ignored: already completed".into(),
            Effect::DoneIgnored {
                already_completed: false,
            } => "ignored: not active".into(),
            Effect::Reclaimed { worker, .. } => format!("reclaimed from worker {worker}"),
            Effect::ReclaimIgnored => "ignored: not active".into(),
            Effect::LeaseIgnored { reason } => format!("ignored: {reason}"),
            Effect::UnknownOp { op } => format!("ignored: unknown op {op:?}"),
        }
    }
}

/// An active lease as the replay holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Active {
    /// The owning worker rank.
    pub worker: PyInt,
    /// The lease time.
    pub time: f64,
    /// The attempts counter.
    pub attempts: PyInt,
    /// The clock domain.
    pub clock: Clock,
    /// 1-based line of the lease record that is in force.
    pub line: u64,
    /// Byte offset of that line.
    pub offset: u64,
    /// Canonical payload bytes. During a scan a block's new leases hold
    /// theirs in the block until the block is settled; a finished scan's
    /// replay holds every payload.
    pub payload: Box<[u8]>,
    /// Whether the lease line is exactly what compaction would write.
    pub verbatim: bool,
}

/// Where the records that completed an id are: the offsets of the lease
/// line in force at completion and of the `done` line, and whether each is
/// already in the form compaction writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Byte offset of the lease line.
    pub lease_offset: u64,
    /// Byte offset of the done line.
    pub done_offset: u64,
    /// The lease line can be copied as it stands.
    pub lease_verbatim: bool,
    /// The done line can be copied as it stands.
    pub done_verbatim: bool,
}

/// Why upstream's loader ignores a line (or why a counted record changed
/// nothing). Serialised in kebab-case; these names are part of the JSON
/// contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IgnoreReason {
    /// Only whitespace.
    Blank,
    /// The last line, unterminated and unparseable: a crash mid-append.
    TornTail,
    /// A torn fragment with a complete record glued after it.
    GluedRecord,
    /// The first line starts with a UTF-8 BOM.
    Bom,
    /// A duplicate member at some depth.
    DuplicateMember,
    /// `NaN`/`Infinity`/`-Infinity`.
    NonFiniteNumber,
    /// Nested beyond Python's recursion limit.
    TooDeep,
    /// An integer beyond Python's 4300-digit limit.
    IntegerTooLong,
    /// Any other unparseable line.
    Corrupt,
    /// JSON but not an object.
    NotAnObject,
    /// `id` missing or not 64 lowercase hex.
    BadId,
    /// A lease whose payload is missing or not an object.
    PayloadNotObject,
    /// A lease whose payload overflows a float to infinity.
    PayloadNotFinite,
    /// A lease whose payload hashes to another id.
    PayloadIdMismatch,
    /// A lease with a worker/time/attempts/clock upstream refuses.
    RejectedField,
    /// A `done` for an id that is not active.
    OrphanDone,
    /// A `reclaim` for an id that is not active.
    OrphanReclaim,
    /// An op other than lease/done/reclaim.
    UnknownOp,
}

impl IgnoreReason {
    /// The reason a line of this kind is ignored, if it is.
    pub fn of_line(classified: &Classified, terminator: Terminator) -> Option<IgnoreReason> {
        Some(match &classified.kind {
            LineKind::Blank => IgnoreReason::Blank,
            LineKind::Corrupt { glued: Some(_), .. } => IgnoreReason::GluedRecord,
            LineKind::Corrupt { .. } if terminator == Terminator::None => IgnoreReason::TornTail,
            LineKind::Corrupt { reason, .. } => match reason {
                CorruptReason::Bom => IgnoreReason::Bom,
                CorruptReason::DuplicateMember(_) => IgnoreReason::DuplicateMember,
                CorruptReason::NonFinite(_) => IgnoreReason::NonFiniteNumber,
                CorruptReason::TooDeep => IgnoreReason::TooDeep,
                CorruptReason::IntegerTooLong => IgnoreReason::IntegerTooLong,
                CorruptReason::Syntax(_) => IgnoreReason::Corrupt,
            },
            LineKind::NotAnObject => IgnoreReason::NotAnObject,
            LineKind::BadId => IgnoreReason::BadId,
            LineKind::Record(_) => return None,
        })
    }

    /// The reason a counted record had no effect, if it had none.
    pub fn of_effect(effect: &Effect, record: &Record) -> Option<IgnoreReason> {
        Some(match effect {
            Effect::LeaseIgnored { .. } => match &record.op {
                Op::Lease(Err(LeaseRejection::PayloadNotObject)) => IgnoreReason::PayloadNotObject,
                Op::Lease(Err(LeaseRejection::PayloadNotFinite)) => IgnoreReason::PayloadNotFinite,
                Op::Lease(Err(LeaseRejection::PayloadMismatch { .. })) => {
                    IgnoreReason::PayloadIdMismatch
                }
                _ => IgnoreReason::RejectedField,
            },
            Effect::DoneIgnored { .. } => IgnoreReason::OrphanDone,
            Effect::ReclaimIgnored => IgnoreReason::OrphanReclaim,
            Effect::UnknownOp { .. } => IgnoreReason::UnknownOp,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_is_named_as_its_record_spells_it() {
        for (op, name, known) in [
            (Op::Done, "done", Some("done")),
            (Op::Reclaim, "reclaim", Some("reclaim")),
            (
                Op::Lease(Err(LeaseRejection::PayloadNotObject)),
                "lease",
                Some("lease"),
            ),
            (Op::Unknown("None".into()), "None", None),
            (Op::Unknown("['done']".into()), "['done']", None),
        ] {
            assert_eq!(op.name(), name);
            assert_eq!(op.known_name(), known);
        }
    }
}
