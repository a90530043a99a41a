//! The project's one table style, drawn directly: box-drawing borders, a
//! double rule under the header, one line per row, columns as wide as
//! their widest cell on screen.
//!
//! Widths are measured as the terminal shows the text: colour codes take
//! no room and wide characters take two columns. A control character in a
//! cell (a newline in a path, an escape sequence in a journal's op) is
//! shown escaped, so data never moves the cursor or colours the terminal;
//! only the colour codes of [`super::Styles`] pass, which the render code
//! adds after escaping the data ([`super::printable`]).

use std::borrow::Cow;
use std::fmt;

use rayon::prelude::*;
use unicode_width::UnicodeWidthStr;

/// How a column gives way when its table is wider than the screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// Always shown whole: ids, numbers, times.
    Whole,
    /// Shortened first, each cell too long losing its middle: paths, prose.
    Shorten,
    /// Shown whole, and left out when shortening the others is not enough:
    /// the lowest rank goes first (columns of one rank, the leftmost first).
    Spare(u8),
}

/// A column of a table: its title and how it fits the screen.
#[derive(Clone, Copy, Debug)]
pub struct Column<'a> {
    /// The header, unstyled.
    pub title: &'a str,
    /// How it gives way.
    pub fit: Fit,
}

impl<'a> Column<'a> {
    /// A column always shown whole.
    pub const fn whole(title: &'a str) -> Column<'a> {
        Column {
            title,
            fit: Fit::Whole,
        }
    }

    /// A column shortened to fit.
    pub const fn shorten(title: &'a str) -> Column<'a> {
        Column {
            title,
            fit: Fit::Shorten,
        }
    }

    /// A column left out, `rank` among the table's spare ones, when
    /// shortening is not enough.
    pub const fn spare(title: &'a str, rank: u8) -> Column<'a> {
        Column {
            title,
            fit: Fit::Spare(rank),
        }
    }
}

/// A table: a header and rows of cells.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<Cell>,
    rows: Vec<Vec<Cell>>,
    /// The screen width to fit in, if any.
    max_width: Option<usize>,
    /// The columns that may be shortened to fit (the long ones: paths,
    /// prose); the others (ids, numbers, times) always stay whole.
    shrinkable: Vec<usize>,
    /// The columns that may be left out when shortening is not enough,
    /// the first to go first.
    droppable: Vec<usize>,
}

/// No column is shortened below this many columns.
const MIN_COLUMN: usize = 10;

/// A cell's text and the columns it takes on screen.
#[derive(Clone, Debug, Default)]
struct Cell {
    text: String,
    width: usize,
}

impl Cell {
    fn new(text: String) -> Cell {
        // Printable ASCII, nearly every cell: kept as it is, a column a byte.
        if text.bytes().all(|b| (0x20..0x7F).contains(&b)) {
            let width = text.len();
            return Cell { text, width };
        }
        let text = escape_controls(&text);
        let width = visible_width(&text);
        Cell { text, width }
    }
}

impl Table {
    /// A table with these (already styled) column names.
    pub fn new(header: Vec<String>) -> Table {
        Table {
            header: header.into_iter().map(Cell::new).collect(),
            rows: Vec::new(),
            max_width: None,
            shrinkable: Vec::new(),
            droppable: Vec::new(),
        }
    }

    /// Lets these columns be shortened when the table is fitted.
    pub fn shrink(mut self, columns: &[usize]) -> Table {
        self.shrinkable = columns.to_vec();
        self
    }

    /// Lets these columns be left out, in this order, when shortening the
    /// others does not make the table fit.
    pub fn drop_first(mut self, columns: &[usize]) -> Table {
        self.droppable = columns.to_vec();
        self
    }

    /// The table without column `i`.
    fn without(&self, i: usize) -> Table {
        let remove = |cells: &[Cell]| -> Vec<Cell> {
            cells
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, c)| c.clone())
                .collect()
        };
        let shift = |cols: &[usize]| -> Vec<usize> {
            cols.iter()
                .filter(|&&c| c != i)
                .map(|&c| if c > i { c - 1 } else { c })
                .collect()
        };
        Table {
            header: remove(&self.header),
            rows: self.rows.par_iter().map(|r| remove(r)).collect(),
            max_width: self.max_width,
            shrinkable: shift(&self.shrinkable),
            droppable: shift(&self.droppable[1..]),
        }
    }

    /// Fits the table into `width` screen columns (`None`: as wide as its
    /// cells): the widest columns are shortened first, each cell that is
    /// too long losing its middle to an ellipsis, so that short columns
    /// (ids, workers, times) stay whole and a path keeps its start and its
    /// file name.
    pub fn fit(mut self, width: Option<usize>) -> Table {
        self.max_width = width;
        self
    }

    /// Appends a row; missing cells are empty, extra ones are dropped.
    pub fn add_row<S: Into<String>>(&mut self, cells: Vec<S>) {
        let row = Table::row(&self.header, cells);
        self.rows.push(row);
    }

    /// Appends many rows, made and measured on every core.
    pub fn add_rows<I>(&mut self, rows: I)
    where
        I: IntoParallelIterator<Item = Vec<String>>,
        I::Iter: IndexedParallelIterator,
    {
        let header = &self.header;
        let rows: Vec<Vec<Cell>> = rows
            .into_par_iter()
            .map(|r| Table::row(header, r))
            .collect();
        self.rows.extend(rows);
    }

    fn row<S: Into<String>>(header: &[Cell], cells: Vec<S>) -> Vec<Cell> {
        let mut row: Vec<Cell> = cells
            .into_iter()
            .take(header.len())
            .map(|c| Cell::new(c.into()))
            .collect();
        row.resize(header.len(), Cell::default());
        row
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.draw())
    }
}

impl Table {
    /// The table as text, built in one string (tens of thousands of rows
    /// would otherwise be tens of thousands of formatted writes).
    fn draw(&self) -> String {
        let mut widths: Vec<usize> = (0..self.header.len())
            .map(|i| {
                std::iter::once(&self.header[i])
                    .chain(self.rows.iter().map(|r| &r[i]))
                    .map(|c| c.width)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let shortened = self
            .max_width
            .and_then(|max| shorten(&mut widths, &self.shrinkable, max));
        if let (Some(max), Some(first)) = (self.max_width, self.droppable.first()) {
            let fitted = shortened.as_deref().unwrap_or(&widths);
            if fitted.iter().map(|w| w + 3).sum::<usize>() + 1 > max {
                return self.without(*first).draw();
            }
        }
        if let Some(widths) = shortened {
            let cut = |cells: &[Cell]| -> Vec<Cell> {
                cells
                    .iter()
                    .zip(&widths)
                    .map(|(c, &w)| if c.width > w { c.cut(w) } else { c.clone() })
                    .collect()
            };
            let table = Table {
                header: cut(&self.header),
                rows: self.rows.par_iter().map(|r| cut(r)).collect(),
                max_width: None,
                shrinkable: Vec::new(),
                droppable: Vec::new(),
            };
            return table.draw();
        }
        let line_bytes: usize = widths.iter().map(|w| w + 5).sum::<usize>() + 4;
        let mut out = String::with_capacity(line_bytes * (self.rows.len() + 4));
        let rule = |out: &mut String, [left, fill, join, right]: [char; 4]| {
            out.push(left);
            for (i, w) in widths.iter().enumerate() {
                if i > 0 {
                    out.push(join);
                }
                out.extend(std::iter::repeat_n(fill, w + 2));
            }
            out.push(right);
        };
        let spaces = " ".repeat(widths.iter().max().map_or(0, |w| w + 1));
        let line = |out: &mut String, cells: &[Cell]| {
            out.push('│');
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                if i > 0 {
                    out.push('┆');
                }
                out.push(' ');
                out.push_str(&cell.text);
                out.push_str(&spaces[..w - cell.width + 1]);
            }
            out.push_str("│\n");
        };
        rule(&mut out, ['┌', '─', '┬', '┐']);
        out.push('\n');
        line(&mut out, &self.header);
        rule(&mut out, ['╞', '═', '╪', '╡']);
        out.push('\n');
        // Long tables are drawn a thousand rows at a time on every core.
        let chunks: Vec<String> = self
            .rows
            .par_chunks(1024)
            .map(|rows| {
                let mut text = String::with_capacity(line_bytes * rows.len());
                for row in rows {
                    line(&mut text, row);
                }
                text
            })
            .collect();
        for chunk in chunks {
            out.push_str(&chunk);
        }
        // Like the rest of the output, the caller ends the last line.
        rule(&mut out, ['└', '─', '┴', '┘']);
        out
    }
}

/// Column widths that fit `max` screen columns, borders included, by
/// shortening the widest of the `shrinkable` columns (never below
/// [`MIN_COLUMN`]); `None` when they fit already or none may shrink.
fn shorten(widths: &mut [usize], shrinkable: &[usize], max: usize) -> Option<Vec<usize>> {
    let total = |w: &[usize]| w.iter().map(|w| w + 3).sum::<usize>() + 1;
    if total(widths) <= max || shrinkable.is_empty() {
        return None;
    }
    let mut fitted = widths.to_vec();
    while total(&fitted) > max {
        let (i, widest) = shrinkable
            .iter()
            .filter(|&&i| i < fitted.len())
            .map(|&i| (i, fitted[i]))
            .max_by_key(|(_, w)| *w)?;
        if widest <= MIN_COLUMN {
            break;
        }
        let second = shrinkable
            .iter()
            .filter(|&&j| j != i && j < fitted.len())
            .map(|&j| fitted[j])
            .max()
            .unwrap_or(0);
        let excess = total(&fitted) - max;
        fitted[i] = widest
            .saturating_sub(excess)
            .max(second)
            .max(MIN_COLUMN)
            .min(widest - 1);
    }
    Some(fitted)
}

impl Cell {
    /// The cell shortened to `width` columns, its middle replaced by an
    /// ellipsis. A cell with colour codes loses its colour.
    fn cut(&self, width: usize) -> Cell {
        let plain = strip_sgr(&self.text);
        let chars: Vec<char> = plain.chars().collect();
        let keep = width.saturating_sub(1);
        let head_width = keep.div_ceil(2);
        let (mut head, mut used) = (String::new(), 0);
        for &c in &chars {
            let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + w > head_width {
                break;
            }
            head.push(c);
            used += w;
        }
        let (mut tail, mut tail_used) = (Vec::new(), 0);
        for &c in chars.iter().rev() {
            let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + tail_used + w > keep {
                break;
            }
            tail.push(c);
            tail_used += w;
        }
        tail.reverse();
        let text = format!("{head}…{}", tail.into_iter().collect::<String>());
        let width = text.width();
        Cell { text, width }
    }
}

/// `text` without its colour codes.
fn strip_sgr(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\x1b') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let n = sgr_len(rest).unwrap_or(1);
        rest = &rest[n..];
    }
    out.push_str(rest);
    out
}

/// The columns `text` takes on a terminal: colour codes (`ESC [ … m`) take
/// none.
fn visible_width(text: &str) -> usize {
    if !text.contains('\x1b') {
        return text.width();
    }
    let mut width = 0;
    let mut rest = text;
    while let Some(at) = rest.find('\x1b') {
        width += rest[..at].width();
        rest = &rest[at..];
        match sgr_len(rest) {
            Some(n) => rest = &rest[n..],
            None => {
                // Not ours; escaped before it gets here, but measured safely.
                width += 1;
                rest = &rest[1..];
            }
        }
    }
    width + rest.width()
}

/// The length of a colour code (`ESC [ digits and semicolons m`) at the
/// start of `text`.
fn sgr_len(text: &str) -> Option<usize> {
    let body = text.strip_prefix("\x1b[")?;
    let end = body.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
    (body.as_bytes()[end] == b'm').then_some(2 + end + 1)
}

/// `text` with every control character shown as an escape (`\n`, `\t`,
/// `\u{1b}`), except colour codes.
fn escape_controls(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let n = match sgr_len(rest) {
            Some(n) => {
                out.push_str(&rest[..n]);
                n
            }
            None => {
                push_escaped(&mut out, c);
                c.len_utf8()
            }
        };
        rest = &rest[n..];
    }
    out
}

/// `text` with every control character shown as an escape, colour codes
/// included: for data (paths, ops, ids from a file) before it is styled or
/// put in a table.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out.into()
}

fn push_escaped(out: &mut String, c: char) {
    if c.is_control() {
        out.extend(c.escape_default());
    } else {
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_the_condensed_box_style() {
        let mut t = Table::new(vec!["id".into(), "path".into()]);
        t.add_row(vec!["554e5e40fca2", "/afl/queue/id:000005,café"]);
        t.add_row(vec!["c1", "宽"]);
        assert_eq!(
            t.to_string(),
            "┌──────────────┬───────────────────────────┐\n\
             │ id           ┆ path                      │\n\
             ╞══════════════╪═══════════════════════════╡\n\
             │ 554e5e40fca2 ┆ /afl/queue/id:000005,café │\n\
             │ c1           ┆ 宽                        │\n\
             └──────────────┴───────────────────────────┘"
        );
    }

    #[test]
    fn colour_takes_no_room_and_data_cannot_move_the_cursor() {
        let mut t = Table::new(vec!["\x1b[1mclock\x1b[0m".into()]);
        t.add_row(vec!["\x1b[33mlegacy\x1b[39m"]);
        t.add_row(vec!["a\nb\x07"]);
        let text = t.to_string();
        // The widest cell is the escaped one, nine columns.
        assert!(text.contains("│ \x1b[1mclock\x1b[0m     │"), "{text}");
        assert!(text.contains("│ \x1b[33mlegacy\x1b[39m    │"), "{text}");
        assert!(text.contains("│ a\\nb\\u{7} │"), "{text}");
        assert!(text.starts_with("┌───────────┐"), "{text}");
        assert_eq!(text.lines().count(), 6);
        assert_eq!(printable("\x1b[31mred\n"), "\\u{1b}[31mred\\n");
        assert_eq!(printable("plain"), "plain");
        assert_eq!(visible_width("\x1b[1mab\x1b[0m宽"), 4);
    }

    #[test]
    fn rows_are_cut_or_filled_to_the_header() {
        let mut t = Table::new(vec!["a".into(), "b".into()]);
        t.add_row(vec!["1"]);
        t.add_row(vec!["1", "2", "3"]);
        assert_eq!(
            t.to_string(),
            "┌───┬───┐\n│ a ┆ b │\n╞═══╪═══╡\n│ 1 ┆   │\n│ 1 ┆ 2 │\n└───┴───┘"
        );
    }
}
