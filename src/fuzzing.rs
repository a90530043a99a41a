//! The properties the fuzz targets (`fuzz/`) check on arbitrary bytes:
//! the JSON parser and encoder, the journal reader, the snapshot restore,
//! the digest ledger's reader and the fenced lease record's reader.
//! They live in the library so that `cargo test` runs them on every seed
//! and every saved reproducer (`fixtures/fuzz/`), on stable Rust.
//! Each panics when a property fails.

use crate::engine::journal::compaction as compact;
use crate::engine::journal::{
    self, Clock, LineEvent, LineKind, LineReader, Observer, Positional, Replay, ScanOptions,
    WorkId, classify, classify_fast, classify_general, encode,
};
use crate::engine::json::{self, Mode, NonFinite, PyInt, Value};
use crate::engine::ledger::line::{Judged, Line, Splitter};
use crate::engine::ledger::{Digest, LedgerScan, Reason, Tail, TailKind};
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

/// What the ledger's splitter makes of a file: every line (number,
/// offset, verdict), then how the file ends and how many lines it has.
pub type LedgerLines = (Vec<Line>, Tail, u64);

/// The splitter fed `data` in blocks of the sizes `sizes` gives, in turn
/// (the last repeated; 0 counts as 1).
pub fn ledger_lines(data: &[u8], sizes: &[usize]) -> LedgerLines {
    let mut lines = Vec::new();
    let mut splitter = Splitter::new();
    let mut push = |line: Line| lines.push(line);
    let (mut at, mut turn) = (0, 0);
    while at < data.len() {
        let size = sizes
            .get(turn)
            .or(sizes.last())
            .copied()
            .unwrap_or(1)
            .max(1);
        let end = (at + size).min(data.len());
        splitter.feed(&data[at..end], &mut push);
        (at, turn) = (end, turn + 1);
    }
    let (tail, count) = splitter.finish(&mut push);
    (lines, tail, count)
}

/// Python's `str.isspace()` for an ASCII character.
fn python_space(byte: u8) -> bool {
    matches!(
        byte,
        b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1c..=0x1f | b' '
    )
}

/// A ledger file as upstream's `load_recent` reads it, written as plainly
/// as possible, for the fast reader to be compared with: `open(path,
/// encoding="ascii", errors="ignore")` deletes every byte above 0x7f; text
/// mode's universal newlines end a line at `\n`, `\r\n` or a lone `\r`
/// (after the deletion: `\r`, deleted bytes, `\n` is one `\r\n`); each
/// line is `strip()`ped and kept when 64 lowercase hex digits remain. Why
/// a line is ignored follows `engine::ledger::line::Reason`. Offsets are of
/// the bytes as they are, a line starting right after the byte that ended
/// the one before.
pub fn ledger_reference(data: &[u8]) -> LedgerLines {
    // The kept bytes, each with its offset in the file.
    let kept: Vec<(usize, u8)> = data
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, b)| *b < 0x80)
        .collect();
    let mut lines = Vec::new();
    let (mut start, mut text) = (0usize, Vec::new());
    let mut i = 0;
    while i < kept.len() {
        let (at, byte) = kept[i];
        if byte == b'\n' || byte == b'\r' {
            let mut end = at;
            if byte == b'\r' && kept.get(i + 1).is_some_and(|(_, b)| *b == b'\n') {
                i += 1;
                end = kept[i].0;
            }
            lines.push(reference_line(lines.len(), start, &text));
            (start, text) = (end + 1, Vec::new());
        } else {
            text.push(byte);
        }
        i += 1;
    }
    let size = data.len() as u64;
    // Kept bytes after the last line's end: a last line without one.
    let unterminated = kept.last().is_some_and(|(_, b)| *b != b'\n' && *b != b'\r');
    let tail = if unterminated {
        let line = reference_line(lines.len(), start, &text);
        let stripped: Vec<u8> = strip(&text).to_vec();
        let kind = match line.judged {
            Judged::Valid(_) => TailKind::MissingNewline,
            Judged::Ignored(Reason::Blank) => TailKind::Clean,
            Judged::Ignored(_) if stripped.iter().all(|b| *b == 0) => TailKind::Nul,
            Judged::Ignored(_) => TailKind::Torn,
        };
        lines.push(line);
        Tail {
            kind,
            offset: start as u64,
            bytes: size - start as u64,
        }
    } else {
        Tail {
            kind: TailKind::Clean,
            offset: size,
            bytes: 0,
        }
    };
    let count = lines.len() as u64;
    (lines, tail, count)
}

fn strip(text: &[u8]) -> &[u8] {
    let first = text.iter().position(|b| !python_space(*b));
    let last = text.iter().rposition(|b| !python_space(*b));
    match (first, last) {
        (Some(first), Some(last)) => &text[first..=last],
        _ => &[],
    }
}

fn reference_line(before: usize, start: usize, text: &[u8]) -> Line {
    let s = strip(text);
    let hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
    let judged = if s.is_empty() {
        Judged::Ignored(Reason::Blank)
    } else if s.contains(&0) {
        Judged::Ignored(Reason::Nul)
    } else if !s.iter().all(u8::is_ascii_hexdigit) {
        Judged::Ignored(if s.len() == 64 {
            Reason::NonHex
        } else {
            Reason::Other
        })
    } else if s.len() != 64 {
        Judged::Ignored(Reason::WrongLength)
    } else if !s.iter().all(hex) {
        Judged::Ignored(Reason::Uppercase)
    } else {
        Judged::Valid(Digest::from_lower_hex(s).expect("64 lowercase hex digits"))
    };
    Line {
        number: before as u64 + 1,
        offset: start as u64,
        judged,
    }
}

/// The ledger reader on arbitrary bytes, fed in blocks of each size of
/// `sizes` in turn: never a panic; the splitter gives exactly the lines of
/// [`ledger_reference`] (numbers, offsets, verdicts), its tail and its
/// line count, in those blocks as in one; a scan of the bytes as one
/// file counts what the reference counts (lines, valid lines, each reason,
/// distinct digests, duplicates), holds exactly its digests, and finds
/// the shard counts that fit exactly those a brute-force search finds.
pub fn check_ledger_in_blocks(data: &[u8], sizes: &[usize]) {
    let reference = ledger_reference(data);
    assert_eq!(
        ledger_lines(data, &[data.len()]),
        reference,
        "the splitter disagrees with upstream's reading"
    );
    assert_eq!(
        ledger_lines(data, sizes),
        reference,
        "the splitter depends on the blocks ({sizes:?})"
    );
    let digests: Vec<Digest> = reference
        .0
        .iter()
        .filter_map(|l| match l.judged {
            Judged::Valid(d) => Some(d),
            Judged::Ignored(_) => None,
        })
        .collect();
    let distinct: std::collections::BTreeSet<Digest> = digests.iter().copied().collect();
    let index = u32::from(data.first().copied().unwrap_or(0) % 5);
    let mut scan = LedgerScan::new(index + 1, Vec::new());
    let file = scan.file(index, data).expect("reading bytes");
    assert_eq!((file.lines, file.tail), (reference.2, reference.1));
    assert_eq!(file.valid, digests.len() as u64);
    assert_eq!(file.new, distinct.len() as u64);
    assert_eq!(file.duplicates, file.valid - file.new);
    for reason in Reason::ALL {
        let want = reference
            .0
            .iter()
            .filter(|l| l.judged == Judged::Ignored(reason))
            .count() as u64;
        assert_eq!(file.ignored.get(reason), want, "{reason:?} lines");
    }
    let totals = scan.totals();
    assert_eq!((totals.distinct, totals.digests), (file.new, file.new));
    let mut held: Vec<Digest> = scan.set().iter().collect();
    held.sort();
    assert!(
        held.iter().eq(distinct.iter()),
        "the set holds other digests"
    );
    // The counts up to 64 under which every digest sits in this file.
    let fits = |c: u32| c > index && digests.iter().all(|d| d.shard(c) == index);
    let brute: Vec<u32> = (1..=64).filter(|c| fits(*c)).collect();
    // `None`: no digest constrains the count (every one above the index).
    let every: Vec<u32> = (index + 1..=64).collect();
    assert_eq!(
        scan.fit().counts(64).unwrap_or(every),
        brute,
        "the fitting counts"
    );
}

/// [`check_ledger_in_blocks`] at block sizes from 1 byte up, and at
/// sizes the bytes themselves choose.
pub fn check_ledger(data: &[u8]) {
    for size in [1, 2, 3, 7, 64, 65, 4096] {
        check_ledger_in_blocks(data, &[size]);
    }
    let sizes: Vec<usize> = data.iter().map(|b| usize::from(b % 67) + 1).collect();
    check_ledger_in_blocks(data, &sizes);
}

/// A fenced lease record's reader on arbitrary bytes, as both tables read
/// it: never a panic; what it accepts is a JSON object upstream's plain
/// `json.load` takes, and the record's canonical re-encoding (sorted keys,
/// compact, as `_write_record` writes it) reads the same: the same
/// status, time, token and owner, and no repeated member any more.
pub fn check_table_record(data: &[u8]) {
    use crate::engine::table::{self, Oddity, Reading, TableKind};
    let id = crate::engine::journal::WorkId::of_canonical(data);
    for kind in [TableKind::Work, TableKind::Target] {
        // Under the id the bytes name, when they name one, and another.
        let named = std::str::from_utf8(data)
            .ok()
            .and_then(|t| json::parse(t, json::Mode::Snapshot).ok())
            .and_then(|p| match p.value.as_object().and_then(|o| o.get("id")) {
                Some(Value::Str(s)) => s.as_str().and_then(table::parse_id),
                _ => None,
            });
        for id in [Some(id), named].into_iter().flatten() {
            let Reading::Valid(record) = table::read(data, &id, kind) else {
                continue;
            };
            let text = std::str::from_utf8(data).expect("accepted bytes are UTF-8");
            let parsed = json::parse(text, json::Mode::Snapshot).expect("accepted bytes parse");
            assert!(parsed.value.as_object().is_some(), "accepted: an object");
            let mut again = json::to_canonical(&parsed.value, json::NonFinite::Python)
                .expect("Python's encoder writes every value");
            again.push(b'\n');
            let Reading::Valid(round) = table::read(&again, &id, kind) else {
                panic!("the canonical encoding of an accepted record is rejected");
            };
            assert_eq!(round.status, record.status);
            assert_eq!(round.updated.to_bits(), record.updated.to_bits());
            assert_eq!(round.token, record.token);
            assert_eq!(round.owner, record.owner);
            assert!(!round.oddities.contains(&Oddity::DuplicateMember));
        }
    }
}

/// Runs every check on one input (the regression tests do this for each
/// saved reproducer).
pub fn check_all(data: &[u8]) {
    check_json(data);
    check_canonical(data);
    check_journal(data);
    check_snapshot(data);
    check_ledger(data);
    check_table_record(data);
}
