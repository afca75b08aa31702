"""The third-party method path: install plugins/beluga-example-method with pip into a throw-away folder that
is put on this environment's path, find it in ``beluga plugins list``, and run a tiny benchmark with it.

Nothing is installed into the test environment itself, so the test is idempotent and leaves no trace. A
nested ``venv --system-site-packages`` would not do: created from inside a virtualenv it sees the base
interpreter's packages, not this environment's beluga.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import duckdb
import pytest
from helpers import REPO, run_cli
from toy_model import TOY_DIR

# The tests' toy model (tests/toy_model.py): these runs check behaviour, not accuracy.
TOY = TOY_DIR.as_posix()
ROOT = REPO
PLUGIN = ROOT / "plugins" / "beluga-example-method"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

CONFIG = f"""
name = "plugin-example"
store = "plugin.duckdb"
configurations = ["iid-plus-t"]
methods = ["flooding"]
scenarios = ["seen"]

[model]
name = "{TOY}"
max_length = 32
config_overrides = {{ num_hidden_layers = 2 }}

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

"""


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment variables of a process that sees the installed plugin."""
    root = tmp_path_factory.mktemp("plugin")
    src = root / "beluga-example-method"
    shutil.copytree(PLUGIN, src)  # build artefacts land in the copy, not in the repository
    target = root / "site"
    # Built with this environment's setuptools, offline; --target keeps it out of this environment.
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                           "--target", str(target), str(src)], capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (target / "beluga_example_method").is_dir()
    pythonpath = os.pathsep.join(p for p in (str(target), os.environ.get("PYTHONPATH")) if p)
    return {**ENV, "PYTHONPATH": pythonpath}


def beluga(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "beluga_core", *args], capture_output=True, text=True, env=env,
                          timeout=900)


def test_plugins_list_shows_the_installed_method(plugin_env: dict[str, str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    proc = beluga(plugin_env, "plugins", "list")
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if "flooding" in ln)
    assert "beluga-example-method" in line and "beluga_example_method:Flooding" in line
    # Installed into the throw-away folder only: this process does not see it.
    code, out, _ = run_cli(capsys, "plugins", "list")
    assert code == 0 and "flooding" not in out


def test_the_plugin_options_are_shown_and_checked(plugin_env: dict[str, str], tmp_path: Path) -> None:
    proc = beluga(plugin_env, "plugins", "show", "flooding")
    assert proc.returncode == 0, proc.stderr
    rows = [ln.replace("│", " ").split() for ln in proc.stdout.splitlines()]
    level = " ".join(next(r for r in rows if r[:1] == ["level"]))
    assert level.startswith("level number 0.05 ≥ 0 The flood level b")
    config = tmp_path / "bad.toml"
    config.write_text(CONFIG.replace("level = 0.1", "level = -1"))
    proc = beluga(plugin_env, "run", str(config), "--dry-run")
    line = CONFIG.splitlines().index("level = 0.1") + 1
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"line {line}, field 'method.flooding.level'" in proc.stderr and "greater than or equal to 0" in proc.stderr


def test_tiny_benchmark_runs_with_the_plugin_method(plugin_env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "plugin.toml"
    config.write_text(CONFIG)
    proc = beluga(plugin_env, "run", str(config))
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
    # beluga's code and its package metadata ([project]: dependencies, entry points) know nothing of the
    # plugin; only the development tooling (mypy's file list) names it, to type-check it in CI.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    texts = {path: path.read_text(encoding="utf-8") for path in (ROOT / "beluga_core").rglob("*.py")}
    texts[ROOT / "pyproject.toml"] = json.dumps(project)
    for path, text in texts.items():
        assert "beluga_example_method" not in text and "flooding" not in text.lower(), path
