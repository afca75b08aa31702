"""Reading and writing suite files (JSON Lines, optionally gzip)."""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from beluga_core.errors import BelugaError, format_validation_error
from beluga_core.suite.schema import Case, SuiteHeader

BUILTIN_PREFIX = "builtin:"
BUILTIN_DIR = Path(__file__).resolve().parent.parent / "data" / "suites"


@dataclass
class Suite:
    header: SuiteHeader
    cases: list[Case]
    path: Path | None = None
    _index: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index = {c.id: i for i, c in enumerate(self.cases)}

    def case(self, case_id: str) -> Case:
        return self.cases[self._index[case_id]]

    def __contains__(self, case_id: str) -> bool:
        return case_id in self._index

    def group_of(self, case: Case, level: str) -> str:
        return case.test_type if level == "test_type" else case.groups[level]

    def subset(self, case_ids: set[str]) -> Suite:
        """The suite with only the cases named (in suite order)."""
        return Suite(self.header, [c for c in self.cases if c.id in case_ids], self.path)

    def effective(self) -> Suite:
        """The suite with every documented correction applied."""
        if not any(c.correction for c in self.cases):
            return self
        return Suite(self.header, [c.effective() for c in self.cases], self.path)


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


def _open_text(path: Path) -> IO[str]:
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _records(path: Path) -> Iterator[tuple[int, dict]]:
    try:
        fh = _open_text(path)
    except FileNotFoundError:
        raise BelugaError("file not found", source=path) from None
    except IsADirectoryError:
        raise BelugaError("is a directory, expected a suite file (.jsonl or .jsonl.gz)", source=path) from None
    with fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise BelugaError(f"not valid JSON ({exc.msg} at column {exc.colno})",
                                      source=path, line=lineno) from None
                if not isinstance(rec, dict):
                    raise BelugaError(f"expected a JSON object, got {type(rec).__name__}",
                                      source=path, line=lineno)
                yield lineno, rec
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise BelugaError(f"cannot read ({exc})", source=path) from None


def load_suite(spec: str | Path, *, validate_expectations: bool = True) -> Suite:
    """Load and validate a suite file; every error names the file, line and field."""
    path = resolve_suite_path(spec)
    records = _records(path)
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
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for lineno, rec in records:
        try:
            case = Case.model_validate(rec)
        except ValidationError as exc:
            raise BelugaError(f"invalid case: {format_validation_error(exc)}", source=path, line=lineno) from None
        missing = levels - case.groups.keys()
        if missing:
            raise BelugaError(f"case '{case.id}' has no group for level(s) {sorted(missing)}; "
                              f"the header declares levels {header.levels}", source=path, line=lineno,
                              field="groups")
        extra = case.groups.keys() - levels
        if extra:
            raise BelugaError(f"case '{case.id}' names undeclared level(s) {sorted(extra)}; "
                              f"the header declares levels {header.levels}", source=path, line=lineno,
                              field="groups")
        if case.id in seen:
            raise BelugaError(f"duplicate case id '{case.id}' (first on line {seen[case.id]})", source=path,
                              line=lineno, field="id")
        seen[case.id] = lineno
        cases.append(case)
    if not cases:
        raise BelugaError("the suite has a header but no cases", source=path)
    suite = Suite(header, cases, path)
    if validate_expectations:
        from beluga_core.expectations.evaluate import validate_suite_expectations

        validate_suite_expectations(suite, lines={cid: ln for cid, ln in seen.items()})
    return suite


def dump_records(header: SuiteHeader, cases: Iterable[Case]) -> Iterator[str]:
    yield json.dumps(header.model_dump(mode="json", exclude_none=True), ensure_ascii=False, sort_keys=True)
    for case in cases:
        yield json.dumps(case.model_dump(mode="json", exclude_none=True, exclude_defaults=True),
                         ensure_ascii=False, sort_keys=True)


def write_suite(path: str | Path, header: SuiteHeader, cases: Iterable[Case]) -> Path:
    """Write atomically (temp file + rename), gzip when the name ends in .gz, byte-reproducibly."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        if path.suffix == ".gz":
            # mtime=0 and no file name in the gzip header: the same suite always gives the same bytes.
            with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                       compresslevel=9) as gz:
                for line in dump_records(header, cases):
                    gz.write(line.encode("utf-8") + b"\n")
        else:
            with open(tmp, "w", encoding="utf-8") as fh:
                for line in dump_records(header, cases):
                    fh.write(line + "\n")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
