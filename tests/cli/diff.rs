//! `leasejournal diff`: snapshot and journal pairs with known differences
//! of every kind, through the JSON and the table.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::golden;
use crate::schema::{self, Bytes, ChangeKind, Diff, DiffKind as Kind, RecordAt, TailKind};
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
        (4, Kind::Snapshot, false)
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
            "leasejournal: cannot compare {} (a journal) with {} (a snapshot): diff compares two journals, two snapshots, two digest ledgers or two lease tables\n",
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
            "leasejournal: neither {0} nor {0} holds a digest ledger (.state_shards/): diff compares two files, or two state directories' ledgers (name the journals or snapshots in them)\n",
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

// ---- digest ledgers -------------------------------------------------------

/// A ledger as a plain reading of its files gives it: each valid digest
/// and the shard indices of the files holding it (the files are clean:
/// one digest per line).
fn ledger_files(dir: &Path) -> BTreeMap<String, BTreeSet<u32>> {
    let mut held: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(index) = leasejournal::engine::ledger::index_of(&name) else {
            continue;
        };
        for line in fs::read_to_string(&path).unwrap().lines() {
            let line = line.trim();
            if line.len() == 64
                && line
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                held.entry(line.to_string()).or_default().insert(index);
            }
        }
    }
    held
}

/// The digests a reader at `count` shards loads.
fn loaded(held: &BTreeMap<String, BTreeSet<u32>>, count: u32) -> BTreeSet<&String> {
    held.iter()
        .filter(|(_, files)| files.iter().any(|i| *i < count))
        .map(|(d, _)| d)
        .collect()
}

/// fixtures/diff/ledger: A is 40 digests written at 16 shards (two of them
/// twice), B the same ledger re-sharded to 8 with two digests gone and
/// three new ones. Every count is checked against a plain reading of the
/// files, at the default count (every file read) and at 8.
#[test]
fn ledgers_are_compared_digest_by_digest_and_file_by_file() {
    let (dir_a, dir_b) = (
        fixture("diff/ledger/a/.state_shards"),
        fixture("diff/ledger/b/.state_shards"),
    );
    let (a, b) = (ledger_files(&dir_a), ledger_files(&dir_b));
    let added: BTreeSet<&String> = b.keys().filter(|d| !a.contains_key(*d)).collect();
    let removed: BTreeSet<&String> = a.keys().filter(|d| !b.contains_key(*d)).collect();
    let moved: BTreeSet<&String> = a
        .iter()
        .filter(|(d, files)| b.get(*d).is_some_and(|other| other != *files))
        .map(|(d, _)| d)
        .collect();
    assert_eq!((added.len(), removed.len(), moved.len()), (3, 2, 20));
    for (shards, count) in [(None, 16), (Some("8"), 8)] {
        let args: Vec<&str> = shards.map_or(vec![], |n| vec!["--state-shards", n]);
        let out = lj()
            .args(["diff", "--format=json", "--max-examples", "0"])
            .args(&args)
            .arg(&dir_a)
            .arg(&dir_b)
            .output()
            .unwrap();
        assert_eq!((out.status.code(), &out.stderr[..]), (Some(1), &b""[..]));
        let r: Diff = schema::parse(&out.stdout);
        assert_eq!((r.kind, r.identical), (Kind::Ledger, false));
        let l = r.ledger.as_ref().unwrap();
        assert_eq!(l.shard_count, count);
        assert_eq!(
            (l.added, l.removed, l.moved, l.unchanged),
            (3, 2, 20, b.len() as u64 - 3 - 20)
        );
        let (load_a, load_b) = (loaded(&a, count), loaded(&b, count));
        assert_eq!(
            (l.load_added, l.load_removed),
            (
                load_b.difference(&load_a).count() as u64,
                load_a.difference(&load_b).count() as u64
            ),
            "at {count}"
        );
        let summary = r.ledger_summary();
        assert_eq!(
            (summary.a.distinct, summary.a.loaded, summary.a.unread),
            (40, load_a.len() as u64, 40 - load_a.len() as u64)
        );
        assert_eq!((summary.b.files, summary.b.loaded), (8, 41));
        // Each shard index: what each side's file holds, and how it changed.
        for f in &l.files {
            let in_file = |side: &BTreeMap<String, BTreeSet<u32>>| -> BTreeSet<String> {
                side.iter()
                    .filter(|(_, files)| files.contains(&f.index))
                    .map(|(d, _)| d.clone())
                    .collect()
            };
            let (fa, fb) = (in_file(&a), in_file(&b));
            let gained: Vec<&String> = fb.difference(&fa).collect();
            let lost: Vec<&String> = fa.difference(&fb).collect();
            let expected = (
                fa.len() as u64,
                fb.len() as u64,
                gained.iter().filter(|d| !a.contains_key(**d)).count() as u64,
                lost.iter().filter(|d| !b.contains_key(**d)).count() as u64,
                gained.iter().filter(|d| a.contains_key(**d)).count() as u64,
                lost.iter().filter(|d| b.contains_key(**d)).count() as u64,
            );
            assert_eq!(
                (
                    f.digests_a,
                    f.digests_b,
                    f.added,
                    f.removed,
                    f.moved_in,
                    f.moved_out
                ),
                expected,
                "{}",
                f.name
            );
            assert_eq!(f.read, f.index < count);
        }
        // Every change listed (--max-examples 0), each with its files.
        let files_of = |files: &BTreeSet<u32>| -> serde_json::Value {
            files
                .iter()
                .map(|i| format!("processed.{i:03}.log"))
                .collect()
        };
        let mut expected: Vec<(ChangeKind, String, serde_json::Value, serde_json::Value)> =
            Vec::new();
        expected.extend(added.iter().map(|d| {
            (
                ChangeKind::Added,
                d.to_string(),
                json!(null),
                files_of(&b[*d]),
            )
        }));
        expected.extend(removed.iter().map(|d| {
            (
                ChangeKind::Removed,
                d.to_string(),
                files_of(&a[*d]),
                json!(null),
            )
        }));
        expected.extend(moved.iter().map(|d| {
            let lost = a[*d].difference(&b[*d]).copied().collect();
            let gained = b[*d].difference(&a[*d]).copied().collect();
            (
                ChangeKind::Changed,
                d.to_string(),
                files_of(&lost),
                files_of(&gained),
            )
        }));
        let listed: Vec<(ChangeKind, String, serde_json::Value, serde_json::Value)> = r
            .changes
            .iter()
            .map(|c| {
                assert_eq!(c.entity, "digest");
                assert_eq!(
                    c.field.as_deref(),
                    (c.change == ChangeKind::Changed).then_some("files")
                );
                (
                    c.change,
                    c.id.clone().unwrap(),
                    c.before.clone(),
                    c.after.clone(),
                )
            })
            .collect();
        assert_eq!(listed, expected);
        assert_eq!(
            r.counts,
            [
                ("digest_added".to_string(), 3),
                ("digest_changed".to_string(), 20),
                ("digest_removed".to_string(), 2)
            ]
            .into()
        );
    }
    // The tables: per shard index, then the changes.
    golden::assert_case("diff.ledgers");
    golden::assert_case("diff.ledgers-of-state-directories");
}

/// `--max-examples N` lists the N smallest digests of each kind; the
/// counts stay exact; the filters choose what is counted and listed, and
/// decide the exit status as they do for journals.
#[test]
fn ledger_examples_are_the_smallest_and_filters_count_what_they_keep() {
    let (a, b) = ("diff/ledger/a/.state_shards", "diff/ledger/b/.state_shards");
    let (_, all) = diff_json(&["--max-examples", "0"], a, b);
    let (exit, two) = diff_json(&["--max-examples", "2"], a, b);
    assert_eq!(exit, 1);
    assert_eq!(two.counts, all.counts, "counts are exact");
    assert_eq!(two.ledger.as_ref().unwrap().max_examples, 2);
    for kind in [ChangeKind::Added, ChangeKind::Removed, ChangeKind::Changed] {
        let of = |r: &Diff| -> Vec<schema::Change> {
            r.changes
                .iter()
                .filter(|c| c.change == kind)
                .cloned()
                .collect()
        };
        let (listed, every) = (of(&two), of(&all));
        assert_eq!(
            listed[..],
            every[..2],
            "{kind:?}: the two smallest, files and all"
        );
    }
    golden::assert_case("diff.ledgers-max-examples");
    // --only, --id and --ignore files: counted and listed as kept.
    let first_moved = all
        .changes
        .iter()
        .find(|c| c.change == ChangeKind::Changed)
        .and_then(|c| c.id.clone())
        .unwrap();
    let prefix = &first_moved[..10];
    let (exit, only) = diff_json(&["--only", "changed", "--id", prefix], a, b);
    assert_eq!(exit, 1);
    assert_eq!(only.counts, [("digest_changed".to_string(), 1)].into());
    assert_eq!(only.changes.len(), 1);
    assert_eq!(only.changes[0].id.as_deref(), Some(&*first_moved));
    assert_eq!(
        only.ledger,
        all.ledger.clone().map(|mut l| {
            l.max_examples = 10;
            l
        }),
        "the ledger's totals ignore the filters"
    );
    let (exit, none) = diff_json(&["--only", "removed", "--id", prefix], a, b);
    assert_eq!(
        (exit, none.identical, none.changes.len()),
        (0, false, 0),
        "nothing left to show"
    );
    let (_, unmoved) = diff_json(&["--ignore", "files"], a, b);
    assert_eq!(
        unmoved.counts,
        [
            ("digest_added".to_string(), 3),
            ("digest_removed".to_string(), 2)
        ]
        .into()
    );
    // --quiet: the status alone.
    lj().args(["diff", "--quiet"])
        .arg(fixture(a))
        .arg(fixture(b))
        .assert()
        .code(1)
        .stdout("")
        .stderr("");
    let (exit, same) = diff_json(&[], a, a);
    assert_eq!((exit, same.identical, same.changes.len()), (0, true, 0));
    golden::assert_case("diff.ledgers-identical");
}

/// A state directory without `.state_shards/` is a ledger upstream loads
/// nothing from; two shard files compare as one-file ledgers; a ledger
/// cannot be compared with a journal, and a shard file named that is not
/// there is an error.
#[test]
fn state_directories_shard_files_and_mixed_sides() {
    let (exit, r) = diff_json(&[], "samples", "diff/ledger/b");
    assert_eq!(exit, 1);
    let summary = r.ledger_summary();
    assert_eq!(summary.a.path, None);
    assert_eq!((summary.a.distinct, summary.b.distinct), (0, 41));
    assert_eq!(r.ledger.as_ref().unwrap().added, 41);
    assert_eq!(
        r.notes,
        [
            "only the digest ledgers are compared: name the journals or snapshots to compare those"
                .to_string(),
            format!(
                "{} has no digest ledger (.state_shards/): upstream loads no digest from it",
                fixture("samples").display()
            )
        ]
    );
    let (exit, files) = diff_json(
        &[],
        "diff/ledger/a/.state_shards/processed.001.log",
        "diff/ledger/b/.state_shards/processed.001.log",
    );
    assert_eq!(exit, 1);
    let l = files.ledger.as_ref().unwrap();
    assert_eq!(
        (l.shard_count, l.files.len(), l.added, l.moved),
        (2, 1, 3, 0)
    );
    golden::assert_case("diff.ledger-files");
    golden::assert_case("diff.ledger-and-journal");
    let missing = fixture("diff/ledger/a/.state_shards/processed.000.log");
    lj().arg("diff")
        .arg(&missing)
        .arg(fixture("diff/ledger/b/.state_shards/processed.000.log"))
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: no such file or directory\n",
            missing.display()
        ));
}

/// A directory and a FIFO at shard files' names hold no digest and are
/// never opened (a FIFO would block); a shard file that cannot be read is
/// the error, naming it, and nothing is written.
#[test]
fn special_and_unreadable_shard_files() {
    let top = tempfile::tempdir().unwrap();
    let (a, b) = (top.path().join("a"), top.path().join("b"));
    crate::support::copy_dir_to(&fixture("diff/ledger/b/.state_shards"), &a);
    crate::support::copy_dir_to(&fixture("diff/ledger/b/.state_shards"), &b);
    fs::remove_file(b.join("processed.002.log")).unwrap();
    fs::create_dir(b.join("processed.002.log")).unwrap();
    fs::remove_file(b.join("processed.003.log")).unwrap();
    let fifo = std::ffi::CString::new(b.join("processed.003.log").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let shards = |side: &Path| -> (PathBuf, PathBuf) {
        let dir = side.with_extension("state");
        fs::create_dir(&dir).unwrap();
        fs::rename(side, dir.join(".state_shards")).unwrap();
        (dir.clone(), dir.join(".state_shards"))
    };
    let ((_, a), (_, b)) = (shards(&a), shards(&b));
    let out = lj()
        .args(["diff", "--format=json"])
        .arg(&a)
        .arg(&b)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Diff = schema::parse(&out.stdout);
    let l = r.ledger.unwrap();
    let row = |i: usize| {
        let f = &l.files[i];
        (f.a.as_deref(), f.b.as_deref(), f.digests_b, f.removed)
    };
    let in_a = |name: &str| {
        ledger_files(&a)
            .values()
            .filter(|f| f.contains(&name.parse::<u32>().unwrap()))
            .count() as u64
    };
    assert_eq!(row(2), (Some("file"), Some("dir"), 0, in_a("2")));
    assert_eq!(row(3), (Some("file"), Some("other"), 0, in_a("3")));
    golden::assert_run(
        "test.diff.ledger-dir-and-fifo",
        "diff $DIR/a.state/.state_shards $DIR/b.state/.state_shards",
        lj().arg("diff")
            .arg(&a)
            .arg(&b)
            .env("COLUMNS", "100")
            .timeout(Duration::from_secs(60)),
        Some(top.path()),
    );
    // Unreadable: as a user who may not read it (root reads anything).
    let before = crate::support::names(&a);
    let unreadable = a.join("processed.005.log");
    fs::set_permissions(&unreadable, fs::Permissions::from_mode(0o000)).unwrap();
    for dir in [top.path(), a.parent().unwrap(), &a, b.parent().unwrap(), &b] {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (mut cmd, _keep) = crate::support::unprivileged_command();
    let out = cmd.arg("diff").arg(&a).arg(&b).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "leasejournal: {}: permission denied\n",
            unreadable.display()
        )
    );
    assert_eq!(crate::support::names(&a), before, "nothing written");
}
