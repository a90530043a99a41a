//! The distinct digests of a ledger, in about 37 bytes each: the digests
//! themselves in one open-addressed table (linear probing). One random
//! memory access an insertion, where a table of positions into a separate
//! vector of digests takes two: reading five million digests is bound by
//! those accesses. The slot comes from a hash with a random seed, not from
//! the digest's own bits: a ledger's lines are whatever the file holds,
//! and digests chosen to share their bits would make every probe walk past
//! all the others. A `HashSet` of `String`s would take over 100
//! bytes a digest; five million of them (upstream's limit) fit here in
//! under 200 MiB.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;

use super::Digest;

/// The share of slots in use before the table grows: 7 in 8.
const LOAD_NUM: usize = 7;
const LOAD_DEN: usize = 8;

/// A set of digests.
#[derive(Clone, Debug, Default)]
pub struct DigestSet {
    /// The slots; the all-zero digest marks an empty one.
    slots: Vec<[u8; 32]>,
    /// Whether the all-zero digest itself is in the set (it cannot sit in
    /// a slot).
    zero: bool,
    /// Digests in the slots.
    filled: usize,
    /// The seeded hash that places them.
    hasher: RandomState,
}

impl DigestSet {
    /// An empty set.
    pub fn new() -> DigestSet {
        DigestSet::default()
    }

    /// Room for `n` more digests without growing.
    pub fn reserve(&mut self, n: usize) {
        let wanted = (self.filled + n).saturating_mul(LOAD_DEN) / LOAD_NUM + 1;
        if wanted > self.slots.len() {
            self.rebuild(wanted);
        }
    }

    /// The slot a digest's probe starts at: its seeded hash scaled to the
    /// table's size.
    #[inline]
    fn home(&self, digest: &[u8; 32]) -> usize {
        let hash = self.hasher.hash_one(digest);
        ((u128::from(hash) * self.slots.len() as u128) >> 64) as usize
    }

    /// The slot holding `digest`, or the empty one where it would go.
    #[inline]
    fn probe(&self, digest: &[u8; 32]) -> usize {
        let len = self.slots.len();
        let mut at = self.home(digest);
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

    /// A table of `size` slots holding what this one holds.
    fn rebuild(&mut self, size: usize) {
        let old = std::mem::replace(&mut self.slots, vec![[0u8; 32]; size.max(1)]);
        for digest in old.into_iter().filter(|d| *d != [0; 32]) {
            let at = self.probe(&digest);
            self.slots[at] = digest;
        }
    }

    /// Adds a digest; whether it was not there yet.
    #[inline]
    pub fn insert(&mut self, digest: &Digest) -> bool {
        if digest.0 == [0; 32] {
            return !std::mem::replace(&mut self.zero, true);
        }
        if (self.filled + 1) * LOAD_DEN > self.slots.len() * LOAD_NUM {
            self.rebuild((self.slots.len() * 2).max(16));
        }
        let at = self.probe(&digest.0);
        if self.slots[at] == digest.0 {
            return false;
        }
        self.slots[at] = digest.0;
        self.filled += 1;
        true
    }

    /// Whether the set holds a digest.
    pub fn contains(&self, digest: &Digest) -> bool {
        if digest.0 == [0; 32] {
            return self.zero;
        }
        !self.slots.is_empty() && self.slots[self.probe(&digest.0)] == digest.0
    }

    /// How many digests it holds.
    pub fn len(&self) -> usize {
        self.filled + usize::from(self.zero)
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The digests, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = Digest> + '_ {
        let zero = self.zero.then_some(Digest([0; 32]));
        zero.into_iter().chain(
            self.slots
                .iter()
                .filter(|d| **d != [0; 32])
                .map(|d| Digest(*d)),
        )
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
}
