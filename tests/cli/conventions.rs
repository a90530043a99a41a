//! The habits of well-behaved command-line tools: a closed pipe is not an
//! error, `-` reads standard input, `diff --quiet`, `--check`, conflicting
//! flags refused before anything is read, no backup of a change that
//! changes nothing, ages in words, and no colour on a dumb terminal.

use std::fs;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

use crate::golden;
use crate::schema::{self, Severity};
use crate::support::{copy_dir, fixture, json_ok, lj, strip_colour};
use leasejournal::engine::journal::encode::{lease_line, marker_line};
use leasejournal::engine::journal::{Clock, WorkId};
use leasejournal::engine::json::PyInt;

fn bin() -> &'static std::path::Path {
    assert_cmd::cargo::cargo_bin!("leasejournal")
}

/// A journal of `n` completed leases: its JSON report is far larger than a
/// pipe's buffer.
fn completed_journal(n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let payload = format!("{{\"path\":\"/afl/queue/id:{i:06}\"}}");
        let id = WorkId::of_canonical(payload.as_bytes());
        let time = 1_754_550_000.0 + i as f64;
        out.extend(lease_line(
            &id,
            &PyInt::Small(1),
            time,
            &PyInt::Small(1),
            Clock::Unix,
            payload.as_bytes(),
        ));
        out.extend(marker_line("done", &id, Clock::Unix, time + 1.0));
    }
    out
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    fs::write(&path, completed_journal(5000)).unwrap();
    for args in [
        &["inspect", "--format", "json"][..],
        &["inspect"],
        &["verify", "--format", "json", "--max-examples", "0"],
    ] {
        let mut child = Command::new(bin())
            .args(args)
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut head = [0u8; 100];
        child
            .stdout
            .as_mut()
            .unwrap()
            .read_exact(&mut head)
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
}

/// Runs the binary with `stdin` piped in.
fn with_stdin(args: &[&str], stdin: &[u8]) -> std::process::Output {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that refuses its arguments exits without reading: the
    // pipe is then closed, which is no failure of the test.
    if let Err(err) = child.stdin.take().unwrap().write_all(stdin) {
        assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe, "{err}");
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_dash_reads_standard_input() {
    let journal = fs::read(fixture("samples/.work_leases.jsonl")).unwrap();
    let from_file: schema::Inspect = json_ok(
        lj().args(["inspect", "--format=json", "--now=1754550100"])
            .arg(fixture("samples/.work_leases.jsonl")),
    );
    let from_file = from_file.journal();
    // A pipe, the kind sniffed from the content.
    let out = with_stdin(
        &["inspect", "--format=json", "--now=1754550100", "-"],
        &journal,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let piped = schema::parse::<schema::Inspect>(&out.stdout).journal();
    assert_eq!(piped.path, "-");
    assert_eq!(piped.active, from_file.active);
    // A redirected file.
    let file = fs::File::open(fixture("samples/.state_tasks.json")).unwrap();
    let out = Command::new(bin())
        .args(["inspect", "--format=json", "-"])
        .stdin(Stdio::from(file))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let snap = schema::parse::<schema::Inspect>(&out.stdout).snapshot();
    assert_eq!((snap.path.as_str(), snap.tasks), ("-", 4));
    // verify: a torn tail, but nothing to fix in place for a pipe.
    let torn = fs::read(fixture("verify/torn-tail/journal.jsonl")).unwrap();
    let out = with_stdin(
        &["verify", "--format=json", "--ignore=seed-missing", "-"],
        &torn,
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let report: schema::Verify = schema::parse(&out.stdout);
    assert_eq!(report.count("torn-tail"), 1);
    let torn_tail: Vec<Option<&str>> = report
        .findings_of("torn-tail")
        .map(|f| f.fix.as_deref())
        .collect();
    assert_eq!(torn_tail, [None]);
    assert_eq!(report.next, Vec::<String>::new());
    // --kind for content that does not tell.
    let out = with_stdin(&["inspect", "--kind=journal", "-"], b"\n\n");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    golden::assert_golden(
        "test.conventions.blank-lines-from-standard-input",
        &String::from_utf8_lossy(&out.stdout),
    );
    // diff against standard input, either side; not both.
    let b = fs::read(fixture("diff/b.jsonl")).unwrap();
    let out = with_stdin(&["diff", "--format=json"], &b);
    assert_eq!(out.status.code(), Some(2), "A and B are required");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: the following required arguments were not provided:\n  <A>\n  <B>\n\n\
         Usage: leasejournal diff --format <FORMAT> <A> <B>\n\n\
         For more information, try '--help'.\n"
    );
    let a = fixture("diff/a.jsonl");
    let a = a.to_str().unwrap();
    let out = with_stdin(&["diff", "--format=json", a, "-"], &b);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let d: schema::Diff = schema::parse(&out.stdout);
    assert_eq!((d.a.as_str(), d.b.as_str()), (a, "-"));
    assert!(matches!(d.bytes, Some(schema::Bytes::Appended { .. })));
    let out = with_stdin(&["diff", "-", "-"], &b);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "leasejournal: diff reads standard input for one side only (- given for A and B)\n"
    );
}

#[test]
fn diff_quiet_answers_with_the_exit_status_alone() {
    let a = fixture("diff/a.jsonl");
    let b = fixture("diff/b.jsonl");
    lj().args(["diff", "--quiet"])
        .arg(&a)
        .arg(&a)
        .assert()
        .code(0)
        .stdout("")
        .stderr("");
    lj().args(["diff", "-q"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(1)
        .stdout("")
        .stderr("");
}

#[test]
fn conflicting_flags_and_an_existing_output_are_refused_before_anything_is_read() {
    let dir = copy_dir(&fixture("verify/torn-tail"));
    let path = dir.path().join("journal.jsonl");
    let before = fs::read(&path).unwrap();
    for (args, refusal) in [
        (
            &["repair", "--apply", "--output", "x.jsonl"][..],
            "the argument '--apply' cannot be used with '--output <FILE>'\n\nUsage: leasejournal repair --apply <PATH>...",
        ),
        (
            &["repair", "--apply", "--check"],
            "the argument '--apply' cannot be used with '--check'\n\nUsage: leasejournal repair --apply <PATH>...",
        ),
        (
            &["compact", "--check", "--output", "x.jsonl"],
            "the argument '--check' cannot be used with '--output <FILE>'\n\nUsage: leasejournal compact --check <PATH>",
        ),
    ] {
        lj().args(args)
            .arg(&path)
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!(
                "error: {refusal}\n\nFor more information, try '--help'.\n"
            ));
    }
    // The destination is judged first: the source is not even opened.
    let missing = dir.path().join("no-such-journal.jsonl");
    lj().args(["compact", "--output"])
        .arg(&path)
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(format!(
            "leasejournal: {}: already exists; refusing to overwrite it\n",
            path.display()
        ));
    lj().args(["repair", "--output", "/nonexistent/x.jsonl"])
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(
            "leasejournal: /nonexistent: no such directory for --output /nonexistent/x.jsonl; nothing was written\n",
        );
    // --check: the plan ("check: nothing is written"), and whether
    // anything would change: exit 1 for repair and compact, 0 for migrate.
    for (cmd, golden) in [
        ("repair", "test.conventions.repair-check"),
        ("compact", "test.conventions.compact-check"),
        ("migrate", "test.conventions.migrate-check"),
    ] {
        golden::assert_run(
            golden,
            &format!("{cmd} --check $DIR/journal.jsonl"),
            lj().args([cmd, "--check"]).arg(&path),
            Some(dir.path()),
        );
    }
    assert_eq!(fs::read(&path).unwrap(), before);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_change_that_changes_nothing_keeps_no_backup() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    fs::copy(fixture("fidelity/j000/journal.jsonl"), &path).unwrap();
    let backups = || {
        fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".bak.")
            })
            .count()
    };
    // "leasejournal: backed up …".
    golden::assert_run(
        "test.conventions.compact-with-a-backup",
        "compact --apply --drop-hidden $DIR/.work_leases.jsonl",
        lj().args(["compact", "--apply", "--drop-hidden"])
            .arg(&path),
        Some(dir.path()),
    );
    assert_eq!(backups(), 1);
    // "nothing to do: already compact", and nothing on stderr.
    golden::assert_run(
        "test.conventions.compact-again",
        "compact --apply $DIR/.work_leases.jsonl",
        lj().args(["compact", "--apply"]).arg(&path),
        Some(dir.path()),
    );
    assert_eq!(backups(), 1, "no second backup");
    // verify names the tool's leftovers, once, with their size.
    let out = lj()
        .args(["verify", "--format=json", "--ignore=seed-missing"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let report: schema::Verify = schema::parse(&out.stdout);
    assert_eq!(report.count("leasejournal-backups"), 1);
    let finding = report.findings_of("leasejournal-backups").next().unwrap();
    assert_eq!(finding.severity, Severity::Info);
    let backup = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.contains(".bak."))
        .unwrap();
    let size = fs::metadata(fixture("fidelity/j000/journal.jsonl"))
        .unwrap()
        .len();
    assert_eq!(
        finding.message,
        format!(
            "1 backup or export left by leasejournal, {} bytes in all: {backup}",
            leasejournal::operations::numbers::count(size)
        )
    );
}

#[test]
fn ages_read_as_words_and_a_dumb_terminal_gets_no_colour() {
    let path = fixture("verify/expired-lease/journal.jsonl");
    let v: schema::Verify = json_ok(
        lj().args([
            "verify",
            "--format=json",
            "--ignore=seed-missing",
            "--now=1754550100",
        ])
        .args(["--ttl", "30"])
        .arg(&path),
    );
    assert_eq!(
        v.findings[0].message,
        "active lease of worker 1 is 1m 40s old (TTL 30s): resume reclaims it"
    );
    // Under a terminal (script(1) gives one), colour by default; none for
    // TERM=dumb or NO_COLOR.
    let run = |env: &str| {
        let out = Command::new("script")
            .args(["-qc"])
            .arg(format!(
                "{env} {} verify --now 1754550100 {}",
                bin().display(),
                path.display()
            ))
            .arg("/dev/null")
            .output()
            .expect("script(1) from util-linux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // What a pipe gets, as the terminal shows it (its line ends are CRLF).
    let out = lj()
        .args(["verify", "--now", "1754550100"])
        .arg(&path)
        .output()
        .unwrap();
    let plain = String::from_utf8(out.stdout).unwrap().replace('\n', "\r\n");
    assert_eq!(run("TERM=dumb"), plain);
    assert_eq!(run("TERM=xterm NO_COLOR=1"), plain);
    let coloured = run("TERM=xterm");
    assert_ne!(coloured, plain);
    assert_eq!(strip_colour(&coloured), plain, "colour adds escapes only");
}

/// clap's whole message for a bad value: what is allowed, and no "tip"
/// about `--` for a value that starts with a dash.
fn bad_value(value: &str, flag: &str, why: &str) -> String {
    format!(
        "error: invalid value '{value}' for '{flag}': \"{value}\" {why}\n\nFor more information, try '--help'.\n"
    )
}

#[test]
fn bad_values_get_a_message_that_says_what_is_allowed() {
    for (args, flag, why) in [
        (
            &["recover", "--discard", "--ttl", "-5", "x"][..],
            "--ttl <SECONDS>",
            "is not a finite, non-negative number of seconds",
        ),
        (
            &["verify", "--now", "-1", "x"],
            "--now <UNIX_SECONDS>",
            "is not a finite, non-negative number of Unix seconds",
        ),
        (
            &["verify", "--max-examples", "-1", "x"],
            "--max-examples <N>",
            "is not a whole number from 0 up",
        ),
        (
            &["inspect", "--worker", "-3", "x"],
            "--worker <N>",
            "is not a worker rank (a whole number from 0 up)",
        ),
        (
            &["recover", "--discard", "--worker", "-3", "x"],
            "--worker <N>",
            "is not a worker rank (a whole number from 0 up)",
        ),
        (
            &["repair", "--lock-timeout", "-2", "x"],
            "--lock-timeout <SECONDS>",
            "is not a number of seconds between 0 and 1000000",
        ),
    ] {
        let value = args[args.len() - 2];
        lj().args(args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(bad_value(value, flag, why));
    }
}

#[test]
fn a_running_master_is_named_with_its_pid() {
    use std::os::unix::io::AsRawFd;
    let dir = copy_dir(&fixture("verify/torn-tail"));
    let lock = fs::File::create(dir.path().join(".master-queue.lock")).unwrap();
    // SAFETY: a valid descriptor.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    lj().args(["repair", "--apply"])
        .arg(dir.path().join("journal.jsonl"))
        .assert()
        .code(3)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: a running master, {}, holds .master-queue.lock; nothing was written. Stop it first, or wait for it with --lock-timeout SECONDS\n",
            dir.path().display(),
            crate::support::this_holder()
        ));
}

/// The golden files these cases compare with hold, among others, the lines
/// named in the comments.
#[test]
fn counts_are_grammatical() {
    // "changes     9 fields changed in 1 task, 1 task added, 1 task
    // removed, 1 field changed in 1 state lease, 1 state lease added, 1
    // state lease removed, 3 settings changed"; at full width, the cells
    // say "1 completion, 0 failures, 1 lease".
    golden::assert_run(
        "test.conventions.counts-in-a-diff",
        "diff --color=never fixtures/diff/a.state.json fixtures/diff/b.state.json",
        lj().args([
            "diff",
            "--color=never",
            "fixtures/diff/a.state.json",
            "fixtures/diff/b.state.json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR")),
        None,
    );
    // "ignored     1 line: 1 torn-tail".
    golden::assert_case("verify-torn-tail.inspect");
    // "totals      1 completion · 2 failures · 4 generated · 4 leases · 1s
    // elapsed" and "restore     resets the time of 1 state lease to 0.0".
    golden::assert_case("samples-state_tasks.json.inspect");
}

#[test]
fn inspect_shows_the_oldest_leases_and_says_how_many_it_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    let mut journal = Vec::new();
    for i in 0..30u64 {
        let payload = format!("{{\"path\":\"/q/{i}\"}}");
        let id = WorkId::of_canonical(payload.as_bytes());
        // Written newest first, so the table's order is its own.
        journal.extend(lease_line(
            &id,
            &PyInt::Small(1),
            1_754_550_000.0 - i as f64,
            &PyInt::Small(1),
            Clock::Unix,
            payload.as_bytes(),
        ));
    }
    fs::write(&path, &journal).unwrap();
    let rows = |extra: &[&str]| -> (Vec<String>, String) {
        let out = lj()
            .args(["inspect", "--color=never", "--now=1754550100"])
            .args(extra)
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        let paths = text
            .lines()
            .filter(|l| l.starts_with('│'))
            .skip(1)
            .map(|l| {
                l.split('┆')
                    .nth(7)
                    .unwrap()
                    .trim()
                    .trim_end_matches('│')
                    .trim()
                    .to_string()
            })
            .collect();
        (paths, text)
    };
    // The oldest first: /q/29 down to /q/0.
    let oldest =
        |n: usize| -> Vec<String> { (0..30).rev().take(n).map(|i| format!("/q/{i}")).collect() };
    let shown = |text: &str| text.replace(&dir.path().display().to_string(), "$DIR");
    let (paths, text) = rows(&[]);
    assert_eq!(paths, oldest(20));
    // Ends "… and 10 more active leases, newer than these (--all lists
    // every one; --format json always does)".
    golden::assert_golden("test.conventions.oldest-twenty", &shown(&text));
    let (paths, text) = rows(&["--limit", "29"]);
    assert_eq!(paths, oldest(29));
    // "… and 1 more active lease, newer".
    golden::assert_golden("test.conventions.oldest-twenty-nine", &shown(&text));
    let (paths, text) = rows(&["--all"]);
    assert_eq!(paths, oldest(30));
    golden::assert_golden("test.conventions.all-thirty", &shown(&text));
    let v: schema::Inspect = json_ok(lj().args(["inspect", "--format=json"]).arg(&path));
    assert_eq!(v.journal().active.len(), 30);
}

#[test]
fn tables_fit_the_terminal_and_keep_ids_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    let payload = format!(
        "{{\"path\":\"/srv/fuzz/{}/queue/id:000001,src:000000,op:havoc\"}}",
        "x".repeat(80)
    );
    let id = WorkId::of_canonical(payload.as_bytes());
    fs::write(
        &path,
        lease_line(
            &id,
            &PyInt::Small(7),
            1_754_550_000.0,
            &PyInt::Small(1),
            Clock::Unix,
            payload.as_bytes(),
        ),
    )
    .unwrap();
    let short = id.to_hex()[..12].to_string();
    let cases: [(usize, &[&str], &str); 6] = [
        (
            60,
            &["inspect", "--now=1754550100"],
            "test.conventions.inspect-at-60-columns",
        ),
        (
            60,
            &["recover", "--now=1754550100"],
            "test.conventions.recover-at-60-columns",
        ),
        (60, &["explain"], "test.conventions.explain-at-60-columns"),
        (
            100,
            &["inspect", "--now=1754550100"],
            "test.conventions.inspect-at-100-columns",
        ),
        (
            100,
            &["recover", "--now=1754550100"],
            "test.conventions.recover-at-100-columns",
        ),
        (100, &["explain"], "test.conventions.explain-at-100-columns"),
    ];
    for (columns, args, golden) in cases {
        let out = lj()
            .env("COLUMNS", columns.to_string())
            .args(args)
            .args(["--color=never"])
            .args((args[0] != "explain").then_some(&path))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        for line in text.lines().filter(|l| l.starts_with(['┌', '│', '╞', '└'])) {
            assert!(
                unicode_width::UnicodeWidthStr::width(line) <= columns,
                "{args:?} at {columns}: {line}"
            );
        }
        // The id stays whole; the path keeps "/srv/" and "havoc" around
        // an ellipsis.
        golden::assert_golden(
            golden,
            &text.replace(&dir.path().display().to_string(), "$DIR"),
        );
        if args[0] != "explain" {
            assert!(text.contains(&short), "{args:?}: the id stays whole");
        }
    }
    // diff's tables too.
    for (args, golden) in [
        (
            &[
                "diff",
                "--color=never",
                "fixtures/diff/a.state.json",
                "fixtures/diff/b.state.json",
            ][..],
            "test.conventions.diff-of-snapshots-at-60-columns",
        ),
        (
            &[
                "diff",
                "--color=never",
                "--history",
                "fixtures/diff/a.jsonl",
                "fixtures/diff/b.jsonl",
            ],
            "test.conventions.diff-of-journals-at-60-columns",
        ),
    ] {
        let out = lj()
            .env("COLUMNS", "60")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        for line in text.lines().filter(|l| l.starts_with(['┌', '│', '╞', '└'])) {
            assert!(
                unicode_width::UnicodeWidthStr::width(line) <= 60,
                "{args:?}: {line}"
            );
        }
        golden::assert_golden(golden, &text);
    }
    // Without a terminal or COLUMNS, nothing is cut.
    golden::assert_run(
        "test.conventions.inspect-uncut",
        "inspect --color=never --now=1754550100 $DIR/.work_leases.jsonl",
        lj().args(["inspect", "--color=never", "--now=1754550100"])
            .arg(&path),
        Some(dir.path()),
    );
}

#[test]
fn dev_stdin_reads_like_a_dash_and_lock_timeout_says_whom_it_waits_for() {
    let journal = fs::read(fixture("samples/.work_leases.jsonl")).unwrap();
    let out = with_stdin(&["inspect", "--format=json", "/dev/stdin"], &journal);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let v = schema::parse::<schema::Inspect>(&out.stdout).journal();
    assert_eq!((v.path.as_str(), v.active_count), ("/dev/stdin", 3));
    // A terminal (script(1) gives one) is told whom --lock-timeout waits for.
    use std::os::unix::io::AsRawFd;
    let dir = copy_dir(&fixture("verify/torn-tail"));
    let lock = fs::File::create(dir.path().join(".master-queue.lock")).unwrap();
    // SAFETY: a valid descriptor.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let out = Command::new("script")
        .arg("-qc")
        .arg(format!(
            "{} repair --apply --lock-timeout 1 {}",
            bin().display(),
            dir.path().join("journal.jsonl").display()
        ))
        .arg("/dev/null")
        .output()
        .expect("script(1) from util-linux");
    // A terminal's output: what it shows while it waits is redrawn as
    // time passes, so only the two messages are looked for.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "leasejournal: waiting up to 1s for {} to release {}/.master-queue.lock",
            crate::support::this_holder(),
            dir.path().display()
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "still holds .master-queue.lock at the end of --lock-timeout; nothing was written"
        ),
        "{text}"
    );
}

#[test]
fn a_filtered_diff_with_nothing_left_to_show_answers_same() {
    lj().args(["diff", "--quiet", "--id", "ffff"])
        .arg(fixture("diff/a.state.json"))
        .arg(fixture("diff/b.state.json"))
        .assert()
        .code(0)
        .stdout("")
        .stderr("");
    lj().args(["diff", "--quiet", "--id", "7afa"])
        .arg(fixture("diff/a.state.json"))
        .arg(fixture("diff/b.state.json"))
        .assert()
        .code(1)
        .stdout("")
        .stderr("");
    // Writers refuse standard input, naming it.
    lj().args(["repair", "-"])
        .assert()
        .code(2)
        .stdout("")
        .stderr("leasejournal: -: this command changes files and does not read standard input; name the journal\n");
    // A prefix that starts with a dash gets the prefix rule, not clap's tip.
    lj().args(["inspect", "--id", "-5", "x"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(bad_value(
            "-5",
            "--id <PREFIX>",
            "is not 1 to 64 hexadecimal digits",
        ));
}

#[test]
fn the_progress_bar_never_needs_more_than_60_columns() {
    // A journal over the 64 MiB threshold (sparse: NULs cost no disk).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a-journal-with-a-rather-long-name.jsonl");
    fs::File::create(&path).unwrap().set_len(70 << 20).unwrap();
    let out = Command::new("script")
        .arg("-qc")
        .arg(format!(
            "{} verify --color never {} > /dev/null",
            bin().display(),
            path.display()
        ))
        .arg("/dev/null")
        .output()
        .expect("script(1) from util-linux");
    // The bar is redrawn as time passes: how many times, and what each
    // drawing says, depends on timing, so each drawing is checked for its
    // width and its start only.
    // A drawing ends at a line end, a carriage return, or a terminal
    // control sequence (moving the cursor to draw again).
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "\n");
    let mut drawings = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                for n in chars.by_ref() {
                    if n.is_ascii_alphabetic() {
                        break;
                    }
                }
                drawings.push(String::new());
            }
            '\n' => drawings.push(String::new()),
            c => drawings.last_mut().unwrap().push(c),
        }
    }
    let mut bars = 0;
    for drawing in &drawings {
        // Without the padding that clears the line.
        let plain = drawing.trim_end();
        if plain.contains("ETA") {
            bars += 1;
            assert!(plain.chars().count() <= 60, "{plain}");
            assert!(plain.starts_with("a-journal-w"), "{plain}");
        }
    }
    assert!(bars > 0, "no progress bar was drawn: {text}");
}

#[test]
fn a_file_name_never_colours_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e\u{1b}[31m.jsonl");
    fs::copy(fixture("samples/.work_leases.jsonl"), &path).unwrap();
    for (cmd, golden) in [
        (
            "inspect",
            "test.conventions.inspect-of-a-file-named-with-an-escape",
        ),
        (
            "verify",
            "test.conventions.verify-of-a-file-named-with-an-escape",
        ),
    ] {
        // The name shows as `e\u{1b}[31m.jsonl`, with no escape in the
        // output.
        let ran = golden::run(
            lj().args([cmd, "--color=never", "--now=1754550100"])
                .arg(&path),
            Some(dir.path()),
        );
        assert!(!ran.stdout.contains('\u{1b}'), "{cmd}: {}", ran.stdout);
        golden::assert_golden(
            golden,
            &ran.render(&format!(
                "$ leasejournal {cmd} --color=never --now=1754550100 $DIR/e\\u{{1b}}[31m.jsonl"
            )),
        );
    }
}
