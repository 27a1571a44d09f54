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
//! writes it; the checks that JSON cannot express (a default among the options, a table of the
//! right size, an index inside its values) are [`Data::parse`]'s.
//!
//! What serde costs: the derive brings `syn` and `serde_derive` into the first build of every
//! book, since the chapter programs link this crate. Measured from an empty target folder on
//! two shared cores, this crate with its dependencies built in 35–38 s (17–18 s of CPU) with
//! the hand-written reader and writer, 53 s (24 s) with serde_json used without the derive,
//! and 74–78 s (32–35 s) as it is; later builds do not pay it again.
//!
//! [`Widget::write`]: super::Widget::write

use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::error::WidgetError;
use crate::figure;

/// The version of the data file's layout; the page's script checks it.
pub const FORMAT: u32 = 1;

/// The kind of control an input is shown as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Control {
    /// A `<select>` over named values (hardware, model, scenario presets).
    Picker,
    /// A range input that steps through a list of allowed values (powers of two, ...).
    Slider,
    /// Two named states, shown as a pair of radio buttons.
    Toggle,
}

/// What kind of thing an output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutputKind {
    /// A labelled number, as text.
    #[serde(rename = "number")]
    Number,
    /// A labelled verdict word with a tone: the value starts with `+` (good), `-` (bad) or `=`.
    #[serde(rename = "verdict")]
    Verdict,
    /// The frame of chart `chart` (an opening `<svg>`, axes, legend): the first piece.
    #[serde(rename = "frame")]
    ChartFrame,
    /// One layer drawn on chart `chart` (a curve, a point, bars).
    #[serde(rename = "layer")]
    ChartLayer,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputData {
    pub control: Control,
    #[serde(default)]
    pub label: String,
    pub options: Vec<String>,
    pub default: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<String>,
}

/// One scenario button as stored: (input, option) pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioData {
    #[serde(default)]
    pub label: String,
    pub set: Vec<(usize, usize)>,
}

/// One output as stored: a table over `deps`, of indices into `values` (or `values` itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputData {
    pub kind: OutputKind,
    #[serde(default)]
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<usize>,
    pub deps: Vec<usize>,
    pub values: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<Vec<usize>>,
}

/// The file as written: the format version first, the widget's name under `widget`.
#[derive(Serialize)]
struct FileRef<'a> {
    format: u32,
    widget: &'a str,
    inputs: &'a [InputData],
    scenarios: &'a [ScenarioData],
    outputs: &'a [OutputData],
}

/// The file as read.
#[derive(Deserialize)]
struct File {
    format: u32,
    widget: String,
    inputs: Vec<InputData>,
    scenarios: Vec<ScenarioData>,
    outputs: Vec<OutputData>,
}

/// Only the version, to name an unknown format rather than the first field it lacks.
#[derive(Deserialize)]
struct Version {
    format: u32,
}

impl Data {
    /// The file's text (module docs): one line, and a line break.
    pub fn to_json(&self) -> String {
        let file = FileRef {
            format: FORMAT,
            widget: &self.name,
            inputs: &self.inputs,
            scenarios: &self.scenarios,
            outputs: &self.outputs,
        };
        let mut out = Vec::new();
        let mut writer = serde_json::Serializer::with_formatter(&mut out, HtmlSafe);
        // Writing into memory cannot fail, and every field is a string, a number or a list.
        file.serialize(&mut writer).expect("a widget's data serializes");
        out.push(b'\n');
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// Reads a data file.
    pub fn parse(text: &str) -> Result<Data, WidgetError> {
        let bad = |why: &str| WidgetError::Data(why.to_string());
        let file: File = serde_json::from_str(text).map_err(|e| match serde_json::from_str::<Version>(text) {
            Ok(v) if v.format != FORMAT => bad("unknown format version"),
            _ => WidgetError::Data(e.to_string()),
        })?;
        if file.format != FORMAT {
            return Err(bad("unknown format version"));
        }
        let inputs = file.inputs;
        if inputs.iter().any(|i| i.default >= i.options.len()) {
            return Err(bad("bad default"));
        }
        let is_setting = |&(s, o): &(usize, usize)| s < inputs.len() && o < inputs[s].options.len();
        if !file.scenarios.iter().all(|s| s.set.iter().all(is_setting)) {
            return Err(bad("a scenario sets an input that does not exist"));
        }
        for o in &file.outputs {
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
        Ok(Data { name: file.widget, inputs, scenarios: file.scenarios, outputs: file.outputs })
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
        ];
        for (text, why) in broken {
            let err = Data::parse(&text).unwrap_err().to_string();
            assert!(err.contains(why), "{why}: {err}");
        }
    }
}
