//! The scan of a byte stream, read in order: a reader hands out blocks of
//! whole lines ([`BlockReader`]); each block's lines are classified on
//! every core while the previous block is replayed in order.

use std::io::{self, Read};

use super::summary::Summary;
use super::{Observer, Scan, ScanOptions, Source, take_block};
use crate::engine::journal::classify::classify;
use crate::engine::journal::lines::{Block, BlockReader};
use crate::engine::journal::model::Classified;
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

/// The scan of a stream. Sequential: read a block of whole lines, classify
/// its lines, then sum up, replay and report them in file order. Parallel
/// (the same result, faster): a reader thread reads blocks ahead, and while
/// one block's lines are replayed in order the next block's lines are
/// classified on the other cores.
pub(super) fn scan_stream<R: Read + Send>(
    src: R,
    mut replay: Replay,
    observer: &mut (dyn Observer + Send),
    options: ScanOptions,
) -> io::Result<Scan> {
    let mut summary = Summary::empty();
    let mut reader = BlockReader::with_block_size(src, options.block_size);
    if !options.parallel {
        while let Some(block) = reader.next_block()? {
            let classified: Vec<Classified> = block
                .spans
                .iter()
                .map(|span| classify(block.content(span)))
                .collect();
            take_block(&mut summary, &mut replay, observer, &block, &classified, 0);
            reader.recycle(block);
        }
        summary.bytes = reader.bytes_read();
        return Ok(Scan { replay, summary });
    }
    // While one block's lines are classified on every core, the previous
    // block is replayed in order and the next one read.
    let mut current = reader.next_block()?;
    let mut previous: Option<(Block, Vec<Classified>)> = None;
    while let Some(block) = current.take() {
        let (classified, next) = rayon::join(
            || classify_parallel(&block),
            || {
                if let Some((done, classified)) = previous.take() {
                    take_block(&mut summary, &mut replay, observer, &done, &classified, 0);
                    reader.recycle(done);
                }
                reader.next_block()
            },
        );
        previous = Some((block, classified));
        current = next?;
    }
    if let Some((done, classified)) = previous.take() {
        take_block(&mut summary, &mut replay, observer, &done, &classified, 0);
    }
    summary.bytes = reader.bytes_read();
    Ok(Scan { replay, summary })
}

/// Classifies a block's lines on every core. The pieces are small (eight
/// lines and up), so that the core that finishes replaying the previous
/// block finds work left to take: with pieces of hundreds of lines, one
/// core often waited for the other's last piece.
fn classify_parallel(block: &Block) -> Vec<Classified> {
    use rayon::prelude::*;
    block
        .spans
        .par_iter()
        .with_min_len(8)
        .map(|span| classify(block.content(span)))
        .collect()
}
