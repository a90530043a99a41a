//! The formats a state directory holds, as the file tier tells them apart:
//! each format says which file names and first bytes are its own
//! (`engine::journal`'s and `engine::snapshot`'s `sniff`), and this is the
//! one place that asks them, in order. The digest ledger (`engine::ledger`)
//! is a directory of its own, `LEDGER_DIR`, read through `store::ledger`.

use std::path::Path;

use serde::Serialize;

use crate::engine::json;
use crate::engine::{journal, snapshot};

pub use crate::engine::journal::{DEFERRED, WORK_LEASES};
pub use crate::engine::snapshot::STATE_TASKS;

/// The digest ledger's directory in a state directory; its files' names
/// are `engine::ledger::sniff`'s. It is not one of [`STATE_FILES`]: a
/// directory holding only a ledger is not a state directory, and the
/// journal commands never take it for a journal or a snapshot.
pub use crate::engine::ledger::DIR as LEDGER_DIR;

/// Upstream's state files, in the order messages list them (the main
/// journal first); a new format's state files go here too.
pub const STATE_FILES: [&str; 3] = [WORK_LEASES, DEFERRED, STATE_TASKS];

/// What a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A JSONL lease journal.
    Journal,
    /// A `.state_tasks.json` snapshot.
    Snapshot,
}

impl Kind {
    /// Every kind, in the order a state directory's files are handled.
    pub const ALL: [Kind; 2] = [Kind::Journal, Kind::Snapshot];

    /// `journal` or `snapshot`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Journal => "journal",
            Kind::Snapshot => "snapshot",
        }
    }

    /// The files of this kind a state directory holds, in the order the
    /// master's resume reads them (the deferred journal first).
    pub fn state_files(self) -> &'static [&'static str] {
        match self {
            Kind::Journal => &journal::NAMES,
            Kind::Snapshot => &snapshot::NAMES,
        }
    }
}

/// Every state file a state directory may hold, with its kind, in the
/// order the master's resume reads them.
pub fn state_files() -> impl Iterator<Item = (&'static str, Kind)> {
    Kind::ALL
        .into_iter()
        .flat_map(|kind| kind.state_files().iter().map(move |name| (*name, kind)))
}

/// The state file a file name belongs to: `<state file>.<anything>`.
pub fn state_file_of(name: &str) -> Option<&'static str> {
    state_files().map(|(file, _)| file).find(|file| {
        name.strip_prefix(file)
            .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The kind a file name implies, if it implies one: a journal's name
/// first, then a snapshot's.
pub fn kind_from_name(path: &Path) -> Option<Kind> {
    let name = path.file_name()?.to_str()?;
    if journal::owns_name(name) {
        Some(Kind::Journal)
    } else if snapshot::owns_name(name) {
        Some(Kind::Snapshot)
    } else {
        None
    }
}

/// The kind the first bytes of a file imply, each format asked of its
/// first line in turn, the journal first. An empty file implies nothing:
/// only its name (or `--kind`) says what it is, so that an empty file of
/// an unknown name is refused as a file of unknown bytes is.
pub fn kind_from_content(prefix: &[u8]) -> Option<Kind> {
    if prefix.is_empty() {
        return None;
    }
    let first = json::first_line(prefix);
    if journal::owns_start(&first) {
        Some(Kind::Journal)
    } else if snapshot::owns_start(&first) {
        Some(Kind::Snapshot)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each format's cases are in its own `sniff`; here, that the journal
    /// is asked first.
    #[test]
    fn content_detection() {
        assert_eq!(kind_from_content(b""), None);
        assert_eq!(kind_from_content(b"\n"), Some(Kind::Journal));
        assert_eq!(
            kind_from_content(b"{\"op\":\"lease\",\"stats\":[]}\n"),
            Some(Kind::Journal)
        );
        assert_eq!(
            kind_from_content(b"{\"clock\":\"unix\",\"stats\":[]}"),
            Some(Kind::Snapshot)
        );
        assert_eq!(kind_from_content(b"[1,2]\n"), None);
        assert_eq!(kind_from_name(Path::new("a/b.jsonl")), Some(Kind::Journal));
        assert_eq!(kind_from_name(Path::new("a/b.json")), Some(Kind::Snapshot));
        assert_eq!(kind_from_name(Path::new("a/b.txt")), None);
    }
}
