//! This crate's own files, for the tool (the `sources` feature): `tangle sync` writes them into
//! every book as a generated crate, so that a book builds from the installed tool and the public
//! registry alone and never holds a path into the tool's source tree. The manifest is not among
//! them: the tool writes the book's copy of it (its version is the tool's).

/// Each file's path inside the crate and its bytes.
pub const FILES: &[(&str, &[u8])] = &[
    ("src/lib.rs", include_bytes!("lib.rs")),
    ("src/figure.rs", include_bytes!("figure.rs")),
    ("src/file.rs", include_bytes!("file.rs")),
    ("src/sources.rs", include_bytes!("sources.rs")),
    ("src/value.rs", include_bytes!("value.rs")),
    ("src/widget/mod.rs", include_bytes!("widget/mod.rs")),
    ("src/widget/chart.rs", include_bytes!("widget/chart.rs")),
    ("src/widget/data.rs", include_bytes!("widget/data.rs")),
    ("src/widget/error.rs", include_bytes!("widget/error.rs")),
    ("src/widget/grid.rs", include_bytes!("widget/grid.rs")),
    ("fonts/DejaVuSans.ttf", include_bytes!("../fonts/DejaVuSans.ttf")),
    ("fonts/LICENSE-DejaVu.txt", include_bytes!("../fonts/LICENSE-DejaVu.txt")),
];
