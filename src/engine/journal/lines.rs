//! Splitting a journal into the lines upstream iterates.
//!
//! Upstream opens the file in text mode (`open(path, encoding="utf-8",
//! errors="ignore")`), so its lines end at `\n`, `\r\n` or a bare `\r`
//! (universal newlines), and invalid UTF-8 bytes are deleted *before* the
//! newline translation. The one place the order matters is a `\r` followed
//! by bytes that are all deleted and then `\n`: Python sees one `\r\n`.
//! Line numbers here are upstream's; offsets are byte offsets in the file.
//!
//! The file is read in blocks that end just after a `\n` (or at the end of
//! the file), so no line straddles two blocks and every terminator can be
//! decided inside its block; a block grows only as far as the longest line
//! needs. Blocks are what the parallel scan classifies at once.

use std::io::{self, Read};
use std::ops::Range;

use memchr::{memchr, memchr2, memrchr};

/// How a line ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Terminator {
    /// `\n`
    Lf,
    /// `\r\n`, possibly with deleted invalid bytes between the two.
    CrLf,
    /// A bare `\r`.
    Cr,
    /// End of file: the last line has no terminator.
    None,
}

/// Where one line sits in its block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// 1-based line number.
    pub number: u64,
    /// Byte offset of the line in the file.
    pub offset: u64,
    /// The line's bytes (without the terminator) in the block.
    pub content: Range<usize>,
    /// How it ended.
    pub terminator: Terminator,
    /// Length of the terminator in bytes (including deleted bytes folded
    /// into a `\r…\n`).
    pub terminator_len: usize,
}

/// Whole lines read from the file.
#[derive(Debug, Default)]
pub struct Block {
    /// The buffer; only `data[..len]` holds this block's bytes (the rest is
    /// kept initialised for reuse).
    data: Vec<u8>,
    len: usize,
    /// The lines in it, in order.
    pub spans: Vec<Span>,
}

impl Block {
    /// The block's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.data[..self.len]
    }

    /// The buffer, for the next block.
    pub(super) fn into_buffer(self) -> Vec<u8> {
        self.data
    }

    /// A line's content.
    pub fn content(&self, span: &Span) -> &[u8] {
        &self.data[span.content.clone()]
    }

    /// A line's bytes with its terminator, exactly as in the file.
    pub fn raw(&self, span: &Span) -> &[u8] {
        &self.data[span.content.start..span.content.end + span.terminator_len]
    }
}

/// Target size of a block.
const BLOCK: usize = 2 << 20;

/// Reads a byte source as blocks of whole lines.
pub struct BlockReader<R> {
    src: R,
    carry: Vec<u8>,
    spare: Vec<u8>,
    offset: u64,
    number: u64,
    eof: bool,
    bytes_read: u64,
    target: usize,
}

impl<R> BlockReader<R> {
    /// Target size of a block unless another is given.
    pub const DEFAULT_BLOCK: usize = BLOCK;
}

impl<R: Read> BlockReader<R> {
    /// Reads blocks from `src`.
    pub fn new(src: R) -> Self {
        Self::with_block_size(src, BLOCK)
    }

    /// Reads blocks of about `target` bytes (tests use tiny blocks to
    /// exercise every boundary).
    pub fn with_block_size(src: R, target: usize) -> Self {
        BlockReader {
            src,
            carry: Vec::new(),
            spare: Vec::new(),
            offset: 0,
            number: 0,
            eof: false,
            bytes_read: 0,
            target: target.max(1),
        }
    }

    /// Total bytes consumed from the source so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Gives a finished block's buffer back for reuse (the larger of the
    /// two when one is already waiting).
    pub fn recycle(&mut self, block: Block) {
        if block.data.len() > self.spare.len() {
            self.spare = block.data;
        }
    }

    /// Reads until `data[..*len]` holds `want` bytes or the source ends.
    /// `data` stays fully initialised, so reuse costs no zeroing.
    fn fill(&mut self, data: &mut Vec<u8>, len: &mut usize, want: usize) -> io::Result<()> {
        if data.len() < want {
            data.resize(want, 0);
        }
        while *len < want && !self.eof {
            match self.src.read(&mut data[*len..want]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    *len += n;
                    self.bytes_read += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The next block, or `None` at the end of the file.
    pub fn next_block(&mut self) -> io::Result<Option<Block>> {
        let mut data = std::mem::take(&mut self.spare);
        let mut len = self.carry.len();
        if data.len() < len {
            data.resize(len, 0);
        }
        data[..len].copy_from_slice(&self.carry);
        self.carry.clear();
        let mut want = self.target.max(len + 1);
        // Whole lines: cut after the last '\n', growing for a long line.
        let cut = loop {
            self.fill(&mut data, &mut len, want)?;
            if self.eof {
                break len;
            }
            if let Some(i) = memrchr(b'\n', &data[..len]) {
                break i + 1;
            }
            want = len * 2;
        };
        if cut == 0 {
            return Ok(None);
        }
        self.carry.extend_from_slice(&data[cut..len]);
        let spans = split(&data, 0..cut, self.offset, &mut self.number);
        self.offset += cut as u64;
        Ok(Some(Block {
            data,
            len: cut,
            spans,
        }))
    }
}

/// A byte source read by position, from several threads at once: a file
/// (`pread`, which leaves the file position alone), or bytes in memory.
#[derive(Clone, Copy, Debug)]
pub enum ReadAt<'a> {
    /// An open file.
    File(&'a std::fs::File),
    /// Bytes in memory.
    Bytes(&'a [u8]),
    /// Bytes in memory that shrink or fail on cue (tests).
    #[cfg(test)]
    Script(&'a tests::Script),
}

impl ReadAt<'_> {
    /// Reads bytes from `offset` into `buf` and says how many; 0 at the end.
    pub(super) fn read_at(self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        match self {
            ReadAt::File(file) => std::os::unix::fs::FileExt::read_at(file, buf, offset),
            ReadAt::Bytes(bytes) => {
                let start = usize::try_from(offset).map_or(bytes.len(), |o| o.min(bytes.len()));
                let n = buf.len().min(bytes.len() - start);
                buf[..n].copy_from_slice(&bytes[start..start + n]);
                Ok(n)
            }
            #[cfg(test)]
            ReadAt::Script(script) => script.read_at(buf, offset),
        }
    }
}

/// How far past its end a chunk is read at first, so that the line that
/// crosses the end is almost always read by the same call.
const SLACK: u64 = 16 << 10;

/// Reads chunk `index` of the first `len` bytes of `src` cut every `size`
/// bytes: the lines that *start* in `[index * size, (index + 1) * size)`,
/// whole, numbered from 1 (the caller adds the lines before them). Each
/// chunk finds its own first line from the byte before it, so chunks are
/// read independently, on any thread, in any order; every line belongs to
/// exactly one chunk, and a chunk inside a long line is empty. Like a
/// [`BlockReader`] block, a chunk ends just after a `\n` or where the
/// source ends, so every terminator is decided inside it. `data` is a
/// buffer to reuse.
///
/// A source that ends before `len` (a file truncated while it is read)
/// ends the chunk there, as it would end a stream; the chunk then says
/// where ([`Chunk::ended_at`]).
pub(super) fn read_chunk(
    src: ReadAt<'_>,
    len: u64,
    size: u64,
    index: u64,
    mut data: Vec<u8>,
) -> io::Result<Chunk> {
    let lo = index * size;
    let hi = lo.saturating_add(size).min(len);
    // `data[0]` is the byte before the chunk: a line starts at `lo` when
    // it is a `\n`.
    let from = lo.saturating_sub(1);
    let mut filled = 0;
    let want = to_usize(hi.saturating_add(SLACK).min(len) - from)?;
    let mut ended = !fill_at(src, from, &mut data, &mut filled, want)?;
    let first = if lo == 0 {
        Some(0)
    } else {
        memchr(b'\n', &data[..filled])
            .map(|i| i + 1)
            .filter(|&start| from + (start as u64) < hi)
    };
    let region = match first {
        // No line starts in the chunk.
        None => 0..0,
        // Its last line ends at the first `\n` from `hi - 1` on.
        Some(start) if hi < len => {
            let mut search = to_usize(hi - 1 - from)?.min(filled);
            loop {
                if let Some(i) = memchr(b'\n', &data[search..filled]) {
                    break start..search + i + 1;
                }
                let have = from + filled as u64;
                if have >= len || ended {
                    break start..filled;
                }
                search = filled;
                let want = filled + to_usize((filled as u64).max(SLACK).min(len - have))?;
                ended = !fill_at(src, from, &mut data, &mut filled, want)?;
            }
        }
        Some(start) => start..filled,
    };
    let mut number = 0;
    let spans = split(
        &data,
        region.clone(),
        from + region.start as u64,
        &mut number,
    );
    Ok(Chunk {
        ended_at: ended.then_some(from + filled as u64),
        block: Block {
            data,
            len: region.end,
            spans,
        },
    })
}

/// A chunk's lines ([`read_chunk`]).
pub(super) struct Chunk {
    /// The lines.
    pub block: Block,
    /// When the source ended before the length it was read to: an offset
    /// it had no byte at (it ended there or before).
    pub ended_at: Option<u64>,
}

fn to_usize(n: u64) -> io::Result<usize> {
    usize::try_from(n).map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "line too long"))
}

/// Reads `src` from `from` until `data[..*filled]` holds `want` bytes;
/// false when the source ends first.
fn fill_at(
    src: ReadAt<'_>,
    from: u64,
    data: &mut Vec<u8>,
    filled: &mut usize,
    want: usize,
) -> io::Result<bool> {
    if data.len() < want {
        data.resize(want, 0);
    }
    while *filled < want {
        match src.read_at(&mut data[*filled..want], from + *filled as u64) {
            Ok(0) => return Ok(false),
            Ok(n) => *filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Splits whole lines (the region of `data` ends with `\n` or at the end
/// of the file, and starts at `base` in the file) into spans, numbering
/// them on from `number`.
fn split(data: &[u8], region: Range<usize>, base: u64, number: &mut u64) -> Vec<Span> {
    let end = region.end;
    let mut spans = Vec::with_capacity(region.len() / 256 + 1);
    let mut pos = region.start;
    while pos < end {
        let (len, terminator, terminator_len) = match memchr2(b'\n', b'\r', &data[pos..end]) {
            None => (end - pos, Terminator::None, 0),
            Some(at) if data[pos + at] == b'\n' => (at, Terminator::Lf, 1),
            Some(at) => {
                let (t, tl) = after_cr(&data[pos + at + 1..end]);
                (at, t, tl)
            }
        };
        *number += 1;
        spans.push(Span {
            number: *number,
            offset: base + (pos - region.start) as u64,
            content: pos..pos + len,
            terminator,
            terminator_len,
        });
        pos += len + terminator_len;
    }
    spans
}

/// Decides what a `\r` is, given the bytes after it: `\r\n`, `\r` plus
/// bytes upstream deletes plus `\n` (one terminator to Python), or a bare
/// `\r`.
fn after_cr(rest: &[u8]) -> (Terminator, usize) {
    let high = rest.iter().take_while(|&&b| b >= 0x80).count();
    if rest.get(high) == Some(&b'\n') {
        let between = &rest[..high];
        if between.utf8_chunks().all(|c| c.valid().is_empty()) {
            return (Terminator::CrLf, high + 2);
        }
    }
    (Terminator::Cr, 1)
}

/// One line as upstream sees it, before decoding.
#[derive(Debug)]
pub struct RawLine<'a> {
    /// 1-based line number.
    pub number: u64,
    /// Byte offset of the line's first byte in the file.
    pub offset: u64,
    /// The line's bytes without the terminator.
    pub content: &'a [u8],
    /// The line's bytes with the terminator, exactly as in the file.
    pub raw: &'a [u8],
    /// How it ended.
    pub terminator: Terminator,
    /// Length of the terminator in bytes.
    pub terminator_len: usize,
}

/// A streaming line reader over any byte source, one line at a time.
pub struct LineReader<R> {
    blocks: BlockReader<R>,
    current: Block,
    index: usize,
}

impl<R: Read> LineReader<R> {
    /// Reads lines from `src`.
    pub fn new(src: R) -> Self {
        Self::with_capacity(src, BLOCK)
    }

    /// Reads lines from `src` in blocks of about `capacity` bytes.
    pub fn with_capacity(src: R, capacity: usize) -> Self {
        LineReader {
            blocks: BlockReader::with_block_size(src, capacity),
            current: Block::default(),
            index: 0,
        }
    }

    /// Total bytes consumed from the source so far.
    pub fn bytes_read(&self) -> u64 {
        self.blocks.bytes_read()
    }

    /// The next line, or `None` at the end of the file.
    pub fn next_line(&mut self) -> io::Result<Option<RawLine<'_>>> {
        while self.index == self.current.spans.len() {
            match self.blocks.next_block()? {
                Some(block) => {
                    let old = std::mem::replace(&mut self.current, block);
                    self.blocks.recycle(old);
                    self.index = 0;
                }
                None => return Ok(None),
            }
        }
        let span = &self.current.spans[self.index];
        self.index += 1;
        Ok(Some(RawLine {
            number: span.number,
            offset: span.offset,
            content: self.current.content(span),
            raw: self.current.raw(span),
            terminator: span.terminator,
            terminator_len: span.terminator_len,
        }))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    /// A source for tests of a scan's reading: bytes that are truncated
    /// when a chunk is read (`cut`), or reads that fail or panic
    /// (`fail_at`).
    #[derive(Debug)]
    pub struct Script {
        pub bytes: Vec<u8>,
        /// The length reads see now.
        len: AtomicU64,
        /// The offsets whose read truncates the bytes, the offset another
        /// read must have started at and copied from first (a read-ahead
        /// that saw them whole), and the new length.
        pub cut: Option<(std::ops::Range<u64>, u64, u64)>,
        /// The first read from this offset on fails, or panics when
        /// `panics`.
        pub fail_at: Option<u64>,
        pub panics: bool,
        failed: AtomicBool,
        /// The highest offset a finished read started at.
        read_up_to: AtomicU64,
        cut_done: AtomicBool,
    }

    impl Script {
        pub fn new(bytes: Vec<u8>) -> Script {
            Script {
                len: AtomicU64::new(bytes.len() as u64),
                bytes,
                cut: None,
                fail_at: None,
                panics: false,
                read_up_to: AtomicU64::new(0),
                cut_done: AtomicBool::new(false),
                failed: AtomicBool::new(false),
            }
        }

        pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            if self.fail_at.is_some_and(|at| offset >= at)
                && !self.failed.swap(true, Ordering::SeqCst)
            {
                assert!(!self.panics, "injected panic at {offset}");
                return Err(io::Error::other(format!("injected error at {offset}")));
            }
            if let Some((within, after, to)) = &self.cut
                && within.contains(&offset)
                && !self.cut_done.load(Ordering::SeqCst)
            {
                // Wait (a while at most) for another thread's read ahead.
                let start = Instant::now();
                while self.read_up_to.load(Ordering::SeqCst) < *after
                    && start.elapsed() < Duration::from_secs(5)
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                self.len.store(*to, Ordering::SeqCst);
                self.cut_done.store(true, Ordering::SeqCst);
            }
            let len = self.len.load(Ordering::SeqCst);
            let n = ReadAt::Bytes(&self.bytes[..len as usize]).read_at(buf, offset)?;
            self.read_up_to.fetch_max(offset, Ordering::SeqCst);
            Ok(n)
        }
    }

    fn split_all(bytes: &[u8], capacity: usize) -> Vec<(u64, u64, Vec<u8>, Terminator)> {
        let mut reader = LineReader::with_capacity(bytes, capacity);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            out.push((
                line.number,
                line.offset,
                line.content.to_vec(),
                line.terminator,
            ));
        }
        out
    }

    /// The lines of every chunk, in chunk order, numbered on.
    fn chunked(bytes: &[u8], size: u64) -> Vec<(u64, u64, Vec<u8>, Terminator)> {
        let len = bytes.len() as u64;
        let mut out = Vec::new();
        let mut buffer = Vec::new();
        for index in 0..len.div_ceil(size) {
            let chunk = read_chunk(ReadAt::Bytes(bytes), len, size, index, buffer).unwrap();
            assert_eq!(chunk.ended_at, None);
            let block = chunk.block;
            let before = out.len() as u64;
            for span in &block.spans {
                out.push((
                    span.number + before,
                    span.offset,
                    block.content(span).to_vec(),
                    span.terminator,
                ));
            }
            buffer = block.into_buffer();
        }
        out
    }

    #[test]
    fn chunks_hold_every_line_once_whatever_their_size() {
        let mut input = Vec::new();
        for i in 0..300u32 {
            // Some lines far longer than the chunks.
            let len = if i % 37 == 0 { 3000 } else { (i % 9) as usize };
            input.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, len));
            input.extend_from_slice(
                [&b"\n"[..], b"\r\n", b"\r", b"\r\xff\n", b"\n\n"][(i % 5) as usize],
            );
        }
        let want = split_all(&input, 1 << 20);
        for torn in [false, true] {
            if torn {
                input.extend_from_slice(b"torn\r");
            }
            let want = if torn {
                split_all(&input, 1 << 20)
            } else {
                want.clone()
            };
            for size in [1, 2, 3, 7, 64, 1000, 5000, 1 << 20] {
                assert_eq!(chunked(&input, size), want, "chunks of {size}, torn {torn}");
            }
        }
        assert!(chunked(b"", 4).is_empty());
    }

    #[test]
    fn a_source_that_ends_early_ends_the_chunk_where_it_ends() {
        let bytes = b"one\ntwo\nthree";
        // Told 100 bytes, the source ends after 13: the last line is torn.
        let terminators = |chunk: &Chunk| -> Vec<Terminator> {
            chunk.block.spans.iter().map(|s| s.terminator).collect()
        };
        let chunk = read_chunk(ReadAt::Bytes(bytes), 100, 8, 0, Vec::new()).unwrap();
        assert_eq!(chunk.ended_at, Some(13));
        assert_eq!(terminators(&chunk), [Terminator::Lf, Terminator::Lf]);
        let chunk = read_chunk(ReadAt::Bytes(bytes), 100, 8, 1, Vec::new()).unwrap();
        assert_eq!(chunk.ended_at, Some(13));
        assert_eq!(terminators(&chunk), [Terminator::None]);
        // A chunk past the end is empty, and says that nothing is left
        // where it began reading.
        let chunk = read_chunk(ReadAt::Bytes(bytes), 100, 8, 5, Vec::new()).unwrap();
        assert_eq!(chunk.ended_at, Some(39));
        assert!(chunk.block.spans.is_empty());
        // Ending where the length says is no early end.
        let chunk = read_chunk(ReadAt::Bytes(bytes), 13, 8, 1, Vec::new()).unwrap();
        assert_eq!(chunk.ended_at, None);
        assert_eq!(chunk.block.spans.len(), 1);
    }

    #[test]
    fn universal_newlines() {
        let input = b"a\nb\r\nc\rd";
        let want = vec![
            (1, 0, b"a".to_vec(), Terminator::Lf),
            (2, 2, b"b".to_vec(), Terminator::CrLf),
            (3, 5, b"c".to_vec(), Terminator::Cr),
            (4, 7, b"d".to_vec(), Terminator::None),
        ];
        for cap in [1, 2, 3, 4, 5, 64] {
            assert_eq!(split_all(input, cap), want, "capacity {cap}");
        }
    }

    #[test]
    fn deleted_bytes_between_cr_and_lf_make_one_terminator() {
        for cap in [1, 2, 3, 64] {
            let got = split_all(b"a\r\xff\xfe\nb\n", cap);
            assert_eq!(got[0], (1, 0, b"a".to_vec(), Terminator::CrLf));
            assert_eq!(got[1], (2, 5, b"b".to_vec(), Terminator::Lf));
            // A valid character between them is a line of its own.
            let got = split_all("a\r\u{e9}\n".as_bytes(), cap);
            assert_eq!(got.len(), 2);
            assert_eq!(got[0].3, Terminator::Cr);
            // So is an invalid byte with no newline after it.
            let got = split_all(b"a\r\xff", cap);
            assert_eq!(got.len(), 2);
            assert_eq!(got[1], (2, 2, b"\xff".to_vec(), Terminator::None));
        }
    }

    #[test]
    fn empty_input_and_trailing_newline() {
        assert!(split_all(b"", 4).is_empty());
        assert_eq!(split_all(b"x\n", 4).len(), 1);
        assert_eq!(split_all(b"\n\n", 4).len(), 2);
        assert_eq!(split_all(b"\r", 4), vec![(1, 0, vec![], Terminator::Cr)]);
    }

    #[test]
    fn block_sizes_do_not_change_the_lines() {
        let mut input = Vec::new();
        for i in 0..500u32 {
            input.extend_from_slice(format!("line {i}").as_bytes());
            input.extend_from_slice([&b"\n"[..], b"\r\n", b"\r", b"\r\xff\n"][(i % 4) as usize]);
        }
        input.extend_from_slice(b"torn");
        let want = split_all(&input, 1 << 20);
        assert_eq!(want.len(), 501);
        for cap in [1, 7, 64, 1000] {
            assert_eq!(split_all(&input, cap), want, "capacity {cap}");
        }
    }
}
