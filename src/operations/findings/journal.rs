//! The checks of a journal: each line as upstream's loader takes it, the
//! replay, the tail, and resume's forecast of the leases still active.
//!
//! Each line upstream's loader ignores yields exactly one finding saying why
//! (see [`ignore_code`]); protocol checks (F314 L1, L2, L4, L5, L6) run on
//! the replay.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::Settings;
use super::catalog::{At, Code, Findings, Id, Severity};
use crate::engine::journal::compaction::{DroppedLines, Measured, Plan};
use crate::engine::journal::{
    self, Clock, ClockMarker, CorruptReason, Effect, Forecast, IgnoreReason, LeaseRejection,
    LineEvent, LineKind, Observer, Op, Replay, Summary, Terminator, WorkId,
};
use crate::engine::json::PyInt;
use crate::operations::numbers::{count, plural, plural_unseparated};
use crate::store::error::InputError;
use crate::store::format;
use crate::store::progress::Progress;
use crate::store::read;

/// The code of the finding that explains why upstream ignored a line.
pub fn ignore_code(reason: IgnoreReason) -> Code {
    match reason {
        IgnoreReason::Blank => Code::BlankLine,
        IgnoreReason::TornTail => Code::TornTail,
        IgnoreReason::GluedRecord => Code::GluedRecord,
        IgnoreReason::Bom => Code::Bom,
        IgnoreReason::DuplicateMember => Code::DuplicateMember,
        IgnoreReason::NonFiniteNumber | IgnoreReason::PayloadNotFinite => Code::NonFiniteNumber,
        IgnoreReason::TooDeep | IgnoreReason::IntegerTooLong | IgnoreReason::Corrupt => {
            Code::CorruptLine
        }
        IgnoreReason::NotAnObject => Code::NotAnObject,
        IgnoreReason::BadId => Code::BadId,
        IgnoreReason::PayloadNotObject | IgnoreReason::RejectedField => Code::RejectedField,
        IgnoreReason::PayloadIdMismatch => Code::PayloadIdMismatch,
        IgnoreReason::OrphanDone => Code::OrphanDone,
        IgnoreReason::OrphanReclaim => Code::OrphanReclaim,
        IgnoreReason::UnknownOp => Code::UnknownOp,
    }
}

/// Whether any invalid byte of `raw` sits inside a JSON string (where its
/// deletion changes a value).
fn invalid_bytes_inside_string(raw: &[u8]) -> bool {
    let mut in_string = false;
    let mut escaped = false;
    let mut invalid_at = Vec::new();
    let mut pos = 0;
    for chunk in raw.utf8_chunks() {
        pos += chunk.valid().len();
        invalid_at.push(pos..pos + chunk.invalid().len());
        pos += chunk.invalid().len();
    }
    let mut ranges = invalid_at.into_iter().filter(|r| !r.is_empty()).peekable();
    for (i, &b) in raw.iter().enumerate() {
        while ranges.peek().is_some_and(|r| r.end <= i) {
            ranges.next();
        }
        if ranges.peek().is_some_and(|r| r.contains(&i)) {
            if in_string {
                return true;
            }
            continue;
        }
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        }
    }
    false
}

/// The order of a journal's unix times, as its appends keep it.
///
/// A compaction (upstream's, or this tool's) writes the active leases
/// sorted by id, each with the time it was leased at, so their times are
/// in no order, and older than the records before them. Such a block is a
/// run of leases of new ids in strictly ascending id order that begins
/// while no lease is active (at the start of the file, or after the
/// completed ids this tool's compaction keeps). Its leases are not judged
/// by the clock; the first record after it must not fall behind any time
/// before it or in it (what is appended after a compaction is appended
/// later). A clock that steps back between appends is still found: at the
/// first record outside such a run, which on a running campaign is the
/// next `done` or `reclaim`.
///
/// Work brought back from a discard export (`leasejournal restore`) is
/// appended as the very lease that was reclaimed, with the time it was
/// first leased at. A lease that repeats, with the same time and worker
/// (and, its id being the payload's hash, the same payload), the lease a
/// reclaim dropped earlier is such work: it is not judged by the clock
/// either, and it does not become the latest time, so the record after it
/// is judged against the latest time before it.
#[derive(Default)]
struct ClockOrder {
    /// The time of the latest record outside a block.
    last: Option<f64>,
    /// Leases active now.
    active: u64,
    /// The block of sorted leases being read, if any.
    block: Option<SortedBlock>,
    /// The lease each reclaimed id had when its last reclaim dropped it,
    /// until the id is leased or completed again: a fingerprint of its
    /// time and worker, keyed by the id's first eight bytes. Sixteen bytes
    /// an id rather than eighty, on journals that reclaim millions; a false
    /// match needs two 64-bit collisions at once.
    reclaimed: HashMap<u64, u64>,
}

/// A run of leases sorted by id ([`ClockOrder`]).
struct SortedBlock {
    /// The id of its latest lease.
    last_id: WorkId,
    /// The latest time before it or in it.
    latest: f64,
}

impl ClockOrder {
    /// Whether `lease` (the id of a lease of a new id, or `None` for any
    /// other record) starts or continues a block of sorted leases.
    fn in_block(&self, lease: Option<WorkId>) -> bool {
        match (&self.block, lease) {
            (Some(block), Some(id)) => id > block.last_id,
            (None, Some(_)) => self.active == 0,
            (_, None) => false,
        }
    }

    /// The earlier time that `t` falls behind by more than `skew`, if any.
    fn regression(&self, t: f64, lease: Option<WorkId>, skew: f64) -> Option<f64> {
        if self.in_block(lease) {
            return None;
        }
        let previous = match &self.block {
            Some(block) => Some(block.latest),
            None => self.last,
        };
        previous.filter(|prev| t < prev - skew)
    }

    /// Takes in a record's time.
    fn advance(&mut self, t: f64, lease: Option<WorkId>) {
        if let Some(id) = lease
            && self.in_block(lease)
        {
            let latest = match (&self.block, self.last) {
                (Some(block), _) => block.latest,
                (None, Some(last)) => last,
                (None, None) => t,
            };
            self.block = Some(SortedBlock {
                last_id: id,
                latest: latest.max(t),
            });
            return;
        }
        self.block = None;
        self.last = Some(t);
    }

    /// Takes in what a line did to the active leases.
    fn count(&mut self, event: &LineEvent<'_>) {
        let id = match &event.classified.kind {
            LineKind::Record(record) => Some(id_key(&record.id)),
            _ => None,
        };
        match event.effect {
            Some(Effect::Activated | Effect::Reactivated) => {
                self.active += 1;
                self.forget(id);
            }
            Some(Effect::Completed { .. }) => {
                self.active = self.active.saturating_sub(1);
                self.forget(id);
            }
            Some(Effect::Reclaimed { worker, lease_time }) => {
                self.active = self.active.saturating_sub(1);
                if let Some(id) = id {
                    self.reclaimed.insert(id, lease_key(*lease_time, worker));
                }
            }
            _ => {}
        }
    }

    /// An id leased or completed again: a later lease of it no longer
    /// repeats the one its reclaim dropped.
    fn forget(&mut self, id: Option<u64>) {
        if let Some(id) = id {
            self.reclaimed.remove(&id);
        }
    }

    /// Whether the line is a lease that repeats the lease a reclaim of its
    /// id dropped: work restored from a discard export.
    fn restored(&self, event: &LineEvent<'_>) -> bool {
        match (&event.classified.kind, event.effect) {
            (LineKind::Record(record), Some(Effect::Activated)) => match &record.op {
                Op::Lease(Ok(lease)) => self
                    .reclaimed
                    .get(&id_key(&record.id))
                    .is_some_and(|&key| key == lease_key(lease.time, &lease.worker)),
                _ => false,
            },
            _ => false,
        }
    }
}

/// The first eight bytes of an id (a SHA-256: evenly spread already).
fn id_key(id: &WorkId) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&id.0[..8]);
    u64::from_le_bytes(bytes)
}

/// A fingerprint of a lease's time and worker.
fn lease_key(time: f64, worker: &PyInt) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    time.to_bits().hash(&mut h);
    worker.hash(&mut h);
    h.finish()
}

/// The id of a lease that activated a new id: what a sorted block is made
/// of.
fn new_lease(event: &LineEvent<'_>) -> Option<WorkId> {
    match (&event.classified.kind, event.effect) {
        (LineKind::Record(record), Some(Effect::Activated)) => Some(record.id),
        _ => None,
    }
}

struct JournalChecks<'s> {
    settings: &'s Settings,
    file: String,
    deferred: bool,
    findings: Findings,
    clock: ClockOrder,
    /// Where the first line that is no record at all is (not JSON, not an
    /// object, no valid id): what `not-a-journal` points at.
    first_junk: Option<(u64, u64)>,
    /// Take the shortcut for plain records ([`JournalChecks::plain_unix_time`]);
    /// off only to check that the shortcut changes nothing.
    shortcut: bool,
}

impl Observer for JournalChecks<'_> {
    fn line(&mut self, event: &LineEvent<'_>) {
        self.check(event);
        self.clock.count(event);
        if self.first_junk.is_none()
            && matches!(
                event.classified.kind,
                LineKind::Corrupt { glued: None, .. } | LineKind::NotAnObject | LineKind::BadId
            )
        {
            self.first_junk = Some((event.number, event.offset));
        }
    }
}

impl JournalChecks<'_> {
    /// The checks of one line.
    fn check(&mut self, event: &LineEvent<'_>) {
        // Every check below must either pass on a plain record or be
        // repeated in `plain_unix_time`'s conditions.
        if self.shortcut
            && let Some(t) = self.plain_unix_time(event)
        {
            // Nearly every line: only the clock can be wrong.
            let lease = new_lease(event);
            if self
                .clock
                .regression(t, lease, self.settings.skew)
                .is_none()
            {
                self.clock.advance(t, lease);
                return;
            }
        }
        let s = self.settings;
        let file = self.file.as_str();
        let f = &mut self.findings;
        let line = Some(event.number);
        let offset = Some(event.offset);
        let record = match &event.classified.kind {
            LineKind::Record(r) => Some(r),
            _ => None,
        };
        let id = match &event.classified.kind {
            LineKind::Record(r) => Some(Id::Work(r.id)),
            LineKind::Corrupt {
                glued: Some((_, r)),
                ..
            } => Some(Id::Work(r.id)),
            _ => None,
        };
        let at = At { line, offset, id };

        if event.classified.invalid_utf8 > 0 {
            let n = event.classified.invalid_utf8;
            if matches!(event.classified.kind, LineKind::Corrupt { .. }) {
                // Noise, or a line cut short: "between tokens" and "inside a
                // string" would describe tokens the line does not have.
                f.add(s, Code::InvalidUtf8, file, at, || {
                    format!(
                        "{} in a line that does not parse even without {}",
                        plural_unseparated(n as u64, "invalid UTF-8 byte", "invalid UTF-8 bytes"),
                        if n == 1 { "it" } else { "them" }
                    )
                });
            } else if invalid_bytes_inside_string(event.content) {
                f.add(s, Code::InvalidUtf8, file, at, || {
                    format!(
                        "{} inside a string: deleting {} changes the value",
                        plural_unseparated(n as u64, "invalid UTF-8 byte", "invalid UTF-8 bytes"),
                        if n == 1 { "it" } else { "them" }
                    )
                });
            } else {
                f.add(s, Code::InvalidUtf8, file, at, || {
                    format!(
                        "{} between tokens, deleted before parsing",
                        plural_unseparated(n as u64, "invalid UTF-8 byte", "invalid UTF-8 bytes")
                    )
                });
            }
        }

        let reason = match (event.effect, record) {
            (Some(effect), Some(record)) => IgnoreReason::of_effect(effect, record),
            _ => IgnoreReason::of_line(event.classified, event.terminator),
        };
        // A last line of nothing but NULs is zero fill, reported once by
        // the end-of-file check rather than as a torn append.
        let zero_fill = reason == Some(IgnoreReason::TornTail)
            && !event.content.is_empty()
            && event.content.iter().all(|&b| b == 0);
        if let Some(reason) = reason.filter(|_| !zero_fill) {
            // Records repair can put back: the line is then a glued record
            // (or a torn tail, or a BOM) with repair as its fix; a BOM in
            // front of no record hides nothing.
            let hidden = if matches!(event.classified.kind, LineKind::Corrupt { .. }) {
                journal::hidden_records(
                    event.content,
                    &event.classified.kind,
                    event.number == 1,
                    event.terminator == Terminator::None,
                )
            } else {
                Vec::new()
            };
            let code = match reason {
                IgnoreReason::Corrupt | IgnoreReason::TooDeep | IgnoreReason::IntegerTooLong
                    if !hidden.is_empty() =>
                {
                    Code::GluedRecord
                }
                other => ignore_code(other),
            };
            let mut message = ignored_message(event, reason);
            if !hidden.is_empty() {
                if reason == IgnoreReason::GluedRecord {
                    message = "upstream ignores the whole line".into();
                }
                message = describe_hidden(&message, &hidden);
            }
            if reason == IgnoreReason::Bom && hidden.is_empty() {
                f.push(s, code, Severity::Warning, None, file, at, || {
                    format!("{message}; no record follows it, so nothing is lost")
                });
            } else {
                f.add(s, code, file, at, || message);
            }
        }

        let Some(record) = record else { return };
        if let Op::Lease(Ok(lease)) = &record.op
            && !lease.lenient.is_empty()
        {
            f.add(s, Code::LenientField, file, at, || {
                lease
                    .lenient
                    .iter()
                    .map(|l| format!("{}: {}", l.field.as_str(), l.note))
                    .collect::<Vec<_>>()
                    .join("; ")
            });
        }
        if !record.unknown_fields.is_empty() {
            f.add(s, Code::UnknownField, file, at, || {
                format!(
                    "members upstream does not read: {}",
                    record.unknown_fields.join(", ")
                )
            });
        }
        if !record.canonical {
            f.add(s, Code::NonCanonicalEncoding, file, at, || {
                "not byte-identical to upstream's encoding of the same record".into()
            });
        }
        match event.effect {
            Some(Effect::TookOver { previous_worker }) => {
                let new = match &record.op {
                    Op::Lease(Ok(l)) => l.worker.to_string(),
                    _ => "?".into(),
                };
                f.add(s, Code::DoubleLease, file, at, || {
                    format!("leased to worker {new} while active for worker {previous_worker}: the last lease wins without a reclaim")
                });
            }
            Some(Effect::Reactivated) => f.add(s, Code::LeaseAfterDone, file, at, || {
                "leased again after it was completed".into()
            }),
            _ => {}
        }
        if self.deferred && record.op == Op::Done {
            f.add(s, Code::DeferredDone, file, at, || {
                "a done record in the deferred-dispatch journal".into()
            });
        }
        if record.marker == ClockMarker::Unix
            && let Some(t) = record.time
        {
            let lease = new_lease(event);
            let regression = self.clock.regression(t, lease, s.skew);
            // Restored work keeps the time it was first leased at: neither
            // a regression nor the latest time.
            if regression.is_some() && self.clock.restored(event) {
                return;
            }
            if let Some(prev) = regression {
                f.add(s, Code::ClockRegression, file, at, || {
                    format!(
                        "time {} is {} before {}, the latest time before it",
                        crate::engine::json::float_repr(t),
                        crate::operations::numbers::duration(prev - t),
                        crate::engine::json::float_repr(prev)
                    )
                });
            }
            self.clock.advance(t, lease);
        }
    }
    /// The time of a line that no check but the clock's can flag: a
    /// canonical, valid UTF-8 record with a unix clock and a time, nothing
    /// coerced or unknown, that leased a new id, completed or reclaimed an
    /// active one (and is not a done in the deferred journal).
    fn plain_unix_time(&self, event: &LineEvent<'_>) -> Option<f64> {
        let LineKind::Record(record) = &event.classified.kind else {
            return None;
        };
        let plain_op = match (&record.op, event.effect) {
            (Op::Lease(Ok(lease)), Some(Effect::Activated)) => lease.lenient.is_empty(),
            (Op::Done, Some(Effect::Completed { .. })) => !self.deferred,
            (Op::Reclaim, Some(Effect::Reclaimed { .. })) => true,
            _ => false,
        };
        if plain_op
            && event.classified.invalid_utf8 == 0
            && record.canonical
            && record.unknown_fields.is_empty()
            && record.marker == ClockMarker::Unix
        {
            record.time
        } else {
            None
        }
    }
}

/// Checks a journal's lines with and without the shortcut for plain
/// records and panics unless the findings agree (for the tests and the
/// fuzzer). Runs every example (`--max-examples 0`) on both clocks' edges:
/// a skew of zero. A test hook: not in a build users run.
#[cfg(any(test, feature = "test-hooks"))]
pub fn check_shortcut(data: &[u8], deferred: bool) {
    struct Both<'s>(JournalChecks<'s>, JournalChecks<'s>);
    impl Observer for Both<'_> {
        fn line(&mut self, event: &LineEvent<'_>) {
            self.0.line(event);
            self.1.line(event);
        }
    }
    let settings = Settings {
        ttl: 3600.0,
        skew: 0.0,
        max_examples: 0,
        ..Settings::at(1.9e9)
    };
    let checks = |shortcut| JournalChecks {
        settings: &settings,
        file: "journal".into(),
        deferred,
        findings: Findings::default(),
        clock: ClockOrder::default(),
        first_junk: None,
        shortcut,
    };
    let mut both = Both(checks(true), checks(false));
    journal::scan(data, &mut both).expect("reading bytes");
    let describe = |f: &Findings| format!("{:?} {:?} {:?}", f.examples, f.counts, f.by_severity);
    assert_eq!(
        describe(&both.0.findings),
        describe(&both.1.findings),
        "the shortcut for plain records changes the findings"
    );
}

fn ignored_message(event: &LineEvent<'_>, reason: IgnoreReason) -> String {
    match (&event.classified.kind, event.effect) {
        (
            LineKind::Corrupt {
                glued: Some((at, record)),
                ..
            },
            _,
        ) => format!(
            "a {} record for {} glued at byte {at} onto a torn fragment: upstream ignores both",
            record.op.name(),
            record.id
        ),
        (LineKind::Corrupt { .. }, _) if reason == IgnoreReason::TornTail => format!(
            "{} without a terminator that do not parse: a crash mid-append",
            plural(event.content.len() as u64, "byte", "bytes")
        ),
        (LineKind::Corrupt { reason, .. }, _) => match reason {
            CorruptReason::Syntax(m) => format!("not JSON: {m}"),
            other => other.to_string(),
        },
        (LineKind::Blank, _) => "blank line".into(),
        (LineKind::NotAnObject, _) => "valid JSON but not an object".into(),
        (LineKind::BadId, _) => "id missing or not 64 lowercase hex characters".into(),
        (LineKind::Record(record), Some(effect)) => match (effect, &record.op) {
            (_, Op::Lease(Err(rejection))) => match rejection {
                LeaseRejection::PayloadMismatch { computed } => {
                    format!("the payload hashes to {computed}: upstream ignores the lease")
                }
                other => format!("{other}: upstream ignores the lease"),
            },
            (
                Effect::DoneIgnored {
                    already_completed: true,
                },
                _,
            ) => "done for an id that is already completed".into(),
            (Effect::DoneIgnored { .. }, _) => "done for an id that is not active".into(),
            (Effect::ReclaimIgnored, _) => "reclaim for an id that is not active".into(),
            (Effect::UnknownOp { op }, _) => format!("unknown op {op:?}"),
            _ => String::new(),
        },
        (LineKind::Record(_), None) => String::new(),
    }
}

/// A line's message, told what records it hides.
fn describe_hidden(message: &str, hidden: &[journal::HiddenRecord]) -> String {
    use crate::engine::journal::Hidden;
    let records: Vec<String> = hidden
        .iter()
        .map(|h| {
            let how = match h.hidden {
                Hidden::Glued => "glued onto a torn fragment",
                Hidden::Bom => "behind a byte order mark",
                Hidden::ZeroFill => "followed by NUL bytes",
                Hidden::MissingNewline => "complete but for its newline",
                Hidden::Appended => "appended onto the record before it",
            };
            format!("{} {} ({how})", h.record.op.name(), h.record.id.short())
        })
        .collect();
    let what = if hidden.len() == 1 {
        "a record"
    } else {
        "records"
    };
    format!(
        "{message}; it hides {what} upstream never sees: {}",
        records.join(", ")
    )
}

/// What verifying a journal found, with the replay it reached.
pub struct JournalVerification {
    /// The findings.
    pub findings: Findings,
    /// Totals of the read.
    pub summary: Summary,
    /// The replay state.
    pub replay: Replay,
}

/// Verifies a journal. `deferred` marks `.dispatch_protocol_deferred.jsonl`.
pub fn journal(
    src: impl journal::Source,
    file: &str,
    deferred: bool,
    settings: &Settings,
) -> io::Result<JournalVerification> {
    let mut checks = JournalChecks {
        settings,
        file: file.to_string(),
        deferred,
        findings: Findings::default(),
        clock: ClockOrder::default(),
        first_junk: None,
        shortcut: true,
    };
    let scan = journal::scan(src, &mut checks)?;
    let mut findings = checks.findings;
    tail_findings(&mut findings, &scan.summary, file, settings);
    if let Some(first_junk) = checks.first_junk {
        not_a_journal(&mut findings, &scan.summary, first_junk, file, settings);
    }
    let s = settings;
    for (id, active) in scan.replay.active_sorted() {
        let at = At {
            line: Some(active.line),
            offset: Some(active.offset),
            id: Some(Id::Work(*id)),
        };
        match active.clock {
            Clock::Legacy => findings.add(s, Code::LegacyClockLease, file, at, || {
                format!(
                    "active lease of worker {} has a monotonic time ({}) from an earlier boot",
                    active.worker,
                    crate::engine::json::float_repr(active.time)
                )
            }),
            Clock::Unix => {
                let age = s.now - active.time;
                if active.time > s.now + s.skew {
                    findings.add(s, Code::FutureLease, file, at, || {
                        format!(
                            "active lease of worker {} is dated {} after now",
                            active.worker,
                            crate::operations::numbers::duration(-age)
                        )
                    });
                } else if s.ttl == 0.0 || age >= s.ttl {
                    findings.add(s, Code::ExpiredLease, file, at, || {
                        format!(
                            "active lease of worker {} is {} old (TTL {}): resume reclaims it",
                            active.worker,
                            crate::operations::numbers::duration(age.max(0.0)),
                            crate::operations::numbers::duration(s.ttl)
                        )
                    });
                }
            }
        }
    }
    Ok(JournalVerification {
        findings,
        summary: scan.summary,
        replay: scan.replay,
    })
}

/// A file that is not a journal the master wrote: lines that are not
/// records at all (not JSON, not an object, no valid id) and no record, or
/// more of them than records. The finding points at the first such line.
fn not_a_journal(
    findings: &mut Findings,
    summary: &Summary,
    (line, offset): (u64, u64),
    file: &str,
    s: &Settings,
) {
    let junk: u64 = [
        IgnoreReason::Corrupt,
        IgnoreReason::NotAnObject,
        IgnoreReason::BadId,
    ]
    .iter()
    .filter_map(|reason| summary.ignored.get(reason))
    .sum();
    let r = &summary.records;
    let records = r.lease + r.done + r.reclaim + r.other;
    if junk == 0 || junk <= records {
        return;
    }
    let at = At {
        line: Some(line),
        offset: Some(offset),
        id: None,
    };
    findings.add(s, Code::NotAJournal, file, at, || {
        format!(
            "{} of its {} {}, and it holds {}: not a lease journal the master wrote",
            count(junk),
            plural(summary.lines, "line", "lines"),
            if junk == 1 {
                "is not a record"
            } else {
                "are not records"
            },
            plural(records, "record", "records"),
        )
    });
}

/// The findings of how a journal ends: NUL bytes after its last line, a
/// last record without a newline. Both point at the last line.
fn tail_findings(findings: &mut Findings, summary: &Summary, file: &str, s: &Settings) {
    if summary.tail.zero_bytes > 0 {
        let tail = &summary.tail;
        let n = tail.zero_bytes;
        findings.add(
            s,
            Code::ZeroFilledTail,
            file,
            At {
                line: Some(summary.lines),
                offset: Some(tail.offset + tail.bytes - n),
                id: None,
            },
            || {
                format!(
                    "{} at the end of the file",
                    plural(n, "NUL byte", "NUL bytes")
                )
            },
        );
    }
    if summary.tail.state == journal::TailState::Unterminated {
        let tail = &summary.tail;
        findings.add(
            s,
            Code::UnterminatedTail,
            file,
            At {
                line: Some(summary.lines),
                offset: Some(tail.offset),
                id: None,
            },
            || {
                format!(
                    "the last record ({}) has no newline: the next append glues onto it",
                    plural(tail.bytes, "byte", "bytes")
                )
            },
        );
    }
}

/// `verify`'s checks of each line of a journal, one line at a time, for a
/// stream that gives each line the codes found on it
/// (`operations::records`). The findings that depend on the state at the
/// end of the file (the leases still active then, and resume's forecast
/// of them) are not among them; those of the tail come at the end.
pub struct LineChecks<'s> {
    checks: JournalChecks<'s>,
}

impl<'s> LineChecks<'s> {
    /// Checks of the journal `file` (`deferred`: the deferred journal).
    pub fn new(settings: &'s Settings, file: &str, deferred: bool) -> Self {
        LineChecks {
            checks: JournalChecks {
                settings,
                file: file.to_string(),
                deferred,
                findings: Findings::noting_codes(),
                clock: ClockOrder::default(),
                first_junk: None,
                shortcut: true,
            },
        }
    }

    /// Checks one line: the codes found on it, in the order found.
    pub fn line(&mut self, event: &LineEvent<'_>) -> Vec<Code> {
        self.checks.line(event);
        self.checks.findings.take_codes()
    }

    /// The codes of the tail, once the whole journal was read: they belong
    /// to its last line.
    pub fn tail(mut self, summary: &Summary) -> Vec<Code> {
        let settings = self.checks.settings;
        tail_findings(
            &mut self.checks.findings,
            summary,
            &self.checks.file,
            settings,
        );
        self.checks.findings.take_codes()
    }
}

/// Where resume looks for a relative seed path: the master's working
/// directory, here taken to be the current one.
fn relative_seed(looked_up_from: Option<&str>) -> String {
    let dir = looked_up_from.unwrap_or("the current directory");
    format!(
        " (a relative path, looked up from {dir} as the master looks it up from its own: run verify where the master runs)"
    )
}

/// The findings of resume's forecasts (`(file, forecast)` in the order
/// resume reads the journals, duplicates already marked): work it drops
/// (`seed-missing`) and work it queues twice (`requeued-twice`).
pub fn resume(
    forecasts: &[(String, crate::engine::journal::Forecast)],
    settings: &Settings,
) -> Findings {
    use crate::engine::journal::ResumeOutcome;

    let mut f = Findings::default();
    for (file, forecast) in forecasts {
        for r in &forecast.reclaims {
            let at = At {
                line: Some(r.lease.line),
                offset: Some(r.lease.offset),
                id: Some(Id::Work(r.lease.id)),
            };
            if let ResumeOutcome::Dropped { reason } = &r.outcome {
                f.add(settings, Code::SeedMissing, file, at, || {
                    let seed = match &r.item {
                        Some(item) if !item.path.starts_with('/') => {
                            relative_seed(settings.seed_dir.as_deref())
                        }
                        _ => String::new(),
                    };
                    format!(
                        "active lease of worker {}: resume reclaims it and drops its work, because {reason}{seed}",
                        r.lease.worker
                    )
                });
            }
            if let Some((other, id)) = &r.duplicate_of {
                f.add(settings, Code::RequeuedTwice, file, at, || {
                    format!(
                        "resume rebuilds it into the same work item as {} in {other}: the work is queued twice",
                        id.short()
                    )
                });
            }
        }
    }
    f
}

/// Checks one journal and forecasts what resume does with its leases
/// (seed paths looked up from the current directory); shows the reading
/// to `progress`.
pub fn check_journal(
    path: &Path,
    file: &File,
    settings: &Settings,
    progress: &dyn Progress,
) -> Result<(Findings, Forecast), InputError> {
    let shown = path.display().to_string();
    let deferred = path.file_name().is_some_and(|n| n == format::DEFERRED);
    let mut v = read::read_journal(path, file, progress, |src| {
        journal(src, &shown, deferred, settings)
    })?;
    // The forecast needs the active leases only: the completed set goes
    // first, so that the two never add up at peak.
    drop(std::mem::take(&mut v.replay.completed));
    let seeds = crate::store::table::SeedFiles::default();
    let forecast = journal::forecast(&v.replay, &v.summary.tail, settings.now, |p| {
        seeds.is_file(p)
    });
    Ok((v.findings, forecast))
}

/// The findings of resume's forecasts for a checked path's journals, in
/// the order resume reads them.
pub fn resume_findings(mut forecasts: Vec<(String, Forecast)>, settings: &Settings) -> Findings {
    let mut named: Vec<(&str, &mut Forecast)> = forecasts
        .iter_mut()
        .map(|(file, f)| (file.as_str(), f))
        .collect();
    journal::mark_duplicates(&mut named);
    resume(&forecasts, settings)
}

/// The codes whose findings depend on the state at the end of a journal:
/// what the whole file is, the leases still active then, and resume's
/// forecast of them. A stream written as the file is read cannot know them
/// ([`LineChecks`]).
pub const END_STATE: [Code; 6] = [
    Code::NotAJournal,
    Code::LegacyClockLease,
    Code::FutureLease,
    Code::ExpiredLease,
    Code::SeedMissing,
    Code::RequeuedTwice,
];

/// The end-state findings of `journals` (read in the order resume reads
/// them: resume's duplicates span them), as codes by line, one map per
/// journal. One read of each; memory is bounded by their active leases.
pub fn end_state_codes(
    journals: &[(PathBuf, File)],
    settings: &Settings,
    progress: &dyn Progress,
) -> Result<Vec<BTreeMap<u64, Vec<Code>>>, InputError> {
    // Every other code is left out, and each of these is kept.
    let settings = Settings {
        ignore: Code::ALL
            .iter()
            .copied()
            .filter(|c| !END_STATE.contains(c))
            .collect(),
        max_examples: 0,
        ..settings.clone()
    };
    let mut found = Findings::default();
    let mut forecasts = Vec::new();
    for (path, file) in journals {
        let file = file.try_clone().map_err(|e| InputError::io(path, &e))?;
        let (findings, forecast) = check_journal(path, &file, &settings, progress)?;
        found.extend(findings);
        forecasts.push((path.display().to_string(), forecast));
    }
    found.extend(resume_findings(forecasts, &settings));
    let mut maps = vec![BTreeMap::new(); journals.len()];
    for finding in found.examples {
        let file = journals
            .iter()
            .position(|(path, _)| path.display().to_string() == finding.file);
        if let (Some(file), Some(line)) = (file, finding.line) {
            maps[file]
                .entry(line)
                .or_insert_with(Vec::new)
                .push(finding.code);
        }
    }
    Ok(maps)
}

/// A compaction plan measured against the scan it came from: what it drops
/// by finding code, and the records it supersedes. The size of the result
/// is filled in as it is written.
pub fn measured(plan: Plan, summary: &Summary, hidden_dropped: usize) -> Measured {
    let mut by_code: BTreeMap<Code, u64> = BTreeMap::new();
    for (reason, lines) in &summary.ignored {
        *by_code.entry(ignore_code(*reason)).or_default() += lines;
    }
    let ignored: u64 = by_code.values().sum();
    let read = summary.lines.saturating_sub(ignored);
    let forgotten = 2 * plan.completed_dropped as u64;
    Measured {
        superseded: read.saturating_sub(plan.records_after + forgotten),
        dropped: by_code
            .into_iter()
            .map(|(code, lines)| DroppedLines {
                code: code.as_str(),
                lines,
            })
            .collect(),
        plan,
        bytes_after: 0,
        unchanged: false,
        hidden_dropped,
        needs: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_bytes_inside_and_outside_strings() {
        assert!(invalid_bytes_inside_string(b"{\"a\":\"x\xffy\"}"));
        assert!(!invalid_bytes_inside_string(b"{\"a\":\xff\"xy\"}"));
        assert!(!invalid_bytes_inside_string(b"{\"a\\\"\":1,\xff\"b\":2}"));
    }
}
