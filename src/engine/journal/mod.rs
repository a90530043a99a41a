//! The JSONL lease journal (`.work_leases.jsonl` and
//! `.dispatch_protocol_deferred.jsonl`, one grammar): the line reader, the
//! per-line classification and the replay, joined by [`scan`], which reads a
//! file exactly once and keeps memory proportional to the number of ids.
//!
//! `scan` hands every line to an [`Observer`] together with what replay did
//! with it, so reports (inspect's history, verify's findings) are built
//! while streaming instead of from a second read.

mod classify;
pub mod encode;
mod id;
mod lines;
mod model;
mod replay;
mod scan;

pub use classify::{classify, payload_member, payload_members};
#[cfg(any(test, feature = "test-hooks"))]
pub use classify::{classify_fast, classify_general};
pub use id::{VerifiedId, WorkId};
pub use lines::{Block, BlockReader, LineReader, RawLine, Span, Terminator};
pub use model::{
    Classified, Clock, ClockMarker, CorruptReason, Effect, Field, IgnoreReason, Lease,
    LeaseRejection, Lenient, LineKind, Op, Payload, Record,
};
pub use replay::{Active, ActiveLeases, Completed, Completion, Replay, state_digest};
pub use scan::{
    ClockCounts, LineEvent, Observer, OpCounts, Positional, Scan, ScanOptions, Source, Summary,
    Tail, TailState, scan, scan_into, scan_with,
};
