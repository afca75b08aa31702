"""The declared minimums are the tested ones: every minimum in pyproject.toml is pinned in .ci/floors.txt (torch's
excepted: its floor is tested on a GPU machine), and the floors job of .ci/run really runs at those versions."""

from __future__ import annotations

import os
import re
import tomllib
from importlib.metadata import version

import pytest
from helpers import REPO

FLOORS = REPO / ".ci" / "floors.txt"
# Tested only on the GPU machine: PyPI has only CUDA builds of torch 2.11 (docs/project/development.md,
# "Tested versions").
UNPINNED = {"torch": "2.11"}


def _floors() -> dict[str, str]:
    pins = {}
    for line in FLOORS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, pinned = line.partition("==")
            assert pinned, f"{FLOORS}: '{line}' is not a name==version pin"
            pins[name.strip().lower()] = pinned.strip()
    return pins


def _minimums() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    out = {}
    for dep in project["dependencies"]:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9.]*)", dep)
        if m:
            out[m.group(1).lower()] = m.group(2)
        else:
            assert not re.search(r"[<>=~!]", dep), f"pyproject dependency '{dep}': only NAME>=FLOOR or a bare NAME"
    return out


def _same(a: str, b: str) -> bool:
    def parts(v: str) -> list[int]:
        p = [int(x) for x in v.split(".")]
        return p + [0] * (3 - len(p))
    return parts(a) == parts(b)


def test_every_declared_minimum_is_a_tested_floor() -> None:
    floors, minimums = _floors(), _minimums()
    untested = {name: v for name, v in minimums.items() if name not in floors and name not in UNPINNED}
    assert not untested, f"minimums in pyproject.toml that .ci/floors.txt does not pin: {untested}"
    differ = {name: (minimums.get(name), v) for name, v in floors.items() if not _same(minimums.get(name, "0"), v)}
    assert not differ, f"pyproject minimum vs .ci/floors.txt pin: {differ}"
    assert {n: minimums.get(n) for n in UNPINNED} == UNPINNED


@pytest.mark.skipif(os.environ.get("BELUGA_FLOORS") != "1", reason="the floors job of .ci/run sets BELUGA_FLOORS=1")
def test_the_floors_job_runs_at_the_floors() -> None:
    installed = {name: version(name) for name in _floors()}
    assert installed == _floors()
