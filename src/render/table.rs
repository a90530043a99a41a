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
use std::fmt::{self, Write as _};

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
    fn new(text: &str) -> Cell {
        let text = escape_controls(text);
        let width = visible_width(&text);
        Cell { text, width }
    }
}

impl Table {
    /// A table with these (already styled) column names.
    pub fn new(header: Vec<String>) -> Table {
        Table {
            header: header.iter().map(|h| Cell::new(h)).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row; missing cells are empty, extra ones are dropped.
    pub fn add_row<S: AsRef<str>>(&mut self, cells: Vec<S>) {
        let mut row: Vec<Cell> = cells
            .iter()
            .take(self.header.len())
            .map(|c| Cell::new(c.as_ref()))
            .collect();
        row.resize(self.header.len(), Cell::default());
        self.rows.push(row);
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let widths: Vec<usize> = (0..self.header.len())
            .map(|i| {
                std::iter::once(&self.header[i])
                    .chain(self.rows.iter().map(|r| &r[i]))
                    .map(|c| c.width)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let rule = |f: &mut fmt::Formatter<'_>, [left, fill, join, right]: [char; 4]| {
            f.write_char(left)?;
            for (i, w) in widths.iter().enumerate() {
                if i > 0 {
                    f.write_char(join)?;
                }
                for _ in 0..w + 2 {
                    f.write_char(fill)?;
                }
            }
            f.write_char(right)
        };
        let line = |f: &mut fmt::Formatter<'_>, cells: &[Cell]| {
            f.write_char('│')?;
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                if i > 0 {
                    f.write_char('┆')?;
                }
                write!(f, " {}{:pad$} ", cell.text, "", pad = w - cell.width)?;
            }
            f.write_str("│\n")
        };
        rule(f, ['┌', '─', '┬', '┐'])?;
        f.write_char('\n')?;
        line(f, &self.header)?;
        rule(f, ['╞', '═', '╪', '╡'])?;
        f.write_char('\n')?;
        for row in &self.rows {
            line(f, row)?;
        }
        // Like the rest of the output, the caller ends the last line.
        rule(f, ['└', '─', '┴', '┘'])
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
