//! `repair`, `recover --discard`, `migrate` and `compact`: upstream's
//! results on every fidelity case, dry runs that touch nothing, and the
//! write path's promises — the master's lock, change detection, backups,
//! file owners, refusal of symlinks, clear errors on read-only directories
//! and full disks, and crash safety under SIGKILL at every step.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use leasejournal::engine::journal::encode::{lease_line, marker_line};
use leasejournal::engine::journal::{Clock, WorkId};
use leasejournal::engine::json::PyInt;
use predicates::prelude::*;
use predicates::str::contains;
use serde_json::Value;

use crate::support::{cases, copy_dir, fixture, json_ok, json_written, lj, names, wait_for};

fn bin() -> &'static Path {
    assert_cmd::cargo::cargo_bin!("leasejournal")
}

fn temps(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

fn state(path: &Path) -> (Value, Value) {
    let v = json_ok::<serde_json::Value>(
        lj().args(["inspect", "--format=json", "--kind=journal"])
            .arg(path),
    );
    let active: Vec<Value> = v["active"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| serde_json::json!([a["id"], a["worker"], a["time"], a["attempts"], a["clock"]]))
        .collect();
    (Value::Array(active), v["completed"].clone())
}

/// The exports `recover --discard` left next to `path`.
fn exports(path: &Path) -> Vec<PathBuf> {
    let dir = path.parent().unwrap();
    let prefix = format!("{}.discarded.", path.file_name().unwrap().to_string_lossy());
    names(dir)
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .map(|n| dir.join(n))
        .collect()
}

/// The ids upstream's `recover_expired` reclaims, in order, as a fidelity
/// case's expected.json lists them.
fn reclaimed_in_order(expected: &Value) -> Vec<&Value> {
    expected["recover"]["reclaimed_in_order"]
        .as_array()
        .unwrap()
        .iter()
        .collect()
}

/// The `id` members of a JSON array of leases.
fn ids_of(leases: &Value) -> Vec<&Value> {
    leases
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["id"])
        .collect()
}

#[test]
fn discard_reclaims_upstreams_ids_in_upstreams_order_and_exports_them() {
    for dir in cases(&['j', 'w']) {
        let expected: Value =
            serde_json::from_slice(&fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let params = &expected["recover"]["params"];
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("journal.jsonl");
        fs::copy(dir.join("journal.jsonl"), &path).unwrap();
        let (active_before, _) = state(&path);
        let now = params["now"].as_f64().unwrap();
        let report = json_written::<serde_json::Value>(
            lj().args([
                "recover",
                "--discard",
                "--apply",
                "--no-backup",
                "--format=json",
            ])
            .arg(format!("--ttl={}", params["ttl"].as_f64().unwrap()))
            .arg(format!("--now={now}"))
            .arg(format!("--limit={}", params["limit"]))
            .arg(&path),
        );
        let want = reclaimed_in_order(&expected);
        assert_eq!(
            ids_of(&report["files"][0]["plan"]["reclaims"]),
            want,
            "{}",
            dir.display()
        );
        // The file ends with exactly those reclaim records, in that order.
        let text = String::from_utf8_lossy(&fs::read(&path).unwrap()).into_owned();
        let tail: Vec<Value> = text
            .lines()
            .rev()
            .take(want.len())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ids: Vec<&Value> = tail.iter().rev().map(|r| &r["id"]).collect();
        assert_eq!(ids, want, "{}: appended records", dir.display());
        // Byte for byte what upstream's recover_expired appends.
        let upstream: String = want
            .iter()
            .map(|id| {
                format!(
                    "{{\"clock\":\"unix\",\"id\":\"{}\",\"op\":\"reclaim\",\"time\":{}}}\n",
                    id.as_str().unwrap(),
                    leasejournal::engine::json::float_repr(now)
                )
            })
            .collect();
        assert!(
            text.ends_with(&upstream),
            "{}: appended bytes",
            dir.display()
        );
        // Every discarded lease is in the export, in the same order, as
        // upstream's compaction writes it.
        let exported = exports(&path);
        if want.is_empty() {
            assert!(exported.is_empty(), "{}", dir.display());
            assert_eq!(
                report["files"][0]["note"],
                "no active lease is selected: nothing to discard"
            );
            continue;
        }
        assert_eq!(exported.len(), 1, "{}", dir.display());
        assert_eq!(
            report["files"][0]["plan"]["export"],
            exported[0].display().to_string()
        );
        let lines: Vec<Value> = fs::read_to_string(&exported[0])
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let export_ids: Vec<&Value> = lines.iter().map(|l| &l["id"]).collect();
        assert_eq!(export_ids, want, "{}: export", dir.display());
        // Appending the export brings the work back.
        let mut journal = fs::OpenOptions::new().append(true).open(&path).unwrap();
        journal.write_all(&fs::read(&exported[0]).unwrap()).unwrap();
        drop(journal);
        let (active_after, _) = state(&path);
        let ids = |v: &Value| -> Vec<Value> {
            v.as_array().unwrap().iter().map(|a| a[0].clone()).collect()
        };
        assert_eq!(ids(&active_after), ids(&active_before), "{}", dir.display());
    }
}

#[test]
fn the_forecast_is_upstreams_resume() {
    for dir in cases(&['j', 'w']) {
        let expected: Value =
            serde_json::from_slice(&fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let params = &expected["recover"]["params"];
        if params["ttl"].as_f64() != Some(0.0) || params["limit"] != 0 {
            continue;
        }
        let path = dir.join("journal.jsonl");
        let report = json_ok::<serde_json::Value>(
            lj().args(["recover", "--format=json"])
                .arg(format!("--now={}", params["now"]))
                .arg(&path),
        );
        assert_eq!(report["schema_version"], 2);
        assert_eq!(report["mode"], "forecast");
        let file = &report["files"][0];
        assert_eq!(
            ids_of(&file["reclaims"]),
            reclaimed_in_order(&expected),
            "{}",
            dir.display()
        );
        let glues = matches!(
            file["tail"]["state"].as_str(),
            Some("torn" | "unterminated")
        );
        assert_eq!(file["first_append"]["glues"], glues, "{}", dir.display());
    }
}

/// A lease line for `payload` (canonical JSON).
fn lease_of(payload: &str, worker: i64, time: f64) -> Vec<u8> {
    let id = WorkId::of_canonical(payload.as_bytes());
    lease_line(
        &id,
        &PyInt::Small(worker),
        time,
        &PyInt::Small(1),
        Clock::Unix,
        payload.as_bytes(),
    )
}

#[test]
fn the_forecast_says_what_resume_requeues_drops_and_loses() {
    let dir = tempfile::tempdir().unwrap();
    let seed = dir.path().join("seed");
    fs::write(&seed, b"input").unwrap();
    let seed = seed.display().to_string();
    let gone = dir.path().join("gone").display().to_string();
    let with_seed = format!(
        "{{\"continuation\":null,\"focus_bytes\":\"0-15\",\"parameter_overrides\":{{\"k\":\"v\"}},\"parameter_token\":\"t\",\"path\":\"{seed}\",\"s2f_actions\":[[7,\"solve\"]],\"schedule_prefix\":[],\"sha256\":\"{:064x}\",\"strategy\":1,\"target_branch\":7}}",
        1
    );
    let missing = format!("{{\"path\":\"{gone}\",\"target_branch\":3}}");
    let continued = format!(
        "{{\"continuation\":{{\"schema\":\"symcc-live-continuation-v1\"}},\"path\":\"{gone}\"}}"
    );
    let no_path = "{\"path\":\"\",\"target_branch\":3}".to_string();
    // The deferred journal's item, rebuilt the same as the work journal's.
    let deferred = format!(
        "{{\"continuation\":null,\"focus_bytes\":\"0-15\",\"path\":\"{seed}\",\"s2f_actions\":[[7,\"solve\"]],\"schedule_prefix\":[],\"target_branch\":7}}"
    );
    let mut work = Vec::new();
    for (i, p) in [&with_seed, &missing, &continued, &no_path]
        .iter()
        .enumerate()
    {
        work.extend(lease_of(p, 1, 1_754_550_000.0 + i as f64));
    }
    fs::write(dir.path().join(".work_leases.jsonl"), &work).unwrap();
    fs::write(
        dir.path().join(".dispatch_protocol_deferred.jsonl"),
        lease_of(&deferred, 2, 1_754_549_000.0),
    )
    .unwrap();
    let report = json_ok::<serde_json::Value>(
        lj().args(["recover", "--format=json", "--now=1754550100"])
            .arg(dir.path()),
    );
    let files = report["files"].as_array().unwrap();
    assert!(
        files[0]["path"]
            .as_str()
            .unwrap()
            .ends_with(".dispatch_protocol_deferred.jsonl")
    );
    assert_eq!(files[0]["requeued"], 1);
    let work = &files[1];
    let outcomes: Vec<&str> = work["reclaims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "requeued",
            "dropped",
            "requeued-if-continuation-valid",
            "dropped"
        ]
    );
    let first = &work["reclaims"][0];
    assert_eq!(
        first["item"],
        serde_json::json!({
            "path": seed, "focus": "0-15", "target_branch": 7,
            "s2f_actions": [[7, "solve"]], "schedule_prefix": [],
            "continuation": null, "fields": 5
        })
    );
    assert_eq!(
        first["not_restored"],
        serde_json::json!(["parameter_overrides", "parameter_token"])
    );
    assert_eq!(first["duplicate_of"][0], files[0]["path"]);
    assert_eq!(work["duplicates"], 1);
    assert_eq!(
        work["reclaims"][1]["reason"],
        "its seed is not a file on this host and it has no continuation"
    );
    assert_eq!(work["reclaims"][3]["reason"], "the payload has no path");
    assert_eq!(work["reclaims"][3]["item"], Value::Null);
    assert_eq!(work["first_append"]["record"], "reclaim");
    assert_eq!(work["first_append"]["glues"], false);
    // Nothing was written, created or locked.
    assert_eq!(
        names(dir.path()),
        [
            ".dispatch_protocol_deferred.jsonl",
            ".work_leases.jsonl",
            "seed"
        ]
    );
}

#[test]
fn recover_never_reclaims_unless_told_to_discard() {
    let dir = copy_dir(&fixture("verify/torn-tail"));
    let path = dir.path().join("journal.jsonl");
    let before = fs::read(&path).unwrap();
    for extra in [&["--apply"][..], &["--output", "x.jsonl"][..]] {
        lj().arg("recover")
            .args(extra)
            .arg(&path)
            .assert()
            .code(2)
            .stdout("")
            .stderr(
                contains(format!("leasejournal repair --apply {}", path.display()))
                    .and(contains("recover --discard --apply"))
                    .and(contains("Nothing was changed")),
            );
    }
    lj().args(["recover", "--discard", "--apply"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(contains("needs a selection"));
    lj().args(["recover", "--salvage", "--apply"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(contains("leasejournal repair"));
    lj().args(["recover", "--all"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(contains("--discard"));
    assert_eq!(fs::read(&path).unwrap(), before);
    assert_eq!(names(dir.path()), ["journal.jsonl"]);
}

#[test]
fn discard_by_id_and_worker_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    let a = "{\"path\":\"a\"}";
    let b = "{\"path\":\"b\"}";
    let c = "{\"path\":\"c\"}";
    let mut bytes = lease_of(a, 1, 1_754_550_000.0);
    bytes.extend(lease_of(b, 2, 1_754_550_001.0));
    bytes.extend(lease_of(c, 2, 1_754_550_002.0));
    fs::write(&path, &bytes).unwrap();
    let id_b = WorkId::of_canonical(b.as_bytes()).to_hex();
    let id_c = WorkId::of_canonical(c.as_bytes()).to_hex();
    let export = dir.path().join("dropped.jsonl");
    let report = json_written::<serde_json::Value>(
        lj().args([
            "recover",
            "--discard",
            "--apply",
            "--format=json",
            "--now=1754550100",
            "--worker=2",
        ])
        .arg(format!("--id={}", &id_b[..8]))
        .arg("--export")
        .arg(&export)
        .arg(&path),
    );
    let reclaimed: Vec<&str> = report["files"][0]["plan"]["reclaims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(reclaimed, [id_b.as_str()]);
    let (active, _) = state(&path);
    let ids: Vec<&str> = active
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a[0].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&id_c.as_str()));
    assert_eq!(fs::read(&export).unwrap(), lease_of(b, 2, 1_754_550_001.0));
    // The export is never overwritten.
    lj().args(["recover", "--discard", "--apply", "--all", "--export"])
        .arg(&export)
        .arg(&path)
        .assert()
        .code(2)
        .stderr(contains("already exists"));
    assert_eq!(state(&path).0, active);
}

#[test]
fn compact_writes_upstreams_bytes_and_by_default_keeps_completed() {
    for dir in cases(&['j', 'w']) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("journal.jsonl");
        fs::copy(dir.join("journal.jsonl"), &path).unwrap();
        lj().args([
            "compact",
            "--apply",
            "--no-backup",
            "--drop-completed",
            "--drop-hidden",
        ])
        .arg(&path)
        .assert()
        .success();
        assert!(
            fs::read(&path).unwrap() == fs::read(dir.join("compacted.jsonl")).unwrap(),
            "{}: --drop-completed writes upstream's bytes",
            dir.display()
        );
        fs::copy(dir.join("journal.jsonl"), &path).unwrap();
        let before = state(&path);
        // Records hidden in ignored lines are not dropped without consent.
        let hides = lj()
            .args(["repair", "--format=json"])
            .arg(&path)
            .output()
            .unwrap();
        let hides: Value = serde_json::from_slice(&hides.stdout).unwrap();
        let hidden = hides["files"][0]["plan"]["salvaged"]
            .as_array()
            .unwrap()
            .len();
        if hidden > 0 {
            lj().args(["compact", "--apply", "--no-backup"])
                .arg(&path)
                .assert()
                .code(2)
                .stderr(
                    contains("leasejournal repair --apply").and(contains("Nothing was changed")),
                );
            assert_eq!(state(&path), before);
        }
        lj().args(["compact", "--apply", "--no-backup", "--drop-hidden"])
            .arg(&path)
            .assert()
            .success();
        assert_eq!(
            state(&path),
            before,
            "{}: the replay state survives",
            dir.display()
        );
        // Compacting a compacted file changes nothing.
        let compacted = fs::read(&path).unwrap();
        lj().args(["compact", "--apply", "--no-backup"])
            .arg(&path)
            .assert()
            .success()
            .stdout(contains("nothing to do: already compact"));
        assert_eq!(fs::read(&path).unwrap(), compacted);
        assert!(temps(tmp.path()).is_empty());
    }
}

#[test]
fn legacy_snapshots_migrate_to_upstreams_bytes_and_only_once() {
    let mut legacy = 0;
    for dir in cases(&['s']) {
        let input = fs::read(dir.join("state.json")).unwrap();
        let unix = String::from_utf8_lossy(&input).contains("\"clock\":\"unix\"");
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(".state_tasks.json");
        fs::write(&path, &input).unwrap();
        let report = json_written::<serde_json::Value>(
            lj().args(["migrate", "--apply", "--no-backup", "--format=json"])
                .arg(&path),
        );
        let file = &report["files"][0];
        if unix {
            assert_eq!(file["note"], "nothing to migrate", "{}", dir.display());
            assert_eq!(fs::read(&path).unwrap(), input);
            continue;
        }
        legacy += 1;
        assert_eq!(file["plan"]["change"], "snapshot");
        assert_eq!(
            String::from_utf8(fs::read(&path).unwrap()).unwrap(),
            String::from_utf8(fs::read(dir.join("expected.json")).unwrap()).unwrap(),
            "{}",
            dir.display()
        );
        let again = json_written::<serde_json::Value>(
            lj().args(["migrate", "--apply", "--format=json"])
                .arg(&path),
        );
        assert_eq!(again["files"][0]["note"], "nothing to migrate");
        assert_eq!(again["files"][0]["backup"], Value::Null);
    }
    assert_eq!(legacy, 9, "the fidelity set's legacy snapshots");
}

#[test]
fn a_snapshot_diffs_to_its_migration_only_in_zeroed_times() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".state_tasks.json");
    fs::copy(fixture("fidelity/s000/state.json"), &path).unwrap();
    let report =
        json_written::<serde_json::Value>(lj().args(["migrate", "--format=json"]).arg(&path));
    let plan = &report["files"][0]["plan"];
    assert_eq!(plan["needed"], true);
    assert_eq!(plan["zeroed"].as_array().unwrap().len(), 6);
    assert_eq!(plan["dropped"].as_array().unwrap().len(), 1);
    assert_eq!(report["mode"], "dry-run");
    assert_eq!(
        fs::read(&path).unwrap(),
        fs::read(fixture("fidelity/s000/state.json")).unwrap()
    );
}

#[test]
fn migrating_a_journal_reclaims_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".work_leases.jsonl");
    fs::copy(fixture("samples/legacy_demo.input.jsonl"), &path).unwrap();
    let before = fs::read(&path).unwrap();
    let report = json_written::<serde_json::Value>(
        lj().args([
            "migrate",
            "--apply",
            "--no-backup",
            "--format=json",
            "--now=1.0",
        ])
        .arg(&path),
    );
    let file = &report["files"][0];
    assert_eq!(file["plan"]["change"], "journal");
    assert_eq!(file["plan"]["legacy_leases"].as_array().unwrap().len(), 1);
    assert_eq!(file["note"], "nothing to migrate");
    assert_eq!(file["written"], false);
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "the legacy lease stays for resume"
    );
    let out = lj()
        .args(["migrate", "--now=1.0", "--color=never"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("1 active lease off the unix clock: resume reclaims and requeues them itself (L5); nothing is reclaimed here"),
        "{text}"
    );
}

#[test]
fn migrate_rewrite_leaves_no_clock_less_record_and_keeps_legacy_leases() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".work_leases.jsonl");
    fs::copy(fixture("samples/legacy_demo.input.jsonl"), &path).unwrap();
    let (active, completed) = state(&path);
    lj().args(["migrate", "--apply", "--rewrite", "--no-backup"])
        .arg(&path)
        .assert()
        .success();
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.lines().all(|l| l.contains("\"clock\":")), "{text}");
    // Exactly upstream's compaction of it (samples/legacy_demo.jsonl, before
    // its recovery line).
    let upstream = fs::read_to_string(fixture("samples/legacy_demo.jsonl")).unwrap();
    assert_eq!(text, upstream.lines().next().unwrap().to_string() + "\n");
    assert_eq!(state(&path), (active, completed));
    lj().args(["migrate", "--apply", "--rewrite"])
        .arg(&path)
        .assert()
        .success()
        .stdout(contains("nothing to migrate"));
}

#[test]
fn repair_brings_a_glued_record_back() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("torn.jsonl");
    fs::copy(fixture("samples/torn_tail_demo.jsonl"), &path).unwrap();
    let report = json_written::<serde_json::Value>(
        lj().args(["repair", "--apply", "--format=json"]).arg(&path),
    );
    let plan = &report["files"][0]["plan"];
    assert_eq!(plan["salvaged"][0]["line"], 2);
    assert_eq!(plan["salvaged"][0]["action"], "restored");
    assert_eq!(plan["before"]["active"], 1);
    assert_eq!(plan["after"]["active"], 2);
    assert_eq!(plan["brought_back"].as_array().unwrap().len(), 1);
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&path));
    assert_eq!(v["active_count"], 2);
    assert_eq!(v["ignored"], serde_json::json!({}));
    let backup = report["files"][0]["backup"].as_str().unwrap();
    assert_eq!(
        fs::read(backup).unwrap(),
        fs::read(fixture("samples/torn_tail_demo.jsonl")).unwrap()
    );
    // Nothing is left to repair; --check says so with its exit status.
    lj().args(["repair", "--check"]).arg(&path).assert().code(0);
    fs::copy(fixture("verify/torn-tail/journal.jsonl"), &path).unwrap();
    let before = fs::read(&path).unwrap();
    lj().args(["repair", "--check"])
        .arg(&path)
        .assert()
        .code(1)
        .stdout(contains("check: nothing is written"));
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn repair_output_is_human_and_whole() {
    let dir = copy_dir(&fixture("verify/torn-tail"));
    let path = dir.path().join("journal.jsonl");
    let shown = path.display();
    lj().args(["repair", "--color=never"])
        .arg(&path)
        .assert()
        .success()
        .stderr("")
        .stdout(format!(
            "repair {shown}  (dry run: nothing is written; --apply changes the file in place)\n\
             \x20 tail        cut 18 torn bytes at offset 206 (the backup keeps them)\n\
             \x20 reclaims    none (repair never reclaims a lease)\n\
             \x20 state       1 active, 0 completed → 1 active, 0 completed\n\
             \x20 digest      2b0fbf1a629f84b9 → 2b0fbf1a629f84b9\n"
        ));
    lj().args(["repair", "--color=never", "--no-backup"])
        .arg(&path)
        .assert()
        .success()
        .stdout(contains("(--no-backup: they are not kept)"));
}

/// The writing commands, as they are called on a directory.
const WRITERS: [&[&str]; 4] = [
    &["repair"],
    &["recover", "--discard", "--all"],
    &["migrate"],
    &["compact"],
];

#[test]
fn dry_runs_write_create_and_lock_nothing() {
    let dir = copy_dir(&fixture("samples"));
    let snapshot = |d: &Path| -> Vec<(String, Vec<u8>)> {
        names(d)
            .into_iter()
            .map(|n| (n.clone(), fs::read(d.join(&n)).unwrap()))
            .collect()
    };
    let before = snapshot(dir.path());
    for cmd in WRITERS {
        lj().args(cmd.iter())
            .arg(dir.path())
            .assert()
            .success()
            .stdout(contains("dry run"));
    }
    lj().arg("recover")
        .arg(dir.path())
        .assert()
        .success()
        .stdout(contains(
            "forecast of the master's resume; nothing is written",
        ));
    assert_eq!(snapshot(dir.path()), before);
    assert!(!dir.path().join(".master-queue.lock").exists());
}

#[test]
fn a_directory_is_recovered_deferred_journal_first() {
    let dir = copy_dir(&fixture("samples"));
    let report =
        json_written::<serde_json::Value>(lj().args(["recover", "--format=json"]).arg(dir.path()));
    let files: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files.len(), 2);
    assert!(files[0].ends_with(".dispatch_protocol_deferred.jsonl"));
    assert!(files[1].ends_with(".work_leases.jsonl"));
}

#[test]
fn a_held_master_lock_refuses_with_exit_3() {
    let dir = copy_dir(&fixture("samples"));
    let lock = fs::File::create(dir.path().join(".master-queue.lock")).unwrap();
    // SAFETY: a valid descriptor.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let before = fs::read(dir.path().join(".work_leases.jsonl")).unwrap();
    for cmd in WRITERS {
        lj().args(cmd)
            .arg("--apply")
            .arg(dir.path())
            .assert()
            .code(3)
            .stdout("")
            .stderr(contains(dir.path().display().to_string()).and(contains("running master")));
    }
    assert_eq!(
        fs::read(dir.path().join(".work_leases.jsonl")).unwrap(),
        before
    );
    assert!(temps(dir.path()).is_empty());
    // --lock-timeout waits for the master to let go: the command is still
    // waiting while the lock is held, and succeeds once it is released.
    let mut child = Command::new(bin())
        .args(["compact", "--apply", "--no-backup", "--lock-timeout=20"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(child.try_wait().unwrap(), None, "it waits for the lock");
    drop(lock);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn pause_at(point: &str, marker: &Path) -> String {
    format!("{point}=pause:{}", marker.display())
}

#[test]
fn a_file_changed_between_plan_and_publish_is_not_overwritten() {
    for cmd in [
        &["compact"][..],
        &["recover", "--discard", "--all"],
        &["repair"],
    ] {
        let dir = copy_dir(&fixture("samples"));
        let path = dir.path().join(".work_leases.jsonl");
        if cmd == ["repair"] {
            // Something to repair: a torn tail.
            let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(b"{\"attempts\":1,\"clo").unwrap();
        }
        let marker = dir.path().join("planned");
        let child = Command::new(bin())
            .args(cmd)
            .arg("--apply")
            .arg(&path)
            .env("LEASEJOURNAL_FAILPOINTS", pause_at("planned", &marker))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(&marker.with_extension("reached"));
        let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"late\":true}\n").unwrap();
        drop(f);
        let appended = fs::read(&path).unwrap();
        fs::write(marker.with_extension("continue"), b"").unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("changed since it was read"),
            "{cmd:?}: {stderr}"
        );
        assert_eq!(
            fs::read(&path).unwrap(),
            appended,
            "{cmd:?}: the late append survives"
        );
        assert!(temps(dir.path()).is_empty());
        assert!(!names(dir.path()).iter().any(|n| n.contains(".bak.")));
        assert!(
            exports(&path).is_empty(),
            "{cmd:?}: no export of a discard that did not happen"
        );
    }
}

#[test]
fn a_symlinked_target_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.jsonl");
    fs::copy(fixture("samples/.work_leases.jsonl"), &real).unwrap();
    let link = dir.path().join(".work_leases.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    for cmd in WRITERS {
        lj().args(cmd)
            .arg("--apply")
            .arg(&link)
            .assert()
            .code(2)
            .stderr(contains(link.display().to_string()).and(contains("symbolic link")));
    }
    assert_eq!(
        fs::read(&real).unwrap(),
        fs::read(fixture("samples/.work_leases.jsonl")).unwrap()
    );
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// A command run as an unprivileged user when the tests run as root (root
/// writes anywhere).
fn unprivileged(args: &[&str], path: &Path) -> std::process::Output {
    let (mut cmd, _keep) = crate::support::unprivileged_command();
    cmd.args(args).arg(path);
    cmd.output().unwrap()
}

#[test]
fn a_read_only_directory_is_a_clear_error() {
    let dir = copy_dir(&fixture("samples"));
    let lock = dir.path().join(".master-queue.lock");
    fs::write(&lock, b"").unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&lock, Some(65534), Some(65534)).unwrap();
        for name in names(dir.path()) {
            if name != ".master-queue.lock" {
                fs::set_permissions(dir.path().join(name), fs::Permissions::from_mode(0o666))
                    .unwrap();
            }
        }
    }
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o555)).unwrap();
    let before = fs::read(dir.path().join(".work_leases.jsonl")).unwrap();
    for args in [
        &["compact", "--apply"][..],
        &["compact", "--apply", "--no-backup"][..],
    ] {
        let out = unprivileged(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("Permission denied") || stderr.contains("permission denied"),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    assert_eq!(
        fs::read(dir.path().join(".work_leases.jsonl")).unwrap(),
        before
    );
    assert!(temps(dir.path()).is_empty());
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
}

/// Run as root in a directory owned by another user, every file the
/// writing commands create or rewrite belongs to that user, and the master,
/// running as that user, can still open and lock its lock file.
#[test]
fn files_keep_their_owner() {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("files_keep_their_owner needs root to give files away; skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run1");
    fs::create_dir(&run).unwrap();
    for name in [".work_leases.jsonl", ".dispatch_protocol_deferred.jsonl"] {
        fs::copy(fixture("verify/torn-tail/journal.jsonl"), run.join(name)).unwrap();
    }
    fs::copy(
        fixture("verify/snapshot-legacy-clock/state.json"),
        run.join(".state_tasks.json"),
    )
    .unwrap();
    std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
    for entry in std::iter::once(run.clone()).chain(names(&run).iter().map(|n| run.join(n))) {
        std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).unwrap();
    }
    let work = run.join(".work_leases.jsonl");
    let export = run.join("dropped.jsonl");
    for args in [
        &["repair", "--apply"][..],
        &["migrate", "--apply"][..],
        &["compact", "--apply"][..],
    ] {
        lj().args(args).arg(&run).assert().success();
    }
    lj().args(["recover", "--discard", "--all", "--apply", "--export"])
        .arg(&export)
        .arg(&work)
        .assert()
        .success();
    lj().args(["compact", "--output"])
        .arg(run.join("copy.jsonl"))
        .arg(&work)
        .assert()
        .success();
    let all = names(&run);
    assert!(all.iter().any(|n| n.contains(".bak.")), "{all:?}");
    for name in &all {
        let meta = fs::metadata(run.join(name)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (65534, 65534), "{name}");
    }
    let lock = fs::metadata(run.join(".master-queue.lock")).unwrap();
    assert_eq!(lock.mode() & 0o777, 0o600);
    // The master's own open and flock, as the directory's owner.
    let status = Command::new("/bin/sh")
        .arg("-c")
        .arg("exec 9<>\"$1\" && flock -n 9")
        .arg("sh")
        .arg(run.join(".master-queue.lock"))
        .uid(65534)
        .gid(65534)
        .status();
    match status {
        Ok(status) => assert!(status.success(), "uid 65534 cannot open and lock it"),
        // No flock(1) here: take the lock through our own binary, which
        // opens it exactly as the master does.
        Err(_) => {
            let (mut cmd, _keep) = crate::support::unprivileged_command();
            let out = cmd.args(["compact", "--apply"]).arg(&run).output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn a_full_disk_is_a_clear_error() {
    use std::os::unix::process::CommandExt;
    let dir = copy_dir(&fixture("fidelity/j000"));
    let path = dir.path().join("journal.jsonl");
    let before = fs::read(&path).unwrap();
    // A file size limit below the result's size: writes fail with EFBIG.
    let mut cmd = Command::new(bin());
    cmd.args(["compact", "--apply", "--no-backup"]).arg(&path);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("file too large"), "{stderr}");
    assert!(!stderr.contains("os error"), "{stderr}");
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(temps(dir.path()).is_empty());
    // The same through the failpoint, for a disk that is simply full.
    lj().args(["compact", "--apply"])
        .arg(&path)
        .env("LEASEJOURNAL_FAILPOINTS", "temp-written=error")
        .assert()
        .code(2)
        .stderr(contains("no space left on device").and(contains("os error").not()));
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(temps(dir.path()).is_empty());
}

#[test]
fn a_result_that_does_not_replay_to_the_plan_is_never_published() {
    let cases: [(&str, &[&str]); 3] = [
        ("fidelity/j000/journal.jsonl", &["compact", "--apply"]),
        ("samples/torn_tail_demo.jsonl", &["repair", "--apply"]),
        ("fidelity/j000/journal.jsonl", &["compact", "--output"]),
    ];
    // The check reads the file while it is written, or, with no thread to
    // spare (`check-thread=none`), once it is written.
    for failpoints in [
        "temp-written=truncate",
        "check-thread=none,temp-written=truncate",
    ] {
        for (source, args) in cases {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("journal.jsonl");
            fs::copy(fixture(source), &path).unwrap();
            let before = fs::read(&path).unwrap();
            let mut cmd = lj();
            cmd.args(args);
            if args.contains(&"--output") {
                cmd.arg(dir.path().join("out.jsonl"));
            }
            cmd.arg(&path)
                .env("LEASEJOURNAL_FAILPOINTS", failpoints)
                .assert()
                .code(2)
                .stderr(contains("does not replay to the planned state"));
            assert_eq!(fs::read(&path).unwrap(), before, "{args:?}");
            assert!(temps(dir.path()).is_empty(), "{args:?}");
            assert!(!dir.path().join("out.jsonl").exists());
        }
    }
}

#[test]
fn without_a_thread_for_the_check_the_result_is_checked_after_it_is_written() {
    let dir = copy_dir(&fixture("fidelity/j000"));
    let path = dir.path().join("journal.jsonl");
    let out_file = dir.path().join("compacted.out");
    lj().args(["compact", "--drop-completed", "--output"])
        .arg(&out_file)
        .arg(&path)
        .env("LEASEJOURNAL_FAILPOINTS", "check-thread=none")
        .assert()
        .success()
        .stderr("");
    assert_eq!(
        fs::read(&out_file).unwrap(),
        fs::read(dir.path().join("compacted.jsonl")).unwrap()
    );
    assert!(temps(dir.path()).is_empty());
}

#[test]
fn output_backup_dir_and_stale_temp_cleanup() {
    let dir = copy_dir(&fixture("fidelity/j000"));
    let path = dir.path().join("journal.jsonl");
    let original = fs::read(&path).unwrap();
    let out_file = dir.path().join("compacted.out");
    lj().args(["compact", "--drop-completed", "--output"])
        .arg(&out_file)
        .arg(&path)
        .assert()
        .success();
    assert_eq!(
        fs::read(&out_file).unwrap(),
        fs::read(dir.path().join("compacted.jsonl")).unwrap()
    );
    assert_eq!(
        fs::read(&path).unwrap(),
        original,
        "--output leaves the source alone"
    );
    lj().args(["compact", "--output"])
        .arg(&out_file)
        .arg(&path)
        .assert()
        .code(2)
        .stderr(contains("already exists"));
    lj().args(["compact", "--output"])
        .arg(dir.path().join("new.jsonl"))
        .arg(fixture("samples"))
        .assert()
        .code(2)
        .stderr(contains("single file"));
    // A stale temporary file of ours is removed under the lock.
    fs::write(
        dir.path().join("journal.jsonl.leasejournal.424242.tmp"),
        b"junk",
    )
    .unwrap();
    let backups = tempfile::tempdir().unwrap();
    let report = json_written::<serde_json::Value>(
        lj().args(["compact", "--apply", "--format=json", "--backup-dir"])
            .arg(backups.path())
            .arg(&path),
    );
    let file = &report["files"][0];
    assert_eq!(file["removed_temp_files"].as_array().unwrap().len(), 1);
    let backup = PathBuf::from(file["backup"].as_str().unwrap());
    assert!(backup.starts_with(backups.path()));
    assert_eq!(fs::read(&backup).unwrap(), original);
    assert!(temps(dir.path()).is_empty());
}

// ---- crash safety -------------------------------------------------------

/// A journal of about `target` bytes written as upstream writes: mostly
/// completed leases, some reclaimed, some active, a few legacy, and a torn
/// tail.
fn generated_journal(target: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(target + 4096);
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut n = 0u64;
    while out.len() < target {
        n += 1;
        let payload = format!(
            "{{\"continuation\":null,\"focus_bytes\":\"\",\"path\":\"/afl/queue/id:{n:06},src:000001\",\"s2f_actions\":[[{},\"solve\"]],\"schedule_prefix\":[],\"sha256\":\"{:064x}\",\"target_branch\":{}}}",
            next(),
            n,
            next() % 1000
        );
        let id = WorkId::of_canonical(payload.as_bytes());
        let time = 1_754_550_000.0 + n as f64 / 8.0;
        let legacy = n.is_multiple_of(997);
        let clock = if legacy { Clock::Legacy } else { Clock::Unix };
        if n == 5000 {
            // One lease glued onto a torn fragment, for repair to split.
            out.extend_from_slice(b"{\"attempts\":1,\"clock\":\"unix\",\"id\":\"");
        }
        out.extend(lease_line(
            &id,
            &PyInt::Small((n % 7 + 1) as i64),
            time,
            &PyInt::Small(1),
            clock,
            payload.as_bytes(),
        ));
        match next() % 100 {
            0..=94 => out.extend(marker_line("done", &id, Clock::Unix, time + 1.0)),
            95..=97 => out.extend(marker_line("reclaim", &id, Clock::Unix, time + 1.0)),
            _ => {}
        }
    }
    out.extend_from_slice(b"{\"attempts\":1,\"clock\":\"unix\",\"id\":\"0123");
    out
}

struct CrashCase {
    args: &'static [&'static str],
    /// The complete result, made with --output.
    result: Vec<u8>,
    /// The original with its torn tail cut (appends seal first).
    sealed: Vec<u8>,
}

fn crash_case(dir: &Path, original: &[u8], args: &'static [&'static str]) -> CrashCase {
    let src = dir.join("source.jsonl");
    fs::write(&src, original).unwrap();
    let out = dir.join(format!("result-{}.jsonl", args.join("")));
    lj().args(args)
        .arg("--output")
        .arg(&out)
        .arg(&src)
        .assert()
        .success();
    let result = fs::read(&out).unwrap();
    let cut = original
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    CrashCase {
        args,
        result,
        sealed: original[..cut].to_vec(),
    }
}

/// Checks the journal after a kill: the complete original, the original
/// with only its torn tail cut, or the complete result. For an append the
/// kernel may also stop a multi-page write(2) between pages when SIGKILL
/// arrives mid-call, leaving the sealed original plus a prefix of the new
/// records, whose replay upstream reads as a partial recovery and which
/// the next recover completes; that state is accepted for appends only.
fn check_after_kill(case: &CrashCase, original: &[u8], got: &[u8], appends: bool, what: &str) {
    if got == original || got == case.sealed.as_slice() || got == case.result.as_slice() {
        return;
    }
    if appends && got.starts_with(&case.sealed) && case.result.starts_with(got) {
        return;
    }
    panic!(
        "{what}: after the kill the journal is {} bytes: neither the original ({}), the sealed original ({}) nor the result ({})",
        got.len(),
        original.len(),
        case.sealed.len(),
        case.result.len()
    );
}

fn run_killed(
    path: &Path,
    args: &[&str],
    failpoints: Option<String>,
    kill_after: Option<Duration>,
) {
    let mut cmd = Command::new(bin());
    cmd.args(args).arg("--apply").arg("--no-backup").arg(path);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    if let Some(fp) = failpoints {
        cmd.env("LEASEJOURNAL_FAILPOINTS", fp);
    }
    let mut child = cmd.spawn().unwrap();
    if let Some(delay) = kill_after {
        std::thread::sleep(delay);
        let _ = child.kill();
    }
    let _ = child.wait();
}

#[test]
fn sigkill_at_any_point_leaves_the_original_or_the_result() {
    let original = generated_journal(12 << 20);
    let work = tempfile::tempdir().unwrap();
    let cases = [
        (
            crash_case(work.path(), &original, &["compact", "--drop-hidden"]),
            false,
        ),
        (
            crash_case(
                work.path(),
                &original,
                &["recover", "--discard", "--all", "--now=1754560000"],
            ),
            true,
        ),
        (crash_case(work.path(), &original, &["repair"]), false),
    ];
    let points = [
        "planned",
        "backup-written",
        "temp-written",
        "before-rename",
        "after-rename",
        "tail-cut",
        "before-append",
    ];
    let mut kills = 0;
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    for (case, appends) in &cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".work_leases.jsonl");
        for point in points {
            fs::write(&path, &original).unwrap();
            run_killed(&path, case.args, Some(format!("{point}=kill")), None);
            let got = fs::read(&path).unwrap();
            check_after_kill(
                case,
                &original,
                &got,
                *appends,
                &format!("{:?} killed at {point}", case.args),
            );
            kills += 1;
        }
        // Kills at random moments (deterministic sequence).
        for round in 0..8 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            fs::write(&path, &original).unwrap();
            let delay = Duration::from_millis(rng % 1500);
            run_killed(&path, case.args, None, Some(delay));
            let got = fs::read(&path).unwrap();
            check_after_kill(
                case,
                &original,
                &got,
                *appends,
                &format!("{:?} killed after {delay:?} (round {round})", case.args),
            );
            kills += 1;
        }
        // Whatever a kill left, the next run completes the job and cleans up.
        fs::write(&path, &original).unwrap();
        run_killed(
            &path,
            case.args,
            Some("before-rename=kill,tail-cut=kill".into()),
            None,
        );
        let out = Command::new(bin())
            .args(case.args)
            .args(["--apply", "--no-backup"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            temps(dir.path()).is_empty(),
            "{:?}: stale temporary files removed",
            case.args
        );
    }
    assert_eq!(kills, 45);
}

/// The two classes an independent differential found where the tool said
/// "fine" and upstream lost state, each minimised into fixtures/disagreements.
#[test]
fn upstream_disagreements_are_settled() {
    // "time":"-0" is -0.0 to upstream; its compaction writes -0.0, which it
    // reads back as 0.0: the same state, since -0.0 == 0.0.
    let case = fixture("disagreements/minus-zero-time");
    let dir = copy_dir(&case);
    let path = dir.path().join("journal.jsonl");
    let out = dir.path().join("out.jsonl");
    lj().args(["compact", "--drop-completed", "--output"])
        .arg(&out)
        .arg(&path)
        .assert()
        .success();
    assert_eq!(
        fs::read(&out).unwrap(),
        fs::read(case.join("compacted.jsonl")).unwrap()
    );
    lj().args(["compact", "--apply"])
        .arg(&path)
        .assert()
        .success();
    // A snapshot with one invalid UTF-8 byte: upstream's strict decoding
    // fails, restore is skipped, every statistic is lost.
    let snapshot = fixture("disagreements/snapshot-invalid-utf8/state.json");
    let out = lj()
        .args(["verify", "--format=json"])
        .arg(&snapshot)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["counts"], serde_json::json!({"snapshot-corrupt": 1}));
    let message = report["findings"][0]["message"].as_str().unwrap();
    assert!(message.contains("invalid UTF-8"), "{message}");
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&snapshot));
    assert_eq!(v["restored"], Value::Null);
    lj().arg("migrate")
        .arg(&snapshot)
        .assert()
        .code(2)
        .stderr(contains("does not parse"));
}

#[test]
fn compact_keeps_hidden_records_unless_told_and_the_forecast_names_them() {
    let dir = copy_dir(&fixture("verify/glued-record"));
    let path = dir.path().join("journal.jsonl");
    let before = fs::read(&path).unwrap();
    for args in [
        &["compact"][..],
        &["compact", "--apply"],
        &["migrate", "--rewrite", "--apply"],
    ] {
        let out = lj().args(args).arg(&path).output().unwrap();
        if args[0] == "migrate" {
            // No clock-less record: nothing to rewrite, nothing dropped.
            assert_eq!(out.status.code(), Some(0), "{args:?}");
            continue;
        }
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "leasejournal: {}: 1 record is hidden in lines upstream ignores (glued, behind a byte order mark or before a zero fill) would be dropped; run `leasejournal repair --apply {}` first. Nothing was changed\n",
                path.display(),
                path.display()
            )
        );
    }
    assert_eq!(fs::read(&path).unwrap(), before);
    lj().args(["compact", "--drop-hidden", "--color=never"])
        .arg(&path)
        .assert()
        .success()
        .stdout(contains(
            "  drops       1 record hidden in lines upstream ignores (--drop-hidden; leasejournal repair would bring them back)\n",
        ));
    lj().args(["recover", "--color=never", "--now=1754550100"])
        .arg(&path)
        .assert()
        .success()
        .stdout(contains(
            format!("  hidden      1 record in lines upstream ignores: resume does not see them and cannot requeue their work; leasejournal repair --apply {} brings them back\n", path.display()),
        ));
    for (fixture_dir, onto) in [
        ("torn-tail", "glues onto the torn last line and"),
        (
            "unterminated-tail",
            "glues onto the last record, which has no newline, and",
        ),
    ] {
        lj().args(["recover", "--color=never", "--now=1754550100"])
            .arg(fixture(&format!("verify/{fixture_dir}/journal.jsonl")))
            .assert()
            .success()
            .stdout(contains(onto));
    }
}

#[test]
fn output_and_check_say_what_they_do() {
    let dir = copy_dir(&fixture("verify/torn-tail"));
    let path = dir.path().join("journal.jsonl");
    let out_file = dir.path().join("fixed.jsonl");
    lj().args(["repair", "--color=never", "--output"])
        .arg(&out_file)
        .arg(&path)
        .assert()
        .success()
        .stdout(contains("(the source file keeps them)"));
    for extra in [
        &["--no-backup"][..],
        &["--backup-dir", "/tmp"],
        &["--apply"],
    ] {
        lj().args(["repair", "--output"])
            .arg(dir.path().join("other.jsonl"))
            .args(extra)
            .arg(&path)
            .assert()
            .code(2)
            .stderr(contains("cannot be used with"));
    }
    lj().args(["recover", "--check"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(contains("recover --check goes with --discard"));
    // A directory with only a snapshot: resume has nothing to requeue.
    let snap = copy_dir(&fixture("verify/missing-journal"));
    lj().args(["recover", "--color=never"])
        .arg(snap.path())
        .assert()
        .success()
        .stdout("recover no journal: resume has no lease to reclaim and nothing to requeue\n");
}
