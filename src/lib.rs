//! leasejournal: inspect, verify, recover, migrate, compact, restore, roll
//! back and diff the recovery state of a SymCC MPI fuzzing master.
//!
//! Four layers; data flows one way, bytes → engine → store → operation →
//! report → face, and no layer uses one above it. `tests/cli/layout.rs`
//! checks this, that no two sibling modules use each other, that no
//! command uses another, and that chains of imports among the operations
//! are at most three modules long.
//!
//! **Engine** — upstream's formats and rules byte for byte; bytes or values
//! in, data out; no files opened, no output policy. The only `unsafe`
//! outside system calls.
//! - `engine`: the layer.
//! - `engine::json`: Python-compatible JSON, its submodules
//!   `engine::json::value` (the value model), `engine::json::parse`
//!   (CPython's verdicts), `engine::json::encode` (the canonical encoder),
//!   `engine::json::python` (int/float/str/truthiness coercions) and
//!   `engine::json::first_line` (a file's first line, for the formats'
//!   sniffers).
//! - `engine::journal`: the JSONL lease journal: `engine::journal::lines`
//!   (lines as Python's universal newlines split them),
//!   `engine::journal::model` (records, ops, clocks, why a line is
//!   ignored), `engine::journal::id` (work ids and their SIMD hex codecs),
//!   `engine::journal::classify` (one line judged on its own, by two
//!   siblings: `engine::journal::classify::fast`, the canonical fast path,
//!   and `engine::journal::classify::general`, every other line),
//!   `engine::journal::replay` (upstream's loader, its rules),
//!   `engine::journal::idset` (the id sets the replay keeps its state in),
//!   `engine::journal::reclaim` (upstream's `recover_expired` selection and
//!   order),
//!   `engine::journal::scan`
//!   (read once, classify in parallel, replay in order; the threading in
//!   one place, on rayon: `engine::journal::scan::stream`,
//!   `engine::journal::scan::positional`, and `engine::journal::scan::summary`,
//!   the totals), `engine::journal::salvage` (records hidden in lines
//!   upstream ignores, and what a repair brings back),
//!   `engine::journal::resume` (upstream's rebuild of a lease
//!   payload into a work item), `engine::journal::sniff` (the journals'
//!   names and first lines), `engine::journal::encode` (records as
//!   upstream writes them), `engine::journal::compaction` (the compacted
//!   journal, planned and written), `engine::journal::seal` (the end of a
//!   journal made safe to append to) and `engine::journal::state` (a
//!   replay state as counts and a digest).
//! - `engine::table`: the fenced lease tables, `<root>/<shard>/<id>.json`:
//!   `engine::table::names` (the names in a root and a shard directory)
//!   and `engine::table::record` (upstream's reader of a record).
//! - `engine::snapshot`: `.state_tasks.json` and upstream's restore rules;
//!   `engine::snapshot::sniff` (its name and first line).
//! - `engine::ledger`: the digest ledger `.state_shards/processed.NNN.log`
//!   as upstream's `load_recent` reads it: `engine::ledger::line` (lines
//!   after ASCII deletion and universal newlines, each judged, and the
//!   tail), `engine::ledger::set` (distinct digests in ~37 bytes each, two
//!   open-addressed tables filled in batches on two threads),
//!   `engine::ledger::slots` (their memory, in huge pages),
//!   `engine::ledger::scan` (a ledger read file by file at a shard count),
//!   `engine::ledger::sniff` (its names), `engine::ledger::start` (the
//!   master start's rules: the shard count from `SYMCC_STATE_SHARDS` or the
//!   workers, and whether `SYMCC_PERSISTENT_STATE` turns the ledger off),
//!   `engine::ledger::seal` (a file's end made safe for the next append)
//!   and `engine::ledger::rewrite` (a file rewritten by repair and compact:
//!   the lines kept, the digests written, the file read back).
//! - `engine::table`: the fenced lease tables (`<root>/<shard:03d>/<id>.json`)
//!   and upstream's rules for them (what the scans return and count, what
//!   a claim does): `engine::table::names` (shard directories, records,
//!   lock and temporary files, probe directories),
//!   `engine::table::record` (a record's bytes as `_read_record` and
//!   `_valid_record` judge them) and `engine::table::fast` (its fast path
//!   for records in upstream's exact form, checked against the general
//!   reader).
//!
//! **Store** — the only code that touches a state directory's files.
//! - `store`: the layer; `store::path` (a file's directory, paths quoted
//!   for a shell, the file a backup or an export is named after), `store::error` (`InputError`, I/O errors in words),
//!   `store::open` (inputs opened without ever blocking), `store::format`
//!   (the formats a state directory holds, by name and first bytes),
//!   `store::statedir` (a state directory examined), `store::ledger` (the
//!   digest ledger's directory and its names), `store::table` (a fenced
//!   lease table's listings, record bytes and this host's facts: its node
//!   name, running pids, held record locks), `store::lock` (the
//!   master's lock as `/proc/locks` shows it, and the opt-in probe),
//!   `store::mount` (a file system other hosts share, and how far `flock`
//!   on it reaches), `store::procs` (the
//!   processes with a file open), `store::resolve` (the one
//!   resolver of a path, for readers and writers), `store::link` (a
//!   symbolic link resolved once for a writer, and whether it may be
//!   written through), `store::read` (a path's
//!   journals, scanned), `store::progress` (reading progress, undrawn),
//!   `store::failpoint` (the crash tests' failpoints, empty without the
//!   `test-hooks` feature), `store::table` (a fenced lease table's files,
//!   read).
//! - `store::durable`: the only code that writes user files, a file by
//!   idea: `store::durable::error` (why a write failed, what a run
//!   changed), `store::durable::lock` (the master's lock, held),
//!   `store::durable::lease` (file leases), `store::durable::backup`,
//!   `store::durable::replace` (a new version through a checked temporary
//!   file), `store::durable::reread` (the check's view of it),
//!   `store::durable::late` (late appends carried in),
//!   `store::durable::append` (seal, append, fsync),
//!   `store::durable::remove` (a file removed from a set, backed up
//!   first), `store::durable::table` (a table's entries moved under their
//!   record's lock).
//! - `store::session`: lock → backup → publish (a rewrite, an append, an
//!   export, a new or removed ledger file) → re-read, for every writing
//!   command, over the paths it names (a state directory's ledger
//!   included, for repair and compact); returns what it changed;
//!   `store::compare` (a result compared with the file as it is written).
//!
//! **Operations** — one module per command, input → report + exit status;
//! they never print, and no command uses another.
//! - `operations`: the layer.
//! - The commands: `operations::inspect`, `operations::verify` (with
//!   `operations::verify::report`, its report and verdict, and
//!   `operations::verify::remote`, a master on another host),
//!   `operations::explain`, `operations::recover`, `operations::repair`
//!   (with `operations::repair::table`, a fenced lease table's repair),
//!   `operations::migrate`, `operations::compact`, `operations::restore`
//!   (a discard export's leases appended again, none that would run
//!   twice), `operations::rollback` (a file put back to a backup, refused
//!   where that loses newer work), `operations::diff`
//!   (with its four comparisons, `operations::diff::snapshot`,
//!   `operations::diff::journal`, `operations::diff::ledger`, two
//!   digest ledgers per shard file and in what upstream loads, and
//!   `operations::diff::table`, two lease tables record by record);
//!   `operations::records`: `inspect --records`, the journal as a stream
//!   of one JSON object per line; `operations::workers`: `inspect
//!   --workers`, one row per worker rank; `operations::timeline`:
//!   `inspect --timeline`, completions per time bucket.
//! - What the commands share: `operations::ledger` (the digest ledger read
//!   at a shard count, as a report, and the one place that decides that
//!   count and whether the next start reads the ledger at all),
//!   `operations::ledger_change` (the ledger sealed, re-sharded or
//!   compacted by repair and compact, its files published in an order that
//!   loses no digest),
//!   `operations::table` (a fenced lease table read as upstream's scans
//!   and claims see it, in one parallel pass, for inspect, verify and
//!   recover),
//!   `operations::findings` (what verify finds:
//!   `operations::findings::catalog`, the codes and the findings;
//!   `operations::findings::journal`, the checks of a journal and of
//!   resume's forecast; `operations::findings::state`, of a snapshot and a
//!   state directory; `operations::findings::ledger`, of the digest ledger
//!   and the active leases it should hold; `operations::findings::table`,
//!   of a fenced lease table), `operations::report` (the writing commands' report),
//!   `operations::numbers` (counts and durations in words),
//!   `operations::table` (a fenced lease table read as upstream sees it),
//!   `operations::schema` (each JSON report's contract version),
//!   `operations::exit` (the exit statuses, in one enum).
//!
//! **Face** — draws reports and parses the command line.
//! - `render`: tables, colour and JSON, report in, bytes out:
//!   `render::table` (the table style), `render::inspect`, `render::ledger`
//!   (the digest ledger), `render::lease_table` (a fenced lease table, its
//!   line in verify and its forecast in recover), `render::ledger_change` (what repair and compact
//!   do to it), `render::table_repair` (what repair does to a fenced lease
//!   table), `render::verify`,
//!   `render::write` (the writing commands), `render::restore` (restore
//!   and rollback), `render::diff` (with `render::diff_table`, two
//!   lease tables),
//!   `render::workers`, `render::timeline`, `render::records` (the NDJSON
//!   lines of `inspect --records`).
//! - `cli`: clap definitions; each command file parses, runs one operation
//!   and emits (`cli::inspect`, `cli::verify`, `cli::explain`,
//!   `cli::repair`, `cli::recover`, `cli::migrate`, `cli::compact`,
//!   `cli::restore`, `cli::rollback`, `cli::diff`, `cli::completions`);
//!   `cli::ledger` (the ledger's options: `--state-shards`, `--workers`
//!   and the environment the master reads, `--digest`, `--digest-of`, and
//!   `diff`'s `--state-shards`, `--max-examples`); `cli::lease_table`
//!   (the fenced lease tables' options: `--lease-shards`, `--table-kind`,
//!   inspect's `--ttl`); `cli::diff_options` (`diff`'s `--only`, and
//!   `--lease-shards`, `--ttl`, `--now` for lease tables);
//!   `cli::table_args` (repair's table options: `--lease-shards`,
//!   `--all-masters-stopped`, `--archive-done`, `--older-than`, `--now`);
//!   `cli::check` (verify's settings: `--now`, `--ttl`, `--min-severity`,
//!   `--remote-master`, …); `cli::output` (`--format`,
//!   `--color`, progress, the one emit), `cli::write` (the writing
//!   options, their notes and the report's end), `cli::select`
//!   (`--discard`'s selection), `cli::forensics` (`inspect --records`,
//!   `--workers`, `--timeline`), `cli::man` (man pages).
//!
//! **Test hooks** — `fuzzing`: the properties the fuzz targets and property
//! tests check (the JSON, the journal, the snapshot and the ledger
//! readers), compiled only with the `test-hooks` feature.
//!
//! # Adding a format
//!
//! A new upstream format (the digest ledger, the fenced lease tables) takes
//! three things and touches no unrelated command:
//! 1. an engine module (`engine::<format>`): its bytes, its rules, and the
//!    file names and first bytes that are its own;
//! 2. one entry where the file tier recognises it, `store::format`: a
//!    `Kind` variant whose `state_files` and sniffing come from that
//!    module (and its names in `STATE_FILES`, the list messages give), so
//!    that `store::statedir::examine` and `store::resolve` find it;
//! 3. each command's view of it, in that command's own module.
pub mod cli;
pub mod engine;
#[cfg(any(test, feature = "test-hooks"))]
pub mod fuzzing;
pub mod operations;
pub mod render;
pub mod store;
