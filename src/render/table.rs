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

/// A table: a header and rows of cells.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<Cell>,
    rows: Vec<Vec<Cell>>,
}

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
        }
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
        let widths: Vec<usize> = (0..self.header.len())
            .map(|i| {
                std::iter::once(&self.header[i])
                    .chain(self.rows.iter().map(|r| &r[i]))
                    .map(|c| c.width)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
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
