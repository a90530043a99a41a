//! A ledger read file by file, as `load_recent(MAX_DEDUP_ENTRIES)` at a
//! given shard count reads it, with what it ignores and what it never
//! reads counted on the way.
//!
//! The files are fed in ascending index: those the count reads come
//! first, in upstream's order, so a digest's first line is the one
//! upstream loads it from and a digest first met in a file the count never
//! reads is one upstream never loads. Every file is streamed through one
//! buffer; memory grows only with the distinct digests.

use std::io::{self, Read};

use serde::Serialize;

use super::line::{Judged, Line, Reason, Splitter, Tail};
use super::{Digest, DigestSet, MAX_DEDUP_ENTRIES};

/// How many bytes are read at a time.
const BLOCK: usize = 1 << 18;

/// Lines ignored, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Reasons {
    /// Blank lines.
    pub blank: u64,
    /// Digests with uppercase hex digits.
    pub uppercase: u64,
    /// Hex digits, not 64 of them.
    pub wrong_length: u64,
    /// 64 characters, not all hex.
    pub non_hex: u64,
    /// Lines with NUL bytes.
    pub nul: u64,
    /// Anything else.
    pub other: u64,
}

impl Reasons {
    fn count(&mut self, reason: Reason) {
        *self.get_mut(reason) += 1;
    }

    fn get_mut(&mut self, reason: Reason) -> &mut u64 {
        match reason {
            Reason::Blank => &mut self.blank,
            Reason::Uppercase => &mut self.uppercase,
            Reason::WrongLength => &mut self.wrong_length,
            Reason::NonHex => &mut self.non_hex,
            Reason::Nul => &mut self.nul,
            Reason::Other => &mut self.other,
        }
    }

    /// The count of one reason.
    pub fn get(&self, reason: Reason) -> u64 {
        let mut copy = *self;
        *copy.get_mut(reason)
    }

    /// All ignored lines.
    pub fn total(&self) -> u64 {
        Reason::ALL.iter().map(|r| self.get(*r)).sum()
    }

    fn add(&mut self, other: &Reasons) {
        for reason in Reason::ALL {
            *self.get_mut(reason) += other.get(reason);
        }
    }
}

/// One ledger file, read.
#[derive(Clone, Debug, Serialize)]
pub struct FileScan {
    /// Its shard index.
    pub index: u32,
    /// Whether upstream reads it at the count (index below the count).
    pub read: bool,
    /// Its size.
    pub bytes: u64,
    /// Lines, as upstream counts them (an unterminated last line too).
    pub lines: u64,
    /// Lines upstream takes a digest from.
    pub valid: u64,
    /// Digests met here first (in this file, or earlier files, not before).
    pub new: u64,
    /// Valid lines whose digest came earlier, here or in an earlier file.
    pub duplicates: u64,
    /// Valid lines whose digest the count files under another shard, in
    /// a file the count reads: upstream loads them all the same (it never
    /// checks), and writes the digest to its own shard's file when it is
    /// added again. (A file the count never reads counts none: its digests
    /// are `Totals::unread`, not loaded at all.)
    pub misplaced: u64,
    /// Lines upstream ignores, by reason.
    pub ignored: Reasons,
    /// How the file ends.
    pub tail: Tail,
}

/// Where a digest asked for sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Site {
    /// The digest.
    pub digest: Digest,
    /// The file's shard index.
    pub index: u32,
    /// 1-based line.
    pub line: u64,
    /// Byte offset of the line.
    pub offset: u64,
}

/// The shard counts every valid digest of the files sits right for: `c`
/// fits when each digest of file `i` has `prefix % c == i`, that is when
/// `c > i` divides `prefix - i`. Kept as the gcd of those differences.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fit {
    /// The gcd of every `prefix - index` (0 while there are none).
    gcd: u64,
    /// A digest whose prefix is below its file's index: no count fits.
    none: bool,
    /// The highest index present.
    max_index: Option<u32>,
}

impl Fit {
    fn add(&mut self, index: u32, digest: &Digest) {
        match u64::from(digest.prefix()).checked_sub(u64::from(index)) {
            // A multiple of the gcd so far leaves it as it is.
            Some(diff) if self.gcd != 0 && diff % self.gcd == 0 => {}
            Some(diff) => self.gcd = gcd(self.gcd, diff),
            None => self.none = true,
        }
    }

    /// The counts up to `limit` that read every file and under which every
    /// digest sits in its own shard's file, ascending; `None` when no
    /// digest constrains them (every count above the highest index fits).
    pub fn counts(&self, limit: u32) -> Option<Vec<u32>> {
        let floor = self.max_index.map_or(1, |i| i.saturating_add(1));
        if self.none {
            return Some(Vec::new());
        }
        if self.gcd == 0 {
            return None;
        }
        let mut found = Vec::new();
        let mut d = 1u64;
        while d * d <= self.gcd {
            if self.gcd.is_multiple_of(d) {
                found.push(d);
                found.push(self.gcd / d);
            }
            d += 1;
        }
        found.sort_unstable();
        found.dedup();
        Some(
            found
                .into_iter()
                .filter_map(|c| u32::try_from(c).ok())
                .filter(|c| *c >= floor && *c <= limit)
                .collect(),
        )
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The whole ledger, read.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    /// Files read (every file fed, read at the count or not).
    pub files: u64,
    /// Lines.
    pub lines: u64,
    /// Valid lines.
    pub valid: u64,
    /// Distinct valid digests in every file.
    pub distinct: u64,
    /// How many distinct digests `load_recent(MAX_DEDUP_ENTRIES)` returns at
    /// the count.
    pub digests: u64,
    /// Distinct valid digests only in files the count never reads.
    pub unread: u64,
    /// Distinct digests in the files read beyond `MAX_DEDUP_ENTRIES`: upstream
    /// drops this many, which ones depends on its string hash seed.
    pub over_limit: u64,
    /// Valid lines repeating a digest.
    pub duplicates: u64,
    /// Valid lines in a file the count reads, which their shard at the
    /// count does not name.
    pub misplaced: u64,
    /// Ignored lines by reason.
    pub ignored: Reasons,
}

/// A ledger being read at a shard count.
#[derive(Debug)]
pub struct LedgerScan {
    count: u32,
    set: DigestSet,
    loaded: u64,
    queries: Vec<Digest>,
    sites: Vec<Site>,
    totals: Totals,
    fit: Fit,
    buffer: Vec<u8>,
    /// Valid digests of the file being read, not yet in the set: they go
    /// in a batch at a time (`DigestSet::insert_all`).
    pending: Vec<Digest>,
}

/// How many digests wait for the set at most.
const PENDING: usize = 8192;

impl LedgerScan {
    /// A scan at `count` shards (0 is taken as 1, as upstream does), that
    /// also notes every line holding one of `queries`.
    pub fn new(count: u32, queries: Vec<Digest>) -> LedgerScan {
        LedgerScan {
            count: count.max(1),
            set: DigestSet::new(),
            loaded: 0,
            queries,
            sites: Vec::new(),
            totals: Totals::default(),
            fit: Fit::default(),
            buffer: Vec::new(),
            pending: Vec::with_capacity(PENDING),
        }
    }

    /// The count the scan reads at.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Room for about `n` more distinct digests (from the files' sizes).
    pub fn reserve(&mut self, n: usize) {
        self.set.reserve(n);
    }

    /// Reads the file of shard `index` from `src`; files come in ascending
    /// index. An error is the reader's: what was read of the file counts.
    pub fn file(&mut self, index: u32, mut src: impl Read) -> io::Result<FileScan> {
        debug_assert!(self.fit.max_index.is_none_or(|m| m < index));
        self.fit.max_index = Some(index);
        let read = index < self.count;
        let mut scan = FileScan {
            index,
            read,
            bytes: 0,
            lines: 0,
            valid: 0,
            new: 0,
            duplicates: 0,
            misplaced: 0,
            ignored: Reasons::default(),
            tail: Tail {
                kind: super::TailKind::Clean,
                offset: 0,
                bytes: 0,
            },
        };
        let mut buffer = std::mem::take(&mut self.buffer);
        buffer.resize(BLOCK, 0);
        let mut splitter = Splitter::new();
        let result = (|| {
            loop {
                let n = match src.read(&mut buffer) {
                    Ok(0) => return Ok(()),
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                splitter.feed(&buffer[..n], &mut |line| self.line(&mut scan, line));
            }
        })();
        self.buffer = buffer;
        if result.is_err() {
            self.flush(&mut scan);
        }
        result?;
        let (tail, lines) = splitter.finish(&mut |line| self.line(&mut scan, line));
        self.flush(&mut scan);
        scan.tail = tail;
        scan.lines = lines;
        scan.bytes = tail.offset + tail.bytes;
        let totals = &mut self.totals;
        totals.files += 1;
        totals.lines += scan.lines;
        totals.valid += scan.valid;
        totals.duplicates += scan.duplicates;
        totals.misplaced += scan.misplaced;
        totals.ignored.add(&scan.ignored);
        Ok(scan)
    }

    #[inline]
    fn line(&mut self, scan: &mut FileScan, line: Line) {
        let digest = match line.judged {
            Judged::Valid(digest) => digest,
            Judged::Ignored(reason) => return scan.ignored.count(reason),
        };
        scan.valid += 1;
        self.fit.add(scan.index, &digest);
        if scan.read && digest.shard(self.count) != scan.index {
            scan.misplaced += 1;
        }
        if !self.queries.is_empty() && self.queries.contains(&digest) {
            self.sites.push(Site {
                digest,
                index: scan.index,
                line: line.number,
                offset: line.offset,
            });
        }
        self.pending.push(digest);
        if self.pending.len() == PENDING {
            self.flush(scan);
        }
    }

    /// Puts the pending digests in the set, counting the new ones.
    fn flush(&mut self, scan: &mut FileScan) {
        let pending = self.pending.len() as u64;
        let new = self.set.insert_all(&self.pending);
        self.pending.clear();
        scan.new += new;
        scan.duplicates += pending - new;
        if scan.read {
            self.loaded += new;
        } else {
            self.totals.unread += new;
        }
    }

    /// Whether upstream's reader at the count holds this digest (beyond
    /// `MAX_DEDUP_ENTRIES`, it may have dropped it: see `Totals::over_limit`).
    pub fn sites(&self) -> &[Site] {
        &self.sites
    }

    /// The fit of the files read to shard counts.
    pub fn fit(&self) -> Fit {
        self.fit
    }

    /// The distinct digests read, in every file.
    pub fn set(&self) -> &DigestSet {
        &self.set
    }

    /// The totals.
    pub fn totals(&self) -> Totals {
        let mut totals = self.totals.clone();
        totals.distinct = self.set.len() as u64;
        totals.digests = self.loaded.min(MAX_DEDUP_ENTRIES);
        totals.over_limit = self.loaded.saturating_sub(MAX_DEDUP_ENTRIES);
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(prefix: u32, fill: char) -> String {
        format!("{prefix:08x}{}", fill.to_string().repeat(56))
    }

    #[test]
    fn read_files_first_unread_after_and_the_counts_that_fit() {
        // Written with 4 shards: prefixes 5 and 9 in file 1, 6 in file 2.
        let (a, b, c) = (hex(5, 'a'), hex(9, 'b'), hex(6, 'c'));
        let mut scan = LedgerScan::new(2, vec![Digest::parse(&b).unwrap()]);
        let one = format!("{a}\n{b}\n{a}\nXYZ\n\n");
        let f1 = scan.file(1, one.as_bytes()).unwrap();
        assert_eq!(
            (f1.valid, f1.new, f1.duplicates, f1.misplaced),
            (3, 2, 1, 0)
        );
        assert_eq!((f1.ignored.other, f1.ignored.blank, f1.lines), (1, 1, 5));
        let f2 = scan.file(2, format!("{c}\n{a}").as_bytes()).unwrap();
        assert!(!f2.read);
        assert_eq!(f2.tail.kind, super::super::TailKind::MissingNewline);
        let totals = scan.totals();
        assert_eq!((totals.distinct, totals.digests, totals.unread), (3, 2, 1));
        assert_eq!(
            totals.misplaced, 0,
            "file 2 is not read at 2: unread, not misplaced"
        );
        assert_eq!(scan.fit().counts(64), Some(vec![]), "prefix 5 in file 2");
        assert_eq!(scan.sites().len(), 1);
        assert_eq!((scan.sites()[0].line, scan.sites()[0].offset), (2, 65));
    }

    #[test]
    fn no_digest_no_constraint() {
        let mut scan = LedgerScan::new(1, Vec::new());
        scan.file(3, &b"junk\n"[..]).unwrap();
        assert_eq!(scan.fit().counts(64), None);
        let mut scan = LedgerScan::new(8, Vec::new());
        scan.file(3, hex(1, 'a').as_bytes()).unwrap();
        assert_eq!(scan.fit().counts(64), Some(vec![]));
        let mut scan = LedgerScan::new(8, Vec::new());
        scan.file(1, format!("{}\n{}\n", hex(5, 'a'), hex(9, 'b')).as_bytes())
            .unwrap();
        scan.file(2, format!("{}\n", hex(6, 'c')).as_bytes())
            .unwrap();
        assert_eq!(scan.fit().counts(64), Some(vec![4]));
    }
}
