//! The differential cases: what upstream itself did with each input. Every
//! journal case must replay (through `inspect --format json`) to upstream's
//! state, and every snapshot case must restore to upstream's bytes.

use serde_json::Value;

use crate::schema::Inspect;
use crate::support::{cases, json_ok, lj};

/// `inspect --format json` of `path`.
fn inspect(path: &std::path::Path) -> Inspect {
    json_ok(lj().args(["inspect", "--format=json"]).arg(path))
}

#[test]
fn every_journal_case_replays_to_upstreams_state() {
    let dirs = cases(&['j', 'w']);
    assert_eq!(dirs.len(), 80, "all journal cases are present");
    for dir in dirs {
        let report = inspect(&dir.join("journal.jsonl")).journal();
        // Upstream's own state, as the case recorded it.
        let expected: Value =
            serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let replay = &expected["replay"];
        assert_eq!(
            serde_json::to_value(&report.completed).unwrap(),
            replay["completed"],
            "{}: completed",
            dir.display()
        );
        let leases = replay["leases"].as_object().unwrap();
        assert_eq!(
            report.active.len(),
            leases.len(),
            "{}: active count",
            dir.display()
        );
        assert_eq!(report.active_count, leases.len() as u64);
        let mut ids: Vec<&str> = Vec::new();
        for a in &report.active {
            let id = a.id.as_str();
            ids.push(id);
            let want = &leases[id];
            let clock = match a.clock {
                crate::schema::Clock::Unix => "unix",
                crate::schema::Clock::Legacy => "legacy",
            };
            let got = serde_json::json!({
                "worker": a.worker, "time": a.time, "attempts": a.attempts, "clock": clock
            });
            for field in ["worker", "time", "attempts", "clock"] {
                assert_eq!(got[field], want[field], "{}: {id} {field}", dir.display());
            }
        }
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(ids, sorted, "{}: active is sorted by id", dir.display());
    }
}

#[test]
fn every_snapshot_case_restores_to_upstreams_bytes() {
    let dirs = cases(&['s']);
    assert_eq!(dirs.len(), 30, "all snapshot cases are present");
    for dir in dirs {
        let want = std::fs::read(dir.join("expected.json")).unwrap();
        let snap =
            leasejournal::engine::snapshot::read(&std::fs::read(dir.join("state.json")).unwrap());
        let got = snap.restored.expect("restorable").to_upstream_bytes();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{}",
            dir.display()
        );
        let report = inspect(&dir.join("state.json")).snapshot();
        let want: Value = serde_json::from_slice(&want).unwrap();
        assert_eq!(report.restored, Some(want), "{}: restored", dir.display());
    }
}
