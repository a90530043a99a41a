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
    /// What is wrong, in words.
    pub problem: String,
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
            problem: problem.into(),
        }
    }

    /// An I/O error for `path`, in words an operator recognises.
    pub fn io(path: &Path, err: &io::Error) -> Self {
        let problem = match err.kind() {
            io::ErrorKind::NotFound => {
                if fs::symlink_metadata(path).is_ok() {
                    "dangling symbolic link".to_string()
                } else {
                    "no such file or directory".to_string()
                }
            }
            io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            _ => format!("cannot read: {}", in_words(err)),
        };
        InputError::new(path, problem)
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
