"""``beluga report``'s HTML report opened in headless Chromium (the screenshot); the report's other tests need no
browser and no subprocess: tests/unit/analysis/test_report.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO
from PIL import Image
from store_builder import report_store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "toy.duckdb"
    report_store(path)
    return path


# ----------------------------------------------------------------------------------------- screenshot


def test_screenshot_in_headless_chromium(store: Path, tmp_path: Path) -> None:
    from benchmarks.report.screenshot_report import find_chromium

    if find_chromium() is None:
        pytest.skip("chromium is not installed: run `python -m benchmarks.report.screenshot_report` (installs "
                    "Debian's chromium with apt-get) to produce the screenshot")
    out = tmp_path / "shot"
    done = subprocess.run([sys.executable, "-m", "benchmarks.report.screenshot_report", str(store), "--out", str(out),
                           "--no-install"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with Image.open(out / "report.png") as im:
        assert im.size[0] == 1400 and im.size[1] > 1000
        assert len(np.unique(np.asarray(im.convert("RGB")).reshape(-1, 3), axis=0)) > 50
