//! `repair` of a fenced lease table, on copies of the upstream cases that
//! hold each kind of damage (t006: left-over temporary files and rejected
//! records; t009: rejected records and a directory no scan lists; t017: a
//! directory at a lock path, rejected records, a crashed committing
//! record; t019: a file at a shard path and records written at another
//! shard count; t026: a directory at a lock path and a torn record): the
//! dry run's whole output, `--check`, the refusals of `--apply` (without
//! `--all-masters-stopped`, and while a record lock is held here), and
//! `--apply` itself — the quarantine holds the original bytes, every lock
//! file is still there, upstream's view read again is what is expected,
//! and a second run has nothing to do.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use leasejournal::engine::journal::WorkId;
use leasejournal::operations::table::{TableOptions, read};

use crate::golden::{assert_golden, run};
use crate::schema::{Repair, TableCounts, TableRepair, parse};
use crate::support::{hold_master_lock, lease_of, lj};
use crate::table::{Expected, cases};

/// What a tree holds: each path below the root, with its bytes (`None`
/// for a directory).
type Tree = BTreeMap<String, Option<Vec<u8>>>;

fn tree(root: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                out.insert(rel, None);
                walk(root, &path, out);
            } else {
                out.insert(rel, Some(fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Tree::new();
    walk(root, root, &mut out);
    out
}

/// The case `name`, copied: the temporary directory (kept alive), the
/// root of the copy and what upstream did.
fn case(name: &str) -> (tempfile::TempDir, PathBuf, Expected) {
    let (_, dir, root, expected) = cases()
        .into_iter()
        .find(|(n, ..)| n == name)
        .unwrap_or_else(|| panic!("no case {name}"));
    (dir, root, expected)
}

/// `--reshard` where the case's records were written at another count
/// than the one it is read at (the masters' count changed).
fn reshard(expected: &Expected) -> Vec<&'static str> {
    if expected.write_shard_count == expected.shard_count {
        Vec::new()
    } else {
        vec!["--reshard"]
    }
}

fn repair(root: &Path, expected: &Expected, extra: &[&str]) -> assert_cmd::Command {
    let mut cmd = lj();
    cmd.env("COLUMNS", "100")
        .env("NO_COLOR", "1")
        .env_remove("SYMCC_MULTI_MASTER_LEASE_SHARDS")
        .env("SYMCC_WORK_LEASE_TTL", expected.lease_ttl.to_string())
        .env_remove("SYMCC_MULTI_MASTER_TARGET_LEASE_TTL")
        .env_remove("SYMCC_TIMEOUT")
        .arg("repair")
        .args(["--lease-shards", &expected.shard_count.to_string()])
        .args(reshard(expected))
        .args(["--now", &expected.now.to_string()])
        .args(extra)
        .arg(root);
    cmd
}

fn apply_json(root: &Path, expected: &Expected, extra: &[&str]) -> (i32, TableRepair) {
    let mut args = vec!["--apply", "--all-masters-stopped", "--format", "json"];
    args.extend_from_slice(extra);
    let out = repair(root, expected, &args).output().unwrap();
    let report: Repair = parse(&out.stdout);
    assert_eq!(report.schema_version, 2);
    let mut tables = report.tables.expect("tables");
    assert_eq!(tables.len(), 1);
    (out.status.code().unwrap(), tables.remove(0))
}

fn counts(expected: &Expected) -> TableCounts {
    TableCounts {
        leased: expected.counts["leased"],
        committing: expected.counts["committing"],
        expired: expected.counts["expired"],
        done: expected.counts["done"],
    }
}

/// Upstream's view of the table, read by the library as the scans see it.
fn upstream(root: &Path, expected: &Expected) -> leasejournal::operations::table::TableReport {
    read(
        root,
        &TableOptions {
            kind: None,
            lease_shards: Some(expected.shard_count),
            ttl: Some(expected.lease_ttl),
            now: expected.now,
            skew: 300.0,
            history: None,
        },
    )
    .unwrap()
}

/// The cases, with what the table read again holds after `--apply`: the
/// ids still rejected, and `snapshot_counts` (`None`: as before).
const CASES: [(&str, &[&str], Option<TableCounts>); 5] = [
    ("t006", &[], None),
    // The record in x11/ is not moved: upstream never builds that name.
    (
        "t009",
        &["1176a9ab3e08e43883920774d2500760b13e536809859fad7043d219591a22ab"],
        None,
    ),
    ("t017", &[], None),
    // Eight leased records written at three shards, read at six, count
    // again (four of them expired at the case's now).
    (
        "t019",
        &[],
        Some(TableCounts {
            leased: 17,
            committing: 0,
            expired: 10,
            done: 0,
        }),
    ),
    ("t026", &[], None),
];

/// Each case's golden dry run.
const GOLDEN: [(&str, &str); 5] = [
    ("t006", "test.table_repair.t006.dry-run"),
    ("t009", "test.table_repair.t009.dry-run"),
    ("t017", "test.table_repair.t017.dry-run"),
    ("t019", "test.table_repair.t019.dry-run"),
    ("t026", "test.table_repair.t026.dry-run"),
];

#[test]
fn the_dry_run_shows_the_whole_plan_and_check_says_there_is_work() {
    for (name, golden) in GOLDEN {
        let (dir, root, expected) = case(name);
        let before = tree(&root);
        let ran = run(&mut repair(&root, &expected, &[]), Some(dir.path()));
        assert_golden(
            golden,
            &ran.render(&format!(
                "$ leasejournal repair --lease-shards {}{} --now {} $DIR/{}",
                expected.shard_count,
                reshard(&expected)
                    .iter()
                    .map(|a| format!(" {a}"))
                    .collect::<String>(),
                expected.now,
                expected.root
            )),
        );
        let check = repair(&root, &expected, &["--check"]).output().unwrap();
        assert_eq!(check.status.code(), Some(1), "{name}: --check");
        assert_eq!(
            tree(&root),
            before,
            "{name}: a dry run and --check write nothing"
        );
    }
}

#[test]
fn apply_without_the_operators_word_is_refused_and_changes_nothing() {
    let (_dir, root, expected) = case("t017");
    let before = tree(&root);
    let out = repair(&root, &expected, &["--apply"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "leasejournal: {}: --apply needs --all-masters-stopped: no lock covers a whole table and masters on other hosts share it, so only you can say that every master using it, on every host, is stopped. Nothing was changed; a dry run shows the plan\n",
            root.display()
        )
    );
    assert_eq!(tree(&root), before, "byte for byte");
}

#[test]
fn apply_quarantines_and_moves_keeping_every_byte_and_every_lock() {
    for (name, still_rejected, after) in CASES {
        let (_dir, root, expected) = case(name);
        let before = tree(&root);
        let (code, t) = apply_json(&root, &expected, &[]);
        assert_eq!(code, 0, "{name}");
        assert!(t.written, "{name}");
        assert!(!t.actions.is_empty(), "{name}");
        for a in &t.actions {
            assert_eq!(a.state, "done", "{name}: {a:?}");
            let moved = tree_entry(&before, &a.path);
            assert_eq!(
                entry(&root, &a.to),
                moved,
                "{name}: {} holds what {} held",
                a.to,
                a.path
            );
            if a.fix != "misplaced" {
                assert!(
                    a.to.starts_with(".leasejournal-quarantine/"),
                    "{name}: {a:?}"
                );
            }
        }
        // Every regular lock file is where it was, as it was.
        for (path, bytes) in &before {
            if path.ends_with(".json.lock") && bytes.is_some() {
                assert_eq!(
                    entry(&root, path),
                    bytes.clone(),
                    "{name}: lock file {path} kept"
                );
            }
        }
        let reread = t.reread.as_ref().expect("re-read");
        assert!(reread.still_there.is_empty(), "{name}");
        let view = upstream(&root, &expected);
        let rejected: Vec<String> = view.rejected.iter().map(WorkId::to_hex).collect();
        assert_eq!(rejected, still_rejected, "{name}: rejected after");
        assert_eq!(
            reread.rejected, still_rejected,
            "{name}: the report's re-read"
        );
        assert!(view.misplaced.is_empty(), "{name}: misplaced after");
        assert!(view.temp_files.is_empty(), "{name}: temporary files after");
        assert!(view.bad_locks.is_empty(), "{name}: bad lock paths after");
        let c = view.counts;
        let got = TableCounts {
            leased: c.leased,
            committing: c.committing,
            expired: c.expired,
            done: c.done,
        };
        assert_eq!(
            got,
            after.unwrap_or(counts(&expected)),
            "{name}: counts after"
        );
        assert_eq!(reread.counts, got, "{name}: the report's re-read counts");
        // A second run has nothing to do and changes nothing.
        let again = tree(&root);
        let (code, t) = apply_json(&root, &expected, &[]);
        assert_eq!((code, t.actions.len(), t.written), (0, 0, false), "{name}");
        assert_eq!(tree(&root), again, "{name}: the second run");
        let check = repair(&root, &expected, &["--check"]).output().unwrap();
        assert_eq!(check.status.code(), Some(0), "{name}: --check after");
    }
}

fn tree_entry(tree: &Tree, rel: &str) -> Option<Vec<u8>> {
    tree.get(rel).cloned().expect("in the tree before")
}

fn entry(root: &Path, rel: &str) -> Option<Vec<u8>> {
    let path = root.join(rel);
    let meta = fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    (!meta.is_dir()).then(|| fs::read(&path).unwrap())
}

#[test]
fn archive_done_moves_the_done_records_and_says_what_it_gives_up() {
    let (_dir, root, expected) = case("t017");
    let before = tree(&root);
    let (code, t) = apply_json(&root, &expected, &["--archive-done", "--older-than", "0"]);
    assert_eq!(code, 0);
    let archived: Vec<_> = t
        .actions
        .iter()
        .filter(|a| a.fix == "archive-done")
        .collect();
    // Of the four done records, one was completed after the case's now
    // (a clock ahead): not yet 0 seconds old, it stays.
    assert_eq!(expected.counts["done"], 4);
    assert_eq!(archived.len(), 3);
    for a in archived {
        assert!(
            a.effect
                .starts_with("gives up: this exact id can be claimed")
        );
        assert!(a.to.starts_with(".leasejournal-archive/"));
        assert_eq!(entry(&root, &a.to), tree_entry(&before, &a.path));
    }
    let view = upstream(&root, &expected);
    assert_eq!(view.counts.done, 1);
    // Nothing done is old enough: nothing is archived.
    let (_dir, root, expected) = case("t017");
    let out = repair(
        &root,
        &expected,
        &["--archive-done", "--older-than", "1e9", "--format", "json"],
    )
    .output()
    .unwrap();
    let report: Repair = parse(&out.stdout);
    let t = &report.tables.unwrap()[0];
    assert!(t.actions.iter().all(|a| a.fix != "archive-done"));
}

#[test]
fn a_record_lock_held_on_this_host_makes_apply_refuse() {
    let (_dir, root, expected) = case("t017");
    let lock = fs::read_dir(root.join("002"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".json.lock") && p.is_file())
        .expect("a lock file");
    let Some(mut holder) = hold_master_lock(&lock, "a held record lock") else {
        return;
    };
    let before = tree(&root);
    let out = repair(&root, &expected, &["--apply", "--all-masters-stopped"])
        .output()
        .unwrap();
    let pid = holder.id();
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let rel = lock.strip_prefix(&root).unwrap().display().to_string();
    assert!(
        stderr.starts_with(&format!(
            "leasejournal: {}: a process on this host is using the table (pid ",
            root.display()
        )) && stderr.contains(&format!(" holds {rel})")),
        "{stderr}"
    );
    assert!(stderr.contains("pid "), "{stderr} names {pid}");
    assert_eq!(tree(&root), before, "nothing changed");
}

#[test]
fn a_state_directory_names_its_table_without_repairing_it() {
    let (dir, root, expected) = case("t017");
    let state = dir.path();
    fs::write(
        state.join(".work_leases.jsonl"),
        lease_of("seed", 1, 1754550000.0),
    )
    .unwrap();
    let before = tree(&root);
    let out = repair(state, &expected, &["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report: Repair = parse(&out.stdout);
    assert_eq!(report.tables, None);
    assert_eq!(
        report.tables_not_named,
        Some(vec![root.display().to_string()])
    );
    let human = repair(state, &expected, &[]).output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.ends_with(&format!(
            "note: the fenced lease table at {0} is repaired only when named: leasejournal repair --all-masters-stopped {0}\n",
            root.display()
        )),
        "{text}"
    );
    assert_eq!(tree(&root), before);
}
