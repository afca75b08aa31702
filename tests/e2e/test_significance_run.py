"""Significance tests (docs/method.md, "Significance"): exactness of the sign test, the randomization test against
a plain loop
implementation, reproducibility, hand-made stores with known answers, staleness, the CLI and speed."""

from __future__ import annotations

import copy
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from store_builder import StoreBuilder, random_outcomes

from beluga_core.analysis.significance import (
    analyze_store,
)
from beluga_core.store.writer import StoreWriter

ROUNDS = 2000


# ----------------------------------------------------------------------------------- the plain reference


# ----------------------------------------------------------------------------------------- pure tests


# ------------------------------------------------------------------------------------ hand-made stores


def known_store(path: Path) -> dict[str, object]:
    """Baseline; 'identical' (iid-then-t) = the baseline's outcomes and answers in every scenario; 'perfect'
    (iid-plus-t) right wherever the baseline is wrong (passes its failed cases, answers every example)."""
    b = StoreBuilder(path)
    rng = random.Random(0)
    base = random_outcomes(b.cases, rng)
    correct = [rng.random() < 0.7 for _ in range(100)]
    b.add("iid", "vanilla", "standard", base, correct)
    for scenario in ("seen", "functionality", "class"):
        b.add("iid-then-t", "vanilla", scenario, base, correct if scenario == "seen" else None)
        better = {cid: "pass" if o == "fail" else o for cid, o in base.items()}
        b.add("iid-plus-t", "vanilla", scenario, better, [True] * 100 if scenario == "seen" else None)
    return {"base": base, "correct": correct, "builder": b}


@pytest.fixture(scope="module")
def known_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    path = tmp_path_factory.mktemp("known") / "known.duckdb"
    info = known_store(path)
    analyze_store(path, rounds=ROUNDS, seed=1)
    return path, info


@pytest.fixture()
def known(known_template: tuple[Path, dict[str, object]], tmp_path: Path) -> tuple[Path, dict[str, object]]:
    # A fresh copy per test (tests write to it); building and analysing it once saves ~2 s a test.
    template, info = known_template
    path = tmp_path / "known.duckdb"
    shutil.copyfile(template, path)
    builder = copy.copy(info["builder"])
    builder.writer = StoreWriter(path)
    builder.path = path
    return path, {**info, "builder": builder}


def test_view_readable_without_beluga(known: tuple[Path, dict]) -> None:
    path, _ = known
    code = ("import duckdb, sys; con = duckdb.connect(sys.argv[1], read_only=True); "
            "print(con.execute(\"SELECT count(*), count(*) FILTER (WHERE g_mark = 'better') FROM significance\")"
            ".fetchall()[0]); con.close()")
    out = subprocess.run([sys.executable, "-I", "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(14, 7)"
