#!/usr/bin/env bash
# Screenshots of the rendered book, for a person to look at (not part of the tests).
#
#   tangle/scripts/screenshots.sh [--no-build]
#
# Builds the book (`cargo tangle book`, unless --no-build), opens every chapter page of
# book/book/ in headless Chromium and writes into target/screenshots/:
#   <page>.png                 the whole page, full length, 1280 px wide
#   <page>-fig-<name>.png      each numbered figure with its caption
#   <page>-eq-<n>.png          each numbered equation
#   tiles/<page>-NN.png        the page cut into 1400-pixel-high tiles, for reading
# Installs Debian's `chromium` package if it is missing. Needs python3 (standard library only).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

if [[ "${1:-}" != "--no-build" ]]; then
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
cleanup() { kill "$chromium_pid" 2>/dev/null || true; wait "$chromium_pid" 2>/dev/null || true; rm -rf "$profile"; }
trap cleanup EXIT

python3 "$root/tangle/scripts/screenshots.py" "$port" "$root/book/book" "$out"
