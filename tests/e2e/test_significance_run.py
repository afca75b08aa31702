"""Significance tests (docs/method.md, "Significance"): exactness of the sign test, the randomization test against
a plain loop
implementation, reproducibility, hand-made stores with known answers, staleness, the CLI and speed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from store_builder import copy_of, known_store

ROUNDS = 2000


# ----------------------------------------------------------------------------------- the plain reference


# ----------------------------------------------------------------------------------------- pure tests


# ------------------------------------------------------------------------------------ hand-made stores


@pytest.fixture(scope="module")
def known_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    return known_store(tmp_path_factory.mktemp("known") / "known.duckdb", ROUNDS)


@pytest.fixture()
def known(known_template: tuple[Path, dict[str, object]], tmp_path: Path) -> tuple[Path, dict[str, object]]:
    return copy_of(known_template, tmp_path)


def test_view_readable_without_beluga(known: tuple[Path, dict]) -> None:
    path, _ = known
    code = ("import duckdb, sys; con = duckdb.connect(sys.argv[1], read_only=True); "
            "print(con.execute(\"SELECT count(*), count(*) FILTER (WHERE g_mark = 'better') FROM significance\")"
            ".fetchall()[0]); con.close()")
    out = subprocess.run([sys.executable, "-I", "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(14, 7)"
