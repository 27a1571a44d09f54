//! What a diagram kind is: the fence language that selects it, and how its text becomes SVG.

/// A kind of diagram.
pub trait DiagramKind: Sync {
    fn lang(&self) -> &'static str;
    /// The SVG for the block's text, on one line (it is placed inside an HTML block), or why
    /// it cannot be drawn (`line 2: ...`).
    fn draw(&self, source: &str) -> Result<String, String>;
}
