"""benchmarks/harness.py, the skeleton the benchmark scripts share: the forced precision in each layout a config
can have, each script's flags as its docstring and benchmarks/RESULTS.md use them, and the order of the steps
(machine line, forced run, figures; or only the figures of --analyze's stores)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import harness


def test_a_failed_run_exits_with_what_beluga_printed(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('name = "bad"\nseeds = "many"\n', encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        harness.run_config(config, "fp32", tmp_path / "s.duckdb")
    assert str(exc.value).startswith("beluga run failed (exit 2):") and "seeds" in str(exc.value), exc.value
    assert not (tmp_path / ".bench-bad-fp32.toml").exists() and not (tmp_path / "s.duckdb").exists()
