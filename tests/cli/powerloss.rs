//! Simulated power loss at every crash point of the writing commands.
//!
//! Each writing command runs once under strace (`-f -y -xx`), which
//! records the file-system calls it makes. The calls are replayed into a
//! model of a file system that loses, at a power cut, what was not made
//! durable; every state the disk can be left in, at every crash point, is
//! materialised into a directory of its own and checked. Without strace
//! (or where ptrace is refused) the test says so on stderr and passes.
//!
//! The model is an ordered-metadata journaling file system, as ext4 with
//! `data=ordered`:
//!
//! - Every inode has its durable content and the data operations made on
//!   it since its last fsync or fdatasync (a write at an offset, a
//!   truncation). After a cut its content is the durable content plus any
//!   prefix of those operations. The last operation of the prefix, when it
//!   is a write that extends the file, may also have been persisted with
//!   its new size and zeros instead of its data (size before data), or
//!   with a prefix of its data (half of it, and each page boundary up to
//!   four): the size extended to the end of the write and zeros after the
//!   prefix, or the size of the prefix only.
//! - The namespace operations (create, link, rename, unlink, mkdir) in a
//!   directory since that directory's last fsync persist as any prefix of
//!   them, in their order (metadata is journaled in order). An fsync of a
//!   file does not make its name durable; a file created and never made
//!   durable may be present, empty or in any of the states above.
//! - Contents and names are chosen independently. The choices at a crash
//!   point are the product of the per-file choices for the files some
//!   namespace choice names; past 512 combinations, each file is varied on
//!   its own against all-persisted and all-lost (said in the state's name).
//!   Identical resulting directories are checked once per command.
//!
//! Crash points: before the first operation and after every recorded
//! operation that changes the model. Calls are ordered by their return
//! (`<unfinished ...>`/`resumed` pairs are joined); threads share one file
//! descriptor table (the tool never forks). `copy_file_range` and
//! `sendfile` copy from the model's content of the source; file offsets
//! follow `read`, `lseek` and the writes; `O_TMPFILE` inodes get a name
//! through `linkat` of `/proc/self/fd/N` (or `AT_EMPTY_PATH`); leases
//! (`F_SETLEASE`) are ignored. Only paths inside the test's directory are
//! modelled; renaming a directory is not.
//!
//! For every crash state:
//! (a) no record is lost: after `repair --apply`, the journal replays
//!     (`inspect --format json`: active leases and completed ids) to the
//!     original's state or the clean result's. For `recover --discard`,
//!     a journal holding any of the new reclaims must come with an export
//!     holding every discarded lease; a journal holding only some of them
//!     (a multi-page append cut between pages, which README documents as a
//!     partial discard the next `recover --discard` completes) is accepted
//!     only with such an export, and is counted;
//! (b) the job can be finished: `repair --apply` if verify names it, then
//!     the command again, exits 0 and leaves the clean result's state;
//! (c) `verify`, `repair --apply` and the rerun never panic and exit 0, 1,
//!     2 or 4;
//! (d) nothing is lost to a master that resumes from the crash state as it
//!     is, without `verify` or `repair`: the journal, read by upstream's
//!     rules, replays as (a) requires. (A newline sealing a complete last
//!     record, written in place, fails this in the weak states, where the
//!     new size persisted before the byte: the record is then followed by
//!     a NUL and upstream skips it.)
//! All violations are reported together at the end; the counts per
//! command go to stderr. `POWERLOSS_KEEP=DIR` writes every crash state
//! with a violation into DIR, and `POWERLOSS_BIN=PATH` runs the same
//! checks on another build (one from before a fix, say).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use leasejournal::engine::journal::encode::{lease_line, marker_line};
use leasejournal::engine::journal::{Clock, WorkId};
use leasejournal::engine::json::{PyInt, float_repr};
use leasejournal::engine::ledger;

use crate::schema;

/// The journal every case writes.
const JOURNAL: &str = ".work_leases.jsonl";

/// The exit statuses (c) allows. 3 (a live master holds the lock) is
/// not among them: no master runs here.
const ALLOWED_EXITS: [i32; 4] = [0, 1, 2, 4];

/// Past this many combinations at one crash point, files are varied one
/// at a time.
const MAX_PRODUCT: usize = 512;

/// The violations listed in the failure message.
const MAX_LISTED: usize = 30;

/// The time `recover --discard` writes into its reclaims.
const DISCARD_NOW: &str = "--now=1754560000";

/// The calls strace records.
const TRACED: &str = "openat,openat2,open,creat,read,readv,lseek,write,pwrite64,writev,pwritev,pwritev2,\
ftruncate,truncate,fsync,fdatasync,sync,syncfs,rename,renameat,renameat2,unlink,unlinkat,link,linkat,\
copy_file_range,sendfile,close,dup,dup2,dup3,fcntl,mkdir,mkdirat,rmdir";

/// The binary under test: this build's, or `POWERLOSS_BIN`, to check
/// another build (one from before a fix, say) with the same harness.
fn bin() -> &'static Path {
    static OTHER: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    OTHER
        .get_or_init(|| std::env::var_os("POWERLOSS_BIN").map(Into::into))
        .as_deref()
        .unwrap_or_else(|| assert_cmd::cargo::cargo_bin!("leasejournal"))
}

/// A line on the test's real stderr, past the harness's capture: the
/// counts and a skip are meant to be seen.
fn tell(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "powerloss: {line}");
}

// ---- journals -------------------------------------------------------------

/// Work item `n`: its id and canonical payload.
fn item(n: u32) -> (WorkId, String) {
    let payload = format!(
        "{{\"continuation\":null,\"path\":\"/afl/queue/id:{n:06}\",\"target_branch\":{}}}",
        n * 7 % 97
    );
    (WorkId::of_canonical(payload.as_bytes()), payload)
}

fn time_of(n: u32) -> f64 {
    1_754_550_000.0 + f64::from(n) * 0.25
}

/// Item `n`'s lease, as upstream writes it.
fn lease(n: u32, attempts: i64) -> Vec<u8> {
    let (id, payload) = item(n);
    lease_line(
        &id,
        &PyInt::Small(i64::from(n % 5 + 1)),
        time_of(n) + attempts as f64,
        &PyInt::Small(attempts),
        Clock::Unix,
        payload.as_bytes(),
    )
}

/// Item `n`'s `done` or `reclaim`.
fn marker(op: &str, n: u32) -> Vec<u8> {
    marker_line(op, &item(n).0, Clock::Unix, time_of(n) + 30.0)
}

/// A fragment of a lease torn by a crash mid-append.
const TORN: &[u8] = b"{\"attempts\":1,\"clock\":\"unix\",\"id\":\"0123";

/// Items `items`, every third left active and the others done.
fn mixed(items: std::ops::RangeInclusive<u32>) -> Vec<u8> {
    let mut out = Vec::new();
    for n in items {
        out.extend(lease(n, 1));
        if n % 3 != 0 {
            out.extend(marker("done", n));
        }
    }
    out
}

/// 33 completed items and no active one, the last `done` without its
/// newline: sealing it writes one byte.
fn unterminated_done() -> Vec<u8> {
    let mut out = Vec::new();
    for n in 1..=33 {
        out.extend(lease(n, 1));
        out.extend(marker("done", n));
    }
    out.pop();
    out
}

/// Items 1 to 12, the last a lease without its newline: a discard seals
/// it before it appends.
fn unterminated_lease() -> Vec<u8> {
    let mut out = mixed(1..=12);
    out.pop();
    out
}

fn torn_tail() -> Vec<u8> {
    let mut out = mixed(1..=12);
    out.extend_from_slice(TORN);
    out
}

/// A lease glued onto a torn fragment in the middle of the file: repair
/// rewrites the file to bring it back.
fn glued_mid_file() -> Vec<u8> {
    let mut out = mixed(1..=6);
    out.extend_from_slice(TORN);
    out.extend(lease(7, 1));
    out.extend(mixed(8..=12));
    out
}

/// Reclaims, re-leases and a reclaimed item never leased again: the
/// compaction drops their history.
fn shrinking() -> Vec<u8> {
    let mut out = Vec::new();
    for n in 1..=16 {
        out.extend(lease(n, 1));
        match n % 5 {
            0 => {}
            1 => {
                out.extend(marker("reclaim", n));
                out.extend(lease(n, 2));
                out.extend(marker("done", n));
            }
            2 if n > 10 => out.extend(marker("reclaim", n)),
            _ => out.extend(marker("done", n)),
        }
    }
    out
}

/// Records written before the clock marker existed, then unix ones.
fn clockless() -> Vec<u8> {
    let mut out = Vec::new();
    for n in 1..=8 {
        let (id, payload) = item(n);
        let time = float_repr(123_456.0 + f64::from(n));
        out.extend(format!(
            "{{\"attempts\":1,\"id\":\"{id}\",\"op\":\"lease\",\"payload\":{payload},\"time\":{time},\"worker\":{}}}\n",
            n % 3 + 1
        ).into_bytes());
        if n % 2 == 0 {
            out.extend(
                format!("{{\"id\":\"{id}\",\"op\":\"done\",\"time\":{time}}}\n").into_bytes(),
            );
        }
    }
    for n in 9..=12 {
        out.extend(lease(n, 1));
        if n % 2 == 0 {
            out.extend(marker("done", n));
        }
    }
    out
}

/// A command recorded and checked.
struct Case {
    name: &'static str,
    journal: Vec<u8>,
    args: &'static [&'static str],
    discard: bool,
}

fn cases() -> Vec<Case> {
    let discard: &'static [&'static str] =
        &["recover", "--discard", "--all", DISCARD_NOW, "--apply"];
    vec![
        Case {
            name: "repair: unterminated done",
            journal: unterminated_done(),
            args: &["repair", "--apply"],
            discard: false,
        },
        Case {
            name: "repair: torn tail",
            journal: torn_tail(),
            args: &["repair", "--apply"],
            discard: false,
        },
        Case {
            name: "repair: glued record",
            journal: glued_mid_file(),
            args: &["repair", "--apply"],
            discard: false,
        },
        Case {
            name: "discard",
            journal: mixed(1..=12),
            args: discard,
            discard: true,
        },
        Case {
            name: "discard: unterminated last record",
            journal: unterminated_lease(),
            // Item 3 only: the unterminated lease (item 12) stays active.
            args: &["recover", "--discard", "--worker=4", DISCARD_NOW, "--apply"],
            discard: true,
        },
        Case {
            name: "discard: torn tail",
            journal: torn_tail(),
            args: discard,
            discard: true,
        },
        Case {
            name: "compact",
            journal: shrinking(),
            args: &["compact", "--apply"],
            discard: false,
        },
        Case {
            name: "migrate --rewrite",
            journal: clockless(),
            args: &["migrate", "--rewrite", "--apply"],
            discard: false,
        },
    ]
}

// ---- the trace ------------------------------------------------------------

/// One completed system call.
#[derive(Clone, Debug)]
struct Call {
    name: String,
    args: Vec<String>,
    ret: String,
}

impl Call {
    /// The return value, when the call succeeded.
    fn ok(&self) -> Option<i64> {
        let digits: String = self
            .ret
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_hexdigit() || *c == 'x' || *c == '-')
            .collect();
        let value = match digits.strip_prefix("0x") {
            Some(hex) => i64::from_str_radix(hex, 16).ok()?,
            None => digits.parse().ok()?,
        };
        (value >= 0).then_some(value)
    }

    fn arg(&self, i: usize) -> Result<&str, String> {
        self.args
            .get(i)
            .map(String::as_str)
            .ok_or_else(|| format!("{}: no argument {i}", self.name))
    }
}

/// The calls of a strace log, unfinished calls joined with their resumption.
fn parse_trace(text: &str) -> Result<Vec<Call>, String> {
    let mut calls = Vec::new();
    let mut unfinished: HashMap<String, String> = HashMap::new();
    for line in text.lines() {
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        if rest.starts_with("+++") || rest.starts_with("---") {
            continue;
        }
        let whole = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            unfinished.insert(pid.to_string(), head.to_string());
            continue;
        } else if let Some(resumed) = rest.strip_prefix("<... ") {
            let (_, tail) = resumed
                .split_once(" resumed>")
                .ok_or_else(|| format!("cannot read the trace line {line:?}"))?;
            let head = unfinished
                .remove(pid)
                .ok_or_else(|| format!("a resumption without its call: {line:?}"))?;
            head + tail
        } else {
            rest.to_string()
        };
        calls.push(parse_call(&whole).ok_or_else(|| format!("cannot read the call {whole:?}"))?);
    }
    Ok(calls)
}

/// `name(arg, arg, ...) = ret`, split at the top-level commas.
fn parse_call(text: &str) -> Option<Call> {
    let open = text.find('(')?;
    let name = text[..open].to_string();
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut angle = 0usize;
    let mut quoted = false;
    let mut escaped = false;
    let mut start = open + 1;
    for (i, c) in text.char_indices().skip(open + 1) {
        if quoted {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            '(' | '[' | '{' => depth += 1,
            '<' => angle += 1,
            '>' if angle > 0 => angle -= 1,
            ')' if depth == 0 && angle == 0 => {
                let last = text[start..i].trim();
                if !last.is_empty() {
                    args.push(last.to_string());
                }
                let ret = text[i + 1..].trim_start().strip_prefix('=')?.trim();
                return Some(Call {
                    name,
                    args,
                    ret: ret.to_string(),
                });
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 && angle == 0 => {
                args.push(text[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// The bytes of strace's escaped text (`-xx`: every byte as `\xNN`).
fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 4);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let next = *bytes.get(i + 1).ok_or("a lone backslash")?;
        if next == b'x' {
            let hex = text.get(i + 2..i + 4).ok_or("a short \\x escape")?;
            out.push(u8::from_str_radix(hex, 16).map_err(|e| e.to_string())?);
            i += 4;
            continue;
        }
        out.push(match next {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            other => other,
        });
        i += 2;
    }
    Ok(out)
}

/// The quoted strings in an argument, concatenated (a buffer, or the
/// buffers of an iovec array).
fn strings(arg: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = arg;
    while let Some(open) = rest.find('"') {
        let body = &rest[open + 1..];
        let mut end = None;
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let end = end.ok_or_else(|| format!("an unterminated string in {arg:?}"))?;
        if body[end + 1..].starts_with("...") {
            return Err("strace cut a buffer short (raise -s)".into());
        }
        out.extend(unescape(&body[..end])?);
        rest = &body[end + 1..];
    }
    Ok(out)
}

/// The path strace's `-y` shows for a descriptor (`3</path>`).
fn annotation(arg: &str) -> Option<String> {
    let open = arg.find('<')?;
    let close = arg.rfind('>')?;
    let path = unescape(arg.get(open + 1..close)?).ok()?;
    let path = String::from_utf8_lossy(&path).into_owned();
    Some(path.strip_suffix(" (deleted)").unwrap_or(&path).to_string())
}

/// The descriptor of an argument (`3</path>`).
fn fd(arg: &str) -> Option<i64> {
    let digits: String = arg.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A number argument: `12`, `0x1f`, or an offset pointer `[12]`, `[12 => 20]`.
fn number(arg: &str) -> Option<u64> {
    let arg = arg.trim_start_matches('[');
    let digits: String = arg
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    match digits.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => digits.parse().ok(),
    }
}

fn usize_of(arg: &str) -> Result<usize, String> {
    number(arg)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("not a number: {arg:?}"))
}

// ---- the model ------------------------------------------------------------

/// A directory's files by path relative to its root.
type Files = BTreeMap<String, Entry>;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Entry {
    File(Vec<u8>),
    Dir,
}

#[derive(Clone, Debug)]
enum DataOp {
    Write { at: usize, bytes: Vec<u8> },
    Truncate(usize),
}

impl DataOp {
    fn apply(&self, content: &mut Vec<u8>) {
        match self {
            DataOp::Write { at, bytes } => write_at(content, *at, bytes),
            DataOp::Truncate(len) => content.resize(*len, 0),
        }
    }
}

fn write_at(content: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    if content.len() < at + bytes.len() {
        content.resize(at + bytes.len(), 0);
    }
    content[at..at + bytes.len()].copy_from_slice(bytes);
}

#[derive(Clone, Debug, Default)]
struct Inode {
    dir: bool,
    live: Vec<u8>,
    durable: Vec<u8>,
    pending: Vec<DataOp>,
}

/// A namespace operation, on paths relative to the root.
#[derive(Clone, Debug)]
enum NameOp {
    Create(String, usize),
    Link(String, usize),
    Unlink(String),
    Rename(String, String),
    Exchange(String, String),
}

fn parent_of(path: &str) -> String {
    path.rsplit_once('/')
        .map_or(String::new(), |(dir, _)| dir.to_string())
}

impl NameOp {
    /// The directory whose fsync makes it durable.
    fn dir(&self) -> String {
        match self {
            NameOp::Create(name, _) | NameOp::Link(name, _) | NameOp::Unlink(name) => {
                parent_of(name)
            }
            NameOp::Rename(_, to) | NameOp::Exchange(_, to) => parent_of(to),
        }
    }

    fn apply(&self, names: &mut BTreeMap<String, usize>) {
        match self {
            NameOp::Create(name, inode) | NameOp::Link(name, inode) => {
                names.insert(name.clone(), *inode);
            }
            NameOp::Unlink(name) => {
                names.remove(name);
            }
            NameOp::Rename(from, to) => {
                if let Some(inode) = names.remove(from) {
                    names.insert(to.clone(), inode);
                }
            }
            NameOp::Exchange(a, b) => {
                let (x, y) = (names.remove(a), names.remove(b));
                if let Some(x) = x {
                    names.insert(b.clone(), x);
                }
                if let Some(y) = y {
                    names.insert(a.clone(), y);
                }
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            NameOp::Create(name, _) => format!("create {name}"),
            NameOp::Link(name, _) => format!("link {name}"),
            NameOp::Unlink(name) => format!("unlink {name}"),
            NameOp::Rename(from, to) => format!("rename {from} -> {to}"),
            NameOp::Exchange(a, b) => format!("exchange {a} <-> {b}"),
        }
    }
}

/// An open file description: descriptors made by dup share it.
#[derive(Clone, Debug)]
struct Description {
    inode: usize,
    offset: usize,
    append: bool,
}

/// One state the disk can be left in.
struct CrashState {
    point: usize,
    op: String,
    choice: String,
    files: Files,
}

/// The file system under the test's root directory, live and durable.
#[derive(Clone, Debug)]
struct Model {
    root: String,
    cwd: String,
    /// Inode 0 is the root directory.
    inodes: Vec<Inode>,
    names: BTreeMap<String, usize>,
    durable_names: BTreeMap<String, usize>,
    /// Namespace operations not yet made durable, in order.
    pending_names: Vec<NameOp>,
    descriptions: Vec<Description>,
    fds: HashMap<i64, usize>,
}

const ROOT_INODE: usize = 0;

impl Model {
    /// A model of `root` holding `files`, all durable; relative paths are
    /// resolved from `cwd`.
    fn new(root: &str, cwd: &str, files: &Files) -> Model {
        let mut model = Model {
            root: root.trim_end_matches('/').to_string(),
            cwd: cwd.to_string(),
            inodes: vec![Inode {
                dir: true,
                ..Inode::default()
            }],
            names: BTreeMap::new(),
            durable_names: BTreeMap::new(),
            pending_names: Vec::new(),
            descriptions: Vec::new(),
            fds: HashMap::new(),
        };
        for (name, entry) in files {
            let inode = match entry {
                Entry::File(bytes) => Inode {
                    dir: false,
                    live: bytes.clone(),
                    durable: bytes.clone(),
                    pending: Vec::new(),
                },
                Entry::Dir => Inode {
                    dir: true,
                    ..Inode::default()
                },
            };
            model.inodes.push(inode);
            model.names.insert(name.clone(), model.inodes.len() - 1);
        }
        model.durable_names = model.names.clone();
        model
    }

    /// `path` relative to the root, if it is inside it.
    fn relative(&self, base: &str, path: &str) -> Option<String> {
        let joined = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("{base}/{path}")
        };
        let mut parts: Vec<&str> = Vec::new();
        for part in joined.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                p => parts.push(p),
            }
        }
        let normal = format!("/{}", parts.join("/"));
        if normal == self.root {
            Some(String::new())
        } else {
            normal
                .strip_prefix(&format!("{}/", self.root))
                .map(str::to_string)
        }
    }

    /// A path argument relative to the root, resolved from a directory
    /// descriptor argument (`AT_FDCWD</cwd>`, `3</dir>`) or the cwd.
    fn path_arg(&self, dirfd: Option<&str>, path: &str) -> Result<Option<String>, String> {
        let bytes = strings(path)?;
        let path = String::from_utf8_lossy(&bytes).into_owned();
        let base = dirfd
            .and_then(annotation)
            .unwrap_or_else(|| self.cwd.clone());
        Ok(self.relative(&base, &path))
    }

    fn lookup(&self, rel: &str) -> Option<usize> {
        if rel.is_empty() {
            Some(ROOT_INODE)
        } else {
            self.names.get(rel).copied()
        }
    }

    fn name_of(&self, inode: usize) -> String {
        if inode == ROOT_INODE {
            return ".".into();
        }
        self.names
            .iter()
            .find(|(_, i)| **i == inode)
            .map_or_else(|| format!("#{inode} (no name)"), |(n, _)| n.clone())
    }

    /// The description behind a descriptor argument, if it is modelled.
    fn description(&self, arg: &str) -> Option<usize> {
        fd(arg).and_then(|n| self.fds.get(&n).copied())
    }

    fn new_inode(&mut self, dir: bool) -> usize {
        self.inodes.push(Inode {
            dir,
            ..Inode::default()
        });
        self.inodes.len() - 1
    }

    fn open_fd(&mut self, fd: i64, inode: usize, append: bool) {
        self.descriptions.push(Description {
            inode,
            offset: 0,
            append,
        });
        self.fds.insert(fd, self.descriptions.len() - 1);
    }

    fn name_op(&mut self, op: NameOp) -> String {
        op.apply(&mut self.names);
        let label = op.describe();
        self.pending_names.push(op);
        label
    }

    fn data_op(&mut self, call: &str, inode: usize, op: DataOp) -> String {
        let label = match &op {
            DataOp::Write { at, bytes } => format!(
                "{call} of {} bytes at {at} to {}",
                bytes.len(),
                self.name_of(inode)
            ),
            DataOp::Truncate(len) => format!("{call} of {} to {len}", self.name_of(inode)),
        };
        let node = &mut self.inodes[inode];
        op.apply(&mut node.live);
        node.pending.push(op);
        label
    }

    /// Writes `bytes` through a description (at its offset, or at the end
    /// with O_APPEND) and moves the offset.
    fn write_through(&mut self, call: &str, desc: usize, bytes: Vec<u8>) -> String {
        let d = &self.descriptions[desc];
        let at = if d.append {
            self.inodes[d.inode].live.len()
        } else {
            d.offset
        };
        let inode = d.inode;
        self.descriptions[desc].offset = at + bytes.len();
        self.data_op(call, inode, DataOp::Write { at, bytes })
    }

    /// Bytes `len` at `at` of an inode's live content.
    fn read_range(&self, inode: usize, at: usize, len: usize) -> Vec<u8> {
        let live = &self.inodes[inode].live;
        live[at.min(live.len())..(at + len).min(live.len())].to_vec()
    }

    /// Makes everything of `inode` durable: its data, and for a directory
    /// its namespace operations.
    fn sync(&mut self, inode: usize) -> String {
        let label = format!("fsync {}", self.name_of(inode));
        if self.inodes[inode].dir {
            let dir = if inode == ROOT_INODE {
                String::new()
            } else {
                self.name_of(inode)
            };
            let (mine, rest): (Vec<NameOp>, Vec<NameOp>) = std::mem::take(&mut self.pending_names)
                .into_iter()
                .partition(|op| op.dir() == dir);
            for op in &mine {
                op.apply(&mut self.durable_names);
            }
            self.pending_names = rest;
        } else {
            let node = &mut self.inodes[inode];
            node.durable = node.live.clone();
            node.pending.clear();
        }
        label
    }

    /// Applies one call; returns what it did when it changed the model.
    fn apply(&mut self, call: &Call) -> Result<Option<String>, String> {
        let ret = call.ok();
        let name = call.name.as_str();
        // A descriptor returned by a call outside the root replaces
        // whatever the number meant before.
        let returns_fd = matches!(
            name,
            "open" | "openat" | "openat2" | "creat" | "dup" | "dup2" | "dup3"
        ) || (name == "fcntl"
            && call.args.get(1).is_some_and(|c| c.starts_with("F_DUPFD")));
        if returns_fd && let Some(n) = ret {
            self.fds.remove(&n);
        }
        let Some(ret) = ret else {
            return Ok(None);
        };
        let ret_usize = usize::try_from(ret).map_err(|e| e.to_string())?;
        match name {
            "open" | "openat" | "openat2" | "creat" => {
                let (dirfd, path, flags) = match name {
                    "open" => (None, call.arg(0)?, call.arg(1)?.to_string()),
                    "creat" => (None, call.arg(0)?, "O_WRONLY|O_CREAT|O_TRUNC".to_string()),
                    _ => (Some(call.arg(0)?), call.arg(1)?, call.arg(2)?.to_string()),
                };
                let Some(rel) = self.path_arg(dirfd, path)? else {
                    return Ok(None);
                };
                let append = flags.contains("O_APPEND");
                if flags.contains("O_TMPFILE") {
                    let inode = self.new_inode(false);
                    self.open_fd(ret, inode, append);
                    return Ok(Some(format!("open an unnamed file (O_TMPFILE) in {rel:?}")));
                }
                match self.lookup(&rel) {
                    Some(inode) => {
                        self.open_fd(ret, inode, append);
                        let truncates = flags.contains("O_TRUNC")
                            && !self.inodes[inode].dir
                            && !self.inodes[inode].live.is_empty();
                        Ok(truncates.then(|| self.data_op(name, inode, DataOp::Truncate(0))))
                    }
                    None if flags.contains("O_CREAT") => {
                        let inode = self.new_inode(false);
                        self.open_fd(ret, inode, append);
                        Ok(Some(self.name_op(NameOp::Create(rel, inode))))
                    }
                    None => Err(format!(
                        "{name} opened {rel}, which the model does not have"
                    )),
                }
            }
            "close" => {
                if let Some(n) = fd(call.arg(0)?) {
                    self.fds.remove(&n);
                }
                Ok(None)
            }
            "dup" | "dup2" | "dup3" | "fcntl" => {
                if name == "fcntl" {
                    let command = call.arg(1)?;
                    if command == "F_SETFL"
                        && let Some(desc) = self.description(call.arg(0)?)
                    {
                        self.descriptions[desc].append = call.arg(2)?.contains("O_APPEND");
                    }
                    if !command.starts_with("F_DUPFD") {
                        return Ok(None);
                    }
                }
                if let Some(desc) = self.description(call.arg(0)?) {
                    self.fds.insert(ret, desc);
                }
                Ok(None)
            }
            "read" | "readv" => {
                if let Some(desc) = self.description(call.arg(0)?) {
                    self.descriptions[desc].offset += ret_usize;
                }
                Ok(None)
            }
            "lseek" => {
                if let Some(desc) = self.description(call.arg(0)?) {
                    self.descriptions[desc].offset = ret_usize;
                }
                Ok(None)
            }
            "write" | "writev" | "pwrite64" | "pwritev" | "pwritev2" => {
                let Some(desc) = self.description(call.arg(0)?) else {
                    return self.unmodelled(call);
                };
                let mut bytes = strings(call.arg(1)?)?;
                bytes.truncate(ret_usize);
                if name == "write" || name == "writev" {
                    return Ok(Some(self.write_through(name, desc, bytes)));
                }
                // pwrite64(fd, buf, count, offset), pwritev(fd, iov, count, offset).
                let at = usize_of(call.arg(3)?)?;
                let inode = self.descriptions[desc].inode;
                Ok(Some(self.data_op(name, inode, DataOp::Write { at, bytes })))
            }
            "copy_file_range" | "sendfile" => {
                let (src, src_off, dst, dst_off) = if name == "copy_file_range" {
                    (call.arg(0)?, call.arg(1)?, call.arg(2)?, Some(call.arg(3)?))
                } else {
                    (call.arg(1)?, call.arg(2)?, call.arg(0)?, None)
                };
                let (src_desc, dst_desc) = (self.description(src), self.description(dst));
                let from = match src_off {
                    "NULL" => src_desc.map(|d| {
                        let at = self.descriptions[d].offset;
                        self.descriptions[d].offset += ret_usize;
                        at
                    }),
                    explicit => Some(usize_of(explicit)?),
                };
                let Some(dst_desc) = dst_desc else {
                    return Ok(None);
                };
                let (Some(src_desc), Some(from)) = (src_desc, from) else {
                    return Err(format!(
                        "{name} into {} from a file the model does not have",
                        self.name_of(self.descriptions[dst_desc].inode)
                    ));
                };
                let bytes = self.read_range(self.descriptions[src_desc].inode, from, ret_usize);
                match dst_off {
                    Some(off) if off != "NULL" => {
                        let inode = self.descriptions[dst_desc].inode;
                        let at = usize_of(off)?;
                        Ok(Some(self.data_op(name, inode, DataOp::Write { at, bytes })))
                    }
                    _ => Ok(Some(self.write_through(name, dst_desc, bytes))),
                }
            }
            "ftruncate" => {
                let Some(desc) = self.description(call.arg(0)?) else {
                    return self.unmodelled(call);
                };
                let len = usize_of(call.arg(1)?)?;
                let inode = self.descriptions[desc].inode;
                Ok(Some(self.data_op(name, inode, DataOp::Truncate(len))))
            }
            "truncate" => {
                let Some(rel) = self.path_arg(None, call.arg(0)?)? else {
                    return Ok(None);
                };
                let inode = self
                    .lookup(&rel)
                    .ok_or_else(|| format!("truncate of {rel}, which the model does not have"))?;
                Ok(Some(self.data_op(
                    name,
                    inode,
                    DataOp::Truncate(usize_of(call.arg(1)?)?),
                )))
            }
            "fsync" | "fdatasync" => {
                let Some(desc) = self.description(call.arg(0)?) else {
                    return self.unmodelled(call);
                };
                Ok(Some(self.sync(self.descriptions[desc].inode)))
            }
            "sync" | "syncfs" => {
                for inode in 0..self.inodes.len() {
                    self.sync(inode);
                }
                for op in std::mem::take(&mut self.pending_names) {
                    op.apply(&mut self.durable_names);
                }
                Ok(Some(name.to_string()))
            }
            "rename" | "renameat" | "renameat2" => {
                let (from, to, flags) = if name == "rename" {
                    (
                        self.path_arg(None, call.arg(0)?)?,
                        self.path_arg(None, call.arg(1)?)?,
                        "",
                    )
                } else {
                    (
                        self.path_arg(Some(call.arg(0)?), call.arg(1)?)?,
                        self.path_arg(Some(call.arg(2)?), call.arg(3)?)?,
                        call.args.get(4).map_or("", String::as_str),
                    )
                };
                match (from, to) {
                    (None, None) => Ok(None),
                    (Some(from), Some(to)) => {
                        let inode = self
                            .lookup(&from)
                            .ok_or_else(|| format!("rename of {from}, unknown to the model"))?;
                        if self.inodes[inode].dir {
                            return Err(format!("rename of the directory {from} is not modelled"));
                        }
                        let op = if flags.contains("RENAME_EXCHANGE") {
                            NameOp::Exchange(from, to)
                        } else {
                            NameOp::Rename(from, to)
                        };
                        Ok(Some(self.name_op(op)))
                    }
                    _ => Err(format!("{name} across the test directory is not modelled")),
                }
            }
            "unlink" | "unlinkat" | "rmdir" => {
                let rel = if name == "unlinkat" {
                    self.path_arg(Some(call.arg(0)?), call.arg(1)?)?
                } else {
                    self.path_arg(None, call.arg(0)?)?
                };
                Ok(rel.map(|rel| self.name_op(NameOp::Unlink(rel))))
            }
            "link" | "linkat" => {
                let (old_dir, old, new_dir, new, flags) = if name == "link" {
                    (None, call.arg(0)?, None, call.arg(1)?, "")
                } else {
                    (
                        Some(call.arg(0)?),
                        call.arg(1)?,
                        Some(call.arg(2)?),
                        call.arg(3)?,
                        call.args.get(4).map_or("", String::as_str),
                    )
                };
                let Some(new) = self.path_arg(new_dir, new)? else {
                    return Ok(None);
                };
                let old_text = String::from_utf8_lossy(&strings(old)?).into_owned();
                let inode = if old_text.is_empty() && flags.contains("AT_EMPTY_PATH") {
                    old_dir.and_then(|d| self.description(d))
                } else if let Some(n) = old_text
                    .strip_prefix("/proc/")
                    .and_then(|p| p.split_once("/fd/"))
                    .and_then(|(_, n)| n.parse::<i64>().ok())
                {
                    self.fds.get(&n).copied()
                } else {
                    None
                }
                .map(|desc| self.descriptions[desc].inode);
                let inode = match inode {
                    Some(inode) => inode,
                    None => {
                        let rel = self
                            .path_arg(old_dir, old)?
                            .ok_or_else(|| format!("{name} from outside the test directory"))?;
                        self.lookup(&rel)
                            .ok_or_else(|| format!("{name} of {rel}, unknown to the model"))?
                    }
                };
                Ok(Some(self.name_op(NameOp::Link(new, inode))))
            }
            "mkdir" | "mkdirat" => {
                let rel = if name == "mkdirat" {
                    self.path_arg(Some(call.arg(0)?), call.arg(1)?)?
                } else {
                    self.path_arg(None, call.arg(0)?)?
                };
                let Some(rel) = rel else {
                    return Ok(None);
                };
                let inode = self.new_inode(true);
                Ok(Some(self.name_op(NameOp::Create(rel, inode))))
            }
            _ => Ok(None),
        }
    }

    /// A call on a descriptor the model does not know: harmless unless
    /// strace shows it names a path inside the root.
    fn unmodelled(&self, call: &Call) -> Result<Option<String>, String> {
        let inside = call
            .args
            .first()
            .and_then(|a| annotation(a))
            .and_then(|p| self.relative("/", &p));
        match inside {
            Some(rel) => Err(format!(
                "{} on {rel} through a descriptor the model does not know",
                call.name
            )),
            None => Ok(None),
        }
    }

    /// The directory as it is now.
    fn live_files(&self) -> Files {
        self.files_of(&self.names, |inode| self.inodes[inode].live.clone())
    }

    fn files_of(
        &self,
        names: &BTreeMap<String, usize>,
        content: impl Fn(usize) -> Vec<u8>,
    ) -> Files {
        names
            .iter()
            .map(|(name, &inode)| {
                let entry = if self.inodes[inode].dir {
                    Entry::Dir
                } else {
                    Entry::File(content(inode))
                };
                (name.clone(), entry)
            })
            .collect()
    }

    /// The contents an inode can be left with, each with what it is.
    fn variants(&self, inode: usize) -> Vec<(String, Vec<u8>)> {
        let node = &self.inodes[inode];
        let n = node.pending.len();
        let mut out = vec![(format!("0/{n} data ops"), node.durable.clone())];
        let mut content = node.durable.clone();
        for (i, op) in node.pending.iter().enumerate() {
            let before = content.clone();
            op.apply(&mut content);
            if let DataOp::Write { at, bytes } = op
                && at + bytes.len() > before.len()
            {
                let end = at + bytes.len();
                let mut zeros = before.clone();
                zeros.resize(end, 0);
                out.push((
                    format!("{i}/{n} data ops, then op {} as its size with zeros", i + 1),
                    zeros.clone(),
                ));
                // A prefix of the data, with the size of the whole write
                // (zeros after it) or with only its own.
                for cut in partial_cuts(*at, bytes.len()) {
                    for (base, size) in [(&zeros, "its size"), (&before, "the prefix's end")] {
                        let mut partly = base.clone();
                        write_at(&mut partly, *at, &bytes[..cut]);
                        out.push((
                            format!(
                                "{i}/{n} data ops, then op {} as {cut} of its {} bytes, the file up to {size}",
                                i + 1,
                                bytes.len()
                            ),
                            partly,
                        ));
                    }
                }
            }
            out.push((format!("{}/{n} data ops", i + 1), content.clone()));
        }
        let mut seen = HashSet::new();
        out.retain(|(_, bytes)| seen.insert(bytes.clone()));
        out
    }

    /// Every state a cut now can leave, with the choice that makes it.
    fn crash_states(&self) -> Vec<(String, Files)> {
        let mut dirs: Vec<String> = Vec::new();
        for op in &self.pending_names {
            if !dirs.contains(&op.dir()) {
                dirs.push(op.dir());
            }
        }
        let counts: Vec<usize> = dirs
            .iter()
            .map(|d| {
                self.pending_names
                    .iter()
                    .filter(|op| op.dir() == *d)
                    .count()
            })
            .collect();
        let mut out = Vec::new();
        let mut variants: HashMap<usize, Vec<(String, Vec<u8>)>> = HashMap::new();
        for prefix in product(&counts.iter().map(|c| c + 1).collect::<Vec<_>>()) {
            let mut names = self.durable_names.clone();
            let mut taken = vec![0; dirs.len()];
            let mut last = vec![String::new(); dirs.len()];
            for op in &self.pending_names {
                let d = dirs.iter().position(|d| *d == op.dir()).unwrap_or(0);
                if taken[d] < prefix[d] {
                    op.apply(&mut names);
                    taken[d] += 1;
                    last[d] = format!(", up to {}", op.describe());
                }
            }
            let mut choice = Vec::new();
            for (d, dir) in dirs.iter().enumerate() {
                let shown = if dir.is_empty() { "." } else { dir };
                let last = &last[d];
                choice.push(format!(
                    "names in {shown}: {}/{} ops{last}",
                    prefix[d], counts[d]
                ));
            }
            let mut present: Vec<usize> = names
                .values()
                .copied()
                .filter(|&i| !self.inodes[i].dir)
                .collect();
            present.sort_unstable();
            present.dedup();
            for &inode in &present {
                variants
                    .entry(inode)
                    .or_insert_with(|| self.variants(inode));
            }
            let sizes: Vec<usize> = present.iter().map(|i| variants[i].len()).collect();
            let combinations: Vec<(Vec<usize>, bool)> =
                if sizes.iter().product::<usize>() <= MAX_PRODUCT {
                    product(&sizes).into_iter().map(|c| (c, false)).collect()
                } else {
                    one_at_a_time(&sizes)
                        .into_iter()
                        .map(|c| (c, true))
                        .collect()
                };
            for (combination, sampled) in combinations {
                let mut label = choice.clone();
                if sampled {
                    label.push("(files varied one at a time)".into());
                }
                let mut contents = HashMap::new();
                for (k, &inode) in present.iter().enumerate() {
                    let (what, bytes) = &variants[&inode][combination[k]];
                    if sizes[k] > 1 {
                        label.push(format!("{}: {what}", self.name_of_in(&names, inode)));
                    }
                    contents.insert(inode, bytes.clone());
                }
                let files = self.files_of(&names, |inode| contents[&inode].clone());
                out.push((label.join("; "), files));
            }
        }
        out
    }

    /// An inode's name in a crash state's namespace.
    fn name_of_in(&self, names: &BTreeMap<String, usize>, inode: usize) -> String {
        names
            .iter()
            .find(|(_, i)| **i == inode)
            .map_or_else(|| self.name_of(inode), |(n, _)| n.clone())
    }
}

/// Where a write that extends a file may have been cut: half way and at
/// the first four page boundaries inside it.
fn partial_cuts(at: usize, len: usize) -> Vec<usize> {
    let mut cuts = vec![len / 2];
    let mut boundary = (at / 4096 + 1) * 4096;
    while boundary < at + len && cuts.len() < 5 {
        cuts.push(boundary - at);
        boundary += 4096;
    }
    cuts.retain(|&c| c > 0 && c < len);
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// Every combination of one index below each size.
fn product(sizes: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for &size in sizes {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (0..size).map(move |i| {
                    let mut next = prefix.clone();
                    next.push(i);
                    next
                })
            })
            .collect();
    }
    out
}

/// All first choices and all last choices, each with one position varied.
fn one_at_a_time(sizes: &[usize]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for base in [
        vec![0; sizes.len()],
        sizes.iter().map(|s| s - 1).collect::<Vec<_>>(),
    ] {
        out.push(base.clone());
        for (k, &size) in sizes.iter().enumerate() {
            for i in 0..size {
                let mut next = base.clone();
                next[k] = i;
                out.push(next);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

// ---- running the tool -----------------------------------------------------

struct Ran {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

fn run(args: &[&str], path: &Path) -> Ran {
    let out = Command::new(bin())
        .args(args)
        .arg(path)
        .current_dir(path.parent().unwrap_or(path))
        .stdin(Stdio::null())
        .output()
        .expect("run leasejournal");
    Ran {
        code: out.status.code(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Ran {
    /// Why this run breaks (c), if it does.
    fn misbehaviour(&self) -> Option<String> {
        let panic = self
            .stderr
            .lines()
            .find(|l| l.contains("panicked"))
            .map(|l| format!(": {l}"))
            .unwrap_or_default();
        match self.code {
            None => Some(format!("killed by a signal{panic}")),
            Some(code) if !ALLOWED_EXITS.contains(&code) || !panic.is_empty() => {
                Some(format!("exit {code}{panic}"))
            }
            Some(_) => None,
        }
    }

    fn last_line(&self) -> &str {
        self.stderr.lines().last().unwrap_or("")
    }
}

/// What the journal replays to: the active leases and the completed ids.
#[derive(Clone, Debug, PartialEq)]
struct Replay {
    /// Each active lease's worker, time, attempts, clock and path.
    active: BTreeMap<
        String,
        (
            schema::PyInt,
            f64,
            schema::PyInt,
            schema::Clock,
            Option<String>,
        ),
    >,
    completed: BTreeSet<String>,
}

impl Replay {
    /// The ids active here and not in `other`.
    fn active_not_in<'a>(&'a self, other: &Replay) -> Vec<&'a String> {
        self.active
            .keys()
            .filter(|id| !other.active.contains_key(*id))
            .collect()
    }
}

fn replay(journal: &Path) -> Result<Replay, String> {
    let ran = run(&["inspect", "--format=json", "--kind=journal"], journal);
    if ran.code != Some(0) {
        return Err(format!("inspect exits {:?}: {}", ran.code, ran.last_line()));
    }
    let v = match serde_json::from_slice::<schema::Inspect>(&ran.stdout) {
        Ok(schema::Inspect::Journal(v)) => v,
        Ok(other) => return Err(format!("inspect: not a journal report: {other:?}")),
        Err(e) => return Err(format!("inspect: {e}")),
    };
    let active = v
        .active
        .into_iter()
        .map(|a| (a.id, (a.worker, a.time, a.attempts, a.clock, a.path)))
        .collect();
    let completed = v.completed.into_iter().collect();
    Ok(Replay { active, completed })
}

/// How `got` differs from `want`, in counts and the first ids.
fn difference(got: &Replay, want: &Replay) -> String {
    fn ids<'a>(set: impl Iterator<Item = &'a String>) -> String {
        let shown: Vec<String> = set.take(3).map(|id| id[..12].to_string()).collect();
        if shown.is_empty() {
            "none".into()
        } else {
            shown.join(",")
        }
    }
    let mut parts = Vec::new();
    let lost = want.active_not_in(got);
    let extra = got.active_not_in(want);
    let changed = got
        .active
        .iter()
        .filter(|(k, v)| want.active.get(*k).is_some_and(|w| w != *v))
        .count();
    if !lost.is_empty() || !extra.is_empty() || changed > 0 {
        parts.push(format!(
            "{} active, want {} (missing {}; extra {}; {changed} changed)",
            got.active.len(),
            want.active.len(),
            ids(lost.into_iter()),
            ids(extra.into_iter())
        ));
    }
    if got.completed != want.completed {
        parts.push(format!(
            "{} completed, want {} (missing {}; extra {})",
            got.completed.len(),
            want.completed.len(),
            ids(want.completed.difference(&got.completed)),
            ids(got.completed.difference(&want.completed))
        ));
    }
    parts.join("; ")
}

fn read_files(root: &Path) -> Files {
    let mut files = Files::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read the directory") {
            let path = entry.expect("entry").path();
            let rel = path
                .strip_prefix(root)
                .expect("inside")
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                files.insert(rel, Entry::Dir);
                stack.push(path);
            } else {
                files.insert(rel, Entry::File(fs::read(&path).expect("read a file")));
            }
        }
    }
    files
}

fn materialise(files: &Files) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, entry) in files {
        let path = dir.path().join(name);
        match entry {
            Entry::Dir => fs::create_dir_all(&path).expect("mkdir"),
            Entry::File(bytes) => fs::write(&path, bytes).expect("write"),
        }
    }
    dir
}

/// The complete lines of `bytes` (those ending with a newline).
fn complete_lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| !l.ends_with(b"\n")) {
        lines.pop();
    }
    lines
}

// ---- recording ------------------------------------------------------------

/// Why there is nothing to record with.
enum Unavailable {
    NoStrace,
    PtraceRefused(String),
}

fn strace_available() -> Result<(), Unavailable> {
    match Command::new("strace")
        .args(["-f", "-o", "/dev/null", "true"])
        .stdin(Stdio::null())
        .output()
    {
        Err(_) => Err(Unavailable::NoStrace),
        Ok(out) if !out.status.success() => Err(Unavailable::PtraceRefused(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        )),
        Ok(_) => Ok(()),
    }
}

/// A command recorded, with every crash state to check.
struct Recorded {
    case: Case,
    points: usize,
    /// Crash states before identical directories were merged.
    generated: usize,
    states: Vec<CrashState>,
    original: Replay,
    clean: Replay,
    /// `recover --discard`: the clean run's export lines and the reclaims
    /// it appended.
    export: Vec<Vec<u8>>,
    reclaims: Vec<Vec<u8>>,
    discarded: BTreeSet<String>,
}

fn record(case: Case) -> Recorded {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = fs::canonicalize(dir.path()).expect("canonical root");
    let journal = root.join(JOURNAL);
    fs::write(&journal, &case.journal).unwrap();
    fs::write(root.join(".master-queue.lock"), b"").unwrap();
    let initial = read_files(&root);
    let original = replay(&journal).unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let traced = trace(case.name, &root, case.args, &journal, &initial);
    let done = read_files(&root);
    let clean = replay(&journal).unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let (mut export, mut reclaims, mut discarded) = (Vec::new(), Vec::new(), BTreeSet::new());
    if case.discard {
        for (name, entry) in &done {
            if let (true, Entry::File(bytes)) = (name.contains(".discarded."), entry) {
                export.extend(complete_lines(bytes).into_iter().map(<[u8]>::to_vec));
            }
        }
        let before: HashSet<&[u8]> = complete_lines(&case.journal).into_iter().collect();
        if let Some(Entry::File(after)) = done.get(JOURNAL) {
            reclaims = complete_lines(after)
                .into_iter()
                .filter(|l| !before.contains(l))
                .map(<[u8]>::to_vec)
                .collect();
        }
        discarded = original
            .active
            .keys()
            .filter(|id| !clean.active.contains_key(*id))
            .cloned()
            .collect();
        assert!(
            !export.is_empty() && !reclaims.is_empty(),
            "{}: the clean run discarded nothing",
            case.name
        );
    }
    Recorded {
        case,
        points: traced.points,
        generated: traced.generated,
        states: traced.states,
        original,
        clean,
        export,
        reclaims,
        discarded,
    }
}

/// A run recorded under strace and replayed into the model: every crash
/// state on the way, each distinct one once.
struct Traced {
    points: usize,
    generated: usize,
    states: Vec<CrashState>,
}

/// Runs `args` on `target` under strace in `root` (which holds `initial`)
/// and replays the calls into the model; the run must succeed, and the
/// model must end with what the directory holds.
fn trace(name: &str, root: &Path, args: &[&str], target: &Path, initial: &Files) -> Traced {
    let logs = tempfile::tempdir().expect("tempdir");
    let log = logs.path().join("trace");
    let out = Command::new("strace")
        .args(["-f", "-y", "-s", "1048576", "-xx", "-o"])
        .arg(&log)
        .args(["-e", &format!("trace={TRACED}")])
        .arg(bin())
        .args(args)
        .arg(target)
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .expect("run strace");
    assert!(
        out.status.success(),
        "{name}: the recorded run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = read_files(root);
    let text = fs::read_to_string(&log).expect("read the trace");
    let calls = parse_trace(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let root_text = root.to_string_lossy().into_owned();
    let mut model = Model::new(&root_text, &root_text, initial);
    let mut seen = HashSet::new();
    let mut states = Vec::new();
    let mut generated = 0;
    let mut collect = |model: &Model, point: usize, op: &str| {
        for (choice, files) in model.crash_states() {
            generated += 1;
            if seen.insert(files.clone()) {
                states.push(CrashState {
                    point,
                    op: op.to_string(),
                    choice,
                    files,
                });
            }
        }
    };
    collect(&model, 0, "before the first operation");
    let mut points = 1;
    for call in &calls {
        let did = model
            .apply(call)
            .unwrap_or_else(|e| panic!("{name}: the model cannot follow {call:?}: {e}"));
        if let Some(op) = did {
            collect(&model, points, &op);
            points += 1;
        }
    }
    let modelled = model.live_files();
    assert!(
        modelled == done,
        "{name}: the model ends with {:?}, the directory holds {:?}",
        summary(&modelled),
        summary(&done)
    );
    Traced {
        points,
        generated,
        states,
    }
}

/// Names and sizes, for a message.
fn summary(files: &Files) -> Vec<(String, usize)> {
    files
        .iter()
        .map(|(n, e)| {
            let len = match e {
                Entry::File(b) => b.len(),
                Entry::Dir => 0,
            };
            (n.clone(), len)
        })
        .collect()
}

// ---- checking -------------------------------------------------------------

struct Violation {
    case: &'static str,
    /// The crash state's index in its command's list.
    state: usize,
    point: usize,
    op: String,
    choice: String,
    check: &'static str,
    what: String,
}

/// Whether every line of the clean run's export is in an export of `files`.
fn export_is_whole(rec: &Recorded, files: &Files) -> bool {
    let mut held: HashSet<&[u8]> = HashSet::new();
    for (name, entry) in files {
        if let (true, Entry::File(bytes)) = (name.contains(".discarded."), entry) {
            held.extend(complete_lines(bytes));
        }
    }
    rec.export.iter().all(|l| held.contains(l.as_slice()))
}

/// Whether a journal replaying to `got` lost nothing: it is the original's
/// state or the clean result's, or (a discard whose export is whole) a
/// partial discard; `Ok(true)` for the last. Else how it differs.
fn judge(rec: &Recorded, got: &Replay, export_whole: bool) -> Result<bool, String> {
    if *got == rec.original || *got == rec.clean {
        return Ok(false);
    }
    let missing = rec.original.active_not_in(got);
    let subset = got
        .active
        .iter()
        .all(|(k, v)| rec.original.active.get(k) == Some(v));
    if rec.case.discard
        && export_whole
        && subset
        && got.completed == rec.original.completed
        && missing.iter().all(|id| rec.discarded.contains(*id))
    {
        return Ok(true);
    }
    Err(if rec.original == rec.clean {
        format!("vs the original: {}", difference(got, &rec.original))
    } else {
        format!(
            "vs the original: {}; vs the clean result: {}",
            difference(got, &rec.original),
            difference(got, &rec.clean)
        )
    })
}

/// Checks one crash state; returns its violations and whether it was a
/// partial discard.
fn check(rec: &Recorded, index: usize) -> (Vec<Violation>, bool) {
    let state = &rec.states[index];
    let mut found = Vec::new();
    let mut violation = |check: &'static str, what: String| {
        found.push(Violation {
            case: rec.case.name,
            state: index,
            point: state.point,
            op: state.op.clone(),
            choice: state.choice.clone(),
            check,
            what,
        });
    };
    let mut partial = false;

    // (c) and what verify asks for.
    let a = materialise(&state.files);
    let ja = a.path().join(JOURNAL);
    let verify = run(&["verify", "--format=json"], a.path());
    if let Some(bad) = verify.misbehaviour() {
        violation("(c) verify", bad);
    }
    let asks_repair = serde_json::from_slice::<schema::Verify>(&verify.stdout)
        .is_ok_and(|v| v.next.iter().any(|c| c.starts_with("leasejournal repair ")));

    // (a) the export comes first, then no record is lost.
    let export_whole = export_is_whole(rec, &state.files);
    if rec.case.discard
        && let Some(Entry::File(raw)) = state.files.get(JOURNAL)
    {
        let has_reclaims = complete_lines(raw)
            .into_iter()
            .any(|l| rec.reclaims.iter().any(|r| r.as_slice() == l));
        if has_reclaims && !export_whole {
            violation(
                "(a) export",
                "the journal holds reclaims of the discard, but no export holds every discarded lease".into(),
            );
        }
    }
    // (d) a master that resumes from the crash state as it is, without
    // verify or repair, loses nothing either.
    match replay(&ja) {
        Err(e) => violation("(d) resume", format!("the crash state: {e}")),
        Ok(got) => {
            if let Err(versus) = judge(rec, &got, export_whole) {
                violation("(d) resume", format!("as the master reads it, {versus}"));
            }
        }
    }
    let repair = run(&["repair", "--apply"], &ja);
    if let Some(bad) = repair.misbehaviour() {
        violation("(c) repair", format!("{bad}: {}", repair.last_line()));
    }
    match replay(&ja) {
        Err(e) => violation("(a) lost", format!("after repair: {e}")),
        Ok(got) => match judge(rec, &got, export_whole) {
            Ok(was_partial) => partial = was_partial,
            Err(versus) => violation("(a) lost", format!("after repair --apply, {versus}")),
        },
    }

    // (b) the job can be finished.
    let b = materialise(&state.files);
    let jb = b.path().join(JOURNAL);
    if asks_repair {
        let ran = run(&["repair", "--apply"], &jb);
        if let Some(bad) = ran.misbehaviour() {
            violation("(c) repair", format!("{bad}: {}", ran.last_line()));
        }
    }
    if let Some((check, what)) = rerun_fails(rec.case.args, &jb) {
        violation(check, what);
    }
    match replay(&jb) {
        Err(e) => violation("(b) finish", format!("after the rerun: {e}")),
        Ok(got) if got == rec.clean => {}
        Ok(got) => violation(
            "(b) finish",
            format!(
                "after the rerun, vs the clean result: {}",
                difference(&got, &rec.clean)
            ),
        ),
    }
    (found, partial)
}

/// Runs the command again on `path`: the check it breaks and how, when it
/// does not exit 0 cleanly ((c) a misbehaviour, (b) another status).
fn rerun_fails(args: &[&str], path: &Path) -> Option<(&'static str, String)> {
    let rerun = run(args, path);
    if let Some(bad) = rerun.misbehaviour() {
        return Some(("(c) rerun", format!("{bad}: {}", rerun.last_line())));
    }
    (rerun.code != Some(0)).then(|| {
        (
            "(b) finish",
            format!("the rerun exits {:?}: {}", rerun.code, rerun.last_line()),
        )
    })
}

#[test]
fn power_loss_at_any_crash_point_loses_no_record_and_the_job_can_be_finished() {
    match strace_available() {
        Ok(()) => {}
        Err(Unavailable::NoStrace) => {
            tell("strace not found; skipping");
            return;
        }
        Err(Unavailable::PtraceRefused(why)) => {
            tell(&format!("strace cannot trace here ({why}); skipping"));
            return;
        }
    }
    let started = Instant::now();
    let recorded: Vec<Recorded> = cases().into_iter().map(record).collect();
    let jobs: Vec<(usize, usize)> = recorded
        .iter()
        .enumerate()
        .flat_map(|(c, rec)| (0..rec.states.len()).map(move |s| (c, s)))
        .collect();
    let next = AtomicUsize::new(0);
    let violations = Mutex::new(Vec::new());
    let partials: Vec<AtomicUsize> = recorded.iter().map(|_| AtomicUsize::new(0)).collect();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some(&(c, s)) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let (found, partial) = check(&recorded[c], s);
                    if partial {
                        partials[c].fetch_add(1, Ordering::Relaxed);
                    }
                    violations
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .extend(found);
                }
            });
        }
    });
    let mut violations = violations
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    violations.sort_by(|x, y| (x.case, x.point, &x.choice).cmp(&(y.case, y.point, &y.choice)));
    for (c, rec) in recorded.iter().enumerate() {
        let broken: HashSet<(usize, &str)> = violations
            .iter()
            .filter(|v| v.case == rec.case.name)
            .map(|v| (v.point, v.choice.as_str()))
            .collect();
        tell(&format!(
            "{}: {} crash points, {} crash states, {} distinct ones checked, {} with violations{}",
            rec.case.name,
            rec.points,
            rec.generated,
            rec.states.len(),
            broken.len(),
            match partials[c].load(Ordering::Relaxed) {
                0 => String::new(),
                n => format!(", {n} partial discards with a whole export (accepted)"),
            }
        ));
    }
    tell(&format!(
        "{} states in {:.1}s",
        jobs.len(),
        started.elapsed().as_secs_f64()
    ));
    if violations.is_empty() {
        return;
    }
    if let Some(keep) = std::env::var_os("POWERLOSS_KEEP") {
        keep_states(Path::new(&keep), &recorded, &violations);
    }
    let mut classes: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for v in &violations {
        *classes.entry((v.case, v.check)).or_default() += 1;
    }
    let mut message = format!("{} violations:\n", violations.len());
    for ((case, check), n) in &classes {
        message.push_str(&format!("  {case}: {check} ×{n}\n"));
    }
    for v in violations.iter().take(MAX_LISTED) {
        message.push_str(&format!(
            "- {} at crash point {} (after {}): {} {}\n    state: {}\n",
            v.case, v.point, v.op, v.check, v.what, v.choice
        ));
    }
    if violations.len() > MAX_LISTED {
        message.push_str(&format!("… and {} more\n", violations.len() - MAX_LISTED));
    }
    panic!("{message}");
}

// ---- the digest ledger ------------------------------------------------------

/// A ledger written at 3 shards: re-sharded to 2, files 0 and 1 both get
/// digests and lose misplaced ones, and file 2 goes; file 0 ends torn,
/// file 1 with a duplicate and a line upstream ignores.
fn ledger_files() -> Files {
    let digest = |prefix: u32| format!("{prefix:08x}{}", "5e".repeat(28));
    let lines = |prefixes: &[u32]| -> Vec<u8> {
        prefixes
            .iter()
            .flat_map(|p| format!("{}\n", digest(*p)).into_bytes())
            .collect()
    };
    let mut zero = lines(&[0, 3, 6, 9]);
    zero.extend_from_slice(&digest(12).as_bytes()[..30]);
    let mut one = lines(&[1, 4, 7, 4]);
    one.extend_from_slice(b"junk\n");
    let mut files = Files::new();
    files.insert(".master-queue.lock".into(), Entry::File(Vec::new()));
    files.insert(".state_shards".into(), Entry::Dir);
    files.insert(".state_shards/processed.000.log".into(), Entry::File(zero));
    files.insert(".state_shards/processed.001.log".into(), Entry::File(one));
    files.insert(
        ".state_shards/processed.002.log".into(),
        Entry::File(lines(&[2, 5, 8, 11])),
    );
    files
}

/// The distinct valid digests the shard files of `root/.state_shards`
/// hold, read as upstream reads them at `count`.
fn ledger_digests(root: &Path, count: u32) -> BTreeSet<String> {
    let shards = root.join(".state_shards");
    let mut files: Vec<(u32, std::path::PathBuf)> = fs::read_dir(&shards)
        .map(|entries| {
            entries
                .filter_map(|e| {
                    let e = e.ok()?;
                    let index = ledger::index_of(&e.file_name().to_string_lossy())?;
                    (index < count && e.path().is_file()).then(|| (index, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut scan = ledger::LedgerScan::new(count, Vec::new());
    for (index, path) in files {
        scan.file(index, fs::File::open(path).expect("open a shard file"))
            .expect("read a shard file");
    }
    scan.set().iter().map(|d| d.to_string()).collect()
}

/// Every crash state of a ledger's re-shard and compaction: (a) every
/// digest any file held is still in some file; (d) a master started at
/// the new count from the crash state as it is loads at least what it
/// loaded before; (b) the same command run again exits 0 and leaves every
/// digest where the count reads it; (c) nothing panics.
#[test]
fn power_loss_at_any_crash_point_of_a_ledger_change_loses_no_digest() {
    if strace_available().is_err() {
        tell("strace cannot run here; the ledger's crash states are not checked");
        return;
    }
    let started = Instant::now();
    let mut violations = Vec::new();
    let mut checked = 0;
    for (name, args, count) in [
        (
            "ledger: repair --state-shards",
            &["repair", "--state-shards=2", "--apply"][..],
            2,
        ),
        ("ledger: compact", &["compact", "--apply"], u32::MAX),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = fs::canonicalize(dir.path()).expect("canonical root");
        let initial = ledger_files();
        let made = materialise(&initial);
        for entry in fs::read_dir(made.path()).unwrap() {
            let entry = entry.unwrap();
            let _ = fs::rename(entry.path(), root.join(entry.file_name()));
        }
        let initial = read_files(&root);
        let union = ledger_digests(&root, u32::MAX);
        let before_at_count = ledger_digests(&root, count);
        let traced = trace(name, &root, args, &root, &initial);
        assert_eq!(ledger_digests(&root, count), union, "{name}: the clean run");
        for (i, state) in traced.states.iter().enumerate() {
            checked += 1;
            let mut violation = |check: &str, what: String| {
                violations.push(format!(
                    "{name}, state {i} at crash point {} (after {}): {check} {what}\n    state: {}",
                    state.point, state.op, state.choice
                ));
            };
            let a = materialise(&state.files);
            let held = ledger_digests(a.path(), u32::MAX);
            if !held.is_superset(&union) {
                violation(
                    "(a) lost",
                    format!("{} digests in no file", union.difference(&held).count()),
                );
            }
            if !ledger_digests(a.path(), count).is_superset(&before_at_count) {
                violation(
                    "(d) resume",
                    "a master started now loads less than before".into(),
                );
            }
            if let Some((check, what)) = rerun_fails(args, a.path()) {
                violation(check, what);
            } else if ledger_digests(a.path(), count) != union {
                violation(
                    "(b) finish",
                    "after the rerun, the count does not load every digest".into(),
                );
            }
        }
        tell(&format!(
            "{name}: {} crash points, {} crash states, {} distinct ones checked",
            traced.points,
            traced.generated,
            traced.states.len()
        ));
    }
    tell(&format!(
        "{checked} ledger states in {:.1}s",
        started.elapsed().as_secs_f64()
    ));
    assert!(
        violations.is_empty(),
        "{} violations:\n{}",
        violations.len(),
        violations
            .iter()
            .take(MAX_LISTED)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Writes every crash state with a violation into `DIR/<command>-<index>/`,
/// with a `STATE` file saying what it is, for a closer look
/// (`POWERLOSS_KEEP=DIR`).
fn keep_states(dir: &Path, recorded: &[Recorded], violations: &[Violation]) {
    let mut kept = HashSet::new();
    for v in violations {
        let Some(rec) = recorded.iter().find(|r| r.case.name == v.case) else {
            continue;
        };
        if !kept.insert((v.case, v.state)) {
            continue;
        }
        let state = &rec.states[v.state];
        let name: String = v
            .case
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let target = dir.join(format!("{name}-{}", v.state));
        fs::create_dir_all(&target).expect("create the kept state's directory");
        for (file, entry) in &state.files {
            match entry {
                Entry::Dir => fs::create_dir_all(target.join(file)).expect("mkdir"),
                Entry::File(bytes) => fs::write(target.join(file), bytes).expect("write"),
            }
        }
        let what: Vec<String> = violations
            .iter()
            .filter(|w| w.case == v.case && w.state == v.state)
            .map(|w| format!("{} {}", w.check, w.what))
            .collect();
        fs::write(
            target.join("STATE"),
            format!(
                "{} at crash point {} (after {})\nstate: {}\n{}\n",
                v.case,
                v.point,
                v.op,
                v.choice,
                what.join("\n")
            ),
        )
        .expect("write STATE");
    }
    tell(&format!(
        "kept the states with violations in {}",
        dir.display()
    ));
}

/// A path or string as `strace -xx` prints it.
fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("\\x{b:02x}")).collect()
}

/// Replays trace lines into a model of `root` holding `j.jsonl` ("old\n"):
/// the model at the end and every crash state on the way.
fn replay_trace(root: &str, lines: &[String]) -> (Model, Vec<Files>) {
    let calls = parse_trace(&(lines.join("\n") + "\n")).unwrap();
    let initial = Files::from([("j.jsonl".to_string(), Entry::File(b"old\n".to_vec()))]);
    let mut model = Model::new(root, root, &initial);
    let mut states = Vec::new();
    for call in &calls {
        model.apply(call).unwrap();
        states.extend(model.crash_states().into_iter().map(|(_, files)| files));
    }
    (model, states)
}

/// The contents `name` has in the crash states that hold it.
fn contents(states: &[Files], name: &str) -> BTreeSet<Vec<u8>> {
    states
        .iter()
        .filter_map(|files| match files.get(name) {
            Some(Entry::File(bytes)) => Some(bytes.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_model_follows_an_o_tmpfile_publish_and_kernel_side_copies() {
    let root = "/powerloss/run";
    let at = |path: &str| format!("AT_FDCWD<{}>", hex(path));
    let desc = |n: u32, path: &str| format!("{n}<{}>", hex(path));
    let tmp = desc(5, &format!("{root}/#1234"));
    let journal = format!("{root}/j.jsonl");
    let lines = [
        format!(
            "7 openat({}, \"{}\", O_RDONLY|O_CLOEXEC) = {}",
            at(root),
            hex(&journal),
            desc(3, &journal)
        ),
        format!("7 fcntl({}, F_SETLEASE, F_RDLCK) = 0", desc(3, &journal)),
        format!(
            "7 read({}, \"{}\", 8192) = 4",
            desc(3, &journal),
            hex("old\n")
        ),
        format!(
            "7 openat({}, \"{}\", O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0644) = {}",
            at(root),
            hex(&format!("{root}/j.bak")),
            desc(4, &format!("{root}/j.bak"))
        ),
        format!("7 lseek({}, 1, SEEK_SET) = 1", desc(3, &journal)),
        format!(
            "7 copy_file_range({}, NULL, {}, NULL, 1073741824, 0) = 3",
            desc(3, &journal),
            desc(4, &format!("{root}/j.bak"))
        ),
        format!(
            "7 openat({}, \"{}\", O_RDWR|O_CLOEXEC|O_TMPFILE, 0644) = {tmp}(deleted)",
            at(root),
            hex(root)
        ),
        format!(
            "7 write({tmp}(deleted), \"{}\", 4 <unfinished ...>",
            hex("new\n")
        ),
        format!(
            "8 fcntl({}, F_GETFD) = 0x1 (flags FD_CLOEXEC)",
            desc(3, &journal)
        ),
        "7 <... write resumed>) = 4".to_string(),
        format!(
            "7 dup({tmp}(deleted)) = {}",
            desc(6, &format!("{root}/#1234"))
        ),
        format!("7 close({tmp}(deleted)) = 0"),
        format!(
            "7 fsync({}(deleted)) = 0",
            desc(6, &format!("{root}/#1234"))
        ),
        format!(
            "7 linkat({}, \"{}\", {}, \"{}\", AT_SYMLINK_FOLLOW) = 0",
            at(root),
            hex("/proc/self/fd/6"),
            at(root),
            hex(&format!("{root}/j.jsonl.tmp"))
        ),
        format!(
            "7 renameat2({}, \"{}\", {}, \"{}\", 0) = 0",
            at(root),
            hex(&format!("{root}/j.jsonl.tmp")),
            at(root),
            hex(&journal)
        ),
        "7 +++ exited with 0 +++".to_string(),
    ];
    let (model, states) = replay_trace(root, &lines);
    let journals = contents(&states, "j.jsonl");
    let temps = contents(&states, "j.jsonl.tmp");
    let backups = contents(&states, "j.bak");
    // The descriptor offset after the read and the lseek is 1: the copy
    // takes "ld\n".
    assert_eq!(
        model.live_files(),
        Files::from([
            ("j.bak".to_string(), Entry::File(b"ld\n".to_vec())),
            ("j.jsonl".to_string(), Entry::File(b"new\n".to_vec())),
        ])
    );
    // The temporary file was fsynced before it got a name: the journal is
    // the old or the new one, never a mix.
    assert_eq!(
        journals,
        BTreeSet::from([b"old\n".to_vec(), b"new\n".to_vec()])
    );
    assert_eq!(temps, BTreeSet::from([b"new\n".to_vec()]));
    // The unsynced backup: nothing, its size with zeros, a prefix, whole.
    assert!(backups.contains(b"".as_slice()));
    assert!(backups.contains(b"\0\0\0".as_slice()));
    assert!(backups.contains(b"l".as_slice()));
    assert!(backups.contains(b"l\0\0".as_slice()));
    assert!(backups.contains(b"ld\n".as_slice()));
}

#[test]
fn the_model_publishes_garbage_when_a_rename_does_not_wait_for_the_data() {
    // What the model is for: a temporary file renamed over the journal
    // before its data is fsynced may be published empty or as zeros.
    let root = "/powerloss/run";
    let tmp = format!("{root}/j.tmp");
    let journal = format!("{root}/j.jsonl");
    let at = format!("AT_FDCWD<{}>", hex(root));
    let lines = [
        format!(
            "7 openat({at}, \"{}\", O_WRONLY|O_CREAT|O_EXCL, 0644) = 3<{}>",
            hex(&tmp),
            hex(&tmp)
        ),
        format!("7 write(3<{}>, \"{}\", 4) = 4", hex(&tmp), hex("new\n")),
        format!("7 rename(\"{}\", \"{}\") = 0", hex(&tmp), hex(&journal)),
        format!(
            "7 openat({at}, \"{}\", O_RDONLY) = 4<{}>",
            hex(root),
            hex(root)
        ),
        format!("7 fsync(4<{}>) = 0", hex(root)),
    ];
    let (_, states) = replay_trace(root, &lines);
    let journals = contents(&states, "j.jsonl");
    assert!(journals.contains(b"".as_slice()), "{journals:?}");
    assert!(journals.contains(b"\0\0\0\0".as_slice()), "{journals:?}");
    assert!(journals.contains(b"ne".as_slice()), "{journals:?}");
}
