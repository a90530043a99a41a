//! `verify` as data: the finding catalog ([`catalog`]), the checks of
//! journals, snapshots and state directories ([`checks`]), the findings
//! they yield ([`findings`]) and the report ([`report`]).

pub mod catalog;
pub mod checks;
pub mod findings;
pub mod report;

use std::collections::BTreeSet;

pub use catalog::{CHECKED, Code, CodeInfo, NOT_CHECKABLE, Remedy, Scope, Severity};
pub use checks::{
    JournalVerification, check_shortcut, directory, ignore_code, journal, resume, snapshot,
};
pub use findings::{At, Finding, Findings, Id};
pub use report::{
    CheckError, FileCounts, RemedyTargets, SettingsReport, TargetReport, VERIFY_SCHEMA_VERSION,
    Verdict, VerifyReport, next_steps, shell_quote,
};

/// Settings of a verification.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The present, in Unix seconds.
    pub now: f64,
    /// Leases at least this old are expired (0: all, as resume does).
    pub ttl: f64,
    /// Clock tolerance for future leases and regressions.
    pub skew: f64,
    /// Examples kept per code (0: all). Counts stay exact.
    pub max_examples: usize,
    /// Codes to leave out entirely.
    pub ignore: BTreeSet<Code>,
}
