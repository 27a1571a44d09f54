//! The data file: the layout of `<name>.widget.json`, written by [`Widget::write`] and read
//! back by [`Data::parse`] the way the page's script reads it.
//!
//! ```text
//! {"format":1,"widget":NAME,
//!  "inputs":[{"control":"picker"|"slider"|"toggle","label":L,"options":[..],"default":I,"shared":KEY?},..],
//!  "scenarios":[{"label":L,"set":[[INPUT,OPTION],..]},..],
//!  "outputs":[{"kind":"number"|"verdict"|"frame"|"layer","label":L,"chart":C?,
//!              "deps":[INPUT,..],"values":[TEXT,..],"index":[I,..]?},..]}
//! ```
//!
//! on one line, with a line break at the end. An output is a table over the inputs in `deps`
//! (the first varying slowest): `values` itself when every entry differs, else `index` into
//! the distinct `values`. Fields appear in this order and only when present, so that the same
//! widget always gives the same bytes (`check` compares them with the committed file).
//!
//! The file is inlined in the page inside a `<script>` element, so its strings escape `<`, `>`
//! and `&` as `\u003c`, `\u003e` and `\u0026` (text can never close the element), and control
//! characters other than the line break as `\u00XX` ([`HtmlSafe`]). serde_json reads and
//! writes it, with no derive: each type says in a few lines how it is written
//! ([`Serialize`] by hand, the fields in the order above) and read (from a
//! [`serde_json::Value`], [`Data::parse`]), and the checks that JSON cannot express (a default
//! among the options, a table of the right size, an index inside its values) are
//! [`Data::parse`]'s too.
//!
//! Why no derive: it brings `syn`, `quote`, `proc-macro2` and `serde_derive` into the first
//! build of every book, since the chapter programs link this crate, and nothing else there
//! needs them. This repository's chapter crates, built from an empty target folder on two
//! cores (two runs each, alternating), took 26.1–26.3 s without it and 29.0–29.3 s with it
//! (45 s of CPU time instead of 50 s).
//!
//! [`Widget::write`]: super::Widget::write

use std::io;
use std::path::PathBuf;

use serde::ser::{Serialize, SerializeStruct, Serializer};
use serde_json::{Map, Value};

use super::error::WidgetError;
use crate::figure;

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

impl Control {
    const ALL: [Control; 3] = [Control::Picker, Control::Slider, Control::Toggle];

    /// Its name in the file (`"picker"`), which the page's script reads.
    pub fn name(self) -> &'static str {
        match self {
            Control::Picker => "picker",
            Control::Slider => "slider",
            Control::Toggle => "toggle",
        }
    }
}

impl OutputKind {
    const ALL: [OutputKind; 4] =
        [OutputKind::Number, OutputKind::Verdict, OutputKind::ChartFrame, OutputKind::ChartLayer];

    /// Its name in the file (`"layer"`), which the page's script reads.
    pub fn name(self) -> &'static str {
        match self {
            OutputKind::Number => "number",
            OutputKind::Verdict => "verdict",
            OutputKind::ChartFrame => "frame",
            OutputKind::ChartLayer => "layer",
        }
    }
}

/// Where widget `name` of `chapter` goes: beside the chapter's figures.
pub fn path_for(chapter: &str, name: &str) -> PathBuf {
    let dir =
        std::env::var_os(figure::DIR_ENV).map(PathBuf::from).unwrap_or_else(|| PathBuf::from(figure::DEFAULT_DIR));
    dir.join(chapter).join(format!("{name}.widget.json"))
}

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

/// The file as written: the format version first, the widget's name under `widget`.
struct FileRef<'a>(&'a Data);

impl Serialize for FileRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut file = serializer.serialize_struct("File", 5)?;
        file.serialize_field("format", &FORMAT)?;
        file.serialize_field("widget", &self.0.name)?;
        file.serialize_field("inputs", &self.0.inputs)?;
        file.serialize_field("scenarios", &self.0.scenarios)?;
        file.serialize_field("outputs", &self.0.outputs)?;
        file.end()
    }
}

impl Serialize for InputData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut input = serializer.serialize_struct("InputData", 5)?;
        input.serialize_field("control", self.control.name())?;
        input.serialize_field("label", &self.label)?;
        input.serialize_field("options", &self.options)?;
        input.serialize_field("default", &self.default)?;
        if let Some(shared) = &self.shared {
            input.serialize_field("shared", shared)?;
        }
        input.end()
    }
}

impl Serialize for ScenarioData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut scenario = serializer.serialize_struct("ScenarioData", 2)?;
        scenario.serialize_field("label", &self.label)?;
        scenario.serialize_field("set", &self.set)?;
        scenario.end()
    }
}

impl Serialize for OutputData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut output = serializer.serialize_struct("OutputData", 6)?;
        output.serialize_field("kind", self.kind.name())?;
        output.serialize_field("label", &self.label)?;
        if let Some(chart) = &self.chart {
            output.serialize_field("chart", chart)?;
        }
        output.serialize_field("deps", &self.deps)?;
        output.serialize_field("values", &self.values)?;
        if let Some(index) = &self.index {
            output.serialize_field("index", index)?;
        }
        output.end()
    }
}

// Reading a `Value` back into the types above: each error names the field it is about.

type Object = Map<String, Value>;

fn bad(why: String) -> WidgetError {
    WidgetError::Data(why)
}

fn object<'v>(value: &'v Value, what: &str) -> Result<&'v Object, WidgetError> {
    value.as_object().ok_or_else(|| bad(format!("{what} is not a JSON object")))
}

fn field<'v>(object: &'v Object, name: &str) -> Result<&'v Value, WidgetError> {
    object.get(name).ok_or_else(|| bad(format!("missing field `{name}`")))
}

/// A field that may be absent (or `null`).
fn optional<'v>(object: &'v Object, name: &str) -> Option<&'v Value> {
    object.get(name).filter(|v| !v.is_null())
}

fn string(value: &Value, name: &str) -> Result<String, WidgetError> {
    value.as_str().map(str::to_string).ok_or_else(|| bad(format!("`{name}` is not a string")))
}

fn index(value: &Value, name: &str) -> Result<usize, WidgetError> {
    value.as_u64().and_then(|n| usize::try_from(n).ok()).ok_or_else(|| bad(format!("`{name}` is not a whole number")))
}

fn list<'v>(value: &'v Value, name: &str) -> Result<&'v Vec<Value>, WidgetError> {
    value.as_array().ok_or_else(|| bad(format!("`{name}` is not a list")))
}

fn strings(value: &Value, name: &str) -> Result<Vec<String>, WidgetError> {
    list(value, name)?.iter().map(|v| string(v, name)).collect()
}

fn indices(value: &Value, name: &str) -> Result<Vec<usize>, WidgetError> {
    list(value, name)?.iter().map(|v| index(v, name)).collect()
}

/// `label`, which may be absent: then empty.
fn label(object: &Object) -> Result<String, WidgetError> {
    optional(object, "label").map_or(Ok(String::new()), |v| string(v, "label"))
}

/// The one of `all` whose name (`name_of`) the field holds.
fn named<T: Copy>(all: &[T], name_of: fn(T) -> &'static str, value: &Value, name: &str) -> Result<T, WidgetError> {
    let given = string(value, name)?;
    all.iter().copied().find(|&t| name_of(t) == given).ok_or_else(|| bad(format!("unknown {name} {given:?}")))
}

fn input(value: &Value) -> Result<InputData, WidgetError> {
    let o = object(value, "an input")?;
    Ok(InputData {
        control: named(&Control::ALL, Control::name, field(o, "control")?, "control")?,
        label: label(o)?,
        options: strings(field(o, "options")?, "options")?,
        default: index(field(o, "default")?, "default")?,
        shared: optional(o, "shared").map(|v| string(v, "shared")).transpose()?,
    })
}

fn scenario(value: &Value) -> Result<ScenarioData, WidgetError> {
    let o = object(value, "a scenario")?;
    let pair = |v: &Value| match list(v, "set")?.as_slice() {
        [input, option] => Ok((index(input, "set")?, index(option, "set")?)),
        _ => Err(bad("`set` holds a pair that is not [input, option]".to_string())),
    };
    Ok(ScenarioData {
        label: label(o)?,
        set: list(field(o, "set")?, "set")?.iter().map(pair).collect::<Result<_, _>>()?,
    })
}

fn output(value: &Value) -> Result<OutputData, WidgetError> {
    let o = object(value, "an output")?;
    Ok(OutputData {
        kind: named(&OutputKind::ALL, OutputKind::name, field(o, "kind")?, "kind")?,
        label: label(o)?,
        chart: optional(o, "chart").map(|v| index(v, "chart")).transpose()?,
        deps: indices(field(o, "deps")?, "deps")?,
        values: strings(field(o, "values")?, "values")?,
        index: optional(o, "index").map(|v| indices(v, "index")).transpose()?,
    })
}

impl Data {
    /// The file's text (module docs): one line, and a line break.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        let mut writer = serde_json::Serializer::with_formatter(&mut out, HtmlSafe);
        // Writing into memory cannot fail, and every field is a string, a number or a list.
        FileRef(self).serialize(&mut writer).expect("a widget's data serializes");
        out.push(b'\n');
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// Reads a data file.
    pub fn parse(text: &str) -> Result<Data, WidgetError> {
        let bad = |why: &str| WidgetError::Data(why.to_string());
        let value: Value = serde_json::from_str(text).map_err(|e| WidgetError::Data(e.to_string()))?;
        let file = object(&value, "the file")?;
        // The version first, so that a file of another format is named as such rather than by
        // the first field it lacks.
        if index(field(file, "format")?, "format")? != FORMAT as usize {
            return Err(bad("unknown format version"));
        }
        let name = string(field(file, "widget")?, "widget")?;
        let each = |name: &str| list(field(file, name)?, name);
        let inputs: Vec<InputData> = each("inputs")?.iter().map(input).collect::<Result<_, _>>()?;
        let scenarios: Vec<ScenarioData> = each("scenarios")?.iter().map(scenario).collect::<Result<_, _>>()?;
        let outputs: Vec<OutputData> = each("outputs")?.iter().map(output).collect::<Result<_, _>>()?;
        if inputs.iter().any(|i| i.default >= i.options.len()) {
            return Err(bad("bad default"));
        }
        let is_setting = |&(s, o): &(usize, usize)| s < inputs.len() && o < inputs[s].options.len();
        if !scenarios.iter().all(|s| s.set.iter().all(is_setting)) {
            return Err(bad("a scenario sets an input that does not exist"));
        }
        for o in &outputs {
            if o.deps.iter().any(|&d| d >= inputs.len()) {
                return Err(bad("a dependency is not an input"));
            }
            let rows: usize = o.deps.iter().map(|&d| inputs[d].options.len()).product();
            match &o.index {
                None if o.values.len() != rows => return Err(bad("a table has the wrong number of values")),
                None => {}
                Some(ix) if ix.iter().any(|&x| x >= o.values.len()) => {
                    return Err(bad("an index points past the values"));
                }
                Some(ix) if ix.len() != rows => return Err(bad("a table has the wrong number of entries")),
                Some(_) => {}
            }
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

/// serde_json's compact layout, with strings that can sit inside an HTML `<script>` element
/// unchanged: `<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026`; of the control characters only
/// the line break keeps its short escape (`\n`), the others are `\u00XX`, lower-case.
struct HtmlSafe;

impl serde_json::ser::Formatter for HtmlSafe {
    fn write_string_fragment<W: ?Sized + io::Write>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()> {
        let mut rest = fragment;
        while let Some(at) = rest.find(['<', '>', '&']) {
            writer.write_all(&rest.as_bytes()[..at])?;
            let escape: &[u8] = match rest.as_bytes()[at] {
                b'<' => b"\\u003c",
                b'>' => b"\\u003e",
                _ => b"\\u0026",
            };
            writer.write_all(escape)?;
            rest = &rest[at + 1..];
        }
        writer.write_all(rest.as_bytes())
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        escape: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        use serde_json::ser::CharEscape;
        let byte = match escape {
            CharEscape::Quote => return writer.write_all(b"\\\""),
            CharEscape::ReverseSolidus => return writer.write_all(b"\\\\"),
            CharEscape::LineFeed => return writer.write_all(b"\\n"),
            CharEscape::Solidus => b'/',
            CharEscape::Backspace => 0x08,
            CharEscape::FormFeed => 0x0c,
            CharEscape::CarriageReturn => b'\r',
            CharEscape::Tab => b'\t',
            CharEscape::AsciiControl(byte) => byte,
        };
        write!(writer, "\\u{:04x}", byte)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_with(text: &str) -> Data {
        Data {
            name: "w".into(),
            inputs: vec![InputData {
                control: Control::Picker,
                label: text.into(),
                options: vec!["a".into(), "b".into()],
                default: 1,
                shared: None,
            }],
            scenarios: vec![ScenarioData { label: "s".into(), set: vec![(0, 0)] }],
            outputs: vec![OutputData {
                kind: OutputKind::ChartLayer,
                label: "layer 0".into(),
                chart: Some(0),
                deps: vec![0],
                values: vec!["same".into()],
                index: Some(vec![0, 0]),
            }],
        }
    }

    #[test]
    fn strings_survive_the_round_trip_and_cannot_close_a_script() {
        let text = "a</script>\"\\\n\t\u{1}&é\u{7f}";
        let data = data_with(text);
        let json = data.to_json();
        assert!(!json.contains('<') && !json.contains('>') && !json.contains('&'), "{json}");
        assert!(json.contains(r#""a\u003c/script\u003e\"\\\n\u0009\u0001\u0026é"#), "{json}");
        assert_eq!(Data::parse(&json).unwrap(), data);
    }

    #[test]
    fn the_layout_is_fixed() {
        assert_eq!(
            data_with("L").to_json(),
            "{\"format\":1,\"widget\":\"w\",\"inputs\":[{\"control\":\"picker\",\"label\":\"L\",\"options\":[\"a\",\"b\"],\"default\":1}],\"scenarios\":[{\"label\":\"s\",\"set\":[[0,0]]}],\"outputs\":[{\"kind\":\"layer\",\"label\":\"layer 0\",\"chart\":0,\"deps\":[0],\"values\":[\"same\"],\"index\":[0,0]}]}\n"
        );
    }

    #[test]
    fn what_json_cannot_check_is_checked() {
        let json = data_with("L").to_json();
        let broken = [
            (json.replace("\"default\":1", "\"default\":2"), "bad default"),
            (json.replace("\"set\":[[0,0]]", "\"set\":[[1,0]]"), "scenario"),
            (json.replace("\"deps\":[0]", "\"deps\":[3]"), "dependency"),
            (json.replace("\"index\":[0,0]", "\"index\":[0,1]"), "past the values"),
            (json.replace("\"index\":[0,0]", "\"index\":[0]"), "number of entries"),
            (json.replace("\"format\":1", "\"format\":2"), "format version"),
            (json.replace("\"inputs\"", "\"input\""), "missing field `inputs`"),
            (json.replace("\"kind\":\"layer\"", "\"kind\":\"box\""), "unknown kind \"box\""),
            (json.replace("\"control\":\"picker\"", "\"control\":\"dial\""), "unknown control \"dial\""),
        ];
        for (text, why) in broken {
            let err = Data::parse(&text).unwrap_err().to_string();
            assert!(err.contains(why), "{why}: {err}");
        }
    }
}
