//! Diagrams written in the Markdown and drawn as SVG when the book is built: a fenced block
//! whose language names a registered kind (```` ```sequence fig=NAME ````). A new kind is one
//! file implementing [`DiagramKind`] plus one line in [`KINDS`]; the rest of the tool (the
//! renderer, the figure numbering, the warnings) finds it through [`find`].

mod kind;
mod sequence;

pub use kind::DiagramKind;

/// Every kind the book may use.
pub static KINDS: &[&dyn DiagramKind] = &[&sequence::Sequence];

/// The kind a fence language selects, if any.
pub fn find(lang: &str) -> Option<&'static dyn DiagramKind> {
    KINDS.iter().copied().find(|k| k.lang() == lang)
}

#[cfg(test)]
mod tests {
    #[test]
    fn sequence_is_registered() {
        let kind = super::find("sequence").unwrap();
        assert!(kind.draw("A->>B: hi\n").unwrap().starts_with("<svg"));
        assert!(super::find("mermaid").is_none());
    }
}
