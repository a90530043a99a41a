//! A ledger file's lines as `load_recent` iterates them, and what it makes
//! of each.
//!
//! Upstream opens the file in text mode with `encoding="ascii",
//! errors="ignore"`: every byte above 0x7f is deleted first, then
//! universal newlines end a line at `\n`, `\r\n` or a bare `\r` (a `\r`,
//! deleted bytes, then `\n` is one `\r\n`). Each line is `strip()`ped of
//! Python's white space (in ASCII: tab, LF, VT, FF, CR, 0x1c–0x1f and
//! space) and kept when exactly 64 lowercase hex digits remain.
//!
//! The splitter streams: it holds no line, only what judging one needs
//! (its first 64 significant bytes and a few flags), so a file of one
//! endless line costs no memory. Plain ASCII blocks without `\r` take a
//! fast path that decodes a 64-byte line in place.

use memchr::memchr;
use serde::Serialize;

use super::Digest;

/// Why upstream ignores a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Nothing but white space (or deleted bytes).
    Blank,
    /// 64 hex digits, some uppercase: upstream rejects uppercase.
    Uppercase,
    /// Hex digits only, but not 64 of them: a torn digest, or two glued
    /// together when a torn line was appended to.
    WrongLength,
    /// 64 characters, not all hex digits.
    NonHex,
    /// Holds NUL bytes (a block the file system never wrote).
    Nul,
    /// Anything else.
    Other,
}

impl Reason {
    /// Every reason, in the order reports list them.
    pub const ALL: [Reason; 6] = [
        Reason::Blank,
        Reason::Uppercase,
        Reason::WrongLength,
        Reason::NonHex,
        Reason::Nul,
        Reason::Other,
    ];

    /// The reason's name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Blank => "blank",
            Reason::Uppercase => "uppercase",
            Reason::WrongLength => "wrong_length",
            Reason::NonHex => "non_hex",
            Reason::Nul => "nul",
            Reason::Other => "other",
        }
    }
}

/// What upstream makes of one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// A digest it loads.
    Valid(Digest),
    /// A line it ignores.
    Ignored(Reason),
}

/// One line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line {
    /// 1-based, as upstream counts them.
    pub number: u64,
    /// Byte offset of its first byte in the file.
    pub offset: u64,
    /// What upstream makes of it.
    pub judged: Judged,
}

/// How a file ends, which decides what the next append of upstream's
/// `add` (which writes `digest + "\n"` at the end, never ending a torn line
/// first) does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TailKind {
    /// Empty, or the last line ended (white space or deleted bytes after
    /// it are harmless: the next digest is read through them).
    Clean,
    /// The last line is a digest without its newline: loaded now, but the
    /// next append glues onto it and both are lost.
    MissingNewline,
    /// The last line is torn text: the next append glues onto it and that
    /// digest is lost.
    Torn,
    /// The last line is NUL bytes (space allocated, never written): the
    /// next append glues onto them and that digest is lost.
    Nul,
}

/// The end of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Tail {
    /// What it is.
    pub kind: TailKind,
    /// Offset of the unterminated last line (the file size when clean).
    pub offset: u64,
    /// Its bytes (0 when clean).
    pub bytes: u64,
}

/// Python's `str.isspace()` for an ASCII character.
fn is_space(byte: u8) -> bool {
    matches!(byte, b'\t'..=b'\r' | 0x1c..=0x20)
}

/// What judging a line needs, gathered byte by byte.
#[derive(Clone, Debug)]
struct Pending {
    /// Whether any byte of the line has been seen (deleted ones excluded).
    seen: bool,
    /// Length of the stripped line so far (without trailing white space).
    core: u64,
    /// White space after the last significant byte.
    spaces: u64,
    /// The first 64 bytes of the stripped line.
    head: [u8; 64],
    nul: bool,
    only_nul: bool,
    non_hex: bool,
    upper: bool,
}

impl Default for Pending {
    fn default() -> Self {
        Pending {
            seen: false,
            core: 0,
            spaces: 0,
            head: [0; 64],
            nul: false,
            only_nul: true,
            non_hex: false,
            upper: false,
        }
    }
}

impl Pending {
    fn push(&mut self, byte: u8) {
        self.seen = true;
        if is_space(byte) {
            if self.core > 0 {
                self.spaces += 1;
            }
            return;
        }
        if self.spaces > 0 {
            // White space inside the stripped line.
            self.core += self.spaces;
            self.spaces = 0;
            self.non_hex = true;
            self.only_nul = false;
        }
        if self.core < 64 {
            self.head[self.core as usize] = byte;
        }
        self.core += 1;
        match byte {
            b'0'..=b'9' | b'a'..=b'f' => self.only_nul = false,
            b'A'..=b'F' => (self.upper, self.only_nul) = (true, false),
            0 => (self.nul, self.non_hex) = (true, true),
            _ => (self.non_hex, self.only_nul) = (true, false),
        }
    }

    fn judge(&self) -> Judged {
        if self.core == 0 {
            Judged::Ignored(Reason::Blank)
        } else if self.nul {
            Judged::Ignored(Reason::Nul)
        } else if self.non_hex {
            Judged::Ignored(if self.core == 64 {
                Reason::NonHex
            } else {
                Reason::Other
            })
        } else if self.core != 64 {
            Judged::Ignored(Reason::WrongLength)
        } else if self.upper {
            Judged::Ignored(Reason::Uppercase)
        } else {
            Digest::from_lower_hex(&self.head).map_or(Judged::Ignored(Reason::Other), Judged::Valid)
        }
    }
}

/// Splits a file fed in blocks of any size into upstream's lines.
#[derive(Clone, Debug, Default)]
pub struct Splitter {
    pending: Pending,
    /// The previous byte kept was a `\r` that ended a line: a `\n` next
    /// belongs to it.
    after_cr: bool,
    /// Lines ended so far.
    lines: u64,
    /// Offset of the next byte fed.
    offset: u64,
    /// Offset of the line being read.
    start: u64,
}

impl Splitter {
    /// A splitter at the start of a file.
    pub fn new() -> Splitter {
        Splitter::default()
    }

    /// Bytes fed so far.
    pub fn bytes(&self) -> u64 {
        self.offset
    }

    /// Feeds the next bytes of the file; `line` is called for every line
    /// they end.
    #[inline]
    pub fn feed(&mut self, block: &[u8], line: &mut impl FnMut(Line)) {
        if self.after_cr || memchr(b'\r', block).is_some() || !block.is_ascii() {
            self.feed_general(block, line);
        } else {
            self.feed_plain(block, line);
        }
    }

    /// ASCII without `\r`: lines end at `\n` only.
    fn feed_plain(&mut self, block: &[u8], line: &mut impl FnMut(Line)) {
        let mut at = 0;
        loop {
            // A digest and its newline, the line almost every line is: no
            // search for the newline. (64 hex digits hold no newline, so
            // the one after them ends the line.)
            if !self.pending.seen
                && let Some(text) = block.get(at..at + 65)
                && text[64] == b'\n'
                && let Some(digest) = Digest::from_lower_hex(&text[..64])
            {
                self.end_line(Judged::Valid(digest), line);
                at += 65;
                self.start = self.offset + at as u64;
                continue;
            }
            let Some(end) = memchr(b'\n', &block[at..]) else {
                break;
            };
            let text = &block[at..at + end];
            let judged = match Digest::from_lower_hex(text) {
                Some(digest) if !self.pending.seen => Judged::Valid(digest),
                _ => {
                    text.iter().for_each(|&b| self.pending.push(b));
                    self.pending.judge()
                }
            };
            self.end_line(judged, line);
            at += end + 1;
            self.start = self.offset + at as u64;
        }
        block[at..].iter().for_each(|&b| self.pending.push(b));
        self.offset += block.len() as u64;
    }

    /// Any bytes: deletions, `\r` and `\r\n` as well.
    fn feed_general(&mut self, block: &[u8], line: &mut impl FnMut(Line)) {
        for (i, &byte) in block.iter().enumerate() {
            let next = self.offset + i as u64 + 1;
            match byte {
                0x80.. => continue,
                b'\n' if self.after_cr => self.start = next,
                b'\n' | b'\r' => {
                    let judged = self.pending.judge();
                    self.end_line(judged, line);
                    self.start = next;
                }
                _ => self.pending.push(byte),
            }
            self.after_cr = byte == b'\r';
        }
        self.offset += block.len() as u64;
    }

    fn end_line(&mut self, judged: Judged, line: &mut impl FnMut(Line)) {
        self.lines += 1;
        line(Line {
            number: self.lines,
            offset: self.start,
            judged,
        });
        if self.pending.seen {
            self.pending = Pending::default();
        }
    }

    /// The end of the file: the unterminated last line, if any, is a line
    /// upstream reads too; returns how the file ends and how many lines
    /// it has.
    pub fn finish(mut self, line: &mut impl FnMut(Line)) -> (Tail, u64) {
        let size = self.offset;
        if !self.pending.seen {
            let tail = Tail {
                kind: TailKind::Clean,
                offset: size,
                bytes: 0,
            };
            return (tail, self.lines);
        }
        let judged = self.pending.judge();
        let kind = match judged {
            Judged::Valid(_) => TailKind::MissingNewline,
            Judged::Ignored(Reason::Blank) => TailKind::Clean,
            Judged::Ignored(_) if self.pending.only_nul => TailKind::Nul,
            Judged::Ignored(_) => TailKind::Torn,
        };
        let start = self.start;
        self.end_line(judged, line);
        let tail = Tail {
            kind,
            offset: start,
            bytes: size - start,
        };
        (tail, self.lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: &[u8], block: usize) -> (Vec<(u64, u64, Judged)>, Tail) {
        let mut out = Vec::new();
        let mut splitter = Splitter::new();
        let mut push = |l: Line| out.push((l.number, l.offset, l.judged));
        for chunk in bytes.chunks(block.max(1)) {
            splitter.feed(chunk, &mut push);
        }
        let (tail, _) = splitter.finish(&mut push);
        (out, tail)
    }

    fn digest(c: char) -> String {
        c.to_string().repeat(64)
    }

    #[test]
    fn python_splits_and_strips_as_modelled() {
        let a = digest('a');
        let d = Digest::from_lower_hex(a.as_bytes()).unwrap();
        let text = format!(
            "{a}\n {a}\t\r\n\x1c{a}\x0b\r{a}\r\u{e9}\n{}\n{a}{a}\n\n{}\n{a}\0\nxyz\n{a}",
            a.to_uppercase(),
            "g".repeat(64)
        );
        for block in [1, 2, 3, 7, 64, 65, 4096] {
            let (got, tail) = lines(text.as_bytes(), block);
            let kinds: Vec<Judged> = got.iter().map(|l| l.2).collect();
            use Judged::*;
            assert_eq!(
                kinds,
                [
                    Valid(d),
                    Valid(d),
                    Valid(d),
                    Valid(d),
                    Ignored(Reason::Uppercase),
                    Ignored(Reason::WrongLength),
                    Ignored(Reason::Blank),
                    Ignored(Reason::NonHex),
                    Ignored(Reason::Nul),
                    Ignored(Reason::Other),
                    Valid(d),
                ],
                "block {block}"
            );
            assert_eq!(got[1].1, 65, "block {block}");
            assert_eq!(tail.kind, TailKind::MissingNewline);
        }
    }

    #[test]
    fn tails_say_what_the_next_append_does() {
        let a = digest('b');
        let tail = |text: &[u8]| lines(text, 5).1.kind;
        assert_eq!(tail(b""), TailKind::Clean);
        assert_eq!(tail(format!("{a}\n").as_bytes()), TailKind::Clean);
        assert_eq!(
            tail(&[format!("{a}\n  ").as_bytes(), b"\x80"].concat()),
            TailKind::Clean
        );
        assert_eq!(tail(format!("{a}\r").as_bytes()), TailKind::Clean);
        assert_eq!(
            tail(format!("{a}\n{}", &a[..10]).as_bytes()),
            TailKind::Torn
        );
        assert_eq!(tail(format!("{a}\n\0\0\0").as_bytes()), TailKind::Nul);
        let (_, t) = lines(format!("{a}\n\0\0\0").as_bytes(), 3);
        assert_eq!((t.offset, t.bytes), (65, 3));
    }
}
