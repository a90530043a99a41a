//! `leasejournal verify` and `explain`: one fixture per finding code, the
//! exit codes, every option, and agreement with replay on every fidelity
//! case.

use std::fs;
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;

use predicates::prelude::*;
use predicates::str::contains;
use serde_json::Value;

use crate::support::{cases, fixture, json_ok, lj};

const NOW: &str = "1754550100";
const LONG_TTL: &str = "1000000000";

/// Runs verify --format json and returns (exit code, report).
fn verify_json(args: &[&str], paths: &[PathBuf]) -> (i32, Value) {
    let out = lj()
        .args(["verify", "--format=json", "--max-examples=0", "--now", NOW])
        .args(args)
        .args(paths)
        .output()
        .unwrap();
    let code = out.status.code().unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    (code, report)
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
        "torn-tail",
        "torn-tail/journal.jsonl",
        &[],
        Some(2),
        "warning",
    ),
    (
        "zero-filled-tail",
        "zero-filled-tail/journal.jsonl",
        &[],
        Some(2),
        "warning",
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
        "error",
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
        "error",
    ),
    (
        "non-finite-number",
        "non-finite-number/journal.jsonl",
        &[],
        Some(2),
        "error",
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
    ("bad-id", "bad-id/journal.jsonl", &[], Some(2), "error"),
    (
        "payload-id-mismatch",
        "payload-id-mismatch/journal.jsonl",
        &[],
        Some(1),
        "error",
    ),
    (
        "rejected-field",
        "rejected-field/journal.jsonl",
        &[],
        Some(2),
        "error",
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
        "error",
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
        "warning",
    ),
    (
        "future-lease",
        "future-lease/journal.jsonl",
        &[],
        Some(1),
        "error",
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
];

fn expected_exit(severity: &str) -> i32 {
    if severity == "error" { 1 } else { 0 }
}

#[test]
fn every_code_has_a_fixture_that_triggers_it_alone() {
    for (code, rel, extra, line, severity) in CASES {
        let args: Vec<&str> = if extra.is_empty() {
            vec!["--ttl", LONG_TTL]
        } else {
            extra.to_vec()
        };
        let (exit, report) = verify_json(&args, &[fixture("verify").join(rel)]);
        let counts = report["counts"].as_object().unwrap();
        assert_eq!(counts.len(), 1, "{code}: only {code} fires, got {counts:?}");
        assert_eq!(counts[*code], 1, "{code}");
        let finding = &report["findings"][0];
        assert_eq!(finding["code"], *code);
        assert_eq!(finding["severity"], *severity, "{code}");
        assert_eq!(finding["line"].as_u64(), *line, "{code}: line");
        assert!(finding["file"].as_str().unwrap().contains(code));
        assert!(!finding["message"].as_str().unwrap().is_empty());
        assert_eq!(exit, expected_exit(severity), "{code}: exit status");
        let verdict = match *severity {
            "error" => "errors",
            "warning" => "warnings",
            _ => "ok",
        };
        assert_eq!(report["verdict"], verdict, "{code}");
        if *severity == "warning" {
            let (strict, _) = verify_json(
                &["--strict", "--ttl", LONG_TTL],
                &[fixture("verify").join(rel)],
            );
            assert_eq!(strict, 1, "{code}: --strict fails on warnings");
        }
    }
}

#[test]
fn catalog_codes_all_have_a_test() {
    let out = lj()
        .args(["explain", "--list", "--format=json"])
        .output()
        .unwrap();
    let catalog: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tested: Vec<&str> = CASES.iter().map(|c| c.0).collect();
    let elsewhere = [
        "snapshot-truncated",
        "snapshot-lease-without-stats",
        "live-master",
    ];
    for entry in catalog.as_array().unwrap() {
        let code = entry["code"].as_str().unwrap();
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
    assert_eq!(report["counts"]["snapshot-lease-without-stats"], 1);
    assert_eq!(report["counts"]["snapshot-inherited-lease"], 1);
    assert_eq!(report["counts"].as_object().unwrap().len(), 2);
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
    assert_eq!(report["counts"].as_object().unwrap().len(), 1);
    assert_eq!(report["counts"]["snapshot-truncated"], 1);
    assert!(
        report["findings"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("4 stats")
    );
}

#[test]
fn a_held_lock_is_a_live_master() {
    let dir = crate::support::copy_dir(&fixture("verify/live-master"));
    let lock = fs::File::open(dir.path().join(".master-queue.lock")).unwrap();
    // SAFETY: a valid descriptor.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let (exit, report) = verify_json(&["--ttl", LONG_TTL], &[dir.path().to_path_buf()]);
    assert_eq!(exit, 0);
    assert_eq!(report["counts"].as_object().unwrap().len(), 1);
    assert_eq!(report["findings"][0]["code"], "live-master");
    assert_eq!(report["findings"][0]["severity"], "warning");
    let (strict, _) = verify_json(
        &["--strict", "--ttl", LONG_TTL],
        &[dir.path().to_path_buf()],
    );
    assert_eq!(strict, 1);
}

#[test]
fn invalid_utf8_inside_a_string_is_an_error() {
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
    assert_eq!(exit, 1);
    let utf8 = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "invalid-utf8")
        .unwrap();
    assert_eq!(utf8["severity"], "error");
    assert_eq!(report["counts"]["payload-id-mismatch"], 1);
}

#[test]
fn upstream_written_samples_verify_clean() {
    let (exit, report) = verify_json(&[], &[fixture("samples")]);
    assert_eq!(exit, 0);
    assert_eq!(report["verdict"], "ok");
    // Their real findings: every active lease expires on resume (TTL 0),
    // and the snapshot's state lease is from the previous epoch.
    let counts = report["counts"].as_object().unwrap();
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert_eq!(counts["expired-lease"], 3);
    assert_eq!(counts["snapshot-inherited-lease"], 1);
    assert_eq!(
        report["checked"],
        serde_json::json!(["L1", "L2", "L4", "L5", "L6"])
    );
    assert_eq!(report["not_checkable"], serde_json::json!(["L3", "L7"]));
    assert_eq!(report["schema_version"], 1);
    let (_, legacy) = verify_json(&[], &[fixture("samples/legacy_demo.input.jsonl")]);
    assert_eq!(legacy["counts"]["legacy-clock-lease"], 1);
    // After upstream's compaction and recovery nothing legacy is left.
    let (exit, migrated) = verify_json(&[], &[fixture("samples/legacy_demo.jsonl")]);
    assert_eq!(exit, 0);
    assert_eq!(migrated["counts"], serde_json::json!({}));
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
        let inspect = json_ok(lj().args(["inspect", "--format=json"]).arg(&path));
        let (_, report) = verify_json(&[], std::slice::from_ref(&path));
        let ignored = inspect["ignored"].as_object().unwrap();
        let counts = report["counts"].as_object().unwrap();
        let zero_tail = inspect["tail"]["zero_bytes"].as_u64().unwrap() > 0
            && inspect["tail"]["bytes"] == inspect["tail"]["zero_bytes"];
        for (_, code) in map {
            let want: u64 = map
                .iter()
                .filter(|(_, c)| *c == code)
                .map(|(reason, _)| ignored.get(*reason).and_then(Value::as_u64).unwrap_or(0))
                .sum();
            let want = if code == "torn-tail" && zero_tail {
                want - 1
            } else {
                want
            };
            let got = counts.get(code).and_then(Value::as_u64).unwrap_or(0);
            assert_eq!(got, want, "{}: {code}", dir.display());
        }
        let active = inspect["active_count"].as_u64().unwrap();
        let legacy = counts
            .get("legacy-clock-lease")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let unix = ["future-lease", "expired-lease"]
            .iter()
            .map(|c| counts.get(*c).and_then(Value::as_u64).unwrap_or(0))
            .sum::<u64>();
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
    assert_eq!(all["counts"]["non-canonical-encoding"], 7);
    let (_, ignored) = verify_json(
        &["--ignore", "non-canonical-encoding"],
        std::slice::from_ref(&path),
    );
    assert!(ignored["counts"].get("non-canonical-encoding").is_none());
    assert_eq!(
        ignored["settings"]["ignored_codes"][0],
        "non-canonical-encoding"
    );
    let out = lj()
        .args(["verify", "--format=json", "--max-examples=2", "--now", NOW])
        .arg(&path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let shown = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "non-canonical-encoding")
        .count();
    assert_eq!(shown, 2);
    assert_eq!(v["counts"]["non-canonical-encoding"], 7);
    lj().args(["verify", "--quiet"])
        .arg(&path)
        .assert()
        .code(1)
        .stdout("")
        .stderr("");
    lj().args(["verify", "--ignore", "no-such-code"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(contains("explain --list"));
}

#[test]
fn several_paths_worst_exit_and_unreadable_ones() {
    let clean = fixture("samples");
    let bad = fixture("verify/glued-record/journal.jsonl");
    let (exit, report) = verify_json(&[], &[clean.clone(), bad]);
    assert_eq!(exit, 1);
    assert_eq!(report["targets"].as_array().unwrap().len(), 2);
    assert_eq!(report["targets"][0]["verdict"], "ok");
    assert_eq!(report["targets"][1]["verdict"], "errors");
    let missing = PathBuf::from("/nonexistent/state");
    let out = lj()
        .args(["verify", "--format=json", "--now", NOW])
        .arg(&clean)
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1);
    assert!(stderr.contains("/nonexistent/state: no such file or directory"));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["errors"][0]["path"], "/nonexistent/state");
    assert_eq!(v["targets"].as_array().unwrap().len(), 1);
}

#[test]
fn human_report_groups_counts_and_ends_with_a_verdict() {
    lj().args(["verify", "--now", NOW, "--ttl", LONG_TTL])
        .arg(fixture("verify/glued-record/journal.jsonl"))
        .assert()
        .code(1)
        .stderr("")
        .stdout(contains("error   glued-record  ×1"))
        .stdout(contains("line 2, offset 206"))
        .stdout(contains(
            "checked L1 L2 L4 L5 L6; L3 and L7 cannot be checked from files",
        ))
        .stdout(predicate::function(|s: &str| {
            s.lines()
                .last()
                .is_some_and(|l| l.starts_with("verdict: errors"))
        }));
    lj().args(["verify", "--now", NOW])
        .arg(fixture("samples"))
        .assert()
        .success()
        .stdout(contains(
            "verdict: ok, safe to resume (0 errors, 0 warnings, 4 info)",
        ));
}

#[test]
fn a_million_bad_lines_give_a_readable_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    fs::write(&path, "x\n".repeat(1_000_000)).unwrap();
    let out = lj()
        .args(["verify", "--now", NOW])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("corrupt-line  ×1,000,000"));
    assert!(text.contains("… and 999,990 more"));
    assert!(text.lines().count() < 20, "{text}");
}

#[test]
fn explain_prints_the_catalog_entry() {
    lj().args(["explain", "torn-tail"])
        .assert()
        .success()
        .stdout(contains("torn-tail (warning, journal)"))
        .stdout(contains("fix       leasejournal recover --apply"));
    let v = json_ok(lj().args(["explain", "double-lease", "--format=json"]));
    assert_eq!(v["severity"], "error");
    assert!(v["meaning"].as_str().unwrap().starts_with("L1"));
    lj().args(["explain", "--list"])
        .assert()
        .success()
        .stdout(contains("snapshot-inherited-lease"));
    lj().args(["explain", "nope"])
        .assert()
        .code(2)
        .stderr(contains("unknown finding code \"nope\""));
    lj().arg("explain").assert().code(2);
}
