//! `cargo tangle pdf`: the built book's `print.html` (every chapter on one page, laid out by
//! the print stylesheet in `book/theme/tangle.css`: A4, code and output wrapped, figures kept
//! with their captions) printed to PDF by headless Chromium, driven as the browser tests
//! drive it ([`crate::chromium`]). The page is printed once it has loaded and its fonts have
//! arrived; an error the page reports on the way is named, never printed into the PDF
//! silently. Where there is no Chromium, the error says how to install it.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::json;

use crate::chromium::{self, Browser};

/// How long Chromium may take to lay out and print the book.
const TIMEOUT: Duration = Duration::from_secs(180);

/// Prints `book_dir/print.html` (a built book) to `pdf`.
pub fn print_book(book_dir: &Path, pdf: &Path) -> anyhow::Result<()> {
    let page = book_dir.join("print.html");
    if !page.is_file() {
        bail!("no {}: build the book first (`{}`)", page.display(), tangle_core::messages::command("book"));
    }
    let chromium = chromium::find().with_context(|| format!("printing the book: {}", chromium::INSTALL_HINT))?;
    let page = page.canonicalize()?;
    let mut browser = Browser::launch(&chromium, &[])?;
    browser.timeout = TIMEOUT;
    // mdBook's print.html opens the print dialog once loaded: here the printing is ours.
    browser.call("Page.addScriptToEvaluateOnNewDocument", json!({ "source": "window.print = function () {};" }))?;
    browser.open(&format!("file://{}", page.display()))?;
    let errors = browser.page_errors();
    if !errors.is_empty() {
        bail!("{} reported errors while loading:\n{}", page.display(), errors.join("\n"));
    }
    let bytes = browser.call_for_data(
        "Page.printToPDF",
        json!({ "printBackground": true, "preferCSSPageSize": true, "displayHeaderFooter": false }),
    )?;
    if !bytes.starts_with(b"%PDF-") {
        bail!("Chromium printed {} bytes that are not a PDF", bytes.len());
    }
    if let Some(parent) = pdf.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    tangle_core::fsutil::write_atomic(pdf, &bytes).with_context(|| format!("cannot write {}", pdf.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_book_that_was_never_built_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = print_book(dir.path(), &dir.path().join("book.pdf")).unwrap_err().to_string();
        assert!(err.contains("print.html") && err.contains("tangle book`"), "{err}");
    }

    /// Where Chromium is installed: a page that opens the print dialog once loaded (as
    /// mdBook's does) printed to a PDF of its own A5 pages, replacing the PDF printed before.
    #[test]
    fn a_page_is_printed_to_pdf() {
        if chromium::find().is_none() {
            eprintln!("skipped: no Chromium ({})", chromium::INSTALL_HINT);
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let body = "<p>page</p>".repeat(200);
        let html = format!(
            "<html><head><style>@page {{ size: A5 }}</style></head><body>{body}\
             <script>window.addEventListener('load', () => window.print())</script></body></html>"
        );
        std::fs::write(dir.path().join("print.html"), html).unwrap();
        let pdf = dir.path().join("out/book.pdf");
        std::fs::create_dir_all(pdf.parent().unwrap()).unwrap();
        std::fs::write(&pdf, "the PDF printed before").unwrap();
        print_book(dir.path(), &pdf).unwrap();
        let bytes = std::fs::read(&pdf).unwrap();
        assert!(bytes.starts_with(b"%PDF-"));
        // A5 is 420 x 595 points; Chromium (Skia) writes the MediaBox of every page.
        let text = String::from_utf8_lossy(&bytes);
        let pages = text.matches("/MediaBox [0 0 420 594.").count();
        assert!(pages >= 2, "{pages} A5 pages: the page's @page size was not used, or its text fit on one");
        assert_eq!(pages, text.matches("/Type /Page\n").count(), "every page is A5");
    }
}
