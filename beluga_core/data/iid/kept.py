"""The i.i.d. data this process has read, kept for its later phases and runs.

A worker is made per phase, and every run in a long-lived process (a notebook, a Ray worker, the test suite) made
its own: each read and checked the whole D_train again, ~1.2 s for SST-2's 67k rows on a 2-core CPU (2.5 of the
13.7 s of tests/data/tiny-steps.toml's run, cProfile). The key is everything the data are read from: the reader
(the task's settings) and each file's path, size and modification time, so an edited file is read again. A hub
dataset (no local files) is not kept: it is read as before.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path

from beluga_core.data.iid.builtin import BUILTIN_IID, BUILTIN_PREFIX
from beluga_core.data.iid.examples import IIDData

# A few sources at once (a run reads one per task); SST-2 kept costs ~20 MB.
KEPT_SOURCES = 4

_kept: OrderedDict[Hashable, IIDData] = OrderedDict()


def source_files(source: str) -> tuple[tuple[str, int, int], ...] | None:
    """(path, size, modification time in ns) of every file ``source`` is read from, or None where it names no local
    file or folder (a hub dataset, a built-in this module does not know)."""
    if source.startswith(BUILTIN_PREFIX):
        shipped = BUILTIN_IID.get(source.removeprefix(BUILTIN_PREFIX))
        if shipped is None:
            return None
        path = shipped.path
    else:
        path = Path(source).expanduser()
    if not path.exists():
        return None
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return tuple((str(p.resolve()), (s := p.stat()).st_size, s.st_mtime_ns) for p in files)


def kept_iid(reader: Hashable, source: str, eval_seed: int, read: Callable[[], IIDData]) -> IIDData:
    """``read()``'s data, or the data an earlier call read from the same unchanged files with the same ``reader``
    (which must name every setting ``read`` depends on but the source and the seed). Callers must not change it."""
    files = source_files(source)
    if files is None:
        return read()
    key = (reader, source, eval_seed, files)
    data = _kept.get(key)
    if data is None:
        data = _kept[key] = read()
        while len(_kept) > KEPT_SOURCES:
            _kept.popitem(last=False)
    else:
        _kept.move_to_end(key)
    return data


def forget_kept() -> None:
    _kept.clear()
