//! The version of each JSON report's contract, in one table. A report's
//! number goes up when a field changes meaning or disappears; adding a
//! field does not change it. README and the man pages list them.

/// `inspect`.
pub const INSPECT: u32 = 1;
/// `verify` (3: a state directory's digest ledger is judged, with codes
/// that can make a go of version 2 a no-go, and each target carries
/// `ledger`; 4: fenced lease tables are judged, a state directory's own
/// among them, with `table-*` codes that can make a go of version 3 a
/// no-go; each target carries `tables`, and a target's `kind` may be
/// `table`).
pub const VERIFY: u32 = 4;
/// `explain`.
pub const EXPLAIN: u32 = 1;
/// `recover` (the forecast and `--discard`; 3: the forecast carries the
/// digest ledger, `ledger`, and each reclaimed item its `digest` and
/// whether the AFL rescan dispatches its input again, `rescan`).
pub const RECOVER: u32 = 3;
/// `repair` (2: `ledgers`, what it did to each digest ledger).
pub const REPAIR: u32 = 2;
/// `migrate`.
pub const MIGRATE: u32 = 2;
/// `compact` (2: `ledgers`, what it did to each digest ledger).
pub const COMPACT: u32 = 2;
/// `restore`.
pub const RESTORE: u32 = 1;
/// `rollback`.
pub const ROLLBACK: u32 = 1;
/// `diff` (2: `counts` keys are identifiers, `task_changed` rather than
/// `task changed`; 3: `kind` may be `ledger`, whose `summary` holds each
/// side's ledger totals, and whose `changes` list at most `--max-examples`
/// digests of each kind while `counts` stay exact; the member `ledger`,
/// `null` for the other kinds; 4: `kind` may be `table`, two fenced lease
/// tables, whose `summary` holds each side's `snapshot_counts` and files,
/// whose `changes` are records and the names beside them, and the member
/// `table`, `null` for the other kinds).
pub const DIFF: u32 = 4;
