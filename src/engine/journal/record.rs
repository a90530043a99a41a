//! What one journal line is, judged on its own: upstream's per-line rules of
//! `WorkLeaseJournal._load` (parse, shape, id, op, the lease coercions), plus
//! the diagnostics upstream does not make (why a line is ignored, which
//! values it coerces, unknown fields, glued records, canonical form).

use std::fmt;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::engine::json::{
    self, CoerceError, Mode, NonFinite, ParseError, ParseErrorKind, PyInt, Value, py_float, py_int,
    py_str_is_work_id, truthy,
};

/// A work id: the SHA-256 of a canonical payload, written as 64 lowercase
/// hex characters. Byte order equals the order of the hex strings.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkId(pub [u8; 32]);

impl WorkId {
    /// The id as four big-endian words, whose order is the bytes' order.
    #[inline]
    fn words(&self) -> [u64; 4] {
        let mut words = [0u64; 4];
        for (word, bytes) in words.iter_mut().zip(self.0.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(bytes);
            *word = u64::from_be_bytes(b);
        }
        words
    }
}

/// Byte order (the order of the hex strings), compared a word at a time:
/// sorting millions of ids with a byte-slice comparison spends most of its
/// time calling `memcmp`.
impl Ord for WorkId {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.words().cmp(&other.words())
    }
}

impl PartialOrd for WorkId {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl WorkId {
    /// The id of a canonical payload encoding.
    pub fn of_canonical(bytes: &[u8]) -> WorkId {
        WorkId(Sha256::digest(bytes).into())
    }

    /// Parses 64 lowercase hex characters.
    pub fn parse_hex(text: &str) -> Option<WorkId> {
        py_str_is_work_id(&Value::Str(text.into())).map(WorkId)
    }

    /// The 64-character hex form.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// Whether the hex form starts with `prefix` (lowercase hex).
    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.hex_bytes().starts_with(prefix.as_bytes())
    }
}

impl WorkId {
    /// The hex form in a stack buffer.
    #[inline]
    pub fn hex_bytes(&self) -> [u8; 64] {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            self.hex_bytes_sse2()
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        {
            self.hex_bytes_scalar()
        }
    }

    /// [`WorkId::hex_bytes`] a byte at a time: the reference for the SSE2
    /// version, and what other CPUs run.
    #[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
    fn hex_bytes_scalar(&self) -> [u8; 64] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 64];
        for (i, b) in self.0.iter().enumerate() {
            out[2 * i] = HEX[usize::from(b >> 4)];
            out[2 * i + 1] = HEX[usize::from(b & 0xF)];
        }
        out
    }

    /// [`WorkId::hex_bytes`] sixteen bytes at a time (the state digest
    /// writes millions of ids).
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    fn hex_bytes_sse2(&self) -> [u8; 64] {
        use std::arch::x86_64::{
            __m128i, _mm_add_epi8, _mm_and_si128, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_set1_epi8,
            _mm_srli_epi16, _mm_storeu_si128, _mm_unpackhi_epi8, _mm_unpacklo_epi8,
        };
        let mut out = [0u8; 64];
        // SAFETY: this build has SSE2 (the cfg); each load reads sixteen
        // of the id's 32 bytes and each store writes sixteen of `out`'s 64.
        unsafe {
            let low_nibble = _mm_set1_epi8(0x0F);
            // 0-9 to '0'-'9', 10-15 to 'a'-'f'.
            let ascii = |n: __m128i| {
                let letters = _mm_and_si128(_mm_cmpgt_epi8(n, _mm_set1_epi8(9)), _mm_set1_epi8(39));
                _mm_add_epi8(_mm_add_epi8(n, _mm_set1_epi8(b'0' as i8)), letters)
            };
            for half in 0..2 {
                let v = _mm_loadu_si128(self.0.as_ptr().add(16 * half).cast::<__m128i>());
                let high = _mm_and_si128(_mm_srli_epi16(v, 4), low_nibble);
                let low = _mm_and_si128(v, low_nibble);
                // Each byte's high digit first.
                let first = _mm_unpacklo_epi8(high, low);
                let second = _mm_unpackhi_epi8(high, low);
                let at = out.as_mut_ptr().add(32 * half);
                _mm_storeu_si128(at.cast::<__m128i>(), ascii(first));
                _mm_storeu_si128(at.add(16).cast::<__m128i>(), ascii(second));
            }
        }
        out
    }
}

impl fmt::Display for WorkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.hex_bytes();
        // Hex digits are ASCII.
        f.write_str(std::str::from_utf8(&hex).unwrap_or_default())
    }
}

impl fmt::Debug for WorkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WorkId({self})")
    }
}

impl Serialize for WorkId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let hex = self.hex_bytes();
        // Hex digits are ASCII.
        s.serialize_str(std::str::from_utf8(&hex).unwrap_or_default())
    }
}

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
    /// that classifications of one line by different paths compare equal.
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

const LEASE_FIELDS: [&str; 7] = ["attempts", "clock", "id", "op", "payload", "time", "worker"];
const MARKER_FIELDS: [&str; 4] = ["clock", "id", "op", "time"];

/// How far back from the end of a corrupt line a glued record may start,
/// and how many starts are tried: bounds the work on hostile lines.
const GLUE_WINDOW: usize = 16 << 20;

/// Lines longer than this are validated before they are parsed.
const HUGE_LINE: usize = 16 << 20;
const GLUE_CANDIDATES: usize = 16;

/// Classifies one line (without its terminator): the fast path for lines
/// in upstream's exact form, the general path for everything else.
pub fn classify(content: &[u8]) -> Classified {
    super::fast::classify(content).unwrap_or_else(|| classify_general(content))
}

/// The fast path alone: `Some` only for a line in upstream's exact form
/// (for tests and fuzzing, which check it against [`classify_general`]).
pub fn classify_fast(content: &[u8]) -> Option<Classified> {
    super::fast::classify(content)
}

/// Classifies any line with the general parser (the reference the fast
/// path is tested against).
pub fn classify_general(content: &[u8]) -> Classified {
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
    let computed = WorkId::of_canonical(&payload);
    if computed != id {
        return Err(LeaseRejection::PayloadMismatch { computed });
    }
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

    #[test]
    fn ids_write_the_same_hex_on_every_path() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for n in 0..5000u32 {
            let mut b = [0u8; 32];
            for chunk in b.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes());
            }
            if n < 256 {
                // Every byte value at both ends of each half.
                for at in [0, 15, 16, 31] {
                    b[at] = n as u8;
                }
            }
            let id = WorkId(b);
            assert_eq!(id.hex_bytes(), id.hex_bytes_scalar());
            let hex: String = b.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(id.to_hex(), hex);
        }
    }

    #[test]
    fn ids_order_as_their_bytes_and_hex_do() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut ids = Vec::new();
        for n in 0..3000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut b = [0u8; 32];
            // Ids that share a long prefix and differ in one late byte,
            // or in a byte whose top bit is set, as well as random ones.
            match n % 3 {
                0 => b
                    .iter_mut()
                    .zip(x.to_le_bytes().iter().cycle())
                    .for_each(|(d, s)| *d = *s),
                1 => b[(x % 32) as usize] = (x >> 8) as u8,
                _ => b[31] = x as u8 | 0x80,
            }
            ids.push(WorkId(b));
        }
        for pair in ids.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert_eq!(a.cmp(&b), a.0.cmp(&b.0));
            assert_eq!(a.cmp(&b), a.to_hex().cmp(&b.to_hex()));
            assert_eq!(a.partial_cmp(&b), Some(a.0.cmp(&b.0)));
        }
        let mut by_words = ids.clone();
        by_words.sort_unstable();
        let mut by_bytes = ids;
        by_bytes.sort_unstable_by_key(|a| a.0);
        assert!(by_words == by_bytes);
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
