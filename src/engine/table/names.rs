//! The names a fenced lease table is made of, as upstream builds them:
//! shard directories `f"{shard:03d}"`, records `<id>.json`, their lock
//! files `<id>.json.lock`, the temporary files `_write_record` leaves when
//! it dies (`<id>.json.<pid>.<time_ns>.tmp`), and the file-system probe's
//! directories in the root (`.symcc-fs-probe-<pid>-…`,
//! `.symcc-fs-publication-probe-<pid>-…`).

use crate::engine::journal::{WorkId, decode_hex};

/// The work table's default root in a state directory.
pub const WORK_DIR: &str = ".work_lease_table";
/// The target table's default root in a state directory.
pub const TARGET_DIR: &str = ".target_lease_table";
/// Where `leasejournal repair` keeps what it takes out of a table (the
/// bytes of rejected records, left-over temporary files and probe
/// directories), in a directory per run; upstream never lists it.
pub const QUARANTINE_DIR: &str = ".leasejournal-quarantine";
/// Where `leasejournal repair --archive-done` moves `done` records.
pub const ARCHIVE_DIR: &str = ".leasejournal-archive";
/// `SYMCC_MULTI_MASTER_LEASE_SHARDS`' default, for both tables.
pub const DEFAULT_SHARDS: u64 = 256;

/// The shard an id names: `int(id[:8], 16) % shard_count`.
pub fn shard_of(id: &WorkId, shard_count: u64) -> u64 {
    let head = u32::from_be_bytes([id.0[0], id.0[1], id.0[2], id.0[3]]);
    u64::from(head) % shard_count.max(1)
}

/// A shard's directory name, `f"{shard:03d}"`.
pub fn shard_dir_name(shard: u64) -> String {
    format!("{shard:03}")
}

/// What a name in the root is: a shard directory (its number, and whether
/// the name is the one upstream builds for it), a probe directory, or
/// something else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootName {
    /// All digits: `canonical` when it is `f"{n:03d}"` (not `5` or `0005`).
    Shard { number: u64, canonical: bool },
    /// A directory the file-system probe left: the pid in its name.
    Probe { pid: Option<u32> },
    /// [`QUARANTINE_DIR`] or [`ARCHIVE_DIR`]: this tool's own.
    Kept,
    /// Anything else.
    Other,
}

/// The probe directories' prefixes.
const PROBE_PREFIXES: [&str; 2] = [".symcc-fs-probe-", ".symcc-fs-publication-probe-"];

/// Classifies a name in a table's root.
pub fn root_name(name: &str) -> RootName {
    if !name.is_empty()
        && name.len() <= 19
        && name.bytes().all(|b| b.is_ascii_digit())
        && let Ok(number) = name.parse::<u64>()
    {
        return RootName::Shard {
            number,
            canonical: shard_dir_name(number) == name,
        };
    }
    if name == QUARANTINE_DIR || name == ARCHIVE_DIR {
        return RootName::Kept;
    }
    for prefix in PROBE_PREFIXES {
        if let Some(rest) = name.strip_prefix(prefix) {
            let pid = rest.split('-').next().and_then(|p| p.parse().ok());
            return RootName::Probe { pid };
        }
    }
    RootName::Other
}

/// What a name in a shard directory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardName {
    /// `<id>.json`: what the scans list.
    Record(WorkId),
    /// `<id>.json.lock`: the record's lock file, kept for ever.
    Lock(WorkId),
    /// `<id>.json.<pid>.<time_ns>.tmp`: a write that never finished.
    Temp { id: WorkId, pid: u32 },
    /// Anything else (the scans ignore it).
    Other,
}

/// A valid id, as upstream's `valid_work_id`: 64 lowercase hex digits.
pub fn parse_id(text: &str) -> Option<WorkId> {
    (text.len() == 64)
        .then(|| decode_hex(text.as_bytes()))
        .flatten()
}

/// Classifies a name in a shard directory.
pub fn shard_name(name: &str) -> ShardName {
    let Some(stem) = name.get(..64) else {
        return ShardName::Other;
    };
    let Some(id) = parse_id(stem) else {
        return ShardName::Other;
    };
    match &name[64..] {
        ".json" => ShardName::Record(id),
        ".json.lock" => ShardName::Lock(id),
        rest => {
            let Some(middle) = rest
                .strip_prefix(".json.")
                .and_then(|r| r.strip_suffix(".tmp"))
            else {
                return ShardName::Other;
            };
            match middle.split_once('.') {
                Some((pid, ns)) if ns.bytes().all(|b| b.is_ascii_digit()) && !ns.is_empty() => pid
                    .parse()
                    .map(|pid| ShardName::Temp { id, pid })
                    .unwrap_or(ShardName::Other),
                _ => ShardName::Other,
            }
        }
    }
}

/// A target's record id, `sha256(f"target:{target}")`.
pub fn target_id(target: u64) -> WorkId {
    WorkId::of_canonical(format!("target:{target}").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_and_names() {
        let id = parse_id(&format!("0000000a{}", "0".repeat(56))).unwrap();
        assert_eq!(shard_of(&id, 256), 10);
        assert_eq!(shard_of(&id, 3), 1);
        let top = parse_id(&format!("ffffffff{}", "0".repeat(56))).unwrap();
        assert_eq!(shard_of(&top, 1000), 4294967295 % 1000);
        assert_eq!(shard_dir_name(7), "007");
        assert_eq!(shard_dir_name(1234), "1234");
        assert_eq!(
            root_name("005"),
            RootName::Shard {
                number: 5,
                canonical: true
            }
        );
        assert_eq!(
            root_name("5"),
            RootName::Shard {
                number: 5,
                canonical: false
            }
        );
        assert_eq!(
            root_name(".symcc-fs-probe-4242-17-00ff00ff00ff00ff"),
            RootName::Probe { pid: Some(4242) }
        );
        assert_eq!(root_name("notes.txt"), RootName::Other);
        let hex = "ab".repeat(32);
        let id = parse_id(&hex).unwrap();
        assert_eq!(shard_name(&format!("{hex}.json")), ShardName::Record(id));
        assert_eq!(shard_name(&format!("{hex}.json.lock")), ShardName::Lock(id));
        assert_eq!(
            shard_name(&format!("{hex}.json.77.1796146316147954255.tmp")),
            ShardName::Temp { id, pid: 77 }
        );
        assert_eq!(
            shard_name(&format!("{}.json", hex.to_uppercase())),
            ShardName::Other
        );
        assert_eq!(shard_name("x.json"), ShardName::Other);
        // hashlib.sha256(b"target:77").hexdigest()
        assert_eq!(
            target_id(77).to_hex(),
            "6c1ad97b4838ddd07eb783b946c31f6241b0d90d8f0e63c79f7f4c6f0efbcec6"
        );
    }
}
