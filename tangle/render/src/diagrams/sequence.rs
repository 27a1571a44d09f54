//! Sequence diagrams drawn at build time as SVG, from the Mermaid `sequenceDiagram` subset
//! that a ```` ```sequence fig=NAME ```` block holds:
//!
//! ```text
//! participant R0 as Rank 0
//! R0->>R1: all-gather block weight shards      (solid arrow: a call or collective)
//! R0-->>A: save block input only               (dashed arrow: a reply or hand-off)
//! R0->>R0: forward on local microbatch          (self message: a loop)
//! Note over R0,R1: full block weights exist     (a note spanning lifelines)
//! ```
//!
//! The SVG is plain shapes and text in black, grays and white, so it reads in print.

use std::fmt::Write as _;

use super::kind::DiagramKind;
use crate::html::escape_html;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Message { from: usize, to: usize, text: String, dashed: bool },
    Note { first: usize, last: usize, text: String },
}

#[derive(Debug, Default)]
struct Diagram {
    ids: Vec<String>,
    names: Vec<String>,
    steps: Vec<Step>,
}

impl Diagram {
    fn participant(&mut self, id: &str) -> usize {
        match self.ids.iter().position(|p| p == id) {
            Some(i) => i,
            None => {
                self.ids.push(id.to_string());
                self.names.push(id.to_string());
                self.ids.len() - 1
            }
        }
    }

    fn parse(src: &str) -> Result<Self, String> {
        let mut d = Diagram::default();
        for (n, raw) in src.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with("%%") || line == "sequenceDiagram" {
                continue;
            }
            if let Some(rest) = line.strip_prefix("participant ").or_else(|| line.strip_prefix("actor ")) {
                let (id, name) = rest.split_once(" as ").unwrap_or((rest, rest));
                let i = d.participant(id.trim());
                d.names[i] = name.trim().to_string();
            } else if let Some(rest) = line.strip_prefix("Note ") {
                let (place, text) = rest.split_once(':').ok_or(format!("line {}: a note needs `: text`", n + 1))?;
                let who = place
                    .trim()
                    .strip_prefix("over ")
                    .or_else(|| place.trim().strip_prefix("right of "))
                    .or_else(|| place.trim().strip_prefix("left of "))
                    .ok_or(format!("line {}: expected `Note over A,B: ...`", n + 1))?;
                let mut idx: Vec<usize> = who.split(',').map(|p| d.participant(p.trim())).collect();
                idx.sort_unstable();
                d.steps.push(Step::Note { first: idx[0], last: *idx.last().unwrap(), text: text.trim().to_string() });
            } else if let Some((arrow, text)) = line.split_once(':') {
                let (from, to, dashed) = if let Some((a, b)) = arrow.split_once("-->>") {
                    (a, b, true)
                } else if let Some((a, b)) = arrow.split_once("->>") {
                    (a, b, false)
                } else {
                    return Err(format!("line {}: expected `A->>B: text` or `A-->>B: text`", n + 1));
                };
                let from = d.participant(from.trim());
                let to = d.participant(to.trim());
                d.steps.push(Step::Message { from, to, text: text.trim().to_string(), dashed });
            } else {
                return Err(format!("line {}: cannot read `{line}`", n + 1));
            }
        }
        if d.ids.is_empty() {
            return Err("the diagram has no participants".into());
        }
        Ok(d)
    }
}

const FONT: f64 = 14.0;

/// Width of a label, estimated generously (DejaVu Sans averages ~0.6 em per character), so
/// that narrower fonts in the reader's browser only leave more room.
fn text_width(s: &str) -> f64 {
    s.chars().count() as f64 * FONT * 0.6
}

/// Renders a diagram's source to an SVG string (one line, ready to inline).
pub fn render(src: &str) -> Result<String, String> {
    let d = Diagram::parse(src)?;
    let n = d.ids.len();
    // Column spacing: room for the widest label between neighbouring lifelines.
    let mut gap: f64 = 150.0;
    for step in &d.steps {
        match step {
            Step::Message { from, to, text, .. } if from != to => {
                let span = from.abs_diff(*to) as f64;
                gap = gap.max((text_width(text) + 30.0) / span);
            }
            Step::Message { text, .. } => gap = gap.max(text_width(text) + 50.0),
            Step::Note { first, last, text } => {
                let span = (last - first) as f64;
                gap = gap.max((text_width(text) + 40.0 - 40.0) / span.max(1.0));
            }
        }
    }
    let box_w = d.names.iter().map(|s| text_width(s) + 24.0).fold(90.0, f64::max);
    // How far labels reach left and right of the lifelines (lifeline 0 at x = 0): a self
    // message's text runs right of its lifeline, a note may be wider than its span.
    let (mut left, mut right) = (-box_w / 2.0, (n - 1) as f64 * gap + box_w / 2.0);
    for step in &d.steps {
        match step {
            Step::Message { from, to, text, .. } if from == to => {
                right = right.max(*from as f64 * gap + 40.0 + text_width(text));
            }
            Step::Note { first, last, text } => {
                let (l, r) = (*first as f64 * gap, *last as f64 * gap);
                let w = (r - l + 60.0).max(text_width(text) + 24.0);
                left = left.min((l + r - w) / 2.0);
                right = right.max((l + r + w) / 2.0);
            }
            Step::Message { .. } => {}
        }
    }
    let margin = 10.0 - left;
    let x = |i: usize| margin + i as f64 * gap;
    let width = margin + right + 10.0;
    let box_h = 32.0;
    let row = 44.0;
    let mut y = 10.0 + box_h + 20.0;
    let mut body = String::new();
    for step in &d.steps {
        match step {
            Step::Message { from, to, text, dashed } if from != to => {
                let (x1, x2) = (x(*from), x(*to));
                let ay = y + row - 14.0;
                let dir = if x2 > x1 { 1.0 } else { -1.0 };
                let dash = if *dashed { " stroke-dasharray=\"6 4\"" } else { "" };
                let _ = write!(
                    body,
                    "<line x1=\"{x1:.1}\" y1=\"{ay:.1}\" x2=\"{:.1}\" y2=\"{ay:.1}\" stroke=\"#222\" stroke-width=\"1.4\"{dash}/>",
                    x2 - dir * 9.0
                );
                let _ = write!(body, "<path d=\"M{x2:.1},{ay:.1} l{:.1},-5 l0,10 z\" fill=\"#222\"/>", -dir * 10.0);
                let _ = write!(
                    body,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                    (x1 + x2) / 2.0,
                    ay - 7.0,
                    escape_html(text)
                );
                y += row;
            }
            Step::Message { from, text, dashed, .. } => {
                let x0 = x(*from);
                let top = y + 10.0;
                let dash = if *dashed { " stroke-dasharray=\"6 4\"" } else { "" };
                let _ = write!(
                    body,
                    "<path d=\"M{x0:.1},{top:.1} h32 v18 h-22\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.4\"{dash}/>"
                );
                let _ = write!(body, "<path d=\"M{x0:.1},{:.1} l10,-5 l0,10 z\" fill=\"#222\"/>", top + 18.0);
                let _ =
                    write!(body, "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>", x0 + 40.0, top + 14.0, escape_html(text));
                y += row;
            }
            Step::Note { first, last, text } => {
                let (l, r) = (x(*first), x(*last));
                let w = (r - l + 60.0).max(text_width(text) + 24.0);
                let cx = (l + r) / 2.0;
                let top = y + 6.0;
                let _ = write!(
                    body,
                    "<rect x=\"{:.1}\" y=\"{top:.1}\" width=\"{w:.1}\" height=\"28\" fill=\"#ececec\" stroke=\"#777\"/>",
                    cx - w / 2.0
                );
                let _ = write!(
                    body,
                    "<text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-style=\"italic\">{}</text>",
                    top + 19.0,
                    escape_html(text)
                );
                y += 40.0;
            }
        }
    }
    let bottom = y + 16.0;
    let height = bottom + box_h + 10.0;
    let mut svg = format!(
        "<svg class=\"tangle-sequence\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"DejaVu Sans, Verdana, sans-serif\" font-size=\"{FONT}\" fill=\"#111\">"
    );
    // Lifelines under everything, then participant boxes top and bottom.
    for i in 0..n {
        let _ = write!(
            svg,
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{bottom:.1}\" stroke=\"#999\" stroke-width=\"1\"/>",
            x(i),
            10.0 + box_h
        );
    }
    svg.push_str(&body);
    for (i, name) in d.names.iter().enumerate() {
        for top in [10.0, bottom] {
            let _ = write!(
                svg,
                "<rect x=\"{:.1}\" y=\"{top:.1}\" width=\"{box_w:.1}\" height=\"{box_h}\" rx=\"3\" fill=\"#fff\" stroke=\"#222\" stroke-width=\"1.2\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>",
                x(i) - box_w / 2.0,
                x(i),
                top + 21.0,
                escape_html(name)
            );
        }
    }
    svg.push_str("</svg>");
    Ok(svg)
}

/// The `sequence` kind for the registry.
pub struct Sequence;

impl DiagramKind for Sequence {
    fn lang(&self) -> &'static str {
        "sequence"
    }

    fn draw(&self, source: &str) -> Result<String, String> {
        render(source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "sequenceDiagram\n    participant R0 as Rank 0\n    participant R1 as Rank 1\n    R0->>R1: all-gather\n    R0-->>R0: forward\n    Note over R0,R1: transient\n";

    #[test]
    fn parses_participants_messages_and_notes() {
        let d = Diagram::parse(SRC).unwrap();
        assert_eq!(d.names, vec!["Rank 0", "Rank 1"]);
        assert_eq!(d.steps.len(), 3);
        assert_eq!(d.steps[1], Step::Message { from: 0, to: 0, text: "forward".into(), dashed: true });
    }

    #[test]
    fn renders_every_label_once_and_boxes_twice() {
        let svg = render(SRC).unwrap();
        assert_eq!(svg.matches(">Rank 0</text>").count(), 2);
        assert_eq!(svg.matches(">all-gather</text>").count(), 1);
        assert!(svg.contains("stroke-dasharray"));
        assert!(!svg.contains('\n'));
    }

    #[test]
    fn labels_stay_inside_the_picture() {
        // A self message on the last lifeline and a note wider than its span.
        let svg = render(
            "A->>B: hi\nB->>B: a rather long note to itself\nNote over A: a very long note over the first one\n",
        )
        .unwrap();
        let width: f64 = svg.split("width=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        let text_x: f64 = svg.split("<text x=\"").last().unwrap().split('"').next().unwrap().parse().unwrap();
        assert!(svg.contains("a rather long note to itself"));
        let self_label_x: f64 = svg
            .split("a rather long note")
            .next()
            .unwrap()
            .rsplit("x=\"")
            .next()
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(self_label_x + text_width("a rather long note to itself") <= width, "{svg}");
        assert!(text_x > 0.0);
        let rect_x: f64 = svg
            .split("fill=\"#ececec\"")
            .next()
            .unwrap()
            .rsplit("<rect x=\"")
            .next()
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(rect_x >= 0.0, "a note sticks out on the left: {svg}");
    }

    #[test]
    fn bad_lines_are_errors_with_line_numbers() {
        assert_eq!(render("participant A\nA => B\n").unwrap_err(), "line 2: cannot read `A => B`");
    }
}
