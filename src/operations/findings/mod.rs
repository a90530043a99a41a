//! What `verify` finds, shared by the commands that report findings
//! (`verify`, `explain`, `inspect --records`): the catalog of codes and the
//! findings themselves ([`catalog`]), the checks of journals and of resume's
//! forecast ([`journal`]), and of snapshots and state directories
//! ([`state`]). Pure: files come in as readers or bytes, findings go out as
//! values; the caller passes `now`, the TTL and the skew ([`Settings`]).

pub mod catalog;
pub mod journal;
pub mod state;

use catalog::Code;

/// How far a lease's time may run ahead of `now`, or a journal's time run
/// back, before it is a finding (`--skew`), in seconds.
pub const DEFAULT_SKEW: f64 = 300.0;

/// What a verification asks.
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
    /// Codes to leave out entirely, as given (the report echoes them).
    pub ignore: Vec<Code>,
    /// Warnings make the verdict no-go too.
    pub strict: bool,
}

impl Settings {
    /// What the checks ask at `now` by default: every lease expired (as
    /// resume reclaims them all), the default skew, one example per code,
    /// nothing ignored, warnings not fatal.
    pub fn at(now: f64) -> Settings {
        Settings {
            now,
            ttl: 0.0,
            skew: DEFAULT_SKEW,
            max_examples: 1,
            ignore: Vec::new(),
            strict: false,
        }
    }
}
