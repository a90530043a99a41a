//! What says a file is a coordinator snapshot: the name upstream gives it
//! (any `*.json` is taken for one too), and a first line that is an object
//! with one of the coordinator's keys, or torn text naming `task_id`,
//! `stats` or `shard_count`. Asked after the journal's test
//! (`engine::journal::owns_start`): a file both could claim is a journal.

use crate::engine::json::FirstLine;

/// The state-shard coordinator snapshot.
pub const STATE_TASKS: &str = ".state_tasks.json";
/// Upstream's snapshots in a state directory.
pub const NAMES: [&str; 1] = [STATE_TASKS];

/// Top-level keys of upstream's `to_mapping()`, any one of which marks a
/// parsed first line as a snapshot.
const KEYS: [&str; 6] = [
    "clock",
    "stats",
    "leases",
    "shard_count",
    "worker_count",
    "steal_window",
];

/// What a first line that does not parse must name to be a snapshot's.
const TORN_KEYS: [&str; 3] = ["task_id", "stats", "shard_count"];

/// Whether a file of this name is a snapshot: one of [`NAMES`], or any
/// `*.json`.
pub fn owns_name(name: &str) -> bool {
    NAMES.contains(&name) || name.ends_with(".json")
}

/// Whether a file that starts with `first` is a snapshot: an object with a
/// coordinator key, or a line that does not parse but names one of the
/// keys a snapshot's first line holds.
pub fn owns_start(first: &FirstLine) -> bool {
    first.has_member(&KEYS) || first.mentions(&TORN_KEYS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::json::first_line;

    #[test]
    fn the_snapshots_names_are_its_own() {
        assert!(owns_name(STATE_TASKS));
        assert!(owns_name("old.json"));
        assert!(!owns_name(".work_leases.jsonl"));
    }

    #[test]
    fn a_snapshot_starts_with_a_coordinator_object() {
        let owns = |bytes: &[u8]| owns_start(&first_line(bytes));
        assert!(owns(b"{\"clock\":\"unix\",\"stats\":[]}"));
        assert!(owns(b"{\"steal_window\":64}"));
        assert!(owns(b"{\"stats\":[{\"task_id\":\"ab"));
        assert!(owns(b"{\"x\":1,\"shard_count\":"));
        assert!(!owns(b""));
        assert!(!owns(b"{\"task_id\":1}\n"), "parsed, and not a mapping key");
        assert!(!owns(b"[1,2]\n"));
        assert!(!owns(b"\x7fELF\x02\x01\x01\0\0"));
    }
}
