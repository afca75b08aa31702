"""``beluga report``: the terminal table, the Markdown and HTML reports, the heatmaps, the degeneracy check,
reports of a run in progress and of suites with other levels, and the headless-Chromium screenshot."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO
from PIL import Image
from store_builder import StoreBuilder, make_cases, perturb, random_outcomes

from beluga_core.analysis.significance import analyze_store
from beluga_core.store.rows import CaseRow

ROUNDS = 500


def mft_gold(cases: list[CaseRow]) -> dict[str, str]:
    """Gold labels of the toy suite's MFT cases: a class id, or "not 0" (a not_eq expectation) for every fifth."""
    mft = [c for c in cases if c.test_type == "MFT"]
    return {c.case_id: "not 0" if i % 5 == 0 else str(i % 3) for i, c in enumerate(mft)}


def build_store(path: Path, *, analyse: bool = True) -> dict[str, object]:
    """Baseline; iid-then-t a noisy copy; iid-plus-t right wherever the baseline is wrong, and degenerate:
    it predicts label 1 for every D_test example and every MFT case. Gold labels are in the store's cases
    (no suite file anywhere), label names in its suite and task head."""
    b = StoreBuilder(path, make_cases(gold=mft_gold(make_cases())))
    b.writer.set_task_head("sentiment", b.suite, ["negative", "positive"])
    rng = random.Random(1)
    mft = [c for c in b.cases if c.test_type == "MFT"]
    run = b.writer.begin_run(path.with_name("bench.toml"), '[[tasks]]\nname = "sentiment"\nsuite = "gone.jsonl"\n')
    base = random_outcomes(b.cases, rng)
    correct = [rng.random() < 0.75 for _ in range(120)]
    golds = [str(i % 2) for i in range(120)]
    balanced = {c.case_id: str(i % 3) for i, c in enumerate(mft)}
    b.add("iid", "vanilla", "standard", base, correct, golds=golds, case_preds=balanced)
    noisy = perturb(base, rng, 0.3)
    better = {cid: "pass" if o == "fail" else o for cid, o in base.items()}
    ones = {c.case_id: "1" for c in mft}
    for scenario in ("seen", "functionality", "class"):
        b.add("iid-then-t", "vanilla", scenario, noisy, correct if scenario == "seen" else None, golds=golds,
              case_preds=balanced)
        b.add("iid-plus-t", "vanilla", scenario, better, [True] * 120 if scenario == "seen" else None,
              golds=golds, preds=["1"] * 120 if scenario == "seen" else None, case_preds=ones)
    b.writer.finish_run(run)
    if analyse:
        analyze_store(path, rounds=ROUNDS, seed=0)
    return {"builder": b, "base": base, "run": run}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "toy.duckdb"
    build_store(path)
    return path


# ------------------------------------------------------------------------------------------- Table 3


# ------------------------------------------------------------------------------------ the terminal table


# ------------------------------------------------------------------------------------------- heatmaps


# ------------------------------------------------------------------------------------------- degeneracy


# ------------------------------------------------------------------------------ runs in progress, levels


# ------------------------------------------------------------------------------------------------ CLI


# ----------------------------------------------------------------------------------------- screenshot


def test_screenshot_in_headless_chromium(store: Path, tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from screenshot_report import find_chromium
    finally:
        sys.path.pop(0)
    if find_chromium() is None:
        pytest.skip("chromium is not installed: run `python benchmarks/screenshot_report.py` (installs Debian's "
                    "chromium with apt-get) to produce the screenshot")
    out = tmp_path / "shot"
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "screenshot_report.py"), str(store),
                           "--out", str(out), "--no-install"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with Image.open(out / "report.png") as im:
        assert im.size[0] == 1400 and im.size[1] > 1000
        assert len(np.unique(np.asarray(im.convert("RGB")).reshape(-1, 3), axis=0)) > 50
