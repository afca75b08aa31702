"""benchmarks/harness.py, the skeleton the benchmark scripts share: the forced precision in each layout a config
can have, each script's flags as its docstring and the RESULTS.md files use them, and the order of the steps
(header, forced run, figures; or only the figures of --analyze's stores), and the header naming the code measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import harness


def test_a_failed_run_exits_with_what_beluga_printed(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('name = "bad"\nseeds = "many"\n', encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        harness.run_config(config, "fp32", tmp_path / "s.duckdb")
    assert str(exc.value).startswith("beluga run failed (exit 2):") and "seeds" in str(exc.value), exc.value
    assert not (tmp_path / ".bench-bad-fp32.toml").exists() and not (tmp_path / "s.duckdb").exists()


def test_the_header_says_which_code_measured() -> None:
    import subprocess

    import beluga_core

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=harness.REPO, capture_output=True,
                            text=True, check=False).stdout.strip()
    line = harness.header("fp32")
    assert line.startswith(harness.machine("fp32") + " · ")
    assert f"beluga {beluga_core.__version__} · commit {commit or 'unknown'}" in line, line
