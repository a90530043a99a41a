//! The scan of a byte stream, read in order: a reader hands out blocks of
//! whole lines ([`BlockReader`]), the unit of the scan's [`pipeline`]. The
//! blocks are read on the calling thread ([`Fetch::Overlapped`]), so a read
//! that waits (for a writer, say) holds no thread of the pool.

use std::io::{self, Read};

use super::summary::Summary;
use super::{Fetch, Lines, Observer, Scan, ScanOptions, Source, pipeline, take_block};
use crate::engine::journal::lines::BlockReader;
use crate::engine::journal::replay::Replay;

impl<R: Read + Send> Source for R {
    fn scan(
        self,
        replay: Replay,
        observer: &mut (dyn Observer + Send),
        options: ScanOptions,
    ) -> io::Result<Scan> {
        scan_stream(self, replay, observer, options)
    }
}

/// The scan of a stream: read a block of whole lines, classify its lines,
/// then sum up, replay and report them in file order; in parallel, while
/// one block's lines are classified on every core, the block before it is
/// replayed and the block after it read.
pub(super) fn scan_stream<R: Read + Send>(
    src: R,
    mut replay: Replay,
    observer: &mut (dyn Observer + Send),
    options: ScanOptions,
) -> io::Result<Scan> {
    let mut summary = Summary::empty();
    let mut reader = BlockReader::with_block_size(src, options.block_size);
    pipeline(
        options.parallel,
        Fetch::Overlapped,
        |spent: Option<Lines>| {
            let classified = match spent {
                Some(Lines { block, classified }) => {
                    reader.recycle(block);
                    classified
                }
                None => Vec::new(),
            };
            let block = reader.next_block()?;
            Ok(block.map(|block| Lines { block, classified }))
        },
        |lines| lines.classify(options.parallel),
        |lines| {
            let (block, classified) = (&lines.block, &lines.classified);
            take_block(&mut summary, &mut replay, observer, block, classified, 0);
            Ok(())
        },
    )?;
    summary.bytes = reader.bytes_read();
    Ok(Scan { replay, summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that notes whether it was ever read on a thread of the pool.
    struct Watched<'a> {
        bytes: &'a [u8],
        in_pool: bool,
    }

    impl Read for Watched<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.in_pool |= rayon::current_thread_index().is_some();
            self.bytes.read(buf)
        }
    }

    #[test]
    fn a_stream_is_read_on_the_calling_thread_alone() {
        let line = br#"{"clock":"unix","id":"c1037804a292046418339e8ace36b6ba473d64706a0068d04d512762b0452579","op":"reclaim","time":1754550010.0}"#;
        let bytes = [&line[..], b"\n"].concat().repeat(2000);
        let mut src = Watched {
            bytes: &bytes,
            in_pool: false,
        };
        let options = ScanOptions {
            parallel: true,
            block_size: 1000,
        };
        let scan = scan_stream(&mut src, Replay::default(), &mut (), options).unwrap();
        assert_eq!(scan.summary.lines, 2000);
        // A read that waits (for a writer) holds no thread of the pool.
        assert!(!src.in_pool, "a read ran in the pool");
    }
}
