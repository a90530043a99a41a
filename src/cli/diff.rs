//! `leasejournal diff A B`: what changed between two snapshots or two
//! journals, in the terms of the domain. Read-only.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::inspect::KindArg;
use super::output::{Format, OutputArgs, parse_id_prefix};
use crate::engine::journal::{self, Clock};
use crate::engine::json::PyInt;
use crate::engine::snapshot::{self, Restored};
use crate::operations::diff::{
    self, Bytes, ChangeKind, DiffReport, Filter, FromOffset, RecordsOf, SnapshotSide,
};
use crate::operations::exit::Exit;
use crate::operations::input::InputError;
use crate::operations::input::{self, Target};
use crate::operations::plan::StateView;
use crate::operations::statedir::Kind;
use crate::render;

/// Which changes `--only` keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnlyArg {
    /// Entities only in B.
    Added,
    /// Entities only in A.
    Removed,
    /// Fields that differ.
    Changed,
}

/// Compare two snapshots or two journals.
///
/// Snapshots are compared as upstream restores them, keyed by task id:
/// tasks added and removed, per-field changes with deltas, state leases
/// added, removed or moved to another worker, the clock domain and the
/// configuration, and the cumulative totals on each side. Journals are
/// compared as upstream replays them: active leases added, removed and
/// changed, completed ids added and removed; then their bytes: whether B is
/// A plus appended records (listed with their effects) or where the two
/// diverge, and whether either divergent part is torn or corrupt.
///
/// Exit status as diff(1): 0 identical, 1 different, 2 trouble. Journals
/// are identical when their bytes are; snapshots when their restored views
/// and configuration are. With --ignore, --only or --id, 0 means that no
/// change is left to show (as diff -I).
#[derive(Clone, Debug, Args)]
pub struct DiffArgs {
    /// The earlier (or reference) file; - reads standard input.
    #[arg(value_name = "A")]
    pub a: PathBuf,

    /// The later (or suspect) file; - reads standard input.
    #[arg(value_name = "B")]
    pub b: PathBuf,

    /// Read both files as this kind instead of detecting it.
    #[arg(long = "kind", value_enum, value_name = "KIND")]
    pub kind: Option<KindArg>,

    /// Leave out changes of this field (repeatable), e.g. elapsed, last_lease.
    #[arg(long = "ignore", allow_hyphen_values = true, value_name = "FIELD")]
    pub ignore: Vec<String>,

    /// Show only added, removed or changed entities.
    #[arg(long = "only", value_enum, value_name = "KIND")]
    pub only: Option<OnlyArg>,

    /// Show only ids starting with PREFIX (hex).
    #[arg(long = "id", allow_hyphen_values = true, value_name = "PREFIX", value_parser = parse_id_prefix)]
    pub id: Option<String>,

    /// For journals: attribute each state change to the records in B that
    /// caused it.
    #[arg(long = "history")]
    pub history: bool,

    /// Print nothing; the exit status alone says whether they differ
    /// (0 same, 1 different), like diff -q and cmp -s.
    #[arg(long = "quiet", short = 'q')]
    pub quiet: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

fn open_file(path: &Path, kind: Option<Kind>) -> Result<(Kind, Vec<u8>, File), InputError> {
    match input::target(path, kind)? {
        Target::File {
            kind, prefix, file, ..
        } => Ok((kind, prefix, file)),
        Target::Directory(_) => Err(InputError::new(
            path,
            "is a directory; diff compares two files (name the journals or snapshots in it)",
        )),
    }
}

fn restored_or_empty(bytes: &[u8], notes: &mut Vec<String>, side: &str) -> (Restored, bool) {
    let snap = snapshot::read(bytes);
    match snap.restored {
        Some(r) => (r, snap.unix_clock),
        None => {
            notes.push(format!(
                "{side} does not restore (unparseable or not an object): upstream would start empty"
            ));
            let empty = Restored {
                shard_count: PyInt::Small(16),
                worker_count: PyInt::Small(1),
                steal_window: PyInt::Small(64),
                stats: Vec::new(),
                leases: Vec::new(),
            };
            (empty, false)
        }
    }
}

fn read_all(path: &Path, mut prefix: Vec<u8>, mut file: File) -> Result<Vec<u8>, InputError> {
    file.read_to_end(&mut prefix).map_err(|e| {
        InputError::new(
            path,
            format!("read error: {}", crate::operations::input::in_words(&e)),
        )
    })?;
    Ok(prefix)
}

/// A file read from its start, by position (the sniffing read moved its
/// cursor; standard input is such a file too, see [`input::stdin_file`]).
struct FromStart<'a> {
    file: &'a File,
    pos: u64,
}

impl Read for FromStart<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = std::os::unix::fs::FileExt::read_at(self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

fn reopen(file: &File) -> BufReader<FromStart<'_>> {
    BufReader::with_capacity(1 << 20, FromStart { file, pos: 0 })
}

fn scan(
    path: &Path,
    file: &File,
    observer: &mut (dyn journal::Observer + Send),
) -> Result<journal::Scan, InputError> {
    let len = input::size(path, file)?;
    journal::scan(journal::Positional::file(file, len), observer).map_err(|e| {
        InputError::new(
            path,
            format!("read error: {}", crate::operations::input::in_words(&e)),
        )
    })
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> InputError + '_ {
    move |e| {
        InputError::new(
            path,
            format!("read error: {}", crate::operations::input::in_words(&e)),
        )
    }
}

fn diff_journals(
    args: &DiffArgs,
    (file_a, file_b): (&File, &File),
    filter: &Filter,
) -> Result<DiffReport, InputError> {
    let (at, relation) = diff::relate(reopen(file_a), reopen(file_b)).map_err(io_err(&args.b))?;
    let scan_a = scan(&args.a, file_a, &mut ())?;
    // Identical bytes replay identically: B is not read again.
    let (scan_b, bytes) = match relation {
        None => (None, Bytes::Identical),
        Some(true) => {
            let mut from = FromOffset {
                offset: at,
                records: Vec::new(),
            };
            let scan_b = scan(&args.b, file_b, &mut from)?;
            let glued = scan_a.summary.tail.state != journal::TailState::Clean
                && scan_a.summary.tail.state != journal::TailState::Empty;
            (
                Some(scan_b),
                Bytes::Appended {
                    at_offset: at,
                    appended: from.records,
                    glued_onto_a_torn_tail: glued,
                },
            )
        }
        Some(false) => {
            let scan_b = scan(&args.b, file_b, &mut ())?;
            if at == scan_b.summary.bytes && at < scan_a.summary.bytes {
                (Some(scan_b), Bytes::Truncated { at_offset: at })
            } else {
                let (line_a, tail_a) =
                    diff::line_at(reopen(file_a), at).map_err(io_err(&args.a))?;
                let (line_b, tail_b) =
                    diff::line_at(reopen(file_b), at).map_err(io_err(&args.b))?;
                (
                    Some(scan_b),
                    Bytes::Diverged {
                        offset: at,
                        line_a,
                        line_b,
                        tail_a,
                        tail_b,
                    },
                )
            }
        }
    };
    let replay_b = scan_b.as_ref().map_or(&scan_a.replay, |s| &s.replay);
    let changes = diff::replays(&scan_a.replay, replay_b, filter);
    let history = if args.history {
        let ids: BTreeSet<String> = changes.iter().filter_map(|c| c.id.clone()).collect();
        let mut records = RecordsOf {
            ids,
            records: BTreeMap::new(),
        };
        scan(&args.b, file_b, &mut records)?;
        Some(records.records)
    } else {
        None
    };
    let identical = matches!(bytes, Bytes::Identical);
    let state_a = StateView::of(&scan_a.replay);
    Ok(DiffReport {
        schema_version: diff::DIFF_SCHEMA_VERSION,
        kind: Kind::Journal,
        a: args.a.display().to_string(),
        b: args.b.display().to_string(),
        identical,
        counts: diff::count(&changes),
        changes,
        summary: diff::Summary::Journal {
            b: scan_b
                .as_ref()
                .map_or_else(|| state_a.clone(), |s| StateView::of(&s.replay)),
            a: state_a,
        },
        bytes: Some(bytes),
        history,
        notes: Vec::new(),
    })
}

/// Runs `diff`.
pub fn run(args: &DiffArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let filter = Filter {
        ignore: args.ignore.iter().cloned().collect(),
        only: args.only.map(|o| match o {
            OnlyArg::Added => ChangeKind::Added,
            OnlyArg::Removed => ChangeKind::Removed,
            OnlyArg::Changed => ChangeKind::Changed,
        }),
        id_prefix: args.id.clone(),
    };
    let kind = args.kind.map(KindArg::kind);
    if input::is_stdin(&args.a) && input::is_stdin(&args.b) {
        anyhow::bail!("diff reads standard input for one side only (- given for A and B)");
    }
    let (kind_a, prefix_a, file_a) = open_file(&args.a, kind)?;
    let (kind_b, prefix_b, file_b) = open_file(&args.b, kind)?;
    if kind_a != kind_b {
        anyhow::bail!(
            "cannot compare {} ({}) with {} ({}): diff compares two journals or two snapshots",
            args.a.display(),
            kind_name(kind_a),
            args.b.display(),
            kind_name(kind_b)
        );
    }
    let report = match kind_a {
        Kind::Snapshot => {
            let bytes_a = read_all(&args.a, prefix_a, file_a)?;
            let bytes_b = read_all(&args.b, prefix_b, file_b)?;
            let mut notes = Vec::new();
            let (ra, ua) = restored_or_empty(&bytes_a, &mut notes, "A");
            let (rb, ub) = restored_or_empty(&bytes_b, &mut notes, "B");
            let d = diff::snapshots(
                &SnapshotSide {
                    restored: &ra,
                    unix_clock: ua,
                },
                &SnapshotSide {
                    restored: &rb,
                    unix_clock: ub,
                },
                &filter,
            );
            DiffReport {
                schema_version: diff::DIFF_SCHEMA_VERSION,
                kind: Kind::Snapshot,
                a: args.a.display().to_string(),
                b: args.b.display().to_string(),
                identical: d.identical,
                counts: d.counts,
                changes: d.changes,
                summary: diff::Summary::Snapshot {
                    a: d.totals_a,
                    b: d.totals_b,
                    clock_a: if ua { Clock::Unix } else { Clock::Legacy },
                    clock_b: if ub { Clock::Unix } else { Clock::Legacy },
                },
                bytes: None,
                history: None,
                notes,
            }
        }
        Kind::Journal => diff_journals(args, (&file_a, &file_b), &filter)?,
    };
    if args.quiet {
        // Like diff -q and cmp -s: the exit status alone answers.
    } else {
        match args.output.format {
            Format::Json => render::json(out, &report)?,
            Format::Table => render::diff(out, &report, &args.output.styles())?,
        }
    }
    // With --ignore, --only or --id the answer is about what is compared,
    // as diff -I answers: nothing left to show is "same".
    let filtered = !args.ignore.is_empty() || args.only.is_some() || args.id.is_some();
    let same = if filtered {
        report.changes.is_empty()
    } else {
        report.identical
    };
    Ok(if same { Exit::Success } else { Exit::Problems })
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Journal => "a journal",
        Kind::Snapshot => "a snapshot",
    }
}
