"""Render the HTML report in headless Chromium and save a screenshot (issue 5).

    python -m benchmarks.report.screenshot_report [STORE] [--out DIR] [--no-install]

Without STORE it builds a synthetic quick-shaped store (tools/fixtures/synthetic_store.py) and analyses it.
Installs Debian's `chromium` when it is missing (apt-get update && apt-get install -y chromium; needs root
and the network); where that cannot be done it prints "SKIPPED: <reason>" and exits 0, so callers can skip.
Writes DIR/report.html, DIR/figures/*, and the screenshot DIR/report.png (1400 px wide, full page).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import header, script_parser

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WIDTH = 1400


class Skip(Exception):
    """Chromium is not available and cannot be installed here."""


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def ensure_chromium(*, install: bool = True) -> str:
    """The path of a Chromium binary, installing Debian's package when allowed and possible."""
    found = find_chromium()
    if found:
        return found
    if not install:
        raise Skip("chromium is not installed (run benchmarks/report/screenshot_report.py to install it)")
    if shutil.which("apt-get") is None:
        raise Skip("chromium is not installed and this is not a Debian-like system (no apt-get)")
    if os.geteuid() != 0:
        raise Skip("chromium is not installed and installing it needs root (apt-get install -y chromium)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise Skip(f"`{' '.join(cmd)}` failed (no network?): {' / '.join(tail)}")
    found = find_chromium()
    if not found:
        raise Skip("apt-get installed chromium, but no chromium binary is on PATH")
    return found


def page_height(html: Path) -> int:
    # Chromium's --screenshot captures the window; size it to the page: a rough estimate from the content,
    # generous rather than cut off (figures dominate: each ~ its PNG height scaled to the page width).
    from PIL import Image

    height = 900
    for png in sorted((html.parent / "figures").glob("*.png")):
        with Image.open(png) as im:
            w, h = im.size
        height += int(h * min(1.0, (WIDTH - 80) / w)) + 60
    text = html.read_text(encoding="utf-8")
    height += 30 * (text.count("<tr") + text.count("<p") + text.count("<h2"))
    return min(height, 16_000)


def screenshot(chromium: str, html: Path, png: Path) -> Path:
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--disable-dev-shm-usage", f"--window-size={WIDTH},{page_height(html)}", f"--screenshot={png}",
           html.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if done.returncode != 0 or not png.exists():
        raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return png


def main() -> int:
    parser = script_parser(__doc__, full=True)
    parser.add_argument("store", nargs="?", type=Path, help="a result store (default: a synthetic one)")
    parser.add_argument("--out", type=Path, default=Path("out/report-screenshot"), help="output folder")
    parser.add_argument("--no-install", action="store_true", help="never install chromium; skip instead")
    args = parser.parse_args()
    print(header(None))
    try:
        chromium = ensure_chromium(install=not args.no_install)
    except Skip as exc:
        print(f"SKIPPED: {exc}")
        return 0
    from beluga_core.analysis.report.report_files import write_report

    with tempfile.TemporaryDirectory(prefix="beluga-screenshot-") as tmp:
        store = args.store
        if store is None:
            from beluga_core.analysis.significance import analyze_store
            from tools.fixtures.synthetic_store import build_synthetic_store

            store = Path(tmp) / "synthetic-quick.duckdb"
            build_synthetic_store(store)
            analyze_store(store)
        html, _ = write_report(store, args.out, "html")
    png = screenshot(chromium, html, args.out / "report.png")
    print(f"report: {html}\nscreenshot: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
