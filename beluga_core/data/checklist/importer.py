"""Import a CheckList suite: read it, resolve each test's expectation, convert its tests into cases.

The steps, each in its own module: ``reading`` (tarball / pickle → ``LoadedSuite`` and ``RawTest``s, via the
restricted ``unpickler``), ``specs`` (each test's expectation, from the vendored table or
``--expectations``), ``convert`` (tests → ``Case`` records, and the ``SuiteHeader``; its docstring states
the conventions of the converted cases). Nothing is written here; ``beluga suite import-checklist`` writes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from beluga_core.core.errors import BelugaError
from beluga_core.data.checklist.convert import build_header, convert_test, correction_of
from beluga_core.data.checklist.reading import LoadedSuite, RawTest, raw_tests, read_checklist_file
from beluga_core.data.checklist.specs import DEFAULT_LOSSES, TestSpec, load_expectations_file, resolve_specs
from beluga_core.data.suite.suite_schema import Case, SuiteHeader

__all__ = ["ImportResult", "convert_suite", "default_suite_name", "import_checklist"]


def default_suite_name(file_name: str) -> str:
    """``sentiment_suite.tar.gz`` → ``sentiment``."""
    stem = re.sub(r"(\.tar\.gz|\.tgz|\.tar|\.pkl|\.pickle)$", "", file_name)
    stem = re.sub(r"_suite$", "", stem)
    return stem or "checklist"


@dataclass
class ImportResult:
    header: SuiteHeader
    cases: list[Case]
    tests: list[RawTest]


def convert_suite(loaded: LoadedSuite, name: str | None = None,
                  expectations: Mapping[str, TestSpec] | None = None) -> ImportResult:
    """Convert a loaded CheckList suite; tests are kept in suite order, cases in ``test.data`` order."""
    suite_name = name or default_suite_name(loaded.file_name)
    source = loaded.path or loaded.file_name
    try:
        tests = raw_tests(loaded.suite)
    except BelugaError as exc:
        raise BelugaError(exc.message, source=source) from None
    if not tests:
        raise BelugaError("the CheckList suite has no tests", source=source)
    try:
        specs, profile = resolve_specs(tests, expectations)
    except BelugaError as exc:
        raise BelugaError(str(exc), source=source) from None
    losses = profile.losses if profile else dict(DEFAULT_LOSSES)
    cases: list[Case] = []
    for test in tests:
        spec = specs[test.name]
        loss = spec.loss or losses.get(test.test_type, test.test_type.lower())
        cases.extend(convert_test(test, spec, suite_name, loss, correction_of))
    header = build_header(suite_name, loaded, tests, cases, profile)
    return ImportResult(header=header, cases=cases, tests=tests)


def import_checklist(path: str | Path, name: str | None = None,
                     expectations: str | Path | Mapping[str, TestSpec] | None = None) -> ImportResult:
    """Read a CheckList tarball / pickle and convert it (nothing is written)."""
    specs = load_expectations_file(expectations) if isinstance(expectations, str | Path) else expectations
    return convert_suite(read_checklist_file(path), name=name, expectations=specs)
