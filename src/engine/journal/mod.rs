//! The JSONL lease journal (`.work_leases.jsonl` and
//! `.dispatch_protocol_deferred.jsonl`, one grammar), read the way
//! upstream's `WorkLeaseJournal._load` reads it.
//!
//! # Data flow
//!
//! ```text
//! bytes ──lines──▶ line ──classify──▶ Classified ──replay──▶ Effect, Replay
//! ```
//!
//! [`scan()`] runs the three over a whole file in one read: lines are
//! classified on every core and replayed in file order; each line goes to
//! an [`Observer`] with what replay did with it, and the result is a
//! [`Scan`]: the [`Replay`] (active leases, completed ids) and a
//! [`Summary`].
//!
//! # Submodules
//!
//! - `lines`: splitting bytes into upstream's lines (universal newlines,
//!   invalid UTF-8 deleted first); blocks of whole lines for a stream,
//!   chunks read by position for a file.
//! - `model`: what a line is ([`Classified`], [`LineKind`], [`Record`],
//!   [`Op`], [`Lease`] and the reasons a line or lease is refused), what a
//!   record did ([`Effect`]), what the replay keeps of an active lease
//!   ([`Active`]) and of a completion ([`Completion`]), and why a line
//!   changed nothing ([`IgnoreReason`]). Types only.
//! - `id`: [`WorkId`] and its hex codecs (SSE2 where there is SSE2), and
//!   [`VerifiedId`], an id checked against its payload's hash, the only
//!   kind the replay's id sets take.
//! - `classify`: one line to its [`Classified`], through a fast path for
//!   lines in upstream's exact form and a general path for any line,
//!   siblings that share only the model.
//! - `replay`: upstream's state machine over records, in order: the last
//!   lease of an id wins, `done` completes an active id, `reclaim` drops
//!   one; the state's digest.
//! - `idset`: the sets the replay keeps its state in, [`ActiveLeases`] and
//!   [`Completed`]: seeded hashing of verified ids, shards sorted a table
//!   at a time, completion sites packed in 12 bytes. Data structures, no
//!   rules.
//! - `scan`: reads a source once (a stream in order, or a file by
//!   position), classifies on every core and replays in order, reporting
//!   each line to an [`Observer`] with what replay did, so that reports
//!   (inspect's history, verify's findings) are built while streaming
//!   rather than from a second read. All of the journal's threading is
//!   there. Memory follows the number of ids, not the file's size.
//! - `reclaim`: upstream's `recover_expired` selection and order of the
//!   leases to reclaim ([`reclaims`], [`Reclaim`]), and the payload facts a
//!   plan lists ([`payload_facts`]).
//! - `salvage`: records hidden in lines upstream ignores (glued, behind a
//!   byte order mark, before a zero fill), found ([`hidden_records`]),
//!   counted ([`HiddenCount`]), replayed as a repair would restore them
//!   ([`Salvager`]) and written back on lines of their own
//!   ([`write_repaired`], [`write_sealed`]).
//! - `resume`: upstream's rebuild of a lease payload into the work item
//!   resume requeues ([`WorkItem`], [`rebuild`]), and the forecast of what
//!   resume does with a journal's leases ([`forecast`],
//!   [`mark_duplicates`]).
//! - `sniff`: the journals' file names ([`WORK_LEASES`], [`DEFERRED`],
//!   [`owns_name`]) and what a journal's first line looks like
//!   ([`owns_start`]).
//! - [`encode`]: records written as upstream writes them.
//! - [`compaction`]: the compacted journal, planned from a scan and written
//!   from the source.
//! - `seal`: the end of a journal made safe to append to ([`TailFix`]).
//! - `state`: a replay state as counts and a digest ([`StateView`]), what a
//!   written file must replay to.

mod classify;
pub mod compaction;
pub mod encode;
mod id;
mod idset;
mod lines;
mod model;
mod reclaim;
mod replay;
mod resume;
mod salvage;
mod scan;
mod seal;
mod sniff;
mod state;

pub use classify::{classify, payload_member, payload_members};
#[cfg(any(test, feature = "test-hooks"))]
pub use classify::{classify_fast, classify_general};
pub(crate) use id::decode_hex;
pub use id::{VerifiedId, WorkId, short_id};
pub use idset::{ActiveLeases, Completed};
pub use lines::{Block, BlockReader, LineReader, RawLine, Span, Terminator};
pub use model::{
    Active, Classified, Clock, ClockMarker, Completion, CorruptReason, Effect, Field, IgnoreReason,
    Lease, LeaseRejection, Lenient, LineKind, Op, Payload, Record,
};
pub use reclaim::{Reclaim, payload_facts, reclaims};
pub use replay::{Replay, state_digest};
pub use resume::{
    FirstAppend, Forecast, Requeue, Rescan, RescanWhy, ResumeOutcome, WorkItem, forecast,
    mark_duplicates, rebuild,
};
pub use salvage::{
    Hidden, HiddenCount, HiddenRecord, Salvage, SalvageAction, Salvager, hidden_records,
    write_repaired, write_sealed,
};
pub use scan::{
    ClockCounts, LineEvent, Observer, OpCounts, Positional, Scan, ScanOptions, Source, Summary,
    Tail, TailState, scan, scan_into, scan_with,
};
pub use seal::TailFix;
pub use sniff::{DEFERRED, NAMES, WORK_LEASES, owns_name, owns_start};
pub use state::StateView;
