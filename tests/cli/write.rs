//! `repair`, `recover --discard`, `migrate` and `compact`: upstream's
//! results on every fidelity case, dry runs that touch nothing, and the
//! write path's promises — the master's lock, change detection, backups,
//! file owners, refusal of symlinks, clear errors on read-only directories
//! and full disks, and crash safety under SIGKILL at every step.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use leasejournal::engine::journal::encode::{lease_line, marker_line};
use leasejournal::engine::journal::{Clock, WorkId};
use leasejournal::engine::json::PyInt;
use serde_json::Value;

use crate::golden;
use crate::schema::{self, Mode, ResumeOutcome};
use crate::support::{
    Lease, cases, copy_dir, fixture, json_ok, json_written, lease_of, lj, names, state, wait_for,
};

fn bin() -> &'static Path {
    assert_cmd::cargo::cargo_bin!("leasejournal")
}

fn temps(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// The id of each lease, in order.
fn ids_of<'a>(leases: impl IntoIterator<Item = &'a schema::Reclaim>) -> Vec<&'a str> {
    leases.into_iter().map(|r| r.id.as_str()).collect()
}

/// A writing command's one-line error about its temporary file for
/// `target`, whose name carries the run's pid:
/// `leasejournal: TARGET.leasejournal.<pid>.tmp: MESSAGE`.
fn assert_temp_error(stderr: &str, target: &Path, message: &str) {
    let pid_and_rest = stderr
        .strip_prefix(&format!("leasejournal: {}.leasejournal.", target.display()))
        .unwrap_or_else(|| panic!("{stderr}"));
    let digits = pid_and_rest.len()
        - pid_and_rest
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .len();
    assert!(digits > 0, "{stderr}");
    assert_eq!(
        &pid_and_rest[digits..],
        format!(".tmp: {message}\n"),
        "{stderr}"
    );
}

/// The exports `recover --discard` left next to `path`.
fn exports(path: &Path) -> Vec<PathBuf> {
    let dir = path.parent().unwrap();
    let prefix = format!("{}.discarded.", path.file_name().unwrap().to_string_lossy());
    names(dir)
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .map(|n| dir.join(n))
        .collect()
}

/// The ids upstream's `recover_expired` reclaims, in order, as a fidelity
/// case's expected.json (upstream's own output) lists them.
fn reclaimed_in_order(expected: &Value) -> Vec<&str> {
    expected["recover"]["reclaimed_in_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect()
}

#[test]
fn discard_reclaims_upstreams_ids_in_upstreams_order_and_exports_them() {
    for dir in cases(&['j', 'w']) {
        let expected: Value =
            serde_json::from_slice(&fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let params = &expected["recover"]["params"];
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("journal.jsonl");
        fs::copy(dir.join("journal.jsonl"), &path).unwrap();
        let (active_before, _) = state(&path);
        let now = params["now"].as_f64().unwrap();
        let report: schema::Discard = json_written(
            lj().args([
                "recover",
                "--discard",
                "--apply",
                "--no-backup",
                "--format=json",
            ])
            .arg(format!("--ttl={}", params["ttl"].as_f64().unwrap()))
            .arg(format!("--now={now}"))
            .arg(format!("--first={}", params["limit"]))
            .arg(&path),
        );
        let file = report.only();
        let want = reclaimed_in_order(&expected);
        assert_eq!(ids_of(&file.plan.reclaims), want, "{}", dir.display());
        // The file ends with exactly those reclaim records, in that order.
        let text = String::from_utf8_lossy(&fs::read(&path).unwrap()).into_owned();
        let tail: Vec<Value> = text
            .lines()
            .rev()
            .take(want.len())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ids: Vec<&str> = tail
            .iter()
            .rev()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, want, "{}: appended records", dir.display());
        // Byte for byte what upstream's recover_expired appends.
        let upstream: String = want
            .iter()
            .map(|id| {
                format!(
                    "{{\"clock\":\"unix\",\"id\":\"{}\",\"op\":\"reclaim\",\"time\":{}}}\n",
                    id,
                    leasejournal::engine::json::float_repr(now)
                )
            })
            .collect();
        assert!(
            text.ends_with(&upstream),
            "{}: appended bytes",
            dir.display()
        );
        // Every discarded lease is in the export, in the same order, as
        // upstream's compaction writes it.
        let exported = exports(&path);
        if want.is_empty() {
            assert!(exported.is_empty(), "{}", dir.display());
            assert_eq!(
                file.note.as_deref(),
                Some("no active lease is selected: nothing to discard")
            );
            continue;
        }
        assert_eq!(exported.len(), 1, "{}", dir.display());
        assert_eq!(file.plan.export, Some(exported[0].display().to_string()));
        let lines: Vec<Value> = fs::read_to_string(&exported[0])
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let export_ids: Vec<&str> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
        assert_eq!(export_ids, want, "{}: export", dir.display());
        // Appending the export brings the work back.
        let mut journal = fs::OpenOptions::new().append(true).open(&path).unwrap();
        journal.write_all(&fs::read(&exported[0]).unwrap()).unwrap();
        drop(journal);
        let (active_after, _) = state(&path);
        let ids = |v: &[Lease]| -> Vec<String> { v.iter().map(|a| a.0.clone()).collect() };
        assert_eq!(ids(&active_after), ids(&active_before), "{}", dir.display());
    }
}

#[test]
fn the_forecast_is_upstreams_resume() {
    for dir in cases(&['j', 'w']) {
        let expected: Value =
            serde_json::from_slice(&fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let params = &expected["recover"]["params"];
        if params["ttl"].as_f64() != Some(0.0) || params["limit"] != 0 {
            continue;
        }
        let path = dir.join("journal.jsonl");
        let report: schema::Forecast = json_ok(
            lj().args(["recover", "--format=json"])
                .arg(format!("--now={}", params["now"]))
                .arg(&path),
        );
        report.check();
        assert_eq!(report.schema_version, 3);
        let [file] = &report.files[..] else {
            panic!("one journal: {report:?}");
        };
        let ids: Vec<&str> = file.reclaims.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, reclaimed_in_order(&expected), "{}", dir.display());
        let glues = matches!(
            file.tail.state,
            schema::TailState::Torn | schema::TailState::Unterminated
        );
        assert_eq!(file.first_append.glues, glues, "{}", dir.display());
    }
}

#[test]
fn the_forecast_says_what_resume_requeues_drops_and_loses() {
    let dir = tempfile::tempdir().unwrap();
    let seed = dir.path().join("seed");
    fs::write(&seed, b"input").unwrap();
    let seed = seed.display().to_string();
    let gone = dir.path().join("gone").display().to_string();
    let with_seed = format!(
        "{{\"continuation\":null,\"focus_bytes\":\"0-15\",\"parameter_overrides\":{{\"k\":\"v\"}},\"parameter_token\":\"t\",\"path\":\"{seed}\",\"s2f_actions\":[[7,\"solve\"]],\"schedule_prefix\":[],\"sha256\":\"{:064x}\",\"strategy\":1,\"target_branch\":7}}",
        1
    );
    let missing = format!("{{\"path\":\"{gone}\",\"target_branch\":3}}");
    let continued = format!(
        "{{\"continuation\":{{\"schema\":\"symcc-live-continuation-v1\"}},\"path\":\"{gone}\"}}"
    );
    let no_path = "{\"path\":\"\",\"target_branch\":3}".to_string();
    // The deferred journal's item, rebuilt the same as the work journal's.
    let deferred = format!(
        "{{\"continuation\":null,\"focus_bytes\":\"0-15\",\"path\":\"{seed}\",\"s2f_actions\":[[7,\"solve\"]],\"schedule_prefix\":[],\"target_branch\":7}}"
    );
    let mut work = Vec::new();
    for (i, p) in [&with_seed, &missing, &continued, &no_path]
        .iter()
        .enumerate()
    {
        work.extend(lease_of(p, 1, 1_754_550_000.0 + i as f64));
    }
    fs::write(dir.path().join(".work_leases.jsonl"), &work).unwrap();
    fs::write(
        dir.path().join(".dispatch_protocol_deferred.jsonl"),
        lease_of(&deferred, 2, 1_754_549_000.0),
    )
    .unwrap();
    let report: schema::Forecast = json_ok(
        lj().args(["recover", "--format=json", "--now=1754550100"])
            .arg(dir.path()),
    );
    report.check();
    let [deferred, work] = &report.files[..] else {
        panic!("two journals: {report:?}");
    };
    assert_eq!(
        deferred.path,
        dir.path()
            .join(".dispatch_protocol_deferred.jsonl")
            .display()
            .to_string()
    );
    assert_eq!(deferred.requeued, 1);
    let outcomes: Vec<(ResumeOutcome, Option<&str>)> = work
        .reclaims
        .iter()
        .map(|r| (r.outcome, r.reason.as_deref()))
        .collect();
    let no_seed = format!("its seed {gone} is not a file on this host and it has no continuation");
    assert_eq!(
        outcomes,
        [
            (ResumeOutcome::Requeued, None),
            (ResumeOutcome::Dropped, Some(no_seed.as_str())),
            (ResumeOutcome::RequeuedIfContinuationValid, None),
            (ResumeOutcome::Dropped, Some("the payload has no path"))
        ]
    );
    let first = &work.reclaims[0];
    assert_eq!(
        first.item,
        Some(schema::WorkItem {
            path: seed.clone(),
            focus: Some("0-15".into()),
            target_branch: 7,
            s2f_actions: vec![(7, "solve".into())],
            schedule_prefix: vec![],
            continuation: None,
            fields: 5
        })
    );
    assert_eq!(
        first.not_restored,
        ["parameter_overrides", "parameter_token"]
    );
    assert_eq!(
        first.duplicate_of,
        Some((deferred.path.clone(), deferred.reclaims[0].id.clone()))
    );
    assert_eq!(work.duplicates, 1);
    assert_eq!(work.reclaims[3].item, None);
    assert_eq!(
        work.first_append,
        schema::FirstAppend {
            record: "reclaim".into(),
            id: Some(first.id.clone()),
            glues: false
        }
    );
    // Nothing was written, created or locked.
    assert_eq!(
        names(dir.path()),
        [
            ".dispatch_protocol_deferred.jsonl",
            ".work_leases.jsonl",
            "seed"
        ]
    );
}

#[test]
fn recover_never_reclaims_unless_told_to_discard() {
    let dir = copy_dir(&fixture("verify/torn-tail"));
    let path = dir.path().join("journal.jsonl");
    let before = fs::read(&path).unwrap();
    let shown = path.display();
    for extra in [&["--apply"][..], &["--output", "x.jsonl"][..]] {
        lj().arg("recover")
            .args(extra)
            .arg(&path)
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!(
                "leasejournal: {shown}: recover only forecasts the master's resume: a reclaim written before resume takes the lease's work away for good, since resume requeues only the leases still active when it starts. To fix a torn tail or glued records, run `leasejournal repair --apply {shown}`; to drop work on purpose, `leasejournal recover --discard --apply` with --all, --ttl, --id or --worker. Nothing was changed\n"
            ));
    }
    lj().args(["recover", "--discard", "--apply"])
        .arg(&path)
        .assert()
        .code(2)
        .stdout("")
        .stderr("leasejournal: recover --discard needs a selection: --all, or any of --ttl, --id and --worker; nothing was changed\n");
    lj().args(["recover", "--salvage", "--apply"])
        .arg(&path)
        .assert()
        .code(2)
        .stdout("")
        .stderr("leasejournal: recover --salvage is now `leasejournal repair`, which also seals the tail and never reclaims a lease; nothing was changed\n");
    lj().args(["recover", "--all"])
        .arg(&path)
        .assert()
        .code(2)
        .stdout("")
        .stderr(
            "error: the following required arguments were not provided:\n  --discard\n\n\
             Usage: leasejournal recover --discard --all <PATH>...\n\n\
             For more information, try '--help'.\n",
        );
    assert_eq!(fs::read(&path).unwrap(), before);
    assert_eq!(names(dir.path()), ["journal.jsonl"]);
}

#[test]
fn discard_by_id_and_worker_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    let a = "{\"path\":\"a\"}";
    let b = "{\"path\":\"b\"}";
    let c = "{\"path\":\"c\"}";
    let mut bytes = lease_of(a, 1, 1_754_550_000.0);
    bytes.extend(lease_of(b, 2, 1_754_550_001.0));
    bytes.extend(lease_of(c, 2, 1_754_550_002.0));
    fs::write(&path, &bytes).unwrap();
    let id_b = WorkId::of_canonical(b.as_bytes()).to_hex();
    let id_c = WorkId::of_canonical(c.as_bytes()).to_hex();
    let export = dir.path().join("dropped.jsonl");
    let report: schema::Discard = json_written(
        lj().args([
            "recover",
            "--discard",
            "--apply",
            "--format=json",
            "--now=1754550100",
            "--worker=2",
        ])
        .arg(format!("--id={}", &id_b[..8]))
        .arg("--export")
        .arg(&export)
        .arg(&path),
    );
    let file = report.only();
    assert_eq!(ids_of(&file.plan.reclaims), [id_b.as_str()]);
    assert_eq!(file.plan.export, Some(export.display().to_string()));
    let (active, _) = state(&path);
    let mut ids: Vec<&str> = active.iter().map(|a| a.0.as_str()).collect();
    ids.sort();
    let id_a = WorkId::of_canonical(a.as_bytes()).to_hex();
    let mut want = [id_a.as_str(), id_c.as_str()];
    want.sort();
    assert_eq!(ids, want);
    assert_eq!(fs::read(&export).unwrap(), lease_of(b, 2, 1_754_550_001.0));
    // The export is never overwritten.
    lj().args(["recover", "--discard", "--apply", "--all", "--export"])
        .arg(&export)
        .arg(&path)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: already exists; refusing to overwrite it\n",
            export.display()
        ));
    assert_eq!(state(&path).0, active);
}

#[test]
fn compact_writes_upstreams_bytes_and_by_default_keeps_completed() {
    for dir in cases(&['j', 'w']) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("journal.jsonl");
        fs::copy(dir.join("journal.jsonl"), &path).unwrap();
        // (The human form of this run is fixtures/golden/fidelity-j000.apply-compact-drop.txt.)
        // --allow-empty: upstream's compaction empties a file of no record.
        let compact = |args: &[&str]| -> schema::Compact {
            json_written(
                lj().args([
                    "compact",
                    "--apply",
                    "--no-backup",
                    "--allow-empty",
                    "--format=json",
                ])
                .args(args)
                .arg(&path),
            )
        };
        let report = compact(&["--drop-completed", "--drop-hidden"]);
        let file = report.only();
        assert_eq!(
            (report.mode, file.written),
            (Mode::Apply, !file.plan.unchanged)
        );
        assert!(
            fs::read(&path).unwrap() == fs::read(dir.join("compacted.jsonl")).unwrap(),
            "{}: --drop-completed writes upstream's bytes",
            dir.display()
        );
        fs::copy(dir.join("journal.jsonl"), &path).unwrap();
        let before = state(&path);
        // Records hidden in ignored lines are not dropped without consent.
        let hides: schema::Repair = json_ok(lj().args(["repair", "--format=json"]).arg(&path));
        let hidden = hides.only().plan.salvaged.len();
        if hidden > 0 {
            let records = if hidden == 1 {
                "1 record".to_string()
            } else {
                format!("{hidden} records")
            };
            lj().args(["compact", "--apply", "--no-backup"])
                .arg(&path)
                .assert()
                .code(2)
                .stdout("")
                .stderr(format!(
                    "leasejournal: {}: {records} hidden in lines upstream ignores (glued, behind a byte order mark or before a zero fill) would be dropped; run `leasejournal repair --apply {}` first. Nothing was changed\n",
                    path.display(),
                    path.display()
                ));
            assert_eq!(state(&path), before);
        }
        let report = compact(&["--drop-hidden"]);
        assert_eq!(report.only().plan.hidden_dropped, hidden as u64);
        assert_eq!(
            state(&path),
            before,
            "{}: the replay state survives",
            dir.display()
        );
        // Compacting a compacted file changes nothing.
        let compacted = fs::read(&path).unwrap();
        let again = compact(&[]);
        let file = again.only();
        assert_eq!(
            (file.written, file.plan.unchanged, file.note.as_deref()),
            (false, true, Some("nothing to do: already compact"))
        );
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
        let report: schema::Migrate = json_written(
            lj().args(["migrate", "--apply", "--no-backup", "--format=json"])
                .arg(&path),
        );
        let file = report.only();
        let schema::Migration::Snapshot(plan) = &file.plan else {
            panic!("{}: a snapshot plan: {file:?}", dir.display());
        };
        assert_eq!(plan.needed, !unix, "{}", dir.display());
        if unix {
            assert_eq!(
                file.note.as_deref(),
                Some("nothing to migrate"),
                "{}",
                dir.display()
            );
            assert_eq!(fs::read(&path).unwrap(), input);
            continue;
        }
        legacy += 1;
        assert!(file.written);
        assert_eq!(
            String::from_utf8(fs::read(&path).unwrap()).unwrap(),
            String::from_utf8(fs::read(dir.join("expected.json")).unwrap()).unwrap(),
            "{}",
            dir.display()
        );
        let again: schema::Migrate = json_written(
            lj().args(["migrate", "--apply", "--format=json"])
                .arg(&path),
        );
        let file = again.only();
        assert_eq!(
            (file.note.as_deref(), file.backup.as_deref(), file.written),
            (Some("nothing to migrate"), None, false)
        );
    }
    assert_eq!(legacy, 9, "the fidelity set's legacy snapshots");
}

#[test]
fn a_snapshot_diffs_to_its_migration_only_in_zeroed_times() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".state_tasks.json");
    fs::copy(fixture("fidelity/s000/state.json"), &path).unwrap();
    let report: schema::Migrate = json_ok(lj().args(["migrate", "--format=json"]).arg(&path));
    let schema::Migration::Snapshot(plan) = &report.only().plan else {
        panic!("a snapshot plan: {report:?}");
    };
    assert!(plan.needed);
    assert_eq!(plan.zeroed.len(), 6);
    assert_eq!(
        plan.dropped,
        [schema::Dropped {
            list: schema::List::Leases,
            index: 0,
            task_id: Some(
                "bdbcb4084205d26a9396ef4209a6905015add73069d9661e577d7e0bf283697e".into()
            ),
            reason: "worker null: int() of null".into()
        }]
    );
    assert_eq!(report.mode, Mode::DryRun);
    // The human form: fixtures/golden/fidelity-s000.migrate.txt.
    assert_eq!(
        fs::read(&path).unwrap(),
        fs::read(fixture("fidelity/s000/state.json")).unwrap()
    );
}

#[test]
fn migrating_a_journal_reclaims_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".work_leases.jsonl");
    fs::copy(fixture("samples/legacy_demo.input.jsonl"), &path).unwrap();
    let before = fs::read(&path).unwrap();
    let report: schema::Migrate = json_written(
        lj().args([
            "migrate",
            "--apply",
            "--no-backup",
            "--format=json",
            "--now=1.0",
        ])
        .arg(&path),
    );
    let file = report.only();
    let schema::Migration::Journal { legacy_leases } = &file.plan else {
        panic!("a journal plan: {file:?}");
    };
    assert_eq!(
        ids_of(legacy_leases),
        ["b3ebf1ab1e22ca48684634c8a2b31bf4f956e0964f7eccb2c2e09cb59f6cc088"]
    );
    assert_eq!(file.note.as_deref(), Some("nothing to migrate"));
    assert!(!file.written);
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "the legacy lease stays for resume"
    );
    // "1 active lease off the unix clock: resume reclaims and requeues
    // them itself (L5); nothing is reclaimed here".
    golden::assert_run(
        "test.write.migrate-a-legacy-journal",
        "migrate --now=1.0 --color=never $DIR/.work_leases.jsonl",
        lj().args(["migrate", "--now=1.0", "--color=never"])
            .arg(&path),
        Some(tmp.path()),
    );
}

#[test]
fn migrate_rewrite_leaves_no_clock_less_record_and_keeps_legacy_leases() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".work_leases.jsonl");
    fs::copy(fixture("samples/legacy_demo.input.jsonl"), &path).unwrap();
    let (active, completed) = state(&path);
    golden::assert_run(
        "test.write.migrate-rewrite",
        "migrate --apply --rewrite --no-backup $DIR/.work_leases.jsonl",
        lj().args(["migrate", "--apply", "--rewrite", "--no-backup"])
            .arg(&path),
        Some(tmp.path()),
    );
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.lines().all(|l| l.contains("\"clock\":")), "{text}");
    // Exactly upstream's compaction of it (samples/legacy_demo.jsonl, before
    // its recovery line).
    let upstream = fs::read_to_string(fixture("samples/legacy_demo.jsonl")).unwrap();
    assert_eq!(text, upstream.lines().next().unwrap().to_string() + "\n");
    assert_eq!(state(&path), (active, completed));
    // "nothing to migrate", and no backup.
    golden::assert_run(
        "test.write.migrate-rewrite-again",
        "migrate --apply --rewrite $DIR/.work_leases.jsonl",
        lj().args(["migrate", "--apply", "--rewrite"]).arg(&path),
        Some(tmp.path()),
    );
}

#[test]
fn repair_brings_a_glued_record_back() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("torn.jsonl");
    fs::copy(fixture("samples/torn_tail_demo.jsonl"), &path).unwrap();
    let report: schema::Repair =
        json_written(lj().args(["repair", "--apply", "--format=json"]).arg(&path));
    let file = report.only();
    let salvaged: Vec<(u64, schema::Hidden, &str, schema::SalvageAction)> = file
        .plan
        .salvaged
        .iter()
        .map(|s| (s.line, s.hidden, &s.id[..8], s.action))
        .collect();
    assert_eq!(
        salvaged,
        [(
            2,
            schema::Hidden::Glued,
            "d877ee1d",
            schema::SalvageAction::Restored
        )]
    );
    assert_eq!((file.plan.before.active, file.plan.after.active), (1, 2));
    assert_eq!(file.plan.brought_back, [file.plan.salvaged[0].id.clone()]);
    let v: schema::Inspect = json_ok(lj().args(["inspect", "--format=json"]).arg(&path));
    let v = v.journal();
    assert_eq!(v.active_count, 2);
    assert_eq!(v.ignored, Default::default());
    let backup = file.backup.as_deref().unwrap();
    assert_eq!(
        fs::read(backup).unwrap(),
        fs::read(fixture("samples/torn_tail_demo.jsonl")).unwrap()
    );
    // Nothing is left to repair; --check says so with its exit status.
    golden::assert_run(
        "test.write.repair-check-nothing-left",
        "repair --check $DIR/torn.jsonl",
        lj().args(["repair", "--check"]).arg(&path),
        Some(tmp.path()),
    );
    fs::copy(fixture("verify/torn-tail/journal.jsonl"), &path).unwrap();
    let before = fs::read(&path).unwrap();
    // "(check: nothing is written)", and exit 1: there is something to do.
    golden::assert_run(
        "test.write.repair-check-torn-tail",
        "repair --check $DIR/torn.jsonl",
        lj().args(["repair", "--check"]).arg(&path),
        Some(tmp.path()),
    );
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn repair_output_is_human_and_whole() {
    let dir = copy_dir(&fixture("verify/torn-tail"));
    let path = dir.path().join("journal.jsonl");
    let shown = path.display();
    lj().args(["repair", "--color=never"])
        .arg(&path)
        .assert()
        .success()
        .stderr("")
        .stdout(format!(
            "repair {shown}  (dry run: nothing is written; --apply changes the file in place)\n\
             \x20 tail        cut 18 torn bytes at offset 206 (the backup keeps them)\n\
             \x20 reclaims    none (repair never reclaims a lease)\n\
             \x20 state       1 active, 0 completed → 1 active, 0 completed\n\
             \x20 digest      2b0fbf1a629f84b9 → 2b0fbf1a629f84b9\n"
        ));
    lj().args(["repair", "--color=never", "--no-backup"])
        .arg(&path)
        .assert()
        .success()
        .stderr("")
        .stdout(format!(
            "repair {shown}  (dry run: nothing is written; --apply changes the file in place)\n\
             \x20 tail        cut 18 torn bytes at offset 206 (--no-backup: they are not kept)\n\
             \x20 reclaims    none (repair never reclaims a lease)\n\
             \x20 state       1 active, 0 completed → 1 active, 0 completed\n\
             \x20 digest      2b0fbf1a629f84b9 → 2b0fbf1a629f84b9\n"
        ));
}

/// The writing commands, as they are called on a directory.
const WRITERS: [&[&str]; 4] = [
    &["repair"],
    &["recover", "--discard", "--all"],
    &["migrate"],
    &["compact"],
];

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
    // Each prints what it prints on fixtures/samples itself.
    for case in [
        "samples.repair",
        "samples.discard",
        "samples.migrate",
        "samples.compact",
        "samples.recover",
    ] {
        golden::assert_case_at(case, dir.path());
    }
    assert_eq!(snapshot(dir.path()), before);
    assert!(!dir.path().join(".master-queue.lock").exists());
}

#[test]
fn a_directory_is_recovered_deferred_journal_first() {
    let dir = copy_dir(&fixture("samples"));
    let report: schema::Forecast = json_ok(lj().args(["recover", "--format=json"]).arg(dir.path()));
    let files: Vec<&str> = report.files.iter().map(|f| f.path.as_str()).collect();
    let shown = |name: &str| dir.path().join(name).display().to_string();
    assert_eq!(
        files,
        [
            shown(".dispatch_protocol_deferred.jsonl"),
            shown(".work_leases.jsonl")
        ]
    );
}

#[test]
fn a_held_master_lock_refuses_with_exit_3() {
    // The lock is held by flock(1) (-o: its command does not hold it), not
    // by this test process, whose forked children would hold it too for a
    // moment before they exec and be named as holders.
    let dir = copy_dir(&fixture("samples"));
    let lock_path = dir.path().join(".master-queue.lock");
    let Some(mut master) = crate::support::hold_master_lock(&lock_path, "a held master lock")
    else {
        return;
    };
    let pid = master.id();
    let before = fs::read(dir.path().join(".work_leases.jsonl")).unwrap();
    for cmd in WRITERS {
        lj().args(cmd)
            .arg("--apply")
            .arg(dir.path())
            .assert()
            .code(3)
            .stdout("")
            .stderr(format!(
                "leasejournal: {}: a running master, pid {pid} (flock), holds .master-queue.lock; nothing was written. Stop it first, or wait for it with --lock-timeout SECONDS\n",
                dir.path().display(),
            ));
    }
    assert_eq!(
        fs::read(dir.path().join(".work_leases.jsonl")).unwrap(),
        before
    );
    assert!(temps(dir.path()).is_empty());
    // --lock-timeout waits for the master to let go: the command is still
    // waiting while the lock is held, and succeeds once it is released.
    let mut child = Command::new(bin())
        .args(["compact", "--apply", "--no-backup", "--lock-timeout=20"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(child.try_wait().unwrap(), None, "it waits for the lock");
    // SAFETY: kill(2) of the master's own process group (flock, sleep).
    unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
    master.wait().unwrap();
    let out = child.wait_with_output().unwrap();
    // Exit 0, and with no terminal, nothing said while it waited.
    let shown = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes).replace(&dir.path().display().to_string(), "$DIR")
    };
    let ran = golden::Ran {
        code: out.status.code(),
        stdout: shown(&out.stdout),
        stderr: shown(&out.stderr),
    };
    golden::assert_golden(
        "test.write.compact-after-the-lock-is-released",
        &ran.render("$ leasejournal compact --apply --no-backup --lock-timeout=20 $DIR"),
    );
}

fn pause_at(point: &str, marker: &Path) -> String {
    format!("{point}=pause:{}", marker.display())
}

#[test]
fn a_file_changed_between_plan_and_publish_is_not_overwritten() {
    for cmd in [
        &["compact"][..],
        &["recover", "--discard", "--all"],
        &["repair"],
    ] {
        let dir = copy_dir(&fixture("samples"));
        let path = dir.path().join(".work_leases.jsonl");
        if cmd == ["repair"] {
            // Something to repair: a torn tail.
            let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(b"{\"attempts\":1,\"clo").unwrap();
        }
        let marker = dir.path().join("planned");
        let child = Command::new(bin())
            .args(cmd)
            .arg("--apply")
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
        assert_eq!(out.status.code(), Some(2), "{cmd:?}");
        // compact finds out as it copies the lines it keeps, the others
        // before they append or rewrite.
        let message = if cmd == ["compact"] {
            "cannot read: it changed since it was read (another writer?); nothing was written"
        } else {
            "changed since it was read (another writer?); nothing was written"
        };
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("leasejournal: {}: {message}\n", path.display()),
            "{cmd:?}"
        );
        assert_eq!(
            fs::read(&path).unwrap(),
            appended,
            "{cmd:?}: the late append survives"
        );
        assert!(temps(dir.path()).is_empty());
        assert!(!names(dir.path()).iter().any(|n| n.contains(".bak.")));
        assert!(
            exports(&path).is_empty(),
            "{cmd:?}: no export of a discard that did not happen"
        );
    }
}

#[test]
fn a_symlinked_target_in_a_directory_anyone_can_write_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = fs::canonicalize(dir.path()).unwrap();
    let real = dir.join("real.jsonl");
    fs::copy(fixture("samples/.work_leases.jsonl"), &real).unwrap();
    let link = dir.join(".work_leases.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    for cmd in WRITERS {
        lj().args(cmd)
            .arg("--apply")
            .arg(&link)
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!(
                "leasejournal: {}: is a symbolic link to {}; refusing to write through it: the directory {} is writable by others (mode 0777, no sticky bit). Nothing was changed; a dry run shows the plan\n",
                link.display(),
                real.display(),
                dir.display()
            ));
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
    assert_eq!(names(&dir), [".work_leases.jsonl", "real.jsonl"]);
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
        assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{args:?}");
        // The first file it would change is the deferred journal.
        assert_temp_error(
            &String::from_utf8_lossy(&out.stderr),
            &dir.path().join(".dispatch_protocol_deferred.jsonl"),
            "cannot create the temporary file: permission denied",
        );
    }
    assert_eq!(
        fs::read(dir.path().join(".work_leases.jsonl")).unwrap(),
        before
    );
    assert!(temps(dir.path()).is_empty());
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
}

/// Run as root in a directory owned by another user, every file the
/// writing commands create or rewrite belongs to that user, and the master,
/// running as that user, can still open and lock its lock file.
#[test]
fn files_keep_their_owner() {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("files_keep_their_owner needs root to give files away; skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run1");
    fs::create_dir(&run).unwrap();
    for name in [".work_leases.jsonl", ".dispatch_protocol_deferred.jsonl"] {
        fs::copy(fixture("verify/torn-tail/journal.jsonl"), run.join(name)).unwrap();
    }
    fs::copy(
        fixture("verify/snapshot-legacy-clock/state.json"),
        run.join(".state_tasks.json"),
    )
    .unwrap();
    std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
    for entry in std::iter::once(run.clone()).chain(names(&run).iter().map(|n| run.join(n))) {
        std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).unwrap();
    }
    let work = run.join(".work_leases.jsonl");
    let export = run.join("dropped.jsonl");
    let repaired: schema::Repair =
        json_written(lj().args(["repair", "--apply", "--format=json"]).arg(&run));
    assert!(repaired.files.iter().any(|f| f.written));
    let migrated: schema::Migrate =
        json_written(lj().args(["migrate", "--apply", "--format=json"]).arg(&run));
    assert!(migrated.files.iter().any(|f| f.written));
    // Both journals are one lease each by now: already compact.
    let compacted: schema::Compact =
        json_written(lj().args(["compact", "--apply", "--format=json"]).arg(&run));
    assert!(compacted.files.iter().all(|f| !f.written));
    let report: schema::Discard = json_written(
        lj().args(["recover", "--discard", "--all", "--apply", "--format=json"])
            .arg("--export")
            .arg(&export)
            .arg(&work),
    );
    assert!(report.only().written);
    lj().args(["compact", "--output"])
        .arg(run.join("copy.jsonl"))
        .arg(&work)
        .assert()
        .success()
        .stderr("");
    let all = names(&run);
    assert!(all.iter().any(|n| n.contains(".bak.")), "{all:?}");
    for name in &all {
        let meta = fs::metadata(run.join(name)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (65534, 65534), "{name}");
    }
    let lock = fs::metadata(run.join(".master-queue.lock")).unwrap();
    assert_eq!(lock.mode() & 0o777, 0o600);
    // The master's own open and flock, as the directory's owner.
    let status = Command::new("/bin/sh")
        .arg("-c")
        .arg("exec 9<>\"$1\" && flock -n 9")
        .arg("sh")
        .arg(run.join(".master-queue.lock"))
        .uid(65534)
        .gid(65534)
        .status();
    match status {
        Ok(status) => assert!(status.success(), "uid 65534 cannot open and lock it"),
        // No flock(1) here: take the lock through our own binary, which
        // opens it exactly as the master does.
        Err(_) => {
            let (mut cmd, _keep) = crate::support::unprivileged_command();
            let out = cmd.args(["compact", "--apply"]).arg(&run).output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
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
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    // In words, not "os error 27".
    assert_temp_error(
        &String::from_utf8_lossy(&out.stderr),
        &path,
        "cannot write the temporary file: file too large",
    );
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(temps(dir.path()).is_empty());
    // The same through the failpoint, for a disk that is simply full.
    let out = lj()
        .args(["compact", "--apply"])
        .arg(&path)
        .env("LEASEJOURNAL_FAILPOINTS", "temp-written=error")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_temp_error(
        &String::from_utf8_lossy(&out.stderr),
        &path,
        "cannot write the temporary file: no space left on device",
    );
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(temps(dir.path()).is_empty());
}

#[test]
fn a_result_that_does_not_replay_to_the_plan_is_never_published() {
    let cases: [(&str, &[&str]); 3] = [
        ("fidelity/j000/journal.jsonl", &["compact", "--apply"]),
        ("samples/torn_tail_demo.jsonl", &["repair", "--apply"]),
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
            // The file the result was to become.
            let mut target = path.clone();
            if args.contains(&"--output") {
                target = dir.path().join("out.jsonl");
                cmd.arg(&target);
            }
            let out = cmd
                .arg(&path)
                .env("LEASEJOURNAL_FAILPOINTS", failpoints)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{args:?}");
            // What the check saw depends on when its thread read the file
            // (the re-read failed, or it read fewer bytes than the file
            // has): the middle of the message is left out.
            let stderr = String::from_utf8_lossy(&out.stderr);
            let prefix = format!(
                "leasejournal: {}: the result does not replay to the planned state (",
                target.display()
            );
            assert!(
                stderr.starts_with(&prefix)
                    && stderr.ends_with("); the original is unchanged\n")
                    && stderr.lines().count() == 1,
                "{args:?}: {stderr}"
            );
            assert_eq!(fs::read(&path).unwrap(), before, "{args:?}");
            assert!(temps(dir.path()).is_empty(), "{args:?}");
            assert!(!dir.path().join("out.jsonl").exists());
        }
    }
}

#[test]
fn a_rewrite_in_place_keeps_the_original_itself_as_its_backup() {
    use std::os::unix::fs::MetadataExt;
    let expected_dir = tempfile::tempdir().unwrap();
    let expected = expected_dir.path().join("compacted.jsonl");
    let report: schema::Compact = json_written(
        lj().args(["compact", "--format=json", "--output"])
            .arg(&expected)
            .arg(fixture("fidelity/j000/journal.jsonl")),
    );
    assert!(report.only().written);
    let expected = fs::read(&expected).unwrap();
    // compact --apply renames the result over the journal: the backup is
    // a hard link of the journal as it was, the same inode, no copy.
    let dir = copy_dir(&fixture("fidelity/j000"));
    let path = dir.path().join("journal.jsonl");
    let original = fs::read(&path).unwrap();
    let ino = fs::metadata(&path).unwrap().ino();
    let report: schema::Compact = json_written(
        lj().args(["compact", "--apply", "--format=json"])
            .arg(&path),
    );
    let backup = PathBuf::from(report.only().backup.as_deref().unwrap());
    let meta = fs::metadata(&backup).unwrap();
    assert_eq!((meta.ino(), meta.nlink()), (ino, 1));
    assert_eq!(fs::read(&backup).unwrap(), original);
    assert_ne!(fs::metadata(&path).unwrap().ino(), ino);
    assert_eq!(fs::read(&path).unwrap(), expected);

    // Where no link can be made (the failpoint fails the link as another
    // file system would), the backup is a copy, and the run is otherwise
    // the same.
    let dir = copy_dir(&fixture("fidelity/j000"));
    let path = dir.path().join("journal.jsonl");
    let ino = fs::metadata(&path).unwrap().ino();
    let report: schema::Compact = json_written(
        lj().args(["compact", "--apply", "--format=json"])
            .arg(&path)
            .env("LEASEJOURNAL_FAILPOINTS", "backup-link=error"),
    );
    let backup = PathBuf::from(report.only().backup.as_deref().unwrap());
    let meta = fs::metadata(&backup).unwrap();
    assert_ne!(meta.ino(), ino);
    assert_eq!(meta.nlink(), 1);
    assert_eq!(fs::read(&backup).unwrap(), original);
    assert_eq!(fs::read(&path).unwrap(), expected);

    // A --backup-dir on another file system, where the machine has one.
    let shm = Path::new("/dev/shm");
    if shm.is_dir() && fs::metadata(shm).unwrap().dev() != fs::metadata(&path).unwrap().dev() {
        let backups = tempfile::tempdir_in(shm).unwrap();
        let dir = copy_dir(&fixture("fidelity/j000"));
        let path = dir.path().join("journal.jsonl");
        let report: schema::Compact = json_written(
            lj().args(["compact", "--apply", "--format=json", "--backup-dir"])
                .arg(backups.path())
                .arg(&path),
        );
        let backup = PathBuf::from(report.only().backup.as_deref().unwrap());
        assert!(backup.starts_with(backups.path()));
        assert_eq!(fs::read(&backup).unwrap(), original);
    }
}

#[test]
fn a_change_appended_in_place_keeps_a_copy_as_its_backup() {
    use std::os::unix::fs::MetadataExt;
    // recover --discard appends to the journal itself: a link would share
    // the appended records, so the backup is a copy.
    let dir = copy_dir(&fixture("fidelity/j000"));
    let path = dir.path().join("journal.jsonl");
    let original = fs::read(&path).unwrap();
    let ino = fs::metadata(&path).unwrap().ino();
    let report: schema::Discard = json_written(
        lj().args([
            "recover",
            "--discard",
            "--all",
            "--now=1754560000",
            "--apply",
            "--format=json",
        ])
        .arg(&path),
    );
    let file = report.only();
    assert!(!file.plan.reclaims.is_empty());
    let backup = PathBuf::from(file.backup.as_deref().unwrap());
    assert_ne!(fs::metadata(&backup).unwrap().ino(), ino);
    assert_eq!(fs::metadata(&path).unwrap().ino(), ino);
    assert_eq!(fs::read(&backup).unwrap(), original);
    assert!(fs::read(&path).unwrap().len() > original.len());
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
        .success()
        .stderr("");
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
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: already exists; refusing to overwrite it\n",
            out_file.display()
        ));
    lj().args(["compact", "--output"])
        .arg(dir.path().join("new.jsonl"))
        .arg(fixture("samples"))
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: is a directory; --output takes a single file PATH (nothing was written)\n",
            fixture("samples").display()
        ));
    // A stale temporary file of ours is removed under the lock.
    fs::write(
        dir.path().join("journal.jsonl.leasejournal.424242.tmp"),
        b"junk",
    )
    .unwrap();
    let backups = tempfile::tempdir().unwrap();
    let report: schema::Compact = json_written(
        lj().args(["compact", "--apply", "--format=json", "--backup-dir"])
            .arg(backups.path())
            .arg(&path),
    );
    let file = report.only();
    assert_eq!(
        file.removed_temp_files,
        [dir.path()
            .join("journal.jsonl.leasejournal.424242.tmp")
            .display()
            .to_string()]
    );
    let backup = PathBuf::from(file.backup.as_deref().unwrap());
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
        if n == 5000 {
            // One lease glued onto a torn fragment, for repair to split.
            out.extend_from_slice(b"{\"attempts\":1,\"clock\":\"unix\",\"id\":\"");
        }
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
        .success()
        .stderr(predicates::function::function(crate::support::notes_only));
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
        (
            crash_case(work.path(), &original, &["compact", "--drop-hidden"]),
            false,
        ),
        (
            crash_case(
                work.path(),
                &original,
                &["recover", "--discard", "--all", "--now=1754560000"],
            ),
            true,
        ),
        (crash_case(work.path(), &original, &["repair"]), false),
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
    assert_eq!(kills, 45);
}

/// The two classes an independent differential found where the tool said
/// "fine" and upstream lost state, each minimised into fixtures/disagreements.
#[test]
fn upstream_disagreements_are_settled() {
    // "time":"-0" is -0.0 to upstream; its compaction writes -0.0, which it
    // reads back as 0.0: the same state, since -0.0 == 0.0.
    let case = fixture("disagreements/minus-zero-time");
    let dir = copy_dir(&case);
    let path = dir.path().join("journal.jsonl");
    let out = dir.path().join("out.jsonl");
    lj().args(["compact", "--drop-completed", "--output"])
        .arg(&out)
        .arg(&path)
        .assert()
        .success()
        .stderr("");
    assert_eq!(
        fs::read(&out).unwrap(),
        fs::read(case.join("compacted.jsonl")).unwrap()
    );
    let report: schema::Compact = json_written(
        lj().args(["compact", "--apply", "--format=json"])
            .arg(&path),
    );
    assert!(report.only().written);
    // A snapshot with one invalid UTF-8 byte: upstream's strict decoding
    // fails, restore is skipped, every statistic is lost.
    let snapshot = fixture("disagreements/snapshot-invalid-utf8/state.json");
    let out = lj()
        .args(["verify", "--format=json"])
        .arg(&snapshot)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let report: schema::Verify = schema::parse(&out.stdout);
    assert_eq!(report.counts, [("snapshot-corrupt".to_string(), 1)].into());
    assert_eq!(
        report.findings[0].message,
        "does not parse (invalid UTF-8 (upstream decodes the snapshot strictly and starts empty) at byte 148): upstream starts empty and every statistic is lost"
    );
    let v: schema::Inspect = json_ok(lj().args(["inspect", "--format=json"]).arg(&snapshot));
    assert_eq!(v.snapshot().restored, None);
    lj().arg("migrate")
        .arg(&snapshot)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: cannot migrate: it does not parse (invalid UTF-8 (upstream decodes the snapshot strictly and starts empty) at byte 148); restore it from a backup instead\n",
            snapshot.display()
        ));
}

#[test]
fn compact_keeps_hidden_records_unless_told_and_the_forecast_names_them() {
    let dir = copy_dir(&fixture("verify/glued-record"));
    let path = dir.path().join("journal.jsonl");
    let before = fs::read(&path).unwrap();
    // The dry run shows the plan, hidden records and all; --check says it
    // would change the file; only the writing modes refuse.
    golden::assert_run(
        "test.write.compact-hidden-plan",
        "compact --color=never $DIR/journal.jsonl",
        lj().args(["compact", "--color=never"]).arg(&path),
        Some(dir.path()),
    );
    let plan: schema::Compact = json_ok(lj().args(["compact", "--format=json"]).arg(&path));
    assert_eq!(plan.only().plan.needs, ["--drop-hidden"]);
    lj().args(["compact", "--check"])
        .arg(&path)
        .assert()
        .code(1);
    let out_file = dir.path().join("out.jsonl");
    let out_arg = out_file.to_str().unwrap();
    for args in [
        &["compact", "--apply"][..],
        &["compact", "--output", out_arg],
        &["migrate", "--rewrite", "--apply"],
    ] {
        let out = lj().args(args).arg(&path).output().unwrap();
        if args[0] == "migrate" {
            // No clock-less record: nothing to rewrite, nothing dropped.
            assert_eq!(out.status.code(), Some(0), "{args:?}");
            continue;
        }
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "leasejournal: {}: 1 record hidden in lines upstream ignores (glued, behind a byte order mark or before a zero fill) would be dropped; run `leasejournal repair --apply {}` first. Nothing was changed\n",
                path.display(),
                path.display()
            )
        );
    }
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(!out_file.exists());
    // "drops       1 record hidden in lines upstream ignores
    // (--drop-hidden; leasejournal repair would bring them back)".
    golden::assert_run(
        "test.write.compact-drop-hidden",
        "compact --drop-hidden --color=never $DIR/journal.jsonl",
        lj().args(["compact", "--drop-hidden", "--color=never"])
            .arg(&path),
        Some(dir.path()),
    );
    // "hidden      1 record in lines upstream ignores: resume does not see
    // them and cannot requeue their work; leasejournal repair --apply PATH
    // brings them back".
    golden::assert_run(
        "test.write.recover-names-hidden-records",
        "recover --color=never --now=1754550100 $DIR/journal.jsonl",
        lj().args(["recover", "--color=never", "--now=1754550100"])
            .arg(&path),
        Some(dir.path()),
    );
    // Resume's first reclaim "glues onto the torn last line", or "onto the
    // last record, which has no newline".
    golden::assert_case("verify-torn-tail.recover");
    golden::assert_case("verify-unterminated-tail.recover");
}

#[test]
fn compact_empties_a_file_of_bytes_without_records_only_when_told() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let noise = b"not a record\n{\"op\": \"lease\"}\n\0\0\0\0".to_vec();
    fs::write(&path, &noise).unwrap();
    golden::assert_run(
        "test.write.compact-empties",
        "compact --color=never $DIR/journal.jsonl",
        lj().args(["compact", "--color=never"]).arg(&path),
        Some(dir.path()),
    );
    let plan: schema::Compact = json_ok(lj().args(["compact", "--format=json"]).arg(&path));
    let file = plan.only();
    assert_eq!(file.plan.needs, ["--allow-empty"]);
    assert_eq!(file.plan.records_after, 0);
    let dropped: Vec<(&str, u64)> = file
        .plan
        .dropped
        .iter()
        .map(|d| (d.code.as_str(), d.lines))
        .collect();
    assert_eq!(
        dropped,
        [("bad-id", 1), ("corrupt-line", 1), ("torn-tail", 1)]
    );
    lj().args(["compact", "--apply"])
        .arg(&path)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: compaction would leave it empty: none of its 3 lines changes the state upstream replays (the backup would keep them); add --allow-empty to write it. Nothing was changed\n",
            path.display()
        ));
    assert_eq!(fs::read(&path).unwrap(), noise);
    let applied: schema::Compact = json_written(
        lj().args(["compact", "--apply", "--allow-empty", "--format=json"])
            .arg(&path),
    );
    assert!(applied.only().written);
    assert_eq!(fs::read(&path).unwrap(), b"");
    let backup = applied.only().backup.clone().expect("a backup");
    assert_eq!(fs::read(backup).unwrap(), noise);
}

#[test]
fn output_and_check_say_what_they_do() {
    let dir = copy_dir(&fixture("verify/torn-tail"));
    let path = dir.path().join("journal.jsonl");
    let out_file = dir.path().join("fixed.jsonl");
    // "(the source file keeps them)".
    golden::assert_run(
        "test.write.repair-output",
        "repair --color=never --output $DIR/fixed.jsonl $DIR/journal.jsonl",
        lj().args(["repair", "--color=never", "--output"])
            .arg(&out_file)
            .arg(&path),
        Some(dir.path()),
    );
    for (extra, conflict) in [
        (&["--no-backup"][..], "'--no-backup'"),
        (&["--backup-dir", "/tmp"], "'--backup-dir <DIR>'"),
        (&["--apply"], "'--apply'"),
    ] {
        lj().args(["repair", "--output"])
            .arg(dir.path().join("other.jsonl"))
            .args(extra)
            .arg(&path)
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!(
                "error: the argument '--output <FILE>' cannot be used with {conflict}\n\n\
                 Usage: leasejournal repair --output <FILE> <PATH>...\n\n\
                 For more information, try '--help'.\n"
            ));
    }
    lj().args(["recover", "--check"])
        .arg(&path)
        .assert()
        .code(2)
        .stdout("")
        .stderr("leasejournal: recover --check goes with --discard: the forecast changes nothing. Nothing was changed\n");
    // A directory with only a snapshot: resume has nothing to requeue.
    let snap = copy_dir(&fixture("verify/missing-journal"));
    lj().args(["recover", "--color=never"])
        .arg(snap.path())
        .assert()
        .success()
        .stderr("")
        .stdout("recover no journal: resume has no lease to reclaim and nothing to requeue\n");
}

/// A journal named by its bare file name is backed up under a bare name
/// too: the path printed is the one a shell in that directory takes, with
/// no `./` in front.
#[test]
fn a_bare_file_names_backup_is_printed_bare() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        fixture("fidelity/j008/journal.jsonl"),
        dir.path().join("j.jsonl"),
    )
    .unwrap();
    let out = lj()
        .current_dir(dir.path())
        .args(["repair", "--apply", "j.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let backups: Vec<String> = crate::support::names(dir.path())
        .into_iter()
        .filter(|n| n.starts_with("j.jsonl.bak."))
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr,
        format!("leasejournal: backed up j.jsonl to {}\n", backups[0])
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("; backup {}\n", backups[0])),
        "{stdout}"
    );
    assert!(!stdout.contains("./"), "{stdout}");
}

/// A journal of `n` active leases of worker 1, one second apart.
fn active_journal(n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let payload = format!("{{\"path\":\"/afl/queue/id:{i:06}\"}}");
        let id = WorkId::of_canonical(payload.as_bytes());
        out.extend(lease_line(
            &id,
            &PyInt::Small(1),
            1_754_550_000.0 + i as f64,
            &PyInt::Small(1),
            Clock::Unix,
            payload.as_bytes(),
        ));
    }
    out
}

#[test]
fn recover_follows_inspects_conventions_rows_paths_and_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    fs::write(&path, active_journal(25)).unwrap();
    // 20 rows by default, and a line for the 5 left out; JSON has all 25.
    golden::assert_run(
        "test.write.recover-limit",
        "recover --color=never --now=1754550100 $DIR",
        lj().args(["recover", "--color=never", "--now=1754550100"])
            .arg(dir.path()),
        Some(dir.path()),
    );
    let all = lj()
        .args(["recover", "--color=never", "--now=1754550100", "--limit=0"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8(all.stdout).unwrap();
    assert_eq!(text.matches("┆ /afl/queue/id:").count(), 25);
    assert!(!text.contains("more leases"));
    let report: schema::Forecast = json_ok(lj().args(["recover", "--format=json"]).arg(dir.path()));
    assert_eq!(report.files[0].reclaims.len(), 25);
    let lock = report.master_lock.expect("a state directory's lock");
    assert_eq!((lock.present, lock.held), (false, Some(false)));
    // --limit is table rows everywhere: --discard refuses it (an old
    // script's cap would otherwise discard every lease), --first caps.
    lj().args(["recover", "--discard", "--all", "--apply", "--limit=5"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stdout("")
        .stderr("leasejournal: recover --discard takes no --limit (it shows every lease it drops): --first N discards at most N leases. Nothing was changed\n");
    let capped: schema::Discard = json_ok(
        lj().args([
            "recover",
            "--discard",
            "--all",
            "--first=5",
            "--format=json",
        ])
        .arg(dir.path()),
    );
    assert_eq!(capped.only().plan.reclaims.len(), 5);
    // Several paths, as inspect takes them; one unreadable: named on
    // stderr, listed in the JSON, exit 2, the others still forecast.
    let missing = dir.path().join("missing");
    let many = lj()
        .args(["recover", "--format=json", "--now=1754550100"])
        .arg(dir.path())
        .arg(fixture("samples"))
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(many.status.code(), Some(2));
    let report: schema::ManyForecasts = serde_json::from_slice(&many.stdout).unwrap();
    assert_eq!(
        (
            report.mode.as_str(),
            report.forecasts.len(),
            report.errors.len()
        ),
        ("forecasts", 2, 1)
    );
    assert_eq!(report.errors[0].path, missing.display().to_string());
    let stderr = String::from_utf8(many.stderr).unwrap();
    assert_eq!(
        stderr,
        format!("leasejournal: {}\n", report.errors[0].message)
    );
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    lj().args(["recover", "--discard", "--all"])
        .arg(dir.path())
        .arg(fixture("samples"))
        .assert()
        .code(2)
        .stdout("")
        .stderr("leasejournal: recover --discard takes one journal or state directory, not 2. Nothing was changed\n");
    // A master holding the lock: the forecast says the files are changing.
    let lock_path = dir.path().join(".master-queue.lock");
    let Some(mut master) = crate::support::hold_master_lock(&lock_path, "recover's lock notice")
    else {
        return;
    };
    let pid = master.id();
    let held = lj()
        .args(["recover", "--color=never", "--now=1754550100"])
        .arg(dir.path())
        .output()
        .unwrap();
    let report: schema::Forecast = json_ok(lj().args(["recover", "--format=json"]).arg(dir.path()));
    // SAFETY: kill(2) of the holder's own process group (flock, sleep).
    unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
    master.wait().unwrap();
    assert_eq!(held.status.code(), Some(0));
    let text = String::from_utf8(held.stdout).unwrap();
    let notice = format!(
        "  master lock held by pid {pid} (flock): a master is running, so this journal is changing under the forecast (resume forecasts a stopped master's files)"
    );
    assert_eq!(text.lines().nth(1), Some(notice.as_str()), "{text}");
    let lock = report.master_lock.expect("a state directory's lock");
    assert_eq!(
        (lock.held, lock.holders),
        (Some(true), vec![i64::from(pid)])
    );
}
