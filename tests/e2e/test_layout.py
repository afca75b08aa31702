"""The package's layering contract (pyproject's [tool.importlinter]) holds, and it does catch an upward import."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
MAX_LINES = 400        # past this, a module says why at its top (a docstring line starting "Long:")
HARD_MAX_LINES = 500   # past this, none: it is split by what it does
CHECKED_FOLDERS = ("beluga_core", "tools", "benchmarks", "plugins")


def _lint(cwd: Path, python_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(LINT_IMPORTS.parent)}
    if python_path is not None:
        env["PYTHONPATH"] = str(python_path)
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


# The GPU check kit carries no static-check tools (benchmarks/gpu/prepare.py): CI runs these.
needs_lint_imports = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed here (the "
                                        "GPU check kit leaves static checks to CI)")


@needs_lint_imports
def test_the_layers_hold() -> None:
    done = _lint(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@needs_lint_imports
def test_each_contract_catches_a_wrong_import(tmp_path: Path) -> None:
    # A copy of the package, its tools and its benchmarks with eight wrong imports, one lint run: a bottom-layer
    # module importing the CLI; a reader of views importing a stored model's loader (stored_models sits above
    # analysis); a reader training a model; the methods' API module re-exporting the Plan, an executor internal;
    # runtime modules importing a repository tool and a benchmark (which an installed beluga does not have); a tool
    # importing a benchmark; and the two fault drills importing each other (a circle, once there for real).
    shutil.copytree(REPO / "beluga_core", tmp_path / "beluga_core",
                    ignore=shutil.ignore_patterns("__pycache__", "builtin", "sql"))
    for folder in ("tools", "benchmarks"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__", "records"))
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    assert config["root_packages"] == ["beluga_core", "tools", "benchmarks"]
    wrong = {"beluga_core/core/hashing.py": "import beluga_core.cli.app",
             "beluga_core/analysis/report/report_data.py": "import beluga_core.stored_models.export",
             "beluga_core/analysis/significance/comparisons.py": "import beluga_core.training.loop",
             "beluga_core/api/methods.py": "from beluga_core.planning.plan import Plan",
             "beluga_core/core/io.py": "import tools.docs_reference",
             "beluga_core/store/reader.py": "import benchmarks.harness",
             "tools/fixtures/golden_rows.py": "import benchmarks.harness",
             "benchmarks/drills/drill_runs.py": "import benchmarks.drills.run_drills"}
    for module, line in wrong.items():
        path = tmp_path / module
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    done = _lint(tmp_path, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "layers follow the data flow; imports only point down BROKEN" in out
    assert "beluga_core.core.hashing -> beluga_core.cli.app" in out
    assert "beluga_core.analysis.report.report_data -> beluga_core.stored_models.export" in out
    assert "analysis reads the store; it loads, trains and attributes no model BROKEN" in out
    assert "beluga_core.analysis.significance.comparisons -> beluga_core.training.loop" in out
    assert "executor internals are public from the executor kind's module only BROKEN" in out
    assert "beluga_core.api.methods -> beluga_core.planning.plan" in out
    assert "the package imports no repository tool BROKEN" in out
    assert "beluga_core.core.io -> tools.docs_reference" in out
    assert "beluga_core.store.reader -> benchmarks.harness" in out
    assert "the tools import no benchmark BROKEN" in out
    assert "tools.fixtures.golden_rows -> benchmarks.harness" in out
    assert "the repository's tools and benchmarks import in no circle BROKEN" in out
    assert "No cycles are allowed in benchmarks.drills." in out and ".drill_runs -> .run_drills" in out


def test_long_modules_say_why() -> None:
    """A module over 400 lines carries the reason at its top (a docstring line starting 'Long:'), and no module is
    over 500 lines: the package, the tools, the benchmarks and the plugins (lines as ``wc -l`` counts them)."""
    unexplained, too_long = [], []
    for folder in CHECKED_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            lines = text.count("\n")
            if lines > MAX_LINES and "\nLong:" not in text[:3000]:
                unexplained.append(f"{path.relative_to(REPO)} ({lines} lines)")
            if lines > HARD_MAX_LINES:
                too_long.append(f"{path.relative_to(REPO)} ({lines} lines)")
    assert not too_long, f"over {HARD_MAX_LINES} lines (split them by what they do): {', '.join(too_long)}"
    assert not unexplained, f"over {MAX_LINES} lines without a 'Long:' line: {', '.join(unexplained)}"


def test_readme_and_ci_run_the_same_test_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    line = next(line for line in ci.splitlines() if line.startswith("pip install torch==2.13.0"))
    # `|| exit 1`: CI stops when the command fails anywhere (tests/e2e/test_ci_script.py says why).
    command = line.removesuffix(" || exit 1")
    assert f"```sh\n{command}\n```" in readme
    for tool in ("lint-imports", "mypy", "python -m pytest"):
        assert tool in command


def test_the_run_command_only_formats_the_plan() -> None:
    """``beluga run``'s module hands the plan to orchestration and formats its summary (cli/plan_view.py): it stays
    short, and holds no dry-run printer of its own (issue 56: it was 535 lines with 14)."""
    source = (REPO / "beluga_core" / "cli" / "run_cmd.py").read_text(encoding="utf-8")
    assert source.count("\n") <= 200
    assert "def _print" not in source and "def print_" not in source


def test_no_test_imports_a_file_by_its_path() -> None:
    """Tests import modules by name (pytest's ``pythonpath = ["."]`` and tests/ on the path): none edits the import
    path or loads a file by location (issue 56: 11 test modules did, to reach benchmarks/)."""
    # Split so that this file does not name what it looks for.
    patterns = ("sys." + "path", "spec_from_" + "file_location")
    found = [f"{path.relative_to(REPO)}: {p}" for path in sorted((REPO / "tests").rglob("*.py"))
             for p in patterns if p in path.read_text(encoding="utf-8")]
    assert found == []
