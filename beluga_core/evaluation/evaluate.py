"""Evaluating cases with their declared expectations, and validating a suite's expectations.

``evaluate_cases`` groups cases by expectation (kind + parameters) and lets each kind judge its group in
one vectorised call. It evaluates the expectations the cases carry; whether documented corrections apply
is the caller's choice (``Case.with_corrections()`` / ``Suite.with_corrections()``).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from beluga_core.contracts.expectations import SKIP, CaseBatch, ExpectationKind, FlatPredictions
from beluga_core.contracts.registries import EXPECTATIONS
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_files import Suite
from beluga_core.data.suite.suite_schema import Case, Expectation

# Parsed expectations by their key, so that each distinct expectation is validated once.
_parsed: dict[Hashable, ExpectationKind] = {}


def expectation_key(exp: Expectation) -> Hashable:
    """Equal for equal expectations; cheap, since it is computed for every case of a suite.

    Parameters are not sorted: the same expectation written with another key order only makes one more
    group, which evaluates alike.
    """
    extra = tuple((exp.__pydantic_extra__ or {}).items())
    try:
        hash(extra)
    except TypeError:  # nested parameters (keep_if, score, ...): fall back to canonical JSON
        return (exp.kind, exp.agg, json.dumps(extra, sort_keys=True, default=str))
    return (exp.kind, exp.agg, extra)


def kind_class(name: str) -> type[ExpectationKind]:
    """The plugin class of expectation kind ``name``; unknown → ``BelugaError`` with a did-you-mean."""
    return EXPECTATIONS.get(name)


def parse_expectation(exp: Expectation, key: Hashable | None = None) -> ExpectationKind:
    """A validated kind instance for ``exp``. Raises ``BelugaError`` (unknown kind) or ``ValueError``."""
    key = expectation_key(exp) if key is None else key
    kind = _parsed.get(key)
    if kind is None:
        kind = kind_class(exp.kind).parse(exp)
        _parsed[key] = kind
    return kind


# ------------------------------------------------------------------------------------------ validation


def validate_suite_expectations(suite: Suite) -> None:
    """Check that every case's expectation (and its correction's) names an installed kind with valid
    parameters, and suits the case. Errors name the file, line, case id and what is wrong."""
    lines: Mapping[str, int] = suite.lines
    path = suite.path
    keys = (_KeyRuns(), _KeyRuns())  # one per version, so that runs of equal expectations stay unbroken
    for case in suite.cases:
        # The released case and, when it has one, the corrected case: both must be evaluable.
        versions = _versions_of(case)
        for version, (target, where) in enumerate(versions):
            exp = target.expectation
            key = keys[version](exp)
            line = lines.get(case.id)
            try:
                kind = parse_expectation(exp, key)
            except BelugaError as exc:  # unknown kind: the registry's message has the did-you-mean
                raise BelugaError(f"case '{case.id}': {exc}", source=path, line=line,
                                  field=f"{where}.kind") from None
            except ValueError as exc:
                raise BelugaError(f"case '{case.id}': {exc}", source=path, line=line, field=where) from None
            problem = kind.check_case(target)
            # A released case that its correction fixes may break this rule (a documented suite defect): only
            # the case as it is used must compare something.
            if problem is None and version == len(versions) - 1 and len(target.inputs) < 2 \
                    and getattr(kind.params, "level", None) == "pairwise":
                problem = (f"expectation kind '{exp.kind}' compares every input with the first one, so the case "
                           f"needs at least 2 inputs; it has {len(target.inputs)}")
            if problem:
                raise BelugaError(f"case '{case.id}': {problem}", source=path, line=line, field=where)


def _versions_of(case: Case) -> list[tuple[Case, str]]:
    if case.correction is None:
        return [(case, "expectation")]
    where = "correction.expectation" if case.correction.expectation is not None else "correction"
    return [(case, "expectation"), (case.with_corrections(), where)]


# ------------------------------------------------------------------------------------------ evaluation


def evaluate_cases(cases: Sequence[Case], preds: FlatPredictions | Sequence[Sequence[Any]], *,
                   label_space: Sequence[str] | None = None) -> np.ndarray:
    """Outcome of every case under its own expectation: int8, 1 pass / 0 fail / -1 skip.

    ``preds`` is aligned with ``cases``: a ``FlatPredictions`` (fastest: one ``[n_inputs, n_labels]``
    probability array, or answer strings, plus case offsets), or one list per case with one prediction per
    input (a probability vector or an answer string). ``label_space`` lets labels and parameters name
    classes instead of giving class ids.
    """
    flat = preds if isinstance(preds, FlatPredictions) else FlatPredictions.from_nested(preds)
    n = len(cases)
    if flat.n_cases != n:
        raise ValueError(f"predictions cover {flat.n_cases} cases but {n} cases were given")
    lengths = np.fromiter((len(c.inputs) for c in cases), dtype=np.int64, count=n)
    bad = np.flatnonzero(lengths != np.diff(flat.offsets))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"case '{cases[i].id}' has {lengths[i]} inputs but {flat.offsets[i + 1] - flat.offsets[i]} "
                         f"predictions ({bad.size} case(s) mismatched)")
    out = np.full(n, SKIP, dtype=np.int8)
    for key, idx in _groups(cases).items():
        kind = parse_expectation(cases[idx[0]].expectation, key)
        sub = flat if len(idx) == n else flat.take(idx)
        batch = CaseBatch(sub, labels=[cases[i].label for i in idx], metas=[cases[i].meta for i in idx],
                          case_ids=[cases[i].id for i in idx], label_space=label_space)
        out[idx] = kind.evaluate(batch)
    return out


def _groups(cases: Sequence[Case]) -> dict[Hashable, np.ndarray]:
    """Case indices by expectation key."""
    keys = _KeyRuns()
    members: dict[Hashable, list[int]] = {}
    for i, case in enumerate(cases):
        members.setdefault(keys(case.expectation), []).append(i)
    return {k: np.asarray(v, dtype=np.int64) for k, v in members.items()}


class _KeyRuns:
    """``expectation_key`` for a stream of expectations, computed once per run of equal ones.

    Suites list a test's cases together, so consecutive expectations are usually equal; comparing with the
    previous one (a C-level dict comparison) is several times cheaper than building a key.
    """

    def __init__(self) -> None:
        self._prev: Expectation | None = None
        self._key: Hashable = None

    def __call__(self, exp: Expectation) -> Hashable:
        prev = self._prev
        if prev is None or not (exp is prev or (exp.kind == prev.kind and exp.agg == prev.agg
                                                and exp.__pydantic_extra__ == prev.__pydantic_extra__)):
            self._key = expectation_key(exp)
            self._prev = exp
        return self._key
