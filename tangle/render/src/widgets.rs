//! Live calculators: `{{#widget NAME | Caption.}}` on a paragraph of its own places the widget
//! whose data a run cell wrote with `tangle_runtime::widget` (`figures/chNN/NAME.widget.json`)
//! as a numbered figure ("Figure N.i", shared with drawn figures, so `{{#ref fig:NAME}}` works).
//!
//! The widget is a plain `<form class="live">`: every input a labelled `<select>`, range
//! `<input>` or pair of radio buttons, every computed value an `<output>`, every chart an inline
//! SVG. The default state's values and charts are written into the HTML, so that with scripts
//! off, and in print, the figure shows them as text. The data file is inlined in a
//! `<script type="application/json">` (a page opened from disk cannot fetch a sibling file),
//! and `book/theme/live.js` looks values up in it when an input changes. Nothing is computed in
//! the browser: every value and every chart piece was formatted or drawn by the chapter's Rust.

use std::path::Path;

use tangle_runtime::widget::{CHART_CLOSING, Control, Data, OutputKind};

use super::html::escape_html;
use super::labels::figure_id;

/// What goes after a widget's caption (the same as a figure's).
pub use super::figures::CLOSING;

/// What goes before a widget's caption: the `<figure>`, the form with the default state, and
/// the caption's number; or a visible gap and the reason when the data file is missing or bad.
pub fn opening(figures_dir: &Path, stem: &str, name: &str, number: &str) -> Result<String, (String, String)> {
    let file = figures_dir.join(stem).join(format!("{name}.widget.json"));
    let gap = |why: String| {
        let html = format!(
            "<div class=\"tangle-figure-missing\">figures/{stem}/{name}.widget.json has not been computed yet</div>\n"
        );
        (html, why)
    };
    let text = std::fs::read_to_string(&file).map_err(|_| {
        gap(format!(
            "Figure {number} (widget {name}): {} is missing; write it with `tangle_runtime::widget::Widget::new(\"{name}\")` ... `.write()` in a run cell, then run `{}`",
            file.display(),
            tangle_core::messages::command(&format!("accept --chapter {stem}"))
        ))
    })?;
    let data =
        Data::parse(&text).map_err(|e| gap(format!("Figure {number} (widget {name}): {}: {e}", file.display())))?;
    if data.name != name {
        return Err(gap(format!("{} holds widget `{}`, not `{name}`", file.display(), data.name)));
    }
    let form = form(&data, name, number, text.trim_end()).map_err(|why| gap(format!("widget {name}: {why}")))?;
    Ok(format!(
        "<figure class=\"tangle-figure tangle-widget\" id=\"{id}\">\n{form}\n<figcaption>\n\n<span class=\"tangle-figure-label\">Figure {number}.</span> ",
        id = figure_id(name),
    ))
}

/// The form at its default state, on lines none of which is blank (a blank line would end the
/// HTML block in Markdown).
fn form(data: &Data, name: &str, number: &str, json: &str) -> Result<String, String> {
    let state = data.default_state();
    let id = |slot: usize| format!("live-{name}-in{slot}");
    let mut html = format!(
        "<form class=\"live\" data-widget=\"{}\" aria-label=\"Figure {}, live calculator\">\n<div class=\"live-inputs\">\n",
        escape_html(name),
        escape_html(number)
    );
    for (slot, input) in data.inputs.iter().enumerate() {
        let shared = input.shared.as_ref().map(|k| format!(" data-shared=\"{}\"", escape_html(k))).unwrap_or_default();
        let label = escape_html(&input.label);
        let line = match input.control {
            Control::Picker => {
                let options: String = input
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| {
                        let selected = if i == input.default { " selected" } else { "" };
                        format!("<option value=\"{i}\"{selected}>{}</option>", escape_html(o))
                    })
                    .collect();
                format!(
                    "<label class=\"live-input live-picker\"><span class=\"live-label\">{label}</span> <select id=\"{}\" data-input=\"{slot}\"{shared}>{options}</select></label>",
                    id(slot)
                )
            }
            Control::Slider => {
                let value = escape_html(&input.options[input.default]);
                format!(
                    "<label class=\"live-input live-slider\"><span class=\"live-label\">{label}</span> <input type=\"range\" id=\"{}\" data-input=\"{slot}\"{shared} min=\"0\" max=\"{}\" step=\"1\" value=\"{}\" aria-valuetext=\"{value}\"> <output class=\"live-value\" for=\"{}\">{value}</output></label>",
                    id(slot),
                    input.options.len() - 1,
                    input.default,
                    id(slot)
                )
            }
            Control::Toggle => {
                let radios: String = input
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| {
                        let checked = if i == input.default { " checked" } else { "" };
                        format!(
                            "<label><input type=\"radio\" name=\"{}\" value=\"{i}\"{checked}> {}</label>",
                            id(slot),
                            escape_html(o)
                        )
                    })
                    .collect();
                format!(
                    "<fieldset class=\"live-input live-toggle\" id=\"{}\" data-input=\"{slot}\"{shared}><legend class=\"live-label\">{label}</legend>{radios}</fieldset>",
                    id(slot)
                )
            }
        };
        html.push_str(&line);
        html.push('\n');
    }
    html.push_str("</div>\n");
    if !data.scenarios.is_empty() {
        html.push_str("<div class=\"live-scenarios\"><span class=\"live-label\">Load</span>");
        for (k, s) in data.scenarios.iter().enumerate() {
            html.push_str(&format!(
                " <button type=\"button\" data-scenario=\"{k}\">{}</button>",
                escape_html(&s.label)
            ));
        }
        html.push_str("</div>\n");
    }
    // Numbers and verdicts, then the charts, each in the order the closure produced them.
    let mut values = String::new();
    let mut charts: Vec<(usize, String, String)> = Vec::new();
    for (k, out) in data.outputs.iter().enumerate() {
        let value = data.value(k, &state).map_err(|e| e.to_string())?;
        let deps: Vec<String> = out.deps.iter().map(|&d| id(d)).collect();
        let deps = deps.join(" ");
        match out.kind {
            OutputKind::Number => values.push_str(&format!(
                "<div class=\"live-number\"><dt>{}</dt><dd><output data-output=\"{k}\" for=\"{deps}\">{}</output></dd></div>",
                escape_html(&out.label),
                escape_html(value)
            )),
            OutputKind::Verdict => {
                let (tone, word) = verdict(value);
                values.push_str(&format!(
                    "<div class=\"live-verdict\"><dt>{}</dt><dd><output data-output=\"{k}\" for=\"{deps}\" class=\"live-{tone}\">{}</output></dd></div>",
                    escape_html(&out.label),
                    escape_html(word)
                ))
            }
            OutputKind::ChartFrame => {
                let chart = out.chart.ok_or("a chart frame without a chart number")?;
                charts.push((chart, value.to_string(), escape_html(&out.label)));
            }
            OutputKind::ChartLayer => {
                let chart = out.chart.ok_or("a chart layer without a chart number")?;
                let entry = charts.iter_mut().find(|c| c.0 == chart).ok_or("a chart layer before its frame")?;
                entry.1.push_str(value);
            }
        }
    }
    if !values.is_empty() {
        html.push_str(&format!("<dl class=\"live-outputs\">{values}</dl>\n"));
    }
    for (chart, svg, _) in &charts {
        // SVG pieces hold no newlines (the runtime writes them on one line), so the block holds.
        html.push_str(&format!(
            "<div class=\"tangle-figure-body live-chart\" data-chart=\"{chart}\">{}{CHART_CLOSING}</div>\n",
            svg.replace('\n', " ")
        ));
    }
    html.push_str(&format!(
        "<p class=\"live-static-note\">Default values shown; with scripts on, the calculator follows its inputs.</p>\n<script type=\"application/json\" class=\"live-data\">{json}</script>\n</form>"
    ));
    Ok(html)
}

/// A verdict value's tone class and word (`+compute-bound` is good).
fn verdict(value: &str) -> (&'static str, &str) {
    match value.chars().next() {
        Some('+') => ("good", &value[1..]),
        Some('-') => ("bad", &value[1..]),
        Some('=') => ("neutral", &value[1..]),
        _ => ("neutral", value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tangle_runtime::widget::{Axis, Chart, Tone, Widget};

    fn sample() -> String {
        let mut w = Widget::new("demo");
        let n = w.slider("N", [1u32, 2, 4].map(|v| (v.to_string(), v)), "2");
        let t = w.toggle("Rates", ("datasheet", "measured"), false);
        let p = w.picker("Chip", [("A <1>", 1u32), ("B", 2)], "B");
        w.share(&p, "hardware");
        w.scenario("Big", [n.set("4"), t.set("measured")]);
        let w = w.outputs(move |at, out| {
            out.number("N squared", format!("{}", n.get(at) * n.get(at)));
            out.verdict("fits", if *t.get(at) { "yes" } else { "no" }, if *t.get(at) { Tone::Good } else { Tone::Bad });
            let mut c = Chart::new("demo chart", (300, 200), Axis::linear("x", 0.0, 4.0), Axis::linear("y", 0.0, 20.0));
            c.dot((f64::from(*n.get(at)), f64::from(*p.get(at))), tangle_runtime::figure::INK, "here");
            out.chart(c);
            Ok(())
        });
        w.data().unwrap()
    }

    #[test]
    fn the_form_shows_the_default_state_and_keeps_one_html_block() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ch01")).unwrap();
        std::fs::write(dir.path().join("ch01/demo.widget.json"), sample()).unwrap();
        let html = opening(dir.path(), "ch01", "demo", "1.2").unwrap();
        let block = html.split("<figcaption>").next().unwrap();
        assert!(!block.contains("\n\n"), "a blank line would end the HTML block");
        assert!(block.contains("<form class=\"live\""));
        assert!(block.contains("<output data-output=\"0\" for=\"live-demo-in0\">4</output>"), "{block}");
        assert!(block.contains("class=\"live-bad\">no</output>"));
        assert!(block.contains("<option value=\"0\">A &lt;1&gt;</option><option value=\"1\" selected>B</option>"));
        assert!(block.contains("data-shared=\"hardware\""));
        assert!(block.contains("<button type=\"button\" data-scenario=\"0\">Big</button>"));
        assert!(block.contains("<svg ") && block.contains("</g></svg></div>"));
        assert!(block.contains("<script type=\"application/json\" class=\"live-data\">{\"format\":1"));
        assert!(html.ends_with("<span class=\"tangle-figure-label\">Figure 1.2.</span> "));
    }

    #[test]
    fn a_missing_data_file_is_a_visible_gap_and_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let (gap, why) = opening(dir.path(), "ch01", "nope", "1.1").unwrap_err();
        assert!(gap.contains("tangle-figure-missing"));
        assert!(why.contains("tangle accept --chapter ch01`"), "{why}");
    }
}
