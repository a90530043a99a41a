//! `verify` as data: the finding catalog, the checks and the report.

mod checks;

pub use checks::*;
