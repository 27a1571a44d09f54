//! Values a run cell publishes for the prose to quote. A sentence of the chapter says
//! `{{#value state_7b 100.4 GiB}}`; the cell that computes the number says
//! `tangle_runtime::value("state_7b", format!("{gib:.1} GiB"))`. `tangle check` fails when the
//! two disagree, `tangle accept` rewrites the sentence's copy, and the book shows the text.
//! The code formats the value once (units, separators, rounding), so the prose and the output
//! blocks cannot disagree on rounding.
//!
//! A value that depends on the machine (a throughput, a timing) says how: [`value_within`] lets
//! its numbers differ by a relative tolerance, [`value_measured`] accepts any text, and the
//! prose keeps the last accepted real measurement (`tangle accept --refresh` takes this
//! machine's).
//!
//! When `tangle` runs the chapter, each value is appended to the file named by [`FILE_ENV`], one
//! record per line: cell, the calling line (`file:line:column`), name, how it may vary, text,
//! separated by [`SEPARATOR`].

use std::fmt::Display;
use std::io::Write;
use std::panic::Location;

/// The variable naming the file `tangle` collects values in.
pub const FILE_ENV: &str = "TANGLE_VALUES_FILE";

/// Separates the fields of a record (an ASCII unit separator, which no value may hold).
pub const SEPARATOR: char = '\u{1f}';

/// How a published value may differ from machine to machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Vary {
    /// It must be the same everywhere: a count, a formula's result.
    Exact,
    /// Its numbers may differ by this relative tolerance; the words around them may not.
    Within(f64),
    /// Any text: a measurement of this machine.
    Measured,
}

impl Vary {
    /// The form written in a record: `exact`, `rtol=0.05`, `measured`.
    pub fn to_field(self) -> String {
        match self {
            Vary::Exact => "exact".into(),
            Vary::Within(rtol) => format!("rtol={rtol}"),
            Vary::Measured => "measured".into(),
        }
    }

    /// Reads [`Vary::to_field`]'s form back.
    pub fn from_field(field: &str) -> Option<Vary> {
        match field {
            "exact" => Some(Vary::Exact),
            "measured" => Some(Vary::Measured),
            other => {
                other.strip_prefix("rtol=")?.parse().ok().filter(|r: &f64| r.is_finite() && *r >= 0.0).map(Vary::Within)
            }
        }
    }
}

/// Publishes a value that must be the same on every machine.
#[track_caller]
pub fn value(name: &str, text: impl Display) {
    publish(name, &text.to_string(), Vary::Exact, Location::caller());
}

/// Publishes a value whose numbers may differ by `rtol` (relative) between machines.
#[track_caller]
pub fn value_within(name: &str, text: impl Display, rtol: f64) {
    publish(name, &text.to_string(), Vary::Within(rtol), Location::caller());
}

/// Publishes a measurement of this machine: any text is accepted by `tangle check`.
#[track_caller]
pub fn value_measured(name: &str, text: impl Display) {
    publish(name, &text.to_string(), Vary::Measured, Location::caller());
}

/// Why `name` or `text` cannot be quoted in a sentence, if it cannot.
pub fn check(name: &str, text: &str) -> Result<(), String> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) {
        return Err(format!("value name `{name}`: use ASCII letters, digits, `_`, `-` and `.`"));
    }
    let bad = ['\n', '\r', SEPARATOR, '`'];
    if text.contains(bad) || text.contains("{{") || text.contains("}}") {
        return Err(format!(
            "value `{name}` = {text:?} cannot stand in a sentence: no line breaks, backticks, `{{{{` or `}}}}`"
        ));
    }
    Ok(())
}

fn publish(name: &str, text: &str, vary: Vary, at: &Location) {
    if let Err(why) = check(name, text) {
        // The call's place in the generated file, which tangle shows at its chapter line (the
        // panic itself is placed in this file, and its cell at the cell's first line).
        panic!("{why} (published at {}:{})", at.file(), at.line());
    }
    if let Vary::Within(rtol) = vary {
        assert!(rtol.is_finite() && rtol >= 0.0, "value `{name}`: the tolerance must be a non-negative number");
    }
    let Some(path) = std::env::var_os(FILE_ENV) else { return };
    let cell = crate::current_cell().map_or(String::new(), |c| c.to_string());
    let at = format!("{}:{}:{}", at.file(), at.line(), at.column());
    let record = format!("{cell}{SEPARATOR}{at}{SEPARATOR}{name}{SEPARATOR}{}{SEPARATOR}{text}\n", vary.to_field());
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(record.as_bytes()));
    if let Err(e) = written {
        panic!("cannot record value `{name}` in {}: {e}", std::path::Path::new(&path).display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_texts_that_fit_in_a_sentence() {
        assert!(check("state_7b", "100.4 GiB").is_ok());
        assert!(check("mfu", "$1.2M at 41.0%").is_ok());
        assert!(check("bad name", "1").is_err());
        assert!(check("x", "two\nlines").is_err());
        assert!(check("x", "a}}b").is_err());
        assert_eq!(Vary::from_field(&Vary::Within(0.25).to_field()), Some(Vary::Within(0.25)));
        assert_eq!(Vary::from_field("measured"), Some(Vary::Measured));
        assert_eq!(Vary::from_field("rtol=-1"), None);
    }
}
