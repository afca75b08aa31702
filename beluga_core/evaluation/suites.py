"""Loading a suite for use: its structure (``data.suite.io``) and every expectation checked against the
installed expectation kinds; loaded once per process and file version."""

from __future__ import annotations

from pathlib import Path

from beluga_core.data.suite.io import Suite, load_suite, resolve_suite_path
from beluga_core.evaluation.evaluate import validate_suite_expectations

_loaded: dict[tuple[Path, int, int], Suite] = {}


def load_checked_suite(spec: str | Path) -> Suite:
    """The suite at ``spec`` (a path or ``builtin:NAME``), validated; a file loaded before (same size and
    modification time) is not parsed again. Callers must not mutate the returned suite."""
    path = resolve_suite_path(spec)
    try:
        st = path.stat()
        key: tuple[Path, int, int] | None = (path.resolve(), st.st_size, st.st_mtime_ns)
    except OSError:
        key = None  # load_suite reports the missing file
    if key is not None and key in _loaded:
        return _loaded[key]
    suite = load_suite(path)
    validate_suite_expectations(suite)
    if key is not None:
        _loaded[key] = suite
    return suite
