//! How messages name the commands a user can run. An installed tool is `tangle`; inside this
//! repository it runs through cargo's alias, `cargo tangle`, whose `.cargo/config.toml` sets
//! [`COMMAND_VAR`] to say so. Generated files never depend on it: their headers always say
//! `tangle sync`, so the same chapters generate the same bytes however the tool was started.
//! [`closest`] finds the name a typo meant, for "did you mean" help; [`chapter_crates`] lists
//! what a book's chapter crates are called, for a crate name that is none of them; [`few`]
//! lists names in a line a terminal can hold.

/// The variable naming how the user starts tangle (`cargo tangle` in this repository).
pub const COMMAND_VAR: &str = "TANGLE_COMMAND";

/// The command the user runs: `tangle`, or what [`COMMAND_VAR`] says.
pub fn program() -> String {
    std::env::var(COMMAND_VAR).ok().filter(|c| !c.trim().is_empty()).unwrap_or_else(|| "tangle".to_string())
}

/// `tangle ARGS` as the user would type it (`command("sync")` → `tangle sync`).
pub fn command(args: &str) -> String {
    format!("{} {args}", program())
}

/// A book's chapter crates as a message lists them (`` `ch01`, `growth` ``), for a name that
/// is none of them (a chapter renamed since renames its crate); `None` for no chapter, or more
/// than a list helps with (12).
pub fn chapter_crates<'a>(chapters: impl ExactSizeIterator<Item = &'a str>) -> Option<String> {
    match chapters.len() {
        1..=12 => Some(chapters.map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")),
        _ => None,
    }
}

/// `names` joined by commas, the first five and how many more when there are more than six: a
/// progress line of a book of 200 chapters stays a line.
pub fn few(names: &[String]) -> String {
    const SHOWN: usize = 5;
    match names.len() {
        0..=6 => names.join(", "),
        n => format!("{} and {} more", names[..SHOWN].join(", "), n - SHOWN),
    }
}

/// The known name nearest `name` (a typo's likely target), if one is near enough.
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let similarity = |a: &str, b: &str| similar::TextDiff::from_chars(a, b).ratio();
    known
        .into_iter()
        .map(|k| (similarity(name, k), k))
        .filter(|(r, _)| *r >= 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_of_names_is_cut_to_a_line() {
        let names = |n: usize| (1..=n).map(|i| format!("ch{i:02}")).collect::<Vec<_>>();
        assert_eq!(few(&names(2)), "ch01, ch02");
        assert_eq!(few(&names(6)), "ch01, ch02, ch03, ch04, ch05, ch06");
        assert_eq!(few(&names(25)), "ch01, ch02, ch03, ch04, ch05 and 20 more");
    }
}
