//! Telling a generated file that someone edited from one that is merely stale. Every generated
//! text file opens with tangle's `@generated` header, and that first line ends with a *seal*,
//! `[seal 0123456789abcdef]`: the first 16 hex digits of the SHA-256 of the file as tangle
//! wrote it. A file on disk whose seal still matches its text is exactly what some earlier
//! `sync` wrote: if it differs from what the chapters generate now, the chapters (or the tool)
//! moved on and the file is rewritten. A file whose seal does not match its text (or that lost
//! its seal) was edited after tangle wrote it, and tangle never overwrites it unasked
//! ([`super::sync`]).
//!
//! The seal travels inside the file, so the distinction holds on a fresh clone, with no state
//! kept in `target/`, and it needs no access to the chapters the file came from.
//!
//! What the seal covers: the whole text, with the seal itself removed and the line numbers of
//! tangle's location comments (`// book/src/ch06.md:42`) blanked. Those numbers follow the
//! prose, and the run cache ignores them (so that a prose edit rebuilds nothing); keeping them
//! out of the seal keeps the seal from changing when only they do. A hand edit that changes
//! nothing but such a number is the one edit the seal does not see. Lines ending `\r\n` read as
//! ending `\n`: a checkout that converted the line endings (git's `core.autocrlf`) edited nothing.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use super::crates::is_location_comment;

const OPEN: &str = " [seal ";
const DIGITS: usize = 16;

/// `text` with its first line sealed, in place of the seal it carries (or `text` as it is
/// when its first line is not tangle's `@generated` header).
pub fn seal(text: &str) -> String {
    let first_end = text.find('\n').unwrap_or(text.len());
    if !text[..first_end].contains("@generated") {
        return text.to_string();
    }
    let digest = digest(text);
    let first = normal_line(0, &text[..first_end]);
    format!("{first}{OPEN}{digest}]{}", &text[first_end..])
}

/// Whether the generated text `expected` carries a seal, so that its copy on disk can be
/// told edited or not.
pub(crate) fn is_sealed(expected: &[u8]) -> bool {
    std::str::from_utf8(expected).is_ok_and(|t| recorded(t).is_some())
}

/// The seal the file's first line carries, if it carries one.
pub fn recorded(text: &str) -> Option<&str> {
    let first = text.split('\n').next().unwrap_or("").trim_end_matches('\r');
    let digest = first.strip_suffix(']')?.rsplit_once(OPEN)?.1;
    (digest.len() == DIGITS && digest.bytes().all(|b| b.is_ascii_hexdigit())).then_some(digest)
}

/// Whether the file on disk still carries the seal of its own text: tangle wrote it so.
pub fn is_intact(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else { return false };
    recorded(text).is_some_and(|seal| seal == digest(text))
}

/// The seal `text` would carry (its own seal, if any, left out).
pub(crate) fn digest(text: &str) -> String {
    let mut h = Sha256::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        // A checkout may have turned `\n` into `\r\n` (git's `core.autocrlf`): the same text.
        let (content, ending) = match line.strip_suffix('\n') {
            Some(c) => (c.strip_suffix('\r').unwrap_or(c), "\n"),
            None => (line, ""),
        };
        h.update(normal_line(i, content).as_bytes());
        h.update(ending.as_bytes());
    }
    h.finalize().iter().take(DIGITS / 2).map(|b| format!("{b:02x}")).collect()
}

/// A line of a generated file as the seal sees it: the first line (`index` 0) without its
/// seal (a well-formed one: a damaged seal is an edit of the line), a location comment without
/// its line number. Two files whose lines are equal so are
/// the same generated file, whatever the prose around the cells did.
pub(crate) fn normal_line(index: usize, line: &str) -> Cow<'_, str> {
    if index == 0
        && let Some(at) = line.rfind(OPEN)
        && let Some(digits) = line[at + OPEN.len()..].strip_suffix(']')
        && digits.len() == DIGITS
        && digits.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Cow::Borrowed(&line[..at]);
    }
    if is_location_comment(line) {
        return Cow::Borrowed(line.trim_end_matches(|c: char| c.is_ascii_digit()));
    }
    Cow::Borrowed(line)
}

/// Whether a file holds the markers git leaves in a conflicted merge: such a file is the
/// merge's, not an author's edit, and is regenerated like a stale one.
pub(crate) fn has_conflict_markers(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let mut seen = [false; 3];
    for line in text.lines() {
        for (i, marker) in ["<<<<<<< ", "=======", ">>>>>>> "].iter().enumerate() {
            if line.starts_with(marker) || (i == 1 && line == "=======") {
                seen[i] = true;
            }
        }
    }
    seen.iter().all(|s| *s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "// @generated by tangle from book/src/ch01.md: do not edit.\n// Change the chapter.\n\n\
                        // book/src/ch01.md:5\npub fn one() -> u32 {\n    1\n}\n";

    #[test]
    fn a_sealed_file_is_intact_until_edited_and_location_numbers_do_not_count() {
        let sealed = seal(FILE);
        let first = sealed.lines().next().unwrap();
        assert!(first.starts_with("// @generated by tangle from book/src/ch01.md: do not edit. [seal "), "{first}");
        assert_eq!(sealed.lines().count(), FILE.lines().count());
        assert!(is_intact(sealed.as_bytes()));
        assert!(is_sealed(sealed.as_bytes()));
        // The prose moved: only the location comment's number changed.
        assert!(is_intact(sealed.replace("ch01.md:5", "ch01.md:9").as_bytes()));
        // A hand edit, anywhere: in a cell, in the header, the seal itself, a location's path.
        assert!(!is_intact(sealed.replace("    1", "    2").as_bytes()));
        assert!(!is_intact(sealed.replace("Change the", "Change").as_bytes()));
        assert!(!is_intact(sealed.replace("[seal ", "[seal1").as_bytes()));
        assert_ne!(normal_line(0, &sealed.replace("]\n", "x]\n")), normal_line(0, &sealed));
        assert!(!is_intact(sealed.replace("// book/src/ch01.md:5", "// book/src/ch02.md:5").as_bytes()));
        assert!(!is_intact(FILE.as_bytes()), "a file without a seal cannot be told unedited");
        // A checkout that turned `\n` into `\r\n` edited nothing; an edit made after it did.
        let crlf = sealed.replace('\n', "\r\n");
        assert!(is_intact(crlf.as_bytes()));
        assert_eq!(recorded(&crlf), recorded(&sealed));
        assert!(!is_intact(crlf.replace("    1", "    2").as_bytes()));
        assert!(!is_intact(b"\xff\xfe"), "nor can bytes that are not text");
        // The seal of the text, whatever seal it carries now; sealing again changes nothing.
        assert_eq!(recorded(&sealed), Some(digest(FILE).as_str()));
        assert_eq!(digest(&sealed), digest(FILE));
        assert_eq!(seal(&sealed), sealed);
        // Files without tangle's header are left as they are.
        assert_eq!(seal("[package]\n"), "[package]\n");
        assert!(!is_sealed(b"[package]\n"));
    }

    #[test]
    fn merge_conflicts_are_told_apart_from_edits() {
        assert!(has_conflict_markers(b"<<<<<<< HEAD\na\n=======\nb\n>>>>>>> theirs\n"));
        assert!(!has_conflict_markers(b"let x = \"=======\";\n"));
    }
}
