//! The JSON reports as typed structs: one per document `--format json`
//! prints, each member spelt out and every struct `deny_unknown_fields`, so
//! a member added, removed or renamed fails the tests that read it. They
//! mirror the `Serialize` types of src/ member for member, written out flat
//! where src/ uses `#[serde(flatten)]` (which `deny_unknown_fields` does not
//! support).
//!
//! Members that may be `null` are `Option`s read with [`present`], so that
//! a missing member is an error rather than `None`. `serde_json::Value` is
//! used only where the value's type varies by design: the restored snapshot
//! as upstream's `to_mapping()` yields it, and diff's before/after/delta.
//! Python integers (worker, attempts, counters of a snapshot) are
//! [`PyInt`]: any JSON number, since upstream's integers have no bound.

#![allow(
    dead_code,
    reason = "every member is spelt out so that parsing checks it; each test reads the few it is about"
)]

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

/// A Python integer as a report writes it: a JSON number of any size.
pub type PyInt = serde_json::Number;

/// A work or task id: 64 lowercase hex digits.
pub type Id = String;

/// Reads an `Option` member that must be present (possibly `null`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// Parses a report, naming the type and the document when it does not fit.
pub fn parse<T: serde::de::DeserializeOwned>(json: &[u8]) -> T {
    serde_json::from_slice(json).unwrap_or_else(|e| {
        panic!(
            "not a {}: {e}\n{}",
            std::any::type_name::<T>(),
            String::from_utf8_lossy(json)
        )
    })
}

// ---- shared -------------------------------------------------------------

/// A lease's clock domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    Unix,
    Legacy,
}

/// The `clock` member of a record as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockMarker {
    Absent,
    Unix,
    Legacy,
    Other,
}

/// `journal` or `snapshot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Journal,
    Snapshot,
}

/// How a journal ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TailState {
    Empty,
    Clean,
    Torn,
    Unterminated,
}

/// The end of a journal.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tail {
    pub state: TailState,
    pub bytes: u64,
    pub offset: u64,
    pub zero_bytes: u64,
}

/// A replay state as counts and a digest.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateView {
    pub active: u64,
    pub completed: u64,
    pub digest: String,
}

/// A lease to reclaim, as the writing commands' plans list it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reclaim {
    pub id: Id,
    pub worker: PyInt,
    pub clock: Clock,
    pub time: f64,
    #[serde(deserialize_with = "present")]
    pub age_seconds: Option<f64>,
    pub attempts: PyInt,
    pub line: u64,
    pub offset: u64,
    #[serde(deserialize_with = "present")]
    pub path: Option<String>,
    pub continuation: bool,
}

// ---- inspect --------------------------------------------------------------

/// `inspect --format json`: its `kind` says which report (`inspections`
/// for several paths).
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Inspect {
    Journal(Box<InspectJournal>),
    Snapshot(Box<InspectSnapshot>),
    Directory(Box<InspectDirectory>),
    Ledger(Box<LedgerInspection>),
    Table(Box<TableInspection>),
    Inspections(Box<InspectMany>),
}

/// `inspect --workers --format json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workers {
    pub schema_version: u32,
    pub kind: String,
    pub now: f64,
    pub files: Vec<JournalWorkers>,
}

/// The workers of one journal.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalWorkers {
    pub path: String,
    #[serde(deserialize_with = "present")]
    pub lease_seconds_median: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub last_activity: Option<f64>,
    pub workers: Vec<Worker>,
}

/// One worker rank.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Worker {
    pub worker: PyInt,
    pub leases: u64,
    pub took_over: u64,
    pub completed: u64,
    pub reclaimed: u64,
    pub reclaimed_by: ReclaimedBy,
    pub active: u64,
    #[serde(deserialize_with = "present")]
    pub oldest_active_age_seconds: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub lease_seconds_median: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub lease_seconds_p95: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub last_activity: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub last_line: Option<u64>,
    pub stalled: bool,
}

/// Who reclaimed a rank's leases, as inferred.
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ReclaimedBy {
    pub resume: u64,
    pub ttl_expiry: u64,
    pub abandon: u64,
}

/// `inspect --timeline --format json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timeline {
    pub schema_version: u32,
    pub kind: String,
    pub files: Vec<JournalTimeline>,
}

/// The timeline of one journal.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalTimeline {
    pub path: String,
    #[serde(deserialize_with = "present")]
    pub start: Option<f64>,
    pub bucket_seconds: f64,
    pub completions: Vec<u64>,
    pub reclaims: Vec<u64>,
    pub workers: Vec<RankLine>,
    #[serde(deserialize_with = "present")]
    pub legacy_end: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub last_record: Option<f64>,
}

/// One rank's completions per bucket.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankLine {
    pub worker: PyInt,
    pub completions: Vec<u64>,
}

/// `inspect --format json` of several paths.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InspectMany {
    pub schema_version: u32,
    pub inspections: Vec<Inspect>,
    pub errors: Vec<PathError>,
}

/// A path `inspect` or `recover` could not read.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PathError {
    pub path: String,
    pub message: String,
}

impl Inspect {
    /// The journal report; panics on another kind.
    pub fn journal(self) -> InspectJournal {
        match self {
            Inspect::Journal(j) => *j,
            other => panic!("not a journal report: {other:?}"),
        }
    }

    /// The snapshot report; panics on another kind.
    pub fn snapshot(self) -> InspectSnapshot {
        match self {
            Inspect::Snapshot(s) => *s,
            other => panic!("not a snapshot report: {other:?}"),
        }
    }

    /// The report of several paths; panics on another kind.
    pub fn many(self) -> InspectMany {
        match self {
            Inspect::Inspections(m) => *m,
            other => panic!("not a report of several paths: {other:?}"),
        }
    }

    /// The directory report; panics on another kind.
    pub fn directory(self) -> InspectDirectory {
        match self {
            Inspect::Directory(d) => *d,
            other => panic!("not a directory report: {other:?}"),
        }
    }
}

/// One file of a directory report.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum InspectFile {
    Journal(Box<InspectJournal>),
    Snapshot(Box<InspectSnapshot>),
}

/// Counted records by op.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpCounts {
    pub lease: u64,
    pub done: u64,
    pub reclaim: u64,
    pub other: u64,
}

/// Clock markers on counted records.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockCounts {
    pub unix: u64,
    pub legacy: u64,
    pub unmarked: u64,
    pub other: u64,
}

/// First and last unix-clock record times.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeRange {
    pub first: f64,
    pub last: f64,
}

/// `--worker` and `--id` as applied.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    #[serde(deserialize_with = "present")]
    pub worker: Option<u64>,
    #[serde(deserialize_with = "present")]
    pub id: Option<String>,
}

/// One active lease.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActiveLease {
    pub id: Id,
    pub worker: PyInt,
    pub time: f64,
    pub attempts: PyInt,
    pub clock: Clock,
    pub line: u64,
    pub offset: u64,
    #[serde(deserialize_with = "present")]
    pub age_seconds: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub path: Option<String>,
}

/// One record of `--history`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryEntry {
    pub id: Id,
    pub line: u64,
    pub offset: u64,
    pub op: String,
    #[serde(deserialize_with = "present")]
    pub time: Option<f64>,
    pub clock: ClockMarker,
    #[serde(deserialize_with = "present")]
    pub worker: Option<PyInt>,
    pub effect: String,
}

/// `inspect` of a journal (the `kind` member is the enum's tag).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InspectJournal {
    pub schema_version: u32,
    pub path: String,
    pub bytes: u64,
    pub lines: u64,
    pub records: OpCounts,
    pub clocks: ClockCounts,
    pub leases_accepted: u64,
    /// Lines that changed nothing, by reason.
    pub ignored: BTreeMap<String, u64>,
    pub invalid_utf8_lines: u64,
    pub invalid_utf8_bytes: u64,
    pub lenient_leases: u64,
    pub records_with_unknown_fields: u64,
    pub non_canonical_records: u64,
    pub tail: Tail,
    pub events: u64,
    #[serde(deserialize_with = "present")]
    pub time_range: Option<TimeRange>,
    pub active_count: u64,
    pub completed_count: u64,
    #[serde(deserialize_with = "present")]
    pub filter: Option<Filter>,
    pub active: Vec<ActiveLease>,
    pub completed: Vec<Id>,
    #[serde(deserialize_with = "present")]
    pub history: Option<Vec<HistoryEntry>>,
}

impl InspectJournal {
    /// The ids of the active leases, in the report's order.
    pub fn active_ids(&self) -> Vec<&str> {
        self.active.iter().map(|a| a.id.as_str()).collect()
    }
}

/// How a snapshot parsed.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotParse {
    pub ok: bool,
    #[serde(deserialize_with = "present")]
    pub error: Option<String>,
    pub is_object: bool,
    pub duplicate_members: u64,
    pub nonfinite_constants: u64,
    pub invalid_utf8_bytes: u64,
}

/// Sums over a snapshot's stats entries.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotTotals {
    pub completions: PyInt,
    pub failures: PyInt,
    pub total_generated: PyInt,
    pub leases: PyInt,
    pub elapsed: f64,
}

/// A restored state lease.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskLease {
    pub task_id: Id,
    pub worker: PyInt,
}

/// `stats` or `leases`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum List {
    Stats,
    Leases,
}

/// An entry restore drops (or that overwrote an earlier one).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dropped {
    pub list: List,
    pub index: u64,
    #[serde(deserialize_with = "present")]
    pub task_id: Option<Id>,
    pub reason: String,
}

/// A time restore sets to 0.0.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Zeroed {
    pub task_id: Id,
    pub field: String,
    /// The value in the file, as written (JSON text).
    pub before: String,
}

/// A value restore converts or clamps.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Coerced {
    pub list: List,
    pub task_id: Id,
    pub field: String,
    pub before: String,
    pub after: String,
}

/// Everything restore does besides copying.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreChanges {
    pub stats_in_file: u64,
    pub leases_in_file: u64,
    pub stats_truncated: u64,
    pub leases_truncated: u64,
    pub ignored_members: Vec<String>,
    pub dropped: Vec<Dropped>,
    pub overwritten: Vec<Dropped>,
    pub zeroed: Vec<Zeroed>,
    pub coerced: Vec<Coerced>,
    pub leases_without_stats: Vec<Id>,
}

/// `inspect` of a snapshot (the `kind` member is the enum's tag).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InspectSnapshot {
    pub schema_version: u32,
    pub path: String,
    pub bytes: u64,
    pub parse: SnapshotParse,
    pub clock: Clock,
    pub tasks: u64,
    #[serde(deserialize_with = "present")]
    pub totals: Option<SnapshotTotals>,
    pub leases: Vec<TaskLease>,
    pub changes: RestoreChanges,
    /// Upstream's `to_mapping()` after restore, as it yields it: its
    /// shape is upstream's, not this tool's.
    #[serde(deserialize_with = "present")]
    pub restored: Option<serde_json::Value>,
}

/// A leftover temporary file.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TempFile {
    pub name: String,
    pub bytes: u64,
    #[serde(deserialize_with = "present")]
    pub belongs_to: Option<String>,
    pub ours: bool,
}

/// The master lock, from /proc/locks.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MasterLock {
    pub present: bool,
    #[serde(deserialize_with = "present")]
    pub held: Option<bool>,
    pub holders: Vec<i64>,
    pub processes: Vec<LockHolder>,
}

/// A process that holds the master's lock.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockHolder {
    pub pid: i64,
    pub command: Option<String>,
    pub leasejournal: bool,
    pub inherited_from: Option<i64>,
    pub inherited_from_running: bool,
}

/// `inspect` of a state directory (the `kind` member is the enum's tag).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InspectDirectory {
    pub schema_version: u32,
    pub path: String,
    pub files: Vec<InspectFile>,
    pub missing: Vec<String>,
    pub stale_temp_files: Vec<TempFile>,
    pub master_lock: MasterLock,
    pub ledger: Option<Ledger>,
    pub tables: Vec<InspectTable>,
}

/// `inspect` of `.state_shards/` or one `processed.NNN.log` (the `kind`
/// member, `ledger`, is the enum's tag where it is parsed as `Inspect`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerInspection {
    pub schema_version: u32,
    #[serde(default)]
    pub kind: Option<String>,
    pub path: String,
    pub ledger: Ledger,
}

/// The digest ledger read at a shard count.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    pub path: String,
    pub shard_count: u32,
    pub shard_count_from: CountSource,
    #[serde(deserialize_with = "present")]
    pub shard_count_note: Option<String>,
    pub digests: u64,
    pub unread: u64,
    pub distinct: u64,
    pub lines: u64,
    pub valid: u64,
    pub duplicates: u64,
    pub misplaced: u64,
    pub over_limit: u64,
    pub ignored: LedgerReasons,
    pub indices: Vec<u32>,
    pub fitting_counts: Option<Vec<u32>>,
    pub files: Vec<LedgerFile>,
    pub queries: Vec<LedgerQuery>,
}

/// Where the shard count a ledger is read at comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountSource {
    /// `--state-shards`.
    Option,
    /// `SYMCC_STATE_SHARDS`.
    Environment,
    /// `min(64, --workers)`.
    Workers,
    /// The smallest count that reads every shard file.
    Files,
}

/// A state directory's ledger as the next master start reads it
/// (`verify`'s targets, `recover`'s forecast).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerView {
    pub path: String,
    pub used: bool,
    /// `null` exactly when it is not used.
    #[serde(deserialize_with = "present")]
    pub read: Option<LedgerSummary>,
}

/// The ledger at the next start's count, in numbers.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerSummary {
    pub shard_count: u32,
    pub shard_count_from: CountSource,
    #[serde(deserialize_with = "present")]
    pub shard_count_note: Option<String>,
    pub digests: u64,
    pub unread: u64,
    pub distinct: u64,
    pub over_limit: u64,
    #[serde(deserialize_with = "present")]
    pub fitting_counts: Option<Vec<u32>>,
    pub unread_files: Vec<String>,
}

/// Whether the AFL rescan of the next start dispatches an item's input
/// again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rescan {
    #[serde(deserialize_with = "present")]
    pub sees_again: Option<bool>,
    pub why: RescanWhy,
}

/// Why the rescan sees an input again or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RescanWhy {
    Loaded,
    MayBeDropped,
    Unread,
    NotInLedger,
    LedgerOff,
    Continuation,
    NoDigest,
}

/// Ignored ledger lines by reason.
#[derive(Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerReasons {
    pub blank: u64,
    pub uppercase: u64,
    pub wrong_length: u64,
    pub non_hex: u64,
    pub nul: u64,
    pub other: u64,
}

impl LedgerReasons {
    /// Every ignored line.
    pub fn total(&self) -> u64 {
        self.blank + self.uppercase + self.wrong_length + self.non_hex + self.nul + self.other
    }
}

/// One name in `.state_shards/`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerFile {
    pub name: String,
    pub index: Option<u32>,
    /// `file`, `dir` or `other`.
    pub kind: String,
    pub read: bool,
    pub bytes: Option<u64>,
    pub scan: Option<LedgerFileScan>,
}

/// What one shard file holds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerFileScan {
    pub index: u32,
    pub read: bool,
    pub bytes: u64,
    pub lines: u64,
    pub valid: u64,
    pub new: u64,
    pub duplicates: u64,
    pub misplaced: u64,
    pub ignored: LedgerReasons,
    pub tail: LedgerTail,
}

/// How a shard file ends.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerTail {
    /// `clean`, `missing_newline`, `torn` or `nul`.
    pub kind: String,
    pub offset: u64,
    pub bytes: u64,
}

/// The answer for one `--digest` / `--digest-of`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerQuery {
    pub digest: String,
    pub source: Option<String>,
    pub loaded: bool,
    pub may_be_dropped: bool,
    pub sites: Vec<LedgerSite>,
}

/// A line holding a digest asked about.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerSite {
    pub file: String,
    pub index: u32,
    pub line: u64,
    pub offset: u64,
    pub read: bool,
}

// ---- verify and explain ---------------------------------------------------

/// A finding's severity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// verify's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Go,
    NoGo,
    Incomplete,
    Busy,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    pub code: String,
    pub severity: Severity,
    pub file: String,
    #[serde(deserialize_with = "present")]
    pub line: Option<u64>,
    #[serde(deserialize_with = "present")]
    pub offset: Option<u64>,
    #[serde(deserialize_with = "present")]
    pub id: Option<String>,
    pub message: String,
    #[serde(deserialize_with = "present")]
    pub fix: Option<String>,
    #[serde(deserialize_with = "present")]
    pub must_do: Option<String>,
}

/// One file's findings per code.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileCounts {
    pub file: String,
    pub counts: BTreeMap<String, u64>,
}

/// One checked path.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub path: String,
    pub kind: String,
    pub verdict: Verdict,
    pub counts: BTreeMap<String, u64>,
    pub master_pids: Vec<i64>,
    pub master_holders: Vec<LockHolder>,
    #[serde(deserialize_with = "present")]
    pub master_lock: Option<String>,
    #[serde(deserialize_with = "present")]
    pub remote_master: Option<RemoteMaster>,
    /// A state directory's digest ledger; `null` for a file or a directory
    /// without one.
    #[serde(deserialize_with = "present")]
    pub ledger: Option<LedgerView>,
    /// The fenced lease tables checked.
    pub tables: Vec<TableView>,
}

/// What verify knows of a master on another host.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteMaster {
    #[serde(deserialize_with = "present")]
    pub mount: Option<SharedMount>,
    pub pid_namespace: bool,
    pub mode: String,
    #[serde(deserialize_with = "present")]
    pub probe: Option<Probe>,
    #[serde(deserialize_with = "present")]
    pub ruled_out_by: Option<String>,
}

/// A mount other hosts share.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedMount {
    pub file_system: String,
    pub mount_point: String,
    pub flock: String,
    pub flock_because: String,
}

/// What the lock probe found.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(
    deny_unknown_fields,
    rename_all = "kebab-case",
    tag = "result",
    content = "error"
)]
pub enum Probe {
    Free,
    Held,
    Failed(String),
}

/// A code no command fixes that keeps the verdict from go.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MustDo {
    pub code: String,
    pub count: u64,
    pub must_do: String,
    pub verdict_until_done: Verdict,
}

/// A path that could not be checked.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckError {
    pub path: String,
    pub file: String,
    pub message: String,
}

/// The settings verify echoes.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub now: f64,
    pub ttl: f64,
    pub skew: f64,
    pub strict: bool,
    pub max_examples: u64,
    pub ignored_codes: Vec<String>,
    pub min_severity: Severity,
    pub remote_master: String,
}

/// `verify --format json`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verify {
    pub schema_version: u32,
    pub verdict: Verdict,
    pub exit_code: i32,
    pub findings: Vec<Finding>,
    pub not_listed: BTreeMap<Severity, u64>,
    pub next: Vec<String>,
    pub must_do: Vec<MustDo>,
    pub counts: BTreeMap<String, u64>,
    pub severities: BTreeMap<Severity, u64>,
    pub files: Vec<FileCounts>,
    pub checked: Vec<String>,
    pub not_checkable: Vec<String>,
    pub targets: Vec<Target>,
    pub errors: Vec<CheckError>,
    pub settings: Settings,
}

impl Verify {
    /// The exact count of a code (0 when it did not fire).
    pub fn count(&self, code: &str) -> u64 {
        self.counts.get(code).copied().unwrap_or(0)
    }

    /// The findings of a code, as listed.
    pub fn findings_of<'a>(&'a self, code: &'a str) -> impl Iterator<Item = &'a Finding> + 'a {
        self.findings.iter().filter(move |f| f.code == code)
    }
}

/// The command that fixes a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Remedy {
    Repair,
    MigrateSnapshot,
    ReshardLedger,
    RepairTable,
}

/// One catalog entry.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeInfo {
    pub code: String,
    pub severity: Severity,
    pub scope: String,
    pub meaning: String,
    pub why: String,
    pub upstream: String,
    pub fix: String,
    #[serde(deserialize_with = "present")]
    pub remedy: Option<Remedy>,
}

/// `explain CODE --format json`: the entry with its schema_version.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Explain {
    pub schema_version: u32,
    pub code: String,
    pub severity: Severity,
    pub scope: String,
    pub meaning: String,
    pub why: String,
    pub upstream: String,
    pub fix: String,
    #[serde(deserialize_with = "present")]
    pub remedy: Option<Remedy>,
}

/// `explain --list --format json`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    pub schema_version: u32,
    pub codes: Vec<CodeInfo>,
}

// ---- the writing commands -----------------------------------------------

/// How a writing command ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    DryRun,
    Check,
    Apply,
    Output,
}

/// Bytes another process appended during a change, carried into it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Carried {
    pub bytes: u64,
    pub lines: u64,
}

/// The symbolic link PATH named, resolved to the outcome's path.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub path: String,
    #[serde(deserialize_with = "present")]
    pub refused: Option<String>,
}

/// A stale temporary file that could not be removed (or the directory
/// that could not be listed), and why.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Leftover {
    pub path: String,
    pub error: String,
}

/// What a writing command did to one file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome<P> {
    pub path: String,
    pub kind: Kind,
    pub plan: P,
    pub written: bool,
    #[serde(deserialize_with = "present")]
    pub backup: Option<String>,
    #[serde(deserialize_with = "present")]
    pub output: Option<String>,
    pub removed_temp_files: Vec<String>,
    pub stale_temp_files_left: Vec<Leftover>,
    #[serde(deserialize_with = "present")]
    pub note: Option<String>,
    pub keeps_backup: bool,
    /// Absent, not null, when PATH named no link.
    #[serde(default)]
    pub link: Option<Link>,
    /// Absent, not null, when nothing was carried.
    #[serde(default)]
    pub late_appends_carried: Option<Carried>,
}

/// The report of `repair`, `compact`, `migrate` or `recover --discard`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report<P> {
    pub schema_version: u32,
    pub command: String,
    pub mode: Mode,
    pub files: Vec<Outcome<P>>,
    /// `repair` and `compact` only (absent from the others' reports).
    #[serde(default)]
    pub ledgers: Option<Vec<LedgerChange>>,
    /// `repair` of fenced lease table roots only (absent otherwise).
    #[serde(default)]
    pub tables: Option<Vec<TableRepair>>,
    /// `repair` of a state directory that holds a table (absent otherwise).
    #[serde(default)]
    pub tables_not_named: Option<Vec<String>>,
}

/// A setting and where it came from.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardSetting {
    pub value: u64,
    pub from: String,
}

/// What `repair` did to one fenced lease table.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableRepair {
    pub path: String,
    /// `work` or `target`.
    pub table: String,
    pub shard_count: ShardSetting,
    pub counts: TableCounts,
    pub actions: Vec<TableAction>,
    pub unchanged: Vec<TableUnchanged>,
    #[serde(deserialize_with = "present")]
    pub refused: Option<String>,
    pub quarantine: String,
    #[serde(deserialize_with = "present")]
    pub archive: Option<String>,
    pub written: bool,
    #[serde(deserialize_with = "present")]
    pub reread: Option<TableReread>,
}

/// One entry a table repair moves.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableAction {
    /// `lock-path`, `shard-file`, `probe`, `temp-file`, `rejected`,
    /// `misplaced`, `misplaced-rejected` or `archive-done`.
    pub fix: String,
    #[serde(deserialize_with = "present")]
    pub id: Option<String>,
    pub path: String,
    pub to: String,
    pub why: String,
    pub effect: String,
    pub locks: Vec<String>,
    /// `planned`, `done` or `skipped`.
    pub state: String,
    #[serde(deserialize_with = "present")]
    pub skipped: Option<String>,
}

/// Something a table repair leaves, and why.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableUnchanged {
    pub what: String,
    #[serde(deserialize_with = "present")]
    pub path: Option<String>,
    #[serde(deserialize_with = "present")]
    pub id: Option<String>,
    pub count: u64,
    pub why: String,
}

/// The table read again after `--apply`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableReread {
    pub counts: TableCounts,
    pub rejected: Vec<String>,
    pub misplaced: u64,
    pub temp_files: u64,
    pub bad_locks: u64,
    pub unread: Vec<String>,
    pub still_there: Vec<String>,
}

impl<P> Report<P> {
    /// The only ledger; panics when there is none or several.
    pub fn ledger(&self) -> &LedgerChange {
        match self.ledgers.as_deref() {
            Some([only]) => only,
            other => panic!("one ledger: {other:?}"),
        }
    }
}

/// What `repair` or `compact` did to a digest ledger.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerChange {
    pub path: String,
    pub shard_count: u32,
    pub reshard: bool,
    pub before: LedgerState,
    pub after: LedgerState,
    pub files: Vec<LedgerFileChange>,
    pub written: bool,
    pub keeps_backup: bool,
    pub removed_temp_files: Vec<String>,
    pub stale_temp_files_left: Vec<Leftover>,
    #[serde(deserialize_with = "present")]
    pub note: Option<String>,
}

/// A ledger as upstream's reader loads it at a shard count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerState {
    pub digests: u64,
    pub unread: u64,
    pub distinct: u64,
    pub valid: u64,
    pub ignored: u64,
    pub files: u64,
}

/// What happens to one shard file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileAction {
    None,
    Rewrite,
    Create,
    Remove,
    Skip,
}

/// What happens to the end of a ledger file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TailSeal {
    None,
    Cut {
        offset: u64,
        bytes: u64,
        nul_bytes: u64,
    },
    Terminate {
        offset: u64,
        nul_bytes: u64,
    },
}

/// One shard file, planned and changed.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerFileChange {
    pub name: String,
    pub index: u32,
    pub action: FileAction,
    pub tail: TailSeal,
    #[serde(deserialize_with = "present")]
    pub restored: Option<String>,
    pub lines_before: u64,
    pub lines_after: u64,
    pub valid_before: u64,
    pub valid_after: u64,
    pub moved_out: u64,
    pub moved_in: u64,
    pub duplicates_dropped: u64,
    pub ignored_dropped: u64,
    pub written: bool,
    #[serde(deserialize_with = "present")]
    pub backup: Option<String>,
    #[serde(deserialize_with = "present")]
    pub output: Option<String>,
    /// Absent, not null, when nothing was carried.
    #[serde(default)]
    pub late_appends_carried: Option<Carried>,
}

impl<P> Report<P> {
    /// The plan of the only file; panics when there are several.
    pub fn only(&self) -> &Outcome<P> {
        assert_eq!(self.files.len(), 1, "one file");
        &self.files[0]
    }
}

/// `repair --format json`.
pub type Repair = Report<RepairPlan>;
/// `compact --format json`.
pub type Compact = Report<Compaction>;
/// `migrate --format json`.
pub type Migrate = Report<Migration>;
/// `recover --discard --format json`.
pub type Discard = Report<DiscardPlan>;
/// `restore --format json`.
pub type Restore = Report<RestorePlan>;
/// `rollback --format json`.
pub type Rollback = Report<RollbackPlan>;

/// What happens to the end of the file.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TailFix {
    None,
    Cut {
        offset: u64,
        bytes: u64,
        zero_bytes: u64,
    },
    Terminate {
        offset: u64,
    },
}

/// What hid a salvaged record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hidden {
    Glued,
    Bom,
    ZeroFill,
    MissingNewline,
    Appended,
}

/// What repair does with a salvaged record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SalvageAction {
    Restored,
    LeftOut,
}

/// A record found inside a line upstream ignores.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Salvage {
    pub line: u64,
    pub offset: u64,
    pub hidden: Hidden,
    pub fragment_bytes: u64,
    pub trailing_bytes: u64,
    pub id: Id,
    pub op: String,
    pub action: SalvageAction,
}

/// A repair plan.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepairPlan {
    pub tail: TailFix,
    pub salvaged: Vec<Salvage>,
    pub rewrite: bool,
    pub brought_back: Vec<Id>,
    pub completed_by_salvage: Vec<Id>,
    pub before: StateView,
    pub after: StateView,
}

/// A compaction plan with its measured result.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compaction {
    pub drop_completed: bool,
    pub lines_before: u64,
    pub bytes_before: u64,
    pub records_after: u64,
    pub active: u64,
    pub completed_kept: u64,
    pub completed_dropped: u64,
    pub before: StateView,
    pub after: StateView,
    pub bytes_after: u64,
    pub unchanged: bool,
    pub hidden_dropped: u64,
    pub dropped: Vec<DroppedLines>,
    pub superseded: u64,
    pub needs: Vec<String>,
}

/// Lines a compaction drops for one reason.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DroppedLines {
    pub code: String,
    pub lines: u64,
}

/// A snapshot migration.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotPlan {
    pub needed: bool,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub zeroed: Vec<Zeroed>,
    pub dropped: Vec<Dropped>,
}

/// What migrate does to one file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "change", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Migration {
    Journal {
        legacy_leases: Vec<Reclaim>,
    },
    Rewrite {
        legacy_leases: Vec<Reclaim>,
        clockless_records: u64,
        compaction: Compaction,
    },
    Snapshot(SnapshotPlan),
}

/// A discard plan.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscardPlan {
    pub tail: TailFix,
    pub reclaims: Vec<Reclaim>,
    pub append_bytes: u64,
    pub before: StateView,
    pub after: StateView,
    #[serde(deserialize_with = "present")]
    pub export: Option<String>,
}

// ---- restore and rollback ------------------------------------------------------

/// What happens to an exported lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fate {
    Restore,
    Active,
    Completed,
    LeasedAgain,
    NotInJournal,
}

/// One lease of a discard export.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportLease {
    pub line: u64,
    pub id: Id,
    pub worker: PyInt,
    pub clock: Clock,
    pub time: f64,
    pub attempts: PyInt,
    #[serde(deserialize_with = "present")]
    pub path: Option<String>,
    pub fate: Fate,
    #[serde(deserialize_with = "present")]
    pub journal_line: Option<u64>,
}

/// A restore plan.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestorePlan {
    pub export: String,
    pub tail: TailFix,
    pub leases: Vec<ExportLease>,
    pub restored: u64,
    pub skipped: u64,
    pub append_bytes: u64,
    pub before: StateView,
    pub after: StateView,
}

/// Records by op.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordCounts {
    pub lease: u64,
    pub done: u64,
    pub reclaim: u64,
    pub other: u64,
}

/// What a rollback changes in a journal.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalRollback {
    #[serde(deserialize_with = "present")]
    pub before: Option<StateView>,
    #[serde(deserialize_with = "present")]
    pub after: Option<StateView>,
    pub active_gained: Vec<Id>,
    pub active_lost: Vec<Id>,
    pub completed_gained: Vec<Id>,
    pub completed_lost: Vec<Id>,
    pub records_not_in_backup: RecordCounts,
}

/// What a rollback changes in a snapshot.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotRollback {
    pub tasks_before: u64,
    pub tasks_after: u64,
    pub leases_before: u64,
    pub leases_after: u64,
    pub completions_before: PyInt,
    pub completions_after: PyInt,
    pub tasks_behind: Vec<Id>,
}

/// A rollback plan.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RollbackPlan {
    pub backup: String,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub identical: bool,
    #[serde(deserialize_with = "present")]
    pub journal: Option<JournalRollback>,
    #[serde(deserialize_with = "present")]
    pub snapshot: Option<SnapshotRollback>,
    pub loses_work: bool,
    #[serde(deserialize_with = "present")]
    pub refused: Option<String>,
}

// ---- recover (the forecast) -------------------------------------------------

/// What resume does with a reclaimed lease's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResumeOutcome {
    Requeued,
    RequeuedIfContinuationValid,
    Dropped,
}

/// A work item as resume rebuilds it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkItem {
    pub path: String,
    #[serde(deserialize_with = "present")]
    pub focus: Option<String>,
    pub target_branch: u64,
    pub s2f_actions: Vec<(u64, String)>,
    pub schedule_prefix: Vec<u64>,
    #[serde(deserialize_with = "present")]
    pub continuation: Option<String>,
    pub fields: u8,
}

/// One lease resume reclaims, and what becomes of its work: the
/// [`Reclaim`] members, the outcome and the rebuilt item.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requeue {
    pub id: Id,
    pub worker: PyInt,
    pub clock: Clock,
    pub time: f64,
    #[serde(deserialize_with = "present")]
    pub age_seconds: Option<f64>,
    pub attempts: PyInt,
    pub line: u64,
    pub offset: u64,
    #[serde(deserialize_with = "present")]
    pub path: Option<String>,
    pub continuation: bool,
    pub outcome: ResumeOutcome,
    /// Present exactly when the outcome is `dropped` (see
    /// [`Forecast::check`]).
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(deserialize_with = "present")]
    pub item: Option<WorkItem>,
    pub not_restored: Vec<String>,
    /// The file and id of an earlier lease that rebuilds to the same item.
    #[serde(deserialize_with = "present")]
    pub duplicate_of: Option<(String, Id)>,
    /// The payload's `sha256`, when it is a content digest.
    #[serde(deserialize_with = "present")]
    pub digest: Option<String>,
    /// Set exactly when the forecast has a `ledger`.
    #[serde(deserialize_with = "present")]
    pub rescan: Option<Rescan>,
}

/// The first record resume appends to a journal.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirstAppend {
    pub record: String,
    #[serde(deserialize_with = "present")]
    pub id: Option<Id>,
    pub glues: bool,
}

/// The forecast of resume for one journal.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForecastFile {
    pub path: String,
    pub tail: Tail,
    pub reclaims: Vec<Requeue>,
    pub requeued: u64,
    pub requeued_if_continuation_valid: u64,
    pub dropped: u64,
    pub duplicates: u64,
    pub first_append: FirstAppend,
    pub hidden_records: u64,
    pub before: StateView,
}

/// `recover --format json` without `--discard`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Forecast {
    pub schema_version: u32,
    pub command: String,
    pub mode: String,
    pub now: f64,
    pub files: Vec<ForecastFile>,
    #[serde(deserialize_with = "present")]
    pub ledger: Option<LedgerView>,
    pub tables: Vec<TableForecast>,
    /// `null` for a fenced lease table's root.
    #[serde(deserialize_with = "present")]
    pub master_lock: Option<MasterLock>,
}

/// `recover --format json` of several paths.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManyForecasts {
    pub schema_version: u32,
    pub command: String,
    pub mode: String,
    pub forecasts: Vec<Forecast>,
    pub errors: Vec<PathError>,
}

impl Forecast {
    /// What the types cannot say: `reason` goes with `dropped` alone, and
    /// the counts add up to the reclaims.
    pub fn check(&self) {
        assert_eq!(
            (self.command.as_str(), self.mode.as_str()),
            ("recover", "forecast")
        );
        for file in &self.files {
            for r in &file.reclaims {
                assert_eq!(
                    r.reason.is_some(),
                    r.outcome == ResumeOutcome::Dropped,
                    "{}: {r:?}",
                    file.path
                );
                assert_eq!(r.rescan.is_some(), self.ledger.is_some(), "{r:?}");
            }
            let count = |o| file.reclaims.iter().filter(|r| r.outcome == o).count() as u64;
            assert_eq!(
                (
                    file.requeued,
                    file.requeued_if_continuation_valid,
                    file.dropped
                ),
                (
                    count(ResumeOutcome::Requeued),
                    count(ResumeOutcome::RequeuedIfContinuationValid),
                    count(ResumeOutcome::Dropped)
                ),
                "{}",
                file.path
            );
        }
    }
}

// ---- diff -----------------------------------------------------------------

/// Added, removed or changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
}

/// One difference. Its values are the compared entity's, of any type.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    pub entity: String,
    pub change: ChangeKind,
    #[serde(deserialize_with = "present")]
    pub id: Option<String>,
    #[serde(deserialize_with = "present")]
    pub field: Option<String>,
    pub before: serde_json::Value,
    pub after: serde_json::Value,
    #[serde(deserialize_with = "present")]
    pub delta: Option<serde_json::Value>,
}

/// Totals of one snapshot side.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffTotals {
    pub tasks: u64,
    pub state_leases: u64,
    pub completions: PyInt,
    pub failures: PyInt,
    pub total_generated: PyInt,
    pub leases: PyInt,
    pub elapsed: f64,
}

/// Snapshot totals of each side.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotSummary {
    pub a: DiffTotals,
    pub b: DiffTotals,
    pub clock_a: Clock,
    pub clock_b: Clock,
}

/// Journal states of each side.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalSummary {
    pub a: StateView,
    pub b: StateView,
}

/// What one ledger of a diff holds and loads.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerTotals {
    pub path: Option<String>,
    pub files: u64,
    pub distinct: u64,
    pub loaded: u64,
    pub unread: u64,
    pub over_limit: u64,
}

/// Ledger totals of each side.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerDiffSummary {
    pub a: LedgerTotals,
    pub b: LedgerTotals,
}

/// `snapshot_counts(now)` of a lease table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableCounts {
    pub leased: u64,
    pub committing: u64,
    pub expired: u64,
    pub done: u64,
}

/// What one lease table of a diff holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableTotals {
    pub path: String,
    pub counts: TableCounts,
    pub records: u64,
    pub accepted: u64,
    pub rejected: u64,
    pub outside: u64,
    pub locks: u64,
    pub temp_files: u64,
    pub probes: u64,
    pub other: u64,
}

/// Lease table totals of each side.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableDiffSummary {
    pub a: TableTotals,
    pub b: TableTotals,
}

/// Totals of each side, by kind.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum DiffSummary {
    Snapshot(SnapshotSummary),
    Journal(JournalSummary),
    Ledger(LedgerDiffSummary),
    Table(TableDiffSummary),
}

/// What `diff` compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiffKind {
    Journal,
    Snapshot,
    Ledger,
    Table,
}

/// A setting and where it came from (`--flag`, a variable, `default`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffSetting<T> {
    pub value: T,
    pub from: String,
}

/// Two lease tables, compared.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableDiff {
    /// `work` or `target`.
    pub table: String,
    /// `name`, `environment` or `records`.
    pub table_from: String,
    pub shard_count: DiffSetting<u64>,
    pub ttl: DiffSetting<f64>,
    pub ttl_effective: f64,
    pub now: f64,
    pub ids: u64,
    pub unchanged: u64,
    pub max_examples: usize,
}

/// A lease record as a table diff's change shows it (`before`, `after`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordView {
    pub path: String,
    pub size: u64,
    /// `accepted`, or why upstream's reader refuses it.
    pub reading: String,
    #[serde(deserialize_with = "present")]
    pub message: Option<String>,
    #[serde(deserialize_with = "present")]
    pub status: Option<String>,
    #[serde(deserialize_with = "present")]
    pub owner: Option<String>,
    #[serde(deserialize_with = "present")]
    pub previous_owner: Option<String>,
    #[serde(deserialize_with = "present")]
    pub worker: Option<String>,
    #[serde(deserialize_with = "present")]
    pub token: Option<String>,
    #[serde(deserialize_with = "present")]
    pub updated: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub claimed: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub attempts: Option<String>,
    #[serde(deserialize_with = "present")]
    pub steals: Option<String>,
    #[serde(deserialize_with = "present")]
    pub completed: Option<f64>,
}

/// A name beside the records (a lock, a temporary file, a probe
/// directory), as a table diff's change shows it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryView {
    pub path: String,
    /// `file`, `dir`, `symlink` or `special`.
    #[serde(rename = "type")]
    pub entry_type: String,
}

/// One shard index of two ledgers, compared.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileDiff {
    pub name: String,
    pub index: u32,
    pub read: bool,
    /// `file`, `dir`, `other`; `None`: absent.
    #[serde(deserialize_with = "present")]
    pub a: Option<String>,
    #[serde(deserialize_with = "present")]
    pub b: Option<String>,
    pub digests_a: u64,
    pub digests_b: u64,
    pub added: u64,
    pub removed: u64,
    pub moved_in: u64,
    pub moved_out: u64,
}

/// Two ledgers, compared.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerDiff {
    pub shard_count: u32,
    /// `option` or `files`.
    pub shard_count_from: String,
    pub added: u64,
    pub removed: u64,
    pub moved: u64,
    pub unchanged: u64,
    pub load_added: u64,
    pub load_removed: u64,
    pub max_examples: usize,
    pub files: Vec<FileDiff>,
}

/// A record in B, with what replay did with it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordAt {
    pub line: u64,
    pub offset: u64,
    pub op: String,
    #[serde(deserialize_with = "present")]
    pub id: Option<String>,
    pub effect: String,
}

/// The state of a file's divergent part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TailKind {
    Clean,
    Torn,
    Corrupt,
}

/// How two journals' bytes relate.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "relation", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Bytes {
    Identical,
    Appended {
        at_offset: u64,
        appended: Vec<RecordAt>,
        glued_onto_a_torn_tail: bool,
    },
    Truncated {
        at_offset: u64,
    },
    Diverged {
        offset: u64,
        line_a: u64,
        line_b: u64,
        tail_a: TailKind,
        tail_b: TailKind,
    },
}

/// `diff --format json`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Diff {
    pub schema_version: u32,
    pub kind: DiffKind,
    pub a: String,
    pub b: String,
    pub identical: bool,
    pub changes: Vec<Change>,
    pub counts: BTreeMap<String, u64>,
    pub summary: DiffSummary,
    #[serde(deserialize_with = "present")]
    pub bytes: Option<Bytes>,
    #[serde(deserialize_with = "present")]
    pub history: Option<BTreeMap<String, Vec<RecordAt>>>,
    #[serde(deserialize_with = "present")]
    pub ledger: Option<LedgerDiff>,
    #[serde(deserialize_with = "present")]
    pub table: Option<TableDiff>,
    pub notes: Vec<String>,
}

impl Diff {
    /// The one change of `entity` and `field` whose id starts with
    /// `id_prefix`; panics when there is none or more than one.
    pub fn find(&self, entity: &str, field: Option<&str>, id_prefix: &str) -> &Change {
        let found: Vec<&Change> = self
            .changes
            .iter()
            .filter(|c| {
                c.entity == entity
                    && c.field.as_deref() == field
                    && c.id.as_deref().unwrap_or("").starts_with(id_prefix)
            })
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{entity} {field:?} changes for {id_prefix}: {:#?}",
            self.changes
        );
        found[0]
    }

    /// The journal summary; panics for snapshots.
    pub fn journal_summary(&self) -> &JournalSummary {
        match &self.summary {
            DiffSummary::Journal(s) => s,
            other => panic!("not a journal summary: {other:?}"),
        }
    }

    /// The snapshot summary; panics for journals.
    pub fn snapshot_summary(&self) -> &SnapshotSummary {
        match &self.summary {
            DiffSummary::Snapshot(s) => s,
            other => panic!("not a snapshot summary: {other:?}"),
        }
    }

    /// The tables' summary; panics for the other kinds.
    pub fn table_summary(&self) -> &TableDiffSummary {
        match &self.summary {
            DiffSummary::Table(s) => s,
            other => panic!("not a table summary: {other:?}"),
        }
    }

    /// The ledgers' summary; panics for the other kinds.
    pub fn ledger_summary(&self) -> &LedgerDiffSummary {
        match &self.summary {
            DiffSummary::Ledger(s) => s,
            other => panic!("not a ledger summary: {other:?}"),
        }
    }
}

/// What a writing command that failed after changing files reports with
/// `--format json` (exit status 4).
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failed {
    pub schema_version: u32,
    pub command: String,
    #[serde(deserialize_with = "present")]
    pub mode: Option<String>,
    pub files: Vec<serde_json::Value>,
    pub changed: Vec<ChangeMade>,
    pub error: String,
}

/// One change a failed run made.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeMade {
    pub path: String,
    pub done: String,
}

// ---- fenced lease tables ----------------------------------------------------

/// A setting and where it came from.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setting<T> {
    pub value: T,
    pub from: String,
}

/// The files of the scanned shard directories.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableFiles {
    pub records: u64,
    pub locks: u64,
    pub orphan_locks: u64,
    pub temp_files: u64,
    pub other: u64,
    pub record_bytes: u64,
}

/// What a fresh claim does.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimOutcome {
    Takes,
    Refused,
    Raises(String),
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejectedRecord {
    pub id: String,
    pub path: String,
    pub reason: String,
    pub message: String,
    #[serde(deserialize_with = "present")]
    pub raises: Option<String>,
    pub elsewhere: Vec<String>,
    pub claim: ClaimOutcome,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpiredRecord {
    pub id: String,
    pub path: String,
    #[serde(deserialize_with = "present")]
    pub owner: Option<String>,
    #[serde(deserialize_with = "present")]
    pub worker: Option<String>,
    pub updated: f64,
    pub age_seconds: f64,
    #[serde(deserialize_with = "present")]
    pub attempts: Option<String>,
    #[serde(deserialize_with = "present")]
    pub steals: Option<String>,
    #[serde(deserialize_with = "present")]
    pub seed: Option<String>,
    #[serde(deserialize_with = "present")]
    pub seed_here: Option<bool>,
    pub continuation: bool,
    pub order: usize,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommittingRecord {
    pub id: String,
    pub path: String,
    #[serde(deserialize_with = "present")]
    pub owner: Option<String>,
    pub updated: f64,
    pub age_seconds: f64,
    pub has_commit: bool,
    pub owner_dead: bool,
    #[serde(deserialize_with = "present")]
    pub seed: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FutureRecord {
    pub id: String,
    pub path: String,
    pub status: String,
    #[serde(deserialize_with = "present")]
    pub owner: Option<String>,
    pub ahead_seconds: f64,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MisplacedRecord {
    pub id: String,
    pub path: String,
    pub own_path: String,
    pub own_path_holds: String,
    pub valid_here: bool,
    #[serde(deserialize_with = "present")]
    pub status: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnreadEntry {
    pub name: String,
    pub why: String,
    pub entry_type: String,
    pub records: u64,
    pub active: u64,
    #[serde(deserialize_with = "present")]
    pub pid: Option<u32>,
    #[serde(deserialize_with = "present")]
    pub pid_running: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BadLock {
    pub id: String,
    pub path: String,
    pub entry_type: String,
    pub raises: String,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableTempFile {
    pub path: String,
    pub id: String,
    pub pid: u32,
    pub pid_running_here: bool,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldLock {
    pub id: String,
    pub path: String,
    pub pid: i64,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OddRecord {
    pub id: String,
    pub path: String,
    pub oddities: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerRow {
    pub owner: String,
    pub leased: u64,
    pub expired: u64,
    pub committing: u64,
    pub done: u64,
    #[serde(deserialize_with = "present")]
    pub newest_heartbeat_age: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub oldest_heartbeat_age: Option<f64>,
    pub host: String,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryFile {
    pub id: String,
    pub path: String,
    pub role: String,
    pub entry_type: String,
    pub own_path: bool,
    #[serde(deserialize_with = "present")]
    pub reading: Option<String>,
    #[serde(deserialize_with = "present")]
    pub status: Option<String>,
    #[serde(deserialize_with = "present")]
    pub owner: Option<String>,
    #[serde(deserialize_with = "present")]
    pub previous_owner: Option<String>,
    #[serde(deserialize_with = "present")]
    pub worker: Option<String>,
    #[serde(deserialize_with = "present")]
    pub token: Option<String>,
    #[serde(deserialize_with = "present")]
    pub updated: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub attempts: Option<String>,
    #[serde(deserialize_with = "present")]
    pub steals: Option<String>,
    #[serde(deserialize_with = "present")]
    pub completed: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub seed: Option<String>,
    #[serde(deserialize_with = "present")]
    pub claim: Option<ClaimOutcome>,
}

/// `inspect` of a fenced lease table's root (the `kind` member, `table`,
/// is the enum's tag where it is parsed as `Inspect`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct TableInspection {
    pub schema_version: u32,
    #[serde(flatten)]
    pub table: InspectTable,
}

/// A fenced lease table, as `inspect` reports it (alone, or in a state
/// directory's `tables`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InspectTable {
    #[serde(default)]
    pub kind: Option<String>,
    pub table: String,
    pub table_from: String,
    pub path: String,
    pub shard_count: Setting<u64>,
    pub ttl: Setting<f64>,
    pub ttl_effective: f64,
    pub now: f64,
    pub counts: TableCounts,
    pub files: TableFiles,
    pub accepted: u64,
    pub rejected: Vec<String>,
    pub rejected_records: Vec<RejectedRecord>,
    pub recovered: Vec<String>,
    pub start_limit: usize,
    pub expired: Vec<ExpiredRecord>,
    pub committing: Vec<CommittingRecord>,
    pub future: Vec<FutureRecord>,
    pub misplaced: Vec<MisplacedRecord>,
    pub unread: Vec<UnreadEntry>,
    #[serde(deserialize_with = "present")]
    pub fitting_counts: Option<Vec<u64>>,
    pub bad_locks: Vec<BadLock>,
    pub temp_files: Vec<TableTempFile>,
    pub held_locks: Vec<HeldLock>,
    pub odd: Vec<OddRecord>,
    pub owners: Vec<OwnerRow>,
    #[serde(deserialize_with = "present")]
    pub host: Option<String>,
    #[serde(deserialize_with = "present")]
    pub history: Option<Vec<HistoryFile>>,
}

/// A table as verify and recover summarise it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableView {
    pub path: String,
    pub table: String,
    pub shard_count: u64,
    pub ttl: f64,
    pub counts: TableCounts,
    pub accepted: u64,
    pub rejected: usize,
    pub recoverable: usize,
    pub taken_at_start: usize,
}

/// `recover`'s forecast of a table.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableForecast {
    pub path: String,
    pub table: String,
    pub shard_count: u64,
    pub ttl: f64,
    pub counts: TableCounts,
    pub accepted: u64,
    pub rejected: usize,
    pub recoverable: usize,
    pub recovered: Vec<String>,
    pub taken_at_start: usize,
    pub expired: Vec<ExpiredRecord>,
    pub committing: usize,
}
