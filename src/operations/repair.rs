//! `repair` as a plan: the lossless fixes to run before the master
//! resumes. A torn or zero-filled tail is cut (its bytes stay in the
//! backup), a complete last record gets its missing newline, records glued
//! onto torn fragments go back onto lines of their own, and a byte order
//! mark in front of the first record is removed, so upstream sees those
//! records again. A complete last record followed by the NULs a power loss
//! left loses only the NULs.
//!
//! Nothing is ever appended, and above all no `reclaim`: resume's own
//! reclaims are the only way in-flight work comes back. So the active
//! leases after a repair are those before it plus the ones a salvaged
//! record brings back, less the ones a salvaged `done` completes (the plan
//! names both). A glued `reclaim` that would take a lease away from resume
//! is not applied: its line is left out (it stays in the backup). Pure:
//! reader in, plan out; [`write_result`] streams the repaired file.
//!
//! [`run`] carries the plans out through the write transaction.

use std::io::{self, Read, Write};

use serde::Serialize;

use crate::engine::journal::{
    self, CorruptReason, LineEvent, LineKind, LineReader, Observer, Op, Record, Replay, Scan, Tail,
    TailState, Terminator, WorkId,
};
use std::path::{Path, PathBuf};

use crate::engine::journal::Positional;
use crate::operations::durable::{self, Identity, Publish};
use crate::operations::exit::Exit;
use crate::operations::failpoint;
use crate::operations::plan::{Mode, Outcome, Report, StateView, check_replay};
use crate::operations::progress::Progress;
use crate::operations::schema;
use crate::operations::statedir::Kind;
use crate::operations::transaction::{self, Session, Tell, WriteOptions};

pub use crate::operations::plan::TailFix;

/// Why a line's record was invisible to upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hidden {
    /// Glued onto a torn fragment.
    Glued,
    /// Behind a UTF-8 byte order mark on the first line.
    Bom,
    /// Followed by the NUL bytes a power loss left at the end of the file.
    ZeroFill,
    /// Complete, but its newline is missing and the next record was
    /// appended onto it.
    MissingNewline,
    /// Appended onto such a record.
    Appended,
}

/// What a salvage does with the record it finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SalvageAction {
    /// The record goes onto a line of its own and counts again.
    Restored,
    /// The line is left out: its record is a `reclaim` of a lease that is
    /// active at that point, and applying it would take the work away from
    /// resume.
    LeftOut,
}

/// A record found inside a line upstream ignores.
#[derive(Clone, Debug, Serialize)]
pub struct Salvage {
    /// Its line.
    pub line: u64,
    /// The line's byte offset.
    pub offset: u64,
    /// What hid it.
    pub hidden: Hidden,
    /// Bytes in front of the record (the torn fragment or the BOM): dropped.
    pub fragment_bytes: usize,
    /// Bytes after the record (the zero fill): dropped.
    pub trailing_bytes: usize,
    /// The record's id.
    pub id: WorkId,
    /// The record's op.
    pub op: String,
    /// What the repair does with it.
    pub action: SalvageAction,
}

/// Replays the file as it will be once repaired, collecting what is
/// salvaged.
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

    fn salvage(
        &mut self,
        event: &LineEvent<'_>,
        (at, end): (usize, usize),
        record: &Record,
        hidden: Hidden,
    ) {
        let takes_a_lease_away =
            record.op == Op::Reclaim && self.replay.active.contains_key(&record.id);
        let action = if takes_a_lease_away {
            SalvageAction::LeftOut
        } else {
            self.replay.apply(
                record,
                event.content.get(at..end).unwrap_or_default(),
                event.number,
                event.offset + at as u64,
            );
            SalvageAction::Restored
        };
        self.salvaged.push(Salvage {
            line: event.number,
            offset: event.offset,
            hidden,
            fragment_bytes: at,
            trailing_bytes: event.content.len() - end,
            id: record.id,
            op: record.op.name().to_string(),
            action,
        });
    }
}

impl Default for Salvager {
    fn default() -> Self {
        Salvager::new()
    }
}

const BOM: &[u8] = b"\xef\xbb\xbf";

/// At most this many records are split out of one line: bounds the work
/// on hostile lines (each split classifies the rest of the line again).
const MAX_RECORDS_PER_LINE: usize = 64;

/// A record hidden inside a line upstream ignores: its span in the line,
/// the record, and what hid it.
pub struct HiddenRecord {
    /// Where the record starts in the line.
    pub start: usize,
    /// Where it ends.
    pub end: usize,
    /// The record.
    pub record: Record,
    /// What hid it.
    pub hidden: Hidden,
}

/// The records hidden in a line upstream ignores, in order: records glued
/// one after another (a complete record whose newline is missing, with the
/// next one appended onto it; or a torn fragment, then a record), a record
/// behind byte order marks on the first line, a record followed by the
/// NULs a power loss left at the end of the file. Empty for any other line.
pub fn hidden_records(
    content: &[u8],
    kind: &LineKind,
    first_line: bool,
    last_unterminated: bool,
) -> Vec<HiddenRecord> {
    let LineKind::Corrupt { reason, .. } = kind else {
        return Vec::new();
    };
    let mut start = 0;
    if first_line && *reason == CorruptReason::Bom {
        while content[start..].starts_with(BOM) {
            start += BOM.len();
        }
    }
    let mut end = content.len();
    if last_unterminated {
        end = content[start..]
            .iter()
            .rposition(|&b| b != 0)
            .map_or(start, |i| start + i + 1);
    }
    let mut found = Vec::new();
    records_in(content, start, end, &mut found);
    // Name what hid each one.
    let spans: Vec<(usize, usize)> = found.iter().map(|h| (h.start, h.end)).collect();
    for (i, h) in found.iter_mut().enumerate() {
        let followed = i + 1 < spans.len() || h.end < end;
        let after_record = i > 0 && spans[i - 1].1 == h.start;
        h.hidden = if followed && (h.start == start || after_record) {
            Hidden::MissingNewline
        } else if after_record {
            Hidden::Appended
        } else if h.start > start {
            Hidden::Glued
        } else if start > 0 {
            Hidden::Bom
        } else if end < content.len() {
            Hidden::ZeroFill
        } else {
            Hidden::Glued
        };
    }
    found
}

/// Collects the records of `content[start..end]` in order: the whole span
/// as a record; a record at its start, then the rest; the rest of a
/// record glued at its end, then that record. At most
/// [`MAX_RECORDS_PER_LINE`].
fn records_in(content: &[u8], start: usize, end: usize, found: &mut Vec<HiddenRecord>) {
    if start >= end || found.len() >= MAX_RECORDS_PER_LINE {
        return;
    }
    let text = &content[start..end];
    let classified = journal::classify(text).kind;
    if let LineKind::Record(record) = classified {
        found.push(HiddenRecord {
            start,
            end,
            record,
            hidden: Hidden::Glued,
        });
        return;
    }
    // A complete record at the start whose newline is missing.
    if let Some(len) = leading_object(text)
        && let LineKind::Record(record) = journal::classify(&text[..len]).kind
    {
        found.push(HiddenRecord {
            start,
            end: start + len,
            record,
            hidden: Hidden::MissingNewline,
        });
        records_in(content, start + len, end, found);
        return;
    }
    // A record glued at the end of a torn fragment (or of more records).
    if let LineKind::Corrupt {
        glued: Some((at, record)),
        ..
    } = classified
    {
        records_in(content, start, start + at, found);
        if found.len() < MAX_RECORDS_PER_LINE {
            found.push(HiddenRecord {
                start: start + at,
                end,
                record: *record,
                hidden: Hidden::Glued,
            });
        }
    }
}

/// The length of the JSON object `text` starts with, found by matching
/// braces outside strings; `None` when it does not start with one or the
/// object does not close before the end.
fn leading_object(text: &[u8]) -> Option<usize> {
    if text.first() != Some(&b'{') {
        return None;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &b) in text.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return (i + 1 < text.len()).then_some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

impl Observer for Salvager {
    fn line(&mut self, event: &LineEvent<'_>) {
        if let LineKind::Record(record) = &event.classified.kind {
            self.replay
                .apply(record, event.content, event.number, event.offset);
            return;
        }
        let hidden = hidden_records(
            event.content,
            &event.classified.kind,
            event.number == 1,
            event.terminator == Terminator::None,
        );
        for h in hidden {
            self.salvage(event, (h.start, h.end), &h.record, h.hidden);
        }
    }
}

/// Counts the lines that hide records [`repair`](self) would bring back,
/// for the commands that would otherwise drop them.
#[derive(Debug, Default)]
pub struct HiddenCount {
    /// Records hidden in lines upstream ignores.
    pub records: usize,
}

impl Observer for HiddenCount {
    fn line(&mut self, event: &LineEvent<'_>) {
        if matches!(event.classified.kind, LineKind::Corrupt { .. }) {
            self.records += hidden_records(
                event.content,
                &event.classified.kind,
                event.number == 1,
                event.terminator == Terminator::None,
            )
            .len();
        }
    }
}

/// A repair plan for one journal.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The end of the file.
    pub tail: TailFix,
    /// Records found inside lines upstream ignores.
    pub salvaged: Vec<Salvage>,
    /// Whether the file is rewritten (a salvage) rather than sealed in
    /// place (a cut or a newline).
    pub rewrite: bool,
    /// Ids active after the repair that were not before: leases a salvaged
    /// record brings back, so resume requeues their work.
    pub brought_back: Vec<WorkId>,
    /// Ids active before the repair and completed after it: a salvaged
    /// `done` says their work was finished, so resume does not requeue it.
    pub completed_by_salvage: Vec<WorkId>,
    /// Replay state now.
    pub before: StateView,
    /// Replay state after the repair.
    pub after: StateView,
}

impl TailFix {
    /// How a file with this tail is sealed: a torn (or zero-filled) last
    /// line is cut, a complete one is terminated.
    pub fn of(tail: &Tail) -> TailFix {
        match tail.state {
            TailState::Torn => TailFix::Cut {
                offset: tail.offset,
                bytes: tail.bytes,
                zero_bytes: tail.zero_bytes,
            },
            TailState::Unterminated => TailFix::Terminate {
                offset: tail.offset + tail.bytes,
            },
            TailState::Empty | TailState::Clean => TailFix::None,
        }
    }
}

impl Plan {
    /// Whether there is nothing to change.
    pub fn is_noop(&self) -> bool {
        self.tail == TailFix::None && self.salvaged.is_empty()
    }
}

/// Why a repair was not planned: it would take active leases away. The
/// rules above make this impossible; it is checked all the same, because a
/// repair that loses work must never be written.
#[derive(Clone, Debug)]
pub struct WouldLoseWork(pub Vec<WorkId>);

impl std::fmt::Display for WouldLoseWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the repair would take {} active leases away from resume (first {}); nothing was written",
            self.0.len(),
            self.0[0]
        )
    }
}

impl std::error::Error for WouldLoseWork {}

/// Scans a journal once, replaying it as it is and as it will be.
pub fn scan(src: impl journal::Source) -> io::Result<(Scan, Salvager)> {
    let mut salvager = Salvager::new();
    let scan = journal::scan(src, &mut salvager)?;
    Ok((scan, salvager))
}

/// Plans the repair of a scanned journal.
pub fn plan(scan: &Scan, salvager: Salvager) -> Result<Plan, WouldLoseWork> {
    let tail = &scan.summary.tail;
    let Salvager { replay, salvaged } = salvager;
    let last_line_salvaged = salvaged.last().is_some_and(|s| s.offset == tail.offset);
    // A salvaged last line is rewritten whole, terminator included.
    let tail_fix = if last_line_salvaged {
        TailFix::None
    } else {
        TailFix::of(tail)
    };
    // Without a salvage the file replays as it does now.
    let after_replay = if salvaged.is_empty() {
        &scan.replay
    } else {
        &replay
    };
    let before = &scan.replay;
    let mut brought_back: Vec<WorkId> = after_replay
        .active
        .keys()
        .filter(|id| !before.active.contains_key(id))
        .copied()
        .collect();
    brought_back.sort_unstable();
    let mut completed_by_salvage = Vec::new();
    let mut lost = Vec::new();
    for id in before.active.keys() {
        if !after_replay.active.contains_key(id) {
            if after_replay.completed.contains(id) {
                completed_by_salvage.push(*id);
            } else {
                lost.push(*id);
            }
        }
    }
    if !lost.is_empty() {
        lost.sort_unstable();
        return Err(WouldLoseWork(lost));
    }
    completed_by_salvage.sort_unstable();
    Ok(Plan {
        tail: tail_fix,
        rewrite: !salvaged.is_empty(),
        brought_back,
        completed_by_salvage,
        before: StateView::of(before),
        after: StateView::of(after_replay),
        salvaged,
    })
}

/// Writes the repaired file: the source's lines verbatim, except salvaged
/// lines (each record they hide on a line of its own, but those left out),
/// the torn tail (dropped) and an unterminated last record (terminated).
pub fn write_result(src: impl Read, plan: &Plan, out: &mut dyn Write) -> io::Result<()> {
    write_lines(src, &plan.tail, &plan.salvaged, out)
}

/// Writes the source sealed as `tail` says, and nothing else changed (what
/// an append writes first, for `--output`).
pub fn write_sealed(src: impl Read, tail: &TailFix, out: &mut dyn Write) -> io::Result<()> {
    write_lines(src, tail, &[], out)
}

fn write_lines(
    src: impl Read,
    tail: &TailFix,
    salvaged: &[Salvage],
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut reader = LineReader::new(src);
    let mut salvaged = salvaged.iter().peekable();
    while let Some(line) = reader.next_line()? {
        let mut split = false;
        while let Some(s) = salvaged.next_if(|s| s.offset == line.offset) {
            split = true;
            if s.action == SalvageAction::LeftOut {
                continue;
            }
            out.write_all(&line.content[s.fragment_bytes..line.content.len() - s.trailing_bytes])?;
            out.write_all(b"\n")?;
        }
        if split {
            continue;
        }
        if line.terminator == Terminator::None {
            match tail {
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
    Ok(())
}

/// Runs `repair` over `paths` (journals or state directories): the plan
/// of each journal, carried out when `options` say so. Returns the report
/// and the exit status.
pub fn run(
    paths: &[PathBuf],
    options: &WriteOptions,
    progress: &dyn Progress,
    tell: Tell<'_>,
) -> anyhow::Result<(Report<Plan>, Exit)> {
    let report = transaction::run_paths(
        "repair",
        schema::REPAIR,
        paths,
        options,
        tell,
        &[Kind::Journal],
        |session, path, _| repair_file(session, path, progress),
    )?;
    let exit = transaction::exit_for(&report, Plan::is_noop);
    Ok((report, exit))
}

/// Plans the repair of one journal and, in a writing mode, carries it out.
fn repair_file(
    session: &Session<'_>,
    path: &Path,
    progress: &dyn Progress,
) -> anyhow::Result<Outcome<Plan>> {
    let removed_temp_files = session.clean_temps(path);
    let (file, meta) = durable::open_target(path)?;
    let identity = Identity::of(&meta);
    let meter = progress.meter(path, meta.len());
    let advance = |n| meter.advance(n);
    let src = Positional::file(&file, meta.len()).with_progress(&advance);
    let (scan, salvager) = self::scan(src).map_err(transaction::read_error(path))?;
    meter.finish();
    let plan =
        self::plan(&scan, salvager).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    drop(scan);
    let mut outcome = session.outcome(path, Kind::Journal, plan, removed_temp_files);
    let plan = &outcome.plan;
    if plan.is_noop() {
        outcome.note = Some("nothing to repair".into());
        return Ok(outcome);
    }
    if !session.writes() {
        return Ok(outcome);
    }
    failpoint::hit("planned")?;
    let check = |f: &mut durable::Reread<'_>| check_replay(f, &plan.after).map(|()| Publish::Yes);
    let produce =
        |out: &mut dyn Write| write_result(transaction::reopen(path, &identity)?, plan, out);
    match session.mode {
        Mode::Output => {
            let dest = session.destination(path);
            durable::replace(dest, None, true, produce, check)?;
            outcome.output = Some(dest.display().to_string());
        }
        _ if plan.rewrite => {
            let original = durable::Original {
                file: &file,
                meta: &meta,
                carry_late_appends: true,
            };
            let (published, backup) = session.replace_in_place(path, &original, produce, check)?;
            outcome.backup = backup;
            outcome.late_appends_carried = published.carried;
        }
        _ => {
            let (backup, ended) =
                session.append_in_place(path, file, &identity, (&plan.tail, &[], &plan.after))?;
            outcome.backup = backup;
            transaction::record_ended(&mut outcome.plan.tail, &mut outcome.note, ended);
        }
    }
    outcome.written = true;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = r#"{"attempts":1,"clock":"unix","id":"c178b7e31d5efb37c2e443f52fef64f302d73c6fe5c3e71c78b968b7115c88b4","op":"lease","payload":{"path":"torn-1"},"time":1754550000.0,"worker":1}"#;
    const B: &str = r#"{"attempts":1,"clock":"unix","id":"d877ee1daaa3f2319c2261cb2a5b71e9120717053d64721763ff968b221e0f7b","op":"lease","payload":{"path":"torn-2"},"time":1754550001.0,"worker":2}"#;
    const A_DONE: &str = r#"{"clock":"unix","id":"c178b7e31d5efb37c2e443f52fef64f302d73c6fe5c3e71c78b968b7115c88b4","op":"done","time":1754550002.0}"#;
    const A_RECLAIM: &str = r#"{"clock":"unix","id":"c178b7e31d5efb37c2e443f52fef64f302d73c6fe5c3e71c78b968b7115c88b4","op":"reclaim","time":1754550002.0}"#;

    fn run(input: &str) -> (Plan, String) {
        let (scan, salvager) = scan(input.as_bytes()).unwrap();
        let plan = plan(&scan, salvager).unwrap();
        let mut out = Vec::new();
        write_result(input.as_bytes(), &plan, &mut out).unwrap();
        (plan, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_torn_tail_is_cut_and_no_record_is_appended() {
        let input = format!("{A}\n{{\"attempts\":1,\"clo");
        let (plan, out) = run(&input);
        assert_eq!(
            plan.tail,
            TailFix::Cut {
                offset: A.len() as u64 + 1,
                bytes: 18,
                zero_bytes: 0
            }
        );
        assert_eq!(out, format!("{A}\n"));
        assert_eq!(plan.before, plan.after);
        assert!(!plan.rewrite);
    }

    #[test]
    fn a_complete_last_record_gets_its_newline() {
        let (plan, out) = run(&format!("{A}\n{B}"));
        assert_eq!(
            plan.tail,
            TailFix::Terminate {
                offset: (A.len() + 1 + B.len()) as u64
            }
        );
        assert_eq!(out, format!("{A}\n{B}\n"));
        assert_eq!(plan.before, plan.after);
    }

    #[test]
    fn a_glued_lease_comes_back() {
        let input = format!("{A}\n{{\"attempts\":1,\"clock\":\"unix\",\"id\":\"{B}\n");
        let (plan, out) = run(&input);
        assert_eq!(plan.before.active, 1);
        assert_eq!(plan.after.active, 2);
        assert_eq!(plan.brought_back.len(), 1);
        assert!(plan.rewrite);
        assert_eq!(out, format!("{A}\n{B}\n"));
    }

    #[test]
    fn a_glued_done_completes_and_says_so() {
        let input = format!("{A}\n{{\"attempts\":1,{A_DONE}\n");
        let (plan, out) = run(&input);
        assert_eq!(plan.completed_by_salvage.len(), 1);
        assert_eq!(plan.after.active, 0);
        assert_eq!(plan.after.completed, 1);
        assert_eq!(out, format!("{A}\n{A_DONE}\n"));
    }

    #[test]
    fn a_glued_reclaim_of_an_active_lease_is_left_out() {
        let input = format!("{A}\n{{\"attempts\":1,{A_RECLAIM}\n{B}\n");
        let (plan, out) = run(&input);
        assert_eq!(plan.salvaged[0].action, SalvageAction::LeftOut);
        assert_eq!(plan.before, plan.after, "resume still requeues A");
        assert_eq!(out, format!("{A}\n{B}\n"));
    }

    #[test]
    fn a_bom_in_front_of_the_first_record_is_removed() {
        let input = format!("\u{feff}{A}\n{B}\n");
        let (plan, out) = run(&input);
        assert_eq!(plan.salvaged[0].hidden, Hidden::Bom);
        assert_eq!(plan.after.active, 2);
        assert_eq!(out, format!("{A}\n{B}\n"));
        // Two of them, or one in front of nothing that is a record.
        let (plan, out) = run(&format!("\u{feff}\u{feff}{A}\n"));
        assert_eq!(plan.after.active, 1);
        assert_eq!(out, format!("{A}\n"));
        let (plan, _) = run(&format!("\u{feff}\n{A}\n"));
        assert!(plan.is_noop());
    }

    #[test]
    fn a_complete_record_followed_by_nuls_loses_only_the_nuls() {
        let input = format!("{A}\n{A_DONE}\0\0\0\0");
        let (plan, out) = run(&input);
        assert_eq!(plan.salvaged[0].hidden, Hidden::ZeroFill);
        assert_eq!(plan.salvaged[0].trailing_bytes, 4);
        assert_eq!(plan.tail, TailFix::None);
        assert_eq!(plan.completed_by_salvage.len(), 1);
        assert_eq!(out, format!("{A}\n{A_DONE}\n"));
        // Glued onto a torn fragment and followed by NULs: the record alone
        // stays.
        let (plan, out) = run(&format!("{A}\n{{\"attempts\":1,{A_DONE}\0\0"));
        assert_eq!(plan.salvaged[0].hidden, Hidden::Glued);
        assert_eq!(out, format!("{A}\n{A_DONE}\n"));
        // Only NULs: the whole line goes.
        let (plan, out) = run(&format!("{A}\n\0\0\0"));
        assert!(plan.salvaged.is_empty());
        assert_eq!(out, format!("{A}\n"));
    }

    #[test]
    fn records_glued_one_after_another_all_come_back() {
        // A complete record whose newline is missing, with the next record
        // appended onto it (what upstream's append does to an unterminated
        // tail), and a third one glued behind a torn fragment.
        let input = format!("{A}{B}{{\"attempts\":1,{A_DONE}\n");
        let (plan, out) = run(&input);
        let hidden: Vec<Hidden> = plan.salvaged.iter().map(|s| s.hidden).collect();
        assert_eq!(
            hidden,
            [
                Hidden::MissingNewline,
                Hidden::MissingNewline,
                Hidden::Glued
            ]
        );
        assert_eq!(out, format!("{A}\n{B}\n{A_DONE}\n"));
        assert_eq!(plan.brought_back.len(), 1, "B; A is completed");
        assert_eq!(plan.after.completed, 1);
        let (plan, out) = run(&format!("{A}{B}\n"));
        let hidden: Vec<Hidden> = plan.salvaged.iter().map(|s| s.hidden).collect();
        assert_eq!(hidden, [Hidden::MissingNewline, Hidden::Appended]);
        assert_eq!(out, format!("{A}\n{B}\n"));
    }

    #[test]
    fn a_record_followed_by_a_torn_append_keeps_the_record() {
        let input = format!("{A}\n{B}{{\"attempts\":1,\"clo");
        let (plan, out) = run(&input);
        assert_eq!(plan.salvaged.len(), 1);
        assert_eq!(plan.salvaged[0].hidden, Hidden::MissingNewline);
        assert_eq!(plan.tail, TailFix::None);
        assert_eq!(plan.brought_back.len(), 1);
        assert_eq!(out, format!("{A}\n{B}\n"));
    }

    #[test]
    fn a_clean_journal_needs_nothing() {
        let input = format!("{A}\n{B}\n");
        let (plan, out) = run(&input);
        assert!(plan.is_noop());
        assert_eq!(out, input);
    }
}
