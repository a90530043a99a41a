//! `leasejournal inspect`: every option, the JSON contract, bad input, and
//! that it never writes, creates or locks anything.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::golden;
use crate::schema::{self, Clock, Inspect, TailState};
use crate::support::{copy_dir, fixture, json_ok, lj, strip_colour};

const NOW: &str = "1754550100";

/// `inspect --format json` of `path`, with `args` before it.
fn inspect_json(args: &[&str], path: &Path) -> Inspect {
    json_ok(lj().args(["inspect", "--format=json"]).args(args).arg(path))
}

/// The clap error for a bad `value` of `flag`, whole.
fn bad_value(value: &str, flag: &str, why: &str) -> String {
    format!(
        "error: invalid value '{value}' for '{flag}': {why}\n\nFor more information, try '--help'.\n"
    )
}

/// Piped, with neither NO_COLOR nor COLUMNS: no colour, and nothing cut.
#[test]
fn state_directory_in_table_form() {
    golden::assert_run(
        "test.inspect.state-directory",
        "inspect --now 1754550100 fixtures/samples",
        lj().args(["inspect", "--now", NOW, "fixtures/samples"])
            .current_dir(env!("CARGO_MANIFEST_DIR")),
        None,
    );
}

#[test]
fn state_directory_json_contract() {
    let dir = inspect_json(&["--now", NOW], &fixture("samples")).directory();
    assert_eq!(dir.schema_version, 1);
    let [
        schema::InspectFile::Journal(deferred),
        schema::InspectFile::Journal(journal),
        schema::InspectFile::Snapshot(snapshot),
    ] = &dir.files[..]
    else {
        panic!("journal, journal, snapshot: {:?}", dir.files);
    };
    let shown = |name: &str| fixture("samples").join(name).display().to_string();
    assert_eq!(deferred.path, shown(".dispatch_protocol_deferred.jsonl"));
    assert_eq!(journal.path, shown(".work_leases.jsonl"));
    assert_eq!(snapshot.path, shown(".state_tasks.json"));
    assert_eq!(
        dir.master_lock,
        schema::MasterLock {
            present: false,
            held: Some(false),
            holders: vec![],
            processes: vec![]
        }
    );
    assert_eq!(dir.missing, Vec::<String>::new());
    assert_eq!(journal.schema_version, 1);
    assert_eq!(journal.tail.state, TailState::Clean);
    assert_eq!(journal.active_count, 3);
    let first = &journal.active[0];
    assert_eq!(
        (first.id.as_str(), first.clock, first.age_seconds),
        (
            "554e5e40fca2a5b8c24c140366568747562caab78a4861e575e2d92a95b4d29a",
            Clock::Unix,
            Some(70.0)
        )
    );
    assert_eq!(snapshot.clock, Clock::Unix);
    let restored = snapshot.restored.as_ref().unwrap();
    let keys: Vec<&String> = restored.as_object().unwrap().keys().collect();
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
    assert_eq!(restored["leases"][0]["updated"], 0.0);
}

#[test]
fn now_makes_ages_reproducible() {
    let path = fixture("samples/.work_leases.jsonl");
    let v = inspect_json(&["--now", "1754550000"], &path).journal();
    let ages: Vec<(&str, Option<f64>)> = v
        .active
        .iter()
        .map(|a| (&a.id[..4], a.age_seconds))
        .collect();
    assert_eq!(
        ages,
        [
            ("554e", Some(-30.0)),
            ("c103", Some(0.0)),
            ("e352", Some(-3.0))
        ]
    );
    lj().args(["inspect", "--now=-5"])
        .arg(&path)
        .assert()
        .code(2)
        .stdout("")
        .stderr(bad_value(
            "-5",
            "--now <UNIX_SECONDS>",
            "\"-5\" is not a finite, non-negative number of Unix seconds",
        ));
}

#[test]
fn worker_and_id_filters() {
    let path = fixture("fidelity/j000/journal.jsonl");
    let v = inspect_json(&["--worker", "2"], &path).journal();
    let workers: Vec<i64> = v
        .active
        .iter()
        .map(|a| a.worker.as_i64().unwrap())
        .collect();
    assert_eq!(workers, [2, 2]);
    assert_eq!(v.active_count, 6, "the total stays unfiltered");
    assert_eq!(
        v.filter,
        Some(schema::Filter {
            worker: Some(2),
            id: None
        })
    );
    let v = inspect_json(&["--id", "83CE"], &path).journal();
    let found: Vec<(&str, Clock)> = v.active.iter().map(|a| (&a.id[..4], a.clock)).collect();
    assert_eq!(found, [("83ce", Clock::Legacy)]);
    assert_eq!(
        v.filter,
        Some(schema::Filter {
            worker: None,
            id: Some("83ce".into())
        })
    );
    // The table: "showing 2 of 6 active (worker 2)".
    golden::assert_case("fidelity-j000.inspect-worker");
    golden::assert_case("fidelity-j000.inspect-id");
    lj().args(["inspect", "--id", "xyz"])
        .arg(&path)
        .assert()
        .code(2)
        .stdout("")
        .stderr(bad_value(
            "xyz",
            "--id <PREFIX>",
            "\"xyz\" is not 1 to 64 hexadecimal digits",
        ));
}

#[test]
fn history_shows_every_record_and_its_effect() {
    // j001: lease, done, a second done and a late lease for one id.
    let path = fixture("fidelity/j001/journal.jsonl");
    let v = inspect_json(&["--history", "2a834ca6"], &path).journal();
    let history: Vec<(u64, &str, Option<i64>, &str)> = v
        .history
        .as_ref()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h.line,
                h.op.as_str(),
                h.worker.as_ref().and_then(|w| w.as_i64()),
                h.effect.as_str(),
            )
        })
        .collect();
    assert_eq!(
        history,
        [
            (3, "lease", Some(0), "activated"),
            (5, "done", None, "completed (worker 0)"),
            (8, "done", None, "ignored: already completed")
        ]
    );
    golden::assert_case("fidelity-j001.inspect-history");
}

#[test]
fn history_names_a_record_lost_to_a_glued_line() {
    let v = inspect_json(
        &["--history", "d877ee1d"],
        &fixture("samples/torn_tail_demo.jsonl"),
    )
    .journal();
    let effects: Vec<&str> = v
        .history
        .as_ref()
        .unwrap()
        .iter()
        .map(|h| h.effect.as_str())
        .collect();
    assert_eq!(
        effects,
        ["lost: glued onto a torn fragment, upstream ignores the line"]
    );
    assert_eq!(v.ignored, [("glued-record".to_string(), 1)].into());
    assert_eq!(v.active_count, 1);
    golden::assert_case("samples-torn_tail_demo.jsonl.inspect-history");
}

#[test]
fn kind_is_detected_from_content_or_given() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("leases-backup");
    fs::copy(fixture("samples/.work_leases.jsonl"), &journal).unwrap();
    let snapshot = dir.path().join("tasks-backup");
    fs::copy(fixture("samples/.state_tasks.json"), &snapshot).unwrap();
    assert_eq!(inspect_json(&[], &journal).journal().active_count, 3);
    assert_eq!(inspect_json(&[], &snapshot).snapshot().tasks, 4);
    // Forced the other way round, each is read as the named kind.
    let forced = inspect_json(&["--kind", "journal"], &snapshot).journal();
    assert_eq!(forced.ignored, [("bad-id".to_string(), 1)].into());
    let forced = inspect_json(&["--kind", "snapshot"], &journal).snapshot();
    assert!(!forced.parse.ok);
}

#[test]
fn colour_follows_the_flag_and_no_color() {
    let run = |args: &[&str], no_color: bool| {
        let mut cmd = lj();
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        let out = cmd
            .args(["inspect", "--now", NOW])
            .args(args)
            .arg("fixtures/samples/.work_leases.jsonl")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = run(&[], false);
    assert_eq!(run(&["--color", "never"], false), plain);
    assert_eq!(run(&[], true), plain);
    let coloured = run(&["--color", "always"], false);
    assert_ne!(coloured, plain);
    assert_eq!(strip_colour(&coloured), plain, "colour adds escapes only");
    golden::assert_golden("test.inspect.colour", &coloured);
}

#[test]
fn torn_and_damaged_journals_are_reported_not_refused() {
    let v = inspect_json(&[], &fixture("fidelity/j000/journal.jsonl")).journal();
    assert_eq!(v.ignored["not-an-object"], 2);
    assert_eq!(v.ignored["payload-id-mismatch"], 1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    let mut bytes = fs::read(fixture("samples/.work_leases.jsonl")).unwrap();
    bytes.extend_from_slice(b"{\"attempts\":1,\"clo");
    bytes.extend_from_slice(&[0u8; 7]);
    fs::write(&path, &bytes).unwrap();
    let v = inspect_json(&[], &path).journal();
    assert_eq!(
        v.tail,
        schema::Tail {
            state: TailState::Torn,
            bytes: 25,
            offset: 1313,
            zero_bytes: 7
        }
    );
    assert_eq!(v.ignored, [("torn-tail".to_string(), 1)].into());
    assert_eq!(v.active_count, 3);
    // "torn: 25 bytes … 7 NUL bytes".
    golden::assert_run(
        "test.inspect.torn-tail",
        "inspect --now 1754550100 $DIR/.work_leases.jsonl",
        lj().args(["inspect", "--now", NOW]).arg(&path),
        Some(dir.path()),
    );
}

/// inspect fails with one line: `leasejournal: PATH: MESSAGE`.
fn fails_with(path: &Path, message: &str) {
    lj().arg("inspect")
        .arg(path)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!("leasejournal: {}: {message}\n", path.display()));
}

/// What inspect says of a file that is neither kind.
const NEITHER: &str = "neither a lease journal nor a state snapshot (no journal record or snapshot object at the start); name the kind with --kind";

#[test]
fn bad_inputs_fail_with_one_line_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    fails_with(&dir.path().join("absent"), "no such file or directory");
    fails_with(
        dir.path(),
        "contains none of .work_leases.jsonl, .dispatch_protocol_deferred.jsonl, .state_tasks.json: not a SymCC state directory",
    );
    let fifo = dir.path().join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    fails_with(&fifo, "is a FIFO, not a regular file");
    fails_with(
        Path::new("/dev/null"),
        "is a character device, not a regular file",
    );
    let binary = dir.path().join("core");
    fs::write(
        &binary,
        [0x7fu8, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0xff, 0xfe],
    )
    .unwrap();
    fails_with(&binary, NEITHER);
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
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: permission denied\n",
            path.display()
        ));
}

#[test]
fn a_hundred_megabyte_line() {
    let dir = tempfile::tempdir().unwrap();
    let line = vec![b'x'; 100 << 20];
    let unknown = dir.path().join("blob");
    fs::write(&unknown, &line).unwrap();
    fails_with(&unknown, NEITHER);
    let journal = dir.path().join(".work_leases.jsonl");
    fs::write(&journal, &line).unwrap();
    let v = inspect_json(&[], &journal).journal();
    assert_eq!(
        v.tail,
        schema::Tail {
            state: TailState::Torn,
            bytes: 100 << 20,
            offset: 0,
            zero_bytes: 0
        }
    );
    assert_eq!(v.lines, 1);
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
    let v = inspect_json(&[], dir.path()).directory();
    assert_eq!(
        v.stale_temp_files,
        [schema::TempFile {
            name: ".work_leases.jsonl.123.456.tmp".into(),
            bytes: 7,
            belongs_to: Some(".work_leases.jsonl".into()),
            ours: false
        }]
    );
    golden::assert_run(
        "test.inspect.stale-temp-file",
        "inspect --now 1754550100 $DIR",
        lj().args(["inspect", "--now", NOW]).arg(dir.path()),
        Some(dir.path()),
    );
    assert_eq!(listing(dir.path()), before, "nothing written or created");
    assert!(!dir.path().join(".master-queue.lock").exists());
}

#[test]
fn a_held_master_lock_is_seen_through_proc_locks() {
    let dir = copy_dir(&fixture("samples"));
    let lock_path = dir.path().join(".master-queue.lock");
    let lock = fs::File::create(&lock_path).unwrap();
    let v = inspect_json(&[], dir.path()).directory();
    assert_eq!(
        v.master_lock,
        schema::MasterLock {
            present: true,
            held: Some(false),
            holders: vec![],
            processes: vec![]
        }
    );
    // SAFETY: a valid descriptor.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let pid = std::process::id();
    let v = inspect_json(&[], dir.path()).directory();
    assert_eq!(
        v.master_lock,
        schema::MasterLock {
            present: true,
            held: Some(true),
            holders: vec![pid.into()],
            processes: vec![schema::LockHolder {
                pid: pid.into(),
                command: Some(
                    fs::read_to_string("/proc/self/comm")
                        .unwrap()
                        .trim_end()
                        .to_string()
                ),
                leasejournal: false,
                inherited_from: None,
                inherited_from_running: false,
            }]
        }
    );
    // "a master is running", with our pid.
    let ran = golden::run(
        lj().args(["inspect", "--now", NOW]).arg(dir.path()),
        Some(dir.path()),
    )
    .replace(&crate::support::this_holder(), "pid $PID ($COMMAND)")
    .replace(&format!("pid {pid}"), "pid $PID");
    golden::assert_golden(
        "test.inspect.held-master-lock",
        &ran.render("$ leasejournal inspect --now 1754550100 $DIR  # while this test (pid $PID) holds the lock"),
    );
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
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let text = String::from_utf8(out.stdout).unwrap();
    let shown = text.replace(&dir.path().display().to_string(), "$DIR");
    // The path shows as `evil\n\u{1b}[31mred`: data never colours the
    // terminal.
    golden::assert_golden("test.inspect.control-characters", &shown);
    // Every line of the table is as wide on screen as the others.
    let widths: Vec<usize> = text
        .lines()
        .filter(|l| l.starts_with(['┌', '│', '╞', '└']))
        .map(|l| strip_colour(l).chars().count())
        .collect();
    assert_eq!(widths.len(), 6, "{text}");
    assert!(widths.iter().all(|&w| w == widths[0]), "{widths:?}\n{text}");
}

/// Several paths are read side by side and reported in the order given,
/// each exactly as it is alone, a blank line between two; a path that
/// cannot be read is named on stderr and among the errors, the others are
/// still reported, and the exit status is 2. Standard input among them is
/// read too. One thread or several, the bytes are the same.
#[test]
fn several_paths_are_reported_in_the_order_given() {
    let missing = fixture("no-such-state-directory");
    let journal = fixture("samples/.work_leases.jsonl");
    let paths = [
        fixture("samples"),
        journal.clone(),
        missing.clone(),
        Path::new("-").to_path_buf(),
        fixture("runbook/run1"),
        fixture("samples/.state_tasks.json"),
    ];
    let alone = |format: &str, path: &Path| {
        let out = lj()
            .args(["inspect", "--now", NOW, "--format", format])
            .arg(path)
            .pipe_stdin(&journal)
            .unwrap()
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", path.display());
        String::from_utf8(out.stdout).unwrap()
    };
    let readable: Vec<&PathBuf> = paths.iter().filter(|p| **p != missing).collect();
    let tables: Vec<String> = readable.iter().map(|p| alone("table", p)).collect();
    let stderr = format!(
        "leasejournal: {}: no such file or directory\n",
        missing.display()
    );
    for threads in ["1", "2"] {
        let out = lj()
            .env("RAYON_NUM_THREADS", threads)
            .args(["inspect", "--now", NOW])
            .args(&paths)
            .pipe_stdin(&journal)
            .unwrap()
            .output()
            .unwrap();
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8(out.stdout).unwrap(),
                String::from_utf8(out.stderr).unwrap()
            ),
            (Some(2), tables.join("\n"), stderr.clone()),
            "{threads} threads"
        );
    }
    let out = lj()
        .args(["inspect", "--now", NOW, "--format", "json"])
        .args(&paths)
        .pipe_stdin(&journal)
        .unwrap()
        .output()
        .unwrap();
    assert_eq!(
        (out.status.code(), String::from_utf8(out.stderr).unwrap()),
        (Some(2), stderr)
    );
    let value = |text: &[u8]| serde_json::from_slice::<serde_json::Value>(text).unwrap();
    let expected = serde_json::json!({
        "schema_version": 1,
        "kind": "inspections",
        "inspections": readable
            .iter()
            .map(|p| value(alone("json", p).as_bytes()))
            .collect::<Vec<_>>(),
        "errors": [{
            "path": missing.display().to_string(),
            "message": "no such file or directory",
        }],
    });
    assert_eq!(value(&out.stdout), expected);
    // The contract, typed.
    let many = crate::schema::parse::<Inspect>(&out.stdout).many();
    assert_eq!(many.inspections.len(), 5);
}

/// A file of a state directory that cannot be read is named in the error
/// of its directory's path.
#[test]
fn several_paths_name_the_file_that_failed() {
    let top = tempfile::tempdir().unwrap();
    let (bad, good) = (top.path().join("bad"), top.path().join("good"));
    crate::support::copy_dir_to(&fixture("samples"), &bad);
    crate::support::copy_dir_to(&fixture("samples"), &good);
    let journal = bad.join(".work_leases.jsonl");
    fs::set_permissions(&journal, fs::Permissions::from_mode(0o000)).unwrap();
    for dir in [top.path(), &bad, &good] {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (mut cmd, _keep) = crate::support::unprivileged_command();
    let out = cmd
        .args(["inspect", "--now", NOW, "--format", "json"])
        .args([&bad, &good])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!("leasejournal: {}: permission denied\n", journal.display())
    );
    let many = crate::schema::parse::<Inspect>(&out.stdout).many();
    assert_eq!(
        many.errors,
        [schema::PathError {
            path: bad.display().to_string(),
            message: format!("{}: permission denied", journal.display()),
        }]
    );
    assert_eq!(many.inspections.len(), 1);
}
