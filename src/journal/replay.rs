//! Upstream's replay state machine (`WorkLeaseJournal._load`, step 5): the
//! last lease of an id wins, `done` completes only an active id, `reclaim`
//! drops any id, unknown ops are counted and ignored. Every application
//! reports its effect so that reports can say what each line did.

use std::collections::{HashMap, HashSet};

use foldhash::fast::RandomState;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::record::{Clock, Lease, Op, Record, WorkId};
use crate::json::PyInt;

/// An active lease as the replay holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Active {
    /// The owning worker rank.
    pub worker: PyInt,
    /// The lease time.
    pub time: f64,
    /// The attempts counter.
    pub attempts: PyInt,
    /// The clock domain.
    pub clock: Clock,
    /// 1-based line of the lease record that is in force.
    pub line: u64,
    /// Byte offset of that line.
    pub offset: u64,
    /// Canonical payload bytes.
    pub payload: std::sync::Arc<[u8]>,
    /// Whether the lease line is exactly what compaction would write.
    pub verbatim: bool,
}

/// What applying one record did to the state.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "effect", rename_all = "kebab-case")]
pub enum Effect {
    /// A lease for an id that was neither active nor completed.
    Activated,
    /// A lease for a completed id: it is active again (the work runs twice).
    Reactivated,
    /// A lease for an already active id: the new one replaces it (L1).
    TookOver {
        /// The owner it replaced.
        previous_worker: PyInt,
    },
    /// A `done` for an active id.
    Completed {
        /// The owner at completion.
        worker: PyInt,
    },
    /// A `done` for an id that is not active: upstream does nothing.
    DoneIgnored {
        /// Whether the id was already completed.
        already_completed: bool,
    },
    /// A `reclaim` for an active id.
    Reclaimed {
        /// The owner it dropped.
        worker: PyInt,
    },
    /// A `reclaim` for an id that is not active: upstream does nothing.
    ReclaimIgnored,
    /// A lease line upstream refuses.
    LeaseIgnored {
        /// Why.
        reason: String,
    },
    /// An op other than lease/done/reclaim.
    UnknownOp {
        /// The op.
        op: String,
    },
}

/// Where the records that completed an id are: the offsets of the lease
/// line in force at completion and of the `done` line, and whether each is
/// already in the form compaction writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Byte offset of the lease line.
    pub lease_offset: u64,
    /// Byte offset of the done line.
    pub done_offset: u64,
    /// The lease line can be copied as it stands.
    pub lease_verbatim: bool,
    /// The done line can be copied as it stands.
    pub done_verbatim: bool,
}

/// The replay state: what upstream's loader holds after reading the file.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    /// Active leases.
    pub active: HashMap<WorkId, Active, RandomState>,
    /// Completed ids.
    pub completed: HashSet<WorkId, RandomState>,
    /// Upstream's `events` counter (counted lines), which drives its
    /// compaction timing.
    pub events: u64,
    /// For each completed id, where its records are; kept only when asked
    /// for (compaction needs it, reports do not).
    pub completions: Option<HashMap<WorkId, Completion, RandomState>>,
}

impl Replay {
    /// Applies a record read at `line`/`offset` and says what it did.
    pub fn apply(&mut self, record: &Record, line: u64, offset: u64) -> Effect {
        self.events += 1;
        let id = record.id;
        match &record.op {
            Op::Lease(Err(rejection)) => Effect::LeaseIgnored {
                reason: rejection.to_string(),
            },
            Op::Lease(Ok(lease)) => self.lease(id, lease, line, offset, record.verbatim),
            Op::Done => match self.active.remove(&id) {
                Some(active) => {
                    self.completed.insert(id);
                    if let Some(completions) = &mut self.completions {
                        completions.insert(
                            id,
                            Completion {
                                lease_offset: active.offset,
                                done_offset: offset,
                                lease_verbatim: active.verbatim,
                                done_verbatim: record.verbatim,
                            },
                        );
                    }
                    Effect::Completed {
                        worker: active.worker,
                    }
                }
                None => Effect::DoneIgnored {
                    already_completed: self.completed.contains(&id),
                },
            },
            Op::Reclaim => match self.active.remove(&id) {
                Some(active) => Effect::Reclaimed {
                    worker: active.worker,
                },
                None => Effect::ReclaimIgnored,
            },
            Op::Unknown(op) => Effect::UnknownOp { op: op.clone() },
        }
    }

    fn lease(
        &mut self,
        id: WorkId,
        lease: &Lease,
        line: u64,
        offset: u64,
        verbatim: bool,
    ) -> Effect {
        let was_completed = self.completed.remove(&id);
        if was_completed && let Some(completions) = &mut self.completions {
            completions.remove(&id);
        }
        let entry = Active {
            worker: lease.worker.clone(),
            time: lease.time,
            attempts: lease.attempts.clone(),
            clock: lease.clock,
            line,
            offset,
            payload: lease.payload.clone(),
            verbatim,
        };
        match self.active.insert(id, entry) {
            Some(previous) => Effect::TookOver {
                previous_worker: previous.worker,
            },
            None if was_completed => Effect::Reactivated,
            None => Effect::Activated,
        }
    }

    /// A replay that also records where each completion's records are.
    pub fn tracking_completions() -> Replay {
        Replay {
            completions: Some(HashMap::default()),
            ..Replay::default()
        }
    }

    /// SHA-256 over the canonical state: every active lease (id, worker,
    /// time, attempts, clock, payload) in id order, then every completed id
    /// in order. Two files with the same digest replay to the same state.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        h.update(b"active\n");
        for (id, a) in self.active_sorted() {
            h.update(id.to_hex().as_bytes());
            h.update(
                format!(
                    "\t{}\t{}\t{}\t{}\t",
                    a.worker,
                    crate::json::float_repr(a.time),
                    a.attempts,
                    a.clock.as_str()
                )
                .as_bytes(),
            );
            h.update(&a.payload);
            h.update(b"\n");
        }
        h.update(b"completed\n");
        for id in self.completed_sorted() {
            h.update(id.to_hex().as_bytes());
            h.update(b"\n");
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Active ids in id order.
    pub fn active_sorted(&self) -> Vec<(&WorkId, &Active)> {
        let mut v: Vec<_> = self.active.iter().collect();
        v.sort_unstable_by_key(|(id, _)| **id);
        v
    }

    /// Completed ids in id order.
    pub fn completed_sorted(&self) -> Vec<WorkId> {
        let mut v: Vec<_> = self.completed.iter().copied().collect();
        v.sort_unstable();
        v
    }
}
