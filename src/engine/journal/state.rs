//! A replay state as a plan shows it and a written file must replay to:
//! counts and the digest ([`StateView`]).

use serde::Serialize;

use super::{Active, Replay, WorkId, state_digest};

/// A replay state as counts and a digest ([`Replay::digest`]): what a
/// written file must replay to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StateView {
    /// Active leases.
    pub active: usize,
    /// Completed ids.
    pub completed: usize,
    /// SHA-256 of the canonical state.
    pub digest: String,
}

impl StateView {
    /// Summarises a replay.
    pub fn of(replay: &Replay) -> StateView {
        StateView {
            active: replay.active.len(),
            completed: replay.completed.len(),
            digest: replay.digest(),
        }
    }

    /// Summarises a state of active leases, in id order, and no completed
    /// ids.
    pub fn of_active<'a>(
        active: impl ExactSizeIterator<Item = (&'a WorkId, &'a Active)>,
    ) -> StateView {
        StateView {
            active: active.len(),
            completed: 0,
            digest: state_digest(active, std::iter::empty()),
        }
    }
}
