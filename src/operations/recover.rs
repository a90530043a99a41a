//! `recover` as data: the forecast of the master's resume, and the
//! discard that an operator asks for by name.
//!
//! On resume the master calls `recover_expired(lease_ttl=0.0)` on the
//! deferred journal, then on the work journal: every active lease is
//! reclaimed, in `(attempts, time, id)` order, one appended `reclaim` each,
//! and each payload is rebuilt into a work item
//! (`_recoverable_work_item_from_lease_payload`) and put in front of the
//! new work. Those payloads are the only record of that work, so this tool
//! never reclaims a lease unless told to discard it ([`discard`]); the
//! [`forecast`] only says what resume will do.
//!
//! The planning is pure: a scan in, data out; whether a seed file exists
//! is asked of the caller. [`run_forecast`] and [`run_discard`] read the
//! files and carry a discard out through the write session (`store::session`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::engine::journal::HiddenCount;
use crate::engine::journal::StateView;
use crate::engine::journal::{Active, Clock, Replay, Tail, TailFix, WorkId, encode};
use crate::engine::journal::{Forecast, Reclaim, Rescan, RescanWhy, ResumeOutcome};
use crate::engine::journal::{forecast, mark_duplicates};
use crate::engine::json::PyInt;
use crate::operations::exit::Exit;
use crate::operations::ledger::{self, Digest, LedgerView, NextStart};
use crate::operations::report::{Command, Report};
use crate::operations::schema;
use crate::operations::table::{self, ExpiredRecord, TableSettings, TableView};
use crate::store::durable::WriteError;
use crate::store::error::{InputError, PathError};
use crate::store::failpoint;
use crate::store::format::Kind;
use crate::store::lock::{self, LockState, ProcLocks};
use crate::store::path::{parent_or_dot, shell_quote};
use crate::store::progress::Progress;
use crate::store::session::{self, Opened, Outcome, Publication, Session, Tell, WriteOptions};
use crate::store::statedir;
use crate::store::{ledger as ledger_dir, open, read};

/// Which active leases `recover --discard` reclaims: every condition given
/// must hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// Upstream's expiry with this TTL: `ttl == 0`, or not on the unix
    /// clock, or `now - time >= ttl`.
    pub ttl: Option<f64>,
    /// Ids starting with this lowercase hex prefix.
    pub id_prefix: Option<String>,
    /// Leases owned by this worker rank.
    pub worker: Option<u32>,
    /// Every active lease (alone: no other condition).
    pub all: bool,
}

impl Selection {
    /// Whether anything was selected explicitly.
    pub fn is_explicit(&self) -> bool {
        self.all || self.ttl.is_some() || self.id_prefix.is_some() || self.worker.is_some()
    }

    fn selects(&self, id: &WorkId, lease: &Active, now: f64) -> bool {
        let expired = self
            .ttl
            .is_none_or(|ttl| ttl == 0.0 || lease.clock != Clock::Unix || now - lease.time >= ttl);
        let id_matches = self
            .id_prefix
            .as_deref()
            .is_none_or(|p| id.to_hex().starts_with(p));
        let worker_matches = self
            .worker
            .is_none_or(|w| lease.worker == PyInt::Small(i64::from(w)));
        expired && id_matches && worker_matches
    }
}

/// A discard: the tail sealed, then one `reclaim` per selected lease, as
/// upstream's `recover_expired` writes it; and the export that keeps the
/// discarded work.
#[derive(Clone, Debug, Serialize)]
pub struct Discard {
    /// The end of the file, sealed before anything is appended.
    pub tail: TailFix,
    /// The leases reclaimed, in the order their records are appended.
    pub reclaims: Vec<Reclaim>,
    /// Bytes appended.
    pub append_bytes: usize,
    /// Replay state now.
    pub before: StateView,
    /// Replay state after the discard.
    pub after: StateView,
    /// The reclaim records.
    #[serde(skip)]
    pub append: Vec<u8>,
    /// Where the discarded leases are exported (filled in by the caller).
    pub export: Option<String>,
    /// The export's content: each discarded lease as upstream's compaction
    /// writes it, one per line, in the order above: what `restore` brings
    /// back.
    #[serde(skip)]
    pub export_lines: Vec<u8>,
}

impl Discard {
    /// Whether there is nothing to change.
    pub fn is_noop(&self) -> bool {
        self.tail == TailFix::None && self.reclaims.is_empty()
    }
}

/// One journal's forecast.
#[derive(Clone, Debug, Serialize)]
pub struct ForecastFile {
    /// The journal.
    pub path: String,
    /// What resume does with it.
    #[serde(flatten)]
    pub forecast: Forecast,
    /// The replay state now (verify's forecasts leave out its digest, a
    /// hash of every id).
    pub before: StateView,
}

/// The `recover --format json` document (without `--discard`).
#[derive(Clone, Debug, Serialize)]
pub struct ForecastReport {
    /// Contract version.
    pub schema_version: u32,
    /// `recover`.
    pub command: &'static str,
    /// `forecast`.
    pub mode: &'static str,
    /// The time the forecast assumes for resume.
    pub now: f64,
    /// Per journal, in the order resume reads them.
    pub files: Vec<ForecastFile>,
    /// The state directory's digest ledger as the next master start reads
    /// it, which decides each item's `rescan`; `null` when the directory
    /// has none (then no item's rescan is judged).
    pub ledger: Option<LedgerView>,
    /// The fenced lease tables read (a table root, or a state directory's
    /// own): what the next master start takes from each.
    pub tables: Vec<TableForecast>,
    /// The state directory's `.master-queue.lock`, read from `/proc/locks`
    /// without opening it; `null` for a fenced lease table's root. While a
    /// master holds it the journals are changing under the forecast.
    pub master_lock: Option<LockState>,
}

/// What `recover` of several paths reports: each path's forecast, in the
/// order given, and the paths that could not be read.
#[derive(Debug, Serialize)]
pub struct ManyForecasts {
    /// Contract version.
    pub schema_version: u32,
    /// `recover`.
    pub command: &'static str,
    /// `forecasts`.
    pub mode: &'static str,
    /// One per path that was read, in the order given.
    pub forecasts: Vec<ForecastReport>,
    /// The paths that could not be read, in the order given.
    pub errors: Vec<PathError>,
}

/// What the forecast reports: one path's, or several paths'.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Forecasts {
    /// One path: its forecast.
    One(Box<ForecastReport>),
    /// Several paths.
    Many(ManyForecasts),
}

/// Forecasts the resume of every path of `paths`, in order. One path that
/// cannot be read is the error; of several, the others are still read and
/// the failures returned beside the report (which lists them too).
pub fn run_forecasts(
    paths: &[PathBuf],
    options: &WriteOptions,
    now: f64,
    next: &NextStart,
    table_settings: &TableSettings,
    progress: &dyn Progress,
) -> anyhow::Result<(Forecasts, Vec<anyhow::Error>)> {
    // Refused before anything is read; /proc/locks is read once for all.
    for path in paths.iter().filter(|p| !is_table(p, options)) {
        refuse_changes(path, options)?;
    }
    let proc_locks = ProcLocks::default();
    let run = |path: &PathBuf| {
        run_forecast(
            path,
            options,
            now,
            next,
            table_settings,
            progress,
            &proc_locks,
        )
    };
    if let [path] = paths {
        return Ok((Forecasts::One(Box::new(run(path)?)), Vec::new()));
    }
    let (mut forecasts, mut shown, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for path in paths {
        match run(path) {
            Ok(f) => forecasts.push(f),
            Err(e) => {
                shown.push(PathError {
                    path: path.display().to_string(),
                    message: format!("{e:#}"),
                });
                errors.push(e);
            }
        }
    }
    let report = ManyForecasts {
        schema_version: schema::RECOVER,
        command: "recover",
        mode: "forecasts",
        forecasts,
        errors: shown,
    };
    Ok((Forecasts::Many(report), errors))
}

/// What the next master start takes from a fenced lease table: its
/// `recover_expired_records(now)` (which it calls at every start, whether
/// or not `SYMCC_RESUME` is set, with the table's TTL, `limit=4096`).
#[derive(Clone, Debug, Serialize)]
pub struct TableForecast {
    /// The table, summarised.
    #[serde(flatten)]
    pub view: TableView,
    /// `recover_expired_records(now=now, lease_ttl=ttl)`: the ids, in its
    /// order.
    pub recovered: Vec<WorkId>,
    /// Those records, in that order, with their owners, ages and seeds.
    pub expired: Vec<ExpiredRecord>,
    /// How many `committing` records no master will ever take.
    pub committing: usize,
}

/// Plans a discard: upstream's `recover_expired` order `(attempts, time,
/// id)` over the selected leases, at most `limit` (0: all).
pub fn discard(
    replay: &mut Replay,
    tail: &Tail,
    selection: &Selection,
    now: f64,
    limit: usize,
) -> Discard {
    let before = StateView::of(replay);
    let reclaims =
        crate::engine::journal::reclaims(replay, now, limit, |id, a| selection.selects(id, a, now));
    let mut append = Vec::new();
    let mut export_lines = Vec::new();
    for r in &reclaims {
        if let Some(a) = replay.active.get(&r.id) {
            export_lines.extend_from_slice(&encode::lease_line(
                &r.id,
                &a.worker,
                a.time,
                &a.attempts,
                a.clock,
                &a.payload,
            ));
        }
        append.extend_from_slice(&encode::marker_line("reclaim", &r.id, Clock::Unix, now));
    }
    for r in &reclaims {
        replay.active.remove(&r.id);
    }
    Discard {
        tail: TailFix::of(tail),
        append_bytes: append.len(),
        reclaims,
        before,
        after: StateView::of(replay),
        append,
        export: None,
        export_lines,
    }
}

/// What `recover --discard` is asked to drop, and where the export goes.
#[derive(Clone, Debug)]
pub struct DiscardRequest {
    /// Which active leases.
    pub selection: Selection,
    /// At most this many (0: no limit).
    pub limit: usize,
    /// The export file (`--export`), else one named after the journal.
    pub export: Option<PathBuf>,
}

/// Runs `recover --discard` on PATH (a journal or a state directory): the
/// plan of each journal, carried out when `options` say so. Returns the
/// report and the exit status.
pub fn run_discard(
    path: &Path,
    request: &DiscardRequest,
    now: f64,
    options: &WriteOptions,
    progress: &dyn Progress,
    tell: Tell<'_>,
) -> anyhow::Result<(Report<Discard>, Exit)> {
    if table::is_table_root(path) {
        anyhow::bail!(
            "{}: a fenced lease table has no leases to discard: its records are taken by the masters (recover without --discard shows which), and leasejournal repair changes a table; nothing was changed",
            path.display()
        );
    }
    if !request.selection.is_explicit() {
        anyhow::bail!(
            "recover --discard needs a selection: --all, or any of --ttl, --id and --worker; nothing was changed"
        );
    }
    if request.export.is_some() && path.is_dir() {
        anyhow::bail!(
            "{}: is a directory; --export takes a single journal PATH. Nothing was changed",
            path.display()
        );
    }
    let run = session::run_paths(
        std::slice::from_ref(&path.to_path_buf()),
        options,
        tell,
        &[Kind::Journal],
        |session, path, _| discard_file(session, path, request, now, progress),
    )?;
    let exit = Exit::of_write(
        session::would_change(&run, Discard::is_noop),
        session::left_behind(&run),
    );
    Ok((Report::of(Command::Recover, run), exit))
}

/// Why `recover --apply` without `--discard` is refused.
fn no_apply(path: &Path) -> String {
    let shown = shell_quote(&path.display().to_string());
    format!(
        "{}: recover only forecasts the master's resume: a reclaim written before resume takes \
         the lease's work away for good, since resume requeues only the leases still active when \
         it starts. To fix a torn tail or glued records, run `leasejournal repair --apply {shown}`; \
         to drop work on purpose, `leasejournal recover --discard --apply` with --all, --ttl, --id \
         or --worker. Nothing was changed",
        path.display()
    )
}

/// Whether `recover` reads `path` as a fenced lease table's root.
fn is_table(path: &Path, options: &WriteOptions) -> bool {
    options.kind.is_none() && table::is_table_root(path)
}

/// The forecast changes nothing: options asking for a change are refused.
fn refuse_changes(path: &Path, options: &WriteOptions) -> anyhow::Result<()> {
    if options.check {
        anyhow::bail!(
            "recover --check goes with --discard: the forecast changes nothing. Nothing was changed"
        );
    }
    if options.apply || options.output.is_some() {
        anyhow::bail!("{}", no_apply(path));
    }
    Ok(())
}

/// Forecasts resume for every journal of PATH (a journal or a state
/// directory), lease ages judged at `now`. Read-only: `options` asking for
/// a change (`--apply`, `--output`, `--check`) are refused, since only a
/// discard changes anything.
fn run_forecast(
    path: &Path,
    options: &WriteOptions,
    now: f64,
    next: &NextStart,
    table_settings: &TableSettings,
    progress: &dyn Progress,
    proc_locks: &ProcLocks,
) -> anyhow::Result<ForecastReport> {
    if is_table(path, options) {
        let tables = vec![table_forecast(path, table_settings, now)?];
        return Ok(ForecastReport {
            schema_version: schema::RECOVER,
            command: "recover",
            mode: "forecast",
            now,
            files: Vec::new(),
            ledger: None,
            tables,
            master_lock: None,
        });
    }
    refuse_changes(path, options)?;
    // A state directory without journals: resume has nothing to requeue.
    let files = match session::files_to_change(path, options.kind, &[Kind::Journal]) {
        Ok((_, files)) => files,
        Err(_) if path.is_dir() && statedir::examine(path, None).is_ok() => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut forecasts = Vec::new();
    for named in &files {
        // Read through a link as any reader does; shown by the name given.
        let path = named
            .link
            .as_ref()
            .map_or(named.path.as_path(), |l| Path::new(&l.path));
        let (file, _) = open::open_regular(path)?;
        let mut hidden = HiddenCount::default();
        let scan = read::scan_journal(path, &file, progress, &mut hidden)?;
        let seeds = crate::store::table::SeedFiles::default();
        let mut forecast = forecast(&scan.replay, &scan.summary.tail, now, |p| seeds.is_file(p));
        forecast.hidden_records = hidden.records;
        forecasts.push(ForecastFile {
            path: path.display().to_string(),
            forecast,
            before: StateView::of(&scan.replay),
        });
    }
    let mut named: Vec<(&str, &mut Forecast)> = forecasts
        .iter_mut()
        .map(|f| (f.path.as_str(), &mut f.forecast))
        .collect();
    mark_duplicates(&mut named);
    let dir = if path.is_dir() {
        path
    } else {
        parent_or_dot(path)
    };
    let ledger = ledger_dir::beside(dir)?
        .map(|found| judge_rescans(&found, next, &mut forecasts))
        .transpose()?;
    let tables = if path.is_dir() {
        table::tables_in(path)
            .iter()
            .map(|root| table_forecast(root, table_settings, now))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    if tables.is_empty() && table_settings.ttl.is_some() {
        anyhow::bail!(
            "{}: --ttl without --discard sets a fenced lease table's TTL, and there is no table here (a journal's forecast takes every lease, as resume does); nothing was changed",
            path.display()
        );
    }
    Ok(ForecastReport {
        schema_version: schema::RECOVER,
        command: "recover",
        mode: "forecast",
        now,
        files: forecasts,
        ledger,
        tables,
        master_lock: Some(lock::master_lock(dir, proc_locks.get())),
    })
}

/// What the next master start takes from the table at `root`.
fn table_forecast(
    root: &Path,
    settings: &TableSettings,
    now: f64,
) -> Result<TableForecast, crate::store::error::InputError> {
    let options = settings.options(now, crate::operations::findings::DEFAULT_SKEW, None);
    let report = table::read(root, &options)?;
    Ok(TableForecast {
        view: report.view(),
        recovered: report.recovered.clone(),
        committing: report.committing.len(),
        expired: report.expired,
    })
}

/// The content digest the rescan compares for a reclaimed item: the one
/// its payload recorded, or else that of its seed file as it is now (a
/// deferred dispatch's payload records none); `None` for a continuation.
fn item_digest(r: &crate::engine::journal::Requeue) -> Option<Digest> {
    let item = r.item.as_ref()?;
    if item.continuation.is_some() {
        return None;
    }
    if let Some(digest) = r.digest.as_deref().and_then(Digest::parse) {
        return Some(digest);
    }
    if r.outcome != ResumeOutcome::Requeued {
        return None;
    }
    ledger_dir::digest_of(Path::new(&item.path)).ok()
}

/// Reads the ledger as the next master start does and says, for each
/// reclaimed item, whether its AFL rescan dispatches the input again.
fn judge_rescans(
    found: &ledger_dir::LedgerDir,
    next: &NextStart,
    forecasts: &mut [ForecastFile],
) -> Result<LedgerView, InputError> {
    let digests: Vec<Vec<Option<Digest>>> = forecasts
        .iter()
        .map(|f| {
            f.forecast
                .reclaims
                .iter()
                .map(|r| next.ledger_used().then(|| item_digest(r)).flatten())
                .collect()
        })
        .collect();
    let probes: Vec<Digest> = digests.iter().flatten().flatten().copied().collect();
    let read = ledger::next_ledger(found, next, probes)?;
    for (file, digests) in forecasts.iter_mut().zip(digests) {
        for (r, digest) in file.forecast.reclaims.iter_mut().zip(digests) {
            let continuation = r.item.as_ref().is_some_and(|i| i.continuation.is_some());
            r.rescan = Some(if continuation && read.view.used {
                Rescan::because(RescanWhy::Continuation)
            } else {
                read.rescan(digest)
            });
        }
    }
    Ok(read.view)
}

/// Discards the selected leases of one journal according to the session's
/// mode.
fn discard_file(
    session: &Session<'_>,
    path: &Path,
    request: &DiscardRequest,
    now: f64,
    progress: &dyn Progress,
) -> anyhow::Result<Outcome<Discard>> {
    let removed_temp_files = session.clean_temps(path);
    let opened = Opened::open(path)?;
    let mut scan = opened.scan(progress, |src| crate::engine::journal::scan(src, &mut ()))?;
    let mut plan = discard(
        &mut scan.replay,
        &scan.summary.tail,
        &request.selection,
        now,
        request.limit,
    );
    drop(scan);
    let export = |attempt: usize| match &request.export {
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
    failpoint::hit("planned")?;
    // Nothing is exported for a discard that will not happen.
    opened.identity.check(path)?;
    // The export first, fsynced: no work disappears without a copy. Our
    // own default name moves aside for an earlier export of the same
    // second; a name given with --export is never overwritten.
    let note = |to: &Path| {
        format!(
            "exported {} of {} to {}",
            if plan.reclaims.len() == 1 {
                "1 discarded lease".to_string()
            } else {
                format!("{} discarded leases", plan.reclaims.len())
            },
            path.display(),
            to.display()
        )
    };
    let mut attempt = 0;
    let written_to = loop {
        let target = export(attempt);
        match session.export(&target, &plan.export_lines, note(&target)) {
            Ok(()) => break target,
            Err(WriteError::Exists { .. }) if request.export.is_none() && attempt < 1000 => {
                attempt += 1;
            }
            Err(e) => return Err(e.into()),
        }
    };
    outcome.plan.export = Some(written_to.display().to_string());
    let plan = &outcome.plan;
    let version = opened.version();
    let published = session.publish(
        opened,
        Publication::sealed_append(version, &plan.tail, &plan.append, &plan.after),
    )?;
    published.record_sealing(&mut outcome, |plan| Some(&mut plan.tail));
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::journal;

    const A: &str = r#"{"attempts":1,"clock":"unix","id":"c178b7e31d5efb37c2e443f52fef64f302d73c6fe5c3e71c78b968b7115c88b4","op":"lease","payload":{"path":"torn-1"},"time":1754550000.0,"worker":1}"#;
    const B: &str = r#"{"attempts":1,"clock":"unix","id":"d877ee1daaa3f2319c2261cb2a5b71e9120717053d64721763ff968b221e0f7b","op":"lease","payload":{"path":"torn-2"},"time":1754550001.0,"worker":2}"#;
    const LEGACY: &str = r#"{"op": "lease", "id": "b3ebf1ab1e22ca48684634c8a2b31bf4f956e0964f7eccb2c2e09cb59f6cc088", "payload": {"path": "legacy", "target_branch": 5}, "worker": 1, "time": 123456.789, "attempts": 1}"#;

    #[test]
    fn forecast_orders_like_upstream_and_says_what_is_dropped() {
        let input = format!("{A}\n{LEGACY}\n{B}");
        let scan = journal::scan(input.as_bytes(), &mut ()).unwrap();
        let f = forecast(&scan.replay, &scan.summary.tail, 1754550100.0, |p| {
            p == "torn-2"
        });
        let order: Vec<String> = f
            .reclaims
            .iter()
            .map(|r| r.lease.id.to_hex()[..4].to_string())
            .collect();
        // attempts tie; then by time: the legacy lease (123456.789) first.
        assert_eq!(order, ["b3eb", "c178", "d877"]);
        assert_eq!(f.requeued, 1);
        assert_eq!(f.dropped, 2);
        assert!(f.first_append.glues, "the last record has no newline");
    }

    #[test]
    fn discard_selects_by_every_condition_and_exports_the_leases() {
        let input = format!("{A}\n{B}\n{LEGACY}\n");
        let mut scan = journal::scan(input.as_bytes(), &mut ()).unwrap();
        let selection = Selection {
            worker: Some(1),
            ttl: Some(3600.0),
            ..Selection::default()
        };
        let d = discard(
            &mut scan.replay,
            &scan.summary.tail,
            &selection,
            1754550100.0,
            0,
        );
        // Worker 1 owns A (not expired at a 3600 s TTL) and the legacy
        // lease (always expired).
        assert_eq!(d.reclaims.len(), 1);
        assert_eq!(d.reclaims[0].id.to_hex()[..4], *"b3eb");
        let export = String::from_utf8(d.export_lines).unwrap();
        assert!(export.starts_with("{\"attempts\":1,\"clock\":\"legacy\",\"id\":\"b3eb"));
        assert!(
            String::from_utf8(d.append)
                .unwrap()
                .ends_with("\"op\":\"reclaim\",\"time\":1754550100.0}\n")
        );
        assert_eq!(d.after.active, 2);
    }
}
