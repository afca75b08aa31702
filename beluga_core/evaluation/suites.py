"""Loading a suite for use: its structure (``data.suite.io``) and every expectation checked against the
installed expectation kinds; a file is parsed once per process and content."""

from __future__ import annotations

import hashlib
from pathlib import Path

from beluga_core.data.suite.io import Suite, load_suite, resolve_suite_path
from beluga_core.evaluation.evaluate import validate_suite_expectations

_loaded: dict[tuple[Path, str], Suite] = {}


def load_checked_suite(spec: str | Path) -> Suite:
    """The suite at ``spec`` (a path or ``builtin:NAME``), validated. The same file content loaded before is
    not parsed again (keyed by its hash, so a rewritten file is always re-read); callers must not mutate the
    returned suite."""
    path = resolve_suite_path(spec)
    try:
        key: tuple[Path, str] | None = (path.resolve(), hashlib.sha256(path.read_bytes()).hexdigest())
    except OSError:
        key = None  # load_suite reports the missing or unreadable file
    if key is not None and key in _loaded:
        return _loaded[key]
    suite = load_suite(path)
    validate_suite_expectations(suite)
    if key is not None:
        _loaded[key] = suite
    return suite
