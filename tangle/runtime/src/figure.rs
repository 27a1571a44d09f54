//! Figures drawn by chapter code: plotters' SVG backend with a bundled font.
//!
//! A run cell draws a figure with [`svg`]:
//!
//! ```ignore
//! use tangle_runtime::figure::{self, plotters::prelude::*};
//! figure::svg("activation-totals", (640, 360), |root| {
//!     let mut chart = ChartBuilder::on(root).margin(12).build_cartesian_2d(0..3, 0.0..1.0)?;
//!     chart.configure_mesh().label_style(figure::text(13.0)).draw()?;
//!     Ok(())
//! })?;
//! ```
//!
//! and the chapter places it with `{{#figure activation-totals | Caption.}}`. The file goes to
//! `$TANGLE_FIGURES_DIR/<chapter>/<name>.svg` (default `figures/`, relative to the working
//! directory, which is the repository root when tangle runs a chapter). `cargo tangle check`
//! compares it byte for byte with the committed `figures/<chapter>/<name>.svg`, so drawing must
//! be deterministic: text is measured with DejaVu Sans, which ships inside this crate, never
//! with whatever fonts the machine has.

use std::error::Error;
use std::fmt;
use std::path::PathBuf;
use std::sync::Once;

pub use plotters;
use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
pub use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, RGBColor, TextStyle};

/// The area a figure draws on.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The font family every figure uses; [`svg`] registers the bundled DejaVu Sans under it.
pub const FONT: &str = "sans-serif";

/// Default directory for figures, relative to the working directory.
pub const DEFAULT_DIR: &str = "figures";

/// The environment variable that redirects figures (tangle's `check` points it at a scratch
/// directory and compares).
pub const DIR_ENV: &str = "TANGLE_FIGURES_DIR";

static DEJAVU_SANS: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
static FONTS: Once = Once::new();

/// Near-black for lines and text.
pub const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);

/// A gray by lightness, as matplotlib's `"0.75"`: 0.0 is black, 1.0 white. Figures are drawn
/// in grays so that they print and read without colour.
pub fn gray(lightness: f64) -> RGBColor {
    let v = (lightness.clamp(0.0, 1.0) * 255.0).round() as u8;
    RGBColor(v, v, v)
}

/// Text in the book's figure font at plotters' `size`, in [`INK`] (plotters' SVG backend writes
/// `font-size` as `size / 1.24`).
pub fn text(size: f64) -> TextStyle<'static> {
    register_fonts();
    (FONT, size).into_font().color(&INK)
}

/// The book's axis style, applied to a chart's mesh in one call:
/// `chart.configure_mesh().x_desc("tokens").book_style(16.0).draw()?`. Tick labels and axis
/// descriptions in the figure font at `size` pixels, light major gridlines, no minor ones, so
/// that every figure reads the same way and prints in grayscale.
pub trait BookStyle {
    fn book_style(&mut self, size: f64) -> &mut Self;
}

impl<'a, 'b, X, Y, DB> BookStyle for MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged<ValueType: std::fmt::Debug>,
    Y: Ranged<ValueType: std::fmt::Debug>,
    DB: DrawingBackend,
{
    fn book_style(&mut self, size: f64) -> &mut Self {
        self.label_style::<TextStyle<'b>>(text(size))
            .axis_desc_style::<TextStyle<'b>>(text(size))
            .light_line_style(WHITE)
            .bold_line_style(gray(0.92))
    }
}

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Key {
    /// A filled square, for bars and areas.
    Swatch(RGBColor),
    /// A solid line.
    Solid(RGBColor),
    /// A dashed line.
    Dashed(RGBColor),
    /// A dotted line.
    Dotted(RGBColor),
    /// A filled circle, for marked points.
    Marker(RGBColor),
}

/// Text whose anchor point is at (`h`, `v`) of its box: `aligned(15.0, HPos::Right, VPos::Bottom)`
/// ends at the point and sits on it.
pub fn aligned(size: f64, h: HPos, v: VPos) -> TextStyle<'static> {
    text(size).pos(Pos::new(h, v))
}

/// Text anchored at its top centre (labels under bars).
pub fn text_top_center(size: f64) -> TextStyle<'static> {
    text(size).pos(Pos::new(HPos::Center, VPos::Top))
}

/// Text anchored at its bottom centre (values over bars).
pub fn text_bottom_center(size: f64) -> TextStyle<'static> {
    text(size).pos(Pos::new(HPos::Center, VPos::Bottom))
}

/// Draws a legend with its first entry's top-left corner at `at` (pixels). Entries run in a row
/// when `row` is true, else in a column; text is `size` pixels.
///
/// Returns the legend's size (width, height), so callers can keep other labels clear of it.
pub fn legend(
    root: &Area<'_>,
    at: (i32, i32),
    entries: &[(Key, &str)],
    size: f64,
    row: bool,
) -> Result<(i32, i32), Box<dyn Error>> {
    let style = text(size);
    let line_h = (size * 1.35).round() as i32;
    let key_w = 28;
    let (mut x, mut y) = at;
    let (mut w, mut h) = (0, 0);
    for (key, label) in entries {
        let cy = y + line_h / 2;
        match *key {
            Key::Swatch(c) => {
                root.draw(&Rectangle::new([(x + 6, cy - 7), (x + 20, cy + 7)], c.filled()))?;
                root.draw(&Rectangle::new([(x + 6, cy - 7), (x + 20, cy + 7)], INK.stroke_width(1)))?;
            }
            Key::Solid(c) => root.draw(&PathElement::new(vec![(x, cy), (x + key_w - 4, cy)], c.stroke_width(2)))?,
            Key::Dashed(c) => {
                for k in 0..3 {
                    let x0 = x + k * 9;
                    root.draw(&PathElement::new(vec![(x0, cy), (x0 + 5, cy)], c.stroke_width(2)))?;
                }
            }
            Key::Dotted(c) => {
                for k in 0..5 {
                    root.draw(&Circle::new((x + 1 + k * 5, cy), 1, c.filled()))?;
                }
            }
            Key::Marker(c) => root.draw(&Circle::new((x + 12, cy), 4, c.filled()))?,
        }
        let (tw, _) = root.estimate_text_size(label, &style)?;
        root.draw(&Text::new(label.to_string(), (x + key_w + 4, cy), style.pos(Pos::new(HPos::Left, VPos::Center))))?;
        let entry_w = key_w + 4 + tw as i32;
        if row {
            x += entry_w + 22;
            w = x - at.0 - 22;
            h = line_h;
        } else {
            y += line_h;
            w = w.max(entry_w);
            h = y - at.1;
        }
    }
    Ok((w, h))
}

/// What can go wrong drawing a figure.
#[derive(Debug)]
pub enum FigureError {
    /// The name would not make a plain file name (`a-z`, `0-9`, `-`, `_`).
    BadName(String),
    /// [`crate::init`] was not called, so the figure has no chapter directory.
    NoChapter,
    /// The drawing closure or plotters failed.
    Draw(String),
    /// Writing the file failed.
    Io(PathBuf, std::io::Error),
    /// Another figure of this chapter already has this name; the second would overwrite it.
    Duplicate(String),
}

impl fmt::Display for FigureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FigureError::BadName(n) => {
                write!(f, "figure name {n:?} must be lower-case ASCII letters, digits, '-' or '_'")
            }
            FigureError::NoChapter => write!(f, "tangle_runtime::init(chapter) must run before a figure is drawn"),
            FigureError::Draw(e) => write!(f, "drawing failed: {e}"),
            FigureError::Io(p, e) => write!(f, "cannot write {}: {e}", p.display()),
            FigureError::Duplicate(n) => {
                write!(f, "a figure named {n:?} was already drawn by this chapter; give each figure its own name")
            }
        }
    }
}

impl Error for FigureError {}

fn register_fonts() {
    FONTS.call_once(|| {
        // The bytes are a valid TrueType file compiled into the crate; failure is impossible
        // short of a corrupted build, and then text would only fall back to plotters' default.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, DEJAVU_SANS);
    });
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Where figure `name` of `chapter` goes.
pub fn path_for(chapter: &str, name: &str) -> PathBuf {
    let dir = std::env::var_os(DIR_ENV).map(PathBuf::from).unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
    dir.join(chapter).join(format!("{name}.svg"))
}

/// Draws an SVG figure of `size` (width, height in pixels) on white and writes it to
/// `$TANGLE_FIGURES_DIR/<chapter>/<name>.svg`. Returns the path written.
///
/// The file is only rewritten when its bytes change, and then atomically (a temporary file renamed over it).
pub fn svg<F>(name: &str, size: (u32, u32), draw: F) -> Result<PathBuf, FigureError>
where
    F: FnOnce(&Area<'_>) -> Result<(), Box<dyn Error>>,
{
    if !valid_name(name) {
        return Err(FigureError::BadName(name.to_string()));
    }
    let chapter = crate::chapter();
    if chapter.is_empty() {
        return Err(FigureError::NoChapter);
    }
    static DRAWN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    if let Ok(mut drawn) = DRAWN.lock() {
        if drawn.iter().any(|n| n == name) {
            return Err(FigureError::Duplicate(name.to_string()));
        }
        drawn.push(name.to_string());
    }
    let svg = render_svg(size, draw)?;
    let path = path_for(chapter, name);
    crate::file::write_if_changed(&path, svg.as_bytes()).map_err(|(at, e)| FigureError::Io(at, e))?;
    Ok(path)
}

/// Draws to an SVG string without writing a file (for tests and previews).
pub fn render_svg<F>(size: (u32, u32), draw: F) -> Result<String, FigureError>
where
    F: FnOnce(&Area<'_>) -> Result<(), Box<dyn Error>>,
{
    register_fonts();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| FigureError::Draw(e.to_string()))?;
        draw(&root).map_err(|e| FigureError::Draw(e.to_string()))?;
        root.present().map_err(|e| FigureError::Draw(e.to_string()))?;
    }
    if !buf.ends_with('\n') {
        buf.push('\n');
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bars(root: &Area<'_>, height: f64) -> Result<(), Box<dyn Error>> {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(40)
            .build_cartesian_2d(0.0..3.0, 0.0..10.0)?;
        chart.configure_mesh().label_style(text(12.0)).draw()?;
        chart.draw_series([Rectangle::new([(0.5, 0.0), (1.5, height)], gray(0.6).filled())])?;
        root.draw(&Text::new("label", (50, 20), text(13.0)))?;
        Ok(())
    }

    #[test]
    fn drawing_is_deterministic_and_sensitive_to_data() {
        let a = render_svg((320, 200), |r| bars(r, 4.0)).unwrap();
        let b = render_svg((320, 200), |r| bars(r, 4.0)).unwrap();
        let c = render_svg((320, 200), |r| bars(r, 5.0)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.starts_with("<svg"), "{}", &a[..200]);
        assert!(a.contains("label\n</text>") || a.contains(">label</text>"), "{a}");
    }

    #[test]
    fn bad_names_and_missing_chapter_are_errors() {
        assert!(matches!(svg("Bad Name", (10, 10), |_| Ok(())), Err(FigureError::BadName(_))));
        // init() has not run in this test binary.
        if crate::chapter().is_empty() {
            assert!(matches!(svg("ok", (10, 10), |_| Ok(())), Err(FigureError::NoChapter)));
        }
    }

    #[test]
    fn grays_span_black_to_white() {
        assert_eq!(gray(0.0), RGBColor(0, 0, 0));
        assert_eq!(gray(1.0), RGBColor(255, 255, 255));
        assert_eq!(gray(0.5), RGBColor(128, 128, 128));
    }
}
