//! `diff` as data: what changed between two snapshots ([`snapshot`]: their
//! restored views, keyed by task id), two journals ([`journal`]: their
//! replay states, plus the forensic facts about their bytes: whether one
//! is the other plus appended records, or where they diverge), two
//! digest ledgers ([`ledger`]: their digests per shard file, and what
//! upstream loads from each) or two fenced lease tables ([`table`]: record
//! by record, matched by id, and the files beside the records), in the
//! terms of the domain. This module
//! holds what the comparisons share (a change, the filter, the report) and
//! [`run`], which opens the two sides, read-only, and hands them to the
//! comparison of their kind. The comparing itself is pure: values and
//! readers in, a report out.

pub mod journal;
pub mod ledger;
pub mod snapshot;
pub mod table;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::Path;

use serde::Serialize;
use serde_json::{Value as Json, json};

pub use journal::{
    Bytes, FromOffset, RecordAt, RecordsOf, Relation, TailKind, line_at, relate, replays,
};
pub use ledger::{FileDiff, LedgerDiff, LedgerDiffOptions, LedgerSide, LedgerTotals};
pub use snapshot::{SnapshotDiff, SnapshotSide, Totals, snapshots};
pub use table::{TableDiff, TableDiffOptions, TableSide, TableTotals};

use crate::engine::journal::{Clock, StateView};
use crate::engine::json::{PyInt, float_repr_any};
use crate::engine::table as engine_table;
use crate::operations::exit::Exit;
use crate::operations::table as lease_table;
use crate::store::error::InputError;
use crate::store::format::{Kind, LEDGER_DIR};
use crate::store::ledger as ledger_dir;
use crate::store::lock::ProcLocks;
use crate::store::open;
use crate::store::resolve::{self, Purpose, Target};

/// What kind of change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Only in B.
    Added,
    /// Only in A.
    Removed,
    /// In both, different.
    Changed,
}

/// One difference.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// `task`, `lease`, `config`, `active` or `completed`.
    pub entity: &'static str,
    /// Added, removed or changed.
    pub change: ChangeKind,
    /// Task or work id (none for configuration).
    pub id: Option<String>,
    /// The field that changed (none for added and removed entities).
    pub field: Option<&'static str>,
    /// The value in A.
    pub before: Json,
    /// The value in B.
    pub after: Json,
    /// `after - before` for numbers.
    pub delta: Option<Json>,
}

/// Which changes to report.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Fields to leave out.
    pub ignore: BTreeSet<String>,
    /// Only this kind of change.
    pub only: Option<ChangeKind>,
    /// Only ids starting with this (lowercase hex).
    pub id_prefix: Option<String>,
}

impl Filter {
    fn keeps(&self, c: &Change) -> bool {
        self.keeps_parts(c.field, c.change, c.id.as_deref())
    }

    /// Whether a change of `field` (none: an entity added or removed), of
    /// this kind, to `id` is kept.
    fn keeps_parts(&self, field: Option<&str>, change: ChangeKind, id: Option<&str>) -> bool {
        field.is_none_or(|f| !self.ignore.contains(f))
            && self.only.is_none_or(|k| k == change)
            && self
                .id_prefix
                .as_deref()
                .is_none_or(|p| id.is_some_and(|id| id.starts_with(p)))
    }

    /// Whether any filter is set.
    fn is_set(&self) -> bool {
        !self.ignore.is_empty() || self.only.is_some() || self.id_prefix.is_some()
    }
}

/// A Python integer as JSON (`null` if it cannot be one).
fn int(i: &PyInt) -> Json {
    serde_json::to_value(i).unwrap_or(Json::Null)
}

/// A float as JSON; one that JSON has no number for (NaN, an infinity)
/// as Python's repr writes it, in a string.
fn float(f: f64) -> Json {
    serde_json::Number::from_f64(f).map_or_else(|| Json::String(float_repr_any(f)), Json::Number)
}

/// `b - a`, when both are small integers and it does not overflow.
fn int_delta(a: &PyInt, b: &PyInt) -> Option<Json> {
    match (a, b) {
        (PyInt::Small(x), PyInt::Small(y)) => y.checked_sub(*x).map(|d| json!(d)),
        _ => None,
    }
}

/// Changes per entity and kind, keyed `{entity}_{kind}` (`task_changed`).
pub fn count(changes: &[Change]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for c in changes {
        let kind = match c.change {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
        };
        *counts.entry(format!("{}_{kind}", c.entity)).or_default() += 1;
    }
    counts
}

/// Totals of each side.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Summary {
    /// Snapshots: cumulative statistics.
    Snapshot {
        /// A's totals.
        a: Totals,
        /// B's totals.
        b: Totals,
        /// A's clock domain (its times are monotonic when legacy).
        clock_a: Clock,
        /// B's clock domain.
        clock_b: Clock,
    },
    /// Journals: replay states.
    Journal {
        /// A's state.
        a: StateView,
        /// B's state.
        b: StateView,
    },
    /// Digest ledgers: what each holds and loads.
    Ledger {
        /// A's ledger.
        a: LedgerTotals,
        /// B's ledger.
        b: LedgerTotals,
    },
    /// Fenced lease tables: `snapshot_counts(now)` and the files of each.
    Table {
        /// A's table.
        a: TableTotals,
        /// B's table.
        b: TableTotals,
    },
}

/// What `diff` compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DiffKind {
    /// Two snapshots.
    Snapshot,
    /// Two journals.
    Journal,
    /// Two digest ledgers (of two state directories, perhaps).
    Ledger,
    /// Two fenced lease tables (of two state directories, perhaps).
    Table,
}

/// The `diff --format json` document.
#[derive(Clone, Debug, Serialize)]
pub struct DiffReport {
    /// Contract version.
    pub schema_version: u32,
    /// `snapshot`, `journal`, `ledger` or `table`.
    pub kind: DiffKind,
    /// A's path.
    pub a: String,
    /// B's path.
    pub b: String,
    /// Whether the two are identical (journals: byte for byte; snapshots:
    /// restored views and configuration; ledgers: the same digests in the
    /// same files; tables: every name under the roots the same, every
    /// record the same bytes), regardless of filters.
    pub identical: bool,
    /// The changes (after `--ignore`, `--only`, `--id`); for ledgers at
    /// most `--max-examples` of each kind, the smallest digests; for
    /// tables at most `--max-examples` of each kind, the first in shard
    /// and id order (or path order, for files).
    pub changes: Vec<Change>,
    /// Changes by entity and kind (exact, after the filters).
    pub counts: BTreeMap<String, u64>,
    /// Totals of each side.
    pub summary: Summary,
    /// Journals: how the bytes relate.
    pub bytes: Option<Bytes>,
    /// Journals with `--history`: B's records of each changed id.
    pub history: Option<BTreeMap<String, Vec<RecordAt>>>,
    /// Ledgers: the comparison per shard index, and of what upstream loads.
    pub ledger: Option<LedgerDiff>,
    /// Tables: how they were compared.
    pub table: Option<TableDiff>,
    /// Remarks (a side that does not restore, …).
    pub notes: Vec<String>,
}

/// Compares A and B (two journals, two snapshots, two digest ledgers:
/// `.state_shards/` directories, `processed.NNN.log` files or the ledgers
/// of state directories; or two fenced lease tables, or the tables of two
/// state directories that both hold one; `-` is standard input for one
/// journal or snapshot), read as `kind` when given. Returns the report and
/// the exit status as diff(1) has it: same, or different.
pub fn run(
    (a, b): (&Path, &Path),
    kind: Option<Kind>,
    filter: &Filter,
    with_history: bool,
    ledgers: LedgerDiffOptions,
    tables: TableDiffOptions,
) -> anyhow::Result<(DiffReport, Exit)> {
    if open::is_stdin(a) && open::is_stdin(b) {
        anyhow::bail!("diff reads standard input for one side only (- given for A and B)");
    }
    let proc_locks = ProcLocks::default();
    let mut notes = Vec::new();
    let opened = match (
        open_side(a, kind, &proc_locks)?,
        open_side(b, kind, &proc_locks)?,
    ) {
        (Opened::Ledger(x), Opened::Ledger(y)) if x.state_directory && y.state_directory => {
            match shared_table(a, b, &mut notes) {
                Some((ta, tb)) => (Opened::Table(ta), Opened::Table(tb)),
                None => (Opened::Ledger(x), Opened::Ledger(y)),
            }
        }
        other => other,
    };
    let mut report = match opened {
        (Opened::Table(side_a), Opened::Table(side_b)) => {
            table::compare(&side_a, &side_b, filter, tables)?
        }
        (Opened::File(side_a), Opened::File(side_b)) if side_a.kind == side_b.kind => {
            match side_a.kind {
                Kind::Snapshot => snapshot::compare(side_a, side_b, filter)?,
                Kind::Journal => journal::compare(&side_a, &side_b, filter, with_history)?,
            }
        }
        (Opened::Ledger(side_a), Opened::Ledger(side_b)) => {
            if side_a.dir.is_none() && side_b.dir.is_none() {
                anyhow::bail!(
                    "neither {} nor {} holds a digest ledger ({}/): diff compares two files, or \
                     two state directories' ledgers (name the journals or snapshots in them)",
                    a.display(),
                    b.display(),
                    LEDGER_DIR
                );
            }
            ledger::compare(&side_a, &side_b, filter, ledgers)?
        }
        (side_a, side_b) => anyhow::bail!(
            "cannot compare {} (a {}) with {} (a {}): diff compares two journals, two snapshots, \
             two digest ledgers or two lease tables",
            a.display(),
            side_a.name(),
            b.display(),
            side_b.name()
        ),
    };
    report.notes.splice(0..0, notes);
    // With --ignore, --only or --id the answer is about what is compared,
    // as diff -I answers: nothing left to show is "same".
    let same = if filter.is_set() {
        report.changes.is_empty()
    } else {
        report.identical
    };
    Ok((report, if same { Exit::Success } else { Exit::Problems }))
}

/// One side, opened: the file, what it was read as, and the bytes the
/// sniffing read took from it.
struct Side<'p> {
    /// The path, as given.
    path: &'p Path,
    /// A journal or a snapshot.
    kind: Kind,
    /// The first bytes, already read.
    prefix: Vec<u8>,
    /// The file, its cursor after them.
    file: File,
}

/// What a side is.
enum Opened<'p> {
    /// A journal or a snapshot.
    File(Side<'p>),
    /// A digest ledger, or a state directory (and its ledger).
    Ledger(LedgerSide<'p>),
    /// A fenced lease table's root.
    Table(TableSide<'p>),
}

impl Opened<'_> {
    /// What it is, in words.
    fn name(&self) -> &'static str {
        match self {
            Opened::File(side) => side.kind.name(),
            Opened::Ledger(side) if side.state_directory => "state directory",
            Opened::Ledger(_) => "digest ledger",
            Opened::Table(_) => "lease table",
        }
    }
}

/// Opens one side: a journal or a snapshot; a ledger's directory or one
/// of its files (by name, unless `kind` says otherwise); a lease table's
/// root (a path with a table's default name is one, whatever it is: the
/// comparison says what is wrong with it); or a state directory, whose
/// ledger (or tables) are compared.
fn open_side<'p>(
    path: &'p Path,
    kind: Option<Kind>,
    proc_locks: &ProcLocks,
) -> Result<Opened<'p>, InputError> {
    if kind.is_none() && !open::is_stdin(path) {
        let named = path.file_name().and_then(|n| n.to_str());
        if lease_table::is_table_root(path)
            || matches!(
                named,
                Some(engine_table::WORK_DIR | engine_table::TARGET_DIR)
            )
        {
            return Ok(Opened::Table(TableSide {
                path,
                root: path.to_path_buf(),
            }));
        }
        let ledger = |dir| {
            Opened::Ledger(LedgerSide {
                path,
                state_directory: false,
                dir: Some(dir),
            })
        };
        if ledger_dir::is_ledger_dir(path) {
            return Ok(ledger(ledger_dir::examine(path)?));
        }
        if let Some(dir) = ledger_dir::single(path)? {
            return Ok(ledger(dir));
        }
    }
    match resolve::resolve(path, kind, Purpose::Read(proc_locks))? {
        Target::File {
            kind, prefix, file, ..
        } => Ok(Opened::File(Side {
            path,
            kind,
            prefix,
            file,
        })),
        Target::Directory(dir) => Ok(Opened::Ledger(LedgerSide {
            path,
            state_directory: true,
            dir: dir.ledger,
        })),
    }
}

/// The table two state directories both hold at a default name (the
/// work table first), with notes on what is then not compared; `None`
/// when they share none (their ledgers are compared, as before).
fn shared_table<'p>(
    a: &'p Path,
    b: &'p Path,
    notes: &mut Vec<String>,
) -> Option<(TableSide<'p>, TableSide<'p>)> {
    let names = [engine_table::WORK_DIR, engine_table::TARGET_DIR];
    let held = |dir: &Path| -> Vec<&str> {
        let roots = lease_table::tables_in(dir);
        names
            .into_iter()
            .filter(|n| roots.iter().any(|r| r.file_name() == Some(n.as_ref())))
            .collect()
    };
    let (in_a, in_b) = (held(a), held(b));
    let name = names
        .into_iter()
        .find(|n| in_a.contains(n) && in_b.contains(n))?;
    notes.push(format!(
        "only the {name}/ tables are compared: name the .state_shards/ directories, the journals \
         or the snapshots to compare those"
    ));
    for other in names.into_iter().filter(|n| *n != name) {
        if in_a.contains(&other) || in_b.contains(&other) {
            notes.push(format!(
                "{other}/ is not compared: name the two roots to compare it"
            ));
        }
    }
    let side = |path: &'p Path| TableSide {
        path,
        root: path.join(name),
    };
    Some((side(a), side(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_by_kind_field_and_id() {
        let c = Change {
            entity: "task",
            change: ChangeKind::Changed,
            id: Some("abcd".into()),
            field: Some("elapsed"),
            before: json!(1.0),
            after: json!(2.0),
            delta: Some(json!(1.0)),
        };
        assert!(Filter::default().keeps(&c));
        let ignore = Filter {
            ignore: BTreeSet::from(["elapsed".to_string()]),
            ..Filter::default()
        };
        assert!(!ignore.keeps(&c));
        let only = Filter {
            only: Some(ChangeKind::Added),
            ..Filter::default()
        };
        assert!(!only.keeps(&c));
        let id = Filter {
            id_prefix: Some("ab".into()),
            ..Filter::default()
        };
        assert!(id.keeps(&c));
    }
}
