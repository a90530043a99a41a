//! Splitting a journal into the lines upstream iterates.
//!
//! Upstream opens the file in text mode (`open(path, encoding="utf-8",
//! errors="ignore")`), so its lines end at `\n`, `\r\n` or a bare `\r`
//! (universal newlines), and invalid UTF-8 bytes are deleted *before* the
//! newline translation. The one place the order matters is a `\r` followed
//! by bytes that are all deleted and then `\n`: Python sees one `\r\n`.
//! Line numbers here are upstream's; offsets are byte offsets in the file.
//!
//! The reader streams with one buffer that grows only to the longest line.

use std::io::{self, Read};

use memchr::memchr2;

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
    /// Length of the terminator in bytes (including deleted bytes folded
    /// into a `\r…\n`).
    pub terminator_len: usize,
}

const INITIAL_BUFFER: usize = 1 << 20;

/// A streaming line reader over any byte source.
pub struct LineReader<R> {
    src: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    offset: u64,
    number: u64,
    bytes_read: u64,
}

impl<R: Read> LineReader<R> {
    /// Reads lines from `src`.
    pub fn new(src: R) -> Self {
        Self::with_capacity(src, INITIAL_BUFFER)
    }

    /// Reads lines from `src` with a first buffer of `capacity` bytes (tests
    /// use tiny buffers to exercise every boundary).
    pub fn with_capacity(src: R, capacity: usize) -> Self {
        LineReader {
            src,
            buf: vec![0; capacity.max(2)],
            start: 0,
            end: 0,
            eof: false,
            offset: 0,
            number: 0,
            bytes_read: 0,
        }
    }

    /// Total bytes consumed from the source so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Reads more bytes, keeping the unconsumed part. Returns false at EOF.
    fn refill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grown = self.buf.len() * 2;
            self.buf.resize(grown, 0);
        }
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    self.bytes_read += n as u64;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The next line, or `None` at the end of the file.
    pub fn next_line(&mut self) -> io::Result<Option<RawLine<'_>>> {
        let mut scanned = 0; // bytes of the current line known to hold no terminator
        loop {
            let window = &self.buf[self.start + scanned..self.end];
            let Some(hit) = memchr2(b'\n', b'\r', window) else {
                scanned = self.end - self.start;
                if self.refill()? {
                    continue;
                }
                if self.start == self.end {
                    return Ok(None);
                }
                return Ok(Some(self.emit(self.end - self.start, Terminator::None, 0)));
            };
            let at = scanned + hit; // relative to start
            if self.buf[self.start + at] == b'\n' {
                return Ok(Some(self.emit(at, Terminator::Lf, 1)));
            }
            // A '\r': decide between '\r\n', '\r<deleted bytes>\n' and '\r'.
            match self.crlf_len(at)? {
                Some(Some(len)) => return Ok(Some(self.emit(at, Terminator::CrLf, len))),
                Some(None) => return Ok(Some(self.emit(at, Terminator::Cr, 1))),
                None => {
                    // More bytes were needed and the buffer moved; rescan.
                    scanned = at;
                }
            }
        }
    }

    /// For a `\r` at `at` (relative to start): `Some(Some(len))` for a CRLF
    /// of `len` bytes, `Some(None)` for a bare CR, `None` if the buffer was
    /// refilled and the caller must look again.
    fn crlf_len(&mut self, at: usize) -> io::Result<Option<Option<usize>>> {
        let after = self.start + at + 1;
        let mut j = after;
        while j < self.end && self.buf[j] >= 0x80 {
            j += 1;
        }
        if j == self.end && !self.eof {
            // Either more bytes arrive or EOF is now known: look again.
            self.refill()?;
            return Ok(None);
        }
        if j < self.end && self.buf[j] == b'\n' {
            let between = &self.buf[after..j];
            if between.is_empty() || between.utf8_chunks().all(|c| c.valid().is_empty()) {
                return Ok(Some(Some(j - after + 2)));
            }
        }
        Ok(Some(None))
    }

    fn emit(&mut self, len: usize, terminator: Terminator, terminator_len: usize) -> RawLine<'_> {
        let start = self.start;
        self.start += len + terminator_len;
        self.number += 1;
        let offset = self.offset;
        self.offset += (len + terminator_len) as u64;
        RawLine {
            number: self.number,
            offset,
            content: &self.buf[start..start + len],
            raw: &self.buf[start..start + len + terminator_len],
            terminator,
            terminator_len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(bytes: &[u8], capacity: usize) -> Vec<(u64, u64, Vec<u8>, Terminator)> {
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

    #[test]
    fn universal_newlines() {
        let input = b"a\nb\r\nc\rd";
        let want = vec![
            (1, 0, b"a".to_vec(), Terminator::Lf),
            (2, 2, b"b".to_vec(), Terminator::CrLf),
            (3, 5, b"c".to_vec(), Terminator::Cr),
            (4, 7, b"d".to_vec(), Terminator::None),
        ];
        for cap in [2, 3, 4, 5, 64] {
            assert_eq!(split(input, cap), want, "capacity {cap}");
        }
    }

    #[test]
    fn deleted_bytes_between_cr_and_lf_make_one_terminator() {
        let got = split(b"a\r\xff\xfe\nb\n", 2);
        assert_eq!(got[0], (1, 0, b"a".to_vec(), Terminator::CrLf));
        assert_eq!(got[1], (2, 5, b"b".to_vec(), Terminator::Lf));
        // A valid character between them is a line of its own.
        let got = split("a\r\u{e9}\n".as_bytes(), 3);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].3, Terminator::Cr);
    }

    #[test]
    fn empty_input_and_trailing_newline() {
        assert!(split(b"", 4).is_empty());
        assert_eq!(split(b"x\n", 4).len(), 1);
        assert_eq!(split(b"\n\n", 4).len(), 2);
        assert_eq!(split(b"\r", 4), vec![(1, 0, vec![], Terminator::Cr)]);
    }
}
