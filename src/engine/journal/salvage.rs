//! Records hidden in lines upstream ignores, and their salvage: a record
//! glued onto a torn fragment, records glued one after another (a complete
//! record whose newline is missing, with the next one appended onto it), a
//! record behind byte order marks on the first line, a record followed by
//! the NULs a power loss left at the end of the file. Upstream never sees
//! them; [`hidden_records`] finds them in one line, and a [`Salvager`]
//! replays a file as it will be once each one is back on a line of its
//! own, leaving out a `reclaim` that would take an active lease away from
//! resume. `repair` writes what the salvager decides; other commands count
//! the hidden records ([`HiddenCount`]) or report them.

use std::io::{self, Read, Write};

use serde::Serialize;

use super::classify::classify;
use super::id::WorkId;
use super::lines::{LineReader, Terminator};
use super::model::{CorruptReason, LineKind, Op, Record};
use super::replay::Replay;
use super::scan::{LineEvent, Observer};
use super::seal::TailFix;

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

    /// The replay of the file as it will be once repaired, and what was
    /// salvaged, in file order.
    pub fn into_parts(self) -> (Replay, Vec<Salvage>) {
        (self.replay, self.salvaged)
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
    let classified = classify(text).kind;
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
        && let LineKind::Record(record) = classify(&text[..len]).kind
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

/// Counts the records hidden in lines upstream ignores (what `repair`
/// brings back), for the commands that would otherwise drop them.
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

/// Writes the source sealed as `tail` says, and nothing else changed (what
/// an append writes first, for `--output`).
pub fn write_sealed(src: impl Read, tail: &TailFix, out: &mut dyn Write) -> io::Result<()> {
    write_repaired(src, tail, &[], out)
}

/// Writes the source with its tail sealed as `tail` says and each
/// `salvaged` record on a line of its own (those left out dropped); every
/// other line as it is.
pub fn write_repaired(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::journal::encode::{lease_line, marker_line};
    use crate::engine::journal::{Clock, scan};
    use crate::engine::json::PyInt;

    /// A lease of `path` and its `done` and `reclaim`, each without its
    /// newline, for gluing.
    fn records(path: &str) -> (WorkId, String, String, String) {
        let payload = format!(r#"{{"path":"{path}"}}"#);
        let id = WorkId::of_canonical(payload.as_bytes());
        let one = PyInt::Small(1);
        let text = |mut line: Vec<u8>| {
            line.pop();
            String::from_utf8(line).unwrap()
        };
        (
            id,
            text(lease_line(
                &id,
                &one,
                1.5,
                &one,
                Clock::Unix,
                payload.as_bytes(),
            )),
            text(marker_line("done", &id, Clock::Unix, 2.0)),
            text(marker_line("reclaim", &id, Clock::Unix, 2.0)),
        )
    }

    /// What hid each record of `line`.
    fn hidden(line: &str, first_line: bool, last_unterminated: bool) -> Vec<Hidden> {
        let kind = classify(line.as_bytes()).kind;
        hidden_records(line.as_bytes(), &kind, first_line, last_unterminated)
            .iter()
            .map(|h| h.hidden)
            .collect()
    }

    #[test]
    fn each_hidden_record_is_named_by_what_hid_it() {
        let (_, a, a_done, _) = records("a");
        let (_, b, _, _) = records("b");
        let torn = r#"{"attempts":1,"#;
        assert_eq!(hidden(&a, true, false), [], "a record hides nothing");
        assert_eq!(
            hidden(&format!("{a}{b}{torn}{a_done}"), false, false),
            [
                Hidden::MissingNewline,
                Hidden::MissingNewline,
                Hidden::Glued
            ]
        );
        assert_eq!(
            hidden(&format!("{a}{b}"), false, false),
            [Hidden::MissingNewline, Hidden::Appended]
        );
        assert_eq!(
            hidden(&format!("\u{feff}\u{feff}{a}"), true, false),
            [Hidden::Bom]
        );
        assert_eq!(
            hidden(&format!("{a_done}\0\0\0"), false, true),
            [Hidden::ZeroFill]
        );
        assert_eq!(
            hidden(&format!("{torn}{a_done}\0\0"), false, true),
            [Hidden::Glued]
        );
        assert_eq!(hidden("\0\0\0", false, true), []);
    }

    #[test]
    fn a_line_gives_up_at_most_its_share_of_records() {
        let (_, a, _, _) = records("a");
        let line = a.repeat(MAX_RECORDS_PER_LINE + 6);
        assert_eq!(hidden(&line, false, false).len(), MAX_RECORDS_PER_LINE);
    }

    #[test]
    fn a_leading_object_ends_where_its_braces_close() {
        assert_eq!(leading_object(br#"{"a":"}"}rest"#), Some(9));
        assert_eq!(leading_object(br#"{"a":"\"}"}x"#), Some(11));
        assert_eq!(leading_object(br#"{"a":[{}]}{"#), Some(10));
        assert_eq!(leading_object(br#"{"a":1}"#), None, "nothing follows it");
        assert_eq!(leading_object(br#"{"a":"#), None);
        assert_eq!(leading_object(b"[1]x"), None);
        assert_eq!(leading_object(b"}{"), None);
    }

    #[test]
    fn the_salvager_restores_records_but_a_reclaim_of_an_active_lease() {
        let (a, lease, done, reclaim) = records("a");
        let torn = r#"{"attempts":1,"#;
        let mut salvager = Salvager::new();
        let input = format!("{lease}\n{torn}{reclaim}\n");
        scan(input.as_bytes(), &mut salvager).unwrap();
        let (replay, salvaged) = salvager.into_parts();
        assert_eq!(salvaged.len(), 1);
        assert_eq!(salvaged[0].action, SalvageAction::LeftOut);
        assert_eq!(salvaged[0].op, "reclaim");
        assert_eq!(salvaged[0].fragment_bytes, torn.len());
        assert!(replay.active.contains_key(&a), "resume still requeues it");

        let mut salvager = Salvager::default();
        let input = format!("{lease}\n{torn}{done}\n");
        scan(input.as_bytes(), &mut salvager).unwrap();
        let (replay, salvaged) = salvager.into_parts();
        assert_eq!(salvaged[0].action, SalvageAction::Restored);
        assert!(replay.completed.contains(&a));
    }

    #[test]
    fn hidden_records_are_counted_in_every_line_that_hides_them() {
        let (_, a, a_done, _) = records("a");
        let (_, b, _, _) = records("b");
        let mut count = HiddenCount::default();
        let input = format!("{a}{b}\n{{\"x\":{a_done}\n{a}\n");
        scan(input.as_bytes(), &mut count).unwrap();
        assert_eq!(count.records, 3);
    }
}
