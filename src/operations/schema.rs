//! The version of each JSON report's contract, in one table. A report's
//! number goes up when a field changes meaning or disappears; adding a
//! field does not change it. README and the man pages list them.

/// `inspect`.
pub const INSPECT: u32 = 1;
/// `verify`.
pub const VERIFY: u32 = 2;
/// `explain`.
pub const EXPLAIN: u32 = 1;
/// `recover` (the forecast and `--discard`).
pub const RECOVER: u32 = 2;
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
/// `task changed`).
pub const DIFF: u32 = 2;
