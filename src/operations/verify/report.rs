//! The `verify --format json` document and what it is built from: each
//! path's verdict, the commands that fix what was found, the counts.

use std::collections::BTreeMap;

use serde::Serialize;

use super::remote::RemoteMasterReport;
use crate::operations::findings::RemoteMaster;
use crate::operations::ledger::LedgerView;
use crate::store::lock::Holder;

use crate::operations::exit::Exit;
use crate::operations::findings::catalog::{Code, Finding, Findings, Remedy, Severity};
use crate::store::error::InputError;
use crate::store::path::shell_quote;

/// The go/no-go answer of `verify`, one per exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Exit 0: every path checked, no error finding, no live master.
    Go,
    /// Exit 1: at least one error finding (or warning, with `--strict`).
    NoGo,
    /// Exit 2: a path could not be checked, or a master on another host
    /// could not be ruled out (`master-unseen`).
    Incomplete,
    /// Exit 3: a live master holds `.master-queue.lock` of a checked
    /// directory.
    Busy,
}

impl Verdict {
    /// The verdict of one checked path's findings.
    /// A definite no-go (an error, or a warning with `--strict`) is told
    /// before `master-unseen`'s incomplete.
    pub fn of(findings: &Findings, strict: bool, busy: bool) -> Verdict {
        if busy {
            return Verdict::Busy;
        }
        let n = |sev| findings.by_severity.get(&sev).copied().unwrap_or(0);
        let unseen = findings
            .counts
            .get(&Code::MasterUnseen)
            .copied()
            .unwrap_or(0);
        if n(Severity::Error) > unseen || (strict && n(Severity::Warning) > 0) {
            Verdict::NoGo
        } else if unseen > 0 {
            Verdict::Incomplete
        } else {
            Verdict::Go
        }
    }

    /// The verdict of a whole run: busy before incomplete before no-go.
    pub fn overall(targets: impl IntoIterator<Item = Verdict>, incomplete: bool) -> Verdict {
        let worst = targets.into_iter().max().unwrap_or(Verdict::Go);
        match worst {
            Verdict::Busy => Verdict::Busy,
            _ if incomplete => Verdict::Incomplete,
            other => other,
        }
    }

    /// The exit status that says it.
    pub fn exit(self) -> Exit {
        match self {
            Verdict::Go => Exit::Success,
            Verdict::NoGo => Exit::Problems,
            Verdict::Incomplete => Exit::Trouble,
            Verdict::Busy => Exit::Refused,
        }
    }

    /// The lowercase name (`go`, `no-go`, `incomplete`, `busy`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Go => "go",
            Verdict::NoGo => "no-go",
            Verdict::Incomplete => "incomplete",
            Verdict::Busy => "busy",
        }
    }
}

/// Where a checked path's findings are fixed.
#[derive(Clone, Debug)]
pub struct RemedyTargets {
    /// The path `repair` takes: the checked journal or state directory
    /// (none for standard input).
    pub repair: Option<String>,
    /// The snapshot `migrate` takes, if the checked path holds one.
    pub snapshot: Option<String>,
    /// Whether the commands need `--remote-master none`: the directory is
    /// on a shared mount whose flock may not reach other hosts, and the
    /// operator said no master runs on one.
    pub remote_none: bool,
    /// The shard count the next master start reads the digest ledger at,
    /// which a re-shard writes it for (a state directory whose count is
    /// given).
    pub shard_count: Option<u32>,
    /// The fenced lease tables `repair` takes, each with its shard count
    /// when it was given (a checked table root, or a state directory's
    /// own); a finding's table is the one its file is in.
    pub tables: Vec<(String, Option<u64>)>,
}

impl RemedyTargets {
    /// The command line of a remedy.
    pub fn command(&self, remedy: Remedy) -> Option<String> {
        let (verb, path, count) = match remedy {
            Remedy::RepairTable => return None,
            Remedy::Repair => ("repair", self.repair.as_deref()?, None),
            Remedy::MigrateSnapshot => ("migrate", self.snapshot.as_deref()?, None),
            Remedy::ReshardLedger => ("repair", self.repair.as_deref()?, Some(self.shard_count?)),
        };
        let remote = if self.remote_none {
            " --remote-master none"
        } else {
            ""
        };
        let count = count.map_or(String::new(), |n| format!(" --state-shards {n}"));
        Some(format!(
            "leasejournal {verb} --apply{remote}{count} {}",
            shell_quote(path)
        ))
    }

    /// Fills in each finding's `fix` (or, where no command fixes one that
    /// keeps the verdict from go, its `must_do`) and returns the remedies
    /// these findings' codes call for (all of them, not only the kept
    /// examples).
    pub fn apply(&self, findings: &mut Findings, strict: bool) -> Vec<(Remedy, String)> {
        for f in &mut findings.examples {
            f.fix = match f.remedy {
                Some(Remedy::RepairTable) => self.table_of(&f.file).map(table_command),
                Some(r) => self.command(r),
                None => None,
            };
            if f.fix.is_none() && blocks(f.severity, strict) {
                f.must_do = Some(must_do_text(f.code));
            }
        }
        let mut remedies: Vec<(Remedy, String)> = findings
            .remedies
            .iter()
            .filter_map(|&r| self.command(r).map(|c| (r, c)))
            .collect();
        for table in &self.tables {
            let repairs = findings.by_file.iter().any(|(file, codes)| {
                self.table_of(file) == Some(table)
                    && codes
                        .keys()
                        .any(|c| c.remedy() == Some(Remedy::RepairTable))
            });
            if repairs {
                remedies.push((Remedy::RepairTable, table_command(table)));
            }
        }
        remedies
    }

    /// The table a finding's file is in: the longest root it is under.
    fn table_of(&self, file: &str) -> Option<&(String, Option<u64>)> {
        self.tables
            .iter()
            .filter(|(root, _)| {
                file == root
                    || file
                        .strip_prefix(root.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
            .max_by_key(|(root, _)| root.len())
    }
}

/// `repair` of a fenced lease table, which needs the operator's word that
/// every master using it is stopped.
fn table_command((root, shards): &(String, Option<u64>)) -> String {
    let shards = shards.map_or(String::new(), |n| format!(" --lease-shards {n}"));
    format!(
        "leasejournal repair --apply --all-masters-stopped{shards} {}",
        shell_quote(root)
    )
}

/// Whether a finding of this severity keeps the verdict from go.
fn blocks(severity: Severity, strict: bool) -> bool {
    severity == Severity::Error || (strict && severity == Severity::Warning)
}

/// What the verdict stays until a finding with this code no command fixes
/// is dealt with.
fn stays(code: Code) -> Verdict {
    if code == Code::MasterUnseen {
        Verdict::Incomplete
    } else {
        Verdict::NoGo
    }
}

/// What the operator must do about a finding no command fixes, and what
/// the verdict is until then.
fn must_do_text(code: Code) -> String {
    format!(
        "{}; no command fixes this, and the verdict stays {} until it is done",
        what_to_do(code),
        stays(code).as_str()
    )
}

/// The catalog's fix, and for a warning (which keeps the verdict from go
/// only under `--strict`) the way to judge without it once it is known.
fn what_to_do(code: Code) -> String {
    let fix = code.info().fix;
    if code.severity() == Severity::Warning {
        format!(
            "{fix}; under --strict, once you have looked and accept it, leave it out with --ignore {}",
            code.as_str()
        )
    } else {
        fix.to_string()
    }
}

/// A finding no command fixes, that keeps the verdict from go, by code
/// (`must_do` of the report).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MustDo {
    /// The code.
    pub code: Code,
    /// How many findings have it, over every path.
    pub count: u64,
    /// What the operator must do.
    pub must_do: String,
    /// The verdict until then (`no-go`, or `incomplete` for
    /// `master-unseen`).
    pub verdict_until_done: Verdict,
}

/// Every code of `counts` (exact, per code, of the paths no master is
/// running in) that no command fixes and that keeps the
/// verdict from go, in catalog order.
pub fn must_do(counts: &BTreeMap<Code, u64>, strict: bool) -> Vec<MustDo> {
    Code::ALL
        .iter()
        .filter(|code| code.remedy().is_none() && blocks(code.severity(), strict))
        .filter_map(|&code| {
            let count = counts.get(&code).copied()?;
            Some(MustDo {
                code,
                count,
                must_do: what_to_do(code),
                verdict_until_done: stays(code),
            })
        })
        .collect()
}

/// The commands to run, in order: every repair, then every re-shard of a
/// ledger, then every migration; each once, in the order of the paths
/// within each kind.
pub fn next_steps(per_target: &[Vec<(Remedy, String)>]) -> Vec<String> {
    let mut next: Vec<String> = Vec::new();
    for remedy in [
        Remedy::Repair,
        Remedy::ReshardLedger,
        Remedy::MigrateSnapshot,
        Remedy::RepairTable,
    ] {
        for (r, command) in per_target.iter().flatten() {
            if *r == remedy && !next.contains(command) {
                next.push(command.clone());
            }
        }
    }
    next
}

/// One checked path.
#[derive(Debug, Serialize)]
pub struct TargetReport {
    /// The path as given.
    pub path: String,
    /// `journal`, `snapshot`, `directory` or `table`.
    pub kind: &'static str,
    /// Its verdict (`go`, `no-go`, `incomplete` for `master-unseen`, or
    /// `busy`).
    pub verdict: Verdict,
    /// Findings per code.
    pub counts: BTreeMap<Code, u64>,
    /// Pids holding the directory's `.master-queue.lock` (a directory, or
    /// a file inside one): the processes that hold it now, where `/proc`
    /// shows them, else the one `/proc/locks` names.
    pub master_pids: Vec<i64>,
    /// Those holders, each with its command and the process it inherited
    /// the lock from, if another took it.
    pub master_holders: Vec<Holder>,
    /// That lock file, when it is held.
    pub master_lock: Option<String>,
    /// On a file system other hosts share: the mount, how far `flock`
    /// reaches, and what rules out a master on another host, if anything.
    pub remote_master: Option<RemoteMasterReport>,
    /// A state directory's digest ledger (`.state_shards/`) as the next
    /// master start reads it; `null` for a file, or a directory without
    /// one.
    pub ledger: Option<LedgerView>,
    /// The fenced lease tables checked (a table root, or a state
    /// directory's own), as upstream's scans count them.
    pub tables: Vec<crate::operations::table::TableView>,
}

/// One file's findings per code.
#[derive(Debug, Serialize)]
pub struct FileCounts {
    /// The file (or directory) as findings name it.
    pub file: String,
    /// Findings per code.
    pub counts: BTreeMap<Code, u64>,
}

/// A path that could not be checked.
#[derive(Debug, Serialize)]
pub struct CheckError {
    /// The path.
    pub path: String,
    /// The file that could not be read: the path, or a file in its
    /// directory (a journal, a snapshot, a shard file of its ledger).
    pub file: String,
    /// Why.
    pub message: String,
    /// The error itself, naming the file that could not be read (the
    /// path, or a file in its directory), as it is told on stderr.
    #[serde(skip)]
    pub cause: InputError,
}

/// The settings echoed in the report.
#[derive(Debug, Serialize)]
pub struct SettingsReport {
    /// `--now`
    pub now: f64,
    /// `--ttl`
    pub ttl: f64,
    /// `--skew`
    pub skew: f64,
    /// `--strict`
    pub strict: bool,
    /// `--max-examples`
    pub max_examples: usize,
    /// `--ignore`
    pub ignored_codes: Vec<Code>,
    /// `--min-severity`
    pub min_severity: Severity,
    /// `--remote-master`
    pub remote_master: RemoteMaster,
}

/// The `verify --format json` document.
#[derive(Debug, Serialize)]
pub struct VerifyReport {
    /// Contract version ([`schema::VERIFY`](crate::operations::schema::VERIFY)).
    pub schema_version: u32,
    /// Overall verdict.
    pub verdict: Verdict,
    /// The process's exit status (0 go, 1 no-go, 2 incomplete, 3 busy).
    pub exit_code: u8,
    /// Findings (at most --max-examples per code and target), of
    /// --min-severity or worse.
    pub findings: Vec<Finding>,
    /// Findings per severity below --min-severity, left out of `findings`.
    pub not_listed: BTreeMap<Severity, u64>,
    /// The commands that fix what was found, in the order to run them;
    /// then run verify again. The paths a master is running in (busy) are
    /// left out: the writing commands refuse them.
    pub next: Vec<String>,
    /// What no command fixes and keeps the verdict from go, by code: what
    /// the operator must do first (the paths no master is running in).
    pub must_do: Vec<MustDo>,
    /// Exact counts per code over all targets.
    pub counts: BTreeMap<Code, u64>,
    /// Exact counts per severity over all targets.
    pub severities: BTreeMap<Severity, u64>,
    /// Exact counts per file and code, files in the order they were read.
    pub files: Vec<FileCounts>,
    /// F314 invariants checked (none when no path could be read).
    pub checked: &'static [&'static str],
    /// Invariants files cannot show.
    pub not_checkable: &'static [&'static str],
    /// Per-path verdicts.
    pub targets: Vec<TargetReport>,
    /// Paths that could not be checked.
    pub errors: Vec<CheckError>,
    /// What was asked.
    pub settings: SettingsReport,
}
