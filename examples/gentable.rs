//! Writes a realistic fenced work lease table, for benchmarks: COUNT
//! records over SHARDS shard directories (`<root>/<shard:03d>/<id>.json`),
//! each with the `<id>.json.lock` beside it that upstream never deletes,
//! as a long campaign leaves them (records are never deleted). The records
//! are byte for byte what upstream's `_write_record` writes
//! (`json.dump(record, sort_keys=True, separators=(",",":"))` + `"\n"`):
//! the AFL master's dispatch payloads (the ten keys `_dispatch_to`
//! writes), ids the SHA-256 of the canonical payload, owners
//! `nodename:pid` of four masters on three hosts, tokens
//! `owner:worker:pid:time_ns`, and `updated` times as `repr(time.time())`
//! writes them (about seven decimals). All records but the last few
//! hundred dispatched are `done` (with `completed`, some stolen once);
//! the in-flight ones, bounded by the workers as in a real campaign, are
//! 300 `leased` (12 of them expired, left by a master that died) and 8
//! `committing`. The campaign's present is [`NOW`]: read the table with
//! `--now 1754600000`. Deterministic: the same arguments give the same
//! bytes.
//!
//! Usage: cargo run --release --example gentable -- COUNT SHARDS ROOT

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use leasejournal::engine::journal::WorkId;
use leasejournal::engine::json::float_repr;

/// The campaign's present (Unix seconds).
const NOW: f64 = 1_754_600_000.0;
/// Records in flight at `NOW`: leased, then committing.
const LEASED: u64 = 300;
const EXPIRED: u64 = 12;
const COMMITTING: u64 = 8;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let parsed = (
        args.get(1).and_then(|s| s.parse::<u64>().ok()),
        args.get(2)
            .and_then(|s| s.parse::<u64>().ok())
            .filter(|s| *s > 0),
        args.get(3),
    );
    let (Some(count), Some(shards), Some(root)) = parsed else {
        eprintln!("usage: gentable COUNT SHARDS ROOT");
        std::process::exit(2);
    };
    let root = Path::new(root);
    for shard in 0..shards {
        std::fs::create_dir_all(root.join(format!("{shard:03}")))?;
    }
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let masters = ["hostA:1234", "hostA:1301", "hostB:2210", "hostC:777"];
    // One dispatch every 30 ms or so, the last ones a minute before NOW.
    let start = NOW - 60.0 - count as f64 * 0.0313;
    let in_flight = LEASED + COMMITTING;
    let mut record = Vec::with_capacity(1024);
    for n in 0..count {
        let actions = match next() % 3 {
            0 => String::new(),
            1 => format!("[{},\"solve\"]", next() % 100_000),
            _ => format!(
                "[{},\"sample\"],[{},\"skip\"]",
                next() % 100_000,
                next() % 100_000
            ),
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
            if next() % 2 == 0 {
                0
            } else {
                next() % (1 << 40)
            },
        );
        let id = WorkId::of_canonical(payload.as_bytes());
        let jitter = |r: u64| (r % 10_000_000) as f64 * 1e-9;
        let dispatched = start + n as f64 * 0.0313 + jitter(next());
        // From the end: committing, the expired leases, the live ones.
        let from_end = count - 1 - n;
        let (status, updated, completed, owner) = if from_end < COMMITTING {
            let t = NOW - 1.0 - (next() % 20) as f64 - jitter(next());
            ("committing", t, None, masters[(next() % 3) as usize])
        } else if from_end < COMMITTING + EXPIRED {
            // hostC:777 died an hour ago; its leases were never renewed.
            let t = NOW - 3600.0 - (next() % 60) as f64 - jitter(next());
            ("leased", t, None, masters[3])
        } else if from_end < in_flight {
            // Heartbeats every 30 s or so.
            let t = NOW - (next() % 45) as f64 - jitter(next());
            ("leased", t, None, masters[(next() % 3) as usize])
        } else {
            let done = dispatched + 2.0 + (next() % 40) as f64 + jitter(next());
            let t = dispatched + 1.0 + jitter(next());
            ("done", t, Some(done), masters[(next() % 4) as usize])
        };
        let stolen = next() % 200 == 0;
        let (attempts, steals, previous) = if stolen {
            (2, 1, masters[(next() % 4) as usize])
        } else {
            (1, 0, "")
        };
        let worker = next() % 63 + 1;
        let pid = owner.rsplit_once(':').map_or("1", |(_, p)| p);
        let token_ns = (dispatched * 1e9) as u64 + next() % 1000;
        record.clear();
        write!(record, "{{\"attempts\":{attempts},")?;
        if let Some(done) = completed {
            write!(record, "\"completed\":{},", float_repr(done))?;
        }
        writeln!(
            record,
            "\"id\":\"{id}\",\"owner\":\"{owner}\",\"payload\":{payload},\"previous_owner\":\"{previous}\",\"schema\":1,\"status\":\"{status}\",\"steals\":{steals},\"token\":\"{owner}:{worker}:{pid}:{token_ns}\",\"updated\":{},\"worker\":{worker}}}",
            float_repr(updated)
        )?;
        let head = u32::from_be_bytes([id.0[0], id.0[1], id.0[2], id.0[3]]);
        let dir = root.join(format!("{:03}", u64::from(head) % shards));
        std::fs::write(dir.join(format!("{id}.json")), &record)?;
        // Upstream opens the lock file with mode 0600.
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(dir.join(format!("{id}.json.lock")))?;
    }
    Ok(())
}
