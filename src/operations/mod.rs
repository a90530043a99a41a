//! The operations: one module per command, each taking inputs and
//! returning a report and an outcome. They read files through
//! [`statedir`], and only [`durable`] writes them.

pub mod compact;
pub mod diff;
pub mod durable;
pub mod error;
pub mod exit;
pub mod explain;
pub mod failpoint;
pub mod input;
pub mod inspect;
pub mod migrate;
pub mod plan;
pub mod progress;
pub mod records;
pub mod recover;
pub mod repair;
pub mod schema;
pub mod statedir;
pub mod timeline;
pub mod transaction;
pub mod verify;
pub mod words;
pub mod workers;
