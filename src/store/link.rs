//! A state file that is a symbolic link, as a writer resolves it: once, to
//! the real file, which is then written where it really is; and only when
//! nobody but root or that file's owner could have pointed the link, or a
//! directory on the way to the file, elsewhere. The tool often runs as root
//! in directories a fuzzing user can write: a link such a user planted must
//! never make it write a file of someone else's (`/etc/passwd`).
//!
//! The rule ([`judge`]), for the real file F and its owner U, the trusted
//! owners being root and U:
//!
//! 1. F is a regular file;
//! 2. every symbolic link followed to reach F (the one named and any met on
//!    the way) belongs to a trusted owner;
//! 3. every directory on F's real path, from `/` down to F's own, belongs to
//!    a trusted owner and is writable by neither its group nor others,
//!    unless it has the sticky bit and the entry taken from it (the next
//!    directory, or F) belongs to a trusted owner: in a sticky directory
//!    only an entry's owner, the directory's owner and root can rename or
//!    remove that entry.
//!
//! Each link is read through a descriptor of its own (`O_PATH|O_NOFOLLOW`,
//! then `fstat` and `readlinkat`), so the owner checked is the owner of the
//! link that was read. After the resolution the link is never used again:
//! what is written is F, by its real path, whose directories only root and
//! U can change.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::store::error::InputError;

/// How many links one resolution follows before it gives up (as the
/// kernel's `ELOOP`).
const MAX_LINKS: usize = 40;

/// A directory on the real path of the file, and the owner of the entry
/// taken from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirStep {
    /// The directory.
    pub path: PathBuf,
    /// Its owner.
    pub uid: u32,
    /// Its mode bits.
    pub mode: u32,
}

/// A symbolic link followed on the way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkStep {
    /// The link.
    pub path: PathBuf,
    /// Its owner.
    pub uid: u32,
}

/// What resolving a path met: the directories of the real path, `/` first,
/// each link followed, and the file itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Walk {
    /// The directories from `/` down to the file's own.
    pub dirs: Vec<DirStep>,
    /// The links followed, in order.
    pub links: Vec<LinkStep>,
    /// The real path of the file.
    pub file: PathBuf,
    /// Its owner.
    pub owner: u32,
    /// Whether it is a regular file.
    pub regular: bool,
}

/// A link a writer was named, resolved.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The real file, to be changed where it is.
    pub file: PathBuf,
    /// Why this tool must not write through the link, when it must not.
    pub refusal: Option<String>,
}

/// Whether the rule lets a writer change the file `walk` reached; why not
/// otherwise.
pub fn judge(walk: &Walk) -> Result<(), String> {
    let trusted = |uid: u32| uid == 0 || uid == walk.owner;
    let owner = |uid: u32| {
        format!(
            "uid {uid}, neither root nor the file's owner (uid {})",
            walk.owner
        )
    };
    if !walk.regular {
        return Err(format!("{} is not a regular file", walk.file.display()));
    }
    if let Some(link) = walk.links.iter().find(|l| !trusted(l.uid)) {
        return Err(format!(
            "the link {} belongs to {}",
            link.path.display(),
            owner(link.uid)
        ));
    }
    for (i, dir) in walk.dirs.iter().enumerate() {
        if !trusted(dir.uid) {
            return Err(format!(
                "the directory {} belongs to {}",
                dir.path.display(),
                owner(dir.uid)
            ));
        }
        let entry_uid = walk.dirs.get(i + 1).map_or(walk.owner, |next| next.uid);
        let writable = dir.mode & 0o022 != 0;
        let sticky = dir.mode & 0o1000 != 0;
        if writable && !(sticky && trusted(entry_uid)) {
            return Err(format!(
                "the directory {} is writable by {} (mode {:04o}{})",
                dir.path.display(),
                if dir.mode & 0o002 != 0 {
                    "others"
                } else {
                    "its group"
                },
                dir.mode & 0o7777,
                if sticky {
                    format!(", sticky, but the entry on the way belongs to uid {entry_uid}")
                } else {
                    ", no sticky bit".to_string()
                }
            ));
        }
    }
    Ok(())
}

/// Resolves the symbolic link `link` once, walking it component by
/// component, and judges the result ([`judge`]). An error when it cannot
/// be resolved (dangling, a loop, unreadable).
pub fn resolve(link: &Path) -> Result<Resolved, InputError> {
    let walk = walk(link).map_err(|e| InputError::io(link, &e))?;
    Ok(Resolved {
        refusal: judge(&walk).err(),
        file: walk.file,
    })
}

/// The metadata of `path` itself (a link is not followed), and the target
/// of a link, read through one descriptor.
fn look(path: &Path) -> io::Result<(rustix::fs::Stat, Option<PathBuf>)> {
    use rustix::fs::{CWD, FileType, Mode, OFlags};
    let fd = rustix::fs::openat(
        CWD,
        path,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::Symlink {
        return Ok((stat, None));
    }
    let target = rustix::fs::readlinkat(&fd, "", Vec::new())?.into_bytes();
    let target = <OsString as std::os::unix::ffi::OsStringExt>::from_vec(target);
    Ok((stat, Some(PathBuf::from(target))))
}

/// Walks `path` from `/` as the kernel resolves it, recording what
/// [`judge`] looks at.
pub fn walk(path: &Path) -> io::Result<Walk> {
    use rustix::fs::FileType;
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    let root = |dirs: &mut Vec<DirStep>| -> io::Result<()> {
        let (stat, _) = look(Path::new("/"))?;
        dirs.clear();
        dirs.push(DirStep {
            path: PathBuf::from("/"),
            uid: stat.st_uid,
            mode: stat.st_mode,
        });
        Ok(())
    };
    let mut dirs = Vec::new();
    root(&mut dirs)?;
    let mut links = Vec::new();
    let mut pending: Vec<OsString> = components(&absolute);
    pending.reverse();
    while let Some(name) = pending.pop() {
        let here = dirs.last().map(|d| d.path.clone()).unwrap_or_default();
        match name.to_str() {
            Some("/") => {
                root(&mut dirs)?;
                continue;
            }
            Some(".") => continue,
            Some("..") => {
                if dirs.len() > 1 {
                    dirs.pop();
                }
                continue;
            }
            _ => {}
        }
        let next = here.join(&name);
        let (stat, target) = look(&next)?;
        if let Some(target) = target {
            links.push(LinkStep {
                path: next,
                uid: stat.st_uid,
            });
            if links.len() > MAX_LINKS {
                return Err(io::Error::from_raw_os_error(libc::ELOOP));
            }
            let mut more = components(&target);
            more.reverse();
            pending.extend(more);
            continue;
        }
        let kind = FileType::from_raw_mode(stat.st_mode);
        if kind == FileType::Directory && !pending.is_empty() {
            dirs.push(DirStep {
                path: next,
                uid: stat.st_uid,
                mode: stat.st_mode,
            });
            continue;
        }
        if !pending.is_empty() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        return Ok(Walk {
            dirs,
            links,
            file: next,
            owner: stat.st_uid,
            regular: kind == FileType::RegularFile,
        });
    }
    // The path ends in a directory.
    Err(io::Error::from_raw_os_error(libc::EISDIR))
}

/// The components of `path` as names, `/` for the root.
fn components(path: &Path) -> Vec<OsString> {
    path.components()
        .map(|c| match c {
            Component::RootDir => OsString::from("/"),
            Component::CurDir => OsString::from("."),
            Component::ParentDir => OsString::from(".."),
            Component::Normal(name) => name.to_os_string(),
            Component::Prefix(p) => p.as_os_str().to_os_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn dir(path: &str, uid: u32, mode: u32) -> DirStep {
        DirStep {
            path: PathBuf::from(path),
            uid,
            mode: 0o40000 | mode,
        }
    }

    /// A file of `owner` at /d/f, reached through a link of `link_uid`.
    fn walk_to(owner: u32, link_uid: u32, dirs: Vec<DirStep>) -> Walk {
        Walk {
            dirs,
            links: vec![LinkStep {
                path: PathBuf::from("/state/.work_leases.jsonl"),
                uid: link_uid,
            }],
            file: PathBuf::from("/d/f"),
            owner,
            regular: true,
        }
    }

    #[test]
    fn a_link_is_trusted_when_root_or_the_file_owner_made_it() {
        let dirs = || vec![dir("/", 0, 0o755), dir("/d", 1000, 0o755)];
        assert_eq!(judge(&walk_to(1000, 1000, dirs())), Ok(()));
        assert_eq!(judge(&walk_to(1000, 0, dirs())), Ok(()));
        assert_eq!(
            judge(&walk_to(1000, 2000, dirs())),
            Err("the link /state/.work_leases.jsonl belongs to uid 2000, neither root nor the file's owner (uid 1000)".into())
        );
        // A link a fuzzing user planted to a file of root's.
        let etc = vec![dir("/", 0, 0o755), dir("/etc", 0, 0o755)];
        assert!(judge(&walk_to(0, 1000, etc)).is_err());
    }

    #[test]
    fn every_directory_on_the_way_belongs_to_root_or_the_owner_and_is_not_writable_by_others() {
        let with = |d: DirStep| vec![dir("/", 0, 0o755), d];
        assert_eq!(
            judge(&walk_to(1000, 1000, with(dir("/d", 2000, 0o755)))),
            Err("the directory /d belongs to uid 2000, neither root nor the file's owner (uid 1000)".into())
        );
        assert_eq!(
            judge(&walk_to(1000, 1000, with(dir("/d", 1000, 0o777)))),
            Err("the directory /d is writable by others (mode 0777, no sticky bit)".into())
        );
        assert_eq!(
            judge(&walk_to(1000, 1000, with(dir("/d", 1000, 0o775)))),
            Err("the directory /d is writable by its group (mode 0775, no sticky bit)".into())
        );
        // Sticky, as /tmp: an entry of a trusted owner cannot be moved.
        assert_eq!(
            judge(&walk_to(1000, 1000, with(dir("/d", 0, 0o1777)))),
            Ok(())
        );
        // …but one of another user's can be, by that user.
        let walk = Walk {
            dirs: vec![
                dir("/", 0, 0o755),
                dir("/tmp", 0, 0o1777),
                dir("/tmp/x", 2000, 0o755),
            ],
            ..walk_to(1000, 1000, Vec::new())
        };
        assert_eq!(
            judge(&walk),
            Err("the directory /tmp is writable by others (mode 1777, sticky, but the entry on the way belongs to uid 2000)".into())
        );
        let walk = Walk {
            dirs: vec![dir("/", 0, 0o755), dir("/tmp", 0, 0o1777)],
            owner: 1000,
            ..walk_to(1000, 1000, Vec::new())
        };
        assert_eq!(judge(&walk), Ok(()), "a file of the owner's in /tmp");
        let walk = Walk {
            dirs: vec![dir("/", 0, 0o755), dir("/tmp", 2000, 0o1777)],
            ..walk_to(1000, 1000, Vec::new())
        };
        assert!(
            judge(&walk).is_err(),
            "a sticky directory of another user's"
        );
        let walk = Walk {
            regular: false,
            ..walk_to(1000, 1000, vec![dir("/", 0, 0o755)])
        };
        assert_eq!(judge(&walk), Err("/d/f is not a regular file".into()));
    }

    #[test]
    fn the_walk_follows_links_on_the_way_and_records_each() {
        let home = tempfile::tempdir().unwrap();
        let base = fs_canonical(home.path());
        let me = std::fs::metadata(&base).unwrap().uid();
        std::fs::create_dir(base.join("real")).unwrap();
        std::fs::write(base.join("real/journal.jsonl"), b"").unwrap();
        std::os::unix::fs::symlink("real", base.join("via")).unwrap();
        std::fs::create_dir(base.join("state")).unwrap();
        std::os::unix::fs::symlink("../via/./journal.jsonl", base.join("state/j")).unwrap();
        let walk = walk(&base.join("state/j")).unwrap();
        assert_eq!(walk.file, base.join("real/journal.jsonl"));
        assert_eq!(walk.owner, me);
        let links: Vec<&Path> = walk.links.iter().map(|l| l.path.as_path()).collect();
        assert_eq!(links, [base.join("state/j"), base.join("via")]);
        assert_eq!(walk.dirs.last().unwrap().path, base.join("real"));
        assert_eq!(walk.dirs[0].path, Path::new("/"));
        assert_eq!(judge(&walk), Ok(()));
        // The file's directory made writable by everyone: refused.
        std::fs::set_permissions(base.join("real"), std::fs::Permissions::from_mode(0o777))
            .unwrap();
        let refused = judge(&super::walk(&base.join("state/j")).unwrap()).unwrap_err();
        assert!(refused.contains("writable by others"), "{refused}");
        // A loop and a dangling link are errors.
        std::os::unix::fs::symlink("loop", base.join("loop")).unwrap();
        assert_eq!(
            super::walk(&base.join("loop")).unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
        std::os::unix::fs::symlink("nowhere", base.join("dangling")).unwrap();
        assert!(super::walk(&base.join("dangling")).is_err());
    }

    fn fs_canonical(path: &Path) -> PathBuf {
        std::fs::canonicalize(path).unwrap()
    }
}
