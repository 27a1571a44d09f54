//! Rewriting a text by replacing byte ranges of the original, so that every byte outside the
//! replaced ranges stays exactly as it was: how `accept`, `fmt` and the renderer write.

use std::ops::Range;

/// A set of non-overlapping replacements over one text.
#[derive(Debug, Default, Clone)]
pub struct Edits {
    edits: Vec<(Range<usize>, String)>,
}

impl Edits {
    pub fn new() -> Self {
        Edits::default()
    }

    /// Replaces `range` of the original text by `text` (an empty range inserts).
    pub fn replace(&mut self, range: Range<usize>, text: impl Into<String>) {
        self.edits.push((range, text.into()));
    }

    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// The edited text. Panics if two edits overlap (a bug in the caller, never in the input).
    pub fn apply(mut self, original: &str) -> String {
        self.edits.sort_by_key(|(r, _)| (r.start, r.end));
        let mut out = String::with_capacity(original.len());
        let mut at = 0;
        for (range, text) in &self.edits {
            assert!(range.start >= at, "overlapping edits at byte {}", range.start);
            out.push_str(&original[at..range.start]);
            out.push_str(text);
            at = range.end;
        }
        out.push_str(&original[at..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_in_order_and_keep_the_rest() {
        let mut e = Edits::new();
        e.replace(6..11, "there");
        e.replace(0..0, ">> ");
        assert_eq!(e.apply("hello world!"), ">> hello there!");
    }

    #[test]
    #[should_panic(expected = "overlapping")]
    fn overlapping_edits_are_a_bug() {
        let mut e = Edits::new();
        e.replace(0..5, "a");
        e.replace(3..6, "b");
        e.apply("0123456789");
    }
}
