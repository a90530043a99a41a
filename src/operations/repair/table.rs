//! `repair` of a fenced lease table (`.work_lease_table/`,
//! `.target_lease_table/`): what upstream's scans skip, refuse for ever or
//! raise on, moved out of the way with its bytes kept, and records its
//! scans cannot see moved back to the path their id names. Nothing is
//! rewritten or deleted, no lock file is touched, and no record upstream
//! accepts at its own path changes, except `done` records with
//! `--archive-done`.
//!
//! No lock covers a whole table and masters on other hosts share it, so
//! `--apply` needs the operator's word that every master using it is
//! stopped (`--all-masters-stopped`), and refuses while `/proc/locks`
//! shows a record lock of it held on this host. Each move then takes that
//! record's own `<id>.json.lock` as upstream does and skips the record
//! when the lock is held or the record changed since the plan
//! (`store::durable::move_entry`). After the moves the table is read again
//! ([`reread`]) to show that what was fixed is gone.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;

use crate::engine::journal::WorkId;
use crate::engine::table::{
    self, ARCHIVE_DIR, QUARANTINE_DIR, Reading, ShardName, Status, TableKind,
};
use crate::operations::numbers::plural;
use crate::operations::table::{self as tables, Counts, Setting, TableOptions, TableReport};
use crate::store::durable::{self, ChangeLog, RecordLock, Seen, WriteError};
use crate::store::error::InputError;
use crate::store::table as files;

/// How far ahead of now an update is "in the future" (verify's default).
const SKEW: f64 = 300.0;

/// What `repair` is asked to do to a table.
#[derive(Clone, Debug)]
pub struct TableRequest {
    /// `--lease-shards N`: the count the scans list; records are moved to
    /// their own path only at a count given so.
    pub lease_shards: Option<u64>,
    /// `--all-masters-stopped`: the operator's word that every master using
    /// the table, on every host, is stopped.
    pub all_masters_stopped: bool,
    /// `--archive-done`: move `done` records to the archive.
    pub archive_done: bool,
    /// `--reshard`: move records to this count's directories even where
    /// they all sit where another count puts them.
    pub reshard: bool,
    /// `--ttl`: the table's TTL, as for `inspect`.
    pub ttl: Option<f64>,
    /// `--older-than SECONDS`: only `done` records completed that long ago.
    pub older_than: Option<f64>,
    /// The present, Unix seconds.
    pub now: f64,
}

/// What a change fixes, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fix {
    /// A lock path that is not a regular file: to the quarantine.
    LockPath,
    /// A shard path that is not a directory: to the quarantine.
    ShardFile,
    /// A file-system probe's directory whose pid is gone: to the quarantine.
    Probe,
    /// A left-over temporary file whose pid is gone: to the quarantine.
    TempFile,
    /// A record upstream's reader rejects or raises on, at its own path:
    /// to the quarantine.
    Rejected,
    /// A record outside the directory its id names, its own path empty:
    /// to its own path.
    Misplaced,
    /// The same, but a record upstream would reject: to the quarantine
    /// (at its own path it would block the id for ever).
    MisplacedRejected,
    /// A `done` record (`--archive-done`): to the archive.
    ArchiveDone,
}

/// Where a change stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Planned (a dry run, `--check`).
    Planned,
    /// Made, and read back.
    Done,
    /// Not made: `skipped` says why.
    Skipped,
}

/// One entry moved.
#[derive(Clone, Debug, Serialize)]
pub struct Action {
    /// What it fixes.
    pub fix: Fix,
    /// The record's id, when it belongs to one.
    pub id: Option<WorkId>,
    /// Where it is, relative to the root.
    pub path: String,
    /// Where it goes, relative to the root.
    pub to: String,
    /// What is wrong, in words.
    pub why: String,
    /// What the move changes for upstream, in words.
    pub effect: String,
    /// The record locks taken for it, relative to the root.
    pub locks: Vec<String>,
    /// Where it stands.
    pub state: State,
    /// Why it was skipped.
    pub skipped: Option<String>,
    #[serde(skip)]
    seen: Option<Seen>,
}

/// Something the repair leaves as it is, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Unchanged {
    /// What it is: `committing`, `committing-with-manifest`, `expired`,
    /// `future`, `lock-files`, `odd`, `temp-file`, `probe`, `misplaced`,
    /// `other-directory`.
    pub what: &'static str,
    /// Its path, relative to the root (none for a count).
    pub path: Option<String>,
    /// Its id, when it is a record's.
    pub id: Option<WorkId>,
    /// How many (1 for a single entry).
    pub count: u64,
    /// Why it is left, in words.
    pub why: String,
}

/// The table read again after the changes.
#[derive(Clone, Debug, Serialize)]
pub struct Reread {
    /// `snapshot_counts(now)` now.
    pub counts: Counts,
    /// Ids upstream's reader still rejects.
    pub rejected: Vec<WorkId>,
    /// Records still outside the directory their id names (scanned ones).
    pub misplaced: u64,
    /// Left-over temporary files still there.
    pub temp_files: u64,
    /// Lock paths still not regular files.
    pub bad_locks: u64,
    /// Root entries no scan lists, apart from this tool's own directories.
    pub unread: Vec<String>,
    /// Entries this run moved that are still where they were (empty when
    /// confirmed).
    pub still_there: Vec<String>,
}

/// What `repair` does to one table.
#[derive(Clone, Debug, Serialize)]
pub struct TableRepair {
    /// The root, as given.
    pub path: String,
    /// `work` or `target`.
    pub table: TableKind,
    /// The shard count the table is read at.
    pub shard_count: Setting<u64>,
    /// `snapshot_counts(now)` before.
    pub counts: Counts,
    /// The changes, in the order they are made.
    pub actions: Vec<Action>,
    /// What is left as it is, and why.
    pub unchanged: Vec<Unchanged>,
    /// Why `--apply` refuses the table (a dry run and `--check` say it).
    pub refused: Option<String>,
    /// This run's quarantine, relative to the root.
    pub quarantine: String,
    /// This run's archive, relative to the root (`--archive-done`).
    pub archive: Option<String>,
    /// Whether anything was moved.
    pub written: bool,
    /// The table read again after `--apply`.
    pub reread: Option<Reread>,
    #[serde(skip)]
    held: Vec<(String, String)>,
}

impl TableRepair {
    /// Whether there is nothing to move.
    pub fn is_noop(&self) -> bool {
        self.actions.is_empty()
    }

    /// Whether a change was skipped (a lock held, a record changed).
    pub fn skipped(&self) -> bool {
        self.actions.iter().any(|a| a.state == State::Skipped)
    }
}

fn options(request: &TableRequest) -> TableOptions {
    TableOptions {
        kind: None,
        lease_shards: request.lease_shards,
        ttl: request.ttl,
        now: request.now,
        skew: SKEW,
        history: None,
    }
}

fn seen(root: &Path, rel: &str) -> Result<Option<(Seen, Vec<u8>)>, InputError> {
    let path = root.join(rel);
    Seen::of(&path).map_err(|e| InputError::io(&path, &e))
}

fn lock_of(rel_dir: &str, id: &WorkId) -> String {
    format!("{rel_dir}/{id}.json.lock")
}

fn dir_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Plans the repair of the table at `root`; `stamp` names this run's
/// quarantine and archive directories. Reads only.
pub fn plan(root: &Path, request: &TableRequest, stamp: &str) -> Result<TableRepair, InputError> {
    let report = tables::read(root, &options(request))?;
    let quarantine = format!("{QUARANTINE_DIR}/{stamp}");
    let archive = format!("{ARCHIVE_DIR}/{stamp}");
    let mut planner = Planner {
        root,
        report: &report,
        quarantine: &quarantine,
        actions: Vec::new(),
        unchanged: Vec::new(),
        vacated: HashSet::new(),
    };
    planner.lock_paths()?;
    planner.shard_files()?;
    planner.probes()?;
    planner.temp_files()?;
    planner.rejected()?;
    planner.misplaced(request.lease_shards.is_some(), request.reshard)?;
    if request.archive_done {
        planner.archive_done(&archive, request)?;
    }
    planner.left_as_they_are();
    let Planner {
        actions, unchanged, ..
    } = planner;
    let held: Vec<(String, String)> = report
        .held_locks
        .iter()
        .map(|h| (h.path.clone(), holder(root, &h.path, h.pid)))
        .collect();
    let refused = if !held.is_empty() {
        let list: Vec<String> = held
            .iter()
            .map(|(lock, who)| format!("{who} holds {lock}"))
            .collect();
        Some(format!(
            "a process on this host is using the table ({}): stop every master using it first",
            list.join(", ")
        ))
    } else if !request.all_masters_stopped {
        Some(
            "--apply needs --all-masters-stopped: no lock covers a whole table and masters on other hosts share it, so only you can say that every master using it, on every host, is stopped"
                .into(),
        )
    } else {
        None
    };
    Ok(TableRepair {
        path: root.display().to_string(),
        table: report.table,
        shard_count: report.shard_count.clone(),
        counts: report.counts,
        actions,
        unchanged,
        refused,
        quarantine,
        archive: request.archive_done.then_some(archive),
        written: false,
        reread: None,
        held,
    })
}

/// Who holds a record lock, in words ("pid 42 (python3)").
fn holder(root: &Path, rel: &str, pid: i64) -> String {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(root.join(rel))
        .ok()
        .and_then(|m| {
            crate::store::lock::holders(m.dev(), m.ino(), &[pid])
                .into_iter()
                .find(|h| h.pid == pid)
        })
        .map_or(format!("pid {pid}"), |h| h.describe())
}

/// Why `--apply` refuses a table, as the error it fails with: the locks
/// held here (exit status 3), or the operator's word missing (2).
pub fn refusal(plan: &TableRepair) -> Option<anyhow::Error> {
    if !plan.held.is_empty() {
        return Some(
            WriteError::TableLocked {
                root: plan.path.clone().into(),
                held: plan.held.clone(),
            }
            .into(),
        );
    }
    let why = plan.refused.as_ref()?;
    Some(anyhow::anyhow!(
        "{}: {why}. Nothing was changed; a dry run shows the plan",
        plan.path
    ))
}

struct Planner<'a> {
    root: &'a Path,
    report: &'a TableReport,
    quarantine: &'a str,
    actions: Vec<Action>,
    unchanged: Vec<Unchanged>,
    /// Paths a planned move empties.
    vacated: HashSet<String>,
}

impl Planner<'_> {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        fix: Fix,
        id: Option<WorkId>,
        path: String,
        to: String,
        why: String,
        effect: String,
        locks: Vec<String>,
        seen: Seen,
    ) {
        self.vacated.insert(path.clone());
        self.actions.push(Action {
            fix,
            id,
            path,
            to,
            why,
            effect,
            locks,
            state: State::Planned,
            skipped: None,
            seen: Some(seen),
        });
    }

    fn leave(&mut self, what: &'static str, path: Option<String>, id: Option<WorkId>, why: String) {
        self.unchanged.push(Unchanged {
            what,
            path,
            id,
            count: 1,
            why,
        });
    }

    fn to_quarantine(&self, rel: &str) -> String {
        format!("{}/{rel}", self.quarantine)
    }

    fn lock_paths(&mut self) -> Result<(), InputError> {
        for bad in &self.report.bad_locks {
            let Some((s, _)) = seen(self.root, &bad.path)? else {
                continue;
            };
            self.push(
                Fix::LockPath,
                Some(bad.id),
                bad.path.clone(),
                self.to_quarantine(&bad.path),
                format!(
                    "{} at the lock path: every claim of {} raises {} and stops the master",
                    bad.entry_type.in_words(),
                    bad.id.short(),
                    bad.raises
                ),
                "claims of the id no longer raise; the next one creates a regular lock file".into(),
                Vec::new(),
                s,
            );
        }
        Ok(())
    }

    fn shard_files(&mut self) -> Result<(), InputError> {
        let report = self.report;
        for entry in report.unread.iter().filter(|e| e.why == "not-a-directory") {
            let Some((s, _)) = seen(self.root, &entry.name)? else {
                continue;
            };
            self.push(
                Fix::ShardFile,
                None,
                entry.name.clone(),
                self.to_quarantine(&entry.name),
                format!(
                    "{} where shard {}'s directory should be: every claim of an id of that shard raises NotADirectoryError",
                    entry.entry_type.in_words(),
                    entry.name
                ),
                "claims of its ids work again; the next one creates the directory".into(),
                Vec::new(),
                s,
            );
        }
        Ok(())
    }

    fn probes(&mut self) -> Result<(), InputError> {
        let report = self.report;
        for entry in report.unread.iter().filter(|e| e.why == "probe") {
            let (pid, running) = match (entry.pid, entry.pid_running) {
                (Some(pid), Some(running)) => (pid, running),
                _ => {
                    self.leave(
                        "probe",
                        Some(entry.name.clone()),
                        None,
                        "a file-system probe's directory whose name holds no pid: left".into(),
                    );
                    continue;
                }
            };
            if running {
                self.leave(
                    "probe",
                    Some(entry.name.clone()),
                    None,
                    format!("a file-system probe's directory of pid {pid}, which runs on this host (a master may be starting): left"),
                );
                continue;
            }
            let Some((s, _)) = seen(self.root, &entry.name)? else {
                continue;
            };
            self.push(
                Fix::Probe,
                None,
                entry.name.clone(),
                self.to_quarantine(&entry.name),
                format!("a file-system probe's directory left by pid {pid}, which does not run on this host"),
                "none on the records: no scan or claim reads it".into(),
                Vec::new(),
                s,
            );
        }
        Ok(())
    }

    fn temp_files(&mut self) -> Result<(), InputError> {
        for temp in &self.report.temp_files {
            if temp.pid_running_here {
                self.leave(
                    "temp-file",
                    Some(temp.path.clone()),
                    Some(temp.id),
                    format!(
                        "its writer's pid {} runs on this host (or another process with that pid): left",
                        temp.pid
                    ),
                );
                continue;
            }
            let Some((s, _)) = seen(self.root, &temp.path)? else {
                continue;
            };
            self.push(
                Fix::TempFile,
                Some(temp.id),
                temp.path.clone(),
                self.to_quarantine(&temp.path),
                format!(
                    "a temporary file that pid {} left when its write of {} did not finish (no pid {} runs on this host)",
                    temp.pid,
                    temp.id.short(),
                    temp.pid
                ),
                "none on what upstream reads: no scan lists it".into(),
                vec![lock_of(dir_of(&temp.path), &temp.id)],
                s,
            );
        }
        Ok(())
    }

    fn rejected(&mut self) -> Result<(), InputError> {
        let kind = self.report.table;
        for r in &self.report.rejected_records {
            if r.reason == "absent" {
                continue;
            }
            // Nothing at the path: an unreadable own path under a shard
            // path that is a file (moved away above).
            let Some((s, bytes)) = seen(self.root, &r.path)? else {
                continue;
            };
            // Judged again from the bytes the move will check.
            if s.is_file() && matches!(table::read(&bytes, &r.id, kind), Reading::Valid(_)) {
                continue;
            }
            let effect = match r.raises {
                Some(raises) => format!(
                    "the scans, claims and master starts that stop on {raises} here get past it; the id is no longer blocked for ever: a claim of it works again"
                ),
                None => "the id is no longer blocked for ever: a claim of it works again (upstream could not use these bytes anyway)".into(),
            };
            let effect = match kind {
                TableKind::Work => effect,
                TableKind::Target => effect.replace("a claim of it", "claim_group of its target"),
            };
            let dir = dir_of(&r.path).to_string();
            self.push(
                Fix::Rejected,
                Some(r.id),
                r.path.clone(),
                self.to_quarantine(&r.path),
                format!("{}: {}", r.message, claim_words(r.raises, &r.id, kind)),
                effect,
                vec![lock_of(&dir, &r.id)],
                s,
            );
        }
        Ok(())
    }

    fn misplaced(&mut self, explicit_count: bool, reshard: bool) -> Result<(), InputError> {
        let report = self.report;
        let count = report.shard_count.value;
        let mut sources: Vec<String> = report.misplaced.iter().map(|m| m.path.clone()).collect();
        for entry in report
            .unread
            .iter()
            .filter(|e| matches!(e.why, "beyond-count" | "not-canonical") && e.records > 0)
        {
            let dir = self.root.join(&entry.name);
            let listing = files::entries(&dir).map_err(|e| InputError::io(&dir, &e))?;
            for e in listing {
                if let ShardName::Record(_) = table::shard_name(&e.name) {
                    sources.push(format!("{}/{}", entry.name, e.name));
                }
            }
        }
        sources.sort();
        let mut by_id: BTreeMap<WorkId, Vec<String>> = BTreeMap::new();
        for rel in sources {
            let name = rel.rsplit('/').next().unwrap_or(&rel);
            if let ShardName::Record(id) = table::shard_name(name) {
                by_id.entry(id).or_default().push(rel);
            }
        }
        for (id, places) in by_id {
            let own_dir = table::shard_dir_name(table::shard_of(&id, count));
            let own = format!("{own_dir}/{id}.json");
            if places.len() > 1 {
                for rel in places {
                    self.leave(
                        "misplaced",
                        Some(rel),
                        Some(id),
                        "more than one copy of this id lies outside its own path; repair does not choose between them: left".into(),
                    );
                }
                continue;
            }
            let rel = places.into_iter().next().unwrap_or_default();
            let Some((s, bytes)) = seen(self.root, &rel)? else {
                continue;
            };
            let here = table::read(&bytes, &id, report.table);
            let Reading::Valid(record) = &here else {
                let why = match &here {
                    Reading::Rejected(r) => r.to_string(),
                    _ => "is a record upstream's reader raises on".into(),
                };
                self.push(
                    Fix::MisplacedRejected,
                    Some(id),
                    rel.clone(),
                    self.to_quarantine(&rel),
                    format!("{why}, in a directory its id does not name at {count} shards"),
                    "none on what upstream reads; at its own path it would block the id for ever, so it goes to the quarantine instead".into(),
                    Vec::new(),
                    s,
                );
                continue;
            };
            if let Some(fits) = report
                .fitting_counts
                .as_ref()
                .filter(|f| !f.is_empty() && !reshard)
            {
                let fits: Vec<String> = fits.iter().map(u64::to_string).collect();
                self.leave(
                    "misplaced",
                    Some(rel),
                    Some(id),
                    format!(
                        "every record looked at sits where {} shards put it, not {count}: moving it would take it out of the layout masters at that count read; check the count the masters run with (SYMCC_MULTI_MASTER_LEASE_SHARDS) and give it with --lease-shards, or, if they now run with {count}, add --reshard: left",
                        fits.join(" or ")
                    ),
                );
                continue;
            }
            if !explicit_count {
                self.leave(
                    "misplaced",
                    Some(rel),
                    Some(id),
                    format!(
                        "not in the directory its id names at {count} shards ({}); records are moved to their own path only at a count given with --lease-shards N, the count every master runs with: left",
                        report.shard_count.from
                    ),
                );
                continue;
            }
            let occupied = match seen(self.root, &own)? {
                Some(_) if self.vacated.contains(&own) => None,
                Some((o, _)) => Some(if Some(o) == Some(s) {
                    "the same entry"
                } else {
                    "another entry"
                }),
                None => None,
            };
            if let Some(what) = occupied {
                self.leave(
                    "misplaced",
                    Some(rel),
                    Some(id),
                    format!("its own path {own} holds {what}: both are left"),
                );
                continue;
            }
            let effect = match (report.table, record.status) {
                (TableKind::Target, Status::Leased) => {
                    "the scans read it again and snapshot_counts counts it; claim_group sees it again (while live it keeps its target from another group, once expired it is taken over)"
                }
                (TableKind::Target, _) => {
                    "the scans read it again and snapshot_counts counts it; claim_group treats it as free, as upstream does"
                }
                (_, Status::Leased) => {
                    "the scans read it again and snapshot_counts counts it; a claim of the id sees it, and once expired the next master start takes it"
                }
                (_, Status::Committing) => {
                    "the scans count it as committing, and a claim of the id refuses it again"
                }
                (_, Status::Done) => {
                    "a claim of the id refuses it again (its work is not dispatched twice), and snapshot_counts counts it as done"
                }
            };
            let mut locks = vec![lock_of(&own_dir, &id)];
            let here_lock = lock_of(dir_of(&rel), &id);
            if std::fs::symlink_metadata(self.root.join(&here_lock)).is_ok_and(|m| m.is_file()) {
                locks.push(here_lock);
            }
            self.push(
                Fix::Misplaced,
                Some(id),
                rel.clone(),
                own,
                format!(
                    "a {} record in {}, not in {own_dir}, the directory its id names at {count} shards: no scan reads it and {} does not see it",
                    record.status.as_str(),
                    dir_of(&rel),
                    match report.table {
                        TableKind::Work => "a claim of the id",
                        TableKind::Target => "claim_group",
                    }
                ),
                effect.into(),
                locks,
                s,
            );
        }
        Ok(())
    }

    fn archive_done(&mut self, archive: &str, request: &TableRequest) -> Result<(), InputError> {
        let report = self.report;
        let root = self.root;
        let count = report.shard_count.value;
        let older_than = request.older_than.unwrap_or(0.0);
        type Found = Vec<(WorkId, String, Seen)>;
        let found: Vec<Result<Found, InputError>> = (0..count)
            .into_par_iter()
            .map(|shard| {
                let name = table::shard_dir_name(shard);
                let dir = root.join(&name);
                let mut found = Vec::new();
                if !files::is_dir(&dir) {
                    return Ok(found);
                }
                for e in files::entries(&dir).map_err(|e| InputError::io(&dir, &e))? {
                    let ShardName::Record(id) = table::shard_name(&e.name) else {
                        continue;
                    };
                    if table::shard_of(&id, count) != shard {
                        continue;
                    }
                    let rel = format!("{name}/{}", e.name);
                    let Some((s, bytes)) = seen(root, &rel)? else {
                        continue;
                    };
                    if let Reading::Valid(r) = table::read(&bytes, &id, report.table)
                        && r.status == Status::Done
                        && request.now - r.completed.unwrap_or(r.updated) >= older_than
                    {
                        found.push((id, rel, s));
                    }
                }
                Ok(found)
            })
            .collect();
        for part in found {
            for (id, rel, s) in part? {
                self.push(
                    Fix::ArchiveDone,
                    Some(id),
                    rel.clone(),
                    format!("{archive}/{rel}"),
                    "a done record (--archive-done)".into(),
                    "gives up: this exact id can be claimed and dispatched again (its work may run twice), and snapshot_counts no longer counts it as done; gains: every scan reads one file fewer".into(),
                    vec![lock_of(dir_of(&rel), &id)],
                    s,
                );
            }
        }
        Ok(())
    }

    /// What is never changed, said so.
    fn left_as_they_are(&mut self) {
        let report = self.report;
        for c in &report.committing {
            if c.has_commit {
                self.leave(
                    "committing-with-manifest",
                    Some(c.path.clone()),
                    Some(c.id),
                    "committing with a commit manifest: never changed; the standalone frontend redoes it".into(),
                );
            } else {
                self.leave(
                    "committing",
                    Some(c.path.clone()),
                    Some(c.id),
                    "committing without a commit manifest (the AFL master stopped between begin_commit and complete): never changed; nothing will ever clear it, since no claim, recovery or completion takes it, and its dispatch ran at most once".into(),
                );
            }
        }
        if report.counts.expired > 0 {
            self.unchanged.push(Unchanged {
                what: "expired",
                path: None,
                id: None,
                count: report.counts.expired,
                why: "never changed; the next master start takes each (removing one would lose its work)".into(),
            });
        }
        for f in &report.future {
            self.leave(
                "future",
                Some(f.path.clone()),
                Some(f.id),
                format!(
                    "{} record updated {:.0} s ahead of now: never changed; under the AFL master it never expires",
                    f.status.as_str(),
                    f.ahead_seconds
                ),
            );
        }
        if !report.odd.is_empty() {
            self.unchanged.push(Unchanged {
                what: "odd",
                path: None,
                id: None,
                count: report.odd.len() as u64,
                why: "never changed (upstream accepts them, although its writer never writes them so)".into(),
            });
        }
        for entry in report
            .unread
            .iter()
            .filter(|e| e.why == "other" && e.records > 0)
        {
            self.unchanged.push(Unchanged {
                what: "other-directory",
                path: Some(entry.name.clone()),
                id: None,
                count: entry.records,
                why: format!(
                    "{} in a directory whose name upstream never builds for a shard: no scan lists them; not moved (move them by hand if they belong to this table)",
                    plural(entry.records, "record", "records")
                ),
            });
        }
        let good_locks = report.files.locks - report.bad_locks.len() as u64;
        if good_locks > 0 {
            self.unchanged.push(Unchanged {
                what: "lock-files",
                path: None,
                id: None,
                count: good_locks,
                why: "never removed or changed (upstream keeps them; removing one could let two masters hold the same id's lock)".into(),
            });
        }
    }
}

fn claim_words(raises: Option<&str>, id: &WorkId, kind: TableKind) -> String {
    match (raises, kind) {
        (Some(e), _) => format!("reading it raises {e}, which stops the scan and the master"),
        (None, TableKind::Work) => format!("a claim of {} refuses it for ever", id.short()),
        (None, TableKind::Target) => {
            format!(
                "claim_group of a group holding its target ({}) fails for ever",
                id.short()
            )
        }
    }
}

/// Makes the planned moves, in order: the destination's directories
/// first, then each record's locks, then the move itself
/// ([`durable::move_entry`]). A record whose lock is held, or that
/// changed since the plan, is skipped and said so; a failure after a move
/// is the error.
pub fn apply(root: &Path, plan: &mut TableRepair, changes: &ChangeLog) -> Result<(), WriteError> {
    for action in &mut plan.actions {
        let Some(seen) = action.seen else { continue };
        let skip = |action: &mut Action, why: String| {
            action.state = State::Skipped;
            action.skipped = Some(why);
        };
        durable::make_dirs(changes, root, Path::new(dir_of(&action.to)))?;
        let mut held = Vec::new();
        let mut busy = None;
        for lock in &action.locks {
            match RecordLock::take(&root.join(lock)) {
                Ok(Some(l)) => held.push(l),
                Ok(None) => {
                    busy = Some(format!(
                        "its lock {lock} is held by another process (a master on another host?)"
                    ));
                    break;
                }
                Err(e) => {
                    busy = Some(format!("its lock {lock} cannot be taken: {e}"));
                    break;
                }
            }
        }
        if let Some(why) = busy {
            skip(action, why);
            continue;
        }
        match durable::move_entry(
            changes,
            &root.join(&action.path),
            &root.join(&action.to),
            &seen,
        ) {
            Ok(()) => action.state = State::Done,
            Err(e @ WriteError::AfterChange { .. }) => return Err(e),
            Err(WriteError::Changed { .. }) => skip(
                action,
                "it changed since the plan was made (a master is using the table?)".into(),
            ),
            Err(e) => skip(action, e.to_string()),
        }
        drop(held);
    }
    plan.written = plan.actions.iter().any(|a| a.state == State::Done);
    Ok(())
}

/// Reads the table again after `apply` (what its scans and claims see
/// now) and confirms that each entry moved is gone from where it was; the
/// error names what is still there.
pub fn reread(root: &Path, request: &TableRequest, plan: &mut TableRepair) -> anyhow::Result<()> {
    let report = tables::read(root, &options(request))?;
    let mut still_there = Vec::new();
    for action in plan.actions.iter().filter(|a| a.state == State::Done) {
        // Something new may stand there now (the directory of a shard
        // whose file was moved away): only the entry that was moved counts.
        let there = Seen::of(&root.join(&action.path))
            .ok()
            .flatten()
            .zip(action.seen)
            .is_some_and(|((now, _), was)| now.same_inode(&was));
        if there {
            still_there.push(action.path.clone());
        }
    }
    plan.reread = Some(Reread {
        counts: report.counts,
        rejected: report.rejected.clone(),
        misplaced: report.misplaced.len() as u64,
        temp_files: report.temp_files.len() as u64,
        bad_locks: report.bad_locks.len() as u64,
        unread: report
            .unread
            .iter()
            .filter(|u| u.why != "kept")
            .map(|u| u.name.clone())
            .collect(),
        still_there: still_there.clone(),
    });
    if !still_there.is_empty() {
        anyhow::bail!(
            "{}: re-reading the table found what this run moved still listed: {}",
            root.display(),
            still_there.join(", ")
        );
    }
    Ok(())
}
