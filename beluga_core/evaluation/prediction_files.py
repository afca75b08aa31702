"""Reading model predictions for a suite (PRED files).

A PRED file is JSON Lines (optionally gzip), one record per case::

    {"id": "<case id>", "preds": [<one per input, in input order>]}

where a prediction is a class-probability vector (suites with a label space) or an answer string (suites
without one, e.g. reading comprehension). Vectors as long as the suite's label space are used as they are;
other lengths go through the task's adapter (sentiment: binary vectors, docs/method.md, "Three-way sentiment on
a binary model"). Every error names the file and line.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.core.errors import BelugaError
from beluga_core.core.io import jsonl_records
from beluga_core.data.suite.suite_files import Suite
from beluga_core.evaluation.sentiment_mapping import binary_to_three

# How far a probability vector's sum may be from 1 (float32 softmax outputs are off by ~1e-7).
SUM_TOLERANCE = 1e-3

Adapter = Callable[[np.ndarray], np.ndarray]
# task → {vector length → function mapping [N, length] vectors into the suite's label space}
ADAPTERS: dict[str, dict[int, tuple[Adapter, str]]] = {
    "sentiment": {2: (lambda v: binary_to_three(v[:, 1]),
                      "binary [p(negative), p(positive)], mapped to three classes (neutral where p(positive) is "
                      "between 1/3 and 2/3)")},
}


def read_predictions(path: str | Path, suite: Suite) -> FlatPredictions:
    """Predictions for every case of ``suite``, in suite order; a malformed file raises ``BelugaError``."""
    path = Path(path)
    n_inputs = [len(c.inputs) for c in suite.cases]
    index = {c.id: i for i, c in enumerate(suite.cases)}
    given: list[Any] = [None] * len(suite.cases)
    line_of = np.zeros(len(suite.cases), dtype=np.int64)
    for lineno, rec in _records(path):
        cid, preds = _fields(rec, path, lineno)
        i = index.get(cid)
        if i is None:
            raise BelugaError(f"unknown case id {cid!r}: not in suite '{suite.header.name}'{_did_you_mean(cid, index)}",
                              source=path, line=lineno, field="id")
        if given[i] is not None:
            raise BelugaError(f"duplicate id {cid!r} (first on line {line_of[i]})", source=path, line=lineno,
                              field="id")
        if len(preds) != n_inputs[i]:
            raise BelugaError(f"case {cid!r} has {n_inputs[i]} input(s) but {len(preds)} prediction(s) were given; "
                              "give one per input, in input order", source=path, line=lineno, field="preds")
        given[i] = preds
        line_of[i] = lineno
    missing = [suite.cases[i].id for i, g in enumerate(given) if g is None]
    if missing:
        shown = ", ".join(repr(m) for m in missing[:5])
        raise BelugaError(f"{len(missing)} of {len(given)} cases have no predictions (e.g. {shown})", source=path)
    flat = [p for preds in given for p in preds]
    rows_line = np.repeat(line_of, n_inputs)
    lengths = np.asarray(n_inputs, dtype=np.int64)
    if suite.header.label_space is None:
        return FlatPredictions.from_arrays(answers=_answers(flat, rows_line, path), lengths=lengths)
    probs = _vectors(flat, rows_line, path, suite)
    return FlatPredictions.from_arrays(probs=probs, lengths=lengths)


def adapt_vectors(probs: np.ndarray, task: str | None, label_space: list[str]) -> np.ndarray:
    """Bring ``[N, k]`` probability vectors into the suite's label space (``ValueError`` when impossible)."""
    k = probs.shape[1]
    if k == len(label_space):
        return probs
    adapter = ADAPTERS.get(task or "", {}).get(k)
    if adapter is None:
        raise ValueError(_length_message(k, task, label_space))
    return adapter[0](probs)


def _length_message(k: int, task: str | None, label_space: list[str]) -> str:
    ok = [f"{len(label_space)} (the suite's label space: {', '.join(label_space)})"]
    ok += [f"{n} ({desc})" for n, (_, desc) in sorted(ADAPTERS.get(task or "", {}).items())]
    return f"prediction vectors have length {k}; expected " + " or ".join(ok)


# ------------------------------------------------------------------------------------------ parsing


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    return jsonl_records(path, "predictions file")


def _fields(rec: Any, path: Path, lineno: int) -> tuple[str, list[Any]]:
    if not isinstance(rec, dict):
        raise BelugaError(f'expected a JSON object {{"id": ..., "preds": [...]}}, got {type(rec).__name__}',
                          source=path, line=lineno)
    cid, preds = rec.get("id"), rec.get("preds")
    if not isinstance(cid, str):
        raise BelugaError("missing or non-string \"id\"", source=path, line=lineno, field="id")
    if not isinstance(preds, list):
        raise BelugaError(f"case {cid!r}: \"preds\" must be a list with one prediction per input",
                          source=path, line=lineno, field="preds")
    return cid, preds


def _did_you_mean(cid: str, index: dict[str, int]) -> str:
    # Only on the error path: difflib over a whole suite's ids takes a moment.
    close = difflib.get_close_matches(cid, index.keys(), n=1, cutoff=0.8)
    return f"; did you mean {close[0]!r}?" if close else ""


def _answers(flat: list[Any], rows_line: np.ndarray, path: Path) -> np.ndarray:
    for row, p in enumerate(flat):
        if not isinstance(p, str):
            raise BelugaError(f"this suite has no label space, so each prediction must be an answer string, got "
                              f"{_show(p)}", source=path, line=int(rows_line[row]), field="preds")
    arr = np.empty(len(flat), dtype=object)
    arr[:] = flat
    return arr


def _vectors(flat: list[Any], rows_line: np.ndarray, path: Path, suite: Suite) -> np.ndarray:
    task, label_space = suite.header.task, suite.header.label_space or []
    allowed = {len(label_space), *ADAPTERS.get(task or "", {})}
    try:
        # Without a dtype numpy infers one: a clean file gives a 2-d float (or int) matrix; strings, nulls
        # or ragged vectors give something else (or raise), and only then is the file scanned row by row.
        arr = np.array(flat)
        clean = arr.ndim == 2 and arr.dtype.kind in "fi"
    except (ValueError, TypeError):
        clean = False
    if not clean:
        return _mixed_vectors(flat, rows_line, path, suite, allowed)
    if arr.shape[1] not in allowed:
        raise BelugaError(_length_message(arr.shape[1], task, label_space), source=path,
                          line=int(rows_line[0]), field="preds")
    arr = arr.astype(np.float64, copy=False)
    _check_probabilities(arr, np.arange(len(flat)), flat, rows_line, path)
    return adapt_vectors(arr, task, label_space)


def _mixed_vectors(flat: list[Any], rows_line: np.ndarray, path: Path, suite: Suite,
                   allowed: set[int]) -> np.ndarray:
    """The slow path: find the first malformed vector, or adapt each vector length separately."""
    task, label_space = suite.header.task, suite.header.label_space or []
    by_length: dict[int, list[int]] = {}
    for row, p in enumerate(flat):
        where: dict[str, Any] = {"source": path, "line": int(rows_line[row]), "field": "preds"}
        if not isinstance(p, list):
            raise BelugaError(f"each prediction must be a class-probability vector (a list of numbers), got "
                              f"{_show(p)}", **where)
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in p):
            raise BelugaError(f"non-numeric value in prediction vector {_show(p)}", **where)
        if len(p) not in allowed:
            raise BelugaError(f"{_show(p)}: {_length_message(len(p), task, label_space)}", **where)
        by_length.setdefault(len(p), []).append(row)
    out = np.empty((len(flat), len(label_space)), dtype=np.float64)
    for rows in by_length.values():
        idx = np.asarray(rows, dtype=np.int64)
        arr = np.array([flat[r] for r in rows], dtype=np.float64)
        _check_probabilities(arr, idx, flat, rows_line, path)
        out[idx] = adapt_vectors(arr, task, label_space)
    return out


def _check_probabilities(arr: np.ndarray, rows: np.ndarray, flat: list[Any], rows_line: np.ndarray,
                         path: Path) -> None:
    bad = np.flatnonzero(~np.isfinite(arr).all(axis=1) | ((arr < 0) | (arr > 1)).any(axis=1)
                         | (np.abs(arr.sum(axis=1) - 1) > SUM_TOLERANCE))
    if bad.size:
        row = int(rows[bad[0]])
        raise BelugaError(f"{_show(flat[row])} is not a probability vector (entries in [0, 1] summing to 1 "
                          f"within {SUM_TOLERANCE}); {bad.size} such vector(s) in the file", source=path,
                          line=int(rows_line[row]), field="preds")


def _show(value: Any, limit: int = 80) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
