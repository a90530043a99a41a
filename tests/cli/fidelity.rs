//! The differential cases: what upstream itself did with each input. Every
//! journal case must replay (through `inspect --format json`) to upstream's
//! state, and every snapshot case must restore to upstream's bytes.

use serde_json::Value;

use crate::support::{cases, json_ok, lj};

#[test]
fn every_journal_case_replays_to_upstreams_state() {
    let dirs = cases(&['j', 'w']);
    assert_eq!(dirs.len(), 80, "all journal cases are present");
    for dir in dirs {
        let report = json_ok::<serde_json::Value>(
            lj().arg("inspect")
                .arg("--format=json")
                .arg(dir.join("journal.jsonl")),
        );
        let expected: Value =
            serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let replay = &expected["replay"];
        assert_eq!(
            report["completed"],
            replay["completed"],
            "{}: completed",
            dir.display()
        );
        let leases = replay["leases"].as_object().unwrap();
        let active = report["active"].as_array().unwrap();
        assert_eq!(
            active.len(),
            leases.len(),
            "{}: active count",
            dir.display()
        );
        assert_eq!(report["active_count"].as_u64(), Some(leases.len() as u64));
        let mut ids: Vec<&str> = Vec::new();
        for a in active {
            let id = a["id"].as_str().unwrap();
            ids.push(id);
            let want = &leases[id];
            for field in ["worker", "time", "attempts", "clock"] {
                assert_eq!(a[field], want[field], "{}: {id} {field}", dir.display());
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
        let report = json_ok::<serde_json::Value>(
            lj().args(["inspect", "--format", "json"])
                .arg(dir.join("state.json")),
        );
        assert_eq!(report["kind"], "snapshot");
        let want: Value = serde_json::from_slice(&want).unwrap();
        assert_eq!(report["restored"], want, "{}: restored", dir.display());
    }
}
