//! The reader agrees with itself: parallel and sequential scans, of a
//! stream or by position, and every block size, give the same lines,
//! classifications, effects and state.

use leasejournal::engine::journal::encode::{lease_line, marker_line};
use leasejournal::engine::journal::{Clock, Positional, ScanOptions, WorkId};
use leasejournal::engine::json::PyInt;

use crate::support::{cases, fixture};

fn run(bytes: &[u8], options: ScanOptions) -> (String, String, Vec<String>) {
    leasejournal::fuzzing::scan_log(bytes, options)
}

fn positional(bytes: &[u8], options: ScanOptions) -> (String, String, Vec<String>) {
    leasejournal::fuzzing::scan_log(Positional::bytes(bytes), options)
}

/// Four threads even on a machine with fewer cores: more chunks in flight
/// at once, and more orders in which they finish.
fn four_threads<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap()
        .install(f)
}

fn assert_consistent(bytes: &[u8], what: &str) {
    let reference = run(
        bytes,
        ScanOptions {
            parallel: false,
            block_size: 1 << 20,
        },
    );
    for parallel in [false, true] {
        for block_size in [1, 7, 100, 4096, 4 << 20] {
            let options = ScanOptions {
                parallel,
                block_size,
            };
            assert!(
                run(bytes, options) == reference,
                "{what}: parallel={parallel} block_size={block_size} differs"
            );
            assert!(
                positional(bytes, options) == reference,
                "{what}: positional, parallel={parallel} block_size={block_size} differs"
            );
        }
    }
    for block_size in [1, 100, 4096] {
        let options = ScanOptions {
            parallel: true,
            block_size,
        };
        assert!(
            four_threads(|| positional(bytes, options)) == reference,
            "{what}: positional on four threads, block_size={block_size} differs"
        );
    }
}

#[test]
fn fidelity_cases_scan_the_same_every_way() {
    for dir in cases(&['j', 'w']) {
        let bytes = std::fs::read(dir.join("journal.jsonl")).unwrap();
        assert_consistent(&bytes, &dir.display().to_string());
    }
    for sample in [
        "samples/torn_tail_demo.jsonl",
        "samples/legacy_demo.input.jsonl",
    ] {
        assert_consistent(&std::fs::read(fixture(sample)).unwrap(), sample);
    }
}

/// A generated journal with damage of every kind spread through it, so
/// that with the block sizes above damage lands on block boundaries.
fn damaged_journal() -> Vec<u8> {
    let mut out = Vec::new();
    let damage: [&[u8]; 8] = [
        b"{\"attempts\":1,\"clock\":\"unix\",\"id\":\"",
        b"\r",
        b"\r\xff\xfe\n",
        b"\n\n",
        b"\x00\x00\x00\n",
        b"[1,2]\r\n",
        b"{\"op\":\"done\",\"id\":\"x\"}\n",
        b"\xef\xbb\xbf",
    ];
    for n in 0..3000u64 {
        let payload = format!("{{\"path\":\"/afl/queue/id:{n:06}\",\"target_branch\":{n}}}");
        let id = WorkId::of_canonical(payload.as_bytes());
        let clock = if n % 17 == 0 {
            Clock::Legacy
        } else {
            Clock::Unix
        };
        out.extend(lease_line(
            &id,
            &PyInt::Small((n % 5) as i64),
            1_754_550_000.0 + n as f64,
            &PyInt::Small(1),
            clock,
            payload.as_bytes(),
        ));
        if n % 3 == 0 {
            out.extend(marker_line(
                "done",
                &id,
                Clock::Unix,
                1_754_550_001.0 + n as f64,
            ));
        }
        if n % 11 == 0 {
            out.extend_from_slice(damage[(n / 11 % 8) as usize]);
        }
    }
    out.extend_from_slice(b"{\"attempts\":1,\"clock\":\"unix\",\"id\":\"torn");
    out
}

#[test]
fn damage_at_block_boundaries_changes_nothing() {
    let bytes = damaged_journal();
    assert_eq!(bytes.len(), 750_004);
    assert_consistent(&bytes, "damaged journal");
    let (summary, _, log) = run(&bytes, ScanOptions::default());
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    // Every kind of damage above, counted once per place it went in.
    assert_eq!(
        summary["ignored"],
        serde_json::json!({
            "bad-id": 34, "blank": 136, "bom": 34, "corrupt": 34,
            "glued-record": 35, "not-an-object": 34, "orphan-done": 23, "torn-tail": 1
        }),
        "{summary}"
    );
    // One log entry per line.
    assert_eq!(log.len(), 4239);
}
