//! The first line of a file's first bytes, read once for the formats that
//! sniff it: blank, parsed with plain `json.load`'s rules, or text that
//! does not parse (torn, or longer than the bytes looked at). Each format
//! decides from it whether the file is one of its own
//! (`engine::journal::owns_start`, `engine::snapshot::owns_start`).

use super::parse::{Mode, parse};
use super::strip_invalid_utf8;
use super::value::Value;

/// The first line of a file with anything but ASCII white space on it.
#[derive(Clone, Debug, PartialEq)]
pub enum FirstLine {
    /// There is none: the bytes are empty or only white space.
    Blank,
    /// It parses, with plain `json.load`'s rules, to this value.
    Parsed(Value),
    /// It does not parse: its text, invalid UTF-8 deleted.
    Unparsed(String),
}

impl FirstLine {
    /// Whether the line parsed to an object with any of these members.
    pub fn has_member(&self, names: &[&str]) -> bool {
        match self {
            FirstLine::Parsed(Value::Object(o)) => names.iter().any(|n| o.get(n).is_some()),
            _ => false,
        }
    }

    /// Whether the line did not parse and its text holds any of these
    /// names as a JSON string (`"name"`).
    pub fn mentions(&self, names: &[&str]) -> bool {
        match self {
            FirstLine::Unparsed(text) => names.iter().any(|n| text.contains(&format!("\"{n}\""))),
            _ => false,
        }
    }
}

/// The first line of `prefix` (lines end at `\n` or `\r`) that holds more
/// than ASCII white space, parsed.
pub fn first_line(prefix: &[u8]) -> FirstLine {
    let Some(first) = prefix
        .split(|&b| b == b'\n' || b == b'\r')
        .find(|line| line.iter().any(|b| !b.is_ascii_whitespace()))
    else {
        return FirstLine::Blank;
    };
    let (text, _) = strip_invalid_utf8(first);
    let text = std::str::from_utf8(&text).unwrap_or_default();
    match parse(text, Mode::Snapshot) {
        Ok(parsed) => FirstLine::Parsed(parsed.value),
        Err(_) => FirstLine::Unparsed(text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_with_more_than_white_space_is_read() {
        assert_eq!(first_line(b""), FirstLine::Blank);
        assert_eq!(first_line(b" \t\r\n\x0c\n"), FirstLine::Blank);
        assert_eq!(
            first_line(b"\n\r  7 \n{"),
            FirstLine::Parsed(Value::Int(7.into()))
        );
        assert_eq!(
            first_line(b"\n{\"op\":\xff\"le"),
            FirstLine::Unparsed("{\"op\":\"le".into())
        );
        // NaN parses as a snapshot's json.load parses it.
        assert!(matches!(first_line(b"[NaN]\n"), FirstLine::Parsed(_)));
        let object = first_line(b"{\"a\":1}");
        assert!(object.has_member(&["b", "a"]) && !object.mentions(&["a"]));
        let torn = first_line(b"{\"a\":1");
        assert!(torn.mentions(&["b", "a"]) && !torn.has_member(&["a"]));
        assert!(!torn.mentions(&["1"]), "only a name in quotes counts");
    }
}
