//! `leasejournal verify` and `explain`: one fixture per finding code, the
//! exit codes, every option, and agreement with replay on every fidelity
//! case.

use std::fs;
use std::io::Write;
use std::path::PathBuf;

use serde_json::Value;

use crate::golden;
use crate::schema::{self, Severity, Verdict, Verify};
use crate::support::{cases, fixture, json_ok, lj};

const NOW: &str = "1754550100";
const LONG_TTL: &str = "1000000000";

/// Runs verify --format json and returns (exit code, report). The
/// fixtures' seeds (/afl/queue/…) do not exist here, so `seed-missing`
/// is muted but for its own fixture.
fn verify_json(args: &[&str], paths: &[PathBuf]) -> (i32, Verify) {
    let mut cmd = lj();
    cmd.args(["verify", "--format=json", "--max-examples=0", "--now", NOW])
        .args(args);
    if !paths
        .iter()
        .any(|p| p.to_string_lossy().contains("seed-missing"))
    {
        cmd.arg("--ignore=seed-missing");
    }
    // Talk goes to stderr only for a path that could not be checked.
    crate::support::verify_output(&cmd.args(paths).output().unwrap())
}

/// The severity named in the cases' table.
fn severity(name: &str) -> Severity {
    match name {
        "error" => Severity::Error,
        "warning" => Severity::Warning,
        "info" => Severity::Info,
        other => panic!("{other}"),
    }
}

/// (code, fixture path under fixtures/verify, extra args, line, severity).
type Case = (
    &'static str,
    &'static str,
    &'static [&'static str],
    Option<u64>,
    &'static str,
);

const CASES: &[Case] = &[
    (
        "not-a-journal",
        "not-a-journal/journal.jsonl",
        &["--ignore=corrupt-line"],
        Some(1),
        "error",
    ),
    (
        "torn-tail",
        "torn-tail/journal.jsonl",
        &[],
        Some(2),
        "error",
    ),
    (
        "zero-filled-tail",
        "zero-filled-tail/journal.jsonl",
        &[],
        Some(2),
        "error",
    ),
    (
        "unterminated-tail",
        "unterminated-tail/journal.jsonl",
        &[],
        Some(2),
        "error",
    ),
    (
        "glued-record",
        "glued-record/journal.jsonl",
        &[],
        Some(2),
        "error",
    ),
    (
        "corrupt-line",
        "corrupt-line/journal.jsonl",
        &[],
        Some(2),
        "warning",
    ),
    (
        "invalid-utf8",
        "invalid-utf8/journal.jsonl",
        &[],
        Some(1),
        "warning",
    ),
    ("bom", "bom/journal.jsonl", &[], Some(1), "error"),
    (
        "duplicate-member",
        "duplicate-member/journal.jsonl",
        &[],
        Some(2),
        "warning",
    ),
    (
        "non-finite-number",
        "non-finite-number/journal.jsonl",
        &[],
        Some(2),
        "warning",
    ),
    (
        "not-an-object",
        "not-an-object/journal.jsonl",
        &[],
        Some(2),
        "warning",
    ),
    (
        "blank-line",
        "blank-line/journal.jsonl",
        &[],
        Some(2),
        "info",
    ),
    ("bad-id", "bad-id/journal.jsonl", &[], Some(2), "warning"),
    (
        "payload-id-mismatch",
        "payload-id-mismatch/journal.jsonl",
        &[],
        Some(1),
        "warning",
    ),
    (
        "rejected-field",
        "rejected-field/journal.jsonl",
        &[],
        Some(2),
        "warning",
    ),
    (
        "lenient-field",
        "lenient-field/journal.jsonl",
        &[],
        Some(1),
        "warning",
    ),
    (
        "unknown-op",
        "unknown-op/journal.jsonl",
        &[],
        Some(2),
        "warning",
    ),
    (
        "unknown-field",
        "unknown-field/journal.jsonl",
        &[],
        Some(1),
        "info",
    ),
    (
        "non-canonical-encoding",
        "non-canonical-encoding/journal.jsonl",
        &[],
        Some(1),
        "info",
    ),
    (
        "double-lease",
        "double-lease/journal.jsonl",
        &[],
        Some(2),
        "warning",
    ),
    (
        "lease-after-done",
        "lease-after-done/journal.jsonl",
        &[],
        Some(3),
        "warning",
    ),
    (
        "orphan-done",
        "orphan-done/journal.jsonl",
        &[],
        Some(1),
        "warning",
    ),
    (
        "orphan-reclaim",
        "orphan-reclaim/journal.jsonl",
        &[],
        Some(1),
        "info",
    ),
    (
        "legacy-clock-lease",
        "legacy-clock-lease/journal.jsonl",
        &[],
        Some(1),
        "info",
    ),
    (
        "seed-missing",
        "seed-missing/journal.jsonl",
        &[],
        Some(1),
        "error",
    ),
    (
        "requeued-twice",
        "requeued-twice/journal.jsonl",
        &[],
        Some(1),
        "warning",
    ),
    (
        "future-lease",
        "future-lease/journal.jsonl",
        &[],
        Some(1),
        "warning",
    ),
    (
        "clock-regression",
        "clock-regression/journal.jsonl",
        &[],
        Some(2),
        "warning",
    ),
    (
        "expired-lease",
        "expired-lease/journal.jsonl",
        &["--ttl", "30"],
        Some(1),
        "info",
    ),
    (
        "deferred-done",
        "deferred-done/.dispatch_protocol_deferred.jsonl",
        &[],
        Some(2),
        "warning",
    ),
    (
        "snapshot-corrupt",
        "snapshot-corrupt/state.json",
        &[],
        None,
        "error",
    ),
    (
        "snapshot-legacy-clock",
        "snapshot-legacy-clock/state.json",
        &[],
        None,
        "warning",
    ),
    (
        "snapshot-inherited-lease",
        "snapshot-inherited-lease/state.json",
        &[],
        None,
        "info",
    ),
    (
        "snapshot-dropped-entry",
        "snapshot-dropped-entry/state.json",
        &[],
        None,
        "error",
    ),
    (
        "snapshot-non-finite",
        "snapshot-non-finite/state.json",
        &[],
        None,
        "warning",
    ),
    (
        "snapshot-duplicate-member",
        "snapshot-duplicate-member/state.json",
        &[],
        None,
        "warning",
    ),
    ("stale-temp-file", "stale-temp-file", &[], None, "warning"),
    ("missing-journal", "missing-journal", &[], None, "info"),
    (
        "leasejournal-backups",
        "leasejournal-backups",
        &[],
        None,
        "info",
    ),
];

fn expected_exit(severity: &str) -> i32 {
    if severity == "error" { 1 } else { 0 }
}

/// The remedy verify names for a code's fixture, as a command line.
fn remedy(code: &str, path: &std::path::Path) -> Option<String> {
    let shown = path.display().to_string();
    match code {
        "torn-tail" | "zero-filled-tail" | "unterminated-tail" | "glued-record" | "bom" => {
            Some(format!("leasejournal repair --apply {shown}"))
        }
        "snapshot-legacy-clock" => Some(format!("leasejournal migrate --apply {shown}")),
        _ => None,
    }
}

#[test]
fn every_code_has_a_fixture_that_triggers_it_alone() {
    for (code, rel, extra, line, sev) in CASES {
        let args: Vec<&str> = if extra.is_empty() {
            vec!["--ttl", LONG_TTL]
        } else {
            extra.to_vec()
        };
        let path = fixture("verify").join(rel);
        let (exit, report) = verify_json(&args, std::slice::from_ref(&path));
        assert_eq!(
            report.counts,
            [(code.to_string(), 1)].into(),
            "{code}: only {code} fires"
        );
        let [finding] = &report.findings[..] else {
            panic!("{code}: one finding: {:?}", report.findings);
        };
        // The message itself is in the fixture's golden files
        // (fixtures/golden/verify-<code>.verify.txt).
        // In the fixture: the file itself, or one in the directory.
        let file = path.display().to_string();
        assert_eq!(
            (
                finding.code.as_str(),
                finding.severity,
                finding.line,
                finding.file.starts_with(&file)
            ),
            (*code, severity(sev), *line, true),
            "{code}"
        );
        assert_eq!(exit, expected_exit(sev), "{code}: exit status");
        assert_eq!(report.schema_version, 4);
        let verdict = if *sev == "error" {
            Verdict::NoGo
        } else {
            Verdict::Go
        };
        assert_eq!(report.verdict, verdict, "{code}");
        let fix = remedy(code, &path);
        assert_eq!(finding.fix, fix, "{code}: fix");
        assert_eq!(report.next, Vec::from_iter(fix), "{code}");
        if *sev == "warning" {
            let (strict, report) = verify_json(
                &["--strict", "--ttl", LONG_TTL],
                std::slice::from_ref(&path),
            );
            assert_eq!(strict, 1, "{code}: --strict fails on warnings");
            assert_eq!(report.verdict, Verdict::NoGo);
        }
    }
}

/// Runs a remedy as verify prints it (`leasejournal ARGS… PATH`), with
/// `--format json`: it writes, and its only talk is the backup it made.
fn run_remedy(command: &str) {
    let words: Vec<&str> = command.split(' ').collect();
    assert_eq!(words[0], "leasejournal", "{command}");
    let out = lj()
        .arg(words[1])
        .arg("--format=json")
        .args(&words[2..])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{command}: {stderr}");
    // What it wrote, and where it kept the backup.
    let written: Vec<(String, Option<String>)> = match words[1] {
        "repair" => schema::parse::<schema::Repair>(&out.stdout)
            .files
            .into_iter()
            .filter(|f| f.written)
            .map(|f| (f.path, f.backup))
            .collect(),
        "migrate" => schema::parse::<schema::Migrate>(&out.stdout)
            .files
            .into_iter()
            .filter(|f| f.written)
            .map(|f| (f.path, f.backup))
            .collect(),
        other => panic!("{command}: not a remedy: {other}"),
    };
    let notes: String = written
        .iter()
        .map(|(path, backup)| {
            format!(
                "leasejournal: backed up {path} to {}\n",
                backup.as_deref().unwrap()
            )
        })
        .collect();
    assert!(!notes.is_empty(), "{command}: wrote nothing");
    assert_eq!(stderr, notes, "{command}");
}

/// The active leases of a journal as `inspect --format json` lists them.
fn active_ids(path: &std::path::Path) -> std::collections::BTreeSet<String> {
    inspect(path).active.into_iter().map(|a| a.id).collect()
}

/// `inspect --format json` of a journal.
fn inspect(path: &std::path::Path) -> schema::InspectJournal {
    json_ok::<schema::Inspect>(lj().args(["inspect", "--format=json"]).arg(path)).journal()
}

#[test]
fn every_fixable_code_is_fixed_by_its_remedy_without_losing_a_lease() {
    for (code, rel, ..) in CASES {
        let src = fixture("verify").join(rel);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(src.file_name().unwrap());
        let Some(fix) = remedy(code, &path) else {
            continue;
        };
        fs::copy(&src, &path).unwrap();
        let is_journal = rel.ends_with(".jsonl");
        let before = is_journal.then(|| active_ids(&path));
        run_remedy(&fix);
        let (exit, report) = verify_json(&["--ttl", LONG_TTL], std::slice::from_ref(&path));
        assert_eq!(
            (exit, report.verdict),
            (0, Verdict::Go),
            "{code}: {report:?}"
        );
        assert_eq!(report.count(code), 0, "{code}: {report:?}");
        assert_eq!(report.next, Vec::<String>::new());
        if let Some(before) = before {
            let after = active_ids(&path);
            assert!(after.is_superset(&before), "{code}: a lease was lost");
        }
    }
}

#[test]
fn catalog_codes_all_have_a_test() {
    let catalog: schema::Catalog = json_ok(lj().args(["explain", "--list", "--format=json"]));
    assert_eq!(catalog.schema_version, 1);
    let tested: Vec<&str> = CASES.iter().map(|c| c.0).collect();
    let elsewhere = [
        "snapshot-truncated",
        "snapshot-lease-without-stats",
        "live-master",
        // tests/cli/remote.rs: it needs a shared mount.
        "master-unseen",
        // tests/cli/ledger_verify.rs: ledgers built for them.
        "ledger-unread-shards",
        "ledger-torn-tail",
        "ledger-unterminated-tail",
        "ledger-ignored-line",
        "ledger-blank-line",
        "ledger-misplaced",
        "ledger-duplicate",
        "ledger-not-a-file",
        "ledger-not-a-directory",
        "ledger-count-unknown",
        "ledger-off",
        "lease-not-in-ledger",
        // src/operations/findings/ledger.rs: 5,000,001 digests are a unit
        // test's report, not a fixture.
        "ledger-over-limit",
        // tests/cli/table_verify.rs: one table built for all of them.
        "table-record-raises",
        // tests/cli/table.rs: a table read at a count it was not written at.
        "table-count-mismatch",
        "table-shard-not-directory",
        "table-lock-not-regular",
        "table-record-rejected",
        "table-misplaced-record",
        "table-unread-directory",
        "table-committing-stranded",
        "table-expired-lease",
        "table-future-updated",
        "table-owner-dead",
        "table-lock-held",
        "table-temp-file",
        "table-probe-dir",
        "table-done-records",
        "table-odd-record",
    ];
    assert_eq!(catalog.codes.len(), tested.len() + elsewhere.len());
    for entry in &catalog.codes {
        let code = entry.code.as_str();
        assert!(
            tested.contains(&code) || elsewhere.contains(&code),
            "{code} has no fixture test"
        );
    }
}

#[test]
fn a_lease_without_stats_is_also_inherited() {
    let (exit, report) = verify_json(
        &[],
        &[fixture("verify/snapshot-lease-without-stats/state.json")],
    );
    assert_eq!(exit, 0);
    assert_eq!(
        report.counts,
        [
            ("snapshot-inherited-lease".to_string(), 1),
            ("snapshot-lease-without-stats".to_string(), 1)
        ]
        .into()
    );
}

#[test]
fn more_than_65536_stats_are_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    let entries: Vec<String> = (0..65540u32)
        .map(|i| format!("{{\"task_id\":\"{i:064x}\"}}"))
        .collect();
    fs::write(
        &path,
        format!(
            "{{\"clock\":\"unix\",\"leases\":[],\"stats\":[{}]}}",
            entries.join(",")
        ),
    )
    .unwrap();
    let (exit, report) = verify_json(&[], &[path]);
    assert_eq!(exit, 0);
    assert_eq!(
        report.counts,
        [("snapshot-truncated".to_string(), 1)].into()
    );
    assert_eq!(
        report.findings[0].message,
        "4 stats and 0 leases before the last 65536 are never read"
    );
}

#[test]
fn a_held_lock_is_a_live_master() {
    // Held by flock(1), not by this test process: a child another test
    // forks would inherit this process's lock until it execs, and be named
    // as a second holder.
    let dir = crate::support::copy_dir(&fixture("verify/live-master"));
    let lock_path = dir.path().join(".master-queue.lock");
    let Some(mut master) = crate::support::hold_master_lock(&lock_path, "a live master") else {
        return;
    };
    let pid = i64::from(master.id());
    let (exit, report) = verify_json(&["--ttl", LONG_TTL], &[dir.path().to_path_buf()]);
    assert_eq!((exit, report.verdict), (3, Verdict::Busy));
    assert_eq!(report.targets[0].master_pids, [pid]);
    assert_eq!(
        report.targets[0].master_lock,
        Some(dir.path().join(".master-queue.lock").display().to_string())
    );
    assert_eq!(report.counts, [("live-master".to_string(), 1)].into());
    assert_eq!(
        (
            report.findings[0].code.as_str(),
            report.findings[0].severity
        ),
        ("live-master", Severity::Warning)
    );
    // Busy wins over no-go and over a path that could not be checked.
    let (exit, report) = verify_json(
        &["--strict", "--ttl", LONG_TTL],
        &[
            dir.path().to_path_buf(),
            fixture("verify/torn-tail/journal.jsonl"),
            PathBuf::from("/nonexistent"),
        ],
    );
    assert_eq!((exit, report.verdict), (3, Verdict::Busy));
    // The writing commands refuse a running master's directory: next
    // holds only the other paths' commands.
    assert_eq!(report.count("torn-tail"), 1);
    assert_eq!(
        report.next,
        [format!(
            "leasejournal repair --apply {}",
            fixture("verify/torn-tail/journal.jsonl").display()
        )]
    );
    // A journal inside the directory is as busy as the directory.
    let (exit, _) = verify_json(
        &["--ttl", LONG_TTL],
        &[dir.path().join(".work_leases.jsonl")],
    );
    assert_eq!(exit, 3);
    // The job script's test: no RESUME while a master runs.
    lj().args(["verify", "--quiet", "--ttl", LONG_TTL])
        .arg(dir.path())
        .assert()
        .code(3)
        .stdout("")
        .stderr("");
    let shown = dir.path().display();
    let holder = format!("pid {pid} (flock)");
    lj().args(["verify", "--now", NOW, "--ttl", LONG_TTL, "--color=never"])
        .args(["--ignore", "seed-missing"])
        .arg(dir.path())
        .assert()
        .code(3)
        .stderr("")
        .stdout(format!(
            "{shown}\n  warning live-master  ×1\n      .master-queue.lock is held by {holder}: a master is running\n\
             checked L1 L2 L4 L5 L6; L3 and L7 cannot be checked from files\n\
             verdict: busy, a master is running (pid {pid} holds {shown}/.master-queue.lock); do not resume another, and change nothing until it stops (0 errors, 1 warning, 0 info)\n"
        ));
    // SAFETY: kill(2) of the holder's own process group (flock, sleep).
    unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
    master.wait().unwrap();
}

#[test]
fn invalid_utf8_inside_a_string_changes_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let line = fs::read(fixture("verify/lenient-field/journal.jsonl")).unwrap();
    let broken: Vec<u8> = String::from_utf8(line)
        .unwrap()
        .replacen("/afl/", "/a\u{1}l/", 1)
        .into_bytes()
        .into_iter()
        .map(|b| if b == 1 { 0xff } else { b })
        .collect();
    fs::write(&path, broken).unwrap();
    let (exit, report) = verify_json(&["--ttl", LONG_TTL], &[path]);
    // The lease was lost when the byte was written; resuming cannot make
    // that worse.
    assert_eq!(exit, 0);
    let utf8: Vec<(Severity, &str)> = report
        .findings_of("invalid-utf8")
        .map(|f| (f.severity, f.message.as_str()))
        .collect();
    assert_eq!(
        utf8,
        [(
            Severity::Warning,
            "1 invalid UTF-8 byte inside a string: deleting it changes the value"
        )]
    );
    assert_eq!(
        report.counts,
        [
            ("invalid-utf8".to_string(), 1),
            ("payload-id-mismatch".to_string(), 1)
        ]
        .into()
    );
}

#[test]
fn upstream_written_samples_verify_clean() {
    let (exit, report) = verify_json(&[], &[fixture("samples")]);
    assert_eq!((exit, report.verdict), (0, Verdict::Go));
    assert_eq!(report.next, Vec::<String>::new());
    // Their real findings: every active lease expires on resume (TTL 0),
    // and the snapshot's state lease is from the previous epoch.
    assert_eq!(
        report.counts,
        [
            ("expired-lease".to_string(), 3),
            ("snapshot-inherited-lease".to_string(), 1)
        ]
        .into()
    );
    assert_eq!(report.checked, ["L1", "L2", "L4", "L5", "L6"]);
    assert_eq!(report.not_checkable, ["L3", "L7"]);
    assert_eq!(report.schema_version, 4);
    let (_, legacy) = verify_json(&[], &[fixture("samples/legacy_demo.input.jsonl")]);
    assert_eq!(legacy.count("legacy-clock-lease"), 1);
    // After upstream's compaction and recovery nothing legacy is left.
    let (exit, migrated) = verify_json(&[], &[fixture("samples/legacy_demo.jsonl")]);
    assert_eq!(exit, 0);
    assert_eq!(migrated.counts, Default::default());
}

/// On every fidelity case, running the commands verify names keeps every
/// lease upstream saw active (active still, or completed by a salvaged
/// done), and leaves only findings no command fixes.
#[test]
fn following_next_on_every_fidelity_case_loses_no_lease() {
    for case in cases(&['j', 'w']) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        fs::copy(case.join("journal.jsonl"), &path).unwrap();
        let expected: Value =
            serde_json::from_slice(&fs::read(case.join("expected.json")).unwrap()).unwrap();
        let (_, report) = verify_json(&[], std::slice::from_ref(&path));
        for command in &report.next {
            run_remedy(command);
        }
        let after = inspect(&path);
        let active = after.active_ids();
        let completed: Vec<&str> = after.completed.iter().map(String::as_str).collect();
        for id in expected["replay"]["leases"].as_object().unwrap().keys() {
            assert!(
                active.contains(&id.as_str()) || completed.contains(&id.as_str()),
                "{}: {id} is no longer active",
                case.display()
            );
        }
        let (exit, again) = verify_json(&[], std::slice::from_ref(&path));
        let fixable: Vec<&schema::Finding> =
            again.findings.iter().filter(|f| f.fix.is_some()).collect();
        assert!(fixable.is_empty(), "{}: {fixable:?}", case.display());
        assert_eq!(again.next, Vec::<String>::new(), "{}", case.display());
        assert!(
            exit == 0 || again.verdict == Verdict::NoGo,
            "{}",
            case.display()
        );
    }
}

/// Every line the replay ignored has exactly one finding saying why.
#[test]
fn findings_agree_with_replay_on_every_fidelity_case() {
    let map = [
        ("blank", "blank-line"),
        ("torn-tail", "torn-tail"),
        ("glued-record", "glued-record"),
        ("bom", "bom"),
        ("duplicate-member", "duplicate-member"),
        ("non-finite-number", "non-finite-number"),
        ("payload-not-finite", "non-finite-number"),
        ("too-deep", "corrupt-line"),
        ("integer-too-long", "corrupt-line"),
        ("corrupt", "corrupt-line"),
        ("not-an-object", "not-an-object"),
        ("bad-id", "bad-id"),
        ("payload-not-object", "rejected-field"),
        ("rejected-field", "rejected-field"),
        ("payload-id-mismatch", "payload-id-mismatch"),
        ("orphan-done", "orphan-done"),
        ("orphan-reclaim", "orphan-reclaim"),
        ("unknown-op", "unknown-op"),
    ];
    for dir in cases(&['j', 'w']) {
        let path = dir.join("journal.jsonl");
        let inspect = inspect(&path);
        let (_, report) = verify_json(&[], std::slice::from_ref(&path));
        let ignored = &inspect.ignored;
        let zero_tail =
            inspect.tail.zero_bytes > 0 && inspect.tail.bytes == inspect.tail.zero_bytes;
        for (_, code) in map {
            let want: u64 = map
                .iter()
                .filter(|(_, c)| *c == code)
                .map(|(reason, _)| ignored.get(*reason).copied().unwrap_or(0))
                .sum();
            let want = if code == "torn-tail" && zero_tail {
                want - 1
            } else {
                want
            };
            assert_eq!(report.count(code), want, "{}: {code}", dir.display());
        }
        let active = inspect.active_count;
        let legacy = report.count("legacy-clock-lease");
        let unix = report.count("future-lease") + report.count("expired-lease");
        assert_eq!(
            legacy + unix,
            active,
            "{}: every active lease is judged",
            dir.display()
        );
    }
}

#[test]
fn options_ignore_max_examples_and_quiet() {
    let path = fixture("fidelity/j000/journal.jsonl");
    let (_, all) = verify_json(&[], std::slice::from_ref(&path));
    assert_eq!(all.count("non-canonical-encoding"), 7);
    assert_eq!(all.findings_of("non-canonical-encoding").count(), 7);
    let (_, ignored) = verify_json(
        &["--ignore", "non-canonical-encoding"],
        std::slice::from_ref(&path),
    );
    assert_eq!(ignored.count("non-canonical-encoding"), 0);
    assert_eq!(
        ignored.settings.ignored_codes,
        ["non-canonical-encoding", "seed-missing"]
    );
    let out = lj()
        .args(["verify", "--format=json", "--max-examples=2", "--now", NOW])
        .arg(&path)
        .output()
        .unwrap();
    // Its seeds are not on this host: seed-missing, a no-go.
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let two: Verify = schema::parse(&out.stdout);
    assert_eq!(two.findings_of("non-canonical-encoding").count(), 2);
    assert_eq!(two.count("non-canonical-encoding"), 7);
    assert_eq!(two.settings.max_examples, 2);
    golden::assert_case("fidelity-j000.verify-max-examples");
    let torn = fixture("verify/torn-tail/journal.jsonl");
    lj().args(["verify", "--quiet"])
        .arg(&torn)
        .assert()
        .code(1)
        .stdout("")
        .stderr("");
    lj().args([
        "verify",
        "--quiet",
        "--ignore",
        "torn-tail",
        "--ignore",
        "seed-missing",
    ])
    .arg(&torn)
    .assert()
    .code(0)
    .stdout("")
    .stderr("");
    lj().args(["verify", "--ignore", "no-such-code"])
        .arg(&path)
        .assert()
        .code(2)
        .stdout("")
        .stderr(
            "error: invalid value 'no-such-code' for '--ignore <CODE>': not a finding code (leasejournal explain lists them all)\n\n\
             Usage: leasejournal verify [OPTIONS] <PATH>...\n\n\
             For more information, try '--help'.\n",
        );
}

#[test]
fn several_paths_worst_exit_and_unreadable_ones() {
    let clean = fixture("samples");
    let bad = fixture("verify/glued-record/journal.jsonl");
    let (exit, report) = verify_json(&[], &[clean.clone(), bad.clone()]);
    assert_eq!((exit, report.verdict), (1, Verdict::NoGo));
    let targets: Vec<(String, Verdict)> = report
        .targets
        .iter()
        .map(|t| (t.path.clone(), t.verdict))
        .collect();
    assert_eq!(
        targets,
        [
            (clean.display().to_string(), Verdict::Go),
            (bad.display().to_string(), Verdict::NoGo)
        ]
    );
    // One that cannot be checked makes the whole incomplete; verify_json
    // checks that stderr names it in one line.
    let missing = PathBuf::from("/nonexistent/state");
    let (exit, v) = verify_json(&[], &[clean.clone(), missing]);
    assert_eq!((exit, v.verdict), (2, Verdict::Incomplete));
    assert_eq!(
        v.errors,
        [schema::CheckError {
            path: "/nonexistent/state".into(),
            file: "/nonexistent/state".into(),
            message: "no such file or directory".into()
        }]
    );
    assert_eq!(v.targets.len(), 1);
    assert_eq!(v.checked, ["L1", "L2", "L4", "L5", "L6"]);
    // Nothing read claims no invariant checked.
    let (exit, v) = verify_json(&[], &[PathBuf::from("/nonexistent/state")]);
    assert_eq!(
        (exit, v.verdict, v.checked.len()),
        (2, Verdict::Incomplete, 0)
    );
    golden::assert_case("verify.several-paths");
}

#[test]
fn human_report_groups_counts_and_ends_with_the_next_steps() {
    let path = fixture("verify/glued-record/journal.jsonl");
    let shown = path.display();
    lj().args(["verify", "--now", NOW, "--ttl", LONG_TTL])
        .args(["--ignore", "seed-missing"])
        .arg(&path)
        .assert()
        .code(1)
        .stderr("")
        .stdout(format!(
            "{shown}\n  error   glued-record  ×1\n      line 2, offset 206, id c0bb847b6e99: upstream ignores the whole line; it hides a record upstream never sees: lease c0bb847b6e99 (glued onto a torn fragment)\n      fix: leasejournal repair --apply {shown}\n\
             checked L1 L2 L4 L5 L6; L3 and L7 cannot be checked from files\n\
             verdict: no-go, resuming now loses work or state (1 error, 0 warnings, 0 info)\n\
             next:\n  leasejournal repair --apply {shown}\nthen run verify again\n"
        ));
    // Their seeds (/afl/queue/…) are not on this host: resume would drop
    // the work ("error   seed-missing  ×3").
    golden::assert_case("samples.verify");
    // "verdict: go, safe to resume (0 errors, 0 warnings, 4 info)".
    golden::assert_case("samples.verify-ignore");
}

#[test]
fn a_million_bad_lines_give_a_readable_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    fs::write(&path, "x\n".repeat(1_000_000)).unwrap();
    // Corrupt lines lost what they held when they were written: a
    // warning. Ten examples, then "… and 999,990 more".
    golden::assert_run(
        "test.verify.a-million-bad-lines",
        "verify --now 1754550100 $DIR/j.jsonl",
        lj().args(["verify", "--now", NOW]).arg(&path),
        Some(dir.path()),
    );
}

#[test]
fn explain_prints_the_catalog_entry() {
    golden::assert_case("explain.torn-tail");
    let explain =
        |code: &str| -> schema::Explain { json_ok(lj().args(["explain", code, "--format=json"])) };
    let v = explain("double-lease");
    assert_eq!(v.schema_version, 1);
    assert_eq!((v.severity, v.remedy), (Severity::Warning, None));
    assert!(v.meaning.starts_with("L1: "), "{}", v.meaning);
    assert_eq!(explain("glued-record").remedy, Some(schema::Remedy::Repair));
    assert_eq!(
        explain("snapshot-legacy-clock").remedy,
        Some(schema::Remedy::MigrateSnapshot)
    );
    golden::assert_case("explain.list");
    lj().args(["explain", "nope"]).assert().code(2).stderr(
        "error: invalid value 'nope' for '[CODE]': not a finding code (leasejournal explain lists them all)\n\nUsage: leasejournal explain [OPTIONS] [CODE]\n\nFor more information, try '--help'.\n",
    );
    lj().args(["explain", "torn-tial"])
        .assert()
        .code(2)
        .stderr("error: invalid value 'torn-tial' for '[CODE]': not a finding code; did you mean torn-tail? (leasejournal explain lists them all)\n\nUsage: leasejournal explain [OPTIONS] [CODE]\n\nFor more information, try '--help'.\n");
    // A word of a code names every code that has it; many are cut short.
    lj().args(["explain", "torn"])
        .assert()
        .code(2)
        .stderr("error: invalid value 'torn' for '[CODE]': not a finding code; did you mean torn-tail or ledger-torn-tail? (leasejournal explain lists them all)\n\nUsage: leasejournal explain [OPTIONS] [CODE]\n\nFor more information, try '--help'.\n");
    lj().args(["explain", "snapshot"])
        .assert()
        .code(2)
        .stderr("error: invalid value 'snapshot' for '[CODE]': not a finding code; did you mean snapshot-corrupt, snapshot-legacy-clock, snapshot-inherited-lease, snapshot-dropped-entry, snapshot-truncated, snapshot-non-finite or one of 2 more? (leasejournal explain lists them all)\n\nUsage: leasejournal explain [OPTIONS] [CODE]\n\nFor more information, try '--help'.\n");
    // No code: the catalog, as --list prints it.
    let list = lj().args(["explain", "--list"]).output().unwrap();
    lj().arg("explain")
        .assert()
        .success()
        .stderr("")
        .stdout(String::from_utf8(list.stdout).unwrap());
    let v = explain("torn-tail");
    assert_eq!((v.schema_version, v.code.as_str()), (1, "torn-tail"));
    lj().args(["verify", "--ignore", "seed-misisng", "x"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(
            "error: invalid value 'seed-misisng' for '--ignore <CODE>': not a finding code; did you mean seed-missing? (leasejournal explain lists them all)\n\n\
             Usage: leasejournal verify [OPTIONS] <PATH>...\n\n\
             For more information, try '--help'.\n",
        );
}

/// The lease lines of fixtures/verify/double-lease and lease-after-done,
/// for building journals by hand.
fn fixture_lines(rel: &str) -> Vec<String> {
    fs::read_to_string(fixture("verify").join(rel))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Active and completed ids of a journal, as `inspect` lists them.
fn ids(path: &std::path::Path) -> (Vec<String>, Vec<String>) {
    let v = inspect(path);
    (v.active.into_iter().map(|a| a.id).collect(), v.completed)
}

#[test]
fn records_hidden_anywhere_in_a_line_are_found_and_repaired() {
    // lease-after-done: lease A, done A, lease A again; glued-record: a
    // lease of B behind a torn fragment.
    let l = fixture_lines("lease-after-done/journal.jsonl");
    let (lease_a, done_a) = (&l[0], &l[1]);
    let lease_b = &fixture_lines("corrupt-line/journal.jsonl")[2];
    let id = |line: &str| {
        serde_json::from_str::<Value>(line).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (a, b) = (id(lease_a), id(lease_b));
    // (journal, code verify reports, active after repair, completed after)
    let cases: Vec<(String, &str, Vec<&String>, Vec<&String>)> = vec![
        // A complete lease whose newline is missing, with another appended.
        (
            format!("{lease_a}{lease_b}\n"),
            "glued-record",
            vec![&a, &b],
            vec![],
        ),
        // A done appended onto a lease: the done completes it.
        (
            format!("{lease_a}\n{done_a}{lease_b}\n"),
            "glued-record",
            vec![&b],
            vec![&a],
        ),
        // A complete record followed by garbage, in the middle of the file.
        (
            format!("{lease_a}garbage\n{lease_b}\n"),
            "glued-record",
            vec![&a, &b],
            vec![],
        ),
        // Two byte order marks in front of the first record.
        (
            format!("\u{feff}\u{feff}{lease_a}\n{lease_b}\n"),
            "bom",
            vec![&a, &b],
            vec![],
        ),
        // A record followed by the NULs of a power loss.
        (
            format!("{lease_b}\n{lease_a}\0\0\0"),
            "zero-filled-tail",
            vec![&a, &b],
            vec![],
        ),
    ];
    for (text, code, active, completed) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        fs::write(&path, &text).unwrap();
        let (exit, report) = verify_json(&["--ttl", LONG_TTL], std::slice::from_ref(&path));
        assert_eq!(exit, 1, "{text:?}: {report:?}");
        assert_eq!(report.count(code), 1, "{text:?}: {report:?}");
        let fix = format!("leasejournal repair --apply {}", path.display());
        assert_eq!(report.next, std::slice::from_ref(&fix), "{text:?}");
        run_remedy(&fix);
        let (exit, again) = verify_json(&["--ttl", LONG_TTL], std::slice::from_ref(&path));
        assert_eq!(exit, 0, "{text:?}: {again:?}");
        let (mut got_active, got_completed) = ids(&path);
        got_active.sort();
        let mut want: Vec<String> = active.into_iter().cloned().collect();
        want.sort();
        assert_eq!(got_active, want, "{text:?}");
        let want: Vec<String> = completed.into_iter().cloned().collect();
        assert_eq!(got_completed, want, "{text:?}");
    }
    // A BOM in front of a line that holds no record hides nothing: a
    // warning with no fix.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    fs::write(&path, format!("\u{feff}\n{lease_a}\n")).unwrap();
    let (exit, report) = verify_json(&["--ttl", LONG_TTL], std::slice::from_ref(&path));
    assert_eq!(exit, 0, "{report:?}");
    let finding = &report.findings[0];
    assert_eq!(
        (
            finding.code.as_str(),
            finding.severity,
            finding.fix.as_deref()
        ),
        ("bom", Severity::Warning, None)
    );
    assert_eq!(report.next, Vec::<String>::new());
}

#[test]
fn text_counts_are_per_file_and_remedies_quote_paths() {
    // Two journals with one expired lease each: each shows ×1.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("-run 1");
    fs::create_dir(&run).unwrap();
    let lease = &fixture_lines("expired-lease/journal.jsonl")[0];
    fs::write(run.join(".work_leases.jsonl"), format!("{lease}\n")).unwrap();
    fs::write(
        run.join(".dispatch_protocol_deferred.jsonl"),
        format!("{lease}\n{{\"torn"),
    )
    .unwrap();
    // "info    expired-lease  ×1" under each file, and the remedy
    // `leasejournal repair --apply './-run 1'`.
    golden::assert_run(
        "test.verify.per-file-counts-and-quoted-paths",
        "verify --now 1754550100 --color=never --ignore=seed-missing -- '-run 1'",
        lj().args([
            "verify",
            "--now",
            NOW,
            "--color=never",
            "--ignore=seed-missing",
            "--",
        ])
        .arg("-run 1")
        .current_dir(dir.path()),
        None,
    );
}

/// A fleet audit (`verify /out/*/`) reads the kernel's lock table once for
/// the whole run, not once per state directory; what it reports is the
/// same as without the tracer.
#[test]
fn a_fleet_audit_reads_the_lock_table_once() {
    let traced = std::process::Command::new("strace").arg("-V").output();
    if !traced.is_ok_and(|o| o.status.success()) {
        eprintln!("verify: strace is not installed; skipping the /proc/locks count");
        return;
    }
    let fleet = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..5)
        .map(|n| {
            let dir = fleet.path().join(format!("run{n}"));
            crate::support::copy_dir_to(&fixture("runbook/run1"), &dir);
            dir
        })
        .collect();
    let log = fleet.path().join("strace.log");
    let bin = assert_cmd::cargo::cargo_bin!("leasejournal");
    let args = |cmd: &mut std::process::Command| {
        cmd.args(["verify", "--quiet", "--now", "1754600000"])
            .args(&dirs);
    };
    let mut plain = std::process::Command::new(bin);
    args(&mut plain);
    let plain = plain.output().unwrap();
    let mut strace = std::process::Command::new("strace");
    strace
        .args(["-f", "-qq", "-e", "trace=openat,open", "-o"])
        .arg(&log)
        .arg(bin);
    args(&mut strace);
    let under = strace.output().unwrap();
    if !log.exists() {
        eprintln!("verify: strace cannot trace here (no ptrace?); skipping the /proc/locks count");
        return;
    }
    assert_eq!(
        (under.status.code(), &under.stdout, &under.stderr),
        (plain.status.code(), &plain.stdout, &plain.stderr)
    );
    let opens = fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"/proc/locks\""))
        .count();
    assert_eq!(
        opens, 1,
        "/proc/locks opened {opens} times for 5 directories"
    );
}

/// Paths are checked side by side and reported in the order given: the
/// report of forty paths (directories, files, one that does not exist) is
/// the same, byte for byte, on one thread and on several, and lists the
/// targets in argument order.
#[test]
fn a_fleet_audit_reports_in_the_order_given() {
    let fleet = tempfile::tempdir().unwrap();
    let mut paths: Vec<PathBuf> = Vec::new();
    for n in 0..40 {
        let path = match n % 4 {
            0 => fleet.path().join(format!("missing{n}")),
            1 => fixture("samples/.work_leases.jsonl"),
            _ => {
                let dir = fleet.path().join(format!("run{n}"));
                let from = if n % 4 == 2 {
                    "runbook/run1"
                } else {
                    "samples"
                };
                crate::support::copy_dir_to(&fixture(from), &dir);
                dir
            }
        };
        paths.push(path);
    }
    let run = |threads: &str, format: &str| {
        lj().env("RAYON_NUM_THREADS", threads)
            .args(["verify", "--now", "1754600000", "--format", format])
            .args(&paths)
            .output()
            .unwrap()
    };
    for format in ["table", "json"] {
        let (one, two) = (run("1", format), run("2", format));
        assert_eq!(
            (two.status.code(), &two.stdout, &two.stderr),
            (one.status.code(), &one.stdout, &one.stderr),
            "{format}"
        );
        assert_eq!(one.status.code(), Some(2), "{format}: a path is missing");
    }
    let report: crate::schema::Verify = crate::schema::parse(&run("2", "json").stdout);
    let checked: Vec<String> = report.targets.iter().map(|t| t.path.clone()).collect();
    let readable: Vec<String> = paths
        .iter()
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(checked, readable);
    let missing: Vec<String> = report.errors.iter().map(|e| e.path.clone()).collect();
    let expected: Vec<String> = paths
        .iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(missing, expected);
}

/// Every journal a compaction writes, upstream's or this tool's (`compact`
/// with and without `--drop-completed`, `migrate --rewrite`), lists its
/// active leases sorted by id with their own times: the clock check must
/// not read that as the clock going back.
#[test]
fn a_compacted_journal_is_no_clock_regression() {
    let (_, upstreams) = verify_json(&[], &[fixture("fidelity/j008/compacted.jsonl")]);
    assert_eq!(
        upstreams.count("clock-regression"),
        0,
        "upstream's compaction"
    );
    for args in [
        &["compact", "--apply", "--drop-hidden"][..],
        &["compact", "--apply", "--drop-hidden", "--drop-completed"],
        &["migrate", "--rewrite", "--apply"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join(".work_leases.jsonl");
        fs::copy(fixture("fidelity/j008/journal.jsonl"), &journal).unwrap();
        lj().args(["repair", "--apply", "--no-backup"])
            .arg(&journal)
            .assert()
            .success();
        lj().args(args)
            .arg("--no-backup")
            .arg(&journal)
            .assert()
            .success();
        let (_, ours) = verify_json(&[], std::slice::from_ref(&journal));
        assert_eq!(ours.count("clock-regression"), 0, "{args:?}");
    }
}

/// Work restored from a discard export keeps the time it was first leased
/// at, earlier than the reclaims and the leases before it: the clock check
/// must not read that as the clock going back, and the record after it is
/// still judged against the latest time before it. A lease of a reclaimed
/// id that does not repeat the reclaimed lease (another worker) is judged
/// as any other.
#[test]
fn a_restored_lease_is_no_clock_regression() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join(".work_leases.jsonl");
    let payload = |n: u32| format!("{{\"path\":\"/afl/queue/id:00000{n}\"}}");
    let mut lines = Vec::new();
    for n in 1..=2 {
        lines.extend(crate::support::lease_of(
            &payload(n),
            1,
            1_754_550_000.0 + f64::from(n),
        ));
    }
    fs::write(&journal, lines).unwrap();
    lj().args(["recover", "--discard", "--all", "--apply", "--no-backup"])
        .arg("--now=1754560000")
        .arg(&journal)
        .assert()
        .success();
    let export = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(".discarded."))
        .unwrap();
    // The master went on after the discard, then a restore.
    fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .unwrap()
        .write_all(&crate::support::lease_of(&payload(3), 2, 1_754_570_000.0))
        .unwrap();
    lj().args(["restore", "--apply", "--no-backup"])
        .arg(&export)
        .assert()
        .success();
    let (_, report) = verify_json(&[], std::slice::from_ref(&journal));
    assert_eq!(report.count("clock-regression"), 0, "the restored leases");
    // A record after them dated between the restored leases and the
    // latest time before them: the clock went back (line 8). A lease of a
    // reclaimed id that another worker took, dated back (line 10).
    use leasejournal::engine::journal::encode::marker_line;
    use leasejournal::engine::journal::{Clock, WorkId};
    let id = |n: u32| WorkId::of_canonical(payload(n).as_bytes());
    let mut stepped = fs::read(&journal).unwrap();
    stepped.extend(marker_line("done", &id(3), Clock::Unix, 1_754_560_500.0));
    stepped.extend(marker_line("reclaim", &id(1), Clock::Unix, 1_754_580_000.0));
    stepped.extend(crate::support::lease_of(&payload(1), 9, 1_754_550_001.0));
    fs::write(&journal, stepped).unwrap();
    let (_, report) = verify_json(&[], std::slice::from_ref(&journal));
    let found: Vec<Option<u64>> = report
        .findings_of("clock-regression")
        .map(|f| f.line)
        .collect();
    assert_eq!(found, [Some(8), Some(10)]);
}

/// The clock going back between appends is still found: right after the
/// leases a compaction wrote, and at the first record after a lease that
/// began while nothing was active.
#[test]
fn the_clock_going_back_between_appends_is_still_found() {
    use leasejournal::engine::journal::encode::marker_line;
    use leasejournal::engine::journal::{Clock, WorkId};
    let lease = |payload: &str, time: f64| {
        let id = WorkId::of_canonical(payload.as_bytes());
        (id, crate::support::lease_of(payload, 1, time))
    };
    let mut leases = [
        lease(r#"{"path":"/afl/queue/id:000001"}"#, 1_754_551_000.0),
        lease(r#"{"path":"/afl/queue/id:000002"}"#, 1_754_550_000.0),
    ];
    leases.sort_by_key(|(id, _)| *id);
    // Two leases sorted by id at the start (a compaction's, dated in no
    // order), then a done of the first dated before both: the master
    // appended it after them, so the clock went back.
    let mut lines = Vec::new();
    for (_, line) in &leases {
        lines.extend_from_slice(line);
    }
    lines.extend(marker_line(
        "done",
        &leases[0].0,
        Clock::Unix,
        1_754_549_000.0,
    ));
    // A lease that began while nothing was active, and its done dated
    // before it, after a regular record.
    let mut idle = marker_line("reclaim", &leases[1].0, Clock::Unix, 1_754_552_000.0);
    let (third, line) = lease(r#"{"path":"/afl/queue/id:000003"}"#, 1_754_553_000.0);
    idle.extend(line);
    idle.extend(marker_line("done", &third, Clock::Unix, 1_754_551_500.0));
    lines.extend(idle);
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join(".work_leases.jsonl");
    fs::write(&journal, lines).unwrap();
    let (_, report) = verify_json(&[], std::slice::from_ref(&journal));
    let found: Vec<Option<u64>> = report
        .findings_of("clock-regression")
        .map(|f| f.line)
        .collect();
    assert_eq!(found, [Some(3), Some(6)]);
    assert_eq!(report.count("clock-regression"), 2);
}

/// Bytes that hold no record are no journal the master wrote, even once
/// repair has cut their torn tail: a no-go with its own code, never a go.
#[test]
fn garbage_repaired_is_still_no_go() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("b.jsonl");
    fs::write(&journal, crate::support::noise(0x9e37_79b9_7f4a_7c15, 5000)).unwrap();
    lj().args(["repair", "--apply", "--no-backup"])
        .arg(&journal)
        .assert()
        .success();
    let (code, report) = verify_json(&[], std::slice::from_ref(&journal));
    assert_eq!(code, 1);
    assert_eq!(report.verdict, Verdict::NoGo);
    assert_eq!(report.count("not-a-journal"), 1);
    let finding = report.findings_of("not-a-journal").next().unwrap();
    assert_eq!((finding.line, finding.severity), (Some(1), Severity::Error));
    // A journal with a few unreadable lines among its records is still a
    // journal: those are warnings.
    let mixed = dir.path().join("mixed.jsonl");
    let mut bytes = fs::read(fixture("verify/seed-missing/journal.jsonl")).unwrap();
    bytes.extend_from_slice(b"not json\n");
    fs::write(&mixed, bytes).unwrap();
    let (_, report) = verify_json(&["--ignore=seed-missing"], &[mixed]);
    assert_eq!(report.count("not-a-journal"), 0);
    assert_eq!(report.count("corrupt-line"), 1);
}

/// `/proc/locks` names the process that took a lock, which may have passed
/// it on: after `flock LOCK sleep &` and the end of `flock`, `sleep` holds
/// the lock. verify names the holder and where it got the lock from.
#[test]
fn the_master_lock_is_named_by_its_real_holder() {
    if !crate::support::flock_installed("the inherited lock") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        fixture("samples/.work_leases.jsonl"),
        dir.path().join(".work_leases.jsonl"),
    )
    .unwrap();
    let lock = dir.path().join(".master-queue.lock");
    fs::write(&lock, b"").unwrap();
    let mut taker = std::process::Command::new("flock")
        .arg("-n")
        .arg(&lock)
        .args(["sleep", "60"])
        .spawn()
        .unwrap();
    let taker_pid = i64::from(taker.id());
    // Until the lock is taken and flock(1) has forked the child that
    // inherits it (killed between its flock() and its fork(), the taker
    // would take the lock with it), then the taker goes; its child keeps it.
    let taken = || {
        fs::read_to_string("/proc/locks")
            .unwrap()
            .contains(&format!(" {taker_pid} "))
    };
    let forked = || {
        fs::read_dir("/proc").unwrap().flatten().any(|e| {
            fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| {
                // pid (comm) state ppid …: comm may hold spaces, so after ')'.
                stat.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split(' ').nth(1))
                    .is_some_and(|ppid| ppid == taker_pid.to_string())
            })
        })
    };
    while !(taken() && forked()) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    taker.kill().unwrap();
    taker.wait().unwrap();
    let (exit, report) = verify_json(&["--ttl", LONG_TTL], &[dir.path().to_path_buf()]);
    let processes = &report.targets[0].master_holders;
    let sleeper = processes.first().map(|h| h.pid);
    if let Some(pid) = sleeper {
        // SAFETY: kill(2) with a pid and a signal; the sleeper is ours.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    assert_eq!(exit, 3);
    assert_eq!(processes.len(), 1, "{processes:?}");
    let holder = &processes[0];
    assert_ne!(holder.pid, taker_pid);
    assert_eq!(
        (
            holder.command.as_deref(),
            holder.inherited_from,
            holder.inherited_from_running,
            holder.leasejournal
        ),
        (Some("sleep"), Some(taker_pid), false, false)
    );
    assert_eq!(report.targets[0].master_pids, [holder.pid]);
    let finding = report.findings_of("live-master").next().unwrap();
    assert_eq!(
        finding.message,
        format!(
            ".master-queue.lock is held by pid {} (sleep, which inherited the lock from pid {taker_pid}, no longer running): a master is running",
            holder.pid
        )
    );
}

/// With several paths, the ones that are not a go are listed again at the
/// end, one line each with their counts, and counted; a directory that
/// holds state directories says so and how to name them.
#[test]
fn several_paths_end_with_the_ones_that_are_not_a_go() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    fs::create_dir(&good).unwrap();
    fs::write(good.join(".work_leases.jsonl"), b"").unwrap();
    let out = lj()
        .args(["verify", "--now", NOW, "--color=never"])
        .arg(&good)
        .arg(fixture("runbook/run1"))
        .arg(fixture("runbook"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let tail: Vec<&str> = stdout.lines().rev().take(9).collect();
    let runbook = fixture("runbook").display().to_string();
    let why = format!(
        "contains none of .work_leases.jsonl, .dispatch_protocol_deferred.jsonl, .state_tasks.json: not a SymCC state directory; it holds 1 state directory (run1): name it, as {runbook}/*/"
    );
    assert_eq!(
        tail.into_iter().rev().collect::<Vec<_>>(),
        [
            format!("  {runbook}/run1  no-go  (3 errors, 0 warnings, 3 info)"),
            format!("  {runbook}  incomplete  (could not be checked)"),
            "2 of 3 paths not a go".to_string(),
            "verdict: incomplete, a path could not be checked (3 errors, 0 warnings, 3 info)"
                .to_string(),
            "next:".to_string(),
            format!("  leasejournal repair --apply {runbook}/run1"),
            "then run verify again; these commands do not fix what follows".to_string(),
            "must do first; no command fixes these, and the verdict stays as it is until they are done:".to_string(),
            "  seed-missing ×2 (no-go until then): Restore the seed (mount the AFL output directory, run from the master's working directory) before resuming; leasejournal recover lists every item resume drops".to_string(),
        ]
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "said once, in the report"
    );
    assert!(stdout.contains(&format!("could not check {runbook}: {why}\n")));
}

/// `--min-severity` leaves findings out of the listing, and says how many;
/// the counts and the verdict stay whole.
#[test]
fn min_severity_lists_less_and_keeps_the_verdict() {
    let journal = fixture("verify/expired-lease/journal.jsonl");
    let out = lj()
        .args([
            "verify",
            "--now",
            NOW,
            "--ignore=seed-missing",
            "--min-severity=warning",
        ])
        .arg(&journal)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "not listed (below --min-severity warning): 1 info\n\
         checked L1 L2 L4 L5 L6; L3 and L7 cannot be checked from files\n\
         verdict: go, safe to resume (0 errors, 0 warnings, 1 info)\n"
    );
    let (exit, all) = verify_json(&[], std::slice::from_ref(&journal));
    let (hidden_exit, hidden) = verify_json(&["--min-severity=error"], &[journal]);
    assert_eq!((exit, hidden_exit), (0, 0));
    assert_eq!(hidden.counts, all.counts);
    assert_eq!(hidden.findings, Vec::new());
    assert_eq!(hidden.not_listed, [(Severity::Info, 1)].into());
    assert_eq!(hidden.settings.min_severity, Severity::Error);
    assert_eq!(all.not_listed, Default::default());
    // --strict still counts the warnings nobody sees.
    let (exit, strict) = verify_json(
        &["--strict", "--min-severity=error"],
        &[fixture("verify/corrupt-line/journal.jsonl")],
    );
    assert_eq!((exit, strict.verdict), (1, Verdict::NoGo));
    assert!(strict.findings.is_empty());
}

/// A seed resume cannot find is named, with the byte offset of its lease;
/// a relative one with the directory it was looked up from. What no
/// command fixes says what to do, and that the verdict stays no-go.
#[test]
fn a_missing_seed_is_named_and_its_must_do_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = crate::support::lease_of(
        "{\"path\":\"/afl/queue/id:000001\",\"target_branch\":1}",
        1,
        1_754_550_000.0,
    );
    let offset = journal.len() as u64;
    journal.extend(crate::support::lease_of(
        "{\"path\":\"queue/id:000002\",\"target_branch\":2}",
        2,
        1_754_550_001.0,
    ));
    let path = dir.path().join(".work_leases.jsonl");
    fs::write(&path, &journal).unwrap();
    let report: Verify = schema::parse(
        &lj()
            .current_dir(dir.path())
            .args(["verify", "--format=json", "--now", NOW])
            .arg(&path)
            .output()
            .unwrap()
            .stdout,
    );
    assert_eq!(report.verdict, Verdict::NoGo);
    let mut missing: Vec<_> = report.findings_of("seed-missing").collect();
    missing.sort_by_key(|f| f.line);
    let must = "Restore the seed (mount the AFL output directory, run from the master's working directory) before resuming; leasejournal recover lists every item resume drops";
    type Shown<'a> = (Option<u64>, Option<u64>, &'a str, Option<&'a str>);
    let shown: Vec<Shown> = missing
        .iter()
        .map(|f| (f.line, f.offset, f.message.as_str(), f.must_do.as_deref()))
        .collect();
    let must_do =
        format!("{must}; no command fixes this, and the verdict stays no-go until it is done");
    let cwd = dir.path().display().to_string();
    assert_eq!(
        shown,
        [
            (
                Some(1),
                Some(0),
                "active lease of worker 1: resume reclaims it and drops its work, because its seed /afl/queue/id:000001 is not a file on this host and it has no continuation",
                Some(must_do.as_str())
            ),
            (
                Some(2),
                Some(offset),
                &*format!(
                    "active lease of worker 2: resume reclaims it and drops its work, because its seed queue/id:000002 is not a file on this host and it has no continuation (a relative path, looked up from {cwd} as the master looks it up from its own: run verify where the master runs)"
                ),
                Some(must_do.as_str())
            ),
        ]
    );
    assert_eq!(missing[0].fix, None);
    assert_eq!(report.next, Vec::<String>::new());
    assert_eq!(
        report
            .must_do
            .iter()
            .map(|m| (
                m.code.as_str(),
                m.count,
                m.must_do.as_str(),
                m.verdict_until_done
            ))
            .collect::<Vec<_>>(),
        [("seed-missing", 2, must, Verdict::NoGo)]
    );
}

/// A repair does not fix a corrupt snapshot: after the repair's command,
/// the report says so, and what must be done.
#[test]
fn next_steps_do_not_read_as_a_way_to_go() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        fixture("verify/torn-tail/journal.jsonl"),
        dir.path().join(".work_leases.jsonl"),
    )
    .unwrap();
    fs::copy(
        fixture("verify/snapshot-corrupt/state.json"),
        dir.path().join(".state_tasks.json"),
    )
    .unwrap();
    let out = lj()
        .args([
            "verify",
            "--now",
            NOW,
            "--ignore=seed-missing",
            "--min-severity=error",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let tail: Vec<&str> = stdout.lines().rev().take(5).collect();
    assert_eq!(
        tail.into_iter().rev().collect::<Vec<_>>(),
        [
            "next:".to_string(),
            format!("  leasejournal repair --apply {}", dir.path().display()),
            "then run verify again; these commands do not fix what follows".to_string(),
            "must do first; no command fixes these, and the verdict stays as it is until they are done:".to_string(),
            "  snapshot-corrupt ×1 (no-go until then): Restore it from a backup (leasejournal diff compares them)".to_string(),
        ]
    );
}

/// An empty file whose name says nothing is refused as a file of unknown
/// bytes is; named, or with --kind, it is an empty journal.
#[test]
fn an_empty_file_of_no_known_name_is_refused_as_unknown_bytes_are() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    let random = dir.path().join("random");
    fs::write(&empty, b"").unwrap();
    fs::write(&random, crate::support::noise(7, 300)).unwrap();
    for (path, why) in [
        (
            &empty,
            "empty, and its name says neither a lease journal (*.jsonl) nor a state snapshot (*.json); name the kind with --kind",
        ),
        (
            &random,
            "neither a lease journal nor a state snapshot (no journal record or snapshot object at the start); name the kind with --kind",
        ),
    ] {
        let out = lj()
            .args(["verify", "--now", NOW])
            .arg(path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!(
                "could not check {}: {why}\n\
                 verdict: incomplete, a path could not be checked (0 errors, 0 warnings, 0 info)\n",
                path.display()
            )
        );
        // Without the report, stderr says it.
        let out = lj()
            .args(["verify", "--quiet", "--now", NOW])
            .arg(path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("leasejournal: {}: {why}\n", path.display())
        );
        let out = lj().args(["repair", "--apply"]).arg(path).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(crate::support::names(dir.path()), ["empty", "random"]);
    }
    let (exit, _) = verify_json(&["--kind=journal"], &[empty]);
    assert_eq!(exit, 0);
}
