//! The digest ledger's directory, `.state_shards/`, as it is on disk: each
//! name in it, the shard index upstream's name gives it (or none: a
//! foreign name upstream never reads), and what is there (a file, a
//! directory, something else). Nothing is opened here but the directory;
//! the files are opened by whoever reads them, through `store::open`.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::engine::ledger::{self, Digest};
use crate::store::error::{InputError, in_words};
use crate::store::open::{self, dir_names};

/// What a name in the ledger's directory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file (or a link to one).
    File,
    /// A directory: upstream's `open` fails on it and skips the shard.
    Dir,
    /// A FIFO, a socket, a device or a dangling link.
    Other,
}

/// One name in the ledger's directory.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    /// The file name.
    pub name: String,
    /// The shard upstream's name gives it, when it is one of upstream's
    /// names (`processed.NNN.log`).
    pub index: Option<u32>,
    /// What is there.
    pub kind: EntryKind,
    /// Its size (files only).
    pub bytes: Option<u64>,
    /// The path.
    #[serde(skip)]
    pub path: PathBuf,
}

/// The ledger's directory.
#[derive(Clone, Debug)]
pub struct LedgerDir {
    /// The directory.
    pub path: PathBuf,
    /// The shard files (upstream's names), ascending by index.
    pub shards: Vec<Entry>,
    /// Every other name, sorted.
    pub foreign: Vec<Entry>,
}

impl LedgerDir {
    /// The highest shard index present.
    pub fn max_index(&self) -> Option<u32> {
        self.shards.iter().filter_map(|e| e.index).max()
    }

    /// The total size of the shard files.
    pub fn shard_bytes(&self) -> u64 {
        self.shards.iter().filter_map(|e| e.bytes).sum()
    }
}

/// Looks at a ledger directory, reading only its names and their metadata.
pub fn examine(dir: &Path) -> Result<LedgerDir, InputError> {
    let names = dir_names(dir).map_err(|e| InputError::io(dir, &e))?;
    let mut shards = Vec::new();
    let mut foreign = Vec::new();
    for file_name in names {
        let name = file_name.to_string_lossy().into_owned();
        let path = dir.join(&file_name);
        let entry = entry(&path, name)?;
        if entry.index.is_some() {
            shards.push(entry);
        } else {
            foreign.push(entry);
        }
    }
    shards.sort_by_key(|e| e.index);
    foreign.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(LedgerDir {
        path: dir.to_path_buf(),
        shards,
        foreign,
    })
}

/// One name, looked at the way upstream's `open` sees it (links followed).
fn entry(path: &Path, name: String) -> Result<Entry, InputError> {
    let index = ledger::index_of(&name);
    let (kind, bytes) = match fs::metadata(path) {
        Ok(meta) if meta.is_file() => (EntryKind::File, Some(meta.len())),
        Ok(meta) if meta.is_dir() => (EntryKind::Dir, None),
        Ok(_) => (EntryKind::Other, None),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => (EntryKind::Other, None),
        Err(err) => {
            return Err(InputError::new(
                path,
                format!("cannot be examined: {}", in_words(&err)),
            ));
        }
    };
    Ok(Entry {
        name,
        index,
        kind,
        bytes,
        path: path.to_path_buf(),
    })
}

/// The ledger's directory in a state directory `dir` (`.state_shards`),
/// examined, when there is one; something else under its name is none.
pub fn beside(dir: &Path) -> Result<Option<LedgerDir>, InputError> {
    let ledger_dir = dir.join(ledger::DIR);
    match fs::metadata(&ledger_dir) {
        Ok(meta) if meta.is_dir() => examine(&ledger_dir).map(Some),
        Ok(_) => Ok(None),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(InputError::new(
            &ledger_dir,
            format!("cannot be examined: {}", in_words(&err)),
        )),
    }
}

/// What stands at a state directory's `.state_shards` when it is there
/// and not a directory (links followed, as upstream's `os.path.isdir`
/// follows them): what it is. Upstream's ledger then cannot be made:
/// `durable_makedirs` raises `NotADirectoryError`.
pub fn blocker(dir: &Path) -> Option<&'static str> {
    let meta = fs::metadata(dir.join(ledger::DIR)).ok()?;
    match meta.file_type() {
        kind if kind.is_dir() => None,
        kind if kind.is_file() => Some("a regular file"),
        _ => Some(open::file_type_name(&meta)),
    }
}

/// A single ledger file given by path, as a directory of one shard; one
/// of upstream's names that is not there is the error (a path given is
/// never an absent shard).
pub fn single(path: &Path) -> Result<Option<LedgerDir>, InputError> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Ok(None);
    };
    if !ledger::owns_name(name) {
        return Ok(None);
    }
    fs::metadata(path).map_err(|e| InputError::io(path, &e))?;
    let entry = entry(path, name.to_string())?;
    Ok(Some(LedgerDir {
        path: path.parent().unwrap_or(Path::new("")).to_path_buf(),
        shards: vec![entry],
        foreign: Vec::new(),
    }))
}

/// Whether `path` is a symbolic link to nothing: upstream's `open(path,
/// "a")` creates the file it names, so such a shard loses nothing.
pub fn dangling(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
        && fs::metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// Whether a path names a ledger directory (`.state_shards`).
pub fn is_ledger_dir(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == ledger::DIR) && path.is_dir()
}

/// The SHA-256 of a file's content, as upstream's ledger records an input.
pub fn digest_of(path: &Path) -> Result<Digest, InputError> {
    let (mut file, _) = open::open_regular(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(InputError::new(
                    path,
                    format!("read error: {}", in_words(&e)),
                ));
            }
        }
    }
    Ok(Digest(hasher.finalize().into()))
}
