#!/usr/bin/env python3
"""Writes docs/report.png: the sample `kplan place --html` page in headless Chromium.

    python scripts/screenshot.py                  # (re)write docs/report.png
    python scripts/screenshot.py --out FILE       # somewhere else
    python scripts/screenshot.py --height 1200    # a shorter picture

Runs kplan from this checkout (the Python running the script needs kplan's dependencies:
`pip install -e .`) and Chromium the way tests/browser does (tests/browser/headless.py: the
same flags, a fresh profile, no network). The page is shot 1280 CSS pixels wide and cut in a
blank band above HEIGHT, so no line of text is cut in half; the PNG is re-encoded with the
best filter per row, to keep it small. The run fails when the page logs to the console.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "browser"), str(ROOT / "tests")]  # headless imports html_page

import headless  # noqa: E402  (tests/browser/headless.py)

PLACE = ["place", "samples/pod-burstable.yaml", "samples/pod-too-big.yaml", "-f", "samples/cluster.yaml"]
WIDTH = 1280
BLANK_BAND = 12  # rows of white the cut must sit in


def make_page(out: Path) -> None:
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1", TZ="UTC")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "kplan", *PLACE, "--html", str(out)], cwd=ROOT, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode not in (0, 1) or not out.is_file():  # 1: a sample pod does not fit, by design
        sys.exit(f"kplan {' '.join(PLACE)} failed (exit {proc.returncode}):\n{proc.stderr}")


def cut(image: np.ndarray, height: int) -> np.ndarray:
    """IMAGE down to at most HEIGHT rows, ending in the lowest blank band above it."""
    white = (image[:, :, :3] == 255).all(axis=(1, 2))
    for y in range(min(height, len(white)), BLANK_BAND, -1):
        if white[y - BLANK_BAND:y].all():
            return image[:y - BLANK_BAND // 2]
    return image[:height]


def best_filters(image: np.ndarray) -> np.ndarray:
    """Per row the PNG filter type with the smallest sum of absolute residuals (libpng's rule)."""
    x = image.astype(np.int16)
    costs = []
    for predictor in headless.predictions(image):
        residual = ((x - predictor) & 0xFF).astype(np.int16)
        costs.append(np.minimum(residual, 256 - residual).sum(axis=(1, 2)))
    return np.argmin(np.stack(costs), axis=0).astype(np.uint8)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "report.png")
    parser.add_argument("--height", type=int, default=1560, help="the most rows to keep (default 1560)")
    args = parser.parse_args(argv)
    if headless.find_chromium() is None:
        sys.exit(f"headless Chromium not found: {headless.INSTALL_HINT}")
    with tempfile.TemporaryDirectory(prefix="kplan-screenshot-") as tmp:
        page, shot = Path(tmp) / "report.html", Path(tmp) / "shot.png"
        make_page(page)
        run = headless.screenshot(page, shot, width=WIDTH, height=args.height + 200)
        if run.console:
            sys.exit("the page logged to the console:\n" + "\n".join(map(str, run.console)))
        if run.returncode != 0 or not shot.is_file():
            sys.exit(f"chromium failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
        image = headless.decode_png(shot.read_bytes())[:, :, :3]
    image = cut(image, args.height)
    data = headless.encode_png(image, best_filters(image))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    try:
        shown = args.out.resolve().relative_to(ROOT)
    except ValueError:
        shown = args.out
    print(f"{shown}: {image.shape[1]}x{image.shape[0]}, {len(data) // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
