//! The scan of a source read by position (a file, or bytes in memory):
//! chunks read with `pread` and classified on every core, replayed in
//! order on the calling thread.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::stream::scan_stream;
use super::summary::Summary;
use super::{Observer, Scan, ScanOptions, Source, take_block};
use crate::engine::journal::classify::classify;
use crate::engine::journal::lines::{self, Block, ReadAt};
use crate::engine::journal::model::Classified;
use crate::engine::journal::replay::Replay;

/// A journal read by position: an open file, or bytes in memory. Its
/// scan needs no reader thread: every core reads chunks of its own with
/// `pread` and classifies their lines, and the calling thread replays the
/// chunks in order ([`Source::scan`]).
#[derive(Clone, Copy)]
pub struct Positional<'a> {
    src: ReadAt<'a>,
    len: u64,
    progress: Option<&'a (dyn Fn(u64) + Sync)>,
}

impl<'a> Positional<'a> {
    /// The first `len` bytes of `file` (its size when opened: what is
    /// appended during the scan is not read).
    pub fn file(file: &'a std::fs::File, len: u64) -> Self {
        Self::new(ReadAt::File(file), len)
    }

    /// Bytes in memory.
    pub fn bytes(bytes: &'a [u8]) -> Self {
        Self::new(ReadAt::Bytes(bytes), bytes.len() as u64)
    }

    fn new(src: ReadAt<'a>, len: u64) -> Self {
        Positional {
            src,
            len,
            progress: None,
        }
    }

    /// Calls `progress` with the size of each part read.
    pub fn with_progress(self, progress: &'a (dyn Fn(u64) + Sync)) -> Self {
        Positional {
            progress: Some(progress),
            ..self
        }
    }
}

impl Source for Positional<'_> {
    fn scan(
        self,
        replay: Replay,
        observer: &mut (dyn Observer + Send),
        options: ScanOptions,
    ) -> io::Result<Scan> {
        if self.len == 0 {
            // Some files report no size but have content (procfs, some
            // FUSE file systems): read them to their end.
            let stream = InOrderReads {
                src: self.src,
                pos: 0,
            };
            return scan_stream(stream, replay, observer, options);
        }
        scan_positional(self, replay, observer, options)
    }
}

/// A positional source read from its start to its end, as a stream.
struct InOrderReads<'a> {
    src: ReadAt<'a>,
    pos: u64,
}

impl Read for InOrderReads<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.src.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// The scan of a [`Positional`] source. The file is cut into chunks of
/// `block_size` bytes ([`lines::read_chunk`]: each holds the lines that
/// start in it). Helper threads (one per other core; none when not
/// `parallel`) each take the next chunk, read it with `pread` into a
/// buffer of their own and classify its lines. The calling thread replays
/// the chunks in order; while the next one is not ready it takes a chunk
/// too. The replay state stays on one core, and at most [`WINDOW`] chunks
/// per thread are read ahead of the replay.
///
/// A file truncated during the scan reads like a stream would: the lines
/// of a prefix of what the file held. A chunk that finds the end early
/// says where, and chunks whose lines start there or later, which other
/// threads may have read before the truncation, are left out. As with a
/// stream, a read that races with the truncation may get zeros where the
/// file was cut (the kernel's doing); they read as a damaged line.
fn scan_positional(
    src: Positional<'_>,
    mut replay: Replay,
    observer: &mut (dyn Observer + Send),
    options: ScanOptions,
) -> io::Result<Scan> {
    let size = options.block_size.max(1) as u64;
    let chunks = src.len.div_ceil(size);
    let threads = if options.parallel {
        rayon::current_num_threads()
    } else {
        1
    };
    let threads = threads.clamp(1, usize::try_from(chunks).unwrap_or(usize::MAX).max(1));
    let shared = Shared {
        queue: Mutex::new(Queue {
            next: 0,
            turn: 0,
            window: WINDOW * threads as u64,
            ready: BTreeMap::new(),
            spare: Vec::new(),
            failed: None,
        }),
        changed: Condvar::new(),
        ended: AtomicU64::new(u64::MAX),
        src,
        size,
        chunks,
    };
    let mut summary = Summary::empty();
    let mut lines = 0;
    let mut end = 0;
    std::thread::scope(|scope| {
        // A panic on any thread stops the others (instead of leaving them
        // waiting for chunks that never come); the scope re-raises it.
        let _stop = StopOnPanic(&shared);
        for _ in 1..threads {
            // Without a helper the scan is only slower.
            let helper = std::thread::Builder::new()
                .name("leasejournal-scan".into())
                .spawn_scoped(scope, || {
                    let _stop = StopOnPanic(&shared);
                    while let Some(index) = shared.take() {
                        shared.classify(index);
                    }
                });
            if helper.is_err() {
                break;
            }
        }
        let mut replay_chunk = |index: u64, ready: Ready| {
            let block = &ready.block;
            let ended = shared.ended.load(Ordering::Relaxed);
            if let (Some(first), Some(last)) = (block.spans.first(), block.spans.last())
                && first.offset < ended
            {
                take_block(
                    &mut summary,
                    &mut replay,
                    observer,
                    block,
                    &ready.classified,
                    lines,
                );
                lines += block.spans.len() as u64;
                end = last.offset + (last.content.len() + last.terminator_len) as u64;
            }
            if let Some(progress) = src.progress {
                progress(size.min(src.len - index * size));
            }
            shared.recycle(ready);
        };
        while let Some(step) = shared.step() {
            match step {
                Step::Replay(index, ready) => replay_chunk(index, ready),
                Step::ReadDue(index) => match shared.read(index) {
                    Ok(ready) => replay_chunk(index, ready),
                    Err(e) => return shared.fail(e),
                },
                Step::ReadAhead(index) => shared.classify(index),
            }
        }
    });
    let queue = shared
        .queue
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = queue.failed {
        return Err(e);
    }
    summary.bytes = end;
    Ok(Scan { replay, summary })
}

/// Chunks each thread may have read ahead of the replay.
const WINDOW: u64 = 2;

/// What the threads of a positional scan share.
struct Shared<'a> {
    queue: Mutex<Queue>,
    /// Signalled when a chunk is ready, the replay moves on, or the scan
    /// fails.
    changed: Condvar,
    /// The lowest offset a chunk found nothing at (`u64::MAX` while the
    /// file is whole). Set before that chunk is ready, so every later
    /// chunk's replay sees it.
    ended: AtomicU64,
    src: Positional<'a>,
    size: u64,
    chunks: u64,
}

/// The chunks between reading and replay.
struct Queue {
    /// The next chunk to take.
    next: u64,
    /// The next chunk to replay.
    turn: u64,
    /// How far `next` may run ahead of `turn`.
    window: u64,
    /// Chunks read and classified, not yet replayed.
    ready: BTreeMap<u64, Ready>,
    /// Buffers of replayed chunks, for reuse.
    spare: Vec<(Vec<u8>, Vec<Classified>)>,
    /// The first error; every thread stops when it is set.
    failed: Option<io::Error>,
}

/// The replaying thread's next step ([`Shared::step`]).
enum Step {
    /// Replay this chunk, read and classified by a helper.
    Replay(u64, Ready),
    /// Read, classify and replay this chunk, which nobody has taken.
    ReadDue(u64),
    /// Read and classify this chunk, for its turn later.
    ReadAhead(u64),
}

/// A chunk read and classified.
struct Ready {
    block: Block,
    classified: Vec<Classified>,
}

/// Stops a positional scan's threads when the one holding it panics.
struct StopOnPanic<'s, 'a>(&'s Shared<'a>);

impl Drop for StopOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.fail(io::Error::other("a scan thread panicked"));
        }
    }
}

impl Shared<'_> {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fail(&self, error: io::Error) {
        self.lock().failed.get_or_insert(error);
        self.changed.notify_all();
    }

    /// The next chunk for a helper to read, once the window allows it;
    /// `None` when every chunk is taken or the scan failed.
    fn take(&self) -> Option<u64> {
        let mut q = self.lock();
        loop {
            if q.failed.is_some() || q.next >= self.chunks {
                return None;
            }
            if q.next < q.turn + q.window {
                q.next += 1;
                return Some(q.next - 1);
            }
            q = self.changed.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Reads and classifies chunk `index`, with buffers of replayed
    /// chunks when there are some.
    fn read(&self, index: u64) -> io::Result<Ready> {
        let (buffer, mut classified) = self.lock().spare.pop().unwrap_or_default();
        let chunk = lines::read_chunk(self.src.src, self.src.len, self.size, index, buffer)?;
        if let Some(at) = chunk.ended_at {
            self.ended.fetch_min(at, Ordering::Relaxed);
        }
        let block = chunk.block;
        classified.clear();
        classified.extend(block.spans.iter().map(|s| classify(block.content(s))));
        Ok(Ready { block, classified })
    }

    /// A helper's share of the work: reads chunk `index` and leaves it for
    /// the replay.
    fn classify(&self, index: u64) {
        match self.read(index) {
            Ok(ready) => {
                self.lock().ready.insert(index, ready);
                self.changed.notify_all();
            }
            Err(e) => self.fail(e),
        }
    }

    /// What the replaying thread does next: replay the chunk due when it
    /// is ready, read it when nobody has taken it, or else read a chunk
    /// ahead rather than wait. Waits while none is possible; `None` at the
    /// end or when the scan failed.
    fn step(&self) -> Option<Step> {
        let mut q = self.lock();
        loop {
            if q.failed.is_some() || q.turn >= self.chunks {
                return None;
            }
            let turn = q.turn;
            if let Some(ready) = q.ready.remove(&turn) {
                q.turn += 1;
                drop(q);
                // A helper may take one more chunk now.
                self.changed.notify_all();
                return Some(Step::Replay(turn, ready));
            }
            if q.next == turn {
                q.next += 1;
                q.turn += 1;
                return Some(Step::ReadDue(turn));
            }
            if q.next < self.chunks && q.next < turn + q.window {
                q.next += 1;
                return Some(Step::ReadAhead(q.next - 1));
            }
            q = self.changed.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Keeps a replayed chunk's buffers for the next one.
    fn recycle(&self, ready: Ready) {
        let Ready { block, classified } = ready;
        self.lock().spare.push((block.into_buffer(), classified));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::journal::scan::scan_with;

    const RECLAIM: &[u8] = br#"{"clock":"unix","id":"c1037804a292046418339e8ace36b6ba473d64706a0068d04d512762b0452579","op":"reclaim","time":1754550010.0}"#;

    fn scanned(src: impl Source, block_size: usize) -> (String, String, Vec<String>) {
        let options = ScanOptions {
            parallel: true,
            block_size,
        };
        crate::fuzzing::scan_log(src, options)
    }

    #[test]
    fn a_file_that_ends_early_scans_as_the_bytes_it_holds() {
        let mut bytes = Vec::new();
        for _ in 0..40 {
            bytes.extend_from_slice(RECLAIM);
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(&RECLAIM[..30]);
        for block_size in [1, 50, 1000, 1 << 20] {
            let want = scanned(&bytes[..], block_size);
            // Told of more bytes than there are (a file truncated after
            // its size was taken), the scan reads what is there.
            let told = Positional::new(ReadAt::Bytes(&bytes), bytes.len() as u64 + 5000);
            assert_eq!(scanned(told, block_size), want, "block size {block_size}");
            assert_eq!(
                scanned(Positional::bytes(&bytes), block_size),
                want,
                "block size {block_size}"
            );
        }
    }

    /// Lines of every ending, some far longer than the chunks of 1000
    /// bytes the tests below read them in.
    fn journal_bytes() -> Vec<u8> {
        let mut bytes = Vec::new();
        for i in 0..1500usize {
            bytes.extend_from_slice(RECLAIM);
            bytes.extend_from_slice([&b"\n"[..], b"\r\n", b"\r", b"\r\xff\n"][i % 4]);
            if i % 13 == 0 {
                bytes.extend(std::iter::repeat_n(b'x', 3000));
                bytes.push(b'\n');
            }
        }
        bytes
    }

    fn on_four_threads<T: Send>(f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap()
            .install(f)
    }

    const CHUNK: u64 = 1000;

    fn in_chunks(script: &lines::tests::Script) -> io::Result<(Summary, Vec<String>)> {
        let len = script.bytes.len() as u64;
        on_four_threads(|| {
            let mut log = crate::fuzzing::Log::default();
            let options = ScanOptions {
                parallel: true,
                block_size: CHUNK as usize,
            };
            let src = Positional::new(ReadAt::Script(script), len);
            let scan = scan_with(src, Replay::default(), &mut log, options)?;
            Ok((scan.summary, log.0))
        })
    }

    #[test]
    fn a_file_truncated_during_the_scan_gives_the_lines_of_a_prefix() {
        let bytes = journal_bytes();
        for k in [2, 9, 40] {
            for cut_to in [k * CHUNK + 1, k * CHUNK + 357] {
                let mut script = lines::tests::Script::new(bytes.clone());
                // Chunk k's first read truncates the file, once chunk k + 2
                // has been read whole by another thread.
                script.cut = Some((k * CHUNK - 1..k * CHUNK, (k + 2) * CHUNK - 1, cut_to));
                let (summary, lines) = in_chunks(&script).unwrap();
                let end = summary.bytes;
                let (_, _, want) = crate::fuzzing::scan_log(
                    &bytes[..end as usize],
                    ScanOptions {
                        parallel: false,
                        block_size: 1 << 20,
                    },
                );
                assert_eq!(lines, want, "chunk {k}, cut to {cut_to}");
                // What was read ahead of the cut is left out.
                assert!(end < (k + 2) * CHUNK, "chunk {k}: read to {end}");
            }
        }
    }

    #[test]
    fn a_failing_or_panicking_read_stops_every_thread() {
        let bytes = journal_bytes();
        for chunk in [0, 1, 5, 60, 200] {
            for (panics, helpers_fail) in
                [(false, false), (false, true), (true, false), (true, true)]
            {
                let mut script = lines::tests::Script::new(bytes.clone());
                script.fail_at = Some(chunk * CHUNK);
                script.panics = panics;
                script.helpers_fail = helpers_fail;
                let (done, outcome) = std::sync::mpsc::channel();
                // A scan that hangs fails the test instead of hanging it.
                std::thread::spawn(move || {
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        in_chunks(&script).map(|_| ())
                    }));
                    let _ = done.send(result);
                });
                let outcome = outcome
                    .recv_timeout(std::time::Duration::from_secs(60))
                    .unwrap_or_else(|_| panic!("chunk {chunk}: the scan hung"));
                match outcome {
                    Err(_) => assert!(panics, "chunk {chunk}: an error became a panic"),
                    Ok(Err(e)) => {
                        assert!(!panics, "chunk {chunk}: a panic became an error");
                        assert!(e.to_string().contains("injected error"), "{e}");
                    }
                    Ok(Ok(_)) => panic!("chunk {chunk}: the failure was lost"),
                }
            }
        }
    }

    #[test]
    fn a_file_of_no_size_is_read_to_its_end() {
        let bytes = journal_bytes();
        let want = scanned(&bytes[..], 1000);
        let told = Positional::new(ReadAt::Bytes(&bytes), 0);
        assert_eq!(scanned(told, 1000), want);
    }

    #[test]
    fn progress_reports_every_byte_once() {
        let bytes = b"{}\n[]\n\n{\"x\":1}\n".repeat(50);
        let seen = AtomicU64::new(0);
        let progress = |n| {
            seen.fetch_add(n, Ordering::Relaxed);
        };
        for block_size in [1, 7, 64, 1 << 20] {
            seen.store(0, Ordering::Relaxed);
            let src = Positional::bytes(&bytes).with_progress(&progress);
            let scan = scan_with(
                src,
                Replay::default(),
                &mut (),
                ScanOptions {
                    parallel: true,
                    block_size,
                },
            )
            .unwrap();
            assert_eq!(scan.summary.lines, 200);
            assert_eq!(seen.load(Ordering::Relaxed), bytes.len() as u64);
        }
    }
}
