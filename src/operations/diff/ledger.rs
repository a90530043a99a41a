//! `diff` of two digest ledgers (two `.state_shards/`, two
//! `processed.NNN.log`, or the ledgers of two state directories), as sets
//! of digests: the distinct digests added and removed, those in both that
//! moved to other files (a re-shard writes every digest again under the
//! new count), per shard index and in all; and what upstream's
//! `load_recent` loads on each side at one shard count, which is what the
//! AFL rescan skips.
//!
//! Each side is read twice, file by file and never whole: once for the
//! digests it holds (those the count reads apart from the others; the two
//! sides on two threads), then a shard index at a time against the other
//! side. Memory stays proportional to the distinct digests: the two sides'
//! sets, the set of moved digests and one file of each side at a time. The
//! examples listed are the smallest digests of each kind
//! (`--max-examples`), so that the output does not depend on the order a
//! set hands its digests out in; every count is exact.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;
use serde_json::Value as Json;

use super::{Change, ChangeKind, DiffKind, DiffReport, Filter, Summary};
use crate::engine::ledger::{self, Digest, DigestSet, LedgerScan, MAX_DEDUP_ENTRIES};
use crate::operations::ledger::{CountSource, RESERVE_AT_MOST, read_file};
use crate::operations::numbers::{count, plural};
use crate::operations::schema;
use crate::store::error::InputError;
use crate::store::ledger::{Entry, EntryKind, LedgerDir};

/// How two ledgers are compared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LedgerDiffOptions {
    /// The shard count the loads are compared at (`--state-shards`);
    /// `None`: the smallest that reads every shard file of either side.
    pub shard_count: Option<u32>,
    /// How many digests of each kind of change to list (0: all).
    pub max_examples: usize,
}

/// One side of a ledger comparison.
#[derive(Clone, Debug)]
pub struct LedgerSide<'p> {
    /// The path, as given.
    pub path: &'p Path,
    /// Whether the path is a state directory (whose ledger is compared).
    pub state_directory: bool,
    /// The ledger's directory (one file given is a directory of one
    /// shard); `None` for a state directory without `.state_shards/`,
    /// from which upstream loads nothing.
    pub dir: Option<LedgerDir>,
}

impl LedgerSide<'_> {
    fn shards(&self) -> &[Entry] {
        self.dir.as_ref().map_or(&[], |d| &d.shards)
    }

    fn entry(&self, index: u32) -> Option<&Entry> {
        self.shards().iter().find(|e| e.index == Some(index))
    }
}

/// What one side holds, in all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LedgerTotals {
    /// The ledger's directory; `null` when the side has none.
    pub path: Option<String>,
    /// Shard files (upstream's names) that are regular files.
    pub files: u64,
    /// Distinct valid digests in them.
    pub distinct: u64,
    /// Distinct digests `load_recent(MAX_DEDUP_ENTRIES)` returns at the
    /// count (at most 5,000,000).
    pub loaded: u64,
    /// Distinct digests only in files the count never reads.
    pub unread: u64,
    /// Distinct digests the count reads beyond 5,000,000: upstream drops
    /// that many, arbitrary ones.
    pub over_limit: u64,
}

/// One shard index, compared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    /// Upstream's file name for the index.
    pub name: String,
    /// The shard index.
    pub index: u32,
    /// Whether upstream reads the file at the count.
    pub read: bool,
    /// What A has at that name (`file`, `dir`, `other`), `null`: nothing.
    pub a: Option<EntryKind>,
    /// What B has there.
    pub b: Option<EntryKind>,
    /// Distinct digests in A's file.
    pub digests_a: u64,
    /// Distinct digests in B's file.
    pub digests_b: u64,
    /// Digests in B's file that are in no file of A.
    pub added: u64,
    /// Digests in A's file that are in no file of B.
    pub removed: u64,
    /// Digests in B's file, not in A's, that A holds in another file.
    pub moved_in: u64,
    /// Digests in A's file, not in B's, that B holds in another file.
    pub moved_out: u64,
}

impl FileDiff {
    /// Whether the index differs at all (in digests, or in what is there).
    pub fn differs(&self) -> bool {
        self.added + self.removed + self.moved_in + self.moved_out > 0 || self.a != self.b
    }
}

/// The ledgers' comparison: the `ledger` member of `diff`'s report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LedgerDiff {
    /// The shard count the loads were compared at.
    pub shard_count: u32,
    /// Where it came from: `option` (`--state-shards`) or `files` (the
    /// smallest count that reads every shard file of either side).
    pub shard_count_from: CountSource,
    /// Distinct digests in B and in no file of A.
    pub added: u64,
    /// Distinct digests in A and in no file of B.
    pub removed: u64,
    /// Distinct digests in both, not in the same files.
    pub moved: u64,
    /// Distinct digests in both, in the same files.
    pub unchanged: u64,
    /// Distinct digests B's reader loads at the count and A's does not.
    pub load_added: u64,
    /// Distinct digests A's reader loads at the count and B's does not:
    /// the inputs a master on B's ledger dispatches again.
    pub load_removed: u64,
    /// At most how many digests of each kind `changes` lists (0: all).
    pub max_examples: usize,
    /// Every shard index of either side, ascending.
    pub files: Vec<FileDiff>,
}

/// One side's digests: those in the files the count reads, and those of
/// the other files (a digest in both sits in both sets).
struct Held {
    read: LedgerScan,
    unread: LedgerScan,
}

impl Held {
    /// Reads every shard file of `side`, in ascending index.
    fn of(side: &LedgerSide<'_>, count: u32) -> Result<Held, InputError> {
        let mut held = Held {
            read: LedgerScan::new(count, Vec::new()),
            unread: LedgerScan::new(count, Vec::new()),
        };
        let files: Vec<&Entry> = side
            .shards()
            .iter()
            .filter(|e| e.kind == EntryKind::File)
            .collect();
        // Room for every file's digests at once: reserving file by file
        // would rebuild the table once a file.
        let (read, unread): (Vec<&Entry>, Vec<&Entry>) = files
            .iter()
            .partition(|e| e.index.is_some_and(|i| i < count));
        held.read.reserve(reserve(&read));
        held.unread.reserve(reserve(&unread));
        for entry in files {
            let index = entry.index.unwrap_or(u32::MAX);
            let scan = if index < count {
                &mut held.read
            } else {
                &mut held.unread
            };
            read_file(scan, index, entry)?;
        }
        Ok(held)
    }

    /// Whether any file holds the digest.
    fn holds(&self, d: &Digest) -> bool {
        self.read.set().contains(d) || self.unread.set().contains(d)
    }

    /// Every distinct digest, once.
    fn each(&self) -> impl Iterator<Item = Digest> + '_ {
        let read = self.read.set();
        read.iter()
            .chain(self.unread.set().iter().filter(|d| !read.contains(d)))
    }

    fn totals(&self, side: &LedgerSide<'_>) -> LedgerTotals {
        let loaded = self.read.set().len() as u64;
        let distinct = self.each().count() as u64;
        LedgerTotals {
            path: side.dir.as_ref().map(|d| d.path.display().to_string()),
            files: side
                .shards()
                .iter()
                .filter(|e| e.kind == EntryKind::File)
                .count() as u64,
            distinct,
            loaded: loaded.min(MAX_DEDUP_ENTRIES),
            unread: distinct - loaded,
            over_limit: loaded.saturating_sub(MAX_DEDUP_ENTRIES),
        }
    }
}

/// The digests two sides share: in any file, and in the files the count
/// reads. Counted in one pass over B's digests, a look or two into A's
/// sets each.
struct Both {
    held: u64,
    loaded: u64,
}

impl Both {
    fn of(a: &Held, b: &Held) -> Both {
        let mut both = Both { held: 0, loaded: 0 };
        for d in b.read.set().iter() {
            if a.read.set().contains(&d) {
                both.held += 1;
                both.loaded += 1;
            } else if a.unread.set().contains(&d) {
                both.held += 1;
            }
        }
        let read = b.read.set();
        let unread = b.unread.set().iter().filter(|d| !read.contains(d));
        both.held += unread.filter(|d| a.holds(d)).count() as u64;
        both
    }
}

/// Room for the digests of files of these sizes (a valid line is 65
/// bytes).
fn reserve(files: &[&Entry]) -> usize {
    let bytes: u64 = files.iter().filter_map(|e| e.bytes).sum();
    (bytes / 65).min(RESERVE_AT_MOST) as usize
}

/// The digests of one side's file at a shard index (none for a name that
/// is absent, a directory or something else: upstream cannot read those).
fn file_digests(entry: Option<&Entry>) -> Result<LedgerScan, InputError> {
    let mut scan = LedgerScan::new(1, Vec::new());
    if let Some(entry) = entry.filter(|e| e.kind == EntryKind::File) {
        scan.reserve(reserve(&[entry]));
        read_file(&mut scan, entry.index.unwrap_or(u32::MAX), entry)?;
    }
    Ok(scan)
}

/// The files that lost a digest and those that gained it, by index.
type Moves = (Vec<u32>, Vec<u32>);

/// The smallest digests of one kind of change, with the files that lost
/// and gained each. A digest is noted at every file where it changes, in
/// ascending index: one that is among the smallest at the end was kept
/// from its first note on (the largest kept only ever gets smaller), so
/// its files are complete.
struct Examples {
    limit: usize,
    kept: BTreeMap<Digest, Moves>,
}

impl Examples {
    fn new(limit: usize) -> Examples {
        Examples {
            limit,
            kept: BTreeMap::new(),
        }
    }

    fn note(&mut self, digest: Digest, lost: Option<u32>, gained: Option<u32>) {
        if let Some((from, to)) = self.kept.get_mut(&digest) {
            from.extend(lost);
            to.extend(gained);
            return;
        }
        if self.limit != 0 && self.kept.len() >= self.limit {
            match self.kept.last_key_value() {
                Some((largest, _)) if digest < *largest => {
                    self.kept.pop_last();
                }
                _ => return,
            }
        }
        let entry = (lost.into_iter().collect(), gained.into_iter().collect());
        self.kept.insert(digest, entry);
    }

    /// The changes, ascending by digest.
    fn changes(self, change: ChangeKind) -> impl Iterator<Item = Change> {
        let names = |files: Vec<u32>| -> Json {
            if files.is_empty() {
                return Json::Null;
            }
            files
                .into_iter()
                .map(|i| Json::String(ledger::file_name(i)))
                .collect()
        };
        self.kept
            .into_iter()
            .map(move |(digest, (from, to))| Change {
                entity: "digest",
                change,
                id: Some(digest.to_string()),
                field: (change == ChangeKind::Changed).then_some("files"),
                before: names(from),
                after: names(to),
                delta: None,
            })
    }
}

/// Whether the filter keeps a change of this kind to this digest.
fn keeps(filter: &Filter, change: ChangeKind, digest: &Digest) -> bool {
    let id = filter.id_prefix.as_ref().map(|_| digest.to_string());
    let field = (change == ChangeKind::Changed).then_some("files");
    filter.keeps_parts(field, change, id.as_deref())
}

/// What the shard-by-shard pass gathers.
struct Tally<'f> {
    filter: &'f Filter,
    moved: DigestSet,
    added: Examples,
    removed: Examples,
    changed: Examples,
}

impl Tally<'_> {
    fn note(&mut self, change: ChangeKind, digest: Digest, lost: Option<u32>, gained: Option<u32>) {
        if change == ChangeKind::Changed {
            self.moved.insert(&digest);
        }
        if keeps(self.filter, change, &digest) {
            let examples = match change {
                ChangeKind::Added => &mut self.added,
                ChangeKind::Removed => &mut self.removed,
                ChangeKind::Changed => &mut self.changed,
            };
            examples.note(digest, lost, gained);
        }
    }
}

/// Compares two ledgers at the count of `options`, else the smallest that
/// reads every shard file of either side.
pub(super) fn compare(
    a: &LedgerSide<'_>,
    b: &LedgerSide<'_>,
    filter: &Filter,
    options: LedgerDiffOptions,
) -> Result<DiffReport, InputError> {
    let indices: BTreeSet<u32> = a
        .shards()
        .iter()
        .chain(b.shards())
        .filter_map(|e| e.index)
        .collect();
    let (count, from) = match options.shard_count {
        Some(n) => (n.max(1), CountSource::Option),
        None => (
            indices.last().map_or(1, |i| i.saturating_add(1)),
            CountSource::Files,
        ),
    };
    // The two sides at once: reading one is bound by its set's memory
    // accesses, and the other core has its own.
    let (held_a, held_b) = rayon::join(|| Held::of(a, count), || Held::of(b, count));
    let (held_a, held_b) = (held_a?, held_b?);
    let mut tally = Tally {
        filter,
        moved: DigestSet::new(),
        added: Examples::new(options.max_examples),
        removed: Examples::new(options.max_examples),
        changed: Examples::new(options.max_examples),
    };
    let mut files = Vec::new();
    for index in indices {
        let (entry_a, entry_b) = (a.entry(index), b.entry(index));
        let (scan_a, scan_b) = (file_digests(entry_a)?, file_digests(entry_b)?);
        let (in_a, in_b) = (scan_a.set(), scan_b.set());
        let mut row = FileDiff {
            name: ledger::file_name(index),
            index,
            read: index < count,
            a: entry_a.map(|e| e.kind),
            b: entry_b.map(|e| e.kind),
            digests_a: in_a.len() as u64,
            digests_b: in_b.len() as u64,
            added: 0,
            removed: 0,
            moved_in: 0,
            moved_out: 0,
        };
        for d in in_b.iter().filter(|d| !in_a.contains(d)) {
            if held_a.holds(&d) {
                row.moved_in += 1;
                tally.note(ChangeKind::Changed, d, None, Some(index));
            } else {
                row.added += 1;
                tally.note(ChangeKind::Added, d, None, Some(index));
            }
        }
        for d in in_a.iter().filter(|d| !in_b.contains(d)) {
            if held_b.holds(&d) {
                row.moved_out += 1;
                tally.note(ChangeKind::Changed, d, Some(index), None);
            } else {
                row.removed += 1;
                tally.note(ChangeKind::Removed, d, Some(index), None);
            }
        }
        files.push(row);
    }
    let (totals_a, totals_b) = (held_a.totals(a), held_b.totals(b));
    let both = Both::of(&held_a, &held_b);
    let (added, removed) = (totals_b.distinct - both.held, totals_a.distinct - both.held);
    let moved = tally.moved.len() as u64;
    // As the filter keeps them: one more look at every digest, only when
    // a filter is set.
    let (added_kept, removed_kept, moved_kept) = if filter.is_set() {
        let only = |from: &Held, other: &Held, change: ChangeKind| {
            from.each()
                .filter(|d| keeps(filter, change, d) && !other.holds(d))
                .count() as u64
        };
        (
            only(&held_b, &held_a, ChangeKind::Added),
            only(&held_a, &held_b, ChangeKind::Removed),
            tally
                .moved
                .iter()
                .filter(|d| keeps(filter, ChangeKind::Changed, d))
                .count() as u64,
        )
    } else {
        (added, removed, moved)
    };
    let unchanged = both.held - moved;
    let ledger = LedgerDiff {
        shard_count: count,
        shard_count_from: from,
        added,
        removed,
        moved,
        unchanged,
        load_added: held_b.read.set().len() as u64 - both.loaded,
        load_removed: held_a.read.set().len() as u64 - both.loaded,
        max_examples: options.max_examples,
        files,
    };
    let counts: BTreeMap<String, u64> = [
        ("digest_added", added_kept),
        ("digest_removed", removed_kept),
        ("digest_changed", moved_kept),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(k, n)| (k.to_string(), n))
    .collect();
    let changes: Vec<Change> = tally
        .added
        .changes(ChangeKind::Added)
        .chain(tally.removed.changes(ChangeKind::Removed))
        .chain(tally.changed.changes(ChangeKind::Changed))
        .collect();
    let notes = notes(a, b, &totals_a, &totals_b, count);
    Ok(DiffReport {
        schema_version: schema::DIFF,
        kind: DiffKind::Ledger,
        a: a.path.display().to_string(),
        b: b.path.display().to_string(),
        identical: added + removed + moved == 0,
        changes,
        counts,
        summary: Summary::Ledger {
            a: totals_a,
            b: totals_b,
        },
        bytes: None,
        history: None,
        ledger: Some(ledger),
        table: None,
        notes,
    })
}

/// What the comparison leaves out, and what upstream does that the counts
/// do not say.
fn notes(
    a: &LedgerSide<'_>,
    b: &LedgerSide<'_>,
    totals_a: &LedgerTotals,
    totals_b: &LedgerTotals,
    shards: u32,
) -> Vec<String> {
    let mut notes = Vec::new();
    if a.state_directory || b.state_directory {
        notes.push(
            "only the digest ledgers are compared: name the journals or snapshots to compare those"
                .to_string(),
        );
    }
    for (side, totals) in [(a, totals_a), (b, totals_b)] {
        let path = side.path.display();
        let Some(dir) = &side.dir else {
            notes.push(format!(
                "{path} has no digest ledger ({}/): upstream loads no digest from it",
                ledger::DIR
            ));
            continue;
        };
        if !dir.foreign.is_empty() {
            notes.push(format!(
                "{path}: {} upstream never reads, not compared",
                plural(dir.foreign.len() as u64, "foreign name", "foreign names")
            ));
        }
        if totals.over_limit > 0 {
            notes.push(format!(
                "{path}: {} to load at {shards} shards, beyond upstream's {}: it drops {} arbitrary ones",
                plural(totals.loaded + totals.over_limit, "digest", "digests"),
                count(MAX_DEDUP_ENTRIES),
                count(totals.over_limit)
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> Digest {
        Digest([n; 32])
    }

    #[test]
    fn examples_keep_the_smallest_with_every_file_they_changed_in() {
        let mut examples = Examples::new(2);
        examples.note(digest(9), None, Some(0));
        examples.note(digest(5), None, Some(1));
        examples.note(digest(9), None, Some(2));
        // Smaller than both: 9 goes, and never comes back.
        examples.note(digest(3), Some(2), None);
        examples.note(digest(9), None, Some(3));
        examples.note(digest(5), None, Some(4));
        let kept: Vec<(Digest, Moves)> = examples.kept.into_iter().collect();
        assert_eq!(
            kept,
            [
                (digest(3), (vec![2], vec![])),
                (digest(5), (vec![], vec![1, 4]))
            ]
        );
        let mut all = Examples::new(0);
        for n in (0..50).rev() {
            all.note(digest(n), Some(1), None);
        }
        assert_eq!(all.kept.len(), 50);
    }

    #[test]
    fn the_filter_sees_the_digest_and_the_files_field() {
        let d = digest(0xab);
        assert!(keeps(&Filter::default(), ChangeKind::Added, &d));
        let prefix = Filter {
            id_prefix: Some("abab".into()),
            ..Filter::default()
        };
        assert!(keeps(&prefix, ChangeKind::Removed, &d));
        assert!(!keeps(&prefix, ChangeKind::Removed, &digest(0xac)));
        let ignore = Filter {
            ignore: BTreeSet::from(["files".to_string()]),
            ..Filter::default()
        };
        assert!(!keeps(&ignore, ChangeKind::Changed, &d));
        assert!(keeps(&ignore, ChangeKind::Added, &d));
    }
}
