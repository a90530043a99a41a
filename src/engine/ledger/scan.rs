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
    /// The gcd of every `prefix - index`, as a fast divisor; `None` while
    /// it is 0 (no differences yet, or only differences of 0, which every
    /// count divides).
    gcd: Option<Divisor>,
    /// A digest whose prefix is below its file's index: no count fits.
    none: bool,
    /// The highest index present.
    max_index: Option<u32>,
}

impl Fit {
    #[inline]
    fn add(&mut self, index: u32, digest: &Digest) {
        match digest.prefix().checked_sub(index) {
            // A multiple of the gcd so far leaves it as it is.
            Some(diff) if self.gcd.is_some_and(|d| d.divides(diff)) => {}
            Some(diff) => {
                let gcd = gcd(self.gcd.map_or(0, |d| d.d), diff);
                self.gcd = (gcd != 0).then(|| Divisor::new(gcd));
            }
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
        let gcd = u64::from(self.gcd?.d);
        let mut found = Vec::new();
        let mut d = 1u64;
        while d * d <= gcd {
            if gcd.is_multiple_of(d) {
                found.push(d);
                found.push(gcd / d);
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

/// Division by a fixed 32-bit number without a division instruction, which
/// costs more than the rest of judging a line (Lemire, Kaser and Kurz,
/// "Faster remainder by direct computation", 2019).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Divisor {
    d: u32,
    /// `ceil(2^64 / d)`.
    m: u64,
}

impl Divisor {
    /// A divisor of `d`, which is not 0.
    fn new(d: u32) -> Divisor {
        debug_assert!(d != 0);
        Divisor {
            d,
            m: (u64::MAX / u64::from(d)).wrapping_add(1),
        }
    }

    /// `n % d`.
    #[inline]
    fn remainder(self, n: u32) -> u32 {
        let low = self.m.wrapping_mul(u64::from(n));
        ((u128::from(low) * u128::from(self.d)) >> 64) as u32
    }

    /// Whether `d` divides `n`.
    #[inline]
    fn divides(self, n: u32) -> bool {
        // For d = 1, m wraps to 0 and every n passes, as it should.
        self.m.wrapping_mul(u64::from(n)) <= self.m.wrapping_sub(1)
    }
}

fn gcd(mut a: u32, mut b: u32) -> u32 {
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
    parser: Parser,
    set: DigestSet,
    loaded: u64,
    totals: Totals,
    buffer: Vec<u8>,
}

/// What reading lines needs besides the set: the scan's parts that the
/// thread parsing a file holds while another fills the set.
#[derive(Debug)]
struct Parser {
    count: u32,
    /// `count` as a fast divisor.
    shards: Divisor,
    queries: Vec<Digest>,
    sites: Vec<Site>,
    fit: Fit,
    /// Valid digests of the file being read, not yet in the set: they go
    /// in a batch at a time (`DigestSet::insert_all`).
    pending: Vec<Digest>,
}

/// How many digests wait for the set at most.
const PENDING: usize = 8192;

/// Where full batches of digests go.
trait Sink {
    /// Takes the batch; `batch` is left empty, ready for more.
    fn take(&mut self, batch: &mut Vec<Digest>);
}

/// Batches go straight into the set, on this thread.
struct Inline<'a> {
    set: &'a mut DigestSet,
    new: u64,
}

impl Sink for Inline<'_> {
    fn take(&mut self, batch: &mut Vec<Digest>) {
        self.new += self.set.insert_all(batch);
        batch.clear();
    }
}

/// Batches go to the thread filling the set, which sends their vectors
/// back to be filled again.
struct Handoff {
    to: std::sync::mpsc::SyncSender<Vec<Digest>>,
    back: std::sync::mpsc::Receiver<Vec<Digest>>,
}

impl Sink for Handoff {
    fn take(&mut self, batch: &mut Vec<Digest>) {
        let empty = self
            .back
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(PENDING));
        // The filling thread only stops once this side hangs up, unless it
        // panicked: then the scope re-raises its panic when it ends.
        let _ = self.to.send(std::mem::replace(batch, empty));
    }
}

/// How many full batches wait for the filling thread at most.
const QUEUED: usize = 4;

impl LedgerScan {
    /// A scan at `count` shards (0 is taken as 1, as upstream does), that
    /// also notes every line holding one of `queries`.
    pub fn new(count: u32, queries: Vec<Digest>) -> LedgerScan {
        LedgerScan {
            parser: Parser {
                count: count.max(1),
                shards: Divisor::new(count.max(1)),
                queries,
                sites: Vec::new(),
                fit: Fit::default(),
                pending: Vec::with_capacity(PENDING),
            },
            set: DigestSet::new(),
            loaded: 0,
            totals: Totals::default(),
            buffer: Vec::new(),
        }
    }

    /// The count the scan reads at.
    pub fn count(&self) -> u32 {
        self.parser.count
    }

    /// Room for about `n` more distinct digests (from the files' sizes).
    pub fn reserve(&mut self, n: usize) {
        self.set.reserve(n);
    }

    /// Reads the file of shard `index` from `src`; files come in ascending
    /// index. An error is the reader's: what was read of the file counts.
    ///
    /// A file larger than one read is parsed on this thread while another
    /// puts its digests in the set, a batch behind.
    pub fn file(&mut self, index: u32, mut src: impl Read) -> io::Result<FileScan> {
        let parser = &mut self.parser;
        debug_assert!(parser.fit.max_index.is_none_or(|m| m < index));
        parser.fit.max_index = Some(index);
        let mut scan = FileScan {
            index,
            read: index < parser.count,
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
        let first = read_some(&mut src, &mut buffer);
        let (result, new) = match first {
            Ok(n) if n == BLOCK => {
                let set = &mut self.set;
                std::thread::scope(|threads| {
                    let (to, batches) = std::sync::mpsc::sync_channel::<Vec<Digest>>(QUEUED);
                    let (give_back, back) = std::sync::mpsc::channel();
                    let filler = threads.spawn(move || {
                        let mut new = 0;
                        for mut batch in batches {
                            new += set.insert_all(&batch);
                            batch.clear();
                            let _ = give_back.send(batch);
                        }
                        new
                    });
                    let mut sink = Handoff { to, back };
                    let result = parser.read(&mut scan, &mut buffer, n, &mut src, &mut sink);
                    drop(sink);
                    let new = filler
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    (result, new)
                })
            }
            Ok(n) => {
                let mut sink = Inline {
                    set: &mut self.set,
                    new: 0,
                };
                let result = parser.read(&mut scan, &mut buffer, n, &mut src, &mut sink);
                (result, sink.new)
            }
            Err(e) => (Err(e), 0),
        };
        self.buffer = buffer;
        scan.new = new;
        scan.duplicates = scan.valid - new;
        if scan.read {
            self.loaded += new;
        } else {
            self.totals.unread += new;
        }
        result?;
        let totals = &mut self.totals;
        totals.files += 1;
        totals.lines += scan.lines;
        totals.valid += scan.valid;
        totals.duplicates += scan.duplicates;
        totals.misplaced += scan.misplaced;
        totals.ignored.add(&scan.ignored);
        Ok(scan)
    }
    /// Whether upstream's reader at the count holds this digest (beyond
    /// `MAX_DEDUP_ENTRIES`, it may have dropped it: see `Totals::over_limit`).
    pub fn sites(&self) -> &[Site] {
        &self.parser.sites
    }

    /// The fit of the files read to shard counts.
    pub fn fit(&self) -> Fit {
        self.parser.fit
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

/// One read, retried when interrupted; 0 at the end.
fn read_some(src: &mut impl Read, buffer: &mut [u8]) -> io::Result<usize> {
    loop {
        match src.read(buffer) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

impl Parser {
    /// Reads the rest of a file whose first `first` bytes are in `buffer`,
    /// handing its valid digests to `sink` (all of them, even when the
    /// reader fails: what was read counts).
    fn read(
        &mut self,
        scan: &mut FileScan,
        buffer: &mut [u8],
        first: usize,
        src: &mut impl Read,
        sink: &mut impl Sink,
    ) -> io::Result<()> {
        let mut splitter = Splitter::new();
        let mut n = first;
        let result = loop {
            if n == 0 {
                break Ok(());
            }
            splitter.feed(&buffer[..n], &mut |line| self.line(scan, line, sink));
            n = match read_some(src, buffer) {
                Ok(n) => n,
                Err(e) => break Err(e),
            };
        };
        if result.is_ok() {
            let (tail, lines) = splitter.finish(&mut |line| self.line(scan, line, sink));
            scan.tail = tail;
            scan.lines = lines;
            scan.bytes = tail.offset + tail.bytes;
        }
        sink.take(&mut self.pending);
        result
    }

    #[inline]
    fn line(&mut self, scan: &mut FileScan, line: Line, sink: &mut impl Sink) {
        let digest = match line.judged {
            Judged::Valid(digest) => digest,
            Judged::Ignored(reason) => return scan.ignored.count(reason),
        };
        scan.valid += 1;
        self.fit.add(scan.index, &digest);
        if scan.read && self.shards.remainder(digest.prefix()) != scan.index {
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
            sink.take(&mut self.pending);
        }
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

    #[test]
    fn the_fast_divisor_agrees_with_the_remainder() {
        let ns = [
            0u32,
            1,
            2,
            3,
            63,
            64,
            65,
            1000,
            65_535,
            1 << 31,
            u32::MAX - 1,
            u32::MAX,
        ];
        for d in [
            1u32,
            2,
            3,
            7,
            63,
            64,
            1000,
            65_537,
            1 << 31,
            u32::MAX - 1,
            u32::MAX,
        ] {
            let fast = Divisor::new(d);
            for n in ns
                .iter()
                .copied()
                .chain((0..2000u32).map(|i| i.wrapping_mul(2_147_483).wrapping_add(d / 3)))
            {
                assert_eq!(fast.remainder(n), n % d, "{n} % {d}");
                assert_eq!(fast.divides(n), n % d == 0, "{d} | {n}");
            }
        }
    }

    /// A reader that hands out at most `step` bytes a read.
    struct Steps<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Steps<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.data.len().min(self.step).min(buf.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_file_read_on_two_threads_counts_as_one_read_on_one() {
        // Over 600 KB: the first read fills a block, so the set is filled
        // on another thread; read in small steps, it is filled inline.
        let mut text = String::new();
        for i in 0..10_000u32 {
            text.push_str(&hex(i % 7_000 * 4 + 1, 'e'));
            text.push('\n');
            if i % 1_000 == 0 {
                text.push_str("torn\n\n");
            }
        }
        text.push_str(&hex(5, 'a'));
        let data = text.as_bytes();
        assert!(data.len() > 2 * BLOCK);
        let mut results = Vec::new();
        for step in [usize::MAX, 1000] {
            let query = Digest::parse(&hex(1, 'e')).unwrap();
            let mut scan = LedgerScan::new(4, vec![query]);
            let file = scan.file(1, Steps { data, step }).unwrap();
            let mut held: Vec<Digest> = scan.set().iter().collect();
            held.sort();
            let counts = (file.valid, file.new, file.duplicates, file.misplaced);
            results.push((
                counts,
                format!("{file:?}"),
                format!("{:?}", scan.totals()),
                scan.sites().to_vec(),
                held,
            ));
        }
        assert_eq!(results[0], results[1]);
        let scan = &results[0];
        assert_eq!(scan.0, (10_001, 7_001, 3_000, 0));
        assert_eq!(scan.4.len(), 7_001);
        assert_eq!(scan.3.len(), 2, "the query's two lines");
    }
}
