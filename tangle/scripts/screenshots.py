"""Drives headless Chromium over the DevTools protocol (standard library only) to take
full-page screenshots of every chapter page and one per figure and equation.

usage: screenshots.py PORT BOOK_DIR OUT_DIR
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


def shoot(dt, path, clip=None):
    params = {"format": "png", "captureBeyondViewport": True}
    if clip:
        params["clip"] = dict(clip, scale=1)
    data = dt.call("Page.captureScreenshot", **params)["data"]
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))


def main():
    port, book_dir, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    dt = DevTools(wait_for_devtools(port))
    dt.call("Page.enable")
    width = 1280
    pages = sorted(
        name for name in os.listdir(book_dir)
        if name.endswith(".html") and name not in ("print.html", "toc.html", "404.html")
    )
    external = []
    for name in pages:
        stem = name[:-5]
        dt.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
        dt.call("Page.navigate", url="file://" + os.path.join(os.path.abspath(book_dir), name))
        for _ in range(100):
            time.sleep(0.1)
            if dt.evaluate("document.readyState") == "complete":
                break
        time.sleep(0.5)
        external += [
            f"{name}: {url}" for url in dt.evaluate(
                "Array.from(document.querySelectorAll('script[src],link[rel=stylesheet],img[src]'))"
                ".map(e => e.src || e.href).filter(u => /^https?:/.test(u))") or []
        ]
        height = dt.evaluate("Math.ceil(document.documentElement.scrollHeight)")
        dt.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        time.sleep(0.3)
        shoot(dt, os.path.join(out_dir, f"{stem}.png"))
        print(f"{stem}.png ({width}x{height})")
        # The same page in screen-sized tiles: a 50,000-pixel PNG is hard to read in a viewer.
        tiles = os.path.join(out_dir, "tiles")
        os.makedirs(tiles, exist_ok=True)
        for k, top in enumerate(range(0, height, TILE)):
            clip = {"x": 0, "y": top, "width": width, "height": min(TILE, height - top)}
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
