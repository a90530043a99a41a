//! Upstream's replay state machine (`WorkLeaseJournal._load`, step 5): the
//! last lease of an id wins, `done` completes only an active id, `reclaim`
//! drops any id, unknown ops are counted and ignored. Every application
//! reports its effect so that reports can say what each line did.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use foldhash::fast::{FoldHasher, RandomState};
use sha2::{Digest, Sha256};

use super::id::{VerifiedId, WorkId};
use super::model::{Clock, Effect, Lease, Op, Payload, Record};
use crate::engine::json::PyInt;

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
    /// Canonical payload bytes. During a scan a block's new leases hold
    /// theirs in the block until the block is settled; a finished scan's
    /// replay holds every payload.
    pub payload: Box<[u8]>,
    /// Whether the lease line is exactly what compaction would write.
    pub verbatim: bool,
}

/// Hashes the replay's ids by eight of their bytes, mixed with a random
/// seed. Every id the replay stores is the SHA-256 of a payload that was
/// checked against it (a lease is accepted only then, and only active ids
/// complete), so any eight of its bytes are already uniform and hashing all
/// 32 buys nothing. Ids that are only looked up (a `done` for an unknown
/// id) can be anything, but a lookup costs what the stored ids' clusters
/// cost, which the seed keeps out of anyone's reach.
///
/// # Invariant
///
/// Only verified ids may be inserted into a map with this hasher: ids that
/// agree in those eight bytes all land in one bucket chain, so inserting
/// ids from anywhere else (a snapshot, another tool's file) would let a
/// crafted file make every insert slow. The types hold it: the maps that
/// use this hasher ([`ActiveLeases`], [`Completed`]) insert only a
/// [`VerifiedId`], which only comes from hashing a payload.
#[derive(Clone, Debug, Default)]
struct IdState(RandomState);

impl BuildHasher for IdState {
    type Hasher = IdHasher;

    #[inline]
    fn build_hasher(&self) -> IdHasher {
        IdHasher(self.0.build_hasher())
    }
}

/// The [`IdState`] hasher. Only ever fed a [`WorkId`]: its array's length
/// prefix, which it skips, then its 32 bytes.
struct IdHasher(FoldHasher<'static>);

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        match bytes.get(8..16) {
            Some(word) => {
                let mut b = [0u8; 8];
                b.copy_from_slice(word);
                self.0.write_u64(u64::from_le_bytes(b));
            }
            None => self.0.write(bytes),
        }
    }

    #[inline]
    fn write_usize(&mut self, _length_prefix: usize) {}

    #[inline]
    fn finish(&self) -> u64 {
        self.0.finish()
    }
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

/// Offsets a [`Completion`] can hold: 47 bits, 128 TiB.
const SITE_OFFSET_LIMIT: u64 = 1 << 47;

/// A [`Completion`] in 12 bytes: each offset in 47 bits with its verbatim
/// flag in the 48th. Compaction keeps one per completed id, millions of
/// them, so their size is most of its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PackedSite([u8; 12]);

impl PackedSite {
    fn pack(c: &Completion) -> Option<PackedSite> {
        if c.lease_offset >= SITE_OFFSET_LIMIT || c.done_offset >= SITE_OFFSET_LIMIT {
            return None;
        }
        let lease = c.lease_offset | u64::from(c.lease_verbatim) << 47;
        let done = c.done_offset | u64::from(c.done_verbatim) << 47;
        let mut out = [0u8; 12];
        out[..6].copy_from_slice(&lease.to_le_bytes()[..6]);
        out[6..].copy_from_slice(&done.to_le_bytes()[..6]);
        Some(PackedSite(out))
    }

    fn unpack(self) -> Completion {
        let word = |bytes: &[u8]| {
            let mut b = [0u8; 8];
            b[..6].copy_from_slice(bytes);
            u64::from_le_bytes(b)
        };
        let (lease, done) = (word(&self.0[..6]), word(&self.0[6..]));
        let mask = SITE_OFFSET_LIMIT - 1;
        Completion {
            lease_offset: lease & mask,
            done_offset: done & mask,
            lease_verbatim: lease >> 47 == 1,
            done_verbatim: done >> 47 == 1,
        }
    }
}

/// Ids split into [`SHARDS`] tables by the id's first four bits. Ids are
/// hashes, so the tables fill evenly; each grows on its own, and a growth
/// step briefly holds two copies of one table, not of the whole set. The
/// tables are ranges of ids, so the ids come out sorted one table at a
/// time, with a sorted copy of one table at most.
#[derive(Clone, Debug)]
struct Shards<T> {
    tables: Vec<T>,
}

/// Tables in a [`Shards`].
const SHARDS: usize = 16;

/// What [`Shards`] needs of a table.
trait Table {
    /// Room for `n` more ids.
    fn reserve(&mut self, n: usize);
    /// Ids held.
    fn len(&self) -> usize;
    /// Copies the ids into `out`, in no particular order.
    fn keys_into(&self, out: &mut Vec<WorkId>);
}

impl<V> Table for HashMap<WorkId, V, IdState> {
    fn reserve(&mut self, n: usize) {
        HashMap::reserve(self, n);
    }

    fn len(&self) -> usize {
        HashMap::len(self)
    }

    fn keys_into(&self, out: &mut Vec<WorkId>) {
        out.extend(self.keys().copied());
    }
}

impl<T: Table + Default> Shards<T> {
    fn new() -> Self {
        Shards {
            tables: (0..SHARDS).map(|_| T::default()).collect(),
        }
    }

    /// Room for about `n` ids in all.
    fn reserve(&mut self, n: usize) {
        // Some slack: the tables do not fill exactly evenly.
        let each = n / SHARDS + n / SHARDS / 16 + 16;
        self.tables.iter_mut().for_each(|t| t.reserve(each));
    }

    #[inline]
    fn shard(&self, id: &WorkId) -> &T {
        &self.tables[usize::from(id.0[0] >> 4)]
    }

    #[inline]
    fn shard_mut(&mut self, id: &WorkId) -> &mut T {
        &mut self.tables[usize::from(id.0[0] >> 4)]
    }

    fn len(&self) -> usize {
        self.tables.iter().map(Table::len).sum()
    }

    /// Calls `f` with each table's ids, sorted, in order, while the next
    /// table is sorted on another core. Two buffers take turns, so memory
    /// holds two tables' ids at most.
    fn for_each_sorted_run(&self, mut f: impl FnMut(&[WorkId]) + Send)
    where
        T: Sync,
    {
        let sort_into = |ids: &mut Vec<WorkId>, table: &T| {
            ids.clear();
            table.keys_into(ids);
            ids.sort_unstable();
        };
        let (mut current, mut next) = (Vec::new(), Vec::new());
        let mut tables = self.tables.iter();
        if let Some(first) = tables.next() {
            sort_into(&mut current, first);
        }
        loop {
            let following = tables.next();
            rayon::join(
                || {
                    if let Some(table) = following {
                        sort_into(&mut next, table);
                    }
                },
                || f(&current),
            );
            if following.is_none() {
                return;
            }
            std::mem::swap(&mut current, &mut next);
        }
    }

    /// Each table's ids, sorted on every core, one table after another.
    fn sorted(&self) -> impl Iterator<Item = WorkId> + '_ {
        use rayon::slice::ParallelSliceMut;
        self.tables.iter().flat_map(|table| {
            let mut ids = Vec::new();
            table.keys_into(&mut ids);
            ids.par_sort_unstable();
            ids
        })
    }
}

/// A table of the completed ids alone (what every command but compaction
/// keeps). It keeps its ids in a dense vector in the order they came and
/// hashes only their positions and 32 bits of each hash, 8 bytes a slot: a
/// new id is then one write into a table a quarter the size of one that
/// held the ids themselves, plus an append. Those inserts, one per
/// completed id, missed the caches and were the replay's costliest step.
/// Removing an id moves the last one into its place.
#[derive(Clone, Debug, Default)]
struct IdTable {
    ids: Vec<WorkId>,
    /// (position in `ids`, hash bits) of every id.
    slots: hashbrown::HashTable<(u32, u32)>,
}

impl IdTable {
    /// 32 bits of the id (the ids are verified SHA-256s: see [`IdState`]),
    /// mixed with a per-process seed so that ids that are only looked up
    /// cannot be aimed at a bucket.
    #[inline]
    fn bits(id: &WorkId) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&id.0[8..12]);
        u32::from_le_bytes(b) ^ id_seed()
    }

    /// The table's hash, rebuilt from the stored bits so that growing
    /// never reads the ids: the bits both high (where the tags come from)
    /// and low (the buckets).
    #[inline]
    fn hash(bits: u32) -> u64 {
        u64::from(bits) << 32 | u64::from(bits)
    }

    #[inline]
    fn contains(&self, id: &WorkId) -> bool {
        let bits = Self::bits(id);
        self.slots
            .find(Self::hash(bits), |&(at, b)| {
                b == bits && self.ids[at as usize] == *id
            })
            .is_some()
    }

    #[inline]
    fn insert(&mut self, id: WorkId) {
        if self.contains(&id) {
            return;
        }
        // 4 G ids would be 128 GiB of ids in this one table: memory runs
        // out long before a position does not fit.
        let at = u32::try_from(self.ids.len()).expect("fewer than 4 G ids in a table");
        let bits = Self::bits(&id);
        self.ids.push(id);
        self.slots
            .insert_unique(Self::hash(bits), (at, bits), |&(_, b)| Self::hash(b));
    }

    #[inline]
    fn remove(&mut self, id: &WorkId) -> bool {
        let bits = Self::bits(id);
        let ids = &self.ids;
        let Ok(entry) = self.slots.find_entry(Self::hash(bits), |&(at, b)| {
            b == bits && ids[at as usize] == *id
        }) else {
            return false;
        };
        let ((at, _), _) = entry.remove();
        let at = at as usize;
        let last = self.ids.len() - 1;
        if at != last {
            // The last id moves into the gap, and its slot follows it.
            let moved = Self::bits(&self.ids[last]);
            if let Some(slot) = self.slots.find_mut(Self::hash(moved), |&(p, b)| {
                b == moved && p as usize == last
            }) {
                slot.0 = at as u32;
            }
        }
        self.ids.swap_remove(at);
        true
    }
}

/// The per-process seed of [`IdTable::bits`].
fn id_seed() -> u32 {
    static SEED: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| RandomState::default().hash_one(0u64) as u32)
}

impl Table for IdTable {
    fn reserve(&mut self, n: usize) {
        self.ids.reserve(n);
        self.slots.reserve(n, |&(_, bits)| Self::hash(bits));
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn keys_into(&self, out: &mut Vec<WorkId>) {
        out.extend_from_slice(&self.ids);
    }
}

/// The completed ids; for compaction, also where each one's records are.
#[derive(Clone, Debug)]
pub struct Completed(Inner);

#[derive(Clone, Debug)]
enum Inner {
    /// Only the ids (what reports need).
    Ids(Shards<IdTable>),
    /// Each id with its [`Completion`].
    Sites {
        /// The ids and their sites.
        sites: Shards<HashMap<WorkId, PackedSite, IdState>>,
        /// Whether an offset was beyond what a site holds (128 TiB), so
        /// that some sites are missing.
        overflowed: bool,
    },
}

impl Default for Completed {
    fn default() -> Self {
        Completed(Inner::Ids(Shards::new()))
    }
}

impl Completed {
    /// An empty set that also keeps each id's [`Completion`].
    pub fn tracking_sites() -> Completed {
        Completed(Inner::Sites {
            sites: Shards::new(),
            overflowed: false,
        })
    }

    /// Room for about `n` ids.
    pub fn reserve(&mut self, n: usize) {
        match &mut self.0 {
            Inner::Ids(ids) => ids.reserve(n),
            Inner::Sites { sites, .. } => sites.reserve(n),
        }
    }

    /// Number of completed ids.
    pub fn len(&self) -> usize {
        match &self.0 {
            Inner::Ids(ids) => ids.len(),
            Inner::Sites { sites, .. } => sites.len(),
        }
    }

    /// Whether no id is completed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `id` is completed.
    pub fn contains(&self, id: &WorkId) -> bool {
        match &self.0 {
            Inner::Ids(ids) => ids.shard(id).contains(id),
            Inner::Sites { sites, .. } => sites.shard(id).contains_key(id),
        }
    }

    /// Marks `id` completed by the records at `site`.
    fn insert(&mut self, id: VerifiedId, site: &Completion) {
        let id = *id.id();
        match &mut self.0 {
            Inner::Ids(ids) => ids.shard_mut(&id).insert(id),
            Inner::Sites { sites, overflowed } => {
                // An id whose records lie beyond what a site holds is still
                // completed; only its site is lost, which `sites` reports.
                let packed = PackedSite::pack(site).unwrap_or_else(|| {
                    *overflowed = true;
                    PackedSite([0xFF; 12])
                });
                sites.shard_mut(&id).insert(id, packed);
            }
        }
    }

    /// Removes `id`; says whether it was completed.
    pub fn remove(&mut self, id: &WorkId) -> bool {
        match &mut self.0 {
            Inner::Ids(ids) => ids.shard_mut(id).remove(id),
            Inner::Sites { sites, .. } => sites.shard_mut(id).remove(id).is_some(),
        }
    }

    /// Forgets every id.
    pub fn clear(&mut self) {
        match &mut self.0 {
            Inner::Ids(ids) => *ids = Shards::new(),
            Inner::Sites { sites, overflowed } => {
                *sites = Shards::new();
                *overflowed = false;
            }
        }
    }

    /// The ids, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &WorkId> + '_ {
        let (ids, sites) = match &self.0 {
            Inner::Ids(ids) => (Some(ids.tables.iter().flat_map(|t| t.ids.iter())), None),
            Inner::Sites { sites, .. } => (None, Some(sites.tables.iter().flat_map(|t| t.keys()))),
        };
        ids.into_iter().flatten().chain(sites.into_iter().flatten())
    }

    /// The ids in order, sorted a sixteenth of the set at a time (on every
    /// core).
    pub fn sorted(&self) -> impl Iterator<Item = WorkId> + '_ {
        let (ids, sites) = match &self.0 {
            Inner::Ids(ids) => (Some(ids.sorted()), None),
            Inner::Sites { sites, .. } => (None, Some(sites.sorted())),
        };
        ids.into_iter().flatten().chain(sites.into_iter().flatten())
    }

    /// Calls `f` with runs of the ids that together are all of them in
    /// order (a table at a time, the next one sorted meanwhile).
    pub fn for_each_sorted_run(&self, f: impl FnMut(&[WorkId]) + Send) {
        match &self.0 {
            Inner::Ids(ids) => ids.for_each_sorted_run(f),
            Inner::Sites { sites, .. } => sites.for_each_sorted_run(f),
        }
    }

    /// Where each completed id's records are, when they were tracked
    /// ([`Replay::tracking_completions`]) and all fit (`None` otherwise),
    /// consuming the set, whose tables are freed one after another as the
    /// iteration goes.
    pub fn into_sites(self) -> Option<impl Iterator<Item = (WorkId, Completion)>> {
        match self.0 {
            Inner::Sites {
                sites,
                overflowed: false,
            } => Some(
                sites
                    .tables
                    .into_iter()
                    .flat_map(|shard| shard.into_iter().map(|(id, s)| (id, s.unpack()))),
            ),
            _ => None,
        }
    }
}

/// The active leases by id: read like a map; only the replay inserts, and
/// only a lease whose id was verified ([`VerifiedId`]): the map hashes ids
/// by a few of their bytes, which is safe only for ids nobody could
/// choose.
#[derive(Clone, Debug, Default)]
pub struct ActiveLeases(HashMap<VerifiedId, Active, IdState>);

impl ActiveLeases {
    /// Number of active leases.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no lease is active.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The lease in force for `id`, if it is active.
    #[inline]
    pub fn get(&self, id: &WorkId) -> Option<&Active> {
        self.0.get(id)
    }

    /// Whether `id` is active.
    #[inline]
    pub fn contains_key(&self, id: &WorkId) -> bool {
        self.0.contains_key(id)
    }

    /// The active ids, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &WorkId> + '_ {
        self.0.keys().map(VerifiedId::id)
    }

    /// The active ids and their leases, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&WorkId, &Active)> + '_ {
        self.0.iter().map(|(id, lease)| (id.id(), lease))
    }

    /// Drops `id`'s lease (as a `reclaim` would) and returns it.
    #[inline]
    pub fn remove(&mut self, id: &WorkId) -> Option<Active> {
        self.0.remove(id)
    }

    /// Makes `lease` the one in force for `id`; returns the one it replaces.
    #[inline]
    fn insert(&mut self, id: VerifiedId, lease: Active) -> Option<Active> {
        self.0.insert(id, lease)
    }

    /// Drops `id`'s lease and returns it with the id it was verified as.
    #[inline]
    fn remove_entry(&mut self, id: &WorkId) -> Option<(VerifiedId, Active)> {
        self.0.remove_entry(id)
    }

    #[inline]
    fn get_mut(&mut self, id: &WorkId) -> Option<&mut Active> {
        self.0.get_mut(id)
    }
}

impl std::ops::Index<&WorkId> for ActiveLeases {
    type Output = Active;

    /// The lease in force for `id`; panics when `id` is not active.
    fn index(&self, id: &WorkId) -> &Active {
        &self.0[id]
    }
}

impl IntoIterator for ActiveLeases {
    type Item = (WorkId, Active);
    type IntoIter = std::iter::Map<
        std::collections::hash_map::IntoIter<VerifiedId, Active>,
        fn((VerifiedId, Active)) -> (WorkId, Active),
    >;

    /// The active ids and their leases, in no particular order.
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().map(|(id, lease)| (*id.id(), lease))
    }
}

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
        leases.0.reserve(active);
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

    /// Completed ids in id order.
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

    /// A completion at the start of the file, for tests that need only ids.
    const NO_SITE: Completion = Completion {
        lease_offset: 0,
        done_offset: 0,
        lease_verbatim: false,
        done_verbatim: false,
    };

    /// The id of a payload made from `n`, verified (the only ids the sets
    /// take).
    fn verified(n: u64) -> VerifiedId {
        let payload = format!(r#"{{"n":{n}}}"#);
        let id = WorkId::of_canonical(payload.as_bytes());
        VerifiedId::check(id, payload.as_bytes()).unwrap()
    }

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
        let site = NO_SITE;
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
    fn completed_ids_come_out_sorted() {
        let mut c = Completed::tracking_sites();
        let site = NO_SITE;
        let mut all = Vec::new();
        // Some ids twice.
        for n in (0..5000).chain(0..100) {
            c.insert(verified(n), &site);
            all.push(*verified(n).id());
        }
        all.sort_unstable();
        all.dedup();
        assert_eq!(c.sorted().collect::<Vec<_>>(), all);
        assert_eq!(c.len(), all.len());
    }

    #[test]
    fn the_id_set_agrees_with_a_model_through_inserts_and_removals() {
        let ids: Vec<VerifiedId> = (0..6000).map(verified).collect();
        let site = NO_SITE;
        let mut set = Completed::default();
        let mut model = std::collections::BTreeSet::new();
        // Inserts (some twice), removals of present and absent ids in
        // scattered order, so that removals move ids within their tables.
        for round in 0..3 {
            for (n, id) in ids.iter().enumerate() {
                match (n as u64 + round) % 5 {
                    0..=2 => {
                        set.insert(*id, &site);
                        model.insert(*id.id());
                    }
                    _ => {
                        let id = id.id();
                        assert_eq!(set.remove(id), model.remove(id), "remove {id}");
                    }
                }
                if n % 997 == 0 {
                    for probe in ids.iter().map(VerifiedId::id) {
                        assert_eq!(set.contains(probe), model.contains(probe));
                    }
                }
            }
            assert_eq!(set.len(), model.len());
            assert!(set.sorted().eq(model.iter().copied()));
            let mut seen: Vec<WorkId> = set.iter().copied().collect();
            seen.sort_unstable();
            assert!(seen.iter().eq(model.iter()));
        }
        let mut runs = Vec::new();
        set.for_each_sorted_run(|run| runs.extend_from_slice(run));
        assert!(runs.iter().eq(model.iter()));
    }

    #[test]
    fn sites_pack_and_unpack() {
        for (lease_offset, done_offset) in [(0, 0), (1, 2), (SITE_OFFSET_LIMIT - 1, 12345)] {
            for flags in 0..4u8 {
                let c = Completion {
                    lease_offset,
                    done_offset,
                    lease_verbatim: flags & 1 == 1,
                    done_verbatim: flags & 2 == 2,
                };
                assert_eq!(PackedSite::pack(&c).unwrap().unpack(), c);
            }
        }
        let far = Completion {
            lease_offset: 0,
            done_offset: SITE_OFFSET_LIMIT,
            lease_verbatim: false,
            done_verbatim: false,
        };
        assert_eq!(PackedSite::pack(&far), None);
        let mut r = Replay::tracking_completions();
        r.completed.insert(verified(1), &far);
        assert!(
            r.completed.clone().into_sites().is_none(),
            "a missing site is not hidden"
        );
        assert!(
            r.completed.contains(verified(1).id()),
            "the id is completed all the same"
        );
        assert_eq!(r.completed.len(), 1);
        r.completed.clear();
        r.completed.insert(
            verified(2),
            &Completion {
                done_offset: 5,
                ..far
            },
        );
        assert!(
            r.completed.into_sites().is_some(),
            "clear forgets the lost sites"
        );
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
