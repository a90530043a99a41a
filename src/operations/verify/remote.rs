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
use crate::store::lock::{MASTER_LOCK, Probe, probe_master_lock};
use crate::store::mount::{FlockReach, SharedMount, shared_mount};

/// What is known of a master on another host, for a directory on a shared
/// mount (`targets[].remote_master`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RemoteMasterReport {
    /// The mount, and how far `flock` on it reaches.
    pub mount: SharedMount,
    /// What was asked (`--remote-master`).
    pub mode: RemoteMaster,
    /// What the probe found, when it ran.
    pub probe: Option<Probe>,
    /// What rules out a master on another host: `no-lock-file`, `probe`
    /// or `operator`; `None` when nothing does (then `master-unseen`, or
    /// `live-master` when the probe found the lock held).
    pub ruled_out_by: Option<&'static str>,
}

/// What the check of one directory gave.
pub struct RemoteCheck {
    /// The report, when the directory is on a shared mount.
    pub report: Option<RemoteMasterReport>,
    /// `master-unseen`, or `live-master` when the probe found the lock
    /// held.
    pub findings: Findings,
    /// Whether the probe found the lock held: a master on another host
    /// runs.
    pub held_elsewhere: bool,
}

/// Checks `dir` (shown as `shown`), whose lock no process on this host
/// holds, for a master on another host.
pub fn check(dir: &Path, shown: &str, settings: &Settings) -> RemoteCheck {
    let mut findings = Findings::default();
    let Some(mount) = shared_mount(dir) else {
        return RemoteCheck {
            report: None,
            findings,
            held_elsewhere: false,
        };
    };
    let mode = settings.remote_master;
    let lock_present = std::fs::symlink_metadata(dir.join(MASTER_LOCK)).is_ok();
    // A probe is no use where each host locks on its own.
    let probe =
        (lock_present && mode == RemoteMaster::Probe && mount.flock != FlockReach::ThisHostOnly)
            .then(|| probe_master_lock(dir));
    let ruled_out_by = if !lock_present {
        Some("no-lock-file")
    } else if mode == RemoteMaster::None {
        Some("operator")
    } else if probe == Some(Probe::Free) && mount.flock == FlockReach::AcrossHosts {
        Some("probe")
    } else {
        None
    };
    let held_elsewhere = probe == Some(Probe::Held);
    let at = At::default();
    if held_elsewhere {
        findings.add(settings, Code::LiveMaster, shown, at, || {
            format!(
                "{MASTER_LOCK} is held, by no process on this host (--remote-master probe): a master on another host is running ({})",
                mount.describe()
            )
        });
    } else if ruled_out_by.is_none() {
        findings.add(settings, Code::MasterUnseen, shown, at, || {
            unseen_message(&mount, mode, probe.as_ref())
        });
    }
    RemoteCheck {
        report: Some(RemoteMasterReport {
            mount,
            mode,
            probe,
            ruled_out_by,
        }),
        findings,
        held_elsewhere,
    }
}

/// Why a master on another host could not be ruled out.
fn unseen_message(mount: &SharedMount, mode: RemoteMaster, probe: Option<&Probe>) -> String {
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
                &mount(FlockReach::AcrossHosts, "mounted with flock"),
                RemoteMaster::Unseen,
                None
            ),
            "on lustre at /lus, which other hosts share: a master on another host holding .master-queue.lock does not show in this host's /proc/locks"
        );
        assert_eq!(
            unseen_message(
                &mount(FlockReach::ThisHostOnly, "mounted with localflock"),
                RemoteMaster::Probe,
                None
            ),
            "on lustre at /lus, which other hosts share: a master on another host holding .master-queue.lock does not show in this host's /proc/locks; flock there stays on each host (mounted with localflock), so not even the master's own lock keeps a second master out, and a probe cannot tell"
        );
        assert_eq!(
            unseen_message(
                &mount(FlockReach::Unknown, "x"),
                RemoteMaster::Probe,
                Some(&Probe::Free)
            ),
            "on lustre at /lus, which other hosts share: a master on another host holding .master-queue.lock does not show in this host's /proc/locks; whether flock there reaches other hosts is not known (x); --remote-master probe found the lock free, which proves nothing here"
        );
        assert!(
            unseen_message(
                &mount(FlockReach::AcrossHosts, "x"),
                RemoteMaster::Probe,
                Some(&Probe::Failed("permission denied".into()))
            )
            .ends_with("; --remote-master probe could not try the lock: permission denied")
        );
    }
}
