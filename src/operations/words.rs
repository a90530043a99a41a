//! How operations put things into words for an operator: I/O errors
//! without the raw `(os error N)`, counts with thousands separators and
//! the right noun, durations in two units, paths quoted for a shell. The
//! face uses the same words.

use std::io;

/// An I/O error as words, without the raw `(os error N)` the standard
/// library appends: "no space left on device".
pub fn in_words(err: &io::Error) -> String {
    let text = err.to_string();
    let text = match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => &text[..at],
        _ => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text.to_string(),
    }
}

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

/// Quotes `text` for a POSIX shell when it holds anything but plain path
/// characters, so a remedy can be pasted as it is printed.
pub fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./,:@%+=-".contains(&b));
    // A path that starts with a dash would read as an option.
    let text = if text.starts_with('-') {
        format!("./{text}")
    } else {
        text.to_string()
    };
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remedies_quote_what_a_shell_would_split_or_read_as_an_option() {
        assert_eq!(shell_quote("/out/run1"), "/out/run1");
        assert_eq!(shell_quote("run 1"), "'run 1'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("-x"), "./-x");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }
}
