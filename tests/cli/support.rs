//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The binary under test.
pub fn lj() -> Command {
    let mut cmd = assert_cmd::cargo::cargo_bin_cmd!("leasejournal");
    // Output does not depend on the shell the tests run from, nor on the
    // master's settings it may carry.
    cmd.env_remove("NO_COLOR")
        .env_remove("COLUMNS")
        .env_remove("TERM")
        .env_remove("SYMCC_STATE_SHARDS")
        .env_remove("SYMCC_PERSISTENT_STATE");
    cmd
}

/// A path under fixtures/.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// `text` without its SGR colour sequences.
pub fn strip_colour(text: &str) -> String {
    let mut plain = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('\u{1b}') {
        plain.push_str(&rest[..at]);
        let end = rest[at..].find('m').unwrap();
        rest = &rest[at + end + 1..];
    }
    plain.push_str(rest);
    plain
}

/// Runs the command, checks exit 0 and an empty stderr, and reads stdout
/// into a report's typed struct (see crate::schema).
pub fn json_ok<T: serde::de::DeserializeOwned>(cmd: &mut Command) -> T {
    let out = cmd.output().expect("run leasejournal");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    crate::schema::parse(&out.stdout)
}

/// Reads a run of `verify --format json`: the exit status and the report,
/// checking that `exit_code` is the exit status and that stderr holds
/// nothing but the paths that could not be checked, each naming the file.
pub fn verify_output(out: &std::process::Output) -> (i32, crate::schema::Verify) {
    let code = out.status.code().expect("an exit status");
    let report: crate::schema::Verify = crate::schema::parse(&out.stdout);
    assert_eq!(report.exit_code, code, "exit_code is the exit status");
    let stderr: String = report
        .errors
        .iter()
        .map(|e| format!("leasejournal: {}: {}\n", e.file, e.message))
        .collect();
    assert_eq!(String::from_utf8_lossy(&out.stderr), stderr);
    (code, report)
}

/// Whether `stderr` holds nothing but a writing command's "backed up … to
/// …" and "exported … to …" notes (whose names carry the run's stamp).
pub fn notes_only(stderr: &str) -> bool {
    stderr.lines().all(|l| {
        l.starts_with("leasejournal: backed up ") || l.starts_with("leasejournal: exported ")
    })
}

/// Like [`json_ok`] for the writing commands, whose stderr may only carry
/// their "backed up … to …" and "exported … to …" notes.
pub fn json_written<T: serde::de::DeserializeOwned>(cmd: &mut Command) -> T {
    let out = cmd.output().expect("run leasejournal");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(notes_only(&stderr), "stderr: {stderr}");
    crate::schema::parse(&out.stdout)
}

/// The fidelity case directories whose name starts with one of `prefixes`.
pub fn cases(prefixes: &[char]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixture("fidelity"))
        .expect("fixtures/fidelity")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| prefixes.iter().any(|c| n.starts_with(*c)))
        })
        .collect();
    dirs.sort();
    dirs
}

/// Copies a directory's files into a fresh temporary directory.
pub fn copy_dir(src: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir_to(src, dir.path());
    dir
}

/// Copies the files of `src` into `dest` (created), writable.
pub fn copy_dir_to(src: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).expect("create the copy");
    for entry in std::fs::read_dir(src).expect("read fixture dir") {
        let entry = entry.expect("entry");
        if entry.path().is_file() {
            std::fs::copy(entry.path(), dest.join(entry.file_name())).expect("copy");
        }
    }
    for entry in std::fs::read_dir(dest).expect("read copy") {
        let path = entry.expect("entry").path();
        let mut perms = std::fs::metadata(&path).expect("meta").permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&path, perms).expect("chmod");
    }
}

/// A command that runs the binary as an unprivileged user (uid 65534) when
/// the tests run as root, since root reads and writes anything. The binary
/// is copied to a world-readable place first, because the checkout may sit
/// under a directory that user cannot enter.
pub fn unprivileged_command() -> (std::process::Command, Option<tempfile::TempDir>) {
    use std::os::unix::process::CommandExt;
    let bin = assert_cmd::cargo::cargo_bin!("leasejournal");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return (std::process::Command::new(bin), None);
    }
    let mut cmd = std::process::Command::new(unprivileged_binary());
    cmd.uid(65534).gid(65534);
    (cmd, None)
}

/// A copy of the binary that every user may run, made once per test
/// process: copied while other tests fork, a freshly written executable can
/// be held open for writing by a child that has not exec'd yet, and running
/// it then fails with "text file busy".
fn unprivileged_binary() -> &'static Path {
    use std::os::unix::fs::PermissionsExt;
    static COPY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    COPY.get_or_init(|| {
        // One directory for every test run; a copy per test process, and
        // the copies of test processes that have ended are removed.
        let dir = std::env::temp_dir().join("leasejournal-tests-unprivileged");
        std::fs::create_dir_all(&dir).expect("create the directory");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        for entry in std::fs::read_dir(&dir)
            .expect("list the directory")
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("leasejournal-")
                .and_then(|p| p.parse::<i32>().ok());
            // SAFETY: kill with signal 0 only checks that the process exists.
            if pid.is_some_and(|pid| unsafe { libc::kill(pid, 0) } != 0) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let copy = dir.join(format!("leasejournal-{}", std::process::id()));
        std::fs::copy(assert_cmd::cargo::cargo_bin!("leasejournal"), &copy)
            .expect("copy the binary");
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        // Wait until no child forked during the copy still holds it open
        // for writing: running it succeeds.
        for _ in 0..500 {
            match std::process::Command::new(&copy).arg("--version").output() {
                Err(err) if err.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => break,
            }
        }
        copy
    })
}

/// Names of the files in a directory, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read the directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Waits for `path` to appear (a failpoint's `.reached` marker); fails the
/// test after a minute.
pub fn wait_for(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A unix-clock lease line for `payload` (canonical JSON), attempts 1.
pub fn lease_of(payload: &str, worker: i64, time: f64) -> Vec<u8> {
    use leasejournal::engine::journal::encode::lease_line;
    use leasejournal::engine::journal::{Clock, WorkId};
    use leasejournal::engine::json::PyInt;
    let id = WorkId::of_canonical(payload.as_bytes());
    lease_line(
        &id,
        &PyInt::Small(worker),
        time,
        &PyInt::Small(1),
        Clock::Unix,
        payload.as_bytes(),
    )
}

/// This test process as the master's lock names its holder:
/// `pid 42 (cli-1a2b3c4d5e6f)` (its command name, as `/proc/self/comm`
/// gives it).
pub fn this_holder() -> String {
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
    format!("pid {} ({})", std::process::id(), comm.trim_end())
}

/// `len` bytes of noise, the same for the same `seed` (xorshift64).
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Whether flock(1) is installed; if not, says which test part is skipped.
pub fn flock_installed(untested: &str) -> bool {
    let installed = std::process::Command::new("flock")
        .arg("--version")
        .output()
        .is_ok();
    if !installed {
        eprintln!("flock(1) is not installed: {untested} is not tested");
    }
    installed
}

/// An active lease as replay holds it: id, worker, time, attempts, clock.
pub type Lease = (
    String,
    crate::schema::PyInt,
    f64,
    crate::schema::PyInt,
    crate::schema::Clock,
);

/// The replay state of a journal, as `inspect` reports it: its active
/// leases and completed ids.
pub fn state(path: &Path) -> (Vec<Lease>, Vec<String>) {
    let v = json_ok::<crate::schema::Inspect>(
        lj().args(["inspect", "--format=json", "--kind=journal"])
            .arg(path),
    )
    .journal();
    let active = v
        .active
        .into_iter()
        .map(|a| (a.id, a.worker, a.time, a.attempts, a.clock))
        .collect();
    (active, v.completed)
}

/// A master holding `lock` (created if absent): flock(1) keeps it while
/// `sleep 60` runs (-o: the command itself does not hold it), in a process
/// group of its own; returned once /proc/locks shows it held. Kill it to
/// let go. `None` when flock(1) is not installed (said on stderr).
pub fn hold_master_lock(lock: &Path, untested: &str) -> Option<std::process::Child> {
    use std::os::unix::process::CommandExt;
    if !flock_installed(untested) {
        return None;
    }
    if !lock.exists() {
        std::fs::write(lock, b"").expect("create the lock file");
    }
    let master = std::process::Command::new("flock")
        .process_group(0)
        .args(["-n", "-o"])
        .arg(lock)
        .args(["sleep", "60"])
        .spawn()
        .expect("run flock");
    let pid = master.id();
    while !std::fs::read_to_string("/proc/locks")
        .expect("read /proc/locks")
        .contains(&format!(" {pid} "))
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Some(master)
}
