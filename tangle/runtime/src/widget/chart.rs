//! Chart drawing: the calculators' charts as SVG pieces in the look of the book's figures.
//!
//! A [`Chart`] is built at one combination of a widget's inputs and becomes several outputs:
//! its *frame* (the opening `<svg>`, white ground, grid, axes, ticks, descriptions, legend and
//! the opening of a clipped group) and one *layer* per drawing call (a curve, a point, bars).
//! Each piece is an output of its own, so the data file stores a piece once for every
//! combination of the inputs it does not depend on: the frame usually once, a curve once per
//! value of the two inputs it follows. The page concatenates the frame, the layers of the
//! state shown and [`CHART_CLOSING`], and swaps only the pieces that change.
//!
//! # Why these pieces are written by hand, not drawn with plotters
//!
//! The book's figures are drawn with plotters ([`crate::figure`]); these charts are not,
//! because plotters does not fit the frame-and-layers design. Measured with plotters 0.3.7 on a
//! chart like the book's roofline calculator (680 × 380, log x axis, a 49-point curve, a rule,
//! a point, a two-entry legend), drawn both ways with the same margins and text style:
//!
//! - *No pieces.* Plotters' SVG backend writes whole documents, `<svg …>` to `</svg>`, one per
//!   drawing area: each layer would be drawn on a document of its own and cut out of it, and
//!   the frame's opening (its accessible name, the opening of the clipped group the layers go
//!   in) spliced into plotters' text. The pieces would be string surgery on another crate's
//!   output, which any plotters release may change.
//! - *No clipping.* The page relies on the frame's `clipPath` to cut what leaves the plot.
//!   Plotters clamps coordinates to the plotting area instead: a curve that peaks at 3.0 on an
//!   axis ending at 1.15 was drawn to the top edge with a different slope, and a point beyond
//!   the x range was drawn on the right edge; the hand version's clip cuts the curve where it
//!   leaves the plot, keeping its slope, and hides the point.
//! - *Whole pixels.* Backend coordinates are `i32`: every point moves by up to half a pixel
//!   (the hand version keeps tenths).
//! - *Size and time.* The frame is 12,456 bytes with 156 line breaks (one element per grid
//!   line, `opacity="1"` on each, label text on lines of its own) against 3,053 bytes on one
//!   line here: the committed data files hold 59 kB of frames in 966 kB, which at that ratio
//!   would become about 240 kB. The chart took 66 µs per combination against 31 µs (optimised
//!   build), and every combination of a widget's inputs draws it (up to
//!   [`MAX_COMBINATIONS`](super::MAX_COMBINATIONS)).
//! - *Every data file would change*: all eleven committed `*.widget.json` files, for no
//!   visible gain.
//!
//!
//! What this module shares with [`crate::figure`]: the bundled DejaVu Sans (text is measured
//! with it through plotters' `ab_glyph`), [`INK`], the grays, the legend's keys ([`Key`]) and
//! the text size, so that a live chart reads like the drawn figures beside it.

use plotters::style::RGBColor;

use crate::figure::{self, INK, Key};

/// What closes a chart after its frame and layers (the frame opens a clipped group).
pub const CHART_CLOSING: &str = "</g></svg>";

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

    /// Why the axis cannot map values to the page, if it cannot: bounds that are no numbers or
    /// equal, or a logarithmic axis that reaches 0 or below.
    fn fault(&self) -> Option<String> {
        let (lo, hi) = (self.lo, self.hi);
        let why = if !(lo.is_finite() && hi.is_finite()) || lo == hi {
            "needs two different finite bounds"
        } else if self.scale == Scale::Log && (lo <= 0.0 || hi <= 0.0) {
            "is logarithmic, and needs bounds above 0"
        } else {
            return None;
        };
        Some(format!("axis \"{}\" (from {lo} to {hi}) {why}", self.label))
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
            // An axis with no ticks to give (a log axis through 0, a bound that is no number) is
            // refused by the chart that holds it (`Axis::fault`): it gets none.
            _ if self.fault().is_some() => {}
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
                    // At most a dozen: a range far from 0 for its width (1e20 to 1e20 + 1) would
                    // leave `k + 1.0 == k`.
                    while k * step <= hi + step * 1e-9 && out.len() < 12 {
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
    /// The first point given that has no place on the axes (not a finite number, or not
    /// positive on a logarithmic axis): drawn, it would be `cx="NaN"`, which browsers reject.
    unplaceable: std::cell::Cell<Option<(f64, f64)>>,
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
            unplaceable: std::cell::Cell::new(None),
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
        let at = (l + self.x.fraction(x) * (r - l), b - self.y.fraction(y) * (b - t));
        if !(at.0.is_finite() && at.1.is_finite()) && self.unplaceable.get().is_none() {
            self.unplaceable.set(Some((x, y)));
        }
        at
    }

    /// Why the chart cannot be drawn as given, if it cannot: an axis that cannot place anything,
    /// or a point with no place on its axes.
    pub(crate) fn unplaceable(&self) -> Option<String> {
        if let Some(why) = self.x.fault().or_else(|| self.y.fault()) {
            return Some(format!("chart \"{}\": {why}", self.title));
        }
        let (x, y) = self.unplaceable.get()?;
        Some(format!(
            "chart \"{}\" has a point at ({x}, {y}), which has no place on its axes (a coordinate that is \
             not a finite number, or not positive on a logarithmic axis)",
            self.title
        ))
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

    /// The chart as the pieces a widget stores: its frame, whose clip path is named `clip`,
    /// and its layers in the order they were drawn.
    /// The frame and the layers, and why the chart cannot be drawn as given, if it cannot
    /// ([`Chart::unplaceable`], once the frame's ticks are placed too).
    pub(crate) fn into_pieces(self, clip: &str) -> (String, Vec<String>, Option<String>) {
        let frame = self.frame(clip);
        let why = self.unplaceable();
        (frame, self.layers, why)
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

#[cfg(test)]
mod tests {
    use super::*;

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
