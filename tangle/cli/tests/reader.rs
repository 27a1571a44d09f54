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
//! screenshot script's `--check` mode runs the same file). Chromium is driven over the
//! DevTools protocol on a websocket. Where no Chromium is installed the test says so and
//! passes without checking (`apt-get install chromium` on Debian).

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

const CHECK_JS: &str = include_str!("../../scripts/reader-check.js");

/// A4 less the print stylesheet's margins (210 mm - 30 mm), in CSS pixels.
const PRINT_WIDTH: u32 = 680;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("tangle/cli is two folders down").to_path_buf()
}

/// A headless Chromium, killed when dropped.
struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One page (tab) of the browser, attached through the browser's websocket.
struct Tab {
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    /// Events received while waiting for replies, since the last `take_events`.
    events: Vec<Value>,
}

fn start_browser(chromium: &Path) -> (Browser, Tab) {
    let profile = tempfile::tempdir().unwrap();
    let mut command = tangle_render::pdf::headless(chromium, profile.path());
    command
        .args(["--hide-scrollbars", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0"])
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = command.spawn().expect("start chromium");
    let browser = Browser { child, _profile: profile };
    // Chromium writes the port it chose and the browser's websocket path into the profile.
    let port_file = browser._profile.path().join("DevToolsActivePort");
    let deadline = Instant::now() + Duration::from_secs(30);
    let (port, path) = loop {
        if let Ok(text) = std::fs::read_to_string(&port_file) {
            let mut lines = text.lines();
            if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                break (port.to_string(), path.to_string());
            }
        }
        assert!(Instant::now() < deadline, "Chromium did not open its DevTools port within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    let (ws, _) = tungstenite::connect(format!("ws://127.0.0.1:{port}{path}")).expect("connect to DevTools");
    if let MaybeTlsStream::Plain(stream) = ws.get_ref() {
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    }
    let mut tab = Tab { ws, session: String::new(), next_id: 0, events: Vec::new() };
    let target = tab.call("Target.createTarget", json!({ "url": "about:blank" }));
    let target = target["targetId"].as_str().expect("a target id").to_string();
    let attached = tab.call("Target.attachToTarget", json!({ "targetId": target, "flatten": true }));
    tab.session = attached["sessionId"].as_str().expect("a session id").to_string();
    for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
        tab.call(domain, json!({}));
    }
    (browser, tab)
}

impl Tab {
    /// Sends a command (to the page once attached) and returns its result; events that arrive
    /// meanwhile are kept.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.ws.send(Message::text(message.to_string())).expect("send to DevTools");
        loop {
            let reply = self.ws.read().expect("read from DevTools");
            let Message::Text(text) = reply else { continue };
            let value: Value = serde_json::from_str(&text).expect("DevTools speaks JSON");
            if value["id"] == json!(id) {
                assert!(value.get("error").is_none(), "{method}: {}", value["error"]);
                return value["result"].clone();
            }
            if value.get("method").is_some() {
                self.events.push(value);
            }
        }
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its value.
    fn evaluate(&mut self, expression: &str) -> Value {
        let result = self
            .call("Runtime.evaluate", json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }));
        assert!(result.get("exceptionDetails").is_none(), "the page threw: {}", result["exceptionDetails"]);
        result["result"]["value"].clone()
    }

    /// Opens `url` at `width` CSS pixels (a phone below 600), as screen or `print` media, and
    /// waits until it has loaded and its fonts have arrived.
    fn open(&mut self, url: &str, width: u32, media: &str) {
        let mobile = width < 600;
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": 900, "deviceScaleFactor": if mobile { 3 } else { 1 }, "mobile": mobile }),
        );
        self.call("Emulation.setEmulatedMedia", json!({ "media": media }));
        self.events.clear();
        self.call("Page.navigate", json!({ "url": url }));
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.evaluate("document.readyState") != json!("complete") {
            assert!(Instant::now() < deadline, "{url} did not finish loading within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        self.evaluate("document.fonts.ready.then(() => true)");
        std::thread::sleep(Duration::from_millis(200));
    }

    /// The errors the page reported since it was opened.
    fn console_errors(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in &self.events {
            let p = &e["params"];
            match e["method"].as_str().unwrap_or("") {
                "Runtime.exceptionThrown" => out.push(
                    p["exceptionDetails"]["exception"]["description"]
                        .as_str()
                        .or(p["exceptionDetails"]["text"].as_str())
                        .unwrap_or("an exception")
                        .to_string(),
                ),
                "Runtime.consoleAPICalled" if p["type"] == "error" => out.push(
                    p["args"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| a["value"].to_string())
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                "Log.entryAdded" if p["entry"]["level"] == "error" => out.push(format!(
                    "{} {}",
                    p["entry"]["text"].as_str().unwrap_or(""),
                    p["entry"]["url"].as_str().unwrap_or("")
                )),
                _ => {}
            }
        }
        out
    }
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
    let Some(chromium) = tangle_render::pdf::find_chromium() else {
        eprintln!(
            "reader test skipped: no Chromium on PATH (install it with `apt-get install chromium` to run the reader checks)"
        );
        return;
    };
    let root = repo_root();
    let site = tempfile::tempdir().unwrap();
    let config = tangle_core::config::Config::load(&root).expect("the book has a book.toml");
    let options = tangle_render::RenderOptions { dest: Some(site.path().to_path_buf()) };
    tangle_render::build_book(&config, &options).expect("the book builds");
    let book = site.path();
    assert!(book.join("index.html").is_file());
    let index = std::fs::read_to_string(book.join("index.html")).unwrap();
    assert!(index.contains("<h1 id=\"introduction\">"), "the book opens on the reader's introduction");

    let (_browser, mut tab) = start_browser(&chromium);
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
        tab.open(&url, *width, media);
        let found = tab.evaluate(CHECK_JS);
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
        for e in tab.console_errors() {
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
