//! The book as a reader meets it: every page of the rendered book loaded in headless
//! Chromium at desktop width (1280 px) and phone width (390 px), and `print.html` laid out as
//! it prints on A4. The test fails on what a reader would trip on:
//!
//! - an equation box with a scrollbar or clipped glyphs,
//! - a page that scrolls sideways (or would, if mdBook did not cut it off),
//! - on paper, a code, output, table or equation box whose content is cut at its edge,
//! - an error in the page's console (a script exception, a resource that failed to load),
//! - a link to a page or an anchor that does not exist,
//! - a chapter page at 1280 px more than 35 % of whose height is open code.
//!
//! The checks themselves are `tangle/scripts/reader-check.js`, evaluated in each page (the
//! screenshot script's `--check` mode runs this test). Chromium is driven over the
//! DevTools protocol by `tangle_render::chromium`, as `tangle pdf` drives it. Where no
//! Chromium is installed the test says so and passes without checking (`apt-get install
//! chromium` on Debian; `TANGLE_CHROMIUM` names another binary).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::json;
use tangle_render::chromium::{self, Browser};

const CHECK_JS: &str = include_str!("../../scripts/reader-check.js");

/// A4 less the print stylesheet's margins (210 mm - 30 mm), in CSS pixels.
const PRINT_WIDTH: u32 = 680;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("tangle/cli is two folders down").to_path_buf()
}

/// Opens `url` at `width` CSS pixels (a phone below 600), as screen or `print` media, and
/// waits until it has loaded and its fonts have arrived.
fn open(browser: &mut Browser, url: &str, width: u32, media: &str) {
    let mobile = width < 600;
    let metrics =
        json!({ "width": width, "height": 900, "deviceScaleFactor": if mobile { 3 } else { 1 }, "mobile": mobile });
    browser.call("Emulation.setDeviceMetricsOverride", metrics).unwrap();
    browser.call("Emulation.setEmulatedMedia", json!({ "media": media })).unwrap();
    browser.open(url).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
}

/// The HTML pages of a built book a reader opens (not mdBook's helpers).
fn pages(book: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(book)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".html") && !["print.html", "toc.html", "404.html"].contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

#[test]
fn every_page_reads_without_scrollbars_clipping_errors_or_broken_links() {
    let Some(chromium) = chromium::find() else {
        eprintln!("SKIPPED the reader test: {}", chromium::INSTALL_HINT);
        return;
    };
    let root = repo_root();
    let site = tempfile::tempdir().unwrap();
    let config = tangle_core::config::Config::load(&root).expect("the book has a book.toml");
    let options = tangle_render::RenderOptions { dest: Some(site.path().to_path_buf()), ..Default::default() };
    tangle_render::build_book(&config, &options).expect("the book builds");
    let book = site.path();
    assert!(book.join("index.html").is_file());
    let index = std::fs::read_to_string(book.join("index.html")).unwrap();
    assert!(index.contains("<h1 id=\"introduction\">"), "the book opens on the reader's introduction");

    let mut browser = Browser::launch(&chromium, &["--hide-scrollbars"]).expect("Chromium starts");
    let mut problems: Vec<String> = Vec::new();
    let mut ids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut links: BTreeSet<(String, String)> = BTreeSet::new();
    let mut runs: Vec<(String, u32, &str)> = Vec::new();
    for page in pages(book).into_iter().chain(["print.html".to_string()]) {
        runs.push((page.clone(), 1280, ""));
        runs.push((page, 390, ""));
    }
    runs.push(("print.html".to_string(), PRINT_WIDTH, "print"));
    eprintln!("{:<20}{:>6}{:>8}{:>10}{:>16}", "page", "width", "code %", "sideways", "smallest label");
    for (page, width, media) in &runs {
        let url = format!("file://{}", book.join(page).display());
        open(&mut browser, &url, *width, media);
        let found = browser.evaluate(CHECK_JS).unwrap();
        let m = &found["measures"];
        eprintln!(
            "{:<20}{:>6}{:>7.1}%{:>10}{:>16}",
            format!("{page}{}", if media.is_empty() { "" } else { " (print)" }),
            width,
            100.0 * m["codeShare"].as_f64().unwrap_or(0.0),
            m["scrollingCode"],
            m["smallestFigureLabelPx"]
        );
        let at = format!("{page} at {width} px{}", if media.is_empty() { "" } else { ", printed" });
        // Prose first: open code may fill at most this share of a chapter page on a desktop.
        const MAX_CODE_SHARE: f64 = 0.35;
        let share = m["codeShare"].as_f64().unwrap_or(0.0);
        if page.starts_with("ch") && *width == 1280 && media.is_empty() && share > MAX_CODE_SHARE {
            problems.push(format!(
                "{at}: open code is {:.1} % of the page (at most {:.0} %): fold long cells",
                100.0 * share,
                100.0 * MAX_CODE_SHARE
            ));
        }
        for p in found["problems"].as_array().into_iter().flatten() {
            problems.push(format!("{at}: {}", p.as_str().unwrap_or_default()));
        }
        for e in browser.page_errors() {
            problems.push(format!("{at}: console error: {e}"));
        }
        let page_ids = ids.entry(page.clone()).or_default();
        page_ids.extend(found["ids"].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(String::from)));
        for href in found["links"].as_array().into_iter().flatten().filter_map(|v| v.as_str()) {
            links.insert((page.clone(), href.to_string()));
        }
    }
    for (page, href) in &links {
        let (path, anchor) = href.split_once('#').unwrap_or((href, ""));
        if !book.join(path).is_file() {
            problems.push(format!("{page}: a link to {href} names no file of the book"));
        } else if !anchor.is_empty() && ids.get(path).is_some_and(|set| !set.contains(anchor)) {
            problems.push(format!("{page}: a link to {href} names no element of {path}"));
        }
    }
    assert!(problems.is_empty(), "{} problem(s) a reader would meet:\n{}", problems.len(), problems.join("\n"));
}
