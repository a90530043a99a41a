//! Python-compatible JSON: the value model, the parser, the canonical encoder
//! and the coercions upstream applies to parsed values.
//!
//! Upstream reads journals with `json.loads(line, object_pairs_hook=<reject
//! duplicates>, parse_constant=<reject NaN/Infinity>)` after decoding the file
//! as UTF-8 with `errors="ignore"`, and snapshots with plain `json.load`. It
//! hashes and writes with `json.dumps(v, sort_keys=True, separators=(",",
//! ":"))`. None of this matches serde_json byte for byte (lone surrogates,
//! arbitrary-precision integers, `1e+16`, duplicate-member rules), so the
//! project carries its own small implementation, tested against CPython's
//! verdicts on JSONTestSuite and the differential fixtures.

mod encode;
mod first_line;
mod parse;
mod python;
mod value;

pub use encode::{
    NonFinite, encode_canonical, encode_string, float_repr, float_repr_any, float_repr_value,
    is_float_repr, to_canonical,
};
pub use first_line::{FirstLine, first_line};
pub use parse::{MAX_DEPTH, Mode, ParseError, ParseErrorKind, ParseStats, Parsed, parse, validate};
pub use python::{CoerceError, py_float, py_int, py_str, py_str_is_work_id, py_strip, truthy};
pub use value::{Object, PyInt, PyString, Value};

use std::borrow::Cow;

/// Deletes every byte that is not part of a valid UTF-8 sequence, as Python's
/// `bytes.decode("utf-8", errors="ignore")` does (maximal-subpart rule).
///
/// Returns the input unchanged (borrowed) when it is already valid, and the
/// number of deleted bytes.
pub fn strip_invalid_utf8(bytes: &[u8]) -> (Cow<'_, [u8]>, usize) {
    if std::str::from_utf8(bytes).is_ok() {
        return (Cow::Borrowed(bytes), 0);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut deleted = 0;
    for chunk in bytes.utf8_chunks() {
        out.extend_from_slice(chunk.valid().as_bytes());
        deleted += chunk.invalid().len();
    }
    (Cow::Owned(out), deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_keeps_valid_text_borrowed() {
        let (out, n) = strip_invalid_utf8("caf\u{e9}\n".as_bytes());
        assert!(matches!(out, Cow::Borrowed(_)));
        assert_eq!(n, 0);
    }

    #[test]
    fn strip_deletes_maximal_subparts_only() {
        // E2 82 is a truncated 3-byte sequence: both bytes go, 'A' stays.
        let (out, n) = strip_invalid_utf8(b"x\xe2\x82Ay\xff\n");
        assert_eq!(&*out, b"xAy\n");
        assert_eq!(n, 3);
        // An encoded surrogate is invalid UTF-8 and vanishes entirely.
        let (out, n) = strip_invalid_utf8(b"\"\xed\xa0\x80\"");
        assert_eq!(&*out, b"\"\"");
        assert_eq!(n, 3);
    }
}
