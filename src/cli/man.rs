//! Man pages generated from the clap definitions, with the sections clap
//! does not know: EXIT STATUS, EXAMPLES and, for inspect, JSON OUTPUT.
//! The pages are checked in under man/ and a test fails when they drift;
//! `LEASEJOURNAL_BLESS=1 cargo test --test cli man_pages` rewrites them.

use clap::CommandFactory;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, roman};

use super::{Cli, EXIT_STATUS};
use crate::operations::findings::catalog::Code;

struct Extra {
    examples: &'static [(&'static str, &'static str)],
    sections: &'static [(&'static str, &'static [&'static str])],
    catalog: bool,
}

/// How the writing subcommands change files.
const WRITING: (&str, &[&str]) = (
    "WRITING",
    &[
        "Without --apply or --output nothing is written, created or locked: the plan is printed and the exit status is 0. --check prints the same plan and exits 1 if it would change anything, 0 if there is nothing to do.",
        "With --apply the directory's .master-queue.lock is taken exactly as the master takes it (flock LOCK_EX|LOCK_NB; --lock-timeout waits) and held until the last fsync; a running master makes the command exit with status 3. The file must still be the one that was read (device, inode, size, mtime) or nothing is written (exit 2). Unless --no-backup, the original is kept as FILE.bak.<UTC timestamp> (or in --backup-dir), made durable before the change: before a rewrite, which renames a new file over it, as a hard link of the original (a copy where no link can be made, such as a --backup-dir on another file system); before an append, as a copy; a backup or export made for a change that then fails before changing anything is removed again.",
        "A rewrite is written to an unnamed temporary file in the same directory (O_TMPFILE; where the file system has none, FILE.leasejournal.<pid>.tmp, created exclusively), with the original's mode and owner, re-read and replayed as it is written, then fsynced. It is published only if the re-read covered every byte written and it replays to the planned state: the original, held open since it was read, must then still be unchanged under a read lease (fcntl F_SETLEASE: no process can open it for writing meanwhile); the file is named and renamed over FILE, and the directory fsynced. A failure before the rename leaves no temporary file.",
        "The master's lock is the protection against a second writer, and a process that ignores it cannot make a change lose records silently. A process that keeps FILE open for writing is refused before the rename (exit 2, nothing changed). Where leases are refused, such a process is looked up in /proc (root sees every process). The new file stays under a write lease until records such a process appended to the old file between the check and the rename are carried into it, in order, once no process has the old file open for writing (the report's \"late_appends_carried\" and \"carried\" line say how many); if that cannot be done in order they are saved to FILE.late.<pid>.jsonl and the command exits 4 naming it.",
        "An append (repair sealing a tail, recover --discard, restore) opens FILE and takes a write lease on it: no other process has it open, and none can open it until the append is done. Under the lease the file must not have grown by a byte since it was read; then a torn or zero-filled tail is cut, the new records are written with one write, and the file is fsynced and re-read. A missing newline after a complete last record is never written in place: the file is rewritten with it (as above; recover --discard and restore write their records in the same rewrite), since a file system may persist a file's new size before its data, and a power loss could then leave the record followed by a NUL, which upstream skips. Without a lease (another process keeps FILE open, or the file system gives none) nothing is cut: a torn tail is ended with a newline instead (the torn bytes stay as a line upstream ignores; the plan's tail then reads \"terminate\" and the note says why), and records are appended with O_APPEND, which never overwrites another writer's. A last record followed by NUL bytes (a power loss after a newline was added) loses only the NULs: a repair never cuts bytes that parse as a complete record. A later run removes this tool's stale temporary files under the lock; one it cannot remove, or a directory it cannot list to find them, is named with the error in a warning on stderr and in the report's \"stale_temp_files_left\", and the exit status is then 5 (the change itself made and confirmed, or nothing to do).",
        "A state file that is a symbolic link is resolved once, walking every component, and its real file is changed where it is (its backup and temporary file beside it), while the lock taken stays the state directory's, where the master takes it. --apply writes through it only when nobody but root or the real file's owner could have pointed it elsewhere: the real file is a regular file; every link followed on the way belongs to root or to that owner; and every directory on the file's real path, from / down, belongs to root or to that owner and is writable by neither its group nor others, unless it has the sticky bit and the entry on the path in it belongs to root or to that owner. Otherwise --apply is refused before anything is locked or created (exit 2), naming the link or directory at fault; a link to /etc/passwd planted by another user is never written through. A dry run, --check and --output read through any link, as the readers do, and show the plan, with the refusal when there is one (the report's \"link\":{\"path\",\"refused\"}).",
        "On a file system other hosts share whose flock may not reach them (NFS local_lock=flock or nolock, Lustre localflock, GPFS, BeeGFS, …: see verify --remote-master), no lock keeps out a master on another host, and --apply is refused (exit 2, nothing changed) until --remote-master none says that no master runs on any other host.",
        "A run that changes nothing (refused after it took the lock, or nothing to do) leaves nothing it created: no backup, export or temporary file, and no .master-queue.lock where there was none. The lock file is removed while still held, and only when no other process has it open (a master that has opened it is about to take it, and keeps it).",
        "Exit status 2 means nothing was changed. Once a file has been changed, any later failure (the fsync of the directory or of the appended file, the re-read check, carrying late records, another file of the same run, writing the report to standard output, or a reader of it that went away) exits 4, and the one-line message names every file changed and what could not be confirmed. A reader that goes away from any other command leaves its exit status as it was.",
        "Every file the tool creates or rewrites (lock file, backup, temporary and published file, --output file, discard export) ends with the owner and group of the file it replaces or, for a new file, of its directory, so that a master running as the directory's owner can still open them; a lock file it creates has mode 0600.",
        "Every record written is byte-identical to what upstream writes: sorted keys, \",\" and \":\" separators, ensure_ascii escaping, Python float repr, \"clock\":\"unix\" on new records. No command but recover --discard ever appends a reclaim: the master's resume requeues only the leases still active when it starts. restore appends only leases that the discard reclaimed and that nothing has leased or completed since.",
        "The JSON report (--format json): {\"schema_version\",\"command\",\"mode\":\"dry-run\"|\"check\"|\"apply\"|\"output\",\"files\":[{\"path\",\"kind\",\"plan\",\"written\",\"backup\",\"output\",\"removed_temp_files\",\"stale_temp_files_left\":[{\"path\",\"error\"}],\"note\",\"keeps_backup\",\"link\",\"late_appends_carried\"}]}; each plan carries the replay state before and after as {\"active\",\"completed\",\"digest\"}; \"late_appends_carried\":{\"bytes\",\"lines\"} is present only when another process appended during the change, \"link\":{\"path\",\"refused\"} only when PATH named a symbolic link (\"path\" is then its real file). repair and compact add \"ledgers\": one object per digest ledger their paths name (see their JSON sections). schema_version is 1 for restore and rollback, 2 for repair, compact and migrate, 3 for recover. A run that fails after it changed files (exit 4) prints instead {\"schema_version\",\"command\",\"mode\",\"files\":[the outcomes of the files it finished],\"changed\":[{\"path\",\"done\"}],\"error\"}: every change it made, and what failed (also on stderr).",
    ],
);

/// What repair and compact report of a digest ledger.
const LEDGER_JSON: &str = "A digest ledger's change, in the report's \"ledgers\" (after the files of its directory): {\"path\",\"shard_count\",\"reshard\",\"before\",\"after\",\"files\":[{\"name\",\"index\",\"action\":\"none\"|\"rewrite\"|\"create\"|\"remove\"|\"skip\",\"tail\":{\"action\":\"none\"|\"cut\"|\"terminate\",\"offset\",\"bytes\",\"nul_bytes\"},\"restored\",\"lines_before\",\"lines_after\",\"valid_before\",\"valid_after\",\"moved_out\",\"moved_in\",\"duplicates_dropped\",\"ignored_dropped\",\"written\",\"backup\",\"output\",\"late_appends_carried\"}],\"written\",\"keeps_backup\",\"removed_temp_files\",\"stale_temp_files_left\",\"note\"}. before and after are upstream's load_recent(5000000) at shard_count: {\"digests\" (distinct digests it loads),\"unread\" (distinct valid digests only in files it never reads),\"distinct\",\"valid\",\"ignored\",\"files\"}. shard_count is --state-shards when reshard, else the smallest count that reads every shard file. restored is a digest a power loss left before NULs, which upstream loads once they are cut; skip is a name upstream cannot open (a directory), left as it is.";

/// How repair and compact change a digest ledger.
const LEDGER_WRITING: (&str, &[&str]) = (
    "DIGEST LEDGER",
    &[
        "A state directory's .state_shards/processed.NNN.log (or that directory, or one of its files, named as PATH) is changed under the state directory's .master-queue.lock, after its journals. Every file is rewritten through a checked temporary file as a journal is (read back: its valid digests, in order, must be the planned ones and it must end with a newline), created as a new file, or removed after a backup (a hard link of it, else a copy), each followed by an fsync of the directory; then the ledger is read again at the shard count, and every digest it loaded before must be loaded.",
        "repair seals each file's end: a torn or NUL-filled last line, which upstream's next add would glue onto and lose, is cut; a last digest without its newline gets one, and so does a digest a power loss left before NULs (only the NULs go: upstream then loads it). Lines upstream ignores stay, duplicates stay, and no valid line is dropped: upstream at any count loads the same digests after as before (plus those restored).",
        "repair --state-shards N moves every valid digest into the file int(digest[:8], 16) % N names and removes the files numbered N and above (each backed up first), so that a master started with N state shards loads every distinct valid digest any file held, and none sits in a file its shard does not name. A file's own lines stay in their order, the digests moved in follow, ordered by the file they come from, then by line. Files that receive digests are written first (all their own lines still in them), files that lose misplaced lines after, and the files past N are removed last: a crash at any point leaves each digest in at least one file N reads or a file past N, and running the same repair again finishes the job. A directory where digests must go refuses the repair before anything is written. A file written twice in one run is backed up once, as it was. --state-shards takes the whole ledger, not one of its files.",
        "compact rewrites each file as its distinct valid digests, once each, in the order first met, each as upstream writes it (digest and a newline): duplicates within the file and lines upstream ignores go, no valid digest does. A digest is not moved to another file, nor dropped because another file holds it too: upstream loads a misplaced digest wherever it is, and the other file may be one a smaller count never reads. A file already compact is not rewritten.",
    ],
);

fn extra(name: &str) -> Extra {
    match name {
        "inspect" => Extra {
            examples: &[
                (
                    "leasejournal inspect /out/run1",
                    "Everything a state directory says, with the master lock status.",
                ),
                (
                    "leasejournal inspect --history 83ce7d /out/run1/.work_leases.jsonl",
                    "Every record of the ids starting with 83ce7d and what replay did with it.",
                ),
                (
                    "leasejournal inspect --lease-shards 256 /shared/leases/.work_lease_table",
                    "A fenced lease table shared by several masters: counts, owners, what the next master start takes, and the records upstream rejects.",
                ),
            ],
            sections: &[
                (
                    "JSON OUTPUT",
                    &[
                        "With --format json, stdout carries one JSON document with \"schema_version\":1 and a \"kind\".",
                        "journal: {\"kind\":\"journal\",\"path\",\"bytes\",\"lines\",\"records\":{\"lease\",\"done\",\"reclaim\",\"other\"},\"clocks\":{\"unix\",\"legacy\",\"unmarked\",\"other\"},\"leases_accepted\",\"ignored\":{reason:count},\"invalid_utf8_lines\",\"invalid_utf8_bytes\",\"lenient_leases\",\"records_with_unknown_fields\",\"non_canonical_records\",\"tail\":{\"state\",\"bytes\",\"offset\",\"zero_bytes\"},\"events\",\"time_range\",\"active_count\",\"completed_count\",\"filter\",\"active\":[{\"id\",\"worker\",\"time\",\"attempts\",\"clock\",\"line\",\"offset\",\"age_seconds\",\"path\"}],\"completed\":[id],\"history\"}. \"active\" is the state upstream's loader reaches, sorted by id; \"clock\" is \"unix\" or \"legacy\"; tail \"state\" is empty, clean, torn or unterminated.",
                        "Ignore reasons: blank, torn-tail, glued-record, bom, duplicate-member, non-finite-number, too-deep, integer-too-long, corrupt, not-an-object, bad-id, payload-not-object, payload-not-finite, payload-id-mismatch, rejected-field, orphan-done, orphan-reclaim, unknown-op.",
                        "snapshot: {\"kind\":\"snapshot\",\"path\",\"bytes\",\"parse\":{\"ok\",\"error\",\"is_object\",\"duplicate_members\",\"nonfinite_constants\",\"invalid_utf8_bytes\"},\"clock\",\"tasks\",\"totals\",\"leases\",\"changes\",\"restored\"}. \"restored\" is exactly the object upstream's restore and to_mapping() yield (keys clock, leases, shard_count, stats, steal_window, worker_count), with NaN and infinities written as the strings \"NaN\", \"Infinity\", \"-Infinity\"; null when upstream would start empty.",
                        "directory: {\"kind\":\"directory\",\"path\",\"files\":[the objects above],\"missing\",\"stale_temp_files\",\"master_lock\":{\"present\",\"held\",\"holders\",\"processes\":[{\"pid\",\"command\",\"leasejournal\",\"inherited_from\",\"inherited_from_running\"}]},\"ledger\":null|{…}}.",
                        "ledger (a directory's, or {\"kind\":\"ledger\",\"path\",\"ledger\"} for .state_shards/ or one processed.NNN.log): {\"path\",\"shard_count\",\"shard_count_from\":\"option\"|\"environment\"|\"workers\"|\"files\",\"shard_count_note\",\"digests\",\"unread\",\"distinct\",\"lines\",\"valid\",\"duplicates\",\"misplaced\",\"over_limit\",\"ignored\",\"indices\",\"fitting_counts\",\"files\",\"queries\"}: read at --state-shards, else SYMCC_STATE_SHARDS as the master reads it, else min(64, --workers), else the smallest count that reads every file; shard_count_note says why an input that comes first did not decide it (a value int() refuses, one --state-shards overrides). digests is what upstream's load_recent loads at that count, unread the distinct digests only in files it never reads.",
                        "table (a fenced lease table's root, or each of a directory's \"tables\", its own .work_lease_table/ and .target_lease_table/): {\"kind\":\"table\",\"table\":\"work\"|\"target\",\"table_from\":\"name\"|\"environment\"|\"records\"|\"--table-kind\",\"path\",\"shard_count\":{\"value\",\"from\"},\"ttl\":{\"value\",\"from\"},\"ttl_effective\",\"now\",\"counts\":{\"leased\",\"committing\",\"expired\",\"done\"},\"files\":{\"records\",\"locks\",\"orphan_locks\",\"temp_files\",\"other\",\"record_bytes\"},\"accepted\",\"rejected\":[id],\"rejected_records\":[{\"id\",\"path\",\"reason\",\"message\",\"raises\",\"elsewhere\",\"claim\":\"takes\"|\"refused\"|{\"raises\":exception}}],\"recovered\":[id],\"start_limit\",\"expired\":[{\"id\",\"path\",\"owner\",\"worker\",\"updated\",\"age_seconds\",\"attempts\",\"steals\",\"seed\",\"seed_here\",\"continuation\",\"order\"}],\"committing\":[{\"id\",\"path\",\"owner\",\"updated\",\"age_seconds\",\"has_commit\",\"owner_dead\",\"seed\"}],\"future\",\"misplaced\",\"unread\",\"fitting_counts\",\"bad_locks\",\"temp_files\",\"held_locks\",\"odd\",\"owners\":[{\"owner\",\"leased\",\"expired\",\"committing\",\"done\",\"newest_heartbeat_age\",\"oldest_heartbeat_age\",\"host\"}],\"host\",\"history\"}. counts is upstream's snapshot_counts(now) exactly; rejected the ids with an <id>.json under the root that upstream's reader does not accept at the id's own path; recovered the ids of recover_expired_records(now) in its order (an id listed in two scanned directories twice, as upstream returns it). The shard count is --lease-shards, else SYMCC_MULTI_MASTER_LEASE_SHARDS, else 256; the TTL --ttl, else the master's (SYMCC_WORK_LEASE_TTL; SYMCC_MULTI_MASTER_TARGET_LEASE_TTL for a target table; else max(120, 4 × SYMCC_TIMEOUT)), clamped to at least 1 s for the counts and claims as upstream's constructor does; --ttl 0 lists every leased record in recovered, as recover_expired(lease_ttl=0) does.",
                        "Several PATHs: {\"kind\":\"inspections\",\"inspections\":[the objects above, one per path],\"errors\":[{\"path\",\"message\"}]}.",
                        "--workers: {\"kind\":\"workers\",\"now\",\"files\":[{\"path\",\"lease_seconds_median\",\"last_activity\",\"workers\":[{\"worker\",\"leases\",\"took_over\",\"completed\",\"reclaimed\",\"reclaimed_by\":{\"resume\",\"ttl_expiry\",\"abandon\"},\"active\",\"oldest_active_age_seconds\",\"lease_seconds_median\",\"lease_seconds_p95\",\"last_activity\",\"last_line\",\"stalled\"}]}]}, one object per journal and per rank. Who reclaimed is inferred from the records' shape: a sweep of reclaims sharing one time after which no lease is active is resume's; a sweep of two or more that leaves leases active is a TTL expiry; a lone reclaim that leaves leases active is a rollback (abandon). stalled: the rank's last activity (a lease or a done) is older than the newest rank's by more than 10 median lease durations and at least 600 s.",
                        "--timeline: {\"kind\":\"timeline\",\"files\":[{\"path\",\"start\",\"bucket_seconds\",\"completions\":[count per bucket],\"reclaims\":[count per bucket],\"workers\":[{\"worker\",\"completions\":[count per bucket]}],\"legacy_end\",\"last_record\"}]}: buckets from start (Unix seconds), bucket_seconds wide; legacy_end is the time of the first unix-clock record after the last lease without one; last_record the time of the last unix-clock record.",
                    ],
                ),
                (
                    "RECORD STREAM",
                    &[
                        "--records --format ndjson writes one JSON object per line of each journal, in file order, exactly the lines upstream's reader splits (\\n, \\r\\n and a lone \\r end a line); a state directory's journals in resume order. Memory is bounded by the replay state.",
                        "Every object has the members {\"file\",\"line\",\"offset\",\"kind\",\"op\",\"id\",\"hidden_id\",\"worker\",\"previous_worker\",\"time\",\"clock\",\"attempts\",\"effect\",\"ignored\",\"findings\"}, null where one does not apply. kind: record, blank, corrupt, not-an-object, bad-id. op: lease, done, reclaim, or another value as upstream's str() shows it. hidden_id: a complete record glued onto a torn fragment (upstream loses it with the line). worker: an accepted lease's, or the owner a done completed or a reclaim dropped; previous_worker: the owner a lease took over from. clock: unix, legacy, absent, other. effect: activated, reactivated, took-over, completed, done-ignored, reclaimed, reclaim-ignored, lease-ignored, unknown-op. ignored: the reasons above. findings: the codes of verify's findings on the line, except those that depend on the state at the end of the file (legacy-clock-lease, future-lease, expired-lease, seed-missing, requeued-twice), which the stream, written as the file is read, cannot know: --end-state reads each journal once more first, for them, and then every line carries every one of verify's findings on it.",
                    ],
                ),
            ],
            catalog: false,
        },
        "repair" => Extra {
            examples: &[
                (
                    "leasejournal repair /out/run1",
                    "The plan: the tail to seal, the records to salvage, the leases before and after. Nothing is written.",
                ),
                (
                    "leasejournal repair --apply /out/run1",
                    "Carry it out under the master's lock, with a backup of each journal; then run verify again.",
                ),
                (
                    "leasejournal repair --apply --state-shards 8 /out/run1",
                    "Before resuming with 8 state shards (fewer workers): move every digest of the ledger into the file 8 shards read, so that the AFL rescan skips every input dispatched before.",
                ),
            ],
            sections: &[
                (
                    "JSON PLAN",
                    &[
                        "Each file's \"plan\": {\"tail\":{\"action\":\"none\"|\"cut\"|\"terminate\",...},\"salvaged\":[{\"line\",\"offset\",\"hidden\":\"glued\"|\"bom\",\"fragment_bytes\",\"id\",\"op\",\"action\":\"restored\"|\"left-out\"}],\"rewrite\",\"brought_back\":[id],\"completed_by_salvage\":[id],\"before\",\"after\"}. The ids active after are those active before plus brought_back, less completed_by_salvage.",
                        LEDGER_JSON,
                    ],
                ),
                LEDGER_WRITING,
                WRITING,
            ],
            catalog: false,
        },
        "recover" => Extra {
            examples: &[
                (
                    "leasejournal recover /out/run1",
                    "What resume will reclaim, requeue and drop, journal by journal. Run it from the master's working directory, so relative seed paths resolve. Nothing is written.",
                ),
                (
                    "leasejournal recover --discard --id 83ce7d --apply /out/run1/.work_leases.jsonl",
                    "Drop the work of the lease(s) whose id starts with 83ce7d, exporting them first.",
                ),
                (
                    "leasejournal recover --discard --worker 3 --ttl 600 /out/run1",
                    "What discarding worker 3's leases older than 10 minutes would do (dry run).",
                ),
            ],
            sections: &[
                (
                    "JSON OUTPUT",
                    &[
                        "The forecast: {\"schema_version\":3,\"command\":\"recover\",\"mode\":\"forecast\",\"now\",\"files\":[{\"path\",\"tail\",\"reclaims\":[{\"id\",\"worker\",\"clock\",\"time\",\"age_seconds\",\"attempts\",\"line\",\"path\",\"continuation\",\"outcome\":\"requeued\"|\"requeued-if-continuation-valid\"|\"dropped\",\"reason\",\"item\":{\"path\",\"focus\",\"target_branch\",\"s2f_actions\",\"schedule_prefix\",\"continuation\",\"fields\"},\"not_restored\",\"duplicate_of\",\"digest\",\"rescan\":null|{\"sees_again\":true|false|null,\"why\":\"loaded\"|\"may-be-dropped\"|\"unread\"|\"not-in-ledger\"|\"ledger-off\"|\"continuation\"|\"no-digest\"}}],\"requeued\",\"requeued_if_continuation_valid\",\"dropped\",\"duplicates\",\"first_append\":{\"record\",\"id\",\"glues\"},\"before\"}],\"ledger\":null|{\"path\",\"used\",\"read\":null|{\"shard_count\",\"shard_count_from\":\"option\"|\"environment\"|\"workers\"|\"files\",\"shard_count_note\",\"digests\",\"unread\",\"distinct\",\"over_limit\",\"fitting_counts\",\"unread_files\"}},\"tables\":[{\"path\",\"table\",\"shard_count\",\"ttl\",\"counts\",\"accepted\",\"rejected\",\"recoverable\",\"taken_at_start\",\"recovered\":[id],\"expired\":[as inspect's],\"committing\"}]}. reclaims are in the order resume appends them; item is the work item resume rebuilds. tables are the fenced lease tables read (a table's root, or a state directory's own): recovered is upstream's recover_expired_records(now) at the table's TTL (--ttl sets it without --discard), in its order; every master start takes the first 4096 (taken_at_start; 0 for a target table, whose records masters never recover).",
                        "digest is the payload's sha256 when it is 64 lowercase hex digits and the payload has no continuation: the digest the master adds to the ledger once it has sent the input. ledger is the state directory's .state_shards/ (the journal's directory, for a journal) as the next master start reads it, at the count --state-shards, SYMCC_STATE_SHARDS or min(64, --workers) gives, else the smallest that reads every file; used is false when SYMCC_PERSISTENT_STATE is 0, false, off or no, and read is then null. rescan, set for every item exactly when ledger is not null, says whether that start's AFL queue rescan dispatches the item's input again: it skips every input whose digest it loaded (loaded: false; may-be-dropped: loaded, but beyond 5,000,000 digests upstream drops arbitrary ones: null), and sees the others (unread: only in files the count never reads; not-in-ledger; ledger-off: true). A requeued item it sees runs twice; a dropped item it skips is lost for good. Without a payload digest the seed file's content is hashed (a deferred dispatch records none); continuation and no-digest: null.",
                        "With --discard, the writing report below; each plan: {\"tail\",\"reclaims\",\"append_bytes\",\"before\",\"after\",\"export\"}. The export holds each discarded lease as upstream's compaction writes it; leasejournal restore EXPORT --apply, before the master resumes, brings the work back (never by appending the file by hand: that takes no lock, can glue onto a torn tail and can double leases active again).",
                    ],
                ),
                WRITING,
            ],
            catalog: false,
        },
        "migrate" => Extra {
            examples: &[
                (
                    "leasejournal migrate /out/run1",
                    "What migrating the directory would change: a legacy snapshot rewritten; legacy journal leases listed, left for resume.",
                ),
                (
                    "leasejournal migrate --apply /out/run1/.state_tasks.json",
                    "Rewrite a legacy snapshot exactly as upstream writes it after restoring it.",
                ),
                (
                    "leasejournal migrate --apply --rewrite /out/run1",
                    "Also compact journals that hold clock-less records (legacy leases stay legacy).",
                ),
            ],
            sections: &[WRITING],
            catalog: false,
        },
        "compact" => Extra {
            examples: &[
                (
                    "leasejournal compact --apply /out/run1/.work_leases.jsonl",
                    "Rewrite the journal as its state, completed ids included.",
                ),
                (
                    "leasejournal compact --drop-completed --output upstream.jsonl .work_leases.jsonl",
                    "Exactly what upstream's compact() would write, into a new file.",
                ),
                (
                    "leasejournal compact --apply /out/run1/.state_shards",
                    "Each ledger file as its distinct valid digests, once each; nothing else of the state directory.",
                ),
            ],
            sections: &[("JSON PLAN", &[LEDGER_JSON]), LEDGER_WRITING, WRITING],
            catalog: false,
        },
        "restore" => Extra {
            examples: &[
                (
                    "leasejournal restore /out/run1/.work_leases.jsonl.discarded.20250807T070140Z.jsonl",
                    "Which discarded leases would come back, and which are skipped and why (dry run).",
                ),
                (
                    "leasejournal restore --apply /out/run1/.work_leases.jsonl.discarded.20250807T070140Z.jsonl",
                    "Bring them back before the master resumes: under its lock, with a backup, the tail sealed.",
                ),
            ],
            sections: &[
                (
                    "JSON OUTPUT",
                    &[
                        "The writing report below; each plan: {\"export\",\"tail\",\"leases\":[{\"line\",\"id\",\"worker\",\"clock\",\"time\",\"attempts\",\"path\",\"fate\":\"restore\"|\"active\"|\"completed\"|\"leased-again\"|\"not-in-journal\",\"journal_line\"}],\"restored\",\"skipped\",\"append_bytes\",\"before\",\"after\"}. leases are in the export's order (line is the export's line, journal_line the journal's last lease of the id); tail is \"none\" when nothing is restored, since the journal is then not touched.",
                    ],
                ),
                WRITING,
            ],
            catalog: false,
        },
        "rollback" => Extra {
            examples: &[
                (
                    "leasejournal rollback /out/run1/.work_leases.jsonl.bak.20250807T070140Z",
                    "What putting the journal back to that backup gains and loses (dry run).",
                ),
                (
                    "leasejournal rollback --apply /out/run1/.state_tasks.json.bak.20250807T070140Z",
                    "Undo a snapshot migration, keeping the migrated file as a backup.",
                ),
            ],
            sections: &[
                (
                    "JSON OUTPUT",
                    &[
                        "The writing report below; each plan: {\"backup\",\"bytes_before\",\"bytes_after\",\"identical\",\"journal\":null|{\"before\",\"after\",\"active_gained\",\"active_lost\",\"completed_gained\",\"completed_lost\",\"records_not_in_backup\":{\"lease\",\"done\",\"reclaim\",\"other\"}},\"snapshot\":null|{\"tasks_before\",\"tasks_after\",\"leases_before\",\"leases_after\",\"completions_before\",\"completions_after\",\"tasks_behind\"},\"loses_work\",\"refused\"}. refused is the reason a rollback that loses work is refused without --allow-loss (the dry run's plan carries it; --apply and --check exit 2 with it).",
                    ],
                ),
                WRITING,
            ],
            catalog: false,
        },
        "diff" => Extra {
            examples: &[
                (
                    "leasejournal diff last-good/.state_tasks.json /out/run1/.state_tasks.json",
                    "What changed in the statistics since the last good run.",
                ),
                (
                    "leasejournal diff --history backup.jsonl /out/run1/.work_leases.jsonl",
                    "Which records of the live journal changed which lease.",
                ),
                (
                    "leasejournal diff --state-shards 8 before-reshard/.state_shards /out/run1/.state_shards",
                    "Which digests a re-shard moved, and what a master started with 8 state shards loads from each ledger.",
                ),
            ],
            sections: &[(
                "JSON OUTPUT",
                &[
                    "{\"schema_version\":3,\"kind\":\"snapshot\"|\"journal\"|\"ledger\",\"a\",\"b\",\"identical\":bool,\"changes\":[{\"entity\":\"task\"|\"lease\"|\"config\"|\"active\"|\"completed\"|\"digest\",\"change\":\"added\"|\"removed\"|\"changed\",\"id\",\"field\",\"before\",\"after\",\"delta\"}],\"counts\":{\"task_changed\":n,...} (keys {entity}_{added|removed|changed}; schema_version 1 had them with a space),\"summary\":{\"a\",\"b\"},\"bytes\":{\"relation\":\"identical\"|\"appended\"|\"truncated\"|\"diverged\",...},\"history\",\"ledger\",\"notes\"}. Snapshot times are compared as the files hold them (restore zeroes legacy ones).",
                    "Ledgers (schema_version 3): a digest's change is added (after: the files of B holding it), removed (before: the files of A) or changed, field files (before: the files that lost it, after: those that gained it: a move); changes lists at most --max-examples of each kind, the smallest digests, while counts (digest_added, digest_removed, digest_changed) are exact. summary.a and summary.b are {\"path\" (null: no .state_shards/),\"files\",\"distinct\",\"loaded\",\"unread\",\"over_limit\"} at the count; ledger is {\"shard_count\",\"shard_count_from\":\"option\"|\"files\",\"added\",\"removed\",\"moved\",\"unchanged\",\"load_added\",\"load_removed\",\"max_examples\",\"files\":[{\"name\",\"index\",\"read\",\"a\",\"b\" (file|dir|other, null: absent),\"digests_a\",\"digests_b\",\"added\",\"removed\",\"moved_in\",\"moved_out\"}]}, null for the other kinds. Distinct digests throughout; ledger and summary ignore the filters, counts and changes follow them.",
                ],
            )],
            catalog: false,
        },
        "completions" => Extra {
            examples: &[
                (
                    "leasejournal completions bash > ~/.local/share/bash-completion/completions/leasejournal",
                    "Install bash completions.",
                ),
                (
                    "leasejournal completions zsh > ~/.zfunc/_leasejournal",
                    "Install zsh completions.",
                ),
            ],
            sections: &[],
            catalog: false,
        },
        "verify" => Extra {
            examples: &[
                (
                    "leasejournal verify --quiet /out/run1 && SYMCC_RESUME=1 mpirun ...",
                    "Resume only on go: nothing loses work and no master is running.",
                ),
                (
                    "leasejournal verify --format json /out/run1 | jq -r '.next[]'",
                    "The commands that fix what was found, in the order to run them.",
                ),
                (
                    "leasejournal verify --ignore non-canonical-encoding --max-examples 3 a.jsonl b.jsonl",
                    "Two journals, one code muted, three examples per code.",
                ),
            ],
            sections: &[
                (
                    "VERDICT",
                    &[
                        "go (exit 0): every path was checked, no finding is an error (nor a warning, with --strict), and no master is running. no-go (exit 1): at least one such finding. incomplete (exit 2): a path could not be checked. busy (exit 3): a live master holds .master-queue.lock of a checked directory, or of the directory of a checked file; the report names its pid from /proc/locks. Busy wins over incomplete, incomplete over no-go.",
                        "A finding's severity answers one question: does resuming now lose, duplicate or misattribute work? error: yes. warning: a loss that already happened and that resuming cannot make worse, or something worth a look. info: no. leasejournal explain CODE says why each code has its severity.",
                        "Where a command fixes a finding, the finding names it with the real path (leasejournal repair --apply PATH, leasejournal migrate --apply SNAPSHOT), and the report ends with next: the distinct commands in the order to run them, then run verify again. No remedy ever appends a reclaim.",
                    ],
                ),
                (
                    "JSON OUTPUT",
                    &[
                        "{\"schema_version\":4,\"verdict\":\"go\"|\"no-go\"|\"incomplete\"|\"busy\",\"exit_code\",\"findings\":[{\"code\",\"severity\",\"file\",\"line\",\"offset\",\"id\",\"message\",\"fix\",\"must_do\"}],\"not_listed\":{severity:n},\"next\":[command],\"must_do\":[{\"code\",\"count\",\"must_do\",\"verdict_until_done\"}],\"counts\":{code:n},\"severities\":{severity:n},\"checked\":[\"L1\",\"L2\",\"L4\",\"L5\",\"L6\"],\"not_checkable\":[\"L3\",\"L7\"],\"files\":[{\"file\",\"counts\"}],\"targets\":[{\"path\",\"kind\",\"verdict\",\"counts\",\"master_pids\",\"master_holders\":[{\"pid\",\"command\",\"leasejournal\",\"inherited_from\",\"inherited_from_running\"}],\"master_lock\",\"remote_master\":null|{\"mount\":null|{\"file_system\",\"mount_point\",\"flock\":\"across-hosts\"|\"this-host-only\"|\"unknown\",\"flock_because\"},\"pid_namespace\",\"mode\",\"probe\":null|{\"result\":\"free\"|\"held\"|\"failed\",\"error\"},\"ruled_out_by\":null|\"no-lock-file\"|\"probe\"|\"operator\"},\"ledger\":null|{\"path\",\"used\",\"read\":null|{\"shard_count\",\"shard_count_from\",\"shard_count_note\",\"digests\",\"unread\",\"distinct\",\"over_limit\",\"fitting_counts\",\"unread_files\"}},\"tables\":[{\"path\",\"table\",\"shard_count\",\"ttl\",\"counts\",\"accepted\",\"rejected\",\"recoverable\",\"taken_at_start\"}]}],\"errors\":[{\"path\",\"message\"}],\"settings\":{\"now\",\"ttl\",\"skew\",\"strict\",\"max_examples\",\"ignored_codes\",\"min_severity\",\"remote_master\"}}. exit_code is always the process's exit status; checked is empty when no path could be read. Counts are exact; findings hold at most --max-examples per code, of --min-severity or worse (not_listed counts the rest); fix is null where no command fixes the finding, and must_do then says what to do when the finding keeps the verdict from go. master_pids are the processes holding the lock now (a process that took it and passed it on is named in inherited_from), master_holders the same with their commands.",
                        "targets[].ledger is a state directory's digest ledger (.state_shards/) as the next master start reads it, as in recover's forecast (null for a file, or a directory without one); its findings are the codes of scope ledger (leasejournal explain --list), and lease-not-in-ledger across the work journal and the ledger. The shard count comes from --state-shards, then SYMCC_STATE_SHARDS (read as the master reads it), then min(64, --workers); with none of them the ledger is read at the smallest count that reads every file (ledger-count-unknown).",
                        "targets[].tables are the fenced lease tables checked: a table's root (kind table), or a state directory's own .work_lease_table/ and .target_lease_table/; their findings are the codes of scope table. A table is shared by masters on other hosts whose locks /proc/locks cannot show: verify never takes a lock, and the fix of a table finding (leasejournal repair --apply --all-masters-stopped ROOT) needs the operator's word that every master using it is stopped.",
                        "Changes from schema_version 1: verdict ok/warnings/errors became go/no-go/incomplete/busy; exit_code, next, files, findings[].fix, targets[].master_pids and targets[].master_lock were added. next leaves out the paths a master is running in (the writers refuse them). Changes from schema_version 2: a state directory's digest ledger is judged, so a directory that was a go can be a no-go; targets[].ledger was added, and next can hold leasejournal repair --apply --state-shards N DIR.",
                    ],
                ),
            ],
            catalog: true,
        },
        "explain" => Extra {
            examples: &[
                (
                    "leasejournal explain glued-record",
                    "What a glued record is and how to get it back.",
                ),
                ("leasejournal explain --list", "The whole catalog."),
            ],
            sections: &[],
            catalog: true,
        },
        _ => Extra {
            examples: &[
                (
                    "leasejournal inspect /out/run1",
                    "What the state directory says after a reboot or crash.",
                ),
                (
                    "leasejournal verify /out/run1",
                    "The go/no-go before SYMCC_RESUME=1.",
                ),
                (
                    "leasejournal completions bash",
                    "A completion script for bash.",
                ),
            ],
            sections: &[],
            catalog: false,
        },
    }
}

/// A subcommand's examples (`leasejournal` for the top level): its man
/// page's EXAMPLES and the end of its --help, from this one list.
pub fn examples(name: &str) -> &'static [(&'static str, &'static str)] {
    extra(name).examples
}

/// The examples as --help ends with them.
pub fn examples_help(name: &str) -> String {
    let mut text = String::from("Examples:\n");
    for (command, what) in examples(name) {
        text.push_str(&format!("  {command}\n      {what}\n"));
    }
    text
}

/// The command-line definition with each subcommand's examples at the end
/// of its --help.
pub fn command_with_examples() -> clap::Command {
    let mut cmd = Cli::command().after_help(examples_help("leasejournal"));
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        let help = examples_help(&name);
        cmd = cmd.mut_subcommand(&name, |sub| sub.after_help(help));
    }
    cmd
}

fn render(cmd: clap::Command, name: &str, pages: &[String]) -> Vec<u8> {
    // The operands that take many values, shown as `<PATH>...` in the
    // synopsis (clap_mangen shows each once).
    let many: Vec<String> = cmd
        .get_positionals()
        .filter(|a| a.get_num_args().is_some_and(|n| n.max_values() > 1))
        .map(|a| {
            a.get_value_names()
                .and_then(|v| v.first())
                .map_or_else(|| a.get_id().as_str().to_uppercase(), ToString::to_string)
        })
        .collect();
    // `help` is clap's, and has no page of its own.
    let cmd = cmd.disable_help_subcommand(true);
    let man = Man::new(cmd)
        .date("")
        .source(format!("leasejournal {}", env!("CARGO_PKG_VERSION")));
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = man.render(&mut out);
    let extra = extra(name);
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (code, text) in EXIT_STATUS {
        roff.control("TP", [])
            .text([bold(code.to_string())])
            .text([roman(*text)]);
    }
    roff.control("SH", ["EXAMPLES"]);
    for (command, text) in extra.examples {
        roff.control("TP", [])
            .text([bold(*command)])
            .text([roman(*text)]);
    }
    for (title, paragraphs) in extra.sections {
        roff.control("SH", [*title]);
        for p in *paragraphs {
            roff.control("PP", []).text([roman(*p)]);
        }
    }
    if extra.catalog {
        roff.control("SH", ["FINDINGS"]);
        roff.control("PP", []).text([roman(
            "Codes are stable and never renamed. Severity error makes verify say no-go; warning does only with --strict; info never does. A code with a remedy names the command that fixes it.",
        )]);
        for c in Code::ALL.iter().map(|code| code.info()) {
            roff.control("TP", [])
                .text([
                    bold(c.code.as_str()),
                    roman(format!(" ({}, {})", c.severity.as_str(), c.scope.as_str())),
                ])
                .text([roman(format!(
                    "{} {} Upstream: {} Fix: {}",
                    c.meaning, c.why, c.upstream, c.fix
                ))]);
        }
    }
    roff.control("SH", ["SEE ALSO"]);
    let own = if name == "leasejournal" {
        name.to_string()
    } else {
        format!("leasejournal-{name}")
    };
    let others: Vec<&String> = pages.iter().filter(|p| **p != own).collect();
    for (i, page) in others.iter().enumerate() {
        let comma = if i + 1 < others.len() { "," } else { "" };
        roff.text([bold(page.as_str()), roman(format!("(1){comma}"))]);
    }
    out.extend_from_slice(roff.render().as_bytes());
    let mut page = String::from_utf8_lossy(&out).into_owned();
    if let Some(at) = page.find(".SH SYNOPSIS\n") {
        let start = at + ".SH SYNOPSIS\n".len();
        let end = page[start..].find('\n').map_or(page.len(), |n| start + n);
        let mut synopsis = page[start..end].to_string();
        for value in &many {
            let operand = format!("<\\fI{value}\\fR>");
            synopsis = synopsis.replace(&operand, &format!("{operand}..."));
        }
        page.replace_range(start..end, &synopsis);
    }
    portable(&page).into_bytes()
}

/// A page that `groff -ww -z -man` reads without a warning, as the tests
/// check: every character beyond ASCII as its `\[uXXXX]` escape (groff
/// reads input as Latin-1 unless told otherwise), and a break point (`\:`,
/// which prints nothing) after each comma, slash and bar of a word too
/// long to fit a line (the JSON sections' field lists, long paths), which
/// groff could otherwise neither break nor adjust, in text aligned left.
fn portable(page: &str) -> String {
    const LONG: usize = 30;
    let mut out = String::with_capacity(page.len() + page.len() / 16);
    let mut aligned = false;
    for line in page.split_inclusive('\n') {
        if line.starts_with(".SH") && !aligned {
            aligned = true;
            // Left-aligned, not justified: a line broken only at those
            // break points has no space to stretch. No hyphenation either:
            // command names and options stay whole.
            out.push_str(".ad l\n.nh\n");
        }
        let text = !line.starts_with('.') && !line.starts_with('\'');
        for (i, word) in line.split(' ').enumerate() {
            if i > 0 {
                out.push(' ');
            }
            let breakable = text && word.chars().count() > LONG;
            for c in word.chars() {
                if c.is_ascii() {
                    out.push(c);
                    if breakable && matches!(c, ',' | '/' | '|') {
                        out.push_str("\\:");
                    }
                } else {
                    out.push_str(&format!("\\[u{:04X}]", u32::from(c)));
                }
            }
        }
    }
    out
}

/// Every page: (file name, contents).
pub fn pages() -> Vec<(String, Vec<u8>)> {
    let cmd = Cli::command();
    let subcommands: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .filter(|n| n != "help")
        .collect();
    let names: Vec<String> = std::iter::once("leasejournal".to_string())
        .chain(subcommands.iter().map(|n| format!("leasejournal-{n}")))
        .collect();
    let mut pages = vec![(
        "leasejournal.1".to_string(),
        render(cmd.clone(), "leasejournal", &names),
    )];
    for sub in cmd.get_subcommands() {
        let name = sub.get_name().to_string();
        let full = format!("leasejournal-{name}");
        let sub = sub
            .clone()
            .name(full.clone())
            .bin_name(format!("leasejournal {name}"));
        pages.push((format!("{full}.1"), render(sub, &name, &names)));
    }
    pages
}
