use super::*;

fn fences(md: &str) -> Vec<Fence> {
    Document::parse(md).fences
}

#[test]
fn top_level_fence_spans_and_content() {
    let md = "text\n\n```rust\nlet x = 1;\n```\nafter\n";
    let f = &fences(md)[0];
    assert_eq!(&md[f.span.clone()], "```rust\nlet x = 1;\n```");
    assert_eq!(&md[f.content.clone()], "let x = 1;\n");
    assert_eq!(f.text, "let x = 1;\n");
    assert_eq!((f.line, f.closed, f.prefix.as_str()), (3, true, ""));
    assert_eq!(f.lang(), "rust");
}

#[test]
fn fence_in_a_list_item_knows_its_prefix() {
    let md = "1. Step:\n\n   ```rust\n   println!(\"hi\");\n\n   let x = 1;\n   ```\n\n   ```output\n   hi\n   ```\n";
    let fs = fences(md);
    assert_eq!(fs.len(), 2);
    assert_eq!(fs[0].prefix, "   ");
    assert_eq!(fs[0].text, "println!(\"hi\");\n\nlet x = 1;\n");
    assert_eq!(&md[fs[1].content.clone()], "   hi\n");
    assert_eq!(&md[fs[1].span.clone()], "```output\n   hi\n   ```");
    assert!(fs[1].closed);
}

#[test]
fn fence_on_the_list_items_first_line_continues_with_spaces() {
    let md = "- ```rust\n  let a = 1;\n  ```\n";
    let f = &fences(md)[0];
    assert_eq!(f.prefix, "  ");
    assert_eq!(f.text, "let a = 1;\n");
    assert!(f.closed);
}

#[test]
fn fence_in_a_blockquote_and_nested_in_a_list() {
    let md = "> ```rust\n> let y = 2;\n> ```\n\n- item\n\n  > ```output\n  > 2\n  > ```\n";
    let fs = fences(md);
    assert_eq!(fs[0].prefix, "> ");
    assert!(fs[0].closed);
    assert_eq!(fs[0].text, "let y = 2;\n");
    assert_eq!(&md[fs[1].content.clone()], "  > 2\n");
    assert_eq!(fs[1].prefix, "  > ");
}

#[test]
fn unclosed_fences_are_seen_even_in_containers() {
    assert!(!fences("```text\nswallows\n```rust\nx\n")[0].closed);
    let md = "- item\n\n  ```text\n  a\n\nafter\n";
    let f = &fences(md)[0];
    assert!(!f.closed);
    assert_eq!(&md[f.span.clone()], "```text\n  a");
    // A shorter or different closing fence does not close.
    assert!(!fences("````rust\nx\n```\n")[0].closed);
    assert!(!fences("~~~\nx\n```\n")[0].closed);
    assert!(fences("~~~~ rust\nx\n~~~~~\n")[0].closed);
}

#[test]
fn longer_fences_hold_shorter_ones() {
    let md = "````markdown\n```rust\nx\n```\n````\n";
    let fs = fences(md);
    assert_eq!(fs.len(), 1);
    assert_eq!(fs[0].text, "```rust\nx\n```\n");
    assert_eq!(fs[0].marker_len, 4);
}

#[test]
fn crlf_text_is_lf_and_spans_stay_exact() {
    let md = "a\r\n\r\n```rust\r\nlet x = 1;\r\n```\r\nb\r\n";
    let f = &fences(md)[0];
    assert_eq!(f.text, "let x = 1;\n");
    assert_eq!(&md[f.span.clone()], "```rust\r\nlet x = 1;\r\n```");
    assert_eq!(&md[f.content.clone()], "let x = 1;\r\n");
    assert_eq!(f.info_raw, "rust");
}

#[test]
fn a_byte_order_mark_does_not_hide_the_first_heading() {
    let md = "\u{feff}# 3 Title\n\n```rust\nx\n```\n";
    let doc = Document::parse(md);
    assert_eq!(doc.headings[0].text, "3 Title");
    assert_eq!(doc.headings[0].span.start, 3);
    assert_eq!(&md[doc.fences[0].span.clone()], "```rust\nx\n```");
}

#[test]
fn info_is_raw_and_parsed_once() {
    let md = "```output X=\"\\(\\d+\\)\" rtol=0.5\n(1)\n```\n";
    let f = &fences(md)[0];
    assert_eq!(f.info_raw, r#"output X="\(\d+\)" rtol=0.5"#);
    let info = f.info.as_ref().unwrap();
    assert_eq!(info.value("X"), Some(r"\(\d+\)"));
    assert_eq!(info.value("rtol"), Some("0.5"));
}

#[test]
fn comments_in_blocks_inline_and_over_several_lines() {
    let md =
        "<!--\ntangle: timeout 3\n-->\n\ntext <!-- tangle: data a.txt --> more\n\n> <!-- tangle:\n> Timeout 4 -->\n";
    let doc = Document::parse(md);
    let inner: Vec<(&str, usize, bool)> = doc.comments.iter().map(|c| (c.inner.trim(), c.line, c.alone)).collect();
    assert_eq!(
        inner,
        vec![("tangle: timeout 3", 1, true), ("tangle: data a.txt", 5, false), ("tangle:\nTimeout 4", 7, true)]
    );
}

#[test]
fn directives_skip_code_spans_and_may_hold_math_and_code() {
    let md = "See {{#ref fig:a}} and `{{#ref fig:b}}`.\n\n{{#figure x | Caption with $a_{1}$ and `}}` code.}}\n";
    let doc = Document::parse(md);
    let d: Vec<(&str, &str)> = doc.directives.iter().map(|d| (d.name.as_str(), &md[d.args.clone()])).collect();
    assert_eq!(d, vec![("ref", " fig:a"), ("figure", " x | Caption with $a_{1}$ and `}}` code.")]);
}

#[test]
fn directives_nest() {
    let md = "{{#figure x | See {{#ref fig:y}} and {{#ref eq:z}}.}}\n";
    let doc = Document::parse(md);
    let spans: Vec<&str> = doc.directives.iter().map(|d| &md[d.span.clone()]).collect();
    assert_eq!(spans, vec!["{{#figure x | See {{#ref fig:y}} and {{#ref eq:z}}.}}", "{{#ref fig:y}}", "{{#ref eq:z}}"]);
}

#[test]
fn prose_ranges_leave_out_code_math_links_and_directives() {
    let md = "A `code 1` then $x=2$ and [link 3](u) plus {{#value v 4}} end 5.\n";
    let doc = Document::parse(md);
    let prose: String = doc.prose_ranges(&doc.leaves[0]).into_iter().map(|r| &md[r]).collect();
    assert_eq!(prose, "A  then  and  plus  end 5.\n");
}

#[test]
fn display_math_and_tables_are_found() {
    let md = "$$\nx \\tag{1}\n$$\n\n| a | b |\n|---|---|\n| $y$ | 3 |\n";
    let doc = Document::parse(md);
    let kinds: Vec<&InlineKind> = doc.inlines.iter().map(|i| &i.kind).collect();
    assert_eq!(kinds, vec![&InlineKind::DisplayMath("\nx \\tag{1}\n".into()), &InlineKind::InlineMath("y".into())]);
    assert_eq!(doc.leaves.iter().filter(|l| l.kind == LeafKind::TableCell).count(), 4);
}

#[test]
fn reindent_adds_the_prefix_to_later_lines() {
    assert_eq!(reindent("a\n\nb\n", "> "), "a\n>\n> b\n");
    assert_eq!(reindent("a\nb", "   "), "a\n   b");
    assert_eq!(continuation("> 1. "), ">    ");
    assert_eq!(continuation("  - "), "    ");
}

#[test]
fn line_and_column() {
    let doc = Document::parse("ab\ncdé f\n");
    assert_eq!(doc.line_col(0), (1, 1));
    assert_eq!(doc.line_col(7), (2, 4)); // after "cdé" (é is two bytes)
}

#[test]
fn tight_list_items_are_leaves_too() {
    let md = "- one `a` {{#ref fig:x}}\n- two\n\n  para\n";
    let doc = Document::parse(md);
    let leaves: Vec<&str> = doc.leaves.iter().map(|l| &md[l.span.clone()]).collect();
    assert_eq!(leaves, vec!["one `a` {{#ref fig:x}}\n", "two\n", "para\n"]);
    assert_eq!(doc.directives.len(), 1);
}
