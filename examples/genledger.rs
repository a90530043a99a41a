//! Writes a digest ledger as upstream's `PersistentShardLedger.add` does,
//! for benchmarks: the SHA-256 of `0`, `1`, … `COUNT-1` (decimal), each as
//! one lowercase hex line in `processed.NNN.log` of its shard
//! (`int(digest[:8], 16) % SHARDS`). Deterministic: the same arguments
//! give the same bytes.
//!
//! Usage: cargo run --release --example genledger -- COUNT SHARDS DIR

use std::io::{BufWriter, Write};

use leasejournal::engine::ledger::{Digest, file_name};
use sha2::{Digest as _, Sha256};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let parsed = (
        args.get(1).and_then(|s| s.parse::<u64>().ok()),
        args.get(2)
            .and_then(|s| s.parse::<u32>().ok())
            .filter(|s| *s > 0),
        args.get(3),
    );
    let (Some(count), Some(shards), Some(dir)) = parsed else {
        eprintln!("usage: genledger COUNT SHARDS DIR");
        std::process::exit(2);
    };
    std::fs::create_dir_all(dir)?;
    let mut files = (0..shards)
        .map(|i| {
            let file = std::fs::File::create(std::path::Path::new(dir).join(file_name(i)))?;
            Ok(BufWriter::with_capacity(1 << 16, file))
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    for n in 0..count {
        let digest = Digest(Sha256::digest(n.to_string().as_bytes()).into());
        let line = format!("{digest}\n");
        files[digest.shard(shards) as usize].write_all(line.as_bytes())?;
    }
    for mut file in files {
        file.flush()?;
    }
    Ok(())
}
