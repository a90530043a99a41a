//! The operations: one module per command, each taking inputs and
//! returning a report and an outcome. They read files through `store`,
//! and only its durable code writes them.

pub mod compact;
pub mod diff;
pub mod exit;
pub mod explain;
pub mod findings;
pub mod inspect;
pub mod ledger;
pub mod ledger_change;
pub mod migrate;
pub mod numbers;
pub mod records;
pub mod recover;
pub mod repair;
pub mod report;
pub mod restore;
pub mod rollback;
pub mod schema;
pub mod table;
pub mod timeline;
pub mod verify;
pub mod workers;
