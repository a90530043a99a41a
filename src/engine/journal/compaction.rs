//! Compaction as a rewrite of a journal: upstream's compaction (active
//! leases only, sorted by id, seven fields, each keeping its clock marker)
//! and, by default, every completed id kept as its last lease followed by
//! its `done`, so the completed set survives. Upstream's own `compact()`
//! forgets completed ids, after which a finished item can be dispatched
//! again; dropping them writes exactly its bytes. Pure: a scan in, a
//! [`Plan`] out, and the result written from the source by two passes over
//! readers the caller gives. `compact` and `migrate --rewrite` both write
//! it.

use std::io::{self, Read, Write};

use rayon::slice::ParallelSliceMut;
use serde::Serialize;

use super::StateView;
use super::{
    Active, BlockReader, Clock, ClockMarker, LineKind, Op, Replay, Scan, Terminator, WorkId, encode,
};
use crate::engine::journal;

/// A compaction plan for one journal.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// Whether completed ids are dropped (upstream's exact behaviour).
    pub drop_completed: bool,
    /// Lines in the source.
    pub lines_before: u64,
    /// Source size in bytes.
    pub bytes_before: u64,
    /// Records written.
    pub records_after: u64,
    /// Active leases written.
    pub active: usize,
    /// Completed ids kept (as lease + done pairs).
    pub completed_kept: usize,
    /// Completed ids forgotten (`--drop-completed`).
    pub completed_dropped: usize,
    /// Replay state now.
    pub before: StateView,
    /// Replay state of the compacted file.
    pub after: StateView,
    /// Offsets of the lines kept in the first part of the output, in file
    /// order, each with [`VERBATIM`] set when the line can be copied as it
    /// stands (else it is re-encoded).
    #[serde(skip)]
    pub keep_offsets: Vec<u64>,
    /// The active leases, sorted by id.
    #[serde(skip)]
    pub leases: Vec<(WorkId, Active)>,
}

/// The flag in a kept offset that marks a line copied as it stands.
pub const VERBATIM: u64 = 1 << 63;

/// A compaction plan with its measured result.
#[derive(Debug, Serialize)]
pub struct Measured {
    /// The plan.
    #[serde(flatten)]
    pub plan: Plan,
    /// Size of the result.
    pub bytes_after: u64,
    /// Whether the result equals the file already.
    pub unchanged: bool,
    /// Records hidden in lines upstream ignores that the compaction drops
    /// (only with `--drop-hidden`; otherwise it refuses).
    pub hidden_dropped: usize,
    /// The lines upstream ignores, which the compaction drops, by the
    /// finding code that explains each, in the codes' alphabetical order.
    pub dropped: Vec<DroppedLines>,
    /// Records upstream reads whose effect the result holds without them
    /// (earlier leases of an id, reclaims, records of forgotten ids are not
    /// counted here but in `completed_dropped`).
    pub superseded: u64,
    /// The flags writing this plan needs, when it drops what the operator
    /// should decide on (`--drop-hidden`, `--allow-empty`); empty when it
    /// can be written as it stands.
    pub needs: Vec<&'static str>,
}

/// Lines a compaction drops for one reason.
#[derive(Clone, Debug, Serialize)]
pub struct DroppedLines {
    /// The finding code that explains why upstream ignores them.
    pub code: &'static str,
    /// How many.
    pub lines: u64,
}

/// Scans a journal for compaction (tracking where completions are).
pub fn scan(src: impl journal::Source) -> io::Result<Scan> {
    scan_observed(src, &mut ())
}

/// [`scan`] with an observer of every line.
pub fn scan_observed(
    src: impl journal::Source,
    observer: &mut (dyn journal::Observer + Send),
) -> io::Result<Scan> {
    journal::scan_into(src, Replay::tracking_completions(), observer)
}

/// Plans a compaction of the state `replay` holds (already scanned with
/// [`scan`]; `migrate --rewrite` removes legacy leases from it first).
/// Fails when the completions' sites were not tracked or did not fit.
pub fn plan(replay: Replay, lines: u64, bytes: u64, drop_completed: bool) -> Result<Plan, String> {
    let before = StateView::of(&replay);
    let Replay {
        active, completed, ..
    } = replay;
    let completed_len = completed.len();
    let mut keep_offsets: Vec<u64> = Vec::new();
    if !drop_completed {
        // Consumed table by table, so that the offsets (touched as they are
        // written) replace the completed set in memory rather than add to it.
        let sites = completed
            .into_sites()
            .ok_or("the completed ids' records were not located (offsets beyond 128 TiB)")?;
        keep_offsets.reserve_exact(2 * completed_len);
        for (_, c) in sites {
            let flag = |verbatim: bool| if verbatim { VERBATIM } else { 0 };
            keep_offsets.push(c.lease_offset | flag(c.lease_verbatim));
            keep_offsets.push(c.done_offset | flag(c.done_verbatim));
        }
    }
    keep_offsets.par_sort_unstable_by_key(|o| o & !VERBATIM);
    let mut leases: Vec<(WorkId, Active)> = active.into_iter().collect();
    leases.sort_unstable_by_key(|(id, _)| *id);
    // The result holds the same active leases and, unless they are dropped,
    // the same completed ids.
    let after = if drop_completed {
        StateView::of_active(leases.iter().map(|(id, a)| (id, a)))
    } else {
        before.clone()
    };
    Ok(Plan {
        drop_completed,
        lines_before: lines,
        bytes_before: bytes,
        records_after: (keep_offsets.len() + leases.len()) as u64,
        active: leases.len(),
        completed_kept: if drop_completed { 0 } else { completed_len },
        completed_dropped: if drop_completed { completed_len } else { 0 },
        before,
        after,
        keep_offsets,
        leases,
    })
}

/// The line compaction writes for an active lease.
pub fn lease_bytes(id: &WorkId, a: &Active) -> Vec<u8> {
    encode::lease_line(id, &a.worker, a.time, &a.attempts, a.clock, &a.payload)
}

/// Writes the compacted journal: the kept completion pairs in file order,
/// re-encoded canonically, then the active leases sorted by id. `src` is
/// the same file the plan was made from.
pub fn write_result(src: impl Read, plan: &Plan, out: &mut dyn Write) -> io::Result<()> {
    write_result_in_blocks(src, plan, out, BlockReader::<&[u8]>::DEFAULT_BLOCK)
}

/// [`write_result`], reading the source in blocks of about `block_size`
/// bytes (the tests use tiny ones, so that runs of kept lines meet block
/// ends).
pub fn write_result_in_blocks(
    src: impl Read,
    plan: &Plan,
    out: &mut dyn Write,
    block_size: usize,
) -> io::Result<()> {
    write_kept(src, &plan.keep_offsets, out, block_size)?;
    write_leases(&plan.leases, out)
}

/// The first part of the result: the lines at `keep_offsets` (a plan's),
/// read from `src` in blocks of about `block_size` bytes.
pub fn write_kept(
    src: impl Read,
    keep_offsets: &[u64],
    out: &mut dyn Write,
    block_size: usize,
) -> io::Result<()> {
    let mut wanted = keep_offsets.iter().peekable();
    let mut reader = BlockReader::with_block_size(src, block_size);
    while wanted.peek().is_some()
        && let Some(block) = reader.next_block()?
    {
        let data = block.bytes();
        // Consecutive lines copied as they stand go out in one write; an
        // empty run is extended only by a line at the block's start.
        let mut run = 0..0;
        for span in &block.spans {
            let Some(&kept) = wanted.next_if(|&&o| o & !VERBATIM == span.offset) else {
                continue;
            };
            if kept & VERBATIM != 0 && span.terminator == Terminator::Lf {
                let raw = span.content.start..span.content.end + 1;
                if run.end == raw.start {
                    run.end = raw.end;
                } else {
                    out.write_all(&data[run])?;
                    run = raw;
                }
            } else {
                out.write_all(&data[run])?;
                run = 0..0;
                write_kept_line(block.content(span), span.number, kept & VERBATIM != 0, out)?;
            }
            if wanted.peek().is_none() {
                break;
            }
        }
        out.write_all(&data[run])?;
        reader.recycle(block);
    }
    Ok(())
}

/// The second part of the result: the active leases, sorted by id.
/// Writes the active leases as upstream's compaction writes them.
pub fn write_leases(leases: &[(WorkId, Active)], out: &mut dyn Write) -> io::Result<()> {
    for (id, a) in leases {
        out.write_all(&lease_bytes(id, a))?;
    }
    Ok(())
}

/// Writes a kept line that cannot be copied with its terminator: a
/// verbatim record that ends otherwise than in `\n`, or a record to
/// re-encode (`number` names the line in errors).
pub fn write_kept_line(
    content: &[u8],
    number: u64,
    verbatim: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    if verbatim {
        out.write_all(content)?;
        return out.write_all(b"\n");
    }
    let classified = journal::classify(content);
    let LineKind::Record(record) = &classified.kind else {
        return Err(io::Error::other(format!(
            "line {number} is no longer a record: the file changed"
        )));
    };
    let bytes = match &record.op {
        Op::Lease(Ok(lease)) => encode::lease_line(
            &record.id,
            &lease.worker,
            lease.time,
            &lease.attempts,
            lease.clock,
            lease.payload.bytes(content),
        ),
        Op::Done => {
            let clock = match record.marker {
                ClockMarker::Unix => Clock::Unix,
                _ => Clock::Legacy,
            };
            encode::marker_line("done", &record.id, clock, record.time.unwrap_or(0.0))
        }
        _ => {
            return Err(io::Error::other(format!(
                "line {number} is not the record the plan kept: the file changed"
            )));
        }
    };
    out.write_all(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compact(input: &str, drop_completed: bool) -> (Plan, String) {
        let scan = scan(input.as_bytes()).unwrap();
        let plan = plan(
            scan.replay,
            scan.summary.lines,
            scan.summary.bytes,
            drop_completed,
        );
        let mut out = Vec::new();
        let plan = plan.unwrap();
        write_result(input.as_bytes(), &plan, &mut out).unwrap();
        (plan, String::from_utf8(out).unwrap())
    }

    #[test]
    fn upstream_sample_compacts_to_upstreams_bytes() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/samples/");
        let input =
            std::fs::read_to_string(format!("{dir}work_leases.before_compaction.jsonl")).unwrap();
        let (plan, out) = compact(&input, true);
        assert_eq!(plan.completed_dropped, 1);
        assert_eq!(out.lines().count(), 2);
        for line in out.lines() {
            assert!(input.contains(line), "byte-identical to its original line");
        }
        let (plan, kept) = compact(&input, false);
        assert_eq!(plan.completed_kept, 1);
        assert_eq!(plan.after, plan.before);
        let rescan = journal::scan(kept.as_bytes(), &mut ()).unwrap();
        assert_eq!(StateView::of(&rescan.replay), plan.before);
    }

    #[test]
    fn kept_lines_are_copied_in_runs_and_the_others_rewritten() {
        use crate::engine::json::PyInt;

        let lease = |path: &str| {
            let payload = format!(r#"{{"path":"{path}"}}"#);
            let id = WorkId::of_canonical(payload.as_bytes());
            let line = encode::lease_line(
                &id,
                &PyInt::Small(1),
                1.5,
                &PyInt::Small(1),
                Clock::Unix,
                payload.as_bytes(),
            );
            (id, String::from_utf8(line).unwrap())
        };
        let done = |id: &WorkId| {
            String::from_utf8(encode::marker_line("done", id, Clock::Unix, 2.5)).unwrap()
        };
        let (a, lease_a) = lease("a");
        let (b, lease_b) = lease("b");
        let (c, lease_c) = lease("c");
        let (_, lease_d) = lease("d");
        // The same lease with spaces: upstream reads it, compaction
        // rewrites it.
        let spaced_c = lease_c.replace(",\"", ", \"");
        let crlf = |line: &str| line.replace('\n', "\r\n");
        let cr = |line: &str| line.replace('\n', "\r");
        let input = [
            lease_a.clone(),
            crlf(&lease_b),
            "not json\n".to_string(),
            done(&a),
            spaced_c,
            cr(&done(&b)),
            done(&c),
            lease_d.clone(),
        ]
        .concat();
        let (plan, out) = compact(&input, false);
        assert_eq!(plan.completed_kept, 3);
        let expected = [
            lease_a,
            lease_b,
            done(&a),
            lease_c,
            done(&b),
            done(&c),
            lease_d,
        ]
        .concat();
        assert_eq!(out, expected);
    }

    #[test]
    fn legacy_values_are_normalised() {
        let legacy = r#"{"op": "lease", "id": "b3ebf1ab1e22ca48684634c8a2b31bf4f956e0964f7eccb2c2e09cb59f6cc088", "payload": {"path": "legacy", "target_branch": 5}, "worker": "1", "time": 123456.789, "attempts": 0, "note": "x"}"#;
        let (_, out) = compact(&format!("{legacy}\n"), true);
        assert_eq!(
            out,
            "{\"attempts\":1,\"clock\":\"legacy\",\"id\":\"b3ebf1ab1e22ca48684634c8a2b31bf4f956e0964f7eccb2c2e09cb59f6cc088\",\"op\":\"lease\",\"payload\":{\"path\":\"legacy\",\"target_branch\":5},\"time\":123456.789,\"worker\":1}\n"
        );
    }
}
