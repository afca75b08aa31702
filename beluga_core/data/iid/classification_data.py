"""The i.i.d. dataset of a classification task: texts (or text pairs) with a class label.

D_val and D_test are always the two seeded halves of the source's official validation/dev set, because
benchmark test labels (GLUE's) are hidden. Accepted sources:

- ``builtin:NAME``: a dataset shipped with beluga (``builtin.BUILTIN_IID``: sst2, sst3, sst5, qqp-fixture).
- an existing local directory holding ``train.EXT`` and ``dev.EXT`` (or ``validation.EXT``), where EXT is
  ``tsv``, ``csv`` or ``jsonl`` (each optionally ``.gz``/``.xz``/``.bz2``) or ``parquet``. An optional
  ``label_names.txt`` (one name per line, line i = label i) names the labels. Other files, including a
  ``test.*`` file, are ignored on purpose: D_test is half of the dev file.
- a Hugging Face datasets name: ``NAME``, ``NAME/CONFIG`` (``glue/sst2`` = ``load_dataset("glue", "sst2")``)
  or ``OWNER/NAME/CONFIG``. Train is its ``train`` split; the halves come from ``validation``. An existing
  local path of the same spelling wins.

Labels are class ids (integers) or label names (strings). Names come from ``label_names.txt``, a dataset's
``ClassLabel`` feature or the built-in's declaration; without any, integer labels are named by their number
and string labels are sorted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.builtin import BUILTIN_IID, BUILTIN_PREFIX, builtin_dataset
from beluga_core.data.iid.examples import IIDData, IIDExample
from beluga_core.data.iid.hub import HF_NAME, load_hub_dataset, looks_like_path
from beluga_core.data.iid.kept import kept_iid
from beluga_core.data.iid.tables import COMPRESSIONS, TEXT_FORMATS, Rows, check_columns, parse_name, read_table
from beluga_core.data.splits import halves

TRAIN_STEMS = ("train",)
DEV_STEMS = ("dev", "validation")
LABEL_NAMES_FILE = "label_names.txt"
LAYOUT_HINT = (
    "a dataset directory holds train.EXT and dev.EXT or validation.EXT, EXT being tsv, csv, jsonl (each "
    "optionally .gz, .xz or .bz2) or parquet, and its dev file is halved (seeded) into D_val and D_test"
)
_SIGNED_INT = re.compile(r"\s*[+-]?[0-9]+\s*")
_TABLE_SUFFIXES = (*(f".{f}{c}" for f in TEXT_FORMATS for c in COMPRESSIONS), ".parquet", ".json")


def load_classification_iid(source: str, *, text_fields: Sequence[str], label_field: str | Sequence[str] = "label",
                            eval_seed: int = 42) -> IIDData:
    """D_train and the seeded halves D_val / D_test of the validation set (see the module docstring).

    ``label_field`` may list alternatives; the first column present is used (GLUE's QQP TSVs call the label
    ``is_duplicate``, the Hugging Face copy ``label``). Data read from local files are kept for the process's later
    calls (``kept``): callers must not change them.
    """
    text_fields = tuple(text_fields)
    if len(text_fields) not in (1, 2):
        raise BelugaError(f"expected one or two text fields, got {list(text_fields)}", field="text_fields")
    labels = (label_field,) if isinstance(label_field, str) else tuple(label_field)
    return kept_iid(("classification", text_fields, labels), source, eval_seed,
                    partial(_read_classification_iid, source, text_fields, labels, eval_seed))


def _read_classification_iid(source: str, text_fields: tuple[str, ...], labels: tuple[str, ...],
                             eval_seed: int) -> IIDData:
    names: list[str] | None
    if source.startswith(BUILTIN_PREFIX):
        shipped = builtin_dataset(source, "classification")
        if shipped.text_fields is not None and len(shipped.text_fields) != len(text_fields):
            raise BelugaError(f"{source} has {len(shipped.text_fields)} text field(s), the task reads "
                              f"{len(text_fields)}")
        text_fields = shipped.text_fields or text_fields
        labels = (shipped.label_field,) if shipped.label_field else labels
        train_rows, dev_rows, names = _directory_rows(shipped.path, text_fields, labels)
        names = list(shipped.label_names) if shipped.label_names else names
    else:
        path = Path(source).expanduser()
        if path.is_dir():
            train_rows, dev_rows, names = _directory_rows(path, text_fields, labels)
        elif path.exists():
            raise BelugaError(f"is a single file, not a directory; {LAYOUT_HINT}", source=path)
        elif looks_like_path(source, _TABLE_SUFFIXES):
            raise BelugaError(f"no such directory; {LAYOUT_HINT}", source=path)
        elif HF_NAME.fullmatch(source):
            train_rows, dev_rows, names = _hub_rows(source, text_fields, labels)
        else:
            raise BelugaError(f"'{source}' is neither builtin:NAME, an existing directory, nor a Hugging Face "
                              "dataset name like glue/sst2")
    names = names or _default_names(train_rows, dev_rows)
    train = _to_examples(train_rows, len(text_fields), names, "train")
    dev = _to_examples(dev_rows, len(text_fields), names, "dev")
    val_idx, test_idx = halves(len(dev), eval_seed)
    return IIDData(train=train, val=[dev[i] for i in val_idx], test=[dev[i] for i in test_idx],
                   source=source, label_names=names)


# --- local directories ------------------------------------------------------------------------------


def _find_split_file(directory: Path, stems: Sequence[str], what: str) -> Path:
    found = [p for p in sorted(directory.iterdir())
             if p.is_file() and (parsed := parse_name(p.name)) and parsed[0] in stems]
    if not found:
        names = sorted(p.name for p in directory.iterdir())
        present = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
        raise BelugaError(f"no {what} file ({' or '.join(f'{s}.EXT' for s in stems)}) among: "
                          f"{present or 'nothing'}; {LAYOUT_HINT}", source=directory)
    if len(found) > 1:
        raise BelugaError(f"more than one {what} file ({', '.join(f.name for f in found)}); keep one",
                          source=directory)
    return found[0]


def _directory_rows(directory: Path, text_fields: tuple[str, ...],
                    labels: tuple[str, ...]) -> tuple[Rows, Rows, list[str] | None]:
    if not directory.is_dir():
        raise BelugaError(f"no such directory; {LAYOUT_HINT}", source=directory)
    names = _read_label_names(directory / LABEL_NAMES_FILE)
    out = []
    for stems, what in ((TRAIN_STEMS, "train"), (DEV_STEMS, "dev")):
        path = _find_split_file(directory, stems, what)
        out.append(_read_with_label(path, text_fields, labels))
    return out[0], out[1], names


def _read_with_label(path: Path, text_fields: tuple[str, ...], labels: tuple[str, ...]) -> Rows:
    """The table's text and label columns, the label being the first of ``labels`` the table has."""
    first: BelugaError | None = None
    for label in labels:
        try:
            return read_table(path, (*text_fields, label))
        except BelugaError as exc:
            # Only a missing label column is worth trying the next spelling.
            if f"missing column(s) '{label}'" not in str(exc):
                raise
            first = first or exc
    assert first is not None
    raise first


def _read_label_names(path: Path) -> list[str] | None:
    if not path.exists():
        return None
    names = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not names:
        raise BelugaError("label names file is empty", source=path)
    return names


# --- Hugging Face ---------------------------------------------------------------------------------------


def _hub_rows(source: str, text_fields: tuple[str, ...],
              labels: tuple[str, ...]) -> tuple[Rows, Rows, list[str] | None]:
    import datasets

    shipped = ", ".join(f"builtin:{n}" for n, d in sorted(BUILTIN_IID.items()) if d.kind == "classification")
    loaded = load_hub_dataset(source, f"Use a local directory instead ({LAYOUT_HINT}), or a built-in dataset: "
                                      f"{shipped}")
    for split in ("train", "validation"):
        if split not in loaded:
            raise BelugaError(f"dataset '{source}' has no '{split}' split; splits: {', '.join(loaded)}")
    columns = loaded["train"].column_names
    label = next((name for name in labels if name in columns), labels[0])
    feature = loaded["train"].features.get(label)
    names = list(feature.names) if isinstance(feature, datasets.ClassLabel) else None
    out = []
    for split in ("train", "validation"):
        ds = loaded[split]
        where = f"{source} split '{split}'"
        fields = (*text_fields, label)
        check_columns(where, fields, ds.column_names)
        data = ds.select_columns(list(fields)).to_dict()
        out.append(Rows(where, "row index", fields, list(range(ds.num_rows)),
                        list(zip(*(data[f] for f in fields), strict=True))))
    return out[0], out[1], names


# --- labels -------------------------------------------------------------------------------------------


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None  # JSON true/false is not a class index
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and ((value.isascii() and value.isdigit()) or _SIGNED_INT.fullmatch(value)):
        return int(value)
    return None


def _default_names(*splits: Rows) -> list[str]:
    """Without declared names: class ids are named by their number, label names are sorted; a mix of the
    two would be misread (is "1" a name or class 1?), so it is an error at its first row."""
    kinds = [(rows, i, _as_int(row[-1]) is not None) for rows in splits for i, row in enumerate(rows.values)]
    if any(k for *_, k in kinds) and not all(k for *_, k in kinds):
        first_id = next(k for *_, k in kinds)
        rows, i, _ = next((r, i, k) for r, i, k in kinds if k != first_id)
        raise rows.error(i, f"labels mix class ids and label names ({rows.values[i][-1]!r}); use one or the other, "
                            f"or name the ids in {LABEL_NAMES_FILE}", rows.fields[-1])
    raw = [row[-1] for rows in splits for row in rows.values]
    if kinds and kinds[0][2]:
        return [str(i) for i in range(max(int(_as_int(v) or 0) for v in raw) + 1)]
    return sorted({str(v) for v in raw})


def _to_examples(rows: Rows, n_text: int, names: list[str], what: str) -> list[IIDExample]:
    if not rows.values:
        raise BelugaError(f"the {what} split has no rows", source=rows.where)
    if what == "dev" and len(rows.values) < 2:
        raise BelugaError("the dev split needs at least 2 rows to be halved into D_val and D_test",
                          source=rows.where)
    text_fields, label_field = rows.fields[:n_text], rows.fields[n_text]
    index = {name: i for i, name in enumerate(names)}
    examples = []
    for i, row in enumerate(rows.values):
        texts = row[:n_text]
        for field, text in zip(text_fields, texts, strict=True):
            if not isinstance(text, str):
                raise rows.error(i, f"text must be a string, got {text!r}", field)
        raw = row[n_text]
        label = _as_int(raw)
        if label is None:
            if not isinstance(raw, str) or raw not in index:
                raise rows.error(i, f"label {raw!r} is neither a class id nor one of the label names {names}",
                                 label_field)
            label = index[raw]
        if label < 0:
            raise rows.error(i, f"label must be >= 0, got {label} (-1 marks a hidden label, as in GLUE "
                                "test splits)", label_field)
        if label >= len(names):
            raise rows.error(i, f"label {label} has no name (label names: {names})", label_field)
        examples.append(IIDExample(texts[0] if n_text == 1 else (texts[0], texts[1]), label))
    return examples
