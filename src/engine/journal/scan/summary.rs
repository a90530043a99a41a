//! What a scan totals: counted records by op and clock, ignored lines by
//! reason, invalid UTF-8, coerced and non-canonical records, and how the
//! file ends. Filled one line at a time, in file order, by the scan.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::journal::lines::{Span, Terminator};
use crate::engine::journal::model::{Classified, ClockMarker, IgnoreReason, LineKind, Op, Record};

/// Counted records by op.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpCounts {
    /// `lease` records (accepted or not).
    pub lease: u64,
    /// `done` records.
    pub done: u64,
    /// `reclaim` records.
    pub reclaim: u64,
    /// Records with any other op.
    pub other: u64,
}

/// Clock markers on counted records.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClockCounts {
    /// `"clock":"unix"`.
    pub unix: u64,
    /// `"clock":"legacy"` (written by compaction for a legacy lease).
    pub legacy: u64,
    /// No marker (pre-F314 records).
    pub unmarked: u64,
    /// Any other value (upstream refuses such a lease).
    pub other: u64,
}

/// How the file ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TailState {
    /// The file is empty.
    Empty,
    /// The last line is terminated.
    Clean,
    /// The last line has no terminator and does not parse: a crash
    /// mid-append. Upstream ignores it, and its next append glues onto it.
    Torn,
    /// The last line has no terminator but parses: upstream reads it, and
    /// its next append glues onto it.
    Unterminated,
}

/// The end of the file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tail {
    /// The state.
    pub state: TailState,
    /// Bytes of the unterminated last line (0 when clean).
    pub bytes: u64,
    /// Byte offset where the unterminated last line starts.
    pub offset: u64,
    /// NUL bytes at the very end of the file (a zero-filled tail).
    pub zero_bytes: u64,
}

/// Totals of a scan.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// File size in bytes.
    pub bytes: u64,
    /// Lines, as upstream splits them.
    pub lines: u64,
    /// Counted records by op.
    pub records: OpCounts,
    /// Clock markers on counted records.
    pub clocks: ClockCounts,
    /// Lease records upstream accepted.
    pub leases_accepted: u64,
    /// Lines that changed nothing, by reason.
    pub ignored: BTreeMap<IgnoreReason, u64>,
    /// Lines holding invalid UTF-8.
    pub invalid_utf8_lines: u64,
    /// Invalid UTF-8 bytes upstream deletes.
    pub invalid_utf8_bytes: u64,
    /// Accepted leases whose values upstream coerced.
    pub lenient_leases: u64,
    /// Records carrying members upstream does not read.
    pub records_with_unknown_fields: u64,
    /// Records not byte-identical to upstream's encoding of them.
    pub non_canonical_records: u64,
    /// Earliest and latest time among unix-clock records.
    #[serde(skip)]
    pub unix_time_range: Option<(f64, f64)>,
    /// How the file ends.
    pub tail: Tail,
}

impl Summary {
    /// The totals of no line at all.
    pub(super) fn empty() -> Summary {
        Summary {
            bytes: 0,
            lines: 0,
            records: OpCounts::default(),
            clocks: ClockCounts::default(),
            leases_accepted: 0,
            ignored: BTreeMap::new(),
            invalid_utf8_lines: 0,
            invalid_utf8_bytes: 0,
            lenient_leases: 0,
            records_with_unknown_fields: 0,
            non_canonical_records: 0,
            unix_time_range: None,
            tail: Tail {
                state: TailState::Empty,
                bytes: 0,
                offset: 0,
                zero_bytes: 0,
            },
        }
    }

    /// Counts a line and its invalid UTF-8; the line, whose bytes are
    /// `content`, is the last one so far.
    #[inline]
    pub(super) fn count_line(&mut self, span: &Span, content: &[u8], classified: &Classified) {
        self.lines += 1;
        if classified.invalid_utf8 > 0 {
            self.invalid_utf8_lines += 1;
            self.invalid_utf8_bytes += classified.invalid_utf8 as u64;
        }
        self.tail = Tail::after(span, content, classified);
    }

    /// Counts a line that changed nothing.
    #[inline]
    pub(super) fn count_ignored(&mut self, reason: IgnoreReason) {
        *self.ignored.entry(reason).or_default() += 1;
    }

    /// Counts a record by op and clock, and what it holds.
    #[inline]
    pub(super) fn count_record(&mut self, record: &Record) {
        match &record.op {
            Op::Lease(result) => {
                self.records.lease += 1;
                if let Ok(lease) = result {
                    self.leases_accepted += 1;
                    if !lease.lenient.is_empty() {
                        self.lenient_leases += 1;
                    }
                }
            }
            Op::Done => self.records.done += 1,
            Op::Reclaim => self.records.reclaim += 1,
            Op::Unknown(_) => self.records.other += 1,
        }
        match record.marker {
            ClockMarker::Unix => {
                self.clocks.unix += 1;
                if let Some(t) = record.time {
                    self.unix_time_range = Some(match self.unix_time_range {
                        None => (t, t),
                        Some((lo, hi)) => (lo.min(t), hi.max(t)),
                    });
                }
            }
            ClockMarker::Legacy => self.clocks.legacy += 1,
            ClockMarker::Absent => self.clocks.unmarked += 1,
            ClockMarker::Other => self.clocks.other += 1,
        }
        if !record.unknown_fields.is_empty() {
            self.records_with_unknown_fields += 1;
        }
        if !record.canonical {
            self.non_canonical_records += 1;
        }
    }
}

impl Tail {
    /// The end of a file whose last line so far is `span`.
    #[inline]
    fn after(span: &Span, content: &[u8], classified: &Classified) -> Tail {
        match span.terminator {
            Terminator::None => Tail {
                state: if matches!(classified.kind, LineKind::Corrupt { .. }) {
                    TailState::Torn
                } else {
                    TailState::Unterminated
                },
                bytes: content.len() as u64,
                offset: span.offset,
                zero_bytes: content.iter().rev().take_while(|&&b| b == 0).count() as u64,
            },
            _ => Tail {
                state: TailState::Clean,
                bytes: 0,
                offset: span.offset + (content.len() + span.terminator_len) as u64,
                zero_bytes: 0,
            },
        }
    }
}
