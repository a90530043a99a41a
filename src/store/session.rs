//! The write session every writing command shares: the files a path names
//! ([`run_paths`]), then for each one lock → plan (the command) → backup
//! → publish → re-read, through `store::durable`, the only code that
//! writes. A command hands the session what to publish ([`Publication`]);
//! the session decides where (`--output` or in place), keeps the backup,
//! confirms the result and returns what it changed. A backup or an export
//! made for a change that then fails before anything changed is removed
//! again, and the error says so.

use std::fs::{File, Metadata};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::engine::journal::{Positional, Replay, StateView, TailFix, write_sealed};
use crate::store::durable::HeldLock;
use crate::store::durable::{
    self, Change, ChangeLog, Done, Identity, Publish, Seal, Sealed, StaleTemps, WriteError,
};
use crate::store::error::{InputError, in_words};
use crate::store::format::{self, Kind};
use crate::store::ledger::{self, LedgerDir};
use crate::store::lock::Holder;
use crate::store::path::parent_or_dot;
use crate::store::progress::Progress;
use crate::store::resolve::{self, Purpose, Target};

/// How a writing command writes: the options the face parsed.
#[derive(Clone, Debug)]
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
    /// The operator says no master runs on another host
    /// (`--remote-master none`): needed to change a directory on a shared
    /// file system whose `flock` does not reach other hosts.
    pub no_remote_master: bool,
    /// The kind of a file PATH, when given (`--kind`).
    pub kind: Option<Kind>,
    /// The face's clock: the UTC stamp (`20261130T073645Z`) that the
    /// backups and exports of a directory carry, read once its session has
    /// the lock, so that a wait for a master does not date them early.
    pub stamp: fn() -> String,
}

/// Where a run's notes go: the face says them (and decides whether a note
/// is worth saying where it goes); the store never prints.
pub trait Notes: Sync {
    /// A note for stderr: "backed up … to …".
    fn say(&self, note: std::fmt::Arguments<'_>);
    /// The run waits up to `timeout` seconds for the master's lock `lock`,
    /// which `holders` hold (empty when `/proc` cannot tell).
    fn waiting(&self, lock: &Path, holders: &[Holder], timeout: f64);
}

/// The notes of a run, as the operations pass them on.
pub type Tell<'a> = &'a dyn Notes;

/// How a run writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Print the plan only.
    DryRun,
    /// Print the plan; exit 1 if it would change anything (`--check`).
    Check,
    /// Change files in place.
    Apply,
    /// Write the result to `--output`.
    Output,
}

/// A symbolic link a writer was named, resolved once
/// ([`crate::store::link`]).
#[derive(Clone, Debug, Serialize)]
pub struct Link {
    /// The link, as named.
    pub path: String,
    /// Why `--apply` refuses to write through it, when it does (a dry run,
    /// `--check` and `--output` only read through it).
    pub refused: Option<String>,
}

/// A file a writing run changes: the real file, its kind, and the link
/// that named it.
#[derive(Clone, Debug)]
pub struct Named {
    /// The file to change (a link's real file).
    pub path: PathBuf,
    /// Its kind.
    pub kind: Kind,
    /// The link that named it, if one did.
    pub link: Option<Link>,
}

impl Named {
    /// `path` of `kind`, resolved once when it is a symbolic link.
    fn resolve(path: PathBuf, kind: Kind) -> Result<Named, InputError> {
        let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            return Ok(Named {
                path,
                kind,
                link: None,
            });
        }
        let resolved = crate::store::link::resolve(&path)?;
        Ok(Named {
            path: resolved.file,
            kind,
            link: Some(Link {
                path: path.display().to_string(),
                refused: resolved.refusal,
            }),
        })
    }

    /// The refusal of `--apply` to write through its link, before anything
    /// is locked or written.
    fn refusal(&self) -> Option<anyhow::Error> {
        let link = self.link.as_ref()?;
        let why = link.refused.as_ref()?;
        Some(anyhow::anyhow!(
            "{}: is a symbolic link to {}; refusing to write through it: {why}. Nothing was changed; a dry run shows the plan",
            link.path,
            self.path.display()
        ))
    }
}

/// What happened to one file.
#[derive(Debug, Serialize)]
pub struct Outcome<P: Serialize> {
    /// The file.
    pub path: String,
    /// `journal` or `snapshot`.
    pub kind: Kind,
    /// The plan.
    pub plan: P,
    /// Whether anything was written.
    pub written: bool,
    /// The backup made, if any.
    pub backup: Option<String>,
    /// The `--output` file written, if any.
    pub output: Option<String>,
    /// Stale temporary files of this tool removed under the lock.
    pub removed_temp_files: Vec<String>,
    /// Stale temporary files of this tool that could not be removed (or
    /// the directory that could not be listed to find them), each with
    /// why: they stay, and the run's exit status is 5.
    pub stale_temp_files_left: Vec<durable::Leftover>,
    /// A remark ("nothing to do", …).
    pub note: Option<String>,
    /// Whether a change in place keeps a backup (no `--no-backup`).
    pub keeps_backup: bool,
    /// The symbolic link PATH named, when it named one: `path` is the file
    /// it was resolved to, once, and changed where it is. Absent for a
    /// file that is no link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<Link>,
    /// Records another process appended to the journal while it was being
    /// replaced (it ignores the master's lock), carried into the result.
    /// Absent when there were none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_appends_carried: Option<durable::Carried>,
}

/// What a run over its paths did: the mode, each file's outcome in the
/// order they were handled, and every change it made.
#[derive(Debug)]
pub struct Run<P: Serialize> {
    /// How it wrote.
    pub mode: Mode,
    /// Per file.
    pub files: Vec<Outcome<P>>,
    /// The changes made, in order (none in a dry run or `--check`).
    pub changes: Vec<Change>,
}

impl<P: Serialize> Run<P> {
    /// A run over no state file, in the mode `args` ask for (a `repair`
    /// that names only fenced lease tables).
    pub fn empty(args: &WriteOptions) -> Run<P> {
        Run {
            mode: mode_of(args),
            files: Vec::new(),
            changes: Vec::new(),
        }
    }
}

/// A run that failed after it had changed files: the error, and the
/// changes made before it (exit status 4). Its message is the error's.
#[derive(Debug)]
pub struct FailedAfterChanges {
    /// What failed.
    pub error: anyhow::Error,
    /// What had been changed by then, in order.
    pub changes: Vec<Change>,
    /// How the run wrote, and the outcomes of the files it had finished
    /// (as their report's JSON has them), when the run got that far.
    pub finished: Option<(Mode, serde_json::Value)>,
}

impl std::fmt::Display for FailedAfterChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for FailedAfterChanges {}

impl FailedAfterChanges {
    /// `error`, carrying `changes` when there are any (exit status 4), and
    /// what the run had `finished`; as it is when nothing was changed.
    pub fn after(
        error: anyhow::Error,
        changes: Vec<Change>,
        finished: Option<(Mode, serde_json::Value)>,
    ) -> anyhow::Error {
        if changes.is_empty() {
            return error;
        }
        FailedAfterChanges {
            error,
            changes,
            finished,
        }
        .into()
    }
}

/// Replays what a reader holds and compares it with the planned state.
pub fn check_replay(src: impl Read + Send, planned: &StateView) -> Result<(), String> {
    // Sized for the planned state up front: growing the completed set by
    // doubling would briefly hold two copies of it.
    let replay = Replay::with_capacity(planned.active, planned.completed);
    let scan = crate::engine::journal::scan_into(src, replay, &mut ())
        .map_err(|e| format!("re-read failed: {}", in_words(&e)))?;
    let got = StateView::of(&scan.replay);
    if &got == planned {
        Ok(())
    } else {
        Err(format!(
            "planned {} active, {} completed, digest {}; found {} active, {} completed, digest {}",
            planned.active,
            planned.completed,
            &planned.digest[..16],
            got.active,
            got.completed,
            &got.digest[..16]
        ))
    }
}

/// The check of a result that must replay to `after`.
pub fn replays_to(after: &StateView) -> Check<'_> {
    Box::new(move |f: &mut durable::Reread<'_>| check_replay(f, after).map(|()| Publish::Yes))
}

/// The note of a torn tail ended with a newline instead of cut.
const TERMINATED: &str = "the torn tail was ended with a newline instead of cut: no lease could be had on the journal (another process has it open, or leases are refused here), and without one a cut could destroy what another process appends; the torn bytes stay as one line upstream ignores";

/// A file opened to be changed, as it was read: the descriptor the plan
/// is read through (held open through the publish) and its identity.
pub struct Opened<'p> {
    /// The path.
    pub path: &'p Path,
    /// The open file (no symlink, a regular file).
    pub file: File,
    /// Its metadata as read.
    pub meta: Metadata,
    /// The version that was read.
    pub identity: Identity,
}

impl<'p> Opened<'p> {
    /// Opens `path` to be changed.
    pub fn open(path: &'p Path) -> Result<Opened<'p>, WriteError> {
        let (file, meta) = durable::open_target(path)?;
        let identity = Identity::of(&meta);
        Ok(Opened {
            path,
            file,
            meta,
            identity,
        })
    }

    /// Scans the whole file once through `scan`, showing the reading to
    /// `progress`; a read error names the file.
    pub fn scan<T>(
        &self,
        progress: &dyn Progress,
        scan: impl FnOnce(Positional<'_>) -> io::Result<T>,
    ) -> anyhow::Result<T> {
        let meter = progress.meter(self.path, self.meta.len());
        let advance = |n| meter.advance(n);
        let result = scan(Positional::file(&self.file, self.meta.len()).with_progress(&advance))
            .map_err(read_error(self.path));
        meter.finish();
        result
    }

    /// The version that was read, to open again for another pass.
    pub fn version(&self) -> Version<'p> {
        Version {
            path: self.path,
            identity: self.identity,
        }
    }

    /// The file opened again for another pass, checked to be the version
    /// that was planned; its read errors name it.
    pub fn reopen(&self) -> io::Result<BufReader<durable::Source<File>>> {
        self.version().reopen()
    }
}

/// The version of a file that was read, without its descriptor: what a
/// result is written from, opened again for each pass.
#[derive(Clone, Copy, Debug)]
pub struct Version<'p> {
    /// The path.
    pub path: &'p Path,
    /// The version that was read.
    pub identity: Identity,
}

impl Version<'_> {
    /// The file opened again, checked to be this version; its read errors
    /// name it.
    pub fn reopen(&self) -> io::Result<BufReader<durable::Source<File>>> {
        reopen(self.path, &self.identity)
    }
}

/// Writes a result, as a rewrite or an `--output` file holds it.
pub type Produce<'a> = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + 'a>;

/// Confirms a result as it is read back while it is written, or finds it
/// needless.
pub type Check<'a> =
    Box<dyn FnOnce(&mut durable::Reread<'_>) -> Result<Publish, String> + Send + 'a>;

/// What a command publishes for one file.
pub enum Publication<'a> {
    /// The file rewritten whole: `produce` writes the result and `check`
    /// confirms what it reads back. In place, records another process
    /// appends meanwhile are carried into the result when
    /// `carry_late_appends` (a journal; a snapshot is replaced whole by its
    /// writer).
    Rewrite {
        /// Writes the result.
        produce: Produce<'a>,
        /// Confirms the result as it is read back, or finds it needless.
        check: Check<'a>,
        /// Whether late appends are carried in.
        carry_late_appends: bool,
    },
    /// Records appended in place after the tail is sealed (`bytes` may be
    /// empty: only the seal); the file must then replay to `after`. To
    /// `--output`, `copy` writes what the new file holds instead.
    Append {
        /// What happens to the end first.
        tail: &'a TailFix,
        /// The records.
        bytes: &'a [u8],
        /// The state the result replays to.
        after: &'a StateView,
        /// The file as sealed and appended to, written whole (`--output`).
        copy: Produce<'a>,
    },
}

impl<'a> Publication<'a> {
    /// Records appended after the tail is sealed, to the file `version`
    /// was read from; to `--output`, that file sealed and appended to.
    pub fn sealed_append(
        version: Version<'a>,
        tail: &'a TailFix,
        bytes: &'a [u8],
        after: &'a StateView,
    ) -> Publication<'a> {
        Publication::Append {
            tail,
            bytes,
            after,
            copy: Box::new(move |out: &mut dyn Write| {
                write_sealed(version.reopen()?, tail, out)?;
                out.write_all(bytes)
            }),
        }
    }
}

/// What publishing one file did.
#[derive(Debug, Default)]
pub struct Published {
    /// Whether anything was written (a rewrite that changes nothing is
    /// not).
    pub written: bool,
    /// The backup made, if any.
    pub backup: Option<String>,
    /// The `--output` file written, if any.
    pub output: Option<String>,
    /// Records another process appended during a rewrite, carried in.
    pub carried: Option<durable::Carried>,
    /// A torn tail that was ended with a newline instead of cut (no lease
    /// could be had): what was done instead.
    pub ended: Option<TailFix>,
}

impl Published {
    /// Puts what was published into a file's outcome.
    pub fn record<P: Serialize>(self, outcome: &mut Outcome<P>) {
        self.record_sealing(outcome, |_| None);
    }

    /// [`record`](Published::record) for a plan that seals the file's end:
    /// a torn tail ended with a newline instead of cut replaces the plan's
    /// tail (`tail_of`) and the note says why.
    pub fn record_sealing<P: Serialize>(
        self,
        outcome: &mut Outcome<P>,
        tail_of: impl FnOnce(&mut P) -> Option<&mut TailFix>,
    ) {
        outcome.written |= self.written;
        if self.backup.is_some() {
            outcome.backup = self.backup;
        }
        if self.output.is_some() {
            outcome.output = self.output;
        }
        if self.carried.is_some() {
            outcome.late_appends_carried = self.carried;
        }
        if let Some(ended) = self.ended
            && let Some(tail) = tail_of(&mut outcome.plan)
        {
            *tail = ended;
            outcome.note = Some(TERMINATED.into());
        }
    }
}

/// A running write over one directory: the mode, the lock (held until
/// dropped), and the changes of the whole run.
pub struct Session<'a> {
    args: &'a WriteOptions,
    tell: Tell<'a>,
    /// How it writes.
    pub mode: Mode,
    lock: Option<HeldLock>,
    stamp: String,
    changes: &'a ChangeLog,
    /// Backups and exports made for the file being changed: removed again
    /// when its change fails before anything was changed, since they then
    /// copy a file that is still there as it was.
    companions: std::cell::RefCell<Vec<PathBuf>>,
    /// What to tell about them ("backed up … to …"), said once the file's
    /// change is made, or dropped with them.
    notes: std::cell::RefCell<Vec<String>>,
    /// The files this run backed up.
    backed_up: std::cell::RefCell<Vec<PathBuf>>,
}

/// How a run writes, from its options.
fn mode_of(args: &WriteOptions) -> Mode {
    match (&args.output, args.apply, args.check) {
        (Some(_), _, _) => Mode::Output,
        (None, true, _) => Mode::Apply,
        (None, false, true) => Mode::Check,
        (None, false, false) => Mode::DryRun,
    }
}

impl<'a> Session<'a> {
    /// Starts a run on `dir` (the state directory, or a file's directory)
    /// for `targets` files: in apply mode, takes the master's lock first.
    fn start(
        args: &'a WriteOptions,
        tell: Tell<'a>,
        changes: &'a ChangeLog,
        dir: &Path,
        targets: usize,
    ) -> anyhow::Result<Session<'a>> {
        let mode = mode_of(args);
        if mode == Mode::Output && targets != 1 {
            anyhow::bail!(
                "{}: is a directory; --output takes a single file PATH (nothing was written)",
                dir.display()
            );
        }
        if mode == Mode::Apply
            && !args.no_remote_master
            && let Some(mount) = crate::store::mount::lock_stays_here(dir)
        {
            anyhow::bail!(
                "{}: on {}, where flock does not keep out a master on another host ({}): make sure no master runs on any other host, then pass --remote-master none (nothing was changed)",
                dir.display(),
                mount.describe(),
                mount.flock_because
            );
        }
        let lock = if mode == Mode::Apply {
            let wait = args.lock_timeout.map(Duration::from_secs_f64);
            Some(HeldLock::acquire(dir, wait, |lock, holders| {
                tell.waiting(lock, holders, args.lock_timeout.unwrap_or(0.0))
            })?)
        } else {
            None
        };
        Ok(Session {
            args,
            tell,
            mode,
            lock,
            stamp: (args.stamp)(),
            changes,
            companions: Default::default(),
            notes: Default::default(),
            backed_up: Default::default(),
        })
    }

    /// Ends the run on this directory: gives the master's lock up, and
    /// when the run created the lock file and changed nothing (refused, or
    /// nothing to do), removes it first, so that such a run leaves nothing
    /// it created ([`HeldLock::release`]); a failure to is said.
    fn end(self, changed_nothing: bool) {
        let Some(lock) = self.lock else { return };
        if let Err(err) = lock.release(changed_nothing) {
            self.tell.say(format_args!(
                "warning: the master lock this run created could not be removed again: {err}"
            ));
        }
    }

    /// A file's outcome before anything is written, with what
    /// [`clean_temps`](Session::clean_temps) did.
    pub fn outcome<P: Serialize>(
        &self,
        path: &Path,
        kind: Kind,
        plan: P,
        temps: StaleTemps,
    ) -> Outcome<P> {
        Outcome {
            path: path.display().to_string(),
            kind,
            plan,
            written: false,
            backup: None,
            output: None,
            removed_temp_files: temps
                .removed
                .into_iter()
                .map(|p| p.display().to_string())
                .collect(),
            stale_temp_files_left: temps.left,
            note: None,
            keeps_backup: !self.args.no_backup,
            link: None,
            late_appends_carried: None,
        }
    }

    /// Removes this tool's stale temporary files for `path` in apply mode
    /// (under the lock, no run of this tool can be writing them): the
    /// files removed, and those that stay, each said on stderr.
    pub fn clean_temps(&self, path: &Path) -> StaleTemps {
        if self.mode != Mode::Apply {
            return StaleTemps::default();
        }
        let temps = durable::remove_stale_temps(path);
        for left in &temps.left {
            self.tell.say(format_args!(
                "warning: {}: {}; it stays (exit status 5)",
                left.path, left.error
            ));
        }
        temps
    }

    /// The UTC stamp of this run, as backups and exports carry it.
    pub fn stamp(&self) -> &str {
        &self.stamp
    }

    /// Whether a change in place keeps a backup (no `--no-backup`).
    pub fn keeps_backup(&self) -> bool {
        !self.args.no_backup
    }

    /// Whether this run writes (`--apply` or `--output`).
    pub fn writes(&self) -> bool {
        matches!(self.mode, Mode::Apply | Mode::Output)
    }

    /// Before a change in place: checks that `path` is still the file that
    /// was read (`identity`), then backs it up unless --no-backup or this
    /// run backed it up already (a ledger file written twice: its first
    /// backup is the original, a second would hold what this run wrote a
    /// moment before): a hard link of `replaced`, the original's
    /// descriptor, when the change renames a new file over it, else a copy
    /// ([`durable::backup`]).
    fn backup(
        &self,
        path: &Path,
        identity: &Identity,
        replaced: Option<&File>,
    ) -> Result<Option<String>, WriteError> {
        identity.check(path)?;
        if self.args.no_backup || self.backed_up.borrow().iter().any(|p| p == path) {
            return Ok(None);
        }
        let dest = durable::backup(path, self.args.backup_dir.as_deref(), &self.stamp, replaced)?;
        self.made(
            &dest,
            format!("backed up {} to {}", path.display(), dest.display()),
        );
        self.backed_up.borrow_mut().push(path.to_path_buf());
        Ok(Some(dest.display().to_string()))
    }

    /// Creates the new file `path` (which must not exist) with `bytes`,
    /// durably: an export made for the change of the current file. It is
    /// removed again, and `note` not said, if that change fails before
    /// anything was changed.
    pub fn export(&self, path: &Path, bytes: &[u8], note: String) -> Result<(), WriteError> {
        durable::create_new(path, bytes)?;
        self.made(path, note);
        Ok(())
    }

    /// Records a file made for the change of the current file (a backup,
    /// the discard export) and the note that tells of it: the note is said
    /// once the change is made; if the change fails before anything was
    /// changed, the file is removed again and the error says so instead.
    fn made(&self, companion: &Path, note: String) {
        self.companions.borrow_mut().push(companion.to_path_buf());
        self.notes.borrow_mut().push(note);
    }

    /// Handles one file: when `change` fails before anything was changed,
    /// removes the backups and exports made for it and says so.
    fn change<T>(&self, change: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
        self.companions.borrow_mut().clear();
        self.notes.borrow_mut().clear();
        let before = self.changes.len();
        let result = change();
        let made = std::mem::take(&mut *self.companions.borrow_mut());
        let notes = std::mem::take(&mut *self.notes.borrow_mut());
        if result.is_ok() || self.changes.len() > before {
            for note in notes {
                self.tell.say(format_args!("{note}"));
            }
        }
        match result {
            Err(err) if self.changes.len() == before && !made.is_empty() => {
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

    /// Publishes `publication` for the file `opened`: to the `--output`
    /// file, or in place. In place, a rewrite is backed up (a hard link of
    /// the original) right before the rename, once it is known to change
    /// something; an append is backed up (a copy) before it, `opened`'s
    /// descriptor closed first, since the append's write lease shares the
    /// file with no other descriptor. A session that does not
    /// [`write`](Session::writes) (a dry run, `--check`) publishes nothing:
    /// only `--apply` holds the master's lock.
    pub fn publish(
        &self,
        opened: Opened<'_>,
        publication: Publication<'_>,
    ) -> Result<Published, WriteError> {
        if !self.writes() {
            return Ok(Published::default());
        }
        let path = opened.path;
        if let Some(dest) = &self.args.output {
            let (produce, check): (Produce<'_>, Check<'_>) = match publication {
                Publication::Rewrite { produce, check, .. } => (produce, check),
                Publication::Append { after, copy, .. } => (copy, replays_to(after)),
            };
            let published = durable::write_new(self.changes, dest, produce, check)?;
            let written = published == Publish::Yes;
            return Ok(Published {
                written,
                output: written.then(|| dest.display().to_string()),
                ..Published::default()
            });
        }
        // A newline after a complete last record is published as a
        // rewrite: written in place, a power loss on a file system that
        // may persist the new size before the data can leave the record
        // followed by a NUL, and upstream then skips it.
        let publication = match publication {
            Publication::Append {
                tail: TailFix::Terminate { .. },
                after,
                copy,
                ..
            } => Publication::Rewrite {
                produce: copy,
                check: replays_to(after),
                carry_late_appends: true,
            },
            other => other,
        };
        match publication {
            Publication::Rewrite {
                produce,
                check,
                carry_late_appends,
            } => {
                let original = durable::Original {
                    file: &opened.file,
                    meta: &opened.meta,
                    carry_late_appends,
                };
                let mut backup = None;
                let published = durable::replace_in_place(
                    self.changes,
                    path,
                    &original,
                    produce,
                    check,
                    || {
                        backup = self.backup(path, &opened.identity, Some(&opened.file))?;
                        Ok(())
                    },
                )?;
                let written = published.publish == Publish::Yes;
                Ok(Published {
                    written,
                    backup: if written { backup } else { None },
                    carried: published.carried,
                    ..Published::default()
                })
            }
            Publication::Append {
                tail, bytes, after, ..
            } => {
                // A copy: the append writes to the inode a link would share.
                let backup = self.backup(path, &opened.identity, None)?;
                let identity = opened.identity;
                drop(opened);
                let sealed = append_and_check(self.changes, path, &identity, tail, bytes, after)?;
                Ok(Published {
                    written: true,
                    backup,
                    ended: (sealed == Sealed::Terminated).then_some(TailFix::Terminate {
                        offset: identity.size(),
                    }),
                    ..Published::default()
                })
            }
        }
    }
}

impl Session<'_> {
    /// Creates the new file `path` (which must not exist) in place, as a
    /// rewrite writes its result: through a temporary file that `check`
    /// confirms as it is written, then named `path` and the directory
    /// fsynced. A session that does not write creates nothing, and neither
    /// does one writing to `--output` (which names a single file PATH).
    pub fn create(
        &self,
        path: &Path,
        produce: Produce<'_>,
        check: Check<'_>,
    ) -> Result<Published, WriteError> {
        if self.mode != Mode::Apply {
            return Ok(Published::default());
        }
        let published = durable::write_new(self.changes, path, produce, check)?;
        Ok(Published {
            written: published == Publish::Yes,
            ..Published::default()
        })
    }

    /// Removes the file `opened` in place, backed up first (a hard link of
    /// it, else a copy) unless --no-backup ([`durable::remove_in_place`]).
    /// Only `--apply` removes anything.
    pub fn remove(&self, opened: Opened<'_>) -> Result<Published, WriteError> {
        if self.mode != Mode::Apply {
            return Ok(Published::default());
        }
        let original = durable::Original {
            file: &opened.file,
            meta: &opened.meta,
            carry_late_appends: false,
        };
        let mut backup = None;
        durable::remove_in_place(self.changes, opened.path, &original, || {
            backup = self.backup(opened.path, &opened.identity, Some(&opened.file))?;
            Ok(())
        })?;
        Ok(Published {
            written: true,
            backup,
            ..Published::default()
        })
    }
}

/// The digest ledger a writing command changes: its directory
/// (`.state_shards/`) as PATH named it, examined before the lock was
/// taken, and whether PATH named all of it or one of its files.
#[derive(Clone, Debug)]
pub struct LedgerTarget {
    /// The directory, and the shard files in it (one, for a file PATH).
    pub dir: LedgerDir,
    /// PATH named the whole ledger (a state directory or `.state_shards/`),
    /// not one of its files.
    pub whole: bool,
}

impl LedgerTarget {
    /// The ledger looked at again, under the lock: what a master wrote
    /// before it stopped counts.
    pub fn examine(&self) -> Result<LedgerDir, InputError> {
        if self.whole {
            return ledger::examine(&self.dir.path);
        }
        let mut files = Vec::new();
        for entry in &self.dir.shards {
            if let Some(dir) = ledger::single(&entry.path)? {
                files.extend(dir.shards);
            }
        }
        Ok(LedgerDir {
            shards: files,
            ..self.dir.clone()
        })
    }
}

/// What a writer's PATH names when the command changes the digest ledger
/// too: the lock directory, the state files of the kinds `wanted`, and the
/// ledger. `.state_shards/` and a `processed.NNN.log` in it take the lock
/// of the state directory they belong to (a ledger file elsewhere, that
/// of its own directory); a state directory holding only a ledger is one.
fn targets_with_ledger(
    path: &Path,
    kind: Option<Kind>,
    wanted: &[Kind],
) -> Result<(PathBuf, Vec<Named>, Option<LedgerTarget>), InputError> {
    if kind.is_none() {
        if ledger::is_ledger_dir(path) {
            let dir = ledger::examine(path)?;
            let lock_dir = parent_or_dot(path).to_path_buf();
            return Ok((
                lock_dir,
                Vec::new(),
                Some(LedgerTarget { dir, whole: true }),
            ));
        }
        if let Some(dir) = ledger::single(path)? {
            let lock_dir = if dir
                .path
                .file_name()
                .is_some_and(|n| n == format::LEDGER_DIR)
            {
                parent_or_dot(&dir.path).to_path_buf()
            } else {
                parent_or_dot(path).to_path_buf()
            };
            return Ok((
                lock_dir,
                Vec::new(),
                Some(LedgerTarget { dir, whole: false }),
            ));
        }
    }
    let (dir, files, ledger) = state_files_to_change(path, kind, wanted)?;
    let ledger = ledger.map(|dir| LedgerTarget { dir, whole: true });
    if files.is_empty() && ledger.is_none() {
        return Err(no_file_to_change(path));
    }
    Ok((dir, files, ledger))
}

/// Changes a digest ledger: called once for each ledger a run's paths
/// name, under the lock of its state directory, after that directory's
/// state files.
pub type EachLedger<'f, L> = &'f mut dyn FnMut(&Session<'_>, &LedgerTarget) -> anyhow::Result<L>;

/// Runs a writing command over `paths`, one after the other, each under
/// its own directory's lock: resolves each into the files to change
/// (keeping the kinds `wanted`), in the order the master reads them on
/// resume, and hands each to `each`. Every PATH is resolved before
/// anything is locked or written, so a bad one changes nothing. An error
/// after a change comes as [`FailedAfterChanges`].
pub fn run_paths<P: Serialize>(
    paths: &[PathBuf],
    args: &WriteOptions,
    tell: Tell<'_>,
    wanted: &[Kind],
    each: impl FnMut(&Session<'_>, &Path, Kind) -> anyhow::Result<Outcome<P>>,
) -> anyhow::Result<Run<P>> {
    run_all::<P, ()>(paths, args, tell, wanted, each, None).map(|(run, _)| run)
}

/// [`run_paths`] for a command that changes the digest ledger too: a
/// state directory's `.state_shards/`, that directory itself, or one of
/// its files are handed to `ledger` (after the directory's state files,
/// under the same lock). Returns the run and each ledger's result.
pub fn run_paths_and_ledgers<P: Serialize, L>(
    paths: &[PathBuf],
    args: &WriteOptions,
    tell: Tell<'_>,
    wanted: &[Kind],
    each: impl FnMut(&Session<'_>, &Path, Kind) -> anyhow::Result<Outcome<P>>,
    ledger: EachLedger<'_, L>,
) -> anyhow::Result<(Run<P>, Vec<L>)> {
    run_all(paths, args, tell, wanted, each, Some(ledger))
}

fn run_all<P: Serialize, L>(
    paths: &[PathBuf],
    args: &WriteOptions,
    tell: Tell<'_>,
    wanted: &[Kind],
    mut each: impl FnMut(&Session<'_>, &Path, Kind) -> anyhow::Result<Outcome<P>>,
    mut ledger: Option<EachLedger<'_, L>>,
) -> anyhow::Result<(Run<P>, Vec<L>)> {
    if args.output.is_some() && paths.len() != 1 {
        anyhow::bail!("--output takes a single file PATH");
    }
    // Refused before anything is read: the destination must be new, in a
    // directory that exists.
    if let Some(out) = &args.output {
        if std::fs::symlink_metadata(out).is_ok() {
            return Err(WriteError::Exists { path: out.clone() }.into());
        }
        let dir = parent_or_dot(out);
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
        .map(|path| {
            if ledger.is_some() {
                targets_with_ledger(path, args.kind, wanted)
            } else {
                files_to_change(path, args.kind, wanted).map(|(dir, files)| (dir, files, None))
            }
            .map(|t| (path, t))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // A link that must not be written through is refused before anything
    // is locked or created.
    if mode_of(args) == Mode::Apply
        && let Some(refusal) = resolved
            .iter()
            .flat_map(|(_, (_, files, _))| files)
            .find_map(Named::refusal)
    {
        return Err(refusal);
    }
    let changes = ChangeLog::default();
    let mut run = Run {
        mode: mode_of(args),
        files: Vec::new(),
        changes: Vec::new(),
    };
    let mut ledgers = Vec::new();
    let result = (|| {
        for (path, (dir, files, target)) in resolved {
            let targets = if path.is_dir() { 2 } else { 1 };
            let session = Session::start(args, tell, &changes, &dir, targets)?;
            let before = changes.len();
            let done = files.iter().try_for_each(|file| {
                let mut outcome = session.change(|| each(&session, &file.path, file.kind))?;
                outcome.link = file.link.clone();
                run.files.push(outcome);
                anyhow::Ok(())
            });
            let done = match (done, target, ledger.as_mut()) {
                (Ok(()), Some(target), Some(change)) => session
                    .change(|| change(&session, &target))
                    .map(|l| ledgers.push(l)),
                (done, ..) => done,
            };
            session.end(changes.len() == before);
            done?;
        }
        Ok(())
    })();
    run.changes = changes.to_vec();
    match result {
        Ok(()) => Ok((run, ledgers)),
        Err(error) => {
            let files = serde_json::to_value(&run.files).unwrap_or(serde_json::Value::Null);
            Err(FailedAfterChanges::after(
                error,
                run.changes,
                Some((run.mode, files)),
            ))
        }
    }
}

/// Resolves PATH into the files to change, in the order the master reads
/// them on resume, keeping the kinds `wanted`; and the lock directory,
/// which stays the state directory PATH names (or the directory of a file
/// PATH) when a file is a symbolic link to a file elsewhere.
pub fn files_to_change(
    path: &Path,
    kind: Option<Kind>,
    wanted: &[Kind],
) -> Result<(PathBuf, Vec<Named>), InputError> {
    let (dir, files, _) = state_files_to_change(path, kind, wanted)?;
    if files.is_empty() {
        return Err(no_file_to_change(path));
    }
    Ok((dir, files))
}

/// [`files_to_change`], none of them perhaps, and the digest ledger of a
/// state directory PATH.
fn state_files_to_change(
    path: &Path,
    kind: Option<Kind>,
    wanted: &[Kind],
) -> Result<(PathBuf, Vec<Named>, Option<LedgerDir>), InputError> {
    match resolve::resolve(path, kind, Purpose::Change { wanted })? {
        Target::Directory(dir) => {
            let files = dir
                .files
                .into_iter()
                .filter(|(_, k)| wanted.contains(k))
                .map(|(file, kind)| Named::resolve(file, kind))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((path.to_path_buf(), files, dir.ledger))
        }
        Target::File { path, kind, .. } => Ok((
            parent_or_dot(&path).to_path_buf(),
            vec![Named::resolve(path, kind)?],
            None,
        )),
    }
}

fn no_file_to_change(path: &Path) -> InputError {
    InputError::new(path, "contains no file this command changes")
}

/// Whether a run left stale temporary files of this tool it could not
/// remove, or could not look for them (`Exit::of_write` makes it exit
/// status 5).
pub fn left_behind<P: Serialize>(run: &Run<P>) -> bool {
    run.files
        .iter()
        .any(|o| !o.stale_temp_files_left.is_empty())
}

/// Whether a `--check` run found something to change: any file whose plan
/// `is_noop` says is not a no-op (`Exit::of_check` makes it the exit
/// status).
pub fn would_change<P: Serialize>(run: &Run<P>, is_noop: impl Fn(&P) -> bool) -> bool {
    run.mode == Mode::Check && run.files.iter().any(|o| !is_noop(&o.plan))
}

/// A read error of `path`, in words.
pub fn read_error(path: &Path) -> impl Fn(io::Error) -> anyhow::Error + Copy + '_ {
    move |e| anyhow::anyhow!("{}: read error: {}", path.display(), in_words(&e))
}

/// The source opened for a pass, checked to be the file that was planned;
/// its read errors name it ([`durable::Source`]).
fn reopen(path: &Path, identity: &Identity) -> io::Result<BufReader<durable::Source<File>>> {
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
            io::Error::other("it changed since it was read (another writer?); nothing was written"),
        ));
    }
    Ok(BufReader::with_capacity(
        1 << 20,
        durable::Source::new(path, file),
    ))
}

/// Appends records in place (sealing the tail first, or only sealing it
/// when `bytes` is empty) to the file read as `identity`, and re-reads it
/// to confirm it replays to the planned state. No other descriptor of
/// `path` may be open (see [`durable::append`]).
fn append_and_check(
    changes: &ChangeLog,
    path: &Path,
    identity: &Identity,
    tail: &TailFix,
    bytes: &[u8],
    after: &StateView,
) -> Result<Sealed, WriteError> {
    let seal = match tail {
        TailFix::None => Seal::Clean,
        TailFix::Cut { offset, .. } => Seal::Truncate(*offset),
        TailFix::Terminate { .. } => Seal::Newline,
    };
    let appended = durable::append(changes, path, identity, seal, bytes)?;
    let unconfirmed = |failed: String| WriteError::AfterChange {
        path: path.to_path_buf(),
        done: Done::Changed,
        failed,
    };
    let (reread, _) = durable::open_target(path)
        .map_err(|e| unconfirmed(format!("re-reading it to confirm the change failed: {e}")))?;
    // What this run wrote ends at `appended.end`; anything beyond was
    // appended by another process afterwards.
    check_replay(BufReader::new(reread.take(appended.end)), after).map_err(|detail| {
        unconfirmed(format!(
            "re-reading it did not confirm the planned state ({detail})"
        ))
    })?;
    Ok(appended.sealed)
}
