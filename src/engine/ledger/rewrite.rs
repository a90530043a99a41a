//! A ledger file rewritten: which of its lines stay, what is written, and
//! what a written file must read back as.
//!
//! Two ways to rewrite, each a pass that plans and a pass that writes:
//! - kept lines ([`Planner`], [`write_kept`]): the file's own bytes, line
//!   for line, less the valid lines whose digest a shard count files
//!   elsewhere ([`Keep::Shard`]: they move to that file), its end sealed
//!   (`engine::ledger::seal`), then digests moved in, each written as
//!   upstream's `add` writes it. Lines upstream ignores stay as they are:
//!   dropping them is compaction's business;
//! - compacted ([`write_compact`]): each distinct valid digest once, in
//!   the order first met, as `add` writes it; every other line goes.
//!
//! A written file is confirmed by reading it back ([`observe`]): its
//! valid digests in order ([`Sequence`]), its ignored lines and its end
//! must be what was planned.

use std::io::{self, Read, Write};

use sha2::{Digest as _, Sha256};

use super::line::{Judged, Line, Splitter};
use super::seal::Sealed;
use super::{Digest, DigestSet, TailKind};

/// How many bytes are read at a time.
const BLOCK: usize = 1 << 18;

/// The valid digests of a file in order, as a count and a SHA-256 over
/// them: what a written file is checked against.
#[derive(Clone, Debug, Default)]
pub struct Sequence {
    count: u64,
    hash: Sha256,
}

impl Sequence {
    /// No digest yet.
    pub fn new() -> Sequence {
        Sequence::default()
    }

    /// The next digest.
    pub fn push(&mut self, digest: &Digest) {
        self.count += 1;
        self.hash.update(digest.0);
    }

    /// How many digests so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The count and the hash of the digests so far.
    pub fn value(&self) -> (u64, [u8; 32]) {
        (self.count, self.hash.clone().finalize().into())
    }
}

/// Which valid lines a rewrite of kept lines keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Every line.
    All,
    /// The valid lines whose digest `count` shards file under `index`;
    /// the others move to their own shard's file.
    Shard {
        /// The shard count.
        count: u32,
        /// The file's shard index.
        index: u32,
    },
}

impl Keep {
    fn keeps(&self, digest: &Digest) -> bool {
        match *self {
            Keep::All => true,
            Keep::Shard { count, index } => digest.shard(count) == index,
        }
    }
}

/// One file's lines, planned for a rewrite of kept lines: fed the lines of
/// a [`Splitter`] in order, then finished with the file's seal.
#[derive(Debug)]
pub struct Planner {
    keep: Keep,
    /// The line before the current one: its offset, and whether it moves.
    pending: Option<(u64, bool)>,
    drops: Vec<(u64, u64)>,
    moved: Vec<Digest>,
    kept: Sequence,
    valid: u64,
}

/// What a rewrite of kept lines does to one file.
#[derive(Clone, Debug)]
pub struct KeptPlan {
    /// The byte ranges of the lines that move, ascending.
    pub drops: Vec<(u64, u64)>,
    /// The digests that move, in file order.
    pub moved: Vec<Digest>,
    /// Bytes of the file kept before the seal's newline.
    pub keep: u64,
    /// Whether a newline follows them (a digest's, now terminated).
    pub newline: bool,
    /// The valid digests the file keeps, in order.
    pub kept: Sequence,
    /// Valid lines (the restored digest among them, when there is one).
    pub valid: u64,
    /// Whether the last line moves.
    pub last_line_moves: bool,
}

impl KeptPlan {
    /// Whether the rewrite would write the file as it is.
    pub fn keeps_everything(&self, size: u64) -> bool {
        self.drops.is_empty() && self.keep == size && !self.newline
    }
}

impl Planner {
    /// A plan keeping what `keep` says.
    pub fn new(keep: Keep) -> Planner {
        Planner {
            keep,
            pending: None,
            drops: Vec::new(),
            moved: Vec::new(),
            kept: Sequence::new(),
            valid: 0,
        }
    }

    /// The next line of the file.
    #[inline]
    pub fn line(&mut self, line: &Line) {
        let moves = match line.judged {
            Judged::Valid(digest) => self.valid_line(digest),
            Judged::Ignored(_) => false,
        };
        self.end_pending(line.offset);
        self.pending = Some((line.offset, moves));
    }

    fn valid_line(&mut self, digest: Digest) -> bool {
        self.valid += 1;
        if self.keep.keeps(&digest) {
            self.kept.push(&digest);
            false
        } else {
            self.moved.push(digest);
            true
        }
    }

    fn end_pending(&mut self, end: u64) {
        if let Some((start, true)) = self.pending.take() {
            self.drops.push((start, end));
        }
    }

    /// The plan, for a file of `size` bytes sealed as `sealed`: a digest
    /// the seal restores is the last line's, and moves or stays as any.
    pub fn finish(mut self, size: u64, sealed: &Sealed) -> KeptPlan {
        let mut last_line_moves = self.pending.is_some_and(|(_, moves)| moves);
        if let Some(digest) = sealed.restored {
            last_line_moves = self.valid_line(digest);
            if let Some(pending) = &mut self.pending {
                pending.1 = last_line_moves;
            }
        }
        self.end_pending(size);
        KeptPlan {
            drops: self.drops,
            moved: self.moved,
            keep: sealed.seal.keep(size),
            newline: sealed.seal.newline() && !last_line_moves,
            kept: self.kept,
            valid: self.valid,
            last_line_moves,
        }
    }
}

/// Writes a rewrite of kept lines: `src`'s first `plan.keep` bytes less
/// `plan.drops`, the seal's newline, then `extra` digests, one a line.
pub fn write_kept(
    mut src: impl Read,
    plan: &KeptPlan,
    extra: &[Digest],
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut buffer = vec![0u8; BLOCK];
    let mut at = 0u64;
    let mut drops = plan.drops.iter().peekable();
    while at < plan.keep {
        let want = (plan.keep - at).min(BLOCK as u64) as usize;
        let n = match src.read(&mut buffer[..want]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file is shorter than when it was read",
                ));
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let (start, end) = (at, at + n as u64);
        let mut from = start;
        while from < end {
            while drops.next_if(|(_, e)| *e <= from).is_some() {}
            let (to, skip_to) = match drops.peek() {
                Some(&&(s, e)) if s < end => (s.max(from), e.min(end)),
                _ => (end, end),
            };
            let slice = |a: u64, b: u64| &buffer[(a - start) as usize..(b - start) as usize];
            out.write_all(slice(from, to))?;
            from = skip_to.max(to);
        }
        at = end;
    }
    if plan.newline {
        out.write_all(b"\n")?;
    }
    write_digests(extra.iter(), out)
}

/// Writes digests as upstream's `add` does, `digest + "\n"` each.
pub fn write_digests<'a>(
    digests: impl Iterator<Item = &'a Digest>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut line = [0u8; 65];
    line[64] = b'\n';
    for digest in digests {
        for (i, byte) in digest.0.iter().enumerate() {
            line[2 * i] = HEX[(byte >> 4) as usize];
            line[2 * i + 1] = HEX[(byte & 0x0f) as usize];
        }
        out.write_all(&line)?;
    }
    Ok(())
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// What a compaction of one file keeps: each distinct valid digest once,
/// in the order first met, and a digest the seal restores after them.
#[derive(Clone, Debug)]
pub struct Compacted {
    /// The digests written, in order.
    pub kept: Sequence,
}

/// Writes the compaction of `src` (sealed as `sealed`) to `out`.
pub fn write_compact(
    src: impl Read,
    sealed: &Sealed,
    out: &mut dyn Write,
) -> io::Result<Compacted> {
    let mut seen = DigestSet::new();
    let mut kept = Sequence::new();
    let mut failed = None;
    let mut write = |digest: Digest, kept: &mut Sequence| {
        if failed.is_none() && seen.insert(&digest) {
            kept.push(&digest);
            if let Err(e) = write_digests(std::iter::once(&digest), out) {
                failed = Some(e);
            }
        }
    };
    each_line(src, &mut |line| {
        if let Judged::Valid(digest) = line.judged {
            write(digest, &mut kept);
        }
    })?;
    if let Some(digest) = sealed.restored {
        write(digest, &mut kept);
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(Compacted { kept }),
    }
}

/// Feeds every line of `src` to `line`; returns how the file ends.
pub fn each_line(mut src: impl Read, line: &mut dyn FnMut(Line)) -> io::Result<TailKind> {
    let mut buffer = vec![0u8; BLOCK];
    let mut splitter = Splitter::new();
    loop {
        match src.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => splitter.feed(&buffer[..n], &mut |l| line(l)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let (tail, _) = splitter.finish(&mut |l| line(l));
    Ok(tail.kind)
}

/// A written ledger file as upstream reads it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// Its valid digests in order: count and hash.
    pub digests: (u64, [u8; 32]),
    /// Lines upstream ignores.
    pub ignored: u64,
    /// How it ends.
    pub tail: TailKind,
}

/// Reads a file back as upstream does.
pub fn observe(src: impl Read) -> io::Result<Observed> {
    let mut digests = Sequence::new();
    let mut ignored = 0;
    let tail = each_line(src, &mut |line| match line.judged {
        Judged::Valid(digest) => digests.push(&digest),
        Judged::Ignored(_) => ignored += 1,
    })?;
    Ok(Observed {
        digests: digests.value(),
        ignored,
        tail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ledger::seal::{self, LastLine};

    fn hex(prefix: u32, fill: char) -> String {
        format!("{prefix:08x}{}", fill.to_string().repeat(56))
    }

    /// Plans `text` with `keep` and writes it with `extra`.
    fn rewrite(text: &str, keep: Keep, extra: &[Digest]) -> (KeptPlan, String) {
        let bytes = text.as_bytes();
        let mut planner = Planner::new(keep);
        let mut last = LastLine::new();
        last.feed(bytes);
        let mut splitter = Splitter::new();
        splitter.feed(bytes, &mut |l| planner.line(&l));
        let (tail, _) = splitter.finish(&mut |l| planner.line(&l));
        let sealed = seal::plan(&tail, &last);
        let plan = planner.finish(bytes.len() as u64, &sealed);
        let mut out = Vec::new();
        write_kept(bytes, &plan, extra, &mut out).unwrap();
        (plan, String::from_utf8(out).unwrap())
    }

    #[test]
    fn kept_lines_stay_as_they_are_and_moved_ones_go() {
        // At 4 shards: prefixes 1 and 5 belong in file 1, 2 and 6 in 2.
        let (one, five, two, six) = (hex(1, 'a'), hex(5, 'b'), hex(2, 'c'), hex(6, 'd'));
        let text = format!("{one}\r\n{two}\n  XYZ\n{five}\n{six}");
        let (plan, out) = rewrite(&text, Keep::Shard { count: 4, index: 1 }, &[]);
        assert_eq!(out, format!("{one}\r\n  XYZ\n{five}\n"));
        assert_eq!(
            plan.moved,
            [Digest::parse(&two).unwrap(), Digest::parse(&six).unwrap()]
        );
        assert!(plan.last_line_moves && !plan.newline);
        assert_eq!(plan.valid, 4);
        // Keeping everything only seals, and digests moved in follow.
        let extra = [Digest::parse(&hex(9, 'e')).unwrap()];
        let (plan, out) = rewrite(&text, Keep::All, &extra);
        assert_eq!(out, format!("{text}\n{}\n", hex(9, 'e')));
        assert_eq!(plan.kept.count(), 4);
        let clean = format!("{one}\n");
        assert!(rewrite(&clean, Keep::All, &[]).0.keeps_everything(65));
    }

    #[test]
    fn a_torn_tail_is_cut_and_a_digest_before_nuls_restored() {
        let (one, two) = (hex(1, 'a'), hex(2, 'b'));
        let (plan, out) = rewrite(&format!("{one}\n{}", &two[..20]), Keep::All, &[]);
        assert_eq!(out, format!("{one}\n"));
        assert_eq!(plan.valid, 1);
        let (plan, out) = rewrite(&format!("{one}\n{two}\0\0\0"), Keep::All, &[]);
        assert_eq!(out, format!("{one}\n{two}\n"));
        assert_eq!(plan.kept.count(), 2);
        // Restored, and then moved: the line goes whole.
        let keep = Keep::Shard { count: 4, index: 1 };
        let (plan, out) = rewrite(&format!("{one}\n{two}\0\0\0"), keep, &[]);
        assert_eq!(out, format!("{one}\n"));
        assert_eq!(plan.moved, [Digest::parse(&two).unwrap()]);
    }

    #[test]
    fn a_compaction_keeps_each_valid_digest_once_and_reads_back_so() {
        let (one, two) = (hex(1, 'a'), hex(2, 'b'));
        let text = format!(
            "{one}\n\n{}\n{two} \r\n{one}\njunk\n{}",
            one.to_uppercase(),
            &two[..3]
        );
        let sealed = Sealed {
            seal: seal::TailSeal::None,
            restored: None,
        };
        let mut out = Vec::new();
        let compacted = write_compact(text.as_bytes(), &sealed, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            format!("{one}\n{two}\n")
        );
        let observed = observe(&out[..]).unwrap();
        assert_eq!(observed.digests, compacted.kept.value());
        assert_eq!((observed.ignored, observed.tail), (0, TailKind::Clean));
        let original = observe(text.as_bytes()).unwrap();
        assert_eq!((original.digests.0, original.ignored), (3, 4));
        assert_eq!(original.tail, TailKind::Torn);
    }
}
