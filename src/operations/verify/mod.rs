//! `verify`, the pre-resume go/no-go: every path checked
//! (`operations::findings`), resume's forecast judged, one report
//! ([`report`]) and the exit status that goes with it. Read-only; nothing
//! is printed here.

pub mod remote;
pub mod report;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

pub use remote::RemoteMasterReport;
pub use report::{
    CheckError, FileCounts, MustDo, RemedyTargets, SettingsReport, TargetReport, Verdict,
    VerifyReport, must_do, next_steps,
};

use crate::engine::journal::Forecast;
use crate::operations::exit::Exit;
use crate::operations::findings::Settings;
use crate::operations::findings::catalog::{CHECKED, Code, Findings, NOT_CHECKABLE};
use crate::operations::findings::journal::{check_journal, resume_findings};
use crate::operations::findings::ledger;
use crate::operations::findings::state::{directory, snapshot};
use crate::operations::ledger::{LedgerView, NextStart};
use crate::operations::schema;
use crate::operations::table;
use crate::store::error::{InputError, in_words};
use crate::store::format::{self, Kind};
use crate::store::lock::{Holder, ProcLocks};
use crate::store::open;
use crate::store::path::parent_or_dot;
use crate::store::progress::Progress;
use crate::store::read;
use crate::store::resolve::{self, Purpose, Target};

/// Verifies `paths` (read as `kind`, or as detected) and judges them:
/// the report, and the exit status its verdict calls for. A path that
/// cannot be read is an error of the report, not of the run.
pub fn verify(
    paths: &[PathBuf],
    kind: Option<Kind>,
    settings: &Settings,
    next: &NextStart,
    progress: &dyn Progress,
) -> (VerifyReport, Exit) {
    // Read once for every path: who holds which lock.
    let proc_locks = ProcLocks::default();
    let checked = read::each_path(paths, |path| {
        verify_target(path, kind, settings, next, &proc_locks, progress)
    });
    let mut all = Findings::default();
    // Findings per code of the paths no master is running in: the ones
    // the writers (and the operator) can act on now.
    let mut idle: BTreeMap<Code, u64> = BTreeMap::new();
    let mut targets = Vec::new();
    let mut remedies = Vec::new();
    let mut errors = Vec::new();
    for (path, checked) in paths.iter().zip(checked) {
        match checked {
            Ok(mut checked) => {
                let fixes = checked
                    .remedies
                    .apply(&mut checked.findings, settings.strict);
                let busy = !checked.master_holders.is_empty() || checked.held_elsewhere;
                // The writers refuse a running master's directory.
                if !busy {
                    remedies.push(fixes);
                    for (code, n) in &checked.findings.counts {
                        *idle.entry(*code).or_default() += n;
                    }
                }
                targets.push(TargetReport {
                    path: path.display().to_string(),
                    kind: checked.kind,
                    verdict: Verdict::of(&checked.findings, settings.strict, busy),
                    counts: checked.findings.counts.clone(),
                    master_pids: checked.master_holders.iter().map(|h| h.pid).collect(),
                    master_holders: checked.master_holders,
                    master_lock: busy.then(|| {
                        checked
                            .dir
                            .join(crate::store::lock::MASTER_LOCK)
                            .display()
                            .to_string()
                    }),
                    remote_master: checked.remote,
                    ledger: checked.ledger,
                    tables: checked.tables,
                });
                all.extend(checked.findings);
            }
            Err(cause) => errors.push(CheckError {
                path: path.display().to_string(),
                file: cause.path.display().to_string(),
                message: cause.problem.to_string(),
                cause,
            }),
        }
    }
    let verdict = Verdict::overall(targets.iter().map(|t| t.verdict), !errors.is_empty());
    let exit = verdict.exit();
    let must_do = must_do(&idle, settings.strict);
    let not_listed = all
        .by_severity
        .iter()
        .filter(|(sev, _)| **sev < settings.min_severity)
        .map(|(sev, n)| (*sev, *n))
        .collect();
    let report = VerifyReport {
        schema_version: schema::VERIFY,
        verdict,
        exit_code: exit.code(),
        findings: all
            .examples
            .into_iter()
            .filter(|f| f.severity >= settings.min_severity)
            .collect(),
        not_listed,
        // The writing commands refuse a running master's directory.
        next: next_steps(&remedies),
        must_do,
        counts: all.counts,
        severities: all.by_severity,
        files: all
            .by_file
            .into_iter()
            .map(|(file, counts)| FileCounts { file, counts })
            .collect(),
        // Nothing read, nothing checked.
        checked: if targets.is_empty() { &[] } else { CHECKED },
        not_checkable: NOT_CHECKABLE,
        targets,
        errors,
        settings: SettingsReport {
            now: settings.now,
            ttl: settings.ttl,
            skew: settings.skew,
            strict: settings.strict,
            max_examples: settings.max_examples,
            ignored_codes: settings.ignore.clone(),
            min_severity: settings.min_severity,
            remote_master: settings.remote_master,
        },
    };
    (report, exit)
}

/// Checks one file; for a journal, also forecasts what resume does with
/// its leases (seed paths looked up from the current directory).
fn verify_file(
    path: &Path,
    kind: Kind,
    prefix: Vec<u8>,
    mut file: std::fs::File,
    settings: &Settings,
    progress: &dyn Progress,
) -> Result<(Findings, Option<Forecast>), InputError> {
    match kind {
        Kind::Journal => check_journal(path, &file, settings, progress)
            .map(|(findings, forecast)| (findings, Some(forecast))),
        Kind::Snapshot => {
            let mut bytes = prefix;
            file.read_to_end(&mut bytes)
                .map_err(|e| InputError::new(path, format!("read error: {}", in_words(&e))))?;
            Ok((
                snapshot(&bytes, &path.display().to_string(), settings),
                None,
            ))
        }
    }
}

/// Reads and checks a fenced lease table.
fn check_table(
    root: &Path,
    settings: &Settings,
) -> Result<(Findings, table::TableView), InputError> {
    let table = table::TableSettings {
        kind: settings.table_kind,
        lease_shards: settings.lease_shards,
        ttl: settings.table_ttl,
    };
    let options = table.options(settings.now, settings.skew, None);
    let report = table::read(root, &options)?;
    Ok((
        crate::operations::findings::table::check(&report, settings),
        report.view(),
    ))
}

/// What checking one path gave.
struct Checked {
    kind: &'static str,
    findings: Findings,
    remedies: RemedyTargets,
    master_holders: Vec<Holder>,
    /// The directory whose lock was looked at.
    dir: PathBuf,
    /// A master on another host, when the directory is on a shared mount.
    remote: Option<RemoteMasterReport>,
    /// Whether the probe found the lock held by no process on this host.
    held_elsewhere: bool,
    /// The digest ledger as the next master start reads it (a state
    /// directory that has one).
    ledger: Option<LedgerView>,
    /// The fenced lease tables checked.
    tables: Vec<crate::operations::table::TableView>,
}

/// Adds what is known of a master on another host to `checked` (its
/// directory shown as `shown`), unless one on this host holds the lock
/// (then the verdict is busy anyway).
fn look_elsewhere(mut checked: Checked, shown: &str, settings: &Settings) -> Checked {
    if checked.master_holders.is_empty() {
        let found = remote::check(&checked.dir, shown, settings);
        checked.findings.extend(found.findings);
        // The writers refuse such a mount without the operator's word.
        checked.remedies.remote_none = found.report.as_ref().is_some_and(|r| {
            r.ruled_out_by == Some("operator")
                && r.mount
                    .as_ref()
                    .is_some_and(|m| m.flock != crate::store::mount::FlockReach::AcrossHosts)
        });
        checked.remote = found.report;
        checked.held_elsewhere = found.held_elsewhere;
    }
    checked
}

/// Checks one command-line path: a file, standard input or a state
/// directory (its digest ledger as `next` reads it).
fn verify_target(
    path: &Path,
    kind: Option<Kind>,
    settings: &Settings,
    next: &NextStart,
    proc_locks: &ProcLocks,
    progress: &dyn Progress,
) -> Result<Checked, InputError> {
    let shown = path.display().to_string();
    if kind.is_none() && table::is_table_root(path) {
        let (findings, view) = check_table(path, settings)?;
        return Ok(Checked {
            kind: "table",
            findings,
            remedies: RemedyTargets {
                repair: None,
                snapshot: None,
                remote_none: false,
                shard_count: None,
                tables: vec![(shown, Some(view.shard_count))],
            },
            master_holders: Vec::new(),
            dir: path.to_path_buf(),
            remote: None,
            held_elsewhere: false,
            ledger: None,
            tables: vec![view],
        });
    }
    match resolve::resolve(path, kind, Purpose::Read(proc_locks))? {
        Target::File {
            path,
            kind,
            prefix,
            file,
        } => {
            // A file inside a running master's directory is as busy as the
            // directory.
            let dir = parent_or_dot(&path);
            // Standard input has no directory, and nothing to fix in place.
            let stdin = open::is_stdin(&path);
            let holders = if stdin {
                Vec::new()
            } else {
                crate::store::lock::master_lock(dir, proc_locks.get()).processes
            };
            let (name, snapshot) = match kind {
                Kind::Journal => ("journal", None),
                Kind::Snapshot => ("snapshot", (!stdin).then(|| shown.clone())),
            };
            let (mut findings, forecast) =
                verify_file(&path, kind, prefix, file, settings, progress)?;
            if let Some(forecast) = forecast {
                findings.extend(resume_findings(vec![(shown.clone(), forecast)], settings));
            }
            let checked = Checked {
                kind: name,
                findings,
                remedies: RemedyTargets {
                    repair: (!stdin).then_some(shown),
                    snapshot,
                    remote_none: false,
                    shard_count: None,
                    tables: Vec::new(),
                },
                master_holders: holders,
                dir: dir.to_path_buf(),
                remote: None,
                held_elsewhere: false,
                ledger: None,
                tables: Vec::new(),
            };
            Ok(if stdin {
                checked
            } else {
                let dir_shown = dir.display().to_string();
                look_elsewhere(checked, &dir_shown, settings)
            })
        }
        Target::Directory(dir) => {
            let has_work = dir
                .files
                .iter()
                .any(|(p, _)| p.ends_with(format::WORK_LEASES));
            let mut findings = directory(
                &shown,
                has_work,
                (&dir.temp_files, &dir.backups),
                &dir.master_lock,
                settings,
            );
            let mut snapshot = None;
            let mut forecasts = Vec::new();
            for (file_path, kind) in &dir.files {
                let (file, _) = open::open_regular(file_path)?;
                if *kind == Kind::Snapshot {
                    snapshot = Some(file_path.display().to_string());
                }
                let (found, forecast) =
                    verify_file(file_path, *kind, Vec::new(), file, settings, progress)?;
                findings.extend(found);
                if let Some(forecast) = forecast {
                    forecasts.push((file_path.display().to_string(), forecast));
                }
            }
            // The ledger reads the forecasts before resume's duplicates
            // are marked in them, which changes nothing it looks at.
            let ledger_checked = match &dir.ledger {
                Some(ledger_dir) => Some(ledger::check(ledger_dir, &forecasts, next, settings)?),
                None => None,
            };
            if let Some(what) = dir.ledger_blocker {
                let path = dir.path.join(crate::engine::ledger::DIR);
                findings.extend(ledger::blocked(
                    &path.display().to_string(),
                    what,
                    next,
                    settings,
                ));
            }
            findings.extend(resume_findings(forecasts, settings));
            let view = ledger_checked.map(|(found, read)| {
                findings.extend(found);
                read.view
            });
            let shard_count = view
                .as_ref()
                .and_then(|v| v.read.as_ref())
                .map(|r| r.shard_count);
            let mut tables = Vec::new();
            let mut table_roots = Vec::new();
            for root in table::tables_in(&dir.path) {
                let (found, table_view) = check_table(&root, settings)?;
                findings.extend(found);
                table_roots.push((root.display().to_string(), Some(table_view.shard_count)));
                tables.push(table_view);
            }
            Ok(look_elsewhere(
                Checked {
                    kind: "directory",
                    findings,
                    remedies: RemedyTargets {
                        repair: Some(shown.clone()),
                        snapshot,
                        remote_none: false,
                        shard_count,
                        tables: table_roots,
                    },
                    master_holders: dir.master_lock.processes,
                    dir: dir.path,
                    remote: None,
                    held_elsewhere: false,
                    ledger: view,
                    tables,
                },
                &shown,
                settings,
            ))
        }
    }
}
