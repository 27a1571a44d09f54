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

use std::collections::HashMap;
use std::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};

use plotters::style::RGBColor;

use crate::figure::{self, INK, Key};

/// The most input combinations one widget may have: every one is computed when the chapter
/// runs, and the page must stay small.
pub const MAX_COMBINATIONS: usize = 250_000;

/// The version of the data file's layout; the page's script checks it.
pub const FORMAT: u32 = 1;

/// The kind of control an input is shown as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// A `<select>` over named values (hardware, model, scenario presets).
    Picker,
    /// A range input that steps through a list of allowed values (powers of two, ...).
    Slider,
    /// Two named states, shown as a pair of radio buttons.
    Toggle,
}

impl Control {
    fn word(self) -> &'static str {
        match self {
            Control::Picker => "picker",
            Control::Slider => "slider",
            Control::Toggle => "toggle",
        }
    }
    fn from_word(word: &str) -> Option<Self> {
        [Control::Picker, Control::Slider, Control::Toggle].into_iter().find(|c| c.word() == word)
    }
}

/// What kind of thing an output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// A labelled number, as text.
    Number,
    /// A labelled verdict word with a tone: the value starts with `+` (good), `-` (bad) or `=`.
    Verdict,
    /// The frame of chart `chart` (an opening `<svg>`, axes, legend): the first piece.
    ChartFrame,
    /// One layer drawn on chart `chart` (a curve, a point, bars).
    ChartLayer,
}

impl OutputKind {
    fn word(self) -> &'static str {
        match self {
            OutputKind::Number => "number",
            OutputKind::Verdict => "verdict",
            OutputKind::ChartFrame => "frame",
            OutputKind::ChartLayer => "layer",
        }
    }
    fn from_word(word: &str) -> Option<Self> {
        [OutputKind::Number, OutputKind::Verdict, OutputKind::ChartFrame, OutputKind::ChartLayer]
            .into_iter()
            .find(|k| k.word() == word)
    }
}

/// What closes a chart after its frame and layers (the frame opens a clipped group).
pub const CHART_CLOSING: &str = "</g></svg>";

/// What can go wrong declaring or writing a widget.
#[derive(Debug)]
pub enum WidgetError {
    /// The name would not make a plain file name (`a-z`, `0-9`, `-`, `_`).
    BadName(String),
    /// [`crate::init`] was not called, so the widget has no chapter directory.
    NoChapter,
    /// Another widget of this chapter already has this name.
    Duplicate(String),
    /// The declaration is inconsistent (a default that is not an option, no outputs, ...).
    Declaration(String),
    /// The outputs closure failed at one combination of inputs (named by their values).
    Compute { at: String, error: String },
    /// The outputs at two combinations have different shapes (other labels, other charts).
    Shape { at: String, why: String },
    /// Writing the file failed.
    Io(PathBuf, std::io::Error),
    /// A data file could not be read back.
    Data(String),
    /// A data file disagrees with the native values.
    Mismatch(String),
}

impl fmt::Display for WidgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WidgetError::BadName(n) => write!(f, "widget name {n:?} must be lower-case letters, digits, '-' or '_'"),
            WidgetError::NoChapter => write!(f, "tangle_runtime::init(chapter) must run before a widget is written"),
            WidgetError::Duplicate(n) => {
                write!(f, "a widget named {n:?} was already written by this chapter; give each widget its own name")
            }
            WidgetError::Declaration(why) => write!(f, "widget declaration: {why}"),
            WidgetError::Compute { at, error } => write!(f, "widget outputs failed at {at}: {error}"),
            WidgetError::Shape { at, why } => write!(
                f,
                "widget outputs at {at} differ in shape from the default state's ({why}); every combination must produce the same labelled outputs and charts with the same number of layers"
            ),
            WidgetError::Io(p, e) => write!(f, "cannot write {}: {e}", p.display()),
            WidgetError::Data(why) => write!(f, "widget data file: {why}"),
            WidgetError::Mismatch(why) => write!(f, "widget data file disagrees with the native values: {why}"),
        }
    }
}

impl Error for WidgetError {}

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

#[derive(Debug, Clone)]
struct Input {
    control: Control,
    label: String,
    options: Vec<String>,
    default: usize,
    shared: Option<String>,
}

#[derive(Debug, Clone)]
struct Scenario {
    label: String,
    set: Vec<(usize, usize)>,
}

type Compute = Box<dyn Fn(&At, &mut Out) -> Result<(), Box<dyn Error>>>;

/// A live calculator: inputs, scenario buttons, and a closure from one combination of inputs
/// to outputs. See the module documentation.
pub struct Widget {
    name: String,
    inputs: Vec<Input>,
    scenarios: Vec<Scenario>,
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
        self.inputs.push(Input { control, label: label.to_string(), options: labels.clone(), default, shared: None });
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
        self.scenarios.push(Scenario { label: label.to_string(), set });
    }

    /// Sets the closure that computes the outputs at one combination of inputs.
    pub fn outputs<F>(mut self, compute: F) -> Self
    where
        F: Fn(&At, &mut Out) -> Result<(), Box<dyn Error>> + 'static,
    {
        self.compute = Some(Box::new(compute));
        self
    }

    /// How many combinations of inputs there are.
    pub fn combinations(&self) -> usize {
        self.inputs.iter().map(|i| i.options.len()).product()
    }

    /// The combination every input starts at.
    pub fn default_at(&self) -> At {
        At(self.inputs.iter().map(|i| i.default).collect())
    }

    /// The combination numbered `n` (the first input varies slowest).
    fn at(&self, mut n: usize) -> At {
        let mut idx = vec![0; self.inputs.len()];
        for (slot, input) in self.inputs.iter().enumerate().rev() {
            idx[slot] = n % input.options.len();
            n /= input.options.len();
        }
        At(idx)
    }

    fn describe(&self, at: &At) -> String {
        let parts: Vec<String> =
            self.inputs.iter().zip(&at.0).map(|(i, &k)| format!("{} = {}", i.label, i.options[k])).collect();
        if parts.is_empty() { "the only combination".to_string() } else { parts.join(", ") }
    }

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
        match total {
            Some(n) if n <= MAX_COMBINATIONS => Ok(compute),
            _ => Err(WidgetError::Declaration(format!(
                "{} has more than {MAX_COMBINATIONS} combinations of inputs; offer fewer allowed values",
                self.name
            ))),
        }
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

    /// The outputs at one combination, as the page shows them: (kind, label, value) in order.
    pub fn evaluate(&self, at: &At) -> Result<Vec<Output>, WidgetError> {
        let compute = self.check_declaration()?;
        let mut out = Out { widget: self.name.clone(), items: Vec::new(), charts: 0 };
        compute(at, &mut out).map_err(|e| WidgetError::Compute { at: self.describe(at), error: e.to_string() })?;
        if out.items.is_empty() {
            return Err(WidgetError::Declaration("the outputs closure produced no outputs".into()));
        }
        Ok(out.items)
    }

    /// The data file's text: every output at every combination, factored (module docs).
    pub fn data(&self) -> Result<String, WidgetError> {
        self.check_declaration()?;
        let total = self.combinations();
        let first = self.evaluate(&self.default_at())?;
        // ids[item][combination]: the value's index among that item's distinct values.
        let mut pools: Vec<(HashMap<String, u32>, Vec<String>)> = first.iter().map(|_| Default::default()).collect();
        let mut ids: Vec<Vec<u32>> = first.iter().map(|_| Vec::with_capacity(total)).collect();
        for n in 0..total {
            let at = self.at(n);
            let items = self.evaluate(&at)?;
            if items.len() != first.len() {
                return Err(WidgetError::Shape {
                    at: self.describe(&at),
                    why: format!("{} outputs instead of {}", items.len(), first.len()),
                });
            }
            for (k, (item, model)) in items.into_iter().zip(&first).enumerate() {
                if (item.kind, &item.label, item.chart) != (model.kind, &model.label, model.chart) {
                    return Err(WidgetError::Shape {
                        at: self.describe(&at),
                        why: format!(
                            "output {k} is {:?} {:?}, not {:?} {:?}",
                            item.kind, item.label, model.kind, model.label
                        ),
                    });
                }
                let (map, list) = &mut pools[k];
                let next = list.len() as u32;
                let id = *map.entry(item.value).or_insert_with_key(|v| {
                    list.push(v.clone());
                    next
                });
                ids[k].push(id);
            }
        }
        let sizes: Vec<usize> = self.inputs.iter().map(|i| i.options.len()).collect();
        let strides: Vec<usize> = (0..sizes.len()).map(|s| sizes[s + 1..].iter().product()).collect();
        let mut json = String::new();
        json.push_str(&format!("{{\"format\":{FORMAT},\"widget\":{},\"inputs\":[", string(&self.name)));
        for (s, input) in self.inputs.iter().enumerate() {
            if s > 0 {
                json.push(',');
            }
            json.push_str(&format!(
                "{{\"control\":\"{}\",\"label\":{},\"options\":{},\"default\":{}",
                input.control.word(),
                string(&input.label),
                strings(&input.options),
                input.default
            ));
            if let Some(key) = &input.shared {
                json.push_str(&format!(",\"shared\":{}", string(key)));
            }
            json.push('}');
        }
        json.push_str("],\"scenarios\":[");
        for (k, sc) in self.scenarios.iter().enumerate() {
            if k > 0 {
                json.push(',');
            }
            let set: Vec<String> = sc.set.iter().map(|(s, i)| format!("[{s},{i}]")).collect();
            json.push_str(&format!("{{\"label\":{},\"set\":[{}]}}", string(&sc.label), set.join(",")));
        }
        json.push_str("],\"outputs\":[");
        for (k, model) in first.iter().enumerate() {
            let table = &ids[k];
            // Input s is a dependency if changing it alone ever changes the value.
            let deps: Vec<usize> = (0..sizes.len())
                .filter(|&s| {
                    (0..total).any(|n| !(n / strides[s]).is_multiple_of(sizes[s]) && table[n] != table[n - strides[s]])
                })
                .collect();
            // The table over the dependencies only, first dependency varying slowest.
            let sub_total: usize = deps.iter().map(|&s| sizes[s]).product();
            let mut sub = Vec::with_capacity(sub_total);
            for m in 0..sub_total {
                let (mut rest, mut n) = (m, 0);
                for &s in deps.iter().rev() {
                    n += (rest % sizes[s]) * strides[s];
                    rest /= sizes[s];
                }
                sub.push(table[n]);
            }
            // Renumber the values in order of first use, so the file does not depend on which
            // combination was evaluated first.
            let mut order: Vec<Option<u32>> = vec![None; pools[k].1.len()];
            let mut values = Vec::new();
            let mut index = Vec::with_capacity(sub.len());
            for id in sub {
                let new = *order[id as usize].get_or_insert_with(|| {
                    values.push(pools[k].1[id as usize].clone());
                    values.len() as u32 - 1
                });
                index.push(new);
            }
            if k > 0 {
                json.push(',');
            }
            json.push_str(&format!("{{\"kind\":\"{}\",\"label\":{}", model.kind.word(), string(&model.label)));
            if let Some(chart) = model.chart {
                json.push_str(&format!(",\"chart\":{chart}"));
            }
            let deps: Vec<String> = deps.iter().map(usize::to_string).collect();
            json.push_str(&format!(",\"deps\":[{}],\"values\":{}", deps.join(","), strings(&values)));
            if values.len() < index.len() {
                let index: Vec<String> = index.iter().map(u32::to_string).collect();
                json.push_str(&format!(",\"index\":[{}]", index.join(",")));
            }
            json.push('}');
        }
        json.push_str("]}\n");
        Ok(json)
    }

    /// Computes every combination and writes `$TANGLE_FIGURES_DIR/<chapter>/<name>.widget.json`
    /// (only when its bytes change). Returns the path written.
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
        write_if_changed(&path, &json)?;
        Ok(path)
    }

    /// Compares a data file with the native values: the declared inputs must match, and at
    /// `at_least` combinations (all of them when there are fewer; always the default one,
    /// the others spread over the grid by a fixed pseudo-random sequence) every output read
    /// from the file as the page reads it must equal the output computed here. Returns how
    /// many combinations were compared.
    pub fn check_data(&self, json: &str, at_least: usize) -> Result<usize, WidgetError> {
        self.check_declaration()?;
        let data = Data::parse(json)?;
        if data.name != self.name {
            return Err(WidgetError::Mismatch(format!("the file is for widget {:?}, not {:?}", data.name, self.name)));
        }
        let declared: Vec<(Control, &str, &[String], usize)> =
            self.inputs.iter().map(|i| (i.control, i.label.as_str(), i.options.as_slice(), i.default)).collect();
        let stored: Vec<(Control, &str, &[String], usize)> =
            data.inputs.iter().map(|i| (i.control, i.label.as_str(), i.options.as_slice(), i.default)).collect();
        if declared != stored {
            return Err(WidgetError::Mismatch(format!("inputs differ: declared {declared:?}, stored {stored:?}")));
        }
        let total = self.combinations();
        let mut sample: Vec<usize> = Vec::new();
        if total <= at_least {
            sample.extend(0..total);
        } else {
            let default = self.default_at();
            let at = |n: usize| self.at(n);
            sample.push((0..total).find(|&n| at(n) == default).unwrap_or(0));
            let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
            while sample.len() < at_least {
                // splitmix64: deterministic, spread over the whole grid.
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                let n = (z % total as u64) as usize;
                if !sample.contains(&n) {
                    sample.push(n);
                }
            }
        }
        for &n in &sample {
            let at = self.at(n);
            let native = self.evaluate(&at)?;
            if native.len() != data.outputs.len() {
                return Err(WidgetError::Mismatch(format!(
                    "{} outputs computed, {} stored",
                    native.len(),
                    data.outputs.len()
                )));
            }
            for (k, out) in native.iter().enumerate() {
                let stored = data.value(k, at.indices())?;
                let meta = &data.outputs[k];
                if (meta.kind, meta.label.as_str(), meta.chart) != (out.kind, out.label.as_str(), out.chart) {
                    return Err(WidgetError::Mismatch(format!(
                        "output {k} is {:?} {:?} in the file",
                        meta.kind, meta.label
                    )));
                }
                if stored != out.value {
                    return Err(WidgetError::Mismatch(format!(
                        "at {}: output {k} ({}) is {:?} in the file but {:?} computed",
                        self.describe(&at),
                        out.label,
                        clip(stored),
                        clip(&out.value)
                    )));
                }
            }
        }
        Ok(sample.len())
    }
}

fn clip(s: &str) -> String {
    if s.len() <= 80 {
        return s.to_string();
    }
    let mut end = 80;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Where widget `name` of `chapter` goes: beside the chapter's figures.
pub fn path_for(chapter: &str, name: &str) -> PathBuf {
    let dir =
        std::env::var_os(figure::DIR_ENV).map(PathBuf::from).unwrap_or_else(|| PathBuf::from(figure::DEFAULT_DIR));
    dir.join(chapter).join(format!("{name}.widget.json"))
}

fn write_if_changed(path: &Path, contents: &str) -> Result<(), WidgetError> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == contents) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| WidgetError::Io(dir.to_path_buf(), e))?;
    }
    std::fs::write(path, contents).map_err(|e| WidgetError::Io(path.to_path_buf(), e))
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
        let clip = format!("live-{}-{id}", self.widget);
        let frame = chart.frame(&clip);
        self.items.push(Output {
            kind: OutputKind::ChartFrame,
            label: format!("chart {id}"),
            chart: Some(id),
            value: frame,
        });
        for (k, layer) in chart.layers.into_iter().enumerate() {
            self.items.push(Output {
                kind: OutputKind::ChartLayer,
                label: format!("layer {k}"),
                chart: Some(id),
                value: layer,
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Charts: small SVG pieces in the look of the book's plotters figures.

/// Text size in plotters' pixels, as the book's figures use it (SVG `font-size` = size / 1.24).
const TEXT: f64 = 15.0;

fn font_size() -> String {
    num(TEXT / 1.24)
}

fn text_width(text: &str) -> f64 {
    figure::text(TEXT).font.box_size(text).map(|(w, _)| f64::from(w)).unwrap_or(text.len() as f64 * 8.0)
}

/// How an axis maps values to pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
}

/// One axis of a chart: its description, scale, range and tick labels.
#[derive(Debug, Clone)]
pub struct Axis {
    label: String,
    scale: Scale,
    lo: f64,
    hi: f64,
    ticks: Option<Vec<(f64, String)>>,
}

impl Axis {
    pub fn linear(label: &str, lo: f64, hi: f64) -> Self {
        Axis { label: label.into(), scale: Scale::Linear, lo, hi, ticks: None }
    }
    pub fn log(label: &str, lo: f64, hi: f64) -> Self {
        Axis { label: label.into(), scale: Scale::Log, lo, hi, ticks: None }
    }
    /// Named rows or columns: the range is `0..names.len()` and name `i` labels `i + 0.5`.
    pub fn bands(label: &str, names: &[&str]) -> Self {
        let ticks = names.iter().enumerate().map(|(i, n)| (i as f64 + 0.5, n.to_string())).collect();
        Axis { label: label.into(), scale: Scale::Linear, lo: 0.0, hi: names.len() as f64, ticks: Some(ticks) }
    }
    /// Tick positions and their labels, instead of the automatic ones.
    pub fn ticks(mut self, ticks: impl IntoIterator<Item = (f64, String)>) -> Self {
        self.ticks = Some(ticks.into_iter().collect());
        self
    }

    fn fraction(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => (v - self.lo) / (self.hi - self.lo),
            Scale::Log => (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln()),
        }
    }

    fn auto_ticks(&self) -> Vec<(f64, String)> {
        if let Some(t) = &self.ticks {
            return t.clone();
        }
        let (lo, hi) = (self.lo.min(self.hi), self.lo.max(self.hi));
        let mut out = Vec::new();
        match self.scale {
            Scale::Log => {
                let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
                let mults: &[f64] = if b - a <= 2 { &[1.0, 2.0, 5.0] } else { &[1.0] };
                let step = if b - a > 7 { 2 } else { 1 };
                for e in (a..=b).step_by(step) {
                    for m in mults {
                        let v = m * 10f64.powi(e);
                        if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                            out.push((v, tick_text(v)));
                        }
                    }
                }
            }
            Scale::Linear => {
                let span = hi - lo;
                if span > 0.0 && span.is_finite() {
                    let raw = span / 6.0;
                    let mag = 10f64.powf(raw.log10().floor());
                    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
                    let mut k = (lo / step).ceil();
                    while k * step <= hi + step * 1e-9 {
                        let v = k * step + 0.0;
                        out.push((v, tick_text(v)));
                        k += 1.0;
                    }
                }
            }
        }
        out
    }
}

/// A tick label: grouped digits up to 9,999, then k, M, G, T with three significant figures.
pub fn tick_text(v: f64) -> String {
    let a = v.abs();
    let three = |x: f64| {
        let s = format!("{:.3}", x);
        let s = s.trim_end_matches('0').trim_end_matches('.').to_string();
        if s == "-0" { "0".to_string() } else { s }
    };
    if a >= 1e4 {
        for (scale, unit) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
            if a >= scale {
                let x = v / scale;
                let digits = if x.abs() >= 100.0 {
                    0
                } else if x.abs() >= 10.0 {
                    1
                } else {
                    2
                };
                let s = format!("{x:.digits$}");
                let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
                return format!("{s}{unit}");
            }
        }
    }
    if a >= 1000.0 && v.fract() == 0.0 {
        let n = a as u64;
        let s = n.to_string();
        return format!("{}{},{}", if v < 0.0 { "-" } else { "" }, &s[..s.len() - 3], &s[s.len() - 3..]);
    }
    if a != 0.0 && a < 0.01 {
        return format!("{v:.0e}");
    }
    three(v)
}

/// A pixel coordinate, to a tenth of a pixel, without a trailing `.0` or a negative zero.
fn num(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0 + 0.0;
    format!("{r}")
}

fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// XML text and attribute escaping.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Where a text is anchored horizontally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn word(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// Two opposite corners of a box, in data coordinates.
pub type Corners = ((f64, f64), (f64, f64));

/// One bar or box of a [`Chart::rects`] layer, in data coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub from: (f64, f64),
    pub to: (f64, f64),
    pub fill: RGBColor,
    /// Text centred in the box (empty for none).
    pub label: String,
}

/// A chart drawn the way the book's figures are: white ground, light grid, ink axes, the
/// bundled font, greys. Data coordinates are mapped to pixels here; the page only places the
/// resulting pieces.
#[derive(Debug, Clone)]
pub struct Chart {
    title: String,
    width: u32,
    height: u32,
    x: Axis,
    y: Axis,
    legend: Vec<(Key, String)>,
    layers: Vec<String>,
    margins: (f64, f64, f64, f64),
}

impl Chart {
    /// A `width` by `height` chart titled `title` (its accessible name) with these axes.
    pub fn new(title: &str, (width, height): (u32, u32), x: Axis, y: Axis) -> Self {
        let left = if y.ticks.as_ref().is_some_and(|t| t.iter().any(|(_, l)| l.len() > 6)) { 110.0 } else { 72.0 };
        Chart {
            title: title.into(),
            width,
            height,
            x,
            y,
            legend: Vec::new(),
            layers: Vec::new(),
            margins: (left, 24.0, 40.0, 52.0),
        }
    }

    /// Legend entries, in one row above the plot.
    pub fn legend(mut self, entries: &[(Key, &str)]) -> Self {
        self.legend = entries.iter().map(|(k, l)| (*k, l.to_string())).collect();
        self
    }

    /// The plot area: left, top, right, bottom in pixels.
    fn area(&self) -> (f64, f64, f64, f64) {
        let (l, r, t, b) = self.margins;
        (l, t, f64::from(self.width) - r, f64::from(self.height) - b)
    }

    fn px(&self, (x, y): (f64, f64)) -> (f64, f64) {
        let (l, t, r, b) = self.area();
        (l + self.x.fraction(x) * (r - l), b - self.y.fraction(y) * (b - t))
    }

    fn point(&self, p: (f64, f64)) -> String {
        let (x, y) = self.px(p);
        format!("{},{}", num(x), num(y))
    }

    /// A curve through `points`, solid, dashed or dotted as `key` says.
    pub fn line(&mut self, key: Key, points: &[(f64, f64)]) {
        let pts: Vec<String> =
            points.iter().filter(|p| p.0.is_finite() && p.1.is_finite()).map(|&p| self.point(p)).collect();
        let (color, dash) = match key {
            Key::Solid(c) | Key::Swatch(c) | Key::Marker(c) => (c, ""),
            Key::Dashed(c) => (c, " stroke-dasharray=\"9 5\""),
            Key::Dotted(c) => (c, " stroke-dasharray=\"0 5\" stroke-linecap=\"round\""),
        };
        let width = if matches!(key, Key::Dotted(_)) { 3 } else { 2 };
        self.layers.push(format!(
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{width}\"{dash} points=\"{}\"/>",
            hex(color),
            pts.join(" ")
        ));
    }

    /// A filled point, with a label to its upper right when `label` is not empty.
    pub fn dot(&mut self, at: (f64, f64), color: RGBColor, label: &str) {
        let (x, y) = self.px(at);
        let mut s = format!("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/>", num(x), num(y), hex(color));
        if !label.is_empty() {
            s.push_str(&self.text_at((x + 9.0, y - 8.0), label, Anchor::Start));
        }
        self.layers.push(s);
    }

    /// A ring around a point (the chosen one of several).
    pub fn ring(&mut self, at: (f64, f64), color: RGBColor) {
        let (x, y) = self.px(at);
        self.layers.push(format!(
            "<circle cx=\"{}\" cy=\"{}\" r=\"9\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
            num(x),
            num(y),
            hex(color)
        ));
    }

    /// Several points in one layer.
    pub fn dots(&mut self, points: &[(f64, f64)], color: RGBColor) {
        let s: String = points
            .iter()
            .map(|&p| {
                let (x, y) = self.px(p);
                format!("<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"/>", num(x), num(y), hex(color))
            })
            .collect();
        self.layers.push(s);
    }

    /// Boxes (bars, a timeline), in one layer.
    pub fn rects(&mut self, bars: &[Bar]) {
        let mut s = String::new();
        for bar in bars {
            let (x0, y0) = self.px(bar.from);
            let (x1, y1) = self.px(bar.to);
            let (x, y, w, h) = (x0.min(x1), y0.min(y1), (x1 - x0).abs(), (y1 - y0).abs());
            s.push_str(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"1\"/>",
                num(x),
                num(y),
                num(w),
                num(h),
                hex(bar.fill),
                hex(INK)
            ));
            if !bar.label.is_empty() && text_width(&bar.label) + 4.0 <= w {
                let ink = if bar.fill.0 < 110 { "#FFFFFF" } else { "#222222" };
                s.push_str(&format!(
                    "<text x=\"{}\" y=\"{}\" dy=\"0.35em\" text-anchor=\"middle\" font-size=\"{}\" fill=\"{ink}\">{}</text>",
                    num(x + w / 2.0),
                    num(y + h / 2.0),
                    font_size(),
                    xml(&bar.label)
                ));
            }
        }
        self.layers.push(s);
    }

    /// Many boxes of one fill in one layer, drawn as one path with white edges (a timeline).
    pub fn boxes(&mut self, fill: RGBColor, boxes: &[Corners]) {
        if boxes.is_empty() {
            self.blank();
            return;
        }
        let mut d = String::new();
        for &(from, to) in boxes {
            let (x0, y0) = self.px(from);
            let (x1, y1) = self.px(to);
            let (x, y, w, h) = (x0.min(x1), y0.min(y1), (x1 - x0).abs(), (y1 - y0).abs());
            d.push_str(&format!("M{} {}h{}v{}h-{}z", num(x), num(y), num(w), num(h), num(w)));
        }
        self.layers.push(format!("<path d=\"{d}\" fill=\"{}\" stroke=\"#FFFFFF\" stroke-width=\"1\"/>", hex(fill)));
    }

    /// A layer that draws nothing, for a combination whose chart has less to show than others
    /// (every combination must have the same number of layers).
    pub fn blank(&mut self) {
        self.layers.push(String::new());
    }

    /// A vertical line across the plot at `x`, with a label at its top.
    pub fn rule_x(&mut self, x: f64, color: RGBColor, label: &str) {
        let (l, t, _, b) = self.area();
        let (px, _) = self.px((x, self.y.lo));
        let _ = l;
        let mut s = format!(
            "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>",
            num(px),
            num(t),
            num(b),
            hex(color)
        );
        if !label.is_empty() {
            s.push_str(&self.text_at((px + 6.0, t + 16.0), label, Anchor::Start));
        }
        self.layers.push(s);
    }

    /// A horizontal line across the plot at `y`, with a label above its right end.
    pub fn rule_y(&mut self, y: f64, color: RGBColor, label: &str) {
        let (l, _, r, _) = self.area();
        let (_, py) = self.px((self.x.lo, y));
        let mut s = format!(
            "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>",
            num(l),
            num(py),
            num(r),
            hex(color)
        );
        if !label.is_empty() {
            s.push_str(&self.text_at((r - 6.0, py - 6.0), label, Anchor::End));
        }
        self.layers.push(s);
    }

    /// A text at a data point.
    pub fn text(&mut self, at: (f64, f64), text: &str, anchor: Anchor) {
        let p = self.px(at);
        let s = self.text_at(p, text, anchor);
        self.layers.push(s);
    }

    fn text_at(&self, (x, y): (f64, f64), text: &str, anchor: Anchor) -> String {
        format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"{}\" fill=\"#222222\">{}</text>",
            num(x),
            num(y),
            anchor.word(),
            font_size(),
            xml(text)
        )
    }

    /// The opening `<svg>`, white ground, grid, axes, ticks, descriptions and legend, and the
    /// opening of the clipped group the layers go in ([`CHART_CLOSING`] closes both).
    fn frame(&self, clip: &str) -> String {
        let (w, h) = (self.width, self.height);
        let (l, t, r, b) = self.area();
        let fs = font_size();
        let mut s = format!(
            "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\" font-family=\"sans-serif\"><rect width=\"{w}\" height=\"{h}\" fill=\"#FFFFFF\"/>",
            xml(&self.title)
        );
        let grid = hex(figure::gray(0.92));
        let xt = self.x.auto_ticks();
        let yt = self.y.auto_ticks();
        for (v, _) in &xt {
            let (px, _) = self.px((*v, self.y.lo));
            s.push_str(&format!(
                "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{grid}\"/>",
                num(px),
                num(t),
                num(b)
            ));
        }
        for (v, _) in &yt {
            let (_, py) = self.px((self.x.lo, *v));
            s.push_str(&format!(
                "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{grid}\"/>",
                num(l),
                num(py),
                num(r)
            ));
        }
        let ink = hex(INK);
        s.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{ink}\" points=\"{},{} {},{} {},{}\"/>",
            num(l),
            num(t),
            num(l),
            num(b),
            num(r),
            num(b)
        ));
        for (v, label) in &xt {
            let (px, _) = self.px((*v, self.y.lo));
            s.push_str(&format!(
                "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{ink}\"/><text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\" font-size=\"{fs}\" fill=\"{ink}\">{4}</text>",
                num(px),
                num(b),
                num(b + 5.0),
                num(b + 20.0),
                xml(label)
            ));
        }
        for (v, label) in &yt {
            let (_, py) = self.px((self.x.lo, *v));
            s.push_str(&format!(
                "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{ink}\"/><text x=\"{3}\" y=\"{1}\" dy=\"0.35em\" text-anchor=\"end\" font-size=\"{fs}\" fill=\"{ink}\">{4}</text>",
                num(l - 5.0),
                num(py),
                num(l),
                num(l - 8.0),
                xml(label)
            ));
        }
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{fs}\" fill=\"{ink}\">{}</text>",
            num((l + r) / 2.0),
            num(f64::from(h) - 10.0),
            xml(&self.x.label)
        ));
        if !self.y.label.is_empty() {
            let (cx, cy) = (16.0, (t + b) / 2.0);
            s.push_str(&format!(
                "<text x=\"{0}\" y=\"{1}\" transform=\"rotate(-90 {0} {1})\" text-anchor=\"middle\" font-size=\"{fs}\" fill=\"{ink}\">{2}</text>",
                num(cx),
                num(cy),
                xml(&self.y.label)
            ));
        }
        // The legend, as figure::legend draws it: key, then label, in a row.
        let (mut x, cy) = (l, 18.0);
        for (key, label) in &self.legend {
            match *key {
                Key::Swatch(c) => s.push_str(&format!(
                    "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\" stroke=\"{ink}\"/>",
                    num(x + 6.0),
                    num(cy - 7.0),
                    hex(c)
                )),
                Key::Marker(c) => s.push_str(&format!(
                    "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"/>",
                    num(x + 12.0),
                    num(cy),
                    hex(c)
                )),
                Key::Solid(c) | Key::Dashed(c) | Key::Dotted(c) => {
                    let dash = match key {
                        Key::Dashed(_) => " stroke-dasharray=\"5 4\"",
                        Key::Dotted(_) => " stroke-dasharray=\"0 5\" stroke-linecap=\"round\"",
                        _ => "",
                    };
                    let width = if matches!(key, Key::Dotted(_)) { 3 } else { 2 };
                    s.push_str(&format!(
                        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"{width}\"{dash}/>",
                        num(x),
                        num(cy),
                        num(x + 24.0),
                        hex(c)
                    ));
                }
            }
            s.push_str(&format!(
                "<text x=\"{}\" y=\"{}\" dy=\"0.35em\" font-size=\"{fs}\" fill=\"{ink}\">{}</text>",
                num(x + 32.0),
                num(cy),
                xml(label)
            ));
            x += 32.0 + text_width(label) + 22.0;
        }
        s.push_str(&format!(
            "<clipPath id=\"{clip}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath><g clip-path=\"url(#{clip})\">",
            num(l),
            num(t),
            num(r - l),
            num(b - t)
        ));
        s
    }
}

// ---------------------------------------------------------------------------------------------
// The data file, read back.

/// A widget data file, read the way the page's script reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Data {
    pub name: String,
    pub inputs: Vec<InputData>,
    pub scenarios: Vec<ScenarioData>,
    pub outputs: Vec<OutputData>,
}

/// One input as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct InputData {
    pub control: Control,
    pub label: String,
    pub options: Vec<String>,
    pub default: usize,
    pub shared: Option<String>,
}

/// One scenario button as stored: (input, option) pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioData {
    pub label: String,
    pub set: Vec<(usize, usize)>,
}

/// One output as stored: a table over `deps`, of indices into `values` (or `values` itself).
#[derive(Debug, Clone, PartialEq)]
pub struct OutputData {
    pub kind: OutputKind,
    pub label: String,
    pub chart: Option<usize>,
    pub deps: Vec<usize>,
    pub values: Vec<String>,
    pub index: Option<Vec<usize>>,
}

impl Data {
    /// Reads a data file.
    pub fn parse(text: &str) -> Result<Data, WidgetError> {
        let bad = |why: &str| WidgetError::Data(why.to_string());
        let v = json::parse(text).map_err(WidgetError::Data)?;
        if v.get("format").and_then(json::Value::as_usize) != Some(FORMAT as usize) {
            return Err(bad("unknown format version"));
        }
        let name = v.get("widget").and_then(json::Value::as_str).ok_or_else(|| bad("no widget name"))?.to_string();
        let mut inputs = Vec::new();
        for i in v.get("inputs").and_then(json::Value::as_array).ok_or_else(|| bad("no inputs"))? {
            let control = i
                .get("control")
                .and_then(json::Value::as_str)
                .and_then(Control::from_word)
                .ok_or_else(|| bad("bad control"))?;
            let options: Vec<String> = i
                .get("options")
                .and_then(json::Value::as_array)
                .ok_or_else(|| bad("no options"))?
                .iter()
                .map(|o| o.as_str().map(str::to_string).ok_or_else(|| bad("an option is not text")))
                .collect::<Result<_, _>>()?;
            let default = i
                .get("default")
                .and_then(json::Value::as_usize)
                .filter(|d| *d < options.len())
                .ok_or_else(|| bad("bad default"))?;
            inputs.push(InputData {
                control,
                label: i.get("label").and_then(json::Value::as_str).unwrap_or("").to_string(),
                options,
                default,
                shared: i.get("shared").and_then(json::Value::as_str).map(str::to_string),
            });
        }
        let mut scenarios = Vec::new();
        for s in v.get("scenarios").and_then(json::Value::as_array).ok_or_else(|| bad("no scenarios"))? {
            let mut set = Vec::new();
            for pair in s.get("set").and_then(json::Value::as_array).ok_or_else(|| bad("scenario without settings"))? {
                let p = pair.as_array().ok_or_else(|| bad("a setting is not a pair"))?;
                let (slot, option) = match p {
                    [a, b] => (a.as_usize(), b.as_usize()),
                    _ => (None, None),
                };
                match (slot, option) {
                    (Some(s), Some(o)) if s < inputs.len() && o < inputs[s].options.len() => set.push((s, o)),
                    _ => return Err(bad("a scenario sets an input that does not exist")),
                }
            }
            scenarios.push(ScenarioData {
                label: s.get("label").and_then(json::Value::as_str).unwrap_or("").to_string(),
                set,
            });
        }
        let mut outputs = Vec::new();
        for o in v.get("outputs").and_then(json::Value::as_array).ok_or_else(|| bad("no outputs"))? {
            let kind = o
                .get("kind")
                .and_then(json::Value::as_str)
                .and_then(OutputKind::from_word)
                .ok_or_else(|| bad("bad output kind"))?;
            let deps: Vec<usize> = o
                .get("deps")
                .and_then(json::Value::as_array)
                .ok_or_else(|| bad("no deps"))?
                .iter()
                .map(|d| d.as_usize().filter(|d| *d < inputs.len()).ok_or_else(|| bad("a dependency is not an input")))
                .collect::<Result<_, _>>()?;
            let values: Vec<String> = o
                .get("values")
                .and_then(json::Value::as_array)
                .ok_or_else(|| bad("no values"))?
                .iter()
                .map(|x| x.as_str().map(str::to_string).ok_or_else(|| bad("a value is not text")))
                .collect::<Result<_, _>>()?;
            let rows: usize = deps.iter().map(|&d| inputs[d].options.len()).product();
            let index = match o.get("index") {
                None => {
                    if values.len() != rows {
                        return Err(bad("a table has the wrong number of values"));
                    }
                    None
                }
                Some(ix) => {
                    let ix: Vec<usize> = ix
                        .as_array()
                        .ok_or_else(|| bad("index is not a list"))?
                        .iter()
                        .map(|x| {
                            x.as_usize()
                                .filter(|x| *x < values.len())
                                .ok_or_else(|| bad("an index points past the values"))
                        })
                        .collect::<Result<_, _>>()?;
                    if ix.len() != rows {
                        return Err(bad("a table has the wrong number of entries"));
                    }
                    Some(ix)
                }
            };
            outputs.push(OutputData {
                kind,
                label: o.get("label").and_then(json::Value::as_str).unwrap_or("").to_string(),
                chart: o.get("chart").and_then(json::Value::as_usize),
                deps,
                values,
                index,
            });
        }
        Ok(Data { name, inputs, scenarios, outputs })
    }

    /// The default option of every input.
    pub fn default_state(&self) -> Vec<usize> {
        self.inputs.iter().map(|i| i.default).collect()
    }

    /// Output `k` at the combination `state` (one option index per input).
    pub fn value(&self, k: usize, state: &[usize]) -> Result<&str, WidgetError> {
        let out = self.outputs.get(k).ok_or_else(|| WidgetError::Data(format!("no output {k}")))?;
        if state.len() != self.inputs.len() || state.iter().zip(&self.inputs).any(|(s, i)| *s >= i.options.len()) {
            return Err(WidgetError::Data(format!("{state:?} is not a combination of this widget's inputs")));
        }
        let mut row = 0;
        for &d in &out.deps {
            row = row * self.inputs[d].options.len() + state[d];
        }
        let v = match &out.index {
            Some(ix) => ix[row],
            None => row,
        };
        Ok(&out.values[v])
    }
}

/// JSON string literal, with `<`, `>` and `&` escaped too so that the text can sit inside an
/// HTML `<script>` element unchanged.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn strings(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| string(s)).collect();
    format!("[{}]", items.join(","))
}

/// The little JSON reader [`Data::parse`] needs (objects, arrays, strings, numbers, literals).
mod json {
    #[derive(Debug, Clone, PartialEq)]
    pub enum Value {
        Null,
        Bool(bool),
        Number(f64),
        Str(String),
        Array(Vec<Value>),
        Object(Vec<(String, Value)>),
    }

    impl Value {
        pub fn get(&self, key: &str) -> Option<&Value> {
            match self {
                Value::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
                _ => None,
            }
        }
        pub fn as_str(&self) -> Option<&str> {
            match self {
                Value::Str(s) => Some(s),
                _ => None,
            }
        }
        pub fn as_array(&self) -> Option<&[Value]> {
            match self {
                Value::Array(a) => Some(a),
                _ => None,
            }
        }
        pub fn as_usize(&self) -> Option<usize> {
            match self {
                Value::Number(n) if *n >= 0.0 && n.fract() == 0.0 && *n < 9e15 => Some(*n as usize),
                _ => None,
            }
        }
    }

    pub fn parse(text: &str) -> Result<Value, String> {
        let mut p = Parser { s: text.as_bytes(), i: 0 };
        let v = p.value()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("unexpected text at byte {}", p.i));
        }
        Ok(v)
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl Parser<'_> {
        fn ws(&mut self) {
            while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
        }
        fn err<T>(&self, what: &str) -> Result<T, String> {
            Err(format!("{what} at byte {}", self.i))
        }
        fn eat(&mut self, lit: &str) -> bool {
            if self.s[self.i..].starts_with(lit.as_bytes()) {
                self.i += lit.len();
                true
            } else {
                false
            }
        }
        fn value(&mut self) -> Result<Value, String> {
            self.ws();
            match self.s.get(self.i) {
                Some(b'{') => {
                    self.i += 1;
                    let mut fields = Vec::new();
                    self.ws();
                    if self.eat("}") {
                        return Ok(Value::Object(fields));
                    }
                    loop {
                        self.ws();
                        let key = self.string()?;
                        self.ws();
                        if !self.eat(":") {
                            return self.err("expected ':'");
                        }
                        let v = self.value()?;
                        fields.push((key, v));
                        self.ws();
                        if self.eat("}") {
                            return Ok(Value::Object(fields));
                        }
                        if !self.eat(",") {
                            return self.err("expected ',' or '}'");
                        }
                    }
                }
                Some(b'[') => {
                    self.i += 1;
                    let mut items = Vec::new();
                    self.ws();
                    if self.eat("]") {
                        return Ok(Value::Array(items));
                    }
                    loop {
                        items.push(self.value()?);
                        self.ws();
                        if self.eat("]") {
                            return Ok(Value::Array(items));
                        }
                        if !self.eat(",") {
                            return self.err("expected ',' or ']'");
                        }
                    }
                }
                Some(b'"') => Ok(Value::Str(self.string()?)),
                Some(b't') if self.eat("true") => Ok(Value::Bool(true)),
                Some(b'f') if self.eat("false") => Ok(Value::Bool(false)),
                Some(b'n') if self.eat("null") => Ok(Value::Null),
                Some(c) if *c == b'-' || c.is_ascii_digit() => {
                    let start = self.i;
                    while self.i < self.s.len()
                        && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                    {
                        self.i += 1;
                    }
                    let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|e| e.to_string())?;
                    text.parse().map(Value::Number).map_err(|_| format!("bad number {text:?}"))
                }
                _ => self.err("expected a value"),
            }
        }
        fn string(&mut self) -> Result<String, String> {
            if !self.eat("\"") {
                return self.err("expected a string");
            }
            let mut out = String::new();
            loop {
                let start = self.i;
                while self.i < self.s.len() && self.s[self.i] != b'"' && self.s[self.i] != b'\\' {
                    self.i += 1;
                }
                out.push_str(std::str::from_utf8(&self.s[start..self.i]).map_err(|e| e.to_string())?);
                match self.s.get(self.i) {
                    Some(b'"') => {
                        self.i += 1;
                        return Ok(out);
                    }
                    Some(b'\\') => {
                        self.i += 1;
                        let c = self.s.get(self.i).copied();
                        self.i += 1;
                        match c {
                            Some(b'"') => out.push('"'),
                            Some(b'\\') => out.push('\\'),
                            Some(b'/') => out.push('/'),
                            Some(b'n') => out.push('\n'),
                            Some(b't') => out.push('\t'),
                            Some(b'r') => out.push('\r'),
                            Some(b'b') => out.push('\u{8}'),
                            Some(b'f') => out.push('\u{c}'),
                            Some(b'u') => {
                                let hex = self.s.get(self.i..self.i + 4).ok_or("short \\u escape")?;
                                let code =
                                    u32::from_str_radix(std::str::from_utf8(hex).map_err(|e| e.to_string())?, 16)
                                        .map_err(|e| e.to_string())?;
                                self.i += 4;
                                // Surrogate pairs: our writer never makes them, but read them.
                                let c = if (0xD800..0xDC00).contains(&code) && self.eat("\\u") {
                                    let hex = self.s.get(self.i..self.i + 4).ok_or("short \\u escape")?;
                                    let low =
                                        u32::from_str_radix(std::str::from_utf8(hex).map_err(|e| e.to_string())?, 16)
                                            .map_err(|e| e.to_string())?;
                                    self.i += 4;
                                    char::from_u32(0x10000 + ((code - 0xD800) << 10) + (low.wrapping_sub(0xDC00)))
                                } else {
                                    char::from_u32(code)
                                };
                                out.push(c.ok_or("bad \\u escape")?);
                            }
                            _ => return self.err("bad escape"),
                        }
                    }
                    _ => return self.err("unterminated string"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn strings_survive_the_round_trip_and_cannot_close_a_script() {
        let s = string("a</script>\"\\\n&é");
        assert!(!s.contains('<'));
        assert_eq!(json::parse(&s).unwrap(), json::Value::Str("a</script>\"\\\n&é".into()));
    }

    #[test]
    fn ticks_read_like_the_figures() {
        assert_eq!(tick_text(2475.0), "2,475");
        assert_eq!(tick_text(100_000.0), "100k");
        assert_eq!(tick_text(2.5e6), "2.5M");
        assert_eq!(tick_text(0.5), "0.5");
        assert_eq!(num(-0.01), "0");
        assert_eq!(num(12.34), "12.3");
    }
}
