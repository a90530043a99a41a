//! `leasejournal recover`: the forecast of the master's resume (read-only),
//! and `--discard`, the one way to drop work on purpose.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use super::output::{
    Format, OutputArgs, ProgressArgs, parse_count, parse_id_prefix, parse_now, parse_rank,
    parse_seconds, system_now,
};
use super::write::{self, Session, WriteArgs};
use crate::engine::journal::{self, Positional};
use crate::engine::json::PyInt;
use crate::operations::durable::{self, Identity, Publish};
use crate::operations::exit::Exit;
use crate::operations::plan::{self, Mode, Outcome};
use crate::operations::recover::{self, Discard, ForecastFile, ForecastReport, Selection};
use crate::operations::statedir::{self, Kind};
use crate::render;

/// Forecast what the master's resume will recover; discard work only when
/// told to.
///
/// On SYMCC_RESUME=1 the master reclaims every active lease (the deferred
/// journal first, then the work journal), in (attempts, time, id) order,
/// and rebuilds each payload into a work item at the front of its queue.
/// Those payloads are the only record of that work: nothing else requeues
/// it. recover prints, per journal, the reclaims resume will append, the
/// work items it will requeue (their rebuilt shape), the items it will drop
/// and why (seed path not a file on this host and no continuation), the
/// payload members it never restores (parameter_overrides,
/// parameter_token), items queued twice, and the first record resume will
/// append and whether it glues onto an unterminated last line. Relative
/// seed paths are looked up from the current directory: run it where the
/// master runs. It reads only; it never writes, creates or locks anything.
///
/// --discard reclaims leases exactly as upstream's recover_expired does,
/// for work meant to be dropped (an input that keeps killing workers). It
/// needs a selection (--all, or any of --ttl, --id, --worker), appends one
/// reclaim record per lease after sealing the tail, and first writes every
/// discarded lease to an export file (<journal>.discarded.<UTC>.jsonl, or
/// --export FILE), fsynced: appending its lines to the journal before the
/// master resumes brings the work back. Dry run unless --apply.
#[derive(Clone, Debug, Args)]
pub struct RecoverArgs {
    /// A journal or a state directory.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// Reclaim the selected leases: their work is dropped (see --export).
    #[arg(long = "discard")]
    pub discard: bool,

    /// With --discard: select every active lease.
    #[arg(long = "all", requires = "discard", conflicts_with_all = ["ttl", "id", "worker"])]
    pub all: bool,

    /// With --discard: select leases upstream's recover_expired would
    /// expire at this TTL (0: all; a lease off the unix clock always).
    #[arg(long = "ttl", allow_negative_numbers = true, value_name = "SECONDS", requires = "discard", value_parser = parse_seconds)]
    pub ttl: Option<f64>,

    /// With --discard: select ids starting with this hex prefix.
    #[arg(long = "id", allow_hyphen_values = true, value_name = "PREFIX", requires = "discard", value_parser = parse_id_prefix)]
    pub id: Option<String>,

    /// With --discard: select leases of this worker rank.
    #[arg(long = "worker", allow_negative_numbers = true, value_name = "N", requires = "discard", value_parser = parse_rank)]
    pub worker: Option<u32>,

    /// With --discard: reclaim at most N leases (0: no limit), the first
    /// in recovery order.
    #[arg(
        long = "limit",
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 0,
        requires = "discard",
        value_parser = parse_count
    )]
    pub limit: usize,

    /// With --discard: export the discarded leases to FILE (which must
    /// not exist) instead of <journal>.discarded.<UTC>.jsonl.
    #[arg(long = "export", value_name = "FILE", requires = "discard")]
    pub export: Option<PathBuf>,

    /// The time resume runs at (the forecast's ages; the time of
    /// --discard's reclaim records) instead of the system clock.
    #[arg(long = "now", allow_negative_numbers = true, value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,

    /// Replaced by `leasejournal repair`.
    #[arg(long = "salvage", hide = true)]
    pub salvage: bool,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Why `recover --apply` without `--discard` is refused.
fn no_apply(path: &Path) -> String {
    let shown = crate::operations::verify::shell_quote(&path.display().to_string());
    format!(
        "{}: recover only forecasts the master's resume: a reclaim written before resume takes \
         the lease's work away for good, since resume requeues only the leases still active when \
         it starts. To fix a torn tail or glued records, run `leasejournal repair --apply {shown}`; \
         to drop work on purpose, `leasejournal recover --discard --apply` with --all, --ttl, --id \
         or --worker. Nothing was changed",
        path.display()
    )
}

/// Forecasts resume for every journal of PATH.
fn forecast(args: &RecoverArgs, now: f64) -> anyhow::Result<ForecastReport> {
    // A state directory without journals: resume has nothing to requeue.
    let files = match write::targets(&args.path, args.write.kind, &[Kind::Journal]) {
        Ok((_, files)) => files,
        Err(_) if args.path.is_dir() && statedir::examine(&args.path, None).is_ok() => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut forecasts = Vec::new();
    for (path, _) in &files {
        let (file, meta) = statedir::open_regular(path)?;
        let bar = args.progress.bar(path, meta.len(), args.output.format);
        let progress = |n| bar.inc(n);
        let src = Positional::file(&file, meta.len()).with_progress(&progress);
        let mut hidden = crate::operations::repair::HiddenCount::default();
        let scan = journal::scan(src, &mut hidden).map_err(write::read_error(path))?;
        bar.finish_and_clear();
        let mut forecast = recover::forecast(&scan.replay, &scan.summary.tail, now, |p| {
            Path::new(p).is_file()
        });
        forecast.hidden_records = hidden.records;
        forecasts.push(ForecastFile {
            path: path.display().to_string(),
            forecast,
        });
    }
    let mut named: Vec<(&str, &mut recover::Forecast)> = forecasts
        .iter_mut()
        .map(|f| (f.path.as_str(), &mut f.forecast))
        .collect();
    recover::mark_duplicates(&mut named);
    Ok(ForecastReport {
        schema_version: 2,
        command: "recover",
        mode: "forecast",
        now,
        files: forecasts,
    })
}

/// Discards the selected leases of one journal according to the session's
/// mode.
fn discard_file(
    session: &Session<'_>,
    path: &Path,
    args: &RecoverArgs,
    selection: &Selection,
    now: f64,
) -> anyhow::Result<Outcome<Discard>> {
    let removed_temp_files = session.clean_temps(path);
    let (file, meta) = durable::open_target(path)?;
    let identity = Identity::of(&meta);
    let bar = args.progress.bar(path, meta.len(), args.output.format);
    let progress = |n| bar.inc(n);
    let src = Positional::file(&file, meta.len()).with_progress(&progress);
    let mut scan = journal::scan(src, &mut ()).map_err(write::read_error(path))?;
    bar.finish_and_clear();
    let mut plan = recover::discard(
        &mut scan.replay,
        &scan.summary.tail,
        selection,
        now,
        args.limit,
    );
    drop(scan);
    let export = |attempt: usize| match &args.export {
        Some(p) => p.clone(),
        None => {
            let mut name = path.as_os_str().to_owned();
            let suffix = if attempt == 0 {
                String::new()
            } else {
                format!("-{attempt}")
            };
            name.push(format!(".discarded.{}{suffix}.jsonl", session.stamp()));
            PathBuf::from(name)
        }
    };
    if !plan.reclaims.is_empty() {
        plan.export = Some(export(0).display().to_string());
    }
    let mut outcome = session.outcome(path, Kind::Journal, plan, removed_temp_files);
    let plan = &outcome.plan;
    if plan.reclaims.is_empty() {
        outcome.note = Some("no active lease is selected: nothing to discard".into());
        return Ok(outcome);
    }
    if !session.writes() {
        return Ok(outcome);
    }
    crate::operations::failpoint::hit("planned")?;
    // Nothing is exported for a discard that will not happen.
    identity.check(path)?;
    // The export first, fsynced: no work disappears without a copy. Our
    // own default name moves aside for an earlier export of the same
    // second; a name given with --export is never overwritten.
    let mut attempt = 0;
    let written_to = loop {
        let target = export(attempt);
        match durable::create_new(&target, &plan.export_lines) {
            Ok(()) => break target,
            Err(durable::WriteError::Exists { .. }) if args.export.is_none() && attempt < 1000 => {
                attempt += 1;
            }
            Err(e) => return Err(e.into()),
        }
    };
    session.made(
        &written_to,
        format!(
            "exported {} of {} to {}",
            crate::render::plural(
                plan.reclaims.len() as u64,
                "discarded lease",
                "discarded leases"
            ),
            path.display(),
            written_to.display()
        ),
    );
    let written_to = written_to.display().to_string();
    outcome.plan.export = Some(written_to);
    let plan = &outcome.plan;
    match session.mode {
        Mode::Output => {
            let dest = session.destination(path);
            durable::replace(
                dest,
                None,
                true,
                |out| {
                    crate::operations::repair::write_sealed(
                        write::reopen(path, &identity)?,
                        &plan.tail,
                        out,
                    )?;
                    out.write_all(&plan.append)
                },
                |f| plan::check_replay(f, &plan.after).map(|()| Publish::Yes),
            )?;
            outcome.output = Some(dest.display().to_string());
        }
        _ => {
            let plan = &outcome.plan;
            let (backup, ended) = session.append_in_place(
                path,
                file,
                &identity,
                (&plan.tail, &plan.append, &plan.after),
            )?;
            outcome.backup = backup;
            write::record_ended(&mut outcome.plan.tail, &mut outcome.note, ended);
        }
    }
    outcome.written = true;
    Ok(outcome)
}

/// Runs `recover`.
pub fn run(args: &RecoverArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    if args.salvage {
        anyhow::bail!(
            "recover --salvage is now `leasejournal repair`, which also seals the tail and never reclaims a lease; nothing was changed"
        );
    }
    let now = args.now.unwrap_or_else(system_now);
    if !args.discard {
        if args.write.check {
            anyhow::bail!(
                "recover --check goes with --discard: the forecast changes nothing. Nothing was changed"
            );
        }
        if args.write.apply || args.write.output.is_some() {
            anyhow::bail!("{}", no_apply(&args.path));
        }
        let report = forecast(args, now)?;
        match args.output.format {
            Format::Json => render::json(out, &report)?,
            Format::Table => render::forecast(out, &report, &args.output.styles())?,
        }
        return Ok(Exit::Success);
    }
    let selection = Selection {
        ttl: args.ttl,
        id_prefix: args.id.clone(),
        worker: args.worker.map(|w| PyInt::Small(i64::from(w))),
        all: args.all,
    };
    if !selection.is_explicit() {
        anyhow::bail!(
            "recover --discard needs a selection: --all, or any of --ttl, --id and --worker; nothing was changed"
        );
    }
    if args.export.is_some() && args.path.is_dir() {
        anyhow::bail!(
            "{}: is a directory; --export takes a single journal PATH. Nothing was changed",
            args.path.display()
        );
    }
    let report = write::run_files(
        "recover",
        2,
        &args.path,
        &args.write,
        &[Kind::Journal],
        |session, path, _| discard_file(session, path, args, &selection, now),
    )?;
    match args.output.format {
        Format::Json => render::json(out, &report)?,
        Format::Table => render::discard(out, &report, &args.output.styles())?,
    }
    Ok(write::exit_for(&report, Discard::is_noop))
}
