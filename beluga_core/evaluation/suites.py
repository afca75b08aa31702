"""Loading a suite for use: its structure (``data.suite.io``) and every expectation checked against the
installed expectation kinds; a file is parsed once per process and content."""

from __future__ import annotations

import hashlib
from pathlib import Path

from beluga_core.contracts.registries import LOSSES, TASKS
from beluga_core.core.errors import BelugaError
from beluga_core.core.registry import unknown_name_message
from beluga_core.data.suite.suite_files import Suite, load_suite, resolve_suite_path
from beluga_core.evaluation.evaluate import validate_suite_expectations

# The test types every suite may use; a suite declares any others in its header's ``test_types``.
STANDARD_TEST_TYPES = ("MFT", "INV", "DIR")

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
    validate_suite_plugins(suite)
    validate_suite_expectations(suite)
    if key is not None:
        _loaded[key] = suite
    return suite


def validate_suite_plugins(suite: Suite) -> None:
    """Every case's loss names an installed loss plugin, and its test type is a standard one or declared in
    the header; errors name the file, line and field, with a did-you-mean."""
    declared = sorted(set(STANDARD_TEST_TYPES) | set(suite.header.test_types))
    task = suite.header.task
    if task is not None and task not in TASKS:
        raise BelugaError(unknown_name_message("task", task, TASKS.names()) + " (the header's task names the task "
                          "plugin whose models the suite tests)", source=suite.path, line=1, field="task")
    losses = LOSSES.names()
    for case in suite.cases:
        for where, target in (("", case), *((("correction.", case.with_corrections()),) if case.correction else ())):
            problem = None
            if target.loss not in LOSSES:
                problem = (f"{where}loss", unknown_name_message("loss", target.loss, losses))
            elif target.test_type not in declared:
                problem = (f"{where}test_type", unknown_name_message("test type", target.test_type, declared)
                           + " (a suite declares its own in the header's test_types)")
            if problem is not None:
                raise BelugaError(f"case '{case.id}': {problem[1]}", source=suite.path,
                                  line=suite.lines.get(case.id), field=problem[0])
