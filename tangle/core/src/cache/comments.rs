//! Rust source without its comments, for the run cache's key: a comment, doc comments included,
//! changes nothing a chapter's program does, and rewording one in an early chapter's library
//! should not rerun every chapter that imports it. What the program can see stays: every token
//! on its line and at its column (`line!()`, a panic's location and `Location::caller()` are
//! read from them), so a comment that gains or loses a line still changes the key. (A derive
//! macro that turns doc comments into text the program prints, clap's `--help`, is the one way
//! a comment reaches a run: after rewording such a comment, `check --rerun` runs it again.)
//!
//! A small lexer, not a parser: it knows where strings, raw strings, character literals and
//! (nested) block comments begin and end, so that `"a // b"` keeps its slashes. Text it cannot
//! read (an unclosed string) comes out as it went in from there on: keeping a comment in the
//! key only costs a rerun.

/// `code` with the text of every comment removed, each line's end kept and its trailing
/// blanks trimmed.
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
                    while i < chars.len() && chars[i] != '\n' {
                        i += 1;
                    }
                    continue;
                }
                ('/', Some('*')) => {
                    state = State::Block(1);
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
            State::Block(depth) => match (c, next) {
                ('/', Some('*')) => {
                    state = State::Block(depth + 1);
                    i += 1;
                }
                ('*', Some('/')) => {
                    state = if depth == 1 { State::Code } else { State::Block(depth - 1) };
                    i += 1;
                }
                ('\n', _) => out.push('\n'),
                _ => {}
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
    /// Inside a block comment, nested this deep.
    Block(usize),
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
    fn comments_go_and_everything_a_program_sees_stays_where_it_was() {
        let code = "/// Adds one.\n/// (Twice reworded.)\npub fn f(x: u32) -> u32 {\n    x + 1 // the step\n}\n\
                    /* a block /* nested */ still\n   comment */ pub const A: u8 = 1;\n";
        let reworded = code.replace("(Twice reworded.)", "(Reworded again, longer.)").replace("the step", "one");
        assert_eq!(without_comments(code), without_comments(&reworded));
        assert_eq!(
            without_comments(code),
            "\n\npub fn f(x: u32) -> u32 {\n    x + 1\n}\n\n pub const A: u8 = 1;",
            "lines and columns kept"
        );
        // A comment that gains a line moves what follows it: `line!()` would say otherwise.
        assert_ne!(without_comments(code), without_comments(&code.replace("/// Adds one.\n", "/// Adds\n/// one.\n")));
        // Code changes.
        assert_ne!(without_comments(code), without_comments(&code.replace("x + 1", "x + 2")));
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
        assert_eq!(without_comments("let bar = 2; /* \" */ let s = \"//\";"), "let bar = 2;  let s = \"//\";");
    }
}
