"""Headless Chromium from its command line, for kplan's HTML pages.

- `dump_dom(page)`: the DOM after the page's scripts ran (`--dump-dom`), parsed with
  tests/html_page.py into its `Element`s.
- `screenshot(page, png)`: a PNG of the viewport (`--screenshot`); `decode_png` reads it into a
  numpy array (zlib and numpy only: PNG filter types 0-4, 8-bit RGB or RGBA, not interlaced).
- Both also return the page's console messages. Chromium prints them on stderr with
  `--enable-logging=stderr --v=0` as records `[pid:tid:time:INFO:CONSOLE:LINE] "TEXT", source:
  URL (LINE)`, uncaught exceptions and unhandled rejections included ("Uncaught ..."). For web
  content Chromium logs every console message at INFO, whatever its level, so console.log and
  console.error cannot be told apart here: every message of the page counts. Chromium's own
  records (dbus, GPU, sandbox warnings, ...) are other records and are ignored, as are lines
  that are not log records at all (the Debian wrapper script's).

Used by tests/browser and by scripts/screenshot.py (both with tests/ on sys.path, for html_page).
"""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from html_page import Element, parse

BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# --disable-background-networking and friends: without them Chromium tries to reach Google
# (component updates, sync, field trials), which fails or hangs where the network is closed.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    "--enable-logging=stderr",
    "--v=0",
)

INSTALL_HINT = ("install Debian's chromium package (apt-get install chromium), "
                "or put chromium, chromium-browser or google-chrome on PATH")


def find_chromium() -> str | None:
    """The first headless-capable Chromium on PATH, or None."""
    for name in BINARIES:
        path = shutil.which(name)
        if path:
            return path
    return None


# A log record starts a line: "[" prefix fields ":" LEVEL ":" where "]" message. The prefix is
# pid:tid:MMDD/HHMMSS.micro by default; older releases differ, so it is matched loosely.
_RECORD = re.compile(r"^\[[^\]\s]*?:(?:VERBOSE\d*|INFO|WARNING|ERROR|FATAL):([^\]]*)\] ?(.*)$")
_CONSOLE_WHERE = re.compile(r"^CONSOLE(?::\d+|\(\d+\))?$")
_CONSOLE_TEXT = re.compile(r'^"(.*)", source: (.*?) \((\d+)\)\s*$', re.DOTALL)
_SOURCE_END = re.compile(r'", source: .*? \(\d+\)\s*$')
_BROWSER_SOURCES = ("chrome://", "chrome-extension://", "devtools://", "chrome-error://")


@dataclass(frozen=True)
class ConsoleMessage:
    text: str
    source: str
    line: int

    def __str__(self) -> str:
        return f"{self.source or '<no source>'}:{self.line}: {self.text}"


def console_messages(stderr: str) -> list[ConsoleMessage]:
    """The page console messages among Chromium's stderr (see the module docstring)."""
    records: list[tuple[str, list[str]]] = []
    open_message = False  # a console message whose closing `", source: URL (LINE)` is still to come
    for line in stderr.splitlines():
        match = _RECORD.match(line)
        if match:
            records.append((match.group(1), [match.group(2)]))
            open_message = bool(_CONSOLE_WHERE.match(match.group(1))) and not _SOURCE_END.search(line)
        elif records and open_message:
            records[-1][1].append(line)  # a message that spans lines
            open_message = not _SOURCE_END.search(line)
    messages = []
    for where, lines in records:
        if not _CONSOLE_WHERE.match(where):
            continue
        body = "\n".join(lines)
        match = _CONSOLE_TEXT.match(body)
        if match:
            text, source, line = match.group(1), match.group(2), int(match.group(3))
        else:  # an unexpected shape still counts: better a noisy failure than a missed error
            text, source, line = body, "", 0
        if source.startswith(_BROWSER_SOURCES):
            continue
        messages.append(ConsoleMessage(text, source, line))
    return messages


@dataclass
class Run:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    console: list[ConsoleMessage] = field(default_factory=list)


def run(target: str | Path, *args: str, binary: str | None = None, timeout: float = 60) -> Run:
    """Chromium on one page (a file path or a URL) with FLAGS, ARGS and a fresh profile."""
    binary = binary or find_chromium()
    if binary is None:
        raise FileNotFoundError(f"headless Chromium not found: {INSTALL_HINT}")
    url = target if isinstance(target, str) and "://" in target else Path(target).resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="kplan-chromium-") as profile:
        argv = [binary, *FLAGS, f"--user-data-dir={profile}", *args, url]
        env = dict(os.environ, LANG="C.UTF-8", TZ="UTC")
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=timeout, env=env, cwd=profile)
    return Run(argv, proc.returncode, proc.stdout, proc.stderr, console_messages(proc.stderr))


def dump_dom(page: str | Path, **kwargs) -> tuple[Element, Run]:
    """The page's DOM after its scripts ran, and the run (console messages in run.console)."""
    result = run(page, "--dump-dom", **kwargs)
    return parse(result.stdout), result


def run_dom(page: str | Path, width: int = 1280, height: int = 900, **kwargs) -> tuple[Element, Run]:
    """The page's DOM after its scripts ran in a window WIDTH x HEIGHT CSS pixels wide (its layout
    depends on it), and the run."""
    result = run(page, "--dump-dom", f"--window-size={width},{height}", **kwargs)
    return parse(result.stdout), result


def screenshot(page: str | Path, png: str | Path, width: int = 1280, height: int = 1800,
               **kwargs) -> Run:
    """A PNG of the page's first WIDTH x HEIGHT CSS pixels, written to PNG."""
    png = Path(png).resolve()
    if png.exists():
        png.unlink()
    return run(page, f"--screenshot={png}", f"--window-size={width},{height}", **kwargs)


# -- PNG --------------------------------------------------------------------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def decode_png(data: bytes) -> np.ndarray:
    """An 8-bit RGB or RGBA, non-interlaced PNG as a (height, width, channels) uint8 array."""
    if not data.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG")
    pos, idat, header = len(PNG_SIGNATURE), [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, colour, _, _, interlace = header
    channels = {2: 3, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"unsupported PNG: bit depth {depth}, colour type {colour}, interlace {interlace}")
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
    stride = width * channels
    if raw.size != height * (stride + 1):
        raise ValueError("PNG data does not match its header")
    rows = raw.reshape(height, stride + 1)
    return unfilter(rows[:, 0], rows[:, 1:].reshape(height, width, channels))


def unfilter(types: np.ndarray, filtered: np.ndarray) -> np.ndarray:
    """Undo PNG's per-row filters (0 None, 1 Sub, 2 Up, 3 Average, 4 Paeth).

    Each pixel depends on its left (a), upper (b) and upper-left (c) neighbours, so the pixels of
    one anti-diagonal (row + column constant) depend only on earlier anti-diagonals: the image is
    decoded one anti-diagonal at a time, each with numpy across its pixels and channels.
    """
    types = np.asarray(types)
    if types.size and int(types.max()) > 4:
        raise ValueError(f"unknown PNG filter type {int(types.max())}")
    height, width, channels = filtered.shape
    if np.all(types == 0):
        return filtered.copy()
    out = np.zeros((height + 1, width + 1, channels), dtype=np.int16)  # a zero row and column
    f = filtered.astype(np.int16)
    rows_all = np.arange(height)
    for d in range(height + width - 1):
        r = rows_all[max(0, d - width + 1):min(height - 1, d) + 1]
        col = d - r
        a = out[r + 1, col]
        b = out[r, col + 1]
        c = out[r, col]
        t = types[r][:, None]
        p = a + b - c
        pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
        paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
        predictor = np.select([t == 1, t == 2, t == 3, t == 4], [a, b, (a + b) >> 1, paeth], 0)
        out[r + 1, col + 1] = (f[r, col] + predictor) & 0xFF
    return out[1:, 1:].astype(np.uint8)


def predictions(pixels: np.ndarray) -> list[np.ndarray]:
    """What PNG filter types 0-4 (None, Sub, Up, Average, Paeth) predict for every byte of PIXELS
    (height, width, channels), as int16 arrays of the same shape: the filtered byte of filter
    type k is (pixel - predictions(pixels)[k]) & 0xFF."""
    x = pixels.astype(np.int16)
    a = np.zeros_like(x); a[:, 1:] = x[:, :-1]
    b = np.zeros_like(x); b[1:] = x[:-1]
    c = np.zeros_like(x); c[1:, 1:] = x[:-1, :-1]
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
    return [np.zeros_like(x), a, b, (a + b) >> 1, paeth]


def encode_png(pixels: np.ndarray, types: np.ndarray | None = None, level: int = 9) -> bytes:
    """An 8-bit RGB/RGBA PNG of PIXELS, each row filtered with TYPES (default: 0 for every row)."""
    height, width, channels = pixels.shape
    colour = {3: 2, 4: 6}[channels]
    types = np.zeros(height, dtype=np.uint8) if types is None else np.asarray(types, dtype=np.uint8)
    x = pixels.astype(np.int16)
    t = types[:, None, None]
    predictor = np.select([t == k for k in range(1, 5)], predictions(pixels)[1:], 0)
    filtered = ((x - predictor) & 0xFF).astype(np.uint8).reshape(height, width * channels)
    raw = np.concatenate([types[:, None], filtered], axis=1).tobytes()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return (PNG_SIGNATURE + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, level))
            + chunk(b"IEND", b""))
