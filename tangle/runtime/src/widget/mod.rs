//! Live calculators: a run cell declares a widget, and the chapter program computes it over
//! every combination of its inputs, so that the reader's browser only looks values up.
//!
//! ```ignore
//! use tangle_runtime::widget::{Widget, Verdict};
//! let mut w = Widget::new("critical-batch");
//! let chip = w.picker("Hardware", CHIPS.map(|c| (c.name, c)), "TPU v5p");
//! let measured = w.toggle("Rates", ("datasheet", "measured"), false);
//! w.share(&chip, "hardware");
//! let w = w.outputs(move |at, out| {
//!     let hw = if *measured.get(at) { Hardware::measured(*chip.get(at)) } else { Hardware::spec(*chip.get(at)) };
//!     out.number("Critical batch per chip", format!("{:.0} tokens", ridge(&hw)?));
//!     Ok(())
//! });
//! w.write()?;
//! ```
//!
//! and the chapter places it with `{{#widget critical-batch | Caption.}}`. Inputs are discrete:
//! a picker over named values (a `<select>`), a slider over a list of allowed values (a range
//! input stepping through them), a toggle between two named states. Outputs are labelled
//! numbers and verdict words, formatted by Rust, and charts, drawn by Rust as SVG pieces in the
//! look of the book's figures ([`Chart`]).
//!
//! [`Widget::write`] evaluates the outputs closure at every combination and writes
//! `$TANGLE_FIGURES_DIR/<chapter>/<name>.widget.json`, next to the chapter's figures, so that
//! `cargo tangle check` compares it with the committed file as it compares figures: a stale
//! data file fails the check. The file is factored: each output is stored as a table over only
//! the inputs it was *seen* to depend on (found by evaluating every combination, so the
//! factoring is exact), with repeated values stored once. [`Data`] reads the file back, the
//! way the page's script does, so that a test can compare it with the native values.
//!
//! This module holds the declaration (inputs, scenarios, the outputs closure and what it
//! fills); the rest is split by what it owns:
//!
//! - `grid`: evaluating the closure at every combination, factoring the outputs into tables
//!   over the inputs they depend on, and comparing a data file with the native values;
//! - `data`: the data file, its layout and vocabulary ([`Control`], [`OutputKind`]), where it
//!   is written and how it is read back ([`Data`]);
//! - `chart`: drawing the charts as a frame and layers of SVG ([`Chart`]);
//! - `error`: what can go wrong, for all of them ([`WidgetError`]).
//!
//! The declaration imports from its parts and none of them imports it back, except `grid`,
//! which evaluates the declaration and which the declaration does not import.

mod chart;
mod data;
mod error;
mod grid;

use std::error::Error;
use std::fmt;
use std::path::PathBuf;

pub use chart::{Anchor, Axis, Bar, CHART_CLOSING, Chart, Corners, Scale, tick_text};
pub use data::{Control, Data, FORMAT, InputData, OutputData, OutputKind, ScenarioData, path_for};
pub use error::WidgetError;

/// The most input combinations one widget may have: every one is computed when the chapter
/// runs, and the page must stay small.
pub const MAX_COMBINATIONS: usize = 250_000;

/// One combination of input values, as indices into each input's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At(Vec<usize>);

impl At {
    /// The option index of input `slot`.
    pub fn index(&self, slot: usize) -> usize {
        self.0[slot]
    }
    /// The option indices of every input, in declaration order.
    pub fn indices(&self) -> &[usize] {
        &self.0
    }
}

/// A typed handle to one declared input: [`Choice::get`] gives the value at a combination.
#[derive(Debug, Clone)]
pub struct Choice<T> {
    slot: usize,
    labels: Vec<String>,
    values: Vec<T>,
}

impl<T> Choice<T> {
    /// This input's value at `at`.
    pub fn get<'a>(&'a self, at: &At) -> &'a T {
        &self.values[at.index(self.slot)]
    }
    /// This input's option label at `at`.
    pub fn label<'a>(&'a self, at: &At) -> &'a str {
        &self.labels[at.index(self.slot)]
    }
    /// The position of this input among the widget's inputs.
    pub fn slot(&self) -> usize {
        self.slot
    }
    /// A setting of this input to the option labelled `label`, for [`Widget::scenario`].
    pub fn set(&self, label: &str) -> Setting {
        Setting { slot: self.slot, label: label.to_string() }
    }
}

/// One input set to one option, by label (see [`Widget::scenario`]).
#[derive(Debug, Clone)]
pub struct Setting {
    slot: usize,
    label: String,
}

type Compute = Box<dyn Fn(&At, &mut Out) -> Result<(), Box<dyn Error>>>;

/// A live calculator: inputs, scenario buttons, and a closure from one combination of inputs
/// to outputs. See the module documentation.
pub struct Widget {
    name: String,
    inputs: Vec<InputData>,
    scenarios: Vec<ScenarioData>,
    problems: Vec<String>,
    compute: Option<Compute>,
}

impl fmt::Debug for Widget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Widget").field("name", &self.name).field("inputs", &self.inputs).finish_non_exhaustive()
    }
}

impl Widget {
    /// A widget named `name` (its file is `<name>.widget.json`, its directive
    /// `{{#widget name | caption}}`).
    pub fn new(name: &str) -> Self {
        Widget {
            name: name.to_string(),
            inputs: Vec::new(),
            scenarios: Vec::new(),
            problems: Vec::new(),
            compute: None,
        }
    }

    /// The widget's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn input<T>(&mut self, control: Control, label: &str, options: Vec<(String, T)>, default: &str) -> Choice<T> {
        let (labels, values): (Vec<String>, Vec<T>) = options.into_iter().unzip();
        let slot = self.inputs.len();
        if labels.is_empty() {
            self.problems.push(format!("input {label:?} has no options"));
        }
        for (i, l) in labels.iter().enumerate() {
            if labels[..i].contains(l) {
                self.problems.push(format!("input {label:?} has the option {l:?} twice"));
            }
        }
        let default = labels.iter().position(|l| l == default).unwrap_or_else(|| {
            self.problems
                .push(format!("input {label:?}: the default {default:?} is not one of its options {labels:?}"));
            0
        });
        self.inputs.push(InputData {
            control,
            label: label.to_string(),
            options: labels.clone(),
            default,
            shared: None,
        });
        Choice { slot, labels, values }
    }

    /// A picker over named values; `default` is the label selected at first.
    pub fn picker<T, S: Into<String>>(
        &mut self,
        label: &str,
        options: impl IntoIterator<Item = (S, T)>,
        default: &str,
    ) -> Choice<T> {
        let options = options.into_iter().map(|(s, t)| (s.into(), t)).collect();
        self.input(Control::Picker, label, options, default)
    }

    /// A slider over a list of allowed values, each with the text the page shows for it (formatted
    /// by the caller, so that "1,024" reads as the chapter prints it).
    pub fn slider<T, S: Into<String>>(
        &mut self,
        label: &str,
        options: impl IntoIterator<Item = (S, T)>,
        default: &str,
    ) -> Choice<T> {
        let options = options.into_iter().map(|(s, t)| (s.into(), t)).collect();
        self.input(Control::Slider, label, options, default)
    }

    /// A toggle between two named states: `false` is `states.0`, `true` is `states.1`.
    pub fn toggle(&mut self, label: &str, states: (&str, &str), default: bool) -> Choice<bool> {
        let initial = if default { states.1 } else { states.0 };
        self.input(Control::Toggle, label, vec![(states.0.to_string(), false), (states.1.to_string(), true)], initial)
    }

    /// Marks an input as part of the page's shared state under `key`: when the reader changes it,
    /// every other widget's input with the same key that has an option of the same label follows.
    pub fn share<T>(&mut self, choice: &Choice<T>, key: &str) {
        self.inputs[choice.slot].shared = Some(key.to_string());
    }

    /// A button that sets several inputs at once (a worked example, a published run).
    pub fn scenario(&mut self, label: &str, settings: impl IntoIterator<Item = Setting>) {
        let mut set = Vec::new();
        for s in settings {
            match self.inputs[s.slot].options.iter().position(|o| *o == s.label) {
                Some(i) => set.push((s.slot, i)),
                None => self.problems.push(format!(
                    "scenario {label:?}: input {:?} has no option {:?}",
                    self.inputs[s.slot].label, s.label
                )),
            }
        }
        self.scenarios.push(ScenarioData { label: label.to_string(), set });
    }

    /// Sets the closure that computes the outputs at one combination of inputs.
    pub fn outputs<F>(mut self, compute: F) -> Self
    where
        F: Fn(&At, &mut Out) -> Result<(), Box<dyn Error>> + 'static,
    {
        self.compute = Some(Box::new(compute));
        self
    }

    /// The outputs closure, once the declaration is checked (name, inputs, size of the grid).
    fn check_declaration(&self) -> Result<&Compute, WidgetError> {
        if !valid_name(&self.name) {
            return Err(WidgetError::BadName(self.name.clone()));
        }
        if let Some(problem) = self.problems.first() {
            return Err(WidgetError::Declaration(problem.clone()));
        }
        let compute =
            self.compute.as_ref().ok_or_else(|| WidgetError::Declaration("no outputs closure was given".into()))?;
        let total = self.inputs.iter().try_fold(1usize, |acc, i| acc.checked_mul(i.options.len()));
        let sizes: Vec<String> = self.inputs.iter().map(|i| i.options.len().to_string()).collect();
        let count = match total {
            Some(n) if n <= MAX_COMBINATIONS => return Ok(compute),
            Some(n) => n.to_string(),
            None => "uncountably many".to_string(),
        };
        Err(WidgetError::Declaration(format!(
            "{} has {count} combinations of inputs ({}), more than {MAX_COMBINATIONS}; offer fewer allowed values",
            self.name,
            sizes.join(" x ")
        )))
    }

    /// The default combination with some inputs set by label: `[("Hardware", "H100")]`.
    pub fn at_labels(&self, settings: &[(&str, &str)]) -> Result<At, WidgetError> {
        let mut at = self.default_at();
        for (input, option) in settings {
            let slot = self
                .inputs
                .iter()
                .position(|i| i.label == *input)
                .ok_or_else(|| WidgetError::Declaration(format!("{} has no input {input:?}", self.name)))?;
            at.0[slot] = self.inputs[slot].options.iter().position(|o| o == option).ok_or_else(|| {
                WidgetError::Declaration(format!("input {input:?} of {} has no option {option:?}", self.name))
            })?;
        }
        Ok(at)
    }

    /// The numbers and verdict words shown at `at`, by label (verdicts without their tone).
    pub fn shown(&self, at: &At) -> Result<Vec<(String, String)>, WidgetError> {
        Ok(self
            .evaluate(at)?
            .into_iter()
            .filter_map(|o| match o.kind {
                OutputKind::Number => Some((o.label, o.value)),
                OutputKind::Verdict => Some((o.label, o.value[1..].to_string())),
                _ => None,
            })
            .collect())
    }

    /// Computes every combination and writes `$TANGLE_FIGURES_DIR/<chapter>/<name>.widget.json`
    /// (only when its bytes change, and then atomically). Returns the path written.
    pub fn write(&self) -> Result<PathBuf, WidgetError> {
        if !valid_name(&self.name) {
            return Err(WidgetError::BadName(self.name.clone()));
        }
        let chapter = crate::chapter();
        if chapter.is_empty() {
            return Err(WidgetError::NoChapter);
        }
        static WRITTEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        if let Ok(mut written) = WRITTEN.lock() {
            if written.contains(&self.name) {
                return Err(WidgetError::Duplicate(self.name.clone()));
            }
            written.push(self.name.clone());
        }
        let json = self.data()?;
        let path = path_for(chapter, &self.name);
        crate::file::write_if_changed(&path, json.as_bytes()).map_err(|(at, e)| WidgetError::Io(at, e))?;
        Ok(path)
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// One output at one combination.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub kind: OutputKind,
    pub label: String,
    /// The chart a frame or layer belongs to (numbered in order within the widget).
    pub chart: Option<usize>,
    /// The text shown: a number's text, a verdict's tone and word, a chart piece's SVG.
    pub value: String,
}

/// The tone of a verdict word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Good,
    Bad,
    Neutral,
}

/// Where the outputs closure puts what one combination shows.
#[derive(Debug)]
pub struct Out {
    widget: String,
    items: Vec<Output>,
    charts: usize,
    /// The first chart that cannot be drawn as given ([`Chart`]'s `unplaceable`).
    unplaceable: Option<String>,
}

impl Out {
    /// A labelled number, formatted by the caller.
    pub fn number(&mut self, label: &str, text: impl Into<String>) {
        self.items.push(Output { kind: OutputKind::Number, label: label.into(), chart: None, value: text.into() });
    }

    /// A labelled verdict word.
    pub fn verdict(&mut self, label: &str, word: &str, tone: Tone) {
        let sign = match tone {
            Tone::Good => '+',
            Tone::Bad => '-',
            Tone::Neutral => '=',
        };
        self.items.push(Output {
            kind: OutputKind::Verdict,
            label: label.into(),
            chart: None,
            value: format!("{sign}{word}"),
        });
    }

    /// A chart: its frame and each of its layers become outputs of their own, so that a curve
    /// that depends on two inputs is stored once for the other inputs' values.
    pub fn chart(&mut self, chart: Chart) {
        let id = self.charts;
        self.charts += 1;
        let (frame, layers, unplaceable) = chart.into_pieces(&format!("live-{}-{id}", self.widget));
        if self.unplaceable.is_none() {
            self.unplaceable = unplaceable;
        }
        self.items.push(Output {
            kind: OutputKind::ChartFrame,
            label: format!("chart {id}"),
            chart: Some(id),
            value: frame,
        });
        for (k, layer) in layers.into_iter().enumerate() {
            self.items.push(Output {
                kind: OutputKind::ChartLayer,
                label: format!("layer {k}"),
                chart: Some(id),
                value: layer,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::{INK, Key};

    fn sample() -> Widget {
        let mut w = Widget::new("sample");
        let a = w.slider("A", [1u32, 2, 4, 8].map(|v| (v.to_string(), v)), "2");
        let b = w.picker("B", [("ten", 10u32), ("twenty", 20)], "ten");
        let t = w.toggle("T", ("off", "on"), false);
        w.scenario("both big", [a.set("8"), b.set("twenty")]);
        w.outputs(move |at, out| {
            let (a, b, t) = (*a.get(at), *b.get(at), *t.get(at));
            out.number("a only", format!("{a}"));
            out.number("a times b", format!("{}", a * b));
            out.verdict("t", if t { "on" } else { "off" }, if t { Tone::Good } else { Tone::Bad });
            let mut c = Chart::new("c", (200, 100), Axis::log("x", 1.0, 10.0), Axis::linear("y", 0.0, 30.0));
            c.line(Key::Solid(INK), &[(1.0, 0.0), (f64::from(a), f64::from(b))]);
            c.rule_y(f64::from(b), INK, "b");
            out.chart(c);
            Ok(())
        })
    }

    #[test]
    fn data_is_factored_by_observed_dependencies() {
        let w = sample();
        let text = w.data().unwrap();
        let data = Data::parse(&text).unwrap();
        let deps: Vec<&[usize]> = data.outputs.iter().map(|o| o.deps.as_slice()).collect();
        // a only; a and b; t; the frame depends on nothing; the line on a and b; the rule on b.
        assert_eq!(deps, vec![&[0][..], &[0, 1], &[2], &[], &[0, 1], &[1]]);
        assert_eq!(data.scenarios[0].set, vec![(0, 3), (1, 1)]);
        assert_eq!(data.value(1, &[3, 1, 0]).unwrap(), "160");
        assert_eq!(w.check_data(&text, 200).unwrap(), 16);
        assert_eq!(w.check_data(&text, 5).unwrap(), 5);
    }

    #[test]
    fn a_stale_file_is_caught() {
        let w = sample();
        let text = w.data().unwrap().replace("\"160\"", "\"161\"");
        let err = w.check_data(&text, 1000).unwrap_err();
        assert!(err.to_string().contains("161"), "{err}");
    }

    #[test]
    fn declarations_are_checked() {
        let mut w = Widget::new("bad");
        w.slider("A", [(String::from("1"), 1)], "2");
        let w = w.outputs(|_, out| {
            out.number("x", "1");
            Ok(())
        });
        assert!(matches!(w.data(), Err(WidgetError::Declaration(_))));
        let mut w = Widget::new("shape");
        let t = w.toggle("T", ("a", "b"), false);
        let w = w.outputs(move |at, out| {
            out.number(if *t.get(at) { "one" } else { "two" }, "1");
            Ok(())
        });
        assert!(matches!(w.data(), Err(WidgetError::Shape { .. })));
        assert!(matches!(Widget::new("Bad Name").write(), Err(WidgetError::BadName(_))));
        // Too many combinations: the count, and the inputs' sizes it comes from.
        let mut w = Widget::new("big");
        for label in ["A", "B", "C", "D", "E"] {
            w.slider(label, (0u32..50).map(|v| (v.to_string(), v)), "0");
        }
        let w = w.outputs(|_, out| {
            out.number("x", "1");
            Ok(())
        });
        let err = w.data().unwrap_err().to_string();
        assert!(
            err.contains("big has 312500000 combinations of inputs (50 x 50 x 50 x 50 x 50), more than 250000"),
            "{err}"
        );
    }

    #[test]
    fn a_point_a_chart_cannot_place_fails_at_its_inputs() {
        let with_dot = |y_at_8: f64| {
            let mut w = Widget::new("dots");
            let a = w.slider("A", [1u32, 2, 8].map(|v| (v.to_string(), v)), "2");
            w.outputs(move |at, out| {
                let a = *a.get(at);
                let mut c = Chart::new("queue", (200, 100), Axis::log("x", 1.0, 10.0), Axis::linear("y", 0.0, 30.0));
                // A curve may leave out what is undefined; a dot must be somewhere.
                c.line(Key::Solid(INK), &[(1.0, 1.0), (2.0, f64::NAN), (f64::from(a), 5.0)]);
                c.dot((f64::from(a), if a == 8 { y_at_8 } else { 1.0 }), INK, "now");
                out.chart(c);
                Ok(())
            })
        };
        assert!(with_dot(2.0).data().is_ok());
        let err = with_dot(f64::NAN).data().unwrap_err().to_string();
        assert!(err.contains("failed at A = 8") && err.contains("chart \"queue\" has a point at (8, NaN)"), "{err}");
        let err = with_dot(f64::INFINITY).data().unwrap_err().to_string();
        assert!(err.contains("(8, inf)"), "{err}");
        // Zero has no place on a logarithmic axis.
        let mut w = Widget::new("log");
        w.toggle("T", ("a", "b"), false);
        let w = w.outputs(|_, out| {
            let mut c = Chart::new("log", (200, 100), Axis::log("x", 1.0, 10.0), Axis::linear("y", 0.0, 1.0));
            c.dot((0.0, 0.5), INK, "");
            out.chart(c);
            Ok(())
        });
        assert!(w.data().unwrap_err().to_string().contains("(0, 0.5)"));
        // An axis that can place nothing is refused at once (a log axis from 0 would have asked
        // for ticks at every power of ten down to the smallest float), and a tick that is no
        // number is a point with no place.
        for (axis, says) in [
            (Axis::log("u", 0.0, 1.0), "axis \"u\" (from 0 to 1) is logarithmic, and needs bounds above 0"),
            (Axis::linear("v", 2.0, 2.0), "axis \"v\" (from 2 to 2) needs two different finite bounds"),
            (Axis::linear("w", 0.0, 1.0).ticks([(f64::NAN, "nan".to_string())]), "has a point at (NaN, 0)"),
        ] {
            let mut w = Widget::new("axes");
            w.toggle("T", ("a", "b"), false);
            let w = w.outputs(move |_, out| {
                out.chart(Chart::new("c", (200, 100), axis.clone(), Axis::linear("y", 0.0, 1.0)));
                Ok(())
            });
            let err = w.data().unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }
}
