//! `leasejournal migrate`: move journals and snapshots out of the legacy
//! clock domain. Dry run by default.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::output::{Format, OutputArgs, ProgressArgs, parse_now, system_now};
use super::write::{self, CompareSink, Session, WriteArgs};
use crate::engine::journal::Clock;
use crate::engine::journal::Positional;
use crate::operations::compact::{self, Measured};
use crate::operations::durable::{self, Identity, Publish};
use crate::operations::exit::Exit;
use crate::operations::migrate::{self, Migration};
use crate::operations::plan::{self, Mode, Outcome};
use crate::operations::statedir::Kind;
use crate::render;

/// Move journals and snapshots out of the legacy (monotonic) clock domain.
///
/// Journal: nothing is reclaimed. Its active leases outside the unix clock
/// domain are listed; the master's resume reclaims every one of them and
/// requeues its work (F314 L5 holds without any change to the file), and a
/// reclaim written here would lose that work. With --rewrite the journal is
/// compacted (keeping completed ids) so no clock-less record remains;
/// legacy leases keep "clock":"legacy", exactly as upstream's compaction
/// writes them. Without --rewrite a journal has nothing to migrate.
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

    /// Compact a journal that has clock-less records (keeping completed
    /// ids and the legacy leases).
    #[arg(long = "rewrite")]
    pub rewrite: bool,

    /// Judge lease ages against this Unix time instead of the system clock.
    #[arg(long = "now", allow_negative_numbers = true, value_name = "UNIX_SECONDS", value_parser = parse_now)]
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
    let read_error = write::read_error(path);
    let bar = args.progress.bar(path, meta.len(), args.output.format);
    let progress = |n| bar.inc(n);
    let src = Positional::file(&file, meta.len()).with_progress(&progress);
    let mut hidden = crate::operations::repair::HiddenCount::default();
    let scan = compact::scan_observed(src, &mut hidden).map_err(read_error)?;
    bar.finish_and_clear();
    let legacy_leases = plan::reclaims(&scan.replay, now, 0, |_, a| a.clock != Clock::Unix);
    if !args.rewrite {
        outcome.plan = Migration::Journal { legacy_leases };
        return Ok(());
    }
    let clockless_records = scan.summary.clocks.unmarked;
    if clockless_records > 0 {
        write::refuse_hidden(path, &hidden)?;
    }
    let plan = compact::plan(scan.replay, scan.summary.lines, scan.summary.bytes, false)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut sink = CompareSink::new(write::reopen(path, &identity).map_err(read_error)?);
    compact::write_result(
        write::reopen(path, &identity).map_err(read_error)?,
        &plan,
        &mut sink,
    )
    .map_err(read_error)?;
    let (bytes_after, unchanged) = sink.finish().map_err(read_error)?;
    outcome.plan = Migration::Rewrite {
        legacy_leases,
        clockless_records,
        compaction: Measured {
            plan,
            bytes_after,
            unchanged,
            hidden_dropped: 0,
        },
    };
    if !session.writes() || outcome.plan.is_noop() {
        return Ok(());
    }
    let Migration::Rewrite { compaction, .. } = &outcome.plan else {
        return Ok(());
    };
    crate::operations::failpoint::hit("planned")?;
    let plan = &compaction.plan;
    let produce =
        |out: &mut dyn Write| compact::write_result(write::reopen(path, &identity)?, plan, out);
    let check =
        |f: &mut durable::Reread<'_>| plan::check_replay(f, &plan.after).map(|()| Publish::Yes);
    if session.mode == Mode::Output {
        let dest = session.destination(path);
        durable::replace(dest, None, true, produce, check)?;
        outcome.output = Some(dest.display().to_string());
    } else {
        let original = durable::Original {
            file: &file,
            meta: &meta,
            carry_late_appends: true,
        };
        let (published, backup) = session.replace_in_place(path, &original, produce, check)?;
        outcome.backup = backup;
        outcome.late_appends_carried = published.carried;
    }
    outcome.written = true;
    Ok(())
}

fn migrate_snapshot(
    session: &Session<'_>,
    path: &Path,
    outcome: &mut Outcome<Migration>,
) -> anyhow::Result<()> {
    let (mut file, meta) = durable::open_target(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(write::read_error(path))?;
    let plan = migrate::snapshot(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: cannot migrate: it {}", path.display(), e.0))?;
    outcome.plan = Migration::Snapshot(plan);
    let Migration::Snapshot(plan) = &outcome.plan else {
        return Ok(());
    };
    if !session.writes() || !plan.needed {
        return Ok(());
    }
    let produce = |out: &mut dyn Write| out.write_all(&plan.content);
    let check = |f: &mut durable::Reread<'_>| {
        let mut written = Vec::new();
        f.read_to_end(&mut written)
            .map_err(|e| format!("re-read failed: {}", crate::operations::input::in_words(&e)))?;
        if written == plan.content {
            Ok(Publish::Yes)
        } else {
            Err("the snapshot read back differs from what was written".into())
        }
    };
    if session.mode == Mode::Output {
        let dest = session.destination(path);
        durable::replace(dest, None, true, produce, check)?;
        outcome.output = Some(dest.display().to_string());
    } else {
        // The master replaces its snapshot whole; nothing is appended to
        // it, so there is nothing to carry.
        let original = durable::Original {
            file: &file,
            meta: &meta,
            carry_late_appends: false,
        };
        outcome.backup = session.replace_in_place(path, &original, produce, check)?.1;
    }
    outcome.written = true;
    Ok(())
}

/// Runs `migrate`.
pub fn run(args: &MigrateArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let now = args.now.unwrap_or_else(system_now);
    let kinds = [Kind::Journal, Kind::Snapshot];
    let report = write::run_files(
        "migrate",
        2,
        &args.path,
        &args.write,
        &kinds,
        |session, path, kind| {
            let mut outcome = session.outcome(
                path,
                kind,
                Migration::Snapshot(migrate::SnapshotPlan::default()),
                session.clean_temps(path),
            );
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
    Ok(write::exit_for(&report, Migration::is_noop))
}
