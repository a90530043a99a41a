//! Work ids: the SHA-256 of a canonical payload, written as 64 lowercase
//! hex characters, and their text form both ways. The hex codecs have SSE2
//! versions (ids are written and read millions of times per scan), each
//! checked against a scalar reference that other CPUs run.

use std::borrow::Borrow;
use std::fmt;

use serde::Serialize;
use sha2::{Digest, Sha256};

/// A work id: the SHA-256 of a canonical payload, written as 64 lowercase
/// hex characters. Byte order equals the order of the hex strings.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkId(pub [u8; 32]);

impl WorkId {
    /// The id as four big-endian words, whose order is the bytes' order.
    #[inline]
    fn words(&self) -> [u64; 4] {
        let mut words = [0u64; 4];
        for (word, bytes) in words.iter_mut().zip(self.0.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(bytes);
            *word = u64::from_be_bytes(b);
        }
        words
    }
}

/// Byte order (the order of the hex strings), compared a word at a time:
/// sorting millions of ids with a byte-slice comparison spends most of its
/// time calling `memcmp`.
impl Ord for WorkId {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.words().cmp(&other.words())
    }
}

impl PartialOrd for WorkId {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl WorkId {
    /// The id of a canonical payload encoding.
    pub fn of_canonical(bytes: &[u8]) -> WorkId {
        WorkId(Sha256::digest(bytes).into())
    }

    /// The 64-character hex form.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// Whether the hex form starts with `prefix` (lowercase hex).
    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.hex_bytes().starts_with(prefix.as_bytes())
    }

    /// The first 12 hex characters: what tables and messages show of an
    /// id ([`short_id`] for an id given as text).
    pub fn short(&self) -> String {
        String::from_utf8_lossy(&self.hex_bytes()[..SHORT_ID]).into_owned()
    }
}

/// How many characters of an id tables and messages show.
const SHORT_ID: usize = 12;

/// The first 12 characters of an id given as text (a snapshot's `task_id`,
/// an id in a report): what tables and messages show, as
/// [`WorkId::short`] does. The id must be at least that long, as every
/// one of the 64 characters is; a shorter one panics.
pub fn short_id(id: &str) -> &str {
    &id[..SHORT_ID]
}

impl WorkId {
    /// The hex form in a stack buffer.
    #[inline]
    pub fn hex_bytes(&self) -> [u8; 64] {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            self.hex_bytes_sse2()
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        {
            self.hex_bytes_scalar()
        }
    }

    /// [`WorkId::hex_bytes`] a byte at a time: the reference for the SSE2
    /// version, and what other CPUs run.
    #[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
    fn hex_bytes_scalar(&self) -> [u8; 64] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 64];
        for (i, b) in self.0.iter().enumerate() {
            out[2 * i] = HEX[usize::from(b >> 4)];
            out[2 * i + 1] = HEX[usize::from(b & 0xF)];
        }
        out
    }

    /// [`WorkId::hex_bytes`] sixteen bytes at a time (the state digest
    /// writes millions of ids).
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    fn hex_bytes_sse2(&self) -> [u8; 64] {
        use std::arch::x86_64::{
            __m128i, _mm_add_epi8, _mm_and_si128, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_set1_epi8,
            _mm_srli_epi16, _mm_storeu_si128, _mm_unpackhi_epi8, _mm_unpacklo_epi8,
        };
        let mut out = [0u8; 64];
        // SAFETY: this build has SSE2 (the cfg); each load reads sixteen
        // of the id's 32 bytes and each store writes sixteen of `out`'s 64.
        unsafe {
            let low_nibble = _mm_set1_epi8(0x0F);
            // 0-9 to '0'-'9', 10-15 to 'a'-'f'.
            let ascii = |n: __m128i| {
                let letters = _mm_and_si128(_mm_cmpgt_epi8(n, _mm_set1_epi8(9)), _mm_set1_epi8(39));
                _mm_add_epi8(_mm_add_epi8(n, _mm_set1_epi8(b'0' as i8)), letters)
            };
            for half in 0..2 {
                let v = _mm_loadu_si128(self.0.as_ptr().add(16 * half).cast::<__m128i>());
                let high = _mm_and_si128(_mm_srli_epi16(v, 4), low_nibble);
                let low = _mm_and_si128(v, low_nibble);
                // Each byte's high digit first.
                let first = _mm_unpacklo_epi8(high, low);
                let second = _mm_unpackhi_epi8(high, low);
                let at = out.as_mut_ptr().add(32 * half);
                _mm_storeu_si128(at.cast::<__m128i>(), ascii(first));
                _mm_storeu_si128(at.add(16).cast::<__m128i>(), ascii(second));
            }
        }
        out
    }
}

impl fmt::Display for WorkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.hex_bytes();
        // Hex digits are ASCII.
        f.write_str(std::str::from_utf8(&hex).unwrap_or_default())
    }
}

impl fmt::Debug for WorkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WorkId({self})")
    }
}

impl Serialize for WorkId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let hex = self.hex_bytes();
        // Hex digits are ASCII.
        s.serialize_str(std::str::from_utf8(&hex).unwrap_or_default())
    }
}

/// A work id checked against a payload: the SHA-256 of the payload's
/// canonical bytes. The replay's id sets insert nothing else, because
/// their hashers rely on ids being hashes that nobody could choose (see
/// `idset::IdState`), and the one way to make one, `VerifiedId::check`
/// (for the journal's code alone), does the hashing itself. The classifier makes one for every lease it
/// accepts ([`Lease::id`](super::Lease::id)).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct VerifiedId(WorkId);

impl VerifiedId {
    /// `id` when it is the SHA-256 of `canonical_payload`; otherwise the
    /// id the payload does hash to.
    pub(super) fn check(id: WorkId, canonical_payload: &[u8]) -> Result<VerifiedId, WorkId> {
        let computed = WorkId::of_canonical(canonical_payload);
        if computed == id {
            Ok(VerifiedId(id))
        } else {
            Err(computed)
        }
    }

    /// The id.
    #[inline]
    pub fn id(&self) -> &WorkId {
        &self.0
    }
}

/// The id of a payload made from `n`, verified: for the tests of the sets
/// that take only verified ids.
#[cfg(test)]
pub(super) fn verified_for_test(n: u64) -> VerifiedId {
    let payload = format!(r#"{{"n":{n}}}"#);
    let id = WorkId::of_canonical(payload.as_bytes());
    VerifiedId::check(id, payload.as_bytes()).unwrap()
}

/// A verified id is looked up as the plain id it is (their hashes agree:
/// both hash the same 32 bytes).
impl Borrow<WorkId> for VerifiedId {
    #[inline]
    fn borrow(&self) -> &WorkId {
        &self.0
    }
}

impl fmt::Debug for VerifiedId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VerifiedId({})", self.0)
    }
}

/// Decodes 64 lowercase hex characters (uppercase is not an id). The
/// digest ledger's lines are decoded here too.
#[inline]
pub(crate) fn decode_hex(hex: &[u8]) -> Option<WorkId> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        decode_hex_sse2(hex)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        decode_hex_scalar(hex)
    }
}

/// [`decode_hex`] one character pair at a time: the reference for the
/// SSE2 version, and what other CPUs run.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn decode_hex_scalar(hex: &[u8]) -> Option<WorkId> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    let mut bad = 0u8;
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        let (hi, lo) = (NIBBLES[usize::from(pair[0])], NIBBLES[usize::from(pair[1])]);
        bad |= hi | lo;
        out[i] = hi << 4 | (lo & 0xF);
    }
    // Any 0xFF entry sets the high bits; valid nibbles never do.
    (bad & 0xF0 == 0).then_some(WorkId(out))
}

/// [`decode_hex`] sixteen characters at a time.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn decode_hex_sse2(hex: &[u8]) -> Option<WorkId> {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
        _mm_or_si128, _mm_packus_epi16, _mm_set1_epi8, _mm_set1_epi16, _mm_slli_epi16,
        _mm_srli_epi16, _mm_storeu_si128, _mm_sub_epi8,
    };
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    let mut valid = 0xFFFF_u32;
    // SAFETY: this build has SSE2 (the cfg); each load reads sixteen of
    // `hex`'s 64 bytes and each store writes sixteen of `out`'s 32.
    unsafe {
        // Sixteen characters to sixteen nibble values, noting any character
        // that is not 0-9 or a-f (bytes from 0x80 compare as negative).
        let nibbles = |at: usize, valid: &mut u32| {
            let v = _mm_loadu_si128(hex.as_ptr().add(at).cast::<__m128i>());
            let digit = _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(b'0' as i8 - 1)),
                _mm_cmplt_epi8(v, _mm_set1_epi8(b'9' as i8 + 1)),
            );
            let letter = _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(b'a' as i8 - 1)),
                _mm_cmplt_epi8(v, _mm_set1_epi8(b'f' as i8 + 1)),
            );
            *valid &= _mm_movemask_epi8(_mm_or_si128(digit, letter)) as u32;
            // '0' -> 0 and 'a' -> 10: letters lose 0x27 more than digits.
            let shifted = _mm_sub_epi8(v, _mm_set1_epi8(b'0' as i8));
            let nibble = _mm_sub_epi8(shifted, _mm_and_si128(letter, _mm_set1_epi8(0x27)));
            // Each 16-bit lane holds (high nibble, low nibble) in memory
            // order: high << 4 | low, in the lane's low byte.
            _mm_or_si128(
                _mm_slli_epi16(_mm_and_si128(nibble, _mm_set1_epi16(0x00FF)), 4),
                _mm_srli_epi16(nibble, 8),
            )
        };
        for half in 0..2 {
            let a = nibbles(32 * half, &mut valid);
            let b = nibbles(32 * half + 16, &mut valid);
            _mm_storeu_si128(
                out.as_mut_ptr().add(16 * half).cast::<__m128i>(),
                _mm_packus_epi16(a, b),
            );
        }
    }
    (valid == 0xFFFF).then_some(WorkId(out))
}

/// Lowercase hex digit values; 0xFF marks anything else.
const NIBBLES: [u8; 256] = {
    let mut table = [0xFFu8; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// The value of a lowercase hex digit (what canonical `\u` escapes and
/// ids are written with).
pub(super) fn hex_digit(b: u8) -> Option<u8> {
    let v = NIBBLES[usize::from(b)];
    (v != 0xFF).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_write_the_same_hex_on_every_path() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for n in 0..5000u32 {
            let mut b = [0u8; 32];
            for chunk in b.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes());
            }
            if n < 256 {
                // Every byte value at both ends of each half.
                for at in [0, 15, 16, 31] {
                    b[at] = n as u8;
                }
            }
            let id = WorkId(b);
            assert_eq!(id.hex_bytes(), id.hex_bytes_scalar());
            let hex: String = b.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(id.to_hex(), hex);
        }
    }

    #[test]
    fn ids_order_as_their_bytes_and_hex_do() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut ids = Vec::new();
        for n in 0..3000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut b = [0u8; 32];
            // Ids that share a long prefix and differ in one late byte,
            // or in a byte whose top bit is set, as well as random ones.
            match n % 3 {
                0 => b
                    .iter_mut()
                    .zip(x.to_le_bytes().iter().cycle())
                    .for_each(|(d, s)| *d = *s),
                1 => b[(x % 32) as usize] = (x >> 8) as u8,
                _ => b[31] = x as u8 | 0x80,
            }
            ids.push(WorkId(b));
        }
        for pair in ids.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert_eq!(a.cmp(&b), a.0.cmp(&b.0));
            assert_eq!(a.cmp(&b), a.to_hex().cmp(&b.to_hex()));
            assert_eq!(a.partial_cmp(&b), Some(a.0.cmp(&b.0)));
        }
        let mut by_words = ids.clone();
        by_words.sort_unstable();
        let mut by_bytes = ids;
        by_bytes.sort_unstable_by_key(|a| a.0);
        assert!(by_words == by_bytes);
    }

    #[test]
    fn an_id_is_shown_short_by_its_first_twelve_characters() {
        let id = WorkId::of_canonical(b"{}");
        assert_eq!(id.short(), id.to_hex()[..12]);
        assert_eq!(short_id(&id.to_hex()), id.short());
    }

    #[test]
    fn an_id_is_verified_only_by_its_own_payload() {
        let payload = br#"{"path":"legacy","target_branch":5}"#;
        let id = WorkId::of_canonical(payload);
        assert_eq!(VerifiedId::check(id, payload).map(|v| *v.id()), Ok(id));
        let other = WorkId([0xAB; 32]);
        assert_eq!(VerifiedId::check(other, payload), Err(id));
        // Looked up as the plain id it is.
        let mut set = std::collections::HashSet::new();
        set.insert(VerifiedId::check(id, payload).unwrap());
        assert!(set.contains(&id));
    }

    #[test]
    fn ids_decode_as_the_scalar_reference_does() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet = b"0123456789abcdef";
        for round in 0..20_000 {
            let mut hex: Vec<u8> = (0..64).map(|_| alphabet[(next() % 16) as usize]).collect();
            if round % 2 == 1 {
                // One byte of any value at any place.
                let at = (next() % 64) as usize;
                hex[at] = next() as u8;
            }
            assert_eq!(decode_hex(&hex), decode_hex_scalar(&hex), "{hex:?}");
        }
        for byte in 0..=255u8 {
            for at in [0, 1, 15, 16, 31, 32, 47, 63] {
                let mut hex = vec![b'7'; 64];
                hex[at] = byte;
                assert_eq!(decode_hex(&hex), decode_hex_scalar(&hex), "{byte} at {at}");
                assert_eq!(
                    decode_hex(&hex).is_some(),
                    byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)
                );
            }
        }
        let hex = b"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1eff";
        let mut want = [0u8; 32];
        for (i, b) in want.iter_mut().enumerate() {
            *b = i as u8;
        }
        want[31] = 0xFF;
        assert_eq!(decode_hex(hex), Some(WorkId(want)));
    }
}
