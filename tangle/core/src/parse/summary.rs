//! The reading order: the chapter files `SUMMARY.md` lists, as mdBook reads it. Commands
//! report chapters in this order ([`crate::pipeline::Project::select`]); `book` checks the
//! summary against the chapters with it (tangle-render's `validate`).

use std::collections::HashMap;
use std::path::PathBuf;

use crate::config::Layout;

/// The chapter files `SUMMARY.md` lists, read by mdBook's own parser (`mdbook-summary`, the
/// one `book` builds with), each with the line that names it; drafts (`[Title]()`) and links
/// elsewhere are left out. A summary mdBook cannot read is its error.
pub fn entries(summary: &str) -> anyhow::Result<Vec<(usize, PathBuf)>> {
    use mdbook_summary::SummaryItem;
    let parsed = mdbook_summary::parse_summary(summary)?;
    let mut todo: Vec<&SummaryItem> =
        parsed.prefix_chapters.iter().chain(&parsed.numbered_chapters).chain(&parsed.suffix_chapters).rev().collect();
    let mut out = Vec::new();
    let mut from_line = 0;
    while let Some(item) = todo.pop() {
        let SummaryItem::Link(link) = item else { continue };
        todo.extend(link.nested_items.iter().rev());
        let Some(location) = link.location.as_ref().and_then(|l| l.to_str()) else { continue };
        let target = location.split('#').next().unwrap_or("");
        if target.is_empty() || target.contains("://") {
            continue;
        }
        // The entries come in the file's order: the first line from the last one on that
        // links to the target (as written, spaces perhaps as `%20`) is its line.
        let written = [format!("]({target}"), format!("]({}", target.replace(' ', "%20"))];
        if let Some(i) =
            summary.lines().enumerate().skip(from_line).position(|(_, l)| written.iter().any(|w| l.contains(w)))
        {
            from_line += i;
        }
        out.push((from_line + 1, PathBuf::from(target)));
    }
    Ok(out)
}

/// Each listed file's place in the reading order, by its path relative to the project root
/// (the layout's `src` joined with the entry, compared by component: `./ch01.md` is
/// `ch01.md`). A file listed twice is read where it first appears. `None` when there is no
/// `SUMMARY.md` or mdBook cannot read it.
pub fn reading_order(layout: &Layout) -> Option<HashMap<PathBuf, usize>> {
    let summary = std::fs::read_to_string(layout.abs(&layout.src).join("SUMMARY.md")).ok()?;
    let mut order = HashMap::new();
    for (i, (_, path)) in entries(&summary).ok()?.into_iter().enumerate() {
        order.entry(layout.src.join(path)).or_insert(i);
    }
    Some(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_what_mdbook_reads_at_their_lines() {
        let summary = "# Summary\n\n[Preface](preface.md)\n\n- [One](ch01.md#start)\n  - [Nested](one/a%20b.md)\n\
                       - [Draft]()\n- [Elsewhere](https://example.com/x.md)\n- [Two](ch02.md)\n\n\
                       <!-- [Hidden](hidden.md) -->\n";
        let got = entries(summary).unwrap();
        let expected: Vec<(usize, PathBuf)> =
            vec![(3, "preface.md".into()), (5, "ch01.md".into()), (6, "one/a b.md".into()), (9, "ch02.md".into())];
        assert_eq!(got, expected);
        assert!(entries("- [One](ch01.md)\n\n[Suffix](s.md)\n\n- [Two](ch02.md)\n").is_err(), "mdBook refuses it");
    }
}
