//! The distinct digests of a ledger, in about 38 bytes each: one
//! open-addressed table (linear probing) of a tag byte and the digest
//! itself a slot. Reading five million digests is bound by the table's
//! random memory accesses, so they are made cheap:
//!
//! - a probe walks the tags, 64 to a cache line, and reads a digest only
//!   where its tag matches (one in 255 of the others): two accesses an
//!   insertion, one of them a line a probe rarely leaves;
//! - insertions are software-pipelined (`Table::insert_all`): while one
//!   digest goes in, the digest slots and the tags of the next ones are
//!   on their way, so the memory system is never idle;
//! - the table sits in huge pages (`super::slots`): the whole table in the
//!   TLB, no page walk per access;
//! - the hash is two multiplications of the digest's words with random
//!   keys, not a general-purpose hasher's walk over 32 bytes.
//!
//! (Two half-tables filled on two threads at once were measured against
//! one table on one thread: no faster, since both wait for the same
//! memory. `engine::ledger::scan` uses the second core to parse instead.)
//!
//! The slot comes from a hash with random keys, not from the digest's own
//! bits: a ledger's lines are whatever the file holds, and digests chosen
//! to share their bits would make every probe walk past all the others.
//! A `HashSet` of `String`s would take over 100 bytes a digest; five
//! million of them (upstream's limit) fit here in under 200 MiB.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;

use super::Digest;
use super::slots::{Slot, Slots, Zeroed};

/// The share of slots in use before the table grows: 7 in 8.
const LOAD_NUM: usize = 7;
const LOAD_DEN: usize = 8;

/// How many insertions ahead of the one going in a digest's slot is
/// fetched; the tags are fetched twice as far ahead. Enough to cover the
/// memory's latency, few enough that what was fetched first is still in
/// the cache when its turn comes.
const AHEAD: usize = 16;

/// The homes kept: those between a digest's tags' fetch and its insertion.
const RING: usize = 4 * AHEAD;

/// Asks the processor to start fetching a value into the cache.
#[inline]
fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and
    // cannot fault; SSE is part of x86_64.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// The random keys of the set's hash.
#[derive(Clone, Copy, Debug)]
struct Keys([u64; 5]);

impl Default for Keys {
    /// Keys drawn from the process's random hash seed.
    fn default() -> Keys {
        let seed = RandomState::default();
        Keys(std::array::from_fn(|i| seed.hash_one(i) | 1))
    }
}

/// The high and low halves of a full product, folded together.
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ (full >> 64) as u64
}

impl Keys {
    /// The hash of a digest: its four words, each with a key, multiplied
    /// in pairs, and the two folded with the last key.
    #[inline]
    fn hash(&self, digest: &Slot) -> u64 {
        let [k0, k1, k2, k3, k4] = self.0;
        let word = |i: usize| {
            u64::from_le_bytes(digest[8 * i..8 * i + 8].try_into().expect("eight bytes"))
        };
        let a = fold(word(0) ^ k0, word(1) ^ k1);
        let b = fold(word(2) ^ k2, word(3) ^ k3);
        fold(a ^ b.rotate_left(32), k4)
    }
}

/// A set of digests.
#[derive(Clone, Debug, Default)]
pub struct DigestSet {
    table: Table,
    keys: Keys,
}

/// The open-addressed table: a tag byte and a digest a slot.
#[derive(Clone, Debug, Default)]
struct Table {
    /// A byte of each slot's hash, never 0; 0 marks an empty slot.
    tags: Zeroed<u8>,
    /// The digests.
    slots: Slots,
    /// Digests in the slots.
    filled: usize,
}

impl DigestSet {
    /// An empty set.
    pub fn new() -> DigestSet {
        DigestSet::default()
    }

    /// Room for `n` more digests without growing.
    pub fn reserve(&mut self, n: usize) {
        self.table.reserve(n, &self.keys);
    }

    /// Adds a digest; whether it was not there yet.
    pub fn insert(&mut self, digest: &Digest) -> bool {
        self.insert_all(std::slice::from_ref(digest)) == 1
    }

    /// Adds digests; how many of them were not there yet (a digest twice
    /// in `digests` is new once).
    pub fn insert_all(&mut self, digests: &[Digest]) -> u64 {
        self.table.insert_all(digests, &self.keys)
    }

    /// Whether the set holds a digest.
    pub fn contains(&self, digest: &Digest) -> bool {
        let hash = self.keys.hash(&digest.0);
        let table = &self.table;
        !table.slots.is_empty() && table.probe(table.home(hash), tag(hash), &digest.0).1
    }

    /// How many digests it holds.
    pub fn len(&self) -> usize {
        self.table.filled
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The digests, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = Digest> + '_ {
        let table = &self.table;
        table
            .tags
            .iter()
            .zip(table.slots.iter())
            .filter(|(tag, _)| **tag != 0)
            .map(|(_, d)| Digest(*d))
    }
}

/// The tag of a hash: its low byte, never 0. The slot comes from the high
/// bits, so the two are independent.
#[inline]
fn tag(hash: u64) -> u8 {
    (hash as u8).max(1)
}

impl Table {
    /// The slot a probe starts at for a hash: the hash scaled to the
    /// table's size.
    #[inline]
    fn home(&self, hash: u64) -> usize {
        ((u128::from(hash) * self.slots.len() as u128) >> 64) as usize
    }

    /// The slot holding `digest`, or the empty one where it would go,
    /// searched from `at`; whether it holds it.
    #[inline]
    fn probe(&self, mut at: usize, tag: u8, digest: &Slot) -> (usize, bool) {
        loop {
            at = self.likely(at, tag);
            if self.tags[at] == 0 {
                return (at, false);
            }
            if self.slots[at] == *digest {
                return (at, true);
            }
            at = (at + 1) % self.tags.len();
        }
    }

    /// The first slot from `at` that is empty or has the tag: where a
    /// probe reads or writes a digest next.
    #[inline]
    fn likely(&self, mut at: usize, tag: u8) -> usize {
        let len = self.tags.len();
        loop {
            let here = self.tags[at];
            if here == 0 || here == tag {
                return at;
            }
            at += 1;
            if at == len {
                at = 0;
            }
        }
    }

    /// Room for `n` more digests without growing.
    fn reserve(&mut self, n: usize, keys: &Keys) {
        let wanted = (self.filled + n).saturating_mul(LOAD_DEN) / LOAD_NUM + 1;
        if wanted > self.slots.len() {
            self.rebuild(wanted, keys);
        }
    }

    /// A table of `size` slots holding what this one holds.
    fn rebuild(&mut self, size: usize, keys: &Keys) {
        let size = size.max(1);
        let tags = std::mem::replace(&mut self.tags, Zeroed::new(size));
        let slots = std::mem::replace(&mut self.slots, Slots::new(size));
        for (_, digest) in tags.iter().zip(slots.iter()).filter(|(t, _)| **t != 0) {
            let hash = keys.hash(digest);
            let (at, _) = self.probe(self.home(hash), tag(hash), digest);
            self.tags[at] = tag(hash);
            self.slots[at] = *digest;
        }
    }

    /// Adds digests in their order; how many were new.
    ///
    /// Software-pipelined: while digest `i` goes in, the slot of `i +
    /// AHEAD` and the tags of `i + 2 * AHEAD` are on their way from memory.
    /// The slot fetched is where the tags said the digest would go when
    /// they came; the insertion itself probes again, so a digest placed in
    /// between only costs a wasted fetch.
    fn insert_all(&mut self, digests: &[Digest], keys: &Keys) -> u64 {
        // Grown first, so that the homes stay where the slots are.
        if (self.filled + digests.len()) * LOAD_DEN > self.slots.len() * LOAD_NUM {
            // Half as large again: a reserved table outgrown by a little
            // does not double.
            let wanted = (self.filled + digests.len()) * LOAD_DEN / LOAD_NUM + 1;
            self.rebuild(wanted.max(self.slots.len() * 3 / 2).max(16), keys);
        }
        let mut new = 0;
        let mut ring = [(0usize, 0u8); RING];
        let n = digests.len();
        for i in 0..n + 2 * AHEAD {
            if let Some(digest) = digests.get(i) {
                let hash = keys.hash(&digest.0);
                let home = self.home(hash);
                ring[i % RING] = (home, tag(hash));
                prefetch(&self.tags[home]);
            }
            if let Some(j) = i.checked_sub(AHEAD).filter(|j| *j < n) {
                let (home, tag) = ring[j % RING];
                prefetch(&self.slots[self.likely(home, tag)]);
            }
            if let Some(k) = i.checked_sub(2 * AHEAD).filter(|k| *k < n) {
                let (home, tag) = ring[k % RING];
                let (at, found) = self.probe(home, tag, &digests[k].0);
                if !found {
                    self.tags[at] = tag;
                    self.slots[at] = digests[k].0;
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
    fn batches_count_each_new_digest_once_through_the_pipeline() {
        // Shorter than the pipeline's depth, and much longer.
        for size in [10, 100 * AHEAD + 7] {
            let digests: Vec<Digest> = (0..size as u32)
                .map(|i| {
                    let mut d = [0u8; 32];
                    d[28..].copy_from_slice(&(i % 300).to_be_bytes());
                    Digest(d)
                })
                .collect();
            let mut set = DigestSet::new();
            let distinct = size.min(300) as u64;
            // Digest 0 is the all-zero one, a digest like any other.
            assert_eq!(set.insert_all(&digests), distinct);
            assert_eq!(set.insert_all(&digests), 0);
            assert_eq!(set.len() as u64, distinct);
            assert!(digests.iter().all(|d| set.contains(d)));
        }
    }
}
