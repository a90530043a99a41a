//! Paths as this tool resolves and shows them: the directory a file is in,
//! a path quoted so that a remedy can be pasted into a shell, and the file
//! a backup's or an export's name names.

use std::path::{Path, PathBuf};

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

/// The file a companion of it is named after: `<file><marker><UTC><ext>`
/// (`<UTC>` a run's stamp such as `20261130T073645Z`, or `…Z-<n>` for a
/// later one of the same second), as backups (`.bak.`, no extension) and
/// discard exports (`.discarded.`, `.jsonl`) are named; the file is in the
/// companion's directory. `None` for any other name.
pub fn companion_of(companion: &Path, marker: &str, ext: &str) -> Option<PathBuf> {
    let name = companion.file_name()?.to_str()?;
    let rest = name.strip_suffix(ext)?;
    let at = rest.rfind(marker)?;
    let (file, stamp) = (&rest[..at], &rest[at + marker.len()..]);
    let (stamp, attempt) = stamp.split_once('-').unwrap_or((stamp, "1"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let stamped = stamp.len() == 16
        && digits(&stamp[..8])
        && &stamp[8..9] == "T"
        && digits(&stamp[9..15])
        && &stamp[15..] == "Z";
    (stamped && digits(attempt) && !file.is_empty()).then(|| companion.with_file_name(file))
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
