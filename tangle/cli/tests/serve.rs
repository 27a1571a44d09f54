//! `cargo tangle serve` under clients that misbehave: idle connections, endless request lines,
//! methods and targets it must refuse, builds swapped while pages are being fetched; and the
//! real command end to end (live reload, `book/book` kept up to date, a busy port refused).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tangle_render::serve::http::{self, Site};

/// A server on a free port, in this process, serving `dir`.
fn start(dir: &Path, config: http::Config) -> (u16, Arc<Site>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let site = Site::new(dir.to_path_buf());
    let served = site.clone();
    std::thread::spawn(move || http::serve_forever(listener, served, config));
    (port, site)
}

fn tiny_site(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), format!("<html><body><p>{text}</p></body></html>\n")).unwrap();
    std::fs::write(dir.path().join("style.css"), "p { color: red }\n").unwrap();
    dir
}

/// Sends `request` and reads the whole answer (the server closes every connection).
fn ask(port: u16, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    String::from_utf8(answer).unwrap()
}

fn get(port: u16, path: &str) -> String {
    ask(port, format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn idle_connections_do_not_keep_other_clients_waiting() {
    let site = tiny_site("hello");
    let (port, _site) = start(site.path(), http::Config::default());
    // Fifty clients connect and say nothing; one sends half a request line.
    let mut idle: Vec<TcpStream> = (0..50).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    idle[0].write_all(b"GET /ind").unwrap();
    let started = Instant::now();
    let answer = get(port, "/");
    let took = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.contains("<p>hello</p>"));
    assert!(took < Duration::from_secs(1), "answered after {took:?} with 50 idle connections");
    eprintln!("answered in {took:?} with 50 idle connections open");
}

#[test]
fn an_idle_client_is_cut_off_at_the_head_deadline() {
    let site = tiny_site("x");
    let config = http::Config { head_timeout: Duration::from_millis(300), ..http::Config::default() };
    let (port, _site) = start(site.path(), config);
    let mut idle = TcpStream::connect(("127.0.0.1", port)).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut answer = String::new();
    idle.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
}

#[test]
fn an_endless_request_line_is_refused_and_memory_does_not_grow() {
    let site = tiny_site("x");
    let (port, _site) = start(site.path(), http::Config::default());
    // A line longer than the limit, sent whole, gets its answer.
    let mut long = b"GET /".to_vec();
    long.extend(std::iter::repeat_n(b'a', 20_000));
    let answer = ask(port, &long);
    assert!(answer.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{answer}");
    let mut headers = b"GET / HTTP/1.1\r\n".to_vec();
    for i in 0..1000 {
        headers.extend(format!("X-Filler-{i}: {}\r\n", "b".repeat(20)).as_bytes());
    }
    let answer = ask(port, &headers);
    assert!(answer.starts_with("HTTP/1.1 431 "), "{answer}");

    // Up to 1 GiB with no newline: the server stops reading, answers and closes; it never
    // holds more than its 8 KiB buffer (plus a bounded drain) for it.
    let before = rss_kib();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    let chunk = vec![b'a'; 1 << 20];
    stream.write_all(b"GET /").unwrap();
    let mut sent = 0usize;
    let started = Instant::now();
    while sent < 1 << 30 {
        match stream.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    let after = rss_kib();
    eprintln!(
        "sent {} KiB before the server closed, in {:?}; RSS {before} KiB -> {after} KiB",
        sent >> 10,
        started.elapsed()
    );
    assert!(sent < 1 << 30, "the server read a whole GiB");
    assert!(after < before + 64 * 1024, "RSS grew from {before} KiB to {after} KiB");
    // And it still answers.
    assert!(get(port, "/").starts_with("HTTP/1.1 200 OK"));
}

#[test]
fn methods_garbage_missing_files_and_escapes_are_refused() {
    let site = tiny_site("x");
    let (port, _site) = start(site.path(), http::Config::default());
    let answer = ask(port, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
    assert!(answer.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"), "{answer}");
    assert!(answer.contains("\r\nAllow: GET, HEAD\r\n"));
    for method in ["PUT", "DELETE", "OPTIONS", "BREW"] {
        let answer = ask(port, format!("{method} / HTTP/1.1\r\n\r\n").as_bytes());
        assert!(answer.starts_with("HTTP/1.1 405 "), "{method}: {answer}");
    }
    for garbage in [&b"hello there\r\n\r\n"[..], b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"\x00\x01\x02\r\n\r\n"] {
        let answer = ask(port, garbage);
        assert!(answer.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{garbage:?}: {answer}");
    }
    assert!(get(port, "http://example.com/").starts_with("HTTP/1.1 400 "));
    assert!(get(port, "/missing.html").starts_with("HTTP/1.1 404 Not Found\r\n"));
    for escape in ["/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2fetc/passwd"] {
        let answer = get(port, escape);
        assert!(answer.starts_with("HTTP/1.1 404 ") || answer.starts_with("HTTP/1.1 400 "), "{escape}: {answer}");
        assert!(!answer.contains("root:"));
    }
    let answer = get(port, "/style.css");
    assert!(answer.contains("Content-Type: text/css") && answer.ends_with("p { color: red }\n"));
    // HEAD: the same headers, no body.
    let head = ask(port, b"HEAD / HTTP/1.1\r\n\r\n");
    let full = get(port, "/");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"), "{head}");
    assert_eq!(head, full[..full.find("\r\n\r\n").unwrap() + 4]);
}

#[test]
fn pages_carry_the_reload_script_and_the_endpoint_answers_on_a_new_build() {
    let one = tiny_site("one");
    let two = tiny_site("two");
    let (port, site) = start(one.path(), http::Config::default());
    let page = get(port, "/");
    assert!(page.contains("var generation = 1, busy = false;") && page.contains(http::RELOAD_PATH), "{page}");
    assert!(page.find("<script>").unwrap() < page.find("</body>").unwrap());
    assert!(get(port, "/style.css").ends_with("p { color: red }\n"), "no script in other files");
    // An old generation is answered at once.
    assert!(get(port, "/__tangle/reload?since=0").ends_with("\r\n\r\n1\n"));
    // The current one waits for the next build.
    let waiting = std::thread::spawn(move || {
        let started = Instant::now();
        (get(port, "/__tangle/reload?since=1"), started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(300));
    site.publish(two.path().to_path_buf());
    let (answer, waited) = waiting.join().unwrap();
    assert!(answer.ends_with("\r\n\r\n2\n"), "{answer}");
    assert!(waited >= Duration::from_millis(250) && waited < Duration::from_secs(5), "{waited:?}");
    assert!(get(port, "/").contains("<p>two</p>"));
    assert!(get(port, "/__tangle/other").starts_with("HTTP/1.1 404 "));
}

#[test]
fn pages_fetched_while_builds_are_swapped_are_always_whole() {
    let one = tiny_site("one");
    let two = tiny_site("two");
    let (port, site) = start(one.path(), http::Config::default());
    let dirs = [one.path().to_path_buf(), two.path().to_path_buf()];
    let swapper = std::thread::spawn(move || {
        for i in 0..200 {
            site.publish(dirs[i % 2].clone());
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    for _ in 0..200 {
        let page = get(port, "/");
        assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
        assert!(page.contains("<p>one</p>") || page.contains("<p>two</p>"));
    }
    swapper.join().unwrap();
}

/// A project around a one-chapter book with no code, for the real `tangle serve`.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("book/src")).unwrap();
    std::fs::write(root.join("book/book.toml"), "[book]\ntitle = \"serve\"\n\n[preprocessor.tangle]\nroot = \"..\"\n")
        .unwrap();
    std::fs::write(root.join("book/src/SUMMARY.md"), "# Summary\n\n- [One](ch01.md)\n").unwrap();
    std::fs::write(root.join("book/src/ch01.md"), "# 1 One\n\nThe first version.\n").unwrap();
    std::fs::write(root.join("Cargo.toml"), "[workspace]\nresolver = \"3\"\nmembers = []\n").unwrap();
    dir
}

fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port()
}

/// Kills the server this test started when the test ends, passing or failing.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn tangle(root: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tangle"));
    cmd.arg("--root").arg(root);
    cmd
}

fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ok() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `/ch01.html` once it contains `what` (with `present` false: once it no longer does),
/// polled for up to `limit` seconds; a failure shows the last page and the server's log, when
/// one is collected.
fn page_until(port: u16, what: &str, present: bool, limit: u64, log: Option<&std::sync::Mutex<String>>) -> String {
    let started = Instant::now();
    loop {
        let page = get(port, "/ch01.html");
        if page.contains(what) == present {
            return page;
        }
        if started.elapsed() > Duration::from_secs(limit) {
            let log = log.map(|l| l.lock().unwrap().clone()).unwrap_or_default();
            let never = if present { "showed" } else { "lost" };
            panic!("the page never {never} {what:?}:\n{page}\nserver log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_real_server_rebuilds_reloads_and_keeps_book_book_current() {
    let project = project();
    let root: PathBuf = project.path().to_path_buf();
    let port = free_port();
    let _server = Server(
        tangle(&root).args(["serve", "--port", &port.to_string()]).stdout(std::process::Stdio::null()).spawn().unwrap(),
    );
    wait_until("the server answers", Duration::from_secs(60), || TcpStream::connect(("127.0.0.1", port)).is_ok());
    let page = get(port, "/ch01.html");
    assert!(page.contains("The first version.") && page.contains("var generation = 1, busy = false;"), "{page}");
    assert!(std::fs::read_to_string(root.join("book/book/ch01.html")).unwrap().contains("The first version."));
    assert!(!std::fs::read_to_string(root.join("book/book/ch01.html")).unwrap().contains("__tangle"));

    // A second server on the same port is refused before it builds anything.
    let book_page = root.join("book/book/ch01.html");
    let before = std::fs::metadata(&book_page).unwrap().modified().unwrap();
    let second = tangle(&root).args(["serve", "--port", &port.to_string()]).output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains(&format!("port {port} is in use")), "{stderr}");
    assert_eq!(std::fs::metadata(&book_page).unwrap().modified().unwrap(), before, "book/book was rebuilt");

    // An edit: the open page's poll answers the new generation, the new page is served,
    // and book/book follows. A page that shows whether a rebuild runs hears first that one
    // does, before anything is rebuilt.
    let poll = std::thread::spawn(move || get(port, "/__tangle/reload?since=1"));
    let poll_busy = std::thread::spawn(move || get(port, "/__tangle/reload?since=1&busy=0"));
    std::thread::sleep(Duration::from_millis(1100));
    std::fs::write(root.join("book/src/ch01.md"), "# 1 One\n\nThe second version.\n").unwrap();
    let answer = poll.join().unwrap();
    assert!(answer.ends_with("\r\n\r\n2\n"), "{answer}");
    let answer = poll_busy.join().unwrap();
    let rebuilding = format!("\r\n\r\n1\n{}", tangle_render::serve::REBUILDING);
    assert!(answer.ends_with(&rebuilding), "{answer}");
    assert!(get(port, "/ch01.html").contains("The second version."));
    assert!(std::fs::read_to_string(&book_page).unwrap().contains("The second version."));
}

#[test]
fn a_served_page_shows_what_is_wrong_until_it_is_fixed() {
    let project = project();
    let root: PathBuf = project.path().to_path_buf();
    // The chapter programs build where the fixture books' do (runtime and dependencies built).
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf();
    std::fs::create_dir_all(root.join("code")).unwrap();
    std::fs::copy(workspace.join("code/Cargo.lock"), root.join("code/Cargo.lock")).unwrap();
    let port = free_port();
    let _server = Server(
        tangle(&root)
            .args(["serve", "--port", &port.to_string()])
            .env("TANGLE_TARGET_DIR", workspace.join("target/tangle-fixtures"))
            .env_remove("CI")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the server answers", Duration::from_secs(60), || TcpStream::connect(("127.0.0.1", port)).is_ok());
    let banner = "id=\"tangle-problems\"";
    assert!(!get(port, "/ch01.html").contains(banner), "a clean book has no banner");
    let page_shows = |what: &str, limit: u64| page_until(port, what, true, limit, None);

    // A refused directive: the book cannot be built; the last good page gets the banner.
    std::fs::write(root.join("book/src/ch01.md"), "# 1 One\n\nThe first version.\n\n{{#include /etc/hostname}}\n")
        .unwrap();
    let page = page_shows(banner, 60);
    assert!(page.contains("book/src/ch01.md:5:1") && page.contains("outside the folders"), "{page}");
    assert!(page.contains("The first version."), "the last good build");

    // A drifted output, and a panic: both named at their lines.
    std::fs::write(
        root.join("book/src/ch01.md"),
        "# 1 One\n\n```rust\nprintln!(\"2\");\n```\n\n```output\n1\n```\n\nThe second version.\n",
    )
    .unwrap();
    let page = page_shows("The second version.", 300);
    assert!(page.contains(banner) && page.contains("drift: book/src/ch01.md:7"), "{page}");
    std::fs::write(root.join("book/src/ch01.md"), "# 1 One\n\n```rust\npanic!(\"boom\");\n```\n\nThe third version.\n")
        .unwrap();
    let page = page_shows("The third version.", 300);
    assert!(page.contains(banner) && page.contains("book/src/ch01.md:4: this cell failed"), "{page}");
    assert!(page.contains("boom"), "{page}");

    // Fixed: the banner goes.
    std::fs::write(
        root.join("book/src/ch01.md"),
        "# 1 One\n\n```rust\nprintln!(\"2\");\n```\n\n```output\n2\n```\n\nFixed.\n",
    )
    .unwrap();
    // Fixed, but its snapshot is missing, as `check` says; `accept` in a terminal writes it, and
    // the banner goes.
    let page = page_shows("Fixed.", 300);
    assert!(page.contains(banner) && page.contains("snapshots/ch01__") && page.contains("missing"), "{page}");
    assert!(!page.contains("this cell failed") && !page.contains("drift: book/src"), "{page}");
    accept_in_a_terminal(&root);
    page_until(port, banner, false, 120, None);
    // (accept writes the snapshots and then code/: let the rebuilds they call for pass.)
    let mut last = generation(&get(port, "/ch01.html"));
    loop {
        std::thread::sleep(Duration::from_secs(3));
        let now = generation(&get(port, "/ch01.html"));
        if now == last {
            break;
        }
        last = now;
    }

    // What the rebuild writes itself (code/, the theme, the lock file) calls for no rebuild:
    // one save, one new generation. (A paragraph above the cell moves it: code/ is rewritten.)
    std::fs::write(
        root.join("book/src/ch01.md"),
        "# 1 One\n\nMoved down.\n\n```rust\nprintln!(\"2\");\n```\n\n```output\n2\n```\n\nFixed.\n",
    )
    .unwrap();
    let page = page_shows("Moved down.", 300);
    let built = generation(&page).expect("the page's generation");
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(generation(&get(port, "/ch01.html")), Some(built), "the server rebuilt with no change of the author's");
}

/// The build a served page comes from (its live-reload script's generation).
fn generation(page: &str) -> Option<u32> {
    page.split("var generation = ").nth(1).and_then(|r| r.split([',', ';']).next()).and_then(|g| g.parse().ok())
}

/// `tangle accept` run beside the server, building where the served books do.
fn accept_in_a_terminal(root: &Path) {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap();
    let accepted = tangle(root)
        .arg("accept")
        .env("TANGLE_TARGET_DIR", workspace.join("target/tangle-fixtures"))
        .env_remove("CI")
        .output()
        .unwrap();
    assert!(accepted.status.success(), "{}", String::from_utf8_lossy(&accepted.stderr));
}

/// A served book whose chapter programs build where the fixture books' do, with the server's
/// stderr (its progress lines) collected as it comes.
fn serve_with_log(root: &Path, port: u16) -> (Server, Arc<std::sync::Mutex<String>>) {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf();
    std::fs::create_dir_all(root.join("code")).unwrap();
    std::fs::copy(workspace.join("code/Cargo.lock"), root.join("code/Cargo.lock")).unwrap();
    let mut child = tangle(root)
        .args(["serve", "--port", &port.to_string()])
        .env("TANGLE_TARGET_DIR", workspace.join("target/tangle-fixtures"))
        .env_remove("CI")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let log = Arc::new(std::sync::Mutex::new(String::new()));
    let stderr = child.stderr.take().unwrap();
    let sink = log.clone();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let mut log = sink.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    (Server(child), log)
}

#[test]
fn a_save_stops_a_run_stuck_in_a_loop_and_a_discard_in_a_terminal_clears_the_banner() {
    let project = project();
    let root: PathBuf = project.path().to_path_buf();
    let port = free_port();
    let (_server, log) = serve_with_log(&root, port);
    wait_until("the server answers", Duration::from_secs(60), || TcpStream::connect(("127.0.0.1", port)).is_ok());
    // A page is answered once the first build is served and the watcher runs.
    assert!(get(port, "/ch01.html").contains("The first version."));
    let page_shows = |what: &str, limit: u64| page_until(port, what, true, limit, Some(&log));

    // A cell that never ends (no timeout of its own: 600 s). Once it runs, the author saves
    // the fix: the loop is stopped, and the fix is on the page long before the timeout.
    std::fs::write(
        root.join("book/src/ch01.md"),
        "# 1 One\n\n```rust\nloop {\n    std::hint::black_box(0);\n}\n```\n\nLooping.\n",
    )
    .unwrap();
    let started = Instant::now();
    while !log.lock().unwrap().contains("running ch01") {
        assert!(started.elapsed() < Duration::from_secs(300), "the loop never ran:\n{}", log.lock().unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let saved = Instant::now();
    std::fs::write(
        root.join("book/src/ch01.md"),
        "# 1 One\n\n```rust\nprintln!(\"2\");\n```\n\n```output\n2\n```\n\nFixed after the loop.\n",
    )
    .unwrap();
    let page = page_shows("Fixed after the loop.", 300);
    assert!(saved.elapsed() < Duration::from_secs(300), "the fix waited for the loop");
    assert!(!page.contains("this cell failed") && !page.contains("stopped"), "{page}");
    // Its snapshot, which `accept` in a terminal writes: then the book is clean.
    accept_in_a_terminal(&root);
    page_until(port, "id=\"tangle-problems\"", false, 120, Some(&log));

    // An edit of the generated glue (which untangle cannot take) gets the banner; dropping it
    // in a terminal with `sync --discard` takes the banner away, with no save of a chapter.
    let main = root.join("code/ch01/src/main.rs");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, text.replacen("fn main() {", "fn main() { // mine", 1)).unwrap();
    let page = page_shows("id=\"tangle-problems\"", 120);
    assert!(page.contains("code/ch01/src/main.rs was edited"), "{page}");
    let discard = tangle(&root).args(["sync", "--discard"]).output().unwrap();
    assert!(discard.status.success(), "{}", String::from_utf8_lossy(&discard.stderr));
    // The banner goes with no save of the author's.
    page_until(port, "id=\"tangle-problems\"", false, 120, Some(&log));

    // A cell that writes a file into the book's sources is no save of the author's: its run is
    // not stopped and started again without end, and the book settles.
    std::fs::write(
        root.join("book/src/ch01.md"),
        "# 1 One\n\n```rust\nstd::fs::write(\"book/src/written.md\", \"# Written\\n\")?;\n\
         std::thread::sleep(std::time::Duration::from_millis(1500));\n```\n\nWrites a file.\n",
    )
    .unwrap();
    page_shows("Writes a file.", 300);
    // Again, now that the file it writes exists: its code changed, so it runs again.
    let text = std::fs::read_to_string(root.join("book/src/ch01.md")).unwrap();
    std::fs::write(root.join("book/src/ch01.md"), text.replace("1500", "1400").replace("a file.", "it again."))
        .unwrap();
    let page = page_shows("Writes it again.", 300);
    std::thread::sleep(Duration::from_secs(8));
    let later = get(port, "/ch01.html");
    let restarts = log.lock().unwrap().matches(tangle_core::run::STOPPED).count();
    assert!(restarts <= 1, "the run was stopped {restarts} times:\n{}", log.lock().unwrap());
    assert!(
        generation(&later) <= generation(&page).map(|g| g + 1),
        "the server kept rebuilding:\n{}",
        log.lock().unwrap()
    );
}

#[test]
fn a_book_of_examples_is_checked_while_served() {
    let project = project();
    let root: PathBuf = project.path().to_path_buf();
    std::fs::write(
        root.join("book/book.toml"),
        "[book]\ntitle = \"serve\"\n\n[preprocessor.tangle]\nroot = \"..\"\ncells = \"examples\"\n",
    )
    .unwrap();
    let port = free_port();
    let (_server, log) = serve_with_log(&root, port);
    wait_until("the server answers", Duration::from_secs(60), || TcpStream::connect(("127.0.0.1", port)).is_ok());
    assert!(get(port, "/ch01.html").contains("The first version."));
    let page_shows = |what: &str, present: bool| page_until(port, what, present, 300, Some(&log));
    std::fs::write(root.join("book/src/ch01.md"), "# 1 One\n\n```rust\nlet x: u32 = \"one\";\n```\n\nAn example.\n")
        .unwrap();
    let page = page_shows("id=\"tangle-problems\"", true);
    assert!(page.contains("book/src/ch01.md:4") && page.contains("mismatched types"), "{page}");
    std::fs::write(root.join("book/src/ch01.md"), "# 1 One\n\n```rust\nlet x: u32 = 1;\n```\n\nFixed.\n").unwrap();
    let page = page_shows("id=\"tangle-problems\"", false);
    assert!(page.contains("Fixed."), "{page}");
    assert!(!root.join("code").join("Cargo.toml").exists(), "a book of examples alone gets no code folder");
}

/// What the examples read outside the book's folders is watched too: a save of the crate they
/// use by path, or of a data file their chapter declares, is checked as a save of the chapter
/// would be.
#[test]
fn a_save_of_a_crate_used_by_path_or_of_a_declared_data_file_is_checked() {
    let project = project();
    let root: PathBuf = project.path().to_path_buf();
    std::fs::write(
        root.join("book/book.toml"),
        "[book]\ntitle = \"serve\"\n\n[preprocessor.tangle]\nroot = \"..\"\ncells = \"examples\"\n\n\
         [preprocessor.tangle.dependencies]\nmine = { path = \"../mine\" }\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("mine/src")).unwrap();
    std::fs::create_dir_all(root.join("data")).unwrap();
    std::fs::write(root.join("mine/Cargo.toml"), "[package]\nname = \"mine\"\nedition = \"2021\"\n").unwrap();
    let answer = |n: u32| format!("pub fn answer() -> u32 {{\n    {n}\n}}\n");
    std::fs::write(root.join("mine/src/lib.rs"), answer(42)).unwrap();
    std::fs::write(root.join("data/flag.txt"), "up\n").unwrap();
    std::fs::write(
        root.join("book/src/ch01.md"),
        "# 1 One\n\n<!-- tangle: data data/flag.txt -->\n\n```rust\nassert_eq!(mine::answer(), 42);\n\
         assert_eq!(std::fs::read_to_string(\"data/flag.txt\").unwrap(), \"up\\n\");\n```\n\nThe first version.\n",
    )
    .unwrap();
    let port = free_port();
    let (_server, log) = serve_with_log(&root, port);
    wait_until("the server answers", Duration::from_secs(300), || TcpStream::connect(("127.0.0.1", port)).is_ok());
    let banner = "id=\"tangle-problems\"";
    let page = get(port, "/ch01.html");
    assert!(page.contains("The first version.") && !page.contains(banner), "{page}");
    let page_shows = |what: &str, present: bool| page_until(port, what, present, 300, Some(&log));
    // The crate, saved by an editor that writes a new file and renames it over the old one.
    std::fs::write(root.join("mine/src/lib.rs.new"), answer(41)).unwrap();
    std::fs::rename(root.join("mine/src/lib.rs.new"), root.join("mine/src/lib.rs")).unwrap();
    let page = page_shows(banner, true);
    assert!(page.contains("book/src/ch01.md:6") && page.contains("41"), "{page}");
    std::fs::write(root.join("mine/src/lib.rs"), answer(42)).unwrap();
    page_shows(banner, false);
    // The data file, at the project root: outside every folder the book has.
    std::fs::write(root.join("data/flag.txt"), "down\n").unwrap();
    let page = page_shows(banner, true);
    assert!(page.contains("book/src/ch01.md:7") && page.contains("down"), "{page}");
}

/// A book that cannot be built when the server starts is served anyway: every page says what
/// is wrong, and the first save that fixes it brings the book.
#[test]
fn a_book_that_cannot_be_built_yet_is_served_with_what_is_wrong() {
    let project = project();
    let root: PathBuf = project.path().to_path_buf();
    std::fs::write(root.join("book/src/ch01.md"), "# 1 One\n\nBroken.\n\n{{#include /etc/hostname}}\n").unwrap();
    let port = free_port();
    let (_server, log) = serve_with_log(&root, port);
    wait_until("the server answers", Duration::from_secs(120), || TcpStream::connect(("127.0.0.1", port)).is_ok());
    let page = get(port, "/ch01.html");
    assert!(page.starts_with("HTTP/1.1 404"), "{page}");
    assert!(page.contains("id=\"tangle-problems\"") && page.contains("book/src/ch01.md:5:1"), "{page}");
    assert!(page.contains("var generation = "), "the page reloads with the next build:\n{page}");
    assert!(get(port, "/").contains("The book could not be built"), "the placeholder's index");
    std::fs::write(root.join("book/src/ch01.md"), "# 1 One\n\nFixed.\n").unwrap();
    let page = page_until(port, "Fixed.", true, 120, Some(&log));
    assert!(page.starts_with("HTTP/1.1 200") && !page.contains("id=\"tangle-problems\""), "{page}");
}
