//! The Python conversions upstream applies to parsed values: truthiness (for
//! `value or default`), `int(value)` and `float(value)` with the exceptions
//! each raises, `str(value)` (and the `repr` it falls back on) and
//! `str.strip()`. Replay and restore decide what to keep by which of these
//! raise, so they are reproduced exactly, down to Unicode digits and
//! underscores in numeric strings.

use std::fmt;

use num_bigint::BigInt;
use num_traits::FromPrimitive;

use super::encode::float_repr_any;
use super::value::{PyInt, PyString, Value};

/// The exception a Python conversion raises.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoerceError {
    /// `TypeError`: the type has no such conversion (null, arrays, objects).
    Type(&'static str),
    /// `ValueError`: a string that is not a number, or NaN to int.
    Value(&'static str),
    /// `OverflowError`: infinity to int, or an int too large for a float.
    Overflow(&'static str),
}

impl fmt::Display for CoerceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoerceError::Type(m) | CoerceError::Value(m) | CoerceError::Overflow(m) => {
                f.write_str(m)
            }
        }
    }
}

/// Python truthiness: what `value or default` tests.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Int(i) => !i.is_zero(),
        Value::Float(f) => *f != 0.0, // NaN is truthy, as in Python
        Value::Str(s) => !s.as_bytes().is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Python's `int(value)`.
pub fn py_int(value: &Value) -> Result<PyInt, CoerceError> {
    match value {
        Value::Bool(b) => Ok(PyInt::Small(i64::from(*b))),
        Value::Int(i) => Ok(i.clone()),
        Value::Float(f) => float_to_int(*f),
        Value::Str(s) => str_to_int(s),
        Value::Null => Err(CoerceError::Type("int() of null")),
        Value::Array(_) => Err(CoerceError::Type("int() of an array")),
        Value::Object(_) => Err(CoerceError::Type("int() of an object")),
    }
}

/// Python's `float(value)`.
pub fn py_float(value: &Value) -> Result<f64, CoerceError> {
    match value {
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Value::Int(i) => int_to_float(i),
        Value::Float(f) => Ok(*f),
        Value::Str(s) => str_to_float(s),
        Value::Null => Err(CoerceError::Type("float() of null")),
        Value::Array(_) => Err(CoerceError::Type("float() of an array")),
        Value::Object(_) => Err(CoerceError::Type("float() of an object")),
    }
}

/// Python's `str(value)` for the values a payload member holds (containers
/// in Python's own `repr` style).
pub fn py_str(value: &Value) -> String {
    match value {
        Value::Str(s) => s.to_string_lossy(),
        other => py_repr(other),
    }
}

/// Python's `repr(value)`: `None`, `True`, `False`, strings quoted the way
/// Python picks quotes, containers with `, ` and `: ` between their items.
/// Floats use JSON's spellings of the non-finite values.
fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => float_repr_any(*f),
        Value::Str(s) => {
            let text = s.to_string_lossy();
            let quote = if text.contains('\'') && !text.contains('"') {
                '"'
            } else {
                '\''
            };
            let mut out = String::from(quote);
            for c in text.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if c == quote => {
                        out.push('\\');
                        out.push(c);
                    }
                    c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                        out.push_str(&format!("\\x{:02x}", c as u32));
                    }
                    c => out.push(c),
                }
            }
            out.push(quote);
            out
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(py_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(o) => format!(
            "{{{}}}",
            o.members()
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr(&Value::Str(k.clone())), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Python's `str.strip()`: Rust's white space plus the four separators
/// (U+001C..U+001F) Python also strips.
pub fn py_strip(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// Upstream's id rule: `str(value)` is 64 characters, all in `[0-9a-f]`.
/// Returns the 32 bytes the hex stands for. Only strings and integers can
/// pass (`str()` of a 64-digit integer is 64 decimal digits).
pub fn py_str_is_work_id(value: &Value) -> Option<[u8; 32]> {
    let text = match value {
        Value::Str(s) => s.as_bytes().to_vec(),
        Value::Int(i) if !i.is_negative() => i.to_string().into_bytes(),
        _ => return None,
    };
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        let hi = lower_hex(pair[0])?;
        let lo = lower_hex(pair[1])?;
        out[i] = hi << 4 | lo;
    }
    Some(out)
}

fn lower_hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

fn float_to_int(f: f64) -> Result<PyInt, CoerceError> {
    if f.is_nan() {
        return Err(CoerceError::Value("cannot convert float NaN to integer"));
    }
    if f.is_infinite() {
        return Err(CoerceError::Overflow(
            "cannot convert float infinity to integer",
        ));
    }
    let t = f.trunc();
    if t.abs() < 9.0e18 {
        return Ok(PyInt::Small(t as i64));
    }
    BigInt::from_f64(t)
        .map(PyInt::from_big)
        .ok_or(CoerceError::Overflow("cannot convert float to integer"))
}

fn int_to_float(i: &PyInt) -> Result<f64, CoerceError> {
    // Parsing the decimal text rounds half to even, as int.__float__ does.
    let f: f64 = match i {
        PyInt::Small(v) => *v as f64,
        PyInt::Big(v) => v.to_string().parse().unwrap_or(f64::INFINITY),
    };
    if f.is_infinite() {
        return Err(CoerceError::Overflow("int too large to convert to float"));
    }
    Ok(f)
}

/// First code points of the Unicode 14 (CPython 3.11) runs of decimal
/// digits 0–9 beyond ASCII; `int()` and `float()` accept all of them.
const DECIMAL_ZEROS: [u32; 65] = [
    0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
    0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50,
    0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50,
    0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

/// Non-ASCII code points `str.isspace()` accepts; `int()`/`float()` treat
/// them as blanks.
const UNICODE_SPACES: [u32; 17] = [
    0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008,
    0x2009, 0x200A, 0x2028, 0x2029, 0x202F,
];
const UNICODE_SPACES_TAIL: [u32; 2] = [0x205F, 0x3000];

/// CPython's `_PyUnicode_TransformDecimalAndSpaceToASCII` followed by the
/// strip of ASCII whitespace both numeric parsers apply.
fn to_ascii_number_text(s: &PyString) -> Option<String> {
    let mut out = String::with_capacity(s.as_bytes().len());
    for cp in s.code_points() {
        if cp < 0x80 {
            out.push(cp as u8 as char);
        } else if UNICODE_SPACES.contains(&cp) || UNICODE_SPACES_TAIL.contains(&cp) {
            out.push(' ');
        } else if let Some(zero) = DECIMAL_ZEROS.iter().find(|&&z| (z..z + 10).contains(&cp)) {
            out.push((b'0' + (cp - zero) as u8) as char);
        } else {
            return None;
        }
    }
    let is_space = |c: char| matches!(c, ' ' | '\t' | '\n' | '\u{b}' | '\u{c}' | '\r');
    Some(out.trim_matches(is_space).to_string())
}

/// Removes underscores that stand between two digits; `None` if any other.
fn strip_digit_underscores(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'_' {
            let before = i > 0 && bytes[i - 1].is_ascii_digit();
            let after = bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
            if !(before && after) {
                return None;
            }
        } else {
            out.push(b as char);
        }
    }
    Some(out)
}

fn str_to_int(s: &PyString) -> Result<PyInt, CoerceError> {
    const INVALID: CoerceError = CoerceError::Value("invalid literal for int() with base 10");
    let text = to_ascii_number_text(s).ok_or(INVALID)?;
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, &text[..]),
    };
    if !body.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        return Err(INVALID);
    }
    let digits = strip_digit_underscores(body).ok_or(INVALID)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(INVALID);
    }
    if digits.len() > 4300 {
        return Err(CoerceError::Value(
            "exceeds the limit (4300 digits) for integer string conversion",
        ));
    }
    let mut big = BigInt::parse_bytes(digits.as_bytes(), 10).ok_or(INVALID)?;
    if negative {
        big = -big;
    }
    Ok(PyInt::from_big(big))
}

fn str_to_float(s: &PyString) -> Result<f64, CoerceError> {
    const INVALID: CoerceError = CoerceError::Value("could not convert string to float");
    let text = to_ascii_number_text(s).ok_or(INVALID)?;
    let text = strip_digit_underscores(&text).ok_or(INVALID)?;
    let body = text.strip_prefix(['+', '-']).unwrap_or(&text);
    let lower = body.to_ascii_lowercase();
    let word = matches!(lower.as_str(), "inf" | "infinity" | "nan");
    if !word && !is_decimal_literal(body) {
        return Err(INVALID);
    }
    text.parse::<f64>().map_err(|_| INVALID)
}

/// `(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?`
fn is_decimal_literal(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let count = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    let int_digits = count(&mut i);
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        frac_digits = count(&mut i);
    }
    if int_digits + frac_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if count(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Value {
        Value::Str(text.into())
    }

    /// Expected results taken from CPython 3.11's `int()` and `float()`.
    #[test]
    fn string_conversions_match_cpython() {
        let cases: &[(&str, Option<i64>, Option<f64>)] = &[
            ("\u{1c}12", None, None),
            ("\u{b}12\u{c}", Some(12), Some(12.0)),
            (" 12 ", Some(12), Some(12.0)),
            ("\u{a0}12\u{3000}", Some(12), Some(12.0)),
            ("1_000", Some(1000), Some(1000.0)),
            ("_1", None, None),
            ("1_", None, None),
            ("1__0", None, None),
            ("+5", Some(5), Some(5.0)),
            ("-0", Some(0), Some(-0.0)),
            ("007", Some(7), Some(7.0)),
            ("\u{663}\u{661}", Some(31), Some(31.0)),
            ("12.5", None, Some(12.5)),
            (" 1_0.5 ", None, Some(10.5)),
            ("1e5", None, Some(100000.0)),
            (".5", None, Some(0.5)),
            ("5.", None, Some(5.0)),
            ("1_e5", None, None),
            ("1e_5", None, None),
            ("0x10", None, None),
            ("1e1_0", None, Some(1e10)),
            ("", None, None),
            ("  ", None, None),
            ("\u{663}.\u{665}", None, Some(3.5)),
            ("\u{85}1\u{85}", Some(1), Some(1.0)),
            ("1\u{0}", None, None),
        ];
        for (text, int, float) in cases {
            assert_eq!(
                py_int(&s(text)).ok(),
                int.map(PyInt::Small),
                "int({text:?})"
            );
            let got = py_float(&s(text)).ok();
            assert_eq!(
                got.map(f64::to_bits),
                float.map(f64::to_bits),
                "float({text:?})"
            );
        }
        assert!(py_float(&s("inf")).unwrap().is_infinite());
        assert!(py_float(&s("-Infinity")).unwrap() < 0.0);
        assert!(py_float(&s("nAn")).unwrap().is_nan());
        assert!(py_float(&s("infx")).is_err());
    }

    #[test]
    fn numeric_conversions() {
        assert_eq!(py_int(&Value::Float(2.9)), Ok(PyInt::Small(2)));
        assert_eq!(py_int(&Value::Float(-0.5)), Ok(PyInt::Small(0)));
        assert_eq!(py_int(&Value::Bool(true)), Ok(PyInt::Small(1)));
        assert!(matches!(
            py_int(&Value::Float(f64::INFINITY)),
            Err(CoerceError::Overflow(_))
        ));
        assert!(matches!(
            py_int(&Value::Float(f64::NAN)),
            Err(CoerceError::Value(_))
        ));
        assert!(matches!(py_int(&Value::Null), Err(CoerceError::Type(_))));
        assert_eq!(
            py_int(&Value::Float(1e20)).unwrap().to_string(),
            "100000000000000000000"
        );
        let huge = PyInt::from_big("9".repeat(400).parse().unwrap());
        assert!(matches!(
            py_float(&Value::Int(huge)),
            Err(CoerceError::Overflow(_))
        ));
        // 2**53 + 1 rounds to even.
        let odd = PyInt::from_big("9007199254740993".parse().unwrap());
        assert_eq!(int_to_float(&odd), Ok(9007199254740992.0));
    }

    #[test]
    fn truthiness() {
        assert!(!truthy(&Value::Float(-0.0)));
        assert!(truthy(&Value::Float(f64::NAN)));
        assert!(!truthy(&s("")));
        assert!(!truthy(&Value::Array(vec![])));
    }

    /// Expected results taken from CPython 3.11's `str()`, `repr()` and
    /// `str.strip()`.
    #[test]
    fn str_and_repr_match_cpython() {
        let parsed = |text: &str| {
            crate::engine::json::parse(text, crate::engine::json::Mode::Journal)
                .unwrap()
                .value
        };
        assert_eq!(py_str(&s("it's")), "it's");
        assert_eq!(
            py_str(&parsed(r#"["it's", "a\"b", "a'b\"c"]"#)),
            r#"["it's", 'a"b', 'a\'b"c']"#
        );
        assert_eq!(
            py_str(&parsed(r#"{"k": null, "t": [true, 1.0, "\n"]}"#)),
            r"{'k': None, 't': [True, 1.0, '\n']}"
        );
        assert_eq!(py_strip("\u{1c} a b\u{3000}\u{1f}"), "a b");
    }

    #[test]
    fn id_rule_accepts_lowercase_hex_and_64_digit_integers() {
        let hex = "ab".repeat(32);
        assert!(py_str_is_work_id(&s(&hex)).is_some());
        assert!(py_str_is_work_id(&s(&hex.to_uppercase())).is_none());
        let digits = PyInt::from_big("1".repeat(64).parse().unwrap());
        assert!(py_str_is_work_id(&Value::Int(digits)).is_some());
        assert!(py_str_is_work_id(&s(&"a".repeat(63))).is_none());
    }
}
