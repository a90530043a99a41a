//! The finding catalog: every code `verify` reports, as the enum [`Code`],
//! with what the documentation says of it ([`CodeInfo`]: severity, scope,
//! meaning, why, upstream's behaviour, fix, remedy); and the findings
//! themselves ([`Findings`]): each one located and kept as an example while
//! there are fewer than `--max-examples` of its code, and every one counted
//! exactly, per code, severity and file.
//!
//! Codes are part of the public interface: never renamed or reused. A
//! finding names its code by variant, so a misspelt code does not compile;
//! the kebab-case name is what JSON, `--ignore` and `explain` use.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Serialize, Serializer};

use super::Settings;
use crate::engine::journal::WorkId;

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

/// Where a code applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// A journal's lines and records.
    Journal,
    /// The lease protocol, as the replay and resume's forecast show it.
    Protocol,
    /// A `.state_tasks.json` snapshot.
    Snapshot,
    /// A state directory's listing and lock.
    Directory,
    /// The digest ledger, `.state_shards/processed.NNN.log`.
    Ledger,
    /// A fenced lease table shared by several masters.
    Table,
}

impl Scope {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Journal => "journal",
            Scope::Protocol => "protocol",
            Scope::Snapshot => "snapshot",
            Scope::Directory => "directory",
            Scope::Ledger => "ledger",
            Scope::Table => "table",
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
    /// `leasejournal repair --apply --state-shards N DIR`: the digest
    /// ledger re-sharded to the count the next master start reads.
    ReshardLedger,
    /// `leasejournal repair --apply --all-masters-stopped ROOT`: a fenced
    /// lease table's damage moved aside, once every master using it, on
    /// every host, is stopped.
    RepairTable,
}

/// One entry of the catalog.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CodeInfo {
    /// The stable code.
    pub code: Code,
    /// Its severity, judged by one question: does resuming now lose,
    /// duplicate or misattribute work? (`error`: yes; `warning`: a loss
    /// that already happened and that resuming cannot make worse, or
    /// something worth a look; `info`: no.)
    pub severity: Severity,
    /// Where it applies.
    pub scope: Scope,
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

/// Each row names the variant and its code once; the enum, [`Code::ALL`],
/// the names and the table indexed by the variant all come from it, so
/// they cannot disagree.
macro_rules! catalog {
    ($( $variant:ident $code:literal, $sev:ident, $scope:ident, $meaning:literal, $why:literal, $upstream:literal, $fix:literal, $remedy:expr; )*) => {
        /// A finding code. Its JSON form and command-line spelling is the
        /// kebab-case name ([`Code::as_str`]); what it means is in the
        /// catalog ([`Code::info`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Code {
            $( #[doc = concat!("`", $code, "`")] $variant, )*
        }

        impl Code {
            /// Every code, in the order the documentation lists them.
            pub const ALL: &[Code] = &[ $( Code::$variant, )* ];

            /// The kebab-case name, as reports print it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Code::$variant => $code, )*
                }
            }
        }

        /// The catalog, in the order of [`Code::ALL`]: indexed by the variant.
        const CATALOG: &[CodeInfo] = &[
            $( CodeInfo { code: Code::$variant, severity: Severity::$sev, scope: Scope::$scope, meaning: $meaning, why: $why, upstream: $upstream, fix: $fix, remedy: $remedy }, )*
        ];
    };
}

const REPAIR: Option<Remedy> = Some(Remedy::Repair);
const REPAIR_TABLE: Option<Remedy> = Some(Remedy::RepairTable);

catalog! {
    NotAJournal "not-a-journal", Error, Journal,
        "A journal with bytes but no record, or whose lines are mostly not records (not JSON, not an object, no valid id).",
        "The master never writes such a file: it is another file under the journal's name (overwritten, mixed up, or the wrong path), and whatever the journal held is not there. Resuming from it starts with no record of the work it should remember.",
        "Ignores every line it cannot read and loads what is left, however little.",
        "Check the path; if the journal was overwritten, put back its latest backup (leasejournal rollback <file>.bak.<stamp>) or the master's own copy", None;
    TornTail "torn-tail", Error, Journal,
        "The last line has no terminator and does not parse: a crash mid-append.",
        "An error because resuming loses work: resume's first append (a reclaim, or with no active lease the next dispatch's lease) is concatenated onto the fragment, and on the next load both are lost as one corrupt line.",
        "Ignores the line silently, and appends onto it without checking.",
        "leasejournal repair --apply (cuts the fragment, keeping it in the backup; no lease is touched)", REPAIR;
    ZeroFilledTail "zero-filled-tail", Error, Journal,
        "The file ends in NUL bytes, as some filesystems leave it after a power loss.",
        "An error because resuming loses work: the NULs form an unterminated last line, and resume's first append glues onto it and is lost on the next load.",
        "Ignores the NUL line silently, and appends onto it.",
        "leasejournal repair --apply (cuts the zero fill, keeping it in the backup)", REPAIR;
    UnterminatedTail "unterminated-tail", Error, Journal,
        "The last record is complete but has no newline.",
        "An error because resuming loses work: upstream reads the record, but resume's first append is concatenated onto it, and on the next load both the record and the appended one are lost as one corrupt line.",
        "Reads the record, then appends onto it without a newline.",
        "leasejournal repair --apply (adds the newline)", REPAIR;
    GluedRecord "glued-record", Error, Journal,
        "A torn fragment with a complete record glued after it on one line.",
        "An error because resuming makes the loss permanent: the glued lease, done or reclaim never happened as far as upstream knows, so its work is not requeued, and the master's next compaction drops the line; repair can still bring the record back.",
        "Ignores the whole line silently.",
        "leasejournal repair --apply (splits the record back onto a line of its own; a glued reclaim that would take a lease away from resume is left out instead)", REPAIR;
    CorruptLine "corrupt-line", Warning, Journal,
        "A line that is not valid JSON (or nests too deep, or holds an integer beyond 4300 digits) and is not the last line.",
        "Whatever the line recorded was lost when it was written; resuming cannot make that worse. A corrupt line in the middle means the file was damaged or edited.",
        "Ignores the line silently.",
        "Look at it with leasejournal inspect --history; fix it by hand if you know what it held (the master's next compaction drops it)", None;
    InvalidUtf8 "invalid-utf8", Warning, Journal,
        "Bytes that are not valid UTF-8.",
        "Upstream deletes them before parsing. Between tokens that changes nothing; inside a string it changes the value, and a lease whose payload changed is reported as payload-id-mismatch too. Either way the loss, if any, already happened and resuming cannot make it worse.",
        "Deletes the bytes before parsing (errors=\"ignore\").",
        "leasejournal compact --apply rewrites the surviving records cleanly", None;
    Bom "bom", Error, Journal,
        "The first line starts with a UTF-8 byte order mark.",
        "An error because resuming makes the loss permanent: the first record is invisible to upstream, so its work is not requeued; repair can still bring it back.",
        "Ignores the first line: Python's json rejects the BOM.",
        "leasejournal repair --apply (removes the three BOM bytes, so the record counts again)", REPAIR;
    DuplicateMember "duplicate-member", Warning, Journal,
        "A JSON object with a repeated member name, at any depth.",
        "Upstream never saw the record; resuming cannot make that worse.",
        "Ignores the record (its loader rejects duplicates).",
        "Fix the line by hand (the master's next compaction drops it)", None;
    NonFiniteNumber "non-finite-number", Warning, Journal,
        "NaN, Infinity or -Infinity, or a payload number that overflows to infinity.",
        "Upstream never saw the record; resuming cannot make that worse.",
        "Ignores the record.",
        "Fix the line by hand (the master's next compaction drops it)", None;
    NotAnObject "not-an-object", Warning, Journal,
        "A line that is valid JSON but not an object.",
        "Nothing upstream writes looks like this: the file was edited or mixed with another. No record was lost to it.",
        "Ignores the line.",
        "leasejournal compact --apply drops it", None;
    BlankLine "blank-line", Info, Journal,
        "A line with only whitespace.",
        "Harmless; upstream never writes one.",
        "Ignores the line.",
        "Nothing to do (compact removes it)", None;
    BadId "bad-id", Warning, Journal,
        "A record whose id is missing or not 64 lowercase hex characters.",
        "Upstream never saw the record; resuming cannot make that worse.",
        "Ignores the record without counting it.",
        "Fix the line by hand (the master's next compaction drops it)", None;
    PayloadIdMismatch "payload-id-mismatch", Warning, Journal,
        "A lease whose payload does not hash to its id: a spliced or edited record.",
        "Upstream never saw the lease, so its work is not recovered; resuming cannot make that worse.",
        "Ignores the lease.",
        "Find the real payload with leasejournal inspect --history ID", None;
    RejectedField "rejected-field", Warning, Journal,
        "A lease whose payload, worker, time, attempts or clock upstream refuses (not an object, negative, boolean, non-finite, unknown clock).",
        "Upstream never saw the lease, so its work is not recovered; resuming cannot make that worse.",
        "Ignores the lease.",
        "Fix the field by hand", None;
    LenientField "lenient-field", Warning, Journal,
        "A lease value upstream converts: \"worker\":\"3\", 2.9, attempts 0 or missing, time as a string, null or integer.",
        "Upstream accepts it, but it was not written by upstream, and the converted value may not be what was meant. Resume requeues the work all the same.",
        "Converts the value (int(worker or 0), float(time or 0.0), int(attempts or 1)).",
        "leasejournal compact --apply writes the converted values canonically", None;
    UnknownOp "unknown-op", Warning, Journal,
        "A record whose op is not lease, done or reclaim.",
        "It has no effect; it was written by another tool or by hand.",
        "Counts it as an event and ignores it.",
        "leasejournal compact --apply drops it", None;
    UnknownField "unknown-field", Info, Journal,
        "A record with members upstream does not read.",
        "Compaction drops them, upstream's and ours alike.",
        "Ignores the members.",
        "Nothing to do", None;
    NonCanonicalEncoding "non-canonical-encoding", Info, Journal,
        "A record not byte-identical to upstream's own encoding (key order, separators, escaping, number form).",
        "It was written by hand or by another tool.",
        "Reads it like any other record.",
        "leasejournal compact --apply rewrites records canonically", None;
    DoubleLease "double-lease", Warning, Protocol,
        "L1: a lease for an id that is already active.",
        "Ownership moved without a reclaim: two workers may have run the same work. That already happened; resume reclaims the survivor and requeues the work once, so it cannot make it worse.",
        "Replay lets the last lease win.",
        "Inspect with leasejournal inspect --history ID", None;
    LeaseAfterDone "lease-after-done", Warning, Protocol,
        "A completed id leased again.",
        "The work was dispatched twice; if the second lease is still active, resume requeues it once more. Nothing is lost.",
        "Replay re-activates the id.",
        "Nothing to undo; check what re-dispatched it", None;
    OrphanDone "orphan-done", Warning, Protocol,
        "L2: a done for an id that is not active (never leased, reclaimed, or done before its lease).",
        "A completion upstream does not count: if the lease is still active, resume requeues work that may be finished. Running it again costs time and loses nothing; no file tells which record is the truth.",
        "Ignores it.",
        "Inspect with leasejournal inspect --history ID", None;
    OrphanReclaim "orphan-reclaim", Info, Protocol,
        "A reclaim for an id that is not active.",
        "Harmless: reclaims are idempotent.",
        "Ignores it.",
        "Nothing to do", None;
    LegacyClockLease "legacy-clock-lease", Info, Protocol,
        "L4/L5: an active lease without the unix clock marker; its time is a monotonic reading from an earlier boot.",
        "Its time is meaningless now, but resume reclaims and requeues every non-unix lease whatever its time, so L5 holds without any change to the file.",
        "recover_expired reclaims every non-unix lease unconditionally, and resume requeues its work.",
        "Nothing to do; resume migrates it (leasejournal recover shows the forecast)", None;
    SeedMissing "seed-missing", Error, Protocol,
        "An active lease whose payload has no path, or whose seed path is not a file on this host, and that has no continuation.",
        "An error because resuming loses the work for good: resume reclaims the lease, cannot rebuild the work item and drops it, and nothing else remembers it. Relative paths are looked up from verify's working directory: run it where the master runs.",
        "_recoverable_work_item_from_lease_payload returns None; the reclaim is appended all the same.",
        "Restore the seed (mount the AFL output directory, run from the master's working directory) before resuming; leasejournal recover lists every item resume drops", None;
    RequeuedTwice "requeued-twice", Warning, Protocol,
        "Two active leases (in one journal, or one in each) that resume rebuilds into the same work item.",
        "Resume does not de-duplicate: the work is queued, and runs, twice. Nothing is lost.",
        "Appends the deferred journal's items, then the work journal's, to the queue as they come.",
        "Nothing to do; leasejournal recover shows both", None;
    FutureLease "future-lease", Warning, Protocol,
        "L4: an active unix-clock lease dated after now plus the skew.",
        "A wall-clock rollback or a bad time. Resume reclaims with a TTL of 0, so the work is requeued all the same; ages and TTL expiry at run time are unreliable.",
        "Reclaims it only when the TTL is 0 (as resume does).",
        "Check the host clock (NTP)", None;
    ClockRegression "clock-regression", Warning, Protocol,
        "A unix time earlier, by more than the skew, than a record appended before it.",
        "The wall clock was set back while the master ran: lease ages are unreliable. A run of leases sorted by id that begins while no lease is active is what a compaction writes, each lease with its own time: those leases are not judged, and what follows them must not fall behind any time before them or in them. Nor is a lease that repeats exactly (time, worker, payload) the lease a reclaim of its id dropped: work brought back with leasejournal restore keeps the time it was first leased at, and the record after it is judged against the latest time before it.",
        "Does not look at record order.",
        "Check the host clock (NTP)", None;
    ExpiredLease "expired-lease", Info, Protocol,
        "An active unix lease at least the TTL old.",
        "Resume reclaims it and requeues the work.",
        "recover_expired reclaims it.",
        "Nothing to do (leasejournal recover shows what resume requeues)", None;
    DeferredDone "deferred-done", Warning, Protocol,
        "A done in .dispatch_protocol_deferred.jsonl, which upstream never writes there.",
        "The file was edited or mixed up with the work journal.",
        "Applies it like any done.",
        "Inspect the file; compare with .work_leases.jsonl", None;
    SnapshotCorrupt "snapshot-corrupt", Error, Snapshot,
        "The snapshot does not parse, is not a JSON object, or is not valid UTF-8.",
        "An error because resuming loses state for good: the coordinator starts empty, every statistic (rewards, completions, failures, costs) is lost, and the master's next save overwrites the file.",
        "Catches the error and starts with an empty coordinator.",
        "Restore it from a backup (leasejournal diff compares them)", None;
    SnapshotLegacyClock "snapshot-legacy-clock", Warning, Snapshot,
        "L4: no \"clock\":\"unix\": last_lease and last_complete are monotonic readings.",
        "Those times are meaningless after a reboot; restore zeroes them, which loses nothing that was still true.",
        "Restore zeroes them.",
        "leasejournal migrate --apply SNAPSHOT (writes exactly what upstream writes after restoring it)", Some(Remedy::MigrateSnapshot);
    SnapshotInheritedLease "snapshot-inherited-lease", Info, Snapshot,
        "L6: a state lease of the previous coordinator epoch.",
        "Its MPI rank no longer owns anything.",
        "Restore makes it stale; the first recovery adds a failure to its task.",
        "Nothing to do", None;
    SnapshotDroppedEntry "snapshot-dropped-entry", Error, Snapshot,
        "An entry restore drops: not an object, a bad task_id, or a value it cannot convert.",
        "An error because resuming loses it for good: restore skips that task's statistics or lease, and the master's next save overwrites the file without it.",
        "Skips the entry.",
        "Fix the entry by hand before resuming", None;
    SnapshotTruncated "snapshot-truncated", Warning, Snapshot,
        "More than 65536 stats or leases.",
        "The oldest entries are not restored; that is upstream's own retention window, which no fix can widen.",
        "Restore keeps only the last 65536 of each.",
        "Nothing to do", None;
    SnapshotNonFinite "snapshot-non-finite", Warning, Snapshot,
        "NaN or Infinity values.",
        "Statistics that cannot be averaged or compared.",
        "Restores infinities as they are and NaN as 0.0.",
        "Fix the values by hand", None;
    SnapshotDuplicateMember "snapshot-duplicate-member", Warning, Snapshot,
        "A JSON object with a repeated member name.",
        "One of the values is silently discarded.",
        "The last value wins.",
        "Fix the file by hand", None;
    SnapshotLeaseWithoutStats "snapshot-lease-without-stats", Warning, Snapshot,
        "A state lease whose task has no stats entry.",
        "Its recovery failure is counted nowhere.",
        "Restores the lease; recovery skips the missing stats.",
        "Nothing to do", None;
    StaleTempFile "stale-temp-file", Warning, Directory,
        "A *.tmp file left by a crashed compaction or snapshot save.",
        "It wastes space and may hide a failed rewrite; resume never reads it.",
        "Never cleans these up.",
        "Remove it once nothing is running (leasejournal removes its own under the lock)", None;
    LiveMaster "live-master", Warning, Directory,
        ".master-queue.lock is held: a master is running.",
        "The files are changing while they are read, and a second master refuses to start: the verdict is busy (exit 3).",
        "A second master refuses to start.",
        "Stop the master, or check again later", None;
    MasterUnseen "master-unseen", Error, Directory,
        "The state directory is on a file system other hosts share (NFS, Lustre, GPFS, CephFS, BeeGFS, …), or this process runs in a PID namespace of its own (a container), and /proc/locks cannot show whether a master on another host, or outside the namespace, holds .master-queue.lock.",
        "/proc/locks lists only this host's locks, and in a container only the locks of its own processes: a master running on a compute node is invisible from a login node, one on the host invisible from a container, and resuming a second master on the same directory makes two masters hand out the same work. Where flock on the mount stays on each host (Lustre localflock, NFS local_lock=flock), not even the master's own lock keeps the second one out. The verdict is incomplete (exit 2), not go.",
        "Takes flock(LOCK_EX|LOCK_NB) on .master-queue.lock at start; whether that excludes a master on another host depends on the mount.",
        "Run verify on the host that runs the master, outside any container; or pass --remote-master probe where flock reaches other hosts (it takes and drops the lock at once; a master starting in that instant fails to start); or pass --remote-master none once you know no master runs on any other host or outside this container", None;
    LeasejournalBackups "leasejournal-backups", Info, Directory,
        "Backups (FILE.bak.<UTC>) and discard exports (FILE.discarded.<UTC>.jsonl) that leasejournal left next to the state files.",
        "Upstream never reads them; they only take space. They are the way back from a change, and an export holds discarded work.",
        "Ignores them.",
        "Remove them once the campaign has resumed and you need no way back: rm DIR/.*.bak.* DIR/.*.discarded.*.jsonl", None;
    MissingJournal "missing-journal", Info, Directory,
        "A state directory without .work_leases.jsonl.",
        "Nothing to recover, or the journal is disabled (SYMCC_WORK_LEASES=0).",
        "Starts with an empty journal.",
        "Nothing to do", None;
    LedgerUnreadShards "ledger-unread-shards", Error, Ledger,
        "Digest ledger files numbered at or above the shard count the next master start reads (--state-shards, SYMCC_STATE_SHARDS, or min(64, workers)) hold digests that no file below it holds.",
        "An error because resuming duplicates work wholesale: the AFL rescan dispatches every input whose digest is only in those files again (going from 16 to 8 shards lost 98 of 200 digests in a test against the real class). The count follows the worker count unless SYMCC_STATE_SHARDS is set, so resuming with fewer workers is enough.",
        "load_recent opens only the files of range(shard_count); the count is written nowhere.",
        "leasejournal repair --apply --state-shards N DIR moves the digests into the files N shards read (under the master's lock, with a backup); or resume with a count that reads every file (SYMCC_STATE_SHARDS set to a count the files fit)", Some(Remedy::ReshardLedger);
    LedgerTornTail "ledger-torn-tail", Error, Ledger,
        "A digest ledger file's last line has no newline and is not a digest: a torn append, or NUL bytes a power loss left.",
        "An error because resuming loses a digest: the master's next add writes its digest and a newline right after the fragment, the two read back as one line that is no digest, and the AFL rescan of the start after dispatches that input again. The fragment's own digest is lost already.",
        "add appends digest + \"\\n\" without ending a torn line first; load_recent ignores the glued line.",
        "leasejournal repair --apply DIR (seals the tail, keeping the fragment in the backup)", REPAIR;
    LedgerUnterminatedTail "ledger-unterminated-tail", Error, Ledger,
        "A digest ledger file's last line is a digest without its newline.",
        "An error because resuming loses two digests: upstream loads this one now, but the master's next add glues onto it, and from the start after neither is loaded: the AFL rescan dispatches both inputs again.",
        "Loads the digest; add appends onto it without a newline first.",
        "leasejournal repair --apply DIR (adds the newline)", REPAIR;
    LedgerIgnoredLine "ledger-ignored-line", Warning, Ledger,
        "A line of a digest ledger file that is not 64 lowercase hex digits once stripped (uppercase, the wrong length, not hex, NUL bytes, other text), other than a torn last line.",
        "Whatever digest it held is not loaded: the AFL rescan dispatches that input again, which then is recorded anew. That loss already happened; resuming cannot make it worse. A line of hex digits longer than 64 is a torn append the next one glued onto.",
        "load_recent deletes non-ASCII bytes, strips each line and ignores it unless it is a valid digest.",
        "Nothing brings the digest back: the input runs once more and is recorded again; look at the file if it was edited by hand", None;
    LedgerBlankLine "ledger-blank-line", Info, Ledger,
        "A line of a digest ledger file with nothing but white space (or bytes upstream deletes).",
        "Harmless; upstream's writer never writes one.",
        "Ignores the line.",
        "Nothing to do", None;
    LedgerMisplaced "ledger-misplaced", Info, Ledger,
        "Digests in a ledger file that their shard at the next start's count does not name (int(digest[:8], 16) % count is another file): the files were written with another count.",
        "Harmless to resume: upstream loads every digest of every file it reads, wherever it sits, and adds new ones to their own shard's file. Only a later, smaller count can leave them unread (ledger-unread-shards).",
        "Never checks which file a digest is in.",
        "Nothing to do", None;
    LedgerDuplicate "ledger-duplicate", Info, Ledger,
        "A digest on more than one line of the ledger.",
        "Harmless: upstream loads it into a set, once. The master adds a digest each time it sends or triages that input, without looking.",
        "No deduplication on write; a set on read.",
        "Nothing to do", None;
    LedgerOverLimit "ledger-over-limit", Warning, Ledger,
        "The ledger files the count reads hold more than 5,000,000 distinct digests (MAX_DEDUP_ENTRIES).",
        "Upstream keeps 5,000,000 of them and drops the rest, which ones depending on its string hash seed: the AFL rescan dispatches their inputs again. That is upstream's own limit, which no fix can widen.",
        "load_recent(MAX_DEDUP_ENTRIES) set.pop()s an arbitrary digest for each one past the limit.",
        "Nothing to do", None;
    LedgerNotAFile "ledger-not-a-file", Error, Ledger,
        "A shard file name the next start reads that is a directory, a FIFO, a socket or a device (a link to nothing is none: the master's next add creates the file it names).",
        "An error because resuming loses digests: upstream cannot read it, and every digest the next run adds to that shard is lost without a word, so the AFL rescan of each later start dispatches those inputs again. A FIFO there blocks the master's start until something writes to it.",
        "open() fails (or blocks) and load_recent skips the shard; add swallows the OSError.",
        "Move it aside while no master runs: the master creates the file with the next digest it adds", None;
    LedgerNotADirectory "ledger-not-a-directory", Error, Ledger,
        "The state directory's .state_shards is there but is not a directory: a regular file, a FIFO, a socket or a device.",
        "An error because the next master start cannot keep a digest ledger: upstream makes .state_shards with durable_makedirs, which raises NotADirectoryError for it, so the master does not start as configured (unless SYMCC_PERSISTENT_STATE turns the ledger off), and no digest of this campaign is recorded for the AFL rescan to skip.",
        "PersistentShardLedger.__init__ calls durable_makedirs(root): os.path.isdir(root) is false, NotADirectoryError.",
        "Move it aside while no master runs (keep it if it holds digests: its lines can be appended to .state_shards/processed.000.log and re-sharded with leasejournal repair --apply --state-shards N DIR); the master makes the directory at its next start", None;
    LedgerCountUnknown "ledger-count-unknown", Info, Ledger,
        "Neither --state-shards, SYMCC_STATE_SHARDS nor --workers says the shard count the next master start reads the digest ledger at.",
        "The ledger is judged at the smallest count that reads every file, so no file counts as unread; a start with fewer shards would leave some unread (ledger-unread-shards). The finding names the counts the files fit.",
        "Writes the count nowhere: it is SYMCC_STATE_SHARDS, or min(64, workers), at each start.",
        "Give the next start's count (--state-shards N or --workers N, or run verify where SYMCC_STATE_SHARDS is set as for the master) to judge it", None;
    LedgerOff "ledger-off", Info, Ledger,
        "SYMCC_PERSISTENT_STATE is 0, false, off or no: the next master start reads no digest ledger, and writes none.",
        "The AFL rescan then skips no input: it dispatches every input of the AFL queue again, those whose leases resume requeues too. That is what the setting asks for; nothing in the files is wrong.",
        "Makes no PersistentShardLedger: processed_content_hashes starts empty.",
        "Nothing to do, unless the setting is a mistake: unset it before resuming", None;
    TableRecordRaises "table-record-raises", Error, Table,
        "A fenced lease record upstream's reader raises on instead of rejecting: a status that is a list or an object (status in {…} cannot hash it: TypeError), or nesting deeper than Python's recursion limit (RecursionError).",
        "An error because no master can start: every scan (recover_expired at every master start, the steal loop, snapshot_counts) reads every record of its shards and nothing catches the exception, so the master stops at start-up, and a claim of that id stops it too.",
        "_valid_record evaluates record.get(\"status\") in {…}, which raises for an unhashable value; json.load raises RecursionError; neither is caught.",
        "leasejournal repair --apply --all-masters-stopped ROOT moves it into .leasejournal-quarantine/ (bytes kept), once every master using the table is stopped", REPAIR_TABLE;
    TableShardNotDirectory "table-shard-not-directory", Error, Table,
        "A shard directory's path of a fenced lease table (NNN/ below the shard count) that is a file, a FIFO or a device instead of a directory.",
        "An error because the master stops: a claim of any id of that shard calls durable_makedirs on the path, which raises NotADirectoryError, and the claim in _dispatch_to is not wrapped in a try. The scans skip the shard silently.",
        "os.listdir fails and the scans skip the shard; _bounded_advisory_lock's durable_makedirs raises.",
        "leasejournal repair --apply --all-masters-stopped ROOT moves it into .leasejournal-quarantine/, once every master using the table is stopped", REPAIR_TABLE;
    TableLockNotRegular "table-lock-not-regular", Error, Table,
        "A record's lock path (<id>.json.lock) that is a directory, a symbolic link, a FIFO or a device.",
        "An error because the master stops when it claims that id: opening the lock raises (IsADirectoryError for a directory; O_NOFOLLOW refuses a link; a FIFO fails the regular-file check), and the claim in _dispatch_to is not wrapped in a try. Target ids recur with their targets, so a target table's bad lock is met again.",
        "_bounded_advisory_lock: os.open(path, O_RDWR|O_CREAT|O_NOFOLLOW) and an S_ISREG check; the error propagates.",
        "leasejournal repair --apply --all-masters-stopped ROOT moves it into .leasejournal-quarantine/ (it is not a lock file; lock files are never removed)", REPAIR_TABLE;
    TableRecordRejected "table-record-rejected", Warning, Table,
        "A fenced lease record upstream's reader rejects: not UTF-8, a byte order mark, empty, torn or not JSON, not an object, schema not 1, an id that is not its file name, an unknown status, a payload that is not an object, no token, a non-finite or negative updated time, a commit that is not an object.",
        "The scans skip it, so whatever lease it held is recovered by no master (that loss already happened), and claim returns None for its id for ever: the master rejects any later dispatch of exactly that work and consumes it. Work ids rarely recur; target ids do.",
        "_read_record returns None (or _valid_record is false); claim: previous is None but the path exists, or the record is invalid: return None.",
        "leasejournal repair --apply --all-masters-stopped ROOT moves it into .leasejournal-quarantine/ (bytes kept), which unblocks the id", REPAIR_TABLE;
    TableCountMismatch "table-count-mismatch", Error, Table,
        "The records of a fenced lease table sit where another shard count puts them (int(id[:8], 16) % N names their directories), not where the count it was read with does.",
        "An error because masters started with this count lose the table: they read each record from the directory this count names, so they see almost none, recover none of its leases, claim its done and committing ids as if free, and do not fence masters that use the other count. Either the count given (--lease-shards, SYMCC_MULTI_MASTER_LEASE_SHARDS, or the default 256) is not the one the masters use, or the masters' count changed.",
        "Writes the count nowhere; every master reads and writes at its own SYMCC_MULTI_MASTER_LEASE_SHARDS.",
        "Check again with the count the masters run with (--lease-shards N, or SYMCC_MULTI_MASTER_LEASE_SHARDS as they have it); if they really run with this one, stop every master and move the records with leasejournal repair --apply --all-masters-stopped --lease-shards N ROOT, or start the masters with the count the records fit", None;
    TableMisplacedRecord "table-misplaced-record", Warning, Table,
        "A fenced lease record in a shard directory its id does not name at the shard count (int(id[:8], 16) % N), or in a directory no scan lists (at or beyond the count, a name upstream never builds): written with another shard count, or moved by hand.",
        "Upstream reads every record from the path its id names, so this one is invisible where it is: a leased record there is recovered by no master, a claim of its id by any master succeeds as if it were free (fencing is broken for it), and masters that use different counts do not fence each other at all. An error when the record is leased or committing and its own path holds nothing.",
        "The scans list range(shard_count) only and read record_path(id); claim looks only at record_path(id).",
        "Make every master use one count (SYMCC_MULTI_MASTER_LEASE_SHARDS); then leasejournal repair --apply --all-masters-stopped --lease-shards N ROOT moves each record to the path its id names, when that path is free", REPAIR_TABLE;
    TableUnreadDirectory "table-unread-directory", Warning, Table,
        "A directory of a fenced lease table's root that no scan at the shard count lists, holding records: a shard directory at or beyond the count, digits upstream never builds (5, 0005), or another name.",
        "Records there are invisible to every master at this count (see table-misplaced-record, reported for each). A shard directory beyond the count means a master ran with a larger SYMCC_MULTI_MASTER_LEASE_SHARDS, or the count shrank: masters with different counts hand out the same work. An error when it holds leased or committing records; an empty one is no finding.",
        "Lists only f\"{shard:03d}\" for shard in range(shard_count).",
        "Find which count the masters use; with all of them stopped, leasejournal repair --apply --all-masters-stopped --lease-shards N ROOT moves the records where that count reads them", REPAIR_TABLE;
    TableCommittingStranded "table-committing-stranded", Warning, Table,
        "A fenced lease record left in committing without a commit manifest, older than the TTL or owned by a dead master on this host: its master died between begin_commit and complete (SIGKILL, power loss, an exception in triage).",
        "Nothing upstream will ever clear it: claim refuses committing even at TTL 0, recover_expired skips it, abandon refuses it, and only the dead token could complete it. That dispatch ran at most once; part of its result may already be in the queue. Resuming cannot make that worse, and no repair can tell what the triage published.",
        "begin_commit (no manifest from the AFL master) is the irreversible fencing decision; the AFL master never calls recover_committing_records or replay_commit_once.",
        "Look at the seed and the queue if the result matters (inspect --history ID); otherwise nothing to do: the record only blocks its own id", None;
    TableExpiredLease "table-expired-lease", Warning, Table,
        "A leased fenced lease record at least the TTL old: no master heartbeats it.",
        "The next master start (and every master's idle moment) takes it through recover_expired and dispatches its work again; that is recovery, not loss. But the re-dispatch almost always gets a new id (the payload carries a per-dispatch algorithm token), so this record is never completed or replaced: every later start takes it again and the same work runs again each time. A master whose host cannot see the seed path skips it, leaving it for another.",
        "recover_expired_records returns leased records with now - updated >= ttl, oldest first, at most 4096 at a start; it never writes.",
        "Nothing to do before resuming; if the work has run again elsewhere, the record can only be left (deleting it would lose the work if it has not)", None;
    TableFutureUpdated "table-future-updated", Warning, Table,
        "A leased or committing fenced lease record updated later than now by more than the skew: a host's clock runs ahead, or was wrong when it wrote.",
        "A leased record in the future never expires until the clocks pass it: if its master died, no master recovers its work until then. Expiry is decided by now - updated on whichever host checks.",
        "claim and recover_expired compare now - updated with the TTL; a future time is never old enough (unless lease_ttl=0, which the AFL master never passes).",
        "Fix the clock of the host that wrote it; the record expires once the clocks pass its time", None;
    TableOwnerDead "table-owner-dead", Info, Table,
        "Fenced lease records (leased or committing) owned by nodename:pid of this host, where no process with that pid runs.",
        "Its leased records wait for the TTL, after which the next master start takes them; its committing ones are stranded (table-committing-stranded). A master restarted on this host gets a new owner string and does not take its own old leases before the TTL either.",
        "Owners are SYMCC_MASTER_ID or nodename:pid; liveness is never checked, only the TTL.",
        "Nothing to do: the TTL brings the leases back", None;
    TableLockHeld "table-lock-held", Info, Table,
        "A record lock of the fenced lease table that /proc/locks shows held on this host now.",
        "A master is inside one operation on that record (a claim, heartbeat, commit or completion takes milliseconds). One held for long stops every other master that claims that id when its lock wait (SYMCC_MULTI_MASTER_LOCK_ACQUIRE_TIMEOUT) runs out. Locks held on other hosts cannot be seen.",
        "flock(LOCK_EX|LOCK_NB) polled until the timeout; locks are never stolen by age.",
        "Nothing to do unless it stays held: then find the holder (the pid) and why it hangs", None;
    TableTempFile "table-temp-file", Info, Table,
        "A left-over <id>.json.<pid>.<time_ns>.tmp: a master died while writing a record.",
        "Harmless to the lease protocol: every scan ignores it, and the record it was going to replace is as it was. Nothing upstream ever removes it.",
        "_write_record unlinks its temporary file on an exception, not on a crash; no cleanup code exists.",
        "leasejournal repair --apply --all-masters-stopped ROOT moves it into .leasejournal-quarantine/", REPAIR_TABLE;
    TableProbeDir "table-probe-dir", Info, Table,
        "A .symcc-fs-probe-* or .symcc-fs-publication-probe-* directory in a fenced lease table's root: a master died during its start-up file-system probe.",
        "Harmless: the scans never list it. Nothing upstream ever removes it.",
        "probe_shared_state_filesystem makes and removes it at every master start.",
        "leasejournal repair --apply --all-masters-stopped ROOT moves it into .leasejournal-quarantine/ when its pid does not run here", REPAIR_TABLE;
    TableDoneRecords "table-done-records", Info, Table,
        "The done records of a fenced lease table, which every scan reads.",
        "Nothing upstream ever removes a done record: every master start and every idle moment lists and reads all of them, so the scans grow slower with the campaign. They suppress a repeat of exactly the same dispatch, which the per-dispatch algorithm token already makes rare.",
        "snapshot_counts and recover_expired read every record of every shard.",
        "Nothing to do; to shorten the scans, leasejournal repair --apply --all-masters-stopped --archive-done ROOT moves them to .leasejournal-archive/ (that exact work could then be claimed again)", None;
    TableOddRecord "table-odd-record", Info, Table,
        "A fenced lease record upstream accepts though its writer never writes it so: schema true or 1.0, an updated time as a string or a boolean, a member name twice, a work payload that does not hash to its id, a target record whose id is not its target's hash or that is not leased.",
        "Upstream reads it as a valid record (a target record in committing or done counts as free and is overwritten); nothing is lost. It means the record was edited or written by another tool.",
        "_valid_record checks schema == 1 (true and 1.0 pass), float(updated), and nothing of the payload's hash.",
        "Nothing to do; look at the record if it was not expected (inspect --history ID)", None;
    LeaseNotInLedger "lease-not-in-ledger", Warning, Protocol,
        "An active lease of .work_leases.jsonl whose input's digest (its payload's sha256) is in no file of the digest ledger.",
        "The master writes the lease before it sends the work and adds the digest only once the send succeeded: the work was most likely never sent. Resume requeues it, and the AFL rescan, which finds no digest, dispatches the same input again: it runs twice. Nothing is lost.",
        "_dispatch_to: work_leases.lease(), comm.send(), then hash_ledger.add(sha256); a crash in between leaves the lease without the digest.",
        "Nothing to do: the input runs twice and nothing is lost (leasejournal recover shows which inputs the rescan sees again)", None;
}

impl Code {
    /// Its catalog entry.
    pub fn info(self) -> &'static CodeInfo {
        &CATALOG[self as usize]
    }

    /// Its severity.
    pub fn severity(self) -> Severity {
        self.info().severity
    }

    /// The command that fixes it, when one does.
    pub fn remedy(self) -> Option<Remedy> {
        self.info().remedy
    }

    /// The code named `text` (kebab-case, as reports print it).
    pub fn parse(text: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == text)
    }

    /// The codes `text` could mean (the "did you mean" of `--ignore` and
    /// `explain`): the one most like it, if one is close enough to be a
    /// misspelling, then every code that has each of its words (`torn`:
    /// torn-tail, ledger-torn-tail), in catalog order.
    pub fn suggest(text: &str) -> Vec<Code> {
        let nearest = Code::ALL
            .iter()
            .map(|&c| (strsim::damerau_levenshtein(text, c.as_str()), c.as_str(), c))
            .filter(|(distance, name, _)| *distance <= 2.max(name.len() / 4))
            .min_by_key(|&(distance, name, _)| (distance, name))
            .map(|(_, _, c)| c);
        let words: Vec<&str> = text
            .split(['-', '_', ' '])
            .filter(|w| !w.is_empty())
            .collect();
        let mut out: Vec<Code> = nearest.into_iter().collect();
        if !words.is_empty() {
            for &c in Code::ALL {
                let parts: Vec<&str> = c.as_str().split('-').collect();
                if words.iter().all(|w| parts.contains(w)) && !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        out
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

// Codes order by name, not by catalog position: reports key their counts
// by code, and have always listed them alphabetically.
impl PartialOrd for Code {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Code {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
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
    pub code: Code,
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
    /// When no command fixes it and it keeps the verdict from go: what the
    /// operator must do, and that the verdict stays as it is until then.
    pub must_do: Option<String>,
    /// What fixes it (the catalog's remedy, unless this finding is one the
    /// remedy cannot fix).
    #[serde(skip)]
    pub remedy: Option<Remedy>,
}

/// Findings of one run: exact counts, bounded examples.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    /// Kept findings, in discovery order.
    pub examples: Vec<Finding>,
    /// Findings per code (exact).
    pub counts: BTreeMap<Code, u64>,
    /// Findings per severity (exact).
    pub by_severity: BTreeMap<Severity, u64>,
    /// Findings per file and code (exact), files in discovery order.
    pub by_file: Vec<(String, BTreeMap<Code, u64>)>,
    /// The remedies the findings call for.
    pub remedies: BTreeSet<Remedy>,
    /// The codes found since [`Findings::take_codes`] last ran, when they
    /// are being noted ([`Findings::noting_codes`]).
    noted: Option<Vec<Code>>,
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
        code: Code,
        severity: Severity,
        remedy: Option<Remedy>,
        file: &str,
        at: At<'_>,
        message: impl FnOnce() -> String,
    ) {
        if settings.ignore.contains(&code) {
            return;
        }
        if let Some(noted) = &mut self.noted {
            noted.push(code);
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
                must_do: None,
                remedy,
            });
        }
    }

    /// Records a finding at the catalog's severity.
    pub fn add(
        &mut self,
        settings: &Settings,
        code: Code,
        file: &str,
        at: At<'_>,
        message: impl FnOnce() -> String,
    ) {
        self.push(
            settings,
            code,
            code.severity(),
            code.remedy(),
            file,
            at,
            message,
        );
    }

    /// Findings that also note each code found, for
    /// [`Findings::take_codes`].
    pub fn noting_codes() -> Self {
        Findings {
            noted: Some(Vec::new()),
            ..Findings::default()
        }
    }

    /// The codes found since the last call (none unless made with
    /// [`Findings::noting_codes`]), in the order found.
    pub fn take_codes(&mut self) -> Vec<Code> {
        self.noted.as_mut().map(std::mem::take).unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn the_table_is_indexed_by_the_variant_and_names_are_unique() {
        assert_eq!(Code::ALL.len(), 72);
        assert_eq!(CATALOG.len(), Code::ALL.len());
        let mut seen = BTreeSet::new();
        for (i, &code) in Code::ALL.iter().enumerate() {
            assert_eq!(code as usize, i);
            assert_eq!(CATALOG[i].code, code);
            assert!(seen.insert(code.as_str()), "duplicate {code}");
            assert_eq!(Code::parse(code.as_str()), Some(code));
            assert_eq!(
                serde_json::to_string(&code).unwrap(),
                format!("\"{}\"", code.as_str())
            );
        }
        assert_eq!(Code::parse("torn_tail"), None);
    }

    #[test]
    fn a_misspelt_code_suggests_the_nearest() {
        assert_eq!(Code::suggest("torn-tial"), [Code::TornTail]);
        assert_eq!(
            Code::suggest("torn"),
            [Code::TornTail, Code::LedgerTornTail]
        );
        assert_eq!(Code::suggest("no-such-thing"), []);
        let snapshot = Code::suggest("snapshot");
        assert_eq!(snapshot.len(), 8, "{snapshot:?}");
        assert!(snapshot.iter().all(|c| c.as_str().starts_with("snapshot-")));
    }

    #[test]
    fn examples_are_bounded_but_counts_exact() {
        let settings = Settings {
            max_examples: 2,
            ignore: vec![Code::BlankLine],
            ..Settings::at(0.0)
        };
        let mut f = Findings::default();
        for _ in 0..5 {
            f.add(&settings, Code::CorruptLine, "x", At::default(), || {
                "m".into()
            });
            f.add(&settings, Code::BlankLine, "x", At::default(), || {
                "m".into()
            });
        }
        assert_eq!(f.examples.len(), 2);
        assert_eq!(f.counts.get(&Code::CorruptLine), Some(&5));
        assert_eq!(f.counts.get(&Code::BlankLine), None);
        assert_eq!(f.worst(), Some(Severity::Warning));
    }
}
