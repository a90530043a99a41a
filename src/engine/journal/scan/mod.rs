//! Reading a journal once: every line classified, replayed and reported,
//! in file order, with memory bounded by the ids, never by the file.
//!
//! Two engines, one contract ([`Source`]): `stream` reads any byte stream
//! in order; `positional` reads a file by position, in chunks. Both hand
//! each block of whole lines to [`take_block`], the one place where a line
//! is counted ([`Summary`], in `summary`), replayed and reported to the
//! [`Observer`].

mod positional;
mod stream;
mod summary;

use std::io;

pub use positional::Positional;
pub use summary::{ClockCounts, OpCounts, Summary, Tail, TailState};

use crate::engine::journal::lines::{Block, Span, Terminator};
use crate::engine::journal::model::{Classified, Effect, IgnoreReason, LineKind};
use crate::engine::journal::replay::Replay;

/// One line as the scan saw it.
#[derive(Debug)]
pub struct LineEvent<'a> {
    /// 1-based line number (upstream's line splitting).
    pub number: u64,
    /// Byte offset of the line in the file.
    pub offset: u64,
    /// The raw bytes of the line, without the terminator.
    pub content: &'a [u8],
    /// How the line ended.
    pub terminator: Terminator,
    /// What the line is.
    pub classified: &'a Classified,
    /// What replay did with it (records only).
    pub effect: Option<&'a Effect>,
}

/// Receives every line of a scan, in order.
pub trait Observer {
    /// Called once per line.
    fn line(&mut self, event: &LineEvent<'_>);
}

impl Observer for () {
    fn line(&mut self, _event: &LineEvent<'_>) {}
}

/// The result of reading a journal once.
#[derive(Debug)]
pub struct Scan {
    /// The state upstream's loader reaches.
    pub replay: Replay,
    /// Totals.
    pub summary: Summary,
}

/// How to read: in parallel or not, and in blocks of what size. Neither
/// changes the result, only the speed.
#[derive(Clone, Copy, Debug)]
pub struct ScanOptions {
    /// Classify lines on every core.
    pub parallel: bool,
    /// Target block size in bytes.
    pub block_size: usize,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            parallel: true,
            block_size: 1 << 20,
        }
    }
}

/// What a scan reads: any byte stream, read in order, or a [`Positional`]
/// source (a file), read in chunks on every core.
pub trait Source {
    /// Reads it whole, replaying into `replay` (empty) and reporting each
    /// line to `observer`, in order.
    fn scan(
        self,
        replay: Replay,
        observer: &mut (dyn Observer + Send),
        options: ScanOptions,
    ) -> io::Result<Scan>;
}

/// Reads a whole journal, replays it and reports each line to `observer`.
pub fn scan(src: impl Source, observer: &mut (dyn Observer + Send)) -> io::Result<Scan> {
    src.scan(Replay::default(), observer, ScanOptions::default())
}

/// Like [`scan`], replaying into the given (empty) state, for example one
/// that tracks completions.
pub fn scan_into(
    src: impl Source,
    replay: Replay,
    observer: &mut (dyn Observer + Send),
) -> io::Result<Scan> {
    src.scan(replay, observer, ScanOptions::default())
}

/// Like [`scan_into`], with the given options.
pub fn scan_with(
    src: impl Source,
    replay: Replay,
    observer: &mut (dyn Observer + Send),
    options: ScanOptions,
) -> io::Result<Scan> {
    src.scan(replay, observer, options)
}

/// Counts, replays and reports a block's lines in order (`classified`
/// holds what each one is), then settles the block's replay. The lines are
/// numbered on from `lines_before`.
fn take_block(
    summary: &mut Summary,
    replay: &mut Replay,
    observer: &mut (dyn Observer + Send),
    block: &Block,
    classified: &[Classified],
    lines_before: u64,
) {
    for (span, classified) in block.spans.iter().zip(classified) {
        take_line(
            summary,
            replay,
            observer,
            span,
            span.number + lines_before,
            block.content(span),
            classified,
        );
    }
    replay.settle(block.bytes());
}

/// One line of [`take_block`].
fn take_line(
    summary: &mut Summary,
    replay: &mut Replay,
    observer: &mut (dyn Observer + Send),
    span: &Span,
    number: u64,
    content: &[u8],
    classified: &Classified,
) {
    summary.count_line(span, content, classified);
    let mut reason = IgnoreReason::of_line(classified, span.terminator);
    let effect = match &classified.kind {
        LineKind::Record(record) => {
            summary.count_record(record);
            let effect =
                replay.apply_in_block(record, content, number, span.offset, span.content.start);
            reason = IgnoreReason::of_effect(&effect, record);
            Some(effect)
        }
        _ => None,
    };
    if let Some(reason) = reason {
        summary.count_ignored(reason);
    }
    observer.line(&LineEvent {
        number,
        offset: span.offset,
        content,
        terminator: span.terminator,
        classified,
        effect: effect.as_ref(),
    });
}
