//! The digest ledger as a report: every file of `.state_shards/` read as
//! upstream's `load_recent(MAX_DEDUP_ENTRIES)` reads it at one shard count,
//! what it ignores and never reads, and where asked-for digests sit.
//! Shared by the commands that read a ledger (`inspect`, `verify`,
//! `recover`), with the one place that decides the count it is read at
//! ([`NextStart::shard_count`]: `--state-shards`, then
//! `SYMCC_STATE_SHARDS`, then `--workers`, then the files) and whether the
//! next master reads it at all. The JSON of `LedgerReport` is part of
//! `inspect --format json`'s contract, that of [`LedgerView`] of
//! `verify`'s and `recover`'s.

use std::path::Path;

use serde::Serialize;

use crate::engine::journal::{Rescan, RescanWhy};
/// A digest, as the command line gives one.
pub use crate::engine::ledger::Digest;
pub use crate::engine::ledger::Reason;
use crate::engine::ledger::line::{Judged, Splitter};
use crate::engine::ledger::start::{self, EnvCount};
use crate::engine::ledger::{self, FileScan, LedgerScan, Reasons, Totals};
use crate::store::error::{InputError, in_words};
use crate::store::ledger::{Entry, EntryKind, LedgerDir};
use crate::store::open;
use crate::store::path::shell_quote;

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

/// What the next master start reads the ledger with, as the caller found
/// it: the command line and the environment the master reads (the caller
/// reads it; nothing here does).
#[derive(Clone, Debug, Default)]
pub struct NextStart {
    /// `--state-shards`.
    pub state_shards: Option<u32>,
    /// `--workers`: the MPI workers, every process of the run but the
    /// master's.
    pub workers: Option<u32>,
    /// `SYMCC_STATE_SHARDS`, as set (a value that is not UTF-8 made
    /// lossy, which `int()` refuses as Python's does).
    pub env_state_shards: Option<String>,
    /// `SYMCC_PERSISTENT_STATE`, as set.
    pub env_persistent_state: Option<String>,
}

/// The shard count a ledger is read at, and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardCount {
    /// The count, or `None` when nothing says it (then the files do).
    pub count: Option<u32>,
    /// Where it comes from.
    pub from: CountSource,
    /// Why an input that comes first did not decide it, if one is set.
    pub note: Option<String>,
}

impl NextStart {
    /// Whether the next master reads the ledger at all: not when
    /// `SYMCC_PERSISTENT_STATE` is `0`, `false`, `off` or `no`.
    pub fn ledger_used(&self) -> bool {
        !start::persistent_state_off(self.env_persistent_state.as_deref())
    }

    /// `SYMCC_PERSISTENT_STATE=…` as the command line shows it, when set.
    pub fn persistent_state_shown(&self) -> Option<String> {
        self.env_persistent_state
            .as_deref()
            .map(|v| format!("SYMCC_PERSISTENT_STATE={}", shell_quote(v)))
    }

    /// The count the next master reads the ledger at: `--state-shards`
    /// over the environment, then the master's own rule
    /// (`SYMCC_STATE_SHARDS` when `int()` takes it, else `min(64,
    /// workers)`), then, when neither is known, the files.
    pub fn shard_count(&self) -> ShardCount {
        let env = self
            .env_state_shards
            .as_deref()
            .map(|v| (v, format!("SYMCC_STATE_SHARDS={}", shell_quote(v))));
        if let Some(n) = self.state_shards {
            let beaten: Vec<String> = env
                .iter()
                .map(|(_, shown)| shown.clone())
                .chain(self.workers.map(|w| format!("--workers {w}")))
                .collect();
            return ShardCount {
                count: Some(n),
                from: CountSource::Option,
                note: (!beaten.is_empty())
                    .then(|| format!("--state-shards comes before {}", beaten.join(" and "))),
            };
        }
        let mut note = None;
        if let Some((value, shown)) = &env {
            match start::env_count(value) {
                EnvCount::Count(n) => {
                    return ShardCount {
                        count: Some(n),
                        from: CountSource::Environment,
                        note: self.workers.map(|w| {
                            format!("{shown} comes before --workers {w}, as in the master")
                        }),
                    };
                }
                EnvCount::NotAnInteger => {
                    note = Some(format!(
                        "{shown} is not an integer: the master uses min(64, workers) instead{}",
                        if self.workers.is_some() {
                            ""
                        } else {
                            ", and no worker count is given"
                        }
                    ));
                }
            }
        }
        match self.workers {
            Some(w) => ShardCount {
                count: Some(start::default_count(w)),
                from: CountSource::Workers,
                note,
            },
            None => ShardCount {
                count: None,
                from: CountSource::Files,
                note,
            },
        }
    }
}

/// What to read a ledger with.
#[derive(Clone, Debug, Default)]
pub struct LedgerOptions {
    /// What decides the shard count the next master start uses.
    pub next: NextStart,
    /// Digests to look for, with every line holding them.
    pub queries: Vec<Query>,
    /// Digests to answer only loaded or not, for many at little cost (the
    /// digests of the leases `verify` and `recover` look at).
    pub probes: Vec<Digest>,
}

/// What the ledger says of a probed digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The digest.
    pub digest: Digest,
    /// In a file the count reads: upstream loads it.
    pub loaded: bool,
    /// In any shard file.
    pub anywhere: bool,
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
    /// `SYMCC_STATE_SHARDS`, as the master reads it.
    Environment,
    /// `min(64, --workers)`, the master's default.
    Workers,
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
    /// Why an input that comes before that source did not decide the
    /// count (an environment value `int()` refuses, one `--state-shards`
    /// overrides), or `null`.
    pub shard_count_note: Option<String>,
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
    /// Valid lines in a file the count reads, which their shard at the
    /// count does not name (loaded all the same).
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
    /// The probed digests, in the order given.
    #[serde(skip)]
    pub probes: Vec<Probe>,
}

impl LedgerReport {
    /// The shard files the count never reads that hold digests no file it
    /// reads holds, ascending.
    pub fn unread_files(&self) -> Vec<&str> {
        self.files
            .iter()
            .filter(|f| !f.read && f.scan.as_ref().is_some_and(|s| s.new > 0))
            .map(|f| f.name.as_str())
            .collect()
    }
}

/// The highest count `fitting_counts` lists.
const FIT_LIMIT: u32 = 4096;

/// Reads a ledger directory at the count of `options`, else the smallest
/// that reads every shard file present. A shard file that cannot be
/// opened or read is the error, naming it.
pub fn read(dir: &LedgerDir, options: &LedgerOptions) -> Result<LedgerReport, InputError> {
    let given = options.next.shard_count();
    let count = given
        .count
        .unwrap_or_else(|| dir.max_index().map_or(1, |i| i.saturating_add(1)))
        .max(1);
    let queries: Vec<Digest> = options.queries.iter().map(|q| q.digest).collect();
    let mut scan = LedgerScan::new(count, queries);
    scan.reserve((dir.shard_bytes() / 65).min(RESERVE_AT_MOST) as usize);
    // The files the count reads come first: what the set holds once they
    // are read is what upstream loads.
    let mut loaded: Option<Vec<bool>> = None;
    let mut files = Vec::new();
    for entry in &dir.shards {
        let index = entry.index.unwrap_or(u32::MAX);
        let read_here = index < count;
        if !read_here && loaded.is_none() {
            loaded = Some(contained(&scan, &options.probes));
        }
        let file_scan = match entry.kind {
            EntryKind::File => Some(read_file(&mut scan, index, entry)?),
            EntryKind::Dir | EntryKind::Other => None,
        };
        files.push(listed(entry, read_here, file_scan));
    }
    files.extend(dir.foreign.iter().map(|e| listed(e, false, None)));
    let anywhere = contained(&scan, &options.probes);
    let loaded = loaded.unwrap_or_else(|| anywhere.clone());
    let probes = options
        .probes
        .iter()
        .zip(loaded.into_iter().zip(anywhere))
        .map(|(digest, (loaded, anywhere))| Probe {
            digest: *digest,
            loaded,
            anywhere,
        })
        .collect();
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
        shard_count_from: given.from,
        shard_count_note: given.note,
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
        probes,
    })
}

/// Whether the set read so far holds each probe.
fn contained(scan: &LedgerScan, probes: &[Digest]) -> Vec<bool> {
    probes.iter().map(|d| scan.set().contains(d)).collect()
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

/// A state directory's ledger as the next master start uses it: what
/// `verify` and `recover` report of it.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerView {
    /// The ledger's directory.
    pub path: String,
    /// Whether the next master reads it: not when `SYMCC_PERSISTENT_STATE`
    /// is `0`, `false`, `off` or `no`.
    pub used: bool,
    /// What it holds at the next start's shard count; `null` when it is
    /// not used (then it is not read at all).
    pub read: Option<LedgerSummary>,
}

/// The ledger at the next start's shard count, in numbers.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerSummary {
    /// The count.
    pub shard_count: u32,
    /// Where it comes from.
    pub shard_count_from: CountSource,
    /// Why an input that comes first did not decide it, or `null`.
    pub shard_count_note: Option<String>,
    /// Distinct digests upstream's reader loads at that count.
    pub digests: u64,
    /// Distinct valid digests only in files that count never reads: their
    /// inputs the AFL rescan dispatches again.
    pub unread: u64,
    /// Distinct valid digests in every shard file.
    pub distinct: u64,
    /// Distinct digests beyond `MAX_DEDUP_ENTRIES` upstream drops.
    pub over_limit: u64,
    /// The counts that read every file with each digest in its own
    /// shard's file (as in `inspect`).
    pub fitting_counts: Option<Vec<u32>>,
    /// The shard files the count never reads that hold digests no file it
    /// reads holds, ascending.
    pub unread_files: Vec<String>,
}

/// The ledger of a state directory as the next master start uses it,
/// read (when it is used) with the digests of `probes` answered.
#[derive(Clone, Debug)]
pub struct NextLedger {
    /// What the reports show.
    pub view: LedgerView,
    /// The whole reading, when the ledger is used.
    pub report: Option<LedgerReport>,
}

/// Reads a state directory's ledger as the next master start would: not
/// at all when it is off, else at the count `next` decides. A shard file
/// that cannot be read is the error, naming it.
pub fn next_ledger(
    dir: &LedgerDir,
    next: &NextStart,
    probes: Vec<Digest>,
) -> Result<NextLedger, InputError> {
    let path = dir.path.display().to_string();
    if !next.ledger_used() {
        return Ok(NextLedger {
            view: LedgerView {
                path,
                used: false,
                read: None,
            },
            report: None,
        });
    }
    let options = LedgerOptions {
        next: next.clone(),
        queries: Vec::new(),
        probes,
    };
    let report = read(dir, &options)?;
    let summary = LedgerSummary {
        shard_count: report.shard_count,
        shard_count_from: report.shard_count_from,
        shard_count_note: report.shard_count_note.clone(),
        digests: report.digests,
        unread: report.unread,
        distinct: report.distinct,
        over_limit: report.over_limit,
        fitting_counts: report.fitting_counts.clone(),
        unread_files: report
            .unread_files()
            .into_iter()
            .map(str::to_string)
            .collect(),
    };
    Ok(NextLedger {
        view: LedgerView {
            path,
            used: true,
            read: Some(summary),
        },
        report: Some(report),
    })
}

impl NextLedger {
    /// Whether the next start's AFL rescan dispatches the input of this
    /// digest again (`None`: the item has no digest); `digest` must have
    /// been probed.
    pub fn rescan(&self, digest: Option<Digest>) -> Rescan {
        let Some(report) = &self.report else {
            return Rescan::because(RescanWhy::LedgerOff);
        };
        let probe = digest.and_then(|d| report.probes.iter().find(|p| p.digest == d));
        Rescan::because(match probe {
            None => RescanWhy::NoDigest,
            Some(p) if p.loaded && report.over_limit > 0 => RescanWhy::MayBeDropped,
            Some(p) if p.loaded => RescanWhy::Loaded,
            Some(p) if p.anywhere => RescanWhy::Unread,
            Some(_) => RescanWhy::NotInLedger,
        })
    }
}

/// One line of a ledger file upstream ignores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IgnoredLine {
    /// 1-based line.
    pub line: u64,
    /// Byte offset.
    pub offset: u64,
    /// Why.
    pub reason: Reason,
}

/// Calls `each` for every line of the shard file `name` of a report that
/// upstream ignores, in order: a second read, for the files whose scan
/// counted some (the first read keeps counts only).
pub fn ignored_lines(
    report: &LedgerReport,
    name: &str,
    mut each: impl FnMut(IgnoredLine),
) -> Result<(), InputError> {
    let path = Path::new(&report.path).join(name);
    let (mut file, _) = open::open_regular(&path)?;
    let mut splitter = Splitter::new();
    let mut on_line = |line: ledger::line::Line| {
        if let Judged::Ignored(reason) = line.judged {
            each(IgnoredLine {
                line: line.number,
                offset: line.offset,
                reason,
            });
        }
    };
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        match std::io::Read::read(&mut file, &mut buffer) {
            Ok(0) => break,
            Ok(n) => splitter.feed(&buffer[..n], &mut on_line),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(InputError::new(
                    &path,
                    format!("read error: {}", in_words(&e)),
                ));
            }
        }
    }
    splitter.finish(&mut on_line);
    Ok(())
}
