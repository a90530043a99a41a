//! The options every writing command shares: `--apply`, `--check`,
//! `--output`, the backup and lock options, and `--kind`.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use super::Finished;
use super::output::{Format, KindArg, OutputArgs};
use crate::operations::exit::Exit;
use crate::operations::numbers::duration;
use crate::operations::report::{Command, FailedReport, Report};
use crate::render::Styles;
use crate::store::lock::Holder;
use crate::store::session::{FailedAfterChanges, Notes, WriteOptions};

/// `--apply`, `--check`, `--output` and the backup and lock options.
#[derive(Clone, Debug, Args)]
pub struct WriteArgs {
    /// Carry the plan out. Without it nothing is written, created or locked.
    /// A state file that is a symbolic link is changed where its real file
    /// is, and only when root or that file's owner owns the link and every
    /// directory on the way (see WRITING in the man page).
    #[arg(long = "apply")]
    pub apply: bool,

    /// Print the plan as a dry run does, then exit 1 if it would change
    /// anything and 0 if there is nothing to do. Writes nothing.
    #[arg(long = "check", conflicts_with_all = ["apply", "output"])]
    pub check: bool,

    /// Write the result to this new file instead and leave the source
    /// untouched (a single file PATH only; the file must not exist).
    #[arg(long = "output", value_name = "FILE", conflicts_with = "apply")]
    pub output: Option<PathBuf>,

    /// Do not keep a backup of a file changed in place.
    #[arg(long = "no-backup", conflicts_with = "output")]
    pub no_backup: bool,

    /// Keep backups in DIR instead of next to the file.
    #[arg(long = "backup-dir", value_name = "DIR", conflicts_with_all = ["no_backup", "output"])]
    pub backup_dir: Option<PathBuf>,

    /// Wait up to SECONDS for a running master to release the lock instead
    /// of failing at once.
    #[arg(long = "lock-timeout", allow_negative_numbers = true, value_name = "SECONDS", value_parser = parse_timeout)]
    pub lock_timeout: Option<f64>,

    /// Read a file PATH as this kind instead of detecting it.
    #[arg(long = "kind", value_enum, value_name = "KIND")]
    pub kind: Option<KindArg>,

    /// Say that no master runs on any other host. Needed to --apply in a
    /// directory on a shared file system whose flock does not reach other
    /// hosts (NFS local_lock=flock, Lustre localflock, GPFS, BeeGFS, …):
    /// there no lock keeps a master on another host out.
    #[arg(long = "remote-master", value_enum, value_name = "MODE")]
    pub remote_master: Option<NoRemoteMaster>,
}

/// The one answer a writer takes to `--remote-master`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NoRemoteMaster {
    /// No master runs on any other host.
    None,
}

impl WriteArgs {
    /// The options as the operations take them, with the clock that dates
    /// backups and exports.
    pub fn options(&self) -> WriteOptions {
        WriteOptions {
            apply: self.apply,
            check: self.check,
            output: self.output.clone(),
            no_backup: self.no_backup,
            backup_dir: self.backup_dir.clone(),
            lock_timeout: self.lock_timeout,
            no_remote_master: self.remote_master.is_some(),
            kind: self.kind.map(KindArg::kind),
            stamp: || {
                jiff::Timestamp::now()
                    .strftime("%Y%m%dT%H%M%SZ")
                    .to_string()
            },
        }
    }
}

fn parse_timeout(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if (0.0..=1e6).contains(&v) => Ok(v),
        _ => Err(format!(
            "{text:?} is not a number of seconds between 0 and 1000000"
        )),
    }
}

/// Where a writing run's notes go: stderr.
pub struct Stderr;

impl Notes for Stderr {
    fn say(&self, note: std::fmt::Arguments<'_>) {
        super::tell(note);
    }

    /// Said only on a terminal, where someone is watching nothing happen.
    fn waiting(&self, lock: &Path, holders: &[Holder], timeout: f64) {
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            return;
        }
        let who: Vec<String> = holders.iter().map(Holder::describe).collect();
        super::tell(format_args!(
            "waiting up to {} for {} to release {}",
            duration(timeout),
            if who.is_empty() {
                "a running master".to_string()
            } else {
                who.join(", ")
            },
            lock.display()
        ));
    }
}

/// A writing command's failure: with `--format json`, a failure after
/// files were changed still prints what was changed and what failed
/// ([`FailedReport`]) before the error goes on to be said on stderr (exit
/// status 4).
pub fn report_failure(
    output: &OutputArgs,
    out: &mut dyn Write,
    command: Command,
    error: anyhow::Error,
) -> anyhow::Error {
    if output.format == Format::Json
        && let Some(failed) = error.downcast_ref::<FailedAfterChanges>()
    {
        // A failure to print it is the stdout's, said by the caller's
        // flush; the error that matters is the one returned.
        let _ = output.emit(out, &FailedReport::of(command, failed), |_, _| Ok(()));
    }
    error
}

/// Prints a writing command's report, then ends with its exit status and
/// the changes it made; a failure to print after a change carries them
/// (exit status 4).
pub fn finish<P: serde::Serialize, T: serde::Serialize>(
    output: &OutputArgs,
    out: &mut dyn Write,
    report: Report<P, T>,
    exit: Exit,
    draw: impl FnOnce(&mut dyn Write, &Report<P, T>, &Styles) -> std::io::Result<()>,
) -> anyhow::Result<Finished> {
    match output.emit(out, &report, |out, styles| draw(out, &report, styles)) {
        Ok(()) => Ok(Finished {
            exit,
            changes: report.changes,
        }),
        Err(error) => Err(FailedAfterChanges::after(
            error.into(),
            report.changes,
            None,
        )),
    }
}
