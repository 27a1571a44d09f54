//! The `tangle` binary: a thin layer over the library (see `mdbook_tangle`).

fn main() -> std::process::ExitCode {
    mdbook_tangle::main()
}
