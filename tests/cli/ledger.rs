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

/// What upstream's class did with a case (its `expected.json`).
#[derive(Deserialize)]
pub struct Expected {
    pub shard_count: u32,
    pub load_recent: Vec<String>,
    pub files: Vec<ExpectedFile>,
}

/// One name under a case's `.state_shards/`.
#[derive(Deserialize)]
pub struct ExpectedFile {
    pub name: String,
    pub index: Option<u32>,
    pub read: bool,
    pub kind: String,
    /// `null` where upstream cannot open the file (a directory).
    pub digests: Option<Vec<String>>,
}

impl Expected {
    /// The distinct digests only in files the case's count never reads.
    pub fn unread(&self) -> BTreeSet<&String> {
        let loaded: BTreeSet<&String> = self.load_recent.iter().collect();
        self.files
            .iter()
            .filter(|f| !f.read && f.index.is_some())
            .flat_map(|f| f.digests.iter().flatten())
            .filter(|d| !loaded.contains(*d))
            .collect()
    }
}

/// Every case, copied where its directories can be made again: its name,
/// the copy (holding `.state_shards/`) and what upstream did.
pub fn cases() -> Vec<(String, tempfile::TempDir, Expected)> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(fixture("multimaster"))
        .expect("fixtures/multimaster")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("expected.json").is_file())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('l'))
        })
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
                // The fuzz properties' plain reading of upstream agrees too.
                if file.kind == "file" && shards.join(&file.name).is_file() {
                    let bytes = fs::read(shards.join(&file.name)).unwrap();
                    let (lines, ..) = leasejournal::fuzzing::ledger_reference(&bytes);
                    let plain: BTreeSet<String> = lines
                        .iter()
                        .filter_map(|l| match l.judged {
                            ledger::line::Judged::Valid(d) => Some(d.to_string()),
                            ledger::line::Judged::Ignored(_) => None,
                        })
                        .collect();
                    assert_eq!(plain, digests, "{name}: {} plain reading", file.name);
                }
            }
        }
        // The command says the same, counts first.
        let count = expected.shard_count.to_string();
        let report: LedgerInspection = json_ok(
            lj().args(["inspect", "--format", "json", "--state-shards", &count])
                .arg(&shards),
        );
        let unread = expected.unread();
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
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The damaged ledgers of the golden table (`multimaster-*.inspect`,
/// human output compared whole there), through their JSON: what upstream
/// loads at the case's count, and each damage where it is.
#[test]
fn damaged_ledgers_say_what_upstream_reads_and_loses() {
    let inspect = |case: &str| -> (Expected, crate::schema::Ledger) {
        let dir = fixture("multimaster").join(case);
        let expected: Expected =
            serde_json::from_slice(&fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let report: LedgerInspection = json_ok(
            lj().args(["inspect", "--format=json", "--state-shards"])
                .arg(expected.shard_count.to_string())
                .arg(dir.join(ledger::DIR)),
        );
        assert_eq!(
            report.ledger.digests,
            expected.load_recent.len() as u64,
            "{case}: what load_recent returned"
        );
        (expected, report.ledger)
    };
    let file = |l: &crate::schema::Ledger, name: &str| -> (bool, String, u64, u64) {
        let f = l.files.iter().find(|f| f.name == name).expect(name);
        let scan = f.scan.as_ref().expect("a shard file");
        (
            f.read,
            scan.tail.kind.clone(),
            scan.valid,
            scan.ignored.total(),
        )
    };
    // A torn tail, in a file a shrink to one shard no longer reads.
    let (_, l) = inspect("l010");
    assert_eq!(file(&l, "processed.004.log"), (false, "torn".into(), 18, 1));
    assert_eq!((l.unread, l.ignored.wrong_length), (77, 1));
    // Uppercase digests, and a NUL run an append was glued onto.
    let (_, l) = inspect("l025");
    assert_eq!((l.ignored.uppercase, l.ignored.nul), (2, 1));
    // CRLF: read as upstream reads it, every digest kept.
    let (_, l) = inspect("l026");
    assert_eq!(file(&l, "processed.007.log"), (true, "clean".into(), 1, 0));
    assert_eq!(l.ignored, Default::default());
    // A NUL tail: the next append is lost.
    let (_, l) = inspect("l028");
    assert_eq!(file(&l, "processed.003.log").1, "nul");
    assert_eq!((l.duplicates, l.ignored.nul), (5, 1));
    // Fewer shards than files: the files at and above the count unread.
    let (expected, l) = inspect("l009");
    assert_eq!(l.shard_count, 4);
    assert_eq!(l.fitting_counts, Some(vec![5]));
    assert!(!file(&l, "processed.004.log").0, "index 4 is not read at 4");
    assert_eq!(l.unread, l.distinct - expected.load_recent.len() as u64);
    assert!(l.unread > 0);
    // Foreign names: listed, never read, never scanned.
    let (expected, l) = inspect("l020");
    let foreign: Vec<(&str, Option<u32>, bool)> = l
        .files
        .iter()
        .filter(|f| f.index.is_none())
        .map(|f| (f.name.as_str(), f.index, f.read || f.scan.is_some()))
        .collect();
    let names: Vec<&str> = expected
        .files
        .iter()
        .filter(|f| f.index.is_none())
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(foreign.iter().map(|f| f.0).collect::<Vec<_>>(), names);
    assert!(foreign.iter().all(|f| f.1.is_none() && !f.2));
}

/// A directory where a shard file would be (upstream's `open` fails and
/// skips it) is listed as `dir`; a FIFO is listed as `other` and never
/// opened: the bytes waiting in it are still there after `inspect`, which
/// a read would have taken (and an open without O_NONBLOCK would have
/// hung on).
#[test]
fn a_directory_or_a_fifo_at_a_shard_name_is_listed_and_never_opened() {
    use std::io::{Read, Write};
    use std::os::unix::fs::OpenOptionsExt;

    let case = cases()
        .into_iter()
        .find(|(name, ..)| name == "l019")
        .unwrap();
    let (_, copy, expected) = case;
    let shards = copy.path().join(ledger::DIR);
    assert!(shards.join("processed.007.log").is_dir());
    let fifo = shards.join("processed.008.log");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    // Held open for reading and writing: a reader of the FIFO would not
    // block on the open, and would take these bytes.
    let mut held = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    held.write_all(b"0123456789abcdef\n").unwrap();
    crate::golden::assert_run(
        "test.ledger.dir-and-fifo",
        "inspect --state-shards 9 $DIR/.state_shards",
        lj().args(["inspect", "--state-shards", "9"])
            .arg(&shards)
            .env("COLUMNS", "100")
            .timeout(std::time::Duration::from_secs(60)),
        Some(copy.path()),
    );
    let report: LedgerInspection = json_ok(
        lj().args(["inspect", "--format=json", "--state-shards", "9"])
            .arg(&shards)
            .timeout(std::time::Duration::from_secs(60)),
    );
    let l = report.ledger;
    assert_eq!(l.digests, expected.load_recent.len() as u64);
    let special: Vec<(&str, &str, bool, bool)> = l
        .files
        .iter()
        .filter(|f| f.kind != "file")
        .map(|f| (f.name.as_str(), f.kind.as_str(), f.read, f.scan.is_some()))
        .collect();
    assert_eq!(
        special,
        [
            ("processed.007.log", "dir", true, false),
            ("processed.008.log", "other", true, false)
        ]
    );
    let mut left = Vec::new();
    held.read_to_end(&mut left).ok();
    assert_eq!(left, b"0123456789abcdef\n", "nobody read the FIFO");
}

/// A shard file that cannot be read is the error, naming it (exit 2, as
/// for every input that cannot be read), with nothing on stdout and
/// nothing written: upstream would skip the file, but what it holds
/// cannot be told. Run as a user who may not read it: root reads anything.
#[test]
fn an_unreadable_shard_file_is_the_error_naming_it() {
    use std::os::unix::fs::PermissionsExt;

    let (_, copy, _) = cases()
        .into_iter()
        .find(|(name, ..)| name == "l003")
        .unwrap();
    // A state directory too: its ledger is read with it.
    fs::copy(
        fixture("diff/a.jsonl"),
        copy.path().join(".work_leases.jsonl"),
    )
    .unwrap();
    let shards = copy.path().join(ledger::DIR);
    let unreadable = shards.join("processed.002.log");
    fs::set_permissions(&unreadable, fs::Permissions::from_mode(0o000)).unwrap();
    for dir in [copy.path(), &shards] {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let listing = || -> Vec<(String, u64)> {
        let mut all = Vec::new();
        for dir in [copy.path(), &shards] {
            for entry in fs::read_dir(dir).unwrap() {
                let entry = entry.unwrap();
                let meta = entry.metadata().unwrap();
                all.push((entry.path().display().to_string(), meta.len()));
            }
        }
        all.sort();
        all
    };
    let before = listing();
    for target in [
        shards.clone(),
        copy.path().to_path_buf(),
        unreadable.clone(),
    ] {
        let (mut cmd, _keep) = crate::support::unprivileged_command();
        let out = cmd.arg("inspect").arg(&target).output().unwrap();
        let shown = target.display();
        assert_eq!(out.status.code(), Some(2), "{shown}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{shown}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "leasejournal: {}: permission denied\n",
                unreadable.display()
            ),
            "{shown}"
        );
    }
    assert_eq!(listing(), before, "nothing written, created or locked");
}
