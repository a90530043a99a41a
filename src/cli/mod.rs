//! The command line: clap definitions (one file per subcommand), the exit
//! codes, and the one place errors are printed.

mod check;
mod compact;
mod completions;
mod diff;
mod diff_options;
mod explain;
mod forensics;
mod inspect;
mod lease_table;
mod ledger;
pub mod man;
mod migrate;
mod output;
mod recover;
mod repair;
mod restore;
mod rollback;
mod select;
mod table_args;
mod verify;
mod write;

pub use crate::operations::exit::{EXIT_STATUS, Exit};

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{FromArgMatches, Parser, Subcommand};

use crate::store::durable::{Change, WriteError};
use crate::store::session::FailedAfterChanges;

/// Inspect, verify and repair the recovery state of a SymCC MPI fuzzing
/// master.
///
/// A state directory <output>/<name>/ holds .work_leases.jsonl and
/// .dispatch_protocol_deferred.jsonl (append-only journals of lease, done
/// and reclaim records), .state_tasks.json (the state-shard coordinator's
/// snapshot) and .master-queue.lock (flocked by the running master).
/// leasejournal reads them exactly as the upstream Python code does,
/// including its tolerance of torn and corrupt lines.
#[derive(Debug, Parser)]
#[command(name = "leasejournal", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands; each one's help text is its Args struct's doc comment.
#[derive(Debug, Subcommand)]
#[allow(missing_docs)]
pub enum Command {
    Inspect(inspect::InspectArgs),
    Verify(verify::VerifyArgs),
    Explain(explain::ExplainArgs),
    Repair(repair::RepairArgs),
    Recover(recover::RecoverArgs),
    Migrate(migrate::MigrateArgs),
    Compact(compact::CompactArgs),
    Restore(restore::RestoreArgs),
    Rollback(rollback::RollbackArgs),
    Diff(diff::DiffArgs),
    Completions(completions::CompletionsArgs),
}

/// Parses the command line, runs the subcommand and maps the outcome to an
/// exit code. Errors are printed here, once, as `leasejournal: <message>`.
pub fn main() -> ExitCode {
    let parsed = man::command_with_examples()
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                Exit::Trouble
            } else {
                Exit::Success
            }
            .into();
        }
    };
    // The scans run on rayon's global pool. Started here, a failure to
    // start its threads is a clean error before anything is read or
    // written; started lazily, rayon would panic.
    if let Err(err) = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("leasejournal-{i}"))
        .build_global()
    {
        let words = err.to_string();
        let words = words.split(" (os error").next().unwrap_or(&words);
        tell(format_args!(
            "cannot start its worker threads: {}; nothing was changed",
            words.to_lowercase()
        ));
        return Exit::Trouble.into();
    }
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(StandardOutput {
        inner: stdout.lock(),
        closed: false,
    });
    let result = run(&cli, &mut out).and_then(|finished| match out.flush() {
        Ok(()) => Ok(finished),
        Err(error) => Err(FailedAfterChanges::after(
            error.into(),
            finished.changes,
            None,
        )),
    });
    let closed = out.get_ref().closed;
    let no_changes = Vec::new();
    let changes = match &result {
        Ok(finished) => &finished.changes,
        Err(err) => err
            .downcast_ref::<FailedAfterChanges>()
            .map_or(&no_changes, |failed| &failed.changes),
    };
    match &result {
        // The reader went away (`| head`): the exit status stays the
        // command's, unless files were changed and the report of it was
        // cut short.
        Ok(_) if closed && !changes.is_empty() => {
            tell(format_args!(
                "standard output: closed before the whole report was written{}",
                changed_already(None, changes)
            ));
            Exit::Changed.into()
        }
        Ok(finished) => finished.exit.into(),
        Err(err) if is_broken_pipe(err) && changes.is_empty() => Exit::Trouble.into(),
        Err(err) => {
            if changes.is_empty() {
                let locked = err.downcast_ref::<WriteError>().is_some_and(|e| {
                    matches!(
                        e,
                        WriteError::Locked { .. } | WriteError::TableLocked { .. }
                    )
                });
                tell(format_args!("{err:#}"));
                return if locked { Exit::Refused } else { Exit::Trouble }.into();
            }
            // An error after a change names its file already.
            let failed = err
                .downcast_ref::<FailedAfterChanges>()
                .map_or(err, |failed| &failed.error);
            let named = match failed.downcast_ref::<WriteError>() {
                Some(WriteError::AfterChange { path, .. }) => Some(path.as_path()),
                _ => None,
            };
            tell(format_args!("{err:#}{}", changed_already(named, changes)));
            Exit::Changed.into()
        }
    }
}

/// After a failure, the changes this run made that the message does not
/// already name: "; this run already changed A (was rewritten), …".
fn changed_already(named: Option<&std::path::Path>, changes: &[Change]) -> String {
    let mut others: Vec<String> = Vec::new();
    for change in changes {
        if named == Some(change.path.as_path()) {
            continue;
        }
        let item = format!("{} ({})", change.path.display(), change.done);
        if !others.contains(&item) {
            others.push(item);
        }
    }
    if others.is_empty() {
        String::new()
    } else {
        format!("; this run already changed {}", others.join(", "))
    }
}

/// Says something on stderr as `leasejournal: …`. A failure to write it is
/// ignored: there is nowhere left to report it, and the exit status still
/// tells.
pub(crate) fn tell(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "leasejournal: {message}");
}

/// Standard output, whose write errors say that they are about it. A
/// closed pipe is not an error: what is left is dropped, and `closed`
/// says so.
struct StandardOutput<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> StandardOutput<W> {
    fn named(err: io::Error) -> io::Error {
        let words = crate::store::error::in_words(&err);
        io::Error::new(
            err.kind(),
            format!("standard output: cannot write: {words}"),
        )
    }
}

impl<W: Write> Write for StandardOutput<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(buf.len())
            }
            other => other.map_err(Self::named),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other.map_err(Self::named),
        }
    }
}

/// How a command ended: its exit status, and the files it changed (none
/// but for a writing command's `--apply` or `--output`).
#[derive(Debug)]
pub struct Finished {
    /// The exit status.
    pub exit: Exit,
    /// The changes made, in order.
    pub changes: Vec<Change>,
}

impl From<Exit> for Finished {
    fn from(exit: Exit) -> Finished {
        Finished {
            exit,
            changes: Vec::new(),
        }
    }
}

/// Runs a parsed command line, writing data to `out`.
pub fn run(cli: &Cli, out: &mut dyn Write) -> anyhow::Result<Finished> {
    let output = match &cli.command {
        Command::Verify(args) => Some(&args.output),
        Command::Explain(args) => Some(&args.output),
        Command::Repair(args) => Some(&args.output),
        Command::Recover(args) => Some(&args.output),
        Command::Migrate(args) => Some(&args.output),
        Command::Compact(args) => Some(&args.output),
        Command::Restore(args) => Some(&args.output),
        Command::Rollback(args) => Some(&args.output),
        Command::Diff(args) => Some(&args.output),
        Command::Inspect(_) | Command::Completions(_) => None,
    };
    if output.is_some_and(|o| o.format == output::Format::Ndjson) {
        anyhow::bail!(
            "--format ndjson is the stream of inspect --records; use --format json; nothing was read"
        );
    }
    match &cli.command {
        Command::Inspect(args) => inspect::run(args, out).map(Finished::from),
        Command::Verify(args) => verify::run(args, out).map(Finished::from),
        Command::Explain(args) => explain::run(args, out).map(Finished::from),
        Command::Repair(args) => repair::run(args, out),
        Command::Recover(args) => recover::run(args, out),
        Command::Migrate(args) => migrate::run(args, out),
        Command::Compact(args) => compact::run(args, out),
        Command::Restore(args) => restore::run(args, out),
        Command::Rollback(args) => rollback::run(args, out),
        Command::Diff(args) => diff::run(args, out).map(Finished::from),
        Command::Completions(args) => completions::run(args, out).map(Finished::from),
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
