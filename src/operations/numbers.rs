//! Numbers as an operator reads them: counts with thousands separators and
//! the right noun, durations in their two largest units. The findings, the
//! messages and the face all count the same way.

/// A count with thousands separators (`1,000,000`).
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` (with thousands separators) and the noun, singular or plural.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// A duration in the two largest units: `3d 4h`, `12m 5s`, `0s`.
pub fn duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "∞".to_string();
    }
    let s = seconds.abs().floor() as u64;
    let units = [
        (86400 * 365, "y"),
        (86400, "d"),
        (3600, "h"),
        (60, "m"),
        (1, "s"),
    ];
    let mut parts = Vec::new();
    let mut rest = s;
    for (size, name) in units {
        if rest >= size && parts.len() < 2 {
            parts.push(format!("{}{name}", rest / size));
            rest %= size;
        } else if !parts.is_empty() {
            break;
        }
    }
    if parts.is_empty() {
        "0s".to_string()
    } else {
        parts.join(" ")
    }
}

/// `n` and the noun, singular for exactly 1, without separators: how the
/// findings about one line or one object count what is wrong inside it
/// (invalid bytes, repeated member names).
pub fn plural_unseparated(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
