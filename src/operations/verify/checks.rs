//! `verify` as data: the finding catalog and the checks. Pure: files come
//! in as readers or bytes, findings go out as values; the caller passes
//! `now`, the TTL and the skew.
//!
//! Codes are part of the public interface: never renamed or reused. Each
//! line upstream's loader ignores yields exactly one finding saying why
//! (see [`ignore_code`]); protocol checks (F314 L1, L2, L4, L5, L6) run on
//! the replay; snapshot checks on upstream's restore.

use std::collections::{BTreeMap, BTreeSet};
use std::io;

use serde::Serialize;

use crate::engine::journal::{
    self, Clock, ClockMarker, CorruptReason, Effect, IgnoreReason, LeaseRejection, LineEvent,
    LineKind, Observer, Op, Replay, Summary, Terminator, WorkId,
};
use crate::engine::snapshot;
use crate::operations::statedir::{MasterLock, TempFile};

/// How much a finding matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; never fails a check.
    Info,
    /// Worth a look; fails only with `--strict`.
    Warning,
    /// Resuming loses or corrupts recovery state.
    Error,
}

impl Severity {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// The command that fixes a finding, if there is one. A remedy is never a
/// command that appends a `reclaim`: that would take the work away from
/// the master's resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Remedy {
    /// `leasejournal repair --apply PATH` (the checked journal or directory).
    Repair,
    /// `leasejournal migrate --apply SNAPSHOT`.
    MigrateSnapshot,
}

/// One entry of the catalog.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CodeInfo {
    /// The stable code.
    pub code: &'static str,
    /// Its severity, judged by one question: does resuming now lose,
    /// duplicate or misattribute work? (`error`: yes; `warning`: a loss
    /// that already happened and that resuming cannot make worse, or
    /// something worth a look; `info`: no.)
    pub severity: Severity,
    /// Where it applies: `journal`, `protocol`, `snapshot` or `directory`.
    pub scope: &'static str,
    /// What it means.
    pub meaning: &'static str,
    /// Why it matters, and why it has this severity.
    pub why: &'static str,
    /// What upstream does with it.
    pub upstream: &'static str,
    /// What to do about it.
    pub fix: &'static str,
    /// The command that fixes it, when one does.
    pub remedy: Option<Remedy>,
}

macro_rules! catalog {
    ($( $code:literal, $sev:ident, $scope:literal, $meaning:literal, $why:literal, $upstream:literal, $fix:literal, $remedy:expr; )*) => {
        /// Every finding code, in the order the documentation lists them.
        pub const CATALOG: &[CodeInfo] = &[
            $( CodeInfo { code: $code, severity: Severity::$sev, scope: $scope, meaning: $meaning, why: $why, upstream: $upstream, fix: $fix, remedy: $remedy }, )*
        ];
    };
}

const REPAIR: Option<Remedy> = Some(Remedy::Repair);

catalog! {
    "torn-tail", Error, "journal",
        "The last line has no terminator and does not parse: a crash mid-append.",
        "An error because resuming loses work: resume's first append (a reclaim, or with no active lease the next dispatch's lease) is concatenated onto the fragment, and on the next load both are lost as one corrupt line.",
        "Ignores the line silently, and appends onto it without checking.",
        "leasejournal repair --apply (cuts the fragment, keeping it in the backup; no lease is touched)", REPAIR;
    "zero-filled-tail", Error, "journal",
        "The file ends in NUL bytes, as some filesystems leave it after a power loss.",
        "An error because resuming loses work: the NULs form an unterminated last line, and resume's first append glues onto it and is lost on the next load.",
        "Ignores the NUL line silently, and appends onto it.",
        "leasejournal repair --apply (cuts the zero fill, keeping it in the backup)", REPAIR;
    "unterminated-tail", Error, "journal",
        "The last record is complete but has no newline.",
        "An error because resuming loses work: upstream reads the record, but resume's first append is concatenated onto it, and on the next load both the record and the appended one are lost as one corrupt line.",
        "Reads the record, then appends onto it without a newline.",
        "leasejournal repair --apply (adds the newline)", REPAIR;
    "glued-record", Error, "journal",
        "A torn fragment with a complete record glued after it on one line.",
        "An error because resuming makes the loss permanent: the glued lease, done or reclaim never happened as far as upstream knows, so its work is not requeued, and the master's next compaction drops the line; repair can still bring the record back.",
        "Ignores the whole line silently.",
        "leasejournal repair --apply (splits the record back onto a line of its own; a glued reclaim that would take a lease away from resume is left out instead)", REPAIR;
    "corrupt-line", Warning, "journal",
        "A line that is not valid JSON (or nests too deep, or holds an integer beyond 4300 digits) and is not the last line.",
        "Whatever the line recorded was lost when it was written; resuming cannot make that worse. A corrupt line in the middle means the file was damaged or edited.",
        "Ignores the line silently.",
        "Look at it with leasejournal inspect --history; fix it by hand if you know what it held (the master's next compaction drops it)", None;
    "invalid-utf8", Warning, "journal",
        "Bytes that are not valid UTF-8.",
        "Upstream deletes them before parsing. Between tokens that changes nothing; inside a string it changes the value, and a lease whose payload changed is reported as payload-id-mismatch too. Either way the loss, if any, already happened and resuming cannot make it worse.",
        "Deletes the bytes before parsing (errors=\"ignore\").",
        "leasejournal compact --apply rewrites the surviving records cleanly", None;
    "bom", Error, "journal",
        "The first line starts with a UTF-8 byte order mark.",
        "An error because resuming makes the loss permanent: the first record is invisible to upstream, so its work is not requeued; repair can still bring it back.",
        "Ignores the first line: Python's json rejects the BOM.",
        "leasejournal repair --apply (removes the three BOM bytes, so the record counts again)", REPAIR;
    "duplicate-member", Warning, "journal",
        "A JSON object with a repeated member name, at any depth.",
        "Upstream never saw the record; resuming cannot make that worse.",
        "Ignores the record (its loader rejects duplicates).",
        "Fix the line by hand (the master's next compaction drops it)", None;
    "non-finite-number", Warning, "journal",
        "NaN, Infinity or -Infinity, or a payload number that overflows to infinity.",
        "Upstream never saw the record; resuming cannot make that worse.",
        "Ignores the record.",
        "Fix the line by hand (the master's next compaction drops it)", None;
    "not-an-object", Warning, "journal",
        "A line that is valid JSON but not an object.",
        "Nothing upstream writes looks like this: the file was edited or mixed with another. No record was lost to it.",
        "Ignores the line.",
        "leasejournal compact --apply drops it", None;
    "blank-line", Info, "journal",
        "A line with only whitespace.",
        "Harmless; upstream never writes one.",
        "Ignores the line.",
        "Nothing to do (compact removes it)", None;
    "bad-id", Warning, "journal",
        "A record whose id is missing or not 64 lowercase hex characters.",
        "Upstream never saw the record; resuming cannot make that worse.",
        "Ignores the record without counting it.",
        "Fix the line by hand (the master's next compaction drops it)", None;
    "payload-id-mismatch", Warning, "journal",
        "A lease whose payload does not hash to its id: a spliced or edited record.",
        "Upstream never saw the lease, so its work is not recovered; resuming cannot make that worse.",
        "Ignores the lease.",
        "Find the real payload with leasejournal inspect --history ID", None;
    "rejected-field", Warning, "journal",
        "A lease whose payload, worker, time, attempts or clock upstream refuses (not an object, negative, boolean, non-finite, unknown clock).",
        "Upstream never saw the lease, so its work is not recovered; resuming cannot make that worse.",
        "Ignores the lease.",
        "Fix the field by hand", None;
    "lenient-field", Warning, "journal",
        "A lease value upstream converts: \"worker\":\"3\", 2.9, attempts 0 or missing, time as a string, null or integer.",
        "Upstream accepts it, but it was not written by upstream, and the converted value may not be what was meant. Resume requeues the work all the same.",
        "Converts the value (int(worker or 0), float(time or 0.0), int(attempts or 1)).",
        "leasejournal compact --apply writes the converted values canonically", None;
    "unknown-op", Warning, "journal",
        "A record whose op is not lease, done or reclaim.",
        "It has no effect; it was written by another tool or by hand.",
        "Counts it as an event and ignores it.",
        "leasejournal compact --apply drops it", None;
    "unknown-field", Info, "journal",
        "A record with members upstream does not read.",
        "Compaction drops them, upstream's and ours alike.",
        "Ignores the members.",
        "Nothing to do", None;
    "non-canonical-encoding", Info, "journal",
        "A record not byte-identical to upstream's own encoding (key order, separators, escaping, number form).",
        "It was written by hand or by another tool.",
        "Reads it like any other record.",
        "leasejournal compact --apply rewrites records canonically", None;
    "double-lease", Warning, "protocol",
        "L1: a lease for an id that is already active.",
        "Ownership moved without a reclaim: two workers may have run the same work. That already happened; resume reclaims the survivor and requeues the work once, so it cannot make it worse.",
        "Replay lets the last lease win.",
        "Inspect with leasejournal inspect --history ID", None;
    "lease-after-done", Warning, "protocol",
        "A completed id leased again.",
        "The work was dispatched twice; if the second lease is still active, resume requeues it once more. Nothing is lost.",
        "Replay re-activates the id.",
        "Nothing to undo; check what re-dispatched it", None;
    "orphan-done", Warning, "protocol",
        "L2: a done for an id that is not active (never leased, reclaimed, or done before its lease).",
        "A completion upstream does not count: if the lease is still active, resume requeues work that may be finished. Running it again costs time and loses nothing; no file tells which record is the truth.",
        "Ignores it.",
        "Inspect with leasejournal inspect --history ID", None;
    "orphan-reclaim", Info, "protocol",
        "A reclaim for an id that is not active.",
        "Harmless: reclaims are idempotent.",
        "Ignores it.",
        "Nothing to do", None;
    "legacy-clock-lease", Info, "protocol",
        "L4/L5: an active lease without the unix clock marker; its time is a monotonic reading from an earlier boot.",
        "Its time is meaningless now, but resume reclaims and requeues every non-unix lease whatever its time, so L5 holds without any change to the file.",
        "recover_expired reclaims every non-unix lease unconditionally, and resume requeues its work.",
        "Nothing to do; resume migrates it (leasejournal recover shows the forecast)", None;
    "seed-missing", Error, "protocol",
        "An active lease whose payload has no path, or whose seed path is not a file on this host, and that has no continuation.",
        "An error because resuming loses the work for good: resume reclaims the lease, cannot rebuild the work item and drops it, and nothing else remembers it. Relative paths are looked up from verify's working directory: run it where the master runs.",
        "_recoverable_work_item_from_lease_payload returns None; the reclaim is appended all the same.",
        "Restore the seed (mount the AFL output directory, run from the master's working directory) before resuming; leasejournal recover lists every item resume drops", None;
    "requeued-twice", Warning, "protocol",
        "Two active leases (in one journal, or one in each) that resume rebuilds into the same work item.",
        "Resume does not de-duplicate: the work is queued, and runs, twice. Nothing is lost.",
        "Appends the deferred journal's items, then the work journal's, to the queue as they come.",
        "Nothing to do; leasejournal recover shows both", None;
    "future-lease", Warning, "protocol",
        "L4: an active unix-clock lease dated after now plus the skew.",
        "A wall-clock rollback or a bad time. Resume reclaims with a TTL of 0, so the work is requeued all the same; ages and TTL expiry at run time are unreliable.",
        "Reclaims it only when the TTL is 0 (as resume does).",
        "Check the host clock (NTP)", None;
    "clock-regression", Warning, "protocol",
        "Unix timestamps going backwards by more than the skew between consecutive records.",
        "The wall clock was set back while the master ran: lease ages are unreliable.",
        "Does not look at record order.",
        "Check the host clock (NTP)", None;
    "expired-lease", Info, "protocol",
        "An active unix lease at least the TTL old.",
        "Resume reclaims it and requeues the work.",
        "recover_expired reclaims it.",
        "Nothing to do (leasejournal recover shows what resume requeues)", None;
    "deferred-done", Warning, "protocol",
        "A done in .dispatch_protocol_deferred.jsonl, which upstream never writes there.",
        "The file was edited or mixed up with the work journal.",
        "Applies it like any done.",
        "Inspect the file; compare with .work_leases.jsonl", None;
    "snapshot-corrupt", Error, "snapshot",
        "The snapshot does not parse, is not a JSON object, or is not valid UTF-8.",
        "An error because resuming loses state for good: the coordinator starts empty, every statistic (rewards, completions, failures, costs) is lost, and the master's next save overwrites the file.",
        "Catches the error and starts with an empty coordinator.",
        "Restore it from a backup (leasejournal diff compares them)", None;
    "snapshot-legacy-clock", Warning, "snapshot",
        "L4: no \"clock\":\"unix\": last_lease and last_complete are monotonic readings.",
        "Those times are meaningless after a reboot; restore zeroes them, which loses nothing that was still true.",
        "Restore zeroes them.",
        "leasejournal migrate --apply SNAPSHOT (writes exactly what upstream writes after restoring it)", Some(Remedy::MigrateSnapshot);
    "snapshot-inherited-lease", Info, "snapshot",
        "L6: a state lease of the previous coordinator epoch.",
        "Its MPI rank no longer owns anything.",
        "Restore makes it stale; the first recovery adds a failure to its task.",
        "Nothing to do", None;
    "snapshot-dropped-entry", Error, "snapshot",
        "An entry restore drops: not an object, a bad task_id, or a value it cannot convert.",
        "An error because resuming loses it for good: restore skips that task's statistics or lease, and the master's next save overwrites the file without it.",
        "Skips the entry.",
        "Fix the entry by hand before resuming", None;
    "snapshot-truncated", Warning, "snapshot",
        "More than 65536 stats or leases.",
        "The oldest entries are not restored; that is upstream's own retention window, which no fix can widen.",
        "Restore keeps only the last 65536 of each.",
        "Nothing to do", None;
    "snapshot-non-finite", Warning, "snapshot",
        "NaN or Infinity values.",
        "Statistics that cannot be averaged or compared.",
        "Restores infinities as they are and NaN as 0.0.",
        "Fix the values by hand", None;
    "snapshot-duplicate-member", Warning, "snapshot",
        "A JSON object with a repeated member name.",
        "One of the values is silently discarded.",
        "The last value wins.",
        "Fix the file by hand", None;
    "snapshot-lease-without-stats", Warning, "snapshot",
        "A state lease whose task has no stats entry.",
        "Its recovery failure is counted nowhere.",
        "Restores the lease; recovery skips the missing stats.",
        "Nothing to do", None;
    "stale-temp-file", Warning, "directory",
        "A *.tmp file left by a crashed compaction or snapshot save.",
        "It wastes space and may hide a failed rewrite; resume never reads it.",
        "Never cleans these up.",
        "Remove it once nothing is running (leasejournal removes its own under the lock)", None;
    "live-master", Warning, "directory",
        ".master-queue.lock is held: a master is running.",
        "The files are changing while they are read, and a second master refuses to start: the verdict is busy (exit 3).",
        "A second master refuses to start.",
        "Stop the master, or check again later", None;
    "leasejournal-backups", Info, "directory",
        "Backups (FILE.bak.<UTC>) and discard exports (FILE.discarded.<UTC>.jsonl) that leasejournal left next to the state files.",
        "Upstream never reads them; they only take space. They are the way back from a change, and an export holds discarded work.",
        "Ignores them.",
        "Remove them once the campaign has resumed and you need no way back: rm DIR/.*.bak.* DIR/.*.discarded.*.jsonl", None;
    "missing-journal", Info, "directory",
        "A state directory without .work_leases.jsonl.",
        "Nothing to recover, or the journal is disabled (SYMCC_WORK_LEASES=0).",
        "Starts with an empty journal.",
        "Nothing to do", None;
}

/// The catalog entry of a code.
pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
    CATALOG.iter().find(|c| c.code == code)
}

/// `n` and the noun, singular for exactly 1.
fn plural_en(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The code of the finding that explains why upstream ignored a line.
pub fn ignore_code(reason: IgnoreReason) -> &'static str {
    match reason {
        IgnoreReason::Blank => "blank-line",
        IgnoreReason::TornTail => "torn-tail",
        IgnoreReason::GluedRecord => "glued-record",
        IgnoreReason::Bom => "bom",
        IgnoreReason::DuplicateMember => "duplicate-member",
        IgnoreReason::NonFiniteNumber | IgnoreReason::PayloadNotFinite => "non-finite-number",
        IgnoreReason::TooDeep | IgnoreReason::IntegerTooLong | IgnoreReason::Corrupt => {
            "corrupt-line"
        }
        IgnoreReason::NotAnObject => "not-an-object",
        IgnoreReason::BadId => "bad-id",
        IgnoreReason::PayloadNotObject | IgnoreReason::RejectedField => "rejected-field",
        IgnoreReason::PayloadIdMismatch => "payload-id-mismatch",
        IgnoreReason::OrphanDone => "orphan-done",
        IgnoreReason::OrphanReclaim => "orphan-reclaim",
        IgnoreReason::UnknownOp => "unknown-op",
    }
}

/// Invariants of F314 the checks cover.
pub const CHECKED: &[&str] = &["L1", "L2", "L4", "L5", "L6"];
/// Invariants no file shows: L3 (runtime counters of refused leases) and
/// L7 (the master's authoritative result identity).
pub const NOT_CHECKABLE: &[&str] = &["L3", "L7"];

/// One problem, located.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// The stable code.
    pub code: &'static str,
    /// Its severity.
    pub severity: Severity,
    /// The file (or directory) it is in.
    pub file: String,
    /// 1-based line, where there is one.
    pub line: Option<u64>,
    /// Byte offset, where there is one.
    pub offset: Option<u64>,
    /// Work or task id, where there is one.
    pub id: Option<String>,
    /// One line saying what is wrong.
    pub message: String,
    /// The command line that fixes it (see [`Remedy`]), or `None`.
    pub fix: Option<String>,
    /// What fixes it (the catalog's remedy, unless this finding is one the
    /// remedy cannot fix).
    #[serde(skip)]
    pub remedy: Option<Remedy>,
}

/// Settings of a verification.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The present, in Unix seconds.
    pub now: f64,
    /// Leases at least this old are expired (0: all, as resume does).
    pub ttl: f64,
    /// Clock tolerance for future leases and regressions.
    pub skew: f64,
    /// Examples kept per code (0: all). Counts stay exact.
    pub max_examples: usize,
    /// Codes to leave out entirely.
    pub ignore: BTreeSet<String>,
}

/// Findings of one run: exact counts, bounded examples.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    /// Kept findings, in discovery order.
    pub examples: Vec<Finding>,
    /// Findings per code (exact).
    pub counts: BTreeMap<&'static str, u64>,
    /// Findings per severity (exact).
    pub by_severity: BTreeMap<Severity, u64>,
    /// Findings per file and code (exact), files in discovery order.
    pub by_file: Vec<(String, BTreeMap<&'static str, u64>)>,
    /// The remedies the findings call for.
    pub remedies: BTreeSet<Remedy>,
}

/// The id a finding is about, formatted only if the finding is kept.
#[derive(Clone, Copy, Debug)]
pub enum Id<'a> {
    /// A work id.
    Work(WorkId),
    /// A task id (already text).
    Text(&'a str),
}

/// A place in a file.
#[derive(Clone, Copy, Debug, Default)]
pub struct At<'a> {
    /// 1-based line.
    pub line: Option<u64>,
    /// Byte offset.
    pub offset: Option<u64>,
    /// Id.
    pub id: Option<Id<'a>>,
}

impl Findings {
    /// Records a finding with its severity and remedy; the message is
    /// built only if it is kept.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        settings: &Settings,
        code: &'static str,
        severity: Severity,
        remedy: Option<Remedy>,
        file: &str,
        at: At<'_>,
        message: impl FnOnce() -> String,
    ) {
        if settings.ignore.contains(code) {
            return;
        }
        let count = self.counts.entry(code).or_default();
        *count += 1;
        *self.by_severity.entry(severity).or_default() += 1;
        if let Some(r) = remedy {
            self.remedies.insert(r);
        }
        match self.by_file.last_mut() {
            Some((f, counts)) if f == file => *counts.entry(code).or_default() += 1,
            _ => match self.by_file.iter_mut().find(|(f, _)| f == file) {
                Some((_, counts)) => *counts.entry(code).or_default() += 1,
                None => self
                    .by_file
                    .push((file.to_string(), BTreeMap::from([(code, 1)]))),
            },
        }
        if settings.max_examples == 0 || *count <= settings.max_examples as u64 {
            self.examples.push(Finding {
                code,
                severity,
                file: file.to_string(),
                line: at.line,
                offset: at.offset,
                id: at.id.map(|id| match id {
                    Id::Work(w) => w.to_hex(),
                    Id::Text(t) => t.to_string(),
                }),
                message: message(),
                fix: None,
                remedy,
            });
        }
    }

    /// Records a finding at the catalog's severity.
    pub fn add(
        &mut self,
        settings: &Settings,
        code: &'static str,
        file: &str,
        at: At<'_>,
        message: impl FnOnce() -> String,
    ) {
        let info = lookup(code);
        let severity = info.map_or(Severity::Error, |c| c.severity);
        let remedy = info.and_then(|c| c.remedy);
        self.push(settings, code, severity, remedy, file, at, message);
    }

    /// The worst severity found.
    pub fn worst(&self) -> Option<Severity> {
        self.by_severity.keys().next_back().copied()
    }

    /// Adds another set of findings.
    pub fn extend(&mut self, other: Findings) {
        self.examples.extend(other.examples);
        for (code, n) in other.counts {
            *self.counts.entry(code).or_default() += n;
        }
        for (sev, n) in other.by_severity {
            *self.by_severity.entry(sev).or_default() += n;
        }
        for (file, counts) in other.by_file {
            match self.by_file.iter_mut().find(|(f, _)| *f == file) {
                Some((_, mine)) => {
                    for (code, n) in counts {
                        *mine.entry(code).or_default() += n;
                    }
                }
                None => self.by_file.push((file, counts)),
            }
        }
        self.remedies.extend(other.remedies);
    }
}

/// Whether any invalid byte of `raw` sits inside a JSON string (where its
/// deletion changes a value).
fn invalid_bytes_inside_string(raw: &[u8]) -> bool {
    let mut in_string = false;
    let mut escaped = false;
    let mut invalid_at = Vec::new();
    let mut pos = 0;
    for chunk in raw.utf8_chunks() {
        pos += chunk.valid().len();
        invalid_at.push(pos..pos + chunk.invalid().len());
        pos += chunk.invalid().len();
    }
    let mut ranges = invalid_at.into_iter().filter(|r| !r.is_empty()).peekable();
    for (i, &b) in raw.iter().enumerate() {
        while ranges.peek().is_some_and(|r| r.end <= i) {
            ranges.next();
        }
        if ranges.peek().is_some_and(|r| r.contains(&i)) {
            if in_string {
                return true;
            }
            continue;
        }
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        }
    }
    false
}

struct JournalChecks<'s> {
    settings: &'s Settings,
    file: String,
    deferred: bool,
    findings: Findings,
    last_unix_time: Option<f64>,
    /// Take the shortcut for plain records ([`JournalChecks::plain_unix_time`]);
    /// off only to check that the shortcut changes nothing.
    shortcut: bool,
}

impl Observer for JournalChecks<'_> {
    fn line(&mut self, event: &LineEvent<'_>) {
        // Every check below must either pass on a plain record or be
        // repeated in `plain_unix_time`'s conditions.
        if self.shortcut
            && let Some(t) = self.plain_unix_time(event)
        {
            // Nearly every line: only the clock can be wrong.
            if self
                .last_unix_time
                .is_none_or(|prev| t >= prev - self.settings.skew)
            {
                self.last_unix_time = Some(t);
                return;
            }
        }
        let s = self.settings;
        let file = self.file.as_str();
        let f = &mut self.findings;
        let line = Some(event.number);
        let offset = Some(event.offset);
        let record = match &event.classified.kind {
            LineKind::Record(r) => Some(r),
            _ => None,
        };
        let id = match &event.classified.kind {
            LineKind::Record(r) => Some(Id::Work(r.id)),
            LineKind::Corrupt {
                glued: Some((_, r)),
                ..
            } => Some(Id::Work(r.id)),
            _ => None,
        };
        let at = At { line, offset, id };

        if event.classified.invalid_utf8 > 0 {
            let n = event.classified.invalid_utf8;
            if invalid_bytes_inside_string(event.content) {
                f.add(s, "invalid-utf8", file, at, || {
                    format!(
                        "{} inside a string: deleting them changes the value",
                        plural_en(n as u64, "invalid UTF-8 byte", "invalid UTF-8 bytes")
                    )
                });
            } else {
                f.add(s, "invalid-utf8", file, at, || {
                    format!(
                        "{} between tokens, deleted before parsing",
                        plural_en(n as u64, "invalid UTF-8 byte", "invalid UTF-8 bytes")
                    )
                });
            }
        }

        let reason = match (event.effect, record) {
            (Some(effect), Some(record)) => IgnoreReason::of_effect(effect, record),
            _ => IgnoreReason::of_line(event.classified, event.terminator),
        };
        // A last line of nothing but NULs is zero fill, reported once by
        // the end-of-file check rather than as a torn append.
        let zero_fill = reason == Some(IgnoreReason::TornTail)
            && !event.content.is_empty()
            && event.content.iter().all(|&b| b == 0);
        if let Some(reason) = reason.filter(|_| !zero_fill) {
            // Records repair can put back: the line is then a glued record
            // (or a torn tail, or a BOM) with repair as its fix; a BOM in
            // front of no record hides nothing.
            let hidden = if matches!(event.classified.kind, LineKind::Corrupt { .. }) {
                crate::operations::repair::hidden_records(
                    event.content,
                    &event.classified.kind,
                    event.number == 1,
                    event.terminator == Terminator::None,
                )
            } else {
                Vec::new()
            };
            let code = match reason {
                IgnoreReason::Corrupt | IgnoreReason::TooDeep | IgnoreReason::IntegerTooLong
                    if !hidden.is_empty() =>
                {
                    "glued-record"
                }
                other => ignore_code(other),
            };
            let mut message = ignored_message(event, reason);
            if !hidden.is_empty() {
                if reason == IgnoreReason::GluedRecord {
                    message = "upstream ignores the whole line".into();
                }
                message = describe_hidden(&message, &hidden);
            }
            if reason == IgnoreReason::Bom && hidden.is_empty() {
                f.push(s, code, Severity::Warning, None, file, at, || {
                    format!("{message}; no record follows it, so nothing is lost")
                });
            } else {
                f.add(s, code, file, at, || message);
            }
        }

        let Some(record) = record else { return };
        if let Op::Lease(Ok(lease)) = &record.op
            && !lease.lenient.is_empty()
        {
            f.add(s, "lenient-field", file, at, || {
                lease
                    .lenient
                    .iter()
                    .map(|l| format!("{}: {}", l.field.as_str(), l.note))
                    .collect::<Vec<_>>()
                    .join("; ")
            });
        }
        if !record.unknown_fields.is_empty() {
            f.add(s, "unknown-field", file, at, || {
                format!(
                    "members upstream does not read: {}",
                    record.unknown_fields.join(", ")
                )
            });
        }
        if !record.canonical {
            f.add(s, "non-canonical-encoding", file, at, || {
                "not byte-identical to upstream's encoding of the same record".into()
            });
        }
        match event.effect {
            Some(Effect::TookOver { previous_worker }) => {
                let new = match &record.op {
                    Op::Lease(Ok(l)) => l.worker.to_string(),
                    _ => "?".into(),
                };
                f.add(s, "double-lease", file, at, || {
                    format!("leased to worker {new} while active for worker {previous_worker}: the last lease wins without a reclaim")
                });
            }
            Some(Effect::Reactivated) => f.add(s, "lease-after-done", file, at, || {
                "leased again after it was completed".into()
            }),
            _ => {}
        }
        if self.deferred && record.op == Op::Done {
            f.add(s, "deferred-done", file, at, || {
                "a done record in the deferred-dispatch journal".into()
            });
        }
        if record.marker == ClockMarker::Unix
            && let Some(t) = record.time
        {
            if let Some(prev) = self.last_unix_time
                && t < prev - s.skew
            {
                f.add(s, "clock-regression", file, at, || {
                    format!(
                        "time {} is {} before the previous record's {}",
                        crate::engine::json::float_repr(t),
                        crate::operations::inspect::duration(prev - t),
                        crate::engine::json::float_repr(prev)
                    )
                });
            }
            self.last_unix_time = Some(t);
        }
    }
}

impl JournalChecks<'_> {
    /// The time of a line that no check but the clock's can flag: a
    /// canonical, valid UTF-8 record with a unix clock and a time, nothing
    /// coerced or unknown, that leased a new id, completed or reclaimed an
    /// active one (and is not a done in the deferred journal).
    fn plain_unix_time(&self, event: &LineEvent<'_>) -> Option<f64> {
        let LineKind::Record(record) = &event.classified.kind else {
            return None;
        };
        let plain_op = match (&record.op, event.effect) {
            (Op::Lease(Ok(lease)), Some(Effect::Activated)) => lease.lenient.is_empty(),
            (Op::Done, Some(Effect::Completed { .. })) => !self.deferred,
            (Op::Reclaim, Some(Effect::Reclaimed { .. })) => true,
            _ => false,
        };
        if plain_op
            && event.classified.invalid_utf8 == 0
            && record.canonical
            && record.unknown_fields.is_empty()
            && record.marker == ClockMarker::Unix
        {
            record.time
        } else {
            None
        }
    }
}

/// Checks a journal's lines with and without the shortcut for plain
/// records and panics unless the findings agree (for the tests and the
/// fuzzer). Runs every example (`--max-examples 0`) on both clocks' edges:
/// a skew of zero.
pub fn check_shortcut(data: &[u8], deferred: bool) {
    struct Both<'s>(JournalChecks<'s>, JournalChecks<'s>);
    impl Observer for Both<'_> {
        fn line(&mut self, event: &LineEvent<'_>) {
            self.0.line(event);
            self.1.line(event);
        }
    }
    let settings = Settings {
        now: 1.9e9,
        ttl: 3600.0,
        skew: 0.0,
        max_examples: 0,
        ignore: BTreeSet::new(),
    };
    let checks = |shortcut| JournalChecks {
        settings: &settings,
        file: "journal".into(),
        deferred,
        findings: Findings::default(),
        last_unix_time: None,
        shortcut,
    };
    let mut both = Both(checks(true), checks(false));
    journal::scan(data, &mut both).expect("reading bytes");
    let describe = |f: &Findings| format!("{:?} {:?} {:?}", f.examples, f.counts, f.by_severity);
    assert_eq!(
        describe(&both.0.findings),
        describe(&both.1.findings),
        "the shortcut for plain records changes the findings"
    );
}

fn ignored_message(event: &LineEvent<'_>, reason: IgnoreReason) -> String {
    match (&event.classified.kind, event.effect) {
        (
            LineKind::Corrupt {
                glued: Some((at, record)),
                ..
            },
            _,
        ) => format!(
            "a {} record for {} glued at byte {at} onto a torn fragment: upstream ignores both",
            op_name(&record.op),
            record.id
        ),
        (LineKind::Corrupt { .. }, _) if reason == IgnoreReason::TornTail => format!(
            "{} bytes without a terminator that do not parse: a crash mid-append",
            event.content.len()
        ),
        (LineKind::Corrupt { reason, .. }, _) => match reason {
            CorruptReason::Syntax(m) => format!("not JSON: {m}"),
            other => other.to_string(),
        },
        (LineKind::Blank, _) => "blank line".into(),
        (LineKind::NotAnObject, _) => "valid JSON but not an object".into(),
        (LineKind::BadId, _) => "id missing or not 64 lowercase hex characters".into(),
        (LineKind::Record(record), Some(effect)) => match (effect, &record.op) {
            (_, Op::Lease(Err(rejection))) => match rejection {
                LeaseRejection::PayloadMismatch { computed } => {
                    format!("the payload hashes to {computed}: upstream ignores the lease")
                }
                other => format!("{other}: upstream ignores the lease"),
            },
            (
                Effect::DoneIgnored {
                    already_completed: true,
                },
                _,
            ) => "done for an id that is already completed".into(),
            (Effect::DoneIgnored { .. }, _) => "done for an id that is not active".into(),
            (Effect::ReclaimIgnored, _) => "reclaim for an id that is not active".into(),
            (Effect::UnknownOp { op }, _) => format!("unknown op {op:?}"),
            _ => String::new(),
        },
        (LineKind::Record(_), None) => String::new(),
    }
}

/// A line's message, told what records it hides.
fn describe_hidden(message: &str, hidden: &[crate::operations::repair::HiddenRecord]) -> String {
    use crate::operations::repair::Hidden;
    let records: Vec<String> = hidden
        .iter()
        .map(|h| {
            let how = match h.hidden {
                Hidden::Glued => "glued onto a torn fragment",
                Hidden::Bom => "behind a byte order mark",
                Hidden::ZeroFill => "followed by NUL bytes",
                Hidden::MissingNewline => "complete but for its newline",
                Hidden::Appended => "appended onto the record before it",
            };
            format!(
                "{} {} ({how})",
                op_name(&h.record.op),
                &h.record.id.to_hex()[..12]
            )
        })
        .collect();
    let what = if hidden.len() == 1 {
        "a record"
    } else {
        "records"
    };
    format!(
        "{message}; it hides {what} upstream never sees: {}",
        records.join(", ")
    )
}

fn op_name(op: &Op) -> &str {
    match op {
        Op::Lease(_) => "lease",
        Op::Done => "done",
        Op::Reclaim => "reclaim",
        Op::Unknown(op) => op,
    }
}

/// What verifying a journal found, with the replay it reached.
pub struct JournalVerification {
    /// The findings.
    pub findings: Findings,
    /// Totals of the read.
    pub summary: Summary,
    /// The replay state.
    pub replay: Replay,
}

/// Verifies a journal. `deferred` marks `.dispatch_protocol_deferred.jsonl`.
pub fn journal(
    src: impl journal::Source,
    file: &str,
    deferred: bool,
    settings: &Settings,
) -> io::Result<JournalVerification> {
    let mut checks = JournalChecks {
        settings,
        file: file.to_string(),
        deferred,
        findings: Findings::default(),
        last_unix_time: None,
        shortcut: true,
    };
    let scan = journal::scan(src, &mut checks)?;
    let mut findings = checks.findings;
    let s = settings;
    if scan.summary.tail.zero_bytes > 0 {
        let tail = &scan.summary.tail;
        let n = tail.zero_bytes;
        findings.add(
            s,
            "zero-filled-tail",
            file,
            At {
                line: Some(scan.summary.lines),
                offset: Some(tail.offset + tail.bytes - n),
                id: None,
            },
            || format!("{n} NUL bytes at the end of the file"),
        );
    }
    if scan.summary.tail.state == journal::TailState::Unterminated {
        let tail = &scan.summary.tail;
        findings.add(
            s,
            "unterminated-tail",
            file,
            At {
                line: Some(scan.summary.lines),
                offset: Some(tail.offset),
                id: None,
            },
            || {
                format!(
                    "the last record ({} bytes) has no newline: the next append glues onto it",
                    tail.bytes
                )
            },
        );
    }
    for (id, active) in scan.replay.active_sorted() {
        let at = At {
            line: Some(active.line),
            offset: Some(active.offset),
            id: Some(Id::Work(*id)),
        };
        match active.clock {
            Clock::Legacy => findings.add(s, "legacy-clock-lease", file, at, || {
                format!(
                    "active lease of worker {} has a monotonic time ({}) from an earlier boot",
                    active.worker,
                    crate::engine::json::float_repr(active.time)
                )
            }),
            Clock::Unix => {
                let age = s.now - active.time;
                if active.time > s.now + s.skew {
                    findings.add(s, "future-lease", file, at, || {
                        format!(
                            "active lease of worker {} is dated {} after now",
                            active.worker,
                            crate::operations::inspect::duration(-age)
                        )
                    });
                } else if s.ttl == 0.0 || age >= s.ttl {
                    findings.add(s, "expired-lease", file, at, || {
                        format!(
                            "active lease of worker {} is {} old (TTL {}): resume reclaims it",
                            active.worker,
                            crate::operations::inspect::duration(age.max(0.0)),
                            crate::operations::inspect::duration(s.ttl)
                        )
                    });
                }
            }
        }
    }
    Ok(JournalVerification {
        findings,
        summary: scan.summary,
        replay: scan.replay,
    })
}

/// The findings of resume's forecasts (`(file, forecast)` in the order
/// resume reads the journals, duplicates already marked): work it drops
/// (`seed-missing`) and work it queues twice (`requeued-twice`).
pub fn resume(
    forecasts: &[(String, crate::operations::recover::Forecast)],
    settings: &Settings,
) -> Findings {
    use crate::operations::recover::ResumeOutcome;
    let mut f = Findings::default();
    for (file, forecast) in forecasts {
        for r in &forecast.reclaims {
            let at = At {
                line: Some(r.lease.line),
                offset: None,
                id: Some(Id::Work(r.lease.id)),
            };
            if let ResumeOutcome::Dropped { reason } = &r.outcome {
                f.add(settings, "seed-missing", file, at, || {
                    format!(
                        "active lease of worker {}: resume reclaims it and drops its work, because {reason}",
                        r.lease.worker
                    )
                });
            }
            if let Some((other, id)) = &r.duplicate_of {
                f.add(settings, "requeued-twice", file, at, || {
                    format!(
                        "resume rebuilds it into the same work item as {} in {other}: the work is queued twice",
                        &id.to_hex()[..12]
                    )
                });
            }
        }
    }
    f
}

/// Verifies a snapshot's bytes.
pub fn snapshot(bytes: &[u8], file: &str, settings: &Settings) -> Findings {
    let s = settings;
    let mut f = Findings::default();
    let snap = snapshot::read(bytes);
    let none = At::default();
    match &snap.parse {
        Err(e) => {
            let e = e.to_string();
            f.add(s, "snapshot-corrupt", file, none, || {
                format!("does not parse ({e}): upstream starts empty and every statistic is lost")
            });
            return f;
        }
        Ok(_) if !snap.is_object => {
            f.add(s, "snapshot-corrupt", file, none, || {
                "not a JSON object: upstream's restore ignores it and starts empty".into()
            });
            return f;
        }
        Ok(stats) => {
            if stats.duplicate_members > 0 {
                let n = stats.duplicate_members;
                f.add(s, "snapshot-duplicate-member", file, none, || {
                    format!(
                        "{}: the last value of each wins",
                        plural_en(n, "repeated member name", "repeated member names")
                    )
                });
            }
            if stats.nonfinite_constants > 0 {
                let n = stats.nonfinite_constants;
                f.add(s, "snapshot-non-finite", file, none, || {
                    plural_en(n, "NaN/Infinity constant", "NaN/Infinity constants")
                });
            }
        }
    }
    if !snap.unix_clock {
        f.add(s, "snapshot-legacy-clock", file, none, || {
            "no \"clock\":\"unix\": last_lease/last_complete are monotonic and restore zeroes them"
                .into()
        });
    }
    let c = &snap.changes;
    if c.stats_truncated + c.leases_truncated > 0 {
        f.add(s, "snapshot-truncated", file, none, || {
            format!(
                "{} stats and {} leases before the last 65536 are never read",
                c.stats_truncated, c.leases_truncated
            )
        });
    }
    for member in &c.ignored_members {
        f.add(s, "snapshot-dropped-entry", file, none, || {
            format!("\"{member}\" is not a list: restore ignores all of it")
        });
    }
    for d in &c.dropped {
        let at = At {
            id: d.task_id.as_deref().map(Id::Text),
            ..At::default()
        };
        f.add(s, "snapshot-dropped-entry", file, at, || {
            format!("{}[{}]: {}", list_name(d.list), d.index, d.reason)
        });
    }
    if let Some(restored) = &snap.restored {
        let infinite = restored
            .stats
            .iter()
            .filter(|t| {
                !t.reward.is_finite()
                    || !t.elapsed.is_finite()
                    || !t.last_lease.is_finite()
                    || !t.last_complete.is_finite()
            })
            .count();
        if infinite > 0
            && snap
                .parse
                .as_ref()
                .is_ok_and(|p| p.nonfinite_constants == 0)
        {
            f.add(s, "snapshot-non-finite", file, none, || {
                format!("{infinite} stats entries restore to an infinite value")
            });
        }
        for lease in &restored.leases {
            let at = At {
                id: Some(Id::Text(&lease.task_id)),
                ..At::default()
            };
            f.add(s, "snapshot-inherited-lease", file, at, || {
                format!(
                    "state lease of worker {} from the previous coordinator epoch: restore makes it stale",
                    lease.worker
                )
            });
        }
    }
    for task in &c.leases_without_stats {
        let at = At {
            id: Some(Id::Text(task)),
            ..At::default()
        };
        f.add(s, "snapshot-lease-without-stats", file, at, || {
            "a state lease whose task has no stats entry".into()
        });
    }
    f
}

fn list_name(list: snapshot::List) -> &'static str {
    match list {
        snapshot::List::Stats => "stats",
        snapshot::List::Leases => "leases",
    }
}

/// Verifies what a state directory's listing shows.
pub fn directory(
    dir: &str,
    has_work_journal: bool,
    (temp_files, backups): (&[TempFile], &[TempFile]),
    lock: &MasterLock,
    settings: &Settings,
) -> Findings {
    let s = settings;
    let mut f = Findings::default();
    if !backups.is_empty() {
        let bytes: u64 = backups.iter().map(|b| b.bytes).sum();
        f.add(s, "leasejournal-backups", dir, At::default(), || {
            format!(
                "{} left by leasejournal, {bytes} bytes in all: {}",
                if backups.len() == 1 {
                    "1 backup or export".to_string()
                } else {
                    format!("{} backups and exports", backups.len())
                },
                backups
                    .iter()
                    .map(|b| b.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
    }
    for t in temp_files {
        f.add(s, "stale-temp-file", dir, At::default(), || {
            format!("{} ({} bytes) left by a crashed rewrite", t.name, t.bytes)
        });
    }
    if lock.held == Some(true) {
        let pids = lock
            .holders
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        f.add(s, "live-master", dir, At::default(), || {
            format!(".master-queue.lock is held by pid {pids}: a master is running")
        });
    }
    if !has_work_journal {
        f.add(s, "missing-journal", dir, At::default(), || {
            "no .work_leases.jsonl: nothing to recover".into()
        });
    }
    f
}

/// The go/no-go answer of `verify`, one per exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Exit 0: every path checked, no error finding, no live master.
    Go,
    /// Exit 1: at least one error finding (or warning, with `--strict`).
    NoGo,
    /// Exit 2: a path could not be checked.
    Incomplete,
    /// Exit 3: a live master holds `.master-queue.lock` of a checked
    /// directory.
    Busy,
}

impl Verdict {
    /// The verdict of one checked path's findings.
    pub fn of(findings: &Findings, strict: bool, busy: bool) -> Verdict {
        if busy {
            return Verdict::Busy;
        }
        match findings.worst() {
            Some(Severity::Error) => Verdict::NoGo,
            Some(Severity::Warning) if strict => Verdict::NoGo,
            _ => Verdict::Go,
        }
    }

    /// The verdict of a whole run: busy before incomplete before no-go.
    pub fn overall(targets: impl IntoIterator<Item = Verdict>, incomplete: bool) -> Verdict {
        let worst = targets.into_iter().max().unwrap_or(Verdict::Go);
        match worst {
            Verdict::Busy => Verdict::Busy,
            _ if incomplete => Verdict::Incomplete,
            other => other,
        }
    }

    /// The lowercase name (`go`, `no-go`, `incomplete`, `busy`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Go => "go",
            Verdict::NoGo => "no-go",
            Verdict::Incomplete => "incomplete",
            Verdict::Busy => "busy",
        }
    }
}

/// Quotes `text` for a POSIX shell when it holds anything but plain path
/// characters, so a remedy can be pasted as it is printed.
pub fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./,:@%+=-".contains(&b));
    // A path that starts with a dash would read as an option.
    let text = if text.starts_with('-') {
        format!("./{text}")
    } else {
        text.to_string()
    };
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Where a checked path's findings are fixed.
#[derive(Clone, Debug)]
pub struct RemedyTargets {
    /// The path `repair` takes: the checked journal or state directory
    /// (none for standard input).
    pub repair: Option<String>,
    /// The snapshot `migrate` takes, if the checked path holds one.
    pub snapshot: Option<String>,
}

impl RemedyTargets {
    /// The command line of a remedy.
    pub fn command(&self, remedy: Remedy) -> Option<String> {
        match remedy {
            Remedy::Repair => self
                .repair
                .as_deref()
                .map(|p| format!("leasejournal repair --apply {}", shell_quote(p))),
            Remedy::MigrateSnapshot => self
                .snapshot
                .as_deref()
                .map(|p| format!("leasejournal migrate --apply {}", shell_quote(p))),
        }
    }

    /// Fills in each finding's `fix` and returns the remedies these
    /// findings' codes call for (all of them, not only the kept examples).
    pub fn apply(&self, findings: &mut Findings) -> Vec<(Remedy, String)> {
        for f in &mut findings.examples {
            f.fix = f.remedy.and_then(|r| self.command(r));
        }
        findings
            .remedies
            .iter()
            .filter_map(|&r| self.command(r).map(|c| (r, c)))
            .collect()
    }
}

/// The commands to run, in order: every repair, then every migration;
/// each once, in the order of the paths within each kind.
pub fn next_steps(per_target: &[Vec<(Remedy, String)>]) -> Vec<String> {
    let mut next: Vec<String> = Vec::new();
    for remedy in [Remedy::Repair, Remedy::MigrateSnapshot] {
        for (r, command) in per_target.iter().flatten() {
            if *r == remedy && !next.contains(command) {
                next.push(command.clone());
            }
        }
    }
    next
}

/// One checked path.
#[derive(Debug, Serialize)]
pub struct TargetReport {
    /// The path as given.
    pub path: String,
    /// `journal`, `snapshot` or `directory`.
    pub kind: &'static str,
    /// Its verdict (`go`, `no-go` or `busy`).
    pub verdict: Verdict,
    /// Findings per code.
    pub counts: BTreeMap<&'static str, u64>,
    /// Pids holding the directory's `.master-queue.lock`, from
    /// `/proc/locks` (a directory, or a file inside one).
    pub master_pids: Vec<i64>,
    /// That lock file, when it is held.
    pub master_lock: Option<String>,
}

/// One file's findings per code.
#[derive(Debug, Serialize)]
pub struct FileCounts {
    /// The file (or directory) as findings name it.
    pub file: String,
    /// Findings per code.
    pub counts: BTreeMap<&'static str, u64>,
}

/// A path that could not be checked.
#[derive(Debug, Serialize)]
pub struct CheckError {
    /// The path.
    pub path: String,
    /// Why.
    pub message: String,
}

/// The settings echoed in the report.
#[derive(Debug, Serialize)]
pub struct SettingsReport {
    /// `--now`
    pub now: f64,
    /// `--ttl`
    pub ttl: f64,
    /// `--skew`
    pub skew: f64,
    /// `--strict`
    pub strict: bool,
    /// `--max-examples`
    pub max_examples: usize,
    /// `--ignore`
    pub ignored_codes: Vec<String>,
}

/// The version of the `verify --format json` contract.
pub const VERIFY_SCHEMA_VERSION: u32 = 2;

/// The `verify --format json` document.
#[derive(Debug, Serialize)]
pub struct VerifyReport {
    /// Contract version ([`VERIFY_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Overall verdict.
    pub verdict: Verdict,
    /// The process's exit status (0 go, 1 no-go, 2 incomplete, 3 busy).
    pub exit_code: u8,
    /// Findings (at most --max-examples per code and target).
    pub findings: Vec<Finding>,
    /// The commands that fix what was found, in the order to run them;
    /// then run verify again. Empty while a master is running (busy): the
    /// writing commands refuse its directory.
    pub next: Vec<String>,
    /// Exact counts per code over all targets.
    pub counts: BTreeMap<&'static str, u64>,
    /// Exact counts per severity over all targets.
    pub severities: BTreeMap<Severity, u64>,
    /// Exact counts per file and code, files in the order they were read.
    pub files: Vec<FileCounts>,
    /// F314 invariants checked.
    pub checked: &'static [&'static str],
    /// Invariants files cannot show.
    pub not_checkable: &'static [&'static str],
    /// Per-path verdicts.
    pub targets: Vec<TargetReport>,
    /// Paths that could not be checked.
    pub errors: Vec<CheckError>,
    /// What was asked.
    pub settings: SettingsReport,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_codes_are_unique_and_cover_every_ignore_reason() {
        let mut seen = BTreeSet::new();
        for c in CATALOG {
            assert!(seen.insert(c.code), "duplicate {}", c.code);
        }
        assert_eq!(CATALOG.len(), 41);
        for reason in [
            IgnoreReason::Blank,
            IgnoreReason::TornTail,
            IgnoreReason::GluedRecord,
            IgnoreReason::Bom,
            IgnoreReason::DuplicateMember,
            IgnoreReason::NonFiniteNumber,
            IgnoreReason::TooDeep,
            IgnoreReason::IntegerTooLong,
            IgnoreReason::Corrupt,
            IgnoreReason::NotAnObject,
            IgnoreReason::BadId,
            IgnoreReason::PayloadNotObject,
            IgnoreReason::PayloadNotFinite,
            IgnoreReason::PayloadIdMismatch,
            IgnoreReason::RejectedField,
            IgnoreReason::OrphanDone,
            IgnoreReason::OrphanReclaim,
            IgnoreReason::UnknownOp,
        ] {
            assert!(lookup(ignore_code(reason)).is_some());
        }
    }

    #[test]
    fn remedies_quote_what_a_shell_would_split_or_read_as_an_option() {
        assert_eq!(shell_quote("/out/run1"), "/out/run1");
        assert_eq!(shell_quote("run 1"), "'run 1'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("-x"), "./-x");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn invalid_bytes_inside_and_outside_strings() {
        assert!(invalid_bytes_inside_string(b"{\"a\":\"x\xffy\"}"));
        assert!(!invalid_bytes_inside_string(b"{\"a\":\xff\"xy\"}"));
        assert!(!invalid_bytes_inside_string(b"{\"a\\\"\":1,\xff\"b\":2}"));
    }

    #[test]
    fn examples_are_bounded_but_counts_exact() {
        let settings = Settings {
            now: 0.0,
            ttl: 0.0,
            skew: 300.0,
            max_examples: 2,
            ignore: BTreeSet::from(["blank-line".to_string()]),
        };
        let mut f = Findings::default();
        for _ in 0..5 {
            f.add(&settings, "corrupt-line", "x", At::default(), || "m".into());
            f.add(&settings, "blank-line", "x", At::default(), || "m".into());
        }
        assert_eq!(f.examples.len(), 2);
        assert_eq!(f.counts.get("corrupt-line"), Some(&5));
        assert_eq!(f.counts.get("blank-line"), None);
        assert_eq!(f.worst(), Some(Severity::Warning));
    }
}
