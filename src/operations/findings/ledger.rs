//! The checks of a state directory's digest ledger as the next master start
//! reads it (`operations::ledger`): files the shard count never reads,
//! tails the next append glues onto, lines upstream ignores, digests
//! outside their shard's file, repeats, upstream's limit, shard names that
//! are not files; and, across files, the active leases of the work
//! journal whose digest is in no ledger file.
//!
//! Each finding is judged by the question every finding is: does resuming
//! now lose, duplicate or misattribute work? A digest the next start does
//! not load is an input its AFL rescan dispatches again.

use std::path::Path;

use super::Settings;
use super::catalog::{At, Code, Findings, Id};
use crate::engine::journal::{Forecast, ResumeOutcome, WORK_LEASES};
use crate::engine::ledger::{MAX_DEDUP_ENTRIES, TailKind};
use crate::operations::ledger::{
    self, CountSource, Digest, IgnoredLine, LedgerFile, LedgerReport, NextLedger, NextStart, Reason,
};
use crate::operations::numbers::{count, plural};
use crate::store::error::InputError;
use crate::store::ledger::{self as ledger_dir, EntryKind, LedgerDir};

/// How many file names a message lists before it says how many more.
const NAMES_SHOWN: usize = 8;

/// Reads the ledger of a state directory as the next master start does
/// (`start`), with the digests of the work journal's requeued leases
/// answered, and checks it and those leases. `forecasts` are the
/// directory's journals' forecasts, in the order resume reads them. A
/// shard file that cannot be read is the error, naming it.
pub fn check(
    dir: &LedgerDir,
    forecasts: &[(String, Forecast)],
    start: &NextStart,
    settings: &Settings,
) -> Result<(Findings, NextLedger), InputError> {
    let work = forecasts
        .iter()
        .find(|(file, _)| file.ends_with(WORK_LEASES));
    let probes = work.map_or_else(Vec::new, |(_, f)| lease_digests(f));
    let next = ledger::next_ledger(dir, start, probes)?;
    let mut findings = Findings::default();
    let Some(report) = &next.report else {
        let shown = start
            .persistent_state_shown()
            .unwrap_or_else(|| "SYMCC_PERSISTENT_STATE".into());
        findings.add(settings, Code::LedgerOff, &next.view.path, At::default(), || {
            format!(
                "{shown}: the next master reads no ledger, so its AFL rescan skips no input and dispatches every input of the AFL queue again"
            )
        });
        return Ok((findings, next));
    };
    whole(&mut findings, report, settings);
    for file in &report.files {
        each_file(&mut findings, report, file, settings)?;
    }
    if let Some((file, forecast)) = work {
        leases(&mut findings, &next, file, forecast, settings);
    }
    Ok((findings, next))
}

/// Something that is not a directory stands at `.state_shards`: the next
/// start cannot make its ledger (unless the ledger is off).
pub fn blocked(path: &str, what: &str, start: &NextStart, settings: &Settings) -> Findings {
    let mut findings = Findings::default();
    if start.ledger_used() {
        findings.add(settings, Code::LedgerNotADirectory, path, At::default(), || {
            format!(
                "{what}, not a directory: the next master start cannot make its digest ledger (durable_makedirs raises NotADirectoryError), so no dispatched input is recorded for the AFL rescan to skip"
            )
        });
    }
    findings
}

/// The digests of the leases resume requeues with their seed: the ones
/// whose input the rescan could dispatch a second time.
fn lease_digests(forecast: &Forecast) -> Vec<Digest> {
    forecast
        .reclaims
        .iter()
        .filter(|r| r.outcome == ResumeOutcome::Requeued)
        .filter_map(|r| r.digest.as_deref().and_then(Digest::parse))
        .collect()
}

/// The counts the files fit, in words.
fn fits(report: &LedgerReport) -> String {
    match &report.fitting_counts {
        None => "no digest says which count the files were written with".into(),
        Some(c) if c.is_empty() => "no count puts every digest in its own shard's file".into(),
        Some(c) => {
            let shown: Vec<String> = c.iter().take(NAMES_SHOWN).map(u32::to_string).collect();
            let more = if c.len() > NAMES_SHOWN { ", …" } else { "" };
            format!(
                "the files fit {} {}{more}",
                if c.len() == 1 {
                    "the count"
                } else {
                    "the counts"
                },
                shown.join(", ")
            )
        }
    }
}

/// Where the count comes from, in words.
fn source(report: &LedgerReport) -> &'static str {
    match report.shard_count_from {
        CountSource::Option => "--state-shards",
        CountSource::Environment => "SYMCC_STATE_SHARDS",
        CountSource::Workers => "min(64, --workers)",
        CountSource::Files => "the files",
    }
}

/// Names, at most [`NAMES_SHOWN`] of them.
fn names(all: &[&str]) -> String {
    let shown = all[..all.len().min(NAMES_SHOWN)].join(", ");
    match all.len().saturating_sub(NAMES_SHOWN) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// The findings of the ledger as a whole: the count, the unread files,
/// upstream's limit.
fn whole(f: &mut Findings, report: &LedgerReport, s: &Settings) {
    let dir = report.path.as_str();
    let n = report.shard_count;
    let shards = plural(u64::from(n), "shard", "shards");
    let note = report
        .shard_count_note
        .as_deref()
        .map_or(String::new(), |note| format!(" ({note})"));
    if report.shard_count_from == CountSource::Files {
        f.add(s, Code::LedgerCountUnknown, dir, At::default(), || {
            format!(
                "nothing says the next start's shard count{note}: read at {n}, the smallest count that reads every file; {}",
                fits(report)
            )
        });
    }
    if report.unread > 0 {
        let unread = report.unread_files();
        f.add(s, Code::LedgerUnreadShards, dir, At::default(), || {
            format!(
                "at {shards} ({}{note}) the master never reads {}: {} of {} {} only there, and the AFL rescan dispatches their inputs again; {}",
                source(report),
                names(&unread),
                count(report.unread),
                plural(report.distinct, "distinct digest", "distinct digests"),
                if report.unread == 1 { "is" } else { "are" },
                fits(report)
            )
        });
    }
    if report.over_limit > 0 {
        f.add(s, Code::LedgerOverLimit, dir, At::default(), || {
            format!(
                "{} distinct digests in the files {shards} read, {} beyond {}: upstream drops that many, arbitrary ones, and the AFL rescan dispatches their inputs again",
                count(report.digests + report.over_limit),
                count(report.over_limit),
                count(MAX_DEDUP_ENTRIES)
            )
        });
    }
}

/// The findings of one name of the ledger's directory that the count
/// reads (files it never reads are the unread files above).
fn each_file(
    f: &mut Findings,
    report: &LedgerReport,
    file: &LedgerFile,
    s: &Settings,
) -> Result<(), InputError> {
    if !file.read {
        return Ok(());
    }
    let path = format!("{}/{}", report.path, file.name);
    let index = file.index.unwrap_or_default();
    let Some(scan) = &file.scan else {
        let what = match file.kind {
            EntryKind::Dir => {
                format!("a directory where shard {index}'s file would be: upstream cannot open it")
            }
            // The master's next add creates the file it names.
            _ if ledger_dir::dangling(Path::new(&path)) => return Ok(()),
            _ => format!(
                "neither a file nor a directory where shard {index}'s file would be: a FIFO blocks the master's start at its open until something writes to it, a socket or a device cannot be read"
            ),
        };
        f.add(s, Code::LedgerNotAFile, &path, At::default(), || {
            format!("{what}, and every digest the next run adds to that shard is lost")
        });
        return Ok(());
    };
    let tail = scan.tail;
    let at_tail = At {
        line: Some(scan.lines),
        offset: Some(tail.offset),
        id: None,
    };
    let torn = matches!(tail.kind, TailKind::Torn | TailKind::Nul);
    match tail.kind {
        TailKind::Clean => {}
        TailKind::MissingNewline => f.add(s, Code::LedgerUnterminatedTail, &path, at_tail, || {
            "the last digest has no newline: loaded now, but the next digest the master adds glues onto it, and both are lost".into()
        }),
        TailKind::Torn => f.add(s, Code::LedgerTornTail, &path, at_tail, || {
            format!(
                "the last line ({}) is no digest and has no newline: a torn append; the next digest the master adds glues onto it and is lost",
                plural(tail.bytes, "byte", "bytes")
            )
        }),
        TailKind::Nul => f.add(s, Code::LedgerTornTail, &path, at_tail, || {
            format!(
                "{} end the file (a block never written): the next digest the master adds glues onto them and is lost",
                plural(tail.bytes, "NUL byte", "NUL bytes")
            )
        }),
    }
    let torn_line = u64::from(torn);
    if scan.ignored.total() > torn_line {
        ledger::ignored_lines(report, &file.name, |l: IgnoredLine| {
            if torn && l.line == scan.lines {
                return;
            }
            let at = At {
                line: Some(l.line),
                offset: Some(l.offset),
                id: None,
            };
            if l.reason == Reason::Blank {
                f.add(s, Code::LedgerBlankLine, &path, at, || "blank line".into());
            } else {
                f.add(s, Code::LedgerIgnoredLine, &path, at, || {
                    format!("{}: upstream does not load it", ignored_reason(l.reason))
                });
            }
        })?;
    }
    let n = report.shard_count;
    // Only a count the next start uses says where a digest belongs.
    if scan.misplaced > 0 && report.shard_count_from != CountSource::Files {
        f.add(s, Code::LedgerMisplaced, &path, At::default(), || {
            let which = match (scan.misplaced, scan.valid) {
                (1, 1) => "its digest belongs to another shard".to_string(),
                (1, v) => format!("1 of its {v} digests belongs to another shard"),
                (m, v) if m == v => {
                    format!("all {} of its digests belong to other shards", count(v))
                }
                (m, v) => format!(
                    "{} of its {} digests belong to other shards",
                    count(m),
                    count(v)
                ),
            };
            format!("{which} at {n}: loaded all the same")
        });
    }
    if scan.duplicates > 0 {
        f.add(s, Code::LedgerDuplicate, &path, At::default(), || {
            format!(
                "{} a digest read before: it is loaded once",
                plural(scan.duplicates, "line repeats", "lines repeat")
            )
        });
    }
    Ok(())
}

/// Why upstream ignores a line, in words.
fn ignored_reason(reason: Reason) -> &'static str {
    match reason {
        Reason::Blank => "blank line",
        Reason::Uppercase => "64 hex digits, some uppercase (upstream takes lowercase only)",
        Reason::WrongLength => {
            "hex digits, not 64 of them (a torn digest, or one glued onto a torn line)"
        }
        Reason::NonHex => "64 characters, not all hex digits",
        Reason::Nul => "NUL bytes (a block the file system never wrote)",
        Reason::Other => "not a digest",
    }
}

/// The work journal's active leases resume requeues whose input's digest
/// is in no ledger file: most likely never sent, and run twice.
fn leases(f: &mut Findings, next: &NextLedger, file: &str, forecast: &Forecast, s: &Settings) {
    let Some(report) = &next.report else { return };
    for r in &forecast.reclaims {
        if r.outcome != ResumeOutcome::Requeued {
            continue;
        }
        let Some(digest) = r.digest.as_deref().and_then(Digest::parse) else {
            continue;
        };
        let anywhere = report
            .probes
            .iter()
            .any(|p| p.digest == digest && p.anywhere);
        if anywhere {
            continue;
        }
        let at = At {
            line: Some(r.lease.line),
            offset: Some(r.lease.offset),
            id: Some(Id::Work(r.lease.id)),
        };
        f.add(s, Code::LeaseNotInLedger, file, at, || {
            let seed = r.item.as_ref().map_or(String::new(), |i| format!(" ({})", i.path));
            format!(
                "active lease of worker {}{seed}: its input's digest {} is in no ledger file, so the work was most likely never sent; resume requeues it and the AFL rescan dispatches the same input again",
                r.lease.worker,
                &digest.to_string()[..12]
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::journal::RescanWhy;
    use crate::engine::ledger::Reasons;
    use crate::operations::ledger::{LedgerView, Probe};

    /// A ledger of 5,000,007 distinct digests in 64 files, read at 64: a
    /// report, since no test writes 325 MB to find the limit.
    fn over_the_limit() -> LedgerReport {
        let distinct = MAX_DEDUP_ENTRIES + 7;
        LedgerReport {
            path: "run1/.state_shards".into(),
            shard_count: 64,
            shard_count_from: CountSource::Workers,
            shard_count_note: None,
            digests: MAX_DEDUP_ENTRIES,
            unread: 0,
            distinct,
            lines: distinct,
            valid: distinct,
            duplicates: 0,
            misplaced: 0,
            over_limit: 7,
            ignored: Reasons::default(),
            indices: (0..64).collect(),
            fitting_counts: Some(vec![64]),
            files: Vec::new(),
            queries: Vec::new(),
            probes: vec![Probe {
                digest: Digest([7; 32]),
                loaded: true,
                anywhere: true,
            }],
        }
    }

    #[test]
    fn more_digests_than_upstream_keeps_is_said_with_how_many_it_drops() {
        let settings = Settings::at(0.0);
        let mut f = Findings::default();
        whole(&mut f, &over_the_limit(), &settings);
        assert_eq!(f.counts.len(), 1);
        assert_eq!(f.counts.get(&Code::LedgerOverLimit), Some(&1));
        assert_eq!(
            f.examples[0].message,
            "5,000,007 distinct digests in the files 64 shards read, 7 beyond 5,000,000: upstream drops that many, arbitrary ones, and the AFL rescan dispatches their inputs again"
        );
        // A digest loaded then may be among those dropped: the rescan's
        // answer cannot be told.
        let next = NextLedger {
            view: LedgerView {
                path: "run1/.state_shards".into(),
                used: true,
                read: None,
            },
            report: Some(over_the_limit()),
        };
        let rescan = next.rescan(Some(Digest([7; 32])));
        assert_eq!(
            (rescan.sees_again, rescan.why),
            (None, RescanWhy::MayBeDropped)
        );
        assert_eq!(next.rescan(None).why, RescanWhy::NoDigest);
    }
}
