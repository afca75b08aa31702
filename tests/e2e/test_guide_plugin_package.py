"""The extending guide's "Packaging a plugin and type-checking it" (docs/guides/extending.md, blocks tagged
``plugin-package``): its blocks are plugins/beluga-example-method's files byte for byte; written into an empty
folder, the package installs with the guide's command (into a throw-away ``--target``: nothing is installed into the
test environment) and the guide's ``mypy --strict`` passes on it with neither MYPYPATH nor PYTHONPATH, so mypy finds
beluga as a user's would, through the installed beluga. A copy with two misuses of beluga's API fails, naming both
lines: mypy really reads beluga's types.

The running beluga must be an install static tools can read (a wheel, or the README's editable install with
``--config-settings editable_mode=compat``); the default editable install's import hook is not one, and the test
fails, saying how to reinstall.
"""

from __future__ import annotations

import os
import shlex
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from helpers import REPO, doc_blocks

TAG = "plugin-package"
GUIDE = "guides/extending.md"
PLUGIN = REPO / "plugins" / "beluga-example-method"
MODULE = Path("beluga_example_method") / "__init__.py"
# The guide's files, in the order of its blocks: the package folder's pyproject.toml, then the module.
FILES = {"toml": Path("pyproject.toml"), "python": MODULE}
# mypy must find beluga through the installed package alone: neither variable may point it at the checkout.
ENV = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")} | {
    "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
REINSTALL = 'pip install -e ".[test]" --config-settings editable_mode=compat'
# A cold mypy --strict reads beluga's whole import closure (transformers, torch, pydantic: ~110 s alone on 2 cores).
pytestmark = pytest.mark.timeout(900)


def _commands() -> list[list[str]]:
    (block,) = doc_blocks("sh", tag=TAG, page=GUIDE)
    return [shlex.split(line) for line in block.splitlines() if line.strip()]


def _hook_install() -> Path | None:
    """The ``.pth`` file of beluga's install when it is setuptools' default editable kind: an ``import`` line that
    installs a finder hook at start-up, which Python runs and static tools do not (python/mypy#13392)."""
    folders = {Path(p) for p in [*site.getsitepackages(), site.getusersitepackages(), sysconfig.get_paths()["purelib"]]}
    for folder in sorted(f for f in folders if f.is_dir()):
        for pth in sorted(folder.glob("__editable__*beluga-*.pth")):
            if any(line.startswith(("import ", "import\t")) for line in pth.read_text(encoding="utf-8").splitlines()):
                return pth
    return None


def _mypy(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=cwd, capture_output=True, text=True, env=ENV,
                          timeout=840)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty folder with the guide's package written into it and installed by the guide's pip command into
    ``site/`` beside it."""
    root = tmp_path_factory.mktemp("guide-plugin")
    package = root / "beluga-example-method"
    for language, path in FILES.items():
        (block,) = doc_blocks(language, tag=TAG, page=GUIDE)
        (package / path).parent.mkdir(parents=True, exist_ok=True)
        (package / path).write_text(block, encoding="utf-8")
    (package / MODULE.parent / "py.typed").touch()  # the empty marker the guide describes
    pip = _commands()[0]
    assert pip[:2] == ["pip", "install"], pip
    # Built with this environment's setuptools, offline, as tests/e2e/test_example_plugin.py does.
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                           "--target", str(root / "site"), *pip[2:]], cwd=root, capture_output=True, text=True,
                          env=ENV, timeout=280)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return root


def test_the_guide_blocks_are_the_example_plugin_files() -> None:
    for language, path in FILES.items():
        assert doc_blocks(language, tag=TAG, page=GUIDE) == [(PLUGIN / path).read_text(encoding="utf-8")], path
    assert (PLUGIN / MODULE.parent / "py.typed").read_bytes() == b""
    assert [argv[:2] for argv in _commands()] == [["pip", "install"], ["mypy", "--strict"]]


def test_the_guide_package_installs_with_its_entry_point(built: Path) -> None:
    site_dir = built / "site"
    assert (site_dir / MODULE).read_bytes() == (PLUGIN / MODULE).read_bytes()
    assert (site_dir / MODULE.parent / "py.typed").exists()  # its users' type checkers read its types
    (entry_points,) = site_dir.glob("beluga_example_method-*.dist-info/entry_points.txt")
    text = entry_points.read_text(encoding="utf-8")
    assert "[beluga.methods]" in text and "flooding = beluga_example_method:Flooding" in text


def _require_a_readable_beluga() -> None:
    hook = _hook_install()
    if hook is not None:
        pytest.fail(f"beluga is installed editable through setuptools' import hook ({hook}), which mypy does not run "
                    f"(python/mypy#13392), so no type checker outside the checkout finds beluga_core. Reinstall it "
                    f"as the README does: {REINSTALL}")


def test_mypy_strict_passes_on_the_guide_package_with_no_mypypath(built: Path) -> None:
    _require_a_readable_beluga()
    mypy = _commands()[1]
    proc = _mypy(mypy[1:], built)
    out = proc.stdout + proc.stderr
    hint = f"\n(beluga_core not found: is beluga installed as the README says? {REINSTALL})" \
        if "import-not-found" in out else ""
    assert proc.returncode == 0 and "Success: no issues found" in proc.stdout, out[-3000:] + hint


def test_mypy_strict_catches_a_misuse_of_beluga_api(built: Path) -> None:
    """Two mistakes only beluga's types reveal: a method the Trainer does not have, and an ``update`` whose return
    type breaks Method's. Without beluga's types (an unresolved import is Any) neither would be reported."""
    _require_a_readable_beluga()
    source = (PLUGIN / MODULE).read_text(encoding="utf-8")
    mistakes = {"trainer.batch_loss(b)": "trainer.batch_losses(b)",
                "batches: list[Batch]) -> torch.Tensor:": "batches: list[Batch]) -> float:",
                "return loss.detach()": "return float(loss.detach())"}
    for right, wrong in mistakes.items():
        assert source.count(right) == 1, right
        source = source.replace(right, wrong)
    lines = source.splitlines()
    attribute = 1 + next(i for i, ln in enumerate(lines) if "batch_losses" in ln)
    signature = 1 + next(i for i, ln in enumerate(lines) if "-> float:" in ln)
    bad = built / "bad" / MODULE
    bad.parent.mkdir(parents=True)
    bad.write_text(source, encoding="utf-8")
    proc = _mypy(["--strict", "--cache-dir", str(built / ".mypy_cache"), str(bad.parent)], built)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert f'__init__.py:{attribute}: error: "Trainer" has no attribute "batch_losses"' in out, out[-3000:]
    assert f'__init__.py:{signature}: error: Return type "float" of "update" incompatible with return type ' \
           f'"Tensor" in supertype' in out, out[-3000:]
    assert "import-not-found" not in out, out[-3000:]
