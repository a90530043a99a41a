//! `migrate` as a plan: move state out of the legacy (monotonic) clock
//! domain, as F314's L5 asks. A legacy snapshot is replaced by exactly the
//! bytes upstream writes right after restoring it. A journal's legacy
//! leases are only reported: the master's resume reclaims them and requeues
//! their work itself, and reclaiming them here would lose that work. With
//! `--rewrite` the journal is compacted, so no clock-less record remains;
//! legacy leases keep `"clock":"legacy"`, as upstream's compaction writes
//! them. Running it twice changes nothing the second time.

use serde::Serialize;

use crate::engine::snapshot::{self, Dropped, Zeroed};
use crate::operations::compact::Measured;
use crate::operations::plan::Reclaim;

/// What `migrate` does to one file.
#[derive(Debug, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum Migration {
    /// A journal, left as it is: its legacy leases, which resume reclaims
    /// and requeues.
    Journal {
        /// The active legacy leases, in the order resume reclaims them.
        legacy_leases: Vec<Reclaim>,
    },
    /// A journal with `--rewrite`: compacted, legacy leases kept as legacy.
    Rewrite {
        /// The active legacy leases, in the order resume reclaims them.
        legacy_leases: Vec<Reclaim>,
        /// Records without a `clock` member before the rewrite.
        clockless_records: u64,
        /// The compaction.
        compaction: Measured,
    },
    /// A snapshot.
    Snapshot(SnapshotPlan),
}

impl Migration {
    /// Whether there is nothing to write.
    pub fn is_noop(&self) -> bool {
        match self {
            Migration::Journal { .. } => true,
            Migration::Rewrite {
                clockless_records,
                compaction,
                ..
            } => *clockless_records == 0 || compaction.unchanged,
            Migration::Snapshot(plan) => !plan.needed,
        }
    }
}

/// A snapshot migration.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SnapshotPlan {
    /// Whether the snapshot is legacy (no `"clock":"unix"`).
    pub needed: bool,
    /// Size now.
    pub bytes_before: usize,
    /// Size after.
    pub bytes_after: usize,
    /// Times restore sets to 0.0.
    pub zeroed: Vec<Zeroed>,
    /// Entries restore drops.
    pub dropped: Vec<Dropped>,
    /// The new content.
    #[serde(skip)]
    pub content: Vec<u8>,
}

/// Why a snapshot cannot be migrated.
#[derive(Clone, Debug)]
pub struct Unmigratable(pub String);

/// Plans a snapshot migration.
pub fn snapshot(bytes: &[u8]) -> Result<SnapshotPlan, Unmigratable> {
    let snap = snapshot::read(bytes);
    if let Err(e) = &snap.parse {
        return Err(Unmigratable(format!(
            "does not parse ({e}); restore it from a backup instead"
        )));
    }
    let Some(restored) = snap.restored else {
        return Err(Unmigratable(
            "is not a JSON object; restore it from a backup instead".into(),
        ));
    };
    let needed = !snap.unix_clock;
    let content = if needed {
        restored.to_upstream_bytes()
    } else {
        bytes.to_vec()
    };
    Ok(SnapshotPlan {
        needed,
        bytes_before: bytes.len(),
        bytes_after: content.len(),
        zeroed: if needed {
            snap.changes.zeroed
        } else {
            Vec::new()
        },
        dropped: if needed {
            snap.changes.dropped
        } else {
            Vec::new()
        },
        content,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrating_twice_changes_nothing_the_second_time() {
        let legacy = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/fidelity/s000/state.json"
        ))
        .unwrap();
        let first = snapshot(&legacy).unwrap();
        assert!(first.needed);
        assert!(!first.zeroed.is_empty());
        let second = snapshot(&first.content).unwrap();
        assert!(!second.needed);
        assert_eq!(second.content, first.content);
        assert!(snapshot(b"{oops").is_err());
    }
}
