""".ci/run runs the README's test command, and a failure anywhere in it fails CI.

``set -e`` does not stop a script at a failing command inside an ``a && b && c`` list (only at the list's last one):
without an explicit exit, a ruff or mypy error fell through to the floors job, whose success ended the script green.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from helpers import REPO

CI = REPO / ".ci" / "run"


def readme_test_command() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)\n```", text, re.S)
    return next(b for b in blocks if "pytest" in b).strip()


def test_ci_runs_the_readmes_test_command_and_stops_when_it_fails() -> None:
    command = readme_test_command()
    line = next(line for line in CI.read_text(encoding="utf-8").splitlines() if line.startswith(command))
    assert line == f"{command} || exit 1"


def test_a_failure_early_in_an_and_list_stops_a_set_e_script_only_with_the_exit(tmp_path: Path) -> None:
    # What the line above guards against, shown on bash itself.
    script = tmp_path / "s.sh"
    script.write_text("set -euo pipefail\nfalse && true\necho reached\n")
    assert subprocess.run(["bash", str(script)], capture_output=True, text=True).stdout == "reached\n"
    script.write_text("set -euo pipefail\nfalse && true || exit 1\necho reached\n")
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (1, "")
