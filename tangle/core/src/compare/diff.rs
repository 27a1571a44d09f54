//! Drift diffs: what an output block says against what its cell printed, numbered by the
//! lines of the chapter file (so an editor can jump to them), with the changed characters of
//! a changed line marked: carets under them in plain text, bold on a terminal. Control
//! characters a program printed are shown as escapes, never replayed into the terminal.

use std::fmt;

use similar::{DiffTag, TextDiff};

use crate::diagnostic::Style;

/// Character ranges of a line to mark, `(start, end)` in characters.
type Marks = Vec<(usize, usize)>;

/// A line of a drift diff.
#[derive(Debug, Clone, PartialEq)]
enum Row {
    /// The same on both sides; the chapter line.
    Same { line: usize, text: String },
    /// In the block, not in the output; the chapter line and the changed character ranges.
    Removed { line: usize, text: String, marks: Marks },
    /// Printed by the cell, not in the block.
    Added { text: String, marks: Marks },
    /// Lines skipped between hunks.
    Gap,
}

/// A rendered-on-demand diff of one output block.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    rows: Vec<Row>,
}

impl Diff {
    /// `expected` is the block's text, whose first line is chapter line `first_line`.
    pub fn new(expected: &str, actual: &str, first_line: usize) -> Diff {
        let old: Vec<&str> = expected.lines().collect();
        let new: Vec<&str> = actual.lines().collect();
        let diff = TextDiff::from_slices(&old, &new);
        let mut rows = Vec::new();
        for (g, group) in diff.grouped_ops(3).iter().enumerate() {
            if g > 0 {
                rows.push(Row::Gap);
            }
            for op in group {
                let (tag, olds, news) = op.as_tag_tuple();
                let removed: Vec<(usize, &str)> = olds.clone().map(|i| (i, old[i])).collect();
                let added: Vec<&str> = news.clone().map(|i| new[i]).collect();
                match tag {
                    DiffTag::Equal => {
                        rows.extend(removed.iter().map(|&(i, t)| Row::Same { line: first_line + i, text: visible(t) }))
                    }
                    _ => {
                        // Lines replaced one for one are compared character by character, so
                        // that the changed digits stand out.
                        let paired = removed.len() == added.len();
                        let marks =
                            |a: &str, b: &str| if paired { changed_chars(a, b) } else { (Vec::new(), Vec::new()) };
                        let pairs: Vec<(Marks, Marks)> = (0..removed.len().max(added.len()))
                            .map(|k| match (removed.get(k), added.get(k)) {
                                (Some(&(_, a)), Some(&b)) => marks(a, b),
                                _ => (Vec::new(), Vec::new()),
                            })
                            .collect();
                        for (k, &(i, t)) in removed.iter().enumerate() {
                            rows.push(Row::Removed {
                                line: first_line + i,
                                text: visible(t),
                                marks: pairs[k].0.clone(),
                            });
                        }
                        for (k, t) in added.iter().enumerate() {
                            rows.push(Row::Added { text: visible(t), marks: pairs[k].1.clone() });
                        }
                    }
                }
            }
        }
        Diff { rows }
    }

    pub fn render(&self, style: Style) -> String {
        let width = self
            .rows
            .iter()
            .filter_map(|r| match r {
                Row::Same { line, .. } | Row::Removed { line, .. } => Some(line.to_string().len()),
                _ => None,
            })
            .max()
            .unwrap_or(1);
        let (red, green, dim, reset) = match style {
            Style::Colored => ("\x1b[31m", "\x1b[32m", "\x1b[2m", "\x1b[0m"),
            Style::Plain => ("", "", "", ""),
        };
        let mut out = String::new();
        for row in self.rows.iter().take(MAX_ROWS) {
            match row {
                Row::Same { line, text } => out += &format!("{dim}{line:>width$} |{reset}  {text}\n"),
                Row::Gap => out += &format!("{dim}{:>width$} |{reset}\n", "..."),
                Row::Removed { line, text, marks } => {
                    out +=
                        &format!("{dim}{line:>width$} |{reset} {red}-{}{reset}\n", emphasize(text, marks, style, red));
                    if style == Style::Plain && !marks.is_empty() {
                        out += &format!("{:>width$} |  {}\n", "", carets(marks));
                    }
                }
                Row::Added { text, marks } => {
                    out += &format!(
                        "{dim}{:>width$} |{reset} {green}+{}{reset}\n",
                        "",
                        emphasize(text, marks, style, green)
                    );
                    if style == Style::Plain && !marks.is_empty() {
                        out += &format!("{:>width$} |  {}\n", "", carets(marks));
                    }
                }
            }
        }
        let hidden = self.rows.len().saturating_sub(MAX_ROWS);
        if hidden > 0 {
            out += &format!("{dim}{:>width$} |{reset} … {hidden} more line(s) of the diff not shown\n", "");
        }
        out
    }
}

/// The most lines of one block's diff shown: an output that runs away (a loop printing
/// thousands of lines) must not flood the terminal; its first lines say what went wrong.
const MAX_ROWS: usize = 60;

impl fmt::Display for Diff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(Style::Plain))
    }
}

/// The character ranges of `a` and of `b` that differ, by a character diff of the two lines
/// (as they are shown, control characters escaped).
fn changed_chars(a: &str, b: &str) -> (Marks, Marks) {
    let (a, b) = (visible(a), visible(b));
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b);
    // Marks help only when the lines are mostly alike; on unrelated lines they are noise.
    let same: usize = ops.iter().filter(|op| op.tag() == DiffTag::Equal).map(|op| op.old_range().len()).sum();
    if 4 * same < a.len() + b.len() {
        return (Vec::new(), Vec::new());
    }
    let (mut left, mut right) = (Vec::new(), Vec::new());
    for op in ops {
        let (tag, olds, news) = op.as_tag_tuple();
        if tag != DiffTag::Equal {
            if !olds.is_empty() {
                left.push((olds.start, olds.end));
            }
            if !news.is_empty() {
                right.push((news.start, news.end));
            }
        }
    }
    (left, right)
}

/// Text with the marked character ranges in bold (on a terminal).
fn emphasize(text: &str, marks: &[(usize, usize)], style: Style, colour: &str) -> String {
    if style == Style::Plain || marks.is_empty() {
        return text.to_string();
    }
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if marks.iter().any(|&(a, _)| a == i) {
            out.push_str("\x1b[1;4m");
        }
        out.push(c);
        if marks.iter().any(|&(_, b)| b == i + 1) {
            out.push_str("\x1b[0m");
            out.push_str(colour);
        }
    }
    out
}

/// `^^` under the marked character ranges.
fn carets(marks: &[(usize, usize)]) -> String {
    let mut line = String::new();
    for &(a, b) in marks {
        while line.chars().count() < a {
            line.push(' ');
        }
        line.extend(std::iter::repeat_n('^', b - a));
    }
    line
}

/// Control characters as escapes (`\\u{1b}`), so that a program's terminal codes are seen,
/// not obeyed; tabs and line breaks stay.
pub fn visible(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() && c != '\t' && c != '\n' { c.escape_unicode().to_string() } else { c.to_string() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runaway_output_shows_its_first_lines_and_how_many_more() {
        let printed: String = (0..200_000).map(|i| format!("line {i}\n")).collect();
        let text = Diff::new("one line\n", &printed, 10).to_string();
        assert_eq!(text.lines().count(), MAX_ROWS + 1, "{text}");
        assert!(text.contains("+line 0\n") && !text.contains("line 199999"), "{text}");
        assert!(
            text.trim_end().ends_with(&format!("… {} more line(s) of the diff not shown", 200_001 - MAX_ROWS)),
            "{text}"
        );
    }

    #[test]
    fn lines_are_numbered_in_the_chapter_and_changed_digits_marked() {
        let d = Diff::new("1 1.0000\n2 0.5001\n3 0.3333\n", "1 1.0000\n2 0.5000\n3 0.3333\n", 19);
        assert_eq!(
            d.to_string(),
            "19 |  1 1.0000\n20 | -2 0.5001\n   |         ^\n   | +2 0.5000\n   |         ^\n21 |  3 0.3333\n"
        );
    }

    #[test]
    fn control_characters_are_shown_not_sent() {
        let d = Diff::new("a\n", "\x1b[2Ja\n", 1);
        let text = d.to_string();
        assert!(!text.contains('\x1b'), "{text:?}");
        assert!(text.contains("\\u{1b}[2Ja"), "{text}");
    }
}
