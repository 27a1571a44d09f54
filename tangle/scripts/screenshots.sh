#!/usr/bin/env bash
# Screenshots of the rendered book, for a person to look at (not part of the tests).
#
#   tangle/scripts/screenshots.sh [--no-build] [--width PX]
#   tangle/scripts/screenshots.sh [--no-build] --check
#
# Builds the book (`cargo tangle book`, unless --no-build), opens every chapter page of
# book/book/ in headless Chromium and writes into target/screenshots/:
#   <page>.png                 the whole page, full length, 1280 px wide
#   <page>-fig-<name>.png      each numbered figure with its caption
#   <page>-eq-<n>.png          each numbered equation
#   tiles/<page>-NN.png        the page cut into 1400-pixel-high tiles, for reading
# With --width (390 for a phone) the files are named <page>-390.png and so on.
# With --check nothing is written: every page is loaded at 1280 and 390 px, reader-check.js
# measures it (code share of the page, code blocks that scroll sideways, the smallest figure
# label) and reports what a reader would trip on: an equation box with a scrollbar or clipped
# glyphs, a page that scrolls sideways, a console error, a broken link or anchor (exit 1).
# `tangle/tests/reader.rs` runs the same checks in the test command.
# Installs Debian's `chromium` package if it is missing. Needs python3 (standard library only).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

build=1
args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --no-build) build=0 ;;
        --check) args+=(--check) ;;
        --width) args+=(--width "$2"); shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
if [[ $build == 1 ]]; then
    cargo tangle book
fi
[[ -f book/book/index.html ]] || { echo "no book/book/index.html: build the book first" >&2; exit 2; }

if ! command -v chromium >/dev/null 2>&1; then
    echo "installing Debian's chromium ..." >&2
    sudo_cmd=""
    [[ "$(id -u)" != 0 ]] && sudo_cmd="sudo"
    $sudo_cmd apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y chromium
fi

out="$root/target/screenshots"
mkdir -p "$out"
profile="$(mktemp -d)"
port=$(( 20000 + RANDOM % 20000 ))

chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$profile" \
    --remote-debugging-address=127.0.0.1 --remote-debugging-port="$port" about:blank \
    >"$profile/chromium.log" 2>&1 &
chromium_pid=$!
cleanup() { kill "$chromium_pid" 2>/dev/null || true; wait "$chromium_pid" 2>/dev/null || true; rm -rf "$profile" 2>/dev/null || true; }
trap cleanup EXIT

python3 "$root/tangle/scripts/screenshots.py" "$port" "$root/book/book" "$out" "${args[@]}"
