//! The distinct digests of a ledger, in about 38 bytes each: the digests
//! themselves in one dense vector, and a table of 4-byte positions into
//! it (hashbrown's `HashTable`, one control byte a slot). A `HashSet` of
//! `String`s would take over 100 bytes a digest; five million of them
//! (upstream's limit) fit here in under 200 MiB.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

use super::Digest;

/// A set of digests.
#[derive(Clone, Debug, Default)]
pub struct DigestSet {
    digests: Vec<[u8; 32]>,
    slots: HashTable<u32>,
    hasher: RandomState,
}

impl DigestSet {
    /// An empty set.
    pub fn new() -> DigestSet {
        DigestSet::default()
    }

    /// Room for `n` more digests.
    pub fn reserve(&mut self, n: usize) {
        self.digests.reserve(n);
        let (digests, hasher) = (&self.digests, &self.hasher);
        self.slots
            .reserve(n, |&at| hasher.hash_one(digests[at as usize]));
    }

    /// Adds a digest; whether it was not there yet.
    #[inline]
    pub fn insert(&mut self, digest: &Digest) -> bool {
        let hash = self.hasher.hash_one(digest.0);
        let (digests, hasher) = (&self.digests, &self.hasher);
        let entry = self.slots.entry(
            hash,
            |&at| digests[at as usize] == digest.0,
            |&at| hasher.hash_one(digests[at as usize]),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(vacant) => {
                // More than u32::MAX digests would take 150 GiB of ledger
                // lines at least; the position saturates rather than wraps.
                let at = u32::try_from(self.digests.len()).unwrap_or(u32::MAX);
                vacant.insert(at);
                self.digests.push(digest.0);
                true
            }
        }
    }

    /// Whether the set holds a digest.
    pub fn contains(&self, digest: &Digest) -> bool {
        let hash = self.hasher.hash_one(digest.0);
        self.slots
            .find(hash, |&at| self.digests[at as usize] == digest.0)
            .is_some()
    }

    /// How many digests it holds.
    pub fn len(&self) -> usize {
        self.digests.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// The digests, in the order they were first added.
    pub fn iter(&self) -> impl Iterator<Item = Digest> + '_ {
        self.digests.iter().map(|d| Digest(*d))
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
        assert_eq!(set.iter().collect::<Vec<_>>(), [a, b]);
        assert_eq!(set.len(), 2);
    }
}
