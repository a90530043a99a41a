//! Reading a journal once: every line classified, replayed and reported,
//! in file order, with memory bounded by the ids, never by the file.
//!
//! Two engines, one contract ([`Source`]): `stream` reads any byte stream
//! in order, in blocks of whole lines; `positional` reads a file by
//! position, in groups of chunks of whole lines. Both run the one
//! [`pipeline`] here, which is all of the scan's threading, and hand each
//! block to [`take_block`], the one place where a line is counted
//! ([`Summary`], in `summary`), replayed and reported to the [`Observer`].
//!
//! # Threads
//!
//! The pipeline is the scan's only concurrency, on rayon's global pool
//! (built at start-up by the command line). While the pool classifies one
//! unit's lines on every core, one of its threads replays the unit before
//! it, in order ([`rayon::join`]). Where the next unit is fetched depends
//! on whether fetching may wait ([`Fetch`]):
//!
//! - a positional scan's fetch only names chunks (the pool reads them with
//!   `pread` as it classifies them), so its whole loop runs on one thread
//!   of the pool, and two groups of chunks are in memory;
//! - a stream's reads may wait (for a writer, when a file is re-read while
//!   it is written), so they run on the calling thread while the pool works
//!   ([`rayon::in_place_scope`]), and three blocks are in memory.
//!
//! So no task in the pool waits for anything outside the pool, and other
//! code may use the pool while a scan runs, including code that the scan's
//! reads wait for. (An observer runs in the pool too: one that waits, as
//! `operations::records` hands its rows to a writer, must wait only for a
//! thread that never uses the pool.)
//!
//! Scans may themselves run side by side on the pool (`verify` and
//! `inspect` of many paths). A positional scan called from a thread of the
//! pool splits its lines among the cores only when the file has more than
//! a few chunks: for a small file, the other cores have files of their
//! own, and splitting would only cost.
//!
//! The positional scan used to run a queue of its own: a mutex, a
//! condition variable and threads beside rayon's, handing chunks over one
//! at a time. The pipeline hands over a group at a time instead, and
//! measured within noise of the queue on two shared cores (verify, inspect
//! and compact of 256 MiB and 1 GiB journals: a few percent either way,
//! as two builds of the queue differed). A verify's peak memory is about
//! 1 MiB higher: its replay allocates on a thread of the pool rather than
//! on the calling thread. Three other shapes were measured and not kept:
//! replaying on the calling thread beside a pool as large as the machine
//! (5 to 10 % slower on two cores: one thread too many); each chunk
//! classified whole by one thread, without the finer split (slower: a
//! group ends with a core waiting for another's last chunk); and a
//! continuous hand-over of single chunks through a channel, the replay
//! working ahead with `rayon::yield_now` while it waits (no faster, with a
//! queue's machinery back).

mod positional;
mod stream;
mod summary;

use std::io;

pub use positional::Positional;
use rayon::prelude::*;
pub use summary::{ClockCounts, OpCounts, Summary, Tail, TailState};

use crate::engine::journal::classify::classify;
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
    /// In parallel, in 256 KiB blocks. Smaller blocks than the 1 MiB used
    /// before: a group's buffers are reused once replayed, so a small file
    /// faults in fewer fresh pages (a 5 MB journal's `verify` went from
    /// about 11.5 to 9.5 ms, its page faults from 2,400 to fewer), a 1 GiB
    /// journal's peak memory fell by 6 MiB, and its time stayed within
    /// noise (docs/verify-profile.md). 128 KiB measured the same as 256.
    fn default() -> Self {
        ScanOptions {
            parallel: true,
            block_size: 256 << 10,
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

/// Runs a scan over units of whole lines (a stream's blocks, a file's
/// groups of chunks), in file order:
///
/// - `fetch(spent)` returns the next unit, or `None` at the end, reusing
///   the buffers of `spent`, a unit taken;
/// - `work(unit)` classifies the unit's lines, on every core;
/// - `take(unit)` replays and reports them.
///
/// Unit k is worked on while unit k - 1 is taken ([`step`]); unit k + 1 is
/// fetched where and when [`Fetch`] says. Not `parallel`: the same steps
/// one after another, on the calling thread.
///
/// The first error, in file order, ends the scan; a panic anywhere ends it
/// too, once the other sides are done, and is raised again here.
fn pipeline<U: Send>(
    parallel: bool,
    when: Fetch,
    mut fetch: impl FnMut(Option<U>) -> io::Result<Option<U>> + Send,
    work: impl Fn(&mut U) + Sync,
    mut take: impl FnMut(&mut U) -> io::Result<()> + Send,
) -> io::Result<()> {
    // The unit to take next, and one taken whose buffers fetch reuses.
    let (mut previous, mut spent): (Option<U>, Option<U>) = (None, None);
    let mut current = fetch(None)?;
    match (parallel, when) {
        (false, _) => {
            while let Some(mut unit) = current {
                work(&mut unit);
                take(&mut unit)?;
                current = fetch(Some(unit))?;
            }
        }
        (true, Fetch::Overlapped) => {
            while let Some(mut unit) = current {
                let mut taken = Ok(());
                let mut next = Ok(None);
                rayon::in_place_scope(|scope| {
                    scope.spawn(|_| taken = step(&mut take, &work, &mut previous, &mut unit));
                    next = fetch(spent.take());
                });
                taken?;
                spent = previous.replace(unit);
                current = next?;
            }
        }
        // The whole loop on one thread of the pool, which thereby does every
        // replay, in order: its allocations stay with one thread (one arena
        // of the allocator), which measured a little lower at peak than a
        // replay that moves from thread to thread.
        (true, Fetch::Between) => rayon::scope(|_| {
            while let Some(mut unit) = current.take() {
                step(&mut take, &work, &mut previous, &mut unit)?;
                spent = previous.replace(unit);
                current = fetch(spent.take())?;
            }
            Ok::<_, io::Error>(())
        })?,
    }
    match previous {
        Some(mut last) => take(&mut last),
        None => Ok(()),
    }
}

/// One step of a [`pipeline`], in the pool: takes the previous unit, on
/// the thread that runs the step, while the other threads work on this
/// one (and the step's thread joins them when it is done).
fn step<U: Send>(
    take: &mut (impl FnMut(&mut U) -> io::Result<()> + Send),
    work: &(impl Fn(&mut U) + Sync),
    previous: &mut Option<U>,
    unit: &mut U,
) -> io::Result<()> {
    let (taken, ()) = rayon::join(|| previous.as_mut().map_or(Ok(()), take), || work(unit));
    taken
}

/// Where and when a [`pipeline`] fetches the next unit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fetch {
    /// On the calling thread, while the pool works on the current unit:
    /// for fetching that reads, and may wait (a stream). The next unit
    /// reuses the buffers of the unit taken a step before, as the one just
    /// taken may still be being taken: three units are in memory.
    Overlapped,
    /// In the pool, between two steps: for fetching that reads nothing and
    /// never waits (a positional scan's fetch only names chunks, which the
    /// pool then reads). The next unit reuses the buffers of the unit just
    /// taken: two units are in memory.
    Between,
}

/// A block of whole lines and, once classified, what each one is: the
/// unit of work of a scan. Its buffers are reused from block to block.
#[derive(Debug, Default)]
struct Lines {
    block: Block,
    classified: Vec<Classified>,
}

impl Lines {
    /// Classifies the block's lines, on every core when `parallel`. The
    /// pieces are small (eight lines and up), so that a core that finishes
    /// its share finds work left to take: with pieces of hundreds of lines,
    /// one core often waited for another's last piece.
    fn classify(&mut self, parallel: bool) {
        let block = &self.block;
        if parallel {
            block
                .spans
                .par_iter()
                .with_min_len(8)
                .map(|span| classify(block.content(span)))
                .collect_into_vec(&mut self.classified);
        } else {
            self.classified.clear();
            self.classified
                .extend(block.spans.iter().map(|span| classify(block.content(span))));
        }
    }
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
