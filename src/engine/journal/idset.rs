//! The replay's id sets: the active leases by id ([`ActiveLeases`]) and
//! the completed ids ([`Completed`]), with the hashing, sharding and
//! packing that keep millions of ids in little memory and sort them
//! without a copy of the whole set. Data structures only: which id goes in
//! or out is the replay's rule (`replay`); these sets take only a
//! [`VerifiedId`], which their hashers rely on.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use foldhash::fast::{FoldHasher, RandomState};

use super::id::{VerifiedId, WorkId};
use super::model::{Active, Completion};

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

    /// Marks `id` completed by the records at `site` (the replay's step;
    /// only a verified id goes in).
    pub(super) fn insert(&mut self, id: VerifiedId, site: &Completion) {
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
    /// ([`Completed::tracking_sites`], which
    /// [`Replay::tracking_completions`](super::Replay::tracking_completions)
    /// asks for) and all fit (`None` otherwise), consuming the set, whose
    /// tables are freed one after another as the iteration goes.
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

    /// Room for about `n` more leases.
    pub(super) fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }

    /// Makes `lease` the one in force for `id`; returns the one it replaces.
    #[inline]
    pub(super) fn insert(&mut self, id: VerifiedId, lease: Active) -> Option<Active> {
        self.0.insert(id, lease)
    }

    /// Drops `id`'s lease and returns it with the id it was verified as.
    #[inline]
    pub(super) fn remove_entry(&mut self, id: &WorkId) -> Option<(VerifiedId, Active)> {
        self.0.remove_entry(id)
    }

    /// The lease in force for `id`, to change it.
    #[inline]
    pub(super) fn get_mut(&mut self, id: &WorkId) -> Option<&mut Active> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::journal::id::verified_for_test as verified;

    /// A completion at the start of the file, for tests that need only ids.
    const NO_SITE: Completion = Completion {
        lease_offset: 0,
        done_offset: 0,
        lease_verbatim: false,
        done_verbatim: false,
    };

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
        let mut completed = Completed::tracking_sites();
        completed.insert(verified(1), &far);
        assert!(
            completed.clone().into_sites().is_none(),
            "a missing site is not hidden"
        );
        assert!(
            completed.contains(verified(1).id()),
            "the id is completed all the same"
        );
        assert_eq!(completed.len(), 1);
        completed.clear();
        completed.insert(
            verified(2),
            &Completion {
                done_offset: 5,
                ..far
            },
        );
        assert!(
            completed.into_sites().is_some(),
            "clear forgets the lost sites"
        );
    }
}
