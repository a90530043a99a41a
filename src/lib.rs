//! leasejournal: inspect, verify, recover, migrate, compact and diff the
//! recovery state of a SymCC MPI fuzzing master.
//!
//! Architecture (dependencies point downwards):
//!
//! - [`cli`]: clap definitions, one file per subcommand, the exit codes.
//!   Parses, loads, calls the domain, renders.
//! - [`render`]: tables, colour and JSON; data in, bytes out.
//! - Domain, pure (bytes or values in, data out; never prints, never reads
//!   the clock or the environment):
//!   - [`json`]: Python-compatible JSON (parser, canonical encoder, coercions);
//!   - [`journal`]: the JSONL lease journal (lines, records, replay, scan);
//!   - [`snapshot`]: `.state_tasks.json` and upstream's restore rules;
//!   - [`inspect`]: the reports of `inspect`;
//!   - [`statedir`]: a state directory's files, temp leftovers and the
//!     master lock as `/proc/locks` shows it, and the one safe way to open
//!     an input file.
pub mod cli;
pub mod engine;
#[cfg(any(test, feature = "test-hooks"))]
pub mod fuzzing;
pub mod operations;
pub mod render;
