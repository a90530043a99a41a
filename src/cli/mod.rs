//! The command line: clap definitions (one file per subcommand), the exit
//! codes, and the one place errors are printed.

mod compact;
mod completions;
mod diff;
mod exit;
mod explain;
mod inspect;
mod load;
pub mod man;
mod migrate;
mod output;
mod recover;
mod repair;
mod verify;
mod write;

pub use exit::{EXIT_STATUS, Exit};

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{FromArgMatches, Parser, Subcommand};

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
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let result = run(&cli, &mut out).and_then(|exit| {
        out.flush()?;
        Ok(exit)
    });
    match result {
        Ok(exit) => exit.into(),
        Err(err) if is_broken_pipe(&err) => Exit::Success.into(),
        Err(err) => {
            eprintln!("leasejournal: {err:#}");
            let locked = err
                .downcast_ref::<crate::durable::WriteError>()
                .is_some_and(|e| matches!(e, crate::durable::WriteError::Locked { .. }));
            if locked { Exit::Refused } else { Exit::Trouble }.into()
        }
    }
}

/// Runs a parsed command line, writing data to `out`.
pub fn run(cli: &Cli, out: &mut dyn Write) -> anyhow::Result<Exit> {
    match &cli.command {
        Command::Inspect(args) => inspect::run(args, out),
        Command::Verify(args) => verify::run(args, out),
        Command::Explain(args) => explain::run(args, out),
        Command::Repair(args) => repair::run(args, out),
        Command::Recover(args) => recover::run(args, out),
        Command::Migrate(args) => migrate::run(args, out),
        Command::Compact(args) => compact::run(args, out),
        Command::Diff(args) => diff::run(args, out),
        Command::Completions(args) => completions::run(args, out),
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
