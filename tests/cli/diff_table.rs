//! `leasejournal diff` of two fenced lease tables: a copy of an upstream
//! case (`fixtures/multimaster/t017`) against a copy changed by hand as
//! masters change a table (a steal, a re-claim, heartbeats, a commit, a
//! completion, a record added and one removed, one corrupted, one
//! repaired, one moved, and a lock, a temporary file and a probe directory
//! left beside them), through the whole human output and the JSON.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};
use sha2::{Digest, Sha256};

use crate::golden;
use crate::schema::{self, ChangeKind, Diff, DiffKind, EntryView, RecordView, TableCounts};
use crate::support::{fixture, lj};

/// The present the counts are taken at: 5m 9s after the case's.
const NOW: &str = "1754550600";

const BB40: &str = "bb40bd5c0d44dabd4fabe98cee40a20a8ff7d9d123671e04f3926ff7099e0a2f";
const B6EE: &str = "b6eedf4c63d5947e3afc6db1faaa0c34a19c5de64b37904127e71d5d03c5c112";
const _9ABF: &str = "9abf905724cf98e1d11f6ce41a7ee788ab3ca5796e642f5a1869e75e2660a823";
const ECCA: &str = "ecca8ef5fe6f0b4fbd248d966a3edee6a6080fdc44fb9d593a5eb5718a56128d";
const _2214: &str = "221450bae3977679b5091dc7eadbb54e6cce797c4463674b208ec788b5eed0f0";
const _6C9A: &str = "6c9a5f2c078fc9e3931e9c532183c65015a730ca20496438ea76fc39b0be41e2";

/// An id of the hand-made records, in shard `head % 3`.
fn made(head: u32, fill: char) -> String {
    format!("{head:08x}{}", fill.to_string().repeat(56))
}

/// Copies t017's table to `dir/.work_lease_table`, with the directory it
/// holds at a lock path (git keeps no empty directory).
fn copy_case(dir: &Path) -> PathBuf {
    let root = dir.join(".work_lease_table");
    let from = fixture("multimaster/t017/.work_lease_table");
    for shard in ["000", "001", "002"] {
        crate::support::copy_dir_to(&from.join(shard), &root.join(shard));
    }
    fs::create_dir_all(root.join(format!("000/{ECCA}.json.lock"))).unwrap();
    root
}

/// A record as upstream's `_write_record` writes it (sorted keys, no
/// spaces, a newline), claimed by `owner` at `claimed`.
#[allow(clippy::too_many_arguments)]
fn record(
    id: &str,
    status: &str,
    owner: &str,
    previous: &str,
    worker: u32,
    claimed: f64,
    updated: f64,
    attempts: u32,
) -> Json {
    let pid = owner.rsplit(':').next().unwrap();
    json!({
        "attempts": attempts,
        "id": id,
        "owner": owner,
        "payload": {"path": format!("/fuzz/afl/queue/id:{}", &id[..6])},
        "previous_owner": previous,
        "schema": 1,
        "status": status,
        "steals": u32::from(!previous.is_empty() && previous != owner),
        "token": format!("{owner}:{worker}:{pid}:{}", claimed.trunc() as u64) + &format!("{:09}", (claimed.fract() * 1e9).round() as u64),
        "updated": updated,
        "worker": worker,
    })
}

/// Writes `value` at `root/<shard>/<id>.json` (and its lock file).
fn put(root: &Path, shard: &str, value: &Json) {
    let id = value["id"].as_str().unwrap();
    fs::create_dir_all(root.join(shard)).unwrap();
    fs::write(
        root.join(format!("{shard}/{id}.json")),
        format!("{}\n", serde_json::to_string(value).unwrap()),
    )
    .unwrap();
    fs::write(root.join(format!("{shard}/{id}.json.lock")), "").unwrap();
}

/// Changes the record at `root/rel` as `change` says.
fn edit(root: &Path, rel: &str, change: impl FnOnce(&mut serde_json::Map<String, Json>)) {
    let path = root.join(rel);
    let mut value: Json = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    change(value.as_object_mut().unwrap());
    fs::write(
        &path,
        format!("{}\n", serde_json::to_string(&value).unwrap()),
    )
    .unwrap();
}

/// Two tables under `dir`: `a/.work_lease_table`, t017 with four leases
/// of its own, and `b/.work_lease_table`, the same after the changes.
fn tables(dir: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = (copy_case(&dir.join("a")), copy_case(&dir.join("b")));
    let (x, z, w, v, y) = (
        made(1, 'a'),
        made(3, 'c'),
        made(4, 'd'),
        made(5, 'e'),
        made(2, 'b'),
    );
    let shard = |id: &str| format!("{:03}", u32::from_str_radix(&id[..8], 16).unwrap() % 3);
    for root in [&a, &b] {
        let x = record(
            &x,
            "leased",
            "hostA:100",
            "",
            4,
            1754550500.0,
            1754550500.0,
            1,
        );
        put(root, &shard(&made(1, 'a')), &x);
        let z = record(
            &z,
            "leased",
            "hostA:100",
            "",
            5,
            1754550200.0,
            1754550200.0,
            1,
        );
        put(root, &shard(&made(3, 'c')), &z);
        let w = record(
            &w,
            "leased",
            "hostA:100",
            "",
            6,
            1754550100.0,
            1754550100.0,
            1,
        );
        put(root, &shard(&made(4, 'd')), &w);
        let v = record(
            &v,
            "leased",
            "hostC:300",
            "",
            7,
            1754550390.0,
            1754550400.0,
            1,
        );
        put(root, &shard(&made(5, 'e')), &v);
    }
    // A heartbeat; another, after the lease had expired.
    edit(&b, &format!("{}/{x}.json", shard(&x)), |r| {
        r.insert("updated".into(), json!(1754550530.0));
    });
    edit(&b, &format!("{}/{z}.json", shard(&z)), |r| {
        r.insert("updated".into(), json!(1754550400.0));
    });
    // Re-claimed by the same master.
    put(
        &b,
        &shard(&w),
        &record(
            &w,
            "leased",
            "hostA:100",
            "hostA:100",
            6,
            1754550350.0,
            1754550350.0,
            2,
        ),
    );
    // Committed 3 s after its last heartbeat.
    edit(&b, &format!("{}/{v}.json", shard(&v)), |r| {
        r.insert("status".into(), json!("committing"));
        r.insert("updated".into(), json!(1754550403.0));
    });
    // Stolen by hostB:200 after 5m 2s without a heartbeat, and the temporary
    // file of the steal's write left behind.
    put(
        &b,
        "001",
        &record(
            BB40,
            "leased",
            "hostB:200",
            "hostC:300",
            9,
            1754550457.25,
            1754550457.25,
            2,
        ),
    );
    fs::write(
        b.join(format!("001/{BB40}.json.200.1754550457250000000.tmp")),
        "{",
    )
    .unwrap();
    // Completed.
    edit(&b, &format!("002/{B6EE}.json"), |r| {
        r.insert("status".into(), json!("done"));
        r.insert("completed".into(), json!(1754550300.5));
    });
    // Removed; its lock file stays, as upstream's do.
    fs::remove_file(b.join(format!("000/{_9ABF}.json"))).unwrap();
    // Torn.
    let torn = fs::read(b.join(format!("000/{ECCA}.json"))).unwrap();
    fs::write(b.join(format!("000/{ECCA}.json")), &torn[..torn.len() / 2]).unwrap();
    // Its empty token repaired.
    edit(&b, &format!("002/{_2214}.json"), |r| {
        r.insert(
            "token".into(),
            json!("node-7.cluster:31337:9:31337:1754550321500000000"),
        );
    });
    // Moved to a directory no scan at 3 shards lists.
    fs::create_dir(b.join("005")).unwrap();
    fs::rename(
        b.join(format!("002/{_6C9A}.json")),
        b.join(format!("005/{_6C9A}.json")),
    )
    .unwrap();
    // Added.
    put(
        &b,
        &shard(&y),
        &record(
            &y,
            "leased",
            "node-7.cluster:31337",
            "",
            3,
            1754550550.0,
            1754550550.0,
            1,
        ),
    );
    // A probe directory a crashed master start left.
    fs::create_dir_all(b.join(".symcc-fs-probe-200-17-00ff00ff00ff00ff/left")).unwrap();
    (a, b)
}

/// `leasejournal diff` at the case's count and TTL, and `NOW`.
fn diff(extra: &[&str], a: &Path, b: &Path) -> assert_cmd::Command {
    let mut cmd = lj();
    cmd.env_remove("SYMCC_MULTI_MASTER_LEASE_SHARDS")
        .env_remove("SYMCC_WORK_LEASE_TTL")
        .env_remove("SYMCC_TIMEOUT")
        .env("COLUMNS", "100")
        .args(["diff", "--lease-shards", "3", "--ttl", "120", "--now", NOW])
        .args(extra)
        .arg(a)
        .arg(b);
    cmd
}

fn json_of(extra: &[&str], a: &Path, b: &Path) -> (i32, Diff) {
    let mut args = vec!["--format=json"];
    args.extend_from_slice(extra);
    let out = diff(&args, a, b).output().unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap(), schema::parse(&out.stdout))
}

/// What upstream's `snapshot_counts` gives for a root, through the
/// library's reader of a whole table.
fn snapshot_counts(root: &Path) -> TableCounts {
    let options = leasejournal::operations::table::TableOptions {
        kind: None,
        lease_shards: Some(3),
        ttl: Some(120.0),
        now: NOW.parse().unwrap(),
        skew: 300.0,
        history: None,
    };
    let c = leasejournal::operations::table::read(root, &options)
        .unwrap()
        .counts;
    TableCounts {
        leased: c.leased,
        committing: c.committing,
        expired: c.expired,
        done: c.done,
    }
}

/// Every path under `dir` with its type, size, mode, times and SHA-256.
fn tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = fs::symlink_metadata(&path).unwrap();
        let mut line = format!(
            "{:o} {} {}.{} {}.{}",
            meta.mode(),
            meta.size(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec()
        );
        if meta.is_dir() {
            for entry in fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
        } else if meta.is_file() {
            line += &format!(" {:x}", Sha256::digest(fs::read(&path).unwrap()));
        }
        out.insert(path, line);
    }
    out
}

fn view(v: &Json) -> RecordView {
    serde_json::from_value(v.clone()).unwrap()
}

#[test]
fn every_kind_of_change_between_two_tables() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = tables(dir.path());
    let before = tree(dir.path());
    golden::assert_run(
        "test.diff_table.changes",
        &format!(
            "diff --lease-shards 3 --ttl 120 --now {NOW} $DIR/a/.work_lease_table $DIR/b/.work_lease_table"
        ),
        &mut diff(&[], &a, &b),
        Some(dir.path()),
    );
    let (exit, r) = json_of(&[], &a, &b);
    assert_eq!(
        (exit, r.schema_version, r.kind, r.identical),
        (1, 4, DiffKind::Table, false)
    );
    let expected: BTreeMap<String, u64> = [
        ("record_added", 1),
        ("record_removed", 1),
        ("record_owner", 1),
        ("record_token", 1),
        ("record_status", 2),
        ("record_updated", 2),
        ("record_reading", 2),
        ("record_shard", 1),
        ("lock_added", 1),
        ("temp_added", 1),
        ("probe_added", 1),
    ]
    .into_iter()
    .map(|(k, n)| (k.to_string(), n))
    .collect();
    assert_eq!(r.counts, expected);
    assert_eq!(r.changes.len(), 14, "every change listed: {:#?}", r.changes);
    let t = r.table.as_ref().unwrap();
    assert_eq!(
        (
            t.table.as_str(),
            t.table_from.as_str(),
            t.shard_count.value,
            t.ttl_effective
        ),
        ("work", "name", 3, 120.0)
    );
    assert_eq!((t.ids, t.unchanged), (13, 2));
    // The counts are upstream's snapshot_counts on each side.
    let summary = r.table_summary();
    assert_eq!(
        (summary.a.counts, summary.b.counts),
        (snapshot_counts(&a), snapshot_counts(&b))
    );
    assert_eq!(
        summary.b.counts,
        TableCounts {
            leased: 5,
            committing: 2,
            expired: 3,
            done: 2
        }
    );
    let sides = [&summary.a, &summary.b].map(|s| {
        (
            s.records,
            s.accepted,
            s.rejected,
            s.outside,
            s.locks,
            s.temp_files,
            s.probes,
            s.other,
        )
    });
    assert_eq!(
        sides,
        [(12, 10, 2, 0, 14, 0, 0, 0), (12, 9, 2, 1, 15, 1, 1, 0)]
    );
    // The steal: who, what the counters say, when the claim was made.
    let steal = r.find("record", Some("owner"), &BB40[..8]);
    let (was, now) = (view(&steal.before), view(&steal.after));
    assert_eq!(
        (was.owner.as_deref(), now.owner.as_deref()),
        (Some("hostC:300"), Some("hostB:200"))
    );
    assert_eq!(
        (
            now.previous_owner.as_deref(),
            now.attempts.as_deref(),
            now.steals.as_deref()
        ),
        (Some("hostC:300"), Some("2"), Some("1"))
    );
    assert_eq!(now.claimed, Some(1754550457.25));
    assert_eq!(steal.delta, Some(json!(302.0)));
    // The torn record: B's reader rejects it, and says why.
    let torn = r.find("record", Some("reading"), &ECCA[..8]);
    assert_eq!(
        (
            view(&torn.before).reading.as_str(),
            view(&torn.after).reading.as_str()
        ),
        ("accepted", "not-json")
    );
    let moved = r.find("record", Some("shard"), &_6C9A[..8]);
    assert_eq!(
        (&moved.before, &moved.after),
        (
            &json!([format!("002/{_6C9A}.json")]),
            &json!([format!("005/{_6C9A}.json")])
        )
    );
    let probe = r
        .changes
        .iter()
        .find(|c| c.entity == "probe")
        .expect("the probe directory");
    let probe: EntryView = serde_json::from_value(probe.after.clone()).unwrap();
    assert_eq!(probe.entry_type, "dir");
    assert_eq!(
        r.notes,
        [format!(
            "{}: 1 record sits outside the shard directory their id names at 3 shards, where \
             upstream never reads them (is --lease-shards the count the table was written at?)",
            b.display()
        )]
    );
    // At most one of each kind listed; the counts stay exact.
    let (_, one) = json_of(&["--max-examples", "1"], &a, &b);
    assert_eq!(one.counts, r.counts);
    assert_eq!(one.changes.len(), 11);
    // --id keeps one record's changes.
    let (exit, only) = json_of(&["--id", &BB40[..6]], &a, &b);
    assert_eq!(exit, 1);
    let kinds: Vec<(&str, Option<&str>, ChangeKind)> = only
        .changes
        .iter()
        .map(|c| (c.entity.as_str(), c.field.as_deref(), c.change))
        .collect();
    assert_eq!(
        kinds,
        [
            ("record", Some("owner"), ChangeKind::Changed),
            ("temp", None, ChangeKind::Added)
        ]
    );
    // A table against itself.
    let (exit, same) = json_of(&[], &a, &a);
    assert_eq!((exit, same.identical, same.changes.len()), (0, true, 0));
    assert_eq!(tree(dir.path()), before, "diff writes nothing");
}

#[test]
fn two_state_directories_compare_the_tables_they_hold() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = tables(dir.path());
    for root in [&a, &b] {
        fs::copy(
            fixture("samples/.work_leases.jsonl"),
            root.parent().unwrap().join(".work_leases.jsonl"),
        )
        .unwrap();
    }
    let (exit, r) = json_of(&[], a.parent().unwrap(), b.parent().unwrap());
    assert_eq!((exit, r.kind), (1, DiffKind::Table));
    assert_eq!(
        r.notes[0],
        "only the .work_lease_table/ tables are compared: name the .state_shards/ directories, \
         the journals or the snapshots to compare those"
    );
    let (_, roots) = json_of(&[], &a, &b);
    assert_eq!(r.counts, roots.counts);
    assert_eq!(r.table_summary().b.path, b.display().to_string());
}

#[test]
fn a_missing_or_non_directory_root_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let a = copy_case(&dir.path().join("a"));
    let before = tree(&a);
    let missing = dir.path().join("gone/.work_lease_table");
    diff(&[], &a, &missing)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: no such file or directory\n",
            missing.display()
        ));
    let file = dir.path().join("f/.target_lease_table");
    fs::create_dir(file.parent().unwrap()).unwrap();
    fs::write(&file, "").unwrap();
    diff(&[], &file, &a)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: is not a directory, so it is no fenced lease table (a master's start fails on it: durable_makedirs)\n",
            file.display()
        ));
    assert_eq!(tree(&a), before, "nothing written");
}
