//! What says a file is a lease journal: the names upstream gives its two
//! journals (any `*.jsonl` is taken for one too), and a first line that is
//! a record, or torn text with an `"op"` member in it. A file that is
//! empty or only white space is an (empty) journal. The snapshot format
//! has its own test (`engine::snapshot::owns_start`); where both could
//! claim a file, the journal's is asked first.

use crate::engine::json::FirstLine;

/// The main lease journal.
pub const WORK_LEASES: &str = ".work_leases.jsonl";
/// The deferred-dispatch journal (same grammar).
pub const DEFERRED: &str = ".dispatch_protocol_deferred.jsonl";
/// Upstream's journals in a state directory, in the order the master reads
/// them on resume.
pub const NAMES: [&str; 2] = [DEFERRED, WORK_LEASES];

/// Whether a file of this name is a journal: one of [`NAMES`], or any
/// `*.jsonl`.
pub fn owns_name(name: &str) -> bool {
    NAMES.contains(&name) || name.ends_with(".jsonl")
}

/// Whether a file that starts with `first` is a journal: blank (an empty
/// journal), an object with an `op` or an `id` member, or a line that does
/// not parse but holds `"op"`.
pub fn owns_start(first: &FirstLine) -> bool {
    *first == FirstLine::Blank || first.has_member(&["op", "id"]) || first.mentions(&["op"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::json::first_line;

    #[test]
    fn the_journals_names_are_its_own() {
        assert!(owns_name(WORK_LEASES) && owns_name(DEFERRED));
        assert!(owns_name("copy.jsonl"));
        assert!(!owns_name(".state_tasks.json"));
        assert!(!owns_name("journal.jsonl.bak"));
    }

    #[test]
    fn a_journal_starts_with_a_record_or_nothing() {
        let owns = |bytes: &[u8]| owns_start(&first_line(bytes));
        assert!(owns(b""));
        assert!(owns(b" \n\r\n"));
        assert!(owns(b"{\"op\":\"done\",\"id\":1}\n"));
        assert!(owns(b"\n{\"id\":\"x\"}\n"));
        assert!(owns(b"{\"attempts\":1,\"op\":\"lea"));
        assert!(!owns(b"{\"clock\":\"unix\",\"stats\":[]}"));
        assert!(!owns(b"[1,2]\n"));
        assert!(!owns(b"\x7fELF\x02\x01\x01\0\0"));
    }
}
