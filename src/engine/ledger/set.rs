//! The distinct digests of a ledger, in about 37 bytes each: the digests
//! themselves in open-addressed tables (linear probing). One random memory
//! access an insertion, where a table of positions into a separate vector
//! of digests takes two: reading five million digests is bound by those
//! accesses, so they are made cheaper three ways:
//!
//! - a batch of insertions asks for its slots before looking at any of
//!   them (`BATCH`), so a batch waits for memory about as long as one;
//! - the set is two tables, each digest in the one its hash's top bit
//!   names, and a batch fills both at once on two threads;
//! - the tables sit in huge pages (`super::slots`): the whole table in
//!   the TLB, no page walk per access.
//!
//! The slot comes from a hash with a random seed, not from the digest's
//! own bits: a ledger's lines are whatever the file holds, and digests
//! chosen to share their bits would make every probe walk past all the
//! others. A `HashSet` of `String`s would take over 100 bytes a digest;
//! five million of them (upstream's limit) fit here in under 200 MiB.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;

use super::Digest;
use super::slots::{Slot, Slots};

/// The share of slots in use before a table grows: 7 in 8.
const LOAD_NUM: usize = 7;
const LOAD_DEN: usize = 8;

/// How many insertions fetch their slots together: enough to keep the
/// memory system busy, few enough that the slots fetched first are still in
/// the cache when their turn comes.
const BATCH: usize = 32;

/// Below this many digests a batch is not worth a second thread.
const PARALLEL_FROM: usize = 1024;

/// Asks the processor to start fetching a slot into the cache.
#[inline]
fn prefetch(slot: &Slot) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and
    // cannot fault; SSE is part of x86_64.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(slot.as_ptr().cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = slot;
}

/// A set of digests.
#[derive(Clone, Debug, Default)]
pub struct DigestSet {
    /// The two tables: a digest lives in `halves[hash >> 63]`.
    halves: [Table; 2],
    /// Whether the all-zero digest itself is in the set (it marks an empty
    /// slot, so it cannot sit in one).
    zero: bool,
    /// The seeded hash that places digests.
    hasher: RandomState,
    /// A batch's digests with their hashes, split by half (kept to reuse
    /// their memory).
    split: [Vec<(u64, Slot)>; 2],
}

/// One open-addressed table.
#[derive(Clone, Debug, Default)]
struct Table {
    /// The slots; the all-zero digest marks an empty one.
    slots: Slots,
    /// Digests in the slots.
    filled: usize,
}

impl DigestSet {
    /// An empty set.
    pub fn new() -> DigestSet {
        DigestSet::default()
    }

    /// Room for about `n` more digests without growing: each half gets
    /// its share and 1/64 more, since the hash splits them only about
    /// evenly (five million split within a few thousand).
    pub fn reserve(&mut self, n: usize) {
        let share = n.div_ceil(2);
        for half in &mut self.halves {
            half.reserve(share + share / 64 + 64, &self.hasher);
        }
    }

    /// Adds a digest; whether it was not there yet.
    pub fn insert(&mut self, digest: &Digest) -> bool {
        self.insert_all(std::slice::from_ref(digest)) == 1
    }

    /// Adds digests; how many of them were not there yet (a digest twice
    /// in `digests` is new once).
    pub fn insert_all(&mut self, digests: &[Digest]) -> u64 {
        let DigestSet {
            halves,
            zero,
            hasher,
            split,
        } = self;
        let mut new = 0;
        for part in split.iter_mut() {
            part.clear();
        }
        for digest in digests {
            if digest.0 == [0; 32] {
                new += u64::from(!std::mem::replace(zero, true));
                continue;
            }
            let hash = hasher.hash_one(digest.0);
            split[(hash >> 63) as usize].push((hash << 1, digest.0));
        }
        let [low, high] = halves;
        let [low_batch, high_batch] = split;
        let (a, b) = if digests.len() >= PARALLEL_FROM {
            rayon::join(
                || low.insert_hashed(low_batch, hasher),
                || high.insert_hashed(high_batch, hasher),
            )
        } else {
            (
                low.insert_hashed(low_batch, hasher),
                high.insert_hashed(high_batch, hasher),
            )
        };
        new + a + b
    }

    /// Whether the set holds a digest.
    pub fn contains(&self, digest: &Digest) -> bool {
        if digest.0 == [0; 32] {
            return self.zero;
        }
        let hash = self.hasher.hash_one(digest.0);
        self.halves[(hash >> 63) as usize].contains(hash << 1, &digest.0)
    }

    /// How many digests it holds.
    pub fn len(&self) -> usize {
        self.halves[0].filled + self.halves[1].filled + usize::from(self.zero)
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The digests, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = Digest> + '_ {
        let zero = self.zero.then_some(Digest([0; 32]));
        zero.into_iter().chain(
            self.halves
                .iter()
                .flat_map(|h| h.slots.iter())
                .filter(|d| **d != [0; 32])
                .map(|d| Digest(*d)),
        )
    }
}

impl Table {
    /// The slot a probe starts at for a hash (its top bit already shifted
    /// out): the hash scaled to the table's size.
    #[inline]
    fn home(&self, hash: u64) -> usize {
        ((u128::from(hash) * self.slots.len() as u128) >> 64) as usize
    }

    /// The slot holding `digest`, or the empty one where it would go,
    /// searched from `at`.
    #[inline]
    fn probe(&self, mut at: usize, digest: &Slot) -> usize {
        let len = self.slots.len();
        loop {
            let slot = &self.slots[at];
            if slot == digest || *slot == [0; 32] {
                return at;
            }
            at += 1;
            if at == len {
                at = 0;
            }
        }
    }

    fn contains(&self, hash: u64, digest: &Slot) -> bool {
        !self.slots.is_empty() && self.slots[self.probe(self.home(hash), digest)] == *digest
    }

    /// Room for `n` more digests without growing.
    fn reserve(&mut self, n: usize, hasher: &RandomState) {
        let wanted = (self.filled + n).saturating_mul(LOAD_DEN) / LOAD_NUM + 1;
        if wanted > self.slots.len() {
            self.rebuild(wanted, hasher);
        }
    }

    /// A table of `size` slots holding what this one holds.
    fn rebuild(&mut self, size: usize, hasher: &RandomState) {
        let old = std::mem::replace(&mut self.slots, Slots::zeroed(size.max(1)));
        for digest in old.iter().filter(|d| **d != [0; 32]) {
            let at = self.probe(self.home(hasher.hash_one(digest) << 1), digest);
            self.slots[at] = *digest;
        }
    }

    /// Adds hashed digests in their order; how many were new.
    fn insert_hashed(&mut self, digests: &[(u64, Slot)], hasher: &RandomState) -> u64 {
        let mut new = 0;
        let mut homes = [0usize; BATCH];
        for batch in digests.chunks(BATCH) {
            // Grown first, so that the homes stay where the slots are.
            if (self.filled + batch.len()) * LOAD_DEN > self.slots.len() * LOAD_NUM {
                // Half as large again: a reserved table outgrown by a little
                // does not double.
                let wanted = (self.filled + batch.len()) * LOAD_DEN / LOAD_NUM + 1;
                self.rebuild(wanted.max(self.slots.len() * 3 / 2).max(16), hasher);
            }
            for (home, (hash, _)) in homes.iter_mut().zip(batch) {
                *home = self.home(*hash);
                prefetch(&self.slots[*home]);
            }
            for (home, (_, digest)) in homes.iter().zip(batch) {
                let at = self.probe(*home, digest);
                if self.slots[at] != *digest {
                    self.slots[at] = *digest;
                    self.filled += 1;
                    new += 1;
                }
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_held_once() {
        let mut set = DigestSet::new();
        let (a, b) = (Digest([1; 32]), Digest([2; 32]));
        assert!(set.insert(&a) && set.insert(&b) && !set.insert(&a));
        set.reserve(100);
        assert!(set.contains(&a) && !set.contains(&Digest([3; 32])));
        let mut all: Vec<Digest> = set.iter().collect();
        all.sort_by_key(|d| d.0);
        assert_eq!(all, [a, b]);
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn the_zero_digest_and_growth_and_collisions() {
        let mut set = DigestSet::new();
        let zero = Digest([0; 32]);
        assert!(!set.contains(&zero));
        assert!(set.insert(&zero) && !set.insert(&zero) && set.contains(&zero));
        // Ten thousand digests alike but for four bytes, through several
        // growths.
        let many: Vec<Digest> = (1..=10_000u32)
            .map(|i| {
                let mut d = [7u8; 32];
                d[..4].copy_from_slice(&i.to_be_bytes());
                Digest(d)
            })
            .collect();
        for d in &many {
            assert!(set.insert(d));
        }
        for d in &many {
            assert!(!set.insert(d) && set.contains(d));
        }
        assert_eq!(set.len(), 10_001);
        assert_eq!(set.iter().count(), 10_001);
        assert!(!set.contains(&Digest([9; 32])));
    }

    #[test]
    fn batches_count_each_new_digest_once_on_either_path() {
        // Small batches insert on this thread, large ones on two.
        for size in [10, PARALLEL_FROM + 7] {
            let digests: Vec<Digest> = (0..size as u32)
                .map(|i| {
                    let mut d = [0u8; 32];
                    d[28..].copy_from_slice(&(i % 300).to_be_bytes());
                    Digest(d)
                })
                .collect();
            let mut set = DigestSet::new();
            let distinct = size.min(300) as u64;
            // Digest 0 is the all-zero one, kept apart.
            assert_eq!(set.insert_all(&digests), distinct);
            assert_eq!(set.insert_all(&digests), 0);
            assert_eq!(set.len() as u64, distinct);
            assert!(digests.iter().all(|d| set.contains(d)));
        }
    }
}
