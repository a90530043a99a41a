//! The formats a state directory holds, as the file tier tells them apart:
//! each format's file names and the first bytes that are its own.

use std::path::Path;

use serde::Serialize;

/// The main lease journal.
pub const WORK_LEASES: &str = ".work_leases.jsonl";
/// The deferred-dispatch journal (same grammar).
pub const DEFERRED: &str = ".dispatch_protocol_deferred.jsonl";
/// The state-shard coordinator snapshot.
pub const STATE_TASKS: &str = ".state_tasks.json";
/// Upstream's state files, as messages list them.
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
            Kind::Journal => &[DEFERRED, WORK_LEASES],
            Kind::Snapshot => &[STATE_TASKS],
        }
    }
}

/// The kind a file name implies, if it implies one.
pub fn kind_from_name(path: &Path) -> Option<Kind> {
    let name = path.file_name()?.to_str()?;
    if name == WORK_LEASES || name == DEFERRED || name.ends_with(".jsonl") {
        Some(Kind::Journal)
    } else if name == STATE_TASKS || name.ends_with(".json") {
        Some(Kind::Snapshot)
    } else {
        None
    }
}

/// The kind the first bytes of a file imply: a journal's first line is an
/// object with `op` or `id`; a snapshot is one object with coordinator
/// keys. An empty file is an (empty) journal.
pub fn kind_from_content(prefix: &[u8]) -> Option<Kind> {
    let first = prefix
        .split(|&b| b == b'\n' || b == b'\r')
        .find(|line| line.iter().any(|b| !b.is_ascii_whitespace()));
    let Some(first) = first else {
        return prefix
            .iter()
            .all(u8::is_ascii_whitespace)
            .then_some(Kind::Journal);
    };
    let (text, _) = crate::engine::json::strip_invalid_utf8(first);
    let text = std::str::from_utf8(&text).unwrap_or_default();
    if let Ok(parsed) = crate::engine::json::parse(text, crate::engine::json::Mode::Snapshot) {
        if let Some(obj) = parsed.value.as_object() {
            if obj.get("op").is_some() || obj.get("id").is_some() {
                return Some(Kind::Journal);
            }
            const SNAPSHOT_KEYS: [&str; 6] = [
                "clock",
                "stats",
                "leases",
                "shard_count",
                "worker_count",
                "steal_window",
            ];
            if SNAPSHOT_KEYS.iter().any(|k| obj.get(k).is_some()) {
                return Some(Kind::Snapshot);
            }
        }
        return None;
    }
    // The first line did not parse (torn, or longer than the prefix).
    let has = |needle: &[u8]| text.as_bytes().windows(needle.len()).any(|w| w == needle);
    if has(b"\"op\"") {
        Some(Kind::Journal)
    } else if has(b"\"task_id\"") || has(b"\"stats\"") || has(b"\"shard_count\"") {
        Some(Kind::Snapshot)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_detection() {
        assert_eq!(kind_from_content(b""), Some(Kind::Journal));
        assert_eq!(
            kind_from_content(b"{\"op\":\"done\",\"id\":1}\n"),
            Some(Kind::Journal)
        );
        assert_eq!(
            kind_from_content(b"{\"clock\":\"unix\",\"stats\":[]}"),
            Some(Kind::Snapshot)
        );
        assert_eq!(
            kind_from_content(b"{\"attempts\":1,\"op\":\"lea"),
            Some(Kind::Journal)
        );
        assert_eq!(kind_from_content(b"\x7fELF\x02\x01\x01\0\0"), None);
        assert_eq!(kind_from_content(b"[1,2]\n"), None);
    }
}
