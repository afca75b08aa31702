"""Reading and writing suite files (JSON Lines, optionally gzip)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from beluga_core.core.errors import BelugaError, format_validation_error
from beluga_core.core.io import atomic_write, jsonl_records
from beluga_core.data import BUILTIN_DATA
from beluga_core.data.suite.suite_schema import Case, SuiteHeader

BUILTIN_PREFIX = "builtin:"
BUILTIN_DIR = BUILTIN_DATA / "suites"


@dataclass
class Suite:
    header: SuiteHeader
    cases: list[Case]
    path: Path | None = None
    # Line of each case in its file (error messages).
    lines: dict[str, int] = field(default_factory=dict, repr=False)
    _index: dict[str, int] = field(default_factory=dict, repr=False)
    # data.splits' memo of the seeded orders it draws (pure functions of the cases and the seed): planning splits
    # the same suite once per config, task and scenario, and an 86k-case shuffle costs most of a second.
    _split_memo: dict[tuple[Any, ...], Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index = {c.id: i for i, c in enumerate(self.cases)}

    def case(self, case_id: str) -> Case:
        return self.cases[self._index[case_id]]

    def __contains__(self, case_id: str) -> bool:
        return case_id in self._index

    def group_of(self, case: Case, level: str) -> str | None:
        """The case's group at ``level`` (or its test type); None where a crossing level leaves it without one."""
        return case.test_type if level == "test_type" else case.groups.get(level)

    def subset(self, case_ids: set[str]) -> Suite:
        """The suite with only the cases named (in suite order)."""
        return Suite(self.header, [c for c in self.cases if c.id in case_ids], self.path, self.lines)

    def with_corrections(self) -> Suite:
        """The suite with every documented correction applied."""
        if not any(c.correction for c in self.cases):
            return self
        return Suite(self.header, [c.with_corrections() for c in self.cases], self.path, self.lines)


def resolve_suite_path(spec: str | Path) -> Path:
    """``builtin:NAME`` names a suite shipped with beluga; anything else is a path."""
    s = str(spec)
    if s.startswith(BUILTIN_PREFIX):
        name = s[len(BUILTIN_PREFIX):]
        path = BUILTIN_DIR / f"{name}.jsonl.gz"
        if not path.exists():
            shipped = sorted(p.name.removesuffix(".jsonl.gz") for p in BUILTIN_DIR.glob("*.jsonl.gz"))
            raise BelugaError(f"no built-in suite '{name}'; shipped suites: {', '.join(shipped)}")
        return path
    return Path(s)


def _objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, rec in jsonl_records(path, "suite file"):
        if not isinstance(rec, dict):
            raise BelugaError(f"expected a JSON object, got {type(rec).__name__}", source=path, line=lineno)
        yield lineno, rec


def case_problem(header: SuiteHeader, case: Case) -> tuple[str, str] | None:
    """(field, what is wrong) where a case contradicts its suite's header: an empty group name, an input of the
    wrong shape for ``input_kind``, a label outside ``label_space``; None when it fits."""
    for level, group in case.groups.items():
        if not group.strip():
            return f"groups.{level}", f"the group name at level '{level}' is empty"
    pairs = header.input_kind != "text"
    for i, x in enumerate(case.inputs):
        if isinstance(x, tuple) != pairs:
            shape = "a [first, second] pair" if pairs else "one text"
            got = "a pair" if isinstance(x, tuple) else "a single text"
            return f"inputs[{i}]", f"input {i} is {got}, but the suite's input_kind '{header.input_kind}' takes {shape}"
    space = header.label_space
    if space is not None:
        versions = [("label", case.label)]
        if case.correction is not None and case.correction.label is not None:
            versions.append(("correction.label", case.correction.label))
        for where, label in versions:
            for value in label if isinstance(label, list) else [label]:
                if value is None or value in space or (type(value) is int and 0 <= value < len(space)):
                    continue
                return where, (f"label {value!r} is not in the suite's label space {space} (a class id 0–"
                               f"{len(space) - 1} or one of the names)")
    return None


def load_suite(spec: str | Path) -> Suite:
    """Load and validate a suite file's structure; every error names the file, line and field.

    Expectations are checked against the installed kinds one layer up
    (``beluga_core.evaluation.suites.load_checked_suite``)."""
    path = resolve_suite_path(spec)
    records = _objects(path)
    first = next(records, None)
    if first is None:
        raise BelugaError("empty file; expected a suite header record first", source=path)
    lineno, rec = first
    if rec.get("kind") != "suite":
        raise BelugaError("the first record must be the suite header with \"kind\": \"suite\"",
                          source=path, line=lineno)
    try:
        header = SuiteHeader.model_validate(rec)
    except ValidationError as exc:
        raise BelugaError(f"invalid suite header: {format_validation_error(exc)}", source=path,
                          line=lineno) from None
    levels = set(header.levels)
    required = levels - set(header.crossing_levels)
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for lineno, rec in records:
        try:
            case = Case.model_validate(rec)
        except ValidationError as exc:
            raise BelugaError(f"invalid case: {format_validation_error(exc)}", source=path, line=lineno) from None
        missing = required - case.groups.keys()
        if missing:
            raise BelugaError(f"case '{case.id}' has no group for level(s) {sorted(missing)}; "
                              f"the header declares levels {header.levels} (a level where cases may have no group "
                              "must be listed in its crossing_levels)", source=path, line=lineno, field="groups")
        extra = case.groups.keys() - levels
        if extra:
            raise BelugaError(f"case '{case.id}' names undeclared level(s) {sorted(extra)}; "
                              f"the header declares levels {header.levels}", source=path, line=lineno,
                              field="groups")
        if case.id in seen:
            raise BelugaError(f"duplicate case id '{case.id}' (first on line {seen[case.id]})", source=path,
                              line=lineno, field="id")
        problem = case_problem(header, case)
        if problem is not None:
            where, message = problem
            raise BelugaError(f"case '{case.id}': {message}", source=path, line=lineno, field=where)
        seen[case.id] = lineno
        cases.append(case)
    if not cases:
        raise BelugaError("the suite has a header but no cases", source=path)
    return Suite(header, cases, path, lines=seen)


def case_json(case: Case) -> str:
    """A case as one line of a suite file."""
    return json.dumps(case.model_dump(mode="json", exclude_none=True, exclude_defaults=True), ensure_ascii=False,
                      sort_keys=True)


def dump_records(header: SuiteHeader, cases: Iterable[Case]) -> Iterator[str]:
    # crossing_levels came after suite files were first written: only a suite that has some writes it, so that
    # every other file stays byte-identical to what earlier versions wrote.
    unset = set() if header.crossing_levels else {"crossing_levels"}
    yield json.dumps(header.model_dump(mode="json", exclude_none=True, exclude=unset), ensure_ascii=False,
                     sort_keys=True)
    for case in cases:
        yield case_json(case)


def write_suite(path: str | Path, header: SuiteHeader, cases: Iterable[Case]) -> Path:
    """Write atomically, gzip when the name ends in .gz, byte-reproducibly."""
    path = Path(path)
    data = (line.encode("utf-8") + b"\n" for line in dump_records(header, cases))
    return atomic_write(path, data, gzip_level=9 if path.suffix == ".gz" else None)
