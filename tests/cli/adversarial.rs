//! Hostile files: each gives a clear message and a documented exit code
//! within bounded memory, and nothing is written. How long they take is
//! for scripts/bench.sh, not for a test on a shared machine.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::golden;
use crate::schema::{self, Inspect, TailState};
use crate::support::{json_ok, lj};

fn bin() -> &'static Path {
    assert_cmd::cargo::cargo_bin!("leasejournal")
}

/// `inspect --format json` of `path`.
fn inspect(path: &Path) -> Inspect {
    json_ok(lj().args(["inspect", "--format=json"]).arg(path))
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
    let not_an_object = |v: Inspect| {
        let v = v.journal();
        assert_eq!(v.ignored, [("not-an-object".to_string(), 1)].into());
        assert_eq!((v.lines, v.active_count), (1, 0));
    };
    if !has_time() {
        not_an_object(inspect(&path));
        return;
    }
    let (code, stdout, stderr, rss) = measured(&["inspect", "--format=json"], &path);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, "");
    not_an_object(schema::parse(stdout.as_bytes()));
    // Memory is bounded by the line, not by the values in it.
    assert!(rss < 1_200_000, "peak RSS {rss} KiB for a 200 MB line");
    // One line, and not a record: not a journal the master wrote (no-go).
    let (code, stdout, stderr, _) = measured(&["verify", "--quiet"], &path);
    assert_eq!((code, stdout.as_str(), stderr.as_str()), (1, "", ""));
}

#[test]
fn nesting_a_million_levels_deep() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.jsonl");
    fs::write(&path, format!("{}\n", "[".repeat(1_000_000))).unwrap();
    let v = inspect(&path).journal();
    assert_eq!(v.ignored, [("too-deep".to_string(), 1)].into());
    let snapshot = dir.path().join("deep.json");
    fs::write(&snapshot, format!("{{\"stats\":{}", "[".repeat(1_000_000))).unwrap();
    let v = inspect(&snapshot).snapshot();
    assert!(!v.parse.ok);
    assert_eq!(
        v.parse.error.as_deref(),
        Some("nested deeper than 980 levels at byte 988"),
    );
    // snapshot-corrupt, a no-go.
    golden::assert_run(
        "test.adversarial.verify-a-deep-snapshot",
        "verify --now 1754550100 $DIR/deep.json",
        lj().args(["verify", "--now", "1754550100"]).arg(&snapshot),
        Some(dir.path()),
    );
}

#[test]
fn only_nul_bytes_and_random_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let nul = dir.path().join(".work_leases.jsonl");
    fs::write(&nul, vec![0u8; 1 << 20]).unwrap();
    let v = inspect(&nul).journal();
    assert_eq!(
        v.tail,
        schema::Tail {
            state: TailState::Torn,
            bytes: 1 << 20,
            offset: 0,
            zero_bytes: 1 << 20
        }
    );
    assert_eq!(v.active_count, 0);
    // Resume's first append would glue onto the NULs: a zero-filled-tail,
    // a no-go that `leasejournal repair --apply` fixes.
    golden::assert_run(
        "test.adversarial.verify-nul-bytes",
        "verify --now 1754550100 $DIR/.work_leases.jsonl",
        lj().args(["verify", "--now", "1754550100"]).arg(&nul),
        Some(dir.path()),
    );
    let unknown = dir.path().join("blob");
    fs::write(&unknown, vec![0u8; 4096]).unwrap();
    lj().arg("inspect")
        .arg(&unknown)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: neither a lease journal nor a state snapshot (no journal record or snapshot object at the start); name the kind with --kind\n",
            unknown.display()
        ));
    let random = crate::support::noise(0x1234_5678_9abc_def1, 2 << 20);
    let journal = dir.path().join("random.jsonl");
    fs::write(&journal, &random).unwrap();
    let v = inspect(&journal).journal();
    assert_eq!(v.active_count, 0);
    // The lines universal newlines make of 2 MiB of (seeded) noise.
    assert_eq!(v.lines, 16_313);
    // Corrupt lines, and the torn tail that makes it a no-go.
    golden::assert_run(
        "test.adversarial.verify-random-bytes",
        "verify --now 1754550100 $DIR/random.jsonl",
        lj().args(["verify", "--now", "1754550100"]).arg(&journal),
        Some(dir.path()),
    );
    let snapshot = dir.path().join("random.json");
    fs::write(&snapshot, &random).unwrap();
    // snapshot-corrupt.
    golden::assert_run(
        "test.adversarial.verify-a-random-snapshot",
        "verify --now 1754550100 $DIR/random.json",
        lj().args(["verify", "--now", "1754550100"]).arg(&snapshot),
        Some(dir.path()),
    );
    // Refused (nothing in it changes the state: emptying it is the
    // operator's call), then written when told.
    let garbage = fs::read(&journal).unwrap();
    golden::assert_run(
        "test.adversarial.compact-random-bytes",
        "compact --apply $DIR/random.jsonl",
        lj().args(["compact", "--apply"]).arg(&journal),
        Some(dir.path()),
    );
    assert_eq!(fs::read(&journal).unwrap(), garbage);
    golden::assert_run(
        "test.adversarial.compact-random-bytes-allow-empty",
        "compact --apply --allow-empty $DIR/random.jsonl",
        lj().args(["compact", "--apply", "--allow-empty"])
            .arg(&journal),
        Some(dir.path()),
    );
    let v = inspect(&journal).journal();
    assert_eq!(v.bytes, 0, "the compacted garbage is an empty journal");
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
        // Where the truncation meets the read depends on timing: any of
        // the verdicts a file can get, but always a whole report.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "delay {delay}: {:?} {stderr}",
            out.status
        );
        assert_eq!(stderr, "", "delay {delay}");
        let v: schema::Verify = schema::parse(&out.stdout);
        assert_eq!(Some(v.exit_code), out.status.code());
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
    for (path, why) in [
        (fifo.as_path(), "is a FIFO, not a regular file"),
        (
            Path::new("/dev/null"),
            "is a character device, not a regular file",
        ),
        (dangling.as_path(), "dangling symbolic link"),
    ] {
        let refusal = format!("leasejournal: {}: {why}\n", path.display());
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
                .code(2);
            // verify's report names the path it could not check (once: not
            // on stderr too), and claims no invariant checked.
            if cmd[0] == "verify" {
                assert.stderr("").stdout(format!(
                    "could not check {}: {why}\n\
                     verdict: incomplete, a path could not be checked (0 errors, 0 warnings, 0 info)\n",
                    path.display()
                ));
            } else {
                assert.stderr(refusal.clone()).stdout("");
            }
        }
        lj().arg("diff")
            .arg(path)
            .arg(path)
            .timeout(Duration::from_secs(60))
            .assert()
            .code(2)
            .stdout("")
            .stderr(refusal);
    }
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        2,
        "nothing was created"
    );
}
