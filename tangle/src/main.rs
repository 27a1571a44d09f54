//! The `tangle` binary: a thin layer over the library (see `cli`).

fn main() -> std::process::ExitCode {
    tangle::cli::main()
}
