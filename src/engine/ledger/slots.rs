//! The memory of a digest table: zeroed values (the 32-byte slots and
//! their tag bytes), mapped straight from the kernel in 2 MiB-aligned
//! blocks the kernel is asked to back with huge pages (`MADV_HUGEPAGE`).
//! (Faulting the pages in ahead of use on another thread,
//! `MADV_POPULATE_WRITE`, was measured and gained nothing: 405 against 400
//! ms for five million digests.)
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

/// A type whose all-zero bytes are a valid value, so that memory fresh
/// from the kernel holds valid values.
///
/// # Safety
/// All-zero bytes must be a valid `Self` and be `Self::default()`, and
/// `Self` must hold no pointers or resources.
pub unsafe trait Zeroable: Copy + Default + 'static {}
// SAFETY: any bytes are a valid `u8`.
unsafe impl Zeroable for u8 {}
// SAFETY: any bytes are a valid `[u8; 32]`.
unsafe impl Zeroable for [u8; 32] {}

/// Tables smaller than this live in a vector: huge pages cannot help them.
const MAPPED_FROM: usize = 4 << 20;

/// The alignment huge pages need.
const HUGE_PAGE: usize = 2 << 20;

/// Zeroed slots of 32-byte digests.
pub type Slots = Zeroed<Slot>;

/// Zeroed values.
#[derive(Debug)]
pub struct Zeroed<T: Zeroable> {
    memory: Memory<T>,
}

#[derive(Debug)]
enum Memory<T> {
    Vec(Vec<T>),
    /// A private anonymous mapping of `mapped` bytes at `base`, whose
    /// 2 MiB-aligned part from `start` holds `len` slots.
    Mapped {
        base: *mut libc::c_void,
        mapped: usize,
        start: *mut T,
        len: usize,
    },
}

// SAFETY: the mapping is owned by `Zeroed` alone, like a `Vec`'s buffer,
// and `T` holds no pointers (`Zeroable`).
unsafe impl<T: Zeroable> Send for Memory<T> {}
// SAFETY: shared access only reads, like a `Vec`'s buffer.
unsafe impl<T: Zeroable> Sync for Memory<T> {}

impl<T: Zeroable> Zeroed<T> {
    /// `len` all-zero values.
    pub fn new(len: usize) -> Zeroed<T> {
        let bytes = len.saturating_mul(size_of::<T>());
        if bytes >= MAPPED_FROM
            && let Some(memory) = map(len, bytes)
        {
            return Zeroed { memory };
        }
        Zeroed {
            // `T::default()` is all zeroes (`Zeroable`).
            memory: Memory::Vec(vec![T::default(); len]),
        }
    }
}

/// `len` values in a fresh anonymous mapping, advised to huge pages;
/// `None` when the kernel refuses the mapping.
fn map<T>(len: usize, bytes: usize) -> Option<Memory<T>> {
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

impl<T: Zeroable> Deref for Zeroed<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.memory {
            Memory::Vec(v) => v,
            // SAFETY: `start` is 2 MiB-aligned inside a live mapping that
            // holds `len` values, zero-filled by the kernel (a valid `T`
            // each, `Zeroable`), and borrowed through `self`.
            Memory::Mapped { start, len, .. } => unsafe {
                std::slice::from_raw_parts(*start, *len)
            },
        }
    }
}

impl<T: Zeroable> DerefMut for Zeroed<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.memory {
            Memory::Vec(v) => v,
            // SAFETY: as in `deref`, borrowed mutably through `self`.
            Memory::Mapped { start, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(*start, *len)
            },
        }
    }
}

impl<T> Drop for Memory<T> {
    fn drop(&mut self) {
        if let Memory::Mapped { base, mapped, .. } = *self {
            // SAFETY: the mapping made in `map`, unmapped once, after which
            // nothing refers to it.
            unsafe { libc::munmap(base, mapped) };
        }
    }
}

impl<T: Zeroable> Clone for Zeroed<T> {
    fn clone(&self) -> Zeroed<T> {
        let mut copy = Zeroed::new(self.len());
        copy.copy_from_slice(self);
        copy
    }
}

impl<T: Zeroable> Default for Zeroed<T> {
    fn default() -> Zeroed<T> {
        Zeroed {
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
            let mut slots = Slots::new(len);
            assert_eq!(slots.len(), len);
            assert!(slots.iter().all(|s| *s == [0; 32]));
            if len > 0 {
                slots[len - 1] = [7; 32];
                let copy = slots.clone();
                assert_eq!(copy[len - 1], [7; 32]);
                assert_eq!(copy[0], [0; 32]);
            }
        }
        let mapped = Slots::new(MAPPED_FROM / 32);
        assert!(matches!(mapped.memory, Memory::Mapped { .. }));
        assert_eq!(mapped.as_ptr() as usize % HUGE_PAGE, 0);
    }
}
