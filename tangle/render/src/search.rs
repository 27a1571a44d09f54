//! The search index, prose first. mdBook indexes every section of a page as one document whose
//! body is all of its text, so a section with a long cell full of identifiers outranks the
//! section whose prose explains the idea, and its teaser shows code. After mdBook has written
//! the index, [`separate_code`] moves the text of every cell and output block of a section into
//! a field of its own, `code`, weighted below the prose ([`CODE_BOOST`]); the teaser, taken
//! from the body, is prose. Nothing else about the index changes: the same documents, URLs,
//! tokenizer (mdBook's: split on whitespace and `-`, lower case) and search options.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::cache::{Key, Slots};

/// How much a match in code counts against one in prose (1.0).
pub const CODE_BOOST: f64 = 0.3;

/// mdBook's tokenizer (`mdbook-html`, search.rs), so that the rebuilt index answers the
/// searcher's queries as the original did.
fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == '-')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().to_lowercase())
        .filter(|s| s.len() <= 80)
        .collect()
}

/// mdBook's whitespace collapsing (its regex `\s\s+` → one space, after trimming): two or more
/// whitespace characters become one space, a lone one stays as it is. By hand, because it runs
/// over every section of the book on every build, where a regex in the unoptimised tool took
/// a third of a second.
fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run: Option<(char, usize)> = None;
    for c in text.trim().chars() {
        if c.is_whitespace() {
            run = Some(match run {
                Some((first, n)) => (first, n + 1),
                None => (c, 1),
            });
            continue;
        }
        match run.take() {
            Some((lone, 1)) => out.push(lone),
            Some(_) => out.push(' '),
            None => {}
        }
        out.push(c);
    }
    out
}

const PREFIX: &str = "window.search = Object.assign(window.search, JSON.parse('";
const SUFFIX: &str = "'));";

/// Rewrites the search index of the book in `site` (the built HTML). `code` maps a page
/// (`ch07.html`) to the text of its cells and output blocks, as the page shows them. With a
/// `cache`, an index mdBook wrote as before, with the same code, is rewritten as before
/// without being rebuilt.
pub fn separate_code(site: &Path, code: &HashMap<String, Vec<String>>, cache: Option<&Slots>) -> anyhow::Result<()> {
    let Some(file) = std::fs::read_dir(site)?.filter_map(Result::ok).map(|e| e.path()).find(|p| {
        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("searchindex") && n.ends_with(".js"))
    }) else {
        return Ok(()); // search is off
    };
    let text = std::fs::read_to_string(&file)?;
    let mut key = Key::new("search");
    key.part("index", text.as_bytes());
    let mut pages: Vec<_> = code.iter().collect();
    pages.sort();
    for (page, snippets) in pages {
        key.part("page", page.as_bytes());
        snippets.iter().for_each(|s| _ = key.part("snippet", s.as_bytes()));
    }
    let key = key.hex();
    if let Some(rewritten) = cache.and_then(|c| c.get("searchindex.js", &key)) {
        return tangle_core::fsutil::write_atomic(&file, rewritten.as_bytes());
    }
    let out = rewrite(&file, &text, code)?;
    if let Some(cache) = cache {
        cache.put("searchindex.js", &key, &out);
    }
    tangle_core::fsutil::write_atomic(&file, out.as_bytes())
}

/// mdBook's index `text` (read from `file`), rebuilt with the code in a field of its own.
fn rewrite(file: &Path, text: &str, code: &HashMap<String, Vec<String>>) -> anyhow::Result<String> {
    let Some(escaped) = text.trim_end().strip_prefix(PREFIX).and_then(|t| t.strip_suffix(SUFFIX)) else {
        bail!("{} is not in the form this version of tangle reads", file.display());
    };
    let mut index: Value = serde_json::from_str(&unescape(escaped)).context("the search index is not JSON")?;
    let urls: Vec<String> = serde_json::from_value(index["doc_urls"].clone())?;
    let docs = &index["index"]["documentStore"]["docs"];
    let mut rebuilt = elasticlunr::IndexBuilder::new()
        .add_field_with_tokenizer("title", Box::new(tokenize))
        .add_field_with_tokenizer("body", Box::new(tokenize))
        .add_field_with_tokenizer("breadcrumbs", Box::new(tokenize))
        .add_field_with_tokenizer("code", Box::new(tokenize))
        .build();
    // Each page's snippets as the body holds them, collapsed once (not once per section).
    let collapsed: HashMap<&str, Vec<String>> = code
        .iter()
        .map(|(page, snippets)| {
            (page.as_str(), snippets.iter().map(|s| collapse(s)).filter(|s| !s.is_empty()).collect())
        })
        .collect();
    for (i, url) in urls.iter().enumerate() {
        let key = i.to_string();
        let doc = &docs[&key];
        let field = |name: &str| doc[name].as_str().unwrap_or_default().to_string();
        let page = url.split('#').next().unwrap_or_default();
        let (body, taken) = split_code(&field("body"), collapsed.get(page).map_or(&[][..], Vec::as_slice));
        rebuilt.add_doc(&key, [field("title"), body, field("breadcrumbs"), taken]);
    }
    index["index"] = serde_json::to_value(&rebuilt)?;
    index["search_options"]["fields"]["code"] = json!({ "boost": CODE_BOOST });
    let json = serde_json::to_string(&index)?;
    Ok(format!("{PREFIX}{}{SUFFIX}", json.replace('\\', "\\\\").replace('\'', "\\'")))
}

/// Undoes mdBook's escaping of the JSON inside a JavaScript string (`\\` and `\'`).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

/// `body` with every snippet (collapsed, not empty) found in it taken out (each once), and the
/// snippets taken.
fn split_code(body: &str, snippets: &[String]) -> (String, String) {
    let mut body = body.to_string();
    let mut taken = Vec::new();
    for snippet in snippets {
        if let Some(at) = body.find(snippet.as_str()) {
            body.replace_range(at..at + snippet.len(), " ");
            taken.push(snippet.as_str());
        }
    }
    (collapse(&body), taken.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_leaves_the_body_for_a_field_of_its_own() {
        // The body as mdBook stores it: runs of whitespace collapsed, a lone newline kept.
        let body = "Six numbers fix a model. pub struct GptConfig { vocab_size: usize\n} The loop below trains it.";
        let (prose, code) = split_code(body, &[collapse("pub struct GptConfig {\n    vocab_size: usize\n}\n")]);
        assert_eq!(prose, "Six numbers fix a model. The loop below trains it.");
        assert_eq!(code, "pub struct GptConfig { vocab_size: usize\n}");
        // A snippet the body does not hold changes nothing.
        assert_eq!(split_code(body, &["fn absent() {}".into()]).0, body);
    }

    #[test]
    fn whitespace_collapses_as_mdbook_does() {
        assert_eq!(collapse("  a  b\nc \t d\u{a0}\u{a0}e  "), "a b\nc d e");
        assert_eq!(collapse("one\ttwo"), "one\ttwo");
        assert_eq!(collapse(" \n "), "");
    }

    #[test]
    fn the_index_file_round_trips_its_escapes() {
        let json = r#"{"a":"it's \\ here"}"#;
        let escaped = json.replace('\\', "\\\\").replace('\'', "\\'");
        assert_eq!(unescape(&escaped), json);
    }

    #[test]
    fn a_rebuilt_index_ranks_prose_above_code() {
        let site = tempfile::tempdir().unwrap();
        // Two sections: one explains "ledger" in prose, the other only uses it in code.
        let mut original = elasticlunr::IndexBuilder::new()
            .add_field_with_tokenizer("title", Box::new(tokenize))
            .add_field_with_tokenizer("body", Box::new(tokenize))
            .add_field_with_tokenizer("breadcrumbs", Box::new(tokenize))
            .build();
        let code = "let ledger = ledger_of(ledger, ledger);";
        original.add_doc("0", ["Memory", "The ledger lists every byte a step keeps.", "Memory"]);
        let costs = format!("Costs follow. {code}");
        original.add_doc("1", ["Costs", costs.as_str(), "Costs"]);
        let index = json!({
            "doc_urls": ["ch06.html#memory", "ch06.html#costs"],
            "index": original,
            "search_options": { "bool": "OR", "expand": true, "fields": { "title": { "boost": 2 }, "body": { "boost": 1 }, "breadcrumbs": { "boost": 1 } } },
            "results_options": { "limit_results": 30, "teaser_word_count": 30 },
        });
        let text = serde_json::to_string(&index).unwrap().replace('\\', "\\\\").replace('\'', "\\'");
        std::fs::write(site.path().join("searchindex-0.js"), format!("{PREFIX}{text}{SUFFIX}")).unwrap();
        let code_of = HashMap::from([("ch06.html".to_string(), vec![code.to_string()])]);
        separate_code(site.path(), &code_of, None).unwrap();
        let written = std::fs::read_to_string(site.path().join("searchindex-0.js")).unwrap();
        let index: Value =
            serde_json::from_str(&unescape(written.strip_prefix(PREFIX).unwrap().strip_suffix(SUFFIX).unwrap()))
                .unwrap();
        assert_eq!(index["search_options"]["fields"]["code"]["boost"], json!(CODE_BOOST));
        let docs = &index["index"]["documentStore"]["docs"];
        assert_eq!(docs["1"]["body"], json!("Costs follow."));
        assert_eq!(docs["1"]["code"], json!(code));
        // "ledger" is in the body of section 0 only now; section 1 has it under `code`.
        let body_index = &index["index"]["index"]["body"]["root"]["l"]["e"]["d"]["g"]["e"]["r"]["docs"];
        assert!(body_index.get("0").is_some() && body_index.get("1").is_none(), "{body_index}");
    }
}
