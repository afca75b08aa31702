"""Files: atomic writes, and JSON Lines records from plain or gzip files — each written once.

Every file beluga writes (suites, outcomes, weights, token-cache shards, reports) goes through
``atomic_write``: a temporary file in the same folder, then a rename, so a crash or Ctrl-C never leaves a
half-written file under the real name.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from beluga_core.core.errors import BelugaError

GZIP_MAGIC = b"\x1f\x8b"


def _default_mode() -> int:
    """The mode ``open`` gives a new file under the process's umask: ``mkstemp`` makes 0600 files, which left
    suites, reports and weights unreadable to the user's group where a plain write would not have."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: str | Path, data: bytes | Iterable[bytes], *, gzip_level: int | None = None) -> Path:
    """Write ``data`` (bytes, or chunks of bytes) to ``path`` atomically; gzip it when ``gzip_level`` is set.

    Gzip output is byte-reproducible: no file name and mtime 0 in its header.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as raw, (
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=gzip_level)
                if gzip_level is not None else contextlib.nullcontext(raw)) as sink:
            for chunk in [data] if isinstance(data, bytes | bytearray) else data:
                sink.write(chunk)
        os.chmod(tmp, _default_mode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def atomic_save(path: str | Path, save: Callable[[Path], None]) -> Path:
    """Let ``save`` write a temporary file (e.g. ``torch.save``), then move it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        save(Path(tmp))
        os.chmod(tmp, _default_mode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def open_text(path: str | Path) -> IO[str]:
    """A text file, decompressed when it is gzip (by its magic bytes, not its name)."""
    path = Path(path)
    if is_gzip(path):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (no NaN / Infinity)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to infinity
        raise ValueError(f"{text} is not a finite number")
    return value


# One decoder for every line: json.loads with a keyword argument builds a new decoder per call, which took half
# of the parsing time of an 86,000-line suite.
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)


def jsonl_records(path: str | Path, what: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of every non-blank line; errors name the file and line.

    ``what`` names the expected file in the messages ("suite file", "predictions file").
    """
    path = Path(path)
    try:
        fh = open_text(path)
    except FileNotFoundError:
        raise BelugaError(f"{what} not found", source=path) from None
    except IsADirectoryError:
        raise BelugaError(f"is a directory, expected a {what} (.jsonl or .jsonl.gz)", source=path) from None
    with fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    yield lineno, _DECODER.decode(line)
                except json.JSONDecodeError as exc:
                    raise BelugaError(f"not valid JSON ({exc.msg} at column {exc.colno})", source=path,
                                      line=lineno) from None
                except ValueError as exc:
                    raise BelugaError(str(exc), source=path, line=lineno) from None
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise BelugaError(f"cannot read ({exc})", source=path) from None


def human_size(n: float) -> str:
    """A byte count as '12.3 MiB': binary units, named as such (a "MB" of 2^20 bytes misleads by 5 %)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
