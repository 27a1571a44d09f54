//! KaTeX, the JavaScript that turns LaTeX into MathML, run in QuickJS through the `quick-js`
//! crate. [`super::math`] is its one caller.
//!
//! KaTeX 0.16.4 and its mhchem extension ship in this crate (`katex/`, under KaTeX's MIT
//! licence, `katex/LICENSE`), the same files the `katex` crate 0.4.6 embeds. That crate is
//! this module plus a builder for its options, and the builder alone (derive_builder 0.12,
//! darling 0.14, syn 1, itertools 0.10, thiserror 1) brings twelve crates that nothing else
//! here uses. Without them, a fresh clone's first `cargo tangle book` took 102.6 s instead of
//! 105.7 s (172.8 s of CPU time instead of 176.1 s, two idle cores, one run each). Every
//! reader of a fresh clone waits for that build, so the few lines here stand instead.

use quick_js::{Context, JsValue};

/// KaTeX and mhchem as a browser would load them (with no `module` or `define` in scope they
/// set the global `katex`), then the one function Rust calls: it returns `{ok: markup}` or
/// `{error: KaTeX's message}`, so that a parse error reads as KaTeX wrote it.
const SOURCE: &str = concat!(
    include_str!("../katex/katex.min.js"),
    ";\n",
    include_str!("../katex/mhchem.min.js"),
    ";\n",
    r#"
function tangleRenderMathml(latex, display) {
    try {
        return { ok: katex.renderToString(latex, { displayMode: display, output: "mathml", throwOnError: true }) };
    } catch (e) {
        var message = String(e && e.message ? e.message : e);
        // A parse error's message ends with the formula again, each character underlined with a
        // combining mark, after " at position N: " (or " at end of input: "); the diagnostic
        // already points at the formula, so that tail goes.
        if (e instanceof katex.ParseError && e.position !== undefined) {
            var tails = [" at end of input: ", " at position " + (e.position + 1) + ": "];
            for (var i = 0; i < tails.length; i++) {
                var at = message.indexOf(tails[i]);
                if (at >= 0) return { error: message.slice(0, at) };
            }
        }
        return { error: message };
    }
}
"#
);

thread_local! {
    /// One engine per thread, KaTeX loaded into it once.
    static ENGINE: Result<Context, String> = load();
}

fn load() -> Result<Context, String> {
    let context = Context::new().map_err(|e| format!("could not start the JavaScript engine for KaTeX: {e}"))?;
    context.eval(SOURCE).map_err(|e| format!("could not load KaTeX: {e}"))?;
    Ok(context)
}

/// `latex` as MathML (`<math>...</math>`, display or inline), or KaTeX's message for LaTeX it
/// cannot read.
pub fn render_mathml(latex: &str, display: bool) -> Result<String, String> {
    ENGINE.with(|engine| {
        let engine = engine.as_ref().map_err(Clone::clone)?;
        let args = [JsValue::String(latex.to_owned()), JsValue::Bool(display)];
        match engine.call_function("tangleRenderMathml", args) {
            Ok(JsValue::Object(mut result)) => match (result.remove("ok"), result.remove("error")) {
                (Some(JsValue::String(markup)), _) => Ok(markup),
                (_, Some(JsValue::String(message))) => Err(message),
                _ => Err("KaTeX returned neither markup nor a message".to_string()),
            },
            Ok(other) => Err(format!("KaTeX returned {other:?}, not its markup")),
            Err(e) => Err(format!("KaTeX failed: {e}")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_mathml_and_reports_katex_errors_in_its_words() {
        let inline = render_mathml("x^2", false).unwrap();
        assert!(
            inline.contains("<math") && inline.contains("<msup>") && !inline.contains("display=\"block\""),
            "{inline}"
        );
        let display = render_mathml("x^2", true).unwrap();
        assert!(display.contains("display=\"block\""), "{display}");
        let chemistry = render_mathml(r"\ce{H2O}", false).unwrap();
        assert!(chemistry.contains("<mi mathvariant=\"normal\">H</mi>"), "{chemistry}");
        let error = render_mathml(r"\frac{1", false).unwrap_err();
        assert_eq!(error, "KaTeX parse error: Unexpected end of input in a macro argument, expected '}'");
        let error = render_mathml(r"\undefinedmacro x", false).unwrap_err();
        assert_eq!(error, r"KaTeX parse error: Undefined control sequence: \undefinedmacro");
    }
}
