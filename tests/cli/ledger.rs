//! The digest ledger against upstream: every `fixtures/multimaster/lNNN/`
//! case was written by upstream's real `PersistentShardLedger` and then
//! damaged (see `fixtures/multimaster/README.md`); our reader must give
//! exactly what upstream's `load_recent` gave at the case's shard count,
//! and what it takes from each file alone. Git keeps no empty directory,
//! so the directories a case holds (an empty `.state_shards/`, a directory
//! where a shard file would be) are made again from its `expected.json`.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use leasejournal::engine::ledger::{self, LedgerScan};
use serde::Deserialize;

use crate::schema::LedgerInspection;
use crate::support::{fixture, json_ok, lj};

#[derive(Deserialize)]
pub(crate) struct Expected {
    pub shard_count: u32,
    pub load_recent: Vec<String>,
    pub files: Vec<ExpectedFile>,
}

#[derive(Deserialize)]
pub(crate) struct ExpectedFile {
    pub name: String,
    pub index: Option<u32>,
    pub read: bool,
    pub kind: String,
    /// `null` where upstream cannot open the file (a directory).
    pub digests: Option<Vec<String>>,
}

/// Every case, copied where its directories can be made again.
pub(crate) fn cases() -> Vec<(String, tempfile::TempDir, Expected)> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(fixture("multimaster"))
        .expect("fixtures/multimaster")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let expected: Expected =
                serde_json::from_slice(&fs::read(dir.join("expected.json")).unwrap()).unwrap();
            let copy = tempfile::tempdir().unwrap();
            let shards = copy.path().join(ledger::DIR);
            fs::create_dir_all(&shards).unwrap();
            let src = dir.join(ledger::DIR);
            if src.is_dir() {
                for entry in fs::read_dir(&src).unwrap() {
                    let entry = entry.unwrap();
                    if !entry.path().is_file() {
                        continue;
                    }
                    fs::copy(entry.path(), shards.join(entry.file_name())).unwrap();
                }
            }
            for file in expected.files.iter().filter(|f| f.kind == "dir") {
                fs::create_dir_all(shards.join(&file.name)).unwrap();
            }
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            (name, copy, expected)
        })
        .collect()
}

/// What our reader loads from the files of `shards` at `count` (upstream
/// skips what it cannot open: a directory).
pub(crate) fn load(shards: &Path, count: u32, only: Option<&str>) -> BTreeSet<String> {
    let mut scan = LedgerScan::new(count, Vec::new());
    let mut files: Vec<(u32, PathBuf)> = fs::read_dir(shards)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let index = ledger::index_of(&name)?;
            let wanted = only.is_none_or(|o| o == name) && (only.is_some() || index < count);
            (wanted && e.path().is_file()).then(|| (index, e.path()))
        })
        .collect();
    files.sort();
    for (index, path) in files {
        scan.file(index, File::open(path).unwrap()).unwrap();
    }
    scan.set().iter().map(|d| d.to_string()).collect()
}

#[test]
fn every_upstream_ledger_case_agrees() {
    let cases = cases();
    assert!(cases.len() >= 30, "only {} ledger cases", cases.len());
    for (name, copy, expected) in &cases {
        let shards = copy.path().join(ledger::DIR);
        let want: BTreeSet<String> = expected.load_recent.iter().cloned().collect();
        assert_eq!(
            load(&shards, expected.shard_count, None),
            want,
            "{name}: load_recent"
        );
        for file in &expected.files {
            assert_eq!(
                file.index,
                ledger::index_of(&file.name),
                "{name}: {} index",
                file.name
            );
            assert_eq!(
                file.read,
                file.index.is_some_and(|i| i < expected.shard_count),
                "{name}: {} read",
                file.name
            );
            if file.index.is_some() {
                let digests: BTreeSet<String> = file.digests.iter().flatten().cloned().collect();
                let ours = load(&shards, expected.shard_count, Some(&file.name));
                assert_eq!(ours, digests, "{name}: {} digests", file.name);
            }
        }
        // The command says the same, counts first.
        let count = expected.shard_count.to_string();
        let report: LedgerInspection = json_ok(
            lj().args(["inspect", "--format", "json", "--state-shards", &count])
                .arg(&shards),
        );
        let unread: BTreeSet<&String> = expected
            .files
            .iter()
            .filter(|f| !f.read && f.index.is_some())
            .flat_map(|f| f.digests.iter().flatten())
            .filter(|d| !want.contains(*d))
            .collect();
        let l = &report.ledger;
        assert_eq!(l.shard_count, expected.shard_count, "{name}");
        assert_eq!(l.digests, want.len() as u64, "{name}: digests");
        assert_eq!(l.unread, unread.len() as u64, "{name}: unread");
    }
}

/// The queries: a digest loaded, one in no file, the content of a file;
/// the human report compared whole, the JSON through its struct.
#[test]
fn a_digest_is_found_where_it_is_and_said_missing_where_it_is_not() {
    let case = fixture("multimaster/l003/.state_shards");
    let first = fs::read_to_string(case.join("processed.000.log")).unwrap();
    let present = first.lines().next().unwrap().trim().to_string();
    let absent = "0".repeat(64);
    let seed = tempfile::NamedTempFile::new().unwrap();
    fs::write(seed.path(), b"an input the rescan would see\n").unwrap();
    let out = lj()
        .current_dir(fixture("multimaster/l003"))
        .args([
            "inspect",
            "--color=never",
            "--digest",
            &present,
            "--digest",
            &absent,
        ])
        .arg(".state_shards")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let ran = crate::golden::Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    crate::golden::assert_golden(
        "test.ledger.digest-queries",
        &ran.render("$ leasejournal inspect --digest PRESENT --digest 000… .state_shards"),
    );
    let report: LedgerInspection = json_ok(
        lj().args([
            "inspect",
            "--format=json",
            "--digest",
            &present,
            "--digest",
            &absent,
        ])
        .arg("--digest-of")
        .arg(seed.path())
        .arg(&case),
    );
    // Each answer: loaded, and where (file, line, offset).
    type Answer = (bool, Vec<(String, u64, u64)>);
    let answers: Vec<Answer> = report
        .ledger
        .queries
        .iter()
        .map(|q| {
            (
                q.loaded,
                q.sites
                    .iter()
                    .map(|s| (s.file.clone(), s.line, s.offset))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        answers,
        [
            (true, vec![("processed.000.log".to_string(), 1, 0)]),
            (false, vec![]),
            (false, vec![]),
        ]
    );
    let of_file = &report.ledger.queries[2];
    assert_eq!(
        of_file.digest,
        sha256_hex(b"an input the rescan would see\n")
    );
    assert_eq!(
        of_file.source.as_deref(),
        Some(&*seed.path().display().to_string())
    );
    // Not a digest: a usage error naming what is allowed, nothing read.
    lj().args(["inspect", "--digest", "nothex"])
        .arg(&case)
        .assert()
        .code(2)
        .stdout("");
}

/// SHA-256 in lowercase hex, as the ledger holds it.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
