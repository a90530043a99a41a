//! Hostile files: each gives a clear message and a documented exit code
//! within bounded memory, and nothing is written. How long they take is
//! for scripts/bench.sh, not for a test on a shared machine.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use predicates::prelude::*;
use predicates::str::contains;

use crate::support::{json_ok, lj};

fn bin() -> &'static Path {
    assert_cmd::cargo::cargo_bin!("leasejournal")
}

/// Runs the binary under /usr/bin/time and returns (exit code, stdout,
/// stderr, peak RSS in KiB).
fn measured(args: &[&str], path: &Path) -> (i32, String, String, u64) {
    let dir = tempfile::tempdir().unwrap();
    let rss_file = dir.path().join("rss");
    let out = Command::new("/usr/bin/time")
        .arg("-o")
        .arg(&rss_file)
        .args(["-f", "%M"])
        .arg(bin())
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    let rss = fs::read_to_string(&rss_file)
        .unwrap_or_default()
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        rss,
    )
}

fn has_time() -> bool {
    Path::new("/usr/bin/time").exists()
}

#[test]
fn a_single_200_megabyte_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    // Valid JSON, but an array: validated without building 100 M values.
    let mut f = fs::File::create(&path).unwrap();
    f.write_all(b"[").unwrap();
    let chunk = "1,".repeat(1 << 20);
    for _ in 0..100 {
        f.write_all(chunk.as_bytes()).unwrap();
    }
    f.write_all(b"1]\n").unwrap();
    drop(f);
    if !has_time() {
        let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&path));
        assert_eq!(v["ignored"]["not-an-object"], 1);
        return;
    }
    let (code, stdout, stderr, rss) = measured(&["inspect", "--format=json"], &path);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["ignored"]["not-an-object"], 1);
    // Memory is bounded by the line, not by the values in it.
    assert!(rss < 1_200_000, "peak RSS {rss} KiB for a 200 MB line");
    let (code, stdout, stderr, _) = measured(&["verify", "--quiet"], &path);
    assert_eq!((code, stdout.as_str(), stderr.as_str()), (0, "", ""));
}

#[test]
fn nesting_a_million_levels_deep() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.jsonl");
    fs::write(&path, format!("{}\n", "[".repeat(1_000_000))).unwrap();
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&path));
    assert_eq!(v["ignored"]["too-deep"], 1);
    let snapshot = dir.path().join("deep.json");
    fs::write(&snapshot, format!("{{\"stats\":{}", "[".repeat(1_000_000))).unwrap();
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&snapshot));
    assert_eq!(v["parse"]["ok"], false);
    assert!(
        v["parse"]["error"]
            .as_str()
            .unwrap()
            .contains("nested deeper")
    );
    lj().arg("verify")
        .arg(&snapshot)
        .assert()
        .code(1)
        .stdout(contains("snapshot-corrupt"));
}

#[test]
fn only_nul_bytes_and_random_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let nul = dir.path().join(".work_leases.jsonl");
    fs::write(&nul, vec![0u8; 1 << 20]).unwrap();
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&nul));
    assert_eq!(v["tail"]["zero_bytes"], 1 << 20);
    assert_eq!(v["active_count"], 0);
    // Resume's first append would glue onto the NULs: a no-go that repair
    // fixes.
    lj().args(["verify"])
        .arg(&nul)
        .assert()
        .code(1)
        .stdout(contains("zero-filled-tail").and(contains("leasejournal repair --apply")));
    let unknown = dir.path().join("blob");
    fs::write(&unknown, vec![0u8; 4096]).unwrap();
    lj().arg("inspect")
        .arg(&unknown)
        .assert()
        .code(2)
        .stderr(contains("neither a lease journal nor a state snapshot"));
    let mut x: u64 = 0x1234_5678_9abc_def1;
    let random: Vec<u8> = (0..(2 << 20))
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let journal = dir.path().join("random.jsonl");
    fs::write(&journal, &random).unwrap();
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&journal));
    assert_eq!(v["active_count"], 0);
    // The lines universal newlines make of 2 MiB of (seeded) noise.
    assert_eq!(v["lines"], 16_313);
    lj().arg("verify")
        .arg(&journal)
        .assert()
        .code(1)
        .stdout(contains("corrupt-line"));
    let snapshot = dir.path().join("random.json");
    fs::write(&snapshot, &random).unwrap();
    lj().arg("verify")
        .arg(&snapshot)
        .assert()
        .code(1)
        .stdout(contains("snapshot-corrupt"));
    lj().args(["compact", "--apply"])
        .arg(&journal)
        .assert()
        .success();
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&journal));
    assert_eq!(v["bytes"], 0, "the compacted garbage is an empty journal");
}

#[test]
fn a_journal_truncated_while_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    let line = br#"{"clock":"unix","id":"c1037804a292046418339e8ace36b6ba473d64706a0068d04d512762b0452579","op":"reclaim","time":1754550010.0}"#;
    let mut f = fs::File::create(&path).unwrap();
    let block: Vec<u8> = line
        .iter()
        .chain(b"\n")
        .copied()
        .cycle()
        .take(line.len() * 8000 + 8000)
        .collect();
    for _ in 0..100 {
        f.write_all(&block).unwrap();
    }
    drop(f);
    for delay in [0, 5, 20, 60] {
        let child = Command::new(bin())
            .args(["verify", "--format=json", "--max-examples=1"])
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "delay {delay}: {:?} {stderr}",
            out.status
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["verdict"].is_string());
        // Put the file back for the next round.
        let mut f = fs::File::create(&path).unwrap();
        for _ in 0..100 {
            f.write_all(&block).unwrap();
        }
    }
}

#[test]
fn special_files_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let dangling = dir.path().join("gone.jsonl");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
    for path in [fifo.as_path(), Path::new("/dev/null"), dangling.as_path()] {
        for cmd in [
            &["verify"][..],
            &["recover"],
            &["recover", "--discard", "--all", "--apply"],
            &["repair", "--apply"],
            &["compact"],
            &["migrate"],
        ] {
            // Opening a FIFO for reading would block for good: the timeout
            // turns that hang into a failure instead of a stuck suite. It
            // is not a speed limit.
            let assert = lj()
                .args(cmd)
                .arg(path)
                .timeout(Duration::from_secs(60))
                .assert()
                .code(2)
                .stderr(contains(path.display().to_string()));
            // verify still reports the paths it could check (none here).
            if cmd[0] != "verify" {
                assert.stdout("");
            }
        }
        lj().arg("diff")
            .arg(path)
            .arg(path)
            .assert()
            .code(2)
            .stderr(predicate::str::is_empty().not());
    }
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        2,
        "nothing was created"
    );
}
