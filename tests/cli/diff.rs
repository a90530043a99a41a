//! `leasejournal diff`: snapshot and journal pairs with known differences
//! of every kind, through the JSON and the table.

use std::collections::BTreeSet;
use std::fs;

use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;
use serde_json::{Value, json};

use crate::support::{fixture, json_written, lj};

/// Runs diff --format json; returns (exit code, report).
fn diff_json(args: &[&str], a: &str, b: &str) -> (i32, Value) {
    let out = lj()
        .args(["diff", "--format=json"])
        .args(args)
        .arg(fixture(a))
        .arg(fixture(b))
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code().unwrap(),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}

fn find<'a>(report: &'a Value, entity: &str, field: Option<&str>, id_prefix: &str) -> &'a Value {
    report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["entity"] == entity
                && c["field"].as_str() == field
                && c["id"].as_str().unwrap_or("").starts_with(id_prefix)
        })
        .unwrap_or_else(|| panic!("no {entity} {field:?} change for {id_prefix}: {report:#}"))
}

const T1: &str = "7afaa346"; // task-1: changed
const T0: &str = "600153c1"; // task-0: removed (and its lease)
const T3: &str = "1724980a"; // task-3: lease moved
const T4: &str = "8f9ba36d"; // task-4: added (and a lease)

#[test]
fn snapshots_show_every_kind_of_change() {
    let (exit, r) = diff_json(&[], "diff/a.state.json", "diff/b.state.json");
    assert_eq!(exit, 1);
    assert_eq!(r["schema_version"], 2);
    assert_eq!(r["kind"], "snapshot");
    assert_eq!(r["identical"], false);
    assert_eq!(find(&r, "task", None, T0)["change"], "removed");
    assert_eq!(find(&r, "task", None, T4)["change"], "added");
    let completions = find(&r, "task", Some("completions"), T1);
    assert_eq!(
        (
            completions["before"].clone(),
            completions["after"].clone(),
            completions["delta"].clone()
        ),
        (json!(2), json!(5), json!(3))
    );
    assert_eq!(find(&r, "task", Some("failures"), T1)["delta"], 1);
    let reward = find(&r, "task", Some("reward"), T1);
    assert_eq!(
        (reward["before"].clone(), reward["after"].clone()),
        (json!(0.125), json!(0.3))
    );
    assert_eq!(find(&r, "task", Some("owner"), T1)["after"], 3);
    assert_eq!(find(&r, "task", Some("shard"), T1)["after"], 6);
    assert_eq!(find(&r, "task", Some("last_lease"), T1)["delta"], 60.0);
    let moved = find(&r, "lease", Some("worker"), T3);
    assert_eq!(
        (
            moved["change"].clone(),
            moved["before"].clone(),
            moved["after"].clone()
        ),
        (json!("changed"), json!(1), json!(2))
    );
    assert_eq!(find(&r, "lease", None, T0)["change"], "removed");
    assert_eq!(find(&r, "lease", None, T4)["change"], "added");
    assert_eq!(find(&r, "config", Some("shard_count"), "")["delta"], 8);
    assert_eq!(find(&r, "config", Some("worker_count"), "")["after"], 4);
    assert_eq!(find(&r, "config", Some("steal_window"), "")["after"], 32);
    assert_eq!(r["counts"]["task_changed"], 9);
    assert_eq!(r["summary"]["a"]["completions"], 5);
    assert_eq!(r["summary"]["b"]["completions"], 8);
    assert_eq!(r["summary"]["b"]["failures"], 1);
    lj().args(["diff"])
        .arg(fixture("diff/a.state.json"))
        .arg(fixture("diff/b.state.json"))
        .assert()
        .code(1)
        .stderr("")
        .stdout(contains("completions 5 → 8"))
        .stdout(contains("┆ completions     ┆ 2"))
        .stdout(contains("+3"))
        .stdout(contains("2025-08-07 07:00:10 UTC"))
        .stdout(contains("+1m"));
}

#[test]
fn filters_mute_fields_kinds_and_ids() {
    let (_, r) = diff_json(
        &["--ignore", "elapsed", "--ignore", "last_lease"],
        "diff/a.state.json",
        "diff/b.state.json",
    );
    let fields: BTreeSet<&str> = r["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert!(!fields.contains("elapsed") && !fields.contains("last_lease"));
    assert!(fields.contains("last_complete"));
    let (exit, r) = diff_json(
        &["--only", "added"],
        "diff/a.state.json",
        "diff/b.state.json",
    );
    assert_eq!(exit, 1, "filters do not make different inputs identical");
    assert!(
        r["changes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["change"] == "added")
    );
    assert_eq!(r["changes"].as_array().unwrap().len(), 2);
    let (_, r) = diff_json(&["--id", T1], "diff/a.state.json", "diff/b.state.json");
    assert!(
        r["changes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["id"].as_str().unwrap().starts_with(T1))
    );
    assert_eq!(r["changes"].as_array().unwrap().len(), 9);
}

#[test]
fn identical_inputs_exit_0() {
    for file in [
        "diff/a.state.json",
        "diff/a.jsonl",
        "samples/.state_tasks.json",
    ] {
        let (exit, r) = diff_json(&[], file, file);
        assert_eq!(exit, 0, "{file}");
        assert_eq!(r["identical"], true);
        assert_eq!(r["changes"], json!([]));
    }
    lj().arg("diff")
        .arg(fixture("diff/a.jsonl"))
        .arg(fixture("diff/a.jsonl"))
        .assert()
        .success()
        .stdout(contains("none: identical"));
}

#[test]
fn a_snapshot_against_its_migration_shows_exactly_the_zeroed_times() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("legacy.json");
    fs::copy(fixture("fidelity/s005/state.json"), &legacy).unwrap();
    let migrated = dir.path().join("migrated.json");
    let plan = json_written::<serde_json::Value>(
        lj().args(["migrate", "--format=json", "--output"])
            .arg(&migrated)
            .arg(&legacy),
    );
    let zeroed: BTreeSet<(String, String)> = plan["files"][0]["plan"]["zeroed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|z| {
            (
                z["task_id"].as_str().unwrap().to_string(),
                z["field"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(!zeroed.is_empty());
    let out = lj()
        .args(["diff", "--format=json"])
        .arg(&legacy)
        .arg(&migrated)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut changed = BTreeSet::new();
    for c in r["changes"].as_array().unwrap() {
        if c["entity"] == "config" {
            assert_eq!(
                (c["field"].clone(), c["before"].clone(), c["after"].clone()),
                (json!("clock"), json!("legacy"), json!("unix"))
            );
            continue;
        }
        assert_eq!(c["change"], "changed", "{c}");
        assert_eq!(c["after"], 0.0, "{c}");
        changed.insert((
            c["id"].as_str().unwrap().to_string(),
            c["field"].as_str().unwrap().to_string(),
        ));
    }
    assert_eq!(changed, zeroed);
}

#[test]
fn a_journal_plus_appended_records_lists_exactly_those_records() {
    let (exit, r) = diff_json(&[], "diff/a.jsonl", "diff/b.jsonl");
    assert_eq!(exit, 1);
    assert_eq!(r["kind"], "journal");
    let bytes = &r["bytes"];
    assert_eq!(bytes["relation"], "appended");
    assert_eq!(
        bytes["at_offset"],
        fs::metadata(fixture("diff/a.jsonl")).unwrap().len()
    );
    let appended: Vec<(u64, &str, &str)> = bytes["appended"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["line"].as_u64().unwrap(),
                a["op"].as_str().unwrap(),
                a["effect"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        appended,
        [
            (6, "done", "completed (worker 1)"),
            (7, "reclaim", "reclaimed from worker 1"),
            (8, "lease", "activated"),
            (9, "lease", "took over from worker 2 without a reclaim"),
        ]
    );
    assert_eq!(
        r["counts"],
        json!({"active_added": 1, "active_changed": 2, "active_removed": 2, "completed_added": 1})
    );
    let owner = find(&r, "active", Some("owner"), "c0bb847b");
    assert_eq!(
        (owner["before"].clone(), owner["after"].clone()),
        (json!(2), json!(5))
    );
    assert_eq!(find(&r, "active", Some("time"), "c0bb847b")["delta"], 10.0);
    assert_eq!(r["summary"]["a"]["completed"], 1);
    assert_eq!(r["summary"]["b"]["completed"], 2);
}

#[test]
fn diverging_journals_name_the_offset_and_the_torn_side() {
    let (exit, r) = diff_json(&[], "diff/a.jsonl", "diff/c.jsonl");
    assert_eq!(exit, 1);
    let bytes = &r["bytes"];
    assert_eq!(bytes["relation"], "diverged");
    assert_eq!(bytes["line_a"], 3);
    assert_eq!(bytes["line_b"], 3);
    assert_eq!(bytes["tail_a"], "clean");
    assert_eq!(bytes["tail_b"], "torn");
    let text = fs::read(fixture("diff/a.jsonl")).unwrap();
    let other = fs::read(fixture("diff/c.jsonl")).unwrap();
    let first = text.iter().zip(&other).position(|(x, y)| x != y).unwrap();
    assert_eq!(bytes["offset"], first as u64);
    assert_eq!(find(&r, "completed", None, "947bda90")["change"], "removed");
}

#[test]
fn history_attributes_each_change_to_the_records_in_b() {
    let (_, r) = diff_json(&["--history"], "diff/a.jsonl", "diff/b.jsonl");
    let history = r["history"].as_object().unwrap();
    let ids: BTreeSet<&str> = r["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        history.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        ids
    );
    let took_over = history
        .iter()
        .find(|(k, _)| k.starts_with("c0bb847b"))
        .unwrap()
        .1;
    let lines: Vec<u64> = took_over
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [2, 9]);
}

#[test]
fn mixed_and_unreadable_inputs_are_refused() {
    lj().arg("diff")
        .arg(fixture("diff/a.jsonl"))
        .arg(fixture("diff/a.state.json"))
        .assert()
        .code(2)
        .stdout("")
        .stderr(
            contains("cannot compare")
                .and(contains("a journal"))
                .and(contains("a snapshot")),
        );
    lj().arg("diff")
        .arg(fixture("samples"))
        .arg(fixture("samples"))
        .assert()
        .code(2)
        .stderr(contains("is a directory"));
    lj().arg("diff")
        .arg(fixture("diff/a.jsonl"))
        .arg("/nonexistent.jsonl")
        .assert()
        .code(2)
        .stderr(contains("/nonexistent.jsonl: no such file or directory"));
}

#[test]
fn colours_mark_added_removed_and_changed() {
    lj().args(["diff", "--color=always"])
        .arg(fixture("diff/a.jsonl"))
        .arg(fixture("diff/b.jsonl"))
        .assert()
        .code(1)
        .stdout(contains("\u{1b}[32madded"))
        .stdout(contains("\u{1b}[33mchanged"));
}
