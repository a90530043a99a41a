//! Writes a realistic `.work_leases.jsonl` of about the given size, for
//! benchmarks: master dispatch payloads (the ten keys upstream's
//! `_dispatch_to` writes), about 95 % of leases completed, 3 % reclaimed,
//! 2 % left active, a few legacy clock-less leases, and a torn tail.
//! Deterministic: the same size gives the same bytes.
//!
//! Usage: cargo run --release --example genjournal -- SIZE_BYTES OUT

use std::io::{BufWriter, Write};

use leasejournal::engine::journal::encode::{lease_line, marker_line};
use leasejournal::engine::journal::{Clock, WorkId};
use leasejournal::engine::json::PyInt;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(size), Some(out)) = (args.get(1).and_then(|s| s.parse::<u64>().ok()), args.get(2))
    else {
        eprintln!("usage: genjournal SIZE_BYTES OUT");
        std::process::exit(2);
    };
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(out)?);
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut written = 0u64;
    let mut n = 0u64;
    let mut pending: Vec<(WorkId, f64)> = Vec::new();
    while written < size {
        n += 1;
        let actions = match next() % 3 {
            0 => String::new(),
            1 => format!("[{},\"solve\"]", next()),
            _ => format!("[{},\"sample\"],[{},\"skip\"]", next(), next()),
        };
        let payload = format!(
            "{{\"continuation\":null,\"focus_bytes\":\"{}\",\"parameter_overrides\":{{}},\"parameter_token\":\"tok-{}\",\"path\":\"/afl/queue/id:{n:06},src:{:06}\",\"s2f_actions\":[{actions}],\"schedule_prefix\":[{},{}],\"sha256\":\"{:016x}{:016x}{:016x}{:016x}\",\"strategy\":{},\"target_branch\":{}}}",
            ["", "0-15", "4-7"][(next() % 3) as usize],
            next() % 100,
            next() % 1_000_000,
            next() % 8,
            next() % 8,
            next(),
            next(),
            next(),
            next(),
            next() % 4,
            if next() % 2 == 0 { 0 } else { next() },
        );
        let id = WorkId::of_canonical(payload.as_bytes());
        // Arbitrary doubles, as `repr(time.time())` writes them: about
        // seven decimals (1754550000.0140238), not a short round number.
        let time = 1_754_550_000.0 + n as f64 * 0.0137 + (next() % 10_000_000) as f64 * 1e-9;
        let legacy = n % 50_000 == 7;
        let (clock, t) = if legacy {
            (Clock::Legacy, 310_000.0 + n as f64)
        } else {
            (Clock::Unix, time)
        };
        let line = lease_line(
            &id,
            &PyInt::Small((n % 31 + 1) as i64),
            t,
            &PyInt::Small(1),
            clock,
            payload.as_bytes(),
        );
        w.write_all(&line)?;
        written += line.len() as u64;
        pending.push((id, time));
        // Complete or reclaim the lease a few dispatches later.
        if pending.len() > 8 {
            let (old, t0) = pending.remove((next() % 4) as usize);
            let line = match next() % 100 {
                0..=94 => Some(marker_line("done", &old, Clock::Unix, t0 + 3.5)),
                95..=97 => Some(marker_line("reclaim", &old, Clock::Unix, t0 + 3.5)),
                _ => None,
            };
            if let Some(line) = line {
                w.write_all(&line)?;
                written += line.len() as u64;
            }
        }
    }
    w.write_all(b"{\"attempts\":1,\"clock\":\"unix\",\"id\":\"5d1c1f1b19ad33d7")?;
    w.flush()
}
