//! A JSON parser that accepts exactly what CPython 3.11's `json` module
//! accepts, in the two configurations upstream uses.
//!
//! Grammar and limits reproduced from CPython's C scanner:
//! - whitespace is space, tab, LF and CR only; a leading U+FEFF is refused
//!   ("Unexpected UTF-8 BOM");
//! - any value may stand at the top level; trailing data is refused;
//! - strings refuse raw control characters (< 0x20) and unknown escapes,
//!   keep lone surrogate escapes, and join a high/low escape pair into one
//!   code point;
//! - numbers follow `-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?`; integers are
//!   arbitrary precision but refused beyond 4300 digits (Python's
//!   `int_max_str_digits`); floats round correctly and `1e400` becomes
//!   infinity without error;
//! - `NaN`, `Infinity` and `-Infinity` are constants: refused in journal
//!   mode (upstream's `parse_constant` raises), floats in snapshot mode;
//! - duplicate members are refused at any depth in journal mode (upstream's
//!   `object_pairs_hook`), and in snapshot mode the last value wins at the
//!   first position (plain `dict`);
//! - nesting deeper than [`MAX_DEPTH`] is refused, where CPython raises
//!   `RecursionError` (about 995 levels for a bare call, fewer inside the
//!   master's call stack; the line reader sees the same refusal).

use std::collections::HashMap;
use std::fmt;

use num_bigint::BigInt;

use super::value::{Object, PyInt, PyString, Value};

/// The deepest nesting accepted. CPython 3.11's recursion limit (1000) makes
/// a bare `json.loads` fail at 995–996 levels; upstream parses from inside
/// its own call stack, so the real limit is a little lower. Depths up to 900
/// are certainly accepted upstream and depths beyond 1000 certainly refused.
pub const MAX_DEPTH: usize = 980;

/// Python's default `sys.get_int_max_str_digits()`.
const MAX_INT_DIGITS: usize = 4300;

/// Which of upstream's two `json` configurations to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Journal lines: duplicates and non-finite constants refused.
    Journal,
    /// `.state_tasks.json`: plain `json.load`.
    Snapshot,
}

/// Why a text is not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// The text starts with U+FEFF.
    Bom,
    /// Not JSON; the message says what was expected.
    Syntax(&'static str),
    /// A member name repeated within one object (journal mode).
    DuplicateMember(String),
    /// `NaN`, `Infinity` or `-Infinity` (journal mode).
    NonFinite(&'static str),
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
    /// An integer with more than 4300 digits.
    IntegerTooLong,
}

/// A refusal, with the byte offset (in the decoded text) where it occurred.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// What went wrong.
    pub kind: ParseErrorKind,
    /// Byte offset in the parsed text.
    pub offset: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ParseErrorKind::Bom => write!(f, "starts with a UTF-8 byte order mark"),
            ParseErrorKind::Syntax(what) => write!(f, "{what} at byte {}", self.offset),
            ParseErrorKind::DuplicateMember(key) => {
                write!(f, "duplicate member {key:?} at byte {}", self.offset)
            }
            ParseErrorKind::NonFinite(token) => {
                write!(f, "non-finite constant {token} at byte {}", self.offset)
            }
            ParseErrorKind::TooDeep => {
                write!(
                    f,
                    "nested deeper than {MAX_DEPTH} levels at byte {}",
                    self.offset
                )
            }
            ParseErrorKind::IntegerTooLong => write!(
                f,
                "integer longer than {MAX_INT_DIGITS} digits at byte {}",
                self.offset
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// What the parser saw besides the value (snapshot mode tolerates these).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParseStats {
    /// Members whose name repeated an earlier one in the same object.
    pub duplicate_members: u64,
    /// `NaN`/`Infinity`/`-Infinity` constants.
    pub nonfinite_constants: u64,
}

/// A parsed document.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    /// The value.
    pub value: Value,
    /// What was tolerated on the way.
    pub stats: ParseStats,
}

/// Parses a whole text as `json.loads` would in the given mode.
pub fn parse(text: &str, mode: Mode) -> Result<Parsed, ParseError> {
    run(text, mode, true)
}

/// Checks a text as [`parse`] does, without keeping the values: the result
/// is the top-level value with arrays emptied and every member's value
/// `null`. Memory stays proportional to the member names, not the text,
/// which is what huge lines need.
pub fn validate(text: &str, mode: Mode) -> Result<Parsed, ParseError> {
    run(text, mode, false)
}

fn run(text: &str, mode: Mode, keep: bool) -> Result<Parsed, ParseError> {
    let mut parser = Parser {
        s: text.as_bytes(),
        pos: 0,
        depth: 0,
        mode,
        keep,
        stats: ParseStats::default(),
    };
    if text.starts_with('\u{feff}') {
        return Err(parser.error(ParseErrorKind::Bom));
    }
    parser.skip_ws();
    let value = parser.value()?;
    parser.skip_ws();
    if parser.pos != parser.s.len() {
        return Err(parser.error(ParseErrorKind::Syntax("extra data")));
    }
    Ok(Parsed {
        value,
        stats: parser.stats,
    })
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    keep: bool,
    depth: usize,
    mode: Mode,
    stats: ParseStats,
}

impl Parser<'_> {
    fn error(&self, kind: ParseErrorKind) -> ParseError {
        ParseError {
            kind,
            offset: self.pos,
        }
    }

    fn syntax(&self, what: &'static str) -> ParseError {
        self.error(ParseErrorKind::Syntax(what))
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn rest_starts_with(&self, lit: &[u8]) -> bool {
        self.s[self.pos..].starts_with(lit)
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'n') if self.rest_starts_with(b"null") => {
                self.pos += 4;
                Ok(Value::Null)
            }
            Some(b't') if self.rest_starts_with(b"true") => {
                self.pos += 4;
                Ok(Value::Bool(true))
            }
            Some(b'f') if self.rest_starts_with(b"false") => {
                self.pos += 5;
                Ok(Value::Bool(false))
            }
            Some(b'N') if self.rest_starts_with(b"NaN") => self.constant("NaN", f64::NAN),
            Some(b'I') if self.rest_starts_with(b"Infinity") => {
                self.constant("Infinity", f64::INFINITY)
            }
            _ => Err(self.syntax("expecting value")),
        }
    }

    fn constant(&mut self, token: &'static str, value: f64) -> Result<Value, ParseError> {
        if self.mode == Mode::Journal {
            return Err(self.error(ParseErrorKind::NonFinite(token)));
        }
        self.pos += token.len();
        self.stats.nonfinite_constants += 1;
        Ok(Value::Float(value))
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(ParseErrorKind::TooDeep));
        }
        Ok(())
    }

    fn array(&mut self) -> Result<Value, ParseError> {
        self.enter()?;
        self.pos += 1;
        self.skip_ws();
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::Array(items));
        }
        loop {
            let item = self.value()?;
            if self.keep {
                items.push(item);
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.syntax("expecting ',' delimiter")),
            }
        }
    }

    fn object(&mut self) -> Result<Value, ParseError> {
        self.enter()?;
        self.pos += 1;
        self.skip_ws();
        let mut members: Vec<(PyString, Value)> = Vec::new();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::Object(Object(members)));
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(self.syntax("expecting property name enclosed in double quotes"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.syntax("expecting ':' delimiter"));
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value()?;
            members.push((key, if self.keep { value } else { Value::Null }));
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return self.finish_object(members);
                }
                _ => return Err(self.syntax("expecting ',' delimiter")),
            }
        }
    }

    /// Applies the mode's duplicate rule once the object is complete, which
    /// is when upstream's `object_pairs_hook` (or `dict`) sees the pairs.
    fn finish_object(&mut self, members: Vec<(PyString, Value)>) -> Result<Value, ParseError> {
        let Some(first_dup) = first_duplicate(&members) else {
            return Ok(Value::Object(Object(members)));
        };
        if self.mode == Mode::Journal {
            let key = members[first_dup].0.to_string_lossy();
            return Err(self.error(ParseErrorKind::DuplicateMember(key)));
        }
        let mut index: HashMap<PyString, usize> = HashMap::with_capacity(members.len());
        let mut unique: Vec<(PyString, Value)> = Vec::with_capacity(members.len());
        for (key, value) in members {
            match index.get(&key) {
                Some(&at) => {
                    self.stats.duplicate_members += 1;
                    unique[at].1 = value;
                }
                None => {
                    index.insert(key.clone(), unique.len());
                    unique.push((key, value));
                }
            }
        }
        Ok(Value::Object(Object(unique)))
    }

    fn string(&mut self) -> Result<PyString, ParseError> {
        self.pos += 1; // opening quote
        let mut out = Vec::new();
        loop {
            let start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.extend_from_slice(&self.s[start..self.pos]);
            match self.peek() {
                None => return Err(self.syntax("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(PyString::from_wtf8(out));
                }
                Some(b'\\') => self.escape(&mut out)?,
                Some(_) => return Err(self.syntax("invalid control character in string")),
            }
        }
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), ParseError> {
        self.pos += 1;
        let byte = match self.peek() {
            Some(b'"') => b'"',
            Some(b'\\') => b'\\',
            Some(b'/') => b'/',
            Some(b'b') => 0x08,
            Some(b'f') => 0x0C,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'u') => {
                self.pos += 1;
                let mut cp = self.hex4()?;
                if (0xD800..0xDC00).contains(&cp) && self.rest_starts_with(b"\\u") {
                    let save = self.pos;
                    self.pos += 2;
                    let low = self.hex4()?;
                    if (0xDC00..0xE000).contains(&low) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    } else {
                        self.pos = save;
                    }
                }
                push_wtf8(out, cp);
                return Ok(());
            }
            _ => return Err(self.syntax("invalid \\escape")),
        };
        self.pos += 1;
        out.push(byte);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let digits = self
            .s
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.syntax("invalid \\uXXXX escape"))?;
        let mut cp = 0u32;
        for &d in digits {
            let v = (d as char)
                .to_digit(16)
                .ok_or_else(|| self.syntax("invalid \\uXXXX escape"))?;
            cp = cp * 16 + v;
        }
        self.pos += 4;
        Ok(cp)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
            if self.rest_starts_with(b"Infinity") {
                self.pos = start;
                return self.constant("-Infinity", f64::NEG_INFINITY);
            }
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => {
                self.pos = start;
                return Err(self.syntax("expecting value"));
            }
        }
        let int_end = self.pos;
        let mut is_float = false;
        if self.peek() == Some(b'.') && matches!(self.s.get(self.pos + 1), Some(b'0'..=b'9')) {
            self.pos += 1;
            self.digits();
            is_float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            let save = self.pos;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                self.pos = save;
            } else {
                is_float = true;
            }
        }
        // The scanned text is ASCII by construction.
        let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("0");
        if is_float {
            let value: f64 = text.parse().unwrap_or(f64::NAN);
            return Ok(Value::Float(value));
        }
        let digit_count = int_end - start - usize::from(text.starts_with('-'));
        if digit_count > MAX_INT_DIGITS {
            self.pos = start;
            return Err(self.error(ParseErrorKind::IntegerTooLong));
        }
        if digit_count <= 18 {
            let v: i64 = text.parse().unwrap_or(0);
            return Ok(Value::Int(PyInt::Small(v)));
        }
        let big = BigInt::parse_bytes(text.as_bytes(), 10).unwrap_or_default();
        Ok(Value::Int(PyInt::from_big(big)))
    }
}

/// Index of the first member whose key appeared earlier in the object.
fn first_duplicate(members: &[(PyString, Value)]) -> Option<usize> {
    if members.len() <= 16 {
        return (1..members.len()).find(|&i| members[..i].iter().any(|(k, _)| *k == members[i].0));
    }
    let mut seen = std::collections::HashSet::with_capacity(members.len());
    members.iter().position(|(k, _)| !seen.insert(k))
}

/// Appends a code point (surrogates included) in WTF-8.
fn push_wtf8(out: &mut Vec<u8>, cp: u32) {
    match cp {
        0..=0x7F => out.push(cp as u8),
        0x80..=0x7FF => {
            out.push(0xC0 | (cp >> 6) as u8);
            out.push(0x80 | (cp & 0x3F) as u8);
        }
        0x800..=0xFFFF => {
            out.push(0xE0 | (cp >> 12) as u8);
            out.push(0x80 | ((cp >> 6) & 0x3F) as u8);
            out.push(0x80 | (cp & 0x3F) as u8);
        }
        _ => {
            out.push(0xF0 | (cp >> 18) as u8);
            out.push(0x80 | ((cp >> 12) & 0x3F) as u8);
            out.push(0x80 | ((cp >> 6) & 0x3F) as u8);
            out.push(0x80 | (cp & 0x3F) as u8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(text: &str) -> Result<Value, ParseErrorKind> {
        parse(text, Mode::Journal)
            .map(|p| p.value)
            .map_err(|e| e.kind)
    }

    #[test]
    fn accepts_surrounding_whitespace_and_scalars() {
        assert_eq!(journal(" \t1\r\n"), Ok(Value::Int(PyInt::Small(1))));
        assert_eq!(journal("\"x\""), Ok(Value::Str("x".into())));
        assert!(journal("").is_err());
        assert!(
            journal(" \u{c}1").is_err(),
            "form feed is not JSON whitespace"
        );
    }

    #[test]
    fn refuses_bom_duplicates_and_constants_in_journal_mode() {
        assert_eq!(journal("\u{feff}{}"), Err(ParseErrorKind::Bom));
        assert_eq!(
            journal(r#"{"a":{"b":1,"b":2}}"#),
            Err(ParseErrorKind::DuplicateMember("b".into()))
        );
        assert_eq!(journal("[NaN]"), Err(ParseErrorKind::NonFinite("NaN")));
        assert_eq!(
            journal("-Infinity"),
            Err(ParseErrorKind::NonFinite("-Infinity"))
        );
    }

    #[test]
    fn snapshot_mode_keeps_first_position_and_last_value() {
        let parsed = parse(r#"{"a":1,"b":2,"a":Infinity}"#, Mode::Snapshot).unwrap();
        let obj = parsed.value.as_object().unwrap();
        assert_eq!(obj.members()[0].0, *"a");
        assert_eq!(obj.members()[0].1, Value::Float(f64::INFINITY));
        assert_eq!(obj.len(), 2);
        assert_eq!(parsed.stats.duplicate_members, 1);
        assert_eq!(parsed.stats.nonfinite_constants, 1);
    }

    #[test]
    fn surrogates_pair_up_or_stay_lone() {
        let v = journal(r#""\ud83d\ude00""#).unwrap();
        assert_eq!(v, Value::Str("\u{1F600}".into()));
        let lone = journal(r#""\ud800x""#).unwrap();
        assert_eq!(lone.as_pystr().unwrap().as_bytes(), b"\xed\xa0\x80x");
        let high_high = journal(r#""\ud800\ud800""#).unwrap();
        assert_eq!(high_high.as_pystr().unwrap().char_len(), 2);
    }

    #[test]
    fn numbers_follow_python() {
        assert_eq!(journal("-0"), Ok(Value::Int(PyInt::Small(0))));
        assert_eq!(journal("1e400"), Ok(Value::Float(f64::INFINITY)));
        assert!(journal("01").is_err());
        assert!(journal("1.").is_err());
        assert!(journal("-").is_err());
        let big = journal("18446744073709551615").unwrap();
        assert_eq!(
            big,
            Value::Int(PyInt::from_big("18446744073709551615".parse().unwrap()))
        );
        let long = "9".repeat(4301);
        assert_eq!(journal(&long), Err(ParseErrorKind::IntegerTooLong));
        assert!(journal(&"9".repeat(4300)).is_ok());
    }

    #[test]
    fn validation_agrees_with_parsing() {
        for text in [
            "[1,[2,{\"a\":3}]]",
            "{\"a\":{\"b\":1,\"b\":2}}",
            "[NaN]",
            "{\"a\":[1,2]}",
            "[1,",
            "\"x\"",
        ] {
            let full = parse(text, Mode::Journal).map(|p| p.value.type_name());
            let quick = validate(text, Mode::Journal).map(|p| p.value.type_name());
            assert_eq!(full, quick, "{text}");
        }
        let v = validate("[1,2,3]", Mode::Journal).unwrap().value;
        assert_eq!(v, Value::Array(vec![]));
    }

    #[test]
    fn depth_limit() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(journal(&ok).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(journal(&deep), Err(ParseErrorKind::TooDeep));
        assert_eq!(
            journal(&"[".repeat(1_000_000)),
            Err(ParseErrorKind::TooDeep)
        );
    }

    #[test]
    fn raw_control_characters_are_refused_but_del_is_not() {
        assert!(journal("\"a\u{1}\"").is_err());
        assert!(journal("\"a\u{7f}\"").is_ok());
        assert!(journal(r#""\x""#).is_err());
    }
}
