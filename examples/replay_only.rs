//! What the replay alone costs: reads a journal whole, classifies every
//! line, and only then times applying the records in order (three times,
//! each into a fresh state), on one thread. The scan overlaps the replay
//! with the classification of later lines on other cores, but the replay
//! itself cannot be split; `README.md` uses this to bound what `verify`
//! can reach. Holds the whole file and its classified lines in memory
//! (about 1.7 GiB for a 1 GiB journal).
//!
//! Usage: replay_only FILE

use std::time::Instant;

use leasejournal::engine::journal::{BlockReader, Classified, LineKind, Replay, classify};

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: replay_only FILE");
        std::process::exit(2);
    };
    let file = std::fs::File::open(&path).unwrap_or_else(|e| {
        eprintln!("{}: {e}", path.to_string_lossy());
        std::process::exit(1);
    });
    let mut reader = BlockReader::with_block_size(file, 64 << 20);
    let mut blocks = Vec::new();
    while let Some(block) = reader.next_block().expect("read error") {
        blocks.push(block);
    }
    let classified: Vec<Vec<Classified>> = blocks
        .iter()
        .map(|b| b.spans.iter().map(|s| classify(b.content(s))).collect())
        .collect();
    for _ in 0..3 {
        let start = Instant::now();
        let mut replay = Replay::default();
        for (block, lines) in blocks.iter().zip(&classified) {
            for (span, line) in block.spans.iter().zip(lines) {
                if let LineKind::Record(record) = &line.kind {
                    let effect =
                        replay.apply(record, block.content(span), span.number, span.offset);
                    std::hint::black_box(effect);
                }
            }
        }
        println!(
            "replay {:.3} s: {} active, {} completed",
            start.elapsed().as_secs_f64(),
            replay.active.len(),
            replay.completed.len()
        );
    }
}
