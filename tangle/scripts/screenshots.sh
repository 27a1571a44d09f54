#!/usr/bin/env bash
# Screenshots of the rendered book, for a person to look at (not part of the tests).
#
#   tangle/scripts/screenshots.sh [--no-build] [--width PX]
#   tangle/scripts/screenshots.sh --check
#
# Builds the book (`cargo tangle book`, unless --no-build), opens every chapter page of
# book/book/ in headless Chromium and writes into target/screenshots/:
#   <page>.png                 the whole page, full length, 1280 px wide
#   <page>-fig-<name>.png      each numbered figure with its caption
#   <page>-eq-<n>.png          each numbered equation
#   tiles/<page>-NN.png        the page cut into 1400-pixel-high tiles, for reading
# With --width (390 for a phone) the files are named <page>-390.png and so on.
# With --check nothing is written: the reader test (tangle/cli/tests/reader.rs) builds the book,
# loads every page at 1280 and 390 px and print.html as printed, prints what reader-check.js
# measures (code share of the page, code blocks that scroll sideways, the smallest figure label)
# and fails on what a reader would trip on: an equation box with a scrollbar or clipped glyphs,
# a page that scrolls sideways, a box cut off on paper, a console error, a broken link or anchor.
# Chromium is driven by tangle_render::chromium (tangle/cli/examples/screenshots.rs), as
# `tangle pdf` and the tests drive it. Installs Debian's `chromium` package if it is missing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

build=1
check=0
args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --no-build) build=0 ;;
        --check) check=1 ;;
        --width) args+=(--width "$2"); shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

if ! command -v chromium >/dev/null 2>&1 && [[ -z "${TANGLE_CHROMIUM:-}" ]]; then
    echo "installing Debian's chromium ..." >&2
    sudo_cmd=""
    [[ "$(id -u)" != 0 ]] && sudo_cmd="sudo"
    $sudo_cmd apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y chromium
fi

if [[ $check == 1 ]]; then
    exec cargo test --release -p mdbook-tangle --test reader -- --nocapture
fi
if [[ $build == 1 ]]; then
    cargo tangle book
fi
[[ -f book/book/index.html ]] || { echo "no book/book/index.html: build the book first" >&2; exit 2; }
cargo run --release -q -p mdbook-tangle --example screenshots -- "$root/book/book" "$root/target/screenshots" "${args[@]}"
