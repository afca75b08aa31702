"""What a test session builds once, whichever pytest-xdist worker asks first.

The README's test command runs the suite on two workers (``-n 2 --dist loadfile``: a module and its module fixtures
stay on one worker). A session fixture is per worker, so a trained store behind one would be trained once per worker;
``built_once`` builds it once per session instead: the first worker to ask builds it under a file lock in a folder
all workers share (the session's base temporary folder, above the workers' own), the others wait and reuse it.
Without xdist the folder is this session's own and nothing changes.

The build is read-only afterwards: each worker works on ``own_copy`` of it, since ``beluga report`` and
``beluga analyze`` write caches into a store, DuckDB allows one writer, and results must not depend on which worker
or test came first.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

DONE = ".built"


def shared_root(factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this session sees: xdist gives each worker a base folder under a common one."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``name`` that ``build`` filled, once per session across workers. A build that failed is not
    marked done: the next worker to ask tries again (and fails the same way, with its own traceback)."""
    folder = shared_root(factory) / "built-once" / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if not (folder / DONE).exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / DONE).touch()
    return folder


def own_copy(factory: pytest.TempPathFactory, folder: Path) -> Path:
    """This worker's copy of a built folder (stores beside their ``.cache`` folders of kept weights)."""
    target = factory.mktemp(folder.name)
    shutil.copytree(folder, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(DONE))
    return target
