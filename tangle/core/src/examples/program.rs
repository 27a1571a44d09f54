//! One example → the Rust source rustdoc would compile for it, line for line.
//!
//! rustdoc's rules: a line whose text starts with `# ` (or is a lone `#`) is compiled but
//! hidden from readers (`##` shows a literal `#`); leading `#![...]` inner attributes and
//! `extern crate` lines belong at the top of the crate; the rest is wrapped in
//! `fn main() { ... }` unless the example defines `main`, and an example that ends in `(())`
//! (`Ok::<(), E>(())`) runs inside a function returning `Result`, so that `?` works. Hidden
//! markers are replaced by spaces rather than removed, so that every column stays where the
//! chapter has it and a compiler position maps back by a constant line offset.

use regex::Regex;

use super::include::{Included, Line};

/// An example's code, split as rustdoc splits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The leading lines that belong at the top of a crate (`#![...]`, `extern crate`, and
    /// blank lines and comments among them), hidden markers blanked.
    pub head: Vec<String>,
    /// The remaining lines, hidden markers blanked.
    pub body: Vec<String>,
    /// Whether the example defines `fn main` itself.
    pub defines_main: bool,
    /// Whether the wrapped body ends in `(())` and so returns a `Result`.
    pub returns_result: bool,
    /// For each line of the head, then of the body, the zero-based example line it came from
    /// (an included line: its directive's).
    pub origin: Vec<usize>,
    /// For the same lines, where an included one stands in its file.
    pub included: Vec<Option<Included>>,
}

impl Program {
    /// How many chapter lines the head spans: the body starts that many lines after the
    /// example's first line.
    #[cfg(test)]
    fn head_len(&self) -> usize {
        self.head.len()
    }

    /// The name the example gives its crate (`#![crate_name = "rary"]`), which its crate must
    /// then have: rustc refuses a crate named otherwise on its command line.
    pub(crate) fn crate_name(&self) -> Option<String> {
        let attribute = Regex::new(r#"^\s*#!\[\s*crate_name\s*=\s*"([A-Za-z_][A-Za-z0-9_]*)"\s*\]"#).expect("valid");
        self.head.iter().find_map(|l| attribute.captures(l).map(|c| c[1].to_string()))
    }

    /// Whether the example needs a crate of its own: crate-level lines, or code that names
    /// the crate root (which a merged crate's root is not).
    pub(crate) fn needs_own_crate(&self, edition: &str) -> bool {
        let text = self.body.join("\n");
        // `#[global_allocator]` and `#[panic_handler]` may appear once in a crate, and a symbol
        // an example exports by name (`no_mangle`, `export_name`) once in a program: two
        // examples that each have one cannot share it.
        let uses_crate_root = text.contains("crate::")
            || text.contains("macro_export")
            || text.contains("global_allocator")
            || text.contains("panic_handler")
            || text.contains("no_mangle")
            || text.contains("export_name");
        // In edition 2015 `use` paths start at the crate root, where a merged example's items
        // are not.
        let rooted_uses = edition == "2015"
            && self.defines_main
            && Regex::new(r"(?m)^\s*(pub\s+)?use\s").expect("valid").is_match(&text);
        self.head.iter().any(|l| !is_blank_or_comment(l)) || uses_crate_root || rooted_uses
    }

    /// The example as a module of a merged crate, or the source of the crate root of a
    /// standalone crate (`standalone`), and the line of that file where the chapter's first
    /// line lands. Every chapter line keeps its own generated line, in order.
    pub fn source(&self, standalone: bool) -> (String, usize) {
        let mut out = String::new();
        let mut first = 1;
        if standalone {
            out += "#![allow(unused)]\n";
            first += 1;
        }
        for line in &self.head {
            out += line;
            out.push('\n');
        }
        let (open, close) = match (self.defines_main, self.returns_result) {
            (true, _) => ("", String::new()),
            (false, false) => ("fn main() {", "}".to_string()),
            (false, true) => (
                "fn main() { fn _inner() -> ::std::result::Result<(), impl ::std::fmt::Debug> {",
                "} _inner().unwrap() }".to_string(),
            ),
        };
        // The opening goes on the line before the body, or on a line of its own when there is
        // no head (so that the body's first line keeps its number).
        if !open.is_empty() {
            out += open;
            out.push('\n');
            if self.head.is_empty() {
                first += 1;
            }
        }
        for line in &self.body {
            out += line;
            out.push('\n');
        }
        out += &close;
        out.push('\n');
        if !standalone {
            out += "pub(crate) fn __tangle_main() -> impl ::std::process::Termination { main() }\n";
        }
        (out, first)
    }

    /// The generated line (one-based, in [`Program::source`]) of the program's zero-based
    /// line `k` (head lines first, then body lines).
    pub(crate) fn generated_line(&self, standalone: bool, k: usize) -> usize {
        let first = 1 + usize::from(standalone) + usize::from(!self.defines_main && self.head.is_empty());
        let head = self.head.len();
        match k < head {
            true => first + k,
            false => first + head + usize::from(!self.defines_main && head > 0) + (k - head),
        }
    }
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with("//")
}

/// A line as the compiler sees it: `# ` and a lone `#` blanked, `##` made `#` (a space in
/// front, so that the columns after it stay put).
pub(crate) fn unhide(line: &str) -> String {
    let lead = line.len() - line.trim_start().len();
    let t = &line[lead..];
    if t.starts_with("##") {
        format!("{} {}", &line[..lead], &t[1..])
    } else if t.starts_with("# ") || t.starts_with("#\t") {
        format!("{}  {}", &line[..lead], &t[2..])
    } else if t.trim_end() == "#" {
        String::new()
    } else {
        line.to_string()
    }
}

/// Whether readers of the book see this line (rustdoc's and mdBook's rule).
#[cfg(test)]
fn is_hidden(line: &str) -> bool {
    let t = line.trim_start();
    !t.starts_with("##") && (t.starts_with("# ") || t.starts_with("#\t") || t.trim_end() == "#")
}

/// Splits an example's code (`\n` line ends) as rustdoc does.
pub fn split(code: &str) -> Program {
    split_lines(
        code.lines().enumerate().map(|(i, l)| Line { text: l.to_string(), example_line: i, included: None }).collect(),
    )
}

/// [`split`] for lines that each carry where they came from (see `include`).
pub(crate) fn split_lines(lines: Vec<Line>) -> Program {
    let origin: Vec<usize> = lines.iter().map(|l| l.example_line).collect();
    let included: Vec<Option<Included>> = lines.iter().map(|l| l.included.clone()).collect();
    let lines: Vec<String> = lines.iter().map(|l| unhide(&l.text)).collect();
    let mut head_len = 0;
    let mut crates_seen = false;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        let attribute = t.starts_with("#![") && !crates_seen;
        let extern_crate = t.starts_with("extern crate ") || t.starts_with("#[macro_use] extern crate ");
        if attribute || extern_crate {
            crates_seen |= extern_crate;
            head_len = i + 1;
        } else if !is_blank_or_comment(t) {
            break;
        }
    }
    let (head, body) = lines.split_at(head_len);
    let text = body.join("\n");
    let defines_main = Regex::new(r"(?m)^\s*(pub(\([a-z]+\))?\s+)?(async\s+)?(unsafe\s+)?fn\s+main\s*\(")
        .expect("valid")
        .is_match(&text);
    let last = body.iter().rev().map(|l| l.trim()).find(|l| !l.is_empty() && !l.starts_with("//"));
    let returns_result = !defines_main && last.is_some_and(|l| l.ends_with("(())"));
    Program { head: head.to_vec(), body: body.to_vec(), defines_main, returns_result, origin, included }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_lines_keep_their_columns() {
        assert_eq!(unhide("# let x = 1;"), "  let x = 1;");
        assert_eq!(unhide("    # use std::fmt;"), "      use std::fmt;");
        assert_eq!(unhide("#"), "");
        assert_eq!(unhide("##[derive(Debug)]"), " #[derive(Debug)]");
        assert_eq!(unhide("#[derive(Debug)]"), "#[derive(Debug)]");
        assert!(is_hidden("# fn main() {") && is_hidden("#") && !is_hidden("#[test]") && !is_hidden("##x"));
    }

    #[test]
    fn a_plain_example_is_wrapped_in_main_line_for_line() {
        let p = split("let x = 1;\nassert_eq!(x, 1);\n");
        assert!(!p.defines_main && p.head.is_empty());
        let (src, first) = p.source(false);
        assert_eq!(first, 2);
        assert_eq!(src.lines().nth(1), Some("let x = 1;"));
        assert!(src.contains("fn __tangle_main"));
        assert_eq!(p.generated_line(false, 1), 3);
        assert_eq!(src.lines().nth(p.generated_line(false, 0) - 1), Some("let x = 1;"));
        assert!(!p.needs_own_crate("2021"));
    }

    #[test]
    fn crate_attributes_and_extern_crates_stay_at_the_top() {
        let p = split("#![allow(dead_code)]\n# extern crate itoa;\n\nfn main() {\n    let _ = 1;\n}\n");
        assert_eq!(p.head_len(), 2);
        assert!(p.defines_main && p.needs_own_crate("2021"));
        let (src, first) = p.source(true);
        assert_eq!(first, 2);
        assert_eq!(src.lines().nth(2), Some("  extern crate itoa;"));
        assert_eq!(src.lines().nth(4), Some("fn main() {"));
        assert_eq!(p.generated_line(true, 3), 5);
        assert_eq!(p.generated_line(true, 1), 3);
        let wrapped = split("#![allow(unused)]\nlet x = 1;\n");
        let (src, first) = wrapped.source(true);
        assert_eq!((first, src.lines().nth(3)), (2, Some("let x = 1;")));
        assert_eq!(wrapped.generated_line(true, 1), 4);
        assert_eq!(wrapped.generated_line(true, 0), 2);
    }

    #[test]
    fn question_marks_need_a_result() {
        let p = split("let n: u8 = \"3\".parse()?;\nOk::<(), std::num::ParseIntError>(())\n");
        assert!(p.returns_result);
        assert!(p.source(false).0.contains("_inner().unwrap()"));
        assert!(!split("fn main() {}\n").returns_result);
    }

    #[test]
    fn edition_2015_use_paths_start_at_the_crate_root() {
        let p = split("use std::fmt;\nfn main() {}\n");
        assert!(p.needs_own_crate("2015") && !p.needs_own_crate("2018"));
        assert!(split("struct S;\nfn f() -> crate::S { S }\n").needs_own_crate("2021"));
        // One allocator per crate: an example that sets it cannot share a crate with another.
        let allocator = "use std::alloc::System;\n#[global_allocator]\nstatic A: System = System;\nfn main() {}\n";
        assert!(split(allocator).needs_own_crate("2021"));
        // A symbol exported by name may be defined once in a program.
        let exported = "#[unsafe(no_mangle)]\npub extern \"C\" fn shared_name() {}\nfn main() {}\n";
        assert!(split(exported).needs_own_crate("2024"));
        // Rust by Example names a crate; its crate must have that name.
        let named = split("// A library.\n#![crate_type = \"lib\"]\n#![crate_name = \"rary\"]\npub fn f() {}\n");
        assert!(named.needs_own_crate("2015"));
        assert_eq!(named.crate_name().as_deref(), Some("rary"));
        assert_eq!(split("fn main() {}\n").crate_name(), None);
    }
}
