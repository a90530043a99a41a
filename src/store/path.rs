//! Paths as this tool resolves and shows them: the directory a file is in,
//! and a path quoted so that a remedy can be pasted into a shell.

use std::path::Path;

/// The directory `path` is in: its parent, or `.` for a bare file name.
pub fn parent_or_dot(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
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
