//! State files that are symbolic links, and runs that change nothing: a
//! link is resolved once and its real file changed where it is, under the
//! state directory's lock, unless someone other than root or the file's
//! owner could have pointed it (or a directory on the way) elsewhere; a
//! dry run always shows its plan; a run that changes nothing (refused, or
//! nothing to do) leaves nothing it created, its lock file included.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::schema;
use crate::support::{fixture, lj, names};

const JOURNAL: &str = ".work_leases.jsonl";

/// A state directory whose journal is a link to `target`, in a directory
/// of its own beside `home`'s real directory; both canonical.
fn linked_state(home: &Path, target: &Path) -> PathBuf {
    let state = home.join("state");
    fs::create_dir(&state).unwrap();
    std::os::unix::fs::symlink(target, state.join(JOURNAL)).unwrap();
    state
}

/// A canonical temporary directory.
fn home() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = fs::canonicalize(dir.path()).unwrap();
    (dir, path)
}

/// A real journal in `home/real/` (mode 0755) with these bytes.
fn real_journal(home: &Path, bytes: &[u8]) -> PathBuf {
    let real = home.join("real");
    fs::create_dir(&real).unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o755)).unwrap();
    let journal = real.join(JOURNAL);
    fs::write(&journal, bytes).unwrap();
    journal
}

/// stdout, stderr and the exit status of `args` on `path`.
fn run(args: &[&str], path: &Path) -> (String, String, i32) {
    let out = lj().args(args).arg(path).output().unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap_or(-1),
    )
}

/// The dry-run output of `args` on the real file named directly, with the
/// lines a link adds after its first line.
fn through_link(args: &[&str], real: &Path, added: &str) -> String {
    let (direct, stderr, code) = run(args, real);
    assert_eq!(
        (stderr.as_str(), code),
        ("", 0),
        "{args:?} on {}",
        real.display()
    );
    let (first, rest) = direct.split_once('\n').unwrap();
    format!("{first}\n{added}{rest}")
}

#[test]
fn a_symlinked_journal_is_repaired_where_it_is_under_the_state_directorys_lock() {
    let (_keep, home) = home();
    let bytes = fs::read(fixture("verify/unterminated-tail/journal.jsonl")).unwrap();
    let real = real_journal(&home, &bytes);
    let state = linked_state(&home, &real);
    let link = state.join(JOURNAL);
    let added = format!(
        "  link        {} is a symbolic link to it\n",
        link.display()
    );
    // The dry run and --check show the plan, as for the file itself.
    let (stdout, stderr, code) = run(&["repair"], &state);
    assert_eq!(stdout, through_link(&["repair"], &real, &added));
    assert_eq!((stderr.as_str(), code), ("", 0));
    let (stdout, stderr, code) = run(&["repair", "--check"], &state);
    let (direct, _, _) = run(&["repair", "--check"], &real);
    let (first, rest) = direct.split_once('\n').unwrap();
    assert_eq!(stdout, format!("{first}\n{added}{rest}"));
    assert_eq!((stderr.as_str(), code), ("", 1));
    assert_eq!(
        names(&state),
        [JOURNAL],
        "nothing written, created or locked"
    );
    // --apply writes the real file in its own directory, and takes the
    // lock of the state directory, where the master takes it.
    let out = lj()
        .args(["repair", "--apply", "--format=json"])
        .arg(&state)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: schema::Repair = schema::parse(&out.stdout);
    let file = report.only();
    assert_eq!(file.path, real.display().to_string());
    assert_eq!(
        file.link,
        Some(schema::Link {
            path: link.display().to_string(),
            refused: None
        })
    );
    let backup = file.backup.clone().unwrap();
    assert_eq!(
        stderr,
        format!("leasejournal: backed up {} to {backup}\n", real.display())
    );
    assert!(Path::new(&backup).starts_with(home.join("real")));
    assert!(fs::read(&real).unwrap() == [bytes.as_slice(), b"\n"].concat());
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(names(&state), [".master-queue.lock", JOURNAL]);
}

#[test]
fn a_link_planted_to_etc_passwd_is_never_written_through() {
    let passwd = Path::new("/etc/passwd");
    let (bytes, meta) = (fs::read(passwd).unwrap(), fs::metadata(passwd).unwrap());
    let (_keep, home) = home();
    let state = linked_state(&home, passwd);
    let link = state.join(JOURNAL);
    // Run as root (CI), the link is given to nobody, as a fuzzing user
    // would plant it; otherwise it is the test's own.
    if fs::metadata(&home).unwrap().uid() == 0 {
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    }
    let planter = fs::symlink_metadata(&link).unwrap().uid();
    assert_ne!(planter, meta.uid(), "the link is not /etc/passwd's owner's");
    let why = format!(
        "the link {} belongs to uid {planter}, neither root nor the file's owner (uid {})",
        link.display(),
        meta.uid()
    );
    let writers: [&[&str]; 4] = [
        &["repair", "--apply"],
        &["compact", "--apply", "--drop-hidden"],
        &["migrate", "--rewrite", "--apply", "--now=1754560000"],
        &[
            "recover",
            "--discard",
            "--all",
            "--apply",
            "--now=1754560000",
        ],
    ];
    for args in writers {
        let (stdout, stderr, code) = run(args, &state);
        assert_eq!(
            (stdout.as_str(), stderr, code),
            (
                "",
                format!(
                    "leasejournal: {}: is a symbolic link to /etc/passwd; refusing to write through it: {why}. Nothing was changed; a dry run shows the plan\n",
                    link.display()
                ),
                2
            ),
            "{args:?}"
        );
        assert_eq!(
            names(&state),
            [JOURNAL],
            "{args:?}: no lock file, nothing new"
        );
    }
    // The dry run shows the plan and says that --apply refuses.
    let (stdout, stderr, code) = run(&["repair"], &state);
    assert_eq!((stderr.as_str(), code), ("", 0));
    assert!(
        stdout.contains(&format!(
            "  refused     --apply refuses to write through it: {why}\n"
        )),
        "{stdout}"
    );
    let now = fs::metadata(passwd).unwrap();
    assert!(
        fs::read(passwd).unwrap() == bytes,
        "/etc/passwd is unchanged"
    );
    assert_eq!(
        (now.ino(), now.len(), now.mtime(), now.mtime_nsec()),
        (meta.ino(), meta.len(), meta.mtime(), meta.mtime_nsec())
    );
}

#[test]
fn a_link_into_a_directory_others_can_write_is_refused_and_one_with_the_sticky_bit_is_not() {
    let (_keep, home) = home();
    let torn = fs::read(fixture("verify/torn-tail/journal.jsonl")).unwrap();
    let real = real_journal(&home, &torn);
    let real_dir = home.join("real");
    fs::set_permissions(&real_dir, fs::Permissions::from_mode(0o777)).unwrap();
    let state = linked_state(&home, &real);
    let link = state.join(JOURNAL);
    let why = format!(
        "the directory {} is writable by others (mode 0777, no sticky bit)",
        real_dir.display()
    );
    let (stdout, stderr, code) = run(&["repair", "--apply"], &state);
    assert_eq!(
        (stdout.as_str(), stderr, code),
        (
            "",
            format!(
                "leasejournal: {}: is a symbolic link to {}; refusing to write through it: {why}. Nothing was changed; a dry run shows the plan\n",
                link.display(),
                real.display()
            ),
            2
        )
    );
    assert_eq!(names(&state), [JOURNAL]);
    assert_eq!(names(&real_dir), [JOURNAL]);
    assert!(fs::read(&real).unwrap() == torn);
    // The dry run: the plan, and the refusal.
    let added = format!(
        "  link        {} is a symbolic link to it\n  refused     --apply refuses to write through it: {why}\n",
        link.display()
    );
    let (stdout, stderr, code) = run(&["repair"], &state);
    fs::set_permissions(&real_dir, fs::Permissions::from_mode(0o755)).unwrap();
    let expected = through_link(&["repair"], &real, &added);
    assert_eq!((stdout, stderr.as_str(), code), (expected, "", 0));
    // With the sticky bit, only the file's owner (or root) can move it.
    fs::set_permissions(&real_dir, fs::Permissions::from_mode(0o1777)).unwrap();
    let (_, stderr, code) = run(&["repair", "--apply", "--no-backup"], &state);
    assert_eq!((stderr.as_str(), code), ("", 0));
    assert!(fs::read(&real).unwrap() == torn[..torn.len() - 18]);
}

#[test]
fn a_run_that_changes_nothing_leaves_no_lock_file_it_created() {
    let torn = fs::read(fixture("verify/torn-tail/journal.jsonl")).unwrap();
    let legacy = fs::read(fixture("samples/legacy_demo.input.jsonl")).unwrap();
    let writers: [(&[&str], &[u8]); 4] = [
        (&["repair", "--apply"], &torn),
        (&["compact", "--apply"], &torn[..torn.len() - 18]),
        (
            &["migrate", "--rewrite", "--apply", "--now=1754560000"],
            &legacy,
        ),
        (
            &[
                "recover",
                "--discard",
                "--all",
                "--apply",
                "--now=1754560000",
            ],
            &torn,
        ),
    ];
    for (args, bytes) in writers {
        // Refused after the lock was taken, before any change; then again
        // with a lock file that was there, which stays.
        let (_keep, dir) = home();
        fs::write(dir.join(JOURNAL), bytes).unwrap();
        for left in [vec![JOURNAL], vec![".master-queue.lock", JOURNAL]] {
            let out = lj()
                .args(args)
                .arg(&dir)
                .env("LEASEJOURNAL_FAILPOINTS", "planned=error")
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            assert_eq!(
                String::from_utf8_lossy(&out.stderr),
                "leasejournal: No space left on device (os error 28)\n",
                "{args:?}"
            );
            assert!(out.stdout.is_empty(), "{args:?}");
            assert_eq!(
                names(&dir),
                left,
                "{args:?}: no lock, temp or backup it made"
            );
            assert!(fs::read(dir.join(JOURNAL)).unwrap() == bytes, "{args:?}");
            fs::write(dir.join(".master-queue.lock"), b"").unwrap();
        }
    }
    // Nothing to do: nothing left either.
    let (_keep, dir) = home();
    fs::write(dir.join(JOURNAL), &torn[..torn.len() - 18]).unwrap();
    let (stdout, stderr, code) = run(&["repair", "--apply"], &dir);
    assert_eq!((stderr.as_str(), code), ("", 0));
    assert!(stdout.contains("nothing to repair"), "{stdout}");
    assert_eq!(names(&dir), [JOURNAL]);
}
