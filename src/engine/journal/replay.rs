//! Upstream's replay state machine (`WorkLeaseJournal._load`, step 5): the
//! last lease of an id wins, `done` completes only an active id, `reclaim`
//! drops any id, unknown ops are counted and ignored. Every application
//! reports its effect so that reports can say what each line did. Also the
//! state's digest. The sets the state is kept in are `idset`'s.

use sha2::{Digest, Sha256};

use super::id::WorkId;
use super::idset::{ActiveLeases, Completed};
use super::model::{Active, Completion, Effect, Lease, Op, Payload, Record};

/// The replay state: what upstream's loader holds after reading the file.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    /// Active leases.
    pub active: ActiveLeases,
    /// Completed ids.
    pub completed: Completed,
    /// Upstream's `events` counter (counted lines), which drives its
    /// compaction timing.
    pub events: u64,
    /// Leases of the block being replayed whose payloads are still in the
    /// block ([`Replay::apply_in_block`]).
    deferred: Vec<Deferred>,
}

/// A lease's payload not yet copied out of its block: most leases are
/// done a few lines later, so most payloads are never copied at all.
#[derive(Clone, Debug)]
struct Deferred {
    id: WorkId,
    /// The lease line's offset in the file, which tells whether that lease
    /// is still the one in force.
    offset: u64,
    /// Where the payload is in the block.
    start: usize,
    end: usize,
}

impl Replay {
    /// Applies a record read at `line`/`offset`, whose bytes are `content`,
    /// and says what it did.
    pub fn apply(&mut self, record: &Record, content: &[u8], line: u64, offset: u64) -> Effect {
        self.apply_at(record, content, line, offset, None)
    }

    /// Like [`Replay::apply`] for a line that sits at `at` in a block of a
    /// scan: an accepted lease's payload stays in the block until
    /// [`Replay::settle`], which copies it only if the lease is still
    /// active then. Every block's records must be settled before the block
    /// goes and before the state is read.
    pub(super) fn apply_in_block(
        &mut self,
        record: &Record,
        content: &[u8],
        line: u64,
        offset: u64,
        at: usize,
    ) -> Effect {
        self.apply_at(record, content, line, offset, Some(at))
    }

    /// Copies the payloads of the block's leases that are still active.
    pub(super) fn settle(&mut self, block: &[u8]) {
        for d in self.deferred.drain(..) {
            if let Some(active) = self.active.get_mut(&d.id)
                && active.offset == d.offset
            {
                active.payload = block[d.start..d.end].into();
            }
        }
    }

    fn apply_at(
        &mut self,
        record: &Record,
        content: &[u8],
        line: u64,
        offset: u64,
        at: Option<usize>,
    ) -> Effect {
        self.events += 1;
        let id = record.id;
        match &record.op {
            Op::Lease(Err(rejection)) => Effect::LeaseIgnored {
                reason: rejection.to_string(),
            },
            Op::Lease(Ok(lease)) => {
                debug_assert_eq!(lease.id.id(), &id, "a lease verified as another id");
                let payload: Box<[u8]> = match (&lease.payload, at) {
                    (Payload::InLine { start, end }, Some(at)) => {
                        self.deferred.push(Deferred {
                            id,
                            offset,
                            start: at + start,
                            end: at + end,
                        });
                        Box::default()
                    }
                    (payload, _) => payload.bytes(content).into(),
                };
                self.lease(lease, payload, line, offset, record.verbatim)
            }
            Op::Done => match self.active.remove_entry(&id) {
                Some((verified, active)) => {
                    self.completed.insert(
                        verified,
                        &Completion {
                            lease_offset: active.offset,
                            done_offset: offset,
                            lease_verbatim: active.verbatim,
                            done_verbatim: record.verbatim,
                        },
                    );
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
                    lease_time: active.time,
                },
                None => Effect::ReclaimIgnored,
            },
            Op::Unknown(op) => Effect::UnknownOp { op: op.clone() },
        }
    }

    fn lease(
        &mut self,
        lease: &Lease,
        payload: Box<[u8]>,
        line: u64,
        offset: u64,
        verbatim: bool,
    ) -> Effect {
        let was_completed = self.completed.remove(lease.id.id());
        let entry = Active {
            worker: lease.worker.clone(),
            time: lease.time,
            attempts: lease.attempts.clone(),
            clock: lease.clock,
            line,
            offset,
            payload,
            verbatim,
        };
        match self.active.insert(lease.id, entry) {
            Some(previous) => Effect::TookOver {
                previous_worker: previous.worker,
            },
            None if was_completed => Effect::Reactivated,
            None => Effect::Activated,
        }
    }

    /// An empty replay with room for `active` leases and `completed` ids.
    pub fn with_capacity(active: usize, completed: usize) -> Replay {
        let mut ids = Completed::default();
        ids.reserve(completed);
        let mut leases = ActiveLeases::default();
        leases.reserve(active);
        Replay {
            active: leases,
            completed: ids,
            ..Replay::default()
        }
    }

    /// A replay that also records where each completion's records are.
    pub fn tracking_completions() -> Replay {
        Replay {
            completed: Completed::tracking_sites(),
            ..Replay::default()
        }
    }

    /// SHA-256 over the canonical state: every active lease (id, worker,
    /// time, attempts, clock, payload) in id order, then every completed id
    /// in order. Two files with the same digest replay to the same state.
    /// The completed ids are sorted a sixteenth at a time
    /// ([`Completed::for_each_sorted_run`]), never copied whole.
    pub fn digest(&self) -> String {
        debug_assert!(self.deferred.is_empty(), "a block was not settled");
        let mut h = StateHasher::new(self.active_sorted().into_iter());
        self.completed.for_each_sorted_run(|ids| h.completed(ids));
        h.finish()
    }

    /// Active ids in id order.
    pub fn active_sorted(&self) -> Vec<(&WorkId, &Active)> {
        debug_assert!(self.deferred.is_empty(), "a block was not settled");
        let mut v: Vec<_> = self.active.iter().collect();
        v.sort_unstable_by_key(|(id, _)| **id);
        v
    }

    /// Completed ids in id order (for tests: everything else streams them,
    /// [`Completed::sorted`], rather than hold a sorted copy).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn completed_sorted(&self) -> Vec<WorkId> {
        self.completed.sorted().collect()
    }
}

/// [`Replay::digest`] of a state given as its active leases and its
/// completed ids, each in id order.
pub fn state_digest<'a>(
    active: impl Iterator<Item = (&'a WorkId, &'a Active)>,
    completed: impl Iterator<Item = WorkId>,
) -> String {
    let mut h = StateHasher::new(active);
    for id in completed {
        h.completed(&[id]);
    }
    h.finish()
}

/// The state digest, fed in order: the active leases, then the completed
/// ids in as many runs as they come in.
struct StateHasher(Sha256);

impl StateHasher {
    fn new<'a>(active: impl Iterator<Item = (&'a WorkId, &'a Active)>) -> StateHasher {
        let mut h = Sha256::new();
        h.update(b"active\n");
        for (id, a) in active {
            h.update(id.hex_bytes());
            h.update(
                format!(
                    "\t{}\t{}\t{}\t{}\t",
                    a.worker,
                    // Python compares times as numbers: -0.0 == 0.0. The
                    // digest must too, or a journal whose `"time":"-0"`
                    // upstream's compaction writes back as -0.0 (read
                    // again as 0.0) would not match its own plan.
                    crate::engine::json::float_repr(a.time + 0.0),
                    a.attempts,
                    a.clock.as_str()
                )
                .as_bytes(),
            );
            h.update(&a.payload);
            h.update(b"\n");
        }
        h.update(b"completed\n");
        StateHasher(h)
    }

    fn completed(&mut self, ids: &[WorkId]) {
        for id in ids {
            let mut line = [b'\n'; 65];
            line[..64].copy_from_slice(&id.hex_bytes());
            self.0.update(line);
        }
    }

    fn finish(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::journal::id::verified_for_test as verified;
    use crate::engine::journal::model::Clock;
    use crate::engine::json::PyInt;

    /// Replays `lines` as one block of a scan and settles it.
    fn replay_block(replay: &mut Replay, lines: &[Vec<u8>]) {
        let block: Vec<u8> = lines.concat();
        let mut at = 0;
        for (n, line) in lines.iter().enumerate() {
            let content = &block[at..at + line.len() - 1];
            let classified = crate::engine::journal::classify(content);
            let crate::engine::journal::LineKind::Record(record) = &classified.kind else {
                panic!("not a record: {}", String::from_utf8_lossy(line));
            };
            replay.apply_in_block(record, content, n as u64 + 1, at as u64, at);
            at += line.len();
        }
        replay.settle(&block);
    }

    #[test]
    fn payloads_left_in_a_block_are_copied_for_the_leases_still_active() {
        use crate::engine::journal::encode;
        let lease = |payload: &str, worker: i64| {
            let id = WorkId::of_canonical(payload.as_bytes());
            let line = encode::lease_line(
                &id,
                &PyInt::Small(worker),
                1.5,
                &PyInt::Small(1),
                Clock::Unix,
                payload.as_bytes(),
            );
            (id, line)
        };
        let (a, lease_a) = lease(r#"{"path":"a"}"#, 1);
        let (b, lease_b) = lease(r#"{"path":"b"}"#, 2);
        let (_, lease_b_again) = lease(r#"{"path":"b"}"#, 3);
        let done_a = encode::marker_line("done", &a, Clock::Unix, 2.0);
        let mut replay = Replay::default();
        // a is done within the block; b is taken over, and the lease in
        // force at the end of the block is the one whose payload stays.
        replay_block(
            &mut replay,
            &[lease_a.clone(), lease_b, done_a, lease_b_again],
        );
        assert!(replay.deferred.is_empty());
        assert_eq!(replay.active.len(), 1);
        assert_eq!(&*replay.active[&b].payload, br#"{"path":"b"}"#);
        assert_eq!(replay.active[&b].worker, PyInt::Small(3));
        // A lease still active when its block ends keeps its payload after
        // the block is gone.
        replay_block(&mut replay, &[lease_a]);
        assert_eq!(&*replay.active[&a].payload, br#"{"path":"a"}"#);
        assert!(replay.completed.is_empty(), "a was leased again");
    }

    #[test]
    fn the_digest_hashes_the_completed_ids_in_order() {
        let mut r = Replay::default();
        let site = Completion {
            lease_offset: 0,
            done_offset: 0,
            lease_verbatim: false,
            done_verbatim: false,
        };
        for n in 0..256 {
            r.completed.insert(verified(n), &site);
        }
        let mut h = Sha256::new();
        h.update(b"active\ncompleted\n");
        for id in r.completed_sorted() {
            h.update(format!("{id}\n"));
        }
        let expected: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(r.digest(), expected);
    }

    #[test]
    fn digest_depends_on_the_completed_set_not_its_order() {
        let mut a = Replay::default();
        let mut b = Replay::tracking_completions();
        let site = Completion {
            lease_offset: 0,
            done_offset: 1,
            lease_verbatim: true,
            done_verbatim: false,
        };
        for n in 0..100 {
            a.completed.insert(verified(n), &site);
        }
        for n in (0..100).rev() {
            b.completed.insert(verified(n), &site);
        }
        assert_eq!(a.digest(), b.digest());
        b.completed.remove(verified(7).id());
        assert_ne!(a.digest(), b.digest());
        b.completed.insert(verified(100), &site);
        assert_ne!(a.digest(), b.digest(), "same size, another id");
    }
}
