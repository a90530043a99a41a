//! The canonical encoder: the bytes of Python's
//! `json.dumps(v, sort_keys=True, separators=(",", ":"))` (`ensure_ascii`
//! on), which upstream hashes into work ids and writes into every file.

use std::fmt;

use super::value::{PyString, Value};

/// What to do with NaN and infinities, which only `allow_nan=True` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonFinite {
    /// `allow_nan=False` (journals, work ids): refuse.
    Refuse,
    /// `allow_nan=True` (the snapshot): write `NaN`, `Infinity`, `-Infinity`.
    Python,
    /// Write them as the JSON strings `"NaN"`, `"Infinity"`, `"-Infinity"`,
    /// for reports that must stay valid JSON.
    AsStrings,
}

/// The value holds NaN or an infinity and the encoding refuses those.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NonFiniteError;

impl fmt::Display for NonFiniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "out of range float values are not JSON compliant")
    }
}

impl std::error::Error for NonFiniteError {}

/// Appends the canonical encoding of `value` to `out`.
pub fn encode_canonical(
    value: &Value,
    out: &mut Vec<u8>,
    non_finite: NonFinite,
) -> Result<(), NonFiniteError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Value::Float(f) => encode_float(*f, out, non_finite)?,
        Value::Str(s) => encode_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                encode_canonical(item, out, non_finite)?;
            }
            out.push(b']');
        }
        Value::Object(obj) => {
            let mut members: Vec<&(PyString, Value)> = obj.members().iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            out.push(b'{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                encode_string(key, out);
                out.push(b':');
                encode_canonical(item, out, non_finite)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// The canonical encoding as a new buffer.
pub fn to_canonical(value: &Value, non_finite: NonFinite) -> Result<Vec<u8>, NonFiniteError> {
    let mut out = Vec::new();
    encode_canonical(value, &mut out, non_finite)?;
    Ok(out)
}

fn encode_float(f: f64, out: &mut Vec<u8>, non_finite: NonFinite) -> Result<(), NonFiniteError> {
    if f.is_finite() {
        out.extend_from_slice(float_repr(f).as_bytes());
        return Ok(());
    }
    let token: &[u8] = if f.is_nan() {
        b"NaN"
    } else if f > 0.0 {
        b"Infinity"
    } else {
        b"-Infinity"
    };
    match non_finite {
        NonFinite::Refuse => return Err(NonFiniteError),
        NonFinite::Python => out.extend_from_slice(token),
        NonFinite::AsStrings => {
            out.push(b'"');
            out.extend_from_slice(token);
            out.push(b'"');
        }
    }
    Ok(())
}

/// Python's `repr(float)` for a finite value: the shortest digits that
/// round-trip, positional when the decimal exponent is in [-4, 16),
/// scientific (`1e+16`, `1e-05`) otherwise, and always a `.0` or an exponent.
pub fn float_repr(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    let sign = if f < 0.0 { "-" } else { "" };
    let (digits, exp) = shortest_digits(f.abs());
    let decpt = exp + 1;
    let mut s = String::from(sign);
    if decpt > -4 && decpt <= 16 {
        if decpt <= 0 {
            s.push_str("0.");
            s.extend(std::iter::repeat_n('0', (-decpt) as usize));
            s.push_str(&digits);
        } else if decpt as usize >= digits.len() {
            s.push_str(&digits);
            s.extend(std::iter::repeat_n('0', decpt as usize - digits.len()));
            s.push_str(".0");
        } else {
            s.push_str(&digits[..decpt as usize]);
            s.push('.');
            s.push_str(&digits[decpt as usize..]);
        }
    } else {
        s.push_str(&digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        s.push('e');
        s.push(if e < 0 { '-' } else { '+' });
        s.push_str(&format!("{:02}", e.abs()));
    }
    s
}

/// The shortest decimal digits that round-trip to `f` (positive, finite,
/// non-zero) and the decimal exponent of the first digit, chosen as
/// CPython's `repr` chooses them: the candidate closest to the exact value,
/// and on an exact tie the one with an even last digit. Rust's `{:e}`
/// gives the same digits except on ties, where it rounds half up.
fn shortest_digits(f: f64) -> (String, i32) {
    let split = |sci: &str| -> (String, i32) {
        let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
        (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
    };
    let (digits, exp) = split(&format!("{f:e}"));
    let n = digits.len();
    // A tie needs the exact value to be the n-digit midpoint: its digit
    // n+1 is 5 and nothing follows. Check cheaply, then exactly (a double
    // has at most 767 significant decimal digits).
    let (rounded, _) = split(&format!("{f:.n$e}"));
    if !rounded.ends_with('5') {
        return (digits, exp);
    }
    let (exact, exact_exp) = split(&format!("{f:.800e}"));
    let exact = exact.trim_end_matches('0');
    if exact.len() != n + 1 || !exact.ends_with('5') || exact_exp != exp {
        return (digits, exp);
    }
    let low = &exact[..n];
    let last = low.as_bytes()[n - 1] - b'0';
    if last.is_multiple_of(2) {
        // Python keeps the even lower neighbour if it round-trips.
        let candidate = format!("{}.{}e{exp}", &low[..1], &low[1..]);
        if candidate.parse::<f64>() == Ok(f) {
            return (low.to_string(), exp);
        }
    }
    (digits, exp)
}

/// Python's `repr(float)` for any value, with JSON's spellings of the
/// non-finite ones (`NaN`, `Infinity`, `-Infinity`), for messages.
pub fn float_repr_any(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        float_repr(f)
    }
}

/// Appends a string with `ensure_ascii` escaping: short escapes for `"`,
/// `\`, `\n`, `\r`, `\t`, `\b`, `\f`; `\u00XX` for other controls; `\uXXXX`
/// (lowercase hex) for DEL and everything beyond ASCII, astral characters as
/// surrogate pairs and lone surrogates as themselves. `/` is not escaped.
pub fn encode_string(s: &PyString, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let plain = |b: u8| (0x20..0x7F).contains(&b) && b != b'"' && b != b'\\';
    if bytes.iter().all(|&b| plain(b)) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    for cp in s.code_points() {
        match cp {
            0x22 => out.extend_from_slice(b"\\\""),
            0x5C => out.extend_from_slice(b"\\\\"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0D => out.extend_from_slice(b"\\r"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            0x20..=0x7E => out.push(cp as u8),
            0x10000.. => {
                let v = cp - 0x10000;
                push_u_escape(out, 0xD800 | (v >> 10));
                push_u_escape(out, 0xDC00 | (v & 0x3FF));
            }
            _ => push_u_escape(out, cp),
        }
    }
    out.push(b'"');
}

fn push_u_escape(out: &mut Vec<u8>, unit: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((unit >> shift) & 0xF) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{Mode, parse};

    fn canon(text: &str) -> String {
        let v = parse(text, Mode::Snapshot).unwrap().value;
        String::from_utf8(to_canonical(&v, NonFinite::Python).unwrap()).unwrap()
    }

    #[test]
    // The tie cases are exact binary values, written out in full on purpose.
    #[allow(clippy::excessive_precision)]
    fn float_repr_matches_python() {
        let cases = [
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1e-5, "1e-05"),
            (1e-4, "0.0001"),
            (1754550000.0, "1754550000.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (123456.789, "123456.789"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (1754550241.8747768, "1754550241.8747768"),
            (-1.5e-7, "-1.5e-07"),
            (9999999999999998.0, "9999999999999998.0"),
            (0.001, "0.001"),
            // Ties between two shortest candidates go to the even digit.
            (562949953421312.25, "562949953421312.2"),
            (8796093022212.3125, "8796093022212.312"),
            (562949953421312.75, "562949953421312.8"),
            (0.5, "0.5"),
            (2.5, "2.5"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f), want, "{f:e}");
        }
    }

    #[test]
    fn sorts_keys_by_code_point_and_escapes_ascii() {
        assert_eq!(
            canon(r#"{"b":1,"a":[true,null],"\u00e9":"\u007f/\n"}"#),
            r#"{"a":[true,null],"b":1,"\u00e9":"\u007f/\n"}"#
        );
        // U+FFFF sorts before an astral character, which is written as a pair.
        assert_eq!(
            canon(r#"{"😀":1,"\uffff":2}"#),
            r#"{"\uffff":2,"\ud83d\ude00":1}"#
        );
        assert_eq!(canon(r#""\ud800\u0001\b\f""#), r#""\ud800\u0001\b\f""#);
        assert_eq!(canon(r#""\u001f\u0020""#), r#""\u001f ""#);
    }

    #[test]
    fn numbers_keep_their_python_types() {
        assert_eq!(
            canon("[1.0,1,1E2,-0.0,-0,123456789012345678901234567890]"),
            "[1.0,1,100.0,-0.0,0,123456789012345678901234567890]"
        );
        assert_eq!(
            canon("[NaN,Infinity,-Infinity]"),
            "[NaN,Infinity,-Infinity]"
        );
        let v = parse("[1e400]", Mode::Journal).unwrap().value;
        assert_eq!(to_canonical(&v, NonFinite::Refuse), Err(NonFiniteError));
        assert_eq!(
            to_canonical(&v, NonFinite::AsStrings).unwrap(),
            b"[\"Infinity\"]"
        );
    }
}
