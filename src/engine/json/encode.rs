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
    let (digits, exp) = ryu_digits(f);
    let n = digits.len();
    if !tie_possible(f, n) {
        return (digits, exp);
    }
    let split = |sci: &str| -> (String, i32) {
        let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
        (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
    };
    // A tie needs the exact value to be the n-digit midpoint: its digit
    // n+1 is 5 and nothing follows (a double has at most 767 significant
    // decimal digits).
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

/// The shortest round-trip digits (no trailing zeros) and the decimal
/// exponent of the first one, from ryu.
fn ryu_digits(f: f64) -> (String, i32) {
    let mut buffer = ryu::Buffer::new();
    let text = buffer.format_finite(f);
    let (mantissa, exp) = match text.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: String = int_part.chars().chain(frac_part.chars()).collect();
    let mut point = int_part.len() as i32;
    // Leading zeros (0.00123) move the exponent; trailing zeros go.
    let lead = digits.len() - digits.trim_start_matches('0').len();
    digits.drain(..lead);
    point -= lead as i32;
    let trimmed = digits.trim_end_matches('0').len();
    digits.truncate(trimmed.max(1));
    (digits, exp + point - 1)
}

/// Whether the exact value of `f` can have only `n + 1` significant
/// digits (a necessary condition for a tie between two `n`-digit
/// candidates). `f = m * 2^e` with `m` odd has exactly as many significant
/// digits as `m * 5^-e` when `e < 0`; most doubles with a fraction have far
/// more, so the exact check is rarely needed.
fn tie_possible(f: f64, n: usize) -> bool {
    let bits = f.to_bits();
    let exponent = ((bits >> 52) & 0x7FF) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mut m, mut e) = if exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), exponent - 1075)
    };
    if m == 0 {
        return false;
    }
    let zeros = m.trailing_zeros();
    m >>= zeros;
    e += zeros as i32;
    if e >= 0 {
        // An integer: shortest digits are exact below 2^53.
        return f >= 9007199254740992.0;
    }
    // digits(m * 5^k) <= log10(m) + k*log10(5) + 1; bit length bounds
    // log10(m) from above, which only errs toward the exact check.
    let log10_m = f64::from(64 - m.leading_zeros()) * std::f64::consts::LOG10_2;
    let significant = log10_m + f64::from(-e) * (1.0 - std::f64::consts::LOG10_2) + 1.0;
    significant <= (n + 3) as f64
}

/// Whether `text` is Python's `repr` of `f`; without allocating in the
/// common case (ryu's fixed notation equals Python's for magnitudes in
/// [1e-4, 1e16) whenever no tie between two shortest candidates is
/// possible).
pub fn is_float_repr(text: &str, f: f64) -> bool {
    if !f.is_finite() {
        return false;
    }
    if (1e-4..1e16).contains(&f.abs()) && !tie_possible(f.abs(), 17) {
        let mut buffer = ryu::Buffer::new();
        return buffer.format_finite(f) == text;
    }
    float_repr(f) == text
}

/// The value of `text` when `text` is Python's `repr` of it (finite), else
/// `None`. Most times and payload floats are fixed-notation decimals
/// ([`fixed_decimal`]): those of at most 15 significant digits are checked,
/// and usually valued, by their digits alone; longer ones, such as times of
/// about seven decimals, are parsed and then checked by exact integer
/// arithmetic ([`ShortFixed::is_repr_of`]) instead of writing the repr out
/// and comparing. Anything else is written out and compared.
pub fn float_repr_value(text: &[u8]) -> Option<f64> {
    if let Some(fixed) = fixed_decimal(text) {
        if fixed.significant <= 15 {
            return fixed
                .value()
                .or_else(|| std::str::from_utf8(text).ok()?.parse().ok());
        }
        let value: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
        if let Some(canonical) = fixed.is_repr_of(value) {
            return canonical.then_some(value);
        }
    }
    let text = std::str::from_utf8(text).ok()?;
    let value: f64 = text.parse().ok()?;
    (value.is_finite() && is_float_repr(text, value)).then_some(value)
}

/// A decimal in the form [`fixed_decimal`] accepts, as its digits read
/// as one integer and the number of them after the point.
struct ShortFixed {
    negative: bool,
    /// All the digits as an integer (`None` beyond `u64`).
    digits: Option<u64>,
    /// Digits after the point.
    scale: usize,
    /// Significant digits (at least 1).
    significant: usize,
    /// Whether the digits after the point are a lone `0`.
    point_zero: bool,
}

impl ShortFixed {
    /// The value, when one correctly rounded division gives it: the digits
    /// and the power of ten are both exact doubles (at most 2^53 and at
    /// most 10^22), as in Clinger's fast path.
    fn value(&self) -> Option<f64> {
        const POW10: [f64; 23] = [
            1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
            1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
        ];
        let digits = self.digits.filter(|&d| d <= 1 << 53)?;
        let value = digits as f64 / POW10.get(self.scale)?;
        Some(if self.negative { -value } else { value })
    }

    /// Whether this decimal of 16 to 19 significant digits (a time of
    /// about seven decimals has 17) is Python's `repr` of `value`, its
    /// value, decided with exact integer arithmetic instead of writing the
    /// repr out; `None` where the arithmetic does not apply (a power of two,
    /// an exact tie, a magnitude outside 2^-60..2^53, a lone `.0`), which
    /// the caller checks the slow way.
    ///
    /// `repr` writes the shortest decimal that reads back as `value`, and
    /// of those the nearest. With `value = m·2^-k`, the decimal `D·10^-s`
    /// written here is that repr exactly when (1) `D` is the integer
    /// nearest to `m·10^s/2^k` (so no other decimal of this scale is
    /// nearer), and (2) neither neighbour of `D·10^-s` at scale `s - 1`
    /// reads back as `value`: if any shorter decimal did, one of those two
    /// would, as the interval that reads back as `value` is convex. That
    /// interval is `value ± 2^-k/2`, its ends included when `m` is even
    /// (round-half-even). A neighbour at scale `s - 1` that crosses a power
    /// of ten means the power of ten itself reads back, which is shorter
    /// still, so the rule holds at decade edges too.
    fn is_repr_of(&self, value: f64) -> Option<bool> {
        let digits = u128::from(self.digits?);
        if self.point_zero || self.scale == 0 || self.scale > 19 {
            return None;
        }
        let bits = value.abs().to_bits();
        let (exponent, fraction) = ((bits >> 52) & 0x7FF, bits & ((1 << 52) - 1));
        if exponent == 0 || exponent == 0x7FF || fraction == 0 {
            // Subnormal, not finite, or a power of two (whose interval is
            // narrower below than above).
            return None;
        }
        let m = u128::from(fraction | 1 << 52);
        let e = exponent as i32 - 1075;
        if !(-60..0).contains(&e) {
            return None;
        }
        let k = e.unsigned_abs();
        let p10 = 10u128.pow(self.scale as u32);
        // m < 2^53 and 10^s < 2^64: the product fits.
        let p = m * p10;
        let (half, rem) = (1u128 << (k - 1), p & ((1u128 << k) - 1));
        if rem == half {
            return None;
        }
        if (p >> k) + u128::from(rem > half) != digits {
            return Some(false);
        }
        // value ± half an ulp, times 10^s·2^(k+1); a neighbour T at scale
        // s - 1 is 10·T·10^-s, times the same: 10·T·2^(k+1) (< 2^125).
        let (low, high) = ((2 * m - 1) * p10, (2 * m + 1) * p10);
        let reads_back = |t: u128| {
            let at = (10 * t) << (k + 1);
            if m % 2 == 0 {
                low <= at && at <= high
            } else {
                low < at && at < high
            }
        };
        let below = digits / 10;
        Some(!(reads_back(below) || reads_back(below + 1)))
    }
}

/// [`fixed_decimal`]'s decimals of at most 15 significant digits: those
/// `repr` writes as themselves, as the unit tests check.
#[cfg(test)]
fn short_fixed_repr(text: &[u8]) -> Option<ShortFixed> {
    fixed_decimal(text).filter(|f| f.significant <= 15)
}

/// A decimal in the layout `repr` uses for fixed notation: `[-]I.F`, no
/// leading zero in `I`, no trailing zero in `F` unless `F` is a lone `0`
/// after a non-zero `I`, 1 to 19 significant digits, and a magnitude in
/// [1e-4, 1e16) (where `repr` uses fixed notation); `None` for anything
/// else. Of at most 15 significant digits (`DBL_DIG`), it is the only such
/// decimal that rounds to its double, so it is the shortest and `repr`
/// writes exactly its digits; a longer one is `repr` only when
/// [`ShortFixed::is_repr_of`] says so.
fn fixed_decimal(text: &[u8]) -> Option<ShortFixed> {
    let negative = text.first() == Some(&b'-');
    let b = if negative { &text[1..] } else { text };
    // One pass: every byte a digit but one point, and the digits as an
    // integer (`None` once they overflow).
    let mut dot = None;
    let mut digits = Some(0u64);
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                digits = digits
                    .and_then(|d| d.checked_mul(10))
                    .and_then(|d| d.checked_add(u64::from(c - b'0')));
            }
            b'.' if dot.is_none() => dot = Some(i),
            _ => return None,
        }
    }
    let dot = dot?;
    let (int, frac) = (&b[..dot], &b[dot + 1..]);
    if int.is_empty() || frac.is_empty() || (int.len() > 1 && int[0] == b'0') {
        return None;
    }
    let significant = if int != b"0" {
        if int.len() > 16 {
            return None;
        }
        if frac == b"0" {
            int.len() - int.iter().rev().take_while(|&&c| c == b'0').count()
        } else if frac.ends_with(b"0") {
            return None;
        } else {
            int.len() + frac.len()
        }
    } else {
        let zeros = frac.iter().take_while(|&&c| c == b'0').count();
        if zeros == frac.len() || zeros > 3 || frac.ends_with(b"0") {
            return None;
        }
        frac.len() - zeros
    };
    (1..=19).contains(&significant).then_some(ShortFixed {
        negative,
        digits,
        scale: frac.len(),
        significant,
        point_zero: frac == b"0",
    })
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
    use crate::engine::json::{Mode, parse};

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

    /// The digits as the slow, obviously right way computes them: std's
    /// shortest digits, then the exact tie rule on every value.
    fn reference_digits(f: f64) -> (String, i32) {
        let split = |sci: &str| -> (String, i32) {
            let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
            (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
        };
        let (digits, exp) = split(&format!("{f:e}"));
        let n = digits.len();
        let (exact, exact_exp) = split(&format!("{f:.800e}"));
        let exact = exact.trim_end_matches('0');
        if exact.len() == n + 1 && exact.ends_with('5') && exact_exp == exp {
            let low = &exact[..n];
            if (low.as_bytes()[n - 1] - b'0').is_multiple_of(2) {
                let candidate = format!("{}.{}e{exp}", &low[..1], &low[1..]);
                if candidate.parse::<f64>() == Ok(f) {
                    return (low.to_string(), exp);
                }
            }
        }
        (digits, exp)
    }

    #[test]
    fn fast_digits_agree_with_the_reference() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut checked = 0;
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Random bit patterns, and short decimals (where ties live).
            let f = if i % 2 == 0 {
                f64::from_bits(x)
            } else {
                (x % 1_000_000_000) as f64 / [1.0, 4.0, 8.0, 16.0, 1024.0, 3.0][(x % 6) as usize]
            };
            if !f.is_finite() || f == 0.0 {
                continue;
            }
            assert_eq!(shortest_digits(f.abs()), reference_digits(f.abs()), "{f:e}");
            checked += 1;
        }
        assert!(checked > 150_000);
    }

    #[test]
    fn repr_check_agrees_with_repr() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for i in 0..100_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = match i % 3 {
                0 => f64::from_bits(x),
                1 => 1_754_550_000.0 + (x % 100_000_000) as f64 / 1e4,
                _ => (x % 1_000_000) as f64 / 64.0,
            };
            if !f.is_finite() {
                continue;
            }
            let repr = float_repr(f);
            assert!(is_float_repr(&repr, f), "{repr}");
            assert!(
                !is_float_repr(&format!("{repr}0"), f) || repr.contains('e'),
                "{repr}0"
            );
        }
    }

    /// The exact check of 16- to 19-digit decimals agrees with writing the
    /// repr out: on the reprs of times with about seven decimals and of
    /// doubles of every magnitude in fixed notation, and on each of them
    /// with the last digit moved by one, dropped, or one digit added (the
    /// strings a writer other than Python's `repr` makes).
    #[test]
    fn long_fixed_reprs_agree_with_the_repr() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut exact_long, mut checked, mut decided) = (0, 0, 0);
        let mut check = |text: &str| {
            let Ok(value) = text.parse::<f64>() else {
                return;
            };
            let want = (value.is_finite() && float_repr(value) == text).then_some(value.to_bits());
            let got = float_repr_value(text.as_bytes()).map(f64::to_bits);
            assert_eq!(got, want, "{text}: repr is {}", float_repr(value));
            checked += 1;
            decided += usize::from(
                fixed_decimal(text.as_bytes())
                    .filter(|f| f.significant > 15)
                    .and_then(|f| f.is_repr_of(value))
                    .is_some(),
            );
        };
        for round in 0..400_000u64 {
            let value = match round % 4 {
                // A time.time() of 2025-2027, microseconds and below.
                0 | 1 => 1.7e9 + (next() % 100_000_000_000_000) as f64 / 1e6,
                // Any double in fixed notation's range (and around it).
                2 => f64::from_bits(
                    next() % (0x4350_0000_0000_0000 - 0x3f00_0000_0000_0000)
                        + 0x3f00_0000_0000_0000,
                ),
                // Near powers of ten and of two, where intervals are odd.
                _ => {
                    let base = if next() % 2 == 0 {
                        10f64.powi((next() % 20) as i32 - 4)
                    } else {
                        2f64.powi((next() % 100) as i32 - 40)
                    };
                    f64::from_bits(base.to_bits().wrapping_add(next() % 5).wrapping_sub(2))
                }
            };
            let repr = float_repr(value);
            if repr.contains('e') {
                continue;
            }
            let digits = repr.trim_start_matches('-').replace('.', "");
            exact_long += usize::from(digits.trim_start_matches('0').len() >= 16);
            check(&repr);
            let last = repr.as_bytes()[repr.len() - 1];
            for other in [last.wrapping_sub(1), last + 1] {
                if other.is_ascii_digit() {
                    let mut t = repr.clone().into_bytes();
                    *t.last_mut().unwrap() = other;
                    check(std::str::from_utf8(&t).unwrap());
                }
            }
            if repr.len() > 3 && !repr.ends_with(".0") {
                check(&repr[..repr.len() - 1]);
            }
            check(&format!("{repr}{}", 1 + next() % 9));
        }
        assert!(
            exact_long > 150_000,
            "most cases are long reprs: {exact_long}"
        );
        assert!(checked > 1_200_000, "{checked}");
        // The exact arithmetic, not the fallback, decides most of them.
        assert!(decided > checked / 2, "{decided} of {checked}");
    }

    #[test]
    fn short_fixed_reprs_are_reprs() {
        // Decimal strings of every shape near the rule's edges: digits
        // before and after the point, leading and trailing zeros, up to 17
        // significant digits, with and without a sign. Whatever the short
        // check accepts must be the repr of its value; whatever the full
        // check accepts in fixed notation with at most 15 digits, the short
        // one must accept too.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut accepted = 0;
        for _ in 0..300_000 {
            let digits = |len: u64, next: &mut dyn FnMut(u64) -> u64| -> String {
                (0..len)
                    .map(|_| match next(4) {
                        0 => '0',
                        1 => '9',
                        _ => char::from(b'0' + next(10) as u8),
                    })
                    .collect()
            };
            let int_len = next(19);
            let int = if int_len == 0 {
                "0".to_string()
            } else {
                digits(int_len, &mut next)
            };
            let frac = digits(1 + next(18), &mut next);
            let sign = if next(8) == 0 { "-" } else { "" };
            let text = format!("{sign}{int}.{frac}");
            let value: f64 = text.parse().unwrap();
            let exact = value.is_finite() && float_repr(value) == text;
            let short = short_fixed_repr(text.as_bytes()).is_some();
            assert!(
                !short || exact,
                "{text} accepted but repr is {}",
                float_repr(value)
            );
            let significant = text.replace(['-', '.'], "");
            let significant = significant.trim_matches('0').len();
            assert_eq!(
                short,
                exact && (1..=15).contains(&significant),
                "{text}: a fixed-notation repr of 1 to 15 digits is recognised, nothing else"
            );
            accepted += usize::from(short);
            match float_repr_value(text.as_bytes()) {
                Some(v) => {
                    assert!(exact, "{text}");
                    assert_eq!(v.to_bits(), value.to_bits(), "{text}");
                }
                None => assert!(!exact, "{text}"),
            }
        }
        assert!(
            accepted > 10_000,
            "the rule accepts common forms: {accepted}"
        );
        for text in [
            "1754550000.0137",
            "0.0001",
            "1000.0",
            "0.5",
            "9999999999999990.0",
        ] {
            assert!(short_fixed_repr(text.as_bytes()).is_some(), "{text}");
        }
        for text in [
            "0.00001",
            "1.50",
            "01.5",
            "0.0",
            "1e-05",
            "10000000000000000.0",
        ] {
            assert!(short_fixed_repr(text.as_bytes()).is_none(), "{text}");
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
