use leasejournal::journal::*;
#[test]
fn fidelity() {
    let mut bad = 0;
    for e in std::fs::read_dir("fixtures/fidelity").unwrap() {
        let d = e.unwrap().path();
        let j = d.join("journal.jsonl");
        if !j.exists() { continue; }
        let scan = scan(std::fs::File::open(&j).unwrap(), &mut ()).unwrap();
        let exp: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("expected.json")).unwrap()).unwrap();
        let rep = &exp["replay"];
        let completed: Vec<String> = scan.replay.completed_sorted().iter().map(|i| i.to_hex()).collect();
        let exp_completed: Vec<String> = rep["completed"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        let mut ok = completed == exp_completed;
        let leases = rep["leases"].as_object().unwrap();
        if leases.len() != scan.replay.active.len() { ok = false; }
        for (id, a) in scan.replay.active_sorted() {
            match leases.get(&id.to_hex()) {
                None => { ok = false; eprintln!("{} extra {}", d.display(), id) }
                Some(l) => {
                    let w = l["worker"].to_string(); let t = l["time"].as_f64().unwrap();
                    if w != a.worker.to_string() || t != a.time || l["clock"].as_str().unwrap() != a.clock.as_str() || l["attempts"].to_string() != a.attempts.to_string() {
                        ok = false; eprintln!("{} diff {} {:?} vs {}", d.display(), id, a, l);
                    }
                }
            }
        }
        if !ok { bad += 1; eprintln!("FAIL {} active {} exp {} completed {} exp {}", d.display(), scan.replay.active.len(), leases.len(), completed.len(), exp_completed.len()); }
    }
    assert_eq!(bad, 0);
}
#[test]
fn snapshots() {
    let mut bad = 0;
    for e in std::fs::read_dir("fixtures/fidelity").unwrap() {
        let d = e.unwrap().path();
        let j = d.join("state.json");
        if !j.exists() { continue; }
        let snap = leasejournal::snapshot::read(&std::fs::read(&j).unwrap());
        let want = std::fs::read(d.join("expected.json")).unwrap();
        let got = snap.restored.map(|r| r.to_upstream_bytes()).unwrap_or_default();
        if got != want { bad += 1; eprintln!("FAIL {}\n got {}\nwant {}", d.display(), String::from_utf8_lossy(&got), String::from_utf8_lossy(&want)); }
    }
    assert_eq!(bad, 0);
}
