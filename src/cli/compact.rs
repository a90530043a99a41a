//! `leasejournal compact`: rewrite a journal as its state. Dry run by
//! default.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

use clap::Args;

use super::output::{Format, OutputArgs, ProgressArgs};
use super::write::{self, CompareSink, Session, Tee, WriteArgs};
use crate::engine::journal::Positional;
use crate::operations::compact::{self, Measured};
use crate::operations::durable::{self, Identity, Publish};
use crate::operations::exit::Exit;
use crate::operations::plan::{self, Mode, Outcome};
use crate::operations::statedir::Kind;
use crate::render;

/// Rewrite a journal as the state it replays to.
///
/// Keeps the active leases, sorted by id, as upstream's compaction does,
/// each with its own clock marker ("legacy" stays legacy); torn, corrupt and
/// ignored lines are dropped (they stay in the backup) and odd values are
/// written the way upstream converts them. A journal whose ignored lines
/// hide records that repair would bring back is refused unless
/// --drop-hidden: run repair first.
///
/// By default every completed id is also kept, as its last lease followed by
/// its done record, so the completed set survives. Upstream's own
/// compaction forgets completed ids, and after a restart a finished item can
/// then be dispatched and solved again; --drop-completed writes exactly what
/// upstream's compact() writes.
///
/// The result is re-read before it is published, and refused unless it
/// replays to the intended state. Prints the plan and changes nothing
/// unless --apply or --output.
#[derive(Clone, Debug, Args)]
pub struct CompactArgs {
    /// A journal or a state directory.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// Forget completed ids, exactly as upstream's compact() does.
    #[arg(long = "drop-completed")]
    pub drop_completed: bool,

    /// Compact even when lines upstream ignores hide records that
    /// `leasejournal repair` would bring back (glued onto torn fragments,
    /// behind a byte order mark, before a zero fill): they are dropped, as
    /// upstream's compaction drops them (the backup keeps them). Without
    /// it, compact refuses such a journal and names repair.
    #[arg(long = "drop-hidden")]
    pub drop_hidden: bool,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

fn compact_file(
    session: &Session<'_>,
    path: &Path,
    (drop_completed, drop_hidden): (bool, bool),
    (progress, format): (&ProgressArgs, Format),
) -> anyhow::Result<Outcome<Measured>> {
    let removed_temp_files = session.clean_temps(path);
    let (file, meta) = durable::open_target(path)?;
    let identity = Identity::of(&meta);
    let read_error = write::read_error(path);
    let bar = progress.bar(path, meta.len(), format);
    let progress = |n| bar.inc(n);
    let mut hidden = crate::operations::repair::HiddenCount::default();
    let scan = compact::scan_observed(
        Positional::file(&file, meta.len()).with_progress(&progress),
        &mut hidden,
    )
    .map_err(read_error)?;
    bar.finish_and_clear();
    if !drop_hidden {
        write::refuse_hidden(path, &hidden)?;
    }
    let plan = compact::plan(
        scan.replay,
        scan.summary.lines,
        scan.summary.bytes,
        drop_completed,
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut outcome = session.outcome(
        path,
        Kind::Journal,
        Measured {
            plan,
            bytes_after: 0,
            unchanged: false,
            hidden_dropped: hidden.records,
        },
        removed_temp_files,
    );
    let plan = &outcome.plan.plan;
    // The result is compared with the source while it is written, so the
    // size and "already compact" come without another pass.
    // Set when the writing ends, which the check's re-read waits for.
    let measured = std::sync::Mutex::new((0u64, false));
    let measured_now = || *measured.lock().unwrap_or_else(PoisonError::into_inner);
    let produce = |out: &mut dyn Write| {
        let mut sink = CompareSink::new(write::reopen(path, &identity)?);
        let mut tee = Tee {
            a: out,
            b: &mut sink,
        };
        compact::write_result(write::reopen(path, &identity)?, plan, &mut tee)?;
        *measured.lock().unwrap_or_else(PoisonError::into_inner) = sink.finish()?;
        Ok(())
    };
    crate::operations::failpoint::hit("planned")?;
    match session.mode {
        Mode::DryRun | Mode::Check => {
            produce(&mut std::io::sink()).map_err(read_error)?;
        }
        Mode::Output => {
            let dest = session.destination(path);
            let check = |f: &mut durable::Reread<'_>| {
                plan::check_replay(f, &plan.after).map(|()| Publish::Yes)
            };
            durable::replace(dest, None, true, produce, check)?;
            outcome.output = Some(dest.display().to_string());
            outcome.written = true;
        }
        Mode::Apply => {
            let check = |f: &mut durable::Reread<'_>| {
                plan::check_replay(f, &plan.after)?;
                Ok(if measured_now().1 {
                    Publish::No
                } else {
                    Publish::Yes
                })
            };
            // The backup is made only once the result is known to change
            // the file.
            let original = durable::Original {
                file: &file,
                meta: &meta,
                carry_late_appends: true,
            };
            let (published, backup) = session.replace_in_place(path, &original, produce, check)?;
            outcome.late_appends_carried = published.carried;
            match published.publish {
                Publish::Yes => {
                    outcome.backup = backup;
                    outcome.written = true;
                }
                Publish::No => outcome.note = Some("nothing to do: already compact".into()),
            }
        }
    }
    let (bytes_after, unchanged) = measured_now();
    outcome.plan.bytes_after = bytes_after;
    outcome.plan.unchanged = unchanged;
    Ok(outcome)
}

/// Runs `compact`.
pub fn run(args: &CompactArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let bar = (&args.progress, args.output.format);
    let report = write::run_files(
        "compact",
        1,
        &args.path,
        &args.write,
        &[Kind::Journal],
        |session, path, _| {
            compact_file(session, path, (args.drop_completed, args.drop_hidden), bar)
        },
    )?;
    match args.output.format {
        Format::Json => render::json(out, &report)?,
        Format::Table => render::compact(out, &report, &args.output.styles())?,
    }
    Ok(write::exit_for(&report, |m| m.unchanged))
}
