"""Reading a column table: TSV, CSV, JSON Lines (each optionally .gz / .xz / .bz2) or Parquet.

Shared by the i.i.d. loaders and ``beluga suite from-table``; every error names the file and the line (text
files) or row index (Parquet, Hugging Face), and the column.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beluga_core.core.errors import BelugaError

TEXT_FORMATS = ("tsv", "csv", "jsonl")
COMPRESSIONS = ("", ".gz", ".xz", ".bz2")


@dataclass
class Rows:
    """Raw values of the requested columns, with where each row came from for error messages."""

    where: str
    unit: str  # "line" (1-based, text files) or "row index" (0-based, Parquet / Hugging Face)
    fields: tuple[str, ...]  # the order of each values tuple
    numbers: list[int]
    values: list[tuple[Any, ...]]

    def error(self, i: int, message: str, field: str | None = None) -> BelugaError:
        if self.unit == "line":
            return BelugaError(message, source=self.where, line=self.numbers[i], field=field)
        return BelugaError(f"row index {self.numbers[i]}: {message}", source=self.where, field=field)


def parse_name(name: str) -> tuple[str, str, str] | None:
    """``train.tsv.gz`` → ("train", "tsv", ".gz"); None for files that are not data tables."""
    if name.endswith(".parquet"):
        return name[: -len(".parquet")], "parquet", ""
    for fmt in TEXT_FORMATS:
        for comp in COMPRESSIONS:
            suffix = f".{fmt}{comp}"
            if name.endswith(suffix):
                return name[: -len(suffix)], fmt, comp
    return None


def decoded(path: Path, comp: str) -> str:
    """The text of a (possibly compressed) UTF-8 file; a byte-order mark is dropped."""
    opener = {"": None, ".gz": gzip.decompress, ".xz": lzma.decompress, ".bz2": bz2.decompress}[comp]
    try:
        raw = path.read_bytes()
        if opener is not None:
            raw = opener(raw)
        # utf-8-sig: a BOM would otherwise become part of the first column name.
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BelugaError(f"not UTF-8 text ({exc})", source=path) from exc
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise BelugaError(f"cannot read ({exc})", source=path) from exc


def check_columns(where: Path | str, fields: Sequence[str], columns: Sequence[str]) -> None:
    missing = [f for f in fields if f not in columns]
    if missing:
        raise BelugaError(f"missing column(s) {', '.join(repr(m) for m in missing)}; columns found: "
                          f"{', '.join(repr(c) for c in columns) or 'none'}", source=where)


def read_table(path: Path, fields: Sequence[str]) -> Rows:
    """The ``fields`` columns of the table at ``path`` (format from its name)."""
    parsed = parse_name(path.name)
    if parsed is None:
        raise BelugaError("not a table file: the name must end in .tsv, .csv, .jsonl (each optionally .gz, "
                          ".xz or .bz2) or .parquet", source=path)
    if not path.is_file():
        raise BelugaError("file not found", source=path)
    _, fmt, comp = parsed
    fields = tuple(fields)
    if fmt == "parquet":
        return _read_parquet(path, fields)
    text = decoded(path, comp)
    if fmt == "jsonl":
        return _read_jsonl(path, text, fields)
    if fmt == "tsv":
        return _read_tsv(path, text, fields)
    return _read_csv(path, text, fields)


def _read_tsv(path: Path, text: str, fields: tuple[str, ...]) -> Rows:
    # No quoting, as GLUE's TSVs are written: quote characters are part of the text.
    lines = text.split("\n")
    if not lines[0].strip():
        raise BelugaError("empty file; expected a header line naming the columns", source=path)
    header = lines[0].removesuffix("\r").split("\t")
    check_columns(path, fields, header)
    idx = [header.index(f) for f in fields]
    numbers: list[int] = []
    values: list[tuple[Any, ...]] = []
    for lineno, line in enumerate(lines[1:], start=2):
        line = line.removesuffix("\r")
        if not line:
            continue
        parts = line.split("\t")
        if len(parts) != len(header):
            raise BelugaError(f"{len(parts)} tab-separated fields, the header has {len(header)}",
                              source=path, line=lineno)
        numbers.append(lineno)
        values.append(tuple(parts[i] for i in idx))
    return Rows(str(path), "line", fields, numbers, values)


def _read_csv(path: Path, text: str, fields: tuple[str, ...]) -> Rows:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise BelugaError("empty file; expected a header line naming the columns", source=path) from None
    check_columns(path, fields, header)
    idx = [header.index(f) for f in fields]
    numbers: list[int] = []
    values: list[tuple[Any, ...]] = []
    start = reader.line_num + 1
    try:
        for parts in reader:
            if parts:
                if len(parts) != len(header):
                    raise BelugaError(f"{len(parts)} comma-separated fields, the header has {len(header)}",
                                      source=path, line=start)
                numbers.append(start)
                values.append(tuple(parts[i] for i in idx))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise BelugaError(f"malformed CSV ({exc})", source=path, line=start) from exc
    return Rows(str(path), "line", fields, numbers, values)


def _read_jsonl(path: Path, text: str, fields: tuple[str, ...]) -> Rows:
    numbers: list[int] = []
    values: list[tuple[Any, ...]] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BelugaError(f"not valid JSON ({exc.msg})", source=path, line=lineno) from exc
        if not isinstance(record, dict):
            raise BelugaError(f"expected a JSON object, got {type(record).__name__}", source=path,
                              line=lineno)
        if not values:
            check_columns(path, fields, list(record))
        for f in fields:
            if f not in record:
                raise BelugaError("missing", source=path, line=lineno, field=f)
        numbers.append(lineno)
        values.append(tuple(record[f] for f in fields))
    return Rows(str(path), "line", fields, numbers, values)


def _read_parquet(path: Path, fields: tuple[str, ...]) -> Rows:
    import pyarrow.parquet as pq  # lazily: only Parquet sources pay for the import

    try:
        columns = pq.read_schema(path).names
        check_columns(path, fields, columns)
        table = pq.read_table(path, columns=list(fields))
    except BelugaError:
        raise
    except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
        raise BelugaError(f"cannot read as Parquet ({exc})", source=path) from exc
    cols = [table.column(f).to_pylist() for f in fields]
    return Rows(str(path), "row index", fields, list(range(table.num_rows)), list(zip(*cols, strict=True)))
