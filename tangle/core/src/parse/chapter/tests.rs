use super::*;

fn parse(md: &str) -> Result<Chapter, Diagnostics> {
    parse_chapter("ch01", Path::new("book/src/ch01.md"), md.as_bytes().to_vec())
}

fn errors(md: &str) -> Vec<String> {
    match parse(md) {
        Ok(_) => Vec::new(),
        Err(d) => d.0.iter().map(|d| d.to_string()).collect(),
    }
}

#[test]
fn cells_and_outputs_inside_lists_and_quotes() {
    let md = "# 1 One\n\n1. First:\n\n   ```rust\n   println!(\"a\");\n   ```\n\n   ```output\n   a\n   ```\n\n> ```rust\n> println!(\"b\");\n> ```\n>\n> ```output\n> b\n> ```\n";
    let ch = parse(md).unwrap();
    assert_eq!(ch.cells.len(), 2);
    let out: Vec<&str> = ch.cells.iter().map(|c| c.output.as_ref().unwrap().text.as_str()).collect();
    assert_eq!(out, vec!["a\n", "b\n"]);
    assert_eq!(ch.cells[0].prefix, "   ");
    assert_eq!(ch.cells[1].output.as_ref().unwrap().prefix, "> ");
    assert_eq!(ch.cells[1].code_line, 14);
}

#[test]
fn an_output_outside_its_cells_container_is_not_its_output() {
    let md = "> ```rust\n> println!(\"b\");\n> ```\n\n```output\nb\n```\n";
    assert_eq!(
        errors(md),
        vec![
            "book/src/ch01.md:5:1: this output block does not follow a rust cell (help: put it right after the cell whose output it shows (only blank lines between them, in the same list item or quote))"
        ]
    );
}

#[test]
fn the_marker_is_the_first_line_and_nothing_else() {
    let blank_first = "```rust\n\n// @save\npub fn f() {}\n```\n";
    assert!(errors(blank_first)[0].contains("`// @save` must be the cell's first line"), "{:?}", errors(blank_first));
    assert!(errors("```rust\n// @Save\nfn f() {}\n```\n")[0].contains("unknown cell marker `@Save`"));
    assert!(errors("```rust\n// @save extra\nfn f() {}\n```\n")[0].contains("must be exactly `// @save`"));
    let ch = parse("```rust\n// @test\n#[test]\nfn t() {}\n```\n").unwrap();
    assert_eq!(ch.cells[0].kind, CellKind::Test);
}

#[test]
fn every_mistake_is_reported_not_only_the_first() {
    let md = "```rust\n// @Save\n```\n\n```output\nx\n```\n\n<!-- tangle: data -->\n\nProse.\n\n```output\ny\n```\n\n```text\nnever closed\n";
    let e = errors(md);
    assert_eq!(e.len(), 4, "{e:#?}");
    assert!(e[0].contains(":2:1: unknown cell marker"));
    assert!(e[1].contains(":13:1: this output block does not follow a rust cell"));
    assert!(e[2].contains(":17:1: this code block is never closed"));
    assert!(e[3].contains(":9: `tangle: data` names no file"));
}

#[test]
fn unclosed_fence_of_any_language_is_an_error() {
    let md = "# 1\n\n```text\nnever closed\n";
    assert_eq!(errors(md).len(), 1);
    assert!(errors(md)[0].starts_with("book/src/ch01.md:3:1: this code block is never closed"), "{:?}", errors(md));
}

#[test]
fn a_block_left_open_above_a_cell_is_caught() {
    // CommonMark closes the text block at the cell's closing fence: the cell is swallowed.
    let md = "```text\nswallows\n\n```rust\nprintln!(\"x\");\n```\n";
    let e = errors(md);
    assert_eq!(e.len(), 1);
    assert!(e[0].starts_with("book/src/ch01.md:1:1: this code block runs on over the fence at line 4"), "{e:?}");
    // A longer outer fence shows a fence inside a block: that is fine.
    assert!(errors("````markdown\n```rust\nx\n```\n````\n").is_empty());
}

#[test]
fn directives_over_lines_in_any_case_and_with_bad_arguments() {
    let ch =
        parse("<!--\ntangle: Timeout 3\n-->\n<!-- TANGLE: data a.txt b.txt -->\n\n```rust\nlet x = 1;\n```\n").unwrap();
    assert_eq!(ch.directives.timeout, Some(std::time::Duration::from_secs(3)));
    assert_eq!(ch.directives.data.len(), 2);
    assert!(errors("<!-- tangle timeout 3 -->\n\n```rust\n```\n")[0].contains("needs a colon"));
    assert!(errors("<!-- tangle: timeout 0 -->\n\n```rust\n```\n")[0].contains("above 0"));
    assert!(errors("<!-- tangle: timeoot 3 -->\n\n```rust\n```\n")[0].contains("unknown tangle directive `timeoot`"));
    assert!(errors("<!-- tangle: data ../x -->\n\n```rust\n```\n")[0].contains("inside the repository"));
    assert!(errors("<!-- tangle: data ./ -->\n\n```rust\n```\n")[0].contains("the whole repository"));
    // Never closed: one short error at its line, not the rest of the chapter quoted.
    let e = errors("# One\n\n<!-- tangle: freeze\n\nA paragraph.\n\n```rust\nlet x = 1;\n```\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("ch01.md:3") && e[0].contains("`<!-- tangle: freeze` is never closed"), "{e:?}");
    assert!(!e[0].contains("paragraph"), "{e:?}");
}

#[test]
fn fence_attributes_follow_the_one_rule() {
    let ch = parse("```rust,ignore\n// @save\n```\n\n```rust fold=\"Answer\"\nlet a = 1;\n```\n").unwrap();
    assert_eq!(ch.cells.len(), 1);
    assert_eq!(ch.cells[0].presentation, Presentation::Folded(Some("Answer".into())));
    assert!(errors("```rust,no_run\nlet a = 1;\n```\n")[0].contains("unknown attribute `no_run`"));
    let e = parse("```rust,should_panic\npanic!();\n```\n").unwrap_err();
    assert!(e.0[0].notes.iter().any(|(_, n)| n.contains("cells = \"examples\"")), "{:?}", e.0[0].notes);
    // A refused cell's output block adds no error of its own: one mistake, one message.
    let e = errors("```rust,foldd\nprintln!(\"1\");\n```\n\n```output\n1\n```\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("unknown attribute `foldd`"), "{e:?}");
    let e = parse("```rust,foldd\nlet a = 1;\n```\n").unwrap_err();
    assert!(!e.0[0].notes.iter().any(|(_, n)| n.contains("examples")), "{:?}", e.0[0].notes);
    let spec = parse("```rust\nlet a = 1;\n```\n```output T=\"\\d+ ms\" rtol=0.1\n3 ms\n```\n").unwrap().cells[0]
        .output
        .clone()
        .unwrap()
        .spec;
    assert_eq!(spec.rtol, Some(0.1));
    assert_eq!(spec.redactions[0].regex.as_str(), r"\d+ ms");
    assert!(errors("```rust\nlet a = 1;\n```\n```output rtol\n```\n")[0].contains("needs a value"));
}

#[test]
fn sections_and_a_bom() {
    let ch = parse("\u{feff}# 1 One\n\n## 1.2 Two\n\n```rust\nlet a = 1;\n```\n").unwrap();
    assert_eq!(ch.cells[0].section, "1.2 Two");
}

#[test]
fn invalid_utf8_names_the_line() {
    let mut bytes = b"# 1\n\nok\n".to_vec();
    bytes.extend([0xff, b'\n']);
    let e = parse_chapter("ch01", Path::new("book/src/ch01.md"), bytes).unwrap_err();
    assert_eq!(e.0[0].to_string(), "book/src/ch01.md:4: the file is not valid UTF-8 (re-save it as UTF-8)");
}

fn parse_examples(md: &str) -> Result<Chapter, Diagnostics> {
    parse_chapter_as("ch01", Path::new("book/src/ch01.md"), md.as_bytes().to_vec(), CellMode::Examples)
}

#[test]
fn examples_chapters_read_rustdoc_attributes() {
    let md = "```rust,ignore\nnot rust\n```\n\n```rust,compile_fail,E0382,edition2018\nlet x = 1;\n```\n\n\
              ```rust no_run editable\n// @save\nloop {}\n```\n\n```output\nx\n```\n\n> ```rust,should_panic\n> panic!();\n> ```\n";
    let ch = parse_examples(md).unwrap();
    assert_eq!(ch.mode, CellMode::Examples);
    let attrs: Vec<ExampleAttributes> = ch.cells.iter().map(|c| c.example.clone().unwrap()).collect();
    assert!(attrs[0].ignore && !attrs[0].compile_fail);
    assert!(attrs[1].compile_fail && attrs[1].error_codes == ["E0382"] && attrs[1].edition.as_deref() == Some("2018"));
    assert!(attrs[2].no_run && !attrs[2].ignore);
    assert!(attrs[3].should_panic);
    // A marker means nothing in an example; the block is a run cell whose output follows it.
    assert!(ch.cells.iter().all(|c| c.kind == CellKind::Run));
    assert_eq!(ch.cells[2].output.as_ref().unwrap().text, "x\n");
    assert_eq!(ch.cells[3].prefix, "> ");
    // rustdoc's `test_harness` runs the example's tests, which tangle does not yet: ignored, not
    // passed; `standalone_crate` keeps it out of a merged crate.
    let ch = parse_examples(
        "```rust,test_harness\n#[test]\nfn t() {}\n```\n\n```rust,standalone_crate\nfn main() {}\n```\n",
    )
    .unwrap();
    let attrs: Vec<ExampleAttributes> = ch.cells.iter().map(|c| c.example.clone().unwrap()).collect();
    assert!(attrs[0].test_harness && attrs[0].ignore);
    assert!(attrs[1].standalone_crate && !attrs[1].ignore);
}

#[test]
fn examples_reject_misspelled_attributes_and_stray_error_codes() {
    let e = parse_examples("```rust,shuold_panic\npanic!();\n```\n").unwrap_err();
    assert!(e.0[0].message.contains("unknown attribute `shuold_panic`"), "{}", e.0[0].message);
    assert!(e.0[0].message.contains("did you mean `should_panic`?"), "{}", e.0[0].message);
    let e = parse_examples("```rust,compile-fail\nlet x: u8 = 256;\n```\n").unwrap_err();
    assert!(e.0[0].message.contains("did you mean `compile_fail`?"), "{}", e.0[0].message);
    // A word of the book's own, as The Rust Programming Language has them: ignored, as rustdoc
    // ignores it.
    let ch = parse_examples(
        "```rust,ignore,does_not_compile\nlet x = ;\n```\n\n```rust,should_panic,panics\npanic!();\n```\n",
    )
    .unwrap();
    let attrs: Vec<_> = ch.cells.iter().map(|c| c.example.clone().unwrap()).collect();
    assert!(attrs[0].ignore && attrs[1].should_panic);
    let e = parse_examples("```rust,E0382\nlet x = 1;\n```\n").unwrap_err();
    assert!(e.0[0].message.contains("only meaningful with `compile_fail`"), "{}", e.0[0].message);
}

#[test]
fn a_chapter_chooses_its_mode() {
    let md = "<!-- tangle: cells examples -->\n\n```rust,no_run\nloop {}\n```\n";
    let ch = parse(md).unwrap();
    assert_eq!(ch.mode, CellMode::Examples);
    assert!(ch.cells[0].example.as_ref().unwrap().no_run);
    let md = "<!-- tangle: cells notebook -->\n\n```rust\n// @save\npub fn f() {}\n```\n";
    let ch = parse_examples(md).unwrap();
    assert_eq!((ch.mode, ch.cells[0].kind), (CellMode::Notebook, CellKind::Save));
    let e = parse("<!-- tangle: cells doctests -->\n\n```rust\nlet x = 1;\n```\n").unwrap_err();
    assert!(e.0[0].message.contains("`examples` or `notebook`"), "{}", e.0[0].message);
}

#[test]
fn a_merge_conflict_is_named_at_its_first_marker_and_a_quoted_one_is_text() {
    // The conflict breaks a fence: one error, at the `<<<<<<<` line, and not the fence's.
    let md = "# One\n\n```rust\nprintln!(\"a\");\n```\n\n<<<<<<< HEAD\n```output\na\n```\n=======\n```output\nb\n\
              >>>>>>> theirs\n```\n";
    let found = errors(md);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("book/src/ch01.md:7:1: an unresolved merge conflict"), "{found:?}");
    // Inside a Rust cell, it is a conflict too.
    let md = "```rust\n<<<<<<< HEAD\nprintln!(\"a\");\n=======\nprintln!(\"b\");\n>>>>>>> b\n```\n";
    assert!(errors(md)[0].starts_with("book/src/ch01.md:2:1: an unresolved merge conflict"), "{:?}", errors(md));
    // A chapter about git may show one, or print one.
    let md = "```text\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> b\n```\n\n```rust\nprintln!(\"a\");\n```\n";
    assert_eq!(errors(md), Vec::<String>::new());
    let md = "```rust\nprintln!(\"<<<<<<< a\\n=======\\n>>>>>>> b\");\n```\n\n```output\n<<<<<<< a\n=======\n>>>>>>> b\n```\n";
    assert_eq!(errors(md), Vec::<String>::new());
    // Half a conflict (a line of `=` under a heading) is not one.
    let md = "Title\n=======\n\n```rust\nprintln!(\"a\");\n```\n";
    assert_eq!(errors(md), Vec::<String>::new());
}
