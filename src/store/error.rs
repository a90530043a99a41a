//! Why an input cannot be read ([`InputError`], naming the file), and an
//! I/O error in the words an operator reads ([`in_words`]); the writing
//! side's errors are `store::durable::WriteError`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Why an input cannot be read. Every message names the path.
#[derive(Debug)]
pub struct InputError {
    /// The path as given.
    pub path: PathBuf,
    /// What is wrong.
    pub problem: Problem,
}

/// What is wrong with an input: the ways opening it fails, told apart, and
/// everything else a reader found, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Nothing is there.
    NotFound,
    /// A symbolic link to nothing.
    DanglingLink,
    /// Not allowed to read it.
    PermissionDenied,
    /// Another I/O error, in words.
    Unreadable(String),
    /// What the reader found wrong, in words ("is a FIFO, not a regular
    /// file", "neither a lease journal nor a state snapshot …").
    Other(String),
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::NotFound => f.write_str("no such file or directory"),
            Problem::DanglingLink => f.write_str("dangling symbolic link"),
            Problem::PermissionDenied => f.write_str("permission denied"),
            Problem::Unreadable(words) => write!(f, "cannot read: {words}"),
            Problem::Other(words) => f.write_str(words),
        }
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

impl std::error::Error for InputError {}

impl InputError {
    /// An error for `path`.
    pub fn new(path: &Path, problem: impl Into<String>) -> Self {
        InputError {
            path: path.to_path_buf(),
            problem: Problem::Other(problem.into()),
        }
    }

    /// An I/O error for `path`, in words an operator recognises.
    pub fn io(path: &Path, err: &io::Error) -> Self {
        let problem = match err.kind() {
            io::ErrorKind::NotFound if fs::symlink_metadata(path).is_ok() => Problem::DanglingLink,
            io::ErrorKind::NotFound => Problem::NotFound,
            io::ErrorKind::PermissionDenied => Problem::PermissionDenied,
            _ => Problem::Unreadable(in_words(err)),
        };
        InputError {
            path: path.to_path_buf(),
            problem,
        }
    }
}

/// An I/O error as words, without the raw `(os error N)` the standard
/// library appends: "no space left on device".
pub fn in_words(err: &io::Error) -> String {
    let text = err.to_string();
    let text = match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => &text[..at],
        _ => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text.to_string(),
    }
}

/// A path a command over several paths could not read, as its report
/// lists it.
#[derive(Debug, serde::Serialize)]
pub struct PathError {
    /// The path, as given.
    pub path: String,
    /// What went wrong.
    pub message: String,
}
