//! `inspect --records --format ndjson`: one object per line upstream's
//! reader sees, agreeing with `inspect`'s totals and active table and with
//! `verify`'s findings, on every shipped fidelity journal.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::golden;
use crate::schema::{self, Id, InspectJournal, PyInt, Verify};
use crate::support::{cases, fixture, json_ok, lj};

const NOW: &str = "1754600000";

/// One object of the stream: every member present, nothing else.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    file: String,
    line: u64,
    offset: u64,
    kind: String,
    op: Option<String>,
    id: Option<Id>,
    hidden_id: Option<Id>,
    worker: Option<PyInt>,
    previous_worker: Option<PyInt>,
    time: Option<f64>,
    clock: Option<String>,
    attempts: Option<PyInt>,
    effect: Option<String>,
    ignored: Option<String>,
    findings: Vec<String>,
}

/// The stream of `path`, one parsed object per line.
fn rows(path: &Path) -> Vec<Row> {
    rows_with(&[], path)
}

/// The stream of `path` with `args`.
fn rows_with(args: &[&str], path: &Path) -> Vec<Row> {
    let out = lj()
        .args(["inspect", "--records", "--format", "ndjson", "--now", NOW])
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).as_ref()
        ),
        (Some(0), ""),
        "{}",
        path.display()
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'));
    text.lines()
        .map(|line| schema::parse::<Row>(line.as_bytes()))
        .collect()
}

/// `verify`'s report of `path`, every finding listed.
fn verified(path: &Path) -> Verify {
    let out = lj()
        .args(["verify", "--format=json", "--max-examples=0", "--now", NOW])
        .arg(path)
        .output()
        .unwrap();
    schema::parse(&out.stdout)
}

/// Where each line starts, split as upstream's reader splits (universal
/// newlines: `\n`, `\r\n` and a lone `\r` each end a line).
fn line_starts(bytes: &[u8]) -> Vec<u64> {
    let mut starts = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        starts.push(at as u64);
        match bytes[at..].iter().position(|&b| b == b'\n' || b == b'\r') {
            None => break,
            Some(i) => {
                at += i + 1;
                if bytes[at - 1] == b'\r' && bytes.get(at) == Some(&b'\n') {
                    at += 1;
                }
            }
        }
    }
    starts
}

/// The codes whose findings depend on the state at the end of the file
/// (leases still active then, and resume's forecast of them): the stream,
/// written as the file is read, cannot give them to their lines.
const END_STATE: [&str; 6] = [
    "not-a-journal",
    "legacy-clock-lease",
    "future-lease",
    "expired-lease",
    "seed-missing",
    "requeued-twice",
];

#[test]
fn every_fidelity_journal_streams_as_inspect_and_verify_read_it() {
    let journals: Vec<_> = cases(&['j', 'w'])
        .into_iter()
        .map(|dir| dir.join("journal.jsonl"))
        .collect();
    assert_eq!(journals.len(), 80);
    for path in &journals {
        let shown = path.display().to_string();
        let rows = rows(path);
        let inspected: InspectJournal = json_ok::<schema::Inspect>(
            lj().args(["inspect", "--format", "json", "--now", NOW])
                .arg(path),
        )
        .journal();
        // One object per line upstream's reader sees, at its offset.
        let bytes = std::fs::read(path).unwrap();
        let starts = line_starts(&bytes);
        assert_eq!(rows.len() as u64, inspected.lines, "{shown}");
        assert_eq!(
            rows.iter().map(|r| (r.line, r.offset)).collect::<Vec<_>>(),
            starts
                .iter()
                .enumerate()
                .map(|(i, &o)| (i as u64 + 1, o))
                .collect::<Vec<_>>(),
            "{shown}"
        );
        assert!(rows.iter().all(|r| r.file == shown));
        // Records by op, and lines by why upstream ignores them.
        let mut ops = schema::OpCounts {
            lease: 0,
            done: 0,
            reclaim: 0,
            other: 0,
        };
        let mut ignored: BTreeMap<String, u64> = BTreeMap::new();
        for r in &rows {
            match r.op.as_deref() {
                Some("lease") => ops.lease += 1,
                Some("done") => ops.done += 1,
                Some("reclaim") => ops.reclaim += 1,
                Some(_) => ops.other += 1,
                None => assert!(r.kind != "record", "{shown}: {r:?}"),
            }
            assert_eq!(r.effect.is_some(), r.kind == "record", "{shown}: {r:?}");
            assert_eq!(r.clock.is_some(), r.kind == "record", "{shown}: {r:?}");
            let effect = r.effect.as_deref();
            assert_eq!(
                r.previous_worker.is_some(),
                effect == Some("took-over"),
                "{shown}: {r:?}"
            );
            assert_eq!(
                r.hidden_id.is_some(),
                r.ignored.as_deref() == Some("glued-record"),
                "{shown}: {r:?}"
            );
            // An accepted lease carries its values.
            if matches!(effect, Some("activated" | "reactivated" | "took-over")) {
                assert!(
                    r.attempts.is_some() && r.time.is_some() && r.worker.is_some(),
                    "{shown}: {r:?}"
                );
            }
            if let Some(reason) = &r.ignored {
                *ignored.entry(reason.clone()).or_default() += 1;
            }
        }
        assert_eq!(ops, inspected.records, "{shown}");
        assert_eq!(ignored, inspected.ignored, "{shown}");
        // Replaying the effects reaches inspect's active table.
        let mut active: BTreeMap<Id, String> = BTreeMap::new();
        for r in &rows {
            let id = || r.id.clone().unwrap();
            let worker = || r.worker.as_ref().unwrap().to_string();
            match r.effect.as_deref() {
                Some("activated" | "reactivated" | "took-over") => {
                    active.insert(id(), worker());
                }
                Some("completed" | "reclaimed") => {
                    assert_eq!(active.remove(&id()), Some(worker()), "{shown}: {r:?}");
                }
                _ => {}
            }
        }
        let table: BTreeMap<Id, String> = inspected
            .active
            .iter()
            .map(|a| (a.id.clone(), a.worker.to_string()))
            .collect();
        assert_eq!(active, table, "{shown}");
        // Each line's codes are verify's findings on that line, but those
        // of the end state.
        let verified = verified(path);
        let expected: BTreeSet<(u64, String, usize)> = numbered(
            verified
                .findings
                .iter()
                .filter(|f| !END_STATE.contains(&f.code.as_str()))
                .map(|f| {
                    (
                        f.line.expect("a journal finding has a line"),
                        f.code.clone(),
                    )
                }),
        );
        let got = numbered(
            rows.iter()
                .flat_map(|r| r.findings.iter().map(|c| (r.line, c.clone()))),
        );
        assert_eq!(got, expected, "{shown}");
        // With --end-state, every one of verify's findings on its line.
        let all = numbered(verified.findings.iter().map(|f| {
            (
                f.line.expect("a journal finding has a line"),
                f.code.clone(),
            )
        }));
        let with_end = rows_with(&["--end-state"], path);
        let got = numbered(
            with_end
                .iter()
                .flat_map(|r| r.findings.iter().map(|c| (r.line, c.clone()))),
        );
        assert_eq!(got, all, "{shown} --end-state");
        // Nothing else differs.
        let strip = |rows: &[Row]| -> Vec<String> {
            rows.iter()
                .map(|r| format!("{} {} {:?} {:?}", r.line, r.offset, r.effect, r.ignored))
                .collect()
        };
        assert_eq!(strip(&with_end), strip(&rows), "{shown}");
    }
}

/// (line, code, n): the n-th finding of that code on that line, so that
/// repeats count.
fn numbered(found: impl Iterator<Item = (u64, String)>) -> BTreeSet<(u64, String, usize)> {
    let mut seen: BTreeMap<(u64, String), usize> = BTreeMap::new();
    found
        .map(|(line, code)| {
            let n = seen.entry((line, code.clone())).or_default();
            *n += 1;
            (line, code, *n)
        })
        .collect()
}

/// A state directory streams its journals in the order resume reads them;
/// the samples' stream, whole.
#[test]
fn a_state_directory_streams_its_journals_in_resume_order() {
    golden::assert_run(
        "test.records.samples",
        "inspect --records --format ndjson --now 1754550100 fixtures/samples",
        lj().args([
            "inspect",
            "--records",
            "--format",
            "ndjson",
            "--now",
            "1754550100",
            "fixtures/samples",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR")),
        None,
    );
    let files: Vec<String> = rows(&fixture("samples"))
        .into_iter()
        .map(|r| r.file)
        .collect();
    let deferred = fixture("samples/.dispatch_protocol_deferred.jsonl");
    let work = fixture("samples/.work_leases.jsonl");
    let split = files
        .iter()
        .take_while(|f| **f == deferred.display().to_string())
        .count();
    assert!(split > 0);
    assert!(
        files[split..]
            .iter()
            .all(|f| *f == work.display().to_string())
    );
}

/// --records and --format ndjson go together, and nothing else takes
/// ndjson; each refusal is one line, nothing is read, exit 2.
#[test]
fn records_and_ndjson_go_together() {
    let samples = fixture("samples");
    for (args, message) in [
        (
            &["inspect", "--records"][..],
            "inspect --records writes one JSON object per journal line: add --format ndjson; nothing was read",
        ),
        (
            &["inspect", "--format", "ndjson"],
            "--format ndjson is the stream of inspect --records: add --records, or use --format json; nothing was read",
        ),
        (
            &["verify", "--format", "ndjson"],
            "--format ndjson is the stream of inspect --records; use --format json; nothing was read",
        ),
        (
            &["compact", "--format", "ndjson"],
            "--format ndjson is the stream of inspect --records; use --format json; nothing was read",
        ),
    ] {
        lj().args(args)
            .arg(&samples)
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!("leasejournal: {message}\n"));
    }
    // A snapshot has no lines to stream; the other paths still stream.
    let snapshot = fixture("samples/.state_tasks.json");
    let journal = fixture("samples/.work_leases.jsonl");
    let out = lj()
        .args(["inspect", "--records", "--format", "ndjson"])
        .arg(&snapshot)
        .arg(&journal)
        .output()
        .unwrap();
    assert_eq!(
        (out.status.code(), String::from_utf8(out.stderr).unwrap()),
        (
            Some(2),
            format!(
                "leasejournal: {}: a snapshot: --records reads journals\n",
                snapshot.display()
            )
        )
    );
    assert_eq!(out.stdout, {
        let alone = lj()
            .args(["inspect", "--records", "--format", "ndjson"])
            .arg(&journal)
            .output()
            .unwrap();
        alone.stdout
    });
}

/// `inspect --workers --format json` of `path`.
fn workers_of(path: &Path, now: &str) -> schema::Workers {
    json_ok(
        lj().args(["inspect", "--workers", "--format", "json", "--now", now])
            .arg(path),
    )
}

/// On every fidelity journal, each rank's counts are those of the replay
/// counted directly (the record stream's effects), and its active leases
/// are inspect's active table's.
#[test]
fn every_fidelity_journal_counts_its_workers_as_the_replay_does() {
    for dir in cases(&['j', 'w']) {
        let path = dir.join("journal.jsonl");
        let shown = path.display().to_string();
        let report = workers_of(&path, NOW);
        assert_eq!(
            (report.kind.as_str(), report.now),
            ("workers", 1754600000.0)
        );
        let [file] = &report.files[..] else {
            panic!("{shown}: one journal, one report");
        };
        assert_eq!(file.path, shown);
        // (leases, took over, completed, reclaimed, active) per rank.
        type Counts = (u64, u64, u64, u64, u64);
        let mut direct: BTreeMap<String, Counts> = BTreeMap::new();
        for r in rows(&path) {
            let Some(worker) = &r.worker else { continue };
            let c = direct.entry(worker.to_string()).or_default();
            match r.effect.as_deref() {
                Some("activated" | "reactivated") => c.0 += 1,
                Some("took-over") => (c.0, c.1) = (c.0 + 1, c.1 + 1),
                Some("completed") => c.2 += 1,
                Some("reclaimed") => c.3 += 1,
                _ => {}
            }
        }
        let inspected = json_ok::<schema::Inspect>(
            lj().args(["inspect", "--format", "json", "--now", NOW])
                .arg(&path),
        )
        .journal();
        for a in &inspected.active {
            direct.entry(a.worker.to_string()).or_default().4 += 1;
        }
        let reported: BTreeMap<String, Counts> = file
            .workers
            .iter()
            .map(|w| {
                let by = &w.reclaimed_by;
                assert_eq!(
                    by.resume + by.ttl_expiry + by.abandon,
                    w.reclaimed,
                    "{shown}"
                );
                (
                    w.worker.to_string(),
                    (w.leases, w.took_over, w.completed, w.reclaimed, w.active),
                )
            })
            .collect();
        assert_eq!(reported, direct, "{shown}");
    }
}

/// A campaign written to show each inference: a rank that went quiet, a
/// rollback (one reclaim), a TTL sweep (two reclaims at one time, leases
/// left) and resume's sweep (every lease reclaimed at one time); with
/// `legacy`, a lease and its done from before F314 come first.
fn campaign(legacy: bool) -> Vec<u8> {
    use leasejournal::engine::journal::encode::{lease_line, marker_line};
    use leasejournal::engine::journal::{Clock, WorkId};
    use leasejournal::engine::json::PyInt;
    let t0 = 1754550000.0;
    let mut journal = Vec::new();
    if legacy {
        let payload = r#"{"path":"/seed/legacy"}"#;
        let id = WorkId::of_canonical(payload.as_bytes());
        journal.extend(lease_line(
            &id,
            &PyInt::Small(4),
            310.5,
            &PyInt::Small(1),
            Clock::Legacy,
            payload.as_bytes(),
        ));
        journal.extend(marker_line("done", &id, Clock::Legacy, 312.5));
    }
    let lease = |n: u32, worker: i64, time: f64, journal: &mut Vec<u8>| {
        let payload = format!(r#"{{"path":"/seed/{n}"}}"#);
        journal.extend(crate::support::lease_of(&payload, worker, time));
        WorkId::of_canonical(payload.as_bytes())
    };
    let mark = |op: &str, id: &WorkId, time: f64, journal: &mut Vec<u8>| {
        journal.extend(marker_line(op, id, Clock::Unix, time));
    };
    // Rank 3 finishes one lease in 10 s and is never heard of again.
    let a = lease(1, 3, t0, &mut journal);
    mark("done", &a, t0 + 10.0, &mut journal);
    // Ranks 1 and 2 work for two hours, 10 s a lease.
    let mut n = 2;
    for step in 0..720 {
        let time = t0 + 20.0 + f64::from(step) * 10.0;
        for worker in [1, 2] {
            let id = lease(n, worker, time, &mut journal);
            mark("done", &id, time + 9.0, &mut journal);
            n += 1;
        }
    }
    let late = t0 + 20.0 + 7200.0;
    // A rollback: one reclaim, rank 2's lease, rank 1's still active.
    let b = lease(n, 1, late, &mut journal);
    let c = lease(n + 1, 2, late, &mut journal);
    mark("reclaim", &c, late + 1.0, &mut journal);
    // A TTL sweep: two reclaims at one time, one lease left active.
    let d = lease(n + 2, 2, late + 2.0, &mut journal);
    let e = lease(n + 3, 2, late + 2.0, &mut journal);
    mark("reclaim", &d, late + 3.0, &mut journal);
    mark("reclaim", &e, late + 3.0, &mut journal);
    // Resume: every active lease reclaimed at one time.
    let f = lease(n + 4, 2, late + 4.0, &mut journal);
    mark("reclaim", &b, late + 100.0, &mut journal);
    mark("reclaim", &f, late + 100.0, &mut journal);
    journal
}

#[test]
fn reclaims_are_told_apart_and_a_quiet_rank_is_stalled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    std::fs::write(&path, campaign(false)).unwrap();
    let report = workers_of(&path, "1754557400");
    let by_rank: BTreeMap<String, &schema::Worker> = report.files[0]
        .workers
        .iter()
        .map(|w| (w.worker.to_string(), w))
        .collect();
    let reclaimed = |rank: &str| &by_rank[rank].reclaimed_by;
    assert_eq!(
        *reclaimed("1"),
        schema::ReclaimedBy {
            resume: 1,
            ttl_expiry: 0,
            abandon: 0
        }
    );
    assert_eq!(
        *reclaimed("2"),
        schema::ReclaimedBy {
            resume: 1,
            ttl_expiry: 2,
            abandon: 1
        }
    );
    let stalled: Vec<&str> = by_rank
        .iter()
        .filter(|(_, w)| w.stalled)
        .map(|(rank, _)| rank.as_str())
        .collect();
    assert_eq!(stalled, ["3"]);
    assert_eq!(report.files[0].lease_seconds_median, Some(9.0));
    assert_eq!(
        (by_rank["3"].lease_seconds_median, by_rank["3"].last_line),
        (Some(10.0), Some(2))
    );
    // The table, whole.
    golden::assert_golden(
        "test.forensics.workers",
        &String::from_utf8(
            lj().args(["inspect", "--workers", "--now", "1754557400"])
                .arg(&path)
                .env("COLUMNS", "160")
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap()
        .replace(&path.display().to_string(), "JOURNAL"),
    );
}

/// `inspect --timeline --format json` of `path`, with `args` before it.
fn timeline_of(args: &[&str], path: &Path) -> schema::Timeline {
    json_ok(
        lj().args(["inspect", "--timeline", "--format", "json"])
            .args(args)
            .arg(path),
    )
}

/// The timeline's buckets hold every completion and reclaim, per rank as
/// `--workers` counts them; --since and --until narrow it; the picture at
/// 60 and 160 columns, in blocks and in ASCII (also for TERM=dumb), whole.
#[test]
fn the_timeline_counts_every_completion_and_draws_to_the_width() {
    // The shipped fixture is this campaign, with a lease from before F314.
    let path = fixture("forensics/campaign.jsonl");
    if std::env::var_os("LEASEJOURNAL_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, campaign(true)).unwrap();
    }
    assert!(std::fs::read(&path).unwrap() == campaign(true));
    let report = timeline_of(&["--now", "1754557400"], &path);
    let [file] = &report.files[..] else {
        panic!("one journal, one timeline")
    };
    let workers = workers_of(&path, "1754557400");
    let completed: u64 = workers.files[0].workers.iter().map(|w| w.completed).sum();
    // The legacy lease's done has no unix time: it is on no bucket.
    assert_eq!(file.completions.iter().sum::<u64>(), completed - 1);
    assert_eq!(file.reclaims.iter().sum::<u64>(), 5);
    for rank in &file.workers {
        assert_eq!(rank.completions.len(), file.completions.len());
        let w = workers.files[0]
            .workers
            .iter()
            .find(|w| w.worker == rank.worker)
            .unwrap();
        let legacy = u64::from(w.worker.to_string() == "4");
        assert_eq!(rank.completions.iter().sum::<u64>() + legacy, w.completed);
    }
    assert_eq!(file.legacy_end, Some(1754550000.0));
    assert_eq!(file.last_record, Some(1754550000.0 + 20.0 + 7200.0 + 100.0));
    // The last hour only: rank 3's one completion, at the start, is out.
    let narrowed = timeline_of(&["--since", "2025-08-07T08:00:00Z"], &path);
    let ranks: Vec<String> = narrowed.files[0]
        .workers
        .iter()
        .filter(|w| w.completions.iter().sum::<u64>() > 0)
        .map(|w| w.worker.to_string())
        .collect();
    assert_eq!(ranks, ["1", "2"]);
    assert!(narrowed.files[0].start.unwrap() <= 1754553600.0);
    let until = timeline_of(&["--until", "1754550015"], &path);
    assert_eq!(until.files[0].completions.iter().sum::<u64>(), 1);
    // The pictures.
    let draw = |columns: &str, extra: &[&str], term: Option<&str>| {
        let mut cmd = lj();
        cmd.args(["inspect", "--timeline"])
            .args(extra)
            .arg("fixtures/forensics/campaign.jsonl")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("COLUMNS", columns);
        if let Some(term) = term {
            cmd.env("TERM", term);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    golden::assert_golden("test.forensics.timeline-60", &draw("60", &[], None));
    golden::assert_golden("test.forensics.timeline-160", &draw("160", &[], None));
    let ascii = draw("60", &["--ascii"], None);
    golden::assert_golden("test.forensics.timeline-60-ascii", &ascii);
    assert_eq!(draw("60", &[], Some("dumb")), ascii);
    assert!(ascii.is_ascii(), "{ascii}");
    for picture in [draw("60", &[], None), ascii] {
        for line in picture.lines() {
            assert!(line.chars().count() <= 60, "{line}");
        }
    }
}

/// A state directory without journals has no worker and no timeline, and
/// says so; its snapshot is no error.
#[test]
fn a_directory_without_journals_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("samples/.state_tasks.json"),
        dir.path().join(".state_tasks.json"),
    )
    .unwrap();
    for (view, said) in [
        ("--workers", "no journal: no worker to show\n"),
        ("--timeline", "no journal: no timeline to draw\n"),
    ] {
        lj().args(["inspect", view])
            .arg(dir.path())
            .assert()
            .code(0)
            .stdout(said)
            .stderr("");
    }
    lj().args(["inspect", "--records", "--format", "ndjson"])
        .arg(dir.path())
        .assert()
        .code(0)
        .stdout("")
        .stderr("");
}

/// With --end-state, a state directory's stream carries every one of
/// verify's findings on its file and line, resume's duplicates across its
/// two journals included.
#[test]
fn the_end_state_spans_a_directorys_journals() {
    let lines: Vec<String> =
        std::fs::read_to_string(fixture("verify/requeued-twice/journal.jsonl"))
            .unwrap()
            .lines()
            .map(|l| format!("{l}\n"))
            .collect();
    assert_eq!(lines.len(), 2);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".dispatch_protocol_deferred.jsonl"),
        &lines[0],
    )
    .unwrap();
    std::fs::write(dir.path().join(".work_leases.jsonl"), &lines[1]).unwrap();
    let verified = verified(dir.path());
    let expected: BTreeSet<(String, u64, String)> = verified
        .findings
        .iter()
        .filter_map(|f| Some((f.file.clone(), f.line?, f.code.clone())))
        .collect();
    assert!(
        expected.iter().any(|(_, _, code)| code == "requeued-twice"),
        "{expected:?}"
    );
    let got: BTreeSet<(String, u64, String)> = rows_with(&["--end-state"], dir.path())
        .into_iter()
        .flat_map(|r| {
            r.findings
                .into_iter()
                .map(move |c| (r.file.clone(), r.line, c))
        })
        .collect();
    assert_eq!(got, expected);
}

/// A reclaim in the last bucket is drawn as R there (it used to be hidden
/// under the last record's X), and the legend says where the X went.
#[test]
fn the_timeline_draws_a_reclaim_in_the_last_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".work_leases.jsonl");
    let (a, b) = (r#"{"path":"/q/a"}"#, r#"{"path":"/q/b"}"#);
    let id =
        |p: &str| leasejournal::engine::journal::WorkId::of_canonical(p.as_bytes()).to_string();
    let mut journal = crate::support::lease_of(a, 1, 1754550000.0);
    journal.extend_from_slice(
        format!("{{\"clock\":\"unix\",\"id\":\"{}\",\"op\":\"done\",\"time\":1754550005.0,\"worker\":1}}\n", id(a)).as_bytes(),
    );
    journal.extend(crate::support::lease_of(b, 2, 1754550010.0));
    journal.extend_from_slice(
        format!(
            "{{\"clock\":\"unix\",\"id\":\"{}\",\"op\":\"reclaim\",\"time\":1754550059.0}}\n",
            id(b)
        )
        .as_bytes(),
    );
    std::fs::write(&path, &journal).unwrap();
    let out = lj()
        .args(["inspect", "--timeline", "--ascii"])
        .arg(&path)
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let marks = text
        .lines()
        .find(|l| l.trim_start().starts_with("marks"))
        .unwrap();
    assert!(marks.ends_with('R'), "{text}");
    assert!(!marks.contains('X'), "{text}");
    assert!(
        text.contains("X the last record, 2025-08-07 07:00:59 UTC (drawn as R)\n"),
        "{text}"
    );
}
