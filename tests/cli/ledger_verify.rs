//! The digest ledger in `verify` and `recover`: the shard count the next
//! master start reads it at and where that comes from (`--state-shards`,
//! `SYMCC_STATE_SHARDS`, `--workers`, the files), `SYMCC_PERSISTENT_STATE`,
//! every ledger finding on a ledger built for it, the active leases whose
//! digest is in no ledger file, and recover's rescan of each item; human
//! output compared whole, JSON through its typed structs, exit statuses.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use leasejournal::engine::ledger;

use crate::golden;
use crate::ledger::{cases, sha256_hex};
use crate::schema::{self, CountSource, Forecast, RescanWhy, Verdict, Verify};
use crate::support::{lease_of, lj, verify_output};

const NOW: &str = "1754600000";

/// A campaign in a temporary directory, as the master sees it from its
/// working directory: `run1/` its state directory, `afl/queue/` its seeds.
struct Campaign {
    root: tempfile::TempDir,
}

impl Campaign {
    /// A state directory with an empty work journal and nothing else.
    fn new() -> Campaign {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("run1")).unwrap();
        fs::create_dir_all(root.path().join("afl/queue")).unwrap();
        fs::write(root.path().join("run1/.work_leases.jsonl"), b"").unwrap();
        Campaign { root }
    }

    /// The state directory.
    fn run1(&self) -> PathBuf {
        self.root.path().join("run1")
    }

    /// The ledger's directory, made.
    fn shards(&self) -> PathBuf {
        let dir = self.run1().join(ledger::DIR);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Shard `index`'s file holds `bytes`.
    fn shard(&self, index: u32, bytes: &[u8]) {
        fs::write(self.shards().join(ledger::file_name(index)), bytes).unwrap();
    }

    /// A seed in the AFL queue: its path as a lease names it, and the
    /// digest of its content.
    fn seed(&self, name: &str) -> (String, String) {
        let content = format!("the input {name}\n");
        let path = format!("afl/queue/{name}");
        fs::write(self.root.path().join(&path), &content).unwrap();
        (path, sha256_hex(content.as_bytes()))
    }

    /// A journal of `run1/` holds these lines.
    fn journal(&self, name: &str, lines: &[Vec<u8>]) {
        fs::write(self.run1().join(name), lines.concat()).unwrap();
    }

    /// leasejournal run from the campaign's root.
    fn lj(&self) -> assert_cmd::Command {
        let mut cmd = lj();
        cmd.current_dir(self.root.path())
            .env("COLUMNS", "200")
            .env("NO_COLOR", "1");
        cmd
    }
}

/// A digest in shard `shard` at `count` shards, the `n`th of its kind.
fn digest_in(shard: u32, count: u32, n: u32) -> String {
    format!("{:08x}{:056x}", shard + count * n, 0xd1_9e57 + n)
}

/// The payload the master writes for a dispatched input (canonical).
fn payload(path: &str, sha256: &str) -> String {
    format!(
        r#"{{"continuation":null,"focus_bytes":"","parameter_overrides":{{}},"parameter_token":"","path":"{path}","s2f_actions":[],"schedule_prefix":[],"sha256":"{sha256}","strategy":0,"target_branch":0}}"#
    )
}

/// Runs `verify --format json`: the report's exit status is the process's
/// and its verdict's, and stderr names only what could not be checked.
fn verify_json(cmd: &mut assert_cmd::Command) -> (i32, Verify) {
    let out = cmd
        .args(["--format=json", "--max-examples=0"])
        .output()
        .unwrap();
    let (code, report) = verify_output(&out);
    let expected = match report.verdict {
        Verdict::Go => 0,
        Verdict::NoGo => 1,
        Verdict::Incomplete => 2,
        Verdict::Busy => 3,
    };
    assert_eq!(code, expected, "the exit status is the verdict's");
    (code, report)
}

/// The one target's ledger summary.
fn summary(report: &Verify) -> &schema::LedgerSummary {
    let view = report.targets[0].ledger.as_ref().expect("a ledger");
    assert!(view.used);
    view.read.as_ref().expect("read")
}

/// The counts of a report, as (code, count) pairs.
fn counts(report: &Verify) -> Vec<(&str, u64)> {
    report
        .counts
        .iter()
        .map(|(c, n)| (c.as_str(), *n))
        .collect()
}

/// A ledger with every damage the checks name, read at 5 shards: torn and
/// NUL tails, a digest without its newline, ignored and blank lines, a
/// misplaced digest, a repeated one, a directory where a shard file would
/// be, and a file 5 shards never read.
fn damaged() -> Campaign {
    let c = Campaign::new();
    let d = |shard, n| digest_in(shard, 5, n);
    c.shard(
        0,
        format!("{}\n{}\n{}\nabc", d(0, 1), d(0, 2), d(0, 3)).as_bytes(),
    );
    c.shard(
        1,
        [format!("{}\n{}\n", d(1, 1), d(1, 2)).as_bytes(), &[0; 8]]
            .concat()
            .as_slice(),
    );
    c.shard(2, format!("{}\n{}", d(2, 1), d(2, 2)).as_bytes());
    let lines = [
        d(3, 1),
        d(3, 2).to_uppercase(),
        d(3, 3)[..63].to_string(),
        "g".repeat(64),
        format!("{}\0{}", &d(3, 4)[..20], &d(3, 4)[21..]),
        "hello".to_string(),
        String::new(),
        "   ".to_string(),
        d(0, 4),
        d(3, 1),
        d(3, 5),
    ];
    c.shard(3, (lines.join("\n") + "\n").as_bytes());
    fs::create_dir_all(c.shards().join(ledger::file_name(4))).unwrap();
    c.shard(7, format!("{}\n", digest_in(7, 8, 1)).as_bytes());
    fs::write(c.shards().join("processed.5.log"), format!("{}\n", d(0, 9))).unwrap();
    c
}

#[test]
fn every_ledger_finding_on_a_ledger_built_for_it() {
    let c = damaged();
    let (code, report) = verify_json(
        c.lj()
            .args(["verify", "--now", NOW, "--state-shards", "5"])
            .arg("run1"),
    );
    assert_eq!((code, report.verdict), (1, Verdict::NoGo));
    assert_eq!(
        counts(&report),
        [
            ("ledger-blank-line", 2),
            ("ledger-duplicate", 1),
            ("ledger-ignored-line", 5),
            ("ledger-misplaced", 1),
            ("ledger-not-a-file", 1),
            ("ledger-torn-tail", 2),
            ("ledger-unread-shards", 1),
            ("ledger-unterminated-tail", 1),
        ]
    );
    // Each where it is: the file, the line.
    let at = |code: &str| -> Vec<(String, Option<u64>)> {
        report
            .findings_of(code)
            .map(|f| {
                (
                    f.file.trim_start_matches("run1/.state_shards").to_string(),
                    f.line,
                )
            })
            .collect()
    };
    assert_eq!(
        at("ledger-torn-tail"),
        [
            ("/processed.000.log".into(), Some(4)),
            ("/processed.001.log".into(), Some(3))
        ]
    );
    assert_eq!(
        at("ledger-unterminated-tail"),
        [("/processed.002.log".into(), Some(2))]
    );
    let ignored: Vec<Option<u64>> = at("ledger-ignored-line").into_iter().map(|a| a.1).collect();
    assert_eq!(ignored, [Some(2), Some(3), Some(4), Some(5), Some(6)]);
    let blank: Vec<Option<u64>> = at("ledger-blank-line").into_iter().map(|a| a.1).collect();
    assert_eq!(blank, [Some(7), Some(8)]);
    assert_eq!(
        at("ledger-not-a-file"),
        [("/processed.004.log".into(), None)]
    );
    assert_eq!(at("ledger-unread-shards"), [(String::new(), None)]);
    let ledger = summary(&report);
    assert_eq!(
        (ledger.shard_count, ledger.shard_count_from, ledger.unread),
        (5, CountSource::Option, 1)
    );
    assert_eq!(ledger.unread_files, ["processed.007.log"]);
    assert_eq!(
        report.next,
        [
            "leasejournal repair --apply run1",
            "leasejournal repair --apply --state-shards 5 run1"
        ]
    );
    let must: Vec<&str> = report.must_do.iter().map(|m| m.code.as_str()).collect();
    assert_eq!(must, ["ledger-not-a-file"]);
    golden::assert_run(
        "test.ledger_verify.every-finding",
        &format!("verify --now {NOW} --state-shards 5 run1"),
        c.lj()
            .args(["verify", "--now", NOW, "--state-shards", "5"])
            .arg("run1"),
        Some(c.root.path()),
    );
    // Under --strict the warnings keep it from go too, each with its
    // must-do.
    let (_, strict) = verify_json(
        c.lj()
            .args(["verify", "--strict", "--now", NOW, "--state-shards", "5"])
            .arg("run1"),
    );
    let must: Vec<&str> = strict.must_do.iter().map(|m| m.code.as_str()).collect();
    assert_eq!(must, ["ledger-ignored-line", "ledger-not-a-file"]);
}

#[test]
fn a_clean_ledger_at_the_count_it_was_written_with_is_a_go() {
    let c = Campaign::new();
    for shard in 0..4 {
        let lines: String = (1..4).map(|n| digest_in(shard, 4, n) + "\n").collect();
        c.shard(shard, lines.as_bytes());
    }
    let (code, report) = verify_json(
        c.lj()
            .args(["verify", "--now", NOW, "--workers", "4"])
            .arg("run1"),
    );
    assert_eq!((code, counts(&report)), (0, vec![]));
    let ledger = summary(&report);
    assert_eq!(
        (ledger.shard_count, ledger.shard_count_from, ledger.digests),
        (4, CountSource::Workers, 12)
    );
    assert_eq!(ledger.fitting_counts.as_deref(), Some(&[4][..]));
    // Without a count it says which the files need, and nothing else.
    let (code, report) = verify_json(c.lj().args(["verify", "--now", NOW]).arg("run1"));
    assert_eq!(
        (code, counts(&report)),
        (0, vec![("ledger-count-unknown", 1)])
    );
    let [finding] = &report.findings[..] else {
        panic!("{:?}", report.findings)
    };
    assert!(
        finding.message.ends_with("the files fit the count 4"),
        "{}",
        finding.message
    );
    golden::assert_run(
        "test.ledger_verify.count-unknown",
        &format!("verify --now {NOW} run1"),
        c.lj().args(["verify", "--now", NOW]).arg("run1"),
        Some(c.root.path()),
    );
}

/// The upstream case that went from 5 shards to 4: every way of giving
/// the count, and what each reads.
#[test]
fn the_count_comes_from_the_option_the_environment_the_workers_or_the_files() {
    let (_, copy, expected) = cases()
        .into_iter()
        .find(|(name, ..)| name == "l009")
        .expect("case l009");
    assert_eq!(expected.shard_count, 4);
    fs::write(copy.path().join(".work_leases.jsonl"), b"").unwrap();
    let lost = expected.unread().len() as u64;
    assert_eq!(lost, 27);
    type Row<'a> = (
        &'a [&'a str],
        &'a [(&'a str, &'a str)],
        u32,
        CountSource,
        Option<&'a str>,
    );
    let rows: &[Row] = &[
        (&["--state-shards", "4"], &[], 4, CountSource::Option, None),
        (
            &[],
            &[("SYMCC_STATE_SHARDS", "4")],
            4,
            CountSource::Environment,
            None,
        ),
        (&["--workers", "4"], &[], 4, CountSource::Workers, None),
        (
            &["--workers", "8"],
            &[("SYMCC_STATE_SHARDS", " +4 ")],
            4,
            CountSource::Environment,
            Some("SYMCC_STATE_SHARDS=' +4 ' comes before --workers 8, as in the master"),
        ),
        (
            &["--state-shards", "5", "--workers", "4"],
            &[("SYMCC_STATE_SHARDS", "4")],
            5,
            CountSource::Option,
            Some("--state-shards comes before SYMCC_STATE_SHARDS=4 and --workers 4"),
        ),
        (
            &["--workers", "4"],
            &[("SYMCC_STATE_SHARDS", "four")],
            4,
            CountSource::Workers,
            Some(
                "SYMCC_STATE_SHARDS=four is not an integer: the master uses min(64, workers) instead",
            ),
        ),
        (
            &[],
            &[("SYMCC_STATE_SHARDS", "")],
            5,
            CountSource::Files,
            Some(
                "SYMCC_STATE_SHARDS='' is not an integer: the master uses min(64, workers) instead, and no worker count is given",
            ),
        ),
        (&[], &[], 5, CountSource::Files, None),
        (&["--workers", "100"], &[], 64, CountSource::Workers, None),
        (
            &[],
            &[("SYMCC_STATE_SHARDS", "-3")],
            1,
            CountSource::Environment,
            None,
        ),
    ];
    for (args, env, count, from, note) in rows {
        let mut cmd = lj();
        cmd.args(["verify", "--now", NOW])
            .args(*args)
            .arg(copy.path());
        for (name, value) in *env {
            cmd.env(name, value);
        }
        let (code, report) = verify_json(&mut cmd);
        let ledger = summary(&report);
        let what = format!("{args:?} {env:?}");
        assert_eq!(
            (
                ledger.shard_count,
                ledger.shard_count_from,
                ledger.shard_count_note.as_deref()
            ),
            (*count, *from, *note),
            "{what}"
        );
        let unread = report.count("ledger-unread-shards");
        assert_eq!(unread, u64::from(ledger.unread > 0), "{what}");
        assert_eq!(code, i32::from(ledger.unread > 0), "{what}");
        assert_eq!(
            report.count("ledger-count-unknown"),
            u64::from(*from == CountSource::Files),
            "{what}"
        );
        // Written with 5: at another count (but 1, whose one file holds
        // every shard) its digests sit in files their shard does not name,
        // which only a count the start uses can say.
        assert_eq!(
            report.count("ledger-misplaced") > 0,
            ![1, 5].contains(count) && *from != CountSource::Files,
            "{what}"
        );
        if *count == 4 {
            // What upstream's reader loaded at 4, and lost.
            assert_eq!(
                (ledger.digests, ledger.unread),
                (expected.load_recent.len() as u64, lost),
                "{what}"
            );
            assert_eq!(ledger.unread_files, ["processed.004.log"], "{what}");
            let fix = format!(
                "leasejournal repair --apply --state-shards 4 {}",
                copy.path().display()
            );
            assert_eq!(report.next, [fix], "{what}");
        }
    }
    // inspect reads the count by the same rules (its --workers is its
    // table of ranks).
    let shards = copy.path().join(ledger::DIR);
    let inspected: schema::LedgerInspection = crate::support::json_ok(
        lj().args(["inspect", "--format=json"])
            .arg(&shards)
            .env("SYMCC_STATE_SHARDS", "4"),
    );
    assert_eq!(
        (
            inspected.ledger.shard_count,
            inspected.ledger.shard_count_from,
            inspected.ledger.unread
        ),
        (4, CountSource::Environment, lost)
    );
    let inspected: schema::LedgerInspection = crate::support::json_ok(
        lj().args(["inspect", "--format=json", "--state-shards", "5"])
            .arg(&shards)
            .env("SYMCC_STATE_SHARDS", "4"),
    );
    assert_eq!(
        (
            inspected.ledger.shard_count,
            inspected.ledger.shard_count_note.as_deref()
        ),
        (5, Some("--state-shards comes before SYMCC_STATE_SHARDS=4"))
    );
    // The human report, whole.
    let shown = copy.path().display().to_string();
    golden::assert_run(
        "test.ledger_verify.fewer-shards",
        &format!("verify --now {NOW} --workers 4 $DIR"),
        lj().args(["verify", "--now", NOW, "--workers", "4"])
            .arg(&shown)
            .env("COLUMNS", "100"),
        Some(copy.path()),
    );
    // A worker count of 0 is no start at all: the master refuses it.
    lj().args(["verify", "--workers", "0"])
        .arg(copy.path())
        .assert()
        .code(2)
        .stdout("");
}

/// A state directory whose work journal leases inputs the ledger holds in
/// a file read at 2 shards (a), in no file (b), in a file 2 shards never
/// read (c), a continuation (d) and a seed gone from this host (e); and a
/// deferred dispatch whose payload records no digest, whose seed's
/// content the ledger holds (f).
fn leased() -> (Campaign, Vec<(String, String)>) {
    let c = Campaign::new();
    let seeds: Vec<(String, String)> = ["a", "b", "c", "d", "f"]
        .iter()
        .map(|n| c.seed(n))
        .collect();
    let (a, b, cc, d, f) = (&seeds[0], &seeds[1], &seeds[2], &seeds[3], &seeds[4]);
    let e = ("afl/queue/e".to_string(), sha256_hex(b"the input e\n"));
    c.shard(0, format!("{}\n{}\n", a.1, digest_in(0, 2, 1)).as_bytes());
    c.shard(1, format!("{}\n", f.1).as_bytes());
    c.shard(3, format!("{}\n", cc.1).as_bytes());
    let continuation = format!(
        r#"{{"continuation":{{"checkpoint":"x"}},"focus_bytes":"","parameter_overrides":{{}},"parameter_token":"","path":"{}","s2f_actions":[],"schedule_prefix":[],"sha256":"{}","strategy":0,"target_branch":0}}"#,
        d.0,
        "c".repeat(64)
    );
    c.journal(
        ".work_leases.jsonl",
        &[
            lease_of(&payload(&a.0, &a.1), 1, 1754550001.0),
            lease_of(&payload(&b.0, &b.1), 2, 1754550002.0),
            lease_of(&payload(&cc.0, &cc.1), 3, 1754550003.0),
            lease_of(&continuation, 4, 1754550004.0),
            lease_of(&payload(&e.0, &e.1), 5, 1754550005.0),
        ],
    );
    let recovery = format!(
        r#"{{"continuation":null,"focus_bytes":"","path":"{}","s2f_actions":[],"schedule_prefix":[],"target_branch":0}}"#,
        f.0
    );
    c.journal(
        ".dispatch_protocol_deferred.jsonl",
        &[lease_of(&recovery, 6, 1754550006.0)],
    );
    (c, seeds)
}

#[test]
fn an_active_lease_whose_digest_is_in_no_ledger_file_runs_twice() {
    let (c, seeds) = leased();
    let verify = |count: &str| {
        verify_json(
            c.lj()
                .args(["verify", "--now", NOW, "--state-shards", count])
                .arg("run1"),
        )
    };
    // Only b: a is loaded, c is in the ledger (unread at 2, which is the
    // ledger's own finding), d is a continuation, e is dropped.
    for count in ["2", "4"] {
        let (_, report) = verify(count);
        let flagged: Vec<(Option<u64>, Option<&str>)> = report
            .findings_of("lease-not-in-ledger")
            .map(|f| (f.line, f.id.as_deref()))
            .collect();
        let b_id = report.findings_of("lease-not-in-ledger").next().unwrap();
        assert_eq!(flagged.len(), 1, "{count}: {flagged:?}");
        assert_eq!(flagged[0].0, Some(2), "{count}");
        assert!(b_id.message.contains(&seeds[1].1[..12]), "{}", b_id.message);
        assert_eq!(report.count("seed-missing"), 1, "{count}");
        assert_eq!(
            report.count("ledger-unread-shards"),
            u64::from(count == "2")
        );
    }
    golden::assert_run(
        "test.ledger_verify.lease-not-in-ledger",
        &format!("verify --now {NOW} --state-shards 2 run1"),
        c.lj()
            .args(["verify", "--now", NOW, "--state-shards", "2"])
            .arg("run1"),
        Some(c.root.path()),
    );
    // With the ledger off nothing is judged against it.
    let (_, off) = verify_json(
        c.lj()
            .args(["verify", "--now", NOW, "--state-shards", "2"])
            .arg("run1")
            .env("SYMCC_PERSISTENT_STATE", "0"),
    );
    assert_eq!(off.count("lease-not-in-ledger"), 0);
    assert_eq!(off.count("ledger-off"), 1);
}

#[test]
fn recover_says_whether_the_rescan_sees_each_input_again() {
    let (c, seeds) = leased();
    let forecast = |env: Option<&str>| -> Forecast {
        let mut cmd = c.lj();
        cmd.args([
            "recover",
            "--format=json",
            "--now",
            NOW,
            "--state-shards",
            "2",
        ])
        .arg("run1");
        if let Some(value) = env {
            cmd.env("SYMCC_PERSISTENT_STATE", value);
        }
        let report: Forecast = crate::support::json_ok(&mut cmd);
        report.check();
        assert_eq!(report.schema_version, 3);
        report
    };
    let report = forecast(None);
    let whys: Vec<(Option<String>, Option<bool>, RescanWhy)> = report
        .files
        .iter()
        .flat_map(|f| &f.reclaims)
        .map(|r| {
            let rescan = r.rescan.expect("judged");
            (r.path.clone(), rescan.sees_again, rescan.why)
        })
        .collect();
    let path = |n: &str| Some(format!("afl/queue/{n}"));
    assert_eq!(
        whys,
        [
            // The deferred journal first: no digest in its payload, its
            // seed's content is loaded.
            (path("f"), Some(false), RescanWhy::Loaded),
            (path("a"), Some(false), RescanWhy::Loaded),
            (path("b"), Some(true), RescanWhy::NotInLedger),
            (path("c"), Some(true), RescanWhy::Unread),
            (path("d"), None, RescanWhy::Continuation),
            (path("e"), Some(true), RescanWhy::NotInLedger),
        ]
    );
    let digests: Vec<Option<&str>> = report.files[1]
        .reclaims
        .iter()
        .map(|r| r.digest.as_deref())
        .collect();
    assert_eq!(
        digests,
        [
            Some(&*seeds[0].1),
            Some(&*seeds[1].1),
            Some(&*seeds[2].1),
            None,
            Some(&*sha256_hex(b"the input e\n")),
        ]
    );
    let view = report.ledger.as_ref().expect("a ledger");
    let read = view.read.as_ref().expect("read");
    assert_eq!((read.shard_count, read.unread), (2, 1));
    golden::assert_run(
        "test.ledger_verify.recover-rescan",
        &format!("recover --now {NOW} --state-shards 2 run1"),
        c.lj()
            .args(["recover", "--now", NOW, "--state-shards", "2"])
            .arg("run1"),
        Some(c.root.path()),
    );
    // With the ledger off the rescan sees every input again.
    let off = forecast(Some("off"));
    assert!(
        off.ledger
            .as_ref()
            .is_some_and(|l| !l.used && l.read.is_none())
    );
    for r in off.files.iter().flat_map(|f| &f.reclaims) {
        assert_eq!(r.rescan.map(|r| r.why), Some(RescanWhy::LedgerOff));
    }
    // A journal named alone is judged by the ledger beside it.
    let alone: Forecast = crate::support::json_ok(
        c.lj()
            .args([
                "recover",
                "--format=json",
                "--now",
                NOW,
                "--state-shards",
                "4",
            ])
            .arg("run1/.work_leases.jsonl"),
    );
    alone.check();
    let c_why = alone.files[0].reclaims[2].rescan.map(|r| r.why);
    assert_eq!(c_why, Some(RescanWhy::Loaded), "c is read at 4");
    // Without a ledger, nothing is judged.
    fs::remove_dir_all(c.run1().join(ledger::DIR)).unwrap();
    let none = forecast(None);
    assert!(none.ledger.is_none());
}

#[test]
fn persistent_state_off_means_no_ledger_at_all() {
    let c = damaged();
    let run = |value: Option<&str>| {
        let mut cmd = c.lj();
        cmd.args(["verify", "--now", NOW, "--state-shards", "5"])
            .arg("run1");
        if let Some(value) = value {
            cmd.env("SYMCC_PERSISTENT_STATE", value);
        }
        verify_json(&mut cmd)
    };
    for off in ["0", "false", "OFF", "No"] {
        let (code, report) = run(Some(off));
        assert_eq!(
            (code, counts(&report)),
            (0, vec![("ledger-off", 1)]),
            "{off}"
        );
        let view = report.targets[0].ledger.as_ref().unwrap();
        assert!(!view.used && view.read.is_none(), "{off}");
    }
    // Upstream lowers the value and strips nothing.
    for on in ["1", " 0", "off ", "disabled", ""] {
        let (code, report) = run(Some(on));
        assert_eq!((code, report.count("ledger-off")), (1, 0), "{on:?}");
    }
    golden::assert_run(
        "test.ledger_verify.persistent-state-off",
        &format!("verify --now {NOW} --state-shards 5 run1  (SYMCC_PERSISTENT_STATE=0)"),
        c.lj()
            .args(["verify", "--now", NOW, "--state-shards", "5"])
            .arg("run1")
            .env("SYMCC_PERSISTENT_STATE", "0"),
        Some(c.root.path()),
    );
}

#[test]
fn an_unreadable_shard_file_makes_the_path_incomplete() {
    let c = Campaign::new();
    c.shard(0, format!("{}\n", digest_in(0, 1, 1)).as_bytes());
    let file = c.shards().join(ledger::file_name(0));
    fs::set_permissions(&file, fs::Permissions::from_mode(0o000)).unwrap();
    for dir in [c.root.path(), &c.run1(), &c.shards()] {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (std_cmd, _keep) = crate::support::unprivileged_command();
    let mut cmd = assert_cmd::Command::from_std(std_cmd);
    cmd.env_remove("SYMCC_STATE_SHARDS")
        .env_remove("SYMCC_PERSISTENT_STATE")
        .args(["verify", "--now", NOW])
        .arg(c.run1());
    let (code, report) = verify_json(&mut cmd);
    assert_eq!(
        (code, report.verdict, report.targets.len()),
        (2, Verdict::Incomplete, 0)
    );
    let error = &report.errors[0];
    assert_eq!(
        (
            error.path.clone(),
            error.file.clone(),
            error.message.as_str()
        ),
        (
            c.run1().display().to_string(),
            file.display().to_string(),
            "permission denied"
        )
    );
}

/// Every upstream case, verified at the count upstream read it with: the
/// numbers are upstream's, and each finding is there exactly when what it
/// says is.
#[test]
fn every_upstream_ledger_case_verifies_as_upstream_read_it() {
    for (name, copy, expected) in cases() {
        fs::write(copy.path().join(".work_leases.jsonl"), b"").unwrap();
        let count = expected.shard_count.to_string();
        let (code, report) = verify_json(
            lj().args(["verify", "--now", NOW, "--state-shards", &count])
                .arg(copy.path()),
        );
        let ledger = summary(&report);
        let unread = expected.unread().len() as u64;
        assert_eq!(
            (ledger.digests, ledger.unread),
            (expected.load_recent.len() as u64, unread),
            "{name}"
        );
        assert_eq!(
            report.count("ledger-unread-shards"),
            u64::from(unread > 0),
            "{name}"
        );
        let dirs_read = expected
            .files
            .iter()
            .filter(|f| f.read && f.kind == "dir")
            .count() as u64;
        assert_eq!(report.count("ledger-not-a-file"), dirs_read, "{name}");
        let errors = report
            .severities
            .get(&schema::Severity::Error)
            .copied()
            .unwrap_or(0);
        assert_eq!(code, i32::from(errors > 0), "{name}: {:?}", report.counts);
        assert_eq!(report.count("ledger-count-unknown"), 0, "{name}");
    }
}

#[test]
fn a_file_where_the_ledger_directory_goes_is_a_no_go_unless_the_ledger_is_off() {
    let c = Campaign::new();
    fs::write(c.run1().join(ledger::DIR), b"not a directory\n").unwrap();
    let run = |off: bool| {
        let mut cmd = c.lj();
        cmd.args(["verify", "--now", NOW, "--state-shards", "2"])
            .arg("run1");
        if off {
            cmd.env("SYMCC_PERSISTENT_STATE", "0");
        }
        verify_json(&mut cmd)
    };
    let (code, report) = run(false);
    assert_eq!(
        (code, counts(&report)),
        (1, vec![("ledger-not-a-directory", 1)])
    );
    // With the ledger off, upstream never makes it: nothing is wrong.
    let (code, report) = run(true);
    assert_eq!((code, counts(&report)), (0, vec![]));
    golden::assert_run(
        "test.ledger_verify.not-a-directory",
        &format!("verify --now {NOW} --state-shards 2 run1"),
        c.lj()
            .args(["verify", "--now", NOW, "--state-shards", "2"])
            .arg("run1"),
        Some(c.root.path()),
    );
}
