//! `leasejournal repair`: the lossless fixes to run before the master
//! resumes. Dry run by default.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use super::output::{Format, OutputArgs, ProgressArgs};
use super::write::{self, Session, WriteArgs};
use crate::engine::journal::Positional;
use crate::operations::durable::{self, Identity, Publish};
use crate::operations::exit::Exit;
use crate::operations::plan::{self, Mode, Outcome};
use crate::operations::repair::{self, Plan};
use crate::operations::statedir::Kind;
use crate::render;

/// Fix what a crash left in the journals, losing no lease.
///
/// Run it before resuming when verify names it. A torn or zero-filled last
/// line is cut off (the backup keeps its bytes); a complete last record
/// without a newline gets one; a record glued onto a torn fragment is put
/// back on a line of its own, and a byte order mark in front of the first
/// record is removed, so upstream reads those records again.
///
/// It never appends a reclaim: after it, the active leases are those before
/// it plus any a salvaged record brings back, less any a salvaged done
/// completes (the plan names both). A glued reclaim of a lease that is
/// active at that point is not applied, since it would take the work away
/// from the master's resume; its line is left out instead.
///
/// For a state directory both journals are repaired; the snapshot is not
/// touched. Prints the plan and changes nothing unless --apply (in place,
/// under the master's lock, with a backup) or --output (a new file).
#[derive(Clone, Debug, Args)]
pub struct RepairArgs {
    /// Journals or state directories.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

fn repair_file(
    session: &Session<'_>,
    path: &Path,
    args: &RepairArgs,
) -> anyhow::Result<Outcome<Plan>> {
    let removed_temp_files = session.clean_temps(path);
    let (file, meta) = durable::open_target(path)?;
    let identity = Identity::of(&meta);
    let bar = args.progress.bar(path, meta.len(), args.output.format);
    let progress = |n| bar.inc(n);
    let src = Positional::file(&file, meta.len()).with_progress(&progress);
    let (scan, salvager) = repair::scan(src).map_err(write::read_error(path))?;
    bar.finish_and_clear();
    let plan =
        repair::plan(&scan, salvager).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    drop(scan);
    let mut outcome = session.outcome(path, Kind::Journal, plan, removed_temp_files);
    let plan = &outcome.plan;
    if plan.is_noop() {
        outcome.note = Some("nothing to repair".into());
        return Ok(outcome);
    }
    if !session.writes() {
        return Ok(outcome);
    }
    crate::operations::failpoint::hit("planned")?;
    let check =
        |f: &mut durable::Reread<'_>| plan::check_replay(f, &plan.after).map(|()| Publish::Yes);
    let produce =
        |out: &mut dyn Write| repair::write_result(write::reopen(path, &identity)?, plan, out);
    match session.mode {
        Mode::Output => {
            let dest = session.destination(path);
            durable::replace(dest, None, true, produce, check)?;
            outcome.output = Some(dest.display().to_string());
        }
        _ if plan.rewrite => {
            let original = durable::Original {
                file: &file,
                meta: &meta,
                carry_late_appends: true,
            };
            let (published, backup) = session.replace_in_place(path, &original, produce, check)?;
            outcome.backup = backup;
            outcome.late_appends_carried = published.carried;
        }
        _ => {
            let (backup, ended) =
                session.append_in_place(path, file, &identity, (&plan.tail, &[], &plan.after))?;
            outcome.backup = backup;
            write::record_ended(&mut outcome.plan.tail, &mut outcome.note, ended);
        }
    }
    outcome.written = true;
    Ok(outcome)
}

/// Runs `repair`.
pub fn run(args: &RepairArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let report = write::run_paths(
        "repair",
        1,
        &args.paths,
        &args.write,
        &[Kind::Journal],
        |session, path, _| repair_file(session, path, args),
    )?;
    match args.output.format {
        Format::Json => render::json(out, &report)?,
        Format::Table => render::repair(out, &report, &args.output.styles())?,
    }
    Ok(write::exit_for(&report, Plan::is_noop))
}
