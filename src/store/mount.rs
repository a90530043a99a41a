//! Whether a state directory lives on a file system that other hosts
//! share (NFS, Lustre, GPFS, CephFS, BeeGFS, …), and whether `flock` on it
//! reaches those hosts. `/proc/locks` lists only this host's locks, so on
//! such a file system a master on another host is invisible to it; and
//! where `flock` stays on one host, nothing (upstream's own lock included)
//! keeps a second master out. Read from `/proc/self/mountinfo`, matched by
//! the directory's device number; nothing is opened in the directory.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::Serialize;

/// How far `flock` on a shared mount reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlockReach {
    /// Every host that mounts it takes part in the same locks (NFS with
    /// the server's locking, Lustre with `flock`, CephFS, GFS2, OCFS2).
    AcrossHosts,
    /// Each host locks on its own (NFS `local_lock=flock|all` or `nolock`,
    /// Lustre `localflock`, GFS2 `localflocks`): two masters on two hosts
    /// both get the lock.
    ThisHostOnly,
    /// It depends on settings the mount does not show (GPFS, BeeGFS's
    /// `tuneUseGlobalFileLocks`, SMB, FUSE clients).
    Unknown,
}

/// A mount that other hosts may share.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SharedMount {
    /// The file system type as the kernel names it (`nfs4`, `lustre`, …).
    pub file_system: String,
    /// Where it is mounted.
    pub mount_point: String,
    /// How far `flock` on it reaches.
    pub flock: FlockReach,
    /// Why, in words: the mount option or the type that decides it.
    pub flock_because: String,
}

impl SharedMount {
    /// The mount in words: `nfs4 at /mnt/out`.
    pub fn describe(&self) -> String {
        format!("{} at {}", self.file_system, self.mount_point)
    }
}

/// The shared mount `dir` is on, if it is on one. `None` for a local file
/// system, and where the mount table cannot be read. The table is read
/// once a run, however many directories are checked.
pub fn shared_mount(dir: &Path) -> Option<SharedMount> {
    static TABLE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let dev = fs::metadata(dir).ok()?.dev();
    let table = TABLE
        .get_or_init(|| fs::read_to_string(mount_table()).ok())
        .as_deref()?;
    let major = libc::major(dev) as u64;
    let minor = libc::minor(dev) as u64;
    // The last mount of the device is the one on top.
    let entry = table
        .lines()
        .rev()
        .filter_map(MountEntry::parse)
        .find(|m| m.major == major && m.minor == minor)?;
    classify(&entry)
}

/// The shared mount `dir` is on, if `flock` on it may not reach the other
/// hosts (each host locks on its own, or it is not known): there the
/// writers' lock, like the master's, does not keep a master on another
/// host out.
pub fn lock_stays_here(dir: &Path) -> Option<SharedMount> {
    shared_mount(dir).filter(|m| m.flock != FlockReach::AcrossHosts)
}

/// `/proc/self/mountinfo`; the tests point it elsewhere, to show mounts
/// this machine does not have.
fn mount_table() -> std::path::PathBuf {
    super::failpoint::replaced("mountinfo")
        .unwrap_or_else(|| std::path::PathBuf::from("/proc/self/mountinfo"))
}

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, PartialEq, Eq)]
struct MountEntry {
    major: u64,
    minor: u64,
    mount_point: String,
    file_system: String,
    /// The per-mount options and the file system's own, together.
    options: Vec<String>,
}

impl MountEntry {
    /// "36 35 98:0 /root /mnt rw,noatime master:1 - nfs4 srv:/x rw,vers=4.2".
    fn parse(line: &str) -> Option<MountEntry> {
        let (mine, theirs) = line.split_once(" - ")?;
        let fields: Vec<&str> = mine.split(' ').collect();
        let (major, minor) = fields.get(2)?.split_once(':')?;
        let mount_point = unescape(fields.get(4)?);
        let mut options: Vec<String> = fields.get(5)?.split(',').map(str::to_string).collect();
        let mut rest = theirs.split(' ');
        let file_system = rest.next()?.to_string();
        let _source = rest.next();
        if let Some(own) = rest.next() {
            options.extend(own.split(',').map(str::to_string));
        }
        Some(MountEntry {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
            mount_point,
            file_system,
            options,
        })
    }

    fn has(&self, option: &str) -> bool {
        self.options.iter().any(|o| o == option)
    }
}

/// The kernel writes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a mount is shared, and how far `flock` on it reaches.
fn classify(m: &MountEntry) -> Option<SharedMount> {
    use FlockReach::{AcrossHosts, ThisHostOnly, Unknown};
    let fs = m.file_system.as_str();
    let (flock, because): (FlockReach, &str) = match fs {
        "nfs" | "nfs4" => {
            if m.has("local_lock=flock") || m.has("local_lock=all") {
                (ThisHostOnly, "mounted with local_lock=flock or all")
            } else if m.has("nolock") {
                (ThisHostOnly, "mounted with nolock")
            } else {
                (AcrossHosts, "NFS carries flock to the server")
            }
        }
        "lustre" => {
            if m.has("flock") {
                (AcrossHosts, "mounted with flock")
            } else if m.has("localflock") {
                (ThisHostOnly, "mounted with localflock")
            } else {
                (Unknown, "mounted without flock or localflock: flock fails")
            }
        }
        "gfs2" | "ocfs2" => {
            if m.has("localflocks") {
                (ThisHostOnly, "mounted with localflocks")
            } else {
                (AcrossHosts, "the cluster's lock manager carries flock")
            }
        }
        "ceph" => (AcrossHosts, "CephFS carries flock to the cluster"),
        "gpfs" => (
            Unknown,
            "GPFS's flock across nodes is not shown by the mount",
        ),
        "beegfs" => (
            Unknown,
            "it depends on the client's tuneUseGlobalFileLocks (off by default)",
        ),
        "cifs" | "smb3" | "smb2" => (Unknown, "SMB's flock is not shown by the mount"),
        "afs" | "9p" | "orangefs" | "pvfs2" | "glusterfs" => {
            (Unknown, "its flock across hosts is not known")
        }
        _ if fs.starts_with("fuse.")
            && [
                "glusterfs",
                "ceph-fuse",
                "sshfs",
                "s3fs",
                "gcsfuse",
                "juicefs",
                "beegfs",
            ]
            .contains(&&fs["fuse.".len()..]) =>
        {
            (
                Unknown,
                "a FUSE client's flock stays on this host unless it says otherwise",
            )
        }
        _ => return None,
    };
    Some(SharedMount {
        file_system: m.file_system.clone(),
        mount_point: m.mount_point.clone(),
        flock,
        flock_because: because.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(line: &str) -> Option<SharedMount> {
        classify(&MountEntry::parse(line).expect("a mountinfo line"))
    }

    #[test]
    fn mountinfo_lines_are_read_with_escapes_and_both_option_lists() {
        let m = MountEntry::parse(
            "40 27 0:51 / /mnt/fuzz\\040out rw,relatime shared:7 - nfs4 srv:/out rw,vers=4.2,local_lock=none",
        )
        .expect("parsed");
        assert_eq!((m.major, m.minor), (0, 51));
        assert_eq!(m.mount_point, "/mnt/fuzz out");
        assert_eq!(m.file_system, "nfs4");
        assert!(m.has("relatime") && m.has("local_lock=none"));
        assert_eq!(MountEntry::parse("garbage"), None);
    }

    #[test]
    fn shared_file_systems_and_their_flock() {
        let line = |fs: &str, opts: &str| format!("1 2 0:9 / /mnt rw - {fs} src {opts}");
        let reach = |fs: &str, opts: &str| shared(&line(fs, opts)).map(|s| s.flock);
        assert_eq!(reach("ext4", "rw"), None);
        assert_eq!(reach("tmpfs", "rw"), None);
        assert_eq!(reach("fuse.fuse-overlayfs", "rw"), None);
        assert_eq!(
            reach("nfs4", "rw,local_lock=none"),
            Some(FlockReach::AcrossHosts)
        );
        assert_eq!(
            reach("nfs", "rw,local_lock=flock"),
            Some(FlockReach::ThisHostOnly)
        );
        assert_eq!(reach("nfs", "rw,nolock"), Some(FlockReach::ThisHostOnly));
        assert_eq!(reach("lustre", "rw,flock"), Some(FlockReach::AcrossHosts));
        assert_eq!(
            reach("lustre", "rw,localflock"),
            Some(FlockReach::ThisHostOnly)
        );
        assert_eq!(reach("lustre", "rw"), Some(FlockReach::Unknown));
        assert_eq!(reach("ceph", "rw"), Some(FlockReach::AcrossHosts));
        assert_eq!(reach("gpfs", "rw"), Some(FlockReach::Unknown));
        assert_eq!(reach("beegfs", "rw"), Some(FlockReach::Unknown));
        assert_eq!(reach("fuse.glusterfs", "rw"), Some(FlockReach::Unknown));
        assert_eq!(
            shared(&line("lustre", "rw,localflock")).map(|s| s.describe()),
            Some("lustre at /mnt".to_string())
        );
    }
}
