"""The third-party method path: install plugins/beluga-example-method with pip into a throw-away virtualenv
(seeing this environment's packages), find it in ``beluga plugins list``, and run a tiny benchmark with it.

Nothing is installed into the test environment itself, so the test is idempotent and leaves no trace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "plugins" / "beluga-example-method"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

CONFIG = """
name = "plugin-example"
store = "plugin.duckdb"
configurations = ["iid-plus-t"]
methods = ["flooding"]
scenarios = ["seen"]

[model]
name = "embedded:minilm"
max_length = 32

[[tasks]]
name = "sentiment"
suite = "builtin:sst2-phenomena"
iid = "builtin:sst2"

[sizes]
iid_mix = 16
iid_test = 32
suite_train_per_group = 4
suite_test_per_group = 4

[training]
learning_rate = 5e-5
batch_size = 16
epochs = 1

[method.flooding]
level = 0.1

[executor]
threads = 2
"""


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plugin")
    src = root / "beluga-example-method"
    shutil.copytree(PLUGIN, src)  # build artefacts land in the copy, not in the repository
    venv = root / "venv"
    # No pip of its own: the venv sees this environment's pip, setuptools and beluga.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    proc = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                           str(src)], capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return python


def beluga(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "beluga_core", *args], capture_output=True, text=True, env=ENV,
                          timeout=900)


def test_plugins_list_shows_the_installed_method(venv_python: Path) -> None:
    proc = beluga(venv_python, "plugins", "list")
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if "flooding" in ln)
    assert "beluga-example-method" in line and "beluga_example_method:Flooding" in line
    # Installed into the throw-away environment only.
    assert "flooding" not in beluga(Path(sys.executable), "plugins", "list").stdout


def test_tiny_benchmark_runs_with_the_plugin_method(venv_python: Path, tmp_path: Path) -> None:
    config = tmp_path / "plugin.toml"
    config.write_text(CONFIG)
    proc = beluga(venv_python, "run", str(config))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    con = duckdb.connect(str(tmp_path / "plugin.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT method, scenario, g FROM g_scores").fetchall()
        hparams = con.execute("SELECT hparams->>'$.method.level' FROM models").fetchall()
    finally:
        con.close()
    assert len(rows) == 1 and rows[0][:2] == ("flooding", "seen") and rows[0][2] is not None
    assert hparams == [("0.1",)]


def test_the_plugin_touches_nothing_in_beluga() -> None:
    for path in [*(ROOT / "beluga_core").rglob("*.py"), ROOT / "pyproject.toml"]:
        text = path.read_text(encoding="utf-8")
        assert "beluga_example_method" not in text and "flooding" not in text.lower(), path
