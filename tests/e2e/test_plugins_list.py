"""``beluga plugins list`` loads and checks every plugin, and shows a broken one with its error (issue 58): a package
whose entry point names a module that does not import, seen by a new process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _cells(text: str) -> list[str]:
    """The words of a table's text, without its column rules."""
    return text.replace("│", " ").replace("┃", " ").split()


def test_plugins_list_loads_each_plugin_and_shows_a_broken_one_with_its_error(tmp_path: Path) -> None:
    # A package that registers a method whose module does not import: installed as far as entry points go (a
    # dist-info folder on the path), broken on load.
    site = tmp_path / "site"
    info = site / "broken_method-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-method\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[beluga.methods]\nbroken = broken_method:Broken\n", encoding="utf-8")
    (site / "broken_method.py").write_text("import no_such_dependency\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "300"}
    proc = subprocess.run([sys.executable, "-m", "beluga_core", "plugins", "list"], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    out = " ".join(_cells(proc.stdout))
    assert "broken broken-method 0.1 broken_method:Broken broken: method plugin 'broken'" in out
    assert "No module named 'no_such_dependency'" in out
    assert "1 plugin(s) do not load" in out
    lora = next(_cells(line) for line in proc.stdout.splitlines() if _cells(line)[:1] == ["lora"])
    assert lora[-1] == "ok"
