//! A writer that ignores the master's lock, failures after a change, and
//! the record a power loss leaves behind a sealing newline.
//!
//! The master is the journals' only writer and holds `.master-queue.lock`
//! while it runs, so the lock is the real protection. These tests show
//! that a process appending without it still cannot make a change lose a
//! record silently: it is refused before the rename, its records are
//! carried into the result, or nothing is changed. They also pin exit
//! status 4 (the change was made, a later step failed) and its message.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::golden;
use crate::schema::{self, Carried};
use crate::support::{lj, names, wait_for};
use leasejournal::engine::journal::encode::{lease_line, marker_line};
use leasejournal::engine::journal::{Clock, WorkId};
use leasejournal::engine::json::PyInt;

fn bin() -> &'static Path {
    assert_cmd::cargo::cargo_bin!("leasejournal")
}

/// The lease line of work item `n` (distinct ids for distinct `n`).
fn lease(n: u64, clock: Clock) -> Vec<u8> {
    let payload = format!("{{\"path\":\"/afl/queue/id:{n:06}\"}}");
    let id = WorkId::of_canonical(payload.as_bytes());
    lease_line(
        &id,
        &PyInt::Small((n % 4) as i64),
        1_754_550_000.0 + n as f64,
        &PyInt::Small(1),
        clock,
        payload.as_bytes(),
    )
}

/// The `done` line of work item `n`.
fn done(n: u64) -> Vec<u8> {
    let payload = format!("{{\"path\":\"/afl/queue/id:{n:06}\"}}");
    let id = WorkId::of_canonical(payload.as_bytes());
    marker_line("done", &id, Clock::Unix, 1_754_550_000.5 + n as f64)
}

/// A journal of `n` items, two in three completed, the rest active, with
/// duplicate leases so that compaction shrinks it.
fn journal(n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        out.extend(lease(i, Clock::Unix));
        out.extend(lease(i, Clock::Unix));
        if i % 3 != 0 {
            out.extend(done(i));
        }
    }
    out
}

/// The lines an appender writes: leases of items numbered from 1 000 000.
fn appended(k: u64) -> Vec<u8> {
    lease(1_000_000 + k, Clock::Unix)
}

/// Waits until `/proc/locks` shows a lease being broken: a process is
/// then blocked opening the file for writing.
fn wait_for_a_lease_break() {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let locks = fs::read_to_string("/proc/locks").unwrap_or_default();
        if locks
            .lines()
            .any(|l| l.contains("LEASE") && l.contains("BREAK"))
        {
            return;
        }
        assert!(Instant::now() < deadline, "no lease break seen: {locks}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A state directory holding `bytes` as its work journal.
fn state_dir(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    fs::write(&path, bytes).unwrap();
    (dir, path)
}

/// What `args --output` makes of `bytes`: the result a clean run
/// publishes.
fn clean_result(args: &[&str], bytes: &[u8]) -> Vec<u8> {
    let (dir, path) = state_dir(bytes);
    let out = dir.path().join("result.jsonl");
    lj().args(args)
        .arg("--output")
        .arg(&out)
        .arg(&path)
        .assert()
        .success()
        .stderr("");
    fs::read(out).unwrap()
}

/// What a writing command's JSON report says it carried: the records
/// appended while it replaced the journal, read through the report's
/// typed struct.
fn late_appends_carried(args: &[&str], stdout: &[u8]) -> Option<Carried> {
    match args[0] {
        "compact" => schema::parse::<schema::Compact>(stdout)
            .only()
            .late_appends_carried
            .clone(),
        "repair" => schema::parse::<schema::Repair>(stdout)
            .only()
            .late_appends_carried
            .clone(),
        "migrate" => schema::parse::<schema::Migrate>(stdout)
            .only()
            .late_appends_carried
            .clone(),
        other => panic!("{other}"),
    }
}

/// The journals and commands that publish by renaming: a compaction, a
/// repair that splits a glued record, and a migration of clock-less
/// records.
fn rename_cases() -> Vec<(&'static [&'static str], Vec<u8>)> {
    let mut glued = journal(40);
    glued.extend_from_slice(b"{\"attempts\":1,\"clo");
    glued.extend(lease(500, Clock::Unix));
    glued.extend(journal(3));
    let mut clockless = journal(20);
    let legacy = String::from_utf8(lease(600, Clock::Unix))
        .unwrap()
        .replace("\"clock\":\"unix\",", "");
    clockless.extend(legacy.as_bytes());
    vec![
        (&["compact"][..], journal(60)),
        (&["repair"][..], glued),
        (&["migrate", "--rewrite"][..], clockless),
    ]
}

#[test]
fn records_appended_during_the_rename_are_carried_in_order() {
    for (args, original) in rename_cases() {
        let result = clean_result(args, &original);
        let (dir, path) = state_dir(&original);
        let marker = dir.path().join("renaming");
        let child = Command::new(bin())
            .args(args)
            .args(["--apply", "--format=json"])
            .arg(&path)
            .env(
                "LEASEJOURNAL_FAILPOINTS",
                format!("renaming=pause:{}", marker.display()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(&marker.with_extension("reached"));
        // A writer that ignores the lock opens the journal now: its open
        // waits for the command's lease, then lands in the replaced file.
        let late: Vec<u8> = (0..3).flat_map(appended).collect();
        let writer = {
            let (path, late) = (path.clone(), late.clone());
            std::thread::spawn(move || {
                let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
                f.write_all(&late).unwrap();
            })
        };
        wait_for_a_lease_break();
        fs::write(marker.with_extension("continue"), b"").unwrap();
        writer.join().unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert_eq!(
            late_appends_carried(args, &out.stdout),
            Some(Carried {
                bytes: late.len() as u64,
                lines: 3
            }),
            "{args:?}"
        );
        let mut expected = result.clone();
        expected.extend(&late);
        assert!(
            fs::read(&path).unwrap() == expected,
            "{args:?}: the result, then the late records"
        );
        let bak: Vec<String> = names(dir.path())
            .into_iter()
            .filter(|n| n.contains(".bak."))
            .collect();
        assert_eq!(bak.len(), 1, "{args:?}");
        // The backup is a hard link of the replaced file, which the late
        // records were appended to: the original, then those records.
        let mut replaced = original.clone();
        replaced.extend(&late);
        assert!(fs::read(dir.path().join(&bak[0])).unwrap() == replaced);
        assert_eq!(
            stderr,
            format!(
                "leasejournal: backed up {} to {}\n",
                path.display(),
                dir.path().join(&bak[0]).display()
            ),
            "{args:?}"
        );
    }
}

#[test]
fn a_writer_that_keeps_the_journal_open_is_refused_before_the_rename() {
    // With leases, and where leases are refused (/proc shows the writer).
    let cases = rename_cases().into_iter().take(2);
    for ((args, original), failpoints) in
        cases.flat_map(|c| [(c.clone(), ""), (c, "lease=unsupported")])
    {
        let (dir, path) = state_dir(&original);
        let mut holder = fs::OpenOptions::new().append(true).open(&path).unwrap();
        holder.write_all(&appended(0)).unwrap();
        let before = fs::read(&path).unwrap();
        let started = std::time::SystemTime::now();
        let out = lj()
            .args(args)
            .arg("--apply")
            .arg(&path)
            .env("LEASEJOURNAL_FAILPOINTS", failpoints)
            .output()
            .unwrap();
        let stderr = golden::without_stamps(&String::from_utf8_lossy(&out.stderr), started);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{args:?}");
        assert_eq!(
            stderr,
            format!(
                "leasejournal: {}: another process has it open for writing and does not hold .master-queue.lock; stop it first. Nothing was changed; removed {}.bak.$TIME again\n",
                path.display(),
                path.display()
            ),
            "{args:?}"
        );
        holder.write_all(&appended(1)).unwrap();
        drop(holder);
        let mut expected = before;
        expected.extend(appended(1));
        assert!(fs::read(&path).unwrap() == expected, "{args:?}");
        assert_eq!(
            names(dir.path()),
            [".work_leases.jsonl"],
            "{args:?}: no backup, no temporary file, no lock file it created"
        );
    }
}

/// Runs `args --apply` on `original` while another thread appends a record
/// at a time, reopening the journal for each as upstream does, until the
/// command has ended. Returns the exit status, the final journal, what was
/// appended and what `.late.` files hold.
fn race(args: &[&str], original: &[u8], trial: u64) -> (i32, Vec<u8>, Vec<u8>, Vec<u8>, String) {
    let (dir, path) = state_dir(original);
    let stop = Arc::new(AtomicBool::new(false));
    let appender = {
        let (stop, path) = (stop.clone(), path.clone());
        std::thread::spawn(move || {
            let mut written = Vec::new();
            let mut k = trial * 10_000;
            // Give the command a head start that differs per trial, so the
            // appends meet it at different steps.
            std::thread::sleep(Duration::from_micros(trial * 1500 % 20_000));
            while !stop.load(Ordering::SeqCst) {
                let line = appended(k);
                let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
                f.write_all(&line).unwrap();
                drop(f);
                written.extend(line);
                k += 1;
                std::thread::sleep(Duration::from_micros(300));
            }
            written
        })
    };
    let out = lj().args(args).arg("--apply").arg(&path).output().unwrap();
    stop.store(true, Ordering::SeqCst);
    let written = appender.join().unwrap();
    let late: Vec<u8> = names(dir.path())
        .iter()
        .filter(|n| n.contains(".late."))
        .flat_map(|n| fs::read(dir.path().join(n)).unwrap())
        .collect();
    (
        out.status.code().unwrap_or(-1),
        fs::read(&path).unwrap(),
        written,
        late,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether `haystack` holds `needle` exactly once.
fn once(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
        == 1
}

#[test]
fn an_appender_that_ignores_the_lock_loses_no_record() {
    let mut torn = journal(200);
    torn.extend_from_slice(b"{\"attempts\":1,\"clo");
    let cases: [(&[&str], Vec<u8>); 3] = [
        (&["compact"], journal(2000)),
        (&["repair"], torn.clone()),
        (&["recover", "--discard", "--worker", "1"], torn),
    ];
    let mut seen = std::collections::BTreeMap::new();
    for (args, original) in &cases {
        for trial in 0..10 {
            let (code, journal, written, late, stderr) = race(args, original, trial);
            *seen.entry((args.join(" "), code)).or_insert(0) += 1;
            assert!(
                matches!(code, 0 | 2 | 4),
                "{args:?} trial {trial}: exit {code}: {stderr}"
            );
            assert_eq!(late.is_empty(), code != 4 || !stderr.contains(".late."));
            for line in written.split_inclusive(|b| *b == b'\n') {
                assert!(
                    once(&journal, line) != once(&late, line),
                    "{args:?} trial {trial}: exit {code}: an appended record is lost or doubled: {}\n{stderr}",
                    String::from_utf8_lossy(line)
                );
            }
            if code == 2 {
                let mut expected = original.clone();
                expected.extend(&written);
                assert!(
                    journal == expected,
                    "{args:?} trial {trial}: exit 2 changed the journal: {stderr}"
                );
            }
        }
    }
    eprintln!("races: exit statuses per command: {seen:?}");
}

#[test]
fn two_runs_at_once_are_one_run() {
    let mut torn = journal(300);
    torn.extend_from_slice(b"{\"attempts\":1,\"clo");
    for args in [
        &["compact"][..],
        &["repair"],
        &["recover", "--discard", "--all", "--now", "1754560000"],
    ] {
        let (alone, alone_path) = state_dir(&torn);
        lj().args(args)
            .args(["--apply", "--no-backup"])
            .arg(&alone_path)
            .assert()
            .success()
            .stderr(predicates::function::function(crate::support::notes_only));
        let expected = fs::read(&alone_path).unwrap();
        drop(alone);
        let (dir, path) = state_dir(&torn);
        let run = || {
            Command::new(bin())
                .args(args)
                .args(["--apply", "--no-backup"])
                .arg(&path)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (run(), run());
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let mut codes = [a.status.code(), b.status.code()];
        codes.sort();
        assert!(
            codes == [Some(0), Some(0)] || codes == [Some(0), Some(3)],
            "{args:?}: {codes:?}: {}{}",
            String::from_utf8_lossy(&a.stderr),
            String::from_utf8_lossy(&b.stderr)
        );
        assert!(fs::read(&path).unwrap() == expected, "{args:?}");
        assert!(
            !names(dir.path()).iter().any(|n| n.ends_with(".tmp")),
            "{args:?}"
        );
    }
}

#[test]
fn a_failure_after_the_change_exits_4_and_names_the_file() {
    let original = journal(50);
    let result = clean_result(&["compact"], &original);
    // The directory's fsync after the rename.
    let (dir, path) = state_dir(&original);
    let out = lj()
        .args(["compact", "--apply", "--no-backup"])
        .arg(&path)
        .env("LEASEJOURNAL_FAILPOINTS", "after-rename=error")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "leasejournal: {}: was rewritten, but could not fsync its directory: no space left on device\n",
            path.display()
        )
    );
    assert!(fs::read(&path).unwrap() == result);
    drop(dir);

    // With --format json, the report says what was changed and what failed.
    let (dir, path) = state_dir(&original);
    let out = lj()
        .args(["compact", "--apply", "--no-backup", "--format=json"])
        .arg(&path)
        .env("LEASEJOURNAL_FAILPOINTS", "after-rename=error")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let message = format!(
        "{}: was rewritten, but could not fsync its directory: no space left on device",
        path.display()
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("leasejournal: {message}\n")
    );
    let failed: schema::Failed = schema::parse(&out.stdout);
    assert_eq!(
        failed,
        schema::Failed {
            schema_version: 2,
            command: "compact".into(),
            mode: Some("apply".into()),
            files: Vec::new(),
            changed: vec![schema::ChangeMade {
                path: path.display().to_string(),
                done: "was rewritten".into(),
            }],
            error: message,
        }
    );
    assert!(fs::read(&path).unwrap() == result);
    drop(dir);

    // Standard output fails once the journal is rewritten.
    let (dir, path) = state_dir(&original);
    let out = Command::new(bin())
        .args(["compact", "--apply", "--no-backup"])
        .arg(&path)
        .stdout(fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "leasejournal: standard output: cannot write: no space left on device; this run already changed {} (was rewritten)\n",
            path.display()
        )
    );
    assert!(fs::read(&path).unwrap() == result);
    // A read-only command's failing standard output changed nothing.
    let out = Command::new(bin())
        .args(["inspect"])
        .arg(&path)
        .stdout(fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "leasejournal: standard output: cannot write: no space left on device\n"
    );
    drop(dir);

    // The append, then its fsync... is simulated by the tail-cut point:
    // the tail is cut, and what follows fails.
    let mut torn = original.clone();
    torn.extend_from_slice(b"{\"attempts\":1,\"clo");
    let (_dir, path) = state_dir(&torn);
    let out = lj()
        .args(["recover", "--discard", "--all", "--apply", "--no-backup"])
        .arg(&path)
        .env("LEASEJOURNAL_FAILPOINTS", "tail-cut=error")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    // The export of the discarded leases is made first; its name carries
    // the run's stamp.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let export = names(path.parent().unwrap())
        .into_iter()
        .find(|n| n.contains(".discarded."))
        .expect("an export");
    assert_eq!(
        stderr,
        format!(
            "leasejournal: exported 17 discarded leases of {} to {}\n\
             leasejournal: {}: had its torn tail cut, but then no space left on device\n",
            path.display(),
            path.parent().unwrap().join(export).display(),
            path.display()
        )
    );
    assert!(
        fs::read(&path).unwrap() == original,
        "only the tail was cut"
    );
}

#[test]
fn without_a_lease_a_torn_tail_is_ended_not_cut() {
    let original = journal(10);
    let mut torn = original.clone();
    torn.extend_from_slice(b"{\"attempts\":1,\"clo");
    let (_dir, path) = state_dir(&torn);
    let report: schema::Repair = crate::support::json_written(
        lj().args(["repair", "--apply", "--format=json"])
            .arg(&path)
            .env("LEASEJOURNAL_FAILPOINTS", "lease=unsupported"),
    );
    let file = report.only();
    assert_eq!(
        file.note.as_deref(),
        Some(
            "the torn tail was ended with a newline instead of cut: no lease could be had on the journal (another process has it open, or leases are refused here), and without one a cut could destroy what another process appends; the torn bytes stay as one line upstream ignores"
        )
    );
    assert_eq!(
        file.plan.tail,
        schema::TailFix::Terminate {
            offset: torn.len() as u64
        },
        "the plan says what was done"
    );
    let mut expected = torn.clone();
    expected.push(b'\n');
    assert!(fs::read(&path).unwrap() == expected);
    // Upstream ignores the ended line, and the next append lands cleanly.
    lj().args(["verify", "--quiet", "--ignore=seed-missing"])
        .arg(&path)
        .assert()
        .code(0)
        .stdout("")
        .stderr("");
}

#[test]
fn a_record_followed_by_a_nul_loses_only_the_nul() {
    // 33 completed items; the last done lost its newline, and a power
    // loss after a newline was added kept the new size without the byte.
    let mut bytes = Vec::new();
    for i in 0..33 {
        bytes.extend(lease(i, Clock::Unix));
        bytes.extend(done(i));
    }
    bytes.pop();
    bytes.push(0);
    let (_dir, path) = state_dir(&bytes);
    let report: schema::Repair = crate::support::json_ok(
        lj().args(["repair", "--apply", "--no-backup", "--format=json"])
            .arg(&path),
    );
    // Not a torn tail: the done before the NUL is whole, and goes back on
    // a line of its own.
    let plan = &report.only().plan;
    assert_eq!(plan.tail, schema::TailFix::None);
    let salvaged: Vec<(schema::Hidden, u64, u64, &str, schema::SalvageAction)> = plan
        .salvaged
        .iter()
        .map(|s| {
            (
                s.hidden,
                s.fragment_bytes,
                s.trailing_bytes,
                s.op.as_str(),
                s.action,
            )
        })
        .collect();
    assert_eq!(
        salvaged,
        [(
            schema::Hidden::ZeroFill,
            0,
            1,
            "done",
            schema::SalvageAction::Restored
        )]
    );
    assert_eq!(plan.completed_by_salvage.len(), 1);
    let v: schema::Inspect =
        crate::support::json_ok(lj().args(["inspect", "--format=json"]).arg(&path));
    let v = v.journal();
    assert_eq!((v.active_count, v.completed_count), (0, 33));
    let mut expected = bytes.clone();
    *expected.last_mut().unwrap() = b'\n';
    assert!(fs::read(&path).unwrap() == expected);
}

#[test]
fn a_closed_pipe_keeps_the_exit_status_and_a_change_is_still_told() {
    let mut torn = journal(30);
    torn.extend_from_slice(b"{\"attempts\":1,\"clo");
    let (_dir, path) = state_dir(&torn);
    // A reader that goes away at once: the output is dropped, the status
    // is the command's own.
    let closed_reader = |args: &[&str]| {
        let mut fds = [0; 2];
        // SAFETY: pipe fills two descriptors, which are then owned here.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: each descriptor is owned once.
        let (read, write) = unsafe {
            use std::os::fd::FromRawFd;
            (
                std::os::fd::OwnedFd::from_raw_fd(fds[0]),
                std::os::fd::OwnedFd::from_raw_fd(fds[1]),
            )
        };
        drop(read);
        Command::new(bin())
            .args(args)
            .arg(&path)
            .stdout(Stdio::from(write))
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    };
    let verify = closed_reader(&["verify", "--ignore=seed-missing"]);
    assert_eq!(verify.status.code(), Some(1), "a torn tail is a no-go");
    assert_eq!(String::from_utf8_lossy(&verify.stderr), "");
    let check = closed_reader(&["repair", "--check"]);
    assert_eq!(check.status.code(), Some(1));
    let apply = closed_reader(&["repair", "--apply", "--no-backup"]);
    assert_eq!(apply.status.code(), Some(4));
    assert_eq!(
        String::from_utf8_lossy(&apply.stderr),
        format!(
            "leasejournal: standard output: closed before the whole report was written; this run already changed {} (had its torn tail cut)\n",
            path.display()
        )
    );
}
