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

use crate::support::fixture;

/// What upstream's classes did with a case (its `expected.json`).
#[derive(Deserialize)]
pub struct Expected {
    pub kind: String,
    pub root: String,
    pub shard_count: u64,
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
