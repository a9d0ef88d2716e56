"""Shared checks of the HTML pages (``clustersim run --html``, ``clustersim report``): an HTML
parser that checks nesting and collects ids, texts and timeline bars; headless Chromium (found,
run, its console read); and a small PNG decoder for its screenshots.

The Chromium tests need Debian's ``chromium`` (``/usr/bin/chromium``; ``.ci/browser-setup.sh``
installs it; ``CLUSTERSIM_CHROMIUM`` names another binary). Without it they skip with the reason,
except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser

import numpy as np
import pytest

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
EXTERNAL_TAGS = {"script", "link", "img", "iframe", "object", "embed", "audio", "video", "source", "base"}


# ------------------------------------------------------------------------------------ parsing
class Doc(HTMLParser):
    """Checks nesting (every non-void element closed, in order) and collects ids, texts and bars."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, str | None]] = []
        self.errors: list[str] = []
        self.ids: dict[str, dict] = {}
        self.text: dict[str, str] = {}  # id -> text content
        self.tags: dict[str, int] = {}
        self.rects: list[dict] = []  # timeline rects: class, title
        self.stream_labels: list[str] = []
        self.resource_attrs: list[str] = []
        self.in_timeline = 0
        self._cur_rect: dict | None = None
        self._in_title = False
        self._cls_stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            if k in ("src", "href", "xlink:href", "srcset") or (k != "xmlns" and v and re.search(r"url\(|https?://", v)):
                self.resource_attrs.append(f"{tag} {k}={v}")
        if "id" in a:
            if a["id"] in self.ids:
                self.errors.append(f"duplicate id {a['id']}")
            self.ids[a["id"]] = a
            self.text.setdefault(a["id"], "")
        if a.get("id") == "timeline":
            self.in_timeline += 1
        if self.in_timeline and tag == "rect" and (a.get("class") or "").startswith("k-"):
            self._cur_rect = {"class": a["class"], "title": "", "width": float(a["width"])}
            self.rects.append(self._cur_rect)
        if tag == "title" and self._cur_rect is not None:
            self._in_title = True
        self._cls_stack.append(a.get("class") or "")
        if tag not in VOID:
            self.stack.append((tag, a.get("id")))
        else:
            self._cls_stack.pop()

    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            if k in ("src", "href", "xlink:href", "srcset"):
                self.resource_attrs.append(f"{tag} {k}={v}")

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack:
            self.errors.append(f"stray </{tag}>")
            return
        top, tid = self.stack.pop()
        self._cls_stack.pop()
        if top != tag:
            self.errors.append(f"</{tag}> closes <{top}>")
        if tid == "timeline":
            self.in_timeline -= 1
        if tag == "title":
            self._in_title = False
        if tag == "rect":
            self._cur_rect = None

    def handle_data(self, data):
        for _, tid in self.stack:
            if tid is not None:
                self.text[tid] += data
        if self._in_title and self._cur_rect is not None:
            self._cur_rect["title"] += data
        if self.in_timeline and self._cls_stack and self._cls_stack[-1] == "stream":
            self.stream_labels.append(data)


def parse(text: str) -> Doc:
    d = Doc()
    d.feed(text)
    d.close()
    assert not d.errors, d.errors[:5]
    assert not d.stack, f"unclosed elements: {d.stack[:5]}"
    return d


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars"]


def find_chromium() -> str:
    """The Chromium binary; skips (fails under CI=true) when there is none."""
    want = os.environ.get("CLUSTERSIM_CHROMIUM")  # another binary; a missing one counts as absent
    if want:
        exe = want if os.access(want, os.X_OK) else None
    else:
        exe = "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else shutil.which("chromium")
    if not exe:
        reason = f"headless Chromium not installed: {want or '/usr/bin/chromium'} (apt-get install -y chromium, " \
                 "or .ci/browser-setup.sh)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"Chromium required under CI=true: {reason}")
        pytest.skip(reason)
    return exe


def browser(exe, tmp_path, *args):
    """Run headless Chromium on ``args`` in ``tmp_path``; asserts exit 0."""
    r = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                       capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    return r


#: Chromium logs what a page writes to its console (console.error, uncaught exceptions, failed
#: loads) on stderr with these flags, one ``...:CONSOLE:<line>] "message", source: ...`` line each.
CONSOLE_FLAGS = ["--enable-logging=stderr", "--v=0"]


def console_messages(stderr: str) -> list[str]:
    """The page's console lines in a Chromium stderr run with :data:`CONSOLE_FLAGS`."""
    return [ln for ln in stderr.splitlines() if re.search(r":CONSOLE[:(]", ln)]


def decode_png(data: bytes) -> np.ndarray:
    """8-bit RGB/RGBA/grey PNG (non-interlaced) -> array (height, width, channels)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _, _, interlace = hdr
    assert depth == 8 and interlace == 0, hdr
    ch = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(h, 1 + w * ch)
    out = np.zeros((h, w * ch), dtype=np.uint8)
    prev = np.zeros(w * ch, dtype=np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if f == 0:
            cur = line
        elif f == 1:
            cur = (np.cumsum(line.reshape(w, ch), axis=0) & 255).reshape(-1)
        elif f == 2:
            cur = (line + prev) & 255
        else:
            cur = np.zeros_like(line)
            lst, pv = line.tolist(), prev.tolist()
            c = [0] * len(lst)
            for i in range(len(lst)):
                a = c[i - ch] if i >= ch else 0
                b = pv[i]
                if f == 1:
                    p = a
                elif f == 3:
                    p = (a + b) >> 1
                else:
                    cc = pv[i - ch] if i >= ch else 0
                    pa, pb, pc = abs(b - cc), abs(a - cc), abs(a + b - 2 * cc)
                    p = a if pa <= pb and pa <= pc else (b if pb <= pc else cc)
                c[i] = (lst[i] + p) & 255
            cur = np.asarray(c, dtype=np.int32)
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch)


def hex_rgb(c: str) -> np.ndarray:
    return np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)])
