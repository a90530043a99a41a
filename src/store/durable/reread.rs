//! The temporary file as the check of a replacement reads it while it is
//! written ([`Reread`]), and the source a result is made from, whose read
//! errors name it ([`Source`]).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::store::error::in_words;

/// A read error of the file a result is made from, carried through the
/// `io::Result` of a `produce` function so that it is reported against
/// that file.
#[derive(Debug)]
pub struct SourceError {
    pub(super) path: PathBuf,
    pub(super) err: io::Error,
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: cannot read: {}",
            self.path.display(),
            in_words(&self.err)
        )
    }
}

impl std::error::Error for SourceError {}

/// `err`, met reading `path`, as an error a `produce` function returns.
pub fn source_error(path: &Path, err: io::Error) -> io::Error {
    if err.get_ref().is_some_and(|inner| inner.is::<SourceError>()) {
        return err;
    }
    io::Error::new(
        err.kind(),
        SourceError {
            path: path.to_path_buf(),
            err,
        },
    )
}

/// A reader of the source file whose errors name it (a `SourceError`,
/// reported against the source rather than the file being written).
pub struct Source<R> {
    path: PathBuf,
    inner: R,
}

impl<R> Source<R> {
    /// Reads `inner`, the content of `path`.
    pub fn new(path: &Path, inner: R) -> Self {
        Source {
            path: path.to_path_buf(),
            inner,
        }
    }
}

impl<R: io::Read> io::Read for Source<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner
            .read(buf)
            .map_err(|err| source_error(&self.path, err))
    }
}

/// How much of the temporary file is written, shared between the writer
/// and the check that follows it.
#[derive(Default)]
pub(super) struct Progress {
    pub(super) state: std::sync::Mutex<Written>,
    pub(super) changed: std::sync::Condvar,
}

#[derive(Clone, Copy, Default)]
pub(super) struct Written {
    pub(super) len: u64,
    pub(super) end: Option<End>,
    /// The check refused the file before the write ended.
    pub(super) refused: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Finished,
    Abandoned,
}

impl Progress {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Written> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn grew(&self, n: usize) {
        self.lock().len += n as u64;
        self.changed.notify_all();
    }

    pub(super) fn end(&self, end: End) -> u64 {
        let len = {
            let mut state = self.lock();
            state.end = Some(end);
            state.len
        };
        self.changed.notify_all();
        len
    }
}

/// Marks the file refused when dropped (after a refusal or a panic in the
/// check) if it is still being written, so that the writer stops; unless
/// it was taken out because the check accepted the file.
pub(super) struct RefuseOnDrop<'a>(pub(super) Option<&'a Progress>);

impl Drop for RefuseOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(progress) = self.0 {
            let mut state = progress.lock();
            if state.end.is_none() {
                state.refused = true;
            }
        }
    }
}

/// Ends the write as abandoned when dropped (after an error or a panic in
/// `produce`), unless it was taken out because the write finished.
pub(super) struct AbandonOnDrop<'a>(pub(super) Option<&'a Progress>);

impl Drop for AbandonOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(progress) = self.0 {
            progress.end(End::Abandoned);
        }
    }
}

/// The temporary file as its writer sees it: every write is reported.
pub(super) struct Reporting<'a> {
    pub(super) file: &'a File,
    pub(super) progress: &'a Progress,
}

impl Write for Reporting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.progress.lock().refused {
            return Err(io::Error::other("the re-read check refused the file"));
        }
        let n = (&mut &*self.file).write(buf)?;
        self.progress.grew(n);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The temporary file as the check of [`write_new`](super::write_new) or
/// [`replace_in_place`](super::replace_in_place) reads it, through its own
/// descriptor, while it is written: a read never goes past what has been
/// written and waits for more until the writer has finished. The end is
/// the end of what was written; a file that turns out shorter, or a write
/// that was abandoned, is a read error.
pub struct Reread<'a> {
    pub(super) file: &'a File,
    pub(super) progress: &'a Progress,
    pub(super) pos: u64,
}

impl io::Read for Reread<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = {
            let mut state = self.progress.lock();
            loop {
                if state.len > self.pos {
                    break state.len - self.pos;
                }
                match state.end {
                    Some(End::Finished) => return Ok(0),
                    Some(End::Abandoned) => {
                        return Err(io::Error::other("the write was abandoned"));
                    }
                    None => {
                        state = self
                            .progress
                            .changed
                            .wait(state)
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                    }
                }
            }
        };
        let want = buf
            .len()
            .min(usize::try_from(available).unwrap_or(usize::MAX));
        let n = std::os::unix::fs::FileExt::read_at(self.file, &mut buf[..want], self.pos)?;
        if n == 0 && want > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the temporary file is shorter than what was written",
            ));
        }
        self.pos += n as u64;
        Ok(n)
    }
}

/// What the check of a temporary file decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Publish {
    /// Rename it over the target.
    Yes,
    /// Discard it: the target already has this content.
    No,
}
