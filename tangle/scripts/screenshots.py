"""Drives headless Chromium over the DevTools protocol (standard library only).

usage: screenshots.py PORT BOOK_DIR OUT_DIR [--width PX]   full-page screenshots of every page,
                                                           one per figure and equation
       screenshots.py PORT BOOK_DIR --check                 the reader check (reader-check.js) of
                                                           every page at 1280 and 390 px; a table
                                                           of measures; exit 1 on a problem
"""
import base64
import json
import os
import socket
import struct
import sys
import time
import urllib.request


class DevTools:
    """A minimal WebSocket client, enough for the DevTools protocol on localhost."""

    def __init__(self, ws_url):
        rest = ws_url.split("://", 1)[1]
        hostport, path = rest.split("/", 1)
        host, port = hostport.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
             f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            response += self.sock.recv(4096)
        if b" 101 " not in response.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"websocket handshake failed: {response[:200]!r}")
        self.buffer = response.split(b"\r\n\r\n", 1)[1]
        self.next_id = 0
        self.events = []

    def _recv_exact(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("DevTools connection closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _send(self, text):
        payload = text.encode()
        header = bytearray([0x81])
        n = len(payload)
        if n < 126:
            header.append(0x80 | n)
        elif n < 65536:
            header.append(0x80 | 126)
            header += struct.pack(">H", n)
        else:
            header.append(0x80 | 127)
            header += struct.pack(">Q", n)
        mask = os.urandom(4)
        header += mask
        self.sock.sendall(bytes(header) + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _recv(self):
        message = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            message += self._recv_exact(n)
            if b0 & 0x80:
                return message.decode()

    def call(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        self._send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self._recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result["result"].get("value")


def wait_for_devtools(port):
    deadline = time.time() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
                targets = json.load(r)
            pages = [t for t in targets if t.get("type") == "page"]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
        except OSError:
            pass
        if time.time() > deadline:
            raise RuntimeError("Chromium's DevTools endpoint did not come up")
        time.sleep(0.3)


TILE = 1400
CHECK_JS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reader-check.js")


def shoot(dt, path, clip=None):
    params = {"format": "png", "captureBeyondViewport": True}
    if clip:
        params["clip"] = dict(clip, scale=1)
    data = dt.call("Page.captureScreenshot", **params)["data"]
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))


def book_pages(book_dir):
    return sorted(
        name for name in os.listdir(book_dir)
        if name.endswith(".html") and name not in ("print.html", "toc.html", "404.html")
    )


# A4 less the margins of the print stylesheet's @page rule (210 mm - 30 mm), in CSS pixels.
PRINT_WIDTH = 680


def load(dt, book_dir, name, width, height=900, media=""):
    """Opens a page at `width` CSS pixels (a phone below 600) and waits for it to settle.
    `media="print"` lays it out as it prints."""
    mobile = width < 600
    dt.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
            deviceScaleFactor=3 if mobile else 1, mobile=mobile)
    dt.call("Emulation.setEmulatedMedia", media=media)
    dt.events.clear()
    dt.call("Page.navigate", url="file://" + os.path.join(os.path.abspath(book_dir), name))
    for _ in range(100):
        time.sleep(0.1)
        if dt.evaluate("document.readyState") == "complete":
            break
    # Fonts (the math font) change box sizes when they arrive.
    dt.evaluate("document.fonts.ready.then(() => true)")
    time.sleep(0.3)


def console_errors(dt):
    """Errors the page reported since it was loaded: exceptions, console.error, failed loads."""
    out = []
    for e in dt.events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
        elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
            out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append(p["entry"].get("text", "") + " " + p["entry"].get("url", ""))
    return out


def check(dt, book_dir):
    """The reader check: every page at desktop and phone width. Returns the number of problems."""
    script = open(CHECK_JS).read()
    dt.call("Runtime.enable")
    dt.call("Log.enable")
    pages = book_pages(book_dir) + ["print.html"]
    problems, ids, links = [], {}, []
    print(f"{'page':<18}{'width':>6}{'code %':>8}{'code px':>9}{'page px':>9}{'code blocks':>13}"
          f"{'sideways':>10}{'out sideways':>14}{'long lib open':>15}{'eqs':>5}{'min label px':>14}")
    runs = [(name, width, "") for name in pages for width in (1280, 390)] + [("print.html", PRINT_WIDTH, "print")]
    for name, width, media in runs:
        load(dt, book_dir, name, width, media=media)
        found = dt.evaluate(script)
        m = found["measures"]
        print(f"{name + (' (print)' if media else ''):<18}{width:>6}{100 * m['codeShare']:>7.1f}%{m['codeHeight']:>9}{m['pageHeight']:>9}"
              f"{m['visibleCodeBlocks']:>6}/{m['codeBlocks']:<6}{m['scrollingCode']:>10}"
              f"{m['scrollingOutput']:>14}{len(m['openLongLibrary']):>15}{m['equations']:>5}"
              f"{str(m['smallestFigureLabelPx']):>14}")
        problems += [f"{name} at {width} px{' printed' if media else ''}: {p}" for p in found["problems"]]
        problems += [f"{name} at {width} px: console error: {e}" for e in console_errors(dt)]
        ids[name] = set(found["ids"])
        links += [(name, href) for href in found["links"]]
    for page, href in sorted(set(links)):
        path, _, anchor = href.partition("#")
        target = os.path.normpath(os.path.join(os.path.dirname(page), path))
        if not os.path.isfile(os.path.join(book_dir, target)):
            problems.append(f"{page}: a link to {href} names no file of the book")
        elif anchor and target in ids and anchor not in ids[target]:
            problems.append(f"{page}: a link to {href} names no element of {target}")
    for p in problems:
        print("problem:", p)
    print(f"{len(pages)} pages at 1280 and 390 px, print.html printed: {len(problems)} problem(s)")
    return len(problems)


def main():
    args = sys.argv[1:]
    port, book_dir = args[0], args[1]
    dt = DevTools(wait_for_devtools(port))
    dt.call("Page.enable")
    if "--check" in args:
        sys.exit(1 if check(dt, book_dir) else 0)
    out_dir = args[2]
    width = int(args[args.index("--width") + 1]) if "--width" in args else 1280
    suffix = "" if width == 1280 else f"-{width}"
    external = []
    for name in book_pages(book_dir):
        stem = name[:-5] + suffix
        load(dt, book_dir, name, width)
        external += [
            f"{name}: {url}" for url in dt.evaluate(
                "Array.from(document.querySelectorAll('script[src],link[rel=stylesheet],img[src]'))"
                ".map(e => e.src || e.href).filter(u => /^https?:/.test(u))") or []
        ]
        height = dt.evaluate("Math.ceil(document.documentElement.scrollHeight)")
        mobile = width < 600
        dt.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                deviceScaleFactor=3 if mobile else 1, mobile=mobile)
        time.sleep(0.3)
        shoot(dt, os.path.join(out_dir, f"{stem}.png"))
        print(f"{stem}.png ({width}x{height})")
        # The same page in screen-sized tiles: a 50,000-pixel PNG is hard to read in a viewer.
        tiles = os.path.join(out_dir, "tiles")
        os.makedirs(tiles, exist_ok=True)
        tile = TILE if not mobile else 800
        for k, top in enumerate(range(0, height, tile)):
            clip = {"x": 0, "y": top, "width": width, "height": min(tile, height - top)}
            shoot(dt, os.path.join(tiles, f"{stem}-{k:02}.png"), clip)
        boxes = dt.evaluate(
            "Array.from(document.querySelectorAll('figure.tangle-figure[id], .tangle-equation[id]')).map(e => {"
            " const r = e.getBoundingClientRect();"
            " return {id: e.id, x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; })") or []
        for box in boxes:
            clip = {k: max(0, box[k] - 8) if k in ("x", "y") else box[k] + 16 for k in ("x", "y", "width", "height")}
            file = f"{stem}-{box['id']}.png"
            shoot(dt, os.path.join(out_dir, file), clip)
            print(f"  {file}")
    if external:
        print("pages load resources from the network:", *external, sep="\n  ")
        sys.exit(1)


if __name__ == "__main__":
    main()
