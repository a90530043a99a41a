//! The scan of a source read by position (a file, or bytes in memory): the
//! file is cut into chunks, and groups of chunks are the unit of the
//! scan's [`pipeline`]. A group's chunks are read with `pread` and their
//! lines classified on every core while the group before it is replayed,
//! in order. No thread reads the file in order, so reading is as parallel
//! as classifying.

use std::io::{self, Read};

use rayon::prelude::*;

use super::stream::scan_stream;
use super::summary::Summary;
use super::{Fetch, Lines, Observer, Scan, ScanOptions, Source, pipeline, take_block};
use crate::engine::journal::lines::{self, ReadAt};
use crate::engine::journal::replay::Replay;

/// A journal read by position: an open file, or bytes in memory. Its
/// scan needs no reader thread: every core reads chunks with `pread` and
/// classifies their lines, and the chunks are replayed in order
/// ([`Source::scan`]).
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
/// start in it), and the chunks into groups of [`CHUNKS_PER_THREAD`] per
/// thread of the pool. While one group's chunks are read and classified on
/// every core, the group before it is replayed, chunk by chunk, in order;
/// two groups are in memory at most.
///
/// A file truncated during the scan reads like a stream would: the lines
/// of a prefix of what the file held. A chunk that finds the end early
/// says where, and chunks whose lines start there or later, which may
/// have been read before the truncation, are left out. A group is replayed
/// only once all its chunks are read, so every chunk that could end the
/// file before a chunk has spoken by the time that chunk is replayed. As
/// with a stream, a read that races with the truncation may get zeros
/// where the file was cut (the kernel's doing); they read as a damaged
/// line.
/// Above this many chunks, a scan called from a thread of the pool still
/// splits its lines among the cores.
const SPLIT_IN_POOL: u64 = 16;

fn scan_positional(
    src: Positional<'_>,
    mut replay: Replay,
    observer: &mut (dyn Observer + Send),
    options: ScanOptions,
) -> io::Result<Scan> {
    let size = options.block_size.max(1) as u64;
    let chunks = src.len.div_ceil(size);
    // Called from a thread of the pool, the scan is one of several running
    // side by side (`verify` of many paths): the cores are busy already,
    // and splitting a small file's lines among them costs more than it
    // gives. A large file is still split, so that it does not end the run
    // on one core.
    let options = ScanOptions {
        parallel: options.parallel
            && (rayon::current_thread_index().is_none() || chunks > SPLIT_IN_POOL),
        ..options
    };
    let threads = if options.parallel {
        rayon::current_num_threads()
    } else {
        1
    };
    let group = CHUNKS_PER_THREAD * threads as u64;
    let mut summary = Summary::empty();
    // The next chunk to hand out, and the buffers of replayed chunks.
    let (mut next, mut spare) = (0, Vec::new());
    // The lines before the next chunk to replay, where the replayed lines
    // end, and the lowest offset a chunk found nothing at.
    let (mut lines, mut end, mut ended) = (0, 0, u64::MAX);
    pipeline(
        options.parallel,
        Fetch::Between,
        |spent: Option<Vec<Chunk>>| {
            spare.extend(spent.into_iter().flatten().map(|chunk| chunk.lines));
            if next >= chunks {
                return Ok(None);
            }
            let upto = chunks.min(next + group);
            let unit = (next..upto)
                .map(|index| Chunk {
                    index,
                    lines: spare.pop().unwrap_or_default(),
                    ended_at: None,
                    read: Ok(()),
                })
                .collect();
            next = upto;
            Ok(Some(unit))
        },
        |unit: &mut Vec<Chunk>| {
            if options.parallel {
                unit.par_iter_mut()
                    .for_each(|chunk| chunk.read(src, size, true));
            } else {
                unit.iter_mut()
                    .for_each(|chunk| chunk.read(src, size, false));
            }
        },
        |unit: &mut Vec<Chunk>| {
            for chunk in unit.iter_mut() {
                std::mem::replace(&mut chunk.read, Ok(()))?;
                ended = ended.min(chunk.ended_at.unwrap_or(u64::MAX));
            }
            for chunk in unit.iter() {
                let block = &chunk.lines.block;
                if let (Some(first), Some(last)) = (block.spans.first(), block.spans.last())
                    && first.offset < ended
                {
                    let classified = &chunk.lines.classified;
                    take_block(
                        &mut summary,
                        &mut replay,
                        observer,
                        block,
                        classified,
                        lines,
                    );
                    lines += block.spans.len() as u64;
                    end = last.offset + (last.content.len() + last.terminator_len) as u64;
                }
                if let Some(progress) = src.progress {
                    progress(size.min(src.len - chunk.index * size));
                }
            }
            Ok(())
        },
    )?;
    summary.bytes = end;
    Ok(Scan { replay, summary })
}

/// Chunks per thread of the pool in a group. One is enough to read on
/// every core at once (the lines of each chunk are classified on every
/// core as well), and keeps two groups' memory as small as the queue that
/// came before held.
const CHUNKS_PER_THREAD: u64 = 1;

/// One chunk of a positional scan.
struct Chunk {
    index: u64,
    /// Its lines, once read and classified (the buffers of an earlier
    /// chunk before).
    lines: Lines,
    /// Where the source ended, when it ended before the length it was
    /// read to ([`lines::Chunk::ended_at`]).
    ended_at: Option<u64>,
    /// Whether it could be read.
    read: io::Result<()>,
}

impl Chunk {
    /// Reads the chunk's lines from `src` (chunks of `size` bytes) into
    /// its buffers and classifies them.
    fn read(&mut self, src: Positional<'_>, size: u64, parallel: bool) {
        let buffer = std::mem::take(&mut self.lines.block).into_buffer();
        match lines::read_chunk(src.src, src.len, size, self.index, buffer) {
            Ok(chunk) => {
                self.ended_at = chunk.ended_at;
                self.lines.block = chunk.block;
                self.lines.classify(parallel);
            }
            Err(e) => self.read = Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

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

    /// Called from a thread of the pool, a scan of a few chunks runs on
    /// that thread alone and one of many chunks still splits: both read
    /// exactly as a scan called from outside the pool.
    #[test]
    fn a_scan_from_the_pool_reads_the_same() {
        let bytes = journal_bytes();
        let mut sides = Vec::new();
        for block_size in [1 << 20, 100_000, 1000] {
            sides.push((bytes.len() as u64).div_ceil(block_size as u64) > SPLIT_IN_POOL);
            let want = scanned(Positional::bytes(&bytes), block_size);
            let inside = on_four_threads(|| scanned(Positional::bytes(&bytes), block_size));
            assert_eq!(inside, want, "block size {block_size}");
        }
        assert_eq!(sides, [false, false, true], "both sides of the rule");
    }

    fn on_four_threads<T: Send>(f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap()
            .install(f)
    }

    const CHUNK: u64 = 1000;

    /// Scans `script` in chunks of [`CHUNK`] bytes on four threads; told
    /// of no size, as a stream (read on the calling thread).
    fn in_chunks(script: &lines::tests::Script, sized: bool) -> io::Result<(Summary, Vec<String>)> {
        let len = if sized { script.bytes.len() as u64 } else { 0 };
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
        // Groups are of four chunks on four threads: k and k + 2 share one.
        // No line before chunk k reaches chunk k + 2.
        for k in [4, 9, 41] {
            for cut_to in [k * CHUNK + 1, k * CHUNK + 357] {
                let mut script = lines::tests::Script::new(bytes.clone());
                // Chunk k's first read truncates the file, once chunk k + 2
                // (in the same group) has been read whole by another thread.
                script.cut = Some((k * CHUNK - 1..k * CHUNK, (k + 2) * CHUNK - 1, cut_to));
                let (summary, lines) = in_chunks(&script, true).unwrap();
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
            // Sized, chunks are read in the pool; told of no size, the
            // file is read as a stream, on the calling thread.
            for (panics, sized) in [(false, false), (false, true), (true, false), (true, true)] {
                let mut script = lines::tests::Script::new(bytes.clone());
                script.fail_at = Some(chunk * CHUNK);
                script.panics = panics;
                let (done, outcome) = std::sync::mpsc::channel();
                // A scan that hangs fails the test instead of hanging it.
                std::thread::spawn(move || {
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        in_chunks(&script, sized).map(|_| ())
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
