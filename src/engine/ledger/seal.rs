//! The end of a ledger file made safe for upstream's next `add`, which
//! appends `digest + "\n"` at the end and never ends a torn last line
//! first: whatever unterminated line the file ends with glues onto that
//! digest, and the line they make is one `load_recent` ignores.
//!
//! Sealing loses nothing upstream loads:
//! - a digest without its newline (loaded now) gets the newline;
//! - a torn fragment or a run of NULs (ignored now, and a partial digest
//!   can never be completed) is cut off; the backup keeps its bytes;
//! - a digest followed by NULs (a power loss that persisted the file's new
//!   size before the newline's page: ignored now, since `strip()` keeps
//!   NULs) loses only the NULs and gets its newline, so upstream loads the
//!   digest that was dispatched. It is the one case where a seal makes
//!   upstream load more than before ([`Sealed::restored`]).
//!
//! [`LastLine`] keeps, while a file is read, the bytes of its last line
//! with a trailing run of NULs held back (at most [`LAST_LINE_CAP`] of
//! them: a longer line cannot be a digest); [`plan`] decides from it and
//! the reader's [`Tail`].

use memchr::memrchr2;
use serde::Serialize;

use super::line::{Judged, Splitter};
use super::{Digest, Tail, TailKind};

/// The most bytes of a last line (before its trailing NULs) that are kept
/// to be judged: white space may surround a digest, nothing else.
pub const LAST_LINE_CAP: usize = 4096;

/// What happens to the end of a ledger file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum TailSeal {
    /// Nothing: it ends with a line terminator (or is empty).
    None,
    /// The torn last line is cut off: nothing upstream loads is in it.
    Cut {
        /// Where the cut starts (the last line's offset).
        offset: u64,
        /// Bytes removed.
        bytes: u64,
        /// Of those, NUL bytes.
        nul_bytes: u64,
    },
    /// The last line is a digest: it gets its newline here, after the NULs
    /// behind it (if any) are cut.
    Terminate {
        /// Where the newline goes (the NULs, when there are any, start here).
        offset: u64,
        /// NUL bytes cut before the newline.
        nul_bytes: u64,
    },
}

impl TailSeal {
    /// How many bytes of a file of `size` bytes the sealed file keeps
    /// before its newline, if it gets one.
    pub fn keep(&self, size: u64) -> u64 {
        match *self {
            TailSeal::None => size,
            TailSeal::Cut { offset, .. } | TailSeal::Terminate { offset, .. } => offset,
        }
    }

    /// Whether the sealed file gets a newline after what it keeps.
    pub fn newline(&self) -> bool {
        matches!(self, TailSeal::Terminate { .. })
    }
}

/// The seal of a file, and the digest it makes upstream load that it did
/// not before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sealed {
    /// What happens to the end.
    pub seal: TailSeal,
    /// A digest that NULs behind it hid from upstream, loaded once they
    /// are cut.
    pub restored: Option<Digest>,
}

/// The last line of a file, kept as the file is read.
#[derive(Clone, Debug, Default)]
pub struct LastLine {
    /// Its bytes before the trailing NUL run (unless `overflow`).
    bytes: Vec<u8>,
    /// The NULs at its end so far.
    trailing_nuls: u64,
    /// NULs anywhere in it.
    nuls: u64,
    /// More than [`LAST_LINE_CAP`] bytes before the trailing NULs.
    overflow: bool,
}

impl LastLine {
    /// Nothing read yet.
    pub fn new() -> LastLine {
        LastLine::default()
    }

    /// The next bytes of the file.
    pub fn feed(&mut self, block: &[u8]) {
        let rest = match memrchr2(b'\n', b'\r', block) {
            Some(at) => {
                *self = LastLine::default();
                &block[at + 1..]
            }
            None => block,
        };
        let nuls = rest.iter().filter(|&&b| b == 0).count() as u64;
        self.nuls += nuls;
        match rest.iter().rposition(|&b| b != 0) {
            None => self.trailing_nuls += rest.len() as u64,
            Some(last) => {
                let held = self.trailing_nuls as usize;
                if self.overflow || self.bytes.len() + held + last + 1 > LAST_LINE_CAP {
                    self.overflow = true;
                    self.bytes = Vec::new();
                } else {
                    self.bytes.resize(self.bytes.len() + held, 0);
                    self.bytes.extend_from_slice(&rest[..=last]);
                }
                self.trailing_nuls = (rest.len() - last - 1) as u64;
            }
        }
    }

    /// What upstream would make of the line without its trailing NULs.
    fn without_trailing_nuls(&self) -> Option<Digest> {
        if self.overflow || self.trailing_nuls == 0 {
            return None;
        }
        let mut splitter = Splitter::new();
        let mut judged = None;
        splitter.feed(&self.bytes, &mut |line| judged = Some(line.judged));
        splitter.finish(&mut |line| judged = Some(line.judged));
        match judged {
            Some(Judged::Valid(digest)) => Some(digest),
            _ => None,
        }
    }
}

/// The seal of a file whose reader ended with `tail` and whose last line
/// is `last`.
pub fn plan(tail: &Tail, last: &LastLine) -> Sealed {
    let end = tail.offset + tail.bytes;
    let seal = match tail.kind {
        TailKind::Clean => TailSeal::None,
        TailKind::MissingNewline => TailSeal::Terminate {
            offset: end,
            nul_bytes: 0,
        },
        TailKind::Torn | TailKind::Nul => {
            if let Some(digest) = last.without_trailing_nuls() {
                return Sealed {
                    seal: TailSeal::Terminate {
                        offset: end - last.trailing_nuls,
                        nul_bytes: last.trailing_nuls,
                    },
                    restored: Some(digest),
                };
            }
            TailSeal::Cut {
                offset: tail.offset,
                bytes: tail.bytes,
                nul_bytes: last.nuls,
            }
        }
    };
    Sealed {
        seal,
        restored: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ledger::line::Splitter;

    /// The seal of `bytes` read in blocks of `block`, as a scan reads them.
    fn sealed(bytes: &[u8], block: usize) -> Sealed {
        let mut splitter = Splitter::new();
        let mut last = LastLine::new();
        for chunk in bytes.chunks(block.max(1)) {
            splitter.feed(chunk, &mut |_| {});
            last.feed(chunk);
        }
        let (tail, _) = splitter.finish(&mut |_| {});
        plan(&tail, &last)
    }

    fn digest(c: char) -> String {
        c.to_string().repeat(64)
    }

    #[test]
    fn each_end_is_sealed_so_that_nothing_upstream_loads_is_lost() {
        let a = digest('a');
        let d = Digest::parse(&a).unwrap();
        let n = a.len() as u64 + 1;
        for block in [1, 3, 64, 4096] {
            let seal = |text: &[u8]| sealed(text, block);
            let clean = Sealed {
                seal: TailSeal::None,
                restored: None,
            };
            assert_eq!(seal(b""), clean);
            assert_eq!(seal(format!("{a}\n").as_bytes()), clean);
            assert_eq!(seal(format!("{a}\r").as_bytes()), clean, "a CR ends a line");
            assert_eq!(seal(format!("{a}\n  ").as_bytes()), clean);
            assert_eq!(
                seal(format!("{a}\n{a}").as_bytes()).seal,
                TailSeal::Terminate {
                    offset: 2 * n - 1,
                    nul_bytes: 0
                }
            );
            assert_eq!(
                seal(format!("{a}\n{}", &a[..9]).as_bytes()).seal,
                TailSeal::Cut {
                    offset: n,
                    bytes: 9,
                    nul_bytes: 0
                }
            );
            assert_eq!(
                seal(format!("{a}\n\0\0\0").as_bytes()).seal,
                TailSeal::Cut {
                    offset: n,
                    bytes: 3,
                    nul_bytes: 3
                }
            );
            // A digest a power loss left before its newline's page.
            let restored = seal(format!("{a}\n {a}\0\0\0\0").as_bytes());
            assert_eq!(
                restored,
                Sealed {
                    seal: TailSeal::Terminate {
                        offset: 2 * n,
                        nul_bytes: 4
                    },
                    restored: Some(d),
                },
                "block {block}"
            );
            // A torn digest before NULs, and NULs inside a digest.
            let torn = seal(format!("{a}\n{}\0\0", &a[..30]).as_bytes());
            assert_eq!((torn.seal.keep(0), torn.restored), (n, None));
            let inside = seal(format!("{a}\n{}\0{}\0\0", &a[..30], &a[31..]).as_bytes());
            assert_eq!((inside.seal.keep(0), inside.restored), (n, None));
        }
    }

    #[test]
    fn a_long_last_line_is_never_a_digest() {
        let long = format!("{}\0\0", "x".repeat(LAST_LINE_CAP + 10));
        let s = sealed(long.as_bytes(), 100);
        assert!(matches!(s.seal, TailSeal::Cut { offset: 0, .. }));
        assert_eq!(s.restored, None);
        // Many NULs behind a digest are all held back, however many.
        let many = format!("{}{}", digest('b'), "\0".repeat(3 * LAST_LINE_CAP));
        let s = sealed(many.as_bytes(), 1000);
        assert_eq!(s.restored, Digest::parse(&digest('b')));
        assert_eq!(
            s.seal,
            TailSeal::Terminate {
                offset: 64,
                nul_bytes: 3 * LAST_LINE_CAP as u64
            }
        );
    }
}
