//! The HTTP side of `cargo tangle serve`: static files from the current build, over HTTP/1.1
//! on localhost, GET and HEAD only, one request per connection.
//!
//! Why not an HTTP server crate. The small blocking one, tiny_http 0.12, builds cheaply (6
//! crates, 2.1 s on a cold target at opt-level 0, 2-core EPYC at load 4.6) but gives up what
//! the tests in `tangle/cli/tests/serve.rs` ask for, measured against it by
//! `bench/serve-vs-tiny-http` (`bench/results/serve-vs-tiny-http.txt`): a request line of
//! 256 MiB with no newline grew the server from 3 MB to 266 MB resident (it reads the line
//! into memory until its newline), and a client that sends nothing was still connected after
//! 15 s (it sets no deadline for the head). The servers that bound both (hyper, and axum on it,
//! as mdBook's `serve` uses) bring tokio for a server that answers one author. So: a thread
//! per connection (an idle or slow client holds its own thread only, never the others), a
//! fixed [`Config::head_limit`] buffer that the request head must fit in (a longer one gets
//! 414/431 and the connection is closed: memory cannot grow with what a client sends), a
//! deadline for the whole head (a client that trickles bytes is cut off), a cap on open
//! connections, and `httparse` (hyper's parser) to read the head.
//!
//! The served folder is switched atomically by [`Site::publish`]: a request takes the current
//! build when it starts, so it never sees a half-written one. Every HTML page gets a small
//! inline script that long-polls `/__tangle/reload` and reloads the page when a newer build
//! is published (nothing is fetched from the network; nothing is written into the build).
//! While a rebuild runs ([`Site::set_busy`]) the poll also answers, and the page shows what the
//! server is doing in a small badge, so that an author who saved a chapter whose cells take a
//! while sees that the page is about to change rather than a page that seems to ignore the save.
//! [`Site::report`] publishes a rebuild with what is wrong with the book: while anything is,
//! every page also carries a banner listing it, `chNN.md:LINE` first.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The long-poll endpoint: `GET /__tangle/reload?since=N` answers the build generation once
/// it differs from `N` (or after [`Config::poll_timeout`]). With `&busy=0` or `&busy=1` (whether
/// the page shows a rebuild under way) it also answers when that changes, the generation on the
/// first line and what the server is doing, if anything, on the second.
pub const RELOAD_PATH: &str = "/__tangle/reload";

/// Limits of the server.
#[derive(Debug, Clone)]
pub struct Config {
    /// The request line and headers must fit in this many bytes.
    pub head_limit: usize,
    /// The whole request head must arrive within this time.
    pub head_timeout: Duration,
    /// How long a reload poll waits for a new build before answering the same generation.
    pub poll_timeout: Duration,
    /// Connections open at once; past it new ones get 503.
    pub max_connections: usize,
    /// How long writing a response may stall.
    pub write_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            head_limit: 8 * 1024,
            head_timeout: Duration::from_secs(10),
            poll_timeout: Duration::from_secs(25),
            max_connections: 512,
            write_timeout: Duration::from_secs(30),
        }
    }
}

/// The build being served and its generation (1 for the first, +1 per publish).
pub struct Site {
    current: Mutex<Served>,
    /// What is wrong with the book now: a banner atop every page while not empty.
    problems: Mutex<Vec<String>>,
    changed: Condvar,
}

/// What [`Site::current`] holds, and what the server is busy with.
struct Served {
    dir: PathBuf,
    generation: u64,
    /// A rebuild under way, in words for the page's badge.
    busy: Option<String>,
}

impl Site {
    pub fn new(dir: PathBuf) -> Arc<Site> {
        let served = Served { dir, generation: 1, busy: None };
        Arc::new(Site { current: Mutex::new(served), problems: Mutex::new(Vec::new()), changed: Condvar::new() })
    }

    /// Says what the server is doing (`None`: nothing), to the pages open now and those served
    /// from now on.
    pub fn set_busy(&self, what: Option<String>) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.busy != what {
            current.busy = what;
            self.changed.notify_all();
        }
    }

    /// What the server is doing, if anything.
    pub fn busy(&self) -> Option<String> {
        self.current.lock().unwrap_or_else(|e| e.into_inner()).busy.clone()
    }

    /// After a rebuild: serves `dir` from now on, if the rebuild made one, and shows
    /// `problems`; returns the new generation (open pages reload, and show the banner or lose
    /// it). Nothing changes, and the generation stays, when neither does.
    pub fn report(&self, dir: Option<PathBuf>, problems: Vec<String>) -> u64 {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let mut shown = self.problems.lock().unwrap_or_else(|e| e.into_inner());
        if dir.is_none() && *shown == problems {
            return current.generation;
        }
        if let Some(dir) = dir {
            current.dir = dir;
        }
        *shown = problems;
        current.generation += 1;
        self.changed.notify_all();
        current.generation
    }

    /// The problems the pages show now.
    pub fn problems(&self) -> Vec<String> {
        self.problems.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Serves `dir` from now on; returns the new generation. Requests already answering
    /// from the previous folder finish from it.
    pub fn publish(&self, dir: PathBuf) -> u64 {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        current.dir = dir;
        current.generation += 1;
        self.changed.notify_all();
        current.generation
    }

    /// The folder served now, and its generation.
    pub fn current(&self) -> (PathBuf, u64) {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        (current.dir.clone(), current.generation)
    }

    /// Waits until the generation differs from `since` (or, given `busy_shown`, whether the
    /// server is busy differs from it), or `timeout`; returns the generation and what the server
    /// is busy with.
    fn wait_change(&self, since: u64, busy_shown: Option<bool>, timeout: Duration) -> (u64, Option<String>) {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let unchanged = |c: &mut Served| c.generation == since && busy_shown.is_none_or(|b| b == c.busy.is_some());
        let (current, _) =
            self.changed.wait_timeout_while(current, timeout, unchanged).unwrap_or_else(|e| e.into_inner());
        (current.generation, current.busy.clone())
    }
}

/// Accepts connections on `listener` forever, each answered on a thread of its own.
pub fn serve_forever(listener: TcpListener, site: Arc<Site>, config: Config) {
    let open = Arc::new(AtomicUsize::new(0));
    let config = Arc::new(config);
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if open.load(Ordering::SeqCst) >= config.max_connections {
            // A short answer fits the socket's send buffer: this write does not block.
            let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
            let _ = stream.write_all(&simple(503, "Service Unavailable", "too many connections\n", &[]));
            continue;
        }
        open.fetch_add(1, Ordering::SeqCst);
        let (site, config, open2) = (site.clone(), config.clone(), open.clone());
        let spawned = std::thread::Builder::new().name("tangle-serve-conn".into()).spawn(move || {
            let _ = handle(stream, &site, &config);
            open2.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A request head that was read and understood.
struct Request {
    head_only: bool,
    /// Decoded.
    path: String,
    /// As sent (httparse admits no spaces or control characters in it).
    raw_path: String,
    query: String,
}

/// Why a request is answered with an error, and which.
struct Refusal {
    status: u16,
    reason: &'static str,
    extra: &'static [(&'static str, &'static str)],
}

impl Refusal {
    const fn new(status: u16, reason: &'static str) -> Refusal {
        Refusal { status, reason, extra: &[] }
    }
}

fn handle(mut stream: TcpStream, site: &Site, config: &Config) -> std::io::Result<()> {
    stream.set_write_timeout(Some(config.write_timeout))?;
    let request = match read_head(&mut stream, config) {
        Ok(Some(r)) => r,
        // The client closed the connection without a request.
        Ok(None) => return Ok(()),
        Err(refusal) => {
            let body = format!("{} {}\n", refusal.status, refusal.reason.to_lowercase());
            stream.write_all(&simple(refusal.status, refusal.reason, &body, refusal.extra))?;
            return close_gently(stream);
        }
    };
    let response = respond(&request, site, config);
    stream.write_all(&response)?;
    close_gently(stream)
}

/// Reads the request head into a buffer of [`Config::head_limit`] bytes, within
/// [`Config::head_timeout`]; parses and checks it.
fn read_head(stream: &mut TcpStream, config: &Config) -> Result<Option<Request>, Refusal> {
    let deadline = Instant::now() + config.head_timeout;
    let mut buf = vec![0u8; config.head_limit];
    let mut len = 0;
    loop {
        if len > 0 {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut parsed = httparse::Request::new(&mut headers);
            match parsed.parse(&buf[..len]) {
                Ok(httparse::Status::Complete(_)) => return check(&parsed).map(Some),
                Ok(httparse::Status::Partial) => {}
                Err(httparse::Error::TooManyHeaders) => {
                    return Err(Refusal::new(431, "Request Header Fields Too Large"));
                }
                Err(_) => return Err(Refusal::new(400, "Bad Request")),
            }
        }
        if len == buf.len() {
            return Err(match buf.contains(&b'\n') {
                true => Refusal::new(431, "Request Header Fields Too Large"),
                false => Refusal::new(414, "URI Too Long"),
            });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Refusal::new(408, "Request Timeout"));
        }
        stream.set_read_timeout(Some(left)).map_err(|_| Refusal::new(500, "Internal Server Error"))?;
        match stream.read(&mut buf[len..]) {
            Ok(0) if len == 0 => return Ok(None),
            Ok(0) => return Err(Refusal::new(400, "Bad Request")),
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(Refusal::new(408, "Request Timeout"));
            }
            Err(_) => return Ok(None),
        }
    }
}

/// Method and target of a parsed head.
fn check(parsed: &httparse::Request) -> Result<Request, Refusal> {
    let head_only = match parsed.method {
        Some("GET") => false,
        Some("HEAD") => true,
        _ => {
            return Err(Refusal { status: 405, reason: "Method Not Allowed", extra: &[("Allow", "GET, HEAD")] });
        }
    };
    // Origin form only (`/path?query`): no absolute URLs, no `*`.
    let target = parsed.path.unwrap_or("");
    if !target.starts_with('/') {
        return Err(Refusal::new(400, "Bad Request"));
    }
    let (raw_path, query) = target.split_once('?').unwrap_or((target, ""));
    let raw_path = raw_path.split('#').next().unwrap_or("");
    let path = percent_decode(raw_path).ok_or(Refusal::new(400, "Bad Request"))?;
    Ok(Request { head_only, path, raw_path: raw_path.to_string(), query: query.to_string() })
}

/// `%XX` escapes decoded; `None` for a bad escape, a control character, or bytes that are
/// not UTF-8.
fn percent_decode(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    if out.iter().any(|b| b.is_ascii_control()) {
        return None;
    }
    String::from_utf8(out).ok()
}

fn respond(request: &Request, site: &Site, config: &Config) -> Vec<u8> {
    if request.path == RELOAD_PATH {
        let param = |name: &str| request.query.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='));
        let since = param("since").and_then(|g| g.parse().ok()).unwrap_or(0);
        let busy_shown = param("busy").map(|b| b == "1");
        let (generation, busy) = site.wait_change(since, busy_shown, config.poll_timeout);
        let body = match busy_shown {
            Some(_) => format!("{generation}\n{}", busy.unwrap_or_default()),
            // A page of a version before the badge reads the generation alone.
            None => format!("{generation}\n"),
        };
        return finish(200, "OK", "text/plain; charset=utf-8", body.into_bytes(), request);
    }
    if request.path.starts_with("/__tangle/") {
        return finish(404, "Not Found", "text/plain; charset=utf-8", b"404 not found\n".to_vec(), request);
    }
    let (dir, generation) = site.current();
    match resolve(&dir, &request.path) {
        Resolved::File(file) => match std::fs::read(&file) {
            Ok(body) => {
                let kind = content_type(&file);
                let body = match kind.starts_with("text/html") {
                    true => inject_reload(body, generation, &site.problems(), site.busy().as_deref()),
                    false => body,
                };
                finish(200, "OK", kind, body, request)
            }
            Err(_) => finish(404, "Not Found", "text/plain; charset=utf-8", b"404 not found\n".to_vec(), request),
        },
        Resolved::Folder => format!(
            "HTTP/1.1 301 Moved Permanently\r\nLocation: {}/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            request.raw_path
        )
        .into_bytes(),
        // A page that is not there (yet: a book that could not be built; or any more: a
        // renamed chapter) is answered with the book's 404 page, which reloads with the next
        // build as every page does.
        Resolved::Missing if request.path.ends_with(".html") && dir.join("404.html").is_file() => {
            let body = std::fs::read(dir.join("404.html")).unwrap_or_default();
            let body = inject_reload(body, generation, &site.problems(), site.busy().as_deref());
            finish(404, "Not Found", "text/html; charset=utf-8", body, request)
        }
        Resolved::Missing => {
            finish(404, "Not Found", "text/plain; charset=utf-8", b"404 not found\n".to_vec(), request)
        }
    }
}

/// A response with a body (dropped for HEAD, its length kept).
fn finish(status: u16, reason: &str, kind: &str, body: Vec<u8>, request: &Request) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !request.head_only {
        out.extend_from_slice(&body);
    }
    out
}

/// A plain-text response for refusals.
fn simple(status: u16, reason: &str, body: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status} {reason}\r\n");
    for (name, value) in extra {
        head += &format!("{name}: {value}\r\n");
    }
    head += &format!(
        "Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    head.into_bytes()
}

/// Ends the response, then reads and drops a bounded amount of what the client still sends, so
/// that closing does not reset the connection before the client has read the answer.
fn close_gently(mut stream: TcpStream) -> std::io::Result<()> {
    stream.flush()?;
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut sink = [0u8; 4096];
    let mut drained = 0;
    while drained < 256 * 1024 {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
    Ok(())
}

enum Resolved {
    File(PathBuf),
    /// A folder asked for without its trailing slash: its page's relative links need one.
    Folder,
    Missing,
}

/// Maps a decoded request path to a file under `site`, refusing anything that leaves it
/// (`..`, backslashes, symbolic links pointing out).
fn resolve(site: &Path, path: &str) -> Resolved {
    let mut file = site.to_path_buf();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." || part.contains('\\') {
            return Resolved::Missing;
        }
        file.push(part);
    }
    if file.is_dir() {
        if !path.ends_with('/') {
            return Resolved::Folder;
        }
        file.push("index.html");
    }
    let inside = match (file.canonicalize(), site.canonicalize()) {
        (Ok(f), Ok(s)) => f.starts_with(s) && f.is_file(),
        _ => false,
    };
    if inside { Resolved::File(file) } else { Resolved::Missing }
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("woff") => "font/woff",
        Some("ttf") => "font/ttf",
        Some("otf") => "font/otf",
        Some("txt" | "md") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The live-reload script for a page of build `generation`, served while the server is `busy`
/// (or not): it reloads the page on a new build, and shows or hides the badge that says a
/// rebuild is under way as the server starts and ends one.
pub fn reload_script(generation: u64, busy: bool) -> String {
    format!(
        "<script>(function () {{\n\
         var generation = {generation}, busy = {busy};\n\
         function show(text) {{\n\
         var badge = document.getElementById(\"tangle-busy\");\n\
         if (!text) {{ if (badge) badge.remove(); return; }}\n\
         if (!badge) {{ badge = document.createElement(\"div\"); badge.id = \"tangle-busy\"; \
         badge.setAttribute(\"role\", \"status\"); badge.style.cssText = \"{BADGE_STYLE}\"; \
         document.body.appendChild(badge); }}\n\
         badge.textContent = text;\n\
         }}\n\
         function poll() {{\n\
         fetch(\"{RELOAD_PATH}?since=\" + generation + \"&busy=\" + (busy ? 1 : 0), {{ cache: \"no-store\" }})\n\
         .then(function (r) {{ if (!r.ok) throw r.status; return r.text(); }})\n\
         .then(function (t) {{\n\
         var lines = t.split(\"\\n\");\n\
         if (Number(lines[0]) !== generation) {{ location.reload(); return; }}\n\
         var text = (lines[1] || \"\").trim();\n\
         busy = text !== \"\";\n\
         show(text);\n\
         poll();\n\
         }})\n\
         .catch(function () {{ setTimeout(poll, 2000); }});\n\
         }}\n\
         poll();\n\
         }})();</script>\n"
    )
}

/// The badge's look: small, in a corner, above the book's own bars, out of the text's way.
const BADGE_STYLE: &str = "position:fixed;bottom:1em;right:1em;z-index:10001;padding:0.4em 0.8em;\
    border-radius:4px;background:#333;color:#fff;font:13px/1.4 system-ui,sans-serif;\
    box-shadow:0 2px 8px rgba(0,0,0,.35);opacity:0.92";

/// The badge as a page served during a rebuild starts with (the script keeps it up to date).
fn busy_badge(busy: Option<&str>) -> String {
    busy.map_or_else(String::new, |what| {
        format!(
            "<div id=\"tangle-busy\" role=\"status\" style=\"{BADGE_STYLE}\">{}</div>\n",
            super::super::html::escape_html(what)
        )
    })
}

/// `page` with the problems' banner, the badge of a rebuild under way and the reload script
/// before its last `</body>` (or at its end).
fn inject_reload(mut page: Vec<u8>, generation: u64, problems: &[String], busy: Option<&str>) -> Vec<u8> {
    let script = super::problems::banner(problems) + &busy_badge(busy) + &reload_script(generation, busy.is_some());
    let needle = b"</body>";
    let at = page.windows(needle.len()).rposition(|w| w.eq_ignore_ascii_case(needle)).unwrap_or(page.len());
    page.splice(at..at, script.into_bytes());
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_cannot_leave_the_site() {
        let site = tempfile::tempdir().unwrap();
        let site = site.path();
        std::fs::create_dir_all(site.join("sub")).unwrap();
        std::fs::write(site.join("index.html"), "i").unwrap();
        std::fs::write(site.join("sub/a.css"), "a").unwrap();
        std::fs::write(site.join("sub/index.html"), "s").unwrap();
        let file = |p: &str| match resolve(site, p) {
            Resolved::File(f) => Some(f),
            _ => None,
        };
        assert_eq!(file("/"), Some(site.join("index.html")));
        assert_eq!(file("/sub/a.css"), Some(site.join("sub/a.css")));
        assert_eq!(file("/sub/"), Some(site.join("sub/index.html")));
        assert!(matches!(resolve(site, "/sub"), Resolved::Folder));
        assert_eq!(file("/../etc/passwd"), None);
        assert_eq!(file("/sub/../../etc/passwd"), None);
        assert_eq!(file("/sub\\..\\index.html"), None);
        assert_eq!(file("/missing.html"), None);
        std::os::unix::fs::symlink("/etc", site.join("out")).unwrap();
        assert_eq!(file("/out/passwd"), None, "a symbolic link out of the site");
        assert_eq!(content_type(Path::new("x.SVG")), "image/svg+xml");
    }

    #[test]
    fn percent_escapes_are_decoded_and_bad_ones_refused() {
        assert_eq!(percent_decode("/a%20b.html").as_deref(), Some("/a b.html"));
        assert_eq!(percent_decode("/%2e%2e/x").as_deref(), Some("/../x"));
        assert_eq!(percent_decode("/%zz"), None);
        assert_eq!(percent_decode("/%"), None);
        assert_eq!(percent_decode("/a%00"), None);
        assert_eq!(percent_decode("/a%0d%0aSet-Cookie:%20x"), None);
        assert_eq!(percent_decode("/%ff"), None);
    }

    #[test]
    fn the_script_goes_before_the_last_closing_body_tag() {
        let page = inject_reload(b"<html><body>x</BODY></html>".to_vec(), 7, &[], None);
        let page = String::from_utf8(page).unwrap();
        assert!(page.starts_with("<html><body>x<script>"), "{page}");
        assert!(page.ends_with("</script>\n</BODY></html>"));
        assert!(page.contains("var generation = 7, busy = false;"));
        assert!(!page.contains("http://") && !page.contains("https://"));
        // Served during a rebuild: the badge is there from the start, its words escaped.
        let page = inject_reload(b"<body></body>".to_vec(), 7, &[], Some("running <ch06>"));
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("id=\"tangle-busy\" role=\"status\"") && page.contains(">running &lt;ch06&gt;</div>"));
        assert!(page.contains("var generation = 7, busy = true;"), "{page}");
    }

    #[test]
    fn a_poll_returns_at_once_for_an_old_generation_and_wakes_on_publish() {
        let site = Site::new(PathBuf::from("/a"));
        assert_eq!(site.wait_change(0, None, Duration::from_secs(5)), (1, None));
        let waiter = {
            let site = site.clone();
            std::thread::spawn(move || site.wait_change(1, None, Duration::from_secs(20)))
        };
        std::thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        assert_eq!(site.publish(PathBuf::from("/b")), 2);
        assert_eq!(waiter.join().unwrap(), (2, None));
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(site.current(), (PathBuf::from("/b"), 2));
    }

    #[test]
    fn a_poll_that_shows_whether_a_rebuild_runs_wakes_when_one_starts_and_ends() {
        let site = Site::new(PathBuf::from("/a"));
        let waiter = |busy_shown: Option<bool>, timeout: u64| {
            let site = site.clone();
            std::thread::spawn(move || site.wait_change(1, busy_shown, Duration::from_millis(timeout)))
        };
        let (shows_idle, ignores_busy) = (waiter(Some(false), 20_000), waiter(None, 1_000));
        std::thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        site.set_busy(Some("running ch06".into()));
        assert_eq!(shows_idle.join().unwrap(), (1, Some("running ch06".into())));
        assert!(started.elapsed() < Duration::from_secs(2));
        // A page of the old script waits for a new build only.
        assert_eq!(ignores_busy.join().unwrap(), (1, Some("running ch06".into())));
        assert!(started.elapsed() >= Duration::from_millis(900), "woken by the badge: {:?}", started.elapsed());
        let shows_busy = waiter(Some(true), 20_000);
        std::thread::sleep(Duration::from_millis(50));
        site.set_busy(None);
        assert_eq!(shows_busy.join().unwrap(), (1, None));
        // Already as shown: the poll waits (here until its timeout).
        assert_eq!(waiter(Some(false), 100).join().unwrap(), (1, None));
    }
}
