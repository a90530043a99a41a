//! leasejournal: inspect, verify, recover, migrate, compact and diff the
//! recovery state of a SymCC MPI fuzzing master.
//!
//! Three layers; data flows one way, bytes → engine → operation → report →
//! face, and no layer uses one above it (`tests/cli/layout.rs` checks
//! this, and that no two sibling modules use each other).
//!
//! **Engine** — upstream's formats byte for byte; bytes or values in, data
//! out; no files opened, no output policy. The only `unsafe` outside
//! system calls.
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
//!   upstream writes them).
//! - `engine::snapshot`: `.state_tasks.json` and upstream's restore rules;
//!   `engine::snapshot::sniff` (its name and first line).
//!
//! **Operations** — one module per command, input → report + exit status;
//! they never print.
//! - `operations`: the layer.
//! - `operations::inspect`, `operations::verify` (with
//!   `operations::verify::catalog`, the finding codes as an enum;
//!   `operations::verify::checks`, `operations::verify::findings`,
//!   `operations::verify::report`), `operations::explain`,
//!   `operations::recover`, `operations::repair`, `operations::migrate`,
//!   `operations::compact`, `operations::diff`: the commands;
//!   `operations::records`: `inspect --records`, the journal as a stream
//!   of one JSON object per line; `operations::workers`: `inspect
//!   --workers`, one row per worker rank; `operations::timeline`:
//!   `inspect --timeline`, completions per time bucket.
//! - `operations::plan`: what the writing commands' plans share (states
//!   before and after, the tail fix, outcomes and reports).
//! - `operations::transaction`: plan → lock → backup → publish → re-read,
//!   for every writing command.
//! - `operations::durable`: the only code that writes user files.
//! - `operations::failpoint`: the crash tests' failpoints, empty without
//!   the `test-hooks` feature.
//! - `operations::input`: what a path names, opened read-only;
//!   `operations::statedir`: a state directory's files and the master's
//!   lock as `/proc/locks` shows it; `operations::error`: `InputError`.
//! - `operations::progress`: how an operation reports reading progress.
//! - `operations::words`: errors, counts, durations and paths in words.
//! - `operations::schema`: each JSON report's contract version.
//! - `operations::exit`: the exit statuses, in one enum.
//!
//! **Face** — draws reports and parses the command line.
//! - `render`: tables, colour and JSON, report in, bytes out:
//!   `render::table` (the table style), `render::inspect`, `render::verify`,
//!   `render::write` (the writing commands), `render::diff`,
//!   `render::workers`, `render::timeline`.
//! - `cli`: clap definitions; each command file parses, runs one operation
//!   and emits (`cli::inspect`, `cli::verify`, `cli::explain`,
//!   `cli::repair`, `cli::recover`, `cli::migrate`, `cli::compact`,
//!   `cli::diff`, `cli::completions`); `cli::output` (`--format`,
//!   `--color`, progress, the one emit), `cli::write` (the writing
//!   options), `cli::select` (`--discard`'s selection), `cli::forensics`
//!   (`inspect --records`, `--workers`, `--timeline`), `cli::man` (man pages).
//!
//! **Test hooks** — `fuzzing`: the properties the fuzz targets and property
//! tests check, compiled only with the `test-hooks` feature.
pub mod cli;
pub mod engine;
#[cfg(any(test, feature = "test-hooks"))]
pub mod fuzzing;
pub mod operations;
pub mod render;
