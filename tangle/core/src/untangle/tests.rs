use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::generate::Generated;
use crate::model::Book;
use crate::parse::parse_chapter;

pub(super) fn config() -> Config {
    Config::parse(Path::new("/r"), Path::new("book"), "[book]\ntitle = \"t\"\n[rust]\nedition = \"2024\"\n").unwrap()
}

pub(super) fn book(md: &str) -> Book {
    Book::from_chapters(vec![parse_chapter("ch01", Path::new("book/src/ch01.md"), md.as_bytes().to_vec()).unwrap()])
}

pub(super) fn generated(book: &Book) -> Generated {
    crate::generate::generate(book, &config(), &mut Analyses::default()).unwrap()
}

pub(super) fn file<'a>(generated: &'a Generated, path: &str) -> &'a str {
    let krate = generated.get("ch01").unwrap();
    &krate.files.iter().find(|(p, _)| p == Path::new(path)).unwrap_or_else(|| panic!("no {path}")).1
}

/// The chapter after untangling one edited file, or the diagnostics.
fn untangled(md: &str, path: &str, edit: impl Fn(&str) -> String) -> Result<String, Diagnostics> {
    let book = book(md);
    let generated = generated(&book);
    let text = edit(file(&generated, path));
    assert_ne!(text, file(&generated, path), "the test edits the file");
    let edited = BTreeMap::from([(PathBuf::from(path), text)]);
    let out = untangle(&book, &config(), &generated, &edited)?;
    assert_eq!(out.len(), 1);
    Ok(out.into_iter().next().unwrap().text)
}

const MD: &str = "# One\n\nSome prose.\n\n```rust\n// @save\n#![allow(dead_code)]\n\n/// Adds one.\npub fn inc(x: u32) -> u32 {\n    x + 1\n}\n```\n\n\
- A list item with a run cell:\n\n  ```rust\n  let s = \"a\n  b\";\n  println!(\"{}\", inc(1));\n  inc(2)\n  ```\n\n\
> A quote with a test cell:\n>\n> ```rust\n> // @test\n> #[test]\n> fn two() {\n>     assert_eq!(inc(1), 2);\n> }\n> ```\n";

#[test]
fn a_doc_comment_edited_in_the_library_goes_back_to_its_line() {
    let out = untangled(MD, "code/ch01/src/lib.rs", |t| t.replace("/// Adds one.", "/// Adds one to `x`.")).unwrap();
    assert_eq!(out, MD.replace("/// Adds one.", "/// Adds one to `x`."));
}

#[test]
fn a_run_cell_edit_loses_the_indentation_and_keeps_the_list_item_s() {
    let main = |t: &str| t.replace("    println!(\"{}\", inc(1));\n", "    let y = inc(1);\n    println!(\"{y}\");\n");
    let out = untangled(MD, "code/ch01/src/main.rs", main).unwrap();
    assert_eq!(out, MD.replace("  println!(\"{}\", inc(1));\n", "  let y = inc(1);\n  println!(\"{y}\");\n"));
    // The line that continues a string was not indented, and an edit of it keeps its text.
    let out = untangled(MD, "code/ch01/src/main.rs", |t| t.replace("\nb\";", "\n  b, c\";")).unwrap();
    assert_eq!(out, MD.replace("\n  b\";", "\n    b, c\";"));
}

#[test]
fn the_semicolon_generation_added_goes_again_unless_it_is_needed_now() {
    assert!(file(&generated(&book(MD)), "code/ch01/src/main.rs").contains("    inc(2);\n"));
    let out = untangled(MD, "code/ch01/src/main.rs", |t| t.replace("    inc(2);", "    inc(3);")).unwrap();
    assert_eq!(out, MD.replace("  inc(2)\n", "  inc(3)\n"));
    // A line added after it: the expression is no longer last, and keeps its `;`; the cell
    // still ends as the author ends run cells, in an expression without one.
    let out =
        untangled(MD, "code/ch01/src/main.rs", |t| t.replace("    inc(2);\n", "    inc(2);\n    inc(4);\n")).unwrap();
    assert_eq!(out, MD.replace("  inc(2)\n", "  inc(2);\n  inc(4)\n"));
}

#[test]
fn a_test_cell_edit_gets_the_quote_prefix_back() {
    let out = untangled(MD, "code/ch01/tests/cells.rs", |t| {
        t.replace("    assert_eq!(inc(1), 2);\n", "    assert_eq!(inc(1), 2);\n\n    assert_eq!(inc(2), 3);\n")
    })
    .unwrap();
    assert_eq!(
        out,
        MD.replace(">     assert_eq!(inc(1), 2);\n", ">     assert_eq!(inc(1), 2);\n>\n>     assert_eq!(inc(2), 3);\n")
    );
    // Lines removed.
    let out = untangled(MD, "code/ch01/tests/cells.rs", |t| t.replace("    assert_eq!(inc(1), 2);\n", "")).unwrap();
    assert_eq!(out, MD.replace(">     assert_eq!(inc(1), 2);\n", ""));
}

#[test]
fn a_hoisted_attribute_edited_at_the_top_goes_back_into_its_cell() {
    let lib = file(&generated(&book(MD)), "code/ch01/src/lib.rs").to_string();
    assert_eq!(lib.lines().nth(3), Some("#![allow(dead_code)]"), "{lib}");
    let out =
        untangled(MD, "code/ch01/src/lib.rs", |t| t.replace("#![allow(dead_code)]", "#![allow(unused)]")).unwrap();
    assert_eq!(out, MD.replace("#![allow(dead_code)]", "#![allow(unused)]"));
    let refused = untangled(MD, "code/ch01/src/lib.rs", |t| t.replace("#![allow(dead_code)]\n", "")).unwrap_err();
    assert!(refused.0[0].message.contains("inner attributes"), "{refused}");
}

#[test]
fn lines_added_at_a_cell_s_end_belong_to_it_and_between_cells_to_none() {
    let md = "```rust\n// @save\npub fn a() {}\n```\n\nProse.\n\n```rust\n// @save\npub fn b() {}\n```\n";
    let out = untangled(md, "code/ch01/src/lib.rs", |t| t.replace("pub fn a() {}\n", "pub fn a() {}\npub fn c() {}\n"))
        .unwrap();
    assert_eq!(out, md.replace("pub fn a() {}\n", "pub fn a() {}\npub fn c() {}\n"));
    // A blank line and a line after it, at the end of the first cell (the blank line could
    // stand on either side of the one between the cells).
    let out =
        untangled(md, "code/ch01/src/lib.rs", |t| t.replace("pub fn a() {}\n", "pub fn a() {}\n\npub fn c() {}\n"))
            .unwrap();
    assert_eq!(out, md.replace("pub fn a() {}\n", "pub fn a() {}\n\npub fn c() {}\n"));
    // Just above the second cell's location comment: between the cells.
    let refused = untangled(md, "code/ch01/src/lib.rs", |t| {
        t.replace("\n\n// book/src/ch01.md:10", "\n\npub fn c() {}\n// book/src/ch01.md:10")
    })
    .unwrap_err();
    assert_eq!(refused.0.len(), 1);
    assert!(refused.0[0].message.contains("added outside every cell"), "{refused}");
}

#[test]
fn edits_outside_every_cell_are_refused_where_they_are() {
    let header = untangled(MD, "code/ch01/src/lib.rs", |t| t.replacen("// Change", "// Please change", 1)).unwrap_err();
    let d = &header.0[0];
    assert!(d.message.contains("tangle's header"), "{d}");
    assert_eq!(d.location.as_ref().unwrap().to_string(), "code/ch01/src/lib.rs:2:1");
    let glue = untangled(MD, "code/ch01/src/main.rs", |t| t.replace("fn main() {", "fn main() { // go")).unwrap_err();
    assert!(glue.0[0].message.contains("`fn main() {`"), "{glue}");
    let manifest =
        untangled(MD, "code/ch01/Cargo.toml", |t| t.replace("[dependencies]\n", "[dependencies]\nrand = \"0.8\"\n"))
            .unwrap_err();
    assert!(manifest.0[0].message.contains("added to a manifest"), "{manifest}");
    let manifest =
        untangled(MD, "code/ch01/Cargo.toml", |t| t.replace("publish = false", "publish = true")).unwrap_err();
    assert!(manifest.0[0].message.contains("the manifest's line `publish = false`"), "{manifest}");
    // One edit across the end of one cell and the start of the next.
    let md = "```rust\n// @save\npub fn a() {}\n```\n\n```rust\n// @save\npub fn b() {}\n```\n";
    let both = untangled(md, "code/ch01/src/lib.rs", |t| {
        t.replace("pub fn a() {}\n\n// book/src/ch01.md:8\npub fn b()", "pub fn ab()")
    })
    .unwrap_err();
    assert!(both.0[0].message.contains("spans two cells, book/src/ch01.md:2 and book/src/ch01.md:7"), "{both}");
}

#[test]
fn an_edit_that_would_not_come_back_is_refused() {
    // A run-cell line written at column 0: generation would indent it.
    let refused = untangled(MD, "code/ch01/src/main.rs", |t| t.replace("    inc(2);", "inc(2);")).unwrap_err();
    assert!(refused.0[0].message.contains("would not come back"), "{refused}");
    // A cell that no longer parses.
    let broken = untangled(MD, "code/ch01/src/lib.rs", |t| t.replace("    x + 1\n", "    x + (\n")).unwrap_err();
    assert!(broken.0[0].message.contains("would not generate"), "{broken}");
}

#[test]
fn a_file_edited_after_its_chapter_changed_is_refused() {
    let book_now = book(&MD.replace("x + 1", "x + 2"));
    let old = generated(&book(MD));
    let edited = file(&old, "code/ch01/src/lib.rs").replace("/// Adds one.", "/// Adds.");
    let edited = BTreeMap::from([(PathBuf::from("code/ch01/src/lib.rs"), edited)]);
    let refused = untangle(&book_now, &config(), &generated(&book_now), &edited).unwrap_err();
    assert!(refused.0[0].message.contains("changed too"), "{refused}");
}

#[test]
fn the_refusal_offers_untangle_only_where_it_would_take_the_edits() {
    // The file was edited after its chapter changed: no line is blamed on the edit, and
    // untangle, which would refuse, is not the way out offered.
    let book_now = book(&MD.replace("x + 1", "x + 2"));
    let old = generated(&book(MD));
    let edited = file(&old, "code/ch01/src/lib.rs").replace("/// Adds one.", "/// Adds.");
    let d = refusal(&book_now, &config(), &generated(&book_now), &[("code/ch01/src/lib.rs".into(), edited)]);
    let text = d.to_string();
    assert!(d.message.contains("book/src/ch01.md changed too"), "{text}");
    assert_eq!(d.location.as_ref().unwrap().to_string(), "code/ch01/src/lib.rs:1:1");
    assert!(!text.contains("came from"), "{text}");
    assert!(text.contains("undo the chapter's change") && text.contains("sync --discard"), "{text}");
    assert!(!text.contains("take the edits into the chapters with"), "{text}");
    // An edit of tangle's own header line: untangle refuses it, and the advice says so.
    let book = book(MD);
    let generated = generated(&book);
    let lib = file(&generated, "code/ch01/src/lib.rs");
    let first = lib.lines().next().unwrap();
    let edited = lib.replacen(first, &first.replace("do not edit", "edit freely"), 1);
    let text = refusal(&book, &config(), &generated, &[("code/ch01/src/lib.rs".into(), edited)]).to_string();
    assert!(text.contains("cannot take these edits"), "{text}");
    assert!(!text.contains("take the edits into the chapters with"), "{text}");
}

#[test]
fn the_refusal_names_the_edited_line_and_where_it_came_from() {
    let book = book(MD);
    let generated = generated(&book);
    let lib = file(&generated, "code/ch01/src/lib.rs").replace("/// Adds one.", "/// Adds.");
    let main = file(&generated, "code/ch01/src/main.rs").replace("inc(2)", "inc(5)");
    let d = refusal(
        &book,
        &config(),
        &generated,
        &[("code/ch01/src/lib.rs".into(), lib), ("code/ch01/src/main.rs".into(), main)],
    );
    assert!(d.message.contains("code/ch01/src/lib.rs was edited"), "{d}");
    let line = file(&generated, "code/ch01/src/lib.rs").lines().position(|l| l == "/// Adds one.").unwrap() + 1;
    assert_eq!(d.location.as_ref().unwrap().to_string(), format!("code/ch01/src/lib.rs:{line}:1"));
    let text = d.to_string();
    assert!(text.contains("came from book/src/ch01.md:9"), "{text}");
    assert!(text.contains("also edited: code/ch01/src/main.rs:"), "{text}");
    assert!(text.contains("tangle untangle") && text.contains("tangle sync --discard"), "{text}");
}

#[test]
fn an_inner_attribute_below_a_comment_stays_where_the_empty_line_stands_for_it() {
    let md = "```rust\n// @save\n// A comment.\n#![allow(dead_code)]\n\npub fn a() {}\n```\n";
    let lib = file(&generated(&book(md)), "code/ch01/src/lib.rs").to_string();
    assert!(lib.contains("// A comment.\n\n\npub fn a() {}"), "{lib}");
    let out = untangled(md, "code/ch01/src/lib.rs", |t| t.replace("pub fn a() {}", "pub fn b() {}")).unwrap();
    assert_eq!(out, md.replace("pub fn a() {}", "pub fn b() {}"));
    // A line added at the cell's start, below its location comment, goes after the marker.
    let out =
        untangled(md, "code/ch01/src/lib.rs", |t| t.replace("// A comment.", "// First.\n// A comment.")).unwrap();
    assert_eq!(out, md.replace("// A comment.", "// First.\n// A comment."));
}

#[test]
fn crlf_chapters_keep_their_line_endings() {
    let md = MD.replace('\n', "\r\n");
    let main =
        |t: &str| t.replace("    println!(\"{}\", inc(1));\n", "    println!(\"{}\", inc(0));\n    let z = 1;\n");
    let out = untangled(&md, "code/ch01/src/main.rs", main).unwrap();
    assert_eq!(out, md.replace("  println!(\"{}\", inc(1));\r\n", "  println!(\"{}\", inc(0));\r\n  let z = 1;\r\n"));
}

#[test]
fn a_blank_line_paired_with_the_wrong_blank_line_still_goes_to_its_cell() {
    // Myers pairs the blank line between the cell and `Ok(())` with the added blank line, and
    // splits the edit in two: the run cell's line removed, the new lines added after the blank.
    let md = "```rust\nlet v0 = 0;\n```\n\n```rust\n// @save\npub fn f() {}\n```\n";
    let out = untangled(md, "code/ch01/src/main.rs", |t| t.replace("    let v0 = 0;\n", "\n    // edit 0\n")).unwrap();
    assert_eq!(out, md.replace("let v0 = 0;\n", "\n// edit 0\n"));
}

#[test]
fn a_file_whose_only_change_is_its_removed_seal_is_shown_at_line_1() {
    let sealed =
        crate::generate::seal::seal("// @generated by tangle: do not edit.\npub fn one() -> u32 {\n    1\n}\n");
    let unsealed = "// @generated by tangle: do not edit.\npub fn one() -> u32 {\n    1\n}\n";
    assert_eq!(first_difference(&sealed, unsealed), 0);
    assert_eq!(first_difference(&sealed, &sealed.replace("    1", "    2")), 2);
}

/// rust-analyzer's auto-import puts a `use` above the first cell (after the header, or beside
/// `main.rs`'s glob import): it goes to the start of the file's first cell, which generates the
/// file with the import at the cell's start.
#[test]
fn an_editor_s_auto_import_above_the_first_cell_goes_into_it() {
    let md = "# One\n\n```rust\n// @save\npub fn inc(x: u32) -> u32 {\n    x + 1\n}\n```\n\n```rust\nprintln!(\"{}\", inc(1));\n```\n";
    let header_end = "`tangle untangle`.\n\n";
    let lib = untangled(md, "code/ch01/src/lib.rs", |t| {
        t.replacen(header_end, &format!("{header_end}use std::collections::HashMap;\n\n"), 1)
    })
    .unwrap();
    assert_eq!(lib, md.replacen("// @save\n", "// @save\nuse std::collections::HashMap;\n\n", 1));
    // Without a blank line below the import, none is added; nor between it and the cell's own.
    let lib = untangled(md, "code/ch01/src/lib.rs", |t| {
        t.replacen(header_end, &format!("{header_end}use std::collections::HashMap;\n"), 1)
    })
    .unwrap();
    assert_eq!(lib, md.replacen("// @save\n", "// @save\nuse std::collections::HashMap;\n", 1));
    let with_use = md.replacen("// @save\n", "// @save\nuse std::fmt;\n", 1);
    let lib = untangled(&with_use, "code/ch01/src/lib.rs", |t| {
        t.replacen(header_end, &format!("{header_end}use std::collections::HashMap;\n\n"), 1)
    })
    .unwrap();
    assert_eq!(lib, md.replacen("// @save\n", "// @save\nuse std::collections::HashMap;\nuse std::fmt;\n", 1));
    let main = untangled(md, "code/ch01/src/main.rs", |t| {
        t.replacen("use ch01::*;\n", "use ch01::*;\nuse std::fmt::Write;\n", 1)
    })
    .unwrap();
    assert_eq!(main, md.replacen("```rust\nprintln!", "```rust\nuse std::fmt::Write;\nprintln!", 1));
    let main = untangled(md, "code/ch01/src/main.rs", |t| {
        t.replacen("use ch01::*;\n", "use ch01::*;\nuse std::fmt::Write;\n\n", 1)
    })
    .unwrap();
    assert_eq!(main, md.replacen("```rust\nprintln!", "```rust\nuse std::fmt::Write;\n\nprintln!", 1));
    // Any other change above the first cell is still tangle's, and refused.
    let refused = untangled(md, "code/ch01/src/lib.rs", |t| {
        t.replacen(header_end, &format!("{header_end}use std::collections::HashMap;\nconst X: u8 = 1;\n"), 1)
    })
    .unwrap_err();
    assert!(refused.0[0].message.contains("added outside every cell"), "{refused}");
}

#[test]
fn a_blank_line_between_cells_is_not_paired_with_one_inside_the_next_cell() {
    // Three test cells, the second with two blank lines inside. A single Myers pass paired the
    // blank line tangle writes between the first two cells with the second cell's first blank
    // line, and read the second cell's location comment as removed and written again.
    let md = "```rust\n// @test\n#[test] fn a() {}\n```\n\n```rust\n// @test\n#[test] fn b() {}\n\n\n#[test] fn c() {}\n```\n\n\
```rust\n// @test\n#[test] fn d() {}\n```\n";
    let generated = generated(&book(md));
    let cells = file(&generated, "code/ch01/tests/cells.rs");
    let out = untangled(md, "code/ch01/tests/cells.rs", |t| {
        t.replace("#[test] fn a() {}\n", "// added\n#[test] fn a() {}\n\n")
            .replace("#[test] fn b() {}\n\n\n", "#[test] fn b() {} // edited\n\n")
    })
    .unwrap_or_else(|d| panic!("{d}\n{cells}"));
    assert_eq!(
        out,
        md.replace("#[test] fn a() {}\n", "// added\n#[test] fn a() {}\n\n")
            .replace("#[test] fn b() {}\n\n\n", "#[test] fn b() {} // edited\n\n")
    );
}

#[test]
fn an_edited_crate_of_a_renamed_chapter_is_told_how_to_take_its_edits() {
    // ch01.md renamed growth.md: code/ch01 is no chapter's, and its lib.rs was edited.
    let old = generated(&book(MD));
    let edited = file(&old, "code/ch01/src/lib.rs").replace("/// Adds one.", "/// Adds one, edited.");
    let renamed = Book::from_chapters(vec![
        parse_chapter("growth", Path::new("book/src/growth.md"), MD.as_bytes().to_vec()).unwrap(),
    ]);
    let now = generated(&renamed);
    let text = refusal(&renamed, &config(), &now, &[("code/ch01/src/lib.rs".into(), edited.clone())]).to_string();
    assert!(text.contains("tangle generated it from book/src/ch01.md, which is no chapter of the book now"), "{text}");
    assert!(text.contains("put it back where it was") && text.contains("tangle untangle"), "{text}");
    // A file of someone's (no header of tangle's) gets the plain advice.
    let text =
        refusal(&renamed, &config(), &now, &[("code/ch01/src/extra.rs".into(), "pub fn x() {}\n".into())]).to_string();
    assert!(!text.contains("put it back") && text.contains("move its code into a cell"), "{text}");
}

#[test]
fn a_line_that_would_close_the_cell_s_fence_is_refused_at_that_line() {
    let refused = untangled(MD, "code/ch01/src/lib.rs", |t| {
        t.replace("    x + 1\n}\n", "    x + 1\n}\n\npub const FENCE: &str = r\"\n```\n\";\n")
    })
    .unwrap_err();
    let d = &refused.0[0];
    assert!(d.message.contains("would close the cell's code block in book/src/ch01.md"), "{refused}");
    let lib = generated(&book(MD));
    let line = file(&lib, "code/ch01/src/lib.rs").lines().position(|l| l == "    x + 1").unwrap() + 5;
    assert_eq!(d.location.as_ref().unwrap().to_string(), format!("code/ch01/src/lib.rs:{line}:1"));
}
