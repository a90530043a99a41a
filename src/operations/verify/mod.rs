//! `verify`, the pre-resume go/no-go: every path checked, resume's
//! forecast judged, one report and the exit status that goes with it.
//! Read-only; nothing is printed here.
//!
//! The parts: the finding catalog ([`catalog`]), the checks of journals,
//! snapshots and state directories ([`checks`]), the findings they yield
//! ([`findings`]) and the report ([`report`]).

pub mod catalog;
pub mod checks;
pub mod findings;
pub mod report;

use std::io::Read;
use std::path::{Path, PathBuf};

pub use catalog::{CHECKED, Code, CodeInfo, NOT_CHECKABLE, Remedy, Scope, Severity};
#[cfg(any(test, feature = "test-hooks"))]
pub use checks::check_shortcut;
pub use checks::{
    JournalVerification, LineChecks, directory, ignore_code, journal, resume, snapshot,
};
pub use findings::{At, Finding, Findings, Id};
pub use report::{
    CheckError, FileCounts, RemedyTargets, SettingsReport, TargetReport, Verdict, VerifyReport,
    next_steps,
};

use crate::engine::journal::Positional;
use crate::engine::journal::{self as resume, Forecast};
use crate::operations::exit::Exit;
use crate::operations::schema;
use crate::store::error::InputError;
use crate::store::error::in_words;
use crate::store::format;
use crate::store::format::Kind;
use crate::store::lock::ProcLocks;
use crate::store::open;
use crate::store::progress::Progress;
use crate::store::read;
use crate::store::resolve::Target;
use crate::store::resolve::{self, Purpose};

/// What a verification asks.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The present, in Unix seconds.
    pub now: f64,
    /// Leases at least this old are expired (0: all, as resume does).
    pub ttl: f64,
    /// Clock tolerance for future leases and regressions.
    pub skew: f64,
    /// Examples kept per code (0: all). Counts stay exact.
    pub max_examples: usize,
    /// Codes to leave out entirely, as given (the report echoes them).
    pub ignore: Vec<Code>,
    /// Warnings make the verdict no-go too.
    pub strict: bool,
}

/// Verifies `paths` (read as `kind`, or as detected) and judges them:
/// the report, and the exit status its verdict calls for. A path that
/// cannot be read is an error of the report, not of the run.
pub fn verify(
    paths: &[PathBuf],
    kind: Option<Kind>,
    settings: &Settings,
    progress: &dyn Progress,
) -> (VerifyReport, Exit) {
    // Read once for every path: who holds which lock.
    let proc_locks = ProcLocks::default();
    let checked = read::each_path(paths, |path| {
        verify_target(path, kind, settings, &proc_locks, progress)
    });
    let mut all = Findings::default();
    let mut targets = Vec::new();
    let mut remedies = Vec::new();
    let mut errors = Vec::new();
    for (path, checked) in paths.iter().zip(checked) {
        match checked {
            Ok(mut checked) => {
                remedies.push(checked.remedies.apply(&mut checked.findings));
                let busy = !checked.master_pids.is_empty();
                targets.push(TargetReport {
                    path: path.display().to_string(),
                    kind: checked.kind,
                    verdict: Verdict::of(&checked.findings, settings.strict, busy),
                    counts: checked.findings.counts.clone(),
                    master_pids: checked.master_pids,
                    master_lock: busy.then(|| {
                        checked
                            .dir
                            .join(crate::store::lock::MASTER_LOCK)
                            .display()
                            .to_string()
                    }),
                });
                all.extend(checked.findings);
            }
            Err(cause) => errors.push(CheckError {
                path: path.display().to_string(),
                message: cause.problem.clone(),
                cause,
            }),
        }
    }
    let verdict = Verdict::overall(targets.iter().map(|t| t.verdict), !errors.is_empty());
    let exit = verdict.exit();
    let report = VerifyReport {
        schema_version: schema::VERIFY,
        verdict,
        exit_code: exit.code(),
        findings: all.examples,
        // The writing commands refuse a running master's directory.
        next: if verdict == Verdict::Busy {
            Vec::new()
        } else {
            next_steps(&remedies)
        },
        counts: all.counts,
        severities: all.by_severity,
        files: all
            .by_file
            .into_iter()
            .map(|(file, counts)| FileCounts { file, counts })
            .collect(),
        checked: CHECKED,
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
    let shown = path.display().to_string();
    let read_error =
        |e: &std::io::Error| InputError::new(path, format!("read error: {}", in_words(e)));
    match kind {
        Kind::Journal => {
            let deferred = path.file_name().is_some_and(|n| n == format::DEFERRED);
            let len = open::size(path, &file)?;
            let meter = progress.meter(path, len);
            let advance = |n| meter.advance(n);
            let src = Positional::file(&file, len).with_progress(&advance);
            let result = journal(src, &shown, deferred, settings)
                .map(|mut v| {
                    // The forecast needs the active leases only: the
                    // completed set goes first, so that the two never
                    // add up at peak.
                    drop(std::mem::take(&mut v.replay.completed));
                    let forecast =
                        resume::forecast(&v.replay, &v.summary.tail, settings.now, |p| {
                            Path::new(p).is_file()
                        });
                    (v.findings, Some(forecast))
                })
                .map_err(|e| read_error(&e));
            meter.finish();
            result
        }
        Kind::Snapshot => {
            let mut bytes = prefix;
            file.read_to_end(&mut bytes).map_err(|e| read_error(&e))?;
            Ok((snapshot(&bytes, &shown, settings), None))
        }
    }
}

/// The findings of resume's forecasts for a checked path's journals, in
/// the order resume reads them.
fn resume_findings(mut forecasts: Vec<(String, Forecast)>, settings: &Settings) -> Findings {
    let mut named: Vec<(&str, &mut Forecast)> = forecasts
        .iter_mut()
        .map(|(file, f)| (file.as_str(), f))
        .collect();
    resume::mark_duplicates(&mut named);
    resume(&forecasts, settings)
}

/// The codes whose findings depend on the state at the end of a journal:
/// the leases still active then, and resume's forecast of them. A stream
/// written as the file is read cannot know them ([`LineChecks`]).
pub const END_STATE: [Code; 5] = [
    Code::LegacyClockLease,
    Code::FutureLease,
    Code::ExpiredLease,
    Code::SeedMissing,
    Code::RequeuedTwice,
];

/// The end-state findings of `journals` (read in the order resume reads
/// them: resume's duplicates span them), as codes by line, one map per
/// journal. One read of each; memory is bounded by their active leases.
pub fn end_state_codes(
    journals: &[(PathBuf, std::fs::File)],
    settings: &Settings,
    progress: &dyn Progress,
) -> Result<Vec<std::collections::BTreeMap<u64, Vec<Code>>>, InputError> {
    // Every other code is left out, and each of these is kept.
    let settings = Settings {
        ignore: Code::ALL
            .iter()
            .copied()
            .filter(|c| !END_STATE.contains(c))
            .collect(),
        max_examples: 0,
        ..settings.clone()
    };
    let mut found = Findings::default();
    let mut forecasts = Vec::new();
    for (path, file) in journals {
        let file = file.try_clone().map_err(|e| InputError::io(path, &e))?;
        let (findings, forecast) =
            verify_file(path, Kind::Journal, Vec::new(), file, &settings, progress)?;
        found.extend(findings);
        forecasts.extend(forecast.map(|f| (path.display().to_string(), f)));
    }
    found.extend(resume_findings(forecasts, &settings));
    let mut maps = vec![std::collections::BTreeMap::new(); journals.len()];
    for finding in found.examples {
        let file = journals
            .iter()
            .position(|(path, _)| path.display().to_string() == finding.file);
        if let (Some(file), Some(line)) = (file, finding.line) {
            maps[file]
                .entry(line)
                .or_insert_with(Vec::new)
                .push(finding.code);
        }
    }
    Ok(maps)
}

/// What checking one path gave.
struct Checked {
    kind: &'static str,
    findings: Findings,
    remedies: RemedyTargets,
    master_pids: Vec<i64>,
    /// The directory whose lock was looked at.
    dir: PathBuf,
}

/// Checks one command-line path: a file, standard input or a state
/// directory.
fn verify_target(
    path: &Path,
    kind: Option<Kind>,
    settings: &Settings,
    proc_locks: &ProcLocks,
    progress: &dyn Progress,
) -> Result<Checked, InputError> {
    let shown = path.display().to_string();
    match resolve::resolve(path, kind, Purpose::Read(proc_locks))? {
        Target::File {
            path,
            kind,
            prefix,
            file,
        } => {
            // A file inside a running master's directory is as busy as the
            // directory.
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            // Standard input has no directory, and nothing to fix in place.
            let stdin = open::is_stdin(&path);
            let holders = if stdin {
                Vec::new()
            } else {
                crate::store::lock::master_lock(dir, proc_locks.get()).holders
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
            Ok(Checked {
                kind: name,
                findings,
                remedies: RemedyTargets {
                    repair: (!stdin).then_some(shown),
                    snapshot,
                },
                master_pids: holders,
                dir: dir.to_path_buf(),
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
            findings.extend(resume_findings(forecasts, settings));
            Ok(Checked {
                kind: "directory",
                findings,
                remedies: RemedyTargets {
                    repair: Some(shown),
                    snapshot,
                },
                master_pids: dir.master_lock.holders,
                dir: dir.path,
            })
        }
    }
}
