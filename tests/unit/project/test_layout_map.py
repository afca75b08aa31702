"""docs/project/layout.md's "to change X, edit Y" map names only what exists: every path it gives is a file or folder of
the repository, and every module it runs (``python -m …``) is one."""

from __future__ import annotations

import importlib.util
import re

from helpers import REPO

LAYOUT = REPO / "docs" / "project" / "layout.md"
# A path in backticks: a top-level folder of the repository, then anything up to the closing backtick.
PATH = re.compile(r"`((?:beluga_core|tools|benchmarks|tests|docs|plugins|schemas)/[^`*…]*?)`")
# A bare module-relative path in a row that named its package before ("`config/load.py`" after a beluga_core path).
RELATIVE = re.compile(r"`([a-z_]+/[a-z_/]*[a-z_]+(?:\.py|/))`")
MODULE = re.compile(r"`python -m ([\w.]+)")


def _map() -> str:
    text = LAYOUT.read_text(encoding="utf-8")
    return text[text.index("## To change X, edit Y"):text.index("## The repository")]


def test_every_path_in_the_map_exists() -> None:
    table = _map()
    paths = PATH.findall(table)
    assert len(paths) > 30
    missing = [p for p in paths if not (REPO / p).exists()]
    relative = [p for p in RELATIVE.findall(table) if not p.startswith(("beluga_core/", "tools/", "benchmarks/",
                                                                        "tests/", "docs/", "plugins/", "schemas/"))]
    assert len(relative) > 10
    missing += [p for p in relative if not (REPO / "beluga_core" / p).exists()]
    assert missing == []


def test_every_module_the_map_runs_exists() -> None:
    modules = MODULE.findall(_map())
    assert {"tools.docs_reference", "beluga_core.cli.jsonschema", "tools.fixtures.build_golden"} <= set(modules)
    assert [m for m in modules if importlib.util.find_spec(m) is None] == []
