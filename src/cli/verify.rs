//! `leasejournal verify`: the pre-resume go/no-go. Read-only.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::inspect::KindArg;
use crate::operations::exit::Exit;
use crate::operations::input::InputError;
use crate::operations::input::{self, Target};
type Bar<'a> = (&'a ProgressArgs, Format);
use super::output::{
    Format, OutputArgs, ProgressArgs, parse_count, parse_now, parse_seconds, system_now,
};
use crate::engine::journal::Positional;
use crate::operations::recover::{self, Forecast};
use crate::operations::statedir::{self, Kind};
use crate::operations::verify::Code;
use crate::operations::verify::{
    self, CHECKED, CheckError, FileCounts, Findings, NOT_CHECKABLE, RemedyTargets, Settings,
    SettingsReport, TargetReport, VERIFY_SCHEMA_VERSION, Verdict, VerifyReport,
};
use crate::render;

/// Check journals, snapshots and state directories before resuming.
///
/// Run it in the job script right before SYMCC_RESUME=1. Every problem is a
/// finding with a stable code, a severity, the file, the line and byte
/// offset, the id and a message; `leasejournal explain CODE` says what a
/// code means, what upstream does with it and which command fixes it.
///
/// It also forecasts the master's resume as `recover` does: an active
/// lease whose seed is not a file here and that has no continuation
/// (seed-missing; relative paths are looked up from the current directory,
/// so run it where the master runs), and work resume would queue twice.
///
/// Every finding's severity answers one question: does resuming now lose,
/// duplicate or misattribute work? Where a command fixes a finding, the
/// report names it with the real path, and ends with the commands to run,
/// in order (next:); none of them ever reclaims a lease.
///
/// Verdict and exit status: go (0) when every path was checked, nothing is
/// an error (nor a warning, with --strict) and no master is running; no-go
/// (1) when something is; incomplete (2) when a path could not be checked;
/// busy (3) when a live master holds .master-queue.lock of a checked
/// directory (its pid is named). Busy wins over incomplete, incomplete
/// over no-go. With several paths each is reported separately.
#[derive(Clone, Debug, Args)]
pub struct VerifyArgs {
    /// Journals, snapshots and state directories; - reads standard input.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// Read file PATHs as this kind instead of detecting it.
    #[arg(long = "kind", value_enum, value_name = "KIND")]
    pub kind: Option<KindArg>,

    /// Judge lease ages and future times against this Unix time instead of
    /// the system clock.
    #[arg(long = "now", allow_negative_numbers = true, value_name = "UNIX_SECONDS", value_parser = parse_now)]
    pub now: Option<f64>,

    /// Report active unix leases at least this old as expired; 0 (the
    /// default) is what the master's resume uses: every lease expires.
    #[arg(long = "ttl", allow_negative_numbers = true, value_name = "SECONDS", default_value = "0", value_parser = parse_seconds)]
    pub ttl: f64,

    /// Clock tolerance for future leases and clock regressions.
    #[arg(long = "skew", allow_negative_numbers = true, value_name = "SECONDS", default_value = "300", value_parser = parse_seconds)]
    pub skew: f64,

    /// Fail on warnings too.
    #[arg(long = "strict")]
    pub strict: bool,

    /// Leave out findings with this code (repeatable).
    #[arg(
        long = "ignore",
        value_name = "CODE",
        value_parser = super::explain::CodeParser,
        hide_possible_values = true
    )]
    pub ignore: Vec<Code>,

    /// Show at most N examples per code (0: all); counts stay exact.
    #[arg(long = "max-examples", allow_negative_numbers = true, value_name = "N", default_value_t = 10, value_parser = parse_count)]
    pub max_examples: usize,

    /// Print nothing on stdout; only the exit status tells.
    #[arg(long = "quiet", short = 'q')]
    pub quiet: bool,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// Checks one file; for a journal, also forecasts what resume does with
/// its leases (seed paths looked up from the current directory).
fn verify_file(
    path: &Path,
    kind: Kind,
    prefix: Vec<u8>,
    mut file: std::fs::File,
    settings: &Settings,
    bar: Bar<'_>,
) -> Result<(Findings, Option<Forecast>), InputError> {
    let shown = path.display().to_string();
    match kind {
        Kind::Journal => {
            let deferred = path.file_name().is_some_and(|n| n == statedir::DEFERRED);
            let len = input::size(path, &file)?;
            let bar = bar.0.bar(path, len, bar.1);
            let progress = |n| bar.inc(n);
            let src = Positional::file(&file, len).with_progress(&progress);
            let result = verify::journal(src, &shown, deferred, settings)
                .map(|v| {
                    let forecast =
                        recover::forecast(&v.replay, &v.summary.tail, settings.now, |p| {
                            Path::new(p).is_file()
                        });
                    (v.findings, Some(forecast))
                })
                .map_err(|e| {
                    InputError::new(
                        path,
                        format!("read error: {}", crate::operations::input::in_words(&e)),
                    )
                });
            bar.finish_and_clear();
            result
        }
        Kind::Snapshot => {
            let mut bytes = prefix;
            file.read_to_end(&mut bytes).map_err(|e| {
                InputError::new(
                    path,
                    format!("read error: {}", crate::operations::input::in_words(&e)),
                )
            })?;
            Ok((verify::snapshot(&bytes, &shown, settings), None))
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
    recover::mark_duplicates(&mut named);
    verify::resume(&forecasts, settings)
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

fn verify_target(
    path: &Path,
    kind: Option<Kind>,
    settings: &Settings,
    proc_locks: Option<&str>,
    bar: Bar<'_>,
) -> Result<Checked, InputError> {
    let shown = path.display().to_string();
    match input::target(path, kind)? {
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
            let stdin = input::is_stdin(&path);
            let holders = if stdin {
                Vec::new()
            } else {
                statedir::master_lock(dir, proc_locks).holders
            };
            let (name, snapshot) = match kind {
                Kind::Journal => ("journal", None),
                Kind::Snapshot => ("snapshot", (!stdin).then(|| shown.clone())),
            };
            let (mut findings, forecast) = verify_file(&path, kind, prefix, file, settings, bar)?;
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
                .any(|(p, _)| p.ends_with(statedir::WORK_LEASES));
            let mut findings = verify::directory(
                &shown,
                has_work,
                (&dir.temp_files, &dir.backups),
                &dir.master_lock,
                settings,
            );
            let mut snapshot = None;
            let mut forecasts = Vec::new();
            for (file_path, kind) in &dir.files {
                let (file, _) = statedir::open_regular(file_path)?;
                if *kind == Kind::Snapshot {
                    snapshot = Some(file_path.display().to_string());
                }
                let (found, forecast) =
                    verify_file(file_path, *kind, Vec::new(), file, settings, bar)?;
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

/// Runs `verify`.
pub fn run(args: &VerifyArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let settings = Settings {
        now: args.now.unwrap_or_else(system_now),
        ttl: args.ttl,
        skew: args.skew,
        max_examples: args.max_examples,
        ignore: args.ignore.iter().copied().collect::<BTreeSet<_>>(),
    };
    let kind = args.kind.map(KindArg::kind);
    // Read once for every path: who holds which lock.
    let proc_locks = statedir::read_proc_locks();
    let mut all = Findings::default();
    let mut targets = Vec::new();
    let mut remedies = Vec::new();
    let mut errors = Vec::new();
    let format = if args.quiet {
        Format::Json
    } else {
        args.output.format
    };
    for path in &args.paths {
        match verify_target(
            path,
            kind,
            &settings,
            proc_locks.as_deref(),
            (&args.progress, format),
        ) {
            Ok(mut checked) => {
                remedies.push(checked.remedies.apply(&mut checked.findings));
                let busy = !checked.master_pids.is_empty();
                targets.push(TargetReport {
                    path: path.display().to_string(),
                    kind: checked.kind,
                    verdict: Verdict::of(&checked.findings, args.strict, busy),
                    counts: checked.findings.counts.clone(),
                    master_pids: checked.master_pids,
                    master_lock: busy.then(|| {
                        checked
                            .dir
                            .join(statedir::MASTER_LOCK)
                            .display()
                            .to_string()
                    }),
                });
                all.extend(checked.findings);
            }
            Err(err) => {
                super::tell(format_args!("{err}"));
                errors.push(CheckError {
                    path: path.display().to_string(),
                    message: err.problem,
                });
            }
        }
    }
    let verdict = Verdict::overall(targets.iter().map(|t| t.verdict), !errors.is_empty());
    let exit = match verdict {
        Verdict::Go => Exit::Success,
        Verdict::NoGo => Exit::Problems,
        Verdict::Incomplete => Exit::Trouble,
        Verdict::Busy => Exit::Refused,
    };
    if args.quiet {
        return Ok(exit);
    }
    let report = VerifyReport {
        schema_version: VERIFY_SCHEMA_VERSION,
        verdict,
        exit_code: exit.code(),
        findings: all.examples,
        next: if verdict == Verdict::Busy {
            Vec::new()
        } else {
            verify::next_steps(&remedies)
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
            strict: args.strict,
            max_examples: settings.max_examples,
            ignored_codes: args.ignore.clone(),
        },
    };
    match args.output.format {
        Format::Json => render::json(out, &report)?,
        Format::Table => render::verify(out, &report, &args.output.styles())?,
    }
    Ok(exit)
}
