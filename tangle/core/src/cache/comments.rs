//! Rust source without its plain comments, for the run cache's key: a `//` or `/* */` comment
//! changes nothing a chapter's program does, and rewording one in an early chapter's library
//! should not rerun every chapter that imports it. What the program can see stays: every token
//! on its line and at its column (`line!()`, `column!()`, a panic's location and
//! `Location::caller()` are read from them), so a comment that gains or loses a line, or one
//! before code on its line that grows, still changes the key. Doc comments (`///`, `//!`,
//! `/** */`, `/*! */`) stay too: rustc reads them as attributes, which a lint can refuse
//! (`missing_docs`, a doc comment on a parameter), a macro can print (`stringify!`, a
//! `macro_rules!` pattern) and a derive can turn into output (clap's `--help`). A program that
//! reads its own source (`include_str!("main.rs")`) is the one that sees a plain comment.
//!
//! A small lexer, not a parser: it knows where strings, raw strings, character literals and
//! (nested) block comments begin and end, so that `"a // b"` keeps its slashes. Text it cannot
//! read (an unclosed string) comes out as it went in from there on: keeping a comment in the
//! key only costs a rerun.

/// `code` with every plain comment gone: a line comment removed, a block comment blanked (so
/// that what follows it keeps its column), each line's end kept and its trailing blanks
/// trimmed. Doc comments are kept as they are.
pub(crate) fn without_comments(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let chars: Vec<char> = code.chars().collect();
    let mut state = State::Code;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match state {
            State::Code => match (c, next) {
                ('/', Some('/')) => {
                    // `///` (not `////`) and `//!` are doc comments, kept to the end of the line.
                    let doc = matches!(chars.get(i + 2), Some('!'))
                        || chars.get(i + 2) == Some(&'/') && chars.get(i + 3) != Some(&'/');
                    while i < chars.len() && chars[i] != '\n' {
                        if doc {
                            out.push(chars[i]);
                        }
                        i += 1;
                    }
                    continue;
                }
                ('/', Some('*')) => {
                    // `/**` (not `/**/` or `/***`) and `/*!` open doc comments, kept whole.
                    let keep = matches!(chars.get(i + 2), Some('!'))
                        || chars.get(i + 2) == Some(&'*') && !matches!(chars.get(i + 3), Some('*' | '/'));
                    state = State::Block { depth: 1, keep };
                    out.push_str(if keep { "/*" } else { "  " });
                    i += 2;
                    continue;
                }
                ('"', _) => {
                    state = match raw_hashes(&chars[..i]) {
                        Some(hashes) => State::Raw(hashes),
                        None => State::Str,
                    };
                    out.push(c);
                }
                ('\'', _) => {
                    // A character literal (`'"'`, `'\''`, `'\u{7f}'`) is copied whole; a
                    // lifetime (`'a`) is only its quote.
                    let end = match next {
                        // `'\n'`, `'\''`, `'\u{7f}'`: the first quote after the escaped character.
                        Some('\\') => (i + 3..chars.len()).find(|&k| chars[k] == '\''),
                        Some(_) if chars.get(i + 2) == Some(&'\'') => Some(i + 2),
                        _ => None,
                    };
                    let end = end.unwrap_or(i);
                    out.extend(&chars[i..=end]);
                    i = end + 1;
                    continue;
                }
                _ => out.push(c),
            },
            State::Str => {
                out.push(c);
                match c {
                    '\\' => {
                        if let Some(escaped) = next {
                            out.push(escaped);
                            i += 1;
                        }
                    }
                    '"' => state = State::Code,
                    _ => {}
                }
            }
            State::Raw(hashes) => {
                out.push(c);
                if c == '"' && chars[i + 1..].iter().take(hashes).filter(|&&h| h == '#').count() == hashes {
                    out.extend(std::iter::repeat_n('#', hashes));
                    i += hashes;
                    state = State::Code;
                }
            }
            // A block comment is blanked, not removed: what follows it on its last line keeps
            // its column.
            State::Block { depth, keep } => match (c, next) {
                ('/', Some('*')) => {
                    state = State::Block { depth: depth + 1, keep };
                    out.push_str(if keep { "/*" } else { "  " });
                    i += 1;
                }
                ('*', Some('/')) => {
                    state = if depth == 1 { State::Code } else { State::Block { depth: depth - 1, keep } };
                    out.push_str(if keep { "*/" } else { "  " });
                    i += 1;
                }
                ('\n', _) => out.push('\n'),
                _ => out.push(if keep { c } else { ' ' }),
            },
        }
        i += 1;
    }
    out.lines().map(str::trim_end).collect::<Vec<_>>().join("\n")
}

#[derive(Clone, Copy)]
enum State {
    Code,
    /// Inside `"..."` (or `b"..."`, `c"..."`), where `\` escapes the next character.
    Str,
    /// Inside `r#"..."#` with this many `#`.
    Raw(usize),
    /// Inside a block comment, nested `depth` deep; a doc comment is kept.
    Block {
        depth: usize,
        keep: bool,
    },
}

/// Whether the `"` that follows `before` opens a raw string (`r"`, `r#"`, `br##"`, `cr"`), and
/// with how many `#`: an `r` after the hashes that starts a token, or follows a `b` or `c`
/// that does.
fn raw_hashes(before: &[char]) -> Option<usize> {
    let hashes = before.iter().rev().take_while(|&&c| c == '#').count();
    let rest = &before[..before.len() - hashes];
    let (&r, rest) = rest.split_last()?;
    let starts_token = |rest: &[char]| rest.last().is_none_or(|&c| !(c.is_alphanumeric() || c == '_'));
    let raw = r == 'r'
        && (starts_token(rest)
            || matches!(rest.split_last(), Some((&('b' | 'c'), before_prefix)) if starts_token(before_prefix)));
    raw.then_some(hashes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_comments_go_and_everything_a_program_sees_stays_where_it_was() {
        let code = "// Adds one.\n// (Twice reworded.)\npub fn f(x: u32) -> u32 {\n    x + 1 // the step\n}\n\
                    /* a block /* nested */ still\n   comment */ pub const A: u8 = 1;\n";
        let reworded = code.replace("(Twice reworded.)", "(Reworded again, longer.)").replace("the step", "one");
        assert_eq!(without_comments(code), without_comments(&reworded));
        assert_eq!(
            without_comments(code),
            format!("\n\npub fn f(x: u32) -> u32 {{\n    x + 1\n}}\n\n{}pub const A: u8 = 1;", " ".repeat(14)),
            "lines and columns kept"
        );
        // A comment that gains a line moves what follows it: `line!()` would say otherwise.
        assert_ne!(without_comments(code), without_comments(&code.replace("// Adds one.\n", "// Adds\n// one.\n")));
        // Text after a block comment keeps its column, which `column!()` reads: a longer comment
        // before it on its line moves it. Nor do two tokens run together where one stood.
        assert_ne!(without_comments("let x = /* a */ 5;"), without_comments("let x = /* ab */ 5;"));
        assert_ne!(without_comments("pick!(a/**/b)"), without_comments("pick!(ab)"));
        // Code changes.
        assert_ne!(without_comments(code), without_comments(&code.replace("x + 1", "x + 2")));
    }

    #[test]
    fn doc_comments_are_code() {
        for (before, after) in [
            ("/// Adds one.\nfn f() {}", "/// Adds two.\nfn f() {}"),
            ("//! The crate.\n", "//! The box.\n"),
            ("/** Adds one. */\nfn f() {}", "/** Adds two. */\nfn f() {}"),
            ("/*! The crate. */\n", "/*! The box. */\n"),
            // A plain comment turned doc comment (which rustc refuses on a parameter).
            ("fn f(\n    // the number\n    x: u32,\n) {}", "fn f(\n    /// the number\n    x: u32,\n) {}"),
        ] {
            assert_ne!(without_comments(before), without_comments(after), "{after}");
            assert_eq!(without_comments(after), after.trim_end(), "kept as it is");
        }
        // Four slashes, `/**/` and `/***` are plain comments.
        for plain in ["//// note\nfn f() {}", "/**/ fn f() {}", "/*** note ***/ fn f() {}"] {
            assert!(!without_comments(plain).contains("note") && !without_comments(plain).contains("/*"), "{plain}");
        }
        // A doc comment's quote or slashes start nothing.
        assert_eq!(without_comments("/** a \" */ let s = 1; // c"), "/** a \" */ let s = 1;");
    }

    #[test]
    fn slashes_in_strings_and_characters_are_code() {
        for code in [
            "let s = \"a // b /* c\";",
            "let s = \"quote \\\" // still a string\";",
            "let s = r#\"raw \" // in it\"#;",
            "let s = br##\"raw \"# // bytes\"##;",
            "let c = '\"'; let s = \"// in a string\";",
            "let c = '\\''; let s = \"// in a string\";",
            "fn f<'a>(x: &'a str) -> &'a str { x } let s = \"// in a string\";",
            "let u = '\\u{7f}'; let s = \"// x\";",
        ] {
            assert_eq!(without_comments(code), code, "{code}");
        }
        assert_eq!(without_comments("let r = 1; // r\"not a string\""), "let r = 1;");
        assert_eq!(without_comments("let bar = 2; /* \" */ let s = \"//\";"), "let bar = 2;         let s = \"//\";");
    }
}
