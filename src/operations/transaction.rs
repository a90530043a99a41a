//! The write transaction every writing command shares: resolve a path into
//! the files to change, then for each one plan → lock → backup → publish →
//! re-read, through [`durable`], the only code that writes. A backup or an
//! export made for a change that then fails before anything changed is
//! removed again, and the error says so.

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::operations::durable::{self, Identity, MasterLock, WriteError};
use crate::operations::exit::Exit;
use crate::operations::input::InputError;
use crate::operations::plan::{Mode, Outcome, Report, StateView, TailFix};
use crate::operations::statedir::{self, Kind};
use crate::operations::words::plural;

/// How a writing command writes: the options the face parsed.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// Carry the plan out (`--apply`).
    pub apply: bool,
    /// Only say whether there is something to do (`--check`).
    pub check: bool,
    /// Write the result to this new file instead (`--output`).
    pub output: Option<PathBuf>,
    /// Keep no backup of a file changed in place (`--no-backup`).
    pub no_backup: bool,
    /// Where backups go (`--backup-dir`), else next to the file.
    pub backup_dir: Option<PathBuf>,
    /// How long to wait for the master's lock (`--lock-timeout`).
    pub lock_timeout: Option<f64>,
    /// The kind of a file PATH, when given (`--kind`).
    pub kind: Option<Kind>,
}

/// Where a run's notes on stderr go ("backed up … to …", "waiting for …"):
/// the face says them; an operation never prints.
pub type Tell<'a> = &'a (dyn Fn(std::fmt::Arguments<'_>) + Sync);

/// A running write: the mode, the lock (held until dropped) and the
/// backup stamp.
pub struct Session<'a> {
    args: &'a WriteOptions,
    tell: Tell<'a>,
    /// How it writes.
    pub mode: Mode,
    _lock: Option<MasterLock>,
    stamp: String,
    /// Backups and exports made for the file being changed: removed again
    /// when its change fails before anything was changed, since they then
    /// copy a file that is still there as it was.
    companions: std::cell::RefCell<Vec<PathBuf>>,
    /// What to tell about them ("backed up … to …"), said once the file's
    /// change is made, or dropped with them.
    notes: std::cell::RefCell<Vec<String>>,
}

impl<'a> Session<'a> {
    /// Starts a run on `dir` (the state directory, or a file's directory):
    /// in apply mode, takes the master's lock first.
    pub fn start(
        args: &'a WriteOptions,
        tell: Tell<'a>,
        dir: &Path,
        targets: usize,
    ) -> anyhow::Result<Session<'a>> {
        let mode = match (&args.output, args.apply, args.check) {
            (Some(_), _, _) => Mode::Output,
            (None, true, _) => Mode::Apply,
            (None, false, true) => Mode::Check,
            (None, false, false) => Mode::DryRun,
        };
        if mode == Mode::Output && targets != 1 {
            anyhow::bail!(
                "{}: is a directory; --output takes a single file PATH (nothing was written)",
                dir.display()
            );
        }
        let lock = if mode == Mode::Apply {
            let wait = args.lock_timeout.map(Duration::from_secs_f64);
            Some(MasterLock::acquire(dir, wait, |pids| {
                // Say on a terminal why nothing happens yet.
                if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                    let who: Vec<String> = pids.iter().map(|p| format!("pid {p}")).collect();
                    tell(format_args!(
                        "waiting up to {} for {} to release {}",
                        crate::operations::words::duration(args.lock_timeout.unwrap_or(0.0)),
                        if who.is_empty() {
                            "a running master".to_string()
                        } else {
                            who.join(", ")
                        },
                        dir.join(crate::operations::statedir::MASTER_LOCK).display()
                    ));
                }
            })?)
        } else {
            None
        };
        let stamp = jiff::Timestamp::now()
            .strftime("%Y%m%dT%H%M%SZ")
            .to_string();
        Ok(Session {
            args,
            tell,
            mode,
            _lock: lock,
            stamp,
            companions: Default::default(),
            notes: Default::default(),
        })
    }

    /// A file's outcome before anything is written.
    pub fn outcome<P: serde::Serialize>(
        &self,
        path: &Path,
        kind: Kind,
        plan: P,
        removed_temp_files: Vec<String>,
    ) -> Outcome<P> {
        Outcome {
            path: path.display().to_string(),
            kind,
            plan,
            written: false,
            backup: None,
            output: None,
            removed_temp_files,
            note: None,
            keeps_backup: self.keeps_backup(),
            late_appends_carried: None,
        }
    }

    /// Whether a change in place keeps a backup.
    pub fn keeps_backup(&self) -> bool {
        !self.args.no_backup
    }

    /// The UTC stamp of this run, as backups and exports carry it.
    pub fn stamp(&self) -> &str {
        &self.stamp
    }

    /// Whether this run writes (`--apply` or `--output`).
    pub fn writes(&self) -> bool {
        matches!(self.mode, Mode::Apply | Mode::Output)
    }

    /// Removes this tool's stale temporary files for `path` (apply mode).
    pub fn clean_temps(&self, path: &Path) -> Vec<String> {
        if self.mode != Mode::Apply {
            return Vec::new();
        }
        durable::remove_stale_temps(path)
            .into_iter()
            .map(|p| p.display().to_string())
            .collect()
    }

    /// Before a change in place: checks that `path` is still the file that
    /// was read (`identity`), then backs it up unless --no-backup: a hard
    /// link of `replaced`, the original's descriptor, when the change
    /// renames a new file over it, else a copy ([`durable::backup`]).
    pub fn backup(
        &self,
        path: &Path,
        identity: &Identity,
        replaced: Option<&File>,
    ) -> Result<Option<String>, WriteError> {
        identity.check(path)?;
        if self.args.no_backup {
            return Ok(None);
        }
        let dest = durable::backup(path, self.args.backup_dir.as_deref(), &self.stamp, replaced)?;
        self.made(
            &dest,
            format!("backed up {} to {}", path.display(), dest.display()),
        );
        Ok(Some(dest.display().to_string()))
    }

    /// Records a file made for the change of the current file (a backup,
    /// the discard export) and the note that tells of it: the note is said
    /// once the change is made; if the change fails before anything was
    /// changed, the file is removed again and the error says so instead.
    pub fn made(&self, companion: &Path, note: String) {
        self.companions.borrow_mut().push(companion.to_path_buf());
        self.notes.borrow_mut().push(note);
    }

    /// Handles one file: when `change` fails before anything was changed,
    /// removes the backups and exports made for it and says so.
    fn change<T>(&self, change: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
        self.companions.borrow_mut().clear();
        self.notes.borrow_mut().clear();
        let before = durable::changes().len();
        let result = change();
        let made = std::mem::take(&mut *self.companions.borrow_mut());
        let notes = std::mem::take(&mut *self.notes.borrow_mut());
        if result.is_ok() || durable::changes().len() > before {
            for note in notes {
                (self.tell)(format_args!("{note}"));
            }
        }
        match result {
            Err(err) if durable::changes().len() == before && !made.is_empty() => {
                let (removed, left): (Vec<&PathBuf>, Vec<&PathBuf>) =
                    made.iter().partition(|p| durable::remove_copy(p));
                let list = |paths: &[&PathBuf]| {
                    paths
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let mut message = format!("{err:#}");
                if !removed.is_empty() {
                    message.push_str(&format!("; removed {} again", list(&removed)));
                }
                if !left.is_empty() {
                    message.push_str(&format!(
                        "; {} (a copy of the unchanged file) could not be removed",
                        list(&left)
                    ));
                }
                Err(anyhow::anyhow!(message))
            }
            other => other,
        }
    }

    /// Replaces `path` in place with what `produce` writes (see
    /// [`durable::replace_in_place`]), backing it up right before the
    /// rename. Returns what was published and the backup made.
    pub fn replace_in_place(
        &self,
        path: &Path,
        original: &durable::Original<'_>,
        produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
        check: impl FnOnce(&mut durable::Reread<'_>) -> Result<durable::Publish, String> + Send,
    ) -> Result<(durable::Published, Option<String>), WriteError> {
        let identity = Identity::of(original.meta);
        let mut backup = None;
        let published = durable::replace_in_place(path, original, produce, check, || {
            backup = self.backup(path, &identity, Some(original.file))?;
            Ok(())
        })?;
        Ok((published, backup))
    }

    /// Backs `path` up, then seals its tail and appends `bytes` in place
    /// and re-reads it ([`append_and_check`]). `file`, the descriptor the
    /// plan was read through, is closed first: the append's write lease
    /// shares the file with no other descriptor. Returns the backup and,
    /// when a torn tail was ended with a newline instead of cut, the tail
    /// fix that was carried out.
    pub fn append_in_place(
        &self,
        path: &Path,
        file: File,
        identity: &Identity,
        (tail, bytes, after): (&TailFix, &[u8], &StateView),
    ) -> Result<(Option<String>, Option<TailFix>), WriteError> {
        // A copy: the append writes to the inode a link would share.
        let backup = self.backup(path, identity, None)?;
        drop(file);
        let sealed = append_and_check(path, identity, tail, bytes, after)?;
        let ended = (sealed == durable::Sealed::Terminated).then_some(TailFix::Terminate {
            offset: identity.size(),
        });
        Ok((backup, ended))
    }

    /// The `--output` file.
    pub fn output(&self) -> Option<&Path> {
        self.args.output.as_deref()
    }

    /// Where the result for `path` is written: the `--output` file, or
    /// `path` itself.
    pub fn destination<'p>(&'p self, path: &'p Path) -> &'p Path {
        self.output().unwrap_or(path)
    }
}

/// Runs a writing subcommand over PATH: resolves the files (keeping the
/// kinds `wanted`), starts the session (the lock, in apply mode) and
/// handles each file in resume order.
pub fn run_files<P: serde::Serialize>(
    command: &'static str,
    schema_version: u32,
    path: &Path,
    args: &WriteOptions,
    tell: Tell<'_>,
    wanted: &[Kind],
    each: impl FnMut(&Session<'_>, &Path, Kind) -> anyhow::Result<Outcome<P>>,
) -> anyhow::Result<Report<P>> {
    run_paths(
        command,
        schema_version,
        std::slice::from_ref(&path.to_path_buf()),
        args,
        tell,
        wanted,
        each,
    )
}

/// [`run_files`] over several PATHs, one after the other, each under its
/// own directory's lock. Every PATH is resolved before anything is locked
/// or written, so a bad one changes nothing.
pub fn run_paths<P: serde::Serialize>(
    command: &'static str,
    schema_version: u32,
    paths: &[PathBuf],
    args: &WriteOptions,
    tell: Tell<'_>,
    wanted: &[Kind],
    mut each: impl FnMut(&Session<'_>, &Path, Kind) -> anyhow::Result<Outcome<P>>,
) -> anyhow::Result<Report<P>> {
    if args.output.is_some() && paths.len() != 1 {
        anyhow::bail!("--output takes a single file PATH");
    }
    // Refused before anything is read: the destination must be new, in a
    // directory that exists.
    if let Some(out) = &args.output {
        if std::fs::symlink_metadata(out).is_ok() {
            return Err(WriteError::Exists { path: out.clone() }.into());
        }
        let dir = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            anyhow::bail!(
                "{}: no such directory for --output {}; nothing was written",
                dir.display(),
                out.display()
            );
        }
    }
    let resolved = paths
        .iter()
        .map(|path| targets(path, args.kind, wanted).map(|t| (path, t)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut report = Report {
        schema_version,
        command,
        mode: Mode::DryRun,
        files: Vec::new(),
    };
    for (path, (dir, files)) in resolved {
        let session = Session::start(args, tell, &dir, if path.is_dir() { 2 } else { 1 })?;
        report.mode = session.mode;
        for (file, kind) in &files {
            report
                .files
                .push(session.change(|| each(&session, file, *kind))?);
        }
    }
    Ok(report)
}

/// A compaction drops the lines upstream ignores; refuses when those hide
/// records that `repair` can bring back, so that no lease is lost.
pub fn refuse_hidden(path: &Path, hidden_records: usize) -> anyhow::Result<()> {
    if hidden_records > 0 {
        anyhow::bail!(
            "{}: {} hidden in lines upstream ignores (glued, behind a byte order mark or before a zero fill) would be dropped; run `leasejournal repair --apply {}` first. Nothing was changed",
            path.display(),
            plural(hidden_records as u64, "record is", "records are"),
            crate::operations::words::shell_quote(&path.display().to_string())
        );
    }
    Ok(())
}

/// The exit status of a writing run: with `--check`, 1 when any file's
/// plan would change something (`is_noop` says it would not); otherwise 0.
pub fn exit_for<P: serde::Serialize>(report: &Report<P>, is_noop: impl Fn(&P) -> bool) -> Exit {
    if report.mode == Mode::Check && report.files.iter().any(|o| !is_noop(&o.plan)) {
        Exit::Problems
    } else {
        Exit::Success
    }
}

/// Resolves PATH into the files to change, in the order the master reads
/// them on resume, keeping the kinds `wanted`; and the lock directory.
pub fn targets(
    path: &Path,
    kind: Option<Kind>,
    wanted: &[Kind],
) -> Result<(PathBuf, Vec<(PathBuf, Kind)>), InputError> {
    if crate::operations::input::is_stdin(path) {
        return Err(InputError::new(
            path,
            "this command changes files and does not read standard input; name the journal",
        ));
    }
    let meta = std::fs::metadata(path).map_err(|e| InputError::io(path, &e))?;
    if meta.is_dir() {
        let dir = statedir::examine(path, None)?;
        let files: Vec<(PathBuf, Kind)> = dir
            .files
            .into_iter()
            .filter(|(_, k)| wanted.contains(k))
            .collect();
        if files.is_empty() {
            return Err(InputError::new(
                path,
                "contains no file this command changes",
            ));
        }
        return Ok((path.to_path_buf(), files));
    }
    // A FIFO, a device or an unreadable file is refused before anything
    // (the master's lock included) is touched.
    statedir::open_regular(path)?;
    let kind = match kind.or_else(|| statedir::kind_from_name(path)) {
        Some(k) => k,
        None => {
            let (mut file, _) = statedir::open_regular(path)?;
            let mut prefix = Vec::new();
            (&mut file)
                .take(64 << 10)
                .read_to_end(&mut prefix)
                .map_err(|e| InputError::io(path, &e))?;
            statedir::kind_from_content(&prefix).ok_or_else(|| {
                InputError::new(
                    path,
                    "neither a lease journal nor a state snapshot; name the kind with --kind",
                )
            })?
        }
    };
    if !wanted.contains(&kind) {
        return Err(InputError::new(
            path,
            format!(
                "is a {}, which this command does not change",
                kind_name(kind)
            ),
        ));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, vec![(path.to_path_buf(), kind)]))
}

/// `journal` or `snapshot`.
pub fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Journal => "journal",
        Kind::Snapshot => "snapshot",
    }
}

/// A read error of `path`, in words.
pub fn read_error(path: &Path) -> impl Fn(io::Error) -> anyhow::Error + Copy + '_ {
    move |e| {
        anyhow::anyhow!(
            "{}: read error: {}",
            path.display(),
            crate::operations::words::in_words(&e)
        )
    }
}

/// The source opened for a pass, checked to be the file that was planned;
/// its read errors name it ([`durable::Source`]).
pub fn reopen(path: &Path, identity: &Identity) -> io::Result<BufReader<durable::Source<File>>> {
    let (file, meta) = durable::open_target(path).map_err(|e| {
        let err = match e {
            WriteError::Io { err, .. } => err,
            other => io::Error::other(other.to_string()),
        };
        durable::source_error(path, err)
    })?;
    if Identity::of(&meta) != *identity {
        return Err(durable::source_error(
            path,
            io::Error::other("it changed since it was read"),
        ));
    }
    Ok(BufReader::with_capacity(
        1 << 20,
        durable::Source::new(path, file),
    ))
}

/// A sink that compares what is written with a reader's bytes. Once they
/// differ it only counts: the reader and its buffer are dropped.
pub struct CompareSink<R: Read> {
    src: Option<R>,
    scratch: Vec<u8>,
    /// Bytes written so far.
    pub written: u64,
    /// Whether everything written so far matched.
    pub equal: bool,
}

impl<R: Read> CompareSink<R> {
    /// Compares against `src`.
    pub fn new(src: R) -> Self {
        CompareSink {
            src: Some(src),
            scratch: Vec::new(),
            written: 0,
            equal: true,
        }
    }

    /// Whether the output equalled the whole source.
    pub fn finish(self) -> io::Result<(u64, bool)> {
        let at_end = match self.src {
            Some(mut src) => src.read(&mut [0u8; 1])? == 0,
            None => false,
        };
        Ok((self.written, self.equal && at_end))
    }
}

impl<R: Read> Write for CompareSink<R> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(src) = &mut self.src {
            if self.scratch.len() < buf.len() {
                self.scratch.resize(buf.len(), 0);
            }
            let theirs = &mut self.scratch[..buf.len()];
            let mut got = 0;
            while got < buf.len() {
                let n = src.read(&mut theirs[got..])?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            if got < buf.len() || theirs != buf {
                self.equal = false;
                self.src = None;
                self.scratch = Vec::new();
            }
        }
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes everything to two writers.
pub struct Tee<'a> {
    /// The first.
    pub a: &'a mut dyn Write,
    /// The second.
    pub b: &'a mut dyn Write,
}

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.a.write_all(buf)?;
        self.b.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.a.flush()?;
        self.b.flush()
    }
}

/// The note of a torn tail ended with a newline instead of cut.
pub const TERMINATED: &str = "the torn tail was ended with a newline instead of cut: no lease could be had on the journal (another process has it open, or leases are refused here), and without one a cut could destroy what another process appends; the torn bytes stay as one line upstream ignores";

/// After an append whose torn tail was `ended` with a newline instead of
/// cut: the plan's tail says what was done, and the note why.
pub fn record_ended(tail: &mut TailFix, note: &mut Option<String>, ended: Option<TailFix>) {
    if let Some(ended) = ended {
        *tail = ended;
        *note = Some(TERMINATED.into());
    }
}

/// Appends records in place (sealing the tail first, or only sealing it
/// when `bytes` is empty) to the file read as `identity`, and re-reads it
/// to confirm it replays to the planned state. No other descriptor of
/// `path` may be open (see [`durable::append`]).
pub fn append_and_check(
    path: &Path,
    identity: &Identity,
    tail: &TailFix,
    bytes: &[u8],
    after: &StateView,
) -> Result<durable::Sealed, WriteError> {
    use crate::operations::durable::Seal;
    let seal = match tail {
        TailFix::None => Seal::Clean,
        TailFix::Cut { offset, .. } => Seal::Truncate(*offset),
        TailFix::Terminate { .. } => Seal::Newline,
    };
    let appended = durable::append(path, identity, seal, bytes)?;
    let unconfirmed = |failed: String| WriteError::AfterChange {
        path: path.to_path_buf(),
        done: "was changed".into(),
        failed,
    };
    let (reread, _) = durable::open_target(path)
        .map_err(|e| unconfirmed(format!("re-reading it to confirm the change failed: {e}")))?;
    // What this run wrote ends at `appended.end`; anything beyond was
    // appended by another process afterwards.
    crate::operations::plan::check_replay(BufReader::new(reread.take(appended.end)), after)
        .map_err(|detail| {
            unconfirmed(format!(
                "re-reading it did not confirm the planned state ({detail})"
            ))
        })?;
    Ok(appended.sealed)
}
