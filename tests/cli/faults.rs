//! Fault injection: every system call the writing commands make on files,
//! threads and output is made to fail, one call at a time, with
//! `strace --inject`, and whatever the command then does must keep the
//! contract of its exit status:
//!
//! 1. never a panic, a signal or a hang;
//! 2. exit 0: the result is byte for byte a clean run's, stdout is whole
//!    JSON, no temporary file is left;
//! 3. exit 2, nothing was changed: the target is the original, an
//!    `--output` file does not exist, no temporary file and nothing else
//!    new is left in the directory (a backup or an export that stderr names
//!    may stay: removing it may be what failed), and stderr is one
//!    `leasejournal: ` line that does not claim success;
//! 4. exit 4, the change was made and a later step failed: stderr names the
//!    file, which is the original, the clean result or (appends) the
//!    original with its tail sealed, no temporary file is left, and the
//!    same command run again without a fault exits 0 with the clean result;
//! 5. exit 5, the job was done but a stale temporary file of an earlier run
//!    stays (it could not be listed, examined or removed): the result is a
//!    clean run's, stdout is whole JSON, no temporary file of this run is
//!    left, and stderr names every temporary file that stays, or the
//!    directory it could not list;
//! 6. no other exit status.
//!
//! A stale temporary file of an earlier run, there before the run, may
//! stay after an exit 2 or 4 (the run failed before it cleaned up); after
//! an exit 0 none may.
//!
//! `--output` must leave its source as it is, whatever the outcome.
//!
//! Which calls, at which indices: one clean run of each command is traced
//! (`strace -f`), and every call it makes, except memory, scheduling,
//! signal and process bookkeeping ([`NOT_INJECTED`]), is failed at every
//! index N (`when=N`) with EIO, and also with ENOSPC for the calls that
//! write ([`ENOSPC_TOO`]). strace counts calls per syscall and per thread.
//! The calls the main thread makes before `main` (the dynamic loader's and
//! Rust's runtime start-up: the start a run shares with
//! `leasejournal --version`) are not injected, since a failure there is
//! not the command's. Another thread's calls at those low indices can only
//! fail together with the loader's, so every call other threads make (the
//! re-read check's reads) is also failed in a second pass that counts only
//! the calls on the test's own files (`strace -P`, naming the temporary
//! file, whose name carries the pid: `strace -D` keeps the pid of the shell
//! that starts it). Calls no pass reaches are listed in the summary.
//!
//! The runs go two at a time; the summary on stderr gives the runs and the
//! time per command, and every violation grouped by rule, command and
//! call. When strace is missing or cannot trace (no ptrace), the test says
//! so on stderr and passes.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::schema;
use crate::support::fixture;

/// Whether `stdout` is one whole JSON report of the writing command that
/// `args` start, read into its typed struct.
fn whole_report(args: &[&str], stdout: &[u8]) -> bool {
    match args[0] {
        "repair" => serde_json::from_slice::<schema::Repair>(stdout).is_ok(),
        "compact" => serde_json::from_slice::<schema::Compact>(stdout).is_ok(),
        "migrate" => serde_json::from_slice::<schema::Migrate>(stdout).is_ok(),
        "recover" if args.contains(&"--discard") => {
            serde_json::from_slice::<schema::Discard>(stdout).is_ok()
        }
        other => panic!("not a writing command: {other}"),
    }
}

fn bin() -> &'static Path {
    assert_cmd::cargo::cargo_bin!("leasejournal")
}

/// Calls never injected: memory, scheduling, signals (`rt_sig*` too),
/// process and thread bookkeeping. The loader's calls are left out by
/// index (see the module comment), not by name.
const NOT_INJECTED: &[&str] = &[
    "futex",
    "mmap",
    "munmap",
    "mprotect",
    "madvise",
    "brk",
    "sched_yield",
    "sigaltstack",
    "rseq",
    "set_robust_list",
    "gettid",
    "getpid",
    "getrandom",
    "execve",
    "exit",
    "exit_group",
];

/// Calls the test must inject wherever a command makes them; the summary
/// names those no command made.
const EXPECTED: &[&str] = &[
    "openat",
    "read",
    "pread64",
    "write",
    "pwrite64",
    "fsync",
    "fdatasync",
    "ftruncate",
    "rename",
    "renameat",
    "renameat2",
    "unlink",
    "unlinkat",
    "linkat",
    "statx",
    "newfstatat",
    "fstat",
    "lseek",
    "close",
    "getdents64",
    "flock",
    "fchown",
    "fchmod",
    "chmod",
    "copy_file_range",
    "sendfile",
    "fcntl",
    "clone3",
];

/// Calls failed with ENOSPC as well as EIO.
const ENOSPC_TOO: &[&str] = &["write", "pwrite64", "copy_file_range", "fsync"];

/// A run that takes longer than this is killed and counted as a hang.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The `--output` file, next to the source.
const OUTPUT: &str = "result.out";

/// The master's lock, made beforehand so that no run creates it.
const LOCK: &str = ".master-queue.lock";

/// The clock of `recover` and `migrate`, so that every run writes the same
/// reclaim records.
const NOW: &str = "--now=1754560000";

/// Violations shown in full in the failure message.
const SHOWN: usize = 30;

// ---- the commands ------------------------------------------------------------

/// How an append seals the end of the file before it appends.
#[derive(Clone, Copy, Debug)]
enum Seal {
    /// The file ends with a newline: nothing to seal.
    Clean,
    /// A torn last line is cut off.
    Cut,
    /// A complete last record gets its newline.
    Newline,
}

impl Seal {
    /// What sealing alone makes of `original`.
    fn apply(self, original: &[u8]) -> Vec<u8> {
        match self {
            Seal::Clean => original.to_vec(),
            Seal::Cut => {
                let end = original
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                original[..end].to_vec()
            }
            Seal::Newline => [original, b"\n"].concat(),
        }
    }
}

/// A writing command on a small state directory.
#[derive(Clone)]
struct Case {
    name: String,
    /// The directory's files before the run (the master's lock is added).
    files: Vec<(&'static str, Vec<u8>)>,
    /// The subcommand and its options, without `--apply`/`--output`.
    args: Vec<&'static str>,
    /// The PATH argument: one of `files`, or the directory itself.
    path: Option<&'static str>,
    /// The files changed in place, each with the seal of its append
    /// (`None`: replaced whole).
    changes: Vec<(&'static str, Option<Seal>)>,
    /// `--output` instead of `--apply`.
    output: bool,
}

impl Case {
    /// A command on the one file of its directory.
    fn single(
        name: &str,
        args: &[&'static str],
        file: &'static str,
        bytes: Vec<u8>,
        seal: Option<Seal>,
    ) -> Case {
        Case {
            name: name.to_string(),
            files: vec![(file, bytes)],
            args: args.to_vec(),
            path: Some(file),
            changes: vec![(file, seal)],
            output: false,
        }
    }

    /// The same command with `--output`.
    fn to_output(&self) -> Case {
        Case {
            name: format!("{} --output", self.name),
            output: true,
            ..self.clone()
        }
    }

    /// The command line after the binary, on the copy in `dir`.
    fn command_line(&self, dir: &Path) -> Vec<OsString> {
        let mut line: Vec<OsString> = self.args.iter().map(OsString::from).collect();
        line.extend(["--format".into(), "json".into()]);
        if self.output {
            line.extend(["--output".into(), dir.join(OUTPUT).into()]);
        } else {
            line.push("--apply".into());
        }
        line.push(match self.path {
            Some(file) => dir.join(file).into(),
            None => dir.into(),
        });
        line
    }

    /// The test's own files in `dir` for `strace -P`, and those whose
    /// temporary file it names too.
    fn own_files(&self, dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let mut written: Vec<PathBuf> = self.files.iter().map(|(n, _)| dir.join(n)).collect();
        if self.output {
            written.push(dir.join(OUTPUT));
        }
        let mut paths = vec![dir.to_path_buf(), dir.join(LOCK)];
        paths.extend(written.iter().cloned());
        (paths, written)
    }
}

/// The commands, each on the smallest input that takes the path it is
/// meant to take, then each file command again with `--output` (which
/// takes a single file).
fn cases() -> Vec<Case> {
    let read = |rel: &str| fs::read(fixture(rel)).expect("fixture");
    let journal = ".work_leases.jsonl";
    let torn = read("verify/torn-tail/journal.jsonl");
    let glued = read("samples/torn_tail_demo.jsonl");
    let uncompacted = read("samples/work_leases.before_compaction.jsonl");
    let discard = ["recover", "--discard", "--all", NOW];
    let mut cases = vec![
        Case::single(
            "repair (cut a torn tail)",
            &["repair"],
            journal,
            torn.clone(),
            Some(Seal::Cut),
        ),
        Case::single(
            "repair (split a glued record)",
            &["repair"],
            journal,
            glued.clone(),
            None,
        ),
        Case::single(
            "repair (terminate the last record)",
            &["repair"],
            journal,
            read("verify/unterminated-tail/journal.jsonl"),
            Some(Seal::Newline),
        ),
        Case::single(
            "recover --discard",
            &discard,
            journal,
            read("samples/.work_leases.jsonl"),
            Some(Seal::Clean),
        ),
        Case::single(
            "recover --discard (torn tail)",
            &discard,
            journal,
            torn.clone(),
            Some(Seal::Cut),
        ),
        Case::single("compact", &["compact"], journal, uncompacted.clone(), None),
        Case::single(
            "compact (already compact)",
            &["compact"],
            journal,
            compacted(&uncompacted),
            None,
        ),
        Case::single(
            "migrate --rewrite",
            &["migrate", "--rewrite", NOW],
            journal,
            read("samples/legacy_demo.input.jsonl"),
            None,
        ),
        Case::single(
            "repair (seal a ledger file)",
            &["repair"],
            LEDGER,
            ledger_file(b"\0\0\0\0"),
            None,
        ),
        Case::single(
            "compact (a ledger file)",
            &["compact"],
            LEDGER,
            ledger_file(b"junk\n"),
            None,
        ),
        Case::single(
            "migrate (snapshot)",
            &["migrate", NOW],
            ".state_tasks.json",
            read("fidelity/s000/state.json"),
            None,
        ),
    ];
    let with_output: Vec<Case> = cases.iter().map(Case::to_output).collect();
    // Both journals need repair; the deferred one goes first (resume
    // order), so a fault in the second comes after the first was changed.
    let deferred = ".dispatch_protocol_deferred.jsonl";
    cases.push(Case {
        name: "repair DIR (both journals)".into(),
        files: vec![(deferred, torn), (journal, glued)],
        args: vec!["repair"],
        path: None,
        changes: vec![(deferred, Some(Seal::Cut)), (journal, None)],
        output: false,
    });
    cases.extend(with_output);
    // An earlier run's temporary file, removed under the lock before the
    // change.
    cases.push(Case {
        name: "repair (a stale temporary file beside it)".into(),
        files: vec![
            (journal, read("verify/torn-tail/journal.jsonl")),
            (STALE, b"junk".to_vec()),
        ],
        args: vec!["repair"],
        path: Some(journal),
        changes: vec![(journal, Some(Seal::Cut))],
        output: false,
    });
    cases
}

/// A digest ledger's file, changed on its own (its directory's lock is
/// its own directory's, not being `.state_shards`).
const LEDGER: &str = "processed.000.log";

/// A ledger file of three digests, one twice, then `end`.
fn ledger_file(end: &[u8]) -> Vec<u8> {
    let digest = |n: u32| format!("{n:08x}{}\n", "c4".repeat(28));
    [digest(0), digest(4), digest(0), digest(8)]
        .concat()
        .into_bytes()
        .into_iter()
        .chain(end.iter().copied())
        .collect()
}

/// A temporary file an earlier, killed run of this tool left.
const STALE: &str = ".work_leases.jsonl.leasejournal.4242.tmp";

/// `compact`'s result for `journal`: an input that is already compact.
fn compacted(journal: &[u8]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(".work_leases.jsonl");
    let out = dir.path().join("compacted.jsonl");
    fs::write(&path, journal).expect("write");
    let status = Command::new(bin())
        .arg("compact")
        .arg("--output")
        .arg(&out)
        .arg(&path)
        .stdout(Stdio::null())
        .status()
        .expect("run compact");
    assert!(status.success(), "compact --output failed");
    fs::read(&out).expect("compacted journal")
}

/// A fresh copy of a case's directory, and a scratch directory beside it
/// for traces and output.
struct Staged {
    _home: tempfile::TempDir,
    /// The case's directory (canonical, as `strace -P` resolves paths).
    dir: PathBuf,
    scratch: PathBuf,
}

impl Staged {
    fn new(case: &Case) -> Staged {
        let home = tempfile::tempdir().expect("tempdir");
        let root = fs::canonicalize(home.path()).expect("canonical tempdir");
        let (dir, scratch) = (root.join("case"), root.join("scratch"));
        fs::create_dir(&dir).expect("case dir");
        fs::create_dir(&scratch).expect("scratch dir");
        for (name, bytes) in &case.files {
            fs::write(dir.join(name), bytes).expect("stage a file");
        }
        fs::write(dir.join(LOCK), b"").expect("stage the lock");
        Staged {
            _home: home,
            dir,
            scratch,
        }
    }
}

// ---- running under strace ----------------------------------------------------

/// Starts strace with `-D`, so that the binary keeps this shell's pid, and
/// adds `-P` for the temporary file of each path in `$LJ_TEMPS`, since its
/// name carries that pid.
const LAUNCH: &str = concat!(
    r#"for p in $LJ_TEMPS; do set -- -P "$p.leasejournal.$$.tmp" "$@"; done; "#,
    r#"unset LJ_TEMPS; exec strace -D "$@""#,
);

/// strace as it runs on this machine.
struct Strace {
    /// `--seccomp-bpf` works: only the traced calls stop the tracee.
    seccomp: bool,
}

impl Strace {
    /// Whether strace is here and may trace; why not otherwise.
    fn probe() -> Result<Strace, String> {
        let probe = |extra: &[&str]| {
            Command::new("strace")
                .args(["-D", "-f", "-qq", "-o", "/dev/null", "-e", "trace=close"])
                .args(extra)
                .args(["--", "true"])
                .output()
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => "strace not found".to_string(),
                    _ => format!("strace cannot be started ({e})"),
                })
        };
        let quiet = |out: &std::process::Output| out.status.success() && out.stderr.is_empty();
        if quiet(&probe(&["--seccomp-bpf"])?) {
            return Ok(Strace { seccomp: true });
        }
        let plain = probe(&[])?;
        if quiet(&plain) {
            return Ok(Strace { seccomp: false });
        }
        let why = String::from_utf8_lossy(&plain.stderr);
        Err(format!(
            "strace cannot trace here ({})",
            why.lines().next().unwrap_or("no message")
        ))
    }

    /// The binary with `line` under strace with `opts`, watching the
    /// temporary files of `temps` too (see [`LAUNCH`]).
    fn command(opts: &[OsString], temps: &[PathBuf], line: &[OsString]) -> Command {
        let temps: Vec<String> = temps.iter().map(|p| p.display().to_string()).collect();
        assert!(
            temps.iter().all(|t| !t.contains(char::is_whitespace)),
            "LAUNCH splits on spaces: {temps:?}"
        );
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(LAUNCH)
            .arg("sh")
            .args(opts)
            .arg("--")
            .arg(bin())
            .args(line)
            .env("LJ_TEMPS", temps.join(" "));
        cmd
    }

    /// Runs `case` on `staged` under strace with `extra` options, the
    /// trace going to `output`; with `own_files`, only the calls on the
    /// test's own files are traced (and counted).
    fn run_case(
        case: &Case,
        staged: &Staged,
        output: &Path,
        extra: Vec<OsString>,
        own_files: bool,
    ) -> Ran {
        let mut opts: Vec<OsString> = vec!["-f".into(), "-qq".into(), "-o".into(), output.into()];
        opts.extend(extra);
        let (paths, temps) = case.own_files(&staged.dir);
        let temps = if own_files {
            for path in paths {
                opts.extend(["-P".into(), path.into()]);
            }
            temps
        } else {
            Vec::new()
        };
        let line = case.command_line(&staged.dir);
        run(&mut Strace::command(&opts, &temps, &line), &staged.scratch)
    }

    /// Traces a clean run of `case` on `staged` (every call, or with
    /// `own_files` only those on the test's own files) and returns its
    /// calls per thread.
    fn trace(case: &Case, staged: &Staged, own_files: bool) -> Vec<Vec<String>> {
        let file = staged.scratch.join("trace");
        let ran = Strace::run_case(case, staged, &file, Vec::new(), own_files);
        assert_eq!(
            ran.code(),
            Some(0),
            "{}: a clean run fails: {}",
            case.name,
            ran.stderr
        );
        calls_per_thread(&fs::read_to_string(&file).expect("the trace"))
    }

    /// `leasejournal --version`'s main thread, traced: the start every run
    /// shares.
    fn startup() -> Vec<String> {
        let scratch = tempfile::tempdir().expect("tempdir");
        let file = scratch.path().join("trace");
        let opts: Vec<OsString> = vec!["-f".into(), "-qq".into(), "-o".into(), file.clone().into()];
        let ran = run(
            &mut Strace::command(&opts, &[], &["--version".into()]),
            scratch.path(),
        );
        assert_eq!(ran.code(), Some(0), "{}", ran.stderr);
        let mut threads = calls_per_thread(&fs::read_to_string(&file).expect("the trace"));
        threads.swap_remove(0)
    }

    /// Runs `case` on `staged` with `fault`.
    fn inject(&self, case: &Case, staged: &Staged, fault: &Fault) -> Ran {
        let call = &fault.call;
        let mut extra: Vec<OsString> = Vec::new();
        if self.seccomp {
            extra.push("--seccomp-bpf".into());
        }
        extra.extend([
            "-e".into(),
            format!("trace={call}").into(),
            "-e".into(),
            format!("inject={call}:error={}:when={}", fault.errno, fault.n).into(),
        ]);
        let output = Path::new("/dev/null");
        Strace::run_case(case, staged, output, extra, fault.own_files)
    }
}

/// How a run ended.
struct Ran {
    /// `None`: killed after [`TIMEOUT`].
    status: Option<ExitStatus>,
    stdout: Vec<u8>,
    stderr: String,
}

impl Ran {
    fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    fn exit(&self) -> String {
        match self.status {
            None => "hang".into(),
            Some(s) => match (s.code(), s.signal()) {
                (Some(code), _) => format!("exit {code}"),
                (None, Some(signal)) => format!("signal {signal}"),
                (None, None) => s.to_string(),
            },
        }
    }

    fn first_line(&self) -> &str {
        self.stderr.lines().next().unwrap_or("")
    }

    /// The message of a panic: the line after "panicked at".
    fn panic_message(&self) -> Option<&str> {
        let mut lines = self.stderr.lines();
        lines.find(|l| l.contains("panicked at"))?;
        Some(lines.next().unwrap_or(""))
    }
}

/// Runs `cmd` with stdout and stderr in files under `scratch`, killing it
/// after [`TIMEOUT`].
fn run(cmd: &mut Command, scratch: &Path) -> Ran {
    let stdout = scratch.join("stdout");
    let stderr = scratch.join("stderr");
    // The binary runs in the environment a shell gives it, without the
    // library path cargo sets for tests (the loader would search it first).
    cmd.env("RUST_BACKTRACE", "0")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LEASEJOURNAL_FAILPOINTS")
        .stdin(Stdio::null())
        .stdout(fs::File::create(&stdout).expect("stdout file"))
        .stderr(fs::File::create(&stderr).expect("stderr file"));
    let mut child = cmd.spawn().expect("start the binary");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    Ran {
        status,
        stdout: fs::read(&stdout).unwrap_or_default(),
        stderr: String::from_utf8_lossy(&fs::read(&stderr).unwrap_or_default()).into_owned(),
    }
}

// ---- which faults ------------------------------------------------------------

/// The calls of a trace written by `strace -f -o`, per thread, in the
/// order threads first appear (the first is the main thread).
fn calls_per_thread(trace: &str) -> Vec<Vec<String>> {
    let mut threads: Vec<(&str, Vec<String>)> = Vec::new();
    for line in trace.lines() {
        let Some((tid, rest)) = line.split_once(' ') else {
            continue;
        };
        // "<... x resumed>" goes on with a call already counted; "---" is
        // a signal, "+++" an exit.
        let Some((name, _)) = rest.trim_start().split_once('(') else {
            continue;
        };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        match threads.iter_mut().find(|(t, _)| *t == tid) {
            Some((_, calls)) => calls.push(name.to_string()),
            None => threads.push((tid, vec![name.to_string()])),
        }
    }
    threads.into_iter().map(|(_, calls)| calls).collect()
}

fn count(calls: &[String]) -> BTreeMap<&str, u32> {
    let mut counts = BTreeMap::new();
    for call in calls {
        *counts.entry(call.as_str()).or_insert(0) += 1;
    }
    counts
}

fn injected(call: &str) -> bool {
    !NOT_INJECTED.contains(&call) && !call.starts_with("rt_sig")
}

fn errnos(call: &str) -> &'static [&'static str] {
    if ENOSPC_TOO.contains(&call) {
        &["EIO", "ENOSPC"]
    } else {
        &["EIO"]
    }
}

/// One fault: the `n`th call of `call` (in each thread) fails with `errno`.
#[derive(Clone)]
struct Fault {
    call: String,
    errno: &'static str,
    n: u32,
    /// Counting only the calls on the test's own files (`strace -P`).
    own_files: bool,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:when={}", self.call, self.errno, self.n)?;
        if self.own_files {
            write!(f, " (own files)")?;
        }
        Ok(())
    }
}

/// The faults for one command, from its clean traces.
#[derive(Default)]
struct Plan {
    faults: Vec<Fault>,
    /// Per call, how many of its calls the faults reach in the whole-run
    /// pass (the main thread's after start-up, all of other threads').
    reached: BTreeMap<String, u32>,
    /// Per call, the calls of other threads that only the loader's indices
    /// reach, and that are not on the test's own files.
    unreached: BTreeMap<String, u32>,
}

impl Plan {
    /// `startup`: the main thread's calls before `main`; `whole`: the
    /// clean run's calls per thread; `own`: those on the test's own files.
    fn new(startup: &[String], whole: &[Vec<String>], own: &[Vec<String>]) -> Plan {
        let main = &whole[0];
        let shared = startup.iter().zip(main).take_while(|(a, b)| a == b).count();
        let skip = count(&main[..shared]);
        let skipped = |call: &str| skip.get(call).copied().unwrap_or(0);
        let most = |threads: &[Vec<String>], call: &str| {
            threads
                .iter()
                .map(|t| count(t).get(call).copied().unwrap_or(0))
                .max()
                .unwrap_or(0)
        };
        let calls: BTreeSet<&str> = whole.iter().flatten().map(String::as_str).collect();
        let mut plan = Plan::default();
        for call in calls.into_iter().filter(|c| injected(c)) {
            let first = skipped(call) + 1;
            let others: Vec<u32> = whole[1..]
                .iter()
                .map(|t| count(t).get(call).copied().unwrap_or(0))
                .collect();
            let in_main = count(main).get(call).copied().unwrap_or(0);
            let reached = in_main.saturating_sub(first - 1) + others.iter().sum::<u32>();
            if reached > 0 {
                plan.reached.insert(call.to_string(), reached);
            }
            plan.add(call, first..=most(whole, call), false);
            if others.iter().all(|&n| n == 0) {
                continue;
            }
            let on_own_files = most(own, call);
            if on_own_files > 0 {
                plan.add(call, 1..=on_own_files, true);
            } else {
                let hidden: u32 = others.iter().map(|&n| n.min(first - 1)).sum();
                if hidden > 0 {
                    plan.unreached.insert(call.to_string(), hidden);
                }
            }
        }
        plan
    }

    fn add(&mut self, call: &str, indices: std::ops::RangeInclusive<u32>, own_files: bool) {
        for errno in errnos(call) {
            self.faults.extend(indices.clone().map(|n| Fault {
                call: call.to_string(),
                errno,
                n,
                own_files,
            }));
        }
    }
}

// ---- judging a run -----------------------------------------------------------

/// A file a run writes, and the states it may be left in.
struct Watched {
    name: &'static str,
    /// `None`: it did not exist (an `--output` file).
    original: Option<Vec<u8>>,
    /// What a clean run leaves.
    clean: Vec<u8>,
    /// For an append: the original with only its tail sealed.
    sealed: Option<Vec<u8>>,
    /// For a torn tail: the result when no lease could be had (a fault in
    /// `fcntl`, or a descriptor a failed `close` left open), the torn line
    /// ended with a newline instead of cut; and that sealing alone.
    ended: Option<(Vec<u8>, Vec<u8>)>,
}

impl Watched {
    /// Whether `got` is the result with the torn line ended, not cut.
    fn ended_result(&self, got: Option<&Vec<u8>>) -> bool {
        self.ended
            .as_ref()
            .is_some_and(|(result, _)| got == Some(result))
    }

    /// Names the state the file is in, for a violation.
    fn describe(&self, got: Option<&Vec<u8>>) -> String {
        let what = match got {
            None => "absent",
            Some(b) if Some(b) == self.original.as_ref() => "the original",
            Some(b) if *b == self.clean => "the clean result",
            Some(b) if Some(b) == self.sealed.as_ref() => "the sealed original",
            Some(b) if self.ended.as_ref().is_some_and(|(r, _)| r == b) => {
                "the result with the torn line ended, not cut"
            }
            Some(b) if self.ended.as_ref().is_some_and(|(_, e)| e == b) => {
                "the original with the torn line ended"
            }
            Some(_) => "something else",
        };
        format!("{}: {what} ({} bytes)", self.name, got.map_or(0, Vec::len))
    }
}

/// A command with what a clean run leaves and the faults to inject.
struct Prepared {
    case: Case,
    watched: Vec<Watched>,
    /// Files no outcome may change (the source of `--output`).
    kept: Vec<(&'static str, Vec<u8>)>,
    plan: Plan,
}

impl Prepared {
    /// Runs `case` cleanly, traced twice (every call, then the calls on its
    /// own files), and plans its faults.
    fn new(case: Case, startup: &[String]) -> Prepared {
        let staged = Staged::new(&case);
        let whole = Strace::trace(&case, &staged, false);
        let read = |name: &str| fs::read(staged.dir.join(name)).expect("a clean result");
        let (watched, kept) = if case.output {
            let watched = vec![Watched {
                name: OUTPUT,
                original: None,
                clean: read(OUTPUT),
                sealed: None,
                ended: None,
            }];
            (watched, case.files.clone())
        } else {
            let watched = case
                .changes
                .iter()
                .map(|&(name, seal)| {
                    let (_, before) = case
                        .files
                        .iter()
                        .find(|(n, _)| *n == name)
                        .expect("a file of the case");
                    let clean = read(name);
                    let sealed = seal.map(|s| s.apply(before));
                    let ended = match (seal, &sealed) {
                        (Some(Seal::Cut), Some(cut)) if clean.starts_with(cut) => {
                            let ended = [before.as_slice(), b"\n"].concat();
                            Some(([ended.as_slice(), &clean[cut.len()..]].concat(), ended))
                        }
                        _ => None,
                    };
                    Watched {
                        name,
                        original: Some(before.clone()),
                        clean,
                        sealed,
                        ended,
                    }
                })
                .collect();
            (watched, Vec::new())
        };
        let own = Strace::trace(&case, &Staged::new(&case), true);
        let plan = Plan::new(startup, &whole, &own);
        Prepared {
            case,
            watched,
            kept,
            plan,
        }
    }

    /// Runs `fault` on a fresh copy and returns the rules the run broke.
    fn check(&self, strace: &Strace, fault: &Fault) -> Vec<Violation> {
        let staged = Staged::new(&self.case);
        let before = names(&staged.dir);
        let ran = strace.inject(&self.case, &staged, fault);
        let detail = ran.panic_message().map(|m| format!("panic: {m}"));
        let mut broken = self.judge(&staged, &before, &ran);
        // A failed read is the source's, never the temporary file's.
        if ["read", "pread64"].contains(&fault.call.as_str())
            && ran.code() == Some(2)
            && ran.stderr.contains(".leasejournal.")
        {
            let rule = "3: exit 2, a read error blamed on the temporary file";
            broken.push((rule, ran.first_line().to_string()));
        }
        // Standard output is named when writing to it fails.
        if ran.stderr.contains("os error") {
            let rule = "3: an error in raw words, naming nothing";
            broken.push((rule, ran.first_line().to_string()));
        }
        broken
            .into_iter()
            .map(|(rule, found)| Violation {
                case: self.case.name.clone(),
                fault: fault.clone(),
                exit: ran.exit(),
                first_line: ran.first_line().to_string(),
                rule,
                detail: detail.clone().unwrap_or(found),
            })
            .collect()
    }

    /// The rules a run broke, each with what was found.
    fn judge(
        &self,
        staged: &Staged,
        before: &BTreeSet<String>,
        ran: &Ran,
    ) -> Vec<(&'static str, String)> {
        let dir = &staged.dir;
        let now = |name: &str| fs::read(dir.join(name)).ok();
        let after = names(dir);
        let mut broken = Vec::new();
        for (name, bytes) in &self.kept {
            if now(name).as_ref() != Some(bytes) {
                broken.push(("--output changed its source", name.to_string()));
            }
        }
        let Some(code) = ran.code() else {
            broken.push(("1: a hang or a signal", ran.exit()));
            return broken;
        };
        if code == 101 || ran.stderr.contains("panicked at") {
            broken.push(("1: a panic", ran.exit()));
            return broken;
        }
        // An earlier run's temporary file may stay when this run failed
        // before it cleaned up (exit 2 or 4), or said it could not (5).
        let temps: Vec<&String> = after
            .iter()
            .filter(|n| is_temp(n) && (code == 0 || !before.contains(*n)))
            .collect();
        if !temps.is_empty() && [0, 2, 4, 5].contains(&code) {
            broken.push((temp_rule(code), format!("{temps:?}")));
        }
        match code {
            5 => {
                for w in &self.watched {
                    let got = now(w.name);
                    if got.as_ref() != Some(&w.clean) {
                        broken.push(("5: exit 5, not the clean result", w.describe(got.as_ref())));
                    }
                }
                if !whole_report(&self.case.args, &ran.stdout) {
                    let len = ran.stdout.len();
                    broken.push(("5: exit 5, stdout not whole JSON", format!("{len} bytes")));
                }
                let unlisted = ran
                    .stderr
                    .contains(&format!("{}: cannot be listed", dir.display()));
                let unnamed: Vec<&String> = after
                    .iter()
                    .filter(|n| is_temp(n) && !unlisted && !ran.stderr.contains(n.as_str()))
                    .collect();
                if !unnamed.is_empty() || !ran.stderr.contains("it stays (exit status 5)") {
                    let rule = "5: exit 5, stderr does not name what stays";
                    broken.push((rule, format!("{unnamed:?}: {}", ran.first_line())));
                }
            }
            0 => {
                // Without a lease a torn line is ended instead of cut, and
                // the report says so.
                let says_ended = String::from_utf8_lossy(&ran.stdout)
                    .contains("ended with a newline instead of cut");
                for w in &self.watched {
                    let got = now(w.name);
                    let ended = says_ended && w.ended_result(got.as_ref());
                    if got.as_ref() != Some(&w.clean) && !ended {
                        broken.push(("2: exit 0, not the clean result", w.describe(got.as_ref())));
                    }
                }
                if !whole_report(&self.case.args, &ran.stdout) {
                    let len = ran.stdout.len();
                    broken.push(("2: exit 0, stdout not whole JSON", format!("{len} bytes")));
                }
            }
            2 => {
                for w in &self.watched {
                    let got = now(w.name);
                    if got != w.original {
                        let rule = match w.original {
                            None => "3: exit 2, the --output file exists",
                            Some(_) => "3: exit 2, the target changed",
                        };
                        broken.push((rule, w.describe(got.as_ref())));
                    }
                }
                let new: Vec<&String> = after
                    .difference(before)
                    .filter(|n| !is_temp(n) && *n != OUTPUT && !ran.stderr.contains(n.as_str()))
                    .collect();
                if !new.is_empty() {
                    broken.push(("3: exit 2, a new file left", format!("{new:?}")));
                }
                let lines: Vec<&str> = ran.stderr.lines().collect();
                if lines.len() != 1 || !lines[0].starts_with("leasejournal: ") {
                    let (n, last) = (lines.len(), lines.last().unwrap_or(&""));
                    broken.push((
                        "3: exit 2, stderr not one `leasejournal: ` line",
                        format!("{n} lines, the last {last:?}"),
                    ));
                }
                // The error is the last line, whatever notes came before.
                if let Some(line) = lines.last().filter(|l| claims_success(l)) {
                    broken.push(("3: exit 2, the error claims success", line.to_string()));
                }
            }
            4 => {
                let named = self
                    .watched
                    .iter()
                    .any(|w| ran.stderr.contains(&dir.join(w.name).display().to_string()));
                if !named {
                    broken.push(("4: exit 4, stderr does not name the file", String::new()));
                }
                for w in &self.watched {
                    let got = now(w.name);
                    let allowed = got == w.original
                        || got.as_ref() == Some(&w.clean)
                        || (w.sealed.is_some() && got == w.sealed)
                        || w.ended_result(got.as_ref())
                        || w.ended
                            .as_ref()
                            .is_some_and(|(_, e)| got.as_ref() == Some(e));
                    if !allowed {
                        let rule = "4: exit 4, neither the original nor the result";
                        broken.push((rule, w.describe(got.as_ref())));
                    }
                }
                broken.extend(self.rerun(staged));
            }
            _ => broken.push(("6: another exit status", ran.exit())),
        }
        broken
    }

    /// After an exit 4: the same command without a fault completes the job.
    fn rerun(&self, staged: &Staged) -> Vec<(&'static str, String)> {
        let mut broken = Vec::new();
        // An --output file that was made stays: the command would refuse
        // to overwrite it, and it must already be the result.
        if !(self.case.output && staged.dir.join(OUTPUT).exists()) {
            let line = self.case.command_line(&staged.dir);
            let again = run(Command::new(bin()).args(line), &staged.scratch);
            if again.code() != Some(0) {
                let found = format!("{}: {}", again.exit(), again.first_line());
                broken.push(("4: exit 4, the run again fails", found));
                return broken;
            }
        }
        for w in &self.watched {
            let got = fs::read(staged.dir.join(w.name)).ok();
            if got.as_ref() != Some(&w.clean) && !w.ended_result(got.as_ref()) {
                let rule = "4: exit 4, the run again does not leave the clean result";
                broken.push((rule, w.describe(got.as_ref())));
            }
        }
        broken
    }
}

fn temp_rule(code: i32) -> &'static str {
    match code {
        0 => "2: exit 0, a temporary file left",
        2 => "3: exit 2, a temporary file left",
        5 => "5: exit 5, a temporary file of this run left",
        _ => "4: exit 4, a temporary file left",
    }
}

/// A run that broke the contract.
struct Violation {
    case: String,
    fault: Fault,
    exit: String,
    first_line: String,
    rule: &'static str,
    detail: String,
}

fn names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .expect("read the case dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

/// This tool's temporary file: `NAME.leasejournal.PID.tmp`.
fn is_temp(name: &str) -> bool {
    name.contains(".leasejournal.") && name.ends_with(".tmp")
}

/// Whether an error message says something was done.
fn claims_success(line: &str) -> bool {
    let line = line
        .to_lowercase()
        .replace("nothing was changed", "")
        .replace("was not changed", "");
    [
        "backed up",
        "exported ",
        "wrote ",
        "written to",
        "was changed",
        "were changed",
    ]
    .iter()
    .any(|claim| line.contains(claim))
}

// ---- the test ----------------------------------------------------------------

/// strace, or a visible message that the test cannot run here.
fn strace_or_skip() -> Option<Strace> {
    Strace::probe()
        .map_err(|why| eprintln!("faults: {why}; skipping fault injection"))
        .ok()
}

#[test]
fn every_failing_system_call_keeps_the_exit_status_contract() {
    let Some(strace) = strace_or_skip() else {
        return;
    };
    let started = Instant::now();
    let startup = Strace::startup();
    let prepared: Vec<Prepared> = cases()
        .into_iter()
        .map(|case| Prepared::new(case, &startup))
        .collect();
    let jobs: Vec<(usize, &Fault)> = prepared
        .iter()
        .enumerate()
        .flat_map(|(i, p)| p.plan.faults.iter().map(move |f| (i, f)))
        .collect();
    let next = AtomicUsize::new(0);
    let violations = Mutex::new(Vec::new());
    let spent = Mutex::new(vec![Duration::ZERO; prepared.len()]);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some(&(i, fault)) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let t = Instant::now();
                    let found = prepared[i].check(&strace, fault);
                    spent.lock().unwrap()[i] += t.elapsed();
                    violations.lock().unwrap().extend(found);
                }
            });
        }
    });
    let mut violations = violations.into_inner().unwrap();
    violations.sort_by(|a, b| {
        (a.rule, &a.case, &a.fault.call, a.fault.errno, a.fault.n).cmp(&(
            b.rule,
            &b.case,
            &b.fault.call,
            b.fault.errno,
            b.fault.n,
        ))
    });
    summarize(&prepared, &spent.into_inner().unwrap(), started.elapsed());
    if violations.is_empty() {
        return;
    }
    let mut groups: BTreeMap<(&str, &str, &str), u32> = BTreeMap::new();
    let mut per_rule: BTreeMap<&str, u32> = BTreeMap::new();
    for v in &violations {
        *groups.entry((v.rule, &v.case, &v.fault.call)).or_insert(0) += 1;
        *per_rule.entry(v.rule).or_insert(0) += 1;
    }
    for ((rule, case, call), n) in &groups {
        eprintln!("faults: {rule} | {case} | {call} ×{n}");
    }
    let per_rule: Vec<String> = per_rule
        .iter()
        .map(|(rule, n)| format!("  {rule}: {n}"))
        .collect();
    // One example of each rule broken by each call, so that every kind of
    // failure shows.
    let mut seen = BTreeSet::new();
    let shown: Vec<String> = violations
        .iter()
        .filter(|v| seen.insert((v.rule, v.fault.call.as_str())))
        .take(SHOWN)
        .map(|v| {
            format!(
                "  {} | {} | {} | {} | {:?} | {}",
                v.case, v.fault, v.exit, v.rule, v.first_line, v.detail
            )
        })
        .collect();
    let total = violations.len();
    panic!(
        "{total} violations of the exit status contract (every group is on stderr):\n{}\n\
         an example of each rule and call:\n{}",
        per_rule.join("\n"),
        shown.join("\n")
    );
}

/// Prints per command the runs, the time they took (summed over both
/// threads) and the calls the faults reach; then the expected calls no
/// command made, and the totals.
fn summarize(prepared: &[Prepared], spent: &[Duration], elapsed: Duration) {
    let listed = |calls: &BTreeMap<String, u32>| {
        calls
            .iter()
            .map(|(c, n)| format!("{c}×{n}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut made = BTreeSet::new();
    for (p, time) in prepared.iter().zip(spent) {
        let unreached = if p.plan.unreached.is_empty() {
            String::new()
        } else {
            format!("; unreached in threads: {}", listed(&p.plan.unreached))
        };
        eprintln!(
            "faults: {}: {} runs in {:.1} s; calls: {}{unreached}",
            p.case.name,
            p.plan.faults.len(),
            time.as_secs_f64(),
            listed(&p.plan.reached),
        );
        made.extend(p.plan.reached.keys().cloned());
    }
    let never: Vec<&str> = EXPECTED
        .iter()
        .copied()
        .filter(|c| !made.contains(*c))
        .collect();
    if !never.is_empty() {
        eprintln!("faults: no command makes {}", never.join(", "));
    }
    let runs: usize = prepared.iter().map(|p| p.plan.faults.len()).sum();
    eprintln!("faults: {runs} runs in {:.1} s", elapsed.as_secs_f64());
}

/// `verify` of a state directory under a failing `statx`, `openat`,
/// `getdents64`, `read` or `pread64`: a file that cannot be examined or
/// read makes the verdict incomplete (exit 2); a verdict of go or no-go
/// always covers every file a clean run covers.
#[test]
fn verify_never_leaves_a_file_out_silently() {
    let Some(strace) = strace_or_skip() else {
        return;
    };
    let dir = crate::support::copy_dir(&crate::support::fixture("samples"));
    let scratch = tempfile::tempdir().expect("scratch");
    let line = |extra: &[String]| {
        let mut cmd = Command::new("strace");
        cmd.args(["-f", "-qq", "-o", "/dev/null"]);
        if strace.seccomp {
            cmd.arg("--seccomp-bpf");
        }
        cmd.args(extra)
            .arg("--")
            .arg(bin())
            .args(["verify", "--format=json", "--ignore=seed-missing"])
            .arg(dir.path());
        cmd
    };
    let files = |ran: &Ran| -> Vec<String> {
        let report: schema::Verify = schema::parse(&ran.stdout);
        report.files.into_iter().map(|f| f.file).collect()
    };
    let clean = run(
        &mut line(&["-e".into(), "trace=none".into()]),
        scratch.path(),
    );
    assert_eq!(clean.code(), Some(0), "{}", clean.stderr);
    let covered = files(&clean);
    let mut broken = Vec::new();
    let mut runs = 0;
    for call in ["statx", "openat", "getdents64", "read", "pread64"] {
        for n in 1..=24 {
            let extra = [
                "-e".to_string(),
                format!("trace={call}"),
                "-e".to_string(),
                format!("inject={call}:error=EIO:when={n}"),
            ];
            let ran = run(&mut line(&extra), scratch.path());
            runs += 1;
            let verdict_covers = match ran.code() {
                Some(0 | 1) => files(&ran) == covered,
                Some(2) => true,
                // The dynamic loader's own reads, before the program runs.
                Some(127) => ran.stderr.contains("error while loading shared libraries"),
                _ => false,
            };
            if !verdict_covers || ran.stderr.contains("panicked at") {
                broken.push(format!("{call}:{n}: {} {}", ran.exit(), ran.first_line()));
            }
        }
    }
    eprintln!("faults: verify under {runs} injected faults");
    assert!(broken.is_empty(), "{broken:#?}");
}

/// A stale temporary file of an earlier run that cannot be removed, or a
/// directory that cannot be listed to look for them, is told on stderr and
/// in the report, and the run exits 5; the repair itself is made as in a
/// clean run.
#[test]
fn a_stale_temporary_file_that_stays_is_told_and_exits_5() {
    let Some(strace) = strace_or_skip() else {
        return;
    };
    let torn = fs::read(fixture("verify/torn-tail/journal.jsonl")).expect("fixture");
    let cut = Seal::Cut.apply(&torn);
    // (call, errno, the path whose calls are counted, the words said).
    let faults = [
        (
            "unlink",
            "EACCES",
            true,
            "cannot be removed: permission denied",
        ),
        (
            "statx",
            "EIO",
            true,
            "cannot be examined: input/output error",
        ),
        (
            "openat",
            "EMFILE",
            false,
            "cannot be listed to find stale temporary files of this tool: too many open files",
        ),
        (
            "getdents64",
            "EIO",
            false,
            "cannot be listed to find stale temporary files of this tool: input/output error",
        ),
    ];
    for (call, errno, on_temp, words) in faults {
        let home = tempfile::tempdir().expect("tempdir");
        let dir = fs::canonicalize(home.path())
            .expect("canonical")
            .join("case");
        fs::create_dir(&dir).expect("case dir");
        let journal = dir.join(".work_leases.jsonl");
        let stale = dir.join(STALE);
        fs::write(&journal, &torn).expect("journal");
        fs::write(&stale, b"junk").expect("stale temp");
        fs::write(dir.join(LOCK), b"").expect("lock");
        let watched = if on_temp { &stale } else { &dir };
        let mut cmd = Command::new("strace");
        cmd.args(["-f", "-qq", "-o", "/dev/null"]);
        if strace.seccomp {
            cmd.arg("--seccomp-bpf");
        }
        cmd.arg("-P")
            .arg(watched)
            .args(["-e", &format!("trace={call}")])
            .args(["-e", &format!("inject={call}:error={errno}:when=1")])
            .arg("--")
            .arg(bin())
            .args(["repair", "--apply", "--no-backup", "--format=json"])
            .arg(&journal);
        let ran = run(&mut cmd, home.path());
        let fault = format!("{call}:{errno}");
        assert_eq!(ran.code(), Some(5), "{fault}: {}", ran.stderr);
        assert_eq!(
            ran.stderr,
            format!(
                "leasejournal: warning: {}: {words}; it stays (exit status 5)\n",
                watched.display()
            ),
            "{fault}"
        );
        let report: schema::Repair = schema::parse(&ran.stdout);
        let file = report.only();
        assert_eq!(
            file.stale_temp_files_left,
            [schema::Leftover {
                path: watched.display().to_string(),
                error: words.to_string(),
            }],
            "{fault}"
        );
        assert!(file.removed_temp_files.is_empty(), "{fault}");
        assert!(file.written, "{fault}: the repair itself is made");
        assert!(fs::read(&journal).unwrap() == cut, "{fault}");
        assert_eq!(fs::read(&stale).unwrap(), b"junk", "{fault}: it stays");
        // Without the fault, the next run removes it and exits 0.
        let again = run(
            Command::new(bin())
                .args(["repair", "--apply", "--format=json"])
                .arg(&journal),
            home.path(),
        );
        assert_eq!(again.code(), Some(0), "{fault}: {}", again.stderr);
        let report: schema::Repair = schema::parse(&again.stdout);
        assert_eq!(
            report.only().removed_temp_files,
            [stale.display().to_string()]
        );
        assert!(!stale.exists());
    }
}
