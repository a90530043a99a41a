//! The properties the fuzz targets (`fuzz/`) check on arbitrary bytes.
//! They live in the library so that `cargo test` runs them on every seed
//! and every saved reproducer (`fixtures/fuzz/`), on stable Rust.
//! Each panics when a property fails.

use crate::engine::journal::compaction as compact;
use crate::engine::journal::{
    self, Clock, LineEvent, LineKind, LineReader, Observer, Positional, Replay, ScanOptions,
    WorkId, classify, classify_fast, classify_general, encode,
};
use crate::engine::json::{self, Mode, NonFinite, PyInt, Value};
use crate::engine::snapshot;
use crate::store::session::check_replay;

/// Value equality with NaN equal to itself and -0.0 distinct from 0.0,
/// which is what a round trip through text must preserve.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.members().iter().all(|(k, v)| {
                    y.members()
                        .iter()
                        .any(|(k2, v2)| k == k2 && same_value(v, v2))
                })
        }
        _ => a == b,
    }
}

fn text(data: &[u8]) -> String {
    let (stripped, _) = json::strip_invalid_utf8(data);
    String::from_utf8(stripped.into_owned()).expect("stripping leaves UTF-8")
}

/// The parser never panics, and in both modes whatever it accepts encodes
/// to text that parses back to the same value and encodes the same again.
pub fn check_json(data: &[u8]) {
    let text = text(data);
    for mode in [Mode::Journal, Mode::Snapshot] {
        let Ok(parsed) = json::parse(&text, mode) else {
            continue;
        };
        let bytes =
            json::to_canonical(&parsed.value, NonFinite::Python).expect("Python mode encodes all");
        let encoded = std::str::from_utf8(&bytes).expect("canonical output is ASCII");
        let again = json::parse(encoded, Mode::Snapshot).expect("canonical output parses");
        assert!(
            same_value(&again.value, &parsed.value),
            "round trip changed {encoded}"
        );
        let twice = json::to_canonical(&again.value, NonFinite::Python).expect("encodes");
        assert_eq!(twice, bytes, "re-encoding is not stable");
    }
}

/// For any value the journal parser accepts and that is finite, the
/// canonical encoding parses back (in journal mode) to the same value and
/// re-encodes to the same bytes; non-finite values are refused. A finite
/// float's encoding is recognised as its own repr, with its exact value,
/// and an object's encoding, as the payload of a lease line in upstream's
/// form, is classified the same by the fast path (when it takes the line)
/// and the general one, and read for its `path` and `continuation` as a full
/// parse reads them.
pub fn check_canonical(data: &[u8]) {
    let text = text(data);
    let Ok(parsed) = json::parse(&text, Mode::Journal) else {
        return;
    };
    let Ok(bytes) = json::to_canonical(&parsed.value, NonFinite::Refuse) else {
        return;
    };
    let encoded = std::str::from_utf8(&bytes).expect("canonical output is ASCII");
    let again = json::parse(encoded, Mode::Journal).expect("canonical output parses");
    assert!(
        same_value(&again.value, &parsed.value),
        "round trip changed {encoded}"
    );
    assert_eq!(
        json::to_canonical(&again.value, NonFinite::Refuse).expect("finite"),
        bytes
    );
    match &parsed.value {
        Value::Float(f) => {
            let value =
                json::float_repr_value(encoded.as_bytes()).expect("a float's repr is recognised");
            assert_eq!(value.to_bits(), f.to_bits(), "repr value of {encoded}");
        }
        Value::Object(obj) => {
            let path = match obj.get("path") {
                Some(Value::Str(s)) => Some(s.to_string_lossy()),
                _ => None,
            };
            let continuation = matches!(obj.get("continuation"), Some(v) if *v != Value::Null);
            assert_eq!(
                crate::engine::journal::payload_facts(&bytes),
                (path, continuation),
                "payload facts of {encoded}"
            );
            for id in [WorkId::of_canonical(&bytes), WorkId([0xAB; 32])] {
                let mut line = encode::lease_line(
                    &id,
                    &PyInt::Small(3),
                    1_754_550_000.013_7,
                    &PyInt::Small(1),
                    Clock::Unix,
                    &bytes,
                );
                line.pop();
                let general = classify_general(&line);
                if let Some(fast) = classify_fast(&line) {
                    assert_eq!(fast.detached(&line), general, "fast path disagrees");
                }
            }
        }
        _ => {}
    }
}

/// Every line event of a scan, formatted.
#[derive(Default)]
pub(crate) struct Log(pub(crate) Vec<String>);

impl Observer for Log {
    fn line(&mut self, e: &LineEvent<'_>) {
        self.0.push(format!(
            "{} {} {:?} {:?} {:?}",
            e.number, e.offset, e.terminator, e.classified, e.effect
        ));
    }
}

/// Scans `src` (bytes as a stream, or a [`Positional`] source read in
/// chunks of the options' block size, on as many threads as the current
/// rayon pool has when `parallel`) and returns what a comparison of two
/// scans needs: the summary (as JSON), the replay digest and every line
/// event, formatted.
pub fn scan_log(src: impl journal::Source, options: ScanOptions) -> (String, String, Vec<String>) {
    let mut log = Log::default();
    let scan =
        journal::scan_with(src, Replay::default(), &mut log, options).expect("reading bytes");
    (
        serde_json::to_string(&scan.summary).expect("serialises"),
        scan.replay.digest(),
        log.0,
    )
}

/// The reader never panics; the fast path agrees with the general one on
/// every line; the parallel scan agrees with the sequential one at other
/// block sizes; compaction (either kind) writes a journal that replays to
/// the state it planned; a repair writes a journal that replays to its
/// plan, takes no active lease away and leaves nothing to repair.
pub fn check_journal(data: &[u8]) {
    let mut lines = LineReader::new(data);
    while let Some(line) = lines.next_line().expect("reading bytes") {
        if let Some(fast) = classify_fast(line.content) {
            assert_eq!(
                fast.detached(line.content),
                classify_general(line.content),
                "fast path disagrees"
            );
        }
    }
    let sequential = scan_log(
        data,
        ScanOptions {
            parallel: false,
            block_size: 1 << 20,
        },
    );
    let parallel = scan_log(
        data,
        ScanOptions {
            parallel: true,
            block_size: 512,
        },
    );
    assert!(sequential == parallel, "parallel scan disagrees");
    for block_size in [7, 512] {
        let positional = scan_log(
            Positional::bytes(data),
            ScanOptions {
                parallel: true,
                block_size,
            },
        );
        assert!(sequential == positional, "positional scan disagrees");
    }
    // The scans leave each lease's payload in its block until the block is
    // settled; applying the records one by one copies every payload at
    // once, and must reach the same state.
    let mut direct = Replay::default();
    let mut lines = LineReader::new(data);
    while let Some(line) = lines.next_line().expect("reading bytes") {
        if let LineKind::Record(record) = &classify(line.content).kind {
            direct.apply(record, line.content, line.number, line.offset);
        }
    }
    assert_eq!(direct.digest(), sequential.1, "the scan's replay disagrees");
    for deferred in [false, true] {
        crate::operations::findings::journal::check_shortcut(data, deferred);
    }
    for drop_completed in [false, true] {
        let scan = compact::scan(data).expect("reading bytes");
        let planned = compact::plan(
            scan.replay,
            scan.summary.lines,
            scan.summary.bytes,
            drop_completed,
        )
        .expect("sites of a small input fit");
        let mut out = Vec::new();
        compact::write_result(data, &planned, &mut out).expect("writing to memory");
        check_replay(&out[..], &planned.after).expect("compaction preserves the planned state");
        // The same bytes as a line-by-line copy, whatever the blocks.
        let reference = compaction_reference(data, &planned);
        assert!(out == reference, "compaction writes other bytes");
        let mut small = Vec::new();
        compact::write_result_in_blocks(data, &planned, &mut small, 64).expect("writing to memory");
        assert!(small == reference, "compaction depends on the block size");
        if !drop_completed {
            assert_eq!(planned.after, planned.before, "compaction keeps the state");
        }
    }
    check_repair(data);
}

/// A repair's promises on `data`.
fn check_repair(data: &[u8]) {
    let (scan, salvager) = crate::operations::repair::scan(data).expect("reading bytes");
    let plan = crate::operations::repair::plan(&scan, salvager)
        .expect("a repair never takes a lease away");
    let mut out = Vec::new();
    crate::operations::repair::write_result(data, &plan, &mut out).expect("writing to memory");
    check_replay(&out[..], &plan.after).expect("the repair replays to its plan");
    let after = crate::engine::journal::scan(&out[..], &mut ()).expect("reading bytes");
    for id in scan.replay.active.keys() {
        assert!(
            after.replay.active.contains_key(id) || plan.completed_by_salvage.contains(id),
            "the repair took {id} away"
        );
    }
    let (again, salvager) = crate::operations::repair::scan(&out[..]).expect("reading bytes");
    assert!(
        crate::operations::repair::plan(&again, salvager)
            .expect("a repair never takes a lease away")
            .is_noop(),
        "a repaired journal needs another repair"
    );
}

/// What compaction writes, one line at a time: each kept line copied when
/// it is verbatim and ends in `\n`, else rewritten; then the active leases.
fn compaction_reference(data: &[u8], plan: &compact::Plan) -> Vec<u8> {
    let kept: std::collections::HashMap<u64, bool> = plan
        .keep_offsets
        .iter()
        .map(|o| (o & !compact::VERBATIM, o & compact::VERBATIM != 0))
        .collect();
    let mut out = Vec::new();
    let mut lines = LineReader::new(data);
    while let Some(line) = lines.next_line().expect("reading bytes") {
        match kept.get(&line.offset) {
            Some(true) if line.terminator == journal::Terminator::Lf => {
                out.extend_from_slice(line.raw);
            }
            Some(&verbatim) => {
                compact::write_kept_line(line.content, line.number, verbatim, &mut out)
                    .expect("a kept line is a record");
            }
            None => {}
        }
    }
    for (id, a) in &plan.leases {
        out.extend_from_slice(&compact::lease_bytes(id, a));
    }
    out
}

/// Restore never panics, and restoring what restore writes changes nothing.
pub fn check_snapshot(data: &[u8]) {
    let snap = snapshot::read(data);
    let Some(restored) = snap.restored else {
        return;
    };
    let bytes = restored.to_upstream_bytes();
    let again = snapshot::read(&bytes)
        .restored
        .expect("restore's output restores");
    assert_eq!(
        again.to_upstream_bytes(),
        bytes,
        "restore is not idempotent"
    );
}

/// Runs every check on one input (the regression tests do this for each
/// saved reproducer).
pub fn check_all(data: &[u8]) {
    check_json(data);
    check_canonical(data);
    check_journal(data);
    check_snapshot(data);
}
