//! Every `table-*` code of the catalog on a table built for it: records
//! written the way upstream's `_write_record` writes them (sorted keys,
//! compact separators, a newline), then each kind of damage, and the
//! verdict, exit status, counts and severities `verify` gives.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use leasejournal::engine::journal::WorkId;
use leasejournal::engine::table::{shard_dir_name, shard_of};
use serde_json::json;

use crate::schema::{Severity, Verdict};
use crate::support::{hold_master_lock, lj, verify_output};

const NOW: f64 = 1_754_600_000.0;
const TTL: f64 = 120.0;
const SHARDS: u64 = 64;

/// A payload and its id, as the AFL master hashes it.
fn payload(n: u32) -> (serde_json::Value, WorkId) {
    let payload = json!({"path": format!("/nowhere/queue/id:{n:06}"), "sha256": "0".repeat(64)});
    let id = WorkId::of_canonical(serde_json::to_string(&payload).unwrap().as_bytes());
    (payload, id)
}

/// A record as `claim` writes it.
fn record(
    id: &WorkId,
    payload: &serde_json::Value,
    status: &str,
    owner: &str,
    updated: f64,
) -> serde_json::Value {
    json!({
        "attempts": 1, "id": id.to_hex(), "owner": owner, "payload": payload,
        "previous_owner": "", "schema": 1, "status": status, "steals": 0,
        "token": format!("{owner}:3:1:1"), "updated": updated, "worker": 3,
    })
}

/// Writes `value` at `dir/<id>.json` (with its lock file, as upstream
/// leaves one), in the shard directory its id names unless `shard` says.
fn put(root: &Path, id: &WorkId, bytes: &[u8], shard: Option<&str>) {
    let dir = root.join(shard.map_or_else(|| shard_dir_name(shard_of(id, SHARDS)), str::to_string));
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(format!("{id}.json")), bytes).unwrap();
    fs::write(dir.join(format!("{id}.json.lock")), b"").unwrap();
}

fn encoded(value: &serde_json::Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).unwrap();
    bytes.push(b'\n');
    bytes
}

/// A pid that ran and no longer does.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn verify(root: &Path) -> (i32, crate::schema::Verify) {
    let out = lj()
        .args(["verify", "--format=json", "--max-examples=0"])
        .args(["--now", &NOW.to_string(), "--ttl", &TTL.to_string()])
        .args(["--lease-shards", &SHARDS.to_string()])
        .arg(root)
        .output()
        .unwrap();
    verify_output(&out)
}

#[test]
fn every_table_code_on_a_table_built_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".work_lease_table");
    let host = fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let mut n = 0;
    let mut next = || {
        n += 1;
        payload(n)
    };
    // Healthy: a live lease and a done record.
    let (p, id) = next();
    put(
        &root,
        &id,
        &encoded(&record(&id, &p, "leased", "hostA:1", NOW - 10.0)),
        None,
    );
    let (p, id) = next();
    put(
        &root,
        &id,
        &encoded(&record(&id, &p, "done", "hostA:1", NOW - 500.0)),
        None,
    );
    // table-expired-lease
    let (p, id) = next();
    put(
        &root,
        &id,
        &encoded(&record(&id, &p, "leased", "hostB:2", NOW - 600.0)),
        None,
    );
    // table-committing-stranded
    let (p, id) = next();
    put(
        &root,
        &id,
        &encoded(&record(&id, &p, "committing", "hostB:2", NOW - 900.0)),
        None,
    );
    // table-future-updated
    let (p, id) = next();
    put(
        &root,
        &id,
        &encoded(&record(&id, &p, "leased", "hostC:3", NOW + 3600.0)),
        None,
    );
    // table-owner-dead (a live lease of a pid of this host that is gone)
    let (p, id) = next();
    let owner = format!("{host}:{}", dead_pid());
    put(
        &root,
        &id,
        &encoded(&record(&id, &p, "leased", &owner, NOW - 5.0)),
        None,
    );
    // table-record-rejected: torn
    let (p, id) = next();
    let bytes = encoded(&record(&id, &p, "leased", "hostA:1", NOW - 5.0));
    put(&root, &id, &bytes[..bytes.len() / 2], None);
    // table-record-raises: a status upstream cannot hash
    let (p, id) = next();
    let mut poison = record(&id, &p, "leased", "hostA:1", NOW - 5.0);
    poison["status"] = json!([]);
    put(&root, &id, &encoded(&poison), None);
    // table-odd-record: schema true
    let (p, id) = next();
    let mut odd = record(&id, &p, "done", "hostA:1", NOW - 5.0);
    odd["schema"] = json!(true);
    put(&root, &id, &encoded(&odd), None);
    // table-misplaced-record: a leased record in another shard's directory
    let (p, id) = next();
    let wrong = shard_dir_name((shard_of(&id, SHARDS) + 1) % SHARDS);
    put(
        &root,
        &id,
        &encoded(&record(&id, &p, "leased", "hostA:1", NOW - 5.0)),
        Some(&wrong),
    );
    // table-unread-directory: a shard directory beyond the count
    let (p, id) = next();
    put(
        &root,
        &id,
        &encoded(&record(&id, &p, "done", "hostA:1", NOW - 5.0)),
        Some("099"),
    );
    // table-lock-not-regular
    let (p, id) = next();
    put(
        &root,
        &id,
        &encoded(&record(&id, &p, "done", "hostA:1", NOW - 5.0)),
        None,
    );
    let lock = root
        .join(shard_dir_name(shard_of(&id, SHARDS)))
        .join(format!("{id}.json.lock"));
    fs::remove_file(&lock).unwrap();
    fs::create_dir(&lock).unwrap();
    // table-temp-file
    let (_, id) = next();
    let shard = root.join(shard_dir_name(shard_of(&id, SHARDS)));
    fs::create_dir_all(&shard).unwrap();
    fs::write(
        shard.join(format!("{id}.json.{}.1796146316147954255.tmp", dead_pid())),
        b"{",
    )
    .unwrap();
    // table-probe-dir
    fs::create_dir_all(root.join(format!(
        ".symcc-fs-probe-{}-17-00ff00ff00ff00ff/left",
        dead_pid()
    )))
    .unwrap();
    // table-shard-not-directory: a shard no record here hashes to.
    let used: Vec<u64> = (1..=n + 1)
        .map(|k| shard_of(&payload(k).1, SHARDS))
        .collect();
    let free = (0..SHARDS)
        .find(|s| !used.contains(s))
        .expect("a free shard");
    fs::write(root.join(shard_dir_name(free)), b"not a directory").unwrap();
    // table-lock-held, where flock(1) is installed.
    let held_id = payload(1).1;
    let held_lock = root
        .join(shard_dir_name(shard_of(&held_id, SHARDS)))
        .join(format!("{held_id}.json.lock"));
    let holder = hold_master_lock(&held_lock, "table-lock-held");

    let (exit, report) = verify(&root);
    let mut want: BTreeMap<&str, u64> = BTreeMap::from([
        ("table-expired-lease", 1),
        ("table-committing-stranded", 1),
        ("table-future-updated", 1),
        ("table-owner-dead", 1),
        ("table-record-rejected", 1),
        ("table-record-raises", 1),
        ("table-odd-record", 1),
        ("table-misplaced-record", 1),
        ("table-unread-directory", 1),
        ("table-lock-not-regular", 1),
        ("table-temp-file", 1),
        ("table-probe-dir", 1),
        ("table-shard-not-directory", 1),
        ("table-done-records", 1),
    ]);
    if holder.is_some() {
        want.insert("table-lock-held", 1);
    }
    let got: BTreeMap<&str, u64> = report
        .counts
        .iter()
        .map(|(code, n)| (code.as_str(), *n))
        .collect();
    assert_eq!(got, want, "{report:?}");
    for (code, n) in &want {
        assert_eq!(
            report.findings_of(code).count() as u64,
            *n,
            "{code}: listed"
        );
    }
    assert_eq!(report.verdict, Verdict::NoGo);
    assert_eq!(exit, 1);
    let severity = |code: &str| report.findings_of(code).next().map(|f| f.severity);
    assert_eq!(severity("table-record-raises"), Some(Severity::Error));
    assert_eq!(severity("table-shard-not-directory"), Some(Severity::Error));
    assert_eq!(severity("table-lock-not-regular"), Some(Severity::Error));
    assert_eq!(severity("table-misplaced-record"), Some(Severity::Error));
    assert_eq!(severity("table-unread-directory"), Some(Severity::Warning));
    assert_eq!(severity("table-expired-lease"), Some(Severity::Warning));
    assert_eq!(severity("table-done-records"), Some(Severity::Info));
    let fix = format!(
        "leasejournal repair --apply --all-masters-stopped --lease-shards {SHARDS} {}",
        root.display()
    );
    assert_eq!(report.next, vec![fix]);
    assert_eq!(report.targets.len(), 1);
    assert_eq!(report.targets[0].kind, "table");
    if let Some(mut holder) = holder {
        holder.kill().ok();
        holder.wait().ok();
    }

    // The fix verify names, run as the operator would once every master
    // is stopped, leaves only what no repair changes.
    let fix: Vec<&str> = report.next[0].split(' ').skip(1).collect();
    let out = lj().args(&fix).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let (exit, after) = verify(&root);
    let left: BTreeMap<&str, u64> = after
        .counts
        .iter()
        .map(|(code, n)| (code.as_str(), *n))
        .collect();
    let kept = BTreeMap::from([
        ("table-expired-lease", 1),
        ("table-committing-stranded", 1),
        ("table-future-updated", 1),
        ("table-owner-dead", 1),
        ("table-odd-record", 1),
        ("table-done-records", 1),
    ]);
    // The directory beyond the count is empty now: no finding.
    assert_eq!(left, kept, "{after:?}");
    assert_eq!(after.next, Vec::<String>::new());
    assert_eq!((exit, after.verdict), (0, Verdict::Go));
}
