//! The memory of a digest table: zeroed slots of 32 bytes, mapped straight
//! from the kernel in 2 MiB-aligned blocks the kernel is asked to back with
//! huge pages (`MADV_HUGEPAGE`). (Faulting the pages in ahead of use on
//! another thread, `MADV_POPULATE_WRITE`, was measured and gained nothing:
//! 405 against 400 ms for five million digests.)
//!
//! Why not a `Vec`: five million digests take 180 MiB of slots, and every
//! insertion touches one at random. With 4 KiB pages that is a TLB miss
//! and a page walk that misses the cache too, on top of the slot's own
//! miss; with 2 MiB pages the whole table fits the TLB, and reading a
//! large ledger takes well under half the time. The allocator's `calloc`
//! also writes its zeroes page by page before any advice can reach them,
//! where pages fresh from `mmap` are zero already. Where `mmap` fails, or
//! for small tables, a plain vector does.

use std::ops::{Deref, DerefMut};

/// One slot: a digest, or all zeroes for an empty slot.
pub type Slot = [u8; 32];

/// Tables smaller than this live in a vector: huge pages cannot help them.
const MAPPED_FROM: usize = 4 << 20;

/// The alignment huge pages need.
const HUGE_PAGE: usize = 2 << 20;

/// Zeroed slots.
#[derive(Debug)]
pub struct Slots {
    memory: Memory,
}

#[derive(Debug)]
enum Memory {
    Vec(Vec<Slot>),
    /// A private anonymous mapping of `mapped` bytes at `base`, whose
    /// 2 MiB-aligned part from `start` holds `len` slots.
    Mapped {
        base: *mut libc::c_void,
        mapped: usize,
        start: *mut Slot,
        len: usize,
    },
}

// SAFETY: the mapping is owned by `Slots` alone, like a `Vec`'s buffer.
unsafe impl Send for Memory {}
// SAFETY: shared access only reads, like a `Vec`'s buffer.
unsafe impl Sync for Memory {}

impl Slots {
    /// `len` empty slots.
    pub fn zeroed(len: usize) -> Slots {
        let bytes = len.saturating_mul(size_of::<Slot>());
        if bytes >= MAPPED_FROM
            && let Some(memory) = map(len, bytes)
        {
            return Slots { memory };
        }
        Slots {
            memory: Memory::Vec(vec![[0; 32]; len]),
        }
    }
}

/// `len` slots in a fresh anonymous mapping, advised to huge pages; `None`
/// when the kernel refuses the mapping.
fn map(len: usize, bytes: usize) -> Option<Memory> {
    let mapped = bytes.checked_add(HUGE_PAGE)?;
    // SAFETY: a private anonymous mapping of a fresh range: no file, no
    // existing memory is involved; the result is checked for MAP_FAILED.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            mapped,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let offset = (base as usize).next_multiple_of(HUGE_PAGE) - base as usize;
    // SAFETY: `offset < HUGE_PAGE`, so `offset + bytes <= mapped` stays in
    // the mapping.
    let start = unsafe { base.cast::<u8>().add(offset) };
    // SAFETY: advice on a range inside the mapping; it changes no content,
    // and failure (a kernel without THP) leaves ordinary pages.
    unsafe { libc::madvise(start.cast(), bytes, libc::MADV_HUGEPAGE) };
    Some(Memory::Mapped {
        base,
        mapped,
        start: start.cast(),
        len,
    })
}

impl Deref for Slots {
    type Target = [Slot];

    fn deref(&self) -> &[Slot] {
        match &self.memory {
            Memory::Vec(v) => v,
            // SAFETY: `start` is 2 MiB-aligned inside a live mapping that
            // holds `len` slots, zero-filled by the kernel (a valid
            // `[u8; 32]` each), and borrowed through `self`.
            Memory::Mapped { start, len, .. } => unsafe {
                std::slice::from_raw_parts(*start, *len)
            },
        }
    }
}

impl DerefMut for Slots {
    fn deref_mut(&mut self) -> &mut [Slot] {
        match &mut self.memory {
            Memory::Vec(v) => v,
            // SAFETY: as in `deref`, borrowed mutably through `self`.
            Memory::Mapped { start, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(*start, *len)
            },
        }
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        if let Memory::Mapped { base, mapped, .. } = *self {
            // SAFETY: the mapping made in `map`, unmapped once, after which
            // nothing refers to it.
            unsafe { libc::munmap(base, mapped) };
        }
    }
}

impl Clone for Slots {
    fn clone(&self) -> Slots {
        let mut copy = Slots::zeroed(self.len());
        copy.copy_from_slice(self);
        copy
    }
}

impl Default for Slots {
    fn default() -> Slots {
        Slots {
            memory: Memory::Vec(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_mapped_tables_start_empty_and_hold_what_is_written() {
        for len in [0, 3, MAPPED_FROM / 32 + 5] {
            let mut slots = Slots::zeroed(len);
            assert_eq!(slots.len(), len);
            assert!(slots.iter().all(|s| *s == [0; 32]));
            if len > 0 {
                slots[len - 1] = [7; 32];
                let copy = slots.clone();
                assert_eq!(copy[len - 1], [7; 32]);
                assert_eq!(copy[0], [0; 32]);
            }
        }
        let mapped = Slots::zeroed(MAPPED_FROM / 32);
        assert!(matches!(mapped.memory, Memory::Mapped { .. }));
        assert_eq!(mapped.as_ptr() as usize % HUGE_PAGE, 0);
    }
}
