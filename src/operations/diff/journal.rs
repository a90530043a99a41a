//! `diff` of two journals: their replay states compared (active leases
//! and completed ids), and how their bytes relate: identical, B as A plus
//! appended records (each with what replay did with it), B cut back, or
//! where they diverge and what the lines from there are like; with
//! `--history`, B's records of each changed id.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use serde::Serialize;
use serde_json::{Value as Json, json};

use super::{
    Change, ChangeKind, DiffKind, DiffReport, Filter, Side, Summary, count, float, int, int_delta,
};
use crate::engine::journal::{
    self, Active, LineEvent, LineKind, LineReader, Observer, Replay, StateView, WorkId,
};
use crate::operations::schema;
use crate::store::error::{InputError, in_words};
use crate::store::open;

fn active_json(a: &Active) -> Json {
    json!({
        "worker": int(&a.worker),
        "time": float(a.time),
        "attempts": int(&a.attempts),
        "clock": a.clock.as_str(),
    })
}

/// Compares two replay states.
pub fn replays(a: &Replay, b: &Replay, filter: &Filter) -> Vec<Change> {
    let mut changes = Vec::new();
    let ids: BTreeSet<&WorkId> = a.active.keys().chain(b.active.keys()).collect();
    for id in ids {
        let hex = Some(id.to_hex());
        match (a.active.get(id), b.active.get(id)) {
            (Some(x), None) => changes.push(Change {
                entity: "active",
                change: ChangeKind::Removed,
                id: hex,
                field: None,
                before: active_json(x),
                after: Json::Null,
                delta: None,
            }),
            (None, Some(y)) => changes.push(Change {
                entity: "active",
                change: ChangeKind::Added,
                id: hex,
                field: None,
                before: Json::Null,
                after: active_json(y),
                delta: None,
            }),
            (Some(x), Some(y)) => {
                let mut field =
                    |name: &'static str, before: Json, after: Json, delta: Option<Json>| {
                        if before != after {
                            changes.push(Change {
                                entity: "active",
                                change: ChangeKind::Changed,
                                id: hex.clone(),
                                field: Some(name),
                                before,
                                after,
                                delta,
                            });
                        }
                    };
                field("owner", int(&x.worker), int(&y.worker), None);
                let time_delta = (x.time != y.time).then(|| float(y.time - x.time));
                field("time", float(x.time), float(y.time), time_delta);
                field(
                    "attempts",
                    int(&x.attempts),
                    int(&y.attempts),
                    int_delta(&x.attempts, &y.attempts),
                );
                field(
                    "clock",
                    json!(x.clock.as_str()),
                    json!(y.clock.as_str()),
                    None,
                );
                if x.payload != y.payload {
                    // The same id with another payload cannot happen (the id
                    // is its hash); kept for completeness.
                    field("payload", json!("…"), json!("(different)"), None);
                }
            }
            (None, None) => {}
        }
    }
    let removed = a.completed.iter().filter(|id| !b.completed.contains(id));
    let added = b.completed.iter().filter(|id| !a.completed.contains(id));
    let mut completed: Vec<(ChangeKind, &WorkId)> = removed
        .map(|id| (ChangeKind::Removed, id))
        .chain(added.map(|id| (ChangeKind::Added, id)))
        .collect();
    completed.sort_by_key(|(_, id)| **id);
    for (change, id) in completed {
        changes.push(Change {
            entity: "completed",
            change,
            id: Some(id.to_hex()),
            field: None,
            before: json!(change == ChangeKind::Removed),
            after: json!(change == ChangeKind::Added),
            delta: None,
        });
    }
    changes.retain(|c| filter.keeps(c));
    changes
}

/// A record in B, with what replay did with it.
#[derive(Clone, Debug, Serialize)]
pub struct RecordAt {
    /// 1-based line in B.
    pub line: u64,
    /// Byte offset in B.
    pub offset: u64,
    /// The op (`lease`, `done`, `reclaim`, other), or `corrupt`/`torn`…
    pub op: String,
    /// The id, for records.
    pub id: Option<String>,
    /// What replay did with it.
    pub effect: String,
}

/// How two journals' bytes relate.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "relation", rename_all = "kebab-case")]
pub enum Bytes {
    /// Byte for byte the same.
    Identical,
    /// B is A followed by more bytes.
    Appended {
        /// Bytes A has (where B's new part starts).
        at_offset: u64,
        /// Lines of B from there, with their effects.
        appended: Vec<RecordAt>,
        /// Whether A ended inside a line (its torn tail and B's first new
        /// bytes are one line).
        glued_onto_a_torn_tail: bool,
    },
    /// A is B followed by more bytes (B was cut back).
    Truncated {
        /// Bytes B has.
        at_offset: u64,
    },
    /// They differ from some byte on.
    Diverged {
        /// The first differing byte offset.
        offset: u64,
        /// The line of A it is on.
        line_a: u64,
        /// The line of B it is on.
        line_b: u64,
        /// What A's lines from there are like.
        tail_a: TailKind,
        /// What B's lines from there are like.
        tail_b: TailKind,
    },
}

/// The state of a file's divergent part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TailKind {
    /// Every line parses (or there is none).
    Clean,
    /// Its last line is torn.
    Torn,
    /// It holds a corrupt line (other than a torn last line).
    Corrupt,
}

/// How B's bytes relate to A's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// The same bytes.
    Identical,
    /// B is A with more bytes after offset `at` (A's length).
    Appended {
        /// Where A ends.
        at: u64,
    },
    /// They differ at offset `at`, or B ends there, before A does.
    Differs {
        /// The first differing offset, or B's length.
        at: u64,
    },
}

/// Compares two byte streams: identical, a prefix, or the first divergence.
pub fn relate(mut a: impl Read, mut b: impl Read) -> io::Result<Relation> {
    let mut buf_a = vec![0u8; 1 << 16];
    let mut buf_b = vec![0u8; 1 << 16];
    let mut offset = 0u64;
    loop {
        let na = read_full(&mut a, &mut buf_a)?;
        let nb = read_full(&mut b, &mut buf_b)?;
        let n = na.min(nb);
        if let Some(i) = (0..n).find(|&i| buf_a[i] != buf_b[i]) {
            return Ok(Relation::Differs {
                at: offset + i as u64,
            });
        }
        offset += n as u64;
        if na < nb {
            return Ok(Relation::Appended { at: offset });
        }
        if na > nb {
            return Ok(Relation::Differs { at: offset });
        }
        if na == 0 {
            return Ok(Relation::Identical);
        }
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The line holding `offset`, and what the lines from there are like.
pub fn line_at(src: impl Read, offset: u64) -> io::Result<(u64, TailKind)> {
    let mut reader = LineReader::new(src);
    let mut line_no = 0;
    let mut kind = TailKind::Clean;
    let mut found = None;
    while let Some(line) = reader.next_line()? {
        let end = line.offset + line.raw.len() as u64;
        if found.is_none() && end > offset {
            found = Some(line.number);
        }
        if found.is_some() {
            let classified = journal::classify(line.content);
            if let LineKind::Corrupt { .. } = classified.kind {
                if line.terminator == journal::Terminator::None {
                    if kind == TailKind::Clean {
                        kind = TailKind::Torn;
                    }
                } else {
                    kind = TailKind::Corrupt;
                }
            }
        }
        line_no = line.number;
    }
    Ok((found.unwrap_or(line_no + 1), kind))
}

/// Collects B's lines from an offset on, with their effects.
pub struct FromOffset {
    /// Where to start.
    pub offset: u64,
    /// What was collected.
    pub records: Vec<RecordAt>,
}

impl Observer for FromOffset {
    fn line(&mut self, event: &LineEvent<'_>) {
        // A line holding any new byte: every line from the offset on, and
        // the line A's torn tail is glued into.
        if event.offset >= self.offset || event.offset + event.content.len() as u64 > self.offset {
            self.records.push(record_at(event));
        }
    }
}

fn record_at(event: &LineEvent<'_>) -> RecordAt {
    let (op, id, effect) = match (&event.classified.kind, event.effect) {
        (LineKind::Record(r), Some(effect)) => (
            r.op.name().to_string(),
            Some(r.id.to_hex()),
            effect.describe(),
        ),
        (
            LineKind::Corrupt {
                glued: Some((_, r)),
                ..
            },
            _,
        ) => (
            r.op.name().to_string(),
            Some(r.id.to_hex()),
            "lost: glued onto a torn fragment, upstream ignores the line".into(),
        ),
        (kind, _) => (
            "ignored".into(),
            None,
            event
                .classified
                .describe_ignored()
                .unwrap_or_else(|| format!("{kind:?}")),
        ),
    };
    RecordAt {
        line: event.number,
        offset: event.offset,
        op,
        id,
        effect,
    }
}

/// Collects B's records of a set of ids (for `--history`).
pub struct RecordsOf {
    /// The ids.
    pub ids: BTreeSet<String>,
    /// Their records, per id, in file order.
    pub records: BTreeMap<String, Vec<RecordAt>>,
}

impl Observer for RecordsOf {
    fn line(&mut self, event: &LineEvent<'_>) {
        let id = match &event.classified.kind {
            LineKind::Record(r) => r.id.to_hex(),
            LineKind::Corrupt {
                glued: Some((_, r)),
                ..
            } => r.id.to_hex(),
            _ => return,
        };
        if self.ids.contains(&id) {
            self.records.entry(id).or_default().push(record_at(event));
        }
    }
}

/// A file read from its start, by position (the sniffing read moved its
/// cursor; standard input is such a file too, see [`open::stdin_file`](crate::store::open::stdin_file)).
struct FromStart<'a> {
    file: &'a File,
    pos: u64,
}

impl Read for FromStart<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = std::os::unix::fs::FileExt::read_at(self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// One side, read again from its start.
fn reopen(file: &File) -> BufReader<FromStart<'_>> {
    BufReader::with_capacity(1 << 20, FromStart { file, pos: 0 })
}

/// Scans one side.
fn scan(
    side: &Side<'_>,
    observer: &mut (dyn journal::Observer + Send),
) -> Result<journal::Scan, InputError> {
    let len = open::size(side.path, &side.file)?;
    journal::scan(journal::Positional::file(&side.file, len), observer)
        .map_err(|e| InputError::new(side.path, format!("read error: {}", in_words(&e))))
}

/// A read error of one side.
fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> InputError + '_ {
    move |e| InputError::new(path, format!("read error: {}", in_words(&e)))
}

/// Compares two journals: their replays, then their bytes.
pub(super) fn compare(
    a: &Side<'_>,
    b: &Side<'_>,
    filter: &Filter,
    with_history: bool,
) -> Result<DiffReport, InputError> {
    let relation = relate(reopen(&a.file), reopen(&b.file)).map_err(io_err(b.path))?;
    let scan_a = scan(a, &mut ())?;
    // Identical bytes replay identically: B is not read again.
    let (scan_b, bytes) = match relation {
        Relation::Identical => (None, Bytes::Identical),
        Relation::Appended { at } => {
            let mut from = FromOffset {
                offset: at,
                records: Vec::new(),
            };
            let scan_b = scan(b, &mut from)?;
            let glued = scan_a.summary.tail.state != journal::TailState::Clean
                && scan_a.summary.tail.state != journal::TailState::Empty;
            (
                Some(scan_b),
                Bytes::Appended {
                    at_offset: at,
                    appended: from.records,
                    glued_onto_a_torn_tail: glued,
                },
            )
        }
        Relation::Differs { at } => {
            let scan_b = scan(b, &mut ())?;
            if at == scan_b.summary.bytes && at < scan_a.summary.bytes {
                (Some(scan_b), Bytes::Truncated { at_offset: at })
            } else {
                let (line_a, tail_a) = line_at(reopen(&a.file), at).map_err(io_err(a.path))?;
                let (line_b, tail_b) = line_at(reopen(&b.file), at).map_err(io_err(b.path))?;
                (
                    Some(scan_b),
                    Bytes::Diverged {
                        offset: at,
                        line_a,
                        line_b,
                        tail_a,
                        tail_b,
                    },
                )
            }
        }
    };
    let replay_b = scan_b.as_ref().map_or(&scan_a.replay, |s| &s.replay);
    let changes = replays(&scan_a.replay, replay_b, filter);
    let history = if with_history {
        let ids: BTreeSet<String> = changes.iter().filter_map(|c| c.id.clone()).collect();
        let mut records = RecordsOf {
            ids,
            records: BTreeMap::new(),
        };
        scan(b, &mut records)?;
        Some(records.records)
    } else {
        None
    };
    let identical = matches!(bytes, Bytes::Identical);
    let state_a = StateView::of(&scan_a.replay);
    Ok(DiffReport {
        schema_version: schema::DIFF,
        kind: DiffKind::Journal,
        a: a.path.display().to_string(),
        b: b.path.display().to_string(),
        identical,
        counts: count(&changes),
        changes,
        summary: Summary::Journal {
            b: scan_b
                .as_ref()
                .map_or_else(|| state_a.clone(), |s| StateView::of(&s.replay)),
            a: state_a,
        },
        bytes: Some(bytes),
        history,
        ledger: None,
        table: None,
        notes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relate_finds_prefixes_and_divergence() {
        assert_eq!(
            relate(&b"abc"[..], &b"abc"[..]).unwrap(),
            Relation::Identical
        );
        assert_eq!(
            relate(&b"abc"[..], &b"abcdef"[..]).unwrap(),
            Relation::Appended { at: 3 }
        );
        assert_eq!(
            relate(&b"abcdef"[..], &b"abc"[..]).unwrap(),
            Relation::Differs { at: 3 }
        );
        assert_eq!(
            relate(&b"abXdef"[..], &b"abcdef"[..]).unwrap(),
            Relation::Differs { at: 2 }
        );
    }
}
