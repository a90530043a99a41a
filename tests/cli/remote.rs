//! A master on another host: a state directory on a file system other
//! hosts share is never a plain go, the operator's probe and word rule the
//! master out, and a lock held elsewhere is busy. The mount table is
//! replaced (`LEASEJOURNAL_TEST_FILES`) to put the test's directory on
//! NFS or Lustre; the probe's lock is real.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use crate::schema::{self, Probe, Verdict, Verify};
use crate::support::{flock_installed, lj, strip_colour};

const NOW: &str = "1754550100";

/// A state directory with an empty journal (nothing else to find) and the
/// master's lock file, and a mount table that puts it on `fs` with
/// `options`.
struct Shared {
    dir: tempfile::TempDir,
    mountinfo: PathBuf,
}

impl Shared {
    fn new(fs_type: &str, options: &str) -> Shared {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".work_leases.jsonl"), b"").unwrap();
        fs::write(dir.path().join(".master-queue.lock"), b"").unwrap();
        let dev = fs::metadata(dir.path()).unwrap().dev();
        let mountinfo = dir.path().join("mountinfo");
        fs::write(
            &mountinfo,
            format!(
                "27 1 {}:{} / /shared rw,relatime - {fs_type} srv:/export {options}\n",
                libc::major(dev),
                libc::minor(dev)
            ),
        )
        .unwrap();
        Shared { dir, mountinfo }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs verify on `target` with `args`; `proc_locks` replaces
    /// /proc/locks when given.
    fn verify(&self, args: &[&str], target: &Path, proc_locks: Option<&Path>) -> (i32, String) {
        let mut files = format!("mountinfo={}", self.mountinfo.display());
        if let Some(locks) = proc_locks {
            files.push_str(&format!(",proc-locks={}", locks.display()));
        }
        let out = lj()
            .env("LEASEJOURNAL_TEST_FILES", files)
            .args(["verify", "--now", NOW, "--color=never"])
            .args(args)
            .arg(target)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
        (
            out.status.code().unwrap(),
            strip_colour(&String::from_utf8_lossy(&out.stdout)),
        )
    }

    fn verify_json(&self, args: &[&str], proc_locks: Option<&Path>) -> (i32, Verify) {
        let mut all = vec!["--format=json"];
        all.extend_from_slice(args);
        let (exit, stdout) = self.verify(&all, self.path(), proc_locks);
        let report: Verify = schema::parse(stdout.as_bytes());
        assert_eq!(report.exit_code, exit);
        (exit, report)
    }
}

const UNSEEN: &str = "on nfs4 at /shared, which other hosts share: a master on another host holding .master-queue.lock does not show in this host's /proc/locks";
const MUST: &str = "Run verify on the host that runs the master, outside any container; or pass --remote-master probe where flock reaches other hosts (it takes and drops the lock at once; a master starting in that instant fails to start); or pass --remote-master none once you know no master runs on any other host or outside this container";

/// On NFS a clean directory is incomplete, not go, and says what to do.
#[test]
fn a_directory_other_hosts_share_is_no_plain_go() {
    let shared = Shared::new("nfs4", "rw,vers=4.2,local_lock=none");
    let dir = shared.path().display().to_string();
    let (exit, stdout) = shared.verify(&[], shared.path(), None);
    assert_eq!(exit, 2);
    assert_eq!(
        stdout,
        format!(
            "{dir}\n  error   master-unseen  ×1\n      {UNSEEN}\n      must do: {MUST}; no command fixes this, and the verdict stays incomplete until it is done\n\
             checked L1 L2 L4 L5 L6; L3 and L7 cannot be checked from files\n\
             verdict: incomplete, a master on another host cannot be ruled out (1 error, 0 warnings, 0 info)\n\
             must do first; no command fixes these, and the verdict stays as it is until they are done:\n  master-unseen ×1 (incomplete until then): {MUST}\n"
        )
    );
    let (exit, report) = shared.verify_json(&[], None);
    assert_eq!((exit, report.verdict), (2, Verdict::Incomplete));
    let target = &report.targets[0];
    assert_eq!(target.verdict, Verdict::Incomplete);
    let remote = target.remote_master.as_ref().expect("remote_master");
    assert_eq!(
        (
            remote.mount.as_ref().unwrap().file_system.as_str(),
            remote.mount.as_ref().unwrap().mount_point.as_str(),
            remote.mount.as_ref().unwrap().flock.as_str(),
            remote.mode.as_str(),
            remote.probe.as_ref(),
            remote.ruled_out_by.as_deref()
        ),
        ("nfs4", "/shared", "across-hosts", "unseen", None, None)
    );
    assert_eq!(report.must_do.len(), 1);
    assert_eq!(report.must_do[0].code, "master-unseen");
    assert_eq!(report.must_do[0].verdict_until_done, Verdict::Incomplete);
    // A journal of that directory is as unseen as the directory.
    let journal = shared.path().join(".work_leases.jsonl");
    let (exit, stdout) = shared.verify(&[], &journal, None);
    assert_eq!(exit, 2, "{stdout}");
    assert!(stdout.contains(&format!("{dir}\n  error   master-unseen  ×1\n")));
}

/// The operator's word, a probe that finds the lock free where flock
/// reaches other hosts, or no lock file at all rule the master out.
#[test]
fn the_probe_the_operators_word_or_no_lock_file_rule_it_out() {
    let shared = Shared::new("nfs4", "rw,vers=4.2,local_lock=none");
    let (exit, report) = shared.verify_json(&["--remote-master", "none"], None);
    assert_eq!(exit, 0);
    let remote = report.targets[0].remote_master.clone().unwrap();
    assert_eq!(remote.ruled_out_by.as_deref(), Some("operator"));
    assert_eq!(report.settings.remote_master, "none");

    let (exit, report) = shared.verify_json(&["--remote-master", "probe"], None);
    assert_eq!(exit, 0);
    let remote = report.targets[0].remote_master.clone().unwrap();
    assert_eq!(remote.probe, Some(Probe::Free));
    assert_eq!(remote.ruled_out_by.as_deref(), Some("probe"));
    // The probe neither wrote nor left the lock taken.
    assert_eq!(
        fs::read(shared.path().join(".master-queue.lock")).unwrap(),
        b""
    );

    fs::remove_file(shared.path().join(".master-queue.lock")).unwrap();
    let (exit, report) = shared.verify_json(&[], None);
    assert_eq!(exit, 0);
    let remote = report.targets[0].remote_master.clone().unwrap();
    assert_eq!(remote.ruled_out_by.as_deref(), Some("no-lock-file"));
    assert!(!shared.path().join(".master-queue.lock").exists());
}

/// Where flock stays on each host, a probe cannot tell and is not run;
/// where it is not known, a free lock proves nothing.
#[test]
fn a_probe_that_cannot_tell_leaves_it_unseen() {
    let lustre = Shared::new("lustre", "rw,localflock");
    let (exit, report) = lustre.verify_json(&["--remote-master", "probe"], None);
    assert_eq!(exit, 2);
    let remote = report.targets[0].remote_master.clone().unwrap();
    assert_eq!(
        (remote.probe, remote.mount.as_ref().unwrap().flock.as_str()),
        (None, "this-host-only")
    );
    let finding = report.findings_of("master-unseen").next().unwrap();
    assert_eq!(
        finding.message,
        "on lustre at /shared, which other hosts share: a master on another host holding .master-queue.lock does not show in this host's /proc/locks; flock there stays on each host (mounted with localflock), so not even the master's own lock keeps a second master out, and a probe cannot tell"
    );

    let beegfs = Shared::new("beegfs", "rw");
    let (exit, report) = beegfs.verify_json(&["--remote-master", "probe"], None);
    assert_eq!(exit, 2);
    let remote = report.targets[0].remote_master.clone().unwrap();
    assert_eq!(remote.probe, Some(Probe::Free));
    assert_eq!(remote.ruled_out_by, None);
}

/// A lock held by no process this host's /proc/locks shows is a master on
/// another host: the probe finds it held, and the verdict is busy. The
/// holder here is a local flock(1), hidden by an empty /proc/locks.
#[test]
fn a_lock_held_elsewhere_is_busy() {
    if !flock_installed("a lock held elsewhere") {
        return;
    }
    let shared = Shared::new("nfs4", "rw,vers=4.2,local_lock=none");
    let lock = shared.path().join(".master-queue.lock");
    let reached = shared.path().join("held");
    // A group of its own, so that the shell and its sleep go with it.
    let mut holder = std::process::Command::new("flock")
        .process_group(0)
        .arg("-n")
        .arg(&lock)
        .args(["sh", "-c", "touch \"$0\"; sleep 60"])
        .arg(&reached)
        .spawn()
        .unwrap();
    while !reached.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let no_locks = shared.path().join("no-locks");
    fs::write(&no_locks, b"").unwrap();
    let (exit, stdout) = shared.verify(
        &["--remote-master", "probe"],
        shared.path(),
        Some(&no_locks),
    );
    let (json_exit, report) = shared.verify_json(&["--remote-master", "probe"], Some(&no_locks));
    // SAFETY: kill(2) of the holder's own process group.
    unsafe { libc::kill(-(holder.id() as i32), libc::SIGKILL) };
    holder.wait().unwrap();
    assert_eq!((exit, json_exit), (3, 3));
    let dir = shared.path().display().to_string();
    assert_eq!(
        stdout,
        format!(
            "{dir}\n  warning live-master  ×1\n      .master-queue.lock is held, by no process this host's /proc/locks shows (--remote-master probe): a master on another host (nfs4 at /shared) is running\n\
             checked L1 L2 L4 L5 L6; L3 and L7 cannot be checked from files\n\
             verdict: busy, a master is running (a master that /proc/locks does not show holds {dir}/.master-queue.lock); do not resume another, and change nothing until it stops (0 errors, 1 warning, 0 info)\n"
        )
    );
    let target = &report.targets[0];
    assert_eq!(target.verdict, Verdict::Busy);
    assert_eq!(target.master_pids, Vec::<i64>::new());
    assert_eq!(
        target.remote_master.as_ref().unwrap().probe,
        Some(Probe::Held)
    );
}

/// Where flock does not reach other hosts, no lock keeps a master on
/// another host out: the writers refuse to --apply until the operator says
/// none runs; where it does, their own lock is enough.
#[test]
fn writers_need_the_operators_word_where_flock_stays_on_one_host() {
    let torn = b"{\"op\":\"done\",\"id\":\"ab\"";
    let lustre = Shared::new("lustre", "rw,localflock");
    let journal = lustre.path().join(".work_leases.jsonl");
    fs::write(&journal, torn).unwrap();
    let before = crate::support::names(lustre.path());
    let repair = |shared: &Shared, extra: &[&str]| {
        lj().env(
            "LEASEJOURNAL_TEST_FILES",
            format!("mountinfo={}", shared.mountinfo.display()),
        )
        .args(["repair", "--apply"])
        .args(extra)
        .arg(shared.path())
        .output()
        .unwrap()
    };
    let out = repair(&lustre, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "leasejournal: {}: on lustre at /shared, where flock does not keep out a master on another host (mounted with localflock): make sure no master runs on any other host, then pass --remote-master none (nothing was changed)\n",
            lustre.path().display()
        )
    );
    assert_eq!(fs::read(&journal).unwrap(), torn);
    assert_eq!(crate::support::names(lustre.path()), before);

    let out = repair(&lustre, &["--remote-master", "none"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(fs::read(&journal).unwrap(), b"");

    let nfs = Shared::new("nfs4", "rw,vers=4.2,local_lock=none");
    fs::write(nfs.path().join(".work_leases.jsonl"), torn).unwrap();
    let out = repair(&nfs, &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// In a PID namespace of its own (a container), /proc/locks leaves out the
/// locks of processes outside it: a local directory is unseen too, and the
/// probe (flock is one for the whole kernel) rules a master out or finds it.
#[test]
fn a_container_cannot_see_a_master_outside_it() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(".work_leases.jsonl"), b"").unwrap();
    fs::write(dir.path().join(".master-queue.lock"), b"").unwrap();
    // What /proc/self/ns/pid names in a container.
    let namespace = dir.path().join("pid-namespace");
    fs::write(&namespace, "pid:[4026532178]").unwrap();
    let run = |args: &[&str]| {
        let out = lj()
            .env(
                "LEASEJOURNAL_TEST_FILES",
                format!("pid-namespace={}", namespace.display()),
            )
            .args(["verify", "--format=json", "--now", NOW])
            .args(args)
            .arg(dir.path())
            .output()
            .unwrap();
        let report: Verify = schema::parse(&out.stdout);
        assert_eq!(Some(report.exit_code), out.status.code());
        report
    };
    let report = run(&[]);
    assert_eq!(report.verdict, Verdict::Incomplete);
    let remote = report.targets[0].remote_master.clone().unwrap();
    assert_eq!((remote.mount, remote.pid_namespace), (None, true));
    assert_eq!(
        report.findings_of("master-unseen").next().unwrap().message,
        "this process runs in a PID namespace of its own (a container): its /proc/locks leaves out a master outside it holding .master-queue.lock"
    );
    let report = run(&["--remote-master", "probe"]);
    assert_eq!(report.verdict, Verdict::Go);
    let remote = report.targets[0].remote_master.clone().unwrap();
    assert_eq!(remote.ruled_out_by.as_deref(), Some("probe"));
}
