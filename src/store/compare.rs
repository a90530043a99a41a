//! Writers a result is written through besides its file: one that
//! compares what is written with what is there ([`CompareSink`]: "already
//! compact" and the size without another pass), and one that writes to
//! two ([`Tee`]).

use std::io::{self, Read, Write};

/// A sink that compares what is written with a reader's bytes. Once they
/// differ it only counts: the reader and its buffer are dropped.
pub struct CompareSink<R: Read> {
    src: Option<R>,
    scratch: Vec<u8>,
    /// Bytes written so far.
    pub written: u64,
    /// Whether everything written so far matched.
    pub equal: bool,
}

impl<R: Read> CompareSink<R> {
    /// Compares against `src`.
    pub fn new(src: R) -> Self {
        CompareSink {
            src: Some(src),
            scratch: Vec::new(),
            written: 0,
            equal: true,
        }
    }

    /// Whether the output equalled the whole source.
    pub fn finish(self) -> io::Result<(u64, bool)> {
        let at_end = match self.src {
            Some(mut src) => src.read(&mut [0u8; 1])? == 0,
            None => false,
        };
        Ok((self.written, self.equal && at_end))
    }
}

impl<R: Read> Write for CompareSink<R> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(src) = &mut self.src {
            if self.scratch.len() < buf.len() {
                self.scratch.resize(buf.len(), 0);
            }
            let theirs = &mut self.scratch[..buf.len()];
            let mut got = 0;
            while got < buf.len() {
                let n = src.read(&mut theirs[got..])?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            if got < buf.len() || theirs != buf {
                self.equal = false;
                self.src = None;
                self.scratch = Vec::new();
            }
        }
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes everything to two writers.
pub struct Tee<'a> {
    /// The first.
    pub a: &'a mut dyn Write,
    /// The second.
    pub b: &'a mut dyn Write,
}

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.a.write_all(buf)?;
        self.b.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.a.flush()?;
        self.b.flush()
    }
}
