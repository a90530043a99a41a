//! How an operation shows that it is reading a large file, without knowing
//! how (or whether) the face draws it.

use std::path::Path;

/// Where an operation reports its reading progress.
pub trait Progress: Sync {
    /// A meter for reading `len` bytes of `path`.
    fn meter(&self, path: &Path, len: u64) -> Box<dyn Meter + '_>;
}

/// The progress of reading one file.
pub trait Meter: Sync {
    /// `bytes` more were read.
    fn advance(&self, bytes: u64);
    /// The reading ended; the meter disappears.
    fn finish(&self);
}

/// No progress shown.
pub struct Quiet;

impl Progress for Quiet {
    fn meter(&self, _path: &Path, _len: u64) -> Box<dyn Meter + '_> {
        Box::new(Quiet)
    }
}

impl Meter for Quiet {
    fn advance(&self, _bytes: u64) {}
    fn finish(&self) {}
}
