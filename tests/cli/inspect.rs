//! `leasejournal inspect`: every option, the JSON contract, bad input, and
//! that it never writes, creates or locks anything.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use predicates::prelude::*;
use predicates::str::contains;

use crate::support::{copy_dir, fixture, json_ok, lj};

const NOW: &str = "1754550100";

#[test]
fn state_directory_in_table_form() {
    lj().args(["inspect", "--now", NOW])
        .arg(fixture("samples"))
        .assert()
        .success()
        .stderr("")
        .stdout(contains("state directory"))
        .stdout(contains("master lock no .master-queue.lock"))
        .stdout(contains("journal ").and(contains(".dispatch_protocol_deferred.jsonl")))
        .stdout(contains("3 active · 0 completed"))
        .stdout(contains("/afl/queue/id:000001,orig:seed"))
        .stdout(contains("1m 40s ago"))
        .stdout(contains("snapshot ").and(contains("tasks       4")))
        .stdout(contains("\u{1b}[").not());
}

#[test]
fn state_directory_json_contract() {
    let v = json_ok::<serde_json::Value>(
        lj().args(["inspect", "--format", "json", "--now", NOW])
            .arg(fixture("samples")),
    );
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["kind"], "directory");
    let files = v["files"].as_array().unwrap();
    let kinds: Vec<&str> = files.iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["journal", "journal", "snapshot"]);
    assert!(
        files[0]["path"]
            .as_str()
            .unwrap()
            .ends_with(".dispatch_protocol_deferred.jsonl")
    );
    assert_eq!(v["master_lock"]["present"], false);
    assert_eq!(v["missing"].as_array().unwrap().len(), 0);
    let journal = &files[1];
    assert_eq!(journal["schema_version"], 1);
    assert_eq!(journal["tail"]["state"], "clean");
    assert_eq!(journal["active_count"], 3);
    let first = &journal["active"][0];
    for key in [
        "id",
        "worker",
        "time",
        "attempts",
        "clock",
        "line",
        "offset",
        "age_seconds",
        "path",
    ] {
        assert!(first.get(key).is_some(), "active lease has {key}");
    }
    assert_eq!(first["clock"], "unix");
    let snapshot = &files[2];
    assert_eq!(snapshot["clock"], "unix");
    let restored = snapshot["restored"].as_object().unwrap();
    let keys: Vec<&String> = restored.keys().collect();
    assert_eq!(
        keys,
        [
            "clock",
            "leases",
            "shard_count",
            "stats",
            "steal_window",
            "worker_count"
        ]
    );
    assert_eq!(snapshot["restored"]["leases"][0]["updated"], 0.0);
}

#[test]
fn now_makes_ages_reproducible() {
    let path = fixture("samples/.work_leases.jsonl");
    let v = json_ok::<serde_json::Value>(
        lj().args(["inspect", "--format=json", "--now", "1754550000"])
            .arg(&path),
    );
    let c103 = v["active"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"].as_str().unwrap().starts_with("c103"))
        .unwrap();
    assert_eq!(c103["age_seconds"], 0.0);
    lj().args(["inspect", "--now=-5"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(contains("--now"));
}

#[test]
fn worker_and_id_filters() {
    let path = fixture("fidelity/j000/journal.jsonl");
    let v = json_ok::<serde_json::Value>(
        lj().args(["inspect", "--format=json", "--worker", "2"])
            .arg(&path),
    );
    let active = v["active"].as_array().unwrap();
    assert_eq!(active.len(), 2);
    assert!(active.iter().all(|a| a["worker"] == 2));
    assert_eq!(v["active_count"], 6, "the total stays unfiltered");
    assert_eq!(v["filter"]["worker"], 2);
    let v = json_ok::<serde_json::Value>(
        lj().args(["inspect", "--format=json", "--id", "83CE"])
            .arg(&path),
    );
    let active = v["active"].as_array().unwrap();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0]["clock"], "legacy");
    lj().args(["inspect", "--worker", "2"])
        .arg(&path)
        .assert()
        .success()
        .stdout(contains("showing     2 of 6 active (worker 2)"));
    lj().args(["inspect", "--id", "xyz"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(contains("hexadecimal"));
}

#[test]
fn history_shows_every_record_and_its_effect() {
    // j001: lease, done, a second done and a late lease for one id.
    let path = fixture("fidelity/j001/journal.jsonl");
    let v = json_ok::<serde_json::Value>(
        lj().args(["inspect", "--format=json", "--history", "2a834ca6"])
            .arg(&path),
    );
    let history = v["history"].as_array().unwrap();
    let effects: Vec<&str> = history
        .iter()
        .map(|h| h["effect"].as_str().unwrap())
        .collect();
    assert_eq!(
        effects,
        [
            "activated",
            "completed (worker 0)",
            "ignored: already completed"
        ]
    );
    assert_eq!(history[0]["line"], 3);
    assert_eq!(history[1]["op"], "done");
    lj().args(["inspect", "--history", "2a834ca6"])
        .arg(&path)
        .assert()
        .success()
        .stdout(contains("ignored: already completed"));
}

#[test]
fn history_names_a_record_lost_to_a_glued_line() {
    let v = json_ok::<serde_json::Value>(
        lj().args(["inspect", "--format=json", "--history", "d877ee1d"])
            .arg(fixture("samples/torn_tail_demo.jsonl")),
    );
    let history = v["history"].as_array().unwrap();
    assert_eq!(history.len(), 1);
    assert!(
        history[0]["effect"]
            .as_str()
            .unwrap()
            .starts_with("lost: glued")
    );
    assert_eq!(v["ignored"]["glued-record"], 1);
    assert_eq!(v["active_count"], 1);
}

#[test]
fn kind_is_detected_from_content_or_given() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("leases-backup");
    fs::copy(fixture("samples/.work_leases.jsonl"), &journal).unwrap();
    let snapshot = dir.path().join("tasks-backup");
    fs::copy(fixture("samples/.state_tasks.json"), &snapshot).unwrap();
    assert_eq!(
        json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&journal))["kind"],
        "journal"
    );
    assert_eq!(
        json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&snapshot))["kind"],
        "snapshot"
    );
    // Forced the other way round, each is read as the named kind.
    let forced = json_ok::<serde_json::Value>(
        lj().args(["inspect", "--format=json", "--kind", "journal"])
            .arg(&snapshot),
    );
    assert_eq!(forced["kind"], "journal");
    assert_eq!(forced["ignored"]["bad-id"], 1);
}

#[test]
fn colour_follows_the_flag_and_no_color() {
    let path = fixture("samples/.work_leases.jsonl");
    lj().args(["inspect", "--color", "always"])
        .arg(&path)
        .assert()
        .success()
        .stdout(contains("\u{1b}["));
    lj().args(["inspect", "--color", "never"])
        .arg(&path)
        .assert()
        .success()
        .stdout(contains("\u{1b}[").not());
    lj().args(["inspect"])
        .env("NO_COLOR", "1")
        .arg(&path)
        .assert()
        .success()
        .stdout(contains("\u{1b}[").not());
}

#[test]
fn torn_and_damaged_journals_are_reported_not_refused() {
    let v = json_ok::<serde_json::Value>(
        lj().args(["inspect", "--format=json"])
            .arg(fixture("fidelity/j000/journal.jsonl")),
    );
    assert_eq!(v["ignored"]["not-an-object"], 2);
    assert_eq!(v["ignored"]["payload-id-mismatch"], 1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    let mut bytes = fs::read(fixture("samples/.work_leases.jsonl")).unwrap();
    bytes.extend_from_slice(b"{\"attempts\":1,\"clo");
    bytes.extend_from_slice(&[0u8; 7]);
    fs::write(&path, &bytes).unwrap();
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&path));
    assert_eq!(v["tail"]["state"], "torn");
    assert_eq!(v["tail"]["bytes"], 25);
    assert_eq!(v["tail"]["zero_bytes"], 7);
    assert_eq!(v["ignored"]["torn-tail"], 1);
    assert_eq!(v["active_count"], 3);
    lj().arg("inspect")
        .arg(&path)
        .assert()
        .success()
        .stdout(contains("torn: 25 bytes"))
        .stdout(contains("7 NUL bytes"));
}

fn fails_with(path: &Path, message: &str) {
    lj().arg("inspect")
        .arg(path)
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains(path.display().to_string()).and(contains(message)))
        .stderr(predicate::function(|s: &str| s.lines().count() == 1));
}

#[test]
fn bad_inputs_fail_with_one_line_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    fails_with(&dir.path().join("absent"), "no such file or directory");
    fails_with(dir.path(), "contains none of");
    let fifo = dir.path().join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    fails_with(&fifo, "is a FIFO");
    fails_with(Path::new("/dev/null"), "is a character device");
    let binary = dir.path().join("core");
    fs::write(
        &binary,
        [0x7fu8, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0xff, 0xfe],
    )
    .unwrap();
    fails_with(&binary, "neither a lease journal nor a state snapshot");
    let dangling = dir.path().join("dangling.jsonl");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
    fails_with(&dangling, "dangling symbolic link");
}

#[test]
fn permission_denied_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    fs::copy(fixture("samples/.work_leases.jsonl"), &path).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let (std_cmd, _keep) = crate::support::unprivileged_command();
    let mut cmd = assert_cmd::Command::from_std(std_cmd);
    cmd.arg("inspect")
        .arg(&path)
        .assert()
        .code(2)
        .stderr(contains(path.display().to_string()).and(contains("permission denied")));
}

#[test]
fn a_hundred_megabyte_line() {
    let dir = tempfile::tempdir().unwrap();
    let line = vec![b'x'; 100 << 20];
    let unknown = dir.path().join("blob");
    fs::write(&unknown, &line).unwrap();
    fails_with(&unknown, "neither a lease journal nor a state snapshot");
    let journal = dir.path().join(".work_leases.jsonl");
    fs::write(&journal, &line).unwrap();
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(&journal));
    assert_eq!(v["tail"]["state"], "torn");
    assert_eq!(v["tail"]["bytes"], 100u64 << 20);
    assert_eq!(v["lines"], 1);
}

fn listing(dir: &Path) -> Vec<(String, Vec<u8>, std::time::SystemTime)> {
    let mut v: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
                meta.modified().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn inspect_never_writes_creates_or_locks() {
    let dir = copy_dir(&fixture("samples"));
    fs::write(
        dir.path().join(".work_leases.jsonl.123.456.tmp"),
        b"partial",
    )
    .unwrap();
    let before = listing(dir.path());
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(dir.path()));
    assert_eq!(
        v["stale_temp_files"][0]["name"],
        ".work_leases.jsonl.123.456.tmp"
    );
    assert_eq!(v["stale_temp_files"][0]["belongs_to"], ".work_leases.jsonl");
    lj().arg("inspect").arg(dir.path()).assert().success();
    assert_eq!(listing(dir.path()), before, "nothing written or created");
    assert!(!dir.path().join(".master-queue.lock").exists());
}

#[test]
fn a_held_master_lock_is_seen_through_proc_locks() {
    let dir = copy_dir(&fixture("samples"));
    let lock_path = dir.path().join(".master-queue.lock");
    let lock = fs::File::create(&lock_path).unwrap();
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(dir.path()));
    assert_eq!(v["master_lock"]["present"], true);
    assert_eq!(v["master_lock"]["held"], false);
    // SAFETY: a valid descriptor.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let v = json_ok::<serde_json::Value>(lj().args(["inspect", "--format=json"]).arg(dir.path()));
    assert_eq!(v["master_lock"]["held"], true);
    assert_eq!(v["master_lock"]["holders"][0], std::process::id());
    lj().arg("inspect")
        .arg(dir.path())
        .assert()
        .success()
        .stdout(contains("a master is running"));
    // Inspect did not disturb the lock: it is still ours and exclusive.
    // SAFETY: a valid descriptor.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_UN) }, 0);
}

#[test]
fn tables_align_in_colour_and_show_control_characters_escaped() {
    use leasejournal::engine::journal::{Clock, WorkId, encode::lease_line};
    use leasejournal::engine::json::PyInt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    let mut journal = Vec::new();
    for (payload, clock, time) in [
        // A path holding a newline and a colour code.
        (
            r#"{"path":"evil\n\u001b[31mred"}"#,
            Clock::Unix,
            1_754_550_000.0,
        ),
        (r#"{"path":"/afl/queue/id:000001"}"#, Clock::Legacy, 123.5),
    ] {
        let id = WorkId::of_canonical(payload.as_bytes());
        journal.extend(lease_line(
            &id,
            &PyInt::Small(2),
            time,
            &PyInt::Small(1),
            clock,
            payload.as_bytes(),
        ));
    }
    fs::write(&path, &journal).unwrap();
    let out = lj()
        .args(["inspect", "--color", "always", "--now", NOW])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(r"evil\n\u{1b}[31mred"), "{text}");
    assert!(
        !text.contains("\u{1b}[31m"),
        "data never colours the terminal"
    );
    // Every line of the table is as wide on screen as the others.
    let strip = |line: &str| {
        let mut visible = String::new();
        let mut rest = line;
        while let Some(at) = rest.find('\u{1b}') {
            visible.push_str(&rest[..at]);
            let end = rest[at..].find('m').unwrap();
            rest = &rest[at + end + 1..];
        }
        visible.push_str(rest);
        visible.chars().count()
    };
    let widths: Vec<usize> = text
        .lines()
        .filter(|l| l.starts_with(['┌', '│', '╞', '└']))
        .map(strip)
        .collect();
    assert_eq!(widths.len(), 6, "{text}");
    assert!(widths.iter().all(|&w| w == widths[0]), "{widths:?}\n{text}");
}
