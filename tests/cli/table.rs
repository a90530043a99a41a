//! The fenced lease tables against upstream: every
//! `fixtures/multimaster/tNNN/` case was built by upstream's real
//! `FencedWorkLeaseTable` / `FencedTargetLeaseTable` and then damaged (see
//! `fixtures/multimaster/README.md`); our reader must give exactly what
//! upstream's `recover_expired_records`, `snapshot_counts`, reader and a
//! fresh `claim` gave. Git keeps no empty directory, so the directories a
//! case holds at lock paths are made again from its `expected.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use leasejournal::engine::journal::WorkId;
use leasejournal::engine::table::{self, ClaimOutcome, TableKind};
use leasejournal::operations::table::{TableOptions, TableReport, claim_probe, read};
use serde::Deserialize;

use crate::support::{fixture, json_ok, lj};

/// What upstream's classes did with a case (its `expected.json`).
#[derive(Deserialize)]
pub struct Expected {
    pub kind: String,
    pub root: String,
    pub shard_count: u64,
    pub write_shard_count: u64,
    pub lease_ttl: f64,
    pub now: f64,
    pub recover: Vec<String>,
    pub recover_ttl0: Vec<String>,
    pub counts: BTreeMap<String, u64>,
    pub accepted: Vec<String>,
    pub rejected: Vec<String>,
    pub claim_probe: BTreeMap<String, bool>,
    #[serde(default)]
    pub claim_probe_errors: BTreeMap<String, String>,
    #[serde(default)]
    pub group_probe: BTreeMap<String, bool>,
    #[serde(default)]
    pub group_probe_errors: BTreeMap<String, String>,
    pub files: Vec<ExpectedFile>,
}

/// One entry under a case's root.
#[derive(Deserialize)]
pub struct ExpectedFile {
    pub path: String,
    #[serde(rename = "type")]
    pub entry_type: String,
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every case, copied where its directories can be made again: its name,
/// the copy's root and what upstream did.
pub fn cases() -> Vec<(String, tempfile::TempDir, PathBuf, Expected)> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(fixture("multimaster"))
        .expect("fixtures/multimaster")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('t'))
        })
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 30, "the thirty table cases");
    dirs.into_iter()
        .map(|dir| {
            let expected: Expected =
                serde_json::from_slice(&fs::read(dir.join("expected.json")).unwrap()).unwrap();
            let copy = tempfile::tempdir().unwrap();
            let root = copy.path().join(&expected.root);
            copy_tree(&dir.join(&expected.root), &root);
            for file in expected.files.iter().filter(|f| f.entry_type == "dir") {
                fs::create_dir_all(root.join(&file.path)).unwrap();
            }
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            (name, copy, root, expected)
        })
        .collect()
}

fn options(expected: &Expected, ttl: f64) -> TableOptions {
    TableOptions {
        kind: None,
        lease_shards: Some(expected.shard_count),
        ttl: Some(ttl),
        now: expected.now,
        skew: 300.0,
        history: None,
    }
}

fn hex(ids: &[WorkId]) -> Vec<String> {
    ids.iter().map(WorkId::to_hex).collect()
}

fn probe(root: &Path, report: &TableReport, id: &str) -> ClaimOutcome {
    claim_probe(root, report, &table::parse_id(id).unwrap())
}

fn expected_outcome(ok: Option<&bool>, error: Option<&String>) -> ClaimOutcome {
    match (error, ok) {
        (Some(e), _) => ClaimOutcome::Raises(match e.as_str() {
            "IsADirectoryError" => "IsADirectoryError",
            "NotADirectoryError" => "NotADirectoryError",
            other => panic!("an exception the cases do not hold: {other}"),
        }),
        (None, Some(true)) => ClaimOutcome::Takes,
        (None, _) => ClaimOutcome::Refused,
    }
}

#[test]
fn every_table_case_agrees_with_upstream() {
    for (name, _keep, root, expected) in cases() {
        let report = read(&root, &options(&expected, expected.lease_ttl)).unwrap();
        let kind = if expected.kind == "target" {
            TableKind::Target
        } else {
            TableKind::Work
        };
        assert_eq!(report.table, kind, "{name}: kind");
        assert_eq!(hex(&report.recovered), expected.recover, "{name}: recover");
        let counts = BTreeMap::from([
            ("leased".to_string(), report.counts.leased),
            ("committing".to_string(), report.counts.committing),
            ("expired".to_string(), report.counts.expired),
            ("done".to_string(), report.counts.done),
        ]);
        assert_eq!(counts, expected.counts, "{name}: snapshot_counts");
        let mut rejected = expected.rejected.clone();
        rejected.sort();
        assert_eq!(hex(&report.rejected), rejected, "{name}: rejected");
        assert_eq!(
            report.accepted,
            expected.accepted.len() as u64,
            "{name}: accepted"
        );
        let all_ttl0 = read(&root, &options(&expected, 0.0)).unwrap();
        assert_eq!(
            hex(&all_ttl0.recovered),
            expected.recover_ttl0,
            "{name}: recover at lease_ttl=0"
        );
        for (id, ok) in &expected.claim_probe {
            let want = expected_outcome(Some(ok), expected.claim_probe_errors.get(id));
            if kind == TableKind::Work {
                assert_eq!(probe(&root, &report, id), want, "{name}: claim of {id}");
            }
        }
        for (target, ok) in &expected.group_probe {
            let id = table::target_id(target.parse().unwrap()).to_hex();
            let want = expected_outcome(Some(ok), expected.group_probe_errors.get(target));
            assert_eq!(
                probe(&root, &report, &id),
                want,
                "{name}: claim_group([{target}])"
            );
        }
        let accepted: BTreeSet<&String> = expected.accepted.iter().collect();
        assert_eq!(accepted.len(), expected.accepted.len(), "{name}");
    }
}

// ---- through the command line ------------------------------------------------

/// The settings a case was made with, as command-line arguments.
fn case_args(expected: &Expected, ttl: f64) -> Vec<String> {
    vec![
        "--now".into(),
        expected.now.to_string(),
        "--lease-shards".into(),
        expected.shard_count.to_string(),
        "--ttl".into(),
        ttl.to_string(),
    ]
}

fn inspect_table(root: &Path, args: &[String]) -> crate::schema::InspectTable {
    let report: crate::schema::Inspect =
        json_ok(lj().args(["inspect", "--format=json"]).args(args).arg(root));
    match report {
        crate::schema::Inspect::Table(t) => {
            assert_eq!(t.schema_version, 1);
            t.table
        }
        other => panic!("not a table report: {other:?}"),
    }
}

fn forecast(root: &Path, args: &[String]) -> crate::schema::TableForecast {
    let report: crate::schema::Forecast =
        json_ok(lj().args(["recover", "--format=json"]).args(args).arg(root));
    assert!(report.files.is_empty() && report.ledger.is_none());
    let [table] = <[_; 1]>::try_from(report.tables).expect("one table");
    table
}

#[test]
fn inspect_and_recover_give_upstreams_counts_rejections_and_order() {
    for (name, _keep, root, expected) in cases() {
        let args = case_args(&expected, expected.lease_ttl);
        let t = inspect_table(&root, &args);
        assert_eq!(t.table, expected.kind, "{name}");
        let counts = BTreeMap::from([
            ("leased".to_string(), t.counts.leased),
            ("committing".to_string(), t.counts.committing),
            ("expired".to_string(), t.counts.expired),
            ("done".to_string(), t.counts.done),
        ]);
        assert_eq!(counts, expected.counts, "{name}: counts");
        let mut rejected = expected.rejected.clone();
        rejected.sort();
        assert_eq!(t.rejected, rejected, "{name}: rejected");
        assert_eq!(t.recovered, expected.recover, "{name}: recovered");
        assert_eq!(t.accepted, expected.accepted.len() as u64, "{name}");
        let f = forecast(&root, &args);
        assert_eq!(f.recovered, expected.recover, "{name}: recover's recovered");
        let taken = if expected.kind == "work" {
            expected.recover.len().min(4096)
        } else {
            0
        };
        assert_eq!(f.taken_at_start, taken, "{name}");
        let f0 = forecast(&root, &case_args(&expected, 0.0));
        assert_eq!(f0.recovered, expected.recover_ttl0, "{name}: at --ttl 0");
    }
}

/// Every path under `root` with its type and bytes, and each file's
/// modification time: what a read-only command must leave as it was.
fn tree(root: &Path) -> Vec<(PathBuf, String, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let meta = fs::symlink_metadata(entry.path()).unwrap();
            let bytes = if meta.is_file() {
                fs::read(entry.path()).unwrap()
            } else {
                Vec::new()
            };
            if meta.is_dir() {
                stack.push(entry.path());
            }
            out.push((
                entry.path(),
                format!("{:?}", meta.file_type()),
                bytes,
                meta.modified().unwrap(),
            ));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn reading_a_table_never_writes_creates_or_locks() {
    let (_, _keep, root, expected) = cases().swap_remove(17);
    let before = tree(root.parent().unwrap());
    let args = case_args(&expected, expected.lease_ttl);
    for command in ["inspect", "verify", "recover"] {
        let out = lj().arg(command).args(&args).arg(&root).output().unwrap();
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{command}: {out:?}"
        );
    }
    let out = lj()
        .args(["inspect", "--history", "b6ee"])
        .args(&args)
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(tree(root.parent().unwrap()), before, "nothing changed");
}

#[test]
fn a_root_that_cannot_be_read_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(".work_lease_table");
    fs::create_dir(&root).unwrap();
    fs::write(root.join("000"), b"not a directory").unwrap();
    // A shard path that is a file is a finding, not a failure.
    let out = lj()
        .args(["inspect", "--format=json"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let missing = dir.path().join("gone/.work_lease_table");
    let out = lj().arg("inspect").arg(&missing).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn the_human_output_of_a_damaged_table() {
    let (_, keep, root, expected) = cases().swap_remove(17);
    let mut args = case_args(&expected, expected.lease_ttl);
    let shown = |command: &str, args: &[String]| {
        format!("{command} {} $DIR/.work_lease_table", args.join(" "))
    };
    for (command, golden) in [
        ("inspect", "test.table.inspect-t017"),
        ("verify", "test.table.verify-t017"),
        ("recover", "test.table.recover-t017"),
    ] {
        let mut cmd = lj();
        cmd.arg(command).args(&args).arg(&root);
        crate::golden::assert_run(golden, &shown(command, &args), &mut cmd, Some(keep.path()));
    }
    args.extend(["--history".to_string(), "ecca8ef5".to_string()]);
    let mut cmd = lj();
    cmd.arg("inspect").args(&args).arg(&root);
    crate::golden::assert_run(
        "test.table.inspect-history-t017",
        &shown("inspect", &args),
        &mut cmd,
        Some(keep.path()),
    );
}

#[test]
fn a_table_read_at_another_count_is_one_error_and_repair_does_not_move_it() {
    let (name, _keep, root, expected) = cases().swap_remove(12);
    assert_eq!((name.as_str(), expected.shard_count), ("t012", 8));
    let before = tree(&root);
    // Read at upstream's default count, 256, not the 8 it was written at.
    let at_default = ["--now".to_string(), expected.now.to_string()];
    let t = inspect_table(&root, &at_default);
    assert_eq!(t.shard_count.value, 256);
    assert_eq!(
        t.fitting_counts.as_deref().map(|f| f.first()),
        Some(Some(&8))
    );
    let out = lj()
        .args(["verify", "--format=json"])
        .args(&at_default)
        .arg(&root)
        .output()
        .unwrap();
    let (exit, report) = crate::support::verify_output(&out);
    assert_eq!((exit, report.verdict), (1, crate::schema::Verdict::NoGo));
    assert_eq!(report.count("table-count-mismatch"), 1);
    assert_eq!(report.count("table-misplaced-record"), 0);
    assert_eq!(report.count("table-unread-directory"), 0);
    let finding = report.findings_of("table-count-mismatch").next().unwrap();
    assert!(
        finding.fix.is_none() && finding.must_do.is_some(),
        "{finding:?}"
    );
    // Even told to, repair moves nothing out of the layout 8 shards read.
    let out = lj()
        .args([
            "repair",
            "--apply",
            "--all-masters-stopped",
            "--lease-shards",
            "256",
        ])
        .args(&at_default)
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    let records = |t: &[(PathBuf, String, Vec<u8>, std::time::SystemTime)]| {
        t.iter()
            .filter(|(p, ..)| p.extension().is_some_and(|e| e == "json"))
            .filter(|(p, ..)| !p.to_string_lossy().contains(".leasejournal-"))
            .map(|(p, _, b, _)| (p.clone(), b.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(records(&tree(&root)), records(&before), "no record moved");
    // At its own count it is what upstream read.
    // (One record there was moved by hand: no count fits it.)
    let t = inspect_table(&root, &case_args(&expected, expected.lease_ttl));
    assert_eq!(t.fitting_counts, Some(Vec::new()));
    assert_eq!(t.recovered, expected.recover);
}

#[test]
fn a_fifo_record_hangs_upstream_and_a_linked_shard_is_read_once() {
    let (_, keep, root, expected) = cases().swap_remove(17);
    // A FIFO at a record path: upstream's open() would wait for ever.
    let id = table::parse_id(&"ab".repeat(32)).unwrap();
    let fifo = root
        .join(table::shard_dir_name(table::shard_of(
            &id,
            expected.shard_count,
        )))
        .join(format!("{id}.json"));
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    // Shard 002 read through a link to a directory beside it.
    let real = root.join("real002");
    fs::rename(root.join("002"), &real).unwrap();
    std::os::unix::fs::symlink("real002", root.join("002")).unwrap();
    let args = case_args(&expected, expected.lease_ttl);
    let out = lj()
        .args(["verify", "--format=json", "--max-examples=0"])
        .args(&args)
        .arg(&root)
        .output()
        .unwrap();
    let (exit, report) = crate::support::verify_output(&out);
    assert_eq!(exit, 1);
    assert_eq!(report.count("table-unread-directory"), 0, "{report:?}");
    assert_eq!(report.count("table-record-rejected"), 2, "{report:?}");
    if made.is_ok_and(|s| s.success()) {
        assert_eq!(report.count("table-record-raises"), 1, "{report:?}");
        let f = report.findings_of("table-record-raises").next().unwrap();
        assert!(f.message.contains("FIFO"), "{f:?}");
    }
    let t = inspect_table(&root, &args);
    assert_eq!(t.counts.done, 4, "the linked shard's records count once");
    drop(keep);
}

#[test]
fn what_no_command_changes_names_no_fix() {
    let (_, _keep, root, expected) = cases().swap_remove(17);
    // A temporary file of a writer that runs here: repair leaves it.
    let id = "cd".repeat(32);
    let shard = root.join(table::shard_dir_name(table::shard_of(
        &table::parse_id(&id).unwrap(),
        expected.shard_count,
    )));
    fs::create_dir_all(&shard).unwrap();
    let temp = format!("{id}.json.{}.1796146316147954255.tmp", std::process::id());
    fs::write(shard.join(&temp), b"{").unwrap();
    let before = tree(&root);
    let args = case_args(&expected, expected.lease_ttl);
    let out = lj()
        .args(["verify", "--format=json", "--max-examples=0"])
        .args(&args)
        .arg(&root)
        .output()
        .unwrap();
    let (_, report) = crate::support::verify_output(&out);
    let found = report
        .findings_of("table-temp-file")
        .next()
        .expect("the temp file");
    assert_eq!(found.fix, None, "{found:?}");
    // recover --discard has nothing to discard in a table.
    let out = lj()
        .args(["recover", "--discard", "--all", "--apply"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    assert_eq!(tree(&root), before);
}
