//! `leasejournal migrate`: move journals and snapshots out of the legacy
//! clock domain. Dry run by default.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::exit::Exit;
use super::output::{Format, OutputArgs, ProgressArgs, parse_now, system_now};
use super::write::{self, CompareSink, Session, WriteArgs};
use crate::compact::{self, Measured};
use crate::durable::{self, Identity, Publish};
use crate::journal::Clock;
use crate::journal::Positional;
use crate::migrate::{self, Migration};
use crate::plan::{self, Mode, Outcome, StateView};
use crate::recover::{self, Selection};
use crate::render;
use crate::statedir::Kind;

/// Move journals and snapshots out of the legacy (monotonic) clock domain.
///
/// Journal: every active lease outside the unix clock domain is reclaimed
/// (F314 L5), as upstream's first recovery would; with --rewrite the journal
/// is then compacted so no clock-less record remains. A journal without a
/// legacy lease has nothing to migrate.
///
/// Snapshot without "clock":"unix": replaced by exactly the bytes upstream
/// writes right after restoring it (legacy last_lease/last_complete and
/// every lease time zeroed, entries restore drops dropped). A unix snapshot
/// has nothing to migrate. Running migrate twice changes nothing the second
/// time.
///
/// Prints the plan and changes nothing unless --apply or --output.
#[derive(Clone, Debug, Args)]
pub struct MigrateArgs {
    /// A journal, a snapshot or a state directory.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// After reclaiming, compact the journal (keeping completed ids).
    #[arg(long = "rewrite")]
    pub rewrite: bool,

    /// The time of the reclaim records instead of the system clock.
    #[arg(long = "now", value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

fn migrate_journal(
    session: &Session<'_>,
    path: &Path,
    args: &MigrateArgs,
    now: f64,
    outcome: &mut Outcome<Migration>,
) -> anyhow::Result<()> {
    let (file, meta) = durable::open_target(path)?;
    let identity = Identity::of(&meta);
    let read_error = |e: std::io::Error| anyhow::anyhow!("{}: read error: {e}", path.display());
    let bar = args.progress.bar(path, meta.len(), args.output.format);
    let progress = |n| bar.inc(n);
    let src = Positional::file(&file, meta.len()).with_progress(&progress);
    if args.rewrite {
        let scan = compact::scan(src).map_err(read_error)?;
        bar.finish_and_clear();
        let before = StateView::of(&scan.replay);
        let mut replay = scan.replay;
        let reclaimed = plan::reclaims(&replay, now, 0, |a| a.clock != Clock::Unix);
        for r in &reclaimed {
            replay.active.remove(&r.id);
        }
        let mut plan = compact::plan(replay, scan.summary.lines, scan.summary.bytes, false)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        plan.before = before;
        let mut sink = CompareSink::new(write::reopen(path, &identity).map_err(read_error)?);
        compact::write_result(
            write::reopen(path, &identity).map_err(read_error)?,
            &plan,
            &mut sink,
        )
        .map_err(read_error)?;
        let (bytes_after, unchanged) = sink.finish().map_err(read_error)?;
        outcome.plan = Migration::Rewrite {
            reclaimed,
            compaction: Measured {
                plan,
                bytes_after,
                unchanged,
            },
        };
    } else {
        let scan = recover::scan(src, false).map_err(read_error)?;
        bar.finish_and_clear();
        outcome.plan = Migration::Reclaim(recover::plan(scan.0, None, Selection::Legacy, now, 0));
    }
    if session.mode == Mode::DryRun || outcome.plan.is_noop() {
        return Ok(());
    }
    durable::failpoint("planned")?;
    let dest = session.destination(path);
    if session.mode == Mode::Apply {
        outcome.backup = session.backup(path, &identity)?;
    }
    match &outcome.plan {
        Migration::Rewrite { compaction, .. } => {
            let plan = &compaction.plan;
            durable::replace(
                dest,
                (session.mode == Mode::Apply).then_some(&meta),
                session.mode == Mode::Output,
                |out| compact::write_result(write::reopen(path, &identity)?, plan, out),
                |f| plan::check_replay(f, &plan.after).map(|()| Publish::Yes),
            )?;
        }
        Migration::Reclaim(plan) if session.mode == Mode::Output => {
            durable::replace(
                dest,
                None,
                true,
                |out| recover::write_result(write::reopen(path, &identity)?, plan, out),
                |f| plan::check_replay(f, &plan.after).map(|()| Publish::Yes),
            )?;
        }
        Migration::Reclaim(plan) => write::append_and_check(path, plan)?,
        Migration::Snapshot(_) => {}
    }
    outcome.written = true;
    if session.mode == Mode::Output {
        outcome.output = Some(dest.display().to_string());
    }
    Ok(())
}

fn migrate_snapshot(
    session: &Session<'_>,
    path: &Path,
    outcome: &mut Outcome<Migration>,
) -> anyhow::Result<()> {
    let (mut file, meta) = durable::open_target(path)?;
    let identity = Identity::of(&meta);
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| anyhow::anyhow!("{}: read error: {e}", path.display()))?;
    let plan = migrate::snapshot(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: cannot migrate: it {}", path.display(), e.0))?;
    outcome.plan = Migration::Snapshot(plan);
    let Migration::Snapshot(plan) = &outcome.plan else {
        return Ok(());
    };
    if session.mode == Mode::DryRun || !plan.needed {
        return Ok(());
    }
    let dest = session.destination(path);
    if session.mode == Mode::Apply {
        outcome.backup = session.backup(path, &identity)?;
    }
    durable::replace(
        dest,
        (session.mode == Mode::Apply).then_some(&meta),
        session.mode == Mode::Output,
        |out| out.write_all(&plan.content),
        |f| {
            let mut written = Vec::new();
            f.read_to_end(&mut written).map_err(|e| e.to_string())?;
            if written == plan.content {
                Ok(Publish::Yes)
            } else {
                Err("the snapshot read back differs from what was written".into())
            }
        },
    )?;
    outcome.written = true;
    if session.mode == Mode::Output {
        outcome.output = Some(dest.display().to_string());
    }
    Ok(())
}

/// Runs `migrate`.
pub fn run(args: &MigrateArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let now = args.now.unwrap_or_else(system_now);
    let kinds = [Kind::Journal, Kind::Snapshot];
    let report = write::run_files(
        "migrate",
        &args.path,
        &args.write,
        &kinds,
        |session, path, kind| {
            let mut outcome = Outcome {
                path: path.display().to_string(),
                kind,
                plan: Migration::Snapshot(migrate::SnapshotPlan::default()),
                written: false,
                backup: None,
                output: None,
                removed_temp_files: session.clean_temps(path),
                note: None,
            };
            match kind {
                Kind::Journal => migrate_journal(session, path, args, now, &mut outcome)?,
                Kind::Snapshot => migrate_snapshot(session, path, &mut outcome)?,
            }
            if outcome.plan.is_noop() {
                outcome.note = Some("nothing to migrate".into());
            }
            Ok(outcome)
        },
    )?;
    match args.output.format {
        Format::Json => render::json(out, &report)?,
        Format::Table => render::migrate(out, &report, &args.output.styles())?,
    }
    Ok(Exit::Success)
}
