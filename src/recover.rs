//! `recover` as a plan: upstream's `recover_expired` (which leases expire,
//! in which order, the reclaim records to append), the tail sealed first so
//! nothing is ever appended onto a torn fragment, and, with `--salvage`,
//! glued records split back out of the lines upstream loses them in.
//! Pure: reader in, plan out; [`write_result`] streams the rewritten file.

use std::io::{self, Read, Write};

use serde::Serialize;

use crate::journal::{
    self, Active, Clock, LineEvent, LineKind, LineReader, Observer, Op, Replay, Scan, TailState,
    Terminator, WorkId, encode,
};
use crate::plan::{self, Reclaim, StateView};

/// Which active leases a plan reclaims.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Selection {
    /// Upstream's expiry: `ttl == 0`, or not on the unix clock, or
    /// `now - time >= ttl`.
    Expired {
        /// The TTL in seconds (0: every lease, as resume does).
        ttl: f64,
    },
    /// Only leases outside the unix clock domain (`migrate`).
    Legacy,
}

impl Selection {
    fn selects(self, lease: &Active, now: f64) -> bool {
        match self {
            Selection::Expired { ttl } => {
                ttl == 0.0 || lease.clock != Clock::Unix || now - lease.time >= ttl
            }
            Selection::Legacy => lease.clock != Clock::Unix,
        }
    }
}

/// What happens to the end of the file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum TailFix {
    /// Nothing: it ends with a terminator.
    None,
    /// A torn (or zero-filled) tail is cut off; its bytes stay in the backup.
    Cut {
        /// Where the cut starts.
        offset: u64,
        /// Bytes removed.
        bytes: u64,
        /// Of those, NUL bytes.
        zero_bytes: u64,
    },
    /// A complete last record gets its missing newline.
    Terminate {
        /// Where the newline goes.
        offset: u64,
    },
}

/// A glued record split back out.
#[derive(Clone, Debug, Serialize)]
pub struct Salvage {
    /// Its line.
    pub line: u64,
    /// The line's byte offset.
    pub offset: u64,
    /// Bytes of the torn fragment before it (dropped; kept in the backup).
    pub fragment_bytes: usize,
    /// The record's id.
    pub id: WorkId,
    /// The record's op.
    pub op: String,
}

/// Collects glued records and replays the file as it will be once they are
/// split out.
pub struct Salvager {
    replay: Replay,
    salvaged: Vec<Salvage>,
}

impl Salvager {
    /// A salvager with an empty replay.
    pub fn new() -> Salvager {
        Salvager {
            replay: Replay::default(),
            salvaged: Vec::new(),
        }
    }
}

impl Default for Salvager {
    fn default() -> Self {
        Salvager::new()
    }
}

impl Observer for Salvager {
    fn line(&mut self, event: &LineEvent<'_>) {
        match &event.classified.kind {
            LineKind::Record(record) => {
                self.replay
                    .apply(record, event.content, event.number, event.offset);
            }
            LineKind::Corrupt {
                glued: Some((at, record)),
                ..
            } => {
                self.replay.apply(
                    record,
                    event.content.get(*at..).unwrap_or_default(),
                    event.number,
                    event.offset + *at as u64,
                );
                self.salvaged.push(Salvage {
                    line: event.number,
                    offset: event.offset,
                    fragment_bytes: *at,
                    id: record.id,
                    op: match &record.op {
                        Op::Lease(_) => "lease".into(),
                        Op::Done => "done".into(),
                        Op::Reclaim => "reclaim".into(),
                        Op::Unknown(op) => op.clone(),
                    },
                });
            }
            _ => {}
        }
    }
}

/// A recovery plan for one journal.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The end of the file.
    pub tail: TailFix,
    /// Glued records split out (`--salvage`).
    pub salvaged: Vec<Salvage>,
    /// Leases reclaimed, in the order their records are appended.
    pub reclaims: Vec<Reclaim>,
    /// Bytes appended.
    pub append_bytes: usize,
    /// Whether the file must be rewritten (salvage) rather than appended to.
    pub rewrite: bool,
    /// Replay state now.
    pub before: StateView,
    /// Replay state after the change.
    pub after: StateView,
    /// The records to append.
    #[serde(skip)]
    pub append: Vec<u8>,
}

impl Plan {
    /// Whether there is nothing to change.
    pub fn is_noop(&self) -> bool {
        self.tail == TailFix::None && self.salvaged.is_empty() && self.reclaims.is_empty()
    }
}

/// Plans a recovery from a scan (and, for `--salvage`, the salvager that
/// observed the same scan).
pub fn plan(
    scan: Scan,
    salvager: Option<Salvager>,
    selection: Selection,
    now: f64,
    limit: usize,
) -> Plan {
    let before = StateView::of(&scan.replay);
    let tail = &scan.summary.tail;
    let salvaging = salvager.as_ref().is_some_and(|s| !s.salvaged.is_empty());
    let (mut replay, salvaged) = match salvager {
        Some(s) if salvaging => (s.replay, s.salvaged),
        _ => (scan.replay, Vec::new()),
    };
    let last_line_salvaged = salvaged.last().is_some_and(|s| s.offset == tail.offset);
    let tail_fix = match tail.state {
        TailState::Torn if !last_line_salvaged => TailFix::Cut {
            offset: tail.offset,
            bytes: tail.bytes,
            zero_bytes: tail.zero_bytes,
        },
        TailState::Unterminated => TailFix::Terminate {
            offset: tail.offset + tail.bytes,
        },
        _ => TailFix::None,
    };
    let reclaims = plan::reclaims(&replay, now, limit, |a| selection.selects(a, now));
    let mut append = Vec::new();
    for r in &reclaims {
        append.extend_from_slice(&encode::marker_line("reclaim", &r.id, Clock::Unix, now));
        replay.active.remove(&r.id);
    }
    Plan {
        tail: tail_fix,
        rewrite: salvaging,
        salvaged,
        append_bytes: append.len(),
        reclaims,
        before,
        after: StateView::of(&replay),
        append,
    }
}

/// Writes the recovered file: the source's lines verbatim except glued
/// lines (their record only), the torn tail (dropped) and an unterminated
/// last record (terminated), then the reclaim records.
pub fn write_result(src: impl Read, plan: &Plan, out: &mut dyn Write) -> io::Result<()> {
    let mut reader = LineReader::new(src);
    let mut salvaged = plan.salvaged.iter().peekable();
    while let Some(line) = reader.next_line()? {
        if let Some(s) = salvaged.next_if(|s| s.offset == line.offset) {
            out.write_all(&line.content[s.fragment_bytes..])?;
            if line.terminator == Terminator::None {
                out.write_all(b"\n")?;
            } else {
                out.write_all(&line.raw[line.content.len()..])?;
            }
            continue;
        }
        if line.terminator == Terminator::None {
            match plan.tail {
                TailFix::Cut { .. } => continue,
                TailFix::Terminate { .. } => {
                    out.write_all(line.content)?;
                    out.write_all(b"\n")?;
                    continue;
                }
                TailFix::None => {}
            }
        }
        out.write_all(line.raw)?;
    }
    out.write_all(&plan.append)
}

/// Scans a journal for recovery, with a salvager when asked for.
pub fn scan(src: impl journal::Source, salvage: bool) -> io::Result<(Scan, Option<Salvager>)> {
    if salvage {
        let mut salvager = Salvager::new();
        let scan = journal::scan(src, &mut salvager)?;
        Ok((scan, Some(salvager)))
    } else {
        Ok((journal::scan(src, &mut ())?, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = r#"{"attempts":1,"clock":"unix","id":"c178b7e31d5efb37c2e443f52fef64f302d73c6fe5c3e71c78b968b7115c88b4","op":"lease","payload":{"path":"torn-1"},"time":1754550000.0,"worker":1}"#;
    const B: &str = r#"{"attempts":1,"clock":"unix","id":"d877ee1daaa3f2319c2261cb2a5b71e9120717053d64721763ff968b221e0f7b","op":"lease","payload":{"path":"torn-2"},"time":1754550001.0,"worker":2}"#;

    fn run(input: &str, salvage: bool, selection: Selection) -> (Plan, String) {
        let (scan, salvager) = scan(input.as_bytes(), salvage).unwrap();
        let plan = plan(scan, salvager, selection, 1754550100.0, 0);
        let mut out = Vec::new();
        write_result(input.as_bytes(), &plan, &mut out).unwrap();
        (plan, String::from_utf8(out).unwrap())
    }

    #[test]
    fn torn_tail_is_cut_before_reclaims_are_appended() {
        let input = format!("{A}\n{{\"attempts\":1,\"clo");
        let (plan, out) = run(&input, false, Selection::Expired { ttl: 0.0 });
        assert!(matches!(plan.tail, TailFix::Cut { bytes: 18, .. }));
        assert_eq!(plan.reclaims.len(), 1);
        assert!(out.starts_with(&format!("{A}\n{{\"clock\":\"unix\",\"id\":\"c178")));
        assert_eq!(plan.after.active, 0);
    }

    #[test]
    fn salvage_splits_the_glued_record_back_out() {
        let input = format!("{A}\n{{\"attempts\":1,\"clock\":\"unix\",\"id\":\"{B}\n");
        let (plan, out) = run(&input, true, Selection::Expired { ttl: 1e9 });
        assert_eq!(plan.before.active, 1);
        assert_eq!(plan.after.active, 2, "the glued lease counts again");
        assert!(plan.rewrite);
        assert_eq!(out, format!("{A}\n{B}\n"));
        // Without --salvage the glued line stays as it is.
        let (plan, out) = run(&input, false, Selection::Expired { ttl: 1e9 });
        assert!(plan.is_noop());
        assert_eq!(out, input);
    }

    #[test]
    fn legacy_selection_and_order() {
        let legacy = r#"{"op": "lease", "id": "b3ebf1ab1e22ca48684634c8a2b31bf4f956e0964f7eccb2c2e09cb59f6cc088", "payload": {"path": "legacy", "target_branch": 5}, "worker": 1, "time": 123456.789, "attempts": 1}"#;
        let input = format!("{A}\n{legacy}\n{B}");
        let (plan, out) = run(&input, false, Selection::Legacy);
        assert_eq!(plan.reclaims.len(), 1);
        assert_eq!(
            plan.tail,
            TailFix::Terminate {
                offset: input.len() as u64
            }
        );
        assert!(out.ends_with("\"op\":\"reclaim\",\"time\":1754550100.0}\n"));
        let (plan, _) = run(&input, false, Selection::Expired { ttl: 0.0 });
        let order: Vec<String> = plan
            .reclaims
            .iter()
            .map(|r| r.id.to_hex()[..4].to_string())
            .collect();
        // attempts tie; then by time: the legacy lease (123456.789) first.
        assert_eq!(order, ["b3eb", "c178", "d877"]);
    }
}
