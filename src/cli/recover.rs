//! `leasejournal recover`: reclaim expired and legacy leases the way the
//! master's resume does, after sealing a torn tail so nothing is ever
//! appended onto it. Dry run by default.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use super::exit::Exit;
use super::output::{Format, OutputArgs, ProgressArgs, parse_now, parse_seconds, system_now};
use super::write::{self, Session, WriteArgs};
use crate::durable::{self, Identity, Publish};
use crate::journal::Positional;
use crate::plan::{self, Mode, Outcome};
use crate::recover::{self, Plan, Selection};
use crate::render;
use crate::statedir::Kind;

/// Reclaim expired and legacy leases, as the master's resume does.
///
/// A lease expires when --ttl is 0 (the default, what resume uses), when it
/// is not on the unix clock, or when it is at least --ttl seconds old.
/// Expired leases are reclaimed in (attempts, time, id) order, one
/// {"clock":"unix","id":…,"op":"reclaim","time":now} record each. A torn or
/// zero-filled tail is cut off first (its bytes stay in the backup) and an
/// unterminated last record gets its newline, so appended records never
/// glue onto a fragment. For a state directory the deferred journal comes
/// first, then the work journal.
///
/// Prints the plan and changes nothing unless --apply (change in place,
/// under the master's lock, with a backup) or --output (write a new file).
#[derive(Clone, Debug, Args)]
pub struct RecoverArgs {
    /// A journal or a state directory.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// Reclaim unix leases at least this old; 0 reclaims every lease.
    #[arg(long = "ttl", value_name = "SECONDS", default_value = "0", value_parser = parse_seconds)]
    pub ttl: f64,

    /// Reclaim at most N leases (0: no limit), the first in recovery order.
    #[arg(long = "limit", value_name = "N", default_value_t = 0)]
    pub limit: usize,

    /// Also split records glued onto torn fragments back onto lines of
    /// their own, so replay sees them again (rewrites the file).
    #[arg(long = "salvage")]
    pub salvage: bool,

    /// The time of the reclaim records and of the expiry test, instead of
    /// the system clock.
    #[arg(long = "now", value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Recovers one journal according to the session's mode.
fn recover_file(
    session: &Session<'_>,
    path: &Path,
    args: &RecoverArgs,
    now: f64,
) -> anyhow::Result<Outcome<Plan>> {
    let removed_temp_files = session.clean_temps(path);
    let (file, meta) = durable::open_target(path)?;
    let identity = Identity::of(&meta);
    let bar = args.progress.bar(path, meta.len(), args.output.format);
    let progress = |n| bar.inc(n);
    let src = Positional::file(&file, meta.len()).with_progress(&progress);
    let (scan, salvager) = recover::scan(src, args.salvage)
        .map_err(|e| anyhow::anyhow!("{}: read error: {e}", path.display()))?;
    bar.finish_and_clear();
    let mut plan = recover::plan(
        scan,
        salvager,
        Selection::Expired { ttl: args.ttl },
        now,
        args.limit,
    );
    for r in &mut plan.reclaims {
        let on_disk = r
            .path
            .as_deref()
            .is_some_and(|p| !p.is_empty() && Path::new(p).is_file());
        r.dropped_on_resume = Some(!on_disk && !r.continuation);
    }
    let mut outcome = Outcome {
        path: path.display().to_string(),
        kind: Kind::Journal,
        plan,
        written: false,
        backup: None,
        output: None,
        removed_temp_files,
        note: None,
    };
    let plan = &outcome.plan;
    durable::failpoint("planned")?;
    match session.mode {
        Mode::DryRun => {}
        _ if plan.is_noop() && session.mode == Mode::Apply => {
            outcome.note = Some("nothing to do".into());
        }
        Mode::Output => {
            let dest = session.destination(path);
            durable::replace(
                dest,
                None,
                true,
                |out| recover::write_result(write::reopen(path, &identity)?, plan, out),
                |f| plan::check_replay(f, &plan.after).map(|()| Publish::Yes),
            )?;
            outcome.output = Some(dest.display().to_string());
            outcome.written = true;
        }
        Mode::Apply => {
            outcome.backup = session.backup(path, &identity)?;
            if plan.rewrite {
                durable::replace(
                    path,
                    Some(&meta),
                    false,
                    |out| recover::write_result(write::reopen(path, &identity)?, plan, out),
                    |f| plan::check_replay(f, &plan.after).map(|()| Publish::Yes),
                )?;
            } else {
                write::append_and_check(path, plan)?;
            }
            outcome.written = true;
        }
    }
    Ok(outcome)
}

/// Runs `recover`.
pub fn run(args: &RecoverArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let now = args.now.unwrap_or_else(system_now);
    let report = write::run_files(
        "recover",
        &args.path,
        &args.write,
        &[Kind::Journal],
        |session, path, _| recover_file(session, path, args, now),
    )?;
    match args.output.format {
        Format::Json => render::json(out, &report)?,
        Format::Table => render::recover(out, &report, &args.output.styles())?,
    }
    Ok(Exit::Success)
}
