//! The floor under `verify`: only the work no verifier of a journal can
//! skip, done as cheaply as this machine allows. Every core reads 1 MiB
//! chunks of the file by position into a buffer of its own, splits them
//! into lines and hashes each lease's payload with SHA-256, with no JSON
//! parsing, no checks and no replay. `scripts/bench.sh` reports its time
//! next to `wc -l`'s, which bounds what `verify` can reach here.
//!
//! Usage: floor FILE...
//!
//! With several files, each core takes whole files one after another.
//!
//! A line's payload is taken to be everything between `"payload":` and the
//! last `,"time":` (what upstream writes); other lines are only split.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

const CHUNK: u64 = 1 << 20;

fn main() {
    let paths: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: floor FILE...");
        std::process::exit(2);
    }
    let open = |path: &std::ffi::OsString| {
        let file = File::open(path).unwrap_or_else(|e| {
            eprintln!("{}: {e}", path.to_string_lossy());
            std::process::exit(1);
        });
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        (file, len)
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // One file: every core reads its chunks. Several: each core takes
    // whole files, one after another, as `verify` of many paths does.
    let next = AtomicU64::new(0);
    let single = paths.len() == 1;
    let one = single.then(|| open(&paths[0]));
    let (lines, hashed) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| match &one {
                    Some((file, len)) => work(file, *len, &next),
                    None => {
                        let mut total = (0, 0);
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                            let Some(path) = paths.get(i) else {
                                break total;
                            };
                            let (file, len) = open(path);
                            let (l, h) = work(&file, len, &AtomicU64::new(0));
                            total = (total.0 + l, total.1 + h);
                        }
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .fold((0, 0), |(l, h), (wl, wh)| (l + wl, h + wh))
    });
    println!("{lines} lines, {hashed} payloads hashed");
}

/// Chunks until none is left: (lines, payloads hashed). A line belongs to
/// the chunk it starts in.
fn work(file: &File, len: u64, next: &AtomicU64) -> (u64, u64) {
    let mut buffer = vec![0u8; (CHUNK + (64 << 10)) as usize];
    let (mut lines, mut hashed, mut check) = (0u64, 0u64, 0u8);
    loop {
        let lo = next.fetch_add(CHUNK, Ordering::Relaxed);
        if lo >= len {
            break;
        }
        let from = lo.saturating_sub(1);
        let data = read(file, from, len, &mut buffer);
        // The first line starting at or after `lo`.
        let mut pos = if lo == 0 {
            0
        } else {
            memchr::memchr(b'\n', data).map_or(data.len(), |i| i + 1)
        };
        let end = (lo + CHUNK - from) as usize;
        while pos < end.min(data.len()) {
            let stop = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
            let line = &data[pos..stop];
            lines += 1;
            if let (Some(p), Some(t)) = (
                memchr::memmem::find(line, b"\"payload\":"),
                memchr::memmem::rfind(line, b",\"time\":"),
            ) && p + 10 <= t
            {
                check ^= Sha256::digest(&line[p + 10..t])[0];
                hashed += 1;
            }
            pos = stop + 1;
        }
    }
    std::hint::black_box(check);
    (lines, hashed)
}

/// Reads from `from` until the buffer is full, the file ends, or (past a
/// chunk's end) a line ends; grows the buffer for a long line.
fn read<'a>(file: &File, from: u64, len: u64, buffer: &'a mut Vec<u8>) -> &'a [u8] {
    let mut filled = 0;
    loop {
        let want = buffer.len().min((len - from) as usize);
        while filled < want {
            match file.read_at(&mut buffer[filled..want], from + filled as u64) {
                Ok(0) => return &buffer[..filled],
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => panic!("read error: {e}"),
            }
        }
        let chunk_end = (CHUNK + 1) as usize;
        if filled == (len - from) as usize
            || memchr::memchr(b'\n', &buffer[chunk_end.min(filled)..filled]).is_some()
        {
            return &buffer[..filled];
        }
        let grown = buffer.len() * 2;
        buffer.resize(grown, 0);
    }
}
