//! `verify` as data: the finding catalog ([`catalog`]), the checks and
//! the report.

pub mod catalog;
mod checks;

pub use catalog::{CHECKED, Code, CodeInfo, NOT_CHECKABLE, Remedy, Scope, Severity};
pub use checks::*;
