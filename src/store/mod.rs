//! The file tier: the only code that touches a state directory's files.
//! Operations ask it what a path names and read through it; only its
//! durable code writes, and only through a write session.
//!
//! - `store::path`: the directory a file is in, paths quoted for a shell;
//! - `store::error`: [`InputError`](error::InputError), why an input
//!   cannot be read, and I/O errors in words;
//! - `store::open`: regular files opened for reading without ever blocking,
//!   standard input as a file, a directory's names;
//! - `store::format`: the formats a state directory holds
//!   ([`Kind`](format::Kind)): each format's file names and first bytes;
//! - `store::statedir`: a state directory examined: its state files, the
//!   temporary files and backups beside them, the master's lock;
//! - `store::lock`: the master's lock as `/proc/locks` shows it (the lock
//!   this tool holds is `store::durable`'s);
//! - `store::mount`: whether a directory is on a file system other hosts
//!   share, and how far `flock` on it reaches;
//! - `store::resolve`: the one resolver of a command-line path, for readers
//!   and writers alike;
//! - `store::link`: a state file that is a symbolic link, resolved once for
//!   a writer, and the rule that says whether it may be written through;
//! - `store::read`: a path's journals in resume order, scanned with their
//!   progress; many paths side by side;
//! - `store::progress`: how reading progress is reported, without knowing
//!   how (or whether) the face draws it;
//! - `store::procs`: the processes `/proc` shows with a file open, and what
//!   their open descriptions hold;
//! - `store::durable`: durable writes, a file by idea (errors, lock,
//!   leases, backup, replace, re-read, late appends, append);
//! - `store::compare`: writers that compare a result with the file and
//!   copy it to two places;
//! - `store::session`: the write session: lock, backup, publish (a
//!   rewrite, an append, an export), re-read, and what it changed;
//! - `store::failpoint`: the crash tests' failpoints, empty without the
//!   `test-hooks` feature.

pub mod compare;
pub mod durable;
pub mod error;
pub mod failpoint;
pub mod format;
pub mod ledger;
pub mod link;
pub mod lock;
pub mod mount;
pub mod open;
pub mod path;
pub mod procs;
pub mod progress;
pub mod read;
pub mod resolve;
pub mod session;
pub mod statedir;
pub mod table;
