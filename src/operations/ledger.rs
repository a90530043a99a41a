//! The digest ledger as a report: every file of `.state_shards/` read as
//! upstream's `load_recent(MAX_DEDUP_ENTRIES)` reads it at one shard count,
//! what it ignores and never reads, and where asked-for digests sit.
//! Shared by the commands that show a ledger (`inspect` now); the JSON of
//! `LedgerReport` is part of `inspect --format json`'s contract.

use std::path::Path;

use serde::Serialize;

/// A digest, as the command line gives one.
pub use crate::engine::ledger::Digest;
use crate::engine::ledger::{self, FileScan, LedgerScan, Reasons, Totals};
use crate::store::error::{InputError, in_words};
use crate::store::ledger::{Entry, EntryKind, LedgerDir};
use crate::store::open;

/// How far the distinct digests are reserved for ahead, from the files'
/// sizes (a valid line is 65 bytes): enough for upstream's limit.
pub const RESERVE_AT_MOST: u64 = 8_000_000;

/// A digest asked about.
#[derive(Clone, Debug)]
pub struct Query {
    /// The digest.
    pub digest: Digest,
    /// The file it is the content's SHA-256 of (`--digest-of`).
    pub source: Option<String>,
}

/// What to read a ledger with.
#[derive(Clone, Debug, Default)]
pub struct LedgerOptions {
    /// The shard count the next master start uses (`--state-shards`).
    pub shard_count: Option<u32>,
    /// Digests to look for.
    pub queries: Vec<Query>,
}

/// One name in the ledger's directory, read.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerFile {
    /// The file name.
    pub name: String,
    /// Its shard index (upstream's name), or `null` for a foreign name.
    pub index: Option<u32>,
    /// `file`, `dir` (upstream's `open` fails, the shard is skipped) or
    /// `other`.
    pub kind: EntryKind,
    /// Whether upstream reads it at the count.
    pub read: bool,
    /// Its size.
    pub bytes: Option<u64>,
    /// What it holds (shard files only).
    pub scan: Option<FileScan>,
}

/// Where a digest asked about sits.
#[derive(Clone, Debug, Serialize)]
pub struct SiteReport {
    /// The file name.
    pub file: String,
    /// Its shard index.
    pub index: u32,
    /// 1-based line.
    pub line: u64,
    /// Byte offset of the line.
    pub offset: u64,
    /// Whether upstream reads that file at the count.
    pub read: bool,
}

/// The answer for one digest.
#[derive(Clone, Debug, Serialize)]
pub struct QueryReport {
    /// The digest.
    pub digest: Digest,
    /// The file it is the SHA-256 of, for `--digest-of`.
    pub source: Option<String>,
    /// Whether upstream loads it at the count, so that the AFL rescan
    /// skips the input.
    pub loaded: bool,
    /// Loaded, but beyond `MAX_DEDUP_ENTRIES` upstream may have dropped it.
    pub may_be_dropped: bool,
    /// Every valid line holding it, in file order.
    pub sites: Vec<SiteReport>,
}

/// Where the shard count checked against came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CountSource {
    /// `--state-shards`.
    Option,
    /// The smallest count that reads every shard file present.
    Files,
}

/// The ledger, read at a shard count.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerReport {
    /// The ledger's directory.
    pub path: String,
    /// The count it was read at.
    pub shard_count: u32,
    /// Where that count came from.
    pub shard_count_from: CountSource,
    /// Distinct digests upstream's reader loads at that count.
    pub digests: u64,
    /// Distinct valid digests only in files that count never reads.
    pub unread: u64,
    /// Distinct valid digests in every shard file.
    pub distinct: u64,
    /// Lines in the shard files.
    pub lines: u64,
    /// Valid lines.
    pub valid: u64,
    /// Valid lines repeating an earlier digest.
    pub duplicates: u64,
    /// Valid lines in a file their shard at the count does not name
    /// (loaded all the same).
    pub misplaced: u64,
    /// Distinct digests read beyond `MAX_DEDUP_ENTRIES` (5,000,000), which
    /// upstream drops, arbitrary ones.
    pub over_limit: u64,
    /// Lines upstream ignores, by reason.
    pub ignored: Reasons,
    /// The shard indices present, ascending.
    pub indices: Vec<u32>,
    /// The counts (up to 4096) that read every shard file and under which
    /// every digest sits in its own shard's file; `null` when no digest
    /// constrains them.
    pub fitting_counts: Option<Vec<u32>>,
    /// Every name in the directory: shard files ascending, then foreign
    /// names.
    pub files: Vec<LedgerFile>,
    /// The digests asked about.
    pub queries: Vec<QueryReport>,
}

/// The highest count `fitting_counts` lists.
const FIT_LIMIT: u32 = 4096;

/// Reads a ledger directory at the count of `options`, else the smallest
/// that reads every shard file present. A shard file that cannot be
/// opened or read is the error, naming it.
pub fn read(dir: &LedgerDir, options: &LedgerOptions) -> Result<LedgerReport, InputError> {
    let (count, from) = match options.shard_count {
        Some(n) => (n.max(1), CountSource::Option),
        None => (
            dir.max_index().map_or(1, |i| i.saturating_add(1)),
            CountSource::Files,
        ),
    };
    let queries: Vec<Digest> = options.queries.iter().map(|q| q.digest).collect();
    let mut scan = LedgerScan::new(count, queries);
    scan.reserve((dir.shard_bytes() / 65).min(RESERVE_AT_MOST) as usize);
    let mut files = Vec::new();
    for entry in &dir.shards {
        let index = entry.index.unwrap_or(u32::MAX);
        let read_here = index < count;
        let file_scan = match entry.kind {
            EntryKind::File => Some(read_file(&mut scan, index, entry)?),
            EntryKind::Dir | EntryKind::Other => None,
        };
        files.push(listed(entry, read_here, file_scan));
    }
    files.extend(dir.foreign.iter().map(|e| listed(e, false, None)));
    let totals: Totals = scan.totals();
    let name_of = |index: u32| ledger::file_name(index);
    let answers = options
        .queries
        .iter()
        .map(|q| {
            let sites: Vec<SiteReport> = scan
                .sites()
                .iter()
                .filter(|s| s.digest == q.digest)
                .map(|s| SiteReport {
                    file: name_of(s.index),
                    index: s.index,
                    line: s.line,
                    offset: s.offset,
                    read: s.index < count,
                })
                .collect();
            let loaded = sites.iter().any(|s| s.read);
            QueryReport {
                digest: q.digest,
                source: q.source.clone(),
                loaded,
                may_be_dropped: loaded && totals.over_limit > 0,
                sites,
            }
        })
        .collect();
    Ok(LedgerReport {
        path: dir.path.display().to_string(),
        shard_count: count,
        shard_count_from: from,
        digests: totals.digests,
        unread: totals.unread,
        distinct: totals.distinct,
        lines: totals.lines,
        valid: totals.valid,
        duplicates: totals.duplicates,
        misplaced: totals.misplaced,
        over_limit: totals.over_limit,
        ignored: totals.ignored,
        indices: dir.shards.iter().filter_map(|e| e.index).collect(),
        fitting_counts: scan.fit().counts(FIT_LIMIT),
        files,
        queries: answers,
    })
}

fn listed(entry: &Entry, read: bool, scan: Option<FileScan>) -> LedgerFile {
    LedgerFile {
        name: entry.name.clone(),
        index: entry.index,
        kind: entry.kind,
        read,
        bytes: scan.as_ref().map(|s| s.bytes).or(entry.bytes),
        scan,
    }
}

/// Reads one shard file of a ledger's directory into `scan`, as the file
/// of shard `index`; a file that cannot be opened or read is the error,
/// naming it (never a FIFO: it is opened without blocking, and refused).
pub fn read_file(scan: &mut LedgerScan, index: u32, entry: &Entry) -> Result<FileScan, InputError> {
    let path: &Path = &entry.path;
    let (file, _) = open::open_regular(path)?;
    scan.file(index, file)
        .map_err(|e| InputError::new(path, format!("read error: {}", in_words(&e))))
}

/// The digests asked about: those given, then the SHA-256 of each file's
/// content (`--digest-of`), which is what the master records for an input.
pub fn queries(digests: &[Digest], files: &[std::path::PathBuf]) -> Result<Vec<Query>, InputError> {
    let mut queries: Vec<Query> = digests
        .iter()
        .map(|d| Query {
            digest: *d,
            source: None,
        })
        .collect();
    for file in files {
        queries.push(Query {
            digest: crate::store::ledger::digest_of(file)?,
            source: Some(file.display().to_string()),
        });
    }
    Ok(queries)
}
