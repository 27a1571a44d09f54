//! Screenshots of a built book, for a person to look at (not part of the tests), through the
//! Chromium driver `tangle pdf` and the browser tests use (`tangle_render::chromium`). Run by
//! `tangle/scripts/screenshots.sh`, which builds the book first:
//!
//! ```text
//! cargo run --release -p mdbook-tangle --example screenshots -- BOOK_DIR OUT_DIR [--width PX]
//! ```
//!
//! Writes, for every page of BOOK_DIR (not print.html, toc.html, 404.html): `<page>.png`, the
//! whole page at PX CSS pixels wide (default 1280; with another width the names end in
//! `-PX`), `tiles/<page>-NN.png`, the page cut into screen-high tiles for reading, and
//! `<page>-<id>.png` for each numbered figure and equation. Fails when a page loads anything
//! from the network.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tangle_render::chromium::{self, Browser};

/// The height of a tile on a desktop and on a phone, in CSS pixels.
const TILE: (u64, u64) = (1400, 800);

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(book), Some(out)) = (args.first(), args.get(1)) else {
        bail!("usage: screenshots BOOK_DIR OUT_DIR [--width PX]");
    };
    let width: u64 = match args.iter().position(|a| a == "--width") {
        Some(i) => args.get(i + 1).context("--width needs a number")?.parse().context("--width needs a number")?,
        None => 1280,
    };
    let (book, out) = (Path::new(book).canonicalize()?, PathBuf::from(out));
    std::fs::create_dir_all(out.join("tiles"))?;
    let chromium = chromium::find().context(chromium::INSTALL_HINT)?;
    let mut browser = Browser::launch(&chromium, &["--hide-scrollbars"])?;
    let suffix = if width == 1280 { String::new() } else { format!("-{width}") };
    let mut external = Vec::new();
    for name in pages(&book)? {
        let stem = format!("{}{suffix}", name.trim_end_matches(".html"));
        set_size(&mut browser, width, 900)?;
        browser.open(&format!("file://{}", book.join(&name).display()))?;
        std::thread::sleep(Duration::from_millis(300));
        let remote = browser.evaluate(
            "Array.from(document.querySelectorAll('script[src],link[rel=stylesheet],img[src]'))\
             .map(e => e.src || e.href).filter(u => /^https?:/.test(u))",
        )?;
        external.extend(remote.as_array().into_iter().flatten().map(|u| format!("{name}: {u}")));
        let height = browser.evaluate("Math.ceil(document.documentElement.scrollHeight)")?.as_u64().unwrap_or(900);
        set_size(&mut browser, width, height)?;
        std::thread::sleep(Duration::from_millis(300));
        shoot(&mut browser, &out.join(format!("{stem}.png")), None)?;
        println!("{stem}.png ({width}x{height})");
        let tile = if width < 600 { TILE.1 } else { TILE.0 };
        for (k, top) in (0..height).step_by(tile as usize).enumerate() {
            let clip = json!({ "x": 0, "y": top, "width": width, "height": tile.min(height - top) });
            shoot(&mut browser, &out.join("tiles").join(format!("{stem}-{k:02}.png")), Some(clip))?;
        }
        let boxes = browser.evaluate(
            "Array.from(document.querySelectorAll('figure.tangle-figure[id], .tangle-equation[id]')).map(e => {\
             const r = e.getBoundingClientRect();\
             return {id: e.id, x: Math.max(0, r.left + scrollX - 8), y: Math.max(0, r.top + scrollY - 8),\
             width: r.width + 16, height: r.height + 16}; })",
        )?;
        for b in boxes.as_array().into_iter().flatten() {
            let file = format!("{stem}-{}.png", b["id"].as_str().unwrap_or("box"));
            let clip = json!({ "x": b["x"], "y": b["y"], "width": b["width"], "height": b["height"] });
            shoot(&mut browser, &out.join(&file), Some(clip))?;
            println!("  {file}");
        }
    }
    if !external.is_empty() {
        bail!("pages load resources from the network:\n  {}", external.join("\n  "));
    }
    Ok(())
}

/// The HTML pages of a built book a reader opens (not mdBook's helpers).
fn pages(book: &Path) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(book)
        .with_context(|| format!("cannot read {}", book.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".html") && !["print.html", "toc.html", "404.html"].contains(&n.as_str()))
        .collect();
    names.sort();
    Ok(names)
}

/// The viewport: `width` CSS pixels (a phone below 600) by `height`.
fn set_size(browser: &mut Browser, width: u64, height: u64) -> anyhow::Result<()> {
    let mobile = width < 600;
    let metrics =
        json!({ "width": width, "height": height, "deviceScaleFactor": if mobile { 3 } else { 1 }, "mobile": mobile });
    browser.call("Emulation.setDeviceMetricsOverride", metrics)?;
    Ok(())
}

/// A PNG of the page (beyond the viewport), or of `clip` on it, written to `file`.
fn shoot(browser: &mut Browser, file: &Path, clip: Option<Value>) -> anyhow::Result<()> {
    let mut params = json!({ "format": "png", "captureBeyondViewport": true });
    if let Some(mut clip) = clip {
        clip["scale"] = json!(1);
        params["clip"] = clip;
    }
    let png = browser.call_for_data("Page.captureScreenshot", params)?;
    std::fs::write(file, png).with_context(|| format!("cannot write {}", file.display()))
}
