//! The fast path of line classification: a single pass over a line that is
//! exactly what upstream writes (sorted keys, compact separators, ASCII,
//! canonical escapes and numbers), without building a value tree. The
//! payload's bytes are then its canonical encoding, so they are hashed as
//! they stand.
//!
//! Anything else — a space, an unsorted key, an escape in a member name, a
//! float that is not Python's repr of itself, a coerced value — returns
//! `None` and goes to the general path (`general`, its sibling), which handles
//! every line. The contract, tested on every fixture and on generated and
//! fuzzed lines: whenever this returns `Some`, it equals what the general
//! path returns.

use crate::engine::journal::id::{VerifiedId, WorkId, decode_hex, hex_digit};
use crate::engine::journal::model::{
    Classified, Clock, ClockMarker, Lease, LeaseRejection, LineKind, Op, Payload, Record,
};
use crate::engine::json::{MAX_DEPTH, PyInt, float_repr_value};

/// Upstream's records nest one level below the line's object.
const PAYLOAD_DEPTH: usize = 2;

struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    #[inline(always)]
    fn eat(&mut self, lit: &[u8]) -> Option<()> {
        if self.s[self.pos..].starts_with(lit) {
            self.pos += lit.len();
            Some(())
        } else {
            None
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    /// 64 lowercase hex characters and the closing quote.
    fn id(&mut self) -> Option<WorkId> {
        let hex = self.s.get(self.pos..self.pos + 64)?;
        let id = decode_hex(hex)?;
        self.pos += 64;
        self.eat(b"\"")?;
        Some(id)
    }

    /// A non-negative integer in canonical form that fits in i64.
    fn small_uint(&mut self) -> Option<i64> {
        let start = self.pos;
        self.pos = skip_digits(self.s, self.pos);
        let digits = &self.s[start..self.pos];
        if digits.is_empty() || digits.len() > 18 || (digits.len() > 1 && digits[0] == b'0') {
            return None;
        }
        Some(
            digits
                .iter()
                .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0')),
        )
    }

    /// A float in Python's repr form, finite and not negative; returns the
    /// value.
    fn repr_float(&mut self) -> Option<f64> {
        let start = self.pos;
        while let Some(b'0'..=b'9' | b'.' | b'e' | b'+' | b'-') = self.peek() {
            self.pos += 1;
        }
        let text = &self.s[start..self.pos];
        if text.starts_with(b"-") {
            return None;
        }
        float_repr_value(text)
    }

    /// A canonical JSON value at `depth`.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string(),
            b't' => self.eat(b"true"),
            b'f' => self.eat(b"false"),
            b'n' => self.eat(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        self.object_members(depth, |_, _| {})
    }

    /// A canonical object at `depth`, telling `member` each member's name
    /// and where its value is.
    #[inline]
    fn object_members(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&'a [u8], std::ops::Range<usize>),
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        if self.eat(b"}").is_some() {
            return Some(());
        }
        let mut previous: Option<&[u8]> = None;
        loop {
            let key = self.plain_key()?;
            // Sorted strictly: also rules out duplicates.
            if previous.is_some_and(|p| !sorts_before(p, key)) {
                return None;
            }
            previous = Some(key);
            self.eat(b":")?;
            let start = self.pos;
            self.value(depth)?;
            member(key, start..self.pos);
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A member name of printable ASCII without escapes (whose byte order
    /// is then code point order).
    fn plain_key(&mut self) -> Option<&'a [u8]> {
        self.eat(b"\"")?;
        let start = self.pos;
        let stop = skip_plain(self.s, start)?;
        if self.s[stop] != b'"' {
            return None;
        }
        self.pos = stop + 1;
        Some(&self.s[start..stop])
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        if self.eat(b"]").is_some() {
            return Some(());
        }
        loop {
            self.value(depth)?;
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string as `ensure_ascii` writes it.
    fn string(&mut self) -> Option<()> {
        self.pos += 1;
        loop {
            self.pos = skip_plain(self.s, self.pos)?;
            match self.s[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                b'\\' => self.pos += 1,
                // A control character, DEL or non-ASCII: Python escapes it.
                _ => return None,
            }
            match self.peek()? {
                b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f' => self.pos += 1,
                b'u' => {
                    let hex = self.s.get(self.pos + 1..self.pos + 5)?;
                    let mut v = 0u32;
                    for &h in hex {
                        v = v << 4 | u32::from(hex_digit(h)?);
                    }
                    // Python writes these as themselves or as short
                    // escapes, never as \u.
                    let short = matches!(v, 0x08 | 0x09 | 0x0A | 0x0C | 0x0D);
                    if short || (0x20..0x7F).contains(&v) {
                        return None;
                    }
                    self.pos += 5;
                }
                _ => return None,
            }
        }
    }

    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        self.eat(b"-");
        let int_start = self.pos;
        self.pos = skip_digits(self.s, self.pos);
        let int_digits = self.pos - int_start;
        if int_digits == 0 || (int_digits > 1 && self.s[int_start] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            // Floats are rare in payloads: canonical only as Python's repr.
            while let Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            return float_repr_value(&self.s[start..self.pos]).map(|_| ());
        }
        let negative = int_start > start;
        if (negative && &self.s[int_start..self.pos] == b"0") || int_digits > 4300 {
            return None;
        }
        Some(())
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Flags (in the high bit of each byte) the bytes of `word` that end a run
/// of plain string characters: controls, `"`, `\`, DEL and non-ASCII.
/// Borrows can flag a byte above a flagged one, so only the lowest flag is
/// exact; that is the only one used.
#[inline(always)]
fn specials(word: u64) -> u64 {
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    (word & HIGHS)
        | below_space
        | zero_bytes(word ^ (ONES * u64::from(b'"')))
        | zero_bytes(word ^ (ONES * u64::from(b'\\')))
        | zero_bytes(word ^ (ONES * 0x7F))
}

/// A bit for each of the sixteen bytes at `pos` that is not plain
/// ([`is_plain`]); `None` when fewer than sixteen bytes are left.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn specials_16(s: &[u8], pos: usize) -> Option<u32> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let chunk = s.get(pos..pos + 16)?;
    // SAFETY: this build has SSE2 (the cfg), and `chunk` holds the
    // sixteen bytes the unaligned load reads.
    let mask = unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
        // A signed comparison: bytes from 0x80 (non-ASCII) are negative, so
        // one test finds them and the controls.
        let below_space = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        let del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F));
        _mm_movemask_epi8(_mm_or_si128(
            _mm_or_si128(below_space, quote),
            _mm_or_si128(backslash, del),
        ))
    };
    Some(mask as u32)
}

/// Whether `a` sorts strictly before `b`, byte by byte; member names are
/// short and usually differ in their first byte, where this stops.
#[inline]
fn sorts_before(a: &[u8], b: &[u8]) -> bool {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x < y;
        }
    }
    a.len() < b.len()
}

/// Printable ASCII other than `"` and `\`: what a canonical string holds
/// unescaped.
fn is_plain(b: u8) -> bool {
    (0x20..0x7F).contains(&b) && b != b'"' && b != b'\\'
}

/// The position of the first byte at or after `pos` that is not plain
/// ([`is_plain`]), sixteen bytes at a time where SSE2 is (every x86-64),
/// then eight at a time; `None` when the line ends first.
#[inline]
fn skip_plain(s: &[u8], mut pos: usize) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    while let Some(flags) = specials_16(s, pos) {
        if flags != 0 {
            return Some(pos + flags.trailing_zeros() as usize);
        }
        pos += 16;
    }
    while let Some(chunk) = s.get(pos..pos + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let flags = specials(u64::from_le_bytes(word));
        if flags != 0 {
            return Some(pos + (flags.trailing_zeros() / 8) as usize);
        }
        pos += 8;
    }
    let rest = s.get(pos..)?;
    rest.iter().position(|&b| !is_plain(b)).map(|i| pos + i)
}

/// The position of the first byte at or after `pos` that is not an ASCII
/// digit (or the end), sixteen bytes at a time where SSE2 is: payloads are
/// full of 64-bit hashes written as twenty digits.
#[inline]
fn skip_digits(s: &[u8], mut pos: usize) -> usize {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    while let Some(chunk) = s.get(pos..pos + 16) {
        use std::arch::x86_64::{
            __m128i, _mm_and_si128, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128,
            _mm_movemask_epi8, _mm_set1_epi8,
        };
        // SAFETY: this build has SSE2 (the cfg), and `chunk` holds the
        // sixteen bytes the unaligned load reads.
        let digits = unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            _mm_movemask_epi8(_mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(b'0' as i8 - 1)),
                _mm_cmplt_epi8(v, _mm_set1_epi8(b'9' as i8 + 1)),
            )) as u32
        };
        let run = digits.trailing_ones() as usize;
        pos += run;
        if run < 16 {
            return pos;
        }
    }
    while let Some(b'0'..=b'9') = s.get(pos) {
        pos += 1;
    }
    pos
}

fn clock_value(c: &mut Cursor<'_>) -> Option<Clock> {
    if c.eat(b"\"unix\"").is_some() {
        Some(Clock::Unix)
    } else if c.eat(b"\"legacy\"").is_some() {
        Some(Clock::Legacy)
    } else {
        None
    }
}

fn marker(clock: Option<Clock>) -> ClockMarker {
    match clock {
        None => ClockMarker::Absent,
        Some(Clock::Unix) => ClockMarker::Unix,
        Some(Clock::Legacy) => ClockMarker::Legacy,
    }
}

/// The raw bytes of the top-level member `name` of a canonical object (a
/// lease's payload, as the replay keeps it): `Some(Some(value))`, or
/// `Some(None)` when the object has no such member; `None` when the bytes
/// are not in the form the fast path reads, and the caller must parse them.
pub fn payload_member<'a>(object: &'a [u8], name: &[u8]) -> Option<Option<&'a [u8]>> {
    payload_members(object, [name]).map(|[found]| found)
}

/// [`payload_member`] for several (distinct) names in one pass over the
/// object.
pub fn payload_members<'a, const N: usize>(
    object: &'a [u8],
    names: [&[u8]; N],
) -> Option<[Option<&'a [u8]>; N]> {
    let mut c = Cursor { s: object, pos: 0 };
    if c.peek()? != b'{' {
        return None;
    }
    let mut found = [None; N];
    c.object_members(PAYLOAD_DEPTH, |key, value| {
        if let Some(i) = names.iter().position(|&n| n == key) {
            found[i] = Some(&object[value]);
        }
    })?;
    (c.pos == object.len()).then_some(found)
}

/// Classifies a line in upstream's exact form, or returns `None`.
pub(super) fn classify(line: &[u8]) -> Option<Classified> {
    let kind = if line.starts_with(b"{\"attempts\":") {
        lease(line)?
    } else {
        marker_record(line)?
    };
    Some(Classified {
        invalid_utf8: 0,
        kind,
    })
}

/// `{"attempts":A,["clock":C,]"id":H,"op":"lease","payload":P,"time":T,"worker":W}`
fn lease(line: &[u8]) -> Option<LineKind> {
    let mut c = Cursor { s: line, pos: 0 };
    c.eat(b"{\"attempts\":")?;
    let attempts = c.small_uint()?;
    if attempts < 1 {
        return None;
    }
    c.eat(b",")?;
    let clock = if c.eat(b"\"clock\":").is_some() {
        let clock = clock_value(&mut c)?;
        c.eat(b",")?;
        Some(clock)
    } else {
        None
    };
    c.eat(b"\"id\":\"")?;
    let id = c.id()?;
    c.eat(b",\"op\":\"lease\",\"payload\":")?;
    if c.peek()? != b'{' {
        return None;
    }
    let payload_start = c.pos;
    c.value(PAYLOAD_DEPTH - 1)?;
    let payload = &line[payload_start..c.pos];
    c.eat(b",\"time\":")?;
    let time = c.repr_float()?;
    c.eat(b",\"worker\":")?;
    let worker = c.small_uint()?;
    c.eat(b"}")?;
    if c.pos != line.len() {
        return None;
    }
    let op = match VerifiedId::check(id, payload) {
        Err(computed) => Op::Lease(Err(LeaseRejection::PayloadMismatch { computed })),
        Ok(verified) => Op::Lease(Ok(Lease {
            id: verified,
            worker: PyInt::Small(worker),
            time,
            attempts: PyInt::Small(attempts),
            clock: clock.unwrap_or(Clock::Legacy),
            payload: Payload::InLine {
                start: payload_start,
                end: payload_start + payload.len(),
            },
            lenient: Vec::new(),
        })),
    };
    let verbatim = clock.is_some() && matches!(op, Op::Lease(Ok(_)));
    Some(LineKind::Record(Record {
        id,
        op,
        time: Some(time),
        marker: marker(clock),
        unknown_fields: Vec::new(),
        canonical: true,
        verbatim,
    }))
}

/// `{"clock":C,"id":H,"op":"done"|"reclaim","time":T}`
fn marker_record(line: &[u8]) -> Option<LineKind> {
    let mut c = Cursor { s: line, pos: 0 };
    c.eat(b"{\"clock\":")?;
    let clock = clock_value(&mut c)?;
    c.eat(b",\"id\":\"")?;
    let id = c.id()?;
    let op = if c.eat(b",\"op\":\"done\",\"time\":").is_some() {
        Op::Done
    } else if c.eat(b",\"op\":\"reclaim\",\"time\":").is_some() {
        Op::Reclaim
    } else {
        return None;
    };
    let time = c.repr_float()?;
    c.eat(b"}")?;
    if c.pos != line.len() {
        return None;
    }
    Some(LineKind::Record(Record {
        id,
        op,
        time: Some(time),
        marker: marker(Some(clock)),
        unknown_fields: Vec::new(),
        canonical: true,
        verbatim: true,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_digits_stops_at_the_first_other_byte() {
        for len in [0usize, 1, 15, 16, 17, 20, 31, 32, 33, 40] {
            for byte in 0..=255u8 {
                for at in [0, len / 2, len.saturating_sub(1), len] {
                    let mut s = vec![b'5'; len + 1];
                    s[at] = byte;
                    let expected = s
                        .iter()
                        .position(|b| !b.is_ascii_digit())
                        .unwrap_or(s.len());
                    assert_eq!(skip_digits(&s, 0), expected, "{s:?}");
                }
            }
        }
    }

    #[test]
    fn sorts_before_is_slice_order() {
        let keys: [&[u8]; 7] = [b"", b"a", b"ab", b"b", b"ba", b"path", b"paths"];
        for a in keys {
            for b in keys {
                assert_eq!(sorts_before(a, b), a < b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn skip_plain_finds_the_first_special_byte() {
        // Every byte value at every position of a run longer than a word,
        // after every kind of byte: borrows from a lower byte must not hide
        // or invent the first special one.
        for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 40] {
            for at in 0..len {
                for special in 0..=255u8 {
                    for before in [b'a', 0x00, 0x1F, 0x20, 0x7F, 0x80, 0xFF] {
                        let mut s = vec![b'a'; len];
                        if at > 0 {
                            s[at - 1] = before;
                        }
                        s[at] = special;
                        let expected = s.iter().position(|&b| !is_plain(b));
                        assert_eq!(skip_plain(&s, 0), expected, "{s:?}");
                    }
                }
            }
        }
        assert_eq!(skip_plain(b"abc", 3), None);
        assert_eq!(skip_plain(b"abc", 4), None);
    }
}
