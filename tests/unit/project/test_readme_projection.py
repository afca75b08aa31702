"""The README's projection of full.toml is the recorded output of ``python -m benchmarks.perf.projection``
(benchmarks/perf/records/projection-full.txt): every compute, wall and critical-path cell of its table, for the full
grid search and for successive halving, and the grid phase's examples, read off the record."""

from __future__ import annotations

import re

from helpers import REPO

RECORD = REPO / "benchmarks" / "perf" / "records" / "projection-full.txt"
MACHINES = {"this 2-core CPU": "this machine, calibrated", "one H200": "one H200, projected",
            "8 H200s (Ray)": "8 H200s (Ray, one worker each), projected"}
SEARCHES = {"full": "full grid search", "halving": "successive halving"}


def _recorded() -> dict[tuple[str, str], tuple[str, str, str]]:
    """(search, machine title) → the "in all" row's (compute, critical path, wall)."""
    out: dict[tuple[str, str], tuple[str, str, str]] = {}
    title = ""
    for line in RECORD.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"^(full grid search|successive halving): (.*) \(\d+ worker\(s\)\)$", line):
            title = f"{m.group(1)}|{m.group(2)}"
        elif line.strip().startswith("in all") and title:
            compute, path, wall = re.findall(r"≈ [\d,.]+ \w+", line)
            search, machine = title.split("|")
            out[(search, machine)] = (compute, path, wall)
    return out


def test_the_readme_table_is_the_recorded_projection() -> None:
    recorded = _recorded()
    assert len(recorded) == 6
    readme = REPO.joinpath("README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\|\s*([^|]*?)\s*\|[^|]*\|\s*(full|halving)\s*\|\s*(≈ [^|]+?)\s*\|\s*(≈ [^|]+?)\s*\|"
                      r"\s*(≈ [^|]+?)\s*\|$", readme, flags=re.M)
    assert len(rows) == 6
    machine = ""
    for where, search, compute, wall, path in rows:
        where = where.strip() or machine
        machine = where
        key = next(v for k, v in MACHINES.items() if where.startswith(k))
        assert recorded[(SEARCHES[search], key)] == (compute.strip(), path.strip(), wall.strip()), (where, search)
    full, halving = (int(n.replace(",", "")) for n in re.search(
        r"grid points' examples × epochs: full ([\d,]+), halving ([\d,]+)", RECORD.read_text(encoding="utf-8")
    ).groups())  # type: ignore[union-attr]
    assert f"{halving / 1e6:.1f} million examples × epochs instead of {full / 1e6:.0f} million" in " ".join(
        readme.split()) and f"({full / halving:.2f}×" in readme
    assert full / halving >= 3   # the bar for the grid phase
