//! `leasejournal diff`: snapshot and journal pairs with known differences
//! of every kind, through the JSON and the table.

use std::collections::BTreeSet;
use std::fs;

use serde_json::json;

use crate::golden;
use crate::schema::{self, Bytes, ChangeKind, Diff, Kind, RecordAt, TailKind};
use crate::support::{fixture, json_written, lj};

/// Runs diff --format json; returns (exit code, report).
fn diff_json(args: &[&str], a: &str, b: &str) -> (i32, Diff) {
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
    (out.status.code().unwrap(), schema::parse(&out.stdout))
}

const T1: &str = "7afaa346"; // task-1: changed
const T0: &str = "600153c1"; // task-0: removed (and its lease)
const T3: &str = "1724980a"; // task-3: lease moved
const T4: &str = "8f9ba36d"; // task-4: added (and a lease)

#[test]
fn snapshots_show_every_kind_of_change() {
    let (exit, r) = diff_json(&[], "diff/a.state.json", "diff/b.state.json");
    assert_eq!(exit, 1);
    assert_eq!(
        (r.schema_version, r.kind, r.identical),
        (2, Kind::Snapshot, false)
    );
    assert_eq!(r.find("task", None, T0).change, ChangeKind::Removed);
    assert_eq!(r.find("task", None, T4).change, ChangeKind::Added);
    // (before, after, delta) of a field.
    let values = |entity: &str, field: &str, id: &str| {
        let c = r.find(entity, Some(field), id);
        (c.before.clone(), c.after.clone(), c.delta.clone())
    };
    assert_eq!(
        values("task", "completions", T1),
        (json!(2), json!(5), Some(json!(3)))
    );
    assert_eq!(
        values("task", "failures", T1),
        (json!(0), json!(1), Some(json!(1)))
    );
    assert_eq!(
        values("task", "reward", T1),
        (json!(0.125), json!(0.3), Some(json!(0.175)))
    );
    assert_eq!(
        values("task", "owner", T1),
        (json!(2), json!(3), Some(json!(1)))
    );
    assert_eq!(
        values("task", "shard", T1),
        (json!(5), json!(6), Some(json!(1)))
    );
    assert_eq!(values("task", "last_lease", T1).2, Some(json!(60.0)));
    let moved = r.find("lease", Some("worker"), T3);
    assert_eq!(
        (
            moved.change,
            moved.before.clone(),
            moved.after.clone(),
            moved.delta.clone()
        ),
        (ChangeKind::Changed, json!(1), json!(2), None)
    );
    assert_eq!(r.find("lease", None, T0).change, ChangeKind::Removed);
    assert_eq!(r.find("lease", None, T4).change, ChangeKind::Added);
    assert_eq!(
        values("config", "shard_count", ""),
        (json!(8), json!(16), Some(json!(8)))
    );
    assert_eq!(values("config", "worker_count", "").1, json!(4));
    assert_eq!(values("config", "steal_window", "").1, json!(32));
    assert_eq!(r.counts["task_changed"], 9);
    let summary = r.snapshot_summary();
    assert_eq!(
        (
            summary.a.completions.as_u64(),
            summary.b.completions.as_u64(),
            summary.b.failures.as_u64()
        ),
        (Some(5), Some(8), Some(1))
    );
    // "completions 5 → 8", then a row per change: "completions ┆ 2 ┆ 5 ┆ +3".
    golden::assert_case("diff.snapshots");
}

#[test]
fn filters_mute_fields_kinds_and_ids() {
    let (_, r) = diff_json(
        &["--ignore", "elapsed", "--ignore", "last_lease"],
        "diff/a.state.json",
        "diff/b.state.json",
    );
    let fields: BTreeSet<&str> = r
        .changes
        .iter()
        .filter_map(|c| c.field.as_deref())
        .collect();
    assert_eq!(
        fields,
        BTreeSet::from([
            "completions",
            "failures",
            "last_complete",
            "owner",
            "reward",
            "shard",
            "shard_count",
            "steal_window",
            "total_generated",
            "worker",
            "worker_count"
        ])
    );
    golden::assert_case("diff.snapshots-ignore");
    let (exit, r) = diff_json(
        &["--only", "added"],
        "diff/a.state.json",
        "diff/b.state.json",
    );
    assert_eq!(exit, 1, "filters do not make different inputs identical");
    let added: Vec<(&str, ChangeKind, &str)> = r
        .changes
        .iter()
        .map(|c| (c.entity.as_str(), c.change, &c.id.as_deref().unwrap()[..8]))
        .collect();
    assert_eq!(
        added,
        [
            ("task", ChangeKind::Added, T4),
            ("lease", ChangeKind::Added, T4)
        ]
    );
    golden::assert_case("diff.snapshots-only-added");
    let (_, r) = diff_json(&["--id", T1], "diff/a.state.json", "diff/b.state.json");
    assert!(
        r.changes
            .iter()
            .all(|c| c.id.as_deref().unwrap().starts_with(T1))
    );
    assert_eq!(r.changes.len(), 9);
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
        assert!(r.identical);
        assert_eq!(r.changes, []);
        assert_eq!(r.counts, Default::default());
    }
    // "none: identical".
    golden::assert_case("diff.journals-identical");
    golden::assert_case("diff.snapshots-identical");
}

#[test]
fn a_snapshot_against_its_migration_shows_exactly_the_zeroed_times() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("legacy.json");
    fs::copy(fixture("fidelity/s005/state.json"), &legacy).unwrap();
    let migrated = dir.path().join("migrated.json");
    let plan: schema::Migrate = json_written(
        lj().args(["migrate", "--format=json", "--output"])
            .arg(&migrated)
            .arg(&legacy),
    );
    let schema::Migration::Snapshot(plan) = &plan.only().plan else {
        panic!("a snapshot plan: {plan:?}");
    };
    let zeroed: BTreeSet<(String, String)> = plan
        .zeroed
        .iter()
        .map(|z| (z.task_id.clone(), z.field.clone()))
        .collect();
    // s005's legacy last_lease/last_complete times that are not 0.0.
    assert_eq!(zeroed.len(), 19);
    let out = lj()
        .args(["diff", "--format=json"])
        .arg(&legacy)
        .arg(&migrated)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let r: Diff = schema::parse(&out.stdout);
    let mut changed = BTreeSet::new();
    for c in &r.changes {
        if c.entity == "config" {
            assert_eq!(
                (c.field.as_deref(), c.before.clone(), c.after.clone()),
                (Some("clock"), json!("legacy"), json!("unix"))
            );
            continue;
        }
        assert_eq!(c.change, ChangeKind::Changed, "{c:?}");
        assert_eq!(c.after, 0.0, "{c:?}");
        changed.insert((c.id.clone().unwrap(), c.field.clone().unwrap()));
    }
    assert_eq!(changed, zeroed);
}

#[test]
fn a_journal_plus_appended_records_lists_exactly_those_records() {
    let (exit, r) = diff_json(&[], "diff/a.jsonl", "diff/b.jsonl");
    assert_eq!(exit, 1);
    assert_eq!(r.kind, Kind::Journal);
    let Some(Bytes::Appended {
        at_offset,
        appended,
        glued_onto_a_torn_tail,
    }) = &r.bytes
    else {
        panic!("appended: {:?}", r.bytes);
    };
    assert_eq!(
        *at_offset,
        fs::metadata(fixture("diff/a.jsonl")).unwrap().len()
    );
    assert!(!glued_onto_a_torn_tail);
    let appended: Vec<(u64, &str, &str)> = appended
        .iter()
        .map(|a| (a.line, a.op.as_str(), a.effect.as_str()))
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
        r.counts,
        [
            ("active_added".to_string(), 1),
            ("active_changed".to_string(), 2),
            ("active_removed".to_string(), 2),
            ("completed_added".to_string(), 1)
        ]
        .into()
    );
    let owner = r.find("active", Some("owner"), "c0bb847b");
    assert_eq!(
        (owner.before.clone(), owner.after.clone()),
        (json!(2), json!(5))
    );
    assert_eq!(
        r.find("active", Some("time"), "c0bb847b").delta,
        Some(json!(10.0))
    );
    let summary = r.journal_summary();
    assert_eq!(
        (
            summary.a.active,
            summary.a.completed,
            summary.b.active,
            summary.b.completed
        ),
        (3, 1, 2, 2)
    );
    golden::assert_case("diff.journals-appended");
}

#[test]
fn diverging_journals_name_the_offset_and_the_torn_side() {
    let (exit, r) = diff_json(&[], "diff/a.jsonl", "diff/c.jsonl");
    assert_eq!(exit, 1);
    let text = fs::read(fixture("diff/a.jsonl")).unwrap();
    let other = fs::read(fixture("diff/c.jsonl")).unwrap();
    let first = text.iter().zip(&other).position(|(x, y)| x != y).unwrap();
    assert_eq!(
        r.bytes,
        Some(Bytes::Diverged {
            offset: first as u64,
            line_a: 3,
            line_b: 3,
            tail_a: TailKind::Clean,
            tail_b: TailKind::Torn
        })
    );
    assert_eq!(
        r.find("completed", None, "947bda90").change,
        ChangeKind::Removed
    );
    golden::assert_case("diff.journals-diverged");
}

#[test]
fn history_attributes_each_change_to_the_records_in_b() {
    let (_, r) = diff_json(&["--history"], "diff/a.jsonl", "diff/b.jsonl");
    let history = r.history.as_ref().unwrap();
    let ids: BTreeSet<&str> = r.changes.iter().map(|c| c.id.as_deref().unwrap()).collect();
    assert_eq!(
        history.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        ids
    );
    let took_over: Vec<&RecordAt> = history
        .iter()
        .filter(|(k, _)| k.starts_with("c0bb847b"))
        .flat_map(|(_, records)| records)
        .collect();
    let lines: Vec<(u64, &str)> = took_over
        .iter()
        .map(|h| (h.line, h.effect.as_str()))
        .collect();
    assert_eq!(
        lines,
        [
            (2, "activated"),
            (9, "took over from worker 2 without a reclaim")
        ]
    );
    golden::assert_case("diff.journals-history");
}

#[test]
fn mixed_and_unreadable_inputs_are_refused() {
    let (a, state) = (fixture("diff/a.jsonl"), fixture("diff/a.state.json"));
    lj().arg("diff")
        .arg(&a)
        .arg(&state)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: cannot compare {} (a journal) with {} (a snapshot): diff compares two journals or two snapshots\n",
            a.display(),
            state.display()
        ));
    lj().arg("diff")
        .arg(fixture("samples"))
        .arg(fixture("samples"))
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: is a directory; diff compares two files (name the journals or snapshots in it)\n",
            fixture("samples").display()
        ));
    lj().arg("diff")
        .arg(&a)
        .arg("/nonexistent.jsonl")
        .assert()
        .code(2)
        .stdout("")
        .stderr("leasejournal: /nonexistent.jsonl: no such file or directory\n");
}

#[test]
fn colours_mark_added_removed_and_changed() {
    // "\u{1b}[32madded" and "\u{1b}[33mchanged".
    golden::assert_run(
        "test.diff.colour",
        "diff --color=always fixtures/diff/a.jsonl fixtures/diff/b.jsonl",
        lj().args([
            "diff",
            "--color=always",
            "fixtures/diff/a.jsonl",
            "fixtures/diff/b.jsonl",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR")),
        None,
    );
}
