//! A master on another host. `/proc/locks` shows only this host's locks,
//! so where a state directory is on a file system other hosts share, a
//! master there holding `.master-queue.lock` is invisible: the verdict is
//! incomplete (`master-unseen`) unless the lock file is absent (no master
//! ever started there), the operator's probe finds the lock free where
//! `flock` reaches other hosts, or the operator says no master runs
//! elsewhere.

use std::path::Path;

use serde::Serialize;

use crate::operations::findings::catalog::{At, Code, Findings};
use crate::operations::findings::{RemoteMaster, Settings};
use crate::store::lock::{MASTER_LOCK, Probe, in_nested_pid_namespace, probe_master_lock};
use crate::store::mount::{FlockReach, SharedMount, shared_mount};

/// What is known of a master this host's `/proc/locks` cannot show: on
/// another host, for a directory on a shared mount, or outside this
/// process's PID namespace (`targets[].remote_master`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RemoteMasterReport {
    /// The shared mount, and how far `flock` on it reaches; `None` on a
    /// local file system.
    pub mount: Option<SharedMount>,
    /// Whether this process runs in a PID namespace of its own (a
    /// container), whose `/proc/locks` leaves out the locks of processes
    /// outside it.
    pub pid_namespace: bool,
    /// What was asked (`--remote-master`).
    pub mode: RemoteMaster,
    /// What the probe found, when it ran.
    pub probe: Option<Probe>,
    /// What rules out such a master: `no-lock-file`, `probe` or
    /// `operator`; `None` when nothing does (then `master-unseen`, or
    /// `live-master` when the probe found the lock held).
    pub ruled_out_by: Option<&'static str>,
}

/// What the check of one directory gave.
pub struct RemoteCheck {
    /// The report, when a master could hide from `/proc/locks`.
    pub report: Option<RemoteMasterReport>,
    /// `master-unseen`, or `live-master` when the probe found the lock
    /// held.
    pub findings: Findings,
    /// Whether the probe found the lock held: a master this host's
    /// `/proc/locks` does not show runs.
    pub held_elsewhere: bool,
}

/// Checks `dir` (shown as `shown`), whose lock no process `/proc/locks`
/// shows holds, for a master it cannot show.
pub fn check(dir: &Path, shown: &str, settings: &Settings) -> RemoteCheck {
    let mut findings = Findings::default();
    let mount = shared_mount(dir);
    let pid_namespace = in_nested_pid_namespace();
    if mount.is_none() && !pid_namespace {
        return RemoteCheck {
            report: None,
            findings,
            held_elsewhere: false,
        };
    }
    // Outside a shared mount, flock is one for the whole kernel.
    let reach = mount.as_ref().map_or(FlockReach::AcrossHosts, |m| m.flock);
    let mode = settings.remote_master;
    let lock_present = std::fs::symlink_metadata(dir.join(MASTER_LOCK)).is_ok();
    // A probe is no use where each host locks on its own.
    let probe = (lock_present && mode == RemoteMaster::Probe && reach != FlockReach::ThisHostOnly)
        .then(|| probe_master_lock(dir));
    let ruled_out_by = if !lock_present {
        Some("no-lock-file")
    } else if mode == RemoteMaster::None {
        Some("operator")
    } else if probe == Some(Probe::Free) && reach == FlockReach::AcrossHosts {
        Some("probe")
    } else {
        None
    };
    let held_elsewhere = probe == Some(Probe::Held);
    let at = At::default();
    let place = place(mount.as_ref(), pid_namespace);
    if held_elsewhere {
        findings.add(settings, Code::LiveMaster, shown, at, || {
            format!(
                "{MASTER_LOCK} is held, by no process this host's /proc/locks shows (--remote-master probe): a master {place} is running"
            )
        });
    } else if ruled_out_by.is_none() {
        findings.add(settings, Code::MasterUnseen, shown, at, || {
            unseen_message(mount.as_ref(), pid_namespace, mode, probe.as_ref())
        });
    }
    RemoteCheck {
        report: Some(RemoteMasterReport {
            mount,
            pid_namespace,
            mode,
            probe,
            ruled_out_by,
        }),
        findings,
        held_elsewhere,
    }
}

/// Where a master /proc/locks cannot show runs, in words.
fn place(mount: Option<&SharedMount>, pid_namespace: bool) -> String {
    match (mount, pid_namespace) {
        (Some(m), false) => format!("on another host ({})", m.describe()),
        (Some(m), true) => format!(
            "on another host ({}) or outside this PID namespace",
            m.describe()
        ),
        (None, _) => "outside this PID namespace (a container)".to_string(),
    }
}

/// Why a master /proc/locks cannot show could not be ruled out.
fn unseen_message(
    mount: Option<&SharedMount>,
    pid_namespace: bool,
    mode: RemoteMaster,
    probe: Option<&Probe>,
) -> String {
    let mut parts = Vec::new();
    if let Some(mount) = mount {
        let mut text = format!(
            "on {}, which other hosts share: a master on another host holding {MASTER_LOCK} does not show in this host's /proc/locks",
            mount.describe()
        );
        match mount.flock {
            FlockReach::ThisHostOnly => text.push_str(&format!(
                "; flock there stays on each host ({}), so not even the master's own lock keeps a second master out, and a probe cannot tell",
                mount.flock_because
            )),
            FlockReach::Unknown => text.push_str(&format!(
                "; whether flock there reaches other hosts is not known ({})",
                mount.flock_because
            )),
            FlockReach::AcrossHosts => {}
        }
        parts.push(text);
    }
    if pid_namespace {
        parts.push(format!(
            "this process runs in a PID namespace of its own (a container): its /proc/locks leaves out a master outside it holding {MASTER_LOCK}"
        ));
    }
    let mut text = parts.join("; and ");
    match (mode, probe) {
        (RemoteMaster::Probe, Some(Probe::Free)) => {
            text.push_str("; --remote-master probe found the lock free, which proves nothing here")
        }
        (RemoteMaster::Probe, Some(Probe::Failed(why))) => text.push_str(&format!(
            "; --remote-master probe could not try the lock: {why}"
        )),
        _ => {}
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(flock: FlockReach, because: &str) -> SharedMount {
        SharedMount {
            file_system: "lustre".into(),
            mount_point: "/lus".into(),
            flock,
            flock_because: because.into(),
        }
    }

    #[test]
    fn the_message_says_why_the_master_cannot_be_ruled_out() {
        assert_eq!(
            unseen_message(
                Some(&mount(FlockReach::AcrossHosts, "mounted with flock")),
                false,
                RemoteMaster::Unseen,
                None
            ),
            "on lustre at /lus, which other hosts share: a master on another host holding .master-queue.lock does not show in this host's /proc/locks"
        );
        assert_eq!(
            unseen_message(
                Some(&mount(FlockReach::ThisHostOnly, "mounted with localflock")),
                false,
                RemoteMaster::Probe,
                None
            ),
            "on lustre at /lus, which other hosts share: a master on another host holding .master-queue.lock does not show in this host's /proc/locks; flock there stays on each host (mounted with localflock), so not even the master's own lock keeps a second master out, and a probe cannot tell"
        );
        assert_eq!(
            unseen_message(
                Some(&mount(FlockReach::Unknown, "x")),
                false,
                RemoteMaster::Probe,
                Some(&Probe::Free)
            ),
            "on lustre at /lus, which other hosts share: a master on another host holding .master-queue.lock does not show in this host's /proc/locks; whether flock there reaches other hosts is not known (x); --remote-master probe found the lock free, which proves nothing here"
        );
        assert!(
            unseen_message(
                Some(&mount(FlockReach::AcrossHosts, "x")),
                false,
                RemoteMaster::Probe,
                Some(&Probe::Failed("permission denied".into()))
            )
            .ends_with("; --remote-master probe could not try the lock: permission denied")
        );
        assert_eq!(
            unseen_message(None, true, RemoteMaster::Unseen, None),
            "this process runs in a PID namespace of its own (a container): its /proc/locks leaves out a master outside it holding .master-queue.lock"
        );
    }
}
