//! `recover`, `migrate` and `compact`: upstream's results on every fidelity
//! case, dry runs that touch nothing, and the write path's promises — the
//! master's lock, change detection, backups, refusal of symlinks, clear
//! errors on read-only directories and full disks, and crash safety under
//! SIGKILL at every step.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use leasejournal::journal::encode::{lease_line, marker_line};
use leasejournal::journal::{Clock, WorkId};
use leasejournal::json::PyInt;
use predicates::prelude::*;
use predicates::str::contains;
use serde_json::Value;

use crate::support::{cases, copy_dir, fixture, json_ok, json_written, lj};

fn bin() -> &'static Path {
    assert_cmd::cargo::cargo_bin!("leasejournal")
}

/// Names of the files in a directory, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn temps(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

fn state(path: &Path) -> (Value, Value) {
    let v = json_ok(
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

#[test]
fn recover_reclaims_upstreams_ids_in_upstreams_order() {
    for dir in cases(&['j', 'w']) {
        let expected: Value =
            serde_json::from_slice(&fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let params = &expected["recover"]["params"];
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("journal.jsonl");
        fs::copy(dir.join("journal.jsonl"), &path).unwrap();
        let now = params["now"].as_f64().unwrap();
        let report = json_written(
            lj().args(["recover", "--apply", "--no-backup", "--format=json"])
                .arg(format!("--ttl={}", params["ttl"].as_f64().unwrap()))
                .arg(format!("--now={now}"))
                .arg(format!("--limit={}", params["limit"]))
                .arg(&path),
        );
        let planned: Vec<&Value> = report["files"][0]["plan"]["reclaims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["id"])
            .collect();
        let want: Vec<&Value> = expected["recover"]["reclaimed_in_order"]
            .as_array()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(planned, want, "{}", dir.display());
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
        assert!(
            tail.iter()
                .all(|r| r["op"] == "reclaim" && r["clock"] == "unix")
        );
        assert_eq!(
            report["files"][0]["written"],
            !want.is_empty() || report["files"][0]["plan"]["tail"]["action"] != "none"
        );
    }
}

#[test]
fn compact_writes_upstreams_bytes_and_by_default_keeps_completed() {
    for dir in cases(&['j', 'w']) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("journal.jsonl");
        fs::copy(dir.join("journal.jsonl"), &path).unwrap();
        lj().args(["compact", "--apply", "--no-backup", "--drop-completed"])
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
        lj().args(["compact", "--apply", "--no-backup"])
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
        let report = json_written(
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
        let again = json_written(
            lj().args(["migrate", "--apply", "--format=json"])
                .arg(&path),
        );
        assert_eq!(again["files"][0]["note"], "nothing to migrate");
        assert_eq!(again["files"][0]["backup"], Value::Null);
    }
    assert!(
        legacy >= 5,
        "the fidelity set has legacy snapshots ({legacy})"
    );
}

#[test]
fn a_snapshot_diffs_to_its_migration_only_in_zeroed_times() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".state_tasks.json");
    fs::copy(fixture("fidelity/s000/state.json"), &path).unwrap();
    let report = json_written(lj().args(["migrate", "--format=json"]).arg(&path));
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
fn migrating_a_journal_reclaims_legacy_leases_once() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".work_leases.jsonl");
    fs::copy(fixture("samples/legacy_demo.input.jsonl"), &path).unwrap();
    let report = json_written(
        lj().args([
            "migrate",
            "--apply",
            "--no-backup",
            "--format=json",
            "--now=1.0",
        ])
        .arg(&path),
    );
    assert_eq!(report["files"][0]["plan"]["change"], "reclaim");
    assert_eq!(
        report["files"][0]["plan"]["reclaims"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.ends_with("{\"clock\":\"unix\",\"id\":\"b3ebf1ab1e22ca48684634c8a2b31bf4f956e0964f7eccb2c2e09cb59f6cc088\",\"op\":\"reclaim\",\"time\":1.0}\n"));
    let again = json_written(
        lj().args(["migrate", "--apply", "--format=json"])
            .arg(&path),
    );
    assert_eq!(again["files"][0]["note"], "nothing to migrate");
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn migrate_rewrite_leaves_no_clock_less_record() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".work_leases.jsonl");
    fs::copy(fixture("fidelity/j000/journal.jsonl"), &path).unwrap();
    let (_, completed) = state(&path);
    lj().args(["migrate", "--apply", "--rewrite", "--no-backup"])
        .arg(&path)
        .assert()
        .success();
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.lines().all(|l| l.contains("\"clock\":")), "{text}");
    let (active, after_completed) = state(&path);
    assert_eq!(after_completed, completed);
    assert!(active.as_array().unwrap().iter().all(|a| a[4] == "unix"));
    lj().args(["migrate", "--apply", "--rewrite"])
        .arg(&path)
        .assert()
        .success()
        .stdout(contains("nothing to migrate"));
}

#[test]
fn salvage_brings_a_glued_record_back() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("torn.jsonl");
    fs::copy(fixture("samples/torn_tail_demo.jsonl"), &path).unwrap();
    let report = json_written(
        lj().args([
            "recover",
            "--salvage",
            "--apply",
            "--format=json",
            "--ttl=1000000000",
            "--now=1754550100",
        ])
        .arg(&path),
    );
    let plan = &report["files"][0]["plan"];
    assert_eq!(plan["salvaged"][0]["line"], 2);
    assert_eq!(plan["before"]["active"], 1);
    assert_eq!(plan["after"]["active"], 2);
    let v = json_ok(lj().args(["inspect", "--format=json"]).arg(&path));
    assert_eq!(v["active_count"], 2);
    assert_eq!(v["ignored"], serde_json::json!({}));
    let backup = report["files"][0]["backup"].as_str().unwrap();
    assert_eq!(
        fs::read(backup).unwrap(),
        fs::read(fixture("samples/torn_tail_demo.jsonl")).unwrap()
    );
}

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
    for cmd in ["recover", "migrate", "compact"] {
        lj().arg(cmd)
            .arg(dir.path())
            .assert()
            .success()
            .stdout(contains("dry run"));
    }
    assert_eq!(snapshot(dir.path()), before);
    assert!(!dir.path().join(".master-queue.lock").exists());
}

#[test]
fn a_directory_is_recovered_deferred_journal_first() {
    let dir = copy_dir(&fixture("samples"));
    let report = json_written(lj().args(["recover", "--format=json"]).arg(dir.path()));
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
    for cmd in ["recover", "migrate", "compact"] {
        lj().args([cmd, "--apply"])
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
    // --lock-timeout waits for the master to let go.
    let started = Instant::now();
    let child = Command::new(bin())
        .args(["compact", "--apply", "--no-backup", "--lock-timeout=20"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(lock);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
}

fn pause_at(point: &str, marker: &Path) -> String {
    format!("{point}=pause:{}", marker.display())
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_file_changed_between_plan_and_publish_is_not_overwritten() {
    for cmd in ["compact", "recover"] {
        let dir = copy_dir(&fixture("samples"));
        let path = dir.path().join(".work_leases.jsonl");
        let marker = dir.path().join("planned");
        let child = Command::new(bin())
            .args([cmd, "--apply"])
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
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("changed since it was read"),
            "{cmd}: {stderr}"
        );
        assert_eq!(
            fs::read(&path).unwrap(),
            appended,
            "{cmd}: the late append survives"
        );
        assert!(temps(dir.path()).is_empty());
        assert!(!names(dir.path()).iter().any(|n| n.contains(".bak.")));
    }
}

#[test]
fn a_symlinked_target_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.jsonl");
    fs::copy(fixture("samples/.work_leases.jsonl"), &real).unwrap();
    let link = dir.path().join(".work_leases.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    for cmd in ["recover", "compact"] {
        lj().args([cmd, "--apply"])
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
    assert!(stderr.contains("File too large"), "{stderr}");
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(temps(dir.path()).is_empty());
    // The same through the failpoint, for a disk that is simply full.
    lj().args(["compact", "--apply"])
        .arg(&path)
        .env("LEASEJOURNAL_FAILPOINTS", "temp-written=error")
        .assert()
        .code(2)
        .stderr(contains("No space left on device"));
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(temps(dir.path()).is_empty());
}

#[test]
fn a_result_that_does_not_replay_to_the_plan_is_never_published() {
    let cases: [(&str, &[&str]); 3] = [
        ("fidelity/j000/journal.jsonl", &["compact", "--apply"]),
        (
            "samples/torn_tail_demo.jsonl",
            &["recover", "--salvage", "--apply"],
        ),
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
        .arg(&out_file)
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
    let report = json_written(
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
        (crash_case(work.path(), &original, &["compact"]), false),
        (
            crash_case(work.path(), &original, &["recover", "--now=1754560000"]),
            true,
        ),
        (
            crash_case(
                work.path(),
                &original,
                &["recover", "--salvage", "--now=1754560000"],
            ),
            false,
        ),
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
    assert!(kills >= 40);
}
