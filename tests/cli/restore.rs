//! `restore` (a discard export's leases appended again) and `rollback` (a
//! file put back to a backup): what comes back and what is skipped, what
//! is refused, the lock, the seal, the backups, and a second run that has
//! nothing to do.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use leasejournal::engine::journal::encode::marker_line;
use leasejournal::engine::journal::{Clock, WorkId};

use crate::golden;
use crate::schema::{self, Fate, Mode, TailFix};
use crate::support::{copy_dir, fixture, json_ok, json_written, lease_of, lj, names, state};

/// The files next to `path` whose names start with its name and `infix`.
fn companions(path: &Path, infix: &str) -> Vec<PathBuf> {
    let dir = path.parent().unwrap();
    let prefix = format!("{}{infix}", path.file_name().unwrap().to_string_lossy());
    names(dir)
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .map(|n| dir.join(n))
        .collect()
}

/// Discards every active lease of `journal` at `now` and returns the export.
fn discard_all(journal: &Path, now: &str) -> PathBuf {
    let before = companions(journal, ".discarded.");
    lj().args(["recover", "--discard", "--all", "--apply", "--no-backup"])
        .arg(format!("--now={now}"))
        .arg(journal)
        .assert()
        .success();
    let after = companions(journal, ".discarded.");
    let new: Vec<PathBuf> = after.into_iter().filter(|p| !before.contains(p)).collect();
    assert_eq!(new.len(), 1, "one export");
    new[0].clone()
}

fn append(path: &Path, bytes: &[u8]) {
    fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

fn restore_json(args: &[&str], export: &Path) -> schema::Restore {
    json_written(
        lj().arg("restore")
            .args(args)
            .arg("--format=json")
            .arg(export),
    )
}

#[test]
fn restore_after_a_discard_brings_exactly_the_discarded_leases_back_once() {
    let dir = copy_dir(&fixture("samples"));
    let journal = dir.path().join(".work_leases.jsonl");
    let before = state(&journal);
    assert_eq!(before.0.len(), 3);
    let export = discard_all(&journal, "1754550100");
    let discarded = fs::read(&journal).unwrap();
    assert!(state(&journal).0.is_empty());
    // The dry run names each lease and changes nothing; --check says there
    // is something to do.
    let plan = restore_json(&[], &export);
    assert_eq!(plan.mode, Mode::DryRun);
    let file = plan.only();
    assert_eq!(file.path, journal.display().to_string());
    assert_eq!(file.plan.export, export.display().to_string());
    assert_eq!((file.plan.restored, file.plan.skipped), (3, 0));
    assert!(file.plan.leases.iter().all(|l| l.fate == Fate::Restore));
    assert_eq!(file.plan.after.active, 3);
    assert!(!file.written);
    lj().args(["restore", "--check"])
        .arg(&export)
        .assert()
        .code(1)
        .stderr("");
    assert_eq!(fs::read(&journal).unwrap(), discarded);
    assert!(companions(&journal, ".bak.").is_empty());
    // --apply appends exactly the export, with a backup of the journal.
    let applied = restore_json(&["--apply"], &export);
    let file = applied.only();
    assert!(file.written);
    let backup = file.backup.clone().expect("a backup");
    assert_eq!(fs::read(&backup).unwrap(), discarded);
    let mut expected = discarded.clone();
    expected.extend(fs::read(&export).unwrap());
    assert_eq!(fs::read(&journal).unwrap(), expected);
    assert_eq!(state(&journal), before, "the very leases, as they were");
    // A second run has nothing to do and writes nothing, no backup either.
    let again = restore_json(&["--apply"], &export);
    let file = again.only();
    assert_eq!((file.plan.restored, file.plan.skipped), (0, 3));
    assert!(file.plan.leases.iter().all(|l| l.fate == Fate::Active));
    assert_eq!(file.plan.tail, TailFix::None);
    assert!(!file.written);
    assert_eq!(
        file.note.as_deref(),
        Some("nothing to restore: no exported lease can come back")
    );
    lj().args(["restore", "--check"])
        .arg(&export)
        .assert()
        .code(0)
        .stderr("");
    assert_eq!(fs::read(&journal).unwrap(), expected);
    assert_eq!(companions(&journal, ".bak.").len(), 1);
}

/// Four discarded leases, and what happened to each since: A leased again
/// and active, B leased again and done, C leased again and reclaimed, D
/// nothing. Only D comes back: restoring A would double it, B would run
/// finished work again, C would run again what resume already requeued.
#[test]
fn restore_skips_what_is_active_done_or_leased_again_since() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join(".work_leases.jsonl");
    let payload = |n: u32| format!("{{\"path\":\"/afl/queue/id:00000{n}\"}}");
    let id = |n: u32| WorkId::of_canonical(payload(n).as_bytes());
    let mut lines = Vec::new();
    for n in 1..=4 {
        lines.extend(lease_of(
            &payload(n),
            n as i64,
            1_754_550_000.0 + f64::from(n),
        ));
    }
    fs::write(&journal, lines).unwrap();
    let export = discard_all(&journal, "1754550100");
    let mut since = lease_of(&payload(1), 5, 1_754_550_200.0);
    since.extend(lease_of(&payload(2), 6, 1_754_550_201.0));
    since.extend(marker_line("done", &id(2), Clock::Unix, 1_754_550_202.0));
    since.extend(lease_of(&payload(3), 7, 1_754_550_203.0));
    since.extend(marker_line("reclaim", &id(3), Clock::Unix, 1_754_550_204.0));
    append(&journal, &since);
    golden::assert_run(
        "test.restore.skips",
        "restore $DIR/.work_leases.jsonl.discarded.$TIME.jsonl",
        lj().env("COLUMNS", "200").arg("restore").arg(&export),
        Some(dir.path()),
    );
    let report = restore_json(&["--apply"], &export);
    let file = report.only();
    let fates: Vec<(String, Fate, Option<u64>)> = file
        .plan
        .leases
        .iter()
        .map(|l| (l.id.clone(), l.fate, l.journal_line))
        .collect();
    assert_eq!(
        fates,
        [
            (id(1).to_hex(), Fate::Active, Some(9)),
            (id(2).to_hex(), Fate::Completed, Some(10)),
            (id(3).to_hex(), Fate::LeasedAgain, Some(12)),
            (id(4).to_hex(), Fate::Restore, Some(4)),
        ]
    );
    let (active, completed) = state(&journal);
    let active: Vec<(String, String)> =
        active.into_iter().map(|a| (a.0, a.1.to_string())).collect();
    let mut want = vec![(id(1).to_hex(), "5".into()), (id(4).to_hex(), "4".into())];
    want.sort();
    assert_eq!(active, want, "A as the master leased it again; D back");
    assert_eq!(completed, [id(2).to_hex()]);
}

#[test]
fn restore_onto_a_torn_tail_seals_it_first() {
    let dir = copy_dir(&fixture("samples"));
    let journal = dir.path().join(".work_leases.jsonl");
    let before = state(&journal);
    let export = discard_all(&journal, "1754550100");
    let sealed = fs::read(&journal).unwrap();
    let torn = br#"{"attempts":1,"clock":"unix","id":"c1037804a"#;
    append(&journal, torn);
    let report = restore_json(&["--apply"], &export);
    let file = report.only();
    assert_eq!(
        file.plan.tail,
        TailFix::Cut {
            offset: sealed.len() as u64,
            bytes: torn.len() as u64,
            zero_bytes: 0
        }
    );
    assert_eq!(file.plan.restored, 3);
    let mut expected = sealed.clone();
    expected.extend(fs::read(&export).unwrap());
    assert_eq!(fs::read(&journal).unwrap(), expected, "the torn bytes cut");
    let mut kept = sealed;
    kept.extend_from_slice(torn);
    assert_eq!(fs::read(file.backup.as_ref().unwrap()).unwrap(), kept);
    assert_eq!(state(&journal), before);
}

#[test]
fn restore_and_rollback_refuse_while_a_master_holds_the_lock() {
    let dir = copy_dir(&fixture("samples"));
    let journal = dir.path().join(".work_leases.jsonl");
    let export = discard_all(&journal, "1754550100");
    lj().args(["compact", "--apply"])
        .arg(&journal)
        .assert()
        .success();
    let backup = companions(&journal, ".bak.")
        .pop()
        .expect("compact's backup");
    // The lock is held by another process: held by this one, a child
    // another test forks in the meantime would share it for an instant.
    let Some(mut master) =
        crate::support::hold_master_lock(&dir.path().join(".master-queue.lock"), "the refusal")
    else {
        return;
    };
    let before = fs::read(&journal).unwrap();
    let refusal = format!(
        "leasejournal: {}: a running master, pid {} (flock), holds .master-queue.lock; nothing was written. Stop it first, or wait for it with --lock-timeout SECONDS\n",
        dir.path().display(),
        master.id()
    );
    for (command, file) in [("restore", &export), ("rollback", &backup)] {
        lj().args([command, "--apply"])
            .arg(file)
            .assert()
            .code(3)
            .stdout("")
            .stderr(refusal.clone());
    }
    master.kill().unwrap();
    master.wait().unwrap();
    assert_eq!(fs::read(&journal).unwrap(), before);
    assert_eq!(companions(&journal, ".bak.").len(), 1, "no backup made");
}

#[test]
fn a_corrupt_or_foreign_export_is_refused_naming_its_line() {
    let dir = copy_dir(&fixture("samples"));
    let journal = dir.path().join(".work_leases.jsonl");
    let export = discard_all(&journal, "1754550100");
    let discarded = fs::read(&journal).unwrap();
    let lines = fs::read(&export).unwrap();
    let first = lines.iter().position(|&b| b == b'\n').unwrap() + 1;
    let refused = |bytes: &[u8], name: &str, line: u64, why: &str| {
        let bad = dir.path().join(format!(
            ".work_leases.jsonl.discarded.20250101T00000{name}Z.jsonl"
        ));
        fs::write(&bad, bytes).unwrap();
        for mode in [&[][..], &["--apply"]] {
            lj().arg("restore")
                .args(mode)
                .arg(&bad)
                .assert()
                .code(2)
                .stdout("")
                .stderr(format!(
                    "leasejournal: {}: line {line}: {why}: not a discard export (one lease upstream replays per line, each id once); nothing was changed\n",
                    bad.display()
                ));
        }
    };
    // A reclaim among the leases: the journal itself, say.
    refused(&discarded, "1", 4, "a reclaim record, not a lease");
    // A torn line.
    let mut torn = lines[..first].to_vec();
    torn.extend_from_slice(&lines[first..first + 20]);
    refused(&torn, "2", 2, "not JSON: unterminated string at byte 20");
    // A lease whose payload is not its id's.
    let spliced = String::from_utf8(lines[..first].to_vec())
        .unwrap()
        .replace("orig:seed", "orig:seeD");
    refused(
        spliced.as_bytes(),
        "3",
        1,
        "a lease upstream ignores (payload hashes to 1fe442c71dc2606df9524562222c888b174d254f8f6a8a069f8aa7b9539af426, not to the record's id)",
    );
    // The same lease twice.
    let mut twice = lines.clone();
    twice.extend_from_slice(&lines[..first]);
    refused(
        &twice,
        "4",
        4,
        "lease c1037804a292 appears twice (line 1 too)",
    );
    // Another journal's export: none of its leases was ever leased here.
    let other = dir
        .path()
        .join("other.jsonl.discarded.20250101T000005Z.jsonl");
    fs::write(&other, lease_of(r#"{"path":"elsewhere"}"#, 1, 1.0)).unwrap();
    lj().arg("restore")
        .arg(&other)
        .arg(&journal)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: line 1: lease {} was never leased in this journal, nor any other: it is not a discard export of it (or the journal was compacted since, which forgets reclaimed leases); nothing was changed\n",
            other.display(),
            WorkId::of_canonical(br#"{"path":"elsewhere"}"#).short()
        ));
    assert_eq!(fs::read(&journal).unwrap(), discarded, "nothing written");
    // A name that does not say its journal needs the journal named.
    let renamed = dir.path().join("keep.jsonl");
    fs::copy(&export, &renamed).unwrap();
    lj().arg("restore")
        .arg(&renamed)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: the name does not say which journal it belongs to (<journal>.discarded.<UTC>.jsonl); name it: leasejournal restore EXPORT JOURNAL. Nothing was changed\n",
            renamed.display()
        ));
    let report: schema::Restore = json_ok(
        lj().args(["restore", "--format=json"])
            .arg(&renamed)
            .arg(&journal),
    );
    assert_eq!(report.only().plan.restored, 3);
}

/// The fixture's journal with a torn tail, repaired, then compacted: each
/// rollback gives back the backup's bytes and keeps what it replaced, so
/// that a rollback can itself be rolled back.
#[test]
fn rollback_of_a_compact_and_a_repair_gives_back_the_backups_bytes() {
    let dir = copy_dir(&fixture("runbook/run1"));
    let journal = dir.path().join(".work_leases.jsonl");
    let original = fs::read(&journal).unwrap();
    let bak = || companions(&journal, ".bak.");
    lj().args(["repair", "--apply"])
        .arg(&journal)
        .assert()
        .success();
    let repaired = fs::read(&journal).unwrap();
    let repair_backup = bak().pop().unwrap();
    // Another second's stamp for compact's backup is not needed: a later
    // backup of the same second takes the next free name.
    lj().args(["compact", "--apply"])
        .arg(&journal)
        .assert()
        .success();
    let compacted = fs::read(&journal).unwrap();
    assert_ne!(compacted, repaired);
    let compact_backup = bak().into_iter().find(|b| *b != repair_backup).unwrap();
    assert_eq!(fs::read(&compact_backup).unwrap(), repaired);
    // Back to before the compaction.
    let report: schema::Rollback = json_written(
        lj().args(["rollback", "--apply", "--format=json"])
            .arg(&compact_backup),
    );
    let file = report.only();
    assert!(file.written && !file.plan.loses_work);
    let journal_change = file.plan.journal.as_ref().unwrap();
    assert_eq!(journal_change.before, journal_change.after);
    assert_eq!(fs::read(&journal).unwrap(), repaired);
    let kept = PathBuf::from(file.backup.as_ref().unwrap());
    assert_eq!(fs::read(&kept).unwrap(), compacted, "what it replaced");
    // The rollback rolled back, then back to before the repair.
    lj().args(["rollback", "--apply"])
        .arg(&kept)
        .assert()
        .success();
    assert_eq!(fs::read(&journal).unwrap(), compacted);
    lj().args(["rollback", "--apply"])
        .arg(&repair_backup)
        .assert()
        .success();
    assert_eq!(fs::read(&journal).unwrap(), original);
    // Once there, nothing to do.
    let again: schema::Rollback = json_written(
        lj().args(["rollback", "--apply", "--format=json"])
            .arg(&repair_backup),
    );
    let file = again.only();
    assert!(file.plan.identical && !file.written);
    assert_eq!(
        file.note.as_deref(),
        Some("nothing to do: the file holds the backup's bytes already")
    );
}

/// After a compaction the master resumed and went on: a lease finished,
/// another one began. Rolling back to the compaction's backup would lose
/// both: refused, unless --allow-loss.
#[test]
fn rollback_that_would_lose_newer_records_is_refused() {
    let dir = copy_dir(&fixture("samples"));
    let journal = dir.path().join(".work_leases.jsonl");
    lj().args(["compact", "--apply"])
        .arg(&journal)
        .assert()
        .success();
    let backup = companions(&journal, ".bak.").pop().unwrap();
    let (active, _) = state(&journal);
    let finished = &active[0].0;
    let new = r#"{"path":"/afl/queue/id:000009"}"#;
    let new_id = WorkId::of_canonical(new.as_bytes()).to_hex();
    let mut since = format!(
        "{{\"clock\":\"unix\",\"id\":\"{finished}\",\"op\":\"done\",\"time\":1754550300.0}}\n"
    )
    .into_bytes();
    since.extend(lease_of(new, 4, 1_754_550_301.0));
    append(&journal, &since);
    let now = fs::read(&journal).unwrap();
    let dry: schema::Rollback = json_ok(lj().args(["rollback", "--format=json"]).arg(&backup));
    let plan = &dry.only().plan;
    assert!(plan.loses_work);
    let change = plan.journal.as_ref().unwrap();
    assert_eq!(change.active_lost, std::slice::from_ref(&new_id));
    assert_eq!(change.completed_lost, std::slice::from_ref(finished));
    assert_eq!(change.active_gained, std::slice::from_ref(finished));
    assert_eq!(
        change.records_not_in_backup,
        schema::RecordCounts {
            lease: 1,
            done: 1,
            reclaim: 0,
            other: 0
        }
    );
    let why = format!(
        "{}: rolling back to {} loses work recorded since the backup: 1 lease active now would be neither active nor completed (first {}): resume would not requeue that work; 1 completed id would not be (first {}): that work could run again; pass --allow-loss to roll back anyway. Nothing was changed",
        journal.display(),
        backup.display(),
        &new_id[..12],
        &finished[..12]
    );
    assert_eq!(plan.refused.as_deref(), Some(why.as_str()));
    for mode in ["--apply", "--check"] {
        lj().args(["rollback", mode])
            .arg(&backup)
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!("leasejournal: {why}\n"));
    }
    assert_eq!(fs::read(&journal).unwrap(), now);
    assert_eq!(companions(&journal, ".bak.").len(), 1);
    lj().args(["rollback", "--apply", "--allow-loss"])
        .arg(&backup)
        .assert()
        .success();
    assert_eq!(fs::read(&journal).unwrap(), fs::read(&backup).unwrap());
}

#[test]
fn rollback_of_a_snapshot_migration_and_of_names_that_are_no_backup() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join(".state_tasks.json");
    let legacy = fs::read(fixture("fidelity/s000/state.json")).unwrap();
    fs::write(&snapshot, &legacy).unwrap();
    lj().args(["migrate", "--apply"])
        .arg(&snapshot)
        .assert()
        .success();
    let migrated = fs::read(&snapshot).unwrap();
    let backup = companions(&snapshot, ".bak.").pop().unwrap();
    let report: schema::Rollback = json_written(
        lj().args(["rollback", "--apply", "--format=json"])
            .arg(&backup),
    );
    let file = report.only();
    assert_eq!(file.kind, schema::Kind::Snapshot);
    let change = file.plan.snapshot.as_ref().unwrap();
    assert!(change.tasks_behind.is_empty() && !file.plan.loses_work);
    assert_eq!(fs::read(&snapshot).unwrap(), legacy);
    assert_eq!(fs::read(file.backup.as_ref().unwrap()).unwrap(), migrated);
    // No file of the backup's name next to it; a name that is no backup's.
    let stray = dir.path().join("gone.json.bak.20250101T000000Z");
    fs::write(&stray, b"{}").unwrap();
    lj().arg("rollback")
        .arg(&stray)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: no such file next to the backup {} (a backup kept in --backup-dir? name the file: leasejournal rollback BACKUP FILE). Nothing was changed\n",
            dir.path().join("gone.json").display(),
            stray.display()
        ));
    lj().arg("rollback")
        .arg(&snapshot)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: not the name of a backup (FILE.bak.<UTC>); name the file it is a backup of: leasejournal rollback BACKUP FILE. Nothing was changed\n",
            snapshot.display()
        ));
    // Another state file's backup never goes back over this one.
    let work_backup = dir.path().join(".work_leases.jsonl.bak.20250807T070140Z");
    let deferred = dir.path().join(".dispatch_protocol_deferred.jsonl");
    fs::write(&work_backup, b"").unwrap();
    fs::write(&deferred, b"").unwrap();
    let before = crate::support::names(dir.path());
    lj().args(["rollback", "--apply"])
        .arg(&work_backup)
        .arg(&deferred)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "leasejournal: {}: is a backup of .work_leases.jsonl, not of {}: a rollback puts a file back to its own backup. Nothing was changed\n",
            work_backup.display(),
            deferred.display()
        ));
    assert_eq!(crate::support::names(dir.path()), before);
}
