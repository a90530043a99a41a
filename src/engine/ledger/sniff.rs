//! The ledger's names: the directory `.state_shards` in a state directory
//! and the files `processed.NNN.log` in it, `NNN` exactly as upstream's
//! `f"{shard:03d}"` writes it (three digits, more from 1000 on, never a
//! leading zero past three). Any other name in the directory (`processed.3.log`,
//! `processed.0005.log`, a backup) is never read by upstream.

/// The ledger's directory in a state directory.
pub const DIR: &str = ".state_shards";
/// The namespace the AFL master gives its ledger.
pub const NAMESPACE: &str = "processed";

/// Upstream's file name for a shard.
pub fn file_name(shard: u32) -> String {
    format!("{NAMESPACE}.{shard:03}.log")
}

/// The shard a file name is upstream's name of, if it is one.
pub fn index_of(name: &str) -> Option<u32> {
    let digits = name
        .strip_prefix(NAMESPACE)?
        .strip_prefix('.')?
        .strip_suffix(".log")?;
    if digits.len() < 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let index: u32 = digits.parse().ok()?;
    (file_name(index) == name).then_some(index)
}

/// Whether a file of this name is a ledger file.
pub fn owns_name(name: &str) -> bool {
    index_of(name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledgers_names_are_upstreams_exactly() {
        assert_eq!(file_name(0), "processed.000.log");
        assert_eq!(file_name(7), "processed.007.log");
        assert_eq!(file_name(1000), "processed.1000.log");
        assert_eq!(index_of("processed.000.log"), Some(0));
        assert_eq!(index_of("processed.063.log"), Some(63));
        assert_eq!(index_of("processed.1000.log"), Some(1000));
        assert_eq!(index_of("processed.12345.log"), Some(12345));
        for foreign in [
            "processed.3.log",
            "processed.0005.log",
            "processed.01000.log",
            "processed.000.log.bak",
            "processed.000.log.21.tmp",
            "other.000.log",
            "processed.+01.log",
            "processed.-01.log",
            "processed.99999999999.log",
        ] {
            assert!(!owns_name(foreign), "{foreign}");
        }
    }
}
