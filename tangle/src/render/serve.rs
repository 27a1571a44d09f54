//! `cargo tangle serve`: rebuild the HTML book when a source changes, and serve it on
//! localhost. Deliberately small: polling instead of a file-watcher crate, `std::net` instead of
//! a web framework, no live-reload script (reload the page yourself).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The newest modification time under the book's sources, theme and figures.
fn newest_change(root: &Path) -> SystemTime {
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut stack: Vec<PathBuf> =
        vec![root.join("book/src"), root.join("book/theme"), root.join("book/book.toml"), root.join("figures")];
    while let Some(path) = stack.pop() {
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        if let Ok(modified) = meta.modified() {
            newest = newest.max(modified);
        }
        if meta.is_dir()
            && let Ok(entries) = std::fs::read_dir(&path)
        {
            stack.extend(entries.flatten().map(|e| e.path()));
        }
    }
    newest
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css",
        Some("js") => "text/javascript",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("woff2") => "font/woff2",
        Some("woff") => "font/woff",
        Some("ttf") => "font/ttf",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// Maps a request path to a file under `site`, refusing anything that climbs out of it.
fn resolve(site: &Path, request_path: &str) -> Option<PathBuf> {
    let path = request_path.split(['?', '#']).next().unwrap_or("/");
    let mut file = site.to_path_buf();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        if part == ".." || part.contains('\\') {
            return None;
        }
        file.push(part);
    }
    if file.is_dir() {
        file.push("index.html");
    }
    file.is_file().then_some(file)
}

fn answer(site: &Path, stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let mut stream = stream;
    match resolve(site, target) {
        Some(file) => {
            let body = std::fs::read(&file)?;
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
                content_type(&file),
                body.len()
            )?;
            stream.write_all(&body)
        }
        None => stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found"),
    }
}

/// Builds the book, serves `root/book/book` on `127.0.0.1:port`, and rebuilds whenever a file
/// under `book/src`, `book/theme`, `book/book.toml` or `figures/` changes. Runs until killed.
pub fn serve(root: &Path, port: u16) -> anyhow::Result<()> {
    super::build_book(root)?;
    let site = root.join("book/book");
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    println!("serving {} on http://127.0.0.1:{port}/ (rebuilds on save; Ctrl-C stops)", site.display());
    {
        let root = root.to_path_buf();
        std::thread::spawn(move || {
            let mut seen = newest_change(&root);
            loop {
                std::thread::sleep(Duration::from_millis(500));
                let now = newest_change(&root);
                if now > seen {
                    seen = now;
                    match super::build_book(&root) {
                        Ok(()) => println!("rebuilt the book"),
                        Err(e) => eprintln!("rebuild failed: {e:#}"),
                    }
                }
            }
        });
    }
    for stream in listener.incoming().flatten() {
        if let Err(e) = answer(&site, stream) {
            eprintln!("serve: {e}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_cannot_leave_the_site() {
        let site = std::env::temp_dir().join(format!("tangle-serve-{}", std::process::id()));
        std::fs::create_dir_all(site.join("sub")).unwrap();
        std::fs::write(site.join("index.html"), "i").unwrap();
        std::fs::write(site.join("sub/a.css"), "a").unwrap();
        assert_eq!(resolve(&site, "/"), Some(site.join("index.html")));
        assert_eq!(resolve(&site, "/sub/a.css?v=1"), Some(site.join("sub/a.css")));
        assert_eq!(resolve(&site, "/../etc/passwd"), None);
        assert_eq!(resolve(&site, "/missing.html"), None);
        assert_eq!(content_type(Path::new("x.svg")), "image/svg+xml");
        std::fs::remove_dir_all(&site).ok();
    }
}
