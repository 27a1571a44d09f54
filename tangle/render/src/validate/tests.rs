//! The validation pass over small books on disk: each finding at its line, and a clean book
//! clean.

use super::*;

/// A project with `book/book.toml` (its root the folder above; `extra` appended to
/// `[preprocessor.tangle]`), `files` written under the root.
fn book(extra: &str, files: &[(&str, &str)]) -> (tempfile::TempDir, Config) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("book/src")).unwrap();
    std::fs::write(
        root.join("book/book.toml"),
        format!("[book]\ntitle = \"T\"\n\n[preprocessor.tangle]\nroot = \"..\"\n{extra}"),
    )
    .unwrap();
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let config = Config::load(root).unwrap();
    (dir, config)
}

fn messages(found: &[Diagnostic]) -> Vec<String> {
    found
        .iter()
        .map(|d| {
            let at = d.location.as_ref().map(|l| format!("{}:{}", l.file.display(), l.line)).unwrap_or_default();
            let help: Vec<&str> = d.notes.iter().map(|(_, n)| n.as_str()).collect();
            format!("{at}: {} [{}]", d.message, help.join("; "))
        })
        .collect()
}

#[test]
fn a_clean_book_is_clean() {
    let (_dir, config) = book(
        "",
        &[
            ("book/src/SUMMARY.md", "# Summary\n\n- [One](ch01.md)\n- [Draft]()\n"),
            ("book/src/ch01.md", "# 1 One\n\n{{#figure bars | Bars.}}\n\n{{#widget calc | A calculator.}}\n"),
            ("book/src/listing.rs", "fn main() {}\n"),
            ("figures/ch01/bars.svg", "<svg/>"),
            ("figures/ch01/calc.widget.json", "{}"),
        ],
    );
    assert_eq!(messages(&validate_with(&config, &Parsed::default())), Vec::<String>::new());
}

#[test]
fn a_missing_chapter_of_summary_is_an_error_at_its_line() {
    let (_dir, config) = book(
        "",
        &[("book/src/SUMMARY.md", "# Summary\n\n- [One](ch01.md)\n- [Two](ch02.md)\n"), ("book/src/ch01.md", "# 1\n")],
    );
    let found = messages(&validate_with(&config, &Parsed::default()));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("book/src/SUMMARY.md:4: SUMMARY.md lists `ch02.md`"), "{found:?}");
}

#[test]
fn unknown_figures_and_calculators_are_errors_with_the_nearest_name() {
    let (_dir, config) = book(
        "",
        &[
            ("book/src/SUMMARY.md", "- [One](ch01.md)\n"),
            (
                "book/src/ch01.md",
                "# 1 One\n\n```rust\ntangle_runtime::figure::svg(\"bars\", (1, 1), |_| Ok(()))?;\n```\n\n\
                 {{#figure barz | Bars.}}\n\n{{#widget calk | Calc.}}\n\n{{#widget calc | Calc.}}\n\n{{#widget calc | Again.}}\n",
            ),
            ("figures/ch01/calc.widget.json", "{}"),
        ],
    );
    let found = messages(&validate_with(&config, &Parsed::default()));
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].starts_with("book/src/ch01.md:7: no figure is named `barz`") && found[0].contains("`bars`?"));
    assert!(found[1].starts_with("book/src/ch01.md:9: no calculator is named `calk`") && found[1].contains("`calc`?"));
    assert!(found[2].starts_with("book/src/ch01.md:13: calculator `calc` is placed twice: at book/src/ch01.md:11"));
}

#[test]
fn a_figure_and_a_calculator_of_one_name_are_an_error() {
    let (_dir, config) = book(
        "",
        &[
            ("book/src/SUMMARY.md", "- [One](ch01.md)\n"),
            (
                "book/src/ch01.md",
                "# 1 One\n\n```rust\ntangle_runtime::figure::svg(\"counter\", (1, 1), |_| Ok(()))?;\n```\n\n\
                 {{#figure counter | Drawn.}}\n\n{{#widget counter | Live.}}\n",
            ),
            ("figures/ch01/counter.widget.json", "{}"),
        ],
    );
    let found = messages(&validate_with(&config, &Parsed::default()));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .starts_with("book/src/ch01.md:9: calculator `counter` has the name of the figure at book/src/ch01.md:7"),
        "{found:?}"
    );
}

#[test]
fn an_unknown_citation_key_is_an_error_with_the_nearest_key() {
    let (_dir, config) = book(
        "",
        &[
            ("book/src/SUMMARY.md", "- [One](ch01.md)\n"),
            ("book/src/ch01.md", "# 1 One\n\nAs shown [@huang2019]; see [@huang2091].\n"),
            (
                "book/references.yaml",
                "huang2019:\n  type: Article\n  title: GPipe\n  author: Huang, Yanping\n  date: 2019\n",
            ),
        ],
    );
    let found = messages(&validate_with(&config, &Parsed::default()));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("ch01.md:3: `@huang2091` is not in the bibliography [did you mean `@huang2019`?"));
}

#[test]
fn includes_read_only_inside_the_book_and_the_listed_folders() {
    let chapter = "# 1 One\n\n{{#include listing.rs}}\n\n{{#include ../../listings/a.rs:2:3}}\n\n\
                   ```text\n{{#include /etc/hostname}}\n```\n\n{{#rustdoc_include ../../../outside.rs}}\n\n\
                   {{#playground missing.rs editable}}\n\n\\{{#include /etc/passwd}}\n\n\
                   ```rust\nlet s = \"{{#include /etc/passwd}}\";\n```\n\n```rust,ignore\n{{#include /etc/group}}\n```\n";
    let files = [
        ("book/src/SUMMARY.md", "- [One](ch01.md)\n"),
        ("book/src/ch01.md", chapter),
        ("book/src/listing.rs", "fn main() {}\n"),
        ("listings/a.rs", "fn a() {}\n"),
    ];
    let (_dir, config) = book("", &files);
    let found = messages(&validate_with(&config, &Parsed::default()));
    assert_eq!(found.len(), 5, "{found:?}");
    assert!(
        found[0].starts_with("book/src/ch01.md:5: `{{#include ../../listings/a.rs:2:3}}` reads listings/a.rs, outside"),
        "the directive as written, its line range too: {}",
        found[0]
    );
    assert!(found[1].starts_with("book/src/ch01.md:8: `{{#include /etc/hostname}}` reads /etc/hostname, outside"));
    assert!(found[2].starts_with("book/src/ch01.md:11: `{{#rustdoc_include ../../../outside.rs}}`"));
    assert!(found[3].starts_with(
        "book/src/ch01.md:13: `{{#playground missing.rs}}` reads book/src/missing.rs, which does not exist"
    ));
    // A folder book.toml lists may be read.
    let (_dir, config) = book("include-dirs = [\"../listings\"]\n", &files);
    assert!(found[4].starts_with("book/src/ch01.md:22: `{{#include /etc/group}}`"), "{found:?}");
    assert_eq!(validate_with(&config, &Parsed::default()).len(), 4);
}

#[test]
fn included_files_are_checked_as_mdbook_expands_them() {
    let (_dir, config) = book(
        "",
        &[
            ("book/src/SUMMARY.md", "- [One](ch01.md)\n"),
            ("book/src/ch01.md", "# 1 One\n\n{{#include parts/nested.md}}\n\n{{#include loop.txt}}\n"),
            ("book/src/parts/nested.md", "Some text.\n\n{{#include ../../../secret.txt}}\n"),
            ("book/src/loop.txt", "{{#include loop.txt}}\n"),
            ("secret.txt", "not for the book\n"),
        ],
    );
    let found = messages(&validate_with(&config, &Parsed::default()));
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with(
            "book/src/ch01.md:3: `{{#include ../../../secret.txt}}` reads secret.txt (through book/src/parts/nested.md), outside"
        ),
        "{found:?}"
    );
    assert!(found[1].starts_with("book/src/ch01.md:5: `{{#include loop.txt}}` reads book/src/loop.txt (through book/src/loop.txt), which is already being included"), "{found:?}");
}

/// A `{{#value}}` cut short by a `|` in a table cell is never closed; the help says why there.
#[test]
fn a_directive_cut_by_a_table_s_bar_says_to_escape_it() {
    let (_dir, config) = book(
        "",
        &[
            ("book/src/SUMMARY.md", "- [One](ch01.md)\n"),
            (
                "book/src/ch01.md",
                "# 1 One\n\n| a | b |\n|---|---|\n| x | {{#value pipe a | b}} |\n\nAnd {{#value open\n",
            ),
        ],
    );
    let found = messages(&validate_with(&config, &Parsed::default()));
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("book/src/ch01.md:5: this `{{#value` is never closed") && found[0].contains("`\\|`"));
    assert!(!found[1].contains("`\\|`") && found[1].contains("same paragraph"), "{}", found[1]);
}
