//! The `mdbook-tangle` binary: what mdBook runs for `[preprocessor.tangle]` when the table
//! names no `command`. `mdbook-tangle supports RENDERER` and `mdbook-tangle` (the book as JSON
//! on stdin) are `tangle preprocess supports RENDERER` and `tangle preprocess`.

fn main() -> std::process::ExitCode {
    mdbook_tangle::preprocessor_main()
}
