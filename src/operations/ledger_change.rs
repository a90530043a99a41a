//! The digest ledger `.state_shards/processed.NNN.log` changed by the
//! writing commands, shared by `operations::repair` and
//! `operations::compact`:
//! - [`repair`] seals each file's end (`engine::ledger::seal`) and, given
//!   the shard count the next master start uses, moves every valid digest
//!   into the file that count names for it (`int(digest[:8], 16) % N`) and
//!   removes the files numbered N and above, so that upstream's reader at
//!   N loads every distinct valid digest that was in any file. Lines
//!   upstream ignores stay where they are and duplicates stay too: a
//!   valid line is moved, never dropped or added (but for a digest a
//!   power loss left before NULs, which the seal restores);
//! - [`compact`] rewrites each file as its distinct valid digests, once
//!   each, in the order first met: duplicates and ignored lines go, no
//!   valid digest does. It never moves a digest to another file
//!   (upstream loads a misplaced digest wherever it is) and never drops a
//!   digest another file repeats (that file may be one a smaller count
//!   never reads).
//!
//! Every file is published through the write session: a checked
//! temporary file renamed over it, or a new file, or (re-sharding) a file
//! removed, each backed up and made durable with its directory. A
//! re-shard publishes in an order that never loses a digest if it stops
//! at any point: first every file that receives digests (its own lines
//! all kept, the digests moved in appended), then every file that loses
//! its misplaced lines, then the files the count no longer reads. A crash
//! in between leaves digests in two files, which upstream reads as one.
//! The ledger is then read again at the count: every digest it loaded
//! before must be loaded.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

use serde::Serialize;

use crate::engine::ledger::line::{Judged, Line, Splitter};
use crate::engine::ledger::rewrite::{self, Keep, Planner, Sequence};
use crate::engine::ledger::{
    self, Digest, DigestSet, FileScan, LastLine, LedgerScan, MAX_DEDUP_ENTRIES, Sealed, TailSeal,
    seal,
};
use crate::store::compare::{CompareSink, Tee};
use crate::store::durable::{self, Carried, Done, Identity, Leftover, Publish, Source, WriteError};
use crate::store::error::in_words;
use crate::store::failpoint;
use crate::store::ledger::{EntryKind, LedgerDir};
use crate::store::open;
use crate::store::progress::Progress;
use crate::store::session::{
    self, Check, LedgerTarget, Mode, Opened, Produce, Publication, Published, Session,
};

/// What `repair` or `compact` did to a digest ledger,
/// `<state dir>/.state_shards/`: the files it changes in the order they
/// are listed (ascending shard index), and what upstream's `load_recent`
/// loads from them before and after.
#[derive(Debug, Serialize)]
pub struct LedgerChange {
    /// The ledger's directory.
    pub path: String,
    /// The shard count the ledger is read at: `--state-shards` when the
    /// digests are moved to the files it names (`reshard`), else the
    /// smallest count that reads every shard file.
    pub shard_count: u32,
    /// Whether every valid digest moves into the file `shard_count` names
    /// for it, and the files numbered `shard_count` and above go.
    pub reshard: bool,
    /// Upstream's reader at `shard_count` now.
    pub before: LedgerState,
    /// Upstream's reader at `shard_count` after the change.
    pub after: LedgerState,
    /// Every shard file (and each file created), ascending by index.
    pub files: Vec<LedgerFileChange>,
    /// Whether anything was written.
    pub written: bool,
    /// Whether a file changed in place keeps a backup (no `--no-backup`).
    pub keeps_backup: bool,
    /// Stale temporary files of this tool removed under the lock.
    pub removed_temp_files: Vec<String>,
    /// Stale temporary files of this tool that stay, each with why (exit
    /// status 5).
    pub stale_temp_files_left: Vec<Leftover>,
    /// A remark ("nothing to repair", …).
    pub note: Option<String>,
}

impl LedgerChange {
    /// Whether there is nothing to change.
    pub fn is_noop(&self) -> bool {
        self.files
            .iter()
            .all(|f| f.action == FileAction::None || f.action == FileAction::Skip)
    }
}

/// A ledger as upstream's `load_recent(5000000)` reads it at a shard count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LedgerState {
    /// Distinct digests it loads.
    pub digests: u64,
    /// Distinct valid digests only in files the count never reads.
    pub unread: u64,
    /// Distinct valid digests in every shard file.
    pub distinct: u64,
    /// Valid lines.
    pub valid: u64,
    /// Lines upstream ignores.
    pub ignored: u64,
    /// Shard files (regular files of upstream's names).
    pub files: u64,
}

/// What happens to one shard file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileAction {
    /// Nothing.
    None,
    /// Rewritten (through a temporary file, renamed over it).
    Rewrite,
    /// Created: digests move into a file that is not there.
    Create,
    /// Removed once its digests are in the files the count reads.
    Remove,
    /// Not a regular file (a directory where a shard file would be):
    /// upstream cannot open it, and it is left as it is.
    Skip,
}

/// One shard file, planned and (with `--apply`) changed.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerFileChange {
    /// The file name.
    pub name: String,
    /// Its shard index.
    pub index: u32,
    /// What happens to it.
    pub action: FileAction,
    /// What happens to its end.
    pub tail: TailSeal,
    /// A digest that NULs behind it hid from upstream, loaded once the
    /// NULs are cut (a power loss before the newline reached the disk).
    pub restored: Option<Digest>,
    /// Lines, as upstream counts them.
    pub lines_before: u64,
    /// Lines after.
    pub lines_after: u64,
    /// Valid lines.
    pub valid_before: u64,
    /// Valid lines after.
    pub valid_after: u64,
    /// Valid lines moved to the file their shard names.
    pub moved_out: u64,
    /// Valid lines moved in from other files.
    pub moved_in: u64,
    /// Valid lines repeating a digest of the same file, dropped
    /// (`compact`).
    pub duplicates_dropped: u64,
    /// Lines upstream ignores, dropped (`compact`; a cut tail counts).
    pub ignored_dropped: u64,
    /// Whether it was written (or removed).
    pub written: bool,
    /// The backup made, if any (a file that both receives digests and
    /// loses misplaced ones is written twice; its backup is of the
    /// original).
    pub backup: Option<String>,
    /// The `--output` file written, if any.
    pub output: Option<String>,
    /// Bytes another process appended while it was rewritten, carried
    /// into the result. Absent when there were none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_appends_carried: Option<Carried>,
}

/// Plans the repair of a ledger and, in a writing mode, carries it out:
/// every file's end sealed and, with `count`, every valid digest moved to
/// the file `count` names for it.
pub fn repair(
    session: &Session<'_>,
    target: &LedgerTarget,
    count: Option<u32>,
    progress: &dyn Progress,
) -> anyhow::Result<LedgerChange> {
    let dir = target.examine()?;
    if count.is_some() && !target.whole {
        anyhow::bail!(
            "{}: --state-shards moves digests between the files of the ledger: name its directory (the state directory or .state_shards), not one of its files; nothing was changed",
            dir.shards
                .first()
                .map_or(dir.path.clone(), |e| e.path.clone())
                .display()
        );
    }
    let reshard = count.is_some();
    let count = count.map_or_else(|| files_count(&dir), |n| n.max(1));
    let mut change = start(session, &dir, count, reshard);
    let mut scan = scan_of(&dir, count);
    let mut planned = Vec::new();
    let mut moved_in: BTreeMap<u32, Vec<Digest>> = BTreeMap::new();
    let mut ignored_after = 0;
    for entry in &dir.shards {
        let index = entry.index.unwrap_or(u32::MAX);
        if entry.kind != EntryKind::File {
            change.files.push(skipped(&entry.name, index));
            continue;
        }
        let keep = if reshard {
            Keep::Shard { count, index }
        } else {
            Keep::All
        };
        let mut planner = Planner::new(keep);
        let (opened, read) = read_file(&mut scan, index, &entry.path, progress, &mut |l| {
            planner.line(l)
        })?;
        let plan = planner.finish(read.size, &read.sealed);
        for digest in &plan.moved {
            moved_in
                .entry(digest.shard(count))
                .or_default()
                .push(*digest);
        }
        let removed = reshard && index >= count;
        if !removed {
            ignored_after += read.scan.ignored.total()
                - cut(&read.sealed)
                - u64::from(read.sealed.restored.is_some());
        }
        let row = LedgerFileChange {
            action: if removed {
                FileAction::Remove
            } else if plan.keeps_everything(read.size) {
                FileAction::None
            } else {
                FileAction::Rewrite
            },
            tail: read.sealed.seal,
            restored: read.sealed.restored,
            lines_before: read.scan.lines,
            lines_after: if removed {
                0
            } else {
                read.scan.lines - plan.drops.len() as u64 - cut(&read.sealed)
            },
            valid_before: read.scan.valid,
            valid_after: if removed {
                0
            } else {
                plan.valid - plan.moved.len() as u64
            },
            moved_out: plan.moved.len() as u64,
            ignored_dropped: if removed {
                read.scan.ignored.total()
            } else {
                cut(&read.sealed)
            },
            ..row(&entry.name, index)
        };
        change.files.push(row);
        planned.push((
            entry.path.clone(),
            index,
            opened.identity,
            read.sealed.restored,
        ));
    }
    // The digests that move into each file the count reads: a file there
    // gets them appended; one that is not there is created; a directory
    // in its place stops the repair before anything is written.
    for (&index, digests) in &moved_in {
        let n = digests.len() as u64;
        match change.files.iter_mut().find(|f| f.index == index) {
            Some(f) if f.action == FileAction::Skip => anyhow::bail!(
                "{}: is not a regular file, and {n} digests belong in it at {count} shards; move it away first. Nothing was changed",
                dir.path.join(&f.name).display()
            ),
            Some(f) => {
                f.moved_in = n;
                f.lines_after += n;
                f.valid_after += n;
                f.action = FileAction::Rewrite;
            }
            None => change.files.push(LedgerFileChange {
                action: FileAction::Create,
                moved_in: n,
                lines_after: n,
                valid_after: n,
                ..row(&ledger::file_name(index), index)
            }),
        }
    }
    change.files.sort_by_key(|f| f.index);
    let restored: Vec<Digest> = planned.iter().filter_map(|p| p.3).collect();
    settle_states(&mut change, &scan, &restored, ignored_after);
    if change.is_noop() {
        change.note = Some("nothing to repair".into());
        return Ok(change);
    }
    if !session.writes() {
        return Ok(change);
    }
    failpoint::hit("planned")?;
    clean_temps(session, &dir, &mut change);
    // 1. Every file that receives digests, its own lines all kept, and
    // every file that only needs its end sealed; then the files created.
    let identity_of = |index: u32| {
        let p = planned
            .iter()
            .find(|p| p.1 == index)
            .expect("a planned file");
        (p.0.clone(), p.2)
    };
    let mut rewritten: BTreeMap<u32, Identity> = BTreeMap::new();
    for i in 0..change.files.len() {
        let (index, action, drops) = {
            let f = &change.files[i];
            (f.index, f.action, f.moved_out > 0)
        };
        let extra = moved_in.get(&index).map_or(&[][..], Vec::as_slice);
        let published = match action {
            FileAction::Rewrite if !extra.is_empty() || !drops => {
                let (path, identity) = identity_of(index);
                let (published, now) =
                    rewrite_kept(session, &path, index, Keep::All, extra, identity, progress)?;
                rewritten.extend(now.map(|id| (index, id)));
                published
            }
            FileAction::Create => {
                let path = dir.path.join(&change.files[i].name);
                create(session, &path, extra)?
            }
            _ => continue,
        };
        record(&mut change.files[i], published);
    }
    // 2. Every file that loses lines: what it loses is in its own shard's
    // file now.
    for i in 0..change.files.len() {
        let f = &change.files[i];
        if f.action != FileAction::Rewrite || f.moved_out == 0 {
            continue;
        }
        let index = f.index;
        let (path, identity) = identity_of(index);
        let identity = rewritten.get(&index).copied().unwrap_or(identity);
        let keep = Keep::Shard { count, index };
        let (published, _) = rewrite_kept(session, &path, index, keep, &[], identity, progress)?;
        record(&mut change.files[i], published);
    }
    // 3. The files the count never reads, once their digests are in the
    // files it does.
    for i in 0..change.files.len() {
        if change.files[i].action != FileAction::Remove {
            continue;
        }
        let (path, identity) = identity_of(change.files[i].index);
        let opened = Opened::open(&path)?;
        if opened.identity != identity {
            return Err(WriteError::Changed { path: path.clone() }.into());
        }
        let published = session.remove(opened)?;
        record(&mut change.files[i], published);
    }
    change.written = change.files.iter().any(|f| f.written);
    drop(moved_in);
    finish(session, target, &mut change, count, scan.set(), &restored)?;
    Ok(change)
}

/// Plans the compaction of a ledger and, in a writing mode, carries it
/// out, file by file.
pub fn compact(
    session: &Session<'_>,
    target: &LedgerTarget,
    progress: &dyn Progress,
) -> anyhow::Result<LedgerChange> {
    let dir = target.examine()?;
    let count = files_count(&dir);
    let mut change = start(session, &dir, count, false);
    let mut scan = scan_of(&dir, count);
    let mut restored = Vec::new();
    if session.writes() {
        clean_temps(session, &dir, &mut change);
    }
    for entry in &dir.shards {
        let index = entry.index.unwrap_or(u32::MAX);
        if entry.kind != EntryKind::File {
            change.files.push(skipped(&entry.name, index));
            continue;
        }
        let mut seen = DigestSet::new();
        let mut kept = Sequence::new();
        let (opened, read) = read_file(&mut scan, index, &entry.path, progress, &mut |l| {
            if let Judged::Valid(digest) = l.judged
                && seen.insert(&digest)
            {
                kept.push(&digest);
            }
        })?;
        let mut duplicates = read.scan.valid - kept.count();
        if let Some(digest) = read.sealed.restored {
            restored.push(digest);
            if seen.insert(&digest) {
                kept.push(&digest);
            } else {
                duplicates += 1;
            }
        }
        drop(seen);
        let mut row = LedgerFileChange {
            action: FileAction::Rewrite,
            tail: read.sealed.seal,
            restored: read.sealed.restored,
            lines_before: read.scan.lines,
            lines_after: kept.count(),
            valid_before: read.scan.valid,
            valid_after: kept.count(),
            duplicates_dropped: duplicates,
            ignored_dropped: read.scan.ignored.total() - u64::from(read.sealed.restored.is_some()),
            ..row(&entry.name, index)
        };
        let (published, unchanged) = publish_compact(session, opened, &read.sealed, kept)?;
        if unchanged && !published.written {
            row.action = FileAction::None;
        }
        record(&mut row, published);
        change.files.push(row);
    }
    settle_states(&mut change, &scan, &restored, 0);
    change.written = change.files.iter().any(|f| f.written);
    if change.is_noop() {
        change.note = Some("nothing to do: already compact".into());
    }
    if change.written {
        finish(session, target, &mut change, count, scan.set(), &restored)?;
    }
    Ok(change)
}

/// Compacts one file: the result is compared with the file as it is
/// written, so "already compact" comes without another pass; in place, a
/// result equal to the file is not published. Returns what was published
/// and whether the result equals the file.
fn publish_compact(
    session: &Session<'_>,
    opened: Opened<'_>,
    sealed: &Sealed,
    kept: Sequence,
) -> anyhow::Result<(Published, bool)> {
    let path = opened.path;
    let version = opened.version();
    let equal = std::sync::Mutex::new(false);
    let equal_now = || *equal.lock().unwrap_or_else(PoisonError::into_inner);
    let produce = |out: &mut dyn Write| {
        let mut sink = CompareSink::new(version.reopen()?);
        let mut tee = Tee {
            a: out,
            b: &mut sink,
        };
        rewrite::write_compact(version.reopen()?, sealed, &mut tee)?;
        *equal.lock().unwrap_or_else(PoisonError::into_inner) = sink.finish()?.1;
        Ok(())
    };
    if !session.writes() {
        produce(&mut io::sink()).map_err(session::read_error(path))?;
        return Ok((Published::default(), equal_now()));
    }
    let in_place = session.mode == Mode::Apply;
    let expected = kept.value();
    let check = move |f: &mut durable::Reread<'_>| {
        confirm_file(f, expected, 0)?;
        Ok(if in_place && equal_now() {
            Publish::No
        } else {
            Publish::Yes
        })
    };
    let published = publish_rewrite(session, opened, Box::new(produce), Box::new(check))?;
    Ok((published, equal_now()))
}

/// One shard file, read.
struct Read1 {
    scan: FileScan,
    sealed: Sealed,
    size: u64,
}

/// Reads the shard file `path` (shard `index`) once, opened to be
/// changed: through `scan`, which counts what upstream makes of it, with
/// every line also fed to `line`, and its end kept for the seal.
fn read_file<'p>(
    scan: &mut LedgerScan,
    index: u32,
    path: &'p Path,
    progress: &dyn Progress,
    line: &mut dyn FnMut(&Line),
) -> anyhow::Result<(Opened<'p>, Read1)> {
    let opened = Opened::open(path)?;
    let size = opened.meta.len();
    let meter = progress.meter(path, size);
    let mut splitter = Splitter::new();
    let mut last = LastLine::new();
    let read = {
        let mut seen = |block: &[u8]| {
            splitter.feed(block, &mut |l| line(&l));
            last.feed(block);
            meter.advance(block.len() as u64);
        };
        let src = Observed {
            inner: Source::new(path, &opened.file),
            seen: &mut seen,
        };
        scan.file(index, src)
    };
    meter.finish();
    let file_scan = read.map_err(session::read_error(path))?;
    if file_scan.bytes != size {
        return Err(WriteError::Changed {
            path: path.to_path_buf(),
        }
        .into());
    }
    let (tail, _) = splitter.finish(&mut |l| line(&l));
    let sealed = seal::plan(&tail, &last);
    let read = Read1 {
        scan: file_scan,
        sealed,
        size,
    };
    Ok((opened, read))
}

/// A reader that shows every block it reads to `seen`.
struct Observed<'a, R> {
    inner: R,
    seen: &'a mut dyn FnMut(&[u8]),
}

impl<R: Read> Read for Observed<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        (self.seen)(&buf[..n]);
        Ok(n)
    }
}

/// Rewrites the shard file `path` (shard `index`, which must still be
/// the version `identity`), read again now: the lines `keep` keeps, its
/// end sealed, then `extra` digests. Returns what was published and, in
/// place, the identity of the result.
fn rewrite_kept(
    session: &Session<'_>,
    path: &Path,
    index: u32,
    keep: Keep,
    extra: &[Digest],
    identity: Identity,
    progress: &dyn Progress,
) -> anyhow::Result<(Published, Option<Identity>)> {
    let mut planner = Planner::new(keep);
    let mut scan = LedgerScan::new(index.saturating_add(1), Vec::new());
    let (opened, read) = read_file(&mut scan, index, path, progress, &mut |l| planner.line(l))?;
    if opened.identity != identity {
        return Err(WriteError::Changed {
            path: path.to_path_buf(),
        }
        .into());
    }
    let plan = planner.finish(read.size, &read.sealed);
    let mut expected = plan.kept.clone();
    extra.iter().for_each(|d| expected.push(d));
    let expected = expected.value();
    let ignored =
        read.scan.ignored.total() - cut(&read.sealed) - u64::from(read.sealed.restored.is_some());
    let version = opened.version();
    let produce =
        move |out: &mut dyn Write| rewrite::write_kept(version.reopen()?, &plan, extra, out);
    let check = move |f: &mut durable::Reread<'_>| {
        confirm_file(f, expected, ignored).map(|()| Publish::Yes)
    };
    let published = publish_rewrite(session, opened, Box::new(produce), Box::new(check))?;
    let now = if session.mode == Mode::Apply && published.written {
        Some(Opened::open(path)?.identity)
    } else {
        None
    };
    Ok((published, now))
}

/// Rewrites the file `opened` with what `produce` writes, which `check`
/// confirms as it is written; bytes another process appends meanwhile are
/// carried into the result.
fn publish_rewrite(
    session: &Session<'_>,
    opened: Opened<'_>,
    produce: Produce<'_>,
    check: Check<'_>,
) -> Result<Published, WriteError> {
    session.publish(
        opened,
        Publication::Rewrite {
            produce,
            check,
            carry_late_appends: true,
        },
    )
}

/// Creates the shard file `path` holding `digests`.
fn create(session: &Session<'_>, path: &Path, digests: &[Digest]) -> anyhow::Result<Published> {
    let mut expected = Sequence::new();
    digests.iter().for_each(|d| expected.push(d));
    let expected = expected.value();
    let produce = move |out: &mut dyn Write| rewrite::write_digests(digests.iter(), out);
    let check =
        move |f: &mut durable::Reread<'_>| confirm_file(f, expected, 0).map(|()| Publish::Yes);
    Ok(session.create(path, Box::new(produce), Box::new(check))?)
}

/// Confirms a written file as upstream reads it: its valid digests in
/// order, at most `ignored` lines it ignores, and a clean end.
fn confirm_file(src: impl Read, digests: (u64, [u8; 32]), ignored: u64) -> Result<(), String> {
    let got = rewrite::observe(src).map_err(|e| format!("re-read failed: {e}"))?;
    if got.digests == digests && got.ignored <= ignored && got.tail == ledger::TailKind::Clean {
        return Ok(());
    }
    Err(format!(
        "planned {} valid lines ending clean; found {} valid lines{}, {} ignored, ending {:?}",
        digests.0,
        got.digests.0,
        if got.digests.0 == digests.0 && got.digests != digests {
            " in another order"
        } else {
            ""
        },
        got.ignored,
        got.tail
    ))
}

/// After the files are published: the ledger read again at `count` must
/// load every digest it held before (and those the seal restored); a
/// re-shard must leave none unread.
fn finish(
    session: &Session<'_>,
    target: &LedgerTarget,
    change: &mut LedgerChange,
    count: u32,
    before: &DigestSet,
    restored: &[Digest],
) -> anyhow::Result<()> {
    if session.mode != Mode::Apply || !change.written {
        return Ok(());
    }
    let failed = |what: String| WriteError::AfterChange {
        path: target.dir.path.clone(),
        done: Done::Changed,
        failed: what,
    };
    let dir = target
        .examine()
        .map_err(|e| failed(format!("re-reading the ledger failed: {e}")))?;
    let mut scan = scan_of(&dir, count);
    for entry in dir.shards.iter().filter(|e| e.kind == EntryKind::File) {
        let index = entry.index.unwrap_or(u32::MAX);
        let (file, _) = open::open_regular(&entry.path)
            .map_err(|e| failed(format!("re-reading it failed: {e}")))?;
        scan.file(index, Source::new(&entry.path, file))
            .map_err(|e| {
                failed(format!(
                    "re-reading {} failed: {}",
                    entry.name,
                    in_words(&e)
                ))
            })?;
    }
    let after = scan.set();
    let lost = before
        .iter()
        .chain(restored.iter().copied())
        .filter(|d| !after.contains(d))
        .count();
    let unread = scan.totals().unread;
    if lost > 0 || (change.reshard && unread > 0) {
        return Err(failed(format!(
            "re-reading the ledger did not confirm the change: {lost} digests are in no file and {unread} only in files {count} shards never read"
        ))
        .into());
    }
    Ok(())
}

/// A ledger's change before anything is planned.
fn start(session: &Session<'_>, dir: &LedgerDir, count: u32, reshard: bool) -> LedgerChange {
    LedgerChange {
        path: dir.path.display().to_string(),
        shard_count: count,
        reshard,
        before: LedgerState::default(),
        after: LedgerState::default(),
        files: Vec::new(),
        written: false,
        keeps_backup: session.keeps_backup(),
        removed_temp_files: Vec::new(),
        stale_temp_files_left: Vec::new(),
        note: None,
    }
}

/// A file's row before anything is planned.
fn row(name: &str, index: u32) -> LedgerFileChange {
    LedgerFileChange {
        name: name.to_string(),
        index,
        action: FileAction::None,
        tail: TailSeal::None,
        restored: None,
        lines_before: 0,
        lines_after: 0,
        valid_before: 0,
        valid_after: 0,
        moved_out: 0,
        moved_in: 0,
        duplicates_dropped: 0,
        ignored_dropped: 0,
        written: false,
        backup: None,
        output: None,
        late_appends_carried: None,
    }
}

/// The row of a name upstream cannot open (a directory).
fn skipped(name: &str, index: u32) -> LedgerFileChange {
    LedgerFileChange {
        action: FileAction::Skip,
        ..row(name, index)
    }
}

/// The lines a seal cuts: the torn last line, or none.
fn cut(sealed: &Sealed) -> u64 {
    u64::from(matches!(sealed.seal, TailSeal::Cut { .. }))
}

/// A scan of `dir` at `count`, with room for the distinct digests its
/// files' sizes promise (a valid line is 65 bytes), up to upstream's limit
/// and a little more: growing the set by doubling would hold two copies.
fn scan_of(dir: &LedgerDir, count: u32) -> LedgerScan {
    let mut scan = LedgerScan::new(count, Vec::new());
    scan.reserve((dir.shard_bytes() / 65).min(MAX_DEDUP_ENTRIES * 8 / 5) as usize);
    scan
}

/// The smallest count that reads every shard file present.
fn files_count(dir: &LedgerDir) -> u32 {
    dir.max_index().map_or(1, |i| i.saturating_add(1))
}

/// The ledger before and after, from the scan of every file, the rows,
/// the digests the seals restore and the ignored lines that stay.
fn settle_states(change: &mut LedgerChange, scan: &LedgerScan, restored: &[Digest], ignored: u64) {
    let totals = scan.totals();
    let count = |action: FileAction| change.files.iter().filter(|f| f.action == action).count();
    let skipped = count(FileAction::Skip);
    let files = change.files.len() - skipped - count(FileAction::Create);
    change.before = LedgerState {
        digests: totals.digests,
        unread: totals.unread,
        distinct: totals.distinct,
        valid: totals.valid,
        ignored: totals.ignored.total(),
        files: files as u64,
    };
    let mut new = DigestSet::new();
    let gained = restored
        .iter()
        .filter(|d| !scan.set().contains(d) && new.insert(d))
        .count() as u64;
    let distinct = totals.distinct + gained;
    change.after = LedgerState {
        digests: distinct.min(MAX_DEDUP_ENTRIES),
        unread: 0,
        distinct,
        valid: change.files.iter().map(|f| f.valid_after).sum(),
        ignored,
        files: (change.files.len() - skipped - count(FileAction::Remove)) as u64,
    };
}

/// Removes this tool's stale temporary files beside every file the ledger
/// may change (`--apply` only).
fn clean_temps(session: &Session<'_>, dir: &LedgerDir, change: &mut LedgerChange) {
    let mut names: Vec<PathBuf> = dir.shards.iter().map(|e| e.path.clone()).collect();
    names.extend(
        change
            .files
            .iter()
            .filter(|f| f.action == FileAction::Create)
            .map(|f| dir.path.join(&f.name)),
    );
    for path in names {
        let temps = session.clean_temps(&path);
        change
            .removed_temp_files
            .extend(temps.removed.iter().map(|p| p.display().to_string()));
        change.stale_temp_files_left.extend(temps.left);
    }
}

/// Puts what was published into a file's row.
fn record(row: &mut LedgerFileChange, published: Published) {
    row.written |= published.written;
    if published.backup.is_some() {
        row.backup = published.backup;
    }
    row.output = published.output.or(row.output.take());
    if published.carried.is_some() {
        row.late_appends_carried = published.carried;
    }
}
