"""The i.i.d. dataset D of a classification task: D_train, D_val, D_test.

Task-agnostic: a task says which columns hold its text (one field, or two for pair tasks such as QQP) and
which holds the integer label. D_val and D_test are always the two seeded halves of the source's official
validation/dev set (METHOD.md §2), because benchmark test labels (GLUE's) are hidden.

Accepted sources:

- ``builtin:NAME``: a dataset shipped under ``beluga_core/data/NAME/`` (``builtin:sst2``), read offline.
- an existing local directory holding ``train.EXT`` and ``dev.EXT`` (or ``validation.EXT``), where EXT is
  ``tsv``, ``csv`` or ``jsonl`` (each optionally ``.gz``/``.xz``/``.bz2``) or ``parquet``. An optional
  ``label_names.txt`` (one name per line, line i = label i) names the labels. Other files, including a
  ``test.*`` file, are ignored on purpose: D_test is half of the dev file.
- a Hugging Face datasets name: ``NAME``, ``NAME/CONFIG`` (``glue/sst2`` = ``load_dataset("glue", "sst2")``)
  or ``OWNER/NAME/CONFIG`` (``nyu-mll/glue/sst2``). Train is its ``train`` split; the halves come from
  ``hf_validation_split``. An existing local path of the same spelling wins.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
import re
import ssl
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beluga_core.errors import BelugaError
from beluga_core.splits import halves

BUILTIN_PREFIX = "builtin:"
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
BUILTIN_IID_DATASETS: dict[str, Path] = {"sst2": DATA_DIR / "sst2"}

TEXT_FORMATS = ("tsv", "csv", "jsonl")
COMPRESSIONS = ("", ".gz", ".xz", ".bz2")
TRAIN_STEMS = ("train",)
DEV_STEMS = ("dev", "validation")
LABEL_NAMES_FILE = "label_names.txt"
LAYOUT_HINT = (
    "a dataset directory holds train.EXT and dev.EXT or validation.EXT, EXT being tsv, csv, jsonl (each "
    "optionally .gz, .xz or .bz2) or parquet, and its dev file is halved (seeded) into D_val and D_test"
)

# Short enough that an unreachable hub fails in seconds instead of datasets' ~25 s of retries.
HUB_PROBE_TIMEOUT_S = 3.0

_HF_NAME = re.compile(r"[A-Za-z0-9][\w.\-]*(/[\w.\-]+){0,2}")
_SIGNED_INT = re.compile(r"\s*[+-]?[0-9]+\s*")


@dataclass
class IIDExample:
    inputs: str | tuple[str, str]
    label: int


@dataclass
class IIDData:
    train: list[IIDExample]
    val: list[IIDExample]
    test: list[IIDExample]
    source: str
    label_names: list[str]


@dataclass
class _Rows:
    """Raw values of the requested columns, with where each row came from for error messages."""

    where: str
    unit: str  # "line" (1-based, text files) or "row index" (0-based, Parquet / Hugging Face)
    fields: tuple[str, ...]  # the text fields, then the label field: the order of each values tuple
    numbers: list[int]
    values: list[tuple[Any, ...]]

    def error(self, i: int, message: str, field: str | None = None) -> BelugaError:
        if self.unit == "line":
            return BelugaError(message, source=self.where, line=self.numbers[i], field=field)
        return BelugaError(f"row index {self.numbers[i]}: {message}", source=self.where, field=field)


def load_classification_iid(source: str, *, text_fields: tuple[str, ...], label_field: str = "label",
                            eval_seed: int = 42, builtin: dict[str, Path] | None = None,
                            hf_validation_split: str = "validation") -> IIDData:
    """Load D_train and the seeded halves D_val / D_test of the validation set (see the module docstring).

    ``builtin`` adds (or overrides) ``builtin:NAME`` directories on top of the shipped ones.
    """
    text_fields = tuple(text_fields)
    if len(text_fields) not in (1, 2):
        raise BelugaError(f"expected one or two text fields, got {list(text_fields)}", field="text_fields")
    builtins = {**BUILTIN_IID_DATASETS, **(builtin or {})}

    if source.startswith(BUILTIN_PREFIX):
        name = source[len(BUILTIN_PREFIX):]
        if name not in builtins:
            raise BelugaError(f"no built-in i.i.d. dataset '{name}'; shipped: {', '.join(sorted(builtins))}")
        train, dev, names = _load_directory(builtins[name], text_fields, label_field)
    else:
        path = Path(source).expanduser()
        if path.is_dir():
            train, dev, names = _load_directory(path, text_fields, label_field)
        elif path.exists():
            raise BelugaError(f"is a single file, not a directory; {LAYOUT_HINT}", source=path)
        elif _looks_like_path(source):
            raise BelugaError(f"no such directory; {LAYOUT_HINT}", source=path)
        elif _HF_NAME.fullmatch(source):
            train, dev, names = _load_hf(source, text_fields, label_field, hf_validation_split, builtins)
        else:
            raise BelugaError(f"'{source}' is neither builtin:NAME ({', '.join(sorted(builtins))}), an "
                              "existing directory, nor a Hugging Face dataset name like glue/sst2")

    val_idx, test_idx = halves(len(dev), eval_seed)
    return IIDData(train=train, val=[dev[i] for i in val_idx], test=[dev[i] for i in test_idx],
                   source=source, label_names=names)


# --- local directories ------------------------------------------------------------------------------


def _looks_like_path(source: str) -> bool:
    # A missing local path must not be mistaken for a hub name and sent to the network.
    if source.startswith(("/", "./", "../", "~", ".")) or "\\" in source:
        return True
    return source.lower().endswith(
        (*(f".{f}{c}" for f in TEXT_FORMATS for c in COMPRESSIONS), ".parquet", ".json"))


def _parse_name(name: str) -> tuple[str, str, str] | None:
    """``train.tsv.gz`` → ("train", "tsv", ".gz"); None for files that are not data files."""
    if name.endswith(".parquet"):
        return name[: -len(".parquet")], "parquet", ""
    for fmt in TEXT_FORMATS:
        for comp in COMPRESSIONS:
            suffix = f".{fmt}{comp}"
            if name.endswith(suffix):
                return name[: -len(suffix)], fmt, comp
    return None


def _find_split_file(directory: Path, stems: Sequence[str], what: str) -> tuple[Path, str, str]:
    found = []
    for p in sorted(directory.iterdir()):
        parsed = _parse_name(p.name)
        if p.is_file() and parsed and parsed[0] in stems:
            found.append((p, parsed[1], parsed[2]))
    if not found:
        names = sorted(p.name for p in directory.iterdir())
        present = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
        raise BelugaError(f"no {what} file ({' or '.join(f'{s}.EXT' for s in stems)}) among: "
                          f"{present or 'nothing'}; {LAYOUT_HINT}", source=directory)
    if len(found) > 1:
        raise BelugaError(f"more than one {what} file ({', '.join(f[0].name for f in found)}); keep one",
                          source=directory)
    return found[0]


def _load_directory(directory: Path, text_fields: tuple[str, ...],
                    label_field: str) -> tuple[list[IIDExample], list[IIDExample], list[str]]:
    if not directory.is_dir():
        raise BelugaError(f"no such directory; {LAYOUT_HINT}", source=directory)
    fields = (*text_fields, label_field)
    names = _read_label_names(directory / LABEL_NAMES_FILE)
    splits = []
    for stems, what in ((TRAIN_STEMS, "train"), (DEV_STEMS, "dev")):
        path, fmt, comp = _find_split_file(directory, stems, what)
        rows = _read_parquet(path, fields) if fmt == "parquet" else _read_text_table(path, fmt, comp, fields)
        splits.append(_to_examples(rows, len(text_fields), names, what))
    train, dev = splits
    return train, dev, names or _default_names(train, dev)


def _read_label_names(path: Path) -> list[str] | None:
    if not path.exists():
        return None
    names = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not names:
        raise BelugaError("label names file is empty", source=path)
    return names


def _decoded(path: Path, comp: str) -> str:
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


def _missing_columns(path: Path | str, fields: Sequence[str], columns: Sequence[str]) -> None:
    missing = [f for f in fields if f not in columns]
    if missing:
        raise BelugaError(f"missing column(s) {', '.join(repr(m) for m in missing)}; columns found: "
                          f"{', '.join(repr(c) for c in columns) or 'none'}", source=path)


def _read_text_table(path: Path, fmt: str, comp: str, fields: tuple[str, ...]) -> _Rows:
    text = _decoded(path, comp)
    if fmt == "jsonl":
        return _read_jsonl(path, text, fields)
    numbers: list[int] = []
    values: list[tuple[Any, ...]] = []
    if fmt == "tsv":
        # No quoting, as GLUE's TSVs are written: quote characters are part of the text.
        lines = text.split("\n")
        if not lines[0].strip():
            raise BelugaError("empty file; expected a header line naming the columns", source=path)
        header = lines[0].removesuffix("\r").split("\t")
        _missing_columns(path, fields, header)
        idx = [header.index(f) for f in fields]
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
        return _Rows(str(path), "line", fields, numbers, values)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise BelugaError("empty file; expected a header line naming the columns", source=path) from None
    _missing_columns(path, fields, header)
    idx = [header.index(f) for f in fields]
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
    return _Rows(str(path), "line", fields, numbers, values)


def _read_jsonl(path: Path, text: str, fields: tuple[str, ...]) -> _Rows:
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
            _missing_columns(path, fields, list(record))
        for f in fields:
            if f not in record:
                raise BelugaError("missing", source=path, line=lineno, field=f)
        numbers.append(lineno)
        values.append(tuple(record[f] for f in fields))
    return _Rows(str(path), "line", fields, numbers, values)


def _read_parquet(path: Path, fields: tuple[str, ...]) -> _Rows:
    import pyarrow.parquet as pq  # lazily: only Parquet sources pay for the import

    try:
        columns = pq.read_schema(path).names
        _missing_columns(path, fields, columns)
        table = pq.read_table(path, columns=list(fields))
    except BelugaError:
        raise
    except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
        raise BelugaError(f"cannot read as Parquet ({exc})", source=path) from exc
    cols = [table.column(f).to_pylist() for f in fields]
    return _Rows(str(path), "row index", fields, list(range(table.num_rows)), list(zip(*cols, strict=True)))


# --- Hugging Face ---------------------------------------------------------------------------------------


def _hub_reachable(endpoint: str, timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether anything answers at the hub endpoint (urllib honours the *_PROXY variables)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True  # an HTTP status, even an error, means the hub answered
    except urllib.error.URLError as exc:
        # A TLS failure means a server answered; a custom CA bundle may make it work for the hub client.
        return isinstance(exc.reason, ssl.SSLError)
    except ssl.SSLError:
        return True
    except OSError:  # timeouts and resets that urllib does not wrap
        return False


def _hf_name(source: str) -> tuple[str, str | None]:
    parts = source.split("/")
    if len(parts) == 1:
        return parts[0], None
    if len(parts) == 2:
        return parts[0], parts[1]
    return "/".join(parts[:2]), parts[2]


def _load_hf(source: str, text_fields: tuple[str, ...], label_field: str, validation_split: str,
             builtins: dict[str, Path]) -> tuple[list[IIDExample], list[IIDExample], list[str]]:
    import datasets  # lazily: importing it costs about a second

    name, config = _hf_name(source)
    desc = f"Hugging Face dataset '{name}'" + (f" (config '{config}')" if config else "")
    shipped = ", ".join(f"builtin:{b}" for b in sorted(builtins))
    alternatives = (f"'{source}' is not an existing local directory either. Use a local directory instead "
                    f"({LAYOUT_HINT}), or a built-in dataset: {shipped}")
    offline = bool(getattr(datasets.config, "HF_HUB_OFFLINE", False))
    if not offline:
        from huggingface_hub import constants

        if not _hub_reachable(constants.ENDPOINT):
            raise BelugaError(f"cannot load {desc}: the Hugging Face hub ({constants.ENDPOINT}) is "
                              f"unreachable (probed with a {HUB_PROBE_TIMEOUT_S:g} s timeout). Set "
                              f"HF_HUB_OFFLINE=1 to use a copy already in the local Hugging Face cache. "
                              f"{alternatives}.")
    try:
        loaded = datasets.load_dataset(name, config) if config else datasets.load_dataset(name)
    except (OSError, ValueError, datasets.exceptions.DatasetsError) as exc:
        if offline and isinstance(exc, ConnectionError):
            raise BelugaError(f"cannot load {desc}: offline mode is on (HF_HUB_OFFLINE), so the hub is "
                              f"unreachable, and the dataset is not in the local Hugging Face cache. "
                              f"{alternatives}.") from exc
        raise BelugaError(f"cannot load {desc}: {type(exc).__name__}: {exc}") from exc

    for split in ("train", validation_split):
        if split not in loaded:
            raise BelugaError(f"{desc} has no '{split}' split; splits: {', '.join(loaded)}"
                              + (" (choose another with hf_validation_split)" if split != "train" else ""))
    feature = loaded["train"].features.get(label_field)
    names = list(feature.names) if isinstance(feature, datasets.ClassLabel) else None
    splits = []
    for split, what in (("train", "train"), (validation_split, "dev")):
        ds = loaded[split]
        where = f"{source} split '{split}'"
        fields = (*text_fields, label_field)
        _missing_columns(where, fields, ds.column_names)
        data = ds.select_columns(list(fields)).to_dict()
        rows = _Rows(where, "row index", fields, list(range(ds.num_rows)),
                     list(zip(*(data[f] for f in fields), strict=True)))
        splits.append(_to_examples(rows, len(text_fields), names, what))
    train, dev = splits
    return train, dev, names or _default_names(train, dev)


# --- shared ------------------------------------------------------------------------------------------


def _label(value: Any) -> int | None:
    if isinstance(value, bool):
        return None  # JSON true/false is not a class index
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        if value.isascii() and value.isdigit():  # fast path for the common case
            return int(value)
        if _SIGNED_INT.fullmatch(value):
            return int(value)
    return None


def _to_examples(rows: _Rows, n_text: int, names: list[str] | None, what: str) -> list[IIDExample]:
    if not rows.values:
        raise BelugaError(f"the {what} split has no rows", source=rows.where)
    if what == "dev" and len(rows.values) < 2:
        raise BelugaError("the dev split needs at least 2 rows to be halved into D_val and D_test",
                          source=rows.where)
    text_fields, label_field = rows.fields[:n_text], rows.fields[n_text]
    examples = []
    for i, row in enumerate(rows.values):
        texts = row[:n_text]
        for field, text in zip(text_fields, texts, strict=True):
            if not isinstance(text, str):
                raise rows.error(i, f"text must be a string, got {text!r}", field)
        raw = row[n_text]
        label = _label(raw)
        if label is None:
            raise rows.error(i, f"label must be an integer class index, got {raw!r}", label_field)
        if label < 0:
            raise rows.error(i, f"label must be >= 0, got {label} (-1 marks a hidden label, as in GLUE "
                                "test splits)", label_field)
        if names is not None and label >= len(names):
            raise rows.error(i, f"label {label} has no name (label names: {names})", label_field)
        examples.append(IIDExample(texts[0] if n_text == 1 else (texts[0], texts[1]), label))
    return examples


def _default_names(*splits: list[IIDExample]) -> list[str]:
    top = max(ex.label for split in splits for ex in split)
    return [str(i) for i in range(top + 1)]
