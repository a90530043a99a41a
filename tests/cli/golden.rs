//! Golden files: the whole human output of every command on the shipped
//! fixtures, compared as text. Each case of [`cases`] is one command line
//! run on one fixture (the writing commands with `--apply` on a copy in a
//! temporary directory), and fixtures/golden/<case>.txt holds the command
//! line, the exit status, all of stdout and all of stderr. The same table
//! runs again with `--format json`, and each document is read into the
//! typed structs of [`crate::schema`].
//!
//! Output is made deterministic: `--now 1754600000` wherever a command
//! takes it, `COLUMNS=100`, `NO_COLOR=1`, paths relative to the directory
//! the command runs in, and the temporary directory and the wall-clock
//! stamps of backups and exports replaced by `$DIR` and `$TIME`, and the
//! checkout by `$REPO`.
//!
//! `LEASEJOURNAL_BLESS=1 cargo test --test cli golden` rewrites the files
//! (and removes those no case or test names any more); review the diff.
//! Other tests keep their own golden files under the same directory, named
//! `test.<module>.<what>.txt`, through [`assert_golden`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::schema;
use crate::support::lj;

/// The clock every case runs at: 2025-08-07 20:53:20 UTC, about 14 hours
/// after the fixtures' leases.
const NOW: &str = "1754600000";

/// The crate root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// fixtures/golden.
fn golden_dir() -> PathBuf {
    root().join("fixtures/golden")
}

/// Whether golden files are to be rewritten rather than compared.
fn blessing() -> bool {
    std::env::var_os("LEASEJOURNAL_BLESS").is_some()
}

// ---- comparing and blessing -------------------------------------------------

/// Where `expected` and `actual` first differ, line by line, with the line
/// before for context.
fn first_difference(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let at = e
        .iter()
        .zip(&a)
        .position(|(x, y)| x != y)
        .unwrap_or(e.len().min(a.len()));
    let line = |lines: &[&str], i: usize| {
        lines
            .get(i)
            .map_or("(end of text)".to_string(), |l| format!("{l:?}"))
    };
    let mut report = format!("first difference at line {}:\n", at + 1);
    if at > 0 {
        let _ = writeln!(report, "   context   {}", line(&e, at - 1));
    }
    let _ = writeln!(report, "   expected  {}", line(&e, at));
    let _ = write!(report, "   actual    {}", line(&a, at));
    if e.len() == a.len() && at == e.len() {
        // Same lines: only the final newline differs.
        report = "the texts differ only in their final newline".to_string();
    }
    report
}

/// Compares `actual` with fixtures/golden/`name`.txt, or writes it when
/// blessing. On a difference, says where.
fn compare(name: &str, actual: &str) -> Result<(), String> {
    let path = golden_dir().join(format!("{name}.txt"));
    if blessing() {
        std::fs::create_dir_all(golden_dir()).expect("create fixtures/golden");
        let unchanged = std::fs::read_to_string(&path).is_ok_and(|old| old == actual);
        if !unchanged {
            std::fs::write(&path, actual).expect("write a golden file");
        }
        return Ok(());
    }
    match std::fs::read_to_string(&path) {
        Ok(expected) if expected == actual => Ok(()),
        Ok(expected) => Err(format!(
            "fixtures/golden/{name}.txt: {}",
            first_difference(&expected, actual)
        )),
        Err(e) => Err(format!("fixtures/golden/{name}.txt: {e}")),
    }
}

/// Asserts that `actual` is fixtures/golden/`name`.txt (a test's own
/// golden file: `name` starts with `test.`).
pub fn assert_golden(name: &str, actual: &str) {
    assert!(
        name.starts_with("test."),
        "{name}: tests' golden files start with test."
    );
    if let Err(report) = compare(name, actual) {
        panic!(
            "{report}\n(LEASEJOURNAL_BLESS=1 cargo test --test cli rewrites it; review the diff)\n\n{actual}"
        );
    }
}

/// Runs `cmd` and asserts that what it did (exit status, stdout, stderr,
/// with `dir` shown as `$DIR`) is the test's golden file `name`; `shown`
/// is the command line the file shows after `leasejournal`.
pub fn assert_run(name: &str, shown: &str, cmd: &mut assert_cmd::Command, dir: Option<&Path>) {
    let ran = run(cmd, dir);
    assert_golden(name, &ran.render(&format!("$ leasejournal {shown}")));
}

/// The table's case `name`.
fn case(name: &str) -> Case {
    cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no golden case {name}"))
}

/// Runs the table's case `name` and asserts that it is still its golden
/// file: for a test whose scenario is a case of the table.
pub fn assert_case(name: &str) {
    let case = case(name);
    let (ran, files) = case.run(&[]);
    assert!(files.is_none(), "{name}: a case on a copy");
    if let Err(report) = compare(name, &ran.render(&case.command_line(&[]))) {
        panic!("{report}\n(LEASEJOURNAL_BLESS=1 cargo test --test cli golden rewrites it)");
    }
}

/// Runs the table's case `name` on `path` instead of its fixture (a copy
/// of it, say) and asserts that it prints what the golden file says, with
/// `path` shown as the fixture's.
pub fn assert_case_at(name: &str, path: &Path) {
    let mut case = case(name);
    assert!(case.copy.is_none(), "{name}: a case on a copy");
    let fixture = case.args.pop().expect("a path");
    let mut cmd = lj();
    cmd.env("COLUMNS", "100")
        .env("NO_COLOR", "1")
        .args(&case.args)
        .arg(path)
        .current_dir(root().join(case.cwd));
    let ran = run(&mut cmd, None).replace(&path.display().to_string(), &fixture);
    case.args.push(fixture);
    if let Err(report) = compare(name, &ran.render(&case.command_line(&[]))) {
        panic!("{report}\n(run on {})", path.display());
    }
}

// ---- one run ------------------------------------------------------------------

/// What one command did, with temporary paths and run stamps replaced.
#[derive(Debug)]
pub struct Ran {
    /// The exit status (`None`: killed by a signal).
    pub code: Option<i32>,
    /// All of standard output.
    pub stdout: String,
    /// All of standard error.
    pub stderr: String,
}

impl Ran {
    /// The same with `from` replaced by `to` in both streams (a pid).
    pub fn replace(self, from: &str, to: &str) -> Ran {
        Ran {
            code: self.code,
            stdout: self.stdout.replace(from, to),
            stderr: self.stderr.replace(from, to),
        }
    }

    /// The golden text: the command line, the exit status, then each
    /// stream whole (a stream that does not end with a newline says so).
    pub fn render(&self, command_line: &str) -> String {
        let stream = |text: &str| {
            if text.is_empty() || text.ends_with('\n') {
                text.to_string()
            } else {
                format!("{text}\n\\ no newline at end\n")
            }
        };
        let code = self
            .code
            .map_or("killed by a signal".to_string(), |c| c.to_string());
        format!(
            "{command_line}\nexit: {code}\n--- stdout\n{}--- stderr\n{}",
            stream(&self.stdout),
            stream(&self.stderr)
        )
    }
}

/// The backup and export stamps (`%Y%m%dT%H%M%SZ`, UTC) a run started at
/// `started` and ended at `ended` may have used.
fn stamps(started: SystemTime, ended: SystemTime) -> Vec<String> {
    let secs = |t: SystemTime| {
        t.duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    };
    (secs(started)..=secs(ended))
        .map(|s| {
            jiff::Timestamp::from_second(s)
                .expect("a time")
                .strftime("%Y%m%dT%H%M%SZ")
                .to_string()
        })
        .collect()
}

/// `text` with the backup and export stamps of a run that started at
/// `started` (and has ended) replaced by `$TIME`.
pub fn without_stamps(text: &str, started: SystemTime) -> String {
    normalized(text.as_bytes(), None, &stamps(started, SystemTime::now()))
}

/// Replaces `dir` (as given and canonical) with `$DIR` and the stamps
/// with `$TIME`.
fn normalized(text: &[u8], dir: Option<&Path>, stamps: &[String]) -> String {
    let mut text = String::from_utf8_lossy(text).into_owned();
    if let Some(dir) = dir {
        let mut forms = vec![dir.display().to_string()];
        if let Ok(canonical) = dir.canonicalize() {
            forms.push(canonical.display().to_string());
        }
        for form in forms {
            text = text.replace(&form, "$DIR");
        }
    }
    for stamp in stamps {
        text = text.replace(stamp.as_str(), "$TIME");
    }
    // The checkout, where the cases run (a relative seed path is looked up
    // from it), is wherever the repository was cloned.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    text = text.replace(&repo.display().to_string(), "$REPO");
    if let Ok(canonical) = repo.canonicalize() {
        text = text.replace(&canonical.display().to_string(), "$REPO");
    }
    text
}

/// Runs `cmd` and returns what it did, with `dir` shown as `$DIR` and the
/// run's backup and export stamps as `$TIME`.
pub fn run(cmd: &mut assert_cmd::Command, dir: Option<&Path>) -> Ran {
    let started = SystemTime::now();
    let out = cmd.output().expect("run leasejournal");
    let stamps = stamps(started, SystemTime::now());
    Ran {
        code: out.status.code(),
        stdout: normalized(&out.stdout, dir, &stamps),
        stderr: normalized(&out.stderr, dir, &stamps),
    }
}

// ---- the table ------------------------------------------------------------------

/// One command line on one fixture.
#[derive(Clone, Debug)]
struct Case {
    /// The golden file's name, without `.txt`.
    name: String,
    /// The arguments after `leasejournal`.
    args: Vec<String>,
    /// Where it runs, relative to the crate root.
    cwd: &'static str,
    /// Runs on a copy of this path (relative to `cwd`) in a temporary
    /// directory, where the copy keeps its name; its last argument names it.
    copy: Option<&'static str>,
}

impl Case {
    fn new(name: impl Into<String>, args: &[&str]) -> Case {
        Case {
            name: name.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: ".",
            copy: None,
        }
    }

    fn in_dir(mut self, cwd: &'static str) -> Case {
        self.cwd = cwd;
        self
    }

    /// Runs on a copy of `source`, named by its last component.
    fn on_copy(mut self, source: &'static str) -> Case {
        self.copy = Some(source);
        let name = Path::new(source).file_name().expect("a file name");
        self.args.push(name.to_string_lossy().into_owned());
        self
    }

    /// The command line as the golden file shows it.
    fn command_line(&self, extra: &[&str]) -> String {
        let mut line = String::new();
        if let Some(source) = self.copy {
            let shown = Path::new(self.cwd).join(source);
            let _ = writeln!(line, "# in $DIR, which holds a copy of {}", shown.display());
        } else if self.cwd != "." {
            let _ = writeln!(line, "# in {}", self.cwd);
        }
        line.push_str("$ leasejournal");
        let (command, rest) = self.args.split_first().expect("arguments");
        let args = std::iter::once(command.as_str())
            .chain(extra.iter().copied())
            .chain(rest.iter().map(String::as_str));
        for arg in args {
            line.push(' ');
            line.push_str(arg);
        }
        line
    }

    /// Runs the case with `extra` arguments right after the subcommand
    /// (`--format json`). Returns what it did and, for a copy, the files
    /// the copy's directory then holds (name, size, SHA-256 prefix).
    fn run(&self, extra: &[&str]) -> (Ran, Option<String>) {
        let mut cmd = lj();
        cmd.env("COLUMNS", "100").env("NO_COLOR", "1");
        let (command, rest) = self.args.split_first().expect("arguments");
        cmd.arg(command).args(extra).args(rest);
        let Some(source) = self.copy else {
            cmd.current_dir(root().join(self.cwd));
            return (run(&mut cmd, None), None);
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let source = root().join(self.cwd).join(source);
        let copy = dir.path().join(source.file_name().expect("a name"));
        if source.is_dir() {
            std::fs::create_dir(&copy).expect("mkdir");
            for entry in std::fs::read_dir(&source).expect("read the fixture") {
                let entry = entry.expect("entry");
                std::fs::copy(entry.path(), copy.join(entry.file_name())).expect("copy");
            }
        } else {
            std::fs::copy(&source, &copy).expect("copy");
        }
        cmd.current_dir(dir.path());
        let started = SystemTime::now();
        let ran = run(&mut cmd, Some(dir.path()));
        let stamps = stamps(started, SystemTime::now());
        (ran, Some(listing(dir.path(), &stamps)))
    }
}

/// The files under `dir`, one a line: path, size and the first 16 hex
/// digits of their SHA-256.
fn listing(dir: &Path, stamps: &[String]) -> String {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read the copy") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read a file");
                let name = path
                    .strip_prefix(dir)
                    .expect("inside")
                    .display()
                    .to_string();
                let digest = Sha256::digest(&bytes);
                let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
                files.push(format!(
                    "{}  {} bytes  sha256 {hex}",
                    normalized(name.as_bytes(), None, stamps),
                    bytes.len()
                ));
            }
        }
    }
    files.sort();
    files.join("\n") + "\n"
}

/// Journals under fixtures/verify/<code>/ (the fixture of each journal
/// finding), by code.
const VERIFY_JOURNALS: &[&str] = &[
    "bad-id",
    "blank-line",
    "bom",
    "clock-regression",
    "corrupt-line",
    "double-lease",
    "duplicate-member",
    "expired-lease",
    "future-lease",
    "glued-record",
    "invalid-utf8",
    "lease-after-done",
    "legacy-clock-lease",
    "lenient-field",
    "non-canonical-encoding",
    "non-finite-number",
    "not-a-journal",
    "not-an-object",
    "orphan-done",
    "orphan-reclaim",
    "payload-id-mismatch",
    "rejected-field",
    "requeued-twice",
    "seed-missing",
    "torn-tail",
    "unknown-field",
    "unknown-op",
    "unterminated-tail",
    "zero-filled-tail",
];

/// Snapshots under fixtures/verify/<code>/state.json.
const VERIFY_SNAPSHOTS: &[&str] = &[
    "snapshot-corrupt",
    "snapshot-dropped-entry",
    "snapshot-duplicate-member",
    "snapshot-inherited-lease",
    "snapshot-lease-without-stats",
    "snapshot-legacy-clock",
    "snapshot-non-finite",
];

/// The fixtures/verify/<code>/ that are state directories.
const VERIFY_DIRECTORIES: &[&str] = &[
    "deferred-done",
    "leasejournal-backups",
    "live-master",
    "missing-journal",
    "stale-temp-file",
];

/// What every journal and state directory goes through: the reading
/// commands and the dry runs of the writing ones.
const JOURNAL_COMMANDS: &[(&str, &[&str])] = &[
    ("inspect", &["inspect", "--now", NOW]),
    ("verify", &["verify", "--now", NOW]),
    ("verify-strict", &["verify", "--strict", "--now", NOW]),
    ("recover", &["recover", "--now", NOW]),
    ("discard", &["recover", "--discard", "--all", "--now", NOW]),
    ("migrate", &["migrate", "--now", NOW]),
    ("rewrite", &["migrate", "--rewrite", "--now", NOW]),
    ("compact", &["compact"]),
    ("compact-drop", &["compact", "--drop-completed"]),
    ("repair", &["repair"]),
];

/// What every snapshot goes through.
const SNAPSHOT_COMMANDS: &[(&str, &[&str])] = &[
    ("inspect", &["inspect", "--now", NOW]),
    ("verify", &["verify", "--now", NOW]),
    ("verify-strict", &["verify", "--strict", "--now", NOW]),
    ("migrate", &["migrate", "--now", NOW]),
];

/// Every code of the catalog, for `explain CODE`.
fn codes() -> Vec<String> {
    let out = lj()
        .args(["explain", "--list", "--format=json"])
        .output()
        .expect("run");
    let catalog: schema::Catalog = schema::parse(&out.stdout);
    catalog.codes.into_iter().map(|c| c.code).collect()
}

/// The table.
fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut readers = |tag: &str, path: &str, cwd: &'static str, commands: &[(&str, &[&str])]| {
        for (command, args) in commands {
            let mut args = args.to_vec();
            args.push(path);
            cases.push(Case::new(format!("{tag}.{command}"), &args).in_dir(cwd));
        }
    };
    readers("runbook-run1", "run1", "fixtures/runbook", JOURNAL_COMMANDS);
    readers("samples", "fixtures/samples", ".", JOURNAL_COMMANDS);
    for name in [
        ".dispatch_protocol_deferred.jsonl",
        ".work_leases.jsonl",
        "legacy_demo.input.jsonl",
        "legacy_demo.jsonl",
        "torn_tail_demo.jsonl",
        "work_leases.before_compaction.jsonl",
    ] {
        let tag = format!("samples-{}", name.trim_start_matches('.'));
        readers(
            &tag,
            &format!("fixtures/samples/{name}"),
            ".",
            JOURNAL_COMMANDS,
        );
    }
    for name in [".state_tasks.json", "state_tasks.pretty.json"] {
        let tag = format!("samples-{}", name.trim_start_matches('.'));
        readers(
            &tag,
            &format!("fixtures/samples/{name}"),
            ".",
            SNAPSHOT_COMMANDS,
        );
    }
    for code in VERIFY_JOURNALS {
        let path = format!("fixtures/verify/{code}/journal.jsonl");
        readers(&format!("verify-{code}"), &path, ".", JOURNAL_COMMANDS);
    }
    for code in VERIFY_SNAPSHOTS {
        let path = format!("fixtures/verify/{code}/state.json");
        readers(&format!("verify-{code}"), &path, ".", SNAPSHOT_COMMANDS);
    }
    for code in VERIFY_DIRECTORIES {
        let path = format!("fixtures/verify/{code}");
        readers(&format!("verify-{code}"), &path, ".", JOURNAL_COMMANDS);
    }
    for name in ["a", "b", "c"] {
        let path = format!("fixtures/diff/{name}.jsonl");
        readers(&format!("diff-{name}"), &path, ".", JOURNAL_COMMANDS);
    }
    for name in ["a", "b"] {
        let path = format!("fixtures/diff/{name}.state.json");
        readers(&format!("diff-{name}-state"), &path, ".", SNAPSHOT_COMMANDS);
    }
    for case in ["j000", "j001", "j002", "w000", "w001"] {
        let path = format!("fixtures/fidelity/{case}/journal.jsonl");
        readers(&format!("fidelity-{case}"), &path, ".", JOURNAL_COMMANDS);
    }
    for case in ["s000", "s005", "s010"] {
        let path = format!("fixtures/fidelity/{case}/state.json");
        readers(&format!("fidelity-{case}"), &path, ".", SNAPSHOT_COMMANDS);
    }

    // inspect's options.
    let j000 = "fixtures/fidelity/j000/journal.jsonl";
    for (name, args) in [
        (
            "samples.inspect-all",
            &["inspect", "--all", "--now", NOW, "fixtures/samples"][..],
        ),
        (
            "samples.inspect-limit",
            &["inspect", "--limit", "1", "--now", NOW, "fixtures/samples"],
        ),
        (
            "samples.inspect-worker",
            &["inspect", "--worker", "6", "--now", NOW, "fixtures/samples"],
        ),
        (
            "fidelity-j000.inspect-worker",
            &["inspect", "--worker", "2", "--now", NOW, j000],
        ),
        (
            "fidelity-j000.inspect-id",
            &["inspect", "--id", "83CE", "--now", NOW, j000],
        ),
        (
            "fidelity-j001.inspect-history",
            &[
                "inspect",
                "--history",
                "2a834ca6",
                "--now",
                NOW,
                "fixtures/fidelity/j001/journal.jsonl",
            ],
        ),
        (
            "samples-torn_tail_demo.jsonl.inspect-history",
            &[
                "inspect",
                "--history",
                "d877ee1d",
                "--now",
                NOW,
                "fixtures/samples/torn_tail_demo.jsonl",
            ],
        ),
        (
            "diff-b.inspect-history",
            &[
                "inspect",
                "--history",
                "c0bb847b",
                "--now",
                NOW,
                "fixtures/diff/b.jsonl",
            ],
        ),
    ] {
        cases.push(Case::new(name, args));
    }

    // verify's options and verdicts.
    for (name, args) in [
        (
            "samples.verify-quiet",
            &["verify", "--quiet", "--now", NOW, "fixtures/samples"][..],
        ),
        (
            "samples.verify-ignore",
            &[
                "verify",
                "--ignore",
                "seed-missing",
                "--now",
                NOW,
                "fixtures/samples",
            ],
        ),
        (
            "samples.verify-quiet-ignore",
            &[
                "verify",
                "--quiet",
                "--ignore",
                "seed-missing",
                "--now",
                NOW,
                "fixtures/samples",
            ],
        ),
        (
            "verify-torn-tail.verify-quiet",
            &[
                "verify",
                "--quiet",
                "--now",
                NOW,
                "fixtures/verify/torn-tail/journal.jsonl",
            ],
        ),
        (
            "verify-expired-lease.verify-ttl",
            &[
                "verify",
                "--ttl",
                "30",
                "--ignore",
                "seed-missing",
                "--now",
                NOW,
                "fixtures/verify/expired-lease/journal.jsonl",
            ],
        ),
        (
            "fidelity-j000.verify-max-examples",
            &[
                "verify",
                "--max-examples",
                "2",
                "--ignore",
                "seed-missing",
                "--now",
                NOW,
                j000,
            ],
        ),
        (
            "verify.several-paths",
            &[
                "verify",
                "--now",
                NOW,
                "fixtures/samples",
                "fixtures/verify/glued-record/journal.jsonl",
                "/nonexistent/state",
            ],
        ),
    ] {
        cases.push(Case::new(name, args));
    }

    // explain: the catalog, and every code.
    cases.push(Case::new("explain.list", &["explain", "--list"]));
    cases.push(Case::new("explain", &["explain"]));
    for code in codes() {
        cases.push(Case::new(format!("explain.{code}"), &["explain", &code]));
    }

    // What the writing commands refuse to read.
    for (name, args) in [
        (
            "samples-state_tasks.json.recover",
            &["recover", "--now", NOW][..],
        ),
        ("samples-state_tasks.json.repair", &["repair"]),
        ("samples-state_tasks.json.compact", &["compact"]),
        (
            "samples-state_tasks.json.rewrite",
            &["migrate", "--rewrite", "--now", NOW],
        ),
        (
            "samples-state_tasks.json.discard",
            &["recover", "--discard", "--all", "--now", NOW],
        ),
    ] {
        let mut args = args.to_vec();
        args.push("fixtures/samples/.state_tasks.json");
        cases.push(Case::new(name, &args));
    }
    cases.push(Case::new(
        "samples.discard-no-selection",
        &["recover", "--discard", "--now", NOW, "fixtures/samples"],
    ));

    // diff.
    for (name, args) in [
        (
            "diff.journals-appended",
            &["diff", "fixtures/diff/a.jsonl", "fixtures/diff/b.jsonl"][..],
        ),
        (
            "diff.journals-diverged",
            &["diff", "fixtures/diff/a.jsonl", "fixtures/diff/c.jsonl"],
        ),
        (
            "diff.journals-history",
            &[
                "diff",
                "--history",
                "fixtures/diff/a.jsonl",
                "fixtures/diff/b.jsonl",
            ],
        ),
        (
            "diff.journals-identical",
            &["diff", "fixtures/diff/a.jsonl", "fixtures/diff/a.jsonl"],
        ),
        (
            "diff.snapshots",
            &[
                "diff",
                "fixtures/diff/a.state.json",
                "fixtures/diff/b.state.json",
            ],
        ),
        (
            "diff.snapshots-only-added",
            &[
                "diff",
                "--only",
                "added",
                "fixtures/diff/a.state.json",
                "fixtures/diff/b.state.json",
            ],
        ),
        (
            "diff.snapshots-ignore",
            &[
                "diff",
                "--ignore",
                "elapsed",
                "--ignore",
                "last_lease",
                "fixtures/diff/a.state.json",
                "fixtures/diff/b.state.json",
            ],
        ),
        (
            "diff.snapshots-identical",
            &[
                "diff",
                "fixtures/diff/a.state.json",
                "fixtures/diff/a.state.json",
            ],
        ),
        (
            "diff.legacy-snapshots",
            &[
                "diff",
                "fixtures/fidelity/s000/state.json",
                "fixtures/fidelity/s005/state.json",
            ],
        ),
        (
            "diff.state-directories",
            &["diff", "fixtures/samples", "fixtures/runbook/run1"],
        ),
        (
            "diff.not-state-directories",
            &[
                "diff",
                "fixtures/verify/double-lease",
                "fixtures/verify/orphan-done",
            ],
        ),
        (
            "diff.journal-and-snapshot",
            &[
                "diff",
                "fixtures/diff/a.jsonl",
                "fixtures/diff/a.state.json",
            ],
        ),
        (
            "diff.ledgers",
            &[
                "diff",
                "fixtures/diff/ledger/a/.state_shards",
                "fixtures/diff/ledger/b/.state_shards",
            ],
        ),
        (
            "diff.ledgers-of-state-directories",
            &[
                "diff",
                "--state-shards",
                "8",
                "fixtures/diff/ledger/a",
                "fixtures/diff/ledger/b",
            ],
        ),
        (
            "diff.ledgers-max-examples",
            &[
                "diff",
                "--max-examples",
                "2",
                "fixtures/diff/ledger/a/.state_shards",
                "fixtures/diff/ledger/b/.state_shards",
            ],
        ),
        (
            "diff.ledgers-identical",
            &[
                "diff",
                "fixtures/diff/ledger/a/.state_shards",
                "fixtures/diff/ledger/a/.state_shards",
            ],
        ),
        (
            "diff.ledger-files",
            &[
                "diff",
                "fixtures/diff/ledger/a/.state_shards/processed.001.log",
                "fixtures/diff/ledger/b/.state_shards/processed.001.log",
            ],
        ),
        (
            "diff.ledger-and-journal",
            &[
                "diff",
                "fixtures/diff/ledger/a/.state_shards",
                "fixtures/diff/a.jsonl",
            ],
        ),
    ] {
        cases.push(Case::new(name, args));
    }

    // Damaged digest ledgers (fixtures/multimaster), each read at the
    // count upstream's load_recent was run at: a torn tail after a
    // shrink to one shard, uppercase and a NUL run appended to, CRLF, a
    // NUL tail, fewer shards than files, foreign names.
    for (case, shards) in [
        ("l010", "1"),
        ("l025", "8"),
        ("l026", "8"),
        ("l028", "8"),
        ("l009", "4"),
        ("l020", "8"),
    ] {
        let path = format!("fixtures/multimaster/{case}/.state_shards");
        cases.push(Case::new(
            format!("multimaster-{case}.inspect"),
            &["inspect", "--state-shards", shards, &path],
        ));
    }

    // The writing commands, applied to a copy.
    for (tag, source, cwd) in [
        ("runbook-run1", "run1", "fixtures/runbook"),
        ("samples", "fixtures/samples", "."),
    ] {
        for (command, args) in [
            ("apply-repair", &["repair", "--apply"][..]),
            ("apply-compact", &["compact", "--apply"]),
            (
                "apply-compact-drop",
                &["compact", "--apply", "--drop-completed"],
            ),
            ("apply-migrate", &["migrate", "--apply", "--now", NOW]),
            (
                "apply-rewrite",
                &["migrate", "--rewrite", "--apply", "--now", NOW],
            ),
            (
                "apply-discard",
                &["recover", "--discard", "--all", "--apply", "--now", NOW],
            ),
        ] {
            cases.push(
                Case::new(format!("{tag}.{command}"), args)
                    .in_dir(cwd)
                    .on_copy(source),
            );
        }
    }
    for (name, source, args) in [
        (
            "verify-torn-tail.apply-repair",
            "fixtures/verify/torn-tail/journal.jsonl",
            &["repair", "--apply"][..],
        ),
        (
            "verify-glued-record.apply-repair",
            "fixtures/verify/glued-record/journal.jsonl",
            &["repair", "--apply"],
        ),
        (
            "verify-glued-record.apply-compact",
            "fixtures/verify/glued-record/journal.jsonl",
            &["compact", "--apply"],
        ),
        (
            "verify-glued-record.apply-compact-drop-hidden",
            "fixtures/verify/glued-record/journal.jsonl",
            &["compact", "--apply", "--drop-hidden"],
        ),
        (
            "verify-zero-filled-tail.apply-repair",
            "fixtures/verify/zero-filled-tail/journal.jsonl",
            &["repair", "--apply"],
        ),
        (
            "verify-snapshot-legacy-clock.apply-migrate",
            "fixtures/verify/snapshot-legacy-clock/state.json",
            &["migrate", "--apply", "--now", NOW],
        ),
        (
            "samples-legacy_demo.input.jsonl.apply-rewrite",
            "fixtures/samples/legacy_demo.input.jsonl",
            &["migrate", "--rewrite", "--apply", "--now", NOW],
        ),
        (
            "fidelity-j000.apply-compact-drop",
            "fixtures/fidelity/j000/journal.jsonl",
            &["compact", "--apply", "--drop-completed", "--drop-hidden"],
        ),
        (
            "fidelity-j000.apply-discard-worker",
            "fixtures/fidelity/j000/journal.jsonl",
            &[
                "recover",
                "--discard",
                "--worker",
                "2",
                "--apply",
                "--now",
                NOW,
            ],
        ),
    ] {
        cases.push(Case::new(name, args).on_copy(source));
    }
    cases
}

/// Every golden file is written by a case of the table or named by a
/// test (`test.*`, whose name must appear in some tests/cli source).
fn orphans(cases: &[Case]) -> Vec<PathBuf> {
    let sources: String = std::fs::read_dir(root().join("tests/cli"))
        .expect("tests/cli")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).unwrap_or_default())
        .collect();
    let names: std::collections::BTreeSet<String> =
        cases.iter().map(|c| format!("{}.txt", c.name)).collect();
    let mut orphans = Vec::new();
    for entry in std::fs::read_dir(golden_dir()).expect("fixtures/golden") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let used = match name.strip_prefix("test.") {
            Some(_) => sources.contains(&format!("\"{}\"", name.trim_end_matches(".txt"))),
            None => names.contains(&name),
        };
        if !used {
            orphans.push(path);
        }
    }
    orphans
}

#[test]
fn golden_human_output_of_every_command() {
    let cases = cases();
    let names: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), cases.len(), "case names are unique");
    let mut failures = Vec::new();
    for case in &cases {
        let (ran, files) = case.run(&[]);
        let mut text = ran.render(&case.command_line(&[]));
        if let Some(files) = files {
            text.push_str("--- files after\n");
            text.push_str(&files);
        }
        if let Err(report) = compare(&case.name, &text) {
            failures.push(report);
        }
    }
    let orphans = orphans(&cases);
    if blessing() {
        for orphan in &orphans {
            std::fs::remove_file(orphan).expect("remove a stale golden file");
        }
        return;
    }
    for orphan in orphans {
        failures.push(format!("{}: no case or test writes it", orphan.display()));
    }
    assert!(
        failures.is_empty(),
        "{} of {} golden files differ (LEASEJOURNAL_BLESS=1 cargo test --test cli golden rewrites them; review the diff):\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Which typed struct a command's JSON report goes into.
fn check_json(args: &[String], ran: &Ran) -> Result<(), String> {
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let json = ran.stdout.as_bytes();
    let parse = |what: &str, f: &dyn Fn() -> Result<(), serde_json::Error>| {
        f().map_err(|e| format!("not a {what} report: {e}"))
    };
    match args[0].as_str() {
        "inspect" => parse("inspect", &|| {
            serde_json::from_slice::<schema::Inspect>(json).map(drop)
        }),
        "verify" => parse("verify", &|| {
            let report: schema::Verify = serde_json::from_slice(json)?;
            assert_eq!(
                Some(report.exit_code),
                ran.code,
                "exit_code is the exit status"
            );
            Ok(())
        }),
        "explain" if has("--list") || args.len() == 1 => parse("catalog", &|| {
            serde_json::from_slice::<schema::Catalog>(json).map(drop)
        }),
        "explain" => parse("explain", &|| {
            serde_json::from_slice::<schema::Explain>(json).map(drop)
        }),
        "recover" if has("--discard") => parse("discard", &|| {
            serde_json::from_slice::<schema::Discard>(json).map(drop)
        }),
        "recover" => parse("forecast", &|| {
            let report: schema::Forecast = serde_json::from_slice(json)?;
            report.check();
            Ok(())
        }),
        "repair" => parse("repair", &|| {
            serde_json::from_slice::<schema::Repair>(json).map(drop)
        }),
        "migrate" => parse("migrate", &|| {
            serde_json::from_slice::<schema::Migrate>(json).map(drop)
        }),
        "compact" => parse("compact", &|| {
            serde_json::from_slice::<schema::Compact>(json).map(drop)
        }),
        "diff" => parse("diff", &|| {
            serde_json::from_slice::<schema::Diff>(json).map(drop)
        }),
        other => Err(format!("no schema for {other}")),
    }
}

/// The table again with `--format json`: each report is read into its
/// typed struct (any member added, removed or renamed fails), and the exit
/// status is the table run's.
#[test]
fn json_of_every_command_fits_its_schema() {
    let mut failures = Vec::new();
    let mut parsed = 0;
    for case in cases() {
        let (table, _) = case.run(&[]);
        let (ran, _) = case.run(&["--format", "json"]);
        let line = case.command_line(&["--format", "json"]);
        if ran.code != table.code {
            failures.push(format!(
                "{line}: exit {:?}, as a table {:?}",
                ran.code, table.code
            ));
            continue;
        }
        // A run that fails before it has a report prints none; so does
        // verify --quiet.
        if ran.stdout.is_empty()
            && (ran.code == Some(2) || case.args.iter().any(|a| a == "--quiet"))
        {
            continue;
        }
        match check_json(&case.args, &ran) {
            Ok(()) => parsed += 1,
            Err(e) => failures.push(format!("{line}: {e}\n{}", ran.stdout)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // Every report the table makes but the refusals and --quiet.
    assert_eq!(parsed, 678);
}
