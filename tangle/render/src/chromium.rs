//! Headless Chromium, driven one way: the DevTools protocol over a pipe. `tangle pdf` prints
//! with it, the browser tests (`tests/browser.rs`, `tests/reader.rs`) load and measure pages
//! with it, and the screenshot script (`tangle/cli/examples/screenshots.rs`) takes its
//! pictures with it.
//!
//! Chromium started with `--remote-debugging-pipe` reads protocol commands on its file
//! descriptor 3 and writes replies and events on 4, each a JSON message ended by a NUL byte
//! (the transport Puppeteer and Playwright use). So there is no port to find or to leave open,
//! no websocket and nothing on the network, and the whole client is a pair of pipes and
//! `serde_json`. Why not a crate: the maintained clients speak the websocket transport
//! (`headless_chrome` with its generated protocol types, `chromiumoxide` on tokio) and add
//! their build to the tool's; a websocket alone (`tungstenite` with its handshake, 30 crates)
//! built in 30 s (9 s of CPU, opt-level 0, 2-core EPYC at load 8), where this adds nothing.
//!
//! A [`Browser`] is one Chromium with a profile of its own, attached to one page; every call
//! waits at most [`Browser::timeout`]; what the page reports (console errors, exceptions,
//! failed loads) is kept for [`Browser::page_errors`]. Dropping it kills Chromium.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// The names Chromium goes by on `PATH`, in the order tried.
const NAMES: &[&str] = &["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];

/// The Chromium to drive: `$TANGLE_CHROMIUM` or `$CHROMIUM`, or the first of [`NAMES`] on
/// `PATH`.
pub fn find() -> Option<PathBuf> {
    for var in ["TANGLE_CHROMIUM", "CHROMIUM"] {
        if let Some(named) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(named));
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| NAMES.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// What to say when there is no Chromium.
pub const INSTALL_HINT: &str = "this needs headless Chromium, and none was found on PATH \
     (chromium, chromium-browser, google-chrome) or in $TANGLE_CHROMIUM or $CHROMIUM: install it with \
     `apt-get install chromium` (Debian, Ubuntu) or `dnf install chromium` (Fedora), or set TANGLE_CHROMIUM \
     to its path";

/// One headless Chromium and the page it is attached to.
pub struct Browser {
    child: Child,
    to_browser: File,
    from_browser: Receiver<Value>,
    session: String,
    next_id: u64,
    events: Vec<Value>,
    /// How long one call may wait for its reply.
    pub timeout: Duration,
    profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pipe end moved to a descriptor of 10 or more (close-on-exec), so that putting the two
/// ends the child needs on 3 and 4 cannot overwrite one with the other.
fn high(fd: OwnedFd) -> std::io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC duplicates a descriptor we own; the new one is ours alone.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
    if new < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `new` was just returned by fcntl, open, and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

impl Browser {
    /// Starts `chromium` headless, with a fresh profile (so that a running browser or an old
    /// profile changes nothing), kept off the network (what it loads here is local), without
    /// its sandbox where it runs as root (containers, CI: Chromium refuses to start one), and
    /// with `args` added; attaches to a new blank page.
    pub fn launch(chromium: &Path, args: &[&str]) -> anyhow::Result<Browser> {
        let profile = tempfile::Builder::new().prefix("tangle-chromium-").tempdir()?;
        let log = File::create(profile.path().join("chromium.log"))?;
        let (commands_read, commands_write) = std::io::pipe()?;
        let (replies_read, replies_write) = std::io::pipe()?;
        let (child_in, child_out) = (high(commands_read.into())?, high(replies_write.into())?);
        let mut command = Command::new(chromium);
        command
            .args([
                "--headless",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            command.arg("--no-sandbox");
        }
        let (fd_in, fd_out) = (child_in.as_raw_fd(), child_out.as_raw_fd());
        // SAFETY: between fork and exec only dup2 runs, which is async-signal-safe; the
        // descriptors stay open in the parent until the spawn has returned.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(fd_in, 3) < 0 || libc::dup2(fd_out, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().with_context(|| format!("cannot start {}", chromium.display()))?;
        // Chromium holds its ends now; ours would keep the pipes open after it exits.
        drop((child_in, child_out));
        let (sender, from_browser) = mpsc::channel();
        std::thread::Builder::new().name("tangle-chromium".into()).spawn(move || {
            let mut reader = BufReader::new(replies_read);
            let mut message = Vec::new();
            while matches!(reader.read_until(0, &mut message), Ok(n) if n > 0) {
                message.pop_if(|b| *b == 0);
                let Ok(value) = serde_json::from_slice(&message) else { break };
                if sender.send(value).is_err() {
                    break;
                }
                message.clear();
            }
        })?;
        let mut browser = Browser {
            child,
            to_browser: File::from(OwnedFd::from(commands_write)),
            from_browser,
            session: String::new(),
            next_id: 0,
            events: Vec::new(),
            timeout: Duration::from_secs(60),
            profile,
        };
        let target = browser.call_browser("Target.createTarget", json!({ "url": "about:blank" }))?;
        let target = target["targetId"].as_str().context("Target.createTarget gave no target id")?.to_string();
        let attached = browser.call_browser("Target.attachToTarget", json!({ "targetId": target, "flatten": true }))?;
        browser.session = attached["sessionId"].as_str().context("Target.attachToTarget gave no session")?.into();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            browser.call(domain, json!({}))?;
        }
        Ok(browser)
    }

    /// Sends `method` to the page and returns its result; events that arrive meanwhile are
    /// kept.
    pub fn call(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let session = self.session.clone();
        self.send(method, params, Some(&session))
    }

    /// Sends `method` to the browser itself (`Target.*`, `Browser.*`).
    pub fn call_browser(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.send(method, params, None)
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> anyhow::Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session.filter(|s| !s.is_empty()) {
            message["sessionId"] = json!(session);
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.to_browser.write_all(&bytes).with_context(|| format!("{method}: {}", self.exited()))?;
        let deadline = Instant::now() + self.timeout;
        loop {
            let value = match self.from_browser.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(value) => value,
                Err(RecvTimeoutError::Timeout) => bail!("{method}: no answer from Chromium within {:?}", self.timeout),
                Err(RecvTimeoutError::Disconnected) => bail!("{method}: {}", self.exited()),
            };
            if value["id"] == json!(id) {
                if let Some(error) = value.get("error") {
                    bail!("{method}: {error}");
                }
                return Ok(value["result"].clone());
            }
            if value.get("method").is_some() {
                self.events.push(value);
            }
        }
    }

    /// Why Chromium stopped answering: its exit status and the end of its log.
    fn exited(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(status)) => format!("Chromium exited ({status})"),
            _ => "Chromium closed its DevTools pipe".to_string(),
        };
        let log = std::fs::read_to_string(self.profile.path().join("chromium.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
        format!("{status}\n{}", tail.join("\n"))
    }

    /// Evaluates `expression` in the page, awaiting a promise, and returns its value; an
    /// exception thrown is an error.
    pub fn evaluate(&mut self, expression: &str) -> anyhow::Result<Value> {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        )?;
        if let Some(exception) = result.get("exceptionDetails") {
            let text = exception["exception"]["description"].as_str().or(exception["text"].as_str());
            bail!("the page threw: {}", text.unwrap_or("an exception"));
        }
        Ok(result["result"]["value"].clone())
    }

    /// Calls `method` for the binary data it returns base64-encoded in `data`
    /// (`Page.printToPDF`, `Page.captureScreenshot`).
    pub fn call_for_data(&mut self, method: &str, params: Value) -> anyhow::Result<Vec<u8>> {
        use base64::Engine;
        let result = self.call(method, params)?;
        let data = result["data"].as_str().with_context(|| format!("{method} returned no data"))?;
        base64::engine::general_purpose::STANDARD.decode(data).with_context(|| format!("{method} returned bad base64"))
    }

    /// Opens `url` and waits until it has loaded and its fonts have arrived; forgets the
    /// events of the page before.
    pub fn open(&mut self, url: &str) -> anyhow::Result<()> {
        self.events.clear();
        let navigated = self.call("Page.navigate", json!({ "url": url }))?;
        if let Some(error) = navigated["errorText"].as_str() {
            bail!("cannot open {url}: {error}");
        }
        let deadline = Instant::now() + self.timeout;
        while self.evaluate("document.readyState")? != json!("complete") {
            if Instant::now() > deadline {
                bail!("{url} did not finish loading within {:?}", self.timeout);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.evaluate("document.fonts.ready.then(() => true)")?;
        Ok(())
    }

    /// The errors the page reported since it was opened: exceptions, `console.error`, and
    /// what the browser logged as an error (a resource that failed to load).
    pub fn page_errors(&self) -> Vec<String> {
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
                        .map(|a| a["value"].as_str().map_or_else(|| a["value"].to_string(), String::from))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_install_hint_names_the_command() {
        assert!(INSTALL_HINT.contains("apt-get install chromium"));
    }

    /// The transport end to end, where Chromium is installed: a page's value, an exception
    /// and a console error come back.
    #[test]
    fn a_page_is_driven_over_the_pipe() {
        let Some(chromium) = find() else {
            eprintln!("skipped: no Chromium ({INSTALL_HINT})");
            return;
        };
        let mut browser = Browser::launch(&chromium, &[]).unwrap();
        browser.open("data:text/html,<p>hi</p><script>console.error('shown')</script>").unwrap();
        assert_eq!(browser.evaluate("document.querySelector('p').textContent").unwrap(), json!("hi"));
        assert_eq!(browser.evaluate("Promise.resolve(6 * 7)").unwrap(), json!(42));
        let err = browser.evaluate("null.x").unwrap_err().to_string();
        assert!(err.contains("TypeError"), "{err}");
        assert_eq!(browser.page_errors(), vec!["shown".to_string()]);
        let png = browser.call_for_data("Page.captureScreenshot", json!({ "format": "png" })).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        let err = browser.call("No.such", json!({})).unwrap_err().to_string();
        assert!(err.contains("No.such"), "{err}");
    }
}
