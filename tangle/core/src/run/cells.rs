//! Where each cell's output starts and ends in a chapter program's stdout, found from the
//! marker lines that `tangle_runtime::cell` prints. Works on bytes, so that it can follow a
//! stream as it arrives (to stop a cell that prints too much) and so that output that is not
//! UTF-8 is seen as it is rather than patched up.

use std::ops::Range;

use tangle_runtime::MARKER;

/// A marker line seen in the stream.
#[derive(Debug, Clone, PartialEq)]
struct Mark {
    /// The run cell it starts.
    index: usize,
    /// Where the marker begins (the end of the previous cell's output).
    at: usize,
    /// Where the cell's output begins: just after the marker line.
    content: usize,
}

/// Follows a growing stdout buffer line by line. Each byte is looked at a bounded number of
/// times, however the stream is chunked.
#[derive(Debug, Default)]
pub(crate) struct Segmenter {
    marks: Vec<Mark>,
    /// Start of the line not yet complete.
    line_start: usize,
    /// Bytes before this offset hold no newline past `line_start`.
    scan_from: usize,
    /// How many marks have had the cell before them checked against the cap.
    checked: usize,
}

impl Segmenter {
    /// Takes in the complete lines of `buf` (which only grows between calls).
    pub(crate) fn feed(&mut self, buf: &[u8]) {
        while let Some(nl) = buf[self.scan_from..].iter().position(|&b| b == b'\n') {
            let end = self.scan_from + nl + 1;
            self.line(buf, self.line_start, end);
            self.line_start = end;
            self.scan_from = end;
        }
        self.scan_from = buf.len();
    }

    /// Takes in the last line, which has no newline: the stream has ended.
    pub fn finish(&mut self, buf: &[u8]) {
        self.feed(buf);
        if self.line_start < buf.len() {
            self.line(buf, self.line_start, buf.len());
            self.line_start = buf.len();
            self.scan_from = buf.len();
        }
    }

    fn line(&mut self, buf: &[u8], start: usize, end: usize) {
        let line = &buf[start..end];
        let marker = MARKER.as_bytes();
        // A cell that ends with `print!` leaves no newline, so a marker may start mid-line:
        // the text before it still belongs to the cell before.
        let Some(at) = line.windows(marker.len()).position(|w| w == marker) else { return };
        let index = std::str::from_utf8(&line[at + marker.len()..]).ok().and_then(|s| s.trim_end().parse().ok());
        if let Some(index) = index {
            self.marks.push(Mark { index, at: start + at, content: end });
        }
    }

    /// The cell that is printing now (`None` before the first marker).
    pub fn current(&self) -> Option<usize> {
        self.marks.last().map(|m| m.index)
    }

    /// The first cell whose output is longer than `cap` bytes, among the cells that ended
    /// since the last call and the one still printing; `Some(None)` for text printed before
    /// the first cell. `len` is the buffer's length.
    pub(crate) fn over_cap(&mut self, len: usize, cap: usize) -> Option<Option<usize>> {
        for i in self.checked..self.marks.len() {
            let (cell, start) = match i {
                0 => (None, 0),
                _ => (Some(self.marks[i - 1].index), self.marks[i - 1].content),
            };
            if self.marks[i].at - start > cap {
                return Some(cell);
            }
        }
        self.checked = self.marks.len();
        let start = self.marks.last().map_or(0, |m| m.content);
        (len - start > cap).then(|| self.current())
    }

    /// Each cell's output, as (cell index, byte range), in the order the cells ran.
    pub fn cells(&self, len: usize) -> Vec<(usize, Range<usize>)> {
        self.marks
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let end = self.marks.get(i + 1).map_or(len, |next| next.at);
                (m.index, m.content..end)
            })
            .collect()
    }
}

/// Splits a complete stdout into each cell's output.
pub(crate) fn split(stdout: &[u8]) -> Vec<(usize, Range<usize>)> {
    let mut seg = Segmenter::default();
    seg.finish(stdout);
    seg.cells(stdout.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(stdout: &[u8]) -> Vec<(usize, &[u8])> {
        split(stdout).into_iter().map(|(i, r)| (i, &stdout[r])).collect()
    }

    #[test]
    fn chunked_feeding_finds_the_same_cells_as_one_pass() {
        let stdout = format!("{MARKER}0\nab\nc{MARKER}1\n{MARKER}2\nlast line without newline").into_bytes();
        let whole = split(&stdout);
        for chunk in 1..stdout.len() {
            let mut seg = Segmenter::default();
            let mut buf = Vec::new();
            for piece in stdout.chunks(chunk) {
                buf.extend_from_slice(piece);
                seg.feed(&buf);
            }
            seg.finish(&buf);
            assert_eq!(seg.cells(buf.len()), whole, "chunks of {chunk}");
        }
        assert_eq!(texts(&stdout), vec![(0, &b"ab\nc"[..]), (1, &b""[..]), (2, &b"last line without newline"[..])]);
    }

    #[test]
    fn a_marker_with_no_number_is_ordinary_text() {
        let stdout = format!("{MARKER}0\nx{MARKER}oops\ny\n").into_bytes();
        assert_eq!(texts(&stdout), vec![(0, format!("x{MARKER}oops\ny\n").as_bytes())]);
    }

    #[test]
    fn the_cap_is_checked_for_every_cell_that_ended_in_one_chunk() {
        let mut seg = Segmenter::default();
        let stdout = format!("{MARKER}0\n0123456789{MARKER}1\nab").into_bytes();
        seg.feed(&stdout);
        assert_eq!(seg.over_cap(stdout.len(), 5), Some(Some(0)));
        let mut seg = Segmenter::default();
        seg.feed(&stdout);
        assert_eq!(seg.over_cap(stdout.len(), 10), None);
        assert_eq!(seg.current(), Some(1));
        let mut seg = Segmenter::default();
        seg.feed(b"before any cell\n");
        assert_eq!(seg.over_cap(16, 4), Some(None));
    }
}
